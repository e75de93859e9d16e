/*
 * runtime/net_shm.c: shared memory between the processes of one host
 * (spec/design.md "Shared memory").
 *
 * A link whose peer runs on this kernel, in this network namespace,
 * writes its frames into a ring of shared pages instead of its socket:
 * the same bytes (length, then the message) that TCP would carry, so
 * that the receiver parses, lands and delivers them as it does a
 * connection's (net_recv.c), only reading them with a memcpy from the
 * ring.  The TCP connection stays: it carries the heartbeats, and its
 * hang-up is still how a peer's death shows.
 *
 *   dialer (writer)                      acceptor (reader)
 *   the link comes up (its first PONG)
 *   memfd of a ring, mapped      --SHM-->  opens /proc/PID/fd/FD, maps it,
 *   (pid, fd, size, token, here)           checks here and the token
 *   opens the reader's bell     <--OK---   (pid, fd of its bell, token)
 *   queue written on TCP, then  --GO--->   from here on, its frames come
 *   every frame on the ring                 on the ring, read by the
 *                                           process's shm thread
 *
 * The writer publishes head after each piece it copied, the
 * reader tail; the reader's process has one doorbell (a futex word in a
 * memfd page of its own) that every writer bumps, and on which its shm
 * thread sleeps after spinning briefly; a writer without room sleeps on
 * its ring's own word.  A writer that dies mid-frame leaves a frame the
 * reader never completes: once its TCP connection is gone, the reader
 * delivers what is whole and drops the rest, so a dead peer never
 * yields a torn tensor.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/net_int.h"

#define SHM_MAGIC 0x316d687367667454ull /* "Ttfgshm1" */
#define SHM_HEAD 4096                    /* the ring's header page */
#define SHM_RING ((size_t)1 << 20)       /* bytes of a ring (TFG_SHM_RING) */
#define SHM_PIECE ((size_t)128 << 10)    /* published at least this often */
#define SHM_SLEEP_MS 1000 /* and sleeps at most this long (a writer,
			     and the close, ring the bell) */

/* The header page of a ring: the writer's head and the reader's tail on
 * lines of their own. */
typedef struct ShmHead {
	uint64_t magic;
	unsigned char token[16];
	uint64_t size;
	char pad0[64 - 32];
	_Atomic uint64_t head;   /* bytes written, all told (the writer's) */
	char pad1[64 - 8];
	_Atomic uint64_t tail;   /* bytes read, all told (the reader's) */
	char pad2[64 - 8];
	_Atomic uint32_t wwait;  /* the writer sleeps on wseq for room */
	_Atomic uint32_t wseq;   /* bumped when room was made for it */
} ShmHead;

/* A process's doorbell: what it reads rings with sleeps on seq. */
typedef struct RtShmBell {
	uint64_t magic;
	unsigned char token[16];
	char pad0[64 - 24];
	_Atomic uint32_t seq;      /* bumped by every write to its rings */
	_Atomic uint32_t sleeping; /* its shm thread sleeps (or is about to) */
} RtShmBell;

/* A ring mapped, at either end. */
typedef struct RtShm {
	ShmHead *h;
	unsigned char *data; /* size bytes, and the same again after */
	size_t size, maplen;
	int fd;              /* the writer's memfd until the reader took it */
	RtShmBell *bell;     /* the writer's: the reader's bell */
	RtNet *net;          /* the process whose RT_SHM_MAX it counts in */
} RtShm;

static void
put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static long
futex(_Atomic uint32_t *w, int op, uint32_t v, int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	return syscall(SYS_futex, (uint32_t *)w, op, v, ms >= 0 ? &ts : NULL,
		       NULL, 0);
}

static void
ring_bell(RtShmBell *b)
{
	if (b == NULL)
		return;
	atomic_fetch_add(&b->seq, 1); /* a full barrier: head before it */
	if (atomic_load(&b->sleeping))
		futex(&b->seq, FUTEX_WAKE, 1, -1);
}

static size_t
ring_size(void)
{
	const char *s = getenv("TFG_SHM_RING");
	size_t v = s ? (size_t)strtoull(s, NULL, 0) : 0;

	if (v < ((size_t)64 << 10) || v > ((size_t)1 << 30) || (v & (v - 1)))
		return SHM_RING;
	return v;
}

/* The ring of memfd fd, size bytes after its header.  NULL on failure.
 * (Mapped once: mapping its bytes twice in a row, to copy a frame that
 * wraps in one piece, cost three mmap calls a ring, and each took a
 * millisecond in a process of many threads.) */
static RtShm *
shm_map(int fd, size_t size)
{
	RtShm *s = calloc(1, sizeof *s);
	unsigned char *base;

	if (s == NULL)
		return NULL;
	base = mmap(NULL, SHM_HEAD + size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	if (base == MAP_FAILED) {
		free(s);
		return NULL;
	}
	s->h = (ShmHead *)(void *)base;
	s->data = base + SHM_HEAD;
	s->size = size;
	s->maplen = SHM_HEAD + size;
	s->fd = -1;
	return s;
}

/* Copies n bytes into s's ring at position at (wrapping), or out of it. */
static void
ring_put(RtShm *s, uint64_t at, const void *src, size_t n)
{
	size_t o = (size_t)(at & (s->size - 1)), k = s->size - o;

	if (k >= n) {
		memcpy(s->data + o, src, n);
	} else {
		memcpy(s->data + o, src, k);
		memcpy(s->data, (const unsigned char *)src + k, n - k);
	}
}

static void
ring_get(RtShm *s, uint64_t at, void *dst, size_t n)
{
	size_t o = (size_t)(at & (s->size - 1)), k = s->size - o;

	if (k >= n) {
		memcpy(dst, s->data + o, n);
	} else {
		memcpy(dst, s->data + o, k);
		memcpy((unsigned char *)dst + k, s->data, n - k);
	}
}

static void
shm_free(RtShm *s)
{
	if (s == NULL)
		return;
	if (s->net)
		atomic_fetch_sub(&s->net->nshm, 1);
	if (s->fd >= 0)
		close(s->fd);
	if (s->bell)
		munmap(s->bell, SHM_HEAD);
	munmap(s->h, s->maplen);
	free(s);
}

/* The memfd that process pid has open as fd, read and write: -1 if it
 * cannot be opened (another host's pid, another user's process), or is
 * not nbytes long. */
static int
open_theirs(uint32_t pid, uint32_t fd, size_t nbytes)
{
	char path[64];
	struct stat st;
	int f;

	snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, fd);
	if ((f = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return -1;
	if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != nbytes) {
		close(f);
		return -1;
	}
	return f;
}

void
net_shm_init(RtNet *n)
{
	const char *off = getenv("TFG_NO_SHM");
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	n->shm = !(off && *off && strcmp(off, "0") != 0);
	n->bellfd = -1;
	pthread_mutex_init(&n->smu, NULL);
	for (const char *p = n->here; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	n->here_id = n->here[0] ? h : 0;
}

/* --------------------------------------------------------- the writer */

void
net_shm_offer(RtNet *n, RtLink *k)
{
	unsigned char x[SHM_OFFER];
	size_t size = ring_size();
	RtShm *s;
	int fd;

	if (!n->shm || n->here_id == 0 || k->mac || k->shm || k->shm_tried ||
	    k->nframes < RT_SHM_AFTER || k->lcbuf > 0 || k->nq > 0 ||
	    k->fd < 0 || k->connecting)
		return;
	k->shm_tried = 1; /* one offer a connection */
	if (atomic_fetch_add(&n->nshm, 1) >= RT_SHM_MAX) {
		/* a ps of 199 workers mapping 400 rings stalled its I/O
		   thread past the heartbeats: the busiest links have theirs,
		   the rest stay on TCP */
		atomic_fetch_sub(&n->nshm, 1);
		return;
	}
	if ((fd = memfd_create("tfg-ring", MFD_CLOEXEC)) < 0) {
		atomic_fetch_sub(&n->nshm, 1);
		return;
	}
	if (ftruncate(fd, (off_t)(SHM_HEAD + size)) != 0 ||
	    (s = shm_map(fd, size)) == NULL) {
		close(fd);
		atomic_fetch_sub(&n->nshm, 1);
		return;
	}
	s->net = n;
	s->fd = fd;
	s->h->magic = SHM_MAGIC;
	s->h->size = size;
	if (getrandom(s->h->token, sizeof s->h->token, 0) !=
	    (ssize_t)sizeof s->h->token) {
		shm_free(s);
		return;
	}
	put_le(x, (uint64_t)getpid(), 4);
	put_le(x + 4, (uint64_t)fd, 4);
	put_le(x + 8, size, 8);
	memcpy(x + 16, s->h->token, 16);
	put_le(x + 32, n->here_id, 8);
	k->shm = s;
	k->shm_state = SHM_OFFERED;
	net_link_word(n, k, CTL_SHM, x, sizeof x);
}

void
net_shm_answer(RtNet *n, RtLink *k, uint64_t w, const unsigned char *x)
{
	RtShm *s = k->shm;
	int fd;

	if (s == NULL || k->shm_state != SHM_OFFERED)
		return;
	if (w == CTL_SHM_OK &&
	    (fd = open_theirs((uint32_t)get_le(x, 4),
			      (uint32_t)get_le(x + 4, 4), SHM_HEAD)) >= 0) {
		void *b = mmap(NULL, SHM_HEAD, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);

		close(fd);
		if (b != MAP_FAILED && ((RtShmBell *)b)->magic == SHM_MAGIC &&
		    memcmp(((RtShmBell *)b)->token, x + 8, 16) == 0) {
			s->bell = b;
			close(s->fd); /* the reader has it mapped */
			s->fd = -1;
			k->shm_state = SHM_READY;
			net_shm_go(n, k);
			return;
		}
		if (b != MAP_FAILED)
			munmap(b, SHM_HEAD);
	}
	/* declined, or its bell is not to be had: TCP it stays */
	net_shm_drop(k);
}

void
net_shm_go(RtNet *n, RtLink *k)
{
	if (k->shm_state != SHM_READY || k->nq > 0 || k->lcbuf > 0 ||
	    k->fd < 0 || k->connecting)
		return;
	if (net_link_word(n, k, CTL_SHM_GO, NULL, 0) == 0 && k->fd >= 0)
		k->shm_state = SHM_ON;
}

void
net_shm_drop(RtLink *k)
{
	shm_free(k->shm);
	k->shm = NULL;
	k->shm_state = SHM_NONE;
}

ssize_t
net_link_sendv(RtLink *k, struct iovec *iov, int niov)
{
	RtShm *s = k->shm;
	uint64_t head, tail;
	size_t room, done = 0, piece = 0;

	if (k->shm_state != SHM_ON)
		return net_io_sendv(k->tls, k->fd, iov, niov);
	head = atomic_load_explicit(&s->h->head, memory_order_relaxed);
	tail = atomic_load_explicit(&s->h->tail, memory_order_acquire);
	if (head - tail > s->size) { /* the reader wrote nonsense */
		errno = EPROTO;
		return -1;
	}
	if ((room = s->size - (head - tail)) == 0) {
		errno = EAGAIN;
		return -1;
	}
	for (int i = 0; i < niov && done < room; i++) {
		const unsigned char *p = iov[i].iov_base;
		size_t len = iov[i].iov_len < room - done ? iov[i].iov_len
							  : room - done;

		while (len > 0) {
			size_t m = len < SHM_PIECE - piece ? len
							   : SHM_PIECE - piece;

			ring_put(s, head + done, p, m);
			p += m, len -= m, done += m, piece += m;
			if (piece == SHM_PIECE) { /* the reader starts on it */
				atomic_store_explicit(&s->h->head, head + done,
						      memory_order_release);
				ring_bell(s->bell);
				piece = 0;
			}
		}
	}
	if (piece) {
		atomic_store_explicit(&s->h->head, head + done,
				      memory_order_release);
		ring_bell(s->bell);
	}
	return (ssize_t)done;
}

void
net_link_wait(RtLink *k, int ms)
{
	RtShm *s = k->shm;

	if (k->shm_state == SHM_ON) {
		uint32_t seq = atomic_load(&s->h->wseq);

		atomic_store(&s->h->wwait, 1);
		if (atomic_load(&s->h->head) - atomic_load(&s->h->tail) >=
		    s->size)
			futex(&s->h->wseq, FUTEX_WAIT, seq, ms);
		atomic_store(&s->h->wwait, 0);
		return;
	}
	if (k->fd < 0 || k->connecting) {
		poll(NULL, 0, ms);
	} else {
		struct pollfd pfd = {k->fd, POLLOUT, 0};
		poll(&pfd, 1, ms);
	}
}

/* --------------------------------------------------------- the reader */

static void *shm_main(void *arg);

/* This process's bell, made at the first ring it takes, and the thread
 * that sleeps on it.  0, or -1. */
static int
bell_make(RtNet *n)
{
	int fd, rv = 0;
	void *b;

	pthread_mutex_lock(&n->smu);
	if (n->bell) { /* made; its thread too, unless that failed */
		rv = n->shm_started ? 0 : -1;
		goto out;
	}
	rv = -1;
	if ((fd = memfd_create("tfg-bell", MFD_CLOEXEC)) < 0)
		goto out;
	if (ftruncate(fd, SHM_HEAD) != 0 ||
	    (b = mmap(NULL, SHM_HEAD, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      0)) == MAP_FAILED) {
		close(fd);
		goto out;
	}
	if (getrandom(n->bell_token, 16, 0) != 16) {
		munmap(b, SHM_HEAD);
		close(fd);
		goto out;
	}
	memcpy(((RtShmBell *)b)->token, n->bell_token, 16);
	((RtShmBell *)b)->magic = SHM_MAGIC;
	n->bell = b;
	n->bellfd = fd;
	if (pthread_create(&n->shm_io, NULL, shm_main, n) == 0)
		n->shm_started = 1;
	rv = n->shm_started ? 0 : -1;
out:
	pthread_mutex_unlock(&n->smu);
	return rv;
}

/* Puts a word (and what follows it) in c's answer buffer, and writes
 * it: 0, or -1 when the connection broke. */
static int
conn_say(RtConn *c, uint64_t w, const unsigned char *x, int nx)
{
	ssize_t r;

	if (c->lpong + 8 + nx > (int)sizeof c->pong)
		return 0; /* it hears no answer: TCP it stays */
	net_word_put(c->pong + c->lpong, w);
	if (nx)
		memcpy(c->pong + c->lpong + 8, x, (size_t)nx);
	c->lpong += 8 + nx;
	r = net_io_send(c->tls, c->fd, c->pong + c->npong,
			(size_t)(c->lpong - c->npong));
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if ((c->npong += (int)r) == c->lpong)
		c->npong = c->lpong = 0;
	return 0;
}

int
net_conn_shm(RtNet *n, RtConn *c)
{
	const unsigned char *x = c->x;
	size_t size = get_le(x + 8, 8);
	unsigned char a[SHM_ANSWER];
	RtShm *s = NULL;
	int fd = -1, room = atomic_load(&n->nshm) < RT_SHM_MAX;

	if (room && n->shm && !c->mac && c->proven && c->rpend == NULL &&
	    c->rconn == NULL && n->here_id != 0 &&
	    get_le(x + 32, 8) == n->here_id &&
	    size >= ((size_t)64 << 10) && size <= ((size_t)1 << 30) &&
	    !(size & (size - 1)) &&
	    (fd = open_theirs((uint32_t)get_le(x, 4),
			      (uint32_t)get_le(x + 4, 4),
			      SHM_HEAD + size)) >= 0 &&
	    (s = shm_map(fd, size)) != NULL && s->h->magic == SHM_MAGIC &&
	    s->h->size == size && memcmp(s->h->token, x + 16, 16) == 0 &&
	    bell_make(n) == 0) {
		close(fd);
		s->net = n;
		atomic_fetch_add(&n->nshm, 1);
		c->rpend = s;
		put_le(a, (uint64_t)getpid(), 4);
		put_le(a + 4, (uint64_t)n->bellfd, 4);
		memcpy(a + 8, n->bell_token, 16);
		return conn_say(c, CTL_SHM_OK, a, sizeof a);
	}
	if (fd >= 0)
		close(fd);
	shm_free(s);
	return conn_say(c, CTL_SHM_NO, NULL, 0);
}

int
net_conn_shm_go(RtNet *n, RtConn *c)
{
	RtConn *r;

	if (c->rpend == NULL || c->rconn)
		return -1; /* GO without a ring taken */
	if ((r = calloc(1, sizeof *r)) == NULL)
		return -1;
	r->kind = EV_CONN;
	r->fd = -1;
	snprintf(r->addr, sizeof r->addr, "%s", c->addr);
	r->ready = r->proven = 1;
	r->ring = c->rpend;
	c->rpend = NULL;
	c->rconn = r;
	pthread_mutex_lock(&n->smu);
	r->next = n->snew;
	n->snew = r;
	pthread_mutex_unlock(&n->smu);
	ring_bell(n->bell);
	return 0;
}

void
net_conn_shm_close(RtNet *n, RtConn *c)
{
	shm_free(c->rpend);
	c->rpend = NULL;
	if (c->rconn) {
		atomic_store(&c->rconn->rdead, 1);
		c->rconn = NULL;
		ring_bell(n->bell);
	}
}

ssize_t
net_shm_read(RtConn *c, void *dst, size_t len)
{
	RtShm *s = c->ring;
	uint64_t tail = atomic_load_explicit(&s->h->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&s->h->head, memory_order_acquire);
	size_t got = 0;

	if (head == tail) {
		/* dead: whatever it wrote before its connection went is
		   here now */
		if (!atomic_load(&c->rdead)) {
			errno = EAGAIN;
			return -1;
		}
		head = atomic_load_explicit(&s->h->head, memory_order_acquire);
		if (head == tail)
			return 0;
	}
	if (head - tail > s->size) {
		errno = EPROTO;
		return -1;
	}
	while (got < len && tail != head) {
		size_t m = head - tail;

		if (m > len - got)
			m = len - got;
		if (m > SHM_PIECE)
			m = SHM_PIECE;
		ring_get(s, tail, (unsigned char *)dst + got, m);
		got += m;
		tail += m;
		atomic_store(&s->h->tail, tail); /* then look at wwait */
		if (atomic_load(&s->h->wwait)) {
			atomic_fetch_add(&s->h->wseq, 1);
			futex(&s->h->wseq, FUTEX_WAKE, INT_MAX, -1);
		}
		if (got < len && tail == head)
			head = atomic_load_explicit(&s->h->head,
						    memory_order_acquire);
	}
	return (ssize_t)got;
}

/* A ring's reader gone: its place (if it was reading into one) free
 * for the next frame, its buffer and its ring freed. */
static void
ring_free(RtNet *n, RtConn *c)
{
	pthread_mutex_lock(&n->lmu);
	if (c->land)
		c->land->conn = NULL;
	c->land = NULL;
	pthread_mutex_unlock(&n->lmu);
	rt_buf_free(c->cur);
	shm_free(c->ring);
	free(c);
}

/* Whether the shm thread has something to do with c: bytes to read,
 * or, dead, to be freed (a garbled one reads no more). */
static int
ring_has(RtConn *c)
{
	if (atomic_load(&c->rdead))
		return 1;
	return !atomic_load(&c->rbad) &&
	       atomic_load(&c->ring->h->head) !=
	       atomic_load_explicit(&c->ring->h->tail, memory_order_relaxed);
}



/* The shm thread: reads every ring this process took, and sleeps on the
 * bell when none has anything.  It does not spin first: on two cores a
 * spin of 30 us made a step crossing tasks slower (the core it held was
 * the one its answer was to be computed on), and 200 tasks starting at
 * once took seven times as long. */
static void *
shm_main(void *arg)
{
	RtNet *n = arg;
	RtShmBell *b = n->bell;
	RtConn *c, **p;

	while (!n->closing) {
		int moved = 0, any = 0;

		if (__atomic_load_n(&n->snew, __ATOMIC_RELAXED)) {
			pthread_mutex_lock(&n->smu);
			while ((c = n->snew) != NULL) {
				n->snew = c->next;
				c->next = n->rings;
				n->rings = c;
			}
			pthread_mutex_unlock(&n->smu);
		}
		for (p = &n->rings; (c = *p) != NULL;) {
			uint64_t t0 = atomic_load(&c->ring->h->tail);
			int rv = atomic_load(&c->rbad) ? -1
			       : net_conn_read(n, c);

			moved |= atomic_load(&c->ring->h->tail) != t0;
			if (rv < 0) {
				if (atomic_load(&c->rdead)) {
					*p = c->next;
					ring_free(n, c);
					continue;
				}
				/* garbled: read no more; the I/O thread
				   closes its connection (conn_sweep) */
				atomic_store(&c->rbad, 1);
			}
			p = &c->next;
		}
		if (moved)
			continue;
		uint32_t seq = atomic_load(&b->seq);

		atomic_store(&b->sleeping, 1);
		for (c = n->rings; c && !any; c = c->next)
			any = ring_has(c);
		if (!any && !__atomic_load_n(&n->snew, __ATOMIC_RELAXED) &&
		    !n->closing)
			futex(&b->seq, FUTEX_WAIT, seq, SHM_SLEEP_MS);
		atomic_store(&b->sleeping, 0);
	}
	/* what is left goes in net_shm_close: the connections of the
	   rings not dead yet still point at them */
	return NULL;
}

void
net_shm_close(RtNet *n)
{
	RtConn *c;

	if (n->shm_started) {
		ring_bell(n->bell);
		pthread_join(n->shm_io, NULL);
		n->shm_started = 0;
	}
	while ((c = n->snew) != NULL) {
		n->snew = c->next;
		ring_free(n, c);
	}
	while ((c = n->rings) != NULL) {
		n->rings = c->next;
		ring_free(n, c);
	}
	if (n->bell)
		munmap(n->bell, SHM_HEAD);
	if (n->bellfd >= 0)
		close(n->bellfd);
	n->bell = NULL;
	n->bellfd = -1;
	pthread_mutex_destroy(&n->smu);
}
