/*
 * compiler/cmd_build.c: tfgc emit, which prints a stage of the
 * compilation (tokens, the AST, the graph after a pass, LLVM IR, CUDA
 * C, PTX, the memory plan), and tfgc compile, which writes a task's
 * parts as an object and a header or a shared object for tfgc server
 * --part (spec §10.3 "Ahead-of-time compilation").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "compiler/driver.h"

int
task_matches(const char *spec, const CTask *t)
{
	char buf[256];

	snprintf(buf, sizeof buf, "%s:%d", t->job, t->index);
	return strcmp(spec, buf) == 0 || strcmp(spec, t->name) == 0;
}

int
cmd_emit(Args *a, Program *p, CompileOptions *co, Diag *d)
{
	int u;

	if (!a->emit)
		return bad_usage(a, "emit needs --emit=MODE");
	if (strcmp(a->emit, "tokens") == 0) {
		Arena *ar = arena_new();
		int e = 0;
		SrcFile *f = src_read(ar, a->file, &e);
		int rc;
		if (!f) {
			fprintf(stderr, "tfgc: error: cannot read '%s': %s\n",
				a->file, strerror(e));
			arena_free(ar);
			return 1;
		}
		rc = lang_dump_tokens(stdout, f, d) ? 1 : 0;
		arena_free(ar);
		return rc;
	}
	if ((u = pass_of_emit(a->emit)) < 0)
		return bad_usage(a, "unknown emit mode '%s' (expected tokens, "
				 "ast, grad, folded, cse, dce, placed, dot, "
				 "partition, fused, llvm, memory, cuda or ptx)",
				 a->emit);
	co->until = pass_name(u);
	if (compile_file(p, a->file, co, d))
		return 1;
	if (strcmp(a->emit, "ast") == 0)
		ast_dump(stdout, p->ast);
	else if (strcmp(a->emit, "placed") == 0)
		dump_placed(stdout, p);
	else if (strcmp(a->emit, "dot") == 0)
		dump_dot(stdout, p);
	else if (u == PASS_GRAD || u == PASS_FOLD || u == PASS_CSE ||
		 u == PASS_DCE)
		dump_graph(stdout, p);
	else if (strcmp(a->emit, "partition") == 0 ||
		 strcmp(a->emit, "fused") == 0)
		dump_partition(stdout, p);
	else if (strcmp(a->emit, "memory") == 0) {
		for (int t = 0; t < p->ntask; t++)
			if (!a->task_s || task_matches(a->task_s, &p->tasks[t]))
				cg_emit_memory(stdout, p, t);
	} else {
		CgOptions o = {0};
		int cuda = strcmp(a->emit, "cuda") == 0;
		int ptx = strcmp(a->emit, "ptx") == 0;
		o.cpu = a->cpu;
		o.opt_level = a->opt_level;
		o.gpu_cc = a->gpu_cc;
		o.gpu_tf32 = a->gpu_tf32;
		for (int t = 0; t < p->ntask; t++) {
			if (a->task_s && !task_matches(a->task_s, &p->tasks[t]))
				continue;
			if (!cuda && !ptx)
				printf("; task %s\n", p->tasks[t].name);
			if ((cuda ? cg_emit_cuda(stdout, p, t, &o)
			     : ptx ? cg_emit_ptx(stdout, p, t, &o)
				   : cg_emit_llvm(stdout, p, t, &o)) != 0)
				return 1;
		}
	}
	return 0;
}

/* A character of a C identifier other than '_'. */
static int
alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

/* PREFIX from OUT's file stem: "build/my-part.o" -> "my_part". */
static const char *
default_prefix(Arena *ar, const char *out)
{
	const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
	const char *dot = strchr(base, '.');
	char *s = arena_strndup(ar, base, dot && dot > base ? (size_t)(dot - base)
							  : strlen(base));

	for (char *c = s; *c; c++)
		if (!alnum(*c))
			*c = '_';
	if (!*s || (*s >= '0' && *s <= '9'))
		s = arena_printf(ar, "_%s", s);
	return s;
}

static int
is_c_ident(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!alnum(*s) && *s != '_')
			return 0;
	return 1;
}

/* OUT.h next to OUT: the extension (if any) replaced. */
static const char *
header_path(Arena *ar, const char *out)
{
	const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
	const char *dot = strrchr(base, '.');
	size_t n = dot && dot > base ? (size_t)(dot - out) : strlen(out);

	return arena_printf(ar, "%.*s.h", (int)n, out);
}

/* Whether `task` has nothing to compile, after saying why: no run
 * signature at all (tfcompile's config names its fetches; --fetch does
 * here), or none with a part on the task, which runs no session either
 * (a session's task is served even when it computes nothing). */
static int
nothing_to_compile(const Args *a, const Program *p, int task)
{
	const TfgPlan *pl = p->plan;
	int sessions = 0;

	if (pl->nsig == 0) {
		fprintf(stderr, "tfgc: error: %s %s, so there is no run "
			"signature to compile: name what to compute with "
			"--fetch NAME (and --feed NAME=FILE.npy for its "
			"inputs), as tfcompile's config does\n", a->file,
			pl->nsession ? "has sessions that run no step"
				     : "has no session");
		return 1;
	}
	for (int s = 0; s < pl->nsig; s++)
		for (int i = 0; i < pl->sigs[s].ntask; i++)
			if (pl->sigs[s].tasks[i] == task)
				return 0;
	for (int i = 0; i < pl->nsession; i++)
		sessions += pl->sessions[i].task == task;
	if (sessions)
		return 0;
	fprintf(stderr, "tfgc: error: %s has no part in any of the %d run "
		"signature%s of %s%s, and runs no session: there is nothing "
		"to compile for it (tfgc emit --emit=partition shows each "
		"task's parts)\n", p->tasks[task].name, pl->nsig,
		pl->nsig == 1 ? "" : "s", a->file,
		a->fetch.n ? " (with these --fetch flags)" : "");
	return 1;
}

/* tfgc compile: spec/language.md §10.3 "Ahead-of-time compilation". */
int
cmd_compile(Args *a, Program *p)
{
	CgOptions o = {0};
	CgAot aot = {0};
	const char *hpath, *obj;
	int task = -1, rc;
	FILE *f;

	if (!a->output)
		return bad_usage(a, "compile needs -o OUT.o");
	if (a->name && !is_c_ident(a->name))
		return bad_usage(a, "--name takes a C identifier, not '%s'",
				 a->name);
	for (int t = 0; t < p->ntask; t++)
		if (a->task_s ? task_matches(a->task_s, &p->tasks[t])
			      : p->ntask == 1)
			task = t;
	if (task < 0) {
		if (!a->task_s)
			return bad_usage(a, "compile needs --task J:T (the "
					 "cluster has several tasks)");
		fprintf(stderr, "tfgc: error: the cluster has no task '%s'\n",
			a->task_s);
		return 1;
	}
	if (nothing_to_compile(a, p, task))
		return 1;
	hpath = header_path(p->arena, a->output);
	if (strcmp(hpath, a->output) == 0)
		return bad_usage(a, "-o '%s' would be overwritten by the header: "
				 "name the object OUT.o or OUT.so", a->output);
	o.cpu = !a->cpu ? "x86-64-v3" : strcmp(a->cpu, "host") == 0 ? NULL
								   : a->cpu;
	o.opt_level = a->opt_level;
	o.gpu_cc = a->gpu_cc;
	o.gpu_tf32 = a->gpu_tf32;
	o.check_numerics = a->check_numerics;
	aot.prefix = a->name ? a->name : default_prefix(p->arena, a->output);
	aot.table = a->shared;
	obj = a->shared ? arena_printf(p->arena, "%s.tmp%d.o", a->output,
				       (int)getpid())
			: a->output;
	aot.obj = obj;
	if (cg_aot_object(p, task, &o, &aot) != 0)
		return 1;
	if (a->shared) {
		rc = cg_aot_link_shared(obj, a->output);
		remove(obj);
		if (rc != 0)
			return 1;
	}
	if (!(f = fopen(hpath, "w"))) {
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", hpath,
			strerror(errno));
		return 1;
	}
	cg_aot_header(f, p, task, &aot, a->output);
	if (fclose(f) != 0) {
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", hpath,
			strerror(errno));
		return 1;
	}
	return 0;
}

