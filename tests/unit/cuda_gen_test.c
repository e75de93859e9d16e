/*
 * tests/unit/cuda_gen_test.c: the CUDA C generators (codegen/cuda_kern.c,
 * codegen/cuda_reduce.c) without a GPU.  Nodes of every op they cover are
 * made by the builders (compiler/build.c), several dtypes and shapes,
 * broadcasting, axis sets with and without keepdims, fused programs and
 * a fused reduction, makers with NaN and infinite constants, empty
 * tensors; each goes into one unit (cu_gen_init + cu_gen_node) whose
 * launches are checked (CUDA's limits, arguments, kernels shared by
 * text).  The unit is written to a file and compiled to PTX by nvcc when
 * /usr/local/cuda/bin/nvcc exists (else SKIP; NVRTC takes over with
 * codegen/nvrtc.c).  The prelude's integer and float element functions
 * are compiled for the host with g++ (CUDA's intrinsics shimmed) and
 * compared with the CPU's semantics: runtime/tensor.c's tfg_int_div and
 * tfg_int_mod, and codegen/cpu.c's pow, float %, maximum, casts.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "codegen/cuda.h"
#include "compiler/compiler_int.h"
#include "tests/unit/test.h"

#define NVCC "/usr/local/cuda/bin/nvcc"

static Program P;
static Diag D;
static FILE *errs;
static char *errtext;
static size_t errlen;
static const SrcLoc L = {0};
static CuGen G;
static int nnodes;

static void
setup(void)
{
	memset(&P, 0, sizeof P);
	P.arena = arena_new();
	errs = open_memstream(&errtext, &errlen);
	ASSERT(errs != NULL);
	diag_init(&D, errs);
	P.diag = &D;
	cu_gen_init(&G, 0);
}

static void
teardown(void)
{
	cu_gen_free(&G);
	fclose(errs);
	free(errtext);
	arena_free(P.arena);
}

static TfgShape
shp(int rank, int64_t a, int64_t b, int64_t c)
{
	TfgShape s = {rank, {a, b, c}};

	return s;
}

static IrNode *
in(TfgDtype t, TfgShape s)
{
	IrNode *n = ir_input(&P, L, "x", t, &s);

	ASSERT(n != NULL);
	return n;
}

/* Generates n into G and checks its launches; returns how many. */
static int
gen(IrNode *n)
{
	CuLaunch l[CU_MAX_LAUNCH];
	size_t scratch;
	int k;

	if (n == NULL)
		TEST_FAIL_("not built: %s", errtext ? errtext : "");
	n->name = "t";
	k = cu_gen_node(&G, n, l, CU_MAX_LAUNCH);
	if (k < 0)
		TEST_FAIL_("%s: no kernel", op_info[n->op].name);
	ASSERT(k <= CU_MAX_LAUNCH);
	scratch = cu_scratch_bytes(n);
	ASSERT(scratch % 256 == 0);
	for (int i = 0; i < k; i++) {
		const CuLaunch *c = &l[i];
		ASSERT(c->kernel >= 0 && c->kernel < G.nkern);
		ASSERT(c->grid[0] >= 1 && c->grid[0] <= 0x7fffffffu);
		ASSERT(c->grid[1] >= 1 && c->grid[1] <= 65535);
		ASSERT(c->grid[2] >= 1 && c->grid[2] <= 65535);
		ASSERT(c->block[0] >= 1 && c->block[1] >= 1 &&
		       c->block[2] >= 1);
		ASSERT(c->block[0] * c->block[1] * c->block[2] <= 1024);
		ASSERT(c->nargs >= 1 && c->nargs <= CU_MAX_ARGS);
		for (int a = 0; a < c->nargs; a++) {
			int x = c->arg[a];
			ASSERT(x == CU_ARG_OUT || (x == CU_ARG_SCRATCH &&
						   scratch > 0) ||
			       (x >= 0 && x < n->nin));
		}
	}
	nnodes++;
	return k;
}

static void
t_elementwise(void)
{
	static const TfgDtype num[] = {TFG_I32, TFG_I64, TFG_F32, TFG_F64};
	static const TfgDtype all[] = {TFG_BOOL, TFG_I32, TFG_I64, TFG_F32,
				       TFG_F64};

	for (int d = 0; d < 4; d++) {
		TfgDtype t = num[d];
		IrNode *x = in(t, shp(2, 4, 3, 0)), *y = in(t, shp(1, 3, 0, 0));
		IrNode *z = in(t, shp(0, 0, 0, 0)), *c = in(TFG_BOOL,
							 shp(2, 4, 1, 0));
		/* every elementwise op, for each dtype it takes (the
		   table's types column) */
		for (int op = 0; op < OP__COUNT; op++) {
			if (!(op_info[op].flags & OPF_ELEMWISE) ||
			    op == OP_cast || op == OP_where ||
			    !op_takes(op, t))
				continue;
			if (op_info[op].nin == 2) {
				ASSERT_EQ(gen(ir_binary(&P, L, op, x, y)), 1);
				ASSERT_EQ(gen(ir_binary(&P, L, op, z, x)), 1);
			} else {
				ASSERT_EQ(gen(ir_unary(&P, L, op, x)), 1);
			}
		}
		ASSERT_EQ(gen(ir_where(&P, L, c, x, y)), 1);
	}
	for (int a = 0; a < 5; a++)
		for (int b = 0; b < 5; b++)
			ASSERT_EQ(gen(ir_cast(&P, L, in(all[a], shp(1, 7, 0, 0)),
					      all[b])), 1);
	/* bools compare and take maximum */
	IrNode *b = in(TFG_BOOL, shp(1, 5, 0, 0));
	ASSERT_EQ(gen(ir_binary(&P, L, OP_maximum, b, b)), 1);
	ASSERT_EQ(gen(ir_binary(&P, L, OP_less, b, b)), 1);
	/* TF's logical functions, bools only */
	ASSERT_EQ(gen(ir_binary(&P, L, OP_logical_and, b, b)), 1);
	ASSERT_EQ(gen(ir_binary(&P, L, OP_logical_or, b,
				in(TFG_BOOL, shp(0, 0, 0, 0)))), 1);
	ASSERT_EQ(gen(ir_unary(&P, L, OP_logical_not, b)), 1);
	/* empty: no launch */
	IrNode *e = in(TFG_F32, shp(2, 0, 3, 0));
	ASSERT_EQ(gen(ir_unary(&P, L, OP_neg, e)), 0);
	/* large: 256M f32 (32-bit indices), and 2^31 + 1 (64-bit) */
	IrNode *big = in(TFG_F32, shp(1, (int64_t)1 << 28, 0, 0));
	ASSERT_EQ(gen(ir_binary(&P, L, OP_add, big, big)), 1);
	IrNode *huge = in(TFG_F32, shp(1, ((int64_t)1 << 31) + 1, 0, 0));
	ASSERT_EQ(gen(ir_unary(&P, L, OP_relu, huge)), 1);
}

/* Two identical nodes share one kernel, a different shape does not. */
static void
t_dedup(void)
{
	IrNode *x = in(TFG_F32, shp(2, 5, 6, 0));
	CuLaunch a, b, c;
	int nk;

	ASSERT_EQ(cu_gen_node(&G, ir_binary(&P, L, OP_mul, x, x), &a, 1), 1);
	nk = G.nkern;
	ASSERT_EQ(cu_gen_node(&G, ir_binary(&P, L, OP_mul, x, x), &b, 1), 1);
	ASSERT_EQ(a.kernel, b.kernel);
	ASSERT_EQ(G.nkern, nk);
	x = in(TFG_F32, shp(2, 5, 7, 0));
	ASSERT_EQ(cu_gen_node(&G, ir_binary(&P, L, OP_mul, x, x), &c, 1), 1);
	ASSERT(c.kernel != a.kernel);
	ASSERT_EQ(G.nkern, nk + 1);
	ASSERT(strncmp(G.names[c.kernel], "tfg_c", 5) == 0);
	ASSERT(strstr(G.src.p, G.names[c.kernel]) != NULL);
	ASSERT(strstr(G.texts[c.kernel], "@K") != NULL);
}

/* A member op of program f. */
static void
member(IrFuse *f, int m, OpKind op, TfgDtype t, TfgShape s, int nin,
       int32_t a0, int32_t a1, TfgDtype d0, TfgDtype d1)
{
	IrFuseOp *o = &f->ops[m];

	o->op = op;
	o->dtype = t;
	o->shape = s;
	o->nin = nin;
	o->arg[0] = a0;
	o->arg[1] = a1;
	o->in_dt[0] = d0;
	o->in_dt[1] = d1;
	o->name = "m";
}

static void
t_fused(void)
{
	TfgShape s = shp(2, 64, 33, 0), r = shp(1, 33, 0, 0);
	IrNode *x = in(TFG_F32, s), *b = in(TFG_F32, r), *k = in(TFG_I32, r);
	IrNode *ext[3] = {x, b, k}, *n;
	IrFuse *f = arena_alloc(P.arena, sizeof *f);

	/* relu(exp(x) * (b + cast(k))): the member b + cast(k) of [33]
	   recomputed per element */
	f->n = 5;
	f->ops = arena_alloc(P.arena, 5 * sizeof *f->ops);
	f->shape = s;
	member(f, 0, OP_cast, TFG_F32, r, 1, IR_FUSE_IN(2), 0, TFG_I32, 0);
	member(f, 1, OP_add, TFG_F32, r, 2, IR_FUSE_IN(1), 0, TFG_F32,
	       TFG_F32);
	member(f, 2, OP_exp, TFG_F32, s, 1, IR_FUSE_IN(0), 0, TFG_F32, 0);
	member(f, 3, OP_mul, TFG_F32, s, 2, 2, 1, TFG_F32, TFG_F32);
	member(f, 4, OP_relu, TFG_F32, s, 1, 3, 0, TFG_F32, 0);
	n = ir_unary(&P, L, OP_relu, x);
	ASSERT_EQ(ir_set_fuse(&P, n, OP_fused, f, ext, 3), 0);
	ASSERT_EQ(gen(n), 1);
	/* the same program as a reduction's prologue, several axis sets */
	for (uint32_t ax = 1; ax <= 3; ax++) {
		n = ir_reduce(&P, L, OP_reduce_sum, x, ax, ax == 2);
		ASSERT_EQ(ir_set_fuse(&P, n, OP_reduce_sum, f, ext, 3), 0);
		ASSERT_EQ(gen(n), 1);
	}
	/* large, fused, full: two passes */
	TfgShape bs = shp(2, 4096, 4096, 0), br = shp(1, 4096, 0, 0);
	IrNode *bx = in(TFG_F32, bs), *bb = in(TFG_F32, br);
	IrNode *bk = in(TFG_I32, br), *bext[3] = {bx, bb, bk};
	IrFuse *g = arena_alloc(P.arena, sizeof *g);
	*g = *f;
	g->shape = bs;
	n = ir_reduce(&P, L, OP_reduce_max, bx, 3, 0);
	ASSERT_EQ(ir_set_fuse(&P, n, OP_reduce_max, g, bext, 3), 0);
	ASSERT_EQ(gen(n), 2);
	ASSERT(cu_scratch_bytes(n) > 0);
	/* the program's code with an anchor (a matmul's epilogue) */
	CuStr c = {0};
	const char *ins[3] = {"A[i]", "B[i]", "K[i]"};
	cu_fuse_code(&c, f, "out", ins, "acc", "p_");
	ASSERT(strstr(c.p, "out = p_m4;") != NULL);
	ASSERT(strstr(c.p, "tfg_cvt_i32_f32(p_e2)") != NULL);
	cu_str_free(&c);
}

static IrMake *
mk(double f0, double f1, int64_t i0, int64_t i1)
{
	IrMake *m = arena_alloc(P.arena, sizeof *m);

	m->f[0] = f0;
	m->f[1] = f1;
	m->i[0] = i0;
	m->i[1] = i1;
	m->seed = 0x123456789abcull;
	m->stream = 3;
	return m;
}

static void
t_makers(void)
{
	TfgShape s = shp(2, 3, 5, 0), e = shp(1, 0, 0, 0);
	IrNode *d = ir_var(&P, L, OP_random_draw, NULL, NULL), *one;
	double *v = arena_alloc(P.arena, sizeof *v);

	ASSERT_EQ(gen(ir_make(&P, L, OP_zeros, TFG_F32, &s, NULL, NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_ones, TFG_I64, &s, NULL, NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_ones_like, TFG_BOOL, &s,
			      mk(1, 0, 1, 0), NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_fill, TFG_F32, &s, mk(NAN, 0, 0, 0),
			      NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_fill, TFG_F64, &s,
			      mk(-INFINITY, 0, 0, 0), NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_fill, TFG_F32, &s,
			      mk(INFINITY, 0, 0, 0), NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_fill, TFG_I32, &s,
			      mk(0, 0, INT32_MIN, 0), NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_fill, TFG_I64, &s,
			      mk(0, 0, INT64_MIN, 0), NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_zeros, TFG_F32, &e, NULL, NULL, 0)), 0);
	*v = 2.5;
	one = ir_const(&P, L, TFG_F64, &(TfgShape){0, {0}}, v, 0);
	ASSERT_EQ(gen(ir_make(&P, L, OP_fill, TFG_F64, &s, mk(0, 0, 0, 0),
			      &one, 1)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_range, TFG_F32, &s, mk(0.5, -0.1, 0, 0),
			      NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_range, TFG_I32, &s, mk(0, 0, -7, 3),
			      NULL, 0)), 1);
	ASSERT_EQ(gen(ir_make(&P, L, OP_range, TFG_I64, &s, mk(0, 0, 5, -2),
			      NULL, 0)), 1);
	for (int ax = 0; ax < 3; ax++) {
		IrNode *k = in(ax ? TFG_I64 : TFG_I32, shp(2, 3, 4, 0));
		IrMake *m = mk(1, NAN, 1, 0);
		TfgShape o = {3, {3, 4, 4}};
		m->axis = ax;
		o.dims[ax] = 6;
		for (int j = 0, i = 0; j < 3; j++)
			if (j != ax)
				o.dims[j] = k->shape.dims[i++];
		ASSERT_EQ(gen(ir_make(&P, L, OP_one_hot, TFG_F32, &o, m, &k, 1)),
			  1);
	}
	static const TfgDtype rt[] = {TFG_I32, TFG_I64, TFG_F32, TFG_F64};
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(gen(ir_make(&P, L, OP_random_uniform, rt[i], &s,
				      mk(-1, 2, INT32_MIN, INT32_MAX), &d, 1)),
			  1);
		if (i >= 2)
			ASSERT_EQ(gen(ir_make(&P, L, OP_random_normal, rt[i],
					      &s, mk(0, 1, 0, 0), &d, 1)), 1);
	}
}

static void
t_movement(void)
{
	IrNode *x = in(TFG_F32, shp(3, 4, 5, 6)), *xs[25];
	int perm[3] = {2, 0, 1};
	int64_t begin[3] = {1, 2, 0}, size[3] = {2, 1, 6};
	TfgShape s = shp(2, 20, 6, 0);

	ASSERT_EQ(gen(ir_transpose(&P, L, x, perm)), 1);
	ASSERT_EQ(gen(ir_transpose(&P, L, in(TFG_I64, shp(2, 300, 7, 0)),
				   NULL)), 1);
	ASSERT_EQ(gen(ir_reshape(&P, L, x, &s)), 1);
	ASSERT_EQ(gen(ir_slice(&P, L, x, begin, size, 0)), 1);
	ASSERT_EQ(gen(ir_slice(&P, L, x, begin, size, 2)), 1);
	for (int i = 0; i < 25; i++)
		xs[i] = in(TFG_BOOL, shp(2, 3, i ? i % 3 + 1 : 0, 0));
	ASSERT_EQ(gen(ir_concat(&P, L, xs, 25, 1)), 2);
	for (int i = 0; i < 4; i++)
		xs[i] = in(TFG_F64, shp(2, 3, 5, 0));
	ASSERT_EQ(gen(ir_stack(&P, L, xs, 4, 1)), 1);
	ASSERT_EQ(gen(ir_stack(&P, L, xs, 4, 2)), 1);
	ASSERT_EQ(gen(ir_concat(&P, L, xs, 3, 0)), 1);
}

static void
t_reductions(void)
{
	static const TfgDtype dt[] = {TFG_I32, TFG_I64, TFG_F32, TFG_F64};
	static const TfgShape shapes[] = {
		{3, {6, 7, 40}}, {2, {3000, 5}}, {2, {5, 3000}}, {1, {9}},
		{3, {2, 1, 70}}};

	for (int d = 0; d < 4; d++)
		for (int q = 0; q < 5; q++) {
			IrNode *x = in(dt[d], shapes[q]);
			int r = shapes[q].rank;
			for (int op = 0; op < OP__COUNT; op++) {
				int arg = op == OP_argmax || op == OP_argmin;
				if (!(op_info[op].flags & OPF_REDUCE))
					continue;
				for (uint32_t ax = 1; ax < (1u << r); ax++) {
					if (arg && (ax & (ax - 1)))
						continue;
					ASSERT_EQ(gen(ir_reduce(&P, L, op, x,
								ax, ax & 1)),
						  1);
				}
				if (!arg)
					ASSERT_EQ(gen(ir_reduce(&P, L, op, x,
								0, 0)), 1);
			}
		}
	/* full reductions of 256M f32: two launches, the scratch */
	IrNode *big = in(TFG_F32, shp(1, (int64_t)1 << 28, 0, 0));
	IrNode *n = ir_reduce(&P, L, OP_reduce_sum, big, 1, 0);
	ASSERT_EQ(gen(n), 2);
	ASSERT(cu_scratch_bytes(n) >= CU_MAX_ARGS);
	ASSERT_EQ(gen(ir_reduce(&P, L, OP_argmax, big, 1, 0)), 2);
	ASSERT_EQ(gen(ir_reduce(&P, L, OP_reduce_mean,
				in(TFG_I32, shp(2, 1024, 1024, 0)), 3, 1)), 2);
	/* empty: reduced axis of 0 (identities), empty output */
	IrNode *e = in(TFG_F32, shp(2, 4, 0, 0));
	ASSERT_EQ(gen(ir_reduce(&P, L, OP_reduce_sum, e, 2, 0)), 1);
	ASSERT_EQ(gen(ir_reduce(&P, L, OP_reduce_mean, e, 2, 1)), 1);
	ASSERT_EQ(gen(ir_reduce(&P, L, OP_reduce_prod, e, 1, 0)), 0);
	ASSERT_EQ(cu_scratch_bytes(ir_reduce(&P, L, OP_reduce_sum, e, 3, 0)),
		  0);
}

static void
t_softmax(void)
{
	static const int64_t K[] = {1, 10, 256, 257, 4096};

	for (int i = 0; i < 5; i++) {
		IrNode *x = in(i & 1 ? TFG_F64 : TFG_F32, shp(2, 7, K[i], 0));
		ASSERT_EQ(gen(ir_softmax(&P, L, OP_softmax, x)), 1);
		ASSERT_EQ(gen(ir_softmax(&P, L, OP_log_softmax, x)), 1);
	}
	ASSERT_EQ(gen(ir_softmax(&P, L, OP_softmax,
				 in(TFG_F32, shp(2, 0, 5, 0)))), 0);
}

/* softmax_cross_entropy: a warp per row (K <= 256) or a block. */
static void
t_xent(void)
{
	static const int64_t K[] = {1, 10, 256, 257, 4096};

	for (int i = 0; i < 5; i++) {
		TfgDtype t = i & 1 ? TFG_F64 : TFG_F32;
		IrNode *x = in(t, shp(2, 7, K[i], 0));
		ASSERT_EQ(gen(ir_xent(&P, L, x, in(t, shp(2, 7, K[i], 0)))), 1);
	}
	ASSERT_EQ(gen(ir_xent(&P, L, in(TFG_F32, shp(2, 0, 5, 0)),
			      in(TFG_F32, shp(2, 0, 5, 0)))), 0);
	ASSERT(cu_has_kernel(OP_softmax_cross_entropy));
}

/* What has no kernel is refused with a message, and says so. */
static void
t_refused(void)
{
	CuLaunch l[CU_MAX_LAUNCH];
	IrVar *v = arena_alloc(P.arena, sizeof *v);
	IrNode *n;

	ASSERT(!cu_has_kernel(OP_variable));
	ASSERT(!cu_has_kernel(OP_assign_add));
	ASSERT(!cu_has_kernel(OP_random_draw));
	ASSERT(!cu_has_kernel(OP_send));
	ASSERT(cu_has_kernel(OP_matmul));
	ASSERT(cu_has_kernel(OP_fused));
	ASSERT(cu_has_kernel(OP_softmax));
	v->name = "w";
	v->dtype = TFG_F32;
	v->shape = shp(1, 3, 0, 0);
	n = ir_var(&P, L, OP_variable, v, NULL);
	ASSERT(n != NULL);
	n->name = "w";
	ASSERT_EQ(cu_gen_node(&G, n, l, CU_MAX_LAUNCH), -1);
}

/* Runs cmd; 0 if it exited 0. */
static int
sh(const char *cmd)
{
	int rc = system(cmd);

	return rc == 0 ? 0 : -1;
}

/* The unit so far compiles to PTX. */
static void
t_ptx(void)
{
	char path[] = "/tmp/tfg-cuda-XXXXXX.cu", cmd[512];
	int fd = mkstemps(path, 3);
	FILE *f;

	ASSERT(fd >= 0);
	f = fdopen(fd, "w");
	ASSERT(f != NULL);
	fputs(G.src.p, f);
	fclose(f);
	printf("%d nodes, %d kernels, %zu bytes of CUDA C in %s\n", nnodes,
	       G.nkern, G.src.n, path);
	if (access(NVCC, X_OK) != 0) {
		TEST_SKIP_PART("nvcc not found");
		unlink(path);
		return;
	}
	snprintf(cmd, sizeof cmd, NVCC " --ptx -arch=compute_80 -std=c++17 "
		 "-o /dev/null %s", path);
	if (sh(cmd) != 0)
		TEST_FAIL_("nvcc failed on %s", path);
	unlink(path);
}

/* ---- the prelude on the host */

/* CUDA's intrinsics as the host computes them (no contraction: -O0 and
 * -ffp-contract=off). */
static const char shims[] =
	"#include <math.h>\n#include <stdio.h>\n#include <string.h>\n"
	"#define __device__\n#define __forceinline__ inline\n"
	"#define __fadd_rn(a, b) ((a) + (b))\n"
	"#define __fsub_rn(a, b) ((a) - (b))\n"
	"#define __fmul_rn(a, b) ((a) * (b))\n"
	"#define __fdiv_rn(a, b) ((a) / (b))\n"
	"#define __fsqrt_rn sqrtf\n#define __dsqrt_rn sqrt\n"
	"#define __dadd_rn(a, b) ((a) + (b))\n"
	"#define __dsub_rn(a, b) ((a) - (b))\n"
	"#define __dmul_rn(a, b) ((a) * (b))\n"
	"#define __ddiv_rn(a, b) ((a) / (b))\n"
	"static int __float_as_int(float f) { int i; memcpy(&i, &f, 4); "
	"return i; }\n"
	"static long long __double_as_longlong(double f) { long long i; "
	"memcpy(&i, &f, 8); return i; }\n"
	"static unsigned __umulhi(unsigned a, unsigned b) { return "
	"(unsigned)(((unsigned long long)a * b) >> 32); }\n";

static const long long ivals[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 31, 63,
				  2147483647LL, -2147483647LL - 1,
				  9223372036854775807LL,
				  -9223372036854775807LL - 1};
static const double fvals[] = {0.0, -0.0, 1.5, -1.5, 2.0, -3.0, 5.5,
			       INFINITY, -INFINITY, NAN, 1e10, -1e20,
			       3e9, -2147483648.0, 2147483648.0};
#define NI (int)(sizeof ivals / sizeof *ivals)
#define NF (int)(sizeof fvals / sizeof *fvals)

/* int pow of the CPU (codegen/cpu.c int_pow), in bits-wide wrapping. */
static long long
ref_pow(long long a, long long b, int bits)
{
	unsigned long long r = 1, x = (unsigned long long)a, e;
	unsigned long long mask = bits == 32 ? 0xffffffffull : ~0ull;

	if (b < 0)
		return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
	for (e = (unsigned long long)b; e; e >>= 1) {
		if (e & 1)
			r = (r * x) & mask;
		x = (x * x) & mask;
	}
	return bits == 32 ? (long long)(int32_t)(uint32_t)r : (long long)r;
}

/* NumPy's float % (codegen/cpu.c float_mod). */
static double
ref_fmod(double a, double b)
{
	double r = fmod(a, b);

	if (r != 0)
		return (r < 0) != (b < 0) ? r + b : r;
	return copysign(0.0, b);
}

/* llvm.maximum */
static double
ref_max(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

/* llvm.fptosi.sat to 32 or 64 bits */
static long long
ref_sat(double a, int bits)
{
	double lim = bits == 32 ? 2147483648.0 : 9223372036854775808.0;

	if (isnan(a))
		return 0;
	if (a >= lim)
		return bits == 32 ? INT32_MAX : INT64_MAX;
	if (a <= -lim)
		return bits == 32 ? INT32_MIN : INT64_MIN;
	return (long long)a;
}

static int
same(double a, double b)
{
	return (isnan(a) && isnan(b)) ||
	       (a == b && signbit(a) == signbit(b));
}

static void
t_prelude_host(void)
{
	char dir[] = "/tmp/tfg-prelude-XXXXXX", cmd[1024], src[256], exe[256];
	CuGen g;
	FILE *f, *p;
	int bad = 0;

	if (access("/usr/bin/g++", X_OK) != 0)
		TEST_SKIP("g++ not found");
	ASSERT(mkdtemp(dir) != NULL);
	snprintf(src, sizeof src, "%s/p.cc", dir);
	snprintf(exe, sizeof exe, "%s/p", dir);
	cu_gen_init(&g, 0);
	f = fopen(src, "w");
	ASSERT(f != NULL);
	fputs(shims, f);
	fputs(g.src.p, f);
	cu_gen_free(&g);
	/* one line per case: i32 and i64 div mod pow; f64 mod maximum
	   minimum relu; f64 -> i32, i64 casts */
	fprintf(f, "static const long long iv[] = {");
	for (int i = 0; i < NI; i++)
		fprintf(f, "%lldLL%s", ivals[i] == INT64_MIN ? INT64_MIN + 1 :
			ivals[i], i + 1 < NI ? ", " : "};\n");
	fprintf(f, "static const double fv[] = {0.0, -0.0, 1.5, -1.5, 2.0, "
		"-3.0, 5.5, INFINITY, -INFINITY, NAN, 1e10, -1e20, 3e9, "
		"-2147483648.0, 2147483648.0};\n");
	fprintf(f, "int main(void)\n{\n"
		"\tfor (int i = 0; i < %d; i++)\n"
		"\t\tfor (int j = 0; j < %d; j++) {\n"
		"\t\t\tlong long a = i == %d ? (-9223372036854775807LL - 1) : "
		"iv[i], b = j == %d ? (-9223372036854775807LL - 1) : iv[j];\n"
		"\t\t\tint a3 = (int)a, b3 = (int)b;\n"
		"\t\t\tprintf(\"%%d %%d %%d %%lld %%lld %%lld\\n\", "
		"tfg_div_i32(a3, b3), tfg_mod_i32(a3, b3), "
		"tfg_pow_i32(a3, b3 & 63), tfg_div_i64(a, b), "
		"tfg_mod_i64(a, b), tfg_pow_i64(a, b & 63));\n"
		"\t\t}\n"
		"\tfor (int i = 0; i < %d; i++)\n"
		"\t\tfor (int j = 0; j < %d; j++)\n"
		"\t\t\tprintf(\"%%a %%a %%a %%a %%d %%lld\\n\", "
		"tfg_mod_f64(fv[i], fv[j]), tfg_maximum_f64(fv[i], fv[j]), "
		"tfg_minimum_f64(fv[i], fv[j]), tfg_relu_f64(fv[i]), "
		"tfg_cvt_f64_i32(fv[i]), tfg_cvt_f64_i64(fv[i]));\n"
		"\treturn 0;\n}\n", NI, NI, NI - 1, NI - 1, NF, NF);
	fclose(f);
	snprintf(cmd, sizeof cmd, "g++ -O0 -ffp-contract=off -w -o %s %s",
		 exe, src);
	ASSERT(sh(cmd) == 0);
	p = popen(exe, "r");
	ASSERT(p != NULL);
	for (int i = 0; i < NI; i++)
		for (int j = 0; j < NI; j++) {
			long long a = ivals[i], b = ivals[j], r[6];
			int32_t a3 = (int32_t)a, b3 = (int32_t)b;
			ASSERT(fscanf(p, "%lld %lld %lld %lld %lld %lld", &r[0],
				      &r[1], &r[2], &r[3], &r[4], &r[5]) == 6);
			bad |= r[0] != tfg_int_div(a3, b3, 32);
			bad |= r[1] != tfg_int_mod(a3, b3, 32);
			bad |= r[2] != ref_pow(a3, b3 & 63, 32);
			bad |= r[3] != tfg_int_div(a, b, 64);
			bad |= r[4] != tfg_int_mod(a, b, 64);
			bad |= r[5] != ref_pow(a, b & 63, 64);
			if (bad)
				TEST_FAIL_("int ops of %lld, %lld", a, b);
		}
	for (int i = 0; i < NF; i++)
		for (int j = 0; j < NF; j++) {
			double a = fvals[i], b = fvals[j], r[4];
			long long c3, c6;
			char buf[4][64];
			ASSERT(fscanf(p, "%63s %63s %63s %63s %lld %lld", buf[0],
				      buf[1], buf[2], buf[3], &c3, &c6) == 6);
			for (int k = 0; k < 4; k++)
				r[k] = strtod(buf[k], NULL);
			bad |= !same(r[0], ref_fmod(a, b));
			bad |= !same(r[1], ref_max(a, b));
			bad |= !same(r[2], -ref_max(-a, -b));
			bad |= !same(r[3], a <= 0 ? 0.0 : a);
			bad |= c3 != ref_sat(a, 32) || c6 != ref_sat(a, 64);
			if (bad)
				TEST_FAIL_("float ops of %g, %g", a, b);
		}
	pclose(p);
	unlink(exe);
	unlink(src);
	rmdir(dir);
}

/* ---- convolutions: generated, and run on the host */

/* The value of element i of operand salt, as the host program makes it. */
static double
conv_val(int64_t i, unsigned salt)
{
	return (double)((int64_t)(((uint64_t)i * 2654435761u + salt) % 2001) -
			1000) / 1000.0;
}

typedef struct ConvCase {
	OpKind op;
	TfgDtype t;
	TfgShape a, b, out; /* operands, and the sizes argument */
	IrConv cv;
} ConvCase;

static const ConvCase conv_cases[] = {
	{OP_conv2d, TFG_F32, {4, {2, 7, 6, 3}}, {4, {3, 2, 3, 4}}, {0, {0}},
	 {{2, 1}, {1, 2}, {1, 1, 1, 2}, 0, {0, 0}}},
	{OP_conv2d_backprop_input, TFG_F64, {4, {2, 4, 7, 4}},
	 {4, {3, 2, 3, 4}}, {4, {2, 7, 6, 3}},
	 {{2, 1}, {1, 2}, {1, 1, 1, 2}, 0, {0, 0}}},
	{OP_conv2d_backprop_filter, TFG_F32, {4, {2, 7, 6, 3}},
	 {4, {2, 4, 7, 4}}, {4, {3, 2, 3, 4}},
	 {{2, 1}, {1, 2}, {1, 1, 1, 2}, 0, {0, 0}}},
	{OP_conv2d, TFG_F64, {4, {1, 5, 5, 3}}, {4, {3, 3, 3, 2}}, {0, {0}},
	 {{2, 2}, {1, 1}, {1, 1, 1, 1}, 1, {0, 0}}},
	{OP_conv2d_backprop_input, TFG_F32, {4, {1, 3, 3, 6}},
	 {4, {3, 3, 3, 2}}, {4, {1, 5, 5, 3}},
	 {{2, 2}, {1, 1}, {1, 1, 1, 1}, 1, {0, 0}}},
	{OP_conv2d_backprop_filter, TFG_F64, {4, {1, 5, 5, 3}},
	 {4, {1, 3, 3, 6}}, {4, {3, 3, 3, 2}},
	 {{2, 2}, {1, 1}, {1, 1, 1, 1}, 1, {0, 0}}},
	/* pools: SAME windows over strides below and at their size */
	{OP_max_pool, TFG_F32, {4, {2, 7, 6, 3}}, {0, {0}}, {0, {0}},
	 {{2, 1}, {1, 1}, {1, 1, 1, 1}, 0, {3, 3}}},
	{OP_avg_pool, TFG_F64, {4, {2, 7, 6, 3}}, {0, {0}}, {0, {0}},
	 {{2, 2}, {1, 1}, {0, 1, 0, 0}, 0, {2, 2}}},
	{OP_max_pool_grad, TFG_F64, {4, {2, 7, 6, 3}}, {4, {2, 4, 6, 3}},
	 {4, {2, 7, 6, 3}}, {{2, 1}, {1, 1}, {1, 1, 1, 1}, 0, {3, 3}}},
	{OP_avg_pool_grad, TFG_F32, {4, {2, 4, 3, 3}}, {0, {0}},
	 {4, {2, 7, 6, 3}}, {{2, 2}, {1, 1}, {0, 1, 0, 0}, 0, {2, 2}}},
	{OP_max_pool, TFG_I32, {4, {1, 5, 5, 2}}, {0, {0}}, {0, {0}},
	 {{2, 2}, {1, 1}, {0, 0, 0, 0}, 0, {2, 2}}},
};
#define NCONV (int)(sizeof conv_cases / sizeof conv_cases[0])

static int
is_pool(OpKind op)
{
	return op == OP_max_pool || op == OP_avg_pool ||
	       op == OP_max_pool_grad || op == OP_avg_pool_grad;
}

static IrNode *
conv_node(const ConvCase *k)
{
	if (is_pool(k->op))
		return ir_pool(&P, L, k->op, in(k->t, k->a), k->b.rank ?
			       in(k->t, k->b) : NULL, &k->cv,
			       k->out.rank ? &k->out : NULL);
	return ir_conv(&P, L, k->op, in(k->t, k->a), in(k->t, k->b), &k->cv,
		       k->op == OP_conv2d ? NULL : &k->out);
}

/* Every case's kernel, into the unit t_ptx compiles. */
static void
t_conv(void)
{
	for (int i = 0; i < NCONV; i++)
		ASSERT_EQ(gen(conv_node(&conv_cases[i])), 1);
	ASSERT(cu_has_kernel(OP_max_pool));
	ASSERT(cu_has_kernel(OP_conv2d));
	ASSERT(cu_has_kernel(OP_conv2d_backprop_input));
	ASSERT(cu_has_kernel(OP_conv2d_backprop_filter));
}

/* Case k's operand of n elements made by conv_val(., salt), as dtype t
 * (integers: the value times 10, truncated, as the host program's). */
static void *
conv_operand(TfgDtype t, int64_t n, unsigned salt)
{
	char *b = malloc((size_t)(n ? n : 1) * 8);

	for (int64_t e = 0; e < n; e++)
		if (t == TFG_F32)
			((float *)b)[e] = (float)conv_val(e, salt);
		else if (t == TFG_F64)
			((double *)b)[e] = conv_val(e, salt);
		else
			((int32_t *)b)[e] = (int32_t)(conv_val(e, salt) * 10);
	return b;
}

/* The host program's main: each kernel on conv_val's operands, its
 * output printed. */
static const char conv_main[] =
	"struct D3 { unsigned x, y, z; };\n"
	"static D3 blockIdx, threadIdx, gridDim = {1, 1, 1};\n"
	"#define __global__\n#define __launch_bounds__(n)\n"
	"#define __restrict__\n";
static const char conv_run[] =
	"static double val(long long i, unsigned salt)\n{\n"
	"\treturn (double)((long long)(((unsigned long long)i * "
	"2654435761u + salt) % 2001) - 1000) / 1000.0;\n}\n"
	"template <class T> static void run(void (*k)(void *, void *, "
	"void *), void (*k1)(void *, void *), long long na, long long nb, "
	"long long no, double sc)\n{\n"
	"\tT *a = new T[na], *b = new T[nb + 1], *o = new T[no];\n"
	"\tfor (long long i = 0; i < na; i++) a[i] = (T)(val(i, 1) * sc);\n"
	"\tfor (long long i = 0; i < nb; i++) b[i] = (T)(val(i, 2) * sc);\n"
	"\tfor (threadIdx.x = 0; threadIdx.x < 256; threadIdx.x++)\n"
	"\t\tif (k) k(o, a, b); else k1(o, a);\n"
	"\tfor (long long i = 0; i < no; i++) printf(\"%a\\n\", "
	"(double)o[i]);\n"
	"\tdelete[] a; delete[] b; delete[] o;\n}\n"
	"int main(void)\n{\n";

/* The kernels compiled for the host by g++ (one block of 256 threads,
 * one after the other, covers every element: the loops stride by the
 * grid) and run on conv_val's values, against tfg_rt_conv2d
 * (runtime/conv.c). */
static void
t_conv_host(void)
{
	char dir[] = "/tmp/tfg-conv-XXXXXX", cmd[1024], src[256], exe[256];
	CuGen g;
	CuLaunch l[CU_MAX_LAUNCH];
	int kern[NCONV];
	FILE *f, *p;

	if (access("/usr/bin/g++", X_OK) != 0)
		TEST_SKIP("g++ not found");
	ASSERT(mkdtemp(dir) != NULL);
	snprintf(src, sizeof src, "%s/c.cc", dir);
	snprintf(exe, sizeof exe, "%s/c", dir);
	cu_gen_init(&g, 0);
	for (int i = 0; i < NCONV; i++) {
		IrNode *n = conv_node(&conv_cases[i]);

		ASSERT(n != NULL);
		n->name = "c";
		ASSERT_EQ(cu_gen_node(&g, n, l, CU_MAX_LAUNCH), 1);
		ASSERT(l[0].nargs == 1 + n->nin && l[0].arg[0] == CU_ARG_OUT &&
		       l[0].arg[1] == 0 && (n->nin == 1 || l[0].arg[2] == 1));
		kern[i] = l[0].kernel;
	}
	f = fopen(src, "w");
	ASSERT(f != NULL);
	fputs(shims, f);
	fputs(conv_main, f);
	fputs(g.src.p, f);
	fputs(conv_run, f);
	for (int i = 0; i < NCONV; i++) {
		const ConvCase *k = &conv_cases[i];
		IrNode *n = conv_node(k);

		int two = n->nin == 2;

		fprintf(f, "\trun<%s>(%s, %s, %" PRId64 ", %" PRId64 ", %"
			PRId64 ", %s);\n", k->t == TFG_F32 ? "float"
			: k->t == TFG_F64 ? "double" : "int",
			two ? g.names[kern[i]] : "0",
			two ? "0" : g.names[kern[i]], tfg_shape_numel(&k->a),
			k->b.rank ? tfg_shape_numel(&k->b) : 0,
			tfg_shape_numel(&n->shape),
			k->t == TFG_I32 ? "10.0" : "1.0");
	}
	fputs("\treturn 0;\n}\n", f);
	fclose(f);
	cu_gen_free(&g);
	snprintf(cmd, sizeof cmd, "g++ -O1 -w -o %s %s", exe, src);
	ASSERT(sh(cmd) == 0);
	p = popen(exe, "r");
	ASSERT(p != NULL);
	for (int i = 0; i < NCONV; i++) {
		const ConvCase *k = &conv_cases[i];
		IrNode *n = conv_node(k);
		TfgConv c;
		int64_t no = tfg_shape_numel(&n->shape);
		void *a = conv_operand(k->t, tfg_shape_numel(&k->a), 1);
		void *b = conv_operand(k->t, k->b.rank ?
				       tfg_shape_numel(&k->b) : 0, 2);
		char *o = malloc((size_t)no * 8);

		ASSERT_EQ(ir_conv_geometry(n, &c), 0);
		if (is_pool(k->op))
			tfg_rt_pool2d(k->op == OP_max_pool ? TFG_POOL_MAX
				      : k->op == OP_avg_pool ? TFG_POOL_AVG
				      : k->op == OP_max_pool_grad
				      ? TFG_POOL_MAX_GRAD : TFG_POOL_AVG_GRAD,
				      k->t, &c, a, b, o);
		else
			tfg_rt_conv2d(k->op == OP_conv2d ? TFG_CONV_FORWARD
				      : k->op == OP_conv2d_backprop_input
				      ? TFG_CONV_INPUT : TFG_CONV_FILTER, k->t,
				      &c, a, b, o);
		for (int64_t e = 0; e < no; e++) {
			char buf[64];
			double v, r = k->t == TFG_F32 ? ((float *)o)[e]
				    : k->t == TFG_F64 ? ((double *)o)[e]
				    : ((int32_t *)o)[e];

			ASSERT(fscanf(p, "%63s", buf) == 1);
			v = strtod(buf, NULL);
			if (!(fabs(v - r) <= 1e-4 * (1 + fabs(r))))
				TEST_FAIL_("case %d element %" PRId64 ": %g "
					   "(kernel) != %g (CPU)", i, e, v, r);
		}
		free(a), free(b), free(o);
	}
	pclose(p);
	unlink(exe);
	unlink(src);
	rmdir(dir);
}

TEST_MAIN_FIXTURE(setup, teardown, {"elementwise", t_elementwise},
		  {"dedup", t_dedup}, {"fused", t_fused},
		  {"makers", t_makers}, {"movement", t_movement},
		  {"reductions", t_reductions}, {"softmax", t_softmax},
		  {"xent", t_xent}, {"conv", t_conv},
		  {"refused", t_refused}, {"ptx", t_ptx},
		  {"prelude_host", t_prelude_host},
		  {"conv_host", t_conv_host})
