/*
 * lang/parse.y: the grammar (Lemon generates build/lang/parse.c and
 * parse.h from it).  The language is described in spec/design.md
 * ("Language decisions") and lang/lang.h documents the AST it builds.
 *
 * Statements are separated by TK_SEMI, which the lexer makes from ';' and
 * front.c from significant newlines; an item may be empty, so blank lines
 * and `{ x = 1 }` need no special case.  Every list of statements starts
 * with the empty symbol bstart so that, even for the first statement of
 * the file, there is a state above the bottom of the stack that can shift
 * `error' (Lemon gives up when it has to pop the bottom state).
 *
 * Error recovery: a statement that fails becomes `item ::= error'; front.c
 * skips the rest of it and re-arms reporting (lang_parser_rearm) when it
 * reaches the statement's end, so errors in later statements are reported
 * too.  %syntax_error works out which tokens the parser could have taken,
 * by simulating its reductions on a copy of the state stack, and front.c
 * turns them into "expected ..., found ...".
 *
 * Nodes live in the arena, so no %destructor is needed.  List-building
 * nonterminals use a scratch node (kind AST_PROGRAM) whose list the final
 * node takes over.
 */

%name lang_parser
%token_prefix TK_
%token_type {Token}
%default_type {AstNode *}
%extra_context {Parser *ps}
%stack_size 1000

%include {
#include <assert.h>
#include <string.h>

#include "lang/lang_int.h"

static AstNode *
scratch(Parser *ps)
{
	SrcLoc loc = {ps->file, 0, 0, 1, 1};
	return ast_new(ps->arena, AST_PROGRAM, loc, NULL);
}

static const char *
tok_name(Parser *ps, const Token *t)
{
	return arena_strndup(ps->arena, t->p, t->len);
}

static AstNode *
binary(Parser *ps, AstNode *l, const Token *op, AstNode *r)
{
	AstNode *n = ast_new(ps->arena, AST_BINARY, op->loc, op);
	n->op = op->kind;
	n->a = l;
	n->b = r;
	return n;
}

static AstNode *
name_node(Parser *ps, const Token *t)
{
	AstNode *n = ast_new(ps->arena, AST_NAME, t->loc, t);
	n->name = tok_name(ps, t);
	return n;
}

static AstNode *
add(Parser *ps, AstNode *list, AstNode *item)
{
	if (item)
		ast_append(ps->arena, list, item);
	return list;
}

/* Whether identifier t is the contextual keyword kw: `var`, `let`,
 * `parallel`, `each` and `as` are keywords only where they start their
 * construct, so programs may still name values `var`
 * (spec §2.4 "Identifiers and keywords").  Else the construct is reported as
 * not understood. */
static int
word(Parser *ps, const Token *t, const char *kw, const char *what)
{
	if (t->len == strlen(kw) && memcmp(t->p, kw, t->len) == 0)
		return 1;
	diag_error(ps->d, t->loc, "unexpected identifier '%.*s'%s%s",
		   (int)t->len, t->p, what ? ": " : "", what ? what : "");
	return 0;
}

/* var N[: T[dims]] = E */
static AstNode *
var_stmt(Parser *ps, const Token *k, const Token *n, AstNode *t,
	 AstNode *dims, int has_dims, AstNode *e)
{
	AstNode *a;

	if (!word(ps, k, "var", "a variable is declared with 'var NAME = "
		  "value'"))
		return NULL;
	a = ast_new(ps->arena, AST_VAR, loc_span(k->loc, ast_extent(e)), n);
	a->name = tok_name(ps, n);
	a->a = e;
	a->b = t;
	a->has_dims = has_dims;
	if (dims)
		ast_take_list(a, dims);
	return a;
}

static AstNode *
slice(Parser *ps, const Token *c, AstNode *lo, AstNode *hi)
{
	SrcLoc first = lo ? ast_extent(lo) : c->loc;
	SrcLoc last = hi ? ast_extent(hi) : c->loc;
	AstNode *n = ast_new(ps->arena, AST_SLICE, loc_span(first, last), c);
	n->a = lo;
	n->b = hi;
	return n;
}
}

%syntax_error {
	/* Which tokens could come next: for each, replay the reductions the
	 * parser would make, on a copy of its state numbers. */
	YYACTIONTYPE stk[YYSTACKDEPTH + 64];
	int expected[YYNTOKEN];
	int n = 0;
	int depth = (int)(yypParser->yytos - yypParser->yystack) + 1;
	(void)yymajor;
	for (int k = 0; k < YYNTOKEN; k++) {
		if (k == YYERRORSYMBOL)
			continue;
		for (int i = 0; i < depth; i++)
			stk[i] = yypParser->yystack[i].stateno;
		int top = depth - 1, ok = 0;
		for (int guard = 0; guard < 1000; guard++) {
			YYACTIONTYPE act = yy_find_shift_action(
			    (YYCODETYPE)k, stk[top]);
			if (act >= YY_MIN_REDUCE && act <= YY_MAX_REDUCE) {
				int rule = act - YY_MIN_REDUCE;
				top += yyRuleInfoNRhs[rule];
				if (top < 0 || top + 1 >= YYSTACKDEPTH + 64)
					break;
				stk[top + 1] = yy_find_reduce_action(
				    stk[top], yyRuleInfoLhs[rule]);
				top++;
				continue;
			}
			ok = act <= YY_MAX_SHIFTREDUCE ||
			     act == YY_ACCEPT_ACTION;
			break;
		}
		if (ok)
			expected[n++] = k;
	}
	parse_report(ps, &TOKEN, expected, n);
}

%stack_overflow {
	ps->overflow = 1;
	diag_error(ps->d, ps->cur.loc, "program nests too deeply");
}

%code {
void
lang_parser_rearm(void *p)
{
	((yyParser *)p)->yyerrcnt = -1;
}
}

/* Fixed order, so token numbers are stable. */
%token SEMI IDENT INT FLOAT STRING.
%token CLUSTER DEVICE INPUT SESSION PRINT FOR IN FEED TRUE FALSE.
%token LPAREN RPAREN LBRACKET RBRACKET LBRACE RBRACE.
%token COMMA COLON ASSIGN DOTDOT.
%token PLUS MINUS STAR SLASH PERCENT.
%token EQ NE LT LE GT GE.
%token AT QUESTION.
%token IF ELSE DOT.

/* ------------------------------------------------------------ statements */

program ::= body(B). {
	B->kind = AST_PROGRAM;
	ps->root = B;
}

bstart ::= .

body(A) ::= bstart item(I). { A = add(ps, scratch(ps), I); }
body(A) ::= body(B) SEMI item(I). { A = add(ps, B, I); }
body(A) ::= body(B) error. { A = B; }

item(A) ::= . { A = NULL; }
item(A) ::= error. { A = NULL; }
item(A) ::= stmt(S). { A = S; }

stmt(A) ::= CLUSTER(K) LBRACE jbody(J) RBRACE(R). {
	A = ast_new(ps->arena, AST_CLUSTER, loc_span(K.loc, R.loc), &K);
	ast_take_list(A, J);
}
stmt(A) ::= DEVICE(K) string(S) LBRACE body(B) RBRACE(R). {
	A = ast_new(ps->arena, AST_DEVICE, loc_span(K.loc, R.loc), &K);
	A->str = S->str;
	A->a = S;
	ast_take_list(A, B);
}
/* device replicas(ps = "/job:ps", worker = "/job:worker") { ... } */
stmt(A) ::= DEVICE(K) IDENT(F) LPAREN(L) args(G) RPAREN(P) LBRACE body(B)
	    RBRACE(R). {
	AstNode *call = ast_new(ps->arena, AST_CALL, loc_span(F.loc, P.loc),
				&F);
	(void)L;
	call->name = tok_name(ps, &F);
	call->a = name_node(ps, &F);
	call->b = G->b;
	ast_take_list(call, G);
	A = ast_new(ps->arena, AST_DEVICE, loc_span(K.loc, R.loc), &K);
	A->a = call;
	ast_take_list(A, B);
}
stmt(A) ::= IDENT(N) ASSIGN expr(E). {
	A = ast_new(ps->arena, AST_ASSIGN, loc_span(N.loc, ast_extent(E)),
		    &N);
	A->name = tok_name(ps, &N);
	A->a = E;
}
/* a, b = moments(x, [0]): the elements of a list, one name each */
stmt(A) ::= IDENT(N) COMMA targets(L) ASSIGN expr(E). {
	A = ast_new(ps->arena, AST_ASSIGN, loc_span(N.loc, ast_extent(E)),
		    &N);
	A->name = tok_name(ps, &N);
	A->a = E;
	add(ps, A, name_node(ps, &N));
	for (int i = 0; i < L->n; i++)
		add(ps, A, L->list[i]);
}
targets(A) ::= IDENT(N). {
	A = add(ps, scratch(ps), name_node(ps, &N));
}
targets(A) ::= targets(L) COMMA IDENT(N). {
	A = add(ps, L, name_node(ps, &N));
}
stmt(A) ::= INPUT(K) IDENT(N) COLON tname(T). {
	A = ast_new(ps->arena, AST_INPUT, loc_span(K.loc, T->loc), &N);
	A->name = tok_name(ps, &N);
	A->a = T;
}
stmt(A) ::= INPUT(K) IDENT(N) COLON tname(T) LBRACKET dims(D) RBRACKET(R). {
	A = ast_new(ps->arena, AST_INPUT, loc_span(K.loc, R.loc), &N);
	A->name = tok_name(ps, &N);
	A->a = T;
	A->has_dims = 1;
	ast_take_list(A, D);
}
stmt(A) ::= IDENT(K) IDENT(N) ASSIGN expr(E). {
	if (K.len == 5 && memcmp(K.p, "param", 5) == 0) {
		A = ast_new(ps->arena, AST_PARAM, loc_span(K.loc,
							   ast_extent(E)), &N);
		A->name = tok_name(ps, &N);
		A->a = E;
	} else {
		A = var_stmt(ps, &K, &N, NULL, NULL, 0, E);
	}
}
stmt(A) ::= IDENT(K) IDENT(N) COLON tname(T) ASSIGN expr(E). {
	A = var_stmt(ps, &K, &N, T, NULL, 0, E);
}
stmt(A) ::= IDENT(K) IDENT(N) COLON tname(T) LBRACKET dims(D) RBRACKET
	    ASSIGN expr(E). {
	A = var_stmt(ps, &K, &N, T, D, 1, E);
}
stmt(A) ::= IDENT(K) LBRACE body(B) RBRACE(R). {
	A = NULL;
	if (word(ps, &K, "parallel", "a block of sessions that run at once "
		 "is 'parallel { ... }'")) {
		A = ast_new(ps->arena, AST_PARALLEL, loc_span(K.loc, R.loc),
			    &K);
		ast_take_list(A, B);
	}
}
/* session each "/job:worker" [as w] { ... } */
stmt(A) ::= SESSION(K) IDENT(E) string(S) LBRACE sbody(B) RBRACE(R). {
	A = NULL;
	if (word(ps, &E, "each", "expected a device string or 'each'")) {
		A = ast_new(ps->arena, AST_SESSION, loc_span(K.loc, R.loc),
			    &K);
		A->a = S;
		A->ival = 1;
		ast_take_list(A, B);
	}
}
stmt(A) ::= SESSION(K) IDENT(E) string(S) IDENT(X) IDENT(W) LBRACE sbody(B)
	    RBRACE(R). {
	A = NULL;
	if (word(ps, &E, "each", "expected a device string or 'each'") &&
	    word(ps, &X, "as", "expected 'as NAME' or '{'")) {
		A = ast_new(ps->arena, AST_SESSION, loc_span(K.loc, R.loc),
			    &W);
		A->a = S;
		A->ival = 1;
		A->name = tok_name(ps, &W);
		ast_take_list(A, B);
	}
}
stmt(A) ::= SESSION(K) LBRACE sbody(B) RBRACE(R). {
	A = ast_new(ps->arena, AST_SESSION, loc_span(K.loc, R.loc), &K);
	ast_take_list(A, B);
}
stmt(A) ::= SESSION(K) string(S) LBRACE sbody(B) RBRACE(R). {
	A = ast_new(ps->arena, AST_SESSION, loc_span(K.loc, R.loc), &K);
	A->a = S;
	ast_take_list(A, B);
}

/* cluster { job = ["addr", ...] ... } */
jbody(A) ::= bstart jitem(I). { A = add(ps, scratch(ps), I); }
jbody(A) ::= jbody(B) SEMI jitem(I). { A = add(ps, B, I); }
jbody(A) ::= jbody(B) error. { A = B; }

jitem(A) ::= . { A = NULL; }
jitem(A) ::= error. { A = NULL; }
jitem(A) ::= IDENT(N) ASSIGN LBRACKET strs(S) RBRACKET(R). {
	A = ast_new(ps->arena, AST_JOB, loc_span(N.loc, R.loc), &N);
	A->name = tok_name(ps, &N);
	ast_take_list(A, S);
}

strs(A) ::= . { A = scratch(ps); }
strs(A) ::= strlist(L). { A = L; }
strs(A) ::= strlist(L) COMMA. { A = L; }
strlist(A) ::= string(S). { A = add(ps, scratch(ps), S); }
strlist(A) ::= strlist(L) COMMA string(S). { A = add(ps, L, S); }

dims(A) ::= . { A = scratch(ps); }
dims(A) ::= dimlist(L). { A = L; }
dimlist(A) ::= dim(I). { A = add(ps, scratch(ps), I); }
dimlist(A) ::= dimlist(L) COMMA dim(I). { A = add(ps, L, I); }
dim(A) ::= int(I). { A = I; }
/* TF's None, or a name: reported here, and taken as `?' so that nothing
   else is said of it */
dim(A) ::= IDENT(T). {
	if (T.len == 4 && memcmp(T.p, "None", 4) == 0)
		diag_error(ps->d, T.loc, "write '?' for a dim of any size "
			   "('None' is TF's spelling)");
	else
		diag_error(ps->d, T.loc, "a dim is a number, or '?' for any "
			   "size, not '%.*s'", (int)T.len, T.p);
	A = ast_new(ps->arena, AST_INT, T.loc, &T);
	A->ival = -1;
}
/* An unknown dim (spec §4.3 "Inputs"): an AST_INT with ival -1, fixed by
   --shape or by the feed. */
dim(A) ::= QUESTION(T). {
	A = ast_new(ps->arena, AST_INT, T.loc, &T);
	A->ival = -1;
}

/* ------------------------------------------------------------- sessions */

sbody(A) ::= bstart sitem(I). { A = add(ps, scratch(ps), I); }
sbody(A) ::= sbody(B) SEMI sitem(I). { A = add(ps, B, I); }
sbody(A) ::= sbody(B) error. { A = B; }

sitem(A) ::= . { A = NULL; }
sitem(A) ::= error. { A = NULL; }
sitem(A) ::= PRINT(K) exprlist(L). {
	A = ast_new(ps->arena, AST_PRINT,
		    loc_span(K.loc, ast_extent(L->list[L->n - 1])), &K);
	ast_take_list(A, L);
}
sitem(A) ::= FOR(K) IDENT(N) IN expr(LO) DOTDOT expr(HI)
	     LBRACE sbody(B) RBRACE(R). {
	A = ast_new(ps->arena, AST_FOR, loc_span(K.loc, R.loc), &N);
	A->name = tok_name(ps, &N);
	A->a = LO;
	A->b = HI;
	ast_take_list(A, B);
}
/* for b in batches(...) { ... } (spec §8.6.1 "batches"): b is NULL */
sitem(A) ::= FOR(K) IDENT(N) IN expr(E) LBRACE sbody(B) RBRACE(R). {
	A = ast_new(ps->arena, AST_FOR, loc_span(K.loc, R.loc), &N);
	A->name = tok_name(ps, &N);
	A->a = E;
	ast_take_list(A, B);
}
sitem(A) ::= expr(E). {
	A = ast_new(ps->arena, AST_EXPRSTMT, ast_extent(E), &E->tok);
	A->a = E;
}
sitem(A) ::= IDENT(K) IDENT(N) ASSIGN expr(E). {
	A = NULL;
	if (word(ps, &K, "let", "a session names a value with 'let NAME = "
		 "value'")) {
		A = ast_new(ps->arena, AST_LET, loc_span(K.loc, ast_extent(E)),
			    &N);
		A->name = tok_name(ps, &N);
		A->a = E;
	}
}
sitem(A) ::= ifstmt(I). { A = I; }

/* if C { ... } [else { ... } | else if ...]: `else` on the line of the
   closing brace, as in Go */
ifstmt(A) ::= IF(K) expr(C) LBRACE sbody(B) RBRACE(R). {
	A = ast_new(ps->arena, AST_IF, loc_span(K.loc, R.loc), &K);
	A->a = C;
	ast_take_list(A, B);
}
ifstmt(A) ::= IF(K) expr(C) LBRACE sbody(B) RBRACE ELSE LBRACE sbody(E)
	      RBRACE(R). {
	A = ast_new(ps->arena, AST_IF, loc_span(K.loc, R.loc), &K);
	A->a = C;
	ast_take_list(A, B);
	A->b = E;
}
ifstmt(A) ::= IF(K) expr(C) LBRACE sbody(B) RBRACE ELSE ifstmt(I). {
	A = ast_new(ps->arena, AST_IF, loc_span(K.loc, I->loc), &K);
	A->a = C;
	ast_take_list(A, B);
	A->b = add(ps, scratch(ps), I);
}

exprlist(A) ::= expr(E). { A = add(ps, scratch(ps), E); }
exprlist(A) ::= exprlist(L) COMMA expr(E). { A = add(ps, L, E); }

/* ---------------------------------------------------------- expressions */

/* Comparisons bind loosest and do not chain (spec §3.2 "Expressions"):
 * `a < b < c` parses, as (a < b) < c, only to be reported. */
expr(A) ::= sum(S). { A = S; }
expr(A) ::= cmp(C). { A = C; }

%type cmpop {Token}
cmpop(A) ::= EQ(O). { A = O; }
cmpop(A) ::= NE(O). { A = O; }
cmpop(A) ::= LT(O). { A = O; }
cmpop(A) ::= LE(O). { A = O; }
cmpop(A) ::= GT(O). { A = O; }
cmpop(A) ::= GE(O). { A = O; }

cmp(A) ::= sum(L) cmpop(O) sum(R). { A = binary(ps, L, &O, R); }
cmp(A) ::= cmp(L) cmpop(O) sum(R). {
	diag_error(ps->d, O.loc, "comparisons cannot be chained: put the "
		   "first one in parentheses");
	A = binary(ps, L, &O, R);
}

sum(A) ::= sum(L) PLUS(O) term(R). { A = binary(ps, L, &O, R); }
sum(A) ::= sum(L) MINUS(O) term(R). { A = binary(ps, L, &O, R); }
sum(A) ::= term(T). { A = T; }

term(A) ::= term(L) STAR(O) unary(R). { A = binary(ps, L, &O, R); }
term(A) ::= term(L) SLASH(O) unary(R). { A = binary(ps, L, &O, R); }
term(A) ::= term(L) PERCENT(O) unary(R). { A = binary(ps, L, &O, R); }
term(A) ::= term(L) AT(O) unary(R). { A = binary(ps, L, &O, R); }
term(A) ::= unary(U). { A = U; }

unary(A) ::= MINUS(O) unary(E). {
	A = ast_new(ps->arena, AST_UNARY, loc_span(O.loc, ast_extent(E)), &O);
	A->op = TK_MINUS;
	A->a = E;
}
unary(A) ::= postfix(P). { A = P; }

postfix(A) ::= primary(P). { A = P; }
postfix(A) ::= IDENT(N) LPAREN args(G) RPAREN(R). {
	A = ast_new(ps->arena, AST_CALL, loc_span(N.loc, R.loc), &N);
	A->name = tok_name(ps, &N);
	A->a = name_node(ps, &N);
	A->b = G->b;
	ast_take_list(A, G);
}
postfix(A) ::= postfix(P) DOT IDENT(N). {
	A = ast_new(ps->arena, AST_FIELD, loc_span(ast_extent(P), N.loc), &N);
	A->a = P;
	A->name = tok_name(ps, &N);
}
/* x.f(...): no tfg construct, but TF's tf.reduce_sum(x) and sess.run(y)
   (compiler/habits.c says what to write instead) */
postfix(A) ::= postfix(P) DOT IDENT(N) LPAREN args(G) RPAREN(R). {
	A = ast_new(ps->arena, AST_METHOD, loc_span(ast_extent(P), R.loc), &N);
	A->a = P;
	A->name = tok_name(ps, &N);
	A->b = G->b;
	ast_take_list(A, G);
}
postfix(A) ::= postfix(P) LBRACKET(L) indices(I) RBRACKET(R). {
	A = ast_new(ps->arena, AST_INDEX, loc_span(ast_extent(P), R.loc),
		    &L);
	A->a = P;
	ast_take_list(A, I);
}

args(A) ::= . { A = scratch(ps); }
args(A) ::= arglist(L). { A = L; }
args(A) ::= arglist(L) COMMA. { A = L; }
args(A) ::= feed(F). { A = scratch(ps); A->b = F; }
args(A) ::= feed(F) COMMA. { A = scratch(ps); A->b = F; }
args(A) ::= arglist(L) COMMA feed(F). { A = L; A->b = F; }
args(A) ::= arglist(L) COMMA feed(F) COMMA. { A = L; A->b = F; }

arglist(A) ::= arg(X). { A = add(ps, scratch(ps), X); }
arglist(A) ::= arglist(L) COMMA arg(X). { A = add(ps, L, X); }

arg(A) ::= expr(E). { A = E; }
arg(A) ::= IDENT(N) ASSIGN expr(E). {
	A = ast_new(ps->arena, AST_KWARG, loc_span(N.loc, ast_extent(E)),
		    &N);
	A->name = tok_name(ps, &N);
	A->a = E;
}

feed(A) ::= FEED(K) LBRACE feeditems(I) RBRACE(R). {
	A = ast_new(ps->arena, AST_FEED, loc_span(K.loc, R.loc), &K);
	ast_take_list(A, I);
}
feeditems(A) ::= . { A = scratch(ps); }
feeditems(A) ::= fitemlist(L). { A = L; }
feeditems(A) ::= fitemlist(L) COMMA. { A = L; }
fitemlist(A) ::= fitem(X). { A = add(ps, scratch(ps), X); }
fitemlist(A) ::= fitemlist(L) COMMA fitem(X). { A = add(ps, L, X); }
fitem(A) ::= IDENT(N) COLON expr(E). {
	A = ast_new(ps->arena, AST_FEEDITEM,
		    loc_span(N.loc, ast_extent(E)), &N);
	A->name = tok_name(ps, &N);
	A->a = name_node(ps, &N);
	A->b = E;
}

indices(A) ::= index(X). { A = add(ps, scratch(ps), X); }
indices(A) ::= indices(L) COMMA index(X). { A = add(ps, L, X); }

index(A) ::= expr(E). { A = E; }
index(A) ::= COLON(C). { A = slice(ps, &C, NULL, NULL); }
index(A) ::= expr(L) COLON(C). { A = slice(ps, &C, L, NULL); }
index(A) ::= COLON(C) expr(H). { A = slice(ps, &C, NULL, H); }
index(A) ::= expr(L) COLON(C) expr(H). { A = slice(ps, &C, L, H); }

primary(A) ::= int(I). { A = I; }
primary(A) ::= FLOAT(T). {
	A = ast_new(ps->arena, AST_FLOAT, T.loc, &T);
	A->fval = lex_float_value(&T);
}
primary(A) ::= string(S). { A = S; }
primary(A) ::= TRUE(T). {
	A = ast_new(ps->arena, AST_BOOL, T.loc, &T);
	A->ival = 1;
}
primary(A) ::= FALSE(T). { A = ast_new(ps->arena, AST_BOOL, T.loc, &T); }
primary(A) ::= name(N). { A = N; }
primary(A) ::= LPAREN expr(E) RPAREN. { A = E; }
primary(A) ::= LBRACKET(L) elems(E) RBRACKET(R). {
	A = ast_new(ps->arena, AST_TENSOR, loc_span(L.loc, R.loc), &L);
	ast_take_list(A, E);
}

elems(A) ::= . { A = scratch(ps); }
elems(A) ::= elemlist(L). { A = L; }
elems(A) ::= elemlist(L) COMMA. { A = L; }
elemlist(A) ::= expr(E). { A = add(ps, scratch(ps), E); }
elemlist(A) ::= elemlist(L) COMMA expr(E). { A = add(ps, L, E); }

int(A) ::= INT(T). {
	A = ast_new(ps->arena, AST_INT, T.loc, &T);
	A->ival = lex_int_value(&T);
}
string(A) ::= STRING(T). {
	A = ast_new(ps->arena, AST_STRING, T.loc, &T);
	size_t len;
	A->str = lex_string_value(ps->arena, &T, &len);
	A->ival = (int64_t)len;
}
name(A) ::= IDENT(T). { A = name_node(ps, &T); }
/* A declaration's dtype: a name, or TF's `tf.float32', an AST_FIELD that
   the checker tells what to write instead (check_dtype_decl). */
tname(A) ::= name(T). { A = T; }
tname(A) ::= name(T) DOT IDENT(N). {
	A = ast_new(ps->arena, AST_FIELD, loc_span(T->loc, N.loc), &N);
	A->a = T;
	A->name = tok_name(ps, &N);
}
