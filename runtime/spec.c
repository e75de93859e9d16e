/*
 * runtime/spec.c: specialisations of a generic plan (spec/design.md
 * "Unknown dims", spec/language.md §4.3 "Inputs").
 *
 * A program whose inputs have dims left `?` runs from a generic plan: its
 * run signatures know their feeds and fetches, but not what flows between
 * the tasks, so nothing is compiled at start-up.  When a client runs
 * signature s with feeds of concrete shapes, it looks (s, shapes) up in
 * its cache.  On a miss it sends SPECIALISE to every other task that may
 * take part (the generic signature's tasks: those of the nodes its
 * fetches need), compiles the specialisation itself meanwhile (the
 * compiler's TfgOptions.specialise), and waits until each task has
 * compiled it too: each answers DONE with its plan's hash, which must be
 * the client's.  Only then does the step start, so every message of it
 * reaches a task that knows its plan: the header's prog is the
 * specialisation's hash, which the protocol finds among the plans
 * registered with it (rt_proc_plan_add).  Later runs with the
 * same shapes go straight to the step.  The round of SPECIALISE messages
 * is a step of its own (an id from the client's counter), so its
 * answers, the deadline and a dead peer are handled like those of any
 * step.
 *
 * The cache is bounded, not capped: a process keeps at most
 * TfgOptions.max_specs (64) specialisations per client task, and a new
 * one past that evicts that client's least recently used one (never one
 * that a step runs: RtSpec.inuse).  Each specialisation records the
 * clients that announced it (held[], the incarnation of each) and, in
 * the client, the tasks that compiled it (has[], likewise).  A client that evicts one sends RELEASE (body: the plan hash)
 * to those tasks that are up; a task drops the client from held[] and
 * frees the specialisation when no client holds it, through
 * TfgOptions.release, which frees the plan and its code in the compiler.
 * SPECIALISE and RELEASE of a signature come only from its client
 * (wire.c), so held[] has one task at most today; nothing here assumes
 * it.  The client evicts before it sends the new SPECIALISE, on the same
 * socket, so no task holds more than max_specs for one client either: a
 * task past the cap for a client (a RELEASE lost while it was down, a
 * smaller --max-specs) evicts the same way instead of refusing, so a
 * task's cache stays within (clients) x max_specs.
 *
 * A client that restarted (a new incarnation: the protocol queues an
 * RT_EV_RESTARTED record) holds nothing any more: rt_spec_forget drops
 * its earlier incarnations from held[] as their RELEASE would, and frees
 * what no one holds.  A client that hears a task of its specialisations
 * restarted marks those not ready, so that their next run announces them
 * again instead of failing.  Since the record may be taken after the new
 * process's first SPECIALISE (executors run records side by side), only
 * holds of incarnations older than the one it names go.
 *
 * Threads: the cache is under RtServer.mu, and so is the compiler
 * (compiles go one at a time, and the driver's own cache needs no lock);
 * a RELEASE decided under it goes out after (release_flush).
 *
 * A task that gets a START of a plan it does not have (it was restarted
 * under `tfgc run --attach`, or evicted it) answers at once with ERROR of
 * kind RT_ERROR_NO_PLAN instead of leaving the client to its deadline.
 * The client fails that run, naming the task and the shapes, and marks
 * the specialisation not ready, so that its next run announces it again
 * (a task that still has it answers DONE at once).  The failed step is
 * not retried: a step runs at most once, so that one with side effects
 * on the tasks that ran it never applies them twice.
 *
 * SPECIALISE body: for each feed of the signature its rank and dims; the
 * DONE answering it: the plan hash; RELEASE: the plan hash; all 8 bytes
 * little-endian.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/role.h"

/* The largest dim a SPECIALISE may name, as for an input
 * (spec §4.3 "Inputs"). */
#define MAX_DIM ((int64_t)1 << 40)

static void spec_release(RtServer *s, int i);

static int
max_specs(const RtServer *s)
{
	return s->proc.opt.max_specs > 0 ? s->proc.opt.max_specs
					 : RT_MAX_SPECS;
}

static int
ntask(const RtServer *s)
{
	return s->proc.plan->ntask;
}

/* Whether some client still holds x. */
static int
spec_held(const RtServer *s, const RtSpec *x)
{
	for (int k = 0; k < ntask(s); k++)
		if (x->held[k])
			return 1;
	return 0;
}

/* Specialisation i into *u, in use from now on; under s->mu. */
static void
use_locked(RtServer *s, int i, RtUse *u)
{
	RtSpec *x = &s->specs[i];

	x->inuse++;
	x->used = ++s->clock;
	u->spec = i;
	u->plan = x->plan;
	u->parts = x->parts;
	u->spare = x->spare;
}

int
rt_spec_use(RtServer *s, uint64_t prog, RtUse *u)
{
	int found = -1;

	if (prog == s->proc.plan->hash) {
		u->spec = -1;
		u->plan = s->proc.plan;
		u->parts = s->parts;
		u->spare = s->spare;
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nspec && found < 0; i++)
		if (s->specs[i].plan && s->specs[i].plan->hash == prog) {
			use_locked(s, i, u);
			found = 0;
		}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* Sends the RELEASEs decided under s->mu; not under it. */
static void
release_flush(RtServer *s)
{
	RtProc *p = &s->proc;

	for (;;) {
		RtRelease r;
		RtBuf *m;
		unsigned char *b;
		TfgError e = {TFG_OK, "not up"};

		pthread_mutex_lock(&s->mu);
		if (s->npending == 0) {
			pthread_mutex_unlock(&s->mu);
			return;
		}
		r = s->pending[--s->npending];
		pthread_mutex_unlock(&s->mu);
		if (rt_peer_up(p, r.task) &&
		    rt_msg_new(p, NULL, &m, &b, RT_MSG_RELEASE, 0,
			       (uint32_t)r.sig, NULL, 8, &e) == TFG_OK) {
			rt_put_le(b, r.hash, 8);
			if (rt_send(p, r.task, m, rt_step_deadline(p), NULL,
				    &e) == TFG_OK)
				continue;
		}
		if (p->opt.verbose)
			fprintf(stderr, "tfg: %s: no RELEASE of plan %016llx "
				"to %s: %s\n", p->name,
				(unsigned long long)r.hash,
				p->plan->tasks[r.task].name, e.msg);
	}
}

void
rt_spec_unuse(RtServer *s, const RtUse *u)
{
	int i = u->spec;

	if (i < 0)
		return;
	pthread_mutex_lock(&s->mu);
	/* One dropped while its steps ran goes now. */
	if (--s->specs[i].inuse == 0 && !spec_held(s, &s->specs[i]))
		spec_release(s, i);
	pthread_mutex_unlock(&s->mu);
}

static void
spec_clear(RtSpec *x)
{
	rt_arenas_free(x->spare, x->plan ? x->plan->nsig : 0);
	free(x->parts);
	free(x->feeds);
	free(x->held);
	free(x->has);
	free(x->ups);
	memset(x, 0, sizeof *x);
}

/* Frees specialisation i here and in the compiler; its slot is free.
 * Under s->mu. */
static void
spec_release(RtServer *s, int i)
{
	const TfgPlan *p = s->specs[i].plan;

	if (s->proc.opt.verbose)
		fprintf(stderr, "tfg: %s: specialisation %d freed (plan "
			"%016llx)\n", s->proc.name, i,
			(unsigned long long)p->hash);
	rt_proc_plan_remove(&s->proc, p);
	spec_clear(&s->specs[i]);
	if (s->proc.opt.release)
		s->proc.opt.release(s->proc.opt.specialise_cookie, p);
}

/* What is left at exit is the compiler's to free (TfgReleaseFn). */
void
rt_spec_free(RtServer *s)
{
	for (int i = 0; i < s->nspec; i++)
		if (s->specs[i].plan)
			spec_clear(&s->specs[i]);
	free(s->specs);
	s->specs = NULL;
	s->nspec = 0;
}

static int
spec_find(RtServer *s, int sig, const TfgShape *feeds)
{
	int n = s->proc.plan->sigs[sig].nfeed;

	for (int i = 0; i < s->nspec; i++) {
		int same = s->specs[i].plan && s->specs[i].sig == sig;

		for (int k = 0; k < n && same; k++)
			same = tfg_shape_eq(&s->specs[i].feeds[k], &feeds[k]);
		if (same)
			return i;
	}
	return -1;
}

/* "x: f32[100, 784], y: i32[]" into buf. */
static const char *
feeds_str(char *buf, size_t n, const RtSig *sig, const TfgShape *feeds)
{
	size_t len = 0;
	char sh[128];

	snprintf(buf, n, "(none)");
	for (int i = 0; i < sig->nfeed && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s: %s%s",
					i ? ", " : "", sig->feeds[i].name,
					tfg_dtype_name(sig->feeds[i].dtype),
					rt_shape_str(sh, sizeof sh,
						      &feeds[i]));
	return buf;
}

/* Whether the specialised plan the compiler returned fits the generic
 * one: the same tasks and signatures, sig fed as asked. */
static int
spec_fits(const TfgPlan *g, const TfgPlan *p, int sig, const TfgShape *feeds)
{
	const RtSig *a = &g->sigs[sig], *b;

	if (p->generic || p->ntask != g->ntask || p->nsig != g->nsig)
		return 0;
	b = &p->sigs[sig];
	if (b->client != a->client || b->nfeed != a->nfeed ||
	    b->nfetch != a->nfetch)
		return 0;
	for (int i = 0; i < a->nfeed; i++)
		if (strcmp(a->feeds[i].name, b->feeds[i].name) != 0 ||
		    a->feeds[i].dtype != b->feeds[i].dtype ||
		    !tfg_shape_eq(&b->feeds[i].shape, &feeds[i]) ||
		    b->feeds[i].key >= (uint32_t)p->nedge)
			return 0;
	for (int i = 0; i < a->nfetch; i++)
		if (b->fetches[i].key >= (uint32_t)p->nedge)
			return 0;
	for (int i = 0; i < p->nedge; i++)
		if (!rt_edge_valid(&p->edges[i]))
			return 0;
	return 1;
}

/* Drops p, made by the compiler but not taken. */
static void
compiled_drop(RtServer *s, const TfgPlan *p)
{
	if (s->proc.opt.release)
		s->proc.opt.release(s->proc.opt.specialise_cookie, p);
}

/* Compiles the specialisation of sig for feeds here into a free slot;
 * *idx gets it.  Under s->mu (compiles go one at a time). */
static tfg_status
spec_add(RtServer *s, int sig, const TfgShape *feeds, int *idx, TfgError *e)
{
	const TfgPlan *g = s->proc.plan, *p = NULL;
	const RtSig *gs = &g->sigs[sig];
	const TfgOptions *o = &s->proc.opt;
	char what[900];
	RtSpec x = {0}, *v;
	TfgError ce = {TFG_OK, ""};
	int slot = 0;

	feeds_str(what, sizeof what, gs, feeds);
	if (o->specialise == NULL)
		return tfg_error(e, TFG_EINVAL,
				 "%s cannot compile the program for %s: it "
				 "serves a compiled part, so give the dims "
				 "left '?' with --shape", s->proc.name, what);
	x.sig = sig;
	x.feeds = malloc(sizeof *x.feeds * ((size_t)gs->nfeed + 1));
	x.parts = calloc((size_t)g->nsig + 1, sizeof *x.parts);
	if (!x.feeds || !x.parts) {
		spec_clear(&x);
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	}
	memcpy(x.feeds, feeds, sizeof *x.feeds * (size_t)gs->nfeed);
	if (o->specialise(o->specialise_cookie, g, sig, feeds, s->proc.task,
			  &p, x.parts, &ce) != 0 || p == NULL) {
		spec_clear(&x);
		return tfg_error(e, ce.code ? ce.code : TFG_EINVAL,
				 "cannot compile the program for feeds %s:%s%s",
				 what, ce.msg[0] == '\n' ? "" : " ",
				 ce.msg[0] ? ce.msg : "the compiler failed");
	}
	if (!spec_fits(g, p, sig, feeds)) {
		spec_clear(&x);
		compiled_drop(s, p);
		return tfg_error(e, TFG_EINVAL,
				 "%s: the specialisation for %s does not fit "
				 "the program's plan", s->proc.name, what);
	}
	x.plan = p;
	while (slot < s->nspec && s->specs[slot].plan)
		slot++;
	x.spare = calloc((size_t)p->nsig + 1, sizeof *x.spare);
	x.held = calloc((size_t)g->ntask, sizeof *x.held);
	x.has = calloc((size_t)g->ntask, sizeof *x.has);
	x.ups = calloc((size_t)g->ntask, sizeof *x.ups);
	v = slot < s->nspec ? s->specs :
	    realloc(s->specs, sizeof *v * ((size_t)s->nspec + 1));
	if (v)
		s->specs = v;
	if (!x.spare || !x.held || !x.has || !x.ups || !v ||
	    rt_proc_plan_add(&s->proc, p) != TFG_OK) {
		spec_clear(&x);
		compiled_drop(s, p);
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	}
	if (slot == s->nspec)
		s->nspec++;
	s->specs[slot] = x;
	*idx = slot;
	if (o->verbose)
		fprintf(stderr, "tfg: %s: specialisation %d of signature %d "
			"for %s (plan %016llx)\n", s->proc.name, slot, sig,
			what, (unsigned long long)p->hash);
	return TFG_OK;
}

/* Client task `client` no longer holds specialisation i; when no client
 * does and no step runs it, it is freed (through TfgOptions.release).
 * If client is this task, the tasks that have it hear a RELEASE (one
 * that is not up gets none: it keeps the specialisation until it needs
 * the room for this client, spec_room).  Under s->mu. */
static void
spec_drop(RtServer *s, int i, int client)
{
	RtSpec *x = &s->specs[i];

	x->held[client] = 0;
	if (client == s->proc.task) {
		x->ready = 0;
		for (int t = 0; t < ntask(s); t++) {
			RtRelease r = {t, x->sig, x->plan->hash};

			if (!x->has[t])
				continue;
			x->has[t] = 0;
			if (s->npending == s->cappending) {
				int nc = s->cappending ? 2 * s->cappending : 8;
				RtRelease *v = realloc(s->pending,
						       sizeof *v * (size_t)nc);

				if (v == NULL)
					continue; /* it keeps it: spec_room */
				s->pending = v, s->cappending = nc;
			}
			s->pending[s->npending++] = r;
		}
	}
	if (!spec_held(s, x) && x->inuse == 0)
		spec_release(s, i);
}

void
rt_spec_drop(RtServer *s, int i, int client)
{
	pthread_mutex_lock(&s->mu);
	spec_drop(s, i, client);
	pthread_mutex_unlock(&s->mu);
	release_flush(s);
}

void
rt_spec_forget(RtServer *s, int task, uint64_t epoch)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nspec; i++) {
		RtSpec *x = &s->specs[i];

		if (x->plan == NULL)
			continue;
		/* as this client's: announce it again before its next step,
		   rather than fail that step with RT_ERROR_NO_PLAN */
		if (x->has[task] && x->has[task] < epoch) {
			x->has[task] = 0;
			x->ready = 0;
		}
		if (x->held[task] && x->held[task] < epoch)
			spec_drop(s, i, task);
	}
	pthread_mutex_unlock(&s->mu);
	release_flush(s);
}

/* Room for one more specialisation held for client: past the cap, its
 * least recently used one that no step runs goes.  what: the shapes of
 * the new one, for the error when every one is in use.  Under s->mu. */
static tfg_status
spec_room(RtServer *s, int client, const char *what, TfgError *e)
{
	for (;;) {
		int n = 0, lru = -1;

		for (int i = 0; i < s->nspec; i++) {
			const RtSpec *x = &s->specs[i];

			if (!x->plan || !x->held[client])
				continue;
			n++;
			if (x->inuse == 0 &&
			    (lru < 0 || x->used < s->specs[lru].used))
				lru = i;
		}
		if (n < max_specs(s))
			return TFG_OK;
		if (lru < 0)
			return tfg_error(e, TFG_ENOMEM,
					 "%s: more than %d shapes in use at "
					 "once (now %s)", s->proc.name,
					 max_specs(s), what);
		if (s->proc.opt.verbose)
			fprintf(stderr, "tfg: %s: evicting specialisation %d "
				"of %s (plan %016llx): %d kept for it\n",
				s->proc.name, lru, s->proc.plan->tasks[client].name,
				(unsigned long long)s->specs[lru].plan->hash,
				max_specs(s));
		spec_drop(s, lru, client);
	}
}

/* rt_spec_hold under s->mu. */
static tfg_status
hold_locked(RtServer *s, int client, uint64_t epoch, int sig,
	    const TfgShape *feeds, int *spec, TfgError *e)
{
	char what[900];
	tfg_status st;
	int i = spec_find(s, sig, feeds);

	if (i < 0) {
		feeds_str(what, sizeof what, &s->proc.plan->sigs[sig], feeds);
		if ((st = spec_room(s, client, what, e)) != TFG_OK ||
		    (st = spec_add(s, sig, feeds, &i, e)) != TFG_OK)
			return st;
	}
	s->specs[i].held[client] = epoch;
	s->specs[i].used = ++s->clock;
	*spec = i;
	return TFG_OK;
}

tfg_status
rt_spec_hold(RtServer *s, int client, uint64_t epoch, int sig,
	     const TfgShape *feeds, int *spec, TfgError *e)
{
	tfg_status st;

	pthread_mutex_lock(&s->mu);
	st = hold_locked(s, client, epoch, sig, feeds, spec, e);
	pthread_mutex_unlock(&s->mu);
	release_flush(s);
	return st;
}

/* The SPECIALISE round of sig for feeds, as step c: the message to
 * every other task that may take part, the own compile meanwhile (into
 * *spec, held), then their answers. */
static tfg_status
spec_round(RtServer *s, RtStep *c, int sig, const TfgShape *feeds, int *spec)
{
	RtProc *p = &s->proc;
	const RtSig *gs = &p->plan->sigs[sig];
	double deadline = rt_step_deadline(p);
	size_t n = 0;
	tfg_status st = TFG_OK;
	int nsent = 0, i = -1;

	for (int k = 0; k < gs->nfeed; k++)
		n += 8 * (1 + (size_t)feeds[k].rank);
	if ((st = rt_step_begin(c, NULL, -1)))
		return st;
	for (int t = 0; t < gs->ntask && st == TFG_OK; t++) {
		RtBuf *m;
		unsigned char *b;

		if (gs->tasks[t] == p->task)
			continue;
		if ((st = rt_msg_new(p, NULL, &m, &b, RT_MSG_SPECIALISE,
				     c->step, (uint32_t)sig, NULL, n,
				     &c->err)))
			break;
		for (int k = 0; k < gs->nfeed; k++) {
			rt_put_le(b, (uint64_t)feeds[k].rank, 8);
			b += 8;
			for (int d = 0; d < feeds[k].rank; d++, b += 8)
				rt_put_le(b, (uint64_t)feeds[k].dims[d], 8);
		}
		if ((st = rt_send(p, gs->tasks[t], m, deadline, NULL,
				  &c->err)))
			break;
		nsent++;
	}
	rt_step_sent(c);
	if (st == TFG_OK)
		st = rt_spec_hold(s, p->task, p->epoch, sig, feeds, &i,
				  &c->err);
	for (int t = 0; t < gs->ntask && st == TFG_OK && nsent > 0; t++) {
		uint64_t hash = 0, own, epoch = 0;
		int task = gs->tasks[t];

		if (task == p->task)
			continue;
		nsent--;
		if ((st = rt_wait_done(c, task, "compile the specialisation",
				       &hash, &epoch)))
			break;
		pthread_mutex_lock(&s->mu);
		own = s->specs[i].plan->hash;
		if (hash == own) {
			s->specs[i].has[task] = epoch;
			s->specs[i].ups[task] = rt_peer_conn(p, task);
		}
		pthread_mutex_unlock(&s->mu);
		if (hash != own)
			st = tfg_error(&c->err, TFG_EPEER,
				"%s compiled another specialisation (plan "
				"%016llx, this one's is %016llx): do all tasks "
				"run the same tfgc with the same options?",
				p->plan->tasks[task].name,
				(unsigned long long)hash,
				(unsigned long long)own);
	}
	rt_step_end(c);
	*spec = i;
	return st;
}

/* A task whose link came down or up again since it answered the
 * SPECIALISE of specialisation i may be a new process that has never
 * heard of it: i is announced again (a task that has it answers at
 * once).  Without this the first step after a ps restarted, sent
 * before any message of the new process told this one, failed with
 * RT_ERROR_NO_PLAN.  Under s->mu. */
static void
check_links(RtServer *s, int i)
{
	RtSpec *x = &s->specs[i];

	for (int t = 0; t < s->proc.plan->ntask; t++)
		if (x->has[t] && rt_peer_conn(&s->proc, t) != x->ups[t]) {
			x->has[t] = 0;
			x->ready = 0;
		}
}

tfg_status
rt_spec_client(RtServer *s, int sig, const TfgShape *feeds, RtUse *u,
	       TfgError *e)
{
	RtProc *p = &s->proc;
	RtStep c;
	char what[900];
	tfg_status st = TFG_OK;
	int i;

	pthread_mutex_lock(&s->mu);
	i = spec_find(s, sig, feeds);
	if (i >= 0 && s->specs[i].ready)
		check_links(s, i);
	if (i >= 0 && s->specs[i].ready) {
		use_locked(s, i, u);
		pthread_mutex_unlock(&s->mu);
		return TFG_OK;
	}
	/* Room first: the RELEASE of the one evicted then reaches each task
	   before this SPECIALISE does. */
	feeds_str(what, sizeof what, &p->plan->sigs[sig], feeds);
	if (i < 0)
		st = spec_room(s, p->task, what, e);
	pthread_mutex_unlock(&s->mu);
	release_flush(s);
	if (st != TFG_OK)
		return st;
	/* Every other task that may take part compiles it too, while this
	   one does (a task that has it answers at once); this round is a
	   step of its own. */
	rt_step_init(&c, p);
	if ((st = spec_round(s, &c, sig, feeds, &i)) != TFG_OK) {
		*e = c.err;
		return st;
	}
	pthread_mutex_lock(&s->mu);
	if (s->specs[i].plan && s->specs[i].held[p->task]) {
		s->specs[i].ready = 1;
		use_locked(s, i, u);
	} else {
		st = tfg_error(e, TFG_EINVAL, "%s: the specialisation for %s "
			       "was dropped while it was announced",
			       p->name, what);
	}
	pthread_mutex_unlock(&s->mu);
	return st;
}

void
rt_spec_lost(RtServer *s, int i, int task, TfgError *e)
{
	RtSpec *x;
	char what[900];

	pthread_mutex_lock(&s->mu);
	x = &s->specs[i];
	x->ready = 0;
	x->has[task] = 0;
	feeds_str(what, sizeof what, &s->proc.plan->sigs[x->sig], x->feeds);
	tfg_error(e, TFG_EPEER,
		  "%s does not have the specialisation for %s (plan %016llx; "
		  "was it restarted?): the next run announces it again, this "
		  "one is not retried", s->proc.plan->tasks[task].name, what,
		  (unsigned long long)x->plan->hash);
	pthread_mutex_unlock(&s->mu);
}

/* Reads the feed shapes of a SPECIALISE for sig into feeds; 0, or -1
 * with the reason in why. */
static int
decode(const RtSig *sig, const RtMsg *m, TfgShape *feeds, char *why,
       size_t nwhy)
{
	const unsigned char *p = m->body, *end = m->body + m->h.nbytes;
	char sh[128], sh2[128];

	for (int k = 0; k < sig->nfeed; k++) {
		const RtFeed *f = &sig->feeds[k];
		uint64_t rank;

		if (end - p < 8 ||
		    (rank = rt_get_le(p, 8)) != (uint64_t)f->shape.rank ||
		    (size_t)(end - p) < 8 * (1 + rank)) {
			snprintf(why, nwhy, "feed '%s' is %s%s, the message "
				 "gives another rank or too few bytes",
				 f->name, tfg_dtype_name(f->dtype),
				 rt_shape_str(sh, sizeof sh, &f->shape));
			return -1;
		}
		p += 8;
		feeds[k].rank = (int)rank;
		for (int d = 0; d < TFG_MAX_RANK; d++)
			feeds[k].dims[d] = 0;
		for (int d = 0; d < (int)rank; d++, p += 8) {
			uint64_t v = rt_get_le(p, 8);

			if (v > (uint64_t)MAX_DIM ||
			    (f->shape.dims[d] >= 0 &&
			     v != (uint64_t)f->shape.dims[d])) {
				snprintf(why, nwhy, "feed '%s' is %s%s, the "
					 "message gives %llu for dim %d",
					 f->name, tfg_dtype_name(f->dtype),
					 rt_shape_str(sh, sizeof sh,
						       &f->shape),
					 (unsigned long long)v, d);
				return -1;
			}
			feeds[k].dims[d] = (int64_t)v;
		}
		/* each dim may be in range and their product not: one
		   overflow-checked count for every size (tfg_shape_size) */
		if (tfg_shape_size(&feeds[k], f->dtype == TFG_STRING ? TFG_U8
				   : f->dtype, NULL, NULL) != 0) {
			snprintf(why, nwhy, "feed '%s' is %s%s, the message "
				 "gives %s, over 2^40 bytes", f->name,
				 tfg_dtype_name(f->dtype),
				 rt_shape_str(sh, sizeof sh, &f->shape),
				 rt_shape_str(sh2, sizeof sh2, &feeds[k]));
			return -1;
		}
	}
	if (p != end) {
		snprintf(why, nwhy, "%zu bytes too many", (size_t)(end - p));
		return -1;
	}
	return 0;
}

/* DONE for step c to its client, with plan hash `hash` as its body. */
static void
reply_hash(RtStep *c, int sig, uint64_t hash)
{
	RtProc *p = c->proc;
	RtBuf *m;
	unsigned char *b;
	TfgError e;

	if (rt_msg_new(p, NULL, &m, &b, RT_MSG_DONE, c->step, (uint32_t)sig,
		       NULL, 8, &e) == TFG_OK) {
		rt_put_le(b, hash, 8);
		if (rt_send(p, c->client, m, rt_step_deadline(p), c, &e) ==
		    TFG_OK)
			return;
	}
	fprintf(stderr, "tfgc: error: %s: %s\n", p->name, e.msg);
}

void
rt_spec_serve(RtServer *s, RtStep *c, const RtMsg *m)
{
	int client = m->h.src, sig = (int)m->h.key, i;
	const RtSig *gs = &s->proc.plan->sigs[sig];
	TfgShape *feeds;
	TfgError e;
	uint64_t hash = 0;
	char why[600];

	/* Validation made sure sig is driven from client, and the plan is
	   generic; the round is a step with no signature to run. */
	if ((feeds = calloc((size_t)gs->nfeed + 1, sizeof *feeds)) == NULL) {
		rt_reply(c, RT_ERROR_FAILED, "out of memory");
	} else if (decode(gs, m, feeds, why, sizeof why) != 0) {
		fprintf(stderr, "tfgc: error: %s: bad SPECIALISE from %s: %s\n",
			s->proc.name, s->proc.plan->tasks[client].name, why);
		rt_reply(c, RT_ERROR_FAILED, why);
	} else {
		pthread_mutex_lock(&s->mu);
		if (hold_locked(s, client, m->h.epoch, sig, feeds, &i, &e) ==
		    TFG_OK)
			hash = s->specs[i].plan->hash;
		pthread_mutex_unlock(&s->mu);
		release_flush(s);
		if (hash)
			reply_hash(c, sig, hash);
		else
			rt_reply(c, RT_ERROR_FAILED, e.msg);
	}
	free(feeds);
	rt_step_end(c);
}

tfg_status
rt_release_check(RtServer *s, const RtHdr *h, const unsigned char *body,
		 int *spec, TfgError *e)
{
	uint64_t hash = rt_get_le(body, 8);
	const char *who = s->proc.plan->tasks[h->src].name;

	*spec = -1;
	for (int i = 0; i < s->nspec; i++) {
		const RtSpec *x = &s->specs[i];

		if (x->plan == NULL || x->plan->hash != hash)
			continue;
		if (x->sig != (int)h->key)
			break;
		if (!x->held[h->src])
			return tfg_error(e, TFG_EPROTO,
					 "bad RELEASE from %s: it does not "
					 "hold the specialisation of plan "
					 "%016llx (it never announced it, or "
					 "released it already)", who,
					 (unsigned long long)hash);
		*spec = i;
		return TFG_OK;
	}
	return tfg_error(e, TFG_EPROTO,
			 "bad RELEASE from %s: plan %016llx is no "
			 "specialisation of signature %u held here (was this "
			 "task restarted?)", who, (unsigned long long)hash,
			 h->key);
}

void
rt_spec_serve_release(RtServer *s, const RtMsg *m)
{
	TfgError e;
	int i;

	pthread_mutex_lock(&s->mu);
	if (rt_release_check(s, &m->h, m->body, &i, &e) != TFG_OK) {
		pthread_mutex_unlock(&s->mu);
		fprintf(stderr, "tfgc: error: %s: %s (ignored)\n",
			s->proc.name, e.msg);
		return;
	}
	if (s->proc.opt.verbose)
		fprintf(stderr, "tfg: %s: %s released specialisation %d\n",
			s->proc.name, s->proc.plan->tasks[m->h.src].name, i);
	spec_drop(s, i, m->h.src);
	pthread_mutex_unlock(&s->mu);
	release_flush(s);
}

/* Called with the START's step accepted (server.c). */
void
rt_spec_refuse(RtStep *c, const RtMsg *m)
{
	char text[300];

	snprintf(text, sizeof text, "no specialisation with plan %016llx "
		 "for signature %u here (restarted, or evicted?)",
		 (unsigned long long)m->h.prog, m->h.key);
	if (c->proc->opt.verbose)
		fprintf(stderr, "tfg: %s: START from %s: %s\n", c->proc->name,
			c->proc->plan->tasks[m->h.src].name, text);
	rt_reply(c, RT_ERROR_NO_PLAN, text);
}
