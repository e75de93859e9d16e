/*
 * compiler/pass_cse.c: common-subexpression elimination on the graph
 * (spec/design.md "Passes").
 *
 * Two nodes are the same value when they have the same op, dtype, shape
 * and inputs (after merging), the same (placed) device and the same
 * attributes (slice bounds, axes, perm, a maker's arguments, a constant's
 * bytes: for strings, first their number, then records and text).
 * Random makers are deterministic given their key and stream, so they
 * merge only when both match: two calls without seed= differ in
 * their stream, two with the same seed= are the same tensor.  Inputs never
 * merge (each is its own feed), and a fetched node is never replaced,
 * since the fetch is named after it.  Uses of a replaced node move to the
 * first equal one; the replaced node is left unused, for pass_dce.c.
 *
 * Nodes are hashed in definition order (a topological order), so a node's
 * inputs are already merged when it is looked up.
 */
#include <string.h>

#include "compiler/compiler_int.h"

static uint64_t
node_hash(const IrNode *x)
{
	uint64_t h = IR_FNV_BASIS;

	h = ir_fnv(h, &x->op, sizeof x->op);
	h = ir_fnv(h, &x->dtype, sizeof x->dtype);
	h = ir_fnv(h, x->shape.dims, x->shape.rank * sizeof *x->shape.dims);
	for (int k = 0; k < x->nin; k++)
		h = ir_fnv(h, &x->in[k]->id, sizeof x->in[k]->id);
	return ir_attr_hash(h, x);
}

static int
same_dev(Device a, Device b)
{
	return a.task == b.task && a.kind == b.kind && a.index == b.index &&
	       (a.job == b.job || (a.job && b.job && !strcmp(a.job, b.job)));
}

static int
same(const IrNode *a, const IrNode *b)
{
	int r = a->shape.rank;

	if (a->op != b->op || a->dtype != b->dtype || r != b->shape.rank ||
	    a->nin != b->nin || a->weak != b->weak || !same_dev(a->dev, b->dev))
		return 0;
	if (memcmp(a->shape.dims, b->shape.dims, r * sizeof *a->shape.dims))
		return 0;
	/* a check's error names where it was written: one of another
	   place would name a call the run may not have */
	if (a->op == OP_check_range &&
	    (a->loc.file != b->loc.file || a->loc.line != b->loc.line ||
	     a->loc.col != b->loc.col))
		return 0;
	for (int k = 0; k < a->nin; k++)
		if (a->in[k] != b->in[k])
			return 0;
	/* the attributes ops.def declares for the op, and only those
	   (compiler/attr.c); strings: equal values have equal bytes, since
	   the checker lays the text out in element order (ops_string.c) */
	return ir_attr_eq(a, b);
}

int
cse_program(Program *p)
{
	int n = p->g.nodes.n, cap = 16;
	IrNode **repl = arena_alloc(p->arena, (n + 1) * sizeof *repl);
	char *fetched = arena_alloc(p->arena, n + 1);
	IrNode **tab;

	while (cap < 2 * n)
		cap *= 2;
	tab = arena_alloc(p->arena, cap * sizeof *tab);
	for (int s = 0; s < p->nsig; s++)
		for (int i = 0; i < p->sigs[s].nfetch; i++)
			fetched[p->sigs[s].fetch[i]->id] = 1;
	for (int i = 0; i < n; i++) {
		IrNode *x = p->g.nodes.v[i];
		size_t h;
		repl[i] = x;
		for (int k = 0; k < x->nin; k++)
			x->in[k] = repl[x->in[k]->id];
		if (x->count)
			x->count = repl[x->count->id];
		/* inputs are fed one by one; state is read and changed
		   where it is, once per node */
		if (x->op == OP_input || (op_info[x->op].flags &
					  (OPF_STATEFUL | OPF_EFFECT | OPF_RANDOM)))
			continue;
		h = (size_t)node_hash(x) & (size_t)(cap - 1);
		for (; tab[h]; h = (h + 1) & (size_t)(cap - 1))
			if (same(tab[h], x))
				break;
		if (!tab[h])
			tab[h] = x;
		else if (!fetched[i])
			repl[i] = tab[h];
	}
	return 0;
}
