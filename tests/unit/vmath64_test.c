/*
 * tests/unit/vmath64_test.c: the inline f64 exp, log, tanh and sigmoid of
 * codegen/vmath.c against long-double libm (64-bit mantissa) rounded to
 * double, in ulps (spec/language.md §6.8 states the bounds checked here).
 *
 * 2^64 inputs cannot be swept, so the inputs are the special values, the
 * edges where the functions change method, overflow or underflow, and
 * random doubles: uniform over each function's interesting range and
 * random bit patterns (every exponent, subnormals included), about 7M
 * in all.  As for f32, the part is JIT-compiled for the host CPU (FMA)
 * and for plain x86-64 (no FMA); t_vector checks the IR for znver4:
 * 8-wide vectors and no calls.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

enum { NFN = 4, CHUNK = 1 << 20 };

/* The bounds, in ulps, of spec §6.8. */
static const double bound[NFN] = {1, 1, 1, 2};
static const char *const fname[NFN] = {"exp", "log", "tanh", "sigmoid"};
static const OpKind fop[NFN] = {OP_exp, OP_log, OP_tanh, OP_sigmoid};

static double *buf; /* CHUNK inputs, fed to key 0 */
static int nbuf;

static Program *
program(void)
{
	TfgShape s = {1, {CHUNK}};
	JhPart p = {0};
	IrNode *in;
	if (!buf) { /* once, freed by t_free */
		buf = aligned_alloc(64, CHUNK * sizeof(double));
		if (!buf)
			return NULL;
		for (int i = 0; i < CHUNK; i++)
			buf[i] = 1.0;
	}
	in = jh_input(&p, TFG_F64, s, 0, buf);
	for (int f = 0; f < NFN; f++)
		jh_snd(&p, jh_op1(&p, fop[f], TFG_F64, s, in), 1 + (uint32_t)f);
	return jh_prog1(p.nodes, p.n);
}

static int
jit(JhRun *r, const char *cpu)
{
	Program *p = program();
	CgOptions o = {cpu, 2, NULL, NULL};
	return p ? jh_jit(r, p, 0, &o) : -1;
}

/* ------------------------------------------------------------ reference */

static double
ref(int f, double x)
{
	long double d = x;
	switch (f) {
	case 0: return (double)expl(d);
	case 1: return (double)logl(d);
	case 2: return (double)tanhl(d);
	default: return (double)(1.0L / (1.0L + expl(-d)));
	}
}

/* Distance in ulps (0 when both are NaN, huge when one is). */
static double
ulps(double a, double b)
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
	double ulp[NFN];
	double at[NFN];
	uint64_t n;
} Worst;

static void
flush(JhRun *r, Worst *w)
{
	if (nbuf == 0)
		return;
	for (int i = nbuf; i < CHUNK; i++)
		buf[i] = 1.0;
	ASSERT_EQ(jh_call(r, 0), 0);
	for (int f = 0; f < NFN; f++) {
		const double *got = jh_sent[1 + f];
		for (int i = 0; i < nbuf; i++) {
			double u = ulps(got[i], ref(f, buf[i]));
			if (u > w->ulp[f]) {
				w->ulp[f] = u;
				w->at[f] = buf[i];
			}
		}
	}
	w->n += (uint64_t)nbuf;
	nbuf = 0;
}

static void
push(JhRun *r, Worst *w, double x)
{
	buf[nbuf++] = x;
	if (nbuf == CHUNK)
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
sweep(JhRun *r, Worst *w)
{
	static const double sp[] = {
	    0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0x1p-1074,
	    0x1p-1022, DBL_MAX, 709.782712893384, 709.7827128933841,
	    -708.3964185322641, -745.1332191019411, -745.1332191019412,
	    0.625, 0.6249999999999999, 1.25, 19.06, 0x1p-30, M_SQRT1_2,
	    M_SQRT2, 2.0, 0.5};
	memset(w, 0, sizeof *w);
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
check(const char *cpu)
{
	JhRun r;
	Worst w;
	ASSERT_EQ(jit(&r, cpu), 0);
	sweep(&r, &w);
	jh_run_done(&r);
	printf("%s, %llu inputs:", cpu ? cpu : "host",
	       (unsigned long long)w.n);
	for (int f = 0; f < NFN; f++)
		printf(" %s %.0f ulp (at %a)", fname[f], w.ulp[f], w.at[f]);
	printf("\n");
	for (int f = 0; f < NFN; f++)
		if (w.ulp[f] > bound[f])
			TEST_FAIL_("%s on %s: %.0f ulps at %a, bound %.0f",
				   fname[f], cpu ? cpu : "host", w.ulp[f],
				   w.at[f], bound[f]);
}

static void
t_host(void)
{
	check(NULL);
}

static void
t_nofma(void)
{
	check("x86-64");
}

/* Exact answers: e^0 = 1, log 1 = 0, the ends and the special values. */
static void
t_special(void)
{
	JhRun r;
	ASSERT_EQ(jit(&r, NULL), 0);
	static const double in[] = {0.0, 1.0, INFINITY, -INFINITY, -1.0,
				    -0.0, 800.0, -800.0};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
		buf[i] = in[i];
	ASSERT_EQ(jh_call(&r, 0), 0);
	const double *e = jh_sent[1], *l = jh_sent[2], *t = jh_sent[3],
		     *s = jh_sent[4];
	ASSERT(e[0] == 1.0 && l[1] == 0.0 && e[2] == INFINITY && e[3] == 0.0);
	ASSERT(l[2] == INFINITY && isnan(l[4]) && l[0] == -INFINITY &&
	       l[5] == -INFINITY);
	ASSERT(t[2] == 1.0 && t[3] == -1.0 && t[0] == 0.0 && signbit(t[5]));
	ASSERT(s[2] == 1.0 && s[3] == 0.0 && s[0] == 0.5 && s[6] == 1.0 &&
	       s[7] == 0.0);
	ASSERT(e[6] == INFINITY && e[7] == 0.0);
	jh_run_done(&r);
}

/* The loop is vectorised: 8 doubles wide on znver4, no calls. */
static void
t_vector(void)
{
	Program *p = program();
	char *ir;
	ASSERT(p != NULL);
	ASSERT((ir = jh_emit(p, "znver4")) != NULL);
	ASSERT(strstr(ir, "<8 x double>") != NULL);
	for (const char *c = strstr(ir, "call "); c; c = strstr(c + 1, "call "))
		if (strncmp(strchr(c, '@'), "@llvm.", 6) != 0 &&
		    strncmp(strchr(c, '@'), "@tfg_rt_", 8) != 0 &&
		    strncmp(strchr(c, '@'), "@tfg_k", 6) != 0)
			TEST_FAIL_("a call in the IR: %.60s", c);
	free(ir);
}

static void
t_free(void)
{
	free(buf);
	buf = NULL;
	jh_cleanup();
}

TEST_MAIN({"special", t_special}, {"vector", t_vector}, {"host", t_host},
	  {"nofma", t_nofma}, {"free", t_free})
