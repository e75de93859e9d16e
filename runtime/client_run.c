/*
 * runtime/client_run.c: run(...) in a session program, one step of a
 * signature with the session's task as its client.
 *
 * A run is one step: START to every other task with a part, the feeds
 * (checked against the signature, and converted to its dtypes, before
 * anything is sent), the own part in-process, then the fetches and
 * DONEs.  A step that fails once STARTs went out is cancelled on the
 * tasks that got them (ABORT), which would otherwise wait for it until
 * their deadline.  It is apart from the interpreter (client.c,
 * client_eval.c) since it is the part of a session that talks to other
 * tasks, through the protocol (runtime/proto.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/client_int.h"
#include "runtime/trace.h"

#define ABORT_SECS 0.2 /* for all the ABORTs of a failed step */

/* Element i of t, as NumPy prints it: a float in the fewest digits that
 * read back as the same value. */
static const char *
elem_str(char *buf, size_t n, const RtTensor *t, int64_t i)
{
	const unsigned char *p = t->data;
	double d;

	switch (t->dtype) {
	case TFG_BOOL: return p[i] ? "true" : "false";
	case TFG_U8: snprintf(buf, n, "%u", p[i]); return buf;
	case TFG_I32:
		snprintf(buf, n, "%d", ((const int32_t *)t->data)[i]);
		return buf;
	case TFG_I64:
		snprintf(buf, n, "%lld",
			 (long long)((const int64_t *)t->data)[i]);
		return buf;
	case TFG_F32: d = ((const float *)t->data)[i]; break;
	default: d = ((const double *)t->data)[i]; break;
	}
	if (isnan(d))
		return "nan";
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, d);
		if (t->dtype == TFG_F32 ? (float)strtod(buf, NULL) == (float)d
					: strtod(buf, NULL) == d)
			break;
	}
	return buf;
}

/* The C-order index i in a tensor of shape s, as "[1, 2]". */
static const char *
index_str(char *buf, size_t n, const TfgShape *s, int64_t i)
{
	int64_t idx[TFG_MAX_RANK];
	size_t k = 0;

	for (int d = s->rank - 1; d >= 0; d--) {
		idx[d] = s->dims[d] ? i % s->dims[d] : 0;
		i = s->dims[d] ? i / s->dims[d] : 0;
	}
	k += (size_t)snprintf(buf, n, "[");
	for (int d = 0; d < s->rank && k < n; d++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "",
				      (long long)idx[d]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* A fed value of another dtype than its input's, converted as TF1's
 * feed_dict converts a NumPy array, but strictly: an element that does
 * not fit is an error (spec §8.3 "run: fetches, feeds and steps").  xa
 * is the feed's expression: the conversion of a let's value is kept in
 * its slot, so that a let fed at every step is converted once. */
static tfg_status
convert_feed(Sess *ss, const RtExpr *xa, const char *where, const RtFeed *f,
	     CVal *v)
{
	CVal *slot = NULL;
	RtTensor *t;
	int64_t bad;
	tfg_status st;
	char want[160], got[160], buf[64], at[160], why[96];
	const char *val;

	if (xa && xa->kind == RT_E_VAR && xa->slot >= 0 &&
	    xa->slot < ss->s->nslot && ss->vals[xa->slot].let &&
	    ss->vals[xa->slot].t == v->t)
		slot = &ss->vals[xa->slot];
	if (slot && slot->conv && slot->conv->dtype == f->dtype) {
		v->t = slot->conv; /* v borrows the slot's */
		return TFG_OK;
	}
	st = rt_tensor_convert(&t, v->t, f->dtype, &bad);
	if (st == TFG_ENOMEM)
		return rt_sess_fail(ss, where, st, "out of memory");
	rt_sess_type_str(want, sizeof want, f->dtype, &f->shape);
	rt_sess_type_str(got, sizeof got, v->t->dtype, &v->t->shape);
	if (st == TFG_EDTYPE)
		return rt_sess_fail(ss, where, st,
				    "feed '%s' expects %s, got %s",
				    f->name, want, got);
	if (st == TFG_ETOOBIG)
		return rt_sess_fail(ss, where, st,
				    "feed '%s' expects %s, got %s: its shape "
				    "is too large for %s (a tensor has at "
				    "most 2^40 bytes, each 0 dimension "
				    "counted as 1)", f->name, want, got,
				    tfg_dtype_name(f->dtype));
	if (st != TFG_OK) {
		val = elem_str(buf, sizeof buf, v->t, bad);
		if (f->dtype == TFG_BOOL)
			snprintf(why, sizeof why, "but bool takes only 0 and "
				 "1");
		else if (f->dtype == TFG_F32)
			snprintf(why, sizeof why, "too large for f32 (at "
				 "most 3.4028235e+38)");
		else if (strcmp(val, "nan") == 0)
			snprintf(why, sizeof why, "which converts to no "
				 "integer");
		else
			snprintf(why, sizeof why, "out of %s's range (%s)",
				 tfg_dtype_name(f->dtype),
				 f->dtype == TFG_U8 ? "0 to 255" :
				 f->dtype == TFG_I32 ? "-2147483648 to "
						       "2147483647"
				 : "-9223372036854775808 to "
				   "9223372036854775807");
		if (v->t->shape.rank == 0)
			return rt_sess_fail(ss, where, TFG_EDTYPE,
					    "feed '%s' expects %s: the %s fed "
					    "is %s, %s", f->name, want, got,
					    val, why);
		return rt_sess_fail(ss, where, TFG_EDTYPE,
				    "feed '%s' expects %s: the %s fed has %s "
				    "at %s, %s", f->name, want, got, val,
				    index_str(at, sizeof at, &v->t->shape,
					      bad),
				    why);
	}
	if (slot) {
		rt_tensor_free(slot->conv);
		slot->conv = v->t = t;
		return TFG_OK;
	}
	rt_cval_free(v);
	v->kind = CV_TENSOR, v->t = t, v->own = 1;
	return TFG_OK;
}

/* A fed shape against an input's: the same rank and dims, where an
 * unknown dim (-1, a generic plan's) takes any size. */
static int
shape_fits(const TfgShape *got, const TfgShape *want)
{
	if (got->rank != want->rank)
		return 0;
	for (int i = 0; i < got->rank; i++)
		if (want->dims[i] >= 0 && got->dims[i] != want->dims[i])
			return 0;
	return 1;
}

/* What to do about a feed of shape got for an input of shape want that
 * holds as many values a row (or in all) in another shape, a batch of
 * u8 images [100, 28, 28] for f32[?, 784]: declare the input as fed and
 * reshape it in the graph (spec §8.3 "run: fetches, feeds and steps").
 * "" when there is nothing to say. */
static const char *
reshape_hint(char *buf, size_t n, const RtFeed *f, const RtTensor *t)
{
	int64_t per_got = 1, per_want = 1;
	int batch = f->shape.rank > 0 && f->shape.dims[0] < 0 &&
		    t->shape.rank > 0;
	char decl[400], dims[160], cast[80];
	size_t k = 0;

	for (int i = batch; i < t->shape.rank; i++)
		per_got *= t->shape.dims[i];
	for (int i = batch; i < f->shape.rank; i++) {
		if (f->shape.dims[i] < 0)
			return "";
		per_want *= f->shape.dims[i];
	}
	if (per_got != per_want || t->shape.rank == f->shape.rank)
		return "";
	for (int i = 0; i < t->shape.rank && k < sizeof dims; i++)
		k += (size_t)(i == 0 && batch
			? snprintf(dims + k, sizeof dims - k, "?")
			: snprintf(dims + k, sizeof dims - k, "%s%lld",
				   i ? ", " : "",
				   (long long)t->shape.dims[i]));
	snprintf(decl, sizeof decl, "input %s: %s[%s]", f->name,
		 tfg_dtype_name(t->dtype), dims);
	if (t->dtype == f->dtype)
		snprintf(cast, sizeof cast, "%s", f->name);
	else if (t->dtype == TFG_U8 && (f->dtype == TFG_F32 ||
					f->dtype == TFG_F64))
		snprintf(cast, sizeof cast, "cast(%s, %s) / 255.0", f->name,
			 tfg_dtype_name(f->dtype));
	else
		snprintf(cast, sizeof cast, "cast(%s, %s)", f->name,
			 tfg_dtype_name(f->dtype));
	k = (size_t)snprintf(buf, n, " (declare the input as it is fed, '%s', "
			     "and make the values the graph wants from it: "
			     "reshape(%s, [", decl, cast);
	for (int i = 0; i < f->shape.rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "",
				      f->shape.dims[i] < 0 ? -1LL
				      : (long long)f->shape.dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, "])%s)", t->dtype == TFG_U8 &&
			 cast[0] == 'c' ? ", as examples/mnist.tfg does" : "");
	return buf;
}

static tfg_status
check_feeds(Sess *ss, const RtExpr *x, const RtSig *sig, CVal *args)
{
	char want[160], got[160], hint[600];
	tfg_status st;

	for (int i = 0; i < sig->nfeed; i++) {
		const RtFeed *f = &sig->feeds[i];
		const char *where = x->args[i] ? x->args[i]->where
					       : x->where;

		rt_sess_one_fetch(&args[i]);
		if (args[i].kind != CV_TENSOR)
			return rt_sess_fail(ss, where, TFG_EDTYPE,
					    "feed '%s' expects %s, got %s",
					    f->name,
					    rt_sess_type_str(want, sizeof want,
							     f->dtype,
							     &f->shape),
					    args[i].kind == CV_STR ?
					    "a string" : "a list of values");
		if (!shape_fits(&args[i].t->shape, &f->shape))
			return rt_sess_fail(ss, where, TFG_ESHAPE,
					    "feed '%s' expects %s, got %s%s",
					    f->name,
					    rt_sess_type_str(want, sizeof want,
							     f->dtype,
							     &f->shape),
					    rt_sess_type_str(got, sizeof got,
						    args[i].t->dtype,
						    &args[i].t->shape),
					    reshape_hint(hint, sizeof hint, f,
							 args[i].t));
		if (args[i].t->dtype != f->dtype &&
		    (st = convert_feed(ss, x->args[i], where, f, &args[i])))
			return st;
	}
	return TFG_OK;
}

/* ABORT of the failed step c to sig->tasks[0 .. n-1] but this one: each
 * of them got its START, and may be waiting for a tensor that will never
 * come (spec/design.md "Step failures").  Nothing is waited for, and the
 * sends share a short deadline: one to a task that is down only queues
 * (the transport delivers it behind the START, should the task come back), one
 * that finds the queue full gives up.  A task that ended the step drops
 * its ABORT as stale. */
static void
step_abort(RtStep *c, const RtSig *sig, int n)
{
	RtProc *p = c->proc;
	double deadline = rt_now() + ABORT_SECS;
	size_t len = strlen(c->err.msg);
	const char *why = len ? c->err.msg : tfg_strerror(c->err.code);
	unsigned char *body;
	RtBuf *m;
	TfgError e;

	if (len == 0)
		len = strlen(why);
	if (len > RT_ABORT_MAX)
		len = RT_ABORT_MAX;
	for (int i = 0; i < n; i++) {
		int t = sig->tasks[i];

		if (t == p->task)
			continue;
		if (rt_msg_new(p, NULL, &m, &body, RT_MSG_ABORT, c->step, 0,
			       NULL, len, &e) == TFG_OK) {
			/* one line of text, as the wire wants */
			for (size_t j = 0; j < len; j++)
				body[j] = (unsigned char)why[j] < ' ' ||
					  why[j] == 0x7f ? ' ' : why[j];
			if (rt_send(p, t, m, deadline, NULL, &e) == TFG_OK)
				continue;
		}
		if (p->opt.verbose)
			fprintf(stderr, "tfg: %s: no ABORT to %s: %s\n",
				p->name, p->plan->tasks[t].name, e.msg);
	}
}

/* The STARTs of step c, each carrying the feeds its task consumes; *n
 * gets how many of sig->tasks have been sent one (the own task
 * counted). */
static tfg_status
step_starts(RtStep *c, int sigi, CVal *args, int *n)
{
	RtProc *p = c->proc;
	const TfgPlan *plan = c->plan;
	const RtSig *sig = &plan->sigs[sigi];
	double deadline = rt_step_deadline(p);
	RtBuf *m;
	tfg_status st;

	for (int i = 0; i < sig->ntask; i++) {
		int t = sig->tasks[i];
		size_t bytes = rt_start_bytes(plan, sigi, t);
		unsigned char *body;
		int one = -1; /* the one feed that is the whole body */

		if (t == p->task)
			continue;
		for (int j = 0; j < sig->nfeed; j++) {
			const RtEdge *e = &plan->edges[sig->feeds[j].key];

			if (e->dst == t && e->src == p->task &&
			    !rt_feed_apart(e) && rt_edge_nbytes(e) == bytes &&
			    bytes > 0)
				one = j;
		}
		/* a feed alone leaves from its tensor, with no copy */
		if ((st = rt_msg_new(p, plan, &m, one < 0 ? &body : NULL,
				     RT_MSG_START, c->step, (uint32_t)sigi,
				     NULL, bytes, &c->err)))
			return st;
		if (one >= 0) {
			m->tail = args[one].t->data;
			m->ntail = bytes;
		}
		for (int j = 0; one < 0 && j < sig->nfeed; j++) {
			const RtEdge *e = &plan->edges[sig->feeds[j].key];

			if (e->dst != t || e->src != p->task ||
			    rt_feed_apart(e))
				continue;
			memcpy(body, args[j].t->data, rt_edge_nbytes(e));
			body += rt_edge_nbytes(e);
		}
		if ((st = rt_send(p, t, m, deadline, NULL, &c->err)))
			return st;
		*n = i + 1;
		/* large feeds behind it, each from its tensor: the task reads
		   it straight into its part's buffer (rt_feed_apart) */
		for (int j = 0; j < sig->nfeed; j++) {
			const RtEdge *e = &plan->edges[sig->feeds[j].key];

			if (e->dst == t && e->src == p->task &&
			    rt_feed_apart(e) &&
			    (st = rt_step_send(c, sig->feeds[j].key,
					       args[j].t->data)))
				return st;
		}
	}
	return TFG_OK;
}

/* The rest of step c once its STARTs are out: feeds for this task, the
 * own part, the fetches and the DONEs. */
static tfg_status
step_finish(Sess *ss, RtStep *c, int sigi, const RtPart *parts,
	    RtArenas *spare, CVal *args, RtTensor **fetch)
{
	RtProc *p = c->proc;
	const TfgPlan *plan = c->plan;
	const RtSig *sig = &plan->sigs[sigi];
	tfg_status st;

	for (int i = 0; ss->ran && i < sig->ntask; i++)
		ss->ran[sig->tasks[i]] = 1;
	/* Feeds for this task itself, or (malformed plans) for a task
	 * without a part, go the ordinary way. */
	for (int i = 0; i < sig->nfeed; i++) {
		const RtEdge *e = &plan->edges[sig->feeds[i].key];
		int with_part = 0;

		for (int j = 0; j < sig->ntask; j++)
			with_part |= sig->tasks[j] == e->dst &&
				     e->dst != p->task && e->src == p->task;
		if (with_part)
			continue;
		/* the own part reads the session's value itself: args
		   are held until the run returns */
		if (e->dst == p->task)
			st = rt_feed_local(c, sig->feeds[i].key,
					   args[i].t->data);
		else
			st = rt_step_send(c, sig->feeds[i].key,
					  args[i].t->data);
		if (st)
			return st;
	}
	if (parts && parts[sigi].fn &&
	    (st = rt_run_part(c, ss->srv, ss->srv->proc.name, &parts[sigi],
				  &spare[sigi])))
		return st;
	for (int i = 0; i < sig->nfetch; i++)
		if ((st = rt_step_recv(c, sig->fetches[i].key, fetch[i]->data)))
			return st;
	for (int i = 0; i < sig->ntask; i++)
		if (sig->needs_done && sig->needs_done[i] &&
		    sig->tasks[i] != p->task &&
		    (st = rt_wait_done(c, sig->tasks[i], NULL, NULL, NULL)))
			return st;
	return TFG_OK;
}

/* One step of signature sigi in the plan u (the own one, or a
 * specialisation's): it fails as a whole, on every task. */
static tfg_status
step(Sess *ss, int sigi, const RtUse *u, CVal *args, RtTensor **fetch)
{
	RtStep c;
	tfg_status st;
	int nstart = 0;
	double t0 = rt_tracing ? rt_trace_clock() : 0;

	rt_step_init(&c, ss->p);
	c.tick = rt_sess_tick;
	c.role = ss;
	ss->nstep++;
	if ((st = rt_step_begin(&c, u->plan, sigi)) != TFG_OK) {
		ss->err = c.err;
		return st;
	}
	st = step_starts(&c, sigi, args, &nstart);
	rt_step_sent(&c);
	if (st == TFG_OK)
		st = step_finish(ss, &c, sigi, u->parts, u->spare, args,
				 fetch);
	if (st != TFG_OK) {
		size_t len = strlen(c.err.msg);

		step_abort(&c, &u->plan->sigs[sigi], nstart);
		/* a NaN or infinity found by minimize's updates or by
		   --check-numerics (spec §6.26 "minimize and optimizers"): which
		   step of the training it was */
		if (strstr(c.err.msg, "non-finite") &&
		    len + 40 < sizeof c.err.msg)
			snprintf(c.err.msg + len, sizeof c.err.msg - len,
				 " (step %llu of this session)", ss->nstep);
		ss->err = c.err;
		/* A task without the specialisation: the next run
		   announces it again; this one fails, since a step runs at
		   most once (one with side effects must not apply them
		   twice). */
		if (c.lost >= 0 && u->spec >= 0)
			rt_spec_lost(ss->srv, u->spec, c.lost, &ss->err);
	}
	if (rt_tracing) {
		char name[64];

		snprintf(name, sizeof name, "step %llu (signature %d)%s",
			 RT_STEP_NO(c.step), sigi, st ? ": failed" : "");
		rt_trace_event("step", name, RT_STEP_NO(c.step), 0, t0,
			       rt_trace_clock());
	}
	rt_step_end(&c);
	return st;
}

/* run(...) x, with given[] (when not NULL) as the values of its feeds
 * rather than its arguments' (restore: read from files), taken. */
tfg_status
rt_sess_run_with(Sess *ss, const RtExpr *x, CVal *given, CVal *v)
{
	RtProc *p = ss->p;
	const RtSig *sig;
	CVal *args;
	RtTensor **fetch;
	tfg_status st = TFG_OK;
	RtUse u;

	rt_spec_use(ss->srv, p->plan->hash, &u);
	if (x->sig < 0 || x->sig >= p->plan->nsig)
		return rt_sess_fail(ss, x->where, TFG_EINVAL,
				    "run of an unknown signature");
	sig = &p->plan->sigs[x->sig];
	if (x->nargs < sig->nfeed || sig->client != p->task) {
		return rt_sess_fail(ss, x->where, TFG_EINVAL,
				    "malformed run: %d feeds for %d, or "
				    "driven from %s", x->nargs, sig->nfeed,
				    p->plan->tasks[sig->client].name);
	}
	args = calloc((size_t)sig->nfeed + 1, sizeof *args);
	fetch = calloc((size_t)sig->nfetch + 1, sizeof *fetch);
	if (!args || !fetch) {
		free(args);
		free(fetch);
		return rt_sess_fail(ss, x->where, TFG_ENOMEM, "out of memory");
	}
	for (int i = 0; i < sig->nfeed && st == TFG_OK; i++)
		if (given)
			args[i] = given[i], memset(&given[i], 0, sizeof *given);
		else
			st = rt_sess_eval(ss, x->args[i], &args[i]);
	/* Values fed to inputs the fetches do not need are computed all the
	   same, so that their errors show
	   (spec §8.3 "run: fetches, feeds and steps"), then dropped. */
	for (int i = sig->nfeed; !given && i < x->nargs && st == TFG_OK; i++) {
		CVal extra;
		st = rt_sess_eval(ss, x->args[i], &extra);
		rt_cval_free(&extra);
	}
	if (st == TFG_OK)
		st = check_feeds(ss, x, sig, args);
	/* A generic plan runs the specialisation for these shapes. */
	if (st == TFG_OK && p->plan->generic) {
		TfgShape *shapes = calloc((size_t)sig->nfeed + 1,
					  sizeof *shapes);

		if (shapes == NULL) {
			st = rt_sess_fail(ss, x->where, TFG_ENOMEM,
					  "out of memory");
		} else {
			for (int i = 0; i < sig->nfeed; i++)
				shapes[i] = args[i].t->shape;
			if ((st = rt_spec_client(ss->srv, x->sig, shapes,
						 &u, &ss->err)))
				ss->where = x->where;
		}
		free(shapes);
	}
	for (int i = 0; i < sig->nfetch && st == TFG_OK; i++) {
		uint32_t key = u.plan->sigs[x->sig].fetches[i].key;
		const RtEdge *e = &u.plan->edges[key];

		if ((st = rt_tensor_new_nbytes(&fetch[i], e->dtype, &e->shape,
						e->nbytes)))
			rt_sess_fail(ss, x->where, st,
				     "out of memory for a fetch");
	}
	if (st == TFG_OK && (st = step(ss, x->sig, &u, args, fetch)))
		ss->where = x->where;
	rt_spec_unuse(ss->srv, &u);
	if (st == TFG_OK)
		st = rt_sess_save_due(ss);
	for (int i = 0; i < sig->nfeed; i++)
		rt_cval_free(&args[i]);
	free(args);
	if (st != TFG_OK) {
		for (int i = 0; i < sig->nfetch; i++)
			rt_tensor_free(fetch[i]);
		free(fetch);
		return st;
	}
	v->kind = CV_LIST;
	v->own = 1;
	v->n = sig->nfetch;
	v->list = fetch;
	return TFG_OK;
}

tfg_status
rt_sess_eval_run(Sess *ss, const RtExpr *x, CVal *v)
{
	return rt_sess_run_with(ss, x, NULL, v);
}
