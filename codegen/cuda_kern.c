/*
 * codegen/cuda_kern.c: TEMPORARY stand-in, only what codegen/cuda_mm.c
 * and its test need (branch gpumm).  The real file (prelude,
 * elementwise ops, fused programs, makers, ...) replaces it at the
 * merge; nothing here is meant to survive it.  cu_fuse_code knows only
 * add, sub, mul, maximum, relu and sigmoid, of one float dtype or
 * integer, enough for the epilogue tests.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"

static void
grow(CuStr *s, size_t more)
{
	if (s->n + more + 1 <= s->cap)
		return;
	s->cap = s->cap ? s->cap * 2 : 256;
	while (s->cap < s->n + more + 1)
		s->cap *= 2;
	s->p = realloc(s->p, s->cap);
	if (!s->p) {
		fprintf(stderr, "tfgc: out of memory\n");
		exit(1);
	}
}

void
cu_printf(CuStr *s, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	grow(s, (size_t)len);
	va_start(ap, fmt);
	vsnprintf(s->p + s->n, (size_t)len + 1, fmt, ap);
	va_end(ap);
	s->n += (size_t)len;
}

void
cu_puts(CuStr *s, const char *text)
{
	size_t len = strlen(text);

	grow(s, len);
	memcpy(s->p + s->n, text, len + 1);
	s->n += len;
}

void
cu_str_free(CuStr *s)
{
	free(s->p);
	memset(s, 0, sizeof *s);
}

void
cu_gen_init(CuGen *g, int tf32)
{
	memset(g, 0, sizeof *g);
	g->tf32 = tf32;
	cu_puts(&g->src, "/* tfg: temporary prelude */\n");
}

void
cu_gen_free(CuGen *g)
{
	for (int k = 0; k < g->nkern; k++) {
		free(g->names[k]);
		free(g->texts[k]);
	}
	free(g->names);
	free(g->texts);
	cu_str_free(&g->src);
	memset(g, 0, sizeof *g);
}

int
cu_kernel(CuGen *g, const char *text)
{
	char name[32];
	int k;

	for (k = 0; k < g->nkern; k++)
		if (strcmp(g->texts[k], text) == 0)
			return k;
	if (g->nkern == g->capkern) {
		g->capkern = g->capkern ? 2 * g->capkern : 8;
		g->names = realloc(g->names, g->capkern * sizeof *g->names);
		g->texts = realloc(g->texts, g->capkern * sizeof *g->texts);
	}
	snprintf(name, sizeof name, "tfg_c%d", k);
	g->names[k] = strdup(name);
	g->texts[k] = strdup(text);
	g->nkern++;
	for (const char *p = text; *p; p++) {
		if (p[0] == '@' && p[1] == 'K') {
			cu_puts(&g->src, name);
			p++;
		} else {
			grow(&g->src, 1);
			g->src.p[g->src.n++] = *p;
			g->src.p[g->src.n] = 0;
		}
	}
	cu_puts(&g->src, "\n");
	return k;
}

const char *
cu_ctype(TfgDtype t)
{
	switch (t) {
	case TFG_BOOL: return "unsigned char";
	case TFG_I32: return "int";
	case TFG_I64: return "long long";
	case TFG_F32: return "float";
	case TFG_F64: return "double";
	default: return "void";
	}
}

void
cu_fuse_code(CuStr *s, const IrFuse *f, const char *out,
	     const char *const *in, const char *anchor, const char *pfx)
{
	for (int m = 0; m < f->n; m++) {
		const IrFuseOp *o = &f->ops[m];
		const char *ct = cu_ctype(o->dtype);
		char v[3][64];

		for (int k = 0; k < o->nin; k++) {
			int32_t a = o->arg[k];
			if (a == IR_FUSE_ANCHOR)
				snprintf(v[k], sizeof v[k], "(%s)", anchor);
			else if (a >= 0)
				snprintf(v[k], sizeof v[k], "%s%d", pfx, a);
			else
				snprintf(v[k], sizeof v[k], "(%s)",
					 in[-1 - a]);
		}
		cu_printf(s, "%s %s%d = ", ct, pfx, m);
		switch (o->op) {
		case OP_add: cu_printf(s, "%s + %s;\n", v[0], v[1]); break;
		case OP_sub: cu_printf(s, "%s - %s;\n", v[0], v[1]); break;
		case OP_mul: cu_printf(s, "%s * %s;\n", v[0], v[1]); break;
		case OP_maximum:
			cu_printf(s, "%s > %s ? %s : %s;\n", v[0], v[1], v[0],
				  v[1]);
			break;
		case OP_relu:
			cu_printf(s, "%s > (%s)0 ? %s : (%s)0;\n", v[0], ct,
				  v[0], ct);
			break;
		case OP_sigmoid:
			cu_printf(s, "(%s)1 / ((%s)1 + exp(-%s));\n", ct, ct,
				  v[0]);
			break;
		default:
			cu_printf(s, "0; /* %s: not in the stand-in */\n",
				  op_info[o->op].name);
		}
	}
	cu_printf(s, "%s = %s%d;\n", out, pfx, f->n - 1);
}
