/*
 * compiler/ops_math.c: the checker of TF's functions that are
 * compositions of tfg's elementwise ops and reductions,
 * spec §6.28 "square, rsqrt, clip_by_value, l2_loss": check_math, named
 * by the check column of stdlib/ops.def:
 *
 *   square(x)                 x * x
 *   rsqrt(x)                  1 / sqrt(x), floats
 *   clip_by_value(t, lo, hi)  minimum(maximum(t, lo), hi), of t's shape
 *   l2_loss(t)                reduce_sum(t * t) * 0.5, a scalar, floats
 *   bias_add(value, bias)     value + bias, bias along the last axis
 *   in_top_k(predictions, targets, k)
 *                             whether fewer than k classes score above
 *                             the target's, per row
 *   sigmoid_cross_entropy(logits, labels)
 *                             max(x, 0) - x z + log(1 + exp(-|x|))
 *
 * Each is the nodes it stands for, so gradients, fusion, folding and the
 * GPU come from those ops (an elementwise chain is one fused kernel:
 * rsqrt and square cost no pass of their own).  Their facts (spec
 * §6.7.2 "Op facts") are those of the op a call row names.
 */
#include <string.h>

#include "compiler/compiler_int.h"

/* x, the first argument of e, when a number (float: a float); NULL
 * (reported). */
static IrNode *
number_arg(Checker *c, AstNode *e, int float_only)
{
	IrNode *x = check_expr(c, e->list[0]);

	if (!x)
		return NULL;
	if (float_only && !dtype_is_float(x->dtype)) {
		diag_error(c->d, e->list[0]->loc, "'%s' takes a float tensor, "
			   "got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (x->dtype == TFG_BOOL || x->dtype == TFG_STRING) {
		diag_error(c->d, e->list[0]->loc, "'%s' does not take a %s "
			   "tensor", e->name, tfg_dtype_name(x->dtype));
		return NULL;
	}
	return x;
}

/* clip_by_value(t, clip_value_min, clip_value_max): t and the minimum
 * promoted as for `+` (literals weak), the maximum of their dtype; both
 * broadcast to t's shape, which the result keeps. */
static IrNode *
clip(Checker *c, AstNode *e)
{
	IrNode *in[2], *mx, *hi;
	TfgDtype t;
	TfgShape s, s2;
	Lit l;
	char a[128], b[128];

	if (check_operands(c, e, 0, e->name, e->list[0], e->list[1], 0, in,
			   &t, &s) < 0)
		return NULL;
	l = check_lit_of(e->list[2]);
	hi = l.kind ? check_lit_node(c, e->list[2], l, t)
		    : check_expr(c, e->list[2]);
	if (!hi)
		return NULL;
	if (hi->dtype != t) {
		diag_error(c->d, e->list[2]->loc, "'%s' clips to %s values: "
			   "its maximum is %s", e->name, tfg_dtype_name(t),
			   ir_type_str(c->a, hi->dtype, &hi->shape));
		return NULL;
	}
	if (!tfg_shape_eq(&s, &in[0]->shape) ||
	    shape_broadcast(&s2, &s, &hi->shape) < 0 ||
	    !tfg_shape_eq(&s2, &in[0]->shape)) {
		const IrNode *bad = tfg_shape_eq(&s, &in[0]->shape) ? hi
								    : in[1];
		diag_error(c->d, e->loc, "the clip values of '%s' must "
			   "broadcast to the shape of t, %s: got %s", e->name,
			   tfg_shape_str(a, sizeof a, &in[0]->shape),
			   tfg_shape_str(b, sizeof b, &bad->shape));
		return NULL;
	}
	if (!(mx = check_elem(c, OP_maximum, e->loc, in, 2, t, &s)))
		return NULL;
	in[0] = mx;
	in[1] = hi;
	return check_elem(c, OP_minimum, e->loc, in, 2, t, &s);
}

/* bias_add(value, bias, data_format="NHWC"),
 * spec §6.30 "bias_add, in_top_k": value of rank 2 or more plus bias, a vector of value's
 * dtype and last dim, channels last. */
static IrNode *
bias_add(Checker *c, AstNode *e)
{
	AstNode *df = check_kwarg(e, "data_format");
	IrNode *v, *b, *in[2];

	if (df && (df->kind != AST_STRING || (strcmp(df->str, "NHWC") &&
					      strcmp(df->str, "N...C")))) {
		diag_error(c->d, df->loc, df->kind == AST_STRING &&
			   strcmp(df->str, "NCHW") == 0
			   ? "'bias_add' supports only data_format=\"NHWC\" "
			     "(channels last), not \"NCHW\""
			   : "the data_format of 'bias_add' must be \"NHWC\"");
		return NULL;
	}
	if (!(v = check_expr(c, e->list[0])) || !(b = check_expr(c, e->list[1])))
		return NULL;
	if (v->shape.rank < 2 || b->shape.rank != 1 || v->dtype != b->dtype ||
	    !(dtype_is_float(v->dtype) || dtype_is_int(v->dtype)) ||
	    b->shape.dims[0] != v->shape.dims[v->shape.rank - 1]) {
		diag_error(c->d, e->loc, "'bias_add' adds a vector of the "
			   "value's dtype and last dim to a value of rank 2 or "
			   "more: got %s and %s",
			   ir_type_str(c->a, v->dtype, &v->shape),
			   ir_type_str(c->a, b->dtype, &b->shape));
		return NULL;
	}
	in[0] = v;
	in[1] = b;
	return check_elem(c, OP_add, e->loc, in, 2, v->dtype, &v->shape);
}

/* in_top_k(predictions, targets, k) (spec §6.30 "bias_add, in_top_k"):
 * row i is true when fewer than k classes score strictly above
 * predictions[i, targets[i]], which is finite, and targets[i] is a
 * class; ties with the target count for it, as TF's. */
static IrNode *
in_top_k(Checker *c, AstNode *e)
{
	SrcLoc at = e->loc;
	IrNode *p, *t, *h, *tp, *n, *ok, *t64;
	IrMake *m = arena_alloc(c->a, sizeof *m);
	Lit k = check_lit_of(e->list[2]);

	if (!(p = check_expr(c, e->list[0])) || !(t = check_expr(c, e->list[1])))
		return NULL;
	if (p->shape.rank != 2 || !dtype_is_float(p->dtype) ||
	    t->shape.rank != 1 || !dtype_is_int(t->dtype) ||
	    t->dtype == TFG_U8 || t->shape.dims[0] != p->shape.dims[0]) {
		diag_error(c->d, at, "'in_top_k' takes float predictions "
			   "[batch, classes] and i32 or i64 targets [batch]: "
			   "got %s and %s",
			   ir_type_str(c->a, p->dtype, &p->shape),
			   ir_type_str(c->a, t->dtype, &t->shape));
		return NULL;
	}
	if (k.kind != 1 || k.i < 0) {
		diag_error(c->d, e->list[2]->loc, "k of 'in_top_k' must be an "
			   "integer literal, 0 or more");
		return NULL;
	}
	/* the target's score: the row times its one-hot target, summed */
	m->f[0] = 1;
	m->i[0] = 1;
	m->axis = 1;
	h = check_built(c, ir_make(c->p, at, OP_one_hot, p->dtype, &p->shape,
				   m, &t, 1));
	if (!(tp = check_bin(c, at, OP_mul, p, h)) ||
	    !(tp = check_built(c, ir_reduce(c->p, at, OP_reduce_sum, tp, 2,
					    1))))
		return NULL;
	/* fewer than k classes above it */
	if (!(n = check_bin(c, at, OP_greater, p, tp)) ||
	    !(n = check_built(c, ir_cast(c->p, at, n, TFG_I64))) ||
	    !(n = check_built(c, ir_reduce(c->p, at, OP_reduce_sum, n, 2, 0))))
		return NULL;
	ok = check_bin(c, at, OP_less, n, check_scalar(c, at, k, TFG_I64));
	/* a finite score (x - x is 0 for finite x alone) */
	if (!(tp = check_built(c, ir_reshape(c->p, at, tp, &t->shape))))
		return NULL;
	ok = check_bin(c, at, OP_logical_and, ok,
		 check_bin(c, at, OP_equal, check_bin(c, at, OP_sub, tp, tp),
		     check_scalar(c, at, (Lit){2, 0, 0.0}, p->dtype)));
	/* a target that is a class: 0 <= t < classes */
	t64 = check_built(c, ir_cast(c->p, at, t, TFG_I64));
	ok = check_bin(c, at, OP_logical_and, ok,
		 check_bin(c, at, OP_greater_equal, t64,
		     check_scalar(c, at, (Lit){1, 0, 0}, TFG_I64)));
	return check_bin(c, at, OP_logical_and, ok,
		   check_bin(c, at, OP_less, t64,
		       check_scalar(c, at, (Lit){1, p->shape.dims[1], 0},
				    TFG_I64)));
}

/* batch_normalization(x, mean, variance, offset=, scale=,
 * variance_epsilon=0.001) (spec §6.35 "moments, batch_normalization, top_k"):
 * TF's formula, x inv + (offset - mean inv) with
 * inv = scale / sqrt(variance + epsilon), the statistics broadcast
 * against x; offset and scale left out are 0 and 1. */
static IrNode *
batch_norm(Checker *c, AstNode *e)
{
	static const char *const what[] = {"mean", "variance", "offset",
					   "scale"};
	AstNode *arg[4] = {e->list[1], e->list[2], check_kwarg(e, "offset"),
			   check_kwarg(e, "scale")};
	AstNode *ep = check_kwarg(e, "variance_epsilon");
	IrNode *x, *v[4] = {0}, *eps, *inv, *t, *one;
	Lit l = {2, 0, 0.001};

	if (!(x = number_arg(c, e, 1)))
		return NULL;
	for (int i = 0; i < 4; i++) {
		if (!arg[i])
			continue;
		if (!(v[i] = check_expr(c, arg[i])))
			return NULL;
		if (v[i]->dtype != x->dtype && !v[i]->weak) {
			diag_error(c->d, arg[i]->loc, "the %s of "
				   "'batch_normalization' must have x's dtype "
				   "%s, got %s", what[i],
				   tfg_dtype_name(x->dtype),
				   ir_type_str(c->a, v[i]->dtype,
					       &v[i]->shape));
			return NULL;
		}
		if (v[i]->dtype != x->dtype &&
		    !(v[i] = check_built(c, ir_cast(c->p, arg[i]->loc, v[i],
						     x->dtype))))
			return NULL;
	}
	if (ep) {
		l = check_lit_of(ep);
		if ((l.kind != 1 && l.kind != 2) ||
		    (l.kind == 2 ? l.f : (double)l.i) < 0) {
			diag_error(c->d, ep->loc, "the variance_epsilon of "
				   "'batch_normalization' must be a number "
				   "literal of 0 or more");
			return NULL;
		}
		if (l.kind == 1)
			l = (Lit){2, 0, (double)l.i};
	}
	if (!(eps = check_scalar(c, e->loc, l, x->dtype)) ||
	    !(one = check_scalar(c, e->loc, (Lit){2, 0, 1.0}, x->dtype)))
		return NULL;
	if (!(inv = check_bin(c, e->loc, OP_add, v[1], eps)) ||
	    !(inv = check_built(c, ir_unary(c->p, e->loc, OP_sqrt, inv))))
		return NULL;
	inv = check_bin(c, e->loc, OP_div, one, inv);
	if (v[3])
		inv = check_bin(c, e->loc, OP_mul, inv, v[3]);
	t = check_bin(c, e->loc, OP_mul, v[0], inv);
	t = v[2] ? check_bin(c, e->loc, OP_sub, v[2], t)
		 : (t ? check_built(c, ir_unary(c->p, e->loc, OP_neg, t))
		      : NULL);
	return check_bin(c, e->loc, OP_add, check_bin(c, e->loc, OP_mul, x, inv), t);
}

/* sigmoid_cross_entropy(logits, labels)
 * (spec §6.38 "hash_bucket, sigmoid_cross_entropy"): TF's
 * sigmoid_cross_entropy_with_logits,
 * max(x, 0) - x z + log(1 + exp(-|x|)), per element, made of `where` as
 * TF's is, so that its gradient at x = 0 is TF's, sigmoid(0) - z. */
static IrNode *
sigmoid_xent(Checker *c, AstNode *e)
{
	SrcLoc at = e->loc;
	IrNode *x, *z, *zero, *pos, *r, *na, *t;
	int ok;

	if (!(x = number_arg(c, e, 1)) || !(z = check_expr(c, e->list[1])))
		return NULL;
	if (z->dtype != x->dtype && z->weak &&
	    !(z = check_built(c, ir_cast(c->p, at, z, x->dtype))))
		return NULL;
	ok = z->dtype == x->dtype && z->shape.rank == x->shape.rank;
	for (int k = 0; ok && k < x->shape.rank; k++)
		ok = x->shape.dims[k] == z->shape.dims[k] ||
		     x->shape.dims[k] == IR_DIM_UNKNOWN ||
		     z->shape.dims[k] == IR_DIM_UNKNOWN;
	if (!ok) {
		diag_error(c->d, e->list[1]->loc, "the labels of '%s' must "
			   "have the logits' dtype and shape, %s: got %s",
			   e->name, ir_type_str(c->a, x->dtype, &x->shape),
			   ir_type_str(c->a, z->dtype, &z->shape));
		return NULL;
	}
	if (!(zero = check_scalar(c, at, (Lit){2, 0, 0.0}, x->dtype)) ||
	    !(pos = check_bin(c, at, OP_greater_equal, x, zero)) ||
	    !(r = check_built(c, ir_where(c->p, at, pos, x, zero))) ||
	    !(na = check_built(c, ir_unary(c->p, at, OP_neg, x))) ||
	    !(na = check_built(c, ir_where(c->p, at, pos, na, x))) ||
	    !(na = check_built(c, ir_unary(c->p, at, OP_softplus, na))))
		return NULL;
	t = check_bin(c, at, OP_sub, r, check_bin(c, at, OP_mul, x, z));
	return check_bin(c, at, OP_add, t, na);
}

IrNode *
check_math(Checker *c, AstNode *e, OpKind op)
{
	IrNode *x, *in[2];

	(void)op;
	if (check_bind(c, e) < 0)
		return NULL;
	if (strcmp(e->name, "clip_by_value") == 0)
		return clip(c, e);
	if (strcmp(e->name, "bias_add") == 0)
		return bias_add(c, e);
	if (strcmp(e->name, "in_top_k") == 0)
		return in_top_k(c, e);
	if (strcmp(e->name, "batch_normalization") == 0)
		return batch_norm(c, e);
	if (strcmp(e->name, "sigmoid_cross_entropy") == 0)
		return sigmoid_xent(c, e);
	if (!(x = number_arg(c, e, strcmp(e->name, "square") != 0)))
		return NULL;
	in[0] = in[1] = x;
	if (strcmp(e->name, "rsqrt") == 0) {
		if (!(in[0] = check_scalar(c, e->loc, (Lit){2, 0, 1.0}, x->dtype)) ||
		    !(in[1] = check_elem(c, OP_sqrt, e->loc, &x, 1, x->dtype,
					 &x->shape)))
			return NULL;
		return check_elem(c, OP_div, e->loc, in, 2, x->dtype,
				  &x->shape);
	}
	if (!(x = check_elem(c, OP_mul, e->loc, in, 2, x->dtype, &x->shape)))
		return NULL;
	if (strcmp(e->name, "square") == 0)
		return x;
	/* l2_loss: half the sum of the squares, over every axis */
	if (!(in[0] = check_built(c, ir_reduce(c->p, e->loc, OP_reduce_sum, x,
					       x->shape.rank
					       ? (1u << x->shape.rank) - 1 : 0,
					       0))) ||
	    !(in[1] = check_scalar(c, e->loc, (Lit){2, 0, 0.5}, x->dtype)))
		return NULL;
	return check_elem(c, OP_mul, e->loc, in, 2, x->dtype, &in[0]->shape);
}
