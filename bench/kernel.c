/*
 * bench/kernel.c: one part compiled by `tfgc compile --name k` (k.o and
 * k.h, made by bench/kernels.sh) timed against the machine's own limit,
 * measured in the same process: a STREAM-style copy or a read-only sum
 * loop over given bytes, both with 2 pthreads, or a second part (r.o,
 * r.h, built with -DREF_PART) such as the bare product under an
 * epilogue.  The copy is the fastest of three (each timed, the best
 * median taken): a plain loop, glibc's memcpy and a loop of
 * non-temporal stores, so that a part that streams its output is
 * compared with the machine's best copy, not with a cached one.
 *
 * How the part is timed: bench/bench.h defines tfg_rt_recv(_ref) and
 * tfg_rt_send as no-ops (this links libtfg.a only for tfg_rt_parallel,
 * the thread pool of runtime/pool.c, whose object needs nothing else),
 * so a call of k_part_0 is the kernel alone, nothing fed or fetched:
 * the inputs are whatever the arena holds, filled once with values in
 * [-RANGE, RANGE) (4 by default; the matmul epilogue uses 0.1, so that
 * x @ w + b stays near 1 as in a network, rather than deep in exp's
 * subnormal results).  Runs alternate between the part and its
 * reference so that both see the same machine; each figure is the
 * median of REPS runs after one warm-up run of each.
 *
 *   usage: kernel NAME REF BYTES REPS GOAL [RANGE [LABEL]]
 *     REF    copy: 2 threads copy BYTES (read BYTES, write BYTES), the
 *                  fastest of loop, memcpy and non-temporal stores
 *            sum:  2 threads sum BYTES of floats
 *            part: the reference part r (built with -DREF_PART), named
 *                  LABEL in the row ("bare part" by default)
 *   prints one row of the table of bench/run.sh:
 *     | NAME | tfg ms (GB/s) | reference ms (GB/s) | ratio | GOAL |
 *   where the GB/s count BYTES (copy: twice, read and written) and ratio
 *   is reference time / tfg time (1.0: as fast as the reference).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#include <sys/mman.h>

#include "bench/bench.h"
#include "k.h"
#ifdef REF_PART
#include "r.h"
#endif

static float range = 4.0f;

/* Every buffer, the part's arena as the references', comes from
 * bench_alloc, paged as the runtime's arenas are. */
static float *
buf(size_t nbytes)
{
	float *p = bench_alloc(nbytes);
	uint32_t s = 12345;
	if (!p) {
		fprintf(stderr, "kernel: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < nbytes / sizeof *p; i++) {
		s = s * 1664525u + 1013904223u;
		p[i] = ((float)(s >> 8) / 8388608.0f - 1.0f) * range;
	}
	return p;
}

/* ------------------------------------------ the references, 2 pthreads */

typedef struct Slice {
	const float *src;
	float *dst;
	size_t n;
	float sum;
} Slice;

static void *
copy_slice(void *arg)
{
	Slice *s = arg;
	for (size_t i = 0; i < s->n; i++)
		s->dst[i] = s->src[i];
	return NULL;
}

static void *
memcpy_slice(void *arg)
{
	Slice *s = arg;
	memcpy(s->dst, s->src, s->n * sizeof *s->src);
	return NULL;
}

/* Aligned non-temporal stores of the widest vectors -march gives (the
 * buffers are 64-byte aligned, each half a multiple of 64 bytes). */
static void *
stream_slice(void *arg)
{
	Slice *s = arg;
	size_t i = 0;
#if defined(__AVX512F__)
	for (; i + 16 <= s->n; i += 16)
		_mm512_stream_ps(s->dst + i, _mm512_load_ps(s->src + i));
#elif defined(__AVX__)
	for (; i + 8 <= s->n; i += 8)
		_mm256_stream_ps(s->dst + i, _mm256_load_ps(s->src + i));
#else
	for (; i + 4 <= s->n; i += 4)
		_mm_stream_ps(s->dst + i, _mm_load_ps(s->src + i));
#endif
	_mm_sfence();
	for (; i < s->n; i++)
		s->dst[i] = s->src[i];
	return NULL;
}

/* Sixteen-lane vectors (GCC's extension), four accumulators: the loop
 * runs at memory speed without -ffast-math. */
typedef float V16 __attribute__((vector_size(64)));

static void *
sum_slice(void *arg)
{
	Slice *s = arg;
	V16 acc[4] = {{0}};
	size_t i = 0;
	for (; i + 64 <= s->n; i += 64)
		for (int j = 0; j < 4; j++) {
			V16 v;
			memcpy(&v, s->src + i + 16 * j, sizeof v);
			acc[j] += v;
		}
	float t = 0;
	for (; i < s->n; i++)
		t += s->src[i];
	for (int j = 0; j < 4; j++)
		for (int l = 0; l < 16; l++)
			t += acc[j][l];
	s->sum = t;
	return NULL;
}

static volatile float sink;

static void
two_threads(void *(*fn)(void *), const float *src, float *dst, size_t n)
{
	size_t h = n / 2 / 16 * 16; /* halves stay 64-byte aligned */
	Slice s[2] = {{src, dst, h, 0}, {src + h, dst ? dst + h : NULL,
					 n - h, 0}};
	pthread_t t;
	if (pthread_create(&t, NULL, fn, &s[1]) != 0)
		exit(2);
	fn(&s[0]);
	pthread_join(t, NULL);
	sink = s[0].sum + s[1].sum;
}

int
main(int argc, char **argv)
{
	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: kernel NAME copy|sum|part BYTES REPS "
			"GOAL [RANGE [LABEL]]\n");
		return 2;
	}
	const char *name = argv[1], *ref = argv[2], *goal = argv[5];
	size_t bytes = strtoull(argv[3], NULL, 10), n = bytes / 4;
	int reps = atoi(argv[4]);
	const char *label = argc == 8 ? argv[7] : "bare part";
	if (argc >= 7)
		range = strtof(argv[6], NULL);
	int mode = strcmp(ref, "copy") == 0 ? 0 : strcmp(ref, "sum") == 0 ? 1
									: 2;
	if (reps <= 0 || (mode < 2 && n == 0))
		return 2;
	char *arena = (char *)buf(k_arena_0);
	float *src = mode < 2 ? buf(bytes) : NULL;
	float *dst = mode == 0 ? buf(bytes) : NULL;
#ifdef REF_PART
	char *rarena = (char *)buf(r_arena_0);
#endif
	static const char *const cname[3] = {"loop", "memcpy",
					     "non-temporal"};
	void *(*const cfn[3])(void *) = {copy_slice, memcpy_slice,
					 stream_slice};
	double *tk = calloc((size_t)reps, sizeof *tk);
	double *tr = calloc((size_t)reps, sizeof *tr);
	double *tc[3];
	for (int c = 0; c < 3; c++)
		if (!(tc[c] = calloc((size_t)reps, sizeof *tc[c])))
			return 2;
	if (!tk || !tr)
		return 2;
	for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
		double t0 = bench_now_s();
		if (k_part_0(NULL, arena) != 0)
			return 1;
		double t1 = bench_now_s();
		if (mode == 0) {
			/* the three copies, the part again in between */
			for (int c = 0; c < 3; c++) {
				double c0 = bench_now_s();
				two_threads(cfn[c], src, dst, n);
				if (r >= 0)
					tc[c][r] = bench_now_s() - c0;
			}
		} else if (mode == 1)
			two_threads(sum_slice, src, NULL, n);
#ifdef REF_PART
		else if (r_part_0(NULL, rarena) != 0)
			return 1;
#else
		else
			return 2;
#endif
		double t2 = bench_now_s();
		if (r >= 0) {
			tk[r] = t1 - t0;
			tr[r] = t2 - t1;
		}
	}
	qsort(tk, (size_t)reps, sizeof *tk, bench_cmp);
	qsort(tr, (size_t)reps, sizeof *tr, bench_cmp);
	double k = tk[reps / 2], rf = tr[reps / 2];
	const char *how = ref;
	if (mode == 0) { /* the fastest copy's median */
		for (int c = 0; c < 3; c++) {
			qsort(tc[c], (size_t)reps, sizeof *tc[c], bench_cmp);
			if (c == 0 || tc[c][reps / 2] < rf) {
				rf = tc[c][reps / 2];
				how = cname[c];
			}
		}
		fprintf(stderr, "kernel: copy medians: loop %.2f ms, memcpy "
			"%.2f ms, non-temporal %.2f ms\n",
			tc[0][reps / 2] * 1e3, tc[1][reps / 2] * 1e3,
			tc[2][reps / 2] * 1e3);
	}
	double moved = mode == 0 ? 2.0 * (double)bytes : (double)bytes;
	if (mode < 2)
		printf("| %s | %.2f ms (%.1f GB/s) | %s%s%s, 2 threads: "
		       "%.2f ms (%.1f GB/s) | %.2f | %s |\n", name, k * 1e3,
		       moved / k / 1e9, ref, mode == 0 ? " " : "",
		       mode == 0 ? how : "", rf * 1e3, moved / rf / 1e9,
		       rf / k, goal);
	else
		printf("| %s | %.2f ms | %s: %.2f ms | %.2f (%+.1f%%) "
		       "| %s |\n", name, k * 1e3, label, rf * 1e3, rf / k,
		       (k / rf - 1) * 100, goal);
	free(arena), free(src), free(dst), free(tk), free(tr);
	for (int c = 0; c < 3; c++)
		free(tc[c]);
#ifdef REF_PART
	free(rarena);
#endif
	return 0;
}
