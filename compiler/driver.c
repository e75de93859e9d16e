/*
 * compiler/driver.c: tfgc's command line: its arguments and commands.
 * The passes run in compiler/pipeline.c, the server's compile callbacks
 * (JIT, specialisations, --part) live in compiler/jit.c, and
 * --free-ports in compiler/ports.c.
 *
 * The commands and the options each takes are the table of
 * compiler/help.def, which the parser below reads (an option is what the
 * table names, for the commands it names) and switches on, and from
 * which compiler/help.c prints tfgc --help, tfgc help COMMAND and the
 * man page: see those for what each does.
 *
 *   tfgc check|emit|run|server|stop|compile [OPTION]... FILE
 *   tfgc plot [OPTION]... FILE.csv     (compiler/plot.c draws it)
 *   tfgc fmt [-w | --check] [FILE...]  (lang/fmt.c formats)
 *   tfgc devices | tfgc help [COMMAND | --man | --ops] | tfgc --version
 *
 * Exit status: 0 success, 1 errors in the program or at run time, 2 a bad
 * command line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <zlib.h>

#include "codegen/codegen.h"
#include "compiler/compiler_int.h"

typedef struct Args {
	int cmd;           /* CMD_<ID> of compiler/help.def */
	const char *file, *emit, *job, *cpu;
	const char *output, *name, *part; /* compile, plot -o; compile --name;
					     server --part */
	const char *x, *y, *size; /* plot --x, --y, --size */
	const char *cluster; /* --cluster FILE.json */
	const char *restore; /* run, server --restore DIR */
	const char *key;     /* --cluster-key FILE, or run's own */
	int no_key;          /* run --no-cluster-key */
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
	int from_run;     /* server: --from-run, started by tfgc run (with
			     --free-ports too when its ports are picked) */
	uint64_t run_id;  /* run: its identity (not --attach); server:
			     --run-id, its run's (TfgOptions.run) */
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

/* A usage error of a's command: the message, the command's usage, and
 * where to read more (compiler/help.c); 2. */
#define bad_usage(a, ...) help_usage_error((a)->cmd, __VA_ARGS__)

/* ---------------------------------------------------------- the commands */

/* An option that a's command does not take: another command's, or none
 * (with the nearest of the command's, where one is near); 2. */
static int
unknown_option(const Args *a, const char *s, size_t n)
{
	unsigned cmds = help_option_cmds(s, n);
	int left = __builtin_popcount(cmds);
	char who[256] = "";
	const char *w;

	if (cmds) {
		for (int c = 0; c < CMD__N; c++)
			if (cmds >> c & 1) {
				size_t m = strlen(who);
				snprintf(who + m, sizeof who - m, "%s'tfgc %s'",
					 !m ? "" : --left > 1 ? ", " : " and ",
					 help_cmds[c].name);
			}
		return bad_usage(a, "'%.*s' is not an option of 'tfgc %s', but "
				 "of %s", (int)n, s, help_cmds[a->cmd].name,
				 who);
	}
	w = help_nearest_option(a->cmd, s, n);
	return bad_usage(a, "unknown option '%s'%s%s%s", s,
			 w ? "; did you mean '" : "", w ? w : "",
			 w ? "'?" : "");
}

static int
parse_args(Args *a, int argc, char **argv, Arena *ar)
{
	a->task = -1;
	a->opt_level = 2;
	a->startup_timeout = 30;
	a->step_timeout = 0;
	a->heartbeat_timeout = 1.5;
	a->progress_every = -1;
	for (int i = 2; i < argc; i++) {
		char *s = argv[i], *end;
		const char *eq = strchr(s, '='), *v = NULL;
		size_t n = eq ? (size_t)(eq - s) : strlen(s);
		const HelpOpt *o;
		double t;
		long l;

		if (s[0] != '-' || !s[1]) {
			if (a->file)
				return bad_usage(a, "unexpected argument '%s'",
						 s);
			a->file = s;
			continue;
		}
		if (!(o = help_option(a->cmd, s, n)))
			return unknown_option(a, s, n);
		if (o->arg && !(o->flags & OPTF_PREFIX)) {
			v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!v)
				return bad_usage(a, "option '%s' needs a value",
						 s);
		} else if (eq) {
			return bad_usage(a, "option '%.*s' takes no value",
					 (int)n, s);
		}
		switch (o->id) {
		case OPT_HELP:
		case OPT_VERSION:
		case OPT_MAN:
		case OPT_OPS:
		case OPT_OP_FACTS:
			break; /* tfgc_main, help_main answered them */
		case OPT_LOG_PLACEMENT:
			a->log_placement = 1;
			break;
		case OPT_FREE_PORTS:
			a->free_ports = 1;
			break;
		case OPT_ATTACH:
			a->attach = 1;
			break;
		case OPT_STOP:
			a->stop = 1;
			break;
		case OPT_NO_PROGRESS:
			a->no_progress = 1;
			break;
		case OPT_SOFT_PLACEMENT:
			a->soft_placement = 1;
			break;
		case OPT_PREFER_GPU:
			a->prefer_gpu = 1;
			break;
		case OPT_GPU_TF32:
			a->gpu_tf32 = 1;
			break;
		case OPT_CHECK_NUMERICS:
			a->check_numerics = 1;
			break;
		case OPT_PICKED_PORTS:
			a->picked_ports = 1; /* tfgc run to its servers */
			break;
		case OPT_FROM_RUN:
			a->from_run = 1; /* the same */
			break;
		case OPT_FMT_WRITE:
		case OPT_FMT_CHECK:
			break; /* cmd_fmt reads its own arguments */
		case OPT_RUN_PICKED:
			a->free_ports = 1; /* the same: its ports */
			break;
		case OPT_SHARED:
			a->shared = 1;
			break;
		case OPT_VERBOSE:
			a->verbose = 1;
			break;
		case OPT_NO_PASS: /* help_option checked the pass */
			a->skip |= 1u << pass_lookup(s + strlen(o->name));
			break;
		case OPT_EMIT:
			a->emit = v;
			break;
		case OPT_JOB:
			a->job = v;
			break;
		case OPT_CPU:
		case OPT_CPU_AOT:
			a->cpu = v;
			break;
		case OPT_OUTPUT:
		case OPT_PLOT_OUT:
			a->output = v;
			break;
		case OPT_NAME:
			a->name = v;
			break;
		case OPT_PART:
			a->part = v;
			break;
		case OPT_PLOT_X:
			a->x = v;
			break;
		case OPT_PLOT_Y:
			a->y = v;
			break;
		case OPT_PLOT_SIZE:
			a->size = v;
			break;
		case OPT_CLUSTER:
			a->cluster = v;
			break;
		case OPT_RESTORE:
			a->restore = v;
			break;
		case OPT_CLUSTER_KEY:
			a->key = v;
			break;
		case OPT_NO_CLUSTER_KEY:
			a->no_key = 1;
			break;
		case OPT_TLS_CERT:
			a->tls[0] = v;
			break;
		case OPT_TLS_KEY:
			a->tls[1] = v;
			break;
		case OPT_TLS_CA:
			a->tls[2] = v;
			break;
		case OPT_TRACE:
		case OPT_TRACE_TASK:
			a->trace = v;
			break;
		case OPT_CHIEF:
			a->chief = v;
			break;
		case OPT_TASK:
		case OPT_TASK_AOT:
		case OPT_TASK_INDEX:
			a->task_s = v;
			break;
		case OPT_GPU_ARCH:
			l = strtol(strncmp(v, "sm_", 3) == 0 ||
				   strncmp(v, "compute_", 8) == 0
				       ? strchr(v, '_') + 1 : v, &end, 10);
			if (*end || l < 50 || l > 200)
				return bad_usage(a, "--gpu-arch takes sm_NN (a "
						 "compute capability such as "
						 "sm_90), not '%s'", v);
			a->gpu_cc = (int)l;
			break;
		case OPT_RUN_ID:
			errno = 0;
			a->run_id = strtoull(v, &end, 16);
			if (strlen(v) != 16 || *end || errno || a->run_id == 0)
				return bad_usage(a, "--run-id takes 16 hex "
						 "digits, not '%s'", v);
			break;
		case OPT_LISTEN: {
			const char *c = strrchr(v, ':');

			l = c ? strtol(c + 1, &end, 10) : -1;
			if (!c || c == v || end == c + 1 || *end || l < 0 ||
			    l > 65535)
				return bad_usage(a, "--listen takes HOST:PORT "
						 "(PORT 0: any free one), not "
						 "'%s'", v);
			a->listen = v;
			break;
		}
		case OPT_ADDR:
			vec_push(ar, &a->addr, (void *)v);
			break;
		case OPT_FEED:
			if (!strchr(v, '=') || *v == '=')
				return bad_usage(a, "--feed takes NAME=FILE."
						 "npy, not '%s'", v);
			vec_push(ar, &a->feed, (void *)v);
			break;
		case OPT_SHAPE:
			if (!strchr(v, '=') || *v == '=')
				return bad_usage(a, "--shape takes NAME=D0,D1,"
						 "..., not '%s'", v);
			vec_push(ar, &a->shape, (void *)v);
			break;
		case OPT_PARAM:
			if (!strchr(v, '=') || *v == '=')
				return bad_usage(a, "--param takes NAME=VALUE, "
						 "not '%s'", v);
			vec_push(ar, &a->param, (void *)v);
			break;
		case OPT_FETCH:
			vec_push(ar, &a->fetch, (void *)v);
			break;
		case OPT_OUT:
			vec_push(ar, &a->out, (void *)v);
			break;
		case OPT_OPT_LEVEL:
			a->opt_level = (int)strtol(v, &end, 10);
			if (*end || a->opt_level < 0 || a->opt_level > 3)
				return bad_usage(a, "-O takes 0 to 3, not '%s'",
						 v);
			break;
		case OPT_MAX_SPECS:
			l = strtol(v, &end, 10);
			if (*end || end == v || l < 1 || l > 100000)
				return bad_usage(a, "--max-specs takes a count "
						 "from 1 to 100000, not '%s'",
						 v);
			a->max_specs = (int)l;
			break;
		case OPT_PROGRESS_EVERY:
			t = strtod(v, &end);
			if (*end || end == v || !(t >= 0) || t > 1e6)
				return bad_usage(a, "--progress-every takes a "
						 "number of seconds (0: only "
						 "at epochs' ends), not '%s'",
						 v);
			a->progress_every = t;
			break;
		case OPT_STARTUP_TIMEOUT:
		case OPT_STEP_TIMEOUT:
		case OPT_HEARTBEAT_TIMEOUT:
			t = strtod(v, &end);
			if (*end || !(t > 0) || t > 1e6)
				return bad_usage(a, "a timeout is a number of "
						 "seconds, not '%s'", v);
			if (o->id == OPT_STARTUP_TIMEOUT)
				a->startup_timeout = t;
			else if (o->id == OPT_STEP_TIMEOUT)
				a->step_timeout = t;
			else
				a->heartbeat_timeout = t;
			break;
		}
	}
	if (!a->file)
		return bad_usage(a, "no input file");
	if ((a->feed.n || a->out.n) && !a->fetch.n)
		return bad_usage(a, "--feed and --out go with --fetch");
	if (a->out.n && a->out.n != a->fetch.n)
		return bad_usage(a, "give one --out per --fetch, or none");
	if (a->restore && a->attach)
		return bad_usage(a, "--restore starts servers from a "
				 "checkpoint: give it to each 'tfgc server', "
				 "not to --attach");
	if (a->stop && !a->attach)
		return bad_usage(a, "--stop goes with run --attach (without "
				 "it, tfgc run stops the tasks it started)");
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
	o.from_run = a->from_run ? 1 + a->free_ports : 0;
	o.run = a->run_id;
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
	bad_usage(a, "--chief '%s': the cluster has no such task (give J:T, "
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
			return bad_usage(a, "server needs --job J and --task T, "
					 "or TF_CONFIG, or the rank a launcher "
					 "gives (OMPI_COMM_WORLD_RANK, "
					 "PMI_RANK, SLURM_PROCID)");
	} else if (!a->job || !a->task_s) {
		return bad_usage(a, "server needs both --job J and --task T");
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
	if (a->part) /* checked before the task's port is taken */
		return part_preload(a->part, p->plan, task) ? 1
		       : tfg_server_main(p->plan, task, &o, part_load, NULL);
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
static int
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
 * --job and --task follow); pick: tfgc run picked the ports, picked:
 * --picked-ports (not on the last try). */
static char *const *
server_args(const Args *a, Program *p, int pick, int picked)
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
	vec_push(p->arena, &v, "--from-run");
	vec_push(p->arena, &v, "--run-id");
	vec_push(p->arena, &v, arena_printf(p->arena, "%016llx",
					    (unsigned long long)a->run_id));
	if (pick)
		vec_push(p->arena, &v, "--free-ports");
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

/* Keyed by default (spec §10.1.1 "Cluster keys"): a run that starts its
 * tasks, given no key, no TLS and no --no-cluster-key, makes a random key
 * for them and this process.  It lives in a memfd that the servers
 * inherit and read as /proc/self/fd/N: never on a command line, never in
 * a file another user could read, gone with the last process of the
 * run.  0, or -1 (reported). */
static int
run_key(Args *a, Program *p)
{
	unsigned char key[32];
	const char *env = getenv("TFG_CLUSTER_KEY");
	size_t got = 0;
	int fd;

	if (a->key || a->no_key || a->tls[0] || (env && *env))
		return 0;
	while (got < sizeof key) {
		ssize_t r = getrandom(key + got, sizeof key - got, 0);
		if (r < 0 && errno != EINTR)
			goto fail;
		got += r > 0 ? (size_t)r : 0;
	}
	/* not close-on-exec: the servers inherit it */
	if ((fd = memfd_create("tfg-cluster-key", 0)) < 0)
		goto fail;
	if (write(fd, key, sizeof key) != (ssize_t)sizeof key) {
		close(fd);
		goto fail;
	}
	memset(key, 0, sizeof key);
	a->key = arena_printf(p->arena, "/proc/self/fd/%d", fd);
	return 0;
fail:
	fprintf(stderr, "tfgc: error: cannot make the run's cluster key: %s "
		"(give one with --cluster-key FILE, or run unkeyed with "
		"--no-cluster-key)\n", strerror(errno));
	return -1;
}

static int
cmd_run(Args *a, Program *p)
{
	TfgOptions o = runtime_options(a);
	/* the one task of a program without a cluster is dialed by this
	   run alone: any port does (spec §7.1 "The cluster") */
	int pick = (a->free_ports || (p->implicit && a->addr.n == 0)) &&
		   !a->attach, rc;

	if (a->log_placement)
		dump_placement_log(stderr, p);
	/* The run's identity: the servers it starts carry it in every
	   message, and refuse anyone else's (spec/design.md "Runs").
	   Attached runs have none: servers of tfgc server have none. */
	while (!a->attach && a->run_id == 0)
		if (getrandom(&a->run_id, sizeof a->run_id, 0) < 0 &&
		    errno != EINTR) {
			fprintf(stderr, "tfgc: error: cannot make the run's "
				"identity: %s\n", strerror(errno));
			return 1;
		}
	o.run = a->run_id;
	if (!a->attach && run_key(a, p) < 0)
		return 1;
	o.cluster_key = a->key;
	for (int try = 1;; try++) {
		if (pick && free_ports(p) < 0)
			return 1;
		o.picked_ports = pick && try < PORT_TRIES;
		rc = tfg_launch(p->plan, &o, "/proc/self/exe",
				server_args(a, p, pick, o.picked_ports),
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
	Args a = {.cmd = CMD_FMT};

	if (!files) {
		fputs("tfgc: error: out of memory\n", stderr);
		return 1;
	}
	for (int i = 2; i < argc && !rc; i++) {
		const char *s = argv[i];
		const HelpOpt *o;

		if (s[0] != '-' || !s[1]) {
			files[nfile++] = s;
		} else if (!(o = help_option(CMD_FMT, s, strlen(s)))) {
			rc = unknown_option(&a, s, strlen(s));
		} else {
			switch (o->id) {
			case OPT_FMT_WRITE:
				write = 1;
				break;
			case OPT_FMT_CHECK:
				check = 1;
				break;
			default: /* --help: help_asked answered it */
				break;
			}
		}
	}
	if (!rc && write && check)
		rc = bad_usage(&a, "fmt takes -w or --check, not both");
	if (nfile == 0)
		files[nfile++] = "-";
	for (int i = 0; !rc && i < nfile; i++)
		if (write && strcmp(files[i], "-") == 0)
			rc = bad_usage(&a, "fmt -w needs the FILEs to rewrite, "
				       "not standard input");
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

/* tfgc --version: tfgc's version, the libraries it links (LLVM,
 * OpenBLAS, zlib, OpenSSL's libcrypto and libssl), and whether the CUDA
 * driver and NVRTC, which it opens with dlopen, were found, with the
 * GPUs. */
static int
cmd_version(void)
{
	const char *blas = openblas_get_config(); /* "OpenBLAS 0.3.21 ..." */
	const char *sp = strchr(blas, ' ');
	int n = (int)(sp && strchr(sp + 1, ' ') ? strchr(sp + 1, ' ') - blas
						: (long)strlen(blas));
	TfgGpuInfo gi;
	char err[512];
	int nv = cg_nvrtc_version(err, sizeof err), ngpu = tfg_gpu_probe(&gi);

	printf("tfgc %s\n", TFG_VERSION);
	printf("LLVM %s (ORC JIT)\n", cg_llvm_version());
	if (blas[n])
		printf("%.*s (%s)\n", n, blas, blas + n + 1); /* the build */
	else
		printf("%s\n", blas);
	printf("zlib %s\n", zlibVersion());
	printf("%s\n", OpenSSL_version(OPENSSL_VERSION));
	if (gi.driver > 0)
		printf("CUDA driver %d.%d (libcuda): ", gi.driver / 1000,
		       gi.driver % 1000 / 10);
	else
		printf("CUDA driver: ");
	if (ngpu > 0)
		printf("%d GPU%s (%s%s)\n", gi.count, gi.count == 1 ? "" : "s",
		       gi.name[0], gi.count > 1 ? ", ..." : "");
	else
		printf("no GPU (%s)\n", gi.why);
	if (nv >= 0)
		printf("NVRTC %d.%d (libnvrtc)\n", nv / 1000, nv % 1000 / 10);
	else
		printf("NVRTC: not found (%s)\n", err);
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

/* The command's own help, or the version, when an argument asks:
 * its exit status, or -1. */
static int
help_asked(int cmd, int argc, char **argv)
{
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			help_print(stdout, cmd);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			return cmd_version();
		}
	return -1;
}

/* tfgc COMMAND: CMD_<ID>, or -1 after a usage error. */
static int
command(const char *s)
{
	const char *w;
	int c = help_command(s);

	if (c >= 0)
		return c;
	if (s[0] == '-') {
		help_usage_error(-1, "the command comes first, before '%s'", s);
		return -1;
	}
	w = help_nearest_command(s);
	help_usage_error(-1, "unknown command '%s'%s%s%s", s,
			 w ? "; did you mean '" : "", w ? w : "",
			 w ? "'?" : "");
	return -1;
}

int
tfgc_main(int argc, char **argv)
{
	Arena *ar;
	Args a = {0};
	Program p = {0};
	CompileOptions co = {0};
	ClusterEnv ce = {0};
	Diag d;
	int rc;

	if (argc < 2)
		return help_usage_error(-1, "no command given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		help_overview(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version();
	if ((a.cmd = command(argv[1])) < 0)
		return 2;
	if (a.cmd == CMD_HELP)
		return help_main(argc - 1, argv + 1);
	if ((rc = help_asked(a.cmd, argc, argv)) >= 0)
		return rc;
	if (a.cmd == CMD_DEVICES)
		return argc > 2 ? bad_usage(&a, "unexpected argument '%s'",
					    argv[2])
				: cmd_devices();
	if (a.cmd == CMD_FMT)
		return cmd_fmt(argc, argv);
	diag_init(&d, stderr);
	ar = arena_new();
	if ((rc = parse_args(&a, argc, argv, ar)) != 0) {
		arena_free(ar);
		return rc;
	}
	if (a.cmd == CMD_PLOT) { /* a CSV, not a program */
		PlotArgs pa = {a.file, a.output, a.x, a.y, a.size};

		arena_free(ar);
		return plot_main(&pa);
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
	co.nfetch = a.fetch.n, co.fetch = (const char **)a.fetch.v;
	co.nfeed = a.feed.n, co.feed = (const char **)a.feed.v;
	co.nout = a.out.n, co.out = (const char **)a.out.v;
	switch (a.cmd) {
	case CMD_EMIT:
		rc = cmd_emit(&a, &p, &co, &d);
		break;
	case CMD_COMPILE:
		rc = compile_file(&p, a.file, &co, &d) ? 1 : cmd_compile(&a, &p);
		break;
	case CMD_CHECK:
		co.until = "plan";
		co.unknown_ok = 1; /* `?` dims are checked, not compiled */
		rc = compile_file(&p, a.file, &co, &d) ? 1 : 0;
		break;
	case CMD_RUN:
	case CMD_SERVER:
	case CMD_STOP:
		co.generic_ok = 1; /* `?` dims left: specialised per run */
		if (compile_file(&p, a.file, &co, &d)) {
			rc = 1;
		} else if (a.cmd == CMD_SERVER) {
			rc = cmd_server(&a, &p, &ce);
		} else if (cluster_hosts(&ce, &p) < 0) {
			rc = 1; /* run, stop: tasks without a host are here */
		} else if (a.cmd == CMD_RUN) {
			rc = cmd_run(&a, &p);
		} else {
			TfgOptions o = runtime_options(&a);
			rc = tfg_stop(p.plan, &o);
		}
		break;
	default: /* devices, help, plot: above */
		rc = 2;
		break;
	}
	jit_free_all();
	arena_free(p.arena);
	arena_free(ar);
	return rc;
}
