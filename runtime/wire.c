/*
 * runtime/wire.c: the 112-byte message header of spec/design.md "Wire
 * format": packing, unpacking and validation.
 *
 * Fields are packed byte by byte in little-endian order (no struct
 * punning), so the layout does not depend on the compiler or the host.
 * Part of the protocol layer (runtime/proto.h).  rt_wire_check is the
 * only door through which a received message gets in: it checks every field against the plan before anything uses it, and
 * names the sender in its message.
 *
 * Bodies: TENSOR carries the edge's bytes; START the step's feeds for the
 * receiving task, concatenated in sig->feeds order (rt_start_bytes), so
 * that a step costs one message out and one back per remote task, but
 * for large ones, each of which follows its START as a TENSOR of its own
 * (rt_feed_apart) that the receiver reads straight into the part's
 * buffer; RUN_SESSION and SHUTDOWN the URL to reply to, PING the URL,
 * a space, the controller's run (16 hex digits), a space and its pid; ERROR and SESSION_END a
 * message; OUTPUT text for stdout; SPECIALISE the feeds' shapes, and the
 * DONE answering it the plan hash; RELEASE the plan hash of the
 * specialisation released (runtime/spec.c); ABORT why its step failed.
 *
 * prog is the program's hash xor the run's identity, rt_run (TfgOptions.run,
 * spec/design.md "Runs"): encoding and decoding apply it, so that past
 * them every prog is the program's hash, and a message of another run of
 * the same program decodes to another program and is refused as one;
 * a TENSOR landed straight into a part's buffer is matched on it too.
 *
 * The last field, epoch, is the sending process's incarnation: the wall
 * clock when it started, so that a restarted task is told from the one
 * before it (proto.c, rt_epoch_check).  Validation only refuses 0;
 * comparing it with what was heard from the task comes after, so that a
 * message refused here changes nothing.
 *
 * A START whose prog names no plan here is refused like any message with
 * a foreign prog, except on a generic plan: there it most likely names a
 * specialisation this task lost (restarted under the same cluster), and
 * rt_wire_check_lost lets it in, well-formed otherwise, so that the
 * client hears at once why its step cannot run.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/proto.h"

uint64_t rt_run;

static const char *const msg_names[RT_MSG__N] = {
	[RT_MSG_PING] = "PING",
	[RT_MSG_PONG] = "PONG",
	[RT_MSG_START] = "START",
	[RT_MSG_TENSOR] = "TENSOR",
	[RT_MSG_ERROR] = "ERROR",
	[RT_MSG_DONE] = "DONE",
	[RT_MSG_RUN_SESSION] = "RUN_SESSION",
	[RT_MSG_OUTPUT] = "OUTPUT",
	[RT_MSG_SESSION_END] = "SESSION_END",
	[RT_MSG_SHUTDOWN] = "SHUTDOWN",
	[RT_MSG_BYE] = "BYE",
	[RT_MSG_SPECIALISE] = "SPECIALISE",
	[RT_MSG_RELEASE] = "RELEASE",
	[RT_MSG_ABORT] = "ABORT",
	[RT_MSG_TRACE] = "TRACE",
	[RT_MSG_TRACE_DATA] = "TRACE_DATA",
	[RT_MSG_PROGRESS] = "PROGRESS",
	[RT_MSG_STATS] = "STATS",
	[RT_MSG_STATS_DATA] = "STATS_DATA",
	[RT_MSG_LEAVE] = "LEAVE",
};

const char *
rt_msg_name(int type)
{
	if (type <= 0 || type >= RT_MSG__N)
		return "?";
	return msg_names[type];
}

void
rt_put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t
rt_get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void
rt_hdr_encode(unsigned char *out, const RtHdr *h)
{
	rt_put_le(out + 0, h->magic, 4);
	rt_put_le(out + 4, h->version, 2);
	rt_put_le(out + 6, h->type, 2);
	rt_put_le(out + 8, h->prog ^ rt_run, 8);
	rt_put_le(out + 16, h->step, 8);
	rt_put_le(out + 24, h->key, 4);
	rt_put_le(out + 28, h->src, 2);
	out[30] = h->dtype;
	out[31] = h->rank;
	for (int i = 0; i < TFG_MAX_RANK; i++)
		rt_put_le(out + 32 + 8 * i, h->dims[i], 8);
	rt_put_le(out + 96, h->nbytes, 8);
	rt_put_le(out + 104, h->epoch, 8);
}

void
rt_hdr_decode(RtHdr *h, const unsigned char *in)
{
	h->magic = (uint32_t)rt_get_le(in + 0, 4);
	h->version = (uint16_t)rt_get_le(in + 4, 2);
	h->type = (uint16_t)rt_get_le(in + 6, 2);
	h->prog = rt_get_le(in + 8, 8) ^ rt_run;
	h->step = rt_get_le(in + 16, 8);
	h->key = (uint32_t)rt_get_le(in + 24, 4);
	h->src = (uint16_t)rt_get_le(in + 28, 2);
	h->dtype = in[30];
	h->rank = in[31];
	for (int i = 0; i < TFG_MAX_RANK; i++)
		h->dims[i] = rt_get_le(in + 32 + 8 * i, 8);
	h->nbytes = rt_get_le(in + 96, 8);
	h->epoch = rt_get_le(in + 104, 8);
}

void
rt_hdr_init(RtHdr *h, const TfgPlan *plan, int type, uint64_t step,
	    uint32_t key, uint16_t src, uint64_t nbytes, uint64_t epoch)
{
	memset(h, 0, sizeof *h);
	h->magic = RT_WIRE_MAGIC;
	h->version = RT_WIRE_VERSION;
	h->type = (uint16_t)type;
	h->prog = plan->hash;
	h->step = step;
	h->key = key;
	h->src = src;
	h->nbytes = nbytes;
	h->epoch = epoch;
}

size_t
rt_edge_nbytes(const RtEdge *edge)
{
	return edge->nbytes;
}

size_t
rt_edge_rowbytes(const RtEdge *edge)
{
	return edge->shape.rank && edge->shape.dims[0] > 0
		       ? edge->nbytes / (size_t)edge->shape.dims[0] : 0;
}

int
rt_edge_valid(const RtEdge *edge)
{
	size_t n;

	if (rt_shape_nbytes(&n, edge->dtype, &edge->shape) != TFG_OK ||
	    (uint64_t)edge->nbytes > RT_MAX_BODY)
		return 0;
	return edge->dtype == TFG_STRING ? edge->nbytes >= n
					 : edge->nbytes == n;
}

size_t
rt_start_bytes(const TfgPlan *plan, int sig, int task)
{
	const RtSig *s = &plan->sigs[sig];
	size_t n = 0;

	for (int i = 0; i < s->nfeed; i++) {
		const RtEdge *e = &plan->edges[s->feeds[i].key];

		if (e->dst == task && e->src == s->client && !rt_feed_apart(e))
			n += rt_edge_nbytes(e);
	}
	return n;
}

int
rt_feed_apart(const RtEdge *e)
{
	return e->dtype != TFG_STRING && rt_edge_nbytes(e) >= RT_FEED_APART;
}

/* Which types a given sender may send: the controller sends only PING,
 * RUN_SESSION, SHUTDOWN, TRACE and STATS; tasks send everything else. */
static int
from_controller(int type)
{
	return type == RT_MSG_PING || type == RT_MSG_RUN_SESSION ||
	       type == RT_MSG_SHUTDOWN || type == RT_MSG_TRACE ||
	       type == RT_MSG_STATS;
}

/* Whether the step field must name a client task (RT_STEP: client << 48
 * | tag << 32 | counter). */
static int
has_step(int type)
{
	return type == RT_MSG_START || type == RT_MSG_TENSOR ||
	       type == RT_MSG_ERROR || type == RT_MSG_DONE ||
	       type == RT_MSG_SPECIALISE || type == RT_MSG_ABORT;
}

static tfg_status
check_tensor(const RtHdr *h, const TfgPlan *plan, int self, const char *who,
	     const unsigned char *body, TfgError *e)
{
	const RtEdge *edge;
	size_t want;
	char a[96], b[96];
	TfgShape got;

	if (h->key >= (uint32_t)plan->nedge)
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: edge key %u out of range "
				 "(%d edges)", who, h->key, plan->nedge);
	edge = &plan->edges[h->key];
	if (edge->src != h->src || (self >= 0 && edge->dst != self))
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: edge '%s' does not lead "
				 "from it to here", who, edge->name);
	if (h->dtype != (uint8_t)edge->dtype)
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: edge '%s' is %s, got "
				 "dtype %u", who, edge->name,
				 tfg_dtype_name(edge->dtype), h->dtype);
	if (h->rank > TFG_MAX_RANK)
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: rank %u > %d", who,
				 h->rank, TFG_MAX_RANK);
	got.rank = h->rank;
	for (int i = 0; i < TFG_MAX_RANK; i++) {
		if (i >= h->rank && h->dims[i] != 0)
			return tfg_error(e, TFG_EPROTO,
					 "bad TENSOR from %s: unused dim %d "
					 "is not 0", who, i);
		got.dims[i] = (int64_t)(h->dims[i] & INT64_MAX);
		if (i < h->rank && h->dims[i] > (uint64_t)INT64_MAX)
			got.dims[i] = -1;
	}
	want = rt_edge_nbytes(edge);
	if (edge->counted && got.rank == edge->shape.rank && got.rank &&
	    got.dims[0] >= 0 && got.dims[0] <= edge->shape.dims[0]) {
		/* counted: its first rows, the rest the receiver's padding */
		int64_t rows = got.dims[0];

		got.dims[0] = edge->shape.dims[0];
		want = (size_t)rows * rt_edge_rowbytes(edge);
		if (!tfg_shape_eq(&got, &edge->shape))
			got.dims[0] = rows;
	}
	if (!tfg_shape_eq(&got, &edge->shape))
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: edge '%s' has shape %s%s, "
				 "got %s", who, edge->name,
				 tfg_shape_str(a, sizeof a, &edge->shape),
				 edge->counted ? " (counted: at most that many "
				 "rows)" : "", tfg_shape_str(b, sizeof b, &got));
	if (h->nbytes != want)
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: edge '%s' needs %zu "
				 "bytes, header says %llu", who, edge->name,
				 want, (unsigned long long)h->nbytes);
	/* the client prints strings: their records must stay inside */
	if (edge->dtype == TFG_STRING &&
	    tfg_string_check(body, want, tfg_shape_numel(&edge->shape)))
		return tfg_error(e, TFG_EPROTO,
				 "bad TENSOR from %s: edge '%s' carries "
				 "strings whose records point outside its "
				 "%zu bytes", who, edge->name, want);
	return TFG_OK;
}

/* Whether task is one of sig's tasks (for a generic plan: one that may
 * take part). */
static int
sig_has_task(const RtSig *sig, int task)
{
	for (int i = 0; i < sig->ntask; i++)
		if (sig->tasks[i] == task)
			return 1;
	return 0;
}

/* START, SPECIALISE and RELEASE: from the signature's client to a task,
 * each for the kind of plan it belongs to.  lost: a START for a plan not
 * here (rt_wire_check_lost), whose body only that plan could check. */
static tfg_status
check_client_msg(const RtHdr *h, const TfgPlan *plan, int self,
		 const char *who, int lost, TfgError *e)
{
	const RtSig *sig = &plan->sigs[h->key];
	int generic_only = h->type != RT_MSG_START;
	size_t want;

	if (sig->client != h->src || self < 0)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: signature %u is driven from "
				 "%s", rt_msg_name(h->type), who, h->key,
				 plan->tasks[sig->client].name);
	if (lost) {
		if (!sig_has_task(sig, self))
			return tfg_error(e, TFG_EPROTO,
					 "bad START from %s: this task takes "
					 "no part in signature %u", who,
					 h->key);
		return TFG_OK;
	}
	if (generic_only != (plan->generic != 0))
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: the plan is %s",
				 rt_msg_name(h->type), who,
				 plan->generic ? "generic (its dims are not "
				 "known yet)" : "not generic");
	switch (h->type) {
	case RT_MSG_SPECIALISE:
		if (h->nbytes > (uint64_t)sig->nfeed * 8 * (1 + TFG_MAX_RANK))
			return tfg_error(e, TFG_EPROTO,
					 "bad SPECIALISE from %s: %llu bytes "
					 "of shapes for %d feeds", who,
					 (unsigned long long)h->nbytes,
					 sig->nfeed);
		return TFG_OK;
	case RT_MSG_RELEASE:
		if (h->nbytes != 8)
			return tfg_error(e, TFG_EPROTO,
					 "bad RELEASE from %s: %llu body "
					 "bytes, expected 8 (a plan hash)", who,
					 (unsigned long long)h->nbytes);
		return TFG_OK;
	default:
		want = rt_start_bytes(plan, (int)h->key, self);
		if (h->nbytes != want)
			return tfg_error(e, TFG_EPROTO,
					 "bad START from %s: %llu bytes of "
					 "feeds, signature %u needs %zu", who,
					 (unsigned long long)h->nbytes, h->key,
					 want);
		return TFG_OK;
	}
}

static tfg_status
check_key(const RtHdr *h, const TfgPlan *plan, int self, const char *who,
	  int lost, TfgError *e)
{
	uint32_t lim = UINT32_MAX;
	const char *what = NULL;

	switch (h->type) {
	case RT_MSG_START:
	case RT_MSG_DONE:
	case RT_MSG_SPECIALISE:
	case RT_MSG_RELEASE:
		lim = (uint32_t)plan->nsig, what = "signature";
		break;
	case RT_MSG_ERROR:
		lim = RT_ERROR__N, what = "error kind";
		break;
	case RT_MSG_RUN_SESSION:
		lim = (uint32_t)plan->nsession, what = "session";
		break;
	case RT_MSG_LEAVE:
		if (h->nbytes != 0 || self < 0)
			return tfg_error(e, TFG_EPROTO,
					 "bad LEAVE from %s: %s", who,
					 self < 0 ? "a task's client sends it "
					 "to a task" : "it has no body");
		lim = (uint32_t)plan->nsession, what = "session";
		if (h->key < lim && plan->sessions[h->key].task != h->src)
			return tfg_error(e, TFG_EPROTO,
					 "bad LEAVE from %s: session %u runs on "
					 "%s", who, h->key,
					 plan->tasks[plan->sessions[h->key]
						     .task].name);
		break;
	case RT_MSG_PROGRESS:
		if (h->nbytes > RT_PROGRESS_MAX)
			return tfg_error(e, TFG_EPROTO,
					 "bad PROGRESS from %s: %llu body "
					 "bytes, at most %d", who,
					 (unsigned long long)h->nbytes,
					 RT_PROGRESS_MAX);
		/* fall through */
	case RT_MSG_OUTPUT:
	case RT_MSG_SESSION_END:
		lim = (uint32_t)plan->nsession, what = "session";
		if (h->key < lim && plan->sessions[h->key].task != h->src)
			return tfg_error(e, TFG_EPROTO,
					 "bad %s from %s: session %u runs on %s",
					 rt_msg_name(h->type), who, h->key,
					 plan->tasks[plan->sessions[h->key]
						     .task].name);
		break;
	default:
		return TFG_OK;
	}
	if (h->key >= lim)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: %s %u out of range",
				 rt_msg_name(h->type), who, what, h->key);
	if (h->type == RT_MSG_START || h->type == RT_MSG_SPECIALISE ||
	    h->type == RT_MSG_RELEASE)
		return check_client_msg(h, plan, self, who, lost, e);
	return TFG_OK;
}

/* ABORT: only the step's client cancels it, only on another task (the
 * controller runs no steps), and its reason is one line of text, since a
 * task may print it (--verbose): no control bytes, at most RT_ABORT_MAX.
 * Whether the step runs here is not the wire's business: an ABORT of a
 * step that ended (or never came) is dropped as stale or outlives nothing
 * (rendezvous.c). */
static tfg_status
check_abort(const RtHdr *h, int self, const char *who,
	    const unsigned char *body, TfgError *e)
{
	if (h->key != 0)
		return tfg_error(e, TFG_EPROTO,
				 "bad ABORT from %s: key %u, expected 0", who,
				 h->key);
	if (RT_STEP_CLIENT(h->step) != h->src || RT_STEP_NO(h->step) == 0)
		return tfg_error(e, TFG_EPROTO,
				 "bad ABORT from %s: step %016llx is not one it "
				 "drives", who, (unsigned long long)h->step);
	if (self < 0 || self == h->src)
		return tfg_error(e, TFG_EPROTO,
				 "bad ABORT from %s: sent to %s, not to a task "
				 "of its step", who,
				 self < 0 ? "the controller" : "itself");
	if (h->nbytes == 0 || h->nbytes > RT_ABORT_MAX)
		return tfg_error(e, TFG_EPROTO,
				 "bad ABORT from %s: a reason of %llu bytes, "
				 "expected 1 to %d", who,
				 (unsigned long long)h->nbytes, RT_ABORT_MAX);
	for (uint64_t i = 0; i < h->nbytes; i++)
		if (body[i] < ' ' || body[i] == 0x7f)
			return tfg_error(e, TFG_EPROTO,
					 "bad ABORT from %s: byte %llu of its "
					 "reason is 0x%02x, not text", who,
					 (unsigned long long)i, body[i]);
	return TFG_OK;
}

/* rt_wire_check; lost: for rt_wire_check_lost. */
static tfg_status
wire_check(RtHdr *h, const TfgPlan *plan, int self, const void *buf,
	   size_t len, const char *addr, int lost, TfgError *e)
{
	char who[160];
	const char *name;

	if (addr == NULL || *addr == '\0')
		addr = "an unknown peer";
	if (len < RT_HDR_SIZE)
		return tfg_error(e, TFG_EPROTO,
				 "truncated message from %s: %zu bytes, "
				 "the header alone is %d", addr, len,
				 RT_HDR_SIZE);
	rt_hdr_decode(h, buf);
	if (h->magic != RT_WIRE_MAGIC)
		return tfg_error(e, TFG_EPROTO,
				 "bad message from %s: magic 0x%08x, expected "
				 "0x%08x", addr, h->magic, RT_WIRE_MAGIC);
	/* From here on the header is ours in shape: name the task it says
	 * it comes from, when that is a task. */
	if (h->src < plan->ntask)
		name = plan->tasks[h->src].name;
	else if (h->src == RT_SRC_CONTROLLER)
		name = "the controller";
	else
		name = NULL;
	if (name)
		snprintf(who, sizeof who, "%s (%s)", name, addr);
	else
		snprintf(who, sizeof who, "%s", addr);
	if (h->version != RT_WIRE_VERSION)
		return tfg_error(e, TFG_EPROTO,
				 "bad message from %s: version %u, expected %d",
				 who, h->version, RT_WIRE_VERSION);
	if (h->type == 0 || h->type >= RT_MSG__N)
		return tfg_error(e, TFG_EPROTO,
				 "bad message from %s: unknown type %u", who,
				 h->type);
	/* lost: a START on a generic plan may name a plan not here */
	lost = lost && h->type == RT_MSG_START && plan->generic &&
	       h->prog != plan->hash;
	if (h->prog != plan->hash && !lost)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: program %016llx, this is "
				 "%016llx (different source or plan?)",
				 rt_msg_name(h->type), who,
				 (unsigned long long)h->prog,
				 (unsigned long long)plan->hash);
	if (name == NULL ||
	    (h->src == RT_SRC_CONTROLLER) != from_controller(h->type))
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: sender %u is not a task of "
				 "the plan (%d tasks)", rt_msg_name(h->type),
				 who, h->src, plan->ntask);
	if (has_step(h->type) &&
	    RT_STEP_CLIENT(h->step) >= (uint64_t)plan->ntask)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: step %016llx names no client "
				 "task", rt_msg_name(h->type), who,
				 (unsigned long long)h->step);
	if (h->nbytes > RT_MAX_BODY)
		return tfg_error(e, TFG_ETOOBIG,
				 "bad %s from %s: body of %llu bytes is over "
				 "the limit of %llu", rt_msg_name(h->type), who,
				 (unsigned long long)h->nbytes,
				 (unsigned long long)RT_MAX_BODY);
	if (h->nbytes != len - RT_HDR_SIZE)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: header says %llu body bytes, "
				 "message has %zu", rt_msg_name(h->type), who,
				 (unsigned long long)h->nbytes,
				 len - RT_HDR_SIZE);
	/* 0 would read as "no incarnation heard yet" (proto.c) */
	if (h->epoch == 0)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: incarnation (epoch) 0",
				 rt_msg_name(h->type), who);
	if (h->type == RT_MSG_TENSOR)
		return check_tensor(h, plan, self, who,
				    (const unsigned char *)buf + RT_HDR_SIZE, e);
	if (h->dtype != 0 || h->rank != 0)
		return tfg_error(e, TFG_EPROTO,
				 "bad %s from %s: dtype/rank set on a message "
				 "without a tensor", rt_msg_name(h->type), who);
	for (int i = 0; i < TFG_MAX_RANK; i++)
		if (h->dims[i] != 0)
			return tfg_error(e, TFG_EPROTO,
					 "bad %s from %s: dims set on a "
					 "message without a tensor",
					 rt_msg_name(h->type), who);
	if (h->type == RT_MSG_ABORT)
		return check_abort(h, self, who,
				   (const unsigned char *)buf + RT_HDR_SIZE, e);
	return check_key(h, plan, self, who, lost, e);
}

tfg_status
rt_wire_check(RtHdr *h, const TfgPlan *plan, int self, const void *buf,
	      size_t len, const char *addr, TfgError *e)
{
	return wire_check(h, plan, self, buf, len, addr, 0, e);
}

tfg_status
rt_wire_check_lost(RtHdr *h, const TfgPlan *plan, int self, const void *buf,
		   size_t len, const char *addr, TfgError *e)
{
	return wire_check(h, plan, self, buf, len, addr, 1, e);
}
