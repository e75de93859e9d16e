/*
 * tests/fuzz/wire_seeds.c: writes the seeds of the wire target
 * (tests/fuzz/wire_fuzz.c, whose comment gives the input's layout) into
 * a directory: `make fuzz-seeds`, after the wire format or the target's
 * programs (tests/fuzz/wire_env.h) change.
 *
 * Each seed is a conversation a real process could have, its headers
 * encoded by rt_hdr_encode for the plans the target compiles: the STARTs,
 * tensors, ABORTs and DONEs of steps on each task, a client's fetches, a
 * peer that restarts, the controller's traffic, the SPECIALISE, START and
 * RELEASE of a specialisation, a tensor of another specialisation than
 * its step's, and a few messages each check refuses.
 * From these the fuzzer finds its way into every branch of validation
 * and filing without guessing a plan hash or a step's tag.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/wire_env.h"

typedef struct Seed {
	unsigned char b[16384];
	size_t n;
} Seed;

static const char *dir;
static int nwritten;

/* The incarnation of peer task t (RT_SRC_CONTROLLER: the controller). */
static uint64_t
epoch_of(int t)
{
	return t == RT_SRC_CONTROLLER ? 1 : WE_EPOCH + 1000 * (uint64_t)(t + 1);
}

/* Step n of client task t as incarnation epoch_of(t) numbers it; the
 * listener's own steps (t == self) carry its tag, WE_EPOCH's. */
static uint64_t
step_of(int t, int self, uint64_t n)
{
	return RT_STEP(t, rt_step_tag(t == self ? WE_EPOCH : epoch_of(t)), n);
}

static void
seed_begin(Seed *s, int who, int generic, int sig, int verbose)
{
	s->b[0] = (unsigned char)((who + 1) | generic << 2 | sig << 3 |
				  verbose << 7);
	s->n = 1;
}

static void
seed_frame(Seed *s, const void *hdr, size_t nh, const void *body, size_t nb)
{
	TFG_ASSERT(s->n + 2 + nh + nb <= sizeof s->b && nh + nb <= 0xffff);
	rt_put_le(s->b + s->n, nh + nb, 2);
	memcpy(s->b + s->n + 2, hdr, nh);
	if (nb)
		memcpy(s->b + s->n + 2 + nh, body, nb);
	s->n += 2 + nh + nb;
}

/* The records queued so far run. */
static void
seed_run(Seed *s)
{
	seed_frame(s, "", 0, NULL, 0);
}

static void
seed_hdr(Seed *s, const RtHdr *h, const void *body)
{
	unsigned char hdr[RT_HDR_SIZE];

	rt_hdr_encode(hdr, h);
	seed_frame(s, hdr, sizeof hdr, body, (size_t)h->nbytes);
}

/* A message without a tensor from src, with its incarnation. */
static void
seed_msg(Seed *s, const TfgPlan *plan, int type, uint64_t step, uint32_t key,
	 int src, const void *body, size_t n)
{
	RtHdr h;

	rt_hdr_init(&h, plan, type, step, key, (uint16_t)src, n, epoch_of(src));
	seed_hdr(s, &h, body);
}

/* TENSOR of edge e for step, its body zeros unless given. */
static void
seed_tensor(Seed *s, const TfgPlan *plan, const RtEdge *e, uint64_t step,
	    const void *body)
{
	static const unsigned char zeros[4096];
	RtHdr h;

	TFG_ASSERT(e != NULL && e->nbytes <= sizeof zeros);
	rt_hdr_init(&h, plan, RT_MSG_TENSOR, step, e->key, (uint16_t)e->src,
		    e->nbytes, epoch_of(e->src));
	h.dtype = (uint8_t)e->dtype;
	h.rank = (uint8_t)e->shape.rank;
	for (int i = 0; i < e->shape.rank; i++)
		h.dims[i] = (uint64_t)e->shape.dims[i];
	seed_hdr(s, &h, body ? body : zeros);
}

/* A START of sig from its client for step, its feeds zeros. */
static void
seed_start(Seed *s, const TfgPlan *plan, int sig, int self, uint64_t step)
{
	static const unsigned char zeros[4096];
	size_t n = rt_start_bytes(plan, sig, self);

	TFG_ASSERT(n <= sizeof zeros);
	seed_msg(s, plan, RT_MSG_START, step, (uint32_t)sig,
		 plan->sigs[sig].client, zeros, n);
}

static void
seed_write(const char *name, const Seed *s)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/seed-%s", dir, name);
	if ((f = fopen(path, "wb")) == NULL ||
	    fwrite(s->b, 1, s->n, f) != s->n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	nwritten++;
}

/* ------------------------------------------------- the concrete plan */

/* The string fetch w = ["ab", "c", "déf"] as task 1 sends it. */
static void
string_body(unsigned char *b, const RtEdge *e)
{
	static const char *const s[3] = {"ab", "c", "d\xc3\xa9" "f"};
	size_t off = 3 * TFG_STRING_RECORD;

	TFG_ASSERT(e->nbytes >= off + 7 && e->nbytes <= 4096);
	memset(b, 0, e->nbytes);
	for (int i = 0; i < 3; i++) {
		rt_put_le(b + i * TFG_STRING_RECORD, off, 8);
		rt_put_le(b + i * TFG_STRING_RECORD + 8, strlen(s[i]), 8);
		memcpy(b + off, s[i], strlen(s[i]));
		off += strlen(s[i]);
	}
}

static void
concrete(void)
{
	const TfgPlan *p = we_base[WE_CONCRETE].p.plan;
	const RtEdge *y12 = we_edge(p, "y", 1, 2), *z20 = we_edge(p, "z", 2, 0);
	const RtEdge *w10 = we_edge(p, "w", 1, 0), *z21 = we_edge(p, "z", 2, 1);
	const RtEdge *z21f = NULL;
	unsigned char w[4096];
	char url[] = "tcp://127.0.0.1:9";
	Seed s;

	/* sig 3's fetch z, 2 -> 1 (sig 2 has an edge z 2 -> 1 of its own) */
	for (int i = 0; i < p->sigs[3].nfetch; i++)
		z21f = &p->edges[p->sigs[3].fetches[i].key];
	TFG_ASSERT(z21 && z21f && z21f != z21);
	string_body(w, w10);

	/* task 1 runs its part of sig 1: x comes with the START */
	seed_begin(&s, 1, 0, 0, 0);
	seed_start(&s, p, 1, 1, step_of(0, 1, 1));
	seed_run(&s);
	seed_start(&s, p, 1, 1, step_of(0, 1, 2));
	seed_start(&s, p, 1, 1, step_of(0, 1, 2)); /* a duplicate */
	seed_run(&s);
	seed_write("task1-start", &s);

	/* task 2: its tensor from task 1 before its START, then after */
	seed_begin(&s, 2, 0, 0, 0);
	seed_tensor(&s, p, y12, step_of(0, 2, 1), NULL);
	seed_start(&s, p, 1, 2, step_of(0, 2, 1));
	seed_run(&s);
	seed_start(&s, p, 1, 2, step_of(0, 2, 2));
	seed_run(&s);
	seed_tensor(&s, p, y12, step_of(0, 2, 2), NULL);
	seed_tensor(&s, p, y12, step_of(0, 2, 1), NULL); /* stale */
	seed_write("task2-start-tensor", &s);

	/* sig 2 on task 2 sends z to task 1; sig 3 is task 1's own */
	seed_begin(&s, 2, 0, 0, 0);
	seed_start(&s, p, 2, 2, step_of(0, 2, 1));
	seed_tensor(&s, p, y12, step_of(0, 2, 1), NULL);
	seed_start(&s, p, 3, 2, step_of(1, 2, 1));
	seed_tensor(&s, p, y12, step_of(1, 2, 1), NULL);
	seed_run(&s);
	seed_write("task2-two-clients", &s);

	/* the client gives up: ABORT before and after the START */
	seed_begin(&s, 1, 0, 0, 0);
	seed_msg(&s, p, RT_MSG_ABORT, step_of(0, 1, 1), 0, 0, "gave up", 7);
	seed_start(&s, p, 1, 1, step_of(0, 1, 1));
	seed_start(&s, p, 2, 1, step_of(0, 1, 2));
	seed_msg(&s, p, RT_MSG_ABORT, step_of(0, 1, 2), 0, 0,
		 "step 2 failed: timed out", 24);
	seed_run(&s);
	seed_write("task1-abort", &s);

	/* task 0 as the client of sig 1: z from 2, the string w from 1 */
	seed_begin(&s, 0, 0, 1, 0);
	seed_tensor(&s, p, z20, step_of(0, 0, 1), NULL);
	seed_tensor(&s, p, w10, step_of(0, 0, 1), w);
	seed_write("task0-client-fetch", &s);

	/* sig 0 (initialize()): task 1's part sends nothing, so DONE */
	seed_begin(&s, 0, 0, 0, 0);
	seed_msg(&s, p, RT_MSG_DONE, step_of(0, 0, 1), 0, 1, NULL, 0);
	seed_write("task0-client-done", &s);

	/* sig 2 fails on task 2: ERROR, with its text */
	seed_begin(&s, 0, 0, 2, 1);
	seed_msg(&s, p, RT_MSG_ERROR, step_of(0, 0, 1), RT_ERROR_FAILED, 2,
		 "/job:local/task:2: part failed", 30);
	seed_write("task0-client-error", &s);

	/* task 1 as the client of sig 3, which has a part of its own */
	seed_begin(&s, 1, 0, 3, 0);
	seed_tensor(&s, p, z21f, step_of(1, 1, 1), NULL);
	seed_write("task1-client", &s);

	/* the controller's messages to a task, URLs in their bodies */
	seed_begin(&s, 1, 0, 0, 1);
	seed_msg(&s, p, RT_MSG_PING, 0, 0, RT_SRC_CONTROLLER, url,
		 strlen(url));
	seed_msg(&s, p, RT_MSG_RUN_SESSION, 0, 1, RT_SRC_CONTROLLER, url,
		 strlen(url));
	seed_msg(&s, p, RT_MSG_SHUTDOWN, 0, RT_SHUTDOWN_QUIET,
		 RT_SRC_CONTROLLER, url, strlen(url));
	seed_run(&s);
	seed_write("task1-control", &s);

	/* a PING of another program's run: answered with a refusal
	   (RT_EV_FOREIGN_PING), not dropped */
	seed_begin(&s, 1, 0, 0, 1);
	{
		RtHdr h;

		rt_hdr_init(&h, p, RT_MSG_PING, 0, 0, RT_SRC_CONTROLLER,
			    strlen(url), epoch_of(RT_SRC_CONTROLLER));
		h.prog ^= 1;
		seed_hdr(&s, &h, url);
	}
	seed_run(&s);
	seed_write("task1-foreign-ping", &s);

	/* task 2 restarts: a newer incarnation, then an older one */
	seed_begin(&s, 1, 0, 0, 1);
	seed_start(&s, p, 1, 1, step_of(0, 1, 1));
	seed_tensor(&s, p, z21, step_of(0, 1, 1), NULL);
	{
		unsigned char hdr[RT_HDR_SIZE];
		RtHdr h;

		rt_hdr_init(&h, p, RT_MSG_TENSOR, step_of(0, 1, 1), z21->key,
			    2, z21->nbytes, epoch_of(2) + 1);
		h.dtype = (uint8_t)z21->dtype;
		rt_hdr_encode(hdr, &h);
		seed_frame(&s, hdr, sizeof hdr, "\0\0\0\0", 4);
		h.epoch = epoch_of(2) - 1;
		rt_hdr_encode(hdr, &h);
		seed_frame(&s, hdr, sizeof hdr, "\0\0\0\0", 4);
	}
	seed_run(&s);
	seed_write("task1-restart", &s);

	/* what each check refuses */
	seed_begin(&s, 2, 0, 0, 0);
	seed_frame(&s, "TFG1", 4, NULL, 0); /* truncated */
	{
		unsigned char hdr[RT_HDR_SIZE];
		RtHdr h;

		rt_hdr_init(&h, p, RT_MSG_TENSOR, step_of(0, 2, 1), y12->key,
			    1, 8, epoch_of(1));
		rt_hdr_encode(hdr, &h);
		seed_frame(&s, hdr, sizeof hdr, "\0\0\0\0\0\0\0\0", 8);
		h.magic = 0x32474654u;
		rt_hdr_encode(hdr, &h);
		seed_frame(&s, hdr, sizeof hdr, "\0\0\0\0\0\0\0\0", 8);
		h = (RtHdr){0};
		rt_hdr_encode(hdr, &h);
		seed_frame(&s, hdr, sizeof hdr, NULL, 0);
	}
	seed_msg(&s, p, RT_MSG_DONE, step_of(0, 2, 1), 9, 0, NULL, 0);
	seed_msg(&s, p, RT_MSG_ABORT, step_of(0, 2, 1), 0, 0, "a\nb", 3);
	seed_run(&s);
	seed_write("task2-refused", &s);

	/* the controller: tfgc run's side */
	seed_begin(&s, -1, 0, 0, 0);
	seed_msg(&s, p, RT_MSG_PONG, 0, 0, 0, NULL, 0);
	seed_msg(&s, p, RT_MSG_OUTPUT, 0, 0, 0, "hello\n", 6);
	seed_msg(&s, p, RT_MSG_OUTPUT, 0, 1, 1, "[1 2]", 5);
	seed_run(&s);
	seed_msg(&s, p, RT_MSG_SESSION_END, 0, 0, 0, NULL, 0);
	seed_msg(&s, p, RT_MSG_SESSION_END, 0, 1, 1, "it failed", 9);
	seed_msg(&s, p, RT_MSG_BYE, 0, 0, 2, NULL, 0);
	seed_write("controller", &s);
}

/* -------------------------------------------------- the generic plan */

/* SPECIALISE of sig 0 from task 0 for x: f32[rows, 3], n: i32[len]. */
static void
seed_specialise(Seed *s, const TfgPlan *g, uint64_t step, int64_t rows,
		int64_t len)
{
	unsigned char b[8 * 5];

	rt_put_le(b, 2, 8);
	rt_put_le(b + 8, (uint64_t)rows, 8);
	rt_put_le(b + 16, 3, 8);
	rt_put_le(b + 24, 1, 8);
	rt_put_le(b + 32, (uint64_t)len, 8);
	seed_msg(s, g, RT_MSG_SPECIALISE, step, 0, 0, b, sizeof b);
}

static void
generic(void)
{
	WeProg *b = &we_base[WE_GENERIC];
	const TfgPlan *g = b->p.plan, *sp[3];
	TfgShape feeds[2] = {{2, {2, 3}}, {1, {2}}};
	RtPart parts[8];
	TfgError e;
	unsigned char hash[8];
	Seed s;

	TFG_ASSERT(g->nsig <= 8 && g->sigs[0].nfeed == 2);
	/* the specialisation each task compiles for x: f32[2, 3], n:
	   i32[2]: the plan whose hash its START names */
	for (int t = 0; t < 3; t++)
		TFG_ASSERT(we_specialise(b, g, 0, feeds, t, &sp[t], parts,
					 &e) == 0);
	TFG_ASSERT(sp[1]->hash == sp[2]->hash);
	rt_put_le(hash, sp[1]->hash, 8);

	for (int t = 1; t <= 2; t++) {
		char name[64];

		seed_begin(&s, t, 1, 0, 0);
		seed_specialise(&s, g, step_of(0, t, 1), 2, 2);
		seed_run(&s);
		seed_start(&s, sp[t], 0, t, step_of(0, t, 2));
		if (t == 2)
			seed_tensor(&s, sp[t], we_edge(sp[t], "y", 1, 2),
				    step_of(0, t, 2), NULL);
		seed_run(&s);
		seed_msg(&s, g, RT_MSG_RELEASE, 0, 0, 0, hash, 8);
		seed_run(&s);
		seed_start(&s, sp[t], 0, t, step_of(0, t, 3)); /* lost */
		seed_run(&s);
		snprintf(name, sizeof name, "gen-task%d-specialise", t);
		seed_write(name, &s);
	}

	/* past max_specs (2) the least recently used goes */
	seed_begin(&s, 1, 1, 0, 1);
	for (int i = 1; i <= 4; i++) {
		seed_specialise(&s, g, step_of(0, 1, (uint64_t)i), i, 2);
		seed_run(&s);
	}
	seed_write("gen-task1-evict", &s);

	/* task 0 restarts: what it held here goes */
	seed_begin(&s, 1, 1, 0, 0);
	seed_specialise(&s, g, step_of(0, 1, 1), 2, 2);
	seed_run(&s);
	{
		unsigned char body[8 * 5], hdr[RT_HDR_SIZE];
		RtHdr h;

		memcpy(body, s.b + s.n - 2 - sizeof body, sizeof body);
		rt_hdr_init(&h, g, RT_MSG_SPECIALISE,
			    RT_STEP(0, rt_step_tag(epoch_of(0) + 5), 1), 0, 0,
			    sizeof body, epoch_of(0) + 5);
		rt_hdr_encode(hdr, &h);
		seed_frame(&s, hdr, sizeof hdr, body, sizeof body);
	}
	seed_run(&s);
	seed_write("gen-task1-restart", &s);

	/* a tensor of another specialisation than its step's, whose edge
	   of that key is smaller, then the right one */
	{
		TfgShape small[2] = {{2, {1, 3}}, {1, {2}}};
		TfgShape large[2] = {{2, {50, 3}}, {1, {2}}};
		const TfgPlan *x, *y;

		TFG_ASSERT(we_specialise(b, g, 0, small, 2, &x, parts, &e) ==
			   0);
		TFG_ASSERT(we_specialise(b, g, 0, large, 2, &y, parts, &e) ==
			   0);
		seed_begin(&s, 2, 1, 0, 0);
		seed_specialise(&s, g, step_of(0, 2, 1), 1, 2);
		seed_specialise(&s, g, step_of(0, 2, 2), 50, 2);
		seed_run(&s);
		seed_tensor(&s, x, we_edge(x, "y", 1, 2), step_of(0, 2, 3),
			    NULL);
		seed_tensor(&s, y, we_edge(y, "y", 1, 2), step_of(0, 2, 3),
			    NULL);
		seed_start(&s, y, 0, 2, step_of(0, 2, 3));
		seed_run(&s);
		seed_write("gen-task2-other-plan", &s);
		we_release(b, x);
		we_release(b, y);
	}

	for (int t = 0; t < 3; t++)
		we_release(b, sp[t]);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	we_init();
	concrete();
	generic();
	printf("wire_seeds: %d seeds in %s\n", nwritten, dir);
	return 0;
}
