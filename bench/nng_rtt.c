/*
 * bench/nng_rtt.c: the round trip of a bare nng req0/rep0 pair over
 * tcp://127.0.0.1 with 64-byte messages: the reference a tfg step that
 * crosses tasks is compared against (one START out, one tensor back).
 * With --size B the messages are of B bytes both ways: two bare
 * transfers of B bytes, the reference of a step that reads a variable
 * from another task and writes it back.
 *
 *     nng_rtt [N] [--thread] [--size B] [--tcp [--oneway]]
 *     nng_rtt [N] --memcpy --size B
 *     nng_rtt [N] --futex
 *
 * --tcp does the same over a plain TCP socket with blocking reads and
 * writes (TCP_NODELAY, no framing: both ends know the size), which is
 * the machine's own limit for a round trip.  --oneway answers each
 * message with one byte: the time to copy B bytes from one process to
 * another (and hear that they came), the reference of a tensor moved
 * between tasks.
 *
 * --memcpy times one thread's memcpy of B bytes between two buffers
 * whose pages are mapped: the machine's own limit for a tensor moved
 * through shared memory (spec/design.md "Shared memory").
 *
 * --futex times a round trip of two processes that wake each other
 * through a futex word in shared memory, and nothing else: the floor of
 * any transport whose reader sleeps until woken (spec/design.md "Shared
 * memory").
 *
 * By default the replier is a separate process (fork + exec of this
 * binary with --rep URL, as tfg's tasks are); --thread puts it on a thread
 * of this process instead.  Prints the median and mean in microseconds.
 * Messages are built in place (nng_msg_alloc) and reused on both sides.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

static size_t msg_size = 64;
static int raw_tcp, oneway;

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void
die(const char *what, int rv)
{
	fprintf(stderr, "nng_rtt: %s: %s\n", what, nng_strerror(rv));
	exit(1);
}

static int
full_io(int fd, unsigned char *buf, size_t n, int wr)
{
	while (n > 0) {
		ssize_t k = wr ? write(fd, buf, n) : read(fd, buf, n);

		if (k <= 0)
			return -1;
		buf += k, n -= (size_t)k;
	}
	return 0;
}

static void
tcp_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* --tcp: the port of url ("tcp://127.0.0.1:P"). */
static struct sockaddr_in
tcp_addr(const char *url)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)atoi(strrchr(url, ':') + 1));
	return a;
}

/* --tcp: echoes msg_size bytes at a time until the peer closes. */
static int
tcp_serve(const char *url)
{
	struct sockaddr_in a = tcp_addr(url);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), fd;
	unsigned char *buf = malloc(msg_size);

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (buf == NULL || bind(l, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(l, 1) != 0 || (fd = accept(l, NULL, NULL)) < 0) {
		perror("nng_rtt: tcp");
		return 1;
	}
	tcp_nodelay(fd);
	while (full_io(fd, buf, msg_size, 0) == 0 &&
	       full_io(fd, buf, oneway ? 1 : msg_size, 1) == 0)
		;
	free(buf);
	return 0;
}

/* --tcp: a connection to url, tried until the replier listens. */
static int
tcp_dial(const char *url)
{
	struct sockaddr_in a = tcp_addr(url);

	for (int i = 0; i < 500; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct timespec ts = {0, 10 * 1000000L};

		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
			tcp_nodelay(fd);
			return fd;
		}
		close(fd);
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "nng_rtt: cannot connect to %s\n", url);
	exit(1);
}

/* Echoes every request until the socket closes. */
static int
rep_serve(const char *url)
{
	nng_socket s;
	nng_msg *m;
	int rv;

	if ((rv = nng_rep0_open(&s)) != 0)
		die("rep0_open", rv);
	nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, (size_t)1 << 30);
	if ((rv = nng_listen(s, url, NULL, 0)) != 0)
		die("listen", rv);
	while (nng_recvmsg(s, &m, 0) == 0)
		if (nng_sendmsg(s, m, 0) != 0)
			nng_msg_free(m);
	return 0;
}

static void *
rep_thread(void *arg)
{
	if (raw_tcp)
		tcp_serve(arg);
	else
		rep_serve(arg);
	return NULL;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int
free_port(void)
{
	struct sockaddr_in a;
	socklen_t n = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &n) != 0) {
		perror("nng_rtt: bind");
		exit(1);
	}
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void
report(const char *what, double *t, int n, int use_thread)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("%s over tcp, %zu-byte messages, %s: "
	       "median %.1f us, mean %.1f us (%d iterations)\n", what, msg_size,
	       use_thread ? "replier thread" : "replier process", t[n / 2],
	       sum / n, n);
}

/* --tcp: the round trips over a plain socket. */
static int
tcp_main(int n, int use_thread, const char *url, pid_t pid)
{
	int fd = tcp_dial(url), warm = 200;
	unsigned char *buf = malloc(msg_size);
	double *t = malloc(sizeof *t * (size_t)n);

	if (buf == NULL || t == NULL)
		exit(1);
	memset(buf, 0x5a, msg_size);
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();

		if (full_io(fd, buf, msg_size, 1) != 0 ||
		    full_io(fd, buf, oneway ? 1 : msg_size, 0) != 0) {
			fprintf(stderr, "nng_rtt: tcp: the replier went "
				"away\n");
			exit(1);
		}
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	report(oneway ? "raw TCP one-way copy (1-byte answer)"
		      : "raw TCP round trip", t, n, use_thread);
	close(fd);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	free(buf);
	free(t);
	return 0;
}

/* --memcpy: n copies of msg_size bytes, one thread. */
static int
memcpy_main(int n)
{
	unsigned char *a = malloc(msg_size), *b = malloc(msg_size);
	double *t = malloc(sizeof *t * (size_t)n), sum = 0;

	if (a == NULL || b == NULL || t == NULL)
		exit(1);
	memset(a, 0x5a, msg_size);
	memset(b, 0xa5, msg_size);
	for (int i = -3; i < n; i++) {
		double t0 = now_us();

		memcpy(i & 1 ? a : b, i & 1 ? b : a, msg_size);
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	for (int i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("memcpy of %zu bytes, one thread: median %.1f us, mean %.1f "
	       "us (%d iterations)\n", msg_size, t[n / 2], sum / n, n);
	free(a);
	free(b);
	free(t);
	return 0;
}

/* --futex: n round trips of two processes that wake each other. */
static void
futex_wait_ne(_Atomic unsigned *w, unsigned v)
{
	while (atomic_load(w) == v)
		syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void
futex_bump(_Atomic unsigned *w)
{
	atomic_fetch_add(w, 1);
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static int
futex_main(int n)
{
	_Atomic unsigned *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *t = malloc(sizeof *t * (size_t)n), sum = 0;
	const int warm = 200;
	pid_t pid;

	if (w == MAP_FAILED || t == NULL)
		exit(1);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (unsigned i = 0; i < (unsigned)(n + warm); i++) {
			futex_wait_ne(&w[0], i);
			futex_bump(&w[16]);
		}
		_exit(0);
	}
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();

		futex_bump(&w[0]);
		futex_wait_ne(&w[16], (unsigned)(i + warm));
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("futex round trip between two processes: median %.1f us, "
	       "mean %.1f us (%d iterations)\n", t[n / 2], sum / n, n);
	free(t);
	return 0;
}

int
main(int argc, char **argv)
{
	int n = 20000, use_thread = 0, rv, warm = 200;
	char url[64];
	nng_socket s;
	nng_msg *m;
	double *t;
	pid_t pid = 0;
	pthread_t th;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--tcp") == 0)
			raw_tcp = 1;
		else if (strcmp(argv[i], "--oneway") == 0)
			oneway = 1;
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			msg_size = (size_t)atol(argv[++i]);
	if (msg_size < 1 || msg_size > ((size_t)1 << 30))
		msg_size = 64;
	if (argc >= 3 && strcmp(argv[1], "--rep") == 0)
		return raw_tcp ? tcp_serve(argv[2]) : rep_serve(argv[2]);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--thread") == 0)
			use_thread = 1;
		else if (strcmp(argv[i], "--tcp") == 0 ||
			 strcmp(argv[i], "--oneway") == 0 ||
			 strcmp(argv[i], "--memcpy") == 0 ||
			 strcmp(argv[i], "--futex") == 0)
			;
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			msg_size = (size_t)atol(argv[++i]);
		else
			n = atoi(argv[i]);
	if (n < 1)
		n = 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--memcpy") == 0)
			return memcpy_main(n);
		else if (strcmp(argv[i], "--futex") == 0)
			return futex_main(n);
	snprintf(url, sizeof url, "tcp://127.0.0.1:%d", free_port());
	if (use_thread) {
		pthread_create(&th, NULL, rep_thread, url);
	} else if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char size[32];

		snprintf(size, sizeof size, "%zu", msg_size);
		execl("/proc/self/exe", argv[0], "--rep", url, "--size", size,
		      raw_tcp ? "--tcp" : (char *)NULL,
		      oneway ? "--oneway" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	if (raw_tcp)
		return tcp_main(n, use_thread, url, pid);
	if ((rv = nng_req0_open(&s)) != 0)
		die("req0_open", rv);
	nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, (size_t)1 << 30);
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 10);
	if ((rv = nng_dial(s, url, NULL, NNG_FLAG_NONBLOCK)) != 0)
		die("dial", rv);
	if ((t = malloc(sizeof *t * (size_t)n)) == NULL ||
	    (rv = nng_msg_alloc(&m, msg_size)) != 0)
		die("alloc", NNG_ENOMEM);
	memset(nng_msg_body(m), 0x5a, msg_size);
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();

		if ((rv = nng_sendmsg(s, m, 0)) != 0)
			die("send", rv);
		if ((rv = nng_recvmsg(s, &m, 0)) != 0)
			die("recv", rv);
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	report("nng req/rep round trip", t, n, use_thread);
	nng_msg_free(m);
	nng_close(s);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	free(t);
	return 0;
}
