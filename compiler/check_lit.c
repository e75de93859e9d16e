/*
 * compiler/check_lit.c: literals, for the checker (compiler/check.c) and
 * the sessions (compiler/session_expr.c): scalar literals folded, and
 * kept weak until the other operand's dtype is known
 * (spec §5.3 "Weak operands"), stored in a dtype; tensor literals walked
 * into their dtype, shape and bytes
 * (spec §5.2 "Literals and their default dtypes").
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"
#include "lang/parse.h"

/* == != < <= > >= */
int
check_is_compare(int tk)
{
	return tk >= TK_EQ && tk <= TK_GE;
}

/* Arithmetic on two numeric literals is a literal (spec §5.3 "Weak operands"),
 * computed as Python computes on its scalars but with the language's integer
 * rules: 64-bit wrapping, floor division and modulo, x / 0 = 0. */
static Lit
lit_fold(int op, Lit a, Lit b)
{
	Lit r = {0, 0, 0};

	if (a.kind == 0 || b.kind == 0 || a.kind == 3 || b.kind == 3)
		return r;
	if (a.kind == 1 && b.kind == 1) {
		uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
		int64_t q, m;
		r.kind = 1;
		if (op == TK_PLUS)
			r.i = (int64_t)(x + y);
		else if (op == TK_MINUS)
			r.i = (int64_t)(x - y);
		else if (op == TK_STAR)
			r.i = (int64_t)(x * y);
		else if (b.i == 0)
			r.i = 0;
		else if (b.i == -1)
			r.i = op == TK_SLASH ? (int64_t)(0 - x) : 0;
		else {
			q = a.i / b.i, m = a.i % b.i;
			if (m != 0 && (m < 0) != (b.i < 0))
				q--, m += b.i;
			r.i = op == TK_SLASH ? q : m;
		}
		return r;
	}
	{
		double x = a.kind == 2 ? a.f : (double)a.i;
		double y = b.kind == 2 ? b.f : (double)b.i;
		r.kind = 2;
		if (op == TK_PLUS)
			r.f = x + y;
		else if (op == TK_MINUS)
			r.f = x - y;
		else if (op == TK_STAR)
			r.f = x * y;
		else if (op == TK_SLASH)
			r.f = x / y;
		else {
			r.f = fmod(x, y);
			if (r.f != 0 && (r.f < 0) != (y < 0))
				r.f += y;
		}
	}
	return r;
}

Lit
check_lit_of(const AstNode *e)
{
	Lit l = {0, 0, 0};

	switch (e->kind) {
	case AST_INT:
		l.kind = 1, l.i = e->ival;
		break;
	case AST_FLOAT:
		l.kind = 2, l.f = e->fval;
		break;
	case AST_BOOL:
		l.kind = 3, l.i = e->ival;
		break;
	case AST_UNARY:
		l = check_lit_of(e->a);
		if (l.kind == 1)
			l.i = (int64_t)(0 - (uint64_t)l.i);
		else if (l.kind == 2)
			l.f = -l.f;
		else
			l.kind = 0; /* -true is not a literal */
		break;
	case AST_BINARY:
		/* a comparison is an op, never a literal */
		if (!check_is_compare(e->op) && e->op != TK_AT)
			l = lit_fold(e->op, check_lit_of(e->a), check_lit_of(e->b));
		break;
	default:
		break;
	}
	return l;
}

TfgDtype
check_lit_default(Lit l)
{
	if (l.kind == 2)
		return TFG_F32;
	if (l.kind == 3)
		return TFG_BOOL;
	return l.i >= INT32_MIN && l.i <= INT32_MAX ? TFG_I32 : TFG_I64;
}

/* Stores literal l as dtype t at dst; -1 (reported) when it does not fit. */
int
check_lit_store(Checker *c, SrcLoc loc, Lit l, TfgDtype t, void *dst)
{
	double f = l.kind == 2 ? l.f : (double)l.i;

	if (t == TFG_STRING) { /* strings are AST_STRING, never a Lit */
		diag_error(c->d, loc, "%s literal where string is expected",
			   l.kind == 3 ? "bool" : "numeric");
		return -1;
	}
	if (l.kind == 2 && dtype_is_int(t)) {
		diag_error(c->d, loc, "float literal where %s is expected",
			   tfg_dtype_name(t));
		return -1;
	}
	if ((l.kind == 3) != (t == TFG_BOOL)) {
		diag_error(c->d, loc, "%s literal where %s is expected",
			   l.kind == 3 ? "bool" : "numeric", tfg_dtype_name(t));
		return -1;
	}
	switch (t) {
	case TFG_BOOL:
		*(uint8_t *)dst = (uint8_t)l.i;
		break;
	case TFG_U8:
		if (l.i < 0 || l.i > UINT8_MAX) {
			diag_error(c->d, loc,
				   "literal %" PRId64 " does not fit in u8",
				   l.i);
			return -1;
		}
		*(uint8_t *)dst = (uint8_t)l.i;
		break;
	case TFG_I32:
		if (l.i < INT32_MIN || l.i > INT32_MAX) {
			diag_error(c->d, loc,
				   "literal %" PRId64 " does not fit in i32",
				   l.i);
			return -1;
		}
		*(int32_t *)dst = (int32_t)l.i;
		break;
	case TFG_I64:
		*(int64_t *)dst = l.i;
		break;
	case TFG_F32:
		if (isfinite(f) && !isfinite((float)f)) {
			diag_error(c->d, loc,
				   "literal %g is out of range for f32", f);
			return -1;
		}
		*(float *)dst = (float)f;
		break;
	case TFG_F64:
		*(double *)dst = f;
		break;
	default:
		TFG_ASSERT(0);
	}
	return 0;
}

IrNode *
check_built(Checker *c, IrNode *n)
{
	if (n) {
		n->req = check_node_device(c); /* replicas.c */
		n->why = check_node_why(c);
	}
	return n;
}

IrNode *
check_bin(Checker *c, SrcLoc loc, OpKind op, IrNode *a, IrNode *b)
{
	return a && b ? check_built(c, ir_binary(c->p, loc, op, a, b)) : NULL;
}

int
check_int_arg(Checker *c, AstNode *call, AstNode *e, const char *what,
	      int64_t *v)
{
	Lit l = check_lit_of(e);

	if (l.kind != 1) {
		diag_error(c->d, e->loc, "%s of '%s' must be an integer "
			   "literal", what, call->name);
		return -1;
	}
	*v = l.i;
	return 0;
}

IrNode *
check_scalar(Checker *c, SrcLoc loc, Lit l, TfgDtype t)
{
	void *data = arena_alloc(c->a, 8);
	TfgShape scalar = {0, {0}};

	if (check_lit_store(c, loc, l, t, data) < 0)
		return NULL;
	return check_built(c, ir_const(c->p, loc, t, &scalar, data, 0));
}

IrNode *
check_lit_node(Checker *c, AstNode *e, Lit l, TfgDtype t)
{
	return check_scalar(c, e->loc, l, t);
}

IrNode *
check_tensor_const(Checker *c, AstNode *e, int dtype)
{
	TfgDtype t;
	TfgShape s;
	size_t strbytes = 0;
	void *data = check_tensor_data(c, e, dtype, &t, &s, &strbytes);

	if (!data)
		return NULL;
	return check_built(c, ir_const(c->p, e->loc, t, &s, data, strbytes));
}

/* Collects a tensor literal's elements and shape; -1 on error. */
static int
tensor_walk(Checker *c, AstNode *e, int depth, TfgShape *s, PtrVec *elems)
{
	if (e->kind != AST_TENSOR) {
		if (depth != s->rank && s->rank >= 0) {
			diag_error(c->d, e->loc,
				   "tensor literal is not rectangular: "
				   "expected a list here");
			return -1;
		}
		if (check_lit_of(e).kind == 0 && e->kind != AST_STRING) {
			diag_error(c->d, e->loc,
				   "tensor literal elements must be numbers, "
				   "booleans or strings");
			return -1;
		}
		s->rank = depth;
		vec_push(c->a, elems, e);
		return 0;
	}
	if (depth >= TFG_MAX_RANK) {
		diag_error(c->d, e->loc, "tensor literal has more than %d "
			   "dimensions", TFG_MAX_RANK);
		return -1;
	}
	if (s->rank >= 0 && depth >= s->rank) {
		diag_error(c->d, e->loc,
			   "tensor literal is not rectangular: expected a "
			   "number here");
		return -1;
	}
	if (s->dims[depth] < 0) {
		s->dims[depth] = e->n;
	} else if (s->dims[depth] != e->n) {
		diag_error(c->d, e->loc,
			   "tensor literal is not rectangular: %d element%s "
			   "where the first list at this depth has %" PRId64,
			   e->n, e->n == 1 ? "" : "s", s->dims[depth]);
		return -1;
	}
	if (e->n == 0 && s->rank < 0)
		s->rank = depth + 1;
	for (int i = 0; i < e->n; i++)
		if (tensor_walk(c, e->list[i], depth + 1, s, elems) < 0)
			return -1;
	return 0;
}

/* The elements of a tensor literal of strings, packed (ops_string.c);
 * NULL (reported) when one is not a string. */
static void *
tensor_strings(Checker *c, PtrVec *elems, size_t *nbytes)
{
	const char **s = arena_alloc(c->a, (elems->n + 1) * sizeof *s);
	size_t *len = arena_alloc(c->a, (elems->n + 1) * sizeof *len);

	for (int i = 0; i < elems->n; i++) {
		AstNode *el = elems->v[i];
		if (el->kind != AST_STRING) {
			diag_error(c->d, el->loc, "%s literal where string is "
				   "expected", check_lit_of(el).kind == 3
				   ? "bool" : "numeric");
			return NULL;
		}
		s[i] = el->str;
		len[i] = (size_t)el->ival;
	}
	return check_str_pack(c->a, elems->n, s, len, nbytes);
}

/* A tensor literal as a constant tensor of dtype t (or its own dtype when
 * t < 0), stored in the arena.  Shape in *shape; for strings the value's
 * bytes in *strbytes. */
void *
check_tensor_data(Checker *c, AstNode *e, int t, TfgDtype *dt, TfgShape *shape,
		  size_t *strbytes)
{
	TfgShape s = {-1, {0}};
	PtrVec elems = {0};
	int kinds = 0;
	size_t sz;
	char *data;

	for (int i = 0; i < TFG_MAX_RANK; i++)
		s.dims[i] = -1;
	if (tensor_walk(c, e, 0, &s, &elems) < 0)
		return NULL;
	for (int i = 0; i < s.rank; i++)
		if (s.dims[i] < 0)
			s.dims[i] = 0;
	for (int i = s.rank; i < TFG_MAX_RANK; i++)
		s.dims[i] = 0;
	if (t < 0) {
		TfgDtype best = TFG_I32;
		for (int i = 0; i < elems.n; i++) {
			AstNode *el = elems.v[i];
			Lit l = check_lit_of(el);
			kinds |= el->kind == AST_STRING ? 16 : 1 << l.kind;
			if (check_lit_default(l) == TFG_I64)
				best = TFG_I64;
		}
		if ((kinds & 16) && (kinds & 14)) {
			diag_error(c->d, e->loc, "tensor literal mixes strings "
				   "and %s", kinds & 8 ? "booleans" : "numbers");
			return NULL;
		}
		if ((kinds & 8) && (kinds & 6)) {
			diag_error(c->d, e->loc, "tensor literal mixes "
				   "booleans and numbers");
			return NULL;
		}
		t = kinds & 16 ? TFG_STRING : kinds & 4 ? TFG_F32
		    : kinds & 8 ? TFG_BOOL : (int)best;
		if (elems.n == 0)
			t = TFG_F32;
	}
	if (strbytes)
		*strbytes = 0;
	if (t == TFG_STRING) {
		size_t nb;
		if (!(data = tensor_strings(c, &elems, &nb)))
			return NULL;
		if (strbytes)
			*strbytes = nb;
		*dt = TFG_STRING;
		*shape = s;
		return data;
	}
	for (int i = 0; i < elems.n; i++) {
		AstNode *el = elems.v[i];
		if (el->kind == AST_STRING) {
			diag_error(c->d, el->loc, "string literal where %s is "
				   "expected", tfg_dtype_name((TfgDtype)t));
			return NULL;
		}
	}
	sz = tfg_dtype_size((TfgDtype)t);
	data = arena_alloc(c->a, elems.n * sz + 8);
	for (int i = 0; i < elems.n; i++) {
		AstNode *el = elems.v[i];
		if (check_lit_store(c, el->loc, check_lit_of(el), (TfgDtype)t,
			      data + i * sz) < 0)
			return NULL;
	}
	*dt = (TfgDtype)t;
	*shape = s;
	return data;
}

/* A shape argument: a list literal of non-negative integer literals. */
int
check_shape_arg(Checker *c, AstNode *call, AstNode *e, TfgShape *s)
{
	if (e->kind != AST_TENSOR) {
		diag_error(c->d, e->loc, "the shape of '%s' must be a list of "
			   "integer literals, like [2, 3]", call->name);
		return -1;
	}
	if (e->n > TFG_MAX_RANK) {
		diag_error(c->d, e->loc, "the shape of '%s' has %d dimensions; at "
			   "most %d are allowed", call->name, e->n,
			   TFG_MAX_RANK);
		return -1;
	}
	memset(s, 0, sizeof *s);
	s->rank = e->n;
	for (int i = 0; i < e->n; i++) {
		Lit l = check_lit_of(e->list[i]);
		if (l.kind != 1) {
			diag_error(c->d, e->list[i]->loc, "dimension %d of the "
				   "shape of '%s' must be an integer literal",
				   i, call->name);
			return -1;
		}
		if (l.i < 0) {
			diag_error(c->d, e->list[i]->loc, "dimension %d of the "
				   "shape of '%s' is %" PRId64 "; it must not "
				   "be negative", i, call->name, l.i);
			return -1;
		}
		s->dims[i] = l.i;
	}
	return 0;
}
