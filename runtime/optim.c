/*
 * runtime/optim.c: the optimizers' updates of variables
 * (spec §6.26 "minimize and optimizers"), tfg_rt_apply's work: one
 * OP_apply of a part is one call, on the task where the variable and its
 * slots live.
 *
 * An update holds the locks of the variable and its slots (in index
 * order, the slots coming after their variable) from its first read to
 * its last write, so that the updates that asynchronous workers send at
 * once are applied one after the other, each whole, as TF's apply ops
 * do with use_locking.  The formulas are TF's (training_ops.cc), in the
 * variable's dtype with the hyperparameters rounded to it:
 *
 *   sgd       v -= lr g
 *   momentum  a = m a + g;  v -= lr a
 *   adam      t += 1;  lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t)
 *             m = m + (g - m)(1 - beta1);  s = s + (g^2 - s)(1 - beta2)
 *             v -= lr_t m / (sqrt(s) + epsilon)
 *
 * Adam counts its steps per variable (slot "v/Adam_t"), where TF keeps
 * beta1^t and beta2^t once per optimizer: with asynchronous workers TF's
 * powers are updated by whichever worker finishes last, here each
 * variable's bias correction is exact for the updates it has had.  This
 * file is compiled with -O3 -fno-math-errno (Makefile), so that the loops
 * vectorise, sqrt included.
 */
#include <math.h>
#include <string.h>

#include "runtime/role.h"

#define SGD(T)                                                          \
	static void sgd_##T(T *restrict v, const T *restrict g, int64_t n, \
			    const double *h)                            \
	{                                                               \
		T lr = (T)h[0];                                         \
		for (int64_t i = 0; i < n; i++)                         \
			v[i] -= lr * g[i];                              \
	}
#define MOMENTUM(T)                                                     \
	static void momentum_##T(T *restrict v, T *restrict a,          \
				 const T *restrict g, int64_t n,        \
				 const double *h)                       \
	{                                                               \
		T lr = (T)h[0], m = (T)h[1];                            \
		for (int64_t i = 0; i < n; i++) {                       \
			a[i] = a[i] * m + g[i];                         \
			v[i] -= lr * a[i];                              \
		}                                                       \
	}
#define ADAM(T)                                                         \
	static void adam_##T(T *restrict v, T *restrict m, T *restrict s, \
			     const T *restrict g, int64_t n, int64_t t,   \
			     const double *h)                           \
	{                                                               \
		double b1 = h[1], b2 = h[2];                            \
		T lr = (T)(h[0] * sqrt(1 - pow(b2, (double)t)) /        \
			   (1 - pow(b1, (double)t)));                   \
		T c1 = (T)(1 - b1), c2 = (T)(1 - b2), eps = (T)h[3];    \
		for (int64_t i = 0; i < n; i++) {                       \
			m[i] += (g[i] - m[i]) * c1;                     \
			s[i] += (g[i] * g[i] - s[i]) * c2;              \
			v[i] -= lr * m[i] / (sqrt(s[i]) + eps);         \
		}                                                       \
	}
SGD(float)
SGD(double)
MOMENTUM(float)
MOMENTUM(double)
ADAM(float)
ADAM(double)

static const int nslots[] = {
	[TFG_OPT_SGD] = 0, [TFG_OPT_MOMENTUM] = 1, [TFG_OPT_ADAM] = 3,
};

/* The update itself, every lock held and every slot initialized. */
static void
update(uint32_t kind, TfgDtype t, RtVarSlot **s, const void *g, int64_t n,
       const double *h)
{
	int f = t == TFG_F32;
	int64_t step;

	switch (kind) {
	case TFG_OPT_SGD:
		if (f)
			sgd_float((float *)s[0]->data, g, n, h);
		else
			sgd_double((double *)s[0]->data, g, n, h);
		break;
	case TFG_OPT_MOMENTUM:
		if (f)
			momentum_float((float *)s[0]->data, (float *)s[1]->data,
				       g, n, h);
		else
			momentum_double((double *)s[0]->data,
					(double *)s[1]->data, g, n, h);
		break;
	case TFG_OPT_ADAM:
		memcpy(&step, s[3]->data, sizeof step);
		step++;
		memcpy(s[3]->data, &step, sizeof step);
		if (f)
			adam_float((float *)s[0]->data, (float *)s[1]->data,
				   (float *)s[2]->data, g, n, step, h);
		else
			adam_double((double *)s[0]->data, (double *)s[1]->data,
				    (double *)s[2]->data, g, n, step, h);
		break;
	}
}

/* Whether slot k of an update of var (0: var itself) is what the kind
 * needs: of var's dtype and shape, Adam's count an i64 scalar. */
static int
slot_fits(const RtVar *v, const RtVar *s, uint32_t kind, int k)
{
	if (kind == TFG_OPT_ADAM && k == 3)
		return s->dtype == TFG_I64 && s->shape.rank == 0;
	return s->dtype == v->dtype && tfg_shape_eq(&s->shape, &v->shape);
}

static int
rt_apply(RtCtx *c, uint32_t var, uint32_t kind, uint32_t slot,
	 const void *grad, const double *hyper)
{
	RtServer *srv = c->store;
	const TfgPlan *plan = srv->proc.plan;
	RtVarSlot *s[4];
	const RtVar *v;
	int n, rc = TFG_OK, locked = 0;

	if (kind > TFG_OPT_ADAM || var >= (uint32_t)plan->nvar ||
	    srv->vars == NULL)
		goto bad;
	n = 1 + nslots[kind];
	v = &plan->vars[var];
	if (v->task != srv->proc.task || v->hidden ||
	    (v->dtype != TFG_F32 && v->dtype != TFG_F64) ||
	    (n > 1 && (slot <= var || slot > (uint32_t)plan->nvar - (n - 1))))
		goto bad;
	for (int k = 0; k < n; k++) {
		uint32_t i = k ? slot + (uint32_t)k - 1 : var;
		if (plan->vars[i].task != srv->proc.task ||
		    plan->vars[i].hidden || !slot_fits(v, &plan->vars[i], kind,
						       k))
			goto bad;
		s[k] = &srv->vars[i];
	}
	for (; locked < n; locked++)
		pthread_mutex_lock(&s[locked]->mu);
	for (int k = 0; k < n && rc == TFG_OK; k++) {
		const RtVar *x = &plan->vars[k ? slot + (uint32_t)k - 1 : var];
		int local = c->client == srv->proc.task;

		if (!s[k]->init)
			rc = tfg_error(&c->err, TFG_EINVAL, "%s%svariable '%s' "
				       "is not initialized (declared at %s): "
				       "run initialize() first", local ?
				       srv->proc.name : "", local ? ": " : "",
				       x->name, x->where);
	}
	if (rc == TFG_OK)
		update(kind, v->dtype, s, grad, tfg_shape_numel(&v->shape),
		       hyper);
	while (locked > 0)
		pthread_mutex_unlock(&s[--locked]->mu);
	return rc;
bad:
	return tfg_error(&c->err, TFG_EINVAL, "%s: no update %u of variable "
			 "%u with slots from %u here", srv->proc.name, kind,
			 var, slot);
}

void
rt_optim_attach(RtCtx *c)
{
	c->apply = rt_apply;
}
