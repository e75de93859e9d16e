/*
 * runtime/server.c: tfg_server_main, the task server (`tfgc server`),
 * and its executors (roles layer, runtime/role.h).
 *
 * Order of start-up (spec/design.md "Processes"): listen first, so a port
 * in use fails at once naming the task and address; dial the peers (the
 * transport keeps redialing until they are up); JIT-compile the own parts through
 * the compile callback; then serve.
 *
 * Serving is done by executors: threads that each take the next record of
 * the process's queue (rt_proc_next) and run it to its end:
 *
 *   PING         PONG to the reply URL in its body
 *   START        run the own part of that signature for the step; ERROR
 *                to the step's client when it fails, DONE when the part
 *                sends nothing (sig->needs_done); ERROR at once when the
 *                step's plan is a specialisation not here (spec.c);
 *                nothing when the client cancelled the step (ABORT, or
 *                it restarted meanwhile)
 *   SPECIALISE   compile a specialisation of a generic plan (spec.c)
 *   RELEASE      a client no longer holds a specialisation (spec.c)
 *   RUN_SESSION  run the session as its client (client.c)
 *   RESTARTED    a task restarted: forget what it held (spec.c)
 *   SHUTDOWN     BYE, then every executor stops
 *
 * The main thread is the first executor.  Whenever one takes a record
 * and finds no other executor left waiting, it starts another (up to
 * MAX_EXECUTORS), so that there is always one free to take the next
 * record: a task runs steps of other clients while one of its own
 * sessions waits, and two sessions that each need the other's task go
 * on.  A step's thread is where its part runs and waits: generated code
 * calls tfg_rt_recv in the middle of its loops, so a step keeps its
 * stack until it ends (spec/design.md "Runtime layers" says why threads
 * and not an event loop).
 *
 * A server that a launcher started (TfgOptions.launched: mpirun, srun,
 * TF_CONFIG) is one of a run that a task of the cluster, the chief,
 * drives (spec/design.md "Launchers"): the chief starts the controller,
 * `tfgc run --attach --stop`, as its child once it serves, and exits with
 * its status; a watcher thread in every such server ends the server when
 * that child exits, or, in the others, when no controller has come
 * within twice the start-up timeout or the chief's process went away.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/role.h"
#include "runtime/trace.h"

#define MAX_EXECUTORS 256
#define NEXT_WAIT 0.05 /* seconds an executor waits before it looks up */
/* Seconds a launched chief waits for its controller to exit once it has
 * been shut down (the controller waits 3 s for the tasks' BYEs). */
#define CONTROLLER_GRACE 10.0

static void
on_signal(int sig)
{
	(void)sig;
	rt_stop_requested = 1;
}

/* ------------------------------------------------------------ records */

static int
needs_done(const RtSig *sig, int task)
{
	for (int i = 0; i < sig->ntask; i++)
		if (sig->tasks[i] == task)
			return sig->needs_done && sig->needs_done[i];
	return 0;
}

/* START(step, sig) from a client: run the own part for that step, in the
 * plan the message names (the own one or a specialisation's).  The plan
 * is looked up by its hash now: a specialisation it was filed with may
 * have been evicted since. */
static void
serve_start(RtServer *s, RtStep *c, const RtMsg *m)
{
	RtProc *p = &s->proc;
	int sig = (int)m->h.key, rc;
	RtUse u;

	if (rt_step_cancelled(c)) {
		if (p->opt.verbose)
			fprintf(stderr, "tfg: %s: step %llu cancelled before "
				"it started\n", p->name, RT_STEP_NO(c->step));
		rt_step_end(c);
		return;
	}
	if (m->lost || rt_spec_use(s, m->h.prog, &u) != 0) {
		rt_spec_refuse(c, m);
		rt_step_end(c);
		return;
	}
	c->plan = u.plan;
	if (p->opt.verbose)
		fprintf(stderr, "tfg: %s: step %llu sig %d\n", p->name,
			RT_STEP_NO(c->step), sig);
	rt_start_feeds(c, m);
	rc = rt_run_part(c, s, p->name, &u.parts[sig], &u.spare[sig]);
	/* A cancelled step gets no answer: its client has moved on, and
	   would drop it as stale anyway.  Nothing went wrong here, so
	   nothing is reported either. */
	if (rt_step_cancelled(c)) {
		if (p->opt.verbose)
			fprintf(stderr, "tfg: %s: %s\n", p->name,
				rc ? c->err.msg : "step cancelled after its "
				"part ended");
	} else if (rc != 0) {
		rt_reply(c, RT_ERROR_FAILED, c->err.msg);
	} else if (needs_done(&u.plan->sigs[sig], p->task)) {
		rt_reply(c, (uint32_t)sig, NULL);
	}
	rt_step_end(c);
	rt_spec_unuse(s, &u);
}

static void
serve_session(RtServer *s, const RtMsg *m)
{
	char url[RT_URL_MAX];

	rt_body_url(url, m);
	if (url[0] == '\0') {
		fprintf(stderr, "tfgc: error: %s: RUN_SESSION without a reply "
			"address (ignored)\n", s->proc.name);
		return;
	}
	if (s->proc.opt.verbose)
		fprintf(stderr, "tfg: %s: session %u for %s\n", s->proc.name,
			m->h.key, url);
	rt_client_session(s, (int)m->h.key, url);
}

/* TRACE from the controller: the events recorded so far, in its clock
 * (spec/design.md "Traces"); none if this task does not record. */
static void
serve_trace(RtServer *s, const RtMsg *m)
{
	char url[RT_URL_MAX], *json = NULL, *body;
	size_t n = 0, k;
	TfgError e;
	double got = rt_trace_clock();

	rt_body_url(url, m);
	if (url[0] == '\0')
		return;
	/* The steps still running here record their last events (a send's
	   ends after its tensor left, so after its client may have finished
	   and the controller asked): a moment for them to end. */
	rt_proc_idle(&s->proc, rt_now() + 1.0);
	if (rt_tracing && (json = rt_trace_take(s->proc.task, 0, &n)) ==
	    NULL)
		fprintf(stderr, "tfgc: error: %s: out of memory for the "
			"trace\n", s->proc.name);
	/* first line: this clock when the TRACE came and as the answer
	   leaves, for the controller's estimate of the offset */
	if ((body = malloc(n + 64)) == NULL) {
		free(json);
		return;
	}
	k = (size_t)snprintf(body, 64, "tfg-clock %.0f %.0f\n", got * 1e9,
			     rt_trace_clock() * 1e9);
	if (n)
		memcpy(body + k, json, n);
	if (rt_send_text(&s->proc, url, RT_MSG_TRACE_DATA, 0,
			 (uint32_t)(rt_tracing != 0), body, k + n, &e))
		fprintf(stderr, "tfgc: error: %s: %s\n", s->proc.name, e.msg);
	free(body);
	free(json);
}

/* STATS from the controller: this task's counts of its links
 * (spec/design.md "Link counts"). */
static void
serve_stats(RtServer *s, const RtMsg *m)
{
	char url[RT_URL_MAX], *text;
	size_t n;
	TfgError e;

	rt_body_url(url, m);
	if (url[0] == '\0')
		return;
	/* the steps still running here finish their sends first */
	rt_proc_idle(&s->proc, rt_now() + 1.0);
	if ((text = rt_stats_text(&s->proc, &n)) == NULL) {
		fprintf(stderr, "tfgc: error: %s: out of memory for its "
			"link counts\n", s->proc.name);
		return;
	}
	if (rt_send_text(&s->proc, url, RT_MSG_STATS_DATA, 0, 0, text, n,
			 &e))
		fprintf(stderr, "tfgc: error: %s: %s\n", s->proc.name, e.msg);
	free(text);
}

/* LEAVE: a session of client m->h.src ended; it leaves the sync groups
 * of this task's variables until its next gradient (optim.c), and the
 * updates that wait for a round see it at once. */
static void
serve_leave(RtServer *s, const RtMsg *m)
{
	if (s->left == NULL || m->h.src >= s->proc.plan->ntask)
		return;
	if (s->proc.opt.verbose)
		fprintf(stderr, "tfg: %s: %s left (its session %u ended)\n",
			s->proc.name, s->proc.plan->tasks[m->h.src].name,
			m->h.key);
	s->left[m->h.src] = 1;
	for (int i = 0; i < s->proc.plan->nvar; i++)
		if (s->vars[i].member) {
			pthread_mutex_lock(&s->vars[i].mu);
			pthread_cond_broadcast(&s->vars[i].cv);
			pthread_mutex_unlock(&s->vars[i].mu);
		}
}

static void
serve_shutdown(RtServer *s, const RtMsg *m)
{
	char url[RT_URL_MAX];
	TfgError e;
	struct timespec ts = {0, 50 * 1000000L};

	rt_body_url(url, m);
	/* key 1: our parent, the controller, waits for our exit status
	   instead of a BYE, so there is nothing to send and linger for */
	if (url[0] == '\0' || m->h.key == RT_SHUTDOWN_QUIET)
		return;
	if (rt_send_text(&s->proc, url, RT_MSG_BYE, 0, 0, NULL, 0, &e) ==
	    TFG_OK)
		/* the reply link is new: the BYE waits in its queue until
		 * it connects, and what is queued is dropped at close */
		nanosleep(&ts, NULL);
}

static void handle(RtServer *s, RtStep *step, RtMsg *m);

/* A stop was requested: the executors waiting for a record, and the
 * watcher, wake now rather than at the end of their slice (a launched
 * run's servers exit as soon as they are shut down). */
static void
stop_wake(RtServer *s)
{
	rt_proc_wake(&s->proc);
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->stopcv);
	pthread_mutex_unlock(&s->mu);
}

void
rt_server_handle(RtServer *s, RtStep *step, RtMsg *m)
{
	handle(s, step, m);
	rt_proc_done(&s->proc, m);
	rt_msg_free(m);
}

static void
handle(RtServer *s, RtStep *step, RtMsg *m)
{
	if (m->h.type == RT_MSG_PING || m->h.type == RT_MSG_RUN_SESSION) {
		pthread_mutex_lock(&s->mu);
		s->controlled = 1;
		pthread_mutex_unlock(&s->mu);
	}
	switch (m->h.type) {
	case RT_MSG_PING:
		rt_answer_ping(&s->proc, m);
		break;
	case RT_MSG_START:
		serve_start(s, step, m);
		break;
	case RT_MSG_SPECIALISE:
		rt_spec_serve(s, step, m);
		break;
	case RT_MSG_RELEASE:
		rt_spec_serve_release(s, m);
		break;
	case RT_MSG_RUN_SESSION:
		serve_session(s, m);
		break;
	case RT_MSG_TRACE:
		serve_trace(s, m);
		break;
	case RT_MSG_STATS:
		serve_stats(s, m);
		break;
	case RT_MSG_LEAVE:
		serve_leave(s, m);
		break;
	case RT_EV_RESTARTED:
		rt_spec_forget(s, m->h.src, m->h.epoch);
		break;
	case RT_EV_FOREIGN_PING:
		rt_refuse_ping(&s->proc, m);
		break;
	case RT_MSG_SHUTDOWN:
		/* before the BYE: a launched chief's controller may exit
		   as soon as it has it */
		pthread_mutex_lock(&s->mu);
		s->shutdown = 1;
		pthread_mutex_unlock(&s->mu);
		serve_shutdown(s, m);
		pthread_mutex_lock(&s->mu);
		s->stopping = 1;
		pthread_mutex_unlock(&s->mu);
		/* steps and sessions still running end now */
		rt_stop_requested = 1;
		stop_wake(s);
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------------- executors */

static void *executor(void *arg);

/* Another executor, under s->mu, so that a record that comes while this
 * one runs has a taker. */
static void
spawn_locked(RtServer *s)
{
	static int warned;
	pthread_t t;

	if (s->nthread + 1 >= MAX_EXECUTORS)
		return;
	if (s->nthread == s->capthread) {
		int nc = s->capthread ? 2 * s->capthread : 8;
		pthread_t *v = realloc(s->threads, sizeof *v * (size_t)nc);

		if (v == NULL)
			return;
		s->threads = v, s->capthread = nc;
	}
	if (pthread_create(&t, NULL, executor, s) != 0) {
		if (!warned++)
			fprintf(stderr, "tfgc: warning: %s: cannot start a "
				"thread: records wait for a free one\n",
				s->proc.name);
		return;
	}
	s->threads[s->nthread++] = t;
}

/* Whether a record may keep its executor busy for long. */
static int
lasting(int type)
{
	return type == RT_MSG_START || type == RT_MSG_SPECIALISE ||
	       type == RT_MSG_RUN_SESSION;
}

static void
serve(RtServer *s)
{
	RtStep step;
	RtMsg m;
	int got;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		if (s->stopping || rt_stop_requested) {
			s->stopping = 1;
			pthread_mutex_unlock(&s->mu);
			return;
		}
		s->nidle++;
		pthread_mutex_unlock(&s->mu);
		rt_step_init(&step, &s->proc);
		got = rt_proc_next(&s->proc, &m, &step, NEXT_WAIT) == 0;
		pthread_mutex_lock(&s->mu);
		s->nidle--;
		if (got && s->nidle == 0 && lasting(m.h.type) && !s->stopping)
			spawn_locked(s);
		pthread_mutex_unlock(&s->mu);
		if (got)
			rt_server_handle(s, &step, &m);
	}
}

static void *
executor(void *arg)
{
	serve(arg);
	return NULL;
}

/* -------------------------------------------------- launched servers */

/* Stops the server from the watcher: exit status code, and why (NULL:
 * already said, by the controller). */
static void
stop_launched(RtServer *s, int code, const char *why)
{
	if (why)
		fprintf(stderr, "tfgc: error: %s: %s\n", s->proc.name, why);
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	s->exit_code = code;
	pthread_mutex_unlock(&s->mu);
	rt_stop_requested = 1;
	stop_wake(s);
}

/* The exit status of a process that ended with wait status st, as a
 * shell gives it. */
static int
exit_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st)
	       : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* The chief's controller exited (wait status st) while the watcher
 * watched.  It shuts the tasks down before it exits: without that
 * SHUTDOWN here, the run ended without it.  One that failed has said
 * why. */
static void
controller_exited(RtServer *s, int st)
{
	char why[200];
	int shut;

	pthread_mutex_lock(&s->mu);
	s->controller = 0;
	s->controller_status = st;
	shut = s->shutdown;
	pthread_mutex_unlock(&s->mu);
	if (shut)
		return;
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
		stop_launched(s, WEXITSTATUS(st), NULL);
		return;
	}
	if (WIFSIGNALED(st))
		snprintf(why, sizeof why, "its controller (tfgc run --attach) "
			 "was killed by signal %d", WTERMSIG(st));
	else
		snprintf(why, sizeof why, "its controller (tfgc run --attach) "
			 "exited before it shut the tasks down");
	stop_launched(s, WIFEXITED(st) ? 1 : exit_status(st), why);
}

/* A launched server's watcher: no such server waits for ever for a run
 * that is not coming (spec/design.md "Launchers").  Looks every
 * NEXT_WAIT, or when woken, until the server stops. */
static void *
watch(void *arg)
{
	RtServer *s = arg;
	RtProc *p = &s->proc;
	const TfgOptions *o = &p->opt;
	const char *chief = p->plan->tasks[o->chief].name;
	double start = rt_now(), gone = 0;
	char why[300];

	for (;;) {
		int stopping, controlled, st;
		double now = rt_now();

		pthread_mutex_lock(&s->mu);
		stopping = s->stopping;
		controlled = s->controlled;
		pthread_mutex_unlock(&s->mu);
		if (stopping || rt_stop_requested)
			return NULL;
		if (s->controller > 0) {
			if (waitpid(s->controller, &st, WNOHANG) ==
			    s->controller)
				controller_exited(s, st);
		} else if (p->task != o->chief) {
			if (!rt_peer_gone(p, o->chief))
				gone = 0;
			else if (gone == 0)
				gone = now;
			if (!controlled &&
			    now - start > 2 * o->startup_timeout) {
				snprintf(why, sizeof why, "no controller came "
					 "within %g s: the chief, %s, starts "
					 "it; is it running?",
					 2 * o->startup_timeout, chief);
				stop_launched(s, 1, why);
			} else if (gone > 0 &&
				   now - gone > o->startup_timeout) {
				snprintf(why, sizeof why, "the chief, %s, has "
					 "been gone for %g s: its run ended "
					 "without it", chief,
					 o->startup_timeout);
				stop_launched(s, 1, why);
			}
		}
		/* or at once when stopped (stop_wake) */
		pthread_mutex_lock(&s->mu);
		if (!s->stopping && !rt_stop_requested)
			rt_cond_wait(&s->stopcv, &s->mu, rt_now() + NEXT_WAIT);
		pthread_mutex_unlock(&s->mu);
	}
}

/* The chief's exit status, once it stopped serving: its controller's,
 * unless the watcher stopped it for a reason of its own.  Shut down, the
 * controller is finishing (it waits for the other tasks' BYEs); stopped
 * otherwise (a signal), the server ends it. */
static int
controller_end(RtServer *s)
{
	int shut = s->shutdown, st = 0;
	double deadline = rt_now() + (shut ? CONTROLLER_GRACE : 1.0);
	struct timespec ts = {0, 10 * 1000000L};

	if (s->controller > 0) {
		if (!shut)
			kill(s->controller, SIGTERM);
		while (waitpid(s->controller, &st, WNOHANG) == 0) {
			if (rt_now() >= deadline) {
				fprintf(stderr, "tfgc: error: %s: its controller "
					"(tfgc run --attach) did not exit within "
					"%g s\n", s->proc.name, shut
					? CONTROLLER_GRACE : 1.0);
				kill(s->controller, SIGKILL);
				waitpid(s->controller, &st, 0);
				s->controller = 0;
				return 1;
			}
			nanosleep(&ts, NULL);
		}
		s->controller = 0;
		s->controller_status = st;
	}
	if (s->exit_code != 0)
		return s->exit_code;
	return s->controller_status < 0 ? 1 : exit_status(s->controller_status);
}

/* ------------------------------------------------------------- server */

tfg_status
rt_server_init(RtServer *s, const TfgPlan *plan, int task,
	       const TfgOptions *opt)
{
	tfg_status st;

	memset(s, 0, sizeof *s);
	s->controller_status = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->stopcv, NULL);
	if ((st = rt_proc_init(&s->proc, plan, task, opt)) != TFG_OK)
		return st;
	s->parts = calloc((size_t)plan->nsig + 1, sizeof *s->parts);
	s->spare = calloc((size_t)plan->nsig + 1, sizeof *s->spare);
	if (!s->parts || !s->spare || rt_vars_init(s) != TFG_OK) {
		rt_server_free(s);
		return TFG_ENOMEM;
	}
	return TFG_OK;
}

void
rt_server_free(RtServer *s)
{
	int nsig = s->proc.plan ? s->proc.plan->nsig : 0;

	/* every thread has ended; variables are no business of the
	   protocol's completions */
	if (s->proc.plan)
		rt_vars_free(s);
	/* the protocol next: no completion runs after this */
	if (s->proc.plan)
		rt_proc_free(&s->proc);
	rt_spec_free(s);
	rt_arenas_free(s->spare, nsig);
	free(s->parts);
	free(s->threads);
	free(s->pending);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->stopcv);
	memset(s, 0, sizeof *s);
}

/* tfgc server --trace FILE (not "-", which leaves the events to a
 * controller's TRACE): what is left of them, as a trace of its own, its
 * clock its own.  0, or 1 after saying why. */
static int
write_own_trace(RtServer *s)
{
	const char *path = s->proc.opt.trace_file;
	char *json;
	size_t n;
	FILE *f;
	int bad;

	if (path == NULL || strcmp(path, "-") == 0)
		return 0;
	if ((json = rt_trace_take(s->proc.task, 0, &n)) == NULL ||
	    (f = fopen(path, "w")) == NULL) {
		fprintf(stderr, "tfgc: error: %s: cannot write the trace %s: "
			"%s\n", s->proc.name, path, json ? strerror(errno)
			: "out of memory");
		free(json);
		return 1;
	}
	fprintf(f, "{\"traceEvents\": [\n%s{\"name\":\"process_name\","
		"\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"%s\"}}\n"
		"], \"displayTimeUnit\": \"ms\"}\n", json, s->proc.task,
		s->proc.name);
	free(json);
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		fprintf(stderr, "tfgc: error: %s: cannot write the trace %s\n",
			s->proc.name, path);
		return 1;
	}
	return 0;
}

/* Whether a task's address ("host:port") is one only this machine
 * reaches. */
static int
loopback(const char *addr)
{
	return strncmp(addr, "localhost:", 10) == 0 ||
	       strncmp(addr, "127.", 4) == 0 || strncmp(addr, "[::1]:", 6) == 0;
}

TFG_API int
tfg_server_main(const TfgPlan *plan, int task, const TfgOptions *opt,
		TfgCompileFn compile, void *cookie)
{
	RtServer *s;
	TfgError e;
	char url[RT_URL_MAX];
	tfg_status st;
	pthread_t watcher;
	int rc;

	/* where relative paths start (the process's working directory) */
	rt_started_by(opt->from_run ? "tfgc run" : "tfgc server");
	rt_program_file(plan->file);
	if (task < 0 || task >= plan->ntask) {
		fprintf(stderr, "tfgc: error: no task %d in the cluster "
			"(it has %d)\n", task, plan->ntask);
		return 1;
	}
	if ((s = malloc(sizeof *s)) == NULL ||
	    (st = rt_server_init(s, plan, task, opt)) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", s == NULL ||
			st == TFG_ENOMEM ? "out of memory" : "malformed plan: "
			"an edge's byte count disagrees with its dtype and "
			"shape");
		free(s);
		return 1;
	}
	if (s->proc.opt.trace_file)
		rt_trace_start();
	if (s->proc.opt.restore_dir &&
	    rt_vars_restore(s, s->proc.opt.restore_dir, &e) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s: cannot restore: %s\n",
			s->proc.name, e.msg);
		rt_server_free(s);
		free(s);
		return 1;
	}
	rt_signals(on_signal);
	rt_url(url, sizeof url, plan->tasks[task].addr);
	if (rt_proc_open(&s->proc, url, &e) != TFG_OK) {
		int taken = e.code == TFG_EADDRINUSE && opt->picked_ports;
		/* tfgc run asks who holds it, and says what to do */
		int held = e.code == TFG_EADDRINUSE && !taken &&
			   opt->from_run == 1;

		/* what to do about it (spec §7.1 "The cluster") */
		if (held)
			;
		else if (e.code == TFG_EADDRINUSE && !taken && !opt->from_run)
			fprintf(stderr, "tfgc: error: %s (another process has "
				"that port: give this task another with --addr "
				"%s=HOST:PORT, the same on the command line of "
				"every task and of tfgc run)\n", e.msg,
				s->proc.name);
		else if (!taken)
			fprintf(stderr, "tfgc: error: %s\n", e.msg);
		rt_server_free(s);
		free(s);
		return taken ? TFG_EXIT_PORT_TAKEN : held ? TFG_EXIT_PORT_HELD
			     : 1;
	}
	/* A generic plan has nothing to compile before its first run. */
	if (compile && !plan->generic &&
	    compile(cookie, plan, task, s->parts) != 0) {
		rt_server_free(s);
		free(s);
		return 1;
	}
	/* Loopback included: any user of this machine reaches it.  The
	   servers of a tfgc run --no-cluster-key were asked to be so. */
	if (!rt_proc_authenticated(&s->proc) && !opt->from_run)
		fprintf(stderr, "tfgc: warning: %s: the cluster is "
			"unauthenticated: anyone who reaches %s%s can run "
			"sessions, read and reset variables and stop this "
			"task (give every task --cluster-key FILE)\n",
			s->proc.name, plan->tasks[task].addr,
			loopback(plan->tasks[task].addr)
			    ? ", any user of this machine," : "");
	if (s->proc.opt.verbose)
		fprintf(stderr, "tfg: %s: serving on %s\n", s->proc.name,
			rt_proc_url(&s->proc));
	if (opt->launched && opt->controller_argv &&
	    (s->controller = rt_spawn(opt->controller_argv)) < 0) {
		fprintf(stderr, "tfgc: error: %s: cannot start the controller: "
			"%s\n", s->proc.name, strerror(errno));
		rt_server_free(s);
		free(s);
		return 1;
	}
	if (opt->launched &&
	    (rc = pthread_create(&watcher, NULL, watch, s)) != 0) {
		fprintf(stderr, "tfgc: error: %s: cannot start a thread: %s\n",
			s->proc.name, strerror(rc));
		controller_end(s);
		rt_server_free(s);
		free(s);
		return 1;
	}
	serve(s);
	/* the others stop at once (stop_wake) or within a slice (a
	   signal), or when their step ends (every wait ends once a stop
	   is requested) */
	for (int i = 0; i < s->nthread; i++)
		pthread_join(s->threads[i], NULL);
	rc = write_own_trace(s);
	if (opt->launched) {
		int lrc;

		pthread_join(watcher, NULL);
		lrc = opt->controller_argv ? controller_end(s) : s->exit_code;
		if (lrc != 0)
			rc = lrc;
	}
	rt_server_free(s);
	free(s);
	return rc;
}
