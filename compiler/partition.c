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
 * Inside a task, values live on its host or on one of its GPUs
 * (dev_slot): a node's inputs are taken on the node's device, through an
 * OP_copy made where the first consumer on another device needs it;
 * sends, fetches and what the host runs (OPF_HOST) take host values,
 * and receives and feeds arrive in host memory.  Small constants are
 * cloned onto each device that uses them instead.
 *
 * Rendezvous keys are global: one per (value, source task, destination
 * task), so that signatures sharing an edge share its key; the step id on
 * the wire keeps steps apart.
 */
#include <string.h>

#include "compiler/compiler_int.h"

enum { SMALL_CONST = 4096, NSLOT = 1 + TFG_MAX_GPUS };

typedef struct Cut {
	Program *p;
	IrSig *g;
	int sig;
	PtrVec *parts;   /* [ntask]: IrNode * in order */
	IrNode ***local; /* [ntask][node id * NSLOT + slot]: the node's value
			    in that part, on that device (dev_slot); a
			    task's table made at its first use (local_of) */
	int nnode;
	int *sends;      /* [ntask] */
	PtrVec *users;   /* [node id]: the graph's users of each node */
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

/* Device `slot` of task t, as a Device. */
static Device
slot_dev(Cut *c, int t, int slot)
{
	Device d = {c->p->tasks[t].job, c->p->tasks[t].index, DEV_CPU, 0};

	if (slot > 0)
		d.kind = DEV_GPU, d.index = slot - 1;
	return d;
}

/* Task t's table of values (Cut.local), made when the signature first
 * puts a value there: a signature of two tasks in a cluster of 400 made
 * a table per task, 192 MB for a session per worker. */
static IrNode **
local_of(Cut *c, int t)
{
	if (!c->local[t])
		c->local[t] = arena_alloc(c->p->arena, ((size_t)c->nnode + 1) *
					  NSLOT * sizeof(IrNode *));
	return c->local[t];
}

/* The value of graph node x inside task t's part, on device slot. */
static IrNode *
value_in(Cut *c, int t, IrNode *x, int slot)
{
	IrNode **at = &local_of(c, t)[x->id * NSLOT + slot], *home;
	int hs;
	uint32_t key;

	if (*at)
		return *at;
	if (small_const(x)) {
		*at = add(c, t, ir_clone(c->p->arena, x));
		(*at)->dev = slot_dev(c, t, slot);
		return *at;
	}
	if (x->task != t) {
		hs = 0;
		home = local_of(c, t)[x->id * NSLOT];
		if (!home) {
			key = edge_key(c->p, edge_name(c, x, "", x->task, t),
				       x->task, t, x);
			home = comm(c, x, NULL, t, x->task, key);
			home->dev = slot_dev(c, t, 0);
			local_of(c, t)[x->id * NSLOT] = home;
		}
	} else {
		hs = dev_slot(x->dev);
		home = local_of(c, t)[x->id * NSLOT + hs];
		TFG_ASSERT(home);
	}
	if (hs == slot)
		return home;
	*at = add(c, t, ir_copy(c->p, x, home, slot_dev(c, t, slot)));
	return *at;
}

/* A send of counted value x (IrNode.count; spec/design.md "Counted
 * edges") sends only its counted rows where the ids that count them are
 * in the part (on the host): they become its second input and its edge
 * a counted one.  Elsewhere it sends the whole value, which a counted
 * edge takes too. */
static void
counted_send(Cut *c, const IrNode *x, IrNode *snd)
{
	IrNode *ids, **in;
	RtEdge *e;

	if (!x->count || x->shape.rank < 1 || x->dtype == TFG_STRING ||
	    !(ids = local_of(c, snd->task)[x->count->id * NSLOT]) ||
	    ids->dtype != TFG_I64 || ids->shape.rank != 1)
		return;
	in = arena_alloc(c->p->arena, 2 * sizeof *in);
	in[0] = snd->in[0];
	in[1] = ids;
	snd->in = in;
	snd->nin = 2;
	e = c->p->edges.v[snd->key];
	e->counted = x->count == x ? RT_COUNTED_IDS : RT_COUNTED_ZEROS;
}

/* Whether after-node u waits for its input x, a change of state on
 * another task, only so that the run returns after it: u's value goes
 * to fetches alone, and the client waits for the DONE of a task whose
 * part changes state after its last message to the client
 * (compiler/plan.c effect_after).  Then x sends u nothing: a training
 * step of a model on two ps sent some 14 one-byte acknowledgements. */
static int
ack_dropped(const Cut *c, const IrNode *u, const IrNode *x)
{
	if (u->op != OP_after || x == u->in[0] || x->task == u->task ||
	    !(op_info[x->op].flags & OPF_EFFECT) || c->users[u->id].n)
		return 0;
	for (int i = 0; i < c->g->nfetch; i++)
		if (c->g->fetch[i] == u)
			return 1;
	return 0;
}

static void
cut_node(Cut *c, IrNode *x, const char *needed, PtrVec *users)
{
	int t = x->task, ntask = c->p->ntask, slot = dev_slot(x->dev);
	char *sent = arena_alloc(c->p->arena, ntask);
	IrNode *v;

	if (small_const(x))
		return; /* copied where used, by value_in */
	v = ir_clone(c->p->arena, x);
	v->nin = 0;
	for (int k = 0; k < x->nin; k++)
		if (!ack_dropped(c, x, x->in[k]))
			v->in[v->nin++] = value_in(c, t, x->in[k], slot);
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
	local_of(c, t)[x->id * NSLOT + slot] = add(c, t, v);
	for (int i = 0; i < users->n; i++) {
		IrNode *u = users->v[i];
		const char *name;
		IrNode *h, *snd;
		if (!needed[u->id] || u->task == t || sent[u->task] ||
		    ack_dropped(c, u, x))
			continue;
		sent[u->task] = 1;
		name = edge_name(c, x, "", t, u->task);
		h = value_in(c, t, x, 0);
		snd = comm(c, x, h, t, u->task,
			   edge_key(c->p, name, t, u->task, x));
		snd->dev = h->dev;
		counted_send(c, x, snd);
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
		v = value_in(c, x->task, x, 0);
		what = arena_printf(c->p->arena, "@fetch%d", k);
		c->g->fetch_key[k] = edge_key(
		    c->p, edge_name(c, x, what, x->task, client), x->task,
		    client, x);
		comm(c, x, v, x->task, client, c->g->fetch_key[k])->dev =
		    v->dev;
	}
}

/* A gather on axis 0, by i64 ids in host memory, of a variable's read
 * that nothing else in task t's part uses, and with no update of the
 * variable between them, reads only its rows from the variable
 * (OP_gather_var) instead of a copy of the whole: a table's task copied
 * a 3.2 MB shard every step for 512 rows of it. */
static void
rows_in_place(Cut *c, int t)
{
	PtrVec *v = &c->parts[t];

	for (int i = 0; i < v->n; i++) {
		IrNode *x = v->v[i], *g = NULL;
		int uses = 0, j, w;

		if (x->op != OP_variable || !x->var || x->dev.kind != DEV_CPU)
			continue;
		for (j = i + 1; j < v->n && uses < 2; j++) {
			IrNode *u = v->v[j];

			for (int k = 0; k < u->nin; k++)
				if (u->in[k] == x)
					uses++, g = u;
		}
		if (uses != 1 || g->op != OP_gather || g->in[0] != x ||
		    g->axis != 0 || g->in[1]->dtype != TFG_I64 ||
		    g->in[1]->shape.rank != 1 || g->dev.kind != DEV_CPU)
			continue;
		for (j = i + 1; v->v[j] != g; j++)
			if (((IrNode *)v->v[j])->var == x->var &&
			    (op_info[((IrNode *)v->v[j])->op].flags &
			     OPF_EFFECT))
				break;
		if (v->v[j] != g)
			continue;
		if (ir_set_gather_var(c->p, g, x->var) != 0)
			continue;
		for (j = i + 1, w = i; j < v->n; j++)
			v->v[w++] = v->v[j];
		v->n--;
		i--;
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
	Cut c = {p, g, sig, NULL, NULL, 0, NULL, users};

	/* every feed arrives somewhere, each on its own key: one that no
	   fetch needs (an input whose shape alone was wanted) took key 0,
	   a fetch's, and came back as its value */
	for (int i = 0; i < g->nfeed; i++)
		needed[g->feed[i]->id] = 1;

	c.parts = arena_alloc(p->arena, p->ntask * sizeof *c.parts);
	c.local = arena_alloc(p->arena, p->ntask * sizeof *c.local);
	c.sends = arena_alloc(p->arena, p->ntask * sizeof *c.sends);
	c.nnode = n;
	g->feed_key = arena_alloc(p->arena, (g->nfeed + 1) * sizeof(uint32_t));
	g->fetch_key =
	    arena_alloc(p->arena, (g->nfetch + 1) * sizeof(uint32_t));
	for (int i = 0; i < n; i++) {
		if (!needed[i])
			continue;
		cut_node(&c, nodes[i], needed, &users[i]);
		fetch_sends(&c, nodes[i]);
	}
	for (int t = 0; t < p->ntask; t++)
		rows_in_place(&c, t);
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
