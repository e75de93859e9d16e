/*
 * runtime/var.c: variables (spec §4.4 "Variables", spec/design.md
 * "Variables"): the storage of the variables that live on this task, and
 * tfg_rt_var's work, which generated parts call for their variable ops (roles
 * layer, runtime/role.h).
 *
 * A variable's value is not in any step's arena: it lives in the
 * RtServer, from its first assign until the process ends, and every
 * session and every `tfgc run --attach` of the program sees it.  Steps
 * of several clients run at once on their own threads, so each variable
 * has a lock, held while a read copies the value out or an update
 * changes it and copies the new value out: two workers adding 1 a
 * thousand times each end at exactly 2000.  Arithmetic is done here, in
 * plain loops the C compiler vectorises: integers wrap, as the graph's
 * do, and floats round as IEEE says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/role.h"

tfg_status
rt_vars_init(RtServer *s)
{
	const TfgPlan *plan = s->proc.plan;

	if (plan->nvar == 0)
		return TFG_OK;
	if ((s->vars = calloc((size_t)plan->nvar, sizeof *s->vars)) == NULL ||
	    (s->left = calloc((size_t)plan->ntask, sizeof *s->left)) == NULL)
		return TFG_ENOMEM;
	for (int i = 0; i < plan->nvar; i++) {
		pthread_mutex_init(&s->vars[i].mu, NULL);
		pthread_cond_init(&s->vars[i].cv, NULL);
		/* a random maker's count of draws starts at 0 */
		if (plan->vars[i].hidden && plan->vars[i].task ==
		    s->proc.task) {
			if ((s->vars[i].data = calloc(1, sizeof(int64_t))) ==
			    NULL)
				return TFG_ENOMEM;
			s->vars[i].init = 1;
		}
	}
	return TFG_OK;
}

tfg_status
rt_vars_restore(RtServer *s, const char *dir, TfgError *e)
{
	const TfgPlan *plan = s->proc.plan;
	RtTensor **val = calloc((size_t)plan->nvar + 1, sizeof *val);
	tfg_status st;
	char note[600];
	int n = 0;

	if (val == NULL)
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	/* the whole checkpoint is read and checked before anything here
	   changes: a damaged one leaves the task as it was */
	if ((st = rt_ckpt_load(plan, dir, val, note, sizeof note, e)) !=
	    TFG_OK) {
		free(val);
		return st;
	}
	/* tfgc run said it, once, for the tasks it starts */
	if (note[0] && !s->proc.opt.from_run)
		fprintf(stderr, "tfgc: note: %s\n", note);
	for (int i = 0; i < plan->nvar && st == TFG_OK; i++) {
		const RtVar *v = &plan->vars[i];
		RtVarSlot *slot = &s->vars[i];

		if (v->task != s->proc.task)
			continue;
		pthread_mutex_lock(&slot->mu);
		if (slot->data == NULL &&
		    (slot->data = (unsigned char *)rt_arena_alloc(v->nbytes))
		    == NULL) {
			st = tfg_error(e, TFG_ENOMEM, "out of memory for "
				       "variable '%s' (%zu bytes)", v->name,
				       v->nbytes);
		} else {
			if (v->nbytes)
				memcpy(slot->data, val[i]->data, v->nbytes);
			slot->init = 1;
			slot->lost = 0;
			n++;
		}
		pthread_mutex_unlock(&slot->mu);
	}
	for (int i = 0; i < plan->nvar; i++)
		rt_tensor_free(val[i]);
	free(val);
	if (st == TFG_OK && s->proc.opt.verbose)
		fprintf(stderr, "tfg: %s: restored %d variable%s from %s\n",
			s->proc.name, n, n == 1 ? "" : "s", dir);
	return st;
}

void
rt_vars_free(RtServer *s)
{
	for (int i = 0; s->vars && i < s->proc.plan->nvar; i++) {
		free(s->vars[i].data);
		free(s->vars[i].member);
		pthread_mutex_destroy(&s->vars[i].mu);
		pthread_cond_destroy(&s->vars[i].cv);
	}
	free(s->vars);
	s->vars = NULL;
	free((void *)s->left);
	s->left = NULL;
}

/* dst = dst op src over n elements of dtype t, where U is the type the
 * arithmetic is done in (unsigned for integers, so that they wrap); a
 * scalar src (one element) for each.  16 bytes at a time as GCC vectors,
 * since -O2 does not vectorise a loop of unknown count (bench/README.md:
 * a 784x100 f32 update as a plain loop), then one at a time. */
#define UPDATE(U)                                                        \
	do {                                                             \
		typedef U V __attribute__((vector_size(16)));            \
		enum { K = 16 / sizeof(U) };                             \
		unsigned char *d = dst;                                  \
		const unsigned char *x = src;                            \
		U s0, a1, b1;                                            \
		V a, b;                                                  \
		int64_t i = 0;                                           \
		memcpy(&s0, x, sizeof s0);                               \
		b = (V){0} + s0;                                         \
		for (; i + K <= n; i += K) {                             \
			memcpy(&a, d + i * sizeof(U), sizeof a);         \
			if (!scalar)                                     \
				memcpy(&b, x + i * sizeof(U), sizeof b); \
			a = sub ? a - b : a + b;                         \
			memcpy(d + i * sizeof(U), &a, sizeof a);         \
		}                                                        \
		for (b1 = s0; i < n; i++) {                              \
			memcpy(&a1, d + i * sizeof(U), sizeof a1);       \
			if (!scalar)                                     \
				memcpy(&b1, x + i * sizeof(U),           \
				       sizeof b1);                       \
			a1 = sub ? a1 - b1 : a1 + b1;                    \
			memcpy(d + i * sizeof(U), &a1, sizeof a1);       \
		}                                                        \
	} while (0)

static void
update(TfgDtype t, void *dst, const void *src, int64_t n, int sub,
       int scalar)
{
	switch (t) {
	case TFG_U8: UPDATE(uint8_t); break;
	case TFG_I32: UPDATE(uint32_t); break;
	case TFG_I64: UPDATE(uint64_t); break;
	case TFG_F32: UPDATE(float); break;
	case TFG_F64: UPDATE(double); break;
	default: break; /* bool: refused by the checker */
	}
}

static void
fill(void *dst, const void *src, size_t size, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		memcpy((unsigned char *)dst + (size_t)i * size, src, size);
}

/* A scatter's rows (RtRows at src) into variable v's data, or a
 * gather's out of it into dst, its lock held; TFG_OK, or an error
 * before anything changes. */
static int
scatter(RtCtx *c, const RtVar *v, RtVarSlot *slot, uint32_t op,
	const void *src, void *dst)
{
	const RtRows *r = src;
	int64_t nrow = v->shape.rank ? v->shape.dims[0] : 0;
	int64_t width = nrow ? tfg_shape_numel(&v->shape) / nrow : 0;
	int64_t lo = (op & TFG_VAR_DROP) ? -1 : 0;
	size_t rb = (size_t)width * tfg_dtype_size(v->dtype);
	const unsigned char *x = r->rows;
	RtServer *s = c->store;
	int local = c->step->client == s->proc.task;

	for (int64_t i = 0; i < r->n; i++)
		if (r->ids[i] < lo || r->ids[i] >= nrow)
			return tfg_error(c->err, TFG_EINVAL, "%s%s'%s' of "
					 "variable '%s': index %lld (element "
					 "%lld of the indices) is outside [0, "
					 "%lld)", local ? s->proc.name : "",
					 local ? ": " : "",
					 (op & 0xff) == TFG_VAR_SCATTER_ADD ?
					 "scatter_add" : (op & 0xff) ==
					 TFG_VAR_GATHER ? "gather" :
					 "scatter_update",
					 v->name, (long long)r->ids[i],
					 (long long)i, (long long)nrow);
	if ((op & 0xff) == TFG_VAR_GATHER) {
		for (int64_t i = 0; i < r->n; i++) {
			unsigned char *d = (unsigned char *)dst + (size_t)i * rb;

			if (r->ids[i] < 0)
				memset(d, 0, rb);
			else
				memcpy(d, slot->data + (size_t)r->ids[i] * rb,
				       rb);
		}
		return TFG_OK;
	}
	for (int64_t i = 0; i < r->n; i++, x += rb) {
		unsigned char *d = slot->data + (size_t)r->ids[i] * rb;

		if (r->ids[i] < 0)
			continue;
		if ((op & 0xff) == TFG_VAR_SCATTER_ADD)
			update(v->dtype, d, x, width, 0, 0);
		else
			memcpy(d, x, rb);
	}
	return TFG_OK;
}

/* TFG_VAR_PUT: the variable c holds let go, with the value at src after
 * a HOLD_WRITE. */
static int
put(RtCtx *c, uint32_t var, const void *src)
{
	RtServer *s = c->store;
	const RtVar *v = &s->proc.plan->vars[var];
	RtVarSlot *slot = &s->vars[var];

	if (c->held != (int)var + 1)
		return tfg_error(c->err, TFG_EINVAL, "%s: variable '%s' let go "
				 "without being held", s->proc.name, v->name);
	if (c->held_write) {
		if (src && src != slot->data && v->nbytes)
			memcpy(slot->data, src, v->nbytes);
		slot->init = 1;
		slot->lost = 0;
	}
	c->held = 0;
	pthread_mutex_unlock(&slot->mu);
	return TFG_OK;
}

void
rt_vars_drop(RtCtx *c)
{
	RtServer *s = c->store;
	RtVarSlot *slot;

	if (!c->held || s == NULL)
		return;
	slot = &s->vars[c->held - 1];
	if (c->held_write && slot->data) { /* written part-way, maybe */
		slot->init = 0;
		slot->lost = 1;
	}
	c->held = 0;
	pthread_mutex_unlock(&slot->mu);
}

static int
var_op(RtCtx *c, uint32_t var, uint32_t op, const void *src, void *dst)
{
	RtServer *s = c->store;
	const TfgPlan *plan = s->proc.plan;
	const RtVar *v;
	RtVarSlot *slot;
	uint32_t kind = op & ~(uint32_t)(TFG_VAR_SCALAR | TFG_VAR_DROP);
	int scalar = (op & TFG_VAR_SCALAR) != 0, rc = TFG_OK, write;
	int64_t n;
	size_t size;

	if (var >= (uint32_t)plan->nvar || plan->vars[var].task !=
	    s->proc.task || kind > TFG_VAR_PUT || s->vars == NULL ||
	    (kind == TFG_VAR_DRAW && !plan->vars[var].hidden))
		return tfg_error(c->err, TFG_EINVAL, "%s: no variable %u (op "
				 "%u) here", s->proc.name, var, op);
	if (c->held && kind != TFG_VAR_PUT) /* its lock is this thread's */
		return tfg_error(c->err, TFG_EINVAL, "%s: op %u of variable "
				 "'%s' while the part holds '%s'",
				 s->proc.name, op, plan->vars[var].name,
				 plan->vars[c->held - 1].name);
	if (kind == TFG_VAR_PUT)
		return put(c, var, src);
	write = kind == TFG_VAR_ASSIGN || kind == TFG_VAR_HOLD_WRITE;
	v = &plan->vars[var];
	slot = &s->vars[var];
	n = tfg_shape_numel(&v->shape);
	size = tfg_dtype_size(v->dtype);
	pthread_mutex_lock(&slot->mu);
	if (kind == TFG_VAR_INITED) {
		*(uint8_t *)dst = (uint8_t)slot->init;
	} else if (kind == TFG_VAR_DRAW) {
		memcpy(dst, slot->data, sizeof(int64_t));
		*(int64_t *)slot->data += 1;
	} else if (!write && !slot->init) {
		/* a task's errors reach the client behind its name */
		int local = c->step->client == s->proc.task;

		rc = tfg_error(c->err, TFG_EINVAL, "%s%svariable '%s' %s "
			       "(declared at %s): run initialize() %s",
			       local ? s->proc.name : "", local ? ": " : "",
			       v->name, slot->lost ? "lost its value when a "
			       "step that was writing it failed" : "is not "
			       "initialized", v->where, slot->lost ?
			       "or restore() again" : "first");
	} else if (write && slot->data == NULL &&
		   (slot->data = (unsigned char *)rt_arena_alloc(v->nbytes)) ==
		   NULL) {
		rc = tfg_error(c->err, TFG_ENOMEM, "%s: out of memory for "
			       "variable '%s' (%zu bytes)", s->proc.name,
			       v->name, v->nbytes);
	} else if (kind == TFG_VAR_HOLD_READ || kind == TFG_VAR_HOLD_WRITE) {
		memcpy(dst, &slot->data, sizeof slot->data);
		c->held = (int)var + 1;
		c->held_write = write;
		return TFG_OK; /* its lock held until TFG_VAR_PUT */
	} else if (kind == TFG_VAR_GATHER) {
		rc = scatter(c, v, slot, op, src, dst);
	} else if (kind >= TFG_VAR_SCATTER_ADD &&
		   (rc = scatter(c, v, slot, op, src, dst)) != TFG_OK) {
		; /* nothing changed */
	} else {
		if (kind == TFG_VAR_ASSIGN && scalar)
			fill(slot->data, src, size, n);
		else if (kind == TFG_VAR_ASSIGN && v->nbytes)
			memcpy(slot->data, src, v->nbytes);
		else if (kind == TFG_VAR_ADD || kind == TFG_VAR_SUB)
			update(v->dtype, slot->data, src, n,
			       kind == TFG_VAR_SUB, scalar);
		slot->init = 1;
		slot->lost = 0;
		if (v->nbytes && dst) /* NULL: a value nothing reads */
			memcpy(dst, slot->data, v->nbytes);
	}
	pthread_mutex_unlock(&slot->mu);
	return rc;
}

void
rt_vars_attach(RtServer *s, RtCtx *c)
{
	c->var = var_op;
	c->store = s;
	rt_optim_attach(c);
}
