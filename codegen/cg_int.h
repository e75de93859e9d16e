/*
 * codegen/cg_int.h: shared by codegen/module.c (the module and its
 * parts, the backend table, the helpers every backend uses), the CPU
 * backend (codegen/cpu.c and its op families, codegen/cpu_*.c), the GPU
 * backend's LLVM side (codegen/cuda.c) and codegen/jit.c (target
 * machine, passes, ORC LLJIT).
 */
#ifndef TFG_CODEGEN_CG_INT_H
#define TFG_CODEGEN_CG_INT_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/codegen.h"

#define CG_SLOT_ALIGN 64 /* arena slots, and the arena itself */
#define CG_MAX_OPS 16    /* operands of one loop nest (out + inputs;
			    fused groups have up to 12 inputs) */

struct CgKernel;
typedef struct CgGpu CgGpu; /* codegen/cuda.c */

/* State while one task's module is built. */
typedef struct CgCtx {
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMBuilderRef b;
	const Program *p;
	int task;
	int err;               /* an emitter failed (message printed) */
	LLVMTypeRef i1, i8, i32, i64, f32, f64, ptr, void_;
	LLVMTypeRef rt_ty;     /* i32 (ptr, i32, ptr): tfg_rt_recv/send */
	LLVMValueRef rt_recv, rt_send;
	LLVMTypeRef rt_ref_ty; /* i32 (ptr, i32, ptr, ptr): tfg_rt_recv_ref */
	LLVMValueRef rt_recv_ref;
	LLVMValueRef ref_slot; /* the part's ptr alloca for tfg_rt_recv_ref */
	LLVMValueRef rt_mark;  /* tfg_rt_mark; NULL: no trace */
	LLVMTypeRef rt_check_ty; /* i32 (ptr, ptr, i64, i32, ptr) */
	LLVMValueRef rt_check; /* tfg_rt_check; NULL: no --check-numerics */
	LLVMTypeRef rt_var_ty; /* i32 (ptr, i32, i32, ptr, ptr): tfg_rt_var */
	LLVMValueRef rt_var;   /* declared on first use (cpu_state.c) */
	LLVMValueRef held_slot; /* the part's ptr alloca for TFG_VAR_HOLD_* */
	LLVMTypeRef rt_apply_ty; /* i32 (ptr, i32, i32, i32, ptr, ptr, ptr) */
	LLVMValueRef rt_apply; /* tfg_rt_apply, declared on first use */
	LLVMTypeRef rt_apply_rows_ty; /* and tfg_rt_apply_rows: */
	LLVMValueRef rt_apply_rows;   /* (ptr, i32, i32, i32, ptr, i64, ptr,
					 ptr, ptr) */
	LLVMValueRef rt_flush; /* tfg_rt_flush, declared on first use */
	LLVMValueRef fn;       /* the part function being built */
	LLVMValueRef ctx_arg, arena_arg;
	const IrPart *part;    /* the part being built */
	int cur;               /* index in part of the node being emitted */
	LLVMValueRef *val;     /* [part->n]: each node's buffer (ptr) */
	LLVMValueRef *slot;    /* [nslot]: the slot pointers layout() made */
	int nslot;
	size_t *off;           /* [part->n]: arena offset, (size_t)-1: none */
	size_t arena_size;     /* of the part being built */
	int no_dedup;          /* $TFG_KERNEL_DEDUP=0: no kernel shared */
	int64_t par_min;       /* $TFG_PAR_MIN: least work split (< 0 never) */
	int64_t nt_min;        /* $TFG_NT_MIN: least output bytes written
				  with non-temporal stores (< 0 never) */
	int64_t epi_block;     /* $TFG_EPI_BLOCK: bytes of product rows per
				  BLAS call under an epilogue (0: the
				  default, cpu_shape.c) */
	const char *cpu, *features; /* function attributes (may be NULL) */
	/* outlined kernels (cpu_nest.c), shared by the module's parts */
	struct CgKernel *kern;
	int nkern, capkern;
	LLVMValueRef rt_par;   /* tfg_rt_parallel, declared on first use */
	LLVMValueRef par_bases; /* the part's [CG_MAX_OPS x ptr] alloca */
	CgGpu *gpu;            /* the task's GPU code; NULL: none */
	int sig;               /* the signature of the part being built */
} CgCtx;

/* cpu.c: builds the module of `task` into m (in context c, for which the
 * caller has set triple and data layout); sizes[s] gets the arena size
 * of signature s, has[s] whether tfg_part_<s> was defined.  cpu, when not
 * NULL, goes on every function as "target-cpu" (and features as
 * "target-features" when not NULL and not empty).  Returns 0 or non-zero
 * after printing an error. */
int cg_build_module(LLVMContextRef c, LLVMModuleRef m, const Program *p,
		    int task, const char *cpu, const char *features,
		    const CgOptions *o, size_t *sizes, int *has);

/* A backend: what module.c (which builds the parts) calls for the nodes
 * of one kind of device.  prepare, before the first part (may be NULL):
 * look at the task's nodes, make what the module needs once; 0, or -1
 * (reported).  done (may be NULL): free it.  arena (GPUs): at the part's
 * entry, the base of gpu:(sp - 1)'s device arena of `size` bytes.  emit:
 * node n, at C->cur of signature C->sig; 0, or non-zero (reported). */
typedef struct CgBackend {
	const char *name;
	int (*prepare)(CgCtx *C, const CgOptions *o);
	void (*done)(CgCtx *C);
	LLVMValueRef (*arena)(CgCtx *C, int sp, size_t size);
	int (*emit)(CgCtx *C, IrNode *n);
} CgBackend;
/* cpu.c: every node in host memory, by ops.def's cpu column.  cuda.c:
 * the task's GPU nodes (prepare checks them against o->gpu_probe,
 * generates and compiles their kernels and adds the module constant,
 * C->gpu, NULL when there are none) and every copy. */
extern const CgBackend cg_cpu_backend, cg_cuda_backend;
/* module.c: tfg_rt_flush(ctx) here, before long work of the part (a
 * loop over the pool, a product of TFG_LONG_WORK multiply-adds or more):
 * the sends the part's thread held back leave first.  Nothing inside a
 * kernel (the part's call of it flushed). */
void cg_flush(CgCtx *C);
/* module.c: LLVM attribute k (of value v) on f at index idx. */
void cg_enum_attr(CgCtx *C, LLVMValueRef f, unsigned idx, const char *k,
		  uint64_t v);

/* jit.c: the shared front of the JIT, --emit=llvm and tfgc compile
 * (codegen/aot.c).  cg_llvm_init initialises LLVM's native target once.
 * cg_compile_module builds, verifies and optimises the module of `task`
 * in context c for triple (pic: position-independent, for objects); on
 * success *mp and *tmp are the caller's, and sizes/has as for
 * cg_build_module. */
void cg_llvm_init(void);
int cg_compile_module(LLVMContextRef c, const Program *p, int task,
		      const CgOptions *o, const char *triple, int pic,
		      LLVMModuleRef *mp, LLVMTargetMachineRef *tmp,
		      size_t *sizes, int *has);

/* The emitters stdlib/ops.def's cpu column names (declared from the
 * table, so a name that nothing defines fails to link), in cpu*.c and
 * cuda.c.  Each emits node n of the current part; 0, or non-zero after
 * printing an error. */
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	int cpu(CgCtx *C, IrNode *n);
#include "stdlib/ops.def"
/* cpu_shape.c: the product of n's two inputs (matmul,
 * spec §6.18 "matmul and `@`") into out, a buffer of n's shape and dtype, then
 * returns: BLAS for large f32/f64 products, else a loop nest.  (A matmul with
 * an epilogue is cpu_emit_matmul's own: blocks of rows, the program after
 * each.) */
int cg_emit_matmul_to(CgCtx *C, const IrNode *n, LLVMValueRef out);
/* cpu_state.c: a value in a variable's storage (cg_var_place, place its
 * kind, t its taker): before n's code, the variable held and n's buffer
 * set to its storage; after it, let go (an assign's input: the variable
 * then has that value).  cpu_emit_assigned is the taker assign's code. */
void cpu_var_hold(CgCtx *C, IrNode *n, const IrNode *t, int place);
void cpu_var_put(CgCtx *C, IrNode *n, const IrNode *t, int place);
void cpu_emit_assigned(CgCtx *C, IrNode *n);
/* memplan.c: buffer planning.  A slot of the arena: node (index in the
 * part) is live from its position `first` to its last reader's `last`
 * (inclusive; part order), and gets off. */
typedef struct CgSlot {
	int node;        /* index in the part */
	int space;       /* where it lives: 0 the host arena, 1 + N the
			    device arena of gpu:N (dev_slot); each space is
			    planned on its own */
	int first, last; /* live range, positions in the part */
	size_t size;     /* bytes (0: no memory) */
	size_t off;      /* assigned, 64-byte aligned */
} CgSlot;
/* The slots of part (every node but sends, constants, views and values
 * in variables' storage (cg_var_place), in part order)
 * with live ranges and offsets: *slots (malloc'd, the caller frees),
 * *peak the arena size, *unplanned (if not NULL) the sum of the aligned
 * sizes, what one slot per node would take.  Returns their number. */
int cg_plan_part(const IrPart *part, CgSlot **slots, size_t *peak,
		 size_t *unplanned);
/* What a node that has no slot holds (spec/design.md "Values in a
 * variable's storage"): CG_INTO_VAR, a value of CG_VAR_MIN bytes or
 * more computed straight into the storage of the variable that its only
 * reader, the whole assign at part position *taker, takes; CG_FROM_VAR,
 * a variable's read of CG_SEND_VAR_MIN bytes or more that its only
 * reader, the send at *taker, sends from the variable's storage (its
 * lock held meanwhile: other steps' reads of a variable that workers
 * fetch every step wait for that send, so only where a second copy
 * would cost much).  0: neither (it has a slot, or is a view). */
enum { CG_INTO_VAR = 1, CG_FROM_VAR };
#define CG_VAR_MIN ((size_t)1 << 20)
#define CG_SEND_VAR_MIN ((size_t)64 << 20)
int cg_var_place(const IrPart *part, int i, int *taker);
/* Whether a node of part after position i reads node i's value. */
int cg_read_after(const IrPart *part, int i);
/* The peak of space sp among s[0..n) (0 when it has no slot). */
size_t cg_space_peak(const CgSlot *s, int n, int sp);
/* Offsets for s[0..n) from sizes and live ranges; returns the peak. */
size_t cg_plan_offsets(CgSlot *s, int n);
/* Whether two slots would need memory at the same time (in one space). */
int cg_slots_overlap(const CgSlot *a, const CgSlot *b);

/* ---- cpu.c: what the emitters of op families (codegen/cpu_*.c) share */

typedef struct Nest Nest;
/* Called innermost with each operand's element offset; acc is the
 * accumulator (NULL without one); returns the next accumulator. */
typedef LLVMValueRef (*NestBody)(CgCtx *C, const Nest *L, LLVMValueRef *off,
				 LLVMValueRef acc);
/* Before / after the accumulating loops, at their first element. */
typedef LLVMValueRef (*NestInit)(CgCtx *C, const Nest *L, LLVMValueRef *off);
typedef void (*NestFini)(CgCtx *C, const Nest *L, LLVMValueRef *off,
			 LLVMValueRef acc);

/* The callbacks run inside an outlined kernel function (cpu_nest.c), so
 * they may use L->base[], off[], acc and constants, never a value of the
 * part function.  Nest.flags says what else cg_nest_emit may assume:
 *   CG_NEST_SHARE  the callbacks read nothing but what the kernel key
 *                  covers: from L rank nacc dim grp nop stride acc_dt
 *                  count and base; from L->n op, dtype, shape, the
 *                  inputs' dtypes and shapes, axes keepdims perm axis,
 *                  make and fuse.  Equal keys then share one kernel.
 *   CG_NEST_ELEM   body and fini touch operand 0 only at off[0] (one
 *                  element; Nest.row elements from off[0] when row > 1)
 *                  and write no other operand: outer iterations
 *                  that reach distinct output elements may run on
 *                  different threads (tfg_rt_parallel).
 *   CG_NEST_STREAM the body stores operand 0 exactly once per element
 *                  at off[0], never reads it, and uses off[0] for
 *                  nothing else (not as the element's index, as makers
 *                  do): a large flat output may then be computed a tile
 *                  at a time into a stack buffer (off[0] relative to
 *                  the tile) and written with non-temporal stores
 *                  (cpu_nest.c sets CG_NEST_NT).
 *   CG_NEST_ROW1   with Nest.row > 1: the body reads a row of Nest.row
 *                  elements of its inputs but writes only operand 0's
 *                  element at off[0] (softmax_cross_entropy), so
 *                  outer iterations one output element apart are
 *                  disjoint.
 * Without flags a nest is still outlined, but neither shared nor split. */
enum { CG_NEST_SHARE = 1, CG_NEST_ELEM = 2, CG_NEST_STREAM = 4,
       CG_NEST_NT = 8, CG_NEST_ROW1 = 16 };

struct Nest {
	int rank;                 /* loops, outermost first */
	int nacc;                 /* the innermost nacc loops accumulate */
	int64_t dim[TFG_MAX_RANK];
	int grp[TFG_MAX_RANK];    /* merge only within a group */
	int nop;                  /* operands; 0 is the output */
	LLVMValueRef base[CG_MAX_OPS];
	int64_t stride[CG_MAX_OPS][TFG_MAX_RANK]; /* in elements */
	NestInit init;
	NestBody body;            /* NULL: nothing per element */
	NestFini fini;
	const IrNode *n;          /* the node emitted */
	TfgDtype acc_dt;          /* reductions: accumulator dtype */
	int64_t count;            /* reductions: elements per output */
	unsigned flags;           /* CG_NEST_SHARE | CG_NEST_ELEM */
	int64_t row;              /* > 1: the body runs a row of this many
				     elements itself (softmax), which counts
				     as work when splitting; 0 or 1: one */
};

/* A counted loop: cg_loop_begin opens it (i from 0, an optional
 * accumulator phi), cg_loop_end closes it after n iterations. */
typedef struct Loop {
	LLVMBasicBlockRef head;
	LLVMValueRef i, acc; /* phis */
} Loop;

int cg_is_float(TfgDtype t);
int cg_is_unsigned(TfgDtype t); /* bool, u8 */
LLVMTypeRef cg_elty(CgCtx *C, TfgDtype t);        /* element type */
LLVMValueRef cg_i64c(CgCtx *C, int64_t v);        /* i64 constant */
int cg_fail(CgCtx *C, const IrNode *n, const char *msg);
LLVMValueRef cg_buf(CgCtx *C, const IrNode *n);   /* node's buffer */
LLVMValueRef cg_load_at(CgCtx *C, TfgDtype t, LLVMValueRef base,
			LLVMValueRef off);
void cg_store_at(CgCtx *C, TfgDtype t, LLVMValueRef base, LLVMValueRef off,
		 LLVMValueRef v);
LLVMValueRef cg_cvt(CgCtx *C, LLVMValueRef v, TfgDtype from, TfgDtype to);
void cg_check_rc(CgCtx *C, LLVMValueRef rc);      /* return rc if != 0 */
LLVMValueRef cg_int_divmod(CgCtx *C, LLVMValueRef a, LLVMValueRef b,
			   int want_mod);
LLVMValueRef cg_libm_call(CgCtx *C, const char *name, LLVMValueRef *args,
			  unsigned nargs);
LLVMValueRef cg_intrinsic(CgCtx *C, const char *name, LLVMValueRef *args,
			  unsigned nargs);
LLVMValueRef cg_arith(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef a,
		      LLVMValueRef b);
LLVMValueRef cg_compare(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef a,
			LLVMValueRef b);
LLVMValueRef cg_unary(CgCtx *C, OpKind op, TfgDtype t, LLVMValueRef a);
void cg_row_major(const TfgShape *s, int64_t *st);
void cg_loop_begin(CgCtx *C, Loop *lp, LLVMValueRef acc0);
LLVMValueRef cg_loop_end(CgCtx *C, Loop *lp, int64_t n, LLVMValueRef acc);
/* cpu_nest.c: emits loop nest L (collapsing what it can; nothing if a
 * dim is 0) as a call of an outlined kernel, through tfg_rt_parallel
 * when large enough. */
void cg_nest_emit(CgCtx *C, Nest *L);
void cg_kernels_free(CgCtx *C); /* the kernel table, after the module */
/* Whether an output of this many bytes is worth non-temporal stores
 * (CG_NT_MIN, or $TFG_NT_MIN). */
int cg_nt_wanted(CgCtx *C, int64_t bytes);
/* Explicit vectors (softmax's rows): a splat of scalar s to w lanes; a
 * load or store of a vector at element offset off of base (elements of
 * the vector's element type), with the given alignment, the store
 * !nontemporal when nt; the sum of the lanes in any order. */
LLVMValueRef cg_vsplat(CgCtx *C, LLVMValueRef s, int64_t w);
LLVMValueRef cg_vload(CgCtx *C, LLVMTypeRef vty, LLVMValueRef base,
		      LLVMValueRef off, unsigned align);
void cg_vstore(CgCtx *C, LLVMValueRef v, LLVMValueRef base, LLVMValueRef off,
	       unsigned align, int nt);
LLVMValueRef cg_vreduce_fadd(CgCtx *C, LLVMValueRef v);
/* A prefetch of element off of base into the L2 cache (elements of type
 * ety; any address, even past the buffer: a prefetch never faults). */
void cg_prefetch(CgCtx *C, LLVMTypeRef ety, LLVMValueRef base,
		 LLVMValueRef off);
/* An alloca in the entry block of the function being built (a kernel's
 * stack buffer). */
LLVMValueRef cg_entry_alloca(CgCtx *C, LLVMTypeRef ty, unsigned align,
			     const char *name);
/* Operand o of L reads shape s broadcast to L's rank (NumPy rules). */
void cg_nest_broadcast(Nest *L, int o, const TfgShape *s);
/* One nest over n's shape, each input broadcast, body per element. */
int cg_emit_elem(CgCtx *C, IrNode *n, int nin, NestBody body);
/* Body: out = cvt(in[0]) (operand 1 to operand 0). */
LLVMValueRef cg_body_copy(CgCtx *C, const Nest *L, LLVMValueRef *off,
			  LLVMValueRef acc);

/* ---- cpu_fuse.c: fused programs (IrFuse, compiler/pass_fuse.c) */

/* One element of elementwise op `op` with result dtype t from operand
 * values v (of dtypes it): exactly what the op's own emitter computes. */
LLVMValueRef cg_elem_apply(CgCtx *C, OpKind op, TfgDtype t,
			   const TfgDtype *it, LLVMValueRef *v);
/* Broadcast strides of shape s over the axes of shape to (in elements). */
void cg_bcast_strides(const TfgShape *s, const TfgShape *to, int64_t *st);
/* The value of n's program at one element: n's input k is L's operand
 * first + k, read at off[first + k]; anchor stands for IR_FUSE_ANCHOR
 * operands (NULL when there are none). */
LLVMValueRef cg_fuse_eval(CgCtx *C, const IrNode *n, const Nest *L,
			  int first, LLVMValueRef *off, LLVMValueRef anchor);
/* Epilogues (a matmul's, cpu_shape.c; a conv2d's or pool's, cpu_conv.c):
 * used[e] = 1 for each input e of n that its program reads (used[]
 * zeroed by the caller); the body that replaces operand 0's element,
 * the anchor, by the program's value there; base + i * st elements of
 * dtype t (i an i64 value; base itself when st is 0). */
void cg_epi_used(const IrNode *n, int *used);
LLVMValueRef cg_body_epi(CgCtx *C, const Nest *L, LLVMValueRef *off,
			 LLVMValueRef acc);
LLVMValueRef cg_at(CgCtx *C, TfgDtype t, LLVMValueRef base, LLVMValueRef i,
		   int64_t st);

/* vmath.c: exp, log, tanh and sigmoid of f32 (scalar or vector) as
 * inline IR without calls, so loops of them vectorise; errors as stated
 * in spec/language.md §6.8 "Unary elementwise functions". */
LLVMValueRef cg_vexp(CgCtx *C, LLVMValueRef x);
LLVMValueRef cg_vlog(CgCtx *C, LLVMValueRef x);
LLVMValueRef cg_vtanh(CgCtx *C, LLVMValueRef x);
LLVMValueRef cg_vsigmoid(CgCtx *C, LLVMValueRef x);
/* The same of f64. */
LLVMValueRef cg_vexp64(CgCtx *C, LLVMValueRef x);
LLVMValueRef cg_vlog64(CgCtx *C, LLVMValueRef x);
LLVMValueRef cg_vtanh64(CgCtx *C, LLVMValueRef x);
LLVMValueRef cg_vsigmoid64(CgCtx *C, LLVMValueRef x);
/* e^x for x <= 0 (or NaN), within 1 ulp, cheaper than cg_vexp: the exp
 * of sigmoid and softmax. */
LLVMValueRef cg_vexp_nonpos(CgCtx *C, LLVMValueRef x);
/* The same times 2^24, a normal number for every x <= 0 (softmax's
 * exps, whose scale cancels in e / sum). */
LLVMValueRef cg_vexp_nonpos_2p24(CgCtx *C, LLVMValueRef x);

#endif /* TFG_CODEGEN_CG_INT_H */
