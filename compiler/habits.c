/*
 * compiler/habits.c: what a TF1 user writes out of habit, and what tfg
 * writes instead (spec §9.1 "Compile-time diagnostics", issue 13).
 *
 * The parser takes x.f(...) (AST_METHOD) and x.f (AST_FIELD) anywhere an
 * expression may stand, so tf.reduce_sum(x), sess.run(y) and
 * tf.train.GradientDescentOptimizer(0.1).minimize(loss) reach the checker
 * whole, and the one error of the statement can name tfg's spelling of
 * the whole thing, built from the program's own text ("write 'minimize(
 * loss, sgd(0.1))'").  Calls and names without a tf. in front (Variable,
 * placeholder, True) come here from the checker's "unknown" paths.  Every
 * suggestion is tfg syntax that the spec describes; where there is none
 * the message says what tfg has not.
 *
 * The checker treats a statement whose value fails here as any failed
 * definition: defined without a node, so later uses are not reported
 * again.
 */
#include <string.h>

#include "compiler/compiler_int.h"

/* TF names whose tfg spelling is another name or construct: `to` is
 * what to write, with %s for the call's arguments as written where
 * `args` is set (sgd(0.1) from GradientDescentOptimizer(0.1)). */
typedef struct Rename {
	const char *tf;
	const char *to;
	int args;
} Rename;

static const Rename optimizers[] = {
	{"GradientDescentOptimizer", "sgd(%s)", 1},
	{"MomentumOptimizer", "momentum(%s)", 1},
	{"AdamOptimizer", "adam(%s)", 1},
	{"AdagradOptimizer", "adagrad(%s)", 1},
	{"FtrlOptimizer", "ftrl(%s)", 1},
};

static const Rename renames[] = {
	{"softmax_cross_entropy_with_logits", "softmax_cross_entropy(%s)", 1},
	{"softmax_cross_entropy_with_logits_v2", "softmax_cross_entropy(%s)",
	 1},
	{"sparse_softmax_cross_entropy_with_logits",
	 "sparse_softmax_cross_entropy(%s)", 1},
	{"sigmoid_cross_entropy_with_logits", "sigmoid_cross_entropy(%s)", 1},
	{"gradients", "grad(%s)", 1},
	{"multiply", "a * b", 0},
	{"add", "a + b", 0},
	{"subtract", "a - b", 0},
	{"divide", "a / b", 0},
	{"float32", "f32", 0},
	{"float64", "f64", 0},
	{"int32", "i32", 0},
	{"int64", "i64", 0},
	{"uint8", "u8", 0},
	{"bool", "bool", 0},
	{"string", "string", 0},
};

/* The program's text of l, or NULL when it is too long to quote or runs
 * over lines. */
static const char *
text(Checker *c, SrcLoc l)
{
	const char *s = l.file ? l.file->text + l.off : NULL;

	if (!s || l.len == 0 || l.len > 60 || memchr(s, '\n', l.len))
		return NULL;
	return arena_strndup(c->a, s, l.len);
}

/* The text between the parentheses of call or method e: its arguments as
 * written, or "..." when they do not fit a message. */
static const char *
args_text(Checker *c, const AstNode *e)
{
	const char *src = e->loc.file ? e->loc.file->text : NULL;
	uint32_t lo = e->tok.loc.off + e->tok.loc.len, hi;
	SrcLoc l = e->loc;

	if (!src || e->n == 0)
		return "";
	while (lo < e->loc.off + e->loc.len && src[lo] != '(')
		lo++;
	lo++;
	hi = e->loc.off + e->loc.len - 1; /* the ')' */
	while (lo < hi && (src[lo] == ' ' || src[lo] == '\t'))
		lo++;
	while (hi > lo && (src[hi - 1] == ' ' || src[hi - 1] == '\t'))
		hi--;
	l.off = lo;
	l.len = hi - lo;
	const char *t = text(c, l);
	return t ? t : "...";
}

/* Whether e is a name, a field or a method call whose leftmost part is
 * the name tf: TF's module. */
static int
from_tf(const AstNode *e)
{
	while (e->kind == AST_FIELD || e->kind == AST_METHOD)
		e = e->a;
	return e->kind == AST_NAME && strcmp(e->name, "tf") == 0;
}

/* e as TF writes it up to its name: "tf.train.GradientDescentOptimizer",
 * "Variable". */
static const char *
tf_name(Checker *c, const AstNode *e)
{
	SrcLoc l = e->kind == AST_CALL ? e->a->loc : e->loc;
	const char *t;

	if (e->kind == AST_METHOD || e->kind == AST_FIELD)
		l.len = e->tok.loc.off + e->tok.loc.len - l.off;
	t = text(c, l);
	return t ? t : e->name;
}

/* The keyword or first positional argument of call e. */
static AstNode *
arg(AstNode *e, int pos, const char *kw)
{
	AstNode *k = check_kwarg(e, kw);

	if (k)
		return k;
	return pos < e->n && e->list[pos]->kind != AST_KWARG ? e->list[pos]
							     : NULL;
}

/* The name the statement being checked defines ("w" in w = ...), or a
 * stand-in. */
static const char *
defined(Checker *c, const char *stand_in)
{
	const char *at;

	if (!c->stmt)
		return stand_in;
	if ((at = strchr(c->stmt, '@')) != NULL) /* a replica's copy */
		return arena_strndup(c->a, c->stmt, (size_t)(at - c->stmt));
	return c->stmt;
}

/* tfg's dtype for TF's dtype argument d (tf.float32, float32, f32,
 * "float32"), or "f32" when it cannot tell. */
static const char *
dtype_of(const AstNode *d)
{
	const char *n = NULL;
	TfgDtype t;

	if (d && (d->kind == AST_NAME || d->kind == AST_FIELD))
		n = d->name;
	else if (d && d->kind == AST_STRING)
		n = d->str;
	if (n && check_dtype_named(n, &t) == 0)
		return tfg_dtype_name(t);
	return "f32";
}

/* tfg's dims for TF's shape argument s ([None, 784] → [?, 784]), or
 * "[...]". */
static const char *
dims_of(Checker *c, const AstNode *s)
{
	char buf[200] = "[";

	if (!s || s->kind != AST_TENSOR || s->n > 8)
		return "[...]";
	for (int i = 0; i < s->n; i++) {
		const AstNode *d = s->list[i];
		char one[24];

		if (d->kind == AST_INT)
			snprintf(one, sizeof one, "%lld", (long long)d->ival);
		else if (d->kind == AST_NAME && strcmp(d->name, "None") == 0)
			strcpy(one, "?");
		else
			return "[...]";
		if (i)
			strcat(buf, ", ");
		strcat(buf, one);
	}
	strcat(buf, "]");
	return arena_strdup(c->a, buf);
}

/* What tfg writes for the optimizer TF makes with call e
 * (GradientDescentOptimizer(0.1) → sgd(0.1)), or NULL. */
static const char *
optimizer(Checker *c, const AstNode *e)
{
	if (e->kind != AST_CALL && e->kind != AST_METHOD)
		return NULL;
	if (e->kind == AST_CALL && (strcmp(e->name, "sgd") == 0 ||
				    strcmp(e->name, "momentum") == 0 ||
				    strcmp(e->name, "adam") == 0))
		return text(c, e->loc);
	for (size_t i = 0; i < sizeof optimizers / sizeof *optimizers; i++)
		if (strcmp(e->name, optimizers[i].tf) == 0) {
			const char *a = args_text(c, e);
			/* TF's learning_rate= is lr= */
			if (strncmp(a, "learning_rate", 13) == 0)
				a = arena_printf(c->a, "lr%s", a + 13);
			return arena_printf(c->a, optimizers[i].to, a);
		}
	return NULL;
}

/* The message for TF's name n (called as e when e is a call or method),
 * or NULL when tfg spells it the same or not at all. */
static const char *
spelling(Checker *c, AstNode *e, const char *n)
{
	int call = e->kind == AST_CALL || e->kind == AST_METHOD;
	const char *o;

	if (strcmp(n, "Variable") == 0 && call) {
		AstNode *v = arg(e, 0, "initial_value");
		const char *vt = v ? text(c, ast_extent(v)) : NULL;
		return arena_printf(c->a, "declare a variable with var: "
				    "'var %s = %s'", defined(c, "w"),
				    vt ? vt : "VALUE");
	}
	if (strcmp(n, "placeholder") == 0 && call)
		return arena_printf(c->a, "declare an input with 'input %s: "
				    "%s%s'", defined(c, "x"),
				    dtype_of(arg(e, 0, "dtype")),
				    dims_of(c, arg(e, 1, "shape")));
	if (strcmp(n, "Session") == 0 || strcmp(n, "InteractiveSession") == 0)
		return "a session is a block of statements that run steps: "
		       "session { print run(y) }";
	if (strcmp(n, "global_variables_initializer") == 0 ||
	    strcmp(n, "initialize_all_variables") == 0 ||
	    strcmp(n, "variables_initializer") == 0)
		return "in a session block, 'initialize()' runs the "
		       "initializers of the variables";
	if (strcmp(n, "device") == 0 && call) {
		AstNode *d = arg(e, 0, "device_name");
		const char *dt = d && d->kind == AST_STRING ?
				 text(c, d->loc) : NULL;
		return arena_printf(c->a, "a device block places what it "
				    "holds: device %s { ... }",
				    dt ? dt : "\"/job:J/task:T\"");
	}
	if (strcmp(n, "Saver") == 0)
		return "in a session block, save(\"DIR\") and restore(\"DIR\") "
		       "write and read a checkpoint";
	if ((o = optimizer(c, e)) != NULL)
		return arena_printf(c->a, "an optimizer is minimize's "
				    "argument: write 'minimize(loss, %s)'", o);
	for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++)
		if (strcmp(n, renames[i].tf) == 0) {
			if (renames[i].args && !call)
				break;
			return arena_printf(c->a, "write '%s'",
					    renames[i].args ?
					    arena_printf(c->a, renames[i].to,
							 args_text(c, e)) :
					    renames[i].to);
		}
	return NULL;
}

int
habit_report(Checker *c, AstNode *e)
{
	const char *name, *why, *w;
	SrcLoc at = e->kind == AST_CALL ? e->a->loc : e->loc;
	int call;

	if (e->kind != AST_METHOD && e->kind != AST_FIELD &&
	    e->kind != AST_CALL && e->kind != AST_NAME)
		return 0;
	call = e->kind == AST_CALL || e->kind == AST_METHOD;
	name = tf_name(c, e);
	if (e->kind == AST_NAME) {
		if (strcmp(e->name, "True") == 0 ||
		    strcmp(e->name, "False") == 0)
			diag_error(c->d, at, "unknown name '%s': tfg writes "
				   "%s", e->name, strcmp(e->name, "True") == 0
				   ? "true" : "false");
		else if (strcmp(e->name, "None") == 0)
			diag_error(c->d, at, "tfg has no None (an unknown "
				   "dimension of an input is '?': input x: "
				   "f32[?, 784])");
		else
			return 0;
		return 1;
	}
	if (e->kind == AST_METHOD && strcmp(e->name, "minimize") == 0) {
		AstNode *l = arg(e, 0, "loss");
		const char *lt = l ? text(c, ast_extent(l)) : NULL;
		const char *ot = optimizer(c, e->a);
		diag_error(c->d, at, "tfg has no optimizer objects: an optimizer "
			   "is minimize's argument: write 'minimize(%s, %s)'",
			   lt ? lt : "loss", ot ? ot : "sgd(lr)");
		return 1;
	}
	/* tf.Session().run(y): what the value is made by comes first */
	if (e->kind == AST_METHOD && e->a->kind == AST_METHOD)
		return habit_report(c, e->a);
	if ((e->kind == AST_METHOD || e->kind == AST_FIELD) && from_tf(e)) {
		why = spelling(c, e, e->name);
		if (why) {
			diag_error(c->d, at, "tfg has no '%s': %s", name, why);
			return 1;
		}
		if (call && builtin_lookup(e->name) >= 0) {
			diag_error(c->d, at, "tfg has no 'tf.' module: call "
				   "'%s(%s)'", e->name, args_text(c, e));
			return 1;
		}
		w = builtin_nearest(e->name);
		diag_error(c->d, at, "tfg has no '%s': no 'tf.' module, and "
			   "no function '%s'%s%s%s", name, e->name,
			   w ? "; did you mean '" : "", w ? w : "",
			   w ? "'?" : "");
		return 1;
	}
	if (e->kind == AST_FIELD)
		return 0; /* w.index: the session's business */
	if ((why = spelling(c, e, e->name)) != NULL) {
		diag_error(c->d, at, "tfg has no '%s': %s", name, why);
		return 1;
	}
	if (e->kind == AST_CALL)
		return 0;
	/* a method of something else: sess.run(y), y.eval(), v.assign(1) */
	if (strcmp(e->name, "run") == 0) {
		diag_error(c->d, at, "tfg has no session objects: in a session "
			   "block, call 'run(%s)'",
			   args_text(c, e));
	} else if (strcmp(e->name, "eval") == 0) {
		const char *v = text(c, ast_extent(e->a));
		diag_error(c->d, at, "tfg has no eval(): in a session block, "
			   "'print run(%s)'", v ? v : "y");
	} else if (builtin_lookup(e->name) >= 0) {
		const char *v = text(c, ast_extent(e->a));
		const char *a = args_text(c, e);
		diag_error(c->d, at, "tfg has no methods: write '%s(%s%s%s)'",
			   e->name, v ? v : "x", *a ? ", " : "", a);
	} else {
		w = builtin_nearest(e->name);
		diag_error(c->d, at, "tfg has no methods: '%s(...)' is not a "
			   "tfg expression%s%s%s", name,
			   w ? "; did you mean '" : "", w ? w : "",
			   w ? "'?" : "");
	}
	return 1;
}

/* A name for the value of e that the program does not use yet: the
 * letter after the last '_' of the function e calls (s for reduce_sum),
 * else v; then with a number. */
static const char *
fresh_name(Checker *c, const AstNode *e)
{
	char base[2] = "v";
	const char *n;

	if (e->kind == AST_CALL || e->kind == AST_METHOD) {
		const char *u = strrchr(e->name, '_');
		char ch = u && u[1] ? u[1] : e->name[0];
		if (ch >= 'a' && ch <= 'z')
			base[0] = ch;
	}
	n = base;
	for (int i = 2; check_find(&c->syms, n) || check_find(&c->defs, n) ||
			check_find(&c->locals, n) || builtin_lookup(n) >= 0;
	     i++)
		n = arena_printf(c->a, "%s%d", base, i);
	return arena_strdup(c->a, n);
}

void
habit_fetch(Checker *c, AstNode *f)
{
	const char *t;

	if (f->kind == AST_KWARG) {
		if (strcmp(f->name, "feed_dict") == 0)
			diag_error(c->d, f->tok.loc, "tfg has no feed_dict=: "
				   "the feed is run()'s last argument, "
				   "'feed { x: value, ... }'");
		else
			diag_error(c->d, f->tok.loc, "run() takes no keyword "
				   "arguments: it fetches graph values by "
				   "name, run(a, b, feed { x: value })");
		return;
	}
	if (f->kind == AST_TENSOR) {
		char buf[200] = "";
		for (int i = 0; i < f->n; i++) {
			t = text(c, ast_extent(f->list[i]));
			if (!t || strlen(buf) + strlen(t) + 3 > sizeof buf) {
				strcpy(buf, "a, b");
				break;
			}
			if (i)
				strcat(buf, ", ");
			strcat(buf, t);
		}
		diag_error(c->d, f->loc, "run() takes the values as separate "
			   "arguments: run(%s)", buf);
		return;
	}
	if (habit_report(c, f))
		return;
	t = text(c, ast_extent(f));
	const char *n = fresh_name(c, f);
	if (t)
		diag_error(c->d, ast_extent(f), "run() fetches graph values by "
			   "name: name it in the graph, '%s = %s' at top level "
			   "(or in its device block), then 'run(%s)'", n, t, n);
	else
		diag_error(c->d, ast_extent(f), "run() fetches graph values by "
			   "name: name it in the graph ('%s = ...' at top "
			   "level, or in its device block), then 'run(%s)'", n,
			   n);
}
