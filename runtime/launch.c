/*
 * runtime/launch.c: the controller (`tfgc run`, `tfgc stop`).
 *
 * tfg_launch fork+execs one `tfgc server` per task (the child sets
 * PR_SET_PDEATHSIG before exec so that none outlives a killed controller,
 * and execs before touching anything, so that no thread of the parent
 * is needed in the child), pings
 * every task until it answers, runs the sessions in order through
 * RUN_SESSION (those of a group, parallel or session each, at once),
 * copies their OUTPUT to stdout, then shuts everything down.  With
 * TFG_LAUNCH_ATTACH it uses servers already running, and leaves them
 * running unless TFG_LAUNCH_STOP (`tfgc run --attach --stop`, the
 * controller of a launched chief) asks it to stop them at the end.
 *
 * The controller has its own listening socket (opt->controller_addr, port 0 by
 * default; `--listen`) and names its URL in the body of every message it
 * sends: the tasks answer there, so they must be able to reach it.  All
 * waits are loops of short receives, between which children are polled
 * with waitpid(WNOHANG): a task that dies is reported with its exit status
 * or signal instead of being waited for.  SIGINT/SIGTERM kill the children
 * from the handler itself (kill is async-signal-safe) and exit non-zero.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/role.h"
#include "runtime/trace.h"

#define SLICE 0.05
#define EXIT_POLL 0.002 /* seconds between looks for children's exits */
#define SHUTDOWN_GRACE 3.0 /* seconds for tasks to exit after SHUTDOWN */
#define REPING_SECS 1.0
#define SAY_ATTACHED 1.0 /* seconds of waiting for attached servers, and */
#define SAY_OWN 5.0      /* for those it started, before it says why */
#define HELD_WAIT 1.0 /* seconds for whoever holds a task's port to say
			 whose it is (port_held) */

/* child_exited's report: REPORT_BAD says only how those exited that
 * did not exit 0 (after SHUTDOWN), and returns 2 for them. */
#define REPORT_BAD 2

/* Children, for the signal handler: 0 once reaped. */
static volatile pid_t *ctl_pids;
static volatile int ctl_npid;

static void
ctl_on_signal(int sig)
{
	rt_bars_signal();
	for (int i = 0; i < ctl_npid; i++)
		if (ctl_pids[i] > 0)
			kill(ctl_pids[i], SIGKILL);
	_exit(128 + sig);
}

pid_t
rt_spawn(char *const *argv)
{
	pid_t parent = getpid(), pid;
	static const char msg[] = "tfgc: error: cannot execute ";

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		/* Only async-signal-safe calls until exec. */
		struct sigaction sa;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		sigaction(SIGPIPE, &sa, NULL);
		if (strchr(argv[0], '/'))
			execv(argv[0], argv);
		else
			execvp(argv[0], argv);
		if (write(2, msg, sizeof msg - 1) < 0 ||
		    write(2, argv[0], strlen(argv[0])) < 0 ||
		    write(2, "\n", 1) < 0)
			_exit(127);
		_exit(127);
	}
	return pid;
}

/* The tasks that tfg_launch starts share this machine's cores: each gets
 * cores / ntask threads (at least one) for its kernels and products
 * (TFG_THREADS, runtime/pool.c), unless the environment sets it.  Three
 * task processes on two cores each with two threads that spin while
 * they wait took turns with each other's spinning: asynchronous MNIST
 * (1 ps + 2 workers) made 1,200-1,490 global steps/s so, 1,550 with one
 * thread each.  OpenBLAS computes on the pool's threads (runtime/gemm.c):
 * OPENBLAS_NUM_THREADS=1, read when it loads, keeps it from making
 * threads of its own at all. */
static void
share_cores(int ntask)
{
	cpu_set_t set;
	char buf[16];
	int cores = 0, n;

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		cores = CPU_COUNT(&set);
	if (cores < 1)
		cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	n = ntask > 0 && cores / ntask > 1 ? cores / ntask : 1;
	snprintf(buf, sizeof buf, "%d", n);
	setenv("TFG_THREADS", buf, 0);
	setenv("OPENBLAS_NUM_THREADS", "1", 1);
}

/* What this machine must allow for the tasks of plan that tfg_launch
 * starts here (spec/design.md "Processes"): descriptors for the task
 * with the most links (three a peer: its own link, the one it accepts,
 * and the memfd of a ring of shared memory while it is offered, and the
 * controller's), and for the controller (three a task); processes and
 * threads (five a task at least: its main thread, its I/O thread, the
 * thread that reads its rings, an executor, a kernel thread).  Soft limits are raised to
 * what is needed, which children inherit; a hard limit too low is an
 * error that names it.  0, or 1 after saying why. */
static int
check_limits(const TfgPlan *plan)
{
	char *talks = calloc((size_t)plan->ntask + 1, 1);
	int most = 0, who = 0;
	unsigned long long fds, procs, have = 0;

	if (talks == NULL)
		return 0;
	for (int t = 0; t < plan->ntask; t++) {
		int n = 0;

		memset(talks, 0, (size_t)plan->ntask);
		rt_plan_peers(plan, t, talks);
		for (int i = 0; i < plan->ntask; i++)
			n += talks[i];
		if (n > most)
			most = n, who = t;
	}
	free(talks);
	fds = 3ULL * (unsigned)(most > plan->ntask ? most : plan->ntask) + 64;
	if (rt_limit_raise(RLIMIT_NOFILE, fds, &have) != 0) {
		fprintf(stderr, "tfgc: error: the cluster's %d tasks need up "
			"to %llu open descriptors in one process (%s talks to "
			"%d tasks, and this run's controller to all), and "
			"this machine allows %llu (the hard limit of open "
			"files, ulimit -Hn): raise it, or run fewer tasks "
			"here\n", plan->ntask, fds, plan->tasks[who].name,
			most, have);
		return 1;
	}
	procs = 5ULL * (unsigned)plan->ntask + 64;
	if (rt_limit_raise(RLIMIT_NPROC, procs, &have) != 0) {
		fprintf(stderr, "tfgc: error: the cluster's %d tasks need at "
			"least %llu processes and threads of this user (five "
			"a task), and this machine allows %llu (the hard "
			"limit of user processes, ulimit -Hu): raise it, or "
			"run fewer tasks here\n", plan->ntask, procs, have);
		return 1;
	}
	return 0;
}

/* `tfgc server` for task t: argv0, server_args, then --job J --task T. */
static pid_t
spawn(const char *argv0, char *const *server_args, const RtTask *t)
{
	char tbuf[32];
	char **argv;
	int n = 0, k = 0;
	pid_t pid;

	while (server_args && server_args[n])
		n++;
	if ((argv = calloc((size_t)n + 6, sizeof *argv)) == NULL)
		return -1;
	snprintf(tbuf, sizeof tbuf, "%d", t->index);
	argv[k++] = (char *)argv0;
	for (int i = 0; i < n; i++)
		argv[k++] = server_args[i];
	argv[k++] = "--job";
	argv[k++] = (char *)t->job;
	argv[k++] = "--task";
	argv[k++] = tbuf;
	argv[k] = NULL;
	pid = rt_spawn(argv);
	free(argv);
	return pid;
}

/* Reports a child that exited; returns 1 if one did.  With taken, a
 * child that exited with TFG_EXIT_PORT_TAKEN sets *taken instead of being
 * reported; with held, one that exited with TFG_EXIT_PORT_HELD sets
 * held[task] to the time instead, and does not count (wait_up finds out
 * who holds the port). */
static int
child_exited(const TfgPlan *plan, pid_t *pids, int report, int *taken,
	     double *held)
{
	int status, any = 0, bad;

	if (pids == NULL)
		return 0;
	for (int i = 0; i < plan->ntask; i++) {
		if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) !=
		    pids[i])
			continue;
		pids[i] = 0;
		if (held && WIFEXITED(status) &&
		    WEXITSTATUS(status) == TFG_EXIT_PORT_HELD) {
			held[i] = rt_now();
			continue;
		}
		if (!any)
			any = 1;
		bad = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		if (taken && WIFEXITED(status) &&
		    WEXITSTATUS(status) == TFG_EXIT_PORT_TAKEN)
			*taken = 1;
		else if (!report || (report == REPORT_BAD && !bad))
			continue;
		else if (report == REPORT_BAD)
			any = 2; /* one that should have exited 0 did not */
		else if (WIFSIGNALED(status))
			fprintf(stderr, "tfgc: error: task %s was killed by "
				"signal %d\n", plan->tasks[i].name,
				WTERMSIG(status));
		else
			fprintf(stderr, "tfgc: error: task %s exited with "
				"status %d\n", plan->tasks[i].name,
				WEXITSTATUS(status));
	}
	return any;
}

static void
send_simple(RtProc *c, int task, int type, uint32_t key)
{
	RtBuf *m;
	unsigned char *body;
	char text[RT_URL_MAX + 64];
	/* the reply URL; a PING's also names the run and this process, for
	   a task of another run to say whose it is (rt_refuse_ping) */
	int n = type == RT_MSG_PING
		? snprintf(text, sizeof text, "%s %016llx %ld", rt_proc_url(c),
			   (unsigned long long)rt_run, (long)getpid())
		: snprintf(text, sizeof text, "%s", rt_proc_url(c));
	TfgError e;

	if (n < 0 || (size_t)n >= sizeof text ||
	    rt_msg_new(c, NULL, &m, &body, type, 0, key, NULL, (size_t)n,
		       &e) != TFG_OK)
		return;
	memcpy(body, text, (size_t)n);
	/* The links queue while a peer is not up: this returns at
	 * once, and the wait for the answer carries the deadline. */
	rt_send(c, task, m, rt_now() + SLICE, NULL, &e);
}

/* Receives for at most one slice (bounded by deadline); returns 0 with a
 * message in *m, or -1. */
static int
recv_one(RtProc *c, RtMsg *m, double deadline)
{
	double left = deadline - rt_now();

	if (left > SLICE)
		left = SLICE;
	if (left < 0.001)
		left = 0.001;
	return rt_proc_next(c, m, NULL, left);
}

/* Whether a task whose port was in use (held[task], when its server
 * found it so) is to be reported now: a task of another run of this
 * program, or a server of it for attaching, holds the address when it
 * answers the PING with a refusal that says whose it is (wait_up); one
 * that has said nothing for HELD_WAIT is another process, said here. */
static int
port_held(RtProc *c, const double *held, int *nheld, double now)
{
	const TfgPlan *plan = c->plan;
	int n = 0;

	for (int i = 0; i < plan->ntask; i++)
		if (held[i] > 0) {
			char url[RT_URL_MAX];

			n++;
			if (now - held[i] < HELD_WAIT)
				continue;
			rt_url(url, sizeof url, plan->tasks[i].addr);
			fprintf(stderr, "tfgc: error: %s: cannot listen on %s: "
				"address in use (another process has that "
				"port: tfgc run --free-ports puts the tasks on "
				"free ports, or --addr %s=HOST:PORT moves this "
				"one)\n", plan->tasks[i].name, url,
				plan->tasks[i].name);
			return 1;
		}
	/* a PING to the holder at once, not at the next round */
	if (n > *nheld)
		for (int i = 0; i < plan->ntask; i++)
			if (held[i] > 0 && now - held[i] < SLICE)
				send_simple(c, i, RT_MSG_PING, 0);
	*nheld = n;
	return 0;
}

/* The inode of the socket listening on TCP port `port` of this machine
 * (/proc/net/tcp, tcp6), or 0. */
static unsigned long
listen_inode(int port)
{
	static const char *const tab[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	char line[512];

	for (int t = 0; t < 2; t++) {
		FILE *f = fopen(tab[t], "r");
		if (f == NULL)
			continue;
		while (fgets(line, sizeof line, f)) {
			char local[80];
			unsigned st;
			unsigned long inode;
			const char *colon;
			/* sl local rem st tx:rx tr:when retrnsmt uid timeout
			   inode */
			if (sscanf(line, " %*s %79s %*s %x %*s %*s %*s %*s %*s "
				   "%lu", local, &st, &inode) != 3 ||
			    st != 0x0A || !(colon = strrchr(local, ':')) ||
			    strtol(colon + 1, NULL, 16) != port)
				continue;
			fclose(f);
			return inode;
		}
		fclose(f);
	}
	return 0;
}

/* The process that has socket inode open (one that this user may look
 * into), or 0. */
static long
inode_owner(unsigned long inode)
{
	char path[300], link[64], want[64];
	DIR *proc = opendir("/proc");
	struct dirent *d;
	long found = 0;

	if (proc == NULL)
		return 0;
	snprintf(want, sizeof want, "socket:[%lu]", inode);
	while (!found && (d = readdir(proc)) != NULL) {
		DIR *fds;
		struct dirent *e;
		long pid = strtol(d->d_name, NULL, 10);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/fd", pid);
		if ((fds = opendir(path)) == NULL)
			continue;
		while (!found && (e = readdir(fds)) != NULL) {
			ssize_t r;
			snprintf(path, sizeof path, "/proc/%ld/fd/%s", pid,
				 e->d_name);
			r = readlink(path, link, sizeof link - 1);
			if (r > 0) {
				link[r] = '\0';
				found = strcmp(link, want) == 0 ? pid : 0;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

/* pid's parent, or 0. */
static long
parent_of(long pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	long ppid = 0;

	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(buf, sizeof buf, f) && (rp = strrchr(buf, ')')) != NULL)
		sscanf(rp + 1, " %*c %ld", &ppid);
	fclose(f);
	return ppid;
}

/* What process pid is: TFGC_RUN (tfgc run, not --attach), TFGC_SERVER,
 * or 0; *same: of the program (its .tfg argument, resolved) that this
 * process runs. */
enum { TFGC_RUN = 1, TFGC_SERVER };

static int
tfgc_role(long pid, int *same)
{
	char path[64], a[4096], b[4096];
	const char *tfg[2] = {NULL, NULL};
	int role = 0, attach = 0;
	FILE *f;

	*same = 0;
	for (int k = 0; k < 2; k++) {
		char *buf = k ? b : a;
		size_t n;
		if (k)
			snprintf(path, sizeof path, "/proc/self/cmdline");
		else
			snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
		if ((f = fopen(path, "r")) == NULL)
			return 0;
		n = fread(buf, 1, sizeof a - 1, f);
		fclose(f);
		buf[n] = '\0';
		for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
			const char *w = buf + i;
			size_t l = strlen(w);
			if (k == 0 && i > 0 && !role && strcmp(w, "run") == 0)
				role = TFGC_RUN;
			if (k == 0 && i > 0 && !role &&
			    strcmp(w, "server") == 0)
				role = TFGC_SERVER;
			if (k == 0 && strcmp(w, "--attach") == 0)
				attach = 1;
			if (l > 4 && strcmp(w + l - 4, ".tfg") == 0 && !tfg[k])
				tfg[k] = w;
		}
	}
	if (role == TFGC_RUN && attach)
		return 0;
	if (role && tfg[0] && tfg[1]) {
		char ra[4096], rb[4096], full[4200];
		/* its argument is relative to its own directory */
		if (tfg[0][0] != '/')
			snprintf(full, sizeof full, "/proc/%ld/cwd/%s", pid,
				 tfg[0]);
		else
			snprintf(full, sizeof full, "%s", tfg[0]);
		*same = realpath(full, ra) && realpath(tfg[1], rb) &&
			strcmp(ra, rb) == 0;
	}
	return role;
}

/* Task i refused this run's key: when its port is held by a process
 * other than the server this run started for it (own; -1: it starts
 * none, it attaches), another run's task, keyed by default, or a tfgc server refused
 * it before anything was said, so whose the port is comes from /proc.
 * Says it; 1, or 0 when it is not so or cannot tell. */
static int
say_holder(RtProc *c, int i, pid_t own)
{
	const char *name = c->plan->tasks[i].name,
		   *addr = c->plan->tasks[i].addr, *colon = strrchr(addr, ':');
	unsigned long inode = colon ? listen_inode(atoi(colon + 1)) : 0;
	long holder = inode ? inode_owner(inode) : 0,
	     run = holder ? parent_of(holder) : 0;
	int same_h, same_r, kind;
	char text[1024];

	if (!holder || holder == (long)own)
		return 0;
	if (run && tfgc_role(run, &same_r) == TFGC_RUN)
		kind = own == -1 ? RT_HELD_RUN : RT_HELD_OTHER_RUN;
	else if (tfgc_role(holder, &same_h) == TFGC_SERVER && own != -1)
		kind = RT_HELD_SERVER; /* attached to it: the refusal says why */
	else
		return 0;
	rt_holder_text(text, sizeof text, name, addr, kind,
		       kind == RT_HELD_SERVER ? same_h : same_r,
		       kind == RT_HELD_SERVER ? holder : run);
	fprintf(stderr, "tfgc: error: %s\n", text);
	return 1;
}

/* Says, for each task that is not up yet (and whose port is not held),
 * what the wait is for, once a wait has gone on for `after` seconds and
 * again when it changes: "tfgc: waiting for /job:local/task:0 at
 * localhost:2222: connection refused".  said[task] holds what was said. */
static void
say_waits(RtProc *c, const int *up, const double *held, char (*said)[64],
	  double waited)
{
	const TfgPlan *plan = c->plan;

	for (int i = 0; i < plan->ntask; i++) {
		char why[64];

		if (up[i] || held[i] > 0)
			continue;
		rt_peer_absent(c, i, why, sizeof why);
		if (strcmp(why, said[i]) == 0)
			continue;
		snprintf(said[i], sizeof said[i], "%s", why);
		fprintf(stderr, "tfgc: waiting for %s at %s: %s (%.0f of %g s; "
			"--startup-timeout)\n", plan->tasks[i].name,
			plan->tasks[i].addr, why, waited,
			c->opt.startup_timeout);
	}
}

static int
wait_up(RtProc *c, pid_t *pids)
{
	const TfgPlan *plan = c->plan;
	double start = rt_now(), deadline = start + c->opt.startup_timeout;
	double last = -1e9;
	/* servers of this run compile before they answer; attached ones
	   answer at once when they are up */
	double say_after = pids ? SAY_OWN : SAY_ATTACHED;
	char (*said)[64] = calloc((size_t)plan->ntask, sizeof *said);
	int *up = calloc((size_t)plan->ntask, sizeof *up), nup = 0, rc = 1;
	double *held = calloc((size_t)plan->ntask, sizeof *held);
	int taken = 0, nheld = 0, extended = 0;
	RtMsg m;

	if (up == NULL || held == NULL || said == NULL) {
		free(up);
		free(held);
		free(said);
		return 1;
	}
	for (;;) {
		double now = rt_now();

		if (now - last >= REPING_SECS) {
			for (int i = 0; i < plan->ntask; i++)
				if (!up[i])
					send_simple(c, i, RT_MSG_PING, 0);
			last = now;
		}
		if (child_exited(plan, pids, 1, c->opt.picked_ports ? &taken
				 : NULL, held)) {
			if (taken)
				rc = TFG_EXIT_PORT_TAKEN;
			break;
		}
		if (port_held(c, held, &nheld, now))
			break;
		if (now - start >= say_after && nup < plan->ntask)
			say_waits(c, up, held, said, now - start);
		if (nup == plan->ntask) {
			rc = 0;
			break;
		}
		for (int i = 0; i < plan->ntask && nup >= 0; i++) {
			char why[400];

			/* a task that refused this controller's key: at once,
			   not at the deadline */
			if (!up[i] && rt_peer_refused(c, i, why, sizeof why)) {
				if (!say_holder(c, i, pids ? pids[i] : -1))
					fprintf(stderr, "tfgc: error: %s\n",
						why);
				nup = -1;
			}
		}
		if (nup < 0)
			break;
		if (now >= deadline || rt_stop_requested) {
			for (int i = 0; i < plan->ntask; i++) {
				char url[RT_URL_MAX], why[64];

				if (up[i])
					continue;
				rt_url(url, sizeof url, plan->tasks[i].addr);
				rt_peer_absent(c, i, why, sizeof why);
				if (extended)
					fprintf(stderr, "tfgc: error: task %s "
						"did not come up within %g s of "
						"the last task that did (%.0f s "
						"in all; %s: %s)\n",
						plan->tasks[i].name,
						c->opt.startup_timeout,
						now - start, url, why);
				else
					fprintf(stderr, "tfgc: error: task %s "
						"did not come up within %g s "
						"(%s: %s)\n", plan->tasks[i].name,
						c->opt.startup_timeout, url, why);
			}
			break;
		}
		if (recv_one(c, &m, deadline) != 0)
			continue;
		if (m.h.type == RT_MSG_PONG && m.h.key == RT_PONG_REFUSED) {
			fputs("tfgc: error: ", stderr);
			for (uint64_t i = 0; i < m.h.nbytes && i < 600; i++)
				fputc(m.body[i] >= ' ' && m.body[i] <= '~' ?
				      m.body[i] : '?', stderr);
			fputc('\n', stderr);
			rt_msg_free(&m);
			break;
		}
		if (m.h.type == RT_MSG_PONG && m.h.nbytes == 8 &&
		    rt_get_le(m.body, 8) != plan->runs) {
			fprintf(stderr, "tfgc: error: %s runs other sessions "
				"than this run: its --fetch, --feed or --out "
				"differ (start the servers with the run's)\n",
				plan->tasks[m.h.src].name);
			rt_msg_free(&m);
			break;
		}
		if (m.h.type == RT_MSG_PONG && !up[m.h.src]) {
			up[m.h.src] = 1;
			nup++;
			/* servers of this run that keep coming up are no hang:
			   200 tasks on two cores take 20 s to start, most of
			   it each process faulting in the binary, so the
			   deadline counts from the last one up */
			if (pids && rt_now() + c->opt.startup_timeout >
					    deadline) {
				deadline = rt_now() + c->opt.startup_timeout;
				extended = 1;
			}
		}
		rt_msg_free(&m);
	}
	free(up);
	free(held);
	free(said);
	return rc;
}

/* A session of the group being run. */
typedef struct Running {
	int index;      /* in plan->sessions */
	int task;
	int done, bad;
	double heard;   /* when it was last heard from */
	double gone_at; /* when its task was first seen gone */
	int midline;    /* its output so far ends inside a line */
} Running;

/* Output of session r: with its label before each line when it runs in a
 * group, so that lines of sessions that run at once never mix and each
 * says whose it is. */
static void
write_out(const TfgPlan *plan, Running *r, const RtMsg *m)
{
	const char *label = plan->sessions[r->index].label;
	const char *p = (const char *)m->body, *end = p + m->h.nbytes;

	if (!label) {
		fwrite(p, 1, (size_t)(end - p), stdout);
	} else {
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *stop = nl ? nl + 1 : end;

			if (!r->midline)
				fprintf(stdout, "[%s] ", label);
			fwrite(p, 1, (size_t)(stop - p), stdout);
			r->midline = nl == NULL;
			p = stop;
		}
	}
	fflush(stdout);
}

/* Session r ended, bad or not; why (when not NULL) to stderr, with its
 * label when it runs in a group. */
static void
end_session(const TfgPlan *plan, RtBars *bars, Running *r, int bad,
	    const char *why, int n)
{
	const char *label = plan->sessions[r->index].label;

	rt_bars_hide(bars);
	if (r->midline)
		fputs("\n", stdout);
	r->midline = 0;
	fflush(stdout);
	rt_bars_end(bars, r->index);
	rt_bars_hide(bars);
	if (why)
		fprintf(stderr, "%s%s%s%.*s\n", label ? "[" : "",
			label ? label : "", label ? "] " : "", n, why);
	r->done = 1;
	r->bad = bad;
}

/* Whether a session's output ends inside a line. */
static int
any_midline(const Running *run, int n)
{
	for (int k = 0; k < n; k++)
		if (run[k].midline)
			return 1;
	return 0;
}

/* Runs sessions [first, last), one group (or one session alone), at
 * once; 0 when all ended well.  One whose task dies or goes silent fails
 * and the others go on; a session alone fails the run at once. */
static int
run_group(RtProc *c, int first, int last, pid_t *pids, RtBars *bars)
{
	const TfgPlan *plan = c->plan;
	int n = last - first, left = n, bad = 0;
	/* The client sends at least an empty OUTPUT every second between
	 * statements and while it waits; this much silence from a task that
	 * answers its heartbeats is a hang of the session. */
	double quiet = 2 * (c->opt.step_timeout > 0 ? c->opt.step_timeout
			    : 60) + c->opt.startup_timeout;
	Running *run = calloc((size_t)n, sizeof *run);
	RtMsg m;

	if (run == NULL)
		return 1;
	for (int k = 0; k < n; k++) {
		run[k].index = first + k;
		run[k].task = plan->sessions[first + k].task;
		run[k].heard = rt_now();
		send_simple(c, run[k].task, RT_MSG_RUN_SESSION,
			    (uint32_t)(first + k));
	}
	while (left > 0) {
		int died = child_exited(plan, pids, 1, NULL, NULL);

		for (int k = 0; k < n; k++) {
			Running *r = &run[k];
			const char *name = plan->tasks[r->task].name;
			char why[600], lost[300];

			if (r->done)
				continue;
			if (rt_now() - r->heard > quiet) {
				snprintf(why, sizeof why, "tfgc: error: no word "
					 "from %s for %g s during its session",
					 name, quiet);
				end_session(plan, bars, r, 1, why, (int)strlen(why));
			} else if ((died && n == 1) ||
				   (pids && pids[r->task] == 0)) {
				/* its task died: child_exited said how */
				end_session(plan, bars, r, 1, NULL, 0);
			} else if (rt_peer_lost(c, r->task, lost,
						sizeof lost)) {
				/* Give waitpid a moment to tell how it ended. */
				if (r->gone_at == 0)
					r->gone_at = rt_now();
				else if (pids == NULL ||
					 rt_now() - r->gone_at > 1.0) {
					snprintf(why, sizeof why, "tfgc: error: "
						 "%s during its session", lost);
					end_session(plan, bars, r, 1, why,
						    (int)strlen(why));
				}
			}
			if (r->done) {
				left--;
				bad |= r->bad;
			}
		}
		if (left == 0 || (bad && n == 1))
			break;
		rt_bars_tick(bars, any_midline(run, n));
		if (recv_one(c, &m, rt_now() + SLICE) != 0)
			continue;
		for (int k = 0; k < n; k++) {
			Running *r = &run[k];

			/* late PONGs and such are no session's */
			if (r->done || m.h.src != r->task ||
			    m.h.key != (uint32_t)r->index)
				continue;
			r->heard = rt_now();
			if (m.h.type == RT_MSG_OUTPUT && m.h.nbytes) {
				rt_bars_hide(bars);
				write_out(plan, r, &m);
				rt_bars_show(bars, any_midline(run, n));
			} else if (m.h.type == RT_MSG_PROGRESS) {
				rt_bars_take(bars, r->index, m.body,
					     (size_t)m.h.nbytes, r->midline);
			} else if (m.h.type == RT_MSG_SESSION_END) {
				end_session(plan, bars, r, m.h.nbytes > 0,
					    m.h.nbytes ? (const char *)m.body
						       : NULL,
					    (int)m.h.nbytes);
				left--;
				bad |= r->bad;
			}
		}
		rt_msg_free(&m);
	}
	free(run);
	return bad;
}

/* SHUTDOWN to every task, then BYE (or the child's exit) from each until
 * the deadline.  Returns the number of tasks that did not answer; *bad
 * (if not NULL) whether a child exited other than with status 0 (ASan
 * finding a leak at exit, say), reported. */
static int
shutdown_all(RtProc *c, pid_t *pids, double timeout, int report, int *bad)
{
	const TfgPlan *plan = c->plan;
	double deadline = rt_now() + timeout;
	int *bye = calloc((size_t)plan->ntask, sizeof *bye), left, missing = 0;
	RtMsg m;

	for (int i = 0; i < plan->ntask; i++)
		send_simple(c, i, RT_MSG_SHUTDOWN,
			    pids && pids[i] > 0 ? RT_SHUTDOWN_QUIET : 0);
	for (;;) {
		if (child_exited(plan, pids, REPORT_BAD, NULL, NULL) == 2 && bad)
			*bad = 1;
		left = 0;
		for (int i = 0; i < plan->ntask; i++)
			if (pids ? pids[i] > 0 : bye && !bye[i])
				left++;
		if (left == 0 || rt_now() >= deadline)
			break;
		/* children are waited for, in short slices: no message
		   says that one exited */
		if (recv_one(c, &m, pids ? rt_now() + EXIT_POLL : deadline) != 0)
			continue;
		if (m.h.type == RT_MSG_BYE && bye)
			bye[m.h.src] = 1;
		rt_msg_free(&m);
	}
	for (int i = 0; i < plan->ntask; i++) {
		char url[RT_URL_MAX];

		if (pids && pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
		if (bye && bye[i])
			continue;
		missing++;
		if (report) {
			rt_url(url, sizeof url, plan->tasks[i].addr);
			fprintf(stderr, "tfgc: error: task %s did not answer "
				"within %g s (%s)\n", plan->tasks[i].name,
				timeout, url);
		}
	}
	free(bye);
	return missing;
}

/* After a failure: children get SIGTERM, then SIGKILL. */
static void
stop_all(RtProc *c, pid_t *pids)
{
	double deadline = rt_now() + 1.0;
	struct timespec ts = {0, 10 * 1000000L};
	int left;

	for (int i = 0; i < c->plan->ntask; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	do {
		child_exited(c->plan, pids, 0, NULL, NULL);
		left = 0;
		for (int i = 0; i < c->plan->ntask; i++)
			left += pids[i] > 0;
		if (left)
			nanosleep(&ts, NULL);
	} while (left && rt_now() < deadline);
	for (int i = 0; i < c->plan->ntask; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
}

/* Where the controller takes the tasks' answers unless --listen says:
 * 127.0.0.1 when every task is on this machine's loopback, else the
 * address this machine reaches the first other task from (a UDP
 * socket's connect picks it, and sends nothing), port 0.  Tasks on
 * other hosts, or in other network namespaces, could not answer
 * 127.0.0.1. */
static const char *
ctl_listen(const TfgPlan *plan, char *buf, size_t n)
{
	for (int t = 0; t < plan->ntask; t++) {
		const char *a = plan->tasks[t].addr, *colon = strrchr(a, ':');
		char host[RT_URL_MAX], ip[INET6_ADDRSTRLEN];
		struct addrinfo hints, *ai = NULL;
		struct sockaddr_storage sa;
		socklen_t len = sizeof sa;
		int s, ok;

		if (!colon || (size_t)(colon - a) >= sizeof host)
			continue;
		snprintf(host, sizeof host, "%.*s", (int)(colon - a), a);
		if (strcmp(host, "localhost") == 0 ||
		    strncmp(host, "127.", 4) == 0 || strcmp(host, "[::1]") == 0 ||
		    strcmp(host, "0.0.0.0") == 0)
			continue;
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_INET;
		hints.ai_socktype = SOCK_DGRAM;
		if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
			continue;
		s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		ok = s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen) == 0 &&
		     getsockname(s, (struct sockaddr *)&sa, &len) == 0 &&
		     inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr,
			       ip, sizeof ip) != NULL;
		if (s >= 0)
			close(s);
		freeaddrinfo(ai);
		if (ok) {
			snprintf(buf, n, "%s:0", ip);
			return buf;
		}
	}
	return "127.0.0.1:0";
}

static int
ctl_open(RtProc *c, const TfgPlan *plan, const TfgOptions *opt)
{
	static char listen[RT_URL_MAX]; /* outlives this: c->opt names it */
	char url[RT_URL_MAX];
	TfgOptions o = *opt;
	TfgError e;
	tfg_status st;

	if (o.controller_addr == NULL)
		o.controller_addr = ctl_listen(plan, listen, sizeof listen);
	opt = &o;
	if ((st = rt_proc_init(c, plan, -1, opt)) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", st == TFG_ENOMEM
			? "out of memory" : "malformed plan: an edge's byte "
			"count disagrees with its dtype and shape");
		return 1;
	}
	rt_url(url, sizeof url, c->opt.controller_addr);
	if (rt_proc_open(c, url, &e) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", e.msg);
		rt_proc_free(c);
		return 1;
	}
	if (c->opt.verbose)
		fprintf(stderr, "tfg: controller: listening on %s\n",
			rt_proc_url(c));
	return 0;
}

/* One task's TRACE_DATA m into the trace f, its times moved into this
 * process's clock: by the offset of the task's clock that its "tfg-clock"
 * line and the TRACE's round trip (sent t0, answer at t1) tell, as NTP
 * estimates it; an offset within the estimate's error (half the round
 * trip, less the task's time) is none: so on one machine the times stay
 * exactly as taken.  0, or -1 if it cannot be written. */
static int
trace_part(FILE *f, const RtMsg *m, double t0, double t1)
{
	size_t n = (size_t)m->h.nbytes;
	char *s = malloc(n + 1), *p, *q;
	double r, x, off, rtt;
	int bad = 0;

	if (s == NULL)
		return -1;
	memcpy(s, m->body, n);
	s[n] = '\0';
	if (sscanf(s, "tfg-clock %lf %lf", &r, &x) != 2 ||
	    (p = strchr(s, '\n')) == NULL) {
		free(s);
		return 0; /* nothing usable: left out */
	}
	r *= 1e-9, x *= 1e-9, p++;
	off = ((r - t0) + (x - t1)) / 2;
	rtt = (t1 - t0) - (x - r);
	if (fabs(off) <= rtt / 2)
		off = 0;
	/* every "ts" of the task's events, moved (microseconds) */
	while (!bad && off != 0 && (q = strstr(p, "\"ts\":")) != NULL) {
		char *end;
		double ts = strtod(q + 5, &end);

		bad = fwrite(p, 1, (size_t)(q + 5 - p), f) != (size_t)(q + 5 - p) ||
		      fprintf(f, "%.3f", ts - off * 1e6) < 0;
		p = end;
	}
	if (!bad && fputs(p, f) < 0)
		bad = 1;
	free(s);
	return bad ? -1 : 0;
}

/* A message of type (TRACE, STATS: its body the reply URL) to every
 * task still up (pids[i] 0: exited, marked in gone[i] if not NULL);
 * how many were sent. */
static int
ask_tasks(RtProc *c, const pid_t *pids, int type, int *gone)
{
	size_t n = strlen(rt_proc_url(c));
	int sent = 0;

	for (int i = 0; i < c->plan->ntask; i++) {
		RtBuf *b;
		unsigned char *body;
		TfgError e;

		if (pids && pids[i] == 0) {
			if (gone)
				gone[i] = -1;
			continue;
		}
		if (rt_msg_new(c, NULL, &b, &body, type, 0, 0, NULL, n, &e) !=
		    TFG_OK)
			continue;
		memcpy(body, rt_proc_url(c), n);
		if (rt_send(c, i, b, rt_now() + SLICE, NULL, &e) == TFG_OK)
			sent++;
	}
	return sent;
}

/* --trace FILE (spec/design.md "Traces"): TRACE to every task, its
 * events back in this process's clock, and one Chrome trace-event file of
 * them all, a process (a track) per task.  0, or 1 after saying why. */
static int
write_trace(RtProc *c, pid_t *pids)
{
	const TfgPlan *plan = c->plan;
	const char *path = c->opt.trace_file;
	double deadline = rt_now() + c->opt.startup_timeout;
	int left = 0, *got = calloc((size_t)plan->ntask, sizeof *got), bad = 0;
	FILE *f = fopen(path, "w");
	double sent = rt_trace_clock();
	RtMsg m;

	if (f == NULL || got == NULL) {
		fprintf(stderr, "tfgc: error: cannot write the trace %s: %s\n",
			path, strerror(errno));
		if (f)
			fclose(f);
		free(got);
		return 1;
	}
	fprintf(f, "{\"traceEvents\": [\n");
	left = ask_tasks(c, pids, RT_MSG_TRACE, got);
	while (left > 0 && rt_now() < deadline && !rt_stop_requested) {
		if (recv_one(c, &m, deadline) != 0)
			continue;
		if (m.h.type == RT_MSG_TRACE_DATA && !got[m.h.src]) {
			got[m.h.src] = m.h.key ? 1 : -2;
			left--;
			if (trace_part(f, &m, sent, rt_trace_clock()) != 0)
				bad = 1;
		}
		rt_msg_free(&m);
	}
	/* a track per task, named; the metadata last, as it ends the list
	   without a comma */
	for (int i = 0; i < plan->ntask; i++)
		fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\","
			"\"pid\":%d,\"args\":{\"name\":\"%s%s\"}},\n"
			"{\"name\":\"process_sort_index\",\"ph\":\"M\","
			"\"pid\":%d,\"args\":{\"sort_index\":%d}}%s\n", i,
			plan->tasks[i].name, got[i] == 1 ? "" :
			" (its trace did not come)", i, i,
			i + 1 < plan->ntask ? "," : "");
	fprintf(f, "], \"displayTimeUnit\": \"ms\"}\n");
	if (fclose(f) != 0 || bad) {
		fprintf(stderr, "tfgc: error: cannot write the trace %s: %s\n",
			path, strerror(errno));
		free(got);
		return 1;
	}
	for (int i = 0; i < plan->ntask; i++)
		if (got[i] != 1)
			fprintf(stderr, "tfgc: warning: the trace %s has nothing "
				"from %s (%s)\n", path, plan->tasks[i].name,
				got[i] == -1 ? "it exited" : got[i] == -2 ?
				"it does not record: start it with tfgc server "
				"--trace -" : "no answer");
	free(got);
	return 0;
}

/* n bytes as "1.2 MB". */
static void
stats_bytes(char *buf, size_t cap, unsigned long long n)
{
	static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
	double v = (double)n;
	int u = 0;

	while (v >= 1000 && u < 4)
		v /= 1000, u++;
	if (u == 0)
		snprintf(buf, cap, "%llu B", n);
	else
		snprintf(buf, cap, "%.1f %s", v, unit[u]);
}

/* One direction of a link, "from -> to": what the sender counted, or
 * what the receiver did if the sender did not answer. */
static void
stats_dir(char *buf, size_t cap, const uint64_t *sent, const uint64_t *got)
{
	const uint64_t *v = sent ? sent : got;
	char b[32];

	stats_bytes(b, sizeof b, v ? (unsigned long long)v[1] : 0);
	snprintf(buf, cap, "%8llu msgs %10s", v ? (unsigned long long)v[0]
						: 0ULL, b);
}

/* --stats (spec/design.md "Link counts"): STATS to every task still up,
 * and a line per pair of tasks that exchanged messages, with the
 * messages and bytes each way, then the controller's own. */
static void
write_stats(RtProc *c, pid_t *pids)
{
	const TfgPlan *plan = c->plan;
	int nt = plan->ntask, left = 0, links = 0, width = 10, dialed = 0, shm = 0;
	/* cnt[(i * nt + j) * 4 + 0..3]: i's counts of j (om ob im ib) */
	uint64_t *cnt = calloc((size_t)nt * (size_t)nt * 4, sizeof *cnt);
	char *got = calloc((size_t)nt, 1);
	double deadline = rt_now() + c->opt.startup_timeout;
	RtMsg m;

	if (cnt == NULL || got == NULL) {
		free(cnt);
		free(got);
		fprintf(stderr, "tfgc: error: out of memory for --stats\n");
		return;
	}
	left = ask_tasks(c, pids, RT_MSG_STATS, NULL);
	while (left > 0 && rt_now() < deadline && !rt_stop_requested) {
		if (recv_one(c, &m, deadline) != 0)
			continue;
		if (m.h.type == RT_MSG_STATS_DATA && !got[m.h.src]) {
			const char *t = (const char *)m.body,
				   *end = t + m.h.nbytes;
			int d, sh, k;

			got[m.h.src] = 1;
			left--;
			if (sscanf(t, "dialed %d shm %d%n", &d, &sh, &k) == 2 &&
			    t + k <= end)
				dialed += d, shm += sh;
			while (t < end) {
				unsigned long long v[4];
				int j, k;

				if (sscanf(t, "%d %llu %llu %llu %llu%n", &j,
					   &v[0], &v[1], &v[2], &v[3], &k) == 5
				    && j >= 0 && j < nt && t + k <= end)
					for (int x = 0; x < 4; x++)
						cnt[((size_t)m.h.src * nt + j)
						    * 4 + x] = v[x];
				while (t < end && *t++ != '\n')
					;
			}
		}
		rt_msg_free(&m);
	}
	for (int i = 0; i < nt; i++) {
		int w = (int)strlen(plan->tasks[i].name);

		if (w > width)
			width = w;
	}
	fprintf(stderr, "tfgc: links of the run (--stats), messages and "
		"bytes each way:\n");
	for (int i = 0; i < nt; i++)
		for (int j = i + 1; j < nt; j++) {
			const uint64_t *ij = &cnt[((size_t)i * nt + j) * 4],
				       *ji = &cnt[((size_t)j * nt + i) * 4];
			char a[64], b[64];

			if (!(ij[0] | ij[2] | ji[0] | ji[2]))
				continue;
			links++;
			/* i -> j: i's sends, else j's receipts */
			stats_dir(a, sizeof a, got[i] ? ij : NULL,
				  got[j] ? ji + 2 : NULL);
			stats_dir(b, sizeof b, got[j] ? ji : NULL,
				  got[i] ? ij + 2 : NULL);
			fprintf(stderr, "  %-*s -> %-*s %s   back %s\n", width,
				plan->tasks[i].name, width, plan->tasks[j].name,
				a, b);
		}
	for (int i = 0; i < nt; i++) {
		const RtPeer *q = &c->peers[i];
		uint64_t out[2] = {q->out_msgs, q->out_bytes},
			 in[2] = {q->in_msgs, q->in_bytes};
		char a[64], b[64];

		stats_dir(a, sizeof a, out, NULL);
		stats_dir(b, sizeof b, in, NULL);
		fprintf(stderr, "  %-*s -> %-*s %s   back %s\n", width,
			"controller", width, plan->tasks[i].name, a, b);
	}
	fprintf(stderr, "tfgc: %d of the %d pairs of tasks exchanged "
		"messages, over %d connections", links, nt * (nt - 1) / 2,
		dialed);
	if (shm > 0)
		fprintf(stderr, " (%d of them through shared memory)", shm);
	for (int i = 0; i < nt; i++)
		if (!got[i])
			fprintf(stderr, "; %s did not answer (its links are "
				"counted by its peers)", plan->tasks[i].name);
	fprintf(stderr, "\n");
	free(cnt);
	free(got);
}

/* tfgc run --restore DIR: the checkpoint read and checked here, before
 * any task starts, so that what is wrong with it, or what of it the
 * program leaves out, is said once rather than by every task (each of
 * which reads it again, and says nothing of it when it starts from a
 * run: TfgOptions.from_run). */
static int
check_restore(const TfgPlan *plan, const TfgOptions *opt)
{
	RtTensor **val = calloc((size_t)plan->nvar + 1, sizeof *val);
	char note[600];
	TfgError e;
	int rc = 0;

	if (val == NULL)
		return 1;
	if (rt_ckpt_load(plan, opt->restore_dir, val, note, sizeof note, &e)
	    != TFG_OK) {
		fprintf(stderr, "tfgc: error: cannot restore: %s\n", e.msg);
		rc = 1;
	} else if (note[0]) {
		fprintf(stderr, "tfgc: note: %s\n", note);
	}
	for (int i = 0; i < plan->nvar; i++)
		rt_tensor_free(val[i]);
	free(val);
	return rc;
}

TFG_API int
tfg_launch(const TfgPlan *plan, const TfgOptions *opt, const char *argv0,
	   char *const *server_args, int mode)
{
	int attach = mode & TFG_LAUNCH_ATTACH;
	RtProc c;
	pid_t *pids = NULL;
	RtBars *bars;
	int rc = 0;

	if (!attach && opt->restore_dir && check_restore(plan, opt) != 0)
		return 1;
	if (!attach && check_limits(plan) != 0)
		return 1;
	if (ctl_open(&c, plan, opt))
		return 1;
	bars = rt_bars_new(plan, opt); /* NULL (no memory): none shown */
	rt_signals(ctl_on_signal);
	if (!attach) {
		pids = calloc((size_t)plan->ntask, sizeof *pids);
		if (pids == NULL) {
			rt_proc_free(&c);
			return 1;
		}
		ctl_pids = pids;
		ctl_npid = plan->ntask;
		share_cores(plan->ntask);
		for (int i = 0; i < plan->ntask && rc == 0; i++)
			if ((pids[i] = spawn(argv0, server_args,
					     &plan->tasks[i])) < 0) {
				int err = errno;

				fprintf(stderr, "tfgc: error: cannot start %s: "
					"%s%s\n", plan->tasks[i].name,
					strerror(err), err == EAGAIN ?
					" (the limit of this user's processes "
					"and threads, ulimit -u, or of the "
					"machine's, kernel.threads-max)" :
					err == ENOMEM ? " (out of memory)" : "");
				pids[i] = 0;
				rc = 1;
			}
	}
	if (rc == 0)
		rc = wait_up(&c, pids);
	/* sessions alone, in file order, and each group's at once */
	for (int i = 0, j; i < plan->nsession && rc == 0; i = j) {
		for (j = i + 1; plan->sessions[i].group &&
		     j < plan->nsession &&
		     plan->sessions[j].group == plan->sessions[i].group; j++)
			;
		rc = run_group(&c, i, j, pids, bars);
	}
	/* the trace of the run, whatever happened (a failed run is when
	   one is wanted most), from every task still up */
	if (c.opt.trace_file && write_trace(&c, pids) != 0 && rc == 0)
		rc = 1;
	if (c.opt.stats)
		write_stats(&c, pids);
	/* Servers we attached to keep serving, whatever happened, for
	   `tfgc stop` to end them; unless they are to stop with the run
	   (--stop), which a launched chief's controller is (spec/design.md
	   "Launchers"): those that are up, whatever happened.  Those that
	   never came up were reported, and stop by themselves. */
	if (attach && (mode & TFG_LAUNCH_STOP)) {
		if (shutdown_all(&c, NULL, SHUTDOWN_GRACE, rc == 0, NULL) &&
		    rc == 0)
			rc = 1;
	} else if (attach)
		;
	else if (rc == 0)
		shutdown_all(&c, pids, SHUTDOWN_GRACE, 0, &rc);
	else
		stop_all(&c, pids);
	ctl_npid = 0;
	ctl_pids = NULL;
	free(pids);
	rt_bars_free(bars);
	rt_proc_free(&c);
	return rc;
}

/* tfgc stop's view of a task. */
enum { STOP_ASKING, STOP_SHUT, STOP_GONE, STOP_ABSENT, STOP_REFUSED };

/* tfgc stop: a PING to every task first, so that each is known at once
 * for what it is: a server that answers gets SHUTDOWN and is waited for
 * (its BYE); an address where nothing listens is a task not running; a
 * task of a run's own (tfg_launch's servers serve that run alone) or of
 * another program refuses, saying whose it is.  Only a task that is
 * there and does not answer is waited for until the deadline. */
TFG_API int
tfg_stop(const TfgPlan *plan, const TfgOptions *opt)
{
	RtProc c;
	int *st, left, rc = 0, nabsent = 0;
	double deadline, last = -1e9;
	RtMsg m;

	if (ctl_open(&c, plan, opt))
		return 1;
	if ((st = calloc((size_t)plan->ntask, sizeof *st)) == NULL) {
		rt_proc_free(&c);
		return 1;
	}
	deadline = rt_now() + c.opt.startup_timeout;
	for (;;) {
		double now = rt_now();

		left = 0;
		for (int i = 0; i < plan->ntask; i++) {
			char why[400];

			/* a task that refused this process's key (a run's,
			   keyed by default): whose it is, at once */
			if (st[i] == STOP_ASKING &&
			    rt_peer_refused(&c, i, why, sizeof why)) {
				if (!say_holder(&c, i, -1))
					fprintf(stderr, "tfgc: error: %s\n",
						why);
				st[i] = STOP_REFUSED;
			}
			if (st[i] == STOP_ASKING &&
			    rt_peer_absent(&c, i, why, sizeof why) ==
			    ECONNREFUSED)
				st[i] = STOP_ABSENT;
			left += st[i] == STOP_ASKING || st[i] == STOP_SHUT;
		}
		if (left == 0 || now >= deadline || rt_stop_requested)
			break;
		if (now - last >= REPING_SECS) {
			for (int i = 0; i < plan->ntask; i++)
				if (st[i] == STOP_ASKING)
					send_simple(&c, i, RT_MSG_PING, 0);
			last = now;
		}
		if (recv_one(&c, &m, deadline) != 0)
			continue;
		if (m.h.src < plan->ntask && m.h.type == RT_MSG_PONG &&
		    st[m.h.src] == STOP_ASKING) {
			if (m.h.key == RT_PONG_REFUSED) {
				fprintf(stderr, "tfgc: error: %.*s\n",
					(int)(m.h.nbytes < 600 ? m.h.nbytes
					      : 600), (const char *)m.body);
				st[m.h.src] = STOP_REFUSED;
			} else {
				send_simple(&c, m.h.src, RT_MSG_SHUTDOWN, 0);
				st[m.h.src] = STOP_SHUT;
			}
		} else if (m.h.src < plan->ntask &&
			   m.h.type == RT_MSG_BYE) {
			st[m.h.src] = STOP_GONE;
		}
		rt_msg_free(&m);
	}
	for (int i = 0; i < plan->ntask; i++) {
		char why[64];

		nabsent += st[i] == STOP_ABSENT;
		if (st[i] == STOP_REFUSED)
			rc = 1;
		if (st[i] != STOP_ASKING && st[i] != STOP_SHUT)
			continue;
		rt_peer_absent(&c, i, why, sizeof why);
		fprintf(stderr, "tfgc: error: task %s did not answer within "
			"%g s (%s: %s)\n", plan->tasks[i].name,
			c.opt.startup_timeout, plan->tasks[i].addr,
			st[i] == STOP_SHUT ? "it was asked to stop" : why);
		rc = 1;
	}
	if (nabsent == plan->ntask)
		fprintf(stderr, "tfgc: no server of this program is running "
			"(nothing listens at its tasks' addresses)\n");
	else
		for (int i = 0; i < plan->ntask; i++)
			if (st[i] == STOP_ABSENT)
				fprintf(stderr, "tfgc: %s was not running "
					"(nothing listens at %s)\n",
					plan->tasks[i].name,
					plan->tasks[i].addr);
	free(st);
	rt_proc_free(&c);
	return rc;
}
