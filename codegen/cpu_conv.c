/*
 * codegen/cpu_conv.c: the emitter of OP_conv2d, OP_conv2d_backprop_input
 * and OP_conv2d_backprop_filter
 * (spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose"): a call of tfg_rt_conv2d (runtime/conv.c, patches
 * and OpenBLAS over the kernel pool), with the layer's static shape and
 * geometry as a constant TfgConv of the module.
 */
#include "codegen/cg_int.h"

#define CONV_FIELDS (sizeof(TfgConv) / sizeof(int64_t))

/* The TfgConv of node n: input and filter shapes from the operands in
 * the roles n's op gives them (runtime/tfg.h). */
static void
geometry(const IrNode *n, TfgConv *g)
{
	const TfgShape *x, *f, *y;
	const IrConv *v = n->conv;

	switch (n->op) {
	case OP_conv2d:
		x = &n->in[0]->shape, f = &n->in[1]->shape, y = &n->shape;
		break;
	case OP_conv2d_backprop_input:
		x = &n->shape, f = &n->in[1]->shape, y = &n->in[0]->shape;
		break;
	default:
		x = &n->in[0]->shape, f = &n->shape, y = &n->in[1]->shape;
		break;
	}
	*g = (TfgConv){x->dims[0], x->dims[1], x->dims[2], x->dims[3],
		       f->dims[0], f->dims[1], f->dims[3], y->dims[1],
		       y->dims[2], v->stride[0], v->stride[1], v->dil[0],
		       v->dil[1], v->pad[0], v->pad[2], v->depthwise};
}

int
cpu_emit_conv(CgCtx *C, IrNode *n)
{
	int kind = n->op == OP_conv2d ? TFG_CONV_FORWARD
		 : n->op == OP_conv2d_backprop_input ? TFG_CONV_INPUT
		 : TFG_CONV_FILTER;
	LLVMValueRef f, gv, init, el[CONV_FIELDS], args[6];
	LLVMTypeRef ps[6] = {C->i32, C->i32, C->ptr, C->ptr, C->ptr, C->ptr};
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(C->c), ps, 6,
					   0);
	const int64_t *v;
	TfgConv g;

	if (!n->conv || n->nin != 2 || n->shape.rank != 4 ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64) ||
	    n->in[0]->dtype != n->dtype || n->in[1]->dtype != n->dtype ||
	    n->in[0]->shape.rank != 4 || n->in[1]->shape.rank != 4)
		return cg_fail(C, n, "convolution: malformed node");
	geometry(n, &g);
	v = &g.n;
	for (size_t i = 0; i < CONV_FIELDS; i++)
		el[i] = cg_i64c(C, v[i]);
	init = LLVMConstArray2(C->i64, el, CONV_FIELDS);
	gv = LLVMAddGlobal(C->m, LLVMTypeOf(init), "conv");
	LLVMSetInitializer(gv, init);
	LLVMSetGlobalConstant(gv, 1);
	LLVMSetLinkage(gv, LLVMPrivateLinkage);
	LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
	/* multiply-adds: one per output pixel, filter tap and channel */
	if ((double)(g.n * g.oh * g.ow) * (double)(g.kh * g.kw * g.c) *
	    (double)g.o >= TFG_LONG_WORK)
		cg_flush(C);
	if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_conv2d")))
		f = LLVMAddFunction(C->m, "tfg_rt_conv2d", fty);
	args[0] = LLVMConstInt(C->i32, (unsigned long long)kind, 0);
	args[1] = LLVMConstInt(C->i32, (unsigned long long)n->dtype, 0);
	args[2] = gv;
	args[3] = cg_buf(C, n->in[0]);
	args[4] = cg_buf(C, n->in[1]);
	args[5] = cg_buf(C, n);
	LLVMBuildCall2(C->b, fty, f, args, 6, "");
	return 0;
}
