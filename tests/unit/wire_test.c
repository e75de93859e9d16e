/*
 * tests/unit/wire_test.c: the 112-byte message header (spec/design.md
 * "Wire format"): byte layout, round trip, and every validation failure
 * of rt_wire_check, each of which must name the peer; string edges,
 * whose byte count is their own (RtEdge.nbytes); the sender's
 * incarnation in the last field (design.md "Restarts").
 */
#include "tests/unit/test.h"

#include <stdlib.h>

#include "runtime/role.h"

static RtTask tasks[2] = {
	{"local", 0, "127.0.0.1:1", "/job:local/task:0"},
	{"local", 1, "127.0.0.1:2", "/job:local/task:1"},
};
static RtEdge edges[3] = {
	{0, "x;/job:local/task:0->/job:local/task:1", 0, 1, TFG_F32,
	 {2, {2, 3}}, 24, 0},
	{1, "y;/job:local/task:1->/job:local/task:0", 1, 0, TFG_I64, {0, {0}},
	 8, 0},
	/* string[2] holding "ab" and "cde": 2 records and 5 bytes of text */
	{2, "s;/job:local/task:0->/job:local/task:1", 0, 1, TFG_STRING,
	 {1, {2}}, 2 * TFG_STRING_RECORD + 5, 0},
};
static RtFeed feeds[1] = {{"x", TFG_F32, {2, {2, 3}}, 0}};
static RtFetch fetches[1] = {{"y", 1}};
static int sig_tasks[2] = {0, 1}, sig_done[2] = {0, 0};
static RtSig sigs[1] = {{0, 1, feeds, 1, fetches, 2, sig_tasks, sig_done}};
static RtSession sessions[1] = {{.task = 0}};
static const TfgPlan plan = {0xfeedface12345678ull, "t.tfg", 2, tasks, 3,
			     edges, 1, sigs, 1, sessions, 0, 0, NULL, 0};

static const TfgPlan *cur = &plan; /* the plan check() validates with */

#define EPOCH 0x1122334455667788ull /* the senders' incarnation */

static unsigned char buf[RT_HDR_SIZE + 64];
static TfgError err;
static RtHdr got;

/* A valid TENSOR of edge 0 from task 0 (to task 1), 24 bytes of body. */
static RtHdr
tensor_hdr(void)
{
	RtHdr h;

	rt_hdr_init(&h, &plan, RT_MSG_TENSOR, 7, 0, 0, 24, EPOCH);
	h.dtype = TFG_F32;
	h.rank = 2;
	h.dims[0] = 2;
	h.dims[1] = 3;
	return h;
}

/* Encodes h and checks it as task 1 would; returns the status. */
static tfg_status
check(const RtHdr *h, size_t len)
{
	rt_hdr_encode(buf, h);
	err.msg[0] = '\0';
	return rt_wire_check(&got, cur, 1, buf, len, "127.0.0.1:5555",
			     &err);
}

#define ASSERT_HAS(hay, needle)                                               \
	do {                                                                  \
		if (strstr((hay), (needle)) == NULL)                          \
			TEST_FAIL_("\"%s\" not in \"%s\"", (needle), (hay));  \
	} while (0)

#define EXPECT_BAD(h, len, code, needle)                                      \
	do {                                                                  \
		ASSERT_EQ(check(&(h), (len)), (code));                        \
		if (strstr(err.msg, (needle)) == NULL)                        \
			TEST_FAIL_("\"%s\" not in \"%s\"", (needle),          \
				   err.msg);                                  \
	} while (0)

static void
t_layout(void)
{
	RtHdr h = tensor_hdr(), d;

	h.step = 0x0102030405060708ull;
	h.key = 0;
	rt_hdr_encode(buf, &h);
	ASSERT(memcmp(buf, "TFG1", 4) == 0);
	ASSERT_EQ(buf[4], 9);     /* version 9: STATS */
	ASSERT_EQ(buf[5], 0);
	ASSERT_EQ(buf[6], RT_MSG_TENSOR);
	ASSERT_EQ(buf[8], 0x78);  /* prog, little-endian */
	ASSERT_EQ(buf[15], 0xfe);
	ASSERT_EQ(buf[16], 0x08); /* step */
	ASSERT_EQ(buf[23], 0x01);
	ASSERT_EQ(buf[30], TFG_F32);
	ASSERT_EQ(buf[31], 2);
	ASSERT_EQ(buf[32], 2);    /* dims[0] */
	ASSERT_EQ(buf[40], 3);    /* dims[1] */
	ASSERT_EQ(buf[96], 24);   /* nbytes */
	ASSERT_EQ(buf[104], 0x88); /* epoch, little-endian */
	ASSERT_EQ(buf[111], 0x11);
	rt_hdr_decode(&d, buf);
	ASSERT(d.magic == h.magic && d.step == h.step && d.prog == h.prog);
	ASSERT(d.dims[1] == 3 && d.nbytes == 24 && d.rank == 2);
	ASSERT(d.epoch == EPOCH);
}

static void
t_round_trip(void)
{
	RtHdr h, d;

	memset(&h, 0, sizeof h);
	h.magic = 0x89abcdefu;
	h.version = 0xfffe;
	h.type = 0x1234;
	h.prog = 0x0123456789abcdefull;
	h.step = 0xfedcba9876543210ull;
	h.key = 0xdeadbeefu;
	h.src = 0xffff;
	h.dtype = 0xa5;
	h.rank = 8;
	for (int i = 0; i < 8; i++)
		h.dims[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
	h.nbytes = 0x8000000000000001ull;
	h.epoch = 0xf0e1d2c3b4a59687ull;
	rt_hdr_encode(buf, &h);
	rt_hdr_decode(&d, buf);
	ASSERT_EQ(d.magic, h.magic);
	ASSERT_EQ(d.version, h.version);
	ASSERT_EQ(d.type, h.type);
	ASSERT(d.prog == h.prog && d.step == h.step);
	ASSERT_EQ(d.key, h.key);
	ASSERT_EQ(d.src, h.src);
	ASSERT_EQ(d.dtype, h.dtype);
	ASSERT_EQ(d.rank, h.rank);
	for (int i = 0; i < 8; i++)
		ASSERT(d.dims[i] == h.dims[i]);
	ASSERT(d.nbytes == h.nbytes && d.epoch == h.epoch);
}

static void
t_valid(void)
{
	RtHdr h = tensor_hdr();

	ASSERT_EQ(check(&h, RT_HDR_SIZE + 24), TFG_OK);
	ASSERT_EQ(got.type, RT_MSG_TENSOR);
	rt_hdr_init(&h, &plan, RT_MSG_PING, 0, 0, RT_SRC_CONTROLLER, 20, EPOCH);
	ASSERT_EQ(check(&h, RT_HDR_SIZE + 20), TFG_OK);
	/* START of sig 0 to task 1 carries x: 24 bytes. */
	rt_hdr_init(&h, &plan, RT_MSG_START, 3, 0, 0, 24, EPOCH);
	ASSERT_EQ(check(&h, RT_HDR_SIZE + 24), TFG_OK);
	ASSERT_EQ(rt_start_bytes(&plan, 0, 1), 24);
	ASSERT_EQ(rt_start_bytes(&plan, 0, 0), 0);
	rt_hdr_init(&h, &plan, RT_MSG_SESSION_END, 0, 0, 0, 0, EPOCH);
	ASSERT_EQ(check(&h, RT_HDR_SIZE), TFG_OK);
	rt_hdr_init(&h, &plan, RT_MSG_ERROR, 3, RT_ERROR_NO_PLAN, 0, 5, EPOCH);
	ASSERT_EQ(check(&h, RT_HDR_SIZE + 5), TFG_OK);
}

static void
t_bad_header(void)
{
	RtHdr h = tensor_hdr(), x;

	EXPECT_BAD(h, 50, TFG_EPROTO, "truncated message from 127.0.0.1:5555");
	x = h, x.magic = 0x12345678;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "127.0.0.1:5555: magic");
	x = h, x.version = 1; /* whose last field had to be 0 */
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO,
		   "/job:local/task:0 (127.0.0.1:5555): version 1, expected 9");
	x = h, x.type = 0;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "unknown type 0");
	x = h, x.type = RT_MSG__N;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "unknown type");
	x = h, x.prog ^= 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "different source");
	x = h, x.src = 7;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO,
		   "sender 7 is not a task");
	x = h, x.src = RT_SRC_CONTROLLER; /* the controller sends no tensor */
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "the controller");
	x = h, x.step = 5ull << 48;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "names no client");
	x = h, x.epoch = 0;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO,
		   "bad TENSOR from /job:local/task:0 (127.0.0.1:5555): "
		   "incarnation (epoch) 0");
}

static void
t_bad_size(void)
{
	RtHdr h = tensor_hdr(), x;

	/* nbytes says 24 but the message has 16 bytes of body */
	EXPECT_BAD(h, RT_HDR_SIZE + 16, TFG_EPROTO,
		   "header says 24 body bytes, message has 16");
	x = h, x.nbytes = RT_MAX_BODY + 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_ETOOBIG, "over the limit");
	/* nbytes consistent with the message but not with the edge */
	x = h, x.nbytes = 16;
	EXPECT_BAD(x, RT_HDR_SIZE + 16, TFG_EPROTO, "needs 24 bytes");
	/* a START whose feeds have the wrong size */
	rt_hdr_init(&x, &plan, RT_MSG_START, 3, 0, 0, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "signature 0 needs 24");
}

static void
t_bad_key(void)
{
	RtHdr h = tensor_hdr(), x;

	x = h, x.key = 3;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "edge key 3 out of range");
	x = h, x.key = 1; /* edge 1 goes 1 -> 0, not 0 -> 1 */
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "does not lead");
	rt_hdr_init(&x, &plan, RT_MSG_START, 3, 1, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "signature 1 out of range");
	rt_hdr_init(&x, &plan, RT_MSG_DONE, 3, 9, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "signature 9 out of range");
	rt_hdr_init(&x, &plan, RT_MSG_RUN_SESSION, 0, 1, RT_SRC_CONTROLLER, 0,
		    EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "session 1 out of range");
	rt_hdr_init(&x, &plan, RT_MSG_SESSION_END, 0, 1, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "session 1 out of range");
	rt_hdr_init(&x, &plan, RT_MSG_OUTPUT, 0, 0, 1, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "bad OUTPUT from "
		   "/job:local/task:1 (127.0.0.1:5555): session 0 runs on "
		   "/job:local/task:0");
	/* PROGRESS (spec/design.md "Progress and curves"): as OUTPUT, and
	   a body of at most RT_PROGRESS_MAX bytes */
	rt_hdr_init(&x, &plan, RT_MSG_PROGRESS, 0, 0, 0, 20, EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 20), TFG_OK);
	rt_hdr_init(&x, &plan, RT_MSG_PROGRESS, 0, 1, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "session 1 out of range");
	rt_hdr_init(&x, &plan, RT_MSG_PROGRESS, 0, 0, 1, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "bad PROGRESS from "
		   "/job:local/task:1 (127.0.0.1:5555): session 0 runs on "
		   "/job:local/task:0");
	rt_hdr_init(&x, &plan, RT_MSG_PROGRESS, 0, 0, 0, RT_PROGRESS_MAX + 1,
		    EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + RT_PROGRESS_MAX + 1, TFG_EPROTO,
		   "1025 body bytes, at most 1024");
	/* STATS (spec/design.md "Link counts"): from the controller alone,
	   and its answer from a task alone */
	rt_hdr_init(&x, &plan, RT_MSG_STATS, 0, 0, RT_SRC_CONTROLLER, 0,
		    EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE), TFG_OK);
	rt_hdr_init(&x, &plan, RT_MSG_STATS, 0, 0, 1, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "bad STATS from "
		   "/job:local/task:1 (127.0.0.1:5555): sender 1 is not");
	rt_hdr_init(&x, &plan, RT_MSG_STATS_DATA, 0, 0, 1, 30, EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 30), TFG_OK);
	rt_hdr_init(&x, &plan, RT_MSG_STATS_DATA, 0, 0, RT_SRC_CONTROLLER, 0,
		    EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "bad STATS_DATA from");
	/* LEAVE (runtime/optim.c): a client's session ended; no body, a
	   session of the sender's, to a task */
	rt_hdr_init(&x, &plan, RT_MSG_LEAVE, 0, 0, 0, 0, EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE), TFG_OK);
	rt_hdr_init(&x, &plan, RT_MSG_LEAVE, 0, 0, 0, 4, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 4, TFG_EPROTO, "bad LEAVE from "
		   "/job:local/task:0 (127.0.0.1:5555): it has no body");
	rt_hdr_init(&x, &plan, RT_MSG_LEAVE, 0, 0, 1, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "bad LEAVE from "
		   "/job:local/task:1 (127.0.0.1:5555): session 0 runs on "
		   "/job:local/task:0");
	rt_hdr_init(&x, &plan, RT_MSG_LEAVE, 0, 1, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "session 1 out of range");
	rt_hdr_init(&x, &plan, RT_MSG_LEAVE, 0, 0, RT_SRC_CONTROLLER, 0,
		    EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "bad LEAVE from");
	rt_hdr_init(&x, &plan, RT_MSG_ERROR, 3, RT_ERROR__N, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "error kind 2 out of range");
	/* START from a task that does not drive the signature */
	rt_hdr_init(&x, &plan, RT_MSG_START, 1ull << 48 | 3, 0, 1, 24, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "is driven from");
}

static void
t_bad_tensor(void)
{
	RtHdr h = tensor_hdr(), x;

	x = h, x.dtype = TFG_F64;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "is f32, got dtype");
	x = h, x.rank = 9;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "rank 9");
	x = h, x.rank = 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "unused dim 1");
	x = h, x.dims[1] = 4;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO,
		   "has shape [2, 3], got [2, 4]");
	x = h, x.rank = 3, x.dims[2] = 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "got [2, 3, 1]");
	x = h, x.dims[0] = UINT64_MAX;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "has shape");
	/* a PING with tensor fields set */
	rt_hdr_init(&x, &plan, RT_MSG_PING, 0, 0, RT_SRC_CONTROLLER, 0, EPOCH);
	x.dims[3] = 1;
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "dims set");
	x.dims[3] = 0, x.dtype = 1;
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "dtype/rank set");
}

static void
put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes the body of edge 2 after the header in buf: records for "ab"
 * and "cde" at offsets off0 and off1, then the text. */
static void
string_body(uint64_t off0, uint64_t len0, uint64_t off1)
{
	unsigned char *b = buf + RT_HDR_SIZE;

	put_u64(b, off0);
	put_u64(b + 8, len0);
	put_u64(b + 16, off1);
	put_u64(b + 24, 3);
	memcpy(b + 32, "abcde", 5);
}

/* A string edge's byte count is RtEdge.nbytes, not numel * size: the
 * header must say it, and the records must stay inside the body. */
static void
t_string(void)
{
	RtHdr h;
	const char *s;
	size_t len;

	ASSERT_EQ(rt_edge_nbytes(&edges[2]), 37);
	ASSERT(rt_edge_valid(&edges[0]) && rt_edge_valid(&edges[2]));
	rt_hdr_init(&h, &plan, RT_MSG_TENSOR, 7, 2, 0, 37, EPOCH);
	h.dtype = TFG_STRING;
	h.rank = 1;
	h.dims[0] = 2;
	ASSERT_EQ(TFG_STRING, 5); /* appended: wire codes 0-4 unchanged */
	rt_hdr_encode(buf, &h);
	string_body(32, 2, 34);
	ASSERT_EQ(rt_wire_check(&got, &plan, 1, buf, RT_HDR_SIZE + 37,
				"127.0.0.1:5555", &err), TFG_OK);
	ASSERT_EQ(tfg_string_at(buf + RT_HDR_SIZE, 37, 1, &s, &len), 0);
	ASSERT(len == 3 && memcmp(s, "cde", 3) == 0);
	/* numel * record size (32) is not the edge's size */
	h.nbytes = 32;
	EXPECT_BAD(h, RT_HDR_SIZE + 32, TFG_EPROTO, "needs 37 bytes");
	h.nbytes = 37;
	string_body(32, 2, 35); /* "cde" would end past the body */
	EXPECT_BAD(h, RT_HDR_SIZE + 37, TFG_EPROTO, "point outside");
	string_body(8, 2, 34); /* text inside the records */
	EXPECT_BAD(h, RT_HDR_SIZE + 37, TFG_EPROTO, "point outside");
	string_body(32, UINT64_MAX, 34); /* a length that wraps */
	EXPECT_BAD(h, RT_HDR_SIZE + 37, TFG_EPROTO, "point outside");
	/* edges whose size disagrees with dtype and shape: a bad plan */
	{
		RtEdge e = edges[2];
		e.nbytes = 31; /* less than the records */
		ASSERT(!rt_edge_valid(&e));
		e = edges[0];
		e.nbytes = 25;
		ASSERT(!rt_edge_valid(&e));
	}
}

/* SPECIALISE (spec.c): only for a generic plan, from the signature's
 * client, with at most a rank and 8 dims per feed (the server checks the
 * shapes); a generic plan takes no START. */
static void
t_specialise(void)
{
	TfgPlan g = plan;
	RtHdr x;

	g.generic = 1;
	rt_hdr_init(&x, &plan, RT_MSG_SPECIALISE, 3, 0, 0, 8 * 3, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "the plan is not generic");
	cur = &g;
	rt_hdr_init(&x, &g, RT_MSG_SPECIALISE, 3, 0, 0, 8 * 3, EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 24), TFG_OK);
	rt_hdr_init(&x, &g, RT_MSG_SPECIALISE, 3, 0, 0, 8 * 10, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 80, TFG_EPROTO, "80 bytes of shapes");
	rt_hdr_init(&x, &g, RT_MSG_SPECIALISE, 3, 1, 0, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "signature 1 out of range");
	rt_hdr_init(&x, &g, RT_MSG_SPECIALISE, 1ull << 48 | 3, 0, 1, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "is driven from");
	rt_hdr_init(&x, &g, RT_MSG_START, 3, 0, 0, 0, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO, "the plan is generic");
	x = tensor_hdr(), x.prog = g.hash; /* a generic plan has no edges */
	g.nedge = 0;
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "edge key 0 out of range");
	cur = &plan;
}

/* RELEASE (spec.c): only for a generic plan, from the signature's client,
 * and its body is 8 bytes, the plan hash of a specialisation of that
 * signature that this task holds for the sender; anything else is an
 * error naming the sender. */
static void
t_release(void)
{
	TfgPlan g = plan, sp = plan;
	uint64_t held[2] = {1, 0};
	unsigned char body[8];
	RtSpec s;
	RtServer c;
	RtHdr x;
	int i;

	g.generic = 1;
	rt_hdr_init(&x, &plan, RT_MSG_RELEASE, 0, 0, 0, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "the plan is not generic");
	cur = &g;
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 0, 0, 8, EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 8), TFG_OK);
	ASSERT_STREQ(rt_msg_name(RT_MSG_RELEASE), "RELEASE");
	EXPECT_BAD(x, RT_HDR_SIZE + 4, TFG_EPROTO,
		   "header says 8 body bytes, message has 4");
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 0, 0, 4, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 4, TFG_EPROTO,
		   "bad RELEASE from /job:local/task:0 (127.0.0.1:5555): 4 "
		   "body bytes, expected 8 (a plan hash)");
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 0, 0, 16, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 16, TFG_EPROTO, "16 body bytes");
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 1, 0, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "signature 1 out of range");
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 0, 1, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "is driven from");
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 0, RT_SRC_CONTROLLER, 8, EPOCH);
	EXPECT_BAD(x, RT_HDR_SIZE + 8, TFG_EPROTO, "not a task of the plan");
	cur = &plan;
	/* the body, against one specialisation held here for task 0 */
	sp.hash = 0x5555aaaa5555aaaaull;
	memset(&s, 0, sizeof s);
	s.plan = &sp;
	s.held = held;
	memset(&c, 0, sizeof c);
	c.proc.plan = &g;
	c.specs = &s;
	c.nspec = 1;
	rt_hdr_init(&x, &g, RT_MSG_RELEASE, 0, 0, 0, 8, EPOCH);
	rt_put_le(body, sp.hash, 8);
	ASSERT_EQ(rt_release_check(&c, &x, body, &i, &err), TFG_OK);
	ASSERT_EQ(i, 0);
	rt_put_le(body, 0xdeadbeefull, 8);
	ASSERT_EQ(rt_release_check(&c, &x, body, &i, &err), TFG_EPROTO);
	ASSERT_EQ(i, -1);
	ASSERT_HAS(err.msg, "bad RELEASE from /job:local/task:0: plan "
			    "00000000deadbeef is no specialisation of "
			    "signature 0 held here");
	memset(body, 0xff, sizeof body); /* garbled */
	ASSERT_EQ(rt_release_check(&c, &x, body, &i, &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "plan ffffffffffffffff is no specialisation");
	rt_put_le(body, sp.hash, 8);
	held[0] = 0; /* released already */
	ASSERT_EQ(rt_release_check(&c, &x, body, &i, &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "it does not hold the specialisation of plan "
			    "5555aaaa5555aaaa");
	held[0] = 1;
	s.sig = 1; /* another signature's */
	ASSERT_EQ(rt_release_check(&c, &x, body, &i, &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "is no specialisation of signature 0");
	s.sig = 0;
	s.plan = NULL; /* a free slot */
	ASSERT_EQ(rt_release_check(&c, &x, body, &i, &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "is no specialisation");
}

/* A START whose prog names no plan here, on a generic plan: let in by
 * rt_wire_check_lost when all else is right, whatever its body's size
 * (only the missing plan knows it), so that it can be answered; every
 * other message, and every other fault, is refused as before. */
static void
t_lost_start(void)
{
	TfgPlan g = plan, g1;
	RtSig one = sigs[0];
	RtHdr x;

#define LOST(h, len) (rt_hdr_encode(buf, &(h)),                               \
		      rt_wire_check_lost(&got, &g, 1, buf, (len),             \
					 "127.0.0.1:5555", &err))
	g.generic = 1;
	rt_hdr_init(&x, &g, RT_MSG_START, 3, 0, 0, 24, EPOCH);
	x.prog = 0x0123456789abcdefull;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 24), TFG_OK);
	ASSERT_EQ(got.type, RT_MSG_START);
	x.nbytes = 5;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 5), TFG_OK);
	/* rt_wire_check still refuses it */
	rt_hdr_encode(buf, &x);
	ASSERT_EQ(rt_wire_check(&got, &g, 1, buf, RT_HDR_SIZE + 5, NULL,
				&err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "different source or plan");
	/* the generic plan's own prog: START has no place there */
	x.prog = g.hash;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 5), TFG_EPROTO);
	ASSERT_HAS(err.msg, "the plan is generic");
	x.prog = 0x0123456789abcdefull;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 4), TFG_EPROTO);
	ASSERT_HAS(err.msg, "header says 5 body bytes, message has 4");
	x.rank = 1;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 5), TFG_EPROTO);
	ASSERT_HAS(err.msg, "dtype/rank set");
	x.rank = 0, x.key = 1;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 5), TFG_EPROTO);
	ASSERT_HAS(err.msg, "signature 1 out of range");
	x.key = 0, x.src = 1, x.step = 1ull << 48 | 3;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 5), TFG_EPROTO);
	ASSERT_HAS(err.msg, "is driven from");
	x.src = 0, x.step = 3, x.type = RT_MSG_DONE;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 5), TFG_EPROTO);
	ASSERT_HAS(err.msg, "bad DONE from /job:local/task:0 (127.0.0.1:5555): "
			    "program 0123456789abcdef");
	x = tensor_hdr(), x.prog = 0x0123456789abcdefull;
	ASSERT_EQ(LOST(x, RT_HDR_SIZE + 24), TFG_EPROTO);
	ASSERT_HAS(err.msg, "different source or plan");
	/* a task the signature does not take */
	one.ntask = 1;
	g1 = g;
	g1.sigs = &one;
	rt_hdr_init(&x, &g, RT_MSG_START, 3, 0, 0, 0, EPOCH);
	x.prog = 0x0123456789abcdefull;
	rt_hdr_encode(buf, &x);
	ASSERT_EQ(rt_wire_check_lost(&got, &g1, 1, buf, RT_HDR_SIZE, NULL,
				     &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "this task takes no part in signature 0");
	/* a plan that is not generic has no specialisations to lose */
	ASSERT_EQ(rt_wire_check_lost(&got, &plan, 1, buf, RT_HDR_SIZE, NULL,
				     &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "different source or plan");
#undef LOST
}

/* ABORT (design.md "Step failures"): only from the step's client (its
 * client bits are its sender, its counter bits not 0) to another task,
 * key 0, and a reason of 1 to RT_ABORT_MAX bytes of one-line text;
 * anything else is refused naming the sender, never read past. */
static void
t_abort(void)
{
	static unsigned char big[RT_HDR_SIZE + RT_ABORT_MAX + 1];
	RtHdr x;

	memcpy(buf + RT_HDR_SIZE, "why", 3);
	rt_hdr_init(&x, &plan, RT_MSG_ABORT, 3, 0, 0, 3, EPOCH);
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 3), TFG_OK);
	ASSERT_EQ(got.type, RT_MSG_ABORT);
	ASSERT_STREQ(rt_msg_name(RT_MSG_ABORT), "ABORT");
	/* the header */
	EXPECT_BAD(x, RT_HDR_SIZE + 2, TFG_EPROTO,
		   "bad ABORT from /job:local/task:0 (127.0.0.1:5555): header "
		   "says 3 body bytes, message has 2");
	EXPECT_BAD(x, 100, TFG_EPROTO, "truncated message");
	x.key = 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO,
		   "bad ABORT from /job:local/task:0 (127.0.0.1:5555): key 1, "
		   "expected 0");
	x.key = 0, x.rank = 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "dtype/rank set");
	x.rank = 0, x.dims[7] = 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "dims set");
	x.dims[7] = 0, x.epoch = 0;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "incarnation (epoch) 0");
	x.epoch = EPOCH;
	/* who sends it, for which step, to whom */
	x.step = 1ull << 48 | 3; /* task 1's step, from task 0 */
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO,
		   "step 0001000000000003 is not one it drives");
	x.step = 0; /* no step has counter 0 */
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "is not one it drives");
	x.step = RT_STEP(0, 0xbeef, 0); /* nor with a tag */
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO,
		   "step 0000beef00000000 is not one it drives");
	x.step = RT_STEP(0, 0xbeef, 3);
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 3), TFG_OK);
	x.step = RT_STEP(5, 0xbeef, 3);
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "names no client task");
	x.step = 5ull << 48 | 3;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "names no client task");
	x.step = 3, x.src = RT_SRC_CONTROLLER;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "is not a task of the plan");
	x.src = 1, x.step = 1ull << 48 | 3; /* task 1's own, to task 1 */
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO,
		   "bad ABORT from /job:local/task:1 (127.0.0.1:5555): sent to "
		   "itself, not to a task of its step");
	x.src = 0, x.step = 3;
	rt_hdr_encode(buf, &x);
	ASSERT_EQ(rt_wire_check(&got, &plan, -1, buf, RT_HDR_SIZE + 3, NULL,
				&err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "sent to the controller");
	/* the reason */
	x.nbytes = 0;
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO,
		   "a reason of 0 bytes, expected 1 to 1024");
	memcpy(buf + RT_HDR_SIZE, "w\0y", 3);
	x.nbytes = 3;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO,
		   "byte 1 of its reason is 0x00, not text");
	memcpy(buf + RT_HDR_SIZE, "wh\n", 3);
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "byte 2 of its reason is "
						   "0x0a");
	memcpy(buf + RT_HDR_SIZE, "\x7f\xc3\xa9", 3);
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_EPROTO, "byte 0 of its reason is "
						   "0x7f");
	memcpy(buf + RT_HDR_SIZE, "\xc3\xa9!", 3); /* UTF-8 is text */
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 3), TFG_OK);
	memset(big, 'a', sizeof big);
	x.nbytes = RT_ABORT_MAX;
	rt_hdr_encode(big, &x);
	ASSERT_EQ(rt_wire_check(&got, &plan, 1, big, RT_HDR_SIZE + RT_ABORT_MAX,
				NULL, &err), TFG_OK);
	x.nbytes = RT_ABORT_MAX + 1;
	rt_hdr_encode(big, &x);
	ASSERT_EQ(rt_wire_check(&got, &plan, 1, big, sizeof big, NULL, &err),
		  TFG_EPROTO);
	ASSERT_HAS(err.msg, "a reason of 1025 bytes, expected 1 to 1024");
	/* the body limit comes first: no read of a gigabyte that is not
	   there */
	x.nbytes = RT_MAX_BODY + 1;
	EXPECT_BAD(x, RT_HDR_SIZE + 3, TFG_ETOOBIG, "over the limit");
}

/* The epoch: whatever the sender put there, as long as it is not 0 (which
 * a receiver's records use for "none heard yet"), from tasks and the
 * controller alike; the wire compares it with nothing (rendezvous.c
 * does, after validation). */
static void
t_epoch(void)
{
	RtHdr x;

	rt_hdr_init(&x, &plan, RT_MSG_PING, 0, 0, RT_SRC_CONTROLLER, 0, 1);
	ASSERT(x.epoch == 1);
	ASSERT_EQ(check(&x, RT_HDR_SIZE), TFG_OK);
	ASSERT(got.epoch == 1);
	x.epoch = UINT64_MAX;
	ASSERT_EQ(check(&x, RT_HDR_SIZE), TFG_OK);
	ASSERT(got.epoch == UINT64_MAX);
	x.epoch = 0;
	EXPECT_BAD(x, RT_HDR_SIZE, TFG_EPROTO,
		   "bad PING from the controller (127.0.0.1:5555): incarnation "
		   "(epoch) 0");
	rt_hdr_init(&x, &plan, RT_MSG_START, 3, 0, 0, 24, 0);
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO,
		   "bad START from /job:local/task:0 (127.0.0.1:5555): "
		   "incarnation (epoch) 0");
}

/* A run's identity (rt_run) on the wire: prog is the program's hash xor
 * it, so that a message of one run of a program is a message of another
 * program to the processes of any other run (spec/design.md "Runs"),
 * a PING from another run's controller included, and the same run
 * decodes it as sent. */
static void
t_run(void)
{
	RtHdr x;

	rt_run = 0x1122334455667788ull;
	x = tensor_hdr();
	ASSERT_EQ(check(&x, RT_HDR_SIZE + 24), TFG_OK); /* the same run */
	ASSERT(got.prog == plan.hash);
	ASSERT_EQ(buf[8], (0x78 ^ 0x88) & 0xff); /* xor on the wire */
	rt_hdr_encode(buf, &x);
	rt_run = 0x1122334455667789ull; /* read by another run */
	ASSERT_EQ(rt_wire_check(&got, cur, 1, buf, RT_HDR_SIZE + 24,
				"127.0.0.1:5555", &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "bad TENSOR from /job:local/task:0 "
		   "(127.0.0.1:5555): program");
	ASSERT(got.prog == (plan.hash ^ 1));
	rt_run = 0; /* by servers for attaching: refused too */
	ASSERT_EQ(rt_wire_check(&got, cur, 1, buf, RT_HDR_SIZE + 24,
				"127.0.0.1:5555", &err), TFG_EPROTO);
	rt_hdr_init(&x, &plan, RT_MSG_PING, 0, 0, RT_SRC_CONTROLLER, 0, 1);
	rt_run = 42;
	rt_hdr_encode(buf, &x);
	rt_run = 0;
	ASSERT_EQ(rt_wire_check(&got, cur, 1, buf, RT_HDR_SIZE,
				"127.0.0.1:5555", &err), TFG_EPROTO);
	ASSERT_HAS(err.msg, "bad PING from the controller");
	ASSERT(got.prog == (plan.hash ^ 42));
}

/* A counted edge (spec/design.md "Counted edges"): a TENSOR of it may
 * carry fewer rows than its shape's, its header's first dim saying how
 * many and its byte count theirs; more rows, or bytes that are not
 * theirs, are refused; an edge that is not counted takes only all of
 * them. */
static void
t_counted(void)
{
	RtHdr h = tensor_hdr(), x;

	edges[0].counted = RT_COUNTED_ZEROS;
	for (int rows = 0; rows <= 2; rows++) {
		x = h, x.dims[0] = (uint64_t)rows, x.nbytes = 12u * rows;
		ASSERT_EQ(check(&x, RT_HDR_SIZE + 12 * rows), TFG_OK);
		ASSERT_EQ(got.dims[0], (uint64_t)rows);
	}
	x = h, x.dims[0] = 3, x.nbytes = 36;
	EXPECT_BAD(x, RT_HDR_SIZE + 36, TFG_EPROTO, "has shape [2, 3] "
		   "(counted: at most that many rows), got [3, 3]");
	x = h, x.dims[0] = 1; /* 24 bytes for one row */
	EXPECT_BAD(x, RT_HDR_SIZE + 24, TFG_EPROTO, "needs 12 bytes, header "
		   "says 24");
	x = h, x.dims[0] = 1, x.dims[1] = 4, x.nbytes = 16;
	EXPECT_BAD(x, RT_HDR_SIZE + 16, TFG_EPROTO, "got [1, 4]");
	edges[0].counted = RT_COUNTED_NO;
	x = h, x.dims[0] = 1, x.nbytes = 12;
	EXPECT_BAD(x, RT_HDR_SIZE + 12, TFG_EPROTO,
		   "has shape [2, 3], got [1, 3]");
}

TEST_MAIN({"layout", t_layout}, {"counted", t_counted}, {"round_trip", t_round_trip},
	  {"valid", t_valid}, {"bad_header", t_bad_header},
	  {"bad_size", t_bad_size}, {"bad_key", t_bad_key},
	  {"bad_tensor", t_bad_tensor}, {"string", t_string},
	  {"specialise", t_specialise}, {"release", t_release},
	  {"lost_start", t_lost_start}, {"abort", t_abort},
	  {"epoch", t_epoch}, {"run", t_run})
