/*
 * codegen/cpu_make.c: the emitters of the makers
 * (spec §6.13 "zeros, ones, fill" to §6.17 "random_uniform, random_normal"):
 * zeros ones fill zeros_like ones_like range one_hot random_uniform
 * random_normal.  Their static arguments come in IrNode.make
 * (compiler/ops_make.c); each is one loop nest over the output (cg_emit_elem),
 * whose element offset is also the element's index.
 *
 * one_hot walks the output with a third, load-free operand whose offset
 * is the position along the depth axis (stride 1 there, 0 elsewhere), so
 * the nest's axis merging stays correct and the body is a compare and a
 * select.
 *
 * The random makers are Philox-4x32-10 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC'11), inlined as integer IR: element i
 * is the block of counter (i mod 2^32, i >> 32, stream, draw mod 2^32),
 * i counted from IrMake.first (0 but in a partitioned variable's shard),
 * under key (seed mod 2^32, seed >> 32), where draw, the maker's input
 * (OP_random_draw, an i64 scalar), is how many times it ran before on its
 * task (spec §6.17 "random_uniform, random_normal").  Given the draw, no
 * state: any task and any loop order computes the same numbers, and the loop
 * vectorises (the normal's log and cos are libm calls, as exp is in
 * codegen/cpu.c).
 */
#include <string.h>

#include "codegen/cg_int.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* key bumps: golden ratio, sqrt(3) - 1 */
#define PHILOX_W1 0xBB67AE85u

/* m[k] as a constant of dtype t. */
static LLVMValueRef
arg_const(CgCtx *C, TfgDtype t, const IrMake *m, int k)
{
	if (cg_is_float(t))
		return LLVMConstReal(cg_elty(C, t), m->f[k]);
	return LLVMConstInt(cg_elty(C, t), (unsigned long long)m->i[k], 1);
}

/* -------------------------------------------------------- fill, ones ... */

static LLVMValueRef
body_fill(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	cg_store_at(C, n->dtype, L->base[0], off[0],
		    arg_const(C, n->dtype, n->make, 0));
	return acc;
}

int
cpu_emit_fill(CgCtx *C, IrNode *n)
{
	if (!n->make)
		return cg_fail(C, n, "maker without its arguments");
	if (n->nin == 1) /* fill(shape, scalar tensor) */
		return cg_emit_elem(C, n, 1, cg_body_copy);
	return cg_emit_elem(C, n, 0, body_fill);
}


/* ---------------------------------------------------------------- range */

/* out[i] = start + i * delta: wrapping in i64 for integers, in f64 for
 * floats (f32 rounded once at the end), so no error accumulates. */
static LLVMValueRef
body_range(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMBuilderRef B = C->b;
	const IrNode *n = L->n;
	const IrMake *m = n->make;
	TfgDtype t = n->dtype;
	LLVMValueRef v;

	if (cg_is_float(t)) {
		LLVMValueRef i = LLVMBuildUIToFP(B, off[0], C->f64, "");
		v = LLVMBuildFMul(B, i, LLVMConstReal(C->f64, m->f[1]), "");
		v = LLVMBuildFAdd(B, LLVMConstReal(C->f64, m->f[0]), v, "");
		v = cg_cvt(C, v, TFG_F64, t);
	} else {
		v = LLVMBuildMul(B, off[0], cg_i64c(C, m->i[1]), "");
		v = LLVMBuildAdd(B, cg_i64c(C, m->i[0]), v, "");
		v = cg_cvt(C, v, TFG_I64, t);
	}
	cg_store_at(C, t, L->base[0], off[0], v);
	return acc;
}

int
cpu_emit_range(CgCtx *C, IrNode *n)
{
	if (!n->make)
		return cg_fail(C, n, "maker without its arguments");
	return cg_emit_elem(C, n, 0, body_range);
}

/* -------------------------------------------------------------- one_hot */

static LLVMValueRef
body_one_hot(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	TfgDtype it = n->in[0]->dtype;
	LLVMValueRef x = cg_cvt(C, cg_load_at(C, it, L->base[1], off[1]), it,
				TFG_I64);
	/* an index outside [0, depth) equals no position: an all-off row */
	LLVMValueRef hit = LLVMBuildICmp(C->b, LLVMIntEQ, x, off[2], "");
	cg_store_at(C, n->dtype, L->base[0], off[0],
		    LLVMBuildSelect(C->b, hit, arg_const(C, n->dtype, n->make, 0),
				    arg_const(C, n->dtype, n->make, 1), ""));
	return acc;
}

int
cpu_emit_one_hot(CgCtx *C, IrNode *n)
{
	Nest L = {0};
	int64_t ist[TFG_MAX_RANK];
	if (n->nin != 1 || !n->make ||
	    n->shape.rank != n->in[0]->shape.rank + 1 || n->make->axis < 0 ||
	    n->make->axis >= n->shape.rank)
		return cg_fail(C, n, "one_hot: malformed node");
	const IrNode *in = n->in[0];
	int ax = n->make->axis;
	cg_row_major(&in->shape, ist);
	L.rank = n->shape.rank;
	memcpy(L.dim, n->shape.dims, sizeof L.dim);
	L.nop = 3;
	L.n = n;
	L.body = body_one_hot;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	cg_row_major(&n->shape, L.stride[0]);
	for (int k = 0, j = 0; k < L.rank; k++) {
		L.stride[1][k] = k == ax ? 0 : ist[j++];
		L.stride[2][k] = k == ax;
	}
	L.base[0] = cg_buf(C, n);
	L.base[1] = cg_buf(C, in);
	L.base[2] = LLVMConstNull(C->ptr); /* never loaded */
	cg_nest_emit(C, &L);
	return 0;
}

/* ----------------------------------------------------------- random */

static LLVMValueRef
c32(CgCtx *C, uint32_t v)
{
	return LLVMConstInt(C->i32, v, 0);
}

/* x * m as a 64-bit product: *hi, *lo its halves. */
static void
mulhilo(CgCtx *C, uint32_t m, LLVMValueRef x, LLVMValueRef *hi,
	LLVMValueRef *lo)
{
	LLVMBuilderRef B = C->b;
	LLVMValueRef p = LLVMBuildMul(B, LLVMConstInt(C->i64, m, 0),
				      LLVMBuildZExt(B, x, C->i64, ""), "");
	*lo = LLVMBuildTrunc(B, p, C->i32, "");
	*hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, p, cg_i64c(C, 32), ""), C->i32,
			     "");
}

/* The Philox-4x32-10 block of counter w[] under key (k0, k1), in place. */
static void
philox(CgCtx *C, LLVMValueRef *w, uint32_t k0, uint32_t k1)
{
	LLVMBuilderRef B = C->b;
	for (int r = 0; r < 10; r++) {
		LLVMValueRef hi0, lo0, hi1, lo1;
		if (r > 0)
			k0 += PHILOX_W0, k1 += PHILOX_W1;
		mulhilo(C, PHILOX_M0, w[0], &hi0, &lo0);
		mulhilo(C, PHILOX_M1, w[2], &hi1, &lo1);
		w[0] = LLVMBuildXor(B, LLVMBuildXor(B, hi1, w[1], ""),
				    c32(C, k0), "");
		w[1] = lo1;
		w[2] = LLVMBuildXor(B, LLVMBuildXor(B, hi0, w[3], ""),
				    c32(C, k1), "");
		w[3] = lo0;
	}
}

/* (hi << 32 | lo) as i64. */
static LLVMValueRef
join64(CgCtx *C, LLVMValueRef hi, LLVMValueRef lo)
{
	LLVMBuilderRef B = C->b;
	return LLVMBuildOr(B, LLVMBuildShl(B, LLVMBuildZExt(B, hi, C->i64, ""),
					   cg_i64c(C, 32), ""),
			   LLVMBuildZExt(B, lo, C->i64, ""), "");
}

/* A uniform float of type ty (f32: 24 bits of hi, f64: 53 of hi:lo) in
 * [0, 1), or in (0, 1] with plus1; exact. */
static LLVMValueRef
unit(CgCtx *C, LLVMTypeRef ty, LLVMValueRef hi, LLVMValueRef lo, int plus1)
{
	LLVMBuilderRef B = C->b;
	int f32 = ty == C->f32;
	LLVMValueRef bits = f32
	    ? LLVMBuildZExt(B, LLVMBuildLShr(B, hi, c32(C, 8), ""), C->i64, "")
	    : LLVMBuildLShr(B, join64(C, hi, lo), cg_i64c(C, 11), "");
	if (plus1)
		bits = LLVMBuildAdd(B, bits, cg_i64c(C, 1), "");
	return LLVMBuildFMul(B, LLVMBuildUIToFP(B, bits, ty, ""),
			     LLVMConstReal(ty, f32 ? 0x1p-24 : 0x1p-53), "");
}

/* Element i's value: see the spec's formulas
 * (§6.17 "random_uniform, random_normal"). */
static LLVMValueRef
body_random(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	LLVMBuilderRef B = C->b;
	const IrNode *n = L->n;
	const IrMake *m = n->make;
	TfgDtype t = n->dtype;
	LLVMTypeRef ty = cg_elty(C, t);
	LLVMValueRef w[4], v;

	LLVMValueRef i = m->first ? LLVMBuildAdd(B, off[0],
						 cg_i64c(C, m->first), "")
				  : off[0];

	w[0] = LLVMBuildTrunc(B, i, C->i32, "");
	w[1] = LLVMBuildTrunc(B, LLVMBuildLShr(B, i, cg_i64c(C, 32), ""),
			      C->i32, "");
	w[2] = c32(C, m->stream);
	w[3] = n->nin == 1 ? LLVMBuildTrunc(B, cg_load_at(C, TFG_I64, L->base[1],
							   off[1]), C->i32, "")
			   : c32(C, 0);
	philox(C, w, (uint32_t)m->seed, (uint32_t)(m->seed >> 32));
	if (n->op == OP_random_normal) {
		/* Box-Muller in f64: u1 in (0, 1] so log(u1) is finite */
		LLVMTypeRef ut = t == TFG_F32 ? C->f32 : C->f64;
		LLVMValueRef u1 = cg_cvt(C, unit(C, ut, w[0], w[1], 1),
					 t, TFG_F64);
		LLVMValueRef u2 = cg_cvt(C, unit(C, ut, w[2], w[3], 0),
					 t, TFG_F64);
		LLVMValueRef r = cg_libm_call(C, "log", &u1, 1);
		r = LLVMBuildFMul(B, r, LLVMConstReal(C->f64, -2.0), "");
		r = cg_intrinsic(C, "llvm.sqrt", &r, 1);
		LLVMValueRef a = LLVMBuildFMul(B, u2, LLVMConstReal(C->f64,
					6.283185307179586476925286766559), "");
		LLVMValueRef z = LLVMBuildFMul(B, r, cg_libm_call(C, "cos", &a,
								   1), "");
		z = LLVMBuildFMul(B, z, LLVMConstReal(C->f64, m->f[1]), "");
		v = LLVMBuildFAdd(B, LLVMConstReal(C->f64, m->f[0]), z, "");
		v = cg_cvt(C, v, TFG_F64, t);
	} else if (cg_is_float(t)) {
		/* min + (max - min) * u, in t */
		LLVMValueRef u = unit(C, ty, w[0], w[1], 0);
		LLVMValueRef lo = arg_const(C, t, m, 0);
		LLVMValueRef span = LLVMBuildFSub(B, arg_const(C, t, m, 1), lo,
						  "");
		v = LLVMBuildFAdd(B, lo, LLVMBuildFMul(B, span, u, ""), "");
	} else {
		/* min + bits mod (max - min), unsigned, wrapping */
		LLVMValueRef bits = t == TFG_I32 ? w[0] : join64(C, w[0], w[1]);
		LLVMValueRef lo = arg_const(C, t, m, 0);
		LLVMValueRef span = LLVMBuildSub(B, arg_const(C, t, m, 1), lo,
						 "");
		v = LLVMBuildAdd(B, lo, LLVMBuildURem(B, bits, span, ""), "");
	}
	cg_store_at(C, t, L->base[0], off[0], v);
	return acc;
}

int
cpu_emit_random(CgCtx *C, IrNode *n)
{
	if (!n->make)
		return cg_fail(C, n, "maker without its arguments");
	return cg_emit_elem(C, n, n->nin, body_random);
}

