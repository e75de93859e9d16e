/*
 * tests/unit/lang_test.c: the front end: arena, diagnostics, lexer, the
 * newline rule, parser and error recovery (spec/design.md, "Language
 * decisions": Newlines, Literals).
 *
 * Sources are given as strings; diagnostics go to a memory stream so the
 * exact text (caret lines included) can be compared.
 */
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"
#include "tests/unit/test.h"

/* One parse with its diagnostics captured.  The arena is freed by
 * run_free(). */
typedef struct Run {
	Arena *a;
	Diag d;
	char *err;   /* diagnostics text */
	size_t nerrtext;
	FILE *errf;
	AstNode *ast;
} Run;

static void
run_parse(Run *r, const char *src)
{
	memset(r, 0, sizeof *r);
	r->a = arena_new();
	r->errf = open_memstream(&r->err, &r->nerrtext);
	diag_init(&r->d, r->errf);
	SrcFile *f = src_from_string(r->a, "t.tfg", src);
	r->ast = lang_parse(r->a, f, &r->d);
	fflush(r->errf);
}

static void
run_free(Run *r)
{
	fclose(r->errf);
	free(r->err);
	arena_free(r->a);
}

/* The token dump of src, in a malloc'd string. */
static char *
dump_tokens(const char *src, int *nerr)
{
	Arena *a = arena_new();
	char *out = NULL, *err = NULL;
	size_t n = 0, ne = 0;
	FILE *fo = open_memstream(&out, &n);
	FILE *fe = open_memstream(&err, &ne);
	Diag d;
	diag_init(&d, fe);
	*nerr = lang_dump_tokens(fo, src_from_string(a, "t.tfg", src), &d);
	fclose(fo);
	fclose(fe);
	free(err);
	arena_free(a);
	return out;
}

static char *
dump_ast(const AstNode *n)
{
	char *out = NULL;
	size_t len = 0;
	FILE *fo = open_memstream(&out, &len);
	ast_dump(fo, n);
	fclose(fo);
	return out;
}

/* ------------------------------------------------------------------ arena */

static void
t_arena(void)
{
	Arena *a = arena_new();
	for (int i = 1; i < 3000; i += 7) {
		unsigned char *p = arena_alloc(a, (size_t)i);
		ASSERT_EQ((uintptr_t)p % 16, 0);
		for (int j = 0; j < i; j++)
			ASSERT_EQ(p[j], 0);
		memset(p, 0xab, (size_t)i);
	}
	char *big = arena_alloc(a, 1 << 20);
	ASSERT_EQ(big[(1 << 20) - 1], 0);
	ASSERT_STREQ(arena_strndup(a, "hello", 3), "hel");
	ASSERT_STREQ(arena_printf(a, "%s:%d", "x", 42), "x:42");
	PtrVec v = {0};
	for (intptr_t i = 0; i < 100; i++)
		vec_push(a, &v, (void *)i);
	ASSERT_EQ(v.n, 100);
	ASSERT_EQ((intptr_t)v.v[99], 99);
	arena_free(a);
	arena_free(NULL);
}

static void
t_src_read(void)
{
	Arena *a = arena_new();
	int err = 0;
	SrcFile *f = src_read(a, "examples/hello.tfg", &err);
	ASSERT(f != NULL);
	ASSERT_EQ(strlen(f->text), f->len);
	ASSERT(src_read(a, "no/such/file.tfg", &err) == NULL);
	ASSERT(err != 0);
	arena_free(a);
}

/* ------------------------------------------------------------ diagnostics */

static void
t_diag_format(void)
{
	Arena *a = arena_new();
	char *out = NULL;
	size_t n = 0;
	FILE *fo = open_memstream(&out, &n);
	Diag d;
	diag_init(&d, fo);
	ASSERT_EQ(d.color, 0);
	SrcFile *f = src_from_string(a, "m.tfg", "x = 1\n\ty =\tfoo(2)\n");
	/* "foo(2)" on line 2, column 6 (tab, y, space, =, tab). */
	SrcLoc loc = {f, 11, 6, 2, 6};
	diag_error(&d, loc, "bad '%s'", "foo");
	diag_note(&d, loc, "here");
	SrcLoc none = {0};
	diag_warn(&d, none, "no place");
	fclose(fo);
	ASSERT_STREQ(out, "m.tfg:2:6: error: bad 'foo'\n"
			  "        y =     foo(2)\n"
			  "                ^~~~~~\n"
			  "m.tfg:2:6: note: here\n"
			  "        y =     foo(2)\n"
			  "                ^~~~~~\n"
			  "tfgc: warning: no place\n");
	ASSERT_EQ(d.nerr, 1);
	ASSERT_EQ(d.nwarn, 1);
	ASSERT_STREQ(diag_where(a, loc), "m.tfg:2:6");
	free(out);
	arena_free(a);
}

static void
t_diag_clip(void)
{
	/* A range running past the end of its line is clipped there. */
	Arena *a = arena_new();
	char *out = NULL;
	size_t n = 0;
	FILE *fo = open_memstream(&out, &n);
	Diag d;
	diag_init(&d, fo);
	SrcFile *f = src_from_string(a, "m.tfg", "ab cd\nef\n");
	SrcLoc loc = {f, 3, 6, 1, 4};
	diag_error(&d, loc, "x");
	fclose(fo);
	ASSERT_STREQ(out, "m.tfg:1:4: error: x\nab cd\n   ^~\n");
	free(out);
	arena_free(a);
}

static void
t_diag_color(void)
{
	Arena *a = arena_new();
	char *out = NULL;
	size_t n = 0;
	FILE *fo = open_memstream(&out, &n);
	Diag d;
	diag_init(&d, fo);
	d.color = 1;
	d.max = 1;
	SrcFile *f = src_from_string(a, "m.tfg", "x = 1\n");
	SrcLoc loc = {f, 4, 1, 1, 5};
	diag_error(&d, loc, "bad");
	diag_error(&d, loc, "suppressed");
	fclose(fo);
	ASSERT(strstr(out, "\033[1;31merror:") != NULL);
	ASSERT(strstr(out, "bad") != NULL);
	ASSERT(strstr(out, "too many errors") != NULL);
	ASSERT(strstr(out, "suppressed") == NULL);
	free(out);
	arena_free(a);
}

static void
t_diag_cap(void)
{
	char src[2048] = "";
	for (int i = 0; i < 30; i++)
		strcat(src, "x = $\n");
	Run r;
	run_parse(&r, src);
	ASSERT(r.ast == NULL);
	ASSERT_EQ(r.d.nerr, 30);
	ASSERT(r.d.capped);
	int lines = 0;
	for (const char *p = r.err; (p = strstr(p, ": error: ")); p++)
		lines++;
	ASSERT_EQ(lines, 21); /* 20 + "tfgc: error: too many errors" */
	/* The cap line comes once, last. */
	const char *capline = "tfgc: error: too many errors, stopping\n";
	const char *cap = strstr(r.err, capline);
	ASSERT(cap != NULL);
	ASSERT_EQ(cap[strlen(capline)], '\0');
	run_free(&r);
}

/* ------------------------------------------------------------------ lexer */

static void
t_lex_range(void)
{
	int nerr;
	char *s = dump_tokens("0..3 1.5 1e5 2.5e-3 0x1f", &nerr);
	ASSERT_EQ(nerr, 0);
	ASSERT_STREQ(s, "1:1 INT '0'\n1:2 DOTDOT '..'\n1:4 INT '3'\n"
			"1:6 FLOAT '1.5'\n1:10 FLOAT '1e5'\n"
			"1:14 FLOAT '2.5e-3'\n1:21 INT '0x1f'\n1:25 EOF ''\n");
	free(s);
	/* Python's and NumPy's floats (spec §2.6 "Float literals"); a range
	   stays one */
	s = dump_tokens("[1., .5] 1.e5 .5e-1 i..5 1.", &nerr);
	ASSERT_EQ(nerr, 0);
	ASSERT_STREQ(s, "1:1 LBRACKET '['\n1:2 FLOAT '1.'\n1:4 COMMA ','\n"
			"1:6 FLOAT '.5'\n1:8 RBRACKET ']'\n"
			"1:10 FLOAT '1.e5'\n1:15 FLOAT '.5e-1'\n"
			"1:21 IDENT 'i'\n1:22 DOTDOT '..'\n1:24 INT '5'\n"
			"1:26 FLOAT '1.'\n1:28 EOF ''\n");
	free(s);
}

static void
t_lex_errors(void)
{
	const char *bad[] = {
		"x = .5x", "x = 1.e", "x = 12ab", "x = 0x", "x = $",
		"x = \"abc", "x = \"a\\q\"", "x = 9223372036854775808",
		"x = 0x8000000000000000", "x = 1e999", "x = \"\\x4\"",
		"x = 1.5f", "x = 1e5x", "x = 1.5e-3_", "x = 1.e5y", "x = 0x1g",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int nerr;
		free(dump_tokens(bad[i], &nerr));
		if (nerr != 1)
			TEST_FAIL_("%s: %d lexical errors", bad[i], nerr);
	}
	int nerr;
	free(dump_tokens("x = 9223372036854775807 + 0x7fffffffffffffff",
			 &nerr));
	ASSERT_EQ(nerr, 0);
}

static void
t_lex_messages(void)
{
	Run r;
	run_parse(&r, "x = 1.f\ny = \"ab\ncd\"\nz = 99999999999999999999\n"
		      "w = 2 \x01 3\n");
	ASSERT(r.ast == NULL);
	ASSERT(strstr(r.err, "t.tfg:1:5: error: invalid number '1.f'\n") !=
	       NULL);
	ASSERT(strstr(r.err, "t.tfg:2:5: error: unterminated string\n"));
	ASSERT(strstr(r.err, "t.tfg:4:5: error: integer literal is too "
			     "large\n"));
	ASSERT(strstr(r.err, "t.tfg:5:7: error: unexpected character "
			     "'\\x01'\n"));
	run_free(&r);
}

static void
t_string_value(void)
{
	Run r;
	run_parse(&r, "session { print \"a\\n\\t\\\\\\\"\\x41\\x7e\" }");
	ASSERT(r.ast != NULL);
	AstNode *s = r.ast->list[0]->list[0]->list[0];
	ASSERT_EQ(s->kind, AST_STRING);
	ASSERT_STREQ(s->str, "a\n\t\\\"A~");
	run_free(&r);
}

/* ---------------------------------------------------------- newline rule */

static void
t_newlines_dump(void)
{
	int nerr;
	char *s = dump_tokens("a = f(1,\n 2)\n\n\nb = [1,\n2]; c = 1\n"
			      "session { run(x, feed {\n x: 1\n }) }\n",
			      &nerr);
	ASSERT_EQ(nerr, 0);
	ASSERT_STREQ(s,
		     "1:1 IDENT 'a'\n1:3 ASSIGN '='\n1:5 IDENT 'f'\n"
		     "1:6 LPAREN '('\n1:7 INT '1'\n1:8 COMMA ','\n"
		     "2:2 INT '2'\n2:3 RPAREN ')'\n2:4 SEMI '\\n'\n"
		     "5:1 IDENT 'b'\n5:3 ASSIGN '='\n5:5 LBRACKET '['\n"
		     "5:6 INT '1'\n5:7 COMMA ','\n6:1 INT '2'\n"
		     "6:2 RBRACKET ']'\n6:3 SEMI ';'\n6:5 IDENT 'c'\n"
		     "6:7 ASSIGN '='\n6:9 INT '1'\n6:10 SEMI '\\n'\n"
		     "7:1 SESSION 'session'\n7:9 LBRACE '{'\n"
		     "7:11 IDENT 'run'\n7:14 LPAREN '('\n7:15 IDENT 'x'\n"
		     "7:16 COMMA ','\n7:18 FEED 'feed'\n7:23 LBRACE '{'\n"
		     "8:2 IDENT 'x'\n8:3 COLON ':'\n8:5 INT '1'\n"
		     "9:2 RBRACE '}'\n9:3 RPAREN ')'\n9:5 RBRACE '}'\n"
		     "9:6 SEMI '\\n'\n9:6 EOF ''\n");
	free(s);
}

static void
t_newlines_parse(void)
{
	Run r;
	run_parse(&r,
		  "# comment\n\n"
		  "x = reduce_sum(\n  a,\n  axis = 0,\n)\n"
		  "t = [\n [1, 2],\n [3, 4]\n]\n"
		  "device \"/cpu:0\" { y = 1 }\n"
		  "device \"/cpu:0\" { y = 1; z = 2 }\n"
		  "u = (1\n + 2)\n"
		  "session {\n"
		  "  print run(x, feed {\n    a: 1,\n    b: 2\n  })\n"
		  "  for i in 0..3 { print i }\n"
		  "}\n");
	if (!r.ast)
		TEST_FAIL_("parse failed:\n%s", r.err);
	ASSERT_EQ(r.ast->n, 6);
	AstNode *call = r.ast->list[0]->a;
	ASSERT_EQ(call->kind, AST_CALL);
	ASSERT_EQ(call->n, 2);
	ASSERT_EQ(call->list[1]->kind, AST_KWARG);
	ASSERT_STREQ(call->list[1]->name, "axis");
	ASSERT_EQ(r.ast->list[1]->a->kind, AST_TENSOR);
	ASSERT_EQ(r.ast->list[1]->a->n, 2);
	ASSERT_EQ(r.ast->list[2]->n, 1);
	ASSERT_EQ(r.ast->list[3]->n, 2);
	ASSERT_EQ(r.ast->list[4]->a->kind, AST_BINARY);
	AstNode *ses = r.ast->list[5];
	ASSERT_EQ(ses->kind, AST_SESSION);
	ASSERT_EQ(ses->n, 2);
	AstNode *run = ses->list[0]->list[0];
	ASSERT_EQ(run->kind, AST_CALL);
	ASSERT(run->b && run->b->kind == AST_FEED);
	ASSERT_EQ(run->b->n, 2);
	ASSERT_STREQ(run->b->list[1]->name, "b");
	AstNode *loop = ses->list[1];
	ASSERT_EQ(loop->kind, AST_FOR);
	ASSERT_EQ(loop->a->ival, 0);
	ASSERT_EQ(loop->b->ival, 3);
	run_free(&r);
}

/* A newline inside a block is a separator, so an expression cannot go on
 * over a line break there. */
static void
t_newline_separates(void)
{
	Run r;
	run_parse(&r, "x = 1 +\n2\n");
	ASSERT(r.ast == NULL);
	ASSERT(strstr(r.err, "t.tfg:1:8: error: expected an expression, found "
			     "newline\n"));
	run_free(&r);
}

/* ------------------------------------------------------------------ parse */

static void
t_examples(void)
{
	const char *files[] = {"examples/hello.tfg", "examples/mean.tfg"};
	for (int i = 0; i < 2; i++) {
		Arena *a = arena_new();
		int err;
		SrcFile *f = src_read(a, files[i], &err);
		ASSERT(f != NULL);
		Diag d;
		diag_init(&d, stderr);
		AstNode *n = lang_parse(a, f, &d);
		ASSERT(n != NULL);
		ASSERT_EQ(d.nerr, 0);
		ASSERT_EQ(n->kind, AST_PROGRAM);
		if (i == 0) {
			ASSERT_EQ(n->n, 5);
			ASSERT_EQ(n->list[0]->kind, AST_CLUSTER);
			ASSERT_STREQ(n->list[0]->list[0]->name, "local");
			ASSERT_EQ(n->list[0]->list[0]->n, 2);
			ASSERT_STREQ(n->list[2]->str, "/job:local/task:1");
			ASSERT_EQ(n->list[4]->kind, AST_SESSION);
		} else {
			ASSERT_EQ(n->n, 5);
			AstNode *in = n->list[1];
			ASSERT_EQ(in->kind, AST_INPUT);
			ASSERT_STREQ(in->a->name, "f32");
			ASSERT(in->has_dims);
			ASSERT_EQ(in->list[0]->ival, 100);
			AstNode *idx = n->list[2]->list[0]->a->list[0];
			ASSERT_EQ(idx->kind, AST_INDEX);
			ASSERT_EQ(idx->list[0]->kind, AST_SLICE);
			ASSERT_EQ(idx->list[0]->b->ival, 50);
		}
		arena_free(a);
	}
}

static void
t_ast_dump(void)
{
	Run r;
	run_parse(&r, "y = -x[1:] * 2 + f(a, k=3.5)\n");
	ASSERT(r.ast != NULL);
	char *s = dump_ast(r.ast);
	ASSERT_STREQ(s, "program @1:1\n"
			"  assign y @1:1\n"
			"    binary '+' @1:16\n"
			"      binary '*' @1:12\n"
			"        unary '-' @1:5\n"
			"          index @1:6\n"
			"            name x @1:6\n"
			"            slice lo: @1:8\n"
			"              int 1 @1:8\n"
			"        int 2 @1:14\n"
			"      call f @1:18\n"
			"        name a @1:20\n"
			"        kwarg k @1:23\n"
			"          float 3.5 @1:25\n");
	/* Locations: the whole assignment; a binary's is its operator. */
	ASSERT_EQ(r.ast->list[0]->loc.len, 28);
	ASSERT_EQ(ast_extent(r.ast->list[0]->a).len, 24);
	free(s);
	run_free(&r);
}

static void
t_two_errors(void)
{
	Run r;
	run_parse(&r, "x = )\n"
		      "device \"/cpu:0\" {\n"
		      "    y = 1 2\n"
		      "}\n"
		      "session {\n  print (1\n  print 3\n  print 2 +\n}\n");
	ASSERT(r.ast == NULL);
	ASSERT_EQ(r.d.nerr, 4);
	ASSERT(strstr(r.err, "t.tfg:1:5: error: expected an expression, found "
			     "')'\n"));
	ASSERT(strstr(r.err, "t.tfg:3:11: error: expected end of statement, "
			     "found number '2'\n"));
	ASSERT(strstr(r.err, "t.tfg:7:3: error: expected ')', found "
			     "'print'\n"));
	ASSERT(strstr(r.err, "t.tfg:6:9: note: to match this '('\n"));
	ASSERT(strstr(r.err, "t.tfg:8:12: error: expected an expression, found "
			     "newline\n"));
	run_free(&r);
}

static void
t_adjacent_errors(void)
{
	/* Consecutive bad statements are all reported. */
	Run r;
	run_parse(&r, "a 1\nb 2\nc = 3\nd 4\n");
	ASSERT_EQ(r.d.nerr, 3);
	run_free(&r);
}

static void
t_error_messages(void)
{
	static const struct {
		const char *src, *msg;
	} cases[] = {
		{"x 2\n", "1:3: error: expected ',' or '=', found number '2'"},
		{"}\n", "1:1: error: unexpected '}'"},
		{"input x: 5\n",
		 "1:10: error: expected identifier, found number '5'"},
		{"device \"d\" {\n  x = 1\n",
		 "2:8: error: unexpected end of input"},
		{"for i in 0..3 { }\n",
		 "1:1: error: unexpected 'for' outside a session"},
		{"x = f(1 2)\n", "1:9: error: expected ')', found number '2'"},
		{"cluster { a = \"h\" }\n",
		 "1:15: error: expected '[', found string \"h\""},
		{"session { run(x, feed { x 1 }) }\n",
		 "1:27: error: expected ':', found number '1'"},
		{"x = g(1)(2)\n", "1:9: error: expected end of statement, "
				  "found '('"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		Run r;
		run_parse(&r, cases[i].src);
		if (r.ast || !strstr(r.err, cases[i].msg)) {
			char msg[512];
			snprintf(msg, sizeof msg, "%s", r.err ? r.err : "");
			run_free(&r);
			TEST_FAIL_("case %zu: want '%s', got:\n%s", i,
				   cases[i].msg, msg);
		}
		run_free(&r);
	}
}

static void
t_eof_note(void)
{
	Run r;
	run_parse(&r, "session {\n\tprint 1\n");
	ASSERT_STREQ(r.err, "t.tfg:2:9: error: unexpected end of input\n"
			    "        print 1\n"
			    "               ^\n"
			    "t.tfg:1:9: note: to match this '{'\n"
			    "session {\n"
			    "        ^\n");
	run_free(&r);
}

static void
t_deep_nesting(void)
{
	/* Refused with a message, not a crash. */
	size_t n = 5000;
	char *src = malloc(2 * n + 16);
	strcpy(src, "x = ");
	size_t k = strlen(src);
	for (size_t i = 0; i < n; i++)
		src[k++] = '(';
	src[k++] = '1';
	for (size_t i = 0; i < n; i++)
		src[k++] = ')';
	src[k++] = '\n';
	src[k] = '\0';
	Run r;
	run_parse(&r, src);
	ASSERT(r.ast == NULL);
	ASSERT(strstr(r.err, "error: program nests too deeply"));
	run_free(&r);
	free(src);
}

/* A left-deep chain grows no parser stack, but the passes after the
 * parser recurse: y + y + ... (10,000 terms crashed tfgc check) is
 * refused past AST_MAX_DEPTH, in a session too, and a chain just
 * within it parses. */
static void
t_deep_chain(void)
{
	static const char *const wrap[][2] = {{"x = ", "\n"},
					      {"session { print ", " }\n"}};

	for (int w = 0; w < 2; w++)
		for (int over = 0; over < 2; over++) {
			size_t n = over ? 10000 : AST_MAX_DEPTH - 3, k;
			char *src = malloc(4 * n + 64);
			Run r;

			k = (size_t)sprintf(src, "%s", wrap[w][0]);
			for (size_t i = 0; i < n; i++)
				k += (size_t)sprintf(src + k, "%sy", i ? " + "
									: "");
			strcpy(src + k, wrap[w][1]);
			run_parse(&r, src);
			if (over) {
				ASSERT(r.ast == NULL);
				ASSERT(strstr(r.err, "error: expression nests too "
					   "deeply (more than 1000 operations "
					   "inside one another): give parts of "
					   "it names"));
			} else {
				ASSERT(r.ast != NULL);
			}
			run_free(&r);
			free(src);
		}
}

static void
t_empty(void)
{
	const char *srcs[] = {"", "\n\n", ";;\n;", "# only a comment"};
	for (int i = 0; i < 4; i++) {
		Run r;
		run_parse(&r, srcs[i]);
		ASSERT(r.ast != NULL);
		ASSERT_EQ(r.ast->n, 0);
		run_free(&r);
	}
}

static void
t_names(void)
{
	ASSERT_STREQ(tok_kind_name(TK_IDENT), "identifier");
	ASSERT_STREQ(tok_kind_name(TK_PLUS), "'+'");
	ASSERT_STREQ(tok_kind_name(0), "end of input");
	ASSERT_STREQ(ast_kind_name(AST_BINARY), "binary");
	ASSERT_STREQ(ast_kind_name(AST_SLICE), "slice");
}

TEST_MAIN({"arena", t_arena}, {"src_read", t_src_read},
	  {"diag_format", t_diag_format}, {"diag_clip", t_diag_clip},
	  {"diag_color", t_diag_color}, {"diag_cap", t_diag_cap}, {"lex_range", t_lex_range},
	  {"lex_errors", t_lex_errors}, {"lex_messages", t_lex_messages},
	  {"string_value", t_string_value},
	  {"newlines_dump", t_newlines_dump},
	  {"newlines_parse", t_newlines_parse},
	  {"newline_separates", t_newline_separates},
	  {"examples", t_examples}, {"ast_dump", t_ast_dump},
	  {"two_errors", t_two_errors}, {"adjacent_errors", t_adjacent_errors},
	  {"error_messages", t_error_messages}, {"eof_note", t_eof_note},
	  {"deep_nesting", t_deep_nesting}, {"deep_chain", t_deep_chain},
	  {"empty", t_empty},
	  {"names", t_names})
