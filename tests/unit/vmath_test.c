/*
 * tests/unit/vmath_test.c: the inline exp, log, tanh and sigmoid of
 * codegen/vmath.c, and softplus, made of exp and log in codegen/cpu.c, in
 * ulps against a more precise libm rounded to the dtype: double libm for
 * f32, long-double libm (64-bit mantissa) for f64
 * (spec/language.md §6.8 "Unary elementwise functions" states the bounds
 * checked here).
 *
 * One part per dtype (exp, log, tanh, sigmoid, softplus of one input of
 * CHUNK elements) is JIT-compiled twice, for the host CPU (FMA, AVX-512 here)
 * and for plain x86-64 (SSE2, no FMA: llvm.fmuladd splits), and fed chunk
 * after chunk of inputs by a fake tfg_rt_recv.
 *
 * f32: by default the special values, every float of the intervals where
 * the functions change method or lose accuracy (below), and every 509th
 * bit pattern of all 2^32 (odd, so every low-bit pattern occurs): about
 * 18M inputs, a few seconds.  TFG_VMATH_ALL=1 sweeps all 2^32 inputs on
 * the host build instead (several minutes; the figures of
 * §6.8 "Unary elementwise functions" come from that run).
 *
 * f64: 2^64 inputs cannot be swept, so the special values, the edges
 * where the functions change method, overflow or underflow, and random
 * doubles: uniform over each function's interesting range and random bit
 * patterns (every exponent, subnormals included), about 7M.
 *
 * t_vector checks the IR for znver4: 16 floats or 8 doubles wide, no
 * calls.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

enum { NFN = 5, CHUNK = 1 << 20 };
enum { F32, F64 };

/* The bounds, in ulps, of spec §6.8 "Unary elementwise functions", per
 * dtype. */
static const double bound[2][NFN] = {{1, 1, 2, 2, 3}, {1, 1, 1, 2, 3}};
static const char *const fname[NFN] = {"exp", "log", "tanh", "sigmoid",
					"softplus"};
static const char *const dname[2] = {"f32", "f64"};
static const OpKind fop[NFN] = {OP_exp, OP_log, OP_tanh, OP_sigmoid,
				OP_softplus};

/* ------------------------------------------------------- the part, JITed */

static float *buf32;  /* CHUNK inputs, fed to key 0 */
static double *buf64;
static int nbuf;      /* of them filled */

static void
fill_ones(int d, int from)
{
	for (int i = from; i < CHUNK; i++)
		if (d == F32)
			buf32[i] = 1.0f;
		else
			buf64[i] = 1.0;
}

/* The program: exp, log, tanh, sigmoid of one input of dtype d, sent to
 * keys 1..4 (NULL: no memory). */
static Program *
program(int d)
{
	TfgShape s = {1, {CHUNK}};
	TfgDtype t = d == F32 ? TFG_F32 : TFG_F64;
	JhPart p = {0};
	IrNode *in;
	if (!buf32 || !buf64) { /* once, freed by cleanup */
		buf32 = aligned_alloc(64, CHUNK * sizeof(float));
		buf64 = aligned_alloc(64, CHUNK * sizeof(double));
		if (!buf32 || !buf64)
			return NULL;
		fill_ones(F32, 0);
		fill_ones(F64, 0);
	}
	in = jh_input(&p, t, s, 0, d == F32 ? (void *)buf32 : (void *)buf64);
	for (int f = 0; f < NFN; f++)
		jh_snd(&p, jh_op1(&p, fop[f], t, s, in), 1 + (uint32_t)f);
	return jh_prog1(p.nodes, p.n);
}

/* The program JIT-compiled for cpu (NULL: the host). */
static int
jit(JhRun *r, int d, const char *cpu)
{
	Program *p = program(d);
	CgOptions o = {.cpu = cpu, .opt_level = 2};
	return p ? jh_jit(r, p, 0, &o) : -1;
}

/* ------------------------------------------------------------ reference */

static float
ref32(int f, float x)
{
	double d = x;
	switch (f) {
	case 0: return (float)exp(d);
	case 1: return (float)log(d);
	case 2: return (float)tanh(d);
	case 3: return (float)(1.0 / (1.0 + exp(-d)));
	default: return (float)(fmax(d, 0) + log1p(exp(-fabs(d))));
	}
}

static double
ref64(int f, double x)
{
	long double d = x;
	switch (f) {
	case 0: return (double)expl(d);
	case 1: return (double)logl(d);
	case 2: return (double)tanhl(d);
	case 3: return (double)(1.0L / (1.0L + expl(-d)));
	default: return (double)(fmaxl(d, 0) + log1pl(expl(-fabsl(d))));
	}
}

/* Distance in ulps (0 when both are NaN, huge when one is). */
static double
ulps32(float a, float b)
{
	int32_t i, j;
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) ? 0 : 1e30;
	memcpy(&i, &a, 4);
	memcpy(&j, &b, 4);
	int64_t ki = i < 0 ? -(int64_t)(i & INT32_MAX) - 1 : i;
	int64_t kj = j < 0 ? -(int64_t)(j & INT32_MAX) - 1 : j;
	return fabs((double)(ki - kj));
}

static double
ulps64(double a, double b)
{
	int64_t i, j;
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) ? 0 : 1e30;
	memcpy(&i, &a, 8);
	memcpy(&j, &b, 8);
	if (i < 0)
		i = INT64_MIN - i; /* ordered like the doubles */
	if (j < 0)
		j = INT64_MIN - j;
	/* the difference before any rounding to double */
	return (double)(i > j ? (uint64_t)i - (uint64_t)j
			      : (uint64_t)j - (uint64_t)i);
}

/* ------------------------------------------------------------- sweeping */

typedef struct Worst {
	int d;          /* F32 or F64 */
	double ulp[NFN];
	double at[NFN];
	uint64_t n;
} Worst;

/* Runs the buffered inputs through r and checks them. */
static void
flush(JhRun *r, Worst *w)
{
	if (nbuf == 0)
		return;
	fill_ones(w->d, nbuf);
	ASSERT_EQ(jh_call(r, 0), 0);
	for (int f = 0; f < NFN; f++) {
		const void *got = jh_sent[1 + f];
		for (int i = 0; i < nbuf; i++) {
			double x = w->d == F32 ? buf32[i] : buf64[i];
			double u = w->d == F32
				? ulps32(((const float *)got)[i],
					 ref32(f, buf32[i]))
				: ulps64(((const double *)got)[i],
					 ref64(f, buf64[i]));
			if (u > w->ulp[f]) {
				w->ulp[f] = u;
				w->at[f] = x;
			}
		}
	}
	w->n += (uint64_t)nbuf;
	nbuf = 0;
}

/* x (exact in the dtype) into the buffer. */
static void
push(JhRun *r, Worst *w, double x)
{
	if (w->d == F32)
		buf32[nbuf++] = (float)x;
	else
		buf64[nbuf++] = x;
	if (nbuf == CHUNK)
		flush(r, w);
}

static void
push_bits(JhRun *r, Worst *w, uint32_t u)
{
	float x;
	memcpy(&x, &u, 4);
	buf32[nbuf++] = x; /* as is: a float NaN keeps its bits */
	if (nbuf == CHUNK)
		flush(r, w);
}

/* Every step-th float in [lo, hi] (same sign, bit patterns), and its
 * negation. */
static void
push_range(JhRun *r, Worst *w, float lo, float hi, uint32_t step)
{
	uint32_t a, b;
	memcpy(&a, &lo, 4);
	memcpy(&b, &hi, 4);
	for (uint32_t u = a; u <= b; u += step) {
		push_bits(r, w, u);
		push_bits(r, w, u | 0x80000000u);
	}
}

/* level 0: the special values and every 4093rd bit pattern; 1: also
 * every float of the intervals where the functions change method or
 * lose accuracy, and every 509th bit pattern; 2: all 2^32. */
static void
sweep32(JhRun *r, Worst *w, int level)
{
	static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN,
				   1.0f, -1.0f, 0x1p-149f, 0x1p-126f, FLT_MAX,
				   88.72283f, 88.72284f, -103.97208f,
				   -87.33655f, 0.625f, 9.01f};
	for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
		push(r, w, sp[i]);
	if (level == 2) {
		for (uint64_t u = 0; u < 1ull << 32; u++)
			push_bits(r, w, (uint32_t)u);
	} else if (level == 1) {
		push_range(r, w, 0x1p-149f, 0x1p-120f, 97); /* subnormals */
		push_range(r, w, 0.6f, 0.65f, 1);     /* tanh: the switch */
		push_range(r, w, 0.70f, 0.72f, 1);    /* log: sqrt(1/2) */
		push_range(r, w, 0.98f, 1.02f, 1);    /* log near 1 */
		push_range(r, w, 1.40f, 1.43f, 1);    /* log: sqrt(2) */
		push_range(r, w, 86.0f, 89.0f, 1);    /* exp: overflow */
		push_range(r, w, 100.0f, 104.5f, 1);  /* exp: underflow */
		push_range(r, w, 0x1p-30f, 0x1p-20f, 61); /* tiny */
	}
	for (uint64_t u = 0; level < 2 && u < 1ull << 32;
	     u += level ? 509 : 4093)
		push_bits(r, w, (uint32_t)u);
	flush(r, w);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* n doubles uniform in [lo, hi], each also negated. */
static void
push_uniform(JhRun *r, Worst *w, double lo, double hi, int n)
{
	for (int i = 0; i < n; i++) {
		double x = lo + (hi - lo) * ((double)(next() >> 11) * 0x1p-53);
		push(r, w, x);
		push(r, w, -x);
	}
}

static void
sweep64(JhRun *r, Worst *w)
{
	static const double sp[] = {
	    0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0x1p-1074,
	    0x1p-1022, DBL_MAX, 709.782712893384, 709.7827128933841,
	    -708.3964185322641, -745.1332191019411, -745.1332191019412,
	    0.625, 0.6249999999999999, 1.25, 19.06, 0x1p-30, M_SQRT1_2,
	    M_SQRT2, 2.0, 0.5};
	for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
		push(r, w, sp[i]);
	push_uniform(r, w, 0, 1, 500000);        /* everything's core */
	push_uniform(r, w, 0.5, 0.7, 250000);     /* tanh: the switch */
	push_uniform(r, w, 0.70, 1.45, 500000);  /* log near 1, sqrt 2 */
	push_uniform(r, w, 1, 40, 500000);       /* tanh, sigmoid */
	push_uniform(r, w, 690, 746, 500000);    /* exp: the ends */
	push_uniform(r, w, 0x1p-60, 0x1p-20, 250000); /* tiny */
	for (int i = 0; i < 2000000; i++) {       /* any bit pattern */
		uint64_t u = next();
		double x;
		memcpy(&x, &u, 8);
		push(r, w, x);
	}
	flush(r, w);
}

static void
check(int d, const char *cpu, int level)
{
	JhRun r;
	Worst w;
	memset(&w, 0, sizeof w);
	w.d = d;
	ASSERT_EQ(jit(&r, d, cpu), 0);
	if (d == F32)
		sweep32(&r, &w, level);
	else
		sweep64(&r, &w);
	jh_run_done(&r);
	printf("%s on %s, %llu inputs:", dname[d], cpu ? cpu : "host",
	       (unsigned long long)w.n);
	for (int f = 0; f < NFN; f++)
		printf(" %s %.0f ulp (at %a)", fname[f], w.ulp[f], w.at[f]);
	printf("\n");
	for (int f = 0; f < NFN; f++)
		if (w.ulp[f] > bound[d][f])
			TEST_FAIL_("%s %s on %s: %.0f ulps at %a, bound %.0f",
				   dname[d], fname[f], cpu ? cpu : "host",
				   w.ulp[f], w.at[f], bound[d][f]);
}

static void
t_host(void)
{
	const char *all = getenv("TFG_VMATH_ALL");
	check(F32, NULL, all && *all == '1' ? 2 : 1);
	check(F64, NULL, 0);
}

static void
t_nofma(void)
{
	check(F32, "x86-64", 0);
	check(F64, "x86-64", 0);
}

/* The IEEE special cases of §6.8 "Unary elementwise functions", exactly, in
 * both dtypes. */
static void
t_special(void)
{
	static const double in[] = {-INFINITY, INFINITY, NAN, 0.0, -0.0,
				    -1.0, -0x1p-149, 200.0, -200.0, 800.0,
				    -800.0, 1.0};
	for (int d = F32; d <= F64; d++) {
		JhRun r;
		double e[12], l[12], t[12], s[12];
		ASSERT_EQ(jit(&r, d, NULL), 0);
		for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
			if (d == F32)
				buf32[i] = (float)in[i];
			else
				buf64[i] = in[i];
		ASSERT_EQ(jh_call(&r, 0), 0);
		for (int i = 0; i < 12; i++) {
			double *o[4] = {e, l, t, s};
			for (int f = 0; f < 4; f++)
				o[f][i] = d == F32
					? ((const float *)jh_sent[1 + f])[i]
					: ((const double *)jh_sent[1 + f])[i];
		}
		ASSERT(e[0] == 0.0 && e[1] == INFINITY && isnan(e[2]));
		ASSERT(e[3] == 1.0 && e[4] == 1.0 && e[9] == INFINITY);
		ASSERT(e[10] == 0.0);
		ASSERT(d == F64 || (e[7] == INFINITY && e[8] == 0.0));
		ASSERT(isnan(l[0]) && l[1] == INFINITY && isnan(l[2]));
		ASSERT(l[3] == -INFINITY && l[4] == -INFINITY && isnan(l[5]));
		ASSERT(isnan(l[6]) && l[11] == 0.0);
		ASSERT(t[0] == -1.0 && t[1] == 1.0 && isnan(t[2]));
		ASSERT(t[3] == 0.0 && !signbit(t[3]) && t[4] == 0.0 &&
		       signbit(t[4]));
		ASSERT(t[7] == 1.0 && t[8] == -1.0);
		ASSERT(s[0] == 0.0 && s[1] == 1.0 && isnan(s[2]));
		ASSERT(s[3] == 0.5 && s[4] == 0.5 && s[9] == 1.0 &&
		       s[10] == 0.0);
		jh_run_done(&r);
		fill_ones(d, 0);
	}
}

/* For AVX-512 (znver4) the loops are <16 x float> or <8 x double> and
 * call nothing but the runtime, LLVM intrinsics and the outlined kernels
 * (tfg_k<N>, codegen/cpu_nest.c). */
static void
t_vector(void)
{
	for (int d = F32; d <= F64; d++) {
		Program *p = program(d);
		char *ir;
		ASSERT(p != NULL);
		ASSERT((ir = jh_emit(p, "znver4")) != NULL);
		ASSERT(strstr(ir, d == F32 ? "<16 x float>" : "<8 x double>"));
		for (const char *c = strstr(ir, "call "); c;
		     c = strstr(c + 1, "call "))
			if (strncmp(strchr(c, '@'), "@llvm.", 6) != 0 &&
			    strncmp(strchr(c, '@'), "@tfg_rt_", 8) != 0 &&
			    strncmp(strchr(c, '@'), "@tfg_k", 6) != 0)
				TEST_FAIL_("a call in the %s IR: %.60s",
					   dname[d], c);
		free(ir);
	}
}

/* Last: frees what jit() set up (ASan checks for leaks). */
static void
cleanup(void)
{
	free(buf32);
	free(buf64);
	buf32 = NULL;
	buf64 = NULL;
	jh_cleanup();
}

TEST_MAIN_FIXTURE(NULL, cleanup, {"special", t_special},
		  {"vector", t_vector}, {"host", t_host}, {"nofma", t_nofma})
