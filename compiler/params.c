/*
 * compiler/params.c: a program's params (spec §4.5 "Params").
 *
 * `param n = 1024` names a literal that may stand wherever a literal
 * may (a shape's dims, a slice's bounds, a maker's numbers, a session's
 * loop bounds); `--param n=8192` on the command line replaces its value.
 * `param data = "dir"` names a string literal (a session string, a
 * string scalar in the graph), and `--param data=other` takes the text
 * after the = as it is: the declaration decides the kind.
 * Before the checker runs, every use of a param's name is rewritten in
 * the AST into its literal, so the rest of the compiler sees literals
 * only (weak ones, spec §5.3 "Weak operands").  A param is declared at
 * the top level, once, with a literal (numbers, arithmetic on them and
 * on the params before it, true or false); no other definition may take
 * its name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"

typedef struct Param {
	AstNode *decl;
	AstNode *value;  /* the literal every use becomes */
	int used;        /* an --param named it */
} Param;

static Param *
find(Param *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v[i].decl->name, name) == 0)
			return &v[i];
	return NULL;
}

/* "8192", "-0.5", "1e-3", "true": a literal node at loc, or NULL. */
static AstNode *
parse_value(Arena *a, const char *s, SrcLoc loc)
{
	AstNode *n = arena_alloc(a, sizeof *n);
	char *end;

	n->loc = loc;
	if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
		n->kind = AST_BOOL;
		n->ival = s[0] == 't';
		return n;
	}
	errno = 0;
	n->ival = strtoll(s, &end, 10);
	if (*s && !*end && errno == 0) {
		n->kind = AST_INT;
		return n;
	}
	errno = 0;
	n->fval = strtod(s, &end);
	if (*s && !*end && errno == 0 && strpbrk(s, ".eE") &&
	    !strpbrk(s, "xXnN")) {
		n->kind = AST_FLOAT;
		return n;
	}
	return NULL;
}

/* Rewrites the uses of params in e (not a call's callee, not a feed's
 * name: those name other things). */
static void
rewrite(AstNode *e, Param *v, int n)
{
	Param *p;

	if (!e)
		return;
	if (e->kind == AST_NAME && (p = find(v, n, e->name)) != NULL) {
		SrcLoc loc = e->loc;
		Token tok = e->tok;
		*e = *p->value;
		e->loc = loc;
		e->tok = tok;
		return;
	}
	if (e->kind != AST_CALL && e->kind != AST_FEEDITEM)
		rewrite(e->a, v, n);
	rewrite(e->b, v, n);
	for (int i = 0; i < e->n; i++)
		rewrite(e->list[i], v, n);
}

/* Definitions that would take a param's name: 0, or errors reported. */
static int
clashes(Program *p, AstNode *e, Param *v, int n)
{
	int err = 0;
	Param *x;

	if (!e)
		return 0;
	switch (e->kind) {
	case AST_ASSIGN: case AST_INPUT: case AST_VAR: case AST_LET:
	case AST_FOR:
		if ((x = find(v, n, e->name)) != NULL) {
			diag_error(p->diag, e->tok.loc, "'%s' is a param: it "
				   "cannot be defined again", e->name);
			diag_note(p->diag, x->decl->tok.loc, "the param is "
				  "declared here");
			err++;
		}
		break;
	case AST_PARAM:
		if ((x = find(v, n, e->name)) != NULL && e != x->decl) {
			diag_error(p->diag, e->tok.loc, "param '%s' is "
				   "declared twice", e->name);
			diag_note(p->diag, x->decl->tok.loc, "the first is "
				  "here");
			err++;
		}
		return err;
	default:
		break;
	}
	for (int i = 0; i < e->n; i++)
		err += clashes(p, e->list[i], v, n);
	if (e->kind == AST_IF)
		err += clashes(p, e->b, v, n);
	return err;
}

/* Params inside blocks: an error each. */
static int
nested(Program *p, AstNode *e, int top)
{
	int err = 0;

	if (!e)
		return 0;
	if (e->kind == AST_PARAM && !top) {
		diag_error(p->diag, e->loc, "a param must be declared at the "
			   "top level");
		return 1;
	}
	for (int i = 0; i < e->n; i++)
		err += nested(p, e->list[i], e->kind == AST_PROGRAM);
	if (e->kind == AST_IF)
		err += nested(p, e->b, 0);
	return err;
}

int
params_apply(Program *p)
{
	AstNode *prog = p->ast;
	const CompileOptions *o = p->opt;
	Param *v;
	int n = 0, err = nested(p, prog, 1);

	v = arena_alloc(p->arena, ((size_t)prog->n + 1) * sizeof *v);
	for (int i = 0; i < prog->n; i++) {
		AstNode *s = prog->list[i];
		if (s->kind != AST_PARAM || find(v, n, s->name))
			continue;
		rewrite(s->a, v, n); /* the params before it */
		if (check_lit_of(s->a).kind == 0 && s->a->kind != AST_STRING) {
			diag_error(p->diag, s->a->loc, "param '%s' must be a "
				   "literal (a number, a string, true or "
				   "false)", s->name);
			err++;
			continue;
		}
		v[n].decl = s;
		v[n++].value = s->a;
	}
	for (int i = 0; o && i < o->nparam; i++) {
		const char *eq = strchr(o->param[i], '=');
		char *name = arena_strndup(p->arena, o->param[i],
					   (size_t)(eq - o->param[i]));
		Param *x = find(v, n, name);
		AstNode *lit;
		if (!x) {
			diag_error(p->diag, (SrcLoc){0}, "--param %s: the "
				   "program has no param '%s'%s", o->param[i],
				   name, n ? "" : " (it declares none)");
			for (int k = 0; k < n; k++)
				diag_note(p->diag, v[k].decl->tok.loc,
					  "param '%s' is declared here",
					  v[k].decl->name);
			err++;
			continue;
		}
		if (x->decl->a->kind == AST_STRING) {
			lit = arena_alloc(p->arena, sizeof *lit);
			*lit = *x->decl->a;
			lit->str = eq + 1;
		} else if (!(lit = parse_value(p->arena, eq + 1,
					       x->decl->a->loc))) {
			diag_error(p->diag, (SrcLoc){0}, "--param %s: '%s' is "
				   "not a number, true or false", o->param[i],
				   eq + 1);
			err++;
			continue;
		}
		x->value = lit;
		x->used = 1;
	}
	if (n == 0)
		return err;
	err += clashes(p, prog, v, n);
	for (int i = 0; i < prog->n && !err; i++)
		if (prog->list[i]->kind != AST_PARAM)
			rewrite(prog->list[i], v, n);
	return err;
}
