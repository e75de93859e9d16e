/*
 * compiler/compiler.h: the graph IR and the phases that build, place and
 * partition it, run in compiler/passes.def's order by compile_file
 * (compiler/pipeline.c).
 *
 *   check      AST -> IrGraph: names, dtypes, shapes, requested devices,
 *              and the session programs' run signatures
 *   grad       each grad(y, x) becomes its backward graph (autodiff.c)
 *   place      every node gets a complete device and a task
 *   specialise a specialisation pruned to its signature, or a generic
 *              plan made and compilation stopped (`?` dims)
 *   fold       nodes of constants become constants (pass_fold.c)
 *   cse        identical nodes merge (pass_cse.c)
 *   dce        nodes no fetch needs go (pass_dce.c)
 *   partition  per run signature: prune to what the fetches need, cut per
 *              task, add send/recv pairs with rendezvous keys -> IrPart
 *   fuse       per part: elementwise chains become one OP_fused node, or
 *              the input expression of a reduction (pass_fuse.c)
 *   plan       the TfgPlan the runtime executes
 *
 * All of it lives in Program.arena.
 */
#ifndef TFG_COMPILER_COMPILER_H
#define TFG_COMPILER_COMPILER_H

#include "lang/lang.h"
#include "runtime/tfg.h"

/* --------------------------------------------------------------------- ops */

typedef enum {
#define OP(name, ...) OP_##name,
#include "stdlib/ops.def"
	OP__COUNT
} OpKind;

typedef struct OpInfo {
	const char *name;
	int nin, nout;
	int flags;      /* OPF_* from stdlib/ops.def, with OPF_HOST and
			   OPF_DIFF from its gpu and grad columns */
	int attrs;      /* A_*: its static arguments (compiler/attr.c) */
	unsigned types; /* TY_*: a bit per dtype its operands may have */
	int cost;       /* an element's cost in additions (elementwise) */
	int fold;       /* FOLD_*: what constant folding computes */
} OpInfo;
extern const OpInfo op_info[OP__COUNT];

/* The flags ops.def's gpu and grad columns imply.  OP_PROBE(x) is 1 when
 * the token x is cu_host or d_none, 0 for any other name: the
 * preprocessor's probe idiom (OP_PROBE_cu_host expands to two
 * arguments, which moves the 1 into second place). */
#define OP_PROBE_cu_host ~, 1
#define OP_PROBE_d_none  ~, 1
#define OP_SECOND_(a, b, ...) b
#define OP_SECOND(...) OP_SECOND_(__VA_ARGS__)
#define OP_PROBE(x) OP_SECOND(OP_PROBE_##x, 0, ~)
#define OP_FLAGS(flags, grad, gpu)                                      \
	((flags) | (OP_PROBE(gpu) ? OPF_HOST : 0) |                    \
	 (OP_PROBE(grad) ? 0 : OPF_DIFF))

/* Whether op's operands may be of dtype t (ops.def's types column). */
static inline int
op_takes(OpKind op, TfgDtype t)
{
	return (unsigned)t < 32 && (op_info[op].types >> t & 1u);
}

/* ----------------------------------------------------------------- devices */

enum { DEV_UNSET = 0, DEV_CPU, DEV_GPU };

/* A device spec, TF style; each part may be unset. */
typedef struct Device {
	const char *job; /* NULL: unset */
	int task;        /* -1: unset */
	int kind;        /* DEV_UNSET, DEV_CPU, DEV_GPU */
	int index;       /* -1: unset */
} Device;

#define DEVICE_UNSET ((Device){NULL, -1, DEV_UNSET, -1})

/* Parses "/job:J/task:T/cpu:N", "/gpu:N", "/device:CPU:N", any part
 * omitted ("" is all unset).  Returns 0, or -1 with *err set to a message
 * and *err_off to the byte offset in s where the problem starts.
 * Strings in *out are interned in a. */
int dev_parse(Arena *a, Device *out, const char *s, const char **err,
	      int *err_off);
/* outer merged with inner: inner's set fields win, unset ones inherit. */
Device dev_merge(Device outer, Device inner);
/* Where a value lives inside its task: 0 for the host (cpu:0), 1 + N
 * for gpu:N (the runtime's TFG_DEV_HOST numbering, tfg_rt_gpu_copy). */
int dev_slot(Device d);
/* "/job:local/task:1/cpu:0", only the parts that are set. */
char *dev_str(Arena *a, Device d);

/* ---------------------------------------------------------------------- IR */

/* A maker's static arguments (compiler/ops_make.c,
 * spec §6.13 "zeros, ones, fill" to §6.17 "random_uniform, random_normal"), as
 * the node's dtype: f[] for float dtypes, i[] for the others. */
/* OP_check_range's IrMake.i[0]: what the value is, for its message;
 * IR_RANGE_INDEX: an index tensor of a gather (i32 or i64, any shape),
 * each in [0, i[1]); IR_RANGE_SORTED: segment_sum's segment ids (rank
 * 1), each in [0, i[1]) and none below the one before */
enum { IR_RANGE_KEEP_PROB = 1, IR_RANGE_RATE, IR_RANGE_INDEX,
       IR_RANGE_SORTED };

typedef struct IrMake {
	double f[2];     /* fill: value; range: start, delta; one_hot: on,
			    off; random: min, max or mean, stddev */
	int64_t i[2];    /* the same for integer and bool dtypes */
	int axis;        /* one_hot: the output axis that indexes depth */
	uint64_t seed;   /* random_*: the Philox-4x32-10 key */
	uint32_t stream; /* random_*: counter word 2 (0 with seed=) */
	int64_t first;   /* random_*: the counter of element 0 (a shard of
			    a partitioned variable's initializer computes
			    its rows of the whole one's numbers) */
} IrMake;

/* A convolution's geometry (OP_conv2d and its gradients, IrNode.conv;
 * spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose"): output row
 * y reads input rows y * stride[0] - pad[0] + i * dil[0] for i in
 * [0, kh), output column x input columns x * stride[1] - pad[2] +
 * j * dil[1].  pad[] is [top, bottom, left, right], what the checker
 * made of "SAME" (TF's split: the odd row at the bottom, the odd column
 * at the right), "VALID" (0) or explicit paddings for the input's size.
 * depthwise: the filter is [kh, kw, c, m] and output channel c * m + j
 * reads input channel c alone; else it is [kh, kw, c, o] and every
 * output channel reads every input channel.  Pools (OP_max_pool ...) use
 * stride, pad and ksize; their dil is 1. */
typedef struct IrConv {
	int64_t stride[2], dil[2], pad[4];
	int64_t depthwise;
	int64_t ksize[2]; /* pools: the window's height and width (a
			     convolution's is its filter's) */
} IrConv;

/* A fused group's expression (compiler/pass_fuse.c, spec/design.md
 * "Passes"): the member ops in topological order, each computing one
 * element from its operands; the last one is the group's value.  An
 * operand is a member (arg >= 0, always an earlier one), external input k
 * of the node that carries the program (arg == IR_FUSE_IN(k)), or the
 * anchor (IR_FUSE_ANCHOR): the value of the op the program is attached
 * to, for epilogues (a matmul's product element).
 *   OP_fused      the program is the node's value; in[] are its inputs
 *   OP_reduce_*   the program is the reduction's input element (a
 *                 prologue); in[] are the program's external inputs
 *   OP_matmul     an epilogue: the program, over the product's shape and
 *                 of its dtype, is the node's value; in[0], in[1] are the
 *                 product's operands, in[2..] the program's other inputs */
#define IR_FUSE_IN(k) (-1 - (k))
#define IR_FUSE_ANCHOR INT32_MIN
typedef struct IrFuseOp {
	OpKind op;        /* an OPF_ELEMWISE op */
	TfgDtype dtype;   /* the member's result */
	TfgShape shape;   /* the member's shape (<= the group's: broadcast) */
	int nin;
	int32_t arg[3];   /* operands, see above */
	TfgDtype in_dt[3]; /* the operands' dtypes */
	const char *name; /* the member's label, for dumps */
} IrFuseOp;

typedef struct IrFuse {
	int n;            /* members; ops[n-1] is the value */
	IrFuseOp *ops;
	TfgShape shape;   /* the index space it is evaluated over */
} IrFuse;

/* A dim left `?` in an input (spec §4.3 "Inputs") and every dim that depends
 * on it: such a program is checked (rules on unknown dims are deferred to
 * the specialisation, see shape_broadcast) but not compiled to code. */
#define IR_DIM_UNKNOWN (-1)

typedef struct IrNode IrNode;
typedef struct IrVar IrVar;
typedef struct IrShards IrShards;

/* The axes of an OP_slice or an OP_transpose (IrNode.ax). */
typedef struct IrAxes {
	/* OP_slice: per axis of the input; squeeze bit i: axis i indexed by
	   an integer and dropped from the output */
	int64_t begin[TFG_MAX_RANK], size[TFG_MAX_RANK];
	uint32_t squeeze;
	/* OP_transpose: output axis i is input axis perm[i] */
	int perm[TFG_MAX_RANK];
} IrAxes;

enum { IR_DYN_SEEN = 1, IR_DYN_NO, IR_DYN_YES }; /* IrNode.dyn */

/* A node as placement left it (Program.placed). */
typedef struct IrPlaced {
	const char *name; /* or NULL: "_<id>" */
	int id;
	OpKind op;
	Device dev;
	const char *why;
} IrPlaced;

/* An optimizer (spec §6.26 "minimize and optimizers"): which update an
 * OP_apply makes, and the variables it keeps beside the one it updates
 * (slots: momentum's accumulator, Adam's moments and its count), made by
 * minimize, consecutive in Program.vars from slot[0]. */
typedef enum IrOptKind {
	IR_OPT_SGD,      /* v -= lr g;                 hyper: lr */
	IR_OPT_MOMENTUM, /* a = m a + g; v -= lr a;    hyper: lr, m */
	IR_OPT_ADAM,     /* TF's Adam;  hyper: lr, beta1, beta2, epsilon */
	IR_OPT_ADAGRAD,  /* s += g^2; v -= lr g / sqrt(s);
			    hyper: lr, initial_accumulator_value */
	IR_OPT_FTRL,     /* TF's FTRL-Proximal, learning rate power -1/2;
			    hyper: lr, l1, l2, initial_accumulator_value */
	IR_OPT__COUNT
} IrOptKind;

typedef struct IrOpt {
	IrOptKind kind;
	int nslot;
	IrVar *slot[6];
	/* sync(OPT, replicas=N, aggregate=M): N > 0, gradients of M steps
	   (M <= N, fewer when fewer replicas are left) averaged per
	   update; the last three slots are the sum, its count and the
	   number of updates made (the round), and the hyperparameters end
	   with N, M, the round the step read and sync_wait
	   (TFG_SYNC_HYPER) */
	int sync;
	int aggregate;
	double sync_wait;  /* seconds a gradient waits for its round's last
			      (sync's timeout=, 60 by default) */
} IrOpt;

/* A variable (spec §4.4 "Variables"): state on one task that outlives steps.
 * Its nodes (read, updates, initializer, query) all carry it and are placed
 * where it is. */
struct IrVar {
	int index;        /* in Program.vars: the plan's and the runtime's */
	const char *name;
	SrcLoc loc;
	TfgDtype dtype;
	TfgShape shape;   /* every dim known */
	Device req;       /* complete: where it lives */
	const char *why;  /* for --log-device-placement: "round-robin
			     over /job:ps", "device /job:ps/task:0", ... */
	IrNode *read;     /* OP_variable: its value in a step */
	IrNode *init;     /* OP_assign of its initial value */
	IrNode *inited;   /* OP_var_initialized: a bool scalar */
	IrNode *draw;     /* not NULL: a hidden variable, the count of the
			     OP_random_draw node (an i64 scalar from 0) of a
			     random maker, on that node's task */
	IrNode *saved;    /* restore(): the OP_input its value is fed to */
	IrNode *restore;  /* and the OP_assign of it */
	RtShardOf part;   /* a partitioned variable's shard, or its slot */
};

struct IrNode {
	int id;           /* index in IrGraph.nodes (clones keep their origin's) */
	OpKind op;
	TfgDtype dtype;
	TfgShape shape;
	int nin;
	IrNode **in;
	const char *name; /* as assigned, or made up: "_t3" */
	SrcLoc loc;
	int user_named;   /* name comes from an assignment or input */
	Device req;       /* requested by the enclosing device blocks */
	Device dev;       /* placed: complete */
	const char *why;  /* why it asks for req (the checker), then why it
			     is at dev (placement): --log-device-placement */
	int task;         /* placed: task index */
	int weak;         /* literal operand whose dtype follows the other side */
	/* OP_const */
	void *data;       /* ir_nbytes(n) bytes */
	/* TFG_STRING (every node): the value's bytes, its records and text
	   (runtime/tfg.h); static, since every string is a constant that
	   the checker computes (compiler/ops_string.c, spec §5.7 "Strings") */
	size_t strbytes;
	/* OP_slice, OP_transpose: where the output's elements come from
	   (NULL for other ops: kept out of the node, which every op has) */
	const IrAxes *ax;
	/* OP_reduce_*: bit i set: axis i reduced; keepdims */
	uint32_t axes;
	int keepdims;
	/* OP_concat, OP_stack: the axis (of the output) */
	int axis;
	/* OP_gather: an index of -1 picks a row of zeros (a partitioned
	   table's shard, for the ids of the others: compiler/vars.c) */
	int drop;
	/* OP_shard_ids: the shard it routes to */
	const RtShardOf *part;
	/* a value whose rows past a count that only the step knows are
	   padding that no consumer reads (spec/design.md "Counted edges"):
	   the i64 ids, on its task, whose entries before the first negative
	   one count its rows (itself for such ids, padded with -1; else its
	   padding is zeros); a send of it to another task sends only those
	   rows.  NULL for every other value */
	IrNode *count;
	/* OP_send, OP_recv, OP_input (feed), fetch sends */
	uint32_t key;     /* rendezvous edge key */
	int peer;         /* task at the other end */
	IrNode *origin;   /* partition clones: the graph node they stand for */
	const IrMake *make; /* makers (zeros ... random_normal): arguments */
	IrVar *var;       /* variable ops (OPF_STATEFUL): the variable */
	const IrOpt *opt; /* OP_apply: the optimizer */
	const IrConv *conv; /* OP_conv2d and its gradients: the geometry */
	/* OP_matmul of two matrices on a CPU (compiler/pass_fuse.c): bit k
	   set, operand k is read transposed: the node's in[k] is the matrix
	   that a transpose the pass folded in would have swapped */
	int trans;
	/* the checker's: its dims come from a specialisation's feeds
	   (IR_DYN_*, 0 not known yet) */
	int dyn;
	/* a value that takes only its input's type (size, shape,
	   zeros_like, ...) whose dims are a specialisation's: the input,
	   which a generic compile needs to know which feeds make them, is
	   dropped once the sessions are checked (check.c) */
	int type_dep;
	const IrFuse *fuse; /* OP_fused, fused reductions: the expression */
	/* OP_apply of a variable that a gather reads: why its update stays
	   dense (--emit=grad prints it) */
	const char *note;
	/* a partitioned variable's whole value (the checker's) */
	const IrShards *shards;
};

/* A partitioned variable (spec §4.4.1 "Partitioned variables",
 * compiler/shards.c): its shards, each a variable of its rows of axis
 * 0. */
struct IrShards {
	int n;          /* shards, 1 to 64 */
	int mod;        /* strategy="mod": row r in shard r % n at r / n;
			   else "div": contiguous, the first rows % n
			   shards one row longer */
	int64_t rows;   /* the whole's axis 0 */
	IrVar **var;    /* [n] name/part_k */
};

typedef struct IrGraph {
	PtrVec nodes; /* IrNode *, in definition order (a topological order) */
} IrGraph;

/* One task's share of one run signature, in topological order.  Nodes are
 * clones whose inputs point inside the part; cut edges became OP_recv,
 * values needed elsewhere feed OP_send, feeds are OP_input (key: the feed
 * edge), fetches are OP_send to the client. */
typedef struct IrPart {
	int sig, task;
	int n;
	IrNode **nodes;
	int sends;  /* how many OP_send */
} IrPart;

/* A session's run(...) with its fetches and feeds, from one client task;
 * its targets are run for their effect only (initialize()). */
typedef struct IrSig {
	int client;
	int nfetch;
	IrNode **fetch;
	int ntarget;
	IrNode **target;
	int nfeed;
	IrNode **feed; /* OP_input nodes, sorted by id */
	SrcLoc loc;    /* the first run(...) with this signature */
	IrPart *parts; /* [ntask]; parts[t].n == 0: no part on t */
	uint32_t *feed_key;  /* [nfeed]: edge client -> the input's task */
	uint32_t *fetch_key; /* [nfetch]: edge fetched node's task -> client */
} IrSig;

typedef struct CTask {
	const char *job;
	int index;
	const char *addr;
	const char *name; /* "/job:local/task:1" */
	SrcLoc loc;       /* the address string */
} CTask;

typedef struct CJob {
	const char *name;
	int first, ntask; /* tasks[first .. first+ntask) */
	SrcLoc loc;
} CJob;

/* The session statements, lowered to the runtime's form with the AST
 * locations kept for run-time errors. */
typedef struct Program {
	Arena *arena;
	const struct CompileOptions *opt; /* as given to compile_file */
	const SrcFile *src;
	AstNode *ast;
	Diag *diag;
	int njob;
	CJob *jobs;
	int ntask;
	CTask *tasks;
	int implicit;      /* the one task of a program without a cluster
			      (spec §7.1 "The cluster") */
	IrGraph g;
	int nsig;
	IrSig *sigs;
	int nsession;
	RtSession *sessions; /* sigs referenced by index */
	PtrVec edges;        /* RtEdge *, index == key */
	PtrVec vars;         /* IrVar *, index == IrVar.index */
	/* one per node, as placed, before the passes change the graph:
	   --log-device-placement's lines, written when asked for */
	struct IrPlaced *placed;
	int nplaced;
	TfgPlan *plan;
	int nunknown;        /* inputs with dims left `?` after --shape */
	const char *path;    /* as given to compile_file */
	int done;            /* a pass made the program whole early (a
				generic plan): the pipeline stops */
} Program;

/* The phases.  Each returns 0, or the number of errors it reported. */
int check_program(Program *p);
int grad_program(Program *p);
int fold_program(Program *p);
int cse_program(Program *p);
int dce_program(Program *p);
int place_program(Program *p);
int partition_program(Program *p);
int fuse_program(Program *p);
int plan_program(Program *p);
/* The plan of a program with `?` dims left, after placement: tasks,
 * sessions and the signatures' feeds and fetches, no edges or parts
 * (TfgPlan.generic). */
int plan_generic(Program *p);
/* A specialisation: keeps what run signature `sig` needs (it must then
 * have every dim known) and empties the other signatures. */
int prune_to_sig(Program *p, int sig);

/* Dumps, for tfgc emit. */
void dump_placed(FILE *out, const Program *p);      /* --emit=placed */
/* --emit=dot: the placed graph for Graphviz, a box per task, the edges
 * between tasks labelled with their bytes */
void dump_dot(FILE *out, const Program *p);
void dump_placement_log(FILE *out, const Program *p); /* --log-device-placement */
void dump_partition(FILE *out, const Program *p);   /* --emit=partition */
/* --emit=folded|cse|dce: the graph, one node per line, no devices */
void dump_graph(FILE *out, const Program *p);

/* Shape and dtype rules (compiler/shape.c). */
/* NumPy broadcasting of a and b into out; -1 if incompatible.  An
 * unknown dim against 1 or another unknown one gives an unknown dim,
 * against d != 1 gives d (checked in the specialisation). */
int shape_broadcast(TfgShape *out, const TfgShape *a, const TfgShape *b);
/* Bytes of n's value: numel * dtype size, or n->strbytes for strings. */
size_t ir_nbytes(const IrNode *n);
/* The TfgConv (runtime/tfg.h) of a convolution or pool node n (OP_conv2d
 * ... OP_avg_pool_grad), read from the operands in the roles its op
 * gives them and from n->conv: what both backends build their kernels
 * of.  -1 when n's shapes do not have those roles. */
int ir_conv_geometry(const IrNode *n, TfgConv *g);
/* Whether an op may carry an elementwise epilogue (IrNode.fuse, anchored
 * on its value, compiler/pass_fuse.c): matmul, conv2d and the pools and
 * their gradients. */
int ir_takes_epilogue(OpKind op);
/* The attributes of n's op (stdlib/ops.def's attrs column), as bytes put
 * through put(ctx, p, n): the one walk that CSE's equality and hash and
 * codegen's kernel key use (compiler/attr.c). */
typedef void (*IrPut)(void *ctx, const void *p, size_t n);
void ir_attr_write(const IrNode *n, IrPut put, void *ctx);
uint64_t ir_attr_hash(uint64_t h, const IrNode *n); /* FNV-1a from h */
int ir_attr_eq(const IrNode *a, const IrNode *b);   /* same op too */
/* Prints them as the dumps show them: " axis=[0, 2] keepdims". */
void ir_attr_dump(FILE *out, const IrNode *n);
/* Result dtype of a binary op on a and b (weak: literal operands). */
TfgDtype dtype_promote(TfgDtype a, int aweak, TfgDtype b, int bweak);
/* Whether every dim of s is known (no IR_DIM_UNKNOWN). */
int shape_known(const TfgShape *s);

/* The passes of compile_file, in order (compiler/passes.def). */
enum {
#define PASS(id, run, name, emit, skip) PASS_##id,
#include "compiler/passes.def"
#undef PASS
	PASS__N
};

/* The whole front and middle end: read, parse, check, place, partition,
 * plan: the passes of compiler/passes.def in order.  Stops after the
 * first pass with errors.  `until` names the last pass to run (its NAME
 * column; NULL: all). */
typedef struct CompileOptions {
	const char *until;
	int naddr;            /* --addr overrides: "/job:J/task:T=host:port" */
	const char **addr;
	/* tfgc run --fetch: one step replaces the program's sessions: it
	   fetches these names with these feeds ("x=a.npy") and prints the
	   fetches, or writes fetch i to out[i] when outs are given */
	int nfetch, nfeed, nout;
	const char **fetch, **feed, **out;
	/* -fno-NAME: 1u << PASS_<ID> for each pass to skip (only those
	   passes.def marks skippable are) */
	unsigned skip;
	/* --shape x=100,784: the dims of input x, fixing its `?` dims (a
	   specialisation, spec §4.3 "Inputs") */
	int nshape;
	const char **shape;
	/* tfgc check: a program with `?` dims left stops after check
	   instead of being an error */
	int unknown_ok;
	/* run, server: a program with `?` dims left is placed and becomes a
	   generic plan (plan_generic), specialised per run at run time */
	int generic_ok;
	/* A specialisation (spec/design.md "Unknown dims"): 1 + the run
	   signature to compile; the graph is pruned to what it needs right
	   after placement, the other signatures get no parts.  0: none. */
	int spec_sig;
	/* The source, already read (specialisations); NULL: read path */
	const SrcFile *source;
	/* The cluster of --cluster FILE.json or TF_CONFIG (compiler/
	   cluster.c): an AST_CLUSTER, its locations in that JSON, that
	   replaces the program's cluster block; NULL: the program's
	   (spec §10.6 "Launchers and cluster managers").  cluster_from
	   names it in messages ("TF_CONFIG", "'c.json'"). */
	const AstNode *cluster;
	const char *cluster_from;
	/* --prefer-gpu: a device that names no kind is the task's gpu:0 */
	int prefer_gpu;
	/* --param n=8192: a param's value (spec §4.5 "Params") */
	int nparam;
	const char **param;
} CompileOptions;
int compile_file(Program *p, const char *path, const CompileOptions *o,
		 Diag *d);

/* tfgc's command line (compiler/driver.c). */
int tfgc_main(int argc, char **argv);

#endif /* TFG_COMPILER_COMPILER_H */
