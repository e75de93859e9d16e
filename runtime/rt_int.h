/*
 * runtime/rt_int.h: declarations shared by the runtime's own files only.
 * Each module adds its section; keep it small.
 */
#ifndef TFG_RUNTIME_RT_INT_H
#define TFG_RUNTIME_RT_INT_H

#include <stddef.h>

#include "runtime/tfg.h"

/* ------------------------------------------------- tensors (tensor.c) */

/* Checks a shape (rank 0..TFG_MAX_RANK, no negative dims) and computes
 * numel * dtype size into *nbytes (for strings: the records only);
 * TFG_EINVAL when invalid or when the size does not fit in size_t /
 * int64_t. */
tfg_status rt_shape_nbytes(size_t *nbytes, TfgDtype t, const TfgShape *s);
/* tfg_shape_str, with unknown dims (< 0, a generic plan's) as "?". */
char *rt_shape_str(char *buf, size_t n, const TfgShape *s);
/* rt_tensor_new with a buffer of nbytes: for TFG_STRING at least the
 * records (rt_shape_nbytes), the text after them; for other dtypes
 * exactly rt_shape_nbytes (else TFG_EINVAL). */
tfg_status rt_tensor_new_nbytes(RtTensor **out, TfgDtype t,
				const TfgShape *s, size_t nbytes);


/* ------------------------------------------ execution side (wire, net,
 * rendezvous, server, client, launch); see spec/design.md "Transport",
 * "Wire format" and "Rendezvous". */

#include <nng/nng.h>

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
	RT_MSG_OUTPUT,   /* client -> controller; body: text for stdout */
	RT_MSG_SESSION_END, /* key: status 0/1; body: error text */
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
	RT_MSG__N
};

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
#define RT_WIRE_VERSION 3 /* 2: the last header field is the epoch; 3: a
			     step id carries its client's tag */
#define RT_HDR_SIZE 112
#define RT_SRC_CONTROLLER 0xffff
#define RT_MAX_BODY ((uint64_t)1 << 30) /* largest body: 1 GiB */
#define RT_URL_MAX 256
#define RT_ABORT_MAX 1024 /* longest reason an ABORT carries */

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
	uint64_t epoch;      /* the sender's incarnation (RtCtx.epoch), never
				0 (spec/design.md "Restarts") */
} RtHdr;

/* wire.c */
void rt_put_le(unsigned char *p, uint64_t v, int n); /* n bytes */
uint64_t rt_get_le(const unsigned char *p, int n);
const char *rt_msg_name(int type); /* "TENSOR", "?" if unknown */
void rt_hdr_encode(unsigned char *out, const RtHdr *h); /* 112 bytes */
void rt_hdr_decode(RtHdr *h, const unsigned char *in);  /* no checks */
/* Fills *h for a message from this process: magic, version, prog, and
 * epoch, the sending process's incarnation (RtCtx.epoch). */
void rt_hdr_init(RtHdr *h, const TfgPlan *plan, int type, uint64_t step,
		 uint32_t key, uint16_t src, uint64_t nbytes, uint64_t epoch);
/* Decodes and validates a received message of len bytes for task `self`
 * (-1: the controller).  addr is the transport's peer address (may be
 * NULL); errors (TFG_EPROTO, TFG_ETOOBIG) name the sending task when the
 * header says which, else addr. */
tfg_status rt_wire_check(RtHdr *h, const TfgPlan *plan, int self,
			 const void *buf, size_t len, const char *addr,
			 TfgError *e);
/* Bytes of edge `key`'s tensor, RtEdge.nbytes (validated plans only). */
size_t rt_edge_nbytes(const RtEdge *edge);
/* Whether edge->nbytes agrees with its dtype and shape: numel * size, or
 * for strings at least the records; and at most RT_MAX_BODY. */
int rt_edge_valid(const RtEdge *edge);
/* Body of a START of sig for task: the feeds of sig whose edge leads to
 * task, concatenated in sig->feeds order (so a step costs one message to
 * each task, feeds included). */
size_t rt_start_bytes(const TfgPlan *plan, int sig, int task);

/* For a generic plan: rt_wire_check without the prog check, for a START
 * whose prog names no plan this task has.  TFG_OK when it is otherwise
 * well-formed (its body's size goes unchecked: only the plan this task
 * lacks knows it), so that it gets an RT_ERROR_NO_PLAN answer instead of
 * nothing; any other message gets rt_wire_check's verdict. */
tfg_status rt_wire_check_lost(RtHdr *h, const TfgPlan *plan, int self,
			      const void *buf, size_t len, const char *addr,
			      TfgError *e);

/* RtMsg.spec of a START that rt_wire_check_lost let in. */
#define RT_SPEC_LOST (-2)

/* A received or locally handed-off message, with its decoded header. */
typedef struct RtMsg {
	RtHdr h;
	int spec;            /* the plan h.prog names: -1 the process's own,
				else its index in RtCtx.specs (RT_SPEC_LOST:
				none here) */
	nng_msg *m;          /* owned; NULL for a local TENSOR below */
	const unsigned char *body; /* h.nbytes bytes */
} RtMsg;

/* One push socket per task of the plan (never to itself), and what this
 * process knows of the task's incarnations (rendezvous.c). */
typedef struct RtPeer {
	nng_socket sock;
	int open;
	_Atomic int state; /* 0 never connected, 1 up, 2 gone (pipe event) */
	uint64_t epoch;    /* the largest incarnation heard from it; 0: none */
	uint16_t tag;      /* rt_step_tag(epoch): its steps' tag, once known */
	uint64_t stale;    /* the older incarnation last reported as dropped */
} RtPeer;

/* Lazily dialed push socket to a reply address (the controller). */
typedef struct RtReply {
	char url[RT_URL_MAX];
	nng_socket sock;
	_Atomic int state;
} RtReply;

/* A specialisation of a generic plan (spec/design.md "Unknown dims"):
 * signature `sig` compiled for the feed shapes `feeds`, with this
 * process's parts in it.  RtCtx.plan, parts, arenas and edge_bytes point
 * into one while a step of it runs (rt_ctx_use).  A slot whose plan is
 * NULL is free: slots never move, so an index stays valid as long as the
 * specialisation lives. */
typedef struct RtSpec {
	const TfgPlan *plan; /* made by TfgOptions.specialise, freed by its
				release; NULL: a free slot */
	int sig;
	TfgShape *feeds;     /* [nfeed of sig]: the key; owned */
	RtPart *parts;       /* [plan->nsig]; owned */
	char **arenas;       /* [plan->nsig]; owned */
	size_t *edge_bytes;  /* [plan->nedge]; owned */
	unsigned char *held; /* [ntask]: client task k announced it and has
				not released it; freed when none has; owned */
	unsigned char *has;  /* [ntask], as client: tasks that answered its
				SPECIALISE with its hash (RELEASE goes to
				them); owned */
	uint64_t used;       /* RtCtx.clock at its last use (LRU) */
	int ready;           /* as client: every task of it has it */
} RtSpec;

/* Specialisations kept per client task when TfgOptions.max_specs is 0:
 * a run fed a new shape every step would otherwise compile without end,
 * so past it the least recently used goes. */
#define RT_MAX_SPECS 64

/* Per-process state: one per server, client or controller process. */
typedef struct RtCtx {
	const TfgPlan *plan;   /* borrowed */
	int task;              /* own task index; -1 for the controller */
	uint16_t src;          /* task, or RT_SRC_CONTROLLER */
	const char *name;      /* "/job:local/task:0" or "controller" */
	TfgOptions opt;        /* defaults filled in */
	/* what tfg_rt_recv/tfg_rt_send (aot.c) call: the rendezvous, or
	   tfg_aot_run's buffers */
	int (*recv)(struct RtCtx *c, uint32_t key, void *dst);
	int (*send)(struct RtCtx *c, uint32_t key, const void *src);
	const TfgAotSig *aot;  /* tfg_aot_run only: the signature, */
	const void *const *aot_feeds; /* its feed buffers */
	void *const *aot_fetches;     /* and its fetch buffers */
	/* transport (net.c) */
	nng_socket pull;       /* the one pull0 socket */
	int pull_open;
	int recv_ms;           /* RECVTIMEO now set on pull (0: not yet) */
	char url[RT_URL_MAX];  /* where we listen: "tcp://host:port" */
	RtPeer *peers;         /* [plan->ntask] */
	RtReply *replies[8];   /* reply sockets by URL */
	int nreply;
	/* rendezvous (rendezvous.c) */
	RtMsg *tab;            /* received TENSOR/DONE/ERROR, by (step, key) */
	int ntab, captab;
	RtMsg *queue;          /* other messages (START, RUN_SESSION, ...),
				  FIFO, for the server loop */
	int nqueue, capqueue;
	uint64_t *finished;    /* [ntask]: last step of each client that ended
				  here: later messages for it are stale (of the
				  client's incarnation now: rt_epoch_check
				  resets it when the client restarts) */
	uint64_t epoch;        /* this process's incarnation, for every
				  message it sends (rt_ctx_init) */
	uint16_t tag;          /* rt_step_tag(epoch): in its step ids */
	size_t *edge_bytes;    /* [nedge] */
	/* the current step */
	uint64_t step;
	int client;            /* the step's client task */
	int sig;               /* its signature, -1 outside a step */
	int orphan;            /* its client restarted while it ran here: it
				  is cancelled, and its end leaves finished[]
				  and the table to the new incarnation */
	TfgError err;          /* detail of the step's failure */
	/* server (server.c) */
	RtPart *parts;         /* [nsig] own parts; owned */
	char **arenas;         /* [nsig] allocated on first use; owned */
	char reply_url[RT_URL_MAX]; /* the controller of the session */
	/* specialisations of a generic plan (spec.c) */
	const TfgPlan *base;   /* the process's own plan */
	RtPart *base_parts;
	char **base_arenas;
	size_t *base_edge_bytes;
	RtSpec *specs;         /* [nspec] slots, some free */
	int nspec;
	int cur_spec;          /* -1: the own plan is in use */
	uint64_t clock;        /* counts uses of specialisations (LRU) */
	int lost;              /* client: the task that answered the step's
				  START with RT_ERROR_NO_PLAN, else -1 */
	int polling;           /* in rt_step_poll: no second one inside */
	/* client output buffer (client.c) */
	char *out;
	size_t nout, capout;
	double last_flush;
	uint64_t counter;      /* steps started as client */
} RtCtx;

/* Set by the SIGINT/SIGTERM handlers of servers: waits end early. */
extern volatile int rt_stop_requested;

/* net.c */
double rt_now(void); /* monotonic seconds */
void rt_url(char *buf, size_t n, const char *addr); /* host:port -> tcp:// */
tfg_status rt_nng_error(TfgError *e, int rv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tfg_status rt_net_listen(RtCtx *c, const char *url, TfgError *e);
void rt_net_dial_peers(RtCtx *c);
/* New message: header filled in (dtype and dims from edge, if not
 * NULL), body of nbytes at *body to fill. */
tfg_status rt_msg_new(RtCtx *c, nng_msg **out, unsigned char **body,
		      int type, uint64_t step, uint32_t key,
		      const RtEdge *edge, size_t nbytes, TfgError *e);
/* Sends to task `peer` or to reply URL `url`; waits at most until
 * `deadline` (rt_now() scale).  Takes m in every case. */
tfg_status rt_net_send(RtCtx *c, int peer, nng_msg *m, double deadline,
		       TfgError *e);
tfg_status rt_net_send_url(RtCtx *c, const char *url, nng_msg *m,
			   double deadline, TfgError *e);
/* Receives one validated message, waiting at most slice seconds:
 * TFG_ETIMEDOUT when none came.  A message that fails validation is
 * reported on stderr and dropped (TFG_EPROTO returned), and so is one
 * from an incarnation of its task older than one heard before
 * (rt_epoch_check). */
tfg_status rt_net_recv(RtCtx *c, RtMsg *out, double slice);
int rt_net_peer_gone(RtCtx *c, int peer);
/* Whether the push socket to task `peer` is connected now. */
int rt_net_peer_up(RtCtx *c, int peer);
int rt_net_url_gone(RtCtx *c, const char *url);
void rt_net_close(RtCtx *c);
void rt_msg_free(RtMsg *m);

/* rendezvous.c */
tfg_status rt_ctx_init(RtCtx *c, const TfgPlan *plan, int task,
		       const TfgOptions *opt);
void rt_ctx_free(RtCtx *c);
/* The tag in the step ids of the process of incarnation `epoch`: a hash
 * of it, so that two incarnations of a task differ in it but once in
 * 65536 (RT_STEP). */
uint16_t rt_step_tag(uint64_t epoch);
/* Makes the current step id of the next step this process drives as a
 * client; TFG_EINVAL (c->err) once its counter is spent (RT_STEP_MAX). */
tfg_status rt_step_next(RtCtx *c);
/* Whether a message of `step` is stale here: of a step that ended, of
 * an incarnation of its client other than the one heard from last, or of
 * a step of this task's own that this process never started. */
int rt_step_stale(const RtCtx *c, uint64_t step);
/* Files a received message: TENSOR/DONE/ERROR into the table, PING
 * answered, the rest queued; stale ones freed.  Takes m. */
void rt_dispatch(RtCtx *c, RtMsg *m);
/* Files the feeds a START carries as TENSOR entries pointing into its
 * body: m must outlive the step (free it after rt_step_end). */
void rt_start_feeds(RtCtx *c, const RtMsg *start);
/* Waits for a DONE of the current step from `task`; why: what it is
 * waited for to do, for the messages ("finish" if NULL).  *word (if not
 * NULL) gets the first 8 bytes of its body, 0 if it has fewer. */
tfg_status rt_wait_done(RtCtx *c, int task, const char *why,
			uint64_t *word);
/* Ends the current step here: drops its leftovers, marks it finished,
 * and makes the own plan the one in use again. */
void rt_step_end(RtCtx *c);
/* After validation, the sender's incarnation against the largest heard
 * from that task (spec/design.md "Restarts"): 0 to take the message,
 * -1 if it comes from an older incarnation (reported, the caller drops
 * it).  A larger one than a recorded one means the task restarted: what
 * this process kept of its earlier incarnation is forgotten first.
 * Messages from the controller are not tracked. */
int rt_epoch_check(RtCtx *c, const RtHdr *h);
/* Whether the step's client sent ABORT for the current step (filed in
 * the table, so it counts until rt_step_end), or restarted while it ran
 * here (RtCtx.orphan). */
int rt_step_cancelled(RtCtx *c);
/* net.c, between the slices of a send in a step that this task does not
 * drive: files what has arrived, and TFG_ECANCELED (in *e) once the step
 * is cancelled, else TFG_OK. */
tfg_status rt_step_poll(RtCtx *c, TfgError *e);
/* Pops the oldest queued message (0) or returns -1. */
int rt_queue_pop(RtCtx *c, RtMsg *out);
/* Sends a message with a body copied from buf to a reply URL. */
tfg_status rt_send_text(RtCtx *c, const char *url, int type, uint64_t step,
			uint32_t key, const char *buf, size_t n, TfgError *e);
/* Answers PING with PONG (reply URL from its body). */
void rt_answer_ping(RtCtx *c, RtMsg *m);
/* Copies a URL body into buf ("" if malformed). */
void rt_body_url(char *buf, const RtMsg *m);

/* wire.c: the body of a RELEASE that rt_wire_check let in (8 bytes):
 * the plan hash of a specialisation of signature h->key held here for
 * its sender.  TFG_OK with its slot in *spec, else TFG_EPROTO naming the
 * sender. */
tfg_status rt_release_check(RtCtx *c, const RtHdr *h,
			    const unsigned char *body, int *spec,
			    TfgError *e);

/* spec.c */
/* The plan whose hash is prog (the own one or a specialisation's), and
 * its index (-1: the own one); NULL if none. */
const TfgPlan *rt_plan_of(RtCtx *c, uint64_t prog, int *spec);
/* Makes specialisation `spec` (-1: the own plan) the one c->plan, parts,
 * arenas and edge_bytes show. */
void rt_ctx_use(RtCtx *c, int spec);
/* Client of a generic plan: the specialisation of sig for these feed
 * shapes, compiled here and on every other task of it on first use.
 * Returns its index in *spec, or an error in c->err. */
tfg_status rt_spec_client(RtCtx *c, int sig, const TfgShape *feeds,
			  int *spec);
/* Server: a SPECIALISE message from a client. */
void rt_spec_serve(RtCtx *c, RtMsg *m);
/* Server: a RELEASE message from a client. */
void rt_spec_serve_release(RtCtx *c, RtMsg *m);
/* Server: answers a START whose plan is not here with RT_ERROR_NO_PLAN. */
void rt_spec_refuse(RtCtx *c, const RtMsg *m);
/* Client: the step of specialisation spec failed because task `task`
 * does not have it: it is no longer ready (the next run announces it
 * again), and c->err says so. */
void rt_spec_lost(RtCtx *c, int spec, int task);
/* The specialisation of sig for feeds, held for client task `client`
 * from now on: found, or compiled here (evicting client's least recently
 * used one past the cap).  Its index goes to *spec; errors to c->err. */
tfg_status rt_spec_hold(RtCtx *c, int client, int sig, const TfgShape *feeds,
			int *spec);
/* Task `task` restarted (rt_epoch_check): it holds none of the
 * specialisations here any more (each is dropped as its RELEASE would),
 * and, as a task of this client's, has none of them either. */
void rt_spec_forget(RtCtx *c, int task);
/* Client task `client` no longer holds specialisation spec; when no
 * client does it is freed (through TfgOptions.release), or, if in use,
 * when its step ends.  If client is this task, the tasks that have it
 * hear a RELEASE. */
void rt_spec_drop(RtCtx *c, int spec, int client);
void rt_spec_free(RtCtx *c);

/* server.c: makes the step of m (START or SPECIALISE from its client)
 * the current one, running sig (-1: none); -1 if m is for a step its
 * sender does not drive (reported) or one that already ended here. */
int rt_step_accept(RtCtx *c, const RtMsg *m, int sig);
/* server.c: ERROR (text; key: RT_ERROR_*) or DONE (text NULL; key: the
 * signature) for the current step to its client. */
void rt_reply(RtCtx *c, int client, uint32_t key, const char *text);

/* client.c */
/* Runs a session as its client; output and the end go to reply_url. */
tfg_status rt_client_session(RtCtx *c, int session);
/* Flushes buffered output if due (force: always). */
void rt_client_flush(RtCtx *c, int force);
/* server.c: runs own part of sig for the current step. */
int rt_run_part(RtCtx *c, int sig);
/* aot.c: a 64-byte-aligned arena of at least size bytes (owned; free);
 * a large one on huge pages where the system gives them. */
char *rt_arena_alloc(size_t size);

#endif /* TFG_RUNTIME_RT_INT_H */
