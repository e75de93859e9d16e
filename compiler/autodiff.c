/*
 * compiler/autodiff.c: grad(y, x) (spec §6.25 "grad"), its checker and
 * the grad pass, reverse-mode automatic differentiation on the graph
 * (spec/design.md "Passes").
 *
 * The checker makes one OP_grad node per call, of x's dtype and shape.
 * The pass, between check and place, expands each in graph order: the
 * nodes on a path from x to y (y depends on them, they depend on x) are
 * walked from y back to x, each adding to its inputs' adjoints by the
 * gradient rule of its op (below: stdlib/ops.def's grad column names
 * one per op), starting from 1 for y.  Every backward node is made
 * by the IR builders (compiler/build.c), with the device request of the
 * forward node it differentiates, so that placement keeps the backward
 * pass next to the forward values it reads.  The new nodes go just before
 * the OP_grad node in IrGraph.nodes (they read only nodes before it), and
 * the OP_grad node becomes a reshape of x's adjoint (ir_set_alias), a
 * view placed where the adjoint is made, so that fetches and consumers
 * naming it are unchanged.  A later
 * grad may differentiate an earlier one's backward graph: its rules are
 * made of differentiable ops.
 *
 * Adjoints always have the shape and dtype of their node.  An operand
 * that was broadcast gets its adjoint summed over the broadcast axes; a
 * value broadcast back over reduced axes is added to zeros of the full
 * shape (the language has no broadcast_to), which fusion makes one loop.
 * Integer and bool values carry no gradient; a float value that flows
 * into an op without a gradient (OPF_DIFF unset: mod, assign, fill, ...)
 * is an error, and so is a y that depends on x only through ops or
 * values without one (argmax, comparisons, a cast to an integer).
 */
#include <string.h>

#include "compiler/compiler_int.h"

typedef struct Ad {
	Program *p;
	IrNode *g;          /* the OP_grad being expanded */
	const IrNode *fwd;  /* the forward node whose rule is being built:
			       its request, reason and location */
	IrNode **adj;       /* [id] of the forward nodes: the adjoint */
	int fail;           /* a builder refused (reported) */
} Ad;

/* --------------------------------------------------------- the builders */

/* n, as made by a builder for a->fwd: its device request. */
static IrNode *
put(Ad *a, IrNode *n)
{
	if (!n) {
		a->fail = 1;
		return NULL;
	}
	n->req = a->fwd->req;
	n->why = a->fwd->why;
	return n;
}

static SrcLoc
at(Ad *a)
{
	return a->fwd->loc;
}

/* The scalar v of float dtype t. */
static IrNode *
scalar(Ad *a, TfgDtype t, double v)
{
	void *d = arena_alloc(a->p->arena, 8);
	TfgShape s = {0, {0}};

	if (t == TFG_F32)
		*(float *)d = (float)v;
	else
		*(double *)d = v;
	return put(a, ir_const(a->p, at(a), t, &s, d, 0));
}

static IrNode *
zeros(Ad *a, TfgDtype t, const TfgShape *s)
{
	IrMake *m = arena_alloc(a->p->arena, sizeof *m);

	return put(a, ir_make(a->p, at(a), OP_zeros, t, s, m, NULL, 0));
}

static IrNode *
cast(Ad *a, IrNode *x, TfgDtype t)
{
	return x ? put(a, ir_cast(a->p, at(a), x, t)) : NULL;
}

static IrNode *
bin(Ad *a, OpKind op, IrNode *x, IrNode *y)
{
	return x && y ? put(a, ir_binary(a->p, at(a), op, x, y)) : NULL;
}

static IrNode *
un(Ad *a, OpKind op, IrNode *x)
{
	return x ? put(a, ir_unary(a->p, at(a), op, x)) : NULL;
}

static IrNode *
sel(Ad *a, IrNode *c, IrNode *x, IrNode *y)
{
	return c && x && y ? put(a, ir_where(a->p, at(a), c, x, y)) : NULL;
}

static IrNode *
reshape(Ad *a, IrNode *x, const TfgShape *s)
{
	if (!x || tfg_shape_eq(&x->shape, s))
		return x;
	return put(a, ir_reshape(a->p, at(a), x, s));
}

static IrNode *
reduce(Ad *a, OpKind op, IrNode *x, uint32_t axes, int keepdims)
{
	return x ? put(a, ir_reduce(a->p, at(a), op, x, axes, keepdims))
		 : NULL;
}

/* x, of a shape that broadcasts to s, broadcast to s. */
static IrNode *
bcast(Ad *a, IrNode *x, const TfgShape *s)
{
	if (!x || tfg_shape_eq(&x->shape, s))
		return x;
	return bin(a, OP_add, x, zeros(a, x->dtype, s));
}

/* g, the adjoint of a value that operand shape s was broadcast into,
 * summed over the broadcast axes: the operand's adjoint, of shape s. */
static IrNode *
unbroadcast(Ad *a, IrNode *g, const TfgShape *s)
{
	int lead;
	uint32_t axes = 0;

	if (!g || tfg_shape_eq(&g->shape, s))
		return g;
	lead = g->shape.rank - s->rank;
	for (int k = 0; k < g->shape.rank; k++)
		if (k < lead || (s->dims[k - lead] == 1 &&
				 g->shape.dims[k] != 1))
			axes |= 1u << k;
	if (axes)
		g = reduce(a, OP_reduce_sum, g, axes, 0);
	return reshape(a, g, s);
}

/* x's shape with the axes of mask kept as 1: a reduction's keepdims
 * shape. */
static TfgShape
kept_shape(const IrNode *x, uint32_t axes)
{
	TfgShape s = x->shape;

	for (int k = 0; k < s.rank; k++)
		if (axes >> k & 1)
			s.dims[k] = 1;
	return s;
}

/* ------------------------------------------------------------ the rules */

/* A rule gives the adjoint of operand k of n (whose value is n, adjoint
 * g), of the operand's dtype; an elementwise op's before it is summed
 * over the axes n broadcast the operand along (rule() does that).
 * stdlib/ops.def's grad column names each op's rule; d_none, the rule of
 * ops without a gradient, is never called: OPF_DIFF is unset for them. */
typedef IrNode *GradRule(Ad *a, IrNode *n, IrNode *g, int k);
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	static GradRule grad;
#include "stdlib/ops.def"

static IrNode *
d_none(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)g;
	(void)k;
	diag_error(a->p->diag, a->g->loc, "internal error: no gradient rule "
		   "for '%s'", op_info[n->op].name);
	a->fail = 1;
	return NULL;
}

static IrNode *
d_add(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)a;
	(void)n;
	(void)k;
	return g;
}

static IrNode *
d_sub(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)n;
	return k == 0 ? g : un(a, OP_neg, g);
}

static IrNode *
d_mul(Ad *a, IrNode *n, IrNode *g, int k)
{
	return bin(a, OP_mul, g, n->in[1 - k]);
}

/* d/dy x/y = -(x/y)/y */
static IrNode *
d_div(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *y = n->in[1];

	if (k == 0)
		return bin(a, OP_div, g, y);
	return un(a, OP_neg, bin(a, OP_mul, g, bin(a, OP_div, n, y)));
}

static IrNode *
d_neg(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)n;
	(void)k;
	return un(a, OP_neg, g);
}

static IrNode *
d_exp(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return bin(a, OP_mul, g, n);
}

static IrNode *
d_log(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return bin(a, OP_div, g, n->in[0]);
}

/* 1 / (2 sqrt(x)) */
static IrNode *
d_sqrt(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return bin(a, OP_div, g, bin(a, OP_add, n, n));
}

/* 1 - tanh^2 */
static IrNode *
d_tanh(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *one = scalar(a, n->dtype, 1);

	(void)k;
	return bin(a, OP_mul, g, bin(a, OP_sub, one, bin(a, OP_mul, n, n)));
}

/* s (1 - s) */
static IrNode *
d_sigmoid(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *one = scalar(a, n->dtype, 1);

	(void)k;
	return bin(a, OP_mul, g, bin(a, OP_mul, n, bin(a, OP_sub, one, n)));
}

/* sigmoid(x) */
static IrNode *
d_softplus(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return bin(a, OP_mul, g, un(a, OP_sigmoid, n->in[0]));
}

/* 0 at x <= 0, read from the output (relu(x) > 0 exactly when x > 0,
 * NaN included), as TF's ReluGrad: x itself is then needed by relu
 * alone, so that x = conv2d(...) + b and relu(x) fuse into one pass
 * (compiler/pass_fuse.c) instead of both being kept for the gradient */
static IrNode *
d_relu(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *zero = scalar(a, n->dtype, 0);

	(void)k;
	return sel(a, bin(a, OP_greater, n, zero), g, zero);
}

/* sign(x): 0 at 0 */
static IrNode *
d_abs(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *zero = scalar(a, n->dtype, 0);

	(void)k;
	return sel(a, bin(a, OP_greater, x, zero), g,
		   sel(a, bin(a, OP_less, x, zero), un(a, OP_neg, g), zero));
}

/* d/dx x**y = y x**(y-1); d/dy = x**y log(x), 0 where x <= 0 (TF's rule:
 * log is only defined there) */
static IrNode *
d_pow(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *y = n->in[1], *one, *zero;
	TfgDtype t = n->dtype;

	if (k == 0) {
		one = scalar(a, t, 1);
		return bin(a, OP_mul, g, bin(a, OP_mul, y,
			   bin(a, OP_pow, x, bin(a, OP_sub, y, one))));
	}
	zero = scalar(a, t, 0);
	return bin(a, OP_mul, bin(a, OP_mul, g, n),
		   sel(a, bin(a, OP_greater, x, zero), un(a, OP_log, x),
		       zero));
}

/* maximum, minimum: to the operand chosen; a tie goes to the first (TF) */
static IrNode *
d_maxmin(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *zero = scalar(a, n->dtype, 0);
	IrNode *m = bin(a, n->op == OP_maximum ? OP_greater_equal
					       : OP_less_equal,
			n->in[0], n->in[1]);

	return k == 0 ? sel(a, m, g, zero) : sel(a, m, zero, g);
}

/* to the branch chosen; none to the condition */
static IrNode *
d_where(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *zero = scalar(a, n->dtype, 0);

	return k == 1 ? sel(a, n->in[0], g, zero)
		      : sel(a, n->in[0], zero, g);
}

/* float to float: back */
static IrNode *
d_cast(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return cast(a, g, n->in[0]->dtype);
}

/* reduce_*: g reshaped to the reduction's keepdims shape, the first
 * node of each rule below (so a rule's nodes come in one order). */
static IrNode *
kept_adjoint(Ad *a, IrNode *n, IrNode *g)
{
	TfgShape ks = kept_shape(n->in[0], n->axes);

	return reshape(a, g, &ks);
}

static IrNode *
d_reduce_sum(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return bcast(a, kept_adjoint(a, n, g), &n->in[0]->shape);
}

static IrNode *
d_reduce_mean(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *gk = kept_adjoint(a, n, g);
	double count = 1;

	(void)k;
	for (int i = 0; i < x->shape.rank; i++)
		if (n->axes >> i & 1)
			count *= (double)x->shape.dims[i];
	return bcast(a, bin(a, OP_div, gk, scalar(a, x->dtype, count)),
		     &x->shape);
}

/* reduce_max, reduce_min: split evenly among the positions equal to the
 * result (TF) */
static IrNode *
d_reduce_maxmin(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *gk = kept_adjoint(a, n, g), *m;
	TfgShape ks = kept_shape(x, n->axes);

	(void)k;
	m = cast(a, bin(a, OP_equal, x, reshape(a, n, &ks)), x->dtype);
	return bin(a, OP_mul, m, bin(a, OP_div, gk,
		   reduce(a, OP_reduce_sum, m, n->axes, 1)));
}

/* the product of the others: prod / x where no x is 0; with one 0, the
 * product of the nonzero ones at the 0 and 0 elsewhere; with two or
 * more, 0 */
static IrNode *
d_reduce_prod(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *gk = kept_adjoint(a, n, g), *yk, *m, *z;
	TfgDtype t = x->dtype;
	IrNode *zero = scalar(a, t, 0), *one = scalar(a, t, 1), *at0, *else0;

	(void)k;
	m = bin(a, OP_equal, x, zero);
	yk = reduce(a, OP_reduce_prod, sel(a, m, one, x), n->axes, 1);
	gk = bin(a, OP_mul, gk, yk);
	z = reduce(a, OP_reduce_sum, cast(a, m, t), n->axes, 1);
	at0 = sel(a, bin(a, OP_equal, z, one), gk, zero);
	else0 = sel(a, bin(a, OP_equal, z, zero), bin(a, OP_div, gk, x), zero);
	return bcast(a, sel(a, m, at0, else0), &x->shape);
}

/* s (g - sum(g s)) over the last axis */
static IrNode *
d_softmax(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *s = bin(a, OP_mul, g, n);

	(void)k;
	s = reduce(a, OP_reduce_sum, s, 1u << (n->shape.rank - 1), 1);
	return bin(a, OP_mul, n, bin(a, OP_sub, g, s));
}

/* g - softmax(x) sum(g) */
static IrNode *
d_log_softmax(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *s = reduce(a, OP_reduce_sum, g, 1u << (n->shape.rank - 1), 1);

	(void)k;
	return bin(a, OP_sub, g, bin(a, OP_mul, put(a, ir_softmax(a->p, at(a),
			  OP_softmax, n->in[0])), s));
}

/* softmax_cross_entropy n of logits x and labels l, g broadcast back over
 * the last axis (as TF 2): logits (softmax(x) sum(l) - l) g, labels
 * -log_softmax(x) g. */
static IrNode *
d_xent(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *l = n->in[1], *s;
	TfgShape sk = x->shape;
	uint32_t last = 1u << (x->shape.rank - 1);

	sk.dims[sk.rank - 1] = 1;
	g = reshape(a, g, &sk);
	if (k == 1)
		return bin(a, OP_mul, put(a, ir_softmax(a->p, at(a),
			   OP_log_softmax, x)), un(a, OP_neg, g));
	s = put(a, ir_softmax(a->p, at(a), OP_softmax, x));
	s = bin(a, OP_mul, s, reduce(a, OP_reduce_sum, l, last, 1));
	return bin(a, OP_mul, bin(a, OP_sub, s, l), g);
}

/* The last two axes of x swapped (x of rank 2 or more). */
static IrNode *
swap_last(Ad *a, IrNode *x)
{
	int perm[TFG_MAX_RANK], r;

	if (!x)
		return NULL;
	r = x->shape.rank;
	for (int i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return put(a, ir_transpose(a->p, at(a), x, perm));
}

static IrNode *
matmul(Ad *a, IrNode *x, IrNode *y)
{
	return x && y ? put(a, ir_matmul(a->p, at(a), x, y)) : NULL;
}

/* matmul n = x @ y.  A rank-1 operand is a matrix of one row (x) or one
 * column (y), as NumPy treats it, and the adjoint of the product then has
 * that axis back; each operand's adjoint is summed over the batch axes it
 * was broadcast along. */
static IrNode *
d_matmul(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *y = n->in[1], *x2 = x, *y2 = y, *g2, *d;
	int rx = x->shape.rank, ry = y->shape.rank;
	TfgShape sx = x->shape, sy = y->shape, sg = g->shape;

	if (rx == 1) {
		int row = ry == 1 ? sg.rank : sg.rank - 1;

		sx = (TfgShape){2, {1, x->shape.dims[0]}};
		x2 = reshape(a, x, &sx);
		/* the row axis goes back before n's column axis, if any */
		if (row < sg.rank)
			sg.dims[row + 1] = sg.dims[row];
		sg.dims[row] = 1;
		sg.rank++;
	}
	if (ry == 1) {
		sy = (TfgShape){2, {y->shape.dims[0], 1}};
		y2 = reshape(a, y, &sy);
		sg.dims[sg.rank++] = 1;
	}
	g2 = reshape(a, g, &sg);
	if (k == 0)
		d = unbroadcast(a, matmul(a, g2, swap_last(a, y2)), &sx);
	else
		d = unbroadcast(a, matmul(a, swap_last(a, x2), g2), &sy);
	return reshape(a, d, k == 0 ? &x->shape : &y->shape);
}

/* Convolutions are linear in each operand, and their gradients are each
 * other: with y = conv2d(x, f), dx = conv2d_backprop_input(dy, f) and
 * df = conv2d_backprop_filter(x, dy), all of one geometry. */
static IrNode *
conv(Ad *a, OpKind op, IrNode *p, IrNode *q, const IrNode *n,
     const TfgShape *s)
{
	return put(a, ir_conv(a->p, at(a), op, p, q, n->conv, s));
}

static IrNode *
d_conv2d(Ad *a, IrNode *n, IrNode *g, int k)
{
	if (k == 0)
		return conv(a, OP_conv2d_backprop_input, g, n->in[1], n,
			    &n->in[0]->shape);
	return conv(a, OP_conv2d_backprop_filter, n->in[0], g, n,
		    &n->in[1]->shape);
}

/* dx = conv2d_backprop_input(dy, f): d dy = conv2d(g, f),
 * d f = conv2d_backprop_filter(g, dy) */
static IrNode *
d_conv2d_input(Ad *a, IrNode *n, IrNode *g, int k)
{
	if (k == 0)
		return conv(a, OP_conv2d, g, n->in[1], n, NULL);
	return conv(a, OP_conv2d_backprop_filter, g, n->in[0], n,
		    &n->in[1]->shape);
}

/* df = conv2d_backprop_filter(x, dy): d x = conv2d_backprop_input(dy, g),
 * d dy = conv2d(x, g) */
static IrNode *
d_conv2d_filter(Ad *a, IrNode *n, IrNode *g, int k)
{
	if (k == 0)
		return conv(a, OP_conv2d_backprop_input, n->in[1], g, n,
			    &n->in[0]->shape);
	return conv(a, OP_conv2d, n->in[0], g, n, NULL);
}

/* A checked value is its input. */
static IrNode *
d_check_range(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)a, (void)n, (void)k;
	return g;
}

/* A max pool's gradient goes to each window's first maximum
 * (max_pool_grad, which has none of its own); an average pool's is
 * spread over its windows (avg_pool_grad), whose adjoint is the average
 * pool again. */
static IrNode *
d_max_pool(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return put(a, ir_pool(a->p, at(a), OP_max_pool_grad, n->in[0], g,
			      n->conv, &n->in[0]->shape));
}

static IrNode *
d_avg_pool(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return put(a, ir_pool(a->p, at(a), OP_avg_pool_grad, g, NULL, n->conv,
			      &n->in[0]->shape));
}

static IrNode *
d_avg_pool_grad(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return put(a, ir_pool(a->p, at(a), OP_avg_pool, g, NULL, n->conv,
			      NULL));
}

static IrNode *
d_transpose(Ad *a, IrNode *n, IrNode *g, int k)
{
	int inv[TFG_MAX_RANK];

	(void)k;
	for (int i = 0; i < n->shape.rank; i++)
		inv[n->ax->perm[i]] = i;
	return put(a, ir_transpose(a->p, at(a), g, inv));
}

static IrNode *
d_reshape(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return reshape(a, g, &n->in[0]->shape);
}

/* slice n of x: g, with n's dropped axes back, padded with zeros to x's
 * shape axis by axis (concat of zeros before and after). */
static IrNode *
d_slice(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0];
	TfgShape s = x->shape;

	(void)k;
	for (int i = 0; i < s.rank; i++)
		s.dims[i] = n->ax->size[i];
	g = reshape(a, g, &s);
	for (int i = 0; g && i < s.rank; i++) {
		int64_t before = n->ax->begin[i];
		int64_t after = x->shape.dims[i] - before - n->ax->size[i];
		IrNode *in[3];
		int nin = 0;
		TfgShape z = g->shape;

		if (before == 0 && after == 0)
			continue;
		if (before > 0) {
			z.dims[i] = before;
			in[nin++] = zeros(a, g->dtype, &z);
		}
		in[nin++] = g;
		if (after > 0) {
			z.dims[i] = after;
			in[nin++] = zeros(a, g->dtype, &z);
		}
		for (int j = 0; j < nin; j++)
			if (!in[j])
				return NULL;
		g = put(a, ir_concat(a->p, at(a), in, nin, i));
	}
	return g;
}

/* concat or stack n: the slice of g where operand k went. */
static IrNode *
d_join(Ad *a, IrNode *n, IrNode *g, int k)
{
	int64_t begin[TFG_MAX_RANK] = {0}, size[TFG_MAX_RANK];
	uint32_t squeeze = 0;

	for (int i = 0; i < g->shape.rank; i++)
		size[i] = g->shape.dims[i];
	if (n->op == OP_stack) {
		begin[n->axis] = k;
		size[n->axis] = 1;
		squeeze = 1u << n->axis;
	} else {
		for (int j = 0; j < k; j++)
			begin[n->axis] += n->in[j]->shape.dims[n->axis];
		size[n->axis] = n->in[k]->shape.dims[n->axis];
	}
	return put(a, ir_slice(a->p, at(a), g, begin, size, squeeze));
}

/* x gathered on axis at ids where an id is 0 or more, zeros where it
 * is negative (TF's _GatherDropNegatives: a segment reduction drops
 * those rows); *keep, when asked: whether each id is 0 or more, shaped
 * to broadcast over the result. */
static IrNode *
gather_kept(Ad *a, IrNode *x, IrNode *ids, int axis, IrNode **keep)
{
	int64_t zero = 0;
	void *d = arena_alloc(a->p->arena, 8);
	TfgShape s0 = {0, {0}}, ks;
	IrNode *z, *m, *v;

	if (ids->dtype == TFG_I32)
		*(int32_t *)d = 0;
	else
		memcpy(d, &zero, 8);
	z = put(a, ir_const(a->p, at(a), ids->dtype, &s0, d, 0));
	v = z ? put(a, ir_gather(a->p, at(a), x, bin(a, OP_maximum, ids, z),
				 axis)) : NULL;
	if (!v)
		return NULL;
	ks.rank = v->shape.rank;
	for (int k = 0; k < ks.rank; k++)
		ks.dims[k] = k >= axis && k < axis + ids->shape.rank
			   ? ids->shape.dims[k - axis] : 1;
	m = reshape(a, bin(a, OP_greater_equal, ids, z), &ks);
	if (keep)
		*keep = m;
	return sel(a, m, v, scalar(a, x->dtype, 0));
}

/* gather: the output's rows summed into the rows they came from */
static IrNode *
d_gather(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0];

	IrNode *d;

	(void)k;
	d = put(a, ir_segment(a->p, at(a), OP_unsorted_segment_sum, g,
			      n->in[1], x->shape.dims[n->axis], n->axis));
	/* a counted value's rows past its count are read by no gather, so
	   their adjoint is zeros, counted as it is (compiler/shards.c) */
	if (d && n->axis == 0 && x->count && x->count != x)
		d->count = x->count;
	return d;
}

/* a segment sum: each row's segment's adjoint (none for a dropped row) */
static IrNode *
d_segment_sum(Ad *a, IrNode *n, IrNode *g, int k)
{
	(void)k;
	return gather_kept(a, g, n->in[1], n->axis, NULL);
}

/* a segment max: to the rows equal to their segment's maximum, split
 * evenly among them, as TF's */
static IrNode *
d_segment_max(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *x = n->in[0], *ids = n->in[1], *keep = NULL, *hit, *cnt;
	IrNode *one = scalar(a, x->dtype, 1);
	int64_t nseg = n->shape.dims[n->axis];

	(void)k;
	hit = gather_kept(a, n, ids, n->axis, &keep);
	hit = bin(a, OP_logical_and, bin(a, OP_equal, x, hit), keep);
	cnt = cast(a, hit, x->dtype);
	cnt = cnt ? put(a, ir_segment(a->p, at(a), OP_unsorted_segment_sum,
				      cnt, ids, nseg, n->axis)) : NULL;
	g = bin(a, OP_div, g, bin(a, OP_maximum, cnt, one));
	return sel(a, hit, gather_kept(a, g, ids, n->axis, NULL),
		   scalar(a, x->dtype, 0));
}

static GradRule *const grad_rule[OP__COUNT] = {
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	[OP_##name] = grad,
#include "stdlib/ops.def"
};

/* The adjoint of operand k of n, n's adjoint being g: of the operand's
 * shape and dtype. */
static IrNode *
rule(Ad *a, IrNode *n, IrNode *g, int k)
{
	IrNode *d = grad_rule[n->op](a, n, g, k);

	if (op_info[n->op].flags & OPF_ELEMWISE)
		return unbroadcast(a, d, &n->in[k]->shape);
	return d;
}

/* ------------------------------------------------------------- the pass */

/* "grad: 'y' depends on 'x' through ..." for node n, the first on a path
 * from x to y that no gradient passes. */
static void
no_gradient(Ad *a, const IrNode *n)
{
	Program *p = a->p;

	if (op_info[n->op].flags & OPF_DIFF)
		diag_error(p->diag, a->g->loc, "grad: 'y' depends on 'x' only "
			   "through '%s' (line %u), whose value is %s: "
			   "integers and bools carry no gradient",
			   op_info[n->op].name, n->loc.line,
			   ir_type_str(p->arena, n->dtype, &n->shape));
	else
		diag_error(p->diag, a->g->loc, "grad: 'y' depends on 'x' "
			   "through '%s' (line %u), which has no gradient",
			   op_info[n->op].name, n->loc.line);
	diag_note(p->diag, n->loc, "'%s' is here", op_info[n->op].name);
	a->fail = 1;
}

/* Whether the nodes between x and y (on[]) and their operands all have
 * known dims. */
static int
dims_known(Program *p, const char *on, int from, int to)
{
	for (int i = from; i <= to; i++) {
		const IrNode *n = p->g.nodes.v[i];
		if (!on[i])
			continue;
		if (!shape_known(&n->shape))
			return 0;
		for (int k = 0; k < n->nin; k++)
			if (!shape_known(&n->in[k]->shape))
				return 0;
	}
	return 1;
}

/* The adjoint of x, or NULL (reported, or *skip set: dims unknown). */
static IrNode *
backward(Ad *a, IrNode *y, IrNode *x, int *skip)
{
	Program *p = a->p;
	int n = p->g.nodes.n;
	char *dep = ir_reach(p, &y, 1, NULL, 0);
	char *on = arena_alloc(p->arena, n + 1);

	/* on: y depends on it and it depends on x (ids are a topological
	   order, so what depends on x comes after it) */
	on[x->id] = 1;
	for (int i = x->id + 1; i <= y->id; i++) {
		IrNode *v = p->g.nodes.v[i];
		for (int k = 0; dep[i] && k < v->nin && !on[i]; k++)
			on[i] = on[v->in[k]->id];
	}
	if (!dims_known(p, on, x->id, y->id)) {
		*skip = 1;
		return NULL;
	}
	a->adj = arena_alloc(p->arena, (n + 1) * sizeof *a->adj);
	a->fwd = y;
	if (!on[y->id]) { /* y does not depend on x */
		a->fwd = a->g;
		return zeros(a, x->dtype, &x->shape);
	}
	a->adj[y->id] = scalar(a, y->dtype, 1);
	for (int i = y->id; i > x->id && !a->fail; i--) {
		IrNode *v = p->g.nodes.v[i];
		if (!on[i] || !a->adj[i])
			continue;
		a->fwd = v;
		for (int k = 0; k < v->nin && !a->fail; k++) {
			IrNode *in = v->in[k], *d;
			int j = in->id;
			if (!on[j] || !dtype_is_float(in->dtype))
				continue;
			if (!(op_info[v->op].flags & OPF_DIFF)) {
				no_gradient(a, v);
				break;
			}
			if (!(d = rule(a, v, a->adj[i], k)))
				break;
			a->adj[j] = a->adj[j] ? bin(a, OP_add, a->adj[j], d)
					      : d;
		}
	}
	if (a->fail)
		return NULL;
	if (a->adj[x->id])
		return a->adj[x->id];
	/* every path is cut: name the first op that cuts one */
	for (int i = x->id + 1; i <= y->id; i++) {
		IrNode *v = p->g.nodes.v[i];
		if (on[i] && (!(op_info[v->op].flags & OPF_DIFF) ||
			      !dtype_is_float(v->dtype))) {
			no_gradient(a, v);
			return NULL;
		}
	}
	diag_error(p->diag, a->g->loc, "internal error: no gradient reaches "
		   "'x'");
	return NULL;
}

/* The nodes made since the graph had old of them move to just before
 * the node at index at (they read only nodes before it). */
static void
move_before(Program *p, int old, int at)
{
	int added = p->g.nodes.n - old;
	IrNode **v = (IrNode **)p->g.nodes.v, **tmp;

	if (added <= 0)
		return;
	tmp = arena_alloc(p->arena, added * sizeof *tmp);
	memcpy(tmp, v + old, added * sizeof *tmp);
	memmove(v + at + added, v + at, (old - at) * sizeof *v);
	memcpy(v + at, tmp, added * sizeof *tmp);
	for (int i = at; i < p->g.nodes.n; i++)
		v[i]->id = i;
}

/* Expands OP_grad node g: its backward graph goes just before it, and g
 * becomes a view of x's adjoint.  0, or -1 (reported). */
static int
expand(Program *p, IrNode *g)
{
	Ad a = {p, g, g, NULL, 0};
	int old = p->g.nodes.n, skip = 0;
	IrNode *r = backward(&a, g->in[0], g->in[1], &skip);

	if (skip) /* a generic plan's: expanded in each specialisation */
		return 0;
	if (!r || ir_set_alias(p, g, r) < 0)
		return -1;
	/* the view goes where the adjoint is made: a gather's adjoint is
	   made on its table's task (compiler/ops_embed.c), and a view of it
	   on the worker would bring the whole gradient there and back to
	   the update */
	g->req = r->req;
	g->why = r->why;
	move_before(p, old, g->id);
	return 0;
}

/* ------------------------------------------------- row-sparse updates */

#define MAX_ROW_TERMS 64

/* The terms of adjoint r added up (the grad pass sums a value's adjoint
 * over its consumers, each term of its shape) into t[], up to max;
 * their number, or max + 1 when there are more. */
static int
terms(IrNode *r, IrNode **t, int n, int max)
{
	if (r->op == OP_add && tfg_shape_eq(&r->in[0]->shape, &r->shape) &&
	    tfg_shape_eq(&r->in[1]->shape, &r->shape)) {
		n = terms(r->in[0], t, n, max);
		return n > max ? n : terms(r->in[1], t, n, max);
	}
	if (n < max)
		t[n] = r;
	return n + 1;
}

/* Whether term t of a variable's adjoint is a segment sum of rows into
 * the variable's rows: a gather's adjoint on axis 0. */
static int
rows_term(const IrNode *t, const IrVar *v)
{
	return t->op == OP_unsorted_segment_sum && t->axis == 0 &&
	       tfg_shape_eq(&t->shape, &v->shape);
}

/* A node that the update u's loss depends on and that reads u's
 * variable other than as a gather's table on axis 0, or NULL. */
static IrNode *
other_reader(Program *p, IrNode *u)
{
	const IrNode *read = u->var->read;
	char *dep = ir_reach(p, &u->in[1], 1, NULL, 0);

	for (int i = read->id + 1; i < u->id; i++) {
		IrNode *x = p->g.nodes.v[i];
		for (int k = 0; dep[i] && k < x->nin; k++)
			if (x->in[k] == read && !(x->op == OP_gather &&
						  k == 0 && x->axis == 0))
				return x;
	}
	return NULL;
}

/* x reshaped to n rows (and cast to i64 when it is the ids), for the
 * update u: placed with it. */
static IrNode *
as_rows(Program *p, const IrNode *u, IrNode *x, int ids)
{
	TfgShape s = {0, {0}};
	int64_t n = 1;
	int lead = ids ? x->shape.rank : x->shape.rank - (u->var->shape.rank -
							  1);

	for (int k = 0; k < lead; k++)
		n *= x->shape.dims[k];
	s.rank = ids ? 1 : u->var->shape.rank;
	s.dims[0] = n;
	for (int k = 1; k < s.rank; k++)
		s.dims[k] = u->var->shape.dims[k];
	if (ids && x->dtype != TFG_I64 &&
	    (x = ir_cast(p, u->loc, x, TFG_I64)) != NULL) {
		x->req = u->req;
		x->why = u->why;
	}
	if (x && !tfg_shape_eq(&x->shape, &s) &&
	    (x = ir_reshape(p, u->loc, x, &s)) != NULL) {
		x->req = u->req;
		x->why = u->why;
	}
	return x;
}

/* minimize's update u: when its variable's gradient is only rows (each
 * term of the adjoint a gather's, on axis 0) and its optimizer has a
 * row-wise form, it becomes an OP_apply_rows of the rows and their ids,
 * which the update's task applies to those rows alone
 * (spec §6.26 "minimize and optimizers"); a gathered table whose update stays dense
 * gets a note saying why.  0, or -1 (reported). */
static int
sparse_update(Program *p, IrNode *u)
{
	const IrOpt *o = u->opt;
	IrNode *g = u->in[0], *t[MAX_ROW_TERMS], *rows[MAX_ROW_TERMS];
	IrNode *ids[MAX_ROW_TERMS], *x = NULL, *dense = NULL;
	int n, nrows = 0, old = p->g.nodes.n;

	if (g->op != OP_reshape) /* not expanded: a generic plan */
		return 0;
	n = terms(g->in[0], t, 0, MAX_ROW_TERMS);
	for (int i = 0; i < n && i < MAX_ROW_TERMS; i++)
		if (rows_term(t[i], u->var))
			nrows++;
		else if (!dense)
			dense = t[i];
	if (nrows == 0) /* not a table */
		return 0;
	if (n > MAX_ROW_TERMS)
		u->note = arena_printf(p->arena, "dense: more than %d "
				       "gathers read '%s'", MAX_ROW_TERMS,
				       u->var->name);
	else if (dense && (dense = other_reader(p, u)) != NULL)
		u->note = arena_printf(p->arena, "dense: '%s' is read by "
				       "'%s' (line %u), not only by gathers "
				       "on axis 0", u->var->name,
				       op_info[dense->op].name, dense->loc.line);
	else if (dense)
		u->note = arena_printf(p->arena, "dense: '%s' is read by "
				       "more than gathers on axis 0",
				       u->var->name);
	else if (o->sync)
		u->note = arena_printf(p->arena, "dense: sync sums its "
				       "replicas' gradients whole");
	else if (o->kind == IR_OPT_ADAM)
		u->note = arena_printf(p->arena, "dense: adam decays every "
				       "row's moments each step, as TF1's");
	if (u->note)
		return 0;
	for (int i = 0; i < n; i++) {
		rows[i] = as_rows(p, u, t[i]->in[0], 0);
		ids[i] = as_rows(p, u, t[i]->in[1], 1);
		if (!rows[i] || !ids[i])
			return -1;
	}
	if (n == 1) {
		x = rows[0];
		g = ids[0];
	} else if ((x = ir_concat(p, u->loc, rows, n, 0)) &&
		   (g = ir_concat(p, u->loc, ids, n, 0))) {
		x->req = g->req = u->req;
		x->why = g->why = u->why;
	} else {
		return -1;
	}
	move_before(p, old, u->id);
	return ir_set_rows(p, u, x, g);
}

int
grad_program(Program *p)
{
	int before = p->diag->nerr;

	for (int i = 0; i < p->g.nodes.n; i++) {
		IrNode *g = p->g.nodes.v[i];
		if (g->op == OP_grad && expand(p, g) < 0 &&
		    p->diag->nerr == before)
			diag_error(p->diag, g->loc, "internal error: grad "
				   "failed");
	}
	for (int i = 0; i < p->g.nodes.n && p->diag->nerr == before; i++) {
		IrNode *u = p->g.nodes.v[i];
		if (u->op == OP_apply && sparse_update(p, u) < 0 &&
		    p->diag->nerr == before)
			diag_error(p->diag, u->loc, "internal error: a row "
				   "update failed");
	}
	return p->diag->nerr - before;
}

/* ---------------------------------------------------------- the checker */

/* grad(y, x): y a float scalar, x a float value (a variable: its read). */
IrNode *
check_grad(Checker *c, AstNode *e, OpKind op)
{
	IrNode *y, *x;

	(void)op;
	if (check_bind(c, e) < 0)
		return NULL;
	if (!(y = check_expr(c, e->list[0])) ||
	    !(x = check_expr(c, e->list[1])))
		return NULL;
	if (!dtype_is_float(y->dtype) || y->shape.rank != 0) {
		diag_error(c->d, ast_extent(e->list[0]), "grad: 'y' must be a "
			   "%sscalar, it is %s", dtype_is_float(y->dtype) ?
			   "" : "float ", ir_type_str(c->a, y->dtype,
						      &y->shape));
		return NULL;
	}
	if (!dtype_is_float(x->dtype)) {
		diag_error(c->d, ast_extent(e->list[1]), "grad: 'x' must be "
			   "a float tensor, it is %s",
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	return check_built(c, ir_grad(c->p, e->loc, y, x));
}
