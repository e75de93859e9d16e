/*
 * codegen/cuda.c: a task's GPU code inside its LLVM module
 * (spec/design.md "GPUs").
 *
 * Before the parts are built, gpu_prepare looks at the nodes the task
 * places on its GPUs.  Under the JIT it asks the runtime which GPUs the
 * process has (tfg_gpu_probe): none, or a gpu:N beyond them, is an error
 * at the task's start, or with --soft-placement a warning that lists
 * the nodes, which then run on the task's CPU (their devices are
 * rewritten here, before layout: the Program is this process's own).
 * Then every GPU node's kernels go into one CUDA C unit (codegen/
 * cuda_kern.c, cuda_mm.c), NVRTC compiles it to PTX for the device's
 * compute capability (codegen/nvrtc.c, cached on disk), and the PTX,
 * the kernels' names and the constants' names become a TfgGpuModule
 * constant of the module, so JIT-compiled and ahead-of-time parts carry
 * their GPU code alike and need no NVRTC at run time.
 *
 * In a part, each GPU's values live in a device arena planned like the
 * host arena (codegen/memplan.c, one space per GPU), which the part asks
 * the runtime for at its entry (tfg_rt_gpu_arena); a node's launches
 * become calls of tfg_rt_gpu_launch with its buffers' device addresses,
 * a constant on a GPU is a __device__ array of the unit
 * (tfg_rt_gpu_global), and OP_copy is tfg_rt_gpu_copy.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_int.h"
#include "codegen/cuda.h"

/* What gpu_prepare decided per node of each part. */
typedef struct GpuNode {
	int nl;                     /* launches */
	CuLaunch *l;
	int global;                 /* a constant: its index, else -1 */
	int gemm;                   /* cuBLAS may compute it (gm); then l
				       is the fallback, epi the epilogue */
	TfgGpuGemm gm;
	int nepi;
	CuLaunch epi;
} GpuNode;

struct CgGpu {
	CuGen gen;
	int cc;
	int nglobal;
	GpuNode **node;             /* [nsig][part n] (NULL: no GPU node) */
	LLVMValueRef mod;           /* the TfgGpuModule constant */
	LLVMTypeRef launch_ty, arena_ty, global_ty, copy_ty;
	LLVMValueRef launch_fn, arena_fn, global_fn, copy_fn;
	LLVMTypeRef gemm_ty;
	LLVMValueRef gemm_fn;
};

static int
on_gpu(const IrNode *n)
{
	return n->dev.kind == DEV_GPU;
}

static const IrPart *
task_part(const Program *p, int s, int task)
{
	return p->sigs[s].parts && p->sigs[s].parts[task].n > 0
		   ? &p->sigs[s].parts[task]
		   : NULL;
}

/* ------------------------------------------------------- placement check */

/* Soft placement: the task's GPU nodes run on its CPU; copies stay, as
 * host-to-host copies. */
static void
to_host(const Program *p, int task)
{
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *pt = task_part(p, s, task);
		for (int i = 0; pt && i < pt->n; i++)
			if (on_gpu(pt->nodes[i])) {
				pt->nodes[i]->dev.kind = DEV_CPU;
				pt->nodes[i]->dev.index = 0;
			}
	}
}

/* The names of the task's nodes on GPUs (at least index `min`), for
 * messages: "a, b and 3 more". */
static void
gpu_names(const Program *p, int task, int min, char *buf, size_t len)
{
	int k = 0, more = 0;
	size_t at = 0;

	buf[0] = '\0';
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *pt = task_part(p, s, task);
		for (int i = 0; pt && i < pt->n; i++) {
			const IrNode *n = pt->nodes[i];
			if (!on_gpu(n) || n->dev.index < min ||
			    n->op == OP_const || n->op == OP_copy)
				continue;
			if (k == 6) {
				more++;
				continue;
			}
			if (at < len && n->name)
				at += (size_t)snprintf(buf + at, len - at,
					"%s%s (%s, /gpu:%d)", k ? ", " : "",
					n->name, op_info[n->op].name,
					n->dev.index);
			else if (at < len)
				at += (size_t)snprintf(buf + at, len - at,
					"%s_%d (%s, /gpu:%d)", k ? ", " : "",
					n->id, op_info[n->op].name,
					n->dev.index);
			k++;
		}
	}
	if (more && at < len)
		snprintf(buf + at, len - at, " and %d more", more);
}

/* Checks the task's GPU nodes against the GPUs this process has:
 * 0 (maybe after moving them to the CPU), -1 after an error. */
static int
check_gpus(const Program *p, int task, int maxidx, const CgOptions *o,
	   int *cc)
{
	TfgGpuInfo gi;
	char names[512];
	const char *tn = p->tasks[task].name;

	tfg_gpu_probe(&gi);
	if (gi.count == 0) {
		gpu_names(p, task, 0, names, sizeof names);
		if (!o->soft_placement) {
			fprintf(stderr, "tfgc: error: %s places ops on a GPU "
				"but has none: %s\n  ops: %s\n  "
				"(--soft-placement runs them on its CPU)\n",
				tn, gi.why, names);
			return -1;
		}
		fprintf(stderr, "tfgc: warning: %s has no GPU (%s): "
			"--soft-placement runs these on its CPU: %s\n", tn,
			gi.why, names);
		to_host(p, task);
		return 0;
	}
	if (maxidx >= gi.count) {
		gpu_names(p, task, gi.count, names, sizeof names);
		if (!o->soft_placement) {
			fprintf(stderr, "tfgc: error: %s places ops on "
				"/gpu:%d but has %d GPU%s (%s): %s\n  "
				"(--soft-placement shares the GPUs it has)\n",
				tn, maxidx, gi.count, gi.count == 1 ? "" : "s",
				gi.name[0], names);
			return -1;
		}
		fprintf(stderr, "tfgc: warning: %s has %d GPU%s (%s): "
			"/gpu:%d to /gpu:%d run on /gpu:N mod %d, each on a "
			"stream of its own: %s\n", tn, gi.count,
			gi.count == 1 ? "" : "s", gi.name[0], gi.count, maxidx,
			gi.count, names);
	}
	*cc = gi.cc[0];
	for (int i = 1; i < gi.count; i++)
		if (gi.cc[i] < *cc)
			*cc = gi.cc[i]; /* PTX for the oldest runs on all */
	return 0;
}

/* ------------------------------------------------------------ the unit */

/* A constant on a GPU: a __device__ array of its bytes. */
static int
add_global(CgGpu *G, const IrNode *n)
{
	const unsigned char *d = n->data;
	size_t nb = ir_nbytes(n);

	cu_printf(&G->gen.src, "__device__ __align__(64) unsigned char "
		  "tfg_g%d[%zu] = {", G->nglobal, nb ? nb : 1);
	for (size_t i = 0; i < nb; i++)
		cu_printf(&G->gen.src, "%s%u", i == 0 ? "\n\t"
			  : i % 24 ? "," : ",\n\t", d ? d[i] : 0);
	cu_puts(&G->gen.src, nb ? "\n};\n" : "0};\n");
	return G->nglobal++;
}

static int
gen_part(CgGpu *G, const IrPart *pt, GpuNode *gn)
{
	for (int i = 0; i < pt->n; i++) {
		const IrNode *n = pt->nodes[i];
		CuLaunch l[CU_MAX_LAUNCH];
		int nl;

		gn[i].global = -1;
		if (!on_gpu(n) || n->op == OP_copy)
			continue;
		if (n->op == OP_const) {
			gn[i].global = add_global(G, n);
			continue;
		}
		if ((nl = cu_gen_node(&G->gen, n, l, CU_MAX_LAUNCH)) < 0)
			return -1;
		gn[i].nl = nl;
		if (cu_gemm_of(n, G->gen.tf32, &gn[i].gm) && nl > 0) {
			gn[i].gemm = 1;
			if (n->fuse && (gn[i].nepi = cu_gen_epilogue(&G->gen, n,
							&gn[i].epi)) < 0)
				return -1;
		}
		gn[i].l = malloc(sizeof *l * (size_t)(nl ? nl : 1));
		if (!gn[i].l) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			return -1;
		}
		memcpy(gn[i].l, l, sizeof *l * (size_t)nl);
	}
	return 0;
}

static void
gpu_free(CgGpu *G, int nsig)
{
	if (!G)
		return;
	for (int s = 0; G->node && s < nsig; s++) {
		if (!G->node[s])
			continue;
		for (int i = 0; G->node[s][i].global != -2; i++)
			free(G->node[s][i].l);
		free(G->node[s]);
	}
	free(G->node);
	cu_gen_free(&G->gen);
	free(G);
}

/* The unit of the task's GPU nodes: *out (NULL when it has none).
 * *maxidx: the highest gpu:N among them. */
static int
gen_unit(const Program *p, int task, const CgOptions *o, CgGpu **out,
	 int *maxidx)
{
	CgGpu *G;
	int any = 0;

	*out = NULL;
	*maxidx = -1;
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *pt = task_part(p, s, task);
		for (int i = 0; pt && i < pt->n; i++)
			if (on_gpu(pt->nodes[i])) {
				any = 1;
				if (pt->nodes[i]->dev.index > *maxidx)
					*maxidx = pt->nodes[i]->dev.index;
			}
	}
	if (!any)
		return 0;
	if (!(G = calloc(1, sizeof *G)) ||
	    !(G->node = calloc((size_t)p->nsig, sizeof *G->node))) {
		free(G);
		fprintf(stderr, "tfgc: error: out of memory\n");
		return -1;
	}
	cu_gen_init(&G->gen, o && o->gpu_tf32);
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *pt = task_part(p, s, task);
		if (!pt)
			continue;
		/* one more entry, global -2, ends the array */
		G->node[s] = calloc((size_t)pt->n + 1, sizeof *G->node[s]);
		if (!G->node[s]) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			gpu_free(G, p->nsig);
			return -1;
		}
		G->node[s][pt->n].global = -2;
		if (gen_part(G, pt, G->node[s]) != 0) {
			gpu_free(G, p->nsig);
			return -1;
		}
	}
	*out = G;
	return 0;
}

/* ------------------------------------------------------ --emit=cuda */

/* A node's name for the listing: its label, or _<id>. */
static void
print_name(FILE *out, const IrNode *n)
{
	if (n->name)
		fputs(n->name, out);
	else
		fprintf(out, "_%d", n->id);
}

/* An argument and its bytes: out[16384], in1[4], scratch[4096]. */
static void
print_arg(FILE *out, const IrNode *n, int a)
{
	if (a == CU_ARG_OUT)
		fprintf(out, "out[%zu]", ir_nbytes(n));
	else if (a == CU_ARG_SCRATCH)
		fprintf(out, "scratch[%zu]", cu_scratch_bytes(n));
	else if (a >= 0 && a < n->nin)
		fprintf(out, "in%d[%zu]", a, ir_nbytes(n->in[a]));
	else
		fprintf(out, "in%d[?]", a);
}

int
cg_emit_cuda(FILE *out, const Program *p, int task, const CgOptions *o)
{
	CgGpu *G;
	int maxidx;

	if (task < 0 || task >= p->ntask)
		return -1;
	if (gen_unit(p, task, o, &G, &maxidx) != 0)
		return -1;
	fprintf(out, "// %s: ", p->tasks[task].name);
	if (!G) {
		fputs("no GPU nodes\n", out);
		return 0;
	}
	fputs("the GPU kernels (CUDA C, compiled by NVRTC)\n", out);
	fputs(G->gen.src.p ? G->gen.src.p : "", out);
	fputs("\n// launches, per signature, in part order\n", out);
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *pt = task_part(p, s, task);
		if (!pt || !G->node[s])
			continue;
		fprintf(out, "// sig %d\n", s);
		for (int i = 0; i < pt->n; i++) {
			const IrNode *n = pt->nodes[i];
			const GpuNode *g = &G->node[s][i];
			if (!on_gpu(n) && n->op != OP_copy)
				continue;
			fputs("//   ", out);
			print_name(out, n);
			if (n->op == OP_copy) {
				fprintf(out, ": copy %s -> %s, %zu bytes\n",
					on_gpu(n->in[0]) ? "gpu" : "host",
					on_gpu(n) ? "gpu" : "host",
					ir_nbytes(n));
				continue;
			}
			if (g->global >= 0) {
				fprintf(out, ": constant tfg_g%d\n", g->global);
				continue;
			}
			fprintf(out, " = %s on /gpu:%d%s\n", op_info[n->op].name,
				n->dev.index, g->nl ? "" : ": no launch");
			if (g->gemm) {
				fprintf(out, "//     cuBLAS %sgemm m=%" PRId64
					" n=%" PRId64 " k=%" PRId64 " batch=%"
					PRId64 "%s", g->gm.dtype == TFG_F32
					? "s" : "d", g->gm.m, g->gm.n, g->gm.k,
					g->gm.batch, g->gm.tf32 ? " tf32" : "");
				if (g->nepi)
					fprintf(out, ", then %s<<<(%u,1,1), "
						"(%u,1,1), 0>>>",
						G->gen.names[g->epi.kernel],
						g->epi.grid[0], g->epi.block[0]);
				fputs("; without cuBLAS:\n", out);
			}
			for (int k = 0; k < g->nl; k++) {
				const CuLaunch *l = &g->l[k];
				fprintf(out, "//     %s<<<(%u,%u,%u), "
					"(%u,%u,%u), %u>>>(",
					G->gen.names[l->kernel],
					l->grid[0], l->grid[1], l->grid[2],
					l->block[0], l->block[1], l->block[2],
					l->shmem);
				for (int a = 0; a < l->nargs; a++) {
					if (a)
						fputs(", ", out);
					print_arg(out, n, l->arg[a]);
				}
				fputs(")\n", out);
			}
		}
	}
	gpu_free(G, p->nsig);
	return 0;
}

int
cg_emit_ptx(FILE *out, const Program *p, int task, const CgOptions *o)
{
	CgGpu *G;
	int maxidx, cached = 0, rc;
	char *ptx = NULL, err[4096];
	double ms = 0;

	if (task < 0 || task >= p->ntask)
		return -1;
	if (gen_unit(p, task, o, &G, &maxidx) != 0)
		return -1;
	if (!G) {
		fprintf(out, "// %s: no GPU nodes\n", p->tasks[task].name);
		return 0;
	}
	rc = cu_compile(G->gen.src.p, o && o->gpu_cc ? o->gpu_cc : 80, &ptx,
			&cached, &ms, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "tfgc: error: %s: NVRTC: %s\n",
			p->tasks[task].name, err);
	else
		fputs(ptx, out);
	free(ptx);
	gpu_free(G, p->nsig);
	return rc;
}

int
cg_nvrtc_version(char *err, size_t errlen)
{
	return cu_nvrtc_version(err, errlen);
}

/* ------------------------------------------------- the module's side */

static LLVMValueRef
const_str(CgCtx *C, const char *s, const char *name)
{
	LLVMValueRef v = LLVMConstStringInContext(C->c, s, (unsigned)strlen(s),
						  0);
	LLVMValueRef g = LLVMAddGlobal(C->m, LLVMTypeOf(v), name);
	LLVMSetInitializer(g, v);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	return g;
}

static LLVMValueRef
name_table(CgCtx *C, const char *fmt, int n, const char *name)
{
	LLVMValueRef *v = calloc((size_t)n + 1, sizeof *v), t, g;
	char buf[32];

	if (!v) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		snprintf(buf, sizeof buf, fmt, i);
		v[i] = const_str(C, buf, "");
	}
	t = LLVMConstArray2(C->ptr, v, (uint64_t)n);
	g = LLVMAddGlobal(C->m, LLVMTypeOf(t), name);
	LLVMSetInitializer(g, t);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	free(v);
	return g;
}

static uint64_t
fnv(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static LLVMValueRef
declare(CgCtx *C, const char *name, LLVMTypeRef *ty, LLVMTypeRef *params,
	unsigned n)
{
	*ty = LLVMFunctionType(C->i32, params, n, 0);
	return LLVMAddFunction(C->m, name, *ty);
}

static int
gpu_prepare(CgCtx *C, const CgOptions *o)
{
	const Program *p = C->p;
	CgGpu *G;
	int maxidx = -1, cc = o && o->gpu_cc ? o->gpu_cc : 80, cached = 0;
	char *ptx = NULL, err[8192];
	double ms = 0;

	C->gpu = NULL;
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *pt = task_part(p, s, C->task);
		for (int i = 0; pt && i < pt->n; i++)
			if (on_gpu(pt->nodes[i]) &&
			    pt->nodes[i]->dev.index > maxidx)
				maxidx = pt->nodes[i]->dev.index;
	}
	if (maxidx < 0)
		return 0;
	if (o && o->gpu_probe && check_gpus(p, C->task, maxidx, o, &cc) != 0)
		return -1;
	if (gen_unit(p, C->task, o, &G, &maxidx) != 0)
		return -1;
	if (!G)
		return 0; /* soft placement moved them all */
	G->cc = cc;
	if (cu_compile(G->gen.src.p, cc, &ptx, &cached, &ms, err,
		       sizeof err) != 0) {
		fprintf(stderr, "tfgc: error: %s: compiling its GPU kernels "
			"for sm_%d: %s\n", p->tasks[C->task].name, cc, err);
		gpu_free(G, p->nsig);
		return -1;
	}
	if (getenv("TFG_JIT_TIME"))
		fprintf(stderr, "tfgc: %s: NVRTC %.2f ms%s (%d kernels, "
			"sm_%d)\n", p->tasks[C->task].name, ms,
			cached ? " (cached)" : "", G->gen.nkern, cc);
	/* struct TfgGpuModule { u64 hash; ptr ptx; u32 nkernel; ptr kernel;
	   u32 nglobal; ptr global; } */
	LLVMTypeRef mt_el[6] = {C->i64, C->ptr, C->i32, C->ptr, C->i32, C->ptr};
	LLVMTypeRef mt = LLVMStructTypeInContext(C->c, mt_el, 6, 0);
	LLVMValueRef mv[6] = {
		LLVMConstInt(C->i64, fnv(ptx), 0),
		const_str(C, ptx, "tfg_ptx"),
		LLVMConstInt(C->i32, (unsigned long long)G->gen.nkern, 0),
		name_table(C, "tfg_c%d", G->gen.nkern, "tfg_kernels"),
		LLVMConstInt(C->i32, (unsigned long long)G->nglobal, 0),
		name_table(C, "tfg_g%d", G->nglobal, "tfg_globals"),
	};
	free(ptx);
	G->mod = LLVMAddGlobal(C->m, mt, "tfg_gpu_module");
	LLVMSetInitializer(G->mod, LLVMConstNamedStruct(mt, mv, 6));
	LLVMSetGlobalConstant(G->mod, 1);
	LLVMSetLinkage(G->mod, LLVMPrivateLinkage);
	LLVMTypeRef pa[4] = {C->ptr, C->i32, C->i64, C->ptr};
	G->arena_fn = declare(C, "tfg_rt_gpu_arena", &G->arena_ty, pa, 4);
	LLVMTypeRef pl[6] = {C->ptr, C->ptr, C->i32, C->i32, C->ptr, C->ptr};
	G->launch_fn = declare(C, "tfg_rt_gpu_launch", &G->launch_ty, pl, 6);
	LLVMTypeRef pg[5] = {C->ptr, C->ptr, C->i32, C->i32, C->ptr};
	G->global_fn = declare(C, "tfg_rt_gpu_global", &G->global_ty, pg, 5);
	LLVMTypeRef pc[6] = {C->ptr, C->i32, C->ptr, C->i32, C->ptr, C->i64};
	G->copy_fn = declare(C, "tfg_rt_gpu_copy", &G->copy_ty, pc, 6);
	LLVMTypeRef pm[6] = {C->ptr, C->i32, C->ptr, C->ptr, C->ptr, C->ptr};
	G->gemm_fn = declare(C, "tfg_rt_gpu_gemm", &G->gemm_ty, pm, 6);
	C->gpu = G;
	return 0;
}

static void
gpu_done(CgCtx *C)
{
	gpu_free(C->gpu, C->p->nsig);
	C->gpu = NULL;
}

/* The device arena of gpu:sp-1 for the part being built: a call at the
 * part's entry; returns its base. */
static LLVMValueRef
gpu_arena(CgCtx *C, int sp, size_t size)
{
	CgGpu *G = C->gpu;
	LLVMValueRef at = cg_entry_alloca(C, C->ptr, 8, "dev_arena");
	LLVMValueRef args[4] = {
		C->ctx_arg, LLVMConstInt(C->i32, (unsigned)(sp - 1), 0),
		cg_i64c(C, (int64_t)size), at};

	if (!G) {
		C->err = 1;
		fprintf(stderr, "tfgc: error: codegen: a device arena without "
			"GPU code\n");
		return LLVMConstNull(C->ptr);
	}
	cg_check_rc(C, LLVMBuildCall2(C->b, G->arena_ty, G->arena_fn, args, 4,
				      ""));
	return LLVMBuildLoad2(C->b, C->ptr, at, "dev_base");
}

/* The device address of a constant on a GPU, into C->val[cur]. */
static int
emit_global(CgCtx *C, IrNode *n, int global)
{
	CgGpu *G = C->gpu;
	LLVMValueRef at = cg_entry_alloca(C, C->ptr, 8, "dev_const");
	LLVMValueRef args[5] = {
		C->ctx_arg, G->mod,
		LLVMConstInt(C->i32, (unsigned)n->dev.index, 0),
		LLVMConstInt(C->i32, (unsigned)global, 0), at};

	cg_check_rc(C, LLVMBuildCall2(C->b, G->global_ty, G->global_fn, args,
				      5, ""));
	C->val[C->cur] = LLVMBuildLoad2(C->b, C->ptr, at, "");
	return 0;
}

static LLVMValueRef
arg_ptr(CgCtx *C, IrNode *n, int a)
{
	if (a == CU_ARG_OUT)
		return cg_buf(C, n);
	if (a == CU_ARG_SCRATCH) {
		size_t nb = ir_nbytes(n);
		LLVMValueRef o = cg_i64c(C, (int64_t)((nb + CG_SLOT_ALIGN - 1) &
					  ~(size_t)(CG_SLOT_ALIGN - 1)));
		return LLVMBuildInBoundsGEP2(C->b, C->i8, cg_buf(C, n), &o, 1,
					     "");
	}
	if (a < 0 || a >= n->nin) {
		cg_fail(C, n, "a launch names an input the node lacks");
		return LLVMConstNull(C->ptr);
	}
	return cg_buf(C, n->in[a]);
}

/* The launches l[0..nl) of node n (on a GPU). */
static void
emit_launches(CgCtx *C, IrNode *n, const CuLaunch *l0, int nl)
{
	CgGpu *G = C->gpu;
	LLVMValueRef vals = cg_entry_alloca(C, LLVMArrayType2(C->ptr,
					    CU_MAX_ARGS), 8, "kargs");
	LLVMValueRef params = cg_entry_alloca(C, LLVMArrayType2(C->ptr,
					      CU_MAX_ARGS), 8, "kparams");
	for (int k = 0; k < nl && !C->err; k++) {
		const CuLaunch *l = &l0[k];
		LLVMValueRef dv[7], dims, args[6];
		for (int a = 0; a < l->nargs; a++) {
			LLVMValueRef i = cg_i64c(C, a);
			LLVMValueRef slot = LLVMBuildInBoundsGEP2(C->b, C->ptr,
							vals, &i, 1, "");
			LLVMBuildStore(C->b, arg_ptr(C, n, l->arg[a]), slot);
			LLVMBuildStore(C->b, slot, LLVMBuildInBoundsGEP2(C->b,
						C->ptr, params, &i, 1, ""));
		}
		for (int d = 0; d < 3; d++) {
			dv[d] = LLVMConstInt(C->i32, l->grid[d], 0);
			dv[3 + d] = LLVMConstInt(C->i32, l->block[d], 0);
		}
		dv[6] = LLVMConstInt(C->i32, l->shmem, 0);
		dims = LLVMAddGlobal(C->m, LLVMArrayType2(C->i32, 7), "dims");
		LLVMSetInitializer(dims, LLVMConstArray2(C->i32, dv, 7));
		LLVMSetGlobalConstant(dims, 1);
		LLVMSetLinkage(dims, LLVMPrivateLinkage);
		args[0] = C->ctx_arg;
		args[1] = G->mod;
		args[2] = LLVMConstInt(C->i32, (unsigned)n->dev.index, 0);
		args[3] = LLVMConstInt(C->i32, (unsigned)l->kernel, 0);
		args[4] = dims;
		args[5] = params;
		cg_check_rc(C, LLVMBuildCall2(C->b, G->launch_ty, G->launch_fn,
					      args, 6, ""));
	}
}

/* A matmul cuBLAS may compute: tfg_rt_gpu_gemm, then the epilogue; or,
 * where it answers -1 (no cuBLAS), the node's own kernels. */
static void
emit_gemm(CgCtx *C, IrNode *n, const GpuNode *g)
{
	CgGpu *G = C->gpu;
	LLVMValueRef f[9], gm, args[6], rc;
	LLVMTypeRef el[9] = {C->i32, C->i32, C->i64, C->i64, C->i64, C->i64,
			     C->i64, C->i64, C->i64};
	LLVMTypeRef st = LLVMStructTypeInContext(C->c, el, 9, 0);
	const int64_t v[7] = {g->gm.m, g->gm.n, g->gm.k, g->gm.batch,
			      g->gm.stride_a, g->gm.stride_b, g->gm.stride_c};
	LLVMBasicBlockRef fb, blas, done;

	f[0] = LLVMConstInt(C->i32, g->gm.dtype, 0);
	f[1] = LLVMConstInt(C->i32, g->gm.tf32, 0);
	for (int i = 0; i < 7; i++)
		f[2 + i] = cg_i64c(C, v[i]);
	gm = LLVMAddGlobal(C->m, st, "gemm");
	LLVMSetInitializer(gm, LLVMConstNamedStruct(st, f, 9));
	LLVMSetGlobalConstant(gm, 1);
	LLVMSetLinkage(gm, LLVMPrivateLinkage);
	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(C->i32, (unsigned)n->dev.index, 0);
	args[2] = gm;
	args[3] = cg_buf(C, n);
	args[4] = cg_buf(C, n->in[0]);
	args[5] = cg_buf(C, n->in[1]);
	rc = LLVMBuildCall2(C->b, G->gemm_ty, G->gemm_fn, args, 6, "");
	fb = LLVMAppendBasicBlockInContext(C->c, C->fn, "own_kernel");
	blas = LLVMAppendBasicBlockInContext(C->c, C->fn, "cublas");
	done = LLVMAppendBasicBlockInContext(C->c, C->fn, "gemm_done");
	LLVMBuildCondBr(C->b, LLVMBuildICmp(C->b, LLVMIntEQ, rc,
					    LLVMConstAllOnes(C->i32), ""),
			fb, blas);
	LLVMPositionBuilderAtEnd(C->b, fb);
	emit_launches(C, n, g->l, g->nl);
	LLVMBuildBr(C->b, done);
	LLVMPositionBuilderAtEnd(C->b, blas);
	cg_check_rc(C, rc);
	emit_launches(C, n, &g->epi, g->nepi);
	LLVMBuildBr(C->b, done);
	LLVMPositionBuilderAtEnd(C->b, done);
}

static int
gpu_node(CgCtx *C, IrNode *n)
{
	CgGpu *G = C->gpu;
	int s = C->sig;
	const GpuNode *g;

	if (!G || !G->node[s])
		return cg_fail(C, n, "GPU node without GPU code");
	g = &G->node[s][C->cur];
	if (g->global >= 0)
		return emit_global(C, n, g->global);
	if (n->op == OP_reshape && C->val[C->cur] == NULL) {
		C->val[C->cur] = cg_buf(C, n->in[0]); /* a view */
		return 0;
	}
	if (g->gemm) {
		emit_gemm(C, n, g);
		return C->err ? -1 : 0;
	}
	emit_launches(C, n, g->l, g->nl);
	return C->err ? -1 : 0;
}

/* OP_copy: between the host and a GPU, two GPUs, or (soft placement)
 * the host and itself. */
static int
gpu_copy(CgCtx *C, IrNode *n)
{
	CgGpu *G = C->gpu;
	const IrNode *in = n->in[0];
	int to = dev_slot(n->dev), from = dev_slot(in->dev);

	if (to == 0 && from == 0) {
		LLVMBuildMemCpy(C->b, cg_buf(C, n), CG_SLOT_ALIGN,
				cg_buf(C, in), 1,
				cg_i64c(C, (int64_t)ir_nbytes(n)));
		return 0;
	}
	if (!G)
		return cg_fail(C, n, "a copy to a GPU without GPU code");
	LLVMValueRef args[6] = {
		C->ctx_arg, LLVMConstInt(C->i32, (unsigned)to, 0), cg_buf(C, n),
		LLVMConstInt(C->i32, (unsigned)from, 0), cg_buf(C, n->in[0]),
		cg_i64c(C, (int64_t)ir_nbytes(n))};
	cg_check_rc(C, LLVMBuildCall2(C->b, G->copy_ty, G->copy_fn, args, 6,
				      ""));
	return 0;
}

/* A node on a GPU, or a copy between memories. */
static int
gpu_emit(CgCtx *C, IrNode *n)
{
	return n->op == OP_copy ? gpu_copy(C, n) : gpu_node(C, n);
}

const CgBackend cg_cuda_backend = {"cuda", gpu_prepare, gpu_done, gpu_arena,
				   gpu_emit};
