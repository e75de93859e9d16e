/*
 * compiler/symtab.c: the checker's symbol tables (SymTab,
 * compiler/compiler_int.h: the graph's names, the pre-scan's
 * definitions, a session's lets and loop variables), and the nearest
 * name to one that is not there, for "did you mean".
 *
 * A table is a vector of symbols in definition order whose hash chains
 * run newest first, so a lookup finds the latest definition and leaving
 * a scope (sym_truncate) unlinks the newest entries.
 */
#include <string.h>

#include "compiler/compiler_int.h"

static unsigned
sym_hash(const char *name)
{
	unsigned h = 2166136261u; /* FNV-1a */

	while (*name)
		h = (h ^ (unsigned char)*name++) * 16777619u;
	return h;
}

/* The latest definition of name in t, or NULL. */
Sym *
check_find(SymTab *t, const char *name)
{
	if (t->nb == 0)
		return NULL;
	for (int i = t->head[sym_hash(name) & (unsigned)(t->nb - 1)]; i >= 0;
	     i = t->next[i]) {
		Sym *s = t->v.v[i];
		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

static void
sym_link(SymTab *t, int i)
{
	unsigned b = sym_hash(((Sym *)t->v.v[i])->name) &
		     (unsigned)(t->nb - 1);

	t->next[i] = t->head[b];
	t->head[b] = i;
}

void
sym_push(Arena *a, SymTab *t, Sym *s)
{
	vec_push(a, &t->v, s);
	if (t->v.n > t->cap) {
		int *next = arena_alloc(a, 2 * (size_t)t->v.n * sizeof *next);
		if (t->cap)
			memcpy(next, t->next, (size_t)t->cap * sizeof *next);
		t->next = next;
		t->cap = 2 * t->v.n;
	}
	if (t->v.n > t->nb) { /* rechain with twice the entries' chains */
		t->nb = t->nb ? 4 * t->nb : 64;
		t->head = arena_alloc(a, (size_t)t->nb * sizeof *t->head);
		memset(t->head, -1, (size_t)t->nb * sizeof *t->head);
		for (int i = 0; i < t->v.n - 1; i++)
			sym_link(t, i);
	}
	sym_link(t, t->v.n - 1);
}

/* Keeps the first n entries of t: each dropped one is the newest of its
 * chain when its turn comes. */
void
sym_truncate(SymTab *t, int n)
{
	while (t->v.n > n) {
		int i = --t->v.n;
		t->head[sym_hash(((Sym *)t->v.v[i])->name) &
			(unsigned)(t->nb - 1)] = t->next[i];
	}
}

/* Levenshtein distance of a and b, or a large number for names over 63
 * bytes. */
static int
edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), d[64][64];

	if (la > 63 || lb > 63)
		return 1 << 20;
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

/* The nearest of cand[0..n) to name, when it is near enough to be what
 * was meant: at most a third of the name's letters differ (so names of
 * one or two letters get no suggestion: any other is as near).  The
 * first of equal distance wins. */
const char *
check_nearest(const char *name, const char *const *cand, int n)
{
	int best = (int)strlen(name) / 3 + 1;
	const char *w = NULL;

	for (int i = 0; i < n && best > 1; i++) {
		int dist = cand[i] ? edit_distance(name, cand[i]) : best;
		if (dist > 0 && dist < best)
			best = dist, w = cand[i];
	}
	return w;
}

/* "; did you mean 'x'?" for an unknown name among the symbols of v, or "". */
