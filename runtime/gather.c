/*
 * runtime/gather.c: rows picked by index and rows summed by index
 * (spec §6.36 "gather, embedding_lookup", §6.37 "Segment reductions"):
 * tfg_rt_gather, which generated parts call for OP_gather, and
 * tfg_rt_segment, for OP_unsorted_segment_sum and _max
 * (codegen/cpu_gather.c).
 *
 * Both see their operands as three axes: `outer` rows of the axes
 * before the indexed one, the indexed axis, and rows of `row` bytes
 * (`inner` elements) after it, so that every axis= is one loop.  The
 * indices are checked first, all of them, so that a bad one fails the
 * step before anything is written and names the first bad element.
 * Sums run in index order: the result is the same every run.
 */
#include <float.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/part.h"
#include "runtime/rt_int.h"

/* Element i of an index tensor of dtype t (TFG_I32 or TFG_I64). */
static int64_t
index_at(const void *idx, int32_t t, int64_t i)
{
	return t == TFG_I32 ? ((const int32_t *)idx)[i]
			    : ((const int64_t *)idx)[i];
}

/* The first index of the n at idx outside [lo, hi): its element, or -1. */
static int64_t
bad_index(const void *idx, int32_t t, int64_t n, int64_t lo, int64_t hi)
{
	for (int64_t i = 0; i < n; i++) {
		int64_t v = index_at(idx, t, i);

		if (v < lo || v >= hi)
			return i;
	}
	return -1;
}

static const char *
who(const struct RtCtx *c)
{
	return c && c->who ? c->who : "";
}

TFG_API int
tfg_rt_gather(struct RtCtx *ctx, const void *params, const void *idx,
	      int32_t idx_dtype, void *out, int64_t outer, int64_t n,
	      int64_t nidx, int64_t row, const char *label)
{
	const char *p = params;
	char *o = out;
	int drop = (idx_dtype & TFG_GATHER_DROP) != 0;
	int64_t bad;

	idx_dtype &= ~TFG_GATHER_DROP;
	if ((bad = bad_index(idx, idx_dtype, nidx, -drop, n)) >= 0)
		return tfg_error(ctx->err, TFG_EINVAL, "%s%s%s: index %lld "
				 "(element %lld of the indices) is outside "
				 "[%d, %lld)", who(ctx), *who(ctx) ? ": " : "",
				 label, (long long)index_at(idx, idx_dtype,
							    bad),
				 (long long)bad, -drop, (long long)n);
	for (int64_t a = 0; a < outer; a++, p += n * row)
		for (int64_t i = 0; i < nidx; i++, o += row) {
			int64_t k = index_at(idx, idx_dtype, i);
			if (k < 0)
				memset(o, 0, (size_t)row);
			else
				memcpy(o, p + k * row, (size_t)row);
		}
	return TFG_OK;
}

TFG_API int
tfg_rt_check_index(struct RtCtx *ctx, const void *idx, int32_t idx_dtype,
		   int64_t nidx, int64_t n, const char *label)
{
	int64_t bad = bad_index(idx, idx_dtype, nidx, 0, n);

	if (bad >= 0)
		return tfg_error(ctx->err, TFG_EINVAL, "%s%s%s: index %lld "
				 "(element %lld of the indices) is outside "
				 "[0, %lld)", who(ctx), *who(ctx) ? ": " : "",
				 label, (long long)index_at(idx, idx_dtype,
							    bad),
				 (long long)bad, (long long)n);
	return TFG_OK;
}

TFG_API int
tfg_rt_check_sorted(struct RtCtx *ctx, const void *idx, int32_t idx_dtype,
		    int64_t nidx, int64_t n, const char *label)
{
	for (int64_t i = 0; i < nidx; i++) {
		int64_t k = index_at(idx, idx_dtype, i);

		if (k < 0 || k >= n)
			return tfg_error(ctx->err, TFG_EINVAL, "%s%s%s: segment "
					 "id %lld (element %lld of the segment "
					 "ids) is outside [0, %lld)", who(ctx),
					 *who(ctx) ? ": " : "", label,
					 (long long)k, (long long)i,
					 (long long)n);
		if (i > 0 && k < index_at(idx, idx_dtype, i - 1))
			return tfg_error(ctx->err, TFG_EINVAL, "%s%s%s: the "
					 "segment ids are not sorted: element "
					 "%lld is %lld, after %lld", who(ctx),
					 *who(ctx) ? ": " : "", label,
					 (long long)i, (long long)k,
					 (long long)index_at(idx, idx_dtype,
							     i - 1));
	}
	return TFG_OK;
}

TFG_API int64_t
tfg_shard_first(int64_t rows, int64_t n, int mod, int64_t k)
{
	int64_t extra = rows % n;

	return mod ? k : k * (rows / n) + (k < extra ? k : extra);
}

TFG_API int64_t
tfg_shard_rows(int64_t rows, int64_t n, int mod, int64_t k)
{
	return mod ? (rows - k + n - 1) / n : rows / n + (k < rows % n);
}

TFG_API int
tfg_rt_shard_ids(struct RtCtx *ctx, const void *idx, int32_t idx_dtype,
		 int64_t nidx, int64_t k, int64_t nshards, int64_t rows,
		 int32_t mod, int64_t *out)
{
	int64_t first, len, m, j = -1;
	int64_t *local = out + nidx, prev = -1;
	uint64_t *key, *sorted, buf[2 * 512];
	int ib = 1, pb = 1;

	if (nshards < 1 || k < 0 || k >= nshards || rows < nshards)
		first = len = -1;
	else
		first = tfg_shard_first(rows, nshards, mod, k),
		len = tfg_shard_rows(rows, nshards, mod, k);
	while (ib < 63 && (len >> ib))
		ib++;
	while (pb < 63 && (nidx >> pb))
		pb++;
	if (len < 0 || ib + pb > 64)
		return tfg_error(ctx->err, TFG_EINVAL, "%s%sthe route of %lld "
				 "ids to shard %lld of %lld of a table of %lld "
				 "rows: out of range", who(ctx),
				 *who(ctx) ? ": " : "", (long long)nidx,
				 (long long)k, (long long)nshards,
				 (long long)rows);
	/* each id as the shard's row, or -1: in out's second half */
	for (int64_t i = 0; i < nidx; i++) {
		int64_t r = index_at(idx, idx_dtype, i);

		if (mod)
			local[i] = r >= 0 && r % nshards == k ? r / nshards : -1;
		else
			local[i] = r >= first && r < first + len ? r - first
								 : -1;
	}
	key = nidx <= 512 ? buf : malloc(2 * (size_t)nidx * sizeof *key);
	if (!key)
		return tfg_error(ctx->err, TFG_ENOMEM, "%s%sno memory to route "
				 "%lld ids", who(ctx), *who(ctx) ? ": " : "",
				 (long long)nidx);
	sorted = rt_sort_keys(local, nidx, ib, pb, key, key + nidx, &m);
	/* the distinct rows in front; each id's place */
	for (int64_t i = 0; i < nidx; i++)
		local[i] = -1;
	for (int64_t q = 0; q < m; q++) {
		int64_t r = (int64_t)(sorted[q] >> pb);

		if (r != prev)
			out[++j] = prev = r;
		local[sorted[q] & ((1ull << pb) - 1)] = j;
	}
	for (int64_t i = j + 1; i < nidx; i++)
		out[i] = -1;
	if (key != buf)
		free(key);
	return TFG_OK;
}

/* out's nseg rows of each outer row: zeros (sum) or the dtype's lowest
 * value (max, as TF's for an empty segment). */
static void
segment_init(int32_t kind, int32_t dtype, void *out, int64_t n)
{
	if (kind == TFG_SEGMENT_SUM) {
		memset(out, 0, (size_t)n * tfg_dtype_size((TfgDtype)dtype));
		return;
	}
	for (int64_t i = 0; i < n; i++)
		switch (dtype) {
		case TFG_F32: ((float *)out)[i] = -FLT_MAX; break;
		case TFG_F64: ((double *)out)[i] = -DBL_MAX; break;
		case TFG_I32: ((int32_t *)out)[i] = INT32_MIN; break;
		default: ((int64_t *)out)[i] = INT64_MIN; break;
		}
}

/* s[0, m) op= d[0, m): a sum or a max (a NaN wins, as TF's). */
#define SEGMENT_ROW(T)                                                     \
	static void segment_##T(int32_t kind, T *s, const T *d, int64_t m) \
	{                                                                  \
		if (kind == TFG_SEGMENT_SUM)                               \
			for (int64_t k = 0; k < m; k++)                    \
				s[k] += d[k];                              \
		else                                                       \
			for (int64_t k = 0; k < m; k++)                    \
				s[k] = d[k] > s[k] || d[k] != d[k] ? d[k]  \
								   : s[k]; \
	}
SEGMENT_ROW(float)
SEGMENT_ROW(double)
SEGMENT_ROW(int32_t)
SEGMENT_ROW(int64_t)

TFG_API int
tfg_rt_segment(struct RtCtx *ctx, int32_t kind, int32_t dtype,
	       const void *data, const void *ids, int32_t id_dtype, void *out,
	       int64_t outer, int64_t nids, int64_t nseg, int64_t inner,
	       const char *label)
{
	size_t sz = tfg_dtype_size((TfgDtype)dtype), row = (size_t)inner * sz;
	const char *d = data;
	char *o = out;
	int64_t bad = bad_index(ids, id_dtype, nids, INT64_MIN, nseg);

	if (bad >= 0)
		return tfg_error(ctx->err, TFG_EINVAL, "%s%s%s: segment id "
				 "%lld (element %lld of the segment ids) is "
				 "not below num_segments, %lld", who(ctx),
				 *who(ctx) ? ": " : "", label,
				 (long long)index_at(ids, id_dtype, bad),
				 (long long)bad, (long long)nseg);
	segment_init(kind, dtype, out, outer * nseg * inner);
	for (int64_t a = 0; a < outer; a++, o += (size_t)nseg * row)
		for (int64_t i = 0; i < nids; i++, d += row) {
			int64_t j = index_at(ids, id_dtype, i);
			void *s;

			if (j < 0) /* dropped, as TF's */
				continue;
			s = o + (size_t)j * row;
			switch (dtype) {
			case TFG_F32: segment_float(kind, s, (const void *)d,
						    inner); break;
			case TFG_F64: segment_double(kind, s, (const void *)d,
						     inner); break;
			case TFG_I32: segment_int32_t(kind, s, (const void *)d,
						      inner); break;
			default: segment_int64_t(kind, s, (const void *)d,
						 inner); break;
			}
		}
	return TFG_OK;
}
