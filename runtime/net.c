/*
 * runtime/net.c: the transport layer (runtime/net.h, spec/design.md
 * "Transport"): TCP connections, framing, dialing, sending in slices,
 * and the I/O thread whose completions hand each message up.
 *
 * A message travels as a frame: its length as 8 bytes little-endian,
 * then its bytes.  Each process listens on one socket and accepts any
 * number of connections, on which it reads frames; to each peer it sends
 * on one connection of its own (an RtLink), on which it writes them.
 * So the two directions between two tasks are two connections, as nng's
 * push and pull sockets were, and a peer's death shows on the link as a
 * hang-up, whether or not anything is being sent.  A peer that stops
 * without hanging up (a machine gone, a process stopped) shows as
 * silence: a length word with its top bit set is a control word with no
 * bytes after it, and the sender of a link puts a PING between its
 * frames every RT_NET_BEAT seconds, which the receiver's I/O thread
 * answers with a PONG on the same connection, the one thing that travels
 * back on it.
 *
 * One I/O thread per process runs an epoll loop: it accepts, reads
 * frames and hands each complete message to the protocol's completion,
 * completes the links' non-blocking connects, flushes what waited in a
 * link's queue while it was not up, notices hang-ups (the link is then
 * "gone" until dialed again), and dials every broken or new link again
 * after a short pause.  Sends are written by the sending thread itself,
 * under the link's mutex, with no hand-off; the I/O thread only ever
 * tries that mutex for a link that is up (a sender may hold it while it
 * waits for a slow peer's window), so that nothing stops it reading.
 *
 * Why not nng, which this layer used before: every message crossed three
 * of nng's threads (the poller, a task queue, the caller), which cost
 * each hop more than the whole of this transport's and a 313 KB round
 * trip a third more (bench/run.sh measures both; bench/README.md has
 * the figures that decided it).
 *
 * Its files: net.c the API, the helpers, reply links and held sends;
 * net_link.c the links (dialing, handshakes, heartbeats, writing);
 * net_recv.c the I/O thread, accepted connections and landing;
 * net_int.h what they share.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "runtime/net_int.h"
/* What epoll's data points at for the two fds that are neither a
 * connection nor a link. */
int net_ev_listen = EV_LISTEN;
static int ev_wake = EV_WAKE;

/* ------------------------------------------------------------ helpers */

/* The pool of large buffers (rt_buf_new): at most POOL_N of them and
 * POOL_BYTES in all, each reused for a message of at least half its
 * size.  Process-wide, as messages pass between connections and
 * threads. */
#define POOL_N 8
#define POOL_BYTES ((size_t)512 << 20)
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static RtBuf *pool[POOL_N];
static int npool;
static size_t pool_bytes;

static RtBuf *
pool_take(size_t len)
{
	RtBuf *b = NULL;

	pthread_mutex_lock(&pool_mu);
	for (int i = 0; i < npool; i++)
		if (pool[i]->cap >= len && pool[i]->cap / 2 <= len) {
			b = pool[i];
			pool[i] = pool[--npool];
			pool_bytes -= b->cap;
			break;
		}
	pthread_mutex_unlock(&pool_mu);
	return b;
}

/* Where a buffer's data starts: 16 bytes past a 64-byte boundary, so
 * that a message's body, after its 112-byte header (RT_HDR_SIZE), is
 * 64-byte aligned, as the parts' slots are: a feed in a START's body is
 * then read by the part where it is (runtime/rendezvous.c,
 * rdv_recv_ref), not copied.  A frame that grows (conn_room) keeps its
 * data right behind the struct. */
#define BUF_OFF (((sizeof(RtBuf) + 63) & ~(size_t)63) + 16)

RtBuf *
rt_buf_new(size_t len)
{
	RtBuf *b = len >= RT_BUF_POOL_MIN ? pool_take(len) : NULL;

	if (b == NULL) {
		if (len > SIZE_MAX - BUF_OFF - 64 ||
		    (b = aligned_alloc(64, (BUF_OFF + (len ? len : 1) + 63) &
					       ~(size_t)63)) == NULL)
			return NULL;
		b->cap = len;
	}
	b->len = len;
	b->data = (unsigned char *)b + BUF_OFF;
	b->tail = NULL;
	b->ntail = 0;
	b->from[0] = '\0';
	b->landed = NULL;
	b->landoff = 0;
	return b;
}

void
rt_buf_free(RtBuf *b)
{
	if (b && b->cap >= RT_BUF_POOL_MIN) {
		pthread_mutex_lock(&pool_mu);
		if (npool < POOL_N && pool_bytes + b->cap <= POOL_BYTES) {
			pool[npool++] = b;
			pool_bytes += b->cap;
			b = NULL;
		}
		pthread_mutex_unlock(&pool_mu);
	}
	free(b);
}

/* "<context>: <strerror>", errno as a tfg_status. */
static tfg_status
sys_error(TfgError *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tfg_status
sys_error(TfgError *e, int err, const char *fmt, ...)
{
	char ctx[700], txt[200];
	va_list ap;
	tfg_status st;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof ctx, fmt, ap);
	va_end(ap);
	/* nng's words for the one error users meet most */
	snprintf(txt, sizeof txt, "%s", err == EADDRINUSE ? "address in use"
		 : strerror(err));
	txt[0] = (char)tolower((unsigned char)txt[0]);
	switch (err) {
	case EADDRINUSE: st = TFG_EADDRINUSE; break;
	case ETIMEDOUT: st = TFG_ETIMEDOUT; break;
	case ENOMEM: st = TFG_ENOMEM; break;
	case ECONNREFUSED: case ECONNRESET: case EPIPE: case EHOSTUNREACH:
	case ENETUNREACH: st = TFG_ECONN; break;
	case EINVAL: case EADDRNOTAVAIL: st = TFG_EINVAL; break;
	default: st = TFG_ESYS; break;
	}
	return tfg_error(e, st, "%s: %s", ctx, txt);
}

/* Splits "tcp://host:port" (or "host:port"; "[v6]:port") into host and
 * port; -1 if it is no such URL. */
static int
split_url(const char *url, char *host, size_t nhost, char *port,
	  size_t nport)
{
	const char *p = url, *colon;
	size_t hl;

	if (strncmp(p, "tcp://", 6) == 0)
		p += 6;
	else if (strstr(p, "://"))
		return -1;
	if ((colon = strrchr(p, ':')) == NULL || colon[1] == '\0' ||
	    strlen(colon + 1) >= nport)
		return -1;
	hl = (size_t)(colon - p);
	if (hl >= 2 && p[0] == '[' && p[hl - 1] == ']')
		p++, hl -= 2;
	if (hl >= nhost)
		return -1;
	memcpy(host, p, hl);
	host[hl] = '\0';
	snprintf(port, nport, "%s", colon + 1);
	for (const char *q = port; *q; q++)
		if (!isdigit((unsigned char)*q))
			return -1;
	return 0;
}

void
net_sockaddr_str(char *buf, size_t n, const struct sockaddr_storage *sa)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)sa;

		inet_ntop(AF_INET, &a->sin_addr, h, sizeof h);
		snprintf(buf, n, "%s:%u", h, ntohs(a->sin_port));
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;

		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof h);
		snprintf(buf, n, "[%s]:%u", h, ntohs(a->sin6_port));
	} else {
		snprintf(buf, n, "an unknown peer");
	}
}

/* Whether sa is a loopback address; its text, "ADDR:PORT", in buf (an
 * IPv4 address mapped into IPv6 as IPv4, so that both ends write it
 * alike). */
static int
loopback_str(char *buf, size_t n, const struct sockaddr_storage *sa)
{
	struct sockaddr_storage v4;

	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
			struct sockaddr_in *b = (void *)&v4;

			memset(&v4, 0, sizeof v4);
			b->sin_family = AF_INET;
			b->sin_port = a->sin6_port;
			memcpy(&b->sin_addr, a->sin6_addr.s6_addr + 12, 4);
			sa = &v4;
		} else {
			net_sockaddr_str(buf, n, sa);
			return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
		}
	}
	net_sockaddr_str(buf, n, sa);
	if (sa->ss_family != AF_INET)
		return 0;
	return (ntohl(((const struct sockaddr_in *)(const void *)sa)
			     ->sin_addr.s_addr) >> 24) == 127;
}

void
net_view(const RtNet *n, int fd, int dialer, unsigned char out[RT_VIEW_BYTES])
{
	struct sockaddr_storage me, peer;
	socklen_t lm = sizeof me, lp = sizeof peer;
	char a[80], b[80], text[300];

	memset(out, 0, RT_VIEW_BYTES);
	if (!n->keyed || n->tls || n->mac_all || n->here[0] == '\0' ||
	    getsockname(fd, (struct sockaddr *)&me, &lm) != 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &lp) != 0 ||
	    !loopback_str(a, sizeof a, dialer ? &me : &peer) ||
	    !loopback_str(b, sizeof b, dialer ? &peer : &me))
		return;
	snprintf(text, sizeof text, "tfg-view1 %s %s %s", n->here, a, b);
	if (rt_auth_view(out, text, strlen(text)) != 0)
		memset(out, 0, RT_VIEW_BYTES);
}

int
net_direct(const unsigned char mine[RT_VIEW_BYTES],
	   const unsigned char theirs[RT_VIEW_BYTES])
{
	static const unsigned char zero[RT_VIEW_BYTES];

	return memcmp(mine, zero, RT_VIEW_BYTES) != 0 &&
	       memcmp(mine, theirs, RT_VIEW_BYTES) == 0;
}

/* RtNet.here: the boot's id (one per kernel run) and the network
 * namespace's inode, or "" when either cannot be read. */
static void
net_here(RtNet *n)
{
	char id[64] = "";
	struct stat st;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		if (fgets(id, sizeof id, f) == NULL)
			id[0] = '\0';
		fclose(f);
	}
	id[strcspn(id, "\n")] = '\0';
	if (id[0] == '\0' || stat("/proc/self/ns/net", &st) != 0)
		return;
	snprintf(n->here, sizeof n->here, "%s %llu:%llu", id,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

void
net_word_put(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

uint64_t
net_word_get(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << 8 * i;
	return v;
}

void
net_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* writev without SIGPIPE: a peer that went away is an error, not a
 * signal. */
static ssize_t
send_iov(int fd, struct iovec *iov, int niov)
{
	struct msghdr mh;

	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)niov;
	return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The connection's I/O, through its TLS session when it has one. */
ssize_t
net_io_read(void *tls, int fd, void *buf, size_t n)
{
	return tls ? (ssize_t)rt_tls_read(tls, buf, n) : read(fd, buf, n);
}

ssize_t
net_io_send(void *tls, int fd, const void *buf, size_t n)
{
	return tls ? (ssize_t)rt_tls_write(tls, buf, n)
		   : send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* On TLS, the pieces go in one record, copied together up to a record's
 * size (a piece as large goes as it is): a record per piece cost a frame
 * two records and two writes, and held frames one each.  A write that
 * must be retried is (OpenSSL takes its record at once, and sends it
 * again whatever bytes the retry passes): each caller retries from the
 * same offset into the same pieces, or more of them (frames queued
 * meanwhile), so the retry's bytes begin with the same ones. */
ssize_t
net_io_sendv(void *tls, int fd, struct iovec *iov, int niov)
{
	static __thread unsigned char rec[TLS_RECORD];
	size_t n = 0;
	int i = 0;

	if (!tls)
		return send_iov(fd, iov, niov);
	while (i < niov && iov[i].iov_len == 0)
		i++;
	if (i == niov)
		return 0;
	if (iov[i].iov_len >= TLS_RECORD)
		return (ssize_t)rt_tls_write(tls, iov[i].iov_base,
					     iov[i].iov_len);
	for (; i < niov && n < TLS_RECORD; i++) {
		size_t k = iov[i].iov_len < TLS_RECORD - n ? iov[i].iov_len
							   : TLS_RECORD - n;

		memcpy(rec + n, iov[i].iov_base, k);
		n += k;
	}
	return (ssize_t)rt_tls_write(tls, rec, n);
}

static void
wake_io(RtNet *n)
{
	uint64_t one = 1;

	if (n->wake >= 0 && write(n->wake, &one, sizeof one) < 0) {
		/* already due */
	}
}

/* ----------------------------------------------------------------- API */

tfg_status
rt_net_init(RtNet *n, const char *name, int npeer)
{
	struct epoll_event ev;

	memset(n, 0, sizeof *n);
	n->name = name;
	n->lfd = -1;
	n->wake = -1;
	n->hb_dead = RT_NET_DEAD;
	n->mac_all = getenv("TFG_NET_MAC") &&
		     strcmp(getenv("TFG_NET_MAC"), "all") == 0;
	net_here(n);
	net_shm_init(n);
	pthread_mutex_init(&n->mu, NULL);
	pthread_mutex_init(&n->lmu, NULL);
	pthread_cond_init(&n->lcv, NULL);
	if ((n->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (n->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return TFG_ESYS;
	ev.events = EPOLLIN;
	ev.data.ptr = &ev_wake;
	epoll_ctl(n->ep, EPOLL_CTL_ADD, n->wake, &ev);
	if (npeer > 0 &&
	    (n->peers = calloc((size_t)npeer, sizeof *n->peers)) == NULL)
		return TFG_ENOMEM;
	n->npeer = npeer;
	for (int i = 0; i < npeer; i++)
		net_link_init(&n->peers[i], "", NULL);
	if (pthread_create(&n->io, NULL, net_io_main, n) != 0)
		return TFG_ESYS;
	n->io_started = 1;
	return TFG_OK;
}

tfg_status
rt_net_listen(RtNet *n, const char *url, size_t maxmsg, TfgError *e)
{
	char host[RT_URL_MAX], port[16];
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage sa;
	socklen_t len = sizeof sa;
	int one = 1, rv, fd;

	n->maxmsg = maxmsg;
	if (split_url(url, host, sizeof host, port, sizeof port) != 0)
		return tfg_error(e, TFG_EINVAL, "%s: cannot listen on %s: not "
				 "a tcp://host:port address", n->name, url);
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if ((rv = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai)) != 0)
		return tfg_error(e, TFG_EINVAL, "%s: cannot listen on %s: %s",
				 n->name, url, gai_strerror(rv));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof one) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    listen(fd, 128) != 0) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return sys_error(e, err, "%s: cannot listen on %s", n->name,
				 url);
	}
	freeaddrinfo(ai);
	n->lfd = fd;
	if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		snprintf(n->url, sizeof n->url, "tcp://%.200s:%u", host,
			 sa.ss_family == AF_INET6
			 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
			 : ntohs(((struct sockaddr_in *)&sa)->sin_port));
	else
		snprintf(n->url, sizeof n->url, "%s", url);
	return TFG_OK;
}

tfg_status
rt_net_peer_set(RtNet *n, int peer, const char *url, const char *name,
		TfgError *e)
{
	RtLink *k;

	if (peer < 0 || peer >= n->npeer)
		return tfg_error(e, TFG_EINVAL, "%s: no peer %d", n->name,
				 peer);
	k = &n->peers[peer];
	pthread_mutex_lock(&k->mu);
	snprintf(k->url, sizeof k->url, "%s", url);
	k->name = name;
	if (split_url(url, k->host, sizeof k->host, k->port,
		      sizeof k->port) != 0) {
		pthread_mutex_unlock(&k->mu);
		return tfg_error(e, TFG_EINVAL, "%s: cannot dial %s (%s): not "
				 "a tcp://host:port address", n->name, name,
				 url);
	}
	k->known = 1;
	pthread_mutex_unlock(&k->mu);
	return TFG_OK;
}

void
rt_net_peer_open(RtNet *n, int peer)
{
	RtLink *k;

	if (peer < 0 || peer >= n->npeer || n->peers[peer].open)
		return;
	k = &n->peers[peer];
	pthread_mutex_lock(&k->mu);
	if (k->known && !k->open && !n->closing) {
		k->down_since = rt_now();
		k->open = 1;
		net_link_dial(n, k);
	}
	pthread_mutex_unlock(&k->mu);
}

tfg_status
rt_net_dial(RtNet *n, int peer, const char *url, const char *name,
	    TfgError *e)
{
	tfg_status st = rt_net_peer_set(n, peer, url, name, e);

	if (st == TFG_OK)
		rt_net_peer_open(n, peer);
	return st;
}

tfg_status
rt_net_recv_start(RtNet *n, RtNetRecv *r, TfgError *e)
{
	struct epoll_event ev;

	if (n->lfd < 0)
		return tfg_error(e, TFG_EINVAL, "%s: not listening", n->name);
	n->recv = r;
	/* Connections are accepted from now on: until now they waited in
	   the kernel's backlog, their first bytes unread (a server compiles
	   between listening and receiving). */
	ev.events = EPOLLIN;
	ev.data.ptr = &net_ev_listen;
	if (epoll_ctl(n->ep, EPOLL_CTL_ADD, n->lfd, &ev) != 0)
		return sys_error(e, errno, "%s: cannot accept on %s", n->name,
				 n->url);
	wake_io(n);
	return TFG_OK;
}

/* Adds bytes [from, to) of the frame in part[0..2] to the MAC of k's
 * frame being written; at the frame's end, its tag.  0, or -1. */
static int
mac_range(RtLink *k, const struct iovec *part, size_t from, size_t to,
	  unsigned char *tag)
{
	size_t at = 0, body = part[0].iov_len + part[1].iov_len +
			      part[2].iov_len;

	for (int i = 0; i < 3 && from < to; i++) {
		size_t lo = at, hi = at + part[i].iov_len;

		at = hi;
		if (from >= hi)
			continue;
		size_t b = from - lo, e = (to < hi ? to : hi) - lo;

		if (rt_auth_add(&k->out, (const char *)part[i].iov_base + b,
				e - b) != 0)
			return -1;
		from = lo + e;
	}
	return to == body ? rt_auth_end(&k->out, tag) : 0;
}

/* The error of a send to k, which is gone. */
static tfg_status
gone_error(RtNet *n, RtLink *k, TfgError *e)
{
	if (k->why == RT_GONE_SILENT)
		return tfg_error(e, TFG_ECLOSED, "%s stopped answering (no "
				 "heartbeat for %g s)", k->name, n->hb_dead);
	return tfg_error(e, TFG_ECLOSED, "lost connection to %s", k->name);
}

/* Writes frame b (its tail included) on k's connection, waiting in
 * slices for room until deadline; k up, under k->mu.  A frame left half
 * written (a deadline, a stop) breaks the connection, which is dialed
 * again. */
static tfg_status
write_frame(RtNet *n, RtLink *k, RtBuf *b, double deadline,
	    RtNetStopFn stop, void *arg, TfgError *e)
{
	unsigned char hdr[FRAME_HDR], tag[RT_TAG_BYTES];
	const size_t tagged = k->mac ? RT_TAG_BYTES : 0;
	size_t len = b->len + b->ntail, body = FRAME_HDR + len;
	size_t total = body + tagged, off = 0, macked = 0;
	struct iovec part[4] = {
		{hdr, FRAME_HDR}, {b->data, b->len},
		{(void *)b->tail, b->ntail}, {tag, tagged}};

	net_word_put(hdr, (uint64_t)len);
	/* Keyed, the MAC follows the bytes out: each piece is MACed just
	   after the kernel took it.  Pieces of 512 KiB: a 1 MiB frame in
	   one write was MACed only after the receiver had it all (and
	   MACed it itself, after one read of it all: conn_body), 128 KiB
	   pieces cost the receiver more wake-ups than they saved. */
	if (tagged && (rt_auth_begin(&k->out) != 0 ||
		       /* a small frame is MACed first, so that the tag leaves
			  in the same segment: a second one costs the
			  receiver a wake-up (bench/README.md) */
		       (len <= SMALL_FRAME &&
			mac_range(k, part, 0, body, tag) != 0))) {
		net_link_broken(n, k);
		return tfg_error(e, TFG_ESYS, "cannot MAC a message to %s",
				 k->name);
	}
	if (tagged && len <= SMALL_FRAME)
		macked = body;
	while (off < total) {
		struct iovec iov[4];
		int niov;
		ssize_t w;

		/* the tag (part 3) only once the MAC is done; a large frame
		   in pieces of SEND_PIECE, each MACed once the kernel took
		   it, while the receiver reads it */
		niov = net_iov_rest(iov, part, macked < body ? 3 : 4, off);
		if (tagged && macked < body)
			niov = net_iov_cap(iov, niov, SEND_PIECE);
		w = net_link_sendv(k, iov, niov);
		if (w > 0) {
			off += (size_t)w;
			k->alive = rt_now(); /* the peer takes it: alive */
			if (tagged && macked < body &&
			    mac_range(k, part, macked, off < body ? off : body,
				      tag) != 0) {
				net_link_broken(n, k);
				return tfg_error(e, TFG_ESYS, "cannot MAC a "
						 "message to %s", k->name);
			}
			if (tagged && macked < body)
				macked = off < body ? off : body;
			continue;
		}
		if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
		    k->state == 2) { /* broken, or silent (link_beat) */
			net_link_broken(n, k);
			return gone_error(n, k, e);
		}
		/* a frame given up breaks the connection if any of it left,
		   or, keyed, if its number was taken, or on TLS, whose
		   write that found no room took a record of it: kept, the
		   connection would send that record as the next frame's
		   first bytes */
		if (stop && stop(arg, e)) {
			if (off > 0 || tagged || k->tls)
				net_link_broken(n, k);
			return e ? e->code : TFG_ECANCELED;
		}
		if (rt_now() >= deadline) {
			if (off > 0 || tagged || k->tls)
				net_link_broken(n, k);
			return tfg_error(e, TFG_ETIMEDOUT, "timed out sending "
					 "to %s (not up?)", k->name);
		}
		net_link_wait(k, (int)(RT_NET_SLICE * 1000));
	}
	return TFG_OK;
}

/* b with its tail copied in, to outlive the send (b is taken); NULL out
 * of memory. */
static RtBuf *
untail(RtBuf *b)
{
	RtBuf *c = rt_buf_new(b->len + b->ntail);

	if (c) {
		memcpy(c->data, b->data, b->len);
		memcpy(c->data + b->len, b->tail, b->ntail);
	}
	rt_buf_free(b);
	return c;
}

/* Sends b on link k: queued while k is not up (room permitting), else
 * written after what waited in the queue. */
static tfg_status
link_send(RtNet *n, RtLink *k, RtBuf *b, double deadline, RtNetStopFn stop,
	  void *arg, TfgError *e)
{
	tfg_status st;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		int rv = 1;

		if (k->fd >= 0 && !k->connecting &&
		    (rv = net_link_flush(n, k)) == 0) {
			st = write_frame(n, k, b, deadline, stop, arg, e);
			if (st == TFG_OK) {
				k->nframes++;
				net_shm_offer(n, k); /* it carries frames */
			}
			if (k->fd >= 0) /* an event may have come meanwhile */
				net_link_arm(n, k, 0);
			pthread_mutex_unlock(&k->mu);
			rt_buf_free(b);
			return st;
		}
		if (rv < 0)
			continue; /* broke: queue it for the next one */
		if ((k->fd < 0 || k->connecting) && k->nq < RT_NET_QUEUE) {
			if (b->ntail && (b = untail(b)) == NULL) {
				pthread_mutex_unlock(&k->mu);
				return tfg_error(e, TFG_ENOMEM, "out of memory "
						 "for a message to %s", k->name);
			}
			k->queue[k->nq++] = b;
			if (k->fd < 0)
				k->next_dial = 0; /* dial now */
			pthread_mutex_unlock(&k->mu);
			wake_io(n);
			return TFG_OK;
		}
		/* full: wait for room, or for the connection */
		pthread_mutex_unlock(&k->mu);
		if (k->state == 2) {
			rt_buf_free(b);
			return gone_error(n, k, e);
		}
		if (k->state != 1 && n->up_wait > 0 &&
		    rt_now() - k->down_since > n->up_wait) {
			rt_buf_free(b);
			return tfg_error(e, TFG_ETIMEDOUT, "%s is not up (no "
					 "answer for %g s)", k->name,
					 n->up_wait);
		}
		if (stop && stop(arg, e)) {
			rt_buf_free(b);
			return e ? e->code : TFG_ECANCELED;
		}
		if (rt_now() >= deadline) {
			rt_buf_free(b);
			return tfg_error(e, TFG_ETIMEDOUT, "timed out sending "
					 "to %s (not up?)", k->name);
		}
		pthread_mutex_lock(&k->mu);
		if (k->shm_state == SHM_ON) { /* its ring stays while held */
			net_link_wait(k, (int)(RT_NET_SLICE * 1000));
		} else { /* the I/O thread takes the link to connect it */
			pthread_mutex_unlock(&k->mu);
			net_link_wait(k, (int)(RT_NET_SLICE * 1000));
			pthread_mutex_lock(&k->mu);
		}
	}
}

tfg_status
rt_net_send(RtNet *n, int peer, RtBuf *b, double deadline, RtNetStopFn stop,
	    void *arg, TfgError *e)
{
	if (peer >= 0 && peer < n->npeer)
		rt_net_peer_open(n, peer); /* its first send dials it */
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open) {
		rt_buf_free(b);
		return tfg_error(e, TFG_EINVAL, "%s: no connection to task %d",
				 n->name, peer);
	}
	return link_send(n, &n->peers[peer], b, deadline, stop, arg, e);
}

/* ------------------------------------------------------ held sends */

/* The links this thread holds frames back on (rt_net_hold). */
#define HELD_LINKS 16
static __thread struct {
	RtNet *n;
	RtLink *k;
} held[HELD_LINKS];
static __thread int nheld;

void
rt_net_flush_held(void)
{
	for (int i = 0; i < nheld; i++) {
		RtNet *n = held[i].n;
		RtLink *k = held[i].k;

		pthread_mutex_lock(&k->mu);
		net_link_release(n, k);
		pthread_mutex_unlock(&k->mu);
	}
	nheld = 0;
}

int
rt_net_holding(void)
{
	return nheld > 0;
}

tfg_status
rt_net_hold(RtNet *n, int peer, RtBuf *b, double deadline, RtNetStopFn stop,
	    void *arg, TfgError *e)
{
	RtLink *k;
	int i;

	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open ||
	    b->len + b->ntail > RT_NET_HOLD_MAX)
		return rt_net_send(n, peer, b, deadline, stop, arg, e);
	k = &n->peers[peer];
	for (i = 0; i < nheld && held[i].k != k; i++)
		;
	if (i == HELD_LINKS) {
		rt_net_flush_held();
		i = 0;
	}
	pthread_mutex_lock(&k->mu);
	/* not up, or frames wait for room: sent as any other */
	if (k->fd < 0 || k->connecting || k->nq >= RT_NET_QUEUE ||
	    (k->nq > 0 && !k->held) || k->lcbuf > 0) {
		pthread_mutex_unlock(&k->mu);
		return link_send(n, k, b, deadline, stop, arg, e);
	}
	if (b->ntail && (b = untail(b)) == NULL) {
		pthread_mutex_unlock(&k->mu);
		return tfg_error(e, TFG_ENOMEM, "out of memory for a message "
				 "to %s", k->name);
	}
	if (!k->held)
		k->held_since = rt_now();
	k->queue[k->nq++] = b;
	k->held = 1;
	pthread_mutex_unlock(&k->mu);
	if (i == nheld) {
		held[nheld].n = n;
		held[nheld++].k = k;
	}
	return TFG_OK;
}

/* Room for need elements of size each in *v (of *cap): 1, or 0 out of
 * memory. */
static int
vec_room(void **v, int *cap, int need, size_t size)
{
	void *w;
	int nc;

	if (need <= *cap)
		return 1;
	nc = *cap ? 2 * *cap : 8;
	if (nc < need)
		nc = need;
	if ((w = realloc(*v, size * (size_t)nc)) == NULL)
		return 0;
	*v = w;
	*cap = nc;
	return 1;
}

/* The reply link to url, dialed on first use; under n->mu.  Past
 * RT_NET_REPLIES (many controllers over time: tfgc stop, --attach) the
 * oldest idle one is closed to make room, and freed at rt_net_close:
 * idle means no send in progress, nothing queued and none for
 * RT_NET_REPLY_IDLE seconds, so a reply is never dropped to make room
 * (64 controllers at once lost their last OUTPUT when the oldest of 8
 * links was recycled, busy or not).  With none idle the links grow. */
static RtLink *
reply_get(RtNet *n, const char *url, TfgError *e)
{
	RtLink *k;
	double now = rt_now();

	for (int i = 0; i < n->nreply; i++)
		if (strcmp(n->replies[i]->url, url) == 0)
			return n->replies[i];
	if ((k = calloc(1, sizeof *k)) == NULL) {
		tfg_error(e, TFG_ENOMEM, "out of memory");
		return NULL;
	}
	net_link_init(k, url, NULL);
	if (split_url(url, k->host, sizeof k->host, k->port,
		      sizeof k->port) != 0) {
		tfg_error(e, TFG_EINVAL, "%s: cannot dial %s: not a "
			  "tcp://host:port address", n->name, url);
		free(k);
		return NULL;
	}
	for (int i = 0; n->nreply >= RT_NET_REPLIES && i < n->nreply; i++) {
		RtLink *old = n->replies[i];
		int idle;

		if (old->busy || now - old->used < RT_NET_REPLY_IDLE ||
		    pthread_mutex_trylock(&old->mu) != 0)
			continue;
		idle = old->nq == 0 && !old->held;
		if (idle && vec_room((void **)&n->retired, &n->capretired,
				     n->nretired + 1, sizeof *n->retired)) {
			old->open = 0;
			net_link_broken(n, old);
			n->retired[n->nretired++] = old;
			memmove(n->replies + i, n->replies + i + 1,
				sizeof n->replies[0] *
				(size_t)(--n->nreply - i));
		}
		pthread_mutex_unlock(&old->mu);
		if (idle)
			break;
	}
	if (!vec_room((void **)&n->replies, &n->capreply, n->nreply + 1,
		      sizeof *n->replies)) {
		free(k);
		tfg_error(e, TFG_ENOMEM, "out of memory");
		return NULL;
	}
	k->open = 1;
	k->down_since = now;
	k->used = now;
	pthread_mutex_lock(&k->mu);
	net_link_dial(n, k);
	pthread_mutex_unlock(&k->mu);
	n->replies[n->nreply++] = k;
	return k;
}

tfg_status
rt_net_send_url(RtNet *n, const char *url, RtBuf *b, double deadline,
		RtNetStopFn stop, void *arg, TfgError *e)
{
	RtLink *k;

	tfg_status st;

	pthread_mutex_lock(&n->mu);
	if ((k = reply_get(n, url, e)) != NULL) {
		k->busy++; /* not recycled under the send */
		k->used = rt_now();
	}
	pthread_mutex_unlock(&n->mu);
	if (k == NULL) {
		rt_buf_free(b);
		return e ? e->code : TFG_ECONN;
	}
	st = link_send(n, k, b, deadline, stop, arg, e);
	pthread_mutex_lock(&n->mu);
	k->busy--;
	k->used = rt_now();
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

void
rt_net_tls(RtNet *n, RtTls *t)
{
	n->tls = t;
}

const char *
rt_net_peer_tls_why(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return "";
	return n->peers[peer].tls_why;
}

void
rt_net_key(RtNet *n, const unsigned char key[RT_KEY_BYTES])
{
	memcpy(n->key, key, RT_KEY_BYTES);
	n->keyed = 1;
}

int
rt_net_peer_refused(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open ||
	    n->peers[peer].state == 1)
		return 0;
	return n->peers[peer].refused;
}

int
rt_net_peer_why(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open ||
	    n->peers[peer].state != 2)
		return 0;
	return n->peers[peer].why;
}

int
rt_net_peer_dial_err(RtNet *n, int peer)
{
	RtLink *k;
	int err;

	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	k = &n->peers[peer];
	pthread_mutex_lock(&k->mu);
	err = k->state == 1 ? 0 : k->dial_err;
	pthread_mutex_unlock(&k->mu);
	return err;
}

double
rt_net_peer_down(RtNet *n, int peer)
{
	const RtLink *k;

	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	k = &n->peers[peer];
	return k->state == 1 ? 0 : rt_now() - k->down_since;
}

int
rt_net_peer_up(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	return n->peers[peer].state == 1;
}

int
rt_net_peer_dialed(RtNet *n, int peer)
{
	return peer >= 0 && peer < n->npeer && n->peers[peer].open;
}

int
rt_net_peer_shm(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	return n->peers[peer].shm_state == SHM_ON;
}

int
rt_net_peer_ups(RtNet *n, int peer)
{
	if (peer < 0 || peer >= n->npeer || !n->peers[peer].open)
		return 0;
	return n->peers[peer].ups;
}

static void
link_free(RtLink *k)
{
	net_shm_drop(k);
	if (k->fd >= 0)
		close(k->fd);
	for (int i = 0; i < k->nq; i++)
		rt_buf_free(k->queue[i]);
	rt_auth_free(&k->out);
	rt_auth_free(&k->in);
	rt_tls_close(k->tls);
	pthread_mutex_destroy(&k->mu);
}

void
rt_net_close(RtNet *n)
{
	int j = 0;

	for (int i = 0; i < nheld; i++) /* this thread's, dropped */
		if (held[i].n != n)
			held[j++] = held[i];
	nheld = j;
	n->closing = 1;
	if (n->io_started) {
		wake_io(n);
		pthread_join(n->io, NULL);
		n->io_started = 0;
	}
	while (n->conns)
		net_conn_close(n, n->conns);
	net_shm_close(n);
	if (n->lfd >= 0)
		close(n->lfd);
	n->lfd = -1;
	for (int i = 0; n->peers && i < n->npeer; i++)
		link_free(&n->peers[i]);
	for (int i = 0; i < n->nreply; i++) {
		link_free(n->replies[i]);
		free(n->replies[i]);
	}
	for (int i = 0; i < n->nretired; i++) {
		link_free(n->retired[i]);
		free(n->retired[i]);
	}
	free(n->retired);
	free(n->replies);
	n->replies = NULL;
	n->retired = NULL;
	n->nreply = n->nretired = n->capreply = n->capretired = 0;
	free(n->peers);
	n->peers = NULL;
	n->npeer = 0;
	rt_tls_free(n->tls);
	n->tls = NULL;
	if (n->ep >= 0)
		close(n->ep);
	if (n->wake >= 0)
		close(n->wake);
	n->ep = n->wake = -1;
	pthread_mutex_destroy(&n->mu);
	pthread_mutex_destroy(&n->lmu);
	pthread_cond_destroy(&n->lcv);
}
