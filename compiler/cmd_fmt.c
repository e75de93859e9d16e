/*
 * compiler/cmd_fmt.c: tfgc fmt, the formatter's command line (lang/fmt.c
 * formats; spec §10.8 "Formatting").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/driver.h"

/* Replaces the file at path by text: a temporary file in the same
 * directory, renamed over it, so that a reader (or a crash) never sees
 * half a program.  Keeps the file's permissions; a symbolic link is
 * followed, and its target replaced. */
static int
fmt_write(Arena *ar, const char *path, const char *text, size_t len)
{
	char *real = realpath(path, NULL);
	const char *target = real ? real : path, *slash;
	char *tmp;
	struct stat st;
	size_t done = 0;
	int fd, err = 0;

	slash = strrchr(target, '/');
	tmp = slash ? arena_printf(ar, "%.*s.%s.fmt-XXXXXX",
				   (int)(slash - target + 1), target, slash + 1)
		    : arena_printf(ar, ".%s.fmt-XXXXXX", target);
	if (stat(target, &st) != 0 || (fd = mkstemp(tmp)) < 0) {
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", path,
			strerror(errno));
		free(real);
		return 1;
	}
	while (done < len && !err) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno != EINTR)
			err = errno;
		else if (w > 0)
			done += (size_t)w;
	}
	if (!err && fchmod(fd, st.st_mode & 07777) != 0)
		err = errno;
	if (close(fd) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, target) != 0)
		err = errno;
	if (err) {
		unlink(tmp);
		fprintf(stderr, "tfgc: error: cannot write '%s': %s\n", path,
			strerror(err));
	}
	free(real);
	return err ? 1 : 0;
}

/* tfgc fmt [-w | --check] [FILE...] (spec §10.8 "Formatting"): each
 * program in the canonical layout on stdout; -w rewrites the files that
 * change; --check names those that would.  No FILE: standard input to
 * standard output.  A program that does not parse is reported and left
 * as it is.  Exit 1 after such a program, or with --check a file that is
 * not formatted. */
int
cmd_fmt(int argc, char **argv)
{
	const char **files = calloc((size_t)argc, sizeof *files);
	int write = 0, check = 0, nfile = 0, rc = 0;
	Args a = {.cmd = CMD_FMT};

	if (!files) {
		fputs("tfgc: error: out of memory\n", stderr);
		return 1;
	}
	for (int i = 2; i < argc && !rc; i++) {
		const char *s = argv[i];
		const HelpOpt *o;

		if (s[0] != '-' || !s[1]) {
			files[nfile++] = s;
		} else if (!(o = help_option(CMD_FMT, s, strlen(s)))) {
			rc = unknown_option(&a, s, strlen(s));
		} else {
			switch (o->id) {
			case OPT_FMT_WRITE:
				write = 1;
				break;
			case OPT_FMT_CHECK:
				check = 1;
				break;
			default: /* --help: help_asked answered it */
				break;
			}
		}
	}
	if (!rc && write && check)
		rc = bad_usage(&a, "fmt takes -w or --check, not both");
	if (nfile == 0)
		files[nfile++] = "-";
	for (int i = 0; !rc && i < nfile; i++)
		if (write && strcmp(files[i], "-") == 0)
			rc = bad_usage(&a, "fmt -w needs the FILEs to rewrite, "
				       "not standard input");
	if (rc) {
		free(files);
		return rc;
	}
	for (int i = 0; i < nfile; i++) {
		int in = strcmp(files[i], "-") == 0, e = 0;
		Arena *ar = arena_new();
		SrcFile *f = src_read(ar, in ? "/dev/stdin" : files[i], &e);
		char *out = NULL;
		size_t len = 0;
		Diag d;

		diag_init(&d, stderr);
		if (!f) {
			fprintf(stderr, "tfgc: error: cannot read '%s': %s\n",
				in ? "<stdin>" : files[i], strerror(e));
			rc = 1;
		} else {
			if (in)
				f->path = "<stdin>";
			out = lang_format(ar, f, &d, &len);
		}
		if (!out) {
			rc = 1; /* and nothing written */
		} else if (check) {
			if (len != f->len || memcmp(out, f->text, len) != 0) {
				printf("%s\n", f->path);
				rc = 1;
			}
		} else if (write) {
			if ((len != f->len || memcmp(out, f->text, len) != 0) &&
			    fmt_write(ar, files[i], out, len) != 0)
				rc = 1;
		} else {
			fwrite(out, 1, len, stdout);
		}
		arena_free(ar);
	}
	free(files);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "tfgc: error: cannot write the output: %s\n",
			strerror(errno));
		rc = 1;
	}
	return rc;
}

