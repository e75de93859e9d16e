/*
 * compiler/ops_string.c: strings (spec §5.7 "Strings", §6.24 "constant"): the
 * checker of constant(), string values, and the compile-time evaluation of the
 * ops that take strings.
 *
 * Every string is a constant: a string literal, a tensor literal of
 * them, or constant(...).  There are no string inputs, and the only ops
 * that take strings move elements (indexing, slice, reshape, transpose,
 * concat, stack, split) or compare them (== and != give bool); the
 * checkers of every other op refuse them.  So the checker computes each
 * of those ops itself once the whole graph is checked (check_strings),
 * and the node becomes an OP_const in place, keeping its name, id and
 * requested device: later phases and codegen only ever copy, send and
 * print string values, and a value's byte size (IrNode.strbytes) is known
 * statically, which is what sizes arena slots and rendezvous edges.
 *
 * A value is laid out as runtime/tfg.h says: one record {offset, length}
 * per element, then the texts in element order, packed.  The layout is a
 * function of the value alone, so equal values have equal bytes (which
 * pass_cse.c relies on).
 */
#include <inttypes.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* The largest string value the checker builds: concat and stack can
 * double a value per statement, so refuse absurd ones early. */
#define STR_MAX_BYTES ((size_t)1 << 24)


static void
put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

void *
check_str_pack(Arena *a, int64_t n, const char *const *s, const size_t *len,
	       size_t *nbytes)
{
	size_t text = 0, off = (size_t)n * TFG_STRING_RECORD;
	unsigned char *buf;

	for (int64_t i = 0; i < n; i++)
		text += len[i];
	buf = arena_alloc(a, off + text + 8);
	for (int64_t i = 0; i < n; i++) {
		put_u64(buf + i * TFG_STRING_RECORD, off);
		put_u64(buf + i * TFG_STRING_RECORD + 8, len[i]);
		if (len[i])
			memcpy(buf + off, s[i], len[i]);
		off += len[i];
	}
	*nbytes = off;
	return buf;
}

/* A string literal in the graph: a string scalar (spec §5.7 "Strings"). */
IrNode *
check_string_lit(Checker *c, AstNode *e)
{
	size_t len = (size_t)e->ival, strbytes;
	const char *s = e->str;
	void *data = check_str_pack(c->a, 1, &s, &len, &strbytes);
	TfgShape scalar = {0, {0}};

	return check_built(c, ir_const(c->p, e->loc, TFG_STRING, &scalar,
				       data, strbytes));
}

/* The value of constant(value, dtype=) (spec §6.24 "constant"): value is
 * a literal, as a tensor literal's elements are (§5.6 "Tensor literals"),
 * or a tensor literal; dtype= converts it by §5.5 "Conversions". */
static IrNode *
constant_value(Checker *c, AstNode *e)
{
	AstNode *v = e->list[0], *d = check_kwarg(e, "dtype");
	TfgDtype t = TFG_F32;
	Lit l;
	IrNode *n;

	if (d && d->kind != AST_NAME) {
		diag_error(c->d, d->loc, "'dtype' of 'constant' must be a "
			   "dtype: bool, u8, i32, i64, f32, f64 or "
			   "string");
		return NULL;
	}
	if (d && check_dtype_named(d->name, &t) < 0) {
		diag_error(c->d, d->loc, "unknown dtype '%s' (expected bool, "
			   "u8, i32, i64, f32, f64 or string)", d->name);
		return NULL;
	}
	if (v->kind == AST_STRING) {
		if (d && t != TFG_STRING) {
			diag_error(c->d, v->loc, "string literal where %s is "
				   "expected", tfg_dtype_name(t));
			return NULL;
		}
		return check_string_lit(c, v);
	}
	if (v->kind == AST_TENSOR) {
		n = check_tensor_const(c, v, d ? (int)t : -1);
		if (n)
			n->loc = e->loc; /* the call's */
		return n;
	}
	if ((l = check_lit_of(v)).kind == 0) {
		diag_error(c->d, v->loc, "the value of 'constant' must be a "
			   "literal: a number, a bool, a string or a tensor "
			   "literal of them");
		return NULL;
	}
	if (d && t == TFG_STRING) {
		diag_error(c->d, v->loc, "%s literal where string is expected",
			   l.kind == 3 ? "bool" : "numeric");
		return NULL;
	}
	return check_lit_node(c, v, l, d ? t : check_lit_default(l));
}

/* constant(value, dtype=, shape=): with shape=, as TF's, a scalar value
 * fills the shape and a tensor literal of as many elements is reshaped
 * to it. */
IrNode *
check_constant(Checker *c, AstNode *e, OpKind op)
{
	AstNode *sh;
	IrNode *n;
	TfgShape s;

	(void)op;
	if (check_bind(c, e) < 0 || !(n = constant_value(c, e)))
		return NULL;
	if (!(sh = check_kwarg(e, "shape")))
		return n;
	if (check_shape_arg(c, e, sh, &s) < 0)
		return NULL;
	if (n->dtype == TFG_STRING) {
		diag_error(c->d, sh->loc, "'constant' takes no shape= for "
			   "strings: write the tensor literal");
		return NULL;
	}
	if (n->shape.rank == 0) {
		IrMake *m = arena_alloc(c->a, sizeof *m);
		return check_built(c, ir_make(c->p, e->loc, OP_fill, n->dtype,
					      &s, m, &n, 1));
	}
	if (tfg_shape_numel(&n->shape) != tfg_shape_numel(&s)) {
		diag_error(c->d, sh->loc, "the value of 'constant' has %"
			   PRId64 " elements, and shape %s needs %" PRId64
			   " (or a scalar, which fills it)",
			   tfg_shape_numel(&n->shape),
			   strchr(ir_type_str(c->a, n->dtype, &s), '['),
			   tfg_shape_numel(&s));
		return NULL;
	}
	return check_built(c, ir_reshape(c->p, e->loc, n, &s));
}

/* ------------------------------------------------------------ evaluation */

/* Row-major strides of s, in elements. */
static void
strides(const TfgShape *s, int64_t *st)
{
	int64_t m = 1;

	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = m;
		m *= s->dims[k];
	}
}

/* Which input of string node n, and which element of it (flat), output
 * element `o` (a multi-index over n's shape) comes from. */
static int64_t
source(const IrNode *n, const int64_t *o, int *k)
{
	int64_t ix[TFG_MAX_RANK], st[TFG_MAX_RANK], flat = 0, off = 0;
	const IrNode *x;
	int r = n->shape.rank, j = 0;

	*k = 0;
	switch (n->op) {
	case OP_slice: /* indexing, slice(), split: squeezed axes dropped */
		for (int a = 0; a < n->in[0]->shape.rank; a++)
			ix[a] = n->ax->begin[a] +
				((n->ax->squeeze >> a) & 1 ? 0 : o[j++]);
		break;
	case OP_reshape: /* the same elements in the same order */
		strides(&n->shape, st);
		for (int a = 0; a < r; a++)
			flat += o[a] * st[a];
		return flat;
	case OP_transpose:
		for (int a = 0; a < r; a++)
			ix[n->ax->perm[a]] = o[a];
		break;
	case OP_concat:
		memcpy(ix, o, sizeof ix[0] * (size_t)r);
		while (o[n->axis] >= off + n->in[*k]->shape.dims[n->axis])
			off += n->in[(*k)++]->shape.dims[n->axis];
		ix[n->axis] -= off;
		break;
	case OP_stack:
		*k = (int)o[n->axis];
		for (int a = 0; a < r; a++)
			if (a != n->axis)
				ix[j++] = o[a];
		break;
	default:
		TFG_ASSERT(0); /* the checkers refuse other ops on strings */
	}
	x = n->in[*k];
	strides(&x->shape, st);
	for (int a = 0; a < x->shape.rank; a++)
		flat += ix[a] * st[a];
	return flat;
}

/* Element e of a string constant. */
static const char *
elem(const IrNode *x, int64_t e, size_t *len)
{
	const char *s;

	TFG_ASSERT(tfg_string_at(x->data, x->strbytes, e, &s, len) == 0);
	return s;
}

/* Advances multi-index o over shape s in row-major order. */
static void
step(int64_t *o, const TfgShape *s)
{
	for (int a = s->rank - 1; a >= 0; a--) {
		if (++o[a] < s->dims[a])
			return;
		o[a] = 0;
	}
}

/* a == b or a != b of strings, broadcast (spec §6.10 "Comparisons"): bools. */
static int
eval_compare(Checker *c, IrNode *n)
{
	const IrNode *a = n->in[0], *b = n->in[1];
	int64_t o[TFG_MAX_RANK] = {0}, sa[TFG_MAX_RANK], sb[TFG_MAX_RANK];
	int64_t numel = tfg_shape_numel(&n->shape);
	int r = n->shape.rank;
	uint8_t *out;

	if ((size_t)numel > STR_MAX_BYTES)
		return -1;
	strides(&a->shape, sa);
	strides(&b->shape, sb);
	out = arena_alloc(c->a, (size_t)numel + 8);
	for (int64_t e = 0; e < numel; e++, step(o, &n->shape)) {
		int64_t fa = 0, fb = 0;
		size_t la, lb;
		const char *pa, *pb;
		/* broadcasting: an axis of size 1 stays at 0 */
		for (int i = 0; i < a->shape.rank; i++)
			if (a->shape.dims[i] != 1)
				fa += o[r - a->shape.rank + i] * sa[i];
		for (int i = 0; i < b->shape.rank; i++)
			if (b->shape.dims[i] != 1)
				fb += o[r - b->shape.rank + i] * sb[i];
		pa = elem(a, fa, &la);
		pb = elem(b, fb, &lb);
		out[e] = (la == lb && memcmp(pa, pb, la) == 0) ==
			 (n->op == OP_equal);
	}
	n->data = out;
	return 0;
}

/* A string-valued op: gathers its elements' texts. */
static int
eval_move(Checker *c, IrNode *n)
{
	int64_t o[TFG_MAX_RANK] = {0}, numel = tfg_shape_numel(&n->shape);
	const char **s;
	size_t *len, total = (size_t)numel * TFG_STRING_RECORD;

	if ((size_t)numel > STR_MAX_BYTES / TFG_STRING_RECORD)
		return -1;
	s = arena_alloc(c->a, ((size_t)numel + 1) * sizeof *s);
	len = arena_alloc(c->a, ((size_t)numel + 1) * sizeof *len);
	for (int64_t e = 0; e < numel; e++, step(o, &n->shape)) {
		int k;
		int64_t f = source(n, o, &k);
		s[e] = elem(n->in[k], f, &len[e]);
		if ((total += len[e]) > STR_MAX_BYTES)
			return -1;
	}
	n->data = check_str_pack(c->a, numel, s, len, &n->strbytes);
	return 0;
}

/* Every string op of the graph becomes the constant it computes, in
 * definition order, so that its inputs are constants already. */
void
check_strings(Checker *c)
{
	for (int i = 0; i < c->p->g.nodes.n; i++) {
		IrNode *n = c->p->g.nodes.v[i];
		int ok = 1, cmp = n->op == OP_equal || n->op == OP_not_equal;

		if (n->op == OP_const ||
		    (n->dtype != TFG_STRING &&
		     !(cmp && n->in[0]->dtype == TFG_STRING)))
			continue;
		for (int k = 0; k < n->nin; k++)
			ok &= n->in[k]->op == OP_const; /* else reported */
		if (!ok)
			continue;
		if ((cmp ? eval_compare(c, n) : eval_move(c, n)) < 0) {
			diag_error(c->d, n->loc, "%s%s%s would make %s of more "
				   "than 2^24 bytes: the compiler computes "
				   "strings, and no larger ones",
				   cmp ? "operator '" : "'",
				   cmp ? (n->op == OP_equal ? "==" : "!=")
				       : op_info[n->op].name, "'",
				   ir_type_str(c->a, n->dtype, &n->shape));
			continue;
		}
		ir_set_const(c->p, n);
	}
}
