/*
 * lang/diag.c: diagnostics in clang's format.
 *
 *     path:line:col: error: message
 *     <the source line>
 *     <caret line: ^ under loc.col, ~ under the rest of loc.len>
 *
 * The source line is printed with tabs expanded to 8-column stops and
 * control bytes shown as <XX>, and the caret line is computed with the same
 * widths, so the marker lines up whatever the terminal's tab setting
 * (chibicc's display_width).  UTF-8 continuation bytes take no column.
 * A line longer than SHOWN bytes is shown as a window of SHOWN bytes
 * around the caret, "..." where it was cut, as clang does: a cluster
 * file of one 1,000-byte line printed it whole, and a caret line as
 * long under it.
 * After d->max errors one "too many errors" line is printed and everything
 * after it is suppressed (but still counted).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/lang_int.h"

enum { TABSTOP = 8, SHOWN = 160, SHOWN_BEFORE = 60 };

#define C_BOLD "\033[1m"
#define C_RED "\033[1;31m"
#define C_MAGENTA "\033[1;35m"
#define C_CYAN "\033[1;36m"
#define C_GREEN "\033[1;32m"
#define C_RESET "\033[0m"

typedef enum { SEV_ERROR, SEV_WARNING, SEV_NOTE } Severity;

void
diag_init(Diag *d, FILE *out)
{
	memset(d, 0, sizeof *d);
	d->out = out;
	d->max = 20;
	d->color = out && isatty(fileno(out)) && !getenv("NO_COLOR");
}

/* Columns byte c takes when the line so far is col columns wide. */
static int
byte_width(unsigned char c, int col)
{
	if (c == '\t')
		return TABSTOP - col % TABSTOP;
	if (c < 0x20 || c == 0x7f)
		return 4; /* <XX> */
	if ((c & 0xc0) == 0x80)
		return 0; /* UTF-8 continuation */
	return 1;
}

static void
put_line(Diag *d, const char *p, const char *end)
{
	int col = 0;
	for (; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		int w = byte_width(c, col);
		if (c == '\t')
			fprintf(d->out, "%*s", w, "");
		else if (w == 4)
			fprintf(d->out, "<%02X>", c);
		else
			fputc(c, d->out);
		col += w;
	}
	fputc('\n', d->out);
}

static void
put_caret(Diag *d, const char *line, const char *end, SrcLoc loc)
{
	const char *p = line + (loc.col - 1);
	const char *stop = p + (loc.len ? loc.len : 1);
	if (stop > end)
		stop = end;
	int col = 0;
	for (const char *q = line; q < p && q < end; q++)
		col += byte_width((unsigned char)*q, col);
	fprintf(d->out, "%*s", col, "");
	if (d->color)
		fputs(C_GREEN, d->out);
	fputc('^', d->out);
	if (p < stop) {
		/* The rest of a wide first byte, then the rest of the range. */
		int w = byte_width((unsigned char)*p, col);
		col += w;
		p++;
		if (p < stop)
			for (int i = 1; i < w; i++)
				fputc('~', d->out);
	}
	for (; p < stop; p++) {
		int w = byte_width((unsigned char)*p, col);
		for (int i = 0; i < w; i++)
			fputc('~', d->out);
		col += w;
	}
	if (d->color)
		fputs(C_RESET, d->out);
	fputc('\n', d->out);
}

static void
put_source(Diag *d, SrcLoc loc)
{
	const SrcFile *f = loc.file;
	if (loc.col == 0 || loc.off > f->len || loc.col - 1 > loc.off)
		return;
	const char *line = f->text + (loc.off - (loc.col - 1));
	const char *end = line;
	const char *lim = f->text + f->len;
	while (end < lim && *end != '\n')
		end++;
	if (end > line && end[-1] == '\r')
		end--;
	if (end - line > SHOWN) {
		const char *from = line + (loc.col - 1), *to;
		int plain = 1;

		from = from - line > SHOWN_BEFORE ? from - SHOWN_BEFORE : line;
		while (from > line && from < end &&
		       ((unsigned char)*from & 0xc0) == 0x80)
			from++; /* not inside a UTF-8 character */
		to = end - from > SHOWN ? from + SHOWN : end;
		while (to < end && ((unsigned char)*to & 0xc0) == 0x80)
			to++;
		for (const char *q = from; q < to; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				plain = 0; /* tabs, <XX>: shown whole */
		if (plain) {
			SrcLoc at = loc;

			fputs(from > line ? "..." : "", d->out);
			fwrite(from, 1, (size_t)(to - from), d->out);
			fputs(to < end ? "...\n" : "\n", d->out);
			at.col = loc.col - (uint32_t)(from - line);
			fprintf(d->out, "%s", from > line ? "   " : "");
			put_caret(d, from, to, at);
			return;
		}
	}
	put_line(d, line, end);
	put_caret(d, line, end, loc);
}

static void
emit(Diag *d, Severity sev, SrcLoc loc, const char *fmt, va_list ap)
{
	static const char *const label[] = {"error", "warning", "note"};
	static const char *const color[] = {C_RED, C_MAGENTA, C_CYAN};
	if (sev == SEV_ERROR)
		d->nerr++;
	else if (sev == SEV_WARNING)
		d->nwarn++;
	if (d->capped || !d->out)
		return;
	if (sev == SEV_ERROR && d->max > 0 && d->nerr > d->max) {
		d->capped = 1;
		if (d->color)
			fputs(C_BOLD "tfgc: " C_RED "error: " C_RESET C_BOLD
			      "too many errors, stopping" C_RESET "\n", d->out);
		else
			fputs("tfgc: error: too many errors, stopping\n",
			      d->out);
		return;
	}
	if (d->color)
		fputs(C_BOLD, d->out);
	if (loc.file)
		fprintf(d->out, "%s:%u:%u: ", loc.file->path, loc.line,
			loc.col);
	else
		fputs("tfgc: ", d->out);
	if (d->color)
		fprintf(d->out, "%s%s:" C_RESET C_BOLD " ", color[sev],
			label[sev]);
	else
		fprintf(d->out, "%s: ", label[sev]);
	vfprintf(d->out, fmt, ap);
	if (d->color)
		fputs(C_RESET, d->out);
	fputc('\n', d->out);
	if (loc.file)
		put_source(d, loc);
}

void
diag_verror(Diag *d, SrcLoc loc, const char *fmt, va_list ap)
{
	emit(d, SEV_ERROR, loc, fmt, ap);
}

void
diag_error(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(d, SEV_ERROR, loc, fmt, ap);
	va_end(ap);
}

void
diag_warn(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(d, SEV_WARNING, loc, fmt, ap);
	va_end(ap);
}

void
diag_note(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(d, SEV_NOTE, loc, fmt, ap);
	va_end(ap);
}

char *
diag_where(Arena *a, SrcLoc loc)
{
	if (!loc.file)
		return arena_strdup(a, "tfgc");
	return arena_printf(a, "%s:%u:%u", loc.file->path, loc.line, loc.col);
}
