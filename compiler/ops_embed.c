/*
 * compiler/ops_embed.c: the checkers of rows by index,
 * spec §6.36 "gather, embedding_lookup", §6.37 "Segment reductions" and
 * §6.38 "hash_bucket, sigmoid_cross_entropy" (hash_bucket; the other is a
 * composition of compiler/ops_math.c): check_gather, check_segment and
 * check_hash, named by the check column of stdlib/ops.def.
 *
 *   gather(params, indices, axis=)     OP_gather
 *   embedding_lookup(params, ids)      OP_gather on axis 0
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

/* An integer literal argument e (a param's value too), the `what` of
 * call fn, into *v; -1 (reported). */
static int
int_arg(Checker *c, AstNode *e, const char *fn, const char *what,
	int64_t *v)
{
	Lit l = check_lit_of(e);

	if (l.kind != 1) {
		diag_error(c->d, e->loc, "the %s of '%s' must be an integer "
			   "literal", what, fn);
		return -1;
	}
	*v = l.i;
	return 0;
}

/* gather(params, indices, *, axis=0) and embedding_lookup(params, ids):
 * params' axes before axis, the indices' axes, params' axes after it. */
IrNode *
check_gather(Checker *c, AstNode *e, OpKind op)
{
	int lookup = strcmp(e->name, "embedding_lookup") == 0;
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
	if (ax && int_arg(c, ax, e->name, "axis", &axis) < 0)
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
	return check_built(c, ir_gather(c->p, e->loc, x, idx, (int)axis));
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
	    int_arg(c, e->list[2], e->name, "num_segments", &nseg) < 0)
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
	ones = check_built(c, ir_binary(c->p, e->loc, OP_equal, ids, ids));
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
	if (!(n = check_built(c, ir_binary(c->p, e->loc, OP_maximum, n, one))) ||
	    !(n = check_built(c, ir_reshape(c->p, e->loc, n, &cs))))
		return NULL;
	return check_built(c, ir_binary(c->p, e->loc, OP_div, s, n));
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
	    int_arg(c, e->list[1], "hash_bucket", "num_buckets", &n) < 0)
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
	return check_built(c, ir_binary(c->p, e->loc, op, x, nb));
}
