/*
 * codegen/cg_int.h: shared by codegen/cpu.c (IR -> LLVM IR) and
 * codegen/jit.c (target machine, passes, ORC LLJIT).
 */
#ifndef TFG_CODEGEN_CG_INT_H
#define TFG_CODEGEN_CG_INT_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen/codegen.h"

#define CG_SLOT_ALIGN 64 /* arena slots, and the arena itself */
#define CG_MAX_OPS 4     /* operands of one loop nest (out + 3 inputs) */

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
	LLVMValueRef fn;       /* the part function being built */
	LLVMValueRef ctx_arg, arena_arg;
	const IrPart *part;    /* the part being built */
	int cur;               /* index in part of the node being emitted */
	LLVMValueRef *val;     /* [part->n]: each node's buffer (ptr) */
	size_t *off;           /* [part->n]: arena offset, (size_t)-1: none */
	size_t arena_size;     /* of the part being built */
} CgCtx;

/* cpu.c: builds the module of `task` into m (in context c, for which the
 * caller has set triple and data layout); sizes[s] gets the arena size
 * of signature s, has[s] whether tfg_part_<s> was defined.  cpu, when not
 * NULL, goes on every function as "target-cpu" (and features as
 * "target-features" when not NULL and not empty).  Returns 0 or non-zero
 * after printing an error. */
int cg_build_module(LLVMContextRef c, LLVMModuleRef m, const Program *p,
		    int task, const char *cpu, const char *features,
		    size_t *sizes, int *has);

/* cpu.c: one emitter per op of stdlib/ops.def (declared from the list,
 * so an op without one fails to link).  Each emits node n of the current
 * part; 0, or non-zero after printing an error. */
#define OP(name, ...) int cpu_emit_##name(CgCtx *C, IrNode *n);
#include "stdlib/ops.def"
/* Bytes per element of a dtype (the runtime's table, duplicated so the
 * codegen needs no runtime object). */
size_t cg_dtype_size(TfgDtype t);

#endif /* TFG_CODEGEN_CG_INT_H */
