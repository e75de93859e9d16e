/*
 * lang/arena.c: the compilation's arena and source files.
 *
 * An Arena is a list of chunks handed out by bumping a pointer; nothing in
 * it is freed on its own, arena_free() releases every chunk at once.
 * Every allocation is already zeroed.  A request larger than a quarter of
 * the usual chunk gets a chunk of its own, so big tables do not waste the
 * rest of a half-used chunk.
 *
 * Chunks grow: each new one is twice the last, from 64 KiB to 16 MiB, so
 * a small program costs 64 KiB and a huge one a few hundred chunks.  A
 * chunk of 1 MiB or more is mapped rather than calloc'ed: fresh pages are
 * zero already (calloc of a heap chunk clears it again), and transparent
 * huge pages, where the kernel offers them on request, take one fault per
 * 2 MiB.  Checking a 590,000-statement program spent a third of its time
 * clearing and faulting in 4 KiB pages (issue 25).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lang/lang_int.h"

/* Under AddressSanitizer every chunk comes from calloc: LeakSanitizer
 * looks for pointers in the heap, not in mappings of our own, so a chunk
 * named only from a mapped one would look leaked. */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_NO_MAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_NO_MAP 1
#endif
#endif

enum {
	CHUNK_SIZE = 64 * 1024,  /* the first chunk's data */
	CHUNK_MAX = 16 << 20,    /* the largest a chunk grows to */
	ALIGN = 16
};

#ifdef ARENA_NO_MAP
#define MAP_MIN SIZE_MAX
#else
#define MAP_MIN ((size_t)1 << 20) /* chunks this large are mapped */
#endif

typedef struct Chunk Chunk;
struct Chunk {
	Chunk *next;
	size_t cap;   /* bytes in data */
	size_t used;  /* bytes handed out */
	size_t mapped; /* 0: calloc'ed; else the mapping's bytes */
	_Alignas(16) unsigned char data[];
};

struct Arena {
	Chunk *head;  /* the chunk being filled; older ones follow */
	size_t grow;  /* the next chunk's data; 0: CHUNK_SIZE */
};

static void
arena_oom(void)
{
	fputs("tfgc: error: out of memory\n", stderr);
	exit(1);
}

Arena *
arena_new(void)
{
	Arena *a = calloc(1, sizeof *a);
	if (!a)
		arena_oom();
	return a;
}

void
arena_free(Arena *a)
{
	if (!a)
		return;
	for (Chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		if (c->mapped)
			munmap(c, c->mapped);
		else
			free(c);
	}
	free(a);
}

static Chunk *
chunk_new(size_t cap)
{
	if (cap > SIZE_MAX - sizeof(Chunk))
		arena_oom();
	size_t n = sizeof(Chunk) + cap;
	Chunk *c;
	if (n >= MAP_MIN) {
		void *m = mmap(NULL, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			arena_oom();
#ifdef MADV_HUGEPAGE
		(void)madvise(m, n, MADV_HUGEPAGE); /* a hint: may fail */
#endif
		c = m;
		c->mapped = n;
	} else if ((c = calloc(1, n)) == NULL)
		arena_oom();
	c->cap = cap;
	return c;
}

void *
arena_alloc(Arena *a, size_t n)
{
	if (n > SIZE_MAX - ALIGN)
		arena_oom();
	n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (n == 0)
		n = ALIGN;
	Chunk *c = a->head;
	if (c && c->cap - c->used >= n) {
		void *p = c->data + c->used;
		c->used += n;
		return p;
	}
	if (n > CHUNK_SIZE / 4) {
		/* Its own chunk, behind the current one. */
		Chunk *big = chunk_new(n);
		big->used = n;
		if (c) {
			big->next = c->next;
			c->next = big;
		} else
			a->head = big;
		return big->data;
	}
	if (a->grow == 0)
		a->grow = CHUNK_SIZE;
	c = chunk_new(a->grow);
	if (a->grow < CHUNK_MAX)
		a->grow *= 2;
	c->next = a->head;
	a->head = c;
	c->used = n;
	return c->data;
}

char *
arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *
arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return arena_strdup(a, "");
	char *p = arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
vec_push(Arena *a, PtrVec *vec, void *p)
{
	if (vec->n == vec->cap) {
		int cap = vec->cap ? vec->cap * 2 : 8;
		void **v = arena_alloc(a, (size_t)cap * sizeof *v);
		if (vec->n)
			memcpy(v, vec->v, (size_t)vec->n * sizeof *v);
		vec->v = v;
		vec->cap = cap;
	}
	vec->v[vec->n++] = p;
}

SrcFile *
src_read(Arena *a, const char *path, int *err)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		*err = errno;
		return NULL;
	}
	/* Read in steps: the file need not be a regular one. */
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		arena_oom();
	for (;;) {
		if (cap - len < 2) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				arena_oom();
			buf = nb;
		}
		size_t got = fread(buf + len, 1, cap - len - 1, fp);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(fp)) {
		*err = errno ? errno : EIO;
		free(buf);
		fclose(fp);
		return NULL;
	}
	fclose(fp);
	SrcFile *f = arena_alloc(a, sizeof *f);
	f->path = arena_strdup(a, path);
	f->text = arena_strndup(a, buf, len);
	f->len = len;
	free(buf);
	return f;
}

SrcFile *
src_from_string(Arena *a, const char *path, const char *text)
{
	SrcFile *f = arena_alloc(a, sizeof *f);
	f->path = arena_strdup(a, path);
	f->len = strlen(text);
	f->text = arena_strndup(a, text, f->len);
	return f;
}
