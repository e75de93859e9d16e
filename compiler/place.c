/*
 * compiler/place.c: every node gets a complete device (spec §7.4 "Placement").
 *
 * A node inside device blocks takes their merged device, completed with
 * the first job, task 0 and cpu:0.  A node outside every block follows its
 * consumers when they all agree, else goes to /job:<first>/task:0/cpu:0.
 * With --prefer-gpu, a device that names no CPU or GPU is the task's
 * gpu:0, as TF places ops when a GPU is present.
 * What must be in host memory (OPF_HOST: variables, feeds, messages;
 * strings) goes to its task's cpu:0 when a block asks for a GPU.
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

/* d completed; a kind left unset is the task's GPU 0 with
 * --prefer-gpu (TF's default when a GPU is present). */
static Device
complete(const Program *p, Device d)
{
	Device c = dev_complete(p, d);

	if (d.kind == DEV_UNSET && p->opt && p->opt->prefer_gpu)
		c.kind = DEV_GPU, c.index = 0;
	return c;
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
			x->dev = complete(p, x->req);
			if (!x->why)
				x->why = "its device";
		} else if (first[i] && agree[i] != 2) {
			x->dev = first[i]->dev;
			x->why = "with its consumers";
		} else {
			x->dev = complete(p, DEVICE_UNSET);
			x->why = first[i] ? "its consumers disagree: the "
					    "default device"
					  : "the default device";
		}
		if (x->dev.kind == DEV_GPU &&
		    ((op_info[x->op].flags & OPF_HOST) ||
		     x->dtype == TFG_STRING)) {
			x->dev.kind = DEV_CPU;
			x->dev.index = 0;
			x->why = x->dtype == TFG_STRING
			    ? "strings live in host memory"
			    : "state, feeds and messages live in host memory";
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
	p->placed = arena_alloc(p->arena, ((size_t)n + 1) * sizeof *p->placed);
	p->nplaced = n;
	for (int i = 0; i < n; i++)
		p->placed[i] = (IrPlaced){nodes[i]->name, nodes[i]->id,
					  nodes[i]->op, nodes[i]->dev,
					  nodes[i]->why};
	return 0;
}
