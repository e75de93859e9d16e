/*
 * runtime/client_int.h: what the files of the session client (client.c,
 * client_eval.c, client_run.c) share; the other roles see only
 * rt_client_session (runtime/role.h).  It is a role's header, in the
 * roles' layer (spec/design.md "Runtime layers").
 */
#ifndef TFG_RUNTIME_CLIENT_INT_H
#define TFG_RUNTIME_CLIENT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/role.h"

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
	char *ran;         /* [ntask]: the tasks its steps ran on, which
			      hear LEAVE at its end (client.c) */
} Sess;

/* client.c */
void rt_sess_tick(RtStep *c); /* RtStep.tick of the session's steps */
tfg_status rt_sess_save_due(Sess *ss); /* after a step: save_every() */

/* client_eval.c */
void rt_cval_free(CVal *v);
int rt_cval_own(CVal *v); /* 0, or -1 out of memory (v is then freed) */
void rt_sess_one_fetch(CVal *v); /* run() of one fetch: that tensor */
tfg_status rt_sess_fail(Sess *ss, const char *where, tfg_status code,
			const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
tfg_status rt_sess_eval(Sess *ss, const RtExpr *x, CVal *v);
int rt_sess_is_float(TfgDtype t);
double rt_sess_get_f(const RtTensor *t);  /* a scalar, as f64 */
int64_t rt_sess_get_i(const RtTensor *t); /* a scalar, as i64 */
tfg_status rt_sess_scalar_new(RtTensor **out, TfgDtype t, int64_t i,
			      double f);
const char *rt_sess_type_str(char *buf, size_t n, TfgDtype t,
			     const TfgShape *s); /* "f32[100]" */
/* v for an error: "a string", "a list of values" or its type */
const char *rt_cval_what(char *buf, size_t n, const CVal *v);

/* client_run.c */
tfg_status rt_sess_run_with(Sess *ss, const RtExpr *x, CVal *given,
			    CVal *v);
tfg_status rt_sess_eval_run(Sess *ss, const RtExpr *x, CVal *v);

#endif /* TFG_RUNTIME_CLIENT_INT_H */
