/*
 * lang/json.c: a strict JSON reader (RFC 8259), for the cluster files of
 * `--cluster FILE.json` and the TF_CONFIG variable (spec/language.md
 * §10.6 "Launchers and cluster managers").
 *
 * Recursive descent over a SrcFile into Json nodes in the arena.  Every
 * node keeps its SrcLoc, so that what is wrong in a document that parsed
 * (a job with no tasks, an address listed twice, a task type the cluster
 * lacks) is reported at its file:line:col with the line and a caret,
 * like an error in a program.
 *
 * Strict on purpose: a cluster file that two tools read differently is
 * worse than one refused, so nothing RFC 8259 leaves out is accepted (no
 * comments, trailing commas, single quotes, leading zeros, NaN, bare
 * control characters or invalid UTF-8 in strings), and neither are two
 * members of one object with the same key (RFC 8259 leaves it to the
 * reader; Python keeps the last, others the first) or \u0000 (strings
 * become C strings).  The first error ends the read: what follows a
 * syntax error is rarely worth reporting.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"

/* Deeper nesting than any cluster file needs is refused before the
 * recursion could exhaust the stack. */
enum { JSON_MAX_DEPTH = 64 };

typedef struct JsonReader {
	Arena *a;
	const SrcFile *f;
	Diag *d;
	const char *p;   /* next byte */
	const char *end; /* f->text + f->len */
	const char *bol; /* first byte of p's line */
	uint32_t line;   /* of p, from 1 */
	int depth;
} JsonReader;

const char *
json_kind_name(JsonKind k)
{
	static const char *const name[] = {"null", "true or false",
					   "a number", "a string", "an array",
					   "an object"};

	return k <= JSON_OBJECT ? name[k] : "?";
}

/* n bytes at p, which lies on the current line. */
static SrcLoc
loc_at(const JsonReader *r, const char *p, size_t n)
{
	SrcLoc l;

	l.file = r->f;
	l.off = (uint32_t)(p - r->f->text);
	l.len = (uint32_t)n;
	l.line = r->line;
	l.col = (uint32_t)(p - r->bol) + 1;
	return l;
}

static void
fail(JsonReader *r, SrcLoc l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
fail(JsonReader *r, SrcLoc l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_verror(r->d, l, fmt, ap);
	va_end(ap);
}

static void
skip_ws(JsonReader *r)
{
	while (r->p < r->end) {
		char c = *r->p;

		if (c == '\n') {
			r->p++;
			r->bol = r->p;
			r->line++;
		} else if (c == ' ' || c == '\t' || c == '\r') {
			r->p++;
		} else {
			break;
		}
	}
}

/* What is at p, for "found ...": a word whole, else one character. */
static const char *
found(JsonReader *r)
{
	const char *q = r->p;
	unsigned char c = (unsigned char)*q;

	if (r->p >= r->end)
		return "the end of input";
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
		while (q < r->end && q - r->p < 24 &&
		       ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			(*q >= '0' && *q <= '9') || *q == '_'))
			q++;
		return arena_printf(r->a, "'%.*s'", (int)(q - r->p), r->p);
	}
	if (c > 0x20 && c < 0x7f)
		return arena_printf(r->a, "'%c'", c);
	return arena_printf(r->a, "byte 0x%02X", c);
}

/* The error for what is at p where `want` was expected; at the end of
 * input the style guide's "unexpected end of input", with a note at the
 * bracket still open (open may be NULL). */
static void
expected(JsonReader *r, const char *want, const Json *open)
{
	if (r->p >= r->end) {
		fail(r, loc_at(r, r->p, 0), "unexpected end of input");
		if (open)
			diag_note(r->d, open->loc, "%s opened here is not "
				  "closed", open->kind == JSON_ARRAY
				  ? "the array" : "the object");
		return;
	}
	fail(r, loc_at(r, r->p, 1), "expected %s, found %s", want, found(r));
}

static Json *
node(JsonReader *r, JsonKind k, const char *start)
{
	Json *j = arena_alloc(r->a, sizeof *j);

	j->kind = k;
	j->loc = loc_at(r, start, 1);
	return j;
}

static Json *value(JsonReader *r);

/* ------------------------------------------------------------- strings */

static int
hex4(const char *p, const char *end, unsigned *out)
{
	unsigned v = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *
put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), 0 if it is
 * not one. */
static int
utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	int n = c >= 0xc2 && c <= 0xdf   ? 2
		: c >= 0xe0 && c <= 0xef ? 3
		: c >= 0xf0 && c <= 0xf4 ? 4
					 : 0;
	unsigned char lo = 0x80, hi = 0xbf;

	if (n == 0 || end - p < n)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* One \-escape at r->p (the backslash) into *o; -1 after an error. */
static int
escape(JsonReader *r, char **o)
{
	/* pairs: the letter after '\', the character it stands for */
	static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	const char *e = r->p, *m;
	unsigned cp, lo;

	if (e + 1 >= r->end) {
		fail(r, loc_at(r, e, 1), "unexpected end of input");
		return -1;
	}
	if (e[1] != 'u') {
		m = e[1] ? strchr(simple, e[1]) : NULL;
		if (m == NULL || (m - simple) % 2 != 0) {
			fail(r, loc_at(r, e, 2), "invalid escape '\\%c' (JSON "
			     "has \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX)",
			     e[1] > 0x20 && e[1] < 0x7f ? e[1] : '?');
			return -1;
		}
		*(*o)++ = m[1];
		r->p += 2;
		return 0;
	}
	if (hex4(e + 2, r->end, &cp) < 0) {
		fail(r, loc_at(r, e, 2), "invalid \\u escape: expected four hex "
		     "digits");
		return -1;
	}
	if (cp == 0) {
		fail(r, loc_at(r, e, 6), "\\u0000 (a NUL character) is not "
		     "allowed in a string");
		return -1;
	}
	if (cp >= 0xdc00 && cp <= 0xdfff) {
		fail(r, loc_at(r, e, 6), "unpaired surrogate \\u%04X", cp);
		return -1;
	}
	if (cp >= 0xd800 && cp <= 0xdbff) {
		/* hex4 read e[2..5], so e[6] is at most the final NUL */
		if (e[6] != '\\' || e[7] != 'u' || hex4(e + 8, r->end, &lo) < 0 ||
		    lo < 0xdc00 || lo > 0xdfff) {
			fail(r, loc_at(r, e, 6), "unpaired surrogate \\u%04X",
			     cp);
			return -1;
		}
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		r->p += 6;
	}
	*o = put_utf8(*o, cp);
	r->p += 6;
	return 0;
}

/* A string at r->p (its opening quote), decoded. */
static Json *
string(JsonReader *r)
{
	const char *start = r->p, *q = r->p + 1;
	Json *j = node(r, JSON_STRING, start);
	char *buf, *o;

	/* its bytes end at the closing quote or where it cannot go on:
	   decoded, a string is never longer than written */
	while (q < r->end && *q != '"' && *q != '\n')
		q += *q == '\\' && q + 1 < r->end ? 2 : 1;
	o = buf = arena_alloc(r->a, (size_t)(q - start) + 1);
	r->p++;
	for (;;) {
		unsigned char c = (unsigned char)*r->p;
		int n;

		if (r->p >= r->end) {
			fail(r, j->loc, "unterminated string");
			return NULL;
		}
		if (c == '"')
			break;
		if (c == '\n') {
			fail(r, loc_at(r, r->p, 0), "a string cannot contain "
			     "a line break: end it with '\"' or write \\n");
			return NULL;
		}
		if (c < 0x20) {
			fail(r, loc_at(r, r->p, 1), "control character U+%04X "
			     "in a string: write it as an escape (\\u%04X)",
			     c, c);
			return NULL;
		}
		if (c == '\\') {
			if (escape(r, &o) < 0)
				return NULL;
			continue;
		}
		if (c < 0x80) {
			*o++ = (char)c;
			r->p++;
			continue;
		}
		if ((n = utf8_len((const unsigned char *)r->p,
				  (const unsigned char *)r->end)) == 0) {
			fail(r, loc_at(r, r->p, 1), "invalid UTF-8 in a "
			     "string (byte 0x%02X)", c);
			return NULL;
		}
		memcpy(o, r->p, (size_t)n);
		o += n;
		r->p += n;
	}
	*o = '\0';
	r->p++;
	j->str = buf;
	j->loc.len = (uint32_t)(r->p - start);
	return j;
}

/* ------------------------------------------------------------- numbers */

static int
digits(const char **q, const char *end)
{
	const char *s = *q;

	while (*q < end && **q >= '0' && **q <= '9')
		(*q)++;
	return *q > s;
}

static Json *
number(JsonReader *r)
{
	const char *s = r->p, *q = s;
	Json *j = node(r, JSON_NUMBER, s);
	const char *why = NULL;
	char *text;

	j->is_int = 1;
	if (*q == '-')
		q++;
	if (q < r->end && *q == '0') {
		q++;
		if (q < r->end && *q >= '0' && *q <= '9')
			why = "leading zeros are not allowed";
	} else if (!digits(&q, r->end)) {
		why = "expected a digit after '-'";
	}
	if (!why && q < r->end && *q == '.') {
		q++;
		j->is_int = 0;
		if (!digits(&q, r->end))
			why = "expected a digit after '.'";
	}
	if (!why && q < r->end && (*q == 'e' || *q == 'E')) {
		q++;
		j->is_int = 0;
		if (q < r->end && (*q == '+' || *q == '-'))
			q++;
		if (!digits(&q, r->end))
			why = "expected a digit in the exponent";
	}
	if (why) {
		while (q < r->end && ((*q >= '0' && *q <= '9') || *q == '.' ||
				      *q == 'e' || *q == 'E' || *q == '+' ||
				      *q == '-'))
			q++;
		fail(r, loc_at(r, s, (size_t)(q - s)), "invalid number '%.*s': "
		     "%s", (int)(q - s), s, why);
		return NULL;
	}
	text = arena_strndup(r->a, s, (size_t)(q - s));
	errno = 0;
	j->num = strtod(text, NULL);
	if (errno == ERANGE && (j->num > 1 || j->num < -1)) {
		fail(r, loc_at(r, s, (size_t)(q - s)), "number '%s' is out of "
		     "range", text);
		return NULL;
	}
	/* exactly an integer only while doubles hold every one */
	if (j->num > 9007199254740992.0 || j->num < -9007199254740992.0)
		j->is_int = 0;
	j->loc.len = (uint32_t)(q - s);
	r->p = q;
	return j;
}

/* -------------------------------------------------------- arrays, objects */

/* The items (and keys) gathered, into j. */
static void
finish(JsonReader *r, Json *j, PtrVec *items, PtrVec *keys, PtrVec *locs)
{
	j->n = items->n;
	j->items = arena_alloc(r->a, sizeof *j->items * ((size_t)j->n + 1));
	for (int i = 0; i < j->n; i++)
		j->items[i] = items->v[i];
	if (j->kind != JSON_OBJECT)
		return;
	j->keys = arena_alloc(r->a, sizeof *j->keys * ((size_t)j->n + 1));
	j->keylocs = arena_alloc(r->a, sizeof *j->keylocs * ((size_t)j->n + 1));
	for (int i = 0; i < j->n; i++) {
		j->keys[i] = keys->v[i];
		j->keylocs[i] = *(SrcLoc *)locs->v[i];
	}
}

/* After ',' in an array or object: JSON has no trailing comma. */
static int
trailing_comma(JsonReader *r, SrcLoc comma, char close)
{
	if (r->p < r->end && *r->p == close) {
		fail(r, comma, "trailing comma before '%c': JSON allows none",
		     close);
		return 1;
	}
	return 0;
}

static Json *
array(JsonReader *r)
{
	Json *j = node(r, JSON_ARRAY, r->p), *v;
	const char *start = r->p;
	SrcLoc comma = {0}; /* the last ',' (file NULL: none yet) */
	PtrVec items = {0};

	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == ']')
		goto done;
	for (;;) {
		skip_ws(r);
		if (comma.file && trailing_comma(r, comma, ']'))
			return NULL;
		if ((v = value(r)) == NULL)
			return NULL;
		vec_push(r->a, &items, v);
		skip_ws(r);
		if (r->p < r->end && *r->p == ']')
			break;
		if (r->p >= r->end || *r->p != ',') {
			expected(r, "',' or ']' after an element of the array",
				 j);
			return NULL;
		}
		comma = loc_at(r, r->p++, 1);
	}
done:
	r->p++;
	j->loc.len = (uint32_t)(r->p - start);
	finish(r, j, &items, NULL, NULL);
	return j;
}

static Json *
object(JsonReader *r)
{
	Json *j = node(r, JSON_OBJECT, r->p), *k, *v;
	const char *start = r->p;
	SrcLoc comma = {0}; /* the last ',' (file NULL: none yet) */
	PtrVec items = {0}, keys = {0}, locs = {0};

	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == '}')
		goto done;
	for (;;) {
		skip_ws(r);
		if (comma.file && trailing_comma(r, comma, '}'))
			return NULL;
		if (r->p >= r->end || *r->p != '"') {
			expected(r, "a member's name, a string in double "
				 "quotes", j);
			return NULL;
		}
		if ((k = string(r)) == NULL)
			return NULL;
		for (int i = 0; i < keys.n; i++)
			if (strcmp(keys.v[i], k->str) == 0) {
				fail(r, k->loc, "key \"%s\" appears twice in "
				     "this object", k->str);
				diag_note(r->d, *(SrcLoc *)locs.v[i],
					  "first here");
				return NULL;
			}
		skip_ws(r);
		if (r->p >= r->end || *r->p != ':') {
			expected(r, arena_printf(r->a, "':' after the key "
						 "\"%s\"", k->str), j);
			return NULL;
		}
		r->p++;
		if ((v = value(r)) == NULL)
			return NULL;
		vec_push(r->a, &keys, (void *)k->str);
		vec_push(r->a, &locs, &k->loc);
		vec_push(r->a, &items, v);
		skip_ws(r);
		if (r->p < r->end && *r->p == '}')
			break;
		if (r->p >= r->end || *r->p != ',') {
			expected(r, "',' or '}' after a member of the object",
				 j);
			return NULL;
		}
		comma = loc_at(r, r->p++, 1);
	}
done:
	r->p++;
	j->loc.len = (uint32_t)(r->p - start);
	finish(r, j, &items, &keys, &locs);
	return j;
}

/* ---------------------------------------------------------------- values */

static Json *
literal(JsonReader *r)
{
	static const struct {
		const char *word;
		JsonKind kind;
		int b;
	} lit[] = {{"true", JSON_BOOL, 1}, {"false", JSON_BOOL, 0},
		   {"null", JSON_NULL, 0}};

	for (size_t i = 0; i < sizeof lit / sizeof *lit; i++) {
		size_t n = strlen(lit[i].word);
		const char *q = r->p + n;
		Json *j;

		if ((size_t)(r->end - r->p) < n ||
		    memcmp(r->p, lit[i].word, n) != 0 ||
		    (q < r->end && ((*q >= 'a' && *q <= 'z') ||
				    (*q >= 'A' && *q <= 'Z') ||
				    (*q >= '0' && *q <= '9') || *q == '_')))
			continue;
		j = node(r, lit[i].kind, r->p);
		j->b = lit[i].b;
		j->loc.len = (uint32_t)n;
		r->p = q;
		return j;
	}
	return NULL;
}

static Json *
value(JsonReader *r)
{
	Json *j;

	skip_ws(r);
	if (r->p >= r->end) {
		fail(r, loc_at(r, r->p, 0), "unexpected end of input");
		return NULL;
	}
	switch (*r->p) {
	case '{':
	case '[':
		if (r->depth == JSON_MAX_DEPTH) {
			fail(r, loc_at(r, r->p, 1), "arrays and objects nested "
			     "deeper than %d levels", JSON_MAX_DEPTH);
			return NULL;
		}
		r->depth++;
		j = *r->p == '{' ? object(r) : array(r);
		r->depth--;
		return j;
	case '"':
		return string(r);
	case '\'':
		fail(r, loc_at(r, r->p, 1), "strings are written in double "
		     "quotes");
		return NULL;
	case '/':
		fail(r, loc_at(r, r->p, 1), "JSON has no comments");
		return NULL;
	case '-':
		return number(r);
	default:
		if (*r->p >= '0' && *r->p <= '9')
			return number(r);
		if ((j = literal(r)) != NULL)
			return j;
		expected(r, "a value (an object, array, string, number, "
			 "true, false or null)", NULL);
		return NULL;
	}
}

Json *
json_parse(Arena *a, const SrcFile *f, Diag *d)
{
	JsonReader r = {0};
	Json *j;

	r.a = a;
	r.f = f;
	r.d = d;
	r.p = r.bol = f->text;
	r.end = f->text + f->len;
	r.line = 1;
	if ((j = value(&r)) == NULL)
		return NULL;
	skip_ws(&r);
	if (r.p < r.end) {
		fail(&r, loc_at(&r, r.p, 1), "unexpected %s after the JSON "
		     "value", found(&r));
		return NULL;
	}
	return j;
}

const Json *
json_get(const Json *obj, const char *key, SrcLoc *keyloc)
{
	if (obj == NULL || obj->kind != JSON_OBJECT)
		return NULL;
	for (int i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0) {
			if (keyloc)
				*keyloc = obj->keylocs[i];
			return obj->items[i];
		}
	return NULL;
}
