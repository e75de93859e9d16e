/*
 * compiler/jit.c: the compile callbacks `tfgc server` hands the runtime
 * (runtime/tfg.h TfgCompileFn, TfgSpecialiseFn, TfgReleaseFn): its own
 * parts JIT-compiled, or loaded from a --part object with no LLVM; and
 * the specialisations of a program with `?` dims (spec/design.md
 * "Unknown dims"), each compiled on demand and kept until the runtime
 * evicts it.  One process serves one program, so the state is this
 * file's; jit_free_all frees it at exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "compiler/compiler_int.h"

int jit_trace;
int jit_soft, jit_tf32; /* --soft-placement, --gpu-tf32 */
int jit_check;          /* --check-numerics */
static CgJit *the_jit;        /* the task's own parts */
static TfgPartLib *the_part;  /* server --part */

int
jit_compile(void *cookie, const TfgPlan *plan, int task, RtPart *parts)
{
	Program *p = cookie;
	CgOptions o = {0};
	double ms = 0;
	int hit = 0;

	(void)plan;
	o.opt_level = 2;
	o.trace = jit_trace;
	o.gpu_probe = 1;
	o.soft_placement = jit_soft;
	o.gpu_tf32 = jit_tf32;
	o.check_numerics = jit_check;
	o.cache_hit = &hit;
	if (cg_jit(&the_jit, p, task, &o, parts, &ms) != 0)
		return 1;
	if (getenv("TFG_JIT_TIME"))
		fprintf(stderr, "tfgc: %s: JIT %.2f ms%s\n",
			p->tasks[task].name, ms, hit ? " (cached)" : "");
	return 0;
}

/* The specialisations this process compiled (spec/design.md "Unknown
 * dims"): each a whole Program with its options and JIT, kept while the
 * runtime runs their code and reads their plans: until it evicts one
 * (jit_release) or the process exits (specs_free). */
typedef struct Spec {
	CompileOptions co;
	Arena *ar;       /* the --shape strings */
	Program p;
	CgJit *jit;
	int task;        /* the task it was compiled for */
} Spec;
static Spec **the_specs;
static int the_nspec;

/* Frees one: its JIT (the code of its parts), its program and plan. */
static void
spec_dispose(Spec *sp)
{
	cg_jit_free(sp->jit);
	arena_free(sp->p.arena);
	arena_free(sp->ar);
	free(sp);
}

static void
specs_free(void)
{
	for (int i = 0; i < the_nspec; i++)
		spec_dispose(the_specs[i]);
	free(the_specs);
	the_specs = NULL;
	the_nspec = 0;
}

/* TfgReleaseFn: the runtime evicted the specialisation whose plan this
 * is, and runs its code no more. */
void
jit_release(void *cookie, const TfgPlan *plan)
{
	(void)cookie;
	for (int i = 0; i < the_nspec; i++) {
		Spec *sp = the_specs[i];

		if (sp->p.plan != plan)
			continue;
		the_specs[i] = the_specs[--the_nspec];
		if (getenv("TFG_JIT_TIME"))
			fprintf(stderr, "tfgc: %s: specialisation released "
				"(%d kept)\n", sp->p.tasks[sp->task].name,
				the_nspec);
		spec_dispose(sp);
		return;
	}
}

/* "x=100,784" for a feed shape. */
static const char *
shape_opt_str(Arena *ar, const char *name, const TfgShape *s)
{
	char buf[8 * 24];
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->rank; i++)
		k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld",
				      i ? "," : "", (long long)s->dims[i]);
	return arena_printf(ar, "%s=%s", name, buf);
}

/* TfgSpecialiseFn: the program compiled again with the dims of sig's feeds
 * as --shape, pruned to sig, and JIT-compiled for task.  Diagnostics go
 * into e->msg, whole (source line and caret too). */
int
jit_specialise(void *cookie, const TfgPlan *plan, int sig,
	       const TfgShape *feeds, int task, const TfgPlan **out,
	       RtPart *parts, TfgError *e)
{
	Program *base = cookie;
	const RtSig *gs = &plan->sigs[sig];
	Spec *sp = calloc(1, sizeof *sp), **v;
	const char **shape;
	char *text = NULL;
	size_t ntext = 0;
	FILE *mem;
	CgOptions o = {0};
	Diag d;
	double ms = 0;
	int hit = 0;
	int rc, n = 0;

	v = realloc(the_specs, sizeof *v * ((size_t)the_nspec + 1));
	if (v)
		the_specs = v;
	if (!sp || !v || !(sp->ar = arena_new())) {
		free(sp);
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	}
	the_specs[the_nspec++] = sp;
	sp->task = task;
	sp->co = *base->opt;
	shape = arena_alloc(sp->ar, sizeof *shape *
			    (size_t)(sp->co.nshape + gs->nfeed + 1));
	for (int i = 0; i < sp->co.nshape; i++)
		shape[n++] = sp->co.shape[i];
	for (int i = 0; i < gs->nfeed; i++)
		if (!shape_known(&gs->feeds[i].shape))
			shape[n++] = shape_opt_str(sp->ar, gs->feeds[i].name,
						   &feeds[i]);
	sp->co.shape = shape;
	sp->co.nshape = n;
	sp->co.spec_sig = sig + 1;
	sp->co.generic_ok = 0;
	sp->co.until = "plan";
	sp->co.source = base->src;
	mem = open_memstream(&text, &ntext);
	diag_init(&d, mem ? mem : stderr);
	rc = compile_file(&sp->p, base->src->path, &sp->co, &d);
	if (mem)
		fclose(mem);
	if (rc != 0) {
		while (ntext > 0 && text[ntext - 1] == '\n')
			text[--ntext] = '\0';
		tfg_error(e, TFG_EINVAL, "\n%s", text ? text : "");
		free(text);
		the_nspec--; /* the last one: nothing of it is in use */
		spec_dispose(sp);
		return 1;
	}
	free(text);
	o.opt_level = 2;
	o.trace = jit_trace;
	o.gpu_probe = 1;
	o.soft_placement = jit_soft;
	o.gpu_tf32 = jit_tf32;
	o.check_numerics = jit_check;
	o.cache_hit = &hit;
	if (cg_jit(&sp->jit, &sp->p, task, &o, parts, &ms) != 0) {
		the_nspec--;
		spec_dispose(sp);
		return tfg_error(e, TFG_EINVAL, "code generation failed");
	}
	if (getenv("TFG_JIT_TIME"))
		fprintf(stderr, "tfgc: %s: JIT %.2f ms (specialisation%s)\n",
			sp->p.tasks[task].name, ms, hit ? ", cached" : "");
	*out = sp->p.plan;
	return 0;
}

/* server --part: the parts come from a shared object, no LLVM, loaded
 * and checked by part_preload before the server listens (a part of
 * another program or task is refused without taking the task's port);
 * part_load, the server's TfgCompileFn, hands them over. */
static RtPart *pre_parts;

int
part_preload(const char *path, const TfgPlan *plan, int task)
{
	TfgError e;

	if ((pre_parts = calloc((size_t)plan->nsig + 1, sizeof *pre_parts)) ==
	    NULL) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		return 1;
	}
	if (tfg_part_load(&the_part, path, plan, task, pre_parts, &e) !=
	    TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", e.msg);
		free(pre_parts);
		pre_parts = NULL;
		return 1;
	}
	return 0;
}

int
part_load(void *cookie, const TfgPlan *plan, int task, RtPart *parts)
{
	(void)cookie;
	(void)task;
	if (pre_parts == NULL)
		return 1;
	memcpy(parts, pre_parts, (size_t)plan->nsig * sizeof *parts);
	return 0;
}

void
jit_free_all(void)
{
	specs_free();
	cg_jit_free(the_jit);
	the_jit = NULL;
	tfg_part_close(the_part);
	the_part = NULL;
	free(pre_parts);
	pre_parts = NULL;
}
