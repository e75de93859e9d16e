/*
 * lang/front.c: the front end's driver: between the lexer and the parser
 * it applies the newline rule, pushes tokens into the Lemon parser, and
 * resynchronises after syntax errors.  Also the token dump and the token
 * names used in messages.
 *
 * Newline rule (spec/design.md, "Newlines"): a stack of open brackets is
 * kept; a newline is a separator (TK_SEMI) only when the innermost open
 * bracket is a block '{' or there is none.  Inside '(' and '[' and inside
 * the '{' right after `feed' newlines are dropped.  A newline right after
 * another separator (or at the start) is dropped too.  '}' closes the
 * innermost '{' and everything opened inside it, so one missing ')' does
 * not swallow the rest of the file.
 *
 * Error recovery: Lemon recovers by shifting `error' in the nearest state
 * that allows it (a statement item).  After a syntax error this driver
 * skips, by the bracket stack, to the end of the failing statement (a
 * separator at the statement's block level, or the '}' closing that block),
 * hands that token to the parser, and re-arms its error reporting.  So a
 * second broken statement is reported even if it is the very next one, and
 * a bad statement's own block (`for ... { ... }' at top level) is skipped
 * whole instead of producing errors for each line inside.
 */
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"

/* ---------------------------------------------------------------- names */

typedef struct TokName {
	const char *dump; /* --emit=tokens */
	const char *msg;  /* messages */
} TokName;

static const TokName tok_names[] = {
	[0] = {"EOF", "end of input"},
	[TK_SEMI] = {"SEMI", "';'"},
	[TK_IDENT] = {"IDENT", "identifier"},
	[TK_INT] = {"INT", "integer"},
	[TK_FLOAT] = {"FLOAT", "number"},
	[TK_STRING] = {"STRING", "string"},
	[TK_CLUSTER] = {"CLUSTER", "'cluster'"},
	[TK_DEVICE] = {"DEVICE", "'device'"},
	[TK_INPUT] = {"INPUT", "'input'"},
	[TK_SESSION] = {"SESSION", "'session'"},
	[TK_PRINT] = {"PRINT", "'print'"},
	[TK_FOR] = {"FOR", "'for'"},
	[TK_IN] = {"IN", "'in'"},
	[TK_FEED] = {"FEED", "'feed'"},
	[TK_TRUE] = {"TRUE", "'true'"},
	[TK_FALSE] = {"FALSE", "'false'"},
	[TK_LPAREN] = {"LPAREN", "'('"},
	[TK_RPAREN] = {"RPAREN", "')'"},
	[TK_LBRACKET] = {"LBRACKET", "'['"},
	[TK_RBRACKET] = {"RBRACKET", "']'"},
	[TK_LBRACE] = {"LBRACE", "'{'"},
	[TK_RBRACE] = {"RBRACE", "'}'"},
	[TK_COMMA] = {"COMMA", "','"},
	[TK_COLON] = {"COLON", "':'"},
	[TK_ASSIGN] = {"ASSIGN", "'='"},
	[TK_DOTDOT] = {"DOTDOT", "'..'"},
	[TK_PLUS] = {"PLUS", "'+'"},
	[TK_MINUS] = {"MINUS", "'-'"},
	[TK_STAR] = {"STAR", "'*'"},
	[TK_SLASH] = {"SLASH", "'/'"},
	[TK_PERCENT] = {"PERCENT", "'%'"},
	[TK_EQ] = {"EQ", "'=='"},
	[TK_NE] = {"NE", "'!='"},
	[TK_LT] = {"LT", "'<'"},
	[TK_LE] = {"LE", "'<='"},
	[TK_GT] = {"GT", "'>'"},
	[TK_GE] = {"GE", "'>='"},
	[TK_AT] = {"AT", "'@'"},
	[TK_QUESTION] = {"QUESTION", "'?'"},
	[TK_IF] = {"IF", "'if'"},
	[TK_ELSE] = {"ELSE", "'else'"},
	[TK_DOT] = {"DOT", "'.'"},
};

enum { NTOKNAMES = sizeof tok_names / sizeof tok_names[0] };

const char *
tok_kind_name(int kind)
{
	if (kind < 0 || kind >= NTOKNAMES || !tok_names[kind].msg)
		return "?";
	return tok_names[kind].msg;
}

static const char *
tok_dump_name(int kind)
{
	if (kind < 0 || kind >= NTOKNAMES || !tok_names[kind].dump)
		return "?";
	return tok_names[kind].dump;
}

/* --------------------------------------------------------------- stream */

typedef struct Open {
	char kind; /* '(', '[', '{' (a block) or 'f' (a feed's braces) */
	Token tok;
} Open;

typedef struct Stream {
	Lexer lx;
	Arena *arena;
	Open *open;  /* the open brackets, innermost last */
	int depth, cap;
	int prev;    /* kind of the last token returned; -1 at the start */
} Stream;

static void
stream_init(Stream *s, Arena *a, const SrcFile *f, Diag *d)
{
	memset(s, 0, sizeof *s);
	lex_init(&s->lx, f, d);
	s->arena = a;
	s->prev = -1;
}

static void
stream_push(Stream *s, char kind, const Token *t)
{
	if (s->depth == s->cap) {
		int cap = s->cap ? s->cap * 2 : 32;
		Open *v = arena_alloc(s->arena, (size_t)cap * sizeof *v);
		if (s->depth)
			memcpy(v, s->open, (size_t)s->depth * sizeof *v);
		s->open = v;
		s->cap = cap;
	}
	s->open[s->depth].kind = kind;
	s->open[s->depth].tok = *t;
	s->depth++;
}

/* Closes the innermost `kind' above the innermost brace, if any. */
static void
stream_close(Stream *s, char kind)
{
	for (int i = s->depth - 1; i >= 0; i--) {
		if (s->open[i].kind == kind) {
			s->depth = i;
			return;
		}
		if (s->open[i].kind == '{' || s->open[i].kind == 'f')
			return;
	}
}

static void
stream_close_brace(Stream *s)
{
	for (int i = s->depth - 1; i >= 0; i--)
		if (s->open[i].kind == '{' || s->open[i].kind == 'f') {
			s->depth = i;
			return;
		}
}

/* Stack height up to and including the innermost block '{'. */
static int
stream_block_height(const Stream *s)
{
	for (int i = s->depth - 1; i >= 0; i--)
		if (s->open[i].kind == '{')
			return i + 1;
	return 0;
}

static Token
stream_next(Stream *s)
{
	for (;;) {
		Token t = lex_next(&s->lx);
		switch (t.kind) {
		case TK_SEMI:
			if (t.p[0] != '\n')
				break;
			if (s->depth > 0 && s->open[s->depth - 1].kind != '{')
				continue;
			if (s->prev == -1 || s->prev == TK_SEMI)
				continue;
			break;
		case TK_LPAREN:
			stream_push(s, '(', &t);
			break;
		case TK_LBRACKET:
			stream_push(s, '[', &t);
			break;
		case TK_LBRACE:
			stream_push(s, s->prev == TK_FEED ? 'f' : '{', &t);
			break;
		case TK_RPAREN:
			stream_close(s, '(');
			break;
		case TK_RBRACKET:
			stream_close(s, '[');
			break;
		case TK_RBRACE:
			stream_close_brace(s);
			break;
		default:
			break;
		}
		s->prev = t.kind;
		return t;
	}
}

/* ----------------------------------------------------------------- dump */

static void
put_token_text(FILE *out, const Token *t)
{
	for (uint32_t i = 0; i < t->len; i++) {
		unsigned char c = (unsigned char)t->p[i];
		if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\'' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02X", c);
		else
			fputc(c, out);
	}
}

int
lang_dump_tokens(FILE *out, const SrcFile *f, Diag *d)
{
	Arena *a = arena_new();
	Stream s;
	stream_init(&s, a, f, d);
	for (;;) {
		Token t = stream_next(&s);
		fprintf(out, "%u:%u %s '", t.loc.line, t.loc.col,
			tok_dump_name(t.kind));
		put_token_text(out, &t);
		fputs("'\n", out);
		if (t.kind == 0)
			break;
	}
	int nerr = s.lx.nerr;
	arena_free(a);
	return nerr;
}

/* ---------------------------------------------------------- syntax errors */

/* "identifier 'x'", "number '2.5'", "'}'", "newline", "end of input". */
static const char *
tok_describe(Arena *a, const Token *t)
{
	int len = t->len > 40 ? 40 : (int)t->len;
	const char *more = t->len > 40 ? "..." : "";
	switch (t->kind) {
	case 0:
		return "end of input";
	case TK_SEMI:
		return t->p[0] == '\n' ? "newline" : "';'";
	case TK_IDENT:
		return arena_printf(a, "identifier '%.*s%s'", len, t->p, more);
	case TK_INT: case TK_FLOAT:
		return arena_printf(a, "number '%.*s%s'", len, t->p, more);
	case TK_STRING:
		return arena_printf(a, "string %.*s%s", len, t->p, more);
	default:
		return arena_printf(a, "'%.*s'", len, t->p);
	}
}

static int
has(const int *v, int n, int kind)
{
	for (int i = 0; i < n; i++)
		if (v[i] == kind)
			return 1;
	return 0;
}

/* What to call the tokens the parser could take: a whole expression's
 * first tokens become "an expression"; operators that could continue an
 * expression are left out (they are always possible, so naming them says
 * nothing) unless nothing else is left; a separator stands for "end of
 * statement". */
static int
expected_names(const int *exp, int n, const char **names, int drop_ops)
{
	static const int expr_start[] = {
		TK_IDENT, TK_INT, TK_FLOAT, TK_STRING, TK_TRUE, TK_FALSE,
		TK_LPAREN, TK_LBRACKET, TK_MINUS,
	};
	enum { NSTART = sizeof expr_start / sizeof expr_start[0] };
	int is_expr = 1, is_stmt_end = has(exp, n, TK_SEMI), k = 0;
	for (int i = 0; i < NSTART; i++)
		if (!has(exp, n, expr_start[i]))
			is_expr = 0;
	if (is_expr)
		names[k++] = "an expression";
	for (int i = 0; i < n; i++) {
		int t = exp[i];
		int in_start = 0;
		for (int j = 0; j < NSTART; j++)
			if (expr_start[j] == t)
				in_start = 1;
		if (is_expr && in_start)
			continue;
		if (drop_ops && (t == TK_PLUS || t == TK_MINUS ||
				 t == TK_STAR || t == TK_SLASH ||
				 t == TK_PERCENT || t == TK_AT ||
				 t == TK_LBRACKET ||
				 (t >= TK_EQ && t <= TK_GE)))
			continue;
		if (is_stmt_end && (t == TK_SEMI || t == TK_RBRACE || t == 0))
			continue;
		names[k++] = tok_kind_name(t);
	}
	if (is_stmt_end)
		names[k++] = "end of statement";
	return k;
}

/* After a statement's first identifier the parser takes whatever the
 * contextual keywords var, let and parallel (lang/parse.y) may be
 * followed by; what it could take for this identifier is what to say. */
static int
contextual(const Token *first, const int *exp, int n, int *out)
{
	static const struct {
		const char *word;
		int keep;
	} kw[] = {{"var", TK_IDENT}, {"let", TK_IDENT}, {"param", TK_IDENT},
		  {"parallel", TK_LBRACE}};
	int k = 0, keep = 0;

	for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
		if (first->len == strlen(kw[i].word) &&
		    memcmp(first->p, kw[i].word, first->len) == 0)
			keep = kw[i].keep;
	for (int i = 0; i < n; i++)
		if (keep ? exp[i] == keep
			 : exp[i] != TK_IDENT && exp[i] != TK_LBRACE)
			out[k++] = exp[i];
	if (k == 0) /* none of those: leave it as it was */
		for (; k < n; k++)
			out[k] = exp[k];
	return k;
}

static int
is_word(const Token *t, const char *w)
{
	return t->kind == TK_IDENT && t->len == strlen(w) &&
	       memcmp(t->p, w, t->len) == 0;
}

/* A syntax error that is TF1's (Python's) way of writing something tfg
 * writes otherwise: says what to write, and returns 1.  Such a statement
 * is skipped whole, as any other that fails (lang_parse). */
static int
tf_habit(Parser *ps, const Token *tok)
{
	if (tok->kind == TK_LBRACE && ps->before[1].kind == TK_ASSIGN &&
	    is_word(&ps->before[0], "feed_dict")) {
		diag_error(ps->d, ps->before[0].loc, "tfg has no feed_dict=: "
			   "the feed is run()'s last argument, 'feed { x: "
			   "value, ... }'");
		return 1;
	}
	if (is_word(&ps->first, "with") && !ps->stmt_start) {
		diag_error(ps->d, ps->first.loc, "tfg has no 'with' blocks: "
			   "a device block is 'device \"/job:J/task:T\" "
			   "{ ... }', a session 'session { ... }'");
		return 1;
	}
	if (is_word(&ps->first, "import") && !ps->stmt_start) {
		diag_error(ps->d, ps->first.loc, "tfg has no 'import': its "
			   "functions are built in (reduce_sum(x), not "
			   "tf.reduce_sum(x))");
		return 1;
	}
	return 0;
}

void
parse_report(Parser *ps, const Token *tok, const int *expected, int n)
{
	ps->nsyntax++;
	if (ps->quiet)
		return;
	if (tok->kind == 0) {
		diag_error(ps->d, tok->loc, "unexpected end of input");
		if (ps->has_open)
			diag_note(ps->d, ps->open.loc, "to match this '%.*s'",
				  (int)ps->open.len, ps->open.p);
		return;
	}
	if (tf_habit(ps, tok))
		return;
	const char *found = tok_describe(ps->arena, tok);
	if (ps->stmt_start) {
		/* Lemon has already reduced the empty statement, so the
		 * expected tokens would only say "end of statement". */
		if (tok->kind == TK_FOR || tok->kind == TK_PRINT)
			diag_error(ps->d, tok->loc,
				   "unexpected %s outside a session", found);
		else
			diag_error(ps->d, tok->loc, "unexpected %s", found);
		return;
	}
	int narrow[64];
	if (n < 60 && ps->second && ps->first.kind == TK_IDENT)
		n = contextual(&ps->first, expected, n, narrow), expected = narrow;
	const char *names[64];
	int k = n < 60 ? expected_names(expected, n, names, 1) : 0;
	if (k == 0 && n < 60)
		k = expected_names(expected, n, names, 0);
	if (k == 0 || k > 4) {
		diag_error(ps->d, tok->loc, "unexpected %s", found);
		return;
	}
	char buf[256] = "";
	int closes = 0;
	for (int i = 0; i < k; i++) {
		if (i > 0)
			strcat(buf, i == k - 1 ? " or " : ", ");
		strncat(buf, names[i], 40);
		if (ps->has_open &&
		    ((ps->open.kind == TK_LPAREN && !strcmp(names[i], "')'")) ||
		     (ps->open.kind == TK_LBRACKET &&
		      !strcmp(names[i], "']'"))))
			closes = 1;
	}
	diag_error(ps->d, tok->loc, "expected %s, found %s", buf, found);
	if (closes)
		diag_note(ps->d, ps->open.loc, "to match this '%.*s'",
			  (int)ps->open.len, ps->open.p);
}

/* ---------------------------------------------------------------- parse */

/* Does t end the statement that failed at block height h? */
static int
is_sync(const Stream *s, const Token *t, int h)
{
	if (t->kind == 0)
		return 1;
	if (t->kind == TK_SEMI)
		return s->depth <= h;
	if (t->kind == TK_RBRACE)
		return s->depth < h;
	return 0;
}

/* After an error at the first token of a line: if a '(' or '[' above the
 * block at height h was opened on an earlier line, it is most likely
 * never closed; forget it, so the next newline ends the statement. */
static void
forget_unclosed(Stream *s, int h, uint32_t line)
{
	for (int i = h; i < s->depth; i++)
		if (s->open[i].tok.loc.line < line) {
			s->depth = h;
			return;
		}
}

/* Whether a statement of the program nests deeper than AST_MAX_DEPTH,
 * reported (once a statement) at its deepest node.  A left-deep chain
 * such as `y + y + ... + y` grows no parser stack, but everything after
 * the parser walks trees by recursion (checking, folding, formatting,
 * dumps): 10,000 terms overflowed the checker's stack.  The heights are
 * found here without recursion, an explicit stack in post-order. */
static int
too_deep(AstNode *root, Diag *d)
{
	typedef struct { AstNode *n; int next; } Frame;
	size_t cap = 256, top = 0;
	Frame *st = malloc(cap * sizeof *st);
	int bad = 0;

	if (st == NULL) {
		fputs("tfgc: error: out of memory\n", stderr);
		exit(1);
	}
	for (int i = 0; i < root->n; i++) {
		AstNode *deepest = NULL;

		st[top++] = (Frame){root->list[i], 0};
		while (top > 0) {
			Frame *f = &st[top - 1];
			AstNode *n = f->n, *c = NULL;
			int k = f->next++;

			if (n == NULL) {
				top--;
				continue;
			}
			/* children: a, b, then the list */
			if (k == 0)
				c = n->a;
			else if (k == 1)
				c = n->b;
			else if (k - 2 < n->n)
				c = n->list[k - 2];
			else {
				int h = 0;

				if (n->a && n->a->depth > h)
					h = n->a->depth;
				if (n->b && n->b->depth > h)
					h = n->b->depth;
				for (int j = 0; j < n->n; j++)
					if (n->list[j] && n->list[j]->depth > h)
						h = n->list[j]->depth;
				n->depth = h + 1;
				if (n->depth > AST_MAX_DEPTH && !deepest)
					deepest = n;
				top--;
				continue;
			}
			if (c == NULL)
				continue;
			if (top == cap) {
				Frame *g = realloc(st, 2 * cap * sizeof *st);

				if (g == NULL) {
					fputs("tfgc: error: out of memory\n",
					      stderr);
					exit(1);
				}
				st = g, cap *= 2;
			}
			st[top++] = (Frame){c, 0};
		}
		if (deepest) {
			diag_error(d, deepest->loc, "expression nests too deeply "
				   "(more than %d operations inside one "
				   "another): give parts of it names",
				   AST_MAX_DEPTH);
			bad = 1;
		}
	}
	free(st);
	return bad;
}

AstNode *
lang_parse(Arena *a, const SrcFile *f, Diag *d)
{
	Parser ps;
	memset(&ps, 0, sizeof ps);
	ps.arena = a;
	ps.file = f;
	ps.d = d;
	ps.before[0].kind = ps.before[1].kind = -1;
	int nerr0 = d->nerr;
	void *p = lang_parserAlloc(malloc, &ps);
	if (!p) {
		fputs("tfgc: error: out of memory\n", stderr);
		exit(1);
	}
	Stream s;
	stream_init(&s, a, f, d);
	int skipping = 0;   /* dropping the rest of a failed statement */
	int h = 0;          /* ... which is in the block at this height */
	int prev = -1;      /* kind of the last token pushed */
	uint32_t prev_line = 0;
	int lexerr_sync = 0; /* lexical errors before this statement */
	while (!ps.overflow) {
		int before_h = stream_block_height(&s);
		int top = s.depth > 0 ? s.open[s.depth - 1].kind : 0;
		ps.has_open = s.depth > 0;
		if (ps.has_open)
			ps.open = s.open[s.depth - 1].tok;
		Token t = stream_next(&s);
		if (skipping && !is_sync(&s, &t, h))
			continue;
		if (skipping || t.kind == 0)
			lang_parser_rearm(p);
		ps.second = 0;
		if (ps.stmt_start) { /* of the token before */
			ps.second = 1;
		}
		ps.stmt_start = prev == -1 || prev == TK_SEMI ||
				(prev == TK_LBRACE && top == '{');
		if (ps.stmt_start)
			ps.first = t;
		/* A statement with a lexical error probably has syntax
		 * errors because of it: do not report those too. */
		ps.quiet = t.kind != 0 && s.lx.nerr > lexerr_sync;
		int nsyntax = ps.nsyntax;
		ps.cur = t;
		lang_parser(p, t.kind, t);
		ps.before[0] = ps.before[1];
		ps.before[1] = t;
		if (t.kind == 0)
			break;
		if (ps.nsyntax > nsyntax) {
			h = before_h;
			if (prev_line && t.loc.line > prev_line)
				forget_unclosed(&s, h, t.loc.line);
			skipping = !is_sync(&s, &t, h);
			if (!skipping)
				lang_parser_rearm(p);
		} else if (skipping) {
			/* The statement's end is in: report errors again. */
			skipping = 0;
			lang_parser_rearm(p);
		}
		if (t.kind == TK_SEMI || t.kind == TK_RBRACE)
			lexerr_sync = s.lx.nerr;
		prev = t.kind;
		prev_line = t.loc.line;
	}
	lang_parserFree(p, free);
	if (d->nerr > nerr0 || !ps.root || too_deep(ps.root, d))
		return NULL;
	return ps.root;
}
