/*
 * compiler/pass_fold.c: constant folding on the graph, after check and
 * before place (spec/design.md "Passes").
 *
 * A node whose inputs are all constants becomes a constant (OP_const,
 * rewritten in place, so its name, id and device request stay), computed
 * here by a small evaluator that matches the generated code bit for bit:
 *
 *   integers and bool  + - * / % ** maximum minimum neg abs relu, the
 *                      comparisons, where, cast: the wrapping and
 *                      never-trapping rules of spec
 *                      §6.2 "Addition, subtraction, multiplication",
 *                      §6.3 "Division and remainder",
 *                      §6.9 "pow, maximum, minimum" and
 *                      codegen/cpu.c's cg_int_divmod and int_pow
 *   floats             + - * / neg abs relu, the comparisons, where,
 *                      cast (saturating to integers, like llvm.fptosi.sat):
 *                      single IEEE operations, which C on x86-64 (SSE,
 *                      FLT_EVAL_METHOD 0) rounds exactly as LLVM does
 *   makers             zeros ones zeros_like ones_like
 *
 * Strings are left alone: every string value, and == and != of strings,
 * is a constant already (compiler/ops_string.c).
 * stdlib/ops.def's fold column says which ops are folded (FOLD_INT: for
 * integer results only).  Never folded: exp log sqrt tanh sigmoid, float
 * ** and %, float maximum and minimum, reductions, random makers and
 * every other op; their values come from the generated code only.  Results over FOLD_MAX_BYTES (64 KiB)
 * are not folded either, so zeros([100000, 100000]) is never
 * materialised at compile time: it stays a maker, filled at run time.
 * The inputs that folding leaves unused go in pass_dce.c.
 */
#include <math.h>
#include <string.h>

#include "compiler/compiler_int.h"

enum { FOLD_MAX_BYTES = 64 * 1024 };

typedef union Val {
	int64_t i; /* integer and bool dtypes */
	double f;  /* float dtypes (f32 values are exact in a double) */
} Val;

static Val
get(const IrNode *c, int64_t k)
{
	Val v = {0}; /* u8 as 0..255: signed comparisons and floor
			division of such values are the unsigned ones */
	const char *d = c->data;

	if (!d)
		return v; /* an all-zero constant */
	switch (c->dtype) {
	case TFG_BOOL: v.i = ((const uint8_t *)d)[k] != 0; break;
	case TFG_U8: v.i = ((const uint8_t *)d)[k]; break;
	case TFG_I32: v.i = ((const int32_t *)d)[k]; break;
	case TFG_I64: v.i = ((const int64_t *)d)[k]; break;
	case TFG_F32: v.f = ((const float *)d)[k]; break;
	default: v.f = ((const double *)d)[k]; break;
	}
	return v;
}

static void
put(void *d, TfgDtype t, int64_t k, Val v)
{
	switch (t) {
	case TFG_BOOL: ((uint8_t *)d)[k] = v.i != 0; break;
	case TFG_U8: ((uint8_t *)d)[k] = (uint8_t)v.i; break;
	case TFG_I32: ((int32_t *)d)[k] = (int32_t)v.i; break;
	case TFG_I64: ((int64_t *)d)[k] = v.i; break;
	case TFG_F32: ((float *)d)[k] = (float)v.f; break;
	default: ((double *)d)[k] = v.f; break;
	}
}

/* x wrapped to dtype t's width (two's complement; u8 held as 0..255). */
static int64_t
wrap(TfgDtype t, uint64_t x)
{
	if (t == TFG_U8)
		return (int64_t)(uint8_t)x;
	return t == TFG_I32 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
}

/* v of dtype from as dtype to: codegen/cpu.c's cg_cvt. */
static Val
cvt(Val v, TfgDtype from, TfgDtype to)
{
	Val r = {0};
	int fi = dtype_is_float(from), ti = dtype_is_float(to);

	if (from == to)
		return v;
	if (to == TFG_BOOL) {
		r.i = fi ? v.f != 0 : v.i != 0;
	} else if (fi && ti) {
		r.f = to == TFG_F32 ? (double)(float)v.f : v.f;
	} else if (fi && to == TFG_U8) { /* llvm.fptoui.sat */
		r.i = isnan(v.f) || v.f <= 0 ? 0 : v.f >= 255 ? 255
		      : (int64_t)v.f;
	} else if (fi) { /* saturating, NaN -> 0 */
		double lo = to == TFG_I32 ? -2147483648.0 : -9223372036854775808.0;
		if (isnan(v.f))
			r.i = 0;
		else if (v.f <= lo)
			r.i = to == TFG_I32 ? INT32_MIN : INT64_MIN;
		else if (v.f >= -lo)
			r.i = to == TFG_I32 ? INT32_MAX : INT64_MAX;
		else
			r.i = (int64_t)v.f;
	} else if (ti) {
		r.f = to == TFG_F32 ? (double)(float)v.i : (double)v.i;
	} else {
		r.i = wrap(to, (uint64_t)v.i);
	}
	return r;
}

/* Integer ** by square-and-multiply, wrapping (int_pow). */
static int64_t
ipow(TfgDtype t, int64_t a, int64_t b)
{
	uint64_t r = 1, x = (uint64_t)a, e = b < 0 ? 0 : (uint64_t)b;

	if (b < 0)
		return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
	if (t == TFG_I32)
		e &= 0xffffffffu;
	for (; e; e >>= 1) {
		if (e & 1)
			r = (uint64_t)wrap(t, r * x);
		x = (uint64_t)wrap(t, x * x);
	}
	return wrap(t, r);
}

/* Whether op, giving t, is folded: stdlib/ops.def's fold column. */
static int
foldable(OpKind op, TfgDtype t)
{
	switch (op_info[op].fold) {
	case FOLD_ALL:
		return 1;
	case FOLD_INT:
		return !dtype_is_float(t) && t != TFG_BOOL;
	default:
		return 0;
	}
}

static Val
cmp(OpKind op, TfgDtype t, Val a, Val b)
{
	Val r;
	if (dtype_is_float(t)) {
		double x = a.f, y = b.f;
		r.i = op == OP_equal ? x == y : op == OP_not_equal ? x != y
		    : op == OP_less ? x < y : op == OP_less_equal ? x <= y
		    : op == OP_greater ? x > y : x >= y;
	} else {
		int64_t x = a.i, y = b.i;
		r.i = op == OP_equal ? x == y : op == OP_not_equal ? x != y
		    : op == OP_less ? x < y : op == OP_less_equal ? x <= y
		    : op == OP_greater ? x > y : x >= y;
	}
	return r;
}

/* One float operation, rounded to t. */
static double
farith(OpKind op, TfgDtype t, double a, double b)
{
	if (t == TFG_F32) {
		float x = (float)a, y = (float)b;
		switch (op) {
		case OP_add: return x + y;
		case OP_sub: return x - y;
		case OP_mul: return x * y;
		case OP_div: return x / y;
		case OP_neg: return -x;
		case OP_abs: return fabsf(x);
		default: return x <= 0 ? 0.0f : x; /* relu */
		}
	}
	switch (op) {
	case OP_add: return a + b;
	case OP_sub: return a - b;
	case OP_mul: return a * b;
	case OP_div: return a / b;
	case OP_neg: return -a;
	case OP_abs: return fabs(a);
	default: return a <= 0 ? 0.0 : a; /* relu */
	}
}

/* One element of elementwise op (codegen/cpu_fuse.c's cg_elem_apply). */
static Val
eval(OpKind op, TfgDtype t, const TfgDtype *it, Val *v)
{
	Val r = {0}, a, b;
	uint64_t x, y;

	if (op == OP_cast)
		return cvt(v[0], it[0], t);
	if (op == OP_where)
		return v[0].i ? cvt(v[1], it[1], t) : cvt(v[2], it[2], t);
	if (op >= OP_equal && op <= OP_greater_equal)
		return cmp(op, it[0], v[0], cvt(v[1], it[1], it[0]));
	a = cvt(v[0], it[0], t);
	b = op == OP_neg || op == OP_abs || op == OP_relu ? a
	    : cvt(v[1], it[1], t);
	if (dtype_is_float(t)) {
		r.f = farith(op, t, a.f, b.f);
		return r;
	}
	x = (uint64_t)a.i, y = (uint64_t)b.i;
	switch (op) {
	case OP_add: r.i = wrap(t, x + y); break;
	case OP_sub: r.i = wrap(t, x - y); break;
	case OP_mul: r.i = wrap(t, x * y); break;
	case OP_div:
		r.i = tfg_int_div(a.i, b.i, t == TFG_I32 ? 32 : 64);
		break;
	case OP_mod:
		r.i = tfg_int_mod(a.i, b.i, t == TFG_I32 ? 32 : 64);
		break;
	case OP_pow: r.i = ipow(t, a.i, b.i); break;
	case OP_maximum: r.i = a.i > b.i ? a.i : b.i; break;
	case OP_minimum: r.i = a.i < b.i ? a.i : b.i; break;
	case OP_neg: r.i = wrap(t, 0 - x); break;
	case OP_abs: r.i = a.i < 0 ? wrap(t, 0 - x) : a.i; break;
	default: r.i = a.i > 0 ? a.i : 0; break; /* relu */
	}
	return r;
}

/* Broadcast strides of s over the axes of to. */
static void
bcast(const TfgShape *s, const TfgShape *to, int64_t *st)
{
	int lead = to->rank - s->rank;
	int64_t m = 1;

	for (int k = to->rank - 1; k >= 0; k--) {
		int j = k - lead;
		st[k] = j < 0 || s->dims[j] == 1 ? 0 : m;
		if (j >= 0)
			m *= s->dims[j];
	}
}

static void
fold_elem(Program *p, IrNode *x, size_t size)
{
	int64_t n = tfg_shape_numel(&x->shape), idx[TFG_MAX_RANK] = {0};
	int64_t st[3][TFG_MAX_RANK], off[3] = {0};
	TfgDtype it[3];
	void *d = arena_alloc(p->arena, size + 1);
	int r = x->shape.rank;

	for (int k = 0; k < x->nin; k++) {
		it[k] = x->in[k]->dtype;
		bcast(&x->in[k]->shape, &x->shape, st[k]);
	}
	for (int64_t e = 0; e < n; e++) {
		Val v[3];
		for (int k = 0; k < x->nin; k++)
			v[k] = get(x->in[k], off[k]);
		put(d, x->dtype, e, eval(x->op, x->dtype, it, v));
		/* next row-major index, and the inputs' offsets with it */
		for (int a = r - 1; a >= 0; a--) {
			for (int k = 0; k < x->nin; k++)
				off[k] += st[k][a];
			if (++idx[a] < x->shape.dims[a])
				break;
			for (int k = 0; k < x->nin; k++)
				off[k] -= st[k][a] * idx[a];
			idx[a] = 0;
		}
	}
	x->data = d;
}

static void
fold_make(Program *p, IrNode *x, size_t size)
{
	int64_t n = tfg_shape_numel(&x->shape);
	void *d = arena_alloc(p->arena, size + 1);
	Val one = {0};

	if (x->op == OP_ones || x->op == OP_ones_like) {
		if (dtype_is_float(x->dtype))
			one.f = 1;
		else
			one.i = 1;
		for (int64_t e = 0; e < n; e++)
			put(d, x->dtype, e, one);
	}
	x->data = d;
}

/* Folding stops at device boundaries, as TF's does at its partitions:
 * a value computed on one task stays computed there (a constant placed
 * on another task is sent, not folded into its consumer). */
static int
same_device(Device a, Device b)
{
	return a.task == b.task && a.kind == b.kind && a.index == b.index &&
	       (a.job == b.job || (a.job && b.job && !strcmp(a.job, b.job)));
}

int
fold_program(Program *p)
{
	for (int i = 0; i < p->g.nodes.n; i++) {
		IrNode *x = p->g.nodes.v[i];
		size_t size = (size_t)tfg_shape_numel(&x->shape) *
			      tfg_dtype_size(x->dtype);
		int ok = size <= FOLD_MAX_BYTES;
		if (x->dtype == TFG_STRING ||
		    (x->nin > 0 && x->in[0]->dtype == TFG_STRING))
			continue; /* the checker computed them (ops_string.c) */
		if (op_info[x->op].flags & (OPF_STATEFUL | OPF_EFFECT |
					    OPF_RANDOM))
			continue; /* its value is another on every run */
		if (!ok || !foldable(x->op, x->dtype))
			continue;
		if (!(op_info[x->op].flags & OPF_ELEMWISE)) {
			if (x->nin != 0)
				continue;
			fold_make(p, x, size); /* zeros ones *_like */
		} else {
			if (x->nin < 1 || x->nin > 3)
				continue;
			for (int k = 0; k < x->nin; k++)
				ok &= x->in[k]->op == OP_const &&
				      same_device(x->in[k]->dev, x->dev);
			if (!ok)
				continue;
			fold_elem(p, x, size);
		}
		ir_set_const(p, x);
	}
	return p->diag ? p->diag->nerr : 0;
}
