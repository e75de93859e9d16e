/*
 * tests/unit/blas_test.c: large f32/f64 matmuls, which codegen/cpu_shape.c
 * hands to tfg_rt_gemm (runtime/gemm.c: cblas_sgemm/cblas_dgemm cut over
 * the kernel pool; spec §6.18 "matmul and `@`": m * n * k >= 32^3 and
 * m >= 8), against a plain C reference written here.
 *
 * Shapes are random, 100..300 per axis and a few larger, plain, batched
 * (one call per batch element), with broadcast batch axes (base pointers
 * at stride 0), the batch folded into rows (b without batch axes), and a
 * vector on the right (n = 1).  Each part is JIT-compiled, so
 * tfg_rt_gemm resolves as in tfgc (codegen/jit.c).  tfg_rt_gemm is also
 * called directly, on 1, 2 and 3 threads, with every transpose, alpha
 * and beta, blocks of rows and of columns.
 *
 * Tolerance: BLAS sums in its own order and blocks, so within
 * 4 (k + 1) eps of the sum of |a b| (eps of the dtype; the reference sums
 * in long double).  A check on the optimised IR shows the rule picks
 * BLAS for these shapes and the loop for few rows.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

enum { OUT_KEY = 3 };

/* recv a (key 0), recv b (key 1), c = a @ b, send c (OUT_KEY). */
static Program *
prog(TfgDtype t, const TfgShape *sa, const TfgShape *sb, const TfgShape *so)
{
	JhPart p = {0};
	IrNode *in[2];
	in[0] = jh_op(&p, OP_input, t, *sa, 0, NULL);
	in[1] = jh_op(&p, OP_input, t, *sb, 0, NULL);
	in[1]->key = 1;
	jh_snd(&p, jh_op(&p, OP_matmul, t, *so, 2, in), OUT_KEY);
	return jh_prog1(p.nodes, p.n);
}

static void *
fill(TfgDtype t, int64_t n)
{
	char *b = jh_alloc((size_t)n * 8);
	for (int64_t i = 0; i < n; i++) {
		double f = (double)(int64_t)(jh_next() % 2000001 - 1000000) /
			   1e6;
		if (t == TFG_F32)
			((float *)b)[i] = (float)f;
		else
			((double *)b)[i] = f;
	}
	return b;
}

static long double
getl(const void *b, TfgDtype t, int64_t i)
{
	return t == TFG_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
}

/* Row-major offset in batch shape s (right-aligned, extent 1
 * broadcast) of output batch index c[0..nb). */
static int64_t
bcast(const TfgShape *s, int nb, const int64_t *c)
{
	int64_t f = 0;
	for (int k = 0; k < s->rank; k++)
		f = f * s->dims[k] +
		    (s->dims[k] == 1 ? 0 : c[nb - s->rank + k]);
	return f;
}

static int nchecked;

/* [ba.., m, k] @ [bb.., k, n] (rank-1 b when n < 0), batch shapes
 * broadcast; runs it and compares every element. */
static void
check(TfgDtype t, TfgShape ba, TfgShape bb, int64_t m, int64_t k, int64_t n)
{
	int vec = n < 0, nb = ba.rank > bb.rank ? ba.rank : bb.rank;
	TfgShape sa = ba, sb = bb, so = {nb, {0}};
	if (vec)
		n = 1;
	for (int i = 0; i < nb; i++) {
		int ia = ba.rank - nb + i, ib = bb.rank - nb + i;
		int64_t da = ia >= 0 ? ba.dims[ia] : 1;
		int64_t db = ib >= 0 ? bb.dims[ib] : 1;
		so.dims[i] = da == 1 ? db : da;
	}
	sa.dims[sa.rank++] = m;
	sa.dims[sa.rank++] = k;
	sb.dims[sb.rank++] = k;
	if (!vec)
		sb.dims[sb.rank++] = n;
	so.dims[so.rank++] = m;
	if (!vec)
		so.dims[so.rank++] = n;

	void *x = fill(t, jh_nel(sa)), *y = fill(t, jh_nel(sb));
	JhRun r;
	jh_feed(0, x, jh_nbytes(t, sa));
	jh_feed(1, y, jh_nbytes(t, sb));
	ASSERT_EQ(jh_run(&r, prog(t, &sa, &sb, &so), 0, 0, NULL), 0);
	ASSERT_EQ(r.rc, 0);
	const void *got = jh_sent[OUT_KEY];
	long double eps = t == TFG_F32 ? 6e-8L : 1.2e-16L;
	int64_t nbat = jh_nel(so) / (m * n);
	for (int64_t bi = 0; bi < nbat; bi++) {
		int64_t c[TFG_MAX_RANK], f = bi;
		for (int q = nb - 1; q >= 0; q--) {
			c[q] = f % so.dims[q];
			f /= so.dims[q];
		}
		int64_t a0 = bcast(&ba, nb, c) * m * k;
		int64_t b0 = bcast(&bb, nb, c) * k * n;
		for (int64_t i = 0; i < m; i++)
			for (int64_t jj = 0; jj < n; jj++) {
				long double s = 0, mag = 0;
				for (int64_t q = 0; q < k; q++) {
					long double pr =
					    getl(x, t, a0 + i * k + q) *
					    getl(y, t, b0 + q * n + jj);
					s += pr;
					mag += fabsl(pr);
				}
				int64_t at = (bi * m + i) * n + jj;
				long double g = getl(got, t, at);
				nchecked++;
				if (fabsl(g - s) > 4 * (k + 1) * eps * mag)
					TEST_FAIL_("%s [%lld]: %Lg != %Lg",
						   tfg_dtype_name(t),
						   (long long)at, g, s);
			}
	}
	jh_run_done(&r);
}

static const TfgShape none = {0, {0}};

static void
t_plain(void)
{
	for (int it = 0; it < 6; it++) {
		TfgDtype t = it % 2 ? TFG_F64 : TFG_F32;
		check(t, none, none, jh_rnd(100, 300), jh_rnd(100, 300),
		      jh_rnd(100, 300));
	}
	check(TFG_F32, none, none, 520, 700, 390);
	check(TFG_F64, none, none, 390, 520, 700);
}

/* One call per batch element: b batched, a broadcast on some axes. */
static void
t_batched(void)
{
	for (int it = 0; it < 4; it++) {
		TfgDtype t = it % 2 ? TFG_F64 : TFG_F32;
		TfgShape ba = {2, {2, 3}}, bb = {1, {3}};
		check(t, ba, bb, jh_rnd(40, 120), jh_rnd(40, 120),
		      jh_rnd(40, 120));
		ba = (TfgShape){2, {3, 1}};
		bb = (TfgShape){3, {2, 1, 4}};
		check(t, ba, bb, jh_rnd(32, 64), jh_rnd(32, 64),
		      jh_rnd(32, 64));
	}
}

/* b without batch axes: the batch is folded into the rows of one call. */
static void
t_batch_rows(void)
{
	for (int it = 0; it < 4; it++) {
		TfgDtype t = it % 2 ? TFG_F64 : TFG_F32;
		TfgShape ba = {2, {2, 3}};
		check(t, ba, none, jh_rnd(8, 60), jh_rnd(100, 200),
		      jh_rnd(100, 200));
		ba = (TfgShape){1, {1}};
		check(t, ba, none, jh_rnd(100, 200), jh_rnd(100, 200), 150);
	}
}

/* A matrix times a vector: n = 1, ldb = ldc = 1. */
static void
t_vector(void)
{
	check(TFG_F32, none, none, 300, 257, -1);
	check(TFG_F64, none, none, 129, 513, -1);
	TfgShape ba = {1, {3}};
	check(TFG_F32, ba, none, 64, 200, -1);
}

/* The rule: BLAS at 64 rows, the loop with 4 rows or ints. */
static int
calls_blas(TfgDtype t, int64_t m, int64_t k, int64_t n)
{
	TfgShape sa = {2, {m, k}}, sb = {2, {k, n}}, so = {2, {m, n}};
	char *buf = jh_emit(prog(t, &sa, &sb, &so), NULL);
	if (!buf)
		return -1;
	int r = strstr(buf, "@tfg_rt_gemm(") != NULL;
	free(buf);
	return r;
}

static void
t_rule(void)
{
	ASSERT_EQ(calls_blas(TFG_F32, 64, 64, 64), 1);
	ASSERT_EQ(calls_blas(TFG_F64, 32, 32, 32), 1);
	ASSERT_EQ(calls_blas(TFG_F32, 16, 16, 16), 0);
	ASSERT_EQ(calls_blas(TFG_F32, 4, 1024, 1024), 0);
	ASSERT_EQ(calls_blas(TFG_I32, 64, 64, 64), 0);
}

/* The flushes of the part of a @ b (a m x k, b k x n, f32), run. */
static int
flushes(int64_t m, int64_t k, int64_t n)
{
	TfgShape sa = {2, {m, k}}, sb = {2, {k, n}}, so = {2, {m, n}};
	void *x = fill(TFG_F32, m * k), *y = fill(TFG_F32, k * n);
	JhRun r;
	int got;

	jh_feed(0, x, jh_nbytes(TFG_F32, sa));
	jh_feed(1, y, jh_nbytes(TFG_F32, sb));
	ASSERT_EQ(jh_run(&r, prog(TFG_F32, &sa, &sb, &so), 0, 0, NULL), 0);
	ASSERT_EQ(r.rc, 0);
	got = jh_nflush;
	jh_run_done(&r);
	return got;
}

/* Held sends leave before long work (spec/design.md "Held sends"): the
 * part calls tfg_rt_flush, with its own context, before a product of
 * TFG_LONG_WORK multiply-adds or more, and not before a smaller one. */
static void
t_flush(void)
{
	ASSERT_EQ(flushes(128, 128, 64), 1); /* 2^20 */
	ASSERT_EQ(flushes(128, 127, 64), 0);
	ASSERT_EQ(flushes(64, 64, 64), 0);
}

/* c = alpha op(a) op(b) + beta c through tfg_rt_gemm on `threads`
 * threads, against long double: trans as IrNode.trans, a stored k x m
 * when transposed, b n x k. */
static void
direct(TfgDtype t, int threads, int trans, int64_t m, int64_t n, int64_t k)
{
	int64_t lda = trans & 1 ? m : k, ldb = trans & 2 ? k : n;
	void *a = fill(t, m * k), *b = fill(t, k * n), *c = fill(t, m * n);
	void *c0 = fill(t, m * n);
	size_t sz = t == TFG_F32 ? 4 : 8;
	long double eps = t == TFG_F32 ? 6e-8L : 1.2e-16L;

	memcpy(c0, c, (size_t)(m * n) * sz);
	ASSERT_EQ(tfg_set_threads(threads), threads);
	tfg_rt_gemm(t, trans, m, n, k, -0.5, a, lda, b, ldb, 2.0, c, n);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			long double s = 0, mag = 0;
			for (int64_t q = 0; q < k; q++) {
				long double pr =
				    getl(a, t, trans & 1 ? q * lda + i
						  : i * lda + q) *
				    getl(b, t, trans & 2 ? j * ldb + q
						  : q * ldb + j);
				s += pr;
				mag += fabsl(pr);
			}
			s = -0.5L * s + 2.0L * getl(c0, t, i * n + j);
			mag = 0.5L * mag + 2.0L * fabsl(getl(c0, t, i * n + j));
			nchecked++;
			if (fabsl(getl(c, t, i * n + j) - s) >
			    4 * (k + 2) * eps * mag)
				TEST_FAIL_("%s trans %d on %d threads [%lld, "
					   "%lld]: %Lg != %Lg",
					   tfg_dtype_name(t), trans, threads,
					   (long long)i, (long long)j,
					   getl(c, t, i * n + j), s);
		}
}

/* The same bits on 1, 2 and 3 threads: OpenBLAS's sums depend on the
 * size of each call, so tfg_rt_gemm's blocks must not depend on the
 * threads (rows, columns, transposes, f64; the last one MNIST's sparse
 * left operand, runtime/gemm_sparse.c). */
static void
t_same_on_any_threads(void)
{
	static const int64_t shapes[][4] = {
		/* m    n     k   trans */
		{100, 1024, 784, 0}, {784, 100, 100, 1}, {100, 784, 512, 2},
		{301, 157, 97, 3}, {20, 700, 150, 0}, {100, 100, 784, 0},
	};

	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
		int trans = (int)shapes[i][3];
		TfgDtype t = i == 3 ? TFG_F64 : TFG_F32;
		size_t sz = t == TFG_F32 ? 4 : 8, cb = (size_t)(m * n) * sz;
		int64_t lda = trans & 1 ? m : k, ldb = trans & 2 ? k : n;
		char *a = fill(t, m * k), *b = fill(t, k * n);
		char *c[3];

		if (i == 5) /* four zeros in five, as MNIST's pixels */
			for (int64_t e = 0; e < m * k; e++)
				if (e % 5)
					((float *)a)[e] = 0;
		for (int th = 0; th < 3; th++) {
			c[th] = calloc(1, cb);
			ASSERT_EQ(tfg_set_threads(th + 1), th + 1);
			tfg_rt_gemm(t, trans, m, n, k, 1.0, a, lda, b, ldb, 0.0,
				    c[th], n);
		}
		if (memcmp(c[0], c[1], cb) != 0 || memcmp(c[0], c[2], cb) != 0)
			TEST_FAIL_("[%lld, %lld, %lld] trans %d: 1, 2 and 3 "
				   "threads differ", (long long)m, (long long)n,
				   (long long)k, trans);
		for (int th = 0; th < 3; th++)
			free(c[th]);
	}
	ASSERT_EQ(tfg_set_threads(3), 3);
}

/* Blocks of rows (m large), of columns (m too small to cut), none
 * (too little work), on 3, 2 and 1 threads; then 3 for the other tests. */
static void
t_split(void)
{
	/* the first product sizes the pool: 3 first */
	for (int threads = 3; threads >= 1; threads--)
		for (int trans = 0; trans < 4; trans++) {
			TfgDtype t = trans % 2 ? TFG_F64 : TFG_F32;
			direct(t, threads, trans, 301, 157, 97);
			direct(t, threads, trans, 20, 700, 150);
			direct(t, threads, trans, 40, 30, 20);
		}
	ASSERT_EQ(tfg_set_threads(3), 3);
}


static void
t_count(void)
{
	ASSERT(nchecked > 100000);
}

TEST_MAIN({"split", t_split}, {"plain", t_plain}, {"batched", t_batched},
	  {"batch_rows", t_batch_rows}, {"vector", t_vector},
	  {"rule", t_rule}, {"flush", t_flush}, {"split", t_split},
	  {"same_on_any_threads", t_same_on_any_threads}, {"count", t_count})
