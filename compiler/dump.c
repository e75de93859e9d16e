/*
 * compiler/dump.c: the readable dumps of placement and partition that
 * tfgc emit prints and the golden tests check.  One node per line:
 *
 *     y2 = sub(x, _1) : i32[]  @ /job:local/task:1/cpu:0
 */
#include <inttypes.h>
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
		    matmul its epilogue after it */
		fprintf(out, "%s(", op_info[n->op].name);
		if (n->fuse && n->op != OP_matmul)
			fuse_expr(out, n);
		else
			for (int i = 0; i < (n->fuse ? 2 : n->nin); i++)
				fprintf(out, "%s%s", i ? ", " : "",
					ir_node_label(n->in[i]));
		fputc(')', out);
		if (n->fuse && n->op == OP_matmul) {
			fputs(" then ", out);
			fuse_expr(out, n);
		}
	}
	ir_attr_dump(out, n);
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
		node_line(out, p->arena, p->g.nodes.v[i]);
		fputc('\n', out);
	}
}

void
dump_placement_log(FILE *out, const Program *p)
{
	for (int i = 0; i < p->placement_log.n; i++)
		fprintf(out, "%s\n", (const char *)p->placement_log.v[i]);
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
	} else if (n->op == OP_recv) {
		fprintf(out, "%s = recv from %s : %s", ir_node_label(n),
			p->tasks[n->peer].name,
			ir_type_str(p->arena, n->dtype, &n->shape));
	} else if (n->op == OP_input) {
		fprintf(out, "%s = feed from %s : %s", ir_node_label(n),
			p->tasks[n->peer].name,
			ir_type_str(p->arena, n->dtype, &n->shape));
	} else {
		node_line(out, p->arena, n);
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
