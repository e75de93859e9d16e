/*
 * codegen/cpu_shape.c: the emitters of the shape and matrix ops (spec
 * §6.18 "matmul and `@`" to §6.23 "size, shape, rank"), as loop nests
 * (cg_int.h Nest).
 *
 * transpose, reshape, concat and stack are strided copies: one nest over
 * the source's index space with the destination's strides permuted
 * (transpose), flat (reshape: both sides are row-major, so it is a plain
 * copy for now), or offset along the axis (concat and stack: one nest per
 * input).  slice and split are OP_slice (codegen/cpu.c).
 *
 * matmul is a plain loop nest, batch axes outside (a Nest, stride 0 on
 * broadcast batch axes), then i, k, j written out in body_matmul: the
 * output is zeroed, then out[i, j] += a[i, k] * b[k, j] with j innermost,
 * contiguous in out and b, so LLVM vectorises it.  Float products and
 * sums may fuse (spec §6.2 "Addition, subtraction, multiplication").
 *
 * Large f32/f64 products call tfg_rt_gemm instead (runtime/gemm.c:
 * OpenBLAS's cblas_sgemm/cblas_dgemm, cut over the kernel pool; spec
 * §6.18 "matmul and `@`"): row-major, no transpose, lda = k,
 * ldb = ldc = n, beta = 0, one call per batch element at the batch offsets
 * of the same Nest, or one call for the whole batch when b has no batch
 * axes and a all of them (then the batch is just more rows).  The rule,
 * measured with bench/matmul.sh on the 2-core machine (OpenBLAS 0.3.21,
 * loaded): m * n * k >= 32^3 and m >= 8.  BLAS wins from about 12^3 on square
 * products (2-3x from 32^3 on), and by 10x when n = 1, where the loop
 * does not vectorise; with fewer than 8 rows the loop streams b at
 * memory speed and OpenBLAS's packing and threads lose (3-5x at
 * [1..4, 1024] @ [1024, 1024]).  OpenBLAS runs on one thread: the
 * threads are the kernel pool's (runtime/pool.c, $TFG_THREADS).
 *
 * A matmul carrying an epilogue (compiler/pass_fuse.c: an elementwise
 * program whose anchor is the product element) is computed a block of
 * rows at a time into its output, and the program runs over each block
 * right after it, while the block is in cache, instead of as a separate
 * pass over memory: blocks of R rows with R * n elements in
 * EPI_BLOCK_BYTES (a share of the L3), each one tfg_rt_gemm call or, on
 * the loop path, one kernel over the block's rows (body_row_product)
 * whose sums keep the unfused order (bit-identical results).  The batch
 * is more rows when the plain product would be one GEMM and every input
 * the program reads walks the rows as one axis; else a loop over the
 * batch elements runs the blocks of each.
 */
#include <string.h>

#include "codegen/cg_int.h"

/* out = in, both of the node's dtype (the checker converts inputs). */
static LLVMValueRef
body_move(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	TfgDtype t = L->n->dtype;
	cg_store_at(C, t, L->base[0], off[0],
		    cg_load_at(C, t, L->base[1], off[1]));
	return acc;
}

static LLVMValueRef
body_zero(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	TfgDtype t = L->n->dtype;
	cg_store_at(C, t, L->base[0], off[0], LLVMConstNull(cg_elty(C, t)));
	return acc;
}

static void mm_dims(const IrNode *n, int64_t *m, int64_t *k, int64_t *nn);

/* o + a * b; float products and sums may fuse */
static LLVMValueRef
madd(CgCtx *C, TfgDtype t, LLVMValueRef o, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef p, s;
	if (!cg_is_float(t))
		return LLVMBuildAdd(C->b, o, LLVMBuildMul(C->b, a, b, ""), "");
	p = LLVMBuildFMul(C->b, a, b, "");
	s = LLVMBuildFAdd(C->b, o, p, "");
	LLVMSetFastMathFlags(p, LLVMFastMathAllowContract);
	LLVMSetFastMathFlags(s, LLVMFastMathAllowContract);
	return s;
}

static LLVMValueRef
add_mul(CgCtx *C, LLVMValueRef base, LLVMValueRef i, int64_t st)
{
	return LLVMBuildNSWAdd(C->b, base,
			       LLVMBuildNSWMul(C->b, i, cg_i64c(C, st), ""), "");
}

/* out[oo..] += a[ao..] @ b[bo..], m x k by k x nn, row-major unless
 * `trans` says an operand is read transposed (bit 0: a is k x m, bit 1:
 * b is nn x k; IrNode.trans), lda the row length of a as stored (k, or
 * the whole product's m when transposed): i, k, j loops with j innermost.  a[i, k]
 * is loaded once per j loop, which then only reads b and updates out: a
 * loop LLVM vectorises (with a runtime check that the two do not
 * overlap) when b is not transposed.  m, k, nn >= 1. */
static void
loop_product(CgCtx *C, TfgDtype t, LLVMValueRef out, LLVMValueRef oo,
	     LLVMValueRef a, LLVMValueRef ao, LLVMValueRef b, LLVMValueRef bo,
	     int64_t m, int64_t k, int64_t nn, int trans, int64_t lda)
{
	int64_t ai = trans & 1 ? 1 : lda, ak = trans & 1 ? lda : 1;
	int64_t bk = trans & 2 ? 1 : nn, bj = trans & 2 ? k : 1;
	Loop li, lk, lj;
	cg_loop_begin(C, &li, NULL);
	LLVMValueRef orow = add_mul(C, oo, li.i, nn);
	LLVMValueRef arow = add_mul(C, ao, li.i, ai);
	cg_loop_begin(C, &lk, NULL);
	LLVMValueRef av = cg_load_at(C, t, a, add_mul(C, arow, lk.i, ak));
	LLVMValueRef brow = add_mul(C, bo, lk.i, bk);
	cg_loop_begin(C, &lj, NULL);
	LLVMValueRef o = LLVMBuildNSWAdd(C->b, orow, lj.i, "");
	LLVMValueRef bv = cg_load_at(C, t, b, add_mul(C, brow, lj.i, bj));
	cg_store_at(C, t, out, o,
		    madd(C, t, cg_load_at(C, t, out, o), av, bv));
	cg_loop_end(C, &lj, nn, NULL);
	cg_loop_end(C, &lk, k, NULL);
	cg_loop_end(C, &li, m, NULL);
}

/* Node n's product at the operands' offsets off[], all its m rows or
 * (all = 0) one, in loop_product's order. */
static void
product_at(CgCtx *C, const Nest *L, LLVMValueRef *off, int all)
{
	const IrNode *n = L->n;
	int64_t m, k, nn;
	mm_dims(n, &m, &k, &nn);
	loop_product(C, n->dtype, L->base[0], off[0], L->base[1], off[1],
		     L->base[2], off[2], all ? m : 1, k, nn, n->trans,
		     n->trans & 1 ? m : k);
}

/* One product at the batch offsets off[]: m, k, n from the node; a rank-1
 * operand has m = 1 (left) or n = 1 (right), and the same row-major
 * strides hold. */
static LLVMValueRef
body_matmul(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	product_at(C, L, off, 1);
	return acc;
}

/* One row of an epilogue's block (epi_block, the loop path), in a
 * kernel as body_matmul's product is (the part function is glue,
 * compiled without optimisation: spec/design.md "Kernels").  Not
 * shared: the key does not cover n->trans. */
static LLVMValueRef
body_row_product(CgCtx *C, const Nest *L, LLVMValueRef *off,
		 LLVMValueRef acc)
{
	product_at(C, L, off, 0);
	return acc;
}

/* base + off elements of dtype t */
static LLVMValueRef
at(CgCtx *C, TfgDtype t, LLVMValueRef base, int64_t off)
{
	LLVMValueRef o = cg_i64c(C, off);
	return LLVMBuildInBoundsGEP2(C->b, cg_elty(C, t), base, &o, 1, "");
}

/* Strides (times block) of batch shape s broadcast to nb axes: stride 0
 * on axes s lacks or has of extent 1. */
static void
batch_strides(const TfgShape *s, int nb, int64_t block, int64_t *st)
{
	int64_t rm[TFG_MAX_RANK];
	int lead = nb - s->rank;
	cg_row_major(s, rm);
	for (int k = 0; k < nb; k++)
		st[k] = k < lead || s->dims[k - lead] == 1
		    ? 0 : rm[k - lead] * block;
}

#define BLAS_MIN_MNK (32 * 32 * 32) /* multiply-adds per product */
#define BLAS_MIN_ROWS 8

static int
use_blas(TfgDtype t, int64_t m, int64_t k, int64_t nn)
{
	if (!cg_is_float(t) || m < BLAS_MIN_ROWS || k < 1 || nn < 1 ||
	    m > INT32_MAX || k > INT32_MAX || nn > INT32_MAX)
		return 0; /* blasint is int: LP64 OpenBLAS */
	return (double)m * (double)k * (double)nn >= BLAS_MIN_MNK;
}

/* The m x k by k x nn of product n (one batch element), its operands
 * read as n->trans says: a transposed operand is a matrix (pass_fuse.c
 * folds only those). */
static void
mm_dims(const IrNode *n, int64_t *m, int64_t *k, int64_t *nn)
{
	const TfgShape *sa = &n->in[0]->shape, *sb = &n->in[1]->shape;
	int ra = sa->rank, rb = sb->rank;

	*m = ra >= 2 ? sa->dims[ra - 2] : 1;
	*k = sa->dims[ra - 1];
	*nn = rb >= 2 ? sb->dims[rb - 1] : 1;
	if (n->trans & 1) {
		*m = sa->dims[1];
		*k = sa->dims[0];
	}
	if (n->trans & 2)
		*nn = sb->dims[0];
}

/* Whether n's operands agree on k, as n->trans reads them. */
static int
mm_match(const IrNode *n)
{
	const TfgShape *sb = &n->in[1]->shape;
	int64_t m, k, nn, kb;

	if (n->trans && (n->in[0]->shape.rank != 2 || sb->rank != 2 ||
			 n->shape.rank != 2))
		return 0;
	mm_dims(n, &m, &k, &nn);
	kb = n->trans & 2 ? sb->dims[1] : sb->dims[sb->rank >= 2 ?
							 sb->rank - 2 : 0];
	return k == kb;
}

/* A product of nbat m x k by k x nn: long work (cg_flush) when it has
 * TFG_LONG_WORK multiply-adds or more. */
static void
flush_if_long(CgCtx *C, int64_t nbat, int64_t m, int64_t k, int64_t nn)
{
	if ((double)nbat * (double)m * (double)k * (double)nn >= TFG_LONG_WORK)
		cg_flush(C);
}

/* tfg_rt_gemm(dtype, trans, m, n, k, alpha, a, lda, b, ldb, beta, c,
 * ldc) (runtime/gemm.c: OpenBLAS over the kernel pool), declared once
 * per module.  trans: IrNode.trans; lda is the row length of a as stored
 * (k, or m transposed), ldb b's (nn, or k). */
static void
blas_call(CgCtx *C, TfgDtype t, LLVMValueRef a, LLVMValueRef b,
	  LLVMValueRef out, int64_t m, int64_t k, int64_t nn, int trans,
	  int64_t lda)
{
	LLVMTypeRef dt = LLVMDoubleTypeInContext(C->c);
	LLVMTypeRef ps[13] = {C->i32, C->i32, C->i64, C->i64, C->i64, dt,
			      C->ptr, C->i64, C->ptr, C->i64, dt, C->ptr,
			      C->i64};
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(C->c), ps,
					   13, 0);
	LLVMValueRef f = LLVMGetNamedFunction(C->m, "tfg_rt_gemm");
	if (!f)
		f = LLVMAddFunction(C->m, "tfg_rt_gemm", fty);
	LLVMValueRef args[13] = {
		LLVMConstInt(C->i32, (unsigned long long)t, 0),
		LLVMConstInt(C->i32, (unsigned long long)trans, 0),
		cg_i64c(C, m), cg_i64c(C, nn), cg_i64c(C, k),
		LLVMConstReal(dt, 1.0), a, cg_i64c(C, lda), b,
		cg_i64c(C, trans & 2 ? k : nn), LLVMConstReal(dt, 0.0), out,
		cg_i64c(C, nn)};
	LLVMBuildCall2(C->b, fty, f, args, 13, "");
}

/* One product through BLAS at the batch offsets off[] (elements). */
static LLVMValueRef
body_blas(CgCtx *C, const Nest *L, LLVMValueRef *off, LLVMValueRef acc)
{
	const IrNode *n = L->n;
	TfgDtype t = n->dtype;
	int64_t m, k, nn;
	LLVMValueRef p[3];
	mm_dims(n, &m, &k, &nn);
	for (int o = 0; o < 3; o++)
		p[o] = LLVMBuildInBoundsGEP2(C->b, cg_elty(C, t), L->base[o],
					     &off[o], 1, "");
	blas_call(C, t, p[1], p[2], p[0], m, k, nn, n->trans,
		  n->trans & 1 ? m : k);
	return acc;
}

/* ---- epilogues (compiler/pass_fuse.c): the product a block of rows at
 * a time, each block followed at once by the program over it */

/* A BLAS block of product rows: a share of the L3, not the L2.  Each
 * GEMM call packs all of b again and wakes the pool's threads, so with
 * bench/kernels.sh's [4096, 1024] @ [1024, 1024] small blocks cost far
 * more than the bare product; from 4 MiB on what is left is the
 * epilogue's own arithmetic and the machine's noise, and 16 MiB (one
 * call, then the program over the product while the L3 still holds
 * most of it) was the least and the steadiest (bench/README.md has the
 * figures).  $TFG_EPI_BLOCK (bytes) replaces it, for measuring and for
 * tests. */
#define EPI_BLOCK_BYTES (16 << 20)

/* An epilogue's product is m rows of nn (every batch row in flat mode,
 * else one batch element's), computed `rows` at a time; input e (used[e]:
 * read by the program) is read at row r, column j at rs[e] * r + cs[e] * j
 * from its base for the batch element. */
typedef struct Epi {
	const IrNode *n;
	TfgDtype t;           /* the product's, and the result's */
	int64_t m, k, nn, rows;
	int blas;
	int used[CG_MAX_OPS];
	int64_t rs[CG_MAX_OPS], cs[CG_MAX_OPS];
} Epi;

/* The plan of n's epilogue; flat: the batch axes as more rows, refused
 * (-1) unless every input the program reads walks them as one axis. */
static int
epi_plan(const CgCtx *C, const IrNode *n, int flat, Epi *E)
{
	const TfgShape *P = &n->shape;
	int ra = n->in[0]->shape.rank, rb = n->in[1]->shape.rank;
	int nb = P->rank - (ra >= 2) - (rb >= 2);

	memset(E, 0, sizeof *E);
	E->n = n;
	E->t = n->in[0]->dtype;
	mm_dims(n, &E->m, &E->k, &E->nn);
	cg_epi_used(n, E->used);
	for (int e = 0; e < n->nin; e++) {
		int64_t st[TFG_MAX_RANK], fs = -1, span = 1;
		if (!E->used[e])
			continue;
		cg_bcast_strides(&n->in[e]->shape, P, st);
		E->cs[e] = rb >= 2 ? st[P->rank - 1] : 0;
		E->rs[e] = ra >= 2 ? st[nb] : 0;
		for (int x = nb; flat && x >= 0; x--) {
			if (P->dims[x] == 1)
				continue;
			if (fs < 0)
				fs = st[x];
			else if (st[x] != fs * span)
				return -1;
			span *= P->dims[x];
		}
		if (flat)
			E->rs[e] = fs < 0 ? 0 : fs;
	}
	for (int x = 0; flat && x < nb; x++)
		E->m *= P->dims[x];
	E->blas = use_blas(E->t, E->m, E->k, E->nn);
	E->rows = (C->epi_block > 0 ? C->epi_block : EPI_BLOCK_BYTES) /
		  (E->nn * (int64_t)tfg_dtype_size(E->t));
	E->rows = E->rows < 1 ? 1 : E->rows > E->m ? E->m : E->rows;
	return 0;
}

/* R rows from row0 (an i64 value): the product, then the program over
 * them.  p[0] is the output, p[1 + e] input e, at the batch element. */
static void
epi_block(CgCtx *C, const Epi *E, LLVMValueRef *p, LLVMValueRef row0,
	  int64_t R)
{
	const IrNode *n = E->n;
	TfgDtype t = E->t;
	Nest L = {0}, Z = {0};
	LLVMValueRef out = cg_at(C, t, p[0], row0, E->nn);
	int ta = n->trans & 1;
	LLVMValueRef a = cg_at(C, t, p[1], row0, ta ? 1 : E->k);

	if (E->blas) {
		blas_call(C, t, a, p[2], out, R, E->k, E->nn, n->trans,
			  ta ? E->m : E->k);
	} else { /* as cg_emit_matmul_to's loops, a block at a time */
		Nest P = {0};
		Z.rank = 1;
		Z.dim[0] = R * E->nn;
		Z.stride[0][0] = 1;
		Z.nop = 1;
		Z.n = n;
		Z.body = body_zero;
		Z.flags = CG_NEST_SHARE | CG_NEST_ELEM;
		Z.base[0] = out;
		cg_nest_emit(C, &Z);
		P.rank = 1;
		P.dim[0] = R;
		P.nop = 3;
		P.n = n;
		P.body = body_row_product;
		P.flags = CG_NEST_ELEM; /* a row of out per iteration */
		P.row = E->nn;
		P.base[0] = out;
		P.base[1] = a;
		P.base[2] = p[2];
		P.stride[0][0] = E->nn;
		P.stride[1][0] = ta ? 1 : E->k;
		if (E->k > 0)
			cg_nest_emit(C, &P);
	}
	L.rank = 2;
	L.dim[0] = R;
	L.dim[1] = E->nn;
	L.nop = 1 + n->nin;
	L.n = n;
	L.body = cg_body_epi;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = out;
	L.stride[0][0] = E->nn;
	L.stride[0][1] = 1;
	for (int e = 0; e < n->nin; e++) {
		L.base[1 + e] = E->used[e]
		    ? cg_at(C, n->in[e]->dtype, p[1 + e], row0, E->rs[e])
		    : p[1 + e];
		L.stride[1 + e][0] = E->used[e] ? E->rs[e] : 0;
		L.stride[1 + e][1] = E->used[e] ? E->cs[e] : 0;
	}
	cg_nest_emit(C, &L);
}

/* Every row of one product, E->rows at a time. */
static void
epi_rows(CgCtx *C, const Epi *E, LLVMValueRef *p)
{
	int64_t full = E->m / E->rows, rest = E->m % E->rows;
	Loop lb;

	if (full == 1) {
		epi_block(C, E, p, cg_i64c(C, 0), E->rows);
	} else if (full > 1) {
		cg_loop_begin(C, &lb, NULL);
		epi_block(C, E, p, LLVMBuildNSWMul(C->b, lb.i,
			  cg_i64c(C, E->rows), ""), E->rows);
		cg_loop_end(C, &lb, full, NULL);
	}
	if (rest > 0)
		epi_block(C, E, p, cg_i64c(C, full * E->rows), rest);
}

/* matmul with an epilogue: flat when the batch can be rows (as in
 * cg_emit_matmul_to, and the program's inputs walk the rows as one
 * axis), else per batch element in a nest over the batch axes. */
static int
emit_epilogue(CgCtx *C, IrNode *n)
{
	const TfgShape *sa = &n->in[0]->shape, *sb = &n->in[1]->shape;
	int ra = sa->rank, rb = sb->rank;
	int nb = n->shape.rank - (ra >= 2) - (rb >= 2);
	TfgShape ba = {ra > 2 ? ra - 2 : 0, {0}};
	TfgShape bb = {rb > 2 ? rb - 2 : 0, {0}};
	TfgShape bo = {nb, {0}};
	LLVMValueRef base[CG_MAX_OPS], off[CG_MAX_OPS], p[CG_MAX_OPS];
	int64_t st[CG_MAX_OPS][TFG_MAX_RANK], nbat, inner;
	Epi E;
	Loop lb;

	if (n->fuse->n < 1 || n->nin + 1 > CG_MAX_OPS || ra < 1 || rb < 1 ||
	    nb < 0 || nb < ba.rank || nb < bb.rank ||
	    n->in[0]->dtype != n->dtype || n->in[1]->dtype != n->dtype ||
	    !mm_match(n))
		return cg_fail(C, n, "matmul epilogue does not match");
	for (int e = 2; e < n->nin; e++)
		if (n->in[e]->shape.rank > n->shape.rank)
			return cg_fail(C, n, "input rank above output rank");
	if (tfg_shape_numel(&n->shape) == 0)
		return 0;
	memcpy(ba.dims, sa->dims, sizeof ba.dims[0] * ba.rank);
	memcpy(bb.dims, sb->dims, sizeof bb.dims[0] * bb.rank);
	memcpy(bo.dims, n->shape.dims, sizeof bo.dims[0] * nb);
	nbat = tfg_shape_numel(&bo);
	mm_dims(n, &E.m, &E.k, &E.nn);
	flush_if_long(C, nbat, E.m, E.k, E.nn);
	base[0] = cg_buf(C, n);
	for (int e = 0; e < n->nin; e++)
		base[1 + e] = cg_buf(C, n->in[e]);
	if (ra >= 2 && bb.rank == 0 && ba.rank == nb &&
	    epi_plan(C, n, 1, &E) == 0) {
		epi_rows(C, &E, base);
		return 0;
	}
	/* a loop over the batch elements in the part function (the blocks'
	 * nests are kernels of their own), each axis's index from lb.i */
	epi_plan(C, n, 0, &E);
	batch_strides(&bo, nb, E.m * E.nn, st[0]);
	batch_strides(&ba, nb, E.m * E.k, st[1]);
	batch_strides(&bb, nb, E.k * E.nn, st[2]);
	for (int e = 2; e < n->nin; e++)
		cg_bcast_strides(&n->in[e]->shape, &n->shape, st[1 + e]);
	inner = nbat;
	cg_loop_begin(C, &lb, NULL);
	for (int o = 0; o <= n->nin; o++)
		off[o] = cg_i64c(C, 0);
	for (int x = 0; x < nb; x++) {
		inner /= bo.dims[x];
		LLVMValueRef ix = LLVMBuildURem(C->b,
			LLVMBuildUDiv(C->b, lb.i, cg_i64c(C, inner), ""),
			cg_i64c(C, bo.dims[x]), "");
		for (int o = 0; o <= n->nin; o++)
			off[o] = add_mul(C, off[o], ix, st[o][x]);
	}
	for (int o = 0; o <= n->nin; o++)
		p[o] = LLVMBuildInBoundsGEP2(C->b, cg_elty(C, o ?
			n->in[o - 1]->dtype : n->dtype), base[o], &off[o], 1, "");
	epi_rows(C, &E, p);
	cg_loop_end(C, &lb, nbat, NULL);
	return 0;
}

int
cpu_emit_matmul(CgCtx *C, IrNode *n)
{
	if (n->fuse)
		return emit_epilogue(C, n);
	return cg_emit_matmul_to(C, n, cg_buf(C, n));
}

int
cg_emit_matmul_to(CgCtx *C, const IrNode *n, LLVMValueRef out)
{
	Nest Z = {0}, L = {0};
	if (n->nin != 2 || n->in[0]->dtype != n->dtype ||
	    n->in[1]->dtype != n->dtype)
		return cg_fail(C, n, "matmul needs two inputs of its dtype");
	const TfgShape *sa = &n->in[0]->shape, *sb = &n->in[1]->shape;
	int ra = sa->rank, rb = sb->rank;
	if (ra < 1 || rb < 1)
		return cg_fail(C, n, "matmul of a scalar");
	int64_t m, k, nn;
	int nb = n->shape.rank - (ra >= 2) - (rb >= 2);
	TfgShape ba = {ra > 2 ? ra - 2 : 0, {0}};
	TfgShape bb = {rb > 2 ? rb - 2 : 0, {0}};
	TfgShape bo = {nb, {0}};
	mm_dims(n, &m, &k, &nn);
	if (nb < 0 || nb < ba.rank || nb < bb.rank || !mm_match(n))
		return cg_fail(C, n, "matmul shapes do not match");
	memcpy(ba.dims, sa->dims, sizeof ba.dims[0] * ba.rank);
	memcpy(bb.dims, sb->dims, sizeof bb.dims[0] * bb.rank);
	memcpy(bo.dims, n->shape.dims, sizeof bo.dims[0] * nb);

	/* the batch as rows: b unbatched, a with every batch axis */
	int64_t nbat = tfg_shape_numel(&bo);
	flush_if_long(C, nbat, m, k, nn);
	if (ra >= 2 && bb.rank == 0 && ba.rank == nb && nbat > 0 &&
	    use_blas(n->dtype, nbat * m, k, nn)) {
		blas_call(C, n->dtype, cg_buf(C, n->in[0]), cg_buf(C, n->in[1]),
			  out, nbat * m, k, nn, n->trans,
			  n->trans & 1 ? m : k);
		return 0;
	}
	int blas = use_blas(n->dtype, m, k, nn);
	L.rank = nb;
	L.nop = 3;
	L.n = n;
	L.body = blas ? body_blas : body_matmul;
	L.base[0] = out;
	L.base[1] = cg_buf(C, n->in[0]);
	L.base[2] = cg_buf(C, n->in[1]);
	batch_strides(&bo, nb, m * nn, L.stride[0]);
	batch_strides(&ba, nb, m * k, L.stride[1]);
	batch_strides(&bb, nb, k * nn, L.stride[2]);
	memcpy(L.dim, bo.dims, sizeof L.dim[0] * nb);
	if (blas) { /* beta = 0: no zeroing */
		cg_nest_emit(C, &L);
		return 0;
	}

	Z.rank = 1;
	Z.dim[0] = tfg_shape_numel(&n->shape);
	Z.stride[0][0] = 1;
	Z.nop = 1;
	Z.n = n;
	Z.body = body_zero;
	Z.base[0] = out;
	cg_nest_emit(C, &Z);

	if (m == 0 || k == 0 || nn == 0)
		return 0; /* zeros */
	cg_nest_emit(C, &L); /* batch loops, body_matmul inside */
	return 0;
}

int
cpu_emit_transpose(CgCtx *C, IrNode *n)
{
	Nest L = {0};
	int64_t ist[TFG_MAX_RANK];
	if (n->nin != 1 || n->in[0]->shape.rank != n->shape.rank)
		return cg_fail(C, n, "transpose needs one input of its rank");
	const IrNode *in = n->in[0];
	cg_row_major(&in->shape, ist);
	L.rank = n->shape.rank;
	memcpy(L.dim, n->shape.dims, sizeof L.dim);
	cg_row_major(&n->shape, L.stride[0]);
	for (int k = 0; k < L.rank; k++) {
		if (n->ax->perm[k] < 0 || n->ax->perm[k] >= L.rank ||
		    in->shape.dims[n->ax->perm[k]] != n->shape.dims[k])
			return cg_fail(C, n, "transpose perm does not match");
		L.stride[1][k] = ist[n->ax->perm[k]];
	}
	L.nop = 2;
	L.n = n;
	L.body = body_move;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = cg_buf(C, n);
	L.base[1] = cg_buf(C, in);
	cg_nest_emit(C, &L);
	return 0;
}

int
cpu_emit_reshape(CgCtx *C, IrNode *n)
{
	Nest L = {0};
	if (n->nin != 1 || tfg_shape_numel(&n->in[0]->shape) != tfg_shape_numel(&n->shape))
		return cg_fail(C, n, "reshape changes the element count");
	if (C->val[C->cur] == NULL) { /* a view (codegen/memplan.c) */
		C->val[C->cur] = cg_buf(C, n->in[0]);
		return 0;
	}
	L.rank = 1;
	L.dim[0] = tfg_shape_numel(&n->shape);
	L.stride[0][0] = L.stride[1][0] = 1;
	L.nop = 2;
	L.n = n;
	L.body = body_move;
	L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
	L.base[0] = cg_buf(C, n);
	L.base[1] = cg_buf(C, n->in[0]);
	cg_nest_emit(C, &L);
	return 0;
}

/* concat (stack = 0) or stack (1): input i is copied to its place along
 * the axis; for stack the output axis `axis` is absent from the input. */
static int
emit_join(CgCtx *C, IrNode *n, int stack)
{
	int64_t ost[TFG_MAX_RANK], pos = 0;
	int ax = n->axis;
	if (n->nin < 1 || ax < 0 || ax >= n->shape.rank)
		return cg_fail(C, n, "join needs inputs and an axis");
	cg_row_major(&n->shape, ost);
	for (int i = 0; i < n->nin; i++) {
		const IrNode *in = n->in[i];
		Nest L = {0};
		if (in->dtype != n->dtype ||
		    in->shape.rank != n->shape.rank - stack)
			return cg_fail(C, n, "join input does not match");
		L.rank = in->shape.rank;
		memcpy(L.dim, in->shape.dims, sizeof L.dim);
		cg_row_major(&in->shape, L.stride[1]);
		for (int k = 0; k < L.rank; k++)
			L.stride[0][k] = ost[stack && k >= ax ? k + 1 : k];
		L.nop = 2;
		L.n = n;
		L.body = body_move;
		L.flags = CG_NEST_SHARE | CG_NEST_ELEM;
		L.base[0] = at(C, n->dtype, cg_buf(C, n), pos * ost[ax]);
		L.base[1] = cg_buf(C, in);
		cg_nest_emit(C, &L);
		pos += stack ? 1 : in->shape.dims[ax];
	}
	if (pos != n->shape.dims[ax])
		return cg_fail(C, n, "join inputs do not fill the axis");
	return 0;
}

int
cpu_emit_concat(CgCtx *C, IrNode *n)
{
	return emit_join(C, n, 0);
}

int
cpu_emit_stack(CgCtx *C, IrNode *n)
{
	return emit_join(C, n, 1);
}
