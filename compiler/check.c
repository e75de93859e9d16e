/*
 * compiler/check.c: the AST becomes the graph IR, checked.
 *
 * One walk over the program in source order: the cluster first (device
 * strings are checked against it wherever it stands), then every
 * statement.  Graph statements make IrNodes with dtype, shape and the
 * device their enclosing blocks request; session blocks are handed to
 * compiler/session.c, which lowers them to the runtime's RtStmt/RtExpr
 * with one IrSig per distinct run(...).
 *
 * The cluster is compiler/cluster.c's (check_program_cluster), the
 * literals compiler/check_lit.c's.
 *
 * Names resolve in order.  A pre-scan records every definition so that a
 * use before its definition can point at both places.  Literals written
 * directly as operands are weak (spec §5.3 "Weak operands"): they are
 * materialised only once the other operand's dtype is known.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"
#include "lang/parse.h"


/* ------------------------------------------------------ list functions */

/* The graph functions whose value is a list of tensors
 * (spec §6.22 "split and lists"), and how a use where a tensor is
 * needed is told to take one. */
static const struct {
	const char *name;
	PtrVec *(*list)(Checker *, AstNode *);
	const char *take;
} list_fns[] = {
	{"split", check_split_list, "assign it to a name or take an element "
				    "(split(x, 2)[0])"},
	{"moments", check_moments_list, "give it to two names (mean, "
					"variance = moments(x, [0]))"},
	{"top_k", check_top_k_list, "give it to two names (values, indices "
				    "= top_k(x, 5))"},
};

static int
list_fn(const AstNode *e)
{
	if (e->kind != AST_CALL || e->b)
		return -1;
	for (int i = 0; i < (int)(sizeof list_fns / sizeof list_fns[0]); i++)
		if (strcmp(e->name, list_fns[i].name) == 0)
			return i;
	return -1;
}

int
check_is_list_call(const AstNode *e)
{
	return list_fn(e) >= 0;
}

PtrVec *
check_list_call(Checker *c, AstNode *e)
{
	int i = list_fn(e);

	return i < 0 ? NULL : list_fns[i].list(c, e);
}

/* A list function where a tensor is needed (moments, top_k: the check
 * column of stdlib/ops.def): its arguments checked, then an error. */
IrNode *
check_listfn(Checker *c, AstNode *e, OpKind op)
{
	int i = list_fn(e);

	(void)op;
	if (i >= 0 && list_fns[i].list(c, e))
		diag_error(c->d, e->loc, "'%s' gives a list, not a tensor: %s",
			   e->name, list_fns[i].take);
	return NULL;
}

/* ---------------------------------------------------------------- names */

static void
prescan(Checker *c, AstNode *n)
{
	for (int i = 0; i < n->n; i++) {
		AstNode *s = n->list[i];
		if (s->kind == AST_DEVICE) {
			prescan(c, s);
		} else if (s->kind == AST_ASSIGN || s->kind == AST_INPUT ||
			   s->kind == AST_VAR) {
			/* a, b = ...: each name */
			int k = s->kind == AST_ASSIGN && s->n ? s->n : 1;

			for (int j = 0; j < k; j++) {
				const AstNode *t = k > 1 ? s->list[j] : s;
				Sym *d;

				if (check_find(&c->defs, t->name))
					continue;
				d = arena_alloc(c->a, sizeof *d);
				d->name = t->name;
				d->loc = t->tok.loc;
				sym_push(c->a, &c->defs, d);
			}
		}
	}
}

static const char *
mean_sym(Checker *c, PtrVec *v, const char *name)
{
	const char **cand = arena_alloc(c->a, ((size_t)v->n + 1) *
						   sizeof *cand);
	const char *w;

	for (int i = 0; i < v->n; i++)
		cand[i] = ((Sym *)v->v[i])->name;
	w = check_nearest(name, cand, v->n);
	return w ? arena_printf(c->a, "; did you mean '%s'?", w) : "";
}

IrNode *
check_lookup(Checker *c, AstNode *e)
{
	Sym *s = check_find(&c->syms, e->name), *later;

	if (s && s->list) {
		diag_error(c->d, e->loc, "'%s' is a list of %d tensors, not a "
			   "tensor: take one element (%s[0])", e->name,
			   s->list->n, e->name);
		return NULL;
	}
	if (s)
		return check_copy_of(c, s);
	if ((later = check_find(&c->defs, e->name)) != NULL) {
		diag_error(c->d, e->loc, "'%s' is used before it is defined",
			   e->name);
		diag_note(c->d, later->loc, "'%s' is defined here", e->name);
	} else if (!habit_report(c, e)) {
		diag_error(c->d, e->loc, "unknown name '%s'%s", e->name,
			   mean_sym(c, &c->syms.v, e->name));
	}
	return NULL;
}

Sym *
check_define(Checker *c, const char *name, SrcLoc loc, IrNode *node)
{
	Sym *old = check_find(&c->syms, name), *s;

	if (old) {
		diag_error(c->d, loc, "redefinition of '%s'", name);
		diag_note(c->d, old->loc, "previous definition of '%s' is here",
			  name);
		return NULL;
	}
	s = arena_alloc(c->a, sizeof *s);
	s->name = name;
	s->loc = loc;
	s->node = node;
	sym_push(c->a, &c->syms, s);
	return s;
}

/* Whether x's dims may come from a specialisation's feeds: it is, or
 * reads, an input declared with `?` dims.  The same in the generic
 * compile and in every specialisation (it looks at the declarations, not
 * at the dims a specialisation gave them), so both see the same feeds.
 * Memoised in IrNode.dyn, found without recursion. */
static int
specialised(Checker *c, IrNode *x)
{
	PtrVec stack = {0};

	if (x->dyn)
		return x->dyn == IR_DYN_YES;
	vec_push(c->a, &stack, x);
	while (stack.n > 0) {
		IrNode *n = stack.v[stack.n - 1];
		int yes = 0, pending = 0;
		for (int k = 0; k < n->nin; k++) {
			IrNode *in = n->in[k];
			if (in->dyn == 0) {
				vec_push(c->a, &stack, in);
				pending = 1;
			}
			yes |= in->dyn == IR_DYN_YES;
		}
		if (pending && n->dyn == 0) {
			n->dyn = IR_DYN_SEEN; /* its inputs first */
			continue;
		}
		stack.n--;
		if (n->dyn == IR_DYN_SEEN || n->dyn == 0)
			n->dyn = yes ? IR_DYN_YES : IR_DYN_NO;
	}
	return x->dyn == IR_DYN_YES;
}

/* k, a value that takes only x's type (size, shape, zeros_like, ...),
 * with x as its input when x has `?` dims: the generic compile then
 * knows that a run fetching k needs x's feeds, and their shapes make the
 * specialisation, where x's dims are known and k is what it should be
 * (shape(x) of a feed of 2x3x4 printed [-1 -1 -1] when k stood alone).
 * A specialisation keeps the input until its signature is pruned, so
 * that its runs are fed as the generic plan's, then drops it
 * (pipeline.c's drop_type_deps): k's input is never read. */
IrNode *
check_unknown_dep(Checker *c, IrNode *k, IrNode *x)
{
	if (!k || !x || k->nin > 0 || !specialised(c, x))
		return k;
	k->type_dep = 1;
	k->in = arena_alloc(c->a, sizeof *k->in);
	k->in[0] = x;
	k->nin = 1;
	return k;
}

/* -------------------------------------------------------------- devices */

/* Parses the device string of s (an AST_STRING) and checks it names what
 * the cluster has, merged with `outer`.  Returns 0 and *out, or -1. */
int
check_device_of(Checker *c, AstNode *s, Device outer, Device *out)
{
	const char *err;
	int off;
	Device d, m;

	if (strncmp(s->str, "grpc://", 7) == 0) {
		diag_error(c->d, s->loc, "'%s' is the address of a task, which "
			   "names where a session runs (session \"%s\"); a "
			   "device string names a job and task "
			   "(\"/job:local/task:1\")", s->str, s->str);
		return -1;
	}
	if (dev_parse(c->a, &d, s->str, &err, &off) < 0) {
		SrcLoc l = s->loc;
		if ((uint32_t)off + 1 < l.len) {
			l.off += off + 1;
			l.col += off + 1;
			l.len = 1;
		}
		diag_error(c->d, l, "invalid device string '%s': %s", s->str,
			   err);
		return -1;
	}
	if (d.job && dev_task_index(c->p, (Device){d.job, 0, 0, 0}) < 0) {
		diag_error(c->d, s->loc,
			   "device '%s' names job '%s', which the cluster "
			   "does not have",
			   s->str, d.job);
		check_cluster_note(c, NULL);
		return -1;
	}
	m = dev_complete(c->p, dev_merge(outer, d));
	if (dev_task_index(c->p, m) < 0) {
		int nt = 0;
		for (int j = 0; j < c->p->njob; j++)
			if (strcmp(c->p->jobs[j].name, m.job) == 0)
				nt = c->p->jobs[j].ntask;
		diag_error(c->d, s->loc,
			   "device '%s' names task %d of job '%s', which has "
			   "%d task%s",
			   s->str, m.task, m.job, nt, nt == 1 ? "" : "s");
		check_cluster_note(c, m.job);
		return -1;
	}
	if (m.kind == DEV_CPU && m.index > 0) {
		diag_error(c->d, s->loc,
			   "device '%s': a task has one CPU device, cpu:0 "
			   "(it uses all the task's cores)",
			   s->str);
		return -1;
	}
	if (m.kind == DEV_GPU && m.index >= TFG_MAX_GPUS) {
		diag_error(c->d, s->loc,
			   "device '%s': a task has at most %d GPUs, gpu:0 to "
			   "gpu:%d",
			   s->str, TFG_MAX_GPUS, TFG_MAX_GPUS - 1);
		return -1;
	}
	*out = dev_merge(outer, d);
	return 0;
}

/* ---------------------------------------------------------------- graph */

IrNode *
check_cast(Checker *c, IrNode *x, TfgDtype t)
{
	IrNode *n;

	if (x->dtype == t)
		return x;
	n = ir_cast(c->p, x->loc, x, t);
	return check_built(c, n);
}

/* Two operands of an elementwise op (an operator when op_tk is not 0,
 * else the function `name`), promoted together by
 * spec §5.4 "The result dtype of a binary operation" with literals weak,
 * converted to the result dtype *t and broadcast (§6.1 "Broadcasting") to *s.
 * bools: 0 refuses bool operands, 1 allows two bools (never a bool with a
 * number), 3 two bools or two strings (== and !=, §5.7 "Strings"); strings are
 * refused otherwise.  Returns 0, or -1 after reporting at e. */
int
check_operands(Checker *c, AstNode *e, int op_tk, const char *name, AstNode *ea,
	 AstNode *eb, int bools, IrNode **out, TfgDtype *t, TfgShape *s)
{
	Lit la = check_lit_of(ea), lb = check_lit_of(eb);
	IrNode *a = NULL, *b = NULL;
	TfgDtype ta, tb;
	const char *what = op_tk ? arena_printf(c->a, "operator '%s'",
						ast_op_text(op_tk))
				 : arena_printf(c->a, "'%s'", name);

	if (!la.kind && !(a = check_expr(c, ea)))
		return -1;
	if (!lb.kind && !(b = check_expr(c, eb)))
		return -1;
	ta = a ? a->dtype : check_lit_default(la);
	tb = b ? b->dtype : check_lit_default(lb);
	if (!(bools & 2) && (ta == TFG_STRING || tb == TFG_STRING)) {
		diag_error(c->d, e->loc, "%s does not take string operands",
			   what);
		return -1;
	}
	if ((ta == TFG_STRING) != (tb == TFG_STRING)) {
		diag_error(c->d, e->loc, "%s cannot compare string with %s",
			   what, tfg_dtype_name(ta == TFG_STRING ? tb : ta));
		return -1;
	}
	if (!bools && (ta == TFG_BOOL || tb == TFG_BOOL)) {
		diag_error(c->d, e->loc, "%s does not take bool operands",
			   what);
		return -1;
	}
	if ((ta == TFG_BOOL) != (tb == TFG_BOOL)) {
		diag_error(c->d, e->loc, op_tk ? "%s cannot compare bool with %s"
			   : "%s cannot mix bool and %s operands", what,
			   tfg_dtype_name(ta == TFG_BOOL ? tb : ta));
		return -1;
	}
	*t = dtype_promote(ta, !a, tb, !b);
	if (!a && !(a = check_lit_node(c, ea, la, *t)))
		return -1;
	if (!b && !(b = check_lit_node(c, eb, lb, *t)))
		return -1;
	if (shape_broadcast(s, &a->shape, &b->shape) < 0) {
		char sa[128], sb[128];
		diag_error(c->d, e->loc,
			   "operands of '%s' do not broadcast: shapes %s and "
			   "%s",
			   op_tk ? ast_op_text(op_tk) : name,
			   tfg_shape_str(sa, sizeof sa, &a->shape),
			   tfg_shape_str(sb, sizeof sb, &b->shape));
		return -1;
	}
	out[0] = check_cast(c, a, *t);
	out[1] = check_cast(c, b, *t);
	return 0;
}

IrNode *
check_elem(Checker *c, OpKind op, SrcLoc loc, IrNode **in, int nin,
	  TfgDtype t, const TfgShape *s)
{
	IrNode *n = nin == 3 ? ir_where(c->p, loc, in[0], in[1], in[2])
		  : nin == 2 ? ir_binary(c->p, loc, op, in[0], in[1])
		  : op == OP_cast ? ir_cast(c->p, loc, in[0], t)
		  : ir_unary(c->p, loc, op, in[0]);

	/* the builder infers what the checker promised */
	if (n && (n->dtype != t || !tfg_shape_eq(&n->shape, s)))
		diag_error(c->d, loc, "internal error: '%s' built as %s, "
			   "checked as %s", op_info[op].name,
			   ir_type_str(c->a, n->dtype, &n->shape),
			   ir_type_str(c->a, t, s));
	return check_built(c, n);
}

/* a op b: arithmetic (spec §5.4 "The result dtype of a binary operation",
 * §6.2 "Addition, subtraction, multiplication", §6.3 "Division and remainder")
 * or a comparison (§6.10 "Comparisons"). */
static IrNode *
binary(Checker *c, AstNode *e)
{
	static const OpKind ops[] = {
		[TK_PLUS] = OP_add,     [TK_MINUS] = OP_sub,
		[TK_STAR] = OP_mul,     [TK_SLASH] = OP_div,
		[TK_PERCENT] = OP_mod,  [TK_EQ] = OP_equal,
		[TK_NE] = OP_not_equal, [TK_LT] = OP_less,
		[TK_LE] = OP_less_equal, [TK_GT] = OP_greater,
		[TK_GE] = OP_greater_equal};
	int cmp = check_is_compare(e->op);
	IrNode *in[2];
	TfgDtype t;
	TfgShape s;

	if (e->op == TK_AT) /* matmul (spec §6.18 "matmul and `@`") */
		return check_matmul(c, e, OP_matmul);
	if (check_operands(c, e, e->op, NULL, e->a, e->b,
		     e->op == TK_EQ || e->op == TK_NE ? 3 : 0, in, &t, &s) < 0)
		return NULL;
	return check_elem(c, ops[e->op], e->loc, in, 2, cmp ? TFG_BOOL : t, &s);
}


/* cast(x, dtype) (spec §6.12 "cast"): dtype is a dtype name, not a value. */
static IrNode *
call_cast(Checker *c, AstNode *e)
{
	AstNode *d;
	IrNode *x, *n;
	TfgDtype t;

	if (check_bind(c, e) < 0)
		return NULL;
	d = e->list[1];
	if (d->kind != AST_NAME && habit_report(c, d))
		return NULL;
	if (d->kind != AST_NAME) {
		diag_error(c->d, d->loc, "'dtype' of 'cast' must "
			   "be a dtype: bool, u8, i32, i64, f32, f64 or "
			   "string");
		return NULL;
	}
	if (check_dtype_named(d->name, &t) < 0) {
		diag_error(c->d, d->loc, "unknown dtype '%s' (expected bool, "
			   "u8, i32, i64, f32, f64 or string)", d->name);
		return NULL;
	}
	if (!(x = check_expr(c, e->list[0])))
		return NULL;
	if (x->dtype == t)
		return x;
	if (x->dtype == TFG_STRING || t == TFG_STRING) {
		diag_error(c->d, e->loc, "'cast' cannot convert %s to %s: "
			   "strings and numbers do not convert",
			   ir_type_str(c->a, x->dtype, &x->shape),
			   tfg_dtype_name(t));
		return NULL;
	}
	n = check_elem(c, OP_cast, e->loc, &x, 1, t, &x->shape);
	return n;
}

/* exp log sqrt tanh sigmoid take floats, relu abs numbers: stdlib/ops.def's
 * types (spec §6.8 "Unary elementwise functions"). */
static IrNode *
call_unary(Checker *c, AstNode *e, OpKind op)
{
	IrNode *x = check_expr(c, e->list[0]);

	if (!x)
		return NULL;
	if (x->dtype == TFG_STRING) {
		diag_error(c->d, e->loc, "'%s' does not take a string tensor, "
			   "got %s", e->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if ((op_info[op].types == TY_FLOAT && !dtype_is_float(x->dtype)) ||
	    (op_info[op].types == TY_BOOL && x->dtype != TFG_BOOL)) {
		diag_error(c->d, e->loc, "'%s' takes a %s tensor, "
			   "got %s", e->name, op_info[op].types == TY_BOOL
			   ? "bool" : "float",
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (!op_takes(op, x->dtype)) {
		diag_error(c->d, e->loc, "'%s' does not take a %s tensor",
			   e->name, tfg_dtype_name(x->dtype));
		return NULL;
	}
	return check_elem(c, op, e->loc, &x, 1, x->dtype, &x->shape);
}

/* where(cond, a, b) (spec §6.11 "where"): a and b promoted together, all three
 * broadcast together. */
static IrNode *
call_where(Checker *c, AstNode *e)
{
	IrNode *in[3], *cond;
	TfgDtype t;
	TfgShape s, s3;
	char sa[128], sb[128];

	if (!(cond = check_expr(c, e->list[0])))
		return NULL;
	if (cond->dtype != TFG_BOOL) {
		diag_error(c->d, e->loc, "the condition of 'where' "
			   "must be bool, got %s",
			   ir_type_str(c->a, cond->dtype, &cond->shape));
		return NULL;
	}
	if (check_operands(c, e, 0, "where", e->list[1], e->list[2], 1, in + 1, &t,
		     &s) < 0)
		return NULL;
	if (shape_broadcast(&s3, &cond->shape, &s) < 0) {
		diag_error(c->d, e->loc, "operands of 'where' do not "
			   "broadcast: shapes %s and %s",
			   tfg_shape_str(sa, sizeof sa, &cond->shape),
			   tfg_shape_str(sb, sizeof sb, &s));
		return NULL;
	}
	in[0] = cond;
	return check_elem(c, OP_where, e->loc, in, 3, t, &s3);
}

/* The arguments of a call that is not one of stdlib/ops.def's
 * (replicas(...)): no keywords (unless listed in kw, NULL-terminated)
 * and, when nin >= 0, exactly nin positional ones.  Keywords must come
 * after the positional arguments.  An unknown keyword is most often a
 * near miss of a known one: that one is named.  The graph's functions
 * bind theirs with check_bind (compiler/sig.c). */
int
check_args(Checker *c, AstNode *e, int nin, const char *const *kw)
{
	int npos = check_positional_first(c, e);

	for (int i = 0; npos >= 0 && i < e->n; i++) {
		AstNode *x = e->list[i];
		int ok = 0, nkw = 0;
		const char *w;
		if (x->kind != AST_KWARG)
			continue;
		for (int k = 0; kw && kw[k]; k++, nkw++)
			ok |= strcmp(kw[k], x->name) == 0;
		for (int j = 0; ok && j < i; j++)
			if (e->list[j]->kind == AST_KWARG &&
			    strcmp(e->list[j]->name, x->name) == 0) {
				diag_error(c->d, x->tok.loc, "argument '%s' "
					   "given twice", x->name);
				return -1;
			}
		if (ok)
			continue;
		if ((w = kw ? check_nearest(x->name, kw, nkw) : NULL) != NULL)
			diag_error(c->d, x->tok.loc, "'%s' has no argument "
				   "named '%s'; did you mean '%s'?", e->name,
				   x->name, w);
		else
			diag_error(c->d, x->tok.loc, "'%s' has no argument "
				   "named '%s'", e->name, x->name);
		return -1;
	}
	if (npos < 0)
		return -1;
	if (nin >= 0 && npos != nin) {
		diag_error(c->d, e->loc, "'%s' expects %d argument%s, got %d",
			   e->name, nin, nin == 1 ? "" : "s", npos);
		return -1;
	}
	return npos;
}

/* The value of keyword argument `name` of call e, or NULL. */
AstNode *
check_kwarg(AstNode *e, const char *name)
{
	for (int i = 0; i < e->n; i++)
		if (e->list[i]->kind == AST_KWARG &&
		    strcmp(e->list[i]->name, name) == 0)
			return e->list[i]->a;
	return NULL;
}

/* stdlib/ops.def names the function that checks a call and
 * infers its dtype and shape: check_<check>() (spec §6 "Operations"). */
IrNode *
check_unary(Checker *c, AstNode *e, OpKind op)
{
	if (op == OP_cast)
		return call_cast(c, e);
	if (check_bind(c, e) < 0)
		return NULL;
	return call_unary(c, e, op);
}

IrNode *
check_broadcast(Checker *c, AstNode *e, OpKind op)
{
	IrNode *in[2];
	TfgDtype t;
	TfgShape s;

	if (check_bind(c, e) < 0)
		return NULL;
	if (op == OP_where)
		return call_where(c, e);
	/* pow maximum minimum: as the arithmetic operators
	   (spec §6.9 "pow, maximum, minimum") */
	if (check_operands(c, e, 0, e->name, e->list[0], e->list[1], 0, in, &t,
		     &s) < 0)
		return NULL;
	return check_elem(c, op, e->loc, in, 2, t, &s);
}

/* equal not_equal less less_equal greater greater_equal (a, b), TF's
 * spellings of == != < <= > >= (spec §6.10 "Comparisons"): the same
 * promotion, broadcasting and operand rules, a bool result. */
IrNode *
check_compare(Checker *c, AstNode *e, OpKind op)
{
	int eq = op == OP_equal || op == OP_not_equal;
	IrNode *in[2];
	TfgDtype t;
	TfgShape s;

	if (check_bind(c, e) < 0 ||
	    check_operands(c, e, 0, e->name, e->list[0], e->list[1],
			   eq ? 3 : 0, in, &t, &s) < 0)
		return NULL;
	return check_elem(c, op, e->loc, in, 2, TFG_BOOL, &s);
}

/* logical_and logical_or (x, y): two bool operands, broadcast as for
 * `+` (spec §6.27 "logical_and, logical_or, logical_not"). */
IrNode *
check_logical(Checker *c, AstNode *e, OpKind op)
{
	IrNode *in[2];
	TfgDtype t;
	TfgShape s;

	if (check_bind(c, e) < 0 ||
	    check_operands(c, e, 0, e->name, e->list[0], e->list[1], 1, in,
			   &t, &s) < 0)
		return NULL;
	if (t != TFG_BOOL) {
		diag_error(c->d, e->loc, "'%s' takes bool tensors, got %s "
			   "operands", e->name, tfg_dtype_name(t));
		return NULL;
	}
	return check_elem(c, op, e->loc, in, 2, TFG_BOOL, &s);
}

static IrNode *
call_graph(Checker *c, AstNode *e)
{
	int f = builtin_lookup(e->name);

	if (strcmp(e->name, "run") == 0 || strcmp(e->name, "load") == 0 ||
	    strcmp(e->name, "progress") == 0 ||
	    strcmp(e->name, "record") == 0) {
		diag_error(c->d, e->a->loc,
			   "'%s' can only be used in a session block",
			   e->name);
		return NULL;
	}
	if (f < 0 && habit_report(c, e))
		return NULL;
	if (f < 0) {
		const char *w = builtin_nearest(e->name);
		diag_error(c->d, e->a->loc, "unknown function '%s'%s%s%s",
			   e->name, w ? "; did you mean '" : "", w ? w : "",
			   w ? "'?" : "");
		return NULL;
	}
	if (e->b) {
		diag_error(c->d, e->b->loc, "a feed can only be given to run()");
		return NULL;
	}
	return builtin_check(c, e, f);
}

/* An index component that must be a static integer. */
int
check_static_int(Checker *c, AstNode *e, int64_t *v)
{
	Lit l = check_lit_of(e);

	if (l.kind != 1) {
		diag_error(c->d, e->loc, "index must be an integer literal");
		return -1;
	}
	*v = l.i;
	return 0;
}

static IrNode *
index_graph(Checker *c, AstNode *e)
{
	IrNode *x;
	int64_t begin[TFG_MAX_RANK] = {0}, size[TFG_MAX_RANK] = {0};
	uint32_t squeeze = 0;

	/* list[i] (spec §6.22 "split and lists") */
	if (check_is_list(c, e->a))
		return check_list_index(c, e);
	if (!(x = check_expr(c, e->a)))
		return NULL;
	if (e->n > x->shape.rank) {
		diag_error(c->d, e->loc,
			   "too many indices: %d for a tensor of rank %d",
			   e->n, x->shape.rank);
		return NULL;
	}
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t len = x->shape.dims[i], lo = 0, hi = len;
		AstNode *ix = i < e->n ? e->list[i] : NULL;
		if (len == IR_DIM_UNKNOWN) {
			/* bounds and the result's size are known in the
			   specialisation; the indices must be literals */
			if (ix && ix->kind == AST_SLICE &&
			    ((ix->a && check_static_int(c, ix->a, &lo) < 0) ||
			     (ix->b && check_static_int(c, ix->b, &hi) < 0)))
				return NULL;
			if (ix && ix->kind != AST_SLICE &&
			    check_static_int(c, ix, &lo) < 0)
				return NULL;
			if (ix && ix->kind != AST_SLICE)
				squeeze |= 1u << i, size[i] = 1;
			else
				size[i] = IR_DIM_UNKNOWN;
			begin[i] = 0;
			continue;
		}
		if (ix && ix->kind == AST_SLICE) {
			if (ix->a && check_static_int(c, ix->a, &lo) < 0)
				return NULL;
			if (ix->b && check_static_int(c, ix->b, &hi) < 0)
				return NULL;
			/* Python's rules: negative counts from the end,
			   then clamp to [0, len]. */
			lo = lo < 0 ? lo + len : lo;
			hi = hi < 0 ? hi + len : hi;
			lo = lo < 0 ? 0 : lo > len ? len : lo;
			hi = hi < 0 ? 0 : hi > len ? len : hi;
		} else if (ix) {
			int64_t v;
			if (check_static_int(c, ix, &v) < 0)
				return NULL;
			if (v < -len || v >= len) {
				diag_error(c->d, ix->loc,
					   "index %" PRId64 " is out of range "
					   "for axis %d of size %" PRId64,
					   v, i, len);
				return NULL;
			}
			lo = v < 0 ? v + len : v;
			hi = lo + 1;
			squeeze |= 1u << i;
		}
		begin[i] = lo;
		size[i] = hi > lo ? hi - lo : 0;
	}
	return check_built(c, ir_slice(c->p, e->loc, x, begin, size, squeeze));
}

static IrNode *expr_node(Checker *c, AstNode *e);

/* Value e, whose shape must be one a tensor can have (tfg_shape_size;
 * unknown dims count as 1 here, and are checked again when a
 * specialisation knows them). */
IrNode *
check_expr(Checker *c, AstNode *e)
{
	IrNode *n = expr_node(c, e);
	TfgShape s;
	char buf[220];
	int zero = 0;

	if (n == NULL)
		return NULL;

	s = n->shape;
	for (int i = 0; i < s.rank; i++) {
		if (s.dims[i] == IR_DIM_UNKNOWN)
			s.dims[i] = 1;
		zero |= s.dims[i] == 0;
	}
	if (tfg_shape_size(&s, n->dtype, NULL, NULL) != 0) {
		diag_error(c->d, e->loc, "this value would be %s%s, too "
			   "large for a tensor (at most 2^40 bytes%s)",
			   tfg_dtype_name(n->dtype),
			   tfg_shape_str(buf, sizeof buf, &n->shape),
			   zero ? ", each 0 dimension counted as 1" : "");
		return NULL;
	}
	return n;
}

static IrNode *
expr_node(Checker *c, AstNode *e)
{
	Lit l;
	IrNode *n;

	switch (e->kind) {
	case AST_INT:
	case AST_FLOAT:
	case AST_BOOL:
		l = check_lit_of(e);
		return check_lit_node(c, e, l, check_lit_default(l));
	case AST_NAME:
		return check_lookup(c, e);
	case AST_TENSOR:
		return check_tensor_const(c, e, -1);
	case AST_UNARY:
		if ((l = check_lit_of(e)).kind)
			return check_lit_node(c, e, l, check_lit_default(l));
		if (!(n = check_expr(c, e->a)))
			return NULL;
		if (n->dtype == TFG_BOOL || n->dtype == TFG_STRING) {
			diag_error(c->d, e->loc,
				   "operator '-' does not take a %s operand",
				   tfg_dtype_name(n->dtype));
			return NULL;
		}
		return check_built(c, ir_unary(c->p, e->loc, OP_neg, n));
	case AST_BINARY:
		if ((l = check_lit_of(e)).kind)
			return check_lit_node(c, e, l, check_lit_default(l));
		return binary(c, e);
	case AST_CALL:
		return call_graph(c, e);
	case AST_INDEX:
		return index_graph(c, e);
	case AST_STRING: /* a string scalar (spec §5.7 "Strings") */
		return check_string_lit(c, e);
	case AST_METHOD: /* tf.reduce_sum(x) */
	case AST_FIELD:  /* tf.float32 */
		if (habit_report(c, e))
			return NULL;
		/* fall through */
	default:
		diag_error(c->d, e->loc, "this is not a value");
		return NULL;
	}
}

/* ----------------------------------------------------------- statements */

int
check_dtype_decl(Checker *c, const AstNode *d, TfgDtype *t)
{
	TfgDtype tf;

	if (d->kind != AST_FIELD)
		return check_dtype_named(d->name, t) < 0 ? -1 : 0;
	/* tf.float32, np.float32 */
	if (d->a && d->a->kind == AST_NAME &&
	    check_dtype_named(d->name, &tf) == 0 && tf != TFG_STRING)
		diag_error(c->d, d->loc, "write '%s' for TF's dtype '%s.%s' "
			   "(tfg's dtypes: bool, u8, i32, i64, f32, f64)",
			   tfg_dtype_name(tf), d->a->name, d->name);
	else
		diag_error(c->d, d->loc, "a dtype is one of bool, u8, i32, "
			   "i64, f32 and f64, not '%s'", d->name);
	return -2;
}

int
check_dtype_named(const char *s, TfgDtype *t)
{
	/* TF's spellings (spec §5.1 "Dtypes") */
	static const struct {
		const char *tf;
		TfgDtype t;
	} alias[] = {{"float32", TFG_F32}, {"float64", TFG_F64},
		     {"int32", TFG_I32},   {"int64", TFG_I64},
		     {"uint8", TFG_U8}};

	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (strcmp(s, alias[i].tf) == 0) {
			*t = alias[i].t;
			return 0;
		}
	for (int i = 0; i < TFG__NDTYPE; i++) {
		if (strcmp(s, tfg_dtype_name((TfgDtype)i)) == 0) {
			*t = (TfgDtype)i;
			return 0;
		}
	}
	return -1;
}

/* The --shape option for input `name` (spec §4.3 "Inputs"): its index,
 * or -1. */
static int
shape_opt(const CompileOptions *o, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; o && i < o->nshape; i++)
		if (strncmp(o->shape[i], name, n) == 0 &&
		    o->shape[i][n] == '=')
			return i;
	return -1;
}

/* --shape x=D0,D1,...: the input's dims become these, so its `?` dims
 * are fixed (a specialisation); its rank and known dims must agree.  A
 * replicated input's copy k is x@k (spec §7.6 "Replicas"), which the
 * runtime names when it specialises a worker's feeds, or x for all of
 * them.  0, or -1 (reported). */
static int
apply_shape(Checker *c, AstNode *s, TfgDtype t, TfgShape *shape)
{
	const CompileOptions *o = c->p->opt;
	const char *name = c->copy >= 0 ? arena_printf(c->a, "%s@%d", s->name,
						       c->copy) : s->name;
	int i = shape_opt(o, name), rank = 0;
	const char *opt, *v;
	TfgShape sh = {0, {0}};
	char *end;

	if (i < 0)
		i = shape_opt(o, name = s->name);
	if (i < 0)
		return 0;
	opt = o->shape[i];
	v = opt + strlen(name) + 1;
	while (*v) {
		long long d;
		if (*v < '0' || *v > '9' || rank == TFG_MAX_RANK ||
		    (d = strtoll(v, &end, 10)) > (1ll << 40) ||
		    (*end && (*end != ',' || !end[1]))) {
			diag_error(c->d, (SrcLoc){0}, "--shape '%s': expected "
				   "NAME=D0,D1,... with dims from 0 to 2^40",
				   opt);
			return -1;
		}
		sh.dims[rank++] = d;
		v = *end ? end + 1 : end;
	}
	sh.rank = rank;
	if (rank != shape->rank) {
		diag_error(c->d, (SrcLoc){0}, "--shape '%s' gives %d dim%s, "
			   "but input '%s' is %s", opt, rank,
			   rank == 1 ? "" : "s", s->name,
			   ir_type_str(c->a, t, shape));
		diag_note(c->d, s->tok.loc, "'%s' declared here", s->name);
		return -1;
	}
	for (int k = 0; k < rank; k++)
		if (shape->dims[k] != IR_DIM_UNKNOWN &&
		    shape->dims[k] != sh.dims[k]) {
			diag_error(c->d, (SrcLoc){0}, "--shape '%s' gives %"
				   PRId64 " for dim %d, but input '%s' is %s",
				   opt, sh.dims[k], k, s->name,
				   ir_type_str(c->a, t, shape));
			diag_note(c->d, s->tok.loc, "'%s' declared here",
				  s->name);
			return -1;
		}
	*shape = sh;
	return 0;
}

/* Every --shape names an input, once. */
static void
check_shape_opts(Checker *c)
{
	const CompileOptions *o = c->p->opt;

	for (int i = 0; o && i < o->nshape; i++) {
		const char *eq = strchr(o->shape[i], '=');
		char *name = eq ? arena_strndup(c->a, o->shape[i],
						eq - o->shape[i]) : NULL;
		char *at = name ? strchr(name, '@') : NULL;
		Sym *y;

		if (at) { /* x@k: copy k of a replicated input */
			char *end;
			long k = strtol(at + 1, &end, 10);
			*at = 0;
			y = check_find(&c->syms, name);
			*at = '@';
			if (y && (*end || at[1] < '0' || at[1] > '9' ||
				  k >= y->ncopy))
				y = NULL;
		} else {
			y = name ? check_find(&c->syms, name) : NULL;
		}
		if (!name || !*name) {
			diag_error(c->d, (SrcLoc){0}, "--shape takes "
				   "NAME=D0,D1,..., not '%s'", o->shape[i]);
		} else if (!y || (y->node && y->node->op != OP_input)) {
			diag_error(c->d, (SrcLoc){0}, "--shape '%s': '%s' is "
				   "not an input", o->shape[i], name);
		} else if (shape_opt(o, name) != i) {
			diag_error(c->d, (SrcLoc){0}, "--shape gives the shape "
				   "of '%s' twice", name);
		}
	}
}

/* The node of input s, or NULL (reported); the caller defines it. */
static IrNode *
make_input(Checker *c, AstNode *s)
{
	IrNode *n;
	TfgDtype t;
	TfgShape sh;
	double numel = 1;
	int zero = 0, rc;

	if ((rc = check_dtype_decl(c, s->a, &t)) == -2)
		return NULL;
	if (rc < 0) {
		diag_error(c->d, s->a->loc,
			   "unknown dtype '%s' (expected bool, u8, i32, i64, "
			   "f32 or f64)",
			   s->a->name);
		return NULL;
	}
	/* its size would not be static (§5.7 "Strings") */
	if (t == TFG_STRING) {
		diag_error(c->d, s->a->loc, "input '%s' cannot be a string: "
			   "strings are constants (write them as literals or "
			   "with constant())", s->name);
		return NULL;
	}
	if (s->n > TFG_MAX_RANK) {
		diag_error(c->d, s->loc, "input '%s' has %d dimensions; at "
			   "most %d are allowed", s->name, s->n, TFG_MAX_RANK);
		return NULL;
	}
	for (int i = 0; i < s->n; i++) {
		numel *= s->list[i]->ival <= 0 ? 1 : (double)s->list[i]->ival;
		zero |= s->list[i]->ival == 0;
	}
	if (numel * tfg_dtype_size(t) > (double)TFG_MAX_BYTES) {
		diag_error(c->d, s->loc, "input '%s' is too large (%.3g "
			   "bytes%s)", s->name, numel * tfg_dtype_size(t),
			   zero ? ", each 0 dimension counted as 1" : "");
		return NULL;
	}
	sh.rank = s->n;
	for (int i = 0; i < s->n; i++)
		sh.dims[i] = s->list[i]->ival < 0 ? IR_DIM_UNKNOWN
						  : s->list[i]->ival;
	int declared_known = shape_known(&sh);

	if (apply_shape(c, s, t, &sh) < 0)
		return NULL;
	/* check_input names it, or check_replicated its copies */
	n = check_built(c, ir_input(c->p, s->tok.loc, NULL, t, &sh));
	if (n && !declared_known)
		n->dyn = IR_DYN_YES; /* its dims are a specialisation's */
	c->p->nunknown += n && !shape_known(&n->shape);
	return n;
}

static void
check_input(Checker *c, AstNode *s)
{
	IrNode *n;

	if (check_replicated(c, s, make_input)) /* one per worker */
		return;
	if ((n = make_input(c, s)) != NULL) {
		n->name = s->name;
		n->user_named = 1;
	}
	/* A failed definition is still defined (with no node), so that its
	   uses are not reported again. */
	check_define(c, s->name, s->tok.loc, n);
}

/* The value of assignment s (the caller names and defines it). */
static IrNode *
assign_value(Checker *c, AstNode *s)
{
	return check_expr(c, s->a);
}

PtrVec *
check_unpack_list(Checker *c, AstNode *s)
{
	PtrVec *l;

	if (!check_is_list(c, s->a)) {
		diag_error(c->d, ast_extent(s->a), "%d names take the elements "
			   "of a list (split, moments, top_k), not a tensor",
			   s->n);
		return NULL;
	}
	if ((l = check_list(c, s->a, "a list")) && l->n != s->n) {
		diag_error(c->d, ast_extent(s->a), "a list of %d tensor%s "
			   "cannot be given to %d names", l->n,
			   l->n == 1 ? "" : "s", s->n);
		return NULL;
	}
	return l;
}

/* a, b = LIST (spec §6.22 "split and lists"): a name for each element
 * of the list, or an error naming the counts (each name defined still,
 * so that its uses are not reported). */
static void
check_unpack(Checker *c, AstNode *s)
{
	PtrVec *l;

	c->stmt = s->name;
	l = check_unpack_list(c, s);
	c->stmt = NULL;
	for (int i = 0; i < s->n; i++) {
		IrNode *n = l ? l->v[i] : NULL;

		if (n && !n->name) {
			n->name = s->list[i]->name;
			n->user_named = 1;
		}
		check_define(c, s->list[i]->name, s->list[i]->tok.loc, n);
	}
}

static void
check_assign(Checker *c, AstNode *s)
{
	IrNode *n;

	if (check_replicated(c, s, assign_value)) /* one per worker */
		return;
	if (s->n) {
		check_unpack(c, s);
		return;
	}
	c->stmt = s->name;
	/* a list value (spec §6.22 "split and lists") */
	if (check_is_list(c, s->a)) {
		PtrVec *l = check_list(c, s->a, "a list");
		Sym *sym = check_define(c, s->name, s->tok.loc, NULL);
		if (sym)
			sym->list = l;
		c->stmt = NULL;
		return;
	}
	n = check_expr(c, s->a);
	c->stmt = NULL;
	if (n && !n->name) {
		n->name = s->name;
		n->user_named = 1;
	}
	/* A failed definition is still defined (with no node), so that its
	   uses are not reported again. */
	check_define(c, s->name, s->tok.loc, n);
}

static void check_stmts(Checker *c, AstNode *block, int top);

static void
replicas_body(Checker *c, AstNode *s)
{
	check_stmts(c, s, 0);
}

/* Inside a replicas block a device merges over the worker job, and for
 * variables over the ps job: both must still name a task there is. */
static int
replicas_fit(Checker *c, AstNode *s, Device d)
{
	Device base[2] = {c->rep->worker, c->rep->ps};

	for (int i = 0; i < 2; i++) {
		Device m = dev_complete(c->p, dev_merge(base[i], d));

		if (dev_task_index(c->p, m) < 0) {
			diag_error(c->d, s->loc, "device '%s' inside replicas "
				   "would name task %d of job '%s', which the "
				   "cluster does not have", s->str, m.task,
				   m.job);
			check_cluster_note(c, m.job);
			return -1;
		}
	}
	return 0;
}

static void
check_device(Checker *c, AstNode *s)
{
	Device saved = c->dev, d;

	if (s->a->kind == AST_CALL) { /* device replicas(...) */
		check_replicas(c, s, replicas_body);
		return;
	}
	if (!c->rep) {
		if (check_device_of(c, s->a, c->dev, &d) == 0)
			c->dev = d;
	} else if (check_device_of(c, s->a, dev_merge(c->rep->worker,
						      c->dev), &d) == 0 &&
		   replicas_fit(c, s->a, d) == 0) {
		/* what the string sets, over the enclosing blocks': the
		   replicas' jobs come in when a node is made */
		const char *err;
		int off;

		dev_parse(c->a, &d, s->a->str, &err, &off);
		c->dev = dev_merge(c->dev, d);
	}
	check_stmts(c, s, 0);
	c->dev = saved;
}

static void
check_stmts(Checker *c, AstNode *block, int top)
{
	for (int i = 0; i < block->n; i++) {
		AstNode *s = block->list[i];
		switch (s->kind) {
		case AST_CLUSTER:
			if (!top)
				diag_error(c->d, s->loc, "a cluster block must "
					   "be at the top level");
			break; /* done first, in check_program */
		case AST_DEVICE:
			check_device(c, s);
			break;
		case AST_ASSIGN:
			check_assign(c, s);
			break;
		case AST_INPUT:
			check_input(c, s);
			break;
		case AST_VAR:
			check_var(c, s);
			break;
		case AST_PARAM:
			break; /* its uses are literals now (params.c) */
		case AST_SESSION:
		case AST_PARALLEL:
			if (!top) {
				diag_error(c->d, s->loc, "a %s block must be at "
					   "the top level", s->kind == AST_SESSION
					   ? "session" : "parallel");
				break;
			}
			if (s->kind == AST_SESSION)
				check_session(c, s);
			else
				check_parallel(c, s);
			break;
		default:
			diag_error(c->d, s->loc, "this statement belongs in a "
				   "session block");
			break;
		}
	}
}

int
check_program(Program *p)
{
	Checker c = {0};
	AstNode *prog = p->ast;
	int before = p->diag->nerr;

	c.p = p;
	c.d = p->diag;
	c.a = p->arena;
	c.dev = DEVICE_UNSET;
	c.copy = -1;
	c.session_task = -1;
	if (params_apply(p) != 0)
		return p->diag->nerr - before;
	if (check_program_cluster(&c, prog) < 0)
		return p->diag->nerr - before;
	prescan(&c, prog);
	check_stmts(&c, prog, 1);
	if (p->diag->nerr == before)
		check_strings(&c); /* string ops become constants */
	check_shape_opts(&c);
	if (p->opt && p->opt->nfetch > 0) {
		/* tfgc run --fetch: one step replaces the sessions */
		c.sigs.n = c.sessions.n = 0;
		check_cli_session(&c, p->opt);
	}
	p->nsig = c.sigs.n;
	p->sigs = arena_alloc(c.a, (c.sigs.n + 1) * sizeof *p->sigs);
	for (int i = 0; i < c.sigs.n; i++)
		p->sigs[i] = *(IrSig *)c.sigs.v[i];
	p->nsession = c.sessions.n;
	p->sessions = arena_alloc(c.a, (c.sessions.n + 1) * sizeof(RtSession));
	for (int i = 0; i < c.sessions.n; i++)
		p->sessions[i] = *(RtSession *)c.sessions.v[i];
	return p->diag->nerr - before;
}
