/*
 * compiler/ports.c: `tfgc run --free-ports`: the cluster's local addresses
 * become 127.0.0.1 at ports picked free, so that a program runs whatever
 * ports its cluster names (and tests run side by side).  Should another
 * process take a port before its task listens, the task exits with
 * TFG_EXIT_PORT_TAKEN and tfgc run picks again (spec/design.md
 * "Processes").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compiler/compiler_int.h"

static int
host_is_local(const char *addr)
{
	static const char *local[] = {"localhost:", "127.0.0.1:", "[::1]:",
				      "0.0.0.0:"};
	for (size_t i = 0; i < sizeof local / sizeof *local; i++)
		if (strncmp(addr, local[i], strlen(local[i])) == 0)
			return 1;
	return 0;
}

/* --free-ports: each local address becomes 127.0.0.1:<a free port>.
 * The sockets stay bound until all ports are picked, so they differ. */
int
free_ports(Program *p)
{
	int *fds = arena_alloc(p->arena, (p->ntask + 1) * sizeof *fds);
	int rc = 0;
	struct rlimit r;

	/* a socket held per task (tfg_launch checks what the run needs
	   later) */
	(void)rt_limit_raise(RLIMIT_NOFILE, (unsigned)p->ntask + 64ULL, NULL);
	for (int t = 0; t < p->ntask; t++) {
		struct sockaddr_in sa = {0};
		socklen_t len = sizeof sa;
		fds[t] = -1;
		if (!host_is_local(p->tasks[t].addr))
			continue;
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((fds[t] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		    bind(fds[t], (struct sockaddr *)&sa, sizeof sa) < 0 ||
		    getsockname(fds[t], (struct sockaddr *)&sa, &len) < 0) {
			int err = errno;

			if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &r) == 0)
				fprintf(stderr, "tfgc: error: cannot find a free "
					"port for each of the cluster's %d "
					"tasks: %s (this machine allows %llu "
					"open files, ulimit -Hn: raise it, or "
					"run fewer tasks here)\n", p->ntask,
					strerror(err),
					(unsigned long long)r.rlim_max);
			else
				fprintf(stderr, "tfgc: error: cannot find a free "
					"port: %s\n", strerror(err));
			rc = -1;
			break;
		}
		p->tasks[t].addr = p->plan->tasks[t].addr = arena_printf(
		    p->arena, "127.0.0.1:%d", ntohs(sa.sin_port));
	}
	for (int t = 0; t < p->ntask; t++)
		if (fds[t] >= 0)
			close(fds[t]);
	return rc;
}
