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
 * SPECIALISE body: for each feed of the signature its rank and dims; the
 * DONE answering it: the plan hash; all 8 bytes little-endian.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"

/* The largest dim a SPECIALISE may name, as for an input (spec §4.2). */
#define MAX_DIM ((int64_t)1 << 40)

const TfgPlan *
rt_plan_of(RtCtx *c, uint64_t prog, int *spec)
{
	const TfgPlan *own = c->base ? c->base : c->plan;

	*spec = -1;
	if (own && prog == own->hash)
		return own;
	for (int i = 0; i < c->nspec; i++)
		if (c->specs[i].plan->hash == prog) {
			*spec = i;
			return c->specs[i].plan;
		}
	return NULL;
}

void
rt_ctx_use(RtCtx *c, int spec)
{
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
	}
	c->cur_spec = spec;
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
	memset(s, 0, sizeof *s);
}

void
rt_spec_free(RtCtx *c)
{
	for (int i = 0; i < c->nspec; i++)
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
		int same = c->specs[i].sig == sig;

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

/* Compiles the specialisation of sig for feeds here; *idx gets its index.
 * Errors go to c->err. */
static tfg_status
spec_add(RtCtx *c, int sig, const TfgShape *feeds, int *idx)
{
	const TfgPlan *g = c->base, *p = NULL;
	const RtSig *gs = &g->sigs[sig];
	char what[900];
	RtSpec s = {0}, *v;
	TfgError e = {TFG_OK, ""};

	feeds_str(what, sizeof what, gs, feeds);
	if (c->opt.specialise == NULL)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s cannot compile the program for %s: it "
				 "serves a compiled part, so give the dims "
				 "left '?' with --shape", c->name, what);
	if (c->nspec >= RT_MAX_SPECS)
		return tfg_error(&c->err, TFG_ENOMEM,
				 "%s: more than %d shapes fed to runs of "
				 "this program (now %s): each compiles a "
				 "specialisation; fix the shapes with --shape",
				 c->name, RT_MAX_SPECS, what);
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
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s: the specialisation for %s does not fit "
				 "the program's plan", c->name, what);
	}
	s.arenas = calloc((size_t)p->nsig + 1, sizeof *s.arenas);
	s.edge_bytes = calloc((size_t)p->nedge + 1, sizeof *s.edge_bytes);
	v = realloc(c->specs, sizeof *v * ((size_t)c->nspec + 1));
	if (!s.arenas || !s.edge_bytes || !v) {
		if (v)
			c->specs = v;
		spec_clear(&s);
		return tfg_error(&c->err, TFG_ENOMEM, "out of memory");
	}
	for (int i = 0; i < p->nedge; i++)
		s.edge_bytes[i] = rt_edge_nbytes(&p->edges[i]);
	c->specs = v;
	c->specs[c->nspec] = s;
	*idx = c->nspec++;
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: specialisation %d of signature %d "
			"for %s (plan %016llx)\n", c->name, *idx, sig, what,
			(unsigned long long)p->hash);
	return TFG_OK;
}

tfg_status
rt_spec_client(RtCtx *c, int sig, const TfgShape *feeds, int *spec)
{
	const RtSig *gs = &c->base->sigs[sig];
	double deadline;
	size_t n = 0;
	tfg_status st = TFG_OK, lst;
	int i = spec_find(c, sig, feeds), nsent = 0;

	if (i >= 0 && c->specs[i].ready) {
		*spec = i;
		return TFG_OK;
	}
	for (int k = 0; k < gs->nfeed; k++)
		n += 8 * (1 + (size_t)feeds[k].rank);
	/* Every other task that may take part compiles it too, while this
	   one does (a task that has it answers at once); this round is a
	   step of its own. */
	c->step = ((uint64_t)c->task << 48) | ++c->counter;
	c->client = c->task;
	c->sig = -1;
	c->err.code = TFG_OK;
	c->err.msg[0] = '\0';
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
	if (st == TFG_OK && i < 0 && (lst = spec_add(c, sig, feeds, &i)))
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
	}
	rt_step_end(c);
	if (st != TFG_OK)
		return st;
	c->specs[i].ready = 1;
	*spec = i;
	return TFG_OK;
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
		rt_reply(c, client, 0, "out of memory");
	} else if (decode(gs, m, feeds, why, sizeof why) != 0) {
		fprintf(stderr, "tfgc: error: %s: bad SPECIALISE from %s: %s\n",
			c->name, c->plan->tasks[client].name, why);
		rt_reply(c, client, 0, why);
	} else if ((i = spec_find(c, sig, feeds)) < 0 &&
		   spec_add(c, sig, feeds, &i) != TFG_OK) {
		rt_reply(c, client, 0, c->err.msg);
	} else {
		reply_hash(c, client, sig, i);
	}
	free(feeds);
	rt_step_end(c);
}
