/*
 * codegen/aot.c: `tfgc compile`
 * (spec/language.md §10.3 "Ahead-of-time compilation"): a task's parts as an
 * object file, its C header, and the shared object for `tfgc server --part`.
 *
 *   object   the module of codegen/jit.c's cg_compile_module, built the
 *            same way (passes, CPU) but position-independent (Debian
 *            links PIE), with the symbols renamed and exported under a
 *            prefix so that several parts link into one program, and
 *            the table PREFIX_parts: the parts and the plan's image
 *            (runtime/planimg.c), all an AOT task server needs
 *            (tfg_serve_part, runtime/serve.c)
 *   header   plain C: the symbols, and per signature that the task runs
 *            alone a static inline wrapper taking the caller's buffers,
 *            which calls libtfg's tfg_aot_run; it repeats runtime/tfg.h's
 *            TfgAotSig block and tfg_serve_part under the same guards,
 *            so it includes only <stddef.h> and <stdint.h>
 *   shared   the object linked by the system's C compiler (`cc -shared`;
 *            libtfg's functions, tfg_rt_gemm for large matmuls among
 *            them, come from the server that loads it):
 *            LLVM's C API has no linker, and cc knows the platform's
 *            flags; its table is also `tfg_parts`, a fixed name, so the
 *            server finds it without knowing the prefix
 */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codegen/cg_int.h"

extern char **environ;

/* ------------------------------------------------------------- object */

static LLVMValueRef
add_const(LLVMModuleRef m, const char *name, LLVMValueRef init, int private)
{
	LLVMValueRef g = LLVMAddGlobal(m, LLVMTypeOf(init), name);

	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	if (private) {
		LLVMSetLinkage(g, LLVMPrivateLinkage);
		LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	}
	return g;
}

/* PREFIX_parts: a TfgPartTable (runtime/tfg.h) over the renamed parts,
 * with the plan's image; `tfg_parts` too (an alias) for a shared
 * object, so that tfgc server --part finds it without the prefix. */
static int
add_table(LLVMContextRef c, LLVMModuleRef m, const Program *p, int task,
	  LLVMValueRef *fns, const size_t *sizes, const CgAot *a)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
	LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0);
	LLVMTypeRef ety[2] = {ptr, i64};
	LLVMTypeRef et = LLVMStructTypeInContext(c, ety, 2, 0);
	LLVMValueRef *ents = calloc((size_t)p->nsig + 1, sizeof *ents);
	const char *tn = p->tasks[task].name;
	unsigned char *img;
	size_t nimg;
	TfgError e;
	char name[512];

	if (tfg_plan_image(p->plan, &img, &nimg, &e) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", e.msg);
		free(ents);
		return -1;
	}
	for (int s = 0; s < p->nsig; s++) {
		LLVMValueRef v[2] = {fns[s] ? fns[s] : LLVMConstNull(ptr),
				     LLVMConstInt(i64, sizes[s], 0)};
		ents[s] = LLVMConstStructInContext(c, v, 2, 0);
	}
	LLVMValueRef sigs = add_const(m, "tfg_parts.sigs",
				      LLVMConstArray2(et, ents,
						      (uint64_t)p->nsig), 1);
	LLVMValueRef tname = add_const(m, "tfg_parts.task",
				       LLVMConstStringInContext2(c, tn,
								 strlen(tn), 0),
				       1);
	LLVMValueRef plan = add_const(m, "tfg_parts.plan",
				      LLVMConstStringInContext2(
					  c, (const char *)img, nimg, 1), 1);
	LLVMSetAlignment(plan, 8);
	LLVMValueRef f[10] = {
	    LLVMConstInt(i32, TFG_PART_MAGIC, 0),
	    LLVMConstInt(i32, TFG_PART_VERSION, 0),
	    LLVMConstInt(i64, p->plan->hash, 0),
	    LLVMConstInt(i64, tfg_plan_digest(p->plan), 0),
	    LLVMConstInt(i32, (unsigned long long)task, 0),
	    LLVMConstInt(i32, (unsigned long long)p->nsig, 0),
	    tname, sigs, plan, LLVMConstInt(i64, nimg, 0)};
	snprintf(name, sizeof name, "%s_parts", a->prefix);
	LLVMValueRef tab = add_const(m, name,
				     LLVMConstStructInContext(c, f, 10, 0), 0);
	if (a->table)
		LLVMAddAlias2(m, LLVMGlobalGetValueType(tab), 0, tab,
			      "tfg_parts");
	free(img);
	free(ents);
	return 0;
}

/* Renames the parts and adds the exported constants; 0, or -1 after
 * reporting. */
static int
export_symbols(LLVMContextRef c, LLVMModuleRef m, const Program *p,
	       int task, const CgAot *a, const size_t *sizes, const int *has)
{
	LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
	LLVMValueRef *fns = calloc((size_t)p->nsig + 1, sizeof *fns);
	char name[512];
	int rc;

	for (int s = 0; s < p->nsig; s++) {
		if (!has[s])
			continue;
		snprintf(name, sizeof name, "tfg_part_%d", s);
		fns[s] = LLVMGetNamedFunction(m, name);
		snprintf(name, sizeof name, "%s_part_%d", a->prefix, s);
		LLVMSetValueName2(fns[s], name, strlen(name));
		snprintf(name, sizeof name, "%s_arena_%d", a->prefix, s);
		add_const(m, name, LLVMConstInt(i64, sizes[s], 0), 0);
	}
	snprintf(name, sizeof name, "%s_hash", a->prefix);
	add_const(m, name, LLVMConstInt(i64, p->plan->hash, 0), 0);
	rc = add_table(c, m, p, task, fns, sizes, a);
	free(fns);
	return rc;
}

int
cg_aot_object(const Program *p, int task, const CgOptions *o, CgAot *a)
{
	size_t *sizes = calloc((size_t)p->nsig + 1, sizeof *sizes);
	int *has = calloc((size_t)p->nsig + 1, sizeof *has);
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	char *err = NULL;
	int rc;

	cg_llvm_init();
	LLVMContextRef c = LLVMContextCreate();
	char *triple = LLVMGetDefaultTargetTriple();
	rc = cg_compile_module(c, p, task, o, triple, 1, &m, &tm, sizes, has);
	if (rc == 0) {
		a->blas = LLVMGetNamedFunction(m, "tfg_rt_gemm") != NULL;
		rc = export_symbols(c, m, p, task, a, sizes, has);
		if (rc == 0 &&
		    LLVMTargetMachineEmitToFile(tm, m, (char *)a->obj,
						LLVMObjectFile, &err)) {
			fprintf(stderr, "tfgc: error: cannot write '%s': %s\n",
				a->obj, err);
			LLVMDisposeMessage(err);
			rc = -1;
		}
		LLVMDisposeModule(m);
		LLVMDisposeTargetMachine(tm);
	}
	LLVMContextDispose(c);
	LLVMDisposeMessage(triple);
	free(sizes);
	free(has);
	return rc;
}

/* ------------------------------------------------------------- header */

/* Whether signature s is driven from task, needs no other task, and
 * keeps no state (variables live in a task server, not in the caller of
 * tfg_aot_run). */
int
cg_aot_standalone(const Program *p, int task, int s)
{
	const RtSig *g = &p->plan->sigs[s];
	const IrPart *part;

	if (g->client != task || g->ntask != 1 || g->tasks[0] != task)
		return 0;
	part = p->sigs[s].parts ? &p->sigs[s].parts[task] : NULL;
	for (int i = 0; part && i < part->n; i++) /* random draws: 0 */
		if (op_info[part->nodes[i]->op].flags & OPF_STATEFUL)
			return 0;
	return 1;
}

static const char *
c_type(TfgDtype t)
{
	switch (t) {
	case TFG_BOOL: return "uint8_t";
	case TFG_U8: return "uint8_t";
	case TFG_I32: return "int32_t";
	case TFG_I64: return "int64_t";
	case TFG_F32: return "float";
	case TFG_F64: return "double";
	case TFG_STRING: return "uint8_t"; /* records, then the text */
	default: return "void";
	}
}

/* tfg names are identifiers, but C has other keywords. */
static int
c_keyword(const char *s)
{
	static const char *const kw[] = {
	    "auto", "break", "case", "char", "const", "continue", "default",
	    "do", "double", "else", "enum", "extern", "float", "for", "goto",
	    "if", "inline", "int", "long", "register", "restrict", "return",
	    "short", "signed", "sizeof", "static", "struct", "switch",
	    "typedef", "union", "unsigned", "void", "volatile", "while",
	    "bool", "true", "false", "size_t", "int32_t", "int64_t",
	    "uint8_t", "uint32_t", "uint64_t", "NULL"};
	for (size_t i = 0; i < sizeof kw / sizeof *kw; i++)
		if (strcmp(s, kw[i]) == 0)
			return 1;
	return 0;
}

/* s made a C identifier into buf: other characters become '_'. */
static char *
c_ident(char *buf, size_t n, const char *s)
{
	size_t i = 0;

	if (!(s[0] >= 'a' && s[0] <= 'z') && !(s[0] >= 'A' && s[0] <= 'Z') &&
	    s[0] != '_' && i + 1 < n)
		buf[i++] = '_';
	for (; *s && i + 1 < n; s++)
		buf[i++] = ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			    (*s >= '0' && *s <= '9')) ? *s : '_';
	buf[i] = '\0';
	if (c_keyword(buf) && i + 1 < n)
		strcat(buf, "_");
	return buf;
}

static size_t
edge_bytes(const Program *p, uint32_t key, TfgDtype *dt, TfgShape *sh)
{
	const RtEdge *e = &p->plan->edges[key];

	*dt = e->dtype;
	*sh = e->shape;
	return e->nbytes;
}

/* The wrapper's name: PREFIX_<fetches joined by _>, made unique among the
 * task's wrappers with _<s>. */
static void
wrapper_name(char *buf, size_t n, const Program *p, int task, int s,
	     const char *prefix)
{
	char id[256];

	snprintf(buf, n, "%s", prefix);
	for (int i = 0; i < p->plan->sigs[s].nfetch; i++) {
		c_ident(id, sizeof id, p->plan->sigs[s].fetches[i].name);
		snprintf(buf + strlen(buf), n - strlen(buf), "_%s", id);
	}
	for (int t = 0; t < s; t++) {
		char other[1024];
		if (!cg_aot_standalone(p, task, t))
			continue;
		wrapper_name(other, sizeof other, p, task, t, prefix);
		if (strcmp(other, buf) == 0) {
			snprintf(buf + strlen(buf), n - strlen(buf), "_%d", s);
			break;
		}
	}
}

/* Parameter i (feeds, then fetches) of signature g: its tfg name made an
 * identifier, with _<i> where an earlier one has the same. */
static void
param_name(char *buf, size_t n, const RtSig *g, int i)
{
	char other[256];
	const char *nm = i < g->nfeed ? g->feeds[i].name
				      : g->fetches[i - g->nfeed].name;

	c_ident(buf, n, nm);
	if (strncmp(buf, "tfg_", 4) == 0)
		snprintf(buf + strlen(buf), n - strlen(buf), "_");
	for (int j = 0; j < i; j++) {
		param_name(other, sizeof other, g, j);
		if (strcmp(other, buf) == 0) {
			snprintf(buf + strlen(buf), n - strlen(buf), "_%d", i);
			break;
		}
	}
}

static void
header_wrapper(FILE *f, const Program *p, int task, int s,
	       const char *prefix)
{
	const RtSig *g = &p->plan->sigs[s];
	char name[1024], par[256], shp[128];
	TfgDtype dt;
	TfgShape sh;
	size_t nb;
	int np = g->nfeed + g->nfetch;

	wrapper_name(name, sizeof name, p, task, s, prefix);
	fprintf(f, "\n/* run(");
	for (int i = 0; i < g->nfetch; i++)
		fprintf(f, "%s%s", i ? ", " : "", g->fetches[i].name);
	fprintf(f, ") in %s (signature %d):\n", p->tasks[task].name, s);
	for (int i = 0; i < np; i++) {
		uint32_t key = i < g->nfeed ? g->feeds[i].key
					    : g->fetches[i - g->nfeed].key;
		nb = edge_bytes(p, key, &dt, &sh);
		param_name(par, sizeof par, g, i);
		fprintf(f, " *   %-10s %s %s%s (%zu bytes)\n", par,
			i < g->nfeed ? "feed " : "fetch", tfg_dtype_name(dt),
			tfg_shape_str(shp, sizeof shp, &sh), nb);
	}
	for (int i = 0, said = 0; i < np && !said; i++) {
		uint32_t key = i < g->nfeed ? g->feeds[i].key
					    : g->fetches[i - g->nfeed].key;
		edge_bytes(p, key, &dt, &sh);
		if ((said = dt == TFG_STRING))
			fprintf(f, " * A string buffer holds one record {uint64 "
				"offset, uint64 length} per element, then the "
				"text.\n");
	}
	fprintf(f, " * Buffers are dense and row-major.  Returns 0 or a "
		"tfg_status. */\nstatic inline int\n%s(", name);
	for (int i = 0; i < np; i++) {
		uint32_t key = i < g->nfeed ? g->feeds[i].key
					    : g->fetches[i - g->nfeed].key;
		edge_bytes(p, key, &dt, &sh);
		param_name(par, sizeof par, g, i);
		fprintf(f, "%s%s%s *%s", i ? ", " : "",
			i < g->nfeed ? "const " : "", c_type(dt), par);
	}
	fprintf(f, "%s)\n{\n", np ? "" : "void");
	for (int k = 0; k < 2; k++) {
		int lo = k ? g->nfeed : 0, hi = k ? np : g->nfeed;
		if (hi == lo)
			continue;
		fprintf(f, "\tstatic const TfgAotEdge tfg__%s[%d] = {",
			k ? "fetches" : "feeds", hi - lo);
		for (int i = lo; i < hi; i++) {
			uint32_t key = i < g->nfeed ? g->feeds[i].key
					: g->fetches[i - g->nfeed].key;
			nb = edge_bytes(p, key, &dt, &sh);
			fprintf(f, "%s{%uu, %zuu}", i > lo ? ", " : "", key, nb);
		}
		fprintf(f, "};\n");
	}
	if (g->nfeed) {
		fprintf(f, "\tconst void *const tfg__in[%d] = {", g->nfeed);
		for (int i = 0; i < g->nfeed; i++) {
			param_name(par, sizeof par, g, i);
			fprintf(f, "%s%s", i ? ", " : "", par);
		}
		fprintf(f, "};\n");
	}
	if (g->nfetch) {
		fprintf(f, "\tvoid *const tfg__out[%d] = {", g->nfetch);
		for (int i = g->nfeed; i < np; i++) {
			param_name(par, sizeof par, g, i);
			fprintf(f, "%s%s", i > g->nfeed ? ", " : "", par);
		}
		fprintf(f, "};\n");
	}
	fprintf(f, "\tTfgAotSig tfg__sig;\n\n"
		"\ttfg__sig.fn = %s_part_%d;\n"
		"\ttfg__sig.arena_size = %s_arena_%d;\n"
		"\ttfg__sig.nfeed = %d;\n"
		"\ttfg__sig.feeds = %s;\n"
		"\ttfg__sig.nfetch = %d;\n"
		"\ttfg__sig.fetches = %s;\n"
		"\treturn tfg_aot_run(&tfg__sig, %s, %s);\n}\n",
		prefix, s, prefix, s, g->nfeed, g->nfeed ? "tfg__feeds" : "0",
		g->nfetch, g->nfetch ? "tfg__fetches" : "0",
		g->nfeed ? "tfg__in" : "0", g->nfetch ? "tfg__out" : "0");
}

void
cg_aot_header(FILE *f, const Program *p, int task, const CgAot *a,
	      const char *obj)
{
	const char *prefix = a->prefix;

	fprintf(f, "/* Generated by tfgc compile from %s for %s.\n"
		" * Link with %s and libtfg%s (spec/language.md\n"
		" * section 10.3):\n *   cc main.c %s -ltfg%s -lm */\n",
		p->src->path, p->tasks[task].name, obj, a->blas ? ", and "
		"-lopenblas: its large products\n * call tfg_rt_gemm, which "
		"calls OpenBLAS" : "", obj, a->blas ? " -lopenblas" : "");
	fprintf(f, "#ifndef TFG_PART_%s_H\n#define TFG_PART_%s_H\n\n"
		"#include <stddef.h>\n#include <stdint.h>\n\n"
		"#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", prefix,
		prefix);
	/* The same block as runtime/tfg.h's, under its guard. */
	fprintf(f,
		"#ifndef TFG_AOT_SIG_DEFINED\n"
		"#define TFG_AOT_SIG_DEFINED\n"
		"struct RtCtx;\n"
		"typedef struct TfgAotEdge {\n"
		"\tuint32_t key;\n"
		"\tsize_t nbytes;\n"
		"} TfgAotEdge;\n"
		"typedef struct TfgAotSig {\n"
		"\tint (*fn)(struct RtCtx *ctx, char *arena);\n"
		"\tsize_t arena_size;\n"
		"\tint nfeed;\n"
		"\tconst TfgAotEdge *feeds;\n"
		"\tint nfetch;\n"
		"\tconst TfgAotEdge *fetches;\n"
		"} TfgAotSig;\n"
		"int tfg_aot_run(const TfgAotSig *sig, const void *const "
		"*feeds,\n\t\tvoid *const *fetches);\n"
		"#endif\n\n");
	/* The same as runtime/tfg.h's, under its guard. */
	fprintf(f,
		"#ifndef TFG_SERVE_PART_DEFINED\n"
		"#define TFG_SERVE_PART_DEFINED\n"
		"struct TfgPartTable;\n"
		"int tfg_serve_part(int argc, char **argv,\n"
		"\t\t   const struct TfgPartTable *parts);\n"
		"#endif\n\n");
	fprintf(f, "/* The program's hash (tfgc refuses a part of another "
		"program). */\nextern const uint64_t %s_hash;\n", prefix);
	fprintf(f, "/* The part table.  An AOT task server of %s:\n"
		" *   int main(int argc, char **argv)\n"
		" *   { return tfg_serve_part(argc, argv, &%s_parts); }\n"
		" * linked with libtfg, -lssl -lcrypto -lz -lpthread -lm\n"
		" * (spec/language.md section 10.3). */\n"
		"extern const struct TfgPartTable %s_parts;\n",
		p->tasks[task].name, prefix, prefix);
	for (int s = 0; s < p->nsig; s++) {
		if (p->sigs[s].parts[task].n == 0)
			continue;
		fprintf(f, "/* signature %d */\nint %s_part_%d(struct RtCtx "
			"*ctx, char *arena);\nextern const size_t "
			"%s_arena_%d;\n", s, prefix, s, prefix, s);
	}
	for (int s = 0; s < p->nsig; s++)
		if (cg_aot_standalone(p, task, s))
			header_wrapper(f, p, task, s, prefix);
	fprintf(f, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* ------------------------------------------------------- shared object */

int
cg_aot_link_shared(const char *obj, const char *so)
{
	const char *cc = getenv("CC");
	/* libtfg's functions (tfg_rt_gemm, which calls OpenBLAS, among
	   them) come from the server that loads the part */
	char *argv[] = {(char *)(cc && *cc ? cc : "cc"), "-shared", "-o",
			(char *)so, (char *)obj, "-Wl,--as-needed", "-lm",
			NULL};
	pid_t pid;
	int st, rv;

	if ((rv = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))) {
		fprintf(stderr, "tfgc: error: cannot run '%s' to link '%s': "
			"%s\n", argv[0], so, strerror(rv));
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "tfgc: error: waiting for '%s': %s\n",
				argv[0], strerror(errno));
			return -1;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "tfgc: error: '%s -shared' failed to link "
			"'%s'\n", argv[0], so);
		return -1;
	}
	return 0;
}
