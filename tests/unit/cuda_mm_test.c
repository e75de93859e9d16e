/*
 * tests/unit/cuda_mm_test.c: matmul's CUDA kernels (codegen/cuda_mm.c,
 * spec §6.18 "matmul and `@`", spec/design.md "Epilogues") without a
 * GPU: nodes built through the IR builders, each dtype, edge sizes,
 * broadcast batches, epilogues, with and without --gpu-tf32.  Each
 * launch stays within CUDA's limits and passes the node's buffers in
 * order; each unit is written to a file and compiled to PTX by nvcc
 * when /usr/local/cuda/bin/nvcc exists (else the test is skipped),
 * whole-tile TF32 kernels also to sm_90 code, where no register may
 * spill.
 */
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

static void
setup(void)
{
	memset(&P, 0, sizeof P);
	P.arena = arena_new();
	errs = open_memstream(&errtext, &errlen);
	ASSERT(errs != NULL);
	diag_init(&D, errs);
	P.diag = &D;
}

static void
teardown(void)
{
	fclose(errs);
	free(errtext);
	arena_free(P.arena);
}

static TfgShape
shp(int rank, int64_t a, int64_t b, int64_t c, int64_t d)
{
	TfgShape s = {rank, {a, b, c, d}};

	return s;
}

static IrNode *
in(TfgDtype t, TfgShape s)
{
	IrNode *n = ir_input(&P, L, "x", t, &s);

	ASSERT(n != NULL);
	return n;
}

static IrNode *
mm(IrNode *a, IrNode *b)
{
	IrNode *n = ir_matmul(&P, L, a, b);

	if (n == NULL)
		TEST_FAIL_("not built: %s", errtext ? errtext : "");
	n->name = "y";
	return n;
}

/* op(anchor, input 2) when bin, else op(anchor); then `then` of that
 * when not OP__COUNT: the epilogue of matmul n, whose third input is x. */
static IrNode *
epi(IrNode *n, IrNode *x, OpKind op, OpKind then)
{
	IrFuse *f = arena_alloc(P.arena, sizeof *f);
	IrNode *ext[3] = {n->in[0], n->in[1], x};

	f->n = then == OP__COUNT ? 1 : 2;
	f->ops = arena_alloc(P.arena, f->n * sizeof *f->ops);
	f->shape = n->shape;
	for (int m = 0; m < f->n; m++) {
		IrFuseOp *o = &f->ops[m];
		o->op = m ? then : op;
		o->dtype = o->in_dt[0] = o->in_dt[1] = n->dtype;
		o->shape = n->shape;
		o->nin = op_info[o->op].nin;
		o->arg[0] = m ? 0 : IR_FUSE_ANCHOR;
		o->arg[1] = IR_FUSE_IN(2);
	}
	ASSERT_EQ(ir_set_fuse(&P, n, OP_matmul, f, ext, x ? 3 : 2), 0);
	return n;
}

/* Generates n into g: one launch within CUDA's limits, passing the
 * output then every input. */
static void
gen(CuGen *g, const IrNode *n)
{
	CuLaunch l[CU_MAX_LAUNCH];
	int r = cu_gen_matmul(g, n, l, CU_MAX_LAUNCH);

	ASSERT_EQ(r, 1);
	ASSERT(l[0].kernel >= 0 && l[0].kernel < g->nkern);
	ASSERT(l[0].grid[0] >= 1 && l[0].grid[0] <= 2147483647u);
	ASSERT(l[0].grid[1] >= 1 && l[0].grid[1] <= 65535);
	ASSERT(l[0].grid[2] >= 1 && l[0].grid[2] <= 65535);
	ASSERT(l[0].block[0] * l[0].block[1] * l[0].block[2] <= 1024);
	ASSERT(l[0].block[1] <= 1024 && l[0].block[2] <= 64);
	/* dynamic beyond 48 KiB needs the runtime's attribute: H100 ok */
	ASSERT(l[0].shmem <= 227 * 1024);
	ASSERT_EQ(l[0].nargs, 1 + n->nin);
	ASSERT_EQ(l[0].arg[0], CU_ARG_OUT);
	for (int e = 0; e < n->nin; e++)
		ASSERT_EQ(l[0].arg[1 + e], e);
	ASSERT(strstr(g->texts[l[0].kernel], "@K(") != NULL);
}

/* The unit compiles to PTX for sm_80 (with sass: to sm_90 code as
 * well, every register in place: a spill is an error). */
static void
compile(const CuGen *g, const char *tag, int sass)
{
	char path[64], cmd[320];
	FILE *f;

	if (access(NVCC, X_OK) != 0) {
		TEST_SKIP_PART("nvcc not found (%s)", tag);
		return;
	}
	snprintf(path, sizeof path, "/tmp/tfg-cuda-mm-%s.%d.cu", tag,
		 (int)getpid());
	f = fopen(path, "w");
	ASSERT(f != NULL);
	fputs(g->src.p, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, NVCC " --ptx -arch=compute_80 -std=c++17 "
		 "-Werror all-warnings -I/usr/local/cuda/include -o /dev/null %s", path);
	if (system(cmd) != 0)
		TEST_FAIL_("nvcc failed on %s", path);
	snprintf(cmd, sizeof cmd, NVCC " -cubin -arch=sm_90 -std=c++17 "
		 "-Werror all-warnings -Xptxas -warn-spills,-Werror "
		 "-I/usr/local/cuda/include -o /dev/null %s", path);
	if (sass && system(cmd) != 0)
		TEST_FAIL_("nvcc (sm_90) failed on %s", path);
	unlink(path);
}

static void
ptx(const CuGen *g, const char *tag)
{
	compile(g, tag, 0);
}

/* Every dtype at edge sizes, plain products. */
static void
t_sizes(void)
{
	static const int64_t sz[][3] = {{1, 1, 1}, {3, 5, 7}, {129, 65, 257},
					{4096, 4096, 4096}, {1, 300, 2},
					{64, 0, 64}, {128, 128, 128},
					{33, 35, 37}};
	static const TfgDtype dt[] = {TFG_F32, TFG_F64, TFG_I32, TFG_I64};
	CuGen g;
	int k;

	for (int tf = 0; tf < 2; tf++) {
		cu_gen_init(&g, tf);
		for (size_t d = 0; d < sizeof dt / sizeof dt[0]; d++) {
			for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
				int64_t m = sz[i][0], k = sz[i][1];
				int64_t n = sz[i][2];
				gen(&g, mm(in(dt[d], shp(2, m, k, 0, 0)),
					   in(dt[d], shp(2, k, n, 0, 0))));
			}
		}
		/* the same node again shares its kernel */
		k = g.nkern;
		gen(&g, mm(in(TFG_F32, shp(2, 33, 35, 0, 0)),
			   in(TFG_F32, shp(2, 35, 37, 0, 0))));
		ASSERT_EQ(g.nkern, k);
		ptx(&g, tf ? "sizes-tf32" : "sizes");
		cu_gen_free(&g);
	}
}

/* Vectors, broadcast batches, the batch as rows, a batch past grid z. */
static void
t_batch(void)
{
	CuGen g;
	CuLaunch l[CU_MAX_LAUNCH];
	IrNode *n;

	cu_gen_init(&g, 1);
	gen(&g, mm(in(TFG_F32, shp(1, 7, 0, 0, 0)),
		   in(TFG_F32, shp(2, 7, 40, 0, 0))));
	gen(&g, mm(in(TFG_F32, shp(2, 40, 7, 0, 0)),
		   in(TFG_F32, shp(1, 7, 0, 0, 0))));
	gen(&g, mm(in(TFG_I64, shp(1, 7, 0, 0, 0)),
		   in(TFG_I64, shp(1, 7, 0, 0, 0))));
	/* [2, 1, 5, 7] @ [3, 7, 4]: [2, 3, 5, 4], 6 products */
	n = mm(in(TFG_F64, shp(4, 2, 1, 5, 7)), in(TFG_F64, shp(3, 3, 7, 4, 0)));
	ASSERT_EQ(cu_gen_matmul(&g, n, l, CU_MAX_LAUNCH), 1);
	ASSERT_EQ(l[0].grid[2], 6);
	n = mm(in(TFG_F32, shp(4, 2, 1, 130, 70)),
	       in(TFG_F32, shp(3, 3, 70, 200, 0)));
	ASSERT_EQ(cu_gen_matmul(&g, n, l, CU_MAX_LAUNCH), 1);
	ASSERT_EQ(l[0].grid[2], 6);
	/* [4, 33, 65] @ [65, 40]: one product of 132 rows */
	n = mm(in(TFG_F32, shp(3, 4, 33, 65, 0)), in(TFG_F32, shp(2, 65, 40, 0, 0)));
	ASSERT_EQ(cu_gen_matmul(&g, n, l, CU_MAX_LAUNCH), 1);
	ASSERT_EQ(l[0].grid[2], 1);
	ASSERT(strstr(g.texts[l[0].kernel], "M = 132,") != NULL);
	/* 70000 products: grid z 65535, each block loops */
	n = mm(in(TFG_I32, shp(3, 70000, 2, 3, 0)),
	       in(TFG_I32, shp(3, 70000, 3, 2, 0)));
	ASSERT_EQ(cu_gen_matmul(&g, n, l, CU_MAX_LAUNCH), 1);
	ASSERT_EQ(l[0].grid[2], 65535);
	/* nothing to compute: no launch */
	n = mm(in(TFG_F32, shp(3, 0, 2, 3, 0)), in(TFG_F32, shp(2, 3, 2, 0, 0)));
	ASSERT_EQ(cu_gen_matmul(&g, n, l, CU_MAX_LAUNCH), 0);
	ptx(&g, "batch");
	cu_gen_free(&g);
}

/* relu(x @ w + b), sigmoid(x @ w), x @ w * c for a column and a full
 * tensor, batched and flat, each dtype and kernel. */
static void
t_epilogue(void)
{
	static const TfgDtype dt[] = {TFG_F32, TFG_F64, TFG_I32, TFG_I64};
	CuGen g;

	for (int tf = 0; tf < 2; tf++) {
		cu_gen_init(&g, tf);
		for (size_t d = 0; d < sizeof dt / sizeof dt[0]; d++) {
			TfgDtype t = dt[d];
			int fl = t == TFG_F32 || t == TFG_F64;
			gen(&g, epi(mm(in(t, shp(2, 129, 65, 0, 0)),
				       in(t, shp(2, 65, 257, 0, 0))),
				    in(t, shp(1, 257, 0, 0, 0)), OP_add,
				    OP_relu));
			gen(&g, epi(mm(in(t, shp(2, 256, 64, 0, 0)),
				       in(t, shp(2, 64, 256, 0, 0))),
				    in(t, shp(1, 256, 0, 0, 0)), OP_add,
				    fl ? OP_sigmoid : OP_relu));
			gen(&g, epi(mm(in(t, shp(3, 4, 33, 65, 0)),
				       in(t, shp(2, 65, 40, 0, 0))),
				    in(t, shp(2, 33, 1, 0, 0)), OP_mul,
				    OP__COUNT));
			gen(&g, epi(mm(in(t, shp(3, 2, 70, 80, 0)),
				       in(t, shp(3, 2, 80, 90, 0))),
				    in(t, shp(3, 2, 70, 90, 0)), OP_sub,
				    OP__COUNT));
		}
		gen(&g, epi(mm(in(TFG_F32, shp(2, 200, 300, 0, 0)),
			       in(TFG_F32, shp(2, 300, 100, 0, 0))), NULL,
			    OP_sigmoid, OP__COUNT));
		ptx(&g, tf ? "epi-tf32" : "epi");
		cu_gen_free(&g);
	}
}

/* Generates n into g; its one launch. */
static CuLaunch
gen1(CuGen *g, const IrNode *n)
{
	CuLaunch l[CU_MAX_LAUNCH];

	gen(g, n);
	ASSERT_EQ(cu_gen_matmul(g, n, l, CU_MAX_LAUNCH), 1);
	return l[0];
}

/* --gpu-tf32: mma.sync with 128 x 256 tiles (8 warps, 4 stages) where
 * there are enough, else 128 x 128 (4 warps, 3 stages); sgemm without
 * the flag, the simple kernel for k < 32.  The products of whole tiles
 * compile for sm_90 without spills (the edges' guards may spill a few
 * words). */
static void
t_tf32(void)
{
	CuGen g;
	CuLaunch l;
	const char *t;

	cu_gen_init(&g, 1);
	l = gen1(&g, mm(in(TFG_F32, shp(2, 4096, 4096, 0, 0)),
			in(TFG_F32, shp(2, 4096, 4096, 0, 0))));
	ASSERT_EQ(l.grid[0], 32 * 16);
	ASSERT_EQ(l.block[0], 256);
	ASSERT_EQ(l.shmem, 4 * (128 * 36 + 32 * 264) * 4);
	t = g.texts[l.kernel];
	ASSERT(strstr(t, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
	ASSERT(strstr(t, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
	ASSERT(strstr(t, "cvt.rna.tf32.f32"));
	ASSERT(strstr(t, "__launch_bounds__(256, 1)"));
	l = gen1(&g, epi(mm(in(TFG_F32, shp(2, 8192, 8192, 0, 0)),
			    in(TFG_F32, shp(2, 8192, 8192, 0, 0))),
			 in(TFG_F32, shp(1, 8192, 0, 0, 0)), OP_add, OP_relu));
	ASSERT_EQ(l.grid[0], 64 * 32);
	/* few tiles: 128 x 128 */
	l = gen1(&g, mm(in(TFG_F32, shp(2, 256, 64, 0, 0)),
			in(TFG_F32, shp(2, 64, 256, 0, 0))));
	ASSERT_EQ(l.grid[0], 4);
	ASSERT_EQ(l.block[0], 128);
	ASSERT_EQ(l.shmem, 3 * (128 * 36 + 32 * 136) * 4);
	ASSERT(strstr(g.texts[l.kernel], "__launch_bounds__(128, 2)"));
	compile(&g, "tf32", 1);
	cu_gen_free(&g);

	cu_gen_init(&g, 1);
	/* edges everywhere, k and n not multiples of 4: 4-byte copies */
	l = gen1(&g, mm(in(TFG_F32, shp(2, 2000, 37, 0, 0)),
			in(TFG_F32, shp(2, 37, 4001, 0, 0))));
	ASSERT_EQ(l.grid[0], 16 * 16);
	ASSERT_EQ(l.block[0], 256);
	ASSERT(strstr(g.texts[l.kernel], "mm_cp4(") != NULL);
	/* a batch of 130 products, 2 tiles each: enough for 128 x 256 */
	l = gen1(&g, epi(mm(in(TFG_F32, shp(3, 130, 128, 40, 0)),
			    in(TFG_F32, shp(3, 130, 40, 257, 0))),
			 in(TFG_F32, shp(1, 257, 0, 0, 0)), OP_add, OP_relu));
	ASSERT_EQ(l.grid[0], 2);
	ASSERT_EQ(l.grid[2], 130);
	ASSERT_EQ(l.block[0], 256);
	/* offsets past 2^31: 64-bit */
	l = gen1(&g, mm(in(TFG_F32, shp(2, 70000, 32000, 0, 0)),
			in(TFG_F32, shp(2, 32000, 64, 0, 0))));
	ASSERT(strstr(g.texts[l.kernel], "typedef long long ix;") != NULL);
	/* k < 32: not worth it */
	l = gen1(&g, mm(in(TFG_F32, shp(2, 256, 16, 0, 0)),
			in(TFG_F32, shp(2, 16, 256, 0, 0))));
	ASSERT_EQ(l.shmem, 0);
	ASSERT(strstr(g.texts[l.kernel], "mma.sync") == NULL);
	ptx(&g, "tf32-edges");
	cu_gen_free(&g);

	/* without --gpu-tf32: sgemm */
	cu_gen_init(&g, 0);
	l = gen1(&g, mm(in(TFG_F32, shp(2, 4096, 4096, 0, 0)),
			in(TFG_F32, shp(2, 4096, 4096, 0, 0))));
	ASSERT_EQ(l.shmem, 0);
	ASSERT(strstr(g.texts[l.kernel], "mma.sync") == NULL);
	cu_gen_free(&g);
}

/* What the node cannot be: refused with the codegen error. */
static void
t_refused(void)
{
	CuGen g;
	CuLaunch l[CU_MAX_LAUNCH];
	IrNode *n = mm(in(TFG_F32, shp(2, 3, 4, 0, 0)),
		       in(TFG_F32, shp(2, 4, 5, 0, 0)));

	cu_gen_init(&g, 0);
	n->in[1] = in(TFG_F64, shp(2, 4, 5, 0, 0));
	ASSERT_EQ(cu_gen_matmul(&g, n, l, CU_MAX_LAUNCH), -1);
	ASSERT_EQ(cu_matmul_scratch(n), 0);
	cu_gen_free(&g);
}

TEST_MAIN_FIXTURE(setup, teardown, {"sizes", t_sizes}, {"batch", t_batch},
		  {"epilogue", t_epilogue}, {"tf32", t_tf32},
		  {"refused", t_refused})
