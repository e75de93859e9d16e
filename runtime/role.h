/*
 * runtime/role.h: the roles of the runtime (spec/design.md "Runtime
 * layers"), above the protocol (runtime/proto.h):
 *
 *   server.c   the task server: its executor threads take the records
 *              of the process's queue and run them (a step's part, a
 *              session, a SPECIALISE, ...)
 *   client.c   sessions: a session's statements, and the steps it
 *              drives as their client (with client_eval.c, its values
 *              and expressions, and client_run.c, its run(...) steps;
 *              their shared header is client_int.h)
 *   spec.c     specialisations of a generic plan
 *   launch.c   the controller (tfgc run, tfgc stop)
 *   progress.c progress() and record(): the client's records and CSV
 *              files, the controller's bars
 *
 * The roles call the protocol, never the transport.  Their shared state
 * in a task process is the RtServer; RtServer.mu guards what is not the
 * protocol's.  It may be held while the compiler runs (a specialisation
 * is compiled under it, so that compiles are one at a time), but never
 * across a wait for another process: a role that sends while it holds it
 * queues the message (RtServer.pending) and sends it once it lets go.
 */
#ifndef TFG_RUNTIME_ROLE_H
#define TFG_RUNTIME_ROLE_H

#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#include "runtime/proto.h"

/* Arenas of one part not in use: a step takes one (or a new one) and
 * gives it back, so that steps of one signature may run at once.  One of
 * RT_ARENA_ONCE bytes or more goes back to the system after the part's
 * first step: what runs once (initialize(), a restore()) leaves nothing
 * behind; a part that runs again keeps it. */
#define RT_ARENA_ONCE ((size_t)64 << 20)
typedef struct RtArenas {
	char **v;
	int n, cap;
	int ran;  /* the part has finished a step */
} RtArenas;

/* A specialisation of a generic plan (spec/design.md "Unknown dims"):
 * signature `sig` compiled for the feed shapes `feeds`, with this
 * process's parts in it.  A slot whose plan is NULL is free: slots never
 * move, so an index stays valid as long as the specialisation lives. */
typedef struct RtSpec {
	const TfgPlan *plan; /* made by TfgOptions.specialise, freed by its
				release; NULL: a free slot */
	int sig;
	TfgShape *feeds;     /* [nfeed of sig]: the key; owned */
	RtPart *parts;       /* [plan->nsig]; owned */
	RtArenas *spare;     /* [plan->nsig]; owned */
	uint64_t *held;      /* [ntask]: the incarnation of client task k
				that announced it and has not released it, 0
				none; freed when none holds it; owned */
	uint64_t *has;       /* [ntask], as client: the incarnation of task
				k that answered its SPECIALISE with its hash
				(RELEASE goes to those), 0 none; owned */
	int *ups;            /* [ntask], as client: the connections the link
				to task k had made when it answered
				(rt_peer_conn); owned */
	uint64_t used;       /* RtServer.clock at its last use (LRU) */
	int inuse;           /* steps running it now: it stays until 0 */
	int ready;           /* as client: every task of it has it */
} RtSpec;

/* Specialisations kept per client task when TfgOptions.max_specs is 0:
 * a run fed a new shape every step would otherwise compile without end,
 * so past it the least recently used goes. */
#define RT_MAX_SPECS 64

/* A RELEASE decided under RtServer.mu, sent after. */
typedef struct RtRelease {
	int task, sig;
	uint64_t hash;
} RtRelease;

/* A variable of this task (var.c): its value outlives steps, sessions
 * and runs of `tfgc run --attach`, until the process ends. */
typedef struct RtVarSlot {
	pthread_mutex_t mu;    /* one update at a time */
	pthread_cond_t cv;     /* a sync update was made (optim.c) */
	unsigned char *data;   /* RtVar.nbytes, 64-byte aligned; NULL until
				  the first assign */
	int init;              /* it has a value */
	int lost;              /* a HOLD_WRITE failed part-way: no value */
	unsigned char *member; /* a sync variable's group (optim.c): [ntask],
				  1 for each client task whose gradient it
				  took; NULL until the first */
} RtVarSlot;

/* A task process's roles. */
typedef struct RtServer {
	RtProc proc;
	RtVarSlot *vars;       /* [plan->nvar]; those of other tasks unused */
	_Atomic unsigned char *left; /* [ntask]: 1 for a client task whose
				  session ended (LEAVE) and that has sent no
				  sync gradient since: out of the sync groups
				  (optim.c) */
	RtPart *parts;         /* [nsig] the own plan's parts; owned */
	RtArenas *spare;       /* [nsig] their spare arenas; owned */
	pthread_mutex_t mu;    /* everything below */
	/* specialisations (spec.c) */
	RtSpec *specs;         /* [nspec] slots, some free */
	int nspec;
	uint64_t clock;        /* counts uses of specialisations (LRU) */
	RtRelease *pending;    /* RELEASEs to send once mu is let go */
	int npending, cappending;
	/* executors (server.c) */
	pthread_t *threads;    /* started besides the main thread */
	int nthread, capthread;
	int nidle;             /* executors waiting for a record */
	int stopping;          /* SHUTDOWN or a signal: no more records */
	pthread_cond_t stopcv; /* the watcher waits on it: stopping set */
	/* launched servers (TfgOptions.launched, spec/design.md
	   "Launchers") */
	int controlled;        /* a controller has pinged this server */
	int shutdown;          /* SHUTDOWN came (not a signal, nor the
				  watcher) */
	int exit_code;         /* the watcher stopped the server: its exit
				  status; 0 otherwise */
	pid_t controller;      /* the chief's controller until reaped, 0 */
	int controller_status; /* its wait status once reaped, -1 before */
} RtServer;

/* ---------------------------------------------------------- server.c */

/* The roles of task `task` of plan, around an RtProc; no sockets yet. */
tfg_status rt_server_init(RtServer *s, const TfgPlan *plan, int task,
			  const TfgOptions *opt);
void rt_server_free(RtServer *s);
/* Runs one record of the queue (START, SPECIALISE, RELEASE,
 * RUN_SESSION, PING, RT_EV_RESTARTED; SHUTDOWN sets stopping), with step
 * the step rt_proc_next accepted for a START or SPECIALISE.  Frees m. */
void rt_server_handle(RtServer *s, RtStep *step, RtMsg *m);

/* -------------------------------------------------------- run_part.c */

/* Runs part for step s with an arena from spare (a new one when none is
 * free) and vars's variables (NULL: none), for the process named who
 * (its errors say it); 0, or the failure in s->err.  Both roles run
 * parts through it: a server's START, a session's own part. */
int rt_run_part(RtStep *s, RtServer *vars, const char *who,
		const RtPart *part, RtArenas *spare);
/* Frees n lists of spare arenas and a (GPU-pinned ones unpinned). */
void rt_arenas_free(RtArenas *a, int n);

/* ---------------------------------------------------------- launch.c */

/* Fork and exec of argv (argv[0] the executable): the child dies with
 * the thread that called this (PR_SET_PDEATHSIG) and runs nothing of
 * this process's before exec.  The child's pid, or -1 (errno). */
pid_t rt_spawn(char *const *argv);

/* ------------------------------------------------------------- var.c */

tfg_status rt_vars_init(RtServer *s);
/* The values of this task's variables from checkpoint dir (`tfgc server
 * --restore`): all of them, checked whole first, or none. */
tfg_status rt_vars_restore(RtServer *s, const char *dir, TfgError *e);
void rt_vars_free(RtServer *s);
/* Makes c a part's run that may use s's variables (RtCtx.var; c->step
 * set). */
void rt_vars_attach(RtServer *s, RtCtx *c);
/* The variable that c's part held when it failed (TFG_VAR_HOLD_*) let
 * go: one it was writing has no value from then on. */
void rt_vars_drop(RtCtx *c);
/* optim.c: c's tfg_rt_apply, on the variables rt_vars_attach gave it */
void rt_optim_attach(RtCtx *c);

/* ------------------------------------------------------------ ckpt.c */

/* Checkpoints (spec §8.11 "save and restore").  rt_ckpt_save writes val[i],
 * the value of plan->vars[i], into directory dir, all or nothing; rt_ckpt_load
 * reads every variable of plan from dir into val[] (owned), or changes nothing
 * and says which file and variable is wrong.  The checkpoint may hold
 * variables the program lacks (TF1's Saver(var_list)): note[n] says which
 * were left out, in one line ("" when none); a program's internal state
 * (a random maker's draws) that the checkpoint lacks starts at 0. */
tfg_status rt_ckpt_save(const TfgPlan *plan, const char *dir,
			RtTensor *const *val, TfgError *e);
tfg_status rt_ckpt_load(const TfgPlan *plan, const char *dir, RtTensor **val,
			char *note, size_t n, TfgError *e);

/* ---------------------------------------------------------- client.c */

/* Runs session `session` as its client; its output and its end go to
 * reply_url.  Returns TFG_OK when it ended well. */
tfg_status rt_client_session(RtServer *s, int session,
			     const char *reply_url);

/* ------------------------------------------------------------ spec.c */

/* A plan a step runs, with this task's parts in it. */
typedef struct RtUse {
	const TfgPlan *plan;
	const RtPart *parts; /* [plan->nsig] */
	RtArenas *spare;     /* [plan->nsig] */
	int spec;            /* its slot in RtServer.specs; -1: the own */
} RtUse;

/* The plan whose hash is prog into *u: the own one or a
 * specialisation's, which is in use (RtSpec.inuse) until rt_spec_unuse.
 * -1 if none. */
int rt_spec_use(RtServer *s, uint64_t prog, RtUse *u);
void rt_spec_unuse(RtServer *s, const RtUse *u);
/* Client of a generic plan: the specialisation of sig for these feed
 * shapes, compiled here and on every other task of it on first use, in
 * use as rt_spec_use leaves it.  Errors go to *e. */
tfg_status rt_spec_client(RtServer *s, int sig, const TfgShape *feeds,
			  RtUse *u, TfgError *e);
/* Client: the step of specialisation spec failed because task `task`
 * does not have it: it is no longer ready (the next run announces it
 * again), and *e says so. */
void rt_spec_lost(RtServer *s, int spec, int task, TfgError *e);
/* The specialisation of sig for feeds, held for client task `client` of
 * incarnation `epoch` from now on: found, or compiled here (evicting
 * client's least recently used one past the cap).  Its index goes to
 * *spec; errors to *e. */
tfg_status rt_spec_hold(RtServer *s, int client, uint64_t epoch, int sig,
			const TfgShape *feeds, int *spec, TfgError *e);
/* Client task `client` no longer holds specialisation spec, as its
 * RELEASE says; freed when no client holds it and no step runs it. */
void rt_spec_drop(RtServer *s, int spec, int client);
/* Server: a SPECIALISE (accepted as step), a RELEASE. */
void rt_spec_serve(RtServer *s, RtStep *step, const RtMsg *m);
void rt_spec_serve_release(RtServer *s, const RtMsg *m);
/* The body of a RELEASE (8 bytes): the plan hash of a specialisation of
 * signature h->key held here for its sender.  TFG_OK with its slot in
 * *spec, else TFG_EPROTO naming the sender.  Under RtServer.mu. */
tfg_status rt_release_check(RtServer *s, const RtHdr *h,
			    const unsigned char *body, int *spec,
			    TfgError *e);
/* Server: answers START m (accepted as step) whose plan is not here with
 * RT_ERROR_NO_PLAN. */
void rt_spec_refuse(RtStep *step, const RtMsg *m);
/* Task `task` restarted, and is of incarnation `epoch` now
 * (RT_EV_RESTARTED): its earlier processes hold none of the
 * specialisations here any more (each is dropped as its RELEASE would),
 * and, as a task of this client's, have none of them either. */
void rt_spec_forget(RtServer *s, int task, uint64_t epoch);
/* Frees every specialisation (at exit: the compiler's to free). */
void rt_spec_free(RtServer *s);

/* -------------------------------------------------------- progress.c */

/* spec §8.13 "progress", §8.14 "record"; design.md "Progress and
 * curves". */
#define RT_LOOP_MAX 32        /* loops a progress() looks through */

/* A loop the client is in: at iteration pos of count; rows: the
 * current batch's (a batches loop), -1 for a range. */
typedef struct RtLoop {
	int64_t pos, count, rows;
} RtLoop;

/* A session's progress() state, in its client. */
typedef struct RtTrack {
	RtLoop loops[RT_LOOP_MAX]; /* outermost first */
	int depth;         /* loops entered (those past RT_LOOP_MAX are
			      not kept) */
	int64_t calls;     /* progress() calls so far */
	int64_t examples;  /* rows of their batches */
} RtTrack;

/* One progress() call as the controller hears of it. */
typedef struct RtProgress {
	int end;           /* 0; 1 an epoch's end; 2 the session's */
	double t;          /* seconds since the session began */
	double frac;       /* done, 0 to 1; < 0: unknown (in no loop) */
	int64_t epoch, nepoch; /* 0, 0: no epoch (fewer than two loops) */
	int64_t step;
	int64_t examples;  /* -1: in no batches loop */
	char values[RT_PROGRESS_MAX - 200]; /* "loss 0.0731  acc 0.9100" */
} RtProgress;

/* The client's loops: entering one of count iterations, at one, leaving
 * it. */
void rt_track_push(RtTrack *tr, int64_t count, int64_t rows);
void rt_track_at(RtTrack *tr, int64_t pos, int64_t rows);
void rt_track_pop(RtTrack *tr);
/* A progress() call: *pr from the loops, step (< 0: the count of calls)
 * and the values vals[i] named names[i] (integer[i]: shown as one);
 * pr->t and pr->end are the caller's. */
void rt_track_call(RtTrack *tr, RtProgress *pr, int64_t step, int nval,
		   const char *const *names, const double *vals,
		   const int *integer);
/* The body of a PROGRESS message: one line of text into buf (n bytes);
 * its length.  decode: 0, or -1 for a malformed one. */
size_t rt_progress_encode(char *buf, size_t n, const RtProgress *pr);
/* A progress line of the nfield fields, in order, each after gap[i]
 * spaces (none before the first shown), into buf[n]: while it would not
 * fit in width columns (the last left free; width 0: any), the field of
 * the lowest priority above 0 goes; what is left of priority 0 is cut at
 * the width.  Its length. */
#define RT_PROGRESS_FIELDS 12
/* A terminal line's priorities (line_of): what goes first when it does
 * not fit. */
enum { RT_FIT_KEEP, RT_FIT_BAR, RT_FIT_EPOCH, RT_FIT_RATE, RT_FIT_ETA,
       RT_FIT_VALUES };
size_t rt_progress_fit(char *buf, size_t n, const char *const *field,
		       const int *prio, const int *gap, int nfield,
		       int width);
int rt_progress_decode(RtProgress *pr, const unsigned char *body,
		       size_t n);
/* A row of CSV file f, opened in *fp (created with its header when
 * NULL): cells[i] the text of column i, NULL empty; t the time column's
 * value.  TFG_EIO naming the file. */
tfg_status rt_csv_row(FILE **fp, const RtCsv *f, char *const *cells,
		      double t, TfgError *e);

/* The controller's drawing of the records: off (--no-progress), bars on
 * a terminal, or plain lines.  take: a PROGRESS of session; hide: before
 * anything else is written to the terminal; show: after it (not while
 * midline: an output that ends inside a line); tick: draws what waits;
 * end: session ended, its line stays.  All take NULL. */
typedef struct RtBars RtBars;
RtBars *rt_bars_new(const TfgPlan *plan, const TfgOptions *opt);
void rt_bars_free(RtBars *b);
void rt_bars_take(RtBars *b, int session, const unsigned char *body,
		  size_t n, int midline);
void rt_bars_hide(RtBars *b);
/* Ends the bars' line if one is on the terminal; async-signal-safe, for
 * the handlers of SIGINT and SIGTERM. */
void rt_bars_signal(void);
void rt_bars_show(RtBars *b, int midline);
void rt_bars_tick(RtBars *b, int midline);
void rt_bars_end(RtBars *b, int session);

#endif /* TFG_RUNTIME_ROLE_H */
