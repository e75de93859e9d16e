/*
 * runtime/pool.c: the thread pool of multi-core loops (tfg_rt_parallel,
 * spec/design.md "Kernels").  Generated code calls tfg_rt_parallel for a
 * large loop nest (codegen/cpu_nest.c) with a kernel that runs
 * iterations [b, e) of its outermost loop, and runtime/gemm.c calls it
 * for the parts of a large matrix product.
 *
 * One pool per process, made on the first parallel loop (so a process
 * that forks, like tfgc run's controller, has no threads by then):
 * N - 1 worker threads, N = $TFG_THREADS or the CPUs the process may run
 * on (sched_getaffinity), at most POOL_MAX.  A loop is one Job: [0, n)
 * cut into about CHUNKS_PER_THREAD chunks per thread, handed out by an
 * atomic counter, so a thread that the machine slows down takes fewer;
 * the caller takes chunks too.  Chunks of more than 64 iterations are
 * multiples of 64, which keeps a flat loop's chunks on whole vectors and
 * cache lines.
 *
 * One loop at a time: `submit` is taken with trylock, and a caller that
 * finds it taken (another thread's loop) runs its loop alone, so two
 * threads of one process never wait on each other's kernels.
 *
 * Hand-off.  The caller fills `job`, opens `slots` (the workers that may
 * join), and bumps `ticket`.  A worker that sees a new ticket counts
 * itself in `active`, then takes a slot if one is left, runs chunks and
 * counts itself out.  When the caller has run out of chunks it closes
 * the slots and waits only for the workers that joined (active == 0): a
 * worker still asleep when the work ran out is not waited for, and the
 * caller has done its share.  A worker counted in `active` but without
 * a slot never touches `job`, so the next loop may refill it.  After a
 * loop a worker spins on the ticket for SPIN_NS before it sleeps on a
 * condition variable, and the caller spins as long on `active`: a
 * training step's loops and products come microseconds apart, and
 * waking a sleeping thread costs about as much as a small product (the
 * MNIST step's 100x784x100 products gained from two threads only with a
 * spinning hand-off: bench/README.md).
 * Sleepers are woken only when there are some.  Several task processes
 * on one machine each have their own pool: together they may run more
 * threads than there are cores (set TFG_THREADS to share them out), and
 * a spinning worker gives its core back within SPIN_NS.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt_int.h"

#define POOL_MAX 64
#define CHUNKS_PER_THREAD 4
#define SPIN_NS 100000 /* 100 us */

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
static int started;             /* pool_start ran; under submit */
static int nworker;             /* started */
static _Atomic int want;        /* threads per loop (tfg_set_threads) */
static Job job;                 /* filled under `submit`, slots closed */
static _Atomic uint64_t ticket; /* bumped for each loop */
static _Atomic int slots;       /* workers that may still join the loop */
static _Atomic int active;      /* workers between seeing and leaving */
static int sleepers;            /* workers asleep on `wake`; under mu */
static int waiting;             /* the caller asleep on `done`; under mu */

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static int64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
ticket_is(uint64_t old)
{
	return atomic_load(&ticket) == old;
}

static int
workers_active(uint64_t unused)
{
	(void)unused;
	return atomic_load(&active) > 0;
}

/* Spins while busy(arg), for SPIN_NS at most: pausing, and after the
 * first rounds also yielding the core, which a thread of this process
 * may share.  Returns whether busy(arg) still holds. */
static int
spin(int (*busy)(uint64_t), uint64_t arg)
{
	int64_t end = 0;
	for (int i = 1; busy(arg); i++) {
		if (i % 64 == 0) {
			int64_t now = now_ns();
			if (end == 0)
				end = now + SPIN_NS;
			else if (now > end)
				return 1;
			if (i >= 1024)
				sched_yield();
		}
		cpu_relax();
	}
	return 0;
}

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

/* Takes a slot of the open loop, if one is left. */
static int
take_slot(void)
{
	int s = atomic_load(&slots);
	while (s > 0)
		if (atomic_compare_exchange_weak(&slots, &s, s - 1))
			return 1;
	return 0;
}

static void *
worker(void *arg)
{
	uint64_t seen = 0;
	(void)arg;
	for (;;) {
		if (spin(ticket_is, seen)) {
			pthread_mutex_lock(&mu);
			sleepers++;
			while (atomic_load(&ticket) == seen)
				pthread_cond_wait(&wake, &mu);
			sleepers--;
			pthread_mutex_unlock(&mu);
		}
		seen = atomic_load(&ticket); /* the newest loop, if several */
		atomic_fetch_add(&active, 1);
		if (take_slot())
			run_chunks(&job);
		if (atomic_fetch_sub(&active, 1) == 1) {
			pthread_mutex_lock(&mu);
			if (waiting)
				pthread_cond_signal(&done);
			pthread_mutex_unlock(&mu);
		}
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


/* The threads a loop of n iterations would run on now (1: the caller's
 * alone); starts the pool. */
int
rt_pool_threads(int64_t n)
{
	int t;
	pthread_once(&pool_once, pool_start);
	t = atomic_load(&want);
	if (t > nworker + 1)
		t = nworker + 1;
	return n < t ? (int)(n < 1 ? 1 : n) : t;
}

TFG_API void
tfg_rt_parallel(TfgKernelFn k, void *const *bases, int64_t n)
{
	int t;
	if (n <= 0)
		return;
	t = rt_pool_threads(n);
	if (t <= 1 || pthread_mutex_trylock(&submit) != 0) {
		k(bases, 0, n);
		return;
	}
	int64_t chunks = (int64_t)t * CHUNKS_PER_THREAD;
	int64_t chunk = (n + chunks - 1) / chunks;
	if (chunk > 64)
		chunk = (chunk + 63) / 64 * 64;
	job.k = k;
	job.bases = bases;
	job.n = n;
	job.chunk = chunk;
	atomic_store(&job.next, 0);
	atomic_store(&slots, t - 1);
	atomic_fetch_add(&ticket, 1);
	pthread_mutex_lock(&mu);
	if (sleepers)
		pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&mu);
	run_chunks(&job);
	atomic_store(&slots, 0); /* no one joins from now on */
	if (spin(workers_active, 0)) {
		pthread_mutex_lock(&mu);
		waiting = 1;
		while (atomic_load(&active) > 0)
			pthread_cond_wait(&done, &mu);
		waiting = 0;
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_unlock(&submit);
}
