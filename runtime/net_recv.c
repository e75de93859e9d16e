/*
 * runtime/net_recv.c: the transport's receiving side (spec/design.md
 * "Transport"): accepted connections read frame by frame (keyed ones
 * checking each MAC, TLS ones through their session), pings answered,
 * and a frame's bytes landed straight into a place a step posted
 * (rt_net_land) or handed up whole to the protocol's completion.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/net_int.h"

#define NET_READ_TURN ((size_t)16 << 20)

/* Takes l off the places posted.  Under n->lmu. */
static void
land_unlink(RtNet *n, RtNetLand *l)
{
	for (RtNetLand **q = &n->lands; *q; q = &(*q)->next)
		if (*q == l) {
			*q = l->next;
			break;
		}
	l->next = NULL;
}

/* Where the next bytes of c's frame go (at most *room at *at): into the
 * place posted for it once one matches its first bytes (what came
 * before is copied there then), else into its buffer.  A frame whose
 * place was taken back midway is read over the start of its buffer:
 * its bytes only go into its MAC.  Under n->lmu, c->cur holding
 * c->got bytes of a frame of at least RT_LAND_MIN. */
static void
conn_land(RtNet *n, RtConn *c, unsigned char **at, size_t *room)
{
	RtNetLand *l = c->land;

	if (c->ldrop) {
		*at = c->cur->data;
		*room = c->want - c->got < c->cap ? c->want - c->got : c->cap;
		return;
	}
	if (l == NULL && c->got >= RT_LAND_MATCH) {
		c->lgen = n->lgen;
		c->ltry = 0;
		for (l = n->lands; l; l = l->next)
			if (l->conn == NULL && l->state == 0 &&
			    l->len == c->want && c->got >= l->off &&
			    memcmp(c->cur->data, l->match, l->nmatch) == 0)
				break;
		if (l == NULL)
			return;
		memcpy(l->dst, c->cur->data + l->off, c->got - l->off);
		l->conn = c;
		c->land = l;
	}
	if (l) {
		*at = l->dst + (c->got - l->off);
		*room = c->want - c->got;
	}
}

void
rt_net_land(RtNet *n, RtNetLand *l)
{
	pthread_mutex_lock(&n->lmu);
	l->conn = NULL;
	l->state = 0;
	l->next = n->lands;
	n->lands = l;
	n->lgen++;
	pthread_mutex_unlock(&n->lmu);
}

void
rt_net_unland(RtNet *n, RtNetLand *l)
{
	pthread_mutex_lock(&n->lmu);
	while (l->state == 1)
		pthread_cond_wait(&n->lcv, &n->lmu);
	if (l->state == 0) {
		land_unlink(n, l);
		if (l->conn) {
			l->conn->land = NULL;
			l->conn->ldrop = 1;
			l->conn = NULL;
		}
		l->state = 2;
	}
	pthread_mutex_unlock(&n->lmu);
}

void
net_conn_close(RtNet *n, RtConn *c)
{
	RtConn **p;

	for (p = &n->conns; *p && *p != c; p = &(*p)->next)
		;
	if (*p)
		*p = c->next;
	pthread_mutex_lock(&n->lmu);
	if (c->land) /* it may match the next frame: whole, from off */
		c->land->conn = NULL;
	c->land = NULL;
	pthread_mutex_unlock(&n->lmu);
	net_conn_shm_close(n, c); /* its ring's whole frames still come */
	epoll_ctl(n->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	rt_buf_free(c->cur);
	rt_auth_free(&c->in);
	rt_auth_free(&c->out);
	rt_tls_close(c->tls);
	free(c);
}

/* The kinds of refusal said once per host, then counted (conn_log). */
enum {
	LOG_KEY,       /* a connection without the key (MAC, HELLO) */
	LOG_GARBLED,   /* a frame that is no frame */
	LOG_OVERSIZED, /* a frame over the limit, or over UNPROVEN_MAX */
	LOG_DEADLINE,  /* no proof within PROVE_S */
	LOG_SLOW,      /* a frame coming slower than SLOW_RATE */
	LOG_CROWD,     /* too many unproven connections from one host */
	LOG_FULL,      /* no descriptors left: one shed or accepting paused */
	LOG__N
};

static const char *const log_what[LOG__N] = {
	"connections without this cluster's key", "garbled frames",
	"oversized frames", "connections that did not authenticate in time",
	"frames sent too slowly", "connections over the limit per host",
	"connections past the process's descriptor limit",
};

/* "1.2.3.4" of c's "1.2.3.4:5": each connection has another port. */
static void
conn_host(char *host, size_t n, const char *addr)
{
	size_t h = strlen(addr);

	while (h > 0 && addr[h - 1] != ':')
		h--;
	snprintf(host, n, "%.*s", h > 0 ? (int)h - 1 : 63, addr);
}

/* Says a refusal of kind from c's host, in `what` words, the first time
 * for that host and kind; after it, counts them, and net_log_tick says
 * the count once a minute.  A line for each could flood the log of a
 * server under attack (900 malformed messages made 900 lines), yet
 * saying each host once for good hid later refusals. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER; /* the I/O
						and the shm thread */

static void
conn_log(RtNet *n, const char *addr, int kind, const char *what)
{
	char host[64];
	struct RtNetLog *l;

	conn_host(host, sizeof host, addr);
	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < n->nlogs; i++) {
		l = &n->logs[i];
		if (l->kind == kind && strcmp(l->host, host) == 0) {
			l->more++;
			pthread_mutex_unlock(&log_mu);
			return;
		}
	}
	/* full: the entries are taken again in turn */
	l = &n->logs[n->nlogs < RT_NET_LOGS ? n->nlogs++
		     : (int)(n->lognext++ % RT_NET_LOGS)];
	snprintf(l->host, sizeof l->host, "%s", host);
	l->kind = kind;
	l->more = 0;
	pthread_mutex_unlock(&log_mu);
	fprintf(stderr, "tfgc: warning: %s: refused a connection from %s: "
		"%s (this task serves on, and counts more of these from %s "
		"once a minute)\n", n->name, addr, what, host);
}

/* Each minute: how many more of each refusal came, per host. */
static void
net_log_tick(RtNet *n, double now)
{
	if (now - n->log_said < 60)
		return;
	n->log_said = now;
	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < n->nlogs; i++) {
		struct RtNetLog *l = &n->logs[i];
		if (l->more == 0)
			continue;
		fprintf(stderr, "tfgc: warning: %s: refused %u more %s from "
			"%s in the last minute\n", n->name, l->more,
			log_what[l->kind], l->host);
		l->more = 0;
	}
	pthread_mutex_unlock(&log_mu);
}

static void
conn_refused(RtNet *n, RtConn *c, const char *what)
{
	conn_log(n, c->addr, LOG_KEY, what);
}

/* Out of descriptors (EMFILE, ENFILE): the oldest connection that has
 * not proved itself goes, or, with none, accepting pauses a moment;
 * otherwise the listening socket, level-triggered, woke the I/O thread
 * for good (20,000 idle connects put a ps at 100 % of a core and
 * starved a run).  Returns whether one went. */
static int
shed_one(RtNet *n)
{
	RtConn *old = NULL;

	for (RtConn *c = n->conns; c; c = c->next) /* newest first */
		if (!c->proven)
			old = c;
	if (old) {
		conn_log(n, old->addr, LOG_FULL, "no descriptors left: the "
			 "oldest connection that had not authenticated was "
			 "closed");
		net_conn_close(n, old);
		return 1;
	}
	conn_log(n, "-:0", LOG_FULL, "no descriptors left: accepting "
		 "pauses for 100 ms");
	n->accept_off = rt_now() + 0.1;
	epoll_ctl(n->ep, EPOLL_CTL_DEL, n->lfd, NULL);
	return 0;
}

/* Unproven connections from addr's host now. */
static int
host_unproven(RtNet *n, const char *addr)
{
	char host[64], h[64];
	int k = 0;

	conn_host(host, sizeof host, addr);
	for (RtConn *c = n->conns; c; c = c->next)
		if (!c->proven) {
			conn_host(h, sizeof h, c->addr);
			k += strcmp(h, host) == 0;
		}
	return k;
}

static void
accept_all(RtNet *n)
{
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof sa;
		struct epoll_event ev;
		RtConn *c;
		int fd = accept4(n->lfd, (struct sockaddr *)&sa, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE ||
			     errno == ENOBUFS || errno == ENOMEM) &&
			    shed_one(n))
				continue;
			return;
		}
		if ((c = calloc(1, sizeof *c)) == NULL) {
			close(fd);
			continue;
		}
		net_nodelay(fd);
		c->kind = EV_CONN;
		c->fd = fd;
		c->mac = n->keyed;
		c->born = rt_now();
		net_sockaddr_str(c->addr, sizeof c->addr, &sa);
		if (host_unproven(n, c->addr) >= HOST_UNPROVEN) {
			conn_log(n, c->addr, LOG_CROWD, "too many connections "
				 "from its host that have not authenticated");
			close(fd);
			free(c);
			continue;
		}
		if (n->tls && (c->tls = rt_tls_new(n->tls, fd, 1)) == NULL) {
			close(fd);
			free(c);
			continue;
		}
		c->hs = n->tls != NULL;
		c->next = n->conns;
		n->conns = c;
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = c;
		epoll_ctl(n->ep, EPOLL_CTL_ADD, fd, &ev);
	}
}

/* Twice a second: connections past their deadlines go, each said
 * (conn_log); accepting resumes after a pause.  A TLS handshake or a
 * HELLO that never ends held its connection for good (a ClientHello at
 * a byte a second: 23 s), and so did a frame at a byte a second (200
 * such, announcing 1 GiB each, for 30 s with nothing logged). */
static void
conn_sweep(RtNet *n, double now)
{
	RtConn *c, *next;

	if (n->accept_off > 0 && now >= n->accept_off) {
		struct epoll_event ev;
		n->accept_off = 0;
		ev.events = EPOLLIN;
		ev.data.ptr = &net_ev_listen;
		epoll_ctl(n->ep, EPOLL_CTL_ADD, n->lfd, &ev);
	}
	net_log_tick(n, now);
	if (now - n->swept < 0.5)
		return;
	n->swept = now;
	for (c = n->conns; c; c = next) {
		double took = now - c->fstart;
		next = c->next;
		if (c->rconn && atomic_load(&c->rconn->rbad)) {
			net_conn_close(n, c); /* its ring said nonsense */
		} else if (!c->proven && now - c->born > PROVE_S) {
			conn_log(n, c->addr, LOG_DEADLINE, "it did not "
				 "authenticate (answer a ping, deliver a "
				 "frame) within 10 s of connecting");
			net_conn_close(n, c);
		} else if (c->nhdr == FRAME_HDR && c->got < c->want &&
			   !c->wantx && took > SLOW_S &&
			   (double)c->got / took < SLOW_RATE) {
			conn_log(n, c->addr, LOG_SLOW, "a frame came slower "
				 "than 64 KiB/s for 10 s (connection closed)");
			net_conn_close(n, c);
		}
	}
}

/* Room in c->cur for the frame's next bytes: it grows as they come, so
 * that a forged length costs no memory before the bytes are there.
 * -1 out of memory. */
static int
conn_room(RtConn *c)
{
	size_t cap;
	RtBuf *b;

	if (c->cur && c->got < c->cap)
		return 0;
	cap = c->cap + (c->want - c->cap < GROW ? c->want - c->cap : GROW);
	if (!c->cur && cap == c->want) { /* whole at once: maybe pooled */
		if ((b = rt_buf_new(cap)) == NULL)
			return -1;
	} else if ((b = realloc(c->cur, sizeof *b + (cap ? cap : 1))) !=
		   NULL) {
		b->cap = cap;
		b->data = (unsigned char *)(b + 1);
	} else {
		return -1;
	}
	if (!c->cur)
		snprintf(b->from, sizeof b->from, "%s", c->addr);
	b->tail = NULL;
	b->ntail = 0;
	b->landed = NULL;
	b->landoff = 0;
	c->cur = b;
	c->cap = cap;
	return 0;
}

/* What the bytes after a word or a frame of an accepted connection are
 * (RtConn.xkind). */
enum { X_HELLO = 1, X_PING, X_TAG, X_SHM };

/* Refuses c: the word that says why goes back (best effort: a peer that
 * is no member of the cluster gets nothing else), and the caller closes
 * it.  Always -1. */
static int
conn_deny(RtNet *n, RtConn *c, uint64_t why, const char *what)
{
	unsigned char w[8];

	net_word_put(w, why);
	/* in the clear to a peer that never got as far as TLS */
	if (net_io_send(c->hs ? NULL : c->tls, c->fd, w, sizeof w) < 0) {
		/* it reads nothing, or is gone */
	}
	conn_refused(n, c, what);
	return -1;
}

/* Writes what is left of c's answer to a ping: 0, or -1 when the
 * connection broke. */
static int
conn_flush(RtConn *c)
{
	ssize_t w;

	if (c->lpong == 0)
		return 0;
	w = net_io_send(c->tls, c->fd, c->pong + c->npong,
			(size_t)(c->lpong - c->npong));
	if (w < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if ((c->npong += (int)w) == c->lpong)
		c->npong = c->lpong = 0;
	return 0;
}

/* Answers a ping on c, after what was left of the answer before: a peer
 * whose window is still full gets none this time (it is not reading, so
 * it will not miss it; on a keyed connection an answer that was MACed is
 * owed, since the peer counts it, and waits in c->pong).  0, or -1 when
 * the connection broke. */
static int
conn_pong(RtConn *c)
{
	c->proven = 1; /* its ping's MAC held, with a key */
	if (conn_flush(c) != 0)
		return -1;
	if (c->lpong > 0)
		return 0;
	net_word_put(c->pong, CTL_PONG);
	c->lpong = 8;
	if (c->mac) {
		if (rt_auth_begin(&c->out) || rt_auth_add(&c->out, c->pong, 8) ||
		    rt_auth_end(&c->out, c->pong + 8))
			return -1;
		c->lpong += RT_TAG_BYTES;
	}
	/* direct: its first PONG proves this end's key, the PING before
	   proved the dialer's; the kernel keeps the rest */
	if (c->direct)
		c->mac = 0;
	return conn_flush(c);
}

/* The peer's HELLO on keyed c: this end's part of the connection's key
 * goes back, with its view of the connection, and both directions get
 * their keys.  0, or -1. */
static int
conn_hello(RtNet *n, RtConn *c)
{
	unsigned char w[8 + RT_HELLO_BYTES], key[RT_KEY_BYTES];

	net_word_put(w, CTL_HELLO);
	net_view(n, c->fd, 0, w + 8 + RT_NONCE_BYTES);
	if (rt_auth_random(w + 8, RT_NONCE_BYTES) ||
	    rt_auth_derive(key, n->key, c->x, w + 8) ||
	    rt_auth_init(&c->in, key, 0) || rt_auth_init(&c->out, key, 1))
		return -1;
	c->direct = net_direct(w + 8 + RT_NONCE_BYTES,
			       c->x + RT_NONCE_BYTES);
	if (net_io_send(c->tls, c->fd, w, sizeof w) != (ssize_t)sizeof w)
		return -1; /* a new connection has room for it */
	c->ready = 1;
	return 0;
}

/* The whole frame just read on c goes up: with its place, if it was
 * read into one (whose owner waits in rt_net_unland meanwhile); dropped
 * if its place was taken back midway. */
static void
conn_deliver(RtNet *n, RtConn *c)
{
	c->proven = 1; /* its MAC held, with a key */
	RtBuf *b = c->cur;
	RtNetLand *l;

	b->len = c->want;
	c->cur = NULL;
	c->nhdr = 0;
	c->cap = 0;
	if (c->want < RT_LAND_MIN) {
		n->recv->done(n->recv, b);
		return;
	}
	pthread_mutex_lock(&n->lmu);
	if ((l = c->land) != NULL) {
		b->landed = l->dst;
		b->landoff = l->off;
		l->state = 1;
		l->conn = NULL;
		land_unlink(n, l);
	}
	c->land = NULL;
	if (c->ldrop) {
		c->ldrop = 0;
		pthread_mutex_unlock(&n->lmu);
		rt_buf_free(b);
		return;
	}
	pthread_mutex_unlock(&n->lmu);
	n->recv->done(n->recv, b);
	if (l) {
		pthread_mutex_lock(&n->lmu);
		l->state = 2;
		pthread_cond_broadcast(&n->lcv);
		pthread_mutex_unlock(&n->lmu);
	}
}

static const char no_mac[] = "a message without a valid MAC under this "
			     "cluster's key (a peer with another key or "
			     "none, or a replay)";

/* A word just read on c: a control word (handled here), or the length of
 * a frame to read next.  0, or -1 to close c. */
static int
conn_word(RtNet *n, RtConn *c)
{
	uint64_t w = net_word_get(c->hdr);

	/* a TLS record of a handshake (type 22, version 3.x) */
	if (!n->tls && c->hdr[0] == 0x16 && c->hdr[1] == 0x03)
		return conn_deny(n, c, CTL_DENY_MAC, "it runs TLS, this task "
				 "not");
	if (w & CTL) {
		c->nhdr = 0;
		if (w == CTL_HELLO && !n->keyed)
			return conn_deny(n, c, CTL_DENY_NOKEY, "it has a "
					 "cluster key, this task none");
		if (w == CTL_HELLO && !c->ready) {
			c->wantx = RT_HELLO_BYTES, c->xkind = X_HELLO;
			return 0;
		}
		if (w == CTL_PING && n->keyed && !c->ready)
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		/* shared memory: offered once the link is up, only where no
		   MAC is owed (net_shm.c) */
		if (w == CTL_SHM && c->proven && !c->mac) {
			c->wantx = SHM_OFFER, c->xkind = X_SHM;
			return 0;
		}
		if (w == CTL_SHM_GO && c->proven && !c->mac)
			return net_conn_shm_go(n, c);
		if (w == CTL_PING && c->mac) {
			c->wantx = RT_TAG_BYTES, c->xkind = X_PING;
			return 0;
		}
		if (w == CTL_PING)
			return conn_pong(c);
		if (n->keyed)
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		conn_log(n, c->addr, LOG_GARBLED, "a garbled frame "
			 "(connection closed)");
		return -1;
	}
	if (n->keyed && !c->ready)
		return conn_deny(n, c, CTL_DENY_MAC, no_mac);
	c->want = (size_t)w;
	c->fstart = rt_now();
	if (c->want > n->maxmsg) {
		char what[160];
		snprintf(what, sizeof what, "a message of %zu bytes, over the "
			 "limit of %zu (connection closed)", c->want,
			 n->maxmsg);
		conn_log(n, c->addr, LOG_OVERSIZED, what);
		return -1;
	}
	/* memory only for bytes of a peer that proved itself: before, a
	   frame is a small piece (a stranger's HELLO, then 1 GiB of
	   zeros, grew a keyed ps by 1 GiB a connection) */
	if (!c->proven && c->want > UNPROVEN_MAX) {
		char what[160];
		snprintf(what, sizeof what, "a message of %zu bytes before "
			 "it answered a ping (at most %zu; connection closed)",
			 c->want, UNPROVEN_MAX);
		conn_log(n, c->addr, LOG_OVERSIZED, what);
		return -1;
	}
	if (c->mac && (rt_auth_begin(&c->in) ||
		       rt_auth_add(&c->in, c->hdr, FRAME_HDR)))
		return -1;
	c->got = 0;
	c->cap = 0;
	/* the places posted are tried once its head has come, and again
	   whenever one is posted (an lgen of n's + 1 here, as this was,
	   met n's own when the step posted its place right after: the
	   frame, 610 MB of a restore, was read whole into a buffer) */
	c->ltry = 1;
	return 0;
}

/* The bytes that follow a word or a frame on keyed c have come: a
 * HELLO's nonce, a ping's MAC, or a frame's.  0, or -1 to close c. */
static int
conn_extra(RtNet *n, RtConn *c)
{
	unsigned char w[8], tag[RT_TAG_BYTES];

	switch (c->xkind) {
	case X_HELLO:
		return conn_hello(n, c);
	case X_SHM:
		return net_conn_shm(n, c);
	case X_PING:
		net_word_put(w, CTL_PING);
		if (rt_auth_begin(&c->in) || rt_auth_add(&c->in, w, 8) ||
		    rt_auth_end(&c->in, tag) || !rt_auth_same(tag, c->x))
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		return conn_pong(c);
	default: /* X_TAG */
		if (rt_auth_end(&c->in, tag) || !rt_auth_same(tag, c->x))
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		conn_deliver(n, c);
		return 0;
	}
}


/* Reads up to len bytes of c into dst: from what was read ahead, else
 * from the socket, through the read-ahead buffer for a small read (the
 * frames of a held batch, net.c rt_net_hold, come together: one call
 * reads them all, where a header and a body each cost one). */
static ssize_t
conn_in(RtConn *c, void *dst, size_t len)
{
	if (c->ring)
		return net_shm_read(c, dst, len);
	if (c->ra_at == c->ra_len && len < READ_AHEAD) {
		ssize_t r = net_io_read(c->tls, c->fd, c->ra, READ_AHEAD);

		if (r <= 0)
			return r;
		c->ra_at = 0;
		c->ra_len = (size_t)r;
	}
	if (c->ra_at < c->ra_len) {
		size_t k = c->ra_len - c->ra_at < len ? c->ra_len - c->ra_at
						      : len;

		memcpy(dst, c->ra + c->ra_at, k);
		c->ra_at += k;
		return (ssize_t)k;
	}
	return net_io_read(c->tls, c->fd, dst, len);
}

/* Reads the next bytes of c's frame, into its buffer or its place
 * (conn_land), and MACs them (keyed) while they are in the cache: the
 * read's result, -1 with errno ENOMEM when there is no room. */
static ssize_t
conn_body(RtNet *n, RtConn *c)
{
	unsigned char *at = NULL;
	size_t room = 0;
	int held = 0;
	ssize_t r;

	if (c->cur && c->want >= RT_LAND_MIN &&
	    (c->land || c->ldrop || c->ltry || c->lgen != n->lgen)) {
		pthread_mutex_lock(&n->lmu); /* the place stays while read */
		held = 1;
		conn_land(n, c, &at, &room);
	}
	if (at == NULL) {
		if (conn_room(c) != 0) {
			if (held)
				pthread_mutex_unlock(&n->lmu);
			fprintf(stderr, "tfgc: error: %s: out of memory for a "
				"message of %zu bytes from %s (connection "
				"closed)\n", n->name, c->want, c->addr);
			errno = ENOMEM;
			return -1;
		}
		at = c->cur->data + c->got;
		room = c->cap - c->got;
		/* a large frame's head alone first, so that the places
		   posted are tried before its body is read */
		if (c->want >= RT_LAND_MIN && c->got < RT_LAND_HEAD &&
		    room > RT_LAND_HEAD - c->got)
			room = RT_LAND_HEAD - c->got;
	}
	/* keyed, a read of at most a sixteenth of the frame (MAC_PIECE at
	   least), MACed while in the cache and while the sender is still
	   writing the rest: one read of a whole frame that had come left
	   its MAC for after */
	if (c->mac && room > MAC_PIECE && room > c->want / 16)
		room = c->want / 16 > MAC_PIECE ? c->want / 16 : MAC_PIECE;
	r = conn_in(c, at, room);
	if (r > 0 && c->mac && rt_auth_add(&c->in, at, (size_t)r) != 0) {
		errno = EPROTO;
		r = -1;
	}
	if (held)
		pthread_mutex_unlock(&n->lmu);
	return r;
}

/* One more step of c's TLS handshake; done, what came after it is
 * read.  0, or -1 to close c (a peer refused: said once per host). */
static int
conn_tls_step(RtNet *n, RtConn *c)
{
	struct epoll_event ev;
	char why[200];
	unsigned char w[8];
	int want = 0, rv;

	/* a peer without TLS says its first word in the clear: it is told
	   so in a word it reads (a TLS alert would mean nothing to it).
	   Only the connection's first bytes tell: later ones are the
	   handshake's own records, whose encrypted bytes are anything
	   (looked at under load, when a record came in a read of its own,
	   they refused a TLS peer half the time) */
	if (c->hs == 1 &&
	    recv(c->fd, w, sizeof w, MSG_PEEK | MSG_DONTWAIT) == 8 &&
	    (w[7] & 0x80))
		return conn_deny(n, c, CTL_DENY_TLS, "it does not run TLS, "
				 "this task does");
	c->hs = 2;
	rv = rt_tls_handshake(c->tls, &want, why, sizeof why);
	if (rv == -2)
		return -1; /* a peer that went away: nothing refused */
	if (rv < 0) {
		conn_refused(n, c, why);
		return -1;
	}
	/* waiting to write: OUT until it can; else, and after, IN */
	ev.events = EPOLLIN | EPOLLRDHUP | (rv == 0 && want == 2 ? EPOLLOUT : 0);
	ev.data.ptr = c;
	epoll_ctl(n->ep, EPOLL_CTL_MOD, c->fd, &ev);
	if (rv == 0)
		return 0;
	c->hs = 0;
	return net_conn_read(n, c);
}

/* Reads what has come on c and completes every whole frame (with a
 * cluster key, every frame whose MAC is right: the MAC is computed as
 * its bytes come, while they are in the cache).  0, or -1 when the
 * connection is over (closed by the caller). */
int
net_conn_read(RtNet *n, RtConn *c)
{
	size_t turn = 0;

	for (;;) {
		ssize_t r;

		/* a turn of 16 MiB, then the other connections' (the
		   socket stays readable, and nothing waits in a buffer of
		   ours or TLS's): a 610 MB frame read at once kept this
		   thread from the heartbeats' pings and pongs for seconds */
		if (turn >= NET_READ_TURN && !c->tls && c->ra_at == c->ra_len)
			return 0;

		if (c->wantx) {
			r = conn_in(c, c->x + c->nx,
				    (size_t)(c->wantx - c->nx));
		} else if (c->nhdr < FRAME_HDR) {
			r = conn_in(c, c->hdr + c->nhdr,
				    (size_t)(FRAME_HDR - c->nhdr));
		} else {
			r = conn_body(n, c);
		}
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		turn += (size_t)r;
		if (c->wantx) {
			if ((c->nx += (int)r) < c->wantx)
				continue;
			c->wantx = c->nx = 0;
			if (conn_extra(n, c) != 0)
				return -1;
			continue;
		}
		if (c->nhdr < FRAME_HDR) {
			c->nhdr += (int)r;
			if (c->nhdr < FRAME_HDR)
				continue;
			if (conn_word(n, c) != 0)
				return -1;
			if (c->nhdr < FRAME_HDR || c->wantx)
				continue; /* a control word */
		} else {
			c->got += (size_t)r;
		}
		if (c->nhdr == FRAME_HDR && c->got == c->want &&
		    (c->want > 0 || conn_room(c) == 0)) {
			if (c->mac)
				c->wantx = RT_TAG_BYTES, c->xkind = X_TAG;
			else
				conn_deliver(n, c);
		}
	}
}

void *
net_io_main(void *arg)
{
	RtNet *n = arg;
	struct epoll_event ev[32];

	while (!n->closing) {
		int k = epoll_wait(n->ep, ev, 32, IO_TICK_MS);

		for (int i = 0; i < k && !n->closing; i++) {
			int kind = *(int *)ev[i].data.ptr;

			if (kind == EV_WAKE) {
				uint64_t v;

				if (read(n->wake, &v, sizeof v) < 0) {
					/* nothing pending */
				}
			} else if (kind == EV_LISTEN) {
				accept_all(n);
			} else if (kind == EV_CONN) {
				RtConn *c = ev[i].data.ptr;

				if (!n->recv || (c->hs && conn_tls_step(n, c)) ||
				    (!c->hs && net_conn_read(n, c) != 0))
					net_conn_close(n, c);
			} else {
				net_link_event(n, ev[i].data.ptr, ev[i].events);
			}
		}
		net_tend_links(n);
		conn_sweep(n, rt_now());
	}
	return NULL;
}

