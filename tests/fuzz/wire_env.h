/*
 * tests/fuzz/wire_env.h: what the wire target (tests/fuzz/wire_fuzz.c)
 * and the writer of its seeds (tests/fuzz/wire_seeds.c) share: the
 * programs whose plans the receiving processes run, compiled from source
 * once as `tfgc run` compiles them, and stand-ins for what code
 * generation would add (spec/design.md "Fuzzing").  Header-only, static
 * inline, as tests/unit/jit_harness.h.
 *
 *   programs    WE_CONCRETE: three tasks; feeds, tensors between tasks,
 *               a string fetch, a variable, and a part that sends
 *               nothing (it answers DONE).  WE_GENERIC: the same cluster
 *               with `?` dims, a generic plan: SPECIALISE, RELEASE, and
 *               the STARTs of specialisations.
 *   parts       we_part is the part of every task in every signature: it
 *               receives and sends what the generated part would, in its
 *               order (the feed, recv and send nodes of its IrPart), and
 *               computes nothing; what it sends is zeros (strings: empty
 *               ones), and a send to another task that fails (none is
 *               up) does not stop it.  What it receives is printed, as a
 *               client prints its fetches.
 *   specialise  we_specialise compiles the program again with the feeds'
 *               dims as --shape, pruned to the signature, as
 *               jit_specialise (compiler/jit.c) does, without the JIT;
 *               we_release frees it again.
 */
#ifndef TFG_TESTS_FUZZ_WIRE_ENV_H
#define TFG_TESTS_FUZZ_WIRE_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "runtime/role.h"

enum { WE_CONCRETE, WE_GENERIC, WE_NPROG };

static const char *const we_source[WE_NPROG] = {
	"cluster { local = [\"localhost:2222\", \"localhost:2223\", "
	"\"localhost:2224\"] }\n"
	"input x: f32[2, 3]\n"
	"input k: i32\n"
	"device \"/job:local/task:1\" {\n"
	"    var v = 0.0\n"
	"    y = x * 2.0\n"
	"    w = [\"ab\", \"c\", \"d\\xc3\\xa9f\"]\n"
	"}\n"
	"device \"/job:local/task:2\" {\n"
	"    z = reduce_sum(y) + cast(k, f32)\n"
	"}\n"
	"inc = assign_add(v, z)\n"
	"session \"/job:local/task:0\" {\n"
	"    initialize()\n"
	"    print run(z, w, feed { x: [[1, 2, 3], [4, 5, 6]], k: 3 })\n"
	"    print run(inc, feed { x: [[1, 2, 3], [4, 5, 6]], k: 1 })\n"
	"}\n"
	"session \"/job:local/task:1\" {\n"
	"    print run(z, feed { x: [[1, 2, 3], [4, 5, 6]], k: 2 })\n"
	"}\n",

	"cluster { local = [\"localhost:2222\", \"localhost:2223\", "
	"\"localhost:2224\"] }\n"
	"input x: f32[?, 3]\n"
	"input n: i32[?]\n"
	"device \"/job:local/task:1\" {\n"
	"    y = x * 2.0\n"
	"    m = reduce_sum(n)\n"
	"}\n"
	"device \"/job:local/task:2\" {\n"
	"    z = reduce_sum(y, axis=0)\n"
	"}\n"
	"session \"/job:local/task:0\" {\n"
	"    print run(z, m, feed { x: [[1, 2, 3]], n: [1, 2] })\n"
	"}\n"
	"session \"/job:local/task:2\" {\n"
	"    print run(y, feed { x: [[1, 2, 3], [4, 5, 6]] })\n"
	"}\n",
};

/* The receiving process's incarnation (RtProc.epoch), fixed so that the
 * ids of the steps it drives are the same in every run. */
#define WE_EPOCH 1700000000000000000ull
/* Seconds a wait in a step may take: what has not come by then never
 * will, in one input. */
#define WE_WAIT 1e-5
/* The largest tensor a part receives or sends: no message of an input
 * carries more. */
#define WE_MAX_TENSOR ((size_t)1 << 20)

/* A program compiled here: a base one, or a specialisation of one. */
typedef struct WeProg {
	CompileOptions co;
	Arena *ar;          /* the --shape strings */
	Program p;
	int task;           /* specialisations: the task it is for */
} WeProg;

static WeProg we_base[WE_NPROG];
static WeProg **we_specs; /* alive: made by we_specialise, not released */
static int we_nspec;
static FILE *we_null;     /* /dev/null: diagnostics, printed values */

/* The program whose plan this is. */
static inline const Program *
we_program(const TfgPlan *plan)
{
	for (int i = 0; i < WE_NPROG; i++)
		if (we_base[i].p.plan == plan)
			return &we_base[i].p;
	for (int i = 0; i < we_nspec; i++)
		if (we_specs[i]->p.plan == plan)
			return &we_specs[i]->p;
	return NULL;
}

/* Receives edge key of step c into a buffer of its size, and prints it. */
static inline int
we_recv(RtStep *c, uint32_t key)
{
	const RtEdge *e = &c->plan->edges[key];
	size_t n = rt_edge_nbytes(e);
	RtTensor t = {e->dtype, e->shape, n, NULL};
	char *s;
	int rc;

	if (n > WE_MAX_TENSOR)
		return TFG_ETOOBIG;
	if ((t.data = malloc(n ? n : 1)) == NULL)
		return TFG_ENOMEM;
	if ((rc = rt_step_recv(c, key, t.data)) == 0) {
		/* the wire let in only strings whose records stay inside */
		TFG_ASSERT(e->dtype != TFG_STRING ||
			   tfg_string_check(t.data, n,
					    tfg_shape_numel(&e->shape)) ==
			   TFG_OK);
		if ((s = rt_format_str(&t)) != NULL)
			fputs(s, we_null);
		free(s);
	}
	free(t.data);
	return rc;
}

/* Sends edge key of step c: zeros, or for strings empty ones. */
static inline int
we_send(RtStep *c, uint32_t key)
{
	const RtEdge *e = &c->plan->edges[key];
	size_t n = rt_edge_nbytes(e);
	unsigned char *buf;
	int rc;

	if (n > WE_MAX_TENSOR)
		return TFG_ETOOBIG;
	if ((buf = calloc(1, n ? n : 1)) == NULL)
		return TFG_ENOMEM;
	if (e->dtype == TFG_STRING) {
		int64_t numel = tfg_shape_numel(&e->shape);

		for (int64_t i = 0; i < numel; i++)
			rt_put_le(buf + i * TFG_STRING_RECORD,
				  (uint64_t)numel * TFG_STRING_RECORD, 8);
	}
	rc = rt_step_send(c, key, buf);
	free(buf);
	return rc;
}

/* The part of task c->proc->task in signature c->sig of c->plan (c:
 * the step of the part's context x). */
static inline int
we_part(struct RtCtx *x, char *arena)
{
	RtStep *c = x->step;
	const Program *p = we_program(c->plan);
	const IrPart *part;
	int rc = 0;

	(void)arena;
	TFG_ASSERT(p != NULL && c->sig >= 0 && c->sig < p->nsig);
	part = &p->sigs[c->sig].parts[c->proc->task];
	for (int i = 0; i < part->n && rc == 0; i++) {
		const IrNode *n = part->nodes[i];

		if (n->op == OP_input || n->op == OP_recv)
			rc = we_recv(c, n->key);
		else if (n->op == OP_send)
			rc = we_send(c, n->key);
		/* no peer is ever up: a part goes on past its sends to
		   them, as it would on a cluster, to its later receives */
		if (n->op == OP_send && n->peer != c->proc->task)
			rc = 0;
	}
	return rc;
}

/* parts[0 .. nsig) of task in p's plan, as code generation fills them. */
static inline void
we_parts(const Program *p, int task, RtPart *parts)
{
	for (int s = 0; s < p->nsig; s++) {
		const IrSig *g = &p->sigs[s];
		int has = g->parts && g->parts[task].n > 0;

		parts[s].fn = has ? we_part : NULL;
		parts[s].arena_size = 64;
	}
}

static inline void
we_prog_free(WeProg *w)
{
	arena_free(w->p.arena);
	arena_free(w->ar);
	memset(w, 0, sizeof *w);
}

/* Compiles the programs; once. */
static inline void
we_init(void)
{
	Diag d;

	if (we_null)
		return;
	if ((we_null = fopen("/dev/null", "w")) == NULL) {
		perror("wire_env: /dev/null");
		abort();
	}
	diag_init(&d, stderr);
	for (int i = 0; i < WE_NPROG; i++) {
		WeProg *w = &we_base[i];

		w->ar = arena_new();
		w->co.source = src_from_string(w->ar, "wire.tfg", we_source[i]);
		w->co.generic_ok = 1;
		if (compile_file(&w->p, "wire.tfg", &w->co, &d) != 0)
			abort();
		TFG_ASSERT(w->p.plan->generic == (i == WE_GENERIC));
	}
}

/* TfgSpecialiseFn; cookie: the base WeProg. */
static inline int
we_specialise(void *cookie, const TfgPlan *plan, int sig,
	      const TfgShape *feeds, int task, const TfgPlan **out,
	      RtPart *parts, TfgError *e)
{
	const WeProg *base = cookie;
	const RtSig *gs = &plan->sigs[sig];
	WeProg *w = calloc(1, sizeof *w), **v;
	const char **shape;
	Diag d;

	v = realloc(we_specs, sizeof *v * ((size_t)we_nspec + 1));
	if (v)
		we_specs = v;
	if (!w || !v || !(w->ar = arena_new())) {
		free(w);
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	}
	w->co = base->co;
	w->task = task;
	shape = arena_alloc(w->ar, sizeof *shape * ((size_t)gs->nfeed + 1));
	for (int i = 0; i < gs->nfeed; i++) {
		char dims[8 * 24] = "";
		size_t k = 0;

		if (shape_known(&gs->feeds[i].shape))
			continue;
		for (int j = 0; j < feeds[i].rank; j++)
			k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld",
					      j ? "," : "",
					      (long long)feeds[i].dims[j]);
		shape[w->co.nshape++] = arena_printf(w->ar, "%s=%s",
						     gs->feeds[i].name, dims);
	}
	w->co.shape = shape;
	w->co.spec_sig = sig + 1;
	w->co.generic_ok = 0;
	w->co.until = "plan";
	diag_init(&d, we_null);
	if (compile_file(&w->p, "wire.tfg", &w->co, &d) != 0) {
		we_prog_free(w);
		free(w);
		return tfg_error(e, TFG_EINVAL, "the specialisation does not "
				 "compile");
	}
	we_specs[we_nspec++] = w;
	we_parts(&w->p, task, parts);
	*out = w->p.plan;
	return 0;
}

/* TfgReleaseFn. */
static inline void
we_release(void *cookie, const TfgPlan *plan)
{
	(void)cookie;
	for (int i = 0; i < we_nspec; i++)
		if (we_specs[i]->p.plan == plan) {
			we_prog_free(we_specs[i]);
			free(we_specs[i]);
			we_specs[i] = we_specs[--we_nspec];
			return;
		}
	TFG_ASSERT(!"a plan released that was never made");
}

/* Those the runtime left at exit (rt_spec_free: the compiler's). */
static inline void
we_specs_free(void)
{
	for (int i = 0; i < we_nspec; i++) {
		we_prog_free(we_specs[i]);
		free(we_specs[i]);
	}
	free(we_specs);
	we_specs = NULL;
	we_nspec = 0;
}

/* The runtime's options for a process of base program b. */
static inline TfgOptions
we_options(WeProg *b, int verbose)
{
	TfgOptions o = {0};

	o.startup_timeout = WE_WAIT;
	o.step_timeout = WE_WAIT;
	o.verbose = verbose;
	o.specialise = we_specialise;
	o.release = we_release;
	o.specialise_cookie = b;
	o.max_specs = 2; /* evictions come soon */
	return o;
}

/* The edge of plan from task src to dst whose name starts with name and
 * ';' or '@', or NULL. */
static inline const RtEdge *
we_edge(const TfgPlan *plan, const char *name, int src, int dst)
{
	size_t n = strlen(name);

	for (int i = 0; i < plan->nedge; i++) {
		const RtEdge *e = &plan->edges[i];

		if (e->src == src && e->dst == dst &&
		    strncmp(e->name, name, n) == 0 &&
		    (e->name[n] == ';' || e->name[n] == '@'))
			return e;
	}
	return NULL;
}

#endif /* TFG_TESTS_FUZZ_WIRE_ENV_H */
