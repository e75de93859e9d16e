/*
 * codegen/cpu_fuse.c: fused elementwise groups (compiler/pass_fuse.c,
 * spec/design.md "Passes").
 *
 * An IrFuse program is evaluated per element inside one loop nest: the
 * external inputs are the nest's operands, each broadcast against the
 * program's index space (the root's shape), and the members are computed
 * in order from LLVM values, never stored.  A member with fewer elements
 * than the root (it is broadcast later) is then recomputed per root
 * element; that gives the same values, since its operands' broadcast
 * indices compose with its own.
 *
 * cpu_emit_fused stores the program's value per element; fused reductions
 * (codegen/cpu_reduce.c) take it as the reduction's input element; a
 * matmul epilogue (codegen/cpu_shape.c) passes the product element as
 * the anchor operand.
 * cg_elem_apply computes one element of one elementwise op exactly as the
 * op's own emitter in codegen/cpu.c does (the same cg_arith, cg_compare,
 * cg_unary and cg_cvt), so fusion never changes a result.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_int.h"

LLVMValueRef
cg_elem_apply(CgCtx *C, OpKind op, TfgDtype t, const TfgDtype *it,
	      LLVMValueRef *v)
{
	LLVMBuilderRef B = C->b;
	LLVMValueRef a, b, c;

	switch (op) {
	case OP_add: case OP_sub: case OP_mul: case OP_div: case OP_mod:
	case OP_pow: case OP_maximum: case OP_minimum:
		a = cg_cvt(C, v[0], it[0], t);
		b = cg_cvt(C, v[1], it[1], t);
		return cg_arith(C, op, t, a, b);
	case OP_equal: case OP_not_equal: case OP_less: case OP_less_equal:
	case OP_greater: case OP_greater_equal:
		b = cg_cvt(C, v[1], it[1], it[0]);
		return cg_compare(C, op, it[0], v[0], b);
	case OP_where:
		c = LLVMBuildICmp(B, LLVMIntNE, v[0],
				  LLVMConstNull(LLVMTypeOf(v[0])), "");
		a = cg_cvt(C, v[1], it[1], t);
		b = cg_cvt(C, v[2], it[2], t);
		return LLVMBuildSelect(B, c, a, b, "");
	case OP_neg:
		a = cg_cvt(C, v[0], it[0], t);
		if (cg_is_float(t))
			return LLVMBuildFNeg(B, a, "");
		if (t != TFG_BOOL)
			return LLVMBuildSub(B, LLVMConstNull(LLVMTypeOf(a)),
					    a, "");
		return a;
	case OP_cast:
		return cg_cvt(C, v[0], it[0], t);
	default: /* the table's other elementwise ops: by arity */
		if (op_info[op].nin == 2)
			return cg_arith(C, op, t, cg_cvt(C, v[0], it[0], t),
					cg_cvt(C, v[1], it[1], t));
		return cg_unary(C, op, t, cg_cvt(C, v[0], it[0], t));
	}
}

void
cg_bcast_strides(const TfgShape *s, const TfgShape *to, int64_t *st)
{
	int64_t row[TFG_MAX_RANK];
	int lead = to->rank - s->rank;

	cg_row_major(s, row);
	for (int k = 0; k < to->rank; k++)
		st[k] = k < lead || s->dims[k - lead] == 1 ? 0 : row[k - lead];
}

LLVMValueRef
cg_fuse_eval(CgCtx *C, const IrNode *n, const Nest *L, int first,
	     LLVMValueRef *off, LLVMValueRef anchor)
{
	const IrFuse *f = n->fuse;
	LLVMValueRef ext[CG_MAX_OPS] = {0};
	LLVMValueRef *val = calloc((size_t)f->n, sizeof *val), r;

	for (int m = 0; m < f->n; m++) {
		const IrFuseOp *o = &f->ops[m];
		LLVMValueRef v[3];
		for (int k = 0; k < o->nin; k++) {
			int32_t a = o->arg[k];
			if (a == IR_FUSE_ANCHOR) {
				v[k] = anchor;
			} else if (a >= 0) {
				v[k] = val[a];
			} else {
				int e = -1 - a, q = first + e;
				if (!ext[e])
					ext[e] = cg_load_at(C, n->in[e]->dtype,
							    L->base[q], off[q]);
				v[k] = ext[e];
			}
		}
		val[m] = cg_elem_apply(C, o->op, o->dtype, o->in_dt, v);
	}
	r = val[f->n - 1];
	free(val);
	return r;
}

static LLVMValueRef
body_fused(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	cg_store_at(C, n->dtype, L->base[0], off[0],
		    cg_fuse_eval(C, n, L, 1, off, NULL));
	return acc;
}

/* One nest over the root's shape, every input broadcast to it. */
int
cpu_emit_fused(CgCtx *C, IrNode *n)
{
	Nest L = {0};

	if (!n->fuse || n->fuse->n < 1)
		return cg_fail(C, n, "fused node without a program");
	if (n->nin + 1 > CG_MAX_OPS)
		return cg_fail(C, n, "fused node with too many inputs");
	for (int k = 0; k < n->nin; k++)
		if (n->in[k]->shape.rank > n->shape.rank)
			return cg_fail(C, n, "input rank above output rank");
	L.rank = n->shape.rank;
	memcpy(L.dim, n->shape.dims, sizeof L.dim);
	L.nop = n->nin + 1;
	L.n = n;
	L.body = body_fused;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM | CG_NEST_STREAM;
	L.base[0] = cg_buf(C, n);
	cg_row_major(&n->shape, L.stride[0]);
	for (int k = 0; k < n->nin; k++) {
		L.base[k + 1] = cg_buf(C, n->in[k]);
		cg_bcast_strides(&n->in[k]->shape, &n->shape, L.stride[k + 1]);
	}
	cg_nest_emit(C, &L);
	return 0;
}

void
cg_epi_used(const IrNode *n, int *used)
{
	const IrFuse *f = n->fuse;

	for (int m = 0; m < f->n; m++)
		for (int k = 0; k < f->ops[m].nin; k++)
			if (f->ops[m].arg[k] < 0 &&
			    f->ops[m].arg[k] != IR_FUSE_ANCHOR)
				used[-1 - f->ops[m].arg[k]] = 1;
}

LLVMValueRef
cg_body_epi(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	LLVMValueRef v = cg_load_at(C, n->dtype, L->base[0], off[0]);

	cg_store_at(C, n->dtype, L->base[0], off[0],
		    cg_fuse_eval(C, n, L, 1, off, v));
	return acc;
}

LLVMValueRef
cg_at(CgCtx *C, TfgDtype t, LLVMValueRef base, LLVMValueRef i, int64_t st)
{
	LLVMValueRef o;

	if (st == 0)
		return base;
	o = LLVMBuildNSWMul(C->b, i, cg_i64c(C, st), "");
	return LLVMBuildInBoundsGEP2(C->b, cg_elty(C, t), base, &o, 1, "");
}
