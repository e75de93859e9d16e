/*
 * runtime/client.c: runs a session program as the client of its steps
 * (spec/design.md "Processes"), inside the session's task server.
 *
 * Statements are interpreted directly from the RtSession tree: there are
 * few of them and each run(...) costs far more than the walk.  A value is
 * a tensor, a list of tensors (a run's fetches) or a string.  A run is one
 * step: START to every other task with a part, the feeds (checked against
 * the signature before anything is sent), the own part in-process, then
 * the fetches and DONEs.  A step that fails once STARTs went out is
 * cancelled on the tasks that got them (ABORT), which would otherwise
 * wait for it until their deadline.  Output is buffered and sent to the
 * controller as OUTPUT messages (past 16 KiB, 100 ms after the last, at
 * the end), so a printing loop does not cost a message per line; an
 * empty one goes out when nothing did for a second, so the controller
 * can tell a long session from a hung one.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/role.h"
#include "runtime/trace.h"

#define OUT_FLUSH_BYTES (16 * 1024)
#define OUT_FLUSH_SECS 0.1
#define HEARTBEAT_SECS 1.0 /* an empty OUTPUT tells the controller we live */
#define ABORT_SECS 0.2     /* for all the ABORTs of a failed step */
#define WAIT_INIT_SECS 60  /* wait_initialized() without --step-timeout */
#define PROGRESS_SECS 0.1  /* at most one PROGRESS this often */

enum { CV_NONE, CV_TENSOR, CV_LIST, CV_STR };

typedef struct CVal {
	int kind;
	RtTensor *t;     /* CV_TENSOR */
	int own;         /* t, or the list and its tensors, are owned */
	int n;           /* CV_LIST: tensors */
	RtTensor **list;
	const char *str; /* CV_STR (owned: malloc'd, when own) */
	int let;         /* a let's value, never changed in place: conv of
			    it may be kept */
	RtTensor *conv;  /* a let's tensor converted for a feed to
			    conv->dtype, kept for the next (owned with t) */
} CVal;

/* A session as it runs: one per RUN_SESSION, on the executor that took
 * it; several may run in one process at once. */
typedef struct Sess {
	RtServer *srv;
	RtProc *p;
	const RtSession *s;
	CVal *vals;        /* [nslot] loop variables and lets, owned */
	const char *where; /* of the failing expression */
	TfgError err;      /* why it failed */
	const char *url;   /* the controller's: OUTPUT and SESSION_END */
	int index;         /* in plan->sessions: their key */
	char *out;         /* output not sent yet */
	size_t nout, capout;
	double last_flush;
	unsigned long long nstep; /* steps this session began */
	/* save_every(): the save to make (RT_S_SAVE_EVERY), every n-th step
	   after it, since: steps since the last one; saving: making it */
	const RtStmt *every;
	int64_t every_n, since;
	int saving;
	double start;      /* rt_now() when it began */
	RtTrack track;     /* its loops, for progress() */
	RtProgress prog;   /* the last progress() call's record */
	int prog_epoch;    /* a call since the last epoch's end */
	double prog_sent;  /* rt_now() of the last PROGRESS */
	FILE **csv;        /* [s->ncsv]: record()'s files, once written */
} Sess;

static void
cval_free(CVal *v)
{
	if (v->kind == CV_TENSOR && v->own) {
		rt_tensor_free(v->t);
		rt_tensor_free(v->conv);
	}
	if (v->kind == CV_STR && v->own)
		free((char *)v->str);
	if (v->kind == CV_LIST && v->own) {
		for (int i = 0; i < v->n; i++)
			rt_tensor_free(v->list[i]);
		free(v->list);
	}
	memset(v, 0, sizeof *v);
}

/* A borrowed view of v (not to be kept past v). */
static CVal
cval_borrow(const CVal *v)
{
	CVal b = *v;

	b.own = 0;
	return b;
}

static RtTensor *
tensor_copy(const RtTensor *t)
{
	RtTensor *c;

	if (rt_tensor_new_nbytes(&c, t->dtype, &t->shape, t->nbytes) !=
	    TFG_OK)
		return NULL;
	if (t->nbytes)
		memcpy(c->data, t->data, t->nbytes);
	return c;
}

/* v, owned: a borrowed value is copied.  0, or -1 out of memory (v is
 * then freed). */
static int
cval_own(CVal *v)
{
	CVal c = *v;

	if (v->own || v->kind == CV_NONE)
		return 0;
	c.own = 1;
	c.conv = NULL; /* v's, borrowed */
	if (v->kind == CV_STR && !(c.str = strdup(v->str))) {
		memset(v, 0, sizeof *v);
		return -1;
	}
	if (v->kind == CV_TENSOR && !(c.t = tensor_copy(v->t))) {
		memset(v, 0, sizeof *v);
		return -1;
	}
	if (v->kind == CV_LIST) {
		c.list = calloc((size_t)v->n + 1, sizeof *c.list);
		for (int i = 0; c.list && i < v->n; i++)
			if (!(c.list[i] = tensor_copy(v->list[i]))) {
				c.n = i;
				cval_free(&c);
				memset(v, 0, sizeof *v);
				return -1;
			}
		if (!c.list) {
			memset(v, 0, sizeof *v);
			return -1;
		}
	}
	*v = c;
	return 0;
}

static tfg_status
fail(Sess *ss, const char *where, tfg_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* run() of one fetch stands for that tensor
 * (spec §8.3 "run: fetches, feeds and steps"). */
static void
one_fetch(CVal *v)
{
	if (v->kind == CV_LIST && v->n == 1) {
		RtTensor *t = v->list[0];
		if (v->own)
			free(v->list);
		v->kind = CV_TENSOR, v->t = t;
		v->list = NULL, v->n = 0;
	}
}

/* Records a failure at `where` in the step's error detail. */
static tfg_status
fail(Sess *ss, const char *where, tfg_status code, const char *fmt, ...)
{
	va_list ap;

	ss->where = where;
	ss->err.code = code;
	va_start(ap, fmt);
	vsnprintf(ss->err.msg, sizeof ss->err.msg, fmt, ap);
	va_end(ap);
	return code;
}

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

/* RtCtx.tick of the session's steps: output or heartbeat while a step
 * waits. */
static void
tick(RtCtx *c)
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

/* -------------------------------------------------------- expressions */

static tfg_status eval(Sess *ss, const RtExpr *x, CVal *v);

static int
is_float(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

static double
get_f(const RtTensor *t)
{
	switch (t->dtype) {
	case TFG_BOOL: return *(const uint8_t *)t->data;
	case TFG_U8: return *(const uint8_t *)t->data;
	case TFG_I32: return *(const int32_t *)t->data;
	case TFG_I64: return (double)*(const int64_t *)t->data;
	case TFG_F32: return *(const float *)t->data;
	default: return *(const double *)t->data;
	}
}

static int64_t
get_i(const RtTensor *t)
{
	switch (t->dtype) {
	case TFG_BOOL: return *(const uint8_t *)t->data;
	case TFG_U8: return *(const uint8_t *)t->data;
	case TFG_I32: return *(const int32_t *)t->data;
	case TFG_I64: return *(const int64_t *)t->data;
	case TFG_F32: return (int64_t)*(const float *)t->data;
	default: return (int64_t)*(const double *)t->data;
	}
}

static tfg_status
scalar_new(RtTensor **out, TfgDtype t, int64_t i, double f)
{
	TfgShape s = {0, {0}};
	tfg_status st;

	if ((st = rt_tensor_new(out, t, &s)) != TFG_OK)
		return st;
	switch (t) {
	case TFG_BOOL: *(uint8_t *)(*out)->data = i != 0; break;
	case TFG_U8: *(uint8_t *)(*out)->data = (uint8_t)i; break;
	case TFG_I32: *(int32_t *)(*out)->data = (int32_t)(uint32_t)i; break;
	case TFG_I64: *(int64_t *)(*out)->data = i; break;
	case TFG_F32: *(float *)(*out)->data = (float)f; break;
	default: *(double *)(*out)->data = f; break;
	}
	return TFG_OK;
}

/* "f32[100]" */
static const char *
type_str(char *buf, size_t n, TfgDtype t, const TfgShape *s)
{
	char sh[128];

	snprintf(buf, n, "%s%s", tfg_dtype_name(t),
		 rt_shape_str(sh, sizeof sh, s));
	return buf;
}

static const char *const op_names[] = {
	[RT_E_NEG] = "-", [RT_E_ADD] = "+", [RT_E_SUB] = "-",
	[RT_E_MUL] = "*", [RT_E_DIV] = "/",
};

/* a + b of two strings: the two joined
 * (spec §8.5 "Session expressions"); they are freed. */
static tfg_status
join(Sess *ss, const RtExpr *x, CVal a[2], CVal *v)
{
	size_t la = strlen(a[0].str), lb = strlen(a[1].str);
	char *s = malloc(la + lb + 1);

	if (s) {
		memcpy(s, a[0].str, la);
		memcpy(s + la, a[1].str, lb + 1);
		v->kind = CV_STR, v->str = s, v->own = 1;
	}
	cval_free(&a[0]);
	cval_free(&a[1]);
	return s ? TFG_OK : fail(ss, x->where, TFG_ENOMEM, "out of memory");
}

/* Scalar arithmetic: ints compute in i64 (wrapping) and floats in f64;
 * the result takes the wider dtype, int with float giving f64.  + of two
 * strings joins them. */
static tfg_status
eval_arith(Sess *ss, const RtExpr *x, CVal *v)
{
	CVal a[2] = {{0}, {0}};
	int n = x->kind == RT_E_NEG ? 1 : 2;
	TfgDtype rt = TFG_I32;
	tfg_status st = TFG_OK;
	char buf[160];

	if (x->nargs != n)
		return fail(ss, x->where, TFG_EINVAL, "malformed arithmetic");
	for (int i = 0; i < n && st == TFG_OK; i++) {
		if ((st = eval(ss, x->args[i], &a[i])) != TFG_OK)
			break;
		one_fetch(&a[i]);
		if (x->kind == RT_E_ADD && a[i].kind == CV_STR)
			continue; /* checked below */
		if (a[i].kind != CV_TENSOR || a[i].t->shape.rank != 0 ||
		    a[i].t->dtype == TFG_BOOL || a[i].t->dtype == TFG_STRING)
			st = fail(ss, x->where, TFG_ESHAPE,
				  "'%s' needs numeric scalars, got %s",
				  op_names[x->kind],
				  a[i].kind != CV_TENSOR ? "a list or string" :
				  type_str(buf, sizeof buf, a[i].t->dtype,
					   &a[i].t->shape));
	}
	if (st == TFG_OK && (a[0].kind == CV_STR || a[1].kind == CV_STR)) {
		if (a[0].kind == CV_STR && a[1].kind == CV_STR)
			return join(ss, x, a, v);
		st = fail(ss, x->where, TFG_EDTYPE, "a string cannot be used "
			  "in arithmetic: '+' joins a string only to a "
			  "string");
	}
	if (st == TFG_OK) {
		TfgDtype t0 = a[0].t->dtype, t1 = n == 2 ? a[1].t->dtype : t0;

		if (is_float(t0) || is_float(t1))
			rt = t0 == TFG_F32 && t1 == TFG_F32 ? TFG_F32 : TFG_F64;
		else
			rt = t0 == TFG_I64 || t1 == TFG_I64 ? TFG_I64
			     : t0 == TFG_I32 || t1 == TFG_I32 ? TFG_I32
							      : TFG_U8;
		if (is_float(rt)) {
			double p = get_f(a[0].t);
			double q = n == 2 ? get_f(a[1].t) : 0;
			double r = x->kind == RT_E_NEG ? -p :
				   x->kind == RT_E_ADD ? p + q :
				   x->kind == RT_E_SUB ? p - q :
				   x->kind == RT_E_MUL ? p * q : p / q;

			if (rt == TFG_F32)
				r = (float)r;
			st = scalar_new(&v->t, rt, 0, r);
		} else {
			int64_t p = get_i(a[0].t);
			int64_t q = n == 2 ? get_i(a[1].t) : 0;
			uint64_t up = (uint64_t)p, uq = (uint64_t)q;
			int64_t r = x->kind == RT_E_NEG ? (int64_t)(0 - up) :
				    x->kind == RT_E_ADD ? (int64_t)(up + uq) :
				    x->kind == RT_E_SUB ? (int64_t)(up - uq) :
				    x->kind == RT_E_MUL ? (int64_t)(up * uq) :
				    tfg_int_div(p, q, rt == TFG_I32 ? 32
							    : 64);

			st = scalar_new(&v->t, rt, r, 0);
		}
		if (st == TFG_OK)
			v->kind = CV_TENSOR, v->own = 1;
		else
			fail(ss, x->where, st, "out of memory");
	}
	cval_free(&a[0]);
	cval_free(&a[1]);
	return st;
}

/* a OP b of session scalars, or of strings (EQ, NE): a bool scalar. */
static tfg_status
eval_compare(Sess *ss, const RtExpr *x, CVal *v)
{
	static const char *const names[] = {
		[RT_E_EQ] = "==", [RT_E_NE] = "!=", [RT_E_LT] = "<",
		[RT_E_LE] = "<=", [RT_E_GT] = ">", [RT_E_GE] = ">=",
	};
	CVal a[2] = {{0}, {0}};
	tfg_status st = TFG_OK;
	int r = 0, strs;
	char buf[160];

	for (int i = 0; i < 2 && st == TFG_OK; i++)
		if ((st = eval(ss, x->args[i], &a[i])) == TFG_OK)
			one_fetch(&a[i]);
	strs = a[0].kind == CV_STR || a[1].kind == CV_STR;
	for (int i = 0; i < 2 && st == TFG_OK && !strs; i++)
		if (a[i].kind != CV_TENSOR || a[i].t->shape.rank != 0 ||
		    a[i].t->dtype == TFG_STRING)
			st = fail(ss, x->where, TFG_ESHAPE,
				  "'%s' needs scalars, got %s",
				  names[x->kind], a[i].kind != CV_TENSOR
				  ? "a list" : type_str(buf, sizeof buf,
							a[i].t->dtype,
							&a[i].t->shape));
	if (st == TFG_OK && strs) {
		if (a[0].kind != CV_STR || a[1].kind != CV_STR)
			st = fail(ss, x->where, TFG_EDTYPE, "'%s' of a string "
				  "and something else", names[x->kind]);
		else
			r = (strcmp(a[0].str, a[1].str) == 0) ==
			    (x->kind == RT_E_EQ);
	} else if (st == TFG_OK) {
		int fl = is_float(a[0].t->dtype) || is_float(a[1].t->dtype);
		double p = get_f(a[0].t), q = get_f(a[1].t);
		int64_t i = get_i(a[0].t), j = get_i(a[1].t);
		int c = fl ? (p < q ? -1 : p > q ? 1 : p == q ? 0 : 2)
			   : (i < j ? -1 : i > j ? 1 : 0);

		switch (x->kind) {
		case RT_E_EQ: r = c == 0; break;
		case RT_E_NE: r = c != 0; break;
		case RT_E_LT: r = c == -1; break;
		case RT_E_LE: r = c == -1 || c == 0; break;
		case RT_E_GT: r = c == 1; break;
		default: r = c == 1 || c == 0; break;
		}
	}
	cval_free(&a[0]);
	cval_free(&a[1]);
	if (st != TFG_OK)
		return st;
	if ((st = scalar_new(&v->t, TFG_BOOL, r, r)) != TFG_OK)
		return fail(ss, x->where, st, "out of memory");
	v->kind = CV_TENSOR, v->own = 1;
	return TFG_OK;
}

/* len(x): a list's length, a tensor's first dim. */
/* exists(path): whether something is at path (relative to the task's
 * working directory, as load's). */
static tfg_status
eval_exists(Sess *ss, const RtExpr *x, CVal *v)
{
	CVal a;
	tfg_status st;
	struct stat sb;
	int there;

	if ((st = eval(ss, x->args[0], &a)) != TFG_OK)
		return st;
	if (a.kind != CV_STR) {
		cval_free(&a);
		return fail(ss, x->where, TFG_EINVAL, "exists() takes one "
			    "string: a path");
	}
	there = stat(a.str, &sb) == 0;
	cval_free(&a);
	if ((st = scalar_new(&v->t, TFG_BOOL, there, there)) != TFG_OK)
		return fail(ss, x->where, st, "out of memory");
	v->kind = CV_TENSOR, v->own = 1;
	return TFG_OK;
}

static tfg_status
eval_len(Sess *ss, const RtExpr *x, CVal *v)
{
	CVal a;
	tfg_status st;
	int64_t n = 0;

	if ((st = eval(ss, x->args[0], &a)) != TFG_OK)
		return st;
	one_fetch(&a);
	if (a.kind == CV_LIST)
		n = a.n;
	else if (a.kind == CV_TENSOR && a.t->shape.rank > 0)
		n = a.t->shape.dims[0];
	else if (a.kind == CV_STR)
		n = (int64_t)strlen(a.str);
	else
		st = fail(ss, x->where, TFG_ESHAPE, "len() of a scalar");
	cval_free(&a);
	if (st != TFG_OK)
		return st;
	if ((st = scalar_new(&v->t, TFG_I64, n, 0)) != TFG_OK)
		return fail(ss, x->where, st, "out of memory");
	v->kind = CV_TENSOR, v->own = 1;
	return TFG_OK;
}

/* uninitialized(): the run of x->args[0] says per variable whether it
 * has a value; the names of those that do not, as a 1-D string tensor
 * (spec §8.9 "Variables in a session"). */
static tfg_status
eval_uninit(Sess *ss, const RtExpr *x, CVal *v)
{
	const char **names;
	size_t *len, nbytes;
	int64_t n = 0;
	CVal r;
	tfg_status st;
	TfgShape s = {1, {0}};

	if ((st = eval(ss, x->args[0], &r)) != TFG_OK)
		return st;
	names = calloc((size_t)r.n + 1, sizeof *names);
	len = calloc((size_t)r.n + 1, sizeof *len);
	if (!names || !len) {
		st = fail(ss, x->where, TFG_ENOMEM, "out of memory");
		goto out;
	}
	nbytes = (size_t)r.n * TFG_STRING_RECORD;
	for (int i = 0; i < r.n; i++)
		if (r.list[i]->dtype == TFG_BOOL &&
		    *(const uint8_t *)r.list[i]->data == 0) {
			names[n] = x->names[i];
			len[n] = strlen(x->names[i]);
			nbytes += len[n++];
		}
	s.dims[0] = n;
	if ((st = rt_tensor_new_nbytes(&v->t, TFG_STRING, &s,
				       n * TFG_STRING_RECORD +
				       (nbytes - (size_t)r.n *
					TFG_STRING_RECORD))) != TFG_OK) {
		st = fail(ss, x->where, st, "out of memory");
		goto out;
	}
	{
		unsigned char *b = v->t->data;
		size_t off = (size_t)n * TFG_STRING_RECORD;

		for (int64_t i = 0; i < n; i++) {
			for (int k = 0; k < 8; k++) {
				b[16 * i + k] = (unsigned char)(off >> 8 * k);
				b[16 * i + 8 + k] =
				    (unsigned char)(len[i] >> 8 * k);
			}
			memcpy(b + off, names[i], len[i]);
			off += len[i];
		}
	}
	v->kind = CV_TENSOR, v->own = 1;
out:
	free(names);
	free(len);
	cval_free(&r);
	return st;
}

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
		return fail(ss, where, st, "out of memory");
	type_str(want, sizeof want, f->dtype, &f->shape);
	type_str(got, sizeof got, v->t->dtype, &v->t->shape);
	if (st == TFG_EDTYPE)
		return fail(ss, where, st, "feed '%s' expects %s, got %s",
			    f->name, want, got);
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
			return fail(ss, where, TFG_EDTYPE, "feed '%s' expects "
				    "%s: the %s fed is %s, %s", f->name, want,
				    got, val, why);
		return fail(ss, where, TFG_EDTYPE, "feed '%s' expects %s: the "
			    "%s fed has %s at %s, %s", f->name, want, got,
			    val, index_str(at, sizeof at, &v->t->shape, bad),
			    why);
	}
	if (slot) {
		rt_tensor_free(slot->conv);
		slot->conv = v->t = t;
		return TFG_OK;
	}
	cval_free(v);
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

static tfg_status
check_feeds(Sess *ss, const RtExpr *x, const RtSig *sig, CVal *args)
{
	char want[160], got[160];
	tfg_status st;

	for (int i = 0; i < sig->nfeed; i++) {
		const RtFeed *f = &sig->feeds[i];
		const char *where = x->args[i] ? x->args[i]->where
					       : x->where;

		one_fetch(&args[i]);
		if (args[i].kind != CV_TENSOR)
			return fail(ss, where, TFG_EDTYPE,
				    "feed '%s' expects %s, got %s", f->name,
				    type_str(want, sizeof want, f->dtype,
					     &f->shape),
				    args[i].kind == CV_STR ? "a string" :
				    "a list of values");
		if (!shape_fits(&args[i].t->shape, &f->shape))
			return fail(ss, where, TFG_ESHAPE,
				    "feed '%s' expects %s, got %s", f->name,
				    type_str(want, sizeof want, f->dtype,
					     &f->shape),
				    type_str(got, sizeof got, args[i].t->dtype,
					     &args[i].t->shape));
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
step_abort(RtCtx *c, const RtSig *sig, int n)
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
step_starts(RtCtx *c, int sigi, CVal *args, int *n)
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
			    (st = tfg_rt_send(c, sig->feeds[j].key,
					      args[j].t->data)))
				return st;
		}
	}
	return TFG_OK;
}

/* The rest of step c once its STARTs are out: feeds for this task, the
 * own part, the fetches and the DONEs. */
static tfg_status
step_finish(Sess *ss, RtCtx *c, int sigi, const RtPart *parts,
	    RtArenas *spare, CVal *args, RtTensor **fetch)
{
	RtProc *p = c->proc;
	const TfgPlan *plan = c->plan;
	const RtSig *sig = &plan->sigs[sigi];
	tfg_status st;

	/* Feeds for this task itself, or (malformed plans) for a task
	 * without a part, go the ordinary way. */
	for (int i = 0; i < sig->nfeed; i++) {
		const RtEdge *e = &plan->edges[sig->feeds[i].key];
		int with_part = 0;

		for (int j = 0; j < sig->ntask; j++)
			with_part |= sig->tasks[j] == e->dst &&
				     e->dst != p->task && e->src == p->task;
		if (!with_part &&
		    (st = tfg_rt_send(c, sig->feeds[i].key, args[i].t->data)))
			return st;
	}
	if (parts && parts[sigi].fn &&
	    (st = rt_run_part(ss->srv, c, &parts[sigi], &spare[sigi])))
		return st;
	for (int i = 0; i < sig->nfetch; i++)
		if ((st = tfg_rt_recv(c, sig->fetches[i].key, fetch[i]->data)))
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
	RtCtx c;
	tfg_status st;
	int nstart = 0;
	double t0 = rt_tracing ? rt_trace_clock() : 0;

	rt_ctx_init(&c, ss->p);
	rt_vars_attach(ss->srv, &c);
	c.tick = tick;
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

static tfg_status save_due(Sess *ss);

/* run(...) x, with given[] (when not NULL) as the values of its feeds
 * rather than its arguments' (restore: read from files), taken. */
static tfg_status
run_with(Sess *ss, const RtExpr *x, CVal *given, CVal *v)
{
	RtProc *p = ss->p;
	const RtSig *sig;
	CVal *args;
	RtTensor **fetch;
	tfg_status st = TFG_OK;
	RtUse u;

	rt_spec_use(ss->srv, p->plan->hash, &u);
	if (x->sig < 0 || x->sig >= p->plan->nsig)
		return fail(ss, x->where, TFG_EINVAL,
			    "run of an unknown signature");
	sig = &p->plan->sigs[x->sig];
	if (x->nargs < sig->nfeed || sig->client != p->task) {
		return fail(ss, x->where, TFG_EINVAL,
			    "malformed run: %d feeds for %d, or driven from "
			    "%s", x->nargs, sig->nfeed,
			    p->plan->tasks[sig->client].name);
	}
	args = calloc((size_t)sig->nfeed + 1, sizeof *args);
	fetch = calloc((size_t)sig->nfetch + 1, sizeof *fetch);
	if (!args || !fetch) {
		free(args);
		free(fetch);
		return fail(ss, x->where, TFG_ENOMEM, "out of memory");
	}
	for (int i = 0; i < sig->nfeed && st == TFG_OK; i++)
		if (given)
			args[i] = given[i], memset(&given[i], 0, sizeof *given);
		else
			st = eval(ss, x->args[i], &args[i]);
	/* Values fed to inputs the fetches do not need are computed all the
	   same, so that their errors show
	   (spec §8.3 "run: fetches, feeds and steps"), then dropped. */
	for (int i = sig->nfeed; !given && i < x->nargs && st == TFG_OK; i++) {
		CVal extra;
		st = eval(ss, x->args[i], &extra);
		cval_free(&extra);
	}
	if (st == TFG_OK)
		st = check_feeds(ss, x, sig, args);
	/* A generic plan runs the specialisation for these shapes. */
	if (st == TFG_OK && p->plan->generic) {
		TfgShape *shapes = calloc((size_t)sig->nfeed + 1,
					  sizeof *shapes);

		if (shapes == NULL) {
			st = fail(ss, x->where, TFG_ENOMEM, "out of memory");
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
			fail(ss, x->where, st, "out of memory for a fetch");
	}
	if (st == TFG_OK && (st = step(ss, x->sig, &u, args, fetch)))
		ss->where = x->where;
	rt_spec_unuse(ss->srv, &u);
	if (st == TFG_OK)
		st = save_due(ss);
	for (int i = 0; i < sig->nfeed; i++)
		cval_free(&args[i]);
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

static tfg_status
eval_run(Sess *ss, const RtExpr *x, CVal *v)
{
	return run_with(ss, x, NULL, v);
}

/* load(path): path is any session string (spec §8.4 "load"). */
static tfg_status
eval_load(Sess *ss, const RtExpr *x, CVal *v)
{
	tfg_status st;
	char buf[160];
	TfgError e;
	CVal p;

	if (x->nargs != 1)
		return fail(ss, x->where, TFG_EINVAL, "malformed load");
	if ((st = eval(ss, x->args[0], &p)) != TFG_OK)
		return st;
	one_fetch(&p);
	if (p.kind != CV_STR)
		st = fail(ss, x->args[0]->where, TFG_EDTYPE, "load() takes a "
			  "string, the path of a .npy or IDX file, got %s",
			  p.kind == CV_TENSOR ? type_str(buf, sizeof buf,
							 p.t->dtype,
							 &p.t->shape)
					      : "a list of values");
	else if ((st = rt_load(&v->t, p.str, &e)) != TFG_OK)
		fail(ss, x->where, e.code, "%s", e.msg);
	else
		v->kind = CV_TENSOR, v->own = 1;
	cval_free(&p);
	return st;
}


static tfg_status
eval(Sess *ss, const RtExpr *x, CVal *v)
{
	memset(v, 0, sizeof *v);
	switch (x->kind) {
	case RT_E_CONST:
		v->kind = CV_TENSOR, v->t = x->value;
		return TFG_OK;
	case RT_E_STR:
		v->kind = CV_STR, v->str = x->str;
		return TFG_OK;
	case RT_E_VAR:
		if (x->slot < 0 || x->slot >= ss->s->nslot ||
		    ss->vals[x->slot].kind == CV_NONE)
			return fail(ss, x->where, TFG_EINVAL,
				    "a local without a value");
		*v = cval_borrow(&ss->vals[x->slot]);
		return TFG_OK;
	case RT_E_LOAD:
		return eval_load(ss, x, v);
	case RT_E_RUN:
		return eval_run(ss, x, v);
	case RT_E_NEG:
	case RT_E_ADD:
	case RT_E_SUB:
	case RT_E_MUL:
	case RT_E_DIV:
		return eval_arith(ss, x, v);
	case RT_E_EQ:
	case RT_E_NE:
	case RT_E_LT:
	case RT_E_LE:
	case RT_E_GT:
	case RT_E_GE:
		return eval_compare(ss, x, v);
	case RT_E_LEN:
		return eval_len(ss, x, v);
	case RT_E_EXISTS:
		return eval_exists(ss, x, v);
	case RT_E_UNINIT:
		return eval_uninit(ss, x, v);
	case RT_E_NOW: {
		struct timespec ts;
		tfg_status st;

		clock_gettime(CLOCK_REALTIME, &ts);
		st = scalar_new(&v->t, TFG_F64, 0,
				(double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
		if (st != TFG_OK)
			return fail(ss, x->where, st, "out of memory");
		v->kind = CV_TENSOR, v->own = 1;
		return TFG_OK;
	}
	}
	return fail(ss, x->where, TFG_EINVAL, "bad expression");
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
		       fail(ss, where, TFG_ENOMEM, "out of memory") : TFG_OK;
	for (int i = 0; i < (v->kind == CV_LIST ? v->n : 1); i++) {
		const RtTensor *t = v->kind == CV_LIST ? v->list[i] : v->t;

		if ((s = rt_format_str(t)) == NULL)
			bad = 1;
		else if ((i && out_put(c, " ", 1)) || out_put(c, s, strlen(s)))
			bad = 1;
		free(s);
		if (bad)
			return fail(ss, where, TFG_ENOMEM, "out of memory");
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
		return fail(ss, st->where, TFG_ENOMEM, "out of memory");
	for (; n < st->nexpr && rv == TFG_OK; n++)
		rv = eval(ss, st->exprs[n], &v[n]);
	for (int i = 0; i < n && rv == TFG_OK; i++) {
		if (i && out_put(c, " ", 1))
			rv = fail(ss, st->where, TFG_ENOMEM, "out of memory");
		if (rv == TFG_OK)
			rv = append_value(ss, &v[i], st->exprs[i]->where);
	}
	for (int i = 0; i < n; i++)
		cval_free(&v[i]);
	free(v);
	if (rv != TFG_OK)
		return rv;
	if (out_put(c, "\n", 1))
		return fail(ss, st->where, TFG_ENOMEM, "out of memory");
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

	if ((st = eval(ss, x, &v)) != TFG_OK)
		return st;
	one_fetch(&v);
	if (v.kind != CV_TENSOR || v.t->shape.rank != 0 ||
	    is_float(v.t->dtype) || v.t->dtype == TFG_BOOL ||
	    v.t->dtype == TFG_STRING) {
		cval_free(&v);
		return fail(ss, x->where, TFG_EDTYPE,
			    "%s must be an integer scalar", what);
	}
	*out = get_i(v.t);
	cval_free(&v);
	return TFG_OK;
}

static tfg_status
exec_for(Sess *ss, const RtStmt *st)
{
	int64_t lo, hi;
	tfg_status rv;

	if (st->nexpr != 2 || st->slot < 0 || st->slot >= ss->s->nslot)
		return fail(ss, st->where, TFG_EINVAL,
			    "malformed for statement");
	if ((rv = int_scalar(ss, st->exprs[0], "a loop bound", &lo)) ||
	    (rv = int_scalar(ss, st->exprs[1], "a loop bound", &hi)))
		return rv;
	rt_track_push(&ss->track, hi > lo ? hi - lo : 0, -1);
	for (int64_t i = lo; i < hi && rv == TFG_OK; i++) {
		if (rt_stop_requested) {
			rv = fail(ss, st->where, TFG_ECANCELED,
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

	if ((st = eval(ss, x, v)) != TFG_OK)
		return st;
	one_fetch(v);
	if (v->kind == CV_TENSOR && v->t->shape.rank == 0 &&
	    v->t->dtype != TFG_BOOL && v->t->dtype != TFG_STRING &&
	    !(integer && is_float(v->t->dtype)))
		return TFG_OK;
	st = fail(ss, x->where, TFG_EDTYPE, "%s(): %s= takes %s, got %s", fn,
		  name, integer ? "an integer" : "a number",
		  v->kind == CV_STR ? "a string" :
		  v->kind != CV_TENSOR ? "a list of values" :
		  type_str(buf, sizeof buf, v->t->dtype, &v->t->shape));
	cval_free(v);
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
		return fail(ss, st->where, TFG_ENOMEM, "out of memory");
	}
	if (st->exprs[0] && (rv = eval_number(ss, st->exprs[0], "progress",
					      "step", 1, &v)) == TFG_OK) {
		step = get_i(v.t);
		cval_free(&v);
	}
	for (int i = 0; i < n && rv == TFG_OK; i++) {
		if ((rv = eval_number(ss, st->exprs[i + 1], "progress",
				      st->paths[i + 1], 0, &v)) != TFG_OK)
			break;
		isint[i] = !is_float(v.t->dtype);
		val[i] = get_f(v.t);
		cval_free(&v);
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
		return fail(ss, st->where, TFG_EINVAL, "malformed record");
	if (!cells)
		return fail(ss, st->where, TFG_ENOMEM, "out of memory");
	for (int i = 0; i < st->nexpr && rv == TFG_OK; i++) {
		char num[32], **cell = &cells[st->cols[i]];

		if ((rv = eval_number(ss, st->exprs[i], "record",
				      f->cols[st->cols[i]], 0, &v)) != TFG_OK)
			break;
		if (is_float(v.t->dtype)) {
			*cell = rt_format_str(v.t);
		} else {
			snprintf(num, sizeof num, "%lld",
				 (long long)get_i(v.t));
			*cell = strdup(num);
		}
		cval_free(&v);
		if (!*cell)
			rv = fail(ss, st->where, TFG_ENOMEM, "out of memory");
	}
	if (rv == TFG_OK &&
	    (rv = rt_csv_row(&ss->csv[st->slot], f, cells,
			     rt_now() - ss->start, &e)) != TFG_OK)
		rv = fail(ss, st->where, rv, "%s", e.msg);
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

	if ((st = eval(ss, x, v)) != TFG_OK)
		return st;
	one_fetch(v);
	if (v->kind == CV_TENSOR && v->t->shape.rank > 0 &&
	    v->t->dtype != TFG_STRING)
		return TFG_OK;
	st = fail(ss, x->where, TFG_ESHAPE, "batches() takes arrays with rows "
		  "(of rank 1 or more, not strings), but %s is %s", what,
		  v->kind == CV_STR ? "a string" :
		  v->kind != CV_TENSOR ? "a list of values" :
		  type_str(buf, sizeof buf, v->t->dtype, &v->t->shape));
	cval_free(v);
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
	if ((st = eval(ss, x, &v)) != TFG_OK)
		return st;
	one_fetch(&v);
	if (v.kind == CV_TENSOR && v.t->shape.rank == 0 &&
	    (isbool ? v.t->dtype == TFG_BOOL
		    : !is_float(v.t->dtype) && v.t->dtype != TFG_BOOL &&
		      v.t->dtype != TFG_STRING)) {
		*out = get_i(v.t);
		cval_free(&v);
		return TFG_OK;
	}
	st = fail(ss, x->where, TFG_EDTYPE, "batches(): %s must be %s, got %s",
		  what, isbool ? "true or false" : "an integer scalar",
		  v.kind == CV_STR ? "a string" :
		  v.kind != CV_TENSOR ? "a list of values" :
		  type_str(buf, sizeof buf, v.t->dtype, &v.t->shape));
	cval_free(&v);
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
		return fail(ss, st->exprs[1]->where, TFG_ESHAPE, "batches() "
			    "takes arrays of as many rows, but they are %s "
			    "and %s", type_str(s0, sizeof s0, v[0].t->dtype,
					       &v[0].t->shape),
			    type_str(s1, sizeof s1, v[1].t->dtype,
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
		return fail(ss, st->exprs[2]->where, TFG_EINVAL, "batches(): "
			    "the batch size must be 1 or more, got %lld",
			    (long long)arg->size);
	if (arg->of < 1)
		return fail(ss, st->exprs[5]->where, TFG_EINVAL, "batches(): "
			    "of= must be 1 or more, got %lld",
			    (long long)arg->of);
	if (arg->shard < 0 || arg->shard >= arg->of)
		return fail(ss, st->exprs[4]->where, TFG_EINVAL, "batches(): "
			    "shard=%lld is not one of the %lld shards 0 to %lld",
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
		if ((st = scalar_new(&slot->t, TFG_I64, i, 0)) != TFG_OK)
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
		return fail(ss, st->where, TFG_EINVAL,
			    "malformed batches loop");
	if ((rv = batch_args(ss, st, v, &arg)) == TFG_OK &&
	    (rv = rt_batches_begin(&bt, v[0].t, v[1].kind ? v[1].t : NULL,
				   &arg, &ss->err)) != TFG_OK)
		ss->where = st->where;
	if (rv == TFG_OK && (batch_slot(&b[3], bt.count) ||
			     batch_slot(&b[2], 0) ||
			     batch_slot(&b[4], 0)))
		rv = fail(ss, st->where, TFG_ENOMEM, "out of memory");
	rt_track_push(&ss->track, bt.count, 0);
	for (int64_t i = 0; rv == TFG_OK && i < bt.count; i++) {
		if (rt_stop_requested) {
			rv = fail(ss, st->where, TFG_ECANCELED, "interrupted");
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
		cval_free(&b[k]); /* x and y are borrowed: the loop's */
	rt_batches_end(&bt);
	cval_free(&v[0]);
	cval_free(&v[1]);
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
		return fail(ss, st->where, TFG_EINVAL, "malformed save");
	if ((rv = eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	for (int i = 0; i < v.n && rv == TFG_OK; i++)
		if ((rv = rt_npy_save(st->paths[i], v.list[i], &e)) != TFG_OK)
			rv = fail(ss, st->where, rv, "%s", e.msg);
	cval_free(&v);
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
		return fail(ss, st->where, TFG_EINVAL, "malformed let");
	if ((rv = eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	one_fetch(&v);
	if (cval_own(&v) != 0)
		return fail(ss, st->where, TFG_ENOMEM, "out of memory");
	v.let = v.kind == CV_TENSOR;
	cval_free(&ss->vals[st->slot]);
	ss->vals[st->slot] = v;
	return TFG_OK;
}

static tfg_status
exec_if(Sess *ss, const RtStmt *st)
{
	CVal v;
	tfg_status rv;
	int yes;

	if ((rv = eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	one_fetch(&v);
	if (v.kind != CV_TENSOR || v.t->shape.rank != 0 ||
	    v.t->dtype != TFG_BOOL) {
		cval_free(&v);
		return fail(ss, st->exprs[0]->where, TFG_EDTYPE,
			    "a condition must be a bool scalar (a "
			    "comparison)");
	}
	yes = *(const uint8_t *)v.t->data != 0;
	cval_free(&v);
	return yes ? exec_stmts(ss, st->body, st->nbody)
		   : exec_stmts(ss, st->else_, st->nelse);
}

/* A number of seconds or milliseconds (scale) from a session scalar. */
static tfg_status
seconds(Sess *ss, const RtExpr *x, double scale, double *out)
{
	CVal v;
	tfg_status st;

	if ((st = eval(ss, x, &v)) != TFG_OK)
		return st;
	one_fetch(&v);
	if (v.kind != CV_TENSOR || v.t->shape.rank != 0 ||
	    v.t->dtype == TFG_BOOL || v.t->dtype == TFG_STRING ||
	    !(get_f(v.t) >= 0) || get_f(v.t) * scale > 86400) {
		cval_free(&v);
		return fail(ss, x->where, TFG_EINVAL, "a time must be a "
			    "number from 0 to a day");
	}
	*out = get_f(v.t) * scale;
	cval_free(&v);
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
			return fail(ss, where, TFG_ECANCELED, "interrupted");
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
		if ((rv = eval(ss, st->exprs[0], &v)) != TFG_OK)
			return rv;
		if (v.t->shape.dims[0] == 0) {
			cval_free(&v);
			return TFG_OK;
		}
		if (rt_now() >= deadline) {
			char *s = rt_format_str(v.t);

			rv = fail(ss, st->where, TFG_ETIMEDOUT, "variables "
				  "still not initialized after %g s: %s",
				  limit, s ? s : "?");
			free(s);
			cval_free(&v);
			return rv;
		}
		cval_free(&v);
		if ((rv = nap(ss, st->where, pause)) != TFG_OK)
			return rv;
		pause = pause * 2 < 0.1 ? pause * 2 : 0.1;
	}
}

static tfg_status exec_checkpoint(Sess *ss, const RtStmt *st);

/* After a step: the save of save_every() when it is due (spec §8.11 "save and restore"). */
static tfg_status
save_due(Sess *ss)
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
		return fail(ss, st->where, TFG_EINVAL, "save_every() needs "
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

	if ((rv = eval(ss, st->exprs[0], &v)) != TFG_OK)
		return rv;
	if (v.kind != CV_LIST || v.n != plan->nvar)
		rv = fail(ss, st->where, TFG_EINVAL, "malformed save");
	else if ((rv = rt_ckpt_save(plan, st->paths[0], v.list, &e)))
		rv = fail(ss, st->where, rv, "%s", e.msg);
	cval_free(&v);
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
	TfgError e;

	if (!val || !given) {
		free(val);
		free(given);
		return fail(ss, st->where, TFG_ENOMEM, "out of memory");
	}
	if ((rv = rt_ckpt_load(plan, st->paths[0], val, &e)) != TFG_OK) {
		rv = fail(ss, st->where, rv, "%s", e.msg);
	} else {
		for (int i = 0; i < plan->nvar; i++) {
			given[i].kind = CV_TENSOR;
			given[i].t = val[i];
			given[i].own = 1;
		}
		if ((rv = run_with(ss, st->exprs[0], given, &v)) == TFG_OK)
			cval_free(&v);
	}
	for (int i = 0; i < plan->nvar; i++)
		cval_free(&given[i]); /* what run_with did not take */
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
			if ((rv = eval(ss, st->exprs[0], &v)) == TFG_OK)
				cval_free(&v);
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
		cval_free(&ss.vals[i]);
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
	if (rt_send_text(p, url, RT_MSG_SESSION_END, 0, (uint32_t)session,
			 text, (size_t)n, &e) != TFG_OK)
		fprintf(stderr, "tfgc: error: %s: %s\n", p->name, e.msg);
	return rv;
}
