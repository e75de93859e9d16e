/*
 * tests/unit/route_test.c: tfg_rt_shard_ids (runtime/gather.c), the
 * route of a partitioned table's gather to one shard (OP_shard_ids,
 * compiler/shards.c; spec §4.4.1 "Partitioned variables"), against the
 * obvious computation: for random ids, both strategies, 1 to 5 shards,
 * 0 to 3,000 ids (insertion sort and radix sort, the stack buffer and
 * the heap), i32 and i64 ids, the shard's distinct rows ascending and
 * then -1, and each id's place among them, so that every id finds its
 * own row in exactly one shard.
 */
#include "tests/unit/test.h"

#include <stdlib.h>

#include "runtime/tfg.h"
#include "runtime/part.h"

/* Shard k's first row (div) and rows, as the compiler cuts them. */
static int64_t
first_of(int64_t rows, int n, int k)
{
	return k * (rows / n) + (k < rows % n ? k : rows % n);
}

static int64_t
len_of(int64_t rows, int n, int k, int mod)
{
	return mod ? (rows - k + n - 1) / n : rows / n + (k < rows % n);
}

static void
t_route(void)
{
	static const int64_t sizes[] = {0, 1, 5, 63, 64, 65, 511, 512, 513,
					3000};
	TfgError err;
	RtCtx c = {0};
	uint64_t seed = 12345;

	c.err = &err;
	for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
	for (int n = 1; n <= 5; n++)
	for (int mod = 0; mod <= 1; mod++)
	for (int wide = 0; wide <= 1; wide++) {
		int64_t nid = sizes[si], rows = 7 + n * 40 + nid / 3;
		int64_t *ids = malloc((size_t)(nid + 1) * 8);
		int32_t *ids32 = malloc((size_t)(nid + 1) * 4);
		int64_t *out = malloc((size_t)(2 * nid + 1) * 8);
		int *found = calloc((size_t)nid + 1, sizeof *found);

		for (int64_t i = 0; i < nid; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			ids[i] = (int64_t)((seed >> 33) % (uint64_t)rows);
			ids32[i] = (int32_t)ids[i];
		}
		for (int k = 0; k < n; k++) {
			int64_t lo = first_of(rows, n, k);
			int64_t len = len_of(rows, n, k, mod), cnt = 0;
			char *seen = calloc((size_t)len + 1, 1);

			ASSERT_EQ(tfg_rt_shard_ids(&c, wide ? (void *)ids
							    : (void *)ids32,
						   wide ? TFG_I64 : TFG_I32, nid,
						   k, n, rows, mod, out),
				  TFG_OK);
			/* the distinct rows, ascending, then -1 */
			for (int64_t i = 0; i < nid; i++) {
				int64_t r = ids[i];
				int in = mod ? r % n == k
					     : r >= lo && r < lo + len;
				int64_t local = mod ? r / n : r - lo;

				if (in && !seen[local]) {
					seen[local] = 1;
					cnt++;
				}
			}
			for (int64_t j = 0; j < nid; j++) {
				if (j < cnt) {
					ASSERT(out[j] >= 0 && out[j] < len);
					ASSERT(seen[out[j]]);
					ASSERT(j == 0 || out[j] > out[j - 1]);
				} else {
					ASSERT_EQ(out[j], -1);
				}
			}
			/* each id's place: its row, or -1 */
			for (int64_t i = 0; i < nid; i++) {
				int64_t r = ids[i], p = out[nid + i];
				int in = mod ? r % n == k
					     : r >= lo && r < lo + len;

				if (!in) {
					ASSERT_EQ(p, -1);
					continue;
				}
				ASSERT(p >= 0 && p < cnt);
				ASSERT_EQ(out[p], mod ? r / n : r - lo);
				found[i]++;
			}
			free(seen);
		}
		for (int64_t i = 0; i < nid; i++)
			ASSERT_EQ(found[i], 1);
		free(ids);
		free(ids32);
		free(out);
		free(found);
	}
	/* a shard that is not one of the table's */
	ASSERT_EQ(tfg_rt_shard_ids(&c, (int64_t[]){0}, TFG_I64, 1, 3, 3, 10,
				   0, (int64_t[2]){0}), TFG_EINVAL);
}

TEST_MAIN({"route", t_route})
