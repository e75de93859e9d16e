/*
 * codegen/cuda_int.h: what the CUDA C generators (codegen/cuda_prelude.c,
 * cuda_kern.c, cuda_reduce.c, ...) share besides codegen/cuda.h.
 */
#ifndef TFG_CODEGEN_CUDA_INT_H
#define TFG_CODEGEN_CUDA_INT_H

#include "codegen/cuda.h"

#define CU_BLOCK 256              /* threads of a block */
#define CU_MAX_GRID (1 << 20)     /* blocks of a grid-stride loop */
#define CU_RED_PARTS 1024         /* RED_FULL: most partials */
#define CU_RED_FULL_MIN (1 << 16) /* RED_FULL: least elements */

/* The prelude's suffix of a dtype: b8 i32 i64 f32 f64. */
const char *cu_sfx(TfgDtype t);
int cu_is_float(TfgDtype t);
int cu_dt_ok(TfgDtype t);   /* a dtype kernels take (not strings) */
int cu_dt_size(TfgDtype t); /* bytes of an element */
/* A literal of dtype t: f for floats, i for the others, bit-exact. */
void cu_put_lit(CuStr *s, TfgDtype t, double f, int64_t i);
/* C expression x of dtype a as dtype b (cg_cvt). */
void cu_put_cvt(CuStr *s, const char *x, TfgDtype a, TfgDtype b);
/* The offset of flat index expression i over dims dim[0..rank) along
 * strides st: divisions by constants, terms of stride 0 left out. */
void cu_put_index(CuStr *s, int rank, const int64_t *dim, const int64_t *st,
		  const char *i);
void cu_row_major(const TfgShape *s, int64_t *st);
/* Strides of shape s broadcast against shape to (0 on broadcast axes). */
void cu_bcast_strides(const TfgShape *s, const TfgShape *to, int64_t *st);
/* Whether every member of f is an op the prelude has, with operands in
 * range (nin external inputs). */
int cu_fuse_ok(const IrFuse *f, int nin);
/* Prints "tfgc: error: codegen: node 'NAME': msg"; returns -1. */
int cu_fail(const IrNode *n, const char *msg);
/* Blocks for work items of per_block each, 1 to CU_MAX_GRID. */
uint32_t cu_grid_for(int64_t work, int64_t per_block);
void cu_set_launch(CuLaunch *l, int kern, uint32_t gx, uint32_t bx,
		   uint32_t by);

/* The generators stdlib/ops.def's gpu column names (declared from the
 * table, so a name that nothing defines fails to link): as cu_gen_node,
 * for a node whose dtypes and shape it checked.  Elementwise ops, makers,
 * casts and data movement are cuda_kern.c's, reductions (argmax, argmin
 * among them) and softmax cuda_reduce.c's, matmul cuda_mm.c's. */
typedef int CuGenFn(CuGen *g, const IrNode *n, CuLaunch *l, int max);
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	CuGenFn gpu;
#include "stdlib/ops.def"
size_t cu_reduce_scratch(const IrNode *n);

#endif /* TFG_CODEGEN_CUDA_INT_H */
