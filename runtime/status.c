/*
 * runtime/status.c: status codes and error details.
 *
 * The messages come from runtime/errors.def through the X-macro, so the
 * table can never fall out of step with the tfg_status enum.  Also the
 * clock and address helpers every layer of the runtime uses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <limits.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt_int.h"

static const char *const status_msg[TFG__NSTATUS] = {
	[TFG_OK] = "ok",
#define ERR(name, msg) [TFG_##name] = msg,
#include "runtime/errors.def"
};

TFG_API const char *
tfg_strerror(tfg_status s)
{
	if ((int)s < 0 || s >= TFG__NSTATUS)
		return "unknown status";
	return status_msg[s];
}

TFG_API tfg_status
tfg_error(TfgError *e, tfg_status code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return code;
}

TFG_API void
tfg_assert_fail(const char *what, const char *file, int line)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, what);
	abort();
}

static const char *started_by = "tfgc run";

void
rt_started_by(const char *who)
{
	started_by = who;
}

/* The program file's directory ("examples/"), when it has one. */
static char program_dir[PATH_MAX];

void
rt_program_file(const char *file)
{
	const char *slash = file ? strrchr(file, '/') : NULL;

	program_dir[0] = '\0';
	if (slash && (size_t)(slash - file + 1) < sizeof program_dir)
		snprintf(program_dir, sizeof program_dir, "%.*s",
			 (int)(slash - file + 1), file);
}

const char *
rt_relative_note(char *buf, size_t n, const char *path)
{
	char cwd[PATH_MAX], there[2 * PATH_MAX];
	int k;

	if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return "";
	k = snprintf(buf, n, " (a relative path starts from %s, the directory "
		     "%s started in", cwd, started_by);
	/* the program's directory has it: say so, and the path from here */
	snprintf(there, sizeof there, "%s%s", program_dir, path);
	if (program_dir[0] && k > 0 && (size_t)k < n &&
	    access(there, F_OK) == 0)
		k += snprintf(buf + k, n - (size_t)k, "; there is a '%s' from "
			      "the program's directory: give '%s', or run "
			      "from %s", path, there, program_dir);
	if (k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, ")");
	return buf;
}

tfg_status
rt_no_such_file(TfgError *e, const char *path)
{
	char note[PATH_MAX + 100];

	return tfg_error(e, TFG_ENOENT, "%s: no such file%s", path,
			 rt_relative_note(note, sizeof note, path));
}

double
rt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
rt_url(char *buf, size_t n, const char *addr)
{
	if (strstr(addr, "://"))
		snprintf(buf, n, "%s", addr);
	else
		snprintf(buf, n, "tcp://%s", addr);
}

int
rt_limit_raise(int res, unsigned long long need, unsigned long long *hard)
{
	struct rlimit r;

	if (getrlimit(res, &r) != 0 || r.rlim_cur == RLIM_INFINITY ||
	    r.rlim_cur >= need)
		return 0;
	if (hard)
		*hard = r.rlim_max;
	if (r.rlim_max != RLIM_INFINITY && r.rlim_max < need) {
		r.rlim_cur = r.rlim_max;
		(void)setrlimit(res, &r);
		return -1;
	}
	r.rlim_cur = need;
	return setrlimit(res, &r) == 0 ? 0 : -1;
}
