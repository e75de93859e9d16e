/*
 * tests/unit/tensor_test.c: dtypes, shapes, tensor allocation and the
 * status strings, a feed's dtype conversions (runtime/tensor.c,
 * runtime/status.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"
#include "runtime/tfg.h"
#include "tests/unit/test.h"

static TfgShape
shape(int rank, int64_t a, int64_t b, int64_t c)
{
	TfgShape s = {rank, {a, b, c}};

	return s;
}

static void
t_dtype(void)
{
	ASSERT_STREQ(tfg_dtype_name(TFG_BOOL), "bool");
	ASSERT_STREQ(tfg_dtype_name(TFG_I32), "i32");
	ASSERT_STREQ(tfg_dtype_name(TFG_I64), "i64");
	ASSERT_STREQ(tfg_dtype_name(TFG_F32), "f32");
	ASSERT_STREQ(tfg_dtype_name(TFG_F64), "f64");
	ASSERT_EQ(tfg_dtype_size(TFG_BOOL), 1);
	ASSERT_EQ(tfg_dtype_size(TFG_I32), 4);
	ASSERT_EQ(tfg_dtype_size(TFG_I64), 8);
	ASSERT_EQ(tfg_dtype_size(TFG_F32), 4);
	ASSERT_EQ(tfg_dtype_size(TFG_F64), 8);
}

static void
t_shape(void)
{
	TfgShape a = shape(2, 2, 3, 0), b = shape(2, 2, 3, 7);
	TfgShape s0 = shape(0, 0, 0, 0), e = shape(3, 4, 0, 5);
	char buf[64];

	ASSERT_EQ(tfg_shape_numel(&a), 6);
	ASSERT_EQ(tfg_shape_numel(&s0), 1);
	ASSERT_EQ(tfg_shape_numel(&e), 0);
	ASSERT(tfg_shape_eq(&a, &b)); /* dims past the rank don't count */
	ASSERT(!tfg_shape_eq(&a, &e));
	b.dims[1] = 4;
	ASSERT(!tfg_shape_eq(&a, &b));
	ASSERT_STREQ(tfg_shape_str(buf, sizeof buf, &a), "[2, 3]");
	ASSERT_STREQ(tfg_shape_str(buf, sizeof buf, &s0), "[]");
	ASSERT_STREQ(tfg_shape_str(buf, sizeof buf, &e), "[4, 0, 5]");
	/* truncation stays NUL-terminated */
	ASSERT_STREQ(tfg_shape_str(buf, 4, &e), "[4,");
}

static void
t_new(void)
{
	RtTensor *t;
	TfgShape s = shape(2, 3, 5, 0);

	ASSERT_EQ(rt_tensor_new(&t, TFG_F64, &s), TFG_OK);
	ASSERT(t != NULL);
	ASSERT_EQ(t->dtype, TFG_F64);
	ASSERT(tfg_shape_eq(&t->shape, &s));
	ASSERT_EQ(t->nbytes, 120);
	ASSERT_EQ((uintptr_t)t->data % 64, 0);
	memset(t->data, 0xab, t->nbytes);
	rt_tensor_free(t);

	s = shape(0, 0, 0, 0);
	ASSERT_EQ(rt_tensor_new(&t, TFG_BOOL, &s), TFG_OK);
	ASSERT_EQ(t->nbytes, 1);
	rt_tensor_free(t);

	s = shape(3, 2, 0, 9);
	ASSERT_EQ(rt_tensor_new(&t, TFG_I32, &s), TFG_OK);
	ASSERT_EQ(t->nbytes, 0);
	ASSERT(t->data != NULL);
	rt_tensor_free(t);
	rt_tensor_free(NULL);
}

static void
t_new_invalid(void)
{
	RtTensor *t = (RtTensor *)&t;
	TfgShape s = shape(2, 3, -1, 0);
	size_t n;

	ASSERT_EQ(rt_tensor_new(&t, TFG_F32, &s), TFG_EINVAL);
	ASSERT(t == NULL);
	s = shape(2, INT64_MAX / 2, 3, 0);
	ASSERT_EQ(rt_tensor_new(&t, TFG_F32, &s), TFG_EINVAL);
	s = shape(3, (int64_t)1 << 31, (int64_t)1 << 31, 4);
	ASSERT_EQ(rt_tensor_new(&t, TFG_BOOL, &s), TFG_EINVAL);
	s = shape(1, INT64_MAX / 4, 0, 0); /* numel fits, bytes do not */
	ASSERT_EQ(rt_tensor_new(&t, TFG_F64, &s), TFG_EINVAL);
	s.rank = TFG_MAX_RANK + 1;
	ASSERT_EQ(rt_tensor_new(&t, TFG_F64, &s), TFG_EINVAL);
	s = shape(2, 3, 4, 0);
	ASSERT_EQ(rt_tensor_new(&t, (TfgDtype)99, &s), TFG_EINVAL);
	/* a zero dim does not make any other size fine (spec §5.1 "Dtypes") */
	s = shape(3, INT64_MAX, 0, INT64_MAX);
	ASSERT_EQ(rt_shape_nbytes(&n, TFG_F64, &s), TFG_EINVAL);
	s = shape(3, 1000, 0, 1000);
	ASSERT_EQ(rt_shape_nbytes(&n, TFG_F64, &s), TFG_OK);
	ASSERT_EQ(n, 0);
}

static void
t_status(void)
{
	TfgError e;

	ASSERT_STREQ(tfg_strerror(TFG_OK), "ok");
	ASSERT_STREQ(tfg_strerror(TFG_ENOMEM), "out of memory");
	ASSERT_STREQ(tfg_strerror(TFG_ENOENT), "no such file");
	ASSERT_STREQ(tfg_strerror(TFG_ECANCELED), "canceled");
	ASSERT_STREQ(tfg_strerror(TFG__NSTATUS), "unknown status");
	for (int s = 0; s < TFG__NSTATUS; s++)
		ASSERT(tfg_strerror((tfg_status)s) != NULL);
	ASSERT_EQ(tfg_error(&e, TFG_EIO, "%s: %d", "x.npy", 42), TFG_EIO);
	ASSERT_EQ(e.code, TFG_EIO);
	ASSERT_STREQ(e.msg, "x.npy: 42");
	ASSERT_EQ(tfg_error(NULL, TFG_ESHAPE, "ignored"), TFG_ESHAPE);
}

static void
put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* String buffers (runtime/tfg.h): records {offset, length} then text. */
static void
t_string(void)
{
	unsigned char b[2 * TFG_STRING_RECORD + 5];
	TfgShape s = shape(1, 2, 0, 0);
	RtTensor *t;
	const char *p;
	size_t len, n;

	ASSERT_STREQ(tfg_dtype_name(TFG_STRING), "string");
	ASSERT_EQ(tfg_dtype_size(TFG_STRING), TFG_STRING_RECORD);
	put_u64(b, 32), put_u64(b + 8, 2);
	put_u64(b + 16, 34), put_u64(b + 24, 3);
	memcpy(b + 32, "abcde", 5);
	ASSERT_EQ(tfg_string_check(b, sizeof b, 2), TFG_OK);
	ASSERT_EQ(tfg_string_at(b, sizeof b, 0, &p, &len), 0);
	ASSERT(len == 2 && memcmp(p, "ab", 2) == 0);
	ASSERT_EQ(tfg_string_at(b, sizeof b, 1, &p, &len), 0);
	ASSERT(len == 3 && memcmp(p, "cde", 3) == 0);
	ASSERT_EQ(tfg_string_at(b, sizeof b, 2, &p, &len), -1);
	ASSERT_EQ(tfg_string_at(b, sizeof b, -1, &p, &len), -1);
	ASSERT_EQ(tfg_string_check(b, sizeof b - 1, 2), TFG_EINVAL);
	ASSERT_EQ(tfg_string_check(b, 16, 2), TFG_EINVAL); /* no records */
	put_u64(b + 16, 4); /* text inside the records */
	ASSERT_EQ(tfg_string_check(b, sizeof b, 2), TFG_EINVAL);
	put_u64(b + 16, 34), put_u64(b + 24, UINT64_MAX); /* wraps */
	ASSERT_EQ(tfg_string_check(b, sizeof b, 2), TFG_EINVAL);
	/* records only, or with room for the text */
	ASSERT_EQ(rt_shape_nbytes(&n, TFG_STRING, &s), TFG_OK);
	ASSERT_EQ(n, 2 * TFG_STRING_RECORD);
	ASSERT_EQ(rt_tensor_new_nbytes(&t, TFG_STRING, &s, 37), TFG_OK);
	ASSERT_EQ(t->nbytes, 37);
	rt_tensor_free(t);
	ASSERT_EQ(rt_tensor_new_nbytes(&t, TFG_STRING, &s, 31), TFG_EINVAL);
	ASSERT_EQ(rt_tensor_new_nbytes(&t, TFG_F32, &s, 9), TFG_EINVAL);
	ASSERT_EQ(rt_tensor_new_nbytes(&t, TFG_F32, &s, 8), TFG_OK);
	rt_tensor_free(t);
}

/* tfg_shape_size: every multiply checked, whatever the order of the dims
 * and wherever a 0 is; a 0 does not let the others be huge
 * (spec §5.1 "Dtypes"); tfg_shape_numel never wraps. */
static void
t_shape_size(void)
{
	static const int64_t big[][3] = {
		{INT64_C(4611686018427387904), 4, 0},
		{0, INT64_MAX, INT64_MAX},
		{INT64_MAX, INT64_MAX, 0},
		{INT64_MAX, 0, INT64_MAX},
		{INT64_C(1) << 40, 1, 1},       /* 2^40 elements of 4 bytes */
		{INT64_C(1) << 20, INT64_C(1) << 19, 3},
		/* 2^32 * 2^32 wraps to 0 in 64 bits: a 128-byte .npy of
		   this shape crashed a task (issue 25's first) */
		{INT64_C(1) << 32, INT64_C(1) << 32, 1},
		{INT64_C(1) << 24, INT64_C(1) << 40, 1},
	};
	TfgShape s;
	int64_t n = -1;
	size_t b = 1;

	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
		s = shape(3, big[i][0], big[i][1], big[i][2]);
		ASSERT_EQ(tfg_shape_size(&s, TFG_F32, &n, &b), -1);
	}
	ASSERT_EQ(n, -1); /* untouched when refused */
	ASSERT_EQ(b, 1);
	s = shape(3, INT64_C(4611686018427387904), 4, 0);
	ASSERT_EQ(tfg_shape_numel(&s), 0);
	s = shape(3, INT64_MAX, INT64_MAX, 0);
	ASSERT_EQ(tfg_shape_numel(&s), 0);
	s = shape(2, INT64_MAX, INT64_MAX, 0);
	ASSERT_EQ(tfg_shape_numel(&s), INT64_MAX);
	s = shape(3, 3, INT64_MAX / 2, 5);
	ASSERT_EQ(tfg_shape_numel(&s), INT64_MAX);
	/* at the limit (2^40 bytes), with and without a 0, and one over */
	s = shape(2, INT64_C(1) << 36, 4, 0);
	ASSERT_EQ(tfg_shape_size(&s, TFG_F32, &n, &b), 0);
	ASSERT_EQ(n, INT64_C(1) << 38);
	ASSERT_EQ((uint64_t)b, TFG_MAX_BYTES);
	s = shape(3, 4, 0, INT64_C(1) << 36);
	ASSERT_EQ(tfg_shape_size(&s, TFG_F32, &n, &b), 0);
	ASSERT_EQ(n, 0);
	ASSERT_EQ(b, 0);
	s = shape(3, 8, 0, INT64_C(1) << 36);
	ASSERT_EQ(tfg_shape_size(&s, TFG_F32, &n, &b), -1);
	s = shape(2, 2, INT64_C(1) << 36, 0);
	ASSERT_EQ(tfg_shape_size(&s, TFG_F64, NULL, &b), 0);
	ASSERT_EQ((uint64_t)b, TFG_MAX_BYTES);
	s = shape(2, 4, INT64_C(1) << 36, 0);
	ASSERT_EQ(tfg_shape_size(&s, TFG_F64, NULL, &b), -1);
	s = shape(1, -1, 0, 0);
	ASSERT_EQ(tfg_shape_size(&s, TFG_F32, NULL, NULL), -1);
	s = shape(0, 0, 0, 0);
	ASSERT_EQ(tfg_shape_size(&s, TFG_I64, &n, &b), 0);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(b, 8);
}

/* A tensor of n elements of dtype t holding data (copied). */
static RtTensor *
vec(TfgDtype t, int64_t n, const void *data)
{
	TfgShape s = {1, {n}};
	RtTensor *x;

	if (rt_tensor_new(&x, t, &s) != TFG_OK)
		return NULL;
	memcpy(x->data, data, x->nbytes);
	return x;
}

/* rt_tensor_convert of the n values at data (dtype from) to `to`: its
 * status, *bad, and the result in *out (NULL when it failed). */
static tfg_status
conv(RtTensor **out, TfgDtype from, int64_t n, const void *data,
     TfgDtype to, int64_t *bad)
{
	RtTensor *x = vec(from, n, data);
	tfg_status st;

	if (x == NULL)
		return TFG_ENOMEM;
	st = rt_tensor_convert(out, x, to, bad);
	rt_tensor_free(x);
	return st;
}

/* spec §8.3 "run: fetches, feeds and steps": the table of feed
 * conversions, at the edges of each dtype's range. */
static void
t_convert(void)
{
	RtTensor *r;
	int64_t bad;

	/* f64 -> f32 rounds to nearest, ties to even; -0.0, NaN and inf
	   stay; a finite value past f32's range is out of it */
	{
		double d[] = {16777217.0, -0.0, 0.1, NAN, -INFINITY,
			      3.4028235e38}; /* over FLT_MAX, rounds to it */
		ASSERT_EQ(conv(&r, TFG_F64, 6, d, TFG_F32, &bad), TFG_OK);
		ASSERT_EQ(bad, -1);
		ASSERT(((float *)r->data)[0] == 16777216.0f);
		ASSERT(((float *)r->data)[1] == 0 &&
		       signbit(((float *)r->data)[1]));
		ASSERT(((float *)r->data)[2] == 0.1f);
		ASSERT(isnan(((float *)r->data)[3]));
		ASSERT(isinf(((float *)r->data)[4]) &&
		       ((float *)r->data)[4] < 0);
		ASSERT(((float *)r->data)[5] == 3.4028234663852886e38f);
		rt_tensor_free(r);
	}
	{
		double d[] = {1.0, -1e300}, half[] = {0x1.ffffffp127};
		ASSERT_EQ(conv(&r, TFG_F64, 2, d, TFG_F32, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 1);
		ASSERT(r == NULL);
		/* FLT_MAX + half an ulp: a tie, to even, is infinity */
		ASSERT_EQ(conv(&r, TFG_F64, 1, half, TFG_F32, &bad),
			  TFG_EINVAL);
	}
	/* integers to f32: 2^24 + 1 rounds to 2^24 */
	{
		int64_t i[] = {16777217, -16777219, INT64_MAX};
		ASSERT_EQ(conv(&r, TFG_I64, 3, i, TFG_F32, &bad), TFG_OK);
		ASSERT(((float *)r->data)[0] == 16777216.0f);
		ASSERT(((float *)r->data)[1] == -16777220.0f);
		ASSERT(((float *)r->data)[2] == 9223372036854775808.0f);
		rt_tensor_free(r);
	}
	/* integers into narrower integers: in range only */
	{
		int32_t i[] = {255, 0, -1};
		ASSERT_EQ(conv(&r, TFG_I32, 3, i, TFG_U8, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 2);
		ASSERT_EQ(conv(&r, TFG_I32, 2, i, TFG_U8, &bad), TFG_OK);
		ASSERT_EQ(((uint8_t *)r->data)[0], 255);
		rt_tensor_free(r);
	}
	{
		int64_t i[] = {INT32_MIN, INT32_MAX, INT64_C(1) << 31};
		ASSERT_EQ(conv(&r, TFG_I64, 3, i, TFG_I32, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 2);
		ASSERT_EQ(conv(&r, TFG_I64, 2, i, TFG_I32, &bad), TFG_OK);
		ASSERT_EQ(((int32_t *)r->data)[0], INT32_MIN);
		ASSERT_EQ(((int32_t *)r->data)[1], INT32_MAX);
		rt_tensor_free(r);
	}
	/* bools: from anything exact; into bool, 0 and 1 only */
	{
		uint8_t b[] = {1, 0};
		ASSERT_EQ(conv(&r, TFG_BOOL, 2, b, TFG_F64, &bad), TFG_OK);
		ASSERT(((double *)r->data)[0] == 1.0);
		rt_tensor_free(r);
		ASSERT_EQ(conv(&r, TFG_BOOL, 2, b, TFG_I64, &bad), TFG_OK);
		ASSERT_EQ(((int64_t *)r->data)[0], 1);
		rt_tensor_free(r);
	}
	{
		int32_t i[] = {0, 1, 2};
		ASSERT_EQ(conv(&r, TFG_I32, 3, i, TFG_BOOL, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 2);
		ASSERT_EQ(conv(&r, TFG_I32, 2, i, TFG_BOOL, &bad), TFG_OK);
		ASSERT_EQ(((uint8_t *)r->data)[1], 1);
		rt_tensor_free(r);
	}
	{
		double d[] = {1.0, -0.0, 0.5};
		ASSERT_EQ(conv(&r, TFG_F64, 3, d, TFG_BOOL, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 2);
		ASSERT_EQ(conv(&r, TFG_F64, 2, d, TFG_BOOL, &bad), TFG_OK);
		ASSERT_EQ(((uint8_t *)r->data)[0], 1);
		ASSERT_EQ(((uint8_t *)r->data)[1], 0);
		rt_tensor_free(r);
	}
	/* floats into integers truncate toward zero; NaN, inf and what
	   truncates out of range do not convert */
	{
		double d[] = {2.7, -2.7, -0.0, -0.5, 2147483647.9,
			      -2147483648.9};
		ASSERT_EQ(conv(&r, TFG_F64, 6, d, TFG_I32, &bad), TFG_OK);
		ASSERT_EQ(((int32_t *)r->data)[0], 2);
		ASSERT_EQ(((int32_t *)r->data)[1], -2);
		ASSERT_EQ(((int32_t *)r->data)[2], 0);
		ASSERT_EQ(((int32_t *)r->data)[3], 0);
		ASSERT_EQ(((int32_t *)r->data)[4], INT32_MAX);
		ASSERT_EQ(((int32_t *)r->data)[5], INT32_MIN);
		rt_tensor_free(r);
	}
	{
		double d[] = {0, NAN}, e[] = {INFINITY}, f[] = {2147483648.0},
		       g[] = {-2147483649.0}, h[] = {9223372036854775808.0},
		       k[] = {-9223372036854775808.0}, u[] = {255.9, 256.0};
		ASSERT_EQ(conv(&r, TFG_F64, 2, d, TFG_I32, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 1);
		ASSERT_EQ(conv(&r, TFG_F64, 1, e, TFG_I64, &bad), TFG_EINVAL);
		ASSERT_EQ(conv(&r, TFG_F64, 1, f, TFG_I32, &bad), TFG_EINVAL);
		ASSERT_EQ(conv(&r, TFG_F64, 1, g, TFG_I32, &bad), TFG_EINVAL);
		ASSERT_EQ(conv(&r, TFG_F64, 1, h, TFG_I64, &bad), TFG_EINVAL);
		ASSERT_EQ(conv(&r, TFG_F64, 1, k, TFG_I64, &bad), TFG_OK);
		ASSERT_EQ(((int64_t *)r->data)[0], INT64_MIN);
		rt_tensor_free(r);
		ASSERT_EQ(conv(&r, TFG_F64, 2, u, TFG_U8, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 1);
		ASSERT_EQ(conv(&r, TFG_F64, 1, u, TFG_U8, &bad), TFG_OK);
		ASSERT_EQ(((uint8_t *)r->data)[0], 255);
		rt_tensor_free(r);
	}
	{
		float f[] = {-1.0f, 3.9f};
		ASSERT_EQ(conv(&r, TFG_F32, 2, f, TFG_I64, &bad), TFG_OK);
		ASSERT_EQ(((int64_t *)r->data)[0], -1);
		ASSERT_EQ(((int64_t *)r->data)[1], 3);
		rt_tensor_free(r);
		ASSERT_EQ(conv(&r, TFG_F32, 1, f, TFG_U8, &bad), TFG_EINVAL);
		ASSERT_EQ(bad, 0);
	}
	/* strings convert to nothing, nothing to strings */
	ASSERT(!rt_dtype_converts(TFG_STRING, TFG_F32));
	ASSERT(!rt_dtype_converts(TFG_I32, TFG_STRING));
	ASSERT(rt_dtype_converts(TFG_BOOL, TFG_F64));
	{
		int32_t i[] = {1};
		ASSERT_EQ(conv(&r, TFG_I32, 1, i, TFG_STRING, &bad),
			  TFG_EDTYPE);
		ASSERT_EQ(bad, -1);
		ASSERT(r == NULL);
	}
	/* the same dtype: a copy; no elements: nothing to check */
	{
		int64_t i[] = {7};
		ASSERT_EQ(conv(&r, TFG_I64, 1, i, TFG_I64, &bad), TFG_OK);
		ASSERT_EQ(((int64_t *)r->data)[0], 7);
		rt_tensor_free(r);
		ASSERT_EQ(conv(&r, TFG_I64, 0, i, TFG_U8, &bad), TFG_OK);
		ASSERT_EQ(r->nbytes, 0);
		rt_tensor_free(r);
	}
}

TEST_MAIN({"dtype", t_dtype}, {"shape", t_shape},
	  {"shape_size", t_shape_size}, {"new", t_new},
	  {"new_invalid", t_new_invalid}, {"status", t_status},
	  {"string", t_string}, {"convert", t_convert})
