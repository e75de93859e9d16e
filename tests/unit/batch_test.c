/*
 * tests/unit/batch_test.c: the mini-batches of runtime/batch.c
 * (spec §8.6.1 "batches").  The permutations' expected values come from
 * the spec's pseudo-code run in Python (unbounded integers, so that its
 * 128-bit product needs no trick), which is what every machine must
 * draw.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"
#include "tests/unit/test.h"

static void
expect_perm(int64_t n, uint64_t seed, const int64_t *want)
{
	int64_t p[16];

	rt_permutation(p, n, seed);
	for (int64_t i = 0; i < n; i++)
		ASSERT_EQ(p[i], want[i]);
}

static void
t_permutation(void)
{
	static const int64_t s1[] = {9, 0, 1, 4, 8, 2, 3, 7, 6, 5};
	static const int64_t s2[] = {7, 0, 3, 2, 8, 1, 9, 4, 6, 5};
	static const int64_t s7[] = {9, 5, 8, 6, 1, 2, 4, 7, 0, 3};
	static const int64_t sm1[] = {6, 7, 0, 3, 5, 4, 2, 1, 9, 8};
	static const int64_t big[] = {2, 0, 4, 3, 1};

	expect_perm(10, 1, s1);
	expect_perm(10, 2, s2);
	expect_perm(10, 7, s7);
	expect_perm(10, (uint64_t)-1, sm1);
	expect_perm(5, UINT64_C(1) << 63, big);
	expect_perm(0, 1, s1); /* nothing to draw */
}

/* 100000 rows: each j needs the product's high half right. */
static void
t_permutation_large(void)
{
	int64_t n = 100000, *p = malloc((size_t)n * sizeof *p);
	char *seen = calloc((size_t)n, 1);
	uint64_t sum = 0;

	ASSERT(p != NULL && seen != NULL);
	rt_permutation(p, n, 12345);
	for (int64_t i = 0; i < n; i++) {
		ASSERT(p[i] >= 0 && p[i] < n && !seen[p[i]]);
		seen[p[i]] = 1;
		sum += (uint64_t)i * (uint64_t)p[i];
	}
	ASSERT_EQ(p[0], 8494);
	ASSERT_EQ(p[1], 34055);
	ASSERT_EQ(p[n - 1], 13307);
	ASSERT_EQ(sum, 249977566530112);
	free(p);
	free(seen);
}

/* A [n, 2] i32 tensor whose row r is (r, 100 r). */
static RtTensor *
rows(int64_t n)
{
	TfgShape s = {2, {n, 2}};
	RtTensor *t;

	ASSERT_EQ(rt_tensor_new(&t, TFG_I32, &s), TFG_OK);
	for (int64_t r = 0; r < n; r++) {
		((int32_t *)t->data)[2 * r] = (int32_t)r;
		((int32_t *)t->data)[2 * r + 1] = (int32_t)(100 * r);
	}
	return t;
}

/* The shards of one seed partition the rows; batches are SIZE rows but
 * the last; x and y keep their rows together. */
static void
t_shards(void)
{
	RtTensor *a = rows(23), *b = rows(23);
	char seen[23] = {0};
	TfgError e;

	for (int k = 0; k < 4; k++) {
		RtBatchArgs arg = {5, 1, 42, k, 4, 0};
		RtBatches bt;
		int64_t got = 0;

		ASSERT_EQ(rt_batches_begin(&bt, a, b, &arg, &e), TFG_OK);
		ASSERT_EQ(bt.nrows, (23 - k + 3) / 4);
		ASSERT_EQ(bt.count, (bt.nrows + 4) / 5);
		for (int64_t i = 0; i < bt.count; i++) {
			rt_batches_get(&bt, i);
			ASSERT_EQ(bt.n, i < bt.count - 1 ? 5 : bt.nrows - 5 * i);
			ASSERT_EQ(bt.x->shape.rank, 2);
			ASSERT_EQ(bt.x->shape.dims[0], bt.n);
			ASSERT_EQ(bt.x->nbytes, (size_t)bt.n * 8);
			for (int64_t r = 0; r < bt.n; r++) {
				int32_t v = ((int32_t *)bt.x->data)[2 * r];
				ASSERT(v >= 0 && v < 23 && !seen[v]);
				seen[v] = 1;
				ASSERT_EQ(((int32_t *)bt.x->data)[2 * r + 1],
					  100 * v);
				ASSERT_EQ(((int32_t *)bt.y->data)[2 * r], v);
			}
			got += bt.n;
		}
		ASSERT_EQ(got, bt.nrows);
		rt_batches_end(&bt);
	}
	for (int r = 0; r < 23; r++)
		ASSERT(seen[r]);
	rt_tensor_free(a);
	rt_tensor_free(b);
}

/* No seed: in order; drop_last drops the short batch; a shard past the
 * rows has none. */
static void
t_order(void)
{
	RtTensor *a = rows(7);
	RtBatchArgs arg = {3, 0, 0, 0, 1, 1};
	RtBatches bt;
	TfgError e;

	ASSERT_EQ(rt_batches_begin(&bt, a, NULL, &arg, &e), TFG_OK);
	ASSERT_EQ(bt.count, 2);
	ASSERT(bt.y == NULL);
	rt_batches_get(&bt, 1);
	ASSERT_EQ(bt.n, 3);
	ASSERT_EQ(((int32_t *)bt.x->data)[0], 3);
	ASSERT_EQ(((int32_t *)bt.x->data)[4], 5);
	rt_batches_end(&bt);
	arg = (RtBatchArgs){3, 0, 0, 8, 9, 0};
	ASSERT_EQ(rt_batches_begin(&bt, a, NULL, &arg, &e), TFG_OK);
	ASSERT_EQ(bt.count, 0);
	rt_batches_end(&bt);
	rt_tensor_free(a);
}

TEST_MAIN({"permutation", t_permutation},
	  {"permutation_large", t_permutation_large}, {"shards", t_shards},
	  {"order", t_order})
