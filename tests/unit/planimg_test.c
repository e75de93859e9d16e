/*
 * tests/unit/planimg_test.c: runtime/planimg.c, the plan's image that a
 * part's table carries for an AOT task server
 * (spec/language.md §10.3 "Ahead-of-time compilation").  Every example
 * and every program of tests/golden/run is compiled as tfgc does; its
 * image, read back and written again, must be the same bytes (the writer
 * and the reader walk the same fields), and the plan read back must have
 * the digest of the one written; between them the programs use every
 * kind of session statement.  Every truncation of an image and every
 * flipped bit of a small one is refused or read without a fault (ASan
 * runs this in make asan).
 */
#include "tests/unit/test.h"

#include <glob.h>
#include <stdlib.h>
#include <unistd.h>

#include "compiler/compiler_int.h"

static int kinds_seen[RT_S_SAVE_EVERY + 1];
static int nprog;

static void
count_kinds(RtStmt **v, int n)
{
	for (int i = 0; i < n; i++) {
		kinds_seen[v[i]->kind]++;
		count_kinds(v[i]->body, v[i]->nbody);
		count_kinds(v[i]->else_, v[i]->nelse);
	}
}

/* The image of path's plan (malloc'd), or NULL when it does not
 * compile; with --fetch y --out y.npy when out. */
static uint64_t digest; /* of the last plan image_with wrote */

static unsigned char *
image_with(const char *path, size_t *n, int out)
{
	static const char *const y[1] = {"y"}, *const npy[1] = {"y.npy"};
	Program p = {0};
	CompileOptions co = {0};
	FILE *devnull = fopen("/dev/null", "w");
	unsigned char *img = NULL;
	TfgError e;
	Diag d;

	diag_init(&d, devnull);
	co.generic_ok = 1; /* `?` dims: the plan a run specialises */
	if (out) {
		co.nfetch = co.nout = 1;
		co.fetch = (const char **)y;
		co.out = (const char **)npy;
	}
	if (compile_file(&p, path, &co, &d) == 0 && p.plan) {
		if (tfg_plan_image(p.plan, &img, n, &e) != TFG_OK)
			fprintf(stderr, "%s: %s\n", path, e.msg);
		digest = tfg_plan_digest(p.plan);
		for (int i = 0; i < p.plan->nsession; i++)
			count_kinds(p.plan->sessions[i].stmts,
				    p.plan->sessions[i].nstmt);
	}
	arena_free(p.arena);
	fclose(devnull);
	return img;
}

static unsigned char *
image_of(const char *path, size_t *n)
{
	return image_with(path, n, 0);
}

static void
round_trip(const char *path, int out)
{
	size_t n, n2;
	unsigned char *img = image_with(path, &n, out), *img2 = NULL;
	TfgPlan *pl = NULL;
	TfgError e;

	if (img == NULL)
		return;
	nprog++;
	if (tfg_plan_read(&pl, img, n, &e) != TFG_OK) {
		fprintf(stderr, "%s: %s\n", path, e.msg);
		free(img);
		ASSERT(!"an image did not read back");
	}
	ASSERT(tfg_plan_digest(pl) == digest);
	ASSERT_EQ(tfg_plan_image(pl, &img2, &n2, &e), TFG_OK);
	if (n2 != n || memcmp(img, img2, n) != 0)
		fprintf(stderr, "%s: its image differs read back\n", path);
	ASSERT_EQ(n2, n);
	ASSERT(memcmp(img, img2, n) == 0);
	tfg_plan_free(pl);
	free(img);
	free(img2);
}

static void
t_round_trip(void)
{
	static const char *const pat[] = {"examples/*.tfg",
					  "tests/golden/run/*.tfg",
					  "tests/integration/progs/*.tfg"};

	for (size_t k = 0; k < sizeof pat / sizeof *pat; k++) {
		glob_t g;
		if (glob(pat[k], 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++)
			round_trip(g.gl_pathv[i], 0);
		globfree(&g);
	}
	round_trip("examples/hello.tfg", 1); /* the only RT_S_SAVE */
	{ /* save(DIR) and restore(DIR): no program of tests/golden/run */
		char path[] = "/tmp/tfg-planimg.XXXXXX";
		int fd = mkstemp(path);
		static const char src[] =
		    "var v = 1.0\nup = assign_add(v, 1.0)\n"
		    "session {\n  initialize(v)\n  save(\"ck\")\n"
		    "  restore(\"ck\")\n  print run(up)\n}\n";
		ASSERT(fd >= 0);
		ASSERT_EQ(write(fd, src, sizeof src - 1), sizeof src - 1);
		close(fd);
		round_trip(path, 0);
		unlink(path);
	}
	ASSERT(nprog >= 100);
	for (int k = 0; k <= RT_S_SAVE_EVERY; k++) {
		if (kinds_seen[k] == 0)
			fprintf(stderr, "no program has a statement of kind "
				"%d\n", k);
		ASSERT(kinds_seen[k] > 0);
	}
}

/* Read from a copy of exactly n bytes, so that ASan sees a read past
 * its end. */
static tfg_status
read_copy(const unsigned char *img, size_t n)
{
	unsigned char *c = malloc(n ? n : 1);
	TfgPlan *pl = NULL;
	TfgError e;
	tfg_status st;

	memcpy(c, img, n);
	st = tfg_plan_read(&pl, c, n, &e);
	tfg_plan_free(pl);
	free(c);
	return st;
}

static void
t_damage(void)
{
	size_t n = 0, nbig = 0;
	unsigned char *big = image_of("examples/mnist_distributed.tfg", &nbig);
	unsigned char *small = image_of("examples/hello.tfg", &n);
	TfgPlan *pl = NULL;
	TfgError e;

	ASSERT(big != NULL && small != NULL);
	for (size_t k = 0; k < nbig; k++)
		ASSERT_EQ(read_copy(big, k), TFG_EFORMAT);
	for (size_t k = 0; k < n; k++)
		for (int bit = 0; bit < 8; bit++) {
			small[k] ^= (unsigned char)(1u << bit);
			tfg_status st = read_copy(small, n);
			ASSERT(st == TFG_OK || st == TFG_EFORMAT);
			small[k] ^= (unsigned char)(1u << bit);
		}
	ASSERT_EQ(read_copy(small, n), TFG_OK);
	ASSERT_EQ(tfg_plan_read(&pl, "x", 1, &e), TFG_EFORMAT);
	ASSERT(pl == NULL);
	free(big);
	free(small);
}

TEST_MAIN({"round_trip", t_round_trip}, {"damage", t_damage})
