/*
 * compiler/optim.c: minimize(loss, OPTIMIZER) and the optimizers (spec
 * §6.26 "minimize and optimizers"), part of the check phase.
 *
 *     train = minimize(loss, adam(0.001), global_step=step)
 *
 * makes, for each float variable v that the loss depends on through
 * operations with gradients (or each of vars=[...]):
 *
 *   grad(loss, v)           an OP_grad, expanded by the grad pass
 *                           (compiler/autodiff.c) where the loss is
 *   v's slots               variables beside v, of zeros, that the
 *                           optimizer keeps: "v/Momentum"; "v/Adam",
 *                           "v/Adam_1" and "v/Adam_t", as TF names them
 *   OP_apply                the update of v and its slots by the
 *                           gradient, on v's task under v's lock
 *                           (runtime/var.c, tfg_rt_apply), a bool
 *
 * then global_step's assign_add(step, 1), and an OP_after whose value is
 * the loss once every update is done: what `train` names, so that
 * run(train) makes one step of training and prints its loss.  Only the
 * gradients travel from where the loss is to the variables' tasks, and
 * only the bools back.  In a replicas block the statement is checked once
 * per worker (compiler/replicas.c): each copy has its own gradients and
 * updates, all of the same variables and slots, which the first copy
 * makes (Checker.opts).
 */
#include <math.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* The slots made for one variable by one minimize call, kept so that the
 * copies of a replicated minimize share them. */
typedef struct OptSlots {
	const AstNode *call;
	const IrVar *var;
	IrOpt *opt;
} OptSlots;

static const struct {
	const char *name;
	IrOptKind kind;
	const char *const kw[5];  /* the hyperparameters' names, in the order
				     of their signatures */
	double dflt[4];           /* NAN: required */
	const char *slot[3];      /* slot name suffixes */
	int nslot;
} opts[] = {
	{"sgd", IR_OPT_SGD, {"lr"}, {NAN}, {0}, 0},
	{"momentum", IR_OPT_MOMENTUM, {"lr", "momentum"}, {NAN, NAN},
	 {"Momentum"}, 1},
	{"adam", IR_OPT_ADAM, {"lr", "beta1", "beta2", "epsilon"},
	 {0.001, 0.9, 0.999, 1e-8}, {"Adam", "Adam_1", "Adam_t"}, 3},
	{"adagrad", IR_OPT_ADAGRAD, {"lr", "initial_accumulator_value"},
	 {NAN, 0.1}, {"Adagrad"}, 1},
	{"ftrl", IR_OPT_FTRL, {"lr", "l1", "l2", "initial_accumulator_value"},
	 {NAN, 0, 0, 0.1}, {"Ftrl", "Ftrl_1"}, 2},
};

/* Whether hyperparameter k of opts[o] is an accumulator's initial value
 * (a literal: it initializes the slot). */
static int
is_init(int o, int k)
{
	return strcmp(opts[o].kw[k], "initial_accumulator_value") == 0;
}

static int
opt_lookup(const char *name)
{
	for (int i = 0; i < (int)(sizeof opts / sizeof opts[0]); i++)
		if (strcmp(opts[i].name, name) == 0)
			return i;
	return -1;
}

/* sgd(...), momentum(...), adam(...) outside minimize. */
IrNode *
check_optimizer(Checker *c, AstNode *e, OpKind op)
{
	(void)op;
	diag_error(c->d, e->loc, "%s() is an optimizer: give it to "
		   "minimize(loss, %s(...))", e->name, e->name);
	return NULL;
}

/* One hyperparameter, f64: a literal (checked here: lr finite, the
 * betas in [0, 1), epsilon > 0), or a float scalar graph value cast to
 * f64.  NULL: reported. */
static IrNode *
hyper(Checker *c, int o, int k, AstNode *e, double *lit, int *is_lit)
{
	const char *what = opts[o].kw[k];
	Lit l = check_lit_of(e);
	IrNode *x;

	*is_lit = l.kind == 1 || l.kind == 2;
	if (*is_lit) {
		double d = l.kind == 1 ? (double)l.i : l.f;
		int bad = !isfinite(d);

		if (k > 0 && o == IR_OPT_ADAM)
			bad |= k == 3 ? !(d > 0) : !(d >= 0 && d < 1);
		if (k == 1 && o == IR_OPT_MOMENTUM)
			bad |= !(d >= 0);
		if (k > 0 && o == IR_OPT_FTRL && !is_init(o, k))
			bad |= !(d >= 0);
		if (is_init(o, k))
			bad |= !(d > 0);
		if (bad) {
			diag_error(c->d, ast_extent(e), "%s: %s must be %s, "
				   "got %g", opts[o].name, what,
				   k == 0 ? "a finite number" :
				   is_init(o, k) ? "a number > 0" :
				   o == IR_OPT_MOMENTUM || o == IR_OPT_FTRL
				   ? "a number >= 0" :
				   k == 3 ? "a number > 0" :
				   "a number in [0, 1)", d);
			return NULL;
		}
		*lit = d;
		return NULL;
	}
	if (is_init(o, k)) {
		diag_error(c->d, ast_extent(e), "%s: %s must be a number "
			   "literal: it initializes the accumulators",
			   opts[o].name, what);
		*is_lit = -1;
		return NULL;
	}
	if (l.kind == 3 || !(x = check_expr(c, e)) ||
	    !(x->dtype == TFG_F32 || x->dtype == TFG_F64) ||
	    x->shape.rank != 0) {
		if (l.kind == 3 || x)
			diag_error(c->d, ast_extent(e), "%s: %s must be a "
				   "number or a float scalar, got %s",
				   opts[o].name, what, l.kind == 3 ? "a bool" :
				   ir_type_str(c->a, x->dtype, &x->shape));
		*is_lit = -1;
		return NULL;
	}
	return x->dtype == TFG_F64 ? x : check_built(c, ir_cast(c->p, e->loc,
							       x, TFG_F64));
}

/* The hyperparameters of optimizer call e (opts[o]) as graph scalars or
 * literals: h[k] (NULL for a literal lit[k]).  -1: reported. */
static int
hypers(Checker *c, AstNode *e, int o, IrNode **h, double *lit)
{
	int n = ir_opt_nhyper(opts[o].kind);

	if (check_bind(c, e) < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		AstNode *a = check_param(e, k, opts[o].kw[k]);
		int is_lit;

		h[k] = NULL;
		lit[k] = opts[o].dflt[k];
		if (!a) {
			if (isnan(lit[k])) {
				diag_error(c->d, e->loc, "%s() needs its %s",
					   e->name, opts[o].kw[k]);
				return -1;
			}
			continue;
		}
		h[k] = hyper(c, o, k, a, &lit[k], &is_lit);
		if (is_lit < 0 || (!is_lit && !h[k]))
			return -1;
	}
	return 0;
}

/* The f64[n] hyperparameters of one update, on v's task; with sync, then
 * N, M, the round the step read (cast to f64) and the seconds it waits
 * for the round; then the step's loss, so
 * that an update of a NaN loss is refused where it would be applied. */
static IrNode *
hyper_node(Checker *c, SrcLoc loc, const IrVar *v, IrNode **h,
	   const double *lit, int n, const IrOpt *r, IrNode *loss)
{
	TfgShape s0 = {0, {0}};
	IrNode *in[8], *x;

	for (int k = 0; k < n; k++)
		in[k] = h[k];
	if (r->sync) {
		in[n] = in[n + 1] = in[n + 3] = NULL;
		in[n + 2] = ir_cast(c->p, loc, r->slot[r->nslot - 1]->read,
				    TFG_F64);
		if (!in[n + 2])
			return NULL;
		in[n + 2]->req = v->req;
	}
	for (int k = 0; k < n + (r->sync ? TFG_SYNC_HYPER : 0); k++) {
		double *d;
		if (in[k])
			continue;
		d = arena_alloc(c->a, sizeof *d);
		*d = k < n ? lit[k] : k == n ? r->sync
		   : k == n + 1 ? r->aggregate : r->sync_wait;
		if ((in[k] = ir_const(c->p, loc, TFG_F64, &s0, d, 0)) == NULL)
			return NULL;
		in[k]->req = v->req;
	}
	n += r->sync ? TFG_SYNC_HYPER : 0;
	in[n++] = loss->dtype == TFG_F64 ? loss
		: check_built(c, ir_cast(c->p, loc, loss, TFG_F64));
	if (!in[n - 1])
		return NULL;
	x = ir_stack(c->p, loc, in, n, 0);
	if (x) {
		x->req = v->req;
		x->why = arena_printf(c->a, "hyperparameters of variable %s",
				      v->name);
	}
	return x;
}

/* A slot variable of v: zeros of v's type (dtype t, shape of v unless
 * scalar), or init in each element, named v/suffix (v/suffix_2 ... if
 * taken), beside v. */
static IrVar *
make_slot(Checker *c, const IrVar *v, const char *suffix, TfgDtype t,
	  int scalar, double init, SrcLoc loc)
{
	IrMake *m = arena_alloc(c->a, sizeof *m);
	IrVar *s = arena_alloc(c->a, sizeof *s);
	const char *name = arena_printf(c->a, "%s/%s", v->name, suffix);
	TfgShape sh = scalar ? (TfgShape){0, {0}} : v->shape;
	IrNode *z;

	for (int k = 2, taken = 1; taken; k++) {
		taken = 0;
		for (int i = 0; i < c->p->vars.n && !taken; i++)
			taken = strcmp(((IrVar *)c->p->vars.v[i])->name,
				       name) == 0;
		if (taken)
			name = arena_printf(c->a, "%s/%s_%d", v->name, suffix,
					    k);
	}
	s->name = name;
	s->loc = loc;
	s->dtype = t;
	s->shape = sh;
	s->req = v->req;
	s->why = arena_printf(c->a, "slot of %s", v->name);
	if (v->part.whole && !scalar) { /* a shard's: its rows of the whole's */
		s->part = v->part;
		s->part.whole = arena_printf(c->a, "%s%s", v->part.whole,
					     name + strlen(v->name));
	}
	m->f[0] = init;
	z = ir_make(c->p, loc, init != 0 ? OP_fill : OP_zeros, t, &sh, m, NULL,
		    0);
	if (!z)
		return NULL;
	z->req = v->req;
	z->why = s->why;
	check_var_add(c, s, z, loc);
	return s;
}

/* The optimizer of call e (opts[o], hyperparameter literals lit[]) for
 * v: its slots made by the first copy of this minimize, shared by the
 * others; an accumulator (Adagrad's, FTRL's first) starts at the
 * initial_accumulator_value. */
static IrOpt *
opt_for(Checker *c, const AstNode *e, int o, const double *lit, int sync,
	int agg, double wait, const IrVar *v)
{
	int ninit = ir_opt_nhyper(opts[o].kind) - 1;
	double init = is_init(o, ninit) ? lit[ninit] : 0;

	static const char *const sync_slot[3] = {
		"sync_sum", "sync_count", "sync_round"};
	IrOpt *r;
	OptSlots *rec;

	for (int i = 0; i < c->opts.n; i++) {
		rec = c->opts.v[i];
		if (rec->call == e && rec->var == v)
			return rec->opt;
	}
	r = arena_alloc(c->a, sizeof *r);
	r->kind = opts[o].kind;
	r->sync = sync;
	r->aggregate = agg;
	r->sync_wait = wait;
	r->nslot = opts[o].nslot + (sync ? 3 : 0);
	for (int k = 0; k < r->nslot; k++) {
		int s = k - opts[o].nslot; /* >= 0: sync's */
		int count = (r->kind == IR_OPT_ADAM && k == 2) || s >= 1;
		r->slot[k] = make_slot(c, v, s >= 0 ? sync_slot[s]
						 : opts[o].slot[k],
				       count ? TFG_I64 : v->dtype, count,
				       k == 0 ? init : 0, e->loc);
		if (!r->slot[k])
			return NULL;
	}
	rec = arena_alloc(c->a, sizeof *rec);
	rec->call = e;
	rec->var = v;
	rec->opt = r;
	vec_push(c->a, &c->opts, rec);
	return r;
}

/* The float variables loss depends on through operations that have a
 * gradient, in declaration order: their reads into out[]. */
static int
loss_vars(Checker *c, IrNode *loss, IrNode **out, int max)
{
	char *seen = arena_alloc(c->a, c->p->g.nodes.n + 1);
	char *is_var = arena_alloc(c->a, c->p->vars.n + 1);
	PtrVec stack = {0};
	int n = 0;

	vec_push(c->a, &stack, loss);
	while (stack.n > 0) {
		IrNode *x = stack.v[--stack.n];
		if (seen[x->id])
			continue;
		seen[x->id] = 1;
		if (x->op == OP_variable && x->var && !x->var->draw &&
		    (x->dtype == TFG_F32 || x->dtype == TFG_F64)) {
			is_var[x->var->index] = 1;
			continue;
		}
		if (!(op_info[x->op].flags & OPF_DIFF))
			continue;
		for (int i = 0; i < x->nin; i++)
			if (x->in[i]->dtype == TFG_F32 ||
			    x->in[i]->dtype == TFG_F64)
				vec_push(c->a, &stack, x->in[i]);
	}
	for (int i = 0; i < c->p->vars.n && n < max; i++)
		if (is_var[i])
			out[n++] = ((IrVar *)c->p->vars.v[i])->read;
	return n;
}

/* vars=[a, b]: each a float variable the loss depends on. */
static int
listed_vars(Checker *c, AstNode *list, IrNode *loss, IrNode **out, int max)
{
	IrNode *dep[256];
	int ndep = loss_vars(c, loss, dep, 256), n = 0;

	if (list->kind != AST_TENSOR || list->n == 0) {
		diag_error(c->d, ast_extent(list), "minimize: vars= takes a "
			   "list of variables, as vars=[w, b]");
		return -1;
	}
	for (int i = 0; i < list->n; i++) {
		AstNode *x = list->list[i];
		Sym *s = x->kind == AST_NAME ? check_find(&c->syms, x->name)
					     : NULL;
		IrVar *var[64];
		int found = 0, nvar;

		if (x->kind == AST_NAME && !s) {
			check_lookup(c, x);
			return -1;
		}
		if (!s || !(s->var || s->shards)) {
			diag_error(c->d, ast_extent(x), "minimize: vars= "
				   "lists variables, and this is not one");
			return -1;
		}
		/* a partitioned variable: its shards */
		nvar = s->shards ? s->shards->n : 1;
		var[0] = s->var;
		for (int j = 0; j < nvar; j++)
			var[j] = s->shards ? s->shards->var[j] : s->var;
		if (var[0]->dtype != TFG_F32 && var[0]->dtype != TFG_F64) {
			diag_error(c->d, x->loc, "minimize: '%s' is %s: only "
				   "float variables have gradients", x->name,
				   ir_type_str(c->a, var[0]->dtype,
					       &s->node->shape));
			return -1;
		}
		for (int j = 0; j < nvar; j++)
			for (int k = 0; k < ndep; k++)
				found |= dep[k] == var[j]->read;
		if (!found) {
			diag_error(c->d, x->loc, "minimize: the loss does not "
				   "depend on '%s' (through operations that "
				   "have gradients)", x->name);
			diag_note(c->d, var[0]->loc, "'%s' is declared here",
				  x->name);
			return -1;
		}
		for (int j = 0; j < nvar; j++) {
			for (int k = 0; k < n; k++)
				if (out[k] == var[j]->read) {
					diag_error(c->d, x->loc, "minimize: "
						   "'%s' is listed twice",
						   x->name);
					return -1;
				}
			if (n == max) {
				diag_error(c->d, x->loc, "minimize: at most "
					   "%d variables", max);
				return -1;
			}
			out[n++] = var[j]->read;
		}
	}
	return n;
}

/* global_step=NAME: an integer scalar variable, and its increment: 1,
 * or with sync whether the update `done` completed a round. */
static IrNode *
step_inc(Checker *c, AstNode *e, IrNode *done)
{
	Sym *s = e->kind == AST_NAME ? check_find(&c->syms, e->name) : NULL;
	TfgShape s0 = {0, {0}};
	IrNode *one;
	void *d;

	if (e->kind == AST_NAME && !s) {
		check_lookup(c, e);
		return NULL;
	}
	if (!s || !s->var || s->var->draw || s->var->shape.rank != 0 ||
	    !(s->var->dtype == TFG_I32 || s->var->dtype == TFG_I64)) {
		diag_error(c->d, ast_extent(e), "minimize: global_step must be "
			   "an integer scalar variable (var step = 0)%s%s",
			   s && s->var ? ", and this is " : "",
			   s && s->var ? ir_type_str(c->a, s->var->dtype,
						     &s->var->shape) : "");
		return NULL;
	}
	d = arena_alloc(c->a, 8);
	if (s->var->dtype == TFG_I32)
		*(int32_t *)d = 1;
	else
		*(int64_t *)d = 1;
	one = done ? check_built(c, ir_cast(c->p, e->loc, done, s->var->dtype))
		   : ir_const(c->p, e->loc, s->var->dtype, &s0, d, 0);
	if (!one)
		return NULL;
	if (!done)
		one->req = s->var->req;
	return check_var_node(c, s->var, OP_assign_add, one, e->loc);
}

/* sync(OPT, replicas=N, aggregate=M, timeout=S): N, or -1 (reported),
 * M in *agg and S in *wait; OPT is checked by the caller.  Either of N
 * and M stands for both, as TF's total_num_replicas defaults to
 * replicas_to_aggregate. */
/* Seconds a synchronous update waits for the other replicas' gradients
 * of its round before it fails, unless sync's timeout= says (so that a
 * replica that is gone never hangs the others). */
#define SYNC_WAIT_S 60.0

/* The integer of sync's argument a (from 1 to 1024), or -1 reported. */
static int
sync_count(Checker *c, AstNode *a, const char *name)
{
	Lit l = check_lit_of(a);

	if (l.kind != 1 || l.i < 1 || l.i > 1024) {
		diag_error(c->d, ast_extent(a), "sync: %s must be an integer "
			   "from 1 to 1024", name);
		return -1;
	}
	return (int)l.i;
}

static int
sync_of(Checker *c, AstNode *e, int *agg, double *wait)
{
	AstNode *n, *m, *t;
	int nr = 0, na = 0;

	if (check_bind(c, e) < 0)
		return -1;
	n = check_kwarg(e, "replicas");
	m = check_kwarg(e, "aggregate");
	if (!n && !m) {
		diag_error(c->d, e->loc, "sync() needs replicas=N: how many "
			   "gradients make one update");
		return -1;
	}
	if ((n && (nr = sync_count(c, n, "replicas")) < 0) ||
	    (m && (na = sync_count(c, m, "aggregate")) < 0))
		return -1;
	if (!n)
		nr = na;
	if (!m)
		na = nr;
	if (na > nr) {
		diag_error(c->d, ast_extent(m), "sync: aggregate=%d is more "
			   "than replicas=%d: an update takes at most one "
			   "gradient of each replica", na, nr);
		return -1;
	}
	*agg = na;
	*wait = SYNC_WAIT_S;
	if ((t = check_kwarg(e, "timeout")) != NULL) {
		Lit w = check_lit_of(t);
		double s = w.kind == 1 ? (double)w.i : w.f;

		if ((w.kind != 1 && w.kind != 2) || !(s > 0 && s <= 1e6)) {
			diag_error(c->d, ast_extent(t), "sync: timeout is the "
				   "seconds a replica waits for the others' "
				   "gradients, a number from 0 (excluded) to "
				   "1e6");
			return -1;
		}
		*wait = s;
	}
	return nr;
}

/* minimize(loss, OPTIMIZER, vars=[...], global_step=step): the loss after
 * one update of each variable. */
IrNode *
check_minimize(Checker *c, AstNode *e, OpKind op)
{
	AstNode *oe, *vk, *sk;
	IrNode *loss, *v[256], *h[4], *in[258];
	IrOpt *r[256];
	double lit[4];
	int o, nv, nin = 0, nh, sync = 0, agg = 0;
	double wait = 0;

	(void)op;
	if (check_bind(c, e) < 0)
		return NULL;
	oe = e->list[1];
	if (oe->kind == AST_CALL && strcmp(oe->name, "sync") == 0 &&
	    (sync = sync_of(c, oe, &agg, &wait)) <= 0)
		return NULL;
	if (sync)
		oe = oe->list[0];
	if (oe->kind != AST_CALL || (o = opt_lookup(oe->name)) < 0) {
		if (habit_report(c, oe)) /* GradientDescentOptimizer(lr) */
			return NULL;
		diag_error(c->d, ast_extent(oe), "minimize: the second argument "
			   "is an optimizer: sgd(lr), momentum(lr, m) or "
			   "adam(lr)");
		return NULL;
	}
	if (!(loss = check_expr(c, e->list[0])))
		return NULL;
	if (!(loss->dtype == TFG_F32 || loss->dtype == TFG_F64) ||
	    loss->shape.rank != 0) {
		diag_error(c->d, ast_extent(e->list[0]), "minimize: the loss "
			   "must be a float scalar, it is %s%s",
			   ir_type_str(c->a, loss->dtype, &loss->shape),
			   loss->shape.rank ? " (reduce it: reduce_mean(...))"
					    : "");
		return NULL;
	}
	if (hypers(c, oe, o, h, lit) < 0)
		return NULL;
	nh = ir_opt_nhyper(opts[o].kind);
	vk = check_kwarg(e, "vars");
	nv = vk ? listed_vars(c, vk, loss, v, 256)
		: loss_vars(c, loss, v, 256);
	if (nv < 0)
		return NULL;
	if (nv == 0) {
		diag_error(c->d, ast_extent(e->list[0]), "minimize: the loss "
			   "depends on no float variable through operations "
			   "that have gradients: nothing to train");
		return NULL;
	}
	in[nin++] = loss;
	/* the slots in the variables' order; the gradients and updates in
	   the reverse one, the last variable the loss reads first, so that
	   the definition order (which partition.c and the parts keep) is
	   backpropagation's: each gradient and its update (a send to the
	   variable's task, and the update there) come as soon as the
	   backward pass has made it, not after the gradients of the
	   variables before it.  A worker of Deep MNIST sent its dense
	   layer's 12.8 MB gradient after both convolutions' gradients and
	   then waited 5-15 ms for the ps to apply it */
	for (int i = 0; i < nv; i++)
		if (!(r[i] = opt_for(c, e, o, lit, sync, agg, wait,
				     v[i]->var)))
			return NULL;
	for (int i = nv - 1; i >= 0; i--) {
		IrVar *var = v[i]->var;
		IrNode *g, *hn, *up;

		g = check_built(c, ir_grad(c->p, e->loc, loss, var->read));
		hn = hyper_node(c, e->loc, var, h, lit, nh, r[i], loss);
		if (!g || !hn ||
		    !(up = ir_apply(c->p, e->loc, var, r[i], g, hn)))
			return NULL;
		up->name = c->copy >= 0 ? arena_printf(c->a, "%s/update@%d",
						       var->name, c->copy)
				: arena_printf(c->a, "%s/update", var->name);
		up->why = arena_printf(c->a, "variable %s, %s", var->name,
				       var->why);
		in[1 + i] = up;
	}
	nin += nv;
	if ((sk = check_kwarg(e, "global_step")) != NULL &&
	    !(in[nin++] = step_inc(c, sk, sync ? in[1] : NULL)))
		return NULL;
	return check_built(c, ir_after(c->p, e->loc, in, nin));
}
