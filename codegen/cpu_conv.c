/*
 * codegen/cpu_conv.c: the emitters of OP_conv2d,
 * OP_conv2d_backprop_input and OP_conv2d_backprop_filter
 * (spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose") and of the
 * pools and their gradients (spec §6.33 "max_pool, avg_pool"): a call of
 * tfg_rt_conv2d or tfg_rt_pool2d (runtime/conv.c: patches and OpenBLAS,
 * or windows, over the kernel pool), with the layer's static shape and
 * geometry as a constant TfgConv of the module.
 *
 * A conv2d or a pool carrying an epilogue (compiler/pass_fuse.c: the
 * bias add and activation after a convolution, relu's gradient after a
 * max pool's) is computed a block of whole images at a time
 * (CONV_EPI_BYTES of outputs, $TFG_EPI_BLOCK as for matmuls), and the
 * program runs over each block's outputs in place right after, while
 * they are in cache, instead of as a pass of its own over memory.  Each
 * output is the same whatever the blocks (tfg_rt_conv2d's and
 * tfg_rt_pool2d's results do not depend on how their rows are cut).
 */
#include <string.h>

#include "codegen/cg_int.h"

#define CONV_FIELDS (sizeof(TfgConv) / sizeof(int64_t))

/* Bytes of a conv2d epilogue's block of images, a share of the L3: both
 * forward layers of Deep MNIST with their epilogues (batch 100, one
 * thread, Zen 3) took 33-36 ms from 1 MiB to 16 MiB and 38-43 ms with
 * 256 KiB blocks, whose calls each pad their images again and wake the
 * pool's threads twice. */
#define CONV_EPI_BYTES (4 << 20)

/* A call of fn (tfg_rt_conv2d or tfg_rt_pool2d: kind, dtype, &g, a, b,
 * out) for node n, g a constant of the module; b NULL without a second
 * input. */
static void
call_at(CgCtx *C, const IrNode *n, const char *fn, int kind,
	const TfgConv *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef out)
{
	LLVMValueRef f, gv, init, el[CONV_FIELDS], args[6];
	LLVMTypeRef ps[6] = {C->i32, C->i32, C->ptr, C->ptr, C->ptr, C->ptr};
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(C->c), ps, 6,
					   0);
	const int64_t *v = &g->n;

	for (size_t i = 0; i < CONV_FIELDS; i++)
		el[i] = cg_i64c(C, v[i]);
	init = LLVMConstArray2(C->i64, el, CONV_FIELDS);
	gv = LLVMAddGlobal(C->m, LLVMTypeOf(init), "conv");
	LLVMSetInitializer(gv, init);
	LLVMSetGlobalConstant(gv, 1);
	LLVMSetLinkage(gv, LLVMPrivateLinkage);
	LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
	if (!(f = LLVMGetNamedFunction(C->m, fn)))
		f = LLVMAddFunction(C->m, fn, fty);
	args[0] = LLVMConstInt(C->i32, (unsigned long long)kind, 0);
	args[1] = LLVMConstInt(C->i32, (unsigned long long)n->dtype, 0);
	args[2] = gv;
	args[3] = a;
	args[4] = b;
	args[5] = out;
	LLVMBuildCall2(C->b, fty, f, args, 6, "");
}

static void
call(CgCtx *C, const IrNode *n, const char *fn, int kind, const TfgConv *g)
{
	call_at(C, n, fn, kind, g, cg_buf(C, n->in[0]),
		n->nin > 1 ? cg_buf(C, n->in[1]) : LLVMConstNull(C->ptr),
		cg_buf(C, n));
}

/* ---- epilogues */

/* Elements of one image of a 4-d value x (batch first), or 0 for the
 * operand that all images share (a convolution's filter). */
static int64_t
per_image(const IrNode *n, int k)
{
	const IrNode *x = k < 0 ? n : n->in[k];

	if ((n->op == OP_conv2d && k == 1) || x->shape.dims[0] == 0)
		return 0;
	return tfg_shape_numel(&x->shape) / x->shape.dims[0];
}

/* Images [img0, img0 + R) of n (img0 an i64 value): fn's `kind` of them
 * into the output, then the program over them.  used[e]: input e is
 * read by the program at strides st[e] (broadcast to the output). */
static void
epi_block(CgCtx *C, const IrNode *n, const TfgConv *g, const char *fn,
	  int kind, LLVMValueRef img0, int64_t R, const int *used,
	  int64_t (*st)[TFG_MAX_RANK])
{
	TfgConv b = *g;
	TfgDtype t = n->dtype;
	LLVMValueRef out = cg_at(C, t, cg_buf(C, n), img0, per_image(n, -1));
	LLVMValueRef ab[2] = {LLVMConstNull(C->ptr), LLVMConstNull(C->ptr)};
	Nest L = {0};
	int64_t ost[TFG_MAX_RANK];

	for (int k = 0; k < op_info[n->op].nin && k < 2; k++)
		ab[k] = cg_at(C, n->in[k]->dtype, cg_buf(C, n->in[k]), img0,
			      per_image(n, k));
	b.n = R;
	call_at(C, n, fn, kind, &b, ab[0], ab[1], out);
	cg_row_major(&n->shape, ost);
	L.rank = n->shape.rank;
	memcpy(L.dim, n->shape.dims, sizeof L.dim[0] * (size_t)L.rank);
	L.dim[0] = R;
	L.nop = 1 + n->nin;
	L.n = n;
	L.body = cg_body_epi;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = out;
	memcpy(L.stride[0], ost, sizeof ost[0] * (size_t)L.rank);
	for (int e = 0; e < n->nin; e++) {
		L.base[1 + e] = used[e] ? cg_at(C, n->in[e]->dtype,
						cg_buf(C, n->in[e]), img0,
						st[e][0])
					: cg_buf(C, n->in[e]);
		for (int x = 0; x < L.rank; x++)
			L.stride[1 + e][x] = used[e] ? st[e][x] : 0;
	}
	cg_nest_emit(C, &L);
}

/* A conv2d or pool with an epilogue: full blocks of R images in a
 * loop, then the rest. */
static int
emit_epilogue(CgCtx *C, IrNode *n, const TfgConv *g, const char *fn,
	      int kind)
{
	int used[CG_MAX_OPS] = {0};
	int64_t st[CG_MAX_OPS][TFG_MAX_RANK];
	int64_t per, R, full, rest;
	Loop lb;

	if (n->fuse->n < 1 || n->nin + 1 > CG_MAX_OPS || n->shape.rank != 4)
		return cg_fail(C, n, "epilogue does not match");
	cg_epi_used(n, used);
	for (int e = 0; e < n->nin; e++) {
		if (used[e] && n->in[e]->shape.rank > n->shape.rank)
			return cg_fail(C, n, "input rank above output rank");
		if (used[e])
			cg_bcast_strides(&n->in[e]->shape, &n->shape, st[e]);
	}
	per = per_image(n, -1) * (int64_t)tfg_dtype_size(n->dtype);
	if (g->n == 0 || per == 0)
		return 0;
	R = (C->epi_block > 0 ? C->epi_block : CONV_EPI_BYTES) / per;
	R = R < 1 ? 1 : R > g->n ? g->n : R;
	full = g->n / R;
	rest = g->n % R;
	if (full == 1) {
		epi_block(C, n, g, fn, kind, cg_i64c(C, 0), R, used, st);
	} else {
		cg_loop_begin(C, &lb, NULL);
		epi_block(C, n, g, fn, kind,
			  LLVMBuildNSWMul(C->b, lb.i, cg_i64c(C, R), ""), R,
			  used, st);
		cg_loop_end(C, &lb, full, NULL);
	}
	if (rest > 0)
		epi_block(C, n, g, fn, kind, cg_i64c(C, full * R), rest, used,
			  st);
	return 0;
}

int
cpu_emit_conv(CgCtx *C, IrNode *n)
{
	int kind = n->op == OP_conv2d ? TFG_CONV_FORWARD
		 : n->op == OP_conv2d_backprop_input ? TFG_CONV_INPUT
		 : TFG_CONV_FILTER;
	TfgConv g;

	if ((n->nin != 2 && !(n->fuse && kind == TFG_CONV_FORWARD)) ||
	    ir_conv_geometry(n, &g) < 0 ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64) ||
	    n->in[0]->dtype != n->dtype || n->in[1]->dtype != n->dtype)
		return cg_fail(C, n, "convolution: malformed node");
	/* multiply-adds: one per output pixel, filter tap and channel */
	if ((double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw * g.c) *
	    (double)g.o >= TFG_LONG_WORK)
		cg_flush(C);
	if (n->fuse)
		return emit_epilogue(C, n, &g, "tfg_rt_conv2d", kind);
	call(C, n, "tfg_rt_conv2d", kind, &g);
	return 0;
}

/* OP_max_pool and its kin: tfg_rt_pool2d with the windows as a
 * TfgConv (o = c). */
int
cpu_emit_pool(CgCtx *C, IrNode *n)
{
	int kind = n->op == OP_max_pool ? TFG_POOL_MAX
		 : n->op == OP_avg_pool ? TFG_POOL_AVG
		 : n->op == OP_max_pool_grad ? TFG_POOL_MAX_GRAD
		 : TFG_POOL_AVG_GRAD;
	TfgConv g;

	if (ir_conv_geometry(n, &g) < 0 || n->in[0]->dtype != n->dtype ||
	    (op_info[n->op].nin > 1 && n->in[1]->dtype != n->dtype) ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64 &&
	     n->dtype != TFG_I32 && n->dtype != TFG_I64))
		return cg_fail(C, n, "pool: malformed node");
	if ((double)(g.n * g.h * g.w * g.c) * (double)(g.kh * g.kw) /
	    (double)(g.sh * g.sw) >= TFG_LONG_WORK)
		cg_flush(C);
	if (n->fuse)
		return emit_epilogue(C, n, &g, "tfg_rt_pool2d", kind);
	call(C, n, "tfg_rt_pool2d", kind, &g);
	return 0;
}
