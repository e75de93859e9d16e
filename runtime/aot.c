/*
 * runtime/aot.c: the entry points generated parts call (tfg_rt_recv and
 * tfg_rt_send), and tfg_aot_run, which runs an ahead-of-time compiled
 * part (spec/language.md §10.3 "Ahead-of-time compilation") in the caller's
 * thread.
 *
 * The entry points only forward through the part's context (RtCtx,
 * runtime/part.h): to the rendezvous in servers and clients, to the
 * caller's buffers in tfg_aot_run.  So a program that links a part object and libtfg.a
 * pulls in this file, status.c, trace.c and gpu.c (which opens the CUDA
 * driver only if a part calls it) and nothing with sockets.
 *
 * tfg_aot_run's context has only the AOT fields set, and no step; the
 * signature lists each feed and fetch key with its size, and a search of
 * those few keys per transfer is all the rendezvous it needs (a
 * signature that needs no other task moves nothing but its feeds and
 * fetches).
 */
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/part.h"
#include "runtime/rt_int.h"
#include "runtime/trace.h"

#define ARENA_ALIGN 64
/* Arenas of ARENA_HUGE_MIN bytes or more start on a 2 MiB boundary and
 * ask for transparent huge pages (madvise, Debian's default THP mode):
 * kernels that stream through hundreds of MiB otherwise miss the TLB on
 * every 4 KiB page (on the development VM, one reduce_mean of 256 MiB
 * ran up to 25% slower on one 4 KiB-paged buffer than on another, and
 * at the faster speed on both with huge pages: bench/kernels.sh). */
#define ARENA_HUGE_ALIGN ((size_t)2 << 20)
#define ARENA_HUGE_MIN ((size_t)8 << 20)

TFG_API int
tfg_rt_recv(struct RtCtx *c, uint32_t key, void *dst)
{
	return c->recv(c, key, dst);
}

TFG_API int
tfg_rt_recv_ref(struct RtCtx *c, uint32_t key, void *dst, void **data)
{
	if (c->recv_ref)
		return c->recv_ref(c, key, dst, data);
	*data = dst;
	return c->recv(c, key, dst);
}

TFG_API int
tfg_rt_send(struct RtCtx *c, uint32_t key, const void *src)
{
	return c->send(c, key, src);
}

TFG_API int
tfg_rt_send_rows(struct RtCtx *c, uint32_t key, const void *src,
		 const int64_t *ids, int64_t nids)
{
	int64_t rows = 0;

	if (!c->send_rows)
		return c->send(c, key, src);
	while (rows < nids && ids[rows] >= 0)
		rows++;
	return c->send_rows(c, key, src, rows);
}

TFG_API void
tfg_rt_flush(struct RtCtx *c)
{
	if (c->flush)
		c->flush(c);
}

TFG_API int
tfg_rt_mark(struct RtCtx *c, uint32_t mark, const void *name)
{
	static _Thread_local double t0;

	if (!(mark & 1))
		t0 = rt_trace_clock();
	else
		rt_trace_event("kernel", name, c ? c->no : 0, 0,
			       t0, rt_trace_clock());
	return TFG_OK;
}

TFG_API int
tfg_rt_var(struct RtCtx *c, uint32_t var, uint32_t op, const void *src,
	   void *dst)
{
	if (c->var == NULL && op == TFG_VAR_DRAW) {
		/* no task state: every call is a random maker's first */
		memset(dst, 0, sizeof(int64_t));
		return TFG_OK;
	}
	if (c->var == NULL)
		return tfg_error(c->err, TFG_EINVAL, "variables live in a "
				 "task server: this part runs without one");
	return c->var(c, var, op, src, dst);
}

TFG_API int
tfg_rt_scatter(struct RtCtx *c, uint32_t var, uint32_t op,
	       const int64_t *ids, int64_t n, const void *rows, void *dst)
{
	RtRows r = {ids, n, rows};

	if (c->var == NULL)
		return tfg_error(c->err, TFG_EINVAL, "variables live in a "
				 "task server: this part runs without one");
	return c->var(c, var, op, &r, dst);
}

TFG_API int
tfg_rt_apply(struct RtCtx *c, uint32_t var, uint32_t kind, uint32_t slot,
	     const void *grad, const double *hyper, void *dst)
{
	if (c->apply == NULL)
		return tfg_error(c->err, TFG_EINVAL, "variables live in a "
				 "task server: this part runs without one");
	return c->apply(c, var, kind, slot, NULL, 0, grad, hyper, dst);
}

TFG_API int
tfg_rt_apply_rows(struct RtCtx *c, uint32_t var, uint32_t kind,
		  uint32_t slot, const int64_t *ids, int64_t n,
		  const void *rows, const double *hyper, void *dst)
{
	/* rows, none of them: not NULL, which says a whole update */
	static const int64_t none[1];

	if (c->apply == NULL)
		return tfg_error(c->err, TFG_EINVAL, "variables live in a "
				 "task server: this part runs without one");
	if (ids == NULL && n > 0)
		return tfg_error(c->err, TFG_EINVAL, "an update of %lld rows "
				 "without their ids", (long long)n);
	return c->apply(c, var, kind, slot, ids ? ids : none, n, rows, hyper,
			dst);
}

TFG_API int
tfg_rt_check(struct RtCtx *c, const void *data, int64_t n, int32_t dtype,
	     const char *label)
{
	int64_t i = 0;
	double x = 0;

	if (dtype == TFG_F32)
		for (; i < n && isfinite(x = ((const float *)data)[i]); i++)
			;
	else
		for (; i < n && isfinite(x = ((const double *)data)[i]); i++)
			;
	if (i == n)
		return TFG_OK;
	/* a task's errors reach the client behind its name */
	return tfg_error(c->err, TFG_EINVAL, "%s%s%s gave a non-finite value "
			 "(%s at element %lld), the first of this step "
			 "(--check-numerics)", c->who ? c->who : "",
			 c->who ? ": " : "", label, isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf",
			 (long long)i);
}

TFG_API int
tfg_rt_check_range(struct RtCtx *c, const void *data, int32_t dtype,
		   double lo, double hi, int32_t closed, const char *label)
{
	double x = dtype == TFG_F32 ? *(const float *)data
				    : *(const double *)data;

	if ((closed & 1 ? x >= lo : x > lo) && (closed & 2 ? x <= hi : x < hi))
		return TFG_OK;
	return tfg_error(c->err, TFG_EINVAL, "%s%s%s must be in %c%g, %g%c, "
			 "got %g", c->who ? c->who : "", c->who ? ": " : "",
			 label, closed & 1 ? '[' : '(', lo, hi,
			 closed & 2 ? ']' : ')', x);
}

char *
rt_arena_alloc(size_t size)
{
	size_t al = size >= ARENA_HUGE_MIN ? ARENA_HUGE_ALIGN : ARENA_ALIGN;
	char *p;
	if (size > SIZE_MAX - al)
		return NULL;
	size = (size + al - 1) / al * al;
	p = aligned_alloc(al, size ? size : al);
#ifdef MADV_HUGEPAGE
	if (p && al == ARENA_HUGE_ALIGN)
		(void)madvise(p, size, MADV_HUGEPAGE); /* advice only */
#endif
	return p;
}

/* A feed: copy the caller's buffer into the part's. */
static int
aot_recv(struct RtCtx *c, uint32_t key, void *dst)
{
	const TfgAotSig *s = c->aot;

	for (int i = 0; i < s->nfeed; i++)
		if (s->feeds[i].key == key) {
			if (s->feeds[i].nbytes)
				memcpy(dst, c->aot_feeds[i],
				       s->feeds[i].nbytes);
			return TFG_OK;
		}
	return TFG_EINVAL; /* not a feed: the part needs another task */
}

/* A fetch: copy into every fetch buffer with that key (a value fetched
 * twice shares its edge). */
static int
aot_send(struct RtCtx *c, uint32_t key, const void *src)
{
	const TfgAotSig *s = c->aot;
	int found = 0;

	for (int i = 0; i < s->nfetch; i++)
		if (s->fetches[i].key == key) {
			if (s->fetches[i].nbytes)
				memcpy(c->aot_fetches[i], src,
				       s->fetches[i].nbytes);
			found = 1;
		}
	return found ? TFG_OK : TFG_EINVAL;
}

TFG_API int
tfg_aot_run(const TfgAotSig *sig, const void *const *feeds,
	    void *const *fetches)
{
	struct {
		RtCtx c;
		TfgError err;
	} *run;
	RtCtx *c;
	char *arena;
	int rc, st;

	if (sig == NULL || sig->fn == NULL ||
	    (sig->nfeed > 0 && feeds == NULL) ||
	    (sig->nfetch > 0 && fetches == NULL))
		return TFG_EINVAL;
	for (int i = 0; i < sig->nfeed; i++)
		if (feeds[i] == NULL && sig->feeds[i].nbytes)
			return TFG_EINVAL;
	for (int i = 0; i < sig->nfetch; i++)
		if (fetches[i] == NULL && sig->fetches[i].nbytes)
			return TFG_EINVAL;
	/* the error text is large: not on the stack of a caller that may
	   run on a small one */
	if ((run = calloc(1, sizeof *run)) == NULL)
		return TFG_ENOMEM;
	if ((arena = rt_arena_alloc(sig->arena_size)) == NULL) {
		free(run);
		return TFG_ENOMEM;
	}
	c = &run->c;
	c->err = &run->err;
	c->recv = aot_recv;
	c->send = aot_send;
	c->aot = sig;
	c->aot_feeds = feeds;
	c->aot_fetches = fetches;
	rc = sig->fn(c, arena);
	st = rt_gpu_step_end(c); /* its GPU work done, or its error */
	if (rc == 0)
		rc = st;
	free(arena);
	free(run);
	return rc;
}
