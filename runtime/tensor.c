/*
 * runtime/tensor.c: dtypes, shapes and dense tensors (RtTensor).
 *
 * A tensor is one header plus one data block.  The data is 64-byte aligned
 * (aligned_alloc, the size rounded up to a multiple of 64) so generated
 * code may use aligned vector loads; an empty tensor still gets a valid
 * (64-byte) block, so `data` is never NULL.  Sizes are checked for
 * overflow before anything is allocated.
 *
 * A string tensor is its records then its text (tfg.h); the records are
 * read with memcpy, so buffers need no alignment, and every read is
 * bounds-checked, since buffers also come off the wire.
 *
 * rt_tensor_convert is a feed's conversion to its input's dtype: one
 * loop per pair of dtypes (the macros below write them), so that the
 * test of each element is a comparison or two, not a switch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"
#include "runtime/tfg.h"

#define RT_ALIGN 64

static const char *const dtype_names[TFG__NDTYPE] = {
	[TFG_BOOL] = "bool", [TFG_I32] = "i32", [TFG_I64] = "i64",
	[TFG_F32] = "f32",   [TFG_F64] = "f64", [TFG_STRING] = "string",
	[TFG_U8] = "u8",
};

static const size_t dtype_sizes[TFG__NDTYPE] = {
	[TFG_BOOL] = 1, [TFG_I32] = 4, [TFG_I64] = 8,
	[TFG_F32] = 4,  [TFG_F64] = 8, [TFG_STRING] = TFG_STRING_RECORD,
	[TFG_U8] = 1,
};

TFG_API const char *
tfg_dtype_name(TfgDtype t)
{
	if ((int)t < 0 || t >= TFG__NDTYPE)
		return "?";
	return dtype_names[t];
}

TFG_API size_t
tfg_dtype_size(TfgDtype t)
{
	if ((int)t < 0 || t >= TFG__NDTYPE)
		return 0;
	return dtype_sizes[t];
}

/* q and r of a / b rounded toward -inf, with the divisor 1 where b is 0
 * or the quotient would overflow (MIN / -1). */
static void
int_divmod(int64_t a, int64_t b, int bits, int64_t *q, int64_t *r)
{
	int64_t min = bits == 32 ? INT32_MIN : INT64_MIN;
	int64_t d = b == 0 || (a == min && b == -1) ? 1 : b;

	*q = a / d;
	*r = a - *q * d;
	if (*r != 0 && (*r ^ b) < 0) { /* sign(r) != sign(b): one down */
		*q -= 1;
		*r += b;
	}
}

TFG_API int64_t
tfg_int_div(int64_t a, int64_t b, int bits)
{
	int64_t q, r;

	if (b == 0)
		return 0;
	int_divmod(a, b, bits, &q, &r);
	return q;
}

TFG_API int64_t
tfg_int_mod(int64_t a, int64_t b, int bits)
{
	int64_t q, r;

	int_divmod(a, b, bits, &q, &r);
	return r;
}

TFG_API int64_t
tfg_shape_numel(const TfgShape *s)
{
	int64_t n = 1;
	int over = 0;

	for (int i = 0; i < s->rank; i++) {
		if (s->dims[i] == 0)
			return 0;
		if (!over && __builtin_mul_overflow(n, s->dims[i], &n))
			over = 1;
	}
	return over ? INT64_MAX : n;
}

TFG_API int
tfg_shape_size(const TfgShape *s, TfgDtype t, int64_t *numel,
	       size_t *nbytes)
{
	uint64_t n = 1, size;
	int zero = 0;

	if ((int)t < 0 || t >= TFG__NDTYPE || s->rank < 0 ||
	    s->rank > TFG_MAX_RANK)
		return -1;
	size = dtype_sizes[t];
	/* the product of the dims, 0 counted as 1, times the size stays
	   within TFG_MAX_BYTES at every step: no multiply can wrap */
	for (int i = 0; i < s->rank; i++) {
		uint64_t d = (uint64_t)s->dims[i];

		if (s->dims[i] < 0)
			return -1;
		if (d == 0) {
			zero = 1;
			continue;
		}
		/* n * size <= TFG_MAX_BYTES, so the quotient is >= 1; a
		   product n * d could wrap (2^32 * 2^32 is 0) */
		if (d > TFG_MAX_BYTES / size / n)
			return -1;
		n *= d;
	}
	if (numel)
		*numel = zero ? 0 : (int64_t)n;
	if (nbytes)
		*nbytes = zero ? 0 : (size_t)(n * size);
	return 0;
}

TFG_API int
tfg_shape_eq(const TfgShape *a, const TfgShape *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

static char *
shape_str(char *buf, size_t n, const TfgShape *s, int q)
{
	size_t len = 0;
	int w;

	if (n == 0)
		return buf;
	buf[0] = '\0';
	w = snprintf(buf, n, "[");
	len = (size_t)w;
	for (int i = 0; i < s->rank && len < n; i++) {
		w = q && s->dims[i] < 0
			? snprintf(buf + len, n - len, "%s?", i ? ", " : "")
			: snprintf(buf + len, n - len, "%s%lld", i ? ", " : "",
				   (long long)s->dims[i]);
		len += (size_t)w;
	}
	if (len < n)
		snprintf(buf + len, n - len, "]");
	return buf;
}

TFG_API char *
tfg_shape_str(char *buf, size_t n, const TfgShape *s)
{
	return shape_str(buf, n, s, 0);
}

char *
rt_shape_str(char *buf, size_t n, const TfgShape *s)
{
	return shape_str(buf, n, s, 1);
}

tfg_status
rt_shape_nbytes(size_t *nbytes, TfgDtype t, const TfgShape *s)
{
	return tfg_shape_size(s, t, NULL, nbytes) == 0 ? TFG_OK : TFG_EINVAL;
}

static uint64_t
get_u64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

TFG_API int
tfg_string_at(const void *buf, size_t nbytes, int64_t i, const char **s,
	      size_t *len)
{
	const unsigned char *rec;
	uint64_t off, n;

	if (i < 0 || (uint64_t)i >= nbytes / TFG_STRING_RECORD)
		return -1;
	rec = (const unsigned char *)buf + (size_t)i * TFG_STRING_RECORD;
	off = get_u64(rec);
	n = get_u64(rec + 8);
	if (off > nbytes || n > nbytes - off)
		return -1;
	*s = (const char *)buf + off;
	*len = (size_t)n;
	return 0;
}

TFG_API tfg_status
tfg_string_check(const void *buf, size_t nbytes, int64_t numel)
{
	const char *s;
	size_t len;

	if (numel < 0 || (uint64_t)numel > nbytes / TFG_STRING_RECORD)
		return TFG_EINVAL;
	for (int64_t i = 0; i < numel; i++)
		if (tfg_string_at(buf, nbytes, i, &s, &len) < 0 ||
		    (size_t)(s - (const char *)buf) <
			(size_t)numel * TFG_STRING_RECORD)
			return TFG_EINVAL;
	return TFG_OK;
}

TFG_API tfg_status
rt_tensor_new(RtTensor **out, TfgDtype t, const TfgShape *s)
{
	size_t nbytes;
	tfg_status rv;

	*out = NULL;
	if ((rv = rt_shape_nbytes(&nbytes, t, s)) != TFG_OK)
		return rv;
	return rt_tensor_new_nbytes(out, t, s, nbytes);
}

tfg_status
rt_tensor_new_nbytes(RtTensor **out, TfgDtype t, const TfgShape *s,
		     size_t nbytes)
{
	RtTensor *x;
	size_t records, alloc;
	tfg_status rv;

	*out = NULL;
	if ((rv = rt_shape_nbytes(&records, t, s)) != TFG_OK)
		return rv;
	if (t == TFG_STRING ? nbytes < records : nbytes != records)
		return TFG_EINVAL;
	if (nbytes > SIZE_MAX - RT_ALIGN)
		return TFG_EINVAL;
	alloc = (nbytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
	if (alloc == 0)
		alloc = RT_ALIGN;
	if ((x = calloc(1, sizeof *x)) == NULL)
		return TFG_ENOMEM;
	if ((x->data = aligned_alloc(RT_ALIGN, alloc)) == NULL) {
		free(x);
		return TFG_ENOMEM;
	}
	x->dtype = t;
	x->shape.rank = s->rank;
	memcpy(x->shape.dims, s->dims, sizeof x->shape.dims[0] * s->rank);
	x->nbytes = nbytes;
	*out = x;
	return TFG_OK;
}

TFG_API void
rt_tensor_free(RtTensor *t)
{
	if (t == NULL)
		return;
	free(t->data);
	free(t);
}

/* ------------------------------------------------------------ conversions */

/* Whether v is in lo .. hi. */
static int
int_fits(int64_t v, int64_t lo, int64_t hi)
{
	return v >= lo && v <= hi;
}

/* Whether v truncated toward zero is in lo .. hi - 1 (lo and hi exact
 * doubles, hi one past the largest value: 2^63 is a double, 2^63 - 1 is
 * not).  NaN and the infinities never are. */
static int
float_fits(double v, double lo, double hi)
{
	double w = trunc(v);

	return w >= lo && w < hi;
}

/* Whether v rounds to a finite f32, or is not finite already: at or past
 * FLT_MAX + half an ulp it rounds to infinity. */
static int
f32_fits(double v)
{
	return !(fabs(v) >= 0x1.ffffffp127 && isfinite(v));
}

/* One loop from source type ST to destination DT: OK tests the element v,
 * VAL is what is stored. */
#define CONV_LOOP(ST, DT, OK, VAL)                                           \
	do {                                                                 \
		const ST *s_ = from->data;                                   \
		DT *d_ = to->data;                                           \
		for (int64_t i = 0; i < n; i++) {                            \
			ST v = s_[i];                                        \
			if (!(OK)) {                                         \
				*bad = i;                                    \
				goto out_of_range;                           \
			}                                                    \
			d_[i] = (DT)(VAL);                                   \
		}                                                            \
	} while (0)

/* The loops into DT from each numeric source: IOK tests an integer (or
 * bool) element, FOK a float one. */
#define CONV_FROM(DT, IOK, FOK)                                              \
	switch (from->dtype) {                                               \
	case TFG_BOOL:                                                       \
	case TFG_U8: CONV_LOOP(uint8_t, DT, IOK, v); break;                  \
	case TFG_I32: CONV_LOOP(int32_t, DT, IOK, v); break;                 \
	case TFG_I64: CONV_LOOP(int64_t, DT, IOK, v); break;                 \
	case TFG_F32: CONV_LOOP(float, DT, FOK, v); break;                   \
	default: CONV_LOOP(double, DT, FOK, v); break;                       \
	}

int
rt_dtype_converts(TfgDtype from, TfgDtype to)
{
	return (int)from >= 0 && from < TFG__NDTYPE && (int)to >= 0 &&
	       to < TFG__NDTYPE && from != TFG_STRING && to != TFG_STRING;
}

tfg_status
rt_tensor_convert(RtTensor **out, const RtTensor *from, TfgDtype t,
		  int64_t *bad)
{
	int64_t n = tfg_shape_numel(&from->shape);
	RtTensor *to;
	tfg_status rv;

	*out = NULL;
	*bad = -1;
	if (!rt_dtype_converts(from->dtype, t))
		return TFG_EDTYPE;
	if ((rv = rt_tensor_new(&to, t, &from->shape)) != TFG_OK)
		/* an empty tensor of a shape too large for t's elements */
		return rv == TFG_EINVAL ? TFG_ETOOBIG : rv;
	if (from->dtype == t) {
		memcpy(to->data, from->data, to->nbytes);
		*out = to;
		return TFG_OK;
	}
	switch (t) {
	case TFG_BOOL: /* 0 and 1 only: NumPy's "nonzero is true" would
			  make 2 and 0.5 true, and nothing can tell */
		CONV_FROM(uint8_t, int_fits(v, 0, 1), v == 0 || v == 1);
		break;
	case TFG_U8:
		CONV_FROM(uint8_t, int_fits(v, 0, UINT8_MAX),
			  float_fits(v, 0, 0x1p8));
		break;
	case TFG_I32:
		CONV_FROM(int32_t, int_fits(v, INT32_MIN, INT32_MAX),
			  float_fits(v, -0x1p31, 0x1p31));
		break;
	case TFG_I64:
		CONV_FROM(int64_t, 1, float_fits(v, -0x1p63, 0x1p63));
		break;
	case TFG_F32:
		CONV_FROM(float, 1, f32_fits(v));
		break;
	default:
		CONV_FROM(double, 1, 1);
		break;
	}
	*out = to;
	return TFG_OK;
out_of_range:
	rt_tensor_free(to);
	return TFG_EINVAL;
}

#undef CONV_FROM
#undef CONV_LOOP
