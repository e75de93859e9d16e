/*
 * runtime/serve.c: tfg_serve_part, the AOT task server
 * (spec/language.md §10.3 "Ahead-of-time compilation", spec/design.md
 * "AOT task servers"): a C program links a part object made by
 * `tfgc compile -o OUT.o` with libtfg.a and serves that task with the
 * runtime alone, as `tfgc server FILE --part OUT.so` would, without the
 * program file, the compiler or LLVM.
 *
 * Everything a server takes from the front end at start-up is in the
 * object: the part functions and arena sizes (TfgPartTable.sigs), and the
 * plan (TfgPartTable.plan, runtime/planimg.c), that is the cluster, the
 * edges, the run signatures, the variables, the sessions' programs and
 * the program's hash, which peers compare with their own.  So what is
 * left here is tfgc server's command line: which task (--job/--task,
 * else a launcher's rank, else the part's own), the addresses (--addr),
 * and the runtime's options; then tfg_server_main with a compile
 * callback that hands it the parts.
 *
 * What tfgc server reads through the compiler is refused with a message
 * that says what to do instead: --cluster FILE.json and TF_CONFIG (the
 * cluster is compiled in: give them to tfgc compile), and the chief of a
 * launched run (it starts `tfgc run --attach`, which needs tfgc).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"

static const char usage[] =
    "usage: %s [--job J --task T] [--addr /job:J/task:T=HOST:PORT]...\n"
    "       [--chief J:T|none] [--cluster-key FILE]\n"
    "       [--tls-cert FILE --tls-key FILE --tls-ca FILE]\n"
    "       [--startup-timeout S] [--step-timeout S] "
    "[--heartbeat-timeout S]\n"
    "       [--restore DIR] [--trace OUT.json|-] [--no-shm] [--verbose]\n"
    "serves its task's part, compiled by tfgc compile -o "
    "(spec/language.md 10.3)\n";

typedef struct Opts {
	const char *job, *task, *chief;
	int naddr;
	const char **addr;
	TfgOptions o;
} Opts;

static const char *prog = "server"; /* argv[0], for the usage */

static int
bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "tfgc: error: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	fprintf(stderr, usage, prog);
	return 2;
}

/* tfgc server's options that a compiled part's server takes; 0, or the
 * exit code. */
static int
parse(Opts *a, int argc, char **argv)
{
	a->o.startup_timeout = 30;
	a->o.heartbeat_timeout = 1.5;
	a->o.progress_every = -1;
	a->o.controller_addr = "127.0.0.1:0";
	if (argc > 0 && argv[0])
		prog = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i], *v;
		char name[64], *eq, *end;

		if (strcmp(s, "--verbose") == 0 || strcmp(s, "-v") == 0) {
			a->o.verbose = 1;
			continue;
		}
		if (strcmp(s, "--no-shm") == 0) {
			a->o.no_shm = 1;
			continue;
		}
		if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
			printf(usage, prog);
			return -1;
		}
		if (s[0] != '-')
			return bad_usage("unexpected argument '%s' (the "
					 "program is compiled in: no file)", s);
		snprintf(name, sizeof name, "%s", s);
		if ((eq = strchr(name, '=')) != NULL)
			*eq = '\0';
		v = eq ? s + (eq - name) + 1 : i + 1 < argc ? argv[++i] : NULL;
#define FLAG(n) (strcmp(name, n) == 0)
		if (FLAG("--cluster"))
			return bad_usage("%s: this server's cluster is compiled "
					 "in: give --cluster to tfgc compile, "
					 "and move tasks with --addr", name);
		if (!FLAG("--job") && !FLAG("--task") && !FLAG("--addr") &&
		    !FLAG("--chief") && !FLAG("--cluster-key") &&
		    !FLAG("--tls-cert") && !FLAG("--tls-key") &&
		    !FLAG("--tls-ca") && !FLAG("--restore") &&
		    !FLAG("--trace") && !FLAG("--startup-timeout") &&
		    !FLAG("--step-timeout") && !FLAG("--heartbeat-timeout"))
			return bad_usage("unknown option '%s'", s);
		if (v == NULL)
			return bad_usage("option '%s' needs a value", name);
		if (FLAG("--job"))
			a->job = v;
		else if (FLAG("--task"))
			a->task = v;
		else if (FLAG("--chief"))
			a->chief = v;
		else if (FLAG("--cluster-key"))
			a->o.cluster_key = v;
		else if (FLAG("--tls-cert"))
			a->o.tls_cert = v;
		else if (FLAG("--tls-key"))
			a->o.tls_key = v;
		else if (FLAG("--tls-ca"))
			a->o.tls_ca = v;
		else if (FLAG("--restore"))
			a->o.restore_dir = v;
		else if (FLAG("--trace"))
			a->o.trace_file = v;
		else if (FLAG("--addr")) {
			const char **na = realloc(a->addr, sizeof *na *
						  (size_t)(a->naddr + 1));
			if (na == NULL)
				return bad_usage("%s", "out of memory");
			a->addr = na;
			a->addr[a->naddr++] = v;
		} else {
			double t = strtod(v, &end);
			if (*end || end == v || !(t > 0) || t > 1e6)
				return bad_usage("a timeout is a number of "
						 "seconds, not '%s'", v);
			if (FLAG("--startup-timeout"))
				a->o.startup_timeout = t;
			else if (FLAG("--step-timeout"))
				a->o.step_timeout = t;
			else
				a->o.heartbeat_timeout = t;
		}
#undef FLAG
	}
	if (!a->job != !a->task)
		return bad_usage("give both --job J and --task T%s", "");
	return 0;
}

/* The task named "J:T" or "/job:J/task:T", or -1. */
static int
task_named(const TfgPlan *pl, const char *s, size_t n)
{
	char buf[256];

	for (int t = 0; t < pl->ntask; t++) {
		snprintf(buf, sizeof buf, "%s:%d", pl->tasks[t].job,
			 pl->tasks[t].index);
		if ((strlen(buf) == n && strncmp(s, buf, n) == 0) ||
		    (strlen(pl->tasks[t].name) == n &&
		     strncmp(s, pl->tasks[t].name, n) == 0))
			return t;
	}
	return -1;
}

/* --addr TASK=HOST:PORT into the plan's tasks; addresses without a host
 * (":2222") are this machine's, as for tfgc server outside Slurm.  The
 * strings are argv's or in *held (owned). */
static int
addresses(TfgPlan *pl, const Opts *a, char **held)
{
	for (int i = 0; i < a->naddr; i++) {
		const char *eq = strchr(a->addr[i], '=');
		int t = eq ? task_named(pl, a->addr[i],
					(size_t)(eq - a->addr[i])) : -1;
		if (!eq || !eq[1] || !strchr(eq, ':')) {
			fprintf(stderr, "tfgc: error: --addr '%s': expected "
				"/job:J/task:T=HOST:PORT\n", a->addr[i]);
			return 1;
		}
		if (t < 0) {
			fprintf(stderr, "tfgc: error: --addr '%s': the cluster "
				"has no such task\n", a->addr[i]);
			return 1;
		}
		pl->tasks[t].addr = eq + 1;
	}
	for (int t = 0; t < pl->ntask; t++) {
		if (pl->tasks[t].addr[0] != ':')
			continue;
		size_t n = strlen(pl->tasks[t].addr) + sizeof "localhost";
		if ((held[t] = malloc(n)) == NULL) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			return 1;
		}
		snprintf(held[t], n, "localhost%s", pl->tasks[t].addr);
		pl->tasks[t].addr = held[t];
	}
	return 0;
}

/* A launcher's rank: mpirun's, PMI's, srun's, in tfgc server's order
 * (compiler/cluster.c): the task of that index, or -1 when none is set,
 * -2 after reporting. */
static int
launcher_task(const TfgPlan *pl)
{
	static const char *const rank[3][2] = {
	    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	    {"PMI_RANK", "PMI_SIZE"},
	    {"SLURM_PROCID", "SLURM_NTASKS"}};

	for (int i = 0; i < 3; i++) {
		const char *r = getenv(rank[i][0]), *n = getenv(rank[i][1]);
		char *e1 = NULL, *e2 = NULL;
		long rv, nv;

		if (r == NULL)
			continue;
		rv = strtol(r, &e1, 10);
		nv = n ? strtol(n, &e2, 10) : -1;
		if (e1 == r || *e1 || rv < 0 || !n || e2 == n || *e2) {
			fprintf(stderr, "tfgc: error: %s='%s' and %s='%s' do "
				"not give a rank and a count\n", rank[i][0], r,
				rank[i][1], n ? n : "");
			return -2;
		}
		if (nv != pl->ntask || rv >= nv) {
			fprintf(stderr, "tfgc: error: the launcher started %ld "
				"process%s (%s), but the cluster has %d "
				"task%s: start one process per task\n", nv,
				nv == 1 ? "" : "es", rank[i][1], pl->ntask,
				pl->ntask == 1 ? "" : "s");
			return -2;
		}
		return (int)rv;
	}
	return -1;
}

/* The compile callback: the object's parts, checked against the plan as
 * tfgc server --part checks a shared object's. */
static int
hand_parts(void *cookie, const TfgPlan *plan, int task, RtPart *parts)
{
	const TfgPartTable *t = cookie;
	TfgError e;

	if (rt_part_check(t, "this server", plan, task, &e) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", e.msg);
		return 1;
	}
	for (int s = 0; s < plan->nsig; s++) {
		parts[s].fn = t->sigs[s].fn;
		parts[s].arena_size = (size_t)t->sigs[s].arena_size;
	}
	return 0;
}

/* The task to serve, or -1 after reporting; sets the launched run's
 * chief. */
static int
which_task(const TfgPlan *pl, const TfgPartTable *t, Opts *a)
{
	int task = -1, rank = -1, chief = -1;
	char want[256];

	if (a->job) {
		snprintf(want, sizeof want, "%s:%s", a->job, a->task);
		if ((task = task_named(pl, want, strlen(want))) < 0) {
			fprintf(stderr, "tfgc: error: the cluster has no task "
				"/job:%s/task:%s\n", a->job, a->task);
			return -1;
		}
	} else if (getenv("TF_CONFIG")) {
		fprintf(stderr, "tfgc: error: TF_CONFIG is set, but this "
			"server's cluster is compiled in and it reads no JSON: "
			"give TF_CONFIG to tfgc compile, and this server --job "
			"J --task T\n");
		return -1;
	} else if ((rank = launcher_task(pl)) == -2) {
		return -1;
	} else {
		task = rank >= 0 ? rank : t->task;
	}
	if (task != t->task) {
		fprintf(stderr, "tfgc: error: this server holds the part of "
			"%s, not of %s: link the part compiled with --task "
			"%s:%d\n", pl->tasks[t->task].name,
			pl->tasks[task].name, pl->tasks[task].job,
			pl->tasks[task].index);
		return -1;
	}
	/* launched (a rank): the first task is the chief by default, as
	   for tfgc server */
	if (a->chief && strcmp(a->chief, "none") != 0 &&
	    (chief = task_named(pl, a->chief, strlen(a->chief))) < 0) {
		fprintf(stderr, "tfgc: error: --chief '%s': the cluster has no "
			"such task (give J:T, /job:J/task:T or none)\n",
			a->chief);
		return -1;
	}
	if (!a->chief && rank >= 0)
		chief = 0;
	if (chief == task) {
		fprintf(stderr, "tfgc: error: %s is the chief of this launched "
			"run, which starts the controller (tfgc run --attach): "
			"serve the chief with tfgc server, or name another with "
			"--chief\n", pl->tasks[task].name);
		return -1;
	}
	if (chief >= 0) {
		a->o.launched = 1;
		a->o.chief = chief;
		if (a->o.trace_file) /* the chief's controller writes it */
			a->o.trace_file = "-";
	}
	return task;
}

TFG_API int
tfg_serve_part(int argc, char **argv, const TfgPartTable *t)
{
	Opts a = {0};
	TfgPlan *pl = NULL;
	TfgError e;
	char **held = NULL;
	int rc, task;

	if ((rc = parse(&a, argc, argv)) != 0) {
		free(a.addr);
		return rc < 0 ? 0 : rc;
	}
	if (t == NULL || t->magic != TFG_PART_MAGIC ||
	    t->version != TFG_PART_VERSION || t->plan == NULL) {
		fprintf(stderr, "tfgc: error: not a part table of this version "
			"of tfg (compile the part again with this tfgc)\n");
		free(a.addr);
		return 1;
	}
	if (tfg_plan_read(&pl, t->plan, (size_t)t->plan_size, &e) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", e.msg);
		free(a.addr);
		return 1;
	}
	rc = 1;
	if (pl->hash != t->hash || tfg_plan_digest(pl) != t->digest) {
		fprintf(stderr, "tfgc: error: the part table's plan is not "
			"the one its parts were compiled for\n");
		goto out;
	}
	if (pl->generic) { /* tfgc compile makes none */
		fprintf(stderr, "tfgc: error: the part table's plan has "
			"unknown dims: compile the part with --shape\n");
		goto out;
	}
	if (t->task < 0 || t->task >= pl->ntask) {
		fprintf(stderr, "tfgc: error: the part table's task %d is not "
			"in its cluster\n", t->task);
		goto out;
	}
	if ((held = calloc((size_t)pl->ntask, sizeof *held)) == NULL ||
	    addresses(pl, &a, held) != 0 || (task = which_task(pl, t, &a)) < 0)
		goto out;
	rc = tfg_server_main(pl, task, &a.o, hand_parts, (void *)t);
out:
	for (int i = 0; held && i < pl->ntask; i++)
		free(held[i]);
	free(held);
	tfg_plan_free(pl);
	free(a.addr);
	return rc;
}
