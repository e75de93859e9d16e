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
 * (relu(x @ w)) is enough.  A conv2d, a pool or a pool's gradient on a
 * CPU takes an epilogue the same way (relu(conv2d(x, f, ...) + b), or
 * relu's gradient after max_pool_grad): codegen/cpu_conv.c computes a
 * block of images at a time and runs the program over each block's
 * outputs in place.
 *
 * Members may have fewer elements than the root (broadcasting); codegen
 * then recomputes them per element of the root, so only cheap ops join on
 * those terms (cost FUSE_CHEAP or less: not exp, log, tanh, sigmoid, pow,
 * sqrt, / or %).  At most
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
#include <stdint.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* FUSE_CHEAP: the most an element may cost (ops.def's cost, in
   additions) to be recomputed per element of a larger group */
enum { FUSE_MAX_IN = 12, FUSE_CHEAP = 2 };

typedef struct Fuser {
	Program *p;
	IrPart *part;
	int *nuse;   /* [n]: references to node i from the part's nodes */
	int *grp;    /* [n]: group of node i, -1 none */
	char *gone;  /* [n]: fused away */
	int ngrp;
	/* where each node stands in the part: open addressing on its
	   address, cap a power of two */
	const IrNode **key;
	int *at;
	size_t cap;
	/* the group being grown */
	int *mem, nmem;   /* its members' indices, descending */
	int *inuse;       /* [n]: references to node i from its members */
	int *heap, nheap; /* candidates: its members' inputs, largest first */
	int *slot;        /* [n]: a member's place in its program */
} Fuser;

static size_t
pos_hash(const Fuser *F, const IrNode *x)
{
	return (size_t)(((uintptr_t)x >> 4) * 0x9E3779B97F4A7C15ull) &
	       (F->cap - 1);
}

/* The index of x in the part when it is before `before`, or -1. */
static int
index_of(const Fuser *F, int before, const IrNode *x)
{
	for (size_t h = pos_hash(F, x); F->key[h]; h = (h + 1) & (F->cap - 1))
		if (F->key[h] == x)
			return F->at[h] < before ? F->at[h] : -1;
	return -1;
}

static void
index_part(Fuser *F)
{
	IrPart *pt = F->part;

	for (F->cap = 16; F->cap < 2 * (size_t)pt->n; F->cap *= 2)
		;
	F->key = arena_alloc(F->p->arena, F->cap * sizeof *F->key);
	F->at = arena_alloc(F->p->arena, F->cap * sizeof *F->at);
	memset(F->key, 0, F->cap * sizeof *F->key);
	for (int i = 0; i < pt->n; i++) {
		size_t h = pos_hash(F, pt->nodes[i]);
		while (F->key[h] && F->key[h] != pt->nodes[i])
			h = (h + 1) & (F->cap - 1);
		F->key[h] = pt->nodes[i];
		F->at[h] = i;
	}
}

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

/* Worth recomputing per element of a larger group (stdlib/ops.def's
 * cost column). */
static int
cheap(const IrNode *x)
{
	return op_info[x->op].cost <= FUSE_CHEAP;
}

/* The external inputs of the group just grown (F->mem), in first-use
 * order, into ext; returns how many. */
static int
externals(Fuser *F, int g, IrNode **ext)
{
	int next = 0;

	for (int m = F->nmem - 1; m >= 0; m--) {
		int i = F->mem[m];
		IrNode *x = F->part->nodes[i];
		for (int k = 0; k < x->nin; k++) {
			int j = index_of(F, i, x->in[k]), dup = 0;
			if (j >= 0 && F->grp[j] == g)
				continue;
			for (int e = 0; e < next; e++)
				dup |= ext[e] == x->in[k];
			if (!dup)
				ext[next++] = x->in[k];
		}
	}
	return next;
}

static void
heap_push(Fuser *F, int j)
{
	int i = F->nheap++;

	for (; i > 0 && F->heap[(i - 1) / 2] < j; i = (i - 1) / 2)
		F->heap[i] = F->heap[(i - 1) / 2];
	F->heap[i] = j;
}

static int
heap_pop(Fuser *F)
{
	int top = F->heap[0], last = F->heap[--F->nheap], i = 0;

	for (;;) {
		int c = 2 * i + 1;
		if (c >= F->nheap)
			break;
		if (c + 1 < F->nheap && F->heap[c + 1] > F->heap[c])
			c++;
		if (F->heap[c] <= last)
			break;
		F->heap[i] = F->heap[c];
		i = c;
	}
	if (F->nheap > 0)
		F->heap[i] = last;
	return top;
}

/* Node i joins group g: its inputs in the part become candidates. */
static void
join(Fuser *F, int g, int i)
{
	IrNode *x = F->part->nodes[i];

	F->grp[i] = g;
	F->mem[F->nmem++] = i;
	for (int k = 0; k < x->nin; k++) {
		int j = index_of(F, i, x->in[k]);
		if (j >= 0) {
			F->inuse[j]++;
			heap_push(F, j);
		}
	}
}

/* Adds x's inputs to the group's external inputs ext[0..*next) (x's own
 * value leaves them); returns how many there would be, without changing
 * them when `add` is 0. */
static int
ext_with(IrNode **ext, int *next, const IrNode *x, int add)
{
	IrNode *in[FUSE_MAX_IN + 4];
	int n = 0;

	for (int e = 0; e < *next; e++)
		if (ext[e] != x)
			in[n++] = ext[e];
	for (int k = 0; k < x->nin; k++) {
		int dup = 0;
		for (int e = 0; e < n; e++)
			dup |= in[e] == x->in[k];
		if (!dup)
			in[n++] = x->in[k];
	}
	if (add && n <= FUSE_MAX_IN + 3) {
		memcpy(ext, in, n * sizeof *ext);
		*next = n;
	}
	return n;
}

/* Grows group g from the root at index r (made a member here); returns
 * the number of members.  Candidates come largest index first, so when
 * one comes, every member that uses it has joined: it joins when they
 * are all its uses. */
static int
grow(Fuser *F, int g, int r, const TfgShape *shape)
{
	int64_t total = tfg_shape_numel(shape);
	IrNode *ext[FUSE_MAX_IN + 3];
	int next = 0, last = -1;

	F->nmem = F->nheap = 0;
	join(F, g, r);
	ext_with(ext, &next, F->part->nodes[r], 1);
	while (F->nheap > 0) {
		int j = heap_pop(F);
		IrNode *x = F->part->nodes[j];
		if (j == last)
			continue;
		last = j;
		if (F->grp[j] >= 0 || !elemwise(x) || F->nuse[j] == 0 ||
		    F->inuse[j] != F->nuse[j])
			continue;
		if (tfg_shape_numel(&x->shape) < total && !cheap(x))
			continue;
		if (ext_with(ext, &next, x, 0) > FUSE_MAX_IN)
			continue;
		ext_with(ext, &next, x, 1);
		join(F, g, j);
	}
	for (int m = 0; m < F->nmem; m++) {
		IrNode *x = F->part->nodes[F->mem[m]];
		for (int k = 0; k < x->nin; k++) {
			int j = index_of(F, F->mem[m], x->in[k]);
			if (j >= 0)
				F->inuse[j] = 0;
		}
	}
	return F->nmem;
}

/* The program of group g (its members F->mem) over shape, with the
 * external inputs ext[0..next); operands that are `anchor` (when not
 * NULL) read the anchor. */
static IrFuse *
program(Fuser *F, int g, const TfgShape *shape, IrNode **ext, int next,
	const IrNode *anchor)
{
	Arena *a = F->p->arena;
	IrFuse *f = arena_alloc(a, sizeof *f);

	f->n = F->nmem;
	f->ops = arena_alloc(a, f->n * sizeof *f->ops);
	f->shape = *shape;
	for (int m = F->nmem - 1, o_at = 0; m >= 0; m--, o_at++) {
		int i = F->mem[m];
		IrNode *x = F->part->nodes[i];
		IrFuseOp *o = &f->ops[o_at];
		F->slot[i] = o_at;
		o->op = x->op;
		o->dtype = x->dtype;
		o->shape = x->shape;
		o->nin = x->nin;
		o->name = arena_strdup(a, ir_node_label(x));
		for (int k = 0; k < x->nin; k++) {
			int j = index_of(F, i, x->in[k]);
			o->in_dt[k] = x->in[k]->dtype;
			if (j >= 0 && F->grp[j] == g) {
				o->arg[k] = F->slot[j];
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
attach_to(Fuser *F, int g, IrNode *x, OpKind op, const TfgShape *shape,
	  IrNode **ext, int next, const IrNode *anchor)
{
	const IrFuse *f = program(F, g, shape, ext, next, anchor);

	if (ir_set_fuse(F->p, x, op, f, ext, next) != 0)
		return;
	for (int m = 0; m < F->nmem; m++)
		if (F->part->nodes[F->mem[m]] != x)
			F->gone[F->mem[m]] = 1;
}

static void
attach(Fuser *F, int g, IrNode *x, OpKind op, const TfgShape *shape)
{
	IrNode *ext[3 * FUSE_MAX_IN + 3];
	int next = externals(F, g, ext);

	attach_to(F, g, x, op, shape, ext, next, NULL);
}

/* Group g (root x at r) as the epilogue of a matmul, or of a CPU
 * conv2d or pool (ir_takes_epilogue), among its external inputs: one
 * whose every use comes from the group (so it is neither sent nor
 * fetched), with the root's shape and dtype (the root's value takes the
 * product's place in the output buffer).  The root becomes the matmul
 * (the conv2d or pool, with its geometry), its inputs the op's own and
 * then the group's other external inputs; the op's node goes.  Returns
 * whether it did. */
static int
epilogue(Fuser *F, int g, int r, IrNode *x)
{
	IrNode *ext[3 * FUSE_MAX_IN + 3], *in[FUSE_MAX_IN + 3];
	int next = externals(F, g, ext), nin, j = -1;
	IrNode *mm = NULL;

	for (int e = 0; e < next && !mm; e++) {
		IrNode *c = ext[e];
		int uses = 0;
		if (!ir_takes_epilogue(c->op) ||
		    (c->op != OP_matmul &&
		     (!c->conv || c->dev.kind == DEV_GPU ||
		      x->dev.kind == DEV_GPU)) ||
		    c->fuse || c->nin != op_info[c->op].nin ||
		    c->dtype != x->dtype ||
		    !tfg_shape_eq(&c->shape, &x->shape) ||
		    (j = index_of(F, r, c)) < 0 || F->grp[j] >= 0)
			continue;
		for (int m = 0; m < F->nmem; m++) {
			IrNode *u = F->part->nodes[F->mem[m]];
			for (int k = 0; k < u->nin; k++)
				uses += u->in[k] == c;
		}
		if (uses == F->nuse[j])
			mm = c;
	}
	if (!mm || next > FUSE_MAX_IN)
		return 0;
	nin = mm->nin; /* its own operands, then the group's others */
	for (int k = 0; k < nin; k++)
		in[k] = mm->in[k];
	for (int e = 0; e < next; e++) {
		int own = ext[e] == mm;
		for (int k = 0; k < mm->nin; k++)
			own |= ext[e] == mm->in[k];
		if (!own)
			in[nin++] = ext[e];
	}
	attach_to(F, g, x, mm->op, &x->shape, in, nin, mm);
	x->trans = mm->trans;
	x->conv = mm->conv;
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
			int j = index_of(F, i, t), s;
			if (j < 0 || t->op != OP_transpose || t->nin != 1 ||
			    t->in[0]->shape.rank != 2 || (x->trans >> k & 1))
				continue;
			x->in[k] = t->in[0];
			x->trans |= 1 << k;
			s = index_of(F, j, t->in[0]);
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
	Fuser F = {.p = p, .part = pt};
	size_t ni = (size_t)n + 1;

	F.nuse = arena_alloc(p->arena, ni * sizeof *F.nuse);
	F.grp = arena_alloc(p->arena, ni * sizeof *F.grp);
	F.gone = arena_alloc(p->arena, ni);
	F.mem = arena_alloc(p->arena, ni * sizeof *F.mem);
	F.inuse = arena_alloc(p->arena, ni * sizeof *F.inuse);
	F.slot = arena_alloc(p->arena, ni * sizeof *F.slot);
	F.heap = arena_alloc(p->arena, 3 * ni * sizeof *F.heap);
	memset(F.inuse, 0, ni * sizeof *F.inuse);
	index_part(&F);
	for (int i = 0; i < n; i++) {
		IrNode *x = pt->nodes[i];
		F.grp[i] = -1;
		for (int k = 0; k < x->nin; k++) {
			int j = index_of(&F, i, x->in[k]);
			if (j >= 0)
				F.nuse[j]++;
		}
	}
	fold_transposes(&F);
	for (int r = n - 1; r >= 0; r--) {
		IrNode *x = pt->nodes[r];
		int g = F.ngrp, j, members;
		if (reduction(x) && (j = index_of(&F, r, x->in[0])) >= 0 &&
		    F.grp[j] < 0 && elemwise(x->in[0]) && F.nuse[j] == 1) {
			TfgShape s = x->in[0]->shape;
			F.ngrp++;
			grow(&F, g, j, &s);
			attach(&F, g, x, x->op, &s);
			F.gone[j] = 1;
			continue;
		}
		if (F.grp[r] >= 0 || !elemwise(x))
			continue;
		F.ngrp++;
		members = grow(&F, g, r, &x->shape);
		if (epilogue(&F, g, r, x))
			continue;
		if (members > 1)
			attach(&F, g, x, OP_fused, &x->shape);
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
