/*
 * codegen/cuda_blas.c: matmuls on GPUs that cuBLAS may compute
 * (spec/design.md "GPUs").
 *
 * A product of f32 or f64 whose batch is one product or whose operands
 * each take part whole or once for all (stride 0) is a TfgGpuGemm: the
 * runtime hands it to cuBLAS when the process has it (tfg_rt_gpu_gemm),
 * else the part launches the node's own kernels (codegen/cuda_mm.c).
 * A product with an epilogue then needs the epilogue on its own: one
 * elementwise kernel that reads each product element of the output and
 * writes the program's value in its place.
 */
#include <inttypes.h>
#include <string.h>

#include "codegen/cuda_int.h"

/* m, k of operand a and k, n of b as matmul reads them (rank 1: a
 * vector, as the CPU's cg_emit_matmul_to). */
static void
dims_of(const IrNode *n, int64_t *m, int64_t *k, int64_t *nn)
{
	const TfgShape *a = &n->in[0]->shape, *b = &n->in[1]->shape;

	*m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	*k = a->rank >= 1 ? a->dims[a->rank - 1] : 1;
	*nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
}

int
cu_gemm_of(const IrNode *n, int tf32, TfgGpuGemm *g)
{
	int64_t m, k, nn, out, ab, bb;

	memset(g, 0, sizeof *g);
	if (n->op != OP_matmul || n->nin < 2 ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64) ||
	    n->in[0]->dtype != n->dtype || n->in[1]->dtype != n->dtype ||
	    n->in[0]->shape.rank < 1 || n->in[1]->shape.rank < 1)
		return 0;
	dims_of(n, &m, &k, &nn);
	out = tfg_shape_numel(&n->shape);
	if (m <= 0 || k <= 0 || nn <= 0 || out <= 0 || out % (m * nn) ||
	    m > INT32_MAX || k > INT32_MAX || nn > INT32_MAX)
		return 0;
	g->batch = out / (m * nn);
	ab = tfg_shape_numel(&n->in[0]->shape) / (m * k);
	bb = tfg_shape_numel(&n->in[1]->shape) / (k * nn);
	if ((ab != 1 && ab != g->batch) || (bb != 1 && bb != g->batch) ||
	    g->batch > INT32_MAX)
		return 0; /* partial broadcasting of the batch axes */
	g->dtype = (uint32_t)n->dtype;
	g->tf32 = tf32 && n->dtype == TFG_F32;
	g->m = m;
	g->n = nn;
	g->k = k;
	g->stride_a = ab == 1 ? 0 : m * k;
	g->stride_b = bb == 1 ? 0 : k * nn;
	g->stride_c = m * nn;
	return 1;
}

int
cu_gen_epilogue(CuGen *g, const IrNode *n, CuLaunch *l)
{
	CuStr s = {0}, e[CU_MAX_ARGS] = {{0}};
	const char *in[CU_MAX_ARGS];
	const char *t = cu_ctype(n->dtype);
	int64_t total = tfg_shape_numel(&n->shape), st[TFG_MAX_RANK];
	int nin = n->nin, k;

	if (!n->fuse || nin + 1 > CU_MAX_ARGS || !cu_fuse_ok(n->fuse, nin))
		return cu_fail(n, "an epilogue the GPU cannot run");
	cu_puts(&s, "extern \"C\" __global__ void __launch_bounds__(256)\n@K(");
	for (k = 0; k <= nin; k++)
		cu_printf(&s, "%svoid *p%d", k ? ", " : "", k);
	cu_printf(&s, ")\n{\n\t%s *__restrict__ o = (%s *)p0;\n", t, t);
	for (k = 0; k < nin; k++) {
		const IrNode *x = n->in[k];
		cu_bcast_strides(&x->shape, &n->shape, st);
		cu_printf(&e[k], "((const %s *)p%d)[", cu_ctype(x->dtype), k + 1);
		cu_put_index(&e[k], n->shape.rank, n->shape.dims, st, "i");
		cu_puts(&e[k], "]");
		in[k] = e[k].p;
	}
	cu_printf(&s, "\tfor (long long i = (long long)blockIdx.x * 256 + "
		  "threadIdx.x; i < %" PRId64 "LL; i += (long long)gridDim.x "
		  "* 256) {\n\t\t%s v;\n", total, t);
	cu_fuse_code(&s, n->fuse, "v", in, "o[i]", "e_");
	cu_puts(&s, "\t\to[i] = v;\n\t}\n}\n");
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(total, 4 * 256), 256,
		      1);
	l->nargs = nin + 1;
	l->arg[0] = CU_ARG_OUT;
	for (k = 0; k < nin; k++)
		l->arg[k + 1] = k;
	cu_str_free(&s);
	for (k = 0; k < nin; k++)
		cu_str_free(&e[k]);
	return 1;
}
