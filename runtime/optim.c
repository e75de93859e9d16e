/*
 * runtime/optim.c: the optimizers' updates of variables, tfg_rt_apply's
 * work (spec §6.26 "minimize and optimizers"): one OP_apply of a part is
 * one call, on the task where the variable and its slots live.
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
 *   adagrad   s += g^2;  v -= lr g / sqrt(s)
 *   ftrl      (FTRL-Proximal, learning rate power -1/2)
 *             s' = s + g^2;  z += g - (sqrt(s') - sqrt(s)) / lr v;
 *             v = |z| > l1 ? (sign(z) l1 - z) / (sqrt(s') / lr + 2 l2)
 *                          : 0;  s = s'
 *
 * A gradient with a NaN or an infinity is not applied: the step fails
 * instead, naming the variable (spec §6.26 "minimize and optimizers"),
 * so that a diverging run stops where it diverged rather than training
 * on garbage.  The check is one more vectorised pass over the gradient,
 * before the locks are taken.
 *
 * Adam counts its steps per variable (slot "v/Adam_t"), where TF keeps
 * beta1^t and beta2^t once per optimizer: with asynchronous workers TF's
 * powers are updated by whichever worker finishes last, here each
 * variable's bias correction is exact for the updates it has had.  This
 * file is compiled with -O3 -fno-math-errno (Makefile), so that the loops
 * vectorise, sqrt included.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/role.h"

/* Each loop is compiled for AVX-512, AVX2 and the baseline, and the
 * loader picks the best the CPU has (GCC's target_clones): the runtime
 * is built for any x86-64, and a sgd update (its finiteness check
 * included) takes nearly twice as long in SSE2 as with AVX-512
 * (bench/README.md). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

#define SGD(T)                                                          \
	CLONES                                                          \
	static void sgd_##T(T *restrict v, const T *restrict g, int64_t n, \
			    const double *h)                            \
	{                                                               \
		T lr = (T)h[0];                                         \
		for (int64_t i = 0; i < n; i++)                         \
			v[i] -= lr * g[i];                              \
	}
#define MOMENTUM(T)                                                     \
	CLONES                                                          \
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
	CLONES                                                          \
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
/* The index of the first element of g[0..n) that is NaN or infinite,
 * or -1; the loop only ORs (x - x != 0, true for both) so that it
 * vectorises, and the rare bad gradient is searched again. */
#define FINITE(T)                                                       \
	CLONES                                                          \
	static int64_t nonfinite_##T(const T *restrict g, int64_t n)    \
	{                                                               \
		int bad = 0;                                            \
		for (int64_t i = 0; i < n; i++)                         \
			bad |= !(g[i] - g[i] == 0);                     \
		for (int64_t i = 0; bad && i < n; i++)                  \
			if (!(g[i] - g[i] == 0))                        \
				return i;                               \
		return -1;                                              \
	}
#define ADAGRAD(T)                                                      \
	CLONES                                                          \
	static void adagrad_##T(T *restrict v, T *restrict s,           \
				const T *restrict g, int64_t n,         \
				const double *h)                        \
	{                                                               \
		T lr = (T)h[0];                                         \
		for (int64_t i = 0; i < n; i++) {                       \
			s[i] += g[i] * g[i];                            \
			v[i] -= g[i] * lr * ((T)1 / (T)sqrt(s[i]));     \
		}                                                       \
	}
#define FTRL(T)                                                         \
	CLONES                                                          \
	static void ftrl_##T(T *restrict v, T *restrict s, T *restrict z, \
			     const T *restrict g, int64_t n,            \
			     const double *h)                           \
	{                                                               \
		T lr = (T)h[0], l1 = (T)h[1], l2 = (T)h[2];             \
		for (int64_t i = 0; i < n; i++) {                       \
			T s1 = s[i] + g[i] * g[i], r = (T)sqrt(s1);     \
			T q = r / lr + 2 * l2, r0 = (T)sqrt(s[i]);      \
			z[i] += g[i] - (r - r0) / lr * v[i];            \
			v[i] = z[i] > l1 ? (l1 - z[i]) / q              \
			     : z[i] < -l1 ? (-l1 - z[i]) / q : 0;       \
			s[i] = s1;                                      \
		}                                                       \
	}
FINITE(float)
FINITE(double)
SGD(float)
SGD(double)
MOMENTUM(float)
MOMENTUM(double)
ADAM(float)
ADAM(double)
ADAGRAD(float)
ADAGRAD(double)
FTRL(float)
FTRL(double)

static const int nslots[] = {
	[TFG_OPT_SGD] = 0, [TFG_OPT_MOMENTUM] = 1, [TFG_OPT_ADAM] = 3,
	[TFG_OPT_ADAGRAD] = 1, [TFG_OPT_FTRL] = 2,
};

/* The hyperparameters of a kind (a sync update's follow them). */
static int
ir_nhyper(uint32_t kind)
{
	static const int n[] = {
		[TFG_OPT_SGD] = 1, [TFG_OPT_MOMENTUM] = 2, [TFG_OPT_ADAM] = 4,
		[TFG_OPT_ADAGRAD] = 2, [TFG_OPT_FTRL] = 4,
	};
	return n[kind & 0xff];
}

/* Elements of an update, or of a gradient's check, per block of the
 * kernel pool (runtime/pool.c): every element's update is its own, so
 * the blocks change nothing but the time.  One thread streams an Adam
 * update of Deep MNIST's 3136 x 1024 weights (7 passes of 12.8 MB) in
 * 4.1-4.6 ms on Zen 3, short of the memory's bandwidth. */
#define UPD_BLOCK 32768

/* An update (or a check: kind -1) of elements [i0, i1). */
typedef struct Upd {
	int kind;
	TfgDtype t;
	unsigned char *d[4]; /* the variable's data, then its slots' */
	const char *g;
	int64_t n, step;
	const double *h;
	_Atomic int bad; /* the check found a NaN or an infinity */
} Upd;

static void
update_range(Upd *u, int64_t i0, int64_t i1)
{
	int f = u->t == TFG_F32;
	size_t z = f ? 4 : 8, o = (size_t)i0 * z;
	int64_t n = i1 - i0;
	const void *g = u->g + o;
	unsigned char *v;

	if (u->kind < 0) {
		if ((f ? nonfinite_float(g, n) : nonfinite_double(g, n)) >= 0)
			u->bad = 1;
		return;
	}
	v = u->d[0] + o;
	switch (u->kind) {
	case TFG_OPT_SGD:
		if (f)
			sgd_float((float *)v, g, n, u->h);
		else
			sgd_double((double *)v, g, n, u->h);
		break;
	case TFG_OPT_MOMENTUM:
		if (f)
			momentum_float((float *)v, (float *)(u->d[1] + o),
				       g, n, u->h);
		else
			momentum_double((double *)v,
					(double *)(u->d[1] + o), g, n,
					u->h);
		break;
	case TFG_OPT_ADAM:
		if (f)
			adam_float((float *)v, (float *)(u->d[1] + o),
				   (float *)(u->d[2] + o), g, n, u->step,
				   u->h);
		else
			adam_double((double *)v, (double *)(u->d[1] + o),
				    (double *)(u->d[2] + o), g, n,
				    u->step, u->h);
		break;
	case TFG_OPT_ADAGRAD:
		if (f)
			adagrad_float((float *)v, (float *)(u->d[1] + o),
				      g, n, u->h);
		else
			adagrad_double((double *)v,
				       (double *)(u->d[1] + o), g, n,
				       u->h);
		break;
	case TFG_OPT_FTRL:
		if (f)
			ftrl_float((float *)v, (float *)(u->d[1] + o),
				   (float *)(u->d[2] + o), g, n, u->h);
		else
			ftrl_double((double *)v, (double *)(u->d[1] + o),
				    (double *)(u->d[2] + o), g, n, u->h);
		break;
	}
}

static void
update_blocks(void *const *bases, int64_t b, int64_t e)
{
	Upd *u = bases[0];

	update_range(u, b * UPD_BLOCK,
		     e * UPD_BLOCK < u->n ? e * UPD_BLOCK : u->n);
}

static void
update_all(Upd *u)
{
	void *base = u;

	tfg_rt_parallel(update_blocks, &base,
			(u->n + UPD_BLOCK - 1) / UPD_BLOCK);
}

/* The update itself, every lock held and every slot initialized. */
static void
update(uint32_t kind, TfgDtype t, RtVarSlot **s, const void *g, int64_t n,
       const double *h)
{
	Upd u = {(int)kind, t, {NULL}, g, n, 0, h, 0};

	for (int k = 0; k < 4 && k <= nslots[kind]; k++)
		u.d[k] = s[k]->data;

	if (kind == TFG_OPT_ADAM) {
		memcpy(&u.step, s[3]->data, sizeof u.step);
		u.step++;
		memcpy(s[3]->data, &u.step, sizeof u.step);
	}
	update_all(&u);
}

/* The index of the first NaN or infinity of the gradient g, or -1; the
 * blocks only say whether there is one. */
static int64_t
nonfinite(TfgDtype t, const void *g, int64_t n)
{
	Upd u = {-1, t, {NULL}, g, n, 0, NULL, 0};

	update_all(&u);
	if (!u.bad)
		return -1;
	return t == TFG_F32 ? nonfinite_float(g, n) : nonfinite_double(g, n);
}

/* Whether slot k of an update of var (0: var itself) is what the kind
 * needs: of var's dtype and shape, Adam's count an i64 scalar; with
 * sync (ninner: the kind's slots), the sum as var, its count and the
 * round i64 scalars. */
static int
slot_fits(const RtVar *v, const RtVar *s, uint32_t kind, int ninner, int k)
{
	int scalar = ((kind & 0xff) == TFG_OPT_ADAM && k == 3) ||
		     ((kind & TFG_OPT_SYNC) && k >= ninner + 2);

	if (scalar)
		return s->dtype == TFG_I64 && s->shape.rank == 0;
	return s->dtype == v->dtype && tfg_shape_eq(&s->shape, &v->shape);
}

/* sum += g, and sum *= k (the mean of the sum), of dtype t. */
#define SUM(T)                                                          \
	static void add_##T(T *restrict d, const T *restrict g, int64_t n) \
	{                                                               \
		for (int64_t i = 0; i < n; i++)                         \
			d[i] += g[i];                                   \
	}                                                               \
	static void scale_##T(T *restrict d, int64_t n, T k)            \
	{                                                               \
		for (int64_t i = 0; i < n; i++)                         \
			d[i] *= k;                                      \
	}
SUM(float)
SUM(double)

static int64_t
i64_at(const RtVarSlot *s)
{
	int64_t v;

	memcpy(&v, s->data, sizeof v);
	return v;
}

static void
i64_set(RtVarSlot *s, int64_t v)
{
	memcpy(s->data, &v, sizeof v);
}

/* How many gradients make the round of a sync variable (s0, its
 * group in s0->member) now: sync's aggregate= (M), or fewer when fewer
 * replicas are left.  The group expects replicas= (N) members, or the
 * client tasks whose gradients it took if more; a member whose session
 * ended (RtServer.left) or whose link is gone leaves it, until its next
 * gradient (spec/design.md "Synchronous replicas"). */
static double
sync_need(RtCtx *c, RtVarSlot *s0, double replicas, double aggregate)
{
	RtServer *srv = c->store;
	int nt = srv->proc.plan->ntask, known = 0, out = 0;
	double live;

	for (int t = 0; t < nt && s0->member; t++) {
		if (!s0->member[t])
			continue;
		known++;
		out += srv->left[t] || rt_peer_gone(&srv->proc, t);
	}
	live = (known > replicas ? known : replicas) - out;
	return live < 1 ? 1 : live < aggregate ? live : aggregate;
}

/* The round's update, with the mean of its cnt gradients: s[0..n)
 * locked.  The sum is cleared and the round advanced. */
static void
sync_apply(const RtVar *v, uint32_t kind, RtVarSlot **s, int ninner,
	   const double *hyper)
{
	RtVarSlot *sum = s[ninner + 1], *cnt = s[ninner + 2];
	RtVarSlot *round = s[ninner + 3];
	int64_t numel = tfg_shape_numel(&v->shape);
	double k = (double)i64_at(cnt);

	if (v->dtype == TFG_F32)
		scale_float((float *)sum->data, numel, (float)(1 / k));
	else
		scale_double((double *)sum->data, numel, 1 / k);
	update(kind & 0xff, v->dtype, s, sum->data, numel, hyper);
	memset(sum->data, 0, (size_t)numel * tfg_dtype_size(v->dtype));
	i64_set(cnt, 0);
	i64_set(round, i64_at(round) + 1);
	pthread_cond_broadcast(&s[0]->cv);
}

/* sync: s[0..n) locked and initialized (the variable, the kind's ninner
 * slots, then the sum, the count and the round); adds g to the round's
 * sum if the step read this round, and makes the update with the mean
 * when the round has as many as it needs (sync_need); else waits,
 * holding only the variable's lock, until another makes it, or until
 * the group shrank to what the round has, and makes it itself.  *done:
 * whether this call made it.  Unlocks everything. */
static int
sync_update(RtCtx *c, const RtVar *v, uint32_t kind, RtVarSlot **s, int n,
	    int ninner, const void *g, const double *hyper, int *done)
{
	RtServer *srv = c->store;
	RtVarSlot *sum = s[ninner + 1], *cnt = s[ninner + 2];
	RtVarSlot *round = s[ninner + 3];
	int64_t numel = tfg_shape_numel(&v->shape), tag, want;
	int rc = TFG_OK, held = n, client = c->step->client;
	const double *sh = hyper + ir_nhyper(kind);
	double t0, replicas = sh[0], aggregate = sh[1];
	double wait = sh[3]; /* sync's timeout= */

	tag = (int64_t)sh[2];
	*done = 0;
	if (s[0]->member == NULL &&
	    (s[0]->member = calloc((size_t)srv->proc.plan->ntask, 1)) == NULL) {
		rc = tfg_error(c->err, TFG_ENOMEM, "out of memory");
		goto unlock;
	}
	if (client >= 0 && client < srv->proc.plan->ntask) {
		s[0]->member[client] = 1; /* it trains: in the group */
		srv->left[client] = 0;
	}
	if (tag < i64_at(round)) /* computed from an older round: dropped */
		goto unlock;
	if (v->dtype == TFG_F32)
		add_float((float *)sum->data, g, numel);
	else
		add_double((double *)sum->data, g, numel);
	i64_set(cnt, i64_at(cnt) + 1);
	if ((double)i64_at(cnt) >= sync_need(c, s[0], replicas, aggregate)) {
		sync_apply(v, kind, s, ninner, hyper);
		*done = 1;
		goto unlock;
	}
	/* wait for the round's last gradient: with only the variable's
	   lock held, which every update of it takes */
	while (held > 1)
		pthread_mutex_unlock(&s[--held]->mu);
	want = tag + 1;
	t0 = rt_now();
	while (i64_at(round) < want && !c->step->aborted) {
		struct timespec ts;
		double now = rt_now();

		/* a member gone or left meanwhile: the round may be whole
		   without it, and this step makes the update (the slots
		   come after the variable: locked in index order) */
		if ((double)i64_at(cnt) >= sync_need(c, s[0], replicas,
						     aggregate)) {
			while (held < n)
				pthread_mutex_lock(&s[held++]->mu);
			sync_apply(v, kind, s, ninner, hyper);
			*done = 1;
			break;
		}
		if (now - t0 > wait) {
			rc = tfg_error(c->err, TFG_ETIMEDOUT, "sync: waited "
				       "%g s for the other replicas' "
				       "gradients of variable '%s' (%g "
				       "needed a round, %lld came): is a "
				       "replica stopped? (sync(..., "
				       "timeout=S) waits longer)", wait,
				       v->name, sync_need(c, s[0], replicas,
							  aggregate),
				       (long long)i64_at(cnt));
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s[0]->cv, &s[0]->mu, &ts);
	}
unlock:
	while (held > 0)
		pthread_mutex_unlock(&s[--held]->mu);
	return rc;
}

/* ------------------------------------------------------- row updates */

/* An update of some rows of a variable (tfg_rt_apply_rows): the ids
 * sorted, each distinct row's gradient (its duplicates' sum, in their
 * order, or the row as it came), so that the update touches each row
 * once and the result does not depend on the ids' order. */
typedef struct Rows {
	int kind;
	TfgDtype t;
	RtVarSlot **s;
	int64_t width;       /* elements per row */
	int64_t n;           /* distinct rows */
	int64_t *id;         /* [n] ascending */
	const char **g;      /* [n] their gradients */
	char *sum;           /* duplicates' sums */
	const double *h;
} Rows;

/* Rows per block of the kernel pool, and how far ahead a block fetches
 * the rows it will update. */
#define ROW_BLOCK 256
#define ROW_AHEAD 8

uint64_t *
rt_sort_keys(const int64_t *ids, int64_t n, int ib, int pb, uint64_t *key,
	  uint64_t *tmp, int64_t *nkey)
{
	int64_t m = 0;

	for (int64_t i = 0; i < n; i++)
		if (ids[i] >= 0)
			key[m++] = (uint64_t)ids[i] << pb | (uint64_t)i;
	if (m < 64) { /* insertion */
		for (int64_t i = 1; i < m; i++) {
			uint64_t k = key[i];
			int64_t j = i;
			for (; j > 0 && key[j - 1] > k; j--)
				key[j] = key[j - 1];
			key[j] = k;
		}
		*nkey = m;
		return key;
	}
	for (int sh = 0; sh < ib + pb; sh += 11) {
		int64_t cnt[2048 + 1] = {0};
		uint64_t *t;

		for (int64_t i = 0; i < m; i++)
			cnt[((key[i] >> sh) & 2047) + 1]++;
		for (int d = 0; d < 2048; d++)
			cnt[d + 1] += cnt[d];
		for (int64_t i = 0; i < m; i++)
			tmp[cnt[(key[i] >> sh) & 2047]++] = key[i];
		t = key, key = tmp, tmp = t;
	}
	*nkey = m;
	return key;
}

static int
bits(uint64_t x)
{
	int b = 0;

	while (b < 64 && (x >> b) != 0)
		b++;
	return b;
}

/* The distinct rows of the update of v by rows g[0..nids) at ids, into
 * *r; TFG_OK, or an error (an id past the table, no memory). */
static int
rows_prepare(RtCtx *c, const RtVar *v, const int64_t *ids, int64_t nids,
	     const char *g, Rows *r)
{
	RtServer *srv = c->store;
	int64_t nrow = v->shape.dims[0], bad = -1, m = 0, ndup = 0, at = 0;
	size_t z = tfg_dtype_size(v->dtype), rb;
	int ib = bits((uint64_t)nrow), pb = bits((uint64_t)nids);
	int local = c->step->client == srv->proc.task;
	uint64_t *key, *tmp, *k;

	r->width = nrow ? tfg_shape_numel(&v->shape) / nrow : 0;
	rb = (size_t)r->width * z;
	for (int64_t i = 0; i < nids && bad < 0; i++)
		if (ids[i] >= nrow)
			bad = i;
	if (bad >= 0)
		return tfg_error(c->err, TFG_EINVAL, "%s%sthe update of "
				 "variable '%s': row id %lld (element %lld of "
				 "its ids) is outside its %lld rows",
				 local ? srv->proc.name : "", local ? ": " :
				 "", v->name, (long long)ids[bad],
				 (long long)bad, (long long)nrow);
	if (ib + pb > 64)
		return tfg_error(c->err, TFG_EINVAL, "the update of variable "
				 "'%s': %lld ids of %lld rows are too many to "
				 "sort", v->name, (long long)nids,
				 (long long)nrow);
	key = malloc(2 * (size_t)(nids ? nids : 1) * sizeof *key);
	r->id = malloc((size_t)(nids ? nids : 1) * sizeof *r->id);
	r->g = malloc((size_t)(nids ? nids : 1) * sizeof *r->g);
	if (!key || !r->id || !r->g) {
		free(key);
		return tfg_error(c->err, TFG_ENOMEM, "the update of variable "
				 "'%s': no memory to sort %lld ids", v->name,
				 (long long)nids);
	}
	tmp = key + nids;
	k = rt_sort_keys(ids, nids, ib, pb, key, tmp, &m);
	for (int64_t i = 1; i < m; i++)
		ndup += (k[i] >> pb) == (k[i - 1] >> pb) &&
			(i < 2 || (k[i - 1] >> pb) != (k[i - 2] >> pb));
	if (ndup && !(r->sum = malloc((size_t)ndup * rb))) {
		free(key);
		return tfg_error(c->err, TFG_ENOMEM, "the update of variable "
				 "'%s': no memory to sum %lld rows", v->name,
				 (long long)ndup);
	}
	r->n = 0;
	for (int64_t i = 0; i < m; i++) {
		uint64_t id = k[i] >> pb, pos = k[i] & ((1ull << pb) - 1);
		const char *row = g + pos * rb;
		int64_t j = i + 1;

		while (j < m && (k[j] >> pb) == id)
			j++;
		r->id[r->n] = (int64_t)id;
		if (j == i + 1) {
			r->g[r->n++] = row;
			continue;
		}
		{
			char *d = r->sum + (size_t)at++ * rb;
			memcpy(d, row, rb);
			for (int64_t q = i + 1; q < j; q++) {
				const char *x = g + (k[q] & ((1ull << pb) - 1))
						* rb;
				if (v->dtype == TFG_F32)
					add_float((float *)d, (const float *)x,
						  r->width);
				else
					add_double((double *)d,
						   (const double *)x,
						   r->width);
			}
			r->g[r->n++] = d;
		}
		i = j - 1;
	}
	free(key);
	return TFG_OK;
}

static void
rows_blocks(void *const *bases, int64_t b, int64_t e)
{
	const Rows *r = bases[0];
	size_t rb = (size_t)r->width * tfg_dtype_size(r->t);
	int64_t end = e * ROW_BLOCK < r->n ? e * ROW_BLOCK : r->n;

	for (int64_t i = b * ROW_BLOCK; i < end; i++) {
		size_t o = (size_t)r->id[i] * rb;

		/* the rows a few ahead, from memory while this one is
		   computed: a big table's rows are misses, and the update
		   of one is too long for the core to reach the next */
		if (i + ROW_AHEAD < end) {
			size_t a = (size_t)r->id[i + ROW_AHEAD] * rb;
			for (int k = 0; k <= nslots[r->kind]; k++)
				for (size_t l = 0; l < rb; l += 64)
					__builtin_prefetch(r->s[k]->data + a + l,
							   1);
		}
		Upd u = {r->kind, r->t, {NULL}, r->g[i], r->width, 0, r->h, 0};

		/* the row of the variable and of its slots */
		for (int k = 0; k < 4 && k <= nslots[r->kind]; k++)
			u.d[k] = r->s[k]->data + o;
		update_range(&u, 0, r->width);
	}
}

/* An update of variable var (ids NULL) or of rows ids[0..nids) of it,
 * by the optimizer kind with slots from slot on: c->apply. */
static int
rt_apply(RtCtx *c, uint32_t var, uint32_t kind, uint32_t slot,
	 const int64_t *ids, int64_t nids, const void *grad,
	 const double *hyper, void *dst)
{
	RtServer *srv = c->store;
	const TfgPlan *plan = srv->proc.plan;
	RtVarSlot *s[8];
	const RtVar *v;
	uint32_t inner = kind & 0xff;
	int n, ninner, rc = TFG_OK, locked = 0, done = 1;
	Rows r = {0};

	if (inner > TFG_OPT_FTRL || (kind & ~0x1ffu) ||
	    var >= (uint32_t)plan->nvar || srv->vars == NULL)
		goto bad;
	ninner = nslots[inner];
	n = 1 + ninner + ((kind & TFG_OPT_SYNC) ? 3 : 0);
	v = &plan->vars[var];
	if (v->task != srv->proc.task || v->hidden ||
	    (v->dtype != TFG_F32 && v->dtype != TFG_F64) ||
	    (n > 1 && (slot <= var || slot > (uint32_t)plan->nvar - (n - 1))) ||
	    (ids && (inner == TFG_OPT_ADAM || (kind & TFG_OPT_SYNC) ||
		     v->shape.rank < 1 || nids < 0)))
		goto bad;
	for (int k = 0; k < n; k++) {
		uint32_t i = k ? slot + (uint32_t)k - 1 : var;
		if (plan->vars[i].task != srv->proc.task ||
		    plan->vars[i].hidden ||
		    !slot_fits(v, &plan->vars[i], kind, ninner, k))
			goto bad;
		s[k] = &srv->vars[i];
	}
	{
		int64_t numel = tfg_shape_numel(&v->shape), at;

		if (ids) /* rows of the variable's */
			numel = v->shape.dims[0] ? nids * (numel /
							   v->shape.dims[0])
						 : 0;
		double x, loss = hyper[ir_nhyper(kind) +
				       ((kind & TFG_OPT_SYNC) ?
					TFG_SYNC_HYPER : 0)];

		at = nonfinite(v->dtype, grad, numel);
		if (v->dtype == TFG_F32)
			x = at >= 0 ? ((const float *)grad)[at] : 0;
		else
			x = at >= 0 ? ((const double *)grad)[at] : 0;
		/* a task's errors reach the client behind its name */
		int local = c->step->client == srv->proc.task;

		if (!isfinite(loss))
			return tfg_error(c->err, TFG_EINVAL, "%s%sthe loss is "
					 "non-finite (%s): the update of "
					 "variable '%s' was not applied; run "
					 "with --check-numerics to find the "
					 "operation that produced it first",
					 local ? srv->proc.name : "",
					 local ? ": " : "", isnan(loss) ? "NaN"
					 : loss > 0 ? "inf" : "-inf", v->name);
		if (at >= 0)
			return tfg_error(c->err, TFG_EINVAL, "%s%sthe gradient "
					 "of variable '%s' is non-finite (%s at "
					 "element %lld): the update was not "
					 "applied; run with --check-numerics to "
					 "find the operation that produced it "
					 "first", local ? srv->proc.name : "",
					 local ? ": " : "", v->name,
					 isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf",
					 (long long)at);
	}
	if (ids && (rc = rows_prepare(c, v, ids, nids, grad, &r)) != TFG_OK)
		goto out;
	for (; locked < n; locked++)
		pthread_mutex_lock(&s[locked]->mu);
	for (int k = 0; k < n && rc == TFG_OK; k++) {
		const RtVar *x = &plan->vars[k ? slot + (uint32_t)k - 1 : var];
		int local = c->step->client == srv->proc.task;

		if (!s[k]->init)
			rc = tfg_error(c->err, TFG_EINVAL, "%s%svariable '%s' "
				       "is not initialized (declared at %s): "
				       "run initialize() first", local ?
				       srv->proc.name : "", local ? ": " : "",
				       x->name, x->where);
	}
	if (rc == TFG_OK && (kind & TFG_OPT_SYNC)) {
		rc = sync_update(c, v, kind, s, n, ninner, grad, hyper, &done);
		locked = 0; /* it unlocked them */
	} else if (rc == TFG_OK && ids) {
		void *base = &r;

		r.kind = (int)inner;
		r.t = v->dtype;
		r.s = s;
		r.h = hyper;
		tfg_rt_parallel(rows_blocks, &base,
				(r.n + ROW_BLOCK - 1) / ROW_BLOCK);
	} else if (rc == TFG_OK) {
		update(inner, v->dtype, s, grad, tfg_shape_numel(&v->shape),
		       hyper);
	}
	while (locked > 0)
		pthread_mutex_unlock(&s[--locked]->mu);
out:
	free(r.id);
	free(r.g);
	free(r.sum);
	*(unsigned char *)dst = rc == TFG_OK && done;
	return rc;
bad:
	return tfg_error(c->err, TFG_EINVAL, "%s: no update %u of variable "
			 "%u with slots from %u here", srv->proc.name, kind,
			 var, slot);
}

void
rt_optim_attach(RtCtx *c)
{
	c->apply = rt_apply;
}
