/*
 * tests/unit/sparse_gemm_test.c: f32 products whose left operand is
 * mostly zeros (runtime/gemm_sparse.c, rt_gemm_sparse), against a plain
 * C reference summed in long double, with each instruction set the host
 * has (AVX-512, AVX2).
 *
 * Shapes cross the kernels' edges: rows of c in tiles of 64 and chunks of
 * the pool, columns in blocks of 8 vectors with a masked tail (n below,
 * at and above 128), op(a)'s columns in segments of 64; both transposes
 * of a, padded rows (lda, ldc), alpha and beta, beta = 0 over a c of
 * NaNs (not read, as BLAS).  Then: the same bits on 1, 2 and 3 threads; a
 * NaN or infinity in a summed as BLAS would; b with an infinity or NaN,
 * a dense a, and the path turned off all left to BLAS; tfg_rt_gemm takes
 * the sparse path for a large sparse product and gives BLAS's values
 * for it within rounding.
 *
 * Tolerance: within 4 (k + 2) eps of the sum of |terms| (as blas_test).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/rt_int.h"
#include "tests/unit/test.h"

static uint64_t seed = 88172645463325252ull;

static uint64_t
next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static float
uniform(void) /* in [-1, 1) */
{
	return (float)((double)(next() >> 11) / 9007199254740992.0 * 2 - 1);
}

/* rows x cols, row length ld >= cols (all of it filled); each element
 * nonzero with probability dens. */
static float *
matrix(int64_t rows, int64_t cols, int64_t ld, double dens)
{
	(void)cols;
	float *m = malloc((size_t)(rows * ld) * sizeof(float) + 64);
	for (int64_t i = 0; i < rows * ld; i++)
		m[i] = (double)(next() >> 11) / 9007199254740992.0 < dens
			   ? uniform()
			   : 0.0f;
	return m;
}

static const char *isas[2] = {"avx512", "avx2"};
static int nchecked;

/* c (m x n, ldc) against alpha op(a) b + beta c0. */
static void
compare(const char *isa, int trans, int64_t m, int64_t n, int64_t k,
	double alpha, const float *a, int64_t lda, const float *b,
	int64_t ldb, double beta, const float *c0, const float *c,
	int64_t ldc)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			long double s = 0, mag = 0, want;
			for (int64_t q = 0; q < k; q++) {
				long double p =
				    (long double)(trans ? a[q * lda + i]
							: a[i * lda + q]) *
				    b[q * ldb + j];
				s += p;
				mag += fabsl(p);
			}
			want = alpha * s;
			mag = fabsl(alpha) * mag;
			if (beta != 0) {
				want += beta * c0[i * ldc + j];
				mag += fabsl(beta * c0[i * ldc + j]);
			}
			nchecked++;
			if (!(fabsl(c[i * ldc + j] - want) <=
			      4 * (k + 2) * 6e-8L * mag + 1e-30L))
				TEST_FAIL_("%s trans %d %lldx%lldx%lld [%lld, "
					   "%lld]: %g != %Lg",
					   isa, trans, (long long)m,
					   (long long)n, (long long)k,
					   (long long)i, (long long)j,
					   c[i * ldc + j], want);
		}
}

/* One product through rt_gemm_sparse with isa's kernels, checked. */
static void
one(const char *isa, int trans, int64_t m, int64_t n, int64_t k,
    double dens, int pad, double alpha, double beta)
{
	int64_t lda = (trans ? m : k) + pad, ldb = n + pad, ldc = n + pad;
	float *a = trans ? matrix(k, m, lda, dens) : matrix(m, k, lda, dens);
	float *b = matrix(k, n, ldb, 1.0);
	float *c = matrix(m, n, ldc, 1.0), *c0 = malloc((size_t)(m * ldc) * 4);

	if (beta == 0)
		for (int64_t i = 0; i < m * ldc; i++)
			c[i] = NAN;
	memcpy(c0, c, (size_t)(m * ldc) * 4);
	ASSERT_EQ(rt_gemm_sparse(trans, m, n, k, alpha, a, lda, b, ldb, beta,
				 c, ldc),
		  1);
	compare(isa, trans, m, n, k, alpha, a, lda, b, ldb, beta, c0, c, ldc);
	for (int64_t i = 0; i < m; i++) /* the padding is not written */
		for (int64_t j = n; j < ldc; j++)
			ASSERT(memcmp(&c[i * ldc + j], &c0[i * ldc + j], 4) ==
			       0);
	free(a);
	free(b);
	free(c);
	free(c0);
}

static void
t_shapes(void)
{
	static const int64_t shapes[][3] = {
	    {100, 100, 784}, {784, 100, 100}, {37, 300, 129}, {130, 17, 520},
	    {65, 128, 64},   {1, 5, 300},       {200, 129, 65}, {3, 257, 1000},
	};
	int ran = 0;
	/* the first product sizes the pool: 3 threads */
	ASSERT_EQ(tfg_set_threads(3), 3);
	for (int s = 0; s < 2; s++) {
		if (!rt_gemm_sparse_isa(isas[s]))
			continue; /* the host has not the set */
		ran++;
		for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
			for (int trans = 0; trans < 2; trans++) {
				const int64_t *d = shapes[i];
				one(isas[s], trans, d[0], d[1], d[2], 0.2, 0,
				    1.0, 0.0);
				one(isas[s], trans, d[0], d[1], d[2], 0.05, 3,
				    -0.5, 2.0);
				one(isas[s], trans, d[0], d[1], d[2], 0.0, 1,
				    1.0, 0.0);
			}
	}
	if (!rt_gemm_sparse_isa("avx512"))
		rt_gemm_sparse_isa("avx2");
	if (!ran)
		printf("  (no AVX2 or AVX-512 here: BLAS does every product)\n");
}

/* Whether the host has sparse kernels (the best it has, now chosen);
 * else says so, and the test has nothing to check. */
static int
kernels_here(void)
{
	if (rt_gemm_sparse_isa("avx512") || rt_gemm_sparse_isa("avx2"))
		return 1;
	printf("  (no sparse kernels here)\n");
	return 0;
}

/* The same bits on 1, 2 and 3 threads, each transpose. */
static void
t_threads(void)
{
	int64_t m = 300, n = 100, k = 400;
	if (!kernels_here())
		return;
	for (int trans = 0; trans < 2; trans++) {
		float *a = matrix(trans ? k : m, trans ? m : k, trans ? m : k,
				  0.15);
		float *b = matrix(k, n, n, 1.0), *c[3];
		for (int t = 1; t <= 3; t++) {
			c[t - 1] = malloc((size_t)(m * n) * 4);
			ASSERT_EQ(tfg_set_threads(t), t);
			ASSERT_EQ(rt_gemm_sparse(trans, m, n, k, 1.0, a,
						 trans ? m : k, b, n, 0.0,
						 c[t - 1], n), 1);
		}
		ASSERT(memcmp(c[0], c[1], (size_t)(m * n) * 4) == 0);
		ASSERT(memcmp(c[0], c[2], (size_t)(m * n) * 4) == 0);
		for (int t = 0; t < 3; t++)
			free(c[t]);
		free(a);
		free(b);
	}
	ASSERT_EQ(tfg_set_threads(3), 3);
}

/* A NaN or an infinity in a is not zero: its row of c is NaN or
 * infinite, as BLAS's sum makes it. */
static void
t_nonfinite_a(void)
{
	int64_t m = 64, n = 40, k = 200;
	if (!kernels_here())
		return;
	float *a = matrix(m, k, k, 0.1), *b = matrix(k, n, n, 1.0);
	float *c = malloc((size_t)(m * n) * 4);

	for (int64_t q = 0; q < k; q++)
		a[5 * k + q] = a[9 * k + q] = 0;
	a[5 * k + 17] = NAN;
	a[9 * k + 100] = INFINITY;
	for (int64_t j = 0; j < n; j++)
		b[100 * n + j] = 1.0f; /* inf * 1 = inf in each column */
	ASSERT_EQ(rt_gemm_sparse(0, m, n, k, 1.0, a, k, b, n, 0.0, c, n), 1);
	for (int64_t j = 0; j < n; j++) {
		ASSERT(isnan(c[5 * n + j]));
		ASSERT(isinf(c[9 * n + j]) && c[9 * n + j] > 0);
	}
	free(a);
	free(b);
	free(c);
}

/* Left to BLAS (0): b with an infinity or a NaN (a skipped 0 * inf would
 * hide BLAS's NaN), a that is not sparse, the kernels off. */
static void
t_declines(void)
{
	int64_t m = 100, n = 100, k = 784;
	if (!kernels_here())
		return;
	float *a = matrix(m, k, k, 0.2), *b = matrix(k, n, n, 1.0);
	float *dense = matrix(m, k, k, 0.6), *c = malloc((size_t)(k * n) * 4);

	ASSERT_EQ(rt_gemm_sparse(0, m, n, k, 1.0, a, k, b, n, 0.0, c, n), 1);
	b[783 * n + 99] = INFINITY;
	ASSERT_EQ(rt_gemm_sparse(0, m, n, k, 1.0, a, k, b, n, 0.0, c, n), 0);
	b[783 * n + 99] = 1.0f;
	b[50 * n + 7] = NAN; /* in the first m rows: a^T b reads those */
	ASSERT_EQ(rt_gemm_sparse(1, k, n, m, 1.0, a, k, b, n, 0.0, c, n), 0);
	b[50 * n + 7] = 1.0f;
	ASSERT_EQ(rt_gemm_sparse(1, k, n, m, 1.0, a, k, b, n, 0.0, c, n), 1);
	ASSERT_EQ(rt_gemm_sparse(0, m, n, k, 1.0, dense, k, b, n, 0.0, c, n),
		  0);
	/* dense after a sparse first look: the full count declines it */
	for (int64_t i = 0; i < 10 * k; i++)
		dense[i] = 0;
	ASSERT_EQ(rt_gemm_sparse(0, m, n, k, 1.0, dense, k, b, n, 0.0, c, n),
		  0);
	ASSERT_EQ(rt_gemm_sparse_isa("off"), 1);
	ASSERT_EQ(rt_gemm_sparse(0, m, n, k, 1.0, a, k, b, n, 0.0, c, n), 0);
	ASSERT(rt_gemm_sparse_isa("avx512") || rt_gemm_sparse_isa("avx2"));
	free(a);
	free(b);
	free(dense);
	free(c);
}

/* tfg_rt_gemm: a large f32 product with a sparse a runs here, within
 * rounding of BLAS's values; a transposed b or f64 goes to BLAS. */
static void
t_route(void)
{
	int64_t m = 100, n = 100, k = 784;
	if (!kernels_here())
		return;
	float *a = matrix(m, k, k, 0.2), *b = matrix(k, n, n, 1.0);
	float *c = malloc((size_t)(m * n) * 4), *c0 = malloc((size_t)(m * n) * 4);
	uint64_t runs = rt_gemm_sparse_runs;

	tfg_rt_gemm(TFG_F32, 0, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
	ASSERT_EQ(rt_gemm_sparse_runs, runs + 1);
	compare("route", 0, m, n, k, 1.0, a, k, b, n, 0.0, c0, c, n);
	tfg_rt_gemm(TFG_F32, 2, m, n, k, 1.0, a, k, b, k, 0.0, c, n);
	ASSERT_EQ(rt_gemm_sparse_runs, runs + 1);
	ASSERT_EQ(rt_gemm_sparse_isa("off"), 1);
	tfg_rt_gemm(TFG_F32, 0, m, n, k, 1.0, a, k, b, n, 0.0, c0, n);
	ASSERT_EQ(rt_gemm_sparse_runs, runs + 1);
	compare("blas", 0, m, n, k, 1.0, a, k, b, n, 0.0, c, c0, n);
	ASSERT(rt_gemm_sparse_isa("avx512") || rt_gemm_sparse_isa("avx2"));
	free(a);
	free(b);
	free(c);
	free(c0);
}

static void
t_count(void)
{
	/* 839,636 elements a kernel set: a host with AVX2 alone (a Zen 3)
	   runs one set, one with AVX-512 both */
	ASSERT(nchecked > 800000 || !rt_gemm_sparse_isa("avx2"));
}

TEST_MAIN({"shapes", t_shapes}, {"threads", t_threads},
	  {"nonfinite_a", t_nonfinite_a}, {"declines", t_declines},
	  {"route", t_route}, {"count", t_count})
