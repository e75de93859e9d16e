/*
 * tests/unit/device_test.c: device strings, merging and completion
 * (spec §7.2 "Device strings" to §7.4 "Placement"), and dtype promotion and
 * broadcasting (spec §5.4 "The result dtype of a binary operation",
 * §6.1 "Broadcasting").
 */
#include "compiler/compiler_int.h"
#include "tests/unit/test.h"

static Arena *A;

static Device
parse_ok(const char *s)
{
	Device d;
	const char *err = NULL;
	int off = -1;

	if (dev_parse(A, &d, s, &err, &off) != 0)
		TEST_FAIL_("'%s' did not parse: %s at %d", s, err, off);
	return d;
}

static void
parse_bad(const char *s, int want_off)
{
	Device d;
	const char *err = NULL;
	int off = -1;

	ASSERT_EQ(dev_parse(A, &d, s, &err, &off), -1);
	ASSERT(err != NULL);
	ASSERT_EQ(off, want_off);
}

static void
t_parse(void)
{
	Device d = parse_ok("/job:local/task:1/cpu:0");
	ASSERT_STREQ(d.job, "local");
	ASSERT_EQ(d.task, 1);
	ASSERT_EQ(d.kind, DEV_CPU);
	ASSERT_EQ(d.index, 0);

	d = parse_ok("/gpu:3");
	ASSERT(d.job == NULL);
	ASSERT_EQ(d.task, -1);
	ASSERT_EQ(d.kind, DEV_GPU);
	ASSERT_EQ(d.index, 3);

	d = parse_ok("/device:CPU:2");
	ASSERT_EQ(d.kind, DEV_CPU);
	ASSERT_EQ(d.index, 2);

	d = parse_ok("/job:ps/replica:0/task:4/device:GPU:1");
	ASSERT_STREQ(d.job, "ps");
	ASSERT_EQ(d.task, 4);
	ASSERT_EQ(d.kind, DEV_GPU);

	d = parse_ok("");
	ASSERT(d.job == NULL && d.task == -1 && d.kind == DEV_UNSET);
	d = parse_ok("/task:2");
	ASSERT(d.job == NULL && d.task == 2);
}

static void
t_parse_errors(void)
{
	parse_bad("job:local", 0);
	parse_bad("/job:", 5);
	parse_bad("/task:x", 6);
	parse_bad("/task:1/job:a", 7);
	parse_bad("/cpu:0/cpu:1", 6);
	parse_bad("/tpu:0", 0);
	parse_bad("/job:a b", 6);
	parse_bad("/gpu:", 5);
	parse_bad("/replica:1", 9);
	parse_bad("/task:1x", 7);
}

static void
t_merge(void)
{
	Device outer = parse_ok("/job:worker/task:1");
	Device inner = parse_ok("/gpu:0");
	Device m = dev_merge(outer, inner);

	/* inner fields win, unset ones are inherited */
	ASSERT_STREQ(m.job, "worker");
	ASSERT_EQ(m.task, 1);
	ASSERT_EQ(m.kind, DEV_GPU);
	ASSERT_EQ(m.index, 0);

	m = dev_merge(m, parse_ok("/task:0/cpu:2"));
	ASSERT_STREQ(m.job, "worker");
	ASSERT_EQ(m.task, 0);
	ASSERT_EQ(m.kind, DEV_CPU);
	ASSERT_EQ(m.index, 2);

	m = dev_merge(parse_ok("/job:ps"), parse_ok("/job:worker"));
	ASSERT_STREQ(m.job, "worker");
	ASSERT_EQ(m.task, -1);

	m = dev_merge(parse_ok("/job:ps/task:3"), parse_ok(""));
	ASSERT_STREQ(m.job, "ps");
	ASSERT_EQ(m.task, 3);

	ASSERT_STREQ(dev_str(A, parse_ok("/job:a/task:1/device:GPU:2")),
		     "/job:a/task:1/gpu:2");
	ASSERT_STREQ(dev_str(A, parse_ok("/task:1")), "/task:1");
}

static void
t_complete(void)
{
	Program p = {0};
	CJob jobs[2] = {{"ps", 0, 1, {0}}, {"worker", 1, 2, {0}}};
	Device d;

	p.njob = 2;
	p.jobs = jobs;
	d = dev_complete(&p, parse_ok("/gpu:1"));
	ASSERT_STREQ(d.job, "ps");
	ASSERT_EQ(d.task, 0);
	ASSERT_EQ(d.kind, DEV_GPU);
	ASSERT_EQ(d.index, 1);
	d = dev_complete(&p, parse_ok("/job:worker/task:1"));
	ASSERT_EQ(d.kind, DEV_CPU);
	ASSERT_EQ(dev_task_index(&p, d), 2);
	ASSERT_EQ(dev_task_index(&p, dev_complete(&p,
				 parse_ok("/job:worker/task:2"))), -1);
	ASSERT_EQ(dev_task_index(&p, dev_complete(&p,
				 parse_ok("/job:nope"))), -1);
}

static void
t_promote(void)
{
	ASSERT_EQ(dtype_promote(TFG_I32, 0, TFG_I32, 0), TFG_I32);
	ASSERT_EQ(dtype_promote(TFG_I32, 0, TFG_I64, 0), TFG_I64);
	ASSERT_EQ(dtype_promote(TFG_I32, 0, TFG_F32, 0), TFG_F64);
	ASSERT_EQ(dtype_promote(TFG_I64, 0, TFG_F32, 0), TFG_F64);
	ASSERT_EQ(dtype_promote(TFG_F32, 0, TFG_F64, 0), TFG_F64);
	ASSERT_EQ(dtype_promote(TFG_BOOL, 0, TFG_I32, 0), TFG_I32);
	/* weak literals follow the other side */
	ASSERT_EQ(dtype_promote(TFG_I32, 1, TFG_F32, 0), TFG_F32);
	ASSERT_EQ(dtype_promote(TFG_I32, 1, TFG_I64, 0), TFG_I64);
	ASSERT_EQ(dtype_promote(TFG_F32, 0, TFG_I32, 1), TFG_F32);
	ASSERT_EQ(dtype_promote(TFG_F32, 1, TFG_I64, 0), TFG_F32);
	ASSERT_EQ(dtype_promote(TFG_F32, 1, TFG_F64, 0), TFG_F64);
	ASSERT_EQ(dtype_promote(TFG_I32, 1, TFG_F32, 1), TFG_F32);
	ASSERT_EQ(dtype_promote(TFG_I32, 1, TFG_I64, 1), TFG_I64);
}

static void
t_broadcast(void)
{
	TfgShape a = {2, {2, 3}}, b = {1, {3}}, c = {2, {2, 1}},
		 d = {2, {1, 4}}, e = {1, {4}}, s = {0, {0}}, out;

	ASSERT_EQ(shape_broadcast(&out, &a, &b), 0);
	ASSERT_EQ(out.rank, 2);
	ASSERT_EQ(out.dims[0], 2);
	ASSERT_EQ(out.dims[1], 3);
	ASSERT_EQ(shape_broadcast(&out, &c, &d), 0);
	ASSERT_EQ(out.dims[0], 2);
	ASSERT_EQ(out.dims[1], 4);
	ASSERT_EQ(shape_broadcast(&out, &a, &e), -1);
	ASSERT_EQ(shape_broadcast(&out, &s, &a), 0);
	ASSERT_EQ(out.rank, 2);
}

static void
setup(void)
{
	A = arena_new();
}

static void
teardown(void)
{
	arena_free(A);
}

TEST_MAIN_FIXTURE(setup, teardown, {"parse", t_parse},
		  {"parse_errors", t_parse_errors}, {"merge", t_merge},
		  {"complete", t_complete}, {"promote", t_promote},
		  {"broadcast", t_broadcast})
