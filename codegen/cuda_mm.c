/*
 * codegen/cuda_mm.c: the CUDA kernels of matmul, with its epilogue
 * (spec §6.18 "matmul and `@`"; spec/design.md "GPUs", "Epilogues").
 *
 * One launch per node.  Every size is a literal of the kernel's text, so
 * NVRTC folds the index math and unrolls the tile loops.  The grid is
 * (tiles, 1, batch): x numbers the output tiles in groups of MM_GROUP
 * tile rows (so that the blocks running together share rows of a and
 * columns of b in L2), z the batch elements, each of which is one
 * product at its batch offsets (0 on broadcast axes, the CPU's
 * batch_strides); past 65535 products each block loops over z.  When b
 * has no batch axes and a all of them, the batch is just more rows of
 * one product (as cpu_shape.c does for BLAS), provided every input the
 * epilogue reads walks those rows as one axis.
 *
 *   simple  f64, i32, i64, small or k = 0 products: 64x64 output tiles,
 *           k in steps of 16 through shared memory, 16x16 threads with
 *           4x4 outputs each; every element summed in order of k as
 *           the CPU's loop, integers in unsigned arithmetic (wrapping as
 *           the CPU's, then cast back).
 *   sgemm   f32: 128x128 tiles, k in steps of 16, 256 threads with 8x8
 *           outputs each (four 4x4 quadrants, so that the shared-memory
 *           reads are float4 and conflict-free), float4 global loads
 *           staged in registers, a's tile transposed in shared memory,
 *           two buffers (one __syncthreads per step); 33 KiB of static
 *           shared memory, at most 128 registers (two blocks per SM).
 *   mma     f32 with --gpu-tf32: 128x256 tiles (128x128 where there
 *           are few), k in steps of 32, warps of 64x64 (4x8 fragments
 *           mma.m16n8k8 through inline PTX, TF32 inputs rounded by
 *           cvt.rna, float accumulators in registers), a's fragments by
 *           ldmatrix, cp.async copies into 4 (3) stages of dynamic shared
 *           memory (204 KiB, 105 KiB: the runtime raises the limit); the
 *           accumulators are written out from registers.
 *
 * Edges: the loads of tiles past m, n or k are guarded (zeros in shared
 * memory; a guard is written only where the sizes need it), vector loads
 * only where rows stay 16-byte aligned (k % 4 == 0 for a, n % 4 == 0 for
 * b; every buffer is at least 16-byte aligned; else 4-byte copies), and
 * the stores are guarded, the epilogue computed only for elements
 * inside.  The epilogue's program (cu_fuse_code) reads node input e at
 * the product's [.., i, j] broadcast (its row and column strides and
 * batch offset are literals); its IR_FUSE_IN(e) is node input e, so
 * in[0] and in[1] may be read as well as operands (`x @ w + x`).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda.h"

#define MM_GROUP 8          /* tile rows of a group (grid order) */
#define MM_MAX_Z 65535      /* grid z */
#define MM_MAX_X 2147483647 /* grid x */

enum { MM_SIMPLE, MM_SGEMM, MM_MMA };

/* One node's products: [m, k] @ [k, nn] per batch element z < nbat. */
typedef struct MmPlan {
	const IrNode *n;
	TfgDtype t;
	int64_t m, k, nn, nbat;
	int nb;                       /* batch axes (0 when flat) */
	int64_t bdim[TFG_MAX_RANK];   /* their extents */
	int64_t ost[TFG_MAX_RANK];    /* out's batch strides (elements) */
	int64_t ast[TFG_MAX_RANK], bst[TFG_MAX_RANK]; /* a's, b's */
	/* epilogue: input e is read (used[e]) at
	   z's offset (est[e]) + rs[e] * i + cs[e] * j */
	int used[CU_MAX_ARGS];
	int64_t est[CU_MAX_ARGS][TFG_MAX_RANK];
	int64_t rs[CU_MAX_ARGS], cs[CU_MAX_ARGS];
	int wide;                     /* offsets in a product need 64 bits */
} MmPlan;

static int
mm_fail(const IrNode *n, const char *why)
{
	fprintf(stderr, "tfgc: error: codegen: node '%s': %s\n",
		n->name ? n->name : "?", why);
	return -1;
}

static void
row_major(const TfgShape *s, int64_t *st)
{
	int64_t acc = 1;

	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = acc;
		acc *= s->dims[k];
	}
}

/* Strides of s broadcast against `to` (0 where s lacks the axis or has
 * extent 1), as codegen/cpu_fuse.c's cg_bcast_strides. */
static void
bcast_strides(const TfgShape *s, const TfgShape *to, int64_t *st)
{
	int64_t row[TFG_MAX_RANK];
	int lead = to->rank - s->rank;

	row_major(s, row);
	for (int k = 0; k < to->rank; k++)
		st[k] = k < lead || s->dims[k - lead] == 1 ? 0 : row[k - lead];
}

/* A batch shape's strides (times block) over nb axes (cpu_shape.c). */
static void
batch_strides(const TfgShape *s, int nb, int64_t block, int64_t *st)
{
	int64_t rm[TFG_MAX_RANK];
	int lead = nb - s->rank;

	row_major(s, rm);
	for (int k = 0; k < nb; k++)
		st[k] = k < lead || s->dims[k - lead] == 1
		    ? 0 : rm[k - lead] * block;
}

/* The epilogue's inputs: which the program reads, and where.  flat: the
 * batch axes are more rows, -1 unless each input walks them as one
 * axis (cpu_shape.c epi_plan). */
static int
epi_plan(MmPlan *P, int flat)
{
	const IrNode *n = P->n;
	const TfgShape *S = &n->shape;
	const IrFuse *f = n->fuse;
	int ra = n->in[0]->shape.rank, rb = n->in[1]->shape.rank;
	int nb = S->rank - (ra >= 2) - (rb >= 2);

	memset(P->used, 0, sizeof P->used);
	for (int m = 0; f && m < f->n; m++)
		for (int k = 0; k < f->ops[m].nin; k++)
			if (f->ops[m].arg[k] < 0 &&
			    f->ops[m].arg[k] != IR_FUSE_ANCHOR)
				P->used[-1 - f->ops[m].arg[k]] = 1;
	for (int e = 0; e < n->nin; e++) {
		int64_t st[TFG_MAX_RANK], fs = -1, span = 1;

		if (!P->used[e])
			continue;
		if (n->in[e]->shape.rank > S->rank)
			return -2; /* an operand that does not broadcast */
		bcast_strides(&n->in[e]->shape, S, st);
		P->cs[e] = rb >= 2 ? st[S->rank - 1] : 0;
		P->rs[e] = ra >= 2 ? st[nb] : 0;
		memcpy(P->est[e], st, sizeof st[0] * nb);
		for (int x = nb; flat && x >= 0; x--) {
			if (S->dims[x] == 1)
				continue;
			if (fs < 0)
				fs = st[x];
			else if (st[x] != fs * span)
				return -1;
			span *= S->dims[x];
		}
		if (flat)
			P->rs[e] = fs < 0 ? 0 : fs;
	}
	return 0;
}

static int
mm_plan(const IrNode *n, MmPlan *P)
{
	const TfgShape *sa, *sb;
	int ra, rb, nb;
	TfgShape ba = {0, {0}}, bb = {0, {0}}, bo = {0, {0}};
	int64_t span;

	memset(P, 0, sizeof *P);
	P->n = n;
	P->t = n->dtype;
	if (n->nin < 2 || n->nin + 1 > CU_MAX_ARGS)
		return mm_fail(n, "matmul needs 2 to 19 inputs");
	if (n->in[0]->dtype != n->dtype || n->in[1]->dtype != n->dtype ||
	    (n->dtype != TFG_F32 && n->dtype != TFG_F64 &&
	     n->dtype != TFG_I32 && n->dtype != TFG_I64 && n->dtype != TFG_U8))
		return mm_fail(n, "matmul needs two inputs of its dtype, "
			       "f32, f64, u8, i32 or i64");
	if (!n->fuse && n->nin != 2)
		return mm_fail(n, "matmul of more than two inputs without an "
			       "epilogue");
	if (n->fuse && (n->fuse->n < 1 ||
			n->fuse->ops[n->fuse->n - 1].dtype != n->dtype))
		return mm_fail(n, "matmul epilogue does not match");
	sa = &n->in[0]->shape;
	sb = &n->in[1]->shape;
	ra = sa->rank;
	rb = sb->rank;
	nb = n->shape.rank - (ra >= 2) - (rb >= 2);
	if (ra < 1 || rb < 1)
		return mm_fail(n, "matmul of a scalar");
	ba.rank = ra > 2 ? ra - 2 : 0;
	bb.rank = rb > 2 ? rb - 2 : 0;
	if (nb < 0 || nb < ba.rank || nb < bb.rank ||
	    sa->dims[ra - 1] != sb->dims[rb >= 2 ? rb - 2 : 0])
		return mm_fail(n, "matmul shapes do not match");
	for (int e = 0; e < n->nin; e++)
		if (!shape_known(&n->in[e]->shape) ||
		    (e >= 2 && n->in[e]->shape.rank > n->shape.rank))
			return mm_fail(n, "matmul input with unknown dims or "
				       "above the output's rank");
	memcpy(ba.dims, sa->dims, sizeof ba.dims[0] * ba.rank);
	memcpy(bb.dims, sb->dims, sizeof bb.dims[0] * bb.rank);
	bo.rank = nb;
	memcpy(bo.dims, n->shape.dims, sizeof bo.dims[0] * nb);
	P->m = ra >= 2 ? sa->dims[ra - 2] : 1;
	P->k = sa->dims[ra - 1];
	P->nn = rb >= 2 ? sb->dims[rb - 1] : 1;
	P->nbat = tfg_shape_numel(&bo);

	/* the batch as rows: b unbatched, a with every batch axis */
	if (ra >= 2 && bb.rank == 0 && ba.rank == nb && nb > 0 &&
	    epi_plan(P, 1) == 0) {
		P->m *= P->nbat;
		P->nbat = 1;
	} else {
		if (epi_plan(P, 0) < 0)
			return mm_fail(n, "matmul epilogue reads an operand "
				       "that does not broadcast");
		P->nb = nb;
		memcpy(P->bdim, bo.dims, sizeof bo.dims[0] * nb);
		batch_strides(&bo, nb, P->m * P->nn, P->ost);
		batch_strides(&ba, nb, P->m * P->k, P->ast);
		batch_strides(&bb, nb, P->k * P->nn, P->bst);
	}
	/* offsets inside one product: ix in the kernels; rows and columns
	   (with a tile past them) are int */
	if (P->m > INT32_MAX - 256 || P->nn > INT32_MAX - 256)
		return mm_fail(n, "matmul of more than 2^31 rows or columns");
	span = P->m * P->k;
	span = P->k * P->nn > span ? P->k * P->nn : span;
	span = P->m * P->nn > span ? P->m * P->nn : span;
	for (int e = 0; e < n->nin; e++) {
		int64_t last = (P->m - 1) * P->rs[e] + (P->nn - 1) * P->cs[e];
		if (P->used[e] && last > span)
			span = last;
	}
	P->wide = span > INT32_MAX - 4096;
	return 0;
}

/* ---- pieces of kernel text shared by the three kernels */

/* `void *p0, ..., void *pN`: out, then every input. */
static void
emit_head(CuStr *s, const MmPlan *P, const char *bounds)
{
	cu_printf(s, "extern \"C\" __global__ void %s\n@K(void *p0", bounds);
	for (int e = 0; e < P->n->nin; e++)
		cu_printf(s, ", void *p%d", e + 1);
	cu_printf(s, ")\n{\n"
		  "\ttypedef %s ix;\n"
		  "\tconst ix M = %lld, N = %lld, K = %lld;\n"
		  "\t(void)M, (void)N, (void)K;\n",
		  P->wide ? "long long" : "int", (long long)P->m,
		  (long long)P->nn, (long long)P->k);
}

/* bm, bn: the first row and column of this block's tile (BM x BN),
 * from blockIdx.x in groups of MM_GROUP tile rows. */
static void
emit_tile(CuStr *s, const MmPlan *P, int bm, int bn)
{
	int64_t tm = (P->m + bm - 1) / bm, tn = (P->nn + bn - 1) / bn;

	cu_printf(s,
		  "\tconst int tile = blockIdx.x, grp = tile / %lld;\n"
		  "\tconst int gsz = %lld - grp * %d < %d ? "
		  "%lld - grp * %d : %d;\n"
		  "\tconst int bm = (grp * %d + tile %% %lld %% gsz) * %d;\n"
		  "\tconst int bn = (tile %% %lld / gsz) * %d;\n",
		  (long long)(MM_GROUP * tn), (long long)tm, MM_GROUP,
		  MM_GROUP, (long long)tm, MM_GROUP, MM_GROUP, MM_GROUP,
		  (long long)(MM_GROUP * tn), bm, (long long)(MM_GROUP * tn),
		  bn);
}

/* `const long long NAME = ...;`: batch element z's offset along strides
 * st of the batch axes. */
static void
emit_zoff(CuStr *s, const MmPlan *P, const char *name, const int64_t *st)
{
	int64_t inner = P->nbat;

	cu_printf(s, "\t\tconst long long %s = 0", name);
	for (int x = 0; x < P->nb; x++) {
		inner /= P->bdim[x];
		if (st[x] == 0)
			continue;
		if (x == 0)
			cu_printf(s, " + z / %lld * %lldLL", (long long)inner,
				  (long long)st[x]);
		else
			cu_printf(s, " + z / %lld %% %lld * %lldLL",
				  (long long)inner, (long long)P->bdim[x],
				  (long long)st[x]);
	}
	cu_puts(s, ";\n");
}

/* Opens the loop over the batch (z), with the pointers of its product:
 * C (out), A, B, and E<e> for the inputs the epilogue reads. */
static void
emit_batch(CuStr *s, const MmPlan *P)
{
	const char *ct = cu_ctype(P->t);
	char name[16];

	if (P->nbat == 1)
		cu_puts(s, "\t{\n");
	else if (P->nbat <= MM_MAX_Z)
		cu_puts(s, "\t{\n\t\tconst long long z = blockIdx.z;\n");
	else
		cu_printf(s, "\tfor (long long z = blockIdx.z; z < %lldLL; "
			  "z += gridDim.z) {\n", (long long)P->nbat);
	emit_zoff(s, P, "zc", P->ost);
	emit_zoff(s, P, "za", P->ast);
	emit_zoff(s, P, "zb", P->bst);
	cu_printf(s, "\t\t%s *C = (%s *)p0 + zc;\n"
		  "\t\tconst %s *__restrict__ A = (const %s *)p1 + za;\n"
		  "\t\tconst %s *__restrict__ B = (const %s *)p2 + zb;\n",
		  ct, ct, ct, ct, ct, ct);
	for (int e = 0; e < P->n->nin; e++) {
		const char *et = cu_ctype(P->n->in[e]->dtype);
		if (!P->used[e])
			continue;
		snprintf(name, sizeof name, "ze%d", e);
		emit_zoff(s, P, name, P->est[e]);
		cu_printf(s, "\t\tconst %s *E%d = (const %s *)p%d + ze%d;\n",
			  et, e, et, e + 1, e);
	}
}

/* Statements storing `val` (an expression of the product's C type) at
 * row gi, column gj (ix variables in scope, inside the product), through
 * the epilogue when there is one. */
static void
emit_store(CuStr *s, const MmPlan *P, const char *val, const char *ind)
{
	const IrNode *n = P->n;
	const char *ct = cu_ctype(P->t);
	const char *in[CU_MAX_ARGS];
	char buf[CU_MAX_ARGS][96];

	if (!n->fuse) {
		cu_printf(s, "%sC[gi * N + gj] = %s;\n", ind, val);
		return;
	}
	for (int e = 0; e < n->nin; e++) {
		int w = 0;
		in[e] = "0";
		if (!P->used[e])
			continue;
		w = snprintf(buf[e], sizeof buf[e], "E%d[0", e);
		if (P->rs[e])
			w += snprintf(buf[e] + w, sizeof buf[e] - w,
				      " + gi * %lld", (long long)P->rs[e]);
		if (P->cs[e])
			w += snprintf(buf[e] + w, sizeof buf[e] - w,
				      " + gj * %lld", (long long)P->cs[e]);
		snprintf(buf[e] + w, sizeof buf[e] - w, "]");
		in[e] = buf[e];
	}
	cu_printf(s, "%s{\n%s%s mm_p = %s;\n%s%s mm_v;\n", ind, ind, ct, val,
		  ind, ct);
	{
		CuStr f = {0};
		cu_fuse_code(&f, n->fuse, "mm_v", in, "mm_p", "e_");
		/* indent its lines */
		for (const char *p = f.p, *q; p && *p; p = q) {
			q = strchr(p, '\n');
			q = q ? q + 1 : p + strlen(p);
			cu_printf(s, "%s%.*s", ind, (int)(q - p), p);
		}
		cu_str_free(&f);
	}
	cu_printf(s, "%sC[gi * N + gj] = mm_v;\n%s}\n", ind, ind);
}

/* ---- simple: f64, integers, small products */

static void
gen_simple(CuStr *s, const MmPlan *P)
{
	const char *ct = cu_ctype(P->t);
	/* integers sum in unsigned (wrapping); u8 modulo 2^32 then 256 */
	const char *ut = P->t == TFG_I32 || P->t == TFG_U8 ? "unsigned int" :
			 P->t == TFG_I64 ? "unsigned long long" : ct;

	emit_head(s, P, "__launch_bounds__(256)");
	cu_printf(s, "\t__shared__ %s As[16][65];\n"
		  "\t__shared__ %s Bs[16][64];\n"
		  "\tconst int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n",
		  ct, ct);
	emit_tile(s, P, 64, 64);
	emit_batch(s, P);
	cu_printf(s,
		  "\t\t%s acc[4][4];\n"
		  "#pragma unroll\n"
		  "\t\tfor (int i = 0; i < 4; i++)\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int j = 0; j < 4; j++)\n"
		  "\t\t\t\tacc[i][j] = 0;\n"
		  "\t\tfor (ix k0 = 0; k0 < K; k0 += 16) {\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int q = 0; q < 4; q++) {\n"
		  "\t\t\t\tconst int t = threadIdx.x + q * 256;\n"
		  "\t\t\t\tconst ix gi = bm + (t >> 4), gk = k0 + (t & 15);\n"
		  "\t\t\t\tAs[t & 15][t >> 4] = gi < M && gk < K ? "
		  "A[gi * K + gk] : (%s)0;\n"
		  "\t\t\t}\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int q = 0; q < 4; q++) {\n"
		  "\t\t\t\tconst int t = threadIdx.x + q * 256;\n"
		  "\t\t\t\tconst ix gk = k0 + (t >> 6), gj = bn + (t & 63);\n"
		  "\t\t\t\tBs[t >> 6][t & 63] = gk < K && gj < N ? "
		  "B[gk * N + gj] : (%s)0;\n"
		  "\t\t\t}\n"
		  "\t\t\t__syncthreads();\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int kk = 0; kk < 16; kk++) {\n"
		  "\t\t\t\t%s a[4], b[4];\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int i = 0; i < 4; i++) {\n"
		  "\t\t\t\t\ta[i] = (%s)As[kk][ty + 16 * i];\n"
		  "\t\t\t\t\tb[i] = (%s)Bs[kk][tx + 16 * i];\n"
		  "\t\t\t\t}\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int i = 0; i < 4; i++)\n"
		  "#pragma unroll\n"
		  "\t\t\t\t\tfor (int j = 0; j < 4; j++)\n"
		  "\t\t\t\t\t\tacc[i][j] += a[i] * b[j];\n"
		  "\t\t\t}\n"
		  "\t\t\t__syncthreads();\n"
		  "\t\t}\n"
		  "#pragma unroll\n"
		  "\t\tfor (int i = 0; i < 4; i++)\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int j = 0; j < 4; j++) {\n"
		  "\t\t\t\tconst ix gi = bm + ty + 16 * i, "
		  "gj = bn + tx + 16 * j;\n"
		  "\t\t\t\tif (gi < M && gj < N) {\n",
		  ut, ct, ct, ut, ut, ut);
	emit_store(s, P, P->t == TFG_I32 ? "(int)acc[i][j]"
		   : P->t == TFG_I64 ? "(long long)acc[i][j]"
		   : P->t == TFG_U8 ? "(unsigned char)acc[i][j]" : "acc[i][j]",
		   "\t\t\t\t\t");
	cu_puts(s, "\t\t\t\t}\n\t\t\t}\n\t}\n}\n");
}

/* ---- sgemm: f32 on the CUDA cores */

/* "a && b" of the guards that apply ("" if none) into buf. */
static const char *
guard(char *buf, size_t len, const char *a, const char *b)
{
	snprintf(buf, len, "%s%s%s", a ? a : "", a && b ? " && " : "",
		 b ? b : "");
	return buf;
}

/* The loads of k step k0 into registers ra[2], rb[2]: a's rows ar and
 * ar + 64 at columns ac..ac+3, b's rows br and br + 8 at columns
 * bc..bc+3; zeros past the edges. */
static void
sgemm_load(CuStr *s, const MmPlan *P)
{
	int gm = P->m % 128 != 0, gk = P->k % 16 != 0, gn = P->nn % 128 != 0;
	const char *c = "xyzw";
	char g[64];

	cu_puts(s, "#pragma unroll\n"
		"\t\t\tfor (int q = 0; q < 2; q++) {\n"
		"\t\t\t\tconst ix gi = bm + ar + 64 * q, gk = k0 + ac;\n");
	guard(g, sizeof g, gm ? "gi < M" : NULL, gk ? "gk < K" : NULL);
	if (P->k % 4 == 0 && *g) /* rows of a stay 16-byte aligned */
		cu_printf(s, "\t\t\t\tra[q] = %s ? *(const float4 *)"
			  "(A + gi * K + gk) : make_float4(0.0f, 0.0f, "
			  "0.0f, 0.0f);\n", g);
	else if (P->k % 4 == 0)
		cu_puts(s, "\t\t\t\tra[q] = *(const float4 *)"
			"(A + gi * K + gk);\n");
	for (int q = 0; P->k % 4 != 0 && q < 4; q++)
		cu_printf(s, "\t\t\t\tra[q].%c = %sgk + %d < K ? "
			  "A[gi * K + gk + %d] : 0.0f;\n", c[q],
			  gm ? "gi < M && " : "", q, q);
	cu_puts(s, "\t\t\t\tconst ix gk2 = k0 + br + 8 * q, gj = bn + bc;\n");
	guard(g, sizeof g, gk ? "gk2 < K" : NULL, gn ? "gj < N" : NULL);
	if (P->nn % 4 == 0 && *g)
		cu_printf(s, "\t\t\t\trb[q] = %s ? *(const float4 *)"
			  "(B + gk2 * N + gj) : make_float4(0.0f, 0.0f, "
			  "0.0f, 0.0f);\n", g);
	else if (P->nn % 4 == 0)
		cu_puts(s, "\t\t\t\trb[q] = *(const float4 *)"
			"(B + gk2 * N + gj);\n");
	for (int q = 0; P->nn % 4 != 0 && q < 4; q++)
		cu_printf(s, "\t\t\t\trb[q].%c = %sgj + %d < N ? "
			  "B[gk2 * N + gj + %d] : 0.0f;\n", c[q],
			  gk ? "gk2 < K && " : "", q, q);
	cu_puts(s, "\t\t\t}\n");
}

/* Thread (ty, tx) of a 16 x 16 grid (each warp 4 x 8 of it, so that a
 * warp reads 4 + 8 distinct float4 of shared memory per k) owns rows
 * ty*4.. and 64 + ty*4.. and columns tx*4.. and 64 + tx*4.. of the
 * block's tile, acc[i][j] with i, j < 8 in that order. */
static void
gen_sgemm(CuStr *s, const MmPlan *P)
{
	int64_t kt = (P->k + 15) / 16;

	emit_head(s, P, "__launch_bounds__(256, 2)");
	cu_puts(s, "\t__shared__ __align__(16) float As[2][16][132];\n"
		"\t__shared__ __align__(16) float Bs[2][16][128];\n"
		"\tconst int tid = threadIdx.x, warp = tid >> 5, "
		"lane = tid & 31;\n"
		"\tconst int ty = (warp >> 1) * 4 + (lane >> 3);\n"
		"\tconst int tx = (warp & 1) * 8 + (lane & 7);\n"
		"\tconst int ar = tid >> 2, ac = (tid & 3) * 4;\n"
		"\tconst int br = tid >> 5, bc = (tid & 31) * 4;\n");
	emit_tile(s, P, 128, 128);
	emit_batch(s, P);
	cu_puts(s, "\t\tfloat acc[8][8];\n"
		"#pragma unroll\n"
		"\t\tfor (int i = 0; i < 8; i++)\n"
		"#pragma unroll\n"
		"\t\t\tfor (int j = 0; j < 8; j++)\n"
		"\t\t\t\tacc[i][j] = 0.0f;\n"
		"\t\tfloat4 ra[2], rb[2];\n"
		"\t\tix k0 = 0;\n");
	sgemm_load(s, P);
	cu_printf(s, "#pragma unroll\n"
		  "\t\tfor (int q = 0; q < 2; q++) {\n"
		  "\t\t\tAs[0][ac][ar + 64 * q] = ra[q].x;\n"
		  "\t\t\tAs[0][ac + 1][ar + 64 * q] = ra[q].y;\n"
		  "\t\t\tAs[0][ac + 2][ar + 64 * q] = ra[q].z;\n"
		  "\t\t\tAs[0][ac + 3][ar + 64 * q] = ra[q].w;\n"
		  "\t\t\t*(float4 *)&Bs[0][br + 8 * q][bc] = rb[q];\n"
		  "\t\t}\n"
		  "\t\t__syncthreads();\n"
		  "\t\tfor (int kt = 0; kt < %lld; kt++) {\n"
		  "\t\t\tconst int cur = kt & 1;\n"
		  "\t\t\tif (kt + 1 < %lld) {\n"
		  "\t\t\t\tk0 = (ix)(kt + 1) * 16;\n",
		  (long long)kt, (long long)kt);
	sgemm_load(s, P);
	cu_printf(s, "\t\t\t}\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int kk = 0; kk < 16; kk++) {\n"
		  "\t\t\t\tconst float4 a0 = *(const float4 *)"
		  "&As[cur][kk][ty * 4];\n"
		  "\t\t\t\tconst float4 a1 = *(const float4 *)"
		  "&As[cur][kk][64 + ty * 4];\n"
		  "\t\t\t\tconst float4 b0 = *(const float4 *)"
		  "&Bs[cur][kk][tx * 4];\n"
		  "\t\t\t\tconst float4 b1 = *(const float4 *)"
		  "&Bs[cur][kk][64 + tx * 4];\n"
		  "\t\t\t\tconst float a[8] = {a0.x, a0.y, a0.z, a0.w, "
		  "a1.x, a1.y, a1.z, a1.w};\n"
		  "\t\t\t\tconst float b[8] = {b0.x, b0.y, b0.z, b0.w, "
		  "b1.x, b1.y, b1.z, b1.w};\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int i = 0; i < 8; i++)\n"
		  "#pragma unroll\n"
		  "\t\t\t\t\tfor (int j = 0; j < 8; j++)\n"
		  "\t\t\t\t\t\tacc[i][j] += a[i] * b[j];\n"
		  "\t\t\t}\n"
		  "\t\t\tif (kt + 1 < %lld) {\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int q = 0; q < 2; q++) {\n"
		  "\t\t\t\t\tAs[cur ^ 1][ac][ar + 64 * q] = ra[q].x;\n"
		  "\t\t\t\t\tAs[cur ^ 1][ac + 1][ar + 64 * q] = ra[q].y;\n"
		  "\t\t\t\t\tAs[cur ^ 1][ac + 2][ar + 64 * q] = ra[q].z;\n"
		  "\t\t\t\t\tAs[cur ^ 1][ac + 3][ar + 64 * q] = ra[q].w;\n"
		  "\t\t\t\t\t*(float4 *)&Bs[cur ^ 1][br + 8 * q][bc] = "
		  "rb[q];\n"
		  "\t\t\t\t}\n"
		  "\t\t\t}\n"
		  "\t\t\t__syncthreads();\n"
		  "\t\t}\n"
		  "#pragma unroll\n"
		  "\t\tfor (int i = 0; i < 8; i++) {\n"
		  "\t\t\tconst ix gi = bm + (i >> 2) * 64 + ty * 4 + (i & 3);\n"
		  "%s"
		  "#pragma unroll\n"
		  "\t\t\tfor (int h = 0; h < 2; h++) {\n"
		  "\t\t\t\tconst ix gj0 = bn + h * 64 + tx * 4;\n",
		  (long long)kt,
		  P->m % 128 ? "\t\t\tif (gi >= M)\n\t\t\t\tcontinue;\n" : "");
	if (!P->n->fuse && P->nn % 4 == 0) {
		cu_printf(s, "%s\t\t\t\t*(float4 *)(C + gi * N + gj0) = "
			  "make_float4(acc[i][4 * h], acc[i][4 * h + 1], "
			  "acc[i][4 * h + 2], acc[i][4 * h + 3]);\n",
			  P->nn % 128 ? "\t\t\t\tif (gj0 < N)\n\t" : "");
	} else {
		cu_printf(s, "#pragma unroll\n"
			  "\t\t\t\tfor (int j = 0; j < 4; j++) {\n"
			  "\t\t\t\t\tconst ix gj = gj0 + j;\n"
			  "\t\t\t\t\tif (%s) {\n",
			  P->nn % 128 ? "gj < N" : "true");
		emit_store(s, P, "acc[i][4 * h + j]", "\t\t\t\t\t\t");
		cu_puts(s, "\t\t\t\t\t}\n\t\t\t\t}\n");
	}
	cu_puts(s, "\t\t\t}\n\t\t}\n\t}\n}\n");
}

/* ---- mma: f32 through TF32 tensor cores (--gpu-tf32) */

/* Tiles of 128 x bn (bn 256 or 128) in k steps of 32: bn / 32 warps,
 * 2 x (bn / 64), each 64 x 64 of the tile as 4 x 8 mma.m16n8k8 (TF32
 * inputs rounded by cvt.rna, float accumulators in registers,
 * acc[i][j][h]: row 16 i + g (+ 8 for h >= 2), column 8 j + 2 t + h % 2
 * of the warp's part, g = lane / 4, t = lane % 4).  Stages of dynamic
 * shared memory filled by cp.async, one __syncthreads per k step: a's
 * tile [128][36], b's [32][bn + 8].  The pads make the fragments' loads
 * conflict-free: ldmatrix.x4 of a (eight rows of 16 bytes, 144 bytes
 * apart), 32-bit loads of b (thread (g, t) at bank 8 t + g). */
#define MA_BK 32
#define MA_AP 36 /* a's row pitch, floats */
#define MA_AS (128 * MA_AP)

typedef struct MaCfg {
	int bn, warps, stages;
	int bp, bs; /* b's row pitch, b's stage (floats) */
} MaCfg;

/* bn = 256 (8 warps, 4 stages, 204 KiB: one block per SM) where there
 * are enough tiles, else 128 (4 warps, 3 stages, 105 KiB: two). */
static MaCfg
ma_cfg(const MmPlan *P)
{
	MaCfg c;
	int64_t big = ((P->m + 127) / 128) * ((P->nn + 255) / 256) * P->nbat;

	c.bn = P->nn > 128 && big >= 256 ? 256 : 128;
	c.warps = c.bn / 32;
	c.stages = c.bn == 256 ? 4 : 3;
	c.bp = c.bn + 8;
	c.bs = MA_BK * c.bp;
	return c;
}

static uint32_t
ma_shmem(const MaCfg *c)
{
	return (uint32_t)(c->stages * (MA_AS + c->bs) * 4);
}

/* One thread's copy of 16 bytes of an operand's tile to shared offset
 * d: from src (a pointer expression) in one cp.async where the operand's
 * rows are 16-byte multiples (vec), with guard g (empty: none) sending
 * zeros from the operand's start, whole; else four 4-byte copies of
 * elements whole[at + v], each where ok (a condition on v) holds. */
static void
ma_copy(CuStr *s, const char *g, int vec, const char *src, const char *whole,
	const char *ok, const char *at)
{
	if (vec && *g)
		cu_printf(s, "\t\t\t\tmm_cp16(d, %s ? %s : %s, %s ? 16 : 0);\n",
			  g, src, whole, g);
	else if (vec)
		cu_printf(s, "\t\t\t\tmm_cp16(d, %s, 16);\n", src);
	else
		cu_printf(s, "#pragma unroll\n"
			  "\t\t\t\tfor (int v = 0; v < 4; v++) {\n"
			  "\t\t\t\t\tconst bool ok = %s;\n"
			  "\t\t\t\t\tmm_cp4(d + 4 * v, %s + (ok ? (ix)%s + v "
			  ": 0), ok ? 4 : 0);\n"
			  "\t\t\t\t}\n", ok, whole, at);
}

/* cp.async of k step k0 into stage st: 16-byte copies where rows stay
 * aligned, 4-byte ones elsewhere; a copy past the edges reads nothing
 * (source size 0) and writes zeros.  One group per call.  Thread tid
 * copies rows ar + nt / 8 * q of a at column ac, rows br + nt / (bn /
 * 4) * q of b at column bc (nt threads): the 16-byte copies' addresses
 * are pa and pb plus offsets of q and k0. */
static void
ma_load(CuStr *s, const MmPlan *P, const MaCfg *c)
{
	int gm = P->m % 128 != 0, gk = P->k % MA_BK != 0;
	int gn = P->nn % c->bn != 0, nt = c->warps * 32;
	int va = P->k % 4 == 0, vb = P->nn % 4 == 0;
	int sa = nt / 8, sb = nt / (c->bn / 4);
	/* the offsets from pa and pb in 32 bits where they fit (fewer
	   registers) */
	const char *ta = 129 * P->k < INT32_MAX ? "int" : "ix";
	const char *tb = (P->k + MA_BK) * P->nn < INT32_MAX ? "int" : "ix";
	char g[64], off[64];

	cu_printf(s, "#pragma unroll\n"
		  "\t\t\tfor (int q = 0; q < %d; q++) {\n"
		  "\t\t\t\tconst int r = ar + %d * q;\n"
		  "\t\t\t\tconst unsigned d = sh + (st * %d + r * %d + ac) * 4;"
		  "\n", 128 * MA_BK / 4 / nt, sa, MA_AS + c->bs, MA_AP);
	if (gm || !va)
		cu_puts(s, "\t\t\t\tconst int gi = bm + r;\n");
	if (gk || !va)
		cu_puts(s, "\t\t\t\tconst int gk = k0 + ac;\n");
	guard(g, sizeof g, gm ? "gi < M" : NULL, gk ? "gk < K" : NULL);
	snprintf(off, sizeof off, "pa + (%s)(%d * q * K + k0)", ta, sa);
	ma_copy(s, g, va, off, "A", gm ? "gi < M && gk + v < K"
				       : "gk + v < K", "gi * K + gk");
	cu_printf(s, "\t\t\t}\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int q = 0; q < %d; q++) {\n"
		  "\t\t\t\tconst int r = br + %d * q;\n"
		  "\t\t\t\tconst unsigned d = sh + (st * %d + %d + r * %d + bc) "
		  "* 4;\n", MA_BK * c->bn / 4 / nt, sb, MA_AS + c->bs, MA_AS,
		  c->bp);
	if (gk || !vb)
		cu_puts(s, "\t\t\t\tconst int gk = k0 + r;\n");
	if (gn || !vb)
		cu_puts(s, "\t\t\t\tconst int gj = bn + bc;\n");
	guard(g, sizeof g, gk ? "gk < K" : NULL, gn ? "gj < N" : NULL);
	snprintf(off, sizeof off, "pb + (%s)((%d * q + k0) * N)", tb, sb);
	ma_copy(s, g, vb, off, "B", gk ? "gk < K && gj + v < N"
				       : "gj + v < N", "gk * N + gj");
	cu_puts(s, "\t\t\t}\n\t\t\tmm_commit();\n");
}

/* The accumulators straight from registers: a thread's two columns of
 * a row as one float2 where there is no epilogue and rows stay 8-byte
 * aligned, else element by element through the epilogue. */
static void
ma_store(CuStr *s, const MmPlan *P, const MaCfg *c)
{
	cu_printf(s, "#pragma unroll\n"
		  "\t\tfor (int i = 0; i < 4; i++)\n"
		  "#pragma unroll\n"
		  "\t\tfor (int h = 0; h < 2; h++) {\n"
		  "\t\t\tconst ix gi = bm + wm + 16 * i + g + 8 * h;\n"
		  "%s"
		  "#pragma unroll\n"
		  "\t\t\tfor (int j = 0; j < 8; j++) {\n"
		  "\t\t\t\tconst ix gj0 = bn + wn + 8 * j + 2 * t;\n",
		  P->m % 128 ? "\t\t\tif (gi >= M)\n\t\t\t\tcontinue;\n" : "");
	if (!P->n->fuse && P->nn % 2 == 0) {
		cu_printf(s, "%s\t\t\t\t*(float2 *)(C + gi * N + gj0) = "
			  "make_float2(acc[i][j][2 * h], "
			  "acc[i][j][2 * h + 1]);\n",
			  P->nn % c->bn ? "\t\t\t\tif (gj0 < N)\n\t" : "");
	} else {
		cu_printf(s, "#pragma unroll\n"
			  "\t\t\t\tfor (int e = 0; e < 2; e++) {\n"
			  "\t\t\t\t\tconst ix gj = gj0 + e;\n"
			  "\t\t\t\t\tif (%s) {\n",
			  P->nn % c->bn ? "gj < N" : "true");
		emit_store(s, P, "acc[i][j][2 * h + e]", "\t\t\t\t\t\t");
		cu_puts(s, "\t\t\t\t\t}\n\t\t\t\t}\n");
	}
	cu_puts(s, "\t\t\t}\n\t\t}\n");
}

static void
gen_mma(CuStr *s, const MmPlan *P, const MaCfg *c)
{
	int64_t kt = (P->k + MA_BK - 1) / MA_BK;
	char bounds[64];

	snprintf(bounds, sizeof bounds, "__launch_bounds__(%d, %d)",
		 c->warps * 32, c->bn == 256 ? 1 : 2);
	emit_head(s, P, bounds);
	/* the instructions as macros: a kernel's text is one definition */
	cu_puts(s, "#define mm_cp16(d, p, n) asm volatile(\"cp.async.cg.shared."
		"global [%0], [%1], 16, %2;\\n\" :: \"r\"(d), \"l\"(p), "
		"\"r\"(n) : \"memory\")\n"
		"#define mm_cp4(d, p, n) asm volatile(\"cp.async.ca.shared."
		"global [%0], [%1], 4, %2;\\n\" :: \"r\"(d), \"l\"(p), "
		"\"r\"(n) : \"memory\")\n"
		"#define mm_commit() asm volatile(\"cp.async.commit_group;\\n\" "
		"::: \"memory\")\n"
		"#define mm_wait(n) asm volatile(\"cp.async.wait_group %0;\\n\" "
		":: \"n\"(n) : \"memory\")\n"
		"#define mm_ldsm4(r, a) asm volatile(\"ldmatrix.sync.aligned."
		"m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\" : \"=r\"(r[0]), "
		"\"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a))\n"
		"#define mm_tf32(d, x) asm(\"cvt.rna.tf32.f32 %0, %1;\\n\" : "
		"\"=r\"(d) : \"r\"(x))\n"
		"#define mm_mma(c, a, b) asm volatile(\"mma.sync.aligned.m16n8k8."
		"row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		"{%8, %9}, {%0, %1, %2, %3};\\n\" : \"+f\"(c[0]), \"+f\"(c[1]), "
		"\"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(a[0]), \"r\"(a[1]), "
		"\"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]))\n"
		"\textern __shared__ __align__(128) float mm_sh[];\n"
		"\tconst unsigned sh = (unsigned)__cvta_generic_to_shared(mm_sh);\n"
		"\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
		"\tconst int g = lane >> 2, t = lane & 3;\n");
	cu_printf(s, "\tconst int wm = warp / %d * 64, wn = warp %% %d * 64;\n",
		  c->bn / 64, c->bn / 64);
	cu_printf(s, "\tconst int ar = tid >> 3, ac = (tid & 7) * 4;\n"
		  "\tconst int br = tid / %d, bc = tid %% %d * 4;\n",
		  c->bn / 4, c->bn / 4);
	emit_tile(s, P, 128, c->bn);
	emit_batch(s, P);
	if (P->k % 4 == 0)
		cu_puts(s, "\t\tconst float *pa = A + (ix)(bm + ar) * K + ac;\n");
	if (P->nn % 4 == 0)
		cu_puts(s, "\t\tconst float *pb = B + (ix)br * N + bn + bc;\n");
	cu_printf(s, "\t\tfloat acc[4][8][4];\n"
		  "#pragma unroll\n"
		  "\t\tfor (int i = 0; i < 4; i++)\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int j = 0; j < 8; j++)\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int h = 0; h < 4; h++)\n"
		  "\t\t\t\t\tacc[i][j][h] = 0.0f;\n"
		  "#pragma unroll\n"
		  "\t\tfor (int st = 0; st < %d; st++) {\n"
		  "\t\t\tconst int k0 = st * %d;\n"
		  "\t\t\tif (st < %lld) {\n",
		  c->stages - 1, MA_BK, (long long)kt);
	ma_load(s, P, c);
	/* the first stages-1 steps, then each step waits for its stage
	   and refills the one the step before read */
	cu_printf(s, "\t\t\t} else {\n"
		  "\t\t\t\tmm_commit(); /* an empty group */\n"
		  "\t\t\t}\n"
		  "\t\t}\n"
		  "\t\tfor (int kt = 0; kt < %lld; kt++) {\n"
		  "\t\t\tmm_wait(%d);\n"
		  "\t\t\t__syncthreads();\n"
		  "\t\t\tif (kt + %d < %lld) {\n"
		  "\t\t\t\tconst int st = (kt + %d) %% %d;\n"
		  "\t\t\t\tconst int k0 = (kt + %d) * %d;\n",
		  (long long)kt, c->stages - 2, c->stages - 1, (long long)kt,
		  c->stages - 1, c->stages, c->stages - 1, MA_BK);
	ma_load(s, P, c);
	/* a's fragment: lanes 0-15 give rows 0-15 at column 0, lanes 16-31
	   the same rows at column 4; b's: rows t and t + 4, column g */
	cu_printf(s, "\t\t\t} else {\n"
		  "\t\t\t\tmm_commit(); /* an empty group */\n"
		  "\t\t\t}\n"
		  "\t\t\tconst int cur = kt %% %d;\n"
		  "\t\t\tconst unsigned as = sh + (cur * %d + (wm + (lane & 15)) "
		  "* %d + (lane >> 4) * 4) * 4;\n"
		  "\t\t\tconst float *bs = mm_sh + cur * %d + %d + t * %d + wn "
		  "+ g;\n"
		  "#pragma unroll\n"
		  "\t\t\tfor (int kk = 0; kk < %d; kk += 8) {\n"
		  "\t\t\t\tunsigned a[4][4], b[8][2];\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int i = 0; i < 4; i++) {\n"
		  "\t\t\t\t\tmm_ldsm4(a[i], as + (i * 16 * %d + kk) * 4);\n"
		  "#pragma unroll\n"
		  "\t\t\t\t\tfor (int h = 0; h < 4; h++)\n"
		  "\t\t\t\t\t\tmm_tf32(a[i][h], a[i][h]);\n"
		  "\t\t\t\t}\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int j = 0; j < 8; j++) {\n"
		  "\t\t\t\t\tmm_tf32(b[j][0], __float_as_uint(bs[kk * %d + "
		  "8 * j]));\n"
		  "\t\t\t\t\tmm_tf32(b[j][1], __float_as_uint(bs[(kk + 4) * %d "
		  "+ 8 * j]));\n"
		  "\t\t\t\t}\n"
		  "#pragma unroll\n"
		  "\t\t\t\tfor (int i = 0; i < 4; i++)\n"
		  "#pragma unroll\n"
		  "\t\t\t\t\tfor (int j = 0; j < 8; j++)\n"
		  "\t\t\t\t\t\tmm_mma(acc[i][j], a[i], b[j]);\n"
		  "\t\t\t}\n"
		  "\t\t}\n",
		  c->stages, MA_AS + c->bs, MA_AP, MA_AS + c->bs, MA_AS, c->bp,
		  MA_BK, MA_AP, c->bp, c->bp);
	ma_store(s, P, c);
	/* the stages are refilled by the next product */
	cu_puts(s, "\t\tmm_wait(0);\n"
		"\t\t__syncthreads();\n"
		"#undef mm_cp16\n#undef mm_cp4\n#undef mm_commit\n"
		"#undef mm_wait\n#undef mm_ldsm4\n#undef mm_tf32\n#undef mm_mma\n"
		"\t}\n}\n");
}

/* ---- the node */

size_t
cu_matmul_scratch(const IrNode *n)
{
	(void)n;
	return 0; /* no split-k: every kernel sums its k alone */
}

/* Which kernel: the exact ones for small products, where a 128 x 128
 * tile would be mostly empty. */
static int
mm_kind(const CuGen *g, const MmPlan *P)
{
	if (P->t != TFG_F32 || P->k == 0 || P->m < 32 || P->nn < 32)
		return MM_SIMPLE;
	if (g->tf32 && P->k >= 32 && P->k < INT32_MAX - 64)
		return MM_MMA; /* k in int */
	return MM_SGEMM;
}

int
cu_gen_matmul(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	MmPlan P;
	MaCfg c;
	CuStr s = {0};
	int kind, bm, bn;
	int64_t tiles;

	if (mm_plan(n, &P) < 0)
		return -1;
	if (P.m == 0 || P.nn == 0 || P.nbat == 0)
		return 0; /* an empty product */
	if (max < 1)
		return mm_fail(n, "no room for the matmul's launch");
	kind = mm_kind(g, &P);
	c = ma_cfg(&P);
	bm = kind == MM_SIMPLE ? 64 : 128;
	bn = kind == MM_SIMPLE ? 64 : kind == MM_MMA ? c.bn : 128;
	tiles = ((P.m + bm - 1) / bm) * ((P.nn + bn - 1) / bn);
	if (tiles > MM_MAX_X)
		return mm_fail(n, "matmul of more than 2^31 tiles");
	if (kind == MM_SIMPLE)
		gen_simple(&s, &P);
	else if (kind == MM_SGEMM)
		gen_sgemm(&s, &P);
	else
		gen_mma(&s, &P, &c);
	memset(l, 0, sizeof *l);
	l->kernel = cu_kernel(g, s.p);
	cu_str_free(&s);
	l->grid[0] = (uint32_t)tiles;
	l->grid[1] = 1;
	l->grid[2] = (uint32_t)(P.nbat < MM_MAX_Z ? P.nbat : MM_MAX_Z);
	l->block[0] = kind == MM_MMA ? (uint32_t)c.warps * 32 : 256;
	l->block[1] = l->block[2] = 1;
	l->shmem = kind == MM_MMA ? ma_shmem(&c) : 0;
	l->nargs = 1 + n->nin;
	l->arg[0] = CU_ARG_OUT;
	for (int e = 0; e < n->nin; e++)
		l->arg[1 + e] = e;
	return 1;
}
