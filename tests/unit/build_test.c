/*
 * tests/unit/build_test.c: the IR builders (compiler/build.c) alone, with
 * no source and no checker: every op of stdlib/ops.def is built through
 * them with its dtype and shape inferred (a table at the end fails the
 * run for an op no builder made), and the IR-level rules refuse what
 * cannot be built, with an error at the location given.
 */
#include <stdlib.h>

#include "compiler/compiler_int.h"
#include "tests/unit/test.h"

static Program P;
static Diag D;
static FILE *errs;
static char *errtext;
static size_t errlen;
static char built[OP__COUNT];
static const SrcLoc L = {0};

static void
setup(void)
{
	memset(&P, 0, sizeof P);
	P.arena = arena_new();
	errs = open_memstream(&errtext, &errlen);
	ASSERT(errs != NULL);
	diag_init(&D, errs);
	D.max = 0; /* no limit: every case's refusals go to this one diag */
	P.diag = &D;
}

static void
teardown(void)
{
	fclose(errs);
	free(errtext);
	arena_free(P.arena);
}

static TfgShape
shp(int rank, int64_t a, int64_t b, int64_t c)
{
	TfgShape s = {rank, {a, b, c}};

	return s;
}

static IrNode *
in(TfgDtype t, TfgShape s)
{
	IrNode *n = ir_input(&P, L, "x", t, &s);

	built[OP_input] = 1;
	return n;
}

/* n was built as dtype t, shape s: marks its op. */
static void
is(IrNode *n, TfgDtype t, TfgShape s)
{
	char a[64], b[64];

	if (n == NULL)
		TEST_FAIL_("not built: %s", errtext ? errtext : "");
	if (n->dtype != t || !tfg_shape_eq(&n->shape, &s))
		TEST_FAIL_("%s built as %s%s, not %s%s", op_info[n->op].name,
			   tfg_dtype_name(n->dtype),
			   tfg_shape_str(a, sizeof a, &n->shape),
			   tfg_dtype_name(t), tfg_shape_str(b, sizeof b, &s));
	built[n->op] = 1;
}

/* The builder refused, saying `why`. */
static void
refused(IrNode *n, const char *why)
{
	fflush(errs);
	ASSERT(n == NULL);
	ASSERT(errtext && strstr(errtext, why) != NULL);
}

static void
t_elementwise(void)
{
	IrNode *x = in(TFG_F32, shp(2, 2, 3, 0)), *y = in(TFG_F32, shp(1, 3, 0, 0));
	IrNode *b = in(TFG_BOOL, shp(2, 2, 3, 0));

	IrNode *bv = in(TFG_BOOL, shp(1, 3, 0, 0));
	IrNode *i = in(TFG_I64, shp(2, 2, 3, 0));
	IrNode *iv = in(TFG_I64, shp(1, 3, 0, 0));

	/* on f32, or on the one dtype of the ops that take only that (the
	   logical ones bools, hash_bucket i64) */
	for (int op = 0; op < OP__COUNT; op++) {
		int fl = op_takes(op, TFG_F32), it = !fl && op_takes(op, TFG_I64);
		TfgDtype t = fl ? TFG_F32 : it ? TFG_I64 : TFG_BOOL;
		IrNode *a = fl ? x : it ? i : b, *av = fl ? y : it ? iv : bv;

		if (!(op_info[op].flags & OPF_ELEMWISE) || op == OP_cast)
			continue;
		if (op_info[op].nin == 2) {
			int cmp = op >= OP_equal && op <= OP_greater_equal;

			is(ir_binary(&P, L, op, a, av), cmp ? TFG_BOOL : t,
			   shp(2, 2, 3, 0));
		} else if (op_info[op].nin == 1) {
			is(ir_unary(&P, L, op, a), t, shp(2, 2, 3, 0));
		}
	}
	refused(ir_binary(&P, L, OP_hash_bucket, x, y),
		"'hash_bucket' does not take f32");
	refused(ir_binary(&P, L, OP_logical_and, x, y),
		"'logical_and' does not take f32");
	is(ir_where(&P, L, b, x, y), TFG_F32, shp(2, 2, 3, 0));
	is(ir_cast(&P, L, x, TFG_I64), TFG_I64, shp(2, 2, 3, 0));
	/* the comparisons make bools of anything, arithmetic no bools */
	is(ir_binary(&P, L, OP_equal, b, b), TFG_BOOL, shp(2, 2, 3, 0));
	refused(ir_binary(&P, L, OP_add, b, b), "'add' does not take bool");
	refused(ir_binary(&P, L, OP_add, x, in(TFG_I32, shp(0, 0, 0, 0))),
		"'add' takes operands of one dtype");
	refused(ir_binary(&P, L, OP_mul, x, in(TFG_F32, shp(1, 2, 0, 0))),
		"do not broadcast: shapes [2, 3] and [2]");
	refused(ir_unary(&P, L, OP_exp, in(TFG_I32, shp(0, 0, 0, 0))),
		"'exp' does not take i32[]");
	refused(ir_where(&P, L, x, x, x), "'where' takes a bool condition");
}

static void
t_reductions(void)
{
	IrNode *x = in(TFG_F32, shp(2, 2, 3, 0));

	for (int op = 0; op < OP__COUNT; op++) {
		int arg = op == OP_argmax || op == OP_argmin;

		if (!(op_info[op].flags & OPF_REDUCE))
			continue;
		is(ir_reduce(&P, L, op, x, 2, 0), arg ? TFG_I64 : TFG_F32,
		   shp(1, 2, 0, 0));
		if (!arg)
			is(ir_reduce(&P, L, op, x, 3, 1), TFG_F32,
			   shp(2, 1, 1, 0));
	}
	is(ir_softmax(&P, L, OP_softmax, x), TFG_F32, shp(2, 2, 3, 0));
	is(ir_softmax(&P, L, OP_log_softmax, x), TFG_F32, shp(2, 2, 3, 0));
	refused(ir_reduce(&P, L, OP_argmax, x, 3, 0), "it takes one axis");
	refused(ir_reduce(&P, L, OP_reduce_sum, x, 4, 0), "cannot reduce");
	refused(ir_softmax(&P, L, OP_softmax, in(TFG_I64, shp(1, 4, 0, 0))),
		"takes a float tensor");
	is(ir_xent(&P, L, x, in(TFG_F32, shp(2, 2, 3, 0))), TFG_F32,
	   shp(1, 2, 0, 0));
}

/* softmax_cross_entropy's labels have the logits' dtype and shape. */
static void
t_xent(void)
{
	IrNode *x = in(TFG_F32, shp(2, 2, 3, 0));

	refused(ir_xent(&P, L, x, in(TFG_F32, shp(2, 2, 4, 0))),
		"labels of their dtype and shape, got f32[2, 3] and f32[2, 4]");
	refused(ir_xent(&P, L, x, in(TFG_F64, shp(2, 2, 3, 0))),
		"got f32[2, 3] and f64[2, 3]");
	refused(ir_xent(&P, L, in(TFG_I32, shp(1, 3, 0, 0)),
			in(TFG_I32, shp(1, 3, 0, 0))), "takes float logits");
}

static void
t_shapes(void)
{
	IrNode *x = in(TFG_F32, shp(2, 2, 3, 0)), *m = in(TFG_F32, shp(2, 3, 4, 0));
	IrNode *v = in(TFG_F32, shp(1, 3, 0, 0)), *xs[2];
	int64_t begin[2] = {1, 1}, size[2] = {1, 2};
	int perm[2] = {1, 0};
	TfgShape six = shp(1, 6, 0, 0), five = shp(1, 5, 0, 0);

	is(ir_matmul(&P, L, x, m), TFG_F32, shp(2, 2, 4, 0));
	is(ir_matmul(&P, L, x, v), TFG_F32, shp(1, 2, 0, 0)); /* a column */
	is(ir_transpose(&P, L, x, NULL), TFG_F32, shp(2, 3, 2, 0));
	is(ir_transpose(&P, L, x, perm), TFG_F32, shp(2, 3, 2, 0));
	is(ir_reshape(&P, L, x, &six), TFG_F32, six);
	is(ir_slice(&P, L, x, begin, size, 0), TFG_F32, shp(2, 1, 2, 0));
	is(ir_slice(&P, L, x, begin, size, 1), TFG_F32, shp(1, 2, 0, 0));
	xs[0] = x, xs[1] = x;
	is(ir_concat(&P, L, xs, 2, 1), TFG_F32, shp(2, 2, 6, 0));
	is(ir_stack(&P, L, xs, 2, 0), TFG_F32, shp(3, 2, 2, 3));
	refused(ir_matmul(&P, L, m, x), "operands of 'matmul' do not match");
	refused(ir_reshape(&P, L, x, &five), "cannot make f32[2, 3] (6 "
		"elements) into shape [5]");
	size[1] = 3;
	refused(ir_slice(&P, L, x, begin, size, 0), "out of range on axis 1");
	perm[1] = 1;
	refused(ir_transpose(&P, L, x, perm), "must be a permutation");
	xs[1] = m;
	refused(ir_concat(&P, L, xs, 2, 0), "tensors of 'concat' on axis 0");
}

/* Convolutions: output shapes from the geometry, unknown batches kept,
 * the gradients' shapes checked against the convolution's. */
static void
t_conv(void)
{
	static const IrConv same = {{2, 2}, {1, 1}, {0, 1, 0, 1}, 0, {0, 0}};
	static const IrConv dil = {{1, 1}, {2, 2}, {0, 0, 0, 0}, 0, {0, 0}};
	static const IrConv dw = {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1, {0, 0}};
	TfgShape xs = {4, {IR_DIM_UNKNOWN, 6, 6, 3}}, ys = {4, {2, 3, 3, 8}};
	TfgShape fs = {4, {3, 3, 3, 8}}, bad = {4, {3, 3, 3, 7}};
	TfgShape x2 = {4, {2, 6, 6, 3}};
	IrNode *x = in(TFG_F32, xs), *f = in(TFG_F32, fs);
	IrNode *y = ir_conv(&P, L, OP_conv2d, x, f, &same, NULL);

	is(y, TFG_F32, (TfgShape){4, {IR_DIM_UNKNOWN, 3, 3, 8}});
	ASSERT(y->conv == &same);
	is(ir_conv(&P, L, OP_conv2d, x, f, &dil, NULL), TFG_F32,
	   (TfgShape){4, {IR_DIM_UNKNOWN, 2, 2, 8}});
	is(ir_conv(&P, L, OP_conv2d, x, in(TFG_F32, (TfgShape){4, {3, 3, 3,
	   2}}), &dw, NULL), TFG_F32, (TfgShape){4, {IR_DIM_UNKNOWN, 6, 6,
	   6}});
	is(ir_conv(&P, L, OP_conv2d_backprop_input, in(TFG_F32, ys), f, &same,
		   &xs), TFG_F32, x2);
	is(ir_conv(&P, L, OP_conv2d_backprop_filter, in(TFG_F32, x2),
		   in(TFG_F32, ys), &same, &fs), TFG_F32, fs);
	refused(ir_conv(&P, L, OP_conv2d, x, in(TFG_F32, (TfgShape){4, {3, 3,
		4, 8}}), &same, NULL), "operands of 'conv2d' do not fit");
	refused(ir_conv(&P, L, OP_conv2d, in(TFG_I32, xs), f, &same, NULL),
		"'conv2d' takes two float tensors of rank 4");
	refused(ir_conv(&P, L, OP_conv2d, x, in(TFG_F64, fs), &same, NULL),
		"and one dtype");
	refused(ir_conv(&P, L, OP_conv2d_backprop_filter, in(TFG_F32, x2),
			in(TFG_F32, ys), &same, &bad),
		"operands of 'conv2d_backprop_filter' do not fit");
	refused(ir_conv(&P, L, OP_conv2d_backprop_input, in(TFG_F32, ys), f,
			&dil, &x2),
		"operands of 'conv2d_backprop_input' do not fit");
}

/* OP_check_range: a float scalar, its interval in *make. */
static void
t_check_range(void)
{
	IrNode *k = in(TFG_F32, shp(0, 0, 0, 0));
	IrNode *n = ir_check_range(&P, L, k, 0.0, 1.0, 2, IR_RANGE_KEEP_PROB);

	is(n, TFG_F32, shp(0, 0, 0, 0));
	ASSERT(n->make && n->make->f[1] == 1.0 && n->make->i[1] == 2 &&
	       n->make->i[0] == IR_RANGE_KEEP_PROB);
	refused(ir_check_range(&P, L, in(TFG_I32, shp(0, 0, 0, 0)), 0, 1, 2,
			       IR_RANGE_RATE), "takes a float scalar");
	refused(ir_check_range(&P, L, in(TFG_F32, shp(1, 2, 0, 0)), 0, 1, 2,
			       IR_RANGE_RATE), "takes a float scalar");
}

/* Pools: SAME and VALID windows, the gradients' shapes checked. */
static void
t_pool(void)
{
	static const IrConv same = {{2, 2}, {1, 1}, {0, 1, 0, 1}, 0, {2, 2}};
	static const IrConv valid = {{1, 1}, {1, 1}, {0, 0, 0, 0}, 0, {3, 3}};
	TfgShape xs = {4, {IR_DIM_UNKNOWN, 5, 5, 3}}, x2 = {4, {2, 5, 5, 3}};
	TfgShape ys = {4, {2, 3, 3, 3}};
	IrNode *x = in(TFG_F32, xs);

	is(ir_pool(&P, L, OP_max_pool, x, NULL, &same, NULL), TFG_F32,
	   (TfgShape){4, {IR_DIM_UNKNOWN, 3, 3, 3}});
	is(ir_pool(&P, L, OP_avg_pool, x, NULL, &valid, NULL), TFG_F32,
	   (TfgShape){4, {IR_DIM_UNKNOWN, 3, 3, 3}});
	is(ir_pool(&P, L, OP_max_pool, in(TFG_I64, x2), NULL, &same, NULL),
	   TFG_I64, ys);
	is(ir_pool(&P, L, OP_max_pool_grad, in(TFG_F32, x2), in(TFG_F32, ys),
		   &same, &x2), TFG_F32, x2);
	is(ir_pool(&P, L, OP_avg_pool_grad, in(TFG_F32, ys), NULL, &same,
		   &x2), TFG_F32, x2);
	refused(ir_pool(&P, L, OP_avg_pool, in(TFG_I32, x2), NULL, &same,
			NULL), "'avg_pool' takes a float tensor of rank 4");
	refused(ir_pool(&P, L, OP_max_pool, in(TFG_F32, (TfgShape){4, {1, 2,
			2, 1}}), NULL, &valid, NULL),
		"the windows of 'max_pool' do not fit");
	refused(ir_pool(&P, L, OP_avg_pool_grad, in(TFG_F32, x2), NULL, &same,
			&x2), "the windows of 'avg_pool_grad' do not fit");
}

static void
t_makers_and_state(void)
{
	IrMake *mk = arena_alloc(P.arena, sizeof *mk);
	IrVar *v = arena_alloc(P.arena, sizeof *v);
	IrNode *x, *d, *k, *one;
	TfgShape s = shp(2, 2, 3, 0);
	double *val = arena_alloc(P.arena, sizeof *val);

	*val = 1.5;
	one = ir_const(&P, L, TFG_F64, &(TfgShape){0, {0}}, val, 0);
	is(one, TFG_F64, shp(0, 0, 0, 0));
	for (int op = OP_zeros; op <= OP_ones_like; op++)
		if (op != OP_fill)
			is(ir_make(&P, L, op, TFG_F32, &s, mk, NULL, 0), TFG_F32,
			   s);
	is(ir_make(&P, L, OP_fill, TFG_F64, &s, mk, &one, 1), TFG_F64, s);
	is(ir_make(&P, L, OP_range, TFG_I32, &s, mk, NULL, 0), TFG_I32, s);
	k = in(TFG_I32, shp(1, 2, 0, 0));
	is(ir_make(&P, L, OP_one_hot, TFG_F32, &s, mk, &k, 1), TFG_F32, s);
	d = ir_var(&P, L, OP_random_draw, NULL, NULL);
	is(d, TFG_I64, shp(0, 0, 0, 0));
	is(ir_make(&P, L, OP_random_uniform, TFG_F32, &s, mk, &d, 1), TFG_F32,
	   s);
	is(ir_make(&P, L, OP_random_normal, TFG_F32, &s, mk, &d, 1), TFG_F32,
	   s);
	refused(ir_make(&P, L, OP_random_normal, TFG_F32, &s, mk, &k, 1),
		"wrong inputs");
	refused(ir_make(&P, L, OP_fill, TFG_F32, &s, mk, &one, 1),
		"wrong inputs"); /* an f64 value for an f32 fill */

	v->name = "w";
	v->dtype = TFG_F32;
	v->shape = s;
	x = in(TFG_F32, s);
	is(ir_var(&P, L, OP_variable, v, NULL), TFG_F32, s);
	is(ir_var(&P, L, OP_assign, v, x), TFG_F32, s);
	is(ir_var(&P, L, OP_assign_add, v, x), TFG_F32, s);
	is(ir_var(&P, L, OP_assign_sub, v, x), TFG_F32, s);
	is(ir_var(&P, L, OP_var_initialized, v, NULL), TFG_BOOL,
	   shp(0, 0, 0, 0));
	refused(ir_var(&P, L, OP_assign_add, v, one),
		"assign_add(w, ...) needs f32[2, 3]");
	/* a gather of its rows read in place */
	{
		IrNode *ids = in(TFG_I64, shp(1, 4, 0, 0));
		IrNode *g = ir_gather(&P, L, in(TFG_F32, s), ids, 0);

		ASSERT_EQ(ir_set_gather_var(&P, g, v), 0);
		is(g, TFG_F32, shp(2, 4, 3, 0));
		ASSERT(g->op == OP_gather_var && g->var == v && g->nin == 1 &&
		       g->in[0] == ids);
		built[OP_gather_var] = 1;
		g = ir_gather(&P, L, in(TFG_F32, s), in(TFG_I32, shp(1, 4, 0,
								     0)), 0);
		refused((ir_set_gather_var(&P, g, v), NULL), "i64 ids of rank 1");
	}
	/* rows of it: i64[n] ids, their rows */
	is(ir_scatter(&P, L, OP_scatter_add, v, in(TFG_I64, shp(1, 4, 0, 0)),
		      in(TFG_F32, shp(2, 4, 3, 0))), TFG_F32, s);
	is(ir_scatter(&P, L, OP_scatter_update, v,
		      in(TFG_I64, shp(1, 1, 0, 0)), in(TFG_F32, shp(2, 1, 3, 0))),
	   TFG_F32, s);
	refused(ir_scatter(&P, L, OP_scatter_add, v,
			   in(TFG_I32, shp(1, 4, 0, 0)),
			   in(TFG_F32, shp(2, 4, 3, 0))),
		"needs i64 ids and their rows, got i32[4] and f32[4, 3]");
	/* an optimizer's update (spec §6.26 "minimize and optimizers"):
	   its gradient of v's type, its f64 hyperparameters, a bool; and
	   the after node that waits for it */
	{
		IrOpt *o = arena_alloc(P.arena, sizeof *o);
		IrNode *h = in(TFG_F64, shp(1, 2, 0, 0)), *u, *a[2];

		o->kind = IR_OPT_SGD;
		is(u = ir_apply(&P, L, v, o, x, h), TFG_BOOL, shp(0, 0, 0, 0));
		ASSERT(u->var == v && u->opt == o);
		refused(ir_apply(&P, L, v, o, one, h), "needs its gradient as "
			"f32[2, 3], got f64[]");
		refused(ir_apply(&P, L, v, o, x, in(TFG_F64, shp(1, 1, 0, 0))),
			"needs f64[2] hyperparameters"); /* lr, the loss */
		/* of rows: ids i64[n], rows [n] + the variable's dims after
		   the first, in place */
		refused((ir_set_rows(&P, u, in(TFG_F32, shp(2, 4, 3, 0)),
				     in(TFG_I32, shp(1, 4, 0, 0))), NULL),
			"needs i64 ids and their rows' gradients, got i32[4] "
			"and f32[4, 3]");
		refused((ir_set_rows(&P, u, in(TFG_F32, shp(2, 4, 2, 0)),
				     in(TFG_I64, shp(1, 4, 0, 0))), NULL),
			"got i64[4] and f32[4, 2]");
		ASSERT_EQ(ir_set_rows(&P, u, in(TFG_F32, shp(2, 5, 3, 0)),
				      in(TFG_I64, shp(1, 5, 0, 0))), 0);
		ASSERT(u->op == OP_apply_rows && u->nin == 3 && u->in[1] == h);
		built[OP_apply_rows] = 1;
		ASSERT(u->var == v && u->opt == o);
		a[0] = x;
		a[1] = u;
		is(ir_after(&P, L, a, 2), TFG_F32, s);
		refused(ir_after(&P, L, a, 0), "'after' needs a value");
	}
}

static void
t_made_by_passes(void)
{
	IrNode *x = in(TFG_F32, shp(1, 4, 0, 0)), *y = in(TFG_F32, shp(1, 4, 0, 0));
	IrNode *r, *s, *f;
	IrFuse *fu = arena_alloc(P.arena, sizeof *fu);
	IrNode *ext[2] = {x, y};

	x->id = 0;
	s = ir_comm(&P, x, x, 7, 1);
	r = ir_comm(&P, x, NULL, 7, 0);
	is(s, TFG_F32, shp(1, 4, 0, 0));
	is(r, TFG_F32, shp(1, 4, 0, 0));
	ASSERT_EQ(s->op, OP_send);
	ASSERT_EQ(r->op, OP_recv);
	ASSERT_EQ(r->key, 7);
	ASSERT(r->origin == x);
	/* x moved to the task's gpu:1 */
	{
		Device g = {"local", 0, DEV_GPU, 1};
		IrNode *c = ir_copy(&P, x, x, g);
		is(c, TFG_F32, shp(1, 4, 0, 0));
		ASSERT_EQ(c->op, OP_copy);
		ASSERT_EQ(dev_slot(c->dev), 2);
		ASSERT(c->in[0] == x && c->origin == x);
	}
	/* x + y as one fused loop */
	fu->n = 1;
	fu->ops = arena_alloc(P.arena, sizeof *fu->ops);
	fu->ops[0].op = OP_add;
	fu->ops[0].dtype = TFG_F32;
	fu->ops[0].shape = x->shape;
	fu->ops[0].nin = 2;
	fu->ops[0].arg[0] = IR_FUSE_IN(0);
	fu->ops[0].arg[1] = IR_FUSE_IN(1);
	fu->shape = x->shape;
	f = ir_binary(&P, L, OP_add, x, y);
	ASSERT_EQ(ir_set_fuse(&P, f, OP_fused, fu, ext, 2), 0);
	is(f, TFG_F32, shp(1, 4, 0, 0));
	ASSERT(f->fuse == fu);
	fu->ops[0].dtype = TFG_F64;
	ASSERT_EQ(ir_set_fuse(&P, f, OP_fused, fu, ext, 2), -1);
	/* grad(y, x) until the grad pass expands it, then a view of x's
	   adjoint */
	r = ir_grad(&P, L, ir_reduce(&P, L, OP_reduce_sum, x, 1, 0), x);
	is(r, TFG_F32, shp(1, 4, 0, 0));
	ASSERT_EQ(r->op, OP_grad);
	refused(ir_grad(&P, L, x, x), "'grad' takes a float scalar");
	refused(ir_grad(&P, L, r->in[0], in(TFG_I32, shp(1, 4, 0, 0))),
		"and a float tensor, got f32[] and i32[4]");
	ASSERT_EQ(ir_set_alias(&P, r, y), 0);
	ASSERT_EQ(r->op, OP_reshape);
	ASSERT(r->nin == 1 && r->in[0] == y);
	ASSERT_EQ(ir_set_alias(&P, r, in(TFG_F32, shp(1, 5, 0, 0))), -1);
	/* a folded value becomes its constant; state never does */
	f->data = arena_alloc(P.arena, 16);
	ASSERT_EQ(ir_set_const(&P, f), 0);
	is(f, TFG_F32, shp(1, 4, 0, 0));
	ASSERT_EQ(f->nin, 0);
}

/* Rows by index (spec §6.36 "gather, embedding_lookup",
 * §6.37 "Segment reductions"): the result's axes, and what the builders
 * refuse. */
static void
t_gather(void)
{
	IrNode *x = in(TFG_F32, shp(3, 10, 4, 5));
	IrNode *idx = in(TFG_I32, shp(2, 2, 3, 0));
	IrNode *ids = in(TFG_I64, shp(1, 10, 0, 0));
	IrNode *g;

	is(ir_gather(&P, L, x, idx, 0), TFG_F32, (TfgShape){4, {2, 3, 4, 5}});
	g = ir_gather(&P, L, x, idx, 1);
	is(g, TFG_F32, (TfgShape){4, {10, 2, 3, 5}});
	ASSERT_EQ(g->axis, 1);
	is(ir_gather(&P, L, x, ids, 2), TFG_F32, (TfgShape){3, {10, 4, 10}});
	refused(ir_gather(&P, L, x, x, 0), "'gather' takes a tensor, i32 or "
		"i64 indices");
	refused(ir_gather(&P, L, x, idx, 3), "axis 3");
	is(ir_segment(&P, L, OP_unsorted_segment_sum, x, ids, 7, 0), TFG_F32,
	   shp(3, 7, 4, 5));
	g = ir_segment(&P, L, OP_unsorted_segment_max, g, idx, 10, 1);
	is(g, TFG_F32, shp(3, 10, 10, 5));
	refused(ir_segment(&P, L, OP_unsorted_segment_sum, x, idx, 7, 0),
		"dims from axis 0 are the shape of its i32 or i64 segment ids");
	refused(ir_segment(&P, L, OP_unsorted_segment_sum, x, ids, -2, 0),
		"'unsorted_segment_sum' takes f32, f64, i32 or i64 data");
	refused(ir_segment(&P, L, OP_gather, x, ids, 7, 0), "'gather' takes");
	refused(ir_segment(&P, L, OP_unsorted_segment_sum,
			   in(TFG_BOOL, shp(1, 10, 0, 0)), ids, 7, 0),
		"f32, f64, i32 or i64 data");
	/* a partitioned table's route: i64 [2, n] of rank-1 ids */
	{
		static const RtShardOf part = {"t", 1, 3, 0, 100};

		g = ir_shard_ids(&P, L, ids, &part);
		is(g, TFG_I64, shp(2, 2, 10, 0));
		ASSERT(g->part == &part);
		refused(ir_shard_ids(&P, L, idx, &part), "ids of rank 1");
		refused(ir_shard_ids(&P, L, x, &part), "i32 or i64 ids");
	}
}

/* The flags agree with each other: state is neither elementwise (it
 * would be fused into a loop) nor differentiable, and what has operands
 * to swap has two. */
static void
t_flags(void)
{
	for (int op = 0; op < OP__COUNT; op++) {
		int f = op_info[op].flags;

		if (f & (OPF_STATEFUL | OPF_EFFECT | OPF_RANDOM))
			ASSERT(!(f & (OPF_ELEMWISE | OPF_DIFF | OPF_COMMUTE)));
		if (f & OPF_COMMUTE)
			ASSERT_EQ(op_info[op].nin, 2);
		if (f & OPF_EFFECT)
			ASSERT(f & OPF_STATEFUL);
	}
	ASSERT(op_info[OP_matmul].flags & OPF_DIFF);
	ASSERT(!(op_info[OP_argmax].flags & OPF_DIFF));
}

/* Every op of ops.def comes out of a builder above. */
static void
t_every_op(void)
{
	t_elementwise();
	t_reductions();
	t_shapes();
	t_conv();
	t_pool();
	t_gather();
	t_check_range();
	t_makers_and_state();
	t_made_by_passes();
	for (int op = 0; op < OP__COUNT; op++)
		if (!built[op])
			TEST_FAIL_("no builder made '%s'", op_info[op].name);
}

TEST_MAIN_FIXTURE(setup, teardown, {"elementwise", t_elementwise},
		  {"reductions", t_reductions}, {"xent", t_xent},
		  {"shapes", t_shapes}, {"conv", t_conv}, {"pool", t_pool},
		  {"check_range", t_check_range},
		  {"makers_and_state", t_makers_and_state},
		  {"made_by_passes", t_made_by_passes}, {"flags", t_flags},
		  {"gather", t_gather}, {"every_op", t_every_op})
