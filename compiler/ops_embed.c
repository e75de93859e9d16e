/*
 * compiler/ops_embed.c: the checkers of rows by index,
 * spec §6.36 "gather, embedding_lookup", §6.37 "Segment reductions" and
 * §6.38 "hash_bucket, sigmoid_cross_entropy" (hash_bucket; the other is a
 * composition of compiler/ops_math.c): check_gather, check_segment and
 * check_hash, named by the check column of stdlib/ops.def.
 *
 *   gather(params, indices, axis=)     OP_gather
 *   embedding_lookup(params, ids)      OP_gather on axis 0
 *   embedding_lookup_sparse(params, ids, segment_ids, n, weights=,
 *                           combiner=)
 *                                      the rows of each segment's ids,
 *                                      summed (weighted), over the sum of
 *                                      the weights or its root
 *   unsorted_segment_sum(data, ids, n) OP_unsorted_segment_sum
 *   unsorted_segment_max(data, ids, n) OP_unsorted_segment_max
 *   unsorted_segment_mean(data, ids, n)
 *                                      the sum over the count of each
 *                                      segment's rows, at least 1
 *   hash_bucket(ids, n)                OP_hash_bucket of the ids as i64
 *
 * The indices' values are checked where the kernels run (an index
 * outside the table fails the step, runtime/gather.c); their dtype, the
 * shapes and num_segments (a constant) here.
 */
#include <inttypes.h>
#include <string.h>

#include "compiler/compiler_int.h"

static const char *
type_s(Checker *c, const IrNode *n)
{
	return ir_type_str(c->a, n->dtype, &n->shape);
}

/* An index argument e of call fn: an i32 or i64 tensor; NULL
 * (reported). */
static IrNode *
index_arg(Checker *c, AstNode *e, const char *fn, const char *what)
{
	IrNode *x = check_expr(c, e);

	if (x && x->dtype != TFG_I32 && x->dtype != TFG_I64) {
		diag_error(c->d, e->loc, "the %s of '%s' must be i32 or i64, "
			   "got %s", what, fn, type_s(c, x));
		return NULL;
	}
	return x;
}

/* A gather of params x, built: when x is a variable's value, placed where
 * the variable lives, as TF's embedding_lookup colocates its gather with
 * the table, so that the indices go to the table's task and only the
 * rows they pick come back (and the gradient's segment sum, which the
 * grad pass places with the gather, is made there: only the rows'
 * gradient travels). */
static IrNode *
gather_at(Checker *c, SrcLoc at, IrNode *x, IrNode *idx, int axis)
{
	IrNode *n;

	if (x->shards && axis == 0) /* each shard's rows where it is */
		return check_gather_shards(c, at, x->shards, idx);
	if (x->op == OP_variable && x->var && axis == 0 &&
	    idx->shape.rank == 1 && x->shape.rank >= 1 &&
	    x->shape.dims[0] > 0) /* its distinct rows, routed */
		return check_gather_var(c, at, x->var, idx);
	n = check_built(c, ir_gather(c->p, at, x, idx, axis));
	if (n && x->op == OP_variable && x->var) {
		n->req = x->var->req;
		n->why = arena_printf(c->a, "with its table, variable %s",
				      x->var->name);
	}
	return n;
}

/* x reshaped to [its dim 0, then rank - 1 ones]: to broadcast over a
 * value of that rank row by row. */
static IrNode *
per_row(Checker *c, SrcLoc at, IrNode *x, int rank)
{
	TfgShape s = {rank, {0}};

	if (!x)
		return NULL;
	s.dims[0] = x->shape.dims[0];
	for (int k = 1; k < rank; k++)
		s.dims[k] = 1;
	return check_built(c, ir_reshape(c->p, at, x, &s));
}

/* embedding_lookup_sparse(params, ids, segment_ids, num_segments, *,
 * weights=, combiner="mean"): TF's, its SparseTensor of ids given as the
 * ids and the segment (the batch's row) of each: per segment, the
 * weighted sum of its ids' rows of params ("sum"), over the sum of the
 * weights ("mean") or over the root of the sum of their squares
 * ("sqrtn"); 0 for an empty segment (or a sum of weights of 0). */
static IrNode *
lookup_sparse(Checker *c, AstNode *e, IrNode *x, IrNode *ids)
{
	static const char *const comb[] = {"sum", "mean", "sqrtn"};
	SrcLoc at = e->loc;
	AstNode *wa = check_kwarg(e, "weights"), *ca = check_kwarg(e, "combiner");
	IrNode *seg, *w = NULL, *rows, *s, *d, *zero, *one, *nz;
	int64_t n;
	int how = 1;

	if (!(seg = index_arg(c, e->list[2], e->name, "segment_ids")) ||
	    check_int_arg(c, e, e->list[3], "the num_segments", &n) < 0)
		return NULL;
	if (ca) {
		const char *near;

		for (how = 0; how < 3 && (ca->kind != AST_STRING ||
					  strcmp(ca->str, comb[how])); how++)
			;
		if (how == 3) {
			near = ca->kind == AST_STRING
			     ? check_nearest(ca->str, comb, 3) : NULL;
			diag_error(c->d, ca->loc, "the combiner of '%s' is "
				   "\"sum\", \"mean\" or \"sqrtn\"%s%s%s",
				   e->name, near ? "; did you mean \"" : "",
				   near ? near : "", near ? "\"?" : "");
			return NULL;
		}
	}
	if (!dtype_is_float(x->dtype) || ids->shape.rank != 1 ||
	    seg->shape.rank != 1 || n < 0 ||
	    (ids->shape.dims[0] != seg->shape.dims[0] &&
	     ids->shape.dims[0] != IR_DIM_UNKNOWN &&
	     seg->shape.dims[0] != IR_DIM_UNKNOWN)) {
		diag_error(c->d, at, "'%s' takes float params, ids and "
			   "segment_ids of one length and num_segments >= 0: "
			   "got %s, %s, %s and %" PRId64, e->name,
			   type_s(c, x), type_s(c, ids), type_s(c, seg), n);
		return NULL;
	}
	if (wa) {
		if (!(w = check_expr(c, wa)))
			return NULL;
		if (w->dtype != x->dtype && w->weak &&
		    !(w = check_built(c, ir_cast(c->p, wa->loc, w, x->dtype))))
			return NULL;
		if (w->dtype != x->dtype || w->shape.rank != 1 ||
		    (w->shape.dims[0] != ids->shape.dims[0] &&
		     w->shape.dims[0] != IR_DIM_UNKNOWN &&
		     ids->shape.dims[0] != IR_DIM_UNKNOWN)) {
			diag_error(c->d, wa->loc, "the weights of '%s' are "
				   "one per id, of the params' dtype %s: got %s",
				   e->name, tfg_dtype_name(x->dtype),
				   type_s(c, w));
			return NULL;
		}
	}
	rows = gather_at(c, at, x, ids, 0);
	if (w)
		rows = check_bin(c, at, OP_mul, rows, per_row(c, at, w,
							x->shape.rank));
	if (!rows || !(s = check_built(c, ir_segment(c->p, at,
						     OP_unsorted_segment_sum,
						     rows, seg, n, 0))))
		return NULL;
	if (how == 0)
		return s;
	/* each segment's sum of weights (of their squares), 1 per id
	   without weights */
	if (!w && (!(w = check_bin(c, at, OP_equal, ids, ids)) ||
		   !(w = check_built(c, ir_cast(c->p, at, w, x->dtype)))))
		return NULL;
	if (how == 2)
		w = check_bin(c, at, OP_mul, w, w);
	d = w ? check_built(c, ir_segment(c->p, at, OP_unsorted_segment_sum,
					  w, seg, n, 0)) : NULL;
	if (how == 2 && d)
		d = check_built(c, ir_unary(c->p, at, OP_sqrt, d));
	zero = check_scalar(c, at, (Lit){2, 0, 0.0}, x->dtype);
	one = check_scalar(c, at, (Lit){2, 0, 1.0}, x->dtype);
	/* s / d where d is not 0, else 0 (TF's div_no_nan), without a
	   division by 0 for a gradient to meet */
	if (!(d = per_row(c, at, d, x->shape.rank)) ||
	    !(nz = check_bin(c, at, OP_not_equal, d, zero)) ||
	    !(d = check_built(c, ir_where(c->p, at, nz, d, one))))
		return NULL;
	return check_built(c, ir_where(c->p, at, nz, check_bin(c, at, OP_div, s, d),
				       zero));
}

/* gather(params, indices, *, axis=0) and embedding_lookup(params, ids):
 * params' axes before axis, the indices' axes, params' axes after it. */
IrNode *
check_gather(Checker *c, AstNode *e, OpKind op)
{
	int lookup = strncmp(e->name, "embedding_lookup", 16) == 0;
	AstNode *ax = NULL;
	IrNode *x, *idx;
	int64_t axis = 0;

	(void)op;
	if (check_bind(c, e) < 0)
		return NULL;
	if (!lookup)
		ax = check_param(e, 2, "axis");
	if (!(x = check_expr(c, e->list[0])) ||
	    !(idx = index_arg(c, e->list[1], e->name,
			      lookup ? "ids" : "indices")))
		return NULL;
	if (x->dtype == TFG_STRING || x->shape.rank == 0) {
		diag_error(c->d, e->list[0]->loc, "'%s' takes rows of a "
			   "tensor of rank 1 or more, got %s", e->name,
			   type_s(c, x));
		return NULL;
	}
	if (strcmp(e->name, "embedding_lookup_sparse") == 0)
		return lookup_sparse(c, e, x, idx);
	if (ax && check_int_arg(c, e, ax, "the axis", &axis) < 0)
		return NULL;
	if (axis < -x->shape.rank || axis >= x->shape.rank) {
		diag_error(c->d, ax->loc, "axis %" PRId64 " is out of range "
			   "for 'gather' of %s: expected %d to %d", axis,
			   type_s(c, x), -x->shape.rank, x->shape.rank - 1);
		return NULL;
	}
	if (axis < 0)
		axis += x->shape.rank;
	if (x->shape.rank + idx->shape.rank - 1 > TFG_MAX_RANK) {
		diag_error(c->d, e->loc, "'%s' of %s by indices %s would have "
			   "rank %d; at most %d is supported", e->name,
			   type_s(c, x), type_s(c, idx),
			   x->shape.rank + idx->shape.rank - 1, TFG_MAX_RANK);
		return NULL;
	}
	return gather_at(c, e->loc, x, idx, (int)axis);
}

/* unsorted_segment_sum, _mean and _max(data, segment_ids, num_segments):
 * the ids' shape is a prefix of data's. */
IrNode *
check_segment(Checker *c, AstNode *e, OpKind op)
{
	int mean = strcmp(e->name, "unsorted_segment_mean") == 0;
	IrNode *x, *ids, *s, *n, *ones, *one;
	int64_t nseg;
	TfgShape cs;

	if (check_bind(c, e) < 0)
		return NULL;
	if (!(x = check_expr(c, e->list[0])) ||
	    !(ids = index_arg(c, e->list[1], e->name, "segment_ids")) ||
	    check_int_arg(c, e, e->list[2], "the num_segments", &nseg) < 0)
		return NULL;
	if (nseg < 0) {
		diag_error(c->d, e->list[2]->loc, "the num_segments of '%s' "
			   "must be 0 or more, got %" PRId64, e->name, nseg);
		return NULL;
	}
	if (!(dtype_is_float(x->dtype) || x->dtype == TFG_I32 ||
	      x->dtype == TFG_I64) || (mean && !dtype_is_float(x->dtype))) {
		diag_error(c->d, e->list[0]->loc, "'%s' takes %s data, got %s",
			   e->name, mean ? "float" : "f32, f64, i32 or i64",
			   type_s(c, x));
		return NULL;
	}
	if (ids->shape.rank > x->shape.rank) {
		diag_error(c->d, e->loc, "the segment_ids of '%s' must have "
			   "a shape that begins data's: got %s and %s",
			   e->name, type_s(c, ids), type_s(c, x));
		return NULL;
	}
	for (int k = 0; k < ids->shape.rank; k++) {
		int64_t a = ids->shape.dims[k], b = x->shape.dims[k];

		if (a != b && a != IR_DIM_UNKNOWN && b != IR_DIM_UNKNOWN) {
			diag_error(c->d, e->loc, "the segment_ids of '%s' must "
				   "have a shape that begins data's: got %s "
				   "and %s", e->name, type_s(c, ids),
				   type_s(c, x));
			return NULL;
		}
	}
	if (!(s = check_built(c, ir_segment(c->p, e->loc, op, x, ids, nseg,
					    0))) || !mean)
		return s;
	/* the mean: each segment's sum over its count of rows, at least 1
	   (an empty segment's mean is 0, as TF's); a row counts 1 */
	one = check_scalar(c, e->loc, (Lit){2, 0, 1.0}, x->dtype);
	ones = check_bin(c, e->loc, OP_equal, ids, ids);
	if (!one || !ones ||
	    !(ones = check_built(c, ir_cast(c->p, e->loc, ones, x->dtype))) ||
	    !(n = check_built(c, ir_segment(c->p, e->loc,
					    OP_unsorted_segment_sum, ones, ids,
					    nseg, 0))))
		return NULL;
	/* the count's shape, [num_segments] and 1s, broadcasts over s */
	cs = s->shape;
	for (int k = 1; k < cs.rank; k++)
		cs.dims[k] = 1;
	if (!(n = check_bin(c, e->loc, OP_maximum, n, one)) ||
	    !(n = check_built(c, ir_reshape(c->p, e->loc, n, &cs))))
		return NULL;
	return check_bin(c, e->loc, OP_div, s, n);
}

/* segment_sum(data, segment_ids, num_segments=)
 * (spec §6.37 "Segment reductions"): TF's, of sorted segment ids of rank 1, its rows the last
 * id + 1.  Ids the compiler knows give that (and are checked sorted
 * here); others need num_segments=, the rows the result has, and are
 * checked sorted and below it when the step runs.  The sum itself is
 * unsorted_segment_sum's, so is its gradient. */
IrNode *
check_segment_sorted(Checker *c, AstNode *e, OpKind op)
{
	AstNode *na = check_kwarg(e, "num_segments");
	IrNode *x, *ids;
	int64_t nseg = -1, last = -1;

	if (check_bind(c, e) < 0)
		return NULL;
	if (!(x = check_expr(c, e->list[0])) ||
	    !(ids = index_arg(c, e->list[1], e->name, "segment_ids")) ||
	    (na && check_int_arg(c, e, na, "the num_segments", &nseg) < 0))
		return NULL;
	if (ids->shape.rank != 1 || x->shape.rank < 1) {
		diag_error(c->d, e->list[1]->loc, "the segment_ids of "
			   "'segment_sum' are a vector, one per row of data: "
			   "got %s and %s", type_s(c, ids), type_s(c, x));
		return NULL;
	}
	if (na && nseg < 0) {
		diag_error(c->d, na->loc, "the num_segments of 'segment_sum' "
			   "must be 0 or more, got %" PRId64, nseg);
		return NULL;
	}
	if (ids->op == OP_const && ids->data) {
		for (int64_t i = 0; i < ids->shape.dims[0]; i++) {
			int64_t k = ids->dtype == TFG_I32
					    ? ((const int32_t *)ids->data)[i]
					    : ((const int64_t *)ids->data)[i];

			if (k < last || k < 0 || (na && k >= nseg)) {
				diag_error(c->d, e->list[1]->loc, "the "
					   "segment_ids of 'segment_sum' must "
					   "be %s: element %" PRId64 " is %"
					   PRId64 "%s", k < 0 ? "0 or more"
					   : k < last ? "sorted" :
					   "below num_segments", i, k,
					   k < last && k >= 0 ? ", after a "
					   "larger one" : "");
				return NULL;
			}
			last = k;
		}
		if (!na)
			nseg = last + 1;
	} else if (!na) {
		diag_error(c->d, e->loc, "'segment_sum' has as many rows as "
			   "its last segment id + 1, which only the step knows "
			   "here: give num_segments=N, the rows it has (the "
			   "ids are checked to be sorted and below it)");
		return NULL;
	} else if (!(ids = check_built(c, ir_check_range(c->p, e->loc, ids,
							 0, (double)nseg, 0,
							 IR_RANGE_SORTED)))) {
		return NULL;
	}
	if (!(dtype_is_float(x->dtype) || x->dtype == TFG_I32 ||
	      x->dtype == TFG_I64)) {
		diag_error(c->d, e->list[0]->loc, "'segment_sum' takes f32, "
			   "f64, i32 or i64 data, got %s", type_s(c, x));
		return NULL;
	}
	if (ids->shape.dims[0] != x->shape.dims[0] &&
	    ids->shape.dims[0] != IR_DIM_UNKNOWN &&
	    x->shape.dims[0] != IR_DIM_UNKNOWN) {
		diag_error(c->d, e->loc, "the segment_ids of 'segment_sum' are "
			   "one per row of data: got %s and %s", type_s(c, ids),
			   type_s(c, x));
		return NULL;
	}
	return check_built(c, ir_segment(c->p, e->loc, op, x, ids, nseg, 0));
}

/* hash_bucket(ids, num_buckets): the i64 fingerprint of each id (i32 ids
 * widened) modulo num_buckets, a constant of 1 or more. */
IrNode *
check_hash(Checker *c, AstNode *e, OpKind op)
{
	IrNode *x, *nb;
	int64_t n;

	if (check_bind(c, e) < 0)
		return NULL;
	if (!(x = index_arg(c, e->list[0], "hash_bucket", "ids")) ||
	    check_int_arg(c, e, e->list[1], "the num_buckets", &n) < 0)
		return NULL;
	if (n <= 0) {
		diag_error(c->d, e->list[1]->loc, "the num_buckets of "
			   "'hash_bucket' must be 1 or more, got %" PRId64, n);
		return NULL;
	}
	if (x->dtype != TFG_I64 &&
	    !(x = check_built(c, ir_cast(c->p, e->loc, x, TFG_I64))))
		return NULL;
	if (!(nb = check_scalar(c, e->loc, (Lit){1, n, 0}, TFG_I64)))
		return NULL;
	return check_bin(c, e->loc, op, x, nb);
}
