/*
 * runtime/proto.h: the protocol layer of the runtime (spec/design.md
 * "Runtime layers"): what messages mean, between the transport below
 * (runtime/net.h) and the roles above (runtime/role.h).
 *
 *   wire.c        the header: packing, and validation against a plan
 *   proto.c       the process (RtProc): receiving (validation, the
 *                 senders' incarnations, filing), the queue of records
 *                 for the roles, building and sending messages
 *   rendezvous.c  steps (RtStep): ids, acceptance, staleness, the table of
 *                 tensors and replies, waits, cancellation
 *
 * The protocol calls only the transport.  What the roles must hear of
 * travels up as records in the process's queue (rt_proc_next): control
 * messages (START, SPECIALISE, RELEASE, RUN_SESSION, SHUTDOWN, PING; for
 * the controller every message) and the RT_EV_RESTARTED note.  What a
 * step waits for (its tensors, DONE, ERROR, ABORT) is filed in the table
 * and wakes the step's own thread.
 *
 * Threads: the transport's completion files a message under RtProc.mu
 * and signals the condition variable of the step it is for (RtStep.cv), or
 * RtProc.qcv for a record; any number of threads may wait in steps at
 * once.  No lock of this layer is held while it sends, nor while the
 * roles run (generated parts, compiles).
 */
#ifndef TFG_RUNTIME_PROTO_H
#define TFG_RUNTIME_PROTO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "runtime/net.h"
#include "runtime/part.h"
#include "runtime/rt_int.h"

/* Message types: the order of design.md's table, numbered from 1 (0 is
 * never valid, so a zeroed header fails validation). */
enum {
	RT_MSG_PING = 1, /* controller -> task; body: reply URL */
	RT_MSG_PONG,     /* task -> controller */
	RT_MSG_START,    /* client -> task; key: sig; body: the step's feeds
			    for that task (rt_start_bytes) */
	RT_MSG_TENSOR,   /* key: edge; body: the tensor */
	RT_MSG_ERROR,    /* task -> client; key: RT_ERROR_*; body: message */
	RT_MSG_DONE,     /* task -> client; key: sig */
	RT_MSG_RUN_SESSION, /* controller -> task; key: session; body: URL */
	RT_MSG_OUTPUT,   /* client -> controller; key: session; body: text
			    for stdout */
	RT_MSG_SESSION_END, /* key: session; body: error text, none if it
			       ended well */
	RT_MSG_SHUTDOWN, /* controller -> task; body: reply URL; key:
			    RT_SHUTDOWN_QUIET = no BYE wanted */
	RT_MSG_BYE,      /* task -> controller */
	RT_MSG_SPECIALISE, /* client -> task, generic plans only; key: sig;
			      body: the feeds' shapes (spec.c); answered
			      with DONE (body: the plan hash) or ERROR */
	RT_MSG_RELEASE,  /* client -> task, generic plans only; key: sig;
			    body: the plan hash of a specialisation the
			    client evicted (spec.c); not answered */
	RT_MSG_ABORT,    /* client -> task; step: a step of the client that
			    failed; key: 0; body: why (1..RT_ABORT_MAX
			    bytes of text); not answered */
	RT_MSG_TRACE,    /* controller -> task; body: reply URL */
	RT_MSG_TRACE_DATA, /* task -> controller; key: 1 if the task
			      records (tfgc server --trace), else 0; body:
			      "tfg-clock R S\n" (its clock in ns when the
			      TRACE came and when this left), then its
			      trace events as JSON text (runtime/trace.h),
			      in its clock */
	RT_MSG_PROGRESS, /* client -> controller; key: session; body: a
			    progress() record, one line of text of at most
			    RT_PROGRESS_MAX bytes (runtime/progress.c) */
	RT_MSG_STATS,    /* controller -> task; body: reply URL */
	RT_MSG_STATS_DATA, /* task -> controller; body: "dialed N", then a
			      line per task it exchanged messages with,
			      "T om ob im ib":
			      messages and bytes sent to task T, and
			      received from it (rt_stats_text) */
	RT_MSG_LEAVE,    /* client -> task; key: a session of the client,
			    which ended; no body: the client leaves the
			    task's sync groups until its next gradient
			    (runtime/optim.c) */
	RT_MSG__N
};

/* A record of the queue that no message carries: task h.src restarted,
 * its new incarnation is h.epoch (rt_proc_next). */
#define RT_EV_RESTARTED 0x100
/* A record of a PING that a controller of another program sent (a run
 * of another file, --param, --fetch, --feed or --out): h.prog is its
 * plan, the body its reply address; answered with a refusing PONG
 * (rt_refuse_ping), so that the run fails at once, saying why, rather
 * than at its start-up deadline. */
#define RT_EV_FOREIGN_PING 0x101
/* PONG's key: 0 up, RT_PONG_REFUSED "not your program" (body: why). */
#define RT_PONG_REFUSED 1

/* ERROR's key: why the step failed. */
enum {
	RT_ERROR_FAILED = 0, /* the part failed (or anything else) */
	RT_ERROR_NO_PLAN,    /* the task does not have the step's plan: a
				specialisation it never had or dropped
				(restarted?); the client announces it again on
				its next run (spec.c) */
	RT_ERROR__N
};

/* SHUTDOWN from the controller that started the task: it reads the exit
 * status, so the task leaves without a BYE (and without lingering). */
#define RT_SHUTDOWN_QUIET 1

#define RT_WIRE_MAGIC 0x31474654u /* "TFG1" */
#define RT_WIRE_VERSION 9 /* 2: the last header field is the epoch; 3: a
			     step id carries its client's tag; 4: OUTPUT and
			     SESSION_END name their session; 5: TRACE; 6: a
			     large feed follows its START (rt_feed_apart);
			     7: PROGRESS; 8: prog xor the run, a
			     PING names its run and pid; 9: STATS,
			     LEAVE */
#define RT_HDR_SIZE 112
#define RT_SRC_CONTROLLER 0xffff
#define RT_MAX_BODY ((uint64_t)1 << 30) /* largest body: 1 GiB */
#define RT_ABORT_MAX 1024 /* longest reason an ABORT carries */
#define RT_PROGRESS_MAX 1024 /* longest body a PROGRESS carries */

/* A step id: client task << 48 | tag << 32 | counter.  The tag tells the
 * client's incarnations apart (rt_step_tag of its epoch), so that no step
 * of a restarted client's earlier process has the id of one of the new
 * process's; the counter counts the process's steps from 1 (design.md
 * "Restarts").  Users see only the counter: "step 3". */
#define RT_STEP(client, tag, n)                                          \
	((uint64_t)(client) << 48 | (uint64_t)(tag) << 32 |              \
	 ((uint64_t)(n) & RT_STEP_MAX))
#define RT_STEP_MAX 0xffffffffull /* the last counter a process may use */
#define RT_STEP_CLIENT(s) ((uint64_t)(s) >> 48)
#define RT_STEP_TAG(s) ((uint32_t)((uint64_t)(s) >> 32 & 0xffff))
#define RT_STEP_NO(s) ((unsigned long long)((uint64_t)(s) & RT_STEP_MAX))

/* A decoded header (wire.c packs and unpacks it byte by byte). */
typedef struct RtHdr {
	uint32_t magic;
	uint16_t version, type;
	uint64_t prog, step;
	uint32_t key;
	uint16_t src;
	uint8_t dtype, rank;
	uint64_t dims[TFG_MAX_RANK];
	uint64_t nbytes;
	uint64_t epoch;      /* the sender's incarnation (RtProc.epoch),
				never 0 (spec/design.md "Restarts") */
} RtHdr;

/* ------------------------------------------------------------ wire.c */

/* The run this process belongs to (TfgOptions.run; rt_proc_init sets
 * it): a message's prog on the wire is the program's hash xor it, which
 * rt_hdr_encode and rt_hdr_decode apply (spec/design.md "Runs"). */
extern uint64_t rt_run;
void rt_put_le(unsigned char *p, uint64_t v, int n); /* n bytes */
uint64_t rt_get_le(const unsigned char *p, int n);
const char *rt_msg_name(int type); /* "TENSOR", "?" if unknown */
void rt_hdr_encode(unsigned char *out, const RtHdr *h); /* 112 bytes */
void rt_hdr_decode(RtHdr *h, const unsigned char *in);  /* no checks */
/* Fills *h for a message from this process: magic, version, prog, and
 * epoch, the sending process's incarnation (RtProc.epoch). */
void rt_hdr_init(RtHdr *h, const TfgPlan *plan, int type, uint64_t step,
		 uint32_t key, uint16_t src, uint64_t nbytes, uint64_t epoch);
/* Decodes and validates a received message of len bytes for task `self`
 * (-1: the controller).  addr is the transport's peer address (may be
 * NULL); errors (TFG_EPROTO, TFG_ETOOBIG) name the sending task when the
 * header says which, else addr. */
tfg_status rt_wire_check(RtHdr *h, const TfgPlan *plan, int self,
			 const void *buf, size_t len, const char *addr,
			 TfgError *e);
/* For a generic plan: rt_wire_check without the prog check, for a START
 * whose prog names no plan this task has.  TFG_OK when it is otherwise
 * well-formed (its body's size goes unchecked: only the plan this task
 * lacks knows it), so that it gets an RT_ERROR_NO_PLAN answer instead of
 * nothing; any other message gets rt_wire_check's verdict. */
tfg_status rt_wire_check_lost(RtHdr *h, const TfgPlan *plan, int self,
			      const void *buf, size_t len, const char *addr,
			      TfgError *e);
/* Bytes of an edge's tensor, RtEdge.nbytes (validated plans only). */
size_t rt_edge_nbytes(const RtEdge *edge);
/* The bytes of a row (axis 0) of the edge's value; 0 for a scalar or
 * an empty one. */
size_t rt_edge_rowbytes(const RtEdge *edge);
/* Whether edge->nbytes agrees with its dtype and shape: numel * size, or
 * for strings at least the records; and at most RT_MAX_BODY. */
int rt_edge_valid(const RtEdge *edge);
/* Body of a START of sig for task: the feeds of sig whose edge leads to
 * task, concatenated in sig->feeds order (so a step costs one message to
 * each task, feeds included), but those that travel apart. */
size_t rt_start_bytes(const TfgPlan *plan, int sig, int task);
/* Whether feed edge e travels apart from its START, as a TENSOR behind
 * it: one large enough (RT_FEED_APART) that reading it straight into the
 * part's buffer (spec/design.md "Transport") saves more than the extra
 * wake-up of a second message costs, strings excepted (their records are
 * checked in the message).  At 1 MiB apart a plain transfer lost
 * against raw TCP, at 16 MiB it gained (bench/README.md). */
#define RT_FEED_APART ((size_t)4 << 20)
int rt_feed_apart(const RtEdge *e);

/* ----------------------------------------------------------- proto.c */

/* A received or locally handed-off message, with its decoded header. */
typedef struct RtMsg {
	RtHdr h;
	int lost;            /* a START whose plan is not here
				(rt_wire_check_lost let it in) */
	RtBuf *m;            /* owned; NULL for a local or a record */
	const unsigned char *body; /* h.nbytes bytes */
} RtMsg;

/* What this process knows of task i as a sender. */
typedef struct RtPeer {
	uint64_t epoch;    /* the largest incarnation heard from it; 0: none */
	uint16_t tag;      /* rt_step_tag(epoch): its steps' tag, once known */
	uint64_t stale;    /* the older incarnation last reported as dropped */
	uint64_t future;   /* the future one last reported as dropped */
	uint64_t started;  /* the last of its steps accepted here (START or
			      SPECIALISE), of its incarnation now: later
			      messages for an earlier step that is not
			      running here are stale (rt_step_stale) */
	int ordered;       /* one of its SPECIALISE or RELEASE records is
			      being run: the next waits (rt_proc_done) */
	/* messages and bytes (header included) sent to it (rt_send,
	   rt_send_held) and received from it (rt_proc_take), for --stats */
	_Atomic uint64_t out_msgs, out_bytes, in_msgs, in_bytes;
} RtPeer;

typedef struct RtStep RtStep;

/* Received TENSOR/DONE/ERROR/ABORT messages, in no order: a step's
 * inbox, or the process's messages of steps not running yet. */
typedef struct RtBox {
	RtMsg *v;
	int n, cap;
} RtBox;

/* The process: one per server, or controller.  Everything here outlives
 * steps; what belongs to one step is its RtStep. */
typedef struct RtProc {
	const TfgPlan *plan;   /* the process's own plan (borrowed) */
	int task;              /* own task index; -1 for the controller */
	uint16_t src;          /* task, or RT_SRC_CONTROLLER */
	const char *name;      /* "/job:local/task:0" or "controller" */
	TfgOptions opt;        /* defaults filled in */
	uint64_t epoch;        /* this process's incarnation, in every
				  message it sends (rt_proc_init) */
	uint16_t tag;          /* rt_step_tag(epoch): in its step ids */
	RtNet net;
	RtNetRecv recv;        /* the receive posted to net */
	pthread_mutex_t mu;    /* everything below */
	pthread_cond_t qcv;    /* a record was queued */
	pthread_cond_t idlecv; /* the last step running here ended */
	RtPeer *peers;         /* [plan->ntask] */
	RtBox early;           /* received TENSOR/DONE/ERROR/ABORT of steps
				  not running here (yet): a step takes its
				  own into its inbox when it begins */
	RtMsg *queue;          /* records for the roles, FIFO */
	int nqueue, capqueue;
	int qwake;             /* records were queued under mu by a
				  receive: qcv is signalled once mu is let
				  go (rt_proc_take, rt_dispatch) */
	RtStep *steps;         /* the steps running in this process */
	uint64_t counter;      /* steps started as client */
	int keyed;             /* its messages carry MACs (--cluster-key) */
	const TfgPlan **plans; /* other plans messages may name (a generic
				  plan's specialisations), rt_proc_plan_add */
	int nplan, capplan;
	pthread_mutex_t order; /* held from rt_step_begin to rt_step_sent:
				  a client's STARTs leave in id order */
} RtProc;

/* Set by the SIGINT/SIGTERM handlers of servers: waits end early. */
extern volatile int rt_stop_requested;
/* SIGINT and SIGTERM to handler, SIGPIPE ignored (a peer that went away
 * is an error of the write, not the end of the process). */
void rt_signals(void (*handler)(int));

/* Waits on cv (with mu held) until signalled, until `until` (rt_now()
 * scale), or for one RT_NET_SLICE at most, whichever comes first. */
void rt_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double until);

/* Fills in defaults; no sockets yet.  TFG_EINVAL for a plan whose edges
 * disagree with their byte counts. */
tfg_status rt_proc_init(RtProc *p, const TfgPlan *plan, int task,
			const TfgOptions *opt);
/* Stops receiving, closes, frees every entry and record left. */
void rt_proc_free(RtProc *p);
/* Listens on url, dials every other task of the plan, and starts
 * receiving. */
/* talks[t] = 1 for each task t that task `task` of plan exchanges
 * messages with (talks[] of plan->ntask, zeroed by the caller): the
 * clients of the signatures it takes part in, the tasks of those it
 * drives, and both ends of its edges.  rt_proc_open dials these; any
 * other is dialed at its first send or wait (spec/design.md
 * "Transport"). */
void rt_plan_peers(const TfgPlan *plan, int task, char *talks);
tfg_status rt_proc_open(RtProc *p, const char *url, TfgError *e);
/* The address p serves on (its listener's URL, the reply address its
 * PINGs give). */
const char *rt_proc_url(const RtProc *p);
/* Whether p's peers must prove themselves: its messages carry MACs
 * (--cluster-key) or its connections are TLS. */
int rt_proc_authenticated(const RtProc *p);
/* Wakes every thread waiting in rt_proc_next now, not at the end of its
 * slice (a stop was requested). */
void rt_proc_wake(RtProc *p);
/* Waits until no step runs in p, or until `until` (rt_now() scale): 1
 * when none runs. */
int rt_proc_idle(RtProc *p, double until);
/* The next record (0), waiting at most `wait` seconds: -1 when none came.
 * A START or SPECIALISE comes out accepted, with step (not NULL) as its
 * step (rt_step_accept); one that is not for a step of its sender's, or
 * is stale, is dropped here instead.  A sender's SPECIALISE and RELEASE
 * records come out one at a time, in the order they came, each after
 * rt_proc_done of the one before: a client evicts a specialisation and
 * announces the next one back to back. */
int rt_proc_next(RtProc *p, RtMsg *out, RtStep *step, double wait);
/* Record m (from rt_proc_next) has been run. */
void rt_proc_done(RtProc *p, const RtMsg *m);
/* A received message as the completion takes it: validation, the
 * sender's incarnation, then filing or queueing.  Takes m.  (Tests call
 * rt_dispatch with a hand-made one.) */
void rt_proc_take(RtProc *p, RtBuf *m);
/* Files a validated message: TENSOR/DONE/ERROR/ABORT into the table
 * (stale ones freed), the rest queued.  Takes m.  Under no lock. */
void rt_dispatch(RtProc *p, RtMsg *m);
/* After validation, the sender's incarnation against the largest heard
 * from that task (spec/design.md "Restarts"): 0 to take the message,
 * -1 if it comes from an older incarnation (reported, the caller drops
 * it).  A larger one than a recorded one means the task restarted: what
 * was kept of its earlier incarnation is forgotten, its steps running
 * here are cancelled, and RT_EV_RESTARTED is queued.  Messages from the
 * controller are not tracked.  Under no lock. */
int rt_epoch_check(RtProc *p, const RtHdr *h);
/* The tag in the step ids of the process of incarnation `epoch`: a hash
 * of it, so that two incarnations of a task differ in it but once in
 * 65536 (RT_STEP). */
uint16_t rt_step_tag(uint64_t epoch);
/* A plan that messages may name from now on (a specialisation), and no
 * longer (before it is freed). */
tfg_status rt_proc_plan_add(RtProc *p, const TfgPlan *plan);
void rt_proc_plan_remove(RtProc *p, const TfgPlan *plan);

/* New message of `plan` (NULL: the process's own): header filled in
 * (dtype and dims from edge, if not NULL), body of nbytes at *body to
 * fill; or, body NULL, the header alone, the nbytes of the body to be
 * named by the caller as the message's tail (RtBuf.tail), sent from
 * where they are. */
tfg_status rt_msg_new(RtProc *p, const TfgPlan *plan, RtBuf **out,
		      unsigned char **body, int type, uint64_t step,
		      uint32_t key, const RtEdge *edge, size_t nbytes,
		      TfgError *e);
/* Sends to task `peer`, waiting at most until deadline; gives up early
 * when step (may be NULL) is cancelled, or a stop was requested.  Takes
 * m in every case. */
/* This process's counts of its messages to and from each task, for
 * --stats: "dialed N" (the tasks it has a link to), then a line "T om ob
 * im ib" per task it exchanged any with (the body of STATS_DATA), *n its
 * length; NULL out of memory. */
char *rt_stats_text(RtProc *p, size_t *n);
tfg_status rt_send(RtProc *p, int peer, RtBuf *m, double deadline,
		   RtStep *step, TfgError *e);
/* The same, held back while small (rt_net_hold): it leaves with this
 * thread's next send to the peer, or at rt_net_flush_held. */
tfg_status rt_send_held(RtProc *p, int peer, RtBuf *m, double deadline,
			RtStep *step, TfgError *e);
/* A message with a body copied from buf, to a reply URL. */
tfg_status rt_send_text(RtProc *p, const char *url, int type, uint64_t step,
			uint32_t key, const char *buf, size_t n, TfgError *e);
/* PONG for a PING (reply URL from its body). */
void rt_answer_ping(RtProc *p, const RtMsg *m);
/* Answers an RT_EV_FOREIGN_PING: a PONG of key RT_PONG_REFUSED, in the
 * PING's plan (so its controller takes it), saying why. */
void rt_refuse_ping(RtProc *p, const RtMsg *m);
/* Copies a URL body into buf ("" if malformed). */
void rt_body_url(char *buf, const RtMsg *m);
void rt_msg_free(RtMsg *m);
int rt_peer_up(RtProc *p, int task);
/* The connections the link to task has made, while it is up; 0 while it
 * is not: a change says the task may be a new process. */
int rt_peer_conn(RtProc *p, int task);
/* Whose task's port addr is, for a run that cannot use it, into text:
 * another run's (RT_HELD_OTHER_RUN: to a run starting its own servers),
 * a run's (RT_HELD_RUN: to an attached run or tfgc stop), or a tfgc
 * server's (RT_HELD_SERVER); same: of this program; pid: the run's
 * controller, or the server.  Said by the holder to a PING
 * (proto.c) or found in /proc by the controller (launch.c). */
enum { RT_HELD_OTHER_RUN = 1, RT_HELD_RUN, RT_HELD_SERVER };
int rt_holder_text(char *text, size_t size, const char *name,
		   const char *addr, int kind, int same, long pid);
int rt_peer_gone(RtProc *p, int task);
/* Whether task is lost to this process, with what to say in why[n]: its
 * connection hung up, it stopped answering heartbeats, or it has not been
 * up for longer than the start-up deadline.  A task that is only busy is
 * not lost (spec/design.md "Failures"). */
/* Whether this process has a link to task (dialed: rt_plan_peers, or
 * by a message or a wait). */
int rt_peer_linked(RtProc *p, int task);
int rt_peer_lost(RtProc *p, int task, char *why, size_t n);
/* Why task is not up yet, in why[n], for a wait that says what it waits
 * for: "connection refused" (nothing listens at its address), another
 * connect error, "connected, no answer yet", or "connecting".  Returns
 * the connect error (an errno; -1: its host did not resolve), 0 when
 * none. */
int rt_peer_absent(RtProc *p, int task, char *why, size_t n);
/* Whether task refused this process's connection for its cluster key
 * (spec/design.md "Cluster keys"), with what to say in why[n]. */
int rt_peer_refused(RtProc *p, int task, char *why, size_t n);
/* The deadline of a wait or send inside a step begun now: now plus
 * --step-timeout when the user set one, else none (INFINITY): heartbeats
 * tell a dead peer from a busy one, so a long step is not failed. */
double rt_step_deadline(const RtProc *p);

/* ------------------------------------------------------ rendezvous.c */

/* One step as this process takes part in it: as its client (the task
 * that drives it) or as a task that runs a part of it.  The protocol
 * owns it (rendezvous.c); a role keeps it for as long as the step runs
 * here.  What the step's part reaches through its calls is another
 * struct, its context (RtCtx, runtime/part.h), made for the part's run
 * (rt_part_init). */
struct RtStep {
	RtProc *proc;
	const TfgPlan *plan;   /* the step's: the process's own, or a
				  specialisation's */
	uint64_t step;         /* RT_STEP id; 0 before it begins */
	int client;            /* the step's client task */
	int sig;               /* its signature, -1: none (SPECIALISE) */
	TfgError err;          /* why the step failed */
	_Atomic int aborted;   /* its client sent ABORT (the entry is in its
				  inbox until the step ends) */
	_Atomic int orphan;    /* its client restarted while it ran here */
	int lost;              /* client: the task that answered START with
				  RT_ERROR_NO_PLAN, else -1 */
	int active;            /* in RtProc.steps */
	RtBox inbox;           /* its own messages while it runs here (under
				  RtProc.mu): no step searches another's */
	pthread_cond_t cv;     /* something of this step was filed */
	void (*tick)(RtStep *s); /* between the slices of a wait (the
				    client's heartbeat) */
	void *role;            /* the role's (client: its session) */
	RtStep *next;          /* in RtProc.steps */
};

/* Empty step of process p (not begun or accepted yet). */
void rt_step_init(RtStep *c, RtProc *p);
/* c, the context of a run of s's part: its receives, sends and flushes
 * go through the rendezvous of s, its failures into s->err.  No
 * variables (rt_vars_attach). */
void rt_part_init(RtCtx *c, RtStep *s);
/* Makes c the next step this process drives as a client, with plan
 * (NULL: the own) and sig, and holds RtProc.order until rt_step_sent, so
 * that the STARTs of this process's steps leave in the order of their
 * ids.  TFG_EINVAL (c->err) once its counter is spent (RT_STEP_MAX). */
tfg_status rt_step_begin(RtStep *c, const TfgPlan *plan, int sig);
/* The STARTs of c went out (or failed): other steps may begin. */
void rt_step_sent(RtStep *c);
/* Makes c the step of m (START or SPECIALISE from its client), running
 * sig (-1: none); -1 if m is for a step its sender does not drive
 * (reported) or one that is stale here (a duplicate).  rt_proc_next
 * calls it; tests too. */
int rt_step_accept(RtProc *p, RtStep *c, const RtMsg *m, int sig);
/* Ends c here: drops its leftovers, and it is no step any more. */
void rt_step_end(RtStep *c);
/* Whether a message of `step` is stale here: of an incarnation of its
 * client other than the one heard from last; of an earlier step than
 * the client's last one accepted here that is not running; or of a step
 * of this process's own that is not running.  Under RtProc.mu. */
int rt_step_stale(const RtProc *p, uint64_t step);
/* Whether the step's client sent ABORT for c, or restarted while it ran
 * here. */
int rt_step_cancelled(const RtStep *c);
/* TFG_ECANCELED (in *e) once c is cancelled, else TFG_OK. */
tfg_status rt_step_poll(RtStep *c, TfgError *e);
/* Receives the tensor of edge key of step c into dst (its part's
 * tfg_rt_recv, or its client's fetch), waiting for it. */
tfg_status rt_step_recv(RtStep *c, uint32_t key, void *dst);
/* rt_step_send of the first `rows` rows of a counted edge's value (-1:
 * all of it, as rt_step_send). */
tfg_status rt_step_send_rows(RtStep *c, uint32_t key, const void *src,
			     int64_t rows);
/* Sends src as the tensor of edge key of step c (its part's tfg_rt_send,
 * or its client's feed): small ones are held back (rt_net_hold). */
tfg_status rt_step_send(RtStep *c, uint32_t key, const void *src);
/* Files the feeds a START carries as TENSOR entries pointing into its
 * body: m must outlive the step (free it after rt_step_end). */
void rt_start_feeds(RtStep *c, const RtMsg *start);
/* Files a feed of the client's own part, edge key, as a TENSOR entry
 * pointing at src, not a copy: src must outlive the step (the session's
 * value, held for the run).  The part's receive copies it once, into
 * its buffer. */
tfg_status rt_feed_local(RtStep *c, uint32_t key, const void *src);
/* Waits for a DONE of step c from `task`; why: what it is waited for to
 * do, for the messages ("finish" if NULL).  *word (if not NULL) gets the
 * first 8 bytes of its body, 0 if it has fewer; *epoch (if not NULL) the
 * sender's incarnation. */
tfg_status rt_wait_done(RtStep *c, int task, const char *why,
			uint64_t *word, uint64_t *epoch);
/* ERROR (text; key: RT_ERROR_*) or DONE (text NULL; key: the signature)
 * for step c to its client; a failure is reported on stderr unless the
 * step was cancelled. */
void rt_reply(RtStep *c, uint32_t key, const char *text);

#endif /* TFG_RUNTIME_PROTO_H */
