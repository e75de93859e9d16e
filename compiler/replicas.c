/*
 * compiler/replicas.c: `device replicas(ps="/job:ps",
 * worker="/job:worker") { ... }`, TF's replica_device_setter, and
 * between-graph replication (spec §7.6 "Replicas").  Part of the check phase.
 *
 * Inside such a block a variable goes to the ps job, its task chosen
 * round-robin in declaration order; every other node requests the worker
 * job; device blocks inside merge over both as usual.  A value whose
 * device then names the worker job but no task is *replicated*: TF1
 * builds one graph per worker client, and so the program gets one copy
 * of the value per worker task, and so does every value that depends on
 * a replicated one (variables excepted: they are never copied).  The
 * statement that defines it is checked once per copy (check_replicated),
 * with Checker.copy = k: a name then resolves to copy k of a replicated
 * value (check_copy_of), and a node whose device names no task (or the
 * worker job alone) goes to the worker job's task k.  Copy k of x is
 * named x@k.  A session resolves a replicated name to the copy of its
 * own task when it runs on a task of the worker job, else to copy 0.
 */
#include <string.h>

#include "compiler/compiler_int.h"

/* The job that argument kw of replicas(...) names (dflt when absent):
 * a job alone, which the cluster has. */
static int
job_arg(Checker *c, AstNode *call, const char *kw, const char *dflt,
	Device *d, const CJob **job)
{
	AstNode *v = check_kwarg(call, kw);
	const char *str = v ? v->str : dflt, *err;
	SrcLoc loc = v ? v->loc : call->loc;
	int off;

	if (v && v->kind != AST_STRING) {
		diag_error(c->d, ast_extent(v), "replicas(%s=...) takes a "
			   "device string naming a job", kw);
		return -1;
	}
	if (dev_parse(c->a, d, str, &err, &off) < 0) {
		diag_error(c->d, loc, "invalid device string '%s': %s", str,
			   err);
		return -1;
	}
	if (!d->job || d->task >= 0 || d->kind == DEV_GPU ||
	    (d->kind == DEV_CPU && d->index > 0)) {
		diag_error(c->d, loc, "replicas(%s=\"%s\") must name a job "
			   "alone (\"/job:%s\")", kw, str, kw);
		return -1;
	}
	for (int j = 0; j < c->p->njob; j++)
		if (strcmp(c->p->jobs[j].name, d->job) == 0)
			*job = &c->p->jobs[j];
	if (!*job) {
		diag_error(c->d, loc, "replicas(%s=\"%s\") names job '%s', "
			   "which the cluster does not have", kw, str, d->job);
		check_cluster_note(c, NULL);
		return -1;
	}
	return 0;
}

void
check_replicas(Checker *c, AstNode *s, void (*body)(Checker *, AstNode *))
{
	static const char *const kw[] = {"ps", "worker", NULL};
	AstNode *call = s->a;
	Replicas r;

	memset(&r, 0, sizeof r);
	if (strcmp(call->name, "replicas") != 0) {
		diag_error(c->d, call->a->loc, "a device block takes a device "
			   "string or replicas(ps=..., worker=...)");
		return;
	}
	if (c->rep || c->dev.job || c->dev.task >= 0 ||
	    c->dev.kind != DEV_UNSET) {
		diag_error(c->d, call->loc, "a replicas block must be at the "
			   "top level%s", c->rep ? ": they do not nest" : "");
		return;
	}
	if (call->b) {
		diag_error(c->d, call->b->loc, "a feed can only be given to "
			   "run()");
		return;
	}
	if (check_args(c, call, 0, kw) < 0 ||
	    job_arg(c, call, "ps", "/job:ps", &r.ps, &r.psjob) < 0 ||
	    job_arg(c, call, "worker", "/job:worker", &r.worker, &r.wjob) < 0)
		return;
	if (r.psjob == r.wjob) {
		diag_error(c->d, call->loc, "replicas(...) needs two jobs: the "
			   "parameter servers and the workers");
		return;
	}
	c->rep = &r;
	body(c, s);
	c->rep = NULL;
}

Device
check_node_device(Checker *c)
{
	Device d = c->rep ? dev_merge(c->rep->worker, c->dev) : c->dev;

	if (c->copy >= 0 && d.task < 0 &&
	    (!d.job || strcmp(d.job, c->copy_job->name) == 0)) {
		d.job = c->copy_job->name;
		d.task = c->copy;
	}
	return d;
}

const char *
check_node_why(Checker *c)
{
	Device d = c->rep ? dev_merge(c->rep->worker, c->dev) : c->dev;

	if (c->why)
		return c->why;
	if (c->copy >= 0 && d.task < 0 &&
	    (!d.job || strcmp(d.job, c->copy_job->name) == 0))
		return arena_printf(c->a, "replica %d of /job:%s", c->copy,
				    c->copy_job->name);
	if (c->rep && !c->dev.job && c->dev.task < 0 &&
	    c->dev.kind == DEV_UNSET)
		return arena_printf(c->a, "replicas(worker=%s)",
				    dev_str(c->a, c->rep->worker));
	if (c->dev.job || c->dev.task >= 0 || c->dev.kind != DEV_UNSET)
		return arena_printf(c->a, "device %s", dev_str(c->a, d));
	return NULL;
}

const char *
check_var_why(Checker *c)
{
	if (c->rep && (!c->dev.job || strcmp(c->dev.job, c->rep->ps.job) == 0)
	    && c->dev.task < 0)
		return arena_printf(c->a, "round-robin over %s",
				    dev_str(c->a, c->rep->ps));
	if (c->dev.job || c->dev.task >= 0 || c->dev.kind != DEV_UNSET)
		return arena_printf(c->a, "device %s", dev_str(c->a, c->dev));
	return "the default device";
}

Device
check_var_device(Checker *c)
{
	Device base;

	if (!c->rep)
		return c->dev;
	base = c->rep->ps;
	if (!c->dev.job || strcmp(c->dev.job, base.job) == 0)
		base.task = c->rep->rr++ % c->rep->psjob->ntask;
	return dev_merge(base, c->dev);
}

/* The replicated values e uses: *first the first, *other the first
 * replicated over another job than it (or NULL). */
static void
replicated_refs(Checker *c, const AstNode *e, const Sym **first,
		const Sym **other)
{
	const Sym *s;

	if (!e)
		return;
	if (e->kind == AST_NAME && (s = check_find(&c->syms, e->name)) &&
	    s->ncopy > 0) {
		if (!*first)
			*first = s;
		else if (s->rep_job != (*first)->rep_job && !*other)
			*other = s;
	}
	if (e->kind != AST_CALL) /* a call's a is the callee's name */
		replicated_refs(c, e->a, first, other);
	replicated_refs(c, e->b, first, other);
	for (int i = 0; i < e->n; i++)
		replicated_refs(c, e->list[i], first, other);
}

/* a, b = LIST replicated over job: the list once per worker, each name
 * given its element of every copy. */
static int
unpack_copies(Checker *c, AstNode *s, const CJob *job)
{
	IrNode ***copies = arena_alloc(c->a, (size_t)s->n * sizeof *copies);
	int before = c->d->nerr;

	for (int i = 0; i < s->n; i++)
		copies[i] = arena_alloc(c->a, (job->ntask + 1) *
					sizeof *copies[i]);
	for (int k = 0; k < job->ntask && c->d->nerr == before; k++) {
		PtrVec *l;

		c->copy = k;
		c->copy_job = job;
		c->stmt = arena_printf(c->a, "%s@%d", s->name, k);
		if ((l = check_unpack_list(c, s)))
			for (int i = 0; i < s->n; i++) {
				IrNode *n = l->v[i];

				if (!n->name) {
					n->name = arena_printf(c->a, "%s@%d",
						s->list[i]->name, k);
					n->user_named = 1;
				}
				copies[i][k] = n;
			}
		c->stmt = NULL;
		c->copy = -1;
	}
	for (int i = 0; i < s->n; i++) {
		Sym *sym = check_define(c, s->list[i]->name,
					s->list[i]->tok.loc,
					c->d->nerr > before ? NULL
							    : copies[i][0]);

		if (sym && c->d->nerr == before) {
			sym->ncopy = job->ntask;
			sym->copies = copies[i];
			sym->rep_job = job;
		}
	}
	return 1;
}

int
check_replicated(Checker *c, AstNode *s, IrNode *(*make)(Checker *,
							  AstNode *))
{
	const Sym *dep = NULL, *other = NULL;
	const CJob *job = NULL;
	Device d = c->rep ? dev_merge(c->rep->worker, c->dev) : c->dev;
	IrNode **copies;
	Sym *sym;
	int before = c->d->nerr;

	if (s->kind != AST_INPUT)
		replicated_refs(c, s->a, &dep, &other);
	if (c->rep && d.task < 0 && d.job &&
	    strcmp(d.job, c->rep->wjob->name) == 0)
		job = c->rep->wjob;
	if (other) {
		diag_error(c->d, s->tok.loc, "'%s' uses '%s', replicated over "
			   "job '%s', and '%s', replicated over '%s'", s->name,
			   dep->name, dep->rep_job->name, other->name,
			   other->rep_job->name);
		check_define(c, s->name, s->tok.loc, NULL);
		return 1;
	}
	if (dep && s->kind == AST_VAR) {
		diag_error(c->d, ast_extent(s->a), "the initial value of '%s' "
			   "depends on '%s', which is replicated: a variable "
			   "is not copied", s->name, dep->name);
		check_define(c, s->name, s->tok.loc, NULL);
		return 1;
	}
	if (dep && job && dep->rep_job != job) {
		diag_error(c->d, s->tok.loc, "'%s' would be replicated over "
			   "job '%s' and over '%s' (through '%s')", s->name,
			   job->name, dep->rep_job->name, dep->name);
		check_define(c, s->name, s->tok.loc, NULL);
		return 1;
	}
	if (dep)
		job = dep->rep_job;
	if (!job || s->kind == AST_VAR)
		return 0;
	if (s->kind == AST_ASSIGN && s->n)
		return unpack_copies(c, s, job);
	if (s->kind == AST_ASSIGN && check_is_list(c, s->a)) {
		diag_error(c->d, ast_extent(s->a), "a list cannot be "
			   "replicated: split a value that is not");
		check_define(c, s->name, s->tok.loc, NULL);
		return 1;
	}
	copies = arena_alloc(c->a, (job->ntask + 1) * sizeof *copies);
	for (int k = 0; k < job->ntask && c->d->nerr == before; k++) {
		IrNode *n;

		c->copy = k;
		c->copy_job = job;
		c->stmt = arena_printf(c->a, "%s@%d", s->name, k);
		n = make(c, s);
		c->stmt = NULL;
		c->copy = -1;
		if (!n)
			break;
		if (!n->name) {
			n->name = arena_printf(c->a, "%s@%d", s->name, k);
			n->user_named = 1;
		}
		copies[k] = n;
	}
	if (c->d->nerr > before) {
		check_define(c, s->name, s->tok.loc, NULL);
		return 1;
	}
	if ((sym = check_define(c, s->name, s->tok.loc, copies[0])) != NULL) {
		sym->ncopy = job->ntask;
		sym->copies = copies;
		sym->rep_job = job;
	}
	return 1;
}

IrNode *
check_copy_of(Checker *c, const Sym *s)
{
	int k = 0;

	if (!s->ncopy)
		return s->node;
	if (c->copy >= 0 && s->rep_job == c->copy_job)
		k = c->copy;
	else if (c->copy < 0 && c->session_task >= s->rep_job->first &&
		 c->session_task < s->rep_job->first + s->rep_job->ntask)
		k = c->session_task - s->rep_job->first;
	return s->copies[k];
}
