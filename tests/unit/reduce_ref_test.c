/*
 * tests/unit/reduce_ref_test.c: the reductions of spec §6.5 "Reductions"
 * (reduce_sum reduce_mean reduce_prod reduce_max reduce_min over axis sets,
 * with and without keepdims; argmax argmin; softmax log_softmax) as generated
 * by codegen/, against a plain C reference written here.
 *
 * Each trial draws a dtype, a shape of rank 0 to 4 (sizes 0 to 6, now and
 * then one axis long enough for the vector loops), a set of reduced axes
 * and keepdims, then builds one part (the input fed by a fake
 * tfg_rt_recv, every op of the family on it, each result caught by a fake
 * tfg_rt_send), JIT-compiles and runs it.  Both kernel loop orders are
 * reached: reduced innermost axis (accumulators) and kept innermost axis
 * (rows folded into the output).  The reference shares no code with the
 * kernels: one pass over the input in C, mapping each element to its
 * output, integers in uint64 wrapped at the end, floats in long double.
 *
 * Tolerance: exact for integers, max, min, argmax, argmin (values are
 * drawn on a grid of halves so that ties happen; NaN and infinities are
 * mixed in).  Float sums and means, whose order is unspecified: |got -
 * want| <= eps * (sum of |x|) with eps 1e-5 for f32, 1e-12 for f64, and
 * NaN / inf exactly where the reference has them.  Products (factors
 * near +-1): relative (n + 1) * epsilon of the dtype for n factors, the
 * bound of n roundings (sequential in the row order).  softmax:
 * absolute 1e-6 (f32) / 1e-14 (f64) on values in [0, 1]; log_softmax:
 * 1e-5 * (1 + |want|) (f32) / 1e-12 * (1 + |want|) (f64).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define JH_SEED 0x2545F4914F6CDD1Dull
#include "tests/unit/jit_harness.h"

enum { OUT_KEY = 8 };

/* ---------------------------------------------------------- random data */

enum { D_GRID, D_WIDE, D_PROD };

/* n values of dtype t.  D_GRID: halves in [-4, 4] (ties), floats with
 * NaN, +-inf and -0.0 now and then when special; D_WIDE: integers over
 * the whole range (sums wrap), floats in [-100, 100]; D_PROD: floats
 * +-exp(u), u uniform in [-0.22, 0.22] (no drift, so long products stay
 * in range), integers in [-3, 3]. */
static void *
fill(TfgDtype t, int64_t n, int kind, int special)
{
	static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0};
	char *b = jh_alloc((size_t)(n ? n : 1) * 8);
	for (int64_t i = 0; i < n; i++) {
		double f;
		int64_t v;
		if (kind == D_GRID) {
			v = (int64_t)(jh_next() % 17) - 8;
			f = (double)v / 2;
			if (special && jh_next() % 23 == 0)
				f = sp[jh_next() % 4];
		} else if (kind == D_WIDE) {
			v = (int64_t)jh_next();
			f = (double)(jh_next() >> 11) / 9007199254740992.0 *
				200 - 100;
		} else {
			v = (int64_t)(jh_next() % 7) - 3;
			f = exp((double)(jh_next() % 1001) / 1000 * 0.44 -
				0.22) * (jh_next() % 2 ? 1 : -1);
		}
		switch (t) {
		case TFG_U8: ((uint8_t *)b)[i] = (uint8_t)v; break;
		case TFG_I32: ((int32_t *)b)[i] = (int32_t)v; break;
		case TFG_I64: ((int64_t *)b)[i] = v; break;
		case TFG_F32: ((float *)b)[i] = (float)f; break;
		default: ((double *)b)[i] = f; break;
		}
	}
	return b;
}

static int64_t
wrap(uint64_t x, TfgDtype t)
{
	if (t == TFG_U8)
		return (int64_t)(uint8_t)x;
	return t == TFG_I32 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
}

/* ------------------------------------------------------------ reference */

/* Output shape of reducing s over mask. */
static TfgShape
out_shape(TfgShape s, uint32_t mask, int keep)
{
	TfgShape o = {0};
	for (int k = 0; k < s.rank; k++)
		if (!((mask >> k) & 1))
			o.dims[o.rank++] = s.dims[k];
		else if (keep)
			o.dims[o.rank++] = 1;
	return o;
}

/* The output element input element f reduces into. */
static int64_t
out_index(TfgShape s, uint32_t mask, int64_t f, int64_t *pos)
{
	int64_t o = 0, st = 1;
	for (int k = s.rank - 1; k >= 0; k--) {
		int64_t c = f % s.dims[k];
		f /= s.dims[k];
		if ((mask >> k) & 1) {
			*pos = c; /* argmax: the one reduced axis */
			continue;
		}
		o += c * st;
		st *= s.dims[k];
	}
	return o;
}

/* One output's reference state. */
typedef struct Acc {
	uint64_t isum, iprod;
	int64_t imax, imin;
	long double fsum, fabs_sum, fprod, fmax, fmin;
	int nan, pinf, ninf;
	int64_t n;
	long double best[2]; /* argmax, argmin: value */
	int64_t arg[2];
	int has[2];
} Acc;

/* IEEE 754-2019 maximum / minimum: NaN wins, -0 < +0. */
static long double
maxmin(int is_max, long double a, long double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return (signbit(a) != 0) == is_max ? b : a;
	return (a > b) == is_max ? a : b;
}

static void
acc_add(Acc *a, TfgDtype t, const void *x, int64_t i, int64_t pos)
{
	a->n++;
	if (!jh_isf(t)) {
		int64_t v = jh_geti(x, t, i);
		a->isum += (uint64_t)v;
		a->iprod *= (uint64_t)v;
		a->imax = v > a->imax ? v : a->imax;
		a->imin = v < a->imin ? v : a->imin;
		for (int m = 0; m < 2; m++)
			if (!a->has[m] || (m == 0 ? v > a->best[m]
						  : v < a->best[m])) {
				a->best[m] = (long double)v;
				a->arg[m] = pos;
				a->has[m] = 1;
			}
		return;
	}
	long double v = jh_getf(x, t, i);
	a->nan |= isnan(v) != 0;
	a->pinf |= isinf(v) && v > 0;
	a->ninf |= isinf(v) && v < 0;
	if (isfinite(v)) {
		a->fsum += v;
		a->fabs_sum += fabsl(v);
	}
	a->fprod *= v;
	a->fmax = maxmin(1, a->fmax, v);
	a->fmin = maxmin(0, a->fmin, v);
	for (int m = 0; m < 2; m++) {
		long double b = a->best[m];
		int take = !a->has[m] ||
			   (!isnan(b) && (isnan(v) || (m == 0 ? v > b : v < b)));
		if (take) {
			a->best[m] = v;
			a->arg[m] = pos;
			a->has[m] = 1;
		}
	}
}

/* The float sum's reference value: NaN, +-inf or the finite sum. */
static long double
fsum_of(const Acc *a)
{
	if (a->nan || (a->pinf && a->ninf))
		return NAN;
	if (a->pinf || a->ninf)
		return a->pinf ? INFINITY : -INFINITY;
	return a->fsum;
}

/* ----------------------------------------------------------- comparing */

static int nchecked;

static void
check_f(OpKind op, TfgDtype t, int64_t k, long double got, long double want,
	long double tol)
{
	nchecked++;
	if (isnan(want) && isnan(got))
		return;
	if (isinf(want) && got == want)
		return;
	if (isnan(want) || isinf(want) || !(fabsl(got - want) <= tol))
		TEST_FAIL_("%s %s element %lld: got %.17Lg, want %.17Lg "
			   "(tolerance %.3Lg)", jh_opname(op),
			   tfg_dtype_name(t), (long long)k, got, want, tol);
}

static void
check_exact_f(OpKind op, TfgDtype t, int64_t k, long double got,
	      long double want)
{
	nchecked++;
	if (isnan(want) && isnan(got))
		return;
	if (got != want || signbit(got) != signbit(want))
		TEST_FAIL_("%s %s element %lld: got %.17Lg, want %.17Lg",
			   jh_opname(op), tfg_dtype_name(t), (long long)k, got,
			   want);
}

static void
check_i(OpKind op, TfgDtype t, int64_t k, int64_t got, int64_t want)
{
	nchecked++;
	if (got != want)
		TEST_FAIL_("%s %s element %lld: got %lld, want %lld",
			   jh_opname(op), tfg_dtype_name(t), (long long)k,
			   (long long)got, (long long)want);
}

/* ---------------------------------------------------------------- tests */

static const OpKind red_ops[] = {OP_reduce_sum, OP_reduce_mean,
				 OP_reduce_prod, OP_reduce_max,
				 OP_reduce_min};

/* A random shape: rank 0..4, sizes 0..6 (0 rarely), sometimes (rank <= 3)
 * one axis of 17..80 so the vector loops and their tails run. */
static TfgShape
rand_shape(void)
{
	TfgShape s = {0};
	s.rank = (int)(jh_next() % 5);
	for (int k = 0; k < s.rank; k++)
		s.dims[k] = jh_next() % 12 == 0 ? 0
						 : (int64_t)(jh_next() % 6) + 1;
	if (s.rank && s.rank < 4 && jh_next() % 3 == 0)
		s.dims[jh_next() % (uint64_t)s.rank] =
		    (int64_t)(jh_next() % 64) + 17;
	return s;
}

/* The integer reference of op over a's elements. */
static int64_t
ref_int(OpKind op, TfgDtype t, const Acc *a)
{
	int64_t sm = (int64_t)a->isum, q;
	switch (op) {
	case OP_reduce_sum: return wrap(a->isum, t);
	case OP_reduce_prod: return wrap(a->iprod, t);
	case OP_reduce_max: return a->imax;
	case OP_reduce_min: return a->imin;
	default: /* mean: floor division of the i64 sum, x / 0 = 0 */
		if (a->n == 0)
			return 0;
		q = sm / a->n;
		if (sm % a->n != 0 && sm < 0)
			q--;
		return wrap((uint64_t)q, t);
	}
}

/* A float result of op against a's reference, with the tolerances at the
 * top of the file. */
static void
check_float(OpKind op, TfgDtype t, int64_t k, long double g, const Acc *a)
{
	long double eps = t == TFG_F32 ? 1e-5L : 1e-12L;
	long double n = (long double)(a->n ? a->n : 1);
	switch (op) {
	case OP_reduce_sum:
		check_f(op, t, k, g, fsum_of(a), eps * a->fabs_sum + 1e-30L);
		break;
	case OP_reduce_mean:
		check_f(op, t, k, g, a->n ? fsum_of(a) / n : NAN,
			eps * a->fabs_sum / n + 1e-30L);
		break;
	case OP_reduce_prod:
		check_f(op, t, k, g, a->fprod, (n + 1) * (t == TFG_F32
			? FLT_EPSILON : DBL_EPSILON) * fabsl(a->fprod) + 1e-30L);
		break;
	default:
		check_exact_f(op, t, k, g, op == OP_reduce_max ? a->fmax
							       : a->fmin);
	}
}

/* Checks the reductions n[0..nred) of x (dtype t, shape s) over mask
 * (reduce_prod reads xp), and argmax/argmin in n[5], n[6] when set. */
static void
check_outputs(IrNode **n, int nred, TfgDtype t, TfgShape s, uint32_t mask,
	      const void *x, const void *xp)
{
	int64_t no = jh_nel(n[0]->shape), ni = jh_nel(s), pos = 0;
	Acc *acc = jh_alloc((size_t)(no ? no : 1) * sizeof *acc);
	Acc *accp = jh_alloc((size_t)(no ? no : 1) * sizeof *accp);
	for (int64_t o = 0; o < no; o++) {
		Acc z = {0, 1, INT64_MIN, INT64_MAX, 0, 0, 1, -INFINITY,
			 INFINITY, 0, 0, 0, 0, {0, 0}, {0, 0}, {0, 0}};
		acc[o] = accp[o] = z;
	}
	for (int64_t i = 0; i < ni; i++) {
		int64_t o = out_index(s, mask, i, &pos);
		acc_add(&acc[o], t, x, i, pos);
		acc_add(&accp[o], t, xp, i, pos);
	}
	for (int r = 0; r < nred; r++) {
		OpKind op = red_ops[r];
		const void *got = jh_sent[OUT_KEY + r];
		ASSERT(got != NULL);
		for (int64_t o = 0; o < no; o++) {
			const Acc *a = op == OP_reduce_prod ? &accp[o] : &acc[o];
			if (jh_isf(t))
				check_float(op, t, o, jh_getf(got, t, o), a);
			else
				check_i(op, t, o, jh_geti(got, t, o),
					ref_int(op, t, a));
		}
	}
	for (int m = 0; m < 2 && n[5]; m++) {
		const void *got = jh_sent[OUT_KEY + 5 + m];
		ASSERT(got != NULL);
		for (int64_t o = 0; o < no; o++)
			check_i(m ? OP_argmin : OP_argmax, t, o,
				jh_geti(got, TFG_I64, o), acc[o].arg[m]);
	}
}

/* Random dtype, shape, axes and keepdims: the five reductions (sum, mean
 * and prod only when a reduced axis is empty) and, when exactly one
 * non-empty axis is reduced, argmax and argmin. */
static void
t_reduce(void)
{
	static const TfgDtype dts[] = {TFG_U8, TFG_I32, TFG_I64, TFG_F32,
				       TFG_F64};
	for (int trial = 0; trial < 150; trial++) {
		TfgDtype t = dts[jh_next() % 5];
		TfgShape s = rand_shape();
		uint32_t all = s.rank ? (1u << s.rank) - 1 : 0;
		uint32_t mask = trial % 4 ? (uint32_t)jh_next() & all : all;
		int keep = (int)(jh_next() % 2), empty = 0, nax = 0, nred;
		JhPart p = {0};
		JhRun r;
		IrNode *n[7] = {0};
		for (int k = 0; k < s.rank; k++)
			if ((mask >> k) & 1) {
				empty |= s.dims[k] == 0;
				nax++;
			}
		nred = empty ? 3 : 5;
		void *x = fill(t, jh_nel(s), trial % 2 ? D_GRID : D_WIDE, 1);
		void *xp = fill(t, jh_nel(s), D_PROD, 0);
		IrNode *in = jh_input(&p, t, s, 0, x);
		IrNode *inp = jh_input(&p, t, s, 1, xp);
		for (int o = 0; o < nred; o++) {
			n[o] = jh_op1(&p, red_ops[o], t,
				      out_shape(s, mask, keep),
				      red_ops[o] == OP_reduce_prod ? inp : in);
			n[o]->axes = mask;
			n[o]->keepdims = keep;
			jh_snd(&p, n[o], OUT_KEY + (uint32_t)o);
		}
		for (int o = 5; nax == 1 && !empty && o < 7; o++) {
			n[o] = jh_op1(&p, o == 5 ? OP_argmax : OP_argmin,
					  TFG_I64, out_shape(s, mask, 0), in);
			n[o]->axes = mask;
			jh_snd(&p, n[o], OUT_KEY + (uint32_t)o);
		}
		ASSERT_EQ(jh_run_part(&r, &p), 0);
		check_outputs(n, nred, t, s, mask, x, xp);
		jh_run_done(&r);
	}
}

/* softmax's relative error bound for an element at d = x - m of a row of
 * K: x - m rounds (up to |d| eps / 2 relative in the exp), the exp, the
 * sum of K positive terms in lanes (K / 16 sequential additions each,
 * then a tree), 1 / s and the product; the subnormal results add at most
 * one unit of the least subnormal. */
static long double
rel_tol(TfgDtype t, long double d, int64_t K)
{
	long double eps = t == TFG_F32 ? FLT_EPSILON : DBL_EPSILON;
	return eps * (fabsl(d) + (long double)K / 8 + 32);
}

/* softmax and log_softmax of x over the last axis of s, checked in long
 * double: m = max, then exp(x - m) / sum and (x - m) - log(sum). */
static void
softmax_case(TfgDtype t, TfgShape s, void *x)
{
	JhPart p = {0};
	JhRun r;
	int64_t K = s.dims[s.rank - 1], N = jh_nel(s);
	IrNode *in = jh_input(&p, t, s, 0, x);
	IrNode *sm = jh_op1(&p, OP_softmax, t, s, in);
	IrNode *ls = jh_op1(&p, OP_log_softmax, t, s, in);
	jh_snd(&p, sm, OUT_KEY);
	jh_snd(&p, ls, OUT_KEY + 1);
	ASSERT_EQ(jh_run_part(&r, &p), 0);
	for (int64_t row = 0; K && row < N / K; row++) {
		long double m = -INFINITY, sum = 0;
		for (int64_t j = 0; j < K; j++)
			m = fmaxl(m, jh_getf(x, t, row * K + j));
		for (int64_t j = 0; j < K; j++)
			sum += expl(jh_getf(x, t, row * K + j) - m);
		for (int64_t j = 0; j < K; j++) {
			int64_t k = row * K + j;
			long double d = jh_getf(x, t, k) - m;
			long double w = d - logl(sum);
			long double want = expl(d) / sum;
			check_f(OP_softmax, t, k,
				jh_getf(jh_sent[OUT_KEY], t, k), want,
				fminl(t == TFG_F32 ? 1e-6L : 1e-14L,
				      rel_tol(t, d, K) * want +
				      (t == TFG_F32 ? FLT_TRUE_MIN
						    : DBL_TRUE_MIN)));
			check_f(OP_log_softmax, t, k,
				jh_getf(jh_sent[OUT_KEY + 1], t, k), w,
				(t == TFG_F32 ? 1e-5L : 1e-12L) *
					(1 + fabsl(w)));
		}
	}
	jh_run_done(&r);
}

/* Random shapes, then f32 rows of 16, 64 and 1024, which take the
 * explicit vector path (codegen/cpu_reduce.c body_softmax_vec), with
 * -inf and values far below the row's max (exps in the subnormals and
 * 0) in some rows. */
static void
t_softmax(void)
{
	static const int64_t widths[] = {16, 64, 1024};
	for (int trial = 0; trial < 40; trial++) {
		TfgDtype t = trial % 2 ? TFG_F32 : TFG_F64;
		TfgShape s = rand_shape();
		if (s.rank == 0)
			s.rank = 1, s.dims[0] = 5;
		softmax_case(t, s, fill(t, jh_nel(s), D_WIDE, 0));
	}
	for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
		TfgShape s = {2, {3, widths[w]}};
		float *x = fill(TFG_F32, jh_nel(s), D_WIDE, 0);
		x[1] = -INFINITY;
		x[widths[w] + 2] = -100.0f;
		x[widths[w] + 3] = -95.0f;
		x[widths[w] + 4] = 60.0f;
		softmax_case(TFG_F32, s, x);
	}
}


/* Cases the random draw may miss: a whole row of NaN or of -inf for
 * argmax, ties at the first position, i32 means that need i64. */
static void
t_edges(void)
{
	static const float fx[] = {NAN, NAN, 1.0f, -INFINITY, -INFINITY,
				   -INFINITY, 2.0f, 2.0f, NAN};
	static const int32_t ix[] = {INT32_MAX, INT32_MAX, INT32_MAX,
				     INT32_MIN, INT32_MIN, -1};
	TfgShape s3 = {2, {3, 3}}, s2 = {2, {2, 3}};
	JhPart p = {0};
	JhRun r;
	IrNode *f = jh_input(&p, TFG_F32, s3, 0, fx);
	IrNode *i = jh_input(&p, TFG_I32, s2, 1, ix);
	IrNode *am = jh_op1(&p, OP_argmax, TFG_I64, (TfgShape){1, {3}}, f);
	IrNode *an = jh_op1(&p, OP_argmin, TFG_I64, (TfgShape){1, {3}}, f);
	IrNode *mn = jh_op1(&p, OP_reduce_mean, TFG_I32, (TfgShape){1, {2}},
				i);
	am->axes = an->axes = 2;
	mn->axes = 2;
	jh_snd(&p, am, OUT_KEY);
	jh_snd(&p, an, OUT_KEY + 1);
	jh_snd(&p, mn, OUT_KEY + 2);
	ASSERT_EQ(jh_run_part(&r, &p), 0);
	const int64_t *a = jh_sent[OUT_KEY], *b = jh_sent[OUT_KEY + 1];
	const int32_t *m = jh_sent[OUT_KEY + 2];
	/* rows: [NaN NaN 1] [-inf -inf -inf] [2 2 NaN] */
	ASSERT_EQ(a[0], 0);
	ASSERT_EQ(a[1], 0);
	ASSERT_EQ(a[2], 2);
	ASSERT_EQ(b[0], 0);
	ASSERT_EQ(b[1], 0);
	ASSERT_EQ(b[2], 2);
	ASSERT_EQ(m[0], INT32_MAX);
	ASSERT_EQ(m[1], (int32_t)((2 * (int64_t)INT32_MIN - 1 - 2) / 3));
	jh_run_done(&r);
}

/* Enough elements were compared (about 19000) for the run to mean
 * something. */
static void
t_count(void)
{
	ASSERT(nchecked > 10000);
}

TEST_MAIN({"reduce", t_reduce}, {"softmax", t_softmax}, {"edges", t_edges},
	  {"count", t_count})
