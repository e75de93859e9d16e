/*
 * codegen/vmath.c: exp, log, tanh and sigmoid of f32 as inline LLVM IR,
 * with no calls, so that the loop vectoriser turns a loop of them into
 * SIMD code (with AVX-512: `<16 x float>`).  LLVM itself would turn
 * llvm.exp & co. on vectors back into one scalar libm call per lane, since
 * no vector math library is reachable from the C API.
 *
 * Each function is branch-free: every path is computed and the answer
 * picked with selects, which vectorise.  Values may be scalars or vectors
 * of f32 (constants are splatted to the operand's type).  Multiply-adds
 * are llvm.fmuladd: fused where the target has FMA, else a multiply and
 * an add; the range reductions are exact either way (Cody-Waite constants
 * with trailing zero bits), so the error bounds hold on both.
 *
 *   exp   n = round(x log2 e) by the 1.5 * 2^23 shifter, r = x - n ln2 in
 *         two steps (|r| <= ln2/2), e^r by Cephes' degree-6 polynomial,
 *         then times 2^(n/2) and 2^(n - n/2): both normal numbers, so the
 *         result underflows gracefully through the subnormals with one
 *         rounding, and overflows to inf.  x is clamped to [-104, 88.8]
 *         first (exp(-104) rounds to 0); NaN passes the clamps.
 *   log   subnormal inputs are scaled by 2^23 first; x = m 2^e with m in
 *         [sqrt(1/2), sqrt(2)), log(1 + f) by Cephes' degree-9 polynomial,
 *         e ln2 added in two parts.  log(+-0) = -inf, log(x < 0) = NaN,
 *         log(inf) = inf, NaN in gives NaN.
 *   tanh  |x| < 0.625: odd polynomial (Cephes); else 1 - 2 / (e^2|x| + 1),
 *         which saturates to 1 (e^2|x| = inf gives exactly 1); the sign is
 *         copied from x, so tanh(-0) = -0.
 *   exp_nonpos  e^t for t <= 0 only (softmax's e^(x - max); sigmoid's
 *         e^-x is the same code, exp_scaled): no overflow to handle, so one clamp, a degree-6
 *         p(r) = 1 + q(r), q by Estrin's scheme (a chain of four
 *         multiply-adds after r^2, against Horner's six, for as many
 *         operations), then 2^(n + 64) (1 + q) as one multiply-add
 *         (2^(n + 64) is a power of two) and 2^-64 (exact, or one
 *         rounding into the subnormals): 15 vector instructions against
 *         cg_vexp's 23 (sigmoid is compute-bound at memory speed); 1 ulp
 *         over all t in [-104, 0] (checked exhaustively against libm,
 *         with and without FMA, when written and again for Estrin's
 *         scheme).
 *   sigmoid  of f32: 2^-23 / (2^-23 + e^-x 2^-23), one formula for
 *         every x, e^-x computed as exp_nonpos computes e^t but for x
 *         clamped to [-104, 71] (so no |x| and no side to pick: 17
 *         vector operations); of f64: z = exp(-|x|), 1 / (1 + z) for
 *         x >= 0, else z / (1 + z).  Never NaN for non-NaN x, exactly
 *         0 and 1 at the ends.  2 ulps over all 2^32 inputs, with
 *         FMA and without.  exp_nonpos's Estrin scheme made
 *         bench/kernels.sh's sigmoid faster (bench/README.md has the
 *         figures).  The division stays:
 *         a reciprocal estimate and a Newton step exist only as vector
 *         instructions (the scalar remainder of a loop would round
 *         differently), and removing it outright gained under 10% in
 *         cache.
 *
 * Measured errors (tests/unit/vmath_test.c; exhaustive sweep over all
 * 2^32 inputs recorded in spec/language.md §6.8 "Unary elementwise functions")
 * against the double libm result rounded to f32.
 *
 * f64 (cg_v*64) works the same way with the constants and polynomials of
 * double precision, as described at each function below; its bounds are
 * measured on random and edge inputs against long-double libm
 * (tests/unit/vmath_test.c).
 */
#include <math.h>

#include "codegen/cg_int.h"

/* The operand's float type and the matching integer type (i32 for f32,
 * i64 for f64), and their element types. */
typedef struct Vm {
	CgCtx *C;
	LLVMBuilderRef b;
	LLVMTypeRef fty, ity;
	LLVMTypeRef fel, iel;
	unsigned lanes; /* 0: scalar */
} Vm;

static Vm
vm_of(CgCtx *C, LLVMValueRef x)
{
	Vm v = {C, C->b, LLVMTypeOf(x), C->i32, LLVMTypeOf(x), C->i32, 0};
	if (LLVMGetTypeKind(v.fty) == LLVMVectorTypeKind) {
		v.lanes = LLVMGetVectorSize(v.fty);
		v.fel = LLVMGetElementType(v.fty);
	}
	if (LLVMGetTypeKind(v.fel) == LLVMDoubleTypeKind)
		v.iel = C->i64;
	v.ity = v.lanes ? LLVMVectorType(v.iel, v.lanes) : v.iel;
	return v;
}

static LLVMValueRef
splat(const Vm *v, LLVMValueRef s)
{
	LLVMValueRef e[64];
	if (!v->lanes)
		return s;
	for (unsigned i = 0; i < v->lanes && i < 64; i++)
		e[i] = s;
	return LLVMConstVector(e, v->lanes);
}

static LLVMValueRef
fc(const Vm *v, double d)
{
	return splat(v, LLVMConstReal(v->fel, d));
}

static LLVMValueRef
ic(const Vm *v, int64_t i)
{
	return splat(v, LLVMConstInt(v->iel, (unsigned long long)i, 1));
}

static LLVMValueRef
fma_(const Vm *v, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef args[3] = {a, b, c};
	return cg_intrinsic(v->C, "llvm.fmuladd", args, 3);
}

/* Horner: c[0] x^(n-1) + ... + c[n-1]. */
static LLVMValueRef
horner(const Vm *v, LLVMValueRef x, const double *c, int n)
{
	LLVMValueRef p = fc(v, c[0]);
	for (int i = 1; i < n; i++)
		p = fma_(v, p, x, fc(v, c[i]));
	return p;
}

static LLVMValueRef
fsel(const Vm *v, LLVMRealPredicate pr, LLVMValueRef a, LLVMValueRef b,
     LLVMValueRef t, LLVMValueRef f)
{
	return LLVMBuildSelect(v->b, LLVMBuildFCmp(v->b, pr, a, b, ""), t, f,
			       "");
}

/* 2^k for integer k in [-126, 127], as a float. */
static LLVMValueRef
pow2i(const Vm *v, LLVMValueRef k)
{
	LLVMValueRef e = LLVMBuildAdd(v->b, k, ic(v, 127), "");
	return LLVMBuildBitCast(v->b, LLVMBuildShl(v->b, e, ic(v, 23), ""),
				v->fty, "");
}

LLVMValueRef
cg_vexp(CgCtx *C, LLVMValueRef x)
{
	static const double P[] = {1.9875691500E-4, 1.3981999507E-3,
				   8.3334519073E-3, 4.1665795894E-2,
				   1.6666665459E-1, 5.0000001201E-1};
	Vm v = vm_of(C, x);
	LLVMBuilderRef B = v.b;
	LLVMValueRef shifter = fc(&v, 0x1.8p23);
	x = fsel(&v, LLVMRealOGT, x, fc(&v, 88.8), fc(&v, 88.8), x);
	x = fsel(&v, LLVMRealOLT, x, fc(&v, -104.0), fc(&v, -104.0), x);
	/* t holds n in its low mantissa bits; k = n as a float */
	LLVMValueRef t = fma_(&v, x, fc(&v, M_LOG2E), shifter);
	LLVMValueRef k = LLVMBuildFSub(B, t, shifter, "");
	LLVMValueRef n = LLVMBuildSub(B, LLVMBuildBitCast(B, t, v.ity, ""),
				      LLVMBuildBitCast(B, shifter, v.ity, ""),
				      "");
	LLVMValueRef r = fma_(&v, k, fc(&v, -0.693359375), x);
	r = fma_(&v, k, fc(&v, 2.12194440e-4), r);
	LLVMValueRef z = LLVMBuildFMul(B, r, r, "");
	LLVMValueRef y = fma_(&v, horner(&v, r, P, 6), z, r);
	y = LLVMBuildFAdd(B, y, fc(&v, 1.0), "");
	LLVMValueRef n1 = LLVMBuildAShr(B, n, ic(&v, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(B, n, n1, "");
	y = LLVMBuildFMul(B, y, pow2i(&v, n1), "");
	return LLVMBuildFMul(B, y, pow2i(&v, n2), "");
}

LLVMValueRef
cg_vlog(CgCtx *C, LLVMValueRef x)
{
	static const double P[] = {7.0376836292E-2, -1.1514610310E-1,
				   1.1676998740E-1, -1.2420140846E-1,
				   1.4249322787E-1, -1.6668057665E-1,
				   2.0000714765E-1, -2.4999993993E-1,
				   3.3333331174E-1};
	Vm v = vm_of(C, x);
	LLVMBuilderRef B = v.b;
	/* subnormals: scale into the normals, take 23 off the exponent */
	LLVMValueRef sub = LLVMBuildFCmp(B, LLVMRealOLT, x, fc(&v, 0x1p-126),
					 "");
	LLVMValueRef xs = LLVMBuildSelect(B, sub, LLVMBuildFMul(B, x,
				fc(&v, 0x1p23), ""), x, "");
	LLVMValueRef bits = LLVMBuildBitCast(B, xs, v.ity, "");
	/* x = m 2^e, m in [0.5, 1) */
	LLVMValueRef e = LLVMBuildAnd(B, LLVMBuildLShr(B, bits, ic(&v, 23), ""),
				      ic(&v, 0xff), "");
	e = LLVMBuildSub(B, e, LLVMBuildSelect(B, sub, ic(&v, 126 + 23),
					       ic(&v, 126), ""), "");
	LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B,
		bits, ic(&v, 0x7fffff), ""), ic(&v, 0x3f000000), ""), v.fty,
		"");
	/* m < sqrt(1/2): f = 2m - 1, e - 1; else f = m - 1 (both exact) */
	LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLT, m,
					fc(&v, M_SQRT1_2), "");
	e = LLVMBuildSub(B, e, LLVMBuildZExt(B, lo, v.ity, ""), "");
	LLVMValueRef f = LLVMBuildFSub(B, LLVMBuildSelect(B, lo,
		LLVMBuildFAdd(B, m, m, ""), m, ""), fc(&v, 1.0), "");
	LLVMValueRef fe = LLVMBuildSIToFP(B, e, v.fty, "");
	LLVMValueRef z = LLVMBuildFMul(B, f, f, "");
	LLVMValueRef y = LLVMBuildFMul(B, LLVMBuildFMul(B, horner(&v, f, P, 9),
							f, ""), z, "");
	y = fma_(&v, fe, fc(&v, -2.12194440e-4), y);
	y = fma_(&v, z, fc(&v, -0.5), y);
	LLVMValueRef r = LLVMBuildFAdd(B, f, y, "");
	r = fma_(&v, fe, fc(&v, 0.693359375), r);
	r = fsel(&v, LLVMRealOEQ, x, fc(&v, INFINITY), x, r);
	r = fsel(&v, LLVMRealOEQ, x, fc(&v, 0.0), fc(&v, -INFINITY), r);
	return fsel(&v, LLVMRealULT, x, fc(&v, 0.0), fc(&v, NAN), r);
}

LLVMValueRef
cg_vtanh(CgCtx *C, LLVMValueRef x)
{
	static const double P[] = {-5.70498872745E-3, 2.06390887954E-2,
				   -5.37397155531E-2, 1.33314422036E-1,
				   -3.33332819422E-1};
	Vm v = vm_of(C, x);
	LLVMBuilderRef B = v.b;
	LLVMValueRef one = fc(&v, 1.0);
	LLVMValueRef ax = cg_intrinsic(C, "llvm.fabs", &x, 1);
	LLVMValueRef e = cg_vexp(C, LLVMBuildFAdd(B, ax, ax, ""));
	LLVMValueRef big = LLVMBuildFSub(B, one, LLVMBuildFDiv(B, fc(&v, 2.0),
				LLVMBuildFAdd(B, e, one, ""), ""), "");
	LLVMValueRef z = LLVMBuildFMul(B, ax, ax, "");
	LLVMValueRef small = fma_(&v, LLVMBuildFMul(B, horner(&v, z, P, 5), z,
						    ""), ax, ax);
	LLVMValueRef r = fsel(&v, LLVMRealOLT, ax, fc(&v, 0.625), small, big);
	LLVMValueRef cs[2] = {r, x};
	return cg_intrinsic(C, "llvm.copysign", cs, 2);
}

/* e^(sx) 2^c, s = +1 or -1, x clamped to -104 from below and, for
 * s = -1, to hi from above: the exp of softmax (s = 1, x <= 0, c in
 * [24, 64]) and of sigmoid (s = -1, hi = 71, c = -23), cheaper than
 * cg_vexp's.  NaN passes the clamps.  n = round(sx log2 e) by the
 * shifter, the
 * reduction in two steps on u = x - s k ln2 (so r = su: no negation
 * for s < 0), p(r) = 1 + q, q = r + r^2 P(r) with P of degree 4
 * (fitted for the relative error over |r| <= ln2/2: 3.1e-9) by
 * Estrin's scheme, in u with P's odd terms times s, and the scaling
 * by 2^(n + c), a normal number for these ranges, so that 2^(n + c) +
 * 2^(n + c) q rounds once. */
static LLVMValueRef
exp_scaled(const Vm *v, LLVMValueRef x, int s, double hi, int c)
{
	/* P(r) = P[0] r^4 + ... + P[4] */
	static const double P[] = {1.381454058e-03, 8.368745446e-03,
				   4.166838899e-02, 1.666652113e-01,
				   4.999999404e-01};
	LLVMBuilderRef B = v->b;
	LLVMValueRef shifter = fc(v, 0x1.8p23);
	x = fsel(v, LLVMRealOLT, x, fc(v, -104.0), fc(v, -104.0), x);
	if (s < 0)
		x = fsel(v, LLVMRealOGT, x, fc(v, hi), fc(v, hi), x);
	LLVMValueRef kk = fma_(v, x, fc(v, s * M_LOG2E), shifter);
	LLVMValueRef k = LLVMBuildFSub(B, kk, shifter, "");
	LLVMValueRef u = fma_(v, k, fc(v, -s * 0.693359375), x);
	u = fma_(v, k, fc(v, s * 2.12194440e-4), u);
	/* q = r + r^2 (P4 + P3 r + r^2 (P2 + P1 r + P0 r^2)), r = su,
	   Estrin's way: a shorter chain than Horner's for the same
	   number of operations */
	LLVMValueRef u2 = LLVMBuildFMul(B, u, u, "");
	LLVMValueRef lo = fma_(v, u, fc(v, s * P[3]), fc(v, P[4]));
	LLVMValueRef up = fma_(v, u, fc(v, P[0]), fc(v, s * P[1]));
	up = fma_(v, up, u, fc(v, P[2]));
	LLVMValueRef q = fma_(v, fma_(v, up, u2, lo), u2,
			      s > 0 ? u : LLVMBuildFNeg(B, u, ""));
	/* kk's low mantissa bits hold n: bits(kk) - bits(shifter) = n, so
	   2^(n + c) = (bits(kk) - bits(shifter) + 127 + c) << 23 */
	LLVMValueRef e = LLVMBuildAdd(B, LLVMBuildBitCast(B, kk, v->ity, ""),
				      ic(v, 127 + c - 0x4b400000), "");
	e = LLVMBuildBitCast(B, LLVMBuildShl(B, e, ic(v, 23), ""), v->fty, "");
	/* e (1 + q) = e + e q, one rounding (e is a power of two) */
	return fma_(v, q, e, e);
}

static LLVMValueRef
exp_nonpos_scaled(const Vm *v, LLVMValueRef t, int c)
{
	return exp_scaled(v, t, 1, 0.0, c);
}

/* e^t for t <= 0: e^t 2^64, then 2^-64 (exact, or one rounding into
 * the subnormals). */
static LLVMValueRef
exp_nonpos(const Vm *v, LLVMValueRef t)
{
	return LLVMBuildFMul(v->b, exp_nonpos_scaled(v, t, 64),
			     fc(v, 0x1p-64), "");
}

LLVMValueRef
cg_vexp_nonpos(CgCtx *C, LLVMValueRef x)
{
	Vm v = vm_of(C, x);
	return exp_nonpos(&v, x);
}

LLVMValueRef
cg_vexp_nonpos_2p24(CgCtx *C, LLVMValueRef x)
{
	Vm v = vm_of(C, x);
	return exp_nonpos_scaled(&v, x, 24);
}

/* sigmoid of f32: 2^-23 / (2^-23 + E), E = e^-x 2^-23, for every x:
 * no |x|, no side to pick.  x is clamped to [-104, 71] (sigmoid is 1 in
 * f32 from 17, and rounds to 0 at -104), so that E = 2^(n - 23) (1 + q)
 * has n in [-103, 150] and 2^(n - 23) is normal. */
LLVMValueRef
cg_vsigmoid(CgCtx *C, LLVMValueRef x)
{
	Vm v = vm_of(C, x);
	LLVMValueRef tiny = fc(&v, 0x1p-23);
	LLVMValueRef E = exp_scaled(&v, x, -1, 71.0, -23);
	return LLVMBuildFDiv(v.b, tiny, LLVMBuildFAdd(v.b, tiny, E, ""), "");
}

/* ------------------------------------------------------------------ f64 */

/* 2^k for integer (i64) k in [-1022, 1023], as a double. */
static LLVMValueRef
pow2i64(const Vm *v, LLVMValueRef k)
{
	LLVMValueRef e = LLVMBuildAdd(v->b, k, ic(v, 1023), "");
	return LLVMBuildBitCast(v->b, LLVMBuildShl(v->b, e, ic(v, 52), ""),
				v->fty, "");
}

/* 1/k! for k = 13 down to 2: e^r - 1 - r = r^2 (1/2! + r/3! + ...). */
static const double inv_fact[] = {
	1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
	1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0,
	1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5};

/* ln 2 in two parts: hi has 32 trailing zero bits, so k * hi is exact
 * for |k| < 2^21 (fdlibm's split). */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10

/* x = n ln2 + r, |r| <= ln2/2; *n gets n (i64), returns r. */
static LLVMValueRef
reduce64(const Vm *v, LLVMValueRef x, LLVMValueRef *n)
{
	LLVMBuilderRef B = v->b;
	LLVMValueRef shifter = fc(v, 0x1.8p52);
	LLVMValueRef t = fma_(v, x, fc(v, M_LOG2E), shifter);
	LLVMValueRef k = LLVMBuildFSub(B, t, shifter, "");
	LLVMValueRef r = fma_(v, k, fc(v, -LN2_HI), x);
	*n = LLVMBuildSub(B, LLVMBuildBitCast(B, t, v->ity, ""),
			  LLVMBuildBitCast(B, shifter, v->ity, ""), "");
	return fma_(v, k, fc(v, -LN2_LO), r);
}

/* e^r - 1 for |r| <= ln2/2: r + r^2 p(r), Taylor to r^13 (truncation
 * below 2^-60 relative). */
static LLVMValueRef
expm1_reduced(const Vm *v, LLVMValueRef r)
{
	LLVMValueRef z = LLVMBuildFMul(v->b, r, r, "");
	return fma_(v, horner(v, r, inv_fact, 12), z, r);
}

/* exp of f64: as the f32 one, with x clamped to [-746, 710] (e^-746
 * rounds to 0, e^710 overflows), n in [-1076, 1024] and the scaling by
 * 2^(n/2) and 2^(n - n/2), both normal. */
static LLVMValueRef
exp64(const Vm *v, LLVMValueRef x)
{
	LLVMBuilderRef B = v->b;
	LLVMValueRef n, r, y, n1;
	x = fsel(v, LLVMRealOGT, x, fc(v, 710.0), fc(v, 710.0), x);
	x = fsel(v, LLVMRealOLT, x, fc(v, -746.0), fc(v, -746.0), x);
	r = reduce64(v, x, &n);
	y = LLVMBuildFAdd(B, expm1_reduced(v, r), fc(v, 1.0), "");
	n1 = LLVMBuildAShr(B, n, ic(v, 1), "");
	y = LLVMBuildFMul(B, y, pow2i64(v, n1), "");
	return LLVMBuildFMul(B, y, pow2i64(v, LLVMBuildSub(B, n, n1, "")), "");
}

LLVMValueRef
cg_vexp64(CgCtx *C, LLVMValueRef x)
{
	Vm v = vm_of(C, x);
	return exp64(&v, x);
}

/* log of f64: x = m 2^e, m in [sqrt(1/2), sqrt(2)) (subnormals scaled by
 * 2^52 first), f = m - 1 exact, s = f / (2 + f); log(1 + f) = 2 atanh(s)
 * = f - s (f - R), R = 2s^2/3 + 2s^4/5 + ... to s^20 (|s| < 0.172:
 * truncation below 2^-60); plus e ln2 in two parts. */
LLVMValueRef
cg_vlog64(CgCtx *C, LLVMValueRef x)
{
	static const double P[] = {2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15,
				   2.0 / 13, 2.0 / 11, 2.0 / 9,  2.0 / 7,
				   2.0 / 5,  2.0 / 3};
	Vm v = vm_of(C, x);
	LLVMBuilderRef B = v.b;
	LLVMValueRef sub = LLVMBuildFCmp(B, LLVMRealOLT, x, fc(&v, 0x1p-1022),
					 "");
	LLVMValueRef xs = LLVMBuildSelect(B, sub, LLVMBuildFMul(B, x,
				fc(&v, 0x1p52), ""), x, "");
	LLVMValueRef bits = LLVMBuildBitCast(B, xs, v.ity, "");
	LLVMValueRef e = LLVMBuildAnd(B, LLVMBuildLShr(B, bits, ic(&v, 52), ""),
				      ic(&v, 0x7ff), "");
	e = LLVMBuildSub(B, e, LLVMBuildSelect(B, sub, ic(&v, 1022 + 52),
					       ic(&v, 1022), ""), "");
	LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B,
		bits, ic(&v, 0xfffffffffffffll), ""),
		ic(&v, 0x3fe0000000000000ll), ""), v.fty, "");
	LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLT, m,
					fc(&v, M_SQRT1_2), "");
	e = LLVMBuildSub(B, e, LLVMBuildZExt(B, lo, v.ity, ""), "");
	LLVMValueRef f = LLVMBuildFSub(B, LLVMBuildSelect(B, lo,
		LLVMBuildFAdd(B, m, m, ""), m, ""), fc(&v, 1.0), "");
	LLVMValueRef s = LLVMBuildFDiv(B, f, LLVMBuildFAdd(B, f, fc(&v, 2.0),
							   ""), "");
	LLVMValueRef z = LLVMBuildFMul(B, s, s, "");
	LLVMValueRef R = LLVMBuildFMul(B, horner(&v, z, P, 10), z, "");
	LLVMValueRef l1p = LLVMBuildFSub(B, f, LLVMBuildFMul(B, s,
				LLVMBuildFSub(B, f, R, ""), ""), "");
	LLVMValueRef fe = LLVMBuildSIToFP(B, e, v.fty, "");
	LLVMValueRef r = fma_(&v, fe, fc(&v, LN2_LO), l1p);
	r = fma_(&v, fe, fc(&v, LN2_HI), r);
	r = fsel(&v, LLVMRealOEQ, x, fc(&v, INFINITY), x, r);
	r = fsel(&v, LLVMRealOEQ, x, fc(&v, 0.0), fc(&v, -INFINITY), r);
	return fsel(&v, LLVMRealULT, x, fc(&v, 0.0), fc(&v, NAN), r);
}

/* tanh of f64: |x| < 0.625: its Taylor series, x + x z P(z) with z = x^2
 * and P's 22 coefficients from tanh' = 1 - tanh^2 ((2k+1) a_k =
 * -sum a_i a_(k-1-i), a_0 = 1); the terms shrink by (2x/pi)^2 < 0.16 each,
 * so the last is below 2^-56 of x; else 1 - 2 / (e^2|x| + 1), which
 * saturates to 1; the sign copied from x, so tanh(-0) = -0. */
LLVMValueRef
cg_vtanh64(CgCtx *C, LLVMValueRef x)
{
	enum { K = 22 };
	double a[K + 1], P[K];
	Vm v = vm_of(C, x);
	LLVMBuilderRef B = v.b;
	LLVMValueRef one = fc(&v, 1.0);
	LLVMValueRef ax = cg_intrinsic(C, "llvm.fabs", &x, 1);
	LLVMValueRef y = LLVMBuildFAdd(B, ax, ax, "");
	LLVMValueRef big = LLVMBuildFSub(B, one, LLVMBuildFDiv(B, fc(&v, 2.0),
		LLVMBuildFAdd(B, exp64(&v, y), one, ""), ""), "");
	a[0] = 1;
	for (int k = 1; k <= K; k++) {
		double sum = 0;
		for (int i = 0; i < k; i++)
			sum += a[i] * a[k - 1 - i];
		a[k] = -sum / (2 * k + 1);
	}
	for (int k = 0; k < K; k++)
		P[k] = a[K - k]; /* horner: highest degree first */
	LLVMValueRef z = LLVMBuildFMul(B, ax, ax, "");
	LLVMValueRef small = fma_(&v, LLVMBuildFMul(B, ax, z, ""),
				  horner(&v, z, P, K), ax);
	LLVMValueRef r = fsel(&v, LLVMRealOLT, ax, fc(&v, 0.625), small, big);
	LLVMValueRef cs[2] = {r, x};
	return cg_intrinsic(C, "llvm.copysign", cs, 2);
}

/* sigmoid of f64: z = e^-|x| (exp64), then 1 / (1 + z) for x >= 0 and
 * z / (1 + z) otherwise. */
LLVMValueRef
cg_vsigmoid64(CgCtx *C, LLVMValueRef x)
{
	Vm v = vm_of(C, x);
	LLVMBuilderRef B = v.b;
	LLVMValueRef one = fc(&v, 1.0);
	LLVMValueRef ax = cg_intrinsic(C, "llvm.fabs", &x, 1);
	LLVMValueRef z = exp64(&v, LLVMBuildFNeg(B, ax, ""));
	LLVMValueRef num = fsel(&v, LLVMRealOGE, x, fc(&v, 0.0), one, z);
	return LLVMBuildFDiv(B, num, LLVMBuildFAdd(B, one, z, ""), "");
}
