/*
 * lang/ast.c: AST nodes: constructors, source ranges, and the --emit=ast
 * dump.
 *
 * Lists are arrays in the arena that grow by doubling; a node keeps only
 * the length, so the capacity is implied (the next power of two, at least
 * 4).  The dump prints one node per line, two spaces per level:
 *
 *     binary '+' @12:13
 *       name y1 @12:10
 *       int 300 @12:15
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"

AstNode *
ast_new(Arena *a, AstKind kind, SrcLoc loc, const Token *tok)
{
	AstNode *n = arena_alloc(a, sizeof *n);
	n->kind = kind;
	n->loc = loc;
	if (tok)
		n->tok = *tok;
	return n;
}

void
ast_append(Arena *a, AstNode *list, AstNode *item)
{
	int n = list->n;
	if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
		int cap = n ? n * 2 : 4;
		AstNode **v = arena_alloc(a, (size_t)cap * sizeof *v);
		if (n)
			memcpy(v, list->list, (size_t)n * sizeof *v);
		list->list = v;
	}
	list->list[list->n++] = item;
}

void
ast_take_list(AstNode *to, const AstNode *from)
{
	to->list = from->list;
	to->n = from->n;
}

SrcLoc
loc_span(SrcLoc first, SrcLoc last)
{
	SrcLoc loc = first;
	if (last.off + last.len > first.off)
		loc.len = last.off + last.len - first.off;
	return loc;
}

SrcLoc
ast_extent(const AstNode *n)
{
	const AstNode *l = n, *r = n;
	while (l->kind == AST_BINARY)
		l = l->a;
	while (r->kind == AST_BINARY)
		r = r->b;
	return loc_span(l->loc, r->loc);
}

const char *
ast_kind_name(AstKind k)
{
	static const char *const names[] = {
		[AST_PROGRAM] = "program",   [AST_CLUSTER] = "cluster",
		[AST_JOB] = "job",           [AST_DEVICE] = "device",
		[AST_ASSIGN] = "assign",     [AST_INPUT] = "input",
		[AST_SESSION] = "session",   [AST_PRINT] = "print",
		[AST_FOR] = "for",           [AST_EXPRSTMT] = "expr",
		[AST_INT] = "int",           [AST_FLOAT] = "float",
		[AST_BOOL] = "bool",         [AST_STRING] = "string",
		[AST_NAME] = "name",         [AST_TENSOR] = "tensor",
		[AST_UNARY] = "unary",       [AST_BINARY] = "binary",
		[AST_CALL] = "call",         [AST_KWARG] = "kwarg",
		[AST_FEED] = "feed",         [AST_FEEDITEM] = "feeditem",
		[AST_INDEX] = "index",       [AST_SLICE] = "slice",
		[AST_VAR] = "var",           [AST_PARALLEL] = "parallel",
		[AST_LET] = "let",           [AST_IF] = "if",
		[AST_FIELD] = "field",       [AST_PARAM] = "param",
		[AST_METHOD] = "method",
	};
	_Static_assert(sizeof names / sizeof names[0] == AST__COUNT,
		       "ast_kind_name: a kind has no name");
	if ((unsigned)k >= AST__COUNT || !names[k])
		return "?";
	return names[k];
}

/* A string with C escapes, in double quotes. */
static void
put_quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02X", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* The shortest %g that reads back as the same double. */
static void
put_double(FILE *out, double v)
{
	char buf[32];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, out);
	if (!strpbrk(buf, ".eninf"))
		fputs(".0", out);
}

const char *
ast_op_text(int op)
{
	switch (op) {
	case TK_PLUS: return "+";
	case TK_MINUS: return "-";
	case TK_STAR: return "*";
	case TK_SLASH: return "/";
	case TK_PERCENT: return "%";
	case TK_AT: return "@";
	case TK_EQ: return "==";
	case TK_NE: return "!=";
	case TK_LT: return "<";
	case TK_LE: return "<=";
	case TK_GT: return ">";
	case TK_GE: return ">=";
	default: return "?";
	}
}

/* The node's own line, without its children. */
static void
dump_head(FILE *out, const AstNode *n)
{
	fputs(ast_kind_name(n->kind), out);
	switch (n->kind) {
	case AST_JOB: case AST_ASSIGN: case AST_FOR: case AST_NAME:
	case AST_CALL: case AST_KWARG: case AST_FEEDITEM: case AST_LET:
	case AST_FIELD: case AST_PARAM: case AST_METHOD:
		fprintf(out, " %s", n->name);
		break;
	case AST_VAR:
		fprintf(out, " %s", n->name);
		if (n->b)
			fprintf(out, ": %s", n->b->name);
		if (n->has_dims) {
			fputc('[', out);
			for (int i = 0; i < n->n; i++)
				fprintf(out, "%s%" PRId64, i ? ", " : "",
					n->list[i]->ival);
			fputc(']', out);
		}
		break;
	case AST_DEVICE:
		if (n->a && n->a->kind == AST_CALL) {
			fprintf(out, " %s(...)", n->a->name);
			break;
		}
		/* fall through */
	case AST_STRING:
		fputc(' ', out);
		put_quoted(out, n->str ? n->str : "");
		break;
	case AST_SESSION:
		if (n->ival)
			fputs(" each", out);
		if (n->a) {
			fputc(' ', out);
			put_quoted(out, n->a->str);
		}
		if (n->name)
			fprintf(out, " as %s", n->name);
		break;
	case AST_INPUT:
		fprintf(out, " %s: %s", n->name, n->a->name);
		if (n->has_dims) {
			fputc('[', out);
			for (int i = 0; i < n->n; i++)
				if (n->list[i]->ival < 0) /* '?' */
					fprintf(out, "%s?", i ? ", " : "");
				else
					fprintf(out, "%s%" PRId64, i ? ", " : "",
						n->list[i]->ival);
			fputc(']', out);
		}
		break;
	case AST_INT:
		fprintf(out, " %" PRId64, n->ival);
		break;
	case AST_FLOAT:
		fputc(' ', out);
		put_double(out, n->fval);
		break;
	case AST_BOOL:
		fputs(n->ival ? " true" : " false", out);
		break;
	case AST_UNARY: case AST_BINARY:
		fprintf(out, " '%s'", ast_op_text(n->op));
		break;
	case AST_SLICE:
		fprintf(out, " %s:%s", n->a ? "lo" : "", n->b ? "hi" : "");
		break;
	default:
		break;
	}
	fprintf(out, " @%u:%u\n", n->loc.line, n->loc.col);
}

static void
dump(FILE *out, const AstNode *n, int depth)
{
	if (!n)
		return;
	fprintf(out, "%*s", depth * 2, "");
	dump_head(out, n);
	switch (n->kind) {
	case AST_DEVICE:
		if (n->a && n->a->kind == AST_CALL) /* replicas(...)'s args */
			for (int i = 0; i < n->a->n; i++)
				dump(out, n->a->list[i], depth + 1);
		break;
	case AST_SESSION: case AST_INPUT: case AST_CALL:
		/* a is shown in the head line */
		break;
	case AST_VAR:
		dump(out, n->a, depth + 1);
		return; /* b and the dims are in the head line */
	case AST_IF: /* the condition, then, else */
		dump(out, n->a, depth + 1);
		for (int i = 0; i < n->n; i++)
			dump(out, n->list[i], depth + 1);
		dump(out, n->b, depth + 1);
		return;
	case AST_FEEDITEM:
		break; /* a is the name again */
	default:
		dump(out, n->a, depth + 1);
		break;
	}
	if (n->kind != AST_CALL && n->kind != AST_INPUT)
		dump(out, n->b, depth + 1);
	if (n->kind != AST_INPUT)
		for (int i = 0; i < n->n; i++)
			dump(out, n->list[i], depth + 1);
	if (n->kind == AST_CALL)
		dump(out, n->b, depth + 1);
}

void
ast_dump(FILE *out, const AstNode *n)
{
	dump(out, n, 0);
}
