/*
 * runtime/net.h: the transport layer of the runtime (spec/design.md
 * "Runtime layers", "Transport").
 *
 * Moves whole messages (bytes) between processes over nng and knows
 * nothing of what they say: no header, no plan, no step.  Each process
 * listens on one pull0 socket and sends through one push0 socket per
 * peer it talks to (a task of the cluster, or a reply address such as
 * the controller's), dialed non-blocking so that nng redials until the
 * peer is up.  Above it is the protocol (runtime/proto.h); it calls
 * nothing above it.  News for the layer above comes back only as
 *
 *   - the completion of the receive the protocol posted (RtNetRecv): on a
 *     transport thread, once per message, with no lock of this layer
 *     held, in the order messages arrived (one completion at a time);
 *     this is nng's aio discipline, and the completion must not call
 *     rt_net_close;
 *   - states the caller reads: a peer up or gone (rt_net_peer_up,
 *     rt_net_peer_gone), set by nng's pipe events.
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

#include <nng/nng.h>

#include "runtime/tfg.h"

#define RT_URL_MAX 256
#define RT_NET_SLICE 0.05 /* seconds: how often a blocked send looks up */
#define RT_NET_REPLIES 8  /* reply sockets kept, the oldest recycled */

/* A push socket to one peer. */
typedef struct RtLink {
	nng_socket sock;
	int open;
	_Atomic int state;     /* 0 never connected, 1 up, 2 gone (pipe
				  events, on an nng thread) */
	char url[RT_URL_MAX];
	const char *name;      /* for messages: "/job:local/task:1", or
				  the URL (borrowed) */
	int busy;              /* reply links: sends in progress (RtNet.mu) */
} RtLink;

/* The receive the layer above posts: done() is called for each message
 * received, taking it (nng_msg_free is the callee's). */
typedef struct RtNetRecv {
	void (*done)(struct RtNetRecv *r, nng_msg *m);
} RtNetRecv;

typedef struct RtNet {
	const char *name;      /* this process, for messages (borrowed) */
	nng_socket pull;       /* the one pull0 socket */
	int pull_open;
	nng_aio *aio;          /* the posted receive */
	RtNetRecv *recv;
	_Atomic int closing;
	char url[RT_URL_MAX];  /* where it listens: "tcp://host:port" */
	int npeer;
	RtLink *peers;         /* [npeer]; open only where dialed */
	pthread_mutex_t mu;    /* replies: sends from several threads */
	RtLink *replies[RT_NET_REPLIES];
	int nreply;
} RtNet;

/* Asked between the slices of a blocked send: non-zero (with *e set) to
 * give up. */
typedef int (*RtNetStopFn)(void *arg, TfgError *e);

/* "<context>: <nng's text>" into e, with the matching tfg_status. */
tfg_status rt_nng_error(TfgError *e, int rv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* npeer peers, none dialed yet. */
tfg_status rt_net_init(RtNet *n, const char *name, int npeer);
/* Listens on url, taking messages of up to maxmsg bytes (larger ones are
 * dropped by nng).  Port 0 picks one: n->url names it. */
tfg_status rt_net_listen(RtNet *n, const char *url, size_t maxmsg,
			 TfgError *e);
/* Dials peer i at url (non-blocking: nng redials until it is up). */
tfg_status rt_net_dial(RtNet *n, int peer, const char *url,
		       const char *name, TfgError *e);
/* Starts receiving: r->done gets every message from now on. */
tfg_status rt_net_recv_start(RtNet *n, RtNetRecv *r, TfgError *e);
/* Sends m to peer i, or to a reply URL (dialed on first use), waiting at
 * most until deadline (rt_now() scale); stop (may be NULL) is asked
 * between slices.  Takes m in every case. */
tfg_status rt_net_send(RtNet *n, int peer, nng_msg *m, double deadline,
		       RtNetStopFn stop, void *arg, TfgError *e);
tfg_status rt_net_send_url(RtNet *n, const char *url, nng_msg *m,
			   double deadline, RtNetStopFn stop, void *arg,
			   TfgError *e);
int rt_net_peer_up(RtNet *n, int peer);   /* connected now */
int rt_net_peer_gone(RtNet *n, int peer); /* was up, went away */
int rt_net_url_gone(RtNet *n, const char *url);
/* "127.0.0.1:40123": the far end of the pipe m came on. */
void rt_net_addr(char *buf, size_t len, nng_msg *m);
/* Stops receiving (waits for a completion in progress) and closes every
 * socket; what is queued to send is dropped. */
void rt_net_close(RtNet *n);

#endif /* TFG_RUNTIME_NET_H */
