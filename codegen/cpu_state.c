/*
 * codegen/cpu_state.c: the emitters of variable ops (spec §4.4 "Variables").
 * Each is one call of the runtime,
 *
 *     i32 tfg_rt_var(ptr ctx, i32 var, i32 op, ptr src, ptr dst)
 *
 * which reads or changes the variable under its lock where it lives
 * (runtime/var.c), so that no generated code touches state that other
 * steps may change at the same time: a read copies the value into the
 * node's slot, an update applies its input and copies the new value
 * there too (the node's value is the variable's new value).  An
 * optimizer's update (OP_apply, spec §6.26 "minimize and optimizers") is
 * one call of
 *
 *     i32 tfg_rt_apply(ptr ctx, i32 var, i32 kind, i32 slot, ptr grad,
 *                      ptr hyper, ptr dst)
 *
 * or, for an update of the rows a gather's gradient touches
 * (OP_apply_rows),
 *
 *     i32 tfg_rt_apply_rows(ptr ctx, i32 var, i32 kind, i32 slot,
 *                           ptr ids, i64 n, ptr rows, ptr hyper,
 *                           ptr dst)
 *
 * (runtime/optim.c), and OP_after a copy of its first input.
 */
#include <string.h>

#include "codegen/cg_int.h"

/* Whether a node after the one being emitted reads its value. */
static int
read_later(const CgCtx *C)
{
	return cg_read_after(C->part, C->cur);
}

static void
declare_var(CgCtx *C)
{
	if (!C->rt_var) {
		LLVMTypeRef p[5] = {C->ptr, C->i32, C->i32, C->ptr, C->ptr};

		C->rt_var_ty = LLVMFunctionType(C->i32, p, 5, 0);
		C->rt_var = LLVMAddFunction(C->m, "tfg_rt_var", C->rt_var_ty);
	}
}

/* tfg_rt_var(ctx, n->var->index, op, src, n's slot), returning its rc if
 * not 0; an update's new value that nothing reads (--check-numerics
 * reads every value) is not copied (NULL: initialize() of a 640 MB
 * shard touched 640 MB of arena for it). */
static int
var_call(CgCtx *C, IrNode *n, uint32_t op, LLVMValueRef src)
{
	LLVMValueRef args[5];
	int read = (op & 0xff) != TFG_VAR_ASSIGN && (op & 0xff) !=
		   TFG_VAR_ADD && (op & 0xff) != TFG_VAR_SUB;

	if (!n->var)
		return cg_fail(C, n, "a variable op without its variable");
	declare_var(C);
	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(C->i32, (unsigned long long)n->var->index, 0);
	args[2] = LLVMConstInt(C->i32, op, 0);
	args[3] = src ? src : LLVMConstNull(C->ptr);
	args[4] = read || C->rt_check || read_later(C)
			  ? cg_buf(C, n) : LLVMConstNull(C->ptr);
	cg_check_rc(C, LLVMBuildCall2(C->b, C->rt_var_ty, C->rt_var, args, 5,
				      "rc"));
	return 0;
}

/* An update of n->var by its input; a scalar input (a literal) stands
 * for every element. */
static int
update(CgCtx *C, IrNode *n, uint32_t op)
{
	if (n->nin != 1)
		return cg_fail(C, n, "an update needs one input");
	if (n->in[0]->shape.rank == 0 && n->shape.rank != 0)
		op |= TFG_VAR_SCALAR;
	return var_call(C, n, op, cg_buf(C, n->in[0]));
}

/* Values in a variable's storage (spec/design.md "Values in a
 * variable's storage"): tfg_rt_var(ctx, var, TFG_VAR_HOLD_WRITE or
 * _READ, NULL, &held) before n's code, which then writes or reads the
 * storage at held, the variable's lock held; tfg_rt_var(ctx, var,
 * TFG_VAR_PUT, n's buffer or NULL, NULL) after it lets it go (the
 * runtime copies the value in where it is elsewhere: a feed read where
 * it is).  Should n's code fail between the two, the part's caller lets
 * the variable go (rt_vars_drop). */
void
cpu_var_hold(CgCtx *C, IrNode *n, const IrNode *t, int place)
{
	const IrVar *v = place == CG_INTO_VAR ? t->var : n->var;
	LLVMValueRef args[5];

	declare_var(C);
	if (!C->held_slot)
		C->held_slot = cg_entry_alloca(C, C->ptr, 8, "held");
	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(C->i32, (unsigned long long)v->index, 0);
	args[2] = LLVMConstInt(C->i32, place == CG_INTO_VAR ?
			       TFG_VAR_HOLD_WRITE : TFG_VAR_HOLD_READ, 0);
	args[3] = LLVMConstNull(C->ptr);
	args[4] = C->held_slot;
	cg_check_rc(C, LLVMBuildCall2(C->b, C->rt_var_ty, C->rt_var, args, 5,
				      "rc"));
	C->val[C->cur] = LLVMBuildLoad2(C->b, C->ptr, C->held_slot,
					n->name ? n->name : "");
}

void
cpu_var_put(CgCtx *C, IrNode *n, const IrNode *t, int place)
{
	const IrVar *v = place == CG_INTO_VAR ? t->var : n->var;
	LLVMValueRef args[5];

	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(C->i32, (unsigned long long)v->index, 0);
	args[2] = LLVMConstInt(C->i32, TFG_VAR_PUT, 0);
	args[3] = place == CG_INTO_VAR ? cg_buf(C, n) : LLVMConstNull(C->ptr);
	args[4] = LLVMConstNull(C->ptr);
	cg_check_rc(C, LLVMBuildCall2(C->b, C->rt_var_ty, C->rt_var, args, 5,
				      "rc"));
}

/* The assign whose input was computed into its variable: its value, if
 * read (it then has a slot: codegen/memplan.c), is the variable's. */
void
cpu_emit_assigned(CgCtx *C, IrNode *n)
{
	if (read_later(C))
		var_call(C, n, TFG_VAR_READ, NULL);
}

int
cpu_emit_variable(CgCtx *C, IrNode *n)
{
	return var_call(C, n, TFG_VAR_READ, NULL);
}

int
cpu_emit_assign(CgCtx *C, IrNode *n)
{
	return update(C, n, TFG_VAR_ASSIGN);
}

int
cpu_emit_assign_add(CgCtx *C, IrNode *n)
{
	return update(C, n, TFG_VAR_ADD);
}

int
cpu_emit_assign_sub(CgCtx *C, IrNode *n)
{
	return update(C, n, TFG_VAR_SUB);
}

/* scatter_add, scatter_update: tfg_rt_scatter(ctx, var, op, ids, n,
 * rows, n's slot). */
int
cpu_emit_scatter(CgCtx *C, IrNode *n)
{
	LLVMTypeRef p[7] = {C->ptr, C->i32, C->i32, C->ptr, C->i64, C->ptr,
			    C->ptr};
	LLVMTypeRef fty = LLVMFunctionType(C->i32, p, 7, 0);
	LLVMValueRef f, args[7];
	uint32_t op = (n->op == OP_scatter_add ? TFG_VAR_SCATTER_ADD :
		       n->op == OP_gather_var ? TFG_VAR_GATHER
					      : TFG_VAR_SCATTER_SET) |
		      (n->drop ? TFG_VAR_DROP : 0);

	if (!n->var || n->nin != (n->op == OP_gather_var ? 1 : 2) ||
	    n->in[0]->shape.rank != 1 || n->in[0]->dtype != TFG_I64)
		return cg_fail(C, n, "scatter: malformed node");
	if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_scatter")))
		f = LLVMAddFunction(C->m, "tfg_rt_scatter", fty);
	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(C->i32, (unsigned long long)n->var->index, 0);
	args[2] = LLVMConstInt(C->i32, op, 0);
	args[3] = cg_buf(C, n->in[0]);
	args[4] = cg_i64c(C, n->in[0]->shape.dims[0]);
	args[5] = n->nin > 1 ? cg_buf(C, n->in[1]) : LLVMConstNull(C->ptr);
	args[6] = n->op == OP_gather_var || C->rt_check || read_later(C)
			  ? cg_buf(C, n) : LLVMConstNull(C->ptr);
	cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 7, "rc"));
	return 0;
}

/* gather_var: tfg_rt_scatter's TFG_VAR_GATHER, the rows to n's slot. */
int
cpu_emit_gather_var(CgCtx *C, IrNode *n)
{
	return cpu_emit_scatter(C, n);
}

int
cpu_emit_var_initialized(CgCtx *C, IrNode *n)
{
	return var_call(C, n, TFG_VAR_INITED, NULL);
}

/* A random maker's draw number (codegen/cpu_make.c reads it). */
int
cpu_emit_random_draw(CgCtx *C, IrNode *n)
{
	return var_call(C, n, TFG_VAR_DRAW, NULL);
}

/* tfg_rt_apply (OP_apply) or tfg_rt_apply_rows (OP_apply_rows): the
 * update of n->var by n->opt. */
static int
apply_call(CgCtx *C, IrNode *n, int rows)
{
	static const uint32_t kind[IR_OPT__COUNT] = {
		[IR_OPT_SGD] = TFG_OPT_SGD, [IR_OPT_MOMENTUM] = TFG_OPT_MOMENTUM,
		[IR_OPT_ADAM] = TFG_OPT_ADAM, [IR_OPT_ADAGRAD] = TFG_OPT_ADAGRAD,
		[IR_OPT_FTRL] = TFG_OPT_FTRL,
	};
	LLVMValueRef args[9], *a = args;
	LLVMValueRef *f = rows ? &C->rt_apply_rows : &C->rt_apply;
	LLVMTypeRef *ft = rows ? &C->rt_apply_rows_ty : &C->rt_apply_ty;

	if (!n->var || !n->opt || n->nin != 2 + rows)
		return cg_fail(C, n, "an update without its variable");
	if (!*f) {
		LLVMTypeRef p[9] = {C->ptr, C->i32, C->i32, C->i32, C->ptr,
				    C->i64, C->ptr, C->ptr, C->ptr};

		if (!rows) /* no ids and count */
			memmove(p + 4, p + 6, 3 * sizeof *p);
		*ft = LLVMFunctionType(C->i32, p, rows ? 9 : 7, 0);
		*f = LLVMAddFunction(C->m, rows ? "tfg_rt_apply_rows" :
				     "tfg_rt_apply", *ft);
	}
	*a++ = C->ctx_arg;
	*a++ = LLVMConstInt(C->i32, (unsigned long long)n->var->index, 0);
	*a++ = LLVMConstInt(C->i32, kind[n->opt->kind] |
			    (n->opt->sync ? TFG_OPT_SYNC : 0), 0);
	*a++ = LLVMConstInt(C->i32, n->opt->nslot ? (unsigned long long)
				    n->opt->slot[0]->index : 0, 0);
	if (rows) {
		*a++ = cg_buf(C, n->in[2]);
		*a++ = LLVMConstInt(C->i64, (unsigned long long)
				    n->in[2]->shape.dims[0], 0);
	}
	*a++ = cg_buf(C, n->in[0]);
	*a++ = cg_buf(C, n->in[1]);
	*a++ = cg_buf(C, n);
	cg_check_rc(C, LLVMBuildCall2(C->b, *ft, *f, args, (unsigned)(a - args),
				      "rc"));
	return 0;
}

int
cpu_emit_apply(CgCtx *C, IrNode *n)
{
	return apply_call(C, n, 0);
}

int
cpu_emit_apply_rows(CgCtx *C, IrNode *n)
{
	return apply_call(C, n, 1);
}

/* OP_check_range of indices (IR_RANGE_INDEX): tfg_rt_check_index on
 * them, named as the gather they feed names its own, then their value. */
static int
check_index(CgCtx *C, IrNode *n)
{
	LLVMTypeRef ps[6] = {C->ptr, C->ptr, C->i32, C->i64, C->i64, C->ptr};
	LLVMTypeRef fty = LLVMFunctionType(C->i32, ps, 6, 0);
	LLVMValueRef f, args[6];
	char label[256];

	if (n->nin != 1 || n->in[0]->dtype != n->dtype ||
	    (n->dtype != TFG_I32 && n->dtype != TFG_I64))
		return cg_fail(C, n, "check_range: malformed node");
	const char *fn = n->make->i[0] == IR_RANGE_SORTED ?
			 "tfg_rt_check_sorted" : "tfg_rt_check_index";

	snprintf(label, sizeof label, "'%s' at %s:%u:%u",
		 n->make->i[0] == IR_RANGE_SORTED ? "segment_sum" :
		 n->make->axis > 0 && n->make->axis < OP__COUNT
		 ? op_info[n->make->axis].name : "gather",
		 n->loc.file ? n->loc.file->path : "?", n->loc.line,
		 n->loc.col);
	if (!(f = LLVMGetNamedFunction(C->m, fn)))
		f = LLVMAddFunction(C->m, fn, fty);
	args[0] = C->ctx_arg;
	args[1] = cg_buf(C, n->in[0]);
	args[2] = LLVMConstInt(C->i32, (unsigned)n->dtype, 0);
	args[3] = cg_i64c(C, tfg_shape_numel(&n->shape));
	args[4] = cg_i64c(C, n->make->i[1]);
	args[5] = LLVMBuildGlobalStringPtr(C->b, label, "");
	cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 6, "rc"));
	LLVMBuildMemCpy(C->b, cg_buf(C, n), CG_SLOT_ALIGN, cg_buf(C, n->in[0]),
			1, cg_i64c(C, (int64_t)ir_nbytes(n)));
	return 0;
}

/* OP_check_range: tfg_rt_check_range on the input, the step failing
 * there when it is out of its interval; then the input's value. */
int
cpu_emit_check_range(CgCtx *C, IrNode *n)
{
	static const char *const what[] = {"a value", "the keep_prob of "
					   "'dropout'", "the rate of "
					   "'dropout'"};
	LLVMTypeRef dt = LLVMDoubleTypeInContext(C->c);
	LLVMTypeRef ps[7] = {C->ptr, C->ptr, C->i32, dt, dt, C->i32, C->ptr};
	LLVMTypeRef fty = LLVMFunctionType(C->i32, ps, 7, 0);
	LLVMValueRef f, args[7];
	const IrMake *m = n->make;
	char label[256];
	int w;

	if (m && (m->i[0] == IR_RANGE_INDEX || m->i[0] == IR_RANGE_SORTED))
		return check_index(C, n);
	if (!m || n->nin != 1 || n->shape.rank != 0 ||
	    n->in[0]->dtype != n->dtype ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64))
		return cg_fail(C, n, "check_range: malformed node");
	w = m->i[0] >= 0 && m->i[0] <= IR_RANGE_RATE ? (int)m->i[0] : 0;
	snprintf(label, sizeof label, "%s%s%s%s at %s:%u:%u", what[w],
		 n->in[0]->name ? " ('" : "",
		 n->in[0]->name ? n->in[0]->name : "",
		 n->in[0]->name ? "')" : "",
		 n->loc.file ? n->loc.file->path : "?", n->loc.line,
		 n->loc.col);
	if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_check_range")))
		f = LLVMAddFunction(C->m, "tfg_rt_check_range", fty);
	args[0] = C->ctx_arg;
	args[1] = cg_buf(C, n->in[0]);
	args[2] = LLVMConstInt(C->i32, (unsigned)n->dtype, 0);
	args[3] = LLVMConstReal(dt, m->f[0]);
	args[4] = LLVMConstReal(dt, m->f[1]);
	args[5] = LLVMConstInt(C->i32, (unsigned long long)m->i[1], 0);
	args[6] = LLVMBuildGlobalStringPtr(C->b, label, "");
	cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 7, "rc"));
	LLVMBuildMemCpy(C->b, cg_buf(C, n), CG_SLOT_ALIGN, cg_buf(C, n->in[0]),
			1, cg_i64c(C, (int64_t)ir_nbytes(n)));
	return 0;
}

int
cpu_emit_after(CgCtx *C, IrNode *n)
{
	if (ir_nbytes(n))
		LLVMBuildMemCpy(C->b, cg_buf(C, n), CG_SLOT_ALIGN,
				cg_buf(C, n->in[0]), 1,
				cg_i64c(C, (int64_t)ir_nbytes(n)));
	return 0;
}
