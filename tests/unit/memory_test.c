/*
 * tests/unit/memory_test.c: buffer planning (codegen/memplan.c).
 *
 * Over random parts (inputs, constants, ops reading 1-3 earlier nodes,
 * sends of earlier nodes), the plan must never give two slots that are
 * live at the same time overlapping memory, must keep every slot 64-byte
 * aligned and inside the peak, must make each live range end at the last
 * reader (a send included), and must never need more than one slot per
 * node.  A chain shows the reuse itself.
 */
#include <stdlib.h>

#include "codegen/cg_int.h"
#define JH_SEED 0x243F6A8885A308D3ull
#include "tests/unit/jit_harness.h"

enum { MAXN = 96 };

static IrNode nodes[MAXN];
static IrNode *ptrs[MAXN];
static IrNode *ins[MAXN][3];

static void
node(int i, OpKind op, int64_t elems, int nin)
{
	IrNode *n = &nodes[i];
	memset(n, 0, sizeof *n);
	n->id = i;
	n->op = op;
	n->dtype = jh_next() % 2 ? TFG_F32 : TFG_F64;
	n->shape.rank = 1;
	n->shape.dims[0] = elems;
	n->nin = nin;
	n->in = ins[i];
	ptrs[i] = n;
}

/* Checks the plan of part[0..n) against the rules above. */
static void
check(IrPart *part)
{
	CgSlot *s;
	size_t peak, sum;
	int ns = cg_plan_part(part, &s, &peak, &sum), k = 0;
	ASSERT(peak <= sum);
	ASSERT_EQ(peak % CG_SLOT_ALIGN, 0);
	for (int i = 0; i < part->n; i++) {
		const IrNode *n = part->nodes[i];
		if (n->op == OP_send || n->op == OP_const)
			continue;
		ASSERT(k < ns && s[k].node == i);
		int last = i; /* the last reader, by brute force */
		for (int j = i + 1; j < part->n; j++)
			for (int q = 0; q < part->nodes[j]->nin; q++)
				if (part->nodes[j]->in[q] == n)
					last = j;
		ASSERT_EQ(s[k].first, i);
		ASSERT_EQ(s[k].last, last);
		ASSERT_EQ(s[k].off % CG_SLOT_ALIGN, 0);
		ASSERT(s[k].off + s[k].size <= peak);
		k++;
	}
	ASSERT_EQ(k, ns);
	for (int a = 0; a < ns; a++)
		for (int b = a + 1; b < ns; b++) {
			int live = s[a].first <= s[b].last &&
				   s[b].first <= s[a].last;
			int mem = s[a].off < s[b].off + s[b].size &&
				  s[b].off < s[a].off + s[a].size;
			if (live && mem && s[a].size && s[b].size)
				TEST_FAIL_("slots %d and %d overlap: [%zu, "
					   "+%zu) and [%zu, +%zu), live %d-%d "
					   "and %d-%d", s[a].node, s[b].node,
					   s[a].off, s[a].size, s[b].off,
					   s[b].size, s[a].first, s[a].last,
					   s[b].first, s[b].last);
		}
	free(s);
}

static void
t_random(void)
{
	int reused = 0;
	for (int it = 0; it < 400; it++) {
		int n = jh_rnd(1, MAXN);
		IrPart part = {0};
		for (int i = 0; i < n; i++) {
			int r = i == 0 ? 0 : jh_rnd(0, 9);
			int64_t el = jh_next() % 8 == 0 ? 0 : jh_rnd(1, 5000);
			if (r == 0) {
				node(i, jh_next() % 2 ? OP_input : OP_recv, el,
				     0);
			} else if (r == 1) {
				node(i, OP_const, el, 0);
			} else if (r == 2) {
				node(i, OP_send, el, 1);
				ins[i][0] = ptrs[jh_rnd(0, i - 1)];
			} else {
				int nin = jh_rnd(1, 3);
				node(i, nin == 1 ? OP_exp : nin == 2 ? OP_add
					: OP_where, el, nin);
				for (int q = 0; q < nin; q++) /* sends too */
					ins[i][q] = ptrs[jh_rnd(0, i - 1)];
			}
		}
		part.n = n;
		part.nodes = ptrs;
		check(&part);
		CgSlot *s;
		size_t peak, sum;
		free((cg_plan_part(&part, &s, &peak, &sum), s));
		reused += peak < sum;
	}
	ASSERT(reused > 100);
}

/* x -> a -> b -> c -> d, each 1000 floats: two slots suffice. */
static void
t_chain(void)
{
	IrPart part = {0};
	node(0, OP_input, 1000, 0);
	for (int i = 1; i < 5; i++) {
		node(i, OP_exp, 1000, 1);
		ins[i][0] = ptrs[i - 1];
	}
	for (int i = 0; i < 5; i++)
		nodes[i].dtype = TFG_F32;
	node(5, OP_send, 1000, 1);
	ins[5][0] = ptrs[4];
	part.n = 6;
	part.nodes = ptrs;
	check(&part);
	CgSlot *s;
	size_t peak, sum;
	ASSERT_EQ(cg_plan_part(&part, &s, &peak, &sum), 5);
	ASSERT_EQ(sum, 5 * 4032);
	ASSERT_EQ(peak, 2 * 4032);
	free(s);
}

TEST_MAIN({"random", t_random}, {"chain", t_chain})
