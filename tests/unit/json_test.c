/*
 * tests/unit/json_test.c: the strict JSON reader of --cluster files and
 * TF_CONFIG (lang/json.c; spec §10.6 "Launchers and cluster managers"):
 * what it accepts, what it decodes, and for each thing it refuses the
 * first line of its diagnostic, file:line:col included.
 */
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "tests/unit/test.h"

/* Parses text (len bytes: NULs may be inside) as file "c.json"; the
 * diagnostics' text goes to *err (malloc'd, "" when none). */
static Json *
parse_n(Arena *a, const char *text, size_t len, char **err)
{
	size_t n = 0;
	FILE *f = open_memstream(err, &n);
	SrcFile *src = src_from_string(a, "c.json", "");
	Diag d;
	Json *j;

	src->text = arena_strndup(a, text, len);
	memcpy((char *)src->text, text, len);
	src->len = len;
	diag_init(&d, f);
	j = json_parse(a, src, &d);
	fclose(f);
	ASSERT((j == NULL) == (d.nerr > 0));
	return j;
}

static Json *
parse(Arena *a, const char *text, char **err)
{
	return parse_n(a, text, strlen(text), err);
}

static void
t_values(void)
{
	Arena *a = arena_new();
	char *err = NULL;
	Json *j = parse(a, "{\"ps\": [\"h:1\"],\n  \"worker\": [\"a:2\", "
			"\"b:3\"], \"n\": -12, \"f\": 2.5e1, \"t\": true,\n"
			"\"z\": null, \"e\": {}, \"l\": [] }\n", &err);
	const Json *w, *v;
	SrcLoc kl;

	ASSERT(j != NULL);
	ASSERT_STREQ(err, "");
	ASSERT_EQ(j->kind, JSON_OBJECT);
	ASSERT_EQ(j->n, 8);
	/* members keep the order they were written in */
	ASSERT_STREQ(j->keys[0], "ps");
	ASSERT_STREQ(j->keys[1], "worker");
	w = json_get(j, "worker", &kl);
	ASSERT(w != NULL);
	ASSERT_EQ(kl.line, 2);
	ASSERT_EQ(kl.col, 3);
	ASSERT_EQ(w->kind, JSON_ARRAY);
	ASSERT_EQ(w->n, 2);
	ASSERT_STREQ(w->items[1]->str, "b:3");
	ASSERT_EQ(w->items[1]->loc.line, 2);
	ASSERT_EQ(w->items[1]->loc.col, 21);
	ASSERT_EQ(w->items[1]->loc.len, 5);
	v = json_get(j, "n", NULL);
	ASSERT_EQ(v->kind, JSON_NUMBER);
	ASSERT(v->is_int);
	ASSERT_NEAR(v->num, -12, 0);
	v = json_get(j, "f", NULL);
	ASSERT(!v->is_int);
	ASSERT_NEAR(v->num, 25, 0);
	ASSERT_EQ(json_get(j, "t", NULL)->kind, JSON_BOOL);
	ASSERT_EQ(json_get(j, "t", NULL)->b, 1);
	ASSERT_EQ(json_get(j, "z", NULL)->kind, JSON_NULL);
	ASSERT_EQ(json_get(j, "e", NULL)->n, 0);
	ASSERT_EQ(json_get(j, "l", NULL)->kind, JSON_ARRAY);
	ASSERT(json_get(j, "nope", NULL) == NULL);
	ASSERT(json_get(w, "ps", NULL) == NULL); /* not an object */
	free(err);
	/* a scalar alone is a document too */
	ASSERT_EQ(parse(a, " 0 ", &err)->kind, JSON_NUMBER);
	free(err);
	arena_free(a);
}

static void
t_strings(void)
{
	Arena *a = arena_new();
	char *err = NULL;
	/* every escape, a surrogate pair, UTF-8 kept as written */
	Json *j = parse(a, "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d"
			"\\ude00 \xc3\xa9\"", &err);

	ASSERT(j != NULL);
	ASSERT_STREQ(j->str, "a\"b\\c/d\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80 "
		     "\xc3\xa9");
	free(err);
	/* 2^53 is still exact, 2^53 + 2 no longer */
	j = parse(a, "[9007199254740992, 9007199254740994, 1e2]", &err);
	ASSERT(j->items[0]->is_int);
	ASSERT(!j->items[1]->is_int);
	ASSERT(!j->items[2]->is_int);
	free(err);
	arena_free(a);
}

/* Each refused text and the first line of its diagnostic. */
static const struct {
	const char *text, *want;
} bad[] = {
	{"", "c.json:1:1: error: unexpected end of input"},
	{"   \n ", "c.json:2:2: error: unexpected end of input"},
	{"{\"ps\": [\"a:1\",]}",
	 "c.json:1:14: error: trailing comma before ']': JSON allows none"},
	{"{\"ps\": [],\n}",
	 "c.json:1:10: error: trailing comma before '}': JSON allows none"},
	{"{\"ps\" [\"a:1\"]}",
	 "c.json:1:7: error: expected ':' after the key \"ps\", found '['"},
	{"{ps: 1}", "c.json:1:2: error: expected a member's name, a string "
		    "in double quotes, found 'ps'"},
	{"{'ps': 1}", "c.json:1:2: error: expected a member's name, a "
		      "string in double quotes, found '''"},
	{"['a']", "c.json:1:2: error: strings are written in double quotes"},
	{"{\"a\": 1 \"b\": 2}", "c.json:1:9: error: expected ',' or '}' "
				 "after a member of the object, found '\"'"},
	{"[1 2]", "c.json:1:4: error: expected ',' or ']' after an element "
		  "of the array, found '2'"},
	{"{\"a\": [1,\n  2", "c.json:2:4: error: unexpected end of input"},
	{"{\"a\": 1, \"a\": 2}",
	 "c.json:1:10: error: key \"a\" appears twice in this object"},
	{"[True]", "c.json:1:2: error: expected a value (an object, array, "
		   "string, number, true, false or null), found 'True'"},
	{"[nulls]", "c.json:1:2: error: expected a value (an object, array, "
		    "string, number, true, false or null), found 'nulls'"},
	{"[NaN]", "c.json:1:2: error: expected a value (an object, array, "
		  "string, number, true, false or null), found 'NaN'"},
	{"// x\n{}", "c.json:1:1: error: JSON has no comments"},
	{"{} {}", "c.json:1:4: error: unexpected '{' after the JSON value"},
	{"01", "c.json:1:1: error: invalid number '01': leading zeros are "
	       "not allowed"},
	{"[-]", "c.json:1:2: error: invalid number '-': expected a digit "
		"after '-'"},
	{"1.", "c.json:1:1: error: invalid number '1.': expected a digit "
	       "after '.'"},
	{".5", "c.json:1:1: error: expected a value (an object, array, "
	       "string, number, true, false or null), found '.'"},
	{"1e+", "c.json:1:1: error: invalid number '1e+': expected a digit "
		"in the exponent"},
	{"+1", "c.json:1:1: error: expected a value (an object, array, "
	       "string, number, true, false or null), found '+'"},
	{"1e999", "c.json:1:1: error: number '1e999' is out of range"},
	{"\"abc", "c.json:1:1: error: unterminated string"},
	{"\"ab\\", "c.json:1:4: error: unexpected end of input"},
	{"[\"a\nb\"]", "c.json:1:4: error: a string cannot contain a line "
		       "break: end it with '\"' or write \\n"},
	{"\"a\tb\"", "c.json:1:3: error: control character U+0009 in a "
		     "string: write it as an escape (\\u0009)"},
	{"\"\\x41\"", "c.json:1:2: error: invalid escape '\\x' (JSON has \\\" "
		      "\\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX)"},
	{"\"\\u12\"", "c.json:1:2: error: invalid \\u escape: expected four "
		      "hex digits"},
	{"\"\\u0000\"", "c.json:1:2: error: \\u0000 (a NUL character) is not "
			"allowed in a string"},
	{"\"\\ud83d\"", "c.json:1:2: error: unpaired surrogate \\uD83D"},
	{"\"\\ude00\"", "c.json:1:2: error: unpaired surrogate \\uDE00"},
	{"\"\xc3\"", "c.json:1:2: error: invalid UTF-8 in a string (byte "
		     "0xC3)"},
	{"\"\xc0\xaf\"", "c.json:1:2: error: invalid UTF-8 in a string "
			 "(byte 0xC0)"},
	{"\"\xed\xa0\x80\"", "c.json:1:2: error: invalid UTF-8 in a string "
			     "(byte 0xED)"},
	{"\xef\xbb\xbf{}", "c.json:1:1: error: expected a value (an object, "
			   "array, string, number, true, false or null), "
			   "found byte 0xEF"},
};

static void
t_errors(void)
{
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		Arena *a = arena_new();
		char *err = NULL, *nl;

		ASSERT(parse(a, bad[i].text, &err) == NULL);
		if ((nl = strchr(err, '\n')) != NULL)
			*nl = '\0';
		if (strcmp(err, bad[i].want) != 0)
			fprintf(stderr, "case %zu: %s\n", i, bad[i].text);
		ASSERT_STREQ(err, bad[i].want);
		free(err);
		arena_free(a);
	}
}

/* The whole diagnostic: the line, the caret, and for an object left open
 * a note at its brace; a duplicate key's note points at the first. */
static void
t_caret(void)
{
	Arena *a = arena_new();
	char *err = NULL;

	ASSERT(parse(a, "{\"ps\": [\"a:1\"], \"ps\": []}", &err) == NULL);
	ASSERT_STREQ(err, "c.json:1:17: error: key \"ps\" appears twice in "
		     "this object\n"
		     "{\"ps\": [\"a:1\"], \"ps\": []}\n"
		     "                ^~~~\n"
		     "c.json:1:2: note: first here\n"
		     "{\"ps\": [\"a:1\"], \"ps\": []}\n"
		     " ^~~~\n");
	free(err);
	ASSERT(parse(a, "{\n \"ps\": [\"a:1\"]\n", &err) == NULL);
	ASSERT_STREQ(err, "c.json:3:1: error: unexpected end of input\n"
		     "\n^\n"
		     "c.json:1:1: note: the object opened here is not closed\n"
		     "{\n^\n");
	free(err);
	arena_free(a);
}

/* A NUL byte outside a string, and nesting past the limit. */
static void
t_limits(void)
{
	Arena *a = arena_new();
	char *err = NULL, deep[200];

	ASSERT(parse_n(a, "[1,\0]", 5, &err) == NULL);
	ASSERT(strstr(err, "c.json:1:4: error: expected a value (an object, "
		      "array, string, number, true, false or null), found "
		      "byte 0x00") == err);
	free(err);
	for (int i = 0; i < 100; i++)
		deep[i] = '[';
	deep[100] = '\0';
	ASSERT(parse(a, deep, &err) == NULL);
	ASSERT(strstr(err, "c.json:1:65: error: arrays and objects nested "
		      "deeper than 64 levels") == err);
	free(err);
	arena_free(a);
}

TEST_MAIN({"values", t_values}, {"strings", t_strings},
	  {"errors", t_errors}, {"caret", t_caret}, {"limits", t_limits})
