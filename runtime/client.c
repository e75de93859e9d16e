/*
 * runtime/client.c: runs a session program as the client of its steps
 * (spec/design.md "Processes"), inside the session's task server: the
 * session's statements, and its output.
 *
 * Statements are interpreted directly from the RtSession tree: there are
 * few of them and each run(...) costs far more than the walk.  The values
 * the statements compute are client_eval.c's, the steps a run(...) makes
 * client_run.c's; what the three files share is runtime/client_int.h.
 *
 * Output is buffered and sent to the controller as OUTPUT messages (past
 * 16 KiB, 100 ms after the last, at the end), so a printing loop does
 * not cost a message per line; an empty one goes out when nothing did
 * for a second, so the controller can tell a long session from a hung
 * one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/client_int.h"

#define OUT_FLUSH_BYTES (16 * 1024)
#define OUT_FLUSH_SECS 0.1
#define HEARTBEAT_SECS 1.0 /* an empty OUTPUT tells the controller we live */
#define WAIT_INIT_SECS 60  /* wait_initialized() without --step-timeout */
#define PROGRESS_SECS 0.1  /* at most one PROGRESS this often */

/* ------------------------------------------------------------- output */

/* Sends the buffered output if due (force: always). */
static void
flush(Sess *c, int force)
{
	double now = rt_now();
	TfgError e;
	int due = c->nout > OUT_FLUSH_BYTES ||
		  now - c->last_flush > (c->nout ? OUT_FLUSH_SECS :
					 HEARTBEAT_SECS);

	if (!due && !(force && c->nout))
		return;
	if (rt_send_text(c->p, c->url, RT_MSG_OUTPUT, 0, (uint32_t)c->index,
			 c->out, c->nout, &e) != TFG_OK)
		fprintf(stderr, "tfgc: error: %s: output lost: %s\n",
			c->p->name, e.msg);
	c->nout = 0;
	c->last_flush = now;
}

/* RtStep.tick of the session's steps: output or heartbeat while a step
 * waits. */
void
rt_sess_tick(RtStep *c)
{
	flush(c->role, 0);
}

static int
out_put(Sess *c, const char *s, size_t n)
{
	if (c->nout + n > c->capout) {
		size_t nc = c->capout ? c->capout : 4096;
		char *no;

		while (nc < c->nout + n)
			nc *= 2;
		if ((no = realloc(c->out, nc)) == NULL)
			return -1;
		c->out = no, c->capout = nc;
	}
	memcpy(c->out + c->nout, s, n);
	c->nout += n;
	return 0;
}

/* --------------------------------------------------------- statements */

static tfg_status
append_value(Sess *ss, const CVal *v, const char *where)
{
	Sess *c = ss;
	char *s;
	int bad = 0;

	if (v->kind == CV_STR)
		return out_put(c, v->str, strlen(v->str)) ?
		       rt_sess_fail(ss, where, TFG_ENOMEM,
				    "out of memory") : TFG_OK;
	for (int i = 0; i < (v->kind == CV_LIST ? v->n : 1); i++) {
		const RtTensor *t = v->kind == CV_LIST ? v->list[i] : v->t;

		if ((s = rt_format_str(t)) == NULL)
			bad = 1;
		else if ((i && out_put(c, " ", 1)) || out_put(c, s, strlen(s)))
			bad = 1;
		free(s);
		if (bad)
			return rt_sess_fail(ss, where, TFG_ENOMEM,
					    "out of memory");
	}
	return TFG_OK;
}

static tfg_status exec_stmts(Sess *ss, RtStmt **stmts, int n);
static void epoch_end(Sess *ss);

/* Every value is computed before any is written, so that a failing
 * print writes nothing. */
static tfg_status
exec_print(Sess *ss, const RtStmt *st)
{
	Sess *c = ss;
	CVal *v = calloc((size_t)st->nexpr + 1, sizeof *v);
	tfg_status rv = TFG_OK;
	int n = 0;

	if (v == NULL)
		return rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	for (; n < st->nexpr && rv == TFG_OK; n++)
		rv = rt_sess_eval(ss, st->exprs[n], &v[n]);
	for (int i = 0; i < n && rv == TFG_OK; i++) {
		if (i && out_put(c, " ", 1))
			rv = rt_sess_fail(ss, st->where, TFG_ENOMEM,
					  "out of memory");
		if (rv == TFG_OK)
			rv = append_value(ss, &v[i], st->exprs[i]->where);
	}
	for (int i = 0; i < n; i++)
		rt_cval_free(&v[i]);
	free(v);
	if (rv != TFG_OK)
		return rv;
	if (out_put(c, "\n", 1))
		return rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	flush(c, 0);
	return TFG_OK;
}

/* x, an integer scalar (a run of one counts), into *out; else "WHAT
 * must be an integer scalar". */
static tfg_status
int_scalar(Sess *ss, const RtExpr *x, const char *what, int64_t *out)
{
	CVal v;
	tfg_status st;

	if ((st = rt_sess_eval(ss, x, &v)) != TFG_OK)
		return st;
	rt_sess_one_fetch(&v);
	if (v.kind != CV_TENSOR || v.t->shape.rank != 0 ||
	    rt_sess_is_float(v.t->dtype) || v.t->dtype == TFG_BOOL ||
	    v.t->dtype == TFG_STRING) {
		rt_cval_free(&v);
		return rt_sess_fail(ss, x->where, TFG_EDTYPE,
				    "%s must be an integer scalar", what);
	}
	*out = rt_sess_get_i(v.t);
	rt_cval_free(&v);
	return TFG_OK;
}

static tfg_status
exec_for(Sess *ss, const RtStmt *st)
{
	int64_t lo, hi;
	tfg_status rv;

	if (st->nexpr != 2 || st->slot < 0 || st->slot >= ss->s->nslot)
		return rt_sess_fail(ss, st->where, TFG_EINVAL,
				    "malformed for statement");
	if ((rv = int_scalar(ss, st->exprs[0], "a loop bound", &lo)) ||
	    (rv = int_scalar(ss, st->exprs[1], "a loop bound", &hi)))
		return rv;
	rt_track_push(&ss->track, hi > lo ? hi - lo : 0, -1);
	for (int64_t i = lo; i < hi && rv == TFG_OK; i++) {
		if (rt_stop_requested) {
			rv = rt_sess_fail(ss, st->where, TFG_ECANCELED,
					  "interrupted");
			break;
		}
		*(int64_t *)ss->vals[st->slot].t->data = i;
		rt_track_at(&ss->track, i - lo, -1);
		rv = exec_stmts(ss, st->body, st->nbody);
		if (rv == TFG_OK && st->epoch)
			epoch_end(ss);
	}
	rt_track_pop(&ss->track);
	return rv;
}


/* ---------------------------------------------------- progress, record */

/* Sends the last progress() call's record, flagged end (RtProgress.end),
 * after what was printed before it. */
static void
progress_send(Sess *ss, int end)
{
	char body[RT_PROGRESS_MAX];
	size_t n;
	TfgError e;

	ss->prog.end = end;
	n = rt_progress_encode(body, sizeof body, &ss->prog);
	flush(ss, 1);
	if (rt_send_text(ss->p, ss->url, RT_MSG_PROGRESS, 0,
			 (uint32_t)ss->index, body, n, &e) != TFG_OK)
		fprintf(stderr, "tfgc: error: %s: progress lost: %s\n",
			ss->p->name, e.msg);
	ss->prog_sent = rt_now();
}

/* An iteration of an epoch's loop ended: its last record, flagged. */
static void
epoch_end(Sess *ss)
{
	if (ss->prog_epoch)
		progress_send(ss, 1);
	ss->prog_epoch = 0;
}

/* A number of progress() or record() (fn), argument name=: an integer
 * or float scalar (integer: an integer), in *v. */
static tfg_status
eval_number(Sess *ss, const RtExpr *x, const char *fn, const char *name,
	    int integer, CVal *v)
{
	tfg_status st;
	char buf[160];

	if ((st = rt_sess_eval(ss, x, v)) != TFG_OK)
		return st;
	rt_sess_one_fetch(v);
	if (v->kind == CV_TENSOR && v->t->shape.rank == 0 &&
	    v->t->dtype != TFG_BOOL && v->t->dtype != TFG_STRING &&
	    !(integer && rt_sess_is_float(v->t->dtype)))
		return TFG_OK;
	st = rt_sess_fail(ss, x->where, TFG_EDTYPE,
			  "%s(): %s= takes %s, got %s", fn,
			  name, integer ? "an integer" : "a number",
			  rt_cval_what(buf, sizeof buf, v));
	rt_cval_free(v);
	return st;
}

/* progress(step=S, name=value, ...) (spec §8.13 "progress"): the
 * record of the call, sent if none went for PROGRESS_SECS. */
static tfg_status
exec_progress(Sess *ss, const RtStmt *st)
{
	int n = st->nexpr - 1, *isint = calloc((size_t)n + 1, sizeof *isint);
	double *val = calloc((size_t)n + 1, sizeof *val);
	int64_t step = -1;
	tfg_status rv = TFG_OK;
	CVal v;

	if (!isint || !val) {
		free(isint);
		free(val);
		return rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	}
	if (st->exprs[0] && (rv = eval_number(ss, st->exprs[0], "progress",
					      "step", 1, &v)) == TFG_OK) {
		step = rt_sess_get_i(v.t);
		rt_cval_free(&v);
	}
	for (int i = 0; i < n && rv == TFG_OK; i++) {
		if ((rv = eval_number(ss, st->exprs[i + 1], "progress",
				      st->paths[i + 1], 0, &v)) != TFG_OK)
			break;
		isint[i] = !rt_sess_is_float(v.t->dtype);
		val[i] = rt_sess_get_f(v.t);
		rt_cval_free(&v);
	}
	if (rv == TFG_OK) {
		rt_track_call(&ss->track, &ss->prog, step, n, st->paths + 1,
			      val, isint);
		ss->prog.t = rt_now() - ss->start;
		ss->prog_epoch = 1;
		if (rt_now() - ss->prog_sent >= PROGRESS_SECS)
			progress_send(ss, 0);
	}
	free(isint);
	free(val);
	return rv;
}

/* record("FILE.csv", name=value, ...) (spec §8.14 "record"): every
 * value, then the row. */
static tfg_status
exec_record(Sess *ss, const RtStmt *st)
{
	const RtCsv *f = st->slot >= 0 && st->slot < ss->s->ncsv ?
			 &ss->s->csv[st->slot] : NULL;
	char **cells = f ? calloc((size_t)f->ncol + 1, sizeof *cells) : NULL;
	tfg_status rv = TFG_OK;
	TfgError e;
	CVal v;

	if (!f)
		return rt_sess_fail(ss, st->where, TFG_EINVAL,
				    "malformed record");
	if (!cells)
		return rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	for (int i = 0; i < st->nexpr && rv == TFG_OK; i++) {
		char num[32], **cell = &cells[st->cols[i]];

		if ((rv = eval_number(ss, st->exprs[i], "record",
				      f->cols[st->cols[i]], 0, &v)) != TFG_OK)
			break;
		if (rt_sess_is_float(v.t->dtype)) {
			*cell = rt_format_str(v.t);
		} else {
			snprintf(num, sizeof num, "%lld",
				 (long long)rt_sess_get_i(v.t));
			*cell = strdup(num);
		}
		rt_cval_free(&v);
		if (!*cell)
			rv = rt_sess_fail(ss, st->where, TFG_ENOMEM,
					  "out of memory");
	}
	if (rv == TFG_OK &&
	    (rv = rt_csv_row(&ss->csv[st->slot], f, cells,
			     rt_now() - ss->start, &e)) != TFG_OK)
		rv = rt_sess_fail(ss, st->where, rv, "%s", e.msg);
	for (int i = 0; i < f->ncol; i++)
		free(cells[i]);
	free(cells);
	return rv;
}

/* ------------------------------------------------------------ batches */

/* An array of batches(): a tensor with rows, not of strings; what names
 * it in errors. */
static tfg_status
batch_array(Sess *ss, const RtExpr *x, const char *what, CVal *v)
{
	tfg_status st;
	char buf[160];

	if ((st = rt_sess_eval(ss, x, v)) != TFG_OK)
		return st;
	rt_sess_one_fetch(v);
	if (v->kind == CV_TENSOR && v->t->shape.rank > 0 &&
	    v->t->dtype != TFG_STRING)
		return TFG_OK;
	st = rt_sess_fail(ss, x->where, TFG_ESHAPE,
			  "batches() takes arrays with rows (of rank 1 or "
			  "more, not strings), but %s is %s", what,
			  rt_cval_what(buf, sizeof buf, v));
	rt_cval_free(v);
	return st;
}

/* An integer argument of batches() (NULL: not given, *out unchanged), or
 * drop_last= (as 0 or 1). */
static tfg_status
batch_int(Sess *ss, const RtExpr *x, const char *what, int64_t *out)
{
	int isbool = strcmp(what, "drop_last=") == 0;
	tfg_status st;
	char buf[160];
	CVal v;

	if (!x)
		return TFG_OK;
	if ((st = rt_sess_eval(ss, x, &v)) != TFG_OK)
		return st;
	rt_sess_one_fetch(&v);
	if (v.kind == CV_TENSOR && v.t->shape.rank == 0 &&
	    (isbool ? v.t->dtype == TFG_BOOL
		    : !rt_sess_is_float(v.t->dtype) && v.t->dtype != TFG_BOOL &&
		      v.t->dtype != TFG_STRING)) {
		*out = rt_sess_get_i(v.t);
		rt_cval_free(&v);
		return TFG_OK;
	}
	st = rt_sess_fail(ss, x->where, TFG_EDTYPE,
			  "batches(): %s must be %s, got %s",
			  what, isbool ? "true or false" : "an integer scalar",
			  rt_cval_what(buf, sizeof buf, &v));
	rt_cval_free(&v);
	return st;
}

/* batches()'s arguments: the arrays in v[0] and v[1] (kind CV_NONE when
 * there is no second), the rest in *arg, each checked. */
static tfg_status
batch_args(Sess *ss, const RtStmt *st, CVal v[2], RtBatchArgs *arg)
{
	int64_t seed = 0, drop = 0;
	char s0[160], s1[160];
	tfg_status rv;

	memset(arg, 0, sizeof *arg);
	arg->of = 1;
	if ((rv = batch_array(ss, st->exprs[0], "the first array", &v[0])) ||
	    (st->exprs[1] &&
	     (rv = batch_array(ss, st->exprs[1], "the second array", &v[1]))))
		return rv;
	if (v[1].kind && v[1].t->shape.dims[0] != v[0].t->shape.dims[0])
		return rt_sess_fail(ss, st->exprs[1]->where, TFG_ESHAPE,
				    "batches() takes arrays of as many rows, "
				    "but they are %s and %s",
				    rt_sess_type_str(s0, sizeof s0,
						     v[0].t->dtype,
						     &v[0].t->shape),
				    rt_sess_type_str(s1, sizeof s1,
						     v[1].t->dtype,
						     &v[1].t->shape));
	if ((rv = batch_int(ss, st->exprs[2], "the batch size", &arg->size)) ||
	    (rv = batch_int(ss, st->exprs[3], "seed=", &seed)) ||
	    (rv = batch_int(ss, st->exprs[4], "shard=", &arg->shard)) ||
	    (rv = batch_int(ss, st->exprs[5], "of=", &arg->of)) ||
	    (rv = batch_int(ss, st->exprs[6], "drop_last=", &drop)))
		return rv;
	arg->shuffle = st->exprs[3] != NULL;
	arg->seed = (uint64_t)seed;
	arg->drop_last = drop != 0;
	if (arg->size < 1)
		return rt_sess_fail(ss, st->exprs[2]->where, TFG_EINVAL,
				    "batches(): the batch size must be 1 or "
				    "more, got %lld",
				    (long long)arg->size);
	if (arg->of < 1)
		return rt_sess_fail(ss, st->exprs[5]->where, TFG_EINVAL,
				    "batches(): of= must be 1 or more, got "
				    "%lld",
				    (long long)arg->of);
	if (arg->shard < 0 || arg->shard >= arg->of)
		return rt_sess_fail(ss, st->exprs[4]->where, TFG_EINVAL,
				    "batches(): shard=%lld is not one of the "
				    "%lld shards 0 to %lld",
				    (long long)arg->shard, (long long)arg->of,
				    (long long)arg->of - 1);
	return TFG_OK;
}

/* The i64 scalar i in slot (b.index, b.count, b.size). */
static tfg_status
batch_slot(CVal *slot, int64_t i)
{
	tfg_status st;

	if (slot->kind == CV_NONE) {
		if ((st = rt_sess_scalar_new(&slot->t, TFG_I64, i, 0)) !=
		    TFG_OK)
			return st;
		slot->kind = CV_TENSOR, slot->own = 1;
	}
	*(int64_t *)slot->t->data = i;
	return TFG_OK;
}

/* for b in batches(x, y, size, ...) (spec §8.6.1 "batches"): the body
 * once per batch, b.x and b.y borrowing the loop's tensors. */
static tfg_status
exec_batches(Sess *ss, const RtStmt *st)
{
	CVal v[2] = {{0}, {0}}, *b = &ss->vals[st->slot];
	RtBatchArgs arg;
	RtBatches bt;
	tfg_status rv;

	memset(&bt, 0, sizeof bt);
	if (st->nexpr != 7 || !st->exprs[0] || !st->exprs[2] ||
	    st->slot < 0 || st->slot + 5 > ss->s->nslot)
		return rt_sess_fail(ss, st->where, TFG_EINVAL,
				    "malformed batches loop");
	if ((rv = batch_args(ss, st, v, &arg)) == TFG_OK &&
	    (rv = rt_batches_begin(&bt, v[0].t, v[1].kind ? v[1].t : NULL,
				   &arg, &ss->err)) != TFG_OK)
		ss->where = st->where;
	if (rv == TFG_OK && (batch_slot(&b[3], bt.count) ||
			     batch_slot(&b[2], 0) ||
			     batch_slot(&b[4], 0)))
		rv = rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	rt_track_push(&ss->track, bt.count, 0);
	for (int64_t i = 0; rv == TFG_OK && i < bt.count; i++) {
		if (rt_stop_requested) {
			rv = rt_sess_fail(ss, st->where, TFG_ECANCELED,
					  "interrupted");
			break;
		}
		rt_batches_get(&bt, i);
		b[0] = (CVal){.kind = CV_TENSOR, .t = bt.x};
		if (bt.y)
			b[1] = (CVal){.kind = CV_TENSOR, .t = bt.y};
		*(int64_t *)b[2].t->data = i;
		*(int64_t *)b[4].t->data = bt.n;
		rt_track_at(&ss->track, i, bt.n);
		rv = exec_stmts(ss, st->body, st->nbody);
		if (rv == TFG_OK && st->epoch)
			epoch_end(ss);
	}
	rt_track_pop(&ss->track);
	for (int k = 0; k < 5; k++)
		rt_cval_free(&b[k]); /* x and y are borrowed: the loop's */
	rt_batches_end(&bt);
	rt_cval_free(&v[0]);
	rt_cval_free(&v[1]);
	return rv;
}

/* tfgc run --fetch y --out y.npy: each fetched tensor into its file. */
static tfg_status
exec_save(Sess *ss, const RtStmt *st)
{
	tfg_status rv;
	TfgError e;
	CVal v;

	if (st->nexpr < 1 || st->exprs[0]->kind != RT_E_RUN)
		return rt_sess_fail(ss, st->where, TFG_EINVAL,
				    "malformed save");
	if ((rv = rt_sess_eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	for (int i = 0; i < v.n && rv == TFG_OK; i++)
		if ((rv = rt_npy_save(st->paths[i], v.list[i], &e)) != TFG_OK)
			rv = rt_sess_fail(ss, st->where, rv, "%s", e.msg);
	rt_cval_free(&v);
	return rv;
}

/* let NAME = value: the local owns its value (a copy of a borrowed
 * one). */
static tfg_status
exec_let(Sess *ss, const RtStmt *st)
{
	CVal v;
	tfg_status rv;

	if (st->slot < 0 || st->slot >= ss->s->nslot || st->nexpr != 1)
		return rt_sess_fail(ss, st->where, TFG_EINVAL, "malformed let");
	if ((rv = rt_sess_eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	rt_sess_one_fetch(&v);
	if (rt_cval_own(&v) != 0)
		return rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	v.let = v.kind == CV_TENSOR;
	rt_cval_free(&ss->vals[st->slot]);
	ss->vals[st->slot] = v;
	return TFG_OK;
}

static tfg_status
exec_if(Sess *ss, const RtStmt *st)
{
	CVal v;
	tfg_status rv;
	int yes;

	if ((rv = rt_sess_eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	rt_sess_one_fetch(&v);
	if (v.kind != CV_TENSOR || v.t->shape.rank != 0 ||
	    v.t->dtype != TFG_BOOL) {
		rt_cval_free(&v);
		return rt_sess_fail(ss, st->exprs[0]->where, TFG_EDTYPE,
				    "a condition must be a bool scalar (a "
				    "comparison)");
	}
	yes = *(const uint8_t *)v.t->data != 0;
	rt_cval_free(&v);
	return yes ? exec_stmts(ss, st->body, st->nbody)
		   : exec_stmts(ss, st->else_, st->nelse);
}

/* A number of seconds or milliseconds (scale) from a session scalar. */
static tfg_status
seconds(Sess *ss, const RtExpr *x, double scale, double *out)
{
	CVal v;
	tfg_status st;

	if ((st = rt_sess_eval(ss, x, &v)) != TFG_OK)
		return st;
	rt_sess_one_fetch(&v);
	if (v.kind != CV_TENSOR || v.t->shape.rank != 0 ||
	    v.t->dtype == TFG_BOOL || v.t->dtype == TFG_STRING ||
	    !(rt_sess_get_f(v.t) >= 0) || rt_sess_get_f(v.t) * scale > 86400) {
		rt_cval_free(&v);
		return rt_sess_fail(ss, x->where, TFG_EINVAL,
				    "a time must be a "
				    "number from 0 to a day");
	}
	*out = rt_sess_get_f(v.t) * scale;
	rt_cval_free(&v);
	return TFG_OK;
}

/* Sleeps for secs, sending output and heartbeats meanwhile; ends early
 * when a stop is requested.  What was printed before goes out first, so
 * that lines of sessions that pause between prints come out in the order
 * they were printed. */
static tfg_status
nap(Sess *ss, const char *where, double secs)
{
	double end = rt_now() + secs;

	flush(ss, 1);
	for (;;) {
		double left = end - rt_now();
		struct timespec ts;

		flush(ss, 0);
		if (rt_stop_requested)
			return rt_sess_fail(ss, where, TFG_ECANCELED,
					    "interrupted");
		if (left <= 0)
			return TFG_OK;
		if (left > 0.05)
			left = 0.05;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(left * 1e9);
		nanosleep(&ts, NULL);
	}
}

/* wait_initialized(...): asks until no variable is missing, or fails at
 * the deadline naming those still missing. */
static tfg_status
exec_wait(Sess *ss, const RtStmt *st)
{
	double limit = ss->p->opt.step_timeout > 0 ? ss->p->opt.step_timeout
		     : WAIT_INIT_SECS, deadline, pause = 0.01;
	tfg_status rv;
	CVal v;

	if (st->nexpr > 1 && (rv = seconds(ss, st->exprs[1], 1, &limit)))
		return rv;
	deadline = rt_now() + limit;
	for (;;) {
		if ((rv = rt_sess_eval(ss, st->exprs[0], &v)) != TFG_OK)
			return rv;
		if (v.t->shape.dims[0] == 0) {
			rt_cval_free(&v);
			return TFG_OK;
		}
		if (rt_now() >= deadline) {
			char *s = rt_format_str(v.t);

			rv = rt_sess_fail(ss, st->where, TFG_ETIMEDOUT,
					  "variables still not initialized "
					  "after %g s: %s",
					  limit, s ? s : "?");
			free(s);
			rt_cval_free(&v);
			return rv;
		}
		rt_cval_free(&v);
		if ((rv = nap(ss, st->where, pause)) != TFG_OK)
			return rv;
		pause = pause * 2 < 0.1 ? pause * 2 : 0.1;
	}
}

static tfg_status exec_checkpoint(Sess *ss, const RtStmt *st);

/* After a step: the save of save_every() when it is due (spec §8.11 "save and restore"). */
tfg_status
rt_sess_save_due(Sess *ss)
{
	tfg_status st;

	if (ss->every_n <= 0 || ss->saving || ++ss->since < ss->every_n)
		return TFG_OK;
	ss->saving = 1;
	st = exec_checkpoint(ss, ss->every);
	ss->saving = 0;
	ss->since = 0;
	return st;
}

/* save_every(n, "DIR"): from now on; n = 0 stops it.  The steps since
 * the last save are counted again from here. */
static tfg_status
exec_save_every(Sess *ss, const RtStmt *st)
{
	tfg_status rv;
	int64_t n;

	if ((rv = int_scalar(ss, st->exprs[1], "save_every()'s number of "
			     "steps", &n)) != TFG_OK)
		return rv;
	if (n < 0)
		return rt_sess_fail(ss, st->where, TFG_EINVAL,
				    "save_every() needs "
				    "a number of steps of 0 or more, got %lld",
				    (long long)n);
	ss->every = st;
	ss->every_n = n;
	ss->since = 0;
	return TFG_OK;
}

/* save("DIR"): every variable, fetched in one step, to files. */
static tfg_status
exec_checkpoint(Sess *ss, const RtStmt *st)
{
	const TfgPlan *plan = ss->p->plan;
	tfg_status rv;
	TfgError e;
	CVal v;

	if ((rv = rt_sess_eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	if (v.kind != CV_LIST || v.n != plan->nvar)
		rv = rt_sess_fail(ss, st->where, TFG_EINVAL, "malformed save");
	else if ((rv = rt_ckpt_save(plan, st->paths[0], v.list, &e)))
		rv = rt_sess_fail(ss, st->where, rv, "%s", e.msg);
	rt_cval_free(&v);
	return rv;
}

/* restore("DIR"): every file read and checked, then one step assigns
 * every variable; a bad checkpoint changes nothing. */
static tfg_status
exec_restore(Sess *ss, const RtStmt *st)
{
	const TfgPlan *plan = ss->p->plan;
	RtTensor **val = calloc((size_t)plan->nvar + 1, sizeof *val);
	CVal *given = calloc((size_t)plan->nvar + 1, sizeof *given), v;
	tfg_status rv;
	char note[600];
	TfgError e;

	if (!val || !given) {
		free(val);
		free(given);
		return rt_sess_fail(ss, st->where, TFG_ENOMEM, "out of memory");
	}
	if ((rv = rt_ckpt_load(plan, st->paths[0], val, note, sizeof note,
			       &e)) != TFG_OK) {
		rv = rt_sess_fail(ss, st->where, rv, "%s", e.msg);
	} else {
		if (note[0])
			fprintf(stderr, "tfgc: note: %s: %s\n", st->where, note);
		for (int i = 0; i < plan->nvar; i++) {
			given[i].kind = CV_TENSOR;
			given[i].t = val[i];
			given[i].own = 1;
		}
		if ((rv = rt_sess_run_with(ss, st->exprs[0], given, &v)) ==
		    TFG_OK)
			rt_cval_free(&v);
	}
	for (int i = 0; i < plan->nvar; i++)
		rt_cval_free(&given[i]); /* what rt_sess_run_with did not
					    take */
	free(given);
	free(val);
	return rv;
}

static tfg_status
exec_stmts(Sess *ss, RtStmt **stmts, int n)
{
	tfg_status rv = TFG_OK;
	double secs;
	CVal v;

	for (int i = 0; i < n && rv == TFG_OK; i++) {
		const RtStmt *st = stmts[i];

		flush(ss, 0); /* output or heartbeat, if due */
		switch (st->kind) {
		case RT_S_PRINT:
			rv = exec_print(ss, st);
			break;
		case RT_S_FOR:
			rv = exec_for(ss, st);
			break;
		case RT_S_EXPR:
			if (st->nexpr < 1)
				break;
			if ((rv = rt_sess_eval(ss, st->exprs[0], &v)) == TFG_OK)
				rt_cval_free(&v);
			break;
		case RT_S_SAVE:
			rv = exec_save(ss, st);
			break;
		case RT_S_LET:
			rv = exec_let(ss, st);
			break;
		case RT_S_IF:
			rv = exec_if(ss, st);
			break;
		case RT_S_SLEEP:
			if ((rv = seconds(ss, st->exprs[0], 1e-3, &secs)) ==
			    TFG_OK)
				rv = nap(ss, st->where, secs);
			break;
		case RT_S_WAIT:
			rv = exec_wait(ss, st);
			break;
		case RT_S_CHECKPOINT:
			rv = exec_checkpoint(ss, st);
			break;
		case RT_S_RESTORE:
			rv = exec_restore(ss, st);
			break;
		case RT_S_BATCHES:
			rv = exec_batches(ss, st);
			break;
		case RT_S_PROGRESS:
			rv = exec_progress(ss, st);
			break;
		case RT_S_RECORD:
			rv = exec_record(ss, st);
			break;
		case RT_S_SAVE_EVERY:
			rv = exec_save_every(ss, st);
			break;
		}
	}
	return rv;
}

/* The slots of the loop variables in stmts get their i64 scalar. */
static tfg_status
loop_slots(Sess *ss, RtStmt **stmts, int n, const TfgShape *scalar)
{
	tfg_status rv = TFG_OK;

	for (int i = 0; i < n && rv == TFG_OK; i++) {
		const RtStmt *st = stmts[i];
		CVal *v;

		if (st->kind == RT_S_FOR && st->slot >= 0 &&
		    st->slot < ss->s->nslot &&
		    (v = &ss->vals[st->slot])->kind == CV_NONE) {
			if (rt_tensor_new(&v->t, TFG_I64, scalar) != TFG_OK)
				return tfg_error(&ss->err, TFG_ENOMEM,
						 "out of memory");
			*(int64_t *)v->t->data = 0;
			v->kind = CV_TENSOR, v->own = 1;
		}
		rv = loop_slots(ss, st->body, st->nbody, scalar);
		if (rv == TFG_OK)
			rv = loop_slots(ss, st->else_, st->nelse, scalar);
	}
	return rv;
}

/* LEAVE to every other task that the session's steps ran on: it ended,
 * and with it this task's part in their sync groups (runtime/optim.c),
 * so that replicas that stop at different times never hang the others.
 * Like ABORT, sent without waiting: a task not up is not held. */
static void
leave(RtProc *p, int session, const char *ran)
{
	double deadline = rt_now() + 0.2;

	for (int t = 0; ran && t < p->plan->ntask; t++) {
		RtBuf *b;
		unsigned char *body;
		TfgError e;

		if (t == p->task || !ran[t] || !rt_peer_linked(p, t) ||
		    rt_msg_new(p, NULL, &b, &body, RT_MSG_LEAVE, 0,
			       (uint32_t)session, NULL, 0, &e) != TFG_OK)
			continue;
		if (rt_send(p, t, b, deadline, NULL, &e) != TFG_OK &&
		    p->opt.verbose)
			fprintf(stderr, "tfg: %s: no LEAVE to %s: %s\n",
				p->name, p->plan->tasks[t].name, e.msg);
	}
}

tfg_status
rt_client_session(RtServer *srv, int session, const char *url)
{
	RtProc *p = &srv->proc;
	Sess ss;
	const RtSession *s;
	TfgShape scalar = {0, {0}};
	tfg_status rv = TFG_OK;
	char text[sizeof ss.err.msg + 300];
	int n = 0;
	TfgError e;

	memset(&ss, 0, sizeof ss);
	ss.srv = srv;
	ss.p = p;
	ss.url = url;
	ss.index = session;
	ss.last_flush = ss.start = rt_now();
	s = ss.s = &p->plan->sessions[session];
	if (s->task != p->task)
		rv = tfg_error(&ss.err, TFG_EINVAL,
			       "session %d runs on %s, not here", session,
			       p->plan->tasks[s->task].name);
	if (rv == TFG_OK && s->nslot > 0 &&
	    (ss.vals = calloc((size_t)s->nslot, sizeof *ss.vals)) == NULL)
		rv = tfg_error(&ss.err, TFG_ENOMEM, "out of memory");
	if (rv == TFG_OK && s->ncsv > 0 &&
	    (ss.csv = calloc((size_t)s->ncsv, sizeof *ss.csv)) == NULL)
		rv = tfg_error(&ss.err, TFG_ENOMEM, "out of memory");
	if (rv == TFG_OK &&
	    (ss.ran = calloc((size_t)p->plan->ntask, 1)) == NULL)
		rv = tfg_error(&ss.err, TFG_ENOMEM, "out of memory");
	/* loop variables: i64 scalars */
	if (rv == TFG_OK)
		rv = loop_slots(&ss, s->stmts, s->nstmt, &scalar);
	if (rv == TFG_OK)
		rv = exec_stmts(&ss, s->stmts, s->nstmt);
	/* the steps since save_every()'s last save are kept too */
	if (rv == TFG_OK && ss.every_n > 0 && ss.since > 0) {
		ss.saving = 1;
		rv = exec_checkpoint(&ss, ss.every);
	}
	for (int i = 0; ss.vals && i < s->nslot; i++)
		rt_cval_free(&ss.vals[i]);
	free(ss.vals);
	for (int i = 0; ss.csv && i < s->ncsv; i++)
		if (ss.csv[i])
			fclose(ss.csv[i]);
	free(ss.csv);
	if (ss.track.calls > 0 && rv == TFG_OK)
		progress_send(&ss, 2); /* its last: the bar's final state */
	flush(&ss, 1);
	free(ss.out);
	if (rv != TFG_OK) {
		n = snprintf(text, sizeof text, "%s%serror: %s",
			     ss.where ? ss.where : "",
			     ss.where ? ": " : "", ss.err.msg);
		if (n >= (int)sizeof text)
			n = (int)sizeof text - 1;
	}
	leave(p, session, ss.ran);
	free(ss.ran);
	if (rt_send_text(p, url, RT_MSG_SESSION_END, 0, (uint32_t)session,
			 text, (size_t)n, &e) != TFG_OK)
		fprintf(stderr, "tfgc: error: %s: %s\n", p->name, e.msg);
	return rv;
}
