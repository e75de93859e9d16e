/*
 * tests/unit/aot_test.c: runtime/aot.c's tfg_aot_run and runtime/part.c's
 * tfg_plan_digest (spec/language.md §10.3 "Ahead-of-time compilation"), with
 * hand-written parts in place of generated ones: feeds come from the caller's
 * buffers, fetches go to them, the arena is aligned, and a key that is neither
 * fails the part instead of touching memory.
 */
#include "tests/unit/test.h"

#include <stdlib.h>

#include "runtime/tfg.h"

static size_t seen_align;

/* y = 2 * x + n (x: f32[3] key 4, n: i32[] key 7), s = sum(y) key 9 */
static int
part_ok(struct RtCtx *c, char *arena)
{
	float *x = (float *)arena, *y = x + 4, s = 0;
	int32_t n;
	int rc;

	seen_align = (size_t)((uintptr_t)arena % 64);
	if ((rc = tfg_rt_recv(c, 4, x)) || (rc = tfg_rt_recv(c, 7, &n)))
		return rc;
	for (int i = 0; i < 3; i++)
		s += y[i] = 2 * x[i] + (float)n;
	if ((rc = tfg_rt_send(c, 2, y)))
		return rc;
	return tfg_rt_send(c, 9, &s);
}

static int
part_stray(struct RtCtx *c, char *arena)
{
	return tfg_rt_recv(c, 3, arena);
}

static const TfgAotEdge in[2] = {{4, 12}, {7, 4}};
static const TfgAotEdge out[2] = {{2, 12}, {9, 4}};

static void
t_run(void)
{
	TfgAotSig sig = {part_ok, 100, 2, in, 2, out};
	float x[3] = {1, 2, 3.5f}, y[3] = {0}, s = 0;
	int32_t n = -1;
	const void *feeds[2] = {x, &n};
	void *fetches[2] = {y, &s};

	ASSERT_EQ(tfg_aot_run(&sig, feeds, fetches), TFG_OK);
	ASSERT_EQ(seen_align, 0);
	ASSERT_NEAR(y[0], 1, 0);
	ASSERT_NEAR(y[1], 3, 0);
	ASSERT_NEAR(y[2], 6, 0);
	ASSERT_NEAR(s, 10, 0);
	/* Calls are independent: a second one with other values. */
	n = 10;
	ASSERT_EQ(tfg_aot_run(&sig, feeds, fetches), TFG_OK);
	ASSERT_NEAR(s, 3 * 10 + 2 * 6.5, 0);
}

static void
t_errors(void)
{
	TfgAotSig sig = {part_stray, 0, 2, in, 2, out};
	float x[3] = {0}, y[3];
	int32_t n = 0;
	float s;
	const void *feeds[2] = {x, &n};
	void *fetches[2] = {y, &s};

	ASSERT_EQ(tfg_aot_run(&sig, feeds, fetches), TFG_EINVAL);
	ASSERT_EQ(tfg_aot_run(NULL, feeds, fetches), TFG_EINVAL);
	sig.fn = part_ok;
	ASSERT_EQ(tfg_aot_run(&sig, NULL, fetches), TFG_EINVAL);
	feeds[1] = NULL;
	ASSERT_EQ(tfg_aot_run(&sig, feeds, fetches), TFG_EINVAL);
}

static void
t_digest(void)
{
	RtTask tasks[1] = {{"local", 0, "127.0.0.1:1", "/job:local/task:0"}};
	RtEdge edges[2] = {
	    {0, "x@feed;a->a", 0, 0, TFG_F32, {1, {3}}, 12, 0},
	    {1, "y;a->a", 0, 0, TFG_F32, {1, {3}}, 12, 0}};
	RtFeed feeds[1] = {{"x", TFG_F32, {1, {3}}, 0}};
	RtFetch fetches[1] = {{"y", 1}};
	int stasks[1] = {0}, done[1] = {0};
	RtSig sigs[1] = {{0, 1, feeds, 1, fetches, 1, stasks, done}};
	TfgPlan plan = {42, "p.tfg", 1, tasks, 2, edges, 1, sigs, 0, NULL, 0,
			0, NULL, 0};
	uint64_t d = tfg_plan_digest(&plan);

	ASSERT_EQ(tfg_plan_digest(&plan), d);
	tasks[0].addr = "10.0.0.1:2"; /* addresses are not compiled in */
	ASSERT_EQ(tfg_plan_digest(&plan), d);
	fetches[0].key = 0;
	ASSERT(tfg_plan_digest(&plan) != d);
	fetches[0].key = 1;
	edges[1].shape.dims[0] = 4;
	ASSERT(tfg_plan_digest(&plan) != d);
	edges[1].shape.dims[0] = 3;
	edges[1].nbytes = 13; /* as a string edge's text would */
	ASSERT(tfg_plan_digest(&plan) != d);
	edges[1].nbytes = 12;
	ASSERT_EQ(tfg_plan_digest(&plan), d);
	plan.hash = 43;
	ASSERT(tfg_plan_digest(&plan) != d);
}

TEST_MAIN({"run", t_run}, {"errors", t_errors}, {"digest", t_digest})
