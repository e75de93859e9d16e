/*
 * tests/unit/codegen_test.c: codegen/ end to end.  Programs are built by
 * hand (IrNode/IrPart in an Arena), JIT-compiled with fake tfg_rt_recv /
 * tfg_rt_send (CgOptions.rt_recv/rt_send) that serve feeds and capture
 * sends, and the results compared with plain C.  Integer semantics are
 * spec/design.md's "Language decisions": floor / and %, x/0 = x%0 = 0,
 * INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0, wrapping + - *.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

/* ------------------------------------------------------ building programs */

static IrNode *
mk(OpKind op, TfgDtype t, TfgShape s, IrNode *a, IrNode *b)
{
	IrNode *in[2] = {a, b};
	return jh_node(op, t, s, (a != NULL) + (b != NULL), in);
}

static IrNode *
input(TfgDtype t, TfgShape s, uint32_t key)
{
	IrNode *n = mk(OP_input, t, s, NULL, NULL);
	n->key = key;
	return n;
}

static IrNode *
snd(IrNode *x, uint32_t key)
{
	IrNode *n = mk(OP_send, x->dtype, x->shape, x, NULL);
	n->key = key;
	return n;
}

static IrNode *
cnst(TfgDtype t, TfgShape s, const void *data)
{
	IrNode *n = mk(OP_const, t, s, NULL, NULL);
	n->data = jh_alloc(jh_nbytes(t, s));
	memcpy(n->data, data, jh_nbytes(t, s));
	return n;
}

/* -------------------------------------------------------------- running */

static int g_opt = 2; /* opt_level of run() */

/* Signature sig of task: 0 when it ran, its status in r->rc. */
static int
run(JhRun *r, const Program *p, int task, int sig)
{
	return jh_run(r, p, task, sig, &(CgOptions){.opt_level = g_opt});
}

/* ------------------------------------------------------------ reference */

static void
put(void *b, TfgDtype t, int64_t i, double v)
{
	switch (t) {
	case TFG_BOOL: ((uint8_t *)b)[i] = v != 0; break;
	case TFG_I32: ((int32_t *)b)[i] = (int32_t)v; break;
	case TFG_I64: ((int64_t *)b)[i] = (int64_t)v; break;
	case TFG_F32: ((float *)b)[i] = (float)v; break;
	case TFG_F64: ((double *)b)[i] = v; break;
	default: break;
	}
}

static int64_t
wrap(uint64_t x, TfgDtype t)
{
	return t == TFG_I32 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
}

/* / and % are the runtime's (tfg_int_div, tfg_int_mod): the generated
 * code must agree with the folder and the session evaluator, which call
 * them; check_int_edges pins all of them to a table. */
static int64_t
ref_int(OpKind op, int64_t a, int64_t b, TfgDtype t)
{
	int bits = t == TFG_I32 ? 32 : 64;

	switch (op) {
	case OP_add: return wrap((uint64_t)a + (uint64_t)b, t);
	case OP_sub: return wrap((uint64_t)a - (uint64_t)b, t);
	case OP_mul: return wrap((uint64_t)a * (uint64_t)b, t);
	case OP_div: return tfg_int_div(a, b, bits);
	default: return tfg_int_mod(a, b, bits);
	}
}

/* In double, rounded to t at the end: exact for f32 (double rounding of
 * one + - * / is innocuous, fmod is exact). */
static double
ref_float(OpKind op, double a, double b, TfgDtype t)
{
	double r;
	switch (op) {
	case OP_add: r = a + b; break;
	case OP_sub: r = a - b; break;
	case OP_mul: r = a * b; break;
	case OP_div: r = a / b; break;
	default:
		r = fmod(a, b);
		if (r != 0) {
			if ((b < 0) != (r < 0))
				r += b;
		} else
			r = copysign(0, b);
	}
	return t == TFG_F32 ? (float)r : r;
}

/* Index into a tensor of shape in, broadcast to out, of out's flat f. */
static int64_t
bidx(TfgShape in, TfgShape out, int64_t f)
{
	int64_t c[TFG_MAX_RANK], idx = 0, st = 1;
	int lead = out.rank - in.rank;
	for (int k = out.rank - 1; k >= 0; k--) {
		c[k] = f % out.dims[k];
		f /= out.dims[k];
	}
	for (int k = in.rank - 1; k >= 0; k--) {
		idx += (in.dims[k] == 1 ? 0 : c[k + lead]) * st;
		st *= in.dims[k];
	}
	return idx;
}

static int
same(double x, double y)
{
	return x == y || (isnan(x) && isnan(y));
}

/* ------------------------------------------------------------- binaries */

static const int64_t ia[] = {-7, 7, 5, -3, 0, 9, -1, 12, 100, -100, 3};
static const int64_t ib[] = {2, -2, 0, 3, -1, 4, -5, 7, -9, 9, 3, 1, 0};
static const double fa[] = {-7.5, 7, 5.25, -3, 0, 9, -1, 12.5, 1e10, -0.1};
static const double fb[] = {2, -2, 0.5, 3, -1, 4, -5, 7.5, 3.25, 0.3, -8};

static void *
fill(TfgDtype t, TfgShape s, int which)
{
	int64_t n = jh_nel(s);
	void *b = jh_alloc((size_t)(n ? n : 1) * jh_dsize(t));
	for (int64_t i = 0; i < n; i++) {
		double v = jh_isf(t) ? (which ? fb[i % 11] : fa[i % 10])
				  : (double)(which ? ib[i % 13] : ia[i % 11]);
		put(b, t, i, v);
	}
	return b;
}

static const OpKind bin_ops[5] = {OP_add, OP_sub, OP_mul, OP_div, OP_mod};

/* All five binary ops on a of shape sa and b of shape sb, dtype t. */
static void
check_binary(TfgDtype t, TfgShape sa, TfgShape sb, TfgShape so)
{
	IrNode *nodes[12], *a = input(t, sa, 0), *b = input(t, sb, 1);
	int k = 0;
	JhRun r;
	nodes[k++] = a;
	nodes[k++] = b;
	for (int i = 0; i < 5; i++) {
		IrNode *y = mk(bin_ops[i], t, so, a, b);
		nodes[k++] = y;
		nodes[k++] = snd(y, 10 + i);
	}
	Program *p = jh_prog1(nodes, k);
	void *da = fill(t, sa, 0), *db = fill(t, sb, 1);
	jh_feed(0, da, (size_t)jh_nel(sa) * jh_dsize(t));
	jh_feed(1, db, (size_t)jh_nel(sb) * jh_dsize(t));
	ASSERT_EQ(run(&r, p, 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	ASSERT_EQ(jh_nsent, 5);
	for (int i = 0; i < 5; i++)
		for (int64_t f = 0; f < jh_nel(so); f++) {
			int64_t x = bidx(sa, so, f), y = bidx(sb, so, f);
			if (jh_isf(t)) {
				double want = ref_float(bin_ops[i],
					jh_getf(da, t, x), jh_getf(db, t, y), t);
				double got = jh_getf(jh_sent[10 + i], t, f);
				if (!same(got, want))
					TEST_FAIL_("%s op %d [%lld]: %g != %g",
						   t == TFG_F32 ? "f32" : "f64",
						   i, (long long)f, got, want);
			} else {
				int64_t want = ref_int(bin_ops[i],
					jh_geti(da, t, x), jh_geti(db, t, y), t);
				ASSERT_EQ(jh_geti(jh_sent[10 + i], t, f), want);
			}
		}
	jh_run_done(&r);
}

static void
t_binary(void)
{
	static const TfgDtype ts[] = {TFG_I32, TFG_I64, TFG_F32, TFG_F64};
	for (int i = 0; i < 4; i++) {
		TfgDtype t = ts[i];
		check_binary(t, jh_shp(2, 2, 3), jh_shp(1, 3), jh_shp(2, 2, 3));
		check_binary(t, jh_shp(2, 2, 1), jh_shp(2, 1, 3),
			     jh_shp(2, 2, 3));
		check_binary(t, jh_shp(0), jh_shp(2, 2, 3), jh_shp(2, 2, 3));
		check_binary(t, jh_shp(2, 2, 3), jh_shp(0), jh_shp(2, 2, 3));
		check_binary(t, jh_shp(0), jh_shp(0), jh_shp(0));
		check_binary(t, jh_shp(1, 1000), jh_shp(1, 1000),
			     jh_shp(1, 1000));
		check_binary(t, jh_shp(2, 37, 33), jh_shp(1, 33),
			     jh_shp(2, 37, 33));
		check_binary(t, jh_shp(3, 4, 1, 5), jh_shp(2, 3, 1),
			     jh_shp(3, 4, 3, 5));
	}
}

/* The named edge cases, one by one, in i32 and i64. */
static void
check_int_edges(TfgDtype t)
{
	int64_t min = t == TFG_I32 ? INT32_MIN : INT64_MIN;
	int64_t max = t == TFG_I32 ? INT32_MAX : INT64_MAX;
	int64_t a[] = {min, min, -7, 7, 5, 0, max, min, -7};
	int64_t b[] = {-1, 0, 2, -2, 0, 0, -1, 1, -2};
	int64_t q[] = {min, 0, -4, -4, 0, 0, -max, min, 3};
	int64_t m[] = {0, 0, 1, -1, 0, 0, 0, 0, -1};
	enum { N = 9 };
	void *da = jh_alloc(N * 8), *db = jh_alloc(N * 8);
	for (int i = 0; i < N; i++) {
		if (t == TFG_I32) {
			((int32_t *)da)[i] = (int32_t)a[i];
			((int32_t *)db)[i] = (int32_t)b[i];
		} else {
			((int64_t *)da)[i] = a[i];
			((int64_t *)db)[i] = b[i];
		}
	}
	IrNode *x = input(t, jh_shp(1, N), 0), *y = input(t, jh_shp(1, N), 1);
	IrNode *d = mk(OP_div, t, jh_shp(1, N), x, y);
	IrNode *md = mk(OP_mod, t, jh_shp(1, N), x, y);
	IrNode *ng = mk(OP_neg, t, jh_shp(1, N), x, NULL);
	IrNode *s = mk(OP_add, t, jh_shp(1, N), x, x);
	IrNode *nodes[] = {x, y, d, snd(d, 10), md, snd(md, 11), ng,
			   snd(ng, 12), s, snd(s, 13)};
	JhRun r;
	jh_feed(0, da, N * jh_dsize(t));
	jh_feed(1, db, N * jh_dsize(t));
	ASSERT_EQ(run(&r, jh_prog1(nodes, 10), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(ref_int(OP_div, a[i], b[i], t), q[i]);
		ASSERT_EQ(ref_int(OP_mod, a[i], b[i], t), m[i]);
		ASSERT_EQ(jh_geti(jh_sent[10], t, i), q[i]);
		ASSERT_EQ(jh_geti(jh_sent[11], t, i), m[i]);
		ASSERT_EQ(jh_geti(jh_sent[12], t, i), wrap(-(uint64_t)a[i], t));
		ASSERT_EQ(jh_geti(jh_sent[13], t, i),
			  wrap((uint64_t)a[i] * 2, t));
	}
	ASSERT_EQ(jh_geti(jh_sent[12], t, 0), min); /* -INT_MIN wraps */
	jh_run_done(&r);
}

static void
t_int_edges(void)
{
	check_int_edges(TFG_I32);
	check_int_edges(TFG_I64);
}

static void
t_float_edges(void)
{
	float a[] = {1, -1, 0, 5.5f, -5.5f, 6, -6}, b[] = {0, 0, 0, -2, 2, 3, 3};
	IrNode *x = input(TFG_F32, jh_shp(1, 7), 0);
	IrNode *y = input(TFG_F32, jh_shp(1, 7), 1);
	IrNode *d = mk(OP_div, TFG_F32, jh_shp(1, 7), x, y);
	IrNode *m = mk(OP_mod, TFG_F32, jh_shp(1, 7), x, y);
	IrNode *ng = mk(OP_neg, TFG_F32, jh_shp(1, 7), x, NULL);
	IrNode *nodes[] = {x, y, d, snd(d, 10), m, snd(m, 11), ng, snd(ng, 12)};
	JhRun r;
	jh_feed(0, a, sizeof a);
	jh_feed(1, b, sizeof b);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 8), 0, 0), 0);
	const float *q = jh_sent[10], *md = jh_sent[11], *n = jh_sent[12];
	ASSERT(isinf(q[0]) && q[0] > 0);
	ASSERT(isinf(q[1]) && q[1] < 0);
	ASSERT(isnan(q[2]) && isnan(md[0]));
	ASSERT_NEAR(md[3], -0.5, 0);  /* 5.5 % -2 */
	ASSERT_NEAR(md[4], 0.5, 0);   /* -5.5 % 2 */
	ASSERT(md[5] == 0 && !signbit(md[5]));
	ASSERT(md[6] == 0 && !signbit(md[6])); /* -6 % 3: +0 like NumPy */
	ASSERT(n[2] == 0 && signbit(n[2]));    /* -(0.0) = -0.0 */
	ASSERT_NEAR(n[3], -5.5, 0);
	jh_run_done(&r);
}

/* ---------------------------------------------------------- reductions */

static void
t_reduce_f32(void)
{
	float x[100];
	double sum = 0;
	for (int i = 0; i < 100; i++) {
		x[i] = i * 0.37f - 5;
		sum += x[i];
	}
	IrNode *in = input(TFG_F32, jh_shp(1, 100), 0);
	IrNode *s = mk(OP_reduce_sum, TFG_F32, jh_shp(0), in, NULL);
	IrNode *m = mk(OP_reduce_mean, TFG_F32, jh_shp(0), in, NULL);
	s->axes = m->axes = 1;
	IrNode *nodes[] = {in, s, snd(s, 10), m, snd(m, 11)};
	JhRun r;
	jh_feed(0, x, sizeof x);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 5), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	ASSERT_NEAR(*(const float *)jh_sent[10], sum, 1e-3);
	ASSERT_NEAR(*(const float *)jh_sent[11], sum / 100, 1e-5);
	jh_run_done(&r);
}

static void
t_reduce_i32(void)
{
	int32_t x[100];
	int64_t sum = 0;
	for (int i = 0; i < 100; i++) {
		x[i] = (i * 37) % 23 - 13;
		sum += x[i];
	}
	x[0] -= (int32_t)(sum % 100 == 0 ? 1 : 0); /* mean not exact */
	sum = 0;
	for (int i = 0; i < 100; i++)
		sum += x[i];
	IrNode *in = input(TFG_I32, jh_shp(1, 100), 0);
	IrNode *s = mk(OP_reduce_sum, TFG_I32, jh_shp(0), in, NULL);
	IrNode *m = mk(OP_reduce_mean, TFG_I32, jh_shp(0), in, NULL);
	IrNode *mf = mk(OP_reduce_mean, TFG_F64, jh_shp(0), in, NULL);
	s->axes = m->axes = mf->axes = 1;
	IrNode *nodes[] = {in, s, snd(s, 10), m, snd(m, 11), mf, snd(mf, 12)};
	JhRun r;
	jh_feed(0, x, sizeof x);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 7), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	ASSERT_EQ(*(const int32_t *)jh_sent[10], sum);
	ASSERT(sum < 0 && sum % 100 != 0); /* exercises floor */
	ASSERT_EQ(*(const int32_t *)jh_sent[11], ref_int(OP_div, sum, 100,
						       TFG_I64));
	/* i32 -> f64 mean: NumPy's, no flooring */
	ASSERT_NEAR(*(const double *)jh_sent[12], sum / 100.0, 1e-12);
	jh_run_done(&r);
}

/* Partial axes: [3,4,5] summed over axis 1 (keepdims), over axes 0 and 2,
 * and a mean over axis 0 in f64. */
static void
t_reduce_axes(void)
{
	double x[60], want1[15] = {0}, want02[4] = {0}, want0[20] = {0};
	for (int i = 0; i < 60; i++) {
		int a = i / 20, b = i / 5 % 4, c = i % 5;
		x[i] = i * 1.5 - 20;
		want1[a * 5 + c] += x[i];
		want02[b] += x[i];
		want0[b * 5 + c] += x[i] / 3;
	}
	IrNode *in = input(TFG_F64, jh_shp(3, 3, 4, 5), 0);
	IrNode *s1 = mk(OP_reduce_sum, TFG_F64, jh_shp(3, 3, 1, 5), in, NULL);
	IrNode *s02 = mk(OP_reduce_sum, TFG_F64, jh_shp(1, 4), in, NULL);
	IrNode *m0 = mk(OP_reduce_mean, TFG_F64, jh_shp(2, 4, 5), in, NULL);
	s1->axes = 2;
	s1->keepdims = 1;
	s02->axes = 5;
	m0->axes = 1;
	IrNode *nodes[] = {in, s1, snd(s1, 10), s02, snd(s02, 11), m0,
			   snd(m0, 12)};
	JhRun r;
	jh_feed(0, x, sizeof x);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 7), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	for (int i = 0; i < 15; i++)
		ASSERT_NEAR(((const double *)jh_sent[10])[i], want1[i], 1e-9);
	for (int i = 0; i < 4; i++)
		ASSERT_NEAR(((const double *)jh_sent[11])[i], want02[i], 1e-9);
	for (int i = 0; i < 20; i++)
		ASSERT_NEAR(((const double *)jh_sent[12])[i], want0[i], 1e-9);
	jh_run_done(&r);
}

/* --------------------------------------------------------------- slices */

static IrNode *
slice(IrNode *x, TfgShape out, const int *begin, const int *size,
      uint32_t squeeze)
{
	IrNode *n = mk(OP_slice, x->dtype, out, x, NULL);
	IrAxes *ax = jh_axes(n);
	for (int k = 0; k < x->shape.rank; k++) {
		ax->begin[k] = begin[k];
		ax->size[k] = size[k];
	}
	ax->squeeze = squeeze;
	return n;
}

static void
t_slice(void)
{
	int32_t x[24];
	for (int i = 0; i < 24; i++)
		x[i] = i;
	IrNode *in = input(TFG_I32, jh_shp(2, 4, 6), 0);
	/* x[1:3, 2:5] */
	IrNode *a = slice(in, jh_shp(2, 2, 3), (int[]){1, 2}, (int[]){2, 3}, 0);
	/* x[2] */
	IrNode *b = slice(in, jh_shp(1, 6), (int[]){2, 0}, (int[]){1, 6}, 1);
	/* x[:, 4] */
	IrNode *c = slice(in, jh_shp(1, 4), (int[]){0, 4}, (int[]){4, 1}, 2);
	/* x[3, 5] */
	IrNode *d = slice(in, jh_shp(0), (int[]){3, 5}, (int[]){1, 1}, 3);
	IrNode *nodes[] = {in, a, snd(a, 10), b, snd(b, 11), c, snd(c, 12),
			   d, snd(d, 13)};
	JhRun r;
	jh_feed(0, x, sizeof x);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 9), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	const int32_t *pa = jh_sent[10], *pb = jh_sent[11], *pc = jh_sent[12];
	static const int32_t wa[] = {8, 9, 10, 14, 15, 16};
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(pa[i], wa[i]);
		ASSERT_EQ(pb[i], 12 + i);
	}
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(pc[i], i * 6 + 4);
	ASSERT_EQ(*(const int32_t *)jh_sent[13], 23);
	jh_run_done(&r);
}

/* ------------------------------------------------- chains, consts, errors */

/* y = (a + b) * c; r = reduce_sum(y); both fetched. */
static void
t_chain(void)
{
	enum { N = 300 };
	float a[N], b[N], c[N];
	double want = 0;
	for (int i = 0; i < N; i++) {
		a[i] = i * 0.5f;
		b[i] = 1 - i * 0.25f;
		c[i] = (i % 7) - 3;
	}
	IrNode *x = input(TFG_F32, jh_shp(1, N), 0);
	IrNode *y = input(TFG_F32, jh_shp(1, N), 1);
	IrNode *z = input(TFG_F32, jh_shp(1, N), 2);
	IrNode *t = mk(OP_add, TFG_F32, jh_shp(1, N), x, y);
	IrNode *u = mk(OP_mul, TFG_F32, jh_shp(1, N), t, z);
	IrNode *s = mk(OP_reduce_sum, TFG_F32, jh_shp(0), u, NULL);
	s->axes = 1;
	IrNode *nodes[] = {x, y, z, t, u, snd(u, 10), s, snd(s, 11)};
	JhRun r;
	jh_feed(0, a, sizeof a);
	jh_feed(1, b, sizeof b);
	jh_feed(2, c, sizeof c);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 8), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	ASSERT_EQ(jh_nrecv, 3);
	ASSERT_EQ(jh_nsent, 2);
	for (int i = 0; i < N; i++) {
		float v = (a[i] + b[i]) * c[i];
		ASSERT_NEAR(((const float *)jh_sent[10])[i], v, 0);
		want += v;
	}
	ASSERT_NEAR(*(const float *)jh_sent[11], want, 1e-2);
	jh_run_done(&r);
}

static void
t_const(void)
{
	static const int32_t k[3] = {1, 2, -3};
	int32_t x[2][3] = {{10, 20, 30}, {-1, -2, -3}};
	IrNode *c = cnst(TFG_I32, jh_shp(1, 3), k);
	IrNode *in = input(TFG_I32, jh_shp(2, 2, 3), 0);
	IrNode *s = mk(OP_add, TFG_I32, jh_shp(2, 2, 3), in, c);
	IrNode *nodes[] = {c, snd(c, 10), in, s, snd(s, 11)};
	JhRun r;
	jh_feed(0, x, sizeof x);
	ASSERT_EQ(run(&r, jh_prog1(nodes, 5), 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	const int32_t *pc = jh_sent[10], *ps = jh_sent[11];
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(pc[i], k[i]);
		ASSERT_EQ(ps[i], x[0][i] + k[i]);
		ASSERT_EQ(ps[3 + i], x[1][i] + k[i]);
	}
	jh_run_done(&r);
}

/* A failing recv: its status comes back and nothing after it runs. */
static void
t_recv_fails(void)
{
	float v[4] = {1, 2, 3, 4};
	IrNode *a = input(TFG_F32, jh_shp(1, 4), 0);
	IrNode *b = input(TFG_F32, jh_shp(1, 4), 1);
	IrNode *s = mk(OP_add, TFG_F32, jh_shp(1, 4), a, b);
	IrNode *nodes[] = {a, snd(a, 10), b, s, snd(s, 11)};
	JhRun r;
	jh_feed(0, v, sizeof v);
	jh_feed(1, v, sizeof v);
	Program *p = jh_prog1(nodes, 5);
	CgOptions o = {.opt_level = 2};
	ASSERT_EQ(cg_jit(&r.j, p, 0, &o, r.parts, NULL), 0); /* warm up */
	cg_jit_free(r.j);
	ASSERT_EQ(run(&r, p, 0, 0), 0);
	ASSERT_EQ(r.rc, 0);
	jh_run_done(&r);
	/* jh_jit resets the fakes: set the failing key after it */
	ASSERT_EQ(jh_jit(&r, p, 0, NULL), 0);
	jh_fail_key = 1;
	ASSERT_EQ(jh_call(&r, 0), JH_FAIL_STATUS);
	ASSERT_EQ(jh_nsent, 1); /* a's send ran, s's did not */
	ASSERT_EQ(jh_nrecv, 2);
	jh_run_done(&r);
}

/* Held sends leave before long work (spec/design.md "Held sends"): a
 * loop split over the pool follows the part's tfg_rt_flush, with its
 * context; a loop too short to split does not. */
static int
pool_flushes(int64_t n)
{
	float *v = jh_alloc((size_t)n * sizeof *v);
	IrNode *a = input(TFG_F32, jh_shp(1, n), 0);
	IrNode *s = mk(OP_add, TFG_F32, jh_shp(1, n), a, a);
	IrNode *nodes[] = {a, s, snd(s, 1)};
	JhRun r;
	int got;

	for (int64_t i = 0; i < n; i++)
		v[i] = (float)i;
	jh_feed(0, v, (size_t)n * sizeof *v);
	ASSERT_EQ(jh_run(&r, jh_prog1(nodes, 3), 0, 0, NULL), 0);
	ASSERT_EQ(r.rc, 0);
	ASSERT_EQ(((float *)jh_sent[1])[n - 1], 2.0f * (float)(n - 1));
	got = jh_nflush;
	jh_run_done(&r);
	return got;
}

static void
t_flush(void)
{
	ASSERT_EQ(pool_flushes(1 << 20), 1);
	ASSERT_EQ(pool_flushes(1 << 10), 0);
}

/* Two signatures, two tasks: each task gets only its own parts. */
static void
t_multi(void)
{
	int32_t v[2] = {5, -6};
	Program *p = jh_prog(3, 2);
	IrNode *a = input(TFG_I32, jh_shp(1, 2), 0);
	IrNode *n0 = mk(OP_neg, TFG_I32, jh_shp(1, 2), a, NULL);
	IrNode *l0[] = {a, n0, snd(n0, 10)};
	IrNode *b = input(TFG_I32, jh_shp(1, 2), 1);
	IrNode *n1 = mk(OP_mul, TFG_I32, jh_shp(1, 2), b, b);
	IrNode *l1[] = {b, n1, snd(n1, 11)};
	jh_part_set(p, 0, 1, l0, 3);
	jh_part_set(p, 2, 1, l1, 3);
	jh_part_set(p, 1, 0, l1, 3);
	JhRun r;
	jh_feed(1, v, sizeof v);
	ASSERT_EQ(run(&r, p, 1, 2), 0);
	ASSERT(r.parts[0].fn != NULL);
	ASSERT(r.parts[1].fn == NULL);
	ASSERT_EQ(r.parts[1].arena_size, 0);
	ASSERT(r.parts[2].arena_size >= 64 + 8);
	ASSERT_EQ(r.rc, 0);
	ASSERT_EQ(((const int32_t *)jh_sent[11])[1], 36);
	jh_run_done(&r);
}

/* ------------------------------------------------------- emit and timing */

static Program *
big_add(void)
{
	IrNode *a = input(TFG_F32, jh_shp(1, 4096), 0);
	IrNode *b = input(TFG_F32, jh_shp(1, 4096), 1);
	IrNode *s = mk(OP_add, TFG_F32, jh_shp(1, 4096), a, b);
	IrNode *nodes[] = {a, b, s, snd(s, 10)};
	return jh_prog1(nodes, 4);
}

static void
t_emit(void)
{
	char *s = jh_emit(big_add(), "x86-64-v3");
	ASSERT(s != NULL);
	ASSERT(strstr(s, "define i32 @tfg_part_0(") != NULL);
	ASSERT(strstr(s, "target triple = \"x86_64-unknown-linux-gnu\""));
	ASSERT(strstr(s, "\"target-cpu\"=\"x86-64-v3\""));
	ASSERT(strstr(s, "<8 x float>") != NULL); /* AVX2 */
	ASSERT(strstr(s, "<16 x float>") == NULL);
	free(s);
	s = jh_emit(big_add(), "znver4");
	ASSERT(s != NULL);
	ASSERT(strstr(s, "<16 x float>") != NULL);
	free(s);
}

/* Every sdiv/srem in s has a divisor made by a select (the guard). */
static void
check_guarded(const char *s, const char *insn)
{
	for (const char *p = strstr(s, insn); p; p = strstr(p + 1, insn)) {
		/* "sdiv i32 %x, %d" */
		const char *comma = strchr(p, ',');
		char name[64] = "", def[80];
		ASSERT(comma && sscanf(comma + 2, "%63[%0-9a-z._]", name) == 1);
		snprintf(def, sizeof def, "%s = select", name);
		if (!strstr(s, def))
			TEST_FAIL_("%s divisor %s is not guarded", insn, name);
	}
}

/* Integer / and % are guarded in the optimised module: no trap. */
static void
t_emit_no_trap(void)
{
	for (int t = TFG_I32; t <= TFG_I64; t++) {
		IrNode *a = input(t, jh_shp(1, 64), 0);
		IrNode *b = input(t, jh_shp(1, 64), 1);
		IrNode *d = mk(OP_div, t, jh_shp(1, 64), a, b);
		IrNode *m = mk(OP_mod, t, jh_shp(1, 64), a, b);
		IrNode *nodes[] = {a, b, d, snd(d, 10), m, snd(m, 11)};
		char *s = jh_emit(jh_prog1(nodes, 6), "x86-64-v3");
		ASSERT(s != NULL);
		ASSERT(strstr(s, "sdiv ") || strstr(s, "srem "));
		check_guarded(s, "sdiv ");
		check_guarded(s, "srem ");
		free(s);
	}
}

/* The same results at -O0, -O1 and -O3. */
static void
t_opt_levels(void)
{
	for (g_opt = 0; g_opt <= 3; g_opt += g_opt == 1 ? 2 : 1) {
		check_int_edges(TFG_I32);
		check_binary(TFG_F32, jh_shp(2, 2, 3), jh_shp(1, 3),
			     jh_shp(2, 2, 3));
		check_binary(TFG_I64, jh_shp(2, 2, 1), jh_shp(2, 1, 3),
			     jh_shp(2, 2, 3));
		t_reduce_i32();
		t_reduce_axes();
		t_slice();
		t_chain();
	}
	g_opt = 2;
}

static void
t_jit_time(void)
{
	IrNode *a = input(TFG_F32, jh_shp(2, 2, 3), 0);
	IrNode *b = input(TFG_F32, jh_shp(1, 3), 1);
	IrNode *s = mk(OP_add, TFG_F32, jh_shp(2, 2, 3), a, b);
	IrNode *nodes[] = {a, b, s, snd(s, 10)};
	Program *p = jh_prog1(nodes, 4);
	RtPart parts[1];
	CgJit *j;
	double ms[3];
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(cg_jit(&j, p, 0, NULL, parts, &ms[i]), 0);
		ASSERT(parts[0].fn != NULL);
		cg_jit_free(j);
	}
	/* the times are make bench's business: shown, not asserted */
	printf("jit: small module %.1f ms (first), %.1f, %.1f ms\n", ms[0],
	       ms[1], ms[2]);
}

static void
t_errors(void)
{
	RtPart parts[1];
	CgJit *j = (CgJit *)1;
	Program *p = jh_prog(1, 1);
	/* task out of range */
	ASSERT(cg_jit(&j, p, 3, NULL, parts, NULL) != 0);
	ASSERT(j == NULL);
	/* an input used before it is computed */
	IrNode *a = input(TFG_I32, jh_shp(1, 2), 0);
	IrNode *n = mk(OP_neg, TFG_I32, jh_shp(1, 2), a, NULL);
	IrNode *nodes[] = {n, a};
	jh_part_set(p, 0, 0, nodes, 2);
	ASSERT(cg_jit(&j, p, 0, NULL, parts, NULL) != 0);
	ASSERT(parts[0].fn == NULL);
}

TEST_MAIN({"binary", t_binary},
	  {"int_edges", t_int_edges}, {"float_edges", t_float_edges},
	  {"reduce_f32", t_reduce_f32}, {"reduce_i32", t_reduce_i32},
	  {"reduce_axes", t_reduce_axes}, {"slice", t_slice},
	  {"chain", t_chain}, {"const", t_const},
	  {"recv_fails", t_recv_fails}, {"flush", t_flush},
	  {"multi", t_multi},
	  {"emit", t_emit}, {"emit_no_trap", t_emit_no_trap},
	  {"opt_levels", t_opt_levels},
	  {"jit_time", t_jit_time}, {"errors", t_errors})
