/*
 * compiler/dump.c: the readable dumps of placement and partition that
 * tfgc emit prints and the golden tests check.  One node per line:
 *
 *     y2 = sub(x, _1) : i32[]  @ /job:local/task:1/cpu:0
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"

/* A fused program: fused{ t1 = mul(a, x); t2 = add(t1, b); sigmoid(t2) },
 * operands named by the members' and inputs' labels, the anchor (a
 * matmul epilogue's product element) by @. */
static void
fuse_expr(FILE *out, const IrNode *n)
{
	const IrFuse *f = n->fuse;

	fputs("fused{ ", out);
	for (int m = 0; m < f->n; m++) {
		const IrFuseOp *o = &f->ops[m];
		if (m + 1 < f->n)
			fprintf(out, "%s = ", o->name);
		fprintf(out, "%s(", op_info[o->op].name);
		for (int k = 0; k < o->nin; k++) {
			int32_t a = o->arg[k];
			fprintf(out, "%s%s", k ? ", " : "",
				a == IR_FUSE_ANCHOR ? "@"
				: a >= 0 ? f->ops[a].name
				: ir_node_label(n->in[-1 - a]));
		}
		fputs(m + 1 < f->n ? "); " : ") }", out);
	}
}

static void
node_line(FILE *out, Arena *a, const IrNode *n)
{
	fprintf(out, "%s = ", ir_node_label(n));
	switch (n->op) {
	case OP_const:
		fprintf(out, "const %s", ir_const_str(a, n));
		break;
	case OP_input:
		fputs("input", out);
		break;
	case OP_fused:
		fuse_expr(out, n);
		break;
	default: /* a fused reduction prints its program as its input, a
		    matmul, conv2d or pool its epilogue after it */
		fprintf(out, "%s(", op_info[n->op].name);
		if (n->fuse && !ir_takes_epilogue(n->op))
			fuse_expr(out, n);
		else
			for (int i = 0; i < (n->fuse ? op_info[n->op].nin
						      : n->nin); i++)
				fprintf(out, "%s%s", i ? ", " : "",
					ir_node_label(n->in[i]));
		fputc(')', out);
		if (n->fuse && ir_takes_epilogue(n->op)) {
			fputs(" then ", out);
			fuse_expr(out, n);
		}
	}
	ir_attr_dump(out, n);
	if (n->count) /* spec/design.md "Counted edges" */
		fprintf(out, " counted=%s", ir_node_label(n->count));
	fprintf(out, " : %s", ir_type_str(a, n->dtype, &n->shape));
}

void
dump_placed(FILE *out, const Program *p)
{
	for (int i = 0; i < p->g.nodes.n; i++) {
		const IrNode *n = p->g.nodes.v[i];
		node_line(out, p->arena, n);
		fprintf(out, "  @ %s\n", dev_str(p->arena, n->dev));
	}
}

void
dump_graph(FILE *out, const Program *p)
{
	for (int i = 0; i < p->g.nodes.n; i++) {
		const IrNode *n = p->g.nodes.v[i];
		node_line(out, p->arena, n);
		if (n->note)
			fprintf(out, "  # %s", n->note);
		fputc('\n', out);
	}
}

void
dump_placement_log(FILE *out, const Program *p)
{
	for (int i = 0; i < p->nplaced; i++) {
		const IrPlaced *x = &p->placed[i];
		if (x->name)
			fprintf(out, "%s", x->name);
		else
			fprintf(out, "_%d", x->id);
		fprintf(out, ": (%s) %s  [%s]\n", op_info[x->op].name,
			dev_str(p->arena, x->dev), x->why);
	}
}

static void
part_line(FILE *out, const Program *p, const IrNode *n)
{
	const RtEdge *e = NULL;

	if (n->op == OP_send || n->op == OP_recv || n->op == OP_input)
		e = p->edges.v[n->key];
	fputs("    ", out);
	if (n->op == OP_send) {
		fprintf(out, "send %s to %s", ir_node_label(n->in[0]),
			p->tasks[n->peer].name);
		if (n->nin > 1) /* spec/design.md "Counted edges" */
			fprintf(out, ", the rows %s counts",
				ir_node_label(n->in[1]));
	} else if (n->op == OP_recv) {
		fprintf(out, "%s = recv from %s : %s%s", ir_node_label(n),
			p->tasks[n->peer].name,
			ir_type_str(p->arena, n->dtype, &n->shape),
			e && e->counted ? " (counted)" : "");
	} else if (n->op == OP_input) {
		fprintf(out, "%s = feed from %s : %s", ir_node_label(n),
			p->tasks[n->peer].name,
			ir_type_str(p->arena, n->dtype, &n->shape));
	} else {
		node_line(out, p->arena, n);
		if (n->dev.kind == DEV_GPU)
			fprintf(out, "  @gpu:%d", n->dev.index);
		else if (n->op == OP_copy)
			fputs("  @cpu:0", out);
	}
	if (e)
		fprintf(out, "  key %u '%s'", e->key, e->name);
	fputc('\n', out);
}

void
dump_partition(FILE *out, const Program *p)
{
	for (int s = 0; s < p->nsig; s++) {
		const IrSig *g = &p->sigs[s];
		fprintf(out, "sig %d: run(", s);
		for (int i = 0; i < g->nfetch; i++)
			fprintf(out, "%s%s", i ? ", " : "",
				ir_node_label(g->fetch[i]));
		if (g->nfeed) {
			fputs(", feed {", out);
			for (int i = 0; i < g->nfeed; i++)
				fprintf(out, "%s%s", i ? ", " : " ",
					g->feed[i]->name);
			fputs(" }", out);
		}
		fprintf(out, ") from %s  (%u:%u)\n", p->tasks[g->client].name,
			g->loc.line, g->loc.col);
		for (int t = 0; t < p->ntask; t++) {
			const IrPart *pt = &g->parts[t];
			if (pt->n == 0)
				continue;
			fprintf(out, "  %s:\n", p->tasks[t].name);
			for (int i = 0; i < pt->n; i++)
				part_line(out, p, pt->nodes[i]);
		}
	}
}

/* s as the inside of a Graphviz string: quotes and backslashes escaped,
 * newlines as \n. */
static void
dot_str(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

/* "4 B", "3.1 KiB", "64 MiB". */
static const char *
bytes_str(char *buf, size_t n, size_t b)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4)
		v /= 1024, u++;
	if (u == 0 || v == (double)(int64_t)v)
		snprintf(buf, n, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, n, "%.1f %s", v, unit[u]);
	return buf;
}

void
dump_dot(FILE *out, const Program *p)
{
	fputs("digraph tfg {\n"
	      "  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
	      "  edge [fontname=\"monospace\", fontsize=9];\n", out);
	for (int t = 0; t < p->ntask; t++) {
		fprintf(out, "  subgraph cluster_%d {\n    label=\"", t);
		dot_str(out, p->tasks[t].name);
		fputs("\";\n", out);
		for (int i = 0; i < p->g.nodes.n; i++) {
			const IrNode *n = p->g.nodes.v[i];
			char *text = NULL;
			size_t len = 0;
			FILE *m;

			if (n->task != t || !(m = open_memstream(&text, &len)))
				continue;
			/* the node's dump line, which names its operands
			   too: the edges draw them as well */
			node_line(m, p->arena, n);
			fclose(m);
			fprintf(out, "    n%d [label=\"", n->id);
			dot_str(out, text);
			fputs("\"];\n", out);
			free(text);
		}
		fputs("  }\n", out);
	}
	for (int i = 0; i < p->g.nodes.n; i++) {
		const IrNode *n = p->g.nodes.v[i];

		for (int k = 0; k < n->nin; k++) {
			const IrNode *x = n->in[k];
			char b[32];

			if (x->task == n->task)
				fprintf(out, "  n%d -> n%d;\n", x->id, n->id);
			else /* sent between tasks: its bytes each run */
				fprintf(out, "  n%d -> n%d [label=\"%s\", "
					"color=red, penwidth=2];\n", x->id,
					n->id, bytes_str(b, sizeof b,
							 ir_nbytes(x)));
		}
	}
	fputs("}\n", out);
}
