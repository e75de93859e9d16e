/*
 * tests/unit/var_test.c: values in a variable's storage (runtime/var.c,
 * TFG_VAR_HOLD_READ, TFG_VAR_HOLD_WRITE and TFG_VAR_PUT; spec/design.md
 * "Values in a variable's storage"), driven in this process on a task
 * server's variable: a hold gives the storage (made by a write's), a put
 * lets it go with the value, copied in when it is elsewhere; a hold's
 * lock keeps other steps' reads out until the put; a part that fails
 * holding a variable it writes leaves it without a value (it "lost its
 * value") until an assign, and one it reads as it was; the calls out of
 * turn are refused.
 */
#include "tests/unit/test.h"

#include <pthread.h>
#include <unistd.h>

#include "runtime/role.h"

enum { N = 1000 };

typedef struct Fix {
	RtServer s;
	RtStep st;
	RtCtx c;
	TfgPlan plan;
	RtVar var;
} Fix;

static RtTask task1[1] = {
	{"local", 0, "127.0.0.1:1", "/job:local/task:0"},
};

static void
fix_init(Fix *f)
{
	TfgOptions o = {0};

	memset(f, 0, sizeof *f);
	f->var.name = "w";
	f->var.dtype = TFG_F32;
	f->var.shape = (TfgShape){1, {N}};
	f->var.nbytes = N * sizeof(float);
	f->var.where = "t.tfg:1:1";
	f->plan.hash = 0x0123456789abcdefull;
	f->plan.file = "t.tfg";
	f->plan.ntask = 1, f->plan.tasks = task1;
	f->plan.nvar = 1, f->plan.vars = &f->var;
	ASSERT_EQ(rt_server_init(&f->s, &f->plan, 0, &o), TFG_OK);
	rt_step_init(&f->st, &f->s.proc);
	f->st.client = 0;
	f->c.step = &f->st;
	f->c.err = &f->st.err;
	rt_vars_attach(&f->s, &f->c);
}

/* The variable's value read as a step would, or -1 and its error. */
static int
read_w(Fix *f, float *out)
{
	return tfg_rt_var(&f->c, 0, TFG_VAR_READ, NULL, out);
}

static void
t_hold(void)
{
	Fix f;
	float *p = NULL, out[N], mine[N];

	fix_init(&f);
	/* nothing to read yet: refused, nothing held */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_READ, NULL, &p),
		  TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "'w' is not initialized") != NULL);
	ASSERT_EQ(f.c.held, 0);
	/* a write's hold makes the storage; written there, put: the value */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_WRITE, NULL, &p), TFG_OK);
	ASSERT(p != NULL && p == (float *)f.s.vars[0].data);
	ASSERT(((uintptr_t)p & 63) == 0);
	for (int i = 0; i < N; i++)
		p[i] = (float)i;
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_PUT, p, NULL), TFG_OK);
	ASSERT_EQ(f.c.held, 0);
	ASSERT_EQ(read_w(&f, out), TFG_OK);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(out[i], (float)i);
	/* a value elsewhere (a feed read where it is) is copied in */
	for (int i = 0; i < N; i++)
		mine[i] = -2.0f * (float)i;
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_WRITE, NULL, &p), TFG_OK);
	ASSERT(p == (float *)f.s.vars[0].data); /* the same storage */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_PUT, mine, NULL), TFG_OK);
	ASSERT_EQ(read_w(&f, out), TFG_OK);
	ASSERT_EQ(out[N - 1], -2.0f * (N - 1));
	/* a read's hold: the storage, the value as it is */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_READ, NULL, &p), TFG_OK);
	ASSERT_EQ(p[7], -14.0f);
	/* out of turn: an op while holding, a put of what is not held */
	ASSERT_EQ(read_w(&f, out), TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "while the part holds 'w'") != NULL);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_PUT, NULL, NULL), TFG_OK);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_PUT, NULL, NULL), TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "without being held") != NULL);
	ASSERT_EQ(read_w(&f, out), TFG_OK); /* the lock was let go */
	rt_server_free(&f.s);
}

/* A part that failed holding the variable (rt_run_part calls
 * rt_vars_drop on its thread). */
static void
t_drop(void)
{
	Fix f;
	float *p = NULL, out[N], one = 1.0f;
	uint8_t inited = 9;

	fix_init(&f);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_ASSIGN | TFG_VAR_SCALAR, &one,
			     NULL), TFG_OK);
	/* reading: the value stays */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_READ, NULL, &p), TFG_OK);
	rt_vars_drop(&f.c);
	ASSERT_EQ(f.c.held, 0);
	ASSERT_EQ(read_w(&f, out), TFG_OK);
	ASSERT_EQ(out[3], 1.0f);
	/* writing, part-way: no value from then on, said so */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_WRITE, NULL, &p), TFG_OK);
	p[0] = 5.0f;
	rt_vars_drop(&f.c);
	rt_vars_drop(&f.c); /* nothing held: nothing to do */
	ASSERT_EQ(read_w(&f, out), TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "variable 'w' lost its value when a step "
		      "that was writing it failed (declared at t.tfg:1:1): "
		      "run initialize() or restore() again") != NULL);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_INITED, NULL, &inited), TFG_OK);
	ASSERT_EQ(inited, 0);
	/* an assign gives it one again */
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_ASSIGN | TFG_VAR_SCALAR, &one,
			     NULL), TFG_OK);
	ASSERT_EQ(read_w(&f, out), TFG_OK);
	ASSERT_EQ(out[0], 1.0f);
	ASSERT_EQ(f.s.vars[0].lost, 0);
	rt_server_free(&f.s);
}

typedef struct Reader {
	Fix *f;
	RtStep st;
	RtCtx c;
	float out[N];
	int rc, done;
} Reader;

static void *
reader(void *arg)
{
	Reader *r = arg;

	r->rc = tfg_rt_var(&r->c, 0, TFG_VAR_READ, NULL, r->out);
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Another step's read waits for the put, and sees the whole new value. */
static void
t_lock(void)
{
	static Fix f;
	static Reader r;
	float *p = NULL, zero = 0.0f;
	pthread_t th;

	fix_init(&f);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_ASSIGN | TFG_VAR_SCALAR, &zero,
			     NULL), TFG_OK);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_HOLD_WRITE, NULL, &p), TFG_OK);
	r.f = &f;
	rt_step_init(&r.st, &f.s.proc);
	r.st.client = 0;
	r.c.step = &r.st;
	r.c.err = &r.st.err;
	rt_vars_attach(&f.s, &r.c);
	ASSERT_EQ(pthread_create(&th, NULL, reader, &r), 0);
	for (int i = 0; i < N; i++) {
		p[i] = 3.0f;
		if (i == N / 2)
			usleep(50000); /* the reader has had its chance */
	}
	ASSERT_EQ(__atomic_load_n(&r.done, __ATOMIC_SEQ_CST), 0);
	ASSERT_EQ(tfg_rt_var(&f.c, 0, TFG_VAR_PUT, p, NULL), TFG_OK);
	pthread_join(th, NULL);
	ASSERT_EQ(r.rc, TFG_OK);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(r.out[i], 3.0f);
	rt_server_free(&f.s);
}

TEST_MAIN({"hold", t_hold}, {"drop", t_drop}, {"lock", t_lock})
