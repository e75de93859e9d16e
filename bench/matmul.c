/*
 * bench/matmul.c: a matmul compiled by `tfgc compile` (bench/matmul.sh
 * makes mm.o and mm.h from `c = a @ b`, f32[N, N]) against
 * cblas_sgemm called directly on buffers of the same size.
 *
 * The part runs on an arena filled once with random values; bench/bench.h
 * defines tfg_rt_recv(_ref) and tfg_rt_send as no-ops (libtfg is linked only
 * for tfg_rt_gemm and its thread pool), so the time is the part's own:
 * the product, nothing copied.  Runs alternate between the two so that
 * both see the same machine; the figure is the median of REPS runs each
 * (a run of small products repeats the call, to last at least about
 * 50 us).  The part runs OpenBLAS on one thread per block of the pool
 * (runtime/gemm.c) and stops OpenBLAS's own threads; the reference is
 * OpenBLAS as a program calls it, on its own threads, one per core: they
 * are made again (outside the timing) before its runs and stopped after,
 * so that they do not spin beside the part's.
 *
 * With DENSITY (0 < DENSITY < 1), each element of the operands (and of
 * the part's arena, which holds its copies) is zero with probability
 * 1 - DENSITY, as an MNIST batch's pixels are (19% nonzero): the part
 * then takes runtime/gemm_sparse.c's path, cblas_sgemm the dense one.
 *
 *   usage: matmul M K N REPS [DENSITY]
 *   prints one line of GFLOP/s (of the dense product's 2 M K N flop)
 *   and the ratio
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/bench.h"
#include "mm.h"

int blas_thread_shutdown_(void); /* OpenBLAS's, as runtime/gemm.c */

static float *
rand_buf(size_t nbytes)
{
	float *p = bench_alloc(nbytes);
	for (size_t i = 0; i < nbytes / sizeof *p; i++)
		p[i] = (float)rand() / (float)RAND_MAX;
	return p;
}

/* Each of p[0..n) zero with probability 1 - density. */
static void
thin(float *p, size_t n, double density)
{
	for (size_t i = 0; i < n; i++)
		if ((double)rand() / RAND_MAX >= density)
			p[i] = 0;
}

int
main(int argc, char **argv)
{
	int m = argc > 3 ? atoi(argv[1]) : 0, k = argc > 3 ? atoi(argv[2]) : 0;
	int n = argc > 3 ? atoi(argv[3]) : 0;
	int reps = argc > 4 ? atoi(argv[4]) : 0;
	double density = argc > 5 ? atof(argv[5]) : 1.0;
	if (m <= 0 || k <= 0 || n <= 0 || reps <= 0 || !(density > 0) ||
	    density > 1) {
		fprintf(stderr, "usage: matmul M K N REPS [DENSITY]\n");
		return 2;
	}
	float *arena = rand_buf(mm_arena_0);
	float *a = rand_buf((size_t)m * k * 4);
	float *b = rand_buf((size_t)k * n * 4);
	float *c = rand_buf((size_t)m * n * 4);
	if (density < 1) {
		thin(arena, mm_arena_0 / 4, density);
		thin(a, (size_t)m * k, density);
		thin(b, (size_t)k * n, density);
	}
	double *tp = calloc((size_t)reps, sizeof *tp);
	double *tb = calloc((size_t)reps, sizeof *tb);
	double flop = 2.0 * m * (double)k * n;
	int inner = flop < 1e7 ? (int)(1e7 / flop) + 1 : 1; /* >= ~50 us */

	int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);

	if (!tp || !tb)
		return 2;
	mm_part_0(NULL, (char *)arena); /* warm up both */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
		    a, k, b, n, 0.0f, c, n);
	for (int r = 0; r < reps; r++) {
		double t0 = bench_now_s();
		for (int i = 0; i < inner; i++)
			if (mm_part_0(NULL, (char *)arena) != 0)
				return 1;
		double ta = bench_now_s();
		openblas_set_num_threads(cores);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k,
			    1.0f, a, k, b, n, 0.0f, c, n); /* its threads up */
		double t1 = bench_now_s();
		for (int i = 0; i < inner; i++)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				    m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
		double t2 = bench_now_s();
		openblas_set_num_threads(1);
		blas_thread_shutdown_();
		tp[r] = (ta - t0) / inner;
		tb[r] = (t2 - t1) / inner;
	}
	double gp = flop / bench_median(tp, reps) / 1e9;
	double gb = flop / bench_median(tb, reps) / 1e9;
	printf("matmul f32[%d, %d] @ f32[%d, %d]%s: tfg %.1f GFLOP/s, "
	       "cblas_sgemm %.1f GFLOP/s, ratio %.3f\n",
	       m, k, k, n, density < 1 ? " sparse" : "", gp, gb, gp / gb);
	free(arena), free(a), free(b), free(c), free(tp), free(tb);
	return 0;
}
