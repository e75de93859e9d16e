/*
 * tests/unit/blas_test.c: large f32/f64 matmuls, which codegen/cpu_shape.c
 * hands to cblas_sgemm/cblas_dgemm (spec §6.18: m * n * k >= 32^3 and
 * m >= 8), against a plain C reference written here.
 *
 * Shapes are random, 100..300 per axis and a few larger, plain, batched
 * (one call per batch element), with broadcast batch axes (base pointers
 * at stride 0), the batch folded into rows (b without batch axes), and a
 * vector on the right (n = 1).  Each part is JIT-compiled, so the cblas
 * symbols resolve as in tfgc (codegen/jit.c).
 *
 * Tolerance: BLAS sums in its own order and blocks, so within
 * 4 (k + 1) eps of the sum of |a b| (eps of the dtype; the reference sums
 * in long double).  A check on the optimised IR shows the rule picks
 * BLAS for these shapes and the loop for few rows.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "codegen/codegen.h"
#include "tests/unit/test.h"

enum { NKEY = 4, OUT_KEY = 3 };

static const void *feed_data[NKEY];
static size_t feed_size[NKEY];
static const void *sent[NKEY];
static struct RtCtx *const the_ctx = (struct RtCtx *)&feed_data;

static int
fake_recv(struct RtCtx *ctx, uint32_t key, void *dst)
{
	if (ctx != the_ctx || key >= NKEY || !feed_data[key])
		return 99;
	memcpy(dst, feed_data[key], feed_size[key]);
	return 0;
}

static int
fake_send(struct RtCtx *ctx, uint32_t key, const void *src)
{
	if (ctx != the_ctx || key >= NKEY)
		return 99;
	sent[key] = src;
	return 0;
}

static Arena *A;

static void *
aa(size_t n)
{
	if (!A)
		A = arena_new();
	return arena_alloc(A, n);
}

static int64_t
nel(const TfgShape *s)
{
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

static int ids;

static IrNode *
mk(OpKind op, TfgDtype t, TfgShape s, int nin, IrNode **in, uint32_t key)
{
	IrNode *n = aa(sizeof *n);
	n->id = ids++;
	n->op = op;
	n->dtype = t;
	n->shape = s;
	n->nin = nin;
	n->key = key;
	n->in = aa((size_t)(nin + 1) * sizeof *n->in);
	for (int i = 0; i < nin; i++)
		n->in[i] = in[i];
	n->name = arena_printf(A, "n%d", n->id);
	n->dev = (Device){"local", 0, DEV_CPU, 0};
	return n;
}

/* recv a (key 0), recv b (key 1), c = a @ b, send c (OUT_KEY). */
static Program *
prog(TfgDtype t, const TfgShape *sa, const TfgShape *sb, const TfgShape *so)
{
	Program *p = aa(sizeof *p);
	IrPart *ip = aa(sizeof *ip);
	IrNode *in[2];
	ip->n = 4;
	ip->nodes = aa(4 * sizeof *ip->nodes);
	ip->nodes[0] = in[0] = mk(OP_input, t, *sa, 0, NULL, 0);
	ip->nodes[1] = in[1] = mk(OP_input, t, *sb, 0, NULL, 1);
	ip->nodes[2] = mk(OP_matmul, t, *so, 2, in, 0);
	ip->nodes[3] = mk(OP_send, t, *so, 1, &ip->nodes[2], OUT_KEY);
	ip->sends = 1;
	p->arena = A;
	p->ntask = 1;
	p->tasks = aa(sizeof *p->tasks);
	p->nsig = 1;
	p->sigs = aa(sizeof *p->sigs);
	p->sigs[0].parts = ip;
	return p;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int
rnd(int lo, int hi) /* [lo, hi] */
{
	return lo + (int)(next() % (uint64_t)(hi - lo + 1));
}

static void *
fill(TfgDtype t, int64_t n)
{
	char *b = aa((size_t)n * 8);
	for (int64_t i = 0; i < n; i++) {
		double f = (double)(int64_t)(next() % 2000001 - 1000000) / 1e6;
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

	void *x = fill(t, nel(&sa)), *y = fill(t, nel(&sb));
	feed_data[0] = x;
	feed_size[0] = (size_t)nel(&sa) * (t == TFG_F32 ? 4 : 8);
	feed_data[1] = y;
	feed_size[1] = (size_t)nel(&sb) * (t == TFG_F32 ? 4 : 8);
	Program *p = prog(t, &sa, &sb, &so);
	CgOptions o = {NULL, 2, fake_recv, fake_send};
	RtPart part[1];
	CgJit *j;
	ASSERT_EQ(cg_jit(&j, p, 0, &o, part, NULL), 0);
	char *arena = aligned_alloc(64, (part[0].arena_size + 127) &
					    ~(size_t)63);
	ASSERT_EQ(part[0].fn(the_ctx, arena), 0);
	const void *got = sent[OUT_KEY];
	long double eps = t == TFG_F32 ? 6e-8L : 1.2e-16L;
	int64_t nbat = nel(&so) / (m * n);
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
	free(arena);
	cg_jit_free(j);
}

static const TfgShape none = {0, {0}};

static void
t_plain(void)
{
	for (int it = 0; it < 6; it++) {
		TfgDtype t = it % 2 ? TFG_F64 : TFG_F32;
		check(t, none, none, rnd(100, 300), rnd(100, 300),
		      rnd(100, 300));
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
		check(t, ba, bb, rnd(40, 120), rnd(40, 120), rnd(40, 120));
		ba = (TfgShape){2, {3, 1}};
		bb = (TfgShape){3, {2, 1, 4}};
		check(t, ba, bb, rnd(32, 64), rnd(32, 64), rnd(32, 64));
	}
}

/* b without batch axes: the batch is folded into the rows of one call. */
static void
t_batch_rows(void)
{
	for (int it = 0; it < 4; it++) {
		TfgDtype t = it % 2 ? TFG_F64 : TFG_F32;
		TfgShape ba = {2, {2, 3}};
		check(t, ba, none, rnd(8, 60), rnd(100, 200), rnd(100, 200));
		ba = (TfgShape){1, {1}};
		check(t, ba, none, rnd(100, 200), rnd(100, 200), 150);
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
	CgOptions o = {NULL, 2, fake_recv, fake_send};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f || cg_emit_llvm(f, prog(t, &sa, &sb, &so), 0, &o) != 0)
		return -1;
	fclose(f);
	int r = strstr(buf, "@cblas_sgemm(") != NULL ||
		strstr(buf, "@cblas_dgemm(") != NULL;
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

static void
t_count(void)
{
	ASSERT(nchecked > 100000);
}

TEST_MAIN({"plain", t_plain}, {"batched", t_batched},
	  {"batch_rows", t_batch_rows}, {"vector", t_vector},
	  {"rule", t_rule}, {"count", t_count})
