/*
 * tests/fuzz/wire_fuzz.c: libFuzzer target for what a process does with
 * the messages it receives (spec/design.md "Wire format", "Fuzzing"):
 * every byte a peer can send, through the path a real message takes.
 *
 * An input is a conversation.  Its first byte says who listens:
 *
 *   bits 0-1   0: the controller; 1-3: task 0-2, a task server
 *   bit 2      the plan: the concrete one, or the generic one
 *              (tests/fuzz/wire_env.h)
 *   bits 3-6   a signature: on a task that is its client, a step of it
 *              is begun before the messages come (its fetches, DONEs and
 *              ERRORs then have a step to be for)
 *   bit 7      --verbose, whose messages quote what came
 *
 * Then frames: two bytes of length, little-endian, and that many bytes,
 * each a message as the transport hands it up (rt_proc_take: validation
 * against the plan it names, the sender's incarnation, filing or
 * queueing).  A frame of length 0 runs the records queued so far, as the
 * server's executors would (rt_proc_next, rt_server_handle: STARTs run
 * their parts, SPECIALISE compiles, RELEASE evicts); so does the end of
 * the input, after which the step begun, if any, ends as its client ends
 * it (its own part, its fetches received and printed, the DONEs).
 *
 * Nothing leaves the process: its peers are never dialed, so every send
 * fails at once, and PING (another program's too), RUN_SESSION and
 * SHUTDOWN, which answer to a URL in their body, only have it read
 * (rt_body_url), not dialed.  The
 * waits of a step last WE_WAIT: within one input, what has not come will
 * not.  The controller takes its messages as tfgc run does, writing what
 * OUTPUT and SESSION_END carry (to /dev/null).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/wire_env.h"

/* The frames of in[0 .. n): each message taken by p, and at a frame of
 * length 0 run(arg). */
static void
frames(RtProc *p, const uint8_t *in, size_t n, void (*run)(void *),
       void *arg)
{
	const uint8_t *end = in + n;

	while (end - in >= 2) {
		size_t len = (size_t)rt_get_le(in, 2);
		RtBuf *m;

		in += 2;
		if (len > (size_t)(end - in))
			len = (size_t)(end - in);
		if (len == 0) {
			run(arg);
			continue;
		}
		TFG_ASSERT((m = rt_buf_new(len)) != NULL);
		memcpy(m->data, in, len);
		snprintf(m->from, sizeof m->from, "127.0.0.1:40000");
		rt_proc_take(p, m);
		in += len;
	}
}

/* ------------------------------------------------------------ a task */

/* The records queued so far, as serve() runs them. */
static void
task_records(void *arg)
{
	RtServer *s = arg;
	char url[RT_URL_MAX];
	RtStep step;
	RtMsg m;

	for (;;) {
		rt_step_init(&step, &s->proc);
		if (rt_proc_next(&s->proc, &m, &step, 0) != 0)
			return;
		switch (m.h.type) {
		case RT_MSG_PING:
		case RT_EV_FOREIGN_PING: /* another program's: refused */
		case RT_MSG_RUN_SESSION:
		case RT_MSG_SHUTDOWN:
			rt_body_url(url, &m);
			TFG_ASSERT(strlen(url) < RT_URL_MAX);
			rt_proc_done(&s->proc, &m);
			rt_msg_free(&m);
			break;
		default:
			rt_server_handle(s, &step, &m);
			break;
		}
	}
}

/* The end of step c of this task's as its client (client_run.c step_finish):
 * its feeds to itself, its own part, its fetches, the DONEs. */
static void
client_end(RtServer *s, RtStep *c)
{
	const RtSig *sig = &c->plan->sigs[c->sig];
	int self = s->proc.task;

	for (int i = 0; i < sig->nfeed; i++)
		if (c->plan->edges[sig->feeds[i].key].dst == self)
			we_send(c, sig->feeds[i].key);
	if (s->parts[c->sig].fn)
		rt_run_part(c, s, s->proc.name, &s->parts[c->sig],
			    &s->spare[c->sig]);
	for (int i = 0; i < sig->nfetch; i++)
		we_recv(c, sig->fetches[i].key);
	for (int i = 0; i < sig->ntask; i++)
		if (sig->needs_done && sig->needs_done[i] &&
		    sig->tasks[i] != self)
			rt_wait_done(c, sig->tasks[i], NULL, NULL, NULL);
	rt_step_end(c);
}

static void
task(WeProg *b, int self, int sig, int verbose, const uint8_t *in,
     size_t n)
{
	const TfgPlan *plan = b->p.plan;
	TfgOptions o = we_options(b, verbose);
	RtServer s;
	RtStep c;
	int client = !plan->generic && plan->sigs[sig].client == self;

	TFG_ASSERT(rt_server_init(&s, plan, self, &o) == TFG_OK);
	s.proc.epoch = WE_EPOCH;
	s.proc.tag = rt_step_tag(WE_EPOCH);
	if (!plan->generic)
		we_parts(&b->p, self, s.parts);
	if (client) {
		rt_step_init(&c, &s.proc);
		TFG_ASSERT(rt_step_begin(&c, NULL, sig) == TFG_OK);
		rt_step_sent(&c);
	}
	frames(&s.proc, in, n, task_records, &s);
	task_records(&s);
	if (client)
		client_end(&s, &c);
	rt_server_free(&s);
	we_specs_free();
}

/* ---------------------------------------------------- the controller */

/* What tfgc run does with the messages queued so far (launch.c): it
 * writes what OUTPUT and SESSION_END carry. */
static void
controller_records(void *arg)
{
	RtProc *p = arg;
	RtMsg m;

	while (rt_proc_next(p, &m, NULL, 0) == 0) {
		if (m.h.type == RT_MSG_OUTPUT || m.h.type == RT_MSG_SESSION_END)
			fwrite(m.body, 1, (size_t)m.h.nbytes, we_null);
		rt_msg_free(&m);
	}
}

static void
controller(WeProg *b, int verbose, const uint8_t *in, size_t n)
{
	TfgOptions o = we_options(b, verbose);
	RtProc p;

	TFG_ASSERT(rt_proc_init(&p, b->p.plan, -1, &o) == TFG_OK);
	p.epoch = WE_EPOCH;
	p.tag = rt_step_tag(WE_EPOCH);
	frames(&p, in, n, controller_records, &p);
	controller_records(&p);
	rt_proc_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	WeProg *b;
	int who;

	if (size < 1)
		return 0;
	we_init();
	b = &we_base[data[0] >> 2 & 1];
	who = (data[0] & 3) - 1;
	if (who < 0)
		controller(b, data[0] >> 7, data + 1, size - 1);
	else
		task(b, who, (data[0] >> 3 & 15) % b->p.plan->nsig,
		     data[0] >> 7, data + 1, size - 1);
	return 0;
}
