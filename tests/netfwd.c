/*
 * tests/netfwd.c: the links of tests/integration/hosts.inc's network
 * namespaces (root).  This kernel has no netem, so a link's delay comes
 * from here: a TUN device "tfgtun0" in each namespace named on the
 * command line (made after entering the namespace with setns, so that
 * the device lives there), and one loop that reads each IPv4 packet a
 * namespace sends and writes it into the namespace of its destination
 * address DELAY seconds later.  The kernels' TCP sees a real link: its
 * round trip, its segments, its ACKs, Nagle and delayed ACKs.  Bandwidth
 * comes from tbf on the devices (hosts.inc).  In C, so that a packet
 * costs the forwarder microseconds, as a switch costs little: the first
 * one, in Python, added some 150 µs a packet, and a step's extra ACKs
 * (tfg's two directions are two connections) showed as its time.
 *
 *     netfwd DELAY NETNS=ADDR...
 *
 * Prints "ready" once every device is made, then runs until killed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAXNS 16
#define QUEUE 65536 /* packets in flight; a full queue drops, as a link */
#define MTU 65536

typedef struct {
	double due;
	int out, len;
	unsigned char *p;
} Pkt;

static Pkt q[QUEUE];
static int qhead, qn;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
tun_in(const char *ns)
{
	char path[256];
	struct ifreq ifr;
	int nsfd, fd;

	snprintf(path, sizeof path, "/var/run/netns/%s", ns);
	if ((nsfd = open(path, O_RDONLY)) < 0 || setns(nsfd, CLONE_NEWNET)) {
		fprintf(stderr, "netfwd: cannot enter %s: %s\n", path,
			strerror(errno));
		exit(1);
	}
	close(nsfd);
	if ((fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK)) < 0) {
		fprintf(stderr, "netfwd: /dev/net/tun: %s\n", strerror(errno));
		exit(1);
	}
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "tfgtun0");
	if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
		fprintf(stderr, "netfwd: TUNSETIFF in %s: %s\n", ns,
			strerror(errno));
		exit(1);
	}
	return fd;
}

int
main(int argc, char **argv)
{
	struct pollfd pfd[MAXNS];
	uint32_t addr[MAXNS];
	int n = 0, home;
	double delay;
	unsigned char *buf = malloc(MTU);

	if (argc < 3 || argc - 2 > MAXNS || buf == NULL) {
		fprintf(stderr, "usage: netfwd DELAY NETNS=ADDR...\n");
		return 2;
	}
	delay = atof(argv[1]);
	if ((home = open("/proc/self/ns/net", O_RDONLY)) < 0)
		return 1;
	for (int i = 2; i < argc; i++, n++) {
		char *eq = strchr(argv[i], '=');
		struct in_addr a;

		if (!eq || inet_pton(AF_INET, eq + 1, &a) != 1) {
			fprintf(stderr, "netfwd: not NETNS=ADDR: %s\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		addr[n] = a.s_addr;
		pfd[n].fd = tun_in(argv[i]);
		pfd[n].events = POLLIN;
	}
	if (setns(home, CLONE_NEWNET) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct timespec ts = {1, 0};
		double t = now();

		if (qn > 0) {
			double w = q[qhead].due - t;

			if (w < 0)
				w = 0;
			ts.tv_sec = (time_t)w;
			ts.tv_nsec = (long)((w - (double)ts.tv_sec) * 1e9);
		}
		if (ppoll(pfd, (nfds_t)n, &ts, NULL) < 0 && errno != EINTR)
			return 1;
		t = now();
		for (int i = 0; i < n; i++) {
			ssize_t len;

			if (!(pfd[i].revents & POLLIN))
				continue;
			while ((len = read(pfd[i].fd, buf, MTU)) > 0) {
				uint32_t dst;
				int out = -1;
				Pkt *k;

				if (len < 20 || buf[0] >> 4 != 4)
					continue;
				memcpy(&dst, buf + 16, 4);
				for (int j = 0; j < n; j++)
					if (addr[j] == dst)
						out = pfd[j].fd;
				if (out < 0 || qn == QUEUE)
					continue;
				k = &q[(qhead + qn) % QUEUE];
				if ((k->p = malloc((size_t)len)) == NULL)
					continue;
				memcpy(k->p, buf, (size_t)len);
				k->len = (int)len;
				k->out = out;
				k->due = t + delay;
				qn++;
			}
		}
		t = now();
		/* one delay for all: the queue is in order of due times */
		while (qn > 0 && q[qhead].due <= t) {
			Pkt *k = &q[qhead];

			(void)!write(k->out, k->p, (size_t)k->len);
			free(k->p);
			qhead = (qhead + 1) % QUEUE;
			qn--;
		}
	}
}
