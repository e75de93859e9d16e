/*
 * runtime/gemm_sparse.c: f32 products whose left operand is mostly
 * zeros (rt_gemm_sparse; spec/design.md "Kernels", *Sparse left
 * operands*).
 *
 * Pixels are: 81% of an MNIST batch's are 0, and both large products of
 * its training step take the batch on the left, x @ w1 forward and
 * x^T @ dh for w1's gradient.  A dense product multiplies every zero;
 * this one walks the nonzeros of op(a) only.  c is computed TILE rows at
 * a time, summed in a scratch tile, over SEGQ rows of b at a time: the
 * nonzeros of each row of op(a) in the segment are listed first, with
 * their values (a compare to zero, a bit mask, a compress; no branch per
 * element), then each adds its multiple of a row of b to the row's
 * registers (runtime/gemm_sparse.inc).  Column blocks are up to VMAX
 * vectors wide; the last vector of a block is masked, so no load or
 * store passes the end of a row.  Threads take rows of c
 * (tfg_rt_parallel); every element is summed in order of k whatever
 * their number.
 *
 * It runs when it can only win and gives the same values BLAS could:
 *   - f32, b not transposed (its rows contiguous), at least PAR_MIN
 *     multiply-adds (runtime/gemm.c decides that);
 *   - the host has AVX-512F or AVX2 with FMA (else BLAS does it all);
 *   - at most SPARSE_MAX of op(a)'s elements are nonzero (a look at the
 *     first SAMPLE elements of a first, so that a dense a costs almost
 *     nothing more);
 *   - b holds no infinity or NaN: a skipped 0 * inf would be NaN in
 *     BLAS's sum.
 * A NaN or infinity in a is not zero, so it is summed as BLAS would.
 * The values differ from BLAS's only by rounding, as BLAS's own kernels
 * differ between machines: terms that are exactly zero are left out,
 * and sums run in another order.
 */
#include <cblas.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"

#define SPARSE_MAX 0.35 /* nonzero share of op(a), at most */
#define SAMPLE 4096     /* elements of a looked at first */
#define TILE 64         /* rows of c summed at a time */
#define SEGQ 64         /* rows of b at a time, for each tile */

/* For AVX2's LIST: byte i of lut8[bits] is the lane of the i-th set bit
 * of bits (isa_init fills it). */
static uint64_t lut8[256];

typedef struct Sp {
	int trans;
	int64_t m, n, k, lda, ldb, ldc;
	float alpha, beta;
	const float *a, *b;
	float *c;
} Sp;

/* The nonzeros of a tile's rows of op(a) in a segment of its columns:
 * row r's columns q[r][0 .. n[r]) (in order) and values v[r][..]. */
typedef struct Lists {
	int n[TILE];
	int32_t q[TILE][SEGQ + 16];
	float v[TILE][SEGQ + 16];
} Lists;

/* ----------------------------------------------------------- AVX-512 */
#define SP(name) name##_avx512
#define SP_TARGET __attribute__((target("avx512f,avx512vl,avx2,fma,bmi")))
#define VEC __m512
#define W 16
#define VMAX 8
#define SP_EACH_CASE(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)
#define MASK __mmask16
#define TAILMASK(n) ((__mmask16)((1u << (n)) - 1))
#define ZERO() _mm512_setzero_ps()
#define BCAST(x) _mm512_set1_ps(x)
#define LOAD(p) _mm512_loadu_ps(p)
#define LOADM(p, m) _mm512_maskz_loadu_ps(m, p)
#define STORE(p, v) _mm512_storeu_ps(p, v)
#define STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define NZV(x, n)                                                             \
	((unsigned)_mm512_mask_cmp_ps_mask(TAILMASK(n), x, ZERO(), _CMP_NEQ_UQ))
#define NZ(p, n) NZV(LOADM(p, TAILMASK(n)), n)
#define NONFINITE(p, n)                                                       \
	((unsigned)_mm512_mask_cmp_ps_mask(                                   \
	    TAILMASK(n), _mm512_mul_ps(LOADM(p, TAILMASK(n)), ZERO()), ZERO(), \
	    _CMP_NEQ_UQ))
#define LIST(out, bits, base)                                                 \
	_mm512_storeu_si512(                                                  \
	    out, _mm512_maskz_compress_epi32(                                 \
		     (__mmask16)(bits),                                       \
		     _mm512_add_epi32(_mm512_set1_epi32(base),                \
				      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6,  \
							7, 8, 9, 10, 11, 12,  \
							13, 14, 15))))
#define LISTV(out, bits, x)                                                   \
	_mm512_storeu_ps(out, _mm512_maskz_compress_ps((__mmask16)(bits), x))
#include "runtime/gemm_sparse.inc" /* which undefines these */

/* -------------------------------------------------------------- AVX2 */
#define SP(name) name##_avx2
#define SP_TARGET __attribute__((target("avx2,fma,bmi")))
#define VEC __m256
#define W 8
#define VMAX 13 /* 13 accumulators of 16 registers: 104 columns */
#define SP_EACH_CASE(X)                                                       \
	X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#define MASK __m256i
#define TAILMASK(n)                                                           \
	_mm256_cmpgt_epi32(_mm256_set1_epi32(n),                              \
			   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define ZERO() _mm256_setzero_ps()
#define BCAST(x) _mm256_set1_ps(x)
#define LOAD(p) _mm256_loadu_ps(p)
#define LOADM(p, m) _mm256_maskload_ps(p, m)
#define STORE(p, v) _mm256_storeu_ps(p, v)
#define STOREM(p, m, v) _mm256_maskstore_ps(p, m, v)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define NZV(x, n)                                                             \
	((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(x, ZERO(), _CMP_NEQ_UQ)) & \
	 ((1u << (n)) - 1))
#define NZ(p, n) NZV(LOADM(p, TAILMASK(n)), n)
#define NONFINITE(p, n)                                                       \
	((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(                          \
	     _mm256_mul_ps(LOADM(p, TAILMASK(n)), ZERO()), ZERO(),            \
	     _CMP_NEQ_UQ)) &                                                  \
	 ((1u << (n)) - 1))
#define LIST(out, bits, base)                                                 \
	_mm256_storeu_si256(                                                  \
	    (__m256i *)(out),                                                 \
	    _mm256_add_epi32(_mm256_set1_epi32(base),                         \
			     _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(           \
				 (long long)lut8[bits]))))
#define LISTV(out, bits, x)                                                   \
	_mm256_storeu_ps(out, _mm256_permutevar8x32_ps(                        \
				  x, _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(  \
					 (long long)lut8[bits]))))
#include "runtime/gemm_sparse.inc" /* which undefines these */

/* ------------------------------------------------------------ driver */

uint64_t rt_gemm_sparse_runs;

typedef struct Isa {
	int64_t (*count)(const float *, int64_t, int64_t, int64_t, int64_t);
	int (*nonfinite)(const float *, int64_t, int64_t, int64_t);
	void (*columns)(const Sp *, Lists *, float *, int64_t, int64_t);
} Isa;

static const Isa isa_avx512 = {count_avx512, nonfinite_avx512,
			       columns_avx512};
static const Isa isa_avx2 = {count_avx2, nonfinite_avx2, columns_avx2};

static const Isa *isa_now; /* the kernels in use, or NULL */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static int has_avx512, has_avx2;

/* The host's best kernels; $TFG_SPARSE_GEMM=0 turns them off, =avx2
 * takes AVX2's on an AVX-512 host (to compare: bench/kernels.sh). */
static void
isa_init(void)
{
	const char *env = getenv("TFG_SPARSE_GEMM");

	for (unsigned bits = 0; bits < 256; bits++) {
		uint64_t l = 0;
		int n = 0;
		for (int i = 0; i < 8; i++)
			if (bits >> i & 1)
				l |= (uint64_t)i << (8 * n++);
		lut8[bits] = l;
	}
	__builtin_cpu_init();
	has_avx512 = __builtin_cpu_supports("avx512f") &&
		     __builtin_cpu_supports("avx512vl");
	has_avx2 = __builtin_cpu_supports("avx2") &&
		   __builtin_cpu_supports("fma");
	isa_now = has_avx512 ? &isa_avx512 : has_avx2 ? &isa_avx2 : NULL;
	if (env && strcmp(env, "0") == 0)
		isa_now = NULL;
	else if (env && strcmp(env, "avx2") == 0 && has_avx2)
		isa_now = &isa_avx2;
}

int
rt_gemm_sparse_isa(const char *name)
{
	const Isa *to = NULL;

	pthread_once(&isa_once, isa_init);
	if (strcmp(name, "avx512") == 0 && has_avx512)
		to = &isa_avx512;
	else if (strcmp(name, "avx2") == 0 && has_avx2)
		to = &isa_avx2;
	else if (strcmp(name, "off") != 0)
		return 0;
	__atomic_store_n(&isa_now, to, __ATOMIC_RELAXED);
	return 1;
}

/* Rows [b, e) of c (a TfgKernelFn; bases[0] the Sp, bases[1] the
 * Isa), with their own Lists and tile (73 KiB: not on the stack). */
static void
rows_of_c(void *const *bases, int64_t b, int64_t e)
{
	const Sp *s = bases[0];
	const Isa *isa = bases[1];
	Lists *L = aligned_alloc(64, sizeof(Lists) + TILE * 128 * 4);

	if (L == NULL) { /* no memory for them: these rows as BLAS does */
		cblas_sgemm(CblasRowMajor,
			    s->trans ? CblasTrans : CblasNoTrans, CblasNoTrans,
			    (int)(e - b), (int)s->n, (int)s->k, s->alpha,
			    s->a + (s->trans ? b : b * s->lda), (int)s->lda,
			    s->b, (int)s->ldb, s->beta, s->c + b * s->ldc,
			    (int)s->ldc);
		return;
	}
	isa->columns(s, L, (float *)(L + 1), b, e);
	free(L);
}

int
rt_gemm_sparse(int trans, int64_t m, int64_t n, int64_t k, double alpha,
	       const float *a, int64_t lda, const float *b, int64_t ldb,
	       double beta, float *c, int64_t ldc)
{
	const Isa *isa;
	Sp s = {trans, m, n, k, lda, ldb, ldc, (float)alpha, (float)beta,
		a, b, c};
	int64_t rows = trans ? k : m, cols = trans ? m : k, look, nz;
	int64_t most = (int64_t)(SPARSE_MAX * (double)(m * k));
	void *bases[2] = {&s, NULL};

	pthread_once(&isa_once, isa_init);
	isa = __atomic_load_n(&isa_now, __ATOMIC_RELAXED);
	bases[1] = (void *)isa;
	if (!isa || m <= 0 || n <= 0 || k <= 0 || m > INT32_MAX ||
	    k > INT32_MAX || n > INT32_MAX)
		return 0; /* the lists hold int32 indices */
	look = (SAMPLE + cols - 1) / cols;
	if (look > rows)
		look = rows;
	nz = isa->count(a, look, cols, lda, INT64_MAX);
	if (nz > (int64_t)(1.5 * SPARSE_MAX * (double)(look * cols)))
		return 0;
	if (nz + isa->count(a + look * lda, rows - look, cols, lda, most - nz) >
	    most)
		return 0;
	if (isa->nonfinite(b, k, n, ldb))
		return 0;
	tfg_rt_parallel(rows_of_c, bases, m);
	__atomic_fetch_add(&rt_gemm_sparse_runs, 1, __ATOMIC_RELAXED);
	return 1;
}
