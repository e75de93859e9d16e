/*
 * compiler/ops_nn.c: the checker of TF's pooling functions,
 * spec §6.33 "max_pool, avg_pool": check_pool, named by the check column
 * of stdlib/ops.def.
 *
 * A pool of an NHWC value over ksize windows moved by strides is made of
 * slices: the input padded as SAME asks (by the lowest value for a max,
 * by zeros for an average), then for each of the kh x kw positions in
 * the window the elements at that position of every window, a slice of
 * strides x outputs rows and columns reshaped so that the stride is an
 * axis of its own, of which position 0 is kept.  A max pool is the
 * maximum of those kh x kw values, in window order, so its gradient
 * (through maximum, which gives a tie to its first operand) goes to the
 * first maximum of each window, as TF's; an average pool their sum over
 * the number of elements of the window inside the input, a constant, as
 * TF's SAME rule has it.  Every op is one the backends have, so the GPU
 * and the gradients come with them; a kernel of its own (fused into a
 * convolution's epilogue) is issue 27's later work.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* A list of 1, 2 or 4 integer literals (TF's forms: one for both
 * spatial axes, [h, w], or [1, h, w, 1]) into v[2]; -1 (reported). */
static int
window_arg(Checker *c, AstNode *call, AstNode *e, const char *what,
	   int64_t *v)
{
	int64_t a[4];
	Lit l;
	int n = 0;

	if (e->kind != AST_TENSOR) {
		l = check_lit_of(e);
		if (l.kind != 1)
			goto bad;
		a[n++] = l.i;
	} else {
		if (e->n != 1 && e->n != 2 && e->n != 4)
			goto bad;
		for (int i = 0; i < e->n; i++) {
			l = check_lit_of(e->list[i]);
			if (l.kind != 1)
				goto bad;
			a[n++] = l.i;
		}
	}
	if (n == 4 && (a[0] != 1 || a[3] != 1)) {
		diag_error(c->d, e->loc, "'%s' pools over height and width "
			   "only: the %s of the batch and channel axes must "
			   "be 1, got [%" PRId64 ", %" PRId64 ", %" PRId64
			   ", %" PRId64 "]", call->name, what, a[0], a[1],
			   a[2], a[3]);
		return -1;
	}
	v[0] = n == 4 ? a[1] : a[0];
	v[1] = n == 4 ? a[2] : n == 2 ? a[1] : a[0];
	if (v[0] < 1 || v[1] < 1) {
		diag_error(c->d, e->loc, "the %s of '%s' must be 1 or more",
			   what, call->name);
		return -1;
	}
	return 0;
bad:
	diag_error(c->d, e->loc, "the %s of '%s' is 1, 2 or 4 integer "
		   "literals: [h, w] or [1, h, w, 1]", what, call->name);
	return -1;
}

/* The padding string of call into *same (1: "SAME", 0: "VALID"); -1
 * (reported, with the nearest for a misspelling). */
static int
check_padding(Checker *c, AstNode *call, AstNode *e, int *same)
{
	static const char *const names[] = {"SAME", "VALID"};
	const char *w;
	char up[16] = "";

	if (e->kind != AST_STRING) {
		diag_error(c->d, e->loc, "the padding of '%s' is \"SAME\" or "
			   "\"VALID\"", call->name);
		return -1;
	}
	if (strcmp(e->str, "SAME") == 0 || strcmp(e->str, "VALID") == 0) {
		*same = e->str[0] == 'S';
		return 0;
	}
	for (size_t i = 0; e->str[i] && i + 1 < sizeof up; i++)
		up[i] = e->str[i] >= 'a' && e->str[i] <= 'z'
		    ? (char)(e->str[i] - 'a' + 'A') : e->str[i];
	w = strcmp(up, "SAME") == 0 || strcmp(up, "VALID") == 0 ? up
	    : check_nearest(up, names, 2);
	diag_error(c->d, e->loc, "unknown padding \"%s\" of '%s' (\"SAME\" or "
		   "\"VALID\")%s%s%s", e->str, call->name,
		   w ? "; did you mean \"" : "", w ? w : "", w ? "\"?" : "");
	return -1;
}

/* x with n rows of fill value v added on axis k, before (at 0) or after:
 * a concat with a fill of that shape. */
static IrNode *
extend(Checker *c, SrcLoc loc, IrNode *x, int k, int64_t n, int after,
       IrNode *v)
{
	IrMake *m;
	IrNode *part[2], *f;
	TfgShape fs = x->shape;

	if (n <= 0)
		return x;
	m = arena_alloc(c->a, sizeof *m);
	fs.dims[k] = n;
	if (!(f = check_built(c, ir_make(c->p, loc, OP_fill, x->dtype, &fs, m,
					 &v, 1))))
		return NULL;
	part[after ? 0 : 1] = x;
	part[after ? 1 : 0] = f;
	return check_built(c, ir_concat(c->p, loc, part, 2, k));
}

/* The scalar of x's dtype that pads a max (the lowest value: -inf for
 * floats) or an average (0). */
static IrNode *
pad_value(Checker *c, SrcLoc loc, TfgDtype t, int max)
{
	Lit l = {dtype_is_float(t) ? 2 : 1, 0, max ? -INFINITY : 0.0};

	if (max && t == TFG_I32)
		l.i = INT32_MIN;
	else if (max && t == TFG_I64)
		l.i = INT64_MIN;
	return check_scalar(c, loc, l, t);
}

/* max_pool(value, ksize, strides, padding, data_format="NHWC") and
 * avg_pool, spec §6.33 "max_pool, avg_pool". */
IrNode *
check_pool(Checker *c, AstNode *e, OpKind op)
{
	int max = strcmp(e->name, "max_pool") == 0, same;
	AstNode *df = check_kwarg(e, "data_format");
	int64_t k[2], s[2], in[2], out[2], lo[2], hi[2];
	IrNode *x, *pv, *acc = NULL;

	(void)op;
	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	if (df && (df->kind != AST_STRING || strcmp(df->str, "NHWC"))) {
		diag_error(c->d, df->loc, df->kind == AST_STRING &&
			   strcmp(df->str, "NCHW") == 0
			   ? "'%s' supports only data_format=\"NHWC\" "
			     "(channels last), not \"NCHW\""
			   : "the data_format of '%s' must be \"NHWC\"",
			   e->name);
		return NULL;
	}
	if (x->shape.rank != 4 || (max ? x->dtype == TFG_BOOL ||
				   x->dtype == TFG_STRING ||
				   x->dtype == TFG_U8
				       : !dtype_is_float(x->dtype))) {
		diag_error(c->d, e->list[0]->loc, "'%s' takes %s [batch, "
			   "height, width, channels] (NHWC), got %s", e->name,
			   max ? "an i32, i64, f32 or f64 tensor" : "a float "
			   "tensor", ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (window_arg(c, e, e->list[1], "ksize", k) < 0 ||
	    window_arg(c, e, e->list[2], "strides", s) < 0 ||
	    check_padding(c, e, e->list[3], &same) < 0)
		return NULL;
	for (int a = 0; a < 2; a++) {
		int64_t pad;

		in[a] = x->shape.dims[1 + a];
		if (in[a] == IR_DIM_UNKNOWN) {
			diag_error(c->d, e->list[0]->loc, "'%s' needs the "
				   "height and width of %s", e->name,
				   ir_type_str(c->a, x->dtype, &x->shape));
			return NULL;
		}
		if (!same && k[a] > in[a]) {
			diag_error(c->d, e->list[1]->loc, "the %s window of "
				   "'%s' (%" PRId64 ") is larger than the "
				   "input's %" PRId64 " with padding \"VALID\"",
				   a ? "width" : "height", e->name, k[a],
				   in[a]);
			return NULL;
		}
		out[a] = same ? (in[a] + s[a] - 1) / s[a]
			      : (in[a] - k[a]) / s[a] + 1;
		pad = same ? (out[a] - 1) * s[a] + k[a] - in[a] : 0;
		if (pad < 0)
			pad = 0;
		lo[a] = pad / 2;
		hi[a] = pad - lo[a];
	}
	/* padded, and s - 1 rows more, so that every slice below of s x out
	   rows fits; those are never read */
	if (!(pv = pad_value(c, e->loc, x->dtype, max)))
		return NULL;
	for (int a = 0; a < 2; a++)
		if (!(x = extend(c, e->loc, x, 1 + a, lo[a], 0, pv)) ||
		    !(x = extend(c, e->loc, x, 1 + a, hi[a] + s[a] - 1, 1,
				 pv)))
			return NULL;
	for (int64_t i = 0; i < k[0]; i++)
		for (int64_t j = 0; j < k[1]; j++) {
			int64_t b[4] = {0, i, j, 0};
			int64_t z[4] = {x->shape.dims[0], s[0] * out[0],
					s[1] * out[1], x->shape.dims[3]};
			int64_t b2[6] = {0}, z2[6];
			TfgShape rs = {6, {x->shape.dims[0], out[0], s[0],
					   out[1], s[1], x->shape.dims[3]}};
			IrNode *v, *two[2];

			memcpy(z2, rs.dims, sizeof z2);
			z2[2] = z2[4] = 1;
			if (!(v = check_built(c, ir_slice(c->p, e->loc, x, b, z,
							  0))) ||
			    !(v = check_built(c, ir_reshape(c->p, e->loc, v,
							    &rs))) ||
			    !(v = check_built(c, ir_slice(c->p, e->loc, v, b2,
							  z2, 1u << 2 |
							  1u << 4))))
				return NULL;
			if (!acc) {
				acc = v;
				continue;
			}
			two[0] = acc;
			two[1] = v;
			if (!(acc = check_built(c, ir_binary(c->p, e->loc,
							     max ? OP_maximum
								 : OP_add,
							     two[0], two[1]))))
				return NULL;
		}
	if (max)
		return acc;
	/* the average over the window's elements inside the input */
	{
		TfgShape cs = {4, {1, out[0], out[1], 1}};
		void *d = arena_alloc(c->a, (size_t)(out[0] * out[1]) * 8);
		IrNode *cnt;

		for (int64_t oy = 0; oy < out[0]; oy++)
			for (int64_t ox = 0; ox < out[1]; ox++) {
				int64_t y0 = oy * s[0] - lo[0];
				int64_t x0 = ox * s[1] - lo[1];
				int64_t ny = (y0 + k[0] < in[0] ? y0 + k[0]
							      : in[0]) -
					     (y0 > 0 ? y0 : 0);
				int64_t nx = (x0 + k[1] < in[1] ? x0 + k[1]
							      : in[1]) -
					     (x0 > 0 ? x0 : 0);
				double v = (double)(ny * nx);

				if (acc->dtype == TFG_F32)
					((float *)d)[oy * out[1] + ox] =
					    (float)v;
				else
					((double *)d)[oy * out[1] + ox] = v;
			}
		if (!(cnt = check_built(c, ir_const(c->p, e->loc, acc->dtype,
						    &cs, d, 0))))
			return NULL;
		return check_built(c, ir_binary(c->p, e->loc, OP_div, acc,
						cnt));
	}
}
