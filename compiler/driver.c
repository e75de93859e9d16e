/*
 * compiler/driver.c: tfgc's command line: its arguments, and the
 * commands run from them (compiler/cmd_build.c emit and compile,
 * compiler/cmd_run.c run and server, compiler/cmd_fmt.c fmt; the
 * version and devices here).  The passes run in compiler/pipeline.c,
 * the server's compile callbacks (JIT, specialisations, --part) live in
 * compiler/jit.c, and --free-ports in compiler/ports.c.
 *
 * The commands and the options each takes are the table of
 * compiler/help.def, which the parser below reads (an option is what the
 * table names, for the commands it names, its value stored where the
 * row's SET column says), and from which compiler/help.c prints tfgc
 * --help, tfgc help COMMAND and the man page: see those for what each
 * does.
 *
 *   tfgc check|emit|run|server|stop|compile [OPTION]... FILE
 *   tfgc plot [OPTION]... FILE.csv     (compiler/plot.c draws it)
 *   tfgc fmt [-w | --check] [FILE...]  (lang/fmt.c formats)
 *   tfgc devices | tfgc help [COMMAND | --man | --ops | --op-facts]
 *   tfgc --version
 *
 * Exit status: 0 success, 1 errors in the program or at run time, 2 a bad
 * command line.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <zlib.h>

#include "codegen/codegen.h"
#include "compiler/driver.h"


char *openblas_get_config(void); /* OpenBLAS's cblas.h, which tfgc
				     otherwise does not need */


/* ---------------------------------------------------------- the commands */

/* An option that a's command does not take: another command's, or none
 * (with the nearest of the command's, where one is near); 2. */
int
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

/* What compiler/help.def's SET column says the parser does with an
 * option: where in Args its value goes. */
enum { SK_NONE, SK_FLAG, SK_STR, SK_VEC, SK_KV, SK_OWN };
typedef struct OptSet {
	int kind;
	size_t off; /* of the Args field */
} OptSet;
#define SET_NONE {SK_NONE, 0}
#define SET_OWN {SK_OWN, 0}
#define SET_FLAG(f) {SK_FLAG, offsetof(Args, f)}
#define SET_STR(f) {SK_STR, offsetof(Args, f)}
#define SET_VEC(f) {SK_VEC, offsetof(Args, f)}
#define SET_KV(f) {SK_KV, offsetof(Args, f)}
static const OptSet opt_set[OPT__N] = {
#define OPT(id, name, alias, arg, cmds, flags, set, line) [OPT_##id] = set,
#include "compiler/help.def"
};

/* The options whose SET is SET_OWN: a number or an address checked
 * here.  0, or 2 after a usage error. */
static int
own_option(Args *a, const HelpOpt *o, const char *s, const char *v)
{
	char *end;
	double t;
	long l;

	switch (o->id) {
	case OPT_NO_PASS: /* help_option checked the pass */
		a->skip |= 1u << pass_lookup(s + strlen(o->name));
		return 0;
	case OPT_GPU_ARCH:
		l = strtol(strncmp(v, "sm_", 3) == 0 ||
			   strncmp(v, "compute_", 8) == 0
			       ? strchr(v, '_') + 1 : v, &end, 10);
		if (*end || l < 50 || l > 200)
			return bad_usage(a, "--gpu-arch takes sm_NN (a compute "
					 "capability such as sm_90), not '%s'",
					 v);
		a->gpu_cc = (int)l;
		return 0;
	case OPT_RUN_ID:
		errno = 0;
		a->run_id = strtoull(v, &end, 16);
		if (strlen(v) != 16 || *end || errno || a->run_id == 0)
			return bad_usage(a, "--run-id takes 16 hex digits, not "
					 "'%s'", v);
		return 0;
	case OPT_LISTEN: {
		const char *c = strrchr(v, ':');

		l = c ? strtol(c + 1, &end, 10) : -1;
		if (!c || c == v || end == c + 1 || *end || l < 0 || l > 65535)
			return bad_usage(a, "--listen takes HOST:PORT (PORT 0: "
					 "any free one), not '%s'", v);
		a->listen = v;
		return 0;
	}
	case OPT_OPT_LEVEL:
		a->opt_level = (int)strtol(v, &end, 10);
		if (*end || a->opt_level < 0 || a->opt_level > 3)
			return bad_usage(a, "-O takes 0 to 3, not '%s'", v);
		return 0;
	case OPT_MAX_SPECS:
		l = strtol(v, &end, 10);
		if (*end || end == v || l < 1 || l > 100000)
			return bad_usage(a, "--max-specs takes a count from 1 "
					 "to 100000, not '%s'", v);
		a->max_specs = (int)l;
		return 0;
	case OPT_PROGRESS_EVERY:
		t = strtod(v, &end);
		if (*end || end == v || !(t >= 0) || t > 1e6)
			return bad_usage(a, "--progress-every takes a number "
					 "of seconds (0: only at epochs' "
					 "ends), not '%s'", v);
		a->progress_every = t;
		return 0;
	case OPT_STARTUP_TIMEOUT:
	case OPT_STEP_TIMEOUT:
	case OPT_HEARTBEAT_TIMEOUT:
		t = strtod(v, &end);
		if (*end || !(t > 0) || t > 1e6)
			return bad_usage(a, "a timeout is a number of seconds, "
					 "not '%s'", v);
		*(o->id == OPT_STARTUP_TIMEOUT ? &a->startup_timeout
		  : o->id == OPT_STEP_TIMEOUT ? &a->step_timeout
					      : &a->heartbeat_timeout) = t;
		return 0;
	default:
		return bad_usage(a, "internal error: option '%s' is SET_OWN in "
				 "compiler/help.def and has no case here",
				 o->name);
	}
}

/* Option o (as written: s), with value v where it takes one, into a.  0,
 * or 2 after a usage error. */
static int
set_option(Args *a, const HelpOpt *o, const char *s, const char *v,
	   Arena *ar)
{
	const OptSet *set = &opt_set[o->id];
	char *f = (char *)a + set->off;

	switch (set->kind) {
	case SK_FLAG:
		*(int *)f = 1;
		return 0;
	case SK_STR:
		*(const char **)f = v;
		return 0;
	case SK_KV:
		if (!strchr(v, '=') || *v == '=')
			return bad_usage(a, "%s takes %s, not '%s'", o->name,
					 o->arg, v);
		/* fall through */
	case SK_VEC:
		vec_push(ar, (PtrVec *)f, (void *)v);
		return 0;
	case SK_OWN:
		return own_option(a, o, s, v);
	default: /* answered before parsing, or by the command */
		return 0;
	}
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
		char *s = argv[i];
		const char *eq = strchr(s, '='), *v = NULL;
		size_t n = eq ? (size_t)(eq - s) : strlen(s);
		const HelpOpt *o;
		int rc;

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
		if ((rc = set_option(a, o, s, v, ar)) != 0)
			return rc;
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
