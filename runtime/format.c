/*
 * runtime/format.c: prints values the way NumPy's print() does.
 *
 * Scalars print as Python's repr of the NumPy scalar: the shortest digits
 * that round-trip at the dtype's precision (so float32 0.1 is "0.1"),
 * positional for 1e-4 <= |x| < 1e16, else "1e-05".  Arrays follow numpy
 * 1.24's array2string (numpy/core/arrayprint.py) with its defaults:
 * floatmode 'maxprec', precision 8, linewidth 75, threshold 1000,
 * edgeitems 3.  The port keeps numpy's structure so the two can be
 * compared line by line:
 *   - FloatingFormat.fillFormat -> fmt_float_fill: a first pass over the
 *     shown elements picks positional or scientific notation and the
 *     widths (pad_left, pad_right, precision, exponent digits);
 *   - _formatArray's recurser -> fmt_rec: nested brackets, one row per
 *     line, blank lines between blocks, wrapping of long rows with a
 *     hanging indent, and "..." for summarised axes.
 * Strings print as numpy's str arrays: a scalar is its text, array
 * elements are repr()s ('ab'), not padded.
 * Digits come from the C library: printf's "%.*e"/"%.*f" are exact
 * (glibc rounds the binary value correctly), and the shortest unique
 * digits are found by trying 1, 2, ... significant digits and reading
 * them back with strtod/strtof.  This matches numpy's Dragon4 except, in
 * theory, for decimal strings that fall exactly on a rounding boundary.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tfg.h"

#define FMT_PRECISION 8   /* numpy's default print precision */
#define FMT_LINEWIDTH 75  /* numpy's linewidth */
#define FMT_THRESHOLD 1000 /* arrays above this many elements summarise */
#define FMT_EDGE 3        /* edgeitems */

/* A growing string; on out-of-memory `oom` is set and output stops. */
typedef struct Sb {
	char *p;
	size_t len, cap;
	int oom;
} Sb;

static void
sb_putn(Sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (b->len + n + 1 > cap)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_puts(Sb *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void
sb_spaces(Sb *b, int n)
{
	for (int i = 0; i < n; i++)
		sb_putn(b, " ", 1);
}

/* ----------------------------------------------------------- strings */

/* Length of the UTF-8 sequence at s (n bytes left) and its code point,
 * or 0 when it is not valid UTF-8 (overlong, surrogate, cut short). */
static int
utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	int len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t c;

	if (len == 0 || (size_t)len > n || s[0] >= 0xf8)
		return 0;
	c = s[0] & (0x7f >> len);
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Python's str.isprintable for the characters it most often matters
 * for: the C1 controls, the Latin-1 and general-punctuation spaces and
 * format characters, separators, private use; the rest of Unicode counts
 * as printable (spec §8.7 "print"). */
static int
cp_printable(uint32_t c)
{
	return !(c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad ||
		 c == 0x61c || c == 0x1680 || c == 0x180e ||
		 (c >= 0x2000 && c <= 0x200f) ||
		 (c >= 0x2028 && c <= 0x202f) ||
		 (c >= 0x205f && c <= 0x206f) || c == 0x3000 ||
		 (c >= 0xe000 && c <= 0xf8ff) || c == 0xfeff ||
		 (c >= 0xfff9 && c <= 0xfffb) || c >= 0xf0000);
}

/* Python's repr() of the str s: quoted with ' (or " when s holds a ' and
 * no "), backslash escapes for the quote, \\, \t, \n, \r and
 * characters that are not printable.  A byte that is not UTF-8 (NumPy's
 * str cannot hold one) prints as \xNN too. */
static void
fmt_str_repr(Sb *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	char buf[16];

	sb_putn(b, &q, 1);
	for (size_t i = 0; i < n;) {
		uint32_t c = u[i];
		int len = c < 0x80 ? 1 : utf8_decode(u + i, n - i, &c);

		if (len == 0) { /* not UTF-8 */
			snprintf(buf, sizeof buf, "\\x%02x", u[i++]);
			sb_puts(b, buf);
			continue;
		}
		if (c == (uint32_t)q || c == '\\') {
			sb_puts(b, "\\");
			sb_putn(b, s + i, 1);
		} else if (c == '\t' || c == '\n' || c == '\r') {
			sb_puts(b, c == '\t' ? "\\t" : c == '\n' ? "\\n"
								: "\\r");
		} else if (cp_printable(c)) {
			sb_putn(b, s + i, (size_t)len);
		} else {
			snprintf(buf, sizeof buf, c < 0x100 ? "\\x%02x"
				 : c < 0x10000 ? "\\u%04x" : "\\U%08x",
				 (unsigned)c);
			sb_puts(b, buf);
		}
		i += (size_t)len;
	}
	sb_putn(b, &q, 1);
}

/* Element i of string tensor t as NumPy prints it in an array: 'ab'. */
static void
fmt_str_elem(Sb *b, const RtTensor *t, int64_t i)
{
	const char *s;
	size_t n;

	if (tfg_string_at(t->data, t->nbytes, i, &s, &n) < 0)
		sb_puts(b, "?"); /* fmt_any checked the records */
	else
		fmt_str_repr(b, s, n);
}

/* ------------------------------------------------------------ digits */

/* A decimal number: |x| = d[0].d[1..n-1] * 10^e, no trailing zeros. */
typedef struct Digits {
	char d[40];
	int n;
	int e;
} Digits;

/* Parses printf's "%.*e" output (of a non-negative value). */
static void
dig_parse_e(Digits *o, const char *s)
{
	o->n = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			o->d[o->n++] = *s;
	o->e = *s == 'e' ? atoi(s + 1) : 0;
	while (o->n > 1 && o->d[o->n - 1] == '0')
		o->n--;
	o->d[o->n] = '\0';
}

/* |x| rounded (exactly, half to even) to sig significant digits. */
static void
dig_round(Digits *o, double x, int sig)
{
	char buf[64];

	snprintf(buf, sizeof buf, "%.*e", sig - 1, fabs(x));
	dig_parse_e(o, buf);
}

static int
dig_roundtrips(const char *s, double x, int f32)
{
	if (f32)
		return strtof(s, NULL) == (float)x;
	return strtod(s, NULL) == x;
}

/* Adds delta (+1 or -1) to the last of the digits of s ("d.ddde+XX");
 * returns 0 when that would change the number of digits. */
static int
dig_step(char *s, int delta)
{
	char *q = strchr(s, 'e');

	while (--q >= s) {
		if (*q == '.')
			continue;
		if (delta > 0 && *q != '9') {
			(*q)++;
			return 1;
		}
		if (delta < 0 && *q != '0') {
			(*q)--;
			return q != s || *q != '0';
		}
		*q = delta > 0 ? '0' : '9';
	}
	return 0;
}

/* The shortest digits that read back as x at the dtype's precision
 * (Python's repr; numpy's unique Dragon4 mode).  x is finite. */
static void
dig_shortest(Digits *o, double x, int f32)
{
	char buf[64], alt[64];
	int max = f32 ? 9 : 17;

	x = fabs(x);
	if (x == 0) {
		strcpy(o->d, "0");
		o->n = 1;
		o->e = 0;
		return;
	}
	for (int sig = 1; sig < max; sig++) {
		snprintf(buf, sizeof buf, "%.*e", sig - 1, x);
		if (dig_roundtrips(buf, x, f32)) {
			dig_parse_e(o, buf);
			return;
		}
		/* At a power of two the interval that reads back is lopsided,
		 * so a neighbour of the nearest string may still work. */
		for (int delta = -1; delta <= 1; delta += 2) {
			strcpy(alt, buf);
			if (dig_step(alt, delta) &&
			    dig_roundtrips(alt, x, f32)) {
				dig_parse_e(o, alt);
				return;
			}
		}
	}
	snprintf(buf, sizeof buf, "%.*e", max - 1, x);
	dig_parse_e(o, buf);
}

/* Positional text of |x| from digits: "123.45", "0.001", "100." (frac
 * empty for integers).  ip, fp get the integer and fraction parts. */
static void
dig_positional(const Digits *g, char *ip, char *fp)
{
	int i, k = 0;

	if (g->e < 0) {
		strcpy(ip, "0");
		for (i = 0; i < -g->e - 1; i++)
			fp[k++] = '0';
		memcpy(fp + k, g->d, (size_t)g->n);
		fp[k + g->n] = '\0';
		return;
	}
	for (i = 0; i <= g->e; i++)
		ip[i] = i < g->n ? g->d[i] : '0';
	ip[i] = '\0';
	for (i = g->e + 1; i < g->n; i++)
		fp[k++] = g->d[i];
	fp[k] = '\0';
}

/* ----------------------------------------------------------- scalars */

static double
fmt_get_f(const RtTensor *t, int64_t i)
{
	if (t->dtype == TFG_F32)
		return ((const float *)t->data)[i];
	return ((const double *)t->data)[i];
}

static long long
fmt_get_i(const RtTensor *t, int64_t i)
{
	if (t->dtype == TFG_U8)
		return ((const uint8_t *)t->data)[i];
	if (t->dtype == TFG_I32)
		return ((const int32_t *)t->data)[i];
	return ((const int64_t *)t->data)[i];
}

static const char *
fmt_nonfinite(double x)
{
	return isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
}

/* Python's repr of a float, at the dtype's precision. */
static void
fmt_float_repr(Sb *b, double x, int f32)
{
	Digits g;
	char ip[400], fp[400], buf[16];
	double a = fabs(x);

	if (!isfinite(x)) {
		sb_puts(b, fmt_nonfinite(x));
		return;
	}
	if (signbit(x))
		sb_puts(b, "-");
	dig_shortest(&g, x, f32);
	if (a == 0 || (a >= 1e-4 && a < 1e16)) {
		dig_positional(&g, ip, fp);
		sb_puts(b, ip);
		sb_puts(b, ".");
		sb_puts(b, fp[0] ? fp : "0");
		return;
	}
	sb_putn(b, g.d, 1);
	if (g.n > 1) {
		sb_puts(b, ".");
		sb_puts(b, g.d + 1);
	}
	snprintf(buf, sizeof buf, "e%c%02d", g.e < 0 ? '-' : '+', abs(g.e));
	sb_puts(b, buf);
}

static void
fmt_scalar(Sb *b, const RtTensor *t)
{
	char buf[32];

	switch (t->dtype) {
	case TFG_BOOL:
		sb_puts(b, *(const unsigned char *)t->data ? "True" : "False");
		break;
	case TFG_U8:
	case TFG_I32:
	case TFG_I64:
		snprintf(buf, sizeof buf, "%lld", fmt_get_i(t, 0));
		sb_puts(b, buf);
		break;
	case TFG_F32:
	case TFG_F64:
		fmt_float_repr(b, fmt_get_f(t, 0), t->dtype == TFG_F32);
		break;
	case TFG_STRING: { /* its text, as print() of a str */
		const char *s;
		size_t n;

		if (tfg_string_at(t->data, t->nbytes, 0, &s, &n) == 0)
			sb_putn(b, s, n);
		break;
	}
	default:
		sb_puts(b, "?");
	}
}

/* ------------------------------------------------- element formats */

/* How every element of one array is printed (numpy's format_function). */
typedef struct Fmt {
	const RtTensor *t;
	int summarise;
	int64_t strides[TFG_MAX_RANK]; /* in elements */
	int int_width;                  /* ints: common width */
	int exp_format;                 /* floats: scientific */
	int pad_left, pad_right;        /* floats: around the point */
	int precision;                  /* floats, scientific: digits */
	int exp_size;                   /* floats, scientific: exp digits */
} Fmt;

/* Calls fn on the flat index of every element that is shown. */
static void
fmt_walk(const Fmt *f, int axis, int64_t base,
	 void (*fn)(void *, int64_t), void *arg)
{
	int64_t n;
	int show;

	if (axis == f->t->shape.rank) {
		fn(arg, base);
		return;
	}
	n = f->t->shape.dims[axis];
	show = f->summarise && 2 * FMT_EDGE < n;
	for (int64_t i = 0; i < n; i++) {
		if (show && i == FMT_EDGE)
			i = n - FMT_EDGE;
		fmt_walk(f, axis + 1, base + i * f->strides[axis], fn, arg);
	}
}

/* The first pass over the shown elements (numpy's fillFormat). */
typedef struct Stats {
	Fmt *f;          /* gets the widths in pass 1 */
	int64_t n;       /* elements seen */
	long long imin, imax;
	double amin, amax; /* |x| over finite non-zero x */
	int nnonzero;    /* finite non-zero values seen */
	int nonfinite, neginf;
	int nfinite;
	int pass;        /* 0: ranges; 1: widths */
} Stats;

static int
int_len(long long v)
{
	char buf[32];

	return snprintf(buf, sizeof buf, "%lld", v);
}

/* The text of finite x: integer part (with its sign) and fraction, as
 * numpy's dragon4 with precision 8, unique, trim '.'.  In scientific
 * notation these are the first pass's digits (they set the precision);
 * positional text is the same in both passes. */
static void
fmt_float_parts(const Fmt *f, double x, char *ip, char *fp, int *exp)
{
	int f32 = f->t->dtype == TFG_F32;
	Digits g;
	char buf[400], *dot;
	int k;

	dig_shortest(&g, x, f32);
	if (f->exp_format) {
		if (g.n > FMT_PRECISION + 1)
			dig_round(&g, x, FMT_PRECISION + 1);
		sprintf(ip, "%s%c", signbit(x) ? "-" : "", g.d[0]);
		strcpy(fp, g.d + 1);
		*exp = g.e;
		return;
	}
	/* numpy's min_digits=0: the exact integer digits, then as many
	 * fraction digits as the shortest repr has, at most precision */
	k = g.n - 1 - g.e;
	k = k < 0 ? 0 : k > FMT_PRECISION ? FMT_PRECISION : k;
	snprintf(buf, sizeof buf, "%.*f", k, fabs(x));
	if ((dot = strchr(buf, '.')) != NULL) {
		*dot = '\0';
		strcpy(fp, dot + 1);
	} else {
		fp[0] = '\0';
	}
	strcpy(ip, buf);
	for (k = (int)strlen(fp); k > 0 && fp[k - 1] == '0'; k--)
		fp[k - 1] = '\0';
	if (signbit(x)) {
		memmove(ip + 1, ip, strlen(ip) + 1);
		ip[0] = '-';
	}
	*exp = 0;
}

static void
stats_visit(void *arg, int64_t i)
{
	Stats *s = arg;
	Fmt *f = s->f;
	char ip[400], fp[400], buf[16];
	int exp, w;
	double x, a;

	if (f->t->dtype == TFG_U8 || f->t->dtype == TFG_I32 ||
	    f->t->dtype == TFG_I64) {
		long long v = fmt_get_i(f->t, i);

		if (s->n == 0 || v < s->imin)
			s->imin = v;
		if (s->n == 0 || v > s->imax)
			s->imax = v;
		s->n++;
		return;
	}
	x = fmt_get_f(f->t, i);
	if (!isfinite(x)) {
		s->nonfinite = 1;
		if (isinf(x) && x < 0)
			s->neginf = 1;
		return;
	}
	if (s->pass == 0) {
		a = fabs(x);
		if (a != 0) {
			if (s->nnonzero == 0 || a < s->amin)
				s->amin = a;
			if (s->nnonzero == 0 || a > s->amax)
				s->amax = a;
			s->nnonzero++;
		}
		s->nfinite++;
		return;
	}
	fmt_float_parts(f, x, ip, fp, &exp);
	if ((w = (int)strlen(ip)) > f->pad_left)
		f->pad_left = w;
	if ((w = (int)strlen(fp)) > f->pad_right)
		f->pad_right = w;
	if (f->exp_format) {
		w = snprintf(buf, sizeof buf, "%02d", abs(exp));
		if (w > f->exp_size)
			f->exp_size = w;
	}
}

/* numpy's FloatingFormat.fillFormat with floatmode 'maxprec'. */
static void
fmt_float_fill(Fmt *f, Stats *s)
{
	int offset;

	if (s->nnonzero > 0) {
		int big;

		if (f->t->dtype == TFG_F32) /* numpy divides in float32 */
			big = (float)s->amax / (float)s->amin > 1000.0f;
		else
			big = s->amax / s->amin > 1000.0;
		f->exp_format = s->amax >= 1e8 || s->amin < 0.0001 || big;
	}
	f->pad_left = f->pad_right = 0;
	f->exp_size = -1;
	if (s->nfinite > 0) {
		s->pass = 1;
		f->exp_size = 0;
		fmt_walk(f, 0, 0, stats_visit, s);
		if (f->exp_format) {
			f->precision = f->pad_right;
			f->pad_right = f->exp_size + 2 + f->precision;
		}
	}
	if (s->nonfinite) {
		offset = f->pad_right + 1;
		if (3 - offset > f->pad_left)
			f->pad_left = 3 - offset;
		if (3 + s->neginf - offset > f->pad_left)
			f->pad_left = 3 + s->neginf - offset;
	}
}

/* Element text as numpy's format_function returns it. */
static void
fmt_elem(Sb *b, const Fmt *f, int64_t i)
{
	char ip[400], fp[400], buf[512];
	double x;
	int exp, k;

	switch (f->t->dtype) {
	case TFG_BOOL:
		sb_puts(b, ((const unsigned char *)f->t->data)[i] ? " True"
								 : "False");
		return;
	case TFG_STRING: /* no padding: numpy's repr formatter */
		fmt_str_elem(b, f->t, i);
		return;
	case TFG_U8:
	case TFG_I32:
	case TFG_I64:
		snprintf(buf, sizeof buf, "%*lld", f->int_width,
			 fmt_get_i(f->t, i));
		sb_puts(b, buf);
		return;
	default:
		break;
	}
	x = fmt_get_f(f->t, i);
	if (!isfinite(x)) {
		const char *s = fmt_nonfinite(x);

		sb_spaces(b, f->pad_left + f->pad_right + 1 - (int)strlen(s));
		sb_puts(b, s);
		return;
	}
	if (f->exp_format) {
		/* unique with min_digits = precision: the exact value's
		 * digits, rounded to precision + 1 significant digits */
		snprintf(buf, sizeof buf, "%.*e", f->precision, fabs(x));
		sb_spaces(b, f->pad_left - 1 - (signbit(x) ? 1 : 0));
		if (signbit(x))
			sb_puts(b, "-");
		sb_putn(b, buf, 1);
		sb_puts(b, ".");
		if (f->precision > 0)
			sb_putn(b, buf + 2, (size_t)f->precision);
		exp = atoi(strchr(buf, 'e') + 1);
		snprintf(buf, sizeof buf, "e%c%0*d", exp < 0 ? '-' : '+',
			 f->exp_size, abs(exp));
		sb_puts(b, buf);
		return;
	}
	fmt_float_parts(f, x, ip, fp, &exp);
	sb_spaces(b, f->pad_left - (int)strlen(ip));
	sb_puts(b, ip);
	sb_puts(b, ".");
	sb_puts(b, fp);
	k = f->pad_right - (int)strlen(fp);
	sb_spaces(b, k);
}

/* ------------------------------------------------------------ layout */

/* Removes trailing spaces (Python's line.rstrip()). */
static void
sb_rstrip(Sb *b)
{
	while (!b->oom && b->len > 0 && b->p[b->len - 1] == ' ')
		b->p[--b->len] = '\0';
}

/* numpy's _extendLine: appends word, first wrapping the line when it
 * would pass width (unless the line holds nothing but the indent).
 * Widths count characters, as Python's len(): UTF-8 continuation bytes
 * count for nothing. */
static void
fmt_extend(Sb *b, int *line, const char *word, size_t wlen, int width,
	   int indent)
{
	int cols = 0;

	for (size_t i = 0; i < wlen; i++)
		cols += ((unsigned char)word[i] & 0xc0) != 0x80;
	if (*line + cols > width && *line > indent) {
		sb_rstrip(b);
		sb_puts(b, "\n");
		sb_spaces(b, indent);
		*line = indent;
	}
	sb_putn(b, word, wlen);
	*line += cols;
}

/* numpy's recurser: the sub-array at `base` from `axis` on; its '[' is
 * at column indent - 1 and its rows are `width` columns wide. */
static void
fmt_rec(Sb *b, const Fmt *f, int axis, int64_t base, int indent, int width)
{
	int rank = f->t->shape.rank, left = rank - axis;
	int64_t n = f->t->shape.dims[axis];
	int show = f->summarise && 2 * FMT_EDGE < n;

	sb_puts(b, "[");
	if (left == 1) {
		int line = indent, elem_width = width - 1;
		Sb w = {0};

		for (int64_t i = 0; i < n; i++) {
			if (show && i == FMT_EDGE) {
				fmt_extend(b, &line, "...", 3, elem_width,
					   indent);
				sb_puts(b, " ");
				line++;
				i = n - FMT_EDGE;
			}
			w.len = 0;
			fmt_elem(&w, f, base + i * f->strides[axis]);
			if (w.oom) {
				b->oom = 1;
				break;
			}
			fmt_extend(b, &line, w.p, w.len, elem_width, indent);
			if (i + 1 < n) {
				sb_puts(b, " ");
				line++;
			}
		}
		free(w.p);
	} else {
		for (int64_t i = 0; i < n; i++) {
			if (show && i == FMT_EDGE) {
				sb_puts(b, "...");
				for (int k = 0; k < left - 1; k++)
					sb_puts(b, "\n");
				sb_spaces(b, indent);
				i = n - FMT_EDGE;
			}
			fmt_rec(b, f, axis + 1, base + i * f->strides[axis],
				indent + 1, width - 1);
			if (i + 1 < n) {
				for (int k = 0; k < left - 1; k++)
					sb_puts(b, "\n");
				sb_spaces(b, indent);
			}
		}
	}
	sb_puts(b, "]");
}

static void
fmt_array(Sb *b, const RtTensor *t)
{
	Fmt f = {0};
	Stats s = {0};
	int64_t numel = tfg_shape_numel(&t->shape), st = 1;

	if (numel == 0) {
		sb_puts(b, "[]");
		return;
	}
	f.t = t;
	f.summarise = numel > FMT_THRESHOLD;
	for (int i = t->shape.rank - 1; i >= 0; i--) {
		f.strides[i] = st;
		st *= t->shape.dims[i];
	}
	s.f = &f;
	if (t->dtype != TFG_BOOL && t->dtype != TFG_STRING)
		fmt_walk(&f, 0, 0, stats_visit, &s);
	if (t->dtype == TFG_U8 || t->dtype == TFG_I32 ||
	    t->dtype == TFG_I64) {
		int a = int_len(s.imin), c = int_len(s.imax);

		f.int_width = a > c ? a : c;
	} else if (t->dtype == TFG_F32 || t->dtype == TFG_F64) {
		fmt_float_fill(&f, &s);
	}
	fmt_rec(b, &f, 0, 0, 1, FMT_LINEWIDTH);
}

static void
fmt_any(Sb *b, const RtTensor *t)
{
	if ((int)t->dtype < 0 || t->dtype >= TFG__NDTYPE || t->shape.rank < 0 ||
	    t->shape.rank > TFG_MAX_RANK) {
		sb_puts(b, "<invalid tensor>");
		return;
	}
	if (t->dtype == TFG_STRING &&
	    tfg_string_check(t->data, t->nbytes, tfg_shape_numel(&t->shape))) {
		sb_puts(b, "<invalid string tensor>");
		return;
	}
	if (t->shape.rank == 0)
		fmt_scalar(b, t);
	else
		fmt_array(b, t);
}

TFG_API char *
rt_format_str(const RtTensor *t)
{
	Sb b = {0};

	fmt_any(&b, t);
	sb_putn(&b, "", 0);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

TFG_API void
rt_format(FILE *f, const RtTensor *t)
{
	char *s = rt_format_str(t);

	if (s == NULL) {
		fputs("<out of memory>", f);
		return;
	}
	fputs(s, f);
	free(s);
}

/* ------------------------------------------- format() and '%' of a session */

/* One directive, Python's: printf-style ("%-8.3f") or a format spec
 * ("<8.3f"), both read into this (spec §8.5 "Session expressions"). */
typedef struct Directive {
	char fill, align; /* align: '<', '>', '^', '=' (after the sign), or
			     0: the kind's default */
	char sign;        /* '+', ' ', or 0 */
	int alt;          /* '#' */
	int width, prec;  /* -1: none */
	char type;        /* d i o x X e E f F g G s r %, or 0 (format():
			     as print() shows it) */
} Directive;

#define DIR_TYPES "dioxXeEfFgGsr%"

static int
dir_digits(const char **p)
{
	long v = 0;

	if (**p < '0' || **p > '9')
		return -1;
	while (**p >= '0' && **p <= '9') {
		v = v * 10 + (**p - '0');
		if (v > 1000)
			v = 1001; /* refused by the caller */
		(*p)++;
	}
	return (int)v;
}

/* Reads the printf-style directive after a '%' at *p (advanced past
 * it); 0, or -1 with why. */
static int
dir_printf(const char **p, Directive *d, char *why, size_t n)
{
	const char *s = *p;

	memset(d, 0, sizeof *d);
	d->fill = ' ', d->width = d->prec = -1;
	for (;; s++) {
		if (*s == '-')
			d->align = '<';
		else if (*s == '+')
			d->sign = '+';
		else if (*s == ' ' && d->sign != '+')
			d->sign = ' ';
		else if (*s == ' ')
			;
		else if (*s == '0')
			d->fill = '0';
		else if (*s == '#')
			d->alt = 1;
		else
			break;
	}
	d->width = dir_digits(&s);
	if (*s == '.') {
		s++;
		if ((d->prec = dir_digits(&s)) < 0)
			d->prec = 0;
	}
	if (*s == '\0' || !strchr(DIR_TYPES, *s)) {
		snprintf(why, n, "%s conversion%s%c%s (supported: %%d %%i %%o "
			 "%%x %%X %%e %%E %%f %%F %%g %%G %%s %%r %%%%, with "
			 "flags - + space 0 #, a width and a .precision)",
			 *s ? "unknown" : "a directive without its",
			 *s ? " '" : "", *s ? *s : ' ', *s ? "'" : "");
		return -1;
	}
	if (d->width > 1000 || d->prec > 1000) {
		snprintf(why, n, "a width or precision over 1000");
		return -1;
	}
	d->type = *s == 'i' ? 'd' : *s;
	if (d->fill == '0' && d->align == '<')
		d->fill = ' ';
	*p = s + 1;
	return 0;
}

/* Reads a format spec, all of s; 0, or -1 with why. */
static int
dir_spec(const char *s, Directive *d, char *why, size_t n)
{
	memset(d, 0, sizeof *d);
	d->fill = ' ', d->width = d->prec = -1;
	if (s[0] && s[1] && strchr("<>^=", s[1])) {
		d->fill = s[0], d->align = s[1], s += 2;
	} else if (s[0] && strchr("<>^=", s[0])) {
		d->align = s[0], s++;
	}
	if (*s == '+' || *s == '-' || *s == ' ')
		d->sign = *s == '-' ? 0 : *s, s++;
	if (*s == '#')
		d->alt = 1, s++;
	if (*s == '0' && !d->align)
		d->fill = '0', d->align = '=', s++;
	if (*s >= '0' && *s <= '9')
		d->width = dir_digits(&s);
	if (*s == '.') {
		s++;
		if ((d->prec = dir_digits(&s)) < 0) {
			snprintf(why, n, "'.' without a precision after it");
			return -1;
		}
	}
	if (*s && strchr("dxXoeEfFgGs%", *s) && s[1] == '\0')
		d->type = *s;
	else if (*s) {
		snprintf(why, n, "'%s' is not understood here (supported: "
			 "[[fill]align][sign][#][0][width][.precision][type], "
			 "align one of < > ^ =, type one of d x X o e E f F g G "
			 "s %%)", s);
		return -1;
	}
	if (d->width > 1000 || d->prec > 1000) {
		snprintf(why, n, "a width or precision over 1000");
		return -1;
	}
	return 0;
}

/* The value, one of: a tensor (t) or a string (str). */
static int
val_is_str(const RtTensor *t, const char *str)
{
	return str || (t && t->dtype == TFG_STRING && t->shape.rank == 0);
}

/* Appends d applied to the value, or -1 with why. */
static int
dir_apply(Sb *b, const Directive *d, const RtTensor *t, const char *str,
	  int printf_style, char *why, size_t n)
{
	char body[1200], num[1100], cf[16];
	const char *sign = "";
	char *own = NULL;
	int isnum = !val_is_str(t, str) && t && t->shape.rank == 0,
	    isint = isnum && t->dtype != TFG_F32 && t->dtype != TFG_F64,
	    prec = d->prec;
	size_t blen, pad;
	char align = d->align;

	if (d->type == 0 || d->type == 's' || d->type == 'r') {
		const char *text = str;

		if (!str && t && d->type == 0 && d->prec >= 0 && isnum &&
		    !isint)
			goto number; /* format(x, ".3"): 'g' */
		if (!str)
			text = own = t ? rt_format_str(t) : NULL;
		if (text == NULL) {
			snprintf(why, n, "out of memory");
			return -1;
		}
		blen = strlen(text);
		if (d->prec >= 0 && (size_t)d->prec < blen)
			blen = (size_t)d->prec;
		if (blen >= sizeof body)
			blen = sizeof body - 1;
		memcpy(body, text, blen);
		body[blen] = '\0';
		free(own);
		if (!align)
			align = printf_style || !isnum ? (printf_style ? '>' :
							  '<') : '>';
		goto pad;
	}
number:
	if (!isnum) {
		snprintf(why, n, "'%c' formats a number, not %s", d->type ? d->type
			 : 'g', val_is_str(t, str) ? "a string" : "a tensor of "
			 "rank 1 or more");
		return -1;
	}
	{
		double x = isint ? (double)fmt_get_i(t, 0) : fmt_get_f(t, 0);
		long long v = isint ? fmt_get_i(t, 0) : 0;
		char type = d->type ? d->type : 'g';

		if (t->dtype == TFG_BOOL)
			x = v = *(const unsigned char *)t->data != 0;
		if (strchr("dxXo", type)) {
			unsigned long long u;

			if (!isint && !printf_style) {
				snprintf(why, n, "'%c' formats an integer, not a "
					 "float (use '.0f', or \"%%d\" %% x, "
					 "which truncates it)", type);
				return -1;
			}
			if (!isint) {
				if (!isfinite(x) || fabs(x) >= 9.2e18) {
					snprintf(why, n, "%g has no integer value",
						 x);
					return -1;
				}
				v = (long long)x; /* Python truncates */
			}
			u = v < 0 ? 0ull - (unsigned long long)v
				  : (unsigned long long)v;
			snprintf(num, sizeof num, type == 'd' ? "%llu" :
				 type == 'o' ? "%llo" : type == 'x' ? "%llx" :
				 "%llX", u);
			sign = v < 0 ? "-" : d->sign == '+' ? "+" :
			       d->sign == ' ' ? " " : "";
			if (d->alt && type != 'd')
				sign = v < 0 ? (type == 'o' ? "-0o" : type ==
						'x' ? "-0x" : "-0X")
				     : (type == 'o' ? "0o" : type == 'x' ? "0x"
							      : "0X");
		} else {
			double y = type == '%' ? x * 100 : x;

			if (prec < 0)
				prec = 6;
			snprintf(cf, sizeof cf, "%%%s.*%c", d->alt ? "#" : "",
				 type == '%' ? 'f' : type);
			snprintf(num, sizeof num, cf, prec, fabs(y));
			if (isnan(y))
				snprintf(num, sizeof num, "%s",
					 strchr("EFG", type) ? "NAN" : "nan");
			if (type == '%')
				strcat(num, "%");
			sign = signbit(y) && !isnan(y) ? "-" : d->sign == '+' ?
			       "+" : d->sign == ' ' ? " " : "";
		}
		if (!align)
			align = d->fill == '0' ? '=' : '>';
		if (align == '=') {
			size_t w = strlen(sign) + strlen(num);

			sb_puts(b, sign);
			for (pad = w; d->width > 0 && pad < (size_t)d->width;
			     pad++)
				sb_putn(b, &d->fill, 1);
			sb_puts(b, num);
			return 0;
		}
		snprintf(body, sizeof body, "%s%s", sign, num);
	}
pad:
	blen = strlen(body);
	pad = d->width > 0 && (size_t)d->width > blen
		      ? (size_t)d->width - blen : 0;
	for (size_t i = 0; i < (align == '<' ? 0 : align == '^' ? pad / 2
						  : pad); i++)
		sb_putn(b, &d->fill, 1);
	sb_puts(b, body);
	for (size_t i = 0; i < (align == '<' ? pad : align == '^' ?
				pad - pad / 2 : 0); i++)
		sb_putn(b, &d->fill, 1);
	return 0;
}

/* The directives of printf-style fmt that take a value ("%%" takes
 * none): their count, or -1 with why. */
static int
printf_walk(const char *fmt, Sb *b, const RtTensor *t, const char *str,
	    char *why, size_t n)
{
	int count = 0;

	for (const char *p = fmt; *p;) {
		const char *q = strchr(p, '%');
		Directive d;

		if (q == NULL) {
			if (b)
				sb_puts(b, p);
			break;
		}
		if (b)
			sb_putn(b, p, (size_t)(q - p));
		if (q[1] == '%') {
			if (b)
				sb_puts(b, "%");
			p = q + 2;
			continue;
		}
		p = q + 1;
		if (dir_printf(&p, &d, why, n) < 0)
			return -1;
		if (d.type == '%') {
			snprintf(why, n, "'%%%%' is a percent sign; a directive "
				 "ends with its conversion");
			return -1;
		}
		if (++count == 1 && b &&
		    dir_apply(b, &d, t, str, 1, why, n) < 0)
			return -1;
	}
	if (count != 1) {
		snprintf(why, n, count == 0 ? "it has no directive for the "
			 "value (%%d, %%.3f, %%s, ...)" : "it has %d directives, "
			 "and '%%' of a session formats one value (join the "
			 "pieces with +)", count);
		return -1;
	}
	return count;
}

TFG_API int
tfg_format_check(const char *fmt, int printf_style, char *why, size_t n)
{
	Directive d;

	return printf_style ? (printf_walk(fmt, NULL, NULL, NULL, why, n) < 0
			       ? -1 : 0)
			    : dir_spec(fmt, &d, why, n);
}

TFG_API char *
tfg_format_value(const char *fmt, int printf_style, const RtTensor *t,
		 const char *str, char *why, size_t n)
{
	Sb b = {0};
	Directive d;
	int rc;

	if (t && (t->dtype == TFG_STRING &&
		  tfg_string_check(t->data, t->nbytes,
				   tfg_shape_numel(&t->shape)))) {
		snprintf(why, n, "an invalid string tensor");
		return NULL;
	}
	rc = printf_style ? printf_walk(fmt, &b, t, str, why, n)
			  : dir_spec(fmt, &d, why, n) < 0 ? -1
			  : dir_apply(&b, &d, t, str, 0, why, n);
	sb_putn(&b, "", 0);
	if (rc < 0 || b.oom) {
		if (rc >= 0)
			snprintf(why, n, "out of memory");
		free(b.p);
		return NULL;
	}
	return b.p;
}
