/*
 * tests/unit/kernel_test.c: outlined kernels and multi-core loops
 * (spec/design.md "Kernels", codegen/cpu_nest.c, runtime/pool.c).
 *
 *   shared   nests that emit the same code share one tfg_k<N>: a chain
 *            of 40 unfused ops of 3 kinds on one shape has 3 kernels,
 *            and 41 with TFG_KERNEL_DEDUP=0
 *   same     every nest family (elementwise with broadcasts, fused
 *            groups, reductions in both loop orders, argmax, transpose,
 *            concat, slice, one_hot, range, random, softmax and
 *            log_softmax split by rows) gives the same bytes
 *            with one thread, split over 3 threads (TFG_PAR_MIN=1: every
 *            nest that may be split is, with odd chunk sizes), and with
 *            no kernel shared; floats compared bit for bit, since a split
 *            never splits a reduction
 *   pool     tfg_rt_parallel runs every iteration once, some of them on
 *            the workers, and a loop of fewer iterations than threads
 *   handoff  tens of thousands of short loops back to back, some after
 *            a pause long enough for the workers to sleep, from two
 *            threads at once: each runs every iteration exactly once
 *            (the ticket, slots and active count of runtime/pool.c)
 * Feeds come through a fake tfg_rt_recv; fetches are copied by a fake
 * tfg_rt_send.  tfg_rt_parallel is libtfg's own (the threads are real,
 * which ASan and UBSan see in make asan).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/jit_harness.h"

static void
fill(void *d, TfgDtype t, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		uint64_t r = jh_next();
		double f = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8;
		int64_t v = (int64_t)(r >> 40) % 200 - 100;
		switch (t) {
		case TFG_BOOL: ((uint8_t *)d)[i] = r & 1; break;
		case TFG_I32: ((int32_t *)d)[i] = (int32_t)v; break;
		case TFG_I64: ((int64_t *)d)[i] = v; break;
		case TFG_F32: ((float *)d)[i] = (float)f; break;
		default: ((double *)d)[i] = f; break;
		}
	}
}

/* Kernel options: $TFG_KERNEL_DEDUP, $TFG_PAR_MIN and $TFG_NT_MIN
 * (read when a module is built). */
static void
kopts(int dedup, const char *par_min, const char *nt_min)
{
	setenv("TFG_KERNEL_DEDUP", dedup ? "1" : "0", 1);
	setenv("TFG_PAR_MIN", par_min, 1);
	setenv("TFG_NT_MIN", nt_min, 1);
}

/* Runs sig 0 of task 0 of src; returns the fetched bytes concatenated
 * (malloc'd, *len their size) or NULL. */
static char *
run_src(const char *src, size_t *len)
{
	CompileOptions co = {0};
	Program p;
	char *out;

	if (jh_compile_src(&p, src, &co) != 0)
		return NULL;
	jh_rng = 0x9e3779b97f4a7c15ull;
	out = jh_run_fetches(&p, fill, len);
	arena_free(p.arena);
	return out;
}

/* The optimised IR of src (fusion off), malloc'd. */
static char *
emit_src(const char *src)
{
	CompileOptions co = {0};
	Program p;
	char *ir;
	co.skip = 1u << PASS_FUSE;
	if (jh_compile_src(&p, src, &co) != 0)
		return NULL;
	ir = jh_emit(&p, NULL);
	arena_free(p.arena);
	return ir;
}

static int
count(const char *s, const char *what)
{
	int n = 0;
	for (const char *c = strstr(s, what); c; c = strstr(c + 1, what))
		n++;
	return n;
}

static void
t_shared(void)
{
	char src[4096];
	size_t at = 0;
	at += (size_t)snprintf(src + at, sizeof src - at,
			       "cluster { local = [\"localhost:2222\"] }\n"
			       "v0 = random_uniform([64, 64], seed=1)\n");
	for (int i = 1; i <= 40; i++)
		at += (size_t)snprintf(src + at, sizeof src - at,
				       i % 2 ? "v%d = tanh(v%d)\n"
					     : "v%d = v%d + v0\n", i, i - 1);
	snprintf(src + at, sizeof src - at,
		 "session \"/job:local/task:0\" { print run(v40) }\n");
	kopts(1, "", "");
	char *ir = emit_src(src);
	ASSERT(ir != NULL);
	ASSERT_EQ(count(ir, "define internal"), 3);
	ASSERT_EQ(count(ir, "call fastcc void @tfg_k"), 41);
	free(ir);
	kopts(0, "", "");
	ir = emit_src(src);
	ASSERT(ir != NULL);
	ASSERT_EQ(count(ir, "define internal"), 41);
	free(ir);
	/* split: a loop worth splitting goes through the pool */
	kopts(1, "1", "");
	ir = emit_src(src);
	ASSERT(ir != NULL);
	ASSERT_EQ(count(ir, "call void @tfg_rt_parallel"), 41);
	free(ir);
	/* softmax's rows: outlined, split when large (rows * cols) */
	static const char *sm = "cluster { local = [\"localhost:2222\"] }\n"
	    "x = random_uniform([512, 256], seed=1)\ny = softmax(x)\n"
	    "z = log_softmax(x)\n"
	    "session \"/job:local/task:0\" { print run(y, z) }\n";
	kopts(1, "", "");
	ir = emit_src(sm);
	ASSERT(ir != NULL);
	ASSERT_EQ(count(ir, "call void @tfg_rt_parallel"), 3);
	free(ir);
	kopts(1, "-1", "");
	ir = emit_src(sm);
	ASSERT(ir != NULL);
	ASSERT_EQ(count(ir, "call void @tfg_rt_parallel"), 0);
	free(ir);
	/* non-temporal stores: for large flat outputs only (a [64, 64]
	   chain is far below CG_NT_MIN), aligned */
	kopts(1, "", "");
	ir = emit_src(src);
	ASSERT(ir != NULL);
	ASSERT_EQ(count(ir, "!nontemporal"), 0);
	free(ir);
	kopts(1, "", "1");
	ir = emit_src(src);
	ASSERT(ir != NULL);
	ASSERT(count(ir, "align 64, !nontemporal") > 0);
	free(ir);
	kopts(1, "", "");
}

/* src gives the same bytes on 1 and 3 threads, with and without
 * sharing, and with non-temporal stores for every output they may
 * write (TFG_NT_MIN=1: tiles, the unaligned head and the tail). */
static void
same(const char *body)
{
	char src[4096];
	size_t n[4] = {0, 0, 0, 0};
	static const int dedup[4] = {1, 1, 0, 1};
	static const char *par_min[4] = {"-1", "1", "1", "1"};
	static const char *nt_min[4] = {"-1", "-1", "-1", "1"};
	char *r[4];
	snprintf(src, sizeof src, "cluster { local = [\"localhost:2222\"] }\n"
		 "%s", body);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(tfg_set_threads(i ? 3 : 1), i ? 3 : 1);
		kopts(dedup[i], par_min[i], nt_min[i]);
		r[i] = run_src(src, &n[i]);
		ASSERT(r[i] != NULL);
	}
	for (int i = 1; i < 4; i++) {
		ASSERT_EQ(n[i], n[0]);
		if (memcmp(r[i], r[0], n[0]) != 0)
			TEST_FAIL_("run %d differs: %s", i, body);
	}
	for (int i = 0; i < 4; i++)
		free(r[i]);
	kopts(1, "", "");
}

static void
t_same(void)
{
	/* the pool first sized here: 2 workers, even on fewer cores */
	ASSERT_EQ(tfg_set_threads(3), 3);
	same("input x: f32[37, 129]\ninput b: f32[129]\ninput c: f32[37, 1]\n"
	     "y = sigmoid(x * 1.5 + b) - c\nz = tanh(x) * c\n"
	     "w = where(x > c, x, b)\ni = cast(x * 10.0, i32) % 7\n"
	     "session { print run(y, z, w, i, feed { x: load(\"x\"), "
	     "b: load(\"b\"), c: load(\"c\") }) }\n");
	same("input x: f32[33, 17, 9]\ninput i: i64[33, 17, 9]\n"
	     "a = reduce_sum(x, axis=0)\nb = reduce_mean(x, axis=1)\n"
	     "c = reduce_max(x * 2.0, axis=2)\nd = reduce_sum(x)\n"
	     "e = argmax(x, axis=1)\nf = reduce_mean(i, axis=[0, 2])\n"
	     "g = reduce_prod(x * 0.1 + 1.0, axis=[1, 2])\n"
	     "session { print run(a, b, c, d, e, f, g, feed { x: load(\"x\"), "
	     "i: load(\"i\") }) }\n");
	same("input x: f64[31, 45]\ninput y: f64[31, 7]\n"
	     "t = transpose(x)\nk = concat([x, y], axis=1)\n"
	     "s = x[3:29, 5:40]\nh = one_hot(cast(reduce_max(x, axis=1), i32) "
	     "% 5, 5)\nr = range(0, 1000)\nu = random_uniform([77, 13], "
	     "seed=4)\nn = random_normal([301], seed=5)\n"
	     "session { print run(t, k, s, h, r, u, n, feed { x: load(\"x\"), "
	     "y: load(\"y\") }) }\n");
	/* full reductions in chunks (spec/design.md "Kernels"): with a
	   remainder, fused, integer means, of a scalar broadcast */
	same("input x: f32[1000, 331]\ninput i: i32[1000, 331]\n"
	     "a = reduce_sum(x)\nb = reduce_mean(x * x + 1.0)\n"
	     "c = reduce_max(x)\nd = reduce_min(x - 2.0)\n"
	     "e = reduce_mean(i)\nf = reduce_sum(i * 3)\n"
	     "g = reduce_prod(x * 0.001 + 1.0)\n"
	     "h = reduce_sum(x[1:999, :] * 2.0)\n"
	     "session { print run(a, b, c, d, e, f, g, h, feed { x: "
	     "load(\"x\"), i: load(\"i\") }) }\n");
	/* large enough that the workers wake before the caller is done */
	same("input x: f32[8192, 256]\n"
	     "a = reduce_sum(x, axis=0)\nb = reduce_max(x, axis=1)\n"
	     "c = exp(x * 0.5)\n"
	     "session { print run(a, b, c, feed { x: load(\"x\") }) }\n");
	/* softmax: a kernel over a range of rows, split by rows */
	same("input x: f32[37, 5, 129]\ninput y: f64[41, 33]\n"
	     "input v: f32[300]\n"
	     "a = softmax(x)\nb = log_softmax(x)\nc = softmax(y)\n"
	     "d = log_softmax(y)\ne = softmax(v)\nf = log_softmax(v * 3.0)\n"
	     "session { print run(a, b, c, d, e, f, feed { x: load(\"x\"), "
	     "y: load(\"y\"), v: load(\"v\") }) }\n");
	same("input x: f32[4096, 1024]\n"
	     "a = softmax(x)\nb = log_softmax(x * 2.0)\n"
	     "session { print run(a, b, feed { x: load(\"x\") }) }\n");
	same("input x: f32[4096]\ninput y: f32[64, 64]\n"
	     "a = x * 2.0 + 1.0\nb = reshape(x, [64, 64]) - y\n"
	     "m = matmul(y, y)\n"
	     "session { print run(a, b, m, feed { x: load(\"x\"), "
	     "y: load(\"y\") }) }\n");
}

static _Atomic int hits[1000];
static _Atomic int by_worker;
static pthread_t caller;

static void
k_count(void *const *bases, int64_t b, int64_t e)
{
	(void)bases;
	for (int64_t i = b; i < e; i++) {
		atomic_fetch_add(&hits[i], 1);
		if (!pthread_equal(pthread_self(), caller))
			atomic_fetch_add(&by_worker, 1);
		usleep(20); /* long enough for the workers to wake */
	}
}

static void
t_pool(void)
{
	int64_t ns[4] = {1000, 2, 1, 0};
	caller = pthread_self();
	ASSERT_EQ(tfg_set_threads(3), 3);
	for (int r = 0; r < 4; r++) {
		memset(hits, 0, sizeof hits);
		atomic_store(&by_worker, 0);
		tfg_rt_parallel(k_count, NULL, ns[r]);
		for (int i = 0; i < 1000; i++)
			ASSERT_EQ(atomic_load(&hits[i]), i < ns[r]);
	}
	memset(hits, 0, sizeof hits);
	tfg_rt_parallel(k_count, NULL, 1000);
	ASSERT(atomic_load(&by_worker) > 0);
	ASSERT_EQ(tfg_set_threads(1), 1);
	atomic_store(&by_worker, 0);
	tfg_rt_parallel(k_count, NULL, 100);
	ASSERT_EQ(atomic_load(&by_worker), 0);
}

/* Short loops, no sleeping in the kernel: hand-offs race with the
 * caller's own chunks.  Each caller thread has its own counts. */
enum { HO_N = 257, HO_LOOPS = 20000 };
static _Atomic int ho_hits[2][HO_N];
static _Atomic long ho_by_worker;

static void
k_ho(void *const *bases, int64_t b, int64_t e)
{
	_Atomic int *h = bases[0];
	for (int64_t i = b; i < e; i++)
		atomic_fetch_add(&h[i], 1);
	if (!pthread_equal(pthread_self(), caller))
		atomic_fetch_add(&ho_by_worker, 1);
}

static void *
ho_loops(void *arg)
{
	int who = (int)(intptr_t)arg;
	void *base = ho_hits[who];
	long bad = 0;
	for (int l = 0; l < HO_LOOPS; l++) {
		int64_t n = 1 + (l * 7919 + who * 13) % HO_N;
		for (int i = 0; i < HO_N; i++)
			atomic_store(&ho_hits[who][i], 0);
		if (who == 0 && l % 2000 == 1999)
			usleep(300); /* past the workers' spin: they sleep */
		tfg_rt_parallel(k_ho, &base, n);
		for (int i = 0; i < HO_N; i++)
			bad += atomic_load(&ho_hits[who][i]) != (i < n);
	}
	return (void *)bad;
}

static void
t_handoff(void)
{
	pthread_t other;
	void *bad0, *bad1;
	caller = pthread_self();
	ASSERT_EQ(tfg_set_threads(3), 3);
	atomic_store(&ho_by_worker, 0);
	bad0 = ho_loops((void *)0);
	ASSERT(bad0 == NULL);
	/* on a loaded machine the workers may not have run in time to
	   join any: more rounds until one did */
	for (int r = 0; r < 50 && atomic_load(&ho_by_worker) == 0; r++)
		ASSERT(ho_loops((void *)0) == NULL);
	ASSERT(atomic_load(&ho_by_worker) > 0);
	/* two callers: one has the pool at a time, the other runs alone */
	ASSERT_EQ(pthread_create(&other, NULL, ho_loops, (void *)1), 0);
	bad0 = ho_loops((void *)0);
	ASSERT_EQ(pthread_join(other, &bad1), 0);
	ASSERT(bad0 == NULL);
	ASSERT(bad1 == NULL);
}

TEST_MAIN({"shared", t_shared}, {"same", t_same}, {"pool", t_pool},
	  {"handoff", t_handoff})
