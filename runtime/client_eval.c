/*
 * runtime/client_eval.c: the values of a session program (CVal) and the
 * expressions that compute them: scalar arithmetic and comparisons,
 * strings, load(), len(), exists(), now() and uninitialized().
 *
 * A value is a tensor, a list of tensors (a run's fetches) or a string,
 * owned or borrowed.  It is apart from the statements (client.c) and the
 * steps (client_run.c) because an expression only makes a value: it
 * prints nothing and changes no state of the session, save through the
 * run(...) it hands to client_run.c (rt_sess_eval_run).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/client_int.h"

void
rt_cval_free(CVal *v)
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
int
rt_cval_own(CVal *v)
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
				rt_cval_free(&c);
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

/* run() of one fetch stands for that tensor
 * (spec §8.3 "run: fetches, feeds and steps"). */
void
rt_sess_one_fetch(CVal *v)
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
tfg_status
rt_sess_fail(Sess *ss, const char *where, tfg_status code, const char *fmt,
	     ...)
{
	va_list ap;

	ss->where = where;
	ss->err.code = code;
	va_start(ap, fmt);
	vsnprintf(ss->err.msg, sizeof ss->err.msg, fmt, ap);
	va_end(ap);
	return code;
}

/* -------------------------------------------------------- expressions */

int
rt_sess_is_float(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

double
rt_sess_get_f(const RtTensor *t)
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

int64_t
rt_sess_get_i(const RtTensor *t)
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

tfg_status
rt_sess_scalar_new(RtTensor **out, TfgDtype t, int64_t i, double f)
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
const char *
rt_sess_type_str(char *buf, size_t n, TfgDtype t, const TfgShape *s)
{
	char sh[128];

	snprintf(buf, n, "%s%s", tfg_dtype_name(t),
		 rt_shape_str(sh, sizeof sh, s));
	return buf;
}

/* What v is, for an error: "a string", "a list of values", or its
 * tensor's type. */
const char *
rt_cval_what(char *buf, size_t n, const CVal *v)
{
	return v->kind == CV_STR ? "a string"
	     : v->kind != CV_TENSOR ? "a list of values"
	     : rt_sess_type_str(buf, n, v->t->dtype, &v->t->shape);
}

static const char *const op_names[] = {
	[RT_E_NEG] = "-", [RT_E_ADD] = "+", [RT_E_SUB] = "-",
	[RT_E_MUL] = "*", [RT_E_DIV] = "/", [RT_E_MOD] = "%",
};

static tfg_status format_vals(Sess *ss, const RtExpr *x, CVal a[2],
			      int printf_style, CVal *v);

/* NumPy's floating remainder (spec §6.3 "Division and remainder"):
 * fmod, moved to b's sign. */
static double
float_mod(double a, double b)
{
	double r = fmod(a, b);

	if (r != 0 && (r < 0) != (b < 0))
		r += b;
	else if (r == 0)
		r = copysign(0.0, b);
	return r;
}

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
	rt_cval_free(&a[0]);
	rt_cval_free(&a[1]);
	return s ? TFG_OK : rt_sess_fail(ss, x->where, TFG_ENOMEM,
					 "out of memory");
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
		return rt_sess_fail(ss, x->where, TFG_EINVAL,
				    "malformed arithmetic");
	for (int i = 0; i < n && st == TFG_OK; i++) {
		if ((st = rt_sess_eval(ss, x->args[i], &a[i])) != TFG_OK)
			break;
		rt_sess_one_fetch(&a[i]);
		if (x->kind == RT_E_ADD && a[i].kind == CV_STR)
			continue; /* checked below */
		/* a let's string % a value: Python's formatting */
		if (x->kind == RT_E_MOD && a[0].kind == CV_STR)
			continue;
		if (a[i].kind != CV_TENSOR || a[i].t->shape.rank != 0 ||
		    a[i].t->dtype == TFG_BOOL || a[i].t->dtype == TFG_STRING)
			st = rt_sess_fail(ss, x->where, TFG_ESHAPE,
					  "'%s' needs numeric scalars, got %s",
					  op_names[x->kind],
					  a[i].kind != CV_TENSOR ?
					  "a list or string" :
					  rt_sess_type_str(buf, sizeof buf,
							   a[i].t->dtype,
							   &a[i].t->shape));
	}
	if (st == TFG_OK && x->kind == RT_E_MOD && a[0].kind == CV_STR)
		return format_vals(ss, x, a, 1, v);
	if (st == TFG_OK && (a[0].kind == CV_STR || a[1].kind == CV_STR)) {
		if (a[0].kind == CV_STR && a[1].kind == CV_STR)
			return join(ss, x, a, v);
		st = rt_sess_fail(ss, x->where, TFG_EDTYPE,
				  "a string cannot be used "
				  "in arithmetic: '+' joins a string only to a "
				  "string");
	}
	if (st == TFG_OK) {
		TfgDtype t0 = a[0].t->dtype, t1 = n == 2 ? a[1].t->dtype : t0;

		if (rt_sess_is_float(t0) || rt_sess_is_float(t1))
			rt = t0 == TFG_F32 && t1 == TFG_F32 ? TFG_F32 : TFG_F64;
		else
			rt = t0 == TFG_I64 || t1 == TFG_I64 ? TFG_I64
			     : t0 == TFG_I32 || t1 == TFG_I32 ? TFG_I32
							      : TFG_U8;
		if (rt_sess_is_float(rt)) {
			double p = rt_sess_get_f(a[0].t);
			double q = n == 2 ? rt_sess_get_f(a[1].t) : 0;
			double r = x->kind == RT_E_NEG ? -p :
				   x->kind == RT_E_ADD ? p + q :
				   x->kind == RT_E_SUB ? p - q :
				   x->kind == RT_E_MUL ? p * q :
				   x->kind == RT_E_MOD ? float_mod(p, q) : p / q;

			if (rt == TFG_F32)
				r = (float)r;
			st = rt_sess_scalar_new(&v->t, rt, 0, r);
		} else {
			int64_t p = rt_sess_get_i(a[0].t);
			int64_t q = n == 2 ? rt_sess_get_i(a[1].t) : 0;
			uint64_t up = (uint64_t)p, uq = (uint64_t)q;
			int64_t r = x->kind == RT_E_NEG ? (int64_t)(0 - up) :
				    x->kind == RT_E_ADD ? (int64_t)(up + uq) :
				    x->kind == RT_E_SUB ? (int64_t)(up - uq) :
				    x->kind == RT_E_MUL ? (int64_t)(up * uq) :
				    x->kind == RT_E_MOD ?
				    tfg_int_mod(p, q, rt == TFG_I32 ? 32 : 64) :
				    tfg_int_div(p, q, rt == TFG_I32 ? 32
							    : 64);

			st = rt_sess_scalar_new(&v->t, rt, r, 0);
		}
		if (st == TFG_OK)
			v->kind = CV_TENSOR, v->own = 1;
		else
			rt_sess_fail(ss, x->where, st, "out of memory");
	}
	rt_cval_free(&a[0]);
	rt_cval_free(&a[1]);
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
		if ((st = rt_sess_eval(ss, x->args[i], &a[i])) == TFG_OK)
			rt_sess_one_fetch(&a[i]);
	strs = a[0].kind == CV_STR || a[1].kind == CV_STR;
	for (int i = 0; i < 2 && st == TFG_OK && !strs; i++)
		if (a[i].kind != CV_TENSOR || a[i].t->shape.rank != 0 ||
		    a[i].t->dtype == TFG_STRING)
			st = rt_sess_fail(ss, x->where, TFG_ESHAPE,
					  "'%s' needs scalars, got %s",
					  names[x->kind], a[i].kind != CV_TENSOR
					  ? "a list" :
					  rt_sess_type_str(buf, sizeof buf,
							   a[i].t->dtype,
							   &a[i].t->shape));
	if (st == TFG_OK && strs) {
		if (a[0].kind != CV_STR || a[1].kind != CV_STR)
			st = rt_sess_fail(ss, x->where, TFG_EDTYPE,
					  "'%s' of a string "
					  "and something else", names[x->kind]);
		else
			r = (strcmp(a[0].str, a[1].str) == 0) ==
			    (x->kind == RT_E_EQ);
	} else if (st == TFG_OK) {
		int fl = rt_sess_is_float(a[0].t->dtype) ||
			 rt_sess_is_float(a[1].t->dtype);
		double p = rt_sess_get_f(a[0].t), q = rt_sess_get_f(a[1].t);
		int64_t i = rt_sess_get_i(a[0].t), j = rt_sess_get_i(a[1].t);
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
	rt_cval_free(&a[0]);
	rt_cval_free(&a[1]);
	if (st != TFG_OK)
		return st;
	if ((st = rt_sess_scalar_new(&v->t, TFG_BOOL, r, r)) != TFG_OK)
		return rt_sess_fail(ss, x->where, st, "out of memory");
	v->kind = CV_TENSOR, v->own = 1;
	return TFG_OK;
}

/* exists(path): whether something is at path (relative to the task's
 * working directory, as load's). */
static tfg_status
eval_exists(Sess *ss, const RtExpr *x, CVal *v)
{
	CVal a;
	tfg_status st;
	struct stat sb;
	int there;

	if ((st = rt_sess_eval(ss, x->args[0], &a)) != TFG_OK)
		return st;
	if (a.kind != CV_STR) {
		rt_cval_free(&a);
		return rt_sess_fail(ss, x->where, TFG_EINVAL,
				    "exists() takes one "
				    "string: a path");
	}
	there = stat(a.str, &sb) == 0;
	rt_cval_free(&a);
	if ((st = rt_sess_scalar_new(&v->t, TFG_BOOL, there, there)) != TFG_OK)
		return rt_sess_fail(ss, x->where, st, "out of memory");
	v->kind = CV_TENSOR, v->own = 1;
	return TFG_OK;
}

/* len(x): a list's length, a tensor's first dim. */
static tfg_status
eval_len(Sess *ss, const RtExpr *x, CVal *v)
{
	CVal a;
	tfg_status st;
	int64_t n = 0;

	if ((st = rt_sess_eval(ss, x->args[0], &a)) != TFG_OK)
		return st;
	rt_sess_one_fetch(&a);
	if (a.kind == CV_LIST)
		n = a.n;
	else if (a.kind == CV_TENSOR && a.t->shape.rank > 0)
		n = a.t->shape.dims[0];
	else if (a.kind == CV_STR)
		n = (int64_t)strlen(a.str);
	else
		st = rt_sess_fail(ss, x->where, TFG_ESHAPE,
				  "len() of a scalar");
	rt_cval_free(&a);
	if (st != TFG_OK)
		return st;
	if ((st = rt_sess_scalar_new(&v->t, TFG_I64, n, 0)) != TFG_OK)
		return rt_sess_fail(ss, x->where, st, "out of memory");
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

	if ((st = rt_sess_eval(ss, x->args[0], &r)) != TFG_OK)
		return st;
	names = calloc((size_t)r.n + 1, sizeof *names);
	len = calloc((size_t)r.n + 1, sizeof *len);
	if (!names || !len) {
		st = rt_sess_fail(ss, x->where, TFG_ENOMEM, "out of memory");
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
		st = rt_sess_fail(ss, x->where, st, "out of memory");
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
	rt_cval_free(&r);
	return st;
}

/* load(path), load(path, format="cifar10") (x->str): path is any
 * session string (spec §8.4 "load"). */
static tfg_status
eval_load(Sess *ss, const RtExpr *x, CVal *v)
{
	tfg_status st;
	char buf[160];
	TfgError e;
	CVal p;

	if (x->nargs != 1)
		return rt_sess_fail(ss, x->where, TFG_EINVAL, "malformed load");
	if ((st = rt_sess_eval(ss, x->args[0], &p)) != TFG_OK)
		return st;
	rt_sess_one_fetch(&p);
	if (p.kind != CV_STR)
		st = rt_sess_fail(ss, x->args[0]->where, TFG_EDTYPE,
				  "load() takes a string, the path of a .npy "
				  "or IDX file, got %s",
				  p.kind == CV_TENSOR ?
				  rt_sess_type_str(buf, sizeof buf, p.t->dtype,
						   &p.t->shape) :
				  "a list of values");
	else if ((st = x->str ? rt_cifar10_load(&v->t, p.str, &e)
			      : rt_load(&v->t, p.str, &e)) != TFG_OK)
		rt_sess_fail(ss, x->where, e.code, "%s", e.msg);
	else
		v->kind = CV_TENSOR, v->own = 1;
	rt_cval_free(&p);
	return st;
}

/* args[1] formatted by args[0] (spec §8.5 "Session expressions"): a
 * string. */
static tfg_status
eval_format(Sess *ss, const RtExpr *x, CVal *v)
{
	CVal a[2] = {{0}, {0}};
	tfg_status st = TFG_OK;

	if (x->nargs != 2)
		return rt_sess_fail(ss, x->where, TFG_EINVAL,
				    "malformed format");
	for (int i = 0; i < 2 && st == TFG_OK; i++)
		if ((st = rt_sess_eval(ss, x->args[i], &a[i])) == TFG_OK)
			rt_sess_one_fetch(&a[i]);
	if (st != TFG_OK) {
		rt_cval_free(&a[0]);
		rt_cval_free(&a[1]);
		return st;
	}
	return format_vals(ss, x, a, x->slot == 1, v);
}

/* a[1] formatted by a[0] (printf-style or a format spec) into v; a is
 * freed. */
static tfg_status
format_vals(Sess *ss, const RtExpr *x, CVal a[2], int printf_style,
	    CVal *v)
{
	tfg_status st = TFG_OK;
	char why[300], *s = NULL;

	if (a[0].kind != CV_STR)
		st = rt_sess_fail(ss, x->where, TFG_EDTYPE, "a format is a "
				  "string");
	else if (st == TFG_OK && a[1].kind != CV_STR &&
		 a[1].kind != CV_TENSOR)
		st = rt_sess_fail(ss, x->where, TFG_ESHAPE, "a format takes "
				  "one value, not a list of them");
	else if (st == TFG_OK &&
		 (s = tfg_format_value(a[0].str, printf_style,
				       a[1].kind == CV_TENSOR ? a[1].t : NULL,
				       a[1].kind == CV_STR ? a[1].str : NULL,
				       why, sizeof why)) == NULL)
		st = rt_sess_fail(ss, x->where, TFG_EINVAL, "format '%s': %s",
				  a[0].str, why);
	if (st == TFG_OK)
		v->kind = CV_STR, v->str = s, v->own = 1;
	rt_cval_free(&a[0]);
	rt_cval_free(&a[1]);
	return st;
}

tfg_status
rt_sess_eval(Sess *ss, const RtExpr *x, CVal *v)
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
			return rt_sess_fail(ss, x->where, TFG_EINVAL,
					    "a local without a value");
		*v = cval_borrow(&ss->vals[x->slot]);
		return TFG_OK;
	case RT_E_LOAD:
		return eval_load(ss, x, v);
	case RT_E_RUN:
		return rt_sess_eval_run(ss, x, v);
	case RT_E_NEG:
	case RT_E_ADD:
	case RT_E_SUB:
	case RT_E_MUL:
	case RT_E_DIV:
	case RT_E_MOD:
		return eval_arith(ss, x, v);
	case RT_E_FORMAT:
		return eval_format(ss, x, v);
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
		st = rt_sess_scalar_new(&v->t, TFG_F64, 0,
					(double)ts.tv_sec +
					(double)ts.tv_nsec * 1e-9);
		if (st != TFG_OK)
			return rt_sess_fail(ss, x->where, st, "out of memory");
		v->kind = CV_TENSOR, v->own = 1;
		return TFG_OK;
	}
	}
	return rt_sess_fail(ss, x->where, TFG_EINVAL, "bad expression");
}
