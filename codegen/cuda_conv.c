/*
 * codegen/cuda_conv.c: the CUDA kernels of OP_conv2d and its gradients
 * (spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose"), one thread
 * per output element in a grid-stride loop, its sum over the elements
 * that reach it written out with the layer's shape and geometry as
 * constants:
 *   conv2d                  y[n, oy, ox, k]: the window's taps and the
 *                           input channels (depthwise: the one k reads)
 *   conv2d_backprop_input   dx[n, iy, ix, c]: the taps whose output pixel
 *                           reads it (a stride divides the distance), and
 *                           the output channels c reaches
 *   conv2d_backprop_filter  df[i, j, c, u]: every output pixel of the
 *                           batch
 * The sums run in the order of the CPU's direct loops (runtime/conv.c),
 * in the node's dtype.
 */
#include <inttypes.h>

#include "codegen/cuda_int.h"

/* The start of a kernel of node n: out, its inputs a (and b), and g's
 * sizes and geometry as constants (OC: the output's channels, c * o for
 * a depthwise convolution), each marked used for nvcc's sake. */
static void
head(CuStr *s, const IrNode *n, const TfgConv *g)
{
	const char *t = cu_ctype(n->dtype);

	cu_printf(s, "extern \"C\" __global__ void __launch_bounds__(256)\n"
		  "@K(void *p0, void *p1%s)\n{\n\ttypedef long long I;\n"
		  "\t%s *__restrict__ out = (%s *)p0;\n"
		  "\tconst %s *__restrict__ a = (const %s *)p1;\n",
		  n->nin > 1 ? ", void *p2" : "", t, t, t, t);
	if (n->nin > 1)
		cu_printf(s, "\tconst %s *__restrict__ b = (const %s *)p2;\n",
			  t, t);
	cu_printf(s, "\tconst I H = %" PRId64 ", W = %" PRId64 ", C = %" PRId64
		  ", KH = %" PRId64 ", KW = %" PRId64 ", O = %" PRId64
		  ", OH = %" PRId64 ", OW = %" PRId64 ", OC = %" PRId64
		  ", SH = %" PRId64 ", SW = %" PRId64 ", DH = %" PRId64
		  ", DW = %" PRId64 ", PT = %" PRId64 ", PL = %" PRId64
		  ", NB = %" PRId64 ";\n"
		  "\t(void)H, (void)W, (void)C, (void)KH, (void)KW, (void)O, "
		  "(void)OH, (void)OW, (void)OC, (void)SH, (void)SW, (void)DH, "
		  "(void)DW, (void)PT, (void)PL, (void)NB;\n",
		  g->h, g->w, g->c, g->kh, g->kw, g->o, g->oh, g->ow,
		  g->depthwise ? g->c * g->o : g->o, g->sh, g->sw, g->dh,
		  g->dw, g->pt, g->pl, g->n);
}

int
cu_gen_conv(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	const IrConv *v = n->conv;
	const char *t = cu_ctype(n->dtype);
	int64_t N = tfg_shape_numel(&n->shape);
	CuStr s = {0};
	TfgConv geo;

	(void)max;
	if (n->nin != 2 || n->fuse || ir_conv_geometry(n, &geo) < 0 ||
	    !cu_is_float(n->dtype) || n->in[0]->dtype != n->dtype ||
	    n->in[1]->dtype != n->dtype)
		return cu_fail(n, "convolution: malformed node");
	if (N == 0)
		return 0;
	head(&s, n, &geo);
	cu_printf(&s, "\tfor (I e = (I)blockIdx.x * 256 + threadIdx.x; "
		  "e < (I)%" PRId64 "; e += (I)gridDim.x * 256) {\n"
		  "\t\t%s s = 0;\n", N, t);
	if (n->op == OP_conv2d) {
		cu_printf(&s,
			  "\t\tconst I k = e %% OC, ox = e / OC %% OW, "
			  "oy = e / (OC * OW) %% OH, img = e / (OC * OW * OH);\n"
			  "\t\tfor (I i = 0; i < KH; i++)\n"
			  "\t\tfor (I j = 0; j < KW; j++) {\n"
			  "\t\t\tconst I iy = oy * SH - PT + i * DH, "
			  "ix = ox * SW - PL + j * DW;\n"
			  "\t\t\tif (iy < 0 || iy >= H || ix < 0 || ix >= W)\n"
			  "\t\t\t\tcontinue;\n"
			  "\t\t\tconst %s *xp = a + ((img * H + iy) * W + ix) "
			  "* C;\n"
			  "\t\t\tconst %s *fp = b + (i * KW + j) * C * O;\n",
			  t, t);
		if (v->depthwise)
			cu_puts(&s, "\t\t\ts += xp[k / O] * fp[k];\n");
		else
			cu_puts(&s, "\t\t\tfor (I z = 0; z < C; z++)\n"
				"\t\t\t\ts += xp[z] * fp[z * O + k];\n");
		cu_puts(&s, "\t\t}\n");
	} else if (n->op == OP_conv2d_backprop_input) {
		cu_printf(&s,
			  "\t\tconst I z = e %% C, ix = e / C %% W, "
			  "iy = e / (C * W) %% H, img = e / (C * W * H);\n"
			  "\t\tfor (I i = 0; i < KH; i++)\n"
			  "\t\tfor (I j = 0; j < KW; j++) {\n"
			  "\t\t\tconst I ty = iy + PT - i * DH, "
			  "tx = ix + PL - j * DW;\n"
			  "\t\t\tif (ty < 0 || tx < 0 || ty %% SH || tx %% SW "
			  "|| ty / SH >= OH || tx / SW >= OW)\n"
			  "\t\t\t\tcontinue;\n"
			  "\t\t\tconst %s *gp = a + ((img * OH + ty / SH) * OW "
			  "+ tx / SW) * OC%s;\n"
			  "\t\t\tconst %s *fp = b + ((i * KW + j) * C + z) * "
			  "O;\n"
			  "\t\t\tfor (I u = 0; u < O; u++)\n"
			  "\t\t\t\ts += gp[u] * fp[u];\n"
			  "\t\t}\n", t, v->depthwise ? " + z * O" : "", t);
	} else {
		cu_printf(&s,
			  "\t\tconst I u = e %% O, z = e / O %% C, "
			  "j = e / (O * C) %% KW, i = e / (O * C * KW);\n"
			  "\t\tfor (I img = 0; img < NB; img++)\n"
			  "\t\tfor (I oy = 0; oy < OH; oy++)\n"
			  "\t\tfor (I ox = 0; ox < OW; ox++) {\n"
			  "\t\t\tconst I iy = oy * SH - PT + i * DH, "
			  "ix = ox * SW - PL + j * DW;\n"
			  "\t\t\tif (iy < 0 || iy >= H || ix < 0 || ix >= W)\n"
			  "\t\t\t\tcontinue;\n"
			  "\t\t\ts += a[((img * H + iy) * W + ix) * C + z] * "
			  "b[((img * OH + oy) * OW + ox) * OC + %s];\n"
			  "\t\t}\n", v->depthwise ? "z * O + u" : "u");
	}
	cu_puts(&s, "\t\tout[e] = s;\n\t}\n}\n");
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(N, CU_BLOCK),
		      CU_BLOCK, 1);
	l->nargs = 3;
	l->arg[0] = CU_ARG_OUT;
	l->arg[1] = 0;
	l->arg[2] = 1;
	cu_str_free(&s);
	return 1;
}

/* Pools, one thread per output element: a max or an average over the
 * window's elements inside the input (a NaN is the maximum); the input's
 * gradient per element of the input: the output pixels whose windows
 * hold it, their gradient where it is the window's first maximum, or
 * divided by the window's count. */
int
cu_gen_pool(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	int grad = n->op == OP_max_pool_grad || n->op == OP_avg_pool_grad;
	const char *t = cu_ctype(n->dtype);
	int64_t N = tfg_shape_numel(&n->shape);
	CuStr s = {0};
	TfgConv geo;

	(void)max;
	if (n->fuse || ir_conv_geometry(n, &geo) < 0 ||
	    !cu_dt_ok(n->dtype) ||
	    n->dtype == TFG_BOOL || n->in[0]->dtype != n->dtype ||
	    (n->nin > 1 && n->in[1]->dtype != n->dtype))
		return cu_fail(n, "pool: malformed node");
	if (N == 0)
		return 0;
	head(&s, n, &geo);
	cu_printf(&s, "\tfor (I e = (I)blockIdx.x * 256 + threadIdx.x; "
		  "e < (I)%" PRId64 "; e += (I)gridDim.x * 256) {\n", N);
	if (!grad) {
		cu_printf(&s,
			  "\t\tconst I z = e %% C, ox = e / C %% OW, "
			  "oy = e / (C * OW) %% OH, img = e / (C * OW * OH);\n"
			  "\t\tconst I y0 = oy * SH - PT < 0 ? 0 : oy * SH - PT;\n"
			  "\t\tconst I y1 = oy * SH - PT + KH < H ? "
			  "oy * SH - PT + KH : H;\n"
			  "\t\tconst I x0 = ox * SW - PL < 0 ? 0 : ox * SW - PL;\n"
			  "\t\tconst I x1 = ox * SW - PL + KW < W ? "
			  "ox * SW - PL + KW : W;\n"
			  "\t\tconst %s *ip = a + img * H * W * C + z;\n"
			  "\t\t%s s = ip[(y0 * W + x0) * C];\n"
			  "\t\tfor (I iy = y0; iy < y1; iy++)\n"
			  "\t\tfor (I ix = x0; ix < x1; ix++) {\n"
			  "\t\t\tif (iy == y0 && ix == x0)\n\t\t\t\tcontinue;\n"
			  "\t\t\tconst %s u = ip[(iy * W + ix) * C];\n", t, t, t);
		if (n->op == OP_max_pool)
			cu_puts(&s, "\t\t\ts = u > s || u != u ? u : s;\n\t\t}\n");
		else
			cu_printf(&s, "\t\t\ts = s + u;\n\t\t}\n\t\ts = s / "
				  "(%s)((y1 - y0) * (x1 - x0));\n", t);
		cu_puts(&s, "\t\tout[e] = s;\n\t}\n}\n");
	} else {
		cu_printf(&s,
			  "\t\tconst I z = e %% C, ix = e / C %% W, "
			  "iy = e / (C * W) %% H, img = e / (C * W * H);\n"
			  "\t\t%s s = 0;\n"
			  "\t\tfor (I oy = 0; oy < OH; oy++)\n"
			  "\t\tfor (I ox = 0; ox < OW; ox++) {\n"
			  "\t\t\tconst I y0 = oy * SH - PT < 0 ? 0 : "
			  "oy * SH - PT;\n"
			  "\t\t\tconst I y1 = oy * SH - PT + KH < H ? "
			  "oy * SH - PT + KH : H;\n"
			  "\t\t\tconst I x0 = ox * SW - PL < 0 ? 0 : "
			  "ox * SW - PL;\n"
			  "\t\t\tconst I x1 = ox * SW - PL + KW < W ? "
			  "ox * SW - PL + KW : W;\n"
			  "\t\t\tif (iy < y0 || iy >= y1 || ix < x0 || ix >= x1)\n"
			  "\t\t\t\tcontinue;\n"
			  "\t\t\tconst %s g = %s[((img * OH + oy) * OW + ox) * C "
			  "+ z];\n", t, t, n->op == OP_max_pool_grad ? "b" : "a");
		if (n->op == OP_avg_pool_grad) {
			cu_printf(&s, "\t\t\ts = s + g / (%s)((y1 - y0) * "
				  "(x1 - x0));\n\t\t}\n", t);
		} else {
			cu_printf(&s,
				  "\t\t\tconst %s *ip = a + img * H * W * C + z;\n"
				  "\t\t\tI at = y0 * W + x0;\n"
				  "\t\t\tfor (I qy = y0; qy < y1; qy++)\n"
				  "\t\t\tfor (I qx = x0; qx < x1; qx++) {\n"
				  "\t\t\t\tconst %s m = ip[at * C], u = "
				  "ip[(qy * W + qx) * C];\n"
				  "\t\t\t\tif (m == m && (u > m || u != u))\n"
				  "\t\t\t\t\tat = qy * W + qx;\n"
				  "\t\t\t}\n"
				  "\t\t\tif (at == iy * W + ix)\n"
				  "\t\t\t\ts = s + g;\n\t\t}\n", t, t);
		}
		cu_puts(&s, "\t\tout[e] = s;\n\t}\n}\n");
	}
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(N, CU_BLOCK),
		      CU_BLOCK, 1);
	l->nargs = 1 + n->nin;
	l->arg[0] = CU_ARG_OUT;
	l->arg[1] = 0;
	l->arg[2] = 1;
	cu_str_free(&s);
	return 1;
}
