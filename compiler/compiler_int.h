/*
 * compiler/compiler_int.h: what the compiler's own files share.
 */
#ifndef TFG_COMPILER_COMPILER_INT_H
#define TFG_COMPILER_COMPILER_INT_H

#include "compiler/compiler.h"

/* ports.c: --free-ports; -1 (reported) when none can be had */
int free_ports(Program *p);

/* plot.c: tfgc plot FILE.csv, its options parsed by the driver; the
 * exit status (spec/language.md §10.7 "Training curves") */
typedef struct PlotArgs {
	const char *file, *out; /* FILE.csv, -o (NULL: FILE.png) */
	const char *x, *y;      /* --x NAME, --y NAME,...; NULL: unset */
	const char *size;       /* --size WxH; NULL: unset */
} PlotArgs;
int plot_main(const PlotArgs *a);

/* help.c: tfgc's commands and options (compiler/help.def), the table
 * the option parser reads and the help and the man page print. */
typedef enum HelpCmdId {
#define CMD(id, ...) CMD_##id,
#include "compiler/help.def"
	CMD__N
} HelpCmdId;
typedef enum HelpOptId {
#define OPT(id, ...) OPT_##id,
#include "compiler/help.def"
} HelpOptId;
enum {
#define OPT(id, ...) + 1
	OPT__N = 0
#include "compiler/help.def"
};
enum { /* HelpOpt.flags */
	OPTF_REPEAT = 1, /* may be given more than once */
	OPTF_PREFIX = 2, /* name is a prefix, arg a skippable pass: -fno-PASS */
	OPTF_HIDDEN = 4, /* tfgc's own: in no help */
	OPTF_GLOBAL = 8  /* handled before the command's options */
};
typedef struct HelpCmd {
	const char *name, *args; /* "run", "[OPTION]... FILE" */
	const char *line, *about, *example;
} HelpCmd;
typedef struct HelpOpt {
	HelpOptId id;
	const char *name, *alias; /* "--verbose", "-v" (or NULL) */
	const char *arg;          /* "N"; NULL: a flag */
	unsigned cmds;            /* bit CMD_<ID>: that command takes it */
	int flags;                /* OPTF_* */
	const char *line;
} HelpOpt;
extern const HelpCmd help_cmds[CMD__N];
extern const HelpOpt help_opts[OPT__N];
/* CMD_<ID> of a command's name, or -1; the command nearest to a name
 * that is none, or NULL (as check_nearest). */
int help_command(const char *name);
const char *help_nearest_command(const char *name);
/* The option that the n bytes at s name (an argument up to its '='),
 * among those of command cmd (-1: of any), or NULL. */
const HelpOpt *help_option(int cmd, const char *s, size_t n);
/* The commands (bit CMD_<ID>) that take such an option: 0 if none. */
unsigned help_option_cmds(const char *s, size_t n);
/* The options of cmd nearest to the n bytes at s, or NULL (as
 * check_nearest). */
const char *help_nearest_option(int cmd, const char *s, size_t n);
/* "tfgc: error: " and the message, then cmd's usage (-1: tfgc's) and
 * where to read more, on stderr; returns 2, a usage error's status. */
int help_usage_error(int cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* tfgc --help; tfgc help CMD and tfgc CMD --help: on f. */
void help_overview(FILE *f);
void help_print(FILE *f, int cmd);
/* tfgc help [COMMAND | --man] (argv[0] is "help"): the exit status. */
int help_main(int argc, char **argv);

/* cluster.c: the cluster and a server's task from a cluster manager
 * (spec/language.md §10.6 "Launchers and cluster managers") */
typedef struct ClusterEnv {
	const AstNode *cluster; /* the jobs of --cluster FILE or TF_CONFIG
				   (CompileOptions.cluster); NULL: none */
	const char *from;       /* where: "'c.json'" or "TF_CONFIG" */
	const Json *task;       /* TF_CONFIG's "task", or NULL */
	const Json *task_type;  /* its "type", a string */
	int task_index;         /* its "index" (0 when left out) */
	/* the launcher whose rank named the task (cluster_task) */
	const char *launcher;   /* "mpirun", "srun", ...; NULL: none */
	const char *rank_var, *size_var; /* "SLURM_PROCID", ... */
	int rank, size;         /* rank -1: no launcher */
	int slurm;              /* srun's rank: hosts from the allocation */
	int all_local;          /* the launcher put every rank on this node */
} ClusterEnv;
/* Reads --cluster FILE (path not NULL) and TF_CONFIG into ce; 0, or 1
 * after reporting through d. */
int cluster_load(ClusterEnv *ce, Arena *ar, const char *path, Diag *d);
/* tfgc server without --job/--task: the index of its task in p, from
 * TF_CONFIG's "task" or the launcher's rank; -1 after reporting, -2 when
 * neither says. */
int cluster_task(ClusterEnv *ce, const Program *p, Diag *d);
/* Tasks with an address without a host (":2222") get one: under srun
 * the node of their rank, else "localhost"; -1 after reporting. */
int cluster_hosts(const ClusterEnv *ce, Program *p);

/* jit.c: the compile callbacks of `tfgc server` (cookie: the Program;
 * for part_load, the --part path), and what they keep, freed at exit */
int jit_compile(void *cookie, const TfgPlan *plan, int task, RtPart *parts);
extern int jit_trace; /* --trace: parts call tfg_rt_mark per kernel */
extern int jit_soft, jit_tf32; /* --soft-placement, --gpu-tf32 */
extern int jit_check; /* --check-numerics */
int jit_specialise(void *cookie, const TfgPlan *plan, int sig,
		   const TfgShape *feeds, int task, const TfgPlan **out,
		   RtPart *parts, TfgError *e);
void jit_release(void *cookie, const TfgPlan *plan);
int part_load(void *cookie, const TfgPlan *plan, int task, RtPart *parts);
int part_preload(const char *path, const TfgPlan *plan, int task);
void jit_free_all(void);

/* pipeline.c: the pass table (compiler/passes.def) */
int pass_lookup(const char *name);  /* PASS_<ID> of a NAME, or -1 */
const char *pass_name(int pass);
int pass_skippable(int pass);       /* -fno-NAME allowed */
int pass_of_emit(const char *mode); /* the pass --emit=MODE stops after */
/* An error for each input with `?` dims left, naming --shape after
 * `what` ("give its shape with"); the number reported. */
int unknown_dims(Program *p, Diag *d, const char *what);

/* build.c: the IR builders.  Each makes a node of its op in p's graph,
 * its dtype and shape inferred, or reports at loc and returns NULL; the
 * inputs are of the dtypes the op takes (promoted, cast). */
IrNode *ir_binary(Program *p, SrcLoc loc, OpKind op, IrNode *a, IrNode *b);
IrNode *ir_where(Program *p, SrcLoc loc, IrNode *c, IrNode *a, IrNode *b);
IrNode *ir_unary(Program *p, SrcLoc loc, OpKind op, IrNode *x);
IrNode *ir_cast(Program *p, SrcLoc loc, IrNode *x, TfgDtype t);
/* reduce_* and argmax/argmin: a bit per input axis reduced (arg*: one) */
IrNode *ir_reduce(Program *p, SrcLoc loc, OpKind op, IrNode *x,
		  uint32_t axes, int keepdims);
IrNode *ir_softmax(Program *p, SrcLoc loc, OpKind op, IrNode *x);
/* softmax_cross_entropy: logits x and labels l of one float dtype and
   shape, rank >= 1; x's shape without its last axis */
IrNode *ir_xent(Program *p, SrcLoc loc, IrNode *x, IrNode *l);
IrNode *ir_matmul(Program *p, SrcLoc loc, IrNode *a, IrNode *b);
/* perm: input axis of each output axis; NULL reverses them */
IrNode *ir_transpose(Program *p, SrcLoc loc, IrNode *x, const int *perm);
IrNode *ir_reshape(Program *p, SrcLoc loc, IrNode *x, const TfgShape *s);
/* per input axis; squeeze bit i: axis i (size 1) is dropped */
IrNode *ir_slice(Program *p, SrcLoc loc, IrNode *x, const int64_t *begin,
		 const int64_t *size, uint32_t squeeze);
IrNode *ir_concat(Program *p, SrcLoc loc, IrNode **in, int nin, int axis);
/* OP_check_range: x (a float scalar), checked at run time to lie in
 * [lo or (lo, hi] or hi) as closed says (bit 0: lo in it, bit 1: hi);
 * what: IR_RANGE_* (compiler/compiler.h), the message's words; with
 * IR_RANGE_INDEX, x is indices (i32 or i64), each checked in [0, hi), and
 * closed is the OpKind they feed (its name is in the message) */
IrNode *ir_check_range(Program *p, SrcLoc loc, IrNode *x, double lo,
		       double hi, int closed, int what);
/* OP_conv2d (a the input, b the filter; out NULL),
 * OP_conv2d_backprop_input (a the output's gradient, b the filter, out
 * the input's shape) or OP_conv2d_backprop_filter (a the input, b the
 * output's gradient, out the filter's shape), of geometry *cv (kept) */
IrNode *ir_conv(Program *p, SrcLoc loc, OpKind op, IrNode *a, IrNode *b,
		const IrConv *cv, const TfgShape *out);
/* OP_max_pool and OP_avg_pool (a the input; b and out NULL),
 * OP_max_pool_grad (a the input, b the output's gradient, out the
 * input's shape) and OP_avg_pool_grad (a the output's gradient, b NULL,
 * out the input's shape), windows of cv->ksize (kept) */
IrNode *ir_pool(Program *p, SrcLoc loc, OpKind op, IrNode *a, IrNode *b,
		const IrConv *cv, const TfgShape *out);
/* The output shape of a convolution of an input of shape x by a filter
 * of shape f (unknown dims stay unknown); -1 when they do not fit. */
int ir_conv_shape(const TfgShape *x, const TfgShape *f, const IrConv *cv,
		  TfgShape *y);
IrNode *ir_stack(Program *p, SrcLoc loc, IrNode **in, int nin, int axis);
/* spec §6.36 "gather, embedding_lookup", §6.37 "Segment reductions" */
IrNode *ir_gather(Program *p, SrcLoc loc, IrNode *x, IrNode *idx, int axis);
IrNode *ir_shard_ids(Program *p, SrcLoc loc, IrNode *ids,
		     const RtShardOf *part);
IrNode *ir_segment(Program *p, SrcLoc loc, OpKind op, IrNode *data,
		   IrNode *ids, int64_t nseg, int axis);
/* OP_grad: the gradient of y (a float scalar) with respect to x (a float
 * tensor), of x's dtype and shape, until compiler/autodiff.c expands it */
IrNode *ir_grad(Program *p, SrcLoc loc, IrNode *y, IrNode *x);
/* OP_const: data holds the value (strings: strbytes, compiler/
 * ops_string.c); OP_input, named (name NULL: the caller names it) */
IrNode *ir_const(Program *p, SrcLoc loc, TfgDtype t, const TfgShape *s,
		 void *data, size_t strbytes);
IrNode *ir_input(Program *p, SrcLoc loc, const char *name, TfgDtype t,
		 const TfgShape *s);
/* The makers (zeros ... random_normal): dtype, shape and arguments; in[]:
 * fill's scalar value, one_hot's indices, a random maker's draw count */
IrNode *ir_make(Program *p, SrcLoc loc, OpKind op, TfgDtype t,
		const TfgShape *s, const IrMake *m, IrNode **in, int nin);
/* Variable ops: a read (OP_variable), an update of x (assign*: v's dtype,
 * its shape or a scalar), OP_var_initialized, OP_random_draw (v may be
 * NULL and given after, as the draw makes its hidden variable) */
IrNode *ir_var(Program *p, SrcLoc loc, OpKind op, IrVar *v, IrNode *x);
/* OP_scatter_add or OP_scatter_update of v's rows ids (i64[n]) by rows
 * ([n] + v's dims after the first): v's new value; placed with v */
IrNode *ir_scatter(Program *p, SrcLoc loc, OpKind op, IrVar *v, IrNode *ids,
		   IrNode *rows);
/* OP_apply: o's update of v by gradient g (v's dtype and shape) with the
 * hyperparameters h (f64[k], k as o's kind wants), a bool scalar; placed
 * with v */
IrNode *ir_apply(Program *p, SrcLoc loc, IrVar *v, const IrOpt *o,
		 IrNode *g, IrNode *h);
/* OP_apply u becomes an OP_apply_rows in place: the update of only the
 * rows ids (i64[n]) of its variable by rows ([n] + the variable's dims
 * after the first); 0, or -1 reported */
int ir_set_rows(Program *p, IrNode *u, IrNode *rows, IrNode *ids);
/* OP_gather g, of variable v's read on axis 0 by i64 ids of rank 1,
 * becomes an OP_gather_var in place, reading the rows from v (its one
 * input the ids); 0, or -1 reported */
int ir_set_gather_var(Program *p, IrNode *g, IrVar *v);
/* OP_after: in[0]'s value once in[1..nin) are computed */
IrNode *ir_after(Program *p, SrcLoc loc, IrNode **in, int nin);
/* The number of f64 hyperparameters of an optimizer kind, and of o (an
 * OP_apply's in[1]: sync adds two, and the step's loss comes last) */
int ir_opt_nhyper(IrOptKind k);
int ir_opt_nhyper_of(const IrOpt *o);
/* A part's end of an edge for graph node x (partition): an OP_send of
 * in, or an OP_recv (in NULL); not in the graph, the id x's. */
IrNode *ir_comm(Program *p, const IrNode *x, IrNode *in, uint32_t key,
		int peer);
/* The value `in` (of graph node x, in a part) moved to device `to` of
 * the same task: an OP_copy (partition); not in the graph, the id x's. */
IrNode *ir_copy(Program *p, const IrNode *x, IrNode *in, Device to);
/* x, whose value the caller computed into x->data (strings: and
 * strbytes), becomes that OP_const in place (name, id, device kept; no
 * inputs or other attributes); 0, or -1 reported (stateful ops never) */
int ir_set_const(Program *p, IrNode *x);
/* x becomes an OP_reshape of v (of x's dtype and number of elements) in
 * place, name, id and device kept: a view of v under x's name (the grad
 * pass turns each OP_grad into one of its result); 0, or -1 reported
 * (stateful ops never) */
int ir_set_alias(Program *p, IrNode *x, IrNode *v);
/* Makes x (in a part) op OP_fused, OP_matmul with an epilogue or a
 * reduction with a prologue, computing f over in[]; 0, or -1 reported. */
int ir_set_fuse(Program *p, IrNode *x, OpKind op, const IrFuse *f,
		IrNode **in, int nin);

/* ir.c */
IrNode *ir_node_new(Program *p, OpKind op, int nin, SrcLoc loc);
IrNode *ir_clone(Arena *a, const IrNode *n);
/* What the na nodes a[] and the nb nodes b[] (either list may be empty)
 * depend on, themselves included: a flag per node id of p's graph
 * (p->g.nodes.n + 1 bytes in p's arena).  The one reachability walk:
 * partitioning, plans and sessions use it. */
char *ir_reach(Program *p, IrNode *const *a, int na, IrNode *const *b,
	       int nb);
/* The same from the nodes in roots, which it empties. */
char *ir_reach_vec(Program *p, PtrVec *roots);
const char *ir_node_label(const IrNode *n); /* name or "_<id>" */
/* Writes a const node's scalar or small tensor value, NumPy style, into
 * the arena ("2", "[1. 2.]"); long tensors are abbreviated. */
char *ir_const_str(Arena *a, const IrNode *n);
char *ir_type_str(Arena *a, TfgDtype t, const TfgShape *s); /* "f32[100]" */
/* FNV-1a over n bytes, continuing from h (start: IR_FNV_BASIS): the
 * plan hash and CSE's node hash. */
#define IR_FNV_BASIS 0xcbf29ce484222325ull
uint64_t ir_fnv(uint64_t h, const void *p, size_t n);

/* device.c: the task a complete device names, or -1. */
int dev_task_index(const Program *p, Device d);
/* Completes unset fields: job -> first job, task -> 0, cpu:0. */
Device dev_complete(const Program *p, Device d);

/* shape.c */
int dtype_is_int(TfgDtype t);
int dtype_is_float(TfgDtype t);


/* check.c and session.c: the checker's state (the check phase). */
typedef struct Sym {
	const char *name;
	SrcLoc loc;
	IrNode *node; /* graph value */
	int slot;     /* session loop variable (node == NULL) */
	PtrVec *list; /* a list value (split): IrNode * elements; node NULL */
	IrVar *var;   /* a variable: node is its read */
	const IrShards *shards; /* a partitioned variable: node is its
				   whole value */
	int loop;     /* a loop variable (locals: the others are lets) */
	int batch;    /* a batches() loop's (spec §8.6.1 "batches"): the
			 arrays it was given, 1 or 2; slot .. slot + 4 are
			 its x, y, index, count, size */
	int pinned;   /* a let that loops around batch: it keeps its value
			 in them */
	/* a replicated value (spec §7.6 "Replicas"): copy k of node; node is
	   copy 0 */
	int ncopy;
	IrNode **copies;
	const CJob *rep_job; /* the worker job of the copies */
} Sym;

/* A `device replicas(...)` block being checked (replicas.c). */
typedef struct Replicas {
	Device ps, worker;   /* jobs only */
	const CJob *psjob, *wjob;
	int rr;              /* variables placed so far (round-robin) */
} Replicas;

/* Names in scope: the symbols in order of definition, indexed by a hash
 * of their names whose chains run newest first, so a name finds its
 * latest definition and dropping the newest entries (leaving a scope)
 * unlinks each from the head of its chain. */
typedef struct SymTab {
	PtrVec v;   /* Sym *, oldest first */
	int *head;  /* nb chains: the newest entry of each, or -1 */
	int *next;  /* per entry: the next older entry of its chain, or -1 */
	int nb;     /* chains, a power of two (0: none yet) */
	int cap;    /* room in next */
} SymTab;

typedef struct Checker {
	Program *p;
	Diag *d;
	Arena *a;
	SymTab syms;   /* graph names defined so far */
	SymTab defs;   /* every definition, from the pre-scan */
	SymTab locals; /* a session's lets and loop variables in scope */
	Device dev;    /* merged device of the enclosing blocks */
	const char *why; /* not NULL: why nodes made now ask for dev
			    (a variable's initial value) */
	int nslot;     /* loop variables of the current session */
	int client;    /* task of the current session */
	PtrVec sigs;   /* IrSig * */
	PtrVec sessions;
	const AstNode *cluster;
	/* the session being checked: `session each ... as w` */
	const char *each;  /* w, or NULL */
	int each_index, each_count;
	int group;         /* RtSession.group of sessions checked now */
	int ngroup;        /* groups made so far */
	Replicas *rep;     /* the replicas block around, or NULL */
	int copy;          /* >= 0: the copy of a replicated value being
			      built; names resolve to their copy */
	const CJob *copy_job; /* its worker job */
	const char *stmt;  /* the name the graph statement being checked
			      defines (random makers' counts are named
			      after it) */
	int session_task;  /* the session being checked (-1: none): run()
			      picks its copy of replicated values */
	PtrVec opts;       /* optim.c: the slots each minimize made */
	PtrVec loops;      /* RtStmt *: the session's loops around the
			      statement being checked, outermost first */
	PtrVec csv;        /* RtCsv *: the session's record() files */
} Checker;

/* A literal's value: AST_INT, AST_FLOAT, AST_BOOL, or - of one. */
typedef struct Lit {
	int kind; /* 0 none, 1 int, 2 float, 3 bool */
	int64_t i;
	double f;
} Lit;

IrNode *check_unknown_dep(Checker *c, IrNode *k, IrNode *x);
Sym *check_find(SymTab *t, const char *name);
void sym_push(Arena *a, SymTab *t, Sym *s);
void sym_truncate(SymTab *t, int n);
/* Defines name as node (NULL: a failed definition, whose uses are not
 * reported again); NULL if it was defined already (reported). */
Sym *check_define(Checker *c, const char *name, SrcLoc loc, IrNode *node);
IrNode *check_lookup(Checker *c, AstNode *e);
int check_device_of(Checker *c, AstNode *s, Device outer, Device *out);
/* After an error naming job `job` (NULL: a job the cluster lacks): a
 * note at that job in the JSON the cluster came from, if it did. */
void check_cluster_note(Checker *c, const char *job);
/* cluster.c: the program's cluster (its block, or --cluster's or
 * TF_CONFIG's JSON in its place, or the one-task cluster of a program
 * without one) into Program.tasks, with the --addr overrides; -1 when
 * there is none to go on with (reported). */
int check_program_cluster(Checker *c, AstNode *prog);
Lit check_lit_of(const AstNode *e);
/* params.c: rewrites the uses of the program's params into their
 * literals (with --param values); 0 or the errors reported. */
int params_apply(Program *p);
int check_lit_store(Checker *c, SrcLoc loc, Lit l, TfgDtype t, void *dst);
void *check_tensor_data(Checker *c, AstNode *e, int t, TfgDtype *dt,
			TfgShape *shape, size_t *strbytes);
int check_is_compare(int tk);
void check_session(Checker *c, AstNode *s);
void check_parallel(Checker *c, AstNode *s);

/* session_expr.c (spec §8.5 "Session expressions"): a session
 * expression lowered to an RtExpr, NULL after reporting; what session.c's
 * statements use of it. */
RtExpr *sess_expr(Checker *c, AstNode *e);
RtExpr *sess_new_expr(Checker *c, RtExprKind k, SrcLoc loc, int nargs);
/* 0, or -1 (reported) when x, of e, is known not to be a number scalar */
int sess_scalar(Checker *c, AstNode *e, RtExpr *x);
int sess_is_str(const RtExpr *x); /* known to be a string */
/* the IrSig of a step fetching fetch, assigning targets, fed inputs */
int sess_sig_index(Checker *c, SrcLoc loc, PtrVec *fetch, PtrVec *targets,
		   PtrVec *inputs);
RtExpr *sess_run_expr(Checker *c, AstNode *e);     /* run(...) */
RtExpr *sess_init_expr(Checker *c, AstNode *e);    /* initialize(...) */
RtExpr *sess_uninit_expr(Checker *c, AstNode *e);  /* uninitialized() */
int sess_statement_call(const char *name); /* initialize, sleep, save... */
int sess_fn(const char *name); /* a function a session may call */

/* vars.c (spec §4.4 "Variables"): `var` statements; the nodes of a
 * variable. */
void check_var(Checker *c, AstNode *s);
/* v (name, loc, dtype, shape, req, why set) becomes the program's next
 * variable, with its read, its initializer of x (at init_loc) and its
 * query (spec §4.4 "Variables"): `var` statements and optimizers' slots. */
void check_var_add(Checker *c, IrVar *v, IrNode *x, SrcLoc init_loc);
/* The initial value e of the variable of `var` statement s, made on
 * device dev: of its declared type, its dims known, of no input; NULL
 * (reported) if not. */
IrNode *check_var_init(Checker *c, AstNode *s, AstNode *e, Device dev);

/* shards.c (spec §4.4.1 "Partitioned variables"): `var v =
 * partitioned(INIT, N)`; a gather of axis 0 of its whole value (each
 * shard's rows where it lives, added up); an update (OP_assign ...) of
 * it by x, each shard by its part: its new whole value. */
void check_sharded(Checker *c, AstNode *s);
IrNode *check_gather_shards(Checker *c, SrcLoc at, const IrShards *sh,
			    IrNode *ids);
/* gather(v, ids) of variable v on axis 0, ids of rank 1: routed as a
 * table of one shard (its distinct rows to v's task, counted). */
IrNode *check_gather_var(Checker *c, SrcLoc at, IrVar *v, IrNode *ids);
IrNode *check_shards_update(Checker *c, const IrShards *sh, OpKind op,
			    IrNode *x, SrcLoc at);
/* scatter_add/scatter_update of v (a shard's too: ids i64[n], rows [n] +
 * its dims after the first) and of a partitioned variable's shards */
IrNode *check_var_scatter(Checker *c, IrVar *v, OpKind op, IrNode *ids,
			  IrNode *rows, SrcLoc at);
IrNode *check_shards_scatter(Checker *c, const IrShards *sh, OpKind op,
			     IrNode *ids, IrNode *rows, SrcLoc at);

/* replicas.c (spec §7.6 "Replicas"): `device replicas(...)` and between-graph
 * replication.  check_replicas checks such a block; check_node_device is
 * the device a node made now requests; check_var_device that of a
 * variable declared now (round-robin over the ps job); check_replicated
 * checks the value of a statement (assignment or input) once, or once
 * per copy when it is replicated, defining name; check_copy_of is the
 * node a name stands for here (the copy of a replicated value that the
 * statement or session being checked uses). */
void check_replicas(Checker *c, AstNode *s, void (*body)(Checker *, AstNode *));
Device check_node_device(Checker *c);
Device check_var_device(Checker *c);
/* Why: the words --log-device-placement gives for a node's request
 * (NULL: none) and for a variable's place; call before
 * check_var_device, which takes a round-robin turn. */
const char *check_node_why(Checker *c);
const char *check_var_why(Checker *c);
int check_replicated(Checker *c, AstNode *s, IrNode *(*make)(Checker *,
							      AstNode *));
IrNode *check_copy_of(Checker *c, const Sym *s);
IrNode *check_var_node(Checker *c, IrVar *v, OpKind op, IrNode *x,
		       SrcLoc loc);
void check_cli_session(Checker *c, const CompileOptions *o);

/* check.c: what the checkers of op families (compiler/ops_*.c) share. */
IrNode *check_expr(Checker *c, AstNode *e);  /* NULL: error reported */
/* A node a builder made (build.c), NULL passed through: it gets the
 * device the enclosing blocks request, as check_node's do. */
IrNode *check_built(Checker *c, IrNode *n);
/* a op b, built as check_built's (NULL when a or b is: the error is
 * reported) */
IrNode *check_bin(Checker *c, SrcLoc loc, OpKind op, IrNode *a, IrNode *b);
/* A static integer argument e of call (an integer literal, or a param's
 * value) into *v: "WHAT of 'fn' must be an integer literal"; -1
 * (reported). */
int check_int_arg(Checker *c, AstNode *call, AstNode *e, const char *what,
		  int64_t *v);
/* A tensor literal as an OP_const, its elements of dtype (-1: as they
 * come, §5.6 "Tensor literals"); NULL (reported). */
IrNode *check_tensor_const(Checker *c, AstNode *e, int dtype);
IrNode *check_cast(Checker *c, IrNode *x, TfgDtype t);
IrNode *check_elem(Checker *c, OpKind op, SrcLoc loc, IrNode **in, int nin,
		   TfgDtype t, const TfgShape *s);
int check_operands(Checker *c, AstNode *e, int op_tk, const char *name,
		   AstNode *ea, AstNode *eb, int bools, IrNode **out,
		   TfgDtype *t, TfgShape *s);
int check_static_int(Checker *c, AstNode *e, int64_t *v);
int check_dtype_named(const char *s, TfgDtype *t);
/* A declaration's dtype node (an input's or a var's): 0 with *t, -1 for
 * an unknown name (the caller says so), -2 for TF's spelling
 * (tf.float32, an AST_FIELD), reported with what to write. */
int check_dtype_decl(Checker *c, const AstNode *d, TfgDtype *t);
TfgDtype check_lit_default(Lit l);
IrNode *check_lit_node(Checker *c, AstNode *e, Lit l, TfgDtype t);
/* The scalar constant l of dtype t at loc (check_lit_store's rules): the
 * constants the checkers of compositions build (1, 0.5, -inf, k). */
IrNode *check_scalar(Checker *c, SrcLoc loc, Lit l, TfgDtype t);
/* Checks the arguments of a call that is not a graph function
 * (replicas(...)): keywords only those in kw (NULL-terminated, may be
 * NULL), and exactly nin positional ones when nin >= 0.  Returns the
 * number of positional arguments, or -1 (reported). */
int check_args(Checker *c, AstNode *e, int nin, const char *const *kw);
/* sig.c: binds the arguments of call e, a graph function of
 * stdlib/ops.def, to its signature (positional in its order, by
 * keyword under any of a parameter's names) and rewrites them in place
 * into the canonical form the checkers read: the leading parameters
 * without a default positional, every other one given as name= under
 * tfg's name.  0, or -1 (reported: too many, unknown, twice, missing). */
int check_bind(Checker *c, AstNode *e);
/* The number of positional arguments of call e, all before its keyword
 * arguments; -1 (reported: "positional argument after a keyword
 * argument") when one comes after a keyword. */
int check_positional_first(Checker *c, AstNode *e);
/* check_lit.c: shape argument e of call (a list literal of integer
 * literals, each >= 0) into *s; 0, or -1 (reported). */
int check_shape_arg(Checker *c, AstNode *call, AstNode *e, TfgShape *s);
/* Parameter k, named name, of a bound call: positional or keyword. */
AstNode *check_param(AstNode *e, int k, const char *name);
/* A signature as errors show it, TF's names left out, in buf. */
const char *sig_show(char *buf, size_t size, const char *sig);
/* tfgc help --ops: the markdown table of every graph function's
 * signature (spec §6.7.1 "Signatures"). */
void sig_table(FILE *f);
/* The table of spec §6.7.2 "Op facts": per function, from stdlib/ops.def,
 * the dtypes it takes, whether a gradient flows through it, whether it
 * has a GPU kernel and whether it is folded. */
void op_facts_table(FILE *f);
AstNode *check_kwarg(AstNode *e, const char *name);

/* ops_shape.c: list values (spec §6.22 "split and lists").  check_list_sym:
 * the list name e is bound to, or NULL.  check_is_list: e is a list expression
 * (a split call or a list name).  check_list: the elements of e as a list (a
 * bracketed list of graph expressions or a list expression); NULL:
 * reported.  check_list_index: list[i] of AST_INDEX e whose base is a
 * list expression. */
Sym *check_list_sym(Checker *c, AstNode *e);
/* check.c: the graph functions whose value is a list: whether e calls
 * one (split, moments, top_k), and its elements (NULL: reported), by
 * their checkers: check_split_list (ops_shape.c), check_moments_list
 * and check_top_k_list (ops_reduce.c). */
int check_is_list_call(const AstNode *e);
/* The list of `a, b = LIST` s, its length that of the names; NULL after
 * reporting a tensor or another length. */
PtrVec *check_unpack_list(Checker *c, AstNode *s);
PtrVec *check_list_call(Checker *c, AstNode *e);
PtrVec *check_split_list(Checker *c, AstNode *e);
PtrVec *check_moments_list(Checker *c, AstNode *e);
PtrVec *check_top_k_list(Checker *c, AstNode *e);
int check_is_list(Checker *c, AstNode *e);
PtrVec *check_list(Checker *c, AstNode *e, const char *what);
IrNode *check_list_index(Checker *c, AstNode *e);

/* ops_string.c (spec §5.7 "Strings").  check_str_pack: a string value of n
 * elements, laid out as runtime/tfg.h says, in the arena; its size in
 * *nbytes.  check_string_lit: a string literal as a string scalar.
 * check_strings: after the graph is checked, every op on strings becomes
 * the constant it computes. */
void *check_str_pack(Arena *a, int64_t n, const char *const *s,
		     const size_t *len, size_t *nbytes);
IrNode *check_string_lit(Checker *c, AstNode *e);
void check_strings(Checker *c);

/* The checker of each function a graph may call (stdlib/ops.def):
 * check_<check>(c, call, op) returns the node or NULL (reported). */
#define CALL(name, op, check, sig, sec)                                      \
	IrNode *check_##check(Checker *c, AstNode *e, OpKind op);
#include "stdlib/ops.def"
/* The index of a graph function of stdlib/ops.def, or -1 (sig.c, as
 * the builtin_* below). */
int builtin_lookup(const char *name);
/* Call e of graph function f, checked by f's checker: the node, or NULL
 * (reported). */
IrNode *builtin_check(Checker *c, AstNode *e, int f);
/* The built-in function nearest to name by edit distance, when near
 * enough to be a typo of it, else NULL; check_nearest: the same among
 * cand[0..n) (check.c). */
const char *builtin_nearest(const char *name);
/* habits.c: when e (a call, method call, field or name that the checker
 * could not make sense of) is a TF1 habit (tf.reduce_sum(x),
 * Variable(3), sess.run(y), True), reports what tfg writes instead and
 * returns 1; else 0 and nothing is reported. */
int habit_report(Checker *c, AstNode *e);
/* Reports fetch f of a run(), which is not a name: how to write it
 * (run([a, b]) is run(a, b); run(reduce_sum(y)) needs the value named in
 * the graph). */
void habit_fetch(Checker *c, AstNode *f);
/* The parameters of graph function name as stdlib/ops.def writes
 * them ("x|input_tensor, axis|reduction_indices=, ..."), or NULL for any
 * other name. */
const char *builtin_signature(const char *name);
/* Function f of stdlib/ops.def (from 0): its name, signature and
 * section; -1 past the last. */
int builtin_info(int f, const char **name, const char **sig,
		 const char **sec);
/* The op function f builds (OP_const: constants or other ops only). */
OpKind builtin_op(int f);
const char *check_nearest(const char *name, const char *const *cand, int n);


#endif /* TFG_COMPILER_COMPILER_INT_H */
