/*
 * lang/lex.re: the lexer (re2c generates build/lang/lex.c from it).
 *
 * The source is NUL-terminated and never changed, so the scanner needs no
 * refilling: a NUL at f->len is the end, one earlier is a bad character.
 * Each token points into the source.  Every newline comes out as TK_SEMI
 * pointing at the '\n'; front.c drops the ones inside brackets.
 *
 * Bad input is reported here and lexing goes on: a bad character is
 * skipped, a malformed number still comes out as a number token (so the
 * parser does not report the same place again), an unterminated string
 * ends at the end of its line.  Literal values are computed again when the
 * parser needs them (lex_*_value), so a Token stays small.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"

typedef const unsigned char *Cursor;

void
lex_init(Lexer *lx, const SrcFile *f, Diag *d)
{
	memset(lx, 0, sizeof *lx);
	lx->f = f;
	lx->cur = f->text;
	lx->lim = f->text + f->len;
	lx->bol = f->text;
	lx->line = 1;
	lx->d = d;
	lx->last_end.file = f;
	lx->last_end.line = 1;
	lx->last_end.col = 1;
}

static SrcLoc
lex_loc(const Lexer *lx, const char *p, size_t len)
{
	SrcLoc loc;
	loc.file = lx->f;
	loc.off = (uint32_t)(p - lx->f->text);
	loc.len = (uint32_t)len;
	loc.line = lx->line;
	loc.col = (uint32_t)(p - lx->bol) + 1;
	return loc;
}

static Token
lex_tok(Lexer *lx, int kind, Cursor p, Cursor end)
{
	Token t;
	t.p = (const char *)p;
	t.len = (uint32_t)(end - p);
	t.loc = lex_loc(lx, t.p, t.len);
	t.kind = kind;
	lx->cur = (const char *)end;
	if (kind != TK_SEMI || *p != '\n') {
		lx->last_end = t.loc;
		lx->last_end.off += t.len;
		lx->last_end.col += t.len;
		lx->last_end.len = 0;
	}
	return t;
}

static void
lex_error(Lexer *lx, Cursor p, Cursor end, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
lex_error(Lexer *lx, Cursor p, Cursor end, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lx->nerr++;
	diag_verror(lx->d, lex_loc(lx, (const char *)p, (size_t)(end - p)),
		    fmt, ap);
	va_end(ap);
}

/* An unexpected byte, or a whole UTF-8 sequence, shown as 'X' or '\xHH'. */
static Cursor
lex_bad_char(Lexer *lx, Cursor p)
{
	Cursor end = p + 1;
	if (*p >= 0xc0)
		while ((*end & 0xc0) == 0x80 && end - p < 4)
			end++;
	char shown[20], *s = shown;
	for (Cursor q = p; q < end; q++) {
		if (*q >= 0x21 && *q < 0x7f && *q != '\'' && *q != '\\')
			*s++ = (char)*q;
		else if (*q == '\'' || *q == '\\') {
			*s++ = '\\';
			*s++ = (char)*q;
		} else
			s += sprintf(s, "\\x%02X", *q);
	}
	*s = '\0';
	lex_error(lx, p, end, "unexpected character '%s'", shown);
	return end;
}

static int
hex_digit(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Value of a decimal or 0x integer; -1 when it does not fit in int64.
 * Stops at the first byte that is not a digit. */
static int64_t
int_value(const char *p, const char *end)
{
	int base = 10;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	uint64_t v = 0;
	for (; p < end; p++) {
		int dg = hex_digit((unsigned char)*p);
		if (dg < 0 || dg >= base)
			break;
		if (v > ((uint64_t)INT64_MAX - (uint64_t)dg) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)dg;
	}
	return (int64_t)v;
}

int64_t
lex_int_value(const Token *t)
{
	int64_t v = int_value(t->p, t->p + t->len);
	return v < 0 ? 0 : v;
}

double
lex_float_value(const Token *t)
{
	char buf[128];
	size_t n = t->len < sizeof buf - 1 ? t->len : sizeof buf - 1;
	memcpy(buf, t->p, n);
	buf[n] = '\0';
	return strtod(buf, NULL);
}

static Token
lex_int(Lexer *lx, Cursor p, Cursor end)
{
	if (int_value((const char *)p, (const char *)end) < 0)
		lex_error(lx, p, end, "integer literal is too large");
	return lex_tok(lx, TK_INT, p, end);
}

static Token
lex_float(Lexer *lx, Cursor p, Cursor end)
{
	Token t = lex_tok(lx, TK_FLOAT, p, end);
	if (isinf(lex_float_value(&t)))
		lex_error(lx, p, end, "floating-point literal is too large");
	return t;
}

static Token
lex_bad_number(Lexer *lx, Cursor p, Cursor end)
{
	int dot = memchr(p, '.', (size_t)(end - p)) != NULL;
	lex_error(lx, p, end, "invalid number '%.*s'", (int)(end - p),
		  (const char *)p);
	return lex_tok(lx, dot ? TK_FLOAT : TK_INT, p, end);
}

/* The length of the escape at p (just after the backslash), 0 if bad. */
static int
escape_len(Cursor p)
{
	switch (*p) {
	case 'n': case 't': case '\\': case '"':
		return 1;
	case 'x':
		return hex_digit(p[1]) >= 0 && hex_digit(p[2]) >= 0 ? 3 : 0;
	default:
		return 0;
	}
}

/* A string literal from its opening quote: ends at the closing quote, or
 * (an error) at the end of the line. */
static Token
lex_string(Lexer *lx, Cursor p)
{
	Cursor q = p + 1, lim = (Cursor)lx->lim;
	for (;;) {
		if (q >= lim || *q == '\n') {
			lex_error(lx, p, p + 1, "unterminated string");
			return lex_tok(lx, TK_STRING, p, q);
		}
		if (*q == '"')
			return lex_tok(lx, TK_STRING, p, q + 1);
		if (*q != '\\') {
			q++;
			continue;
		}
		int n = escape_len(q + 1);
		if (n == 0) {
			if (q + 1 >= lim || q[1] == '\n')
				lex_error(lx, q, q + 1,
					  "invalid escape sequence at end "
					  "of line");
			else if (q[1] == 'x')
				lex_error(lx, q, q + 2,
					  "expected two hex digits after "
					  "'\\x'");
			else if (q[1] >= 0x20 && q[1] < 0x7f)
				lex_error(lx, q, q + 2,
					  "invalid escape sequence '\\%c'",
					  q[1]);
			else
				lex_error(lx, q, q + 2,
					  "invalid escape sequence '\\\\x%02X'",
					  q[1]);
			q++;
			continue;
		}
		q += 1 + n;
	}
}

char *
lex_string_value(Arena *a, const Token *t, size_t *len)
{
	/* Decoding never grows the text. */
	char *out = arena_alloc(a, t->len + 1), *o = out;
	Cursor p = (Cursor)t->p + 1, end = (Cursor)t->p + t->len;
	if (end > p && end[-1] == '"' && t->len >= 2)
		end--;
	while (p < end) {
		if (*p != '\\' || p + 1 >= end) {
			*o++ = (char)*p++;
			continue;
		}
		p++;
		switch (*p) {
		case 'n': *o++ = '\n'; p++; break;
		case 't': *o++ = '\t'; p++; break;
		case '\\': *o++ = '\\'; p++; break;
		case '"': *o++ = '"'; p++; break;
		case 'x':
			if (p + 2 < end && escape_len(p) == 3) {
				*o++ = (char)(hex_digit(p[1]) * 16 +
					      hex_digit(p[2]));
				p += 3;
				break;
			}
			*o++ = (char)*p++;
			break;
		default:
			*o++ = (char)*p++;
			break;
		}
	}
	*o = '\0';
	*len = (size_t)(o - out); /* \x00 may come before the end */
	return out;
}

Token
lex_next(Lexer *lx)
{
	Cursor YYCURSOR, YYMARKER, YYCTXMARKER, tok;
	(void)YYCTXMARKER;
	for (;;) {
		tok = YYCURSOR = (Cursor)lx->cur;
		YYMARKER = YYCURSOR;
/*!re2c
		re2c:define:YYCTYPE = "unsigned char";
		re2c:yyfill:enable = 0;

		dec = [0-9]+;
		hex = "0" [xX] [0-9a-fA-F]+;
		exp = [eE] [+-]? [0-9]+;
		ident = [a-zA-Z_] [a-zA-Z0-9_]*;

		"\x00" {
			if (tok >= (Cursor)lx->lim) {
				Token t;
				t.p = (const char *)tok;
				t.len = 0;
				t.loc = lx->last_end;
				t.kind = 0;
				lx->cur = (const char *)tok;
				return t;
			}
			lx->cur = (const char *)lex_bad_char(lx, tok);
			continue;
		}
		[ \t\r\v\f]+ { lx->cur = (const char *)YYCURSOR; continue; }
		"#" [^\n\x00]* { lx->cur = (const char *)YYCURSOR; continue; }
		"\n" {
			Token t = lex_tok(lx, TK_SEMI, tok, YYCURSOR);
			lx->line++;
			lx->bol = (const char *)YYCURSOR;
			return t;
		}

		"cluster" { return lex_tok(lx, TK_CLUSTER, tok, YYCURSOR); }
		"device" { return lex_tok(lx, TK_DEVICE, tok, YYCURSOR); }
		"input" { return lex_tok(lx, TK_INPUT, tok, YYCURSOR); }
		"session" { return lex_tok(lx, TK_SESSION, tok, YYCURSOR); }
		"print" { return lex_tok(lx, TK_PRINT, tok, YYCURSOR); }
		"for" { return lex_tok(lx, TK_FOR, tok, YYCURSOR); }
		"in" { return lex_tok(lx, TK_IN, tok, YYCURSOR); }
		"feed" { return lex_tok(lx, TK_FEED, tok, YYCURSOR); }
		"true" { return lex_tok(lx, TK_TRUE, tok, YYCURSOR); }
		"false" { return lex_tok(lx, TK_FALSE, tok, YYCURSOR); }
		"if" { return lex_tok(lx, TK_IF, tok, YYCURSOR); }
		"else" { return lex_tok(lx, TK_ELSE, tok, YYCURSOR); }
		ident { return lex_tok(lx, TK_IDENT, tok, YYCURSOR); }

		hex { return lex_int(lx, tok, YYCURSOR); }
		dec { return lex_int(lx, tok, YYCURSOR); }
		/* As Python and NumPy write them: `2.5', `1.', `.5', `1e-5',
		 * `1.e5' (spec §2.6 "Float literals") */
		flt = dec "." dec exp? | dec "." exp | "." dec exp? | dec exp;
		num_tail = [a-zA-Z0-9_]+;

		flt { return lex_float(lx, tok, YYCURSOR); }
		/* `1.': a dot after digits with none after it, but `0..3' is
		 * a range */
		dec "." / [^.a-zA-Z0-9_] { return lex_float(lx, tok, YYCURSOR); }
		/* A number run into letters. */
		dec "." num_tail | flt num_tail | [0-9] num_tail? {
			return lex_bad_number(lx, tok, YYCURSOR);
		}

		"\"" { return lex_string(lx, tok); }

		"(" { return lex_tok(lx, TK_LPAREN, tok, YYCURSOR); }
		")" { return lex_tok(lx, TK_RPAREN, tok, YYCURSOR); }
		"[" { return lex_tok(lx, TK_LBRACKET, tok, YYCURSOR); }
		"]" { return lex_tok(lx, TK_RBRACKET, tok, YYCURSOR); }
		"{" { return lex_tok(lx, TK_LBRACE, tok, YYCURSOR); }
		"}" { return lex_tok(lx, TK_RBRACE, tok, YYCURSOR); }
		"," { return lex_tok(lx, TK_COMMA, tok, YYCURSOR); }
		":" { return lex_tok(lx, TK_COLON, tok, YYCURSOR); }
		";" { return lex_tok(lx, TK_SEMI, tok, YYCURSOR); }
		"=" { return lex_tok(lx, TK_ASSIGN, tok, YYCURSOR); }
		"+" { return lex_tok(lx, TK_PLUS, tok, YYCURSOR); }
		"-" { return lex_tok(lx, TK_MINUS, tok, YYCURSOR); }
		"*" { return lex_tok(lx, TK_STAR, tok, YYCURSOR); }
		"/" { return lex_tok(lx, TK_SLASH, tok, YYCURSOR); }
		"%" { return lex_tok(lx, TK_PERCENT, tok, YYCURSOR); }
		"@" { return lex_tok(lx, TK_AT, tok, YYCURSOR); }
		"?" { return lex_tok(lx, TK_QUESTION, tok, YYCURSOR); }
		".." { return lex_tok(lx, TK_DOTDOT, tok, YYCURSOR); }
		"." { return lex_tok(lx, TK_DOT, tok, YYCURSOR); }
		"==" { return lex_tok(lx, TK_EQ, tok, YYCURSOR); }
		"!=" { return lex_tok(lx, TK_NE, tok, YYCURSOR); }
		"<" { return lex_tok(lx, TK_LT, tok, YYCURSOR); }
		"<=" { return lex_tok(lx, TK_LE, tok, YYCURSOR); }
		">" { return lex_tok(lx, TK_GT, tok, YYCURSOR); }
		">=" { return lex_tok(lx, TK_GE, tok, YYCURSOR); }

		* {
			lx->cur = (const char *)lex_bad_char(lx, tok);
			continue;
		}
*/
	}
}
