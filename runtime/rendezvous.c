/*
 * runtime/rendezvous.c: steps and the rendezvous of spec/design.md
 * (protocol layer, runtime/proto.h): tfg_rt_send and tfg_rt_recv, which
 * generated parts call, the step contexts (RtStep) they get, and the
 * inboxes they wait on.
 *
 * Each step running here owns an inbox (RtStep.inbox): its received
 * TENSOR messages by key, the DONE and ERROR messages a client collects
 * for its step, and the ABORT with which a client cancels a step it gave
 * up on (the step's waits then end at once: spec/design.md "Step
 * failures").  A message of a step not running here yet (a tensor sent
 * before its START came, an ABORT that overtook it) waits in the
 * process's early box, and moves into the step's inbox when the step
 * begins (step_link).  So a wait searches only its own step's messages,
 * a small array searched linearly: a step has a handful of edges, not
 * thousands, however many steps run in the process.
 * Filing an entry wakes the thread of the step it is for (RtStep.cv); a
 * wait is a loop of timed waits on that variable in slices, so that it
 * also notices its deadline, a peer that went away, or a stop request.
 *
 * Several steps may run in a process at once, on threads of their own:
 * steps of other clients beside one of its own session, say.  So whether
 * a message is stale cannot be told from the last step that ended: each
 * process keeps the steps running in it (RtProc.steps), and per client
 * the last of its steps accepted here (RtPeer.started).  A client sends
 * the STARTs of its steps in the order of their ids (RtProc.order), and
 * each task accepts them in the order they came (rt_proc_next), so a
 * message of an earlier step than that, which is not running here, is of
 * a step that ended here (or of one this task has no part in, which
 * sends it nothing).
 *
 * A received tensor stays in its message until tfg_rt_recv copies it
 * to the part's buffer, outside the lock: one copy, and none on the
 * sending side, which writes the header and then the tensor from the
 * part's buffer to the socket (RtBuf.tail; copied only if the peer is
 * not up and the message must wait).  A send to the own task files a
 * copy itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/proto.h"
#include "runtime/trace.h"
#include "runtime/proto_int.h"

/* The part ABI's calls (RtCtx, runtime/part.h) on the step's
 * rendezvous. */
static int
rdv_recv(RtCtx *x, uint32_t key, void *dst)
{
	return rt_step_recv(x->step, key, dst);
}

static int
rdv_send(RtCtx *x, uint32_t key, const void *src)
{
	return rt_step_send(x->step, key, src);
}

static int
rdv_send_rows(RtCtx *x, uint32_t key, const void *src, int64_t rows)
{
	return rt_step_send_rows(x->step, key, src, rows);
}

static int rdv_recv_ref(RtCtx *x, uint32_t key, void *dst, void **data);

static void
rdv_flush(RtCtx *x)
{
	(void)x;
	rt_net_flush_held();
}

void
rt_step_init(RtStep *c, RtProc *p)
{
	memset(c, 0, sizeof *c);
	c->proc = p;
	c->plan = p->plan;
	c->client = -1;
	c->sig = -1;
	c->lost = -1;
	pthread_cond_init(&c->cv, NULL);
}

void
rt_part_init(RtCtx *x, RtStep *s)
{
	memset(x, 0, sizeof *x);
	x->recv = rdv_recv;
	x->send = rdv_send;
	x->send_rows = rdv_send_rows;
	x->recv_ref = rdv_recv_ref;
	x->flush = rdv_flush;
	x->step = s;
	x->no = RT_STEP_NO(s->step);
	x->who = s->client == s->proc->task ? s->proc->name : NULL;
	x->err = &s->err;
}

/* ------------------------------------------------------------- steps */

/* The step with id `step` running in p, or NULL. */
static RtStep *
step_find(const RtProc *p, uint64_t step)
{
	for (RtStep *c = p->steps; c; c = c->next)
		if (c->step == step)
			return c;
	return NULL;
}

/* c runs here from now on: its messages that came before it (tensors
 * sent before its START arrived, an ABORT that overtook it) move from
 * the process's early box into its inbox. */
static void
step_link(RtProc *p, RtStep *c)
{
	c->next = p->steps;
	p->steps = c;
	c->active = 1;
	for (int i = p->early.n - 1; i >= 0; i--)
		if (p->early.v[i].h.step == c->step) {
			RtMsg m = p->early.v[i];

			if (rt_box_push(&c->inbox, &m) != 0)
				break; /* out of memory: it stays early */
			p->early.v[i] = p->early.v[--p->early.n];
		}
}

static void
step_unlink(RtProc *p, RtStep *c)
{
	for (RtStep **q = &p->steps; *q; q = &(*q)->next)
		if (*q == c) {
			*q = c->next;
			break;
		}
	c->next = NULL;
	c->active = 0;
	if (!p->steps) /* rt_proc_idle */
		pthread_cond_broadcast(&p->idlecv);
}

static void
step_reset(RtStep *c, uint64_t step, int client, int sig)
{
	c->step = step;
	c->client = client;
	c->sig = sig;
	c->lost = -1;
	c->aborted = 0;
	c->orphan = 0;
	c->err.code = TFG_OK;
	c->err.msg[0] = '\0';
}

tfg_status
rt_step_begin(RtStep *c, const TfgPlan *plan, int sig)
{
	RtProc *p = c->proc;

	TFG_ASSERT(!c->active);
	pthread_mutex_lock(&p->order);
	pthread_mutex_lock(&p->mu);
	if (p->counter >= RT_STEP_MAX) {
		pthread_mutex_unlock(&p->mu);
		pthread_mutex_unlock(&p->order);
		return tfg_error(&c->err, TFG_EINVAL, "%s has run out of step "
				 "ids after %llu steps: restart its server",
				 p->name, RT_STEP_MAX);
	}
	step_reset(c, RT_STEP(p->task, p->tag, ++p->counter), p->task, sig);
	c->plan = plan ? plan : p->plan;
	step_link(p, c);
	pthread_mutex_unlock(&p->mu);
	return TFG_OK;
}

void
rt_step_sent(RtStep *c)
{
	pthread_mutex_unlock(&c->proc->order);
}

/* The tag of client t's steps now: this process's own, or that of the
 * incarnation of t heard from last; -1 before any message of t. */
static long
client_tag(const RtProc *p, int t)
{
	if (t == p->task)
		return p->tag;
	if (p->peers[t].epoch == 0)
		return -1;
	return p->peers[t].tag;
}

int
rt_step_stale(const RtProc *p, uint64_t step)
{
	int t = (int)RT_STEP_CLIENT(step);
	long tag = client_tag(p, t);
	uint64_t last = t == p->task ? 0 : p->peers[t].started;

	/* Of the process before a restart, a third task's tensor that came
	   after the restart was noticed, say; or one that a peer had
	   queued for this task's process before this one. */
	if (tag >= 0 && RT_STEP_TAG(step) != (uint32_t)tag)
		return 1;
	if (step_find(p, step))
		return 0;
	/* Of this process, not running: ended, never started, or of one
	   before it that had the same tag (once in 65536), or a forgery. */
	if (t == p->task)
		return 1;
	/* An earlier step of the client than its last one accepted here,
	   not running: ended here. */
	return last != 0 && RT_STEP_TAG(last) == RT_STEP_TAG(step) &&
	       step <= last;
}

/* Index of the entry of box b of `type` for `step` with the given key
 * and sender (-1: any), or -1. */
static int
box_find(const RtBox *b, int type, uint64_t step, long key, int src)
{
	for (int i = 0; i < b->n; i++) {
		const RtHdr *h = &b->v[i].h;

		if (h->type == type && h->step == step &&
		    (key < 0 || h->key == (uint32_t)key) &&
		    (src < 0 || h->src == src))
			return i;
	}
	return -1;
}

/* Takes entry i out of b (order does not matter). */
static RtMsg
box_take(RtBox *b, int i)
{
	RtMsg m = b->v[i];

	b->v[i] = b->v[--b->n];
	return m;
}

static void
box_remove(RtBox *b, int i)
{
	RtMsg m = box_take(b, i);

	rt_msg_free(&m);
}

static void
box_clear(RtBox *b)
{
	for (int i = 0; i < b->n; i++)
		rt_msg_free(&b->v[i]);
	b->n = 0;
}

void
rt_box_free(RtBox *b)
{
	box_clear(b);
	free(b->v);
	b->v = NULL;
	b->cap = 0;
}

/* Where a message of step c goes: its inbox while it runs here, else
 * the process's box of early ones. */
static RtBox *
box_of(RtProc *p, RtStep *c)
{
	return c && c->active ? &c->inbox : &p->early;
}

int
rt_step_accept_locked(RtProc *p, RtStep *c, const RtMsg *m, int sig)
{
	int client = m->h.src;
	uint64_t s = m->h.step, last;

	/* A step of its sender's, with the tag of its incarnation. */
	if (RT_STEP_CLIENT(s) != (uint64_t)client ||
	    RT_STEP_TAG(s) != rt_step_tag(m->h.epoch) ||
	    client == p->task) {
		fprintf(stderr, "tfgc: error: %s: %s from %s for a step it "
			"does not drive (ignored)\n", p->name,
			rt_msg_name(m->h.type), p->plan->tasks[client].name);
		return -1;
	}
	last = p->peers[client].started;
	if ((last != 0 && RT_STEP_TAG(last) == RT_STEP_TAG(s) && s <= last) ||
	    rt_step_stale(p, s))
		return -1; /* a duplicate */
	TFG_ASSERT(c != NULL && !c->active);
	p->peers[client].started = s;
	step_reset(c, s, client, sig);
	c->plan = p->plan;
	step_link(p, c);
	/* Its ABORT came first (not in order on one connection, but a
	   restarted peer's queue may replay anything). */
	c->aborted = box_find(&c->inbox, RT_MSG_ABORT, s, -1, -1) >= 0;
	return 0;
}

int
rt_step_accept(RtProc *p, RtStep *c, const RtMsg *m, int sig)
{
	int rv;

	pthread_mutex_lock(&p->mu);
	rv = rt_step_accept_locked(p, c, m, sig);
	pthread_mutex_unlock(&p->mu);
	return rv;
}

void
rt_step_end(RtStep *c)
{
	RtProc *p = c->proc;
	uint32_t tag = RT_STEP_TAG(c->step);
	int client = c->client;

	rt_net_flush_held();
	if (!c->active)
		return;
	pthread_mutex_lock(&p->mu);
	step_unlink(p, c);
	/* Its leftovers go.  A step whose client restarted while it ran
	   here leaves the early box alone: the entries of that client are
	   the new process's now.  Otherwise those of earlier steps of its
	   client that are not running go too, and any of a step of another
	   incarnation of the client than this step's, which no step here
	   will take. */
	rt_box_free(&c->inbox);
	if (!c->orphan && client >= 0 && client < p->plan->ntask) {
		for (int i = p->early.n - 1; i >= 0; i--) {
			uint64_t s = p->early.v[i].h.step;

			if (RT_STEP_CLIENT(s) == (uint64_t)client &&
			    (RT_STEP_TAG(s) != tag ||
			     (s <= c->step && !step_find(p, s))))
				box_remove(&p->early, i);
		}
	}
	pthread_mutex_unlock(&p->mu);
}

void
rt_tab_forget_locked(RtProc *p, int t, long keep)
{
	for (int i = p->early.n - 1; i >= 0; i--) {
		uint64_t s = p->early.v[i].h.step;

		if (RT_STEP_CLIENT(s) == (uint64_t)t &&
		    (keep < 0 || RT_STEP_TAG(s) != (uint32_t)keep))
			box_remove(&p->early, i);
	}
	/* the steps running here for that client: what they got is of an
	   incarnation that will send nothing more */
	for (RtStep *c = p->steps; c; c = c->next)
		if (RT_STEP_CLIENT(c->step) == (uint64_t)t &&
		    (keep < 0 || RT_STEP_TAG(c->step) != (uint32_t)keep))
			box_clear(&c->inbox);
}

void
rt_steps_orphan_locked(RtProc *p, int t)
{
	for (RtStep *c = p->steps; c; c = c->next)
		if (c->client == t && t != p->task) {
			c->orphan = 1;
			pthread_cond_signal(&c->cv);
		}
}

/* --------------------------------------------------------- filing */

void
rt_dispatch_locked(RtProc *p, RtMsg *m)
{
	RtStep *c;

	/* The controller's records are every message it gets. */
	if (p->task < 0) {
		if (rt_queue_push_locked(p, m) == 0)
			return;
		fprintf(stderr, "tfgc: error: %s: out of memory: %s dropped\n",
			p->name, rt_msg_name(m->h.type));
		rt_msg_free(m);
		return;
	}
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
		if (rt_step_stale(p, m->h.step)) {
			if (p->opt.verbose)
				fprintf(stderr, "tfg: %s: stale %s of step "
					"%llu dropped\n", p->name,
					rt_msg_name(m->h.type),
					RT_STEP_NO(m->h.step));
			break;
		}
		c = step_find(p, m->h.step);
		if (rt_box_push(box_of(p, c), m) != 0) {
			fprintf(stderr, "tfgc: error: %s: out of memory\n",
				p->name);
			break;
		}
		if (c != NULL) {
			if (m->h.type == RT_MSG_ABORT && c->client != p->task)
				c->aborted = 1;
			pthread_cond_signal(&c->cv);
		}
		return;
	case RT_MSG_PING:
	case RT_MSG_START:
	case RT_MSG_SPECIALISE:
	case RT_MSG_RELEASE:
	case RT_MSG_RUN_SESSION:
	case RT_MSG_SHUTDOWN:
	case RT_MSG_TRACE:
	case RT_MSG_STATS:
	case RT_MSG_LEAVE:
		if (rt_queue_push_locked(p, m) == 0)
			return;
		fprintf(stderr, "tfgc: error: %s: out of memory: %s dropped\n",
			p->name, rt_msg_name(m->h.type));
		break;
	default:
		fprintf(stderr, "tfgc: error: %s: unexpected %s from %s "
			"(ignored)\n", p->name, rt_msg_name(m->h.type),
			m->h.src < p->plan->ntask ?
			p->plan->tasks[m->h.src].name : "the controller");
		break;
	}
	rt_msg_free(m);
}

/* ------------------------------------------------------- cancellation */

int
rt_step_cancelled(const RtStep *c)
{
	return c->proc && c->client != c->proc->task &&
	       (c->aborted || c->orphan);
}

/* The error of a step that its client cancelled (rt_step_cancelled): by
 * its ABORT, or by restarting, since the new process knows nothing of
 * the step and waits for nothing of it.  Under RtProc.mu. */
static tfg_status
cancelled_locked(RtStep *c, TfgError *e)
{
	RtProc *p = c->proc;
	int i = c->orphan ? -1 : box_find(&c->inbox, RT_MSG_ABORT, c->step, -1,
					  -1);
	const RtMsg *x;

	if (i < 0)
		return tfg_error(e, TFG_ECANCELED, "step %llu cancelled: its "
				 "client %s restarted", RT_STEP_NO(c->step),
				 p->plan->tasks[c->client].name);
	x = &c->inbox.v[i];
	return tfg_error(e, TFG_ECANCELED, "step %llu cancelled by its client "
			 "%s: %.*s", RT_STEP_NO(c->step),
			 p->plan->tasks[c->client].name, (int)x->h.nbytes,
			 x->body);
}

tfg_status
rt_step_poll(RtStep *c, TfgError *e)
{
	tfg_status st;

	if (!rt_step_cancelled(c))
		return TFG_OK;
	pthread_mutex_lock(&c->proc->mu);
	st = cancelled_locked(c, e);
	pthread_mutex_unlock(&c->proc->mu);
	return st;
}

/* ------------------------------------------------------------- waits */

/* Whether a task this wait depends on is lost (rt_peer_lost, what to
 * say in why[n]): the one it waits for, and for the step's client every
 * task of the step. */
static int
lost_task(RtStep *c, int peer, char *why, size_t n)
{
	RtProc *p = c->proc;
	const RtSig *sig;

	if (peer >= 0 && rt_peer_lost(p, peer, why, n))
		return peer;
	if (c->client != p->task || c->sig < 0)
		return -1;
	sig = &c->plan->sigs[c->sig];
	for (int i = 0; i < sig->ntask; i++)
		if (sig->tasks[i] != p->task &&
		    rt_peer_lost(p, sig->tasks[i], why, n))
			return sig->tasks[i];
	return -1;
}

/* Waits for the table entry (type, step c, key, src) and takes it out
 * into *out (the caller frees it).  `what` describes it for messages
 * ("'y2;...' from /job:local/task:1").  On a task the step's client
 * drives, its ABORT (or its restart) ends the wait at once: the client
 * has given up on the step, so what is waited for may never come. */
static tfg_status
rdv_wait(RtStep *c, int type, long key, int src, int peer, const char *what,
	 RtMsg *out)
{
	RtProc *p = c->proc;
	double deadline = rt_step_deadline(p), now;
	char why[300];
	tfg_status st;
	int i;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (rt_step_cancelled(c)) {
			st = cancelled_locked(c, &c->err);
			break;
		}
		if ((i = box_find(&c->inbox, type, c->step, key, src)) >= 0) {
			*out = box_take(&c->inbox, i);
			st = TFG_OK;
			break;
		}
		if (c->client == p->task &&
		    (i = box_find(&c->inbox, RT_MSG_ERROR, c->step, -1,
				      -1)) >= 0) {
			const RtMsg *x = &c->inbox.v[i];

			if (x->h.key == RT_ERROR_NO_PLAN)
				c->lost = x->h.src; /* spec.c */
			st = tfg_error(&c->err, TFG_EPEER, "%.*s",
				       (int)(x->h.nbytes < 1000 ?
					     x->h.nbytes : 1000), x->body);
			break;
		}
		if (lost_task(c, peer, why, sizeof why) >= 0) {
			st = tfg_error(&c->err, TFG_ECLOSED, "%s while waiting "
				       "for %s (step %llu)", why, what,
				       RT_STEP_NO(c->step));
			break;
		}
		if (rt_stop_requested) {
			st = tfg_error(&c->err, TFG_ECANCELED,
				       "interrupted while waiting for %s "
				       "(step %llu)", what,
				       RT_STEP_NO(c->step));
			break;
		}
		now = rt_now();
		if (now >= deadline) {
			st = tfg_error(&c->err, TFG_ETIMEDOUT,
				       "--step-timeout (%g s) passed while "
				       "%s waited for %s (step %llu)",
				       p->opt.step_timeout, p->name, what,
				       RT_STEP_NO(c->step));
			break;
		}
		if (c->tick) {
			/* output or heartbeat: it sends, so not under mu */
			pthread_mutex_unlock(&p->mu);
			c->tick(c);
			pthread_mutex_lock(&p->mu);
			if (box_find(&c->inbox, type, c->step, key, src) >= 0)
				continue;
		}
		if (rt_net_holding()) {
			/* about to wait: first what this thread held back,
			   which may be what is waited on out there */
			pthread_mutex_unlock(&p->mu);
			rt_net_flush_held();
			pthread_mutex_lock(&p->mu);
			continue;
		}
		rt_cond_wait(&c->cv, &p->mu, deadline);
	}
	pthread_mutex_unlock(&p->mu);
	return st;
}

/* Posts dst for the TENSOR of edge `key` of step c to come (rt_net_land):
 * the transport reads its body straight into it, the part's buffer,
 * and the copy from the message is saved (spec/design.md "Transport").
 * A message matches by its header up to its sender: magic, version,
 * type, plan, step, key, src. */
static void
land_post(RtStep *c, const RtEdge *edge, uint32_t key, void *dst,
	  RtNetLand *l)
{
	unsigned char hdr[RT_HDR_SIZE];
	RtHdr h;

	rt_hdr_init(&h, c->plan, RT_MSG_TENSOR, c->step, key,
		    (uint16_t)edge->src, rt_edge_nbytes(edge), 0);
	rt_hdr_encode(hdr, &h);
	memset(l, 0, sizeof *l);
	memcpy(l->match, hdr, 30);
	l->nmatch = 30;
	l->off = RT_HDR_SIZE;
	l->len = RT_HDR_SIZE + rt_edge_nbytes(edge);
	l->dst = dst;
	rt_net_land(&c->proc->net, l);
}

/* Takes l back once the wait is over: what was filed with its body in
 * dst and not taken (a duplicate, or a wait that failed) goes. */
static void
land_done(RtStep *c, uint32_t key, RtNetLand *l)
{
	RtProc *p = c->proc;

	rt_net_unland(&p->net, l);
	pthread_mutex_lock(&p->mu);
	for (int i = c->inbox.n - 1; i >= 0; i--)
		if (c->inbox.v[i].body == l->dst &&
		    c->inbox.v[i].h.step == c->step && c->inbox.v[i].h.key == key)
			box_remove(&c->inbox, i);
	pthread_mutex_unlock(&p->mu);
}

tfg_status
rt_step_recv(RtStep *c, uint32_t key, void *dst)
{
	RtProc *p = c->proc;
	const RtEdge *edge;
	char what[512];
	tfg_status st;
	RtMsg m;
	int sent = 1, land;
	RtNetLand l;
	double t0;

	if (key >= (uint32_t)c->plan->nedge || c->plan->edges[key].dst !=
	    p->task)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s: cannot receive edge %u here", p->name,
				 key);
	edge = &c->plan->edges[key];
	if (edge->src == p->task) {
		pthread_mutex_lock(&p->mu);
		sent = box_find(box_of(p, c), RT_MSG_TENSOR, c->step, key,
				-1) >= 0;
		pthread_mutex_unlock(&p->mu);
	}
	if (!sent)
		return tfg_error(&c->err, TFG_EPROTO,
				 "%s: local edge '%s' received before it was "
				 "sent (step %llu)", p->name, edge->name,
				 RT_STEP_NO(c->step));
	/* the value's name, without the edge's ";src->dst" */
	snprintf(what, sizeof what, "'%.*s' from %s",
		 (int)strcspn(edge->name, ";"), edge->name,
		 p->plan->tasks[edge->src].name);
	t0 = rt_tracing ? rt_trace_clock() : 0;
	land = edge->src != p->task && edge->dtype != TFG_STRING &&
	       !edge->counted &&
	       rt_edge_nbytes(edge) + RT_HDR_SIZE >= RT_LAND_MIN;
	if (land)
		land_post(c, edge, key, dst, &l);
	/* A tensor was validated against the plan its header names, which
	   need not be the step's: a peer may name another specialisation
	   registered here, whose edge of this key has another size.  Such a
	   one is reported and dropped, and the wait goes on. */
	for (;;) {
		if ((st = rdv_wait(c, RT_MSG_TENSOR, key, -1, edge->src, what,
				   &m))) {
			if (land)
				land_done(c, key, &l);
			return st;
		}
		if (m.h.prog == c->plan->hash)
			break;
		fprintf(stderr, "tfgc: error: %s: bad TENSOR %s for step %llu: "
			"it is of plan %016llx, the step runs plan %016llx "
			"(ignored)\n", p->name, what, RT_STEP_NO(c->step),
			(unsigned long long)m.h.prog,
			(unsigned long long)c->plan->hash);
		rt_msg_free(&m);
	}
	if (land)
		land_done(c, key, &l);
	if (m.body != dst) /* else it was read into dst, and verified */
		memcpy(dst, m.body, edge->counted ? m.h.nbytes
						  : rt_edge_nbytes(edge));
	if (edge->counted) /* its rows past the count: padding */
		memset((char *)dst + m.h.nbytes, edge->counted ==
		       RT_COUNTED_IDS ? 0xff : 0, rt_edge_nbytes(edge) -
		       m.h.nbytes);
	if (rt_tracing && edge->src != p->task)
		rt_trace_event("recv", what, RT_STEP_NO(c->step),
			       m.h.nbytes, t0, rt_trace_clock());
	rt_msg_free(&m);
	return TFG_OK;
}

/* A value filed here without a message of its own (rt_feed_local: the
 * session's tensor; rt_start_feeds: the START's body, freed after the
 * step) stays put and unchanged until the step ends, so the part may
 * read it where it is when it is aligned as the part's slots are; any
 * other is received into dst. */
static int
rdv_recv_ref(RtCtx *x, uint32_t key, void *dst, void **data)
{
	RtStep *c = x->step;
	RtProc *p = c->proc;
	RtBox *b;
	int i;

	*data = dst;
	if (key >= (uint32_t)c->plan->nedge ||
	    c->plan->edges[key].dst != p->task ||
	    c->plan->edges[key].dtype == TFG_STRING)
		return rt_step_recv(c, key, dst);
	pthread_mutex_lock(&p->mu);
	b = box_of(p, c);
	i = box_find(b, RT_MSG_TENSOR, c->step, key, -1);
	if (i >= 0 && b->v[i].m == NULL && b->v[i].h.prog == c->plan->hash &&
	    b->v[i].h.nbytes == rt_edge_nbytes(&c->plan->edges[key]) &&
	    ((uintptr_t)b->v[i].body & 63) == 0) {
		*data = (void *)b->v[i].body;
		box_remove(b, i);
		pthread_mutex_unlock(&p->mu);
		return TFG_OK;
	}
	pthread_mutex_unlock(&p->mu);
	return rt_step_recv(c, key, dst);
}

tfg_status
rt_step_send(RtStep *c, uint32_t key, const void *src)
{
	return rt_step_send_rows(c, key, src, -1);
}

tfg_status
rt_step_send_rows(RtStep *c, uint32_t key, const void *src, int64_t rows)
{
	RtProc *p = c->proc;
	const RtEdge *edge;
	size_t n;
	unsigned char *body;
	RtMsg m;
	tfg_status st;
	char what[512];
	double t0;

	if (key >= (uint32_t)c->plan->nedge || c->plan->edges[key].src !=
	    p->task)
		return tfg_error(&c->err, TFG_EINVAL,
				 "%s: cannot send edge %u from here", p->name,
				 key);
	edge = &c->plan->edges[key];
	n = rt_edge_nbytes(edge);
	if (edge->counted && rows >= 0 && rows < edge->shape.dims[0])
		n = (size_t)rows * rt_edge_rowbytes(edge);
	/* cancelled since the last wait: nobody waits for it any more */
	if ((st = rt_step_poll(c, &c->err)) != TFG_OK)
		return st;
	if (edge->dst != p->task) {
		int hold = n + RT_HDR_SIZE <= RT_NET_HOLD_MAX;

		/* small: copied, and held back to leave with the step's next
		   sends to that task, when it next waits or ends; else the
		   tensor leaves from the part's buffer, no copy (after what
		   this thread held back for that task) */
		if ((st = rt_msg_new(p, c->plan, &m.m, hold ? &body : NULL,
				     RT_MSG_TENSOR, c->step, key, edge, n,
				     &c->err)))
			return st;
		if (!hold) {
			m.m->tail = src;
			m.m->ntail = n;
		} else if (n) {
			memcpy(body, src, n);
		}
		t0 = rt_tracing ? rt_trace_clock() : 0;
		st = (hold ? rt_send_held : rt_send)(p, edge->dst, m.m,
						     rt_step_deadline(p), c,
						     &c->err);
		if (!rt_tracing)
			return st;
		snprintf(what, sizeof what, "'%.*s' to %s",
			 (int)strcspn(edge->name, ";"), edge->name,
			 p->plan->tasks[edge->dst].name);
		rt_trace_event("send", what, RT_STEP_NO(c->step), n, t0,
			       rt_trace_clock());
		return st;
	}
	if ((st = rt_msg_new(p, c->plan, &m.m, &body, RT_MSG_TENSOR, c->step,
			     key, edge, n, &c->err)))
		return st;
	if (n)
		memcpy(body, src, n);
	/* Local hand-off: the same message, filed without the network. */
	rt_hdr_decode(&m.h, m.m->data);
	m.body = body;
	m.lost = 0;
	pthread_mutex_lock(&p->mu);
	st = rt_box_push(box_of(p, c), &m) == 0 ? TFG_OK : TFG_ENOMEM;
	pthread_mutex_unlock(&p->mu);
	if (st != TFG_OK) {
		rt_msg_free(&m);
		return tfg_error(&c->err, TFG_ENOMEM, "out of memory");
	}
	return TFG_OK;
}

/* Files a TENSOR entry of edge key for step c->step whose bytes are
 * borrowed (m.m NULL): whoever owns them keeps them until the step
 * ends.  0, or -1 out of memory. */
static int
push_borrowed_locked(RtStep *c, uint32_t key, int src, uint64_t epoch,
		     const void *body)
{
	RtMsg m;

	rt_hdr_init(&m.h, c->plan, RT_MSG_TENSOR, c->step, key, (uint16_t)src,
		    rt_edge_nbytes(&c->plan->edges[key]), epoch);
	m.m = NULL;
	m.body = body;
	m.lost = 0;
	return rt_box_push(box_of(c->proc, c), &m);
}

tfg_status
rt_feed_local(RtStep *c, uint32_t key, const void *src)
{
	RtProc *p = c->proc;
	tfg_status st;

	if (key >= (uint32_t)c->plan->nedge ||
	    c->plan->edges[key].dst != p->task)
		return tfg_error(&c->err, TFG_EINVAL, "%s: edge %u is not a "
				 "feed of this task", p->name, key);
	if ((st = rt_step_poll(c, &c->err)) != TFG_OK)
		return st;
	pthread_mutex_lock(&p->mu); /* the session owns the bytes */
	st = push_borrowed_locked(c, key, p->task, p->epoch, src) == 0
		     ? TFG_OK : TFG_ENOMEM;
	pthread_mutex_unlock(&p->mu);
	if (st != TFG_OK)
		return tfg_error(&c->err, TFG_ENOMEM, "out of memory");
	return TFG_OK;
}

void
rt_start_feeds(RtStep *c, const RtMsg *start)
{
	RtProc *p = c->proc;
	const RtSig *sig = &c->plan->sigs[start->h.key];
	const unsigned char *b = start->body;

	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < sig->nfeed; i++) {
		uint32_t key = sig->feeds[i].key;
		const RtEdge *e = &c->plan->edges[key];

		if (e->dst != p->task || e->src != sig->client ||
		    rt_feed_apart(e))
			continue; /* apart: its TENSOR comes behind */
		/* the START owns the bytes */
		if (push_borrowed_locked(c, key, start->h.src, start->h.epoch,
					 b) != 0)
			fprintf(stderr, "tfgc: error: %s: out of memory\n",
				p->name);
		b += rt_edge_nbytes(e);
	}
	pthread_mutex_unlock(&p->mu);
}

tfg_status
rt_wait_done(RtStep *c, int task, const char *why, uint64_t *word,
	     uint64_t *epoch)
{
	char what[300];
	tfg_status st;
	RtMsg m;

	double t0 = rt_tracing ? rt_trace_clock() : 0;

	snprintf(what, sizeof what, "%s to %s", c->plan->tasks[task].name,
		 why ? why : "finish");
	if ((st = rdv_wait(c, RT_MSG_DONE, -1, task, task, what, &m)))
		return st;
	rt_trace_event("wait", what, RT_STEP_NO(c->step), 0, t0,
		       rt_trace_clock());
	if (word)
		*word = m.h.nbytes >= 8 ? rt_get_le(m.body, 8) : 0;
	if (epoch)
		*epoch = m.h.epoch;
	rt_msg_free(&m);
	return TFG_OK;
}

void
rt_reply(RtStep *c, uint32_t key, const char *text)
{
	RtProc *p = c->proc;
	char buf[sizeof c->err.msg + 100];
	RtBuf *reply;
	unsigned char *body;
	TfgError e;
	size_t n = 0;

	rt_net_flush_held(); /* the step's sends before its end */
	if (text) {
		n = (size_t)snprintf(buf, sizeof buf, "%s: %s", p->name, text);
		if (n >= sizeof buf)
			n = sizeof buf - 1;
	}
	if (rt_msg_new(p, c->plan, &reply, &body,
		       text ? RT_MSG_ERROR : RT_MSG_DONE, c->step, key, NULL, n,
		       &e) == TFG_OK) {
		if (n)
			memcpy(body, buf, n);
		if (rt_send(p, c->client, reply, rt_step_deadline(p), c,
			    &e) == TFG_OK)
			return;
	}
	/* cancelled while it waited to leave: the client wants none */
	if (!rt_step_cancelled(c) || p->opt.verbose)
		fprintf(stderr, "tfgc: error: %s: %s\n", p->name, e.msg);
}
