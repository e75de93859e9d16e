/*
 * compiler/cluster.c: where the cluster and a server's task come from
 * when a cluster manager starts the processes
 * (spec §10.6 "Launchers and cluster managers", spec/design.md
 * "Launchers").
 *
 *   the cluster   --cluster FILE.json, else TF_CONFIG's "cluster", else
 *                 the program's cluster block
 *   the task      --job/--task, else TF_CONFIG's "task", else the rank
 *                 of the launcher that started the process: mpirun's
 *                 OMPI_COMM_WORLD_RANK, PMI_RANK (MPICH's hydra, srun
 *                 --mpi=pmi2), srun's SLURM_PROCID, rank r serving task
 *                 r of the cluster in order
 *   the hosts     an address without one (":2222") is on the node srun
 *                 put its rank on (the step's nodes from `scontrol show
 *                 hostnames`), else on this machine, "localhost"
 *
 * The launchers are tried in that order because an inner launcher's
 * variables are the ones that describe this process: mpirun run inside
 * an sbatch allocation inherits the batch step's SLURM_PROCID, 0 for
 * every rank.  Everything here runs before the server starts a thread,
 * so scontrol is run with a plain fork and exec.
 *
 * The checker's side of the cluster is here too: the program's cluster
 * block (or the JSON that replaces it) checked into Program.tasks.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compiler/compiler_int.h"

/* Seconds `scontrol show hostnames` may take: it expands a host list
 * locally, so this is only a bound. */
#define SCONTROL_SECS 10.0

/* ------------------------------------------------------------ JSON cluster */

/* A job name that device strings can spell
 * (spec §7.2 "Device strings"). */
static int
job_name_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '-')
			return 0;
	return 1;
}

/* The AST_CLUSTER of a JSON object of jobs, each an array of address
 * strings; NULL after reporting. */
static AstNode *
json_jobs(Arena *ar, const Json *j, const char *from, Diag *d)
{
	AstNode *c;
	int bad = 0;

	if (j->kind != JSON_OBJECT || j->n == 0) {
		diag_error(d, j->loc, "the cluster of %s must be an object of "
			   "jobs, each a list of \"host:port\" addresses, such "
			   "as {\"worker\": [\"w0:2222\", \"w1:2222\"]}; found "
			   "%s", from, j->kind == JSON_OBJECT
			   ? "no jobs" : json_kind_name(j->kind));
		return NULL;
	}
	c = arena_alloc(ar, sizeof *c);
	c->kind = AST_CLUSTER;
	c->loc = c->tok.loc = j->loc;
	c->n = j->n;
	c->list = arena_alloc(ar, sizeof *c->list * (size_t)j->n);
	for (int i = 0; i < j->n; i++) {
		const Json *v = j->items[i];
		AstNode *job = arena_alloc(ar, sizeof *job);

		if (!job_name_ok(j->keys[i])) {
			diag_error(d, j->keylocs[i], "job name \"%s\": a job "
				   "is named with letters, digits, '_' and "
				   "'-', as in device strings", j->keys[i]);
			bad = 1;
		}
		if (v->kind != JSON_ARRAY) {
			diag_error(d, v->loc, "job '%s' must be a list of "
				   "\"host:port\" addresses, not %s",
				   j->keys[i], json_kind_name(v->kind));
			if (strcmp(j->keys[i], "cluster") == 0 &&
			    v->kind == JSON_OBJECT)
				diag_note(d, j->keylocs[i], "a cluster file "
					  "holds the jobs alone, {\"ps\": "
					  "[...], \"worker\": [...]}; the "
					  "{\"cluster\": ..., \"task\": ...} "
					  "of TF_CONFIG goes in that variable");
			bad = 1;
			continue;
		}
		job->kind = AST_JOB;
		job->name = j->keys[i];
		job->tok.loc = job->loc = j->keylocs[i];
		job->n = v->n;
		job->list = arena_alloc(ar, sizeof *job->list *
					((size_t)v->n + 1));
		for (int t = 0; t < v->n; t++) {
			const Json *a = v->items[t];
			AstNode *s = arena_alloc(ar, sizeof *s);

			if (a->kind != JSON_STRING) {
				diag_error(d, a->loc, "an address is a string "
					   "\"host:port\", not %s",
					   json_kind_name(a->kind));
				bad = 1;
			}
			s->kind = AST_STRING;
			s->str = a->kind == JSON_STRING ? a->str : "";
			s->loc = s->tok.loc = a->loc;
			job->list[t] = s;
		}
		c->list[i] = job;
	}
	return bad ? NULL : c;
}

/* TF_CONFIG, as TensorFlow reads it: an object whose "cluster" (if any)
 * is an object of jobs, and whose "task" (if any) is {"type": JOB,
 * "index": N}, the index 0 when left out; its other members
 * ("environment", "rpc_layer", ...) are TensorFlow's business. */
static int
tf_config(ClusterEnv *ce, Arena *ar, const Json *j, Diag *d)
{
	const Json *cl, *task, *type, *index;

	if (j->kind != JSON_OBJECT) {
		diag_error(d, j->loc, "TF_CONFIG must be a JSON object such as "
			   "{\"cluster\": {...}, \"task\": {\"type\": "
			   "\"worker\", \"index\": 0}}, not %s",
			   json_kind_name(j->kind));
		return 1;
	}
	if ((cl = json_get(j, "cluster", NULL)) != NULL &&
	    (ce->cluster = json_jobs(ar, cl, "TF_CONFIG", d)) == NULL)
		return 1;
	if ((task = json_get(j, "task", NULL)) == NULL)
		return 0;
	if (task->kind != JSON_OBJECT) {
		diag_error(d, task->loc, "TF_CONFIG's \"task\" must be an "
			   "object such as {\"type\": \"worker\", \"index\": "
			   "0}, not %s", json_kind_name(task->kind));
		return 1;
	}
	type = json_get(task, "type", NULL);
	index = json_get(task, "index", NULL);
	if (!type || type->kind != JSON_STRING) {
		diag_error(d, type ? type->loc : task->loc, "TF_CONFIG's "
			   "\"task\" needs a \"type\", the name of its job, "
			   "as a string%s%s", type ? ", not " : "",
			   type ? json_kind_name(type->kind) : "");
		return 1;
	}
	if (index && (index->kind != JSON_NUMBER || !index->is_int ||
		      index->num < 0 || index->num > 1000000)) {
		diag_error(d, index->loc, "TF_CONFIG's task \"index\" must be a "
			   "whole number from 0 to 1000000");
		return 1;
	}
	ce->task = task;
	ce->task_type = type;
	ce->task_index = index ? (int)index->num : 0;
	return 0;
}

int
cluster_load(ClusterEnv *ce, Arena *ar, const char *path, Diag *d)
{
	const char *env = getenv("TF_CONFIG");
	const SrcFile *f;
	const Json *j;
	int err = 0;

	memset(ce, 0, sizeof *ce);
	ce->rank = -1;
	if (path) {
		if ((f = src_read(ar, path, &err)) == NULL) {
			diag_error(d, (SrcLoc){0}, "cannot read --cluster "
				   "'%s': %s", path, strerror(err));
			return 1;
		}
		ce->from = arena_printf(ar, "'%s'", path);
		if ((j = json_parse(ar, f, d)) == NULL ||
		    (ce->cluster = json_jobs(ar, j, ce->from, d)) == NULL)
			return 1;
	}
	/* unset or empty: no TF_CONFIG, as TensorFlow reads it */
	if (!env || env[strspn(env, " \t\r\n")] == '\0')
		return 0;
	f = src_from_string(ar, "TF_CONFIG", env);
	if ((j = json_parse(ar, f, d)) == NULL)
		return 1;
	if (path) {
		/* --cluster wins; TF_CONFIG's task still counts */
		const AstNode *mine = ce->cluster;

		if (tf_config(ce, ar, j, d))
			return 1;
		ce->cluster = mine;
		return 0;
	}
	if (tf_config(ce, ar, j, d))
		return 1;
	if (ce->cluster)
		ce->from = "TF_CONFIG";
	return 0;
}

/* --------------------------------------------------------------- the task */

/* The launchers whose rank names the task, innermost first (above). */
static const struct {
	const char *rank, *size, *size2; /* size2: if size is unset */
	const char *local;               /* ranks on this node, or NULL */
	const char *name;
	int slurm;
} launchers[] = {
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", NULL,
	 "OMPI_COMM_WORLD_LOCAL_SIZE", "mpirun", 0},
	{"PMI_RANK", "PMI_SIZE", NULL, "MPI_LOCALNRANKS", "the MPI launcher",
	 0},
	{"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", NULL, "srun",
	 1},
};

/* A count from the environment: >= 0, or -1 if name is unset; -2 (and
 * reported) if it is not a number. */
static long
env_count(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL)
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (end == v || *end || n < 0 || n > 1000000 || errno) {
		fprintf(stderr, "tfgc: error: %s='%s' is not a whole number\n", name,
			v);
		return -2;
	}
	return n;
}

/* The launcher's rank and size into ce (rank -1: no launcher); 1 after
 * reporting a malformed one. */
static int
launcher_rank(ClusterEnv *ce)
{
	for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++) {
		long rank = env_count(launchers[i].rank), size, local;
		const char *sname = launchers[i].size;

		if (rank == -1)
			continue;
		if (rank == -2)
			return 1;
		size = env_count(sname);
		if (size == -1 && launchers[i].size2)
			size = env_count(sname = launchers[i].size2);
		if (size == -1) {
			fprintf(stderr, "tfgc: error: %s is set but not %s: "
				"cannot tell how many processes %s started\n",
				launchers[i].rank, sname, launchers[i].name);
			return 1;
		}
		if (size == -2)
			return 1;
		if (rank >= size) {
			fprintf(stderr, "tfgc: error: %s=%ld is not below "
				"%s=%ld\n", launchers[i].rank, rank, sname,
				size);
			return 1;
		}
		local = launchers[i].local ? env_count(launchers[i].local) : -1;
		if (local == -2)
			return 1;
		ce->rank = (int)rank;
		ce->size = (int)size;
		ce->rank_var = launchers[i].rank;
		ce->size_var = sname;
		ce->launcher = launchers[i].name;
		ce->slurm = launchers[i].slurm;
		ce->all_local = local == size;
		return 0;
	}
	return 0;
}

/* TF_CONFIG's task, by job and index: its task index, or -1 after
 * reporting at the "task" object. */
static int
tf_task(const ClusterEnv *ce, const Program *p, Diag *d)
{
	const char *type = ce->task_type->str;
	char jobs[512];
	size_t k = 0;

	for (int j = 0; j < p->njob; j++) {
		if (strcmp(p->jobs[j].name, type) != 0)
			continue;
		if (ce->task_index < p->jobs[j].ntask)
			return p->jobs[j].first + ce->task_index;
		diag_error(d, ce->task->loc, "TF_CONFIG names task %d of job "
			   "'%s', which has %d task%s in the cluster of %s",
			   ce->task_index, type, p->jobs[j].ntask,
			   p->jobs[j].ntask == 1 ? "" : "s",
			   ce->from ? ce->from : "the program");
		return -1;
	}
	jobs[0] = '\0';
	for (int j = 0; j < p->njob && k < sizeof jobs; j++)
		k += (size_t)snprintf(jobs + k, sizeof jobs - k, "%s'%s'",
				      j ? ", " : "", p->jobs[j].name);
	diag_error(d, ce->task_type->loc, "TF_CONFIG names task type '%s', "
		   "which is not a job of the cluster of %s (it has %s)", type,
		   ce->from ? ce->from : "the program", jobs);
	return -1;
}

int
cluster_task(ClusterEnv *ce, const Program *p, Diag *d)
{
	if (ce->task)
		return tf_task(ce, p, d);
	if (launcher_rank(ce))
		return -1;
	if (ce->rank < 0)
		return -2;
	if (ce->size != p->ntask) {
		fprintf(stderr, "tfgc: error: %s started %d process%s (%s=%d), "
			"but the cluster has %d task%s (%s to %s): start one "
			"process per task\n", ce->launcher, ce->size,
			ce->size == 1 ? "" : "es", ce->size_var, ce->size,
			p->ntask, p->ntask == 1 ? "" : "s", p->tasks[0].name,
			p->tasks[p->ntask - 1].name);
		return -1;
	}
	return ce->rank;
}

/* -------------------------------------------------------------- the hosts */

/* The output of `scontrol show hostnames LIST`: one host a line, into
 * *out (arena); -1 after reporting. */
static int
scontrol_hostnames(Arena *ar, const char *list, PtrVec *out)
{
	char buf[65536];
	size_t n = 0;
	int fd[2], status = 0;
	struct timespec t0, t;
	pid_t pid;

	if (pipe(fd) < 0) {
		fprintf(stderr, "tfgc: error: cannot run scontrol: %s\n",
			strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == 0) {
		close(fd[0]);
		if (dup2(fd[1], 1) < 0)
			_exit(127);
		execlp("scontrol", "scontrol", "show", "hostnames", list,
		       (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		fprintf(stderr, "tfgc: error: cannot run scontrol: %s\n",
			strerror(errno));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf = {fd[0], POLLIN, 0};
		double left;
		ssize_t got;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = SCONTROL_SECS - (double)(t.tv_sec - t0.tv_sec) -
		       (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0) {
			fprintf(stderr, "tfgc: error: `scontrol show hostnames "
				"%s` did not answer within %g s\n", list,
				SCONTROL_SECS);
			kill(pid, SIGKILL);
			break;
		}
		got = read(fd[0], buf + n, sizeof buf - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
		if (n == sizeof buf - 1)
			break;
	}
	close(fd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "tfgc: error: `scontrol show hostnames %s` "
			"failed (%s %d): the hosts of the Slurm allocation are "
			"needed for the tasks whose address has none\n", list,
			WIFEXITED(status) ? "status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status)
					  : WTERMSIG(status));
		return -1;
	}
	buf[n] = '\0';
	for (char *s = buf, *e; *s; s = e) {
		e = s + strcspn(s, "\n");
		if (e > s)
			vec_push(ar, out, arena_strndup(ar, s, (size_t)(e - s)));
		if (*e)
			e++;
	}
	return 0;
}

/* SLURM_STEP_TASKS_PER_NODE, "2(x3),1": tasks on each node in order,
 * into out; -1 if malformed. */
static int
tasks_per_node(const char *s, int *out, int max, int *n)
{
	*n = 0;
	while (*s) {
		char *end;
		long k = strtol(s, &end, 10), rep = 1;

		if (end == s || k < 0)
			return -1;
		s = end;
		if (strncmp(s, "(x", 2) == 0) {
			rep = strtol(s + 2, &end, 10);
			if (end == s + 2 || *end != ')' || rep < 1)
				return -1;
			s = end + 1;
		}
		while (rep-- > 0) {
			if (*n == max)
				return -1;
			out[(*n)++] = (int)k;
		}
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return 0;
}

/* Under srun: the node of each rank, by srun's default block
 * distribution (ranks fill the step's nodes in order, each node taking
 * its count of SLURM_STEP_TASKS_PER_NODE), into host[0..size); -1 after
 * reporting. */
static int
slurm_hosts(Arena *ar, const ClusterEnv *ce, const char **host)
{
	const char *list = getenv("SLURM_STEP_NODELIST");
	const char *per = getenv("SLURM_STEP_TASKS_PER_NODE");
	const char *dist = getenv("SLURM_DISTRIBUTION");
	const char *me = getenv("SLURMD_NODENAME");
	PtrVec nodes = {0};
	int *count, ncount, r = 0;

	if (!list)
		list = getenv("SLURM_JOB_NODELIST");
	if (!per)
		per = getenv("SLURM_TASKS_PER_NODE");
	if (!list || !per) {
		fprintf(stderr, "tfgc: error: srun's rank is set, but not %s: "
			"cannot tell which node each task runs on\n",
			list ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_STEP_NODELIST");
		return -1;
	}
	if (dist && strncmp(dist, "block", 5) != 0) {
		fprintf(stderr, "tfgc: error: srun distributes the tasks "
			"'%s' (SLURM_DISTRIBUTION): for tasks without a host "
			"in the cluster, run srun with its default, block "
			"(-m block), or name the hosts\n", dist);
		return -1;
	}
	if (scontrol_hostnames(ar, list, &nodes) < 0)
		return -1;
	count = arena_alloc(ar, sizeof *count * ((size_t)nodes.n + 1));
	if (tasks_per_node(per, count, nodes.n, &ncount) < 0 ||
	    ncount != nodes.n) {
		fprintf(stderr, "tfgc: error: SLURM_STEP_TASKS_PER_NODE='%s' "
			"does not match the %d node%s of '%s'\n", per, nodes.n,
			nodes.n == 1 ? "" : "s", list);
		return -1;
	}
	for (int k = 0; k < nodes.n; k++)
		for (int i = 0; i < count[k] && r < ce->size; i++)
			host[r++] = nodes.v[k];
	if (r != ce->size) {
		fprintf(stderr, "tfgc: error: SLURM_STEP_TASKS_PER_NODE='%s' "
			"places %d tasks, but srun started %d\n", per, r,
			ce->size);
		return -1;
	}
	if (me && strcmp(me, host[ce->rank]) != 0) {
		fprintf(stderr, "tfgc: error: srun runs rank %d on '%s', not "
			"on '%s' where block distribution puts it: for tasks "
			"without a host in the cluster, run srun with -m block, "
			"or name the hosts\n", ce->rank, me, host[ce->rank]);
		return -1;
	}
	return 0;
}

int
cluster_hosts(const ClusterEnv *ce, Program *p)
{
	const char **host = NULL;
	int first = -1;

	for (int t = p->ntask - 1; t >= 0; t--)
		if (p->tasks[t].addr[0] == ':')
			first = t;
	if (first < 0)
		return 0;
	if (ce->rank >= 0 && ce->slurm) {
		host = arena_alloc(p->arena, sizeof *host * (size_t)ce->size);
		if (slurm_hosts(p->arena, ce, host) < 0)
			return -1;
	} else if (ce->rank >= 0 && !ce->all_local) {
		fprintf(stderr, "tfgc: error: %s does not say that it runs "
			"every process on this node, so the tasks whose "
			"address has no host (%s at '%s'%s) cannot be found: "
			"name their hosts in the cluster, --cluster or "
			"TF_CONFIG\n", ce->launcher, p->tasks[first].name,
			p->tasks[first].addr, first < p->ntask - 1 ? ", ..." : "");
		return -1;
	}
	for (int t = 0; t < p->ntask; t++) {
		if (p->tasks[t].addr[0] != ':')
			continue;
		p->tasks[t].addr = p->plan->tasks[t].addr = arena_printf(
		    p->arena, "%s%s", host ? host[t] : "localhost",
		    p->tasks[t].addr);
	}
	return 0;
}

/* ------------------------------------------- the program's cluster block */

/* What check_program does with the program's cluster
 * (spec §7.1 "The cluster"): the block, or --cluster's or TF_CONFIG's
 * JSON in its place, checked into Program.tasks; --addr overrides; the
 * one-task cluster of a program without one. */

/* HOST:PORT, split at the last colon; HOST may be left out (":2222"),
 * for the launcher to fill in (spec §7.1 "The cluster"). */
static int
check_address(Checker *c, AstNode *s)
{
	const char *str = s->str, *colon = strrchr(str, ':');
	char *end;
	long port;

	if (!colon) {
		diag_error(c->d, s->loc,
			   "invalid address '%s': expected host:port", str);
		return -1;
	}
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 1 || port > 65535 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
		diag_error(c->d, s->loc,
			   "invalid port in '%s': expected 1 to 65535", str);
		return -1;
	}
	return 0;
}

static void
check_cluster(Checker *c, AstNode *n)
{
	Program *p = c->p;
	int ntask = 0;

	for (int j = 0; j < n->n; j++)
		ntask += n->list[j]->n;
	p->jobs = arena_alloc(c->a, (n->n + 1) * sizeof *p->jobs);
	p->tasks = arena_alloc(c->a, (ntask + 1) * sizeof *p->tasks);
	for (int j = 0; j < n->n; j++) {
		AstNode *job = n->list[j];
		CJob *cj;
		for (int k = 0; k < p->njob; k++) {
			if (strcmp(p->jobs[k].name, job->name) == 0) {
				diag_error(c->d, job->tok.loc,
					   "job '%s' is defined twice",
					   job->name);
				diag_note(c->d, p->jobs[k].loc,
					  "first defined here");
			}
		}
		if (job->n == 0) {
			diag_error(c->d, job->tok.loc,
				   "job '%s' has no tasks: list at least one "
				   "address",
				   job->name);
			continue;
		}
		cj = &p->jobs[p->njob++];
		cj->name = job->name;
		cj->loc = job->tok.loc;
		cj->first = p->ntask;
		cj->ntask = job->n;
		for (int t = 0; t < job->n; t++) {
			AstNode *s = job->list[t];
			CTask *ct = &p->tasks[p->ntask++];
			check_address(c, s);
			for (int k = 0; k < p->ntask - 1; k++) {
				if (strcmp(p->tasks[k].addr, s->str) == 0) {
					diag_error(c->d, s->loc,
						   "address '%s' is listed "
						   "twice",
						   s->str);
					diag_note(c->d, p->tasks[k].loc,
						  "first listed here");
				}
			}
			ct->job = job->name;
			ct->index = t;
			ct->addr = s->str;
			ct->loc = s->loc;
			ct->name = arena_printf(c->a, "/job:%s/task:%d",
						job->name, t);
		}
	}
}

/* The cluster of --cluster or TF_CONFIG (o->cluster) in place of the
 * program's block (spec §10.6 "Launchers and cluster managers"): the
 * program's jobs, which its device strings name, must all be there, and
 * come first and in the program's order, so that "the first job" of
 * placement stays the program's whatever order the JSON lists them in
 * (Go's encoding/json, which writes Kubernetes' TF_CONFIG, sorts them);
 * the JSON's other jobs follow in its order. */
static AstNode *
json_cluster(Checker *c, const AstNode *prog)
{
	const CompileOptions *o = c->p->opt;
	const AstNode *js = o->cluster;
	AstNode *m = arena_alloc(c->a, sizeof *m);
	int *used = arena_alloc(c->a, sizeof *used * ((size_t)js->n + 1));

	*m = *js;
	m->n = 0;
	m->list = arena_alloc(c->a, sizeof *m->list * ((size_t)js->n + 1));
	for (int i = 0; prog && i < prog->n; i++) {
		const AstNode *job = prog->list[i];
		int k = 0;

		while (k < js->n && strcmp(js->list[k]->name, job->name) != 0)
			k++;
		if (k == js->n) {
			diag_error(c->d, js->loc, "the cluster of %s has no job "
				   "'%s', which the program's cluster block "
				   "defines", o->cluster_from, job->name);
			diag_note(c->d, job->tok.loc, "job '%s' is defined here",
				  job->name);
		} else if (!used[k]) {
			used[k] = 1;
			m->list[m->n++] = js->list[k];
		}
	}
	for (int k = 0; k < js->n; k++)
		if (!used[k])
			m->list[m->n++] = js->list[k];
	return m;
}

/* After an error about job `job` of a cluster that comes from JSON:
 * where that cluster, or the job in it, is written. */
void
check_cluster_note(Checker *c, const char *job)
{
	const CompileOptions *o = c->p->opt;

	if (!o || !o->cluster)
		return;
	for (int j = 0; job && j < c->p->njob; j++)
		if (strcmp(c->p->jobs[j].name, job) == 0) {
			diag_note(c->d, c->p->jobs[j].loc, "job '%s' of the "
				  "cluster of %s is defined here", job,
				  o->cluster_from);
			return;
		}
	diag_note(c->d, o->cluster->loc, "the cluster comes from %s",
		  o->cluster_from);
}

/* --addr /job:J/task:T=HOST:PORT: task T's address replaced
 * (spec §10 "Processes").  Done as soon as the cluster is made, so that
 * a session's grpc:// target (spec §8.1 "Session blocks") sees the
 * addresses the tasks listen on. */
static int
apply_addr(Program *p, const char *spec, Diag *d)
{
	const char *eq = strchr(spec, '='), *err;
	Device dv;
	int off, t;

	if (!eq || !eq[1]) {
		diag_error(d, (SrcLoc){0}, "--addr '%s': expected "
			   "/job:J/task:T=HOST:PORT", spec);
		return -1;
	}
	if (dev_parse(p->arena, &dv, arena_strndup(p->arena, spec, eq - spec),
		      &err, &off) < 0 || !dv.job) {
		diag_error(d, (SrcLoc){0}, "--addr '%s': expected "
			   "/job:J/task:T=HOST:PORT", spec);
		return -1;
	}
	if ((t = dev_task_index(p, dev_complete(p, dv))) < 0) {
		diag_error(d, (SrcLoc){0}, "--addr '%s': the cluster has no "
			   "such task", spec);
		return -1;
	}
	p->tasks[t].addr = eq + 1;
	return 0;
}

/* Without a cluster block a program has one task (spec §7.1 "The cluster"). */
static void
default_cluster(Checker *c)
{
	Program *p = c->p;

	p->jobs = arena_alloc(c->a, sizeof *p->jobs);
	p->tasks = arena_alloc(c->a, sizeof *p->tasks);
	p->njob = p->ntask = 1;
	p->jobs[0].name = "local";
	p->jobs[0].ntask = 1;
	p->tasks[0].job = "local";
	p->tasks[0].addr = "localhost:2222";
	p->tasks[0].name = "/job:local/task:0";
	p->implicit = 1;
}

int
check_program_cluster(Checker *c, AstNode *prog)
{
	Program *p = c->p;

	for (int i = 0; i < prog->n; i++) {
		AstNode *s = prog->list[i];
		if (s->kind != AST_CLUSTER)
			continue;
		if (c->cluster) {
			diag_error(c->d, s->loc, "a program has one cluster "
				   "block");
			diag_note(c->d, c->cluster->loc, "the first is here");
			continue;
		}
		c->cluster = s;
	}
	if (p->opt && p->opt->cluster)
		check_cluster(c, json_cluster(c, c->cluster));
	else if (c->cluster)
		check_cluster(c, (AstNode *)c->cluster);
	else
		default_cluster(c);
	if (p->njob == 0)
		return -1;
	for (int i = 0; p->opt && i < p->opt->naddr; i++)
		if (apply_addr(p, p->opt->addr[i], p->diag) < 0)
			return -1;
	return 0;
}
