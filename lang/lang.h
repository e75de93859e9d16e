/*
 * lang/lang.h: the front end's public interface: source files, the arena,
 * diagnostics, tokens and the AST.
 *
 * Everything the front end makes lives in one Arena per compilation and is
 * freed once, by arena_free().  Tokens point into the source buffer, which
 * is read once and never changed.
 */
#ifndef TFG_LANG_LANG_H
#define TFG_LANG_LANG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ arena */

typedef struct Arena Arena;

Arena *arena_new(void);
void arena_free(Arena *a); /* accepts NULL */
/* Zeroed, 16-byte aligned; never returns NULL (prints and exits on OOM). */
void *arena_alloc(Arena *a, size_t n);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Growable pointer array in the arena. */
typedef struct PtrVec {
	void **v;
	int n, cap;
} PtrVec;
void vec_push(Arena *a, PtrVec *vec, void *p);

/* ----------------------------------------------------------------- source */

typedef struct SrcFile {
	const char *path; /* exactly as given */
	const char *text; /* NUL-terminated */
	size_t len;
} SrcFile;

/* Reads a whole file into the arena; NULL (and *err set to errno) on
 * failure. */
SrcFile *src_read(Arena *a, const char *path, int *err);
SrcFile *src_from_string(Arena *a, const char *path, const char *text);

/* A place in the source: a byte range; line and column count from 1,
 * columns count bytes. */
typedef struct SrcLoc {
	const SrcFile *file;
	uint32_t off, len;
	uint32_t line, col;
} SrcLoc;

/* ------------------------------------------------------------ diagnostics */

typedef struct Diag {
	FILE *out;   /* stderr normally */
	int color;   /* ANSI colour (only when out is a tty) */
	int nerr;    /* errors reported so far */
	int nwarn;
	int max;     /* stop printing after this many errors (20) */
	int capped;  /* "too many errors" already said */
} Diag;

/* out NULL: count the diagnostics, print none. */
void diag_init(Diag *d, FILE *out);
/* file:line:col: error: message, the source line, a caret under loc
 * (with ~ for the rest of loc.len).  A loc with file == NULL prints
 * "tfgc: error: message". */
void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_warn(Diag *d, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_verror(Diag *d, SrcLoc loc, const char *fmt, va_list ap);
/* "file:line:col" into the arena, for run-time messages. */
char *diag_where(Arena *a, SrcLoc loc);

/* ----------------------------------------------------------------- tokens */

/* Token kinds are TK_* from the Lemon grammar (build/lang/parse.h), which
 * lang_int.h includes.  Token 0 is end of input. */
typedef struct Token {
	const char *p; /* into the source */
	uint32_t len;
	SrcLoc loc;
	int kind;
} Token;

/* Name of a token kind for dumps and messages: "identifier", "'+'". */
const char *tok_kind_name(int kind);

/* --emit=tokens: one line per token, "LINE:COL KIND 'TEXT'". Returns the
 * number of lexical errors. */
int lang_dump_tokens(FILE *out, const SrcFile *f, Diag *d);

/* -------------------------------------------------------------------- AST */

typedef enum {
	/* top level */
	AST_PROGRAM,  /* list: statements */
	AST_CLUSTER,  /* list: AST_JOB */
	AST_JOB,      /* name; list: AST_STRING addresses */
	AST_DEVICE,   /* str: device string (loc of the string in a->loc);
			 a: AST_STRING, or AST_CALL for `device
			 replicas(...)`; list: statements */
	AST_ASSIGN,   /* name; a: value; list: the AST_NAMEs of `a, b = v`
			 (n >= 2; name is the first), else n == 0 */
	AST_INPUT,    /* name; a: AST_NAME dtype; list: dims (AST_INT;
			 ival -1 for `?`); has_dims: brackets were written */
	AST_SESSION,  /* a: AST_STRING target or NULL; list: statements;
			 ival 1: `session each`, name: its `as` name or
			 NULL */
	AST_VAR,      /* name; a: initial value; b: AST_NAME dtype or NULL;
			 list: dims (AST_INT); has_dims: brackets written */
	AST_PARALLEL, /* list: AST_SESSION that run at once */
	/* session statements */
	AST_PRINT,    /* list: expressions */
	AST_FOR,      /* name: loop variable; a: lo, b: hi (NULL: a is
			 what it runs over, batches(...)); list: body */
	AST_EXPRSTMT, /* a: expression */
	AST_LET,      /* name; a: value */
	AST_IF,       /* a: condition; list: statements; b: else block (its
			 list: statements, or one AST_IF) or NULL */
	/* expressions */
	AST_INT,      /* ival; tok: literal text */
	AST_FLOAT,    /* fval */
	AST_BOOL,     /* ival 0/1 */
	AST_STRING,   /* str: decoded contents; ival: their length (a \x00
			 escape may come before it) */
	AST_NAME,     /* name */
	AST_TENSOR,   /* list: elements ([1, 2] or nested) */
	AST_UNARY,    /* op: TK_MINUS; a */
	AST_BINARY,   /* op: TK_PLUS ...; a, b */
	AST_CALL,     /* name: callee (loc of the name in a->loc); a: AST_NAME;
			 list: arguments (AST_KWARG for name=value);
			 b: AST_FEED or NULL */
	AST_KWARG,    /* name; a: value */
	AST_FEED,     /* list: AST_FEEDITEM */
	AST_FEEDITEM, /* name (a: AST_NAME); b: value */
	AST_INDEX,    /* a: the indexed value; list: AST_SLICE or expressions */
	AST_SLICE,    /* a: lo or NULL, b: hi or NULL  (lo:hi) */
	AST_FIELD,    /* a.name: a session's `w.index`, `w.count` */
	AST_PARAM,    /* name; a: value (a literal; spec §4.5 "Params") */
	AST_METHOD,   /* a.name(...): as AST_CALL, a the value before the dot.
			 tfg has no methods: this is TF's tf.reduce_sum(x),
			 sess.run(y) or opt.minimize(loss), parsed so that
			 the checker can say what tfg writes instead
			 (compiler/habits.c) */
	AST__COUNT
} AstKind;

typedef struct AstNode AstNode;
struct AstNode {
	AstKind kind;
	SrcLoc loc;       /* the whole construct; for AST_BINARY the operator */
	Token tok;        /* the token that names it (operator, literal, name) */
	int op;           /* TK_* of an operator */
	const char *name; /* identifier, interned in the arena */
	const char *str;  /* decoded string literal */
	int64_t ival;
	double fval;
	int has_dims;
	AstNode *a, *b;
	int n;            /* list length */
	AstNode **list;
	int depth;        /* the height of its tree (lang_parse), at most
			     AST_MAX_DEPTH */
};

/* How deep a statement's tree may be: the passes after the parser walk
 * trees by recursion. */
#define AST_MAX_DEPTH 1000

/* Parses a whole file.  Returns the AST_PROGRAM node, or NULL when errors
 * were reported (d->nerr > 0); the parser recovers at statement boundaries
 * so several syntax errors come out of one run. */
AstNode *lang_parse(Arena *a, const SrcFile *f, Diag *d);

/* The whole source range of an expression (a binary's loc is only its
 * operator). */
SrcLoc ast_extent(const AstNode *n);

/* --emit=ast: an indented tree, one node per line with its line:col. */
void ast_dump(FILE *out, const AstNode *n);
const char *ast_kind_name(AstKind k);
/* A binary operator's token (AstNode.op, TK_*) as written: "+", "<=", ...;
 * "?" for any other. */
const char *ast_op_text(int op);

/* ------------------------------------------------------------- formatting */

/* tfgc fmt (lang/fmt.c): the program of f in the canonical layout (spec
 * §10.8 "Formatting"), NUL-terminated in the arena, its length in *len.
 * NULL when f does not parse (its errors reported through d), or, which
 * would be a bug, when the result would not parse to the same AST. */
char *lang_format(Arena *a, const SrcFile *f, Diag *d, size_t *len);

/* ------------------------------------------------------------------- JSON */

/* A JSON value (lang/json.c), for --cluster files and TF_CONFIG. */
typedef enum {
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT
} JsonKind;

typedef struct Json Json;
struct Json {
	JsonKind kind;
	SrcLoc loc;        /* the value as written (an array or object from
			      its bracket to the closing one) */
	int b;             /* JSON_BOOL */
	double num;        /* JSON_NUMBER */
	int is_int;        /* JSON_NUMBER written without '.' or exponent,
			      and at most 2^53 in magnitude (exact) */
	const char *str;   /* JSON_STRING: decoded UTF-8, no NUL inside */
	int n;             /* elements, or members */
	Json **items;      /* JSON_ARRAY: the elements; JSON_OBJECT: the
			      members' values, in the order written */
	const char **keys; /* JSON_OBJECT: keys[i] names items[i] */
	SrcLoc *keylocs;   /* JSON_OBJECT: where keys[i] is written */
};

/* Parses f as one JSON value, strictly (RFC 8259, and no two members of
 * an object with the same key).  NULL after reporting the first error
 * through d at its file:line:col. */
Json *json_parse(Arena *a, const SrcFile *f, Diag *d);
/* The member `key` of obj (NULL if obj is no object or has none), and
 * where the key is written into *keyloc (may be NULL). */
const Json *json_get(const Json *obj, const char *key, SrcLoc *keyloc);
/* "an object", "a string", ...: for "expected X, found Y". */
const char *json_kind_name(JsonKind k);

#endif /* TFG_LANG_LANG_H */
