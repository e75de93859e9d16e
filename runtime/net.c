/*
 * runtime/net.c: the nng side of the runtime (spec/design.md "Transport").
 *
 * Every process has one pull0 socket it listens on, and one push0 socket
 * per task it talks to, dialed non-blocking at start so that nng redials
 * until the peer is up.  Replies to the controller go through push0
 * sockets made on first use for the URL named in PING/RUN_SESSION/SHUTDOWN.
 *
 * Everything runs on the caller's thread: a wait is a loop of short
 * nng_recvmsg/nng_sendmsg calls (RECVTIMEO/SENDTIMEO of one slice), so that
 * between slices it can notice a deadline, a stop request, or a peer that
 * went away.  A peer going away is seen through nng_pipe_notify on the
 * push socket to it: the callback (an nng thread) only stores an atomic
 * state, which the waiting thread reads.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_int.h"

#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#define NET_SLICE_MS 50
#define NET_SENDBUF 128 /* messages queued per push socket */
#define NET_RECVBUF 128

double
rt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
rt_url(char *buf, size_t n, const char *addr)
{
	if (strstr(addr, "://"))
		snprintf(buf, n, "%s", addr);
	else
		snprintf(buf, n, "tcp://%s", addr);
}

static tfg_status
nng_code(int rv)
{
	switch (rv) {
	case 0:
		return TFG_OK;
	case NNG_EADDRINUSE:
		return TFG_EADDRINUSE;
	case NNG_ETIMEDOUT:
		return TFG_ETIMEDOUT;
	case NNG_ENOMEM:
		return TFG_ENOMEM;
	case NNG_ECONNREFUSED:
	case NNG_ECONNRESET:
	case NNG_ECONNSHUT:
	case NNG_ECONNABORTED:
	case NNG_EUNREACHABLE:
	case NNG_EPEERAUTH:
		return TFG_ECONN;
	case NNG_ECLOSED:
		return TFG_ECLOSED;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
	case NNG_ENOTSUP:
		return TFG_EINVAL;
	case NNG_EMSGSIZE:
		return TFG_ETOOBIG;
	case NNG_EPROTO:
		return TFG_EPROTO;
	case NNG_ECANCELED:
	case NNG_EINTR:
		return TFG_ECANCELED;
	default:
		return TFG_ESYS;
	}
}

/* "<context>: <nng's text>", with nng's text starting lowercase as our
 * messages do ("address in use"). */
tfg_status
rt_nng_error(TfgError *e, int rv, const char *fmt, ...)
{
	char ctx[700], txt[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof ctx, fmt, ap);
	va_end(ap);
	snprintf(txt, sizeof txt, "%s", nng_strerror(rv));
	txt[0] = (char)tolower((unsigned char)txt[0]);
	return tfg_error(e, nng_code(rv), "%s: %s", ctx, txt);
}

tfg_status
rt_net_listen(RtCtx *c, const char *url, TfgError *e)
{
	nng_listener l;
	int rv, port;
	const char *colon;

	if ((rv = nng_pull0_open(&c->pull)) != 0)
		return rt_nng_error(e, rv, "%s: cannot open a socket", c->name);
	c->pull_open = 1;
	nng_socket_set_size(c->pull, NNG_OPT_RECVMAXSZ,
			    RT_HDR_SIZE + (size_t)RT_MAX_BODY);
	nng_socket_set_int(c->pull, NNG_OPT_RECVBUF, NET_RECVBUF);
	if ((rv = nng_listen(c->pull, url, &l, 0)) != 0)
		return rt_nng_error(e, rv, "%s: cannot listen on %s", c->name,
				    url);
	snprintf(c->url, sizeof c->url, "%s", url);
	/* Port 0: name the port the system chose, so replies can find us. */
	colon = strrchr(url, ':');
	if (colon && strcmp(colon, ":0") == 0 &&
	    nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0)
		snprintf(c->url, sizeof c->url, "%.*s:%d",
			 (int)(colon - url), url, port);
	return TFG_OK;
}

static void
pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	_Atomic int *state = arg;

	(void)p;
	if (ev == NNG_PIPE_EV_ADD_POST)
		*state = 1;
	else if (ev == NNG_PIPE_EV_REM_POST && *state == 1)
		*state = 2;
}

/* A push socket dialed non-blocking at url; nng keeps redialing. */
static int
push_open(nng_socket *s, const char *url, _Atomic int *state)
{
	int rv;

	if ((rv = nng_push0_open(s)) != 0)
		return rv;
	nng_socket_set_int(*s, NNG_OPT_SENDBUF, NET_SENDBUF);
	nng_socket_set_ms(*s, NNG_OPT_RECONNMINT, 10);
	nng_socket_set_ms(*s, NNG_OPT_RECONNMAXT, 200);
	nng_socket_set_ms(*s, NNG_OPT_SENDTIMEO, NET_SLICE_MS);
	nng_pipe_notify(*s, NNG_PIPE_EV_ADD_POST, pipe_cb, (void *)state);
	nng_pipe_notify(*s, NNG_PIPE_EV_REM_POST, pipe_cb, (void *)state);
	if ((rv = nng_dial(*s, url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
		nng_close(*s);
		return rv;
	}
	return 0;
}

void
rt_net_dial_peers(RtCtx *c)
{
	char url[RT_URL_MAX];

	for (int i = 0; i < c->plan->ntask; i++) {
		if (i == c->task)
			continue;
		rt_url(url, sizeof url, c->plan->tasks[i].addr);
		if (push_open(&c->peers[i].sock, url, &c->peers[i].state) == 0)
			c->peers[i].open = 1;
		else
			fprintf(stderr,
				"tfgc: error: %s: cannot dial %s (%s)\n",
				c->name, c->plan->tasks[i].name, url);
	}
}

tfg_status
rt_msg_new(RtCtx *c, nng_msg **out, unsigned char **body, int type,
	   uint64_t step, uint32_t key, const RtEdge *edge, size_t nbytes,
	   TfgError *e)
{
	RtHdr h;
	nng_msg *m;
	int rv;

	*out = NULL;
	if ((uint64_t)nbytes > RT_MAX_BODY)
		return tfg_error(e, TFG_ETOOBIG,
				 "cannot send %zu bytes in one message (the "
				 "limit is %llu)", nbytes,
				 (unsigned long long)RT_MAX_BODY);
	if ((rv = nng_msg_alloc(&m, RT_HDR_SIZE + nbytes)) != 0)
		return rt_nng_error(e, rv, "%s: cannot allocate a message",
				    c->name);
	/* Messages of a step go out under the plan of the step (a
	   specialisation's, spec.c); the rest under the process's own. */
	rt_hdr_init(&h, type == RT_MSG_START || type == RT_MSG_TENSOR ||
			type == RT_MSG_DONE || type == RT_MSG_ERROR ||
			!c->base ? c->plan : c->base,
		    type, step, key, c->src, nbytes, c->epoch);
	if (edge) {
		h.dtype = (uint8_t)edge->dtype;
		h.rank = (uint8_t)edge->shape.rank;
		for (int i = 0; i < edge->shape.rank; i++)
			h.dims[i] = (uint64_t)edge->shape.dims[i];
	}
	rt_hdr_encode(nng_msg_body(m), &h);
	*out = m;
	if (body)
		*body = (unsigned char *)nng_msg_body(m) + RT_HDR_SIZE;
	return TFG_OK;
}

/* Sends m on s in slices until deadline; gives up early when the pipe
 * state says the peer went away, a stop was requested, or the step this
 * task runs for another task's client was cancelled: between slices
 * rt_step_poll receives what came meanwhile, its ABORT included, since a
 * send blocked on a peer that stopped reading must not outlast it. */
static tfg_status
send_slices(RtCtx *c, nng_socket s, _Atomic int *state, const char *to,
	    nng_msg *m, double deadline, TfgError *e)
{
	tfg_status st;
	int rv;

	for (;;) {
		rv = nng_sendmsg(s, m, 0);
		if (rv == 0)
			return TFG_OK;
		if (rv != NNG_ETIMEDOUT && rv != NNG_EAGAIN) {
			nng_msg_free(m);
			return rt_nng_error(e, rv, "%s: cannot send to %s",
					    c->name, to);
		}
		if (*state == 2) {
			nng_msg_free(m);
			return tfg_error(e, TFG_ECLOSED,
					 "lost connection to %s", to);
		}
		if (rt_stop_requested) {
			nng_msg_free(m);
			return tfg_error(e, TFG_ECANCELED, "interrupted");
		}
		if ((st = rt_step_poll(c, e)) != TFG_OK) {
			nng_msg_free(m);
			return st;
		}
		if (rt_now() >= deadline) {
			nng_msg_free(m);
			return tfg_error(e, TFG_ETIMEDOUT,
					 "timed out sending to %s (not up?)",
					 to);
		}
	}
}

tfg_status
rt_net_send(RtCtx *c, int peer, nng_msg *m, double deadline, TfgError *e)
{
	RtPeer *p;

	if (peer < 0 || peer >= c->plan->ntask || !c->peers[peer].open) {
		nng_msg_free(m);
		return tfg_error(e, TFG_EINVAL, "%s: no connection to task %d",
				 c->name, peer);
	}
	p = &c->peers[peer];
	return send_slices(c, p->sock, &p->state, c->plan->tasks[peer].name,
			   m, deadline, e);
}

static RtReply *
reply_get(RtCtx *c, const char *url, TfgError *e)
{
	RtReply *r;
	int rv;

	for (int i = 0; i < c->nreply; i++)
		if (strcmp(c->replies[i]->url, url) == 0)
			return c->replies[i];
	if (c->nreply == (int)(sizeof c->replies / sizeof c->replies[0])) {
		/* Many controllers over time (tfgc stop, --attach): recycle
		 * the oldest. */
		nng_close(c->replies[0]->sock);
		free(c->replies[0]);
		memmove(c->replies, c->replies + 1,
			sizeof c->replies[0] * (size_t)--c->nreply);
	}
	if ((r = calloc(1, sizeof *r)) == NULL) {
		tfg_error(e, TFG_ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(r->url, sizeof r->url, "%s", url);
	if ((rv = push_open(&r->sock, url, &r->state)) != 0) {
		rt_nng_error(e, rv, "%s: cannot dial %s", c->name, url);
		free(r);
		return NULL;
	}
	c->replies[c->nreply++] = r;
	return r;
}

tfg_status
rt_net_send_url(RtCtx *c, const char *url, nng_msg *m, double deadline,
		TfgError *e)
{
	RtReply *r;

	if ((r = reply_get(c, url, e)) == NULL) {
		nng_msg_free(m);
		return e ? e->code : TFG_ECONN;
	}
	return send_slices(c, r->sock, &r->state, url, m, deadline, e);
}

int
rt_net_url_gone(RtCtx *c, const char *url)
{
	for (int i = 0; i < c->nreply; i++)
		if (strcmp(c->replies[i]->url, url) == 0)
			return c->replies[i]->state == 2;
	return 0;
}

int
rt_net_peer_gone(RtCtx *c, int peer)
{
	if (peer < 0 || peer >= c->plan->ntask || !c->peers[peer].open)
		return 0;
	return c->peers[peer].state == 2;
}

int
rt_net_peer_up(RtCtx *c, int peer)
{
	if (peer < 0 || peer >= c->plan->ntask || !c->peers[peer].open)
		return 0;
	return c->peers[peer].state == 1;
}

/* "127.0.0.1:40123": the far end of the pipe m came on. */
static void
msg_addr(char *buf, size_t n, nng_msg *m)
{
	nng_sockaddr sa;
	nng_pipe p = nng_msg_get_pipe(m);
	const unsigned char *a;

	snprintf(buf, n, "an unknown peer");
	if (nng_pipe_id(p) < 0 ||
	    nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
		return;
	if (sa.s_family == NNG_AF_INET) {
		a = (const unsigned char *)&sa.s_in.sa_addr;
		snprintf(buf, n, "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3],
			 (unsigned)((sa.s_in.sa_port & 0xff) << 8 |
				    sa.s_in.sa_port >> 8));
	} else if (sa.s_family == NNG_AF_INET6) {
		a = sa.s_in6.sa_addr;
		snprintf(buf, n, "[%x:%x:%x:%x:%x:%x:%x:%x]:%u",
			 a[0] << 8 | a[1], a[2] << 8 | a[3], a[4] << 8 | a[5],
			 a[6] << 8 | a[7], a[8] << 8 | a[9], a[10] << 8 | a[11],
			 a[12] << 8 | a[13], a[14] << 8 | a[15],
			 (unsigned)((sa.s_in6.sa_port & 0xff) << 8 |
				    sa.s_in6.sa_port >> 8));
	}
}

tfg_status
rt_net_recv(RtCtx *c, RtMsg *out, double slice)
{
	const TfgPlan *plan;
	int ms = (int)(slice * 1000 + 0.5), rv, lost = 0;
	tfg_status (*check)(RtHdr *, const TfgPlan *, int, const void *,
			    size_t, const char *, TfgError *);
	nng_msg *m;
	TfgError e;
	char addr[80];
	tfg_status st;

	if (ms < 1)
		ms = 1;
	if (ms != c->recv_ms) {
		nng_socket_set_ms(c->pull, NNG_OPT_RECVTIMEO, ms);
		c->recv_ms = ms;
	}
	if ((rv = nng_recvmsg(c->pull, &m, 0)) != 0) {
		if (rv == NNG_ETIMEDOUT)
			return TFG_ETIMEDOUT;
		return rt_nng_error(&c->err, rv, "%s: receive failed",
				    c->name);
	}
	/* The plan the message belongs to: the own one, or a
	   specialisation's (spec.c); else the own one, which refuses it,
	   but for a START of a specialisation this task lost, which gets
	   in to be answered (rt_wire_check_lost). */
	plan = NULL;
	out->spec = -1;
	if (nng_msg_len(m) >= RT_HDR_SIZE)
		plan = rt_plan_of(c, rt_get_le((const unsigned char *)
					       nng_msg_body(m) + 8, 8),
				  &out->spec);
	if (plan == NULL) {
		plan = c->base ? c->base : c->plan;
		lost = plan->generic;
	}
	check = lost ? rt_wire_check_lost : rt_wire_check;
	st = check(&out->h, plan, c->task, nng_msg_body(m), nng_msg_len(m),
		   NULL, &e);
	if (st == TFG_OK && lost)
		out->spec = RT_SPEC_LOST;
	if (st != TFG_OK) {
		/* Again, now naming the transport address as well. */
		msg_addr(addr, sizeof addr, m);
		check(&out->h, plan, c->task, nng_msg_body(m), nng_msg_len(m),
		      addr, &e);
		fprintf(stderr, "tfgc: error: %s: %s (ignored)\n", c->name,
			e.msg);
		nng_msg_free(m);
		return TFG_EPROTO;
	}
	out->m = m;
	out->body = (const unsigned char *)nng_msg_body(m) + RT_HDR_SIZE;
	/* Only now, once it is known to be well-formed, may the message
	   speak for its task's incarnation: a garbled one can neither make
	   a task look restarted nor raise the incarnation recorded for it. */
	if (rt_epoch_check(c, &out->h) != 0) {
		rt_msg_free(out);
		return TFG_EPROTO;
	}
	if (c->opt.verbose)
		fprintf(stderr, "tfg: %s: got %s step %llu key %u from %u "
			"(%llu bytes)\n", c->name, rt_msg_name(out->h.type),
			RT_STEP_NO(out->h.step), out->h.key, out->h.src,
			(unsigned long long)out->h.nbytes);
	return TFG_OK;
}

void
rt_msg_free(RtMsg *m)
{
	if (m->m)
		nng_msg_free(m->m);
	m->m = NULL;
}

void
rt_net_close(RtCtx *c)
{
	if (c->pull_open)
		nng_close(c->pull);
	c->pull_open = 0;
	if (c->peers)
		for (int i = 0; i < c->plan->ntask; i++)
			if (c->peers[i].open) {
				nng_close(c->peers[i].sock);
				c->peers[i].open = 0;
			}
	for (int i = 0; i < c->nreply; i++) {
		nng_close(c->replies[i]->sock);
		free(c->replies[i]);
	}
	c->nreply = 0;
}
