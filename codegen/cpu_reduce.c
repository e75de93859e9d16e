/*
 * codegen/cpu_reduce.c: the emitters of the reductions
 * (spec §6.5 "Reductions"): reduce_sum reduce_mean reduce_prod reduce_max
 * reduce_min, argmax argmin, and softmax log_softmax.
 *
 * A reduction's node carries its reduced axes as a bit mask over the
 * input's axes (IrNode.axes); keepdims does not change the row-major
 * layout, so the kernels ignore it.  Two loop orders (both Nests, see
 * codegen/cg_int.h):
 *
 *   accumulate  kept axes outside, reduced axes inside, the accumulator
 *               in a phi: one store per output.  Used when the input's
 *               innermost axis is reduced (the inner loop then walks
 *               contiguous memory), for integer means (accumulated in
 *               i64 whatever the output dtype) and for argmax/argmin.
 *   rows        every axis in the input's order, accumulating into the
 *               output in place: out[o] = out[o] op in[i], after a pass
 *               that fills the output with the identity.  Used when the
 *               innermost axis is kept (axis 0 of [N, M]): the inner loop
 *               then walks both in and out contiguously and vectorises,
 *               where the other order would stride through the input.
 *
 * Float sums and products are marked reassoc so the vectoriser may split
 * them into lanes (the order of a float sum is unspecified,
 * spec §6.5 "Reductions").  max and min of floats use llvm.maximum/minimum:
 * NaN propagates and -0.0 < 0.0.  Empty max/min/argmax axes never reach here
 * (the checker refuses them), so the identities (-inf, MIN, ...) never show.
 *
 * argmax/argmin carry {best value, its index} as one struct phi; the
 * index comes from a third Nest operand with stride 1 along the reduced
 * axis and 0 elsewhere, so its "offset" is the position on that axis.
 *
 * A fused reduction (IrNode.fuse, compiler/pass_fuse.c) has no input
 * tensor: its input element is its program's value, computed from the
 * node's inputs (operands 1.., broadcast over the program's shape) where
 * the other reductions load one element.
 *
 * Reductions of every axis of large inputs run in chunks whose partial
 * results are then combined in order (emit_full_split), so the outer
 * loop over chunks may be split over threads.
 *
 * softmax is one loop over the rows of the last axis with three passes
 * per row: max, then sum of exp(x - max) (softmax stores the exps), then
 * the normalisation; the row loop is a nest (Nest.row = K) so it is
 * outlined and, when large, split over threads like any other.  f32
 * rows of a multiple of 16 are explicit vectors (body_softmax_vec), with
 * non-temporal stores for large outputs.
 *
 * softmax_cross_entropy is the same row loop with one output per row:
 * m = max(x), s = sum exp(x - m), then sum l (log s - (x - m)), each
 * term of which is >= 0 when l is (no cancellation).  The labels are
 * read once and the logits' row three times, from L1 after the first.
 */
#include <math.h>
#include <string.h>

#include "codegen/cg_int.h"

/* ---------------------------------------------------------- the steps */

static int
is_mean(const IrNode *n)
{
	return n->op == OP_reduce_mean;
}

/* The value a reduction starts from, of dtype t.  A float sum starts
 * from +0.0 as NumPy's and TF's do, so the sum of [-0.0] is 0.0. */
static LLVMValueRef
red_identity(CgCtx *C, OpKind op, TfgDtype t)
{
	LLVMTypeRef ty = cg_elty(C, t);
	int bits = t == TFG_I32 ? 32 : 64;
	/* u8: its MIN is 0 and its MAX 255 (min - 1 below) */
	unsigned long long min = t == TFG_U8 ? 0x100 : 1ull << (bits - 1);
	switch (op) {
	case OP_reduce_prod:
		return cg_is_float(t) ? LLVMConstReal(ty, 1.0)
				      : LLVMConstInt(ty, 1, 0);
	case OP_reduce_max:
	case OP_argmax:
		return cg_is_float(t) ? LLVMConstReal(ty, -INFINITY)
				      : LLVMConstInt(ty, min, 0);
	case OP_reduce_min:
	case OP_argmin:
		return cg_is_float(t) ? LLVMConstReal(ty, INFINITY)
				      : LLVMConstInt(ty, min - 1, 0);
	default: /* sum, mean */
		return LLVMConstNull(ty);
	}
}

/* acc op v, both of dtype t. */
static LLVMValueRef
red_step(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef acc, LLVMValueRef v)
{
	LLVMValueRef r, ab[2] = {acc, v};
	int prod = op == OP_reduce_prod;
	if (op == OP_reduce_max || op == OP_reduce_min) {
		if (cg_is_float(t))
			return cg_intrinsic(C, op == OP_reduce_max
					    ? "llvm.maximum" : "llvm.minimum",
					    ab, 2);
		if (cg_is_unsigned(t))
			return cg_intrinsic(C, op == OP_reduce_max
					    ? "llvm.umax" : "llvm.umin", ab, 2);
		return cg_intrinsic(C, op == OP_reduce_max ? "llvm.smax"
					  : "llvm.smin", ab, 2);
	}
	if (!cg_is_float(t))
		return prod ? LLVMBuildMul(C->b, acc, v, "")
			    : LLVMBuildAdd(C->b, acc, v, "");
	/* reassoc: lets the loop vectoriser split the sum into lanes */
	r = prod ? LLVMBuildFMul(C->b, acc, v, "")
		 : LLVMBuildFAdd(C->b, acc, v, "");
	LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
	return r;
}

/* A mean's final division of acc (dtype t) by count: IEEE for floats
 * (0 / 0 is NaN), floor division for integers (x / 0 is 0,
 * spec §6.3 "Division and remainder"). */
static LLVMValueRef
red_divide(CgCtx *C, TfgDtype t, LLVMValueRef acc, int64_t count)
{
	LLVMTypeRef ty = cg_elty(C, t);
	if (cg_is_float(t))
		return LLVMBuildFDiv(C->b, acc, LLVMConstReal(ty,
							      (double)count),
				     "");
	return cg_int_divmod(C, acc, LLVMConstInt(ty, (unsigned long long)
						  count, 0), 0);
}

/* The reduced tensor's shape and dtype: the input's, or the program's. */
static const TfgShape *
red_shape(const IrNode *n)
{
	return n->fuse ? &n->fuse->shape : &n->in[0]->shape;
}

static TfgDtype
red_in_dt(const IrNode *n)
{
	return n->fuse ? n->fuse->ops[n->fuse->n - 1].dtype : n->in[0]->dtype;
}

/* The input element at off: loaded, or the program's value. */
static LLVMValueRef
red_load(CgCtx *C, const Nest *L, LLVMValueRef *off)
{
	if (L->n->fuse)
		return cg_fuse_eval(C, L->n, L, 1, off, NULL);
	return cg_load_at(C, L->n->in[0]->dtype, L->base[1], off[1]);
}

/* Operands 1.. of L: the input, or the program's inputs, with per-axis
 * strides over the reduced tensor's axes into st[operand][axis]. */
static int
red_operands(CgCtx *C, Nest *L, const IrNode *n,
	     int64_t st[][TFG_MAX_RANK])
{
	if (!n->fuse) {
		L->base[1] = cg_buf(C, n->in[0]);
		cg_row_major(&n->in[0]->shape, st[1]);
		return 2;
	}
	if (n->nin + 2 > CG_MAX_OPS)
		return cg_fail(C, n, "fused reduction with too many inputs");
	for (int k = 0; k < n->nin; k++) {
		L->base[k + 1] = cg_buf(C, n->in[k]);
		cg_bcast_strides(&n->in[k]->shape, &n->fuse->shape, st[k + 1]);
	}
	return n->nin + 1;
}

/* The accumulator's dtype: the output's, but i64 for integer means. */
static TfgDtype
red_acc_dt(const IrNode *n)
{
	return !cg_is_float(n->dtype) && is_mean(n) ? TFG_I64 : n->dtype;
}

/* The reduced axes of n as a bit mask over its input's axes.  axes == 0
 * with an output shape that differs from the input's means all axes. */
static uint32_t
red_mask(const IrNode *n)
{
	const TfgShape *in = red_shape(n);
	uint32_t all = (1u << in->rank) - 1, m = n->axes & all;
	if (m == 0 && (n->shape.rank != in->rank ||
		       tfg_shape_numel(&n->shape) != tfg_shape_numel(in)))
		m = all;
	return m;
}

/* Output strides over the input's axes (0 on reduced ones) into ost;
 * returns the number of elements reduced into each output, or -1 when
 * n's shape does not match (reported). */
static int64_t
red_layout(CgCtx *C, const IrNode *n, uint32_t mask, int64_t *ost)
{
	const TfgShape *in = red_shape(n);
	int64_t m = 1, count = 1;
	for (int k = in->rank - 1; k >= 0; k--) {
		int red = (mask >> k) & 1;
		ost[k] = red ? 0 : m;
		m *= red ? 1 : in->dims[k];
		count *= red ? in->dims[k] : 1;
	}
	if (m != tfg_shape_numel(&n->shape)) {
		cg_fail(C, n, "reduction output shape does not match its axes");
		return -1;
	}
	return count;
}

/* ------------------------------------------- order 1: accumulate (phi) */

static LLVMValueRef
red_init(CgCtx *C, const Nest *L, LLVMValueRef *off)
{
	(void)off;
	return red_identity(C, L->n->op, L->acc_dt);
}

static LLVMValueRef
red_body(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	TfgDtype it = red_in_dt(L->n);
	LLVMValueRef v = cg_cvt(C, red_load(C, L, off), it, L->acc_dt);
	return red_step(C, L->n->op, L->acc_dt, acc, v);
}

static void
red_fini(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	if (is_mean(n))
		acc = red_divide(C, L->acc_dt, acc, L->count);
	cg_store_at(C, n->dtype, L->base[0], off[0],
		    cg_cvt(C, acc, L->acc_dt, n->dtype));
}

/* {value, index} of argmax/argmin. */
static LLVMValueRef
arg_init(CgCtx *C, const Nest *L, LLVMValueRef *off)
{
	TfgDtype t = L->n->in[0]->dtype;
	LLVMValueRef f[2] = {red_identity(C, L->n->op, t), cg_i64c(C, 0)};
	(void)off;
	return LLVMConstStructInContext(C->c, f, 2, 0);
}

/* Takes v when it beats the best so far: strictly (ties keep the first),
 * and a NaN beats everything but an earlier NaN (NumPy: the first NaN's
 * index).  For floats: v >u best (true when either is NaN), and best is
 * not NaN. */
static LLVMValueRef
arg_body(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMBuilderRef B = C->b;
	TfgDtype t = L->n->in[0]->dtype;
	int max = L->n->op == OP_argmax;
	LLVMValueRef v = cg_load_at(C, t, L->base[1], off[1]);
	LLVMValueRef best = LLVMBuildExtractValue(B, acc, 0, "");
	LLVMValueRef idx = LLVMBuildExtractValue(B, acc, 1, "");
	LLVMValueRef take;
	if (cg_is_float(t))
		take = LLVMBuildAnd(B,
			LLVMBuildFCmp(B, max ? LLVMRealUGT : LLVMRealULT, v,
				      best, ""),
			LLVMBuildFCmp(B, LLVMRealORD, best, best, ""), "");
	else
		take = LLVMBuildICmp(B, cg_is_unsigned(t)
				     ? (max ? LLVMIntUGT : LLVMIntULT)
				     : (max ? LLVMIntSGT : LLVMIntSLT), v, best,
				     "");
	best = LLVMBuildSelect(B, take, v, best, "");
	idx = LLVMBuildSelect(B, take, off[2], idx, "");
	acc = LLVMBuildInsertValue(B, acc, best, 0, "");
	return LLVMBuildInsertValue(B, acc, idx, 1, "");
}

static void
arg_fini(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	cg_store_at(C, TFG_I64, L->base[0], off[0],
		    LLVMBuildExtractValue(C->b, acc, 1, ""));
}

/* Kept axes outside, reduced axes inside (group 1, accumulating). */
static int
emit_accumulate(CgCtx *C, IrNode *n, uint32_t mask, int64_t *ost,
		int64_t count)
{
	const TfgShape *in = red_shape(n);
	int arg = n->op == OP_argmax || n->op == OP_argmin;
	int64_t st[CG_MAX_OPS][TFG_MAX_RANK];
	Nest L = {0};
	int nop = red_operands(C, &L, n, st);
	if (nop < 0)
		return -1;
	for (int g = 0; g < 2; g++)
		for (int k = 0; k < in->rank; k++) {
			int red = (mask >> k) & 1;
			if (red != g || (g == 1 && count == 0))
				continue; /* nothing to reduce: init, fini */
			L.dim[L.rank] = in->dims[k];
			L.grp[L.rank] = g;
			L.stride[0][L.rank] = ost[k];
			for (int o = 1; o < nop; o++)
				L.stride[o][L.rank] = st[o][k];
			L.stride[nop][L.rank] = red; /* argmax: the position */
			L.rank++;
		}
	L.nop = arg ? nop + 1 : nop;
	L.n = n;
	L.count = count;
	L.acc_dt = red_acc_dt(n);
	L.init = arg ? arg_init : red_init;
	L.body = !count ? NULL : arg ? arg_body : red_body;
	L.fini = arg ? arg_fini : red_fini;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = cg_buf(C, n);
	L.base[nop] = L.base[1];
	cg_nest_emit(C, &L);
	return 0;
}

/* ----------------------------------- order 1, split: full reductions */

/* A reduction of every axis of at least 2 RED_CHUNK elements whose
 * operands all walk the flattened input (contiguous, or a scalar) runs
 * in chunks: partial results of RED_CHUNK consecutive elements each
 * (more when that would give over RED_MAXPART chunks), reduced by a nest
 * of [chunks, chunk length] whose outer loop cg_nest_emit splits over
 * threads like any other, the remainder into one more partial, then the
 * partials combined in order on one thread.  The chunks depend on the
 * element count alone, so the result is the same for any number of
 * threads (and run to run); float sums and products add in another order
 * than one loop's (spec §6.5 "Reductions" leaves it unspecified). */
#define RED_CHUNK ((int64_t)1 << 15)
#define RED_MAXPART 4096

/* Stores a chunk's accumulator, in the accumulator's dtype. */
static void
red_fini_part(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	cg_store_at(C, L->acc_dt, L->base[0], off[0], acc);
}

/* Folds partial off[1] into the accumulator. */
static LLVMValueRef
red_body_part(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMValueRef v = cg_load_at(C, L->acc_dt, L->base[1], off[1]);
	return red_step(C, L->n->op, L->acc_dt, acc, v);
}

/* Returns 1 when n is not for splitting (nothing emitted). */
static int
emit_full_split(CgCtx *C, IrNode *n, int64_t count)
{
	const TfgShape *in = red_shape(n);
	int64_t st[CG_MAX_OPS][TFG_MAX_RANK], row[TFG_MAX_RANK];
	int64_t flat[CG_MAX_OPS], q = RED_CHUNK, np, rest;
	TfgDtype at = red_acc_dt(n);
	Nest L = {0};
	if (count < 2 * RED_CHUNK || n->op == OP_argmax ||
	    n->op == OP_argmin)
		return 1;
	int nop = red_operands(C, &L, n, st);
	if (nop < 0)
		return -1;
	cg_row_major(in, row);
	for (int o = 1; o < nop; o++) {
		int all = 1, none = 1;
		for (int k = 0; k < in->rank; k++) {
			if (in->dims[k] == 1)
				continue;
			all &= st[o][k] == row[k];
			none &= st[o][k] == 0;
		}
		if (!all && !none)
			return 1;
		flat[o] = all;
	}
	while (count / q > RED_MAXPART)
		q *= 2;
	np = count / q;
	rest = count - np * q;
	LLVMValueRef part = cg_entry_alloca(C, LLVMArrayType2(cg_elty(C, at),
		(uint64_t)np + 1), CG_SLOT_ALIGN, "partials");

	/* the chunks: [np, q], partial i from elements [i q, (i + 1) q) */
	L.rank = 2;
	L.dim[0] = np;
	L.dim[1] = q;
	L.grp[1] = 1;
	L.stride[0][0] = 1;
	for (int o = 1; o < nop; o++) {
		L.stride[o][0] = flat[o] * q;
		L.stride[o][1] = flat[o];
	}
	L.nop = nop;
	L.n = n;
	L.count = q;
	L.acc_dt = at;
	L.init = red_init;
	L.body = red_body;
	L.fini = red_fini_part;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = part;
	Nest R = L;
	cg_nest_emit(C, &L);

	/* the rest, into partial np */
	if (rest > 0) {
		LLVMValueRef i = cg_i64c(C, np);
		R.rank = 1;
		R.dim[0] = rest;
		R.grp[0] = 1;
		R.stride[0][0] = 0;
		R.count = rest;
		R.base[0] = LLVMBuildInBoundsGEP2(C->b, cg_elty(C, at), part,
						  &i, 1, "");
		for (int o = 1; o < nop; o++) {
			const IrNode *src = n->fuse ? n->in[o - 1] : n->in[0];
			LLVMValueRef e = cg_i64c(C, np * q * flat[o]);
			R.stride[o][0] = flat[o];
			R.base[o] = LLVMBuildInBoundsGEP2(C->b,
				cg_elty(C, src->dtype), R.base[o], &e, 1, "");
		}
		cg_nest_emit(C, &R);
	}

	/* the partials in order, then the mean's division */
	Nest M = {0};
	M.rank = 1;
	M.dim[0] = np + (rest > 0);
	M.grp[0] = 1;
	M.stride[1][0] = 1;
	M.nop = 2;
	M.n = n;
	M.count = count;
	M.acc_dt = at;
	M.init = red_init;
	M.body = red_body_part;
	M.fini = red_fini;
	M.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	M.base[0] = cg_buf(C, n);
	M.base[1] = part;
	cg_nest_emit(C, &M);
	return 0;
}

/* ------------------------------------------------ order 2: rows in place */

static LLVMValueRef
body_fill(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	cg_store_at(C, L->n->dtype, L->base[0], off[0],
		    red_identity(C, L->n->op, L->n->dtype));
	return acc;
}

static LLVMValueRef
body_fold(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	TfgDtype t = L->n->dtype, it = red_in_dt(L->n);
	LLVMValueRef o = cg_load_at(C, t, L->base[0], off[0]);
	LLVMValueRef v = cg_cvt(C, red_load(C, L, off), it, t);
	cg_store_at(C, t, L->base[0], off[0], red_step(C, L->n->op, t, o, v));
	return acc;
}

static LLVMValueRef
body_mean(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	TfgDtype t = L->n->dtype;
	LLVMValueRef o = cg_load_at(C, t, L->base[0], off[0]);
	cg_store_at(C, t, L->base[0], off[0], red_divide(C, t, o, L->count));
	return acc;
}

/* One flat pass over n's output with body. */
static void
emit_out_pass(CgCtx *C, IrNode *n, NestBody body, int64_t count)
{
	Nest L = {0};
	L.rank = 1;
	L.dim[0] = tfg_shape_numel(&n->shape);
	L.stride[0][0] = 1;
	L.nop = 1;
	L.n = n;
	L.count = count;
	L.body = body;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = cg_buf(C, n);
	cg_nest_emit(C, &L);
}

/* Identity, then every input element folded into its output in the
 * input's order, then the mean's division. */
static int
emit_rows(CgCtx *C, IrNode *n, int64_t *ost, int64_t count)
{
	const TfgShape *in = red_shape(n);
	Nest L = {0};
	int nop = red_operands(C, &L, n, L.stride);
	if (nop < 0)
		return -1;
	emit_out_pass(C, n, body_fill, count);
	L.rank = in->rank;
	memcpy(L.dim, in->dims, sizeof L.dim);
	memcpy(L.stride[0], ost, sizeof L.stride[0]);
	L.nop = nop;
	L.n = n;
	L.body = body_fold;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = cg_buf(C, n);
	cg_nest_emit(C, &L);
	if (is_mean(n))
		emit_out_pass(C, n, body_mean, count);
	return 0;
}

/* Picks the loop order (see the top of the file). */
int
cpu_emit_reduce(CgCtx *C, IrNode *n)
{
	int64_t ost[TFG_MAX_RANK], count;
	if (n->nin != 1 && !n->fuse)
		return cg_fail(C, n, "reduction needs one input");
	const TfgShape *in = red_shape(n);
	uint32_t mask = red_mask(n);
	int inner = in->rank - 1;
	if ((count = red_layout(C, n, mask, ost)) < 0)
		return -1;
	while (inner >= 0 && in->dims[inner] == 1)
		inner--;
	if (inner >= 0 && !((mask >> inner) & 1) && count > 1 &&
	    n->op != OP_argmax && n->op != OP_argmin &&
	    red_acc_dt(n) == n->dtype)
		return emit_rows(C, n, ost, count);
	if (mask == (1u << in->rank) - 1) {
		int rc = emit_full_split(C, n, count);
		if (rc <= 0)
			return rc;
	}
	return emit_accumulate(C, n, mask, ost, count);
}


/* ------------------------------------------------------------- softmax */

static LLVMValueRef
row_load(CgCtx *C, TfgDtype t, LLVMValueRef base, LLVMValueRef row,
	 LLVMValueRef j)
{
	return cg_load_at(C, t, base, LLVMBuildNSWAdd(C->b, row, j, ""));
}

/* The first two passes over a row of softmax, log_softmax and
 * softmax_cross_entropy (length K at element offset row of in): the max m
 * (NaN propagates) into *mp, and the sum of exp(x - m), returned; the
 * exps stored at the same offsets of ex when ex is not NULL. */
static LLVMValueRef
row_max_expsum(CgCtx *C, TfgDtype t, LLVMValueRef in, LLVMValueRef row,
	       int64_t K, LLVMValueRef ex, LLVMValueRef *mp)
{
	LLVMBuilderRef B = C->b;
	LLVMTypeRef ty = cg_elty(C, t);
	Loop lj;

	cg_loop_begin(C, &lj, LLVMConstReal(ty, -INFINITY));
	LLVMValueRef mx[2] = {lj.acc, row_load(C, t, in, row, lj.i)};
	LLVMValueRef m = cg_loop_end(C, &lj, K,
				     cg_intrinsic(C, "llvm.maximum", mx, 2));

	cg_loop_begin(C, &lj, LLVMConstNull(ty));
	LLVMValueRef d = LLVMBuildFSub(B, row_load(C, t, in, row, lj.i), m,
				       "");
	LLVMValueRef e = t == TFG_F32 ? cg_vexp_nonpos(C, d)
				      : cg_vexp64(C, d);
	if (ex)
		cg_store_at(C, t, ex, LLVMBuildNSWAdd(B, row, lj.i, ""), e);
	LLVMValueRef s = LLVMBuildFAdd(B, lj.acc, e, "");
	LLVMSetFastMathFlags(s, LLVMFastMathAllowReassoc);
	*mp = m;
	return cg_loop_end(C, &lj, K, s);
}

/* One row of the last axis (length K, at element offset off[0] of both
 * operands): m = max (NaN propagates), then s = sum exp(x - m), then x's
 * softmax exp(x - m) * (1 / s) (the exps stored by the second pass) or
 * log_softmax (x - m) - log(s).  A nest body (L->n is the node, operand
 * 0 the output, 1 the input), so it runs in the outlined kernel. */
static LLVMValueRef
body_softmax_row(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMBuilderRef B = C->b;
	const IrNode *n = L->n;
	TfgDtype t = n->dtype;
	LLVMTypeRef ty = cg_elty(C, t);
	int64_t K = n->shape.dims[n->shape.rank - 1];
	LLVMValueRef out = L->base[0], in = L->base[1], row = off[0];
	int soft = n->op == OP_softmax;
	Loop lj;

	LLVMValueRef m, s = row_max_expsum(C, t, in, row, K,
					   soft ? out : NULL, &m);

	/* softmax: one division per row, then a multiplication per element
	   (within 1 ulp of the division; the division per element cost 5-9%
	   of the row's time in cache) */
	LLVMValueRef ls = soft ? LLVMBuildFDiv(B, LLVMConstReal(ty, 1.0), s,
					       "")
			       : cg_libm_call(C, "log", &s, 1);
	cg_loop_begin(C, &lj, NULL);
	LLVMValueRef at = LLVMBuildNSWAdd(B, row, lj.i, "");
	if (soft)
		cg_store_at(C, t, out, at,
			    LLVMBuildFMul(B, cg_load_at(C, t, out, at), ls,
					  ""));
	else
		cg_store_at(C, t, out, at, LLVMBuildFSub(B,
			LLVMBuildFSub(B, cg_load_at(C, t, in, at), m, ""), ls,
			""));
	cg_loop_end(C, &lj, K, NULL);
	return acc;
}

/* The f32 row of a K that is a multiple of 16, in explicit vectors of W
 * lanes (64 when K allows: four independent chains per pass, which the
 * target splits into its registers).  The same three passes, with two
 * differences that the scalar loops cannot have: the max is an ordered
 * select (x > m ? x : m, one instruction), not llvm.maximum, since a NaN
 * anywhere in the row makes s, hence every output, NaN anyway; and with
 * CG_NEST_NT the output is written once, with non-temporal stores (the
 * exps go to a stack row for softmax, so the output's lines are never
 * read).  Rows start 64-byte aligned (the slot, K * 4 a multiple of 64). */
static LLVMValueRef
body_softmax_vec(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMBuilderRef B = C->b;
	const IrNode *n = L->n;
	int64_t K = n->shape.dims[n->shape.rank - 1];
	int64_t W = K % 64 == 0 ? 64 : 16;
	LLVMTypeRef vty = LLVMVectorType(C->f32, (unsigned)W);
	LLVMValueRef out = L->base[0], in = L->base[1], row = off[0];
	int soft = n->op == OP_softmax, nt = (L->flags & CG_NEST_NT) != 0;
	LLVMValueRef ex = out, exrow = row; /* where the exps go */
	Loop lj;

	if (soft && nt) {
		ex = cg_entry_alloca(C, LLVMArrayType2(C->f32, (uint64_t)K), 64,
				     "exps");
		exrow = cg_i64c(C, 0);
	}
	LLVMValueRef minf = cg_vsplat(C, LLVMConstReal(C->f32, -INFINITY), W);
	cg_loop_begin(C, &lj, minf);
	LLVMValueRef j = LLVMBuildNSWMul(B, lj.i, cg_i64c(C, W), "");
	LLVMValueRef x = cg_vload(C, vty, in, LLVMBuildNSWAdd(B, row, j, ""),
				  4);
	LLVMValueRef gt = LLVMBuildFCmp(B, LLVMRealOGT, x, lj.acc, "");
	LLVMValueRef mv = cg_loop_end(C, &lj, K / W,
				      LLVMBuildSelect(B, gt, x, lj.acc, ""));
	/* mv holds no NaN (x > m is false for a NaN x): nnan lets the
	   target reduce it with vector maxes, not a NaN-checking chain */
	LLVMValueRef mr = cg_intrinsic(C, "llvm.vector.reduce.fmax", &mv, 1);
	LLVMSetFastMathFlags(mr, LLVMFastMathNoNaNs);
	LLVMValueRef m = cg_vsplat(C, mr, W);

	cg_loop_begin(C, &lj, cg_vsplat(C, LLVMConstNull(C->f32), W));
	j = LLVMBuildNSWMul(B, lj.i, cg_i64c(C, W), "");
	x = cg_vload(C, vty, in, LLVMBuildNSWAdd(B, row, j, ""), 4);
	/* the input 16 KiB on (four rows of 1024) into L2 (prefetcht2): a
	   row of 4 KiB is a page, where the hardware's prefetchers stop.
	   In bench/kernels.sh's softmax this beat 8 KiB into L1, which
	   beat none, and prefetches in the max pass, or in the output
	   pass, were slower (bench/README.md has the figures) */
	for (int64_t q = 0; q < W; q += 16)
		cg_prefetch(C, C->f32, in, LLVMBuildNSWAdd(B, LLVMBuildNSWAdd(B,
			row, j, ""), cg_i64c(C, q + 4096), ""));
	LLVMValueRef d = LLVMBuildFSub(B, x, m, "");
	LLVMValueRef e = soft ? cg_vexp_nonpos_2p24(C, d)
			      : cg_vexp_nonpos(C, d);
	if (soft)
		cg_vstore(C, e, ex, LLVMBuildNSWAdd(B, exrow, j, ""), 64, 0);
	LLVMValueRef sv = LLVMBuildFAdd(B, lj.acc, e, "");
	LLVMSetFastMathFlags(sv, LLVMFastMathAllowReassoc);
	sv = cg_loop_end(C, &lj, K / W, sv);
	LLVMValueRef s = cg_vreduce_fadd(C, sv);

	LLVMValueRef ls = soft ? LLVMBuildFDiv(B, LLVMConstReal(C->f32, 1.0), s,
					       "")
			       : cg_libm_call(C, "log", &s, 1);
	ls = cg_vsplat(C, ls, W);
	cg_loop_begin(C, &lj, NULL);
	j = LLVMBuildNSWMul(B, lj.i, cg_i64c(C, W), "");
	LLVMValueRef at = LLVMBuildNSWAdd(B, row, j, "");
	LLVMValueRef y;
	if (soft)
		y = LLVMBuildFMul(B, cg_vload(C, vty, ex,
			LLVMBuildNSWAdd(B, exrow, j, ""), 64), ls, "");
	else
		y = LLVMBuildFSub(B, LLVMBuildFSub(B, cg_vload(C, vty, in, at,
			4), m, ""), ls, "");
	cg_vstore(C, y, out, at, 64, nt);
	cg_loop_end(C, &lj, K / W, NULL);
	return acc;
}

/* A nest over the R rows (stride K for both operands), the row body
 * above: an outlined kernel over a row range, split over threads by
 * cg_nest_emit when R * K is large (each row writes only its own K
 * outputs, so the result is bit-identical to one thread). */
int
cpu_emit_softmax(CgCtx *C, IrNode *n)
{
	TfgDtype t = n->dtype;
	int64_t K, R;
	if (n->nin != 1 || n->shape.rank < 1 || !cg_is_float(t))
		return cg_fail(C, n, "softmax needs one float input of rank "
			       ">= 1");
	K = n->shape.dims[n->shape.rank - 1];
	if (tfg_shape_numel(&n->shape) == 0)
		return 0;
	R = tfg_shape_numel(&n->shape) / K;
	Nest L;
	memset(&L, 0, sizeof L);
	L.rank = 1;
	L.dim[0] = R;
	L.nop = 2;
	L.base[0] = cg_buf(C, n);
	L.base[1] = cg_buf(C, n->in[0]);
	L.stride[0][0] = L.stride[1][0] = K;
	L.body = t == TFG_F32 && K % 16 == 0 ? body_softmax_vec
					     : body_softmax_row;
	L.n = n;
	L.row = K;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	/* non-temporal stores when large, unless the exps would not fit a
	   stack row (16 KiB) */
	if (L.body == body_softmax_vec &&
	    cg_nt_wanted(C, tfg_shape_numel(&n->shape) * 4) &&
	    (n->op == OP_log_softmax || K <= 4096))
		L.flags |= CG_NEST_NT;
	cg_nest_emit(C, &L);
	return 0;
}

/* One row of softmax_cross_entropy (operand 0 the output, one element
 * at off[0]; 1 the logits and 2 the labels, K elements from off[1]). */
static LLVMValueRef
body_xent_row(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMBuilderRef B = C->b;
	const IrNode *n = L->n;
	TfgDtype t = n->dtype;
	LLVMTypeRef ty = cg_elty(C, t);
	int64_t K = n->in[0]->shape.dims[n->in[0]->shape.rank - 1];
	LLVMValueRef x = L->base[1], lb = L->base[2], row = off[1];
	Loop lj;

	if (K == 0) { /* a sum of nothing (the loops run at least once) */
		cg_store_at(C, t, L->base[0], off[0], LLVMConstNull(ty));
		return acc;
	}
	LLVMValueRef m, d, s = row_max_expsum(C, t, x, row, K, NULL, &m);
	LLVMValueRef ls = cg_libm_call(C, "log", &s, 1);

	/* sum l (log s - (x - m)) */
	cg_loop_begin(C, &lj, LLVMConstNull(ty));
	d = LLVMBuildFSub(B, row_load(C, t, x, row, lj.i), m, "");
	LLVMValueRef v = LLVMBuildFMul(B, row_load(C, t, lb, row, lj.i),
				       LLVMBuildFSub(B, ls, d, ""), "");
	v = LLVMBuildFAdd(B, lj.acc, v, "");
	LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
	v = cg_loop_end(C, &lj, K, v);
	cg_store_at(C, t, L->base[0], off[0], v);
	return acc;
}

/* A nest over the R rows (output stride 1, inputs stride K), one output
 * element each, split over threads when R * K is large (CG_NEST_ROW1:
 * each row writes only its own element). */
int
cpu_emit_xent(CgCtx *C, IrNode *n)
{
	TfgDtype t = n->dtype;
	int64_t K, R = tfg_shape_numel(&n->shape);
	Nest L;

	if (n->nin != 2 || n->in[0]->shape.rank < 1 || !cg_is_float(t))
		return cg_fail(C, n, "softmax_cross_entropy needs float "
			       "logits of rank >= 1");
	K = n->in[0]->shape.dims[n->in[0]->shape.rank - 1];
	if (R == 0)
		return 0;
	memset(&L, 0, sizeof L);
	L.rank = 1;
	L.dim[0] = R;
	L.nop = 3;
	L.base[0] = cg_buf(C, n);
	L.base[1] = cg_buf(C, n->in[0]);
	L.base[2] = cg_buf(C, n->in[1]);
	L.stride[0][0] = 1;
	L.stride[1][0] = L.stride[2][0] = K;
	L.body = body_xent_row;
	L.n = n;
	L.row = K;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM | CG_NEST_ROW1;
	cg_nest_emit(C, &L);
	return 0;
}

