/*
 * codegen/cpu_gather.c: the emitter of OP_gather,
 * OP_unsorted_segment_sum and OP_unsorted_segment_max
 * (spec §6.36 "gather, embedding_lookup",
 * §6.37 "Segment reductions"): a call of
 * tfg_rt_gather or tfg_rt_segment (runtime/gather.c) with the operands
 * seen as [outer, indexed, inner] from the node's static shapes, and a
 * label naming the op and where it was written for the error of an
 * index outside the table, which fails the step there.
 */
#include <stdio.h>

#include "codegen/cg_int.h"

/* The product of dims [b, e) of s. */
static int64_t
span(const TfgShape *s, int b, int e)
{
	int64_t n = 1;

	for (int k = b; k < e; k++)
		n *= s->dims[k];
	return n;
}

int
cpu_emit_gather(CgCtx *C, IrNode *n)
{
	LLVMTypeRef i32 = C->i32, i64 = C->i64, p = C->ptr;
	LLVMTypeRef pg[10] = {p, p, p, i32, p, i64, i64, i64, i64, p};
	LLVMTypeRef ps[12] = {p, i32, i32, p, p, i32, p, i64, i64, i64, i64, p};
	LLVMTypeRef fty;
	LLVMValueRef f, args[12];
	const IrNode *x, *idx;
	char label[256];
	int gather = n->op == OP_gather, r;

	if (n->nin != 2)
		return cg_fail(C, n, "gather: malformed node");
	x = n->in[0];
	idx = n->in[1];
	r = idx->shape.rank;
	if (n->axis < 0 || n->axis >= (gather ? x->shape.rank
					       : n->shape.rank) ||
	    (idx->dtype != TFG_I32 && idx->dtype != TFG_I64))
		return cg_fail(C, n, "gather: malformed node");
	snprintf(label, sizeof label, "'%s' at %s:%u:%u", op_info[n->op].name,
		 n->loc.file ? n->loc.file->path : "?", n->loc.line,
		 n->loc.col);
	if (gather) {
		fty = LLVMFunctionType(i32, pg, 10, 0);
		if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_gather")))
			f = LLVMAddFunction(C->m, "tfg_rt_gather", fty);
		args[0] = C->ctx_arg;
		args[1] = cg_buf(C, x);
		args[2] = cg_buf(C, idx);
		args[3] = LLVMConstInt(i32, (unsigned)idx->dtype |
				       (n->drop ? TFG_GATHER_DROP : 0), 0);
		args[4] = cg_buf(C, n);
		args[5] = cg_i64c(C, span(&x->shape, 0, n->axis));
		args[6] = cg_i64c(C, x->shape.dims[n->axis]);
		args[7] = cg_i64c(C, span(&idx->shape, 0, r));
		args[8] = cg_i64c(C, span(&x->shape, n->axis + 1,
					  x->shape.rank) *
					 (int64_t)tfg_dtype_size(x->dtype));
		args[9] = LLVMBuildGlobalStringPtr(C->b, label, "");
		cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 10, "rc"));
		return 0;
	}
	fty = LLVMFunctionType(i32, ps, 12, 0);
	if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_segment")))
		f = LLVMAddFunction(C->m, "tfg_rt_segment", fty);
	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(i32, n->op == OP_unsorted_segment_sum
				? TFG_SEGMENT_SUM : TFG_SEGMENT_MAX, 0);
	args[2] = LLVMConstInt(i32, (unsigned)n->dtype, 0);
	args[3] = cg_buf(C, x);
	args[4] = cg_buf(C, idx);
	args[5] = LLVMConstInt(i32, (unsigned)idx->dtype, 0);
	args[6] = cg_buf(C, n);
	args[7] = cg_i64c(C, span(&x->shape, 0, n->axis));
	args[8] = cg_i64c(C, span(&idx->shape, 0, r));
	args[9] = cg_i64c(C, n->shape.dims[n->axis]);
	args[10] = cg_i64c(C, span(&x->shape, n->axis + r, x->shape.rank));
	args[11] = LLVMBuildGlobalStringPtr(C->b, label, "");
	cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 12, "rc"));
	return 0;
}

/* OP_shard_ids: tfg_rt_shard_ids on the ids. */
int
cpu_emit_shard_ids(CgCtx *C, IrNode *n)
{
	LLVMTypeRef i32 = C->i32, i64 = C->i64, p = C->ptr;
	LLVMTypeRef ps[9] = {p, p, i32, i64, i64, i64, i64, i32, p};
	LLVMTypeRef fty = LLVMFunctionType(i32, ps, 9, 0);
	LLVMValueRef f, args[9];
	const IrNode *idx = n->nin == 1 ? n->in[0] : NULL;
	const RtShardOf *s = n->part;

	if (!idx || !s || (idx->dtype != TFG_I32 && idx->dtype != TFG_I64) ||
	    n->dtype != TFG_I64 ||
	    tfg_shape_numel(&n->shape) != 2 * tfg_shape_numel(&idx->shape))
		return cg_fail(C, n, "shard_ids: malformed node");
	if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_shard_ids")))
		f = LLVMAddFunction(C->m, "tfg_rt_shard_ids", fty);
	args[0] = C->ctx_arg;
	args[1] = cg_buf(C, idx);
	args[2] = LLVMConstInt(i32, (unsigned)idx->dtype, 0);
	args[3] = cg_i64c(C, tfg_shape_numel(&idx->shape));
	args[4] = cg_i64c(C, s->k);
	args[5] = cg_i64c(C, s->n);
	args[6] = cg_i64c(C, s->rows);
	args[7] = LLVMConstInt(i32, (unsigned)s->mod, 0);
	args[8] = cg_buf(C, n);
	cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 9, "rc"));
	return 0;
}
