/*
 * runtime/net.c: the transport layer (runtime/net.h, spec/design.md
 * "Transport"): nng sockets, dialing, sending in slices, and the one
 * posted receive whose completion hands each message up.
 *
 * Receiving is asynchronous (nng_recv_aio with a callback), not a
 * blocking call of some thread of ours: a message's completion runs on
 * nng's thread and hands it straight to the protocol, which files it and
 * wakes the one thread that waits for it.  That costs no more thread
 * hand-offs than a thread blocked in nng_recvmsg (nng completes that one
 * on the same kind of thread), and lets any number of threads wait for
 * their own messages at once.  The callback posts the next receive only
 * after the completion returned, so completions never overlap and
 * messages go up in the order they came.
 *
 * A peer going away is seen through nng_pipe_notify on the push socket to
 * it: the callback only stores an atomic state, which waiters read.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/net.h"
#include "runtime/rt_int.h"

#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#define NET_SENDBUF 128 /* messages queued per push socket */
#define NET_RECVBUF 128

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
rt_net_init(RtNet *n, const char *name, int npeer)
{
	memset(n, 0, sizeof *n);
	n->name = name;
	pthread_mutex_init(&n->mu, NULL);
	if (npeer > 0 &&
	    (n->peers = calloc((size_t)npeer, sizeof *n->peers)) == NULL)
		return TFG_ENOMEM;
	n->npeer = npeer;
	return TFG_OK;
}

tfg_status
rt_net_listen(RtNet *n, const char *url, size_t maxmsg, TfgError *e)
{
	nng_listener l;
	int rv, port;
	const char *colon;

	if ((rv = nng_pull0_open(&n->pull)) != 0)
		return rt_nng_error(e, rv, "%s: cannot open a socket", n->name);
	n->pull_open = 1;
	nng_socket_set_size(n->pull, NNG_OPT_RECVMAXSZ, maxmsg);
	nng_socket_set_int(n->pull, NNG_OPT_RECVBUF, NET_RECVBUF);
	if ((rv = nng_listen(n->pull, url, &l, 0)) != 0)
		return rt_nng_error(e, rv, "%s: cannot listen on %s", n->name,
				    url);
	snprintf(n->url, sizeof n->url, "%s", url);
	/* Port 0: name the port the system chose, so replies can find us. */
	colon = strrchr(url, ':');
	if (colon && strcmp(colon, ":0") == 0 &&
	    nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0)
		snprintf(n->url, sizeof n->url, "%.*s:%d",
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
link_open(RtLink *k, const char *url)
{
	int rv;

	snprintf(k->url, sizeof k->url, "%s", url);
	if ((rv = nng_push0_open(&k->sock)) != 0)
		return rv;
	nng_socket_set_int(k->sock, NNG_OPT_SENDBUF, NET_SENDBUF);
	nng_socket_set_ms(k->sock, NNG_OPT_RECONNMINT, 10);
	nng_socket_set_ms(k->sock, NNG_OPT_RECONNMAXT, 200);
	nng_socket_set_ms(k->sock, NNG_OPT_SENDTIMEO,
			  (int)(RT_NET_SLICE * 1000));
	nng_pipe_notify(k->sock, NNG_PIPE_EV_ADD_POST, pipe_cb,
			(void *)&k->state);
	nng_pipe_notify(k->sock, NNG_PIPE_EV_REM_POST, pipe_cb,
			(void *)&k->state);
	if ((rv = nng_dial(k->sock, url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
		nng_close(k->sock);
		return rv;
	}
	k->open = 1;
	return 0;
}

tfg_status
rt_net_dial(RtNet *n, int peer, const char *url, const char *name,
	    TfgError *e)
{
	int rv;

	if (peer < 0 || peer >= n->npeer)
		return tfg_error(e, TFG_EINVAL, "%s: no peer %d", n->name,
				 peer);
	n->peers[peer].name = name;
	if ((rv = link_open(&n->peers[peer], url)) != 0)
		return rt_nng_error(e, rv, "%s: cannot dial %s (%s)", n->name,
				    name, url);
	return TFG_OK;
}

static void
recv_cb(void *arg)
{
	RtNet *n = arg;
	int rv = nng_aio_result(n->aio);

	if (rv == 0)
		n->recv->done(n->recv, nng_aio_get_msg(n->aio));
	else if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
		return;
	if (!n->closing)
		nng_recv_aio(n->pull, n->aio);
}

tfg_status
rt_net_recv_start(RtNet *n, RtNetRecv *r, TfgError *e)
{
	int rv;

	if (!n->pull_open)
		return tfg_error(e, TFG_EINVAL, "%s: not listening", n->name);
	if ((rv = nng_aio_alloc(&n->aio, recv_cb, n)) != 0)
		return rt_nng_error(e, rv, "%s: cannot receive", n->name);
	n->recv = r;
	nng_recv_aio(n->pull, n->aio);
	return TFG_OK;
}

/* Sends m on link k in slices until deadline; gives up early when the
 * pipe state says the peer went away, or stop says so. */
static tfg_status
send_slices(RtNet *n, RtLink *k, nng_msg *m, double deadline,
	    RtNetStopFn stop, void *arg, TfgError *e)
{
	int rv;

	for (;;) {
		rv = nng_sendmsg(k->sock, m, 0);
		if (rv == 0)
			return TFG_OK;
		if (rv != NNG_ETIMEDOUT && rv != NNG_EAGAIN) {
			nng_msg_free(m);
			return rt_nng_error(e, rv, "%s: cannot send to %s",
					    n->name, k->name);
		}
		if (k->state == 2) {
			nng_msg_free(m);
			return tfg_error(e, TFG_ECLOSED,
					 "lost connection to %s", k->name);
		}
		if (stop && stop(arg, e)) {
			nng_msg_free(m);
			return e ? e->code : TFG_ECANCELED;
		}
		if (rt_now() >= deadline) {
			nng_msg_free(m);
			return tfg_error(e, TFG_ETIMEDOUT,
					 "timed out sending to %s (not up?)",
					 k->name);
		}
	}
}

tfg_status
rt_net_send(RtNet *n, int peer, nng_msg *m, double deadline,
	    RtNetStopFn stop, void *arg, TfgError *e)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open) {
		nng_msg_free(m);
		return tfg_error(e, TFG_EINVAL, "%s: no connection to task %d",
				 n->name, peer);
	}
	return send_slices(n, &n->peers[peer], m, deadline, stop, arg, e);
}

/* The reply link to url, dialed on first use; under n->mu.  Past
 * RT_NET_REPLIES (many controllers over time: tfgc stop, --attach) the
 * oldest is closed to make room, and freed by the last send that still
 * uses it (RtLink.busy). */
static RtLink *
reply_get(RtNet *n, const char *url, TfgError *e)
{
	RtLink *k;
	int rv;

	for (int i = 0; i < n->nreply; i++)
		if (strcmp(n->replies[i]->url, url) == 0)
			return n->replies[i];
	if ((k = calloc(1, sizeof *k)) == NULL) {
		tfg_error(e, TFG_ENOMEM, "out of memory");
		return NULL;
	}
	if ((rv = link_open(k, url)) != 0) {
		rt_nng_error(e, rv, "%s: cannot dial %s", n->name, url);
		free(k);
		return NULL;
	}
	k->name = k->url;
	if (n->nreply == RT_NET_REPLIES) {
		/* the oldest goes; sends on it fail from now on */
		nng_close(n->replies[0]->sock);
		n->replies[0]->open = 0;
		if (n->replies[0]->busy == 0)
			free(n->replies[0]);
		memmove(n->replies, n->replies + 1,
			sizeof n->replies[0] * (size_t)--n->nreply);
	}
	n->replies[n->nreply++] = k;
	return k;
}

tfg_status
rt_net_send_url(RtNet *n, const char *url, nng_msg *m, double deadline,
		RtNetStopFn stop, void *arg, TfgError *e)
{
	RtLink *k;

	tfg_status st;

	pthread_mutex_lock(&n->mu);
	if ((k = reply_get(n, url, e)) != NULL)
		k->busy++;
	pthread_mutex_unlock(&n->mu);
	if (k == NULL) {
		nng_msg_free(m);
		return e ? e->code : TFG_ECONN;
	}
	st = send_slices(n, k, m, deadline, stop, arg, e);
	pthread_mutex_lock(&n->mu);
	if (--k->busy == 0 && !k->open)
		free(k); /* recycled meanwhile */
	pthread_mutex_unlock(&n->mu);
	return st;
}

int
rt_net_url_gone(RtNet *n, const char *url)
{
	int gone = 0;

	pthread_mutex_lock(&n->mu);
	for (int i = 0; i < n->nreply; i++)
		if (strcmp(n->replies[i]->url, url) == 0)
			gone = n->replies[i]->state == 2;
	pthread_mutex_unlock(&n->mu);
	return gone;
}

int
rt_net_peer_gone(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	return n->peers[peer].state == 2;
}

int
rt_net_peer_up(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	return n->peers[peer].state == 1;
}

void
rt_net_addr(char *buf, size_t len, nng_msg *m)
{
	nng_sockaddr sa;
	nng_pipe p = nng_msg_get_pipe(m);
	const unsigned char *a;

	snprintf(buf, len, "an unknown peer");
	if (nng_pipe_id(p) < 0 ||
	    nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
		return;
	if (sa.s_family == NNG_AF_INET) {
		a = (const unsigned char *)&sa.s_in.sa_addr;
		snprintf(buf, len, "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3],
			 (unsigned)((sa.s_in.sa_port & 0xff) << 8 |
				    sa.s_in.sa_port >> 8));
	} else if (sa.s_family == NNG_AF_INET6) {
		a = sa.s_in6.sa_addr;
		snprintf(buf, len, "[%x:%x:%x:%x:%x:%x:%x:%x]:%u",
			 a[0] << 8 | a[1], a[2] << 8 | a[3], a[4] << 8 | a[5],
			 a[6] << 8 | a[7], a[8] << 8 | a[9], a[10] << 8 | a[11],
			 a[12] << 8 | a[13], a[14] << 8 | a[15],
			 (unsigned)((sa.s_in6.sa_port & 0xff) << 8 |
				    sa.s_in6.sa_port >> 8));
	}
}

void
rt_net_close(RtNet *n)
{
	n->closing = 1;
	if (n->aio) {
		nng_aio_stop(n->aio); /* waits for a completion that runs */
		nng_aio_free(n->aio);
		n->aio = NULL;
	}
	if (n->pull_open)
		nng_close(n->pull);
	n->pull_open = 0;
	for (int i = 0; n->peers && i < n->npeer; i++)
		if (n->peers[i].open) {
			nng_close(n->peers[i].sock);
			n->peers[i].open = 0;
		}
	for (int i = 0; i < n->nreply; i++) {
		nng_close(n->replies[i]->sock);
		free(n->replies[i]);
	}
	n->nreply = 0;
	free(n->peers);
	n->peers = NULL;
	n->npeer = 0;
	pthread_mutex_destroy(&n->mu);
}
