/*
 * compiler/partition.c: per run signature, what each task computes.
 *
 * Only what the fetches and targets need is kept
 * (spec §8.3 "run: fetches, feeds and steps").  Walking the graph in
 * definition order (a topological order), each needed node is cloned into its
 * task's part with its inputs rewired inside that part: a value from another
 * task comes through an OP_recv, made where its first consumer needs it, and
 * the producing part gets one OP_send per consuming task right after the
 * producer, so that remote work can start as early as possible.  Feeds are
 * OP_input nodes that receive from the client; each fetch is an OP_send to the
 * client.  Small constants (<= 4 KiB) are copied into every part that uses
 * them instead of being sent.
 *
 * Rendezvous keys are global: one per (value, source task, destination
 * task), so that signatures sharing an edge share its key; the step id on
 * the wire keeps steps apart.
 */
#include <string.h>

#include "compiler/compiler_int.h"

enum { SMALL_CONST = 4096 };

typedef struct Cut {
	Program *p;
	IrSig *g;
	int sig;
	PtrVec *parts;   /* [ntask]: IrNode * in order */
	IrNode ***local; /* [ntask][node id]: the node's value in that part */
	int *sends;      /* [ntask] */
} Cut;

static uint32_t
edge_key(Program *p, const char *name, int src, int dst, const IrNode *x)
{
	RtEdge *e;

	for (int i = 0; i < p->edges.n; i++) {
		e = p->edges.v[i];
		if (strcmp(e->name, name) == 0)
			return e->key;
	}
	e = arena_alloc(p->arena, sizeof *e);
	e->key = (uint32_t)p->edges.n;
	e->name = name;
	e->src = src;
	e->dst = dst;
	e->dtype = x->dtype;
	e->shape = x->shape;
	e->nbytes = ir_nbytes(x);
	vec_push(p->arena, &p->edges, e);
	return e->key;
}

static int
small_const(const IrNode *x)
{
	return x->op == OP_const && ir_nbytes(x) <= SMALL_CONST;
}

static IrNode *
add(Cut *c, int t, IrNode *n)
{
	n->task = t;
	vec_push(c->p->arena, &c->parts[t], n);
	if (n->op == OP_send)
		c->sends[t]++;
	return n;
}

/* An OP_send of value `in` (of graph node x), or an OP_recv (in NULL),
 * in task t's part. */
static IrNode *
comm(Cut *c, const IrNode *x, IrNode *in, int t, int peer, uint32_t key)
{
	return add(c, t, ir_comm(c->p, x, in, key, peer));
}

static const char *
edge_name(Cut *c, const IrNode *x, const char *what, int src, int dst)
{
	return arena_printf(c->p->arena, "%s%s;%s->%s", ir_node_label(x),
			    what, c->p->tasks[src].name, c->p->tasks[dst].name);
}

/* The value of graph node x inside task t's part. */
static IrNode *
value_in(Cut *c, int t, IrNode *x)
{
	IrNode **slot = &c->local[t][x->id];
	uint32_t key;

	if (*slot)
		return *slot;
	if (small_const(x)) {
		*slot = add(c, t, ir_clone(c->p->arena, x));
		return *slot;
	}
	TFG_ASSERT(x->task != t);
	key = edge_key(c->p, edge_name(c, x, "", x->task, t), x->task, t, x);
	*slot = comm(c, x, NULL, t, x->task, key);
	return *slot;
}

static void
cut_node(Cut *c, IrNode *x, const char *needed, PtrVec *users)
{
	int t = x->task, ntask = c->p->ntask;
	char *sent = arena_alloc(c->p->arena, ntask);
	IrNode *v;

	if (small_const(x))
		return; /* copied where used, by value_in */
	v = ir_clone(c->p->arena, x);
	for (int k = 0; k < x->nin; k++)
		v->in[k] = value_in(c, t, x->in[k]);
	if (x->op == OP_input) {
		for (int i = 0; i < c->g->nfeed; i++) {
			if (c->g->feed[i] != x)
				continue;
			v->key = c->g->feed_key[i] = edge_key(
			    c->p, edge_name(c, x, "@feed", c->g->client, t),
			    c->g->client, t, x);
			v->peer = c->g->client;
		}
	}
	c->local[t][x->id] = add(c, t, v);
	for (int i = 0; i < users->n; i++) {
		IrNode *u = users->v[i];
		const char *name;
		if (!needed[u->id] || u->task == t || sent[u->task])
			continue;
		sent[u->task] = 1;
		name = edge_name(c, x, "", t, u->task);
		comm(c, x, v, t, u->task, edge_key(c->p, name, t, u->task, x));
	}
}

static void
fetch_sends(Cut *c, IrNode *x)
{
	int client = c->g->client;

	for (int k = 0; k < c->g->nfetch; k++) {
		IrNode *v;
		const char *what;
		if (c->g->fetch[k] != x)
			continue;
		v = value_in(c, x->task, x);
		what = arena_printf(c->p->arena, "@fetch%d", k);
		c->g->fetch_key[k] = edge_key(
		    c->p, edge_name(c, x, what, x->task, client), x->task,
		    client, x);
		comm(c, x, v, x->task, client, c->g->fetch_key[k]);
	}
}

static void
cut_sig(Program *p, int sig, PtrVec *users)
{
	IrSig *g = &p->sigs[sig];
	int n = p->g.nodes.n;
	IrNode **nodes = (IrNode **)p->g.nodes.v;
	char *needed = ir_reach(p, g->fetch, g->nfetch, g->target,
				g->ntarget);
	Cut c = {p, g, sig, NULL, NULL, NULL};

	c.parts = arena_alloc(p->arena, p->ntask * sizeof *c.parts);
	c.local = arena_alloc(p->arena, p->ntask * sizeof *c.local);
	c.sends = arena_alloc(p->arena, p->ntask * sizeof *c.sends);
	for (int t = 0; t < p->ntask; t++)
		c.local[t] = arena_alloc(p->arena, (n + 1) * sizeof(IrNode *));
	g->feed_key = arena_alloc(p->arena, (g->nfeed + 1) * sizeof(uint32_t));
	g->fetch_key =
	    arena_alloc(p->arena, (g->nfetch + 1) * sizeof(uint32_t));
	for (int i = 0; i < n; i++) {
		if (!needed[i])
			continue;
		cut_node(&c, nodes[i], needed, &users[i]);
		fetch_sends(&c, nodes[i]);
	}
	g->parts = arena_alloc(p->arena, p->ntask * sizeof *g->parts);
	for (int t = 0; t < p->ntask; t++) {
		g->parts[t].sig = sig;
		g->parts[t].task = t;
		g->parts[t].n = c.parts[t].n;
		g->parts[t].nodes = (IrNode **)c.parts[t].v;
		g->parts[t].sends = c.sends[t];
	}
}

int
partition_program(Program *p)
{
	int n = p->g.nodes.n;
	PtrVec *users = arena_alloc(p->arena, (n + 1) * sizeof *users);

	for (int i = 0; i < n; i++) {
		IrNode *x = p->g.nodes.v[i];
		for (int k = 0; k < x->nin; k++)
			vec_push(p->arena, &users[x->in[k]->id], x);
	}
	for (int s = 0; s < p->nsig; s++)
		cut_sig(p, s, users);
	return 0;
}
