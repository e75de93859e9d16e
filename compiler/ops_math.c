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
 *
 * Each is the nodes it stands for, so gradients, fusion, folding and the
 * GPU come from those ops (an elementwise chain is one fused kernel:
 * rsqrt and square cost no pass of their own).  Their facts (spec
 * §6.7.2 "Op facts") are those of the op a call row names.
 */
#include <string.h>

#include "compiler/compiler_int.h"

/* The scalar constant v of float dtype t. */
static IrNode *
scalar(Checker *c, SrcLoc loc, TfgDtype t, double v)
{
	TfgShape s = {0, {0}};
	void *d = arena_alloc(c->a, 8);

	if (t == TFG_F32)
		*(float *)d = (float)v;
	else
		*(double *)d = v;
	return check_built(c, ir_const(c->p, loc, t, &s, d, 0));
}

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

IrNode *
check_math(Checker *c, AstNode *e, OpKind op)
{
	IrNode *x, *in[2];

	(void)op;
	if (check_bind(c, e) < 0)
		return NULL;
	if (strcmp(e->name, "clip_by_value") == 0)
		return clip(c, e);
	if (!(x = number_arg(c, e, strcmp(e->name, "square") != 0)))
		return NULL;
	in[0] = in[1] = x;
	if (strcmp(e->name, "rsqrt") == 0) {
		if (!(in[0] = scalar(c, e->loc, x->dtype, 1.0)) ||
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
	    !(in[1] = scalar(c, e->loc, x->dtype, 0.5)))
		return NULL;
	return check_elem(c, OP_mul, e->loc, in, 2, x->dtype, &in[0]->shape);
}
