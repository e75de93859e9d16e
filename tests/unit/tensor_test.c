/*
 * tests/unit/tensor_test.c: dtypes, shapes, tensor allocation and the
 * status strings (runtime/tensor.c, runtime/status.c).
 */
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
	/* a zero dim makes any other size fine */
	s = shape(3, INT64_MAX, 0, INT64_MAX);
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

TEST_MAIN({"dtype", t_dtype}, {"shape", t_shape}, {"new", t_new},
	  {"new_invalid", t_new_invalid}, {"status", t_status})
