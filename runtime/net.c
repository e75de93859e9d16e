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
 * of nng's threads (the poller, a task queue, the caller), about 72 us a
 * hop on the development VM against 25 to 50 us here, and a 313 KB round
 * trip took 290 us against 210 (bench/run.sh has both).
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
#include <sys/uio.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "runtime/net.h"
#include "runtime/rt_int.h"

#define FRAME_HDR 8
#define FLUSH_FRAMES 32 /* queued frames gathered into one write */
#define READ_AHEAD 8192 /* bytes a connection reads at once for small
			   reads */
#define SMALL_FRAME ((size_t)64 << 10) /* keyed: MACed before it leaves */
#define MAC_PIECE ((size_t)64 << 10) /* keyed: the most read at once */
#define SEND_PIECE ((size_t)512 << 10) /* keyed: the most written at once */
#define DIAL_MIN 0.01  /* seconds between dials of a link, growing */
#define DIAL_MAX 0.2
#define TLS_RECORD 16384 /* a TLS record's most bytes (io_sendv) */
#define IO_TICK_MS 20  /* the I/O thread looks at its dials this often */
#define GROW ((size_t)256 << 20) /* a frame's buffer grows by this much at
				   most before its bytes are there */

enum { EV_LISTEN = 1, EV_WAKE, EV_CONN, EV_LINK };

/* Control words: a frame length with CTL set.  Without a cluster key
 * nothing follows a PING or PONG; with one, each is followed by its MAC,
 * and a HELLO by the random part of the connection's key that its
 * sender chose (spec/design.md "Cluster keys"). */
#define CTL ((uint64_t)1 << 63)
#define CTL_PING (CTL | 1)
#define CTL_PONG (CTL | 2)
#define CTL_HELLO (CTL | 3)       /* keyed: first, each way */
#define CTL_DENY_MAC (CTL | 4)    /* refused: no valid MAC, or no HELLO */
#define CTL_DENY_NOKEY (CTL | 5)  /* refused: a HELLO, and no key here */
#define CTL_DENY_TLS (CTL | 6)    /* refused: no TLS handshake, and TLS
				     here */

/* An accepted connection: frames are read from it. */
typedef struct RtConn {
	int kind;              /* EV_CONN */
	int fd;
	char addr[64];
	unsigned char hdr[FRAME_HDR];
	int nhdr;              /* bytes of the frame's length read */
	RtBuf *cur;            /* the frame being read */
	size_t want, got, cap; /* its length, bytes read, room in cur */
	unsigned char pong[8 + RT_TAG_BYTES]; /* an answer to a ping not
				  written whole: */
	int npong, lpong;      /* its bytes written, of lpong (0: none) */
	/* keyed (RtNet.keyed) */
	int ready;             /* the dialer's HELLO came and was answered */
	RtAuth in, out;        /* MACs of the frames read, and of pongs */
	unsigned char x[RT_TAG_BYTES]; /* what follows a word or a frame
				  (a HELLO's nonce, a MAC) being read: */
	int nx, wantx, xkind;  /* its bytes read, of wantx; X_* */
	unsigned char ra[READ_AHEAD]; /* read ahead: small frames that came
				  together are read in one call (conn_in) */
	size_t ra_at, ra_len;  /* its bytes from ra_at to ra_len are unread */
	void *tls;             /* TLS (RtNet.tls): its session, */
	int hs;                /* its handshake: 1 not begun (nothing read),
				  2 under way, 0 done */
	/* under RtNet.lmu: */
	RtNetLand *land;       /* the place the frame's bytes go to */
	int ldrop;             /* its place was taken back midway: the
				  frame is read on and dropped */
	unsigned lgen;         /* RtNet.lgen when places were last tried */
	struct RtConn *next;
} RtConn;

/* What epoll's data points at for the two fds that are neither a
 * connection nor a link. */
static int ev_listen = EV_LISTEN, ev_wake = EV_WAKE;

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

static void
sockaddr_str(char *buf, size_t n, const struct sockaddr_storage *sa)
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

static void
word_put(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

static uint64_t
word_get(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << 8 * i;
	return v;
}

static void
nodelay(int fd)
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
static ssize_t
io_read(void *tls, int fd, void *buf, size_t n)
{
	return tls ? (ssize_t)rt_tls_read(tls, buf, n) : read(fd, buf, n);
}

static ssize_t
io_send(void *tls, int fd, const void *buf, size_t n)
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
static ssize_t
io_sendv(void *tls, int fd, struct iovec *iov, int niov)
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

/* ---------------------------------------------------------------- links */

static void
link_init(RtLink *k, const char *url, const char *name)
{
	memset(k, 0, sizeof *k);
	pthread_mutex_init(&k->mu, NULL);
	k->kind = EV_LINK;
	k->fd = -1;
	snprintf(k->url, sizeof k->url, "%s", url);
	k->name = name ? name : k->url;
}

/* (Re)arms epoll for link k, which is connecting or up: a connect's
 * completion, a hang-up, and room to write while something is queued.
 * One shot: the I/O thread re-arms it after each event.  Under k->mu. */
static void
link_arm(RtNet *n, RtLink *k, int add)
{
	struct epoll_event ev;

	ev.events = EPOLLRDHUP | EPOLLONESHOT |
		    (k->connecting == 3 && k->tls_want == 2 ? 0 : EPOLLIN) |
		    (k->connecting == 1 || (k->nq && !k->held) || k->lcbuf ||
		     (k->connecting == 3 && k->tls_want == 2) ? EPOLLOUT : 0);
	ev.data.ptr = k;
	epoll_ctl(n->ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, k->fd, &ev);
}

/* The connection of k broke (or never came): it is gone if it was up,
 * and is dialed again soon.  What is queued stays, a frame partly
 * written is written again whole.  Under k->mu. */
static void
link_broken(RtNet *n, RtLink *k)
{
	if (k->fd >= 0) {
		epoll_ctl(n->ep, EPOLL_CTL_DEL, k->fd, NULL);
		close(k->fd);
	}
	k->fd = -1;
	k->connecting = 0;
	k->qoff = 0;
	k->ntagged = 0;
	k->held = 0; /* all goes when the next connection is up */
	k->ncbuf = k->lcbuf = 0;
	k->nrbuf = 0;
	k->ready = 0; /* the next connection has keys of its own */
	rt_tls_close(k->tls);
	k->tls = NULL;
	rt_auth_free(&k->out);
	rt_auth_free(&k->in);
	if (k->state == 1) {
		if (!k->why)
			k->why = RT_GONE_HANGUP;
		k->state = 2;
		k->down_since = rt_now();
	}
	/* again at once after a connection that was up; a refused dial
	   waits longer each time, as nng's redials did */
	k->backoff = k->backoff < DIAL_MIN ? DIAL_MIN
		   : k->backoff * 2 > DIAL_MAX ? DIAL_MAX : k->backoff * 2;
	k->next_dial = rt_now() + k->backoff;
}

/* Starts a non-blocking connect of k.  Under k->mu. */
static void
link_dial(RtNet *n, RtLink *k)
{
	struct addrinfo hints, *ai = NULL;
	int fd = -1, rv;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	k->next_dial = rt_now() + DIAL_MAX;
	if (getaddrinfo(k->host, k->port, &hints, &ai) != 0 || ai == NULL) {
		k->dial_err = -1;
		return;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		k->dial_err = errno;
	if (fd >= 0) {
		nodelay(fd);
		rv = connect(fd, ai->ai_addr, ai->ai_addrlen);
		if (rv != 0 && errno != EINPROGRESS) {
			k->dial_err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return;
	k->fd = fd;
	k->connecting = 1;
	link_arm(n, k, 1);
}

/* What is left of the npart pieces of part[] after their first skip
 * bytes, as iov[] (room for npart); returns how many. */
static int
iov_rest(struct iovec *iov, const struct iovec *part, int npart, size_t skip)
{
	int niov = 0;

	for (int i = 0; i < npart; i++) {
		if (skip >= part[i].iov_len) {
			skip -= part[i].iov_len;
			continue;
		}
		iov[niov].iov_base = (char *)part[i].iov_base + skip;
		iov[niov++].iov_len = part[i].iov_len - skip;
		skip = 0;
	}
	return niov;
}

/* iov[0..niov) cut to its first max bytes; returns how many are left. */
static int
iov_cap(struct iovec *iov, int niov, size_t max)
{
	for (int i = 0; i < niov; i++) {
		if (iov[i].iov_len >= max) {
			iov[i].iov_len = max;
			return i + 1;
		}
		max -= iov[i].iov_len;
	}
	return niov;
}

/* The MAC of a frame of len bytes (hdr, data and tail) on keyed link k,
 * the next of its connection, into tag.  0, or -1 if libcrypto fails. */
static int
frame_tag(RtLink *k, const unsigned char *hdr, const void *data, size_t len,
	  const void *tail, size_t ntail, unsigned char *tag)
{
	if (rt_auth_begin(&k->out) || rt_auth_add(&k->out, hdr, FRAME_HDR) ||
	    rt_auth_add(&k->out, data, len) ||
	    (ntail && rt_auth_add(&k->out, tail, ntail)) ||
	    rt_auth_end(&k->out, tag))
		return -1;
	return 0;
}

/* Puts control word w (with its MAC on a keyed link) on k without
 * waiting; what does not fit waits in cbuf, before any frame, for the
 * I/O thread or the next sender (a word MACed is owed: the peer counts
 * it).  0, or -1 when the connection broke.  Under k->mu, nothing
 * pending. */
static int
link_word(RtNet *n, RtLink *k, uint64_t w)
{
	ssize_t r;

	word_put(k->cbuf, w);
	k->lcbuf = 8;
	if (n->keyed && k->ready) {
		if (frame_tag(k, k->cbuf, NULL, 0, NULL, 0, k->cbuf + 8) != 0) {
			link_broken(n, k);
			return -1;
		}
		k->lcbuf += RT_TAG_BYTES;
	}
	r = io_send(k->tls, k->fd, k->cbuf, (size_t)k->lcbuf);
	if (r < 0 && errno != EAGAIN && errno != EINTR) {
		link_broken(n, k);
		return -1;
	}
	k->ncbuf = r > 0 ? (int)r : 0;
	if (k->ncbuf == k->lcbuf)
		k->ncbuf = k->lcbuf = 0;
	else
		link_arm(n, k, 0);
	return 0;
}

/* Writes what is queued on k without waiting: 0 when the queue is
 * empty, 1 when the socket is full, -1 when the connection broke.  Under
 * k->mu, k up. */
static int
link_flush(RtNet *n, RtLink *k)
{
	if (k->lcbuf > 0) { /* the rest of a ping, before any frame */
		ssize_t w = io_send(k->tls, k->fd, k->cbuf + k->ncbuf,
				    (size_t)(k->lcbuf - k->ncbuf));

		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 1;
			link_broken(n, k);
			return -1;
		}
		if ((k->ncbuf += (int)w) < k->lcbuf)
			return 1;
		k->ncbuf = k->lcbuf = 0;
	}
	while (k->nq > 0) {
		const size_t tagged = n->keyed ? RT_TAG_BYTES : 0;
		const int nf = k->nq < FLUSH_FRAMES ? k->nq : FLUSH_FRAMES;
		unsigned char hdr[FLUSH_FRAMES][FRAME_HDR];
		struct iovec part[3 * FLUSH_FRAMES], iov[3 * FLUSH_FRAMES];
		int np = 0, done = 0;
		ssize_t w;

		/* the first nf frames in one write, each with its MAC
		   (keyed: made once per frame, kept until it is written) */
		for (int i = 0; i < nf; i++) {
			RtBuf *b = k->queue[i];

			word_put(hdr[i], (uint64_t)b->len);
			if (tagged && i >= k->ntagged) {
				if (frame_tag(k, hdr[i], b->data, b->len, NULL,
					      0, k->qtag[i]) != 0) {
					link_broken(n, k);
					return -1;
				}
				k->ntagged = i + 1;
			}
			part[np].iov_base = hdr[i];
			part[np++].iov_len = FRAME_HDR;
			part[np].iov_base = b->data;
			part[np++].iov_len = b->len;
			if (tagged) {
				part[np].iov_base = k->qtag[i];
				part[np++].iov_len = tagged;
			}
		}
		w = io_sendv(k->tls, k->fd, iov,
			     iov_rest(iov, part, np, k->qoff));
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 1;
			link_broken(n, k);
			return -1;
		}
		k->qoff += (size_t)w;
		if (w > 0)
			k->alive = rt_now(); /* the peer takes it: alive */
		while (done < nf && k->qoff >= FRAME_HDR +
		       k->queue[done]->len + tagged) {
			k->qoff -= FRAME_HDR + k->queue[done]->len + tagged;
			rt_buf_free(k->queue[done++]);
		}
		k->nq -= done;
		memmove(k->queue, k->queue + done,
			sizeof k->queue[0] * (size_t)k->nq);
		if (tagged) {
			k->ntagged -= done;
			memmove(k->qtag, k->qtag + done,
				sizeof k->qtag[0] * (size_t)k->ntagged);
		}
	}
	k->held = 0;
	return 0;
}

/* Writes what is held on k, if anything still is (a send or the I/O
 * thread may have written it meanwhile; a link that broke keeps it for
 * its next connection): what the socket has no room for is held no
 * more, and the I/O thread writes it when there is.  Under k->mu. */
static void
link_release(RtNet *n, RtLink *k)
{
	if (k->held && k->fd >= 0 && !k->connecting &&
	    link_flush(n, k) > 0) {
		k->held = 0;
		link_arm(n, k, 0);
	}
}

/* The bytes that follow word w when it comes back on a link. */
static int
word_extra(const RtNet *n, uint64_t w)
{
	return w == CTL_HELLO ? RT_NONCE_BYTES
	     : w == CTL_PONG && n->keyed ? RT_TAG_BYTES : 0;
}

/* Reads what comes back on link k: answers to its pings (each checked
 * against its MAC on a keyed link), the peer's HELLO (keyed: then the
 * connection's keys are made, and the first ping goes out), or a word
 * that refuses the connection.  How many answers came, or -1 when the
 * connection is over or says anything else.  Under k->mu, k
 * connected. */
static int
link_read(RtNet *n, RtLink *k)
{
	unsigned char tag[RT_TAG_BYTES], key[RT_KEY_BYTES];
	int heard = 0, want;
	uint64_t w;

	for (;;) {
		want = k->nrbuf < 8 ? 8 : 8 + word_extra(n, word_get(k->rbuf));
		ssize_t r = io_read(k->tls, k->fd, k->rbuf + k->nrbuf,
				    (size_t)(want - k->nrbuf));

		if (k->tls && k->connecting == 2 &&
		    (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))) {
			/* TLS 1.3: the peer checks this end's certificate
			   after this end's handshake is done */
			k->refused = RT_REFUSED_TLS;
			snprintf(k->tls_why, sizeof k->tls_why, "%s",
				 r == 0 ? "the TLS connection closed"
				 : rt_tls_error());
			return -1;
		}
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			/* a TLS alert (a record of type 21, version 3.x):
			   the peer speaks TLS, and this process not */
			if (!k->tls && k->nrbuf + (r > 0 ? r : 0) >= 2 &&
			    k->rbuf[0] == 0x15 && k->rbuf[1] == 0x03) {
				k->refused = RT_REFUSED_TLS;
				snprintf(k->tls_why, sizeof k->tls_why, "it "
					 "runs TLS, and this process not (give "
					 "it --tls-cert, --tls-key, --tls-ca)");
			}
			return -1;
		}
		if (r < 0)
			return heard;
		if ((k->nrbuf += (int)r) < 8 ||
		    k->nrbuf < 8 + word_extra(n, word_get(k->rbuf)))
			continue;
		k->nrbuf = 0;
		w = word_get(k->rbuf);
		if (w == CTL_DENY_MAC || w == CTL_DENY_NOKEY) {
			k->refused = w == CTL_DENY_MAC ? RT_REFUSED_MAC
				   : RT_REFUSED_NOKEY;
			return -1;
		}
		if (w == CTL_DENY_TLS) {
			k->refused = RT_REFUSED_TLS;
			snprintf(k->tls_why, sizeof k->tls_why, "it runs TLS, "
				 "and this process not (give it --tls-cert, "
				 "--tls-key, --tls-ca)");
			return -1;
		}
		if (w == CTL_HELLO) {
			if (!n->keyed || k->ready ||
			    rt_auth_derive(key, n->key, k->nonce, k->rbuf + 8) ||
			    rt_auth_init(&k->out, key, 0) ||
			    rt_auth_init(&k->in, key, 1))
				return -1;
			k->ready = 1;
			k->pinged = rt_now();
			if (link_word(n, k, CTL_PING) != 0)
				return -1;
			continue;
		}
		if (w != CTL_PONG)
			return -1;
		if (n->keyed && (!k->ready || rt_auth_begin(&k->in) ||
				 rt_auth_add(&k->in, k->rbuf, 8) ||
				 rt_auth_end(&k->in, tag) ||
				 !rt_auth_same(tag, k->rbuf + 8)))
			return -1;
		k->refused = 0;
		k->alive = rt_now();
		heard++;
	}
}

/* k's connect went through: it pings the peer at once (on a keyed link,
 * it says HELLO first and pings once the peer has said it back), and is
 * up when the peer's process answers, not when its kernel accepted
 * (which it does for a process that is stopped, too).  Under k->mu. */
static void
link_hello(RtNet *n, RtLink *k)
{
	unsigned char w[8 + RT_NONCE_BYTES];
	size_t len = 8;

	word_put(w, n->keyed ? CTL_HELLO : CTL_PING);
	if (n->keyed) {
		if (rt_auth_random(k->nonce, sizeof k->nonce) != 0) {
			link_broken(n, k);
			return;
		}
		memcpy(w + 8, k->nonce, sizeof k->nonce);
		len += sizeof k->nonce;
	}
	if (io_send(k->tls, k->fd, w, len) != (ssize_t)len) {
		link_broken(n, k); /* a new connection has room for it */
		return;
	}
	k->connecting = 2;
	k->alive = k->pinged = rt_now();
	link_arm(n, k, 0);
}

/* One more step of k's TLS handshake: done, k says HELLO (or PING) as
 * over plain TCP; failed, the peer refused it (or k refused the peer's
 * certificate), and why is kept for the messages.  Under k->mu. */
static void
link_tls_step(RtNet *n, RtLink *k)
{
	int rv = rt_tls_handshake(k->tls, &k->tls_want, k->tls_why,
				  sizeof k->tls_why);

	if (rv > 0) {
		link_hello(n, k);
	} else if (rv == 0) {
		link_arm(n, k, 0);
	} else if (rv == -2) {
		link_broken(n, k);
	} else {
		k->refused = RT_REFUSED_TLS;
		link_broken(n, k);
	}
}

/* k's connect went through: its TLS handshake begins.  Under k->mu. */
static void
link_tls_start(RtNet *n, RtLink *k)
{
	if ((k->tls = rt_tls_new(n->tls, k->fd, 0)) == NULL) {
		link_broken(n, k);
		return;
	}
	k->connecting = 3;
	k->alive = rt_now(); /* the handshake's deadline counts from here */
	link_tls_step(n, k);
}

/* The I/O thread's heartbeat of link k, each tick: a link that was
 * silent for n->hb_dead is broken (its peer is gone: a sender that holds
 * the mutex finds that between its slices), and one that was not pinged
 * for RT_NET_BEAT is pinged, between frames: when no sender holds it and
 * nothing waits in its queue. */
static void
link_beat(RtNet *n, RtLink *k, double now)
{
	if ((k->connecting == 2 || k->connecting == 3) && n->hb_dead > 0 &&
	    now - k->alive > n->hb_dead) {
		/* connected, but no answer: try again later; a peer that was
		   gone stays gone, for the reason it went */
		if (pthread_mutex_trylock(&k->mu) == 0) {
			if (k->connecting == 2 || k->connecting == 3)
				link_broken(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		return;
	}
	if (k->state != 1)
		return;
	if (n->hb_dead > 0 && now - k->alive > n->hb_dead) {
		k->why = RT_GONE_SILENT;
		k->down_since = now;
		k->state = 2;
		if (pthread_mutex_trylock(&k->mu) == 0) {
			link_broken(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		return;
	}
	if (now - k->pinged < (n->hb_dead > 0 && n->hb_dead < 6 * RT_NET_BEAT
			       ? n->hb_dead / 6 : RT_NET_BEAT) ||
	    pthread_mutex_trylock(&k->mu) != 0)
		return;
	/* between frames: none queued, or only held ones, none begun
	   (keyed: none MACed yet, as the MACs go in the order made; TLS:
	   none tried, as a write that must be retried must be retried
	   with the same bytes) */
	if (k->fd >= 0 && !k->connecting && (k->nq == 0 ||
	    (k->held && k->qoff == 0 && k->ntagged == 0 && !k->tls)) &&
	    k->lcbuf == 0) {
		k->pinged = now;
		link_word(n, k, CTL_PING);
	}
	pthread_mutex_unlock(&k->mu);
}

/* The I/O thread's event on link k. */
static void
link_event(RtNet *n, RtLink *k, uint32_t events)
{
	int err = 0;
	socklen_t len = sizeof err;

	if (k->connecting) {
		pthread_mutex_lock(&k->mu); /* its holders never wait */
		if (k->fd >= 0 && k->connecting == 1) {
			if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err,
				       &len) != 0 || err != 0 ||
			    (events & (EPOLLHUP | EPOLLERR))) {
				k->dial_err = err ? err : ECONNREFUSED;
				link_broken(n, k);
			} else {
				k->dial_err = 0; /* something listens */
				if (n->tls)
					link_tls_start(n, k);
				else
					link_hello(n, k);
			}
		} else if (k->fd >= 0 && k->connecting == 3) {
			link_tls_step(n, k);
		} else if (k->fd >= 0 && k->connecting == 2) {
			int heard = (events & (EPOLLHUP | EPOLLERR)) ? -1
				  : link_read(n, k);

			if (heard < 0) {
				link_broken(n, k);
			} else if (heard > 0) { /* the peer answers: up */
				k->connecting = 0;
				k->why = 0;
				k->down_since = 0;
				k->state = 1;
				k->dial_err = 0;
				k->ups++;
				k->next_dial = 0;
				k->backoff = 0;
				if (link_flush(n, k) >= 0)
					link_arm(n, k, 0);
			} else {
				link_arm(n, k, 0);
			}
		}
		pthread_mutex_unlock(&k->mu);
		return;
	}
	/* Up: a sender may hold the mutex while it waits for room; then it
	   finds the hang-up itself, as a failed write.  The state says
	   gone at once either way. */
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		if (k->state == 1) {
			k->why = RT_GONE_HANGUP;
			k->down_since = rt_now();
			k->state = 2;
		}
		if (pthread_mutex_trylock(&k->mu) == 0) {
			link_broken(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		return;
	}
	if (pthread_mutex_trylock(&k->mu) == 0) {
		if (k->fd >= 0 && (events & EPOLLIN) && link_read(n, k) < 0)
			link_broken(n, k);
		if (k->fd >= 0 && link_flush(n, k) >= 0)
			link_arm(n, k, 0);
		pthread_mutex_unlock(&k->mu);
	}
	/* else the sender flushes the queue before its own frame, and arms
	   the link again when it is done (link_send) */
}

/* Each tick of the I/O thread: the links that are up get their
 * heartbeat, and those not connected whose pause is over are dialed
 * again. */
static void
tend_links(RtNet *n)
{
	double now = rt_now();
	RtLink *r[RT_NET_REPLIES];
	int nr;

	for (int i = 0; i < n->npeer; i++) {
		RtLink *k = &n->peers[i];

		if (k->open)
			link_beat(n, k, now);
		if (k->held && pthread_mutex_trylock(&k->mu) == 0) {
			/* held too long: its sender is busy computing */
			if (now - k->held_since > RT_NET_HOLD_S)
				link_release(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		if (!k->open || k->fd >= 0 || k->next_dial > now)
			continue;
		pthread_mutex_lock(&k->mu);
		if (k->fd < 0 && !n->closing)
			link_dial(n, k);
		pthread_mutex_unlock(&k->mu);
	}
	pthread_mutex_lock(&n->mu);
	nr = n->nreply;
	memcpy(r, n->replies, sizeof r[0] * (size_t)nr);
	for (int i = 0; i < nr; i++)
		r[i]->busy++; /* stays while it is dialed here */
	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < nr; i++) {
		RtLink *k = r[i];

		if (k->open)
			link_beat(n, k, now);
		if (k->open && k->fd < 0 && k->next_dial <= now) {
			pthread_mutex_lock(&k->mu);
			if (k->fd < 0 && k->open && !n->closing)
				link_dial(n, k);
			pthread_mutex_unlock(&k->mu);
		}
	}
	pthread_mutex_lock(&n->mu);
	for (int i = 0; i < nr; i++)
		r[i]->busy--;
	pthread_mutex_unlock(&n->mu);
}

/* ------------------------------------------------------------- receive */

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

static void
conn_close(RtNet *n, RtConn *c)
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
	epoll_ctl(n->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	rt_buf_free(c->cur);
	rt_auth_free(&c->in);
	rt_auth_free(&c->out);
	rt_tls_close(c->tls);
	free(c);
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

		if (fd < 0)
			return;
		if ((c = calloc(1, sizeof *c)) == NULL) {
			close(fd);
			continue;
		}
		nodelay(fd);
		c->kind = EV_CONN;
		c->fd = fd;
		sockaddr_str(c->addr, sizeof c->addr, &sa);
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
enum { X_HELLO = 1, X_PING, X_TAG };

/* Says once per host that a peer at c's address was refused (a line for
 * each could flood the log of a server under attack), in `what` words. */
static void
conn_refused(RtNet *n, RtConn *c, const char *what)
{
	char host[64];
	size_t h = strlen(c->addr);

	/* the host without the port: each connection has another port */
	while (h > 0 && c->addr[h - 1] != ':')
		h--;
	snprintf(host, sizeof host, "%.*s", h > 0 ? (int)h - 1 : 63, c->addr);
	for (int i = 0; i < n->nlogged && i < 16; i++)
		if (strcmp(n->logged[i], host) == 0)
			return;
	snprintf(n->logged[n->nlogged++ % 16], sizeof n->logged[0], "%s", host);
	fprintf(stderr, "tfgc: warning: %s: refused a connection from %s: %s "
		"(it was closed; this task serves on, and says no more of "
		"%s)\n", n->name, c->addr, what, host);
}

/* Refuses c: the word that says why goes back (best effort: a peer that
 * is no member of the cluster gets nothing else), and the caller closes
 * it.  Always -1. */
static int
conn_deny(RtNet *n, RtConn *c, uint64_t why, const char *what)
{
	unsigned char w[8];

	word_put(w, why);
	/* in the clear to a peer that never got as far as TLS */
	if (io_send(c->hs ? NULL : c->tls, c->fd, w, sizeof w) < 0) {
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
	w = io_send(c->tls, c->fd, c->pong + c->npong,
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
conn_pong(RtNet *n, RtConn *c)
{
	if (conn_flush(c) != 0)
		return -1;
	if (c->lpong > 0)
		return 0;
	word_put(c->pong, CTL_PONG);
	c->lpong = 8;
	if (n->keyed) {
		if (rt_auth_begin(&c->out) || rt_auth_add(&c->out, c->pong, 8) ||
		    rt_auth_end(&c->out, c->pong + 8))
			return -1;
		c->lpong += RT_TAG_BYTES;
	}
	return conn_flush(c);
}

/* The peer's HELLO on keyed c: this end's part of the connection's key
 * goes back, and both directions get their keys.  0, or -1. */
static int
conn_hello(RtNet *n, RtConn *c)
{
	unsigned char w[8 + RT_NONCE_BYTES], key[RT_KEY_BYTES];

	word_put(w, CTL_HELLO);
	if (rt_auth_random(w + 8, RT_NONCE_BYTES) ||
	    rt_auth_derive(key, n->key, c->x, w + 8) ||
	    rt_auth_init(&c->in, key, 0) || rt_auth_init(&c->out, key, 1))
		return -1;
	if (io_send(c->tls, c->fd, w, sizeof w) != (ssize_t)sizeof w)
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
	uint64_t w = word_get(c->hdr);

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
			c->wantx = RT_NONCE_BYTES, c->xkind = X_HELLO;
			return 0;
		}
		if (w == CTL_PING && n->keyed) {
			if (!c->ready)
				return conn_deny(n, c, CTL_DENY_MAC, no_mac);
			c->wantx = RT_TAG_BYTES, c->xkind = X_PING;
			return 0;
		}
		if (w == CTL_PING)
			return conn_pong(n, c);
		if (n->keyed)
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		fprintf(stderr, "tfgc: error: %s: a garbled frame from %s "
			"(connection closed)\n", n->name, c->addr);
		return -1;
	}
	if (n->keyed && !c->ready)
		return conn_deny(n, c, CTL_DENY_MAC, no_mac);
	c->want = (size_t)w;
	if (c->want > n->maxmsg) {
		fprintf(stderr, "tfgc: error: %s: a message of %zu bytes from "
			"%s is over the limit of %zu (connection closed)\n",
			n->name, c->want, c->addr, n->maxmsg);
		return -1;
	}
	if (n->keyed && (rt_auth_begin(&c->in) ||
			 rt_auth_add(&c->in, c->hdr, FRAME_HDR)))
		return -1;
	c->got = 0;
	c->cap = 0;
	c->lgen = n->lgen + 1; /* the places posted are tried once */
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
	case X_PING:
		word_put(w, CTL_PING);
		if (rt_auth_begin(&c->in) || rt_auth_add(&c->in, w, 8) ||
		    rt_auth_end(&c->in, tag) || !rt_auth_same(tag, c->x))
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		return conn_pong(n, c);
	default: /* X_TAG */
		if (rt_auth_end(&c->in, tag) || !rt_auth_same(tag, c->x))
			return conn_deny(n, c, CTL_DENY_MAC, no_mac);
		conn_deliver(n, c);
		return 0;
	}
}

static int conn_read(RtNet *n, RtConn *c);

/* Reads up to len bytes of c into dst: from what was read ahead, else
 * from the socket, through the read-ahead buffer for a small read (the
 * frames of a held batch, net.c rt_net_hold, come together: one call
 * reads them all, where a header and a body each cost one). */
static ssize_t
conn_in(RtConn *c, void *dst, size_t len)
{
	if (c->ra_at == c->ra_len && len < READ_AHEAD) {
		ssize_t r = io_read(c->tls, c->fd, c->ra, READ_AHEAD);

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
	return io_read(c->tls, c->fd, dst, len);
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
	    (c->land || c->ldrop || c->lgen != n->lgen)) {
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
	if (n->keyed && room > MAC_PIECE && room > c->want / 16)
		room = c->want / 16 > MAC_PIECE ? c->want / 16 : MAC_PIECE;
	r = conn_in(c, at, room);
	if (r > 0 && n->keyed && rt_auth_add(&c->in, at, (size_t)r) != 0) {
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
	return conn_read(n, c);
}

/* Reads what has come on c and completes every whole frame (with a
 * cluster key, every frame whose MAC is right: the MAC is computed as
 * its bytes come, while they are in the cache).  0, or -1 when the
 * connection is over (closed by the caller). */
static int
conn_read(RtNet *n, RtConn *c)
{
	for (;;) {
		ssize_t r;

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
			if (n->keyed)
				c->wantx = RT_TAG_BYTES, c->xkind = X_TAG;
			else
				conn_deliver(n, c);
		}
	}
}

static void *
io_main(void *arg)
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
				    (!c->hs && conn_read(n, c) != 0))
					conn_close(n, c);
			} else {
				link_event(n, ev[i].data.ptr, ev[i].events);
			}
		}
		tend_links(n);
	}
	return NULL;
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
		link_init(&n->peers[i], "", NULL);
	if (pthread_create(&n->io, NULL, io_main, n) != 0)
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
rt_net_dial(RtNet *n, int peer, const char *url, const char *name,
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
	k->open = 1;
	k->down_since = rt_now();
	link_dial(n, k);
	pthread_mutex_unlock(&k->mu);
	return TFG_OK;
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
	ev.data.ptr = &ev_listen;
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
	const size_t tagged = n->keyed ? RT_TAG_BYTES : 0;
	size_t len = b->len + b->ntail, body = FRAME_HDR + len;
	size_t total = body + tagged, off = 0, macked = 0;
	struct iovec part[4] = {
		{hdr, FRAME_HDR}, {b->data, b->len},
		{(void *)b->tail, b->ntail}, {tag, tagged}};

	word_put(hdr, (uint64_t)len);
	/* Keyed, the MAC follows the bytes out: each piece is MACed just
	   after the kernel took it.  Pieces of 512 KiB: a 1 MiB frame in
	   one write was MACed only after the receiver had it all (and
	   MACed it itself, after one read of it all: conn_body), 128 KiB
	   pieces cost the receiver more wake-ups than they saved. */
	if (tagged && (rt_auth_begin(&k->out) != 0 ||
		       /* a small frame is MACed first, so that the tag leaves
			  in the same segment: a second one costs the
			  receiver a wake-up, some 15 us a hop here */
		       (len <= SMALL_FRAME &&
			mac_range(k, part, 0, body, tag) != 0))) {
		link_broken(n, k);
		return tfg_error(e, TFG_ESYS, "cannot MAC a message to %s",
				 k->name);
	}
	if (tagged && len <= SMALL_FRAME)
		macked = body;
	while (off < total) {
		struct iovec iov[4];
		int niov;
		ssize_t w;
		struct pollfd pfd;

		/* the tag (part 3) only once the MAC is done; a large frame
		   in pieces of SEND_PIECE, each MACed once the kernel took
		   it, while the receiver reads it */
		niov = iov_rest(iov, part, macked < body ? 3 : 4, off);
		if (tagged && macked < body)
			niov = iov_cap(iov, niov, SEND_PIECE);
		w = io_sendv(k->tls, k->fd, iov, niov);
		if (w > 0) {
			off += (size_t)w;
			k->alive = rt_now(); /* the peer takes it: alive */
			if (tagged && macked < body &&
			    mac_range(k, part, macked, off < body ? off : body,
				      tag) != 0) {
				link_broken(n, k);
				return tfg_error(e, TFG_ESYS, "cannot MAC a "
						 "message to %s", k->name);
			}
			if (tagged && macked < body)
				macked = off < body ? off : body;
			continue;
		}
		if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
		    k->state == 2) { /* broken, or silent (link_beat) */
			link_broken(n, k);
			return gone_error(n, k, e);
		}
		/* a frame given up breaks the connection if any of it left,
		   or, keyed, if its number was taken, or on TLS, whose
		   write that found no room took a record of it: kept, the
		   connection would send that record as the next frame's
		   first bytes */
		if (stop && stop(arg, e)) {
			if (off > 0 || tagged || k->tls)
				link_broken(n, k);
			return e ? e->code : TFG_ECANCELED;
		}
		if (rt_now() >= deadline) {
			if (off > 0 || tagged || k->tls)
				link_broken(n, k);
			return tfg_error(e, TFG_ETIMEDOUT, "timed out sending "
					 "to %s (not up?)", k->name);
		}
		pfd.fd = k->fd;
		pfd.events = POLLOUT;
		poll(&pfd, 1, (int)(RT_NET_SLICE * 1000));
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
		    (rv = link_flush(n, k)) == 0) {
			st = write_frame(n, k, b, deadline, stop, arg, e);
			if (k->fd >= 0) /* an event may have come meanwhile */
				link_arm(n, k, 0);
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
		{
			struct pollfd pfd = {k->fd, POLLOUT, 0};

			if (pfd.fd < 0 || k->connecting)
				poll(NULL, 0, (int)(RT_NET_SLICE * 1000));
			else
				poll(&pfd, 1, (int)(RT_NET_SLICE * 1000));
		}
		pthread_mutex_lock(&k->mu);
	}
}

tfg_status
rt_net_send(RtNet *n, int peer, RtBuf *b, double deadline, RtNetStopFn stop,
	    void *arg, TfgError *e)
{
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
		link_release(n, k);
		pthread_mutex_unlock(&k->mu);
	}
	nheld = 0;
	rt_held_flush = NULL;
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
	rt_held_flush = rt_net_flush_held;
	return TFG_OK;
}

/* The reply link to url, dialed on first use; under n->mu.  Past
 * RT_NET_REPLIES (many controllers over time: tfgc stop, --attach) the
 * oldest is closed to make room, and freed at rt_net_close (a send may
 * still hold it). */
static RtLink *
reply_get(RtNet *n, const char *url, TfgError *e)
{
	RtLink *k;

	for (int i = 0; i < n->nreply; i++)
		if (strcmp(n->replies[i]->url, url) == 0)
			return n->replies[i];
	if ((k = calloc(1, sizeof *k)) == NULL) {
		tfg_error(e, TFG_ENOMEM, "out of memory");
		return NULL;
	}
	link_init(k, url, NULL);
	if (split_url(url, k->host, sizeof k->host, k->port,
		      sizeof k->port) != 0) {
		tfg_error(e, TFG_EINVAL, "%s: cannot dial %s: not a "
			  "tcp://host:port address", n->name, url);
		free(k);
		return NULL;
	}
	if (n->nreply == RT_NET_REPLIES) {
		RtLink *old = n->replies[0];

		if (n->nretired == n->capretired) {
			int nc = n->capretired ? 2 * n->capretired : 8;
			RtLink **v = realloc(n->retired, sizeof *v * (size_t)nc);

			if (v == NULL) {
				free(k);
				tfg_error(e, TFG_ENOMEM, "out of memory");
				return NULL;
			}
			n->retired = v, n->capretired = nc;
		}
		pthread_mutex_lock(&old->mu);
		old->open = 0;
		link_broken(n, old);
		pthread_mutex_unlock(&old->mu);
		n->retired[n->nretired++] = old;
		memmove(n->replies, n->replies + 1,
			sizeof n->replies[0] * (size_t)--n->nreply);
	}
	k->open = 1;
	k->down_since = rt_now();
	pthread_mutex_lock(&k->mu);
	link_dial(n, k);
	pthread_mutex_unlock(&k->mu);
	n->replies[n->nreply++] = k;
	return k;
}

tfg_status
rt_net_send_url(RtNet *n, const char *url, RtBuf *b, double deadline,
		RtNetStopFn stop, void *arg, TfgError *e)
{
	RtLink *k;

	pthread_mutex_lock(&n->mu);
	k = reply_get(n, url, e);
	pthread_mutex_unlock(&n->mu);
	if (k == NULL) {
		rt_buf_free(b);
		return e ? e->code : TFG_ECONN;
	}
	return link_send(n, k, b, deadline, stop, arg, e);
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

static void
link_free(RtLink *k)
{
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
	if ((nheld = j) == 0)
		rt_held_flush = NULL;
	n->closing = 1;
	if (n->io_started) {
		wake_io(n);
		pthread_join(n->io, NULL);
		n->io_started = 0;
	}
	while (n->conns)
		conn_close(n, n->conns);
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
	n->nreply = n->nretired = 0;
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
