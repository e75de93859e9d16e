/*
 * compiler/ops_shape.c: the checkers of the shape and matrix ops (spec
 * §6.18 "matmul and `@`" to §6.23 "size, shape, rank"): matmul and `@`,
 * transpose, reshape, slice, concat, stack, split, and size, shape and rank;
 * and list values; and expand_dims, squeeze and flatten, reshapes by
 * axes (§6.29 "expand_dims, squeeze, flatten"), and pad and tile, made of
 * slices, concats and fills (§6.31 "pad, tile").
 *
 * Every rule is static: shapes are known at compile time, so every
 * mismatch is a compile-time error at the call (or at the `@`) that names
 * both shapes.  size, shape and rank fold to constants here; slice and
 * split become OP_slice nodes (the strided copy that indexing uses,
 * §6.6 "Indexing and slicing").
 *
 * A list is not a graph value: it exists only in the checker, as the
 * elements of a Sym (Sym.list) or of an argument.  `parts = split(x, 2)`
 * binds a list; `parts[0]` is an element; `[a, b]` in the list argument
 * of concat or stack is a list of graph expressions (anywhere else it is
 * a tensor literal, §5.6 "Tensor literals").  A list where a tensor is needed
 * is an error.
 */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "compiler/compiler_int.h"
#include "lang/parse.h"

static const char *
shape_s(Checker *c, const TfgShape *s)
{
	/* "[?, 3]": ir_type_str writes unknown dims as '?' */
	return strchr(ir_type_str(c->a, TFG_F32, s), '[');
}

static const char *
type_s(Checker *c, const IrNode *n)
{
	return ir_type_str(c->a, n->dtype, &n->shape);
}

/* The parameters of call e into out[], bound (check_bind) and read by
 * their tfg names, names[] (NULL-terminated), in the signature's order;
 * an absent one is NULL.  0, or -1 (reported). */
static int
params(Checker *c, AstNode *e, const char *const *names, AstNode **out)
{
	if (check_bind(c, e) < 0)
		return -1;
	for (int i = 0; names[i]; i++)
		out[i] = check_param(e, i, names[i]);
	return 0;
}

/* A list literal of integer literals ([2, -1]) into v[max]: the count,
 * or -1 (reported). */
static int
int_list(Checker *c, AstNode *e, const char *fn, const char *what,
	 int64_t *v, int max)
{
	if (e->kind != AST_TENSOR) {
		diag_error(c->d, e->loc, "the %s of '%s' must be a list of "
			   "integer literals, like [2, 3]", what, fn);
		return -1;
	}
	if (e->n > max) {
		diag_error(c->d, e->loc, "the %s of '%s' has %d entries; at "
			   "most %d are allowed", what, fn, e->n, max);
		return -1;
	}
	for (int i = 0; i < e->n; i++) {
		Lit l = check_lit_of(e->list[i]);
		if (l.kind != 1) {
			diag_error(c->d, e->list[i]->loc, "the %s of '%s' must "
				   "be a list of integer literals, like [2, 3]",
				   what, fn);
			return -1;
		}
		v[i] = l.i;
	}
	return e->n;
}

/* An axis argument: an integer literal in [-rank, rank), made
 * non-negative.  0, or -1 (reported). */
static int
axis_arg(Checker *c, AstNode *e, const char *fn, int rank, int *axis)
{
	Lit l = check_lit_of(e);

	if (l.kind != 1) {
		diag_error(c->d, e->loc, "the axis of '%s' must be an integer "
			   "literal", fn);
		return -1;
	}
	if (l.i < -rank || l.i >= rank) {
		diag_error(c->d, e->loc, "axis %" PRId64 " is out of range for "
			   "'%s': expected %d to %d", l.i, fn, -rank,
			   rank - 1);
		return -1;
	}
	*axis = (int)(l.i < 0 ? l.i + rank : l.i);
	return 0;
}

/* ------------------------------------------------------------- matmul */

/* matmul(a, b, transpose_a=false, transpose_b=false) and a @ b (spec
 * §6.18 "matmul and `@`"): NumPy's matmul.  The last two axes are
 * matrices, the axes before them broadcast (§6.1 "Broadcasting"); a rank-1
 * operand is a row (left) or a column (right) whose axis is dropped from
 * the result.  transpose_a=true, as TF's, is a transpose of a's last two
 * axes first. */
/* transpose_a= or transpose_b= of matmul call e, arg: x with its last
 * two axes swapped when true, else x; NULL (reported). */
static IrNode *
matmul_t(Checker *c, AstNode *e, AstNode *arg, IrNode *x)
{
	int perm[TFG_MAX_RANK], r = x->shape.rank;
	Lit l;

	if (!arg)
		return x;
	if ((l = check_lit_of(arg)).kind != 3) {
		diag_error(c->d, arg->loc, "'%s' of 'matmul' must be true or "
			   "false", arg == check_kwarg(e, "transpose_a") ?
			   "transpose_a" : "transpose_b");
		return NULL;
	}
	if (!l.i)
		return x;
	if (r < 2) {
		diag_error(c->d, arg->loc, "'matmul' can transpose only a "
			   "matrix (rank 2 or more), got %s", type_s(c, x));
		return NULL;
	}
	for (int i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return check_built(c, ir_transpose(c->p, arg->loc, x, perm));
}

IrNode *
check_matmul(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"a", "b", "transpose_a",
					    "transpose_b", NULL};
	AstNode *arg[4] = {NULL, NULL, NULL, NULL};
	IrNode *x, *y;
	const char *what = e->kind == AST_CALL ? "'matmul'" : "operator '@'";
	TfgShape bx = {0, {0}}, by = {0, {0}}, bo;
	int rx, ry;
	int64_t kx, ky;
	TfgDtype t;

	if (e->kind == AST_CALL) {
		if (params(c, e, names, arg) < 0)
			return NULL;
	} else {
		arg[0] = e->a, arg[1] = e->b;
	}
	if (!(x = check_expr(c, arg[0])) || !(y = check_expr(c, arg[1])) ||
	    !(x = matmul_t(c, e, arg[2], x)) || !(y = matmul_t(c, e, arg[3], y)))
		return NULL;
	rx = x->shape.rank, ry = y->shape.rank;
	if (x->dtype == TFG_BOOL || y->dtype == TFG_BOOL ||
	    x->dtype == TFG_STRING || y->dtype == TFG_STRING) {
		diag_error(c->d, e->loc, "%s does not take %s operands", what,
			   x->dtype == TFG_STRING || y->dtype == TFG_STRING
			   ? "string" : "bool");
		return NULL;
	}
	if (rx == 0 || ry == 0) {
		diag_error(c->d, e->loc, "%s needs operands of rank 1 or "
			   "more, got %s and %s (use '*' to scale)", what,
			   type_s(c, x), type_s(c, y));
		return NULL;
	}
	kx = x->shape.dims[rx - 1];
	ky = y->shape.dims[ry >= 2 ? ry - 2 : 0];
	if (kx != ky && kx != IR_DIM_UNKNOWN && ky != IR_DIM_UNKNOWN) {
		diag_error(c->d, e->loc, "operands of %s do not match: shapes "
			   "%s and %s (%" PRId64 " columns against %" PRId64
			   " rows)", what, shape_s(c, &x->shape),
			   shape_s(c, &y->shape), kx, ky);
		return NULL;
	}
	bx.rank = rx > 2 ? rx - 2 : 0;
	by.rank = ry > 2 ? ry - 2 : 0;
	memcpy(bx.dims, x->shape.dims, sizeof bx.dims[0] * bx.rank);
	memcpy(by.dims, y->shape.dims, sizeof by.dims[0] * by.rank);
	if (shape_broadcast(&bo, &bx, &by) < 0) {
		diag_error(c->d, e->loc, "batch axes of %s do not broadcast: "
			   "shapes %s and %s", what, shape_s(c, &x->shape),
			   shape_s(c, &y->shape));
		return NULL;
	}
	t = dtype_promote(x->dtype, 0, y->dtype, 0);
	x = check_cast(c, x, t); /* before n: nodes are in topological order */
	y = check_cast(c, y, t);
	(void)op;
	return check_built(c, ir_matmul(c->p, e->loc, x, y));
}

/* ---------------------------------------------------------- transpose */

/* transpose(x) reverses the axes; transpose(x, perm) puts input axis
 * perm[i] at output axis i (spec §6.19 "transpose"). */
IrNode *
check_transpose(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"x", "perm", NULL};
	AstNode *arg[2];
	IrNode *x;
	int64_t p[TFG_MAX_RANK];
	int perm[TFG_MAX_RANK];
	uint32_t seen = 0;
	int r;

	if (params(c, e, names, arg) < 0 || !(x = check_expr(c, arg[0])))
		return NULL;
	r = x->shape.rank;
	for (int i = 0; i < r; i++)
		p[i] = r - 1 - i;
	if (arg[1]) {
		int k = int_list(c, arg[1], "transpose", "perm", p,
				 TFG_MAX_RANK);
		if (k < 0)
			return NULL;
		for (int i = 0; i < k && k == r; i++) {
			int64_t v = p[i] < 0 ? p[i] + r : p[i];
			if (v < 0 || v >= r || (seen >> v & 1))
				break;
			seen |= 1u << v;
			p[i] = v;
		}
		if (k != r || seen != (1u << r) - 1) {
			diag_error(c->d, arg[1]->loc, "the perm of 'transpose' "
				   "must be a permutation of the %d axes of %s",
				   r, type_s(c, x));
			return NULL;
		}
	}
	(void)op;
	for (int i = 0; i < r; i++)
		perm[i] = (int)p[i];
	return check_built(c, ir_transpose(c->p, e->loc, x, perm));
}

/* ------------------------------------------------------------ reshape */

/* reshape(x, dims), one dim may be -1 (spec §6.20 "reshape and slice"). */
IrNode *
check_reshape(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"x", "shape", NULL};
	AstNode *arg[2];
	IrNode *x;
	TfgShape to;
	int64_t d[TFG_MAX_RANK], known = 1, total;
	int k, hole = -1;

	if (params(c, e, names, arg) < 0 || !(x = check_expr(c, arg[0])))
		return NULL;
	if ((k = int_list(c, arg[1], "reshape", "shape", d, TFG_MAX_RANK)) < 0)
		return NULL;
	total = shape_known(&x->shape) ? tfg_shape_numel(&x->shape) : -1;
	for (int i = 0; i < k; i++) {
		if (d[i] == -1 && hole < 0) {
			hole = i;
			continue;
		}
		if (d[i] < 0) {
			diag_error(c->d, arg[1]->list[i]->loc, d[i] == -1
				   ? "only one dimension of 'reshape' may be -1"
				   : "a dimension of 'reshape' must be -1 or "
				     "more");
			return NULL;
		}
		if (d[i] > 0 && known > INT64_MAX / d[i])
			known = INT64_MAX; /* cannot match */
		else
			known *= d[i];
	}
	if (hole >= 0 && known == 0) {
		diag_error(c->d, e->loc, "'reshape' cannot infer the -1 "
			   "dimension when another dimension is 0");
		return NULL;
	}
	if (total < 0) /* x has unknown dims: the specialisation checks */
		known = total;
	if (hole >= 0 && total < 0)
		d[hole] = IR_DIM_UNKNOWN;
	else if (hole >= 0 && total % known == 0)
		d[hole] = total / known, known = total;
	if (known != total) {
		TfgShape want = {k, {0}};
		char buf[256]; /* -1 is reshape's hole here, not unknown */
		memcpy(want.dims, d, sizeof d[0] * k);
		diag_error(c->d, e->loc, "'reshape' cannot make %s (%" PRId64
			   " element%s) into shape %s", type_s(c, x), total,
			   total == 1 ? "" : "s",
			   tfg_shape_str(buf, sizeof buf, &want));
		return NULL;
	}
	(void)op;
	to.rank = k;
	memcpy(to.dims, d, sizeof d[0] * k);
	return check_built(c, ir_reshape(c->p, e->loc, x, &to));
}

/* ------------------------------------- expand_dims, squeeze, flatten */

/* An axis literal e of fn into [0, n): negative counts from n; -1
 * (reported) when it is not an integer literal or is out of range. */
static int
axis_in(Checker *c, AstNode *e, const char *fn, int n)
{
	Lit l = check_lit_of(e);

	if (l.kind != 1) {
		diag_error(c->d, e->loc, "the axis of '%s' must be an integer "
			   "literal", fn);
		return -1;
	}
	if (l.i < -n || l.i >= n) {
		diag_error(c->d, e->loc, "axis %" PRId64 " is out of range "
			   "for '%s': expected %d to %d", l.i, fn, -n, n - 1);
		return -1;
	}
	return (int)(l.i < 0 ? l.i + n : l.i);
}

/* expand_dims(x, axis), squeeze(x, axis=), flatten(x),
 * spec §6.29 "expand_dims, squeeze, flatten": reshapes whose new shape comes from
 * x's, so the rules are about axes, not element counts.  An unknown dim
 * (?) stays unknown; squeeze without an axis removes only the dims known
 * to be 1. */
IrNode *
check_dims(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"x", "axis", NULL};
	AstNode *arg[2];
	IrNode *x;
	TfgShape to = {0, {0}};
	const TfgShape *s;
	uint32_t drop = 0;
	int k;

	(void)op;
	if (params(c, e, names, arg) < 0 || !(x = check_expr(c, arg[0])))
		return NULL;
	s = &x->shape;
	if (x->dtype == TFG_STRING) {
		diag_error(c->d, e->loc, "'%s' does not take a string tensor",
			   e->name);
		return NULL;
	}
	if (strcmp(e->name, "flatten") == 0) {
		int64_t n = 1;

		if (s->rank < 1) {
			diag_error(c->d, e->loc, "'flatten' needs a batch "
				   "axis: %s is a scalar", type_s(c, x));
			return NULL;
		}
		for (int i = 1; i < s->rank; i++)
			n = s->dims[i] == IR_DIM_UNKNOWN || n == IR_DIM_UNKNOWN
			    ? IR_DIM_UNKNOWN : n * s->dims[i];
		to.rank = 2;
		to.dims[0] = s->dims[0];
		to.dims[1] = n;
	} else if (strcmp(e->name, "expand_dims") == 0) {
		if (s->rank >= TFG_MAX_RANK) {
			diag_error(c->d, e->loc, "'expand_dims' of %s would "
				   "pass tfg's rank limit, %d", type_s(c, x),
				   TFG_MAX_RANK);
			return NULL;
		}
		if ((k = axis_in(c, arg[1], e->name, s->rank + 1)) < 0)
			return NULL;
		to.rank = s->rank + 1;
		for (int i = 0, j = 0; i < to.rank; i++)
			to.dims[i] = i == k ? 1 : s->dims[j++];
	} else {
		AstNode *const *ax = arg[1] ? (arg[1]->kind == AST_TENSOR
					       ? arg[1]->list : &arg[1])
					    : NULL;
		int nax = arg[1] ? (arg[1]->kind == AST_TENSOR ? arg[1]->n
							       : 1) : 0;

		for (int i = 0; i < nax; i++) {
			if ((k = axis_in(c, ax[i], e->name, s->rank)) < 0)
				return NULL;
			if (s->dims[k] != 1 && s->dims[k] != IR_DIM_UNKNOWN) {
				diag_error(c->d, ax[i]->loc, "'squeeze' cannot "
					   "remove axis %d of %s: its size is "
					   "%" PRId64 ", not 1", k,
					   type_s(c, x), s->dims[k]);
				return NULL;
			}
			drop |= 1u << k;
		}
		for (int i = 0; i < s->rank; i++)
			if (nax ? !(drop >> i & 1) : s->dims[i] != 1)
				to.dims[to.rank++] = s->dims[i];
	}
	return check_built(c, ir_reshape(c->p, e->loc, x, &to));
}

/* ----------------------------------------------------------- pad, tile */

/* The rows [at, at + 1) of x on axis k. */
static IrNode *
row_of(Checker *c, SrcLoc loc, IrNode *x, int k, int64_t at)
{
	int64_t b[TFG_MAX_RANK] = {0}, z[TFG_MAX_RANK];

	for (int i = 0; i < x->shape.rank; i++)
		z[i] = x->shape.dims[i];
	b[k] = at;
	z[k] = 1;
	return check_built(c, ir_slice(c->p, loc, x, b, z, 0));
}

/* pad(x, paddings, mode="CONSTANT", constant_values=0),
 * spec §6.31 "pad, tile": per axis k, paddings[k] = [before, after] elements: a
 * fill of constant_values, or the mirror of x without its edge
 * (REFLECT) or with it (SYMMETRIC); made as a concat per padded axis of
 * fills or single-row slices around x. */
static IrNode *
pad(Checker *c, AstNode *e, AstNode **arg, IrNode *x)
{
	static const char *const modes[] = {"CONSTANT", "REFLECT",
					    "SYMMETRIC"};
	AstNode *pl = arg[1], *md = arg[2], *cv = arg[3];
	int mode = 0, r = x->shape.rank;
	IrNode *fillv = NULL, *x0 = x;

	if (md) {
		const char *w;

		if (md->kind != AST_STRING) {
			diag_error(c->d, md->loc, "the mode of 'pad' must be "
				   "\"CONSTANT\", \"REFLECT\" or \"SYMMETRIC\"");
			return NULL;
		}
		for (mode = 0; mode < 3 && strcasecmp(md->str, modes[mode]);
		     mode++)
			;
		if (mode == 3) {
			char up[16] = "";

			for (size_t i = 0; md->str[i] && i + 1 < sizeof up; i++)
				up[i] = (char)toupper((unsigned char)md->str[i]);
			w = check_nearest(up, modes, 3);
			diag_error(c->d, md->loc, "unknown mode \"%s\" of 'pad' "
				   "(CONSTANT, REFLECT or SYMMETRIC)%s%s%s",
				   md->str, w ? "; did you mean \"" : "",
				   w ? w : "", w ? "\"?" : "");
			return NULL;
		}
	}
	if (pl->kind != AST_TENSOR || pl->n != r) {
		diag_error(c->d, pl->loc, "the paddings of 'pad' must be a list "
			   "of %d [before, after] pairs, one per axis of %s", r,
			   type_s(c, x));
		return NULL;
	}
	if (mode == 0) {
		Lit l = cv ? check_lit_of(cv) : (Lit){1, 0, 0};

		if (x->dtype == TFG_STRING || (cv && !l.kind)) {
			diag_error(c->d, cv ? cv->loc : e->loc, "'pad' pads "
				   "numbers and bools with a literal "
				   "constant_values");
			return NULL;
		}
		if (x->dtype == TFG_BOOL && !cv)
			l = (Lit){3, 0, 0};
		if (!(fillv = check_lit_node(c, cv ? cv : e, l, x->dtype)))
			return NULL;
	} else if (cv) {
		diag_error(c->d, cv->loc, "constant_values of 'pad' is for "
			   "mode \"CONSTANT\" only");
		return NULL;
	}
	for (int k = 0; k < r; k++) {
		int64_t w[2], d = x->shape.dims[k];
		IrNode **part;
		int np = 0, nw;

		if ((nw = int_list(c, pl->list[k], "pad", "paddings entry", w,
				   2)) < 0)
			return NULL;
		if (nw != 2 || w[0] < 0 || w[1] < 0) {
			diag_error(c->d, pl->list[k]->loc, "each entry of the "
				   "paddings of 'pad' is [before, after], both "
				   "0 or more");
			return NULL;
		}
		if (w[0] == 0 && w[1] == 0)
			continue;
		if (d == IR_DIM_UNKNOWN && mode) {
			diag_error(c->d, e->loc, "'pad' mirrors axis %d of %s: "
				   "its size must be known", k, type_s(c, x0));
			return NULL;
		}
		if (mode && (w[0] > d - (mode == 1) || w[1] > d - (mode == 1))) {
			diag_error(c->d, pl->list[k]->loc, "'pad' %s of axis %d "
				   "of %s takes at most %" PRId64 " on each "
				   "side, got [%" PRId64 ", %" PRId64 "]",
				   modes[mode], k, type_s(c, x0),
				   d - (mode == 1), w[0], w[1]);
			return NULL;
		}
		if (w[0] + w[1] > 4096) {
			diag_error(c->d, pl->list[k]->loc, "'pad' pads at most "
				   "4096 elements an axis");
			return NULL;
		}
		part = arena_alloc(c->a, sizeof *part * (size_t)(w[0] + w[1] + 3));
		for (int side = 0; side < 2; side++) {
			if (mode == 0 && w[side]) {
				IrMake *m = arena_alloc(c->a, sizeof *m);
				TfgShape fs = x->shape;

				fs.dims[k] = w[side];
				part[np++] = check_built(c, ir_make(c->p, e->loc,
					OP_fill, x->dtype, &fs, m, &fillv, 1));
			}
			/* the mirror: rows w - 1 + (REFLECT) down to the
			   edge before x, from the edge after it */
			for (int64_t j = 0; mode && j < w[side]; j++) {
				int64_t at = side == 0
				    ? w[0] - j - (mode == 2)
				    : d - 1 - j - (mode == 1);
				part[np++] = row_of(c, e->loc, x, k, at);
			}
			if (side == 0)
				part[np++] = x;
		}
		for (int i = 0; i < np; i++)
			if (!part[i])
				return NULL;
		if (!(x = check_built(c, ir_concat(c->p, e->loc, part, np, k))))
			return NULL;
	}
	return x;
}

/* tile(x, multiples) (spec §6.31 "pad, tile"): x repeated multiples[k]
 * times along each axis k, as a concat of copies. */
static IrNode *
tile(Checker *c, AstNode *e, AstNode **arg, IrNode *x)
{
	int64_t m[TFG_MAX_RANK];
	int r = x->shape.rank, n;

	if ((n = int_list(c, arg[1], "tile", "multiples", m, TFG_MAX_RANK)) <
	    0)
		return NULL;
	if (n != r) {
		diag_error(c->d, arg[1]->loc, "the multiples of 'tile' have %d "
			   "entr%s for %s: give one per axis", n,
			   n == 1 ? "y" : "ies", type_s(c, x));
		return NULL;
	}
	for (int k = 0; k < r; k++) {
		IrNode *part[256];

		if (m[k] < 0 || m[k] > 256) {
			diag_error(c->d, arg[1]->list[k]->loc, "a multiple of "
				   "'tile' must be 0 to 256, got %" PRId64,
				   m[k]);
			return NULL;
		}
		if (m[k] == 1)
			continue;
		if (m[k] == 0) {
			int64_t b[TFG_MAX_RANK] = {0}, z[TFG_MAX_RANK];

			for (int i = 0; i < r; i++)
				z[i] = i == k ? 0 : x->shape.dims[i];
			x = check_built(c, ir_slice(c->p, e->loc, x, b, z, 0));
		} else {
			for (int i = 0; i < m[k]; i++)
				part[i] = x;
			x = check_built(c, ir_concat(c->p, e->loc, part,
						     (int)m[k], k));
		}
		if (!x)
			return NULL;
	}
	return x;
}

/* pad and tile: the argument, then the op's own rules. */
IrNode *
check_pad(Checker *c, AstNode *e, OpKind op)
{
	static const char *const pads[] = {"x", "paddings", "mode",
					   "constant_values", NULL};
	static const char *const tiles[] = {"x", "multiples", NULL};
	int is_pad = strcmp(e->name, "pad") == 0;
	AstNode *arg[4];
	IrNode *x;

	(void)op;
	if (params(c, e, is_pad ? pads : tiles, arg) < 0 ||
	    !(x = check_expr(c, arg[0])))
		return NULL;
	if (x->shape.rank == 0) {
		diag_error(c->d, e->loc, "'%s' of a scalar: %s has no axes",
			   e->name, type_s(c, x));
		return NULL;
	}
	if (!is_pad)
		for (int k = 0; k < x->shape.rank; k++)
			if (x->shape.dims[k] == IR_DIM_UNKNOWN) {
				diag_error(c->d, e->loc, "'tile' needs the "
					   "size of every axis of %s",
					   type_s(c, x));
				return NULL;
			}
	return is_pad ? pad(c, e, arg, x) : tile(c, e, arg, x);
}

/* -------------------------------------------------------------- slice */

/* slice(x, begin, size) as TF's (spec §6.20 "reshape and slice"): one entry
 * per axis, size -1 for "to the end"; nothing is clamped. */
IrNode *
check_slice(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"x", "begin", "size", NULL};
	AstNode *arg[3];
	IrNode *x;
	int64_t b[TFG_MAX_RANK], s[TFG_MAX_RANK];
	int r;

	if (params(c, e, names, arg) < 0 || !(x = check_expr(c, arg[0])))
		return NULL;
	r = x->shape.rank;
	if (int_list(c, arg[1], "slice", "begin", b, TFG_MAX_RANK) < 0 ||
	    int_list(c, arg[2], "slice", "size", s, TFG_MAX_RANK) < 0)
		return NULL;
	for (int i = 1; i < 3; i++)
		if (arg[i]->n != r) {
			diag_error(c->d, arg[i]->loc, "the %s of 'slice' has "
				   "%d entr%s for %s: give one per axis",
				   names[i], arg[i]->n,
				   arg[i]->n == 1 ? "y" : "ies", type_s(c, x));
			return NULL;
		}
	(void)op;
	for (int i = 0; i < r; i++) {
		int64_t len = x->shape.dims[i];
		if (len == IR_DIM_UNKNOWN && b[i] >= 0 && s[i] >= -1)
			continue; /* range checked when known */
		if (s[i] == -1 && b[i] >= 0 && b[i] <= len)
			s[i] = len - b[i];
	}
	/* ir_slice refuses what is out of range */
	return check_built(c, ir_slice(c->p, e->loc, x, b, s, 0));
}

/* -------------------------------------------------------------- lists */

Sym *
check_list_sym(Checker *c, AstNode *e)
{
	Sym *s;

	if (e->kind != AST_NAME || !(s = check_find(&c->syms, e->name)))
		return NULL;
	return s->list ? s : NULL;
}

/* list[a:b]: one slice of a list expression (spec §6.22 "split and lists"). */
static int
is_list_slice(Checker *c, AstNode *e)
{
	return e->kind == AST_INDEX && e->n == 1 &&
	       e->list[0]->kind == AST_SLICE && check_is_list(c, e->a);
}

int
check_is_list(Checker *c, AstNode *e)
{
	return check_is_list_call(e) || check_list_sym(c, e) != NULL ||
	       is_list_slice(c, e);
}

/* list[a:b] with Python's rules (negative from the end, clamped); an
 * empty result is an error, since no use of a list takes one. */
static PtrVec *
slice_list(Checker *c, AstNode *e, const char *what)
{
	PtrVec *v = check_list(c, e->a, what), *out;
	AstNode *sl = e->list[0];
	int64_t b[2] = {0, 0};

	if (!v)
		return NULL;
	b[1] = v->n;
	for (int k = 0; k < 2; k++) {
		AstNode *x = k ? sl->b : sl->a;
		if (x && check_static_int(c, x, &b[k]) < 0)
			return NULL;
		if (b[k] < 0)
			b[k] += v->n;
		b[k] = b[k] < 0 ? 0 : b[k] > v->n ? v->n : b[k];
	}
	if (b[0] >= b[1]) {
		diag_error(c->d, sl->loc, "this slice of a list of %d tensor%s "
			   "is empty", v->n, v->n == 1 ? "" : "s");
		return NULL;
	}
	out = arena_alloc(c->a, sizeof *out);
	for (int64_t i = b[0]; i < b[1]; i++)
		vec_push(c->a, out, v->v[i]);
	return out;
}

/* what: "'concat'" and so on, for the error when e is no list. */
PtrVec *
check_list(Checker *c, AstNode *e, const char *what)
{
	Sym *s;
	PtrVec *v;

	if (check_is_list_call(e))
		return check_list_call(c, e);
	if (is_list_slice(c, e))
		return slice_list(c, e, what);
	if ((s = check_list_sym(c, e)) != NULL)
		return s->list;
	if (e->kind != AST_TENSOR) {
		diag_error(c->d, e->loc, "%s takes a list of tensors, like "
			   "[a, b]", what);
		return NULL;
	}
	v = arena_alloc(c->a, sizeof *v);
	for (int i = 0; i < e->n; i++) {
		IrNode *x = check_expr(c, e->list[i]);
		if (!x)
			return NULL;
		vec_push(c->a, v, x);
	}
	if (v->n == 0) {
		diag_error(c->d, e->loc, "%s needs at least one tensor", what);
		return NULL;
	}
	return v;
}

IrNode *
check_list_index(Checker *c, AstNode *e)
{
	PtrVec *v = check_list(c, e->a, "indexing");
	AstNode *ix = e->list[0];
	int64_t i;

	if (!v)
		return NULL;
	if (e->n == 1 && ix->kind == AST_SLICE) {
		diag_error(c->d, e->loc, "a slice of a list is a list, not a "
			   "tensor: give it to concat or stack, or assign it "
			   "to a name");
		return NULL;
	}
	if (e->n != 1) {
		diag_error(c->d, e->loc, "a list takes one integer index or "
			   "one slice: write list[i] or list[a:b]");
		return NULL;
	}
	if (check_static_int(c, ix, &i) < 0)
		return NULL;
	if (i < -v->n || i >= v->n) {
		diag_error(c->d, ix->loc, "index %" PRId64 " is out of range "
			   "for a list of %d tensor%s", i, v->n,
			   v->n == 1 ? "" : "s");
		return NULL;
	}
	return v->v[i < 0 ? i + v->n : i];
}

/* The elements of list argument e, promoted together
 * (spec §5.4 "The result dtype of a binary operation", no weak operands) and
 * converted; all of rank >= min_rank.  NULL: reported. */
static PtrVec *
list_arg(Checker *c, AstNode *call, AstNode *e, int min_rank)
{
	const char *what = arena_printf(c->a, "'%s'", call->name);
	PtrVec *v = check_list(c, e, what), *out;
	TfgDtype t;
	int nbool = 0, nstr = 0;

	if (!v)
		return NULL;
	for (int i = 0; i < v->n; i++) {
		IrNode *x = v->v[i];
		nbool += x->dtype == TFG_BOOL;
		nstr += x->dtype == TFG_STRING;
		if (x->shape.rank < min_rank) {
			diag_error(c->d, call->loc, "%s cannot join scalars "
				   "(use 'stack')", what);
			return NULL;
		}
	}
	if (nstr && nstr != v->n) {
		diag_error(c->d, call->loc, "%s cannot mix string and %s "
			   "tensors", what, nbool ? "bool" : "number");
		return NULL;
	}
	if (nbool && nbool != v->n) {
		diag_error(c->d, call->loc, "%s cannot mix bool and number "
			   "tensors", what);
		return NULL;
	}
	t = ((IrNode *)v->v[0])->dtype;
	for (int i = 0; i < v->n; i++)
		t = dtype_promote(t, 0, ((IrNode *)v->v[i])->dtype, 0);
	out = arena_alloc(c->a, sizeof *out);
	for (int i = 0; i < v->n; i++)
		vec_push(c->a, out, check_cast(c, v->v[i], t));
	return out;
}

/* concat(values, axis) (spec §6.21 "concat and stack"): same rank, same dims
 * off the axis. */
IrNode *
check_concat(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"values", "axis", NULL};
	AstNode *arg[2];
	PtrVec *v;
	IrNode *x0;
	TfgShape s;
	int axis;

	if (params(c, e, names, arg) < 0 || !(v = list_arg(c, e, arg[0], 1)))
		return NULL;
	x0 = v->v[0];
	if (axis_arg(c, arg[1], "concat", x0->shape.rank, &axis) < 0)
		return NULL;
	s = x0->shape;
	for (int i = 0; i < v->n; i++) {
		IrNode *x = v->v[i];
		int ok = x->shape.rank == x0->shape.rank;
		for (int k = 0; ok && k < x->shape.rank; k++) {
			int64_t a = x->shape.dims[k], b = s.dims[k];
			ok = k == axis || a == b || a == IR_DIM_UNKNOWN ||
			     b == IR_DIM_UNKNOWN;
			if (k != axis && b == IR_DIM_UNKNOWN)
				s.dims[k] = a; /* the known one */
		}
		if (!ok) {
			diag_error(c->d, e->loc, "tensors of 'concat' on axis "
				   "%d do not match: shapes %s and %s", axis,
				   shape_s(c, &x0->shape),
				   shape_s(c, &x->shape));
			return NULL;
		}
	}
	(void)op;
	return check_built(c, ir_concat(c->p, e->loc, (IrNode **)v->v, v->n,
					axis));
}

/* stack(values, axis=0) (spec §6.21 "concat and stack"): same shapes, a new
 * axis. */
IrNode *
check_stack(Checker *c, AstNode *e, OpKind op)
{
	static const char *const names[] = {"values", "axis", NULL};
	AstNode *arg[2];
	PtrVec *v;
	IrNode *x0;
	TfgShape s;
	int axis = 0, r;

	if (params(c, e, names, arg) < 0 || !(v = list_arg(c, e, arg[0], 0)))
		return NULL;
	x0 = v->v[0];
	r = x0->shape.rank;
	if (r + 1 > TFG_MAX_RANK) {
		diag_error(c->d, e->loc, "'stack' would make a tensor of rank "
			   "%d; at most %d is allowed", r + 1, TFG_MAX_RANK);
		return NULL;
	}
	if (arg[1] && axis_arg(c, arg[1], "stack", r + 1, &axis) < 0)
		return NULL;
	s = x0->shape;
	for (int i = 1; i < v->n; i++) {
		IrNode *x = v->v[i];
		TfgShape s0 = x0->shape, s1 = x->shape;
		int ok = s0.rank == s1.rank;
		for (int k = 0; ok && k < r; k++) {
			ok = s.dims[k] == s1.dims[k] ||
			     s.dims[k] == IR_DIM_UNKNOWN ||
			     s1.dims[k] == IR_DIM_UNKNOWN;
			if (s.dims[k] == IR_DIM_UNKNOWN)
				s.dims[k] = s1.dims[k]; /* the known one */
		}
		if (!ok) {
			diag_error(c->d, e->loc, "tensors of 'stack' must have "
				   "one shape: shapes %s and %s",
				   shape_s(c, &s0), shape_s(c, &s1));
			return NULL;
		}
	}
	(void)op;
	return check_built(c, ir_stack(c->p, e->loc, (IrNode **)v->v, v->n,
				       axis));
}

/* split along an axis of unknown size: the parts' sizes are those given
 * (-1 and the equal parts unknown), checked in the specialisation. */
static PtrVec *
split_unknown(Checker *c, AstNode *e, IrNode *x, int axis, AstNode *how)
{
	int64_t *sz = arena_alloc(c->a, 4096 * sizeof *sz);
	PtrVec *v = arena_alloc(c->a, sizeof *v);
	Lit l = check_lit_of(how);
	int np;

	if (how->kind == AST_TENSOR) {
		if ((np = int_list(c, how, "split", "sizes", sz, 4096)) < 0)
			return NULL;
	} else if (l.kind != 1) {
		diag_error(c->d, how->loc, "the second argument of 'split' "
			   "must be an integer literal or a list of them");
		return NULL;
	} else {
		if (l.i < 1 || l.i > 4096) {
			diag_error(c->d, how->loc, "'split' cannot divide "
				   "axis %d of %s into %" PRId64 " equal parts",
				   axis, type_s(c, x), l.i);
			return NULL;
		}
		np = (int)l.i;
		for (int i = 0; i < np; i++)
			sz[i] = IR_DIM_UNKNOWN;
	}
	for (int i = 0; i < np; i++) {
		int64_t begin[TFG_MAX_RANK] = {0}, size[TFG_MAX_RANK];
		IrNode *n;

		memcpy(size, x->shape.dims, sizeof size);
		size[axis] = sz[i] < 0 ? IR_DIM_UNKNOWN : sz[i];
		if (!(n = check_built(c, ir_slice(c->p, e->loc, x, begin, size,
						  0))))
			return NULL;
		vec_push(c->a, v, n);
	}
	return v;
}

/* split(x, n or [sizes], axis=0) (spec §6.22 "split and lists"): a list of
 * OP_slice. */
PtrVec *
check_split_list(Checker *c, AstNode *e)
{
	static const char *const names[] = {"x", "num_or_size_splits", "axis",
					    NULL};
	AstNode *arg[3];
	IrNode *x;
	PtrVec *v;
	int64_t *sz, len, sum = 0, off = 0;
	int axis = 0, np, hole = -1;

	if (params(c, e, names, arg) < 0 || !(x = check_expr(c, arg[0])))
		return NULL;
	if (x->shape.rank == 0) {
		diag_error(c->d, e->loc, "'split' cannot split a scalar");
		return NULL;
	}
	if (arg[2] && axis_arg(c, arg[2], "split", x->shape.rank, &axis) < 0)
		return NULL;
	len = x->shape.dims[axis];
	if (len == IR_DIM_UNKNOWN)
		return split_unknown(c, e, x, axis, arg[1]);
	if (arg[1]->kind == AST_TENSOR) {
		sz = arena_alloc(c->a, (arg[1]->n + 1) * sizeof *sz);
		if ((np = int_list(c, arg[1], "split", "sizes", sz, 4096)) < 0)
			return NULL;
		for (int i = 0; i < np; i++) {
			if (sz[i] == -1 && hole < 0) {
				hole = i;
				continue;
			}
			if (sz[i] < 0) {
				diag_error(c->d, arg[1]->list[i]->loc, "a size "
					   "of 'split' must be 0 or more (one "
					   "may be -1)");
				return NULL;
			}
			sum += sz[i] > len ? len + 1 : sz[i];
		}
		if (hole >= 0 && sum <= len)
			sz[hole] = len - sum, sum = len;
		if (np == 0 || sum != len) {
			diag_error(c->d, arg[1]->loc, "the sizes of 'split' "
				   "must add up to %" PRId64 ", the size of axis "
				   "%d of %s", len, axis, type_s(c, x));
			return NULL;
		}
	} else {
		int64_t k;
		if (check_lit_of(arg[1]).kind != 1) {
			diag_error(c->d, arg[1]->loc, "the second argument of "
				   "'split' must be an integer literal or a "
				   "list of them");
			return NULL;
		}
		k = check_lit_of(arg[1]).i;
		if (k < 1 || k > 4096 || len % k != 0) {
			diag_error(c->d, arg[1]->loc, "'split' cannot divide "
				   "axis %d of %s into %" PRId64 " equal parts",
				   axis, type_s(c, x), k);
			return NULL;
		}
		np = (int)k;
		sz = arena_alloc(c->a, (size_t)np * sizeof *sz);
		for (int i = 0; i < np; i++)
			sz[i] = len / k;
	}
	v = arena_alloc(c->a, sizeof *v);
	for (int i = 0; i < np; i++) {
		int64_t begin[TFG_MAX_RANK] = {0}, size[TFG_MAX_RANK];
		IrNode *n;

		memcpy(size, x->shape.dims, sizeof size);
		begin[axis] = off;
		size[axis] = sz[i];
		off += sz[i];
		if (!(n = check_built(c, ir_slice(c->p, e->loc, x, begin, size,
						  0))))
			return NULL;
		vec_push(c->a, v, n);
	}
	return v;
}

/* split where a tensor is needed. */
IrNode *
check_split(Checker *c, AstNode *e, OpKind op)
{
	(void)op;
	if (check_split_list(c, e))
		diag_error(c->d, e->loc, "'split' gives a list, not a tensor: "
			   "assign it to a name or take an element "
			   "(split(x, 2)[0])");
	return NULL;
}

/* ---------------------------------------------------- size shape rank */

/* size(x) i64, shape(x) i64[rank], rank(x) i32
 * (spec §6.23 "size, shape, rank"): constants (size and shape of x with
 * `?` dims keep x as an input: check_unknown_dep). */
IrNode *
check_meta(Checker *c, AstNode *e, OpKind op)
{
	IrNode *x;
	TfgDtype t = TFG_I64;
	TfgShape s = {0, {0}};
	void *data;

	if (check_bind(c, e) < 0 || !(x = check_expr(c, e->list[0])))
		return NULL;
	data = arena_alloc(c->a, 8 * (TFG_MAX_RANK + 1));
	(void)op; /* OP_const: size, shape and rank build constants */
	if (strcmp(e->name, "rank") == 0) {
		t = TFG_I32;
		*(int32_t *)data = x->shape.rank;
	} else if (strcmp(e->name, "size") == 0) {
		/* -1 with unknown dims: never compiled, the specialisation
		   has the value */
		*(int64_t *)data = shape_known(&x->shape)
				   ? tfg_shape_numel(&x->shape) : -1;
	} else {
		s.rank = 1;
		s.dims[0] = x->shape.rank;
		memcpy(data, x->shape.dims, 8 * (size_t)x->shape.rank);
	}
	return check_unknown_dep(c, check_built(c, ir_const(c->p, e->loc, t,
							   &s, data, 0)), x);
}
