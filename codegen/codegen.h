/*
 * codegen/codegen.h: turns a task's parts (one per run signature) into one
 * LLVM module, built with the LLVM C API, optimised with the new pass
 * manager and JIT-compiled with ORC LLJIT.
 *
 * The module defines, for each signature s where the task has a part,
 *     int tfg_part_<s>(RtCtx *ctx, char *arena)
 * (see RtPartFn in runtime/tfg.h).  It calls only tfg_rt_recv,
 * tfg_rt_send, tfg_rt_var and tfg_rt_parallel from the runtime (and
 * cblas_sgemm/cblas_dgemm from OpenBLAS for large matmuls).  Loop nests
 * are internal functions tfg_k<N>, shared by nests that emit the same
 * code (codegen/cpu_nest.c).  Constants become private globals;
 * every other node gets a 64-byte-aligned slot in the arena, shared with
 * nodes whose live ranges do not overlap (codegen/memplan.c).
 */
#ifndef TFG_CODEGEN_CODEGEN_H
#define TFG_CODEGEN_CODEGEN_H

#include "compiler/compiler.h"

typedef struct CgOptions {
	const char *cpu;      /* NULL: the host CPU; else e.g. "x86-64-v3" */
	int opt_level;        /* 0..3; 2 by default */
	int trace;            /* each kernel calls tfg_rt_mark (--trace) */
	int check_numerics;   /* each float value of a CPU node is checked
				 for NaN and infinities (tfg_rt_check,
				 --check-numerics) */
	/* GPUs (codegen/cuda.c) */
	int gpu_cc;           /* compute capability to compile for (90:
				 sm_90); 0: the probed device's, else 80 */
	int gpu_probe;        /* JIT in a task: check the task's GPUs */
	int soft_placement;   /* --soft-placement: GPU ops of a task with
				 no (or too few) GPUs run on its CPU (or
				 share its GPUs) with a warning */
	int gpu_tf32;         /* --gpu-tf32: f32 matmuls on tensor cores */
	/* cg_jit: where set, whether the code came from the JIT cache
	   (codegen/jit.c) */
	int *cache_hit;
	/* Tests only: what tfg_rt_recv(_ref)/tfg_rt_send/tfg_rt_var/
	   tfg_rt_flush bind to in the JIT; NULL: the runtime's own. */
	int (*rt_recv)(struct RtCtx *ctx, uint32_t key, void *dst);
	int (*rt_recv_ref)(struct RtCtx *ctx, uint32_t key, void *dst,
			   void **data);
	int (*rt_send)(struct RtCtx *ctx, uint32_t key, const void *src);
	int (*rt_var)(struct RtCtx *ctx, uint32_t var, uint32_t op,
		      const void *src, void *dst);
	void (*rt_flush)(struct RtCtx *ctx);
} CgOptions;

/* --emit=llvm: the optimised module of `task`. Returns 0 or non-zero after
 * printing an error. */
int cg_emit_llvm(FILE *out, const Program *p, int task, const CgOptions *o);

/* --emit=memory: per signature where `task` has a part, its arena plan
 * (codegen/memplan.c): each slot's offset, size and live range, the peak
 * and the size without planning.  0, or -1 for a bad task. */
int cg_emit_memory(FILE *out, const Program *p, int task);

/* --emit=cuda: the CUDA C unit of `task`'s GPU nodes and each node's
 * launches; --emit=ptx: the unit compiled by NVRTC (for o->gpu_cc, else
 * sm_80).  0, or non-zero after printing an error. */
int cg_emit_cuda(FILE *out, const Program *p, int task, const CgOptions *o);
int cg_emit_ptx(FILE *out, const Program *p, int task, const CgOptions *o);

/* NVRTC's version (major * 1000 + minor * 10), or -1 with why in err
 * (tfgc devices). */
int cg_nvrtc_version(char *err, size_t errlen);
/* LLVM's version, "19.1.7". */
const char *cg_llvm_version(void);

typedef struct CgJit CgJit;

/* JIT-compiles the module of `task` and fills parts[0..p->nsig).
 * *ms (if not NULL) gets the wall time spent, in milliseconds. */
int cg_jit(CgJit **out, const Program *p, int task, const CgOptions *o,
	   RtPart *parts, double *ms);
void cg_jit_free(CgJit *j); /* accepts NULL */

/* tfgc compile (codegen/aot.c,
 * spec/language.md §10.3 "Ahead-of-time compilation").  The object holds the
 * module of `task` built as for the JIT but position-independent, with
 * tfg_part_<s> renamed PREFIX_part_<s>, and exports const size_t
 * PREFIX_arena_<s>, const uint64_t PREFIX_hash (the plan's) and the
 * TfgPartTable PREFIX_parts with the plan's image, which an AOT task
 * server serves (tfg_serve_part); with table, the same table as
 * `tfg_parts` too, which `tfgc server --part` looks up.  Returns 0 or
 * non-zero after printing an error. */
typedef struct CgAot {
	const char *obj;    /* the object file to write */
	const char *prefix; /* a C identifier */
	int table;          /* also export PREFIX_parts as tfg_parts (shared
			       objects) */
	int blas;           /* set: the object calls tfg_rt_gemm, so its
			       programs link -lopenblas too */
} CgAot;
int cg_aot_object(const Program *p, int task, const CgOptions *o,
		  CgAot *a);
/* Whether signature s is driven from `task` and needs no other task:
 * those get a wrapper in the header. */
int cg_aot_standalone(const Program *p, int task, int s);
/* The C header for the object: declarations of its symbols and a typed
 * wrapper per standalone signature.  obj names the object in a comment,
 * with the libraries to link (a->blas: -lopenblas too). */
void cg_aot_header(FILE *out, const Program *p, int task,
		   const CgAot *a, const char *obj);
/* Links the object into a shared object with the system's C compiler
 * ($CC, else cc).  Returns 0 or non-zero after printing an error. */
int cg_aot_link_shared(const char *obj, const char *so);

#endif /* TFG_CODEGEN_CODEGEN_H */
