/*
 * runtime/server.c: tfg_server_main, the task server (`tfgc server`).
 *
 * Order of start-up (spec/design.md "Processes"): listen first, so a port
 * in use fails at once naming the task and address; dial the peers (nng
 * keeps redialing until they are up); JIT-compile the own parts through
 * the compile callback; then serve messages one at a time on this thread:
 *
 *   PING         PONG to the reply URL in its body
 *   START        run the own part of that signature for the step; ERROR
 *                to the step's client when it fails, DONE when the part
 *                sends nothing (sig->needs_done); ERROR at once when the
 *                step's plan is a specialisation not here (spec.c);
 *                nothing when the client cancelled the step (ABORT, or
 *                it restarted meanwhile: rendezvous.c)
 *   SPECIALISE   compile a specialisation of a generic plan (spec.c)
 *   RELEASE      a client no longer holds a specialisation (spec.c)
 *   RUN_SESSION  run the session as its client (client.c)
 *   SHUTDOWN     BYE, close, return 0
 *
 * Messages that arrive while a part waits are filed by rendezvous.c and
 * the queued ones come back here in order.  ABORT is filed there too, by
 * step, never queued: a part waiting in its step sees it at once, and
 * one for a step that ended here is dropped as stale.  A malformed
 * message is reported (naming its sender) and ignored.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_int.h"

static void
on_signal(int sig)
{
	(void)sig;
	rt_stop_requested = 1;
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int
rt_run_part(RtCtx *c, int sig)
{
	const RtPart *p = &c->parts[sig];
	int rc;

	c->err.code = TFG_OK;
	c->err.msg[0] = '\0';
	if (p->fn == NULL)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s has no part in signature %d", c->name,
				 sig);
	if (c->arenas[sig] == NULL) {
		if ((c->arenas[sig] = rt_arena_alloc(p->arena_size)) == NULL)
			return tfg_error(&c->err, TFG_ENOMEM,
					 "%s: out of memory for an arena of "
					 "%zu bytes", c->name, p->arena_size);
	}
	rc = p->fn(c, c->arenas[sig]);
	if (rc != 0 && c->err.msg[0] == '\0')
		tfg_error(&c->err, (tfg_status)rc, "part of %s failed: %s",
			  c->name, tfg_strerror((tfg_status)rc));
	return rc;
}

static int
needs_done(const RtSig *sig, int task)
{
	for (int i = 0; i < sig->ntask; i++)
		if (sig->tasks[i] == task)
			return sig->needs_done && sig->needs_done[i];
	return 0;
}

void
rt_reply(RtCtx *c, int client, uint32_t key, const char *text)
{
	char buf[sizeof c->err.msg + 100];
	nng_msg *reply;
	unsigned char *body;
	TfgError e;
	size_t n = 0;

	if (text) {
		n = (size_t)snprintf(buf, sizeof buf, "%s: %s", c->name, text);
		if (n >= sizeof buf)
			n = sizeof buf - 1;
	}
	if (rt_msg_new(c, &reply, &body, text ? RT_MSG_ERROR : RT_MSG_DONE,
		       c->step, key, NULL, n, &e) == TFG_OK) {
		if (n)
			memcpy(body, buf, n);
		if (rt_net_send(c, client, reply,
				rt_now() + c->opt.step_timeout, &e) == TFG_OK)
			return;
	}
	/* cancelled while it waited to leave: the client wants none */
	if (!rt_step_cancelled(c) || c->opt.verbose)
		fprintf(stderr, "tfgc: error: %s: %s\n", c->name, e.msg);
}

int
rt_step_accept(RtCtx *c, const RtMsg *m, int sig)
{
	int client = m->h.src;

	/* A step of its sender's, with the tag of its incarnation. */
	if (RT_STEP_CLIENT(m->h.step) != (uint64_t)client ||
	    RT_STEP_TAG(m->h.step) != rt_step_tag(m->h.epoch) ||
	    client == c->task) {
		fprintf(stderr, "tfgc: error: %s: %s from %s for a step it "
			"does not drive (ignored)\n", c->name,
			rt_msg_name(m->h.type), c->plan->tasks[client].name);
		return -1;
	}
	if (rt_step_stale(c, m->h.step))
		return -1; /* a duplicate */
	c->step = m->h.step;
	c->client = client;
	c->sig = sig;
	return 0;
}

/* START(step, sig) from a client: run the own part for that step, in the
 * plan the message names (the own one or a specialisation's).  The plan
 * is looked up again by its hash: the specialisation the message was
 * filed with may have been evicted since. */
static void
serve_start(RtCtx *c, RtMsg *m)
{
	int client = m->h.src, sig = (int)m->h.key, spec = -1, rc;

	if (rt_step_accept(c, m, sig) != 0)
		return;
	/* Its ABORT came first (not in order on one connection, but a
	   restarted peer's queue may replay anything): nothing to run. */
	if (rt_step_cancelled(c)) {
		if (c->opt.verbose)
			fprintf(stderr, "tfg: %s: step %llu cancelled before "
				"it started\n", c->name, RT_STEP_NO(c->step));
		rt_step_end(c);
		return;
	}
	if (m->spec == RT_SPEC_LOST ||
	    rt_plan_of(c, m->h.prog, &spec) == NULL) {
		rt_spec_refuse(c, m);
		rt_step_end(c);
		return;
	}
	rt_ctx_use(c, spec);
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: step %llu sig %d\n", c->name,
			RT_STEP_NO(c->step), sig);
	rt_start_feeds(c, m);
	rc = rt_run_part(c, sig);
	/* A cancelled step gets no answer: its client has moved on, and
	   would drop it as stale anyway.  Nothing went wrong here, so
	   nothing is reported either. */
	if (rt_step_cancelled(c)) {
		if (c->opt.verbose)
			fprintf(stderr, "tfg: %s: %s\n", c->name,
				rc ? c->err.msg : "step cancelled after its "
				"part ended");
	} else if (rc != 0) {
		rt_reply(c, client, RT_ERROR_FAILED, c->err.msg);
	} else if (needs_done(&c->plan->sigs[sig], c->task)) {
		rt_reply(c, client, (uint32_t)sig, NULL);
	}
	rt_step_end(c);
}

static void
serve_session(RtCtx *c, RtMsg *m)
{
	rt_body_url(c->reply_url, m);
	if (c->reply_url[0] == '\0') {
		fprintf(stderr, "tfgc: error: %s: RUN_SESSION without a reply "
			"address (ignored)\n", c->name);
		return;
	}
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: session %u for %s\n", c->name,
			m->h.key, c->reply_url);
	rt_client_session(c, (int)m->h.key);
}

static void
serve_shutdown(RtCtx *c, RtMsg *m)
{
	char url[RT_URL_MAX];
	TfgError e;
	struct timespec ts = {0, 50 * 1000000L};

	rt_body_url(url, m);
	/* key 1: our parent, the controller, waits for our exit status
	   instead of a BYE, so there is nothing to send and linger for */
	if (url[0] == '\0' || m->h.key == RT_SHUTDOWN_QUIET)
		return;
	if (rt_send_text(c, url, RT_MSG_BYE, 0, 0, NULL, 0, &e) == TFG_OK)
		/* nng drops what is still queued when a socket closes: give
		 * the BYE time to leave. */
		nanosleep(&ts, NULL);
}

static int
serve(RtCtx *c)
{
	RtMsg m;
	tfg_status st;

	for (;;) {
		if (rt_stop_requested)
			return 0;
		if (rt_queue_pop(c, &m) != 0) {
			st = rt_net_recv(c, &m, 0.05);
			if (st == TFG_ETIMEDOUT || st == TFG_EPROTO)
				continue;
			if (st != TFG_OK) {
				fprintf(stderr, "tfgc: error: %s\n",
					c->err.msg);
				return 1;
			}
		}
		switch (m.h.type) {
		case RT_MSG_START:
			serve_start(c, &m);
			break;
		case RT_MSG_SPECIALISE:
			rt_spec_serve(c, &m);
			break;
		case RT_MSG_RELEASE:
			rt_spec_serve_release(c, &m);
			break;
		case RT_MSG_RUN_SESSION:
			serve_session(c, &m);
			break;
		case RT_MSG_SHUTDOWN:
			serve_shutdown(c, &m);
			rt_msg_free(&m);
			return 0;
		default:
			rt_dispatch(c, &m); /* takes m */
			continue;
		}
		rt_msg_free(&m);
	}
}

TFG_API int
tfg_server_main(const TfgPlan *plan, int task, const TfgOptions *opt,
		TfgCompileFn compile, void *cookie)
{
	RtCtx c;
	TfgError e;
	char url[RT_URL_MAX];
	tfg_status st;
	int rc;

	if (task < 0 || task >= plan->ntask) {
		fprintf(stderr, "tfgc: error: no task %d in the cluster "
			"(it has %d)\n", task, plan->ntask);
		return 1;
	}
	if ((st = rt_ctx_init(&c, plan, task, opt)) != TFG_OK) {
		fprintf(stderr, "tfgc: error: %s\n", st == TFG_ENOMEM
			? "out of memory" : "malformed plan: an edge's byte "
			"count disagrees with its dtype and shape");
		return 1;
	}
	install_signals();
	rt_url(url, sizeof url, plan->tasks[task].addr);
	if (rt_net_listen(&c, url, &e) != TFG_OK) {
		int taken = e.code == TFG_EADDRINUSE && opt->picked_ports;

		if (!taken)
			fprintf(stderr, "tfgc: error: %s\n", e.msg);
		rt_ctx_free(&c);
		return taken ? TFG_EXIT_PORT_TAKEN : 1;
	}
	rt_net_dial_peers(&c);
	c.parts = calloc((size_t)plan->nsig + 1, sizeof *c.parts);
	c.arenas = calloc((size_t)plan->nsig + 1, sizeof *c.arenas);
	if (!c.parts || !c.arenas) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		rt_ctx_free(&c);
		return 1;
	}
	c.base_parts = c.parts;
	c.base_arenas = c.arenas;
	/* A generic plan has nothing to compile before its first run. */
	if (compile && !plan->generic &&
	    compile(cookie, plan, task, c.parts) != 0) {
		rt_ctx_free(&c);
		return 1;
	}
	if (c.opt.verbose)
		fprintf(stderr, "tfg: %s: serving on %s\n", c.name, c.url);
	rc = serve(&c);
	rt_ctx_free(&c);
	return rc;
}
