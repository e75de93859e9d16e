/*
 * tests/unit/conv_test.c: tfg_rt_conv2d (runtime/conv.c,
 * spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose") against a reference
 * written here from the definition, for every kind (the output, the
 * input's gradient, the filter's), both dtypes, depthwise or not.
 *
 * The reference sums y[n, oy, ox, k] = sum x[n, iy, ix, c] f[i, j, c, u]
 * over the taps inside the input, in long double; the gradients are
 * the same sum's adjoints, made by walking the same taps and adding each
 * product into the operand's element (so they share no code with the
 * runtime's im2col, col2im or GEMM).  Geometries are random (strides,
 * dilations, uneven padding, windows larger than the input's stride,
 * 1 x 1 filters, batches of 1), plus larger shapes, with the default
 * chunks and with chunks of a few rows, for several chunks and blocks.  Tolerance: 4 (taps + 1) eps of the sum of |terms|.
 * The default path (the direct AVX2 kernels, thin and tiled, where the
 * host has them), the GEMM path (rt_conv_gemm) and the direct loops
 * (rt_conv_direct) must all agree, and a result must be bit for bit the
 * same on 1 and 3 threads.  The
 * pools (tfg_rt_pool2d) likewise, every kind and dtype, with ties and
 * NaNs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"
#include "tests/unit/test.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t
pick(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

typedef struct Case {
	TfgConv g;
	int32_t dtype;
	int64_t nx, nf, ny; /* elements of input, filter, output */
	int64_t oc;
} Case;

static void
sizes(Case *c)
{
	TfgConv *g = &c->g;

	c->oc = g->depthwise ? g->c * g->o : g->o;
	c->nx = g->n * g->h * g->w * g->c;
	c->nf = g->kh * g->kw * g->c * g->o;
	c->ny = g->n * g->oh * g->ow * c->oc;
}

/* oh, ow of g from the padding after: pb, pr */
static int
finish(TfgConv *g, int64_t pb, int64_t pr)
{
	int64_t sy = (g->kh - 1) * g->dh + 1, sx = (g->kw - 1) * g->dw + 1;
	int64_t ry = g->h + g->pt + pb, rx = g->w + g->pl + pr;

	if (ry < sy || rx < sx)
		return 0;
	g->oh = (ry - sy) / g->sh + 1;
	g->ow = (rx - sx) / g->sw + 1;
	return 1;
}

static double *
values(int64_t n)
{
	double *v = malloc((size_t)(n ? n : 1) * sizeof *v);

	for (int64_t i = 0; i < n; i++)
		v[i] = (double)((int64_t)(next() % 2001) - 1000) / 1000.0;
	return v;
}

static void *
as(int32_t t, const double *v, int64_t n)
{
	char *b = malloc((size_t)(n ? n : 1) * 8);

	for (int64_t i = 0; i < n; i++)
		if (t == TFG_F32)
			((float *)b)[i] = (float)v[i];
		else
			((double *)b)[i] = v[i];
	return b;
}

static void
store(int32_t t, void *b, int64_t i, double v)
{
	switch (t) {
	case TFG_F32: ((float *)b)[i] = (float)v; break;
	case TFG_F64: ((double *)b)[i] = v; break;
	case TFG_I32: ((int32_t *)b)[i] = (int32_t)v; break;
	default: ((int64_t *)b)[i] = (int64_t)v; break;
	}
}

static double
load(int32_t t, const void *b, int64_t i)
{
	switch (t) {
	case TFG_F32: return ((const float *)b)[i];
	case TFG_F64: return ((const double *)b)[i];
	case TFG_I32: return ((const int32_t *)b)[i];
	default: return (double)((const int64_t *)b)[i];
	}
}

static double
get(int32_t t, const void *b, int64_t i)
{
	return t == TFG_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
}

/* The reference of kind: out[] and the sum of |terms| per element. */
static void
reference(const Case *c, int kind, const double *x, const double *f,
	  const double *dy, long double *out, long double *mag, int64_t nout)
{
	const TfgConv *g = &c->g;

	memset(out, 0, (size_t)nout * sizeof *out);
	memset(mag, 0, (size_t)nout * sizeof *mag);
	for (int64_t b = 0; b < g->n; b++)
	for (int64_t oy = 0; oy < g->oh; oy++)
	for (int64_t ox = 0; ox < g->ow; ox++)
	for (int64_t i = 0; i < g->kh; i++)
	for (int64_t j = 0; j < g->kw; j++) {
		int64_t iy = oy * g->sh - g->pt + i * g->dh;
		int64_t ix = ox * g->sw - g->pl + j * g->dw;

		if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
			continue;
		for (int64_t z = 0; z < g->c; z++)
		for (int64_t u = 0; u < g->o; u++) {
			int64_t k = g->depthwise ? z * g->o + u : u;
			int64_t xi = ((b * g->h + iy) * g->w + ix) * g->c + z;
			int64_t fi = ((i * g->kw + j) * g->c + z) * g->o + u;
			int64_t yi = ((b * g->oh + oy) * g->ow + ox) * c->oc +
				     k;
			long double p;
			int64_t at;

			if (kind == TFG_CONV_FORWARD)
				p = (long double)x[xi] * f[fi], at = yi;
			else if (kind == TFG_CONV_INPUT)
				p = (long double)dy[yi] * f[fi], at = xi;
			else
				p = (long double)x[xi] * dy[yi], at = fi;
			out[at] += p;
			mag[at] += fabsl(p);
		}
	}
}

static int nchecked;

/* Runs kind on c's values, on the default path, the direct one and the
 * GEMM one, on 1 and 3 threads, against the reference. */
static void
check_kind(const Case *c, int kind)
{
	const TfgConv *g = &c->g;
	int32_t t = c->dtype;
	double eps = t == TFG_F32 ? 0x1p-24 : 0x1p-53;
	int64_t nout = kind == TFG_CONV_FORWARD ? c->ny
		     : kind == TFG_CONV_INPUT ? c->nx : c->nf;
	double *x = values(c->nx), *f = values(c->nf), *dy = values(c->ny);
	void *xb = as(t, x, c->nx), *fb = as(t, f, c->nf), *gb = as(t, dy, c->ny);
	const void *a = kind == TFG_CONV_INPUT ? gb : xb;
	const void *b = kind == TFG_CONV_FORWARD ? fb
		      : kind == TFG_CONV_INPUT ? fb : gb;
	long double *ref = malloc((size_t)(nout ? nout : 1) * sizeof *ref);
	long double *mag = malloc((size_t)(nout ? nout : 1) * sizeof *mag);
	char *out[3][2];
	static const char *const path[3] = {"default", "direct", "gemm"};
	int64_t taps = g->kh * g->kw * (g->depthwise ? 1 : g->c);

	if (kind == TFG_CONV_FILTER)
		taps = g->n * g->oh * g->ow;
	else if (kind == TFG_CONV_INPUT)
		taps = g->kh * g->kw * g->o;
	reference(c, kind, x, f, dy, ref, mag, nout);
	for (int d = 0; d < 3; d++)
		for (int th = 0; th < 2; th++) {
			out[d][th] = malloc((size_t)(nout ? nout : 1) * 8);
			memset(out[d][th], 0x7f, (size_t)(nout ? nout : 1) * 8);
			rt_conv_direct = d == 1;
			rt_conv_gemm = d == 2;
			tfg_set_threads(th ? 3 : 1);
			tfg_rt_conv2d(kind, t, g, a, b, out[d][th]);
		}
	rt_conv_direct = 0;
	rt_conv_gemm = 0;
	tfg_set_threads(3);
	for (int d = 0; d < 3; d++) {
		if (memcmp(out[d][0], out[d][1],
			   (size_t)nout * (t == TFG_F32 ? 4 : 8)) != 0)
			TEST_FAIL_("kind %d (%s) differs between 1 and 3 "
				   "threads", kind, path[d]);
		for (int64_t e = 0; e < nout; e++) {
			double v = get(t, out[d][0], e);
			double tol = 4.0 * (double)(taps + 1) * eps *
				     (double)mag[e] + 1e-300;

			if (!(fabs(v - (double)ref[e]) <= tol))
				TEST_FAIL_("kind %d %s dtype %d element %"
					   PRId64 ": %.17g != %.17g (n %" PRId64
					   " %" PRId64 "x%" PRId64 "x%" PRId64
					   " k %" PRId64 "x%" PRId64 " o %"
					   PRId64 " s %" PRId64 ",%" PRId64
					   " d %" PRId64 ",%" PRId64 " p %"
					   PRId64 ",%" PRId64 " dw %" PRId64
					   ")", kind, path[d],
					   (int)t, e, v, (double)ref[e], g->n,
					   g->h, g->w, g->c, g->kh, g->kw,
					   g->o, g->sh, g->sw, g->dh, g->dw,
					   g->pt, g->pl, g->depthwise);
		}
		free(out[d][0]);
		free(out[d][1]);
	}
	nchecked++;
	free(x), free(f), free(dy), free(xb), free(fb), free(gb);
	free(ref), free(mag);
}

static void
check_all(const Case *c)
{
	for (int kind = 0; kind < 3; kind++)
		check_kind(c, kind);
}

/* Random small geometries. */
static void
t_random(void)
{
	int made = 0;

	while (made < 300) {
		Case c = {0};
		TfgConv *g = &c.g;
		int64_t pb, pr;

		g->n = pick(1, 3), g->h = pick(1, 9), g->w = pick(1, 9);
		/* a third of the outputs wider than a vector or four, a
		   third of the inputs wide enough for filters past THIN_K
		   taps (runtime/conv.c's tiles) */
		g->c = made % 3 == 2 ? pick(6, 24) : pick(1, 5);
		g->kh = pick(1, 4), g->kw = pick(1, 4);
		g->o = made % 3 == 0 ? pick(1, 5) : pick(6, 40);
		g->sh = pick(1, 3), g->sw = pick(1, 3);
		g->dh = pick(1, 2), g->dw = pick(1, 2);
		g->pt = pick(0, 2), g->pl = pick(0, 2);
		pb = pick(0, 2), pr = pick(0, 2);
		g->depthwise = pick(0, 3) == 0;
		if (made % 10 == 0) /* the pointwise path */
			g->kh = g->kw = g->sh = g->sw = 1, g->pt = g->pl = 0,
			pb = pr = 0, g->depthwise = 0;
		if (!finish(g, pb, pr))
			continue;
		c.dtype = made % 2 ? TFG_F64 : TFG_F32;
		sizes(&c);
		check_all(&c);
		made++;
	}
	ASSERT_EQ(nchecked, 900);
}

/* Shapes of several chunks per block and several blocks and slabs: the
 * Deep MNIST layers (SAME, 5 x 5), a strided one and a depthwise one. */
static void
t_large(void)
{
	static const TfgConv gs[] = {
		/* n  h   w   c  kh kw o  oh  ow sh sw dh dw pt pl dw */
		{6, 28, 28, 1, 5, 5, 32, 28, 28, 1, 1, 1, 1, 2, 2, 0},
		{5, 14, 14, 32, 5, 5, 64, 14, 14, 1, 1, 1, 1, 2, 2, 0},
		{3, 17, 15, 8, 3, 3, 16, 8, 7, 2, 2, 1, 1, 0, 0, 0},
		{4, 16, 16, 16, 3, 3, 2, 16, 16, 1, 1, 1, 1, 1, 1, 1},
		{4, 20, 20, 8, 1, 1, 24, 20, 20, 1, 1, 1, 1, 0, 0, 0},
		/* tiles: 20 outputs (a partial panel), dilated, VALID */
		{3, 15, 13, 12, 3, 3, 20, 11, 9, 1, 1, 2, 2, 0, 0, 0},
	};

	for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++)
		for (int t = 0; t < 2; t++) {
			Case c = {gs[i], t ? TFG_F64 : TFG_F32, 0, 0, 0, 0};

			sizes(&c);
			/* the default chunks, and chunks of a few rows: more
			   chunks than blocks, a partial one at each end */
			rt_conv_chunk = 0;
			check_all(&c);
			rt_conv_chunk = 9000;
			check_all(&c);
		}
	rt_conv_chunk = 0;
}

/* Empty batches: the output and the input's gradient are empty, the
 * filter's gradient zeros. */
static void
t_empty(void)
{
	TfgConv g = {0, 4, 4, 2, 3, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 0};
	float df[54], x[1] = {0}, dy[1] = {0};

	memset(df, 0x7f, sizeof df);
	tfg_rt_conv2d(TFG_CONV_FILTER, TFG_F32, &g, x, dy, df);
	for (int i = 0; i < 54; i++)
		ASSERT(df[i] == 0.0f);
}

/* ---- pools */

/* The reference of pool kind over g on x (and dy): the window's max (a
 * NaN wins; the first of equals takes the gradient) or average. */
static void
pool_ref(const TfgConv *g, int kind, const double *x, const double *dy,
	 double *out)
{
	int64_t c = g->c, hw = g->h * g->w;

	if (kind >= TFG_POOL_MAX_GRAD)
		memset(out, 0, (size_t)(g->n * hw * c) * sizeof *out);
	for (int64_t b = 0; b < g->n; b++)
	for (int64_t oy = 0; oy < g->oh; oy++)
	for (int64_t ox = 0; ox < g->ow; ox++)
	for (int64_t z = 0; z < c; z++) {
		int64_t yo = ((b * g->oh + oy) * g->ow + ox) * c + z, at = -1;
		int64_t cnt = 0;
		double m = 0, sum = 0;

		for (int64_t i = 0; i < g->kh; i++)
		for (int64_t j = 0; j < g->kw; j++) {
			int64_t iy = oy * g->sh - g->pt + i;
			int64_t ix = ox * g->sw - g->pl + j;
			int64_t q = ((b * g->h + iy) * g->w + ix) * c + z;

			if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
				continue;
			cnt++;
			sum += x ? x[q] : 0;
			if (x && (at < 0 || (!isnan(m) && (x[q] > m ||
							   isnan(x[q])))))
				m = x[q], at = q;
		}
		for (int64_t i = 0; kind == TFG_POOL_AVG_GRAD && i < g->kh; i++)
		for (int64_t j = 0; j < g->kw; j++) {
			int64_t iy = oy * g->sh - g->pt + i;
			int64_t ix = ox * g->sw - g->pl + j;

			if (iy >= 0 && iy < g->h && ix >= 0 && ix < g->w)
				out[((b * g->h + iy) * g->w + ix) * c + z] +=
				    dy[yo] / (double)cnt;
		}
		if (kind == TFG_POOL_MAX)
			out[yo] = m;
		else if (kind == TFG_POOL_AVG)
			out[yo] = sum / (double)cnt;
		else if (kind == TFG_POOL_MAX_GRAD)
			out[at] += dy[yo];
	}
}

/* Random windows (SAME and VALID paddings, strides below, at and above
 * the window), every kind and dtype, ties and NaNs in the input, on 1
 * and 3 threads: within rounding of the reference, bit for bit across
 * threads. */
static void
t_pool(void)
{
	static const int32_t dts[] = {TFG_F32, TFG_F64, TFG_I32, TFG_I64};
	int made = 0;

	while (made < 200) {
		TfgConv g = {0};
		int64_t nx, ny, pb, pr;
		int32_t t = dts[made % 4];
		int fl = t == TFG_F32 || t == TFG_F64;
		double *x, *dy, *ref;
		size_t sz = t == TFG_F32 || t == TFG_I32 ? 4 : 8;

		g.n = pick(1, 3), g.h = pick(1, 9), g.w = pick(1, 9);
		g.c = pick(1, 5), g.kh = pick(1, 4), g.kw = pick(1, 4);
		g.sh = pick(1, 4), g.sw = pick(1, 4), g.dh = g.dw = 1;
		g.o = g.c;
		if (pick(0, 1)) { /* SAME */
			int64_t oh = (g.h + g.sh - 1) / g.sh;
			int64_t ow = (g.w + g.sw - 1) / g.sw;
			int64_t ph = (oh - 1) * g.sh + g.kh - g.h;
			int64_t pw = (ow - 1) * g.sw + g.kw - g.w;

			ph = ph < 0 ? 0 : ph, pw = pw < 0 ? 0 : pw;
			g.pt = ph / 2, pb = ph - ph / 2;
			g.pl = pw / 2, pr = pw - pw / 2;
		} else {
			g.pt = g.pl = pb = pr = 0;
		}
		if (!finish(&g, pb, pr))
			continue;
		nx = g.n * g.h * g.w * g.c;
		ny = g.n * g.oh * g.ow * g.c;
		x = values(nx), dy = values(ny);
		for (int64_t i = 0; i < nx; i++) {
			x[i] = fl ? x[i] : (double)(int64_t)(x[i] * 5);
			if (i % 7 == 3)
				x[i] = x[i > 0 ? i - 1 : 0]; /* a tie */
			if (fl && made % 8 == 1 && i % 11 == 5)
				x[i] = NAN;
		}
		for (int kind = TFG_POOL_MAX; kind <= TFG_POOL_AVG_GRAD;
		     kind++) {
			int64_t nout = kind >= TFG_POOL_MAX_GRAD ? nx : ny;
			char *out[2], *xb, *gb;

			if (!fl && kind != TFG_POOL_MAX)
				continue;
			ref = malloc((size_t)(nout ? nout : 1) * sizeof *ref);
			pool_ref(&g, kind, kind == TFG_POOL_AVG_GRAD ? NULL : x,
				 dy, ref);
			xb = malloc((size_t)nx * 8);
			gb = malloc((size_t)ny * 8);
			for (int64_t i = 0; i < nx; i++)
				store(t, xb, i, x[i]);
			for (int64_t i = 0; i < ny; i++)
				store(t, gb, i, dy[i]);
			for (int th = 0; th < 2; th++) {
				out[th] = malloc((size_t)nout * 8);
				tfg_set_threads(th ? 3 : 1);
				tfg_rt_pool2d(kind, t, &g, kind ==
					      TFG_POOL_AVG_GRAD ? gb : xb, gb,
					      out[th]);
			}
			tfg_set_threads(3);
			if (memcmp(out[0], out[1], (size_t)nout * sz))
				TEST_FAIL_("pool kind %d differs between 1 and "
					   "3 threads", kind);
			for (int64_t e = 0; e < nout; e++) {
				double v = load(t, out[0], e);

				if (!(isnan(v) && isnan(ref[e])) &&
				    !(fabs(v - ref[e]) <= 1e-5 *
				      (1 + fabs(ref[e]))))
					TEST_FAIL_("pool kind %d dtype %d "
						   "element %" PRId64 ": %g != "
						   "%g", kind, (int)t, e, v,
						   ref[e]);
			}
			free(out[0]), free(out[1]), free(xb), free(gb);
			free(ref);
		}
		free(x), free(dy);
		made++;
	}
}

/* A pool of 3 threads: the first loop sizes it. */
static void
setup(void)
{
	ASSERT_EQ(tfg_set_threads(3), 3);
	ASSERT_EQ(rt_pool_threads(8), 3);
}

TEST_MAIN_FIXTURE(setup, NULL, {"random", t_random}, {"large", t_large},
		  {"pool", t_pool}, {"empty", t_empty})
