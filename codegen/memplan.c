/*
 * codegen/memplan.c: buffer planning for a part's arena (the slots of
 * codegen/cpu.c's layout), and its dump, `tfgc emit --emit=memory`.
 *
 * Every node but sends, constants, reshapes of a node with a slot and
 * the values that live in a variable's storage (cg_var_place) owns a
 * slot (CgSlot); such a reshape is a view of its input's.  Its live
 * range runs, in part order, from the node's own position (where it is
 * computed, or where a recv or feed writes it) to the position of its
 * last reader; a send, a fetch among them, reads its input at its own
 * position, so a value sent or fetched stays live until then and no
 * further: tfg_rt_send copies before it returns (runtime/rendezvous.c,
 * runtime/aot.c), and nothing reads the arena after the part returns.
 * Ranges are inclusive, so a node's inputs and its output never share
 * memory (no in-place reuse).
 *
 * Offsets: slots are placed largest first (then by position), each at
 * the lowest 64-byte-aligned offset where it fits between the slots
 * already placed whose ranges overlap its own (first fit in a list
 * ordered by offset).  The arena size is the peak, the highest end.
 * Greedy by size is not optimal (that is NP-hard) but is what
 * TensorFlow's and TVM's planners do, and it keeps big buffers low.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_int.h"
#include "codegen/cuda.h"

static size_t
align_up(size_t v)
{
	return (v + CG_SLOT_ALIGN - 1) & ~(size_t)(CG_SLOT_ALIGN - 1);
}

int
cg_slots_overlap(const CgSlot *a, const CgSlot *b)
{
	return a->size && b->size && a->space == b->space &&
	       a->first <= b->last && b->first <= a->last;
}

static int
by_size(const void *x, const void *y)
{
	const CgSlot *a = *(const CgSlot *const *)x;
	const CgSlot *b = *(const CgSlot *const *)y;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (a->first != b->first)
		return a->first < b->first ? -1 : 1;
	return (a->node > b->node) - (a->node < b->node);
}

static int
by_off(const void *x, const void *y)
{
	const CgSlot *a = *(const CgSlot *const *)x;
	const CgSlot *b = *(const CgSlot *const *)y;
	return (a->off > b->off) - (a->off < b->off);
}

size_t
cg_plan_offsets(CgSlot *s, int n)
{
	CgSlot **order = malloc(((size_t)n + 1) * sizeof *order);
	CgSlot **live = malloc(((size_t)n + 1) * sizeof *live);
	size_t peak = 0;
	if (!order || !live) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < n; i++)
		order[i] = &s[i];
	qsort(order, (size_t)n, sizeof *order, by_size);
	for (int i = 0; i < n; i++) {
		CgSlot *x = order[i];
		size_t need = align_up(x->size), at = 0;
		int nl = 0;
		x->off = 0;
		if (!need)
			continue;
		for (int j = 0; j < i; j++) /* placed, live at the same time */
			if (cg_slots_overlap(order[j], x))
				live[nl++] = order[j];
		qsort(live, (size_t)nl, sizeof *live, by_off);
		for (int j = 0; j < nl; j++) {
			if (live[j]->off >= at + need)
				break; /* the gap before it fits */
			size_t end = live[j]->off + align_up(live[j]->size);
			if (end > at)
				at = end;
		}
		x->off = at;
		if (at + need > peak)
			peak = at + need;
	}
	free(order);
	free(live);
	return peak;
}

size_t
cg_space_peak(const CgSlot *s, int n, int sp)
{
	size_t peak = 0;

	for (int i = 0; i < n; i++)
		if (s[i].space == sp && s[i].size &&
		    s[i].off + align_up(s[i].size) > peak)
			peak = s[i].off + align_up(s[i].size);
	return peak;
}

/* A reshape is a view (both sides are row-major): it shares its input's
 * slot, which then lives until the reshape's last reader.  The slot of
 * the input (an earlier node), or -1 when it has none (a constant, which
 * folding left because of its size or -fno-fold: the reshape then gets a
 * slot of its own and copies). */
static int
alias_of(const IrPart *part, int i, const int *slot_of)
{
	for (int j = i - 1; j >= 0; j--)
		if (part->nodes[j] == part->nodes[i]->in[0])
			return slot_of[j];
	return -1;
}

int
cg_read_after(const IrPart *part, int i)
{
	for (int k = i + 1; k < part->n; k++)
		for (int q = 0; q < part->nodes[k]->nin; q++)
			if (part->nodes[k]->in[q] == part->nodes[i])
				return 1;
	return 0;
}

int
cg_var_place(const IrPart *part, int i, int *taker)
{
	const IrNode *n = part->nodes[i], *t = NULL;
	int j = -1;

	if (n->dev.kind == DEV_GPU || n->dtype == TFG_STRING ||
	    ir_nbytes(n) < CG_VAR_MIN || n->op == OP_send)
		return 0;
	for (int k = i + 1; k < part->n; k++)
		for (int q = 0; q < part->nodes[k]->nin; q++)
			if (part->nodes[k]->in[q] == n) {
				if (t && t != part->nodes[k])
					return 0; /* two readers */
				t = part->nodes[k];
				j = k;
			}
	if (t == NULL || t->nin != 1 || t->dev.kind == DEV_GPU)
		return 0;
	if (n->op == OP_variable && n->var && t->op == OP_send &&
	    ir_nbytes(n) >= CG_SEND_VAR_MIN) {
		*taker = j;
		return CG_FROM_VAR;
	}
	/* not a value that has its own storage (a constant), is a view (a
	   reshape) or is a variable op's, that a copy moves between
	   memories, that the assign broadcasts (a scalar), or that another
	   task computes (a recv: should that task fail, the variable would
	   lose its value; a feed comes from the client right behind the
	   step's START) */
	if (t->op != OP_assign || t->var == NULL || n->var ||
	    n->op == OP_const || n->op == OP_reshape || n->op == OP_copy ||
	    n->op == OP_recv ||
	    n->dtype != t->dtype ||
	    tfg_shape_numel(&n->shape) != tfg_shape_numel(&t->shape))
		return 0;
	/* the variable changes at n's position, not the assign's: nothing
	   between them may look at it */
	for (int k = i + 1; k < j; k++)
		if (part->nodes[k]->var == t->var)
			return 0;
	*taker = j;
	return CG_INTO_VAR;
}

int
cg_plan_part(const IrPart *part, CgSlot **slotsp, size_t *peak,
	     size_t *unplanned)
{
	int *slot_of = malloc(((size_t)part->n + 1) * sizeof *slot_of);
	CgSlot *s = calloc((size_t)part->n + 1, sizeof *s);
	char *noslot = calloc((size_t)part->n + 1, 1);
	int ns = 0;
	size_t sum = 0;
	if (!slot_of || !s || !noslot) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < part->n; i++) {
		const IrNode *n = part->nodes[i];
		int taker;

		slot_of[i] = -1;
		if (noslot[i] || n->op == OP_send || n->op == OP_const)
			continue;
		if (cg_var_place(part, i, &taker)) {
			/* an assign that takes it: its value, the
			   variable's, only for a reader of its own */
			if (part->nodes[taker]->op == OP_assign &&
			    !cg_read_after(part, taker))
				noslot[taker] = 1;
			continue;
		}
		if (n->op == OP_reshape && (slot_of[i] = alias_of(part, i,
								  slot_of)) >= 0)
			continue; /* a view of its input's slot */
		slot_of[i] = ns;
		s[ns].node = i;
		s[ns].space = n->dev.kind == DEV_GPU ? 1 + n->dev.index : 0;
		s[ns].size = ir_nbytes(n); /* strings: records and text */
		if (s[ns].space && cu_scratch_bytes(n))
			s[ns].size = align_up(s[ns].size) + cu_scratch_bytes(n);
		s[ns].first = s[ns].last = i;
		sum += align_up(s[ns].size);
		ns++;
	}
	/* last readers: inputs are earlier nodes of the part */
	for (int j = 0; j < part->n; j++) {
		const IrNode *r = part->nodes[j];
		for (int k = 0; k < r->nin; k++)
			for (int i = j - 1; i >= 0; i--)
				if (part->nodes[i] == r->in[k]) {
					if (slot_of[i] >= 0 &&
					    s[slot_of[i]].last < j)
						s[slot_of[i]].last = j;
					break;
				}
	}
	cg_plan_offsets(s, ns); /* slots of other spaces never overlap */
	*peak = cg_space_peak(s, ns, 0);
	if (unplanned)
		*unplanned = sum;
	free(slot_of);
	free(noslot);
	*slotsp = s;
	return ns;
}

/* ---------------------------------------------------- --emit=memory */

/* As compiler/dump.c names nodes: unnamed ones are _<id>. */
static const char *
node_name(const IrNode *n, char *buf, size_t len)
{
	if (n->name)
		return n->name;
	snprintf(buf, len, "_%d", n->id);
	return buf;
}

static void
dump_part(FILE *out, const Program *p, int task, int sig,
	  const IrPart *part)
{
	CgSlot *s;
	size_t peak, sum;
	int ns = cg_plan_part(part, &s, &peak, &sum), k = 0, taker;
	fprintf(out, "sig %d, %s: peak %zu bytes, unplanned %zu bytes, "
		"%d slots\n", sig, p->tasks[task].name, peak, sum, ns);
	fprintf(out, "  %4s %10s %10s  %-9s %s\n", "pos", "offset", "bytes",
		"live", "node");
	for (int i = 0; i < part->n; i++) {
		const IrNode *n = part->nodes[i];
		char live[32] = "-", off[32] = "-", size[32] = "-", shp[128];
		char nm[64];
		if (k < ns && s[k].node == i) {
			snprintf(live, sizeof live, "%d-%d", s[k].first,
				 s[k].last);
			snprintf(off, sizeof off, "%zu", s[k].off);
			snprintf(size, sizeof size, "%zu", s[k].size);
			k++;
		} else if (n->op == OP_reshape) {
			snprintf(live, sizeof live, "view");
		} else if (cg_var_place(part, i, &taker)) {
			snprintf(live, sizeof live, "variable");
			snprintf(size, sizeof size, "%zu", ir_nbytes(n));
		}
		fprintf(out, "  %4d %10s %10s  %-9s ", i, off, size, live);
		if (n->op == OP_send)
			fprintf(out, "send");
		else
			fprintf(out, "%s = %s", node_name(n, nm, sizeof nm),
				op_info[n->op].name);
		for (int j = 0; j < n->nin; j++)
			fprintf(out, "%s%s", j ? ", " : n->op == OP_send
				? " " : "(",
				node_name(n->in[j], nm, sizeof nm));
		if (n->nin && n->op != OP_send)
			fputc(')', out);
		tfg_shape_str(shp, sizeof shp, &n->shape);
		if (n->op != OP_send)
			fprintf(out, " : %s%s", tfg_dtype_name(n->dtype), shp);
		fputc('\n', out);
	}
	free(s);
}

int
cg_emit_memory(FILE *out, const Program *p, int task)
{
	if (task < 0 || task >= p->ntask)
		return -1;
	for (int s = 0; s < p->nsig; s++) {
		const IrPart *part = p->sigs[s].parts ? &p->sigs[s].parts[task]
						      : NULL;
		if (part && part->n > 0)
			dump_part(out, p, task, s, part);
	}
	return 0;
}
