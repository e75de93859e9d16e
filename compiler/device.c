/*
 * compiler/device.c: device strings as TensorFlow writes them.
 *
 *   /job:J/replica:R/task:T/device:CPU:N   /cpu:N   /gpu:N   /device:GPU:N
 *
 * Every part is optional and parts come in that order.  A Device keeps
 * unset parts unset (NULL, -1, DEV_UNSET) so that nested device blocks
 * can merge: the inner block's set parts win, the rest are inherited.
 * Replica is accepted only as 0, since there is no replication.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* Parses a decimal number at s; returns the chars used, 0 if none. */
static int
parse_num(const char *s, int *out)
{
	long v = 0;
	int i = 0;

	while (isdigit((unsigned char)s[i])) {
		v = v * 10 + (s[i] - '0');
		if (v > 1000000)
			return 0;
		i++;
	}
	*out = (int)v;
	return i;
}

static int
prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

int
dev_parse(Arena *a, Device *out, const char *s, const char **err,
	  int *err_off)
{
	Device d = DEVICE_UNSET;
	const char *p = s;
	int order = 0; /* 1 job, 2 replica, 3 task, 4 device */
	int n, v;

	while (*p) {
		const char *part = p;
		int this;

		*err_off = (int)(p - s);
		if (*p != '/') {
			*err = "expected '/' to start a device part";
			return -1;
		}
		p++;
		if (prefix(p, "job:")) {
			const char *q = p + 4;
			size_t len = strcspn(q, "/");
			if (len == 0) {
				*err_off = (int)(q - s);
				*err = "empty job name";
				return -1;
			}
			for (size_t i = 0; i < len; i++) {
				if (!isalnum((unsigned char)q[i]) &&
				    q[i] != '_' && q[i] != '-') {
					*err_off = (int)(q + i - s);
					*err = "invalid character in job name";
					return -1;
				}
			}
			d.job = arena_strndup(a, q, len);
			p = q + len;
			this = 1;
		} else if (prefix(p, "replica:")) {
			if ((n = parse_num(p + 8, &v)) == 0) {
				*err_off = (int)(p + 8 - s);
				*err = "expected a replica number";
				return -1;
			}
			if (v != 0) {
				*err_off = (int)(p + 8 - s);
				*err = "only replica 0 exists";
				return -1;
			}
			p += 8 + n;
			this = 2;
		} else if (prefix(p, "task:")) {
			if ((n = parse_num(p + 5, &v)) == 0) {
				*err_off = (int)(p + 5 - s);
				*err = "expected a task number";
				return -1;
			}
			d.task = v;
			p += 5 + n;
			this = 3;
		} else {
			int kind = 0, skip = 0;
			if (prefix(p, "cpu:") || prefix(p, "CPU:"))
				kind = DEV_CPU, skip = 4;
			else if (prefix(p, "gpu:") || prefix(p, "GPU:"))
				kind = DEV_GPU, skip = 4;
			else if (prefix(p, "device:CPU:") ||
				 prefix(p, "device:cpu:"))
				kind = DEV_CPU, skip = 11;
			else if (prefix(p, "device:GPU:") ||
				 prefix(p, "device:gpu:"))
				kind = DEV_GPU, skip = 11;
			if (!kind) {
				*err = "unknown device part (expected job, "
				       "replica, task, cpu, gpu or device)";
				return -1;
			}
			if ((n = parse_num(p + skip, &v)) == 0) {
				*err_off = (int)(p + skip - s);
				*err = "expected a device number";
				return -1;
			}
			d.kind = kind;
			d.index = v;
			p += skip + n;
			this = 4;
		}
		if (this <= order) {
			*err_off = (int)(part - s);
			*err = this == order ? "device part given twice"
					     : "device parts out of order "
					       "(job, replica, task, device)";
			return -1;
		}
		order = this;
		if (*p && *p != '/') {
			*err_off = (int)(p - s);
			*err = "unexpected character in device string";
			return -1;
		}
	}
	*out = d;
	return 0;
}

Device
dev_merge(Device outer, Device inner)
{
	Device d = outer;

	if (inner.job)
		d.job = inner.job;
	if (inner.task >= 0)
		d.task = inner.task;
	if (inner.kind != DEV_UNSET) {
		d.kind = inner.kind;
		d.index = inner.index;
	} else if (inner.index >= 0) {
		d.index = inner.index;
	}
	return d;
}

char *
dev_str(Arena *a, Device d)
{
	char buf[256];
	size_t n = 0;

	buf[0] = 0;
	if (d.job)
		n += snprintf(buf + n, sizeof buf - n, "/job:%s", d.job);
	if (d.task >= 0)
		n += snprintf(buf + n, sizeof buf - n, "/task:%d", d.task);
	if (d.kind != DEV_UNSET)
		snprintf(buf + n, sizeof buf - n, "/%s:%d",
			 d.kind == DEV_GPU ? "gpu" : "cpu",
			 d.index < 0 ? 0 : d.index);
	return arena_strdup(a, buf);
}

Device
dev_complete(const Program *p, Device d)
{
	if (!d.job)
		d.job = p->jobs[0].name;
	if (d.task < 0)
		d.task = 0;
	if (d.kind == DEV_UNSET)
		d.kind = DEV_CPU;
	if (d.index < 0)
		d.index = 0;
	return d;
}

int
dev_task_index(const Program *p, Device d)
{
	for (int j = 0; j < p->njob; j++) {
		const CJob *job = &p->jobs[j];
		if (d.job && strcmp(job->name, d.job) == 0)
			return d.task >= 0 && d.task < job->ntask
				   ? job->first + d.task
				   : -1;
	}
	return -1;
}

int
dev_slot(Device d)
{
	return d.kind == DEV_GPU ? 1 + (d.index < 0 ? 0 : d.index) : 0;
}
