/*
 * runtime/proto.c: the process side of the protocol layer (runtime/
 * proto.h): the process's context (RtProc), what becomes of a message
 * the transport received, the senders' incarnations, the queue of
 * records for the roles, and building and sending messages.
 *
 * A received message is taken on the transport's completion thread
 * (rt_proc_take), all under RtProc.mu: the plan its header names is
 * looked up (the own one, or a specialisation the roles registered with
 * rt_proc_plan_add, which cannot go meanwhile), it is validated against
 * that plan (wire.c), its sender's incarnation is checked
 * (rt_epoch_check), and it is filed (rendezvous.c: the table, waking the
 * step it is for) or queued as a record for the roles, whose threads
 * wait on RtProc.qcv in rt_proc_next.  Nothing here calls the roles: a
 * restart they must hear of is an RT_EV_RESTARTED record.
 *
 * Every message carries its sender's incarnation (RtProc.epoch), and
 * rt_epoch_check keeps per task the largest heard: a message from an
 * older one is dropped, and a larger one means the task restarted, so
 * that what was kept of its earlier incarnation (the steps it drove here,
 * the table's and the queue's entries) is forgotten before its first
 * message is filed (spec/design.md "Restarts").
 */
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runtime/proto.h"
#include "runtime/proto_int.h"

volatile int rt_stop_requested;

void
rt_signals(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* This process's incarnation: the wall clock in nanoseconds, so that a
 * task started again gets a larger one than the process before it had,
 * on this machine or another whose clock agrees to within the time the
 * restart took.  A clock set back makes the new process look older, and
 * its messages are dropped with a warning naming it (rt_epoch_check).
 * Never 0, which stands for "none heard yet": a clock that fails or
 * reads before 1970 gives 1, as old as it gets. */
/* How far a sender's incarnation may be ahead of this machine's clock
 * (rt_epoch_check): a minute. */
#define EPOCH_AHEAD ((uint64_t)60 * 1000000000u)

static uint64_t
incarnation(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec <= 0)
		return 1;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
rt_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double until)
{
	double left = until - rt_now();
	struct timespec ts;

	if (left <= 0)
		return;
	if (left > RT_NET_SLICE)
		left = RT_NET_SLICE;
	/* The default clock is the wall clock: a slice is short, so a
	   clock set meanwhile costs at most one slice too many. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)left;
	ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

static void
on_recv(RtNetRecv *r, RtBuf *m)
{
	RtProc *p = (RtProc *)((char *)r - offsetof(RtProc, recv));

	rt_proc_take(p, m);
}

/* Lets p->mu go, then wakes an executor for what was queued under it
 * (rt_queue_push_locked).  A waiter cannot miss it: it looked at the
 * queue under the lock, and waits on qcv before the lock is free. */
static void
unlock_wake(RtProc *p)
{
	int wake = p->qwake;

	p->qwake = 0;
	pthread_mutex_unlock(&p->mu);
	if (wake)
		pthread_cond_signal(&p->qcv);
}

tfg_status
rt_proc_init(RtProc *p, const TfgPlan *plan, int task, const TfgOptions *opt)
{
	memset(p, 0, sizeof *p);
	p->plan = plan;
	p->task = task;
	p->src = task < 0 ? RT_SRC_CONTROLLER : (uint16_t)task;
	p->name = task < 0 ? "controller" : plan->tasks[task].name;
	if (opt)
		p->opt = *opt;
	if (!(p->opt.startup_timeout > 0))
		p->opt.startup_timeout = 30;
	if (!(p->opt.step_timeout > 0))
		p->opt.step_timeout = 0; /* none: rt_step_deadline */
	if (!(p->opt.heartbeat_timeout > 0))
		p->opt.heartbeat_timeout = RT_NET_DEAD;
	if (p->opt.controller_addr == NULL)
		p->opt.controller_addr = "127.0.0.1:0";
	rt_run = p->opt.run; /* one run a process */
	p->epoch = incarnation();
	p->tag = rt_step_tag(p->epoch);
	p->recv.done = on_recv;
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->order, NULL);
	pthread_cond_init(&p->qcv, NULL);
	pthread_cond_init(&p->idlecv, NULL);
	if (rt_net_init(&p->net, p->name, plan->ntask) != TFG_OK ||
	    (p->peers = calloc((size_t)plan->ntask, sizeof *p->peers)) ==
	    NULL) {
		rt_proc_free(p);
		return TFG_ENOMEM;
	}
	p->net.hb_dead = p->opt.heartbeat_timeout;
	p->net.up_wait = p->opt.startup_timeout;
	if (p->opt.no_shm)
		p->net.shm = 0;
	for (int i = 0; i < plan->nedge; i++)
		if (!rt_edge_valid(&plan->edges[i])) {
			rt_proc_free(p);
			return TFG_EINVAL;
		}
	return TFG_OK;
}

void
rt_proc_free(RtProc *p)
{
	/* First no more completions: then nothing else touches p. */
	if (p->net.name)
		rt_net_close(&p->net);
	rt_box_free(&p->early);
	for (RtStep *c = p->steps; c; c = c->next) /* steps never ended */
		rt_box_free(&c->inbox);
	for (int i = 0; i < p->nqueue; i++)
		rt_msg_free(&p->queue[i]);
	free(p->queue);
	free(p->peers);
	free(p->plans);
	pthread_cond_destroy(&p->qcv);
	pthread_cond_destroy(&p->idlecv);
	pthread_mutex_destroy(&p->order);
	pthread_mutex_destroy(&p->mu);
	memset(p, 0, sizeof *p);
}

void
rt_plan_peers(const TfgPlan *plan, int task, char *talks)
{
	for (int i = 0; i < plan->nsig; i++) {
		const RtSig *g = &plan->sigs[i];
		int in = 0;

		for (int j = 0; j < g->ntask; j++)
			in |= g->tasks[j] == task;
		if (g->client == task)
			for (int j = 0; j < g->ntask; j++)
				talks[g->tasks[j]] = 1;
		else if (in)
			talks[g->client] = 1;
	}
	for (int i = 0; i < plan->nedge; i++) {
		if (plan->edges[i].src == task)
			talks[plan->edges[i].dst] = 1;
		if (plan->edges[i].dst == task)
			talks[plan->edges[i].src] = 1;
	}
	if (task >= 0 && task < plan->ntask)
		talks[task] = 0;
}

tfg_status
rt_proc_open(RtProc *p, const char *url, TfgError *e)
{
	char peer[RT_URL_MAX];
	unsigned char key[RT_KEY_BYTES];
	TfgError de;
	tfg_status st;
	char *talks;
	int keyed;

	if ((keyed = rt_auth_key_load(p->opt.cluster_key, key, e)) < 0)
		return e->code;
	if (p->opt.tls_cert || p->opt.tls_key || p->opt.tls_ca) {
		RtTls *t;

		if (keyed)
			return tfg_error(e, TFG_EINVAL, "--cluster-key or TLS "
					 "(--tls-cert, --tls-key, --tls-ca), "
					 "not both: TLS authenticates every "
					 "message already");
		if ((t = rt_tls_load(p->opt.tls_cert, p->opt.tls_key,
				     p->opt.tls_ca, e)) == NULL)
			return e->code;
		rt_net_tls(&p->net, t);
		keyed = 1; /* members only, as with a key */
	}
	if (keyed && !p->net.tls)
		rt_net_key(&p->net, key);
	p->keyed = keyed;
	if ((st = rt_net_listen(&p->net, url, RT_HDR_SIZE +
				(size_t)RT_MAX_BODY, e)) != TFG_OK)
		return st;
	if ((talks = calloc((size_t)p->plan->ntask, 1)) == NULL)
		return tfg_error(e, TFG_ENOMEM, "out of memory");
	rt_plan_peers(p->plan, p->task, talks);
	/* two descriptors a peer at most (its link, the connection it dials
	   here): a server of a large cluster started by hand */
	(void)rt_limit_raise(RLIMIT_NOFILE, 2ULL * (unsigned)p->plan->ntask + 64,
			     NULL);
	for (int i = 0; i < p->plan->ntask; i++) {
		if (i == p->task)
			continue;
		rt_url(peer, sizeof peer, p->plan->tasks[i].addr);
		if (rt_net_peer_set(&p->net, i, peer, p->plan->tasks[i].name,
				    &de) != TFG_OK)
			fprintf(stderr, "tfgc: error: %s\n", de.msg);
		else if (talks[i])
			rt_net_peer_open(&p->net, i);
	}
	free(talks);
	return rt_net_recv_start(&p->net, &p->recv, e);
}

/* ------------------------------------------------------------ plans */

/* The plan whose hash is prog: the own one or a registered one. */
static const TfgPlan *
plan_of_locked(RtProc *p, uint64_t prog)
{
	if (prog == p->plan->hash)
		return p->plan;
	for (int i = 0; i < p->nplan; i++)
		if (p->plans[i]->hash == prog)
			return p->plans[i];
	return NULL;
}

tfg_status
rt_proc_plan_add(RtProc *p, const TfgPlan *plan)
{
	tfg_status st = TFG_OK;

	pthread_mutex_lock(&p->mu);
	if (p->nplan == p->capplan) {
		int nc = p->capplan ? 2 * p->capplan : 8;
		const TfgPlan **v = realloc(p->plans, sizeof *v * (size_t)nc);

		if (v == NULL)
			st = TFG_ENOMEM;
		else
			p->plans = v, p->capplan = nc;
	}
	if (st == TFG_OK)
		p->plans[p->nplan++] = plan;
	pthread_mutex_unlock(&p->mu);
	return st;
}

void
rt_proc_plan_remove(RtProc *p, const TfgPlan *plan)
{
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nplan; i++)
		if (p->plans[i] == plan) {
			p->plans[i] = p->plans[--p->nplan];
			break;
		}
	pthread_mutex_unlock(&p->mu);
}

/* ----------------------------------------------------------- receive */

/* What a PING body says past its URL: the run of its controller and the
 * controller's pid (0 when it does not say). */
static uint64_t
ping_run(const RtMsg *m, long *pid)
{
	char buf[64];
	size_t n = (size_t)m->h.nbytes, k;
	unsigned long long run = 0;

	*pid = 0;
	for (k = 0; k < n && m->body[k] != ' '; k++)
		;
	if (k == n || n - k >= sizeof buf)
		return 0;
	memcpy(buf, m->body + k, n - k);
	buf[n - k] = '\0';
	if (sscanf(buf, " %16llx %ld", &run, pid) != 2)
		*pid = 0;
	return run;
}

/* A foreign PING's program (its prog, decoded in this process's run, is
 * the program xor the two runs), its run in *run and its controller's
 * pid in *pid, as its body says past the URL (0 when it does not). */
static uint64_t
ping_prog(const RtMsg *m, uint64_t *run, long *pid)
{
	uint64_t r = ping_run(m, pid);

	if (run)
		*run = r;
	return m->h.prog ^ r ^ rt_run;
}

/* Whether out (m, decoded), which failed its checks, is a well-formed
 * PING from a controller of another program, with a reply address: a
 * run of another file or other options, which this task tells so
 * (RT_EV_FOREIGN_PING).  Sets out->body. */
static int
foreign_ping(const RtProc *p, RtMsg *out, const RtBuf *m)
{
	const RtHdr *h = &out->h;
	char url[RT_URL_MAX];

	if (p->task < 0 || m->len < RT_HDR_SIZE ||
	    h->magic != RT_WIRE_MAGIC || h->version != RT_WIRE_VERSION ||
	    h->type != RT_MSG_PING || h->src != RT_SRC_CONTROLLER ||
	    h->prog == p->plan->hash || h->epoch == 0 ||
	    h->nbytes != m->len - RT_HDR_SIZE)
		return 0;
	out->body = m->data + RT_HDR_SIZE;
	rt_body_url(url, out);
	return url[0] != '\0';
}

/* Says that a message was ignored, and why: each kind of refusal (its
 * text without digits, so without addresses, ports and sizes) the first
 * time, then only a count, said with the next one a minute or more
 * later.  900 malformed messages made 900 lines. */
static void
say_ignored(const RtProc *p, const char *why)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		uint64_t kind;
		unsigned more;
		char text[96]; /* the first, cut */
	} seen[32];
	static int nseen;
	static double since;
	uint64_t kind = 1469598103934665603ull;
	double now = rt_now();
	int i;

	for (const char *c = why; *c; c++)
		if (*c < '0' || *c > '9')
			kind = (kind ^ (unsigned char)*c) * 1099511628211ull;
	pthread_mutex_lock(&mu);
	if (since > 0 && now - since >= 60) {
		for (i = 0; i < nseen; i++)
			if (seen[i].more)
				fprintf(stderr, "tfgc: error: %s: ignored %u "
					"more messages like '%s' in the last "
					"minute\n", p->name, seen[i].more,
					seen[i].text),
				seen[i].more = 0;
		since = 0;
	}
	for (i = 0; i < nseen && seen[i].kind != kind; i++)
		;
	if (i < nseen) {
		seen[i].more++;
		if (since == 0)
			since = now;
		pthread_mutex_unlock(&mu);
		return;
	}
	if (nseen < 32) {
		seen[nseen].kind = kind;
		size_t l = strlen(why) < sizeof seen[0].text - 1
			   ? strlen(why) : sizeof seen[0].text - 1;
		memcpy(seen[nseen].text, why, l);
		seen[nseen++].text[l] = '\0';
	}
	pthread_mutex_unlock(&mu);
	fprintf(stderr, "tfgc: error: %s: %s (ignored)\n", p->name, why);
}

void
rt_proc_take(RtProc *p, RtBuf *m)
{
	const TfgPlan *plan = NULL;
	tfg_status (*check)(RtHdr *, const TfgPlan *, int, const void *,
			    size_t, const char *, TfgError *);
	int lost = 0;
	TfgError e;
	RtMsg out;

	memset(&out, 0, sizeof out);
	pthread_mutex_lock(&p->mu);
	/* The plan the message belongs to: the own one, or a
	   specialisation's; else the own one, which refuses it, but for a
	   START of a specialisation this task lost, which gets in to be
	   answered (rt_wire_check_lost). */
	if (m->len >= RT_HDR_SIZE)
		plan = plan_of_locked(p, rt_get_le(m->data + 8, 8) ^ rt_run);
	if (plan == NULL) {
		plan = p->plan;
		lost = plan->generic;
	}
	check = lost ? rt_wire_check_lost : rt_wire_check;
	if (check(&out.h, plan, p->task, m->data, m->len, NULL, &e) !=
	    TFG_OK) {
		/* Again, now naming the transport address as well. */
		check(&out.h, plan, p->task, m->data, m->len, m->from, &e);
		if (foreign_ping(p, &out, m)) {
			out.h.type = RT_EV_FOREIGN_PING;
			out.m = m;
			if (rt_queue_push_locked(p, &out) == 0) {
				/* said before the lock goes, so before the
				   refusal it queued can leave (a test reads the
				   log once the run has it) */
				long pid;

				if (ping_prog(&out, NULL, &pid) ==
				    p->plan->hash)
					fprintf(stderr, "tfgc: warning: %s: "
						"refused another run of this "
						"program (its controller: pid "
						"%ld at %s): this task serves "
						"%s (refused: the run is told)"
						"\n", p->name, pid, m->from,
						rt_run ? "its own run alone" :
						"runs started with --attach");
				else
					fprintf(stderr, "tfgc: error: %s: %s "
						"(refused: the run is told)\n",
						p->name, e.msg);
				unlock_wake(p);
				return;
			}
		}
		unlock_wake(p);
		say_ignored(p, e.msg);
		rt_buf_free(m);
		return;
	}
	/* This task's own messages never come over the network (they are
	   delivered in the process): one that says it does is forged. */
	if (p->task >= 0 && out.h.src == (uint16_t)p->task) {
		unlock_wake(p);
		fprintf(stderr, "tfgc: error: %s: %s from %s claims to come "
			"from this task (ignored)\n", p->name,
			rt_msg_name(out.h.type), m->from[0] ? m->from : "a peer");
		rt_buf_free(m);
		return;
	}
	out.lost = lost && out.h.prog != plan->hash;
	out.m = m;
	/* received into a part's buffer (rdv_recv), which rt_net_unland
	   keeps until this returned */
	out.body = m->landed ? m->landed : m->data + RT_HDR_SIZE;
	/* Only now, once it is known to be well-formed, may the message
	   speak for its task's incarnation: a garbled one can neither make
	   a task look restarted nor raise the incarnation recorded for it. */
	if (rt_epoch_check_locked(p, &out.h) != 0) {
		unlock_wake(p);
		rt_msg_free(&out);
		return;
	}
	if (out.h.src < p->plan->ntask) {
		p->peers[out.h.src].in_msgs++;
		p->peers[out.h.src].in_bytes += RT_HDR_SIZE + out.h.nbytes;
	}
	if (p->opt.verbose)
		fprintf(stderr, "tfg: %s: got %s step %llu key %u from %u "
			"(%llu bytes)\n", p->name, rt_msg_name(out.h.type),
			RT_STEP_NO(out.h.step), out.h.key, out.h.src,
			(unsigned long long)out.h.nbytes);
	rt_dispatch_locked(p, &out);
	unlock_wake(p);
}

void
rt_dispatch(RtProc *p, RtMsg *m)
{
	pthread_mutex_lock(&p->mu);
	rt_dispatch_locked(p, m);
	unlock_wake(p);
}

static int
msg_push(RtMsg **v, int *n, int *cap, const RtMsg *m)
{
	if (*n == *cap) {
		int nc = *cap ? 2 * *cap : 16;
		RtMsg *nv = realloc(*v, sizeof *nv * (size_t)nc);

		if (nv == NULL)
			return -1;
		*v = nv, *cap = nc;
	}
	(*v)[(*n)++] = *m;
	return 0;
}

int
rt_box_push(RtBox *b, const RtMsg *m)
{
	return msg_push(&b->v, &b->n, &b->cap, m);
}

int
rt_queue_push_locked(RtProc *p, const RtMsg *m)
{
	if (msg_push(&p->queue, &p->nqueue, &p->capqueue, m) != 0)
		return -1;
	/* Signalled by the receive once it let the lock go: an executor
	   woken under it would only wait for the lock (a hand-off of 32
	   workers' steps at once spent a tenth of the ps's time so) */
	p->qwake = 1;
	return 0;
}

/* Whether record m must wait for the one of its sender's before it. */
static int
ordered(const RtMsg *m)
{
	return m->h.type == RT_MSG_SPECIALISE || m->h.type == RT_MSG_RELEASE;
}

const char *
rt_proc_url(const RtProc *p)
{
	return p->net.url;
}

int
rt_proc_authenticated(const RtProc *p)
{
	return p->keyed || p->net.tls;
}

void
rt_proc_wake(RtProc *p)
{
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->qcv);
	pthread_mutex_unlock(&p->mu);
}

int
rt_proc_idle(RtProc *p, double until)
{
	int idle;

	pthread_mutex_lock(&p->mu);
	while (p->steps && rt_now() < until)
		rt_cond_wait(&p->idlecv, &p->mu, until);
	idle = p->steps == NULL;
	pthread_mutex_unlock(&p->mu);
	return idle;
}

/* The index of the first record that may come out now, or -1. */
static int
next_record(const RtProc *p)
{
	for (int i = 0; i < p->nqueue; i++) {
		const RtMsg *m = &p->queue[i];

		if (!ordered(m) || m->h.src >= p->plan->ntask ||
		    !p->peers[m->h.src].ordered)
			return i;
	}
	return -1;
}

void
rt_proc_done(RtProc *p, const RtMsg *m)
{
	if (!ordered(m) || m->h.src >= p->plan->ntask)
		return;
	pthread_mutex_lock(&p->mu);
	p->peers[m->h.src].ordered = 0;
	pthread_cond_broadcast(&p->qcv);
	pthread_mutex_unlock(&p->mu);
}

int
rt_proc_next(RtProc *p, RtMsg *out, RtStep *step, double wait)
{
	double until = rt_now() + wait;
	RtMsg m;
	int i;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while ((i = next_record(p)) >= 0) {
			m = p->queue[i];
			memmove(p->queue + i, p->queue + i + 1,
				sizeof *p->queue * (size_t)(--p->nqueue - i));
			/* Accepted in the order they came, under the lock:
			   a client's steps are accepted here in the order
			   of their ids (rt_step_stale). */
			if (p->task >= 0 && (m.h.type == RT_MSG_START ||
					     m.h.type == RT_MSG_SPECIALISE) &&
			    rt_step_accept_locked(p, step, &m,
						  m.h.type == RT_MSG_START ?
						  (int)m.h.key : -1) != 0) {
				rt_msg_free(&m);
				continue;
			}
			if (ordered(&m) && m.h.src < p->plan->ntask)
				p->peers[m.h.src].ordered = 1;
			pthread_mutex_unlock(&p->mu);
			*out = m;
			return 0;
		}
		if (rt_now() >= until || rt_stop_requested)
			break;
		rt_cond_wait(&p->qcv, &p->mu, until);
	}
	pthread_mutex_unlock(&p->mu);
	return -1;
}

/* ------------------------------------------------------ incarnations */

uint16_t
rt_step_tag(uint64_t epoch)
{
	/* splitmix64's finaliser: incarnations a few nanoseconds apart get
	   unrelated tags, so two in a row share one but once in 65536. */
	uint64_t z = epoch + 0x9e3779b97f4a7c15ull;

	z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ z >> 27) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint16_t)(z ^ z >> 16 ^ z >> 32 ^ z >> 48);
}

/* "1763800000.123456789": an incarnation as the Unix time it started. */
static const char *
epoch_str(char *buf, size_t n, uint64_t epoch)
{
	snprintf(buf, n, "%llu.%09llu",
		 (unsigned long long)(epoch / 1000000000u),
		 (unsigned long long)(epoch % 1000000000u));
	return buf;
}

/* A message from an older incarnation of its task than one heard from
 * already: from a process that has ended (it was on its way when the
 * task restarted), or the task's clock went back.  Said once per task
 * and incarnation, since such a task's every message is dropped; and
 * per message with --verbose. */
static void
future_incarnation(RtProc *p, const RtHdr *h)
{
	RtPeer *t = &p->peers[h->src];
	char a[32];

	if (t->future != h->epoch) {
		t->future = h->epoch;
		fprintf(stderr, "tfgc: warning: %s: dropping messages from %s "
			"that say its process started at %s, more than %d s "
			"ahead of this machine's clock (clocks that disagree, "
			"or a forged message)\n", p->name,
			p->plan->tasks[h->src].name,
			epoch_str(a, sizeof a, h->epoch),
			(int)(EPOCH_AHEAD / 1000000000u));
	}
}

static void
stale_incarnation(RtProc *p, const RtHdr *h)
{
	RtPeer *t = &p->peers[h->src];
	const char *who = p->plan->tasks[h->src].name;
	char a[32], b[32];

	epoch_str(a, sizeof a, h->epoch);
	if (t->stale != h->epoch) {
		t->stale = h->epoch;
		fprintf(stderr, "tfgc: warning: %s: dropping messages from %s "
			"started at %s, older than its process started at %s "
			"heard from before (seconds since 1970: an ended "
			"process, or a clock set back?)\n", p->name, who, a,
			epoch_str(b, sizeof b, t->epoch));
	}
	if (p->opt.verbose)
		fprintf(stderr, "tfg: %s: %s of step %llu from %s started at "
			"%s dropped (an earlier incarnation)\n", p->name,
			rt_msg_name(h->type), RT_STEP_NO(h->step), who, a);
}

/* Task t restarted: what this process kept of its earlier incarnation
 * goes.  The new process's step ids have another tag, so started[t]
 * goes back to 0; the table's entries of t's steps (tensors from
 * anyone, its ABORTs) and what t queued here (START, SPECIALISE,
 * RELEASE) belong to steps the new one never started; its steps that
 * run here are cancelled (orphans), since nobody will finish them or
 * wait for them; and the roles hear of it (RT_EV_RESTARTED): t holds
 * none of the specialisations here any more, say. */
static void
restarted(RtProc *p, int t, uint64_t epoch)
{
	char a[32], b[32];
	RtMsg ev;
	int n = 0;

	if (p->opt.verbose)
		fprintf(stderr, "tfg: %s: %s restarted (started at %s, the "
			"process before it at %s): its steps and "
			"specialisations here are forgotten\n", p->name,
			p->plan->tasks[t].name, epoch_str(a, sizeof a, epoch),
			epoch_str(b, sizeof b, p->peers[t].epoch));
	p->peers[t].started = 0;
	rt_tab_forget_locked(p, t, -1);
	for (int i = 0; i < p->nqueue; i++) {
		if (p->queue[i].h.src == t &&
		    p->queue[i].h.type != RT_EV_RESTARTED)
			rt_msg_free(&p->queue[i]);
		else
			p->queue[n++] = p->queue[i];
	}
	p->nqueue = n;
	rt_steps_orphan_locked(p, t);
	memset(&ev, 0, sizeof ev);
	ev.h.type = RT_EV_RESTARTED;
	ev.h.src = (uint16_t)t;
	ev.h.epoch = epoch;
	if (rt_queue_push_locked(p, &ev) != 0)
		fprintf(stderr, "tfgc: error: %s: out of memory\n", p->name);
}

int
rt_epoch_check_locked(RtProc *p, const RtHdr *h)
{
	RtPeer *t;

	/* Every `tfgc run` is a controller of its own, so the controller's
	   incarnations mean nothing; and no other process is this task
	   while this one runs. */
	if (h->src == RT_SRC_CONTROLLER || h->src == p->task)
		return 0;
	t = &p->peers[h->src];
	if (h->epoch < t->epoch) {
		stale_incarnation(p, h);
		return -1;
	}
	if (h->epoch > t->epoch && h->epoch > incarnation() + EPOCH_AHEAD) {
		/* a process that started in the future: a clock far ahead, or
		   a forged epoch, which would make every message of the
		   task's real process look stale until everyone restarts */
		future_incarnation(p, h);
		return -1;
	}
	if (h->epoch > t->epoch) {
		/* The first message of the task: tensors of its steps that
		   came before it are of this incarnation, or of one before
		   (filed when this process knew none), which no step here
		   will take. */
		uint16_t tag = rt_step_tag(h->epoch);

		if (t->epoch != 0)
			restarted(p, h->src, h->epoch);
		else
			rt_tab_forget_locked(p, h->src, tag);
		t->epoch = h->epoch;
		t->tag = tag;
	}
	return 0;
}

int
rt_epoch_check(RtProc *p, const RtHdr *h)
{
	int rv;

	pthread_mutex_lock(&p->mu);
	rv = rt_epoch_check_locked(p, h);
	pthread_mutex_unlock(&p->mu);
	return rv;
}

/* ------------------------------------------------------------- send */

tfg_status
rt_msg_new(RtProc *p, const TfgPlan *plan, RtBuf **out,
	   unsigned char **body, int type, uint64_t step, uint32_t key,
	   const RtEdge *edge, size_t nbytes, TfgError *e)
{
	RtHdr h;
	RtBuf *m;

	*out = NULL;
	if ((uint64_t)nbytes > RT_MAX_BODY)
		return tfg_error(e, TFG_ETOOBIG,
				 "cannot send %zu bytes in one message (the "
				 "limit is %llu)", nbytes,
				 (unsigned long long)RT_MAX_BODY);
	if ((m = rt_buf_new(RT_HDR_SIZE + (body ? nbytes : 0))) == NULL)
		return tfg_error(e, TFG_ENOMEM, "%s: out of memory for a "
				 "message of %zu bytes", p->name, nbytes);
	rt_hdr_init(&h, plan ? plan : p->plan, type, step, key, p->src,
		    nbytes, p->epoch);
	if (edge) {
		h.dtype = (uint8_t)edge->dtype;
		h.rank = (uint8_t)edge->shape.rank;
		for (int i = 0; i < edge->shape.rank; i++)
			h.dims[i] = (uint64_t)edge->shape.dims[i];
		if (edge->counted && rt_edge_rowbytes(edge))
			h.dims[0] = nbytes / rt_edge_rowbytes(edge);
	}
	rt_hdr_encode(m->data, &h);
	*out = m;
	if (body)
		*body = m->data + RT_HDR_SIZE;
	return TFG_OK;
}

/* Between the slices of a blocked send: a stop request ends it; and so
 * does the cancellation of the step this task runs for another task's
 * client, since a send blocked on a peer that stopped reading must not
 * outlast it. */
static int
send_stop(void *arg, TfgError *e)
{
	RtStep *c = arg;

	if (rt_stop_requested) {
		tfg_error(e, TFG_ECANCELED, "interrupted");
		return 1;
	}
	return c && rt_step_poll(c, e) != TFG_OK;
}

/* A message to peer, counted for --stats. */
static void
count_out(RtProc *p, int peer, const RtBuf *m)
{
	if (peer >= 0 && peer < p->plan->ntask) {
		p->peers[peer].out_msgs++;
		p->peers[peer].out_bytes += m->len + m->ntail;
	}
}

char *
rt_stats_text(RtProc *p, size_t *n)
{
	size_t cap = 100 * (size_t)p->plan->ntask + 32, k;
	char *s = malloc(cap);

	int dialed = 0, shm = 0;

	if (s == NULL)
		return NULL;
	for (int i = 0; i < p->plan->ntask; i++) {
		dialed += rt_net_peer_dialed(&p->net, i);
		shm += rt_net_peer_shm(&p->net, i);
	}
	k = (size_t)snprintf(s, cap, "dialed %d shm %d\n", dialed, shm);
	for (int i = 0; i < p->plan->ntask; i++) {
		const RtPeer *q = &p->peers[i];
		unsigned long long om = q->out_msgs, ob = q->out_bytes,
				   im = q->in_msgs, ib = q->in_bytes;

		if (om || im)
			k += (size_t)snprintf(s + k, cap - k,
					      "%d %llu %llu %llu %llu\n", i,
					      om, ob, im, ib);
	}
	s[k] = '\0';
	*n = k;
	return s;
}

tfg_status
rt_send(RtProc *p, int peer, RtBuf *m, double deadline, RtStep *step,
	TfgError *e)
{
	count_out(p, peer, m);
	return rt_net_send(&p->net, peer, m, deadline, send_stop, step, e);
}

tfg_status
rt_send_held(RtProc *p, int peer, RtBuf *m, double deadline, RtStep *step,
	     TfgError *e)
{
	count_out(p, peer, m);
	return rt_net_hold(&p->net, peer, m, deadline, send_stop, step, e);
}

/* rt_send_text in the plan of hash prog (0: the own plan). */
static tfg_status
send_text(RtProc *p, const char *url, uint64_t prog, int type,
	  uint64_t step, uint32_t key, const char *buf, size_t n,
	  TfgError *e)
{
	RtBuf *m;
	unsigned char *body = NULL;
	tfg_status st;

	if ((st = rt_msg_new(p, NULL, &m, &body, type, step, key, NULL, n,
			     e)))
		return st;
	if (n)
		memcpy(body, buf, n);
	if (prog) {
		RtHdr h;

		rt_hdr_decode(&h, m->data);
		h.prog = prog;
		rt_hdr_encode(m->data, &h);
	}
	return rt_net_send_url(&p->net, url, m, rt_step_deadline(p),
			       send_stop, NULL, e);
}

tfg_status
rt_send_text(RtProc *p, const char *url, int type, uint64_t step,
	     uint32_t key, const char *buf, size_t n, TfgError *e)
{
	return send_text(p, url, 0, type, step, key, buf, n, e);
}

void
rt_body_url(char *buf, const RtMsg *m)
{
	size_t n = (size_t)m->h.nbytes, k;

	buf[0] = '\0';
	/* a PING's URL is followed by its run and pid */
	for (k = 0; k < n && m->body[k] != ' '; k++)
		;
	if (k == 0 || k >= RT_URL_MAX)
		return;
	for (size_t i = 0; i < n; i++)
		if (m->body[i] < ' ' || m->body[i] > '~')
			return;
	memcpy(buf, m->body, k);
	buf[k] = '\0';
}

/* The text refusing m, a PING of another run or another program
 * (RT_EV_FOREIGN_PING): whose servers these are, and what to do. */
static int
refusal_text(const RtProc *p, const RtMsg *m, char *text, size_t size)
{
	long pid;
	uint64_t run, prog = ping_prog(m, &run, &pid);
	const char *addr = p->plan->tasks[p->task].addr;

	/* not this plan's hash: a stranger who pinged would use it */
	if (prog != p->plan->hash)
		return snprintf(text, size, "%s serves another program (this "
				"run's plan is %016llx): start the servers and "
				"the run with the same file, --param, --fetch, "
				"--feed and --out", p->name,
				(unsigned long long)prog);
	return rt_holder_text(text, size, p->name, addr,
			      rt_run == 0 ? RT_HELD_SERVER : run != 0
			      ? RT_HELD_OTHER_RUN : RT_HELD_RUN, 1,
			      rt_run != 0 ? (long)getppid() : (long)getpid());
}

int
rt_holder_text(char *text, size_t size, const char *name, const char *addr,
	       int kind, int same, long pid)
{
	const char *prog = same ? "this program" : "another program";

	if (kind == RT_HELD_OTHER_RUN)
		return snprintf(text, size, "%s: %s is held by another run of "
				"%s (tfgc run, pid %ld), whose servers serve "
				"it alone: run this one with --free-ports "
				"(every task on a free port), move the tasks "
				"with --addr %s=HOST:PORT, or, to share "
				"servers between runs, start them with tfgc "
				"server and run with tfgc run --attach", name,
				addr, prog, pid, name);
	if (kind == RT_HELD_RUN)
		return snprintf(text, size, "%s: %s is held by a run of %s "
				"(tfgc run, pid %ld), whose servers serve it "
				"alone and stop with it (interrupt it, or kill "
				"%ld): tfgc run --attach and tfgc stop act on "
				"servers started with tfgc server", name, addr,
				prog, pid, pid);
	return snprintf(text, size, "%s: %s is served by a tfgc server of %s "
			"(pid %ld), which serves runs started with tfgc run "
			"--attach: add --attach to run on it, or --free-ports "
			"to start this run's own servers", name, addr, prog,
			pid);
}

void
rt_answer_ping(RtProc *p, const RtMsg *m)
{
	char url[RT_URL_MAX];
	unsigned char runs[8]; /* what its sessions are (TfgPlan.runs) */
	TfgError e;

	rt_body_url(url, m);
	rt_put_le(runs, p->plan->runs, 8);
	if (url[0] == '\0')
		fprintf(stderr, "tfgc: error: %s: PING without a reply "
			"address (ignored)\n", p->name);
	else if (rt_send_text(p, url, RT_MSG_PONG, 0, 0, (const char *)runs,
			      sizeof runs, &e))
		fprintf(stderr, "tfgc: error: %s: %s\n", p->name, e.msg);
}

void
rt_refuse_ping(RtProc *p, const RtMsg *m)
{
	char url[RT_URL_MAX], text[600];
	TfgError e;
	int n;

	rt_body_url(url, m);
	if (url[0] == '\0')
		return;
	n = refusal_text(p, m, text, sizeof text);
	/* in the run's plan, so that its controller takes it */
	if (send_text(p, url, m->h.prog, RT_MSG_PONG, 0, RT_PONG_REFUSED, text,
		      n < (int)sizeof text ? (size_t)n : sizeof text - 1, &e))
		fprintf(stderr, "tfgc: error: %s: %s\n", p->name, e.msg);
}

void
rt_msg_free(RtMsg *m)
{
	if (m->m)
		rt_buf_free(m->m);
	m->m = NULL;
}

int
rt_peer_up(RtProc *p, int task)
{
	return rt_net_peer_up(&p->net, task);
}

int
rt_peer_conn(RtProc *p, int task)
{
	return rt_net_peer_up(&p->net, task) ? rt_net_peer_ups(&p->net, task)
					     : 0;
}

int
rt_peer_gone(RtProc *p, int task)
{
	return rt_net_peer_gone(&p->net, task);
}

int
rt_peer_refused(RtProc *p, int task, char *why, size_t n)
{
	const char *name = p->plan->tasks[task].name;

	switch (rt_net_peer_refused(&p->net, task)) {
	case RT_REFUSED_MAC:
		snprintf(why, n, "%s refused %s: %s", name,
			 p->task < 0 ? "this tfgc" : p->name,
			 p->net.keyed ? "their cluster keys differ (give every "
			 "task the same --cluster-key)" : "it has a cluster "
			 "key, this process none (give it --cluster-key)");
		return 1;
	case RT_REFUSED_NOKEY:
		snprintf(why, n, "%s refused %s: it has no cluster key, this "
			 "process has one (give every task the same "
			 "--cluster-key)", name,
			 p->task < 0 ? "this tfgc" : p->name);
		return 1;
	case RT_REFUSED_TLS:
		snprintf(why, n, "no TLS connection from %s to %s: %s",
			 p->task < 0 ? "this tfgc" : p->name, name,
			 rt_net_peer_tls_why(&p->net, task));
		return 1;
	}
	return 0;
}

int
rt_peer_absent(RtProc *p, int task, char *why, size_t n)
{
	int err = rt_net_peer_dial_err(&p->net, task);

	if (err > 0)
		snprintf(why, n, "%s", strerror(err));
	else if (err < 0)
		snprintf(why, n, "cannot resolve its host");
	else if (rt_net_peer_up(&p->net, task))
		snprintf(why, n, "connected, no answer yet");
	else
		snprintf(why, n, "connecting");
	if (err > 0)
		why[0] = (char)tolower((unsigned char)why[0]);
	return err;
}

int
rt_peer_linked(RtProc *p, int task)
{
	return rt_net_peer_dialed(&p->net, task);
}

int
rt_peer_lost(RtProc *p, int task, char *why, size_t n)
{
	const char *name = p->plan->tasks[task].name;
	double down;

	/* a wait on a task makes a link to it, if it has none yet: its
	   heartbeat tells whether the task lives */
	rt_net_peer_open(&p->net, task);
	if (rt_peer_refused(p, task, why, n))
		return 1;
	switch (rt_net_peer_why(&p->net, task)) {
	case RT_GONE_HANGUP:
		snprintf(why, n, "lost connection to %s", name);
		return 1;
	case RT_GONE_SILENT:
		snprintf(why, n, "%s stopped answering (no heartbeat for "
			 "%g s)", name, p->net.hb_dead);
		return 1;
	}
	if ((down = rt_net_peer_down(&p->net, task)) > p->opt.startup_timeout &&
	    !rt_net_peer_up(&p->net, task)) {
		snprintf(why, n, "%s is not up (no answer for %.0f s)", name,
			 down);
		return 1;
	}
	return 0;
}

double
rt_step_deadline(const RtProc *p)
{
	return p->opt.step_timeout > 0 ? rt_now() + p->opt.step_timeout
				       : INFINITY;
}
