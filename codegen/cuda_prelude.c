/*
 * codegen/cuda_prelude.c: the start of a task's CUDA C unit (CuGen,
 * codegen/cuda_int.h): the prelude, one `__device__ __forceinline__`
 * function per elementwise op and dtype, the casts, the vector type and
 * Philox that the kernels of codegen/cuda_kern.c, cuda_reduce.c,
 * cuda_mm.c and cuda_conv.c call; cu_gen_init and cu_gen_free; and
 * cu_kernel, which adds a kernel's text to the unit once (kernels are
 * keyed by their text, so nodes of one shape share one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_int.h"

/* ------------------------------------------------------------- prelude */

/* The prelude's fixed part, a line an element (C11 caps a string
 * literal at 4095 bytes). */
static const char *const prelude_head[] = {
"/* tfg: CUDA C of a task's GPU nodes (codegen/cuda_kern.c) */\n",
"template <typename T, int V> struct alignas(sizeof(T) * V) tfg_vec {\n",
"\tT v[V];\n",
"};\n",
"#define TFG_DEV __device__ __forceinline__\n",
"\n",
"/* comparisons: IEEE (NaN unequal to all), signed integers */\n",
"#define TFG_CMP(T, S) \\\n",
"TFG_DEV unsigned char tfg_equal_##S(T a, T b) { return a == b; } \\\n",
"TFG_DEV unsigned char tfg_not_equal_##S(T a, T b) { return a != b; } \\\n",
"TFG_DEV unsigned char tfg_less_##S(T a, T b) { return a < b; } \\\n",
"TFG_DEV unsigned char tfg_less_equal_##S(T a, T b) { return a <= b; } \\\n",
"TFG_DEV unsigned char tfg_greater_##S(T a, T b) { return a > b; } \\\n",
"TFG_DEV unsigned char tfg_greater_equal_##S(T a, T b) { return a >= b; }\n",
"TFG_CMP(unsigned char, b8)\n",
"TFG_CMP(int, i32)\n",
"TFG_CMP(long long, i64)\n",
"TFG_CMP(float, f32)\n",
"TFG_CMP(double, f64)\n",
"TFG_DEV unsigned char tfg_maximum_b8(unsigned char a, unsigned char b)\n",
"{ return a > b ? a : b; }\n",
"TFG_DEV unsigned char tfg_minimum_b8(unsigned char a, unsigned char b)\n",
"{ return a < b ? a : b; }\n",
"TFG_DEV unsigned char tfg_logical_and_b8(unsigned char a, unsigned char b)\n",
"{ return a & b; }\n",
"TFG_DEV unsigned char tfg_logical_or_b8(unsigned char a, unsigned char b)\n",
"{ return a | b; }\n",
"TFG_DEV unsigned char tfg_logical_not_b8(unsigned char a) { return !a; }\n",
"TFG_DEV unsigned char tfg_neg_b8(unsigned char a) { return a; }\n",
"\n",
"/* integers: wrapping (in U), floor / and % that never trap: x / 0 =\n",
"   x % 0 = 0, MIN / -1 = MIN, MIN % -1 = 0 (cg_int_divmod); pow by\n",
"   squaring, b < 0: 0 but for 1 and -1 */\n",
"#define TFG_INT(T, U, S, MIN) \\\n",
"TFG_DEV T tfg_add_##S(T a, T b) { return (T)((U)a + (U)b); } \\\n",
"TFG_DEV T tfg_sub_##S(T a, T b) { return (T)((U)a - (U)b); } \\\n",
"TFG_DEV T tfg_mul_##S(T a, T b) { return (T)((U)a * (U)b); } \\\n",
"TFG_DEV T tfg_div_##S(T a, T b) \\\n",
"{ \\\n",
"\tbool bz = b == 0; \\\n",
"\tT d = bz || (a == MIN && b == (T)-1) ? (T)1 : b; \\\n",
"\tT q = a / d, r = a - q * d; \\\n",
"\tbool adj = r != 0 && (r ^ b) < 0; \\\n",
"\treturn bz ? (T)0 : adj ? (T)(q - 1) : q; \\\n",
"} \\\n",
"TFG_DEV T tfg_mod_##S(T a, T b) \\\n",
"{ \\\n",
"\tT d = b == 0 || (a == MIN && b == (T)-1) ? (T)1 : b; \\\n",
"\tT q = a / d, r = a - q * d; \\\n",
"\tbool adj = r != 0 && (r ^ b) < 0; \\\n",
"\treturn adj ? (T)(r + b) : r; \\\n",
"} \\\n",
"TFG_DEV T tfg_pow_##S(T a, T b) \\\n",
"{ \\\n",
"\tU r = 1, x = (U)a, e = b < 0 ? (U)0 : (U)b; \\\n",
"\twhile (e != 0) { \\\n",
"\t\tif (e & 1) \\\n",
"\t\t\tr *= x; \\\n",
"\t\tx *= x; \\\n",
"\t\te >>= 1; \\\n",
"\t} \\\n",
"\tif (b < 0) \\\n",
"\t\treturn a == 1 ? (T)1 : a == (T)-1 ? ((b & 1) ? (T)-1 : (T)1) \\\n",
"\t\t\t\t\t    : (T)0; \\\n",
"\treturn (T)r; \\\n",
"} \\\n",
"TFG_DEV T tfg_maximum_##S(T a, T b) { return a > b ? a : b; } \\\n",
"TFG_DEV T tfg_minimum_##S(T a, T b) { return a < b ? a : b; } \\\n",
"TFG_DEV T tfg_neg_##S(T a) { return (T)((U)0 - (U)a); } \\\n",
"TFG_DEV T tfg_abs_##S(T a) { return a < 0 ? (T)((U)0 - (U)a) : a; } \\\n",
"TFG_DEV T tfg_relu_##S(T a) { return a > 0 ? a : (T)0; } \\\n",
"TFG_DEV bool tfg_argmax_take_##S(T v, long long vi, T b, long long bi) \\\n",
"{ return v > b || (v == b && vi < bi); } \\\n",
"TFG_DEV bool tfg_argmin_take_##S(T v, long long vi, T b, long long bi) \\\n",
"{ return v < b || (v == b && vi < bi); }\n",
"TFG_INT(int, unsigned, i32, (-2147483647 - 1))\n",
"TFG_INT(long long, unsigned long long, i64, (-9223372036854775807LL - 1))\n",
"/* hash_bucket: SplitMix64's output, unsigned, modulo b */\n",
"TFG_DEV long long tfg_hash_bucket_i64(long long a, long long b)\n",
"{\n",
"\tunsigned long long z = (unsigned long long)a + 0x9e3779b97f4a7c15ULL;\n",
"\tz = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;\n",
"\tz = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;\n",
"\tz ^= z >> 31;\n",
"\treturn (long long)(z % (unsigned long long)b);\n",
"}\n",
"\n",
"/* u8: wrapping modulo 256, unsigned comparisons, / and % truncating\n",
"   (floor, on numbers >= 0) and never trapping: x / 0 = x % 0 = 0 */\n",
"typedef unsigned char tfg_u8;\n",
"TFG_CMP(tfg_u8, u8)\n",
"TFG_DEV tfg_u8 tfg_add_u8(tfg_u8 a, tfg_u8 b) { return (tfg_u8)(a + b); }\n",
"TFG_DEV tfg_u8 tfg_sub_u8(tfg_u8 a, tfg_u8 b) { return (tfg_u8)(a - b); }\n",
"TFG_DEV tfg_u8 tfg_mul_u8(tfg_u8 a, tfg_u8 b) { return (tfg_u8)(a * b); }\n",
"TFG_DEV tfg_u8 tfg_div_u8(tfg_u8 a, tfg_u8 b)\n",
"{ return b == 0 ? (tfg_u8)0 : (tfg_u8)(a / b); }\n",
"TFG_DEV tfg_u8 tfg_mod_u8(tfg_u8 a, tfg_u8 b)\n",
"{ return b == 0 ? (tfg_u8)0 : (tfg_u8)(a % b); }\n",
"TFG_DEV tfg_u8 tfg_pow_u8(tfg_u8 a, tfg_u8 b)\n",
"{\n",
"\tunsigned r = 1, x = a, e = b;\n",
"\twhile (e != 0) {\n",
"\t\tif (e & 1)\n",
"\t\t\tr *= x;\n",
"\t\tx *= x;\n",
"\t\te >>= 1;\n",
"\t}\n",
"\treturn (tfg_u8)r;\n",
"}\n",
"TFG_DEV tfg_u8 tfg_maximum_u8(tfg_u8 a, tfg_u8 b) { return a > b ? a : b; }\n",
"TFG_DEV tfg_u8 tfg_minimum_u8(tfg_u8 a, tfg_u8 b) { return a < b ? a : b; }\n",
"TFG_DEV tfg_u8 tfg_neg_u8(tfg_u8 a) { return (tfg_u8)(0u - a); }\n",
"TFG_DEV tfg_u8 tfg_abs_u8(tfg_u8 a) { return a; }\n",
"TFG_DEV tfg_u8 tfg_relu_u8(tfg_u8 a) { return a; }\n",
"TFG_DEV bool tfg_argmax_take_u8(tfg_u8 v, long long vi, tfg_u8 b,\n",
"\t\t\t\tlong long bi)\n",
"{ return v > b || (v == b && vi < bi); }\n",
"TFG_DEV bool tfg_argmin_take_u8(tfg_u8 v, long long vi, tfg_u8 b,\n",
"\t\t\t\tlong long bi)\n",
"{ return v < b || (v == b && vi < bi); }\n",
"\n",
"/* floats: + - * / never contracted; %: fmod moved to the divisor's\n",
"   sign, a zero taking the divisor's sign (float_mod); maximum and\n",
"   minimum propagate NaN and order -0 < +0; relu(NaN) = NaN,\n",
"   relu(-0) = +0; sigmoid from e^-|x|.  argmax: v beats b when greater,\n",
"   or NaN against a number; ties (NaN and NaN too) go to the smaller\n",
"   index, so any order of combining gives the first maximum */\n",
"#define TFG_FLT(T, S, F, I, BITS, ADD, SUB, MUL, DIV, SQRT) \\\n",
"TFG_DEV T tfg_add_##S(T a, T b) { return ADD(a, b); } \\\n",
"TFG_DEV T tfg_sub_##S(T a, T b) { return SUB(a, b); } \\\n",
"TFG_DEV T tfg_mul_##S(T a, T b) { return MUL(a, b); } \\\n",
"TFG_DEV T tfg_div_##S(T a, T b) { return DIV(a, b); } \\\n",
"TFG_DEV T tfg_mod_##S(T a, T b) \\\n",
"{ \\\n",
"\tT r = fmod##F(a, b); \\\n",
"\tif (r != 0) \\\n",
"\t\treturn (r < 0) != (b < 0) ? ADD(r, b) : r; \\\n",
"\treturn copysign##F((T)0, b); \\\n",
"} \\\n",
"TFG_DEV T tfg_pow_##S(T a, T b) { return pow##F(a, b); } \\\n",
"TFG_DEV T tfg_maximum_##S(T a, T b) \\\n",
"{ \\\n",
"\tif (a != a || b != b) \\\n",
"\t\treturn ADD(a, b); \\\n",
"\tif (a == b) \\\n",
"\t\treturn BITS(a) < 0 ? b : a; \\\n",
"\treturn a > b ? a : b; \\\n",
"} \\\n",
"TFG_DEV T tfg_minimum_##S(T a, T b) \\\n",
"{ \\\n",
"\tif (a != a || b != b) \\\n",
"\t\treturn ADD(a, b); \\\n",
"\tif (a == b) \\\n",
"\t\treturn BITS(a) < 0 ? a : b; \\\n",
"\treturn a < b ? a : b; \\\n",
"} \\\n",
"TFG_DEV T tfg_neg_##S(T a) { return -a; } \\\n",
"TFG_DEV T tfg_abs_##S(T a) { return fabs##F(a); } \\\n",
"TFG_DEV T tfg_relu_##S(T a) { return a <= 0 ? (T)0 : a; } \\\n",
"TFG_DEV T tfg_softplus_##S(T a) \\\n",
"{ \\\n",
"\treturn ADD(a > 0 ? a : (T)0, log1p##F(exp##F(-fabs##F(a)))); \\\n",
"} \\\n",
"TFG_DEV T tfg_exp_##S(T a) { return exp##F(a); } \\\n",
"TFG_DEV T tfg_log_##S(T a) { return log##F(a); } \\\n",
"TFG_DEV T tfg_sqrt_##S(T a) { return SQRT(a); } \\\n",
"TFG_DEV T tfg_tanh_##S(T a) { return tanh##F(a); } \\\n",
"TFG_DEV T tfg_sigmoid_##S(T a) \\\n",
"{ \\\n",
"\tT z = exp##F(-fabs##F(a)); \\\n",
"\treturn DIV(a >= 0 ? (T)1 : z, ADD((T)1, z)); \\\n",
"} \\\n",
"TFG_DEV bool tfg_argmax_take_##S(T v, long long vi, T b, long long bi) \\\n",
"{ \\\n",
"\treturn ((v > b || v != v) && b == b) || \\\n",
"\t       ((v == b || (v != v && b != b)) && vi < bi); \\\n",
"} \\\n",
"TFG_DEV bool tfg_argmin_take_##S(T v, long long vi, T b, long long bi) \\\n",
"{ \\\n",
"\treturn ((v < b || v != v) && b == b) || \\\n",
"\t       ((v == b || (v != v && b != b)) && vi < bi); \\\n",
"}\n",
"TFG_FLT(float, f32, f, int, __float_as_int, __fadd_rn, __fsub_rn,\n",
"\t__fmul_rn, __fdiv_rn, __fsqrt_rn)\n",
"TFG_FLT(double, f64, , long long, __double_as_longlong, __dadd_rn,\n",
"\t__dsub_rn, __dmul_rn, __ddiv_rn, __dsqrt_rn)\n",
"\n",
"/* Philox-4x32-10 of counter w under key (k0, k1), in place\n",
"   (codegen/cpu_make.c) */\n",
"TFG_DEV void tfg_philox(unsigned *w, unsigned k0, unsigned k1)\n",
"{\n",
"#pragma unroll\n",
"\tfor (int r = 0; r < 10; r++) {\n",
"\t\tif (r > 0) {\n",
"\t\t\tk0 += 0x9E3779B9u;\n",
"\t\t\tk1 += 0xBB67AE85u;\n",
"\t\t}\n",
"\t\tunsigned hi0 = __umulhi(0xD2511F53u, w[0]);\n",
"\t\tunsigned lo0 = 0xD2511F53u * w[0];\n",
"\t\tunsigned hi1 = __umulhi(0xCD9E8D57u, w[2]);\n",
"\t\tunsigned lo1 = 0xCD9E8D57u * w[2];\n",
"\t\tw[0] = hi1 ^ w[1] ^ k0;\n",
"\t\tw[1] = lo1;\n",
"\t\tw[2] = hi0 ^ w[3] ^ k1;\n",
"\t\tw[3] = lo0;\n",
"\t}\n",
"}\n",
"/* uniform in [0, 1) (plus1: (0, 1]): 24 bits of hi, 53 of hi:lo */\n",
"TFG_DEV float tfg_unit_f32(unsigned hi, unsigned lo, int plus1)\n",
"{\n",
"\treturn __fmul_rn((float)(unsigned long long)((hi >> 8) + plus1),\n",
"\t\t\t 0x1p-24f);\n",
"}\n",
"TFG_DEV double tfg_unit_f64(unsigned hi, unsigned lo, int plus1)\n",
"{\n",
"\tunsigned long long b = ((unsigned long long)hi << 32 | lo) >> 11;\n",
"\treturn __dmul_rn((double)(b + plus1), 0x1p-53);\n",
"}\n",
"\n",
};

/* The cast of dtype a to dtype b (a != b), as cg_cvt: to bool != 0,
 * float -> int saturating with NaN -> 0, int -> int wrapping or
 * extending (bool and u8 as unsigned). */
static void
prelude_cvt(CuStr *s, TfgDtype a, TfgDtype b)
{
	const char *ta = cu_ctype(a), *tb = cu_ctype(b);

	cu_printf(s, "TFG_DEV %s tfg_cvt_%s_%s(%s a) { ", tb, cu_sfx(a), cu_sfx(b),
		  ta);
	if (b == TFG_BOOL)
		cu_puts(s, "return a != 0;");
	else if (cu_is_float(a) && b == TFG_U8) /* llvm.fptoui.sat */
		cu_printf(s, "return a != a || a <= 0 ? 0 : a >= 255.0 ? 255 : "
			  "(%s)a;", tb);
	else if (cu_is_float(a) && !cu_is_float(b))
		cu_printf(s, "return a != a ? 0 : a >= %s ? %s : "
			  "a <= -%s ? %s : (%s)a;",
			  b == TFG_I32 ? "2147483648.0" : "9223372036854775808.0",
			  b == TFG_I32 ? "2147483647" : "9223372036854775807LL",
			  b == TFG_I32 ? "2147483648.0" : "9223372036854775808.0",
			  b == TFG_I32 ? "(-2147483647 - 1)"
				       : "(-9223372036854775807LL - 1)", tb);
	else if (!cu_is_float(a) && !cu_is_float(b) && cu_dt_size(b) < cu_dt_size(a))
		cu_printf(s, "return (%s)(unsigned)(unsigned long long)a;", tb);
	else
		cu_printf(s, "return (%s)a;", tb);
	cu_puts(s, " }\n");
}

void
cu_gen_init(CuGen *g, int tf32)
{
	static const TfgDtype dts[] = {TFG_BOOL, TFG_U8, TFG_I32, TFG_I64,
				       TFG_F32,  TFG_F64};
	const int ndt = (int)(sizeof dts / sizeof *dts);

	memset(g, 0, sizeof *g);
	g->tf32 = tf32;
	for (size_t i = 0; i < sizeof prelude_head / sizeof *prelude_head; i++)
		cu_puts(&g->src, prelude_head[i]);
	cu_puts(&g->src, "/* casts (cg_cvt) */\n");
	for (int a = 0; a < ndt; a++)
		for (int b = 0; b < ndt; b++)
			if (a != b)
				prelude_cvt(&g->src, dts[a], dts[b]);
	cu_puts(&g->src, "\n");
}

void
cu_gen_free(CuGen *g)
{
	for (int k = 0; k < g->nkern; k++) {
		free(g->names[k]);
		free(g->texts[k]);
	}
	free(g->names);
	free(g->texts);
	cu_str_free(&g->src);
	memset(g, 0, sizeof *g);
}

int
cu_kernel(CuGen *g, const char *text)
{
	char name[32];
	const char *p;

	for (int k = 0; k < g->nkern; k++)
		if (strcmp(g->texts[k], text) == 0)
			return k;
	if (g->nkern == g->capkern) {
		int cap = g->capkern ? 2 * g->capkern : 16;
		char **nn = realloc(g->names, cap * sizeof *nn);
		char **tt = nn ? realloc(g->texts, cap * sizeof *tt) : NULL;
		if (nn)
			g->names = nn;
		if (!tt) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			exit(1);
		}
		g->texts = tt;
		g->capkern = cap;
	}
	snprintf(name, sizeof name, "tfg_c%d", g->nkern);
	g->names[g->nkern] = strdup(name);
	g->texts[g->nkern] = strdup(text);
	if (!g->names[g->nkern] || !g->texts[g->nkern]) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		exit(1);
	}
	for (p = text; *p; p++) {
		if (p[0] == '@' && p[1] == 'K') {
			cu_puts(&g->src, name);
			p++;
		} else {
			cu_printf(&g->src, "%c", *p);
		}
	}
	cu_puts(&g->src, "\n");
	return g->nkern++;
}
