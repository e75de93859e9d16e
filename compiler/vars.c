/*
 * compiler/vars.c: variables (spec §4.4 "Variables"), part of the check phase.
 *
 * `var v = init` (optionally `var v: f32[2, 3] = init`) makes an IrVar
 * and three nodes, all placed on the variable's task whatever device
 * block they are used in:
 *
 *   v               OP_variable: the value v has when a step reads it
 *   v/init          OP_assign of the initial value: initialize() runs it
 *   v/initialized   OP_var_initialized: whether v has a value, for
 *                   uninitialized() and wait_initialized()
 *
 * and assign(v, x), assign_add(v, x), assign_sub(v, x) make one more node
 * each (check_varop).  The read comes before every update in the graph,
 * hence in every part, so that a step reads a variable before it updates
 * it (spec §4.4 "Variables").  A variable lives on the task of the device
 * blocks around its declaration (in a replicas block: a ps task, round-robin,
 * compiler/replicas.c); outside every block, on the first job's task 0
 * (variables do not follow their consumers: their place must not move
 * when the program grows).  Its initial value is computed there too, as
 * TF colocates initializers, and may not depend on an input: initialize()
 * has nothing to feed it with.
 */
#include <string.h>

#include "compiler/compiler_int.h"

IrNode *
check_var_node(Checker *c, IrVar *v, OpKind op, IrNode *x, SrcLoc loc)
{
	IrNode *n = ir_var(c->p, loc, op, v, x);

	if (n) {
		n->req = v->req; /* placed with its variable, whatever block */
		n->why = v->draw ? "with its random maker"
		       : arena_printf(c->a, "variable %s, %s", v->name,
				      v->why);
	}
	return n;
}

/* The input x depends on, or NULL. */
static IrNode *
input_of(Checker *c, IrNode *x)
{
	char *seen = arena_alloc(c->a, c->p->g.nodes.n + 1);
	PtrVec stack = {0};

	vec_push(c->a, &stack, x);
	while (stack.n > 0) {
		IrNode *n = stack.v[--stack.n];
		if (seen[n->id])
			continue;
		seen[n->id] = 1;
		if (n->op == OP_input)
			return n;
		for (int i = 0; i < n->nin; i++)
			vec_push(c->a, &stack, n->in[i]);
	}
	return NULL;
}

/* The declared type `: T[dims]` of s into *t, *sh; -1 if reported. */
static int
declared_type(Checker *c, AstNode *s, TfgDtype *t, TfgShape *sh)
{
	int rc = check_dtype_decl(c, s->b, t);

	if (rc == -2)
		return -1;
	if (rc < 0 || *t == TFG_STRING) {
		diag_error(c->d, s->b->loc, "%s dtype '%s' for a variable "
			   "(expected bool, u8, i32, i64, f32 or f64)",
			   rc < 0 ? "unknown" : "no string", s->b->name);
		return -1;
	}
	if (s->n > TFG_MAX_RANK) {
		diag_error(c->d, s->loc, "variable '%s' has %d dimensions; at "
			   "most %d are allowed", s->name, s->n, TFG_MAX_RANK);
		return -1;
	}
	sh->rank = s->n;
	for (int i = 0; i < s->n; i++) {
		if (s->list[i]->ival < 0) {
			diag_error(c->d, s->list[i]->loc, "a variable's dims "
				   "must be known: '?' is for inputs");
			return -1;
		}
		sh->dims[i] = s->list[i]->ival;
	}
	return 0;
}

/* The initial value of s as the declared type: a literal (a tensor
 * literal too) takes its dtype, a scalar literal fills the shape (fill),
 * anything else must already be of that type. */
static IrNode *
as_declared(Checker *c, AstNode *s, AstNode *e, IrNode *x, TfgDtype t,
	    const TfgShape *sh)
{
	Lit l = check_lit_of(e);

	if (l.kind && !(x = check_lit_node(c, e, l, t)))
		return NULL;
	if (e->kind == AST_TENSOR && /* a literal: of dtype t */
	    !(x = check_tensor_const(c, e, t)))
		return NULL;
	if (x->dtype != t) {
		diag_error(c->d, ast_extent(e), "variable '%s' is %s, but "
			   "its initial value is %s: cast it (cast(x, %s))",
			   s->name, ir_type_str(c->a, t, sh),
			   ir_type_str(c->a, x->dtype, &x->shape),
			   tfg_dtype_name(t));
		return NULL;
	}
	if (tfg_shape_eq(&x->shape, sh))
		return x;
	if (!(l.kind && x->shape.rank == 0)) {
		diag_error(c->d, ast_extent(e), "variable '%s' is %s, but "
			   "its initial value is %s", s->name,
			   ir_type_str(c->a, t, sh),
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	return check_built(c, ir_make(c->p, ast_extent(e), OP_fill, t, sh,
				      arena_alloc(c->a, sizeof(IrMake)), &x,
				      1));
}

/* The initial value e of variable s, on device dev: of its declared
 * type, its dims known, of no input; NULL (reported) if not. */
IrNode *
check_var_init(Checker *c, AstNode *s, AstNode *e, Device dev)
{
	Device saved = c->dev;
	IrNode *x, *in;

	c->stmt = s->name;
	c->dev = dev;
	c->why = arena_printf(c->a, "initial value of variable %s", s->name);
	x = check_expr(c, e);
	if (x && x->dtype == TFG_STRING) {
		diag_error(c->d, ast_extent(e), "a variable cannot hold "
			   "strings: they are constants");
		x = NULL;
	}
	if (x && s->b) {
		TfgDtype t;
		TfgShape sh = {0, {0}};

		x = declared_type(c, s, &t, &sh) < 0 ? NULL
					: as_declared(c, s, e, x, t, &sh);
	}
	c->dev = saved;
	c->why = NULL;
	c->stmt = NULL;
	if (x && !shape_known(&x->shape)) {
		diag_error(c->d, ast_extent(e), "the initial value of '%s' "
			   "is %s: a variable's dims must be known", s->name,
			   ir_type_str(c->a, x->dtype, &x->shape));
		x = NULL;
	}
	if (x && (in = input_of(c, x)) != NULL) {
		diag_error(c->d, ast_extent(e), "the initial value of '%s' "
			   "depends on input '%s': initialize() has no feed",
			   s->name, in->name);
		diag_note(c->d, in->loc, "'%s' is declared here", in->name);
		x = NULL;
	}
	return x;
}

void
check_var(Checker *c, AstNode *s)
{
	IrNode *x;
	IrVar *v;
	Sym *sym;

	if (check_replicated(c, s, NULL)) /* its value may not be */
		return;
	if (s->a->kind == AST_CALL && strcmp(s->a->name, "partitioned") == 0) {
		check_sharded(c, s);
		return;
	}
	v = arena_alloc(c->a, sizeof *v);
	v->name = s->name;
	v->loc = s->tok.loc;
	v->why = check_var_why(c);
	v->req = dev_complete(c->p, check_var_device(c)); /* replicas.c */
	if (!(x = check_var_init(c, s, s->a, v->req))) {
		check_define(c, s->name, s->tok.loc, NULL);
		return;
	}
	v->dtype = x->dtype;
	v->shape = x->shape;
	check_var_add(c, v, x, s->loc);
	v->read->user_named = 1;
	if ((sym = check_define(c, s->name, s->tok.loc, v->read)) != NULL)
		sym->var = v;
}

void
check_var_add(Checker *c, IrVar *v, IrNode *x, SrcLoc init_loc)
{
	v->index = c->p->vars.n;
	v->read = check_var_node(c, v, OP_variable, NULL, v->loc);
	v->read->name = v->name;
	v->init = check_var_node(c, v, OP_assign, x, init_loc);
	v->init->name = arena_printf(c->a, "%s/init", v->name);
	v->inited = check_var_node(c, v, OP_var_initialized, NULL, v->loc);
	v->inited->name = arena_printf(c->a, "%s/initialized", v->name);
	vec_push(c->a, &c->p->vars, v);
}

/* The variable (or partitioned variable) that target, the first
 * argument of update e, names; NULL (reported) if not one. */
static Sym *
target_of(Checker *c, AstNode *e, AstNode *target)
{
	Sym *s;

	if (target->kind != AST_NAME) {
		diag_error(c->d, ast_extent(target), "the first argument of "
			   "%s() must be a variable", e->name);
		return NULL;
	}
	if (!(s = check_find(&c->syms, target->name))) {
		check_lookup(c, target);
		return NULL;
	}
	if (!s->var && !s->shards) {
		if (s->node || s->list) {
			diag_error(c->d, target->loc, "'%s' is not a variable: "
				   "%s() updates one declared with 'var'",
				   target->name, e->name);
			diag_note(c->d, s->loc, "'%s' is defined here",
				  target->name);
		}
		return NULL;
	}
	return s;
}

IrNode *
check_var_scatter(Checker *c, IrVar *v, OpKind op, IrNode *ids,
		  IrNode *rows, SrcLoc at)
{
	IrNode *n = ir_scatter(c->p, at, op, v, ids, rows);

	if (n)
		n->why = arena_printf(c->a, "variable %s, %s", v->name, v->why);
	return n;
}

/* scatter_add(v, indices, updates), scatter_update: TF1's
 * tf.compat.v1.scatter_add and scatter_update, v's new value.  updates
 * has the indices' shape and then v's dims after the first; a literal
 * takes v's dtype. */
IrNode *
check_scatter(Checker *c, AstNode *e, OpKind op)
{
	AstNode *val;
	IrNode *ids, *x;
	TfgShape want, flat = {1, {0}};
	const TfgShape *vs;
	IrVar *v;
	Sym *s;
	int64_t n = 1;

	if (check_bind(c, e) < 0 || !(s = target_of(c, e, e->list[0])))
		return NULL;
	v = s->shards ? s->shards->var[0] : s->var;
	vs = &s->node->shape;
	if (v->dtype == TFG_BOOL || vs->rank == 0) {
		diag_error(c->d, e->list[0]->loc, "%s() changes rows of a "
			   "variable of numbers, and '%s' is %s", e->name,
			   e->list[0]->name, ir_type_str(c->a, v->dtype, vs));
		return NULL;
	}
	if (!(ids = check_expr(c, e->list[1])))
		return NULL;
	if (ids->dtype != TFG_I32 && ids->dtype != TFG_I64) {
		diag_error(c->d, ast_extent(e->list[1]), "the indices of '%s' "
			   "must be i32 or i64, got %s", e->name,
			   ir_type_str(c->a, ids->dtype, &ids->shape));
		return NULL;
	}
	val = e->list[2];
	x = val->kind == AST_TENSOR ? check_tensor_const(c, val, v->dtype)
				    : check_expr(c, val);
	if (!x)
		return NULL;
	want.rank = ids->shape.rank + vs->rank - 1;
	for (int k = 0; k < ids->shape.rank && want.rank <= TFG_MAX_RANK; k++)
		n *= want.dims[k] = ids->shape.dims[k];
	for (int k = 1; k < vs->rank && want.rank <= TFG_MAX_RANK; k++)
		want.dims[ids->shape.rank + k - 1] = vs->dims[k];
	if (want.rank > TFG_MAX_RANK || x->dtype != v->dtype ||
	    !tfg_shape_eq(&x->shape, &want)) {
		diag_error(c->d, ast_extent(val), "%s(%s, ...) needs updates "
			   "of %s (the indices' shape, then the variable's "
			   "dims after the first), got %s", e->name,
			   e->list[0]->name,
			   want.rank > TFG_MAX_RANK ? "too many dims"
			   : ir_type_str(c->a, v->dtype, &want),
			   ir_type_str(c->a, x->dtype, &x->shape));
		return NULL;
	}
	/* ids as i64[n], updates as [n] + the rows' dims */
	flat.dims[0] = n;
	if (ids->dtype != TFG_I64)
		ids = check_built(c, ir_cast(c->p, e->loc, ids, TFG_I64));
	if (ids && ids->shape.rank != 1)
		ids = check_built(c, ir_reshape(c->p, e->loc, ids, &flat));
	want = *vs;
	want.dims[0] = n;
	if (x->shape.rank != want.rank)
		x = check_built(c, ir_reshape(c->p, e->loc, x, &want));
	if (!ids || !x)
		return NULL;
	if (s->shards)
		return check_shards_scatter(c, s->shards, op, ids, x, e->loc);
	return check_var_scatter(c, v, op, ids, x, e->loc);
}

/* assign(v, x), assign_add(v, x), assign_sub(v, x): v's new value.  x
 * has v's dtype and shape; a literal (a tensor literal too) takes v's
 * dtype, and a scalar literal stands for every element. */
IrNode *
check_varop(Checker *c, AstNode *e, OpKind op)
{
	AstNode *target, *val;
	IrNode *x;
	Sym *s;
	IrVar *v;
	Lit l;

	if (check_bind(c, e) < 0)
		return NULL;
	target = e->list[0];
	val = e->list[1];
	if (!(s = target_of(c, e, target)))
		return NULL;
	/* a partitioned variable: its first shard's dtype */
	v = s->shards ? s->shards->var[0] : s->var;
	if (op != OP_assign && v->dtype == TFG_BOOL) {
		diag_error(c->d, target->loc, "%s() needs a number, but '%s' "
			   "is %s", e->name, v->name,
			   ir_type_str(c->a, v->dtype, &v->shape));
		return NULL;
	}
	l = check_lit_of(val);
	if (l.kind) {
		x = check_lit_node(c, val, l, v->dtype);
	} else if (val->kind == AST_TENSOR) { /* a literal: v's dtype */
		x = check_tensor_const(c, val, v->dtype);
	} else {
		x = check_expr(c, val);
	}
	if (!x)
		return NULL;
	if (x->dtype != v->dtype ||
	    (!tfg_shape_eq(&x->shape, &s->node->shape) &&
	     !(l.kind && x->shape.rank == 0))) {
		diag_error(c->d, ast_extent(val), "%s(%s, ...) needs %s, the "
			   "variable's type, got %s%s", e->name, target->name,
			   ir_type_str(c->a, v->dtype, &s->node->shape),
			   ir_type_str(c->a, x->dtype, &x->shape),
			   x->dtype != v->dtype ? ": cast it" : "");
		diag_note(c->d, v->loc, "'%s' is declared here",
			  target->name);
		return NULL;
	}
	if (s->shards)
		return check_shards_update(c, s->shards, op, x, e->loc);
	return check_var_node(c, v, op, x, e->loc);
}
