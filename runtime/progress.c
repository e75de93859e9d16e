/*
 * runtime/progress.c: progress() and record() (spec §8.13 "progress",
 * §8.14 "record"; spec/design.md "Progress and curves").
 *
 * Two sides of one record, RtProgress.  The client's (client.c calls
 * it): the loops it is in (RtTrack), what a progress() call makes of
 * them, and the PROGRESS message's body, one line of text.  The
 * controller's (launch.c calls it): RtBars, which decides how to show
 * the records, a bar per session redrawn at the bottom of a terminal
 * or plain lines now and then, and computes the rates and times left
 * from the records' own clock (the client's), so that they do not
 * depend on when messages arrive.  The CSV files of record() are the
 * client's too.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "runtime/role.h"

#define BAR_WIDTH 20
#define DRAW_SECS 0.1     /* a terminal's lines at most this often */
#define PLAIN_EVERY 5.0   /* --progress-every's default */
#define WINDOW_SECS 10.0  /* rates over about this much of the past */
#define SAMPLE_SECS 0.25  /* samples at least this far apart */
#define NSAMPLE 64        /* > WINDOW_SECS / SAMPLE_SECS */

/* ------------------------------------------------------ the client's */

void
rt_track_push(RtTrack *tr, int64_t count, int64_t rows)
{
	if (tr->depth < RT_LOOP_MAX)
		tr->loops[tr->depth] = (RtLoop){0, count, rows};
	tr->depth++;
}

void
rt_track_at(RtTrack *tr, int64_t pos, int64_t rows)
{
	if (tr->depth > 0 && tr->depth <= RT_LOOP_MAX) {
		tr->loops[tr->depth - 1].pos = pos;
		tr->loops[tr->depth - 1].rows = rows;
	}
}

void
rt_track_pop(RtTrack *tr)
{
	tr->depth--;
}

/* A number for people: an integer as it is; a float with four
 * decimals, or in scientific notation when tiny or huge. */
static void
number_str(char *buf, size_t n, double v, int integer)
{
	if (integer)
		snprintf(buf, n, "%lld", (long long)v);
	else if (isnan(v))
		snprintf(buf, n, "nan");
	else if (isinf(v))
		snprintf(buf, n, "%sinf", v < 0 ? "-" : "");
	else if (v == 0 || (fabs(v) >= 1e-3 && fabs(v) < 1e6))
		snprintf(buf, n, "%.4f", v);
	else
		snprintf(buf, n, "%.3e", v);
}

void
rt_track_call(RtTrack *tr, RtProgress *pr, int64_t step, int nval,
	      const char *const *names, const double *vals,
	      const int *integer)
{
	int d = tr->depth < RT_LOOP_MAX ? tr->depth : RT_LOOP_MAX;
	double f = 1;
	size_t len = 0;

	tr->calls++;
	memset(pr, 0, sizeof *pr);
	pr->step = step >= 0 ? step : tr->calls;
	pr->frac = d > 0 ? 0 : -1;
	for (int i = d - 1; i >= 0; i--)
		if (tr->loops[i].count > 0)
			f = pr->frac = (tr->loops[i].pos + f) /
				       (double)tr->loops[i].count;
	if (d >= 2)
		pr->epoch = tr->loops[0].pos + 1, pr->nepoch = tr->loops[0].count;
	pr->examples = -1;
	for (int i = d - 1; i >= 0; i--)
		if (tr->loops[i].rows >= 0) {
			tr->examples += tr->loops[i].rows;
			pr->examples = tr->examples;
			break;
		}
	for (int i = 0; i < nval; i++) {
		char num[64];
		int k;

		number_str(num, sizeof num, vals[i], integer[i]);
		k = snprintf(pr->values + len, sizeof pr->values - len, "%s%s %s",
			     i ? "  " : "", names[i], num);
		if (k < 0 || (size_t)k >= sizeof pr->values - len)
			break; /* what does not fit is left out */
		len += (size_t)k;
	}
}

size_t
rt_progress_encode(char *buf, size_t n, const RtProgress *pr)
{
	int k = snprintf(buf, n, "%d %.6f %.9g %lld %lld %lld %lld %s",
			 pr->end, pr->t, pr->frac, (long long)pr->epoch,
			 (long long)pr->nepoch, (long long)pr->step,
			 (long long)pr->examples, pr->values);

	return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}

int
rt_progress_decode(RtProgress *pr, const unsigned char *body, size_t n)
{
	char s[RT_PROGRESS_MAX + 1];
	long long e, ne, st, ex;
	int used = -1;

	memset(pr, 0, sizeof *pr);
	if (n > RT_PROGRESS_MAX)
		return -1;
	memcpy(s, body, n);
	s[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
			return -1; /* text to show: no control bytes */
	if (sscanf(s, "%d %lf %lf %lld %lld %lld %lld %n", &pr->end, &pr->t,
		   &pr->frac, &e, &ne, &st, &ex, &used) != 7 || used < 0 ||
	    pr->end < 0 || pr->end > 2 || !(pr->frac <= 1) || !isfinite(pr->t))
		return -1;
	pr->epoch = e, pr->nepoch = ne, pr->step = st, pr->examples = ex;
	snprintf(pr->values, sizeof pr->values, "%s", s + used);
	return 0;
}

/* --------------------------------------------------------- CSV files */

tfg_status
rt_csv_row(FILE **fp, const RtCsv *f, char *const *cells, double t,
	   TfgError *e)
{
	FILE *out = *fp;
	int bad = 0;

	if (!out) {
		if (!(out = fopen(f->path, "w")))
			return tfg_error(e, TFG_EIO, "cannot write %s: %s",
					 f->path, strerror(errno));
		*fp = out;
		for (int i = 0; i < f->ncol; i++)
			bad |= fprintf(out, "%s%s", i ? "," : "",
				       f->cols[i]) < 0;
		bad |= fputc('\n', out) == EOF;
	}
	for (int i = 0; i < f->ncol; i++) {
		if (i)
			bad |= fputc(',', out) == EOF;
		if (i == f->time)
			bad |= fprintf(out, "%.3f", t) < 0;
		else if (cells[i])
			bad |= fputs(cells[i], out) == EOF;
	}
	bad |= fputc('\n', out) == EOF;
	if (fflush(out) != 0 || bad)
		return tfg_error(e, TFG_EIO, "cannot write %s: %s", f->path,
				 strerror(errno ? errno : EIO));
	return TFG_OK;
}

/* ------------------------------------------------- the controller's */

typedef struct Sample {
	double t, frac;
	int64_t examples;
} Sample;

/* One session's line. */
typedef struct Bar {
	int live;           /* has a record, and has not ended */
	RtProgress last;
	Sample ring[NSAMPLE];
	int nring, head;    /* samples kept; the next slot */
	Sample first;       /* its first record's */
	double plain_at;    /* t of its last plain line */
	int64_t plain_step; /* and its step; -1 none */
	double plain_frac;
	int dirty;          /* a record not drawn yet */
} Bar;

struct RtBars {
	const TfgPlan *plan;
	int mode;           /* 0 off, 1 a terminal, 2 plain lines */
	double every;       /* plain lines' seconds; 0: ends only */
	Bar *bars;          /* [plan->nsession] */
	int drawn;          /* lines on the terminal now (mode 1) */
	double drawn_at;    /* rt_now() of the last drawing */
};

/* Whether the bars end the terminal's last line: a process stopped by a
 * signal then ends it, so that the shell's prompt starts a line of its
 * own (rt_bars_signal). */
static volatile sig_atomic_t onscreen;

void
rt_bars_signal(void)
{
	if (onscreen && write(1, "\n", 1) < 0) {
		/* nothing to be done in a handler */
	}
	onscreen = 0;
}

/* SIGINT or SIGTERM where nothing else handles them: the line ended,
 * then the signal's own default. */
static void
on_signal(int sig)
{
	rt_bars_signal();
	signal(sig, SIG_DFL);
	raise(sig);
}

RtBars *
rt_bars_new(const TfgPlan *plan, const TfgOptions *opt)
{
	RtBars *b = calloc(1, sizeof *b);
	const char *term = getenv("TERM");

	if (!b || !(b->bars = calloc((size_t)plan->nsession + 1,
				     sizeof *b->bars))) {
		free(b);
		return NULL;
	}
	b->plan = plan;
	b->every = opt->progress_every < 0 ? PLAIN_EVERY : opt->progress_every;
	b->mode = opt->no_progress ? 0 :
		  isatty(1) && !(term && strcmp(term, "dumb") == 0) ? 1 : 2;
	for (int i = 0; i < plan->nsession; i++)
		b->bars[i].plain_step = -1;
	if (b->mode == 1) {
		static const int sigs[] = {SIGINT, SIGTERM};

		for (int i = 0; i < 2; i++) {
			struct sigaction sa;

			if (sigaction(sigs[i], NULL, &sa) == 0 &&
			    sa.sa_handler == SIG_DFL) {
				memset(&sa, 0, sizeof sa);
				sa.sa_handler = on_signal;
				sigemptyset(&sa.sa_mask);
				sigaction(sigs[i], &sa, NULL);
			}
		}
	}
	return b;
}

/* "1:05", "1:02:03" */
static void
clock_str(char *buf, size_t n, double secs)
{
	long s = secs > 0 && secs < 1e9 ? (long)(secs + 0.5) : 0;

	if (s >= 3600)
		snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
			 s % 60);
	else
		snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
}

/* "12,345" */
static void
grouped(char *buf, size_t n, double v)
{
	char d[32];
	int len = snprintf(d, sizeof d, "%.0f", v), k = 0;

	for (int i = 0; i < len && (size_t)k + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = d[i];
	}
	buf[k] = '\0';
}

/* The rates of bar r over its window: examples and fraction a second;
 * 0 when not known yet. */
static void
rates(const Bar *r, double *xs, double *fs)
{
	const Sample *old = &r->first;
	double now = r->last.t, dt;

	for (int i = 0; i < r->nring; i++) {
		const Sample *s = &r->ring[(r->head - 1 - i + NSAMPLE) % NSAMPLE];

		if (now - s->t > WINDOW_SECS)
			break;
		old = s;
	}
	if (now - old->t < 1.0) /* too little of a window: since the start */
		old = &r->first;
	*xs = *fs = 0;
	if ((dt = now - old->t) < 0.2)
		return;
	if (r->last.examples >= 0 && old->examples >= 0)
		*xs = (double)(r->last.examples - old->examples) / dt;
	*fs = (r->last.frac - old->frac) / dt;
}

size_t
rt_progress_fit(char *buf, size_t n, const char *const *field,
		const int *prio, const int *gap, int nfield, int width)
{
	int keep[RT_PROGRESS_FIELDS];
	size_t need, len = 0;

	if (nfield > RT_PROGRESS_FIELDS)
		nfield = RT_PROGRESS_FIELDS;
	for (int i = 0; i < nfield; i++)
		keep[i] = field[i] && field[i][0];
	for (;;) {
		int low = -1;

		need = 0;
		for (int i = 0; i < nfield; i++)
			if (keep[i])
				need += (need ? (size_t)gap[i] : 0) +
					strlen(field[i]);
		/* the last column stays free: a line that fills it wraps
		   on some terminals, and could not be redrawn */
		if (width <= 1 || need < (size_t)width)
			break;
		for (int i = 0; i < nfield; i++)
			if (keep[i] && prio[i] > 0 &&
			    (low < 0 || prio[i] < prio[low]))
				low = i;
		if (low < 0)
			break; /* what must stay: cut below */
		keep[low] = 0;
	}
	buf[0] = '\0';
	for (int i = 0; i < nfield && len + 1 < n; i++)
		if (keep[i])
			len += (size_t)snprintf(buf + len, n - len, "%*s%s",
						len ? gap[i] : 0, "", field[i]);
	if (len >= n)
		len = n - 1;
	if (width > 1 && len >= (size_t)width)
		buf[len = (size_t)width - 1] = '\0';
	return len;
}

/* The line of session i into buf (at most n bytes); plain: a log's,
 * every field, else a terminal's, whose fields go by priority until it
 * fits in width columns (rt_progress_fit): the bar first, then the
 * epoch, then the rates, never a number cut in two. */
static void
line_of(const RtBars *b, int i, char *buf, size_t n, int width, int plain)
{
	const Bar *r = &b->bars[i];
	const RtProgress *p = &r->last;
	const char *label = b->plan->sessions[i].label;
	double xs, fs;
	char f[RT_PROGRESS_FIELDS][RT_PROGRESS_MAX + 64], t[32], num[48];
	const char *field[RT_PROGRESS_FIELDS];
	int prio[RT_PROGRESS_FIELDS], gap[RT_PROGRESS_FIELDS], k = 0;

	/* field k: its text, priority (0: always shown) and the spaces
	   before it (a log's line has two before each) */
#define FIELD(pr, sp, ...)                                              \
	do {                                                            \
		snprintf(f[k], sizeof f[k], __VA_ARGS__);               \
		field[k] = f[k], prio[k] = (pr);                        \
		gap[k] = plain && k > 0 ? 2 : (sp);                     \
		k++;                                                    \
	} while (0)
	rates(r, &xs, &fs);
	if (label)
		FIELD(RT_FIT_KEEP, 1, "[%s]", label);
	if (p->nepoch > 0)
		FIELD(RT_FIT_EPOCH, 1, "epoch %lld/%lld", (long long)p->epoch,
		      (long long)p->nepoch);
	if (p->frac >= 0) {
		int pct = (int)floor(p->frac * 100 + 1e-9);

		if (!plain) {
			int full = (int)floor(p->frac * BAR_WIDTH + 1e-9);
			char bar[BAR_WIDTH + 3];

			bar[0] = '[';
			for (int j = 0; j < BAR_WIDTH; j++)
				bar[1 + j] = j < full ? '=' : j == full ? '>'
								      : '.';
			bar[BAR_WIDTH + 1] = ']';
			bar[BAR_WIDTH + 2] = '\0';
			FIELD(RT_FIT_BAR, 1, "%s", bar);
		}
		FIELD(RT_FIT_KEEP, 1, plain ? "%d%%" : "%3d%%", pct);
	}
	FIELD(RT_FIT_KEEP, 2, "step %lld", (long long)p->step);
	if (p->values[0])
		FIELD(RT_FIT_VALUES, 2, "%s", p->values);
	if (xs > 0) {
		grouped(num, sizeof num, xs);
		FIELD(RT_FIT_RATE, 2, "%s ex/s", num);
	}
	if (plain) {
		clock_str(t, sizeof t, p->t);
		FIELD(RT_FIT_KEEP, 2, "elapsed %s", t);
	}
	if (p->end == 2) {
		if (!plain) {
			clock_str(t, sizeof t, p->t);
			FIELD(RT_FIT_ETA, 2, "time %s", t);
		}
	} else if (p->frac >= 0 && p->frac < 1 && fs > 0) {
		clock_str(t, sizeof t, (1 - p->frac) / fs);
		FIELD(RT_FIT_ETA, 2, "ETA %s", t);
	}
#undef FIELD
	if (label && k > 1)
		gap[1] = 1;
	rt_progress_fit(buf, n, field, prio, gap, k, plain ? 0 : width);
}

static int
term_width(void)
{
	struct winsize ws;

	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

void
rt_bars_hide(RtBars *b)
{
	if (!b || b->mode != 1 || b->drawn == 0)
		return;
	fputs("\r", stdout);
	if (b->drawn > 1)
		fprintf(stdout, "\033[%dA", b->drawn - 1);
	fputs("\033[J", stdout);
	b->drawn = 0;
	fflush(stdout);
	onscreen = 0;
}

void
rt_bars_show(RtBars *b, int midline)
{
	char line[RT_PROGRESS_MAX + 512];
	int width;

	if (!b || b->mode != 1 || midline)
		return;
	rt_bars_hide(b);
	width = term_width();
	for (int i = 0; i < b->plan->nsession; i++) {
		if (!b->bars[i].live)
			continue;
		line_of(b, i, line, sizeof line, width, 0);
		fprintf(stdout, "%s%s", b->drawn ? "\n" : "", line);
		b->drawn++;
		b->bars[i].dirty = 0;
	}
	b->drawn_at = rt_now();
	onscreen = b->drawn > 0; /* before the bar shows: a Ctrl-C can
				    follow it at once */
	fflush(stdout);
}

/* A plain line for session i, if one is due. */
static void
plain(RtBars *b, int i, int midline)
{
	Bar *r = &b->bars[i];
	char line[RT_PROGRESS_MAX + 512];
	int changed = r->last.step != r->plain_step ||
		      r->last.frac != r->plain_frac;

	if (midline || !changed)
		return;
	if (!(r->last.end || (b->every > 0 &&
			      r->last.t - r->plain_at >= b->every)))
		return;
	line_of(b, i, line, sizeof line, 0, 1);
	fprintf(stdout, "%s\n", line);
	fflush(stdout);
	r->plain_at = r->last.t;
	r->plain_step = r->last.step;
	r->plain_frac = r->last.frac;
}

void
rt_bars_take(RtBars *b, int session, const unsigned char *body, size_t n,
	     int midline)
{
	Bar *r;
	RtProgress p;

	if (!b || b->mode == 0 || session < 0 ||
	    session >= b->plan->nsession || rt_progress_decode(&p, body, n))
		return;
	r = &b->bars[session];
	if (!r->live && r->plain_step < 0 && r->nring == 0) {
		r->first = (Sample){p.t, p.frac < 0 ? 0 : p.frac, p.examples};
		r->plain_at = p.t; /* the first plain line after `every` */
	}
	if (r->nring == 0 ||
	    p.t - r->ring[(r->head - 1 + NSAMPLE) % NSAMPLE].t >= SAMPLE_SECS) {
		r->ring[r->head] = (Sample){p.t, p.frac, p.examples};
		r->head = (r->head + 1) % NSAMPLE;
		if (r->nring < NSAMPLE)
			r->nring++;
	}
	r->last = p;
	r->live = p.end != 2;
	if (b->mode == 2) {
		plain(b, session, midline);
		return;
	}
	r->dirty = 1;
	if (p.end == 2) { /* its last drawing stays */
		char line[RT_PROGRESS_MAX + 512];

		rt_bars_hide(b);
		line_of(b, session, line, sizeof line, term_width(), 0);
		fprintf(stdout, "%s\n", line);
		r->dirty = 0;
		rt_bars_show(b, midline);
	} else if (rt_now() - b->drawn_at >= DRAW_SECS) {
		rt_bars_show(b, midline);
	}
}

void
rt_bars_tick(RtBars *b, int midline)
{
	int dirty = 0;

	if (!b || b->mode != 1)
		return;
	for (int i = 0; i < b->plan->nsession; i++)
		dirty |= b->bars[i].live && b->bars[i].dirty;
	if (dirty && rt_now() - b->drawn_at >= DRAW_SECS)
		rt_bars_show(b, midline);
}

void
rt_bars_end(RtBars *b, int session)
{
	Bar *r;

	if (!b || session < 0 || session >= b->plan->nsession ||
	    !(r = &b->bars[session])->live)
		return;
	/* it ended without its last record (it failed): leave the line as
	   it was drawn */
	r->live = 0;
	if (b->mode == 1) {
		char line[RT_PROGRESS_MAX + 512];

		rt_bars_hide(b);
		line_of(b, session, line, sizeof line, term_width(), 0);
		fprintf(stdout, "%s\n", line);
		rt_bars_show(b, 0);
	}
}

void
rt_bars_free(RtBars *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->plan->nsession; i++)
		rt_bars_end(b, i);
	free(b->bars);
	free(b);
}
