/*
 * codegen/cpu.c: the CPU backend (cg_cpu_backend): the nodes of a
 * task's parts that compute in host memory, as LLVM IR in the part
 * functions codegen/module.c builds, through a dispatch table built from
 * stdlib/ops.def's cpu column (declared from the same list in cg_int.h,
 * so an emitter that nothing defines fails to link); the elementwise
 * arithmetic every CPU emitter and fused group shares.
 * Every node except OP_const and OP_send owns a 64-byte-aligned slot of
 * the arena, at offsets planned by codegen/memplan.c (nodes not live at
 * the same time share memory); constants become private globals.
 *
 * Tensor ops become loop nests (codegen/cpu_nest.c): the output's index
 * space in row-major order, one i64 element offset per operand, stride 0
 * on broadcast axes, emitted as calls of outlined kernel functions that
 * nests with the same code share.
 *
 * Integer / and % never trap: the divisor is replaced by 1 where it is 0
 * or where INT_MIN / -1 would overflow, and the results fixed up with
 * selects (spec/design.md, Language decisions).  Integer pow is a small
 * square-and-multiply loop inside the element loop, and never traps
 * either.
 *
 * Elementwise functions (spec §6.8 "Unary elementwise functions" to
 * §6.12 "cast") use LLVM intrinsics where they are exact (sqrt, fabs, maximum,
 * minimum).  exp, log, tanh and sigmoid of f32 and f64 are inline IR that
 * vectorises (codegen/vmath.c); pow (and log_softmax's log per row,
 * random_normal's log and cos) call libm, declared here without memory effects
 * since errno is never read; codegen/jit.c lets exactly these resolve from the
 * process.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_int.h"

/* --------------------------------------------------- integer arithmetic */

/* Floor division and floor modulo that never trap: x/0 = x%0 = 0,
 * MIN/-1 = MIN, MIN%-1 = 0.  want_mod selects which result.  The IR of
 * runtime/tensor.c's tfg_int_div and tfg_int_mod, step for step (the
 * folder and the session evaluator call those; codegen_test holds the
 * three to one table). */
LLVMValueRef
cg_int_divmod(CgCtx *C, LLVMValueRef a, LLVMValueRef b, int want_mod)
{
	LLVMBuilderRef B = C->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	unsigned bits = LLVMGetIntTypeWidth(ty);
	LLVMValueRef zero = LLVMConstNull(ty), one = LLVMConstInt(ty, 1, 0);
	LLVMValueRef m1 = LLVMConstAllOnes(ty);
	LLVMValueRef min = LLVMConstInt(ty, 1ull << (bits - 1), 0);
	LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
	LLVMValueRef ovf = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, a, min, ""),
					LLVMBuildICmp(B, LLVMIntEQ, b, m1, ""), "");
	LLVMValueRef d = LLVMBuildSelect(B, LLVMBuildOr(B, bz, ovf, ""), one, b,
					 "");
	LLVMValueRef q = LLVMBuildSDiv(B, a, d, "");
	LLVMValueRef r = LLVMBuildSub(B, a, LLVMBuildMul(B, q, d, ""), "");
	/* round toward -inf: r != 0 and sign(r) != sign(b) */
	LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
		LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), zero, ""),
		"");
	if (want_mod)
		return LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, b, ""), r, "");
	q = LLVMBuildSelect(B, adj, LLVMBuildSub(B, q, one, ""), q, "");
	return LLVMBuildSelect(B, bz, zero, q, "");
}

/* Unsigned division and remainder (u8): x/0 = x%0 = 0, never trapping;
 * floor and truncation agree on non-negative numbers. */
static LLVMValueRef
uint_divmod(CgCtx *C, LLVMValueRef a, LLVMValueRef b, int want_mod)
{
	LLVMBuilderRef B = C->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	LLVMValueRef zero = LLVMConstNull(ty), one = LLVMConstInt(ty, 1, 0);
	LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
	LLVMValueRef d = LLVMBuildSelect(B, bz, one, b, "");
	LLVMValueRef r = want_mod ? LLVMBuildURem(B, a, d, "")
				  : LLVMBuildUDiv(B, a, d, "");
	return LLVMBuildSelect(B, bz, zero, r, "");
}

/* NumPy's float %: fmod, moved to the divisor's sign; a zero result
 * takes the divisor's sign too. */
static LLVMValueRef
float_mod(CgCtx *C, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef B = C->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	LLVMValueRef zero = LLVMConstNull(ty);
	LLVMValueRef r = LLVMBuildFRem(B, a, b, "");
	LLVMValueRef nz = LLVMBuildFCmp(B, LLVMRealUNE, r, zero, "");
	LLVMValueRef flip = LLVMBuildXor(B,
		LLVMBuildFCmp(B, LLVMRealOLT, r, zero, ""),
		LLVMBuildFCmp(B, LLVMRealOLT, b, zero, ""), "");
	LLVMValueRef r1 = LLVMBuildSelect(B, flip, LLVMBuildFAdd(B, r, b, ""),
					  r, "");
	unsigned id = LLVMLookupIntrinsicID("llvm.copysign", 13);
	LLVMValueRef cs = LLVMGetIntrinsicDeclaration(C->m, id, &ty, 1);
	LLVMValueRef args[2] = {zero, b};
	LLVMValueRef z = LLVMBuildCall2(B, LLVMIntrinsicGetType(C->c, id, &ty, 1),
					cs, args, 2, "");
	return LLVMBuildSelect(B, nz, r1, z, "");
}

/* ------------------------------------------------ elementwise functions */

/* name (f64) or name + "f" (f32) from libm, declared once per module.
 * No memory effects: errno is never read, and LLVM may then hoist or
 * drop calls like any arithmetic. */
LLVMValueRef
cg_libm_call(CgCtx *C, const char *name, LLVMValueRef *args, unsigned nargs)
{
	LLVMTypeRef ty = LLVMTypeOf(args[0]), params[2] = {ty, ty};
	LLVMTypeRef fty = LLVMFunctionType(ty, params, nargs, 0);
	char fn[16];
	snprintf(fn, sizeof fn, "%s%s", name, ty == C->f32 ? "f" : "");
	LLVMValueRef f = LLVMGetNamedFunction(C->m, fn);
	if (!f) {
		f = LLVMAddFunction(C->m, fn, fty);
		cg_enum_attr(C, f, LLVMAttributeFunctionIndex, "nounwind", 0);
		cg_enum_attr(C, f, LLVMAttributeFunctionIndex, "willreturn", 0);
		cg_enum_attr(C, f, LLVMAttributeFunctionIndex, "memory", 0);
	}
	return LLVMBuildCall2(C->b, fty, f, args, nargs, "");
}

/* llvm.<name> overloaded on its first argument's type. */
LLVMValueRef
cg_intrinsic(CgCtx *C, const char *name, LLVMValueRef *args, unsigned nargs)
{
	LLVMTypeRef ty = LLVMTypeOf(args[0]);
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(C->m, id, &ty, 1);
	return LLVMBuildCall2(C->b, LLVMIntrinsicGetType(C->c, id, &ty, 1), f,
			      args, nargs, "");
}

/* The float d in the type of x (a scalar or a vector of floats). */
static LLVMValueRef
float_like(LLVMValueRef x, double d)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef e[64];
	unsigned n;

	if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind)
		return LLVMConstReal(ty, d);
	n = LLVMGetVectorSize(ty);
	for (unsigned i = 0; i < n && i < 64; i++)
		e[i] = LLVMConstReal(LLVMGetElementType(ty), d);
	return LLVMConstVector(e, n);
}

/* softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1], inline
 * (spec §6.8 "Unary elementwise functions"): log1p(e) is log(u) e / (u -
 * 1) with u = 1 + e, which cancels u's rounding, and e itself where u
 * rounds to 1; NaN stays NaN, +-inf give inf and 0. */
static LLVMValueRef
softplus(CgCtx *C, TfgDtype t, LLVMValueRef x)
{
	LLVMBuilderRef B = C->b;
	LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(x)), one, e, u, l, m;
	LLVMValueRef ax = cg_intrinsic(C, "llvm.fabs", &x, 1);

	one = float_like(x, 1.0);
	ax = LLVMBuildFNeg(B, ax, "");
	e = t == TFG_F32 ? cg_vexp(C, ax) : cg_vexp64(C, ax);
	u = LLVMBuildFAdd(B, one, e, "");
	l = t == TFG_F32 ? cg_vlog(C, u) : cg_vlog64(C, u);
	l = LLVMBuildFDiv(B, LLVMBuildFMul(B, l, e, ""),
			  LLVMBuildFSub(B, u, one, ""), "");
	l = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, u, one, ""), e,
			    l, "");
	m = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, zero, ""), x,
			    zero, "");
	return LLVMBuildFAdd(B, m, l, "");
}

/* op applied to a, of dtype t (bool only for logical_not: the checker
 * refuses the others). */
LLVMValueRef
cg_unary(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef a)
{
	LLVMBuilderRef B = C->b;
	LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(a));
	if (t == TFG_F32) /* inline, vectorisable (codegen/vmath.c) */
		switch (op) {
		case OP_exp: return cg_vexp(C, a);
		case OP_log: return cg_vlog(C, a);
		case OP_tanh: return cg_vtanh(C, a);
		case OP_sigmoid: return cg_vsigmoid(C, a);
		case OP_softplus: return softplus(C, t, a);
		default: break;
		}
	if (t == TFG_F64)
		switch (op) {
		case OP_exp: return cg_vexp64(C, a);
		case OP_log: return cg_vlog64(C, a);
		case OP_tanh: return cg_vtanh64(C, a);
		case OP_sigmoid: return cg_vsigmoid64(C, a);
		case OP_softplus: return softplus(C, t, a);
		default: break;
		}
	switch (op) {
	case OP_exp: return cg_libm_call(C, "exp", &a, 1);
	case OP_log: return cg_libm_call(C, "log", &a, 1);
	case OP_sqrt: return cg_intrinsic(C, "llvm.sqrt", &a, 1);
	case OP_tanh: return cg_libm_call(C, "tanh", &a, 1);
	case OP_relu: /* NaN stays NaN, -0.0 becomes 0.0 */
		if (t == TFG_U8) /* relu and abs of u8: itself */
			return a;
		if (cg_is_float(t))
			return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLE,
						a, zero, ""), zero, a, "");
		return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, zero,
							""), a, zero, "");
	case OP_abs: /* abs(MIN) wraps to MIN */
		if (t == TFG_U8)
			return a;
		if (cg_is_float(t))
			return cg_intrinsic(C, "llvm.fabs", &a, 1);
		return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, zero,
							""),
				       LLVMBuildSub(B, zero, a, ""), a, "");
	case OP_logical_not: /* bool: 0/1 */
		return LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntEQ, a, zero, ""),
				     LLVMTypeOf(a), "");
	default: return a;
	}
}

/* a ** b on integers by square-and-multiply, wrapping; b < 0 gives 0
 * except 1 ** b = 1 and (-1) ** b = +-1 (spec §6.9 "pow, maximum, minimum").
 * The loop runs at most as many times as b has bits.  Unsigned (u8): b is
 * never negative. */
static LLVMValueRef
int_pow(CgCtx *C, LLVMValueRef a, LLVMValueRef b, int uns)
{
	LLVMBuilderRef B = C->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	LLVMValueRef zero = LLVMConstNull(ty), one = LLVMConstInt(ty, 1, 0);
	LLVMValueRef m1 = LLVMConstAllOnes(ty);
	LLVMValueRef neg = uns ? LLVMConstInt(C->i1, 0, 0)
			       : LLVMBuildICmp(B, LLVMIntSLT, b, zero, "");
	LLVMValueRef e0 = LLVMBuildSelect(B, neg, zero, b, "");
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "pow");
	LLVMBasicBlockRef step = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "pow.step");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "pow.done");
	LLVMBuildBr(B, head);
	LLVMPositionBuilderAtEnd(B, head);
	LLVMValueRef r = LLVMBuildPhi(B, ty, "r");
	LLVMValueRef x = LLVMBuildPhi(B, ty, "x");
	LLVMValueRef e = LLVMBuildPhi(B, ty, "e");
	LLVMAddIncoming(r, &one, &pre, 1);
	LLVMAddIncoming(x, &a, &pre, 1);
	LLVMAddIncoming(e, &e0, &pre, 1);
	LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, e, zero, ""), step,
			done);
	LLVMPositionBuilderAtEnd(B, step);
	LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE,
					 LLVMBuildAnd(B, e, one, ""), zero, "");
	LLVMValueRef r2 = LLVMBuildSelect(B, odd, LLVMBuildMul(B, r, x, ""), r,
					  "");
	LLVMValueRef x2 = LLVMBuildMul(B, x, x, "");
	LLVMValueRef e2 = LLVMBuildLShr(B, e, one, "");
	LLVMBuildBr(B, head);
	LLVMAddIncoming(r, &r2, &step, 1);
	LLVMAddIncoming(x, &x2, &step, 1);
	LLVMAddIncoming(e, &e2, &step, 1);
	LLVMPositionBuilderAtEnd(B, done);
	LLVMValueRef bodd = LLVMBuildICmp(B, LLVMIntNE,
					  LLVMBuildAnd(B, b, one, ""), zero, "");
	LLVMValueRef nr = LLVMBuildSelect(B,
		LLVMBuildICmp(B, LLVMIntEQ, a, one, ""), one,
		LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, m1, ""),
				LLVMBuildSelect(B, bodd, m1, one, ""), zero, ""),
		"");
	return LLVMBuildSelect(B, neg, nr, r, "");
}

/* hash_bucket (spec §6.38 "hash_bucket, sigmoid_cross_entropy"): the
 * i64 a's fingerprint, SplitMix64's output of its bits plus the golden
 * ratio's 2^64, as an unsigned number modulo b (1 or more: the
 * checker's constant). */
static LLVMValueRef
hash_bucket(CgCtx *C, LLVMValueRef a, LLVMValueRef b)
{
	static const unsigned long long mul[2] = {0xbf58476d1ce4e5b9ULL,
						  0x94d049bb133111ebULL};
	static const unsigned shift[3] = {30, 27, 31};
	LLVMBuilderRef B = C->b;
	LLVMTypeRef t = LLVMTypeOf(a);

	a = LLVMBuildAdd(B, a, LLVMConstInt(t, 0x9e3779b97f4a7c15ULL, 0), "");
	for (int i = 0; i < 3; i++) {
		a = LLVMBuildXor(B, a, LLVMBuildLShr(B, a, LLVMConstInt(
					 t, shift[i], 0), ""), "");
		if (i < 2)
			a = LLVMBuildMul(B, a, LLVMConstInt(t, mul[i], 0), "");
	}
	return LLVMBuildURem(B, a, b, "");
}

/* a cmp b as a bool (i8 0/1), both of dtype t: IEEE comparisons (NaN is
 * unequal to everything, != is true), signed integers, unsigned u8, bool
 * as 0/1. */
LLVMValueRef
cg_compare(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef a, LLVMValueRef b)
{
	static const LLVMRealPredicate fp[] = {
		[OP_equal] = LLVMRealOEQ, [OP_not_equal] = LLVMRealUNE,
		[OP_less] = LLVMRealOLT, [OP_less_equal] = LLVMRealOLE,
		[OP_greater] = LLVMRealOGT, [OP_greater_equal] = LLVMRealOGE};
	static const LLVMIntPredicate ip[] = {
		[OP_equal] = LLVMIntEQ, [OP_not_equal] = LLVMIntNE,
		[OP_less] = LLVMIntSLT, [OP_less_equal] = LLVMIntSLE,
		[OP_greater] = LLVMIntSGT, [OP_greater_equal] = LLVMIntSGE};
	static const LLVMIntPredicate up[] = {
		[OP_equal] = LLVMIntEQ, [OP_not_equal] = LLVMIntNE,
		[OP_less] = LLVMIntULT, [OP_less_equal] = LLVMIntULE,
		[OP_greater] = LLVMIntUGT, [OP_greater_equal] = LLVMIntUGE};
	LLVMValueRef r = cg_is_float(t) ? LLVMBuildFCmp(C->b, fp[op], a, b, "")
	    : LLVMBuildICmp(C->b, cg_is_unsigned(t) ? up[op] : ip[op], a, b,
			    "");
	return LLVMBuildZExt(C->b, r, C->i8, "");
}

/* a op b, both already of dtype t. */
LLVMValueRef
cg_arith(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef B = C->b;
	LLVMValueRef r, ab[2] = {a, b};
	int uns;
	if (cg_is_float(t)) {
		switch (op) {
		case OP_pow: return cg_libm_call(C, "pow", ab, 2);
		case OP_maximum: return cg_intrinsic(C, "llvm.maximum", ab, 2);
		case OP_minimum: return cg_intrinsic(C, "llvm.minimum", ab, 2);
		case OP_add: return LLVMBuildFAdd(B, a, b, "");
		case OP_sub: return LLVMBuildFSub(B, a, b, "");
		case OP_mul: return LLVMBuildFMul(B, a, b, "");
		case OP_div: return LLVMBuildFDiv(B, a, b, "");
		default: return float_mod(C, a, b);
		}
	}
	uns = cg_is_unsigned(t);
	switch (op) {
	case OP_add: r = LLVMBuildAdd(B, a, b, ""); break;
	case OP_sub: r = LLVMBuildSub(B, a, b, ""); break;
	case OP_mul: r = LLVMBuildMul(B, a, b, ""); break;
	case OP_div:
		r = uns ? uint_divmod(C, a, b, 0) : cg_int_divmod(C, a, b, 0);
		break;
	case OP_pow: r = int_pow(C, a, b, uns); break;
	case OP_hash_bucket: r = hash_bucket(C, a, b); break;
	case OP_logical_and: r = LLVMBuildAnd(B, a, b, ""); break;
	case OP_logical_or: r = LLVMBuildOr(B, a, b, ""); break;
	case OP_maximum:
		r = LLVMBuildSelect(B, LLVMBuildICmp(B, uns ? LLVMIntUGT
						     : LLVMIntSGT, a, b, ""),
				    a, b, "");
		break;
	case OP_minimum:
		r = LLVMBuildSelect(B, LLVMBuildICmp(B, uns ? LLVMIntULT
						     : LLVMIntSLT, a, b, ""),
				    a, b, "");
		break;
	default:
		r = uns ? uint_divmod(C, a, b, 1) : cg_int_divmod(C, a, b, 1);
		break;
	}
	/* bool (rejected by the checker): keep 0/1 */
	if (t == TFG_BOOL)
		r = LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntNE, r,
						   LLVMConstNull(C->i8), ""),
				  C->i8, "");
	return r;
}

/* ------------------------------------------------------------ emitters */

int
cpu_emit_const(CgCtx *C, IrNode *n)
{
	size_t nbytes = ir_nbytes(n); /* strings: records and text */
	/* raw bytes as [N x i8]: loads of any element type fold from it */
	LLVMValueRef init = n->data
	    ? LLVMConstStringInContext2(C->c, n->data, nbytes, 1)
	    : LLVMConstNull(LLVMArrayType2(C->i8, nbytes));
	LLVMValueRef g = LLVMAddGlobal(C->m, LLVMTypeOf(init),
				       n->name ? n->name : "const");
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	LLVMSetAlignment(g, CG_SLOT_ALIGN);
	C->val[C->cur] = g;
	return 0;
}

/* A feed or a recv: tfg_rt_recv_ref fills the node's slot, or says
 * where the value already is (a feed of the client's own part, which
 * stays put and unchanged for the step: runtime/rendezvous.c), and the
 * node's buffer is that from here on.  Nothing writes into a node's
 * input buffers (codegen/memplan.c gives no slot in place), so the
 * value is only read. */
int
cpu_emit_input(CgCtx *C, IrNode *n)
{
	if (!C->ref_slot)
		C->ref_slot = cg_entry_alloca(C, C->ptr, 8, "ref");
	LLVMValueRef args[4] = {C->ctx_arg, LLVMConstInt(C->i32, n->key, 0),
				cg_buf(C, n), C->ref_slot};
	cg_check_rc(C, LLVMBuildCall2(C->b, C->rt_ref_ty, C->rt_recv_ref,
				      args, 4, "rc"));
	C->val[C->cur] = LLVMBuildLoad2(C->b, C->ptr, C->ref_slot,
					n->name ? n->name : "");
	return 0;
}

/* A send, or with a second input (the ids that count its rows,
 * spec/design.md "Counted edges") tfg_rt_send_rows. */
int
cpu_emit_send(CgCtx *C, IrNode *n)
{
	LLVMTypeRef ps[5] = {C->ptr, C->i32, C->ptr, C->ptr, C->i64};
	LLVMTypeRef fty = LLVMFunctionType(C->i32, ps, 5, 0);
	LLVMValueRef f;

	if (n->nin != 1 && (n->nin != 2 || n->in[1]->dtype != TFG_I64 ||
			    n->in[0]->shape.rank < 1 ||
			    n->in[1]->shape.rank != 1))
		return cg_fail(C, n, "send needs one input, or a value and "
			       "the ids that count its rows");
	LLVMValueRef args[5] = {C->ctx_arg, LLVMConstInt(C->i32, n->key, 0),
				cg_buf(C, n->in[0]), NULL, NULL};
	if (n->nin == 1) {
		cg_check_rc(C, LLVMBuildCall2(C->b, C->rt_ty, C->rt_send, args,
					      3, "rc"));
		return 0;
	}
	if (!(f = LLVMGetNamedFunction(C->m, "tfg_rt_send_rows")))
		f = LLVMAddFunction(C->m, "tfg_rt_send_rows", fty);
	args[3] = cg_buf(C, n->in[1]);
	args[4] = cg_i64c(C, n->in[1]->shape.dims[0]);
	cg_check_rc(C, LLVMBuildCall2(C->b, fty, f, args, 5, "rc"));
	return 0;
}

/* A copy never gets here: codegen/module.c hands every copy to the GPU
 * backend (codegen/cuda.c), which moves values between memories. */
int
cpu_emit_none(CgCtx *C, IrNode *n)
{
	return cg_fail(C, n, "no CPU emitter for this op");
}

/* OP_grad never gets here: compiler/autodiff.c expands every one into
 * its backward graph before placement. */
int
cpu_emit_grad(CgCtx *C, IrNode *n)
{
	return cg_fail(C, n, "grad not expanded");
}

/* One element of any elementwise node: its inputs loaded, then computed
 * by cg_elem_apply, the same code fused groups use (codegen/cpu_fuse.c). */
static LLVMValueRef
body_elem(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	LLVMValueRef v[CG_MAX_OPS];
	TfgDtype it[CG_MAX_OPS];

	for (int k = 0; k < n->nin; k++) {
		it[k] = n->in[k]->dtype;
		v[k] = cg_load_at(C, it[k], L->base[k + 1], off[k + 1]);
	}
	cg_store_at(C, n->dtype, L->base[0], off[0],
		    cg_elem_apply(C, n->op, n->dtype, it, v));
	return acc;
}

LLVMValueRef
cg_body_copy(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	TfgDtype it = L->n->in[0]->dtype, t = L->n->dtype;
	LLVMValueRef v = cg_load_at(C, it, L->base[1], off[1]);
	cg_store_at(C, t, L->base[0], off[0], cg_cvt(C, v, it, t));
	return acc;
}

/* One loop nest over n's shape; each of the nin inputs is broadcast to
 * it (spec §6.1 "Broadcasting") and body computes one element. */
int
cg_emit_elem(CgCtx *C, IrNode *n, int nin, NestBody body)
{
	Nest L = {0};
	if (n->nin != nin || nin + 1 > CG_MAX_OPS)
		return cg_fail(C, n, "wrong number of inputs");
	for (int k = 0; k < nin; k++)
		if (n->in[k]->shape.rank > n->shape.rank)
			return cg_fail(C, n, "input rank above output rank");
	L.rank = n->shape.rank;
	memcpy(L.dim, n->shape.dims, sizeof L.dim);
	L.nop = nin + 1;
	L.n = n;
	L.body = body;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	/* a body with inputs stores its result at off[0] and reads off[0]
	   for nothing else; makers (no inputs, codegen/cpu_make.c) compute
	   their value from it, the element's index, and so do the random
	   makers, whose one input is their draw number */
	if (nin > 0 && n->op != OP_random_uniform &&
	    n->op != OP_random_normal)
		L.flags |= CG_NEST_STREAM;
	L.base[0] = cg_buf(C, n);
	cg_nest_broadcast(&L, 0, &n->shape);
	for (int k = 0; k < nin; k++) {
		L.base[k + 1] = cg_buf(C, n->in[k]);
		cg_nest_broadcast(&L, k + 1, &n->in[k]->shape);
	}
	cg_nest_emit(C, &L);
	return 0;
}

/* Every elementwise op (stdlib/ops.def's cpu column): one loop nest
 * whose element is cg_elem_apply's. */
int
cpu_emit_elem(CgCtx *C, IrNode *n)
{
	return cg_emit_elem(C, n, op_info[n->op].nin, body_elem);
}

/* A strided copy over the input's index space: out is row-major over
 * size[] (squeezed axes have size 1, so dropping them keeps the order). */
int
cpu_emit_slice(CgCtx *C, IrNode *n)
{
	Nest L = {0};
	int64_t ist[TFG_MAX_RANK], m = 1, o0 = 0;
	if (n->nin != 1)
		return cg_fail(C, n, "slice needs one input");
	const IrNode *in = n->in[0];
	cg_row_major(&in->shape, ist);
	for (int k = in->shape.rank - 1; k >= 0; k--) {
		int64_t b = n->ax->begin[k], s = n->ax->size[k];
		if (b < 0 || s < 0 || b + s > in->shape.dims[k] ||
		    (((n->ax->squeeze >> k) & 1) && s != 1))
			return cg_fail(C, n, "slice out of the input's bounds");
		L.dim[k] = s;
		L.stride[0][k] = m;
		L.stride[1][k] = ist[k];
		o0 += b * ist[k];
		m *= s;
	}
	if (m != tfg_shape_numel(&n->shape))
		return cg_fail(C, n, "slice output shape does not match sizes");
	L.rank = in->shape.rank;
	L.nop = 2;
	L.n = n;
	L.body = cg_body_copy;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = cg_buf(C, n);
	LLVMValueRef o = cg_i64c(C, o0);
	L.base[1] = LLVMBuildInBoundsGEP2(C->b, cg_elty(C, in->dtype),
					  cg_buf(C, in), &o, 1, "");
	cg_nest_emit(C, &L);
	return 0;
}

/* ------------------------------------------------------------ backend */

typedef int (*CpuEmitFn)(CgCtx *C, IrNode *n);

/* The emitter of every op: stdlib/ops.def's cpu column. */
static const CpuEmitFn cpu_emit[OP__COUNT] = {
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	[OP_##name] = cpu,
#include "stdlib/ops.def"
};

/* One node in host memory, by its op's emitter. */
static int
cpu_emit_node(CgCtx *C, IrNode *n)
{
	return cpu_emit[n->op](C, n);
}

/* After the module: the shared kernels' table (cpu_nest.c). */
static void
cpu_done(CgCtx *C)
{
	cg_kernels_free(C);
}

const CgBackend cg_cpu_backend = {"cpu", NULL, cpu_done, NULL,
				  cpu_emit_node};
