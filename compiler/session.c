/*
 * compiler/session.c: session blocks, lowered to the runtime's RtStmt and
 * RtExpr (spec §8 "Sessions").  Part of the check phase: check_stmts() calls
 * check_session() for each session block, in source order, so names
 * resolve against what is defined above the session.
 *
 * Each distinct run(...) (client task, fetches in order, needed inputs)
 * becomes one IrSig.  Literal feeds are converted to the input's dtype
 * here; everything else is checked by the client when it runs.  The
 * expressions are compiler/session_expr.c's; the statements, the
 * session blocks and their tasks, and tfgc run --fetch's step are here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"
#include "lang/parse.h"

static void sblock(Checker *c, AstNode *block, int *n, RtStmt ***out);

/* The path that argument e of a session statement names, when the
 * program is compiled: a string literal, a param, or + of them (the
 * session joins them now); NULL after reporting what else it is. */
static const char *
const_path(Checker *c, AstNode *e, const char *fn, const char *what)
{
	int before = c->d->nerr;
	RtExpr *x = sess_expr(c, e);

	if (x && x->kind == RT_E_STR && x->str[0] != '\0')
		return x->str;
	if (c->d->nerr == before && x)
		diag_error(c->d, ast_extent(e), "%s() takes %s, a string the "
			   "compiler knows: a literal, a param, or + of them "
			   "(%s)", fn, what, x->kind == RT_E_STR
			   ? "this one is empty" : x->kind == RT_E_CONST
			   ? "not a number" : "this one is known only when the "
			   "session runs, as a let's value is");
	return NULL;
}

/* save("DIR"): a step fetching every variable, hidden ones included,
 * in their order; restore("DIR"): a step feeding and assigning every
 * one (spec §8.11 "save and restore"). */
static RtStmt *
checkpoint_stmt(Checker *c, AstNode *e, RtStmt *st, int save)
{
	PtrVec fetch = {0}, targets = {0}, inputs = {0};
	RtExpr *run;
	AstNode *dir = e->n >= 1 ? e->list[e->n - 1] : NULL;
	int every = strcmp(e->name, "save_every") == 0;
	const char *path;

	if (every && (e->n != 2 || e->b || e->list[0]->kind == AST_KWARG ||
		      dir->kind == AST_KWARG)) {
		diag_error(c->d, e->loc, "save_every() takes a number of "
			   "steps and a string: save_every(1000, \"DIR\")");
		return NULL;
	}
	if (!every && (e->n != 1 || e->b || dir->kind == AST_KWARG)) {
		diag_error(c->d, e->loc, "%s() takes one string: the "
			   "checkpoint's directory", e->name);
		return NULL;
	}
	if (!(path = const_path(c, dir, e->name, "the checkpoint's "
				"directory")))
		return NULL;
	if (every && (!(st->exprs[1] = sess_expr(c, e->list[0])) ||
		      sess_scalar(c, e->list[0], st->exprs[1]) < 0))
		return NULL;
	st->nexpr = 1 + every;
	for (int i = 0; i < c->p->vars.n; i++) {
		IrVar *v = c->p->vars.v[i];

		if (save && !v->read) { /* a hidden variable's, made now */
			v->read = check_var_node(c, v, OP_variable, NULL,
						 v->loc);
			v->read->name = v->name;
		}
		if (!save && !v->saved) {
			IrNode *in = ir_input(c->p, v->loc, arena_printf(c->a,
					      "%s/saved", v->name), v->dtype,
					      &v->shape);

			in->req = v->req;
			in->user_named = 0; /* made up: v's */
			v->saved = in;
			v->restore = check_var_node(c, v, OP_assign, in,
						    v->loc);
			v->restore->name = arena_printf(c->a, "%s/restore",
							v->name);
		}
		vec_push(c->a, &fetch, v->read);
		vec_push(c->a, &targets, v->restore);
		vec_push(c->a, &inputs, v->saved);
	}
	st->kind = every ? RT_S_SAVE_EVERY : save ? RT_S_CHECKPOINT
						  : RT_S_RESTORE;
	st->paths = arena_alloc(c->a, sizeof *st->paths);
	st->paths[0] = path;
	run = sess_new_expr(c, RT_E_RUN, e->loc, save ? 0 : c->p->vars.n);
	if (save) {
		PtrVec none = {0};
		run->sig = sess_sig_index(c, e->loc, &fetch, &none, &none);
	} else {
		PtrVec none = {0};
		run->sig = sess_sig_index(c, e->loc, &none, &targets, &inputs);
	}
	st->exprs[0] = run;
	return st;
}


/* ------------------------------------------------- progress and record */

/* A value of progress() or record(), keyword kw
 * (spec §8.13 "progress"): what is known not to be a number (an integer
 * when integer) is refused here, the rest when it runs. */
static RtExpr *
number_arg(Checker *c, const char *fn, AstNode *kw, int integer)
{
	RtExpr *x = sess_expr(c, kw->a);
	const char *why = NULL;
	const IrSig *g;
	const IrNode *f;
	TfgDtype t;

	if (!x)
		return NULL;
	if (sess_is_str(x))
		why = "this is a string";
	switch (x->kind) {
	case RT_E_CONST:
		t = x->value->dtype;
		if (x->value->shape.rank != 0)
			why = "this is a tensor literal";
		else if (t == TFG_STRING)
			why = "this is a string";
		else if (t == TFG_BOOL)
			why = "this is a bool";
		else if (integer && (t == TFG_F32 || t == TFG_F64))
			why = "this is a float";
		break;
	case RT_E_RUN:
		g = c->sigs.v[x->sig];
		if (g->nfetch != 1) {
			diag_error(c->d, ast_extent(kw->a), "%s(): %s= takes %s, "
				   "but this run() fetches %d values", fn,
				   kw->name, integer ? "an integer" :
				   "a number", g->nfetch);
			return NULL;
		}
		f = g->fetch[0];
		if (f->shape.rank == 0 && f->dtype != TFG_STRING &&
		    f->dtype != TFG_BOOL && !(integer && (f->dtype == TFG_F32 ||
						      f->dtype == TFG_F64)))
			break;
		diag_error(c->d, ast_extent(kw->a), "%s(): %s= takes %s, but "
			   "'%s' is %s", fn, kw->name, integer ? "an integer" :
			   "a number", f->name,
			   ir_type_str(c->a, f->dtype, &f->shape));
		return NULL;
	case RT_E_UNINIT:
		why = "this is a string tensor";
		break;
	case RT_E_EQ: case RT_E_NE: case RT_E_LT: case RT_E_LE:
	case RT_E_GT: case RT_E_GE:
		why = "this is a bool";
		break;
	default:
		break;
	}
	if (!why)
		return x;
	diag_error(c->d, ast_extent(kw->a), "%s(): %s= takes %s, but %s", fn,
		   kw->name, integer ? "an integer" : "a number", why);
	return NULL;
}

/* The keyword arguments of call e, each named once; -1 if reported
 * (usage: the message for anything else). */
static int
named_args(Checker *c, AstNode *e, int first, const char *usage)
{
	int before = c->d->nerr;

	if (e->b)
		diag_error(c->d, e->b->loc, "%s", usage);
	for (int i = first; i < e->n; i++) {
		AstNode *a = e->list[i];

		if (a->kind != AST_KWARG) {
			diag_error(c->d, ast_extent(a), "%s", usage);
			continue;
		}
		for (int j = first; j < i; j++)
			if (e->list[j]->kind == AST_KWARG &&
			    strcmp(e->list[j]->name, a->name) == 0) {
				diag_error(c->d, a->tok.loc, "%s() is given "
					   "%s= twice", e->name, a->name);
				break;
			}
	}
	return c->d->nerr > before ? -1 : 0;
}

/* progress(step=S, NAME=value, ...) (spec §8.13 "progress"): exprs[0]
 * the step (NULL: the count of calls), then the values, named in
 * paths.  The outermost of two loops or more around it is the epoch's. */
static RtStmt *
progress_stmt(Checker *c, AstNode *e, RtStmt *st)
{
	int n = 1, before = c->d->nerr;

	if (named_args(c, e, 0, "progress() takes named numbers: "
		       "progress(loss=l)") < 0)
		return NULL;
	st->kind = RT_S_PROGRESS;
	st->exprs = arena_alloc(c->a, (e->n + 2) * sizeof *st->exprs);
	st->paths = arena_alloc(c->a, (e->n + 2) * sizeof *st->paths);
	for (int i = 0; i < e->n; i++) {
		AstNode *a = e->list[i];

		if (strcmp(a->name, "step") == 0) {
			st->exprs[0] = number_arg(c, "progress", a, 1);
			continue;
		}
		st->paths[n] = a->name;
		st->exprs[n++] = number_arg(c, "progress", a, 0);
	}
	st->nexpr = n;
	if (c->d->nerr > before)
		return NULL;
	if (c->loops.n >= 2)
		((RtStmt *)c->loops.v[0])->epoch = 1;
	return st;
}

/* record("FILE.csv", NAME=value, ...) (spec §8.14 "record"): a row of
 * the session's file; its header gets the names it lacks. */
static RtStmt *
record_stmt(Checker *c, AstNode *e, RtStmt *st)
{
	static const char usage[] = "record() takes the CSV file's name, a "
		"string, then named numbers: record(\"curves.csv\", "
		"step=s, loss=l)";
	int before = c->d->nerr, k;
	RtCsv *f = NULL;
	const char *path;

	if (e->n < 2 || e->list[0]->kind == AST_KWARG) {
		diag_error(c->d, e->n ? ast_extent(e->list[0]) : e->loc, "%s",
			   usage);
		return NULL;
	}
	if (!(path = const_path(c, e->list[0], "record", "the CSV file's "
				"name")))
		return NULL;
	if (named_args(c, e, 1, usage) < 0)
		return NULL;
	for (k = 0; k < c->csv.n; k++)
		if (strcmp(((RtCsv *)c->csv.v[k])->path, path) == 0)
			f = c->csv.v[k];
	if (!f) {
		f = arena_alloc(c->a, sizeof *f);
		f->path = path;
		k = c->csv.n;
		vec_push(c->a, &c->csv, f);
	} else {
		for (k = 0; c->csv.v[k] != f; k++)
			;
	}
	st->kind = RT_S_RECORD;
	st->slot = k;
	st->nexpr = e->n - 1;
	st->exprs = arena_alloc(c->a, e->n * sizeof *st->exprs);
	st->cols = arena_alloc(c->a, e->n * sizeof *st->cols);
	for (int i = 1; i < e->n; i++) {
		AstNode *a = e->list[i];
		int col = 0;

		while (col < f->ncol && strcmp(f->cols[col], a->name) != 0)
			col++;
		if (col == f->ncol) { /* a new column: the header grows */
			const char **cols = arena_alloc(c->a, (f->ncol + 2) *
							      sizeof *cols);
			if (f->ncol)
				memcpy(cols, f->cols, f->ncol * sizeof *cols);
			cols[f->ncol++] = a->name;
			f->cols = cols;
		}
		st->cols[i - 1] = col;
		st->exprs[i - 1] = number_arg(c, "record", a, 0);
	}
	return c->d->nerr > before ? NULL : st;
}

/* The session's CSV files, each with a `time` column last unless a
 * record() names one. */
static void
session_csv(Checker *c, RtSession *rs)
{
	rs->ncsv = c->csv.n;
	rs->csv = arena_alloc(c->a, (c->csv.n + 1) * sizeof *rs->csv);
	for (int k = 0; k < c->csv.n; k++) {
		RtCsv *f = &rs->csv[k];
		const char **cols;

		*f = *(RtCsv *)c->csv.v[k];
		f->time = -1;
		for (int i = 0; i < f->ncol; i++)
			if (strcmp(f->cols[i], "time") == 0)
				break;
			else if (i == f->ncol - 1)
				f->time = f->ncol;
		if (f->time < 0)
			continue;
		cols = arena_alloc(c->a, (f->ncol + 2) * sizeof *cols);
		memcpy(cols, f->cols, f->ncol * sizeof *cols);
		cols[f->ncol++] = "time";
		f->cols = cols;
	}
}

/* initialize(...), wait_initialized(...), sleep(ms)
 * (spec §8.9 "Variables in a session", §8.10 "sleep"), save and restore
 * (§8.11 "save and restore"). */
static RtStmt *
call_stmt(Checker *c, AstNode *e, RtStmt *st)
{
	AstNode *t;

	st->exprs = arena_alloc(c->a, 2 * sizeof *st->exprs);
	st->nexpr = 1;
	if (strcmp(e->name, "save") == 0 || strcmp(e->name, "restore") == 0 ||
	    strcmp(e->name, "save_every") == 0)
		return checkpoint_stmt(c, e, st, e->name[0] == 's');
	if (strcmp(e->name, "progress") == 0)
		return progress_stmt(c, e, st);
	if (strcmp(e->name, "record") == 0)
		return record_stmt(c, e, st);
	if (strcmp(e->name, "initialize") == 0) {
		st->kind = RT_S_EXPR;
		return (st->exprs[0] = sess_init_expr(c, e)) ? st : NULL;
	}
	if (strcmp(e->name, "sleep") == 0) {
		st->kind = RT_S_SLEEP;
		if (e->n != 1 || e->b || e->list[0]->kind == AST_KWARG) {
			diag_error(c->d, e->loc, "sleep() takes the "
				   "milliseconds to sleep");
			return NULL;
		}
		if (!(st->exprs[0] = sess_expr(c, e->list[0])) ||
		    sess_scalar(c, e->list[0], st->exprs[0]) < 0)
			return NULL;
		return st;
	}
	/* wait_initialized(v, ..., timeout=S) */
	st->kind = RT_S_WAIT;
	t = check_kwarg(e, "timeout");
	for (int i = 0; i < e->n; i++)
		if (e->list[i]->kind == AST_KWARG && e->list[i]->a != t) {
			diag_error(c->d, e->list[i]->tok.loc, "%s() has no "
				   "argument '%s'", e->name,
				   e->list[i]->name);
			return NULL;
		}
	if (t) {
		AstNode k = *e;
		int n = 0;

		k.list = arena_alloc(c->a, (e->n + 1) * sizeof *k.list);
		for (int i = 0; i < e->n; i++)
			if (e->list[i]->kind != AST_KWARG)
				k.list[n++] = e->list[i];
		k.n = n;
		st->nexpr = 2;
		if (!(st->exprs[1] = sess_expr(c, t)) ||
		    sess_scalar(c, t, st->exprs[1]) < 0)
			return NULL;
		return (st->exprs[0] = sess_uninit_expr(c, &k)) ? st : NULL;
	}
	return (st->exprs[0] = sess_uninit_expr(c, e)) ? st : NULL;
}

/* let NAME = value: a new local of the block, or a new value for one
 * already in scope (not a loop variable). */
static RtStmt *
let_stmt(Checker *c, AstNode *s, RtStmt *st)
{
	Sym *v;
	int ok;

	st->kind = RT_S_LET;
	st->nexpr = 1;
	st->exprs = arena_alloc(c->a, sizeof *st->exprs);
	/* a let whose value fails is still defined, so that its uses
	   are not reported again ("unknown name") */
	ok = (st->exprs[0] = sess_expr(c, s->a)) != NULL;
	if ((v = check_find(&c->locals, s->name)) != NULL) {
		if (v->loop) {
			diag_error(c->d, s->tok.loc, "'%s' is a loop variable: "
				   "it cannot be given another value",
				   s->name);
			diag_note(c->d, v->loc, "the loop is here");
			return NULL;
		}
		if (v->pinned) {
			diag_error(c->d, s->tok.loc, "'%s' is batched by a loop "
				   "around: it cannot be given another value "
				   "in it", s->name);
			return NULL;
		}
		st->slot = v->slot;
		return ok ? st : NULL;
	}
	if ((v = check_find(&c->syms, s->name)) != NULL) {
		diag_error(c->d, s->tok.loc, "'%s' would hide the graph value "
			   "'%s'", s->name, s->name);
		diag_note(c->d, v->loc, "'%s' is defined here", s->name);
		return NULL;
	}
	v = arena_alloc(c->a, sizeof *v);
	v->name = s->name;
	v->loc = s->tok.loc;
	v->slot = st->slot = c->nslot++;
	sym_push(c->a, &c->locals, v);
	return ok ? st : NULL;
}

/* The variable of for loop s, in nslot slots from st->slot, in scope
 * until the caller drops it. */
static Sym *
loop_var(Checker *c, AstNode *s, RtStmt *st, int nslot)
{
	Sym *v;

	if ((v = check_find(&c->locals, s->name)) != NULL && v->loop) {
		diag_error(c->d, s->tok.loc, "loop variable '%s' is already "
			   "the variable of an enclosing loop", s->name);
		diag_note(c->d, v->loc, "the enclosing loop is here");
	} else if (v) {
		diag_error(c->d, s->tok.loc, "loop variable '%s' would hide "
			   "the let '%s': give the loop another name",
			   s->name, s->name);
		diag_note(c->d, v->loc, "'%s' is set here", s->name);
	} else if ((v = check_find(&c->syms, s->name)) != NULL) {
		diag_error(c->d, s->tok.loc, "loop variable '%s' would hide "
			   "the graph value '%s'", s->name, s->name);
		diag_note(c->d, v->loc, "'%s' is defined here", s->name);
	}
	v = arena_alloc(c->a, sizeof *v);
	v->name = s->name;
	v->loc = s->tok.loc;
	v->loop = 1;
	v->slot = st->slot = c->nslot;
	c->nslot += nslot;
	sym_push(c->a, &c->locals, v);
	return v;
}

/* An array of batches(), as far as the compiler knows: a tensor with rows,
 * not of strings (spec §8.6.1 "batches"). */
static int
batch_array(Checker *c, AstNode *e, RtExpr *x)
{
	const IrNode *f;
	const char *why = NULL;

	switch (x->kind) {
	case RT_E_VAR: case RT_E_LOAD:
		return 0;
	case RT_E_CONST:
		if (x->value->dtype == TFG_STRING)
			why = "a string tensor";
		else if (x->value->shape.rank == 0)
			why = "a scalar";
		break;
	case RT_E_RUN:
		if (((IrSig *)c->sigs.v[x->sig])->nfetch != 1) {
			diag_error(c->d, ast_extent(e), "batches() takes one "
				   "array, but this run() fetches %d values",
				   ((IrSig *)c->sigs.v[x->sig])->nfetch);
			return -1;
		}
		f = ((IrSig *)c->sigs.v[x->sig])->fetch[0];
		if (f->dtype == TFG_STRING || f->shape.rank == 0) {
			diag_error(c->d, ast_extent(e), "batches() takes "
				   "arrays with rows (of rank 1 or more, not "
				   "strings), but '%s' is %s", f->name,
				   ir_type_str(c->a, f->dtype, &f->shape));
			return -1;
		}
		return 0;
	case RT_E_UNINIT:
		why = "a string tensor";
		break;
	default:
		why = sess_is_str(x) ? "a string" : "a scalar";
		break;
	}
	if (!why)
		return 0;
	diag_error(c->d, ast_extent(e), "batches() takes arrays with rows (of "
		   "rank 1 or more, not strings), but this is %s", why);
	return -1;
}

/* An integer argument of batches() (what: its name in errors), or a bool
 * (drop_last=); a literal's value, checked against lo, in *v. */
static RtExpr *
batch_int(Checker *c, AstNode *e, const char *what, int64_t lo,
	  int64_t *v)
{
	int isbool = strcmp(what, "drop_last=") == 0;
	RtExpr *x = sess_expr(c, e);

	if (!x)
		return NULL;
	if (x->kind == RT_E_RUN && ((IrSig *)c->sigs.v[x->sig])->nfetch == 1) {
		const IrNode *f = ((IrSig *)c->sigs.v[x->sig])->fetch[0];

		if (f->shape.rank == 0 && (isbool ? f->dtype == TFG_BOOL :
		    f->dtype == TFG_U8 || f->dtype == TFG_I32 ||
		    f->dtype == TFG_I64))
			return x;
		diag_error(c->d, ast_extent(e), "batches(): %s must be %s, but "
			   "'%s' is %s", what, isbool ? "true or false" :
			   "an integer scalar", f->name,
			   ir_type_str(c->a, f->dtype, &f->shape));
		return NULL;
	}
	if (x->kind != RT_E_CONST) {
		if (sess_is_str(x) || sess_scalar(c, e, x) < 0) {
			if (sess_is_str(x))
				diag_error(c->d, ast_extent(e), "batches(): %s "
					   "must be %s, not a string", what,
					   isbool ? "true or false" :
					   "an integer");
			return NULL;
		}
		return x;
	}
	if (x->value->shape.rank != 0 || (isbool ? x->value->dtype != TFG_BOOL
		: (x->value->dtype == TFG_BOOL || x->value->dtype == TFG_F32 ||
		   x->value->dtype == TFG_F64 ||
		   x->value->dtype == TFG_STRING))) {
		diag_error(c->d, ast_extent(e), "batches(): %s must be %s",
			   what, isbool ? "true or false" :
			   "an integer scalar");
		return NULL;
	}
	if (isbool)
		return x;
	TFG_ASSERT(x->value->dtype == TFG_I64); /* session literals, w.index */
	*v = *(const int64_t *)x->value->data;
	if (*v < lo) {
		diag_error(c->d, ast_extent(e), "batches(): %s must be %lld or "
			   "more, got %lld", what, (long long)lo,
			   (long long)*v);
		return NULL;
	}
	return x;
}

/* for NAME in batches(x, [y,] size, seed=S, shard=K, of=N,
 * drop_last=B) { ... } (spec §8.6.1 "batches"). */
static RtStmt *
batches_stmt(Checker *c, AstNode *s, RtStmt *st)
{
	static const char *const kw[] = {"seed", "shard", "of", "drop_last"};
	AstNode *e = s->a, *pos[4], *kv[4] = {0};
	int npos = 0, before = c->d->nerr;
	int64_t shard = 0, of = -1, ignore;
	Sym *v, *pin[2] = {0};

	if (e->kind != AST_CALL || strcmp(e->name, "batches") != 0) {
		diag_error(c->d, ast_extent(e), "a for loop runs over a range "
			   "(lo..hi) or batches(...)");
		return NULL;
	}
	for (int i = 0; i < e->n; i++) {
		AstNode *a = e->list[i];
		int k = 0;

		if (a->kind != AST_KWARG) {
			if (npos < 4)
				pos[npos] = a;
			npos++;
			continue;
		}
		while (k < 4 && strcmp(a->name, kw[k]) != 0)
			k++;
		if (k == 4)
			diag_error(c->d, a->tok.loc, "batches() has no argument "
				   "'%s' (it has seed, shard, of and "
				   "drop_last)", a->name);
		else if (kv[k])
			diag_error(c->d, a->tok.loc, "batches() is given %s= "
				   "twice", a->name);
		else
			kv[k] = a->a;
	}
	if (npos < 2 || npos > 3 || e->b) {
		diag_error(c->d, e->loc, "batches() takes one or two arrays and "
			   "the batch size: batches(x, y, size, seed=S, "
			   "shard=K, of=N)");
		return NULL;
	}
	if (!kv[1] != !kv[2])
		diag_error(c->d, e->loc, "batches() takes shard= and of= "
			   "together");
	if (c->d->nerr > before)
		return NULL;
	st->kind = RT_S_BATCHES;
	st->nexpr = 7;
	st->exprs = arena_alloc(c->a, 8 * sizeof *st->exprs);
	for (int i = 0; i < npos - 1; i++) {
		RtExpr *x = sess_expr(c, pos[i]);

		if (!x || batch_array(c, pos[i], x) < 0)
			continue;
		st->exprs[i] = x;
		if (x->kind == RT_E_VAR && pos[i]->kind == AST_NAME)
			pin[i] = check_find(&c->locals, pos[i]->name);
	}
	st->exprs[2] = batch_int(c, pos[npos - 1], "the batch size", 1,
				 &ignore);
	if (kv[0])
		st->exprs[3] = batch_int(c, kv[0], "seed=", INT64_MIN, &ignore);
	if (kv[1]) {
		st->exprs[4] = batch_int(c, kv[1], "shard=", 0, &shard);
		st->exprs[5] = batch_int(c, kv[2], "of=", 1, &of);
	}
	if (kv[3])
		st->exprs[6] = batch_int(c, kv[3], "drop_last=", 0, &ignore);
	if (st->exprs[4] && st->exprs[4]->kind == RT_E_CONST && of > 0 &&
	    shard >= of)
		diag_error(c->d, ast_extent(kv[1]), "batches(): shard=%lld is "
			   "not one of the %lld shards 0 to %lld",
			   (long long)shard, (long long)of, (long long)of - 1);
	if (c->d->nerr > before)
		return NULL;
	v = loop_var(c, s, st, 5);
	v->batch = npos - 1;
	for (int i = 0; i < 2; i++)
		if (pin[i])
			pin[i]->pinned++;
	vec_push(c->a, &c->loops, st);
	sblock(c, s, &st->nbody, &st->body);
	c->loops.n--;
	for (int i = 0; i < 2; i++)
		if (pin[i])
			pin[i]->pinned--;
	sym_truncate(&c->locals, c->locals.v.n - 1);
	return st;
}

static RtStmt *
sstmt(Checker *c, AstNode *s)
{
	RtStmt *st = arena_alloc(c->a, sizeof *st);

	st->where = diag_where(c->a, s->loc);
	switch (s->kind) {
	case AST_PRINT:
		st->kind = RT_S_PRINT;
		st->nexpr = s->n;
		st->exprs = arena_alloc(c->a, s->n * sizeof *st->exprs);
		for (int i = 0; i < s->n; i++)
			st->exprs[i] = sess_expr(c, s->list[i]);
		return st;
	case AST_EXPRSTMT:
		if (s->a->kind == AST_CALL && sess_statement_call(s->a->name))
			return call_stmt(c, s->a, st);
		/* an unknown function, a graph op or TF's spelling is
		   reported as such, not as a value left unused */
		if (s->a->kind == AST_METHOD || (s->a->kind == AST_CALL &&
						 !sess_fn(s->a->name))) {
			sess_expr(c, s->a);
			return NULL;
		}
		if (s->a->kind != AST_CALL || strcmp(s->a->name, "run") != 0) {
			diag_error(c->d, s->a->loc, "this expression has no "
				   "effect: print it, or call run()");
			return NULL;
		}
		st->kind = RT_S_EXPR;
		st->nexpr = 1;
		st->exprs = arena_alloc(c->a, sizeof *st->exprs);
		st->exprs[0] = sess_expr(c, s->a);
		return st;
	case AST_LET:
		return let_stmt(c, s, st);
	case AST_IF:
		st->kind = RT_S_IF;
		st->nexpr = 1;
		st->exprs = arena_alloc(c->a, sizeof *st->exprs);
		if ((st->exprs[0] = sess_expr(c, s->a)) &&
		    st->exprs[0]->kind == RT_E_CONST &&
		    st->exprs[0]->value->dtype != TFG_BOOL)
			diag_error(c->d, ast_extent(s->a), "a condition is a "
				   "comparison or a bool");
		sblock(c, s, &st->nbody, &st->body);
		if (s->b)
			sblock(c, s->b, &st->nelse, &st->else_);
		return st;
	case AST_FOR:
		if (!s->b)
			return batches_stmt(c, s, st);
		st->kind = RT_S_FOR;
		st->nexpr = 2;
		st->exprs = arena_alloc(c->a, 2 * sizeof *st->exprs);
		st->exprs[0] = sess_expr(c, s->a);
		st->exprs[1] = sess_expr(c, s->b);
		loop_var(c, s, st, 1);
		vec_push(c->a, &c->loops, st);
		sblock(c, s, &st->nbody, &st->body);
		c->loops.n--;
		sym_truncate(&c->locals, c->locals.v.n - 1);
		return st;
	case AST_ASSIGN:
	case AST_INPUT:
		diag_error(c->d, s->tok.loc, "'%s' cannot be defined in a "
			   "session block: define it before the session",
			   s->name);
		return NULL;
	default:
		diag_error(c->d, s->loc, "this statement cannot be used in a "
			   "session block");
		return NULL;
	}
}

/* A block's lets are its own: they go at its end. */
static void
sblock(Checker *c, AstNode *block, int *n, RtStmt ***out)
{
	int nlocal = c->locals.v.n;

	*out = arena_alloc(c->a, (block->n + 1) * sizeof **out);
	*n = 0;
	for (int i = 0; i < block->n; i++) {
		RtStmt *st = sstmt(c, block->list[i]);
		if (st)
			(*out)[(*n)++] = st;
	}
	sym_truncate(&c->locals, nlocal);
}

/* ------------------------------------------------ session "grpc://..." */

#define GRPC "grpc://"

static int
is_target(const char *s)
{
	return strncmp(s, GRPC, strlen(GRPC)) == 0;
}

static int
loopback(const char *h, size_t n)
{
	return n == 9 && (strncmp(h, "localhost", 9) == 0 ||
			  strncmp(h, "127.0.0.1", 9) == 0);
}

/* Whether the cluster's address a ("host:port", as listed) is host:port:
 * the hosts as written, except that localhost and 127.0.0.1 are one. */
static int
addr_is(const char *a, const char *host, size_t hlen, long port)
{
	const char *colon = strrchr(a, ':');
	size_t alen;

	if (!colon || strtol(colon + 1, NULL, 10) != port)
		return 0;
	alen = (size_t)(colon - a);
	return (alen == hlen && strncmp(a, host, hlen) == 0) ||
	       (loopback(a, alen) && loopback(host, hlen));
}

/* The address of task `index` of job `job` in the program's own cluster
 * block as written (without one, the default cluster's,
 * spec §7.1 "The cluster"); NULL when it has no such task. */
static const char *
block_addr(Checker *c, const char *job, int index)
{
	const AstNode *cl = c->cluster;

	if (!cl)
		return strcmp(job, "local") == 0 && index == 0
			       ? "localhost:2222"
			       : NULL;
	for (int j = 0; j < cl->n; j++)
		if (strcmp(cl->list[j]->name, job) == 0)
			return index < cl->list[j]->n
				       ? cl->list[j]->list[index]->str
				       : NULL;
	return NULL;
}

/* The task whose address in cluster cl (an AST_CLUSTER: jobs, each a list
 * of addresses; NULL: the default cluster) is host:port, if the cluster
 * in use has it; -1 if none. */
static int
match_in(Checker *c, const AstNode *cl, const char *host, size_t hlen,
	 long port)
{
	for (int j = 0; cl ? j < cl->n : j < 1; j++) {
		const char *job = cl ? cl->list[j]->name : "local";
		int n = cl ? cl->list[j]->n : 1;

		for (int k = 0; k < n; k++) {
			const char *a = cl ? cl->list[j]->list[k]->str
					   : "localhost:2222";
			int t;

			if (addr_is(a, host, hlen, port) &&
			    (t = dev_task_index(c->p, (Device){job, k,
							       DEV_UNSET,
							       -1})) >= 0)
				return t;
		}
	}
	return -1;
}

/* The error of a target no task has: the cluster's tasks and addresses,
 * each with its address in the program's block where that differs. */
static void
no_such_target(Checker *c, AstNode *str)
{
	char list[1024];
	size_t n = 0;
	int shown = 0;

	list[0] = '\0';
	for (int t = 0; t < c->p->ntask && n < sizeof list; t++) {
		const CTask *k = &c->p->tasks[t];
		const char *b = block_addr(c, k->job, k->index);

		if (shown == 8) {
			n += snprintf(list + n, sizeof list - n, ", and %d more",
				      c->p->ntask - t);
			break;
		}
		n += snprintf(list + n, sizeof list - n, "%s%s at %s",
			      shown++ ? ", " : "", k->name, k->addr);
		if (b && strcmp(b, k->addr) != 0 && n < sizeof list)
			n += snprintf(list + n, sizeof list - n,
				      " (%s in the program)", b);
	}
	diag_error(c->d, str->loc, "no task of the cluster listens on %s; its "
		   "task%s %s %s", str->str, c->p->ntask == 1 ? "" : "s",
		   c->p->ntask == 1 ? "is" : "are", list);
}

/* session "grpc://HOST:PORT": the index of the task at that address, as
 * tf.Session(target) connects to it (spec §8.1 "Session blocks").  The
 * addresses are those of the program's cluster as written, then of
 * --cluster or TF_CONFIG, then after --addr: the program's come first so
 * that every process resolves a target it names alike, whatever
 * addresses its command line gave (tfgc run --free-ports gives the
 * servers others).  -1 after reporting. */
static int
target_task(Checker *c, AstNode *str)
{
	const char *hp = str->str + strlen(GRPC);
	const char *colon = strrchr(hp, ':');
	size_t hlen = colon ? (size_t)(colon - hp) : 0;
	char *end = NULL;
	long port = colon ? strtol(colon + 1, &end, 10) : 0;
	const CompileOptions *o = c->p->opt;
	int t;

	if (!colon || hlen == 0 || strchr(hp, '/') ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    end == colon + 1 || port < 1 || port > 65535) {
		diag_error(c->d, str->loc, "invalid session target '%s': "
			   "expected grpc://HOST:PORT, the address of a task "
			   "of the cluster", str->str);
		return -1;
	}
	if ((t = match_in(c, c->cluster, hp, hlen, port)) >= 0 ||
	    (o && o->cluster &&
	     (t = match_in(c, o->cluster, hp, hlen, port)) >= 0))
		return t;
	for (t = 0; t < c->p->ntask; t++)
		if (addr_is(c->p->tasks[t].addr, hp, hlen, port))
			return t;
	no_such_target(c, str);
	return -1;
}

/* One session on task `task`, of group c->group. */
static void
session_on(Checker *c, AstNode *s, int task)
{
	RtSession *rs = arena_alloc(c->a, sizeof *rs);

	rs->task = task;
	rs->group = c->group;
	rs->label = c->group ? c->p->tasks[task].name : NULL;
	c->client = rs->task;
	c->session_task = task; /* its copies of replicated values */
	c->nslot = 0;
	sym_truncate(&c->locals, 0);
	c->loops.n = 0;
	c->csv.n = 0;
	sblock(c, s, &rs->nstmt, &rs->stmts);
	c->session_task = -1;
	rs->nslot = c->nslot;
	session_csv(c, rs);
	vec_push(c->a, &c->sessions, rs);
}

/* session each "/job:J" [as w] { ... }: one session per task of J, all
 * at once (spec §8.1 "Session blocks"). */
static void
each_session(Checker *c, AstNode *s)
{
	Device d = DEVICE_UNSET;
	const CJob *job = NULL;
	int outer = c->group, before = c->d->nerr;

	if (is_target(s->a->str)) {
		diag_error(c->d, s->a->loc, "session each runs a session on "
			   "every task of a job: name the job (\"/job:worker\"),"
			   " not the address of one task");
		return;
	}
	if (check_device_of(c, s->a, DEVICE_UNSET, &d) < 0)
		return;
	if (!d.job || d.task >= 0) {
		diag_error(c->d, s->a->loc, "session each runs a session on "
			   "every task of a job: name the job alone "
			   "(\"/job:worker\")");
		return;
	}
	for (int j = 0; j < c->p->njob; j++)
		if (strcmp(c->p->jobs[j].name, d.job) == 0)
			job = &c->p->jobs[j];
	TFG_ASSERT(job != NULL); /* check_device_of knows the jobs */
	if (!outer)
		c->group = ++c->ngroup;
	c->each = s->name;
	c->each_count = job->ntask;
	/* the body is checked once per task; its errors once */
	for (int k = 0; k < job->ntask && c->d->nerr == before; k++) {
		c->each_index = k;
		session_on(c, s, job->first + k);
	}
	c->each = NULL;
	c->group = outer;
}

void
check_session(Checker *c, AstNode *s)
{
	Device d = DEVICE_UNSET;
	int task;

	if (s->ival) {
		each_session(c, s);
		return;
	}
	if (s->a && is_target(s->a->str)) {
		if ((task = target_task(c, s->a)) < 0)
			return;
		session_on(c, s, task);
		return;
	}
	if (s->a && check_device_of(c, s->a, DEVICE_UNSET, &d) < 0)
		return;
	task = dev_task_index(c->p, dev_complete(c->p, d));
	TFG_ASSERT(task >= 0);
	session_on(c, s, task);
}

/* parallel { session ... session each ... }: sessions that run at once
 * (spec §8.1 "Session blocks"). */
void
check_parallel(Checker *c, AstNode *s)
{
	c->group = ++c->ngroup;
	for (int i = 0; i < s->n; i++) {
		if (s->list[i]->kind == AST_SESSION)
			check_session(c, s->list[i]);
		else
			diag_error(c->d, s->list[i]->loc, "a parallel block "
				   "holds sessions only");
	}
	c->group = 0;
}

/* --------------------------------------------------- tfgc run --fetch */

static AstNode *
cli_node(Checker *c, AstKind k, const char *name)
{
	AstNode *n = arena_alloc(c->a, sizeof *n);

	n->kind = k;
	n->name = name;
	return n;
}

static void
cli_list(Checker *c, AstNode *n, int len)
{
	n->n = len;
	n->list = arena_alloc(c->a, (len + 1) * sizeof *n->list);
}

/* The session of `tfgc run FILE --feed x=a.npy --fetch y [--out y.npy]`
 * (spec §10.2 "Feeds and fetches from the command line"): one run on the first
 * job's task 0, as if written
 *     session { print run(y, feed { x: load("a.npy") }) }
 * or, with --out, each fetch saved to its file instead of printed.
 * Messages about it have no source location: they name the flag. */
void
check_cli_session(Checker *c, const CompileOptions *o)
{
	AstNode *call = cli_node(c, AST_CALL, "run");
	RtSession *rs = arena_alloc(c->a, sizeof *rs);
	RtStmt *st = arena_alloc(c->a, sizeof *st);
	RtExpr *x;

	call->a = cli_node(c, AST_NAME, "run");
	cli_list(c, call, o->nfetch);
	for (int i = 0; i < o->nfetch; i++)
		call->list[i] = cli_node(c, AST_NAME, o->fetch[i]);
	if (o->nfeed > 0) {
		call->b = cli_node(c, AST_FEED, NULL);
		cli_list(c, call->b, o->nfeed);
		for (int i = 0; i < o->nfeed; i++) {
			const char *eq = strchr(o->feed[i], '=');
			char *name = arena_strndup(c->a, o->feed[i],
						   eq - o->feed[i]);
			AstNode *it = cli_node(c, AST_FEEDITEM, name);
			AstNode *load = cli_node(c, AST_CALL, "load");
			it->a = cli_node(c, AST_NAME, name);
			load->a = cli_node(c, AST_NAME, "load");
			cli_list(c, load, 1);
			load->list[0] = cli_node(c, AST_STRING, NULL);
			load->list[0]->str = eq + 1;
			it->b = load;
			call->b->list[i] = it;
		}
	}
	rs->task = c->p->jobs[0].first;
	c->client = rs->task;
	c->nslot = 0;
	sym_truncate(&c->locals, 0);
	if (!(x = sess_run_expr(c, call)))
		return;
	for (int i = 0; i < o->nout && i < o->nfetch; i++) {
		const IrNode *f = ((IrSig *)c->sigs.v[x->sig])->fetch[i];
		if (f->dtype == TFG_STRING) /* NumPy's <U is UTF-32 */
			diag_error(c->d, (SrcLoc){0}, "--out '%s': '%s' is %s, "
				   "and string tensors cannot be written to "
				   ".npy files", o->out[i], o->fetch[i],
				   ir_type_str(c->a, f->dtype, &f->shape));
	}
	st->kind = o->nout ? RT_S_SAVE : RT_S_PRINT;
	st->where = "tfgc";
	st->nexpr = 1;
	st->exprs = arena_alloc(c->a, sizeof *st->exprs);
	st->exprs[0] = x;
	st->paths = o->out;
	rs->nstmt = 1;
	rs->stmts = arena_alloc(c->a, sizeof *rs->stmts);
	rs->stmts[0] = st;
	vec_push(c->a, &c->sessions, rs);
}
