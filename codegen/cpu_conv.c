/*
 * codegen/cpu_conv.c: the emitters of OP_conv2d,
 * OP_conv2d_backprop_input and OP_conv2d_backprop_filter
 * (spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose") and of the
 * pools and their gradients (spec §6.33 "max_pool, avg_pool"): a call of
 * tfg_rt_conv2d or tfg_rt_pool2d (runtime/conv.c: patches and OpenBLAS,
 * or windows, over the kernel pool), with the layer's static shape and
 * geometry as a constant TfgConv of the module.
 */
#include "codegen/cg_int.h"

#define CONV_FIELDS (sizeof(TfgConv) / sizeof(int64_t))

/* A call of fn (tfg_rt_conv2d or tfg_rt_pool2d: kind, dtype, &g, a, b,
 * out) for node n, g a constant of the module; b NULL without a second
 * input. */
static void
call(CgCtx *C, const IrNode *n, const char *fn, int kind, const TfgConv *g)
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
	args[3] = cg_buf(C, n->in[0]);
	args[4] = n->nin > 1 ? cg_buf(C, n->in[1]) : LLVMConstNull(C->ptr);
	args[5] = cg_buf(C, n);
	LLVMBuildCall2(C->b, fty, f, args, 6, "");
}

int
cpu_emit_conv(CgCtx *C, IrNode *n)
{
	int kind = n->op == OP_conv2d ? TFG_CONV_FORWARD
		 : n->op == OP_conv2d_backprop_input ? TFG_CONV_INPUT
		 : TFG_CONV_FILTER;
	TfgConv g;

	if (n->nin != 2 || ir_conv_geometry(n, &g) < 0 ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64) ||
	    n->in[0]->dtype != n->dtype || n->in[1]->dtype != n->dtype)
		return cg_fail(C, n, "convolution: malformed node");
	/* multiply-adds: one per output pixel, filter tap and channel */
	if ((double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw * g.c) *
	    (double)g.o >= TFG_LONG_WORK)
		cg_flush(C);
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
	    (n->nin > 1 && n->in[1]->dtype != n->dtype) ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64 &&
	     n->dtype != TFG_I32 && n->dtype != TFG_I64))
		return cg_fail(C, n, "pool: malformed node");
	if ((double)(g.n * g.h * g.w * g.c) * (double)(g.kh * g.kw) /
	    (double)(g.sh * g.sw) >= TFG_LONG_WORK)
		cg_flush(C);
	call(C, n, "tfg_rt_pool2d", kind, &g);
	return 0;
}
