/*
 * runtime/net_int.h: what the transport's files share (runtime/net.c: the
 * API, helpers, reply links and held sends; runtime/net_link.c: the
 * links to the peers; runtime/net_recv.c: the I/O thread, receiving and
 * landing), and no one else includes.
 */
#ifndef TFG_RUNTIME_NET_INT_H
#define TFG_RUNTIME_NET_INT_H

#include <sys/types.h>
#include <sys/uio.h>

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
#define PROVE_S 10.0   /* seconds an accepted connection has to answer a
			  ping or deliver a frame (TLS handshake included) */
#define UNPROVEN_MAX ((size_t)64 << 10) /* the largest frame before that */
#define SLOW_S 10.0    /* a frame taking longer than this must come at */
#define SLOW_RATE 65536.0 /* bytes a second at least */
#define HOST_UNPROVEN 128 /* unproven connections from one host at once */
#define IO_TICK_MS 20  /* the I/O thread looks at its dials this often */
#define GROW ((size_t)256 << 20) /* a frame's buffer grows by this much at
				   most before its bytes are there */

enum { EV_LISTEN = 1, EV_WAKE, EV_CONN, EV_LINK };
extern int net_ev_listen; /* epoll's data for the listening socket */

/* Control words: a frame length with CTL set.  Without a cluster key
 * nothing follows a PING or PONG; with one, each is followed by its MAC
 * (on a direct connection, only the first of each), and a HELLO by the
 * random part of the connection's key that its sender chose and its
 * view of the connection (spec/design.md "Cluster keys"). */
#define CTL ((uint64_t)1 << 63)
#define CTL_PING (CTL | 1)
#define CTL_PONG (CTL | 2)
#define CTL_HELLO (CTL | 3)       /* keyed: first, each way */
#define CTL_DENY_MAC (CTL | 4)    /* refused: no valid MAC, or no HELLO */
#define CTL_DENY_NOKEY (CTL | 5)  /* refused: a HELLO, and no key here */
#define CTL_DENY_TLS (CTL | 6)    /* refused: no TLS handshake, and TLS
				     here */
#define CTL_SHM (CTL | 7)         /* dialer: a ring to take (SHM_OFFER) */
#define CTL_SHM_OK (CTL | 8)      /* acceptor: taken, its bell (SHM_ANSWER) */
#define CTL_SHM_NO (CTL | 9)      /* acceptor: declined */
#define CTL_SHM_GO (CTL | 10)     /* dialer: frames go on the ring now */

/* Shared memory (net_shm.c; spec/design.md "Shared memory").  A link's
 * state: */
enum { SHM_NONE, SHM_OFFERED, SHM_READY, SHM_ON };
#define SHM_OFFER 40  /* pid, memfd, size, token, here's hash */
#define SHM_ANSWER 24 /* pid, memfd of the bell, its token */

/* An accepted connection: frames are read from it. */
typedef struct RtConn {
	int kind;              /* EV_CONN */
	int fd;
	char addr[64];
	unsigned char hdr[FRAME_HDR];
	int nhdr;              /* bytes of the frame's length read */
	RtBuf *cur;            /* the frame being read */
	size_t want, got, cap; /* its length, bytes read, room in cur */
	unsigned char pong[64]; /* an answer to a ping (or to a shared-memory
				  offer) not written whole: */
	int npong, lpong;      /* its bytes written, of lpong (0: none) */
	/* keyed (RtNet.keyed) */
	int ready;             /* the dialer's HELLO came and was answered */
	int mac;               /* frames and words carry MACs: keyed, until
				  a direct connection's first PONG */
	int direct;            /* both ends saw the same loopback connection */
	RtAuth in, out;        /* MACs of the frames read, and of pongs */
	unsigned char x[RT_NET_WORDX]; /* what follows a word or a frame
				  (a HELLO's nonce and view, a MAC) being
				  read: */
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
	int ltry;              /* the frame's places not tried yet (its
				  head has not come) */
	/* deadlines (net_recv.c's conn_sweep) */
	double born;           /* rt_now() at accept */
	double fstart;         /* rt_now() when the frame's length came */
	int proven;            /* a ping answered or a frame delivered (with
				  a key: whose MAC held) */
	/* shared memory (net_shm.c) */
	struct RtShm *rpend;   /* TCP: the ring its peer offered, mapped,
				  until the peer says GO */
	struct RtConn *rconn;  /* TCP: the ring's reader once it said GO
				  (the shm thread's; marked dead here) */
	struct RtShm *ring;    /* a ring's reader: what it reads (fd -1) */
	_Atomic int rdead;     /* a ring's reader: its TCP connection
				  closed: read what is whole, then go */
	_Atomic int rbad;      /* a ring's reader: it broke (a garbled
				  frame): its TCP connection is closed */
	struct RtConn *next;
} RtConn;

struct sockaddr_storage;

/* net.c: helpers */
void net_nodelay(int fd);                          /* TCP_NODELAY on */
void net_sockaddr_str(char *buf, size_t n,
		      const struct sockaddr_storage *sa); /* "1.2.3.4:5" */
void net_word_put(unsigned char *p, uint64_t v);   /* a frame's length word */
/* the view of keyed connection fd from its dialer's side or its
   acceptor's: zero unless both its ends are loopback addresses of this
   kernel and namespace, plain TCP (spec/design.md "Cluster keys") */
void net_view(const RtNet *n, int fd, int dialer,
	      unsigned char out[RT_VIEW_BYTES]);
int net_direct(const unsigned char mine[RT_VIEW_BYTES],
	       const unsigned char theirs[RT_VIEW_BYTES]);
uint64_t net_word_get(const unsigned char *p);
/* a read or write of fd, through its TLS session when tls is not NULL */
ssize_t net_io_send(void *tls, int fd, const void *buf, size_t n);
ssize_t net_io_read(void *tls, int fd, void *buf, size_t n);
/* net.c: links: the I/O thread's event on link k, and its look at the
 * links to dial, ping and give up on */
void net_link_event(RtNet *n, RtLink *k, uint32_t events);
void net_tend_links(RtNet *n);
/* a write of iov[0..niov) to fd, through its TLS session when tls is not
   NULL (records gathered from the small pieces) */
ssize_t net_io_sendv(void *tls, int fd, struct iovec *iov, int niov);

/* net_link.c: links.  All but net_link_init under k->mu. */
void net_link_init(RtLink *k, const char *url, const char *name);
void net_link_dial(RtNet *n, RtLink *k);    /* a non-blocking connect */
void net_link_broken(RtNet *n, RtLink *k);  /* closed; redialed later */
void net_link_arm(RtNet *n, RtLink *k, int add); /* epoll, one shot */
/* writes k's queue without waiting: 0 empty, 1 socket full, -1 broke */
int net_link_flush(RtNet *n, RtLink *k);
void net_link_release(RtNet *n, RtLink *k); /* writes what is held */
/* what is left of part[npart] past skip bytes, as iov[]: how many */
int net_iov_rest(struct iovec *iov, const struct iovec *part, int npart,
		 size_t skip);
int net_iov_cap(struct iovec *iov, int niov, size_t max); /* to max bytes */

/* net_recv.c: the I/O thread (its epoll loop), and a connection closed */
void *net_io_main(void *arg);
void net_conn_close(RtNet *n, RtConn *c);
/* reads what has come on c and completes each whole frame: 0, or -1 when
   c is over (a ring's reader too, from the shm thread) */
int net_conn_read(RtNet *n, RtConn *c);
/* a control word w and nx bytes after it, on k (nothing pending; none
   after a MACed word): 0, or -1 when the connection broke */
int net_link_word(RtNet *n, RtLink *k, uint64_t w, const void *x, int nx);

/* net_shm.c: shared memory between processes of one host.  The writer's
 * side, under k->mu: */
void net_shm_init(RtNet *n);
void net_shm_offer(RtNet *n, RtLink *k);       /* k just came up */
void net_shm_answer(RtNet *n, RtLink *k, uint64_t w, const unsigned char *x);
void net_shm_go(RtNet *n, RtLink *k);          /* its queue is empty */
void net_shm_drop(RtLink *k);                  /* its connection broke */
/* a write of iov[0..niov) on k, through its ring once on: as
   net_io_sendv (-1 with EAGAIN when there is no room) */
ssize_t net_link_sendv(RtLink *k, struct iovec *iov, int niov);
/* waits at most ms for room on k: in its socket, or its ring */
void net_link_wait(RtLink *k, int ms);
/* The reader's side, on the I/O thread: the offer in c->x (0, or -1 to
 * close c), GO, and c closing. */
int net_conn_shm(RtNet *n, RtConn *c);
int net_conn_shm_go(RtNet *n, RtConn *c);
void net_conn_shm_close(RtNet *n, RtConn *c);
/* a read of c's ring: as a socket's (0 once it is dead and empty) */
ssize_t net_shm_read(RtConn *c, void *dst, size_t len);
void net_shm_close(RtNet *n); /* the shm thread stopped, rings freed */

#endif /* TFG_RUNTIME_NET_INT_H */
