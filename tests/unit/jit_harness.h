/*
 * tests/unit/jit_harness.h: what the unit tests that JIT-compile parts
 * share (codegen_test, ops_ref_test, reduce_ref_test, shape_ref_test,
 * make_ref_test, blas_test, vmath_test, fuse_test, kernel_test; the
 * random numbers also memory_test).  Header-only: every test is one
 * translation unit (Makefile), so each gets its own copy of the state
 * below; the functions are static inline so that a test need not use
 * them all.
 *
 *   fake runtime  jh_recv(_ref)/jh_send stand for tfg_rt_recv(_ref)/tfg_rt_send in
 *                 the JIT (CgOptions.rt_recv/rt_send).  A recv of key k
 *                 copies jh_feed_data[k] (set by jh_feed); a send of key
 *                 k copies the value into jh_sent[k] before returning,
 *                 as the runtime does, since the arena's memory is
 *                 reused by later nodes (codegen/memplan.c).  Both check
 *                 that the part passes the context it was called with.
 *                 jh_flush counts the part's tfg_rt_flush calls.
 *   building      nodes, parts and one-task programs in one Arena that
 *                 lives as long as the test binary (jh_cleanup frees it).
 *   running       jh_jit compiles a task, jh_call runs one signature's
 *                 part on an arena sized as the runtime sizes it
 *                 (rt_arena_alloc: rounded up to 64 bytes, no slack).
 *   from source   jh_compile_src and jh_run_fetches: a tfg program
 *                 compiled as tfgc does, its feeds filled by the test,
 *                 its fetches returned.
 *   random        xorshift64; a test picks its start with JH_SEED
 *                 defined before the include (the data every test
 *                 draws depends on it).
 *
 * Nothing here computes an expected value: each test writes its own
 * reference, which shares no code with codegen/.
 */
#ifndef TFG_TESTS_UNIT_JIT_HARNESS_H
#define TFG_TESTS_UNIT_JIT_HARNESS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tests/unit/test.h"

enum {
	JH_NKEY = 64,        /* keys 0..63 for feeds and sends */
	JH_MAXNODE = 192,    /* nodes in one JhPart */
	JH_MAXSIG = 8,       /* signatures in one jh_jit'ed program */
	JH_FAIL_STATUS = 7,  /* a recv of jh_fail_key returns this */
};

/* The context the parts are called with and the fakes insist on. */
#define JH_CTX ((struct RtCtx *)&jh_feed_data)

/* ------------------------------------------------------- the fake runtime */

static const void *jh_feed_data[JH_NKEY]; /* recv key -> bytes it delivers */
static size_t jh_feed_size[JH_NKEY];
static void *jh_sent[JH_NKEY];     /* send key -> a malloc'd copy, or NULL */
static size_t jh_sent_size[JH_NKEY]; /* bytes a send copies (jh_call) */
static int jh_nsent, jh_nrecv;     /* calls since jh_jit */
static int jh_nflush;              /* tfg_rt_flush calls since jh_jit */
static int jh_fail_key = -1;       /* recv of this key: JH_FAIL_STATUS */

static inline int
jh_recv(struct RtCtx *ctx, uint32_t key, void *dst)
{
	if (ctx != JH_CTX || key >= JH_NKEY)
		return 99;
	jh_nrecv++;
	if ((int)key == jh_fail_key)
		return JH_FAIL_STATUS;
	if (!jh_feed_data[key])
		return 99;
	memcpy(dst, jh_feed_data[key], jh_feed_size[key]);
	return 0;
}

/* tfg_rt_recv_ref's fake: the value is copied to dst, which it names */
static inline int
jh_recv_ref(struct RtCtx *ctx, uint32_t key, void *dst, void **data)
{
	*data = dst;
	return jh_recv(ctx, key, dst);
}

static inline int
jh_send(struct RtCtx *ctx, uint32_t key, const void *src)
{
	if (ctx != JH_CTX || key >= JH_NKEY)
		return 99;
	jh_nsent++;
	free(jh_sent[key]);
	if ((jh_sent[key] = malloc(jh_sent_size[key] + 1)) == NULL)
		return 98;
	memcpy(jh_sent[key], src, jh_sent_size[key]);
	return 0;
}

/* tfg_rt_var: a random maker's draw is always its first (0), as in
 * tfg_aot_run; there are no variables. */
static inline int
jh_var(struct RtCtx *ctx, uint32_t var, uint32_t op, const void *src,
       void *dst)
{
	(void)var, (void)src;
	if (ctx != JH_CTX || op != TFG_VAR_DRAW)
		return 99;
	memset(dst, 0, sizeof(int64_t));
	return 0;
}

/* tfg_rt_flush: counted (-1000 for a context not the part's, which no
 * count of flushes reaches back from). */
static inline void
jh_flush(struct RtCtx *ctx)
{
	jh_nflush += ctx == JH_CTX ? 1 : -1000;
}

/* What the next recv of key delivers (data is borrowed). */
static inline void
jh_feed(uint32_t key, const void *data, size_t nbytes)
{
	jh_feed_data[key] = data;
	jh_feed_size[key] = nbytes;
}

/* Forgets what was sent, the counts and jh_fail_key. */
static inline void
jh_reset(void)
{
	for (int k = 0; k < JH_NKEY; k++) {
		free(jh_sent[k]);
		jh_sent[k] = NULL;
	}
	jh_nsent = jh_nrecv = jh_nflush = 0;
	jh_fail_key = -1;
}

/* ------------------------------------------------------ building programs */

static Arena *jh_arena;

/* Zeroed memory that lives until jh_cleanup. */
static inline void *
jh_alloc(size_t n)
{
	if (!jh_arena)
		jh_arena = arena_new();
	return arena_alloc(jh_arena, n);
}

/* n's axes (OP_slice, OP_transpose), zero when first asked for */
static inline IrAxes *
jh_axes(IrNode *n)
{
	if (n->ax == NULL)
		n->ax = jh_alloc(sizeof *n->ax);
	return (IrAxes *)n->ax;
}

static inline size_t
jh_dsize(TfgDtype t)
{
	return t == TFG_BOOL || t == TFG_U8 ? 1
	       : t == TFG_I32 || t == TFG_F32 ? 4 : 8;
}

static inline int64_t
jh_nel(TfgShape s)
{
	int64_t n = 1;
	for (int i = 0; i < s.rank; i++)
		n *= s.dims[i];
	return n;
}

static inline size_t
jh_nbytes(TfgDtype t, TfgShape s)
{
	return (size_t)jh_nel(s) * jh_dsize(t);
}

/* jh_shp(rank, d0, d1, ...) */
static inline TfgShape
jh_shp(int rank, ...)
{
	TfgShape s = {0};
	va_list ap;
	va_start(ap, rank);
	s.rank = rank;
	for (int i = 0; i < rank; i++)
		s.dims[i] = va_arg(ap, int);
	va_end(ap);
	return s;
}

static inline const char *
jh_opname(OpKind op)
{
	static const char *const names[] = {
#define OP(name, ...) #name,
#include "stdlib/ops.def"
	};
	return names[op];
}

/* Element i of b, a tensor of dtype t (an integer or bool one for
 * jh_geti, a float one for jh_getf). */
static inline int64_t
jh_geti(const void *b, TfgDtype t, int64_t i)
{
	switch (t) {
	case TFG_BOOL: return ((const uint8_t *)b)[i];
	case TFG_U8: return ((const uint8_t *)b)[i];
	case TFG_I32: return ((const int32_t *)b)[i];
	default: return ((const int64_t *)b)[i];
	}
}

static inline double
jh_getf(const void *b, TfgDtype t, int64_t i)
{
	return t == TFG_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
}

static inline int
jh_isf(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

static int jh_ids;

/* A node of op on in[0..nin), placed on /job:local/task:0 (CPU). */
static inline IrNode *
jh_node(OpKind op, TfgDtype t, TfgShape s, int nin, IrNode *const *in)
{
	IrNode *n = jh_alloc(sizeof *n);
	n->id = jh_ids++;
	n->op = op;
	n->dtype = t;
	n->shape = s;
	n->nin = nin;
	n->in = jh_alloc((size_t)(nin + 1) * sizeof *n->in);
	for (int i = 0; i < nin; i++)
		n->in[i] = in[i];
	n->name = arena_printf(jh_arena, "n%d", n->id);
	n->dev = (Device){"local", 0, DEV_CPU, 0};
	return n;
}

/* A part under construction: nodes in order. */
typedef struct JhPart {
	IrNode *nodes[JH_MAXNODE];
	int n;
} JhPart;

static inline IrNode *
jh_add(JhPart *p, IrNode *n)
{
	ASSERT(p->n < JH_MAXNODE);
	p->nodes[p->n++] = n;
	return n;
}

/* A node of op on in[0..nin), added to p. */
static inline IrNode *
jh_op(JhPart *p, OpKind op, TfgDtype t, TfgShape s, int nin,
      IrNode *const *in)
{
	return jh_add(p, jh_node(op, t, s, nin, in));
}

/* A node of op on x alone, added to p. */
static inline IrNode *
jh_op1(JhPart *p, OpKind op, TfgDtype t, TfgShape s, IrNode *x)
{
	return jh_add(p, jh_node(op, t, s, 1, &x));
}

/* An input of key, fed data (borrowed). */
static inline IrNode *
jh_input(JhPart *p, TfgDtype t, TfgShape s, uint32_t key, const void *data)
{
	IrNode *n = jh_add(p, jh_node(OP_input, t, s, 0, NULL));
	n->key = key;
	jh_feed(key, data, jh_nbytes(t, s));
	return n;
}

/* A send of x to key. */
static inline IrNode *
jh_snd(JhPart *p, IrNode *x, uint32_t key)
{
	IrNode *n = jh_add(p, jh_node(OP_send, x->dtype, x->shape, 1, &x));
	n->key = key;
	return n;
}

/* A program of nsig signatures over ntask tasks, every part empty. */
static inline Program *
jh_prog(int nsig, int ntask)
{
	Program *p = jh_alloc(sizeof *p);
	p->arena = jh_arena;
	p->ntask = ntask;
	p->tasks = jh_alloc((size_t)ntask * sizeof *p->tasks);
	p->nsig = nsig;
	p->sigs = jh_alloc((size_t)nsig * sizeof *p->sigs);
	for (int s = 0; s < nsig; s++)
		p->sigs[s].parts = jh_alloc((size_t)ntask * sizeof(IrPart));
	return p;
}

/* Signature sig's part on task: nodes[0..n) (copied). */
static inline void
jh_part_set(Program *p, int sig, int task, IrNode *const *nodes, int n)
{
	IrPart *pt = &p->sigs[sig].parts[task];
	pt->sig = sig;
	pt->task = task;
	pt->n = n;
	pt->nodes = jh_alloc((size_t)n * sizeof *nodes);
	memcpy(pt->nodes, nodes, (size_t)n * sizeof *nodes);
	for (int i = 0; i < n; i++)
		pt->sends += nodes[i]->op == OP_send;
}

/* One signature, one task, these nodes. */
static inline Program *
jh_prog1(IrNode *const *nodes, int n)
{
	Program *p = jh_prog(1, 1);
	jh_part_set(p, 0, 0, nodes, n);
	return p;
}

/* -------------------------------------------------------------- running */

typedef struct JhRun {
	const Program *p;
	int task;
	CgJit *j;
	RtPart parts[JH_MAXSIG]; /* [p->nsig] */
	char *arena;             /* of the last jh_call */
	int rc;                  /* jh_run: the part's status */
	double ms;               /* JIT time */
} JhRun;

/* JIT-compiles task of p with o (NULL: the host CPU, -O2), the fakes
 * bound, and resets them; 0, or -1 when cg_jit fails. */
static inline int
jh_jit(JhRun *r, const Program *p, int task, const CgOptions *o)
{
	CgOptions co = o ? *o : (CgOptions){.opt_level = 2};
	memset(r, 0, sizeof *r);
	r->p = p;
	r->task = task;
	jh_reset();
	co.rt_recv = jh_recv;
	co.rt_recv_ref = jh_recv_ref;
	co.rt_send = jh_send;
	co.rt_var = jh_var;
	co.rt_flush = jh_flush;
	if (p->nsig > JH_MAXSIG)
		return -1;
	return cg_jit(&r->j, p, task, &co, r->parts, &r->ms) != 0 ? -1 : 0;
}

/* Calls signature sig's part on a fresh arena; returns its status, or
 * -2 when the task has no part in sig. */
static inline int
jh_call(JhRun *r, int sig)
{
	const IrPart *pt = &r->p->sigs[sig].parts[r->task];
	size_t n = (r->parts[sig].arena_size + 63) & ~(size_t)63;
	if (!r->parts[sig].fn)
		return -2;
	for (int i = 0; i < pt->n; i++) {
		const IrNode *s = pt->nodes[i];
		if (s->op == OP_send && s->key < JH_NKEY)
			jh_sent_size[s->key] = jh_nbytes(s->in[0]->dtype,
							 s->in[0]->shape);
	}
	free(r->arena);
	if ((r->arena = aligned_alloc(64, n ? n : 64)) == NULL)
		return -3;
	return r->parts[sig].fn(JH_CTX, r->arena);
}

/* jh_jit, then jh_call of sig: 0 when it ran (its status in r->rc), -1
 * when cg_jit failed, -2 when the task has no part in sig. */
static inline int
jh_run(JhRun *r, const Program *p, int task, int sig, const CgOptions *o)
{
	if (jh_jit(r, p, task, o) != 0)
		return -1;
	r->rc = jh_call(r, sig);
	return r->rc == -2 ? -2 : 0;
}

/* Runs the part pt as the one part of a program at -O2: its status, or
 * -1 when it did not compile. */
static inline int
jh_run_part(JhRun *r, const JhPart *pt)
{
	if (jh_run(r, jh_prog1(pt->nodes, pt->n), 0, 0, NULL) != 0)
		return -1;
	return r->rc;
}

static inline void
jh_run_done(JhRun *r)
{
	free(r->arena);
	cg_jit_free(r->j);
	r->arena = NULL;
	r->j = NULL;
}

/* The optimised IR of task 0 of p for cpu (NULL: the host) at -O2,
 * malloc'd, or NULL. */
static inline char *
jh_emit(const Program *p, const char *cpu)
{
	CgOptions o = {.cpu = cpu, .opt_level = 2};
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	int rc;
	if (!f)
		return NULL;
	rc = cg_emit_llvm(f, p, 0, &o);
	fclose(f);
	if (rc != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* ---------------------------------------------------------- from source */

/* Compiles the program text src into p with co (which p keeps a pointer
 * to: it must outlive p); 0 or the compiler's error count. */
static inline int
jh_compile_src(Program *p, const char *src, const CompileOptions *co)
{
	char path[] = "/tmp/tfg-unit-src.XXXXXX";
	int fd = mkstemp(path), rc;
	Diag d;
	if (fd < 0)
		return -1;
	if (write(fd, src, strlen(src)) != (ssize_t)strlen(src)) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	diag_init(&d, stderr);
	rc = compile_file(p, path, co, &d);
	unlink(path);
	return rc;
}

/* Runs signature 0 of task 0 of p, each feed filled by fill (in feed
 * order), and returns the fetched tensors' bytes concatenated (malloc'd,
 * *len their size), or NULL when it failed or a fetch was not sent. */
static inline char *
jh_run_fetches(const Program *p, void (*fill)(void *, TfgDtype, int64_t),
	       size_t *len)
{
	const IrSig *g = &p->sigs[0];
	JhRun r;
	char *out = NULL;
	int nfed = 0;
	while (nfed < g->nfeed && g->feed_key[nfed] < JH_NKEY) {
		const IrNode *x = g->feed[nfed];
		size_t n = jh_nbytes(x->dtype, x->shape);
		void *d = malloc(n + 1);
		if (!d)
			break;
		fill(d, x->dtype, jh_nel(x->shape));
		jh_feed(g->feed_key[nfed++], d, n);
	}
	if (nfed == g->nfeed && jh_run(&r, p, 0, 0, NULL) == 0 &&
	    r.rc == 0) {
		*len = 0;
		for (int i = 0; i < g->nfetch; i++)
			*len += jh_nbytes(g->fetch[i]->dtype,
					  g->fetch[i]->shape);
		out = malloc(*len + 1);
		*len = 0;
		for (int i = 0; out && i < g->nfetch; i++) {
			uint32_t k = g->fetch_key[i];
			size_t n = jh_nbytes(g->fetch[i]->dtype,
					     g->fetch[i]->shape);
			if (k >= JH_NKEY || !jh_sent[k]) {
				free(out);
				out = NULL;
				break;
			}
			memcpy(out + *len, jh_sent[k], n);
			*len += n;
		}
	}
	if (nfed == g->nfeed)
		jh_run_done(&r);
	for (int i = 0; i < nfed; i++) {
		free((void *)jh_feed_data[g->feed_key[i]]);
		jh_feed(g->feed_key[i], NULL, 0);
	}
	jh_reset();
	return out;
}

/* ---------------------------------------------------------------- random */

#ifndef JH_SEED
#define JH_SEED 0x9E3779B97F4A7C15ull
#endif
static uint64_t jh_rng = JH_SEED;

static inline uint64_t
jh_next(void)
{
	jh_rng ^= jh_rng << 13;
	jh_rng ^= jh_rng >> 7;
	jh_rng ^= jh_rng << 17;
	return jh_rng;
}

/* Uniform in [lo, hi]. */
static inline int
jh_rnd(int lo, int hi)
{
	return lo + (int)(jh_next() % (uint64_t)(hi - lo + 1));
}

/* Frees what the harness holds: the arena (every node, program and
 * jh_alloc'd buffer) and the sent copies. */
static inline void
jh_cleanup(void)
{
	jh_reset();
	arena_free(jh_arena);
	jh_arena = NULL;
}

#endif /* TFG_TESTS_UNIT_JIT_HARNESS_H */
