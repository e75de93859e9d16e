/*
 * compiler/driver.c: tfgc's command line: its arguments and commands.
 * The passes run in compiler/pipeline.c, the server's compile callbacks
 * (JIT, specialisations, --part) live in compiler/jit.c, and
 * --free-ports in compiler/ports.c.
 *
 *   tfgc check FILE
 *   tfgc emit --emit=tokens|ast|grad|folded|cse|dce|placed|dot|partition
 *             |fused|llvm|memory [--task J:T] [--cpu CPU] [-O N] FILE
 *   tfgc run FILE [--log-device-placement] [--free-ports]
 *            [--attach [--stop]] [--restore DIR] [--trace OUT.json]
 *            [--no-progress] [--progress-every S]
 *   tfgc server FILE [--job J --task T] [--chief J:T|none]
 *               [--part PART.so] [--restore DIR] [--trace OUT.json|-]
 *   tfgc stop FILE
 *   tfgc compile FILE --task J:T -o OUT.o|OUT.so [--shared] [--name PREFIX]
 *                [--cpu CPU] [-O N]
 *   tfgc plot FILE.csv [-o OUT.png] [--x NAME] [--y NAME,...] [--size WxH]
 *   tfgc fmt [-w | --check] [FILE...]
 * with, for run, server and stop: [--addr /job:J/task:T=HOST:PORT]...
 * (every command that compiles takes --cluster FILE.json, and reads
 * TF_CONFIG: compiler/cluster.c)
 * (run, server and compile also take --fetch/--feed/--out; every command
 * takes --shape NAME=D0,D1,... to fix an input's `?` dims)
 * [--startup-timeout S] [--step-timeout S] [--heartbeat-timeout S]
 * [--cluster-key FILE] [--tls-cert F --tls-key F --tls-ca F]
 * [--max-specs N] [--verbose], and for run and stop
 * [--listen HOST:PORT].
 *
 * (plot is compiler/plot.c, which reads its own arguments; so does fmt,
 * whose formatter is lang/fmt.c.)
 *
 * Exit status: 0 success, 1 errors in the program or at run time, 2 a bad
 * command line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "codegen/codegen.h"
#include "compiler/compiler_int.h"

typedef struct Args {
	const char *cmd, *file, *emit, *job, *cpu;
	const char *output, *name, *part; /* compile -o, --name; server --part */
	const char *cluster; /* --cluster FILE.json */
	const char *restore; /* run, server --restore DIR */
	const char *key;     /* --cluster-key FILE */
	const char *tls[3];  /* --tls-cert, --tls-key, --tls-ca FILE */
	const char *trace;   /* --trace FILE */
	const char *chief;   /* server --chief J:T or none */
	const char *listen;  /* run, stop --listen HOST:PORT */
	int stop;            /* run --attach --stop */
	int no_progress;     /* run --no-progress */
	double progress_every; /* run --progress-every S; < 0 unset */
	int soft_placement;  /* --soft-placement */
	int prefer_gpu;      /* --prefer-gpu */
	int gpu_tf32;        /* --gpu-tf32 */
	int check_numerics;  /* --check-numerics */
	int gpu_cc;          /* --gpu-arch sm_NN: NN; 0 unset */
	int shared;        /* compile --shared */
	int task;          /* --task for server: index; -1 unset */
	const char *task_s; /* --task J:T for emit */
	int opt_level;
	int log_placement, free_ports, attach, verbose;
	int picked_ports; /* server: --picked-ports, from tfgc run */
	unsigned skip;     /* -fno-NAME: CompileOptions.skip */
	double startup_timeout, step_timeout; /* step: 0, none */
	double heartbeat_timeout;
	int max_specs;     /* --max-specs; 0: the runtime's default */
	PtrVec addr; /* --addr values */
	PtrVec feed, fetch, out; /* run --feed x=a.npy --fetch y --out y.npy */
	PtrVec shape;            /* --shape x=100,784 */
	PtrVec param;            /* --param n=8192 */
} Args;

char *openblas_get_config(void); /* OpenBLAS's cblas.h, which tfgc
				     otherwise does not need */

static const char usage[] =
    "usage: tfgc check FILE\n"
    "       tfgc --help | --version\n"
    "       tfgc devices\n"
    "       tfgc emit --emit=tokens|ast|grad|folded|cse|dce|placed|dot|"
    "partition|fused|llvm|memory|cuda|ptx\n"
    "                 [--task J:T] [--cpu CPU] [-O N] [--gpu-arch sm_NN] FILE\n"
    "       tfgc run FILE [--log-device-placement] [--free-ports] "
    "[--attach [--stop]]\n"
    "                [--restore DIR] [--trace OUT.json]\n"
    "                [--no-progress] [--progress-every S]\n"
    "                [--fetch NAME]... [--feed NAME=FILE.npy]... "
    "[--out FILE.npy]...\n"
    "       tfgc server FILE [--job J --task T] [--chief J:T|none] "
    "[--part PART.so]\n"
    "                [--restore DIR] [--trace OUT.json|-]\n"
    "       tfgc stop FILE\n"
    "       tfgc compile FILE --task J:T -o OUT.o [--shared] [--name PREFIX]"
    " [--cpu CPU] [-O N]\n"
    "       tfgc plot FILE.csv [-o OUT.png] [--x NAME] [--y NAME,...] "
    "[--size WxH]\n"
    "       tfgc fmt [-w | --check] [FILE...]   (the canonical layout; "
    "-w: rewrite FILE)\n"
    "options for run, server, stop: --addr /job:J/task:T=HOST:PORT, "
    "--startup-timeout S,\n"
    "       --step-timeout S, --heartbeat-timeout S, --cluster-key FILE, "
    "--max-specs N,\n"
    "       --tls-cert FILE --tls-key FILE --tls-ca FILE,\n"
    "       --verbose; run, stop: --listen HOST:PORT\n"
    "numerics: run, server, compile: --check-numerics (every float value "
    "checked for NaN and inf)\n"
    "GPUs: --prefer-gpu (any command); run, server: --soft-placement, "
    "--gpu-tf32;\n       "
    "emit, compile: --gpu-arch sm_NN\n"
    "passes (any command): -fno-fold, -fno-cse, -fno-dce, -fno-fuse\n"
    "the cluster (any command): --cluster FILE.json, or TF_CONFIG\n"
    "dims left '?' (any command): --shape NAME=D0,D1,...\n"
    "params (any command): --param NAME=VALUE\n";

static int
bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "tfgc: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

/* ---------------------------------------------------------- the commands */

static int
parse_args(Args *a, int argc, char **argv, Arena *ar)
{
	a->task = -1;
	a->opt_level = 2;
	a->startup_timeout = 30;
	a->step_timeout = 0;
	a->heartbeat_timeout = 1.5;
	a->progress_every = -1;
	if (argc < 2)
		return bad_usage("no command given%s", "");
	a->cmd = argv[1];
	for (int i = 2; i < argc; i++) {
		char *s = argv[i], *val = NULL, *eq;
		char name[64];
		if (s[0] != '-' || !s[1]) {
			if (a->file)
				return bad_usage("unexpected argument '%s'", s);
			a->file = s;
			continue;
		}
		snprintf(name, sizeof name, "%s", s);
		if ((eq = strchr(name, '=')) != NULL) {
			*eq = 0;
			val = s + (eq - name) + 1;
		}
#define FLAG(n) (strcmp(name, n) == 0)
#define VALUE()                                                               \
	(val ? val : i + 1 < argc ? argv[++i] : NULL)
		if (FLAG("--log-device-placement")) {
			a->log_placement = 1;
		} else if (FLAG("--free-ports")) {
			a->free_ports = 1;
		} else if (FLAG("--attach")) {
			a->attach = 1;
		} else if (FLAG("--stop")) {
			a->stop = 1;
		} else if (FLAG("--no-progress")) {
			a->no_progress = 1;
		} else if (FLAG("--soft-placement")) {
			a->soft_placement = 1;
		} else if (FLAG("--prefer-gpu")) {
			a->prefer_gpu = 1;
		} else if (FLAG("--gpu-tf32")) {
			a->gpu_tf32 = 1;
		} else if (FLAG("--check-numerics")) {
			a->check_numerics = 1;
		} else if (FLAG("--picked-ports")) {
			a->picked_ports = 1; /* tfgc run to its servers */
		} else if (FLAG("--shared")) {
			a->shared = 1;
		} else if (strncmp(name, "-fno-", 5) == 0 && !val &&
			   pass_skippable(pass_lookup(name + 5))) {
			a->skip |= 1u << pass_lookup(name + 5);
		} else if (FLAG("--verbose") || FLAG("-v")) {
			a->verbose = 1;
		} else if (FLAG("--emit") || FLAG("--job") || FLAG("--task") ||
			   FLAG("--cpu") || FLAG("-O") || FLAG("--addr") ||
			   FLAG("--feed") || FLAG("--fetch") || FLAG("--out") ||
			   FLAG("--shape") || FLAG("--param") ||
			   FLAG("-o") || FLAG("--name") || FLAG("--part") ||
			   FLAG("--cluster") || FLAG("--chief") ||
			   FLAG("--restore") || FLAG("--cluster-key") ||
			   FLAG("--tls-cert") || FLAG("--tls-key") ||
			   FLAG("--tls-ca") ||
			   FLAG("--trace") || FLAG("--heartbeat-timeout") ||
			   FLAG("--listen") || FLAG("--gpu-arch") ||
			   FLAG("--startup-timeout") ||
			   FLAG("--step-timeout") || FLAG("--max-specs") ||
			   FLAG("--progress-every")) {
			const char *v = VALUE();
			char *end;
			if (!v)
				return bad_usage("option '%s' needs a value",
						 name);
			if (FLAG("--emit"))
				a->emit = v;
			else if (FLAG("--job"))
				a->job = v;
			else if (FLAG("--cpu"))
				a->cpu = v;
			else if (FLAG("-o"))
				a->output = v;
			else if (FLAG("--name"))
				a->name = v;
			else if (FLAG("--part"))
				a->part = v;
			else if (FLAG("--cluster"))
				a->cluster = v;
			else if (FLAG("--restore"))
				a->restore = v;
			else if (FLAG("--cluster-key"))
				a->key = v;
			else if (FLAG("--tls-cert"))
				a->tls[0] = v;
			else if (FLAG("--tls-key"))
				a->tls[1] = v;
			else if (FLAG("--tls-ca"))
				a->tls[2] = v;
			else if (FLAG("--trace"))
				a->trace = v;
			else if (FLAG("--chief"))
				a->chief = v;
			else if (FLAG("--gpu-arch")) {
				long cc = strtol(strncmp(v, "sm_", 3) == 0 ||
						 strncmp(v, "compute_", 8) == 0
						     ? strchr(v, '_') + 1 : v,
						 &end, 10);
				if (*end || cc < 50 || cc > 200)
					return bad_usage("--gpu-arch takes sm_NN "
							 "(a compute capability "
							 "such as sm_90), not "
							 "'%s'", v);
				a->gpu_cc = (int)cc;
			}
			else if (FLAG("--listen")) {
				const char *c = strrchr(v, ':');
				long port = c ? strtol(c + 1, &end, 10) : -1;

				if (!c || c == v || end == c + 1 || *end ||
				    port < 0 || port > 65535)
					return bad_usage("--listen takes HOST:"
							 "PORT (PORT 0: any "
							 "free one), not '%s'",
							 v);
				a->listen = v;
			}
			else if (FLAG("--addr"))
				vec_push(ar, &a->addr, (void *)v);
			else if (FLAG("--feed")) {
				if (!strchr(v, '=') || *v == '=')
					return bad_usage("--feed takes NAME=FILE."
							 "npy, not '%s'", v);
				vec_push(ar, &a->feed, (void *)v);
			} else if (FLAG("--shape")) {
				if (!strchr(v, '=') || *v == '=')
					return bad_usage("--shape takes NAME=D0,"
							 "D1,..., not '%s'", v);
				vec_push(ar, &a->shape, (void *)v);
			} else if (FLAG("--param")) {
				if (!strchr(v, '=') || *v == '=')
					return bad_usage("--param takes NAME=VALUE"
							 ", not '%s'", v);
				vec_push(ar, &a->param, (void *)v);
			} else if (FLAG("--fetch"))
				vec_push(ar, &a->fetch, (void *)v);
			else if (FLAG("--out"))
				vec_push(ar, &a->out, (void *)v);
			else if (FLAG("--task"))
				a->task_s = v;
			else if (FLAG("-O")) {
				a->opt_level = (int)strtol(v, &end, 10);
				if (*end || a->opt_level < 0 ||
				    a->opt_level > 3)
					return bad_usage("-O takes 0 to 3, "
							 "not '%s'", v);
			} else if (FLAG("--max-specs")) {
				long n = strtol(v, &end, 10);
				if (*end || end == v || n < 1 || n > 100000)
					return bad_usage("--max-specs takes a "
							 "count from 1 to "
							 "100000, not '%s'", v);
				a->max_specs = (int)n;
			} else if (FLAG("--progress-every")) {
				double t = strtod(v, &end);
				if (*end || end == v || !(t >= 0) || t > 1e6)
					return bad_usage("--progress-every takes "
							 "a number of seconds "
							 "(0: only at epochs' "
							 "ends), not '%s'", v);
				a->progress_every = t;
			} else {
				double t = strtod(v, &end);
				if (*end || !(t > 0) || t > 1e6)
					return bad_usage("a timeout is a "
							 "number of seconds, "
							 "not '%s'", v);
				if (FLAG("--startup-timeout"))
					a->startup_timeout = t;
				else if (FLAG("--step-timeout"))
					a->step_timeout = t;
				else
					a->heartbeat_timeout = t;
			}
		} else {
			return bad_usage("unknown option '%s'", s);
		}
#undef FLAG
#undef VALUE
	}
	if (!a->file)
		return bad_usage("no input file%s", "");
	if ((a->feed.n || a->out.n) && !a->fetch.n)
		return bad_usage("--feed and --out go with --fetch%s", "");
	if (a->out.n && a->out.n != a->fetch.n)
		return bad_usage("give one --out per --fetch, or none%s", "");
	if (a->restore && a->attach)
		return bad_usage("--restore starts servers from a checkpoint: "
				 "give it to each 'tfgc server', not to "
				 "--attach%s", "");
	if (a->stop && !a->attach)
		return bad_usage("--stop goes with run --attach (without it, "
				 "tfgc run stops the tasks it started)%s", "");
	return 0;
}

static TfgOptions
runtime_options(const Args *a)
{
	TfgOptions o = {0};

	o.startup_timeout = a->startup_timeout;
	o.step_timeout = a->step_timeout;
	o.heartbeat_timeout = a->heartbeat_timeout;
	o.restore_dir = a->restore;
	o.cluster_key = a->key;
	o.tls_cert = a->tls[0];
	o.tls_key = a->tls[1];
	o.tls_ca = a->tls[2];
	o.trace_file = a->trace;
	o.max_specs = a->max_specs;
	o.verbose = a->verbose;
	o.no_progress = a->no_progress;
	o.progress_every = a->progress_every;
	o.picked_ports = a->picked_ports;
	o.controller_addr = a->listen ? a->listen : "127.0.0.1:0";
	return o;
}

/* --task: "J:T" or "/job:J/task:T". */
static int
task_matches(const char *spec, const CTask *t)
{
	char buf[256];

	snprintf(buf, sizeof buf, "%s:%d", t->job, t->index);
	return strcmp(spec, buf) == 0 || strcmp(spec, t->name) == 0;
}

static int
cmd_emit(Args *a, Program *p, CompileOptions *co, Diag *d)
{
	int u;

	if (!a->emit)
		return bad_usage("emit needs --emit=MODE%s", "");
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
		return bad_usage("unknown emit mode '%s' (expected tokens, "
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

/* --chief: "none" (-1), or a task as --task names it for emit; -2
 * after reporting a usage error. */
static int
chief_of(const Args *a, const Program *p, int env)
{
	if (!a->chief)
		return env ? 0 : -1; /* the first job's task 0 */
	if (strcmp(a->chief, "none") == 0)
		return -1;
	for (int t = 0; t < p->ntask; t++)
		if (task_matches(a->chief, &p->tasks[t]))
			return t;
	bad_usage("--chief '%s': the cluster has no such task (give J:T, "
		  "/job:J/task:T or none)", a->chief);
	return -2;
}

static char *const *controller_args(const Args *a, Program *p, int chief);

/* tfgc server: the task of --job and --task, or, without them, the one
 * TF_CONFIG or the launcher's rank names, in a run the chief drives
 * (spec §10.6 "Launchers and cluster managers"). */
static int
cmd_server(Args *a, Program *p, ClusterEnv *ce)
{
	TfgOptions o = runtime_options(a);
	int env = !a->job && !a->task_s, task = -1, chief;
	char *end;
	long t;

	if (env) {
		if ((task = cluster_task(ce, p, p->diag)) == -1)
			return 1;
		if (task == -2)
			return bad_usage("server needs --job J and --task T, "
					 "or TF_CONFIG, or the rank a launcher "
					 "gives (OMPI_COMM_WORLD_RANK, "
					 "PMI_RANK, SLURM_PROCID)%s", "");
	} else if (!a->job || !a->task_s) {
		return bad_usage("server needs both --job J and --task T%s",
				 "");
	} else {
		t = strtol(a->task_s, &end, 10);
		for (int i = 0; i < p->ntask && !*end; i++)
			if (strcmp(p->tasks[i].job, a->job) == 0 &&
			    p->tasks[i].index == t)
				task = i;
		if (task < 0) {
			fprintf(stderr, "tfgc: error: the cluster has no task "
				"/job:%s/task:%s\n", a->job, a->task_s);
			return 1;
		}
	}
	if ((chief = chief_of(a, p, env)) == -2)
		return 2;
	if (cluster_hosts(ce, p) < 0)
		return 1;
	if (chief >= 0) {
		o.launched = 1;
		o.chief = chief;
		if (task == chief)
			o.controller_argv = controller_args(a, p, chief);
		/* launched, every task records and the chief's controller
		   writes the one trace (all have the same command line) */
		if (o.trace_file)
			o.trace_file = "-";
	}
	if (a->part && p->plan->generic) {
		unknown_dims(p, p->diag, "a compiled part needs them, give "
			     "the part's");
		return 1;
	}
	if (a->part)
		return tfg_server_main(p->plan, task, &o, part_load,
				       (void *)a->part);
	o.specialise = jit_specialise;
	o.release = jit_release;
	o.specialise_cookie = p;
	jit_trace = o.trace_file != NULL;
	jit_soft = a->soft_placement;
	jit_tf32 = a->gpu_tf32;
	jit_check = a->check_numerics;
	return tfg_server_main(p->plan, task, &o, jit_compile, p);
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
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') &&
		    !(*c >= '0' && *c <= '9'))
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
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_')
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

/* tfgc compile: spec/language.md §10.3 "Ahead-of-time compilation". */
static int
cmd_compile(Args *a, Program *p)
{
	CgOptions o = {0};
	CgAot aot = {0};
	const char *hpath, *obj;
	int task = -1, nwrap = 0, rc;
	FILE *f;

	if (!a->output)
		return bad_usage("compile needs -o OUT.o%s", "");
	if (a->name && !is_c_ident(a->name))
		return bad_usage("--name takes a C identifier, not '%s'",
				 a->name);
	for (int t = 0; t < p->ntask; t++)
		if (a->task_s ? task_matches(a->task_s, &p->tasks[t])
			      : p->ntask == 1)
			task = t;
	if (task < 0) {
		if (!a->task_s)
			return bad_usage("compile needs --task J:T (the "
					 "cluster has several tasks)%s", "");
		fprintf(stderr, "tfgc: error: the cluster has no task '%s'\n",
			a->task_s);
		return 1;
	}
	for (int s = 0; s < p->nsig; s++)
		nwrap += cg_aot_standalone(p, task, s);
	if (nwrap == 0 && !a->shared) {
		fprintf(stderr, "tfgc: error: every run signature of %s needs "
			"other tasks, so it has no stand-alone function: use "
			"--shared and serve it with tfgc server --part\n",
			p->tasks[task].name);
		return 1;
	}
	hpath = header_path(p->arena, a->output);
	if (strcmp(hpath, a->output) == 0)
		return bad_usage("-o '%s' would be overwritten by the header: "
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
	cg_aot_header(f, p, task, aot.prefix, a->output);
	if (fclose(f) != 0) {
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", hpath,
			strerror(errno));
		return 1;
	}
	return 0;
}

/* What a server and a controller of one run must agree on: every
 * task's address, the cluster, the step timeout, the passes, --fetch
 * and the like. */
static void
common_args(PtrVec *v, const Args *a, Program *p)
{
	char buf[32];

	for (int t = 0; t < p->ntask; t++) {
		vec_push(p->arena, v, "--addr");
		vec_push(p->arena, v, arena_printf(p->arena, "%s=%s",
						   p->tasks[t].name,
						   p->tasks[t].addr));
	}
	if (a->cluster) {
		vec_push(p->arena, v, "--cluster");
		vec_push(p->arena, v, (void *)a->cluster);
	}
	if (a->step_timeout > 0) {
		snprintf(buf, sizeof buf, "%g", a->step_timeout);
		vec_push(p->arena, v, "--step-timeout");
		vec_push(p->arena, v, arena_strdup(p->arena, buf));
	}
	snprintf(buf, sizeof buf, "%g", a->heartbeat_timeout);
	vec_push(p->arena, v, "--heartbeat-timeout");
	vec_push(p->arena, v, arena_strdup(p->arena, buf));
	if (a->key) {
		vec_push(p->arena, v, "--cluster-key");
		vec_push(p->arena, v, (void *)a->key);
	}
	for (int i = 0; i < a->param.n; i++) {
		vec_push(p->arena, v, "--param");
		vec_push(p->arena, v, a->param.v[i]);
	}
	if (a->soft_placement)
		vec_push(p->arena, v, "--soft-placement");
	if (a->prefer_gpu)
		vec_push(p->arena, v, "--prefer-gpu");
	if (a->gpu_tf32)
		vec_push(p->arena, v, "--gpu-tf32");
	if (a->check_numerics)
		vec_push(p->arena, v, "--check-numerics");
	for (int i = 0; i < 3; i++)
		if (a->tls[i]) {
			static const char *const flag[3] = {
				"--tls-cert", "--tls-key", "--tls-ca"};

			vec_push(p->arena, v, (void *)flag[i]);
			vec_push(p->arena, v, (void *)a->tls[i]);
		}
	if (a->max_specs) {
		snprintf(buf, sizeof buf, "%d", a->max_specs);
		vec_push(p->arena, v, "--max-specs");
		vec_push(p->arena, v, arena_strdup(p->arena, buf));
	}
	if (a->verbose)
		vec_push(p->arena, v, "--verbose");
	for (int i = 0; i < PASS__N; i++)
		if (a->skip >> i & 1)
			vec_push(p->arena, v, arena_printf(p->arena, "-fno-%s",
							   pass_name(i)));
	for (int i = 0; i < a->fetch.n; i++) {
		vec_push(p->arena, v, "--fetch");
		vec_push(p->arena, v, a->fetch.v[i]);
	}
	for (int i = 0; i < a->feed.n; i++) {
		vec_push(p->arena, v, "--feed");
		vec_push(p->arena, v, a->feed.v[i]);
	}
	for (int i = 0; i < a->out.n; i++) {
		vec_push(p->arena, v, "--out");
		vec_push(p->arena, v, a->out.v[i]);
	}
	for (int i = 0; i < a->shape.n; i++) {
		vec_push(p->arena, v, "--shape");
		vec_push(p->arena, v, a->shape.v[i]);
	}
}

/* The arguments of every `tfgc server` that tfgc run starts (the task's
 * --job and --task follow); picked: --picked-ports. */
static char *const *
server_args(const Args *a, Program *p, int picked)
{
	PtrVec v = {0};

	vec_push(p->arena, &v, "server");
	vec_push(p->arena, &v, (void *)a->file);
	common_args(&v, a, p);
	if (a->restore) {
		vec_push(p->arena, &v, "--restore");
		vec_push(p->arena, &v, (void *)a->restore);
	}
	if (a->trace) { /* they record; this process collects */
		vec_push(p->arena, &v, "--trace");
		vec_push(p->arena, &v, "-");
	}
	if (picked)
		vec_push(p->arena, &v, "--picked-ports");
	vec_push(p->arena, &v, NULL);
	return (char *const *)v.v;
}

/* The controller a launched chief starts (spec/design.md "Launchers"):
 * `tfgc run --attach --stop` of the same program and cluster, with the
 * addresses the chief resolved, listening on the chief's host, which
 * the other tasks reach (127.0.0.1 would be their own machine). */
static char *const *
controller_args(const Args *a, Program *p, int chief)
{
	const char *addr = p->tasks[chief].addr;
	PtrVec v = {0};
	char buf[32];

	vec_push(p->arena, &v, "/proc/self/exe");
	vec_push(p->arena, &v, "run");
	vec_push(p->arena, &v, (void *)a->file);
	vec_push(p->arena, &v, "--attach");
	vec_push(p->arena, &v, "--stop");
	vec_push(p->arena, &v, "--listen");
	vec_push(p->arena, &v, arena_printf(p->arena, "%.*s:0",
					    (int)(strrchr(addr, ':') - addr),
					    addr));
	snprintf(buf, sizeof buf, "%g", a->startup_timeout);
	vec_push(p->arena, &v, "--startup-timeout");
	vec_push(p->arena, &v, arena_strdup(p->arena, buf));
	if (a->trace && strcmp(a->trace, "-") != 0) {
		vec_push(p->arena, &v, "--trace");
		vec_push(p->arena, &v, (void *)a->trace);
	}
	if (a->no_progress)
		vec_push(p->arena, &v, "--no-progress");
	if (a->progress_every >= 0) {
		snprintf(buf, sizeof buf, "%g", a->progress_every);
		vec_push(p->arena, &v, "--progress-every");
		vec_push(p->arena, &v, arena_strdup(p->arena, buf));
	}
	common_args(&v, a, p);
	vec_push(p->arena, &v, NULL);
	return (char *const *)v.v;
}

/* How often tfgc run --free-ports picks ports again when another process
 * took one between the pick and the task's listen (the last try reports
 * it as an error). */
#define PORT_TRIES 5

static int
cmd_run(Args *a, Program *p)
{
	TfgOptions o = runtime_options(a);
	int pick = a->free_ports && !a->attach, rc;

	if (a->log_placement)
		dump_placement_log(stderr, p);
	for (int try = 1;; try++) {
		if (pick && free_ports(p) < 0)
			return 1;
		o.picked_ports = pick && try < PORT_TRIES;
		rc = tfg_launch(p->plan, &o, "/proc/self/exe",
				server_args(a, p, o.picked_ports),
				(a->attach ? TFG_LAUNCH_ATTACH : 0) |
				(a->stop ? TFG_LAUNCH_STOP : 0));
		if (rc != TFG_EXIT_PORT_TAKEN || !o.picked_ports)
			return rc;
		if (a->verbose)
			fprintf(stderr, "tfg: a port was taken before its "
				"task listened; picking ports again\n");
	}
}

/* ------------------------------------------------------------------ fmt */

/* Replaces the file at path by text: a temporary file in the same
 * directory, renamed over it, so that a reader (or a crash) never sees
 * half a program.  Keeps the file's permissions; a symbolic link is
 * followed, and its target replaced. */
static int
fmt_write(Arena *ar, const char *path, const char *text, size_t len)
{
	char *real = realpath(path, NULL);
	const char *target = real ? real : path, *slash;
	char *tmp;
	struct stat st;
	size_t done = 0;
	int fd, err = 0;

	slash = strrchr(target, '/');
	tmp = slash ? arena_printf(ar, "%.*s.%s.fmt-XXXXXX",
				   (int)(slash - target + 1), target, slash + 1)
		    : arena_printf(ar, ".%s.fmt-XXXXXX", target);
	if (stat(target, &st) != 0 || (fd = mkstemp(tmp)) < 0) {
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", path,
			strerror(errno));
		free(real);
		return 1;
	}
	while (done < len && !err) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno != EINTR)
			err = errno;
		else if (w > 0)
			done += (size_t)w;
	}
	if (!err && fchmod(fd, st.st_mode & 07777) != 0)
		err = errno;
	if (close(fd) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, target) != 0)
		err = errno;
	if (err) {
		unlink(tmp);
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", path,
			strerror(err));
	}
	free(real);
	return err ? 1 : 0;
}

/* tfgc fmt [-w | --check] [FILE...] (spec §10.8 "Formatting"): each
 * program in the canonical layout on stdout; -w rewrites the files that
 * change; --check names those that would.  No FILE: standard input to
 * standard output.  A program that does not parse is reported and left
 * as it is.  Exit 1 after such a program, or with --check a file that is
 * not formatted. */
static int
cmd_fmt(int argc, char **argv)
{
	const char **files = calloc((size_t)argc, sizeof *files);
	int write = 0, check = 0, nfile = 0, rc = 0;

	if (!files) {
		fputs("tfgc: error: out of memory\n", stderr);
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "-w") == 0)
			write = 1;
		else if (strcmp(argv[i], "--check") == 0)
			check = 1;
		else if (argv[i][0] == '-' && argv[i][1])
			rc = bad_usage("fmt: unknown option '%s'", argv[i]);
		else
			files[nfile++] = argv[i];
		if (rc)
			break;
	}
	if (!rc && write && check)
		rc = bad_usage("fmt takes -w or --check, not both%s", "");
	if (nfile == 0)
		files[nfile++] = "-";
	for (int i = 0; !rc && i < nfile; i++)
		if (write && strcmp(files[i], "-") == 0)
			rc = bad_usage("fmt -w needs the FILEs to rewrite, not "
				       "standard input%s", "");
	if (rc) {
		free(files);
		return rc;
	}
	for (int i = 0; i < nfile; i++) {
		int in = strcmp(files[i], "-") == 0, e = 0;
		Arena *ar = arena_new();
		SrcFile *f = src_read(ar, in ? "/dev/stdin" : files[i], &e);
		char *out = NULL;
		size_t len = 0;
		Diag d;

		diag_init(&d, stderr);
		if (!f) {
			fprintf(stderr, "tfgc: error: cannot read '%s': %s\n",
				in ? "<stdin>" : files[i], strerror(e));
			rc = 1;
		} else {
			if (in)
				f->path = "<stdin>";
			out = lang_format(ar, f, &d, &len);
		}
		if (!out) {
			rc = 1; /* and nothing written */
		} else if (check) {
			if (len != f->len || memcmp(out, f->text, len) != 0) {
				printf("%s\n", f->path);
				rc = 1;
			}
		} else if (write) {
			if ((len != f->len || memcmp(out, f->text, len) != 0) &&
			    fmt_write(ar, files[i], out, len) != 0)
				rc = 1;
		} else {
			fwrite(out, 1, len, stdout);
		}
		arena_free(ar);
	}
	free(files);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "tfgc: error: cannot write the output: %s\n",
			strerror(errno));
		rc = 1;
	}
	return rc;
}

/* tfgc --version: tfgc's and its libraries' versions, and whether the
 * CUDA driver and NVRTC were found. */
static int
cmd_version(void)
{
	TfgGpuInfo gi;
	char err[512];
	int nv = cg_nvrtc_version(err, sizeof err);

	printf("tfgc %s\n", TFG_VERSION);
	printf("LLVM %s (ORC JIT), %s, %s\n", cg_llvm_version(),
	       openblas_get_config(), OpenSSL_version(OPENSSL_VERSION));
	if (tfg_gpu_probe(&gi) > 0)
		printf("CUDA driver %d.%d, %d GPU%s (%s)\n", gi.driver / 1000,
		       gi.driver % 1000 / 10, gi.count, gi.count == 1 ? "" : "s",
		       gi.name[0]);
	else
		printf("CUDA driver: none (%s)\n", gi.why);
	if (nv >= 0)
		printf("NVRTC %d.%d\n", nv / 1000, nv % 1000 / 10);
	else
		printf("NVRTC: none (%s)\n", err);
	return 0;
}

/* tfgc devices: what this machine offers a task (TF's
 * list_local_devices). */
static int
cmd_devices(void)
{
	TfgGpuInfo gi;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char err[512];
	int nv = cg_nvrtc_version(err, sizeof err);

	printf("/cpu:0: %ld core%s\n", ncpu, ncpu == 1 ? "" : "s");
	if (nv < 0)
		printf("nvrtc: none: %s\n", err);
	else
		printf("nvrtc: %d.%d\n", nv / 1000, nv % 1000 / 10);
	if (tfg_gpu_probe(&gi) == 0) {
		printf("no GPU: %s\n", gi.why);
		return 0;
	}
	for (int i = 0; i < gi.count; i++)
		printf("/gpu:%d: %s, sm_%d, %.1f GiB, CUDA driver %d.%d\n", i,
		       gi.name[i], gi.cc[i], (double)gi.mem[i] / (1 << 30),
		       gi.driver / 1000, gi.driver % 1000 / 10);
	return 0;
}

int
tfgc_main(int argc, char **argv)
{
	Arena *ar = arena_new();
	Args a = {0};
	Program p = {0};
	CompileOptions co = {0};
	ClusterEnv ce = {0};
	Diag d;
	int rc;

	diag_init(&d, stderr);
	if (argc >= 2 && strcmp(argv[1], "plot") == 0) {
		arena_free(ar); /* plot reads a CSV, not a program */
		return plot_main(argc - 1, argv + 1);
	}
	if (argc >= 2 && strcmp(argv[1], "fmt") == 0) {
		arena_free(ar);
		for (int i = 2; i < argc; i++)
			if (!strcmp(argv[i], "--help") ||
			    !strcmp(argv[i], "-h")) {
				fputs(usage, stdout);
				return 0;
			}
		return cmd_fmt(argc, argv);
	}
	if (argc == 2 && strcmp(argv[1], "devices") == 0) {
		arena_free(ar);
		return cmd_devices();
	}
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
		    (i == 1 && strcmp(argv[i], "help") == 0)) {
			fputs(usage, stdout);
			arena_free(ar);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			arena_free(ar);
			return cmd_version();
		}
	if ((rc = parse_args(&a, argc, argv, ar)) != 0) {
		arena_free(ar);
		return rc;
	}
	/* the cluster of --cluster or TF_CONFIG, for every command that
	   compiles the program (all but --emit=tokens) */
	if ((!a.emit || strcmp(a.emit, "tokens") != 0) &&
	    cluster_load(&ce, ar, a.cluster, &d) != 0) {
		arena_free(ar);
		return 1;
	}
	co.cluster = ce.cluster;
	co.cluster_from = ce.from;
	co.naddr = a.addr.n;
	co.skip = a.skip;
	co.prefer_gpu = a.prefer_gpu;
	co.addr = (const char **)a.addr.v;
	co.nshape = a.shape.n;
	co.shape = (const char **)a.shape.v;
	co.nparam = a.param.n;
	co.param = (const char **)a.param.v;
	if (strcmp(a.cmd, "run") == 0 || strcmp(a.cmd, "server") == 0 ||
	    strcmp(a.cmd, "compile") == 0) {
		co.nfetch = a.fetch.n, co.fetch = (const char **)a.fetch.v;
		co.nfeed = a.feed.n, co.feed = (const char **)a.feed.v;
		co.nout = a.out.n, co.out = (const char **)a.out.v;
	}
	if (strcmp(a.cmd, "emit") == 0) {
		rc = cmd_emit(&a, &p, &co, &d);
	} else if (strcmp(a.cmd, "compile") == 0) {
		rc = compile_file(&p, a.file, &co, &d) ? 1 : cmd_compile(&a, &p);
	} else if (strcmp(a.cmd, "check") == 0) {
		co.until = "plan";
		co.unknown_ok = 1; /* `?` dims are checked, not compiled */
		rc = compile_file(&p, a.file, &co, &d) ? 1 : 0;
	} else if (strcmp(a.cmd, "run") == 0 || strcmp(a.cmd, "server") == 0 ||
		   strcmp(a.cmd, "stop") == 0) {
		co.generic_ok = 1; /* `?` dims left: specialised per run */
		if (compile_file(&p, a.file, &co, &d)) {
			rc = 1;
		} else if (strcmp(a.cmd, "server") == 0) {
			rc = cmd_server(&a, &p, &ce);
		} else if (cluster_hosts(&ce, &p) < 0) {
			rc = 1; /* run, stop: tasks without a host are here */
		} else if (strcmp(a.cmd, "run") == 0) {
			rc = cmd_run(&a, &p);
		} else {
			TfgOptions o = runtime_options(&a);
			rc = tfg_stop(p.plan, &o);
		}
	} else {
		rc = bad_usage("unknown command '%s'", a.cmd);
	}
	jit_free_all();
	arena_free(p.arena);
	arena_free(ar);
	return rc;
}
