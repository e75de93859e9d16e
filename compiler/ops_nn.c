/*
 * compiler/ops_nn.c: the checkers of TF's pools and convolutions,
 * spec §6.33 "max_pool, avg_pool" and
 * spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose": check_pool
 * and check_conv, named by the check column of stdlib/ops.def.  Both
 * read TF's forms of windows, strides and padding into an IrConv (the
 * padding SAME asks, with TF's split: the odd row at the bottom, the odd
 * column at the right) and make one node of the op (OP_max_pool ...,
 * OP_conv2d ...), whose gradients are ops of their own
 * (compiler/autodiff.c) and whose kernels are runtime/conv.c's and
 * codegen/cuda_conv.c's.
 */
#include <inttypes.h>
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
		diag_error(c->d, e->loc, "'%s' %s over height and width "
			   "only: the %s of the batch and channel axes must "
			   "be 1, got [%" PRId64 ", %" PRId64 ", %" PRId64
			   ", %" PRId64 "]", call->name, strstr(call->name,
			   "pool") ? "pools" : "slides", what, a[0], a[1],
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

/* Whether a and b are made of the same letters. */
static int
same_letters(const char *a, const char *b)
{
	int n[256] = {0};

	for (; *a; a++)
		n[(unsigned char)*a]++;
	for (; *b; b++)
		n[(unsigned char)*b]--;
	for (int i = 0; i < 256; i++)
		if (n[i])
			return 0;
	return 1;
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
	for (int i = 0; i < 2 && !w; i++) /* letters swapped: "SMAE" */
		if (same_letters(up, names[i]))
			w = names[i];
	diag_error(c->d, e->loc, "unknown padding \"%s\" of '%s' (\"SAME\" or "
		   "\"VALID\")%s%s%s", e->str, call->name,
		   w ? "; did you mean \"" : "", w ? w : "", w ? "\"?" : "");
	return -1;
}

/* TF's SAME padding of axis a into cv->pad: ceil(in / stride) outputs,
 * the padding they need split with the odd element after. */
static void
same_pad(IrConv *cv, int a, int64_t in, int64_t span)
{
	int64_t out = (in + cv->stride[a] - 1) / cv->stride[a];
	int64_t pad = (out - 1) * cv->stride[a] + span - in;

	pad = pad < 0 ? 0 : pad;
	cv->pad[2 * a] = pad / 2;
	cv->pad[2 * a + 1] = pad - pad / 2;
}

/* data_format= of call e, if given, is "NHWC"; 0, or -1 (reported:
 * NCHW is named as what tfg does not support). */
static int
check_nhwc(Checker *c, AstNode *e)
{
	AstNode *df = check_kwarg(e, "data_format");

	if (!df || (df->kind == AST_STRING && strcmp(df->str, "NHWC") == 0))
		return 0;
	diag_error(c->d, df->loc, df->kind == AST_STRING &&
		   strcmp(df->str, "NCHW") == 0
		   ? "'%s' supports only data_format=\"NHWC\" (channels "
		     "last), not \"NCHW\""
		   : "the data_format of '%s' must be \"NHWC\"", e->name);
	return -1;
}

/* max_pool(value, ksize, strides, padding, data_format="NHWC") and
 * avg_pool, spec §6.33 "max_pool, avg_pool". */
IrNode *
check_pool(Checker *c, AstNode *e, OpKind op)
{
	int max = op == OP_max_pool, same;
	int64_t k[2], s[2], in[2];
	IrConv *cv = arena_alloc(c->a, sizeof *cv);
	IrNode *x;

	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	if (check_nhwc(c, e) < 0)
		return NULL;
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
		cv->stride[a] = s[a];
		if (same)
			same_pad(cv, a, in[a], k[a]);
	}
	cv->ksize[0] = k[0], cv->ksize[1] = k[1];
	cv->dil[0] = cv->dil[1] = 1;
	return check_built(c, ir_pool(c->p, e->loc, op, x, NULL, cv, NULL));
}

/* ------------------------------------------------------ convolutions */

/* The sizes argument e of call (conv2d_transpose's output_shape, the
 * backprop functions' input_sizes and filter_sizes): 4 integer literals,
 * the first -1 for "the batch of the other operand", or a graph value
 * that is a constant (shape(x) of a known x); into *s.  0, or -1
 * (reported). */
static int
sizes_arg(Checker *c, AstNode *call, AstNode *e, const char *what,
	  TfgShape *s)
{
	s->rank = 4;
	if (e->kind == AST_TENSOR && e->n == 4) {
		for (int i = 0; i < 4; i++) {
			Lit l = check_lit_of(e->list[i]);

			if (l.kind != 1 || l.i < (i ? 0 : -1))
				goto bad;
			s->dims[i] = l.i < 0 ? IR_DIM_UNKNOWN : l.i;
		}
		return 0;
	}
	if (e->kind != AST_TENSOR) {
		IrNode *v = check_expr(c, e);

		if (!v)
			return -1;
		if (v->op == OP_const && v->data && v->shape.rank == 1 &&
		    v->shape.dims[0] == 4 &&
		    (v->dtype == TFG_I32 || v->dtype == TFG_I64)) {
			for (int i = 0; i < 4; i++)
				s->dims[i] = v->dtype == TFG_I32
				    ? ((const int32_t *)v->data)[i]
				    : ((const int64_t *)v->data)[i];
			for (int i = 0; i < 4; i++)
				if (s->dims[i] < 0)
					goto bad;
			return 0;
		}
	}
bad:
	diag_error(c->d, e->loc, "the %s of '%s' is 4 sizes [batch, height, "
		   "width, channels]: integer literals (the batch may be -1, "
		   "the other operand's) or a constant such as shape(x)",
		   what, call->name);
	return -1;
}

/* The padding e of convolution call into cv->pad, for an input of
 * spatial size in[2] and filter spans span[2] ((k - 1) * dilation + 1):
 * "SAME" (TF's split), "VALID", or TF's explicit
 * [[0, 0], [top, bottom], [left, right], [0, 0]].  0, or -1 (reported). */
static int
conv_padding(Checker *c, AstNode *call, AstNode *e, const int64_t *in,
	     const int64_t *span, IrConv *cv)
{
	int same;

	if (e->kind == AST_TENSOR) {
		int64_t v[4][2];

		if (e->n != 4)
			goto bad;
		for (int i = 0; i < 4; i++) {
			AstNode *p = e->list[i];

			if (p->kind != AST_TENSOR || p->n != 2)
				goto bad;
			for (int j = 0; j < 2; j++) {
				Lit l = check_lit_of(p->list[j]);

				if (l.kind != 1 || l.i < 0)
					goto bad;
				v[i][j] = l.i;
			}
		}
		if (v[0][0] || v[0][1] || v[3][0] || v[3][1]) {
			diag_error(c->d, e->loc, "'%s' pads height and width "
				   "only: the paddings of the batch and channel "
				   "axes must be [0, 0]", call->name);
			return -1;
		}
		cv->pad[0] = v[1][0];
		cv->pad[1] = v[1][1];
		cv->pad[2] = v[2][0];
		cv->pad[3] = v[2][1];
		return 0;
	}
	if (check_padding(c, call, e, &same) < 0)
		return -1;
	for (int a = 0; a < 2 && same; a++)
		same_pad(cv, a, in[a], span[a]);
	return 0;
bad:
	diag_error(c->d, e->loc, "the padding of '%s' is \"SAME\", \"VALID\" "
		   "or [[0, 0], [top, bottom], [left, right], [0, 0]] of "
		   "integer literals", call->name);
	return -1;
}

/* A float tensor of rank 4 (what: its role, as the message says it). */
static int
conv_operand(Checker *c, AstNode *call, AstNode *e, const IrNode *x,
	     const char *what)
{
	if (x->shape.rank == 4 && dtype_is_float(x->dtype))
		return 0;
	diag_error(c->d, e->loc, "'%s' takes %s: a float tensor of rank 4, "
		   "got %s", call->name, what,
		   ir_type_str(c->a, x->dtype, &x->shape));
	return -1;
}

/* conv2d, depthwise_conv2d, conv2d_transpose, conv2d_backprop_input
 * and conv2d_backprop_filter,
 * spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose": the geometry of the forward convolution, of input
 * shape io by filter shape fs, and the node of op made of it. */
IrNode *
check_conv(Checker *c, AstNode *e, OpKind op)
{
	static const char *const fdims[2] = {
		"[height, width, in_channels, out_channels]",
		"[height, width, in_channels, channel_multiplier]"};
	int tr = strcmp(e->name, "conv2d_transpose") == 0;
	IrConv *cv = arena_alloc(c->a, sizeof *cv);
	AstNode *xe, *fe, *ge = NULL, *se, *pe, *de;
	IrNode *x = NULL, *f = NULL, *dy = NULL, *n;
	TfgShape io, fs, ys;
	int64_t in[2], span[2];
	const char *io_s, *fs_s;

	cv->depthwise = strcmp(e->name, "depthwise_conv2d") == 0;
	if (check_bind(c, e) < 0 || check_nhwc(c, e) < 0)
		return NULL;
	/* the operands in their roles: the forward convolution's input
	   (x, or its shape io), filter (f, or fs) and output gradient */
	if (op == OP_conv2d) {
		xe = e->list[0], fe = e->list[1], se = e->list[2];
		pe = e->list[3];
	} else if (tr) {
		ge = e->list[0], fe = e->list[1], xe = e->list[2];
		se = e->list[3], pe = check_kwarg(e, "padding");
	} else if (op == OP_conv2d_backprop_input) {
		xe = e->list[0], fe = e->list[1], ge = e->list[2];
		se = e->list[3], pe = e->list[4];
	} else {
		xe = e->list[0], fe = e->list[1], ge = e->list[2];
		se = e->list[3], pe = e->list[4];
	}
	de = check_kwarg(e, "dilations");
	if (op == OP_conv2d_backprop_input) {
		if (sizes_arg(c, e, xe, tr ? "output_shape" : "input_sizes",
			      &io) < 0)
			return NULL;
	} else if (!(x = check_expr(c, xe)) ||
		   conv_operand(c, e, xe, x, "an input [batch, height, "
				"width, channels] (NHWC)") < 0) {
		return NULL;
	} else {
		io = x->shape;
	}
	if (op == OP_conv2d_backprop_filter) {
		if (sizes_arg(c, e, fe, "filter_sizes", &fs) < 0)
			return NULL;
	} else if (!(f = check_expr(c, fe)) ||
		   conv_operand(c, e, fe, f, cv->depthwise
				? "a filter [height, width, in_channels, "
				  "channel_multiplier]"
				: "a filter [height, width, in_channels, "
				  "out_channels]") < 0) {
		return NULL;
	} else {
		fs = f->shape;
	}
	if (ge && (!(dy = check_expr(c, ge)) ||
		   conv_operand(c, e, ge, dy, tr ? "an input [batch, height, "
				"width, channels] (NHWC)"
				: "out_backprop [batch, height, width, "
				  "channels]") < 0))
		return NULL;
	if ((x && f && x->dtype != f->dtype) ||
	    (dy && (x || f) && dy->dtype != (x ? x : f)->dtype)) {
		IrNode *p = x ? x : f, *q = x && f ? f : dy;

		diag_error(c->d, e->loc, "the operands of '%s' must have one "
			   "dtype, got %s and %s", e->name,
			   ir_type_str(c->a, p->dtype, &p->shape),
			   ir_type_str(c->a, q->dtype, &q->shape));
		return NULL;
	}
	if (io.dims[0] == IR_DIM_UNKNOWN && dy)
		io.dims[0] = dy->shape.dims[0];
	io_s = x ? ir_type_str(c->a, x->dtype, &io)
		 : strchr(ir_type_str(c->a, TFG_F32, &io), '[');
	fs_s = strchr(ir_type_str(c->a, TFG_F32, &fs), '[');
	for (int i = 0; i < 4; i++)
		if (fs.dims[i] == IR_DIM_UNKNOWN ||
		    (i && io.dims[i] == IR_DIM_UNKNOWN)) {
			diag_error(c->d, e->loc, "'%s' needs the %s's height, "
				   "width and channels and every dim of the "
				   "filter, got %s and %s", e->name,
				   op == OP_conv2d_backprop_input ? "output"
				   : "input", io_s, fs_s);
			return NULL;
		}
	if (fs.dims[2] != io.dims[3]) {
		diag_error(c->d, fe->loc, "the filter %s of '%s' is %s: for %"
			   PRId64 " input channels (its dim 2), but the %s %s "
			   "has %" PRId64, fs_s, e->name,
			   fdims[cv->depthwise], fs.dims[2],
			   tr ? "output_shape" : "input", io_s, io.dims[3]);
		return NULL;
	}
	if (window_arg(c, e, se, "strides", cv->stride) < 0)
		return NULL;
	cv->dil[0] = cv->dil[1] = 1;
	if (de && window_arg(c, e, de, "dilations", cv->dil) < 0)
		return NULL;
	for (int a = 0; a < 2; a++) {
		in[a] = io.dims[1 + a];
		span[a] = (fs.dims[a] - 1) * cv->dil[a] + 1;
	}
	if (pe) {
		if (conv_padding(c, e, pe, in, span, cv) < 0)
			return NULL;
	} else { /* conv2d_transpose's default, "SAME" */
		for (int a = 0; a < 2; a++)
			same_pad(cv, a, in[a], span[a]);
	}
	for (int a = 0; a < 2; a++)
		if (in[a] + cv->pad[2 * a] + cv->pad[2 * a + 1] < span[a]) {
			diag_error(c->d, fe->loc, "the filter %s of '%s' spans %"
				   PRId64 " %s (dilation %" PRId64 "), more "
				   "than the %s %s has with its padding (%"
				   PRId64 ")", fs_s, e->name, span[a],
				   a ? "columns" : "rows", cv->dil[a],
				   tr ? "output_shape" : "input", io_s,
				   in[a] + cv->pad[2 * a] +
				   cv->pad[2 * a + 1]);
			return NULL;
		}
	if (ir_conv_shape(&io, &fs, cv, &ys) < 0) {
		diag_error(c->d, e->loc, "the operands of '%s' do not fit: %s "
			   "and filter %s", e->name, io_s, fs_s);
		return NULL;
	}
	if (dy) {
		const TfgShape *g = &dy->shape;

		for (int i = 0; i < 4; i++)
			if (g->dims[i] != ys.dims[i] &&
			    g->dims[i] != IR_DIM_UNKNOWN &&
			    ys.dims[i] != IR_DIM_UNKNOWN) {
				diag_error(c->d, ge->loc, "the %s of '%s' is %s,"
					   " but the convolution it goes back "
					   "through, of %s %s by the filter %s,"
					   " gives %s", tr ? "input"
					   : "out_backprop", e->name,
					   ir_type_str(c->a, dy->dtype, g),
					   tr ? "output_shape" : "input",
					   io_s, fs_s,
					   strchr(ir_type_str(c->a, TFG_F32,
							      &ys), '['));
				return NULL;
			}
	}
	if (op == OP_conv2d)
		n = ir_conv(c->p, e->loc, op, x, f, cv, NULL);
	else if (op == OP_conv2d_backprop_input)
		n = ir_conv(c->p, e->loc, op, dy, f, cv, &io);
	else
		n = ir_conv(c->p, e->loc, op, x, dy, cv, &fs);
	return check_built(c, n);
}
