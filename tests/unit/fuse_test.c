/*
 * tests/unit/fuse_test.c: the passes never change a result (spec/design.md
 * "Passes").  Each program is compiled twice from source, with every pass
 * and with -fno-fold -fno-cse -fno-dce -fno-fuse, JIT-compiled, run on the
 * same random feeds (special values included: NaN, inf, -0.0, INT_MIN,
 * -1, 0) through a fake tfg_rt_recv/tfg_rt_send, and the fetched bytes
 * compared: bit for bit, floats included, since fused loops keep the
 * unfused loops' order (a float sum may differ only by its lanes, which
 * both builds share).  A third check looks at the fused dump: the programs
 * really fused.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

static void
fill(void *d, TfgDtype t, int64_t n)
{
	static const double fs[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0};
	static const int64_t is[] = {INT64_MIN, -1, 0, 1, INT32_MIN, 2};
	for (int64_t i = 0; i < n; i++) {
		uint64_t r = jh_next();
		int special = r % 16 == 0;
		double f = special ? fs[(r >> 8) % 6]
				   : ((double)(r >> 11) / 9007199254740992.0 - 0.5) *
				     8;
		int64_t v = special ? is[(r >> 8) % 6] : (int64_t)(r >> 40) % 200 - 100;
		switch (t) {
		case TFG_BOOL: ((uint8_t *)d)[i] = r & 1; break;
		case TFG_I32: ((int32_t *)d)[i] = (int32_t)v; break;
		case TFG_I64: ((int64_t *)d)[i] = v; break;
		case TFG_F32: ((float *)d)[i] = (float)f; break;
		default: ((double *)d)[i] = f; break;
		}
	}
}

/* Fetch dtypes of the last run_src, to compare NaNs as NaNs. */
static TfgDtype fetch_dt[16];
static int64_t fetch_n[16];
static int nfetch;
static int nfused; /* fused nodes in the last run_src's part */
static int nconv_epi; /* conv2d and pool nodes among them (epilogues) */

/* Compiles src (with passes or without), runs sig 0 of task 0 and returns
 * the fetched tensors' bytes concatenated (malloc'd; *len their size). */
static char *
run_src(const char *src, int passes, size_t *len, int seed)
{
	CompileOptions co = {0};
	Program p;
	char *out;
	IrSig *g;

	co.skip = passes ? 0 : 1u << PASS_FOLD | 1u << PASS_CSE |
				 1u << PASS_DCE | 1u << PASS_FUSE;
	if (jh_compile_src(&p, src, &co) != 0)
		return NULL;
	g = &p.sigs[0];
	nfused = nconv_epi = 0;
	for (int i = 0; i < g->parts[0].n; i++) {
		nfused += g->parts[0].nodes[i]->fuse != NULL;
		nconv_epi += g->parts[0].nodes[i]->fuse != NULL &&
			     g->parts[0].nodes[i]->op != OP_matmul &&
			     ir_takes_epilogue(g->parts[0].nodes[i]->op);
	}
	nfetch = g->nfetch < 16 ? g->nfetch : 16;
	for (int i = 0; i < nfetch; i++) {
		fetch_dt[i] = g->fetch[i]->dtype;
		fetch_n[i] = jh_nel(g->fetch[i]->shape);
	}
	jh_rng = 0x9e3779b97f4a7c15ull + (uint64_t)seed;
	out = jh_run_fetches(&p, fill, len);
	arena_free(p.arena);
	return out;
}

/* Element e of dtype t at a and b: the same bits, or both NaN (a NaN's
 * sign and payload are unspecified, spec/design.md "Passes"). */
static int
same_elem(TfgDtype t, const char *a, const char *b)
{
	size_t z = tfg_dtype_size(t);
	if (memcmp(a, b, z) == 0)
		return 1;
	if (t == TFG_F32) {
		float x, y;
		memcpy(&x, a, 4), memcpy(&y, b, 4);
		return isnan(x) && isnan(y);
	}
	if (t == TFG_F64) {
		double x, y;
		memcpy(&x, a, 8), memcpy(&y, b, 8);
		return isnan(x) && isnan(y);
	}
	return 0;
}

/* src gives the same fetches with and without the passes, and has at
 * least min_fused fused nodes with them. */
static void
same_results(const char *src, int min_fused)
{
	for (int seed = 0; seed < 3; seed++) {
		size_t n1 = 0, n2 = 0, at = 0;
		char *a = run_src(src, 1, &n1, seed);
		int fused = nfused;
		char *b = run_src(src, 0, &n2, seed);
		ASSERT(a && b);
		ASSERT(fused >= min_fused);
		ASSERT_EQ(nfused, 0);
		ASSERT_EQ(n1, n2);
		for (int f = 0; f < nfetch; f++) {
			size_t z = tfg_dtype_size(fetch_dt[f]);
			for (int64_t e = 0; e < fetch_n[f]; e++, at += z)
				if (!same_elem(fetch_dt[f], a + at, b + at))
					TEST_FAIL_("fetch %d element %" PRId64
						   " differs (seed %d): %s", f,
						   e, seed, src);
		}
		ASSERT_EQ(at, n1);
		free(a);
		free(b);
	}
}

static void
t_float_chain(void)
{
	same_results(
	    "input x: f32[1000]\ninput a: f32[1000]\ninput b: f32[1000]\n"
	    "y = sigmoid(a * x + b)\nz = tanh(x) * exp(a * 0.25) - relu(b)\n"
	    "w = where(x > a, abs(x) / (b + 1.5), -x)\n"
	    "v = cast(x * 100.0, i32) % 7 + cast(a < b, i32)\n"
	    "session { print run(y, z, w, v, feed { x: load(\"x\"), "
	    "a: load(\"a\"), b: load(\"b\") }) }\n", 4);
}

static void
t_float_f64(void)
{
	same_results(
	    "input x: f64[7, 33]\ninput r: f64[33]\ninput c: f64[7, 1]\n"
	    "y = log(abs(x) + 1.0) * r - c\nz = sqrt(abs(x * r)) + pow(x, 2.0)\n"
	    "s = maximum(x, r) - minimum(c, x)\n"
	    "session { print run(y, z, s, feed { x: load(\"x\"), "
	    "r: load(\"r\"), c: load(\"c\") }) }\n", 3);
}

static void
t_int_ops(void)
{
	same_results(
	    "input i: i32[257]\ninput j: i32[257]\ninput k: i64[257]\n"
	    "y = (i * j + 3) / (j - 1) % (i + 2)\n"
	    "z = -pow(abs(i), 3) + maximum(i, j) * minimum(k, 5)\n"
	    "w = where(i >= j, i, j) + cast(k != 0, i32) - relu(j)\n"
	    "session { print run(y, z, w, feed { i: load(\"i\"), "
	    "j: load(\"j\"), k: load(\"k\") }) }\n", 3);
}

static void
t_broadcast(void)
{
	same_results(
	    "input x: f32[5, 1, 9]\ninput b: f32[9]\ninput c: f32[4, 1]\n"
	    "s = b * 2.0 + 1.0\ny = (x + s) * c - exp(b)\n"
	    "n = -b\nz = n + x\n"
	    "session { print run(y, z, feed { x: load(\"x\"), "
	    "b: load(\"b\"), c: load(\"c\") }) }\n", 2);
}

static void
t_reduce(void)
{
	same_results(
	    "input x: f32[16, 40]\ninput m: f32[40]\ninput i: i32[16, 40]\n"
	    "d = x - m\nv0 = reduce_mean(d * d, axis=0)\n"
	    "v1 = reduce_max(abs(x) * 2.0, axis=1, keepdims=true)\n"
	    "v2 = reduce_sum(cast(x > 0.0, i32))\n"
	    "v3 = reduce_min(x * m)\nv4 = reduce_prod(x * 0.0 + 1.0, axis=1)\n"
	    "v5 = reduce_mean(i * 3 - 1, axis=1)\n"
	    "v6 = reduce_sum(i % 5, axis=0)\nv7 = reduce_prod(i % 3 + 1)\n"
	    "v8 = reduce_sum(exp(x * 0.1))\n"
	    "session { print run(v0, v1, v2, v3, v4, v5, v6, v7, v8, "
	    "feed { x: load(\"x\"), m: load(\"m\"), i: load(\"i\") }) }\n", 9);
}

static void
t_fold(void)
{
	same_results(
	    "a = [-7, 7, 0, -2147483648, 2147483647, -1]\n"
	    "b = [2, -2, 0, -1, -1, 0]\n"
	    "q = a / b\nr = a % b\np = pow(a, b)\ns = a * a + b - 1\n"
	    "c = cast([1.5, -2.5, 3e10, -3e10, 0.0, -0.0] * 2.0, i32)\n"
	    "f = [1.0, -0.0, 3.5] / [0.0, 0.0, 3.0] - 0.1\n"
	    "h = cast([1, 16777217, -3], f32) + 0.25\n"
	    "e = where(a > b, a, -b) + cast(a == b, i32)\n"
	    "g = relu([-1.0, -0.0, 2.0]) + abs([-1.5, 0.5, -0.0])\n"
	    "z = zeros([3, 2], dtype=i64) + ones([2], dtype=i64)\n"
	    "session { print run(q, r, p, s, c, f, h, e, g, z) }\n", 0);
}

static void
t_cse(void)
{
	same_results(
	    "input x: f32[64]\n"
	    "u = random_uniform([64], seed=3)\nv = random_uniform([64], seed=3)\n"
	    "w = random_uniform([64])\nt = random_uniform([64])\n"
	    "y = (x * 2.0 + u) - (x * 2.0 + v)\nz = w - t\n"
	    "session { print run(y, z, feed { x: load(\"x\") }) }\n", 1);
}

/* Matmul epilogues: the loop path (small, integer) bit for bit, as the
 * unfused loops; the BLAS path within its tolerance (blas_close). */
static void
t_epilogue_loop(void)
{
	same_results(
	    "input x: f32[5, 7]\ninput w: f32[7, 6]\ninput b: f32[6]\n"
	    "input c: f32[5, 1]\ninput i: i32[3, 4, 5]\ninput j: i32[5, 2]\n"
	    "input d: f64[2, 3, 4]\ninput e: f64[2, 4, 3]\n"
	    "input v: f32[7]\n"
	    "y = relu(x @ w + b) * c\n"
	    "z = (i @ j) % 7 - 1\n"
	    "u = tanh(d @ e) + d @ e\n"
	    "t = sigmoid(v @ w - b)\n"
	    "session { print run(y, z, u, t, feed { x: load(\"x\"), "
	    "w: load(\"w\"), b: load(\"b\"), c: load(\"c\"), "
	    "i: load(\"i\"), j: load(\"j\"), d: load(\"d\"), "
	    "e: load(\"e\"), v: load(\"v\") }) }\n", 4);
}

/* a and b within BLAS's tolerance: |a - b| <= tol * (1 + |b|), NaN and
 * infinities where both have them */
static int
blas_close(double a, double b, double tol)
{
	if (isnan(a) || isnan(b) || isinf(a) || isinf(b))
		return (isnan(a) && isnan(b)) || a == b;
	return fabs(a - b) <= tol * (1 + fabs(b));
}

/* src (fetching f32 or f64 tensors) within tol with and without the
 * passes, with at least min_fused fused nodes. */
static void
close_results(const char *src, int min_fused, double tol)
{
	for (int seed = 0; seed < 2; seed++) {
		size_t n1 = 0, n2 = 0, at = 0;
		char *a = run_src(src, 1, &n1, seed);
		int fused = nfused;
		char *b = run_src(src, 0, &n2, seed);
		ASSERT(a && b);
		ASSERT(fused >= min_fused);
		ASSERT_EQ(n1, n2);
		for (int f = 0; f < nfetch; f++) {
			size_t z = tfg_dtype_size(fetch_dt[f]);
			for (int64_t e = 0; e < fetch_n[f]; e++, at += z) {
				double x, y;
				float xf, yf;
				if (fetch_dt[f] == TFG_F32) {
					memcpy(&xf, a + at, 4), memcpy(&yf, b + at, 4);
					x = xf, y = yf;
				} else {
					memcpy(&x, a + at, 8), memcpy(&y, b + at, 8);
				}
				if (!blas_close(x, y, tol))
					TEST_FAIL_("fetch %d element %" PRId64
						   " (seed %d): %g vs %g: %s",
						   f, e, seed, x, y, src);
			}
		}
		ASSERT_EQ(at, n1);
		free(a);
		free(b);
	}
}

static void
t_epilogue_blas(void)
{
	/* flat batch rows, several blocks and a rest (256 KiB blocks:
	 * f32 rows of 96, 682 rows a block); a full-shape operand; per
	 * batch element: b batched (u), or an operand that varies by row
	 * but not by batch element (r, t: the rows are not one axis for
	 * it); f64 */
	setenv("TFG_EPI_BLOCK", "262144", 1);
	close_results(
	    "input x: f32[3, 700, 40]\ninput w: f32[40, 96]\n"
	    "input v: f32[40, 96]\ninput b: f32[96]\n"
	    "input s: f32[3, 700, 96]\ninput t: f32[700, 1]\n"
	    "input p: f64[2, 64, 48]\ninput q: f64[2, 48, 33]\n"
	    "input c: f64[64, 1]\n"
	    "y = sigmoid(x @ w + b)\nz = relu(x @ v) * s\n"
	    "r = (x * 2.0) @ w - t\nu = tanh(p @ q - c) * 2.0\n"
	    "session { print run(y, z, r, u, feed { x: load(\"x\"), "
	    "w: load(\"w\"), v: load(\"v\"), b: load(\"b\"), "
	    "s: load(\"s\"), t: load(\"t\"), p: load(\"p\"), "
	    "q: load(\"q\"), c: load(\"c\") }) }\n",
	    4, 1e-4);
	unsetenv("TFG_EPI_BLOCK");
}

/* conv2d and pool epilogues (codegen/cpu_conv.c), in blocks of 3
 * images of 8 x 8 x 16 f32 outputs (TFG_EPI_BLOCK), so 7 images make two
 * blocks and a rest: thin filters' kernels, a depthwise convolution, a
 * program that reads the convolution's own input, pools and relu's and
 * tanh's gradients after the pools' gradients, bit for bit; the GEMM
 * path (f64, 200 taps) within BLAS's tolerance. */
static void
t_epilogue_conv(void)
{
	setenv("TFG_EPI_BLOCK", "12288", 1);
	same_results(
	    "input x: f32[7, 8, 8, 2]\ninput f: f32[3, 3, 2, 16]\n"
	    "input b: f32[16]\ninput d: f32[2, 2, 2, 8]\n"
	    "input u: f32[7, 8, 8, 16]\ninput k: f32[1, 3, 16, 16]\n"
	    "y = relu(conv2d(x, f, 1, \"SAME\") + b)\n"
	    "z = depthwise_conv2d(x, d, [1, 1, 1, 1], \"SAME\") * 2.0 - b\n"
	    "q = maximum(conv2d(u, k, 1, \"SAME\") + u, 0.5)\n"
	    "session { print run(y, z, q, feed { x: load(\"x\"), "
	    "f: load(\"f\"), b: load(\"b\"), d: load(\"d\"), "
	    "u: load(\"u\"), k: load(\"k\") }) }\n", 3);
	free(run_src("input x: f32[7, 8, 8, 2]\ninput f: f32[3, 3, 2, 16]\n"
		     "y = relu(conv2d(x, f, 1, \"SAME\"))\n"
		     "session { print run(y, feed { x: load(\"x\"), "
		     "f: load(\"f\") }) }\n", 1, &(size_t){0}, 0));
	ASSERT_EQ(nconv_epi, 1);
	same_results(
	    "input u: f32[7, 8, 8, 16]\n"
	    "p = max_pool(u, 3, 1, \"SAME\") * 3.0 + 1.0\n"
	    "a = tanh(avg_pool(u, 3, 1, \"SAME\"))\n"
	    "gm = grad(reduce_sum(max_pool(relu(u), 2, 2, \"VALID\") * "
	    "2.0), u)\n"
	    "ga = grad(reduce_sum(square(avg_pool(tanh(u), 2, 2, "
	    "\"VALID\"))), u)\n"
	    "session { print run(p, a, gm, ga, feed { u: load(\"u\") }) }\n",
	    4);
	free(run_src("input u: f32[7, 8, 8, 16]\n"
		     "gm = grad(reduce_sum(max_pool(relu(u), 2, 2, \"VALID\") "
		     "* 2.0), u)\n"
		     "ga = grad(reduce_sum(square(avg_pool(tanh(u), 2, 2, "
		     "\"VALID\"))), u)\n"
		     "session { print run(gm, ga, feed { u: load(\"u\") }) }\n",
		     1, &(size_t){0}, 0));
	ASSERT(nconv_epi >= 2); /* both gradients, and maybe a pool */
	setenv("TFG_EPI_BLOCK", "20000", 1); /* 2 images of 8 x 8 x 16 f64 */
	close_results(
	    "input x: f64[5, 8, 8, 8]\ninput f: f64[5, 5, 8, 16]\n"
	    "input b: f64[16]\n"
	    "y = sigmoid(conv2d(x, f, 1, \"SAME\") + b)\n"
	    "session { print run(y, feed { x: load(\"x\"), "
	    "f: load(\"f\"), b: load(\"b\") }) }\n", 1, 1e-12);
	unsetenv("TFG_EPI_BLOCK");
}

TEST_MAIN({"float_chain", t_float_chain}, {"float_f64", t_float_f64},
	  {"int_ops", t_int_ops}, {"broadcast", t_broadcast},
	  {"reduce", t_reduce}, {"fold", t_fold}, {"cse", t_cse},
	  {"epilogue_loop", t_epilogue_loop},
	  {"epilogue_blas", t_epilogue_blas},
	  {"epilogue_conv", t_epilogue_conv})
