/*
 * compiler/shards.c: partitioned variables
 * (spec §4.4.1 "Partitioned variables"), part of the check phase.
 *
 *     var emb = partitioned(random_normal([1000000, 32], seed=1), 4)
 *
 * makes one variable per shard, emb/part_0 ... emb/part_3, each of its
 * rows of axis 0 ("div", TF's fixed_size_partitioner: contiguous, the
 * first rows % N shards one row longer; "mod": row r in shard r % N at
 * r / N), each placed as a variable of its own (round-robin over the ps
 * tasks in a replicas block), and binds the name to the whole value,
 * the shards joined (IrNode.shards marks it).  To the program the
 * variable is that one value; what would move the whole table is done
 * per shard instead:
 *
 *   initial value   a maker (zeros, ones, fill, random_*) makes each
 *                   shard's rows where the shard lives (a random one
 *                   its rows of the whole one's numbers: IrMake.first);
 *                   any other value is cut into the shards
 *   gather(emb, ids)   the ids checked against the whole table, then
 *                   on each shard's task its rows: an id of another
 *                   shard becomes -1, which the shard's gather (drop)
 *                   gives as zeros and its gradient's segment sum
 *                   drops, so minimize updates each shard's own rows
 *                   (compiler/autodiff.c sparse_update); the shards'
 *                   rows are added up
 *   assign(emb, x)  each shard takes its part of x
 *   scatter_add(emb, ids, rows), scatter_update: routed as a gather,
 *                   each shard changing its own rows
 *   vars=[emb]      each shard
 *
 * Each shard is an ordinary variable to the rest of the compiler and to
 * the runtime: its slots, checkpoints and initialization are its own.
 */
#include <string.h>

#include "compiler/compiler_int.h"

/* Shard k's first row (div) and its number of rows. */
static int64_t
shard_first(const IrShards *sh, int k)
{
	return tfg_shard_first(sh->rows, sh->n, sh->mod, k);
}

static int64_t
shard_rows(const IrShards *sh, int k)
{
	return tfg_shard_rows(sh->rows, sh->n, sh->mod, k);
}

/* n, placed with shard k (NULL stays NULL). */
static IrNode *
on_shard(Checker *c, const IrShards *sh, int k, IrNode *n)
{
	if (n) {
		n->req = sh->var[k]->req;
		n->why = arena_printf(c->a, "with its table, variable %s",
				      sh->var[k]->name);
	}
	return n;
}

/* The i64 constant [rows of shard k] (mod): the whole's row of each. */
static IrNode *
mod_rows(Checker *c, SrcLoc at, const IrShards *sh, int k)
{
	int64_t n = shard_rows(sh, k), *d = arena_alloc(c->a, (n + 1) * 8);
	TfgShape s = {1, {n}};

	for (int64_t i = 0; i < n; i++)
		d[i] = k + i * sh->n;
	return check_built(c, ir_const(c->p, at, TFG_I64, &s, d, 0));
}

/* Shard k's rows of x, a value of the whole's shape: a slice (div) or a
 * gather (mod). */
static IrNode *
part_of(Checker *c, SrcLoc at, const IrShards *sh, int k, IrNode *x)
{
	int64_t begin[TFG_MAX_RANK] = {0}, size[TFG_MAX_RANK];

	if (!x)
		return NULL;
	if (sh->mod)
		return check_built(c, ir_gather(c->p, at, x,
						 mod_rows(c, at, sh, k), 0));
	for (int d = 0; d < x->shape.rank; d++)
		size[d] = x->shape.dims[d];
	begin[0] = shard_first(sh, k);
	size[0] = shard_rows(sh, k);
	return check_built(c, ir_slice(c->p, at, x, begin, size, 0));
}

/* The whole value of the shards' values v[] (their reads, or their
 * updates): joined on axis 0 (div), then each row put in its place
 * (mod). */
static IrNode *
join(Checker *c, SrcLoc at, const IrShards *sh, IrNode **v)
{
	IrNode *x;
	int64_t *d, at0 = 0, off[64];
	TfgShape s = {1, {sh->rows}};

	if (sh->n == 1)
		return v[0];
	x = check_built(c, ir_concat(c->p, at, v, sh->n, 0));
	if (!x || !sh->mod)
		return x;
	for (int k = 0; k < sh->n; k++) {
		off[k] = at0;
		at0 += shard_rows(sh, k);
	}
	d = arena_alloc(c->a, (sh->rows + 1) * 8);
	for (int64_t r = 0; r < sh->rows; r++)
		d[r] = off[r % sh->n] + r / sh->n;
	return check_built(c, ir_gather(c->p, at, x,
					check_built(c, ir_const(c->p, at,
								TFG_I64, &s, d,
								0)), 0));
}

/* Shard k's initial value: x's maker remade for the shard's rows where
 * the shard lives, or its part of x. */
static IrNode *
shard_init(Checker *c, SrcLoc at, const IrShards *sh, int k, IrNode *x)
{
	TfgShape s = x->shape;
	IrMake *m;
	int maker = x->op == OP_zeros || x->op == OP_ones ||
		    x->op == OP_fill || ((x->op == OP_random_uniform ||
					  x->op == OP_random_normal) &&
					 !sh->mod);

	if (!maker || !x->make)
		return on_shard(c, sh, k, part_of(c, at, sh, k, x));
	s.dims[0] = shard_rows(sh, k);
	m = arena_alloc(c->a, sizeof *m);
	*m = *x->make;
	if (x->op == OP_random_uniform || x->op == OP_random_normal)
		m->first += shard_first(sh, k) *
			    (tfg_shape_numel(&x->shape) / sh->rows);
	return on_shard(c, sh, k, check_built(c, ir_make(c->p, at, x->op,
							   x->dtype, &s, m,
							   x->in, x->nin)));
}

/* The strategy= of partitioned(): 0 div, 1 mod, -1 reported. */
static int
strategy(Checker *c, AstNode *e)
{
	static const char *const names[2] = {"div", "mod"};
	AstNode *a = check_kwarg(e, "strategy");
	const char *near;

	if (!a)
		return 0;
	for (int i = 0; i < 2; i++)
		if (a->kind == AST_STRING && strcmp(a->str, names[i]) == 0)
			return i;
	near = a->kind == AST_STRING ? check_nearest(a->str, names, 2) : NULL;
	diag_error(c->d, a->loc, "the strategy of 'partitioned' is \"div\" "
		   "or \"mod\"%s%s%s", near ? "; did you mean \"" : "",
		   near ? near : "", near ? "\"?" : "");
	return -1;
}

void
check_sharded(Checker *c, AstNode *s)
{
	AstNode *e = s->a;
	IrShards *sh = arena_alloc(c->a, sizeof *sh);
	Device dev[64];
	const char *why[64];
	IrNode *x, *reads[64], *whole;
	int64_t n;
	Sym *sym;

	if (check_bind(c, e) < 0 ||
	    check_int_arg(c, e, e->list[1], "the number of shards", &n) < 0 ||
	    (sh->mod = strategy(c, e)) < 0)
		goto fail;
	if (n < 1 || n > 64) {
		diag_error(c->d, e->list[1]->loc, "'partitioned' splits a "
			   "variable into 1 to 64 shards, not %lld",
			   (long long)n);
		goto fail;
	}
	sh->n = (int)n;
	/* the shards' places first: the initial value is made on the
	   first's */
	for (int k = 0; k < sh->n; k++) {
		why[k] = check_var_why(c);
		dev[k] = dev_complete(c->p, check_var_device(c));
	}
	if (!(x = check_var_init(c, s, e->list[0], dev[0])))
		goto fail;
	if (x->shape.rank == 0 || x->shape.dims[0] < n) {
		diag_error(c->d, ast_extent(e), "'partitioned' splits axis 0 "
			   "of '%s' into %d shards, but its initial value is "
			   "%s%s", s->name, sh->n,
			   ir_type_str(c->a, x->dtype, &x->shape),
			   x->shape.rank ? ": fewer rows than shards"
					 : ", a scalar");
		goto fail;
	}
	sh->rows = x->shape.dims[0];
	sh->var = arena_alloc(c->a, sh->n * sizeof *sh->var);
	for (int k = 0; k < sh->n; k++) {
		IrVar *v = arena_alloc(c->a, sizeof *v);
		IrNode *init;

		v->name = arena_printf(c->a, "%s/part_%d", s->name, k);
		v->loc = s->tok.loc;
		v->why = arena_printf(c->a, "shard %d of %d of %s, %s", k,
				      sh->n, s->name, why[k]);
		v->req = dev[k];
		v->dtype = x->dtype;
		v->shape = x->shape;
		v->shape.dims[0] = shard_rows(sh, k);
		v->part = (RtShardOf){s->name, k, sh->n, sh->mod, sh->rows};
		sh->var[k] = v;
		if (!(init = shard_init(c, e->loc, sh, k, x)))
			goto fail;
		check_var_add(c, v, init, s->loc);
		reads[k] = v->read;
	}
	if (!(whole = join(c, e->loc, sh, reads)))
		goto fail;
	if (whole != reads[0]) {
		whole->name = s->name;
		whole->user_named = 1;
	}
	whole->shards = sh;
	if ((sym = check_define(c, s->name, s->tok.loc, whole)) != NULL)
		sym->shards = sh;
	return;
fail:
	check_define(c, s->name, s->tok.loc, NULL);
}

/* partitioned(...) anywhere else. */
IrNode *
check_partitioned(Checker *c, AstNode *e, OpKind op)
{
	(void)op;
	diag_error(c->d, e->loc, "partitioned() is the initial value of a "
		   "variable: var emb = partitioned(INIT, N)");
	return NULL;
}

/* The ids (checked to lie in the whole table) as shard k's rows, on its
 * task: their local row where they are in the shard, else -1. */
static IrNode *
local_ids(Checker *c, SrcLoc at, const IrShards *sh, int k, IrNode *ids)
{
	int64_t lo = shard_first(sh, k), nk = shard_rows(sh, k);
	IrNode *in, *local, *none;

#define SCALAR(v) on_shard(c, sh, k, check_scalar(c, at, (Lit){1, (v), 0}, \
						  ids->dtype))
#define BIN(op, a, b) on_shard(c, sh, k, check_bin(c, at, (op), (a), (b)))
	if (sh->mod) {
		in = BIN(OP_equal, BIN(OP_mod, ids, SCALAR(sh->n)), SCALAR(k));
		local = BIN(OP_div, ids, SCALAR(sh->n));
	} else {
		local = BIN(OP_sub, ids, SCALAR(lo));
		in = BIN(OP_logical_and, BIN(OP_greater_equal, local, SCALAR(0)),
			 BIN(OP_less, local, SCALAR(nk)));
	}
	none = SCALAR(-1);
#undef BIN
#undef SCALAR
	if (!in || !local || !none)
		return NULL;
	return on_shard(c, sh, k, check_built(c, ir_where(c->p, at, in, local,
							  none)));
}

/* ids checked against the whole table, in the message of op. */
static IrNode *
whole_ids(Checker *c, SrcLoc at, const IrShards *sh, IrNode *ids, OpKind op)
{
	return check_built(c, ir_check_range(c->p, at, ids, 0,
					     (double)sh->rows, (int)op,
					     IR_RANGE_INDEX));
}

/* gather(table, ids) of ids of rank 1, routed where the ids are
 * (spec/design.md "Counted edges"): for each shard, its distinct rows
 * among the ids (OP_shard_ids) go to it, counted, and its rows come
 * back, counted; each id then takes its row from its shard's.  So the
 * gradient is each shard's rows summed per distinct id where the ids
 * are, and only those travel to the shard, whatever the table's size. */
static IrNode *
gather_routed(Checker *c, SrcLoc at, const IrShards *sh, IrNode *ids)
{
	int64_t b0[TFG_MAX_RANK] = {0}, b1[TFG_MAX_RANK] = {1}, z[TFG_MAX_RANK];
	IrNode *sum = NULL;

	z[0] = 1;
	z[1] = ids->shape.dims[0];
	for (int k = 0; k < sh->n; k++) {
		RtShardOf *part = arena_alloc(c->a, sizeof *part);
		IrNode *route, *local, *place, *rows, *g;

		*part = (RtShardOf){sh->var[k]->name, k, sh->n, sh->mod,
				    sh->rows};
		if (!(route = check_built(c, ir_shard_ids(c->p, at, ids, part))) ||
		    !(local = check_built(c, ir_slice(c->p, at, route, b0, z,
						      1))) ||
		    !(place = check_built(c, ir_slice(c->p, at, route, b1, z,
						      1))) ||
		    !(rows = check_built(c, ir_gather(c->p, at,
						      sh->var[k]->read, local,
						      0))) ||
		    !(g = check_built(c, ir_gather(c->p, at, rows, place, 0))))
			return NULL;
		local->count = local;
		rows->drop = g->drop = 1;
		rows->count = local;
		on_shard(c, sh, k, rows);
		sum = sum ? check_bin(c, at, OP_add, sum, g) : g;
	}
	return sum;
}

IrNode *
check_gather_var(Checker *c, SrcLoc at, IrVar *v, IrNode *ids)
{
	IrShards *sh = arena_alloc(c->a, sizeof *sh);

	sh->n = 1;
	sh->rows = v->shape.dims[0];
	sh->var = arena_alloc(c->a, sizeof *sh->var);
	sh->var[0] = v;
	return check_gather_shards(c, at, sh, ids);
}

IrNode *
check_gather_shards(Checker *c, SrcLoc at, const IrShards *sh,
		    IrNode *ids)
{
	const TfgShape *t = &sh->var[0]->shape;
	TfgShape flat = {1, {0}}, out;
	IrNode *g;

	if (!(ids = whole_ids(c, at, sh, ids, OP_gather)))
		return NULL;
	if (ids->shape.rank == 1)
		return gather_routed(c, at, sh, ids);
	/* ids of another rank: routed as one list of them, their rows
	   then shaped as the ids with a row's dims after */
	out = ids->shape;
	flat.dims[0] = tfg_shape_numel(&ids->shape);
	if (ids->shape.rank + t->rank - 1 > TFG_MAX_RANK)
		return check_built(c, ir_gather(c->p, at, sh->var[0]->read,
						ids, 0)); /* its error */
	for (int d = 1; d < t->rank; d++)
		out.dims[out.rank++] = t->dims[d];
	if (!(ids = check_built(c, ir_reshape(c->p, at, ids, &flat))) ||
	    !(g = gather_routed(c, at, sh, ids)))
		return NULL;
	return check_built(c, ir_reshape(c->p, at, g, &out));
}

IrNode *
check_shards_scatter(Checker *c, const IrShards *sh, OpKind op,
		     IrNode *ids, IrNode *rows, SrcLoc at)
{
	IrNode *up[64];

	if (sh->n > 1 && !(ids = whole_ids(c, at, sh, ids, op)))
		return NULL;
	for (int k = 0; k < sh->n; k++) {
		IrNode *local = sh->n > 1 ? local_ids(c, at, sh, k, ids) : ids;

		if (!local || !(up[k] = check_var_scatter(c, sh->var[k], op,
							  local, rows, at)))
			return NULL;
		up[k]->drop = sh->n > 1;
	}
	return join(c, at, sh, up);
}

IrNode *
check_shards_update(Checker *c, const IrShards *sh, OpKind op, IrNode *x,
		    SrcLoc at)
{
	IrNode *up[64];

	for (int k = 0; k < sh->n; k++) {
		IrNode *xk = x->shape.rank == 0 ? x : part_of(c, at, sh, k, x);
		if (!xk || !(up[k] = check_var_node(c, sh->var[k], op, xk, at)))
			return NULL;
	}
	return join(c, at, sh, up);
}
