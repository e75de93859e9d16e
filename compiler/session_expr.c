/*
 * compiler/session_expr.c: session expressions, lowered to the runtime's
 * RtExpr (spec §8.5 "Session expressions"): literals, locals, run(...)
 * with its feeds (each distinct run one IrSig), the session functions,
 * arithmetic, comparisons and formatting.  compiler/session.c lowers the
 * statements around them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"
#include "lang/parse.h"

RtExpr *
sess_new_expr(Checker *c, RtExprKind k, SrcLoc loc, int nargs)
{
	RtExpr *x = arena_alloc(c->a, sizeof *x);

	x->kind = k;
	x->where = diag_where(c->a, loc);
	x->nargs = nargs;
	x->args = arena_alloc(c->a, (nargs + 1) * sizeof *x->args);
	return x;
}

/* strbytes: the bytes of a string value (dtype string only) */
static RtExpr *
const_expr(Checker *c, SrcLoc loc, TfgDtype t, const TfgShape *s,
	   void *data, size_t strbytes)
{
	RtExpr *x = sess_new_expr(c, RT_E_CONST, loc, 0);
	RtTensor *v = arena_alloc(c->a, sizeof *v);

	v->dtype = t;
	v->shape = *s;
	v->nbytes = t == TFG_STRING ? strbytes
				    : (size_t)tfg_shape_numel(s) *
					  tfg_dtype_size(t);
	v->data = data;
	x->value = v;
	return x;
}

/* Whether x is known to be a string: a literal (a string param is one),
 * or + of strings (spec §8.5 "Session expressions"). */
int
sess_is_str(const RtExpr *x)
{
	return x->kind == RT_E_STR || x->kind == RT_E_FORMAT ||
	       (x->kind == RT_E_ADD && (sess_is_str(x->args[0]) ||
					sess_is_str(x->args[1])));
}

/* Whether x may be a string: known to be one, or a let's value. */
static int
may_be_str(const RtExpr *x)
{
	return sess_is_str(x) || x->kind == RT_E_VAR;
}

/* The inputs the nodes in `from` depend on, sorted by id. */
static void
needed_inputs(Checker *c, PtrVec *from, PtrVec *inputs)
{
	char *seen = ir_reach(c->p, (IrNode *const *)from->v, from->n, NULL,
			      0);
	for (int i = 0; i < c->p->g.nodes.n; i++) {
		IrNode *n = c->p->g.nodes.v[i];
		if (seen[i] && n->op == OP_input)
			vec_push(c->a, inputs, n);
	}
}

/* Whether s is the input shape `in`, whose unknown dims take any size. */
static int
shape_fits(const TfgShape *s, const TfgShape *in)
{
	if (s->rank != in->rank)
		return 0;
	for (int i = 0; i < s->rank; i++)
		if (in->dims[i] != IR_DIM_UNKNOWN && in->dims[i] != s->dims[i])
			return 0;
	return 1;
}

/* A feed's value: literals are converted now, to the input's dtype and
 * checked against its shape; anything else is checked when it runs. */
static RtExpr *
feed_value(Checker *c, AstNode *v, IrNode *in)
{
	char want[160], got[128];
	Lit l = check_lit_of(v);
	TfgShape s = {0, {0}};
	TfgDtype t;
	void *data;

	snprintf(want, sizeof want, "%s",
		 ir_type_str(c->a, in->dtype, &in->shape));
	if (l.kind) {
		if (in->shape.rank != 0) {
			diag_error(c->d, v->loc, "feed '%s' expects %s, got a "
				   "scalar", in->name, want);
			return NULL;
		}
		data = arena_alloc(c->a, 8);
		if (check_lit_store(c, v->loc, l, in->dtype, data) < 0)
			return NULL;
		return const_expr(c, v->loc, in->dtype, &s, data, 0);
	}
	if (v->kind == AST_TENSOR) {
		if (!(data = check_tensor_data(c, v, in->dtype, &t, &s, NULL)))
			return NULL;
		/* A specialisation runs no session: its literal feeds were
		   checked against the inputs as written by the generic
		   compile, and may be for other runs' shapes. */
		if (!(c->p->opt && c->p->opt->spec_sig) &&
		    !shape_fits(&s, &in->shape)) {
			diag_error(c->d, v->loc, "feed '%s' expects %s, got a "
				   "literal of shape %s", in->name, want,
				   tfg_shape_str(got, sizeof got, &s));
			return NULL;
		}
		return const_expr(c, v->loc, t, &s, data, 0);
	}
	return sess_expr(c, v);
}

static int
same_nodes(IrNode **a, int n, const PtrVec *b)
{
	if (n != b->n)
		return 0;
	for (int i = 0; i < n; i++)
		if (a[i] != b->v[i])
			return 0;
	return 1;
}

int
sess_sig_index(Checker *c, SrcLoc loc, PtrVec *fetch, PtrVec *targets,
	       PtrVec *inputs)
{
	IrSig *g;

	for (int i = 0; i < c->sigs.n; i++) {
		g = c->sigs.v[i];
		if (g->client == c->client &&
		    same_nodes(g->fetch, g->nfetch, fetch) &&
		    same_nodes(g->target, g->ntarget, targets) &&
		    same_nodes(g->feed, g->nfeed, inputs))
			return i;
	}
	g = arena_alloc(c->a, sizeof *g);
	g->client = c->client;
	g->nfetch = fetch->n;
	g->fetch = (IrNode **)fetch->v;
	g->ntarget = targets->n;
	g->target = (IrNode **)targets->v;
	g->nfeed = inputs->n;
	g->feed = (IrNode **)inputs->v;
	g->loc = loc;
	vec_push(c->a, &c->sigs, g);
	return c->sigs.n - 1;
}

/* The feed item for input `in`, or NULL. */
static AstNode *
feed_item(AstNode *feed, IrNode *in, Checker *c)
{
	for (int i = 0; feed && i < feed->n; i++) {
		Sym *s = check_find(&c->syms, feed->list[i]->name);
		if (s && check_copy_of(c, s) == in)
			return feed->list[i];
	}
	return NULL;
}

static int
check_feed_items(Checker *c, AstNode *feed)
{
	int bad = 0;

	for (int i = 0; feed && i < feed->n; i++) {
		AstNode *it = feed->list[i];
		Sym *s = check_find(&c->syms, it->name);
		if (!s) {
			check_lookup(c, it->a);
			bad = 1;
			continue;
		}
		if (s->node && s->node->op != OP_input) {
			diag_error(c->d, it->a->loc, "'%s' is not an input: "
				   "only inputs can be fed", it->name);
			diag_note(c->d, s->loc, "'%s' is defined here",
				  it->name);
			bad = 1;
		}
		for (int j = 0; j < i; j++) {
			if (strcmp(feed->list[j]->name, it->name) == 0) {
				diag_error(c->d, it->a->loc,
					   "'%s' is fed twice", it->name);
				diag_note(c->d, feed->list[j]->a->loc,
					  "first fed here");
				bad = 1;
			}
		}
	}
	return bad ? -1 : 0;
}

RtExpr *
sess_run_expr(Checker *c, AstNode *e)
{
	PtrVec fetch = {0}, inputs = {0}, extra = {0}, none = {0};
	int before = c->d->nerr;
	RtExpr *x;

	for (int i = 0; i < e->n; i++) {
		AstNode *f = e->list[i];
		IrNode *n;
		if (f->kind != AST_NAME) {
			habit_fetch(c, f);
			continue;
		}
		if (check_find(&c->locals, f->name)) {
			diag_error(c->d, f->loc, "'%s' is a loop variable, "
				   "not a graph value", f->name);
			continue;
		}
		if (check_list_sym(c, f)) {
			diag_error(c->d, f->loc, "'%s' is a list: fetch its "
				   "elements, named (p = %s[0])", f->name,
				   f->name);
			continue;
		}
		if ((n = check_lookup(c, f)) != NULL)
			vec_push(c->a, &fetch, n);
	}
	if (e->n == 0)
		diag_error(c->d, e->loc, "run() needs at least one value to "
			   "fetch");
	if (check_feed_items(c, e->b) < 0 || c->d->nerr > before)
		return NULL;
	needed_inputs(c, &fetch, &inputs);
	x = sess_new_expr(c, RT_E_RUN, e->loc, inputs.n);
	for (int i = 0; i < inputs.n; i++) {
		IrNode *in = inputs.v[i];
		AstNode *it = feed_item(e->b, in, c);
		if (!it) {
			diag_error(c->d, e->loc, "run() needs a value for "
				   "input '%s': add it to the feed",
				   in->name);
			diag_note(c->d, in->loc, "'%s' is declared here",
				  in->name);
			continue;
		}
		x->args[i] = feed_value(c, it->b, in);
	}
	/* Values for inputs that are not needed are still checked, and
	   computed when the run runs
	   (spec §8.3 "run: fetches, feeds and steps"). */
	for (int i = 0; e->b && i < e->b->n; i++) {
		AstNode *it = e->b->list[i];
		Sym *s = check_find(&c->syms, it->name);
		RtExpr *v;
		int used = 0;
		for (int j = 0; j < inputs.n; j++)
			used |= check_copy_of(c, s) == inputs.v[j];
		if (used || !s->node ||
		    !(v = feed_value(c, it->b, check_copy_of(c, s))))
			continue;
		if (v->kind != RT_E_CONST)
			vec_push(c->a, &extra, v);
	}
	if (c->d->nerr > before)
		return NULL;
	if (extra.n) {
		RtExpr **args = arena_alloc(c->a, (x->nargs + extra.n + 1) *
						      sizeof *args);
		memcpy(args, x->args, x->nargs * sizeof *args);
		memcpy(args + x->nargs, extra.v, extra.n * sizeof *args);
		x->args = args;
		x->nargs += extra.n;
	}
	x->sig = sess_sig_index(c, e->loc, &fetch, &none, &inputs);
	return x;
}

/* The variables named by call e's arguments, or every variable when it
 * has none; -1 if reported. */
static int
var_args(Checker *c, AstNode *e, PtrVec *vars)
{
	int before = c->d->nerr;

	if (e->b)
		diag_error(c->d, e->b->loc, "%s() takes no feed", e->name);
	if (e->n == 0) { /* the random makers' counts are not the user's */
		for (int i = 0; i < c->p->vars.n; i++)
			if (!((IrVar *)c->p->vars.v[i])->draw)
				vec_push(c->a, vars, c->p->vars.v[i]);
		return c->d->nerr > before ? -1 : 0;
	}
	for (int i = 0; i < e->n; i++) {
		AstNode *a = e->list[i];
		Sym *s;

		if (a->kind != AST_NAME) {
			diag_error(c->d, a->kind == AST_KWARG ? a->tok.loc
							      : ast_extent(a),
				   "%s() takes the names of variables",
				   e->name);
			continue;
		}
		if (!(s = check_find(&c->syms, a->name))) {
			check_lookup(c, a);
			continue;
		}
		if (!s->var) {
			diag_error(c->d, a->loc, "'%s' is not a variable",
				   a->name);
			continue;
		}
		for (int j = 0; j < vars->n; j++)
			if (vars->v[j] == s->var)
				diag_error(c->d, a->loc, "'%s' is named twice",
					   a->name);
		vec_push(c->a, vars, s->var);
	}
	return c->d->nerr > before ? -1 : 0;
}

/* initialize(v, ...): a run of the variables' initializers, for their
 * effect (spec §8.9 "Variables in a session"). */
RtExpr *
sess_init_expr(Checker *c, AstNode *e)
{
	PtrVec vars = {0}, targets = {0}, none = {0};
	RtExpr *x;

	if (var_args(c, e, &vars) < 0)
		return NULL;
	for (int i = 0; i < vars.n; i++)
		vec_push(c->a, &targets, ((IrVar *)vars.v[i])->init);
	x = sess_new_expr(c, RT_E_RUN, e->loc, 0);
	x->sig = sess_sig_index(c, e->loc, &none, &targets, &none);
	return x;
}

/* uninitialized(v, ...): a run fetching whether each is initialized,
 * and the names that go with the answers. */
RtExpr *
sess_uninit_expr(Checker *c, AstNode *e)
{
	PtrVec vars = {0}, fetch = {0}, none = {0};
	const char **names;
	RtExpr *run, *x;

	if (var_args(c, e, &vars) < 0)
		return NULL;
	names = arena_alloc(c->a, (vars.n + 1) * sizeof *names);
	for (int i = 0; i < vars.n; i++) {
		IrVar *v = vars.v[i];
		vec_push(c->a, &fetch, v->inited);
		names[i] = v->name;
	}
	run = sess_new_expr(c, RT_E_RUN, e->loc, 0);
	run->sig = sess_sig_index(c, e->loc, &fetch, &none, &none);
	x = sess_new_expr(c, RT_E_UNINIT, e->loc, 1);
	x->args[0] = run;
	x->names = names;
	return x;
}

/* The session's statements that are calls (spec §8.9 "Variables in a session"
 * to §8.11 "save and restore"). */
int
sess_statement_call(const char *name)
{
	return strcmp(name, "initialize") == 0 ||
	       strcmp(name, "wait_initialized") == 0 ||
	       strcmp(name, "sleep") == 0 || strcmp(name, "save") == 0 ||
	       strcmp(name, "restore") == 0 ||
	       strcmp(name, "save_every") == 0 ||
	       strcmp(name, "progress") == 0 || strcmp(name, "record") == 0;
}

/* val formatted by fmt (spec §8.5 "Session expressions"): printf-style
 * (`"%.3f" % x`) or a format spec (format(x, ".3f")); a format the
 * compiler knows is checked now, at f. */
static RtExpr *
format_expr(Checker *c, AstNode *f, RtExpr *fmt, RtExpr *val,
	    int printf_style)
{
	char why[300];
	RtExpr *x;

	if (fmt->kind == RT_E_STR &&
	    tfg_format_check(fmt->str, printf_style, why, sizeof why) < 0) {
		diag_error(c->d, ast_extent(f), "format '%s': %s", fmt->str,
			   why);
		return NULL;
	}
	x = sess_new_expr(c, RT_E_FORMAT, f->loc, 2);
	x->args[0] = fmt;
	x->args[1] = val;
	x->slot = printf_style;
	return x;
}

/* What a session may call (spec §6.7 "Calls"). */
static const char *const session_fns[] = {
	"run", "load", "len", "now", "exists", "format", "uninitialized",
	"initialize",
	"wait_initialized", "sleep", "save", "save_every", "restore",
	"batches", "progress", "record"};
enum { NSESSION_FNS = sizeof session_fns / sizeof *session_fns };

int
sess_fn(const char *name)
{
	for (int i = 0; i < NSESSION_FNS; i++)
		if (strcmp(session_fns[i], name) == 0)
			return 1;
	return 0;
}

static RtExpr *
call_session(Checker *c, AstNode *e)
{
	RtExpr *x;

	if (strcmp(e->name, "run") == 0)
		return sess_run_expr(c, e);
	if (strcmp(e->name, "uninitialized") == 0)
		return sess_uninit_expr(c, e);
	if (strcmp(e->name, "len") == 0) {
		if (e->n != 1 || e->b || e->list[0]->kind == AST_KWARG) {
			diag_error(c->d, e->loc, "len() takes one value");
			return NULL;
		}
		if (!(x = sess_new_expr(c, RT_E_LEN, e->loc, 1)) ||
		    !(x->args[0] = sess_expr(c, e->list[0])))
			return NULL;
		return x;
	}
	if (strcmp(e->name, "exists") == 0) {
		if (e->n != 1 || e->b || e->list[0]->kind == AST_KWARG) {
			diag_error(c->d, e->loc, "exists() takes one string: "
				   "a path");
			return NULL;
		}
		if (!(x = sess_new_expr(c, RT_E_EXISTS, e->loc, 1)) ||
		    !(x->args[0] = sess_expr(c, e->list[0])))
			return NULL;
		if (!may_be_str(x->args[0])) {
			diag_error(c->d, ast_extent(e->list[0]), "exists() "
				   "takes one string: a path");
			return NULL;
		}
		return x;
	}
	if (strcmp(e->name, "format") == 0) { /* Python's format() */
		AstNode *v = e->n >= 1 ? e->list[0] : NULL;
		AstNode *f = e->n == 2 ? e->list[1] : NULL;
		RtExpr *val, *spec;

		if (e->n < 1 || e->n > 2 || e->b ||
		    v->kind == AST_KWARG || (f && f->kind == AST_KWARG)) {
			diag_error(c->d, e->loc, "format() takes a value and a "
				   "format spec: format(x, \".3f\")");
			return NULL;
		}
		if (!(val = sess_expr(c, v)))
			return NULL;
		if (f) {
			if (!(spec = sess_expr(c, f)))
				return NULL;
			if (!may_be_str(spec)) {
				diag_error(c->d, ast_extent(f), "format()'s "
					   "spec is a string: format(x, "
					   "\".3f\")");
				return NULL;
			}
		} else {
			spec = sess_new_expr(c, RT_E_STR, e->loc, 0);
			spec->str = "";
		}
		return format_expr(c, f ? f : e, spec, val, 0);
	}
	if (strcmp(e->name, "now") == 0) {
		if (e->n != 0 || e->b) {
			diag_error(c->d, e->loc, "now() takes no arguments");
			return NULL;
		}
		return sess_new_expr(c, RT_E_NOW, e->loc, 0);
	}
	if (sess_statement_call(e->name)) {
		diag_error(c->d, e->a->loc, "%s() is a statement, not a value",
			   e->name);
		return NULL;
	}
	if (strcmp(e->name, "load") == 0) {
		AstNode *fm = e->n == 2 ? e->list[1] : NULL;

		if (e->n < 1 || e->n > 2 || e->list[0]->kind == AST_KWARG ||
		    e->b) {
			diag_error(c->d, e->loc, "load() takes one string: "
				   "the path of a .npy or IDX file");
			return NULL;
		}
		if (fm && (fm->kind != AST_KWARG ||
			   strcmp(fm->name, "format") != 0)) {
			diag_error(c->d, fm->loc, "load() takes a path, and "
				   "for a CIFAR-10 batch format=\"cifar10\"");
			return NULL;
		}
		if (fm && (fm->a->kind != AST_STRING ||
			   strcmp(fm->a->str, "cifar10") != 0)) {
			diag_error(c->d, fm->a->loc, "the format of load() is "
				   "\"cifar10\" (CIFAR-10's binary batches); "
				   ".npy and IDX files need none");
			return NULL;
		}
		x = sess_new_expr(c, RT_E_LOAD, e->loc, 1);
		x->str = fm ? "cifar10" : NULL;
		if (!(x->args[0] = sess_expr(c, e->list[0])))
			return NULL;
		if (!may_be_str(x->args[0])) {
			diag_error(c->d, ast_extent(e->list[0]), "load() takes "
				   "one string: the path of a .npy or IDX "
				   "file");
			return NULL;
		}
		return x;
	}
	if (strcmp(e->name, "batches") == 0) {
		diag_error(c->d, e->a->loc, "batches() is what a for loop "
			   "runs over: for b in batches(x, y, size) { ... }");
		return NULL;
	}
	if (builtin_lookup(e->name) >= 0) {
		diag_error(c->d, e->a->loc, "'%s' is a graph op: define the "
			   "value outside the session and fetch it with "
			   "run()", e->name);
		return NULL;
	}
	if (habit_report(c, e)) /* Variable(3), Session() */
		return NULL;
	{
		const char *w = check_nearest(e->name, session_fns, NSESSION_FNS);
		const char *g = w ? NULL : builtin_nearest(e->name);
		if (w)
			diag_error(c->d, e->a->loc, "unknown function '%s'; "
				   "did you mean '%s'?", e->name, w);
		else if (g)
			diag_error(c->d, e->a->loc, "unknown function '%s'; "
				   "did you mean '%s'? (a graph op: define the "
				   "value outside the session and fetch it "
				   "with run())", e->name, g);
		else
			diag_error(c->d, e->a->loc, "unknown function '%s' (a "
				   "session can call run, load, len, now, "
				   "exists, uninitialized, initialize, "
				   "wait_initialized, sleep, save, "
				   "save_every, restore, progress, record "
				   "and, in a for loop, batches)", e->name);
	}
	return NULL;
}

/* Session arithmetic works on scalars (spec §8.5 "Session expressions"): what
 * is known not to be one is refused here; load() is checked when it runs. */
int
sess_scalar(Checker *c, AstNode *e, RtExpr *x)
{
	const IrSig *g;

	switch (x->kind) {
	case RT_E_STR:
		diag_error(c->d, e->loc, "a string cannot be used in "
			   "arithmetic");
		return -1;
	case RT_E_CONST:
		if (x->value->dtype == TFG_STRING) {
			diag_error(c->d, e->loc, "a string cannot be used in "
				   "arithmetic");
			return -1;
		}
		if (x->value->dtype == TFG_BOOL) {
			diag_error(c->d, e->loc, "arithmetic does not take "
				   "bool operands");
			return -1;
		}
		if (x->value->shape.rank == 0)
			return 0;
		diag_error(c->d, e->loc, "arithmetic in a session works on "
			   "scalars, not on a tensor literal");
		return -1;
	case RT_E_RUN:
		g = c->sigs.v[x->sig];
		if (g->nfetch != 1) {
			diag_error(c->d, e->loc, "arithmetic needs one scalar, "
				   "but this run() fetches %d values",
				   g->nfetch);
			return -1;
		}
		if (g->fetch[0]->dtype == TFG_STRING) {
			diag_error(c->d, e->loc, "a string cannot be used in "
				   "arithmetic, but '%s' is %s",
				   g->fetch[0]->name,
				   ir_type_str(c->a, g->fetch[0]->dtype,
					       &g->fetch[0]->shape));
			return -1;
		}
		if (g->fetch[0]->shape.rank == 0)
			return 0;
		diag_error(c->d, e->loc, "arithmetic in a session works on "
			   "scalars, but '%s' is %s", g->fetch[0]->name,
			   ir_type_str(c->a, g->fetch[0]->dtype,
				       &g->fetch[0]->shape));
		return -1;
	default:
		return 0;
	}
}

/* a == b ... a >= b in a session (spec §8.5 "Session expressions"): scalars,
 * or strings for == and !=; a bool. */
static RtExpr *
compare(Checker *c, AstNode *e)
{
	static const RtExprKind ops[] = {[TK_EQ] = RT_E_EQ, [TK_NE] = RT_E_NE,
					 [TK_LT] = RT_E_LT, [TK_LE] = RT_E_LE,
					 [TK_GT] = RT_E_GT, [TK_GE] = RT_E_GE};
	RtExpr *a = sess_expr(c, e->a), *b = sess_expr(c, e->b), *x;
	int strs;

	if (!a || !b)
		return NULL;
	strs = sess_is_str(a) || sess_is_str(b);
	if (strs && (!may_be_str(a) || !may_be_str(b) ||
		     (e->op != TK_EQ && e->op != TK_NE))) {
		diag_error(c->d, e->loc, "strings compare only with strings, "
			   "and only with == and !=");
		return NULL;
	}
	if (!strs && (sess_scalar(c, e->a, a) < 0 ||
		      sess_scalar(c, e->b, b) < 0))
		return NULL;
	x = sess_new_expr(c, ops[e->op], e->loc, 2);
	x->args[0] = a;
	x->args[1] = b;
	return x;
}

/* b.x, b.y, b.index, b.count, b.size of `for b in batches(...)`: the
 * loop's slots (spec §8.6.1 "batches"). */
static RtExpr *
batch_field(Checker *c, AstNode *e, const Sym *b)
{
	static const char *const names[] = {"x", "y", "index", "count",
					    "size"};
	RtExpr *x;

	for (int k = 0; k < 5; k++) {
		if (strcmp(e->name, names[k]) != 0)
			continue;
		if (k == 1 && b->batch == 1) {
			diag_error(c->d, e->loc, "batches() was given one "
				   "array: %s.y is not there", b->name);
			diag_note(c->d, b->loc, "the loop is here");
			return NULL;
		}
		x = sess_new_expr(c, RT_E_VAR, e->loc, 0);
		x->slot = b->slot + k;
		return x;
	}
	diag_error(c->d, e->loc, "'%s' has %s, index, count and size, not "
		   "'%s'", b->name, b->batch == 1 ? "x" : "x, y", e->name);
	return NULL;
}

/* w.index, w.count of `session each ... as w`: constants of each
 * session. */
static RtExpr *
field(Checker *c, AstNode *e)
{
	TfgShape s = {0, {0}};
	Sym *b;
	int64_t *v;

	if (e->a->kind == AST_NAME &&
	    (b = check_find(&c->locals, e->a->name)) != NULL && b->batch)
		return batch_field(c, e, b);
	if (e->a->kind != AST_NAME || !c->each ||
	    strcmp(e->a->name, c->each) != 0) {
		diag_error(c->d, e->loc, "'.%s' of something that is not the "
			   "name of a 'session each ... as NAME'", e->name);
		return NULL;
	}
	if (strcmp(e->name, "index") != 0 && strcmp(e->name, "count") != 0) {
		diag_error(c->d, e->loc, "'%s' has 'index' and 'count', not "
			   "'%s'", c->each, e->name);
		return NULL;
	}
	v = arena_alloc(c->a, sizeof *v);
	*v = e->name[0] == 'i' ? c->each_index : c->each_count;
	return const_expr(c, e->loc, TFG_I64, &s, v, 0);
}

/* a + b of strings: joined now when both are literals, else when it
 * runs. */
static RtExpr *
join(Checker *c, AstNode *e, RtExpr *a, RtExpr *b)
{
	RtExpr *x;

	if (a->kind == RT_E_STR && b->kind == RT_E_STR) {
		x = sess_new_expr(c, RT_E_STR, e->loc, 0);
		x->str = arena_printf(c->a, "%s%s", a->str, b->str);
		return x;
	}
	x = sess_new_expr(c, RT_E_ADD, e->loc, 2);
	x->args[0] = a;
	x->args[1] = b;
	return x;
}

RtExpr *
sess_expr(Checker *c, AstNode *e)
{
	static const RtExprKind ops[] = {[TK_PLUS] = RT_E_ADD,
					 [TK_MINUS] = RT_E_SUB,
					 [TK_STAR] = RT_E_MUL,
					 [TK_SLASH] = RT_E_DIV,
					 [TK_PERCENT] = RT_E_MOD};
	TfgShape s = {0, {0}};
	Lit l = check_lit_of(e);
	RtExpr *x, *a, *b;
	Sym *sym;
	void *data;
	TfgDtype t;

	if (l.kind) {
		t = l.kind == 1 ? TFG_I64 : l.kind == 2 ? TFG_F64 : TFG_BOOL;
		data = arena_alloc(c->a, 8);
		check_lit_store(c, e->loc, l, t, data);
		return const_expr(c, e->loc, t, &s, data, 0);
	}
	switch (e->kind) {
	case AST_STRING:
		x = sess_new_expr(c, RT_E_STR, e->loc, 0);
		x->str = e->str;
		return x;
	case AST_TENSOR: {
		size_t nb;
		if (!(data = check_tensor_data(c, e, -1, &t, &s, &nb)))
			return NULL;
		return const_expr(c, e->loc, t, &s, data, nb);
	}
	case AST_NAME:
		if ((sym = check_find(&c->locals, e->name)) != NULL) {
			if (sym->batch) {
				diag_error(c->d, e->loc, "'%s' is a batch: use "
					   "%s.x%s, .index, .count or .size",
					   e->name, e->name,
					   sym->batch == 2 ? ", .y" : "");
				return NULL;
			}
			x = sess_new_expr(c, RT_E_VAR, e->loc, 0);
			x->slot = sym->slot;
			return x;
		}
		if (check_find(&c->syms, e->name)) {
			diag_error(c->d, e->loc, "'%s' is a graph value: fetch "
				   "it with run(%s)", e->name, e->name);
			return NULL;
		}
		check_lookup(c, e);
		return NULL;
	case AST_UNARY:
		if (!(a = sess_expr(c, e->a)) || sess_scalar(c, e->a, a) < 0)
			return NULL;
		x = sess_new_expr(c, RT_E_NEG, e->loc, 1);
		x->args[0] = a;
		return x;
	case AST_BINARY:
		if (check_is_compare(e->op))
			return compare(c, e);
		if (e->op == TK_AT) {
			diag_error(c->d, e->loc, "operator '%s' is not "
				   "available in session expressions",
				   ast_op_text(e->op));
			return NULL;
		}
		a = sess_expr(c, e->a);
		b = sess_expr(c, e->b);
		/* "%.3f ms" % x: Python's formatting
		   (spec §8.5 "Session expressions") */
		if (a && b && e->op == TK_PERCENT && sess_is_str(a))
			return format_expr(c, e->a, a, b, 1);
		if (a && b && e->op == TK_PLUS && (sess_is_str(a) || sess_is_str(b)) &&
		    may_be_str(a) && may_be_str(b))
			return join(c, e, a, b);
		if (!a || !b ||
		    (!(e->op == TK_PERCENT && a->kind == RT_E_VAR) &&
		     sess_scalar(c, e->a, a) < 0) ||
		    sess_scalar(c, e->b, b) < 0)
			return NULL;
		x = sess_new_expr(c, ops[e->op], e->loc, 2);
		x->args[0] = a;
		x->args[1] = b;
		return x;
	case AST_CALL:
		return call_session(c, e);
	case AST_FIELD:
		if (habit_report(c, e)) /* tf.float32 */
			return NULL;
		return field(c, e);
	case AST_METHOD: /* sess.run(y) */
		if (habit_report(c, e))
			return NULL;
		/* fall through */
	default:
		diag_error(c->d, e->loc, "this expression is not available "
			   "in a session block");
		return NULL;
	}
}
