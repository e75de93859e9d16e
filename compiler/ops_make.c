/*
 * compiler/ops_make.c: the checker of the makers
 * (spec §6.13 "zeros, ones, fill" to §6.17 "random_uniform, random_normal"):
 * zeros ones fill zeros_like ones_like range one_hot random_uniform
 * random_normal, reached through check_make() from the check column of
 * stdlib/ops.def; and dropout (spec §6.32 "dropout"), whose mask is a
 * random maker's.
 *
 * A maker's shape is static (a list literal, or the shape of another
 * value), and so are its scalar arguments: they are checked here and kept
 * in an IrMake (compiler/compiler.h) for codegen/cpu_make.c.  Only fill
 * with a scalar tensor and one_hot have inputs; zeros_like(x) and
 * ones_like(x) take x's type only, so x need not be computed at all.
 *
 * The random makers are counter-based (Philox-4x32-10): the numbers are a
 * function of (seed, stream, element index), never of the task or of the
 * run, so a value computed on any task is the same.  Without seed= the
 * k-th such call in source order gets stream k (k >= 1), so the program
 * alone decides its numbers; with seed= the stream is 0, and two calls
 * with the same seed, dtype and shape give the same tensor.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "compiler/compiler_int.h"

#define MAX_BYTES ((double)TFG_MAX_BYTES) /* as an input's limit */

/* --------------------------------------------------------------- helpers */

/* The result's size against the limit on one tensor. */
static int
size_ok(Checker *c, AstNode *call, TfgDtype t, const TfgShape *s)
{
	double numel = 1;
	int zero = 0;

	for (int i = 0; i < s->rank; i++) {
		if (s->dims[i] > 0) /* 0 counts as 1
				       (spec §5.1 "Dtypes"); unknown ones are
				       known in the specialisation */
			numel *= (double)s->dims[i];
		zero |= s->dims[i] == 0;
	}
	if (numel * tfg_dtype_size(t) > MAX_BYTES) {
		diag_error(c->d, call->loc, "'%s' would make a tensor of %.3g "
			   "bytes%s; at most 2^40 are allowed", call->name,
			   numel * tfg_dtype_size(t),
			   zero ? " (each 0 dimension counted as 1)" : "");
		return -1;
	}
	return 0;
}

/* dtype= of call, in *t (left alone when absent); 1 if given. */
static int
dtype_kw(Checker *c, AstNode *call, TfgDtype *t)
{
	AstNode *d = check_kwarg(call, "dtype");

	if (!d)
		return 0;
	if (d->kind != AST_NAME) {
		diag_error(c->d, d->loc, "'dtype' of '%s' must be a dtype: "
			   "bool, u8, i32, i64, f32 or f64", call->name);
		return -1;
	}
	if (check_dtype_named(d->name, t) < 0) {
		diag_error(c->d, d->loc, "unknown dtype '%s' (expected bool, "
			   "u8, i32, i64, f32 or f64)", d->name);
		return -1;
	}
	if (*t == TFG_STRING) {
		diag_error(c->d, d->loc, "'%s' cannot make strings: they are "
			   "constants (write them as literals or with "
			   "constant())", call->name);
		return -1;
	}
	return 1;
}

/* A scalar argument that must be a number (or bool) literal. */
static int
lit_arg(Checker *c, AstNode *call, AstNode *e, const char *what, Lit *l)
{
	*l = check_lit_of(e);
	if (l->kind == 0) {
		diag_error(c->d, e->loc, "%s of '%s' must be a literal",
			   what, call->name);
		return -1;
	}
	return 0;
}

/* Stores literal l as dtype t into slot k of m (diagnosed as a tensor
 * literal's element would be). */
static int
store(Checker *c, AstNode *at, Lit l, TfgDtype t, IrMake *m, int k)
{
	char buf[8];

	if (check_lit_store(c, at->loc, l, t, buf) < 0)
		return -1;
	/* a float literal comes with a float dtype only, which reads f[]:
	   its integer value, which need not fit, is not wanted */
	m->i[k] = l.kind == 2 ? 0 : l.i;
	m->f[k] = l.kind == 2 ? l.f : (double)l.i;
	if (t == TFG_F32)
		m->f[k] = (float)m->f[k]; /* the value the tensor holds */
	return 0;
}

static IrNode *
node(Checker *c, AstNode *call, OpKind op, IrNode **in, int nin, TfgDtype t,
     const TfgShape *s, IrMake *m)
{
	if (t == TFG_STRING) { /* dtype=string, fill or *_like of one */
		diag_error(c->d, call->loc, "'%s' cannot make strings: they "
			   "are constants (write them as literals or with "
			   "constant())", call->name);
		return NULL;
	}
	if (size_ok(c, call, t, s) < 0)
		return NULL;
	return check_built(c, ir_make(c->p, call->loc, op, t, s, m, in, nin));
}

/* ------------------------------------------------------ fill and friends */

/* zeros(shape, dtype=f32), ones(shape, dtype=f32)
 * (spec §6.13 "zeros, ones, fill"). */
static IrNode *
make_const(Checker *c, AstNode *e, OpKind op)
{
	IrMake *m = arena_alloc(c->a, sizeof *m);
	TfgDtype t = TFG_F32;
	TfgShape s;

	if (check_shape_arg(c, e, e->list[0], &s) < 0 || dtype_kw(c, e, &t) < 0)
		return NULL;
	m->i[0] = op == OP_ones;
	m->f[0] = op == OP_ones;
	return node(c, e, op, NULL, 0, t, &s, m);
}

/* zeros_like(x), ones_like(x): x's dtype (or dtype=) and shape. */
static IrNode *
make_like(Checker *c, AstNode *e, OpKind op)
{
	IrMake *m = arena_alloc(c->a, sizeof *m);
	IrNode *x;
	TfgDtype t;

	if (!(x = check_expr(c, e->list[0])))
		return NULL;
	t = x->dtype;
	if (dtype_kw(c, e, &t) < 0)
		return NULL;
	m->i[0] = op == OP_ones_like;
	m->f[0] = op == OP_ones_like;
	return check_unknown_dep(c, node(c, e, op, NULL, 0, t, &x->shape, m),
				 x);
}

/* fill(shape, value): a literal value gives its own dtype
 * (spec §5.2 "Literals and their default dtypes"); a scalar tensor is
 * broadcast. */
static IrNode *
make_fill(Checker *c, AstNode *e)
{
	IrMake *m = arena_alloc(c->a, sizeof *m);
	AstNode *v = e->list[1];
	TfgShape s;
	IrNode *x;
	Lit l;

	if (check_shape_arg(c, e, e->list[0], &s) < 0)
		return NULL;
	if ((l = check_lit_of(v)).kind) {
		TfgDtype t = check_lit_default(l);
		if (store(c, v, l, t, m, 0) < 0)
			return NULL;
		return node(c, e, OP_fill, NULL, 0, t, &s, m);
	}
	if (!(x = check_expr(c, v)))
		return NULL;
	if (x->shape.rank != 0) {
		diag_error(c->d, v->loc, "the value of 'fill' must be a "
			   "scalar, got %s",
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	return node(c, e, OP_fill, &x, 1, x->dtype, &s, m);
}

/* --------------------------------------------------------------- range */

/* The number of elements of range(start, limit, delta), as TF counts. */
static double
range_count(Lit a, Lit b, Lit d, TfgDtype t)
{
	if (dtype_is_int(t)) {
		/* unsigned: the distance may not fit in int64_t */
		int up = d.i > 0;
		uint64_t len, st = up ? (uint64_t)d.i : 0 - (uint64_t)d.i;
		if (up ? b.i <= a.i : b.i >= a.i)
			return 0;
		len = up ? (uint64_t)b.i - (uint64_t)a.i
			 : (uint64_t)a.i - (uint64_t)b.i;
		return (double)(len / st + (len % st != 0));
	} else {
		double s = a.kind == 2 ? a.f : (double)a.i;
		double l = b.kind == 2 ? b.f : (double)b.i;
		double st = d.kind == 2 ? d.f : (double)d.i;
		double n;
		if (t == TFG_F32)
			s = (float)s, l = (float)l, st = (float)st;
		n = ceil((l - s) / st);
		return n > 0 ? n : 0;
	}
}

/* range(limit) or range(start, limit, delta=1, dtype=), like tf.range:
 * all three by keyword once bound (start and delta may be absent). */
static IrNode *
make_range(Checker *c, AstNode *e)
{
	IrMake *m = arena_alloc(c->a, sizeof *m), lim;
	static const char *const what[] = {"start", "limit", "delta"};
	Lit l[3] = {{1, 0, 0}, {0, 0, 0}, {1, 1, 0}};
	int any_f = 0, any_64 = 0;
	AstNode *at[3];
	TfgDtype t;
	TfgShape s = {1, {0}};
	double n;

	for (int k = 0; k < 3; k++) {
		AstNode *a = check_kwarg(e, what[k]);

		/* an absent start or delta: errors about it point at the
		   limit */
		at[k] = a ? a : check_kwarg(e, "limit");
		if (!a)
			continue;
		if (lit_arg(c, e, a, arena_printf(c->a, "the %s", what[k]),
			    &l[k]) < 0)
			return NULL;
		if (l[k].kind == 3) {
			diag_error(c->d, a->loc, "the %s of 'range' must be a "
				   "number, got a bool", what[k]);
			return NULL;
		}
	}
	for (int k = 0; k < 3; k++) {
		any_f |= l[k].kind == 2;
		any_64 |= check_lit_default(l[k]) == TFG_I64;
	}
	t = any_f ? TFG_F32 : any_64 ? TFG_I64 : TFG_I32;
	if (dtype_kw(c, e, &t) < 0)
		return NULL;
	if (t == TFG_BOOL) {
		diag_error(c->d, check_kwarg(e, "dtype")->loc, "'range' makes "
			   "numbers: dtype must be u8, i32, i64, f32 or f64");
		return NULL;
	}
	if (store(c, at[0], l[0], t, m, 0) < 0 ||
	    store(c, at[1], l[1], t, &lim, 0) < 0 ||
	    store(c, at[2], l[2], t, m, 1) < 0)
		return NULL;
	if (m->f[1] == 0) {
		diag_error(c->d, at[2]->loc, "the delta of 'range' must not "
			   "be 0");
		return NULL;
	}
	n = range_count(l[0], l[1], l[2], t);
	if (n * tfg_dtype_size(t) > MAX_BYTES) {
		diag_error(c->d, e->loc, "'range' would make %.3g elements; "
			   "at most 2^40 bytes are allowed", n);
		return NULL;
	}
	s.dims[0] = (int64_t)n;
	return node(c, e, OP_range, NULL, 0, t, &s, m);
}

/* ------------------------------------------------------------- one_hot */

/* one_hot(indices, depth, on_value=1, off_value=0, axis=-1, dtype=):
 * the dtype is dtype=, else the on/off literals'
 * (spec §5.4 "The result dtype of a binary operation" on the two), else
 * f32. */
static IrNode *
make_one_hot(Checker *c, AstNode *e)
{
	IrMake *m = arena_alloc(c->a, sizeof *m);
	AstNode *eon = check_kwarg(e, "on_value"), *eoff = check_kwarg(e,
								     "off_value");
	AstNode *eax = check_kwarg(e, "axis");
	Lit on = {1, 1, 1}, off = {1, 0, 0};
	TfgDtype t = TFG_F32;
	TfgShape s;
	int64_t depth, axis = -1;
	IrNode *x;

	if (!(x = check_expr(c, e->list[0])))
		return NULL;
	if (!dtype_is_int(x->dtype)) {
		diag_error(c->d, e->list[0]->loc, "the indices of 'one_hot' "
			   "must be an integer tensor, got %s",
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (check_int_arg(c, e, e->list[1], "the depth", &depth) < 0)
		return NULL;
	if (depth < 0) {
		diag_error(c->d, e->list[1]->loc, "the depth of 'one_hot' is "
			   "%" PRId64 "; it must not be negative", depth);
		return NULL;
	}
	if ((eon && lit_arg(c, e, eon, "'on_value'", &on) < 0) ||
	    (eoff && lit_arg(c, e, eoff, "'off_value'", &off) < 0))
		return NULL;
	if (eon || eoff) {
		TfgDtype a = check_lit_default(on), b = check_lit_default(off);
		if (eon && eoff && (a == TFG_BOOL) != (b == TFG_BOOL)) {
			diag_error(c->d, e->loc, "'one_hot' cannot mix bool and "
				   "number values");
			return NULL;
		}
		t = eon && eoff ? dtype_promote(a, 0, b, 0) : eon ? a : b;
	}
	if (dtype_kw(c, e, &t) < 0)
		return NULL;
	if (t == TFG_BOOL && !eon) /* the defaults as bools */
		on = (Lit){3, 1, 0};
	if (t == TFG_BOOL && !eoff)
		off = (Lit){3, 0, 0};
	if (store(c, eon ? eon : e, on, t, m, 0) < 0 ||
	    store(c, eoff ? eoff : e, off, t, m, 1) < 0)
		return NULL;
	if (eax && check_int_arg(c, e, eax, "the axis", &axis) < 0)
		return NULL;
	if (x->shape.rank + 1 > TFG_MAX_RANK) {
		diag_error(c->d, e->loc, "'one_hot' of a rank %d tensor would "
			   "have more than %d dimensions", x->shape.rank,
			   TFG_MAX_RANK);
		return NULL;
	}
	if (axis < -1 || axis > x->shape.rank) {
		diag_error(c->d, eax->loc, "axis %" PRId64 " of 'one_hot' is "
			   "out of range: expected -1 to %d", axis,
			   x->shape.rank);
		return NULL;
	}
	if (axis < 0)
		axis = x->shape.rank;
	m->axis = (int)axis;
	s.rank = x->shape.rank + 1;
	for (int i = 0, k = 0; i < s.rank; i++)
		s.dims[i] = i == axis ? depth : x->shape.dims[k++];
	for (int i = s.rank; i < TFG_MAX_RANK; i++)
		s.dims[i] = 0;
	return node(c, e, OP_one_hot, &x, 1, t, &s, m);
}

/* -------------------------------------------------------------- random */

/* The stream of an unseeded random maker: 1 + the unseeded ones before. */
static uint32_t
next_stream(Checker *c)
{
	uint32_t k = 1;

	for (int i = 0; i < c->p->g.nodes.n; i++) {
		const IrNode *n = c->p->g.nodes.v[i];
		if ((n->op == OP_random_uniform || n->op == OP_random_normal) &&
		    n->make && n->make->stream)
			k++;
	}
	return k;
}

/* The hidden variable counting the draws of OP_random_draw node d. */
static IrVar *
rng_var(Checker *c, IrNode *d)
{
	IrVar *v = arena_alloc(c->a, sizeof *v);
	const char *base = c->stmt ? c->stmt : "_";
	int k = 0;

	for (int i = 0; i < c->p->vars.n; i++) {
		const IrVar *o = c->p->vars.v[i];
		size_t n = strlen(base);

		k += o->draw && strncmp(o->name, base, n) == 0 &&
		     strncmp(o->name + n, "/random", 7) == 0;
	}
	v->index = c->p->vars.n;
	v->name = k ? arena_printf(c->a, "%s/random_%d", base, k)
		    : arena_printf(c->a, "%s/random", base);
	v->loc = d->loc;
	v->dtype = TFG_I64;
	v->req = d->req;
	v->draw = d;
	vec_push(c->a, &c->p->vars, v);
	return v;
}


/* The random maker op of call e (its seed= read here), of dtype t and
 * shape s, with m's numbers: its key and stream in m, and the draw that
 * counts its runs. */
static IrNode *
random_node(Checker *c, AstNode *e, OpKind op, TfgDtype t, const TfgShape *s,
	    IrMake *m)
{
	AstNode *es = check_kwarg(e, "seed");
	int64_t seed = 0;
	IrNode *d;

	if (es && check_int_arg(c, e, es, "the seed", &seed) < 0)
		return NULL;
	m->seed = (uint64_t)seed;
	m->stream = es ? 0 : next_stream(c);
	/* which draw of its sequence: counted where it runs
	   (§6.17 "random_uniform, random_normal") */
	if (!(d = check_built(c, ir_var(c->p, e->loc, OP_random_draw, NULL,
					NULL))))
		return NULL;
	d->var = rng_var(c, d);
	return node(c, e, op, &d, 1, t, s, m);
}

/* random_uniform(shape, min=0, max=1, dtype=f32, seed=) and
 * random_normal(shape, mean=0, stddev=1, dtype=f32, seed=), in TF's
 * order (min and max are TF's minval and maxval). */
static IrNode *
make_random(Checker *c, AstNode *e, OpKind op)
{
	IrMake *m = arena_alloc(c->a, sizeof *m);
	int uni = op == OP_random_uniform;
	const char *ka = uni ? "min" : "mean", *kb = uni ? "max" : "stddev";
	AstNode *ea = check_kwarg(e, ka), *eb = check_kwarg(e, kb);
	AstNode *ed = check_kwarg(e, "dtype");
	Lit a = {1, 0, 0}, b = {1, 1, 1};
	TfgDtype t = TFG_F32;
	TfgShape s;

	if (check_shape_arg(c, e, e->list[0], &s) < 0 || dtype_kw(c, e, &t) < 0)
		return NULL;
	if (t == TFG_BOOL || t == TFG_U8 || (!uni && !dtype_is_float(t))) {
		diag_error(c->d, ed->loc, "'%s' makes %s: dtype must be %s",
			   e->name, uni ? "numbers" : "floats",
			   uni ? "i32, i64, f32 or f64" : "f32 or f64");
		return NULL;
	}
	if (ea && lit_arg(c, e, ea, uni ? "'min'" : "'mean'", &a) < 0)
		return NULL;
	if (eb && lit_arg(c, e, eb, uni ? "'max'" : "'stddev'", &b) < 0)
		return NULL;
	if (dtype_is_int(t) && !eb) {
		diag_error(c->d, e->loc, "'random_uniform' with dtype %s needs "
			   "max=", tfg_dtype_name(t));
		return NULL;
	}
	if (store(c, ea ? ea : e, a, t, m, 0) < 0 ||
	    store(c, eb ? eb : e, b, t, m, 1) < 0)
		return NULL;
	if (dtype_is_int(t) && m->i[0] >= m->i[1]) {
		diag_error(c->d, eb->loc, "'random_uniform' needs min < max "
			   "for integers, got min=%" PRId64 ", max=%" PRId64,
			   m->i[0], m->i[1]);
		return NULL;
	}
	return random_node(c, e, op, t, &s, m);
}

/* dropout(x, keep_prob=, *, rate=, seed=) (spec §6.32 "dropout"): TF1's
 * tf.nn.dropout (keep_prob) and TF2's (rate = 1 - keep_prob).  Each
 * element is kept with probability keep_prob and scaled by 1 /
 * keep_prob, else 0: where(u < keep_prob, x / keep_prob, 0) with u
 * uniform in [0, 1) of x's shape, a random maker's, so a new mask every
 * run.  keep_prob (rate) is a literal, checked here, or a float scalar
 * graph value (a fed input, say): 1 (rate 0) gives x itself, u < 1
 * always and x / 1 exact. */
static IrNode *
make_dropout(Checker *c, AstNode *e)
{
	AstNode *ek = check_kwarg(e, "keep_prob"), *er = check_kwarg(e, "rate");
	AstNode *ep = ek ? ek : er;
	IrMake *m = arena_alloc(c->a, sizeof *m);
	IrNode *x, *kp, *u, *in[3];
	Lit l;

	if (!(x = check_expr(c, e->list[0])))
		return NULL;
	if (!dtype_is_float(x->dtype)) {
		diag_error(c->d, e->list[0]->loc, "'dropout' takes a float "
			   "tensor, got %s",
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	if (!ek == !er) {
		diag_error(c->d, e->loc, "'dropout' takes %s: keep_prob= "
			   "(TF1) or rate= (TF2)", ek ? "one of them, not both"
			   : "the probability to keep (or to drop)");
		return NULL;
	}
	l = check_lit_of(ep);
	if (l.kind == 1 || l.kind == 2) {
		double v = l.kind == 1 ? (double)l.i : l.f;
		double keep = ek ? v : 1 - v;

		if (!(keep > 0 && keep <= 1)) {
			diag_error(c->d, ep->loc, ek
				   ? "keep_prob of 'dropout' must be in (0, 1], "
				     "got %g"
				   : "rate of 'dropout' must be in [0, 1), got "
				     "%g", v);
			return NULL;
		}
		kp = check_scalar(c, ep->loc, (Lit){2, 0, keep}, x->dtype);
	} else {
		if (!(kp = check_expr(c, ep)))
			return NULL;
		if (!dtype_is_float(kp->dtype) || kp->shape.rank != 0) {
			diag_error(c->d, ep->loc, "%s of 'dropout' must be a "
				   "float scalar, got %s", ek ? "keep_prob"
				   : "rate",
				   ir_type_str(c->a, kp->dtype, &kp->shape));
			return NULL;
		}
		/* checked each step: keep_prob in (0, 1], rate in [0, 1) */
		kp = check_built(c, ir_check_range(c->p, ep->loc, kp, 0.0, 1.0,
			ek ? 2 : 1, ek ? IR_RANGE_KEEP_PROB : IR_RANGE_RATE));
		if (kp && kp->dtype != x->dtype)
			kp = check_built(c, ir_cast(c->p, ep->loc, kp,
						    x->dtype));
		if (kp && er) /* keep_prob = 1 - rate */
			kp = check_built(c, ir_binary(c->p, ep->loc, OP_sub,
				check_scalar(c, ep->loc, (Lit){2, 0, 1.0},
					     x->dtype), kp));
	}
	m->f[1] = 1; /* uniform in [0, 1) */
	if (!kp || !(u = random_node(c, e, OP_random_uniform, x->dtype,
				     &x->shape, m)))
		return NULL;
	in[0] = check_built(c, ir_binary(c->p, e->loc, OP_less, u, kp));
	in[1] = check_built(c, ir_binary(c->p, e->loc, OP_div, x, kp));
	in[2] = check_scalar(c, e->loc, (Lit){2, 0, 0.0}, x->dtype);
	if (!in[0] || !in[1] || !in[2])
		return NULL;
	return check_built(c, ir_where(c->p, e->loc, in[0], in[1], in[2]));
}

/* ------------------------------------------------------------ dispatch */

IrNode *
check_make(Checker *c, AstNode *e, OpKind op)
{
	if (check_bind(c, e) < 0)
		return NULL;
	if (strcmp(e->name, "dropout") == 0)
		return make_dropout(c, e);
	switch (op) {
	case OP_zeros:
	case OP_ones:
		return make_const(c, e, op);
	case OP_zeros_like:
	case OP_ones_like:
		return make_like(c, e, op);
	case OP_fill:
		return make_fill(c, e);
	case OP_range:
		return make_range(c, e);
	case OP_one_hot:
		return make_one_hot(c, e);
	default:
		return make_random(c, e, op);
	}
}
