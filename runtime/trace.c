/*
 * runtime/trace.c: the events of --trace (runtime/trace.h,
 * spec/design.md "Traces").  One mutex-guarded array per process: an
 * event costs a clock read and a copy of its name, about 100 ns, and
 * nothing at all when no trace is recorded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/trace.h"

typedef struct Event {
	char cat[8];
	char name[72];
	uint64_t step, bytes;
	double t0, t1;
	int tid;
} Event;

int rt_tracing;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static Event *ev;
static size_t nev, capev;
static unsigned long long dropped;

void
rt_trace_start(void)
{
	rt_tracing = 1;
}

double
rt_trace_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
rt_trace_event(const char *cat, const char *name, uint64_t step,
	       uint64_t bytes, double t0, double t1)
{
	static _Thread_local int tid;
	Event *e;

	if (!rt_tracing)
		return;
	if (tid == 0)
		tid = (int)syscall(SYS_gettid);
	pthread_mutex_lock(&mu);
	if (nev == capev) {
		size_t nc = capev ? 2 * capev : 4096;
		Event *v = nc <= RT_TRACE_MAX ? realloc(ev, nc * sizeof *v)
					      : NULL;

		if (v == NULL) {
			dropped++;
			pthread_mutex_unlock(&mu);
			return;
		}
		ev = v, capev = nc;
	}
	e = &ev[nev++];
	snprintf(e->cat, sizeof e->cat, "%s", cat);
	snprintf(e->name, sizeof e->name, "%s", name);
	e->step = step, e->bytes = bytes;
	e->t0 = t0, e->t1 = t1 >= t0 ? t1 : t0;
	e->tid = tid;
	pthread_mutex_unlock(&mu);
}

/* s as the inside of a JSON string, into out (room for 6 bytes a byte). */
static void
json_str(char *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			*out++ = '\\', *out++ = (char)c;
		else if (c < 0x20 || c == 0x7f)
			out += sprintf(out, "\\u%04x", c);
		else
			*out++ = (char)c;
	}
	*out = '\0';
}

char *
rt_trace_take(int pid, double offset, size_t *n)
{
	size_t cap, len = 0;
	char *out, name[6 * sizeof ev->name + 1], cat[6 * sizeof ev->cat + 1];

	pthread_mutex_lock(&mu);
	cap = 256 + nev * (sizeof name + 200);
	if ((out = malloc(cap)) == NULL) {
		pthread_mutex_unlock(&mu);
		return NULL;
	}
	for (size_t i = 0; i < nev; i++) {
		const Event *e = &ev[i];

		json_str(name, e->name);
		json_str(cat, e->cat);
		len += (size_t)snprintf(out + len, cap - len,
			"{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\","
			"\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
			"\"args\":{\"step\":%llu,\"bytes\":%llu}},\n", name,
			cat, (e->t0 - offset) * 1e6, (e->t1 - e->t0) * 1e6,
			pid, e->tid, (unsigned long long)e->step,
			(unsigned long long)e->bytes);
	}
	if (dropped)
		len += (size_t)snprintf(out + len, cap - len,
			"{\"name\":\"%llu events not recorded (more than "
			"%d)\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%.3f,"
			"\"pid\":%d,\"tid\":0},\n", dropped, RT_TRACE_MAX,
			(rt_trace_clock() - offset) * 1e6, pid);
	out[len] = '\0';
	nev = 0;
	dropped = 0;
	pthread_mutex_unlock(&mu);
	*n = len;
	return out;
}
