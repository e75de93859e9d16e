/*
 * codegen/cuda_reduce.c: CUDA C of the reductions (reduce_sum reduce_mean
 * reduce_prod reduce_max reduce_min argmax argmin, with or without a
 * fused prologue) and of softmax/log_softmax (codegen/cuda.h).
 *
 * Reductions (struct Red): the reduced tensor's kept and reduced axes are
 * merged separately (per operand strides; a fused prologue's inputs
 * broadcast against its shape), then, by shape:
 *   RED_FULL   one output of at least CU_RED_FULL_MIN elements: pass 1,
 *              CU_RED_PARTS blocks at most (a function of the count),
 *              each thread folding a fixed set of elements (16-byte
 *              vectors where every operand is contiguous and aligned),
 *              a tree in shared memory per block, partials into
 *              CU_ARG_SCRATCH; pass 2, one block folding the partials
 *              in a fixed order.
 *   RED_BLOCK  innermost axis reduced, long: a block per output, a tree.
 *   RED_WARP   innermost axis reduced, shorter: a warp per output.
 *   RED_COLS   innermost axis kept: blocks of 32 x 8, x over outputs
 *              (coalesced), y over eighths of the reduction, folded in
 *              order by y = 0.
 *   RED_THREAD under 16 elements per output: a thread per output.
 * The grid depends on the shape alone and each combination is in a fixed
 * order, so a result never depends on scheduling (no atomics).  Dtype
 * rules as codegen/cpu_reduce.c's: the accumulator is the output's dtype
 * (i64 for integer means, floor-divided by the count), float sums start
 * from +0.0.  argmax/argmin carry {value, index}; ties (NaN with NaN
 * too) go to the smaller index, so any order of combining gives the
 * CPU's first maximum, or first NaN.
 *
 * softmax/log_softmax: a warp (rows up to 256) or a block of 256 per row
 * of the last axis: max (NaN propagates), sum of exp(x - max), each a
 * butterfly of shuffles (every lane the same value, the ops being
 * commutative) then, for a block, the warps' values folded in order;
 * then exp(x - max) * (1 / sum), or (x - max) - log(sum).  The input is
 * read three times, not stored (the row is usually in L1 or L2).
 *
 * softmax_cross_entropy: the same rows, a third sum of
 * labels * (log(sum) - (x - max)), written once per row by its lane or
 * thread 0.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/cuda_int.h"

enum { RED_THREAD, RED_WARP, RED_BLOCK, RED_COLS, RED_FULL };

/* A reduction's plan: its input operands (in[0], or the program's
 * inputs) with strides over the kept axes and over the reduced axes,
 * each list merged where every operand allows. */
typedef struct Red {
	const IrNode *n;
	const IrFuse *f;      /* the prologue, or NULL */
	OpKind op;
	TfgDtype it, at;      /* input element, accumulator */
	int nin, arg;         /* input operands; argmax/argmin */
	int nk, nr;           /* kept, reduced axes */
	int64_t kd[TFG_MAX_RANK], rd[TFG_MAX_RANK];
	int64_t ks[CU_MAX_ARGS][TFG_MAX_RANK], rs[CU_MAX_ARGS][TFG_MAX_RANK];
	int64_t nout, count;
	int strat, small;
	int64_t parts;        /* RED_FULL: pass-1 blocks */
} Red;

/* Merges axes of list (dims d, strides s[0..nop)) in place. */
static int
merge_axes(int r, int64_t *d, int64_t s[][TFG_MAX_RANK], int nop)
{
	int w = 0;
	for (int k = 0; k < r; k++) {
		int merge = w > 0;
		for (int o = 0; o < nop && merge; o++)
			merge = s[o][w - 1] == s[o][k] * d[k];
		if (merge) {
			d[w - 1] *= d[k];
			for (int o = 0; o < nop; o++)
				s[o][w - 1] = s[o][k];
			continue;
		}
		d[w] = d[k];
		for (int o = 0; o < nop; o++)
			s[o][w] = s[o][k];
		w++;
	}
	return w;
}

static int
red_plan(const IrNode *n, Red *R, const char **why)
{
	const TfgShape *in;
	int64_t st[CU_MAX_ARGS][TFG_MAX_RANK];
	uint32_t all, mask;
	int inner;

	memset(R, 0, sizeof *R);
	R->n = n;
	R->op = n->op;
	R->f = n->fuse;
	R->arg = n->op == OP_argmax || n->op == OP_argmin;
	*why = "reduction needs one input";
	if (R->f ? !cu_fuse_ok(R->f, n->nin) || n->nin < 1 : n->nin != 1)
		return -1;
	*why = "fused reduction with too many inputs";
	if (n->nin + 1 > CU_MAX_ARGS)
		return -1;
	in = R->f ? &R->f->shape : &n->in[0]->shape;
	R->it = R->f ? R->f->ops[R->f->n - 1].dtype : n->in[0]->dtype;
	*why = "no GPU reduction of this dtype";
	if (R->it == TFG_BOOL || !cu_dt_ok(R->it) || !cu_dt_ok(n->dtype) ||
	    (R->arg && n->dtype != TFG_I64))
		return -1;
	R->at = R->arg ? R->it
		: !cu_is_float(n->dtype) && n->op == OP_reduce_mean ? TFG_I64
								 : n->dtype;
	R->nin = n->nin;
	for (int k = 0; k < n->nin; k++) {
		if (R->f)
			cu_bcast_strides(&n->in[k]->shape, in, st[k]);
		else
			cu_row_major(in, st[k]);
	}
	all = in->rank >= 32 ? 0xffffffffu : (1u << in->rank) - 1;
	mask = n->axes & all;
	if (mask == 0 && (n->shape.rank != in->rank ||
			  tfg_shape_numel(&n->shape) != tfg_shape_numel(in)))
		mask = all;
	R->nout = R->count = 1;
	inner = -1;
	for (int k = 0; k < in->rank; k++) {
		int red = (mask >> k) & 1;
		if (in->dims[k] < 0)
			return -1;
		if (red)
			R->count *= in->dims[k];
		else
			R->nout *= in->dims[k];
		if (in->dims[k] == 1)
			continue;
		inner = red;
		for (int o = 0; o < R->nin; o++) {
			if (red)
				R->rs[o][R->nr] = st[o][k];
			else
				R->ks[o][R->nk] = st[o][k];
		}
		if (red)
			R->rd[R->nr++] = in->dims[k];
		else
			R->kd[R->nk++] = in->dims[k];
	}
	*why = "reduction output shape does not match its axes";
	if (R->nout != tfg_shape_numel(&n->shape))
		return -1;
	R->nk = merge_axes(R->nk, R->kd, R->ks, R->nin);
	R->nr = merge_axes(R->nr, R->rd, R->rs, R->nin);
	R->small = tfg_shape_numel(in) < INT32_MAX - CU_BLOCK *
		   (int64_t)CU_MAX_GRID;
	for (int o = 0; o < R->nin; o++) {
		int64_t span = 0;
		for (int k = 0; k < R->nk; k++)
			span += (R->kd[k] - 1) * R->ks[o][k];
		for (int k = 0; k < R->nr; k++)
			span += (R->rd[k] - 1) * R->rs[o][k];
		if (span >= INT32_MAX)
			R->small = 0;
	}
	if (R->nout == 1 && R->count >= CU_RED_FULL_MIN) {
		R->strat = RED_FULL;
		R->parts = (R->count + CU_BLOCK * 16 - 1) / (CU_BLOCK * 16);
		if (R->parts > CU_RED_PARTS)
			R->parts = CU_RED_PARTS;
	} else if (R->count < 16) {
		R->strat = RED_THREAD;
	} else if (inner == 1 || R->nk == 0) {
		R->strat = R->count >= 1024 ? RED_BLOCK : RED_WARP;
	} else {
		R->strat = R->count >= 32 ? RED_COLS : RED_THREAD;
	}
	return 0;
}

/* The accumulator's starting value (red_identity). */
static void
put_identity(CuStr *s, const Red *R)
{
	int fl = cu_is_float(R->at);
	int64_t max = R->at == TFG_U8 ? UINT8_MAX
		      : R->at == TFG_I32 ? INT32_MAX : INT64_MAX;
	int64_t min = R->at == TFG_U8 ? 0 : -max - 1;
	switch (R->op) {
	case OP_reduce_prod:
		cu_put_lit(s, R->at, 1, 1);
		break;
	case OP_reduce_max: case OP_argmax:
		cu_put_lit(s, R->at, -INFINITY, fl ? 0 : min);
		break;
	case OP_reduce_min: case OP_argmin:
		cu_put_lit(s, R->at, INFINITY, fl ? 0 : max);
		break;
	default:
		cu_put_lit(s, R->at, 0, 0);
		break;
	}
}

static const char *
red_fn(OpKind op)
{
	switch (op) {
	case OP_reduce_prod: return "mul";
	case OP_reduce_max: return "maximum";
	case OP_reduce_min: return "minimum";
	default: return "add";
	}
}

/* acc, ai combined with b, bi (b from later elements, or any for arg). */
static void
put_combine(CuStr *s, const Red *R, const char *b, const char *bi)
{
	if (R->arg)
		cu_printf(s, "if (tfg_%s_take_%s(%s, %s, acc, ai)) {\n"
			  "acc = %s;\nai = %s;\n}\n", op_info[R->op].name,
			  cu_sfx(R->at), b, bi, b, bi);
	else
		cu_printf(s, "acc = tfg_%s_%s(acc, %s);\n", red_fn(R->op),
			  cu_sfx(R->at), b);
}

/* One element, from the operands' elements ins[k] (the prologue's value,
 * or ins[0]), converted to the accumulator's dtype and combined into acc
 * at position j (for arg). */
static void
put_step(CuStr *s, const Red *R, const char *const *ins, const char *j)
{
	cu_printf(s, "%s x_;\n", cu_ctype(R->it));
	if (R->f)
		cu_fuse_code(s, R->f, "x_", ins, NULL, "f_");
	else
		cu_printf(s, "x_ = %s;\n", ins[0]);
	cu_printf(s, "const %s v_ = ", cu_ctype(R->at));
	cu_put_cvt(s, "x_", R->it, R->at);
	cu_puts(s, ";\n");
	put_combine(s, R, "v_", j);
}

/* The element at offsets off[k] of the operands folded into acc (its
 * position j for arg). */
static void
put_fold(CuStr *s, const Red *R, char off[][160], const char *j)
{
	char in[CU_MAX_ARGS][200];
	const char *ins[CU_MAX_ARGS];
	char x[240];

	cu_puts(s, "{\n");
	for (int k = 0; k < R->nin; k++) {
		snprintf(in[k], sizeof in[k], "a%d[%.160s]", k, off[k]);
		ins[k] = in[k];
	}
	snprintf(x, sizeof x, "(long long)(%s)", j);
	put_step(s, R, ins, x);
	cu_puts(s, "}\n");
}

/* Offsets: kept base of output `o` per operand, declared kb<k>. */
static void
put_kept(CuStr *s, const Red *R, const char *o)
{
	for (int k = 0; k < R->nin; k++) {
		cu_printf(s, "const I kb%d = ", k);
		cu_put_index(s, R->nk, R->kd, R->ks[k], o);
		cu_printf(s, ";\n(void)kb%d;\n", k);
	}
}

/* Folds reduced elements j = start, start + stride, ... < count. */
static void
put_loop(CuStr *s, const Red *R, const char *start, const char *stride)
{
	char off[CU_MAX_ARGS][160];

	if (R->count == 0)
		return; /* the identity */
	cu_printf(s, "for (I j = %s; j < (I)%" PRId64 "; j += %s) {\n", start,
		  R->count, stride);
	for (int k = 0; k < R->nin; k++) {
		CuStr x = {0};
		cu_put_index(&x, R->nr, R->rd, R->rs[k], "j");
		if (x.n > 120) {
			cu_printf(s, "const I r%d = %s;\n", k, x.p);
			snprintf(off[k], sizeof off[k], "kb%d + r%d", k, k);
		} else {
			snprintf(off[k], sizeof off[k], "kb%d + %s", k, x.p);
		}
		cu_str_free(&x);
	}
	put_fold(s, R, off, "j");
	cu_puts(s, "}\n");
}

/* out[o] = the final value of acc, ai. */
static void
put_store(CuStr *s, const Red *R, const char *o)
{
	CuStr v = {0};

	if (R->arg) {
		cu_printf(s, "out[%s] = ai;\n", o);
		return;
	}
	if (R->op == OP_reduce_mean) {
		cu_printf(&v, "tfg_div_%s(acc, ", cu_sfx(R->at));
		cu_put_lit(&v, R->at, (double)R->count, R->count);
		cu_puts(&v, ")");
	} else {
		cu_puts(&v, "acc");
	}
	cu_printf(s, "out[%s] = ", o);
	cu_put_cvt(s, v.p, R->at, R->n->dtype);
	cu_puts(s, ";\n");
	cu_str_free(&v);
}

/* The kernel's head: parameters p0 (out or scratch) and the inputs from
 * p<first>, index type, acc and ai's type. */
static void
put_red_head(CuStr *s, const Red *R, int first, int out)
{
	cu_puts(s, "extern \"C\" __global__ void __launch_bounds__(256)\n@K(");
	cu_puts(s, "void *p0");
	for (int k = 0; k < R->nin; k++)
		cu_printf(s, ", void *p%d", first + k);
	cu_puts(s, ")\n{\n");
	cu_printf(s, "typedef %s I;\n", R->small ? "unsigned" : "long long");
	if (out)
		cu_printf(s, "%s *__restrict__ out = (%s *)p0;\n",
			  cu_ctype(R->n->dtype), cu_ctype(R->n->dtype));
	for (int k = 0; k < R->nin; k++)
		cu_printf(s, "const %s *__restrict__ a%d = (const %s *)p%d;\n"
			  "(void)a%d;\n", cu_ctype(R->n->in[k]->dtype), k,
			  cu_ctype(R->n->in[k]->dtype), first + k, k);
}

static void
put_acc(CuStr *s, const Red *R)
{
	cu_printf(s, "%s acc = ", cu_ctype(R->at));
	put_identity(s, R);
	cu_puts(s, R->arg ? ";\nlong long ai = 0;\n" : ";\n");
}

/* A tree over the block's 256 accumulators; thread 0 ends with it. */
static void
put_tree(CuStr *s, const Red *R)
{
	const char *ai = R->arg ? "shi[threadIdx.x] = ai;\n" : "";

	cu_printf(s, "sh[threadIdx.x] = acc;\n%s__syncthreads();\n"
		  "for (int w = 128; w > 0; w >>= 1) {\n"
		  "if (threadIdx.x < w) {\n"
		  "const %s b_ = sh[threadIdx.x + w];\n", ai,
		  cu_ctype(R->at));
	if (R->arg)
		cu_puts(s, "const long long bi_ = shi[threadIdx.x + w];\n");
	put_combine(s, R, "b_", "bi_");
	cu_printf(s, "sh[threadIdx.x] = acc;\n%s}\n__syncthreads();\n}\n",
		  ai);
}

static void
put_shared(CuStr *s, const Red *R, const char *dims)
{
	cu_printf(s, "__shared__ %s sh%s;\n", cu_ctype(R->at), dims);
	if (R->arg)
		cu_printf(s, "__shared__ long long shi%s;\n", dims);
}

static void
red_args(CuLaunch *l, const Red *R, int a0)
{
	l->nargs = 1 + R->nin;
	l->arg[0] = a0;
	for (int k = 0; k < R->nin; k++)
		l->arg[1 + k] = k;
}

/* Pass 1 of RED_FULL: block b folds elements t, t + P * 256, ... of its
 * threads (vectors where contiguous), partial b to the scratch. */
static void
put_full1(CuStr *s, const Red *R)
{
	int vec = R->nr == 1, V, maxsz = 1;
	int64_t step = R->parts * CU_BLOCK;
	char off[CU_MAX_ARGS][160];

	put_red_head(s, R, 1, 0);
	cu_printf(s, "%s *__restrict__ part = (%s *)p0;\n", cu_ctype(R->at),
		  cu_ctype(R->at));
	if (R->arg)
		cu_printf(s, "long long *__restrict__ parti = (long long *)"
			  "((char *)p0 + %" PRId64 ");\n", R->parts * 8);
	put_shared(s, R, "[256]");
	put_acc(s, R);
	for (int k = 0; k < R->nin; k++) {
		if (R->nr == 1 && R->rs[k][0] != 0 && R->rs[k][0] != 1)
			vec = 0;
		if (cu_dt_size(R->n->in[k]->dtype) > maxsz)
			maxsz = cu_dt_size(R->n->in[k]->dtype);
		cu_printf(s, "const I kb%d = 0;\n", k);
	}
	V = 16 / maxsz;
	cu_puts(s, "const I t0 = (I)blockIdx.x * 256 + threadIdx.x;\n");
	cu_puts(s, "I j0 = t0;\n");
	if (vec) {
		int64_t nv = R->count / V;
		char in[CU_MAX_ARGS][64];
		cu_puts(s, "if (1");
		for (int k = 0; k < R->nin; k++)
			if (R->rs[k][0])
				cu_printf(s, " && ((unsigned long long)a%d & %d) "
					  "== 0", k,
					  V * cu_dt_size(R->n->in[k]->dtype) - 1);
		cu_printf(s, ") {\nfor (I v = t0; v < (I)%" PRId64 "; v += (I)%"
			  PRId64 ") {\n", nv, step);
		for (int k = 0; k < R->nin; k++) {
			const char *t = cu_ctype(R->n->in[k]->dtype);
			if (!R->rs[k][0]) {
				snprintf(off[k], sizeof off[k], "0");
				continue;
			}
			cu_printf(s, "const tfg_vec<%s, %d> x%d = *(const "
				  "tfg_vec<%s, %d> *)(a%d + v * %d);\n", t, V,
				  k, t, V, k, V);
			snprintf(in[k], sizeof in[k], "x%d.v[q]", k);
		}
		cu_printf(s, "#pragma unroll\nfor (int q = 0; q < %d; q++) {\n",
			  V);
		/* put_fold reads a<k>[off]: vector lanes go through a
		   local array view instead */
		{
			const char *ins[CU_MAX_ARGS];
			char jx[64];
			cu_puts(s, "{\n");
			for (int k = 0; k < R->nin; k++)
				ins[k] = R->rs[k][0] ? in[k] : "a0[0]";
			for (int k = 0; k < R->nin; k++)
				if (!R->rs[k][0]) {
					snprintf(in[k], sizeof in[k], "a%d[0]",
						 k);
					ins[k] = in[k];
				}
			snprintf(jx, sizeof jx, "(long long)v * %d + q", V);
			put_step(s, R, ins, jx);
			cu_puts(s, "}\n");
		}
		cu_printf(s, "}\n}\nj0 = (I)%" PRId64 " + t0;\n}\n", nv * V);
	}
	{
		char stp[32];
		snprintf(stp, sizeof stp, "(I)%" PRId64, step);
		put_loop(s, R, "j0", stp);
	}
	put_tree(s, R);
	cu_printf(s, "if (threadIdx.x == 0) {\npart[blockIdx.x] = acc;\n"
		  "%s}\n}\n", R->arg ? "parti[blockIdx.x] = ai;\n" : "");
}

/* Pass 2: the partials folded by one block, in a fixed order. */
static void
put_full2(CuStr *s, const Red *R)
{
	cu_puts(s, "extern \"C\" __global__ void __launch_bounds__(256)\n"
		"@K(void *p0, void *p1)\n{\n");
	cu_printf(s, "%s *__restrict__ out = (%s *)p0;\n",
		  cu_ctype(R->n->dtype), cu_ctype(R->n->dtype));
	cu_printf(s, "const %s *__restrict__ part = (const %s *)p1;\n",
		  cu_ctype(R->at), cu_ctype(R->at));
	if (R->arg)
		cu_printf(s, "const long long *__restrict__ parti = (const "
			  "long long *)((const char *)p1 + %" PRId64 ");\n",
			  R->parts * 8);
	put_shared(s, R, "[256]");
	put_acc(s, R);
	cu_printf(s, "for (int q = threadIdx.x; q < %" PRId64
		  "; q += 256) {\n", R->parts);
	put_combine(s, R, "part[q]", "parti[q]");
	cu_puts(s, "}\n");
	put_tree(s, R);
	cu_puts(s, "if (threadIdx.x == 0) {\n");
	put_store(s, R, "0");
	cu_puts(s, "}\n}\n");
}

int
cu_gen_reduce(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	CuStr s = {0};
	const char *why;
	Red R;

	if (red_plan(n, &R, &why) < 0)
		return cu_fail(n, why);
	if (R.nout == 0)
		return 0;
	if (R.strat == RED_FULL) {
		if (max < 2)
			return cu_fail(n, "too few launches");
		put_full1(&s, &R);
		cu_set_launch(&l[0], cu_kernel(g, s.p), (uint32_t)R.parts,
			   CU_BLOCK, 1);
		red_args(&l[0], &R, CU_ARG_SCRATCH);
		cu_str_free(&s);
		put_full2(&s, &R);
		cu_set_launch(&l[1], cu_kernel(g, s.p), 1, CU_BLOCK, 1);
		l[1].nargs = 2;
		l[1].arg[0] = CU_ARG_OUT;
		l[1].arg[1] = CU_ARG_SCRATCH;
		cu_str_free(&s);
		return 2;
	}
	put_red_head(&s, &R, 1, 1);
	switch (R.strat) {
	case RED_THREAD:
		cu_printf(&s, "for (I o = (I)blockIdx.x * 256 + threadIdx.x; "
			  "o < (I)%" PRId64 "; o += (I)gridDim.x * 256) {\n",
			  R.nout);
		put_kept(&s, &R, "o");
		put_acc(&s, &R);
		put_loop(&s, &R, "0", "1");
		put_store(&s, &R, "o");
		cu_puts(&s, "}\n}\n");
		cu_set_launch(l, 0, cu_grid_for(R.nout, CU_BLOCK), CU_BLOCK, 1);
		break;
	case RED_BLOCK:
		put_shared(&s, &R, "[256]");
		cu_printf(&s, "for (I o = blockIdx.x; o < (I)%" PRId64
			  "; o += gridDim.x) {\n", R.nout);
		put_kept(&s, &R, "o");
		put_acc(&s, &R);
		put_loop(&s, &R, "threadIdx.x", "256");
		put_tree(&s, &R);
		cu_puts(&s, "if (threadIdx.x == 0) {\n");
		put_store(&s, &R, "o");
		cu_puts(&s, "}\n__syncthreads();\n}\n}\n");
		cu_set_launch(l, 0, cu_grid_for(R.nout, 1), CU_BLOCK, 1);
		break;
	case RED_WARP:
		cu_printf(&s, "const unsigned lane = threadIdx.x & 31;\n"
			  "for (I o = (I)blockIdx.x * 8 + (threadIdx.x >> 5); "
			  "o < (I)%" PRId64 "; o += (I)gridDim.x * 8) {\n",
			  R.nout);
		put_kept(&s, &R, "o");
		put_acc(&s, &R);
		put_loop(&s, &R, "lane", "32");
		cu_printf(&s, "for (int w = 16; w > 0; w >>= 1) {\n"
			  "const %s b_ = __shfl_down_sync(0xffffffffu, acc, "
			  "w);\n", cu_ctype(R.at));
		if (R.arg)
			cu_puts(&s, "const long long bi_ = __shfl_down_sync("
				"0xffffffffu, ai, w);\n");
		put_combine(&s, &R, "b_", "bi_");
		cu_puts(&s, "}\nif (lane == 0) {\n");
		put_store(&s, &R, "o");
		cu_puts(&s, "}\n}\n}\n");
		cu_set_launch(l, 0, cu_grid_for(R.nout, 8), CU_BLOCK, 1);
		break;
	default: /* RED_COLS */
		put_shared(&s, &R, "[8][32]");
		cu_printf(&s, "for (I ob = (I)blockIdx.x * 32; ob < (I)%" PRId64
			  "; ob += (I)gridDim.x * 32) {\n"
			  "const I o = ob + threadIdx.x;\n", R.nout);
		put_acc(&s, &R);
		cu_printf(&s, "if (o < (I)%" PRId64 ") {\n", R.nout);
		put_kept(&s, &R, "o");
		put_loop(&s, &R, "threadIdx.y", "8");
		cu_printf(&s, "}\nsh[threadIdx.y][threadIdx.x] = acc;\n%s"
			  "__syncthreads();\n", R.arg ?
			  "shi[threadIdx.y][threadIdx.x] = ai;\n" : "");
		cu_printf(&s, "if (threadIdx.y == 0 && o < (I)%" PRId64 ") {\n"
			  "for (int y = 1; y < 8; y++) {\n", R.nout);
		put_combine(&s, &R, "sh[y][threadIdx.x]",
			    "shi[y][threadIdx.x]");
		cu_puts(&s, "}\n");
		put_store(&s, &R, "o");
		cu_puts(&s, "}\n__syncthreads();\n}\n}\n");
		cu_set_launch(l, 0, cu_grid_for(R.nout, 32), 32, 8);
		break;
	}
	l->kernel = cu_kernel(g, s.p);
	red_args(l, &R, CU_ARG_OUT);
	cu_str_free(&s);
	return 1;
}

size_t
cu_reduce_scratch(const IrNode *n)
{
	const char *why;
	Red R;

	if (!(op_info[n->op].flags & OPF_REDUCE) || red_plan(n, &R, &why) < 0 ||
	    R.strat != RED_FULL)
		return 0;
	return (size_t)((R.parts * 16 + 255) / 256 * 256);
}

/* ------------------------------------------------------------- softmax */

/* One warp (rows up to 256) or one block per row of the last axis. */
int
cu_gen_softmax(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	TfgDtype t = n->dtype;
	const char *T = cu_ctype(t), *S = cu_sfx(t);
	int64_t N = tfg_shape_numel(&n->shape), K, rows;
	int warp, nin = n->fuse ? n->nin : 1;
	CuStr s = {0};
	const char *red[2] = {"maximum", "add"};

	(void)max;
	if (n->shape.rank < 1 || !cu_is_float(t) ||
	    (n->fuse ? !cu_fuse_ok(n->fuse, n->nin) ||
	     n->fuse->ops[n->fuse->n - 1].dtype != t ||
	     !tfg_shape_eq(&n->fuse->shape, &n->shape) ||
	     n->nin + 1 > CU_MAX_ARGS
	     : n->nin != 1 || n->in[0]->dtype != t))
		return cu_fail(n, "softmax needs one float input of rank >= 1");
	K = n->shape.dims[n->shape.rank - 1];
	if (N == 0)
		return 0;
	rows = N / K;
	warp = K <= 256;
	cu_printf(&s, "extern \"C\" __global__ void __launch_bounds__(256)\n"
		  "@K(void *p0");
	for (int k = 0; k < nin; k++)
		cu_printf(&s, ", void *p%d", k + 1);
	cu_printf(&s, ")\n{\ntypedef %s I;\n%s *__restrict__ out = (%s *)"
		  "p0;\n", N < INT32_MAX - CU_BLOCK * (int64_t)CU_MAX_GRID ?
		  "unsigned" : "long long", T, T);
	for (int k = 0; k < nin; k++)
		cu_printf(&s, "const %s *__restrict__ a%d = (const %s *)p%d;\n",
			  cu_ctype(n->in[k]->dtype), k,
			  cu_ctype(n->in[k]->dtype), k + 1);
	if (!warp)
		cu_printf(&s, "__shared__ %s shm[8];\n", T);
	cu_puts(&s, "const unsigned lane = threadIdx.x & 31, wp = "
		"threadIdx.x >> 5;\n");
	if (warp)
		cu_printf(&s, "for (I row = (I)blockIdx.x * 8 + wp; row < (I)%"
			  PRId64 "; row += (I)gridDim.x * 8) {\n", rows);
	else
		cu_printf(&s, "for (I row = blockIdx.x; row < (I)%" PRId64
			  "; row += gridDim.x) {\n", rows);
	cu_printf(&s, "const I rb = row * (I)%" PRId64 ";\n", K);
	/* x_ = the row's element j: loaded, or the program's value */
	CuStr elem = {0};
	cu_printf(&elem, "%s x_;\n", T);
	if (n->fuse) {
		char in[CU_MAX_ARGS][200];
		const char *ins[CU_MAX_ARGS];
		for (int k = 0; k < nin; k++) {
			int64_t st[TFG_MAX_RANK];
			CuStr x = {0};
			cu_bcast_strides(&n->in[k]->shape, &n->shape, st);
			cu_put_index(&x, n->shape.rank, n->shape.dims, st,
				  "(rb + j)");
			cu_printf(&elem, "const I q%d = %s;\n", k, x.p);
			snprintf(in[k], sizeof in[k], "a%d[q%d]", k, k);
			ins[k] = in[k];
			cu_str_free(&x);
		}
		cu_fuse_code(&elem, n->fuse, "x_", ins, NULL, "f_");
	} else {
		cu_puts(&elem, "x_ = a0[rb + j];\n");
	}
	const char *jl = warp ? "for (I j = lane; j < (I)%" PRId64
				"; j += 32) {\n"
			      : "for (I j = threadIdx.x; j < (I)%" PRId64
				"; j += 256) {\n";
	for (int p = 0; p < 2; p++) {
		const char *v = p ? "s" : "m";
		cu_printf(&s, "%s %s = ", T, v);
		cu_put_lit(&s, t, p ? 0 : -INFINITY, 0);
		cu_puts(&s, ";\n");
		cu_printf(&s, jl, K);
		cu_puts(&s, elem.p);
		if (p)
			cu_printf(&s, "s = tfg_add_%s(s, tfg_exp_%s(tfg_sub_%s("
				  "x_, m)));\n", S, S, S);
		else
			cu_printf(&s, "m = tfg_maximum_%s(m, x_);\n", S);
		cu_puts(&s, "}\n");
		/* every lane gets the same value (the op is commutative) */
		cu_printf(&s, "for (int w = 16; w > 0; w >>= 1)\n"
			  "%s = tfg_%s_%s(%s, __shfl_xor_sync(0xffffffffu, %s,"
			  " w));\n", v, red[p], S, v, v);
		if (!warp)
			cu_printf(&s, "if (lane == 0)\nshm[wp] = %s;\n"
				  "__syncthreads();\n%s = shm[0];\n"
				  "for (int w = 1; w < 8; w++)\n"
				  "%s = tfg_%s_%s(%s, shm[w]);\n"
				  "__syncthreads();\n", v, v, v, red[p], S, v);
	}
	if (n->op == OP_softmax)
		cu_printf(&s, "const %s f = tfg_div_%s(1, s);\n", T, S);
	else
		cu_printf(&s, "const %s f = tfg_log_%s(s);\n", T, S);
	cu_printf(&s, jl, K);
	cu_puts(&s, elem.p);
	if (n->op == OP_softmax)
		cu_printf(&s, "out[rb + j] = tfg_mul_%s(tfg_exp_%s(tfg_sub_%s("
			  "x_, m)), f);\n", S, S, S);
	else
		cu_printf(&s, "out[rb + j] = tfg_sub_%s(tfg_sub_%s(x_, m), "
			  "f);\n", S, S);
	cu_puts(&s, "}\n}\n}\n");
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(rows, warp ? 8 : 1),
		   CU_BLOCK, 1);
	l->nargs = 1 + nin;
	l->arg[0] = CU_ARG_OUT;
	for (int k = 0; k < nin; k++)
		l->arg[1 + k] = k;
	cu_str_free(&s);
	cu_str_free(&elem);
	return 1;
}

/* The sum v of a warp's lanes into every lane, then (block) of the 8
 * warps in order, by tfg_<op>_<S>. */
static void
row_fold(CuStr *s, int warp, const char *v, const char *op, const char *S)
{
	cu_printf(s, "for (int w = 16; w > 0; w >>= 1)\n"
		  "%s = tfg_%s_%s(%s, __shfl_xor_sync(0xffffffffu, %s, w));\n",
		  v, op, S, v, v);
	if (!warp)
		cu_printf(s, "if (lane == 0)\nshm[wp] = %s;\n"
			  "__syncthreads();\n%s = shm[0];\n"
			  "for (int w = 1; w < 8; w++)\n"
			  "%s = tfg_%s_%s(%s, shm[w]);\n"
			  "__syncthreads();\n", v, v, v, op, S, v);
}

/* softmax_cross_entropy: one warp (rows up to 256) or one block per row
 * of the logits' last axis, as softmax. */
int
cu_gen_xent(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	TfgDtype t = n->dtype;
	const char *T = cu_ctype(t), *S = cu_sfx(t);
	const IrNode *x = n->nin == 2 ? n->in[0] : NULL;
	int64_t N, K, rows;
	int warp;
	CuStr s = {0};

	(void)max;
	if (!x || x->shape.rank < 1 || !cu_is_float(t) || x->dtype != t ||
	    n->in[1]->dtype != t || !tfg_shape_eq(&n->in[1]->shape, &x->shape))
		return cu_fail(n, "softmax_cross_entropy needs float logits of "
			       "rank >= 1 and labels of their dtype and shape");
	N = tfg_shape_numel(&x->shape);
	K = x->shape.dims[x->shape.rank - 1];
	rows = tfg_shape_numel(&n->shape);
	if (rows == 0)
		return 0;
	warp = K <= 256;
	cu_printf(&s, "extern \"C\" __global__ void __launch_bounds__(256)\n"
		  "@K(void *p0, void *p1, void *p2)\n{\ntypedef %s I;\n"
		  "%s *__restrict__ out = (%s *)p0;\n"
		  "const %s *__restrict__ a0 = (const %s *)p1;\n"
		  "const %s *__restrict__ a1 = (const %s *)p2;\n",
		  N < INT32_MAX - CU_BLOCK * (int64_t)CU_MAX_GRID ?
		  "unsigned" : "long long", T, T, T, T, T, T);
	if (!warp)
		cu_printf(&s, "__shared__ %s shm[8];\n", T);
	cu_puts(&s, "const unsigned lane = threadIdx.x & 31, wp = "
		"threadIdx.x >> 5;\n");
	if (warp)
		cu_printf(&s, "for (I row = (I)blockIdx.x * 8 + wp; row < (I)%"
			  PRId64 "; row += (I)gridDim.x * 8) {\n", rows);
	else
		cu_printf(&s, "for (I row = blockIdx.x; row < (I)%" PRId64
			  "; row += gridDim.x) {\n", rows);
	cu_printf(&s, "const I rb = row * (I)%" PRId64 ";\n", K);
	const char *jl = warp ? "for (I j = lane; j < (I)%" PRId64
				"; j += 32)\n"
			      : "for (I j = threadIdx.x; j < (I)%" PRId64
				"; j += 256)\n";
	cu_printf(&s, "%s m = ", T);
	cu_put_lit(&s, t, -INFINITY, 0);
	cu_puts(&s, ";\n");
	cu_printf(&s, jl, K);
	cu_printf(&s, "m = tfg_maximum_%s(m, a0[rb + j]);\n", S);
	row_fold(&s, warp, "m", "maximum", S);
	cu_printf(&s, "%s e = 0;\n", T);
	cu_printf(&s, jl, K);
	cu_printf(&s, "e = tfg_add_%s(e, tfg_exp_%s(tfg_sub_%s(a0[rb + j], "
		  "m)));\n", S, S, S);
	row_fold(&s, warp, "e", "add", S);
	cu_printf(&s, "const %s ls = tfg_log_%s(e);\n%s v = 0;\n", T, S, T);
	cu_printf(&s, jl, K);
	cu_printf(&s, "v = tfg_add_%s(v, tfg_mul_%s(a1[rb + j], tfg_sub_%s("
		  "ls, tfg_sub_%s(a0[rb + j], m))));\n", S, S, S, S);
	row_fold(&s, warp, "v", "add", S);
	cu_printf(&s, "if (%s == 0)\nout[row] = v;\n}\n}\n",
		  warp ? "lane" : "threadIdx.x");
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(rows, warp ? 8 : 1),
		      CU_BLOCK, 1);
	l->nargs = 3;
	l->arg[0] = CU_ARG_OUT;
	l->arg[1] = 0;
	l->arg[2] = 1;
	cu_str_free(&s);
	return 1;
}
