/*
 * compiler/pass_dce.c: dead-code elimination on the graph (spec/design.md
 * "Passes").
 *
 * A node stays when a fetch of some run signature needs it, or when it is
 * an input (sessions and --feed may feed any input, and an unfed input is
 * an error that must still be reported where it is run).  Everything else
 * goes: nodes no session fetches, and what folding (pass_fold.c) and CSE
 * (pass_cse.c) left unused.  Partition prunes per signature anyway; this
 * pass shrinks the dumps and the work of every later phase.
 *
 * The survivors keep their order and are renumbered (IrNode.id is the
 * index in IrGraph.nodes), so unnamed nodes' labels ("_7") may change.
 */
#include "compiler/compiler_int.h"

int
dce_program(Program *p)
{
	int n = p->g.nodes.n, w = 0;
	char *live = arena_alloc(p->arena, n + 1);
	PtrVec stack = {0};

	for (int s = 0; s < p->nsig; s++)
		for (int i = 0; i < p->sigs[s].nfetch; i++)
			vec_push(p->arena, &stack, p->sigs[s].fetch[i]);
	for (int i = 0; i < n; i++) {
		IrNode *x = p->g.nodes.v[i];
		if (x->op == OP_input)
			vec_push(p->arena, &stack, x);
	}
	while (stack.n > 0) {
		IrNode *x = stack.v[--stack.n];
		if (live[x->id])
			continue;
		live[x->id] = 1;
		for (int k = 0; k < x->nin; k++)
			vec_push(p->arena, &stack, x->in[k]);
	}
	for (int i = 0; i < n; i++) {
		IrNode *x = p->g.nodes.v[i];
		if (!live[i])
			continue;
		x->id = w;
		p->g.nodes.v[w++] = x;
	}
	p->g.nodes.n = w;
	return 0;
}
