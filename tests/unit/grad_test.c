/*
 * tests/unit/grad_test.c: grad(y, x) (spec §6.25 "grad", compiler/
 * autodiff.c) against central finite differences.  Each program declares
 * f64 inputs and a scalar y; the test adds g0 = grad(y, <first input>),
 * g1 = grad(y, <second input>), ... and a run of y and them, compiles it
 * as tfgc does (every pass), JIT-compiles it once, feeds random values,
 * and compares each gradient element with (y(x + h e_i) - y(x - h e_i)) /
 * 2h, h = 1e-6, to a relative 1e-6.  Where finite differences cannot
 * say (ties of max and min, zeros of a product), the expected values are
 * written out.  f32 inputs are fed multiples of 1/64 and perturbed by
 * 1/64, which f32 holds exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/jit_harness.h"

enum { MAXIN = 8 };

typedef struct Gt {
	Program p;
	CompileOptions co;
	JhRun r;
	const IrSig *s;
	int nin;
	const char *name[MAXIN];
	int feed[MAXIN];  /* the sig's feed of input i */
	void *data[MAXIN];
	TfgDtype dt[MAXIN];
	int64_t nel[MAXIN];
} Gt;

/* Compiles body (inputs, then y = ...) with a gradient of y for each
 * input, and JIT-compiles it. */
static void
gt_open(Gt *t, const char *body)
{
	char src[8192];
	size_t n = 0;
	const char *l = body;

	memset(t, 0, sizeof *t);
	while ((l = strstr(l, "input ")) != NULL) {
		const char *e = strchr(l += 6, ':');
		ASSERT(e && t->nin < MAXIN);
		(void)jh_alloc(1); /* makes jh_arena */
		t->name[t->nin++] = arena_strndup(jh_arena, l,
						  (size_t)(e - l));
	}
	n += snprintf(src + n, sizeof src - n, "%s", body);
	for (int i = 0; i < t->nin; i++)
		n += snprintf(src + n, sizeof src - n, "g%d = grad(y, %s)\n",
			      i, t->name[i]);
	n += snprintf(src + n, sizeof src - n, "session { print run(y");
	for (int i = 0; i < t->nin; i++)
		n += snprintf(src + n, sizeof src - n, ", g%d", i);
	n += snprintf(src + n, sizeof src - n, ", feed {");
	for (int i = 0; i < t->nin; i++)
		n += snprintf(src + n, sizeof src - n, "%s %s: load(\"%s\")",
			      i ? "," : "", t->name[i], t->name[i]);
	n += snprintf(src + n, sizeof src - n, " }) }\n");
	ASSERT(n < sizeof src);
	if (jh_compile_src(&t->p, src, &t->co) != 0)
		TEST_FAIL_("does not compile:\n%s", src);
	t->s = &t->p.sigs[0];
	ASSERT_EQ(t->s->nfeed, t->nin);
	ASSERT_EQ(t->s->nfetch, t->nin + 1);
	for (int i = 0; i < t->nin; i++) {
		const IrNode *x = NULL;
		for (int f = 0; f < t->nin; f++)
			if (strcmp(t->s->feed[f]->name, t->name[i]) == 0)
				t->feed[i] = f, x = t->s->feed[f];
		ASSERT(x != NULL);
		t->dt[i] = x->dtype;
		t->nel[i] = jh_nel(x->shape);
		t->data[i] = jh_alloc(jh_nbytes(x->dtype, x->shape) + 8);
	}
	if (jh_jit(&t->r, &t->p, 0, NULL) != 0)
		TEST_FAIL_("does not JIT:\n%s", src);
	for (int i = 0; i < t->nin; i++) {
		/* an input no fetch needs has no edge (nor its key) */
		const IrPart *pt = &t->s->parts[0];
		uint32_t k = t->s->feed_key[t->feed[i]];
		for (int j = 0; j < pt->n; j++)
			if (pt->nodes[j]->op == OP_input &&
			    pt->nodes[j]->key == k &&
			    strcmp(pt->nodes[j]->name, t->name[i]) == 0)
				jh_feed(k, t->data[i], (size_t)t->nel[i] *
					jh_dsize(t->dt[i]));
	}
}

static void
gt_close(Gt *t)
{
	jh_run_done(&t->r);
	jh_reset();
	arena_free(t->p.arena);
}

static double
get(const Gt *t, int i, int64_t e)
{
	return jh_getf(t->data[i], t->dt[i], e);
}

static void
set(Gt *t, int i, int64_t e, double v)
{
	if (t->dt[i] == TFG_F32)
		((float *)t->data[i])[e] = (float)v;
	else
		((double *)t->data[i])[e] = v;
}

/* Runs the program: y. */
static double
gt_run(Gt *t)
{
	const IrNode *y = t->s->fetch[0];

	ASSERT_EQ(jh_call(&t->r, 0), 0);
	ASSERT(jh_sent[t->s->fetch_key[0]] != NULL);
	return jh_getf(jh_sent[t->s->fetch_key[0]], y->dtype, 0);
}

/* Gradient i of the last run, element e. */
static double
gt_grad(const Gt *t, int i, int64_t e)
{
	return jh_getf(jh_sent[t->s->fetch_key[1 + i]],
		       t->s->fetch[1 + i]->dtype, e);
}

/* Feeds every input random values in [lo, hi] (f32: multiples of
 * 1/64). */
static void
gt_fill(Gt *t, double lo, double hi)
{
	for (int i = 0; i < t->nin; i++)
		for (int64_t e = 0; e < t->nel[i]; e++) {
			double u = (double)(jh_next() >> 11) /
				   9007199254740992.0;
			double v = lo + (hi - lo) * u;
			set(t, i, e, t->dt[i] == TFG_F32 ? round(v * 64) / 64
							 : v);
		}
}

/* Each gradient of the program against central differences. */
static void
fd_check(const char *body, double lo, double hi)
{
	Gt t;
	double *an[MAXIN];

	gt_open(&t, body);
	for (int round = 0; round < 2; round++) {
		gt_fill(&t, lo, hi);
		gt_run(&t);
		for (int i = 0; i < t.nin; i++) {
			an[i] = jh_alloc((size_t)t.nel[i] * sizeof *an[i]);
			for (int64_t e = 0; e < t.nel[i]; e++)
				an[i][e] = gt_grad(&t, i, e);
		}
		for (int i = 0; i < t.nin; i++)
			for (int64_t e = 0; e < t.nel[i]; e++) {
				double v = get(&t, i, e), yp, ym, fd;
				double h = t.dt[i] == TFG_F32 ? 1.0 / 64
							      : 1e-6;
				set(&t, i, e, v + h);
				yp = gt_run(&t);
				set(&t, i, e, v - h);
				ym = gt_run(&t);
				set(&t, i, e, v);
				fd = (yp - ym) / (2 * h);
				if (!(fabs(an[i][e] - fd) <=
				      1e-6 * (1 + fabs(fd))))
					TEST_FAIL_("grad(y, %s)[%" PRId64
						   "] = %.12g, finite "
						   "differences %.12g:\n%s",
						   t.name[i], e, an[i][e], fd,
						   body);
			}
	}
	gt_close(&t);
}

/* The program on these values of its inputs (in order, concatenated)
 * gives these gradients (concatenated), to a relative 1e-12. */
static void
exact(const char *body, const double *in, const double *want)
{
	Gt t;
	int k = 0, w = 0;

	gt_open(&t, body);
	for (int i = 0; i < t.nin; i++)
		for (int64_t e = 0; e < t.nel[i]; e++)
			set(&t, i, e, in[k++]);
	gt_run(&t);
	for (int i = 0; i < t.nin; i++)
		for (int64_t e = 0; e < t.nel[i]; e++, w++)
			if (!(fabs(gt_grad(&t, i, e) - want[w]) <=
			      1e-12 * (1 + fabs(want[w]))))
				TEST_FAIL_("grad(y, %s)[%" PRId64 "] = %g, "
					   "expected %g:\n%s", t.name[i], e,
					   gt_grad(&t, i, e), want[w], body);
	gt_close(&t);
}

/* ------------------------------------------------------------ the rules */

static void
t_arith(void)
{
	fd_check("input a: f64[2, 3]\ninput b: f64[2, 3]\n"
		 "y = reduce_sum(a + b * a - b / a + exp(a) * log(b) + "
		 "sqrt(b) * tanh(a) + sigmoid(b) * a - a / b)\n", 0.5, 2);
	fd_check("input a: f64[7]\ninput b: f64[7]\n"
		 "y = reduce_sum(relu(a) * b + abs(a) * 3.0 - (-b) * a + "
		 "abs(b - a))\n", -2, 2);
	fd_check("input a: f64[9]\ny = reduce_sum(softplus(a * 3.0) * a)\n",
		 -12, 12);
}

static void
t_pow(void)
{
	fd_check("input a: f64[2, 3]\ninput b: f64[3]\n"
		 "y = reduce_sum(pow(a, b) + pow(2.0, b) * a)\n", 0.5, 2);
	/* a negative base: only the base has a gradient */
	fd_check("input a: f64[6]\ny = reduce_sum(pow(a, 3.0))\n", -2, 2);
	/* d/db 0 where a <= 0 (TF's guard) */
	exact("input a: f64[3]\ninput b: f64[3]\n"
	      "y = reduce_sum(pow(a, b))\n",
	      (const double[]){-2, 0, 2, 2, 2, 1},
	      (const double[]){-4, 0, 1, 0, 0, 2 * log(2)});
}

static void
t_max_min(void)
{
	fd_check("input a: f64[3, 4]\ninput b: f64[4]\n"
		 "y = reduce_sum(maximum(a, b) * 2.0 + minimum(a, b) * a)\n",
		 -2, 2);
	/* ties go to the first operand */
	exact("input a: f64[2]\ninput b: f64[2]\n"
	      "y = reduce_sum(maximum(a, b) + minimum(a, b) * 3.0)\n",
	      (const double[]){1, 2, 1, 5},
	      (const double[]){4, 3, 0, 1});
}

static void
t_where(void)
{
	fd_check("input a: f64[3, 4]\ninput b: f64[4]\n"
		 "y = reduce_sum(where(a > b, a * a, b * 3.0))\n", -2, 2);
}

static void
t_broadcast(void)
{
	fd_check("input m: f64[3, 4]\ninput r: f64[4]\ninput c: f64[3, 1]\n"
		 "input s: f64[]\n"
		 "y = reduce_sum((m + r) * c * s + exp(r * s) - s / m)\n",
		 0.5, 2);
}

static void
t_reductions(void)
{
	fd_check("input x: f64[2, 3, 4]\n"
		 "y = reduce_sum(reduce_mean(x, axis=1) * reduce_min(x, "
		 "axis=1)) + reduce_sum(reduce_max(x, axis=[0, 2], "
		 "keepdims=true) * x) + reduce_prod(reduce_sum(x, axis=2, "
		 "keepdims=true) * 0.1 + 1.0) + reduce_mean(x * x) + "
		 "reduce_sum(reduce_prod(x, axis=[0, 2]) * "
		 "reduce_mean(x, axis=-1, keepdims=true)) + reduce_max(x) * "
		 "reduce_min(x) + reduce_prod(x * 0.8)\n", 0.5, 1.5);
}

static void
t_ties_and_zeros(void)
{
	/* max and min split the gradient evenly among ties */
	exact("input x: f64[2, 4]\n"
	      "y = reduce_sum(reduce_max(x, axis=1) * [1.0, 2.0]) + "
	      "reduce_min(x)\n",
	      (const double[]){1, 3, 3, 2, 4, 4, 4, 4},
	      (const double[]){1, 0.5, 0.5, 0, 0.5, 0.5, 0.5, 0.5});
	/* a product with one zero: the others' product there; two: 0 */
	exact("input x: f64[3, 3]\n"
	      "y = reduce_sum(reduce_prod(x, axis=1) * [1.0, 1.0, 1.0])\n",
	      (const double[]){2, 0, 3, 1, 2, 4, 0, 0, 5},
	      (const double[]){0, 6, 0, 8, 4, 2, 0, 0, 0});
}

static void
t_softmax(void)
{
	fd_check("input x: f64[2, 5]\ninput w: f64[2, 5]\n"
		 "y = reduce_sum(softmax(x) * w) + reduce_sum(log_softmax(x "
		 "* 2.0) * w * w)\n", -2, 2);
	fd_check("input x: f64[6]\ny = reduce_max(log_softmax(x)) + "
		 "softmax(x)[2]\n", -2, 2);
}

/* softmax_cross_entropy: logits (softmax(x) sum(l) - l) g, labels
 * -log_softmax(x) g; labels of any sign, so that sum(l) is not 1. */
static void
t_xent(void)
{
	fd_check("input x: f64[3, 5]\ninput l: f64[3, 5]\ninput w: f64[3]\n"
		 "y = reduce_sum(softmax_cross_entropy(x * 2.0, l) * w)\n",
		 -2, 2);
	fd_check("input x: f64[2, 2, 4]\ninput l: f64[2, 2, 4]\n"
		 "y = reduce_mean(softmax_cross_entropy(labels=l * l, "
		 "logits=x)) + reduce_sum(softmax_cross_entropy(x[0], l[1]))\n",
		 -3, 3);
	fd_check("input x: f64[7]\ninput l: f64[7]\n"
		 "y = softmax_cross_entropy(x, softmax(l))\n", -2, 2);
}

static void
t_matmul(void)
{
	fd_check("input a: f64[3, 4]\ninput b: f64[4, 2]\n"
		 "y = reduce_sum(tanh(a @ b))\n", -1, 1);
	/* batch axes broadcast both ways */
	fd_check("input a: f64[2, 1, 3, 4]\ninput b: f64[3, 4, 2]\n"
		 "y = reduce_sum(tanh(a @ b))\n", -1, 1);
	/* vectors: a row on the left, a column on the right */
	fd_check("input v: f64[4]\ninput m: f64[4, 3]\ninput u: f64[3]\n"
		 "input w: f64[4]\ninput bm: f64[2, 4, 3]\n"
		 "y = reduce_sum(tanh(v @ m)) + reduce_sum(sigmoid(m @ u)) + "
		 "v @ w + reduce_sum(tanh(bm @ u)) + reduce_sum(tanh(v @ bm))"
		 "\n", -1, 1);
}

/* Convolutions and pools
 * (spec §6.34 "conv2d, depthwise_conv2d, conv2d_transpose",
 * §6.33 "max_pool, avg_pool"): every op through its
 * rule, OP_conv2d_backprop_input and OP_conv2d_backprop_filter as
 * functions of both their operands, OP_max_pool_grad and
 * OP_avg_pool_grad as the pools' gradients, and a second gradient
 * through avg_pool_grad. */
static void
t_conv_pool(void)
{
	fd_check("input x: f64[2, 5, 6, 3]\ninput f: f64[3, 2, 3, 4]\n"
		 "y = reduce_sum(tanh(conv2d(x, f, [2, 1], \"SAME\", "
		 "dilations=[1, 2])))\n", -1, 1);
	fd_check("input x: f64[1, 5, 5, 2]\ninput f: f64[3, 3, 2, 2]\n"
		 "y = reduce_sum(tanh(depthwise_conv2d(x, f, 2, \"VALID\")))"
		 "\n", -1, 1);
	fd_check("input g: f64[1, 3, 3, 4]\ninput f: f64[3, 3, 2, 4]\n"
		 "y = reduce_sum(tanh(conv2d_transpose(g, f, [1, 5, 5, 2], "
		 "2)))\n", -1, 1);
	fd_check("input x: f64[1, 4, 4, 2]\ninput g: f64[1, 2, 2, 3]\n"
		 "y = reduce_sum(tanh(conv2d_backprop_filter(x, [3, 3, 2, 3], "
		 "g, 2, \"SAME\")))\n", -1, 1);
	fd_check("input x: f64[2, 5, 4, 3]\n"
		 "y = reduce_sum(tanh(max_pool(x, 3, [2, 1], \"SAME\")) * "
		 "max_pool(x, 2, 2, \"VALID\")[0, 0, 0, 0])\n", -1, 1);
	fd_check("input x: f64[1, 4, 4, 2]\ninput w: f64[1, 2, 2, 2]\n"
		 "g = grad(reduce_sum(avg_pool(x, 2, 2, \"VALID\") * w), x)\n"
		 "y = reduce_sum(tanh(g) * x) + reduce_sum(tanh(avg_pool(x, "
		 "3, 2, \"SAME\")))\n", -1, 1);
}

/* Rows by index (spec §6.36 "gather, embedding_lookup",
 * §6.37 "Segment reductions",
 * §6.38 "hash_bucket, sigmoid_cross_entropy"): gather on
 * each axis with repeated indices (their gradients add up), a segment
 * sum with a dropped id and an empty segment, a maximum (no ties among
 * random values) and a mean, a second gradient through a gather's (a
 * segment sum, whose own is a gather), and the logistic loss. */
static void
t_gather_segment(void)
{
	fd_check("input x: f64[5, 3]\n"
		 "y = reduce_sum(tanh(gather(x, [3, 0, 3, 4]))) + "
		 "reduce_sum(tanh(gather(x, [[2, 0], [1, 2]], axis=1)) * 2.0) "
		 "+ reduce_sum(embedding_lookup(x, [1, 1]) * x[0])\n", -1, 1);
	fd_check("input x: f64[6, 2]\n"
		 "s = unsorted_segment_sum(x, [0, 2, 0, -1, 3, 2], 5)\n"
		 "m = unsorted_segment_max(x, [1, 1, 0, 1, -1, 0], 3)\n"
		 "a = unsorted_segment_mean(x, [0, 0, 2, 1, 2, 2], 4)\n"
		 "y = reduce_sum(tanh(s) * s) + reduce_sum(tanh(m[0:2])) + "
		 "reduce_sum(exp(a))\n", -1, 1);
	fd_check("input x: f64[4, 3]\ninput w: f64[3, 3]\n"
		 "g = grad(reduce_sum(tanh(gather(x, [1, 1, 2]) * w)), x)\n"
		 "y = reduce_sum(tanh(g) * x)\n", -1, 1);
	fd_check("input x: f64[6]\ninput z: f64[6]\n"
		 "y = reduce_sum(sigmoid_cross_entropy(x, z) * z)\n", -2, 2);
	fd_check("input x: f64[4, 3]\ninput w: f64[5]\n"
		 "i = [1, 3, 0, 2, 2]\ns = [0, 0, 1, 3, 3]\n"
		 "y = reduce_sum(tanh(embedding_lookup_sparse(x, i, s, 4, "
		 "weights=w, combiner=\"sqrtn\"))) + reduce_sum(tanh("
		 "embedding_lookup_sparse(x, i, s, 4, weights=w)))\n", 1, 2);
}

/* A checked value (OP_check_range: dropout's fed keep_prob, here 1, at
 * which dropout is x itself) passes its gradient through unchanged. */
static void
t_check_range(void)
{
	static const double in[] = {1, 2, 3, 1};
	static const double want[] = {2, 4, 6, -14};

	exact("input x: f64[3]\ninput k: f64[]\n"
	      "y = reduce_sum(dropout(x, k, seed=3) * x)\n", in, want);
}

static void
t_shapes(void)
{
	fd_check("input x: f64[4, 5]\n"
		 "y = reduce_sum(exp(x[1:3, 2:])) + reduce_sum(x[0] * x[3]) "
		 "+ reduce_sum(x[:, 1] * 2.0) + x[2, 4] * x[2, 4] + "
		 "reduce_sum(slice(x, [1, 1], [2, -1]) * 3.0)\n", -1, 1);
	fd_check("input a: f64[2, 3]\ninput b: f64[2, 2]\n"
		 "c = concat([a, b * 2.0, a], 1)\n"
		 "s = stack([a, a * b[:, 0:1]], axis=1)\n"
		 "parts = split(c, [3, 5], axis=1)\n"
		 "y = reduce_sum(tanh(c) * c) + reduce_sum(s * s * 0.5) + "
		 "reduce_sum(exp(parts[1])) + reduce_sum(stack([a[0, 0], "
		 "b[1, 1]]) * 4.0)\n", -1, 1);
	fd_check("input a: f64[2, 3, 4]\n"
		 "t = transpose(a, [2, 0, 1])\n"
		 "y = reduce_sum(tanh(t) * reshape(a, [4, 2, 3])) + "
		 "reduce_sum(transpose(a) * transpose(a) * 0.5) + "
		 "reduce_sum(reshape(a, [-1])[3:9])\n", -1, 1);
}

static void
t_cast(void)
{
	/* f32 in, f64 arithmetic: the gradient is cast back to f32 */
	fd_check("input x: f32[5]\ny = reduce_sum(cast(x, f64) * "
		 "cast(x, f64) * 0.5 + cast(x, f64) * 3.0)\n", -2, 2);
	/* and back: an f32 y, exact in f32 at these values */
	fd_check("input x: f32[5]\ny = reduce_sum(cast(cast(x, f64) * 2.0, "
		 "f32) * x)\n", -2, 2);
}

static void
t_chain(void)
{
	fd_check("input x: f64[3, 4]\ninput w: f64[4, 5]\ninput b: f64[5]\n"
		 "input t: f64[3, 5]\n"
		 "h = tanh(x * 2.0 + 1.0)\nz = sigmoid(h @ w + b)\n"
		 "p = softmax(z * 3.0)\n"
		 "y = -reduce_mean(reduce_sum(t * log(p), axis=1)) + "
		 "0.01 * reduce_sum(w * w)\n", -1, 1);
	/* a gradient of a gradient */
	fd_check("input x: f64[4]\ninput w: f64[4]\n"
		 "y = reduce_sum(grad(reduce_sum(exp(x) * x * w), x) * w)\n",
		 -1, 1);
}

static void
t_independent(void)
{
	/* y does not depend on z: zeros */
	exact("input x: f64[3]\ninput z: f64[2, 2]\n"
	      "y = reduce_sum(x * x)\n",
	      (const double[]){1, 2, 3, 9, 9, 9, 9},
	      (const double[]){2, 4, 6, 0, 0, 0, 0});
	/* nor on x through the comparison: only the branch counts */
	fd_check("input x: f64[5]\ny = reduce_sum(where(x > 0.0, x * x, "
		 "-x) + cast(x > 0.5, f64))\n", -1, 1);
}

/* grad with respect to a variable: its read, placed with it; the
 * backward nodes of a forward node ask for its device. */
static void
t_variable(void)
{
	Program p;
	CompileOptions co = {.until = "place"}; /* y is not fetched */
	const IrNode *g = NULL, *w = NULL, *y = NULL;

	ASSERT_EQ(jh_compile_src(&p, "cluster { ps = [\"localhost:1\"]; "
				 "worker = [\"localhost:2\"] }\n"
				 "device \"/job:ps\" { var w = [1.0, 2.0] }\n"
				 "device \"/job:worker\" {\n"
				 "    y = reduce_sum(w * w * 3.0)\n"
				 "    g = grad(y, w)\n}\n"
				 "session { initialize()\nprint run(g) }\n",
				 &co), 0);
	for (int i = 0; i < p.g.nodes.n; i++) {
		const IrNode *n = p.g.nodes.v[i];
		ASSERT(n->op != OP_grad);
		if (n->name && strcmp(n->name, "g") == 0)
			g = n;
		if (n->name && strcmp(n->name, "y") == 0)
			y = n;
		if (n->op == OP_variable)
			w = n;
	}
	ASSERT(g && w && y);
	ASSERT_EQ(g->op, OP_reshape);
	ASSERT_STREQ(w->dev.job, "ps");
	ASSERT(g->id > y->id + 3);
	/* the backward pass, between y and g, runs on the worker */
	for (int i = y->id + 1; i <= g->id; i++)
		ASSERT_STREQ(((IrNode *)p.g.nodes.v[i])->dev.job, "worker");
	arena_free(p.arena);
}

TEST_MAIN({"arith", t_arith}, {"pow", t_pow}, {"max_min", t_max_min},
	  {"where", t_where}, {"broadcast", t_broadcast},
	  {"reductions", t_reductions}, {"ties_and_zeros", t_ties_and_zeros},
	  {"softmax", t_softmax}, {"xent", t_xent}, {"matmul", t_matmul},
	  {"conv_pool", t_conv_pool},
		  {"gather_segment", t_gather_segment}, {"check_range", t_check_range},
	  {"shapes", t_shapes},
	  {"cast", t_cast}, {"chain", t_chain},
	  {"independent", t_independent}, {"variable", t_variable})
