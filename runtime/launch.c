/*
 * runtime/launch.c: the controller (`tfgc run`, `tfgc stop`).
 *
 * tfg_launch fork+execs one `tfgc server` per task (the child sets
 * PR_SET_PDEATHSIG before exec so that none outlives a killed controller,
 * and execs before touching anything, since nng is not fork-safe), pings
 * every task until it answers, runs the sessions in order through
 * RUN_SESSION, copies their OUTPUT to stdout, then shuts everything down.
 *
 * The controller has its own pull socket (opt->controller_addr, port 0 by
 * default) and names its URL in the body of every message it sends.  All
 * waits are loops of short receives, between which children are polled
 * with waitpid(WNOHANG): a task that dies is reported with its exit status
 * or signal instead of being waited for.  SIGINT/SIGTERM kill the children
 * from the handler itself (kill is async-signal-safe) and exit non-zero.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/role.h"

#define SLICE 0.05
#define SHUTDOWN_GRACE 3.0 /* seconds for tasks to exit after SHUTDOWN */
#define REPING_SECS 1.0

/* Children, for the signal handler: 0 once reaped. */
static volatile pid_t *ctl_pids;
static volatile int ctl_npid;

static void
ctl_on_signal(int sig)
{
	for (int i = 0; i < ctl_npid; i++)
		if (ctl_pids[i] > 0)
			kill(ctl_pids[i], SIGKILL);
	_exit(128 + sig);
}

static void
ctl_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ctl_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

static pid_t
spawn(const char *argv0, char *const *server_args, const RtTask *t)
{
	char tbuf[32];
	char **argv;
	int n = 0, k = 0;
	pid_t parent = getpid(), pid;
	static const char msg[] = "tfgc: error: cannot execute the server\n";

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
		if (strchr(argv0, '/'))
			execv(argv0, argv);
		else
			execvp(argv0, argv);
		if (write(2, msg, sizeof msg - 1) < 0)
			_exit(127);
		_exit(127);
	}
	free(argv);
	return pid;
}

/* Reports a child that exited; returns 1 if one did.  With taken, a
 * child that exited with TFG_EXIT_PORT_TAKEN sets *taken instead of being
 * reported. */
static int
child_exited(const TfgPlan *plan, pid_t *pids, int report, int *taken)
{
	int status, any = 0;

	if (pids == NULL)
		return 0;
	for (int i = 0; i < plan->ntask; i++) {
		if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) !=
		    pids[i])
			continue;
		pids[i] = 0;
		any = 1;
		if (taken && WIFEXITED(status) &&
		    WEXITSTATUS(status) == TFG_EXIT_PORT_TAKEN)
			*taken = 1;
		else if (!report)
			continue;
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
	nng_msg *m;
	unsigned char *body;
	size_t n = strlen(c->net.url);
	TfgError e;

	if (rt_msg_new(c, NULL, &m, &body, type, 0, key, NULL, n, &e) !=
	    TFG_OK)
		return;
	memcpy(body, c->net.url, n);
	/* The push sockets queue while a peer is not up: this returns at
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

static int
wait_up(RtProc *c, pid_t *pids)
{
	const TfgPlan *plan = c->plan;
	double deadline = rt_now() + c->opt.startup_timeout, last = -1e9;
	int *up = calloc((size_t)plan->ntask, sizeof *up), nup = 0, rc = 1;
	int taken = 0;
	RtMsg m;

	if (up == NULL)
		return 1;
	for (;;) {
		double now = rt_now();

		if (now - last >= REPING_SECS) {
			for (int i = 0; i < plan->ntask; i++)
				if (!up[i])
					send_simple(c, i, RT_MSG_PING, 0);
			last = now;
		}
		if (child_exited(plan, pids, 1, c->opt.picked_ports ? &taken
								   : NULL)) {
			if (taken)
				rc = TFG_EXIT_PORT_TAKEN;
			break;
		}
		if (nup == plan->ntask) {
			rc = 0;
			break;
		}
		if (now >= deadline || rt_stop_requested) {
			for (int i = 0; i < plan->ntask; i++) {
				char url[RT_URL_MAX];

				if (up[i])
					continue;
				rt_url(url, sizeof url, plan->tasks[i].addr);
				fprintf(stderr, "tfgc: error: task %s did not "
					"come up within %g s (%s)\n",
					plan->tasks[i].name,
					c->opt.startup_timeout, url);
			}
			break;
		}
		if (recv_one(c, &m, deadline) != 0)
			continue;
		if (m.h.type == RT_MSG_PONG && !up[m.h.src]) {
			up[m.h.src] = 1;
			nup++;
		}
		rt_msg_free(&m);
	}
	free(up);
	return rc;
}

static void
write_out(const RtMsg *m)
{
	if (m->h.nbytes) {
		fwrite(m->body, 1, (size_t)m->h.nbytes, stdout);
		fflush(stdout);
	}
}

/* Runs session i; 0 when it ended well. */
static int
run_session(RtProc *c, int i, pid_t *pids)
{
	const TfgPlan *plan = c->plan;
	int task = plan->sessions[i].task;
	double gone_at = 0, heard = rt_now();
	/* The client sends at least an empty OUTPUT every second between
	 * statements and while it waits; this much silence is a hang. */
	double quiet = 2 * c->opt.step_timeout + c->opt.startup_timeout;
	RtMsg m;

	send_simple(c, task, RT_MSG_RUN_SESSION, (uint32_t)i);
	for (;;) {
		if (rt_now() - heard > quiet) {
			fprintf(stderr, "tfgc: error: no word from %s for %g s "
				"during its session\n", plan->tasks[task].name,
				quiet);
			return 1;
		}
		if (child_exited(plan, pids, 1, NULL))
			return 1;
		if (rt_peer_gone(c, task)) {
			/* Give waitpid a moment to tell how it ended. */
			if (gone_at == 0)
				gone_at = rt_now();
			else if (pids == NULL || rt_now() - gone_at > 1.0) {
				fprintf(stderr, "tfgc: error: lost connection "
					"to %s during its session\n",
					plan->tasks[task].name);
				return 1;
			}
		}
		if (recv_one(c, &m, rt_now() + SLICE) != 0)
			continue;
		if (m.h.src != task) {
			rt_msg_free(&m);
			continue; /* a late PONG */
		}
		heard = rt_now();
		if (m.h.type == RT_MSG_OUTPUT) {
			write_out(&m);
		} else if (m.h.type == RT_MSG_SESSION_END) {
			int bad = m.h.key != 0;

			if (bad)
				fprintf(stderr, "%.*s\n", (int)m.h.nbytes,
					(const char *)m.body);
			rt_msg_free(&m);
			return bad;
		}
		rt_msg_free(&m);
	}
}

/* SHUTDOWN to every task, then BYE (or the child's exit) from each until
 * the deadline.  Returns the number of tasks that did not answer. */
static int
shutdown_all(RtProc *c, pid_t *pids, double timeout, int report)
{
	const TfgPlan *plan = c->plan;
	double deadline = rt_now() + timeout;
	int *bye = calloc((size_t)plan->ntask, sizeof *bye), left, missing = 0;
	RtMsg m;

	for (int i = 0; i < plan->ntask; i++)
		send_simple(c, i, RT_MSG_SHUTDOWN,
			    pids && pids[i] > 0 ? RT_SHUTDOWN_QUIET : 0);
	for (;;) {
		child_exited(plan, pids, 0, NULL);
		left = 0;
		for (int i = 0; i < plan->ntask; i++)
			if (pids ? pids[i] > 0 : bye && !bye[i])
				left++;
		if (left == 0 || rt_now() >= deadline)
			break;
		if (recv_one(c, &m, deadline) != 0)
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
		child_exited(c->plan, pids, 0, NULL);
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

static int
ctl_open(RtProc *c, const TfgPlan *plan, const TfgOptions *opt)
{
	char url[RT_URL_MAX];
	TfgError e;
	tfg_status st;

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
	return 0;
}

TFG_API int
tfg_launch(const TfgPlan *plan, const TfgOptions *opt, const char *argv0,
	   char *const *server_args, int attach)
{
	RtProc c;
	pid_t *pids = NULL;
	int rc = 0;

	if (ctl_open(&c, plan, opt))
		return 1;
	ctl_signals();
	if (!attach) {
		pids = calloc((size_t)plan->ntask, sizeof *pids);
		if (pids == NULL) {
			rt_proc_free(&c);
			return 1;
		}
		ctl_pids = pids;
		ctl_npid = plan->ntask;
		for (int i = 0; i < plan->ntask && rc == 0; i++)
			if ((pids[i] = spawn(argv0, server_args,
					     &plan->tasks[i])) < 0) {
				fprintf(stderr, "tfgc: error: cannot start %s: "
					"%s\n", plan->tasks[i].name,
					strerror(errno));
				pids[i] = 0;
				rc = 1;
			}
	}
	if (rc == 0)
		rc = wait_up(&c, pids);
	for (int i = 0; i < plan->nsession && rc == 0; i++)
		rc = run_session(&c, i, pids);
	/* Servers we attached to keep serving, whatever happened: `tfgc
	   stop` ends them. */
	if (attach)
		;
	else if (rc == 0)
		shutdown_all(&c, pids, SHUTDOWN_GRACE, 0);
	else
		stop_all(&c, pids);
	ctl_npid = 0;
	ctl_pids = NULL;
	free(pids);
	rt_proc_free(&c);
	return rc;
}

TFG_API int
tfg_stop(const TfgPlan *plan, const TfgOptions *opt)
{
	RtProc c;
	int missing;

	if (ctl_open(&c, plan, opt))
		return 1;
	missing = shutdown_all(&c, NULL, c.opt.startup_timeout, 1);
	rt_proc_free(&c);
	return missing != 0;
}
