/*
 * runtime/spec.c: specialisations of a generic plan (spec/design.md
 * "Unknown dims", spec/language.md §4.3).
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
 * specialisation's hash, which rt_plan_of finds.  Later runs with the
 * same shapes go straight to the step.  The round of SPECIALISE messages
 * is a step of its own (an id from the client's counter), so its
 * answers, the deadline and a dead peer are handled like those of any
 * step.
 *
 * The cache is bounded, not capped: a process keeps at most
 * TfgOptions.max_specs (64) specialisations per client task, and a new
 * one past that evicts that client's least recently used one (never the
 * one whose step runs).  Each specialisation records the clients that
 * announced it (held[]) and, in the client, the tasks that compiled it
 * (has[]).  A client that evicts one sends RELEASE (body: the plan hash)
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
 * A client that restarted (a new incarnation, rendezvous.c) holds nothing
 * any more: rt_spec_forget drops it from held[] as its RELEASE would,
 * and frees what no one holds.  A client that hears a task of its
 * specialisations restarted marks those not ready, so that their next
 * run announces them again instead of failing.
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

#include "runtime/rt_int.h"

/* The largest dim a SPECIALISE may name, as for an input (spec §4.2). */
#define MAX_DIM ((int64_t)1 << 40)

static void spec_release(RtCtx *c, int i);

static int
max_specs(const RtCtx *c)
{
	return c->opt.max_specs > 0 ? c->opt.max_specs : RT_MAX_SPECS;
}

/* Whether some client still holds s. */
static int
spec_held(const RtCtx *c, const RtSpec *s)
{
	for (int k = 0; k < c->base->ntask; k++)
		if (s->held[k])
			return 1;
	return 0;
}

const TfgPlan *
rt_plan_of(RtCtx *c, uint64_t prog, int *spec)
{
	const TfgPlan *own = c->base ? c->base : c->plan;

	*spec = -1;
	if (own && prog == own->hash)
		return own;
	for (int i = 0; i < c->nspec; i++)
		if (c->specs[i].plan && c->specs[i].plan->hash == prog) {
			*spec = i;
			return c->specs[i].plan;
		}
	return NULL;
}

void
rt_ctx_use(RtCtx *c, int spec)
{
	int prev = c->cur_spec;

	if (spec < 0) {
		c->plan = c->base;
		c->parts = c->base_parts;
		c->arenas = c->base_arenas;
		c->edge_bytes = c->base_edge_bytes;
	} else {
		RtSpec *s = &c->specs[spec];

		c->plan = s->plan;
		c->parts = s->parts;
		c->arenas = s->arenas;
		c->edge_bytes = s->edge_bytes;
		s->used = ++c->clock;
	}
	c->cur_spec = spec;
	/* One dropped while its step ran goes now. */
	if (prev >= 0 && prev != spec && c->specs[prev].plan &&
	    !spec_held(c, &c->specs[prev]))
		spec_release(c, prev);
}

static void
spec_clear(RtSpec *s)
{
	for (int i = 0; s->arenas && i < s->plan->nsig; i++)
		free(s->arenas[i]);
	free(s->arenas);
	free(s->parts);
	free(s->edge_bytes);
	free(s->feeds);
	free(s->held);
	free(s->has);
	memset(s, 0, sizeof *s);
}

/* Frees specialisation i here and in the compiler; its slot is free. */
static void
spec_release(RtCtx *c, int i)
{
	const TfgPlan *p = c->specs[i].plan;

	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: specialisation %d freed (plan "
			"%016llx)\n", c->name, i, (unsigned long long)p->hash);
	spec_clear(&c->specs[i]);
	if (c->opt.release)
		c->opt.release(c->opt.specialise_cookie, p);
}

/* What is left at exit is the compiler's to free (TfgReleaseFn). */
void
rt_spec_free(RtCtx *c)
{
	for (int i = 0; i < c->nspec; i++)
		if (c->specs[i].plan)
			spec_clear(&c->specs[i]);
	free(c->specs);
	c->specs = NULL;
	c->nspec = 0;
}

static int
spec_find(RtCtx *c, int sig, const TfgShape *feeds)
{
	int n = c->base->sigs[sig].nfeed;

	for (int i = 0; i < c->nspec; i++) {
		int same = c->specs[i].plan && c->specs[i].sig == sig;

		for (int k = 0; k < n && same; k++)
			same = tfg_shape_eq(&c->specs[i].feeds[k], &feeds[k]);
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

	buf[0] = '\0';
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

/* Compiles the specialisation of sig for feeds here into a free slot;
 * *idx gets it.  Errors go to c->err. */
static tfg_status
spec_add(RtCtx *c, int sig, const TfgShape *feeds, int *idx)
{
	const TfgPlan *g = c->base, *p = NULL;
	const RtSig *gs = &g->sigs[sig];
	char what[900];
	RtSpec s = {0}, *v;
	TfgError e = {TFG_OK, ""};
	int slot = 0;

	feeds_str(what, sizeof what, gs, feeds);
	if (c->opt.specialise == NULL)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s cannot compile the program for %s: it "
				 "serves a compiled part, so give the dims "
				 "left '?' with --shape", c->name, what);
	s.sig = sig;
	s.feeds = malloc(sizeof *s.feeds * ((size_t)gs->nfeed + 1));
	s.parts = calloc((size_t)g->nsig + 1, sizeof *s.parts);
	if (!s.feeds || !s.parts) {
		free(s.feeds);
		free(s.parts);
		return tfg_error(&c->err, TFG_ENOMEM, "out of memory");
	}
	memcpy(s.feeds, feeds, sizeof *s.feeds * (size_t)gs->nfeed);
	if (c->opt.specialise(c->opt.specialise_cookie, g, sig, feeds, c->task,
			      &p, s.parts, &e) != 0 || p == NULL) {
		free(s.feeds);
		free(s.parts);
		return tfg_error(&c->err, e.code ? e.code : TFG_EINVAL,
				 "cannot compile the program for feeds %s:%s%s",
				 what, e.msg[0] == '\n' ? "" : " ",
				 e.msg[0] ? e.msg : "the compiler failed");
	}
	s.plan = p;
	if (!spec_fits(g, p, sig, feeds)) {
		spec_clear(&s);
		if (c->opt.release)
			c->opt.release(c->opt.specialise_cookie, p);
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s: the specialisation for %s does not fit "
				 "the program's plan", c->name, what);
	}
	while (slot < c->nspec && c->specs[slot].plan)
		slot++;
	s.arenas = calloc((size_t)p->nsig + 1, sizeof *s.arenas);
	s.edge_bytes = calloc((size_t)p->nedge + 1, sizeof *s.edge_bytes);
	s.held = calloc((size_t)g->ntask, 1);
	s.has = calloc((size_t)g->ntask, 1);
	v = slot < c->nspec ? c->specs :
	    realloc(c->specs, sizeof *v * ((size_t)c->nspec + 1));
	if (!s.arenas || !s.edge_bytes || !s.held || !s.has || !v) {
		if (v)
			c->specs = v;
		spec_clear(&s);
		if (c->opt.release)
			c->opt.release(c->opt.specialise_cookie, p);
		return tfg_error(&c->err, TFG_ENOMEM, "out of memory");
	}
	for (int i = 0; i < p->nedge; i++)
		s.edge_bytes[i] = rt_edge_nbytes(&p->edges[i]);
	c->specs = v;
	if (slot == c->nspec)
		c->nspec++;
	c->specs[slot] = s;
	*idx = slot;
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: specialisation %d of signature %d "
			"for %s (plan %016llx)\n", c->name, slot, sig, what,
			(unsigned long long)p->hash);
	return TFG_OK;
}

/* RELEASE of specialisation i to every task that compiled it for this
 * client and is up.  One that is not up gets none (no message goes to a
 * task that is not up): it keeps the specialisation until it needs the
 * room for this client (spec_room). */
static void
release_send(RtCtx *c, int i)
{
	RtSpec *s = &c->specs[i];

	for (int t = 0; t < c->base->ntask; t++) {
		nng_msg *m;
		unsigned char *b;
		TfgError e = {TFG_OK, "not up"};

		if (!s->has[t])
			continue;
		s->has[t] = 0;
		if (rt_net_peer_up(c, t) &&
		    rt_msg_new(c, &m, &b, RT_MSG_RELEASE, 0, (uint32_t)s->sig,
			       NULL, 8, &e) == TFG_OK) {
			rt_put_le(b, s->plan->hash, 8);
			if (rt_net_send(c, t, m, rt_now() + c->opt.step_timeout,
					&e) == TFG_OK)
				continue;
		}
		if (c->opt.verbose)
			fprintf(stderr, "tfg: %s: no RELEASE of plan %016llx "
				"to %s: %s\n", c->name,
				(unsigned long long)s->plan->hash,
				c->base->tasks[t].name, e.msg);
	}
}

void
rt_spec_drop(RtCtx *c, int i, int client)
{
	RtSpec *s = &c->specs[i];

	s->held[client] = 0;
	if (client == c->task) {
		s->ready = 0;
		release_send(c, i);
	}
	if (!spec_held(c, s) && i != c->cur_spec)
		spec_release(c, i);
}

void
rt_spec_forget(RtCtx *c, int task)
{
	for (int i = 0; i < c->nspec; i++) {
		RtSpec *s = &c->specs[i];

		if (s->plan == NULL)
			continue;
		/* as this client's: announce it again before its next step,
		   rather than fail that step with RT_ERROR_NO_PLAN */
		if (s->has[task]) {
			s->has[task] = 0;
			s->ready = 0;
		}
		if (s->held[task])
			rt_spec_drop(c, i, task);
	}
}

/* Room for one more specialisation held for client: past the cap, its
 * least recently used one that is not in use goes.  what: the shapes of
 * the new one, for the error when every one is in use. */
static tfg_status
spec_room(RtCtx *c, int client, const char *what)
{
	for (;;) {
		int n = 0, lru = -1;

		for (int i = 0; i < c->nspec; i++) {
			const RtSpec *s = &c->specs[i];

			if (!s->plan || !s->held[client])
				continue;
			n++;
			if (i != c->cur_spec &&
			    (lru < 0 || s->used < c->specs[lru].used))
				lru = i;
		}
		if (n < max_specs(c))
			return TFG_OK;
		if (lru < 0)
			return tfg_error(&c->err, TFG_ENOMEM,
					 "%s: more than %d shapes in use at "
					 "once (now %s)", c->name,
					 max_specs(c), what);
		if (c->opt.verbose)
			fprintf(stderr, "tfg: %s: evicting specialisation %d "
				"of %s (plan %016llx): %d kept for it\n",
				c->name, lru, c->base->tasks[client].name,
				(unsigned long long)c->specs[lru].plan->hash,
				max_specs(c));
		rt_spec_drop(c, lru, client);
	}
}

tfg_status
rt_spec_hold(RtCtx *c, int client, int sig, const TfgShape *feeds, int *spec)
{
	char what[900];
	tfg_status st;
	int i = spec_find(c, sig, feeds);

	if (i < 0) {
		feeds_str(what, sizeof what, &c->base->sigs[sig], feeds);
		if ((st = spec_room(c, client, what)) != TFG_OK ||
		    (st = spec_add(c, sig, feeds, &i)) != TFG_OK)
			return st;
	}
	c->specs[i].held[client] = 1;
	c->specs[i].used = ++c->clock;
	*spec = i;
	return TFG_OK;
}

tfg_status
rt_spec_client(RtCtx *c, int sig, const TfgShape *feeds, int *spec)
{
	const RtSig *gs = &c->base->sigs[sig];
	double deadline;
	size_t n = 0;
	tfg_status st = TFG_OK, lst;
	char what[900];
	int i = spec_find(c, sig, feeds), nsent = 0;

	if (i >= 0 && c->specs[i].ready) {
		c->specs[i].used = ++c->clock;
		*spec = i;
		return TFG_OK;
	}
	c->err.code = TFG_OK;
	c->err.msg[0] = '\0';
	/* Room first: the RELEASE of the one evicted then reaches each task
	   before this SPECIALISE does. */
	feeds_str(what, sizeof what, gs, feeds);
	if (i < 0 && (st = spec_room(c, c->task, what)) != TFG_OK)
		return st;
	for (int k = 0; k < gs->nfeed; k++)
		n += 8 * (1 + (size_t)feeds[k].rank);
	/* Every other task that may take part compiles it too, while this
	   one does (a task that has it answers at once); this round is a
	   step of its own. */
	if ((st = rt_step_next(c)))
		return st;
	c->sig = -1;
	deadline = rt_now() + c->opt.step_timeout;
	for (int t = 0; t < gs->ntask && st == TFG_OK; t++) {
		nng_msg *m;
		unsigned char *b;

		if (gs->tasks[t] == c->task)
			continue;
		if ((st = rt_msg_new(c, &m, &b, RT_MSG_SPECIALISE, c->step,
				     (uint32_t)sig, NULL, n, &c->err)))
			break;
		for (int k = 0; k < gs->nfeed; k++) {
			rt_put_le(b, (uint64_t)feeds[k].rank, 8);
			b += 8;
			for (int d = 0; d < feeds[k].rank; d++, b += 8)
				rt_put_le(b, (uint64_t)feeds[k].dims[d], 8);
		}
		if ((st = rt_net_send(c, gs->tasks[t], m, deadline, &c->err)))
			break;
		nsent++;
	}
	if (st == TFG_OK && (lst = rt_spec_hold(c, c->task, sig, feeds, &i)))
		st = lst;
	for (int t = 0; t < gs->ntask && st == TFG_OK && nsent > 0; t++) {
		uint64_t hash = 0;
		int task = gs->tasks[t];

		if (task == c->task)
			continue;
		nsent--;
		if ((st = rt_wait_done(c, task, "compile the specialisation",
				       &hash)))
			break;
		uint64_t own = c->specs[i].plan->hash;
		if (hash != own)
			st = tfg_error(&c->err, TFG_EPEER,
				"%s compiled another specialisation (plan "
				"%016llx, this one's is %016llx): do all tasks "
				"run the same tfgc with the same options?",
				c->plan->tasks[task].name,
				(unsigned long long)hash,
				(unsigned long long)own);
		else
			c->specs[i].has[task] = 1;
	}
	rt_step_end(c);
	if (st != TFG_OK)
		return st;
	c->specs[i].ready = 1;
	*spec = i;
	return TFG_OK;
}

void
rt_spec_lost(RtCtx *c, int i, int task)
{
	RtSpec *s = &c->specs[i];
	char what[900];

	s->ready = 0;
	s->has[task] = 0;
	feeds_str(what, sizeof what, &c->base->sigs[s->sig], s->feeds);
	tfg_error(&c->err, TFG_EPEER,
		  "%s does not have the specialisation for %s (plan %016llx; "
		  "was it restarted?): the next run announces it again, this "
		  "one is not retried", c->base->tasks[task].name, what,
		  (unsigned long long)s->plan->hash);
}

/* Reads the feed shapes of a SPECIALISE for sig into feeds; 0, or -1
 * with the reason in why. */
static int
decode(const RtSig *sig, const RtMsg *m, TfgShape *feeds, char *why,
       size_t nwhy)
{
	const unsigned char *p = m->body, *end = m->body + m->h.nbytes;
	char sh[128];

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
	}
	if (p != end) {
		snprintf(why, nwhy, "%zu bytes too many", (size_t)(end - p));
		return -1;
	}
	return 0;
}

/* DONE for the current step to client, with the plan hash of
 * specialisation i as its body. */
static void
reply_hash(RtCtx *c, int client, int sig, int i)
{
	nng_msg *m;
	unsigned char *b;
	TfgError e;

	if (rt_msg_new(c, &m, &b, RT_MSG_DONE, c->step, (uint32_t)sig, NULL,
		       8, &e) == TFG_OK) {
		rt_put_le(b, c->specs[i].plan->hash, 8);
		if (rt_net_send(c, client, m, rt_now() + c->opt.step_timeout,
				&e) == TFG_OK)
			return;
	}
	fprintf(stderr, "tfgc: error: %s: %s\n", c->name, e.msg);
}

void
rt_spec_serve(RtCtx *c, RtMsg *m)
{
	int client = m->h.src, sig = (int)m->h.key, i;
	const RtSig *gs = &c->base->sigs[sig];
	TfgShape *feeds;
	char why[600];

	/* Validation made sure sig is driven from client, and the plan is
	   generic; the round is a step with no signature to run. */
	if (rt_step_accept(c, m, -1) != 0)
		return;
	if ((feeds = calloc((size_t)gs->nfeed + 1, sizeof *feeds)) == NULL) {
		rt_reply(c, client, RT_ERROR_FAILED, "out of memory");
	} else if (decode(gs, m, feeds, why, sizeof why) != 0) {
		fprintf(stderr, "tfgc: error: %s: bad SPECIALISE from %s: %s\n",
			c->name, c->plan->tasks[client].name, why);
		rt_reply(c, client, RT_ERROR_FAILED, why);
	} else if (rt_spec_hold(c, client, sig, feeds, &i) != TFG_OK) {
		rt_reply(c, client, RT_ERROR_FAILED, c->err.msg);
	} else {
		reply_hash(c, client, sig, i);
	}
	free(feeds);
	rt_step_end(c);
}

void
rt_spec_serve_release(RtCtx *c, RtMsg *m)
{
	TfgError e;
	int i;

	if (rt_release_check(c, &m->h, m->body, &i, &e) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s: %s (ignored)\n", c->name,
			e.msg);
		return;
	}
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: %s released specialisation %d\n",
			c->name, c->base->tasks[m->h.src].name, i);
	rt_spec_drop(c, i, m->h.src);
}

/* Called with the START's step accepted (server.c). */
void
rt_spec_refuse(RtCtx *c, const RtMsg *m)
{
	char text[300];

	snprintf(text, sizeof text, "no specialisation with plan %016llx "
		 "for signature %u here (restarted, or evicted?)",
		 (unsigned long long)m->h.prog, m->h.key);
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: START from %s: %s\n", c->name,
			c->base->tasks[m->h.src].name, text);
	rt_reply(c, m->h.src, RT_ERROR_NO_PLAN, text);
}
