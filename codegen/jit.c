/*
 * codegen/jit.c: from a task's module (codegen/cpu.c) to callable code.
 *
 *   target machine  the host CPU and its features, or CgOptions.cpu with
 *                   that CPU's own features (so --cpu pins the output)
 *   passes          LLVMRunPasses("default<On>") with that TargetMachine:
 *                   without it the cost model knows no vector width and
 *                   loops stay scalar (shared/TOOLCHAIN.md)
 *   JIT             ORC LLJIT built on the same TargetMachine; the module
 *                   goes in through a ThreadSafeContext.  tfg_rt_recv and
 *                   tfg_rt_send are absolute symbols (or the test fakes in
 *                   CgOptions), and so are tfg_rt_parallel (large loop
 *                   nests, codegen/cpu_nest.c) and tfg_rt_gemm (large
 *                   matmuls, codegen/cpu_shape.c); libc's fmod,
 *                   fmodf, memcpy, memset and memmove (which LLVM may
 *                   call for frem or copy loops)
 *                   and the libm functions of process_filter's list
 *                   come from the process, and nothing else does.
 *
 * A CgJit owns the LLJIT, which owns the code: parts[].fn stay valid until
 * cg_jit_free.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/cg_int.h"

struct CgJit {
	LLVMOrcLLJITRef jit;
	char prefix; /* global symbol prefix, for the process filter */
};

/* cg_emit_llvm's triple: fixed, so golden files do not follow the host. */
#define CG_EMIT_TRIPLE "x86_64-unknown-linux-gnu"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void
init_llvm(void)
{
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
}

void
cg_llvm_init(void)
{
	pthread_once(&init_once, init_llvm);
}

/* Prints and consumes err; returns -1. */
static int
llvm_fail(const char *what, LLVMErrorRef err)
{
	char *msg = LLVMGetErrorMessage(err);
	fprintf(stderr, "tfgc: error: codegen: %s: %s\n", what, msg);
	LLVMDisposeErrorMessage(msg);
	return -1;
}

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
opt_level(const CgOptions *o)
{
	int l = o ? o->opt_level : 2;
	return l < 0 ? 0 : l > 3 ? 3 : l;
}

/* A target machine for triple and the options' CPU; *cpu and *features
 * (LLVM strings, LLVMDisposeMessage) get what it was made with.  pic:
 * position-independent code for an object file (tfgc compile). */
static LLVMTargetMachineRef
make_tm(const char *triple, const CgOptions *o, int pic, char **cpu,
	char **features)
{
	static const LLVMCodeGenOptLevel lv[4] = {
		LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
		LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive};
	LLVMTargetRef t;
	char *err = NULL;
	if (LLVMGetTargetFromTriple(triple, &t, &err)) {
		fprintf(stderr, "tfgc: error: codegen: target '%s': %s\n",
			triple, err);
		LLVMDisposeMessage(err);
		return NULL;
	}
	int host = !o || !o->cpu;
	*cpu = host ? LLVMGetHostCPUName() : LLVMCreateMessage(o->cpu);
	*features = host ? LLVMGetHostCPUFeatures() : LLVMCreateMessage("");
	return LLVMCreateTargetMachine(t, triple, *cpu, *features,
				       lv[opt_level(o)],
				       pic ? LLVMRelocPIC : LLVMRelocDefault,
				       pic ? LLVMCodeModelDefault
					   : LLVMCodeModelJITDefault);
}

static int
run_passes(LLVMModuleRef m, LLVMTargetMachineRef tm, int level)
{
	char pipeline[32];
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	snprintf(pipeline, sizeof pipeline, "default<O%d>", level);
	LLVMPassBuilderOptionsSetLoopVectorization(po, level >= 2);
	LLVMPassBuilderOptionsSetSLPVectorization(po, level >= 2);
	LLVMPassBuilderOptionsSetLoopInterleaving(po, level >= 2);
	LLVMPassBuilderOptionsSetLoopUnrolling(po, level >= 1);
	LLVMErrorRef err = LLVMRunPasses(m, pipeline, tm, po);
	LLVMDisposePassBuilderOptions(po);
	return err ? llvm_fail("optimising", err) : 0;
}

const char *
cg_llvm_version(void)
{
	static char v[32];
	unsigned major, minor, patch;

	LLVMGetVersion(&major, &minor, &patch);
	snprintf(v, sizeof v, "%u.%u.%u", major, minor, patch);
	return v;
}

int
cg_compile_module(LLVMContextRef c, const Program *p, int task,
		  const CgOptions *o, const char *triple, int pic,
		  LLVMModuleRef *mp, LLVMTargetMachineRef *tmp, size_t *sizes,
		  int *has)
{
	char *cpu = NULL, *features = NULL, *msg = NULL, name[32];
	LLVMTargetMachineRef tm = make_tm(triple, o, pic, &cpu, &features);
	LLVMModuleRef m;
	int rc = -1;
	if (!tm)
		return -1;
	snprintf(name, sizeof name, "task%d", task);
	m = LLVMModuleCreateWithNameInContext(name, c);
	LLVMSetTarget(m, triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(m, td);
	LLVMDisposeTargetData(td);
	if (cg_build_module(c, m, p, task, cpu, features, o, sizes, has))
		goto out;
	if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
		fprintf(stderr, "tfgc: error: codegen: invalid module: %s\n",
			msg);
		goto out;
	}
	if (run_passes(m, tm, opt_level(o)))
		goto out;
	rc = 0;
out:
	LLVMDisposeMessage(msg);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	if (rc) {
		LLVMDisposeModule(m);
		LLVMDisposeTargetMachine(tm);
		return rc;
	}
	*mp = m;
	*tmp = tm;
	return 0;
}

int
cg_emit_llvm(FILE *out, const Program *p, int task, const CgOptions *o)
{
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	size_t *sizes = calloc((size_t)p->nsig + 1, sizeof *sizes);
	int *has = calloc((size_t)p->nsig + 1, sizeof *has);
	pthread_once(&init_once, init_llvm);
	c = LLVMContextCreate();
	int rc = cg_compile_module(c, p, task, o, CG_EMIT_TRIPLE, 0, &m, &tm,
				   sizes, has);
	if (rc == 0) {
		char *s = LLVMPrintModuleToString(m);
		fputs(s, out);
		LLVMDisposeMessage(s);
		LLVMDisposeModule(m);
		LLVMDisposeTargetMachine(tm);
	}
	LLVMContextDispose(c);
	free(sizes);
	free(has);
	return rc;
}

/* The process symbols generated code may need: libc's helpers. */
static int
process_filter(void *ctx, LLVMOrcSymbolStringPoolEntryRef sym)
{
	static const char *const ok[] = {
		"fmod", "fmodf", "memcpy", "memset", "memmove",
		/* libm, for the elementwise functions (codegen/cpu.c), and
		   what LLVM's library-call simplifier may turn them into */
		"exp", "expf", "log", "logf", "tanh", "tanhf", "pow", "powf",
		"sqrt", "sqrtf", "exp2", "exp2f", "exp10", "exp10f", "ldexp",
		"ldexpf", "fabs", "fabsf",
		/* random_normal (codegen/cpu_make.c): Box-Muller */
		"cos", "cosf", "sin", "sinf"};
	const char *s = LLVMOrcSymbolStringPoolEntryStr(sym);
	char prefix = *(const char *)ctx;
	if (prefix && *s == prefix)
		s++;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(s, ok[i]) == 0)
			return 1;
	return 0;
}

static int
define_symbols(CgJit *j, const CgOptions *o)
{
	LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
	LLVMJITSymbolFlags fl = {LLVMJITSymbolGenericFlagsExported |
				 LLVMJITSymbolGenericFlagsCallable, 0};
	uintptr_t recv = (uintptr_t)(o && o->rt_recv ? o->rt_recv
							 : tfg_rt_recv);
	uintptr_t send = (uintptr_t)(o && o->rt_send ? o->rt_send
							 : tfg_rt_send);
	LLVMOrcCSymbolMapPair syms[] = {
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_recv"),
		 {recv, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_send"),
		 {send, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_recv_ref"),
		 {(uintptr_t)(o && o->rt_recv_ref ? o->rt_recv_ref
						 : tfg_rt_recv_ref), fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gemm"),
		 {(uintptr_t)tfg_rt_gemm, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_parallel"),
		 {(uintptr_t)tfg_rt_parallel, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_var"),
		 {(uintptr_t)(o && o->rt_var ? o->rt_var : tfg_rt_var), fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_check"),
		 {(uintptr_t)tfg_rt_check, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_apply"),
		 {(uintptr_t)tfg_rt_apply, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_mark"),
		 {(uintptr_t)tfg_rt_mark, fl}},
		/* GPU parts (runtime/gpu.c) */
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_arena"),
		 {(uintptr_t)tfg_rt_gpu_arena, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_launch"),
		 {(uintptr_t)tfg_rt_gpu_launch, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_global"),
		 {(uintptr_t)tfg_rt_gpu_global, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_copy"),
		 {(uintptr_t)tfg_rt_gpu_copy, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_gemm"),
		 {(uintptr_t)tfg_rt_gpu_gemm, fl}},
	};
	LLVMErrorRef err = LLVMOrcJITDylibDefine(
		jd, LLVMOrcAbsoluteSymbols(syms, sizeof syms / sizeof syms[0]));
	if (err)
		return llvm_fail("defining the runtime symbols", err);
	LLVMOrcDefinitionGeneratorRef gen;
	j->prefix = LLVMOrcLLJITGetGlobalPrefix(j->jit);
	err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
	    &gen, j->prefix, process_filter, &j->prefix);
	if (err)
		return llvm_fail("process symbols", err);
	LLVMOrcJITDylibAddGenerator(jd, gen);
	return 0;
}

/* A LLJIT that generates code with tm (consumed). */
static int
make_jit(CgJit *j, LLVMTargetMachineRef tm)
{
	LLVMOrcJITTargetMachineBuilderRef jtmb =
	    LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm);
	LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, jtmb);
	LLVMErrorRef err = LLVMOrcCreateLLJIT(&j->jit, jb);
	if (err) {
		j->jit = NULL;
		return llvm_fail("creating the JIT", err);
	}
	return 0;
}

static int
lookup_parts(CgJit *j, const Program *p, const size_t *sizes,
	     const int *has, RtPart *parts)
{
	for (int s = 0; s < p->nsig; s++) {
		char name[32];
		LLVMOrcExecutorAddress a;
		if (!has[s])
			continue;
		snprintf(name, sizeof name, "tfg_part_%d", s);
		LLVMErrorRef err = LLVMOrcLLJITLookup(j->jit, &a, name);
		if (err)
			return llvm_fail(name, err);
		parts[s].fn = (RtPartFn)(uintptr_t)a;
		parts[s].arena_size = sizes[s];
	}
	return 0;
}

int
cg_jit(CgJit **out, const Program *p, int task, const CgOptions *o,
       RtPart *parts, double *ms)
{
	double t0 = now_ms();
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	size_t *sizes = calloc((size_t)p->nsig + 1, sizeof *sizes);
	int *has = calloc((size_t)p->nsig + 1, sizeof *has);
	CgJit *j = calloc(1, sizeof *j);
	int rc = -1;
	*out = NULL;
	memset(parts, 0, (size_t)p->nsig * sizeof *parts);
	pthread_once(&init_once, init_llvm);
	char *triple = LLVMGetDefaultTargetTriple();
	LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
	LLVMContextRef c = LLVMOrcThreadSafeContextGetContext(tsc);
	if (cg_compile_module(c, p, task, o, triple, 0, &m, &tm, sizes, has))
		goto out;
	if (make_jit(j, tm) || define_symbols(j, o)) {
		LLVMDisposeModule(m);
		goto out;
	}
	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);
	LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModule(
	    j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), tsm);
	if (err) {
		llvm_fail("adding the module", err);
		goto out;
	}
	rc = lookup_parts(j, p, sizes, has, parts);
out:
	LLVMOrcDisposeThreadSafeContext(tsc);
	LLVMDisposeMessage(triple);
	free(sizes);
	free(has);
	if (rc) {
		memset(parts, 0, (size_t)p->nsig * sizeof *parts);
		cg_jit_free(j);
		return rc;
	}
	*out = j;
	if (ms)
		*ms = now_ms() - t0;
	return 0;
}

void
cg_jit_free(CgJit *j)
{
	if (!j)
		return;
	if (j->jit) {
		LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->jit);
		if (err)
			llvm_fail("disposing the JIT", err);
	}
	free(j);
}
