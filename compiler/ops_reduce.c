/*
 * compiler/ops_reduce.c: the checkers of the reductions
 * (spec §6.5 "Reductions") and of softmax / log_softmax
 * (spec §6.5.5 "softmax, log_softmax"), named by the check column of
 * stdlib/ops.def:
 *
 *   check_reduce     reduce_sum reduce_mean reduce_max reduce_min
 *                    reduce_prod (x, axis=, keepdims=false)
 *   check_reduce_bool  reduce_any reduce_all, the same on bool x
 *   check_argreduce  argmax argmin (x, axis=0, *, output_type=i64)
 *   check_softmax    softmax log_softmax (x, axis=-1)
 *   check_xent       softmax_cross_entropy (logits, labels), over the
 *                    last axis (spec §6.5.6 "softmax_cross_entropy")
 *
 * Their arguments are bound by check_bind (compiler/sig.c): axis and
 * keepdims come positionally in TF's order too (reduce_sum(t, 1),
 * argmax(y, 1)), and by TF1's names (reduction_indices=, keep_dims=).
 *
 * Each makes one IR node.  A reduction records its reduced axes as a bit
 * mask over the input's axes in IrNode.axes, and keepdims; the output
 * shape is the input's without the reduced axes (or with 1 there).  The
 * axes are static, so every shape rule, the empty-axis rule of max and
 * min included, is checked here and the kernels need no run-time checks.
 * softmax is one node with its own kernel (codegen/cpu_reduce.c), not a
 * composite of max, sub, exp and sum nodes: one pass fewer over memory
 * and no temporaries.  softmax_cross_entropy likewise: as the composite
 * -reduce_sum(labels * log_softmax(logits), -1) it wrote and read back
 * log_softmax's [..., C] tensor, 2.2x the fused node's time on
 * [10000, 1000] f32 (spec/design.md "Kernels").
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* One axis literal e against rank: its index in [0, rank) or -1
 * (reported). */
static int
axis_of(Checker *c, AstNode *e, int rank, const char *fn, int list_ok)
{
	Lit l = check_lit_of(e);

	if (l.kind != 1) {
		diag_error(c->d, e->loc, "'axis' of '%s' must be an integer "
			   "literal%s", fn, list_ok ? " or a list of them" : "");
		return -1;
	}
	if (rank == 0) {
		diag_error(c->d, e->loc, "axis %" PRId64 " is out of range "
			   "for a tensor of rank 0 (a scalar has no axes)",
			   l.i);
		return -1;
	}
	if (l.i < -rank || l.i >= rank) {
		diag_error(c->d, e->loc, "axis %" PRId64 " is out of range "
			   "for a tensor of rank %d (expected %d to %d)", l.i,
			   rank, -rank, rank - 1);
		return -1;
	}
	return (int)(l.i < 0 ? l.i + rank : l.i);
}

/* The axes named by ax (the `axis` argument of call e, NULL if none) on
 * a tensor of rank `rank` as a bit mask into *mask: an integer literal
 * or (list_ok) a list literal of them, negative counting from the end;
 * all axes without one.  0 or -1 (reported). */
static int
axes_of(Checker *c, AstNode *e, AstNode *ax, int rank, int list_ok,
	uint32_t *mask)
{
	*mask = 0;
	if (!ax) {
		*mask = rank ? (1u << rank) - 1 : 0;
		return 0;
	}
	if (ax->kind != AST_TENSOR || !list_ok) {
		int k = axis_of(c, ax, rank, e->name, list_ok);
		if (k < 0)
			return -1;
		*mask = 1u << k;
		return 0;
	}
	for (int i = 0; i < ax->n; i++) {
		int k = axis_of(c, ax->list[i], rank, e->name, 1);
		Lit l = check_lit_of(ax->list[i]);
		if (k < 0)
			return -1;
		if (*mask & (1u << k)) {
			if (l.i == k)
				diag_error(c->d, ax->list[i]->loc,
					   "axis %d is given twice", k);
			else
				diag_error(c->d, ax->list[i]->loc,
					   "axis %" PRId64 " is axis %d, given "
					   "twice", l.i, k);
			return -1;
		}
		*mask |= 1u << k;
	}
	return 0;
}

/* The node reducing x over mask, with keepdims (ir_reduce: the input's
 * dtype, i64 positions for argmax and argmin). */
static IrNode *
reduce_node(Checker *c, AstNode *e, OpKind op, IrNode *x, uint32_t mask,
	    int keepdims)
{
	return check_built(c, ir_reduce(c->p, e->loc, op, x, mask, keepdims));
}

/* The first argument, which must not be bool; NULL (reported). */
static IrNode *
numeric_arg(Checker *c, AstNode *e)
{
	IrNode *x = check_expr(c, e->list[0]);

	if (x && (x->dtype == TFG_BOOL || x->dtype == TFG_STRING)) {
		diag_error(c->d, e->list[0]->loc,
			   "'%s' does not take a %s tensor", e->name,
			   tfg_dtype_name(x->dtype));
		return NULL;
	}
	return x;
}

/* The axis (into *mask, on x) and keepdims (into *keep) arguments of
 * reduction e; 0, or -1 (reported). */
static int
reduce_args(Checker *c, AstNode *e, const IrNode *x, uint32_t *mask,
	    int *keep)
{
	AstNode *kd = check_kwarg(e, "keepdims");
	Lit l;

	if (axes_of(c, e, check_kwarg(e, "axis"), x->shape.rank, 1, mask) < 0)
		return -1;
	*keep = 0;
	if (!kd)
		return 0;
	l = check_lit_of(kd);
	if (l.kind != 3) {
		if (!habit_report(c, kd)) /* True: "tfg writes true" */
			diag_error(c->d, kd->loc, "'keepdims' of '%s' must be "
				   "true or false", e->name);
		return -1;
	}
	*keep = (int)l.i;
	return 0;
}

/* max, min and the arg forms have no identity: a reduced axis of size 0
 * is an error (NumPy raises at run time; shapes are static here). */
static int
check_nonempty(Checker *c, AstNode *e, const IrNode *x, uint32_t mask)
{
	for (int k = 0; k < x->shape.rank; k++)
		if (((mask >> k) & 1) && x->shape.dims[k] == 0) {
			diag_error(c->d, e->loc, "'%s' of an empty axis: "
				   "axis %d of %s has size 0", e->name, k,
				   ir_type_str(c->a, x->dtype, &x->shape));
			return -1;
		}
	return 0;
}

/* reduce_sum reduce_mean reduce_max reduce_min reduce_prod (x, axis=,
 * keepdims=) (spec §6.5 "Reductions"): the input's dtype, bool refused;
 * axis and keepdims also positional, as TF's (x, axis, keepdims). */
IrNode *
check_reduce(Checker *c, AstNode *e, OpKind op)
{
	IrNode *x;
	uint32_t mask;
	int keep;

	if (check_bind(c, e) < 0 || !(x = numeric_arg(c, e)) ||
	    reduce_args(c, e, x, &mask, &keep) < 0)
		return NULL;
	if ((op == OP_reduce_max || op == OP_reduce_min) &&
	    check_nonempty(c, e, x, mask) < 0)
		return NULL;
	return reduce_node(c, e, op, x, mask, keep);
}

/* reduce_any reduce_all (x, axis=, keepdims=false),
 * spec §6.5.7 "reduce_any, reduce_all": a bool x; any is whether some
 * element is true, all whether none is false, made as the count of those
 * elements (reduce_sum of them cast to i64) compared with 0, so that a
 * reduced axis of size 0 gives false and true, as TF's. */
IrNode *
check_reduce_bool(Checker *c, AstNode *e, OpKind op)
{
	int all = strcmp(e->name, "reduce_all") == 0, keep;
	IrNode *x, *n, *zero;
	uint32_t mask;

	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	if (x->dtype != TFG_BOOL) {
		diag_error(c->d, e->list[0]->loc, "'%s' takes a bool tensor, "
			   "got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (reduce_args(c, e, x, &mask, &keep) < 0)
		return NULL;
	if (all && !(x = check_built(c, ir_unary(c->p, e->loc, OP_logical_not,
						   x))))
		return NULL;
	if (!(n = check_built(c, ir_cast(c->p, e->loc, x, TFG_I64))) ||
	    !(n = reduce_node(c, e, op, n, mask, keep)))
		return NULL;
	if (!(zero = check_scalar(c, e->loc, (Lit){1, 0, 0}, TFG_I64)))
		return NULL;
	return check_built(c, ir_binary(c->p, e->loc, all ? OP_equal
					: OP_not_equal, n, zero));
}

/* argmax argmin (x, axis=0, *, output_type=i64)
 * (spec §6.5.4 "argmax, argmin"): one axis, TF1's default 0, also
 * positional (argmax(y, 1)); i64 positions, or i32 ones with
 * output_type=i32 as TF's. */
IrNode *
check_argreduce(Checker *c, AstNode *e, OpKind op)
{
	AstNode *ax, *ot;
	IrNode *x, *r;
	TfgDtype t = TFG_I64;
	uint32_t mask;

	if (check_bind(c, e) < 0)
		return NULL;
	ax = check_kwarg(e, "axis");
	if ((ot = check_kwarg(e, "output_type")) != NULL &&
	    (ot->kind != AST_NAME || check_dtype_named(ot->name, &t) < 0 ||
	     (t != TFG_I32 && t != TFG_I64))) {
		diag_error(c->d, ot->loc, "'output_type' of '%s' must be i32 "
			   "or i64", e->name);
		return NULL;
	}
	if (!(x = numeric_arg(c, e)))
		return NULL;
	if (ax) {
		if (axes_of(c, e, ax, x->shape.rank, 0, &mask) < 0)
			return NULL;
	} else if (x->shape.rank == 0) {
		diag_error(c->d, e->list[0]->loc, "'%s' needs a tensor of "
			   "rank 1 or more, got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	} else {
		mask = 1; /* axis 0 */
	}
	if (check_nonempty(c, e, x, mask) < 0 ||
	    !(r = reduce_node(c, e, op, x, mask, 0)))
		return NULL;
	return t == TFG_I64 ? r : check_built(c, ir_cast(c->p, e->loc, r, t));
}

/* softmax log_softmax (x, axis=-1) (spec §6.5.5 "softmax, log_softmax"):
 * floats of rank >= 1, along one axis; same dtype and shape.  The node
 * works along the last axis: another is moved there and back by two
 * transposes. */
IrNode *
check_softmax(Checker *c, AstNode *e, OpKind op)
{
	AstNode *ax;
	IrNode *x, *y;
	int perm[TFG_MAX_RANK], k;

	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	if (x->dtype != TFG_F32 && x->dtype != TFG_F64) {
		diag_error(c->d, e->loc, "'%s' takes a float tensor, got %s",
			   e->name, ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (x->shape.rank == 0) {
		diag_error(c->d, e->list[0]->loc, "'%s' needs a tensor of "
			   "rank 1 or more, got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	k = x->shape.rank - 1;
	if ((ax = check_kwarg(e, "axis")) != NULL &&
	    (k = axis_of(c, ax, x->shape.rank, e->name, 0)) < 0)
		return NULL;
	if (k == x->shape.rank - 1)
		return check_built(c, ir_softmax(c->p, e->loc, op, x));
	/* swap axis k with the last: its own inverse */
	for (int i = 0; i < x->shape.rank; i++)
		perm[i] = i;
	perm[k] = x->shape.rank - 1;
	perm[x->shape.rank - 1] = k;
	if (!(y = check_built(c, ir_transpose(c->p, e->loc, x, perm))) ||
	    !(y = check_built(c, ir_softmax(c->p, e->loc, op, y))))
		return NULL;
	return check_built(c, ir_transpose(c->p, e->loc, y, perm));
}

/* softmax_cross_entropy(logits, labels)
 * (spec §6.5.6 "softmax_cross_entropy"): positional in that order, or as
 * the keywords logits= and labels= (TF requires keywords), in any order;
 * float logits of rank >= 1, labels of their dtype and shape; the
 * logits' shape without its last axis. */
/* The logits and labels arguments of call e, positional or by keyword
 * (check_bind); -1 (reported). */
static int
xent_args(Checker *c, AstNode *e, AstNode **a)
{
	if (check_bind(c, e) < 0)
		return -1;
	a[0] = e->list[0];
	a[1] = e->list[1];
	return 0;
}

/* Float logits of rank 1 or more: 0, or -1 (reported). */
static int
xent_logits(Checker *c, AstNode *e, AstNode *a, const IrNode *x)
{
	if (x->dtype != TFG_F32 && x->dtype != TFG_F64) {
		diag_error(c->d, a->loc, "'%s' takes float logits, got %s",
			   e->name, ir_type_str(c->a, x->dtype, &x->shape));
		return -1;
	}
	if (x->shape.rank == 0) {
		diag_error(c->d, a->loc, "'%s' needs logits of rank 1 or "
			   "more, got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		return -1;
	}
	return 0;
}

IrNode *
check_xent(Checker *c, AstNode *e, OpKind op)
{
	AstNode *a[2] = {NULL, NULL};
	IrNode *x, *l;

	(void)op;
	if (xent_args(c, e, a) < 0)
		return NULL;
	if (!(x = check_expr(c, a[0])) || !(l = check_expr(c, a[1])))
		return NULL;
	if (xent_logits(c, e, a[0], x) < 0)
		return NULL;
	if (l->dtype != x->dtype || !tfg_shape_eq(&l->shape, &x->shape)) {
		diag_error(c->d, a[1]->loc, "the labels of '%s' must be %s, "
			   "as the logits are, got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape),
			   ir_type_str(c->a, l->dtype, &l->shape));
		return NULL;
	}
	return check_built(c, ir_xent(c->p, e->loc, x, l));
}

/* sparse_softmax_cross_entropy(logits, labels)
 * (spec §6.5.6 "softmax_cross_entropy"): integer labels of the logits'
 * shape without its last axis, C = that axis; made of
 * softmax_cross_entropy(logits, one_hot(labels, C)), NaN where a label
 * is outside 0..C-1 (as TF's on a GPU), so that a bad label stops
 * minimize rather than training on nothing. */
IrNode *
check_sparse_xent(Checker *c, AstNode *e, OpKind op)
{
	AstNode *a[2] = {NULL, NULL};
	IrNode *x, *l, *h, *r, *in[3], *lo, *hi, *nan;
	IrMake *m = arena_alloc(c->a, sizeof *m);
	TfgShape s, s0 = {0, {0}};
	int64_t depth;
	int ok, rank;
	void *d;

	(void)op;
	if (xent_args(c, e, a) < 0)
		return NULL;
	if (!(x = check_expr(c, a[0])) || !(l = check_expr(c, a[1])) ||
	    xent_logits(c, e, a[0], x) < 0)
		return NULL;
	rank = x->shape.rank;
	depth = x->shape.dims[rank - 1];
	ok = dtype_is_int(l->dtype) && l->shape.rank == rank - 1 &&
	     depth != IR_DIM_UNKNOWN;
	for (int i = 0; ok && i < rank - 1; i++)
		ok = l->shape.dims[i] == x->shape.dims[i] ||
		     l->shape.dims[i] == IR_DIM_UNKNOWN ||
		     x->shape.dims[i] == IR_DIM_UNKNOWN;
	if (!ok) {
		s = x->shape;
		s.rank--;
		diag_error(c->d, a[1]->loc, "the labels of '%s' must be "
			   "integers of the logits' shape without its last "
			   "axis (%s for logits %s), got %s", e->name,
			   strchr(ir_type_str(c->a, TFG_I32, &s), '['),
			   ir_type_str(c->a, x->dtype, &x->shape),
			   ir_type_str(c->a, l->dtype, &l->shape));
		return NULL;
	}
	m->f[0] = 1; /* on, off 0: the logits' dtype */
	m->axis = rank - 1;
	s = l->shape;
	s.dims[s.rank++] = depth;
	h = check_built(c, ir_make(c->p, e->loc, OP_one_hot, x->dtype, &s, m,
				   &l, 1));
	if (!h || !(r = check_built(c, ir_xent(c->p, e->loc, x, h))))
		return NULL;
	/* where(label >= 0, where(label < C, r, NaN), NaN) */
	d = arena_alloc(c->a, 8);
	memset(d, 0, 8);
	lo = check_built(c, ir_const(c->p, e->loc, l->dtype, &s0, d, 0));
	d = arena_alloc(c->a, 8);
	if (l->dtype == TFG_U8)
		*(uint8_t *)d = depth > 255 ? 255 : (uint8_t)depth;
	else if (l->dtype == TFG_I32)
		*(int32_t *)d = depth > INT32_MAX ? INT32_MAX : (int32_t)depth;
	else
		*(int64_t *)d = depth;
	hi = check_built(c, ir_const(c->p, e->loc, l->dtype, &s0, d, 0));
	d = arena_alloc(c->a, 8);
	if (x->dtype == TFG_F32)
		*(float *)d = NAN;
	else
		*(double *)d = NAN;
	nan = check_built(c, ir_const(c->p, e->loc, x->dtype, &s0, d, 0));
	if (!lo || !hi || !nan)
		return NULL;
	in[0] = check_built(c, ir_binary(c->p, e->loc, depth > 255 &&
					 l->dtype == TFG_U8 ? OP_less_equal
							    : OP_less, l, hi));
	if (!in[0])
		return NULL;
	r = check_built(c, ir_where(c->p, e->loc, in[0], r, nan));
	in[0] = check_built(c, ir_binary(c->p, e->loc, OP_greater_equal, l,
					 lo));
	if (!r || !in[0])
		return NULL;
	return check_built(c, ir_where(c->p, e->loc, in[0], r, nan));
}

/* ------------------------------------------------------ list functions */

/* moments(x, axes, shift=, keepdims=false)
 * (spec §6.35 "moments, batch_normalization, top_k"): [mean, variance]
 * of a float x over axes, TF's tf.nn.moments: the variance is the mean
 * of the squared differences from the mean (shift, which TF does not
 * use either, is taken and left alone). */
PtrVec *
check_moments_list(Checker *c, AstNode *e)
{
	AstNode *kd;
	IrNode *x, *m, *d, *v;
	PtrVec *out;
	uint32_t mask;
	int keep = 0;

	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	if (!dtype_is_float(x->dtype)) {
		diag_error(c->d, e->list[0]->loc, "'moments' takes a float "
			   "tensor, got %s",
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (axes_of(c, e, e->list[1], x->shape.rank, 1, &mask) < 0)
		return NULL;
	if ((kd = check_kwarg(e, "keepdims"))) {
		Lit l = check_lit_of(kd);

		if (l.kind != 3) {
			diag_error(c->d, kd->loc, "'keepdims' of 'moments' must "
				   "be true or false");
			return NULL;
		}
		keep = (int)l.i;
	}
	if (!(m = reduce_node(c, e, OP_reduce_mean, x, mask, 1)))
		return NULL;
	if (!(d = check_built(c, ir_binary(c->p, e->loc, OP_sub, x, m))) ||
	    !(d = check_built(c, ir_binary(c->p, e->loc, OP_mul, d, d))) ||
	    !(v = reduce_node(c, e, OP_reduce_mean, d, mask, keep)))
		return NULL;
	if (!keep) {
		TfgShape s = v->shape;

		if (!(m = check_built(c, ir_reshape(c->p, e->loc, m, &s))))
			return NULL;
	}
	out = arena_alloc(c->a, sizeof *out);
	vec_push(c->a, out, m);
	vec_push(c->a, out, v);
	return out;
}

/* top_k(input, k=1, sorted=true)
 * (spec §6.35 "moments, batch_normalization, top_k"): [values, indices]
 * of the k largest elements of each row (the last axis) of a number
 * tensor, largest first, the lower index first among equals, as TF's;
 * indices i32.  Made of k
 * rounds: the row's argmax, its value (picked by a one-hot mask, so that
 * the gradient goes to that element alone, as TF's), then that element
 * replaced by the lowest value for the next round. */
PtrVec *
check_top_k_list(Checker *c, AstNode *e)
{
	AstNode *ke, *so;
	IrNode *x, *m, **val, **idx, *lo, *zero;
	PtrVec *out;
	int64_t k = 1, n;
	int r;
	Lit l;

	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	ke = check_kwarg(e, "k");
	so = check_kwarg(e, "sorted");
	r = x->shape.rank;
	if (r == 0 || x->dtype == TFG_BOOL || x->dtype == TFG_STRING ||
	    x->shape.dims[r - 1] == IR_DIM_UNKNOWN) {
		diag_error(c->d, e->list[0]->loc, "'top_k' takes a number "
			   "tensor of rank 1 or more whose last dim is known, "
			   "got %s", ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	n = x->shape.dims[r - 1];
	if (ke) {
		l = check_lit_of(ke);
		if (l.kind != 1) {
			diag_error(c->d, ke->loc, "the k of 'top_k' must be an "
				   "integer literal");
			return NULL;
		}
		k = l.i;
	}
	if (k < 1 || k > n || k > 4096) {
		diag_error(c->d, ke ? ke->loc : e->loc, "the k of 'top_k' must "
			   "be 1 to the last dim of %s (%" PRId64 ")%s, got %"
			   PRId64, ir_type_str(c->a, x->dtype, &x->shape), n,
			   n > 4096 ? ", at most 4096" : "", k);
		return NULL;
	}
	if (so && check_lit_of(so).kind != 3) {
		diag_error(c->d, so->loc, "'sorted' of 'top_k' must be true or "
			   "false");
		return NULL;
	}
	l = dtype_is_float(x->dtype) ? (Lit){2, 0, -INFINITY}
	    : (Lit){1, x->dtype == TFG_I64 ? INT64_MIN : x->dtype == TFG_I32
		       ? INT32_MIN : 0, 0};
	if (!(lo = check_scalar(c, e->loc, l, x->dtype)) ||
	    !(zero = check_scalar(c, e->loc, (Lit){dtype_is_float(x->dtype)
						    ? 2 : 1, 0, 0},
				  x->dtype)))
		return NULL;
	val = arena_alloc(c->a, (size_t)k * sizeof *val);
	idx = arena_alloc(c->a, (size_t)k * sizeof *idx);
	m = x;
	for (int64_t i = 0; i < k; i++) {
		IrMake *mk = arena_alloc(c->a, sizeof *mk);
		IrNode *a, *hot, *oh;
		TfgShape hs = x->shape;

		if (!(a = reduce_node(c, e, OP_argmax, m, 1u << (r - 1), 0)))
			return NULL;
		mk->f[0] = mk->i[0] = 1; /* on, off: true, false */
		mk->axis = r - 1;
		if (!(oh = check_built(c, ir_make(c->p, e->loc, OP_one_hot,
						  TFG_BOOL, &hs, mk, &a, 1))) ||
		    !(hot = check_built(c, ir_where(c->p, e->loc, oh, x,
						    zero))) ||
		    !(val[i] = reduce_node(c, e, OP_reduce_sum, hot,
					   1u << (r - 1), 0)) ||
		    !(idx[i] = check_built(c, ir_cast(c->p, e->loc, a,
						      TFG_I32))))
			return NULL;
		if (i + 1 < k && !(m = check_built(c, ir_where(c->p, e->loc,
							       oh, lo, m))))
			return NULL;
	}
	out = arena_alloc(c->a, sizeof *out);
	vec_push(c->a, out, check_built(c, ir_stack(c->p, e->loc, val, (int)k,
						    r - 1)));
	vec_push(c->a, out, check_built(c, ir_stack(c->p, e->loc, idx, (int)k,
						    r - 1)));
	return out->v[0] && out->v[1] ? out : NULL;
}
