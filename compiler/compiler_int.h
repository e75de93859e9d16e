/*
 * compiler/compiler_int.h: what the compiler's own files share.
 */
#ifndef TFG_COMPILER_COMPILER_INT_H
#define TFG_COMPILER_COMPILER_INT_H

#include "compiler/compiler.h"

/* ir.c */
IrNode *ir_node_new(Program *p, OpKind op, int nin, SrcLoc loc);
IrNode *ir_clone(Arena *a, const IrNode *n);
const char *ir_node_label(const IrNode *n); /* name or "_<id>" */
/* Writes a const node's scalar or small tensor value, NumPy style, into
 * the arena ("2", "[1. 2.]"); long tensors are abbreviated. */
char *ir_const_str(Arena *a, const IrNode *n);
char *ir_type_str(Arena *a, TfgDtype t, const TfgShape *s); /* "f32[100]" */

/* device.c: the task a complete device names, or -1. */
int dev_task_index(const Program *p, Device d);
/* Completes unset fields: job -> first job, task -> 0, cpu:0. */
Device dev_complete(const Program *p, Device d);

/* shape.c */
int dtype_is_int(TfgDtype t);
int dtype_is_float(TfgDtype t);

#endif /* TFG_COMPILER_COMPILER_INT_H */
