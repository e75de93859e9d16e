/*
 * lang/fmt.c: tfgc fmt: a program in the canonical layout
 * (spec §10.8 "Formatting").
 *
 * This prints the token stream again, not the AST: the AST has neither
 * the comments, nor the parentheses, nor the line breaks inside brackets
 * that the layout keeps, and the tokens have them all.  What the printer
 * needs of the grammar is small and local, and comes from a stack of open
 * brackets kept as front.c keeps it: whether a '{' is a block or a feed's,
 * whether '=' is a keyword argument's (inside '(') and ':' a slice's
 * (inside '['), whether '-' is unary (no operand just before it).  Since
 * white space other than newlines never matters to the parser, and every
 * token but a trailing comma is printed as written, the result means what
 * the input meant; lang_format checks that anyway, by parsing the result
 * and comparing the two ASTs, and refuses rather than change a program.
 *
 * The input is a list of elements: the tokens, each newline, and each
 * comment (which the lexer skips: a comment is whatever starts with '#'
 * in the gap between two tokens).  The printer builds output lines
 * (indentation, code, trailing comment) and writes them at the end, when
 * the trailing comments of consecutive lines can be put in one column.
 *
 * Idempotence: every decision depends only on what the output keeps of
 * the input (the tokens, the comments and whether each is on a line of
 * its own, which '{' has its '}' on the same line, the line breaks inside
 * brackets, and whether a blank line separates two statements), so
 * formatting the result again changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"

enum {
	E_NL = -1,      /* a newline */
	E_COMMENT = -2, /* '#' to the end of its line */
	INDENT = 4,     /* spaces per block level */
	CMT_GAP = 2,    /* spaces at least before a trailing comment */
	VISUAL = 1,     /* continuation lines line up after the bracket */
	BLOCK = 2       /* ... or are indented one level */
};

typedef struct Elem {
	int kind;       /* TK_*, E_NL or E_COMMENT */
	const char *p;  /* the text (a comment's without trailing blanks) */
	uint32_t len;
	uint32_t line;  /* of a token */
	int match;      /* an opening bracket's closing one, or -1 */
	int feed;       /* a '{' right after `feed' */
	int pad;        /* a job's name: spaces after it so '=' lines up */
	int cell;       /* first token of a matrix's cell: 1 + its column */
	int cellend;    /* ... the cell's last token */
	int mat;        /* ... its matrix */
	int cellw;      /* ... its width, measured by the first pass */
} Elem;

/* A tensor literal of rows of numbers, one to a line: the cells of each
 * column are aligned right (spec §10.8 "Formatting"). */
typedef struct Matrix {
	int *w;         /* the widest cell of each column */
} Matrix;

typedef struct Line {
	int ind;        /* spaces before the code */
	const char *code;
	uint32_t len;
	int width;      /* columns of indentation and code (an own-line
			   comment is code) */
	const char *cmt; /* trailing comment, or NULL */
	uint32_t cmtlen;
} Line;

typedef struct Open {
	int kind;       /* '{' a block, 'f' a feed's braces, '(' or '[' */
	int oneline;    /* a block whose '}' is on the line of its '{' */
	int ind;        /* a block: the indentation of its statements */
	int base;       /* a bracket: indentation of the line it is on */
	int col;        /* a bracket: its column */
	int mode;       /* a bracket: 0 (not known yet), VISUAL or BLOCK */
	int vcol;       /* VISUAL: column of the first token after it */
} Open;

typedef struct Fmt {
	Arena *a;
	Elem *e;
	int n;
	Open *open;     /* open[0] is the file, a block at indentation 0 */
	int depth;
	Matrix *mat;
	int nmat, matcap;
	int apply;      /* the second pass: pad the cells of matrices */
	int cell;       /* the cell being printed (its first token), or -1 */
	int cellcol;    /* ... the column it started at */
	Line *lines;
	int nlines, cap;
	char *buf;      /* the current line's code */
	size_t blen, bcap;
	int have_line;  /* a current line has been started */
	int ind, col;   /* its indentation; the column after its code */
	const char *cmt; /* its trailing comment */
	uint32_t cmtlen;
	int prev;       /* kind of the last token printed, -1 none */
	int prev_unary; /* ... a unary minus */
	int nl;         /* newlines since the last token or comment */
	int sep;        /* a ';' since the last token */
	int cmt_since;  /* a comment since the last token */
	int first;      /* nothing printed yet in the innermost block */
} Fmt;

/* ------------------------------------------------------------- elements */

static void
elem_add(Fmt *f, int *cap, int kind, const char *p, uint32_t len,
	 uint32_t line)
{
	if (f->n == *cap) {
		int nc = *cap ? *cap * 2 : 256;
		Elem *v = arena_alloc(f->a, (size_t)nc * sizeof *v);
		if (f->n)
			memcpy(v, f->e, (size_t)f->n * sizeof *v);
		f->e = v;
		*cap = nc;
	}
	Elem *el = &f->e[f->n++];
	el->kind = kind;
	el->p = p;
	el->len = len;
	el->line = line;
	el->match = -1;
}

/* The comment in the gap [p, end) between two tokens, if any. */
static void
gap_comment(Fmt *f, int *cap, const char *p, const char *end)
{
	const char *h = memchr(p, '#', (size_t)(end - p));
	if (!h)
		return;
	const char *e = h;
	while (e < end && *e != '\n')
		e++;
	while (e > h + 1 && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			     e[-1] == '\v' || e[-1] == '\f'))
		e--;
	elem_add(f, cap, E_COMMENT, h, (uint32_t)(e - h), 0);
}

static int
is_open(int k)
{
	return k == TK_LPAREN || k == TK_LBRACKET || k == TK_LBRACE;
}

static int
is_close(int k)
{
	return k == TK_RPAREN || k == TK_RBRACKET || k == TK_RBRACE;
}

/* The previous token before element i, skipping newlines and comments. */
static int
prev_token(const Fmt *f, int i)
{
	while (--i >= 0)
		if (f->e[i].kind >= 0)
			return f->e[i].kind;
	return -1;
}

static void
elems_read(Fmt *f, const SrcFile *src)
{
	Diag quiet;
	Lexer lx;
	int cap = 0, *stack, top = 0;
	const char *end = src->text;

	diag_init(&quiet, NULL);
	lex_init(&lx, src, &quiet);
	for (;;) {
		Token t = lex_next(&lx);
		gap_comment(f, &cap, end, t.p);
		if (t.kind == 0)
			break;
		elem_add(f, &cap, TOK_IS_NEWLINE(&t) ? E_NL : t.kind, t.p,
			 t.len, t.loc.line);
		end = t.p + t.len;
	}
	/* Match the brackets (balanced, in a program that parses; anything
	 * else only has to be safe). */
	stack = arena_alloc(f->a, ((size_t)f->n + 1) * sizeof *stack);
	for (int i = 0; i < f->n; i++) {
		int k = f->e[i].kind;
		if (is_open(k)) {
			f->e[i].feed = k == TK_LBRACE &&
				       prev_token(f, i) == TK_FEED;
			stack[top++] = i;
		} else if (is_close(k) && top > 0) {
			f->e[stack[--top]].match = i;
		}
	}
}

/* A block whose '}' is on the line of its '{' stays on one line. */
static int
oneline(const Fmt *f, int i)
{
	int m = f->e[i].match;
	return m >= 0 && f->e[m].line == f->e[i].line;
}

/* ------------------------------------------------------------ cluster */

/* Sets the padding of the job names of run[0..n), so that their '='s
 * line up. */
static void
jobs_align(Fmt *f, const int *run, int n)
{
	uint32_t w = 0;
	if (n < 2)
		return;
	for (int i = 0; i < n; i++)
		if (f->e[run[i]].len > w)
			w = f->e[run[i]].len;
	for (int i = 0; i < n; i++)
		f->e[run[i]].pad = (int)(w - f->e[run[i]].len);
}

/* In a cluster block of several lines, the '=' of consecutive jobs line
 * up: jobs one to a line, with no blank line or own-line comment between
 * them.  A job that spans lines stands alone. */
static void
jobs_pad(Fmt *f, int open)
{
	int close = f->e[open].match, n = 0, nl = 0, broken = 0;
	int *run = arena_alloc(f->a, (size_t)(close - open) * sizeof *run);

	for (int k = open + 1; k < close;) {
		Elem *el = &f->e[k];
		if (el->kind == E_NL) {
			nl++, k++;
			continue;
		}
		if (el->kind == E_COMMENT) {
			if (f->e[k - 1].kind == E_NL)
				broken = 1;
			k++;
			continue;
		}
		if (el->kind == TK_SEMI) {
			k++;
			continue;
		}
		int m = -1, multi = 0;
		if (el->kind == TK_IDENT && k + 2 < close &&
		    f->e[k + 1].kind == TK_ASSIGN &&
		    f->e[k + 2].kind == TK_LBRACKET)
			m = f->e[k + 2].match;
		if (m < 0 || m >= close) {
			jobs_align(f, run, n);
			n = 0;
			k++;
			continue;
		}
		for (int j = k; j < m; j++)
			if (f->e[j].kind == E_NL)
				multi = 1;
		if (nl >= 2 || broken || multi) {
			jobs_align(f, run, n);
			n = 0;
		}
		if (!multi)
			run[n++] = k;
		nl = broken = 0;
		k = m + 1;
	}
	jobs_align(f, run, n);
}

/* ------------------------------------------------------------- matrices */

static int
is_number(int k)
{
	return k == TK_INT || k == TK_FLOAT;
}

/* The cells of the row [k, r] (the tokens between its brackets, split at
 * its commas), marked as cells of matrix mat when mat >= 0.  Returns their
 * number, or -1 unless each is a number, or minus a number (so a row on
 * two lines, or with a comment inside, is none). */
static int
row_cells(Fmt *f, int k, int r, int mat)
{
	int cells = 0;

	for (int j = k + 1; j < r; j++) {
		int last = j;
		if (f->e[j].kind == TK_MINUS && j + 1 < r)
			last = j + 1;
		if (!is_number(f->e[last].kind))
			return -1;
		if (mat >= 0) {
			f->e[j].cell = cells + 1;
			f->e[j].cellend = last;
			f->e[j].mat = mat;
		}
		cells++;
		j = last + 1;
		if (j < r && f->e[j].kind != TK_COMMA)
			return -1;
	}
	return cells;
}

/* The number of cells of each row of the '[' at open, if it is a matrix:
 * two rows or more, each a '[ ... ]' of numbers on a line of its own, all
 * with the same number of cells; else -1.  With mat >= 0, the cells are
 * marked as the cells of matrix mat. */
static int
matrix_rows(Fmt *f, int open, int mat)
{
	int close = f->e[open].match, nrow = 0, ncol = -1, nl = 1;

	for (int k = open + 1; k < close;) {
		int kind = f->e[k].kind, r = f->e[k].match, cols;
		if (kind == E_NL || kind == E_COMMENT || kind == TK_COMMA) {
			nl |= kind == E_NL;
			k++;
			continue;
		}
		if (kind != TK_LBRACKET || !nl || r <= k || r >= close)
			return -1;
		cols = row_cells(f, k, r, mat);
		if (cols < 1 || (ncol >= 0 && cols != ncol))
			return -1;
		ncol = cols;
		nrow++;
		nl = 0;
		k = r + 1;
	}
	return nrow >= 2 ? ncol : -1;
}

static void
matrix_find(Fmt *f, int open)
{
	int ncol = matrix_rows(f, open, -1);

	if (ncol < 0)
		return;
	if (f->nmat == f->matcap) {
		int cap = f->matcap ? f->matcap * 2 : 8;
		Matrix *v = arena_alloc(f->a, (size_t)cap * sizeof *v);
		if (f->nmat)
			memcpy(v, f->mat, (size_t)f->nmat * sizeof *v);
		f->mat = v;
		f->matcap = cap;
	}
	matrix_rows(f, open, f->nmat);
	f->mat[f->nmat].w = arena_alloc(f->a, (size_t)ncol * sizeof(int));
	f->nmat++;
}

/* ---------------------------------------------------------------- lines */

static void
buf_put(Fmt *f, const char *p, size_t len)
{
	if (f->blen + len + 1 > f->bcap) {
		size_t cap = f->bcap ? f->bcap * 2 : 256;
		while (cap < f->blen + len + 1)
			cap *= 2;
		char *b = realloc(f->buf, cap);
		if (!b) {
			fputs("tfgc: error: out of memory\n", stderr);
			exit(1);
		}
		f->buf = b;
		f->bcap = cap;
	}
	memcpy(f->buf + f->blen, p, len);
	f->blen += len;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)p[i] & 0xc0) != 0x80)
			f->col++; /* a UTF-8 sequence is one column */
}

static void
line_push(Fmt *f, Line ln)
{
	if (f->nlines == f->cap) {
		int cap = f->cap ? f->cap * 2 : 64;
		Line *v = arena_alloc(f->a, (size_t)cap * sizeof *v);
		if (f->nlines)
			memcpy(v, f->lines, (size_t)f->nlines * sizeof *v);
		f->lines = v;
		f->cap = cap;
	}
	f->lines[f->nlines++] = ln;
}

/* Ends the current line, if one was started. */
static void
line_end(Fmt *f)
{
	Line ln = {0};
	if (!f->have_line)
		return;
	ln.ind = f->ind;
	ln.code = arena_strndup(f->a, f->buf ? f->buf : "", f->blen);
	ln.len = (uint32_t)f->blen;
	ln.width = f->col;
	ln.cmt = f->cmt;
	ln.cmtlen = f->cmtlen;
	line_push(f, ln);
	f->have_line = 0;
	f->blen = 0;
	f->cmt = NULL;
}

/* Starts a line at indentation ind, after a blank line if blank (never
 * at the start of the file). */
static void
line_start(Fmt *f, int ind, int blank)
{
	line_end(f);
	if (blank && f->nlines > 0) {
		Line ln = {0};
		ln.code = "";
		line_push(f, ln);
	}
	f->have_line = 1;
	f->ind = ind;
	f->col = ind;
	f->blen = 0;
}

/* ------------------------------------------------------------- printing */

/* Can a token of this kind end an operand?  Then '-' after it is binary
 * and '[' after it indexes. */
static int
ends_operand(int k)
{
	return k == TK_IDENT || k == TK_INT || k == TK_FLOAT ||
	       k == TK_STRING || k == TK_TRUE || k == TK_FALSE ||
	       k == TK_RPAREN || k == TK_RBRACKET || k == TK_QUESTION;
}

/* One space between the last token printed and t (of kind k) on the same
 * line, or none?  ctx is the innermost open bracket. */
static int
spaced(const Fmt *f, int k, int ctx)
{
	int p = f->prev;
	if (p == TK_LPAREN || p == TK_LBRACKET)
		return 0;
	if (k == TK_RPAREN || k == TK_RBRACKET || k == TK_COMMA)
		return 0;
	if (p == TK_COMMA)
		return 1;
	if (k == TK_DOT) /* `1 .x' must not become the number `1.x' */
		return p == TK_INT || p == TK_FLOAT;
	if (p == TK_DOT || p == TK_DOTDOT || k == TK_DOTDOT || k == TK_COLON)
		return 0;
	if (p == TK_COLON)
		return ctx != '['; /* a slice's `lo:hi', or `name: value' */
	if (k == TK_ASSIGN || p == TK_ASSIGN)
		return ctx != '('; /* keyword arguments: name=value */
	if (f->prev_unary)
		return k == TK_MINUS; /* -x, but - -x */
	if (k == TK_LPAREN)
		return p != TK_IDENT; /* a call */
	if (k == TK_LBRACKET)
		return !ends_operand(p); /* an index, dims, or a tensor */
	if (k == TK_RBRACE)
		return p != TK_LBRACE; /* { x }, {} */
	return 1;
}

static void
put_token(Fmt *f, const Elem *t, int ctx, int unary)
{
	int i = (int)(t - f->e);

	if (f->blen > 0 && spaced(f, t->kind, ctx))
		buf_put(f, " ", 1);
	if (t->cell) {
		const Matrix *m = &f->mat[t->mat];
		for (int k = t->cellw; f->apply && k < m->w[t->cell - 1]; k++)
			buf_put(f, " ", 1);
		f->cell = i;
		f->cellcol = f->col;
	}
	buf_put(f, t->p, t->len);
	if (f->cell >= 0 && f->e[f->cell].cellend == i) {
		Elem *c = &f->e[f->cell];
		int *w = &f->mat[c->mat].w[c->cell - 1];
		c->cellw = f->col - f->cellcol;
		if (c->cellw > *w)
			*w = c->cellw;
		f->cell = -1;
	}
	for (int k = 0; k < t->pad; k++)
		buf_put(f, " ", 1);
	f->prev = t->kind;
	f->prev_unary = unary;
	f->nl = f->sep = f->cmt_since = 0;
	f->first = 0;
}

static Open *
top(Fmt *f)
{
	return &f->open[f->depth - 1];
}

/* The innermost block's indentation. */
static int
block_ind(const Fmt *f)
{
	for (int i = f->depth - 1; i > 0; i--)
		if (f->open[i].kind == '{')
			return f->open[i].ind;
	return 0;
}

/* Where a continuation line inside bracket o starts. */
static int
cont_ind(Open *o)
{
	if (o->mode == 0)
		o->mode = BLOCK; /* nothing after the bracket on its line */
	return o->mode == VISUAL ? o->vcol : o->base + INDENT;
}

static void
push_open(Fmt *f, int i)
{
	const Elem *t = &f->e[i];
	Open o = {0};
	if (f->depth == f->n + 1)
		return; /* cannot happen: at most one per element */
	if (t->kind == TK_LBRACE && !t->feed) {
		o.kind = '{';
		o.oneline = oneline(f, i);
		o.ind = block_ind(f) + INDENT;
		f->first = 1;
	} else {
		o.kind = t->kind == TK_LBRACE ? 'f'
			 : t->kind == TK_LPAREN ? '(' : '[';
		o.base = f->ind;
		o.col = f->col - 1;
	}
	f->open[f->depth++] = o;
}

/* A token inside a block (or at top level): a new statement starts a
 * line, or follows "; " in a one-line block. */
static void
token_in_block(Fmt *f, int i)
{
	const Elem *t = &f->e[i];
	Open *o = top(f);
	int start = f->first || f->nl > 0 || f->sep;

	if (t->kind == TK_RBRACE && f->depth > 1) {
		int empty = f->first;
		f->depth--;
		if (!o->oneline)
			line_start(f, block_ind(f), 0);
		else if (!empty)
			buf_put(f, " ", 1);
		buf_put(f, "}", 1);
		f->prev = TK_RBRACE;
		f->prev_unary = 0;
		f->nl = f->sep = f->cmt_since = f->first = 0;
		return;
	}
	if (start && (!o->oneline || !f->have_line)) {
		line_start(f, o->ind, f->nl >= 2 && !f->first);
	} else if (start && !f->first) {
		buf_put(f, ";", 1); /* `{ a; b }': spaced() puts the blank */
		f->prev = TK_SEMI;
		f->prev_unary = 0;
	}
	put_token(f, t, '{', t->kind == TK_MINUS &&
		  (start || !ends_operand(f->prev)));
	if (is_open(t->kind))
		push_open(f, i);
}

/* A token inside '(', '[' or a feed's braces: the line breaks are the
 * input's. */
static void
token_in_bracket(Fmt *f, int i)
{
	const Elem *t = &f->e[i];
	Open *o = top(f);
	int closes = (t->kind == TK_RPAREN && o->kind == '(') ||
		     (t->kind == TK_RBRACKET && o->kind == '[') ||
		     (t->kind == TK_RBRACE && o->kind == 'f');

	if (t->kind == TK_COMMA && f->nl > 0 && !f->cmt_since) {
		/* a comma that starts a line goes to the end of the last */
		int nl = f->nl;
		put_token(f, t, o->kind, 0);
		f->nl = nl;
		return;
	}
	if (f->nl > 0) {
		int ind = cont_ind(o);
		if (closes)
			ind = o->mode == VISUAL ? o->col : o->base;
		line_start(f, ind, 0);
	}
	if (o->mode == 0 && !closes) {
		o->mode = VISUAL;
		o->vcol = f->col + (f->blen > 0 && spaced(f, t->kind, o->kind));
	}
	put_token(f, t, o->kind, t->kind == TK_MINUS && !ends_operand(f->prev));
	if (closes) {
		if (f->depth > 1)
			f->depth--;
	} else if (is_open(t->kind)) {
		push_open(f, i);
	}
}

static void
comment(Fmt *f, const Elem *c)
{
	Open *o = top(f);

	if (f->nl == 0 && f->have_line && f->blen > 0) {
		f->cmt = c->p; /* trailing */
		f->cmtlen = c->len;
		f->cmt_since = 1;
		return;
	}
	if (o->kind == '{')
		line_start(f, o->ind, f->nl >= 2 && !f->first);
	else
		line_start(f, cont_ind(o), 0);
	buf_put(f, c->p, c->len);
	line_end(f);
	f->nl = 0;
	f->cmt_since = 1;
	f->first = 0;
}

/* Writes the lines, each trailing comment in the column of those of the
 * lines around it: a run of consecutive lines that all have one shares
 * the column CMT_GAP past its widest line. */
static char *
lines_write(Fmt *f, size_t *len)
{
	int *col = arena_alloc(f->a, ((size_t)f->nlines + 1) * sizeof *col);
	size_t cap = 1;
	char *out, *o;

	for (int i = 0; i < f->nlines;) {
		int j = i, w = 0;
		while (j < f->nlines && f->lines[j].cmt) {
			if (f->lines[j].width > w)
				w = f->lines[j].width;
			j++;
		}
		for (; i < j; i++)
			col[i] = w + CMT_GAP;
		if (j == i)
			i++;
	}
	for (int i = 0; i < f->nlines; i++) {
		const Line *l = &f->lines[i];
		cap += (size_t)l->ind + l->len + 1;
		if (l->cmt)
			cap += (size_t)(col[i] - l->width) + l->cmtlen;
	}
	out = o = arena_alloc(f->a, cap);
	for (int i = 0; i < f->nlines; i++) {
		const Line *l = &f->lines[i];
		if (l->len > 0) {
			memset(o, ' ', (size_t)l->ind);
			o += l->ind;
		}
		memcpy(o, l->code, l->len);
		o += l->len;
		if (l->cmt) {
			memset(o, ' ', (size_t)(col[i] - l->width));
			o += col[i] - l->width;
			memcpy(o, l->cmt, l->cmtlen);
			o += l->cmtlen;
		}
		*o++ = '\n';
	}
	*o = '\0';
	*len = (size_t)(o - out);
	return out;
}

/* One pass over the elements, from a clean state. */
static void
print_all(Fmt *f, int apply)
{
	f->apply = apply;
	f->depth = 1;
	memset(&f->open[0], 0, sizeof f->open[0]);
	f->open[0].kind = '{';
	f->nlines = f->cap = 0;
	f->lines = NULL;
	f->have_line = 0;
	f->ind = f->col = 0;
	f->blen = 0;
	f->cmt = NULL;
	f->prev = -1;
	f->prev_unary = 0;
	f->nl = f->sep = f->cmt_since = 0;
	f->first = 1;
	f->cell = -1;
	for (int i = 0; i < f->n; i++) {
		const Elem *el = &f->e[i];
		if (el->kind == E_NL) {
			f->nl++;
		} else if (el->kind == E_COMMENT) {
			comment(f, el);
		} else if (el->kind == TK_SEMI) {
			f->sep = 1;
		} else if (el->kind == TK_COMMA && i + 1 < f->n &&
			   is_close(f->e[i + 1].kind)) {
			/* a trailing comma before the bracket on its line */
		} else if (top(f)->kind == '{') {
			token_in_block(f, i);
		} else {
			token_in_bracket(f, i);
		}
	}
	line_end(f);
}

static char *
format(Arena *a, const SrcFile *src, size_t *len)
{
	Fmt f;
	char *out;

	memset(&f, 0, sizeof f);
	f.a = a;
	elems_read(&f, src);
	f.open = arena_alloc(a, ((size_t)f.n + 2) * sizeof *f.open);
	for (int i = 0; i < f.n; i++) {
		if (f.e[i].match <= i)
			continue;
		if (f.e[i].kind == TK_LBRACE &&
		    prev_token(&f, i) == TK_CLUSTER && !oneline(&f, i))
			jobs_pad(&f, i);
		if (f.e[i].kind == TK_LBRACKET)
			matrix_find(&f, i);
	}
	/* the first pass measures the cells of the matrices, if any */
	if (f.nmat > 0)
		print_all(&f, 0);
	print_all(&f, 1);
	out = lines_write(&f, len);
	free(f.buf);
	return out;
}

/* ------------------------------------------------------------ the check */

static int
str_same(const char *x, const char *y)
{
	return x == y || (x && y && strcmp(x, y) == 0);
}

/* Do x and y say the same, wherever they are written? */
static int
ast_same(const AstNode *x, const AstNode *y)
{
	if (!x || !y)
		return x == y;
	if (x->kind != y->kind || x->op != y->op || x->ival != y->ival ||
	    x->has_dims != y->has_dims || x->n != y->n ||
	    memcmp(&x->fval, &y->fval, sizeof x->fval) != 0 ||
	    x->tok.kind != y->tok.kind || x->tok.len != y->tok.len ||
	    (x->tok.len && memcmp(x->tok.p, y->tok.p, x->tok.len) != 0) ||
	    !str_same(x->name, y->name))
		return 0;
	if (x->kind == AST_STRING
		? memcmp(x->str, y->str, (size_t)x->ival) != 0
		: !str_same(x->str, y->str))
		return 0;
	if (!ast_same(x->a, y->a) || !ast_same(x->b, y->b))
		return 0;
	for (int i = 0; i < x->n; i++)
		if (!ast_same(x->list[i], y->list[i]))
			return 0;
	return 1;
}

char *
lang_format(Arena *a, const SrcFile *f, Diag *d, size_t *len)
{
	AstNode *before = lang_parse(a, f, d), *after;
	SrcFile *g;
	Diag quiet;
	char *out;

	if (!before)
		return NULL;
	out = format(a, f, len);
	g = arena_alloc(a, sizeof *g);
	g->path = f->path;
	g->text = out; /* a string literal may hold a NUL: not strlen */
	g->len = *len;
	diag_init(&quiet, NULL);
	after = lang_parse(a, g, &quiet);
	if (!after || !ast_same(before, after)) {
		SrcLoc none = {0};
		diag_error(d, none, "cannot format '%s' without changing what "
			   "it means (a bug in tfgc fmt: please report it)",
			   f->path);
		return NULL;
	}
	return out;
}
