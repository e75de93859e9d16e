/*
 * codegen/cuda.h: CUDA C for the nodes a task places on /gpu:N
 * (spec/design.md "GPUs").
 *
 * A task's module gets one CUDA C translation unit for all its parts:
 * a prelude of element functions (the CPU's semantics, codegen/cpu.c),
 * then one `extern "C" __global__` kernel per distinct kernel text.
 * Every kernel takes only device pointers (`void *` parameters, in the
 * order of CuLaunch.arg); shapes, strides and a maker's numbers are
 * compile-time constants in its text (every dim is known when code is
 * generated).  NVRTC compiles the unit to PTX (codegen/nvrtc.c); the
 * generated part launches kernels through tfg_rt_gpu_launch
 * (runtime/gpu.c) on the stream of the node's GPU.
 *
 *   cuda_prelude.c  the unit's prelude (a device function per
 *                elementwise op and dtype, casts, Philox), its kernels
 *   cuda_kern.c  elementwise ops, fused programs, makers, casts, data
 *                movement, the dispatch
 *   cuda_reduce.c  reductions, softmax
 *   cuda_mm.c    matmul (tiled shared-memory kernels, TF32 mma.sync
 *                with --gpu-tf32), with its epilogue program
 *   cuda.c       the module: which nodes, their launches, --emit=cuda
 *   cuda_blas.c  the matmuls cuBLAS may compute instead, when present
 *   nvrtc.c      NVRTC through dlopen, and the on-disk kernel cache
 */
#ifndef TFG_CODEGEN_CUDA_H
#define TFG_CODEGEN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "compiler/compiler.h"

/* A growing string (malloc'd; p is NUL-terminated, NULL when empty). */
typedef struct CuStr {
	char *p;
	size_t n, cap;
} CuStr;
void cu_printf(CuStr *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cu_puts(CuStr *s, const char *text);
void cu_str_free(CuStr *s);

#define CU_MAX_ARGS 20   /* parameters of one kernel */
#define CU_MAX_LAUNCH 8  /* launches of one node */

/* What a launch passes for each kernel parameter. */
enum {
	CU_ARG_OUT = -1,     /* the node's value (its device buffer) */
	CU_ARG_SCRATCH = -2, /* cu_scratch_bytes(n) bytes of device memory
				the node may use during its launches
				(partial results), 64-byte aligned */
	/* k >= 0: the buffer of the node's input k (n->in[k]) */
};

/* One kernel launch of a node, in order: the launches of a node run one
 * after the other on one stream. */
typedef struct CuLaunch {
	int kernel;                /* index in CuGen.names */
	uint32_t grid[3], block[3];
	uint32_t shmem;            /* dynamic shared memory, bytes */
	int nargs;
	int arg[CU_MAX_ARGS];      /* CU_ARG_* or an input index */
} CuLaunch;

/* The translation unit being built.  Kernels with the same text share
 * one entry (cu_kernel). */
typedef struct CuGen {
	CuStr src;      /* the unit so far: prelude, then kernels */
	int nkern, capkern;
	char **names;   /* [nkern] entry names "tfg_c<k>" (malloc'd) */
	char **texts;   /* [nkern] each kernel's text with "@K" for its name,
			   the sharing key (malloc'd) */
	int tf32;       /* --gpu-tf32: f32 matmuls may use TF32 tensor cores */
} CuGen;

/* Starts a unit: the prelude. */
void cu_gen_init(CuGen *g, int tf32);
void cu_gen_free(CuGen *g);
/* Adds a kernel whose text (a whole `extern "C" __global__ void @K(...)
 * { ... }` definition, "@K" where its name goes; every other '@' is
 * kept) is `text`, unless one with the same text exists; returns its
 * index. */
int cu_kernel(CuGen *g, const char *text);

/* The C type of a dtype's element in kernels: "unsigned char" (bool,
 * 0 or 1), "int", "long long", "float", "double". */
const char *cu_ctype(TfgDtype t);

/* Statements that compute fused program f's value for one element
 * (compiler/compiler.h IrFuse), ending with an assignment to the
 * variable `out` (declared by the caller, of the program's dtype).
 * in[k] is a C expression for external input k's element at the current
 * index (the caller broadcasts each input against f->shape), anchor the
 * anchor's (an epilogue's product element; NULL where there is none).
 * Locals it declares are named with prefix `pfx` so that two programs
 * may share a scope. (cuda_kern.c) */
void cu_fuse_code(CuStr *s, const IrFuse *f, const char *out,
		  const char *const *in, const char *anchor, const char *pfx);

/* Device bytes node n needs besides its value during its launches
 * (CU_ARG_SCRATCH); 0 for most. */
size_t cu_scratch_bytes(const IrNode *n);

/* Appends the kernels of node n (on a GPU; every dim known) to g and
 * fills l[0..ret) with its launches, ret <= max.  An op with no GPU
 * kernel, or a node it cannot handle, returns -1 after printing
 * "tfgc: error: codegen: node 'NAME': ..." to stderr.  A node with no
 * work (an empty tensor) may return 0 launches.  Not for OP_const,
 * OP_send, OP_recv, OP_input and the copies, which cuda.c handles.
 * (cuda_kern.c, which calls cu_gen_matmul for OP_matmul) */
int cu_gen_node(CuGen *g, const IrNode *n, CuLaunch *l, int max);
int cu_gen_matmul(CuGen *g, const IrNode *n, CuLaunch *l, int max);
size_t cu_matmul_scratch(const IrNode *n); /* cuda_mm.c */

/* cuda_blas.c: whether cuBLAS may compute matmul n (tf32: --gpu-tf32),
 * with *g what it computes; cu_gen_epilogue: n's epilogue on its own,
 * an elementwise kernel over its output in place (after cuBLAS). */
int cu_gemm_of(const IrNode *n, int tf32, TfgGpuGemm *g);
int cu_gen_epilogue(CuGen *g, const IrNode *n, CuLaunch *l);

/* Whether op has a GPU kernel (placement keeps the others on the CPU). */
int cu_has_kernel(OpKind op);

/* ---- nvrtc.c */

/* PTX of `src` for compute capability cc (e.g. 90 for sm_90), with
 * NVRTC loaded by dlopen at first use.  Looks in the kernel cache first
 * ($TFG_CUDA_CACHE, else $XDG_CACHE_HOME/tfg/cuda, else
 * ~/.cache/tfg/cuda; TFG_CUDA_CACHE=off: none), keyed by a hash of the
 * source, the options, cc and NVRTC's version, and stores what it
 * compiles there.  *ptx is malloc'd, NUL-terminated; *cached says
 * whether it came from the cache; *ms the time spent.  Returns 0, or -1
 * with a message in err (NVRTC missing: what was looked for; a compile
 * error: NVRTC's log). */
int cu_compile(const char *src, int cc, char **ptx, int *cached,
	       double *ms, char *err, size_t errlen);
/* NVRTC's version as major*1000 + minor*10, or -1 with why in err. */
int cu_nvrtc_version(char *err, size_t errlen);

/* mkdir -p path (modified while it runs, restored), each directory made
 * with mode: 0, or -1 (errno).  codegen/jit.c; the caches of jit.c and
 * nvrtc.c use it. */
int cg_mkdirs(char *path, unsigned mode);

#endif /* TFG_CODEGEN_CUDA_H */
