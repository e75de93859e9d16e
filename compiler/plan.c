/*
 * compiler/plan.c: the TfgPlan the runtime executes, from the partitioned
 * program.  The plan shares the program's arena; its hash covers the
 * source and the plan's shape, so that task processes of different
 * programs refuse each other's messages.
 */
#include <string.h>

#include "compiler/compiler_int.h"

static uint64_t
fnv_i64(uint64_t h, int64_t v)
{
	return ir_fnv(h, &v, sizeof v);
}

/* The hash covers the source, whether the plan is generic, and the shapes
 * of everything that crosses tasks or comes in as a feed, so that two
 * specialisations of one program (spec/design.md "Unknown dims") differ,
 * and so does a server given another --shape. */
static uint64_t
plan_hash(const Program *p, const TfgPlan *pl)
{
	uint64_t h = ir_fnv(IR_FNV_BASIS, p->src->text, p->src->len);

	h = fnv_i64(fnv_i64(fnv_i64(h, pl->ntask), pl->nedge), pl->nsig);
	h = fnv_i64(h, pl->generic);
	for (int i = 0; p->opt && i < p->opt->nparam; i++) /* --param */
		h = ir_fnv(h, p->opt->param[i], strlen(p->opt->param[i]) + 1);
	for (int i = 0; i < pl->nedge; i++) {
		const RtEdge *e = &pl->edges[i];
		h = fnv_i64(fnv_i64(fnv_i64(h, e->src), e->dst), e->dtype);
		for (int k = 0; k < e->shape.rank; k++)
			h = fnv_i64(h, e->shape.dims[k]);
		h = fnv_i64(h, e->shape.rank);
	}
	for (int i = 0; i < pl->nvar; i++)
		h = fnv_i64(h, pl->vars[i].task);
	for (int s = 0; s < pl->nsig; s++) {
		const RtSig *r = &pl->sigs[s];
		h = fnv_i64(fnv_i64(fnv_i64(h, r->client), r->nfeed), r->ntask);
		for (int i = 0; i < r->nfeed; i++) {
			h = fnv_i64(h, r->feeds[i].shape.rank);
			for (int k = 0; k < r->feeds[i].shape.rank; k++)
				h = fnv_i64(h, r->feeds[i].shape.dims[k]);
		}
	}
	return h;
}

/* h and the n strings of v, with their count. */
static uint64_t
fnv_strs(uint64_t h, const char **v, int n)
{
	h = fnv_i64(h, n);
	for (int i = 0; i < n; i++)
		h = ir_fnv(h, v[i], strlen(v[i]) + 1);
	return h;
}

/* TfgPlan.runs: the --fetch step's options, in order, or 0. */
static uint64_t
runs_hash(const Program *p)
{
	const CompileOptions *o = p->opt;
	uint64_t h;

	if (!o || o->nfetch == 0)
		return 0;
	h = fnv_strs(IR_FNV_BASIS, o->fetch, o->nfetch);
	h = fnv_strs(h, o->feed, o->nfeed);
	h = fnv_strs(h, o->out, o->nout);
	return h ? h : 1;
}

/* Whether the client could get its last message from task t's part
 * before every change of state (OPF_EFFECT) that the part makes: then t
 * reports DONE at its end, so that run() returns after every change the
 * step makes.  A part whose last send to the client comes after its
 * last change needs none: parts run their nodes in order. */
static int
effect_after(const IrPart *part, int client)
{
	int last_send = -1, last_effect = -1;

	for (int i = 0; i < part->n; i++) {
		const IrNode *n = part->nodes[i];

		if (n->op == OP_send && n->peer == client)
			last_send = i;
		if (op_info[n->op].flags & OPF_EFFECT)
			last_effect = i;
	}
	return last_effect > last_send;
}

static TfgPlan *
plan_new(Program *p)
{
	Arena *a = p->arena;
	TfgPlan *pl = arena_alloc(a, sizeof *pl);

	pl->file = p->src->path;
	pl->ntask = p->ntask;
	pl->tasks = arena_alloc(a, (p->ntask + 1) * sizeof *pl->tasks);
	for (int t = 0; t < p->ntask; t++) {
		pl->tasks[t].job = p->tasks[t].job;
		pl->tasks[t].index = p->tasks[t].index;
		pl->tasks[t].addr = p->tasks[t].addr;
		pl->tasks[t].name = p->tasks[t].name;
	}
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
			r->feeds[i].key = g->feed_key ? g->feed_key[i]
						      : UINT32_MAX;
		}
		r->nfetch = g->nfetch;
		r->fetches = arena_alloc(a, (g->nfetch + 1) * sizeof *r->fetches);
		for (int i = 0; i < g->nfetch; i++) {
			r->fetches[i].name = ir_node_label(g->fetch[i]);
			r->fetches[i].key = g->fetch_key ? g->fetch_key[i]
							 : UINT32_MAX;
		}
		r->tasks = arena_alloc(a, (p->ntask + 1) * sizeof *r->tasks);
		r->needs_done = arena_alloc(a, (p->ntask + 1) * sizeof(int));
		for (int t = 0; g->parts && t < p->ntask; t++) {
			if (g->parts[t].n == 0)
				continue;
			r->needs_done[r->ntask] =
			    t != g->client && (g->parts[t].sends == 0 ||
					       effect_after(&g->parts[t],
							    g->client));
			r->tasks[r->ntask++] = t;
		}
	}
	pl->nsession = p->nsession;
	pl->sessions = p->sessions;
	pl->nvar = p->vars.n;
	pl->vars = arena_alloc(a, (p->vars.n + 1) * sizeof *pl->vars);
	for (int i = 0; i < p->vars.n; i++) {
		const IrVar *v = p->vars.v[i];
		RtVar *r = &pl->vars[i];

		r->name = v->name;
		r->task = v->draw ? v->draw->task : dev_task_index(p, v->req);
		r->hidden = v->draw != NULL;
		r->dtype = v->dtype;
		r->shape = v->shape;
		r->nbytes = (size_t)tfg_shape_numel(&v->shape) *
			    tfg_dtype_size(v->dtype);
		r->where = diag_where(a, v->loc);
		r->part = v->part;
	}
	return pl;
}

int
plan_program(Program *p)
{
	TfgPlan *pl = plan_new(p);

	pl->nedge = p->edges.n;
	pl->edges = arena_alloc(p->arena, (p->edges.n + 1) * sizeof *pl->edges);
	for (int i = 0; i < p->edges.n; i++)
		pl->edges[i] = *(RtEdge *)p->edges.v[i];
	pl->hash = plan_hash(p, pl);
	pl->runs = runs_hash(p);
	p->plan = pl;
	return 0;
}

/* The tasks that may take part in signature s of a generic plan: the
 * client and the tasks of every node its fetches need, in index order.
 * A specialisation's own tasks are among them (the passes keep values on
 * their devices), so its client can ask them all to compile it at once
 * (runtime/spec.c). */
static void
candidates(Program *p, const IrSig *g, RtSig *r)
{
	char *seen = ir_reach(p, g->fetch, g->nfetch, g->target, g->ntarget);
	char *on = arena_alloc(p->arena, p->ntask + 1);

	on[g->client] = 1;
	for (int i = 0; i < p->g.nodes.n; i++)
		if (seen[i])
			on[((IrNode *)p->g.nodes.v[i])->task] = 1;
	r->ntask = 0;
	for (int t = 0; t < p->ntask; t++)
		if (on[t])
			r->tasks[r->ntask++] = t;
}

int
plan_generic(Program *p)
{
	TfgPlan *pl = plan_new(p);

	for (int s = 0; s < p->nsig; s++)
		candidates(p, &p->sigs[s], &pl->sigs[s]);
	pl->generic = 1;
	pl->edges = arena_alloc(p->arena, sizeof *pl->edges);
	pl->hash = plan_hash(p, pl);
	pl->runs = runs_hash(p);
	p->plan = pl;
	return 0;
}
