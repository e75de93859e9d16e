/*
 * compiler/cmd_run.c: tfgc run, which starts a server per task (or
 * attaches to running ones) and runs the sessions as their client, and
 * tfgc server, one task's server, from the command line to the
 * runtime's TfgOptions (spec/design.md "Processes", "Launchers").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "compiler/driver.h"

static char *const *controller_args(const Args *a, Program *p, int chief);

/* How often tfgc run --free-ports picks ports again when another process
 * took one between the pick and the task's listen (the last try reports
 * it as an error). */
#define PORT_TRIES 5

TfgOptions
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
	o.stats = a->stats;
	o.no_shm = a->no_shm;
	o.max_specs = a->max_specs;
	o.verbose = a->verbose;
	o.no_progress = a->no_progress;
	o.progress_every = a->progress_every;
	o.picked_ports = a->picked_ports;
	o.from_run = a->from_run ? 1 + a->free_ports : 0;
	o.run = a->run_id;
	o.controller_addr = a->listen; /* NULL: tfg_launch picks */
	return o;
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

/* tfgc server: the task of --job and --task, or, without them, the one
 * TF_CONFIG or the launcher's rank names, in a run the chief drives
 * (spec §10.6 "Launchers and cluster managers"). */
int
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

/* flag and value, for each value of vals: a repeated option again */
static void
push_each(Program *p, PtrVec *v, const char *flag, const PtrVec *vals)
{
	for (int i = 0; i < vals->n; i++) {
		vec_push(p->arena, v, (void *)flag);
		vec_push(p->arena, v, vals->v[i]);
	}
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
	if (a->no_shm)
		vec_push(p->arena, v, "--no-shm");
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
	push_each(p, v, "--fetch", &a->fetch);
	push_each(p, v, "--feed", &a->feed);
	push_each(p, v, "--out", &a->out);
	push_each(p, v, "--shape", &a->shape);
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

int
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

