/*
 * tests/unit/vmath_test.c: the inline f32 exp, log, tanh and sigmoid of
 * codegen/vmath.c against double-precision libm rounded to f32, in ulps
 * (spec/language.md §6.8 states the bounds checked here).
 *
 * One part (exp, log, tanh, sigmoid of one f32 input of CHUNK elements)
 * is JIT-compiled twice, for the host CPU (FMA, AVX-512 here) and for
 * plain x86-64 (SSE2, no FMA: llvm.fmuladd splits), and fed chunk after
 * chunk of inputs by a fake tfg_rt_recv.  By default the inputs are the
 * special values, every float of the intervals where the functions
 * change method or lose accuracy (below), and every 509th bit pattern of
 * all 2^32 (odd, so every low-bit pattern occurs): about 18M inputs, a
 * few seconds.  TFG_VMATH_ALL=1 sweeps all 2^32 inputs on the host build
 * instead (several minutes; the figures of §6.8 come from that run).
 * t_vector checks the IR for znver4: 16-wide vectors and no calls.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

enum { NFN = 4, CHUNK = 1 << 20 };

/* The bounds, in ulps, of spec §6.8. */
static const double bound[NFN] = {1, 1, 2, 2};
static const char *const fname[NFN] = {"exp", "log", "tanh", "sigmoid"};
static const OpKind fop[NFN] = {OP_exp, OP_log, OP_tanh, OP_sigmoid};

/* ------------------------------------------------------- the part, JITed */

static float *buf; /* CHUNK inputs, fed to key 0 */
static int nbuf;   /* of them filled */

/* The program: exp, log, tanh, sigmoid of one input, sent to keys 1..4
 * (NULL: no memory). */
static Program *
program(void)
{
	TfgShape s = {1, {CHUNK}};
	JhPart p = {0};
	IrNode *in;
	if (!buf) { /* once, freed by t_free */
		buf = aligned_alloc(64, CHUNK * sizeof(float));
		if (!buf)
			return NULL;
		for (int i = 0; i < CHUNK; i++)
			buf[i] = 1.0f;
	}
	in = jh_input(&p, TFG_F32, s, 0, buf);
	for (int f = 0; f < NFN; f++)
		jh_snd(&p, jh_op1(&p, fop[f], TFG_F32, s, in), 1 + (uint32_t)f);
	return jh_prog1(p.nodes, p.n);
}

/* The program JIT-compiled for cpu (NULL: the host). */
static int
jit(JhRun *r, const char *cpu)
{
	Program *p = program();
	CgOptions o = {cpu, 2, NULL, NULL};
	return p ? jh_jit(r, p, 0, &o) : -1;
}

/* ------------------------------------------------------------ reference */

static float
ref(int f, float x)
{
	double d = x;
	switch (f) {
	case 0: return (float)exp(d);
	case 1: return (float)log(d);
	case 2: return (float)tanh(d);
	default: return (float)(1.0 / (1.0 + exp(-d)));
	}
}

/* Distance in ulps (0 when both are NaN, huge when one is). */
static double
ulps(float a, float b)
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

/* ------------------------------------------------------------- sweeping */

typedef struct Worst {
	double ulp[NFN];
	float at[NFN];
	uint64_t n;
} Worst;

/* Runs the buffered inputs through r and checks them. */
static void
flush(JhRun *r, Worst *w)
{
	if (nbuf == 0)
		return;
	for (int i = nbuf; i < CHUNK; i++)
		buf[i] = 1.0f;
	ASSERT_EQ(jh_call(r, 0), 0);
	for (int f = 0; f < NFN; f++) {
		const float *got = jh_sent[1 + f];
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
push(JhRun *r, Worst *w, float x)
{
	buf[nbuf++] = x;
	if (nbuf == CHUNK)
		flush(r, w);
}

static void
push_bits(JhRun *r, Worst *w, uint32_t u)
{
	float x;
	memcpy(&x, &u, 4);
	push(r, w, x);
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
sweep(JhRun *r, Worst *w, int level)
{
	static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN,
				   1.0f, -1.0f, 0x1p-149f, 0x1p-126f, FLT_MAX,
				   88.72283f, 88.72284f, -103.97208f,
				   -87.33655f, 0.625f, 9.01f};
	memset(w, 0, sizeof *w);
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

static void
check(const char *cpu, int level)
{
	JhRun r;
	Worst w;
	ASSERT_EQ(jit(&r, cpu), 0);
	sweep(&r, &w, level);
	jh_run_done(&r);
	printf("%s, %llu inputs:", cpu ? cpu : "host",
	       (unsigned long long)w.n);
	for (int f = 0; f < NFN; f++)
		printf(" %s %.0f ulp (at %a)", fname[f], w.ulp[f],
		       (double)w.at[f]);
	printf("\n");
	for (int f = 0; f < NFN; f++)
		if (w.ulp[f] > bound[f])
			TEST_FAIL_("%s on %s: %.0f ulps at %a, bound %.0f",
				   fname[f], cpu ? cpu : "host", w.ulp[f],
				   (double)w.at[f], bound[f]);
}

static void
t_host(void)
{
	const char *all = getenv("TFG_VMATH_ALL");
	check(NULL, all && *all == '1' ? 2 : 1);
}

static void
t_nofma(void)
{
	check("x86-64", 0);
}

/* The IEEE special cases of §6.8, exactly. */
static void
t_special(void)
{
	static const float in[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f,
				   -1.0f, -0x1p-149f, 200.0f, -200.0f};
	JhRun r;
	ASSERT_EQ(jit(&r, NULL), 0);
	memcpy(buf, in, sizeof in);
	ASSERT_EQ(jh_call(&r, 0), 0);
	const float *e = jh_sent[1], *l = jh_sent[2], *t = jh_sent[3];
	const float *s = jh_sent[4];
	ASSERT(e[0] == 0.0f && e[1] == INFINITY && isnan(e[2]));
	ASSERT(e[3] == 1.0f && e[4] == 1.0f && e[7] == INFINITY);
	ASSERT(e[8] == 0.0f);
	ASSERT(isnan(l[0]) && l[1] == INFINITY && isnan(l[2]));
	ASSERT(l[3] == -INFINITY && l[4] == -INFINITY && isnan(l[5]));
	ASSERT(isnan(l[6]));
	ASSERT(t[0] == -1.0f && t[1] == 1.0f && isnan(t[2]));
	ASSERT(t[3] == 0.0f && !signbit(t[3]) && t[4] == 0.0f &&
	       signbit(t[4]));
	ASSERT(t[7] == 1.0f && t[8] == -1.0f);
	ASSERT(s[0] == 0.0f && s[1] == 1.0f && isnan(s[2]));
	ASSERT(s[3] == 0.5f && s[4] == 0.5f && s[7] == 1.0f && s[8] == 0.0f);
	jh_run_done(&r);
}

/* For AVX-512 (znver4) the loops are <16 x float> and call nothing but
 * the runtime, LLVM intrinsics and the outlined kernels (tfg_k<N>,
 * codegen/cpu_nest.c). */
static void
t_vector(void)
{
	Program *p = program();
	char *ir;
	ASSERT(p != NULL);
	ASSERT((ir = jh_emit(p, "znver4")) != NULL);
	ASSERT(strstr(ir, "<16 x float>") != NULL);
	for (const char *c = strstr(ir, "call "); c; c = strstr(c + 1, "call "))
		if (strncmp(strchr(c, '@'), "@llvm.", 6) != 0 &&
		    strncmp(strchr(c, '@'), "@tfg_rt_", 8) != 0 &&
		    strncmp(strchr(c, '@'), "@tfg_k", 6) != 0)
			TEST_FAIL_("a call in the IR: %.60s", c);
	free(ir);
}

/* Last: frees what jit() set up (ASan checks for leaks). */
static void
t_free(void)
{
	free(buf);
	buf = NULL;
	jh_cleanup();
}

TEST_MAIN({"special", t_special}, {"vector", t_vector}, {"host", t_host}, {"nofma", t_nofma},
	  {"free", t_free})
