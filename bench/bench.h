/*
 * bench/bench.h: what bench/kernel.c and bench/matmul.c share.  Each is
 * one translation unit linked with a part from `tfgc compile`, and times
 * the part's function alone against a reference in the same process:
 *
 *   tfg_rt_recv(_ref),        no-ops that the part's object calls, so a
 *   tfg_rt_send, tfg_rt_flush call of the part is its kernel alone,
 *                             nothing fed or fetched (the inputs are
 *                             whatever the arena holds)
 *   bench_now_s               CLOCK_MONOTONIC, in seconds
 *   bench_median              sorts a run's times, returns the median
 *   bench_alloc               aligned memory, huge pages when large,
 *                             or exit 2
 *
 * Defines tfg_rt_recv, tfg_rt_recv_ref, tfg_rt_send and tfg_rt_flush:
 * include it in one file per binary.
 */
#ifndef TFG_BENCH_BENCH_H
#define TFG_BENCH_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

struct RtCtx;

int
tfg_rt_recv(struct RtCtx *c, uint32_t key, void *dst)
{
	(void)c, (void)key, (void)dst;
	return 0;
}

int
tfg_rt_recv_ref(struct RtCtx *c, uint32_t key, void *dst, void **data)
{
	(void)c, (void)key;
	*data = dst; /* the arena's slot, as it is */
	return 0;
}

int
tfg_rt_send(struct RtCtx *c, uint32_t key, const void *src)
{
	(void)c, (void)key, (void)src;
	return 0;
}

void
tfg_rt_flush(struct RtCtx *c)
{
	(void)c;
}

static inline double
bench_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int
bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts t[0..n) (n > 0) and returns t[n / 2]. */
static inline double
bench_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, bench_cmp);
	return t[n / 2];
}

/* Allocated as runtime/aot.c's rt_arena_alloc does: 64-byte aligned,
 * and from 8 MiB on 2 MiB-aligned with transparent huge pages asked for
 * (without them, two buffers of 256 MiB were up to 25% apart in speed on
 * the VM, TLB misses, so that which one a side got decided the ratio);
 * exits 2 when out of memory. */
static inline void *
bench_alloc(size_t nbytes)
{
	size_t al = nbytes >= ((size_t)8 << 20) ? (size_t)2 << 20 : 64;
	size_t n = (nbytes + al - 1) / al * al;
	void *p = aligned_alloc(al, n ? n : al);
	if (!p) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	if (al > 64)
		(void)madvise(p, n, MADV_HUGEPAGE);
	return p;
}

#endif /* TFG_BENCH_BENCH_H */
