/*
 * runtime/gemm.c: large float matrix products (tfg_rt_gemm, spec/design.md
 * "Kernels"), which generated parts call for a matmul that codegen sends
 * to BLAS (codegen/cpu_shape.c).
 *
 * OpenBLAS runs each call on one thread here: a product of at least
 * PAR_MIN multiply-adds is cut into blocks of rows or columns of c, and
 * the threads of the kernel pool (runtime/pool.c) take them, each block
 * one cblas_*gemm call on the thread that takes it.  OpenBLAS's own
 * threads start and stop around every call and its hand-off sleeps,
 * which made the 100x784x100 products of the MNIST step slower on two
 * threads than on one; cut here, with the pool's spinning hand-off, two
 * threads take little more than half the time of one (bench/README.md).
 *
 * The cut depends on the shape alone, never on the threads, because
 * OpenBLAS's sums do depend on the size of the call (0.3.21 on Zen 3:
 * 4,653 of the 102,400 elements of a 100x1024x3136 sgemm differed in
 * their last bits when its rows were computed as two calls of 50), so
 * the same blocks on any number of threads give the same result.
 * Each block packs its own copy of the operand it shares with the
 * others, so the cut is the one whose shared operand is the smaller:
 * columns when m <= n (each block packs all of op(a), m x k), else rows
 * (all of op(b)): cutting the rows of Deep MNIST's [100, 3136] x [3136,
 * 1024] in two made each half pack the 12.8 MB of b again (one thread:
 * 12.4 ms against 10.2 whole; its columns in two, 10.8).  GEMM_PARTS
 * blocks at most, BLOCK_MIN rows or columns each at least: four keep
 * two threads (these machines' cores) even and cost one thread a few
 * per cent.
 *
 * An f32 product whose left operand is mostly zeros goes to
 * runtime/gemm_sparse.c first, which walks its nonzeros instead.
 */
#include <cblas.h>
#include <pthread.h>

#include "runtime/rt_int.h"

#define PAR_MIN TFG_LONG_WORK /* multiply-adds: about 10 us on one core */
#define BLOCK_MIN 16      /* rows or columns per block, at least */
#define GEMM_PARTS 4      /* blocks, at most */

typedef struct Gemm {
	int32_t dtype, trans;
	int64_t m, n, k, lda, ldb, ldc, parts;
	int cols; /* blocks of columns, not of rows */
	double alpha, beta;
	const void *a, *b;
	void *c;
} Gemm;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

/* OpenBLAS's own (libopenblas, not in cblas.h): stops and joins its
 * threads, as it does before a fork.  With one thread set they are not
 * made again. */
int blas_thread_shutdown_(void);

/* OpenBLAS on the caller's thread from now on, and its threads gone:
 * left alone, each spins on sched_yield for a while after every wake,
 * on the cores the pool computes on (a step of the MNIST MLP took 510
 * us so, 285 without them). */
static void
rt_blas_one_thread(void)
{
	openblas_set_num_threads(1);
	blas_thread_shutdown_();
}

/* c[r0..r1) or c[.., r0..r1) of g, on this thread. */
static void
block(const Gemm *g, int64_t r0, int64_t r1)
{
	size_t sz = g->dtype == TFG_F32 ? sizeof(float) : sizeof(double);
	const char *a = g->a, *b = g->b;
	char *c = g->c;
	int64_t m = g->m, n = g->n;

	if (g->cols) { /* columns r0..r1 of op(b) and c */
		b += (size_t)(g->trans & 2 ? r0 * g->ldb : r0) * sz;
		c += (size_t)r0 * sz;
		n = r1 - r0;
	} else { /* rows r0..r1 of op(a) and c */
		a += (size_t)(g->trans & 1 ? r0 : r0 * g->lda) * sz;
		c += (size_t)(r0 * g->ldc) * sz;
		m = r1 - r0;
	}
	if (g->dtype == TFG_F32)
		cblas_sgemm(CblasRowMajor, g->trans & 1 ? CblasTrans
			    : CblasNoTrans, g->trans & 2 ? CblasTrans
			    : CblasNoTrans, (int)m, (int)n, (int)g->k,
			    (float)g->alpha, (const float *)a, (int)g->lda,
			    (const float *)b, (int)g->ldb, (float)g->beta,
			    (float *)c, (int)g->ldc);
	else
		cblas_dgemm(CblasRowMajor, g->trans & 1 ? CblasTrans
			    : CblasNoTrans, g->trans & 2 ? CblasTrans
			    : CblasNoTrans, (int)m, (int)n, (int)g->k,
			    g->alpha, (const double *)a, (int)g->lda,
			    (const double *)b, (int)g->ldb, g->beta,
			    (double *)c, (int)g->ldc);
}

/* Blocks [b, e) of the product at bases[0] (a TfgKernelFn). */
static void
blocks(void *const *bases, int64_t b, int64_t e)
{
	const Gemm *g = bases[0];
	int64_t len = g->cols ? g->n : g->m;
	for (int64_t i = b; i < e; i++)
		block(g, len * i / g->parts, len * (i + 1) / g->parts);
}

void
rt_gemm_here(int32_t dtype, int32_t trans, int64_t m, int64_t n, int64_t k,
	     double alpha, const void *a, int64_t lda, const void *b,
	     int64_t ldb, double beta, void *c, int64_t ldc)
{
	Gemm g = {dtype, trans, m, n, k, lda, ldb, ldc, 1, 0, alpha, beta,
		  a, b, c};

	pthread_once(&blas_once, rt_blas_one_thread);
	if (m > 0 && n > 0)
		block(&g, 0, m);
}

TFG_API void
tfg_rt_gemm(int32_t dtype, int32_t trans, int64_t m, int64_t n, int64_t k,
	    double alpha, const void *a, int64_t lda, const void *b,
	    int64_t ldb, double beta, void *c, int64_t ldc)
{
	Gemm g = {dtype, trans, m, n, k, lda, ldb, ldc, 1, 0, alpha, beta,
		  a, b, c};
	void *base = &g;

	pthread_once(&blas_once, rt_blas_one_thread);
	if (m > 0 && n > 0 && k > 0 && m * n * k >= PAR_MIN) {
		int64_t len;

		if (dtype == TFG_F32 && !(trans & 2) &&
		    rt_gemm_sparse(trans & 1, m, n, k, alpha, a, lda, b, ldb,
				   beta, c, ldc))
			return;
		g.cols = m <= n;
		len = g.cols ? n : m;
		g.parts = len / BLOCK_MIN < GEMM_PARTS ? len / BLOCK_MIN
						       : GEMM_PARTS;
		g.parts = g.parts < 1 ? 1 : g.parts;
	}
	if (g.parts > 1)
		tfg_rt_parallel(blocks, &base, g.parts);
	else
		block(&g, 0, g.m);
}
