/*
 * tests/fuzz/front_fuzz.c: libFuzzer target for the front and middle
 * end (spec/design.md "Fuzzing"): a `.tfg` source, from memory, through
 * every pass of compiler/passes.def as `tfgc run` runs them (lexing,
 * parsing, checking, placement, the passes, partitioning, the plan), and
 * the dumps that read the result; no code generation, so that an input
 * costs microseconds, not the milliseconds of LLVM.
 *
 * The source is made as src_read makes it: the bytes as they are, NULs
 * included, with a NUL after them.  Diagnostics go to /dev/null, and so
 * do the dumps.  Beyond "no crash, no leak, no exit": the compiler fails
 * exactly when it reported an error, and the token dump agrees with the
 * parser on whether there was a lexical one.  tfgc fmt too: it formats
 * exactly the programs that parse (to the same AST: lang_format checks
 * that itself, and refuses otherwise), and formatting its result again
 * changes nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	CompileOptions co = {0};
	Program p;
	Arena *a;
	SrcFile *f, g;
	Diag d;
	int rc, nlex;
	char *text, *again;
	size_t len, len2;
	AstNode *ast;

	if (null == NULL && (null = fopen("/dev/null", "w")) == NULL) {
		perror("front_fuzz: /dev/null");
		abort();
	}
	a = arena_new();
	f = arena_alloc(a, sizeof *f);
	f->path = "fuzz.tfg";
	f->text = arena_strndup(a, (const char *)data, size);
	f->len = size;
	/* tfgc emit --emit=tokens */
	diag_init(&d, null);
	nlex = lang_dump_tokens(null, f, &d);
	/* tfgc run: `?` dims left make a generic plan */
	diag_init(&d, null);
	co.source = f;
	co.generic_ok = 1;
	rc = compile_file(&p, f->path, &co, &d);
	TFG_ASSERT((rc != 0) == (d.nerr != 0));
	TFG_ASSERT(nlex == 0 || rc != 0);
	if (rc == 0) {
		/* what tfgc emit --emit=ast and run --log-device-placement
		   print of a program compiled whole */
		ast_dump(null, p.ast);
		dump_placement_log(null, &p);
		if (!p.plan->generic)
			dump_partition(null, &p);
	}
	/* tfgc fmt */
	diag_init(&d, null);
	ast = lang_parse(a, f, &d);
	diag_init(&d, null);
	text = lang_format(a, f, &d, &len);
	TFG_ASSERT((text != NULL) == (ast != NULL));
	if (text) {
		g = *f;
		g.text = text;
		g.len = len;
		again = lang_format(a, &g, &d, &len2);
		TFG_ASSERT(again && len2 == len &&
			   memcmp(again, text, len) == 0);
	}
	arena_free(p.arena);
	arena_free(a);
	return 0;
}
