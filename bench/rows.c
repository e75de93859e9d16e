/*
 * bench/rows.c: one sparse adagrad update on a parameter server (issue
 * 28): ROWS ids (default 4,096, uniform over a table of TABLE rows,
 * default 1,000,000, of 32 f32) applied by tfg_rt_apply_rows on a task
 * server's variable and accumulator, in this process, against the
 * machine's copy bandwidth measured in the same run (a memcpy of 256 MB,
 * out of every cache).  The update touches the rows' gradients (read),
 * their ids (read), and the picked rows of the table and of its
 * accumulator (each read and written); the copy its source (read) and
 * destination (written).  Each rate counts the bytes read and written,
 * and the ratio is the update's over the copy's.  Prints one line:
 *
 *   sparse adagrad, 4096 rows x 32 of 1000000: 41.2 us, 11.3 GB/s;
 *   copy 19.9 GB/s; ratio 0.57
 *
 * Usage: rows [ROWS [TABLE [REPS]]].  Built by make bench.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/role.h"
#include "runtime/rt_int.h"

enum { WIDTH = 32 };

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_d);
	return t[n / 2];
}

static void *
must(void *p)
{
	if (!p) {
		fprintf(stderr, "rows: out of memory\n");
		exit(2);
	}
	return p;
}

int
main(int argc, char **argv)
{
	int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
	int64_t rows = argc > 2 ? atoll(argv[2]) : 1000000;
	int reps = argc > 3 ? atoi(argv[3]) : 51;
	static RtTask task = {"ps", 0, "127.0.0.1:1", "/job:ps/task:0"};
	RtVar vars[2] = {{0}};
	TfgPlan plan = {0};
	TfgOptions o = {0};
	RtServer s;
	RtStep st;
	RtCtx c = {0};
	double *t = must(malloc((size_t)reps * sizeof *t)), h[3] = {0.01, 0.1,
								      1.0};
	int64_t *ids = must(malloc((size_t)n * sizeof *ids));
	float *g = must(malloc((size_t)n * WIDTH * sizeof *g));
	size_t big = 256u << 20, touched;
	char *src, *dst;
	double upd, copy;
	unsigned char ok;

	if (n < 1 || rows < 1 || reps < 1) {
		fprintf(stderr, "usage: rows [ROWS [TABLE [REPS]]]\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		vars[i].name = i ? "emb/Adagrad" : "emb";
		vars[i].dtype = TFG_F32;
		vars[i].shape = (TfgShape){2, {rows, WIDTH}};
		vars[i].nbytes = (size_t)rows * WIDTH * sizeof(float);
		vars[i].where = "rows.c";
	}
	plan.file = "rows.c";
	plan.ntask = 1, plan.tasks = &task;
	plan.nvar = 2, plan.vars = vars;
	if (rt_server_init(&s, &plan, 0, &o) != TFG_OK) {
		fprintf(stderr, "rows: no server\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		/* as the server allocates a variable: huge pages when big */
		float *d = (float *)must(rt_arena_alloc(vars[i].nbytes));
		for (int64_t k = 0; k < rows * WIDTH; k++)
			d[k] = i ? 0.1f : (float)(k % 97) * 0.001f;
		s.vars[i].data = (unsigned char *)d;
		s.vars[i].init = 1;
	}
	rt_step_init(&st, &s.proc);
	c.store = &s;
	c.step = &st;
	c.err = &st.err;
	rt_optim_attach(&c);
	srand(1);
	for (int64_t k = 0; k < n * WIDTH; k++)
		g[k] = (float)(rand() % 2001 - 1000) * 1e-3f;
	for (int r = 0; r < reps; r++) {
		double t0;

		for (int64_t k = 0; k < n; k++) /* new rows each time */
			ids[k] = (int64_t)(((uint64_t)rand() << 16 ^
					    (uint64_t)rand()) % (uint64_t)rows);
		t0 = now_s();
		if (tfg_rt_apply_rows(&c, 0, TFG_OPT_ADAGRAD, 1, ids, n, g, h,
				      &ok) != TFG_OK || !ok) {
			fprintf(stderr, "rows: %s\n", st.err.msg);
			return 1;
		}
		t[r] = now_s() - t0;
	}
	upd = median(t, reps);
	src = must(malloc(big));
	dst = must(malloc(big));
	memset(src, 1, big);
	memset(dst, 2, big);
	for (int r = 0; r < 5; r++) {
		double t0 = now_s();
		memcpy(dst, src, big);
		t[r] = now_s() - t0;
	}
	copy = 2.0 * (double)big / median(t, 5);
	if (dst[big / 2] != 1) /* the copy is read: it is made */
		return 1;
	touched = (size_t)n * (WIDTH * sizeof(float) * 5 + sizeof(int64_t));
	printf("sparse adagrad, %lld rows x %d of %lld: %.1f us, %.1f GB/s; "
	       "copy %.1f GB/s; ratio %.2f\n", (long long)n, WIDTH,
	       (long long)rows, upd * 1e6, (double)touched / upd * 1e-9,
	       copy * 1e-9, (double)touched / upd / copy);
	free(src);
	free(dst);
	free(ids);
	free(g);
	free(t);
	rt_server_free(&s);
	return 0;
}
