/*
 * compiler/attr.c: the static arguments of IR ops, besides their
 * operands (stdlib/ops.def's attrs column, A_*), walked in this one
 * place.  ir_attr_write puts the bytes of a node's attributes, those its
 * op declares and no others, through a callback; CSE's equality and hash
 * (compiler/pass_cse.c) and the kernel key of shared loop nests
 * (codegen/cpu_nest.c) are built on it, and ir_attr_dump prints them for
 * the dumps.  A new attribute is a bit in ops.def, a field in IrNode and
 * a case in each of the two functions here.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"

static void
put_i64(IrPut put, void *ctx, int64_t v)
{
	put(ctx, &v, sizeof v);
}

static void
put_shape(IrPut put, void *ctx, const TfgShape *s)
{
	put_i64(put, ctx, s->rank);
	for (int i = 0; i < s->rank; i++)
		put_i64(put, ctx, s->dims[i]);
}

void
ir_attr_write(const IrNode *n, IrPut put, void *ctx)
{
	int a = op_info[n->op].attrs;

	if (a & A_DATA) {
		put_i64(put, ctx, n->data != NULL);
		if (n->data) {
			put_i64(put, ctx, (int64_t)ir_nbytes(n));
			put(ctx, n->data, ir_nbytes(n));
		}
	}
	if (a & A_SLICE) {
		int r = n->nin ? n->in[0]->shape.rank : 0;

		for (int i = 0; i < r; i++) {
			put_i64(put, ctx, n->ax->begin[i]);
			put_i64(put, ctx, n->ax->size[i]);
		}
		put_i64(put, ctx, n->ax->squeeze);
	}
	if (a & A_AXES) {
		put_i64(put, ctx, n->axes);
		put_i64(put, ctx, n->keepdims);
	}
	if (a & A_PERM)
		for (int i = 0; i < n->shape.rank; i++)
			put_i64(put, ctx, n->ax->perm[i]);
	if (a & A_AXIS)
		put_i64(put, ctx, n->axis);
	if (a & A_DROP)
		put_i64(put, ctx, n->drop);
	if (a & A_SHARD) {
		put_i64(put, ctx, n->part ? n->part->k : -1);
		put_i64(put, ctx, n->part ? n->part->n : -1);
		put_i64(put, ctx, n->part ? n->part->mod : -1);
		put_i64(put, ctx, n->part ? n->part->rows : -1);
	}
	if (a & A_MAKE) {
		const IrMake *m = n->make;

		put_i64(put, ctx, m != NULL);
		if (m) {
			put(ctx, m->f, sizeof m->f);
			put(ctx, m->i, sizeof m->i);
			put_i64(put, ctx, m->axis);
			put_i64(put, ctx, (int64_t)m->seed);
			put_i64(put, ctx, m->stream);
			put_i64(put, ctx, m->first);
		}
	}
	if (a & A_VAR)
		put_i64(put, ctx, n->var ? n->var->index : -1);
	if (a & A_TRANS)
		put_i64(put, ctx, n->trans);
	if (a & A_CONV) {
		put_i64(put, ctx, n->conv != NULL);
		if (n->conv)
			put(ctx, n->conv, sizeof *n->conv);
	}
	if (a & A_OPT) {
		put_i64(put, ctx, n->opt ? (int64_t)n->opt->kind : -1);
		put_i64(put, ctx, n->opt ? n->opt->sync : -1);
		put_i64(put, ctx, n->opt ? n->opt->aggregate : -1);
		put_i64(put, ctx, n->opt && n->opt->nslot ?
				  n->opt->slot[0]->index : -1);
	}
	if (a & A_COMM) {
		put_i64(put, ctx, n->key);
		put_i64(put, ctx, n->peer);
	}
	if (a & A_FUSE) {
		const IrFuse *f = n->fuse;

		put_i64(put, ctx, f ? f->n : -1);
		if (f) {
			put_shape(put, ctx, &f->shape);
			for (int i = 0; i < f->n; i++) {
				const IrFuseOp *o = &f->ops[i];

				put_i64(put, ctx, o->op);
				put_i64(put, ctx, o->dtype);
				put_shape(put, ctx, &o->shape);
				put_i64(put, ctx, o->nin);
				for (int j = 0; j < o->nin; j++) {
					put_i64(put, ctx, o->arg[j]);
					put_i64(put, ctx, o->in_dt[j]);
				}
			}
		}
	}
}

static void
put_hash(void *ctx, const void *p, size_t n)
{
	uint64_t *h = ctx;

	*h = ir_fnv(*h, p, n);
}

uint64_t
ir_attr_hash(uint64_t h, const IrNode *n)
{
	ir_attr_write(n, put_hash, &h);
	return h;
}

/* ir_attr_eq: a's bytes, then b's compared with them as they come. */
typedef struct Bytes {
	unsigned char *p;
	size_t n, cap, off;
	int differ, nomem;
} Bytes;

static void
put_save(void *ctx, const void *p, size_t n)
{
	Bytes *b = ctx;

	if (b->nomem)
		return;
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2 + 256;
		unsigned char *q = realloc(b->p, cap);

		if (q == NULL) {
			b->nomem = 1;
			return;
		}
		b->p = q, b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void
put_cmp(void *ctx, const void *p, size_t n)
{
	Bytes *b = ctx;

	if (b->differ || b->off + n > b->n || memcmp(b->p + b->off, p, n))
		b->differ = 1;
	else
		b->off += n;
}

int
ir_attr_eq(const IrNode *a, const IrNode *b)
{
	Bytes s = {0};
	int eq;

	if (a->op != b->op)
		return 0;
	ir_attr_write(a, put_save, &s);
	if (s.nomem) {
		free(s.p);
		return 0; /* not merged: never wrong */
	}
	ir_attr_write(b, put_cmp, &s);
	eq = !s.differ && s.off == s.n;
	free(s.p);
	return eq;
}

/* ------------------------------------------------------------ dumps */

/* A maker's number k, named, as its dtype has it. */
static void
make_num(FILE *out, const IrNode *n, const char *name, int k)
{
	if (dtype_is_float(n->dtype))
		fprintf(out, " %s=%.9g", name, n->make->f[k]);
	else
		fprintf(out, " %s=%" PRId64, name, n->make->i[k]);
}

static void
dump_make(FILE *out, const IrNode *n)
{
	switch (n->op) {
	case OP_fill:
		if (n->nin == 0)
			make_num(out, n, "value", 0);
		break;
	case OP_range:
		make_num(out, n, "start", 0);
		make_num(out, n, "delta", 1);
		break;
	case OP_one_hot:
		make_num(out, n, "on", 0);
		make_num(out, n, "off", 1);
		fprintf(out, " axis=%d", n->make->axis);
		break;
	case OP_random_uniform:
	case OP_random_normal:
		make_num(out, n, n->op == OP_random_uniform ? "min" : "mean", 0);
		make_num(out, n, n->op == OP_random_uniform ? "max" : "stddev",
			 1);
		fprintf(out, " seed=%" PRIu64, n->make->seed);
		if (n->make->stream)
			fprintf(out, " stream=%" PRIu32, n->make->stream);
		if (n->make->first)
			fprintf(out, " first=%" PRId64, n->make->first);
		break;
	default: /* zeros, ones and the likes: their dtype and shape */
		break;
	}
}

void
ir_attr_dump(FILE *out, const IrNode *n)
{
	int a = op_info[n->op].attrs;

	if (a & A_SLICE) {
		fputs(" [", out);
		for (int i = 0; i < n->in[0]->shape.rank; i++) {
			if (i)
				fputs(", ", out);
			if (n->ax->squeeze & (1u << i))
				fprintf(out, "%" PRId64, n->ax->begin[i]);
			else
				fprintf(out, "%" PRId64 ":%" PRId64,
					n->ax->begin[i], n->ax->begin[i] + n->ax->size[i]);
		}
		fputc(']', out);
	}
	if (a & A_AXES) {
		int first = 1;

		fputs(" axis=[", out);
		for (int i = 0; i < 32; i++)
			if (n->axes & (1u << i)) {
				fprintf(out, "%s%d", first ? "" : ", ", i);
				first = 0;
			}
		fputc(']', out);
		if (n->keepdims)
			fputs(" keepdims", out);
	}
	if (a & A_PERM) {
		fputs(" perm=[", out);
		for (int i = 0; i < n->shape.rank; i++)
			fprintf(out, "%s%d", i ? ", " : "", n->ax->perm[i]);
		fputc(']', out);
	}
	if (a & A_AXIS)
		fprintf(out, " axis=%d", n->axis);
	if ((a & A_DROP) && n->drop)
		fputs(" drop", out);
	if ((a & A_SHARD) && n->part)
		fprintf(out, " shard=%d/%d rows=%" PRId64 "%s", n->part->k,
			n->part->n, n->part->rows, n->part->mod ? " mod" : "");
	if ((a & A_MAKE) && n->make)
		dump_make(out, n);
	if ((a & A_VAR) && n->var)
		fprintf(out, " var=%s", n->var->name);
	if ((a & A_TRANS) && n->trans)
		fprintf(out, " transposed=%s%s", n->trans & 1 ? "a" : "",
			n->trans & 2 ? "b" : "");
	if ((a & A_CONV) && n->conv) {
		const IrConv *v = n->conv;

		fprintf(out, " strides=[%" PRId64 ", %" PRId64 "]",
			v->stride[0], v->stride[1]);
		if (v->dil[0] != 1 || v->dil[1] != 1)
			fprintf(out, " dilations=[%" PRId64 ", %" PRId64 "]",
				v->dil[0], v->dil[1]);
		fprintf(out, " pad=[%" PRId64 ", %" PRId64 ", %" PRId64 ", %"
			PRId64 "]", v->pad[0], v->pad[1], v->pad[2],
			v->pad[3]);
		if (v->depthwise)
			fputs(" depthwise", out);
		if (v->ksize[0])
			fprintf(out, " ksize=[%" PRId64 ", %" PRId64 "]",
				v->ksize[0], v->ksize[1]);
	}
	if ((a & A_OPT) && n->opt) {
		static const char *const kind[IR_OPT__COUNT] = {
			"sgd", "momentum", "adam", "adagrad", "ftrl"};
		fprintf(out, " %s", kind[n->opt->kind]);
		if (n->opt->sync)
			fprintf(out, " sync=%d", n->opt->sync);
		if (n->opt->sync && n->opt->aggregate != n->opt->sync)
			fprintf(out, " aggregate=%d", n->opt->aggregate);
		for (int k = 0; k < n->opt->nslot; k++)
			fprintf(out, "%s%s", k ? ", " : " slots=",
				n->opt->slot[k]->name);
	}
	/* A_DATA, A_FUSE: the value and the expression are the node's own
	   text (compiler/dump.c); A_COMM: the partition dump names keys */
}
