/*
 * runtime/planimg.c: a TfgPlan as bytes and back, so that `tfgc compile`
 * can put the plan a task server needs into a part's table
 * (TfgPartTable.plan) and an AOT task server (tfg_serve_part,
 * runtime/serve.c) runs with no program file and no compiler
 * (spec/language.md §10.3 "Ahead-of-time compilation", spec/design.md
 * "AOT task servers").
 *
 * The image is everything of the plan: the tasks, edges, run
 * signatures, variables and the sessions' programs, their constants
 * included.  Integers are little-endian of fixed width; a string is its
 * length (u32, UINT32_MAX for NULL) and its bytes; a pointer that may be
 * NULL (an expression, a tensor) is a byte 0 or 1 before it.  The
 * writer and the reader walk the structures in the same order, so a
 * field added to the plan is added to both (tests/unit/runtime_test.c
 * compares a plan with its image's).
 *
 * The image is part of an object the user links, code already, so the
 * reader guards against damage, not malice: every count is checked
 * against the bytes left, the indices the runtime follows without
 * looking (tasks, edges, a run's signature, a statement's paths) against
 * what they index, every tensor against its dtype and shape, and the
 * nesting of statements and expressions is bounded, so a damaged image
 * is an error, not a read out of bounds here.  What it reads lives in
 * blocks chained to the plan and freed with it.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_int.h"

#define IMG_MAGIC "TFGPLAN2" /* 2: RtVar.part, RtEdge.counted */
#define IMG_DEPTH 200 /* nested statements and expressions */

/* ------------------------------------------------------------- writer */

typedef struct Buf {
	unsigned char *b;
	size_t n, cap;
	int oom;
} Buf;

static void
put(Buf *w, const void *p, size_t n)
{
	if (w->oom)
		return;
	if (w->cap - w->n < n) {
		size_t nc = w->cap ? w->cap : 4096;
		unsigned char *b;
		while (nc - w->n < n)
			nc *= 2;
		if ((b = realloc(w->b, nc)) == NULL) {
			w->oom = 1;
			return;
		}
		w->b = b, w->cap = nc;
	}
	if (n)
		memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void
put_u64(Buf *w, uint64_t v, int bytes)
{
	unsigned char b[8];

	for (int i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(w, b, (size_t)bytes);
}

#define put_u8(w, v) put_u64(w, (uint64_t)(v), 1)
#define put_i32(w, v) put_u64(w, (uint64_t)(uint32_t)(int32_t)(v), 4)
#define put_i64(w, v) put_u64(w, (uint64_t)(v), 8)

static void
put_str(Buf *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put_i32(w, s ? (uint32_t)n : UINT32_MAX);
	put(w, s, n);
}

static void
put_shape(Buf *w, TfgDtype t, const TfgShape *s)
{
	put_u8(w, t);
	put_u8(w, s->rank);
	for (int i = 0; i < s->rank; i++)
		put_i64(w, s->dims[i]);
}

static void
put_tensor(Buf *w, const RtTensor *t)
{
	put_u8(w, t != NULL);
	if (!t)
		return;
	put_shape(w, t->dtype, &t->shape);
	put_i64(w, t->nbytes);
	put(w, t->data, t->nbytes);
}

static void
put_expr(Buf *w, const TfgPlan *pl, const RtExpr *x)
{
	int nnames = 0;

	put_u8(w, x != NULL);
	if (!x)
		return;
	put_u8(w, x->kind);
	put_str(w, x->where);
	put_tensor(w, x->value);
	put_str(w, x->str);
	put_i32(w, x->slot);
	put_i32(w, x->sig);
	put_i32(w, x->nargs);
	for (int i = 0; i < x->nargs; i++)
		put_expr(w, pl, x->args[i]);
	/* RT_E_UNINIT: one name per fetch of its run */
	if (x->names && x->nargs > 0 && x->args[0] &&
	    x->args[0]->kind == RT_E_RUN)
		nnames = pl->sigs[x->args[0]->sig].nfetch;
	put_i32(w, nnames);
	for (int i = 0; i < nnames; i++)
		put_str(w, x->names[i]);
}

/* How many paths and cols a statement has: RtStmt does not say. */
static int
stmt_paths(const TfgPlan *pl, const RtStmt *st)
{
	switch (st->kind) {
	case RT_S_SAVE:
		return st->nexpr > 0 && st->exprs[0]->kind == RT_E_RUN
			   ? pl->sigs[st->exprs[0]->sig].nfetch : 0;
	case RT_S_CHECKPOINT: case RT_S_RESTORE: case RT_S_SAVE_EVERY:
		return 1;
	case RT_S_PROGRESS:
		return st->nexpr; /* paths[0] unused: the step's */
	default:
		return 0;
	}
}

static void put_stmts(Buf *w, const TfgPlan *pl, RtStmt **v, int n);

static void
put_stmt(Buf *w, const TfgPlan *pl, const RtStmt *st)
{
	int np = stmt_paths(pl, st);

	put_u8(w, st->kind);
	put_str(w, st->where);
	put_i32(w, st->nexpr);
	for (int i = 0; i < st->nexpr; i++)
		put_expr(w, pl, st->exprs[i]);
	put_i32(w, st->slot);
	put_stmts(w, pl, st->body, st->nbody);
	put_stmts(w, pl, st->else_, st->nelse);
	put_i32(w, np);
	for (int i = 0; i < np; i++)
		put_str(w, st->kind == RT_S_PROGRESS && i == 0 ? NULL
							       : st->paths[i]);
	put_u8(w, st->kind == RT_S_RECORD);
	for (int i = 0; st->kind == RT_S_RECORD && i < st->nexpr; i++)
		put_i32(w, st->cols[i]);
	put_i32(w, st->epoch);
}

static void
put_stmts(Buf *w, const TfgPlan *pl, RtStmt **v, int n)
{
	put_i32(w, n);
	for (int i = 0; i < n; i++)
		put_stmt(w, pl, v[i]);
}

TFG_API tfg_status
tfg_plan_image(const TfgPlan *pl, unsigned char **out, size_t *n, TfgError *e)
{
	Buf w = {0};

	*out = NULL;
	*n = 0;
	put(&w, IMG_MAGIC, 8);
	put_i64(&w, pl->hash);
	put_u8(&w, pl->generic);
	put_str(&w, pl->file);
	put_i32(&w, pl->ntask);
	for (int i = 0; i < pl->ntask; i++) {
		const RtTask *t = &pl->tasks[i];
		put_str(&w, t->job);
		put_i32(&w, t->index);
		put_str(&w, t->addr);
		put_str(&w, t->name);
	}
	put_i32(&w, pl->nedge);
	for (int i = 0; i < pl->nedge; i++) {
		const RtEdge *g = &pl->edges[i];
		put_i32(&w, g->key);
		put_str(&w, g->name);
		put_i32(&w, g->src);
		put_i32(&w, g->dst);
		put_shape(&w, g->dtype, &g->shape);
		put_i64(&w, g->nbytes);
		put_i32(&w, g->counted);
	}
	put_i32(&w, pl->nsig);
	for (int s = 0; s < pl->nsig; s++) {
		const RtSig *g = &pl->sigs[s];
		put_i32(&w, g->client);
		put_i32(&w, g->nfeed);
		for (int i = 0; i < g->nfeed; i++) {
			put_str(&w, g->feeds[i].name);
			put_shape(&w, g->feeds[i].dtype, &g->feeds[i].shape);
			put_i32(&w, g->feeds[i].key);
		}
		put_i32(&w, g->nfetch);
		for (int i = 0; i < g->nfetch; i++) {
			put_str(&w, g->fetches[i].name);
			put_i32(&w, g->fetches[i].key);
		}
		put_i32(&w, g->ntask);
		for (int i = 0; i < g->ntask; i++) {
			put_i32(&w, g->tasks[i]);
			put_i32(&w, g->needs_done ? g->needs_done[i] : 0);
		}
	}
	put_i32(&w, pl->nvar);
	for (int i = 0; i < pl->nvar; i++) {
		const RtVar *v = &pl->vars[i];
		put_str(&w, v->name);
		put_i32(&w, v->task);
		put_shape(&w, v->dtype, &v->shape);
		put_i64(&w, v->nbytes);
		put_str(&w, v->where);
		put_i32(&w, v->hidden);
		put_str(&w, v->part.whole);
		put_i32(&w, v->part.k);
		put_i32(&w, v->part.n);
		put_i32(&w, v->part.mod);
		put_i64(&w, v->part.rows);
	}
	put_i32(&w, pl->nsession);
	for (int i = 0; i < pl->nsession; i++) {
		const RtSession *ss = &pl->sessions[i];
		put_i32(&w, ss->task);
		put_i32(&w, ss->group);
		put_str(&w, ss->label);
		put_i32(&w, ss->nslot);
		put_stmts(&w, pl, ss->stmts, ss->nstmt);
		put_i32(&w, ss->ncsv);
		for (int k = 0; k < ss->ncsv; k++) {
			const RtCsv *f = &ss->csv[k];
			put_str(&w, f->path);
			put_i32(&w, f->ncol);
			for (int c = 0; c < f->ncol; c++)
				put_str(&w, f->cols[c]);
			put_i32(&w, f->time);
		}
	}
	if (w.oom) {
		free(w.b);
		return tfg_error(e, TFG_ENOMEM, "out of memory for the plan's "
				 "image");
	}
	*out = w.b;
	*n = w.n;
	return TFG_OK;
}

/* ------------------------------------------------------------- reader */

typedef struct Block {
	struct Block *next;
	RtTensor *tensor; /* or NULL: the block is memory */
	_Alignas(16) unsigned char data[];
} Block;

/* What tfg_plan_read returns: the plan first, so that tfg_plan_free
 * finds the rest. */
typedef struct Image {
	TfgPlan plan;
	Block *blocks;
} Image;

typedef struct Rd {
	const unsigned char *p, *end;
	Image *img;
	int depth;
	int unknown; /* dims of -1 allowed (a generic plan's feeds) */
	TfgError *e;
	tfg_status st; /* the first error */
} Rd;

static int
bad(Rd *r, const char *what)
{
	if (r->st == TFG_OK)
		r->st = tfg_error(r->e, TFG_EFORMAT, "the plan's image is "
				  "damaged: %s", what);
	return -1;
}

/* A block of n zeroed bytes that lives as long as the plan; NULL after
 * an error. */
static Block *
block(Rd *r, size_t n)
{
	Block *b;

	if (r->st != TFG_OK)
		return NULL;
	if (n > SIZE_MAX - sizeof *b || !(b = calloc(1, sizeof *b + n))) {
		r->st = tfg_error(r->e, TFG_ENOMEM, "out of memory reading "
				  "the plan's image");
		return NULL;
	}
	b->next = r->img->blocks;
	r->img->blocks = b;
	return b;
}

static void *
take(Rd *r, size_t n)
{
	Block *b = block(r, n);

	return b ? b->data : NULL;
}

static uint64_t
get_u64(Rd *r, int bytes)
{
	uint64_t v = 0;

	if (r->st != TFG_OK)
		return 0;
	if (r->end - r->p < bytes) {
		bad(r, "it ends early");
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	return v;
}

#define get_u8(r) ((int)get_u64(r, 1))
#define get_i32(r) ((int32_t)(uint32_t)get_u64(r, 4))
#define get_i64(r) ((int64_t)get_u64(r, 8))

/* A count of things of at least min bytes each: no more than the bytes
 * left can hold, so a damaged count never allocates much. */
static int
get_count(Rd *r, size_t min)
{
	int32_t n = get_i32(r);

	if (n < 0 || (size_t)n > (size_t)(r->end - r->p) / min) {
		bad(r, "a count is out of range");
		return 0;
	}
	return n;
}

/* An index in [0, n), or -1 where allowed. */
static int
get_index(Rd *r, int n, int none_ok, const char *what)
{
	int32_t v = get_i32(r);

	if (r->st == TFG_OK && !(v >= 0 && v < n) && !(none_ok && v == -1)) {
		bad(r, what);
		return 0;
	}
	return v;
}

static const char *
get_str(Rd *r)
{
	uint32_t n = (uint32_t)get_u64(r, 4);
	char *s;

	if (n == UINT32_MAX || r->st != TFG_OK)
		return NULL;
	if (n > (size_t)(r->end - r->p)) {
		bad(r, "a string runs past its end");
		return NULL;
	}
	if (memchr(r->p, '\0', n)) {
		bad(r, "a string holds a NUL");
		return NULL;
	}
	if ((s = take(r, (size_t)n + 1)) == NULL)
		return NULL;
	memcpy(s, r->p, n);
	r->p += n;
	return s;
}

/* A string that must be there. */
static const char *
get_name(Rd *r)
{
	const char *s = get_str(r);

	if (s == NULL && r->st == TFG_OK)
		bad(r, "a name is missing");
	return s ? s : "";
}

static void
get_shape(Rd *r, TfgDtype *t, TfgShape *s)
{
	int dt = get_u8(r), rank = get_u8(r);

	memset(s, 0, sizeof *s);
	*t = TFG_F32;
	if (r->st != TFG_OK)
		return;
	if (dt >= TFG__NDTYPE || rank > TFG_MAX_RANK) {
		bad(r, "a dtype or rank is out of range");
		return;
	}
	*t = (TfgDtype)dt;
	s->rank = rank;
	for (int i = 0; i < rank; i++)
		if ((s->dims[i] = get_i64(r)) < -r->unknown)
			bad(r, "a dim is negative");
}

/* A dtype and shape whose size tfg_shape_size accepts: nbytes must be
 * theirs (strings: at least the records). */
static void
check_size(Rd *r, TfgDtype t, const TfgShape *s, uint64_t nbytes)
{
	size_t want;

	if (r->st != TFG_OK)
		return;
	if (rt_shape_nbytes(&want, t, s) != TFG_OK)
		bad(r, "a shape is too large");
	else if (t == TFG_STRING ? nbytes < want : nbytes != want)
		bad(r, "a size differs from its dtype and shape's");
}

static RtTensor *
get_tensor(Rd *r)
{
	TfgDtype t;
	TfgShape s;
	uint64_t n;
	RtTensor *x;
	Block *b;

	if (get_u8(r) == 0 || r->st != TFG_OK)
		return NULL;
	get_shape(r, &t, &s);
	n = (uint64_t)get_i64(r);
	check_size(r, t, &s, n);
	if (r->st != TFG_OK)
		return NULL;
	if (n > (uint64_t)(r->end - r->p)) {
		bad(r, "a constant runs past its end");
		return NULL;
	}
	if ((b = block(r, 0)) == NULL)
		return NULL;
	if (rt_tensor_new_nbytes(&x, t, &s, (size_t)n) != TFG_OK) {
		r->st = tfg_error(r->e, TFG_ENOMEM, "out of memory reading "
				  "the plan's image");
		return NULL;
	}
	b->tensor = x; /* freed with the plan */
	if (n)
		memcpy(x->data, r->p, (size_t)n);
	r->p += n;
	if (t == TFG_STRING &&
	    tfg_string_check(x->data, x->nbytes, tfg_shape_numel(&s)) != TFG_OK)
		bad(r, "a string constant's records point outside it");
	return x;
}

static RtExpr *
get_expr(Rd *r)
{
	RtExpr *x;
	int kind;

	if (get_u8(r) == 0 || r->st != TFG_OK)
		return NULL;
	if (++r->depth > IMG_DEPTH) {
		bad(r, "expressions nest too deep");
		return NULL;
	}
	if ((x = take(r, sizeof *x)) == NULL)
		return NULL;
	if ((kind = get_u8(r)) > RT_E_FORMAT)
		bad(r, "an expression's kind is unknown");
	x->kind = (RtExprKind)kind;
	x->where = get_str(r);
	x->value = get_tensor(r);
	x->str = get_str(r);
	x->slot = get_i32(r);
	x->sig = get_i32(r);
	if (r->st == TFG_OK && x->kind == RT_E_RUN &&
	    !(x->sig >= 0 && x->sig < r->img->plan.nsig))
		bad(r, "a run's signature is out of range");
	x->nargs = get_count(r, 1);
	if (!(x->args = take(r, ((size_t)x->nargs + 1) * sizeof *x->args)))
		return NULL;
	for (int i = 0; i < x->nargs && r->st == TFG_OK; i++)
		x->args[i] = get_expr(r);
	int nn = get_count(r, 4);
	if (nn) {
		const char **names = take(r, ((size_t)nn + 1) * sizeof *names);
		for (int i = 0; names && i < nn; i++)
			names[i] = get_name(r);
		x->names = names;
	}
	/* what the client dereferences without looking */
	if (r->st == TFG_OK &&
	    ((x->kind == RT_E_CONST && !x->value) ||
	     (x->kind == RT_E_STR && !x->str) ||
	     (x->kind == RT_E_UNINIT &&
	      (x->nargs < 1 || !x->args[0] || x->args[0]->kind != RT_E_RUN ||
	       nn != r->img->plan.sigs[x->args[0]->sig].nfetch))))
		bad(r, "an expression lacks what its kind needs");
	r->depth--;
	return x;
}

static RtStmt **get_stmts(Rd *r, int *n);

/* Whether st has the paths its kind reads: the writer's stmt_paths, and
 * those there. */
static int
paths_ok(const TfgPlan *pl, const RtStmt *st, int np)
{
	if (st->kind == RT_S_SAVE &&
	    (st->nexpr < 1 || !st->exprs[0] || st->exprs[0]->kind != RT_E_RUN))
		return 0;
	if (np != stmt_paths(pl, st))
		return 0;
	for (int i = st->kind == RT_S_PROGRESS; i < np; i++)
		if (st->paths[i] == NULL)
			return 0;
	return 1;
}

static RtStmt *
get_stmt(Rd *r)
{
	RtStmt *st;
	int kind, np;

	if (++r->depth > IMG_DEPTH) {
		bad(r, "statements nest too deep");
		return NULL;
	}
	if ((st = take(r, sizeof *st)) == NULL)
		return NULL;
	if ((kind = get_u8(r)) > RT_S_SAVE_EVERY)
		bad(r, "a statement's kind is unknown");
	st->kind = (RtStmtKind)kind;
	st->where = get_str(r);
	st->nexpr = get_count(r, 1);
	if (!(st->exprs = take(r, ((size_t)st->nexpr + 1) *
				     sizeof *st->exprs)))
		return NULL;
	for (int i = 0; i < st->nexpr && r->st == TFG_OK; i++)
		st->exprs[i] = get_expr(r);
	st->slot = get_i32(r);
	st->body = get_stmts(r, &st->nbody);
	st->else_ = get_stmts(r, &st->nelse);
	np = get_count(r, 4);
	if (np && (st->paths = take(r, ((size_t)np + 1) * sizeof *st->paths)))
		for (int i = 0; i < np; i++)
			st->paths[i] = get_str(r);
	if (get_u8(r)) {
		if (!(st->cols = take(r, ((size_t)st->nexpr + 1) *
					    sizeof *st->cols)))
			return NULL;
		for (int i = 0; i < st->nexpr; i++)
			st->cols[i] = get_i32(r);
	}
	st->epoch = get_i32(r);
	if (r->st == TFG_OK && st->kind == RT_S_RECORD && !st->cols)
		bad(r, "a record() lacks its columns");
	if (r->st == TFG_OK && !paths_ok(&r->img->plan, st, np))
		bad(r, "a statement has the wrong number of paths");
	r->depth--;
	return st;
}

static RtStmt **
get_stmts(Rd *r, int *n)
{
	RtStmt **v;

	*n = get_count(r, 1);
	if (!(v = take(r, ((size_t)*n + 1) * sizeof *v)))
		return NULL;
	for (int i = 0; i < *n && r->st == TFG_OK; i++)
		v[i] = get_stmt(r);
	return v;
}

static void
get_plan(Rd *r, TfgPlan *pl)
{
	if (r->end - r->p < 8 || memcmp(r->p, IMG_MAGIC, 8) != 0) {
		bad(r, "it does not start with " IMG_MAGIC);
		return;
	}
	r->p += 8;
	pl->hash = (uint64_t)get_i64(r);
	pl->generic = get_u8(r) != 0;
	pl->file = get_name(r);
	if ((pl->ntask = get_count(r, 16)) == 0)
		bad(r, "it has no task");
	if (!(pl->tasks = take(r, ((size_t)pl->ntask + 1) * sizeof *pl->tasks)))
		return;
	for (int i = 0; i < pl->ntask; i++) {
		RtTask *t = &pl->tasks[i];
		t->job = get_name(r);
		t->index = get_i32(r);
		t->addr = get_name(r);
		t->name = get_name(r);
	}
	pl->nedge = get_count(r, 8);
	if (!(pl->edges = take(r, ((size_t)pl->nedge + 1) * sizeof *pl->edges)))
		return;
	for (int i = 0; i < pl->nedge; i++) {
		RtEdge *g = &pl->edges[i];
		if ((g->key = (uint32_t)get_i32(r)) != (uint32_t)i)
			bad(r, "an edge's key is not its index");
		g->name = get_name(r);
		g->src = get_index(r, pl->ntask, 0, "an edge's task is out of "
				   "range");
		g->dst = get_index(r, pl->ntask, 0, "an edge's task is out of "
				   "range");
		get_shape(r, &g->dtype, &g->shape);
		g->nbytes = (size_t)get_i64(r);
		check_size(r, g->dtype, &g->shape, g->nbytes);
		g->counted = get_i32(r);
		if (g->counted < RT_COUNTED_NO || g->counted > RT_COUNTED_IDS ||
		    (g->counted && (g->shape.rank < 1 ||
				    g->dtype == TFG_STRING)) ||
		    (g->counted == RT_COUNTED_IDS && g->dtype != TFG_I64))
			bad(r, "an edge's count is out of range");
	}
	pl->nsig = get_count(r, 4);
	if (!(pl->sigs = take(r, ((size_t)pl->nsig + 1) * sizeof *pl->sigs)))
		return;
	for (int s = 0; s < pl->nsig; s++) {
		RtSig *g = &pl->sigs[s];
		g->client = get_index(r, pl->ntask, 0, "a signature's client "
				      "is out of range");
		g->nfeed = get_count(r, 8);
		if (!(g->feeds = take(r, ((size_t)g->nfeed + 1) *
					   sizeof *g->feeds)))
			return;
		/* a generic plan's signatures have no edges yet */
		for (int i = 0; i < g->nfeed; i++) {
			g->feeds[i].name = get_name(r);
			r->unknown = pl->generic;
			get_shape(r, &g->feeds[i].dtype, &g->feeds[i].shape);
			r->unknown = 0;
			g->feeds[i].key = pl->generic ? (uint32_t)get_i32(r)
				: (uint32_t)get_index(r, pl->nedge, 0, "a "
						      "feed's edge is out of "
						      "range");
		}
		g->nfetch = get_count(r, 8);
		if (!(g->fetches = take(r, ((size_t)g->nfetch + 1) *
					     sizeof *g->fetches)))
			return;
		for (int i = 0; i < g->nfetch; i++) {
			g->fetches[i].name = get_name(r);
			g->fetches[i].key = pl->generic ? (uint32_t)get_i32(r)
				: (uint32_t)get_index(r, pl->nedge, 0, "a "
						      "fetch's edge is out of "
						      "range");
		}
		g->ntask = get_count(r, 8);
		g->tasks = take(r, ((size_t)g->ntask + 1) * sizeof *g->tasks);
		g->needs_done = take(r, ((size_t)g->ntask + 1) *
					    sizeof *g->needs_done);
		if (!g->tasks || !g->needs_done)
			return;
		for (int i = 0; i < g->ntask; i++) {
			g->tasks[i] = get_index(r, pl->ntask, 0, "a "
						"signature's task is out of "
						"range");
			g->needs_done[i] = get_i32(r);
			if (i > 0 && g->tasks[i] <= g->tasks[i - 1])
				bad(r, "a signature's tasks are out of order");
		}
	}
	pl->nvar = get_count(r, 16);
	if (!(pl->vars = take(r, ((size_t)pl->nvar + 1) * sizeof *pl->vars)))
		return;
	for (int i = 0; i < pl->nvar; i++) {
		RtVar *v = &pl->vars[i];
		v->name = get_name(r);
		v->task = get_index(r, pl->ntask, 0, "a variable's task is out "
				    "of range");
		get_shape(r, &v->dtype, &v->shape);
		v->nbytes = (size_t)get_i64(r);
		check_size(r, v->dtype, &v->shape, v->nbytes);
		v->where = get_str(r);
		v->hidden = get_i32(r);
		v->part.whole = get_str(r);
		v->part.k = get_i32(r);
		v->part.n = get_i32(r);
		v->part.mod = get_i32(r);
		v->part.rows = get_i64(r);
		if (v->part.whole && (v->part.n < 1 || v->part.k < 0 ||
				      v->part.k >= v->part.n ||
				      v->part.rows < v->part.n ||
				      v->shape.rank < 1))
			bad(r, "a variable's shard is out of range");
	}
	pl->nsession = get_count(r, 16);
	if (!(pl->sessions = take(r, ((size_t)pl->nsession + 1) *
					 sizeof *pl->sessions)))
		return;
	for (int i = 0; i < pl->nsession; i++) {
		RtSession *ss = &pl->sessions[i];
		ss->task = get_index(r, pl->ntask, 0, "a session's task is out "
				     "of range");
		ss->group = get_i32(r);
		ss->label = get_str(r);
		ss->nslot = get_count(r, 1);
		ss->stmts = get_stmts(r, &ss->nstmt);
		ss->ncsv = get_count(r, 8);
		if (!(ss->csv = take(r, ((size_t)ss->ncsv + 1) *
					  sizeof *ss->csv)))
			return;
		for (int k = 0; k < ss->ncsv; k++) {
			RtCsv *f = &ss->csv[k];
			const char **cols;
			f->path = get_name(r);
			f->ncol = get_count(r, 4);
			if (!(cols = take(r, ((size_t)f->ncol + 1) *
					       sizeof *cols)))
				return;
			for (int c = 0; c < f->ncol; c++)
				cols[c] = get_name(r);
			f->cols = cols;
			f->time = get_index(r, f->ncol, 1, "a CSV file's time "
					    "column is out of range");
		}
	}
	if (r->st == TFG_OK && r->p != r->end)
		bad(r, "bytes follow its end");
}

TFG_API void
tfg_plan_free(TfgPlan *pl)
{
	Image *img = (Image *)pl;

	if (pl == NULL)
		return;
	for (Block *b = img->blocks, *next; b; b = next) {
		next = b->next;
		rt_tensor_free(b->tensor);
		free(b);
	}
	free(img);
}

TFG_API tfg_status
tfg_plan_read(TfgPlan **out, const void *buf, size_t n, TfgError *e)
{
	Image *img = calloc(1, sizeof *img);
	Rd r = {.p = buf, .end = (const unsigned char *)buf + n, .img = img,
		.e = e, .st = TFG_OK};

	*out = NULL;
	if (img == NULL)
		return tfg_error(e, TFG_ENOMEM, "out of memory reading the "
				 "plan's image");
	if (buf == NULL)
		r.end = r.p;
	get_plan(&r, &img->plan);
	if (r.st != TFG_OK) {
		tfg_plan_free(&img->plan);
		return r.st;
	}
	*out = &img->plan;
	return TFG_OK;
}
