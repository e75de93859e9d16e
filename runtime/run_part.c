/*
 * runtime/run_part.c: one step's run of a task's part (roles layer,
 * runtime/role.h): an arena taken from the part's spares, the part's
 * context made (RtCtx, runtime/part.h: the step's rendezvous, the
 * task's variables), the generated function called with it, its GPU
 * work waited for, the arena given back.  A
 * server's START (server.c) and a session's own part (client_run.c) both
 * come here, so neither role calls the other.
 *
 * Arenas of one part not in use wait in its RtArenas, so that steps of
 * one signature may run at once, each with its own; one lock guards
 * every list (a take or give is a pointer move).  A big one (64 MiB or
 * more) is freed after its part's first step instead: a ps initializing
 * a 640 MB shard kept the maker's 640 MB arena for good, as it did
 * restore()'s.
 */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/role.h"
#include "runtime/trace.h"

static pthread_mutex_t arenas_mu = PTHREAD_MUTEX_INITIALIZER;

static char *
arena_take(RtArenas *a, size_t size)
{
	char *p = NULL;

	pthread_mutex_lock(&arenas_mu);
	if (a->n > 0)
		p = a->v[--a->n];
	pthread_mutex_unlock(&arenas_mu);
	return p ? p : rt_arena_alloc(size);
}

static void
arena_give(RtArenas *a, char *p, size_t size, int pinned)
{
	pthread_mutex_lock(&arenas_mu);
	if (!a->ran++ && size >= RT_ARENA_ONCE && !pinned) {
		pthread_mutex_unlock(&arenas_mu);
		free(p); /* its part's first step: maybe its only one */
		return;
	}
	if (a->n == a->cap) {
		int nc = a->cap ? 2 * a->cap : 2;
		char **v = realloc(a->v, sizeof *v * (size_t)nc);

		if (v == NULL) {
			pthread_mutex_unlock(&arenas_mu);
			rt_gpu_host_unpin(p);
			free(p);
			return;
		}
		a->v = v, a->cap = nc;
	}
	a->v[a->n++] = p;
	pthread_mutex_unlock(&arenas_mu);
}

void
rt_arenas_free(RtArenas *a, int n)
{
	for (int i = 0; a && i < n; i++) {
		for (int k = 0; k < a[i].n; k++) {
			rt_gpu_host_unpin(a[i].v[k]);
			free(a[i].v[k]);
		}
		free(a[i].v);
	}
	free(a);
}

int
rt_run_part(RtStep *s, RtServer *vars, const char *who, const RtPart *p,
	    RtArenas *spare)
{
	RtCtx c;
	char *arena;
	double t0;
	int rc, st, gpu;

	s->err.code = TFG_OK;
	s->err.msg[0] = '\0';
	if (p->fn == NULL)
		return tfg_error(&s->err, TFG_EINVAL,
				 "%s has no part in signature %d", who,
				 s->sig);
	if ((arena = arena_take(spare, p->arena_size)) == NULL)
		return tfg_error(&s->err, TFG_ENOMEM,
				 "%s: out of memory for an arena of %zu bytes",
				 who, p->arena_size);
	rt_part_init(&c, s);
	if (vars)
		rt_vars_attach(vars, &c);
	t0 = rt_tracing ? rt_trace_clock() : 0;
	rc = p->fn(&c, arena);
	rt_vars_drop(&c); /* held by a part that failed there */
	gpu = c.gpu != NULL;
	st = rt_gpu_step_end(&c); /* its GPU work done, or its error */
	if (rc == 0)
		rc = st;
	/* a part that used a GPU copies to and from its arena: page-locked
	   from its next step on (spec/design.md "GPUs") */
	if (gpu && rc == 0)
		rt_gpu_host_pin(arena, p->arena_size);
	if (rt_tracing) {
		char name[64];

		snprintf(name, sizeof name, "part of signature %d", s->sig);
		rt_trace_event("part", name, RT_STEP_NO(s->step),
			       p->arena_size, t0, rt_trace_clock());
	}
	arena_give(spare, arena, p->arena_size, gpu);
	if (rc != 0 && s->err.msg[0] == '\0')
		tfg_error(&s->err, (tfg_status)rc, "part of %s failed: %s",
			  who, tfg_strerror((tfg_status)rc));
	return rc;
}
