/*
 * compiler/sig.c: the graph functions (stdlib/ops.def's CALL rows: the
 * table builtin_* reads), a call's arguments bound to its function's
 * parameters as the signature column gives them (spec §6.7 "Calls"), and
 * the spec's tables of those signatures (spec §6.7.1 "Signatures", tfgc
 * help --ops) and of the op facts (spec §6.7.2 "Op facts", tfgc help
 * --op-facts).
 *
 * A signature is written as Python writes one, with TF's names beside
 * tfg's where they differ:
 *
 *     "x|input_tensor, axis|reduction_indices=, keepdims|keep_dims=false"
 *     "[start,] limit, delta=1, dtype="
 *     "loss, optimizer, *, vars|var_list=, global_step="
 *
 * check_bind() takes the arguments of a call positionally in that order
 * or by any of a parameter's names, reports what does not fit (too many,
 * an unknown keyword, one given twice, a required one missing), and
 * rewrites the call's argument list, in place, into its canonical form:
 * the leading parameters that have no default (x of reduce_sum, shape and
 * value of fill) positional and in order, every other one given as a
 * keyword under tfg's name (the first), in the signature's order.  The
 * checkers read that form alone: e->list[i] for the leading ones,
 * check_kwarg(e, "axis") for the rest, so none of them parses positions
 * or knows TF's names.  Binding the canonical form again gives it back
 * unchanged, so a statement checked once per replica (compiler/replicas.c)
 * is bound each time to the same list, and the call node stays the one
 * the parser made (minimize keys its slots on it).
 *
 * The defaults after the = are what the checkers do when the argument
 * is absent; the goldens call each op both ways (tests/golden/run/
 * tf_signatures.tfg).
 */
#include <assert.h>
#include <string.h>

#include "compiler/compiler_int.h"

enum { MAXPARAM = 8, MAXNAME = 4 };

/* One parameter of a signature, pointing into its text. */
typedef struct Param {
	const char *name[MAXNAME]; /* tfg's first, then TF's */
	int len[MAXNAME];
	int nname;
	const char *dflt; /* after the '=', dlen bytes; NULL: required */
	int dlen;
	int kwonly;       /* after the '*' */
	int bracket;      /* [NAME,]: may be left out */
} Param;

/* The parameters of sig into p[]; their count.  The table's signatures
 * are all well formed (tfgc help --ops, which make lint runs, parses
 * each one), so a malformed one is a bug here. */
static int
sig_parse(const char *sig, Param *p)
{
	int n = 0, kwonly = 0;
	const char *s = sig;

	while (*s) {
		Param *q = &p[n];

		while (*s == ' ' || *s == ',')
			s++;
		if (!*s)
			break;
		if (*s == '*') {
			kwonly = 1;
			s++;
			continue;
		}
		assert(n < MAXPARAM);
		memset(q, 0, sizeof *q);
		q->kwonly = kwonly;
		if (*s == '[') {
			q->bracket = 1;
			s++;
		}
		for (;;) {
			size_t l = strspn(s, "abcdefghijklmnopqrstuvwxyz"
					  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
			assert(l > 0 && q->nname < MAXNAME);
			q->name[q->nname] = s;
			q->len[q->nname++] = (int)l;
			s += l;
			if (*s != '|')
				break;
			s++;
		}
		if (*s == '=') {
			q->dflt = ++s;
			q->dlen = (int)strcspn(s, ",");
			s += q->dlen;
		}
		if (q->bracket) {
			assert(s[0] == ',' && s[1] == ']');
			s += 2;
		}
		n++;
	}
	return n;
}

/* Whether parameter q has name n (one of its names). */
static int
param_is(const Param *q, int k, const char *n)
{
	return (int)strlen(n) == q->len[k] &&
	       strncmp(q->name[k], n, (size_t)q->len[k]) == 0;
}

static int
param_find(const Param *p, int np, const char *n)
{
	for (int i = 0; i < np; i++)
		for (int k = 0; k < p[i].nname; k++)
			if (param_is(&p[i], k, n))
				return i;
	return -1;
}

/* Signature sig as errors show it: tfg's names only ("x, axis=,
 * keepdims=false"), into buf. */
const char *
sig_show(char *buf, size_t size, const char *sig)
{
	size_t n = 0;

	for (const char *s = sig; *s && n + 1 < size; s++) {
		if (*s == '|') { /* skip TF's names */
			s += strspn(s, "|abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
			s--;
			continue;
		}
		buf[n++] = *s;
	}
	buf[n] = 0;
	return buf;
}

/* The leading parameters without a default: those the canonical form
 * gives positionally. */
static int
nlead(const Param *p, int np)
{
	int i = 0;

	while (i < np && !p[i].dflt && !p[i].bracket && !p[i].kwonly)
		i++;
	return i;
}

/* The unknown keyword x of call e: the name it most likely means, else
 * the parameters. */
static void
unknown_kw(Checker *c, AstNode *e, AstNode *x, const Param *p, int np,
	   const char *shown)
{
	const char *cand[MAXPARAM * MAXNAME], *w;
	int n = 0;

	if (strcmp(x->name, "name") == 0) { /* TF names an op by name= */
		diag_error(c->d, x->tok.loc, "'%s' has no argument named "
			   "'name': a value is named by assignment, '%s = "
			   "%s(...)'", e->name, c->stmt ? c->stmt : "y",
			   e->name);
		return;
	}
	for (int i = 0; i < np; i++)
		for (int k = 0; k < p[i].nname; k++)
			cand[n++] = arena_strndup(c->a, p[i].name[k],
						  (size_t)p[i].len[k]);
	if ((w = check_nearest(x->name, cand, n)) != NULL)
		diag_error(c->d, x->tok.loc, "'%s' has no argument named "
			   "'%s'; did you mean '%s'?", e->name, x->name, w);
	else
		diag_error(c->d, x->tok.loc, "'%s' has no argument named "
			   "'%s': it takes (%s)", e->name, x->name, shown);
}

int
check_positional_first(Checker *c, AstNode *e)
{
	int npos = 0;

	for (int i = 0; i < e->n; i++) {
		if (e->list[i]->kind == AST_KWARG)
			continue;
		if (npos++ != i) {
			diag_error(c->d, e->list[i]->loc, "positional argument "
				   "after a keyword argument");
			return -1;
		}
	}
	return npos;
}

int
check_bind(Checker *c, AstNode *e)
{
	const char *sig = builtin_signature(e->name);
	Param p[MAXPARAM];
	AstNode *val[MAXPARAM] = {0}, *kw[MAXPARAM] = {0}, **list;
	int pos[MAXPARAM], np, npos = 0, nposp = 0, lead, n = 0;
	char shown[256];

	assert(sig); /* only the functions of stdlib/ops.def */
	if (check_positional_first(c, e) < 0)
		return -1;
	np = sig_parse(sig, p);
	sig_show(shown, sizeof shown, sig);
	/* the keywords first: a bracketed parameter's presence depends on
	   them */
	for (int i = 0; i < e->n; i++) {
		AstNode *x = e->list[i];
		int k;

		if (x->kind != AST_KWARG) {
			npos++;
			continue;
		}
		if ((k = param_find(p, np, x->name)) < 0) {
			unknown_kw(c, e, x, p, np, shown);
			return -1;
		}
		if (kw[k]) {
			if (strcmp(kw[k]->name, x->name) == 0)
				diag_error(c->d, x->tok.loc, "argument '%s' "
					   "given twice", x->name);
			else
				diag_error(c->d, x->tok.loc, "argument '%.*s' "
					   "given twice: as %s= and as %s=",
					   p[k].len[0], p[k].name[0],
					   kw[k]->name, x->name);
			return -1;
		}
		kw[k] = x;
		val[k] = x->a;
	}
	/* the parameters positional arguments fill, in order */
	for (int i = 0; i < np; i++) {
		if (p[i].kwonly)
			break;
		/* [start,] limit: left out when given by keyword, or when
		   the positional arguments do not reach the next one and
		   it is not given by keyword either (range(5)) */
		if (p[i].bracket &&
		    (kw[i] || (npos <= nposp + 1 && i + 1 < np && !kw[i + 1])))
			continue;
		pos[nposp++] = i;
	}
	if (npos > nposp) {
		diag_error(c->d, e->loc, "'%s' takes (%s), got %d %sargument%s",
			   e->name, shown, npos, npos < e->n ? "positional " :
			   "", npos == 1 ? "" : "s");
		return -1;
	}
	for (int i = 0; i < npos; i++) {
		int k = pos[i];

		if (kw[k]) {
			diag_error(c->d, kw[k]->tok.loc, "argument '%.*s' given "
				   "twice: as argument %d and as %s=",
				   p[k].len[0], p[k].name[0], i + 1,
				   kw[k]->name);
			return -1;
		}
		val[k] = e->list[i];
	}
	for (int k = 0; k < np; k++) {
		if (val[k] || p[k].dflt || p[k].bracket)
			continue;
		if (npos == e->n && !p[k].kwonly) /* reduce_sum() */
			diag_error(c->d, e->loc, "'%s' takes (%s), got %d "
				   "argument%s", e->name, shown, npos,
				   npos == 1 ? "" : "s");
		else
			diag_error(c->d, e->loc, "'%s' needs its argument "
				   "'%.*s'", e->name, p[k].len[0],
				   p[k].name[0]);
		return -1;
	}
	/* the canonical form */
	lead = nlead(p, np);
	list = arena_alloc(c->a, ((size_t)np + 1) * sizeof *list);
	for (int k = 0; k < np; k++) {
		AstNode *x;

		if (k < lead) {
			list[n++] = val[k];
			continue;
		}
		if (!val[k])
			continue;
		if (kw[k] && param_is(&p[k], 0, kw[k]->name)) {
			list[n++] = kw[k]; /* as written */
			continue;
		}
		x = arena_alloc(c->a, sizeof *x);
		x->kind = AST_KWARG;
		x->name = arena_strndup(c->a, p[k].name[0],
					(size_t)p[k].len[0]);
		x->a = val[k];
		x->tok = kw[k] ? kw[k]->tok : val[k]->tok;
		x->tok.loc = kw[k] ? kw[k]->tok.loc : ast_extent(val[k]);
		x->loc = kw[k] ? kw[k]->loc : ast_extent(val[k]);
		list[n++] = x;
	}
	e->list = list;
	e->n = n;
	return 0;
}

AstNode *
check_param(AstNode *e, int k, const char *name)
{
	if (k < e->n && e->list[k]->kind != AST_KWARG)
		return e->list[k];
	return check_kwarg(e, name);
}

/* ------------------------------------------------ the functions' table */

/* stdlib/ops.def's CALL rows: each graph function's op, checker,
 * signature and section. */
static const struct {
	const char *name;
	OpKind op;
	IrNode *(*check)(Checker *c, AstNode *e, OpKind op);
	const char *sig;
	const char *sec;
} builtins[] = {
#define CALL(name, op, check, sig, sec)                                      \
	{#name, OP_##op, check_##check, sig, sec},
#include "stdlib/ops.def"
};

IrNode *
builtin_check(Checker *c, AstNode *e, int f)
{
	return builtins[f].check(c, e, builtins[f].op);
}

int
builtin_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (strcmp(builtins[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *
builtin_signature(const char *name)
{
	int f = builtin_lookup(name);

	return f < 0 ? NULL : builtins[f].sig;
}

int
builtin_info(int f, const char **name, const char **sig, const char **sec)
{
	if (f < 0 || f >= (int)(sizeof builtins / sizeof builtins[0]))
		return -1;
	*name = builtins[f].name;
	*sig = builtins[f].sig;
	*sec = builtins[f].sec;
	return 0;
}

OpKind
builtin_op(int f)
{
	return builtins[f].op;
}

const char *
builtin_nearest(const char *name)
{
	enum { N = sizeof builtins / sizeof builtins[0] };
	const char *cand[N];

	for (int i = 0; i < N; i++)
		cand[i] = builtins[i].name;
	return check_nearest(name, cand, N);
}

/* --------------------------------------------------- the spec's table */

/* One cell of a markdown table: s with its '|' escaped. */
static void
cell(FILE *f, const char *s, int len)
{
	for (int i = 0; i < len; i++) {
		if (s[i] == '|')
			fputc('\\', f);
		fputc(s[i], f);
	}
}

void
sig_table(FILE *f)
{
	const char *name, *sig, *sec;
	char shown[256];

	fputs("| function | parameters | TF's names | described in |\n"
	      "|---|---|---|---|\n", f);
	for (int i = 0; builtin_info(i, &name, &sig, &sec) == 0; i++) {
		Param p[MAXPARAM];
		int np = sig_parse(sig, p), any = 0;
		const char *title = strchr(sec, ' ');

		assert(title);
		fprintf(f, "| `%s` | `%s` | ", name,
			sig_show(shown, sizeof shown, sig));
		for (int k = 0; k < np; k++)
			for (int j = 1; j < p[k].nname; j++) {
				fputs(any++ ? ", `" : "`", f);
				cell(f, p[k].name[j], p[k].len[j]);
				fputs("` for `", f);
				cell(f, p[k].name[0], p[k].len[0]);
				fputs("`", f);
			}
		fprintf(f, "%s | §%.*s \"%s\" |\n", any ? "" : "—",
			(int)(title - sec), sec, title + 1);
	}
}

/* The dtypes of ops.def's types column, in words. */
static const char *
types_words(unsigned t)
{
	if (t == TY_FLOAT)
		return "float";
	if (t == TY_NUM)
		return "numbers";
	if (t == TY_BOOLNUM)
		return "numbers, bool";
	if (t == TY_BOOL)
		return "bool";
	if (t == TY_INDEX)
		return "i32, i64";
	return "any";
}

void
op_facts_table(FILE *f)
{
	const char *name, *sig, *sec;

	fputs("| function | operands | gradient | GPU | folded |\n"
	      "|---|---|---|---|---|\n", f);
	for (int i = 0; builtin_info(i, &name, &sig, &sec) == 0; i++) {
		OpKind op = builtin_op(i);
		const OpInfo *o = &op_info[op];

		if (op == OP_const) {
			fprintf(f, "| `%s` | any | — | — | to %s |\n", name,
				strcmp(name, "split") ? "a constant" : "slices");
			continue;
		}
		if (op == OP_grad) { /* expanded before placement */
			fprintf(f, "| `%s` | float | its expansion's | its "
				"expansion's | no |\n", name);
			continue;
		}
		fprintf(f, "| `%s` | %s | %s | %s | %s |\n", name,
			o->flags & OPF_ELEMWISE ? types_words(o->types)
						: "its own rule",
			o->flags & OPF_DIFF ? "yes" : "no",
			o->flags & OPF_HOST ? "host" : "yes",
			o->fold == FOLD_ALL ? "yes"
			: o->fold == FOLD_INT ? "integers" : "no");
	}
}
