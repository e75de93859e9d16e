/*
 * compiler/ir.c: the op table and IR nodes.
 *
 * op_info[] is generated from stdlib/ops.def, the one list of ops.  Nodes
 * live in the program's arena; a node's id is its index in IrGraph.nodes,
 * and partition clones keep their origin's id so that dumps and codegen
 * can name them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler_int.h"

const OpInfo op_info[OP__COUNT] = {
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	[OP_##name] = {#name, nin, nout, OP_FLAGS(flags, grad, gpu), attrs,    \
		       types, cost, fold},
#include "stdlib/ops.def"
};

IrNode *
ir_node_new(Program *p, OpKind op, int nin, SrcLoc loc)
{
	IrNode *n = arena_alloc(p->arena, sizeof *n);

	n->id = p->g.nodes.n;
	n->op = op;
	n->nin = nin;
	n->in = nin ? arena_alloc(p->arena, nin * sizeof *n->in) : NULL;
	n->loc = loc;
	n->req = DEVICE_UNSET;
	n->dev = DEVICE_UNSET;
	n->task = -1;
	vec_push(p->arena, &p->g.nodes, n);
	return n;
}

IrNode *
ir_clone(Arena *a, const IrNode *n)
{
	IrNode *c = arena_alloc(a, sizeof *c);

	*c = *n;
	if (n->nin) {
		c->in = arena_alloc(a, n->nin * sizeof *c->in);
		memcpy(c->in, n->in, n->nin * sizeof *c->in);
	}
	c->origin = n->origin ? n->origin : (IrNode *)n;
	return c;
}

char *
ir_reach(Program *p, IrNode *const *a, int na, IrNode *const *b, int nb)
{
	PtrVec roots = {0};

	for (int i = 0; i < na; i++)
		vec_push(p->arena, &roots, a[i]);
	for (int i = 0; i < nb; i++)
		vec_push(p->arena, &roots, b[i]);
	return ir_reach_vec(p, &roots);
}

char *
ir_reach_vec(Program *p, PtrVec *roots)
{
	char *seen = arena_alloc(p->arena, p->g.nodes.n + 1);
	PtrVec stack = *roots; /* used up */

	while (stack.n > 0) {
		IrNode *x = stack.v[--stack.n];

		if (seen[x->id])
			continue;
		seen[x->id] = 1;
		for (int k = 0; k < x->nin; k++)
			vec_push(p->arena, &stack, x->in[k]);
	}
	*roots = stack; /* empty; its storage reused */
	return seen;
}

int
ir_takes_epilogue(OpKind op)
{
	return op == OP_matmul || op == OP_conv2d || op == OP_max_pool ||
	       op == OP_avg_pool || op == OP_max_pool_grad ||
	       op == OP_avg_pool_grad;
}

int
ir_conv_geometry(const IrNode *n, TfgConv *g)
{
	const IrConv *v = n->conv;
	const TfgShape *x, *f = NULL, *y;
	int pool = n->op == OP_max_pool || n->op == OP_avg_pool ||
		   n->op == OP_max_pool_grad || n->op == OP_avg_pool_grad;

	switch (n->op) {
	case OP_conv2d:
		x = &n->in[0]->shape, f = &n->in[1]->shape, y = &n->shape;
		break;
	case OP_conv2d_backprop_input:
		x = &n->shape, f = &n->in[1]->shape, y = &n->in[0]->shape;
		break;
	case OP_conv2d_backprop_filter:
		x = &n->in[0]->shape, f = &n->shape, y = &n->in[1]->shape;
		break;
	case OP_max_pool:
	case OP_avg_pool:
		x = &n->in[0]->shape, y = &n->shape;
		break;
	case OP_max_pool_grad: /* with an epilogue's inputs after these */
		if (n->nin < 2)
			return -1;
		x = &n->in[0]->shape, y = &n->in[1]->shape;
		break;
	case OP_avg_pool_grad:
		x = &n->shape, y = &n->in[0]->shape;
		break;
	default:
		return -1;
	}
	if (!v || x->rank != 4 || y->rank != 4 || (f && f->rank != 4))
		return -1;
	*g = (TfgConv){x->dims[0], x->dims[1], x->dims[2], x->dims[3],
		       pool ? v->ksize[0] : f->dims[0],
		       pool ? v->ksize[1] : f->dims[1],
		       pool ? x->dims[3] : f->dims[3], y->dims[1], y->dims[2],
		       v->stride[0], v->stride[1], v->dil[0], v->dil[1],
		       v->pad[0], v->pad[2], v->depthwise};
	return 0;
}

size_t
ir_nbytes(const IrNode *n)
{
	if (n->dtype == TFG_STRING)
		return n->strbytes;
	return (size_t)tfg_shape_numel(&n->shape) * tfg_dtype_size(n->dtype);
}

const char *
ir_node_label(const IrNode *n)
{
	static char buf[8][32];
	static int next;

	if (n->name)
		return n->name;
	next = (next + 1) % 8;
	snprintf(buf[next], sizeof buf[next], "_%d", n->id);
	return buf[next];
}

uint64_t
ir_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

char *
ir_type_str(Arena *a, TfgDtype t, const TfgShape *s)
{
	char buf[256];
	size_t n = snprintf(buf, sizeof buf, "%s[", tfg_dtype_name(t));

	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] == IR_DIM_UNKNOWN)
			n += snprintf(buf + n, sizeof buf - n, "%s?",
				      i ? ", " : "");
		else
			n += snprintf(buf + n, sizeof buf - n, "%s%" PRId64,
				      i ? ", " : "", s->dims[i]);
	snprintf(buf + n, sizeof buf - n, "]");
	return arena_strdup(a, buf);
}

char *
ir_const_str(Arena *a, const IrNode *n)
{
	RtTensor t = {n->dtype, n->shape, ir_nbytes(n), n->data};
	char *s, *r;
	size_t len;

	/* a string scalar shows quoted, as an array element does: 'text' */
	if (n->dtype == TFG_STRING && n->shape.rank == 0)
		t.shape = (TfgShape){1, {1}};
	s = rt_format_str(&t);
	if (!s)
		return arena_strdup(a, "?");
	if (n->dtype == TFG_STRING && n->shape.rank == 0 && s[0] == '[') {
		memmove(s, s + 1, strlen(s));
		s[strlen(s) - 1] = '\0';
	}
	/* One line, so that dumps stay one node per line. */
	for (char *c = s; *c; c++)
		if (*c == '\n')
			*c = ' ';
	len = strlen(s);
	if (len > 60) {
		/* cut between elements, never inside a number */
		size_t cut = 56;
		while (cut > 0 && s[cut] != ' ')
			cut--;
		if (cut == 0 && n->dtype == TFG_STRING) {
			/* one long string: cut inside it, between
			   characters */
			cut = 56;
			while (cut > 1 && ((unsigned char)s[cut] & 0xc0) == 0x80)
				cut--;
		}
		r = arena_printf(a, "%.*s ...", (int)cut, s);
	} else {
		r = arena_strdup(a, s);
	}
	free(s);
	return r;
}
