/*
 * compiler/build.c: the IR builders (spec/design.md "Pipeline").
 *
 * ir_<op>(Program *p, SrcLoc loc, inputs..., attributes...) makes a node
 * of that op in p's graph with its dtype and shape inferred from its
 * inputs and attributes, or reports at loc why it cannot (p->diag) and
 * returns NULL.  The checker parses a call's arguments, applies the
 * language's conversions (promotion, casts of literals) and calls the
 * builder; the passes (partition, fusion) build and rewrite nodes through
 * the same functions, so that no node is filled in by hand.  An IR-level
 * rule lives here once; the checker says more where it knows more (the
 * argument that is wrong, the operator as written) before it gets here.
 *
 * A builder's inputs must already be of the dtypes the op takes: the
 * elementwise ops of two or three operands want one dtype (the checker
 * promotes, the folder and the fuser never change dtypes), matmul too.
 * Unknown dims (IR_DIM_UNKNOWN) pass where the rule cannot decide, as
 * the checker's did: the specialisation checks them again.
 */
#include <inttypes.h>
#include <string.h>

#include "compiler/compiler_int.h"

static const char *
type_s(Program *p, const IrNode *n)
{
	return ir_type_str(p->arena, n->dtype, &n->shape);
}

static const char *
shape_s(Program *p, const TfgShape *s)
{
	/* "[?, 3]": ir_type_str writes unknown dims as '?' */
	return strchr(ir_type_str(p->arena, TFG_F32, s), '[');
}

static IrNode *
node(Program *p, OpKind op, SrcLoc loc, IrNode **in, int nin, TfgDtype t)
{
	IrNode *n = ir_node_new(p, op, nin, loc);

	for (int i = 0; i < nin; i++)
		n->in[i] = in[i];
	n->dtype = t;
	return n;
}

static int
is_float(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

/* -------------------------------------------------------- elementwise */

IrNode *
ir_binary(Program *p, SrcLoc loc, OpKind op, IrNode *a, IrNode *b)
{
	IrNode *in[2] = {a, b};
	TfgShape s;
	IrNode *n;

	if (op_info[op].nin != 2 || !(op_info[op].flags & OPF_ELEMWISE)) {
		diag_error(p->diag, loc, "'%s' is not an elementwise op of two "
			   "operands", op_info[op].name);
		return NULL;
	}
	if (a->dtype != b->dtype) {
		diag_error(p->diag, loc, "'%s' takes operands of one dtype, "
			   "got %s and %s", op_info[op].name, type_s(p, a),
			   type_s(p, b));
		return NULL;
	}
	/* strings only compare equal or not (the checker computes them);
	   bools do no arithmetic (stdlib/ops.def's types) */
	if (!op_takes(op, a->dtype)) {
		diag_error(p->diag, loc, "'%s' does not take %s operands",
			   op_info[op].name, tfg_dtype_name(a->dtype));
		return NULL;
	}
	if (shape_broadcast(&s, &a->shape, &b->shape) < 0) {
		diag_error(p->diag, loc, "operands of '%s' do not broadcast: "
			   "shapes %s and %s", op_info[op].name,
			   shape_s(p, &a->shape), shape_s(p, &b->shape));
		return NULL;
	}
	n = node(p, op, loc, in, 2,
		 op_info[op].flags & OPF_BOOL ? TFG_BOOL : a->dtype);
	n->shape = s;
	return n;
}

IrNode *
ir_where(Program *p, SrcLoc loc, IrNode *c, IrNode *a, IrNode *b)
{
	IrNode *in[3] = {c, a, b};
	TfgShape s;
	IrNode *n;

	if (c->dtype != TFG_BOOL || a->dtype != b->dtype) {
		diag_error(p->diag, loc, "'where' takes a bool condition and "
			   "two values of one dtype, got %s, %s and %s",
			   type_s(p, c), type_s(p, a), type_s(p, b));
		return NULL;
	}
	if (shape_broadcast(&s, &c->shape, &a->shape) < 0 ||
	    shape_broadcast(&s, &s, &b->shape) < 0) {
		diag_error(p->diag, loc, "operands of 'where' do not "
			   "broadcast: shapes %s, %s and %s",
			   shape_s(p, &c->shape), shape_s(p, &a->shape),
			   shape_s(p, &b->shape));
		return NULL;
	}
	n = node(p, OP_where, loc, in, 3, a->dtype);
	n->shape = s;
	return n;
}

IrNode *
ir_unary(Program *p, SrcLoc loc, OpKind op, IrNode *x)
{
	IrNode *n;

	if (op_info[op].nin != 1 || !(op_info[op].flags & OPF_ELEMWISE) ||
	    op == OP_cast) {
		diag_error(p->diag, loc, "'%s' is not an elementwise op of one "
			   "operand", op_info[op].name);
		return NULL;
	}
	if (!op_takes(op, x->dtype)) {
		diag_error(p->diag, loc, "'%s' does not take %s",
			   op_info[op].name, type_s(p, x));
		return NULL;
	}
	n = node(p, op, loc, &x, 1, x->dtype);
	n->shape = x->shape;
	return n;
}

IrNode *
ir_cast(Program *p, SrcLoc loc, IrNode *x, TfgDtype t)
{
	IrNode *n;

	if ((x->dtype == TFG_STRING) != (t == TFG_STRING)) {
		diag_error(p->diag, loc, "'cast' cannot convert %s to %s: a "
			   "string never converts to or from another dtype",
			   type_s(p, x), tfg_dtype_name(t));
		return NULL;
	}
	n = node(p, OP_cast, loc, &x, 1, t);
	n->shape = x->shape;
	return n;
}

/* --------------------------------------------------------- reductions */

IrNode *
ir_reduce(Program *p, SrcLoc loc, OpKind op, IrNode *x, uint32_t axes,
	  int keepdims)
{
	int arg = op == OP_argmax || op == OP_argmin, r = 0;
	IrNode *n;

	if (!(op_info[op].flags & OPF_REDUCE)) {
		diag_error(p->diag, loc, "'%s' is not a reduction",
			   op_info[op].name);
		return NULL;
	}
	if (x->dtype == TFG_BOOL || x->dtype == TFG_STRING) {
		diag_error(p->diag, loc, "'%s' does not take a %s tensor",
			   op_info[op].name, tfg_dtype_name(x->dtype));
		return NULL;
	}
	if (axes >> x->shape.rank || (arg && (axes == 0 || axes & (axes - 1)))) {
		diag_error(p->diag, loc, "'%s' cannot reduce %s over axes "
			   "0x%" PRIx32 "%s", op_info[op].name, type_s(p, x),
			   axes, arg ? " (it takes one axis)" : "");
		return NULL;
	}
	n = node(p, op, loc, &x, 1, arg ? TFG_I64 : x->dtype);
	n->axes = axes;
	n->keepdims = keepdims;
	for (int k = 0; k < x->shape.rank; k++) {
		if (!(axes >> k & 1))
			n->shape.dims[r++] = x->shape.dims[k];
		else if (keepdims)
			n->shape.dims[r++] = 1;
	}
	n->shape.rank = r;
	return n;
}

IrNode *
ir_softmax(Program *p, SrcLoc loc, OpKind op, IrNode *x)
{
	IrNode *n;

	if (op != OP_softmax && op != OP_log_softmax) {
		diag_error(p->diag, loc, "'%s' is not softmax",
			   op_info[op].name);
		return NULL;
	}
	if (!is_float(x->dtype) || x->shape.rank == 0) {
		diag_error(p->diag, loc, "'%s' takes a float tensor of rank 1 "
			   "or more, got %s", op_info[op].name, type_s(p, x));
		return NULL;
	}
	n = node(p, op, loc, &x, 1, x->dtype);
	n->shape = x->shape;
	return n;
}

IrNode *
ir_xent(Program *p, SrcLoc loc, IrNode *x, IrNode *l)
{
	IrNode *in[2] = {x, l}, *n;

	if (!is_float(x->dtype) || x->shape.rank == 0 ||
	    l->dtype != x->dtype || !tfg_shape_eq(&l->shape, &x->shape)) {
		diag_error(p->diag, loc, "'softmax_cross_entropy' takes float "
			   "logits of rank 1 or more and labels of their dtype "
			   "and shape, got %s and %s", type_s(p, x),
			   type_s(p, l));
		return NULL;
	}
	n = node(p, OP_softmax_cross_entropy, loc, in, 2, x->dtype);
	n->shape = x->shape;
	n->shape.rank--;
	return n;
}

/* ------------------------------------------------ shapes and matrices */

IrNode *
ir_matmul(Program *p, SrcLoc loc, IrNode *a, IrNode *b)
{
	IrNode *in[2] = {a, b};
	TfgShape ba = {0, {0}}, bb = {0, {0}}, bo;
	int ra = a->shape.rank, rb = b->shape.rank;
	int64_t ka, kb;
	IrNode *n;

	if (a->dtype != b->dtype || a->dtype == TFG_BOOL ||
	    a->dtype == TFG_STRING || ra == 0 || rb == 0) {
		diag_error(p->diag, loc, "'matmul' takes numbers of one dtype "
			   "and rank 1 or more, got %s and %s", type_s(p, a),
			   type_s(p, b));
		return NULL;
	}
	ka = a->shape.dims[ra - 1];
	kb = b->shape.dims[rb >= 2 ? rb - 2 : 0];
	ba.rank = ra > 2 ? ra - 2 : 0;
	bb.rank = rb > 2 ? rb - 2 : 0;
	memcpy(ba.dims, a->shape.dims, sizeof ba.dims[0] * ba.rank);
	memcpy(bb.dims, b->shape.dims, sizeof bb.dims[0] * bb.rank);
	if ((ka != kb && ka != IR_DIM_UNKNOWN && kb != IR_DIM_UNKNOWN) ||
	    shape_broadcast(&bo, &ba, &bb) < 0) {
		diag_error(p->diag, loc, "operands of 'matmul' do not match: "
			   "shapes %s and %s", shape_s(p, &a->shape),
			   shape_s(p, &b->shape));
		return NULL;
	}
	n = node(p, OP_matmul, loc, in, 2, a->dtype);
	n->shape = bo;
	if (ra >= 2)
		n->shape.dims[n->shape.rank++] = a->shape.dims[ra - 2];
	if (rb >= 2)
		n->shape.dims[n->shape.rank++] = b->shape.dims[rb - 1];
	return n;
}

IrNode *
ir_transpose(Program *p, SrcLoc loc, IrNode *x, const int *perm)
{
	int r = x->shape.rank;
	uint32_t seen = 0;
	IrAxes *ax;
	IrNode *n;

	for (int i = 0; perm && i < r; i++) {
		if (perm[i] < 0 || perm[i] >= r || (seen >> perm[i] & 1))
			break;
		seen |= 1u << perm[i];
	}
	if (perm && seen != (1u << r) - 1) {
		diag_error(p->diag, loc, "the perm of 'transpose' must be a "
			   "permutation of the %d axes of %s", r,
			   type_s(p, x));
		return NULL;
	}
	n = node(p, OP_transpose, loc, &x, 1, x->dtype);
	n->ax = ax = arena_alloc(p->arena, sizeof *ax);
	n->shape.rank = r;
	for (int i = 0; i < r; i++) {
		ax->perm[i] = perm ? perm[i] : r - 1 - i;
		n->shape.dims[i] = x->shape.dims[ax->perm[i]];
	}
	return n;
}

IrNode *
ir_reshape(Program *p, SrcLoc loc, IrNode *x, const TfgShape *s)
{
	int known = shape_known(&x->shape) && shape_known(s);
	IrNode *n;

	if (known && tfg_shape_numel(&x->shape) != tfg_shape_numel(s)) {
		char buf[256];

		diag_error(p->diag, loc, "'reshape' cannot make %s (%" PRId64
			   " element%s) into shape %s", type_s(p, x),
			   tfg_shape_numel(&x->shape),
			   tfg_shape_numel(&x->shape) == 1 ? "" : "s",
			   tfg_shape_str(buf, sizeof buf, s));
		return NULL;
	}
	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] < 0 && s->dims[i] != IR_DIM_UNKNOWN) {
			diag_error(p->diag, loc, "'reshape' to a shape with a "
				   "negative dimension");
			return NULL;
		}
	n = node(p, OP_reshape, loc, &x, 1, x->dtype);
	n->shape = *s;
	return n;
}

IrNode *
ir_slice(Program *p, SrcLoc loc, IrNode *x, const int64_t *begin,
	 const int64_t *size, uint32_t squeeze)
{
	int r = x->shape.rank, k = 0;
	IrAxes *ax;
	IrNode *n;

	for (int i = 0; i < r; i++) {
		int64_t len = x->shape.dims[i], b = begin[i], z = size[i];
		int bad = (squeeze >> i & 1) && z != 1;

		/* an axis of unknown length: its bounds are checked in the
		   specialisation, a size may be unknown too */
		if (len != IR_DIM_UNKNOWN)
			bad |= b < 0 || z < 0 || b > len || z > len - b;
		else
			bad |= z < 0 && z != IR_DIM_UNKNOWN;
		if (bad) {
			diag_error(p->diag, loc, "'slice' is out of range on "
				   "axis %d of %s: begin %" PRId64 ", size %"
				   PRId64, i, type_s(p, x), b, z);
			return NULL;
		}
	}
	if (squeeze >> r) {
		diag_error(p->diag, loc, "'slice' drops an axis %s does not "
			   "have", type_s(p, x));
		return NULL;
	}
	n = node(p, OP_slice, loc, &x, 1, x->dtype);
	n->ax = ax = arena_alloc(p->arena, sizeof *ax);
	ax->squeeze = squeeze;
	for (int i = 0; i < r; i++) {
		ax->begin[i] = begin[i];
		ax->size[i] = size[i];
		if (!(squeeze >> i & 1))
			n->shape.dims[k++] = size[i];
	}
	n->shape.rank = k;
	return n;
}

/* The dims of in[1..n-1] against in[0]'s, off axis `skip` (-1: none): the
 * joined shape in *s (a known dim wins over an unknown one); -1 if they
 * differ. */
static int
join_dims(IrNode **in, int n, int skip, TfgShape *s)
{
	*s = in[0]->shape;
	for (int i = 1; i < n; i++) {
		if (in[i]->shape.rank != s->rank || in[i]->dtype != in[0]->dtype)
			return -1;
		for (int k = 0; k < s->rank; k++) {
			int64_t a = in[i]->shape.dims[k], b = s->dims[k];

			if (k == skip)
				continue;
			if (a != b && a != IR_DIM_UNKNOWN && b != IR_DIM_UNKNOWN)
				return -1;
			if (b == IR_DIM_UNKNOWN)
				s->dims[k] = a;
		}
	}
	return 0;
}

IrNode *
ir_concat(Program *p, SrcLoc loc, IrNode **in, int nin, int axis)
{
	TfgShape s;
	IrNode *n;

	if (nin < 1 || axis < 0 || axis >= in[0]->shape.rank ||
	    join_dims(in, nin, axis, &s) < 0) {
		diag_error(p->diag, loc, "tensors of 'concat' on axis %d do "
			   "not match", axis);
		return NULL;
	}
	s.dims[axis] = 0;
	for (int i = 0; i < nin; i++)
		if (s.dims[axis] == IR_DIM_UNKNOWN ||
		    in[i]->shape.dims[axis] == IR_DIM_UNKNOWN)
			s.dims[axis] = IR_DIM_UNKNOWN;
		else
			s.dims[axis] += in[i]->shape.dims[axis];
	n = node(p, OP_concat, loc, in, nin, in[0]->dtype);
	n->axis = axis;
	n->shape = s;
	return n;
}

IrNode *
ir_stack(Program *p, SrcLoc loc, IrNode **in, int nin, int axis)
{
	TfgShape s;
	IrNode *n;
	int r;

	if (nin < 1 || (r = in[0]->shape.rank) + 1 > TFG_MAX_RANK ||
	    axis < 0 || axis > r || join_dims(in, nin, -1, &s) < 0) {
		diag_error(p->diag, loc, "tensors of 'stack' on axis %d do "
			   "not match", axis);
		return NULL;
	}
	n = node(p, OP_stack, loc, in, nin, in[0]->dtype);
	n->axis = axis;
	n->shape.rank = r + 1;
	for (int k = 0, j = 0; k <= r; k++)
		n->shape.dims[k] = k == axis ? nin : s.dims[j++];
	return n;
}

/* ----------------------------------------------------------- gradients */

IrNode *
ir_grad(Program *p, SrcLoc loc, IrNode *y, IrNode *x)
{
	IrNode *in[2] = {y, x};
	IrNode *n;

	if (!is_float(y->dtype) || y->shape.rank != 0 || !is_float(x->dtype)) {
		diag_error(p->diag, loc, "'grad' takes a float scalar and a "
			   "float tensor, got %s and %s", type_s(p, y),
			   type_s(p, x));
		return NULL;
	}
	n = node(p, OP_grad, loc, in, 2, x->dtype);
	n->shape = x->shape;
	return n;
}

IrNode *
ir_check_range(Program *p, SrcLoc loc, IrNode *x, double lo, double hi,
	       int closed, int what)
{
	IrMake *m;
	IrNode *n;

	int index = what == IR_RANGE_INDEX || what == IR_RANGE_SORTED;

	if (index ? !(x->dtype == TFG_I32 || x->dtype == TFG_I64) ||
		    !(hi >= 0) || (what == IR_RANGE_SORTED &&
				   x->shape.rank != 1)
	    : !is_float(x->dtype) || x->shape.rank != 0) {
		diag_error(p->diag, loc, "'check_range' takes %s, got %s",
			   what == IR_RANGE_SORTED ? "indices of rank 1" :
			   index ? "indices" : "a float scalar", type_s(p, x));
		return NULL;
	}
	m = arena_alloc(p->arena, sizeof *m);
	m->f[0] = lo;
	m->f[1] = hi;
	m->i[0] = what;
	m->i[1] = index ? (int64_t)hi : closed;
	m->axis = index ? closed : 0; /* the op it feeds */
	n = node(p, OP_check_range, loc, &x, 1, x->dtype);
	n->shape = x->shape;
	n->make = m;
	return n;
}

/* ------------------------------------------------------- convolutions */

int
ir_conv_shape(const TfgShape *x, const TfgShape *f, const IrConv *cv,
	      TfgShape *y)
{
	if (x->rank != 4 || f->rank != 4)
		return -1;
	if (x->dims[3] != IR_DIM_UNKNOWN && f->dims[2] != IR_DIM_UNKNOWN &&
	    x->dims[3] != f->dims[2])
		return -1;
	y->rank = 4;
	y->dims[0] = x->dims[0];
	for (int a = 0; a < 2; a++) {
		int64_t in = x->dims[1 + a], k = f->dims[a];
		int64_t span = k == IR_DIM_UNKNOWN ? 0 : (k - 1) * cv->dil[a] + 1;
		int64_t room = in + cv->pad[2 * a] + cv->pad[2 * a + 1];

		if (k != IR_DIM_UNKNOWN && k < 1)
			return -1;
		if (in == IR_DIM_UNKNOWN || k == IR_DIM_UNKNOWN)
			y->dims[1 + a] = IR_DIM_UNKNOWN;
		else if (room < span)
			return -1;
		else
			y->dims[1 + a] = (room - span) / cv->stride[a] + 1;
	}
	if (cv->depthwise)
		y->dims[3] = x->dims[3] == IR_DIM_UNKNOWN ||
			     f->dims[3] == IR_DIM_UNKNOWN
			     ? IR_DIM_UNKNOWN : x->dims[3] * f->dims[3];
	else
		y->dims[3] = f->dims[3];
	return 0;
}

/* Whether known dims of a and b agree. */
static int
dims_fit(const TfgShape *a, const TfgShape *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] && a->dims[i] != IR_DIM_UNKNOWN &&
		    b->dims[i] != IR_DIM_UNKNOWN)
			return 0;
	return 1;
}

IrNode *
ir_conv(Program *p, SrcLoc loc, OpKind op, IrNode *a, IrNode *b,
	const IrConv *cv, const TfgShape *out)
{
	IrNode *in[2] = {a, b}, *n;
	TfgShape y;
	int ok;

	if (!is_float(a->dtype) || a->dtype != b->dtype ||
	    a->shape.rank != 4 || b->shape.rank != 4 ||
	    (op != OP_conv2d && (!out || out->rank != 4))) {
		diag_error(p->diag, loc, "'%s' takes two float tensors of rank "
			   "4 and one dtype, got %s and %s", op_info[op].name,
			   type_s(p, a), type_s(p, b));
		return NULL;
	}
	switch (op) {
	case OP_conv2d:
		ok = ir_conv_shape(&a->shape, &b->shape, cv, &y) == 0;
		break;
	case OP_conv2d_backprop_input:
		ok = ir_conv_shape(out, &b->shape, cv, &y) == 0 &&
		     dims_fit(&y, &a->shape);
		y = *out;
		if (y.dims[0] == IR_DIM_UNKNOWN)
			y.dims[0] = a->shape.dims[0];
		break;
	case OP_conv2d_backprop_filter:
		ok = ir_conv_shape(&a->shape, out, cv, &y) == 0 &&
		     dims_fit(&y, &b->shape);
		y = *out;
		break;
	default:
		ok = 0;
	}
	if (!ok) {
		diag_error(p->diag, loc, "the operands of '%s' do not fit: %s "
			   "and %s", op_info[op].name, shape_s(p, &a->shape),
			   shape_s(p, &b->shape));
		return NULL;
	}
	n = node(p, op, loc, in, 2, a->dtype);
	n->shape = y;
	n->conv = cv;
	return n;
}

/* The output of a pool of cv over an input of shape x (unknown dims
 * stay unknown); -1 when a window does not fit. */
static int
pool_shape(const TfgShape *x, const IrConv *cv, TfgShape *y)
{
	if (x->rank != 4)
		return -1;
	*y = *x;
	for (int a = 0; a < 2; a++) {
		int64_t in = x->dims[1 + a], k = cv->ksize[a];
		int64_t room = in + cv->pad[2 * a] + cv->pad[2 * a + 1];

		if (k < 1 || cv->stride[a] < 1)
			return -1;
		if (in == IR_DIM_UNKNOWN)
			continue;
		if (room < k)
			return -1;
		y->dims[1 + a] = (room - k) / cv->stride[a] + 1;
	}
	return 0;
}

IrNode *
ir_pool(Program *p, SrcLoc loc, OpKind op, IrNode *a, IrNode *b,
	const IrConv *cv, const TfgShape *out)
{
	int max = op == OP_max_pool || op == OP_max_pool_grad;
	int grad = op == OP_max_pool_grad || op == OP_avg_pool_grad;
	IrNode *in[2] = {a, b}, *n;
	TfgShape y;

	if (a->shape.rank != 4 || (max ? a->dtype == TFG_BOOL ||
				   a->dtype == TFG_STRING ||
				   a->dtype == TFG_U8 : !is_float(a->dtype)) ||
	    (b && b->dtype != a->dtype) || (grad && !out) ||
	    (op == OP_max_pool_grad) != (b != NULL)) {
		diag_error(p->diag, loc, "'%s' takes %s of rank 4, got %s",
			   op_info[op].name, max ? "an i32, i64, f32 or f64 "
			   "tensor" : "a float tensor", type_s(p, a));
		return NULL;
	}
	if (pool_shape(grad ? out : &a->shape, cv, &y) < 0 ||
	    (op == OP_max_pool_grad && !dims_fit(&y, &b->shape)) ||
	    (op == OP_max_pool_grad && !dims_fit(out, &a->shape)) ||
	    (op == OP_avg_pool_grad && !dims_fit(&y, &a->shape))) {
		diag_error(p->diag, loc, "the windows of '%s' do not fit %s",
			   op_info[op].name, type_s(p, a));
		return NULL;
	}
	n = node(p, op, loc, in, b ? 2 : 1, a->dtype);
	n->shape = grad ? *out : y;
	if (grad && n->shape.dims[0] == IR_DIM_UNKNOWN)
		n->shape.dims[0] = a->shape.dims[0];
	n->conv = cv;
	return n;
}

/* -------------------------------------------------- gather, segments */

static int
is_index(TfgDtype t)
{
	return t == TFG_I32 || t == TFG_I64;
}

/* gather (spec §6.36 "gather, embedding_lookup"): params' axes before
 * axis, the indices' axes, params' axes after axis. */
IrNode *
ir_gather(Program *p, SrcLoc loc, IrNode *x, IrNode *idx, int axis)
{
	IrNode *in[2] = {x, idx}, *n;
	int r = x->shape.rank + idx->shape.rank - 1, j = 0;

	if (x->dtype == TFG_STRING || !is_index(idx->dtype) || axis < 0 ||
	    axis >= x->shape.rank || r > TFG_MAX_RANK) {
		diag_error(p->diag, loc, "'gather' takes a tensor, i32 or i64 "
			   "indices and one of its axes, with a result of rank "
			   "%d at most: got %s, %s and axis %d", TFG_MAX_RANK,
			   type_s(p, x), type_s(p, idx), axis);
		return NULL;
	}
	n = node(p, OP_gather, loc, in, 2, x->dtype);
	n->axis = axis;
	n->shape.rank = r;
	for (int k = 0; k < axis; k++)
		n->shape.dims[j++] = x->shape.dims[k];
	for (int k = 0; k < idx->shape.rank; k++)
		n->shape.dims[j++] = idx->shape.dims[k];
	for (int k = axis + 1; k < x->shape.rank; k++)
		n->shape.dims[j++] = x->shape.dims[k];
	return n;
}

/* OP_shard_ids: ids (i32 or i64, rank 1) routed to shard *part: i64
 * [2, n]. */
IrNode *
ir_shard_ids(Program *p, SrcLoc loc, IrNode *ids, const RtShardOf *part)
{
	IrNode *n;

	if (!is_index(ids->dtype) || ids->shape.rank != 1) {
		diag_error(p->diag, loc, "internal error: 'shard_ids' takes "
			   "i32 or i64 ids of rank 1, got %s", type_s(p, ids));
		return NULL;
	}
	n = node(p, OP_shard_ids, loc, &ids, 1, TFG_I64);
	n->part = part;
	n->shape.rank = 2;
	n->shape.dims[0] = 2;
	n->shape.dims[1] = ids->shape.dims[0];
	return n;
}

/* unsorted_segment_sum and _max (spec §6.37 "Segment reductions"): data's
 * axes [axis, axis + rank of ids) are the ids' shape and become one of
 * nseg. */
IrNode *
ir_segment(Program *p, SrcLoc loc, OpKind op, IrNode *data, IrNode *ids,
	   int64_t nseg, int axis)
{
	IrNode *in[2] = {data, ids}, *n;
	int r = ids->shape.rank, j = 0;
	TfgShape sub = {r, {0}};

	for (int k = 0; k < r && axis >= 0 && axis + k < data->shape.rank;
	     k++)
		sub.dims[k] = data->shape.dims[axis + k];
	if ((op != OP_unsorted_segment_sum && op != OP_unsorted_segment_max) ||
	    !(is_float(data->dtype) || is_index(data->dtype)) ||
	    !is_index(ids->dtype) || axis < 0 ||
	    axis + r > data->shape.rank ||
	    (nseg < 0 && nseg != IR_DIM_UNKNOWN) ||
	    !dims_fit(&sub, &ids->shape)) {
		diag_error(p->diag, loc, "'%s' takes f32, f64, i32 or i64 data "
			   "whose dims from axis %d are the shape of its i32 or "
			   "i64 segment ids: got %s and %s", op_info[op].name,
			   axis, type_s(p, data), type_s(p, ids));
		return NULL;
	}
	n = node(p, op, loc, in, 2, data->dtype);
	n->axis = axis;
	n->shape.rank = data->shape.rank - r + 1;
	for (int k = 0; k < axis; k++)
		n->shape.dims[j++] = data->shape.dims[k];
	n->shape.dims[j++] = nseg;
	for (int k = axis + r; k < data->shape.rank; k++)
		n->shape.dims[j++] = data->shape.dims[k];
	return n;
}

/* ------------------------------------------------- made by the passes */

IrNode *
ir_comm(Program *p, const IrNode *x, IrNode *in, uint32_t key, int peer)
{
	IrNode *n = arena_alloc(p->arena, sizeof *n);

	n->op = in ? OP_send : OP_recv;
	if (in) {
		n->nin = 1;
		n->in = arena_alloc(p->arena, sizeof *n->in);
		n->in[0] = in;
	}
	n->id = x->id;
	n->dtype = x->dtype;
	n->shape = x->shape;
	n->strbytes = x->strbytes;
	n->name = x->name;
	n->loc = x->loc;
	n->dev = x->dev;
	n->task = -1;
	n->key = key;
	n->peer = peer;
	n->origin = (IrNode *)x;
	return n;
}

IrNode *
ir_copy(Program *p, const IrNode *x, IrNode *in, Device to)
{
	IrNode *n = ir_comm(p, x, in, 0, -1);

	n->op = OP_copy;
	n->dev = to;
	n->task = in->task;
	return n;
}

int
ir_set_fuse(Program *p, IrNode *x, OpKind op, const IrFuse *f, IrNode **in,
	    int nin)
{
	const IrFuseOp *v = f->n > 0 ? &f->ops[f->n - 1] : NULL;
	int reduce = (op_info[op].flags & OPF_REDUCE) != 0;
	int epi = ir_takes_epilogue(op);

	/* the expression is the node's value, an epilogue of a matmul, a
	   conv2d or a pool (of its value's dtype) or a reduction's input
	   element */
	if (!v || (op != OP_fused && !epi && !reduce) ||
	    (!reduce && v->dtype != x->dtype) ||
	    nin < (epi ? op_info[op].nin : 0)) {
		diag_error(p->diag, x->loc, "cannot fuse into '%s': an "
			   "expression of %d ops giving %s", op_info[op].name,
			   f->n, v ? tfg_dtype_name(v->dtype) : "nothing");
		return -1;
	}
	x->op = op;
	x->fuse = f;
	x->nin = nin;
	x->in = arena_alloc(p->arena, (nin + 1) * sizeof *x->in);
	memcpy(x->in, in, nin * sizeof *in);
	return 0;
}

/* ----------------------------------------------- values without inputs */

IrNode *
ir_const(Program *p, SrcLoc loc, TfgDtype t, const TfgShape *s, void *data,
	 size_t strbytes)
{
	IrNode *n;

	if (data == NULL) {
		diag_error(p->diag, loc, "a constant needs its value");
		return NULL;
	}
	n = node(p, OP_const, loc, NULL, 0, t);
	n->shape = *s;
	n->data = data;
	n->strbytes = strbytes;
	return n;
}

IrNode *
ir_input(Program *p, SrcLoc loc, const char *name, TfgDtype t,
	 const TfgShape *s)
{
	IrNode *n;

	if (t == TFG_STRING) {
		diag_error(p->diag, loc, "input '%s' cannot be a string",
			   name ? name : "?");
		return NULL;
	}
	n = node(p, OP_input, loc, NULL, 0, t);
	n->shape = *s;
	n->name = name;
	n->user_named = name != NULL;
	return n;
}

IrNode *
ir_make(Program *p, SrcLoc loc, OpKind op, TfgDtype t, const TfgShape *s,
	const IrMake *m, IrNode **in, int nin)
{
	int want;
	IrNode *n;

	switch (op) {
	case OP_fill:
		/* a scalar of the dtype, or none (the value in m) */
		want = nin == 0 || (nin == 1 && in[0]->shape.rank == 0 &&
				    in[0]->dtype == t);
		break;
	case OP_one_hot: /* the indices: an integer tensor */
		want = nin == 1 && dtype_is_int(in[0]->dtype);
		break;
	case OP_random_uniform:
	case OP_random_normal: /* the draw count */
		want = nin == 1 && in[0]->op == OP_random_draw;
		break;
	case OP_zeros: case OP_ones: case OP_zeros_like: case OP_ones_like:
	case OP_range:
		want = nin == 0;
		break;
	default:
		want = -1;
	}
	if (want < 0 || t == TFG_STRING || (op != OP_zeros && op != OP_ones &&
					    !m)) {
		diag_error(p->diag, loc, "'%s' is not a maker of %s",
			   op_info[op].name, tfg_dtype_name(t));
		return NULL;
	}
	if (!want) {
		diag_error(p->diag, loc, "'%s' has the wrong inputs",
			   op_info[op].name);
		return NULL;
	}
	n = node(p, op, loc, in, nin, t);
	n->shape = *s;
	n->make = m;
	return n;
}

/* ---------------------------------------------------------- variables */

IrNode *
ir_var(Program *p, SrcLoc loc, OpKind op, IrVar *v, IrNode *x)
{
	int upd = op == OP_assign || op == OP_assign_add ||
		  op == OP_assign_sub;
	IrNode *n;

	if (!(op_info[op].flags & (OPF_STATEFUL | OPF_RANDOM)) ||
	    (op != OP_random_draw && !v) || (upd != (x != NULL))) {
		diag_error(p->diag, loc, "'%s' is not a variable op with %s",
			   op_info[op].name, x ? "a value" : "no value");
		return NULL;
	}
	if (upd && (x->dtype != v->dtype ||
		    (!tfg_shape_eq(&x->shape, &v->shape) &&
		     x->shape.rank != 0))) {
		diag_error(p->diag, loc, "%s(%s, ...) needs %s, the "
			   "variable's type, got %s", op_info[op].name,
			   v->name, ir_type_str(p->arena, v->dtype, &v->shape),
			   type_s(p, x));
		return NULL;
	}
	n = node(p, op, loc, &x, upd, TFG_I64);
	n->var = v;
	if (op == OP_var_initialized) {
		n->dtype = TFG_BOOL;
	} else if (op != OP_random_draw) {
		n->dtype = v->dtype;
		n->shape = v->shape;
		n->req = v->req; /* placed with its variable */
	}
	return n;
}

IrNode *
ir_scatter(Program *p, SrcLoc loc, OpKind op, IrVar *v, IrNode *ids,
	   IrNode *rows)
{
	IrNode *in[2] = {ids, rows}, *n;
	int ok = (op == OP_scatter_add || op == OP_scatter_update) && v &&
		 v->shape.rank >= 1 && ids->dtype == TFG_I64 &&
		 ids->shape.rank == 1 && rows->dtype == v->dtype &&
		 rows->shape.rank == v->shape.rank &&
		 rows->shape.dims[0] == ids->shape.dims[0];

	for (int k = 1; ok && k < v->shape.rank; k++)
		ok = rows->shape.dims[k] == v->shape.dims[k];
	if (!ok) {
		diag_error(p->diag, loc, "'%s' of '%s' needs i64 ids and their "
			   "rows, got %s and %s", op_info[op].name,
			   v ? v->name : "?", type_s(p, ids), type_s(p, rows));
		return NULL;
	}
	n = node(p, op, loc, in, 2, v->dtype);
	n->shape = v->shape;
	n->var = v;
	n->req = v->req; /* placed with its variable */
	return n;
}

int
ir_opt_nhyper(IrOptKind k)
{
	static const int n[IR_OPT__COUNT] = {
		[IR_OPT_SGD] = 1, [IR_OPT_MOMENTUM] = 2, [IR_OPT_ADAM] = 4,
		[IR_OPT_ADAGRAD] = 2, [IR_OPT_FTRL] = 4,
	};
	return (unsigned)k < IR_OPT__COUNT ? n[k] : -1;
}

int
ir_opt_nhyper_of(const IrOpt *o)
{
	return ir_opt_nhyper(o->kind) + (o->sync > 0) * TFG_SYNC_HYPER + 1;
}

IrNode *
ir_apply(Program *p, SrcLoc loc, IrVar *v, const IrOpt *o, IrNode *g,
	 IrNode *h)
{
	IrNode *in[2] = {g, h};
	IrNode *n;

	if (!v || !o || !is_float(v->dtype) || g->dtype != v->dtype ||
	    !tfg_shape_eq(&g->shape, &v->shape)) {
		diag_error(p->diag, loc, "an update of '%s' needs its "
			   "gradient as %s, got %s", v ? v->name : "?",
			   v ? ir_type_str(p->arena, v->dtype, &v->shape)
			     : "a float variable", type_s(p, g));
		return NULL;
	}
	if (h->dtype != TFG_F64 || h->shape.rank != 1 ||
	    h->shape.dims[0] != ir_opt_nhyper_of(o)) {
		diag_error(p->diag, loc, "an update of '%s' needs f64[%d] "
			   "hyperparameters, got %s", v->name,
			   ir_opt_nhyper_of(o), type_s(p, h));
		return NULL;
	}
	for (int k = 0; k < o->nslot; k++)
		if (!o->slot[k] || o->slot[k]->index != o->slot[0]->index + k) {
			diag_error(p->diag, loc, "the slots of '%s' are not "
				   "consecutive variables", v->name);
			return NULL;
		}
	n = node(p, OP_apply, loc, in, 2, TFG_BOOL);
	n->var = v;
	n->opt = o;
	n->req = v->req; /* placed with its variable */
	return n;
}

int
ir_set_gather_var(Program *p, IrNode *g, IrVar *v)
{
	IrNode *ids = g->nin == 2 ? g->in[1] : NULL;

	if (g->op != OP_gather || g->axis != 0 || !ids ||
	    ids->dtype != TFG_I64 || ids->shape.rank != 1 ||
	    g->in[0]->dtype != v->dtype ||
	    !tfg_shape_eq(&g->in[0]->shape, &v->shape)) {
		diag_error(p->diag, g->loc, "internal error: a gather of rows "
			   "of '%s' in place needs its value and i64 ids of "
			   "rank 1", v->name);
		return -1;
	}
	g->op = OP_gather_var;
	g->var = v;
	g->in[0] = ids;
	g->nin = 1;
	return 0;
}

int
ir_set_rows(Program *p, IrNode *u, IrNode *rows, IrNode *ids)
{
	const IrVar *v = u->var;
	IrNode *h;
	int ok = u->op == OP_apply && v && v->shape.rank >= 1 &&
		 rows->dtype == v->dtype && rows->shape.rank == v->shape.rank &&
		 ids->dtype == TFG_I64 && ids->shape.rank == 1 &&
		 ids->shape.dims[0] == rows->shape.dims[0];

	for (int k = 1; ok && k < v->shape.rank; k++)
		ok = rows->shape.dims[k] == v->shape.dims[k];
	if (!ok) {
		diag_error(p->diag, u->loc, "an update of rows of '%s' needs "
			   "i64 ids and their rows' gradients, got %s and %s",
			   v ? v->name : "?", type_s(p, ids), type_s(p, rows));
		return -1;
	}
	h = u->in[1];
	u->op = OP_apply_rows;
	u->nin = 3;
	u->in = arena_alloc(p->arena, 3 * sizeof *u->in);
	u->in[0] = rows;
	u->in[1] = h;
	u->in[2] = ids;
	return 0;
}

IrNode *
ir_after(Program *p, SrcLoc loc, IrNode **in, int nin)
{
	IrNode *n;

	if (nin < 1) {
		diag_error(p->diag, loc, "'after' needs a value");
		return NULL;
	}
	n = node(p, OP_after, loc, in, nin, in[0]->dtype);
	n->shape = in[0]->shape;
	return n;
}

/* x's attributes cleared, for a rewrite in place into another op */
static void
clear_attrs(IrNode *x)
{
	x->make = NULL;
	x->fuse = NULL;
	x->axes = 0;
	x->keepdims = 0;
	x->axis = 0;
	x->drop = 0;
	x->ax = NULL;
}

int
ir_set_const(Program *p, IrNode *x)
{
	if (x->data == NULL || (op_info[x->op].flags & (OPF_STATEFUL |
							OPF_EFFECT |
							OPF_RANDOM))) {
		diag_error(p->diag, x->loc, "'%s' cannot become a constant",
			   ir_node_label(x));
		return -1;
	}
	x->op = OP_const;
	x->nin = 0;
	x->in = NULL;
	clear_attrs(x);
	return 0;
}

int
ir_set_alias(Program *p, IrNode *x, IrNode *v)
{
	int known = shape_known(&x->shape) && shape_known(&v->shape);

	if (v->dtype != x->dtype || (known && tfg_shape_numel(&x->shape) !=
				     tfg_shape_numel(&v->shape)) ||
	    (op_info[x->op].flags & (OPF_STATEFUL | OPF_EFFECT |
				     OPF_RANDOM))) {
		diag_error(p->diag, x->loc, "'%s' (%s) cannot become a view "
			   "of %s", ir_node_label(x), type_s(p, x),
			   type_s(p, v));
		return -1;
	}
	x->op = OP_reshape;
	x->nin = 1;
	x->in = arena_alloc(p->arena, sizeof *x->in);
	x->in[0] = v;
	x->data = NULL;
	clear_attrs(x);
	return 0;
}
