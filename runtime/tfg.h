/*
 * runtime/tfg.h: the public interface of the tfg runtime (libtfg).
 *
 * The runtime links no compiler code.  The compiler hands it a TfgPlan (the
 * cluster, the rendezvous edges, the run signatures and the session
 * programs) and, for the task a process serves, a table of compiled part
 * functions.  Pointers are borrowed unless a comment says "owned".
 */
#ifndef TFG_RUNTIME_TFG_H
#define TFG_RUNTIME_TFG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define TFG_API __attribute__((visibility("default")))
#else
#define TFG_API
#endif

/* ---------------------------------------------------------------- status */

typedef enum {
	TFG_OK = 0,
#define ERR(name, msg) TFG_##name,
#include "runtime/errors.def"
	TFG__NSTATUS
} tfg_status;

TFG_API const char *tfg_strerror(tfg_status s);

/* An error with its detail: the code and a message that names what failed
 * ("x100.npy: expected magic \x93NUMPY").  Functions that can fail take a
 * TfgError * (may be NULL) and return the code. */
typedef struct TfgError {
	tfg_status code;
	char msg[1024];
} TfgError;

/* Sets e->code and formats e->msg (if e != NULL); returns code. */
TFG_API tfg_status tfg_error(TfgError *e, tfg_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Always-on assertion: aborts with file:line. */
#define TFG_ASSERT(c)                                                         \
	((c) ? (void)0 : tfg_assert_fail(#c, __FILE__, __LINE__))
TFG_API void tfg_assert_fail(const char *what, const char *file, int line)
    __attribute__((noreturn));

/* ----------------------------------------------------------------- dtypes */

typedef enum {
	TFG_BOOL, /* 1 byte, 0 or 1 */
	TFG_I32,
	TFG_I64,
	TFG_F32,
	TFG_F64,
	TFG_STRING, /* text, see below; after the numbers, so wire codes
		     * 0-4 stay */
	TFG_U8,     /* 1 byte, 0 to 255; last, so wire codes 0-5 stay: code
		     * order is not promotion order (compiler/shape.c) */
	TFG__NDTYPE
} TfgDtype;

TFG_API const char *tfg_dtype_name(TfgDtype t); /* "f32" */
/* Bytes per element; for TFG_STRING the size of one record (below),
 * without the text. */
TFG_API size_t tfg_dtype_size(TfgDtype t);

/* A string tensor's buffer (spec/design.md "Strings"): numel records of
 * two little-endian uint64, {offset, length}, in row-major order, then
 * the text; an offset counts from the start of the buffer and points
 * past the records.  Its size is numel * TFG_STRING_RECORD plus the
 * text, known to the compiler because every string is a constant. */
#define TFG_STRING_RECORD 16
/* Element i of a string buffer of nbytes bytes: *s (borrowed) and *len.
 * Returns 0, or -1 when its record is out of bounds. */
TFG_API int tfg_string_at(const void *buf, size_t nbytes, int64_t i,
			  const char **s, size_t *len);
/* TFG_OK when all numel records fit and point inside the buffer's text,
 * else TFG_EINVAL. */
TFG_API tfg_status tfg_string_check(const void *buf, size_t nbytes,
				    int64_t numel);

/* ---------------------------------------------------------------- tensors */

/* tfgc and libtfg, as tfgc --version prints it */
#define TFG_VERSION "0.12.0"

#define TFG_MAX_RANK 8

typedef struct TfgShape {
	int rank;
	int64_t dims[TFG_MAX_RANK];
} TfgShape;

/* The language's integer / and % (spec/design.md "Language decisions"):
 * floor division and the remainder that goes with it, for integers of
 * `bits` bits (32 or 64) held in an int64_t, never trapping: x / 0 =
 * x % 0 = 0, MIN / -1 = MIN (it wraps), MIN % -1 = 0.  The folder and
 * the session evaluator call these; the CPU emitter builds the same in
 * LLVM IR (cg_int_divmod), and tests/unit/codegen_test.c holds the two
 * to each other. */
TFG_API int64_t tfg_int_div(int64_t a, int64_t b, int bits);
TFG_API int64_t tfg_int_mod(int64_t a, int64_t b, int bits);

/* The most bytes one tensor may have: 2^40 (1 TiB). */
#define TFG_MAX_BYTES ((uint64_t)1 << 40)

/* The size of a tensor of dtype t and shape s, every product checked:
 * 0 with its element count in *numel and its bytes in *nbytes (either
 * may be NULL; for strings, the records only), or -1 when the rank or a
 * dim is out of range (negative), or when the shape is too large: when
 * it would describe more than TFG_MAX_BYTES with each 0 dim counted as
 * 1, so that neither the order of the dims nor a 0 among them lets the
 * others be huge (spec/language.md §5.1 "Dtypes"). */
TFG_API int tfg_shape_size(const TfgShape *s, TfgDtype t, int64_t *numel,
			   size_t *nbytes);
/* The element count of s: 0 when a dim is 0, whatever the others; for a
 * shape tfg_shape_size refuses, INT64_MAX rather than a wrapped
 * product. */
TFG_API int64_t tfg_shape_numel(const TfgShape *s);
TFG_API int tfg_shape_eq(const TfgShape *a, const TfgShape *b);
/* Writes "[2, 3]" (or "[]" for a scalar) into buf; returns buf. */
TFG_API char *tfg_shape_str(char *buf, size_t n, const TfgShape *s);

/* A dense row-major tensor.  `data` is owned by the tensor when made by
 * rt_tensor_new or rt_npy_load, and freed by rt_tensor_free. */
typedef struct RtTensor {
	TfgDtype dtype;
	TfgShape shape;
	size_t nbytes; /* numel * dtype size; strings: the text too */
	void *data;    /* 64-byte aligned when owned */
} RtTensor;

/* Allocates an uninitialised tensor (zero elements is fine). Owned.
 * For TFG_STRING it has room for the records only (see rt_int.h's
 * rt_tensor_new_nbytes). */
TFG_API tfg_status rt_tensor_new(RtTensor **out, TfgDtype t, const TfgShape *s);
TFG_API void rt_tensor_free(RtTensor *t); /* accepts NULL */

/* Reads a NumPy .npy file (version 1.0-3.0, little-endian, C order,
 * dtypes b1 u1 i4 i8 f4 f8).  Every malformed header is an error naming
 * the file and what was wrong. */
TFG_API tfg_status rt_npy_load(RtTensor **out, const char *path, TfgError *e);
/* What load("path") reads (spec §8.4 "load"): a .npy file, or an IDX file
 * (MNIST's format), plain or gzip-compressed, told apart by their first
 * bytes (runtime/idx.c). */
TFG_API tfg_status rt_load(RtTensor **out, const char *path, TfgError *e);
/* CIFAR-10's binary batches as u8[n, 3073]: per record its label (0 to
 * 9) and 3072 pixel bytes, planes red, green, blue (spec §8.4 "load",
 * load(path, format="cifar10")). */
TFG_API tfg_status rt_cifar10_load(RtTensor **out, const char *path,
				   TfgError *e);
TFG_API tfg_status rt_npy_save(const char *path, const RtTensor *t, TfgError *e);

/* Raises this process's soft limit of resource res (RLIMIT_*) to need,
 * or as far toward it as its hard limit allows (children inherit it);
 * 0, or -1 when the hard limit is below need (*hard: it). */
TFG_API int rt_limit_raise(int res, unsigned long long need,
			   unsigned long long *hard);

/* Prints a value the way NumPy's print() does: scalars as Python repr
 * (238, 0.5, True), arrays as [1. 2.5] with nested brackets. */
TFG_API void rt_format(FILE *f, const RtTensor *t);
/* The same into a malloc'd string (owned by the caller). */
TFG_API char *rt_format_str(const RtTensor *t);
/* Python's formatting of one value (spec §8.5 "Session expressions"): fmt is a
 * printf-style string with one directive ("%.3f ms", '%' of a session)
 * when printf_style, else a format spec (".3f", format()).  The value is
 * t, or the string str when not NULL.  A malloc'd string, or NULL with
 * why[n]; tfg_format_check says whether fmt is well formed (0, or -1
 * with why). */
TFG_API char *tfg_format_value(const char *fmt, int printf_style,
			       const RtTensor *t, const char *str, char *why,
			       size_t n);
TFG_API int tfg_format_check(const char *fmt, int printf_style, char *why,
			     size_t n);

/* ------------------------------------------------------------------ plans */

/* One task of the cluster: /job:<job>/task:<index>. */
typedef struct RtTask {
	const char *job;
	int index;
	const char *addr; /* "host:port" as listed, or as remapped */
	const char *name; /* "/job:local/task:1" */
} RtTask;

/* A send/recv pair: one tensor from src task to dst task per step.
 * Keys are global to the program; a step id keeps steps apart. */
typedef struct RtEdge {
	uint32_t key;     /* index in TfgPlan.edges; goes on the wire */
	const char *name; /* "y2;/job:local/task:1->/job:local/task:0" */
	int src, dst;     /* task indices; src == dst is a local hand-off */
	TfgDtype dtype;
	TfgShape shape;
	size_t nbytes;    /* the tensor's bytes: numel * dtype size, or for
			     strings the records and the text; what the
			     wire's nbytes must say (rt_proc_init checks it
			     against dtype and shape) */
	int counted;      /* RT_COUNTED_*: a counted edge (spec/design.md
			     "Counted edges"): a message carries the rows
			     before a count the step knows (its dims[0], at
			     most shape.dims[0]) and the receiver pads the
			     rest */
} RtEdge;
enum {
	RT_COUNTED_NO,
	RT_COUNTED_ZEROS, /* padded with zero bytes */
	RT_COUNTED_IDS    /* i64 ids, padded with -1 */
};

typedef struct RtFeed {
	const char *name; /* the input's name */
	TfgDtype dtype;
	TfgShape shape;
	uint32_t key; /* edge client -> the input's task */
} RtFeed;

typedef struct RtFetch {
	const char *name; /* the fetched node's name */
	uint32_t key;     /* edge node's task -> client */
} RtFetch;

/* A run signature: which fetches, with which feeds, driven from which
 * task.  Each distinct run(...) of the sessions gets one. */
typedef struct RtSig {
	int client; /* task that drives the step (the session's task) */
	int nfeed;
	RtFeed *feeds;
	int nfetch;
	RtFetch *fetches;
	int ntask;
	int *tasks; /* tasks with a non-empty part, in index order */
	int *needs_done; /* per entry of tasks[]: part sends nothing, so it
			    reports DONE when finished */
} RtSig;

/* Session programs: what the client executes, statement by statement. */
typedef enum {
	RT_E_CONST, /* .value */
	RT_E_STR,   /* .str, printed as is */
	RT_E_VAR,   /* loop variable .slot (an i64 scalar) */
	RT_E_RUN,   /* run(sig .sig) with .args[i] feeding sig->feeds[i];
		       its value is the list of fetches */
	RT_E_LOAD,  /* load(args[0], a string): a .npy or IDX file,
		       relative to the cwd */
	RT_E_NEG,   /* -args[0], on scalars */
	RT_E_ADD, RT_E_SUB, RT_E_MUL, RT_E_DIV, /* args[0] op args[1], scalars;
						   ADD of two strings joins
						   them */
	RT_E_EQ, RT_E_NE, RT_E_LT, RT_E_LE, RT_E_GT, RT_E_GE,
		    /* args[0] op args[1]: number scalars, or strings (EQ, NE);
		       a bool scalar */
	RT_E_LEN,   /* len(args[0]): a list's length, a tensor's first dim */
	RT_E_UNINIT, /* args[0] is a run fetching, per variable .names[i],
		       whether it is initialized (bool scalars): the names
		       of those that are not, a 1-D string tensor */
	RT_E_NOW,   /* now(): seconds since 1970 (f64), the wall clock */
	RT_E_EXISTS, /* exists(args[0], a string): whether that path is
		       there, a bool scalar */
	RT_E_MOD,   /* args[0] % args[1], number scalars: the remainder of
		       §6.3 "Division and remainder" */
	RT_E_FORMAT /* args[1] formatted by args[0], a string: printf-style
		       (`"%.3f" % x`) when .slot is 1, else a format spec
		       (`format(x, ".3f")`); a string */
} RtExprKind;

typedef struct RtExpr {
	RtExprKind kind;
	const char *where; /* "file:line:col" for run-time messages */
	RtTensor *value;   /* RT_E_CONST */
	const char *str;   /* RT_E_STR */
	int slot;          /* RT_E_VAR */
	int sig;           /* RT_E_RUN */
	int nargs;
	struct RtExpr **args;
	const char *const *names; /* RT_E_UNINIT: one per fetch of args[0] */
} RtExpr;

typedef enum {
	RT_S_PRINT,
	RT_S_FOR,
	RT_S_EXPR,
	RT_S_SAVE,  /* exprs[0], a run(), each fetch i into .npy file paths[i] */
	RT_S_LET,   /* local .slot = exprs[0] */
	RT_S_IF,    /* exprs[0], a bool scalar: body if true, else_ if not */
	RT_S_SLEEP, /* exprs[0] milliseconds */
	RT_S_WAIT,  /* until exprs[0] (RT_E_UNINIT) is empty, asking again and
		       again, for exprs[1] seconds at most (nexpr 1: the step
		       deadline) */
	RT_S_CHECKPOINT, /* save(paths[0]): exprs[0] runs a step fetching
			    every variable, in the plan's order */
	RT_S_RESTORE, /* restore(paths[0]): exprs[0] is the run of a step
			assigning every variable the value fed for it (its
			feeds, in the plan's order, come from the files) */
	RT_S_BATCHES, /* for b in batches(...): body once per batch; exprs
			(NULL where not given) [0] x, [1] y, [2] size, [3]
			seed, [4] shard, [5] of, [6] drop_last; slot .. slot
			+ 4: b.x, b.y, b.index, b.count, b.size */
	RT_S_PROGRESS, /* progress(step=exprs[0] (NULL: the count of calls),
			  paths[i]=exprs[i], i >= 1) */
	RT_S_RECORD,  /* record(): a row of CSV file .slot of the session,
			 exprs[i] in column cols[i] */
	RT_S_SAVE_EVERY /* save_every(exprs[1], paths[0]): from now on, a
			   save (exprs[0], as RT_S_CHECKPOINT's) after every
			   exprs[1]-th step of the session; 0 stops it */
} RtStmtKind;

typedef struct RtStmt {
	RtStmtKind kind;
	const char *where;
	int nexpr; /* PRINT: the values; EXPR: one; FOR: lo, hi; BATCHES: 7 */
	RtExpr **exprs;
	int slot; /* FOR: the loop variable; LET: the local; BATCHES: the
		     first of b's 5 */
	int nbody;
	struct RtStmt **body; /* FOR, IF, BATCHES */
	int nelse;
	struct RtStmt **else_; /* IF */
	const char **paths;   /* SAVE: one per fetch, relative to the cwd;
				 CHECKPOINT, RESTORE: the directory;
				 PROGRESS: the values' names */
	int *cols;            /* RECORD: each value's column */
	int epoch;            /* FOR, BATCHES: the outermost loop around a
				 progress() in two loops or more: each
				 iteration's end is an epoch's */
} RtStmt;

/* A CSV file of a session's record() calls (spec §8.14 "record"). */
typedef struct RtCsv {
	const char *path;  /* relative to the cwd */
	int ncol;
	const char **cols; /* the header's names */
	int time;          /* the column of `time` to fill in, or -1 */
} RtCsv;

typedef struct RtSession {
	int task; /* where it runs */
	int group; /* > 0: runs at once with the others of its group
		      (parallel, session each); 0: alone, in file order */
	const char *label; /* a group's: put before each line it prints */
	int nslot; /* loop variables and lets */
	int nstmt;
	RtStmt **stmts;
	int ncsv;
	RtCsv *csv; /* the files its record() calls write */
} RtSession;

/* A variable (spec §4.4 "Variables"): state on task `task` that outlives
 * steps, updated by the parts that run there (tfg_rt_var). */
/* How a variable that is one shard of a partitioned one
 * (spec §4.4.1 "Partitioned variables") joins the others: what lets a checkpoint's
 * shards be cut anew for another number of them (runtime/ckpt.c). */
typedef struct RtShardOf {
	const char *whole; /* NULL: no shard; else the partitioned variable's
			      name, or its slot's as the variable unsplit
			      would name it ("emb", "emb/accumulator") */
	int k, n;          /* shard k of n */
	int mod;           /* strategy "mod": row r in shard r % n at r / n;
			      else "div": contiguous, the first rows % n
			      shards one row longer */
	int64_t rows;      /* the whole's axis 0 */
} RtShardOf;
/* Shard k of n of a whole of `rows` rows: its first row of the whole
 * (then every row with mod, every n-th without) and its number of rows
 * (runtime/gather.c; the compiler cuts shards by them too). */
TFG_API int64_t tfg_shard_first(int64_t rows, int64_t n, int mod,
				int64_t k);
TFG_API int64_t tfg_shard_rows(int64_t rows, int64_t n, int mod, int64_t k);

typedef struct RtVar {
	const char *name;
	int task;
	TfgDtype dtype;
	TfgShape shape;
	size_t nbytes;     /* numel * dtype size */
	const char *where; /* "file:line:col" of its declaration */
	int hidden;        /* the count of a random maker's draws (an i64
			      scalar, 0 when the process starts): TFG_VAR_DRAW
			      only, never initialize()d */
	RtShardOf part;    /* part.whole NULL: not a shard */
} RtVar;

/* Runs one task's part of one signature for the current step.  Generated
 * code: it calls tfg_rt_recv/tfg_rt_send and returns 0 or the first
 * non-zero status they returned.  `arena` holds arena_size bytes,
 * 64-byte aligned, for its intermediates. */
struct RtCtx;
typedef int (*RtPartFn)(struct RtCtx *ctx, char *arena);

typedef struct RtPart {
	RtPartFn fn;       /* NULL: this task has no part in the signature */
	size_t arena_size;
} RtPart;

/* The whole program as the runtime sees it.  Built by the compiler;
 * everything in it lives as long as the plan. */
typedef struct TfgPlan {
	uint64_t hash; /* of the source and the plan: peers must agree */
	const char *file;
	int ntask;
	RtTask *tasks;
	int nedge;
	RtEdge *edges;
	int nsig;
	RtSig *sigs;
	int nsession;
	RtSession *sessions;
	/* Inputs with dims left `?` (spec §4.3 "Inputs"): a generic plan.  Its
	   signatures have feeds (with -1 for unknown dims) and fetches but no
	   keys or edges, and their tasks are those that may take part; each
	   run compiles a specialisation for the shapes it is fed
	   (TfgOptions.specialise, spec/design.md "Unknown dims"). */
	int generic;
	int nvar;
	RtVar *vars;
	/* What runs instead of the sessions (tfgc run --fetch): a digest of
	   the --fetch, --feed and --out options, 0 for the program's own
	   sessions.  A task's PONG carries it, so that a run attached to
	   servers started with other ones (whose clients would run their
	   own) is refused (runtime/launch.c). */
	uint64_t runs;
} TfgPlan;

/* Called by generated code. Return 0 or a tfg_status. */
TFG_API int tfg_rt_recv(struct RtCtx *ctx, uint32_t key, void *dst);
TFG_API int tfg_rt_send(struct RtCtx *ctx, uint32_t key, const void *src);
/* tfg_rt_send of a counted edge (RtEdge.counted, spec/design.md "Counted
 * edges"): only the value's rows before the first negative one of the
 * nids ids go, and the receiver pads the rest. */
TFG_API int tfg_rt_send_rows(struct RtCtx *ctx, uint32_t key,
			     const void *src, const int64_t *ids,
			     int64_t nids);
/* tfg_rt_recv for a value the part only reads: *data gets where it is,
 * dst after a copy or, for a value that stays where it is, unchanged,
 * until the step ends (a feed of the client's own part: the session's
 * tensor), that value's own 64-byte aligned bytes, with no copy. */
TFG_API int tfg_rt_recv_ref(struct RtCtx *ctx, uint32_t key, void *dst,
			    void **data);
/* Variable `var` of the plan (on this task): READ copies its value to
 * dst; ASSIGN, ADD, SUB change it by src (with SCALAR: a scalar src for
 * every element), atomically, and copy the new value to dst (dst NULL:
 * not copied, a value nothing reads; so for the scatters); INITED
 * writes whether it has a value to dst (one bool byte). */
enum {
	TFG_VAR_READ, TFG_VAR_ASSIGN, TFG_VAR_ADD, TFG_VAR_SUB, TFG_VAR_INITED,
	TFG_VAR_DRAW, /* dst (i64) = the count, then count + 1; without a
			 task server (tfg_aot_run) always 0 */
	TFG_VAR_SCATTER_ADD, TFG_VAR_SCATTER_SET, /* tfg_rt_scatter's */
	TFG_VAR_GATHER,
	/* a value in the variable's storage (spec/design.md "Values in a
	   variable's storage"): HOLD_READ and HOLD_WRITE (which makes the
	   storage if there is none) take the variable's lock and write
	   its storage's address to dst (a void *); PUT lets it go, after
	   a HOLD_WRITE with src the value (copied in unless src is the
	   storage), which the variable then has.  One at a time per part,
	   on the part's thread; a part that fails holding one leaves it
	   to rt_vars_drop. */
	TFG_VAR_HOLD_READ, TFG_VAR_HOLD_WRITE, TFG_VAR_PUT,
	TFG_VAR_SCALAR = 0x100,
	TFG_VAR_DROP = 0x200 /* scatter: an id of -1 is no row */
};
TFG_API int tfg_rt_var(struct RtCtx *ctx, uint32_t var, uint32_t op,
		       const void *src, void *dst);
/* scatter_add / scatter_update (op TFG_VAR_SCATTER_*, maybe with
 * TFG_VAR_DROP): rows ids[0..n) of variable var plus (or set to) the n
 * rows at rows, in order, atomically; the new value to dst.  An id
 * outside the variable's rows fails the call before anything changes.
 * TFG_VAR_GATHER (OP_gather_var): rows ids[0..n) of the variable to
 * dst, read at once (rows NULL; with TFG_VAR_DROP, -1 gives zeros). */
TFG_API int tfg_rt_scatter(struct RtCtx *ctx, uint32_t var, uint32_t op,
			   const int64_t *ids, int64_t n, const void *rows,
			   void *dst);
/* spec §6.26 "minimize and optimizers": an optimizer's update of
 * variable `var` (on this task) by gradient grad (the variable's dtype
 * and shape): kind TFG_OPT_*, its slot variables `slot`, slot + 1, ...
 * (as many as the kind keeps), its f64 hyperparameters hyper (the last:
 * the step's loss; a non-finite one, or gradient, is refused).  Done under
 * the locks of the variable and its slots, so that updates of one
 * variable from several steps never interleave; dst (one bool byte) is
 * set to 1. */
enum {
	TFG_OPT_SGD,      /* v -= lr g                       lr */
	TFG_OPT_MOMENTUM, /* a = m a + g, v -= lr a          lr, m */
	TFG_OPT_ADAM,     /* TF's Adam, t counted per variable:
			     lr, beta1, beta2, epsilon */
	TFG_OPT_ADAGRAD,  /* s += g^2, v -= lr g / sqrt(s)   lr, s0 */
	TFG_OPT_FTRL,     /* TF's FTRL-Proximal (learning rate power
			     -1/2), slots accum and linear: lr, l1, l2, s0
			     (s0, the accumulators' initial value, is
			     the slots' initializer's, unused here) */
	/* or'ed in: gradients are summed until `aggregate` have come from
	   the round the step read, or fewer when fewer replicas are left
	   (hyperparameters: the kind's, then TFG_SYNC_HYPER, then the
	   loss), then their mean is applied; three
	   more slots after the kind's: the sum, its count, the round.
	   dst is 1 when this call made the update, else 0 (a stale
	   gradient, dropped, or one that waited for the others) */
	TFG_OPT_SYNC = 0x100
};
/* With TFG_OPT_SYNC, the hyperparameters after the inner kind's: N
 * (replicas=), M (aggregate=), the round the step read, and the seconds
 * an update waits for its round (timeout=); the loss follows. */
#define TFG_SYNC_HYPER 4

TFG_API int tfg_rt_apply(struct RtCtx *ctx, uint32_t var, uint32_t kind,
			 uint32_t slot, const void *grad, const double *hyper,
			 void *dst);
/* The update of only the rows ids[0..n) of variable var (not sync; an
 * optimizer with a row-wise form: sgd, momentum, lazily as TF1's on
 * IndexedSlices, adagrad, ftrl): rows holds n rows' gradients, each of
 * the variable's dims after the first; duplicate ids add up, a negative
 * id is no row (as in a segment sum), one past the table an error. */
TFG_API int tfg_rt_apply_rows(struct RtCtx *ctx, uint32_t var,
			      uint32_t kind, uint32_t slot,
			      const int64_t *ids, int64_t n, const void *rows,
			      const double *hyper, void *dst);
/* Parts compiled with --check-numerics call it after each float value of
 * a CPU node: TFG_OK, or an error naming `label` when one of the n
 * elements (of dtype TFG_F32 or TFG_F64) is NaN or infinite. */
TFG_API int tfg_rt_check(struct RtCtx *ctx, const void *data, int64_t n,
			 int32_t dtype, const char *label);
/* A checked value (OP_check_range): TFG_OK when the scalar at data (of
 * dtype TFG_F32 or TFG_F64) lies in the interval from lo to hi (closed:
 * bit 0, lo is in it; bit 1, hi is), else an error saying `label` must
 * lie in it and what it is. */
TFG_API int tfg_rt_check_range(struct RtCtx *ctx, const void *data,
			       int32_t dtype, double lo, double hi,
			       int32_t closed, const char *label);
/* Parts compiled for --trace call it around each kernel: mark 2i as
 * kernel i (named by the NUL-terminated name) begins, 2i + 1 as it ends
 * (runtime/trace.h).  Returns 0. */
TFG_API int tfg_rt_mark(struct RtCtx *ctx, uint32_t mark, const void *name);
/* Parts call it before long work (a loop over the pool, a product of
 * at least TFG_LONG_WORK multiply-adds): the sends this thread held back
 * leave first, so that a peer waits for them no longer than the part's
 * short ops (spec/design.md "Held sends"). */
#define TFG_LONG_WORK (1 << 20)
TFG_API void tfg_rt_flush(struct RtCtx *ctx);

/* Multi-core loops (runtime/pool.c, spec/design.md "Kernels").  A
 * kernel runs iterations [b, e) of a loop nest's outermost loop on the
 * buffers bases[] (borrowed).  tfg_rt_parallel runs [0, n) as chunks on
 * the process's threads, the caller's among them, and returns when all
 * are done; the chunks must write disjoint memory.  The pool has N - 1
 * workers, N = $TFG_THREADS or the CPUs this process may run on, made
 * on first use.  One caller at a time: a call made while another runs
 * the loop alone.  Each process has its own pool, so task processes on
 * one machine can ask for more threads than it has cores. */
typedef void (*TfgKernelFn)(void *const *bases, int64_t b, int64_t e);
TFG_API void tfg_rt_parallel(TfgKernelFn k, void *const *bases, int64_t n);
/* Threads tfg_rt_parallel uses from now on (n >= 1; 1: only the
 * caller).  Before the first parallel loop this also sizes the pool;
 * later it is capped at the pool's size.  Returns the number in use. */
TFG_API int tfg_set_threads(int n);
/* c = alpha op(a) op(b) + beta c for row-major f32 or f64 (dtype
 * TFG_F32 or TFG_F64) matrices: op(a) is m x k, op(b) k x n; bit 0 of
 * trans transposes a (stored k x m), bit 1 b (stored n x k); lda, ldb
 * and ldc are the stored row lengths.  A large product is cut into one
 * block of rows (or of columns) per thread of the pool, each computed
 * by OpenBLAS on its thread (runtime/gemm.c); OpenBLAS's own threads
 * are not used.  Generated parts call it for large float matmuls, so an
 * object that does links -lopenblas too. */
TFG_API void tfg_rt_gemm(int32_t dtype, int32_t trans, int64_t m, int64_t n,
			 int64_t k, double alpha, const void *a, int64_t lda,
			 const void *b, int64_t ldb, double beta, void *c,
			 int64_t ldc);

/* A convolution (runtime/conv.c,
 * spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose") of an NHWC input [n, h, w, c] by a filter
 * [kh, kw, c, o] into [n, oh, ow, o]; depthwise: the filter is
 * [kh, kw, c, o] with o the channel multiplier, the output has c * o
 * channels, channel ci * o + j from input channel ci alone.  Output row
 * y reads input rows y * sh - pt + i * dh, i in [0, kh); columns the
 * same with sw, pl, dw. */
typedef struct TfgConv {
	int64_t n, h, w, c, kh, kw, o, oh, ow;
	int64_t sh, sw, dh, dw, pt, pl;
	int64_t depthwise;
} TfgConv;
enum {
	TFG_CONV_FORWARD, /* out = conv(a: input, b: filter) */
	TFG_CONV_INPUT,   /* out = d input from a: d output, b: filter */
	TFG_CONV_FILTER   /* out = d filter from a: input, b: d output */
};
enum {
	TFG_POOL_MAX = 8,  /* out = max_pool(a: input) */
	TFG_POOL_AVG,      /* out = avg_pool(a: input) */
	TFG_POOL_MAX_GRAD, /* out = d input from a: input, b: d output */
	TFG_POOL_AVG_GRAD  /* out = d input from a: d output */
};
/* A pool (spec §6.33 "max_pool, avg_pool") of the windows kh x kw of g
 * (o = c, dh = dw = 1, depthwise 0): max (i32, i64, f32, f64; a NaN in
 * a window is its maximum) and avg (f32, f64: the sum of the window's
 * elements inside the input over their number), and their input's
 * gradients, which go to the window's first maximum in row-major order
 * or are spread over the window's elements inside the input.  Over the
 * kernel pool; the result does not depend on the number of threads. */
TFG_API void tfg_rt_pool2d(int32_t kind, int32_t dtype, const TfgConv *g,
			   const void *a, const void *b, void *out);
/* out (f32 or f64, as a and b) = the convolution `kind` of g, over the
 * kernel pool; the result does not depend on the number of threads.
 * Generated parts call it for OP_conv2d and its gradients. */
TFG_API void tfg_rt_conv2d(int32_t kind, int32_t dtype, const TfgConv *g,
			   const void *a, const void *b, void *out);

/* Rows by index (runtime/gather.c, spec §6.36 "gather, embedding_lookup"):
 * params is [outer, n, row bytes], idx nidx indices of idx_dtype
 * (TFG_I32 or TFG_I64), out [outer, nidx, row bytes]: out[a, i] =
 * params[a, idx[i]].  An index outside [0, n) fails the step (an error
 * naming label, the index and its element) before anything is written;
 * with TFG_GATHER_DROP or'ed into idx_dtype, -1 is allowed and picks a
 * row of zeros (a partitioned table's shard, for the others' ids).
 * Generated parts call it for OP_gather. */
enum { TFG_GATHER_DROP = 0x100 };
/* TFG_OK, or the error tfg_rt_gather gives when one of the nidx indices
 * at idx is outside [0, n): the ids of a gather of a partitioned table
 * are checked against the whole table so (OP_check_range). */
TFG_API int tfg_rt_check_index(struct RtCtx *ctx, const void *idx,
			       int32_t idx_dtype, int64_t nidx, int64_t n,
			       const char *label);
/* TFG_OK, or an error naming label when one of the nidx segment ids at
 * idx is outside [0, n) or below the one before it (segment_sum's,
 * spec §6.37 "Segment reductions"). */
TFG_API int tfg_rt_check_sorted(struct RtCtx *ctx, const void *idx,
				int32_t idx_dtype, int64_t nidx, int64_t n,
				const char *label);
TFG_API int tfg_rt_gather(struct RtCtx *ctx, const void *params,
			  const void *idx, int32_t idx_dtype, void *out,
			  int64_t outer, int64_t n, int64_t nidx, int64_t row,
			  const char *label);
/* The route of a partitioned table's gather to shard k of nshards
 * (OP_shard_ids, compiler/shards.c; spec §4.4.1 "Partitioned variables"):
 * the table has `rows` rows, shard k those of its rows r with r %
 * nshards == k, at r / nshards (mod), or else a contiguous run of them,
 * the first rows % nshards shards one row longer; ids are nidx of
 * idx_dtype, each in [0, rows) (checked before).  out[0..nidx): the
 * shard's distinct rows among the ids, ascending, as the shard's own
 * rows, then -1 (what travels to the shard: a prefix, spec/design.md
 * "Counted edges"); out[nidx..2 nidx): each id's place among them, or -1
 * for another shard's id. */
TFG_API int tfg_rt_shard_ids(struct RtCtx *ctx, const void *idx,
			     int32_t idx_dtype, int64_t nidx, int64_t k,
			     int64_t nshards, int64_t rows, int32_t mod,
			     int64_t *out);
enum { TFG_SEGMENT_SUM, TFG_SEGMENT_MAX };
/* Rows summed by index (spec §6.37 "Segment reductions"): data is
 * [outer, nids, inner] of dtype (f32, f64, i32, i64), ids nids segment
 * ids, out [outer, nseg, inner]: out[a, j] = the sum (TFG_SEGMENT_SUM;
 * zeros if none) or the maximum (TFG_SEGMENT_MAX; the dtype's lowest
 * value if none, a NaN wins) of the rows data[a, i] with ids[i] == j, in
 * order of i.  A negative id drops its row; one of nseg or more fails
 * the step before anything is written. */
TFG_API int tfg_rt_segment(struct RtCtx *ctx, int32_t kind, int32_t dtype,
			   const void *data, const void *ids,
			   int32_t id_dtype, void *out, int64_t outer,
			   int64_t nids, int64_t nseg, int64_t inner,
			   const char *label);

/* --------------------------- GPUs (runtime/gpu.c, spec/design.md "GPUs") */

/* libcuda is loaded with dlopen at first use, so nothing here needs a
 * driver until a part has GPU nodes.  A program's gpu:N is device
 * N % count on its own stream N (two indices on one device run
 * concurrently, as far as the device allows). */
#define TFG_MAX_GPUS 8

typedef struct TfgGpuInfo {
	int count;          /* usable devices; 0 with why set when none */
	int driver;         /* cuDriverGetVersion, e.g. 13000; 0 if none */
	int cc[TFG_MAX_GPUS];      /* compute capability, e.g. 90 */
	char name[TFG_MAX_GPUS][96];
	uint64_t mem[TFG_MAX_GPUS]; /* bytes */
	char why[320];      /* count 0: what was looked for, what was found */
} TfgGpuInfo;
/* Fills *out (once per process; later calls copy the first answer).
 * $TFG_NO_GPU=1 makes it report none ("TFG_NO_GPU is set").
 * Returns out->count. */
TFG_API int tfg_gpu_probe(TfgGpuInfo *out);

/* A task module's GPU code, a constant in the generated module
 * (codegen/cuda.c): PTX and the names of its entries.  The runtime loads
 * it on each device at first use, keyed by its address. */
typedef struct TfgGpuModule {
	uint64_t hash;               /* of the PTX */
	const char *ptx;             /* NUL-terminated */
	uint32_t nkernel;
	const char *const *kernel;   /* entry names */
	uint32_t nglobal;
	const char *const *global;   /* __device__ variables (constants) */
} TfgGpuModule;

/* A product that cuBLAS may compute (runtime/gpu.c): row-major
 * C[m, n] = A[m, k] B[k, n], batch times, each operand `stride`
 * elements after the last (0: the same one for every product). */
typedef struct TfgGpuGemm {
	uint32_t dtype;      /* TFG_F32 or TFG_F64 */
	uint32_t tf32;       /* f32: TF32 tensor cores allowed */
	int64_t m, n, k, batch;
	int64_t stride_a, stride_b, stride_c;
} TfgGpuGemm;

/* Where tfg_rt_gpu_copy's buffers are: host memory, or gpu:N as 1 + N. */
#define TFG_DEV_HOST 0u

/* Called by generated code; each returns 0 or a tfg_status with the
 * step's error set.  tfg_rt_gpu_arena: the step's device arena of
 * gpu:N, at least size bytes, 256-byte aligned, taken from the
 * process's free arenas (or allocated) on the first call of the step and
 * given back when the step's part returns (rt_gpu_step_end).
 * tfg_rt_gpu_launch: kernel `kernel` of module m on gpu:N's stream;
 * dims: grid x y z, block x y z, dynamic shared bytes; args: as
 * cuLaunchKernel's kernelParams (a pointer to each parameter).
 * tfg_rt_gpu_global: the device address of m's global `global` on
 * gpu:N.  tfg_rt_gpu_copy: n bytes between host and device, or device
 * and device; it returns when dst may be read by the host (to host),
 * or when src may be changed (from host); device work is ordered on the
 * streams of the GPUs involved. */
TFG_API int tfg_rt_gpu_arena(struct RtCtx *ctx, uint32_t gpu, uint64_t size,
			     void **base);
TFG_API int tfg_rt_gpu_launch(struct RtCtx *ctx, const TfgGpuModule *m,
			      uint32_t gpu, uint32_t kernel,
			      const uint32_t *dims, void **args);
TFG_API int tfg_rt_gpu_global(struct RtCtx *ctx, const TfgGpuModule *m,
			      uint32_t gpu, uint32_t global, void **dptr);
TFG_API int tfg_rt_gpu_copy(struct RtCtx *ctx, uint32_t dst_dev, void *dst,
			    uint32_t src_dev, const void *src, uint64_t n);
/* g computed by cuBLAS on gpu:N's stream: 0; -1 when this process has no
 * cuBLAS (libcublas is loaded with dlopen at the first call;
 * $TFG_CUBLAS=0: never), and the caller launches its own kernel; else a
 * tfg_status with the step's error set. */
TFG_API int tfg_rt_gpu_gemm(struct RtCtx *ctx, uint32_t gpu,
			    const TfgGpuGemm *g, void *c, const void *a,
			    const void *b);

/* ---------------- ahead-of-time parts (§10.3 "Ahead-of-time compilation") */

/* `tfgc compile` writes an object with a task's part functions and a C
 * header (OUT.h) whose wrappers run a part with the caller's buffers
 * through tfg_aot_run.  The header repeats this block, under the same
 * guard, so that it needs no tfg header. */
#ifndef TFG_AOT_SIG_DEFINED
#define TFG_AOT_SIG_DEFINED
struct RtCtx;
/* A feed or fetch of a signature: its rendezvous key and size. */
typedef struct TfgAotEdge {
	uint32_t key;
	size_t nbytes; /* dense row-major tensor */
} TfgAotEdge;
/* A signature whose part needs no other task. */
typedef struct TfgAotSig {
	int (*fn)(struct RtCtx *ctx, char *arena); /* PREFIX_part_<s> */
	size_t arena_size;                         /* PREFIX_arena_<s> */
	int nfeed;
	const TfgAotEdge *feeds;
	int nfetch;
	const TfgAotEdge *fetches;
} TfgAotSig;
/* Runs sig's part once in this thread, without sockets: a receive of a
 * feed's key copies from feeds[i] (borrowed), a send of a fetch's key
 * copies into fetches[i] (borrowed).  Returns 0 or a tfg_status. */
TFG_API int tfg_aot_run(const TfgAotSig *sig, const void *const *feeds,
			void *const *fetches);
#endif

/* A part's table: what `tfgc compile` puts in every object as
 * PREFIX_parts, and `--shared` exports as `tfg_parts` too, for
 * `tfgc server --part` and for an AOT task server (tfg_serve_part). */
#define TFG_PART_MAGIC 0x54524150u /* "PART" */
#define TFG_PART_VERSION 2 /* 2: with the plan's image */

typedef struct TfgPartEntry {
	RtPartFn fn;         /* NULL: the task has no part in this signature */
	uint64_t arena_size;
} TfgPartEntry;

typedef struct TfgPartTable {
	uint32_t magic, version;
	uint64_t hash;          /* TfgPlan.hash of the program compiled */
	uint64_t digest;        /* tfg_plan_digest of its plan */
	int32_t task, nsig;     /* task index; entries */
	const char *task_name;  /* "/job:local/task:1" */
	const TfgPartEntry *sigs; /* [nsig] */
	const unsigned char *plan; /* the plan's image (tfg_plan_image) */
	uint64_t plan_size;
} TfgPartTable;

/* Covers what compiled parts depend on beyond the source: the edges (keys,
 * ends, dtypes, shapes) and the run signatures. */
TFG_API uint64_t tfg_plan_digest(const TfgPlan *plan);

typedef struct TfgPartLib TfgPartLib;
/* Loads a shared object made by `tfgc compile --shared`, checks that it
 * was compiled from this plan's program, for `task` and the same
 * signatures, and fills parts[0..plan->nsig).  *out (owned) keeps it
 * loaded until tfg_part_close. */
TFG_API tfg_status tfg_part_load(TfgPartLib **out, const char *path,
				 const TfgPlan *plan, int task, RtPart *parts,
				 TfgError *e);
TFG_API void tfg_part_close(TfgPartLib *lib); /* accepts NULL */

/* The whole plan as bytes, sessions and constants included
 * (runtime/planimg.c): what a part's table carries, so that an AOT task
 * server needs no program file.  *out (owned, free()) gets *n bytes. */
TFG_API tfg_status tfg_plan_image(const TfgPlan *plan, unsigned char **out,
				  size_t *n, TfgError *e);
/* The plan of an image, checked (TFG_EFORMAT names what is damaged);
 * *out is owned: tfg_plan_free. */
TFG_API tfg_status tfg_plan_read(TfgPlan **out, const void *img, size_t n,
				 TfgError *e);
TFG_API void tfg_plan_free(TfgPlan *plan); /* accepts NULL */

/* An AOT task server (spec §10.3 "Ahead-of-time compilation",
 * runtime/serve.c): serves the task whose part `parts` is (an object's
 * PREFIX_parts) as `tfgc server FILE --part` would, with the plan the
 * table carries, no program file and no compiler.  argv takes
 * tfgc server's options: --job J --task T (or a launcher's rank),
 * --addr, --chief, --cluster-key, --tls-*, the timeouts, --restore,
 * --trace, --verbose.  Returns the exit code for main (2: a usage
 * error). */
#ifndef TFG_SERVE_PART_DEFINED
#define TFG_SERVE_PART_DEFINED
struct TfgPartTable;
TFG_API int tfg_serve_part(int argc, char **argv,
			   const struct TfgPartTable *parts);
#endif

/* ------------------------------------------------------------- processes */

/* The compiler, handed to a task server: fills parts[0..plan->nsig) for
 * `task` (parts[i].fn NULL where the task has no part).  Returns 0, or
 * non-zero after writing diagnostics to stderr. */
typedef int (*TfgCompileFn)(void *cookie, const TfgPlan *plan, int task,
			    RtPart *parts);

/* The compiler again, for a generic plan: compiles signature `sig` of
 * `plan` for the concrete shapes of its feeds (feeds[i] for
 * plan->sigs[sig].feeds[i]).  *out gets the specialised plan (the same
 * tasks, sessions and signatures, with only `sig` compiled; it lives until
 * it is released, or the process exits) and parts[0..(*out)->nsig) this
 * task's parts in it.  Returns 0, or non-zero with e set (diagnostics
 * also go to stderr). */
typedef int (*TfgSpecialiseFn)(void *cookie, const TfgPlan *plan, int sig,
			       const TfgShape *feeds, int task,
			       const TfgPlan **out, RtPart *parts,
			       TfgError *e);

/* Frees a specialised plan that TfgSpecialiseFn made, and the code of its
 * parts: the runtime evicted it and uses neither again.  Those still held
 * when the process exits are the compiler's to free. */
typedef void (*TfgReleaseFn)(void *cookie, const TfgPlan *plan);

typedef struct TfgOptions {
	double startup_timeout; /* seconds for every task to come up (30) */
	double step_timeout;    /* seconds any wait inside a step may take
				   (0: no limit: heartbeats tell a dead
				   task from a busy one) */
	double heartbeat_timeout; /* seconds of silence after which a task
				     is taken for dead (1.5) */
	const char *restore_dir; /* tfgc server --restore: the task's
				    variables from this checkpoint */
	const char *cluster_key; /* --cluster-key FILE (NULL: the file
				    TFG_CLUSTER_KEY names, or none) */
	const char *tls_cert, *tls_key, *tls_ca; /* --tls-*: TLS on every
				    connection (PEM files) */
	int no_shm;             /* --no-shm: tasks of one host talk over
				   TCP (spec/design.md "Shared memory") */
	int stats;              /* tfgc run --stats: each link's messages
				   and bytes at the end (spec/design.md
				   "Link counts") */
	const char *trace_file; /* tfgc run --trace FILE: the run's trace
				   goes there; tfgc server --trace: the
				   task records one ("-": for the
				   controller that collects it) */
	const char *controller_addr; /* where the controller listens for
					replies: "127.0.0.1:0" by default,
					which only tasks on its machine
					reach */
	int verbose;            /* log messages and steps to stderr */
	int no_progress;        /* tfgc run --no-progress: progress() shows
				   nothing */
	double progress_every;  /* --progress-every S: seconds between plain
				   progress lines when stdout is not a
				   terminal (0: epochs' ends only; < 0: the
				   default, 5) */
	int picked_ports;       /* tfgc run --free-ports picked the tasks'
				   ports just before starting them: a task
				   whose port another process took meanwhile
				   exits with TFG_EXIT_PORT_TAKEN, silently,
				   and tfg_launch returns that */
	int from_run;           /* started by tfgc run: 1 on the cluster's
				   own ports (one in use suggests
				   --free-ports), 2 on ports --free-ports
				   picked; 0: tfgc server (one in use
				   suggests --addr) */
	uint64_t run;           /* the run these processes belong to: tfgc
				   run's random identity for the controller
				   and the servers it starts, 0 for servers
				   started to be attached to (tfgc server)
				   and their controllers.  Every message
				   carries it (spec/design.md "Runs"), and
				   a process refuses another run's */
	TfgSpecialiseFn specialise; /* servers of a generic plan; NULL: such
				       a plan cannot run */
	TfgReleaseFn release;   /* frees what specialise made; NULL: kept
				   until exit */
	void *specialise_cookie; /* for both */
	int max_specs;          /* specialisations kept per client task, the
				   least recently used evicted (64 if 0) */
	/* A server started by a launcher or cluster manager (mpirun, srun,
	   TF_CONFIG: spec/design.md "Launchers"), whose run one task, the
	   chief, drives.  0: a server that serves until SHUTDOWN. */
	int launched;
	int chief;              /* launched: the chief's task */
	char *const *controller_argv; /* launched, on the chief: the
				   controller (`tfgc run --attach --stop`,
				   argv[0] the executable) to fork and exec
				   once this server listens and has compiled.
				   The server stops when it exits, and exits
				   with its status.  The others stop with an
				   error when no controller pinged them
				   within twice startup_timeout of their
				   start, or when the chief's process has
				   been gone for startup_timeout */
} TfgOptions;

/* Serves `task` until a SHUTDOWN message: listens on its address, compiles
 * its part through `compile`, runs steps and sessions.  Returns the exit
 * code for the process (0 after a clean shutdown). */
TFG_API int tfg_server_main(const TfgPlan *plan, int task,
			    const TfgOptions *opt, TfgCompileFn compile,
			    void *cookie);

/* The exit code of a server whose port was taken under
 * TfgOptions.picked_ports, and then tfg_launch's result before any session
 * ran, so that tfgc run picks the ports again (75 is sysexits.h's
 * EX_TEMPFAIL). */
#define TFG_EXIT_PORT_TAKEN 75
/* The exit code of a server that tfgc run started on the cluster's own
 * ports (TfgOptions.from_run 1) whose port is in use: silently, since
 * tfgc run says who holds it (another run of the program, a server for
 * attaching, or another process). */
#define TFG_EXIT_PORT_HELD 76

/* tfgc run: starts `tfgc server` for every task (fork + exec of argv0 with
 * server_args followed by "--job J --task T"), waits until all are up,
 * runs every session in order (its output comes back and is written to
 * stdout), stops all tasks.  mode: 0, or TFG_LAUNCH_ATTACH to start
 * nothing and use servers already running (and leave them running), with
 * TFG_LAUNCH_STOP to stop them at the end however the run went (those
 * that came up).  Returns the process exit code. */
enum { TFG_LAUNCH_ATTACH = 1, TFG_LAUNCH_STOP = 2 };
TFG_API int tfg_launch(const TfgPlan *plan, const TfgOptions *opt,
		       const char *argv0, char *const *server_args,
		       int mode);

/* tfgc stop: asks every task of the plan to shut down. */
TFG_API int tfg_stop(const TfgPlan *plan, const TfgOptions *opt);

#endif /* TFG_RUNTIME_TFG_H */
