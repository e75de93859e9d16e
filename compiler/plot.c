/*
 * compiler/plot.c: tfgc plot FILE.csv: training curves as a PNG
 * (spec/language.md §10.7 "Training curves").
 *
 * The CSV (a header of column names, then rows of numbers, where an empty
 * cell or nan is a value not measured in that row) is read whole into an
 * arena, one array of doubles a column, NAN where there is no value.
 * Every plotted column gets a panel of its own, stacked vertically, all
 * on the same x axis so that the panels line up.
 *
 * Drawing is cairo's, opened with dlopen at run time as runtime/gpu.c
 * opens libcuda: tfgc (the static one too) links nothing of it, so only
 * `tfgc plot` needs it on the machine.  The few functions used are
 * declared here, as cairo's ABI is stable: the build needs no cairo.h.
 * $TFG_LIBCAIRO names another file (for tests).
 *
 * A polyline of 100k points through a 700-pixel-wide panel mostly draws
 * over itself, and cairo's stroker spends its time on that.  So each run
 * of consecutive points that falls in one pixel column is cut down to its
 * minimum and maximum, in the order they came: the curve looks the same
 * (the spikes stay) and costs at most two points a column.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/compiler_int.h"

#define PLOT_DEFAULT_W 800
#define PLOT_PANEL_H 300   /* the default height of one panel */
#define PLOT_MIN_W 200
#define PLOT_MIN_PANEL_H 120
#define PLOT_MAX_SIDE 8192 /* a 8192 x 8192 image is 256 MiB */
#define PLOT_MAX_ABS 1e300 /* beyond: left out, as inf (the axes' sums
			      would overflow) */
#define PLOT_MAX_COLS 1000 /* a header of more is no training log */
#define PLOT_MAX_ROWS 100000000 /* 800 MB of doubles a column */
#define PLOT_DOTS 50       /* a column with at most this many points
			      gets a dot at each */

/* Each panel's margins around its plot area, in pixels; the left one
 * grows to fit the widest tick label. */
#define M_TOP 34
#define M_RIGHT 32
#define M_BOTTOM 46
#define M_LEFT_MIN 48

/* ------------------------------------------------------------ cairo's API */

enum {
	CAIRO_STATUS_SUCCESS = 0,
	CAIRO_STATUS_WRITE_ERROR = 11,
	CAIRO_FORMAT_RGB24 = 1,
	CAIRO_FONT_SLANT_NORMAL = 0,
	CAIRO_FONT_WEIGHT_NORMAL = 0,
	CAIRO_FONT_WEIGHT_BOLD = 1,
	CAIRO_LINE_JOIN_ROUND = 1,
};

typedef struct cairo cairo_t;                 /* opaque */
typedef struct cairo_surface cairo_surface_t; /* opaque */
typedef int (*cairo_write_func_t)(void *closure, const unsigned char *data,
				  unsigned length);
typedef struct {
	double x_bearing, y_bearing, width, height, x_advance, y_advance;
} CairoExtents; /* cairo_text_extents_t */

/* The functions used, filled by dlsym (all of them, or none). */
static struct {
	cairo_surface_t *(*image_surface_create)(int, int, int);
	int (*surface_status)(cairo_surface_t *);
	void (*surface_destroy)(cairo_surface_t *);
	int (*surface_write_to_png_stream)(cairo_surface_t *,
					   cairo_write_func_t, void *);
	cairo_t *(*create)(cairo_surface_t *);
	int (*status)(cairo_t *);
	const char *(*status_to_string)(int);
	void (*destroy)(cairo_t *);
	void (*save)(cairo_t *);
	void (*restore)(cairo_t *);
	void (*set_source_rgb)(cairo_t *, double, double, double);
	void (*paint)(cairo_t *);
	void (*set_line_width)(cairo_t *, double);
	void (*set_line_join)(cairo_t *, int);
	void (*move_to)(cairo_t *, double, double);
	void (*line_to)(cairo_t *, double, double);
	void (*rectangle)(cairo_t *, double, double, double, double);
	void (*arc)(cairo_t *, double, double, double, double, double);
	void (*stroke)(cairo_t *);
	void (*fill)(cairo_t *);
	void (*select_font_face)(cairo_t *, const char *, int, int);
	void (*set_font_size)(cairo_t *, double);
	void (*show_text)(cairo_t *, const char *);
	void (*text_extents)(cairo_t *, const char *, CairoExtents *);
	void (*debug_reset_static_data)(void);
} cr;

#define SYM(f) {"cairo_" #f, (void *)&cr.f}
static const struct {
	const char *name;
	void *slot; /* &cr.X */
} syms[] = {
	SYM(image_surface_create), SYM(surface_status), SYM(surface_destroy),
	SYM(surface_write_to_png_stream), SYM(create), SYM(status),
	SYM(status_to_string), SYM(destroy), SYM(save), SYM(restore),
	SYM(set_source_rgb), SYM(paint), SYM(set_line_width),
	SYM(set_line_join), SYM(move_to), SYM(line_to), SYM(rectangle),
	SYM(arc), SYM(stroke), SYM(fill), SYM(select_font_face),
	SYM(set_font_size), SYM(show_text), SYM(text_extents),
	SYM(debug_reset_static_data),
};
#undef SYM

/* Opens libcairo and fills cr; the handle, or NULL after saying why. */
static void *
cairo_open(void)
{
	const char *name = getenv("TFG_LIBCAIRO");
	void *lib;

	if (name == NULL || *name == '\0')
		name = "libcairo.so.2";
	if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		const char *de = dlerror();

		fprintf(stderr, "tfgc plot: cannot load %s (apt install "
			"libcairo2): %s\n", name, de ? de : "dlopen failed");
		return NULL;
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(lib, syms[i].name);

		if (f == NULL) {
			fprintf(stderr, "tfgc plot: %s has no %s: is it "
				"cairo (1.10 or later)?\n", name,
				syms[i].name);
			dlclose(lib);
			return NULL;
		}
		memcpy(syms[i].slot, &f, sizeof f);
	}
	return lib;
}

/* -------------------------------------------------------------- the CSV */

typedef struct Csv {
	const char *path;
	int ncol, nrow;
	char **name;  /* [ncol] the header's */
	double **val; /* [ncol][nrow]; NAN: none, or not plottable */
} Csv;

/* One line's cells: where each starts and how long it is, trimmed. */
typedef struct Cells {
	int n, cap;
	const char **p;
	size_t *len;
} Cells;

static void
split_line(Arena *ar, Cells *c, const char *s, const char *end)
{
	c->n = 0;
	for (;;) {
		const char *e = memchr(s, ',', (size_t)(end - s));
		const char *ce = e ? e : end;

		if (c->n == c->cap) {
			int cap = c->cap ? 2 * c->cap : 16;
			const char **p = arena_alloc(ar, cap * sizeof *p);
			size_t *len = arena_alloc(ar, cap * sizeof *len);

			if (c->n) {
				memcpy(p, c->p, c->n * sizeof *p);
				memcpy(len, c->len, c->n * sizeof *len);
			}
			c->p = p, c->len = len, c->cap = cap;
		}
		while (s < ce && (*s == ' ' || *s == '\t'))
			s++;
		while (ce > s && (ce[-1] == ' ' || ce[-1] == '\t' ||
				  ce[-1] == '\r'))
			ce--;
		c->p[c->n] = s;
		c->len[c->n++] = (size_t)(ce - s);
		if (!e)
			break;
		s = e + 1;
	}
}

/* A cell's value: 0, or -1 when it is not a number.  Empty and nan are
 * NAN (not measured); inf and absurd sizes too, as they cannot be drawn
 * (a loss that diverged). */
static int
parse_cell(const char *s, size_t n, double *v)
{
	char buf[64], *end;

	*v = NAN;
	if (n == 0)
		return 0;
	if (n >= sizeof buf || memchr(s, '\0', n))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*v = strtod(buf, &end);
	if (end != buf + n) {
		*v = NAN;
		return -1;
	}
	if (!(fabs(*v) <= PLOT_MAX_ABS))
		*v = NAN;
	return 0;
}

/* The header: checks it and keeps the names (a name may be quoted). */
static int
csv_header(Csv *t, Arena *ar, const Cells *c, int line)
{
	int numbers = 0;
	double v;

	for (int j = 0; j < c->n; j++)
		numbers += c->len[j] > 0 && parse_cell(c->p[j], c->len[j],
							&v) == 0;
	if (numbers == c->n) {
		fprintf(stderr, "tfgc plot: %s:%d: the first line is numbers, "
			"not a header of column names (such as step,loss)\n",
			t->path, line);
		return 1;
	}
	if (c->n < 2) {
		fprintf(stderr, "tfgc plot: %s:%d: the header names one column "
			"('%.*s'): a plot needs an x column and one more\n",
			t->path, line, (int)c->len[0], c->p[0]);
		return 1;
	}
	if (c->n > PLOT_MAX_COLS) {
		fprintf(stderr, "tfgc plot: %s:%d: the header names %d columns;"
			" at most %d are read\n", t->path, line, c->n,
			PLOT_MAX_COLS);
		return 1;
	}
	t->ncol = c->n;
	t->name = arena_alloc(ar, c->n * sizeof *t->name);
	for (int j = 0; j < c->n; j++) {
		const char *s = c->p[j];
		size_t n = c->len[j];

		if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
			s++, n -= 2;
		if (n == 0) {
			fprintf(stderr, "tfgc plot: %s:%d: column %d of the "
				"header has no name\n", t->path, line, j + 1);
			return 1;
		}
		t->name[j] = arena_strndup(ar, s, n);
		for (int k = 0; k < j; k++)
			if (strcmp(t->name[k], t->name[j]) == 0) {
				fprintf(stderr, "tfgc plot: %s:%d: the header "
					"names '%s' twice (columns %d and "
					"%d)\n", t->path, line, t->name[j],
					k + 1, j + 1);
				return 1;
			}
	}
	return 0;
}

/* Reads path into t; 0, or 1 after saying what is wrong where. */
static int
csv_read(Csv *t, Arena *ar, const char *path)
{
	int err = 0, line = 0, rows = 1;
	SrcFile *f = src_read(ar, path, &err);
	const char *s, *end;
	Cells c = {0};

	t->path = path;
	if (f == NULL) {
		fprintf(stderr, "tfgc plot: cannot read '%s': %s\n", path,
			strerror(err));
		return 1;
	}
	for (size_t i = 0; i < f->len && rows <= PLOT_MAX_ROWS; i++)
		rows += f->text[i] == '\n';
	if (rows > PLOT_MAX_ROWS) {
		fprintf(stderr, "tfgc plot: '%s' has over %d lines\n", path,
			PLOT_MAX_ROWS);
		return 1;
	}
	s = f->text, end = f->text + f->len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		const char *b = s;

		line++;
		while (b < le && (*b == ' ' || *b == '\t' || *b == '\r'))
			b++;
		if (b == le) { /* a blank line: nothing measured */
			s = nl ? nl + 1 : end;
			continue;
		}
		split_line(ar, &c, s, le);
		if (t->ncol == 0) {
			if (csv_header(t, ar, &c, line) != 0)
				return 1;
			t->val = arena_alloc(ar, t->ncol * sizeof *t->val);
			for (int j = 0; j < t->ncol; j++)
				t->val[j] = arena_alloc(ar, (size_t)rows *
							      sizeof(double));
		} else if (c.n != t->ncol) {
			fprintf(stderr, "tfgc plot: %s:%d: %d cell%s, but the "
				"header has %d columns\n", path, line, c.n,
				c.n == 1 ? "" : "s", t->ncol);
			return 1;
		} else {
			for (int j = 0; j < c.n; j++) {
				double *v = &t->val[j][t->nrow];

				if (parse_cell(c.p[j], c.len[j], v) == 0)
					continue;
				fprintf(stderr, "tfgc plot: %s:%d:%d: '%.*s' "
					"is not a number (column %d, '%s')\n",
					path, line, (int)(c.p[j] - s) + 1,
					c.len[j] > 40 ? 40 : (int)c.len[j],
					c.p[j], j + 1, t->name[j]);
				return 1;
			}
			t->nrow++;
		}
		s = nl ? nl + 1 : end;
	}
	if (t->ncol == 0) {
		fprintf(stderr, "tfgc plot: '%s' is empty: expected a header "
			"of column names, then rows of numbers\n", path);
		return 1;
	}
	return 0;
}

/* The column called name, or -1 after saying which there are. */
static int
csv_column(const Csv *t, const char *name, size_t n, const char *flag)
{
	for (int j = 0; j < t->ncol; j++)
		if (strlen(t->name[j]) == n && memcmp(t->name[j], name, n) == 0)
			return j;
	fprintf(stderr, "tfgc plot: %s '%.*s': %s has no such column (it has",
		flag, (int)n, name, t->path);
	for (int j = 0; j < t->ncol; j++)
		fprintf(stderr, "%s '%s'", j ? "," : "", t->name[j]);
	fprintf(stderr, ")\n");
	return -1;
}

/* ------------------------------------------------------------- the axes */

typedef struct Axis {
	double lo, hi, step; /* lo and hi multiples of step */
	int dec;             /* decimals of a label; -1: %g with sig */
	int sig;
} Axis;

/* An axis through [min, max] with at most about n ticks 1, 2 or 5 times
 * a power of ten apart, its ends on ticks. */
static void
axis_nice(Axis *a, double min, double max, int n)
{
	double big = fmax(fabs(min), fabs(max)), span, mag, f;

	span = fmax(big * 1e-9, 1e-300); /* below: rounding, not data */
	if (max - min < span) {
		min -= span / 2 + (big == 0 ? 0.5 : big * 0.05);
		max += span / 2 + (big == 0 ? 0.5 : big * 0.05);
	}
	span = (max - min) / (n < 2 ? 2 : n);
	mag = pow(10, floor(log10(span)));
	f = span / mag;
	a->step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
	a->lo = floor(min / a->step) * a->step;
	a->hi = ceil(max / a->step) * a->step;
	big = fmax(fabs(a->lo), fabs(a->hi));
	if (big >= 1e6 || a->step < 1e-4) {
		a->dec = -1;
		a->sig = (int)(floor(log10(big)) - floor(log10(a->step))) + 1;
		a->sig = a->sig < 1 ? 1 : a->sig > 17 ? 17 : a->sig;
	} else {
		a->dec = a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
	}
}

/* The number of ticks, and tick i's value. */
static int
axis_nticks(const Axis *a)
{
	return (int)floor((a->hi - a->lo) / a->step + 0.5) + 1;
}

static double
axis_tick(const Axis *a, int i)
{
	double v = a->lo + i * a->step;

	return fabs(v) < a->step * 1e-6 ? 0 : v; /* no -0 */
}

static void
axis_label(const Axis *a, double v, char *buf, size_t n)
{
	if (a->dec < 0)
		snprintf(buf, n, "%.*g", a->sig, v);
	else
		snprintf(buf, n, "%.*f", a->dec, v);
}

/* ------------------------------------------------------------ drawing */

typedef struct Panel {
	int col;       /* the CSV's column */
	int npoint;    /* rows where it and x have a value */
	Axis y;
	double last;   /* its last value */
} Panel;

typedef struct Plot {
	const Csv *t;
	int xcol;
	Axis x;
	Panel *pn;
	int npanel;
	int w, ph;     /* image width, panel height */
	double left;   /* the left margin, from the widest y label */
} Plot;

/* The curves' colours, by panel (matplotlib's first five). */
static const double palette[][3] = {
	{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17},
	{0.84, 0.15, 0.16}, {0.58, 0.40, 0.74},
};

static void
text_at(cairo_t *c, const char *s, double x, double y, double ax, double ay)
{
	CairoExtents e;

	cr.text_extents(c, s, &e);
	cr.move_to(c, x - e.x_bearing - ax * e.width,
		   y - e.y_bearing - ay * e.height);
	cr.show_text(c, s);
}

static void
set_font(cairo_t *c, double size, int bold)
{
	cr.select_font_face(c, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
			    bold ? CAIRO_FONT_WEIGHT_BOLD
				 : CAIRO_FONT_WEIGHT_NORMAL);
	cr.set_font_size(c, size);
}

/* Where x lands in [x0, x0 + w] (and y in [y0 + h, y0]). */
#define MAP_X(pl, v, x0, w) ((x0) + ((v) - (pl)->x.lo) / \
			     ((pl)->x.hi - (pl)->x.lo) * (w))
#define MAP_Y(a, v, y0, h) ((y0) + (h) - ((v) - (a)->lo) / \
			    ((a)->hi - (a)->lo) * (h))

/* The frame, grid lines and tick labels of panel k's plot area. */
static void
draw_axes(const Plot *pl, cairo_t *c, const Panel *p, double x0, double y0,
	  double w, double h)
{
	char lb[64];
	int nx = axis_nticks(&pl->x), ny = p->npoint ? axis_nticks(&p->y) : 0;

	cr.set_line_width(c, 1);
	cr.set_source_rgb(c, 0.88, 0.88, 0.88);
	for (int i = 0; i < nx; i++) {
		double gx = floor(MAP_X(pl, axis_tick(&pl->x, i), x0, w)) + 0.5;

		cr.move_to(c, gx, y0);
		cr.line_to(c, gx, y0 + h);
	}
	for (int i = 0; i < ny; i++) {
		double gy = floor(MAP_Y(&p->y, axis_tick(&p->y, i), y0, h)) +
			    0.5;

		cr.move_to(c, x0, gy);
		cr.line_to(c, x0 + w, gy);
	}
	cr.stroke(c);
	cr.set_source_rgb(c, 0.25, 0.25, 0.25);
	cr.rectangle(c, floor(x0) + 0.5, floor(y0) + 0.5, floor(w),
		     floor(h));
	cr.stroke(c);
	set_font(c, 11, 0);
	for (int i = 0; i < nx; i++) {
		double v = axis_tick(&pl->x, i);

		axis_label(&pl->x, v, lb, sizeof lb);
		text_at(c, lb, MAP_X(pl, v, x0, w), y0 + h + 6, 0.5, 0);
	}
	for (int i = 0; i < ny; i++) {
		double v = axis_tick(&p->y, i);

		axis_label(&p->y, v, lb, sizeof lb);
		text_at(c, lb, x0 - 6, MAP_Y(&p->y, v, y0, h), 1, 0.5);
	}
	text_at(c, pl->t->name[pl->xcol], x0 + w / 2, y0 + h + 24, 0.5, 0);
}

/* Appends point i to the path (the first one starts it). */
static void
curve_point(const Plot *pl, cairo_t *c, const Panel *p, int i, int *n,
	    double x0, double y0, double w, double h)
{
	const double *xv = pl->t->val[pl->xcol], *yv = pl->t->val[p->col];
	double px = MAP_X(pl, xv[i], x0, w), py = MAP_Y(&p->y, yv[i], y0, h);

	if ((*n)++ == 0)
		cr.move_to(c, px, py);
	else
		cr.line_to(c, px, py);
}

/* The curve: the points in row order, each run of them in one pixel
 * column reduced to its minimum and maximum. */
static void
draw_curve(const Plot *pl, cairo_t *c, const Panel *p, double x0, double y0,
	   double w, double h)
{
	const double *xv = pl->t->val[pl->xcol], *yv = pl->t->val[p->col];
	const double *rgb = palette[(p - pl->pn) % 5];
	long col = -1;
	int lo = -1, hi = -1, n = 0;

	cr.set_source_rgb(c, rgb[0], rgb[1], rgb[2]);
	cr.set_line_width(c, 1.5);
	cr.set_line_join(c, CAIRO_LINE_JOIN_ROUND);
	for (int i = 0; i <= pl->t->nrow; i++) {
		long pc = -1;

		if (i < pl->t->nrow) {
			if (isnan(xv[i]) || isnan(yv[i]))
				continue;
			pc = (long)floor(MAP_X(pl, xv[i], 0, w));
			if (pc == col) {
				lo = yv[i] < yv[lo] ? i : lo;
				hi = yv[i] > yv[hi] ? i : hi;
				continue;
			}
		}
		if (lo >= 0) { /* the column ends: its points, in order */
			curve_point(pl, c, p, lo < hi ? lo : hi, &n, x0, y0,
				    w, h);
			if (lo != hi)
				curve_point(pl, c, p, lo < hi ? hi : lo, &n,
					    x0, y0, w, h);
		}
		col = pc, lo = hi = i;
	}
	cr.stroke(c);
	if (p->npoint > PLOT_DOTS)
		return;
	for (int i = 0; i < pl->t->nrow; i++) {
		if (isnan(xv[i]) || isnan(yv[i]))
			continue;
		cr.arc(c, MAP_X(pl, xv[i], x0, w), MAP_Y(&p->y, yv[i], y0, h),
		       2.5, 0, 2 * M_PI);
		cr.fill(c);
	}
}

static void
draw_panel(const Plot *pl, cairo_t *c, const Panel *p, int k)
{
	double x0 = pl->left, y0 = k * pl->ph + M_TOP;
	double w = pl->w - pl->left - M_RIGHT, h = pl->ph - M_TOP - M_BOTTOM;
	char lb[64];

	cr.set_source_rgb(c, 0.1, 0.1, 0.1);
	set_font(c, 14, 1);
	text_at(c, pl->t->name[p->col], x0, k * pl->ph + 10, 0, 0);
	if (p->npoint) {
		snprintf(lb, sizeof lb, "last %.4g", p->last);
		cr.set_source_rgb(c, 0.4, 0.4, 0.4);
		set_font(c, 11, 0);
		text_at(c, lb, x0 + w, k * pl->ph + 13, 1, 0);
	}
	draw_axes(pl, c, p, x0, y0, w, h);
	if (p->npoint == 0) {
		cr.set_source_rgb(c, 0.5, 0.5, 0.5);
		set_font(c, 14, 0);
		text_at(c, "no data", x0 + w / 2, y0 + h / 2, 0.5, 0.5);
		return;
	}
	draw_curve(pl, c, p, x0, y0, w, h);
}

/* The axes' ranges and the left margin that the y labels need. */
static void
plot_layout(Plot *pl, cairo_t *c)
{
	const Csv *t = pl->t;
	const double *xv = t->val[pl->xcol];
	double xmin = INFINITY, xmax = -INFINITY, widest = 0;
	double w = pl->w - M_LEFT_MIN - M_RIGHT;
	double h = pl->ph - M_TOP - M_BOTTOM;
	char lb[64];

	for (int i = 0; i < t->nrow; i++)
		if (!isnan(xv[i])) {
			xmin = fmin(xmin, xv[i]);
			xmax = fmax(xmax, xv[i]);
		}
	if (xmin > xmax)
		xmin = 0, xmax = 1;
	axis_nice(&pl->x, xmin, xmax, (int)(w / 90));
	set_font(c, 11, 0);
	for (int k = 0; k < pl->npanel; k++) {
		Panel *p = &pl->pn[k];
		const double *yv = t->val[p->col];
		double ymin = INFINITY, ymax = -INFINITY;

		for (int i = 0; i < t->nrow; i++)
			if (!isnan(xv[i]) && !isnan(yv[i])) {
				ymin = fmin(ymin, yv[i]);
				ymax = fmax(ymax, yv[i]);
				p->last = yv[i];
				p->npoint++;
			}
		if (p->npoint == 0)
			continue;
		axis_nice(&p->y, ymin, ymax, (int)(h / 40));
		for (int i = 0; i < axis_nticks(&p->y); i++) {
			CairoExtents e;

			axis_label(&p->y, axis_tick(&p->y, i), lb, sizeof lb);
			cr.text_extents(c, lb, &e);
			widest = fmax(widest, e.x_advance);
		}
	}
	pl->left = fmax(M_LEFT_MIN, ceil(widest) + 14);
}

/* The PNG's bytes to the FILE *closure. */
static int
png_write(void *closure, const unsigned char *data, unsigned n)
{
	return fwrite(data, 1, n, closure) == n ? CAIRO_STATUS_SUCCESS
						: CAIRO_STATUS_WRITE_ERROR;
}

/* Draws pl into out; 0, or 1 after saying why not. */
static int
plot_render(Plot *pl, const char *out)
{
	void *lib = cairo_open(), *f;
	cairo_surface_t *sf;
	cairo_t *c;
	FILE *fp = NULL;
	struct stat sb;
	int st, rc = 1, regular;

	if (lib == NULL)
		return 1;
	sf = cr.image_surface_create(CAIRO_FORMAT_RGB24, pl->w,
				     pl->ph * pl->npanel);
	c = cr.create(sf);
	if ((st = cr.status(c)) != CAIRO_STATUS_SUCCESS)
		goto done;
	cr.set_source_rgb(c, 1, 1, 1);
	cr.paint(c);
	plot_layout(pl, c);
	for (int k = 0; k < pl->npanel; k++)
		draw_panel(pl, c, &pl->pn[k], k);
	if ((st = cr.status(c)) != CAIRO_STATUS_SUCCESS)
		goto done;
	/* The file is made only now, so that a failed drawing leaves an
	   older one as it was. */
	if ((fp = fopen(out, "wb")) == NULL) {
		fprintf(stderr, "tfgc plot: cannot write '%s': %s\n", out,
			strerror(errno));
		goto done;
	}
	/* a half-written PNG is removed, but only a file: -o /dev/null
	   is no file to remove */
	regular = fstat(fileno(fp), &sb) == 0 && S_ISREG(sb.st_mode);
	errno = 0;
	st = cr.surface_write_to_png_stream(sf, png_write, fp);
	if (ferror(fp) && st == CAIRO_STATUS_SUCCESS)
		st = CAIRO_STATUS_WRITE_ERROR;
	if (fclose(fp) != 0 || st != CAIRO_STATUS_SUCCESS) {
		fprintf(stderr, "tfgc plot: cannot write '%s': %s\n", out,
			errno ? strerror(errno) : cr.status_to_string(st));
		if (regular)
			unlink(out);
		st = CAIRO_STATUS_SUCCESS; /* said */
		goto done;
	}
	rc = 0;
done:
	if (rc && st != CAIRO_STATUS_SUCCESS)
		fprintf(stderr, "tfgc plot: cairo: %s\n",
			cr.status_to_string(st));
	cr.destroy(c);
	cr.surface_destroy(sf);
	/* cairo's caches (fonts, glyphs), then fontconfig's (found through
	   cairo's handle, since cairo loaded it): dlclose would make what
	   they hold unreachable, a leak to LeakSanitizer */
	cr.debug_reset_static_data();
	if ((f = dlsym(lib, "FcFini")) != NULL) {
		void (*fc_fini)(void);

		memcpy(&fc_fini, &f, sizeof f);
		fc_fini();
	}
	dlclose(lib);
	return rc;
}

/* -------------------------------------------------------------- command */

typedef struct Size {
	int w, h; /* --size; 0: the default */
} Size;

/* --size WxH: 0, or -1 when it is not two numbers of pixels. */
static int
parse_size(Size *a, const char *v)
{
	char *end;
	long w, h;

	w = strtol(v, &end, 10);
	if (end == v || (*end != 'x' && *end != 'X') || v[0] == '-' ||
	    end[1] == '-' || end[1] == '+')
		return -1;
	v = end + 1;
	h = strtol(v, &end, 10);
	if (end == v || *end || w < PLOT_MIN_W || w > PLOT_MAX_SIDE ||
	    h < PLOT_MIN_PANEL_H || h > PLOT_MAX_SIDE)
		return -1;
	a->w = (int)w, a->h = (int)h;
	return 0;
}

/* The panels: the columns of --y, or all but x and time. */
static int
plot_columns(Plot *pl, Arena *ar, const PlotArgs *a)
{
	const Csv *t = pl->t;

	pl->pn = arena_alloc(ar, t->ncol * sizeof *pl->pn);
	if (a->y == NULL) {
		for (int j = 0; j < t->ncol; j++)
			if (j != pl->xcol && strcmp(t->name[j], "time") != 0)
				pl->pn[pl->npanel++].col = j;
		if (pl->npanel == 0) /* x and time only: time it is */
			for (int j = 0; j < t->ncol; j++)
				if (j != pl->xcol)
					pl->pn[pl->npanel++].col = j;
		return 0;
	}
	for (const char *s = a->y;; s++) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		int j = csv_column(t, s, n, "--y");

		if (j < 0)
			return 1;
		for (int k = 0; k < pl->npanel; k++)
			if (pl->pn[k].col == j) {
				fprintf(stderr, "tfgc plot: --y names '%s' "
					"twice\n", t->name[j]);
				return 1;
			}
		if (pl->npanel == t->ncol) /* cannot happen: names differ */
			return 1;
		pl->pn[pl->npanel++].col = j;
		if (!e)
			break;
		s = e;
	}
	return 0;
}

int
plot_main(const PlotArgs *a)
{
	Arena *ar;
	Size sz = {0, 0};
	Csv t = {0};
	Plot pl = {0};
	const char *out = a->out;
	int rc = 1;

	if (a->size && parse_size(&sz, a->size) != 0)
		return help_usage_error(CMD_PLOT, "--size takes WIDTHxHEIGHT "
					"in pixels, such as 800x600 (200 to "
					"8192 wide, 120 to 8192 high), not "
					"'%s'", a->size);
	ar = arena_new();
	if (csv_read(&t, ar, a->file) != 0)
		goto done;
	pl.t = &t;
	if (a->x && (pl.xcol = csv_column(&t, a->x, strlen(a->x), "--x")) < 0)
		goto done;
	if (plot_columns(&pl, ar, a) != 0)
		goto done;
	pl.w = sz.w ? sz.w : PLOT_DEFAULT_W;
	pl.ph = sz.h ? sz.h / pl.npanel : PLOT_PANEL_H;
	if (pl.ph < PLOT_MIN_PANEL_H) {
		fprintf(stderr, "tfgc plot: --size %dx%d gives each of the %d "
			"panels %d pixels; a panel needs %d\n", sz.w, sz.h,
			pl.npanel, pl.ph, PLOT_MIN_PANEL_H);
		goto done;
	}
	if (pl.ph * pl.npanel > PLOT_MAX_SIDE) {
		fprintf(stderr, "tfgc plot: %d panels of %d pixels are over "
			"%d high: give --size or --y\n", pl.npanel, pl.ph,
			PLOT_MAX_SIDE);
		goto done;
	}
	if (!out) {
		size_t n = strlen(a->file);

		if (n > 4 && strcasecmp(a->file + n - 4, ".csv") == 0)
			n -= 4;
		out = arena_printf(ar, "%.*s.png", (int)n, a->file);
	}
	rc = plot_render(&pl, out);
done:
	arena_free(ar);
	return rc;
}
