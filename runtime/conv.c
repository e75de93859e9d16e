/*
 * runtime/conv.c: convolutions and their gradients (tfg_rt_conv2d,
 * spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose"; spec/design.md
 * "Kernels"), which generated parts call for OP_conv2d,
 * OP_conv2d_backprop_input and OP_conv2d_backprop_filter
 * (codegen/cpu_conv.c).
 *
 * A convolution is a product.  Each output pixel's patch, the kh x kw x c
 * input values its window covers (zeros where it hangs over the padding),
 * is a row of a matrix P of n * oh * ow rows and K = kh * kw * c columns,
 * and the HWIO filter is already the K x o matrix F, so the output is
 * P F, its input's gradient is P's rows scattered back (col2im) from
 * dY F^T, and the filter's gradient is P^T dY.  P is never made whole:
 * the rows are cut into chunks of CHUNK_BYTES of patches (1 MiB: in the
 * L3 when the GEMM reads it; of 96 KiB to 2 MiB, 512 KiB and 1 MiB made
 * the layers of bench/kernels.sh fastest on Zen 3), each
 * made (im2col) and multiplied by OpenBLAS on the thread that made it,
 * and the threads of the kernel pool (runtime/pool.c) take one block of
 * chunks each:
 *   forward  chunks at fixed rows; each chunk's product goes straight to
 *            its output rows
 *   input    groups of whole images (as many as a chunk holds, or one
 *            image cut into chunks), whose gradients no other group's
 *            rows touch: each chunk's dY F^T into a scratch, added into
 *            the images in row order
 *   filter   SLABS_MAX slabs at most, cut by the shape alone, each
 *            summing its chunks' P^T dY into a partial of its own; the
 *            partials are added in slab order
 * so that every GEMM call and every sum is the same however many
 * threads there are (OpenBLAS's order within a call depends on its
 * rows), and so is the result.  A 1 x 1 filter of stride 1 without
 * padding needs no patches: P is the input, and the product is one
 * tfg_rt_gemm.
 *
 * On a host with AVX2 and FMA, f32 convolutions take the kernels of
 * "AVX2 kernels" below instead, which make no patches.
 *
 * Depthwise convolutions (each output channel reads one input channel)
 * are no product: they, and every convolution when the scratch cannot
 * be had (or rt_conv_direct is set, for the tests), take direct loops,
 * in the same blocks.
 */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "runtime/rt_int.h"

#define CHUNK_BYTES (1 << 20) /* patch rows of one GEMM, at least one */
#define SLABS_MAX 16            /* partials of a filter's gradient */

int rt_conv_direct;
int rt_conv_gemm;
size_t rt_conv_chunk;

typedef struct Job {
	int32_t kind, dtype;
	const TfgConv *g;
	const char *a, *b;
	char *out;
	size_t sz;     /* bytes of an element */
	int64_t k;     /* patch length: kh * kw * c */
	int64_t oc;    /* output channels: o, or c * o depthwise */
	int64_t rows;  /* output pixels: n * oh * ow */
	int64_t chunk; /* patch rows per GEMM */
	int64_t parts; /* blocks */
	int direct;
	char *work;    /* per bytes for each block, or NULL */
	size_t per;
} Job;

/* ------------------------------------------------------------ patches */

/* Patch rows [r, r + m) into col (m x K), zeros outside the input. */
static void
im2col(const Job *J, int64_t r, int64_t m, char *col)
{
	const TfgConv *g = J->g;
	size_t sz = J->sz, cb = (size_t)g->c * sz;

	for (int64_t q = r; q < r + m; q++) {
		int64_t img = q / (g->oh * g->ow), p = q % (g->oh * g->ow);
		int64_t y0 = p / g->ow * g->sh - g->pt;
		int64_t x0 = p % g->ow * g->sw - g->pl;
		const char *xi = J->a + (size_t)(img * g->h * g->w) * cb;

		for (int64_t i = 0; i < g->kh; i++) {
			int64_t iy = y0 + i * g->dh;

			if (iy < 0 || iy >= g->h) {
				memset(col, 0, (size_t)g->kw * cb);
				col += (size_t)g->kw * cb;
				continue;
			}
			const char *row = xi + (size_t)(iy * g->w) * cb;
			if (g->dw == 1) { /* the window's columns are adjacent */
				int64_t a = x0 < 0 ? -x0 : 0;
				int64_t e = g->w - x0 < g->kw ? g->w - x0 : g->kw;

				a = a > g->kw ? g->kw : a;
				e = e < a ? a : e;
				memset(col, 0, (size_t)a * cb);
				memcpy(col + (size_t)a * cb,
				       row + (size_t)(x0 + a) * cb,
				       (size_t)(e - a) * cb);
				memset(col + (size_t)e * cb, 0,
				       (size_t)(g->kw - e) * cb);
				col += (size_t)g->kw * cb;
				continue;
			}
			for (int64_t j = 0; j < g->kw; j++, col += cb) {
				int64_t ix = x0 + j * g->dw;

				if (ix < 0 || ix >= g->w)
					memset(col, 0, cb);
				else
					memcpy(col, row + (size_t)ix * cb, cb);
			}
		}
	}
}

/* dx += col (m x K) scattered back to the patches of rows [r, r + m). */
#define COL2IM(T)                                                          \
	static void col2im_##T(const Job *J, int64_t r, int64_t m,         \
			       const T *col)                               \
	{                                                                  \
		const TfgConv *g = J->g;                                   \
		for (int64_t q = r; q < r + m; q++) {                      \
			int64_t img = q / (g->oh * g->ow);                 \
			int64_t p = q % (g->oh * g->ow);                   \
			int64_t y0 = p / g->ow * g->sh - g->pt;            \
			int64_t x0 = p % g->ow * g->sw - g->pl;            \
			T *xi = (T *)J->out + img * g->h * g->w * g->c;    \
			for (int64_t i = 0; i < g->kh; i++) {              \
				int64_t iy = y0 + i * g->dh;               \
				for (int64_t j = 0; j < g->kw;             \
				     j++, col += g->c) {                   \
					int64_t ix = x0 + j * g->dw;       \
					if (iy < 0 || iy >= g->h ||        \
					    ix < 0 || ix >= g->w)          \
						continue;                  \
					T *d = xi + (iy * g->w + ix) *     \
						    g->c;                  \
					for (int64_t z = 0; z < g->c; z++) \
						d[z] += col[z];            \
				}                                          \
			}                                                  \
		}                                                          \
	}
COL2IM(float)
COL2IM(double)

static void
col2im(const Job *J, int64_t r, int64_t m, const void *col)
{
	if (J->dtype == TFG_F32)
		col2im_float(J, r, m, col);
	else
		col2im_double(J, r, m, col);
}

/* --------------------------------------------------------- direct loops */

/* The direct form of kind over output pixels [r, r + m), tap by tap:
 * forward adds into the pixels' rows of J->out, input into J->out's
 * images, filter into df (J->out or a partial).  The innermost loops run
 * over contiguous channels and vectorise. */
#define DIRECT(T)                                                          \
	static void direct_##T(const Job *J, int64_t r, int64_t m,         \
			       T *restrict df)                             \
	{                                                                  \
		const TfgConv *g = J->g;                                   \
		const int64_t o = g->o, c = g->c, oc = J->oc;              \
		const int dw = g->depthwise != 0, kind = J->kind;          \
		const T *restrict x = kind == TFG_CONV_INPUT ? NULL        \
			: (const T *)J->a;                                 \
		const T *restrict f = kind == TFG_CONV_FILTER ? NULL       \
			: (const T *)J->b;                                 \
		const T *restrict dy = kind == TFG_CONV_FORWARD ? NULL     \
			: (const T *)(kind == TFG_CONV_INPUT ? J->a : J->b);\
		T *restrict out = (T *)J->out;                             \
		for (int64_t q = r; q < r + m; q++) {                      \
			int64_t img = q / (g->oh * g->ow);                 \
			int64_t p = q % (g->oh * g->ow);                   \
			int64_t y0 = p / g->ow * g->sh - g->pt;            \
			int64_t x0 = p % g->ow * g->sw - g->pl;            \
			for (int64_t i = 0; i < g->kh; i++)                \
			for (int64_t j = 0; j < g->kw; j++) {              \
				int64_t iy = y0 + i * g->dh;               \
				int64_t ix = x0 + j * g->dw;               \
				if (iy < 0 || iy >= g->h || ix < 0 ||      \
				    ix >= g->w)                            \
					continue;                          \
				int64_t xo = ((img * g->h + iy) * g->w +   \
					      ix) * c;                     \
				int64_t fo = (i * g->kw + j) * c * o;      \
				if (kind == TFG_CONV_FORWARD) {            \
					T *restrict yq = out + q * oc;     \
					DIRECT_FWD(T);                     \
				} else if (kind == TFG_CONV_INPUT) {       \
					const T *gq = dy + q * oc;         \
					DIRECT_IN(T);                      \
				} else {                                   \
					const T *gq = dy + q * oc;         \
					DIRECT_FILT(T);                    \
				}                                          \
			}                                                  \
		}                                                          \
	}
/* y[k] += x[z] f[z, k] (depthwise: y[z o + u] += x[z] f[z, u]) */
#define DIRECT_FWD(T)                                                      \
	for (int64_t z = 0; z < c; z++) {                                  \
		const T xv = x[xo + z], *fz = f + fo + z * o;              \
		T *yz = yq + (dw ? z * o : 0);                             \
		for (int64_t u = 0; u < o; u++)                            \
			yz[u] += xv * fz[u];                               \
	}
/* dx[z] += sum over k of dy[k] f[z, k] */
#define DIRECT_IN(T)                                                       \
	for (int64_t z = 0; z < c; z++) {                                  \
		const T *fz = f + fo + z * o, *gz = gq + (dw ? z * o : 0); \
		T s = 0;                                                   \
		for (int64_t u = 0; u < o; u++)                            \
			s += gz[u] * fz[u];                                \
		out[xo + z] += s;                                          \
	}
/* df[z, k] += x[z] dy[k] */
#define DIRECT_FILT(T)                                                     \
	for (int64_t z = 0; z < c; z++) {                                  \
		const T xv = x[xo + z], *gz = gq + (dw ? z * o : 0);       \
		T *dz = df + fo + z * o;                                   \
		for (int64_t u = 0; u < o; u++)                            \
			dz[u] += xv * gz[u];                               \
	}
DIRECT(float)
DIRECT(double)

static void
direct(const Job *J, int64_t r, int64_t m, void *df)
{
	if (J->dtype == TFG_F32)
		direct_float(J, r, m, df);
	else
		direct_double(J, r, m, df);
}

/* --------------------------------------------------------------- blocks */

static int
one_by_one(const TfgConv *g)
{
	return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 &&
	       g->pt == 0 && g->pl == 0 && g->oh == g->h && g->ow == g->w &&
	       !g->depthwise;
}

/* Block i's share of [0, len) */
static void
share(const Job *J, int64_t i, int64_t len, int64_t *b, int64_t *e)
{
	*b = len * i / J->parts;
	*e = len * (i + 1) / J->parts;
}

/* ------------------------------------------------------- AVX2 kernels */

/* OpenBLAS's products run at 60-75 GFLOP/s on a Zen 3 core where its FMA
 * units can do 94, and at 16 on Deep MNIST's first layer (K = 25: too
 * narrow for its kernels); making and packing the patches costs more
 * on top.  With AVX2 and FMA, an f32 forward convolution or filter
 * gradient (and so the input's gradient of stride 1, input_as_forward)
 * is computed directly instead, on a copy of the input with its padding
 * made zeros (xp, n x hp x wp x c: every window lies inside it, so no
 * tap is tested or masked), each tap an offset into it (xoff):
 *   thin filters (K = kh kw c at most THIN_K), by output rows (an
 *     image's row oy of ow pixels):
 *     - forward, each pair of output pixels keeps 32 channels of sums
 *       in registers over all K taps (2 broadcasts and 4 loads of the
 *       filter, its channels rounded up to vectors, for 8 FMAs);
 *     - the filter's gradient keeps two taps' 32 channels of sums in
 *       registers over a row's pixels, then adds them into its slab's
 *       partial (K x op);
 *   wider ones, in the GEMM's own register tiling of 6 x 16 sums in 12
 *     registers, without its patch matrix or its packing:
 *     - forward: 6 output pixels (any six: each has its own pointer into
 *       xp) by 16 output channels over all K taps, each tap a broadcast
 *       per pixel and two loads of the filter, packed in panels of 16
 *       channels (op / 16 panels of K x 16, zeros past o);
 *     - the filter's gradient: 6 taps (any six, each its own offset into
 *       xp) by 16 output channels over TILE_GROUP of a slab's pixels,
 *       each pixel two loads of dy, packed by 16 channels for the group
 *       (dy's own rows of 256 bytes fall in a quarter of the L1's sets),
 *       and a broadcast per tap; the sums are added into the slab's
 *       partial after each group.
 * Deep MNIST's second layer (5 x 5 x 32 x 64 on 14 x 14) ran forward at
 * 83-87 GFLOP/s so, 63-69 through OpenBLAS; its input's gradient at
 * 80-86 (43-58), its filter's at 71-78 (50-70).  Slabs are cut by the shape
 * alone and their partials added in order, as the GEMM path's, and
 * every output's sum runs over the taps in one order: the result does
 * not depend on the threads. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define THIN_K 64
#define TILE 6          /* pixels (forward) or taps (filter) a tile */
#define TILE_GROUP 128  /* pixels summed before adding to a partial */
#define VEC_TARGET __attribute__((target("avx2,fma")))

typedef struct Vec {
	const Job *J;
	int thin;       /* K <= THIN_K */
	float *xp;      /* the padded input */
	float *fp;      /* forward: the filter as the kernels read it;
			   filter: the partials, K x op each */
	int64_t hp, wp, op;
	int64_t *xoff;  /* tap t's element in xp from its pixel's first */
	int64_t *poff;  /* tiled filter: each block's group's pixels in xp */
	float *dyp;     /* tiled filter: each block's group of dy */
} Vec;

/* Output row (img, oy)'s first element of its first window in xp. */
static const float *
thin_row(const Vec *T, int64_t row)
{
	const TfgConv *g = T->J->g;
	int64_t img = row / g->oh, oy = row % g->oh;

	return T->xp + ((img * T->hp + oy * g->sh) * T->wp) * g->c;
}

/* Pixel q's first window element in xp. */
static int64_t
tile_pixel(const Vec *T, int64_t q)
{
	const TfgConv *g = T->J->g;
	int64_t img = q / (g->oh * g->ow), p = q % (g->oh * g->ow);

	return ((img * T->hp + p / g->ow * g->sh) * T->wp +
		p % g->ow * g->sw) * g->c;
}

/* The first `last` lanes of a vector (1 to 8). */
#define THIN_LANES(last)                                                   \
	_mm256_cmpgt_epi32(_mm256_set1_epi32(last),                        \
			   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))

/* Forward, channels [ob, ob + 8 NV) of output row yr from xr. */
#define THIN_FWD(NV)                                                       \
	VEC_TARGET static void thin_fwd_##NV(const Vec *T, const float *xr, \
					      float *yr, int64_t ob,       \
					      int last)                    \
	{                                                                  \
		const __m256i tail = THIN_LANES(last);                     \
		const TfgConv *g = T->J->g;                                \
		const int64_t K = T->J->k, op = T->op, o = g->o;           \
		const int64_t step = g->sw * g->c;                         \
		const int64_t *xoff = T->xoff;                             \
		const float *f = T->fp + ob;                               \
		for (int64_t ox = 0; ox < g->ow; ox += 2) {                \
			const float *p0 = xr + ox * step;                  \
			const float *p1 = ox + 1 < g->ow ? p0 + step : p0; \
			__m256 a0[NV], a1[NV];                             \
			for (int v = 0; v < NV; v++)                       \
				a0[v] = a1[v] = _mm256_setzero_ps();       \
			for (int64_t t = 0; t < K; t++) {                  \
				__m256 b0 = _mm256_broadcast_ss(p0 + xoff[t]); \
				__m256 b1 = _mm256_broadcast_ss(p1 + xoff[t]); \
				const float *ft = f + t * op;              \
				for (int v = 0; v < NV; v++) {             \
					__m256 w = _mm256_loadu_ps(ft + 8 * v); \
					a0[v] = _mm256_fmadd_ps(b0, w, a0[v]); \
					a1[v] = _mm256_fmadd_ps(b1, w, a1[v]); \
				}                                          \
			}                                                  \
			for (int q = 0; q < 2 && ox + q < g->ow; q++) {    \
				float *y = yr + (ox + q) * o + ob;         \
				const __m256 *a = q ? a1 : a0;             \
				for (int v = 0; v < NV - 1; v++)           \
					_mm256_storeu_ps(y + 8 * v, a[v]); \
				_mm256_maskstore_ps(y + 8 * (NV - 1), tail, \
						    a[NV - 1]);            \
			}                                                  \
		}                                                          \
	}
THIN_FWD(1)
THIN_FWD(2)
THIN_FWD(3)
THIN_FWD(4)

/* The filter's gradient: row dyr's channels [ob, ob + 8 NV) times xr's
 * taps, added into df (K x op); M: the last vector is a part (tail). */
#define THIN_FILT(NV, M)                                                   \
	VEC_TARGET static void thin_filt_##NV##_##M(                      \
	    const Vec *T, const float *xr, const float *dyr, float *df,   \
	    int64_t ob, int last)                                          \
	{                                                                  \
		const __m256i tail = THIN_LANES(last);                     \
		const TfgConv *g = T->J->g;                                \
		const int64_t K = T->J->k, op = T->op, o = g->o;           \
		const int64_t step = g->sw * g->c;                         \
		for (int64_t t = 0; t < K; t += 2) {                       \
			const int64_t o0 = T->xoff[t];                     \
			const int64_t o1 = t + 1 < K ? T->xoff[t + 1] : o0; \
			__m256 a0[NV], a1[NV];                             \
			for (int v = 0; v < NV; v++)                       \
				a0[v] = a1[v] = _mm256_setzero_ps();       \
			for (int64_t ox = 0; ox < g->ow; ox++) {           \
				const float *p = xr + ox * step;           \
				const float *d = dyr + ox * o + ob;        \
				__m256 b0 = _mm256_broadcast_ss(p + o0);   \
				__m256 b1 = _mm256_broadcast_ss(p + o1);   \
				for (int v = 0; v < NV; v++) {             \
					__m256 e = M && v == NV - 1        \
					    ? _mm256_maskload_ps(d + 8 * v, tail) \
					    : _mm256_loadu_ps(d + 8 * v);  \
					a0[v] = _mm256_fmadd_ps(b0, e, a0[v]); \
					a1[v] = _mm256_fmadd_ps(b1, e, a1[v]); \
				}                                          \
			}                                                  \
			for (int q = 0; q < 2 && t + q < K; q++) {         \
				float *s = df + (t + q) * op + ob;         \
				const __m256 *a = q ? a1 : a0;             \
				for (int v = 0; v < NV; v++)               \
					_mm256_storeu_ps(s + 8 * v,        \
					    _mm256_add_ps(                 \
						_mm256_loadu_ps(s + 8 * v), \
						a[v]));                    \
			}                                                  \
		}                                                          \
	}
THIN_FILT(1, 0)
THIN_FILT(2, 0)
THIN_FILT(3, 0)
THIN_FILT(4, 0)
THIN_FILT(1, 1)
THIN_FILT(2, 1)
THIN_FILT(3, 1)
THIN_FILT(4, 1)

typedef void ThinFwd(const Vec *, const float *, float *, int64_t, int);
typedef void ThinFilt(const Vec *, const float *, const float *, float *,
		      int64_t, int);
static ThinFwd *const thin_fwd[4] = {thin_fwd_1, thin_fwd_2, thin_fwd_3,
				     thin_fwd_4};
static ThinFilt *const thin_filt[2][4] = {
	{thin_filt_1_0, thin_filt_2_0, thin_filt_3_0, thin_filt_4_0},
	{thin_filt_1_1, thin_filt_2_1, thin_filt_3_1, thin_filt_4_1}};

/* Block i of the rows: forward into out, the filter's gradient into
 * slab i's partial. */
VEC_TARGET static void
thin_block(const Vec *T, int64_t i)
{
	const Job *J = T->J;
	const TfgConv *g = J->g;
	int64_t r0, r1;
	/* the filter's gradient: slab i's partial (forward: unused) */
	float *df = J->kind == TFG_CONV_FILTER ? T->fp + i * J->k * T->op
					       : NULL;

	share(J, i, g->n * g->oh, &r0, &r1);
	if (df)
		memset(df, 0, (size_t)(J->k * T->op) * sizeof *df);
	for (int64_t r = r0; r < r1; r++) {
		const float *xr = thin_row(T, r);

		for (int64_t ob = 0; ob < g->o; ob += 32) {
			int64_t left = g->o - ob;
			int nv = left >= 32 ? 4 : (int)((left + 7) / 8);
			int last = left >= 8 * nv ? 8
				 : (int)(left - 8 * (nv - 1));

			if (J->kind == TFG_CONV_FORWARD)
				thin_fwd[nv - 1](T, xr,
				    (float *)J->out + r * g->ow * g->o, ob,
				    last);
			else
				thin_filt[last < 8][nv - 1](T, xr,
				    (const float *)J->b + r * g->ow * g->o,
				    df, ob, last);
		}
	}
}

/* One kernel makes both tiles: the sums of N rows (6 at most; the
 * forward's pixels, the filter gradient's taps), row r's over i < n of
 * base[r][off[i]] (a broadcast) times the 16 floats v[16 i ..] (the
 * filter's panel, or the group's packed dy), into sum[2 r] and
 * sum[2 r + 1]; the caller stores or adds them.  The twelve sums are
 * named variables in the loop: GCC keeps an array of vectors in memory
 * across it. */
#define TILE_SUMS                                                          \
	__m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, \
	       s20 = s00, s21 = s00, s30 = s00, s31 = s00, s40 = s00,      \
	       s41 = s00, s50 = s00, s51 = s00
#define TILE_EACH(N, DO)                                                   \
	DO(N, 0) DO(N, 1) DO(N, 2) DO(N, 3) DO(N, 4) DO(N, 5)
#define TILE_BASE(N, r) const float *b##r = base[N > r ? r : 0];
#define TILE_FMA(N, r)                                                     \
	if (N > r) {                                                       \
		__m256 x_ = _mm256_broadcast_ss(b##r + o);                 \
		s##r##0 = _mm256_fmadd_ps(x_, w0, s##r##0);                \
		s##r##1 = _mm256_fmadd_ps(x_, w1, s##r##1);                \
	}
#define TILE_OUT(N, r)                                                     \
	if (N > r) {                                                       \
		sum[2 * r] = s##r##0;                                      \
		sum[2 * r + 1] = s##r##1;                                  \
	}
#define TILE_RUN(N)                                                        \
	VEC_TARGET static void tile_run_##N(const float *const *base,     \
					    const int64_t *off,            \
					    const float *v, int64_t n,     \
					    __m256 *sum)                   \
	{                                                                  \
		TILE_SUMS;                                                 \
		TILE_EACH(N, TILE_BASE)                                    \
		for (int64_t i = 0; i < n; i++) {                          \
			__m256 w0 = _mm256_loadu_ps(v + 16 * i);           \
			__m256 w1 = _mm256_loadu_ps(v + 16 * i + 8);       \
			int64_t o = off[i];                                \
			TILE_EACH(N, TILE_FMA)                             \
		}                                                          \
		TILE_EACH(N, TILE_OUT)                                     \
	}
TILE_RUN(1)
TILE_RUN(2)
TILE_RUN(3)
TILE_RUN(4)
TILE_RUN(5)
TILE_RUN(6)

typedef void TileRun(const float *const *, const int64_t *, const float *,
		     int64_t, __m256 *);
static TileRun *const tile_run[TILE] = {tile_run_1, tile_run_2, tile_run_3,
					tile_run_4, tile_run_5, tile_run_6};

/* The masks of the 16 channels from ob: o - ob of them are real. */
VEC_TARGET static void
tile_masks(int64_t o, int64_t ob, __m256i *m0, __m256i *m1)
{
	int64_t left = o - ob;

	*m0 = THIN_LANES(left >= 8 ? 8 : (int)left);
	*m1 = THIN_LANES(left >= 16 ? 8 : left > 8 ? (int)(left - 8) : 0);
}

/* Forward: block i's tiles of pixels. */
VEC_TARGET static void
tile_forward(const Vec *T, int64_t i)
{
	const Job *J = T->J;
	const TfgConv *g = J->g;
	int64_t tiles = (J->rows + TILE - 1) / TILE, t0, t1;

	share(J, i, tiles, &t0, &t1);
	for (int64_t t = t0; t < t1; t++) {
		int64_t q0 = t * TILE;
		int np = J->rows - q0 < TILE ? (int)(J->rows - q0) : TILE;
		const float *px[TILE];

		for (int p = 0; p < np; p++)
			px[p] = T->xp + tile_pixel(T, q0 + p);
		for (int64_t ob = 0; ob < T->op; ob += 16) {
			__m256 sum[2 * TILE];
			__m256i m0, m1;

			tile_masks(g->o, ob, &m0, &m1);
			tile_run[np - 1](px, T->xoff, T->fp + ob * J->k, J->k,
					 sum);
			for (int p = 0; p < np; p++) {
				float *y = (float *)J->out + (q0 + p) * g->o + ob;

				_mm256_maskstore_ps(y, m0, sum[2 * p]);
				_mm256_maskstore_ps(y + 8, m1, sum[2 * p + 1]);
			}
		}
	}
}

/* The filter's gradient: slab i's pixels into its partial. */
VEC_TARGET static void
tile_filter(const Vec *T, int64_t i)
{
	const Job *J = T->J;
	const TfgConv *g = J->g;
	const int64_t K = J->k, op = T->op;
	float *df = T->fp + i * K * op;
	int64_t *poff = T->poff + i * TILE_GROUP, r0, r1;
	float *dyp = T->dyp + i * TILE_GROUP * 16;

	share(J, i, J->rows, &r0, &r1);
	memset(df, 0, (size_t)(K * op) * sizeof *df);
	for (int64_t q0 = r0; q0 < r1; q0 += TILE_GROUP) {
		int64_t np = r1 - q0 < TILE_GROUP ? r1 - q0 : TILE_GROUP;
		const float *dy = (const float *)J->b + q0 * g->o;

		for (int64_t p = 0; p < np; p++)
			poff[p] = tile_pixel(T, q0 + p);
		for (int64_t ob = 0; ob < op; ob += 16) {
			__m256i m0, m1;

			tile_masks(g->o, ob, &m0, &m1);
			for (int64_t p = 0; p < np; p++) {
				const float *d = dy + p * g->o + ob;

				_mm256_storeu_ps(dyp + 16 * p,
						 _mm256_maskload_ps(d, m0));
				_mm256_storeu_ps(dyp + 16 * p + 8,
						 _mm256_maskload_ps(d + 8, m1));
			}
			for (int64_t k = 0; k < K; k += TILE) {
				int nq = K - k < TILE ? (int)(K - k) : TILE;
				const float *qx[TILE];
				__m256 sum[2 * TILE];

				for (int q = 0; q < nq; q++)
					qx[q] = T->xp + T->xoff[k + q];
				tile_run[nq - 1](qx, poff, dyp, np, sum);
				for (int q = 0; q < nq; q++) {
					float *d = df + (k + q) * op + ob;

					_mm256_storeu_ps(d, _mm256_add_ps(
					    _mm256_loadu_ps(d), sum[2 * q]));
					_mm256_storeu_ps(d + 8, _mm256_add_ps(
					    _mm256_loadu_ps(d + 8),
					    sum[2 * q + 1]));
				}
			}
		}
	}
}

static void
vec_blocks(void *const *bases, int64_t b, int64_t e)
{
	const Vec *T = bases[0];

	for (int64_t i = b; i < e; i++)
		if (T->thin)
			thin_block(T, i);
		else if (T->J->kind == TFG_CONV_FORWARD)
			tile_forward(T, i);
		else
			tile_filter(T, i);
}

/* Images [b, e) of the input into xp, its padding zeros. */
static void
vec_pad(void *const *bases, int64_t b, int64_t e)
{
	const Vec *T = bases[0];
	const TfgConv *g = T->J->g;
	const float *x = (const float *)T->J->a;
	/* the input's columns [x0, x1) land at [x0 + pl, x1 + pl) in xp */
	int64_t x0 = g->pl < 0 ? -g->pl : 0;
	int64_t x1 = T->wp - g->pl < g->w ? T->wp - g->pl : g->w;
	size_t c = (size_t)g->c * sizeof(float);

	if (x1 < x0)
		x1 = x0;
	for (int64_t img = b; img < e; img++)
		for (int64_t yy = 0; yy < T->hp; yy++) {
			char *d = (char *)(T->xp + (img * T->hp + yy) *
						       T->wp * g->c);
			int64_t y = yy - g->pt;

			if (y < 0 || y >= g->h || x0 == x1) {
				memset(d, 0, (size_t)T->wp * c);
				continue;
			}
			memset(d, 0, (size_t)(x0 + g->pl) * c);
			memcpy(d + (size_t)(x0 + g->pl) * c,
			       x + ((img * g->h + y) * g->w + x0) * g->c,
			       (size_t)(x1 - x0) * c);
			memset(d + (size_t)(x1 + g->pl) * c, 0,
			       (size_t)(T->wp - x1 - g->pl) * c);
		}
}

/* Taps [b, e) of the filter's gradient: the slabs' partials in order. */
static void
vec_sum(void *const *bases, int64_t b, int64_t e)
{
	const Vec *T = bases[0];
	const Job *J = T->J;
	int64_t o = J->g->o, slab = J->k * T->op;

	for (int64_t t = b; t < e; t++) {
		float *d = (float *)J->out + t * o;

		memcpy(d, T->fp + t * T->op, (size_t)o * sizeof *d);
		for (int64_t p = 1; p < J->parts; p++) {
			const float *s = T->fp + p * slab + t * T->op;

			for (int64_t u = 0; u < o; u++)
				d[u] += s[u];
		}
	}
}

/* Takes J if the host has AVX2 and FMA and J is an f32 forward
 * convolution or filter gradient: 1 when done, 0 when not or the
 * scratch could not be had. */
static int
vec(const Job *J)
{
	const TfgConv *g = J->g;
	const int64_t K = J->k;
	Job R = *J;
	Vec T = {&R, K <= THIN_K, NULL, NULL, 0, 0, 0, NULL, NULL, NULL};
	int64_t units, slab;
	void *base = &T;
	int done = 0, group;

	if (J->dtype != TFG_F32 || g->depthwise || J->kind == TFG_CONV_INPUT ||
	    rt_conv_direct || rt_conv_gemm ||
	    !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return 0;
	T.hp = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
	T.wp = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
	T.op = T.thin ? (g->o + 7) / 8 * 8 : (g->o + 15) / 16 * 16;
	/* thin: output rows; tiled: pixels, forward in tiles */
	units = T.thin ? g->n * g->oh
	      : J->kind == TFG_CONV_FORWARD ? (J->rows + TILE - 1) / TILE
					    : J->rows;
	R.parts = J->kind == TFG_CONV_FILTER
		? (units < SLABS_MAX ? units : SLABS_MAX)
		: rt_pool_threads(units);
	group = !T.thin && J->kind == TFG_CONV_FILTER;
	slab = K * T.op;
	T.xp = malloc((size_t)(g->n * T.hp * T.wp * g->c) * sizeof(float));
	T.fp = malloc((size_t)(J->kind == TFG_CONV_FILTER ? R.parts : 1) *
		      (size_t)slab * sizeof(float));
	T.xoff = malloc((size_t)K * sizeof *T.xoff);
	if (group) {
		T.poff = malloc((size_t)(R.parts * TILE_GROUP) *
				sizeof *T.poff);
		T.dyp = malloc((size_t)(R.parts * TILE_GROUP * 16) *
			       sizeof *T.dyp);
	}
	if (T.xp && T.fp && T.xoff && (!group || (T.poff && T.dyp))) {
		const float *f = (const float *)J->b;

		tfg_rt_parallel(vec_pad, &base, g->n);
		for (int64_t i = 0, t = 0; i < g->kh; i++)
			for (int64_t j = 0; j < g->kw; j++)
				for (int64_t z = 0; z < g->c; z++)
					T.xoff[t++] = (i * g->dh * T.wp +
						       j * g->dw) * g->c + z;
		if (J->kind == TFG_CONV_FORWARD && T.thin)
			for (int64_t t = 0; t < K; t++) {
				memcpy(T.fp + t * T.op, f + t * g->o,
				       (size_t)g->o * sizeof(float));
				memset(T.fp + t * T.op + g->o, 0,
				       (size_t)(T.op - g->o) * sizeof(float));
			}
		else if (J->kind == TFG_CONV_FORWARD)
			for (int64_t ob = 0; ob < T.op; ob += 16)
				for (int64_t t = 0; t < K; t++)
					for (int64_t u = 0; u < 16; u++)
						T.fp[ob * K + t * 16 + u] =
						    ob + u < g->o
							? f[t * g->o + ob + u]
							: 0;
		if (R.parts > 1)
			tfg_rt_parallel(vec_blocks, &base, R.parts);
		else
			vec_blocks(&base, 0, 1);
		if (J->kind == TFG_CONV_FILTER)
			tfg_rt_parallel(vec_sum, &base, K);
		done = 1;
	}
	free(T.xp);
	free(T.fp);
	free(T.xoff);
	free(T.poff);
	free(T.dyp);
	return done;
}
#else
static int
vec(const Job *J)
{
	(void)J;
	return 0;
}
#endif

/* Block i's chunks: whole chunks at fixed rows, so that every GEMM
 * call has the same rows however many blocks there are. */
static void
forward(const Job *J, int64_t i)
{
	int64_t u0, u1, r0, r1;

	share(J, i, (J->rows + J->chunk - 1) / J->chunk, &u0, &u1);
	r0 = u0 * J->chunk;
	r1 = u1 * J->chunk < J->rows ? u1 * J->chunk : J->rows;
	if (J->direct) {
		memset(J->out + (size_t)(r0 * J->oc) * J->sz, 0,
		       (size_t)((r1 - r0) * J->oc) * J->sz);
		direct(J, r0, r1 - r0, NULL);
		return;
	}
	for (int64_t r = r0; r < r1; r += J->chunk) {
		int64_t m = r1 - r < J->chunk ? r1 - r : J->chunk;
		char *col = J->work + J->per * (size_t)i;

		im2col(J, r, m, col);
		rt_gemm_here(J->dtype, 0, m, J->oc, J->k, 1.0, col, J->k,
			     J->b, J->oc, 0.0,
			     J->out + (size_t)(r * J->oc) * J->sz, J->oc);
	}
}

/* Images per group of the input's gradient: as many whole images as a
 * chunk holds, or one, cut into chunks from its first row. */
static int64_t
group(const Job *J)
{
	int64_t per = J->g->oh * J->g->ow;

	return J->chunk >= per ? J->chunk / per : 1;
}

/* Block i's groups of images, each its chunks from its first row. */
static void
input(const Job *J, int64_t i)
{
	const TfgConv *g = J->g;
	int64_t per = g->oh * g->ow, G = group(J), g0, g1, n0, n1;

	share(J, i, (g->n + G - 1) / G, &g0, &g1);
	n0 = g0 * G;
	n1 = g1 * G < g->n ? g1 * G : g->n;
	memset(J->out + (size_t)(n0 * g->h * g->w * g->c) * J->sz, 0,
	       (size_t)((n1 - n0) * g->h * g->w * g->c) * J->sz);
	if (J->direct) {
		direct(J, n0 * per, (n1 - n0) * per, NULL);
		return;
	}
	for (int64_t s = n0; s < n1; s += G) {
		int64_t e = (s + G < n1 ? s + G : n1) * per;

		for (int64_t r = s * per; r < e; r += J->chunk) {
			int64_t m = e - r < J->chunk ? e - r : J->chunk;
			char *col = J->work + J->per * (size_t)i;

			rt_gemm_here(J->dtype, 2, m, J->k, J->oc, 1.0,
				     J->a + (size_t)(r * J->oc) * J->sz,
				     J->oc, J->b, J->oc, 0.0, col, J->k);
			col2im(J, r, m, col);
		}
	}
}

/* Slab i of the filter's gradient into its partial: slab 0's is out,
 * the others' follow their chunk scratch in the block's work. */
static void
filter(const Job *J, int64_t i)
{
	int64_t r0, r1;
	size_t fbytes = (size_t)(J->k * J->g->o) * J->sz;
	char *w = J->work ? J->work + J->per * (size_t)i : NULL;
	char *df = i == 0 ? J->out
		 : w + (J->direct ? 0 : (size_t)J->chunk * (size_t)J->k * J->sz);

	share(J, i, J->rows, &r0, &r1);
	memset(df, 0, fbytes);
	if (J->direct) {
		direct(J, r0, r1 - r0, df);
		return;
	}
	for (int64_t r = r0; r < r1; r += J->chunk) {
		int64_t m = r1 - r < J->chunk ? r1 - r : J->chunk;

		im2col(J, r, m, w);
		rt_gemm_here(J->dtype, 1, J->k, J->oc, m, 1.0, w, J->k,
			     J->b + (size_t)(r * J->oc) * J->sz, J->oc, 1.0,
			     df, J->oc);
	}
}

/* Blocks [b, e) of the job at bases[0] (a TfgKernelFn). */
static void
blocks(void *const *bases, int64_t b, int64_t e)
{
	const Job *J = bases[0];

	for (int64_t i = b; i < e; i++)
		if (J->kind == TFG_CONV_FORWARD)
			forward(J, i);
		else if (J->kind == TFG_CONV_INPUT)
			input(J, i);
		else
			filter(J, i);
}

/* The 1 x 1 convolution as one product over the pool: P is the input. */
static void
pointwise(const Job *J)
{
	const TfgConv *g = J->g;

	if (J->kind == TFG_CONV_FORWARD)
		tfg_rt_gemm(J->dtype, 0, J->rows, J->oc, g->c, 1.0, J->a, g->c,
			    J->b, J->oc, 0.0, J->out, J->oc);
	else if (J->kind == TFG_CONV_INPUT)
		tfg_rt_gemm(J->dtype, 2, J->rows, g->c, J->oc, 1.0, J->a,
			    J->oc, J->b, J->oc, 0.0, J->out, g->c);
	else
		tfg_rt_gemm(J->dtype, 1, g->c, J->oc, J->rows, 1.0, J->a, g->c,
			    J->b, J->oc, 0.0, J->out, J->oc);
}

/* The input's gradient of a convolution of stride 1 as a forward one:
 * dx[iy] takes dy[oy] f[i] where oy = iy + pt - i dh, which with the
 * taps reversed (i' = kh - 1 - i) is a convolution of dy by the filter
 * turned half a turn, its channels swapped, padded (kh - 1) dh - pt
 * before.  The forward path is faster than a product and col2im's
 * scattered sums.  0 if the reversed filter could not be had. */
static int
input_as_forward(const TfgConv *g, int32_t dtype, const void *dy,
		 const void *f, void *dx)
{
	size_t sz = dtype == TFG_F32 ? 4 : 8;
	int64_t taps = g->kh * g->kw;
	char *r = malloc((size_t)(taps * g->c * g->o) * sz);
	TfgConv t = {g->n, g->oh, g->ow, g->o, g->kh, g->kw, g->c, g->h,
		     g->w, 1, 1, g->dh, g->dw, (g->kh - 1) * g->dh - g->pt,
		     (g->kw - 1) * g->dw - g->pl, 0};

	if (!r)
		return 0;
	for (int64_t p = 0; p < taps; p++)
		for (int64_t z = 0; z < g->c; z++)
			for (int64_t u = 0; u < g->o; u++)
				memcpy(r + (size_t)((p * g->o + u) * g->c +
						    z) * sz,
				       (const char *)f +
					   (size_t)(((taps - 1 - p) * g->c +
						     z) * g->o + u) * sz,
				       sz);
	tfg_rt_conv2d(TFG_CONV_FORWARD, dtype, &t, dy, r, dx);
	free(r);
	return 1;
}

TFG_API void
tfg_rt_conv2d(int32_t kind, int32_t dtype, const TfgConv *g, const void *a,
	      const void *b, void *out)
{
	Job J = {kind, dtype, g, a, b, out, dtype == TFG_F32 ? 4 : 8,
		 g->kh * g->kw * g->c, g->depthwise ? g->c * g->o : g->o,
		 g->n * g->oh * g->ow, 1, 1, 0, NULL, 0};
	int64_t nchunk, units;
	size_t fbytes = (size_t)(J.k * g->o) * J.sz; /* the filter */
	void *base = &J;

	if (J.rows == 0 || J.k == 0 || J.oc == 0) {
		if (kind == TFG_CONV_INPUT)
			memset(out, 0, (size_t)(g->n * g->h * g->w * g->c) *
					   J.sz);
		else if (kind == TFG_CONV_FILTER)
			memset(out, 0, fbytes);
		return;
	}
	if (one_by_one(g) && !rt_conv_direct) {
		pointwise(&J);
		return;
	}
	if (vec(&J))
		return;
	if (kind == TFG_CONV_INPUT && g->sh == 1 && g->sw == 1 &&
	    !g->depthwise && !rt_conv_direct &&
	    input_as_forward(g, dtype, a, b, out))
		return;
	J.direct = g->depthwise || rt_conv_direct;
	J.chunk = (rt_conv_chunk ? rt_conv_chunk : CHUNK_BYTES) /
		  ((size_t)J.k * J.sz);
	J.chunk = J.chunk < 1 ? 1 : J.chunk;
	nchunk = (J.rows + J.chunk - 1) / J.chunk;
	/* blocks: the pool's threads (forward, input), or slabs fixed by
	   the shape (filter) */
	units = kind == TFG_CONV_INPUT ? (g->n + group(&J) - 1) / group(&J)
				       : nchunk;
	if (kind == TFG_CONV_FILTER)
		J.parts = units < SLABS_MAX ? units : SLABS_MAX;
	else
		J.parts = rt_pool_threads(units);
	if (!J.direct)
		J.per = (size_t)J.chunk * (size_t)J.k * J.sz;
	if (kind == TFG_CONV_FILTER)
		J.per += fbytes;
	if (J.per && !(J.work = malloc(J.per * (size_t)J.parts))) {
		/* the direct loops need no scratch but the partials: one
		   slab into out */
		J.direct = 1;
		J.parts = kind == TFG_CONV_FILTER ? 1 : J.parts;
		J.per = 0;
	}
	if (J.parts > 1)
		tfg_rt_parallel(blocks, &base, J.parts);
	else
		blocks(&base, 0, 1);
	if (kind == TFG_CONV_FILTER)
		for (int64_t s = 1; s < J.parts; s++) {
			const char *p = J.work + J.per * (size_t)s +
					(J.direct ? 0 : (size_t)J.chunk *
						  (size_t)J.k * J.sz);
			int64_t n = J.k * g->o;

			if (dtype == TFG_F32)
				for (int64_t z = 0; z < n; z++)
					((float *)out)[z] +=
					    ((const float *)p)[z];
			else
				for (int64_t z = 0; z < n; z++)
					((double *)out)[z] +=
					    ((const double *)p)[z];
		}
	free(J.work);
}

/* ---------------------------------------------------------------- pools */

/* The window of output row y (column x) inside the input: [*b, *e). */
static void
window(int64_t y, int64_t s, int64_t p, int64_t k, int64_t len, int64_t *b,
       int64_t *e)
{
	int64_t lo = y * s - p;

	*b = lo < 0 ? 0 : lo;
	*e = lo + k < len ? lo + k : len;
}

/* Output rows [r0, r1) (of n * oh) of a max or an average pool: each
 * output pixel's channels start as its window's first element, then take
 * the others', a channel at a time (a loop the compiler vectorises).  A
 * NaN is the maximum of its window (v != v). */
#define POOL_FWD(T)                                                        \
	static void fwd_##T(int32_t kind, const TfgConv *g, const T *x,    \
			    T *out, int64_t r0, int64_t r1)                \
	{                                                                  \
		int64_t c = g->c, y0, y1, x0, x1;                          \
		for (int64_t r = r0; r < r1; r++)                          \
		for (int64_t ox = 0; ox < g->ow; ox++) {                   \
			T *o = out + (r * g->ow + ox) * c;                 \
			const T *img = x + r / g->oh * g->h * g->w * c;    \
			window(r % g->oh, g->sh, g->pt, g->kh, g->h, &y0,  \
			       &y1);                                       \
			window(ox, g->sw, g->pl, g->kw, g->w, &x0, &x1);   \
			memcpy(o, img + (y0 * g->w + x0) * c,              \
			       (size_t)c * sizeof(T));                     \
			for (int64_t iy = y0; iy < y1; iy++)               \
			for (int64_t ix = x0; ix < x1; ix++) {             \
				const T *v = img + (iy * g->w + ix) * c;   \
				if (iy == y0 && ix == x0)                  \
					continue;                          \
				if (kind == TFG_POOL_MAX)                  \
					for (int64_t z = 0; z < c; z++)    \
						o[z] = v[z] > o[z] ||      \
						       v[z] != v[z]        \
						       ? v[z] : o[z];      \
				else                                       \
					for (int64_t z = 0; z < c; z++)    \
						o[z] += v[z];              \
			}                                                  \
			if (kind == TFG_POOL_AVG)                          \
				for (int64_t z = 0; z < c; z++)            \
					o[z] /= (T)((y1 - y0) * (x1 - x0));\
		}                                                          \
	}

#ifdef __SSE2__
/* The channels of one f32 window 4 at a time, as max_grad_float's loop
 * below, its selects as SSE2 masks (the compiler does not vectorise
 * them): the first one not done. */
static int64_t
max_grad_sse(const TfgConv *g, const float *xi, const float *d, float *dx,
	     int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t z0,
	     int64_t n)
{
	int64_t c = g->c, z = z0;

	if (g->h * g->w > INT32_MAX)
		return z0;
	for (; z + 4 <= z0 + n; z += 4) {
		int64_t first = y0 * g->w + x0;
		__m128 m = _mm_loadu_ps(xi + first * c + z);
		__m128i at = _mm_set1_epi32((int)first);
		int32_t a[4];

		for (int64_t iy = y0; iy < y1; iy++)
			for (int64_t ix = x0; ix < x1; ix++) {
				int64_t q = iy * g->w + ix;
				__m128 v = _mm_loadu_ps(xi + q * c + z);
				__m128 up = _mm_and_ps(_mm_cmpord_ps(m, m),
					_mm_or_ps(_mm_cmpgt_ps(v, m),
						  _mm_cmpunord_ps(v, v)));
				__m128i u = _mm_castps_si128(up);

				m = _mm_or_ps(_mm_and_ps(up, v),
					      _mm_andnot_ps(up, m));
				at = _mm_or_si128(
				    _mm_and_si128(u, _mm_set1_epi32((int)q)),
				    _mm_andnot_si128(u, at));
			}
		_mm_storeu_si128((__m128i *)(void *)a, at);
		for (int k = 0; k < 4; k++)
			dx[a[k] * c + z + k] += d[z + k];
	}
	return z;
}
#define MAX_GRAD_VEC_float max_grad_sse
#else
#define MAX_GRAD_VEC_float(g, xi, d, dx, y0, y1, x0, x1, z0, n) (z0)
#endif
#define MAX_GRAD_VEC_double(g, xi, d, dx, y0, y1, x0, x1, z0, n) (z0)
#define MAX_GRAD_VEC_int32_t(g, xi, d, dx, y0, y1, x0, x1, z0, n) (z0)
#define MAX_GRAD_VEC_int64_t(g, xi, d, dx, y0, y1, x0, x1, z0, n) (z0)

/* A max pool's gradient of one window, channels [z0, z0 + n): each
 * channel's first maximum (its first NaN, if any) found without a branch
 * on the data (selects: random data mispredicts half the branches), then
 * given d. */
#define POOL_CH 64
#define MAX_GRAD(T)                                                        \
	static void max_grad_##T(const TfgConv *g, const T *xi,            \
				 const T *d, T *dx, int64_t y0, int64_t y1,\
				 int64_t x0, int64_t x1, int64_t z0,       \
				 int64_t n)                                \
	{                                                                  \
		int64_t c = g->c, e = z0 + n;                              \
		z0 = MAX_GRAD_VEC_##T(g, xi, d, dx, y0, y1, x0, x1, z0, n);\
		for (int64_t z = z0; z < e; z++) {                         \
			int64_t at = y0 * g->w + x0;                       \
			T m = xi[at * c + z];                              \
			for (int64_t iy = y0; iy < y1; iy++)               \
			for (int64_t ix = x0; ix < x1; ix++) {             \
				int64_t q = iy * g->w + ix;                \
				T v = xi[q * c + z];                       \
				int up = (m == m) & ((v > m) | (v != v));  \
				m = up ? v : m;                            \
				at = up ? q : at;                          \
			}                                                  \
			dx[at * c + z] += d[z];                            \
		}                                                          \
	}
MAX_GRAD(float)
MAX_GRAD(double)
MAX_GRAD(int32_t)
MAX_GRAD(int64_t)

/* The input's gradient of images [i0, i1): each output pixel's gradient
 * added to its window's first maximum (the first NaN, if any), or spread
 * over its window. */
#define POOL_BWD(T)                                                        \
	static void bwd_##T(int32_t kind, const TfgConv *g, const T *x,    \
			    const T *dy, T *out, int64_t i0, int64_t i1)   \
	{                                                                  \
		int64_t c = g->c, hw = g->h * g->w, y0, y1, x0, x1;        \
		memset(out + i0 * hw * c, 0,                               \
		       (size_t)((i1 - i0) * hw * c) * sizeof(T));          \
		for (int64_t i = i0; i < i1; i++)                          \
		for (int64_t oy = 0; oy < g->oh; oy++)                     \
		for (int64_t ox = 0; ox < g->ow; ox++) {                   \
			const T *d = dy + ((i * g->oh + oy) * g->ow + ox) *\
					  c;                               \
			T *dx = out + i * hw * c;                          \
			window(oy, g->sh, g->pt, g->kh, g->h, &y0, &y1);   \
			window(ox, g->sw, g->pl, g->kw, g->w, &x0, &x1);   \
			if (kind == TFG_POOL_AVG_GRAD) {                   \
				T n = (T)((y1 - y0) * (x1 - x0));          \
				for (int64_t iy = y0; iy < y1; iy++)       \
				for (int64_t ix = x0; ix < x1; ix++)       \
				for (int64_t z = 0; z < c; z++)            \
					dx[(iy * g->w + ix) * c + z] +=    \
					    d[z] / n;                      \
				continue;                                  \
			}                                                  \
			for (int64_t z0 = 0; z0 < c; z0 += POOL_CH)        \
				max_grad_##T(g, x + i * hw * c, d, dx, y0, \
					     y1, x0, x1, z0,               \
					     c - z0 < POOL_CH ? c - z0     \
							      : POOL_CH);  \
		}                                                          \
	}

POOL_FWD(float)
POOL_FWD(double)
POOL_FWD(int32_t)
POOL_FWD(int64_t)
POOL_BWD(float)
POOL_BWD(double)
POOL_BWD(int32_t)
POOL_BWD(int64_t)

typedef struct PoolJob {
	int32_t kind, dtype;
	const TfgConv *g;
	const void *a, *b;
	void *out;
	int64_t units, parts;
} PoolJob;

static void
pool_blocks(void *const *bases, int64_t b, int64_t e)
{
	const PoolJob *J = bases[0];

	for (int64_t i = b; i < e; i++) {
		int64_t r0 = J->units * i / J->parts;
		int64_t r1 = J->units * (i + 1) / J->parts;
		const void *x = J->kind == TFG_POOL_AVG_GRAD ? NULL : J->a;
		const void *dy = J->kind == TFG_POOL_AVG_GRAD ? J->a : J->b;
		int fwd = J->kind == TFG_POOL_MAX || J->kind == TFG_POOL_AVG;

#define POOL_CALL(T)                                                       \
	(fwd ? fwd_##T(J->kind, J->g, x, J->out, r0, r1)                   \
	     : bwd_##T(J->kind, J->g, x, dy, J->out, r0, r1))
		switch (J->dtype) {
		case TFG_F32:
			POOL_CALL(float);
			break;
		case TFG_F64:
			POOL_CALL(double);
			break;
		case TFG_I32:
			POOL_CALL(int32_t);
			break;
		default:
			POOL_CALL(int64_t);
			break;
		}
#undef POOL_CALL
	}
}

TFG_API void
tfg_rt_pool2d(int32_t kind, int32_t dtype, const TfgConv *g, const void *a,
	      const void *b, void *out)
{
	PoolJob J = {kind, dtype, g, a, b, out, 0, 1};
	void *base = &J;

	/* rows of the output, or images of the input's gradient (windows
	   overlap within an image, never across) */
	J.units = kind == TFG_POOL_MAX || kind == TFG_POOL_AVG
		  ? g->n * g->oh : g->n;
	if (J.units == 0)
		return;
	J.parts = rt_pool_threads(J.units);
	if (J.parts > 1 && (double)J.units * (double)(g->h * g->w * g->c) /
				   (double)(kind < TFG_POOL_MAX_GRAD ? g->oh : 1)
			   < 1 << 15)
		J.parts = 1; /* too little to wake the pool for */
	if (J.parts > 1)
		tfg_rt_parallel(pool_blocks, &base, J.parts);
	else
		pool_blocks(&base, 0, 1);
}
