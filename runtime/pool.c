/*
 * runtime/pool.c: the thread pool of multi-core loops (tfg_rt_parallel,
 * spec/design.md "Kernels").  Generated code calls tfg_rt_parallel for a
 * large loop nest (codegen/cpu_nest.c) with a kernel that runs
 * iterations [b, e) of its outermost loop.
 *
 * One pool per process, made on the first parallel loop (so a process
 * that forks, like tfgc run's controller, has no threads by then):
 * N - 1 worker threads, N = $TFG_THREADS or the CPUs the process may run
 * on (sched_getaffinity), at most POOL_MAX.  A loop is one Job: [0, n)
 * cut into about CHUNKS_PER_THREAD chunks per thread, handed out by an
 * atomic counter, so a thread that the machine slows down takes fewer;
 * the caller takes chunks too, then waits for the workers it woke.
 * Chunks of more than 64 iterations are multiples of 64, which keeps
 * a flat loop's chunks on whole vectors and cache lines.
 *
 * One loop at a time: `submit` is taken with trylock, and a caller that
 * finds it taken (another thread's loop) runs its loop alone, so two
 * threads of one process never wait on each other's kernels.
 *
 * Workers sleep on a condition variable between loops; the wake-up costs
 * some microseconds, which is why codegen splits only loops of 2^17
 * iterations or more.  Several task processes on one machine each have
 * their own pool: together they may run more threads than there are
 * cores (set TFG_THREADS to share them out).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/rt_int.h"

#define POOL_MAX 64
#define CHUNKS_PER_THREAD 4

typedef struct Job {
	TfgKernelFn k;
	void *const *bases;
	int64_t n, chunk;
	_Atomic int64_t next; /* the next chunk's first iteration */
} Job;

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int started;         /* pool_start ran; under submit */
static int nworker;         /* started */
static _Atomic int want;    /* threads per loop (tfg_set_threads) */
static Job job;             /* under mu, and `submit` */
static uint64_t gen;        /* loops started; under mu */
static int helpers;         /* workers in the current loop */
static int pending;         /* of them, not finished; under mu */

static void
run_chunks(Job *j)
{
	for (;;) {
		int64_t b = atomic_fetch_add(&j->next, j->chunk);
		if (b >= j->n)
			return;
		j->k(j->bases, b, b + j->chunk < j->n ? b + j->chunk : j->n);
	}
}

static void *
worker(void *arg)
{
	int self = (int)(intptr_t)arg;
	uint64_t seen = 0;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (gen == seen)
			pthread_cond_wait(&wake, &mu);
		seen = gen;
		if (self >= helpers)
			continue; /* not needed for this loop */
		pthread_mutex_unlock(&mu);
		run_chunks(&job);
		pthread_mutex_lock(&mu);
		if (--pending == 0)
			pthread_cond_signal(&done);
	}
	return NULL;
}

/* N: $TFG_THREADS, else the CPUs this process may run on. */
static int
default_threads(void)
{
	const char *s = getenv("TFG_THREADS");
	cpu_set_t set;
	int n = 0;
	if (s && *s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (!*end && v >= 1)
			n = v > POOL_MAX ? POOL_MAX : (int)v;
	}
	if (n == 0 && sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n == 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : n;
}

static void
pool_start(void)
{
	pthread_mutex_lock(&submit);
	int n = atomic_load(&want) ? atomic_load(&want) : default_threads();
	for (int i = 0; i < n - 1; i++) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, worker, (void *)(intptr_t)i) == 0)
			nworker++;
		pthread_attr_destroy(&a);
	}
	atomic_store(&want, nworker + 1 < n ? nworker + 1 : n);
	started = 1;
	pthread_mutex_unlock(&submit);
}

TFG_API int
tfg_set_threads(int n)
{
	n = n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : n;
	pthread_mutex_lock(&submit); /* no loop runs meanwhile */
	if (started && n > nworker + 1)
		n = nworker + 1;
	atomic_store(&want, n);
	pthread_mutex_unlock(&submit);
	return n;
}

TFG_API void
tfg_rt_parallel(TfgKernelFn k, void *const *bases, int64_t n)
{
	int t;
	if (n <= 0)
		return;
	pthread_once(&pool_once, pool_start);
	t = atomic_load(&want);
	if (t > nworker + 1)
		t = nworker + 1;
	if (t > n)
		t = (int)n;
	if (t <= 1 || pthread_mutex_trylock(&submit) != 0) {
		k(bases, 0, n);
		return;
	}
	int64_t chunks = (int64_t)t * CHUNKS_PER_THREAD;
	int64_t chunk = (n + chunks - 1) / chunks;
	if (chunk > 64)
		chunk = (chunk + 63) / 64 * 64;
	pthread_mutex_lock(&mu);
	job.k = k;
	job.bases = bases;
	job.n = n;
	job.chunk = chunk;
	atomic_store(&job.next, 0);
	helpers = pending = t - 1;
	gen++;
	pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&mu);
	run_chunks(&job);
	pthread_mutex_lock(&mu);
	while (pending > 0)
		pthread_cond_wait(&done, &mu);
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&submit);
}
