/*
 * compiler/place.c: every node gets a complete device (spec §7.4 "Placement").
 *
 * A node inside device blocks takes their merged device, completed with
 * the first job, task 0 and cpu:0.  A node outside every block follows its
 * consumers when they all agree, else goes to /job:<first>/task:0/cpu:0.
 * Nodes are visited last to first: consumers are always defined after
 * what they consume, so they are placed by the time we need them.  The
 * result depends on the program alone, never on which session runs.
 */
#include <string.h>

#include "compiler/compiler_int.h"

static int
dev_eq(Device a, Device b)
{
	return strcmp(a.job, b.job) == 0 && a.task == b.task &&
	       a.kind == b.kind && a.index == b.index;
}

static int
requested(const IrNode *n)
{
	return n->req.job || n->req.task >= 0 || n->req.kind != DEV_UNSET;
}

int
place_program(Program *p)
{
	int n = p->g.nodes.n;
	IrNode **nodes = (IrNode **)p->g.nodes.v;
	IrNode **first = arena_alloc(p->arena, (n + 1) * sizeof *first);
	char *agree = arena_alloc(p->arena, n + 1);

	/* first[i]: some consumer of node i; agree[i]: all consumers of i
	   are on the same device as that one.  Filled as consumers get
	   placed, last to first. */
	for (int i = n - 1; i >= 0; i--) {
		IrNode *x = nodes[i];
		if (requested(x)) {
			x->dev = dev_complete(p, x->req);
			if (!x->why)
				x->why = "its device";
		} else if (first[i] && agree[i] != 2) {
			x->dev = first[i]->dev;
			x->why = "with its consumers";
		} else {
			x->dev = dev_complete(p, DEVICE_UNSET);
			x->why = first[i] ? "its consumers disagree: the "
					    "default device"
					  : "the default device";
		}
		x->task = dev_task_index(p, x->dev);
		TFG_ASSERT(x->task >= 0);
		for (int k = 0; k < x->nin; k++) {
			int j = x->in[k]->id;
			if (!first[j])
				first[j] = x, agree[j] = 1;
			else if (!dev_eq(first[j]->dev, x->dev))
				agree[j] = 2;
		}
	}
	/* A random maker's hidden variable lives where its draw runs:
	   the nodes checkpoints made for it go there, and so does the
	   input a restore feeds it through. */
	for (int i = 0; i < n; i++) {
		IrNode *x = nodes[i];
		if (!x->var || !x->var->draw || x == x->var->draw)
			continue;
		x->dev = x->var->draw->dev;
		x->task = x->var->draw->task;
		x->why = "with its random maker";
		if (x->nin == 1 && x->in[0]->op == OP_input) {
			x->in[0]->dev = x->dev;
			x->in[0]->task = x->task;
			x->in[0]->why = x->why;
		}
	}
	for (int i = 0; i < n; i++)
		vec_push(p->arena, &p->placement_log,
			 arena_printf(p->arena, "%s: (%s) %s  [%s]",
				      ir_node_label(nodes[i]),
				      op_info[nodes[i]->op].name,
				      dev_str(p->arena, nodes[i]->dev),
				      nodes[i]->why));
	return 0;
}
