/*
 * runtime/rendezvous.c: the per-process context and the rendezvous of
 * spec/design.md: tfg_rt_send and tfg_rt_recv, which generated parts call.
 *
 * The table holds received TENSOR messages by (step, key), plus the DONE
 * and ERROR messages a client collects for its step, and the ABORT with
 * which a client cancels a step it gave up on (the step's waits here then
 * end at once: spec/design.md "Step failures").  Every other message that
 * arrives while someone waits (START for a later step, RUN_SESSION,
 * SHUTDOWN) goes to a FIFO queue for the server loop, and PING is answered
 * at once, so nothing is dropped but stale messages of steps that already
 * ended here.  The table is a small array searched linearly: a step has a
 * handful of edges in flight, not thousands.
 *
 * Steps are numbered per client process, from 1, so a restarted client
 * numbers its steps again from 1.  Every message carries its sender's
 * incarnation (RtCtx.epoch), and rt_epoch_check keeps per task the
 * largest heard: a message from an older one is dropped, and a larger
 * one means the task restarted, so that what was kept of its earlier
 * incarnation (finished[], the table's and the queue's entries, the
 * specialisations it held, the step it drove here) is forgotten before
 * its first message is filed (spec/design.md "Restarts").  A third task's
 * TENSOR for a step of the process before may still come after that:
 * since a step id carries its client's tag (RT_STEP), a hash of the
 * client's incarnation, it is not that of any step of the new process,
 * and is dropped as of another incarnation (rt_step_stale).
 *
 * A received tensor stays in its nng message until tfg_rt_recv copies it
 * to the part's buffer: one copy, and none on the sending side beyond the
 * one into the message.  A send to the own task stores into the table.
 * tfg_rt_recv and tfg_rt_send themselves (runtime/aot.c) call rdv_recv
 * and rdv_send through the context, so that an AOT program, which has no
 * sockets, links none of this.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_int.h"

volatile int rt_stop_requested;

static int rdv_recv(struct RtCtx *c, uint32_t key, void *dst);
static int rdv_send(struct RtCtx *c, uint32_t key, const void *src);

/* This process's incarnation: the wall clock in nanoseconds, so that a
 * task started again gets a larger one than the process before it had,
 * on this machine or another whose clock agrees to within the time the
 * restart took.  A clock set back makes the new process look older, and
 * its messages are dropped with a warning naming it (rt_epoch_check).
 * Never 0, which stands for "none heard yet": a clock that fails or
 * reads before 1970 gives 1, as old as it gets. */
static uint64_t
incarnation(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec <= 0)
		return 1;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

tfg_status
rt_ctx_init(RtCtx *c, const TfgPlan *plan, int task, const TfgOptions *opt)
{
	memset(c, 0, sizeof *c);
	c->plan = plan;
	c->task = task;
	c->src = task < 0 ? RT_SRC_CONTROLLER : (uint16_t)task;
	c->name = task < 0 ? "controller" : plan->tasks[task].name;
	if (opt)
		c->opt = *opt;
	if (!(c->opt.startup_timeout > 0))
		c->opt.startup_timeout = 30;
	if (!(c->opt.step_timeout > 0))
		c->opt.step_timeout = 60;
	if (c->opt.controller_addr == NULL)
		c->opt.controller_addr = "127.0.0.1:0";
	c->sig = -1;
	c->client = -1;
	c->lost = -1;
	c->recv = rdv_recv;
	c->send = rdv_send;
	c->epoch = incarnation();
	c->tag = rt_step_tag(c->epoch);
	c->peers = calloc((size_t)plan->ntask, sizeof *c->peers);
	c->finished = calloc((size_t)plan->ntask, sizeof *c->finished);
	c->edge_bytes = calloc((size_t)plan->nedge + 1, sizeof *c->edge_bytes);
	if (!c->peers || !c->finished || !c->edge_bytes) {
		rt_ctx_free(c);
		return TFG_ENOMEM;
	}
	for (int i = 0; i < plan->nedge; i++) {
		if (!rt_edge_valid(&plan->edges[i])) {
			rt_ctx_free(c);
			return TFG_EINVAL;
		}
		c->edge_bytes[i] = rt_edge_nbytes(&plan->edges[i]);
	}
	c->base = plan;
	c->base_edge_bytes = c->edge_bytes;
	c->cur_spec = -1;
	return TFG_OK;
}

void
rt_ctx_free(RtCtx *c)
{
	for (int i = 0; i < c->ntab; i++)
		rt_msg_free(&c->tab[i]);
	for (int i = 0; i < c->nqueue; i++)
		rt_msg_free(&c->queue[i]);
	rt_net_close(c);
	if (c->base)
		rt_ctx_use(c, -1);
	rt_spec_free(c);
	if (c->arenas)
		for (int i = 0; i < c->plan->nsig; i++)
			free(c->arenas[i]);
	free(c->arenas);
	free(c->parts);
	free(c->tab);
	free(c->queue);
	free(c->peers);
	free(c->finished);
	free(c->edge_bytes);
	free(c->out);
	memset(c, 0, sizeof *c);
}

uint16_t
rt_step_tag(uint64_t epoch)
{
	/* splitmix64's finaliser: incarnations a few nanoseconds apart get
	   unrelated tags, so two in a row share one but once in 65536. */
	uint64_t z = epoch + 0x9e3779b97f4a7c15ull;

	z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ z >> 27) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint16_t)(z ^ z >> 16 ^ z >> 32 ^ z >> 48);
}

tfg_status
rt_step_next(RtCtx *c)
{
	if (c->counter >= RT_STEP_MAX)
		return tfg_error(&c->err, TFG_EINVAL, "%s has run out of step "
				 "ids after %llu steps: restart its server",
				 c->name, RT_STEP_MAX);
	c->step = RT_STEP(c->task, c->tag, ++c->counter);
	c->client = c->task;
	return TFG_OK;
}

/* The tag of client t's steps now: this process's own, or that of the
 * incarnation of t heard from last; -1 before any message of t. */
static long
client_tag(const RtCtx *c, int t)
{
	if (t == c->task)
		return c->tag;
	if (c->peers[t].epoch == 0)
		return -1;
	return c->peers[t].tag;
}

int
rt_step_stale(const RtCtx *c, uint64_t step)
{
	int t = (int)RT_STEP_CLIENT(step);
	long tag = client_tag(c, t);
	uint64_t f = c->finished[t];

	/* Of the process before a restart, a third task's tensor that came
	   after the restart was noticed, say; or one that a peer had
	   queued for this task's process before this one. */
	if (tag >= 0 && RT_STEP_TAG(step) != (uint32_t)tag)
		return 1;
	/* Of this process, but not started yet: of one before it that had
	   the same tag (once in 65536), or a forgery. */
	if (t == c->task && RT_STEP_NO(step) > c->counter)
		return 1;
	/* Ids of one incarnation increase: an ended step's or earlier. */
	return f != 0 && RT_STEP_TAG(f) == RT_STEP_TAG(step) && step <= f;
}

static int
msg_push(RtMsg **v, int *n, int *cap, const RtMsg *m)
{
	if (*n == *cap) {
		int nc = *cap ? 2 * *cap : 16;
		RtMsg *nv = realloc(*v, sizeof *nv * (size_t)nc);

		if (nv == NULL)
			return -1;
		*v = nv, *cap = nc;
	}
	(*v)[(*n)++] = *m;
	return 0;
}

/* Index of the table entry of `type` for `step` with the given key and
 * sender (-1: any), or -1. */
static int
tab_find(RtCtx *c, int type, uint64_t step, long key, int src)
{
	for (int i = 0; i < c->ntab; i++) {
		const RtHdr *h = &c->tab[i].h;

		if (h->type == type && h->step == step &&
		    (key < 0 || h->key == (uint32_t)key) &&
		    (src < 0 || h->src == src))
			return i;
	}
	return -1;
}

static void
tab_remove(RtCtx *c, int i)
{
	rt_msg_free(&c->tab[i]);
	c->tab[i] = c->tab[--c->ntab];
}

void
rt_body_url(char *buf, const RtMsg *m)
{
	size_t n = (size_t)m->h.nbytes;

	buf[0] = '\0';
	if (n == 0 || n >= RT_URL_MAX)
		return;
	for (size_t i = 0; i < n; i++)
		if (m->body[i] <= ' ' || m->body[i] > '~')
			return;
	memcpy(buf, m->body, n);
	buf[n] = '\0';
}

tfg_status
rt_send_text(RtCtx *c, const char *url, int type, uint64_t step,
	     uint32_t key, const char *buf, size_t n, TfgError *e)
{
	nng_msg *m;
	unsigned char *body;
	tfg_status st;

	if ((st = rt_msg_new(c, &m, &body, type, step, key, NULL, n, e)))
		return st;
	if (n)
		memcpy(body, buf, n);
	return rt_net_send_url(c, url, m, rt_now() + c->opt.step_timeout, e);
}

void
rt_answer_ping(RtCtx *c, RtMsg *m)
{
	char url[RT_URL_MAX];
	TfgError e;

	rt_body_url(url, m);
	if (url[0] == '\0')
		fprintf(stderr, "tfgc: error: %s: PING without a reply "
			"address (ignored)\n", c->name);
	else if (rt_send_text(c, url, RT_MSG_PONG, 0, 0, NULL, 0, &e))
		fprintf(stderr, "tfgc: error: %s: %s\n", c->name, e.msg);
}

void
rt_dispatch(RtCtx *c, RtMsg *m)
{
	switch (m->h.type) {
	case RT_MSG_TENSOR:
	case RT_MSG_DONE:
	case RT_MSG_ERROR:
	case RT_MSG_ABORT:
		/* Validation made sure client < ntask.  An ABORT is filed
		   like a tensor: the step's waits find it there, and
		   rt_step_end drops it with the step's other leftovers (or
		   the end of a later step of its client, if its START never
		   comes). */
		if (rt_step_stale(c, m->h.step)) {
			if (c->opt.verbose)
				fprintf(stderr, "tfg: %s: stale %s of step "
					"%llu dropped\n", c->name,
					rt_msg_name(m->h.type),
					RT_STEP_NO(m->h.step));
			break;
		}
		if (msg_push(&c->tab, &c->ntab, &c->captab, m) == 0)
			return;
		fprintf(stderr, "tfgc: error: %s: out of memory\n", c->name);
		break;
	case RT_MSG_PING:
		rt_answer_ping(c, m);
		break;
	case RT_MSG_START:
	case RT_MSG_SPECIALISE:
	case RT_MSG_RELEASE:
	case RT_MSG_RUN_SESSION:
	case RT_MSG_SHUTDOWN:
		if (c->task >= 0 &&
		    msg_push(&c->queue, &c->nqueue, &c->capqueue, m) == 0)
			return;
		fprintf(stderr, "tfgc: error: %s: %s dropped\n", c->name,
			c->task >= 0 ? "out of memory:" : "unexpected");
		break;
	default:
		fprintf(stderr, "tfgc: error: %s: unexpected %s from %s "
			"(ignored)\n", c->name, rt_msg_name(m->h.type),
			m->h.src < c->plan->ntask ?
			c->plan->tasks[m->h.src].name : "the controller");
		break;
	}
	rt_msg_free(m);
}

int
rt_queue_pop(RtCtx *c, RtMsg *out)
{
	if (c->nqueue == 0)
		return -1;
	*out = c->queue[0];
	memmove(c->queue, c->queue + 1, sizeof *c->queue * (size_t)--c->nqueue);
	return 0;
}

/* Whether a task this wait depends on went away: the one it waits for,
 * and for the step's client every task of the step. */
static int
gone_task(RtCtx *c, int peer)
{
	const RtSig *sig;

	if (peer >= 0 && rt_net_peer_gone(c, peer))
		return peer;
	if (c->client != c->task || c->sig < 0)
		return -1;
	sig = &c->plan->sigs[c->sig];
	for (int i = 0; i < sig->ntask; i++)
		if (sig->tasks[i] != c->task &&
		    rt_net_peer_gone(c, sig->tasks[i]))
			return sig->tasks[i];
	return -1;
}

/* Index of the ABORT of the current step, when this task runs a step
 * that another task drives; else -1. */
static int
abort_entry(RtCtx *c)
{
	if (c->sig < 0 || c->client == c->task)
		return -1;
	return tab_find(c, RT_MSG_ABORT, c->step, -1, -1);
}

int
rt_step_cancelled(RtCtx *c)
{
	return c->orphan || abort_entry(c) >= 0;
}

/* The error of a step that its client cancelled (rt_step_cancelled): by
 * its ABORT, or by restarting, since the new process knows nothing of
 * the step and waits for nothing of it. */
static tfg_status
cancelled(RtCtx *c, TfgError *e)
{
	int i = abort_entry(c);
	const RtMsg *x;

	if (c->orphan || i < 0)
		return tfg_error(e, TFG_ECANCELED, "step %llu cancelled: its "
				 "client %s restarted", RT_STEP_NO(c->step),
				 c->plan->tasks[c->client].name);
	x = &c->tab[i];
	return tfg_error(e, TFG_ECANCELED, "step %llu cancelled by its client "
			 "%s: %.*s", RT_STEP_NO(c->step),
			 c->plan->tasks[c->client].name, (int)x->h.nbytes,
			 x->body);
}

tfg_status
rt_step_poll(RtCtx *c, TfgError *e)
{
	RtMsg m;

	/* A PING answered from here sends too: it must not poll again. */
	if (c->polling || c->sig < 0 || c->client == c->task)
		return TFG_OK;
	c->polling = 1;
	if (rt_net_recv(c, &m, 0.001) == TFG_OK)
		rt_dispatch(c, &m);
	c->polling = 0;
	if (rt_step_cancelled(c))
		return cancelled(c, e);
	return TFG_OK;
}

/* Waits for the table entry (type, current step, key, src); sets *idx.
 * `what` describes it for messages ("'y2;...' from /job:local/task:1").
 * On a task the step's client drives, its ABORT (or its restart) ends
 * the wait at once: the client has given up on the step, so what is
 * waited for may never come. */
static tfg_status
rdv_wait(RtCtx *c, int type, long key, int src, int peer, const char *what,
	 int *idx)
{
	double deadline = rt_now() + c->opt.step_timeout, now;
	RtMsg m;
	tfg_status st;
	int i, g;

	for (;;) {
		if (rt_step_cancelled(c))
			return cancelled(c, &c->err);
		if ((i = tab_find(c, type, c->step, key, src)) >= 0) {
			*idx = i;
			return TFG_OK;
		}
		if (c->client == c->task &&
		    (i = tab_find(c, RT_MSG_ERROR, c->step, -1, -1)) >= 0) {
			const RtMsg *x = &c->tab[i];

			if (x->h.key == RT_ERROR_NO_PLAN)
				c->lost = x->h.src; /* spec.c */
			return tfg_error(&c->err, TFG_EPEER, "%.*s",
					 (int)(x->h.nbytes < 1000 ?
					       x->h.nbytes : 1000), x->body);
		}
		if ((g = gone_task(c, peer)) >= 0)
			return tfg_error(&c->err, TFG_ECLOSED,
					 "lost connection to %s while waiting "
					 "for %s (step %llu)",
					 c->plan->tasks[g].name, what,
					 RT_STEP_NO(c->step));
		if (rt_stop_requested)
			return tfg_error(&c->err, TFG_ECANCELED,
					 "interrupted while waiting for %s "
					 "(step %llu)", what,
					 RT_STEP_NO(c->step));
		now = rt_now();
		if (now >= deadline)
			return tfg_error(&c->err, TFG_ETIMEDOUT,
					 "timed out after %g s waiting for %s "
					 "(step %llu)", c->opt.step_timeout,
					 what, RT_STEP_NO(c->step));
		if (c->client == c->task && c->reply_url[0])
			rt_client_flush(c, 0); /* output or heartbeat */
		st = rt_net_recv(c, &m, deadline - now < 0.05 ?
				 deadline - now : 0.05);
		if (st == TFG_OK)
			rt_dispatch(c, &m);
		else if (st != TFG_ETIMEDOUT && st != TFG_EPROTO)
			return st;
	}
}

static int
rdv_recv(struct RtCtx *c, uint32_t key, void *dst)
{
	const RtEdge *edge;
	char what[512];
	tfg_status st;
	int i;

	if (key >= (uint32_t)c->plan->nedge || c->plan->edges[key].dst !=
	    c->task)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s: cannot receive edge %u here", c->name,
				 key);
	edge = &c->plan->edges[key];
	if (edge->src == c->task &&
	    tab_find(c, RT_MSG_TENSOR, c->step, key, -1) < 0)
		return tfg_error(&c->err, TFG_EPROTO,
				 "%s: local edge '%s' received before it was "
				 "sent (step %llu)", c->name, edge->name,
				 RT_STEP_NO(c->step));
	snprintf(what, sizeof what, "'%s' from %s", edge->name,
		 c->plan->tasks[edge->src].name);
	if ((st = rdv_wait(c, RT_MSG_TENSOR, key, -1, edge->src, what, &i)))
		return st;
	memcpy(dst, c->tab[i].body, c->edge_bytes[key]);
	tab_remove(c, i);
	return TFG_OK;
}

static int
rdv_send(struct RtCtx *c, uint32_t key, const void *src)
{
	const RtEdge *edge;
	size_t n;
	unsigned char *body;
	RtMsg m;
	tfg_status st;

	if (key >= (uint32_t)c->plan->nedge || c->plan->edges[key].src !=
	    c->task)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s: cannot send edge %u from here", c->name,
				 key);
	edge = &c->plan->edges[key];
	n = c->edge_bytes[key];
	/* cancelled since the last wait: nobody waits for it any more */
	if (rt_step_cancelled(c))
		return cancelled(c, &c->err);
	if ((st = rt_msg_new(c, &m.m, &body, RT_MSG_TENSOR, c->step, key,
			     edge, n, &c->err)))
		return st;
	if (n)
		memcpy(body, src, n);
	if (edge->dst != c->task)
		return rt_net_send(c, edge->dst, m.m,
				   rt_now() + c->opt.step_timeout, &c->err);
	/* Local hand-off: the same message, filed without the network. */
	rt_hdr_decode(&m.h, nng_msg_body(m.m));
	m.body = body;
	m.spec = c->cur_spec;
	if (msg_push(&c->tab, &c->ntab, &c->captab, &m) != 0) {
		rt_msg_free(&m);
		return tfg_error(&c->err, TFG_ENOMEM, "out of memory");
	}
	return TFG_OK;
}

void
rt_start_feeds(RtCtx *c, const RtMsg *start)
{
	const RtSig *sig = &c->plan->sigs[start->h.key];
	const unsigned char *p = start->body;
	RtMsg m;

	for (int i = 0; i < sig->nfeed; i++) {
		uint32_t key = sig->feeds[i].key;
		const RtEdge *e = &c->plan->edges[key];

		if (e->dst != c->task || e->src != sig->client)
			continue;
		rt_hdr_init(&m.h, c->plan, RT_MSG_TENSOR, start->h.step, key,
			    start->h.src, c->edge_bytes[key], start->h.epoch);
		m.m = NULL; /* the START owns the bytes */
		m.body = p;
		m.spec = c->cur_spec;
		p += c->edge_bytes[key];
		if (msg_push(&c->tab, &c->ntab, &c->captab, &m) != 0)
			fprintf(stderr, "tfgc: error: %s: out of memory\n",
				c->name);
	}
}

tfg_status
rt_wait_done(RtCtx *c, int task, const char *why, uint64_t *word)
{
	char what[300];
	tfg_status st;
	int i;

	snprintf(what, sizeof what, "%s to %s", c->plan->tasks[task].name,
		 why ? why : "finish");
	if ((st = rdv_wait(c, RT_MSG_DONE, -1, task, task, what, &i)))
		return st;
	if (word)
		*word = c->tab[i].h.nbytes >= 8 ? rt_get_le(c->tab[i].body, 8)
						 : 0;
	tab_remove(c, i);
	return TFG_OK;
}

void
rt_step_end(RtCtx *c)
{
	int client = (int)RT_STEP_CLIENT(c->step);
	uint32_t tag = RT_STEP_TAG(c->step);
	uint64_t f;

	/* A step whose client restarted while it ran here: finished[] and
	   the table's entries of that client are the new process's now
	   (rt_epoch_check dropped the step's own), and its step ids start
	   again at 1, so this one must not mark anything. */
	if (c->orphan) {
		c->orphan = 0;
	} else if (client >= 0 && client < c->plan->ntask) {
		f = c->finished[client];
		if (f == 0 || RT_STEP_TAG(f) != tag || c->step > f)
			c->finished[client] = c->step;
		/* This step's leftovers and those of earlier ones; and any
		   of a step of another incarnation of the client than this
		   step's, which no step here will take. */
		for (int i = c->ntab - 1; i >= 0; i--) {
			uint64_t s = c->tab[i].h.step;

			if (RT_STEP_CLIENT(s) == (uint64_t)client &&
			    (RT_STEP_TAG(s) != tag || s <= c->step))
				tab_remove(c, i);
		}
	}
	c->sig = -1;
	if (c->base)
		rt_ctx_use(c, -1);
}

/* "1763800000.123456789": an incarnation as the Unix time it started. */
static const char *
epoch_str(char *buf, size_t n, uint64_t epoch)
{
	snprintf(buf, n, "%llu.%09llu",
		 (unsigned long long)(epoch / 1000000000u),
		 (unsigned long long)(epoch % 1000000000u));
	return buf;
}

/* A message from an older incarnation of its task than one heard from
 * already: from a process that has ended (it was on its way when the
 * task restarted), or the task's clock went back.  Said once per task
 * and incarnation, since such a task's every message is dropped; and
 * per message with --verbose. */
static void
stale_incarnation(RtCtx *c, const RtHdr *h)
{
	RtPeer *p = &c->peers[h->src];
	const char *who = c->plan->tasks[h->src].name;
	char a[32], b[32];

	epoch_str(a, sizeof a, h->epoch);
	if (p->stale != h->epoch) {
		p->stale = h->epoch;
		fprintf(stderr, "tfgc: warning: %s: dropping messages from %s "
			"started at %s, older than its process started at %s "
			"heard from before (seconds since 1970: an ended "
			"process, or a clock set back?)\n", c->name, who, a,
			epoch_str(b, sizeof b, p->epoch));
	}
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: %s of step %llu from %s started at "
			"%s dropped (an earlier incarnation)\n", c->name,
			rt_msg_name(h->type), RT_STEP_NO(h->step), who, a);
}

/* Drops the table's entries of steps of client t, but those with tag
 * `keep` (-1: all). */
static void
forget_steps(RtCtx *c, int t, long keep)
{
	for (int i = c->ntab - 1; i >= 0; i--) {
		uint64_t s = c->tab[i].h.step;

		if (RT_STEP_CLIENT(s) == (uint64_t)t &&
		    (keep < 0 || RT_STEP_TAG(s) != (uint32_t)keep))
			tab_remove(c, i);
	}
}

/* Task t restarted: what this process kept of its earlier incarnation
 * goes.  The new process's step ids have another tag, so finished[t]
 * goes back to 0; the table's entries of t's steps (tensors from
 * anyone, its ABORTs) and what t queued here (START, SPECIALISE,
 * RELEASE) belong to steps the new one never started; a step of t that
 * runs here is cancelled (orphan), since nobody will finish it or wait
 * for it; and t holds none of the specialisations here any more. */
static void
restarted(RtCtx *c, int t, uint64_t epoch)
{
	char a[32], b[32];
	int n = 0;

	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: %s restarted (started at %s, the "
			"process before it at %s): its steps and "
			"specialisations here are forgotten\n", c->name,
			c->plan->tasks[t].name, epoch_str(a, sizeof a, epoch),
			epoch_str(b, sizeof b, c->peers[t].epoch));
	c->finished[t] = 0;
	forget_steps(c, t, -1);
	for (int i = 0; i < c->nqueue; i++) {
		if (c->queue[i].h.src == t)
			rt_msg_free(&c->queue[i]);
		else
			c->queue[n++] = c->queue[i];
	}
	c->nqueue = n;
	if (c->sig >= 0 && c->client == t)
		c->orphan = 1;
	rt_spec_forget(c, t);
}

int
rt_epoch_check(RtCtx *c, const RtHdr *h)
{
	RtPeer *p;

	/* Every `tfgc run` is a controller of its own, so the controller's
	   incarnations mean nothing; and no other process is this task
	   while this one runs. */
	if (h->src == RT_SRC_CONTROLLER || h->src == c->task)
		return 0;
	p = &c->peers[h->src];
	if (h->epoch < p->epoch) {
		stale_incarnation(c, h);
		return -1;
	}
	if (h->epoch > p->epoch) {
		/* The first message of the task: tensors of its steps that
		   came before it are of this incarnation, or of one before
		   (filed when this process knew none), which no step here
		   will take. */
		uint16_t tag = rt_step_tag(h->epoch);

		if (p->epoch != 0)
			restarted(c, h->src, h->epoch);
		else
			forget_steps(c, h->src, tag);
		p->epoch = h->epoch;
		p->tag = tag;
	}
	return 0;
}
