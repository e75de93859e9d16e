/*
 * runtime/batch.c: the mini-batches of `for b in batches(x, y, size,
 * seed=S, shard=K, of=N)` (spec §8.6.1 "batches"), for the session's
 * client (runtime/client.c).
 *
 * The rows (first dim) of x and y are put in the order of a permutation
 * drawn from the seed, shard K takes every N-th row of that order from
 * the K-th on, and its rows go out in batches of `size`, the last one
 * short.  The permutation is our own (splitmix64 and Fisher-Yates, the
 * same bits on every machine and compiler), since every worker of a
 * sharded loop must draw the same one for the shards to partition the
 * rows.  A batch is gathered row by row with memcpy into tensors that
 * live as long as the loop: the session only borrows them, and a step
 * has sent its feeds when it returns.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"

/* splitmix64 (Steele, Lea, Flood 2014; Vigna's public-domain code). */
static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15u);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return z ^ (z >> 31);
}

/* The high 64 bits of a * b, in portable C (no __int128). */
static uint64_t
mulhi64(uint64_t a, uint64_t b)
{
	uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32;
	uint64_t bl = b & 0xFFFFFFFFu, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);

	return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* perm[0..n-1]: 0..n-1 shuffled by Fisher-Yates from the back, each j
 * the high half of a splitmix64 draw times i + 1 (a bias of at most
 * n / 2^64, which no data set can see). */
void
rt_permutation(int64_t *perm, int64_t n, uint64_t seed)
{
	uint64_t s = seed;

	for (int64_t i = 0; i < n; i++)
		perm[i] = i;
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)mulhi64(splitmix64(&s), (uint64_t)i + 1);
		int64_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

static int64_t
row_bytes(const RtTensor *t)
{
	return t->shape.dims[0] ? (int64_t)(t->nbytes /
					    (size_t)t->shape.dims[0]) : 0;
}

/* The loop's tensor for full batches of a's rows. */
static tfg_status
batch_tensor(RtTensor **out, const RtTensor *a, int64_t size)
{
	TfgShape s = a->shape;

	s.dims[0] = size;
	return rt_tensor_new(out, a->dtype, &s);
}

tfg_status
rt_batches_begin(RtBatches *bt, const RtTensor *a, const RtTensor *b,
		 const RtBatchArgs *arg, TfgError *e)
{
	int64_t n = a->shape.dims[0], full;
	int64_t *perm = NULL;
	tfg_status st;

	memset(bt, 0, sizeof *bt);
	bt->a = a, bt->b = b;
	bt->size = arg->size;
	/* shard K of N has the positions K, K + N, ... of the order */
	bt->nrows = arg->shard < n ? (n - arg->shard + arg->of - 1) / arg->of
				   : 0;
	bt->count = arg->drop_last ? bt->nrows / arg->size
				   : (bt->nrows + arg->size - 1) / arg->size;
	full = bt->nrows < arg->size ? bt->nrows : arg->size;
	if (bt->count == 0)
		return TFG_OK;
	bt->rows = malloc((size_t)bt->nrows * sizeof *bt->rows);
	if (arg->shuffle)
		perm = malloc((size_t)n * sizeof *perm);
	if (!bt->rows || (arg->shuffle && !perm)) {
		free(perm);
		rt_batches_end(bt);
		return tfg_error(e, TFG_ENOMEM, "out of memory for the "
				 "order of %lld rows", (long long)n);
	}
	if (perm)
		rt_permutation(perm, n, arg->seed);
	for (int64_t i = 0; i < bt->nrows; i++) {
		int64_t p = arg->shard + i * arg->of;
		bt->rows[i] = perm ? perm[p] : p;
	}
	free(perm);
	if ((st = batch_tensor(&bt->x, a, full)) != TFG_OK ||
	    (b && (st = batch_tensor(&bt->y, b, full)) != TFG_OK)) {
		rt_batches_end(bt);
		return tfg_error(e, st, "out of memory for a batch of %lld "
				 "rows", (long long)full);
	}
	return TFG_OK;
}

/* dst's rows: t's rows rows[0..k-1], one memcpy each. */
static void
gather(RtTensor *dst, const RtTensor *t, const int64_t *rows, int64_t k)
{
	size_t rb = (size_t)row_bytes(t);
	char *d = dst->data;
	const char *src = t->data;

	dst->shape.dims[0] = k;
	dst->nbytes = (size_t)k * rb;
	for (int64_t i = 0; i < k; i++)
		memcpy(d + (size_t)i * rb, src + (size_t)rows[i] * rb, rb);
}

/* Batch i (0 <= i < count) into bt->x and bt->y; its rows in bt->n. */
void
rt_batches_get(RtBatches *bt, int64_t i)
{
	int64_t lo = i * bt->size, k = bt->nrows - lo;

	if (k > bt->size)
		k = bt->size;
	bt->n = k;
	gather(bt->x, bt->a, bt->rows + lo, k);
	if (bt->y)
		gather(bt->y, bt->b, bt->rows + lo, k);
}

void
rt_batches_end(RtBatches *bt)
{
	free(bt->rows);
	rt_tensor_free(bt->x);
	rt_tensor_free(bt->y);
	memset(bt, 0, sizeof *bt);
}
