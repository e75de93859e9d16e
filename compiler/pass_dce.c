/*
 * compiler/pass_dce.c: dead-code elimination on the graph (spec/design.md
 * "Passes").
 *
 * A node stays when a fetch or a target (initialize()'s initializers) of
 * some run signature needs it, or when it is
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

/* Keeps the live nodes, in order, renumbered. */
static void
sweep(Program *p, const char *live)
{
	int n = p->g.nodes.n, w = 0;

	for (int i = 0; i < n; i++) { /* counted by ids that go: not */
		IrNode *x = p->g.nodes.v[i];
		if (live[i] && x->count && !live[x->count->id])
			x->count = NULL;
	}
	for (int i = 0; i < n; i++) {
		IrNode *x = p->g.nodes.v[i];
		if (!live[i])
			continue;
		x->id = w;
		p->g.nodes.v[w++] = x;
	}
	p->g.nodes.n = w;
}

int
dce_program(Program *p)
{
	int n = p->g.nodes.n;
	PtrVec stack = {0};

	for (int s = 0; s < p->nsig; s++) {
		for (int i = 0; i < p->sigs[s].nfetch; i++)
			vec_push(p->arena, &stack, p->sigs[s].fetch[i]);
		for (int i = 0; i < p->sigs[s].ntarget; i++)
			vec_push(p->arena, &stack, p->sigs[s].target[i]);
	}
	for (int i = 0; i < n; i++) {
		IrNode *x = p->g.nodes.v[i];
		if (x->op == OP_input)
			vec_push(p->arena, &stack, x);
	}
	sweep(p, ir_reach_vec(p, &stack));
	return 0;
}

/* A specialisation (spec/design.md "Unknown dims") compiles one run
 * signature: only what its fetches need stays, inputs included, so the
 * inputs other runs feed with dims still `?` go, and every dim left is
 * known (the signature's feeds were given theirs). */
int
prune_to_sig(Program *p, int sig)
{
	if (sig < 0 || sig >= p->nsig) {
		diag_error(p->diag, (SrcLoc){0}, "no run signature %d to "
			   "specialise (the program has %d)", sig, p->nsig);
		return 1;
	}
	for (int s = 0; s < p->nsig; s++) {
		if (s == sig)
			continue;
		p->sigs[s].nfetch = 0;
		p->sigs[s].ntarget = 0;
		p->sigs[s].nfeed = 0;
	}
	sweep(p, ir_reach(p, p->sigs[sig].fetch, p->sigs[sig].nfetch,
			  p->sigs[sig].target, p->sigs[sig].ntarget));
	for (int i = 0; i < p->g.nodes.n; i++) {
		IrNode *x = p->g.nodes.v[i];
		if (!shape_known(&x->shape))
			diag_error(p->diag, x->loc, "'%s' has dims not known "
				   "in this specialisation (%s)",
				   ir_node_label(x),
				   ir_type_str(p->arena, x->dtype, &x->shape));
	}
	return p->diag->nerr;
}
