/*
 * compiler/plan.c: the TfgPlan the runtime executes, from the partitioned
 * program.  The plan shares the program's arena; its hash covers the
 * source and the plan's shape, so that task processes of different
 * programs refuse each other's messages.
 */
#include <string.h>

#include "compiler/compiler_int.h"

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

int
plan_program(Program *p)
{
	Arena *a = p->arena;
	TfgPlan *pl = arena_alloc(a, sizeof *pl);
	int counts[3] = {p->ntask, p->edges.n, p->nsig};

	pl->file = p->src->path;
	pl->ntask = p->ntask;
	pl->tasks = arena_alloc(a, (p->ntask + 1) * sizeof *pl->tasks);
	for (int t = 0; t < p->ntask; t++) {
		pl->tasks[t].job = p->tasks[t].job;
		pl->tasks[t].index = p->tasks[t].index;
		pl->tasks[t].addr = p->tasks[t].addr;
		pl->tasks[t].name = p->tasks[t].name;
	}
	pl->nedge = p->edges.n;
	pl->edges = arena_alloc(a, (p->edges.n + 1) * sizeof *pl->edges);
	for (int i = 0; i < p->edges.n; i++)
		pl->edges[i] = *(RtEdge *)p->edges.v[i];
	pl->nsig = p->nsig;
	pl->sigs = arena_alloc(a, (p->nsig + 1) * sizeof *pl->sigs);
	for (int s = 0; s < p->nsig; s++) {
		IrSig *g = &p->sigs[s];
		RtSig *r = &pl->sigs[s];
		r->client = g->client;
		r->nfeed = g->nfeed;
		r->feeds = arena_alloc(a, (g->nfeed + 1) * sizeof *r->feeds);
		for (int i = 0; i < g->nfeed; i++) {
			r->feeds[i].name = g->feed[i]->name;
			r->feeds[i].dtype = g->feed[i]->dtype;
			r->feeds[i].shape = g->feed[i]->shape;
			r->feeds[i].key = g->feed_key[i];
		}
		r->nfetch = g->nfetch;
		r->fetches = arena_alloc(a, (g->nfetch + 1) * sizeof *r->fetches);
		for (int i = 0; i < g->nfetch; i++) {
			r->fetches[i].name = ir_node_label(g->fetch[i]);
			r->fetches[i].key = g->fetch_key[i];
		}
		r->tasks = arena_alloc(a, (p->ntask + 1) * sizeof *r->tasks);
		r->needs_done = arena_alloc(a, (p->ntask + 1) * sizeof(int));
		for (int t = 0; t < p->ntask; t++) {
			if (g->parts[t].n == 0)
				continue;
			r->needs_done[r->ntask] =
			    t != g->client && g->parts[t].sends == 0;
			r->tasks[r->ntask++] = t;
		}
	}
	pl->nsession = p->nsession;
	pl->sessions = p->sessions;
	pl->hash = fnv(0xcbf29ce484222325ull, p->src->text, p->src->len);
	pl->hash = fnv(pl->hash, counts, sizeof counts);
	p->plan = pl;
	return 0;
}
