/*
 * compiler/help.c: tfgc's help, made from the one table of its commands
 * and options, compiler/help.def, which the option parser
 * (compiler/driver.c) reads too, so that what the help says a command
 * takes is what it takes:
 *
 *   tfgc --help, tfgc help           the commands, a line each
 *   tfgc help CMD, tfgc CMD --help   CMD's usage, its options, examples
 *   a usage error                    the message, CMD's usage, and where
 *                                    to read more
 *   tfgc help --man                  all of it as a man page (troff),
 *                                    committed as man/tfgc.1 (make man)
 *   tfgc help --ops                  the graph functions' signatures as
 *                                    spec §6.7.1 "Signatures" has them
 *                                    (compiler/sig.c; make lint compares)
 *   tfgc help --op-facts             their dtypes, gradients, GPU kernels
 *                                    and folding, as the spec's table of
 *                                    §6.7.2 "Op facts" has them (make
 *                                    check-ops compares)
 *
 * Text is filled to 79 columns here, and by troff in the man page, so
 * the table holds each paragraph as one string.
 */
#include <stdarg.h>
#include <string.h>

#include "compiler/compiler_int.h"

#define C(id) (1u << CMD_##id)

const HelpCmd help_cmds[CMD__N] = {
#define CMD(id, name, args, line, about, example)                             \
	[CMD_##id] = {name, args, line, about, example},
#include "compiler/help.def"
};

const HelpOpt help_opts[OPT__N] = {
#define OPT(id, name, alias, arg, cmds, flags, set, line)                     \
	[OPT_##id] = {OPT_##id, name, alias, arg, cmds, flags, line},
#include "compiler/help.def"
};

typedef struct HelpItem {
	const char *name, *line;
} HelpItem;

static const HelpItem help_env[] = {
#define ENV(name, line) {name, line},
#include "compiler/help.def"
};

#define WIDTH 79   /* the terminal text's columns */
#define OPT_COL 24 /* where an option's line starts */

int
help_command(const char *name)
{
	for (int c = 0; c < CMD__N; c++)
		if (strcmp(help_cmds[c].name, name) == 0)
			return c;
	return -1;
}

/* Whether the n bytes at s spell o (or its alias, or -fno-PASS). */
static int
spells(const HelpOpt *o, const char *s, size_t n)
{
	size_t k = strlen(o->name);

	if (o->flags & OPTF_PREFIX) { /* -fno-PASS: a pass -fno- may skip */
		char pass[32];

		if (n <= k || n - k >= sizeof pass || strncmp(s, o->name, k))
			return 0;
		snprintf(pass, sizeof pass, "%.*s", (int)(n - k), s + k);
		return pass_skippable(pass_lookup(pass));
	}
	return (n == k && strncmp(s, o->name, n) == 0) ||
	       (o->alias && strlen(o->alias) == n &&
		strncmp(s, o->alias, n) == 0);
}

const char *
help_nearest_command(const char *name)
{
	const char *cand[CMD__N];

	for (int c = 0; c < CMD__N; c++)
		cand[c] = help_cmds[c].name;
	return check_nearest(name, cand, CMD__N);
}

const HelpOpt *
help_option(int cmd, const char *s, size_t n)
{
	for (int i = 0; i < OPT__N; i++)
		if ((cmd < 0 || help_opts[i].cmds >> cmd & 1) &&
		    spells(&help_opts[i], s, n))
			return &help_opts[i];
	return NULL;
}

unsigned
help_option_cmds(const char *s, size_t n)
{
	unsigned cmds = 0;

	for (int i = 0; i < OPT__N; i++)
		if (!(help_opts[i].flags & OPTF_HIDDEN) &&
		    spells(&help_opts[i], s, n))
			cmds |= help_opts[i].cmds;
	return cmds;
}

const char *
help_nearest_option(int cmd, const char *s, size_t n)
{
	static char pass[PASS__N][32]; /* -fno-NAME */
	const char *cand[OPT__N * 2 + PASS__N];
	char name[64];
	int k = 0;

	snprintf(name, sizeof name, "%.*s", (int)n, s);
	for (int i = 0; i < OPT__N; i++) {
		const HelpOpt *o = &help_opts[i];

		if (!(o->cmds >> cmd & 1) || (o->flags & OPTF_HIDDEN))
			continue;
		if (o->flags & OPTF_PREFIX) { /* -fno-: one a pass */
			for (int p = 0; p < PASS__N; p++)
				if (pass_skippable(p)) {
					snprintf(pass[p], sizeof pass[p],
						 "%s%s", o->name, pass_name(p));
					cand[k++] = pass[p];
				}
			continue;
		}
		cand[k++] = o->name;
		if (o->alias)
			cand[k++] = o->alias;
	}
	return check_nearest(name, cand, k);
}

/* --------------------------------------------------------- the terminal */

/* Writes text filled to WIDTH columns, each line but the first indented
 * by indent; col is where the first line starts.  Returns the column
 * after the last word. */
static int
fill(FILE *f, const char *text, int col, int indent)
{
	const char *s = text;

	while (*s) {
		size_t w = strcspn(s, " ");
		int gap = col > indent ? 1 : 0;

		if (col + gap + (int)w > WIDTH && col > indent) {
			fprintf(f, "\n%*s", indent, "");
			col = indent, gap = 0;
		}
		fprintf(f, "%*s%.*s", gap, "", (int)w, s);
		col += gap + (int)w;
		s += w;
		while (*s == ' ')
			s++;
	}
	return col;
}

/* Whether o's alias is a short one, written before its name ("-h,
 * --help"); a long one (TF's --job_name) comes after it. */
static int
alias_first(const HelpOpt *o)
{
	return o->alias && strncmp(o->alias, "--", 2) != 0;
}

/* "--name ARG", "-fno-PASS", "-v, --verbose" or "--job, --job_name J"
 * into buf. */
static const char *
opt_label(const HelpOpt *o, char *buf, size_t n)
{
	int first = alias_first(o);

	snprintf(buf, n, "%s%s%s%s%s%s%s", first ? o->alias : "",
		 first ? ", " : "", o->name,
		 o->alias && !first ? ", " : "",
		 o->alias && !first ? o->alias : "",
		 o->arg && !(o->flags & OPTF_PREFIX) ? " " : "",
		 o->arg ? o->arg : "");
	return buf;
}

static void
usage_lines(FILE *f, int cmd)
{
	if (cmd < 0) {
		fprintf(f, "usage: tfgc COMMAND [OPTION]... FILE\n");
		return;
	}
	fprintf(f, "usage: tfgc %s%s%s\n", help_cmds[cmd].name,
		*help_cmds[cmd].args ? " " : "", help_cmds[cmd].args);
}

int
help_usage_error(int cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tfgc: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage_lines(stderr, cmd);
	if (cmd < 0 || cmd == CMD_HELP)
		fprintf(stderr, "'tfgc help' lists the commands\n");
	else
		fprintf(stderr, "'tfgc help %s' lists its options\n",
			help_cmds[cmd].name);
	return 2;
}

void
help_overview(FILE *f)
{
	fprintf(f, "tfgc %s: the tfg compiler and runtime\n\n", TFG_VERSION);
	usage_lines(f, -1);
	fprintf(f, "\ncommands:\n");
	for (int c = 0; c < CMD__N; c++) {
		fprintf(f, "  tfgc %s%s%s\n      ", help_cmds[c].name,
			*help_cmds[c].args ? " " : "", help_cmds[c].args);
		fill(f, help_cmds[c].line, 6, 6);
		fprintf(f, "\n");
	}
	fprintf(f, "  tfgc --version\n      ");
	fill(f, help_opts[OPT_VERSION].line, 6, 6);
	fprintf(f, "\n\n");
	fill(f, "'tfgc help COMMAND' (or 'tfgc COMMAND --help') prints a "
	     "command's options and examples.  Options may come before or "
	     "after FILE, as --opt VALUE or --opt=VALUE.  Exit status: 0 "
	     "success, 1 an error in the program or at run time, 2 a bad "
	     "command line.", 0, 0);
	fprintf(f, "\n");
}

void
help_print(FILE *f, int cmd)
{
	const HelpCmd *h = &help_cmds[cmd];
	char buf[128];
	int any = 0;

	usage_lines(f, cmd);
	fprintf(f, "\n");
	fill(f, h->about, 0, 0);
	fprintf(f, "\n");
	for (int i = 0; i < OPT__N; i++) {
		const HelpOpt *o = &help_opts[i];
		int col;

		if (!(o->cmds >> cmd & 1) || (o->flags & OPTF_HIDDEN))
			continue;
		if (!any++)
			fprintf(f, "\noptions:\n");
		col = fprintf(f, "  %s", opt_label(o, buf, sizeof buf));
		if (col + 2 > OPT_COL) {
			fprintf(f, "\n");
			col = 0;
		}
		fprintf(f, "%*s", OPT_COL - col, "");
		col = fill(f, o->line, OPT_COL, OPT_COL);
		if (o->flags & OPTF_REPEAT)
			fill(f, "(repeatable)", col, OPT_COL);
		fprintf(f, "\n");
	}
	fprintf(f, "\n%s:\n", strchr(h->example, '\n') ? "examples"
						       : "example");
	for (const char *s = h->example; *s;) {
		size_t n = strcspn(s, "\n");

		fprintf(f, "  %.*s\n", (int)n, s);
		s += n + (s[n] == '\n');
	}
}

/* -------------------------------------------------------- the man page */

/* Text for troff: '-' as \- (a minus, which copies as '-', where a bare
 * one may print as a hyphen), '\' as \e, and a line that would start
 * with a control character ('.' or ''') behind \&. */
static void
roff(FILE *f, const char *s)
{
	int bol = 1;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s, f);
		bol = *s == '\n';
	}
}

/* A .TP tag: "\fB--name\fR \fIARG\fR", the alias, and the commands that
 * take it: [run, server], [every command], or none for --version. */
static void
roff_opt(FILE *f, const HelpOpt *o)
{
	const char *sep = " [";

	if (alias_first(o)) {
		fputs("\\fB", f);
		roff(f, o->alias);
		fputs("\\fR, ", f);
	}
	fputs("\\fB", f);
	roff(f, o->name);
	fputs("\\fR", f);
	if (o->alias && !alias_first(o)) {
		fputs(", \\fB", f);
		roff(f, o->alias);
		fputs("\\fR", f);
	}
	if (o->arg) {
		fputs(o->flags & OPTF_PREFIX ? "\\fI" : " \\fI", f);
		roff(f, o->arg);
		fputs("\\fR", f);
	}
	if (o->id == OPT_VERSION) {
		fputs("\n", f);
		return;
	}
	if (o->cmds == ~0u) {
		fputs(" [every command]\n", f);
		return;
	}
	for (int c = 0; c < CMD__N; c++)
		if (o->cmds >> c & 1) {
			fprintf(f, "%s%s", sep, help_cmds[c].name);
			sep = ", ";
		}
	fputs("]\n", f);
}

static void
roff_synopsis(FILE *f, int c)
{
	fputs("\\fBtfgc ", f);
	roff(f, help_cmds[c].name);
	fputs("\\fR", f);
	if (*help_cmds[c].args) {
		fputs(" ", f);
		roff(f, help_cmds[c].args);
	}
	fputs("\n", f);
}

/* A section of paragraphs, "\n" between them. */
static void
roff_section(FILE *f, const char *title, const char *text)
{
	fprintf(f, ".SH %s\n", title);
	for (const char *s = text; *s;) {
		size_t n = strcspn(s, "\n");
		char par[1024];

		snprintf(par, sizeof par, "%.*s", (int)n, s);
		roff(f, par);
		s += n;
		if (*s && *++s)
			fputs("\n.PP", f);
		fputs("\n", f);
	}
}

/* The man page's FILES: the path, what it is. */
static const HelpItem help_files[] = {
	{"OUT.h", "the C header tfgc compile writes next to OUT.o or OUT.so"},
	{"PREFIX/lib/libtfg.a, PREFIX/include/tfg/tfg.h",
	 "the runtime library that tfgc compile's objects link with, and "
	 "its header, where make install put them (PREFIX /usr/local by "
	 "default)"},
	{"~/.cache/tfg/cuda", "the GPU kernels compiled, kept for the next "
	 "start (TFG_CUDA_CACHE)"},
};

static void
roff_list(FILE *f, const char *title, const HelpItem *v, size_t n)
{
	fprintf(f, ".SH %s\n", title);
	for (size_t i = 0; i < n; i++) {
		fputs(".TP\n.B ", f);
		roff(f, v[i].name);
		fputs("\n", f);
		roff(f, v[i].line);
		fputs("\n", f);
	}
}

static void
help_man(FILE *f)
{
	fputs(".\\\" man/tfgc.1: made by 'tfgc help --man' (make man) from "
	      "compiler/help.def.\n.\\\" Do not edit: tests/integration/"
	      "help.sh fails when they differ.\n", f);
	fprintf(f, ".TH TFGC 1 \"\" \"tfgc %s\" \"tfg\"\n", TFG_VERSION);
	fputs(".nh\n.ad l\n", f); /* options are not words to hyphenate */
	roff_section(f, "NAME", "tfgc - check, compile and run tfg programs: "
		     "dataflow graphs on a cluster of tasks");
	fputs(".SH SYNOPSIS\n.nf\n", f);
	for (int c = 0; c < CMD__N; c++)
		roff_synopsis(f, c);
	fputs("\\fBtfgc \\-\\-version\\fR\n.fi\n", f);
	roff_section(f, "DESCRIPTION",
		     "tfgc compiles a tfg program (FILE: a cluster of tasks, a "
		     "graph of tensor operations placed on them, and the "
		     "sessions that run it, as TensorFlow 1's ClusterSpec, "
		     "graph and tf.Session) to machine code for each task "
		     "with LLVM (and CUDA kernels through NVRTC for GPUs), "
		     "and runs it: one tfgc server process per task, on this "
		     "machine or spread over several, and a controller that "
		     "runs the sessions.\nOptions may come before or "
		     "after FILE, as --opt VALUE or --opt=VALUE.  "
		     "'tfgc help COMMAND' or 'tfgc COMMAND --help' prints a "
		     "command's options.");
	fputs(".SH COMMANDS\n", f);
	for (int c = 0; c < CMD__N; c++) {
		const char *sep = "";

		fputs(".TP\n", f);
		roff_synopsis(f, c);
		roff(f, help_cmds[c].about);
		fputs("\n.IP\nOptions: ", f);
		for (int i = 0; i < OPT__N; i++) {
			const HelpOpt *o = &help_opts[i];

			if (!(o->cmds >> c & 1) || (o->flags & OPTF_HIDDEN))
				continue;
			fputs(sep, f);
			fputs("\\fB", f);
			roff(f, o->name);
			fputs(o->flags & OPTF_PREFIX ? "\\fR\\fIPASS\\fR"
						     : "\\fR", f);
			sep = ", ";
		}
		fputs(".\n.IP\n.nf\n", f);
		roff(f, help_cmds[c].example);
		fputs("\n.fi\n", f);
	}
	fputs(".SH OPTIONS\n", f);
	for (int i = 0; i < OPT__N; i++) {
		const HelpOpt *o = &help_opts[i];

		if (o->flags & OPTF_HIDDEN && o->id != OPT_VERSION)
			continue;
		fputs(".TP\n", f);
		roff_opt(f, o);
		roff(f, o->line);
		fputs(o->flags & OPTF_REPEAT ? " (repeatable)\n" : "\n", f);
	}
	roff_section(f, "EXIT STATUS", "0 success, 1 an error in the program "
		     "(compile or run time) or a task that did not answer "
		     "tfgc stop, 2 a bad command line.");
	roff_list(f, "ENVIRONMENT", help_env, sizeof help_env /
					      sizeof *help_env);
	roff_list(f, "FILES", help_files, sizeof help_files /
					  sizeof *help_files);
	roff_section(f, "SEE ALSO",
		     "dot(1), mpirun(1), srun(1).  The language reference is "
		     "spec/language.md in tfg's sources, its design "
		     "spec/design.md, and README.md a tour.");
}

int
help_main(int argc, char **argv)
{
	const HelpOpt *o;
	int c;

	if (argc == 1) {
		help_overview(stdout);
		return 0;
	}
	if (argc > 2)
		return help_usage_error(CMD_HELP, "unexpected argument '%s'",
					argv[2]);
	o = help_option(CMD_HELP, argv[1], strlen(argv[1]));
	if (o && o->id == OPT_MAN) {
		help_man(stdout);
		return 0;
	}
	if (o && o->id == OPT_OPS) {
		sig_table(stdout);
		return 0;
	}
	if (o && o->id == OPT_OP_FACTS) {
		op_facts_table(stdout);
		return 0;
	}
	if (o && o->id == OPT_HELP) {
		help_print(stdout, CMD_HELP);
		return 0;
	}
	if (argv[1][0] == '-')
		return help_usage_error(CMD_HELP, "unknown option '%s'",
					argv[1]);
	if ((c = help_command(argv[1])) < 0) {
		const char *w = help_nearest_command(argv[1]);

		return help_usage_error(CMD_HELP, "no command '%s'%s%s%s",
					argv[1], w ? "; did you mean '" : "",
					w ? w : "", w ? "'?" : "");
	}
	help_print(stdout, c);
	return 0;
}
