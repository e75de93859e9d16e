/*
 * tests/unit/optim_test.c: the optimizers' updates of rows
 * (runtime/optim.c, tfg_rt_apply_rows; OP_apply_rows,
 * spec §6.26 "minimize and optimizers"), driven in this process on a task server's
 * variables: each row update against the dense update of the gradient
 * that the rows make (their ids' segment sum), duplicates and negative
 * ids included, momentum's laziness, and the updates refused.
 */
#include "tests/unit/test.h"

#include <math.h>

#include "runtime/role.h"

enum { ROWS = 1000, WIDTH = 4, NVAR = 6 };

/* One task's server with two variables of f32[ROWS, WIDTH] and two
 * slots each, 0 "a" ("a/s1", "a/s2") and 3 "b" ("b/s1", "b/s2"); the
 * step that a client on the task runs. */
typedef struct Fix {
	RtServer s;
	RtStep st;
	RtCtx c;
	TfgPlan plan;
	RtVar vars[NVAR];
} Fix;

static RtTask task1[1] = {
	{"local", 0, "127.0.0.1:1", "/job:local/task:0"},
};

static void
fix_init(Fix *f)
{
	static const char *const names[NVAR] = {"a", "a/s1", "a/s2", "b",
						"b/s1", "b/s2"};
	TfgOptions o = {0};

	memset(f, 0, sizeof *f);
	for (int i = 0; i < NVAR; i++) {
		RtVar *v = &f->vars[i];
		v->name = names[i];
		v->dtype = TFG_F32;
		v->shape = (TfgShape){2, {ROWS, WIDTH}};
		v->nbytes = ROWS * WIDTH * sizeof(float);
		v->where = "t.tfg:1:1";
	}
	f->plan.hash = 0x0123456789abcdefull;
	f->plan.file = "t.tfg";
	f->plan.ntask = 1, f->plan.tasks = task1;
	f->plan.nvar = NVAR, f->plan.vars = f->vars;
	ASSERT_EQ(rt_server_init(&f->s, &f->plan, 0, &o), TFG_OK);
	for (int i = 0; i < NVAR; i++) {
		f->s.vars[i].data = malloc(f->vars[i].nbytes);
		ASSERT(f->s.vars[i].data);
		f->s.vars[i].init = 1;
	}
	rt_step_init(&f->st, &f->s.proc);
	f->st.client = 0;
	f->c.store = &f->s;
	f->c.step = &f->st;
	f->c.err = &f->st.err;
	rt_optim_attach(&f->c);
}

static float *
data(Fix *f, int v)
{
	return (float *)f->s.vars[v].data;
}

/* a and b of the same values, their first slots at s1, second at 0. */
static void
fill(Fix *f, float s1)
{
	for (int i = 0; i < ROWS * WIDTH; i++) {
		data(f, 0)[i] = data(f, 3)[i] = (float)sin(i * 0.37) * 0.5f;
		data(f, 1)[i] = data(f, 4)[i] = s1;
		data(f, 2)[i] = data(f, 5)[i] = 0;
	}
}

/* Whether variable a (and its slots) equal b (and its), bit for bit. */
static int
same(Fix *f)
{
	for (int k = 0; k < 3; k++)
		if (memcmp(data(f, k), data(f, 3 + k),
			   ROWS * WIDTH * sizeof(float)) != 0)
			return 0;
	return 1;
}

/* The dense gradient that rows g at ids make: their segment sum, each
 * row's in the ids' order (as tfg_rt_apply_rows sums duplicates). */
static float *
dense(const int64_t *ids, int64_t n, const float *g)
{
	float *d = calloc(ROWS * WIDTH, sizeof *d);

	for (int64_t i = 0; i < n; i++)
		for (int k = 0; ids[i] >= 0 && k < WIDTH; k++)
			d[ids[i] * WIDTH + k] += g[i * WIDTH + k];
	return d;
}

/* n random ids in [-1, bound) (a small bound: many duplicates) and
 * their rows' gradients. */
static void
random_rows(unsigned seed, int64_t n, int64_t bound, int64_t *ids,
	    float *g)
{
	srand(seed);
	for (int64_t i = 0; i < n; i++) {
		ids[i] = rand() % (bound + 1) - 1;
		for (int k = 0; k < WIDTH; k++)
			g[i * WIDTH + k] = (float)(rand() % 2001 - 1000) /
					   1000.0f;
	}
}

/* sgd, adagrad and ftrl on rows are the dense update of their segment
 * sum, bit for bit (an untouched row's dense update changes nothing;
 * FTRL's, once the row has had one),
 * for a few ids (the insertion sort) and many (the radix sort, over the
 * kernel pool's blocks), duplicates and -1 among them, twice over */
static void
t_rows_are_dense(void)
{
	static const uint32_t kinds[3] = {TFG_OPT_SGD, TFG_OPT_ADAGRAD,
					  TFG_OPT_FTRL};
	static const int64_t counts[5] = {0, 1, 7, 63, 5000};
	double h[5] = {0.1, 0.01, 0.1, 0.1, 1.0};
	Fix f;

	fix_init(&f);
	for (int c = 0; c < 5; c++)
		for (int k = 0; k < 3; k++) {
			int64_t n = counts[c], *ids = malloc((n + 1) *
							     sizeof *ids);
			float *g = malloc((n + 1) * WIDTH * sizeof *g), *d;
			unsigned char ok = 0;

			fill(&f, kinds[k] == TFG_OPT_SGD ? 0 : 0.1f);
			/* FTRL's value is what its linear slot makes it
			   (0 for 0), as in every update of a row after its
			   first */
			for (int i = 0; kinds[k] == TFG_OPT_FTRL &&
					i < ROWS * WIDTH; i++)
				data(&f, 0)[i] = data(&f, 3)[i] = 0;
			for (int rep = 0; rep < 2; rep++) {
				random_rows(17u * (unsigned)c + (unsigned)k +
					    100u * (unsigned)rep, n,
					    c == 4 ? ROWS : 9, ids, g);
				d = dense(ids, n, g);
				ASSERT_EQ(f.c.apply(&f.c, 0, kinds[k], 1, ids,
						    n, g, h, &ok), TFG_OK);
				ASSERT(ok == 1);
				ASSERT_EQ(f.c.apply(&f.c, 3, kinds[k], 4, NULL,
						    0, d, h, &ok), TFG_OK);
				free(d);
				ASSERT(same(&f));
			}
			free(ids);
			free(g);
		}
	rt_server_free(&f.s);
}

/* momentum on rows is TF1's on IndexedSlices: lazy, the accumulators of
 * rows not in the update keep their values and their rows stay; a
 * touched row's update is the dense one's */
static void
t_momentum_lazy(void)
{
	int64_t ids[3] = {5, 2, 5};
	float g[3 * WIDTH] = {1, 2, 3, 4, -1, -1, -1, -1, 0.5f, 0, 0, 0};
	double h[3] = {0.1, 0.9, 1.0};
	unsigned char ok;
	float *d = dense(ids, 3, g);
	Fix f;

	fix_init(&f);
	fill(&f, 0);
	for (int i = 0; i < ROWS * WIDTH; i++) /* momentum at work */
		data(&f, 1)[i] = data(&f, 4)[i] = 1;
	ASSERT_EQ(f.c.apply(&f.c, 0, TFG_OPT_MOMENTUM, 1, ids, 3, g, h, &ok),
		  TFG_OK);
	ASSERT_EQ(f.c.apply(&f.c, 3, TFG_OPT_MOMENTUM, 4, NULL, 0, d, h, &ok),
		  TFG_OK);
	for (int r = 0; r < ROWS; r++)
		for (int k = 0; k < WIDTH; k++) {
			int i = r * WIDTH + k;
			if (r == 2 || r == 5) {
				ASSERT(data(&f, 0)[i] == data(&f, 3)[i]);
				ASSERT(data(&f, 1)[i] == data(&f, 4)[i]);
			} else {
				ASSERT(data(&f, 1)[i] == 1);
				ASSERT(data(&f, 4)[i] == 0.9f);
				ASSERT(data(&f, 0)[i] == (float)sin(i * 0.37) *
							 0.5f);
			}
		}
	ASSERT(data(&f, 1)[5 * WIDTH] == 0.9f + 1 + 0.5f);
	free(d);
	rt_server_free(&f.s);
}

/* an id past the table, a non-finite gradient, Adam's and sync's rows
 * (whose updates are dense) are refused, the variable unchanged */
static void
t_refused(void)
{
	int64_t ids[3] = {1, 1000, 2};
	float g[3 * WIDTH] = {0}, before[ROWS * WIDTH];
	double h[5] = {0.1, 0.9, 0.999, 1e-8, 1.0};
	unsigned char ok = 7;
	Fix f;

	fix_init(&f);
	fill(&f, 0.1f);
	memcpy(before, data(&f, 0), sizeof before);
	ASSERT_EQ(f.c.apply(&f.c, 0, TFG_OPT_SGD, 0, ids, 3, g, h, &ok),
		  TFG_EINVAL);
	ASSERT(ok == 0);
	ASSERT(strstr(f.st.err.msg, "/job:local/task:0: the update of "
			"variable 'a': row id 1000 (element 1 of its ids) is "
			"outside its 1000 rows"));
	ids[1] = 3;
	g[5] = NAN;
	ASSERT_EQ(f.c.apply(&f.c, 0, TFG_OPT_SGD, 0, ids, 3, g, h, &ok),
		  TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "the gradient of variable 'a' is "
			"non-finite (NaN at element 5)"));
	g[5] = 0;
	ASSERT_EQ(f.c.apply(&f.c, 0, TFG_OPT_ADAM, 1, ids, 3, g, h, &ok),
		  TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "no update 2 of variable 0"));
	ASSERT_EQ(f.c.apply(&f.c, 0, TFG_OPT_SGD | TFG_OPT_SYNC, 1, ids, 3,
			    g, h, &ok), TFG_EINVAL);
	ASSERT_EQ(tfg_rt_apply_rows(&f.c, 0, TFG_OPT_SGD, 0, NULL, 2, g, h,
				    &ok), TFG_EINVAL);
	ASSERT(strstr(f.st.err.msg, "an update of 2 rows without their ids"));
	ASSERT(memcmp(before, data(&f, 0), sizeof before) == 0);
	/* none at all: nothing changes, and it is done */
	ASSERT_EQ(tfg_rt_apply_rows(&f.c, 0, TFG_OPT_SGD, 0, NULL, 0, g, h,
				    &ok), TFG_OK);
	ASSERT(ok == 1);
	ASSERT(memcmp(before, data(&f, 0), sizeof before) == 0);
	rt_server_free(&f.s);
}

TEST_MAIN({"rows_are_dense", t_rows_are_dense},
	  {"momentum_lazy", t_momentum_lazy}, {"refused", t_refused})
