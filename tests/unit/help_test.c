/*
 * tests/unit/help_test.c: the table of tfgc's commands and options
 * (compiler/help.def), which the option parser reads and the help
 * prints: that it is consistent (every option some command's, no two
 * rows one command could mean by one spelling, the options a usage line
 * names the command's own), that it says what the compiler does (the
 * --emit modes and -fno- passes of compiler/passes.def), that lookups
 * and suggestions find what they should, and that the help fits 79
 * columns with each option on a line of its own.  That the parser
 * handles every option is -Wswitch's (compiler/driver.c switches on
 * them with no default); the goldens of tests/golden/cli show the text.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"
#include "tests/unit/test.h"

#define WIDTH 79   /* compiler/help.c's */
#define OPT_COL 24

/* Whether word appears in text as a word of its own. */
static int
has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = text; (p = strstr(p, word)) != NULL; p++) {
		char before = p == text ? ' ' : p[-1], after = p[n];

		if (!(before == '_' || (before >= 'a' && before <= 'z')) &&
		    !(after == '_' || (after >= 'a' && after <= 'z')))
			return 1;
	}
	return 0;
}

static void
t_table(void)
{
	for (int c = 0; c < CMD__N; c++) {
		const HelpCmd *h = &help_cmds[c];

		ASSERT_EQ(help_command(h->name), c);
		ASSERT(*h->line && *h->about && *h->example);
		/* the overview indents it by 6 */
		ASSERT(strlen(h->line) <= WIDTH - 6);
	}
	for (int i = 0; i < OPT__N; i++) {
		const HelpOpt *o = &help_opts[i];

		ASSERT_EQ(o->id, i);
		ASSERT(o->name[0] == '-' && o->cmds != 0 && *o->line);
		ASSERT(!o->alias || o->alias[0] == '-');
		/* one line beside the option's name, "(repeatable)" too
		   (--version's is the overview's, indented by 6) */
		ASSERT(strlen(o->line) + (o->flags & OPTF_REPEAT ? 13 : 0) <=
		       (o->id == OPT_VERSION ? WIDTH - 6 : WIDTH - OPT_COL));
		ASSERT(o->line[strlen(o->line) - 1] != '.');
	}
}

/* No command has two rows that one spelling could name: the parser
 * would take the first. */
static void
t_unambiguous(void)
{
	for (int i = 0; i < OPT__N; i++)
		for (int j = i + 1; j < OPT__N; j++) {
			const HelpOpt *a = &help_opts[i], *b = &help_opts[j];
			int same =
			    strcmp(a->name, b->name) == 0 ||
			    (a->alias && strcmp(a->alias, b->name) == 0) ||
			    (b->alias && strcmp(b->alias, a->name) == 0);

			if (same && (a->cmds & b->cmds))
				TEST_FAIL_("%s: rows %d and %d share a command",
					   a->name, i, j);
		}
}

/* Each option a usage line names ("tfgc emit --emit=MODE ...") is the
 * command's. */
static void
t_usage_options(void)
{
	for (int c = 0; c < CMD__N; c++) {
		const char *s = help_cmds[c].args;

		while (*s) {
			size_t n = strcspn(s, " []|=");

			if (n && s[0] == '-' && !help_option(c, s, n))
				TEST_FAIL_("tfgc %s's usage names '%.*s', not "
					   "its option", help_cmds[c].name,
					   (int)n, s);
			s += n ? n : 1;
		}
	}
}

/* Every --emit mode of compiler/passes.def, and tokens, is in emit's
 * paragraph; every pass -fno- may skip is in its line, and no other. */
static void
t_passes(void)
{
	static const char *const emit[] = {
#define PASS(id, run, name, emit, skip) emit,
#include "compiler/passes.def"
	    "tokens"};
	const char *about = help_cmds[CMD_EMIT].about;

	for (size_t i = 0; i < sizeof emit / sizeof *emit; i++)
		for (const char *s = emit[i]; *s;) {
			size_t n = strcspn(s, " ");
			char mode[32];

			snprintf(mode, sizeof mode, "%.*s", (int)n, s);
			ASSERT(pass_of_emit(mode) >= 0 ||
			       strcmp(mode, "tokens") == 0);
			if (!has_word(about, mode))
				TEST_FAIL_("emit's help has no mode '%s'",
					   mode);
			s += n + (s[n] == ' ');
		}
	for (int p = 0; p < PASS__N; p++)
		if (has_word(help_opts[OPT_NO_PASS].line, pass_name(p)) !=
		    pass_skippable(p))
			TEST_FAIL_("-fno-'s line and pass '%s' disagree",
				   pass_name(p));
}

static const HelpOpt *
find(int cmd, const char *s)
{
	return help_option(cmd, s, strlen(s));
}

static void
t_lookup(void)
{
	ASSERT_EQ(find(CMD_RUN, "--trace")->id, OPT_TRACE);
	ASSERT_EQ(find(CMD_SERVER, "--trace")->id, OPT_TRACE_TASK);
	ASSERT(find(CMD_CHECK, "--trace") == NULL);
	ASSERT_EQ(help_option_cmds("--trace", 7),
		  1u << CMD_RUN | 1u << CMD_SERVER);
	ASSERT_EQ(find(CMD_COMPILE, "-o")->id, OPT_OUTPUT);
	ASSERT_EQ(find(CMD_PLOT, "-o")->id, OPT_PLOT_OUT);
	ASSERT_EQ(find(CMD_STOP, "-v")->id, OPT_VERBOSE);
	ASSERT_EQ(find(CMD_PLOT, "-h")->id, OPT_HELP);
	ASSERT_EQ(find(CMD_CHECK, "-fno-fuse")->id, OPT_NO_PASS);
	ASSERT(find(CMD_CHECK, "-fno-plan") == NULL); /* not skippable */
	ASSERT(find(CMD_CHECK, "-fno-") == NULL);
	ASSERT(find(CMD_PLOT, "-fno-fold") == NULL);
	ASSERT_EQ(help_option_cmds("-fno-nosuch", 11), 0);
	ASSERT(find(CMD_RUN, "--pick") == NULL); /* no prefixes */
	ASSERT(find(CMD_RUN, "--picked-ports") == NULL); /* the server's */
	/* "--emit=ast": the parser passes the name's length */
	ASSERT_EQ(help_option(CMD_EMIT, "--emit=ast", 6)->id, OPT_EMIT);
	ASSERT_EQ(help_command("compile"), CMD_COMPILE);
	ASSERT_EQ(help_command("nosuch"), -1);
}

static void
t_nearest(void)
{
	ASSERT_STREQ(help_nearest_option(CMD_RUN, "--fre-ports", 11),
		     "--free-ports");
	ASSERT_STREQ(help_nearest_option(CMD_CHECK, "-fno-fodl", 9),
		     "-fno-fold");
	ASSERT_STREQ(help_nearest_option(CMD_RUN, "--verbos=1", 8),
		     "--verbose");
	/* a hidden option is suggested to nobody */
	ASSERT(help_nearest_option(CMD_SERVER, "--picked-port", 13) == NULL);
	ASSERT(help_nearest_option(CMD_RUN, "--zzzzzz", 8) == NULL);
	ASSERT_STREQ(help_nearest_command("compil"), "compile");
	ASSERT(help_nearest_command("xyzzy") == NULL);
}

/* out's lines fit WIDTH; the text is freed. */
static void
check_width(char *out, const char *what)
{
	for (char *s = out; *s;) {
		size_t n = strcspn(s, "\n");

		if (n > WIDTH)
			TEST_FAIL_("%s: a line of %zu columns: %.*s", what, n,
				   (int)n, s);
		s += n + (s[n] == '\n');
	}
	free(out);
}

static void
t_help_text(void)
{
	char *out;
	size_t n;
	FILE *f = open_memstream(&out, &n);

	help_overview(f);
	fclose(f);
	for (int c = 0; c < CMD__N; c++) {
		char want[64];

		snprintf(want, sizeof want, "\n  tfgc %s", help_cmds[c].name);
		ASSERT(strstr(out, want) != NULL);
	}
	check_width(out, "tfgc --help");
	for (int c = 0; c < CMD__N; c++) {
		f = open_memstream(&out, &n);
		help_print(f, c);
		fclose(f);
		/* every option of the command, its line whole: not
		   wrapped */
		for (int i = 0; i < OPT__N; i++) {
			const HelpOpt *o = &help_opts[i];
			char want[128];

			if (!(o->cmds >> c & 1) || (o->flags & OPTF_HIDDEN))
				continue;
			snprintf(want, sizeof want, "%s%s\n", o->line,
				 o->flags & OPTF_REPEAT ? " (repeatable)" : "");
			if (!strstr(out, want))
				TEST_FAIL_("tfgc help %s: no line '%s'",
					   help_cmds[c].name, o->line);
		}
		check_width(out, help_cmds[c].name);
	}
}

TEST_MAIN({"table", t_table}, {"unambiguous", t_unambiguous},
	  {"usage_options", t_usage_options}, {"passes", t_passes},
	  {"lookup", t_lookup}, {"nearest", t_nearest},
	  {"help_text", t_help_text})
