/*
 * runtime/net_link.c: the transport's links (spec/design.md "Transport",
 * "Cluster keys", "TLS"): a process's one connection to each peer, on
 * which it writes its frames.  Dialing and redialing, the keyed HELLO
 * and the TLS handshake, the heartbeat pings and their pongs, writing a
 * link's queue when it comes up, and a frame's sends in slices.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/net_int.h"

void
net_link_init(RtLink *k, const char *url, const char *name)
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
void
net_link_arm(RtNet *n, RtLink *k, int add)
{
	struct epoll_event ev;

	ev.events = EPOLLRDHUP | EPOLLONESHOT |
		    (k->connecting == 3 && k->tls_want == 2 ? 0 : EPOLLIN) |
		    (k->connecting == 1 ||
		     (k->nq && !k->held && k->shm_state != SHM_ON) || k->lcbuf ||
		     (k->connecting == 3 && k->tls_want == 2) ? EPOLLOUT : 0);
	ev.data.ptr = k;
	epoll_ctl(n->ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, k->fd, &ev);
}

/* The connection of k broke (or never came): it is gone if it was up,
 * and is dialed again soon.  What is queued stays, a frame partly
 * written is written again whole.  Under k->mu. */
void
net_link_broken(RtNet *n, RtLink *k)
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
	k->mac = k->direct = 0;
	net_shm_drop(k); /* frames on its ring were sent */
	k->shm_tried = 0;
	k->nframes = 0;
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
void
net_link_dial(RtNet *n, RtLink *k)
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
		net_nodelay(fd);
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
	net_link_arm(n, k, 1);
}

/* What is left of the npart pieces of part[] after their first skip
 * bytes, as iov[] (room for npart); returns how many. */
int
net_iov_rest(struct iovec *iov, const struct iovec *part, int npart,
	     size_t skip)
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
int
net_iov_cap(struct iovec *iov, int niov, size_t max)
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

/* Puts control word w (with its MAC on a keyed link, or the nx bytes
 * at x after it: never both) on k without waiting; what does not fit
 * waits in cbuf, before any frame, for the I/O thread or the next
 * sender (a word MACed is owed: the peer counts it).  0, or -1 when the
 * connection broke.  Under k->mu, nothing pending. */
int
net_link_word(RtNet *n, RtLink *k, uint64_t w, const void *x, int nx)
{
	ssize_t r;

	net_word_put(k->cbuf, w);
	k->lcbuf = 8;
	if (nx > 0) {
		memcpy(k->cbuf + 8, x, (size_t)nx);
		k->lcbuf += nx;
	} else if (k->mac && k->ready) {
		if (frame_tag(k, k->cbuf, NULL, 0, NULL, 0, k->cbuf + 8) != 0) {
			net_link_broken(n, k);
			return -1;
		}
		k->lcbuf += RT_TAG_BYTES;
	}
	r = net_io_send(k->tls, k->fd, k->cbuf, (size_t)k->lcbuf);
	if (r < 0 && errno != EAGAIN && errno != EINTR) {
		net_link_broken(n, k);
		return -1;
	}
	k->ncbuf = r > 0 ? (int)r : 0;
	if (k->ncbuf == k->lcbuf)
		k->ncbuf = k->lcbuf = 0;
	else
		net_link_arm(n, k, 0);
	return 0;
}

/* Writes what is queued on k without waiting: 0 when the queue is
 * empty, 1 when the socket is full, -1 when the connection broke.  Under
 * k->mu, k up. */
int
net_link_flush(RtNet *n, RtLink *k)
{
	if (k->lcbuf > 0) { /* the rest of a ping, before any frame */
		ssize_t w = net_io_send(k->tls, k->fd, k->cbuf + k->ncbuf,
					(size_t)(k->lcbuf - k->ncbuf));

		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 1;
			net_link_broken(n, k);
			return -1;
		}
		if ((k->ncbuf += (int)w) < k->lcbuf)
			return 1;
		k->ncbuf = k->lcbuf = 0;
	}
	while (k->nq > 0) {
		const size_t tagged = k->mac ? RT_TAG_BYTES : 0;
		const int nf = k->nq < FLUSH_FRAMES ? k->nq : FLUSH_FRAMES;
		unsigned char hdr[FLUSH_FRAMES][FRAME_HDR];
		struct iovec part[3 * FLUSH_FRAMES], iov[3 * FLUSH_FRAMES];
		int np = 0, done = 0;
		ssize_t w;

		/* the first nf frames in one write, each with its MAC
		   (keyed: made once per frame, kept until it is written) */
		for (int i = 0; i < nf; i++) {
			RtBuf *b = k->queue[i];

			net_word_put(hdr[i], (uint64_t)b->len);
			if (tagged && i >= k->ntagged) {
				if (frame_tag(k, hdr[i], b->data, b->len, NULL,
					      0, k->qtag[i]) != 0) {
					net_link_broken(n, k);
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
		w = net_link_sendv(k, iov, net_iov_rest(iov, part, np,
							k->qoff));
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 1;
			net_link_broken(n, k);
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
		k->nframes += done;
		memmove(k->queue, k->queue + done,
			sizeof k->queue[0] * (size_t)k->nq);
		if (tagged) {
			k->ntagged -= done;
			memmove(k->qtag, k->qtag + done,
				sizeof k->qtag[0] * (size_t)k->ntagged);
		}
	}
	k->held = 0;
	net_shm_go(n, k); /* what waited went on TCP: the ring's turn */
	net_shm_offer(n, k); /* a link that carries frames: a ring */
	return 0;
}

/* Writes what is held on k, if anything still is (a send or the I/O
 * thread may have written it meanwhile; a link that broke keeps it for
 * its next connection): what the socket has no room for is held no
 * more, and the I/O thread writes it when there is.  Under k->mu. */
void
net_link_release(RtNet *n, RtLink *k)
{
	if (k->held && k->fd >= 0 && !k->connecting &&
	    net_link_flush(n, k) > 0) {
		k->held = 0;
		net_link_arm(n, k, 0);
	}
}

/* The bytes that follow word w when it comes back on a link. */
static int
word_extra(const RtLink *k, uint64_t w)
{
	return w == CTL_HELLO ? RT_HELLO_BYTES
	     : w == CTL_SHM_OK ? SHM_ANSWER
	     : w == CTL_PONG && k->mac ? RT_TAG_BYTES : 0;
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
		want = k->nrbuf < 8 ? 8 : 8 + word_extra(k, net_word_get(k->rbuf));
		ssize_t r = net_io_read(k->tls, k->fd, k->rbuf + k->nrbuf,
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
		    k->nrbuf < 8 + word_extra(k, net_word_get(k->rbuf)))
			continue;
		k->nrbuf = 0;
		w = net_word_get(k->rbuf);
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
			    rt_auth_derive(key, n->key, k->hello, k->rbuf + 8) ||
			    rt_auth_init(&k->out, key, 0) ||
			    rt_auth_init(&k->in, key, 1))
				return -1;
			k->ready = 1;
			k->direct = net_direct(k->hello + RT_NONCE_BYTES,
					       k->rbuf + 8 + RT_NONCE_BYTES);
			k->pinged = rt_now();
			if (net_link_word(n, k, CTL_PING, NULL, 0) != 0)
				return -1;
			continue;
		}
		if ((w == CTL_SHM_OK || w == CTL_SHM_NO) && !k->mac) {
			net_shm_answer(n, k, w, k->rbuf + 8);
			if (k->fd < 0)
				return -1;
			continue;
		}
		if (w != CTL_PONG)
			return -1;
		if ((n->keyed && !k->ready) ||
		    (k->mac && (rt_auth_begin(&k->in) ||
				rt_auth_add(&k->in, k->rbuf, 8) ||
				rt_auth_end(&k->in, tag) ||
				!rt_auth_same(tag, k->rbuf + 8))))
			return -1;
		/* direct: the key is proven both ways, and the kernel
		   keeps the rest of the connection */
		if (k->direct)
			k->mac = 0;
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
	unsigned char w[8 + RT_HELLO_BYTES];
	size_t len = 8;

	net_word_put(w, n->keyed ? CTL_HELLO : CTL_PING);
	k->mac = n->keyed;
	k->direct = 0;
	if (n->keyed) {
		if (rt_auth_random(k->hello, RT_NONCE_BYTES) != 0) {
			net_link_broken(n, k);
			return;
		}
		net_view(n, k->fd, 1, k->hello + RT_NONCE_BYTES);
		memcpy(w + 8, k->hello, RT_HELLO_BYTES);
		len += RT_HELLO_BYTES;
	}
	if (net_io_send(k->tls, k->fd, w, len) != (ssize_t)len) {
		net_link_broken(n, k); /* a new connection has room for it */
		return;
	}
	k->connecting = 2;
	k->alive = k->pinged = rt_now();
	net_link_arm(n, k, 0);
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
		net_link_arm(n, k, 0);
	} else if (rv == -2) {
		net_link_broken(n, k);
	} else {
		k->refused = RT_REFUSED_TLS;
		net_link_broken(n, k);
	}
}

/* k's connect went through: its TLS handshake begins.  Under k->mu. */
static void
link_tls_start(RtNet *n, RtLink *k)
{
	if ((k->tls = rt_tls_new(n->tls, k->fd, 0)) == NULL) {
		net_link_broken(n, k);
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
link_beat(RtNet *n, RtLink *k, double now, int judge)
{
	if (judge && (k->connecting == 2 || k->connecting == 3) &&
	    n->hb_dead > 0 && now - k->alive > n->hb_dead) {
		/* connected, but no answer: try again later; a peer that was
		   gone stays gone, for the reason it went */
		if (pthread_mutex_trylock(&k->mu) == 0) {
			if (k->connecting == 2 || k->connecting == 3)
				net_link_broken(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		return;
	}
	if (k->state != 1)
		return;
	if (judge && n->hb_dead > 0 && now - k->alive > n->hb_dead) {
		k->why = RT_GONE_SILENT;
		k->down_since = now;
		k->state = 2;
		if (pthread_mutex_trylock(&k->mu) == 0) {
			net_link_broken(n, k);
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
	    k->shm_state == SHM_ON || /* frames go on the ring */
	    (k->held && k->qoff == 0 && k->ntagged == 0 && !k->tls)) &&
	    k->lcbuf == 0) {
		k->pinged = now;
		net_link_word(n, k, CTL_PING, NULL, 0);
	}
	pthread_mutex_unlock(&k->mu);
}

/* The I/O thread's event on link k. */
void
net_link_event(RtNet *n, RtLink *k, uint32_t events)
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
				net_link_broken(n, k);
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
				net_link_broken(n, k);
			} else if (heard > 0) { /* the peer answers: up */
				k->connecting = 0;
				k->why = 0;
				k->down_since = 0;
				k->state = 1;
				k->dial_err = 0;
				k->ups++;
				k->next_dial = 0;
				k->backoff = 0;
				if (net_link_flush(n, k) >= 0)
					net_link_arm(n, k, 0);
			} else {
				net_link_arm(n, k, 0);
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
			net_link_broken(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		return;
	}
	if (pthread_mutex_trylock(&k->mu) == 0) {
		if (k->fd >= 0 && (events & EPOLLIN) && link_read(n, k) < 0)
			net_link_broken(n, k);
		if (k->fd >= 0 && net_link_flush(n, k) >= 0)
			net_link_arm(n, k, 0);
		pthread_mutex_unlock(&k->mu);
	}
	/* else the sender flushes the queue before its own frame, and arms
	   the link again when it is done (link_send) */
}

/* Each tick of the I/O thread: the links that are up get their
 * heartbeat, and those not connected whose pause is over are dialed
 * again.  A tick that comes late (half the silence that breaks a link)
 * judges no link: this thread was busy reading (a frame of 610 MB took
 * it 2 s on two loaded cores), and the answers that came meanwhile wait
 * unread in their sockets, for the next turn. */
void
net_tend_links(RtNet *n)
{
	double now = rt_now();
	RtLink *few[RT_NET_REPLIES], **r = few;
	int nr, judge = n->hb_dead <= 0 || now - n->tended < n->hb_dead / 2;

	n->tended = now;

	for (int i = 0; i < n->npeer; i++) {
		RtLink *k = &n->peers[i];

		if (k->open)
			link_beat(n, k, now, judge);
		if (k->held && pthread_mutex_trylock(&k->mu) == 0) {
			/* held too long: its sender is busy computing */
			if (now - k->held_since > RT_NET_HOLD_S)
				net_link_release(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		if (k->shm_state == SHM_ON && k->nq > 0 && !k->held &&
		    pthread_mutex_trylock(&k->mu) == 0) {
			/* queued while its ring was full: no event says
			   when there is room again */
			if (k->shm_state == SHM_ON && k->fd >= 0)
				net_link_flush(n, k);
			pthread_mutex_unlock(&k->mu);
		}
		if (!k->open || k->fd >= 0 || k->next_dial > now)
			continue;
		pthread_mutex_lock(&k->mu);
		if (k->fd < 0 && !n->closing)
			net_link_dial(n, k);
		pthread_mutex_unlock(&k->mu);
	}
	pthread_mutex_lock(&n->mu);
	nr = n->nreply;
	if (nr > RT_NET_REPLIES &&
	    (r = malloc(sizeof r[0] * (size_t)nr)) == NULL) {
		pthread_mutex_unlock(&n->mu);
		return; /* out of memory: the next tick tends them */
	}
	if (nr > 0)
		memcpy(r, n->replies, sizeof r[0] * (size_t)nr);
	for (int i = 0; i < nr; i++)
		r[i]->busy++; /* stays while it is dialed here */
	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < nr; i++) {
		RtLink *k = r[i];

		if (k->open)
			link_beat(n, k, now, judge);
		if (k->open && k->fd < 0 && k->next_dial <= now) {
			pthread_mutex_lock(&k->mu);
			if (k->fd < 0 && k->open && !n->closing)
				net_link_dial(n, k);
			pthread_mutex_unlock(&k->mu);
		}
	}
	pthread_mutex_lock(&n->mu);
	for (int i = 0; i < nr; i++)
		r[i]->busy--;
	pthread_mutex_unlock(&n->mu);
	if (r != few)
		free(r);
}

