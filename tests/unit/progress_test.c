/*
 * tests/unit/progress_test.c: progress() records and record()'s CSV
 * rows (runtime/progress.c; spec §8.13 "progress", §8.14 "record").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/role.h"
#include "tests/unit/test.h"

/* for epoch in 0..4 { for b in batches(...): 600 of 100 rows } */
static void
t_track(void)
{
	static const char *const names[] = {"loss", "n", "tiny"};
	static const double vals[] = {0.07312, 42, 1.5e-5};
	static const int integer[] = {0, 1, 0};
	RtTrack tr = {0};
	RtProgress p;

	rt_track_call(&tr, &p, -1, 0, NULL, NULL, NULL);
	ASSERT(p.frac < 0); /* in no loop: no bar, no epoch, no ex/s */
	ASSERT_EQ(p.nepoch, 0);
	ASSERT_EQ(p.examples, -1);
	ASSERT_EQ(p.step, 1);
	rt_track_push(&tr, 4, -1);
	rt_track_at(&tr, 1, -1);
	rt_track_push(&tr, 600, 0);
	rt_track_at(&tr, 299, 100);
	rt_track_call(&tr, &p, -1, 3, names, vals, integer);
	ASSERT_NEAR(p.frac, (1 + 300.0 / 600) / 4, 1e-12);
	ASSERT_EQ(p.epoch, 2);
	ASSERT_EQ(p.nepoch, 4);
	ASSERT_EQ(p.step, 2);
	ASSERT_EQ(p.examples, 100);
	ASSERT_STREQ(p.values, "loss 0.0731  n 42  tiny 1.500e-05");
	rt_track_at(&tr, 599, 40);
	rt_track_call(&tr, &p, 7000, 0, NULL, NULL, NULL);
	ASSERT_NEAR(p.frac, 0.5, 1e-12);
	ASSERT_EQ(p.step, 7000);
	ASSERT_EQ(p.examples, 140);
	rt_track_pop(&tr);
	rt_track_call(&tr, &p, -1, 0, NULL, NULL, NULL);
	ASSERT_EQ(p.nepoch, 0); /* one loop is no epoch */
	ASSERT_EQ(p.examples, -1);
	ASSERT_NEAR(p.frac, 0.5, 1e-12);
	rt_track_pop(&tr);
	ASSERT_EQ(tr.depth, 0);
}

static void
t_encode(void)
{
	RtProgress p = {0}, q;
	char buf[RT_PROGRESS_MAX];
	size_t n;

	p.end = 1, p.t = 12.5, p.frac = 0.375, p.epoch = 2, p.nepoch = 4;
	p.step = 1410, p.examples = 141000;
	strcpy(p.values, "loss 0.0731  acc 0.9100");
	n = rt_progress_encode(buf, sizeof buf, &p);
	ASSERT_EQ(rt_progress_decode(&q, (unsigned char *)buf, n), 0);
	ASSERT_EQ(q.end, 1);
	ASSERT_NEAR(q.t, 12.5, 1e-9);
	ASSERT_NEAR(q.frac, 0.375, 1e-9);
	ASSERT_EQ(q.epoch, 2);
	ASSERT_EQ(q.nepoch, 4);
	ASSERT_EQ(q.step, 1410);
	ASSERT_EQ(q.examples, 141000);
	ASSERT_STREQ(q.values, "loss 0.0731  acc 0.9100");
	/* malformed: short, a control byte, an end kind out of range */
	ASSERT_EQ(rt_progress_decode(&q, (unsigned char *)"1 2.0", 5), -1);
	ASSERT_EQ(rt_progress_decode(&q, (unsigned char *)"0 1 0.5 0 0 1 -1 \033[2J",
				     21), -1);
	ASSERT_EQ(rt_progress_decode(&q, (unsigned char *)"7 1 0.5 0 0 1 -1 ",
				     17), -1);
}

static void
t_csv(void)
{
	static const char *cols[] = {"step", "loss", "acc", "time"};
	RtCsv f = {NULL, 4, cols, 3};
	char path[] = "/tmp/tfg-progress-XXXXXX", text[256];
	char *row1[] = {"1", "0.5", NULL, NULL}, *row2[] = {"2", NULL, "0.9",
							    NULL};
	FILE *fp = NULL, *in;
	size_t n;
	TfgError e;
	int fd = mkstemp(path);

	ASSERT(fd >= 0);
	close(fd);
	f.path = path;
	ASSERT_EQ(rt_csv_row(&fp, &f, row1, 1.25, &e), TFG_OK);
	ASSERT_EQ(rt_csv_row(&fp, &f, row2, 2.5, &e), TFG_OK);
	/* flushed as written: readable before the file is closed */
	ASSERT((in = fopen(path, "r")) != NULL);
	n = fread(text, 1, sizeof text - 1, in);
	text[n] = '\0';
	fclose(in);
	fclose(fp);
	unlink(path);
	ASSERT_STREQ(text, "step,loss,acc,time\n1,0.5,,1.250\n2,,0.9,2.500\n");
	fp = NULL;
	f.path = "/nonexistent/dir/c.csv";
	ASSERT_EQ(rt_csv_row(&fp, &f, row1, 0, &e), TFG_EIO);
	ASSERT_STREQ(e.msg, "cannot write /nonexistent/dir/c.csv: No such "
		     "file or directory");
}

/* A terminal's line at its width: fields go by priority, the bar first,
 * then the epoch, the rate, the time left, the values; no number is
 * cut (spec §8.13 "progress"). */
static void
t_fit(void)
{
	static const char *const f[] = {
		"epoch 2/3", "[=========>..........]", " 45%", "step 1164",
		"loss 0.1172", "12,345 ex/s", "ETA 0:13"};
	static const int prio[] = {RT_FIT_EPOCH, RT_FIT_BAR, RT_FIT_KEEP,
				   RT_FIT_KEEP, RT_FIT_VALUES, RT_FIT_RATE,
				   RT_FIT_ETA};
	static const int gap[] = {1, 1, 1, 2, 2, 2, 2};
	char buf[400];
	size_t n;

	/* wide enough: all of it */
	n = rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 200);
	ASSERT_STREQ(buf, "epoch 2/3 [=========>..........]  45%  step 1164  "
		     "loss 0.1172  12,345 ex/s  ETA 0:13");
	ASSERT_EQ(n, strlen(buf));
	/* 80 columns: the bar goes; the rate and the time left stay */
	n = rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 80);
	ASSERT_STREQ(buf, "epoch 2/3  45%  step 1164  loss 0.1172  12,345 "
		     "ex/s  ETA 0:13");
	ASSERT(n < 80);
	/* narrower, one by one */
	rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 60);
	ASSERT_STREQ(buf, " 45%  step 1164  loss 0.1172  12,345 ex/s  ETA 0:13");
	rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 40);
	ASSERT_STREQ(buf, " 45%  step 1164  loss 0.1172  ETA 0:13");
	rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 30);
	ASSERT_STREQ(buf, " 45%  step 1164  loss 0.1172");
	/* what must stay is cut at the width, the last column free */
	rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 10);
	ASSERT_EQ(strlen(buf), 9);
	/* width 0: a log's line, every field */
	rt_progress_fit(buf, sizeof buf, f, prio, gap, 7, 0);
	ASSERT(strstr(buf, "[=========>") != NULL);
}

TEST_MAIN({"track", t_track}, {"encode", t_encode}, {"csv", t_csv},
	  {"fit", t_fit})
