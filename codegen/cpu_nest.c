/*
 * codegen/cpu_nest.c: loop nests (cg_int.h Nest) and the kernel functions
 * they become (spec/design.md "Kernels").
 *
 * A nest is the output's index space in row-major order with one i64
 * element offset per operand (stride 0 on broadcast axes).  Before
 * emission, axes of extent 1 are dropped and adjacent axes that are
 * contiguous for every operand are merged, so a same-shape elementwise
 * op is one flat loop that LLVM vectorises.  Reductions
 * (codegen/cpu_reduce.c) use the same nests, with accumulators.
 *
 * Every nest is outlined: cg_nest_emit emits (or finds) an internal
 * function
 *
 *     void tfg_k<N>(ptr %b0, ..., ptr %bK, i64 %begin, i64 %end)
 *
 * that runs the nest's outermost loop from begin to end (everything
 * inside it whole), and calls it with the operands' buffers.  Kernels
 * are noinline: the point is that LLVM optimises and compiles each
 * distinct loop once, not once per node (a graph of 200 ops on one
 * shape has a handful of distinct loops).  Two nests share a kernel when
 * their keys are equal: a byte string of everything the kernel's code
 * depends on, namely the callbacks, the collapsed loops and strides, the
 * accumulator, the parameter attributes and the node's attributes that
 * the callbacks may read (CG_NEST_SHARE in cg_int.h says which); a nest
 * without CG_NEST_SHARE gets a kernel of its own.
 *
 * Parameters are noalias where the buffer plan guarantees it: an operand
 * whose buffer is the slot (or a constant, or an offset into either) of
 * the node being emitted or of one of its inputs, and no other operand
 * of the same nest uses that slot.  Those slots are live at the node's
 * position together, so codegen/memplan.c gave them disjoint memory
 * (its ranges are inclusive: no in-place reuse).  A slot's own start is
 * also align 64.
 *
 * Multi-core: a nest with CG_NEST_ELEM, at least CG_PAR_MIN iterations in
 * all, an outermost loop that does not accumulate and that writes
 * disjoint output elements per iteration (its output stride exceeds the
 * span of everything inside it, Nest.row included) is called through
 * tfg_rt_parallel(tfg_k<N>_p, bases, n) (runtime/pool.c), which splits
 * [0, n) into chunks over the process's threads; tfg_k<N>_p unpacks the
 * bases and calls tfg_k<N>.  Every output element is computed by the
 * same code in the same order whatever the split, so results are
 * bit-identical to one thread (full reductions to one element get such a
 * loop from codegen/cpu_reduce.c: chunks of the input, then partials).
 *
 * Non-temporal stores (CG_NEST_NT): a large flat CG_NEST_STREAM output
 * is computed a 64-byte tile at a time on the stack and stored with
 * aligned !nontemporal stores (kernel_body_nt: the loop vectoriser
 * refuses them where it cannot prove the alignment); softmax's row body
 * emits its own.  Either kernel ends with a fence.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_int.h"

/* The least work (iterations of all loops) worth splitting over threads:
 * 2^17, measured with bench/kernels.sh (below it the chunk hand-off costs
 * more than the second core gains). */
#define CG_PAR_MIN ((int64_t)1 << 17)

/* The least output (bytes) written with non-temporal stores: half the L3
 * of the machines it was tuned on (bench/README.md).  Smaller outputs may still be in the
 * cache when their reader comes; larger ones are evicted first anyway,
 * and an ordinary store reads each line before writing it, a third of
 * the memory traffic of a copy.
 * The tile (bytes) computed on the stack, then stored: one 64-byte line,
 * so that LLVM keeps the tile in a register and each vector goes
 * straight to a movnt store (4 KiB tiles, computed then stored in a
 * burst, ran slower than ordinary stores: bench/kernels.sh's sigmoid at
 * 0.83x, against 1.13x with one line). */
#define CG_NT_MIN ((int64_t)16 << 20)
#define CG_NT_TILE 64

/* ----------------------------------------------------------- loop nests */

/* Row-major element strides of s into st. */
void
cg_row_major(const TfgShape *s, int64_t *st)
{
	int64_t m = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = m;
		m *= s->dims[k];
	}
}

/* Drops axes of extent 1; merges an axis into the next inner one when
 * every operand walks both as one (stride[k] == stride[k+1] * dim[k+1]). */
static void
nest_collapse(Nest *L)
{
	int r = 0, nacc = 0;
	for (int k = 0; k < L->rank; k++) {
		if (L->dim[k] == 1)
			continue;
		int merge = r > 0 && L->grp[r - 1] == L->grp[k];
		for (int o = 0; merge && o < L->nop; o++)
			merge = L->stride[o][r - 1] ==
				L->stride[o][k] * L->dim[k];
		if (merge) {
			L->dim[r - 1] *= L->dim[k];
			for (int o = 0; o < L->nop; o++)
				L->stride[o][r - 1] = L->stride[o][k];
			continue;
		}
		L->dim[r] = L->dim[k];
		L->grp[r] = L->grp[k];
		for (int o = 0; o < L->nop; o++)
			L->stride[o][r] = L->stride[o][k];
		r++;
	}
	for (int k = 0; k < r; k++)
		nacc += L->grp[k] != 0;
	L->rank = r;
	L->nacc = nacc;
}


/* Opens a loop that runs at least once; i counts from 0. */
void
cg_loop_begin(CgCtx *C, Loop *lp, LLVMValueRef acc0)
{
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(C->b);
	LLVMValueRef zero = cg_i64c(C, 0);
	lp->head = LLVMAppendBasicBlockInContext(C->c, C->fn, "loop");
	LLVMBuildBr(C->b, lp->head);
	LLVMPositionBuilderAtEnd(C->b, lp->head);
	lp->i = LLVMBuildPhi(C->b, C->i64, "i");
	LLVMAddIncoming(lp->i, &zero, &pre, 1);
	lp->acc = NULL;
	if (acc0) {
		lp->acc = LLVMBuildPhi(C->b, LLVMTypeOf(acc0), "acc");
		LLVMAddIncoming(lp->acc, &acc0, &pre, 1);
	}
}

/* Closes it after n iterations; returns the accumulator's final value. */
LLVMValueRef
cg_loop_end(CgCtx *C, Loop *lp, int64_t n, LLVMValueRef acc)
{
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(C->b);
	LLVMValueRef next = LLVMBuildNUWAdd(C->b, lp->i, cg_i64c(C, 1), "");
	LLVMAddIncoming(lp->i, &next, &latch, 1);
	if (lp->acc)
		LLVMAddIncoming(lp->acc, &acc, &latch, 1);
	LLVMValueRef more = LLVMBuildICmp(C->b, LLVMIntULT, next, cg_i64c(C, n),
					  "");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "done");
	LLVMBuildCondBr(C->b, more, lp->head, done);
	LLVMPositionBuilderAtEnd(C->b, done);
	return acc;
}

static void
nest_offsets(CgCtx *C, const Nest *L, int lev, LLVMValueRef i,
	     LLVMValueRef *in, LLVMValueRef *out)
{
	for (int o = 0; o < L->nop; o++) {
		int64_t s = L->stride[o][lev];
		LLVMValueRef t = s == 1 ? i
		    : LLVMBuildNSWMul(C->b, i, cg_i64c(C, s), "");
		out[o] = s == 0 ? in[o] : LLVMBuildNSWAdd(C->b, in[o], t, "");
	}
}

static LLVMValueRef
nest_inner(CgCtx *C, const Nest *L, int lev, LLVMValueRef *off,
	   LLVMValueRef acc)
{
	LLVMValueRef o[CG_MAX_OPS];
	Loop lp;
	if (lev == L->rank)
		return L->body ? L->body(C, L, off, acc) : acc;
	cg_loop_begin(C, &lp, acc);
	nest_offsets(C, L, lev, lp.i, off, o);
	acc = nest_inner(C, L, lev + 1, o, lp.acc);
	return cg_loop_end(C, &lp, L->dim[lev], acc);
}

static void
nest_outer(CgCtx *C, const Nest *L, int lev, LLVMValueRef *off)
{
	LLVMValueRef o[CG_MAX_OPS];
	Loop lp;
	if (lev == L->rank - L->nacc) {
		LLVMValueRef acc = L->init ? L->init(C, L, off) : NULL;
		acc = nest_inner(C, L, lev, off, acc);
		if (L->fini)
			L->fini(C, L, off, acc);
		return;
	}
	cg_loop_begin(C, &lp, NULL);
	nest_offsets(C, L, lev, lp.i, off, o);
	nest_outer(C, L, lev + 1, o);
	cg_loop_end(C, &lp, L->dim[lev], NULL);
}

/* Operand o of L reads tensor shape s, broadcast to L's rank (NumPy:
 * aligned at the right, stride 0 where s has extent 1 or no axis). */
void
cg_nest_broadcast(Nest *L, int o, const TfgShape *s)
{
	int64_t st[TFG_MAX_RANK];
	int lead = L->rank - s->rank;
	cg_row_major(s, st);
	for (int k = 0; k < L->rank; k++)
		L->stride[o][k] = k < lead || s->dims[k - lead] == 1
		    ? 0 : st[k - lead];
}


/* ------------------------------------------------------------- kernels */

typedef struct CgKernel {
	unsigned char *key;
	size_t len;
	uint64_t hash;
	LLVMValueRef fn;    /* tfg_k<N> */
	LLVMValueRef par;   /* tfg_k<N>_p, made on first parallel use */
	int nop;
} CgKernel;

typedef struct Key {
	unsigned char *p;
	size_t n, cap;
} Key;

static void
key_put(Key *k, const void *v, size_t n)
{
	if (k->n + n > k->cap) {
		k->cap = (k->n + n) * 2 + 256;
		k->p = realloc(k->p, k->cap);
		if (!k->p) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			exit(1);
		}
	}
	memcpy(k->p + k->n, v, n);
	k->n += n;
}

static void
key_put_cb(void *k, const void *v, size_t n)
{
	key_put(k, v, n);
}

static void
key_i64(Key *k, int64_t v)
{
	key_put(k, &v, sizeof v);
}

static void
key_shape(Key *k, const TfgShape *s)
{
	key_i64(k, s->rank);
	for (int i = 0; i < s->rank; i++)
		key_i64(k, s->dims[i]);
}

/* The node attributes a CG_NEST_SHARE callback may read. */
static void
key_node(Key *k, const IrNode *n)
{
	key_i64(k, n->op);
	key_i64(k, n->dtype);
	key_shape(k, &n->shape);
	key_i64(k, n->nin);
	for (int i = 0; i < n->nin; i++) {
		key_i64(k, n->in[i]->dtype);
		key_shape(k, &n->in[i]->shape);
	}
	/* the attributes ops.def declares for the op (compiler/attr.c) */
	ir_attr_write(n, key_put_cb, k);
}

/* The kernel's key: see the top of the file.  attrs: the parameters'
 * noalias and align bits. */
static void
key_nest(Key *k, const Nest *L, uint64_t attrs)
{
	uintptr_t cb[3] = {(uintptr_t)L->init, (uintptr_t)L->body,
			   (uintptr_t)L->fini};
	key_put(k, cb, sizeof cb);
	key_i64(k, L->flags);
	key_i64(k, L->rank);
	key_i64(k, L->nacc);
	key_i64(k, L->nop);
	for (int d = 0; d < L->rank; d++) {
		key_i64(k, L->dim[d]);
		key_i64(k, L->grp[d]);
		for (int o = 0; o < L->nop; o++)
			key_i64(k, L->stride[o][d]);
	}
	key_i64(k, L->acc_dt);
	key_i64(k, L->count);
	key_i64(k, L->row);
	key_i64(k, (int64_t)attrs);
	key_node(k, L->n);
}

static uint64_t
fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* The slot base v stands on, as an index in the part: v is a node's
 * buffer or an offset into one (slices, concat); -1 when neither. */
static int
base_root(CgCtx *C, LLVMValueRef v, int *exact)
{
	*exact = 1;
	for (int i = C->cur; i >= 0; i--)
		if (C->val[i] == v)
			return i;
	*exact = 0;
	if (LLVMIsAGetElementPtrInst(v) || (LLVMIsAConstantExpr(v) &&
	    LLVMGetConstOpcode(v) == LLVMGetElementPtr)) {
		LLVMValueRef p = LLVMGetOperand(v, 0);
		for (int i = C->cur; i >= 0; i--)
			if (C->val[i] == p)
				return i;
	}
	return -1;
}

/* Whether part node i is the node being emitted or one of its inputs:
 * their slots are live together, hence disjoint. */
static int
live_here(CgCtx *C, int i)
{
	const IrNode *n = C->part->nodes[C->cur], *r = C->part->nodes[i];
	if (r == n)
		return 1;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] == r)
			return 1;
	return 0;
}

/* Bit o: operand o is noalias; bit 32 + o: align 64. */
static uint64_t
param_attrs(CgCtx *C, const Nest *L)
{
	int root[CG_MAX_OPS], exact[CG_MAX_OPS];
	uint64_t a = 0;
	for (int o = 0; o < L->nop; o++) {
		root[o] = base_root(C, L->base[o], &exact[o]);
		if (root[o] >= 0 && !live_here(C, root[o]))
			root[o] = -1;
	}
	for (int o = 0; o < L->nop; o++) {
		int ok = root[o] >= 0;
		for (int q = 0; ok && q < L->nop; q++)
			if (q != o && !LLVMIsNull(L->base[q]) &&
			    (root[q] < 0 || root[q] == root[o]))
				ok = 0;
		if (ok)
			a |= 1ull << o;
		if (root[o] >= 0 && exact[o])
			a |= 1ull << (32 + o);
	}
	return a;
}

static void
fn_attr(CgCtx *C, LLVMValueRef f, unsigned idx, const char *k, uint64_t v)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(k, strlen(k));
	LLVMAddAttributeAtIndex(f, idx, LLVMCreateEnumAttribute(C->c, kind, v));
}

static void
fn_str_attr(CgCtx *C, LLVMValueRef f, const char *k, const char *v)
{
	if (v && *v)
		LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
					LLVMCreateStringAttribute(C->c, k,
						strlen(k), v, strlen(v)));
}

/* An internal function of type ty named name, with the part's target
 * attributes, its builder at a new entry block. */
static LLVMValueRef
new_fn(CgCtx *C, const char *name, LLVMTypeRef ty)
{
	LLVMValueRef f = LLVMAddFunction(C->m, name, ty);
	LLVMSetLinkage(f, LLVMInternalLinkage);
	fn_attr(C, f, LLVMAttributeFunctionIndex, "nounwind", 0);
	fn_str_attr(C, f, "target-cpu", C->cpu);
	fn_str_attr(C, f, "target-features", C->features);
	LLVMPositionBuilderAtEnd(C->b, LLVMAppendBasicBlockInContext(C->c, f,
								     "entry"));
	return f;
}

/* ------------------------------------------------ non-temporal stores */

/* Whether L (collapsed) is written with non-temporal stores: a
 * CG_NEST_STREAM nest that is one flat loop over a contiguous output of
 * 4- or 8-byte elements, at least CG_NT_MIN bytes ($TFG_NT_MIN
 * overrides; -1: never). */
static int
nest_nt(CgCtx *C, const Nest *L)
{
	int64_t min = C->nt_min ? C->nt_min : CG_NT_MIN;
	int64_t sz = (int64_t)tfg_dtype_size(L->n->dtype);
	if (min < 0 || !(L->flags & CG_NEST_STREAM) || L->rank != 1 ||
	    L->nacc || L->row > 1 || L->stride[0][0] != 1)
		return 0;
	return (sz == 4 || sz == 8) && L->dim[0] * sz >= min;
}

int
cg_nt_wanted(CgCtx *C, int64_t bytes)
{
	int64_t min = C->nt_min ? C->nt_min : CG_NT_MIN;
	return min >= 0 && bytes >= min;
}

LLVMValueRef
cg_vsplat(CgCtx *C, LLVMValueRef s, int64_t w)
{
	LLVMTypeRef vty = LLVMVectorType(LLVMTypeOf(s), (unsigned)w);
	LLVMValueRef z = cg_i64c(C, 0);
	LLVMValueRef v = LLVMBuildInsertElement(C->b, LLVMGetPoison(vty), s,
						z, "");
	LLVMValueRef mask = LLVMConstNull(LLVMVectorType(C->i32,
							 (unsigned)w));
	return LLVMBuildShuffleVector(C->b, v, LLVMGetPoison(vty), mask, "");
}

LLVMValueRef
cg_vload(CgCtx *C, LLVMTypeRef vty, LLVMValueRef base, LLVMValueRef off,
	 unsigned align)
{
	LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, LLVMGetElementType(vty),
					       base, &off, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(C->b, vty, p, "");
	LLVMSetAlignment(v, align);
	return v;
}

void
cg_prefetch(CgCtx *C, LLVMTypeRef ety, LLVMValueRef base, LLVMValueRef off)
{
	static const char name[] = "llvm.prefetch";
	unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
	LLVMTypeRef pt = C->ptr;
	LLVMValueRef args[4] = {
		LLVMBuildGEP2(C->b, ety, base, &off, 1, ""), /* not inbounds */
		LLVMConstInt(C->i32, 0, 0), /* read */
		LLVMConstInt(C->i32, 1, 0), /* into L2 (x86: prefetcht2) */
		LLVMConstInt(C->i32, 1, 0), /* data */
	};
	LLVMBuildCall2(C->b, LLVMIntrinsicGetType(C->c, id, &pt, 1),
		       LLVMGetIntrinsicDeclaration(C->m, id, &pt, 1), args, 4,
		       "");
}

/* A store marked !nontemporal: the target writes it around the cache
 * (x86: movnt*, which needs the 64-byte alignment given here). */
static void
store_nt(CgCtx *C, LLVMValueRef st)
{
	LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(C->i32, 1, 0));
	LLVMSetMetadata(st, LLVMGetMDKindIDInContext(C->c, "nontemporal", 11),
			LLVMMetadataAsValue(C->c, LLVMMDNodeInContext2(C->c,
								  &one, 1)));
}

void
cg_vstore(CgCtx *C, LLVMValueRef v, LLVMValueRef base, LLVMValueRef off,
	  unsigned align, int nt)
{
	LLVMTypeRef vty = LLVMTypeOf(v);
	LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, LLVMGetElementType(vty),
					       base, &off, 1, "");
	LLVMValueRef st = LLVMBuildStore(C->b, v, p);
	LLVMSetAlignment(st, align);
	if (nt)
		store_nt(C, st);
}

LLVMValueRef
cg_vreduce_fadd(CgCtx *C, LLVMValueRef v)
{
	LLVMTypeRef vty = LLVMTypeOf(v), ety = LLVMGetElementType(vty);
	const char *name = "llvm.vector.reduce.fadd";
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(C->m, id, &vty, 1);
	LLVMValueRef args[2] = {LLVMConstReal(ety, 0.0), v};
	LLVMValueRef r = LLVMBuildCall2(C->b, LLVMIntrinsicGetType(C->c, id,
							      &vty, 1),
					f, args, 2, "");
	LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
	return r;
}

/* A loop for i from lo to hi (i64 values), possibly empty. */
typedef struct RLoop {
	LLVMBasicBlockRef head, done;
	LLVMValueRef i, hi;
} RLoop;

static void
rloop_begin(CgCtx *C, RLoop *r, LLVMValueRef lo, LLVMValueRef hi)
{
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(C->b);
	r->head = LLVMAppendBasicBlockInContext(C->c, C->fn, "loop");
	r->done = LLVMAppendBasicBlockInContext(C->c, C->fn, "done");
	r->hi = hi;
	LLVMBuildCondBr(C->b, LLVMBuildICmp(C->b, LLVMIntSLT, lo, hi, ""),
			r->head, r->done);
	LLVMPositionBuilderAtEnd(C->b, r->head);
	r->i = LLVMBuildPhi(C->b, C->i64, "i");
	LLVMAddIncoming(r->i, &lo, &pre, 1);
}

static void
rloop_end(CgCtx *C, RLoop *r)
{
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(C->b);
	LLVMValueRef next = LLVMBuildNSWAdd(C->b, r->i, cg_i64c(C, 1), "");
	LLVMAddIncoming(r->i, &next, &latch, 1);
	LLVMBuildCondBr(C->b, LLVMBuildICmp(C->b, LLVMIntSLT, next, r->hi, ""),
			r->head, r->done);
	LLVMMoveBasicBlockAfter(r->done, LLVMGetInsertBlock(C->b));
	LLVMPositionBuilderAtEnd(C->b, r->done);
}

/* The body at element i of a flat nest, operand 0 at element i0 of
 * base0. */
static void
flat_body(CgCtx *C, const Nest *K, LLVMValueRef base0, LLVMValueRef i0,
	  LLVMValueRef i)
{
	LLVMValueRef off[CG_MAX_OPS];
	Nest T = *K;
	T.base[0] = base0;
	off[0] = i0;
	for (int o = 1; o < K->nop; o++) {
		int64_t s = K->stride[o][0];
		off[o] = s == 0 ? cg_i64c(C, 0) : s == 1 ? i
		    : LLVMBuildNSWMul(C->b, i, cg_i64c(C, s), "");
	}
	T.body(C, &T, off, NULL);
}

static void
flat_range(CgCtx *C, const Nest *K, LLVMValueRef lo, LLVMValueRef hi)
{
	RLoop r;
	rloop_begin(C, &r, lo, hi);
	flat_body(C, K, K->base[0], r.i, r.i);
	rloop_end(C, &r);
}

/* A flat CG_NEST_NT kernel from begin to end: elements up to the first
 * 64-byte boundary of the output as usual, then tiles of CG_NT_TILE
 * bytes computed into a stack buffer (the body's off[0] relative to the
 * tile; the loop vectorises as usual) and copied out with aligned
 * non-temporal 64-byte stores, then the rest as usual; a fence orders
 * the stores before the kernel returns (the pool's hand-off to the
 * caller is no fence for them).  Every element is computed by the same
 * body, so the values are those of the plain loop. */
static void
kernel_body_nt(CgCtx *C, Nest *K, LLVMValueRef begin, LLVMValueRef end)
{
	LLVMBuilderRef B = C->b;
	int64_t sz = (int64_t)tfg_dtype_size(K->n->dtype);
	int64_t per = CG_NT_TILE / sz;
	LLVMTypeRef vty = LLVMVectorType(C->i32, 16);
	LLVMValueRef tmp, lo, hi, nblk;

	tmp = cg_entry_alloca(C, LLVMArrayType2(C->i8, CG_NT_TILE), 64,
			      "tile");

	/* lo: the first element at a 64-byte boundary (or end) */
	LLVMValueRef first = LLVMBuildGEP2(B, C->i8, K->base[0],
		(LLVMValueRef[]){LLVMBuildNSWMul(B, begin, cg_i64c(C, sz),
						 "")}, 1, "");
	LLVMValueRef mis = LLVMBuildAnd(B, LLVMBuildNeg(B,
		LLVMBuildPtrToInt(B, first, C->i64, ""), ""),
		cg_i64c(C, 63), "");
	lo = LLVMBuildAdd(B, begin, LLVMBuildUDiv(B, mis, cg_i64c(C, sz), ""),
			  "");
	lo = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, lo, end, ""), lo,
			     end, "");
	flat_range(C, K, begin, lo);
	nblk = LLVMBuildSDiv(B, LLVMBuildSub(B, end, lo, ""),
			     cg_i64c(C, per), "");
	hi = LLVMBuildAdd(B, lo, LLVMBuildMul(B, nblk, cg_i64c(C, per), ""),
			  "");

	RLoop rb;
	Loop lj, lq;
	rloop_begin(C, &rb, cg_i64c(C, 0), nblk);
	LLVMValueRef s = LLVMBuildAdd(B, lo, LLVMBuildMul(B, rb.i,
		cg_i64c(C, per), ""), "");
	cg_loop_begin(C, &lj, NULL);
	flat_body(C, K, tmp, lj.i, LLVMBuildNSWAdd(B, s, lj.i, ""));
	cg_loop_end(C, &lj, per, NULL);
	LLVMValueRef dst = LLVMBuildGEP2(B, C->i8, K->base[0],
		(LLVMValueRef[]){LLVMBuildNSWMul(B, s, cg_i64c(C, sz), "")},
		1, "");
	cg_loop_begin(C, &lq, NULL);
	LLVMValueRef v = LLVMBuildLoad2(B, vty, LLVMBuildInBoundsGEP2(B, vty,
		tmp, &lq.i, 1, ""), "");
	LLVMSetAlignment(v, 64);
	LLVMValueRef st = LLVMBuildStore(B, v, LLVMBuildGEP2(B, vty, dst,
		&lq.i, 1, ""));
	LLVMSetAlignment(st, 64);
	store_nt(C, st);
	cg_loop_end(C, &lq, CG_NT_TILE / 64, NULL);
	rloop_end(C, &rb);

	flat_range(C, K, hi, end);
	LLVMBuildFence(B, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
}

/* The body of tfg_k<N>: the outermost loop from begin to end (begin <
 * end), unless the nest has no loop outside the accumulation. */
static void
kernel_body(CgCtx *C, Nest *K, LLVMValueRef begin, LLVMValueRef end)
{
	LLVMValueRef off[CG_MAX_OPS], o[CG_MAX_OPS];
	if ((K->flags & CG_NEST_NT) && (K->flags & CG_NEST_STREAM)) {
		kernel_body_nt(C, K, begin, end);
		return;
	}
	for (int q = 0; q < K->nop; q++)
		off[q] = cg_i64c(C, 0);
	if (K->rank - K->nacc < 1) {
		nest_outer(C, K, 0, off);
		return;
	}
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(C->b);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "loop");
	LLVMBuildBr(C->b, head);
	LLVMPositionBuilderAtEnd(C->b, head);
	LLVMValueRef i = LLVMBuildPhi(C->b, C->i64, "i");
	LLVMAddIncoming(i, &begin, &pre, 1);
	nest_offsets(C, K, 0, i, off, o);
	nest_outer(C, K, 1, o);
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(C->b);
	LLVMValueRef next = LLVMBuildNSWAdd(C->b, i, cg_i64c(C, 1), "");
	LLVMAddIncoming(i, &next, &latch, 1);
	LLVMValueRef more = LLVMBuildICmp(C->b, LLVMIntSLT, next, end, "");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "done");
	LLVMBuildCondBr(C->b, more, head, done);
	LLVMPositionBuilderAtEnd(C->b, done);
	if (K->flags & CG_NEST_NT) /* the body's own non-temporal stores */
		LLVMBuildFence(C->b, LLVMAtomicOrderingSequentiallyConsistent,
			       0, "");
}

/* Emits tfg_k<N> for L with parameter attributes attrs. */
static LLVMValueRef
kernel_emit(CgCtx *C, const Nest *L, uint64_t attrs)
{
	LLVMTypeRef ps[CG_MAX_OPS + 2];
	LLVMBasicBlockRef at = LLVMGetInsertBlock(C->b);
	LLVMValueRef part = C->fn;
	Nest K = *L;
	char name[32];
	for (int o = 0; o < L->nop; o++)
		ps[o] = C->ptr;
	ps[L->nop] = ps[L->nop + 1] = C->i64;
	snprintf(name, sizeof name, "tfg_k%d", C->nkern);
	LLVMValueRef f = new_fn(C, name, LLVMFunctionType(C->void_, ps,
						     (unsigned)L->nop + 2, 0));
	fn_attr(C, f, LLVMAttributeFunctionIndex, "noinline", 0);
	for (int o = 0; o < L->nop; o++) {
		K.base[o] = LLVMGetParam(f, (unsigned)o);
		if ((attrs >> o) & 1)
			fn_attr(C, f, (unsigned)o + 1, "noalias", 0);
		if ((attrs >> (32 + o)) & 1)
			fn_attr(C, f, (unsigned)o + 1, "align", CG_SLOT_ALIGN);
	}
	C->fn = f;
	kernel_body(C, &K, LLVMGetParam(f, (unsigned)L->nop),
		    LLVMGetParam(f, (unsigned)L->nop + 1));
	LLVMBuildRetVoid(C->b);
	C->fn = part;
	LLVMPositionBuilderAtEnd(C->b, at);
	return f;
}

/* The kernel of L: an equal key's, or a new one. */
static CgKernel *
kernel_get(CgCtx *C, const Nest *L)
{
	Key k = {0};
	uint64_t attrs = param_attrs(C, L);
	int share = (L->flags & CG_NEST_SHARE) && !C->no_dedup;
	key_nest(&k, L, attrs);
	uint64_t h = fnv(k.p, k.n);
	for (int i = 0; share && i < C->nkern; i++) {
		CgKernel *q = &C->kern[i];
		if (q->key && q->hash == h && q->len == k.n &&
		    memcmp(q->key, k.p, k.n) == 0) {
			free(k.p);
			return q;
		}
	}
	if (C->nkern == C->capkern) {
		C->capkern = C->capkern * 2 + 16;
		C->kern = realloc(C->kern, (size_t)C->capkern * sizeof *C->kern);
		if (!C->kern) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			exit(1);
		}
	}
	CgKernel *q = &C->kern[C->nkern];
	memset(q, 0, sizeof *q);
	q->fn = kernel_emit(C, L, attrs);
	q->nop = L->nop;
	if (share) {
		q->key = k.p;
		q->len = k.n;
		q->hash = h;
	} else {
		free(k.p);
	}
	C->nkern++;
	return q;
}

/* tfg_k<N>_p(ptr bases, i64 begin, i64 end): what tfg_rt_parallel calls. */
static LLVMValueRef
kernel_par(CgCtx *C, CgKernel *q)
{
	LLVMValueRef args[CG_MAX_OPS + 2];
	LLVMTypeRef ps[3] = {C->ptr, C->i64, C->i64};
	LLVMBasicBlockRef at = LLVMGetInsertBlock(C->b);
	char name[64];
	size_t len;
	if (q->par)
		return q->par;
	snprintf(name, sizeof name, "%s_p", LLVMGetValueName2(q->fn, &len));
	LLVMValueRef f = new_fn(C, name, LLVMFunctionType(C->void_, ps, 3, 0));
	for (int o = 0; o < q->nop; o++) {
		LLVMValueRef i = cg_i64c(C, o);
		LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, C->ptr,
						       LLVMGetParam(f, 0), &i,
						       1, "");
		args[o] = LLVMBuildLoad2(C->b, C->ptr, p, "");
	}
	args[q->nop] = LLVMGetParam(f, 1);
	args[q->nop + 1] = LLVMGetParam(f, 2);
	LLVMBuildCall2(C->b, LLVMGlobalGetValueType(q->fn), q->fn, args,
		       (unsigned)q->nop + 2, "");
	LLVMBuildRetVoid(C->b);
	LLVMPositionBuilderAtEnd(C->b, at);
	return q->par = f;
}

/* Whether L's outermost loop may be split over threads. */
static int
nest_parallel(CgCtx *C, const Nest *L)
{
	int64_t work = 1, span = 0, min = C->par_min ? C->par_min
						     : CG_PAR_MIN;
	if (min < 0 || !(L->flags & CG_NEST_ELEM) ||
	    L->rank - L->nacc < 1 || L->dim[0] < 2)
		return 0;
	for (int d = 0; d < L->rank; d++) {
		work *= L->dim[d];
		if (d > 0) {
			if (L->stride[0][d] < 0)
				return 0;
			span += (L->dim[d] - 1) * L->stride[0][d];
		}
	}
	if (L->row > 1) { /* the body's own row: row elements from off[0]
			     (CG_NEST_ROW1: one) */
		work *= L->row;
		if (!(L->flags & CG_NEST_ROW1))
			span += L->row - 1;
	}
	return work >= min && L->stride[0][0] > span;
}

/* tfg_rt_parallel(kernel, bases, n) with L's bases in the part's
 * array. */
static void
call_parallel(CgCtx *C, const Nest *L, CgKernel *q)
{
	LLVMTypeRef ps[3] = {C->ptr, C->ptr, C->i64};
	LLVMTypeRef ty = LLVMFunctionType(C->void_, ps, 3, 0);
	LLVMValueRef par = kernel_par(C, q);
	if (!C->rt_par) {
		C->rt_par = LLVMGetNamedFunction(C->m, "tfg_rt_parallel");
		if (!C->rt_par) {
			C->rt_par = LLVMAddFunction(C->m, "tfg_rt_parallel",
						    ty);
			fn_attr(C, C->rt_par, LLVMAttributeFunctionIndex,
				"nounwind", 0);
		}
	}
	if (!C->par_bases)
		C->par_bases = cg_entry_alloca(C, LLVMArrayType2(C->ptr,
								 CG_MAX_OPS),
					       8, "bases");
	for (int o = 0; o < L->nop; o++) {
		LLVMValueRef i = cg_i64c(C, o);
		LLVMBuildStore(C->b, L->base[o],
			       LLVMBuildInBoundsGEP2(C->b, C->ptr, C->par_bases,
						     &i, 1, ""));
	}
	LLVMValueRef args[3] = {par, C->par_bases, cg_i64c(C, L->dim[0])};
	cg_flush(C);
	LLVMBuildCall2(C->b, ty, C->rt_par, args, 3, "");
}

/* Emits the nest unless some loop has no iterations. */
void
cg_nest_emit(CgCtx *C, Nest *L)
{
	LLVMValueRef args[CG_MAX_OPS + 2];
	for (int k = 0; k < L->rank; k++)
		if (L->dim[k] == 0)
			return;
	nest_collapse(L);
	if (nest_nt(C, L))
		L->flags |= CG_NEST_NT;
	CgKernel *q = kernel_get(C, L);
	if (nest_parallel(C, L)) {
		call_parallel(C, L, q);
		return;
	}
	for (int o = 0; o < L->nop; o++)
		args[o] = L->base[o];
	args[L->nop] = cg_i64c(C, 0);
	args[L->nop + 1] = cg_i64c(C, L->rank - L->nacc < 1 ? 1 : L->dim[0]);
	LLVMBuildCall2(C->b, LLVMGlobalGetValueType(q->fn), q->fn, args,
		       (unsigned)L->nop + 2, "");
}

void
cg_kernels_free(CgCtx *C)
{
	for (int i = 0; i < C->nkern; i++)
		free(C->kern[i].key);
	free(C->kern);
	C->kern = NULL;
	C->nkern = C->capkern = 0;
}
