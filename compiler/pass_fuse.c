/*
 * compiler/pass_fuse.c: fusion, per part after partition (spec/design.md
 * "Passes").
 *
 * A group is a set of elementwise nodes (OPF_ELEMWISE: arithmetic, the
 * functions, comparisons, where, cast) of one part whose values, except
 * the root's, have no consumer outside the group.  Such a group becomes
 * one node: the root, rewritten in place to OP_fused with the group's
 * external inputs as its inputs and an IrFuse program (compiler.h) that
 * codegen evaluates per element inside one loop nest, so no member but the
 * root gets a buffer.  A group whose root feeds only a reduction
 * (reduce_sum/mean/prod/max/min) goes into the reduction instead: the
 * reduction's input element is the program's value, and the root needs no
 * buffer either.
 *
 * Groups grow from the part's end (a reverse topological order): an
 * unfused elementwise node is a root, and each earlier node joins when it
 * is elementwise, not yet in a group, and every consumer of its value is
 * a member.  One reverse scan from the root finds them all, since a node's
 * consumers come after it.  Sends (fetches among them) and every other op
 * are consumers outside any group, so a value that must exist in memory
 * is a root or stays a node of its own.
 *
 * A group whose external inputs include a matmul consumed only by the
 * group (not sent, not fetched), with the root's shape and dtype,
 * becomes the matmul's epilogue instead: the root turns into the matmul
 * (inputs: its two operands, then the group's other inputs) and carries
 * the program, whose anchor operand is the product element, so codegen
 * (codegen/cpu_shape.c) applies it to each block of rows right after
 * computing them, while they are in cache.  A single elementwise op
 * (relu(x @ w)) is enough.
 *
 * Members may have fewer elements than the root (broadcasting); codegen
 * then recomputes them per element of the root, so only cheap ops join on
 * those terms (not exp, log, tanh, sigmoid, pow, sqrt, / or %).  At most
 * FUSE_MAX_IN external inputs per group: codegen's loop nests carry a
 * fixed number of operands.
 *
 * Before grouping, a transpose of a matrix that a matmul of two matrices
 * on a CPU reads becomes a flag of the matmul (IrNode.trans), which
 * BLAS's transa/transb and the loop's strides honour, and the transpose
 * goes when nothing else reads it: the gradients of x @ w are
 * g @ transpose(w) and transpose(x) @ g (compiler/autodiff.c), and
 * copying x (a batch of inputs) to transpose it cost as much as the
 * product itself.  GPU nodes keep their transposes.
 */
#include <string.h>

#include "compiler/compiler_int.h"

enum { FUSE_MAX_IN = 12 };

typedef struct Fuser {
	Program *p;
	IrPart *part;
	int *nuse;   /* [n]: references to node i from the part's nodes */
	int *grp;    /* [n]: group of node i, -1 none */
	char *gone;  /* [n]: fused away */
	int ngrp;
} Fuser;

static int
elemwise(const IrNode *x)
{
	/* state is read and changed where it is, once a run: never
	   inside another node's loop */
	return (op_info[x->op].flags & OPF_ELEMWISE) &&
	       !(op_info[x->op].flags & (OPF_STATEFUL | OPF_EFFECT |
					 OPF_RANDOM)) &&
	       x->nin >= 1 && x->nin <= 3;
}

static int
reduction(const IrNode *x)
{
	switch (x->op) {
	case OP_reduce_sum:
	case OP_reduce_mean:
	case OP_reduce_prod:
	case OP_reduce_max:
	case OP_reduce_min:
		return x->nin == 1 && !x->fuse;
	default:
		return 0;
	}
}

/* Worth recomputing per element of a larger group. */
static int
cheap(const IrNode *x)
{
	switch (x->op) {
	case OP_exp: case OP_log: case OP_tanh: case OP_sigmoid:
	case OP_pow: case OP_sqrt: case OP_div: case OP_mod:
		return 0;
	default:
		return 1;
	}
}

static int
index_of(const IrPart *pt, int before, const IrNode *x)
{
	for (int i = before - 1; i >= 0; i--)
		if (pt->nodes[i] == x)
			return i;
	return -1;
}

/* The group's external inputs, in first-use order, into ext (when not
 * NULL); returns how many.  Members: grp[i] == g, plus `extra`. */
static int
externals(Fuser *F, int g, int lo, int hi, int extra, IrNode **ext)
{
	int next = 0;
	IrNode *seen[3 * FUSE_MAX_IN + 8];

	for (int i = lo; i <= hi; i++) {
		IrNode *m = F->part->nodes[i];
		if (F->grp[i] != g && i != extra)
			continue;
		for (int k = 0; k < m->nin; k++) {
			int j = index_of(F->part, i, m->in[k]), dup = 0;
			if (j >= 0 && (F->grp[j] == g || j == extra))
				continue;
			for (int e = 0; e < next; e++)
				dup |= seen[e] == m->in[k];
			if (dup)
				continue;
			if (next == (int)(sizeof seen / sizeof *seen))
				return next + 1;
			seen[next++] = m->in[k];
		}
	}
	if (ext)
		memcpy(ext, seen, next * sizeof *ext);
	return next;
}

/* Grows group g from the root at index r (already a member); returns the
 * number of members. */
static int
grow(Fuser *F, int g, int r, const TfgShape *shape)
{
	int count = 1;
	int64_t total = tfg_shape_numel(shape);

	for (int j = r - 1; j >= 0; j--) {
		IrNode *x = F->part->nodes[j];
		int uses = 0;
		if (F->grp[j] >= 0 || !elemwise(x) || F->nuse[j] == 0)
			continue;
		if (tfg_shape_numel(&x->shape) < total && !cheap(x))
			continue;
		for (int i = j + 1; i <= r; i++) {
			IrNode *m = F->part->nodes[i];
			if (F->grp[i] != g)
				continue;
			for (int k = 0; k < m->nin; k++)
				uses += m->in[k] == x;
		}
		if (uses != F->nuse[j] ||
		    externals(F, g, j, r, j, NULL) > FUSE_MAX_IN)
			continue;
		F->grp[j] = g;
		count++;
	}
	return count;
}

/* The program of group g (root at r) over shape, with the external
 * inputs ext[0..next); operands that are `anchor` (when not NULL) read
 * the anchor. */
static IrFuse *
program(Fuser *F, int g, int r, const TfgShape *shape, IrNode **ext,
	int next, const IrNode *anchor)
{
	Arena *a = F->p->arena;
	IrFuse *f = arena_alloc(a, sizeof *f);
	int *slot = arena_alloc(a, (r + 1) * sizeof *slot);

	for (int i = 0; i <= r; i++)
		f->n += F->grp[i] == g;
	f->ops = arena_alloc(a, f->n * sizeof *f->ops);
	f->shape = *shape;
	for (int i = 0, m = 0; i <= r; i++) {
		IrNode *x = F->part->nodes[i];
		IrFuseOp *o = &f->ops[m];
		if (F->grp[i] != g)
			continue;
		slot[i] = m++;
		o->op = x->op;
		o->dtype = x->dtype;
		o->shape = x->shape;
		o->nin = x->nin;
		o->name = arena_strdup(a, ir_node_label(x));
		for (int k = 0; k < x->nin; k++) {
			int j = index_of(F->part, i, x->in[k]);
			o->in_dt[k] = x->in[k]->dtype;
			if (j >= 0 && F->grp[j] == g) {
				o->arg[k] = slot[j];
				continue;
			}
			if (x->in[k] == anchor) {
				o->arg[k] = IR_FUSE_ANCHOR;
				continue;
			}
			for (int e = 0; e < next; e++)
				if (ext[e] == x->in[k])
					o->arg[k] = IR_FUSE_IN(e);
		}
	}
	return f;
}

/* Rewrites node x (the root, or the reduction it feeds) to carry group g
 * with inputs ext[0..next) and marks the members gone (but x). */
static void
attach_to(Fuser *F, int g, int r, IrNode *x, OpKind op,
	  const TfgShape *shape, IrNode **ext, int next, const IrNode *anchor)
{
	const IrFuse *f = program(F, g, r, shape, ext, next, anchor);

	if (ir_set_fuse(F->p, x, op, f, ext, next) != 0)
		return;
	for (int i = 0; i <= r; i++)
		if (F->grp[i] == g && F->part->nodes[i] != x)
			F->gone[i] = 1;
}

static void
attach(Fuser *F, int g, int r, IrNode *x, OpKind op, const TfgShape *shape)
{
	IrNode *ext[FUSE_MAX_IN + 1];
	int next = externals(F, g, 0, r, -1, ext);

	attach_to(F, g, r, x, op, shape, ext, next, NULL);
}

/* Group g (root x at r) as the epilogue of a matmul among its external
 * inputs: one whose every use comes from the group (so it is neither
 * sent nor fetched), with the root's shape and dtype (the root's value
 * takes the product's place in the output buffer).  The root becomes
 * the matmul, its inputs the matmul's two and then the group's other
 * external inputs; the product node goes.  Returns whether it did. */
static int
epilogue(Fuser *F, int g, int r, IrNode *x)
{
	IrNode *ext[FUSE_MAX_IN + 1], *in[FUSE_MAX_IN + 3];
	int next = externals(F, g, 0, r, -1, ext), nin = 2, j = -1;
	IrNode *mm = NULL;

	for (int e = 0; e < next && !mm; e++) {
		IrNode *c = ext[e];
		int uses = 0;
		if (c->op != OP_matmul || c->fuse || c->nin != 2 ||
		    c->dtype != x->dtype ||
		    !tfg_shape_eq(&c->shape, &x->shape) ||
		    (j = index_of(F->part, r, c)) < 0 || F->grp[j] >= 0)
			continue;
		for (int i = j + 1; i <= r; i++) {
			IrNode *m = F->part->nodes[i];
			for (int k = 0; F->grp[i] == g && k < m->nin; k++)
				uses += m->in[k] == c;
		}
		if (uses == F->nuse[j])
			mm = c;
	}
	if (!mm)
		return 0;
	in[0] = mm->in[0];
	in[1] = mm->in[1];
	for (int e = 0; e < next; e++)
		if (ext[e] != mm && ext[e] != in[0] && ext[e] != in[1])
			in[nin++] = ext[e];
	attach_to(F, g, r, x, OP_matmul, &x->shape, in, nin, mm);
	x->trans = mm->trans;
	F->gone[j] = 1;
	return 1;
}

/* Folds the transposes that CPU matmuls of two matrices read into them
 * (above); a transpose left without a reader goes. */
static void
fold_transposes(Fuser *F)
{
	IrPart *pt = F->part;

	for (int i = 0; i < pt->n; i++) {
		IrNode *x = pt->nodes[i];
		if (x->op != OP_matmul || x->fuse || x->nin != 2 ||
		    x->dev.kind == DEV_GPU || x->shape.rank != 2 ||
		    x->in[0]->shape.rank != 2 || x->in[1]->shape.rank != 2)
			continue;
		for (int k = 0; k < 2; k++) {
			IrNode *t = x->in[k];
			int j = index_of(pt, i, t), s;
			if (j < 0 || t->op != OP_transpose || t->nin != 1 ||
			    t->in[0]->shape.rank != 2 || (x->trans >> k & 1))
				continue;
			x->in[k] = t->in[0];
			x->trans |= 1 << k;
			s = index_of(pt, j, t->in[0]);
			if (--F->nuse[j] == 0)
				F->gone[j] = 1; /* its use of the matrix moves */
			else if (s >= 0)
				F->nuse[s]++;
		}
	}
}

static void
fuse_part(Program *p, IrPart *pt)
{
	int n = pt->n, w = 0;
	Fuser F = {p, pt, NULL, NULL, NULL, 0};

	F.nuse = arena_alloc(p->arena, (n + 1) * sizeof *F.nuse);
	F.grp = arena_alloc(p->arena, (n + 1) * sizeof *F.grp);
	F.gone = arena_alloc(p->arena, n + 1);
	for (int i = 0; i < n; i++) {
		IrNode *x = pt->nodes[i];
		F.grp[i] = -1;
		for (int k = 0; k < x->nin; k++) {
			int j = index_of(pt, i, x->in[k]);
			if (j >= 0)
				F.nuse[j]++;
		}
	}
	fold_transposes(&F);
	for (int r = n - 1; r >= 0; r--) {
		IrNode *x = pt->nodes[r];
		int g = F.ngrp, j, members;
		if (reduction(x) && (j = index_of(pt, r, x->in[0])) >= 0 &&
		    F.grp[j] < 0 && elemwise(x->in[0]) && F.nuse[j] == 1) {
			TfgShape s = x->in[0]->shape;
			F.ngrp++;
			F.grp[j] = g;
			grow(&F, g, j, &s);
			attach(&F, g, j, x, x->op, &s);
			F.gone[j] = 1;
			continue;
		}
		if (F.grp[r] >= 0 || !elemwise(x))
			continue;
		F.ngrp++;
		F.grp[r] = g;
		members = grow(&F, g, r, &x->shape);
		if (epilogue(&F, g, r, x))
			continue;
		if (members > 1) {
			attach(&F, g, r, x, OP_fused, &x->shape);
		}
	}
	for (int i = 0; i < n; i++)
		if (!F.gone[i])
			pt->nodes[w++] = pt->nodes[i];
	pt->n = w;
}

int
fuse_program(Program *p)
{
	for (int s = 0; s < p->nsig; s++)
		for (int t = 0; t < p->ntask; t++)
			if (p->sigs[s].parts[t].n > 0)
				fuse_part(p, &p->sigs[s].parts[t]);
	return p->diag ? p->diag->nerr : 0; /* ir_set_fuse refused one */
}
