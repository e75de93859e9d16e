/*
 * runtime/net.h: the transport layer of the runtime (spec/design.md
 * "Runtime layers", "Transport").
 *
 * Moves whole messages (bytes) between processes over TCP (or, between
 * processes of one host, through shared memory: net_shm.c) and knows
 * nothing of what they say: no header, no plan, no step.  Each process
 * listens on one port, and sends through one connection per peer it
 * talks to (a task of the cluster, or a reply address such as the
 * controller's), dialed in the background and dialed again whenever it
 * breaks; a message sent while the peer is not up waits in a short queue
 * for it.  Above it is the protocol (runtime/proto.h); it calls nothing
 * above it.  News for the layer above comes back only as
 *
 *   - the completion of the receive the protocol posted (RtNetRecv): on
 *     the transport's own I/O thread (or, for a ring of shared memory,
 *     its shm thread: runtime/net_shm.c), once per message, with no lock
 *     of this layer held, in the order the messages of one link came;
 *     the completion must not send, nor call rt_net_close;
 *   - states the caller reads: a peer up or gone (rt_net_peer_up,
 *     rt_net_peer_gone, rt_net_peer_why, rt_net_peer_down).
 *
 * A peer is gone when its connection hangs up, or when it stops
 * answering: the I/O thread pings every link that is up each
 * RT_NET_BEAT seconds, the peer's I/O thread answers on the same
 * connection, and a link that hears nothing (no answer, and no progress
 * of a frame being written to it) for RtNet.hb_dead seconds is broken.
 * The answers come from the peer's I/O thread, not from what it
 * computes, so a busy peer is not a dead one.
 *
 * A send waits in slices of RT_NET_SLICE seconds, and between slices asks
 * the caller's RtNetStopFn whether to go on (a step that was cancelled, a
 * stop requested), so that no send outlives what it was for.
 */
#ifndef TFG_RUNTIME_NET_H
#define TFG_RUNTIME_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "runtime/auth.h"
#include "runtime/tfg.h"

#define RT_URL_MAX 256
#define RT_NET_SLICE 0.05 /* seconds: how often a blocked send looks up */
#define RT_NET_REPLIES 8  /* reply links kept idle; past them, the
				     oldest idle one is recycled */
#define RT_NET_REPLY_IDLE 5.0 /* seconds without a send that make a
				     reply link idle */
#define RT_NET_LOGS 64    /* (host, kind) refusals remembered */
#define RT_NET_QUEUE 128  /* messages a link keeps while its peer is down */
#define RT_NET_BEAT 0.25  /* seconds between the pings of a link */
#define RT_NET_DEAD 1.5   /* default RtNet.hb_dead */
#define RT_NET_WORDX 40   /* the most bytes after a control word (a
			     shared-memory offer, net_shm.c) */
#define RT_SHM_AFTER 32   /* frames a connection carries before it
			     offers its peer shared memory */
#define RT_SHM_MAX 64     /* rings a process maps at most, its own and
			     those it reads */

/* Why a peer is gone (rt_net_peer_why). */
enum { RT_GONE_HANGUP = 1, RT_GONE_SILENT };

/* Why a peer refused this process's connection (rt_net_peer_refused). */
enum { RT_REFUSED_MAC = 1, /* its cluster key is another, or it has one
			      and this process none */
       RT_REFUSED_NOKEY,   /* this process has a key, it has none */
       RT_REFUSED_TLS      /* the TLS handshake failed (RtLink.tls_why) */
};

/* A message: len bytes at data, then ntail bytes at tail.  Received
 * ones name the address of the connection they came on. */
typedef struct RtBuf {
	size_t len;
	size_t cap;            /* bytes allocated at data (>= len) */
	unsigned char *data;   /* len bytes, in the allocation that the
				  struct starts (net.c BUF_OFF) */
	const void *tail;      /* sent: borrowed bytes that follow data,
				  read only during rt_net_send (a tensor
				  sent from where its part left it, with no
				  copy); NULL for none */
	size_t ntail;
	char from[64];         /* received: "127.0.0.1:40123" */
	unsigned char *landed; /* received into an RtNetLand: its bytes from
				  landoff on are at landed (borrowed), not
				  at data; NULL: all at data */
	size_t landoff;
} RtBuf;

/* A connection to one peer: the way this process sends to it. */
typedef struct RtLink {
	int kind;              /* what epoll's data points at (net.c) */
	pthread_mutex_t mu;    /* one sender (or the I/O thread) at a time */
	int fd;                /* -1: not connected */
	int connecting;        /* 1: fd is a connect in progress; 2: it is
				  connected, and waits for the peer to
				  answer its first ping */
	_Atomic int state;     /* 0 never connected, 1 up, 2 gone */
	_Atomic int open;      /* dialed (a peer of the cluster or a reply) */
	int known;             /* its address is set: dialed at its first
				  send or wait (rt_net_peer_open) */
	char url[RT_URL_MAX];
	char host[RT_URL_MAX], port[16];
	const char *name;      /* for messages: "/job:local/task:1", or the
				  URL (borrowed) */
	double next_dial;      /* rt_now() when to try connecting again */
	double backoff;        /* the pause after a failed dial: grows */
	RtBuf *queue[RT_NET_QUEUE]; /* waiting for the connection, FIFO */
	int nq;
	size_t qoff;           /* bytes of queue[0]'s frame already written */
	_Atomic int held;      /* the queue's frames are held back by a
				  sender while the link is up (rt_net_hold):
				  no EPOLLOUT for them */
	double held_since;     /* rt_now() when the first was held */
	int busy;              /* reply links: sends in progress (under
				  RtNet.mu) */
	double used;           /* reply links: rt_now() of the last send */
	int why;               /* RT_GONE_*: how it went, once gone */
	_Atomic int ups;       /* connections that came up, all told */
	_Atomic double alive;  /* rt_now() of its last sign of life: the
				  connect, an answer to a ping, a write of a
				  frame that made progress */
	double pinged;         /* rt_now() of the last ping */
	double down_since;     /* rt_now() since when it is not up */
	unsigned char cbuf[8 + RT_NET_WORDX]; /* a control word (and its
				  MAC, or what follows it) not yet written
				  whole: */
	int ncbuf, lcbuf;      /* its bytes written, of lcbuf (0: none) */
	unsigned char rbuf[8 + RT_HELLO_BYTES]; /* a word (and what follows
				  it) being read back: */
	int nrbuf;             /* its bytes read */
	/* keyed (RtNet.keyed): the connection's keys */
	int ready;             /* both ends' HELLO exchanged */
	int mac;               /* its frames and words carry MACs: keyed,
				  until a direct connection's first PONG */
	int direct;            /* both ends saw the same loopback connection
				  (spec/design.md "Cluster keys") */
	RtAuth out, in;        /* MACs of what it sends, and reads back */
	unsigned char hello[RT_HELLO_BYTES]; /* this end's part, its view */
	unsigned char qtag[RT_NET_QUEUE][RT_TAG_BYTES]; /* the MACs of the
				  queue's first ntagged frames */
	int ntagged;
	int refused;           /* RT_REFUSED_*: the peer's last word */
	int dial_err;          /* errno of the last connect that failed
				  (ECONNREFUSED: nothing listens there;
				  -1: the host did not resolve), 0 once one
				  came up (rt_net_peer_dial_err) */
	/* TLS (RtNet.tls): connecting is 3 during the handshake */
	void *tls;             /* the session of this connection */
	int tls_want;          /* what the handshake waits for: 1 read, 2
				  write */
	char tls_why[200];     /* why the last handshake failed */
	/* shared memory (net_shm.c; spec/design.md "Shared memory") */
	struct RtShm *shm;     /* the ring offered or used, or NULL */
	int shm_state;         /* SHM_* (net_int.h) */
	int shm_tried;         /* this connection offered one */
	int nframes;           /* frames written on this connection */
} RtLink;

/* The receive the layer above posts: done() is called for each message
 * received, taking it (rt_buf_free is the callee's). */
typedef struct RtNetRecv {
	void (*done)(struct RtNetRecv *r, RtBuf *b);
} RtNetRecv;

struct RtConn;

/* A place the layer above posts for the bytes of one message to come
 * (rt_net_land): a frame of len bytes whose first nmatch bytes are match
 * has its bytes from off on read straight into dst as they come (what
 * came before the place was posted is copied there first), instead of
 * into its buffer: the receiver's copy of a large tensor is saved.  Its
 * completion is the usual one, with RtBuf.landed = dst, and comes only
 * once its MAC (keyed) was verified.  The caller owns it (on its
 * stack); the fields from conn on are the transport's. */
#define RT_LAND_MATCH 32
#define RT_LAND_HEAD 256 /* off is at most this */
typedef struct RtNetLand {
	unsigned char match[RT_LAND_MATCH];
	size_t nmatch;         /* <= RT_LAND_MATCH, <= off <= RT_LAND_HEAD */
	size_t off, len;
	unsigned char *dst;    /* len - off bytes */
	struct RtConn *conn;   /* the connection reading into it, or NULL */
	int state;             /* 0 posted, 1 its message being delivered,
				  2 delivered (or taken back) */
	struct RtNetLand *next;
} RtNetLand;

typedef struct RtNet {
	const char *name;      /* this process, for messages (borrowed) */
	int lfd;               /* the listening socket; -1 none */
	char url[RT_URL_MAX];  /* where it listens: "tcp://host:port" */
	size_t maxmsg;         /* larger messages close their connection */
	int ep;                /* epoll of the I/O thread */
	int wake;              /* eventfd that wakes it */
	pthread_t io;
	int io_started;
	_Atomic int closing;
	RtNetRecv *recv;
	struct RtConn *conns;  /* accepted connections (I/O thread only) */
	int npeer;
	RtLink *peers;         /* [npeer]; open only where dialed */
	pthread_mutex_t mu;    /* replies */
	RtLink **replies;      /* [nreply], oldest first: as many as
				  controllers talk at once */
	int nreply, capreply;
	RtLink **retired;      /* recycled reply links still in epoll or
				  in use, freed at close */
	int nretired, capretired;
	double hb_dead;        /* seconds of silence that break a link that
				  is up (0: never) */
	double tended;         /* when the I/O thread last tended the links
				  (net_tend_links) */
	double up_wait;        /* seconds a send waits for a peer that is
				  not up to come (0: its deadline) */
	int keyed;             /* a cluster key: every connection proves
				  it; frames carry a MAC unless direct */
	int mac_all;           /* TFG_NET_MAC=all: no connection is direct
				  (what a cluster across hosts pays) */
	char here[96];         /* this kernel and network namespace
				  (net_view); "": none is direct */
	RtTls *tls;            /* TLS on every connection (owned) */
	unsigned char key[RT_KEY_BYTES]; /* the cluster key, hashed */
	/* refusals said (net_recv.c's conn_log): the first of each kind
	   from each host, then a count a minute */
	struct RtNetLog {
		char host[64];
		int kind;          /* LOG_* (net_recv.c) */
		unsigned more;     /* since it was last said */
	} logs[RT_NET_LOGS];
	int nlogs;
	unsigned lognext;      /* the entry taken next once they are full */
	double log_said;       /* rt_now() when the counts were last said */
	double accept_off;     /* rt_now() until which accepting pauses (no
				  descriptors left); 0: accepting */
	double swept;          /* rt_now() of the last look at the
				  connections' deadlines */
	pthread_mutex_t lmu;   /* the places posted (held by the I/O thread
				  while it reads into one) */
	pthread_cond_t lcv;    /* a place's message was delivered */
	RtNetLand *lands;
	_Atomic unsigned lgen; /* changes with each place posted */
	/* shared memory with tasks of this host (net_shm.c) */
	int shm;               /* offered and taken (default; --no-shm: 0) */
	_Atomic int nshm;      /* rings mapped now (RT_SHM_MAX) */
	uint64_t here_id;      /* a hash of here: both ends must agree */
	pthread_mutex_t smu;   /* the bell's making, snew */
	struct RtShmBell *bell; /* this process's doorbell, made at the
				  first ring it takes; NULL none */
	int bellfd;            /* its memfd, which writers open */
	unsigned char bell_token[16];
	struct RtConn *snew;   /* rings to read, not yet the thread's */
	struct RtConn *rings;  /* the rings the shm thread reads (its own;
				  net_shm_close frees them after it) */
	pthread_t shm_io;      /* the thread that reads the rings */
	int shm_started;
} RtNet;

/* Asked between the slices of a blocked send: non-zero (with *e set) to
 * give up. */
typedef int (*RtNetStopFn)(void *arg, TfgError *e);

/* A message of len bytes (uninitialised), or NULL.  Large ones (from
 * RT_BUF_POOL_MIN) come from, and go back to, a small pool of buffers
 * whose pages are already mapped: a 64 MiB tensor a step costs no page
 * faults after the first. */
#define RT_BUF_POOL_MIN ((size_t)1 << 20)
RtBuf *rt_buf_new(size_t len);
void rt_buf_free(RtBuf *b); /* accepts NULL */

/* npeer peers, none dialed yet; starts the I/O thread. */
tfg_status rt_net_init(RtNet *n, const char *name, int npeer);
/* Listens on url ("tcp://host:port" or "host:port"), taking messages of
 * up to maxmsg bytes.  Port 0 picks one: n->url names it. */
tfg_status rt_net_listen(RtNet *n, const char *url, size_t maxmsg,
			 TfgError *e);
/* Peer i is at url, named name in messages: rt_net_peer_open dials it,
 * and so does its first send (spec/design.md "Transport": only the
 * peers a task exchanges messages with are dialed). */
tfg_status rt_net_peer_set(RtNet *n, int peer, const char *url,
			   const char *name, TfgError *e);
/* Dials peer i (set), in the background, and again whenever the
 * connection breaks; nothing if it is dialed already or not set. */
void rt_net_peer_open(RtNet *n, int peer);
/* rt_net_peer_set and rt_net_peer_open. */
tfg_status rt_net_dial(RtNet *n, int peer, const char *url,
		       const char *name, TfgError *e);
/* Every frame to and from this process carries a MAC under a key of its
 * connection, derived from cluster key `key` (spec/design.md "Cluster
 * keys"); before rt_net_listen and rt_net_dial. */
void rt_net_key(RtNet *n, const unsigned char key[RT_KEY_BYTES]);
/* Every connection of this process runs TLS with t (taken), instead; before
 * rt_net_listen and rt_net_dial. */
void rt_net_tls(RtNet *n, RtTls *t);
/* Why peer i's last TLS handshake failed ("" if none did). */
const char *rt_net_peer_tls_why(RtNet *n, int peer);
/* Starts receiving: r->done gets every message from now on. */
tfg_status rt_net_recv_start(RtNet *n, RtNetRecv *r, TfgError *e);
/* Posts l (filled in up to dst) for the message it matches; frames of
 * at least RT_LAND_MIN bytes are matched.  Until rt_net_unland, dst may
 * be written (with garbage too, when a frame that matched fails its
 * MAC: the caller acts on dst only once a completion said it landed). */
#define RT_LAND_MIN ((size_t)256 << 10)
void rt_net_land(RtNet *n, RtNetLand *l);
/* Takes l back: nothing writes into dst from now on, and a completion
 * of its message (RtBuf.landed == dst) has returned, if there was one.
 * A frame read into it in part is read on and dropped. */
void rt_net_unland(RtNet *n, RtNetLand *l);
/* Sends b to peer i, or to a reply URL (dialed on first use), waiting at
 * most until deadline (rt_now() scale); stop (may be NULL) is asked
 * between slices.  While the peer is not up b waits in the link's queue
 * (the send returns at once, b's tail copied), unless the queue is full.
 * Takes b in every case. */
tfg_status rt_net_send(RtNet *n, int peer, RtBuf *b, double deadline,
		       RtNetStopFn stop, void *arg, TfgError *e);
tfg_status rt_net_send_url(RtNet *n, const char *url, RtBuf *b,
			   double deadline, RtNetStopFn stop, void *arg,
			   TfgError *e);
/* Sends b to peer i as rt_net_send does, but a small one (b with its
 * tail at most RT_NET_HOLD_MAX bytes, to a peer that is up) is held
 * back, its tail copied, to leave with whatever this thread sends next
 * on that link, or at the latest at rt_net_flush_held: a step's sends
 * go out together, in one write per link, when the step next waits,
 * ends, or starts long work (spec/design.md "Transport", *Held
 * sends*).  Takes b in every case. */
#define RT_NET_HOLD_MAX ((size_t)64 << 10)
#define RT_NET_HOLD_S 0.002 /* the I/O thread writes what was held longer
			       (a part busy in work of its own), at its
			       next tick */
tfg_status rt_net_hold(RtNet *n, int peer, RtBuf *b, double deadline,
		       RtNetStopFn stop, void *arg, TfgError *e);
/* Writes what this thread holds back, on every link it holds some on,
 * without waiting: what the socket has no room for the I/O thread
 * writes when it has.  Before this thread waits for anything, and
 * before the RtNet goes. */
void rt_net_flush_held(void);
/* Whether this thread holds sends back now. */
int rt_net_holding(void);
int rt_net_peer_up(RtNet *n, int peer);   /* connected now */
int rt_net_peer_dialed(RtNet *n, int peer); /* rt_net_peer_open'ed */
int rt_net_peer_shm(RtNet *n, int peer);  /* its frames go on a ring of
					     shared memory now */
int rt_net_peer_ups(RtNet *n, int peer);  /* connections it made so far */
int rt_net_peer_gone(RtNet *n, int peer); /* was up, went away */
int rt_net_url_gone(RtNet *n, const char *url);
/* How peer i went (RT_GONE_*), 0 if it is not gone. */
int rt_net_peer_why(RtNet *n, int peer);
/* Whether peer i refused this process's last connection (RT_REFUSED_*),
 * 0 if not. */
int rt_net_peer_refused(RtNet *n, int peer);
/* Why the last connect to peer i failed (RtLink.dial_err): an errno,
 * -1 for a host that did not resolve, 0 when none failed since it was
 * last up. */
int rt_net_peer_dial_err(RtNet *n, int peer);
/* Seconds since peer i was last up (or was dialed, if it never came);
 * 0 while it is up. */
double rt_net_peer_down(RtNet *n, int peer);
/* Stops the I/O thread and closes every socket; what is queued to send
 * is dropped. */
void rt_net_close(RtNet *n);

#endif /* TFG_RUNTIME_NET_H */
