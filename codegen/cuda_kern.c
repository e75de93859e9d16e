/*
 * codegen/cuda_kern.c: CUDA C for the GPU's ops (codegen/cuda.h):
 * elementwise ops and fused programs, makers, casts and data movement,
 * and the dispatch of cu_gen_node; the unit's prelude and its kernels'
 * list are codegen/cuda_prelude.c's.
 *
 * The prelude holds one `__device__ __forceinline__` function per
 * elementwise op and dtype, tfg_<op>_<b8|i32|i64|f32|f64>, and the casts
 * tfg_cvt_<from>_<to>, that the element programs here call, each what
 * codegen/cpu.c computes: integer / and %
 * are floor division and modulo that never trap (cg_int_divmod), integer
 * + - * and pow wrap (done in unsigned types: signed overflow is
 * undefined in C++), float % is NumPy's (float_mod), float -> int casts
 * saturate with NaN -> 0 (llvm.fptosi.sat), maximum and minimum are
 * llvm.maximum/minimum.  Float + - * / are the _rn intrinsics, which NVCC
 * never contracts into an FMA, so a fused a * b + c rounds twice as on
 * the CPU.  exp, log, tanh, pow are CUDA's libdevice functions (within
 * 1-2 ulp, as codegen/vmath.c is of the exact result).
 *
 * Every kernel is a function of device pointers whose sizes, strides and
 * constants are literals in its text, so nodes of one shape share one
 * kernel (cu_kernel keys kernels by their text).
 *
 * Loops over elements (Ew below: elementwise, fused, casts, copies) drop
 * axes of extent 1 and merge axes contiguous for every operand; an
 * operand is then flat (its offset is the element's index), a scalar
 * (loaded once) or general (offset from the index's coordinates:
 * divisions by constants).  When the output and every input are flat or
 * scalar, the loop takes 16-byte vectors (tfg_vec) where the pointers
 * are aligned (checked in the kernel) and the rest one element at a
 * time.  Indices are 32-bit when every offset fits.  Blocks of 256
 * threads, a grid-stride loop, at most 2^20 blocks.
 *
 * Reductions and softmax are codegen/cuda_reduce.c's; matmul is
 * codegen/cuda_mm.c's (cu_gen_node dispatches to both).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_int.h"

/* ------------------------------------------------------------- strings */

void
cu_printf(CuStr *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (s->n + (size_t)n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->n + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(s->p, cap);
		if (!p) {
			fprintf(stderr, "tfgc: error: out of memory\n");
			exit(1);
		}
		s->p = p;
		s->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
	va_end(ap);
	s->n += (size_t)n;
}

void
cu_puts(CuStr *s, const char *text)
{
	cu_printf(s, "%s", text);
}

void
cu_str_free(CuStr *s)
{
	free(s->p);
	memset(s, 0, sizeof *s);
}

/* -------------------------------------------------------------- dtypes */

const char *
cu_ctype(TfgDtype t)
{
	switch (t) {
	case TFG_BOOL: return "unsigned char";
	case TFG_U8: return "unsigned char";
	case TFG_I32: return "int";
	case TFG_I64: return "long long";
	case TFG_F32: return "float";
	default: return "double";
	}
}

/* The suffix of the prelude's functions. */
const char *
cu_sfx(TfgDtype t)
{
	switch (t) {
	case TFG_BOOL: return "b8";
	case TFG_U8: return "u8";
	case TFG_I32: return "i32";
	case TFG_I64: return "i64";
	case TFG_F32: return "f32";
	default: return "f64";
	}
}

int
cu_is_float(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

int
cu_dt_ok(TfgDtype t)
{
	return t == TFG_BOOL || t == TFG_U8 || t == TFG_I32 || t == TFG_I64 ||
	       t == TFG_F32 || t == TFG_F64;
}

int
cu_dt_size(TfgDtype t)
{
	return t == TFG_BOOL || t == TFG_U8 ? 1
	       : t == TFG_I32 || t == TFG_F32 ? 4 : 8;
}

/* A constant of dtype t: f for floats, i for the others; bit-exact
 * (hex floats; NaN and infinities by their bits). */
void
cu_put_lit(CuStr *s, TfgDtype t, double f, int64_t i)
{
	float x = (float)f;
	uint32_t u;
	uint64_t v;

	switch (t) {
	case TFG_F32:
		memcpy(&u, &x, 4);
		if (isfinite(x))
			cu_printf(s, "(%af)", (double)x);
		else
			cu_printf(s, "__int_as_float(0x%08" PRIx32 ")", u);
		break;
	case TFG_F64:
		memcpy(&v, &f, 8);
		if (isfinite(f))
			cu_printf(s, "(%a)", f);
		else
			cu_printf(s, "__longlong_as_double(0x%016" PRIx64
				  "LL)", v);
		break;
	case TFG_I32:
		if ((int32_t)i == INT32_MIN)
			cu_puts(s, "(-2147483647 - 1)");
		else
			cu_printf(s, "(%" PRId32 ")", (int32_t)i);
		break;
	case TFG_I64:
		if (i == INT64_MIN)
			cu_puts(s, "(-9223372036854775807LL - 1)");
		else
			cu_printf(s, "(%" PRId64 "LL)", i);
		break;
	case TFG_U8:
		cu_printf(s, "((unsigned char)%d)", (int)(uint8_t)i);
		break;
	default:
		cu_printf(s, "((unsigned char)%d)", i != 0);
		break;
	}
}

void
cu_row_major(const TfgShape *s, int64_t *st)
{
	int64_t m = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = m;
		m *= s->dims[k];
	}
}

/* Strides of shape s broadcast against shape to (0 on broadcast axes). */
void
cu_bcast_strides(const TfgShape *s, const TfgShape *to, int64_t *st)
{
	int64_t row[TFG_MAX_RANK];
	int lead = to->rank - s->rank;

	cu_row_major(s, row);
	for (int k = 0; k < to->rank; k++)
		st[k] = k < lead || s->dims[k - lead] == 1 ? 0 : row[k - lead];
}

int
cu_fail(const IrNode *n, const char *msg)
{
	fprintf(stderr, "tfgc: error: codegen: node '%s': %s\n",
		n->name ? n->name : "?", msg);
	return -1;
}

/* ---------------------------------------------------- element programs */

/* x (a C expression of dtype a) as dtype b. */
void
cu_put_cvt(CuStr *s, const char *x, TfgDtype a, TfgDtype b)
{
	if (a == b)
		cu_printf(s, "%s", x);
	else
		cu_printf(s, "tfg_cvt_%s_%s(%s)", cu_sfx(a), cu_sfx(b), x);
}

static int
is_compare(OpKind op)
{
	return (op_info[op].flags & OPF_BOOL) != 0;
}

/* Whether the prelude has op of result dtype t with operands it[]: one
 * tfg_<op>_<dtype> for each dtype stdlib/ops.def's types column lets
 * the op take (a comparison's of its operands, bool its result). */
static int
elem_ok(OpKind op, TfgDtype t, int nin, const TfgDtype *it)
{
	for (int k = 0; k < nin; k++)
		if (!cu_dt_ok(it[k]))
			return 0;
	if (!cu_dt_ok(t) || !(op_info[op].flags & OPF_ELEMWISE) ||
	    nin != op_info[op].nin)
		return 0;
	if (op == OP_cast || op == OP_where)
		return 1;
	if (is_compare(op))
		return t == TFG_BOOL && op_takes(op, it[0]);
	return op_takes(op, t);
}

/* One element of op (result dtype t) of operands v[] of dtypes it[], as
 * cg_elem_apply: arithmetic converts its operands to t, comparisons the
 * second to the first's dtype. */
static void
put_elem(CuStr *s, OpKind op, TfgDtype t, const TfgDtype *it,
	 char v[3][32])
{
	const char *name = op_info[op].name;

	switch (op) {
	case OP_cast:
		cu_put_cvt(s, v[0], it[0], t);
		return;
	case OP_where:
		cu_printf(s, "(%s != 0 ? ", v[0]);
		cu_put_cvt(s, v[1], it[1], t);
		cu_puts(s, " : ");
		cu_put_cvt(s, v[2], it[2], t);
		cu_puts(s, ")");
		return;
	default:
		break;
	}
	if (is_compare(op)) {
		cu_printf(s, "tfg_%s_%s(%s, ", name, cu_sfx(it[0]), v[0]);
		cu_put_cvt(s, v[1], it[1], it[0]);
		cu_puts(s, ")");
		return;
	}
	cu_printf(s, "tfg_%s_%s(", name, cu_sfx(t));
	for (int k = 0; k < op_info[op].nin; k++) {
		if (k)
			cu_puts(s, ", ");
		cu_put_cvt(s, v[k], it[k], t);
	}
	cu_puts(s, ")");
}

/* Whether every member of f is an op the prelude has. */
int
cu_fuse_ok(const IrFuse *f, int nin)
{
	if (!f || f->n < 1)
		return 0;
	for (int m = 0; m < f->n; m++) {
		const IrFuseOp *o = &f->ops[m];
		if (!elem_ok(o->op, o->dtype, o->nin, o->in_dt))
			return 0;
		for (int k = 0; k < o->nin; k++) {
			int32_t a = o->arg[k];
			if (a == IR_FUSE_ANCHOR)
				continue;
			if (a >= m || (a < 0 && -1 - a >= nin))
				return 0;
		}
	}
	return 1;
}

void
cu_fuse_code(CuStr *s, const IrFuse *f, const char *out,
	     const char *const *in, const char *anchor, const char *pfx)
{
	int next = 0, seen_anchor = 0;
	unsigned char *seen;

	for (int m = 0; m < f->n; m++)
		for (int k = 0; k < f->ops[m].nin; k++) {
			int32_t a = f->ops[m].arg[k];
			if (a < 0 && a != IR_FUSE_ANCHOR && -a > next)
				next = -a;
		}
	seen = calloc((size_t)next + 1, 1);
	for (int m = 0; m < f->n; m++) {
		const IrFuseOp *o = &f->ops[m];
		char v[3][32];
		for (int k = 0; k < o->nin; k++) {
			int32_t a = o->arg[k];
			if (a >= 0) {
				snprintf(v[k], sizeof v[k], "%sm%d", pfx, a);
			} else if (a == IR_FUSE_ANCHOR) {
				if (!seen_anchor)
					cu_printf(s, "const %s %sa = %s;\n",
						  cu_ctype(o->in_dt[k]), pfx,
						  anchor ? anchor : "0");
				seen_anchor = 1;
				snprintf(v[k], sizeof v[k], "%sa", pfx);
			} else {
				int e = -1 - a;
				if (!seen[e])
					cu_printf(s, "const %s %se%d = %s;\n",
						  cu_ctype(o->in_dt[k]), pfx, e,
						  in[e]);
				seen[e] = 1;
				snprintf(v[k], sizeof v[k], "%se%d", pfx, e);
			}
		}
		cu_printf(s, "const %s %sm%d = ", cu_ctype(o->dtype), pfx, m);
		put_elem(s, o->op, o->dtype, o->in_dt, v);
		cu_puts(s, ";\n");
	}
	cu_printf(s, "%s = %sm%d;\n", out, pfx, f->n - 1);
	free(seen);
}

/* --------------------------------------------------- loops of elements */

/* A loop over an index space: operand 0 is written, 1.. are read, each
 * at its element offset base + sum(coordinate * stride); the element's
 * value is program f's, whose input k is operand k + 1. */
typedef struct Ew {
	int rank;
	int64_t dim[TFG_MAX_RANK];
	int nop;                           /* operands, the output first */
	TfgDtype dt[CU_MAX_ARGS];
	int arg[CU_MAX_ARGS];              /* CuLaunch.arg of each */
	int64_t st[CU_MAX_ARGS][TFG_MAX_RANK];
	int64_t base[CU_MAX_ARGS];         /* element offset */
	const IrFuse *f;
	IrFuseOp one;                      /* f of a single op (ew_single) */
	IrFuse onef;
} Ew;

enum { K_FLAT, K_SCALAR, K_GEN };

static int64_t
ew_numel(const Ew *E)
{
	int64_t n = 1;
	for (int k = 0; k < E->rank; k++)
		n *= E->dim[k];
	return n;
}

/* Drops axes of extent 1, merges an axis into the next inner one where
 * every operand walks both as one. */
static void
ew_collapse(Ew *E)
{
	int r = 0;

	for (int k = 0; k < E->rank; k++) {
		if (E->dim[k] == 1)
			continue;
		E->dim[r] = E->dim[k];
		for (int o = 0; o < E->nop; o++)
			E->st[o][r] = E->st[o][k];
		r++;
	}
	E->rank = r;
	r = 0;
	for (int k = 0; k < E->rank; k++) {
		int merge = r > 0;
		for (int o = 0; o < E->nop && merge; o++)
			merge = E->st[o][r - 1] == E->st[o][k] * E->dim[k];
		if (merge) {
			E->dim[r - 1] *= E->dim[k];
			for (int o = 0; o < E->nop; o++)
				E->st[o][r - 1] = E->st[o][k];
			continue;
		}
		E->dim[r] = E->dim[k];
		for (int o = 0; o < E->nop; o++)
			E->st[o][r] = E->st[o][k];
		r++;
	}
	E->rank = r;
}

static int
ew_kind(const Ew *E, int o)
{
	int64_t m = 1;
	int flat = 1, zero = 1;
	for (int k = E->rank - 1; k >= 0; k--) {
		flat &= E->st[o][k] == m;
		zero &= E->st[o][k] == 0;
		m *= E->dim[k];
	}
	return zero ? K_SCALAR : flat ? K_FLAT : K_GEN;
}

/* The largest offset operand o reaches from its base. */
static int64_t
ew_span(const Ew *E, int o)
{
	int64_t m = 0;
	for (int k = 0; k < E->rank; k++)
		m += (E->dim[k] - 1) * E->st[o][k];
	return m;
}

/* The offset of index `i` (flat over dims[0..rank)) along strides st. */
void
cu_put_index(CuStr *s, int rank, const int64_t *dim, const int64_t *st,
	  const char *i)
{
	int64_t inner = 1;
	int any = 0;

	cu_puts(s, "(");
	for (int k = rank - 1; k >= 0; k--) {
		if (st[k] != 0) {
			cu_printf(s, "%s(%s", any ? " + " : "", i);
			if (inner > 1)
				cu_printf(s, " / %" PRId64, inner);
			if (k > 0)
				cu_printf(s, " %% %" PRId64, dim[k]);
			cu_puts(s, ")");
			if (st[k] != 1)
				cu_printf(s, " * %" PRId64, st[k]);
			any = 1;
		}
		inner *= dim[k];
	}
	cu_printf(s, "%s)", any ? "" : "0");
}

/* The loop of E inside a kernel whose parameter of launch argument a is
 * p<par[a]>; index type I, t0 and step declared by the caller.  Returns
 * the threads it can use (elements, or vectors). */
static int64_t
ew_section(CuStr *s, const Ew *E, const int *par)
{
	int kind[CU_MAX_ARGS], vec = E->rank > 0, V = 1, maxsz = 1;
	char in[CU_MAX_ARGS][128];
	const char *ins[CU_MAX_ARGS];
	int64_t n = ew_numel(E);
	const char *t0 = cu_ctype(E->dt[0]);

	for (int o = 0; o < E->nop; o++) {
		kind[o] = E->rank == 0 ? K_FLAT : ew_kind(E, o);
		if (kind[o] == K_GEN || (o == 0 && kind[o] != K_FLAT))
			vec = 0;
		if (kind[o] == K_FLAT && cu_dt_size(E->dt[o]) > maxsz)
			maxsz = cu_dt_size(E->dt[o]);
	}
	V = 16 / maxsz;
	if (n < 2 * V)
		vec = 0;
	cu_puts(s, "\t{\n");
	cu_printf(s, "\t\t%s *__restrict__ o = (%s *)p%d + %" PRId64 ";\n",
		  t0, t0, par[0], E->base[0]);
	for (int o = 1; o < E->nop; o++) {
		const char *t = cu_ctype(E->dt[o]);
		cu_printf(s, "\t\tconst %s *__restrict__ a%d = (const %s *)p%d"
			  " + %" PRId64 ";\n", t, o, t, par[o], E->base[o]);
		if (kind[o] == K_SCALAR)
			cu_printf(s, "\t\tconst %s s%d = a%d[0];\n", t, o, o);
	}
	cu_puts(s, "\t\tI i = t0;\n");
	if (vec) {
		int64_t nv = n / V;
		cu_printf(s, "\t\tif (((unsigned long long)o & %d) == 0", 
			  V * cu_dt_size(E->dt[0]) - 1);
		for (int o = 1; o < E->nop; o++)
			if (kind[o] == K_FLAT)
				cu_printf(s, " &&\n\t\t    ((unsigned long long)a%d"
					  " & %d) == 0", o,
					  V * cu_dt_size(E->dt[o]) - 1);
		cu_puts(s, ") {\n");
		cu_printf(s, "\t\t\tfor (I v = t0; v < (I)%" PRId64
			  "; v += step) {\n", nv);
		for (int o = 1; o < E->nop; o++) {
			if (kind[o] != K_FLAT) {
				snprintf(in[o], sizeof in[o], "s%d", o);
				continue;
			}
			cu_printf(s, "\t\t\t\tconst tfg_vec<%s, %d> x%d = "
				  "*(const tfg_vec<%s, %d> *)(a%d + v * %d);\n",
				  cu_ctype(E->dt[o]), V, o, cu_ctype(E->dt[o]),
				  V, o, V);
			snprintf(in[o], sizeof in[o], "x%d.v[j]", o);
		}
		for (int o = 1; o < E->nop; o++)
			ins[o - 1] = in[o];
		cu_printf(s, "\t\t\t\ttfg_vec<%s, %d> y;\n", t0, V);
		cu_printf(s, "#pragma unroll\n\t\t\t\tfor (int j = 0; j < %d; "
			  "j++) {\n", V);
		cu_printf(s, "%s r;\n", t0);
		cu_fuse_code(s, E->f, "r", ins, NULL, "f_");
		cu_puts(s, "y.v[j] = r;\n\t\t\t\t}\n");
		cu_printf(s, "\t\t\t\t*(tfg_vec<%s, %d> *)(o + v * %d) = y;\n",
			  t0, V, V);
		cu_printf(s, "\t\t\t}\n\t\t\ti = (I)%" PRId64 " + t0;\n\t\t}\n",
			  nv * V);
	}
	cu_printf(s, "\t\tfor (; i < (I)%" PRId64 "; i += step) {\n", n);
	for (int o = 1; o < E->nop; o++) {
		CuStr x = {0};
		if (kind[o] == K_SCALAR) {
			snprintf(in[o], sizeof in[o], "s%d", o);
		} else if (kind[o] == K_FLAT) {
			snprintf(in[o], sizeof in[o], "a%d[i]", o);
		} else {
			cu_put_index(&x, E->rank, E->dim, E->st[o], "i");
			snprintf(in[o], sizeof in[o], "a%d[%s]", o, x.p);
			if (x.n >= sizeof in[o] - 8) {
				/* long: a local of its own */
				cu_printf(s, "\t\t\tconst I q%d = %s;\n", o,
					  x.p);
				snprintf(in[o], sizeof in[o], "a%d[q%d]", o,
					 o);
			}
		}
		cu_str_free(&x);
		ins[o - 1] = in[o];
	}
	cu_printf(s, "%s r;\n", t0);
	cu_fuse_code(s, E->f, "r", ins, NULL, "f_");
	if (kind[0] == K_GEN) {
		cu_puts(s, "o[");
		cu_put_index(s, E->rank, E->dim, E->st[0], "i");
		cu_puts(s, "] = r;\n");
	} else {
		cu_printf(s, "o[%s] = r;\n", kind[0] == K_SCALAR ? "0" : "i");
	}
	cu_puts(s, "\t\t}\n\t}\n");
	return vec ? n / V : n;
}

/* Whether E's offsets all fit 31 bits. */
static int
ew_small(const Ew *E)
{
	if (ew_numel(E) >= INT32_MAX - CU_BLOCK * (int64_t)CU_MAX_GRID)
		return 0;
	for (int o = 0; o < E->nop; o++)
		if (ew_span(E, o) >= INT32_MAX)
			return 0;
	return 1;
}

uint32_t
cu_grid_for(int64_t work, int64_t per_block)
{
	int64_t b = (work + per_block - 1) / per_block;
	return (uint32_t)(b < 1 ? 1 : b > CU_MAX_GRID ? CU_MAX_GRID : b);
}

void
cu_set_launch(CuLaunch *l, int kern, uint32_t gx, uint32_t bx, uint32_t by)
{
	memset(l, 0, sizeof *l);
	l->kernel = kern;
	l->grid[0] = gx;
	l->grid[1] = l->grid[2] = 1;
	l->block[0] = bx;
	l->block[1] = by;
	l->block[2] = 1;
}

/* One kernel, one launch, of the loops E[0..ne) (their outputs are all
 * the node's value; none empty). */
static int
ew_emit(CuGen *g, Ew *E, int ne, CuLaunch *l)
{
	CuStr s = {0};
	int par[CU_MAX_ARGS * 2], args[CU_MAX_ARGS], nargs = 0, small = 1;
	int64_t work = 1, w;

	for (int e = 0; e < ne; e++) {
		ew_collapse(&E[e]);
		small &= ew_small(&E[e]);
	}
	cu_puts(&s, "extern \"C\" __global__ void __launch_bounds__(256)\n"
		"@K(");
	for (int e = 0; e < ne; e++)
		for (int o = 0; o < E[e].nop; o++) {
			int a = E[e].arg[o], j = 0;
			while (j < nargs && args[j] != a)
				j++;
			if (j == nargs) {
				if (nargs == CU_MAX_ARGS) {
					cu_str_free(&s);
					return -1;
				}
				cu_printf(&s, "%svoid *p%d", nargs ? ", " : "",
					  nargs);
				args[nargs++] = a;
			}
		}
	cu_puts(&s, ")\n{\n");
	cu_printf(&s, "\ttypedef %s I;\n", small ? "unsigned" : "long long");
	cu_puts(&s, "\tconst I t0 = (I)blockIdx.x * 256 + threadIdx.x;\n"
		"\tconst I step = (I)gridDim.x * 256;\n");
	for (int e = 0; e < ne; e++) {
		for (int o = 0; o < E[e].nop; o++)
			for (int j = 0; j < nargs; j++)
				if (args[j] == E[e].arg[o])
					par[o] = j;
		if ((w = ew_section(&s, &E[e], par)) > work)
			work = w;
	}
	cu_puts(&s, "}\n");
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(work, CU_BLOCK), CU_BLOCK, 1);
	l->nargs = nargs;
	memcpy(l->arg, args, sizeof args[0] * nargs);
	cu_str_free(&s);
	return 1;
}

/* E as one op of n (result n->dtype) over n's shape, input k broadcast. */
static void
ew_single(Ew *E, const IrNode *n, OpKind op)
{
	memset(E, 0, sizeof *E);
	E->rank = n->shape.rank;
	memcpy(E->dim, n->shape.dims, sizeof E->dim);
	E->nop = n->nin + 1;
	E->dt[0] = n->dtype;
	E->arg[0] = CU_ARG_OUT;
	cu_row_major(&n->shape, E->st[0]);
	E->one.op = op;
	E->one.dtype = n->dtype;
	E->one.shape = n->shape;
	E->one.nin = n->nin;
	for (int k = 0; k < n->nin; k++) {
		E->dt[k + 1] = n->in[k]->dtype;
		E->arg[k + 1] = k;
		cu_bcast_strides(&n->in[k]->shape, &n->shape, E->st[k + 1]);
		if (k < 3) { /* a single op's operands (gen_fused: none) */
			E->one.arg[k] = IR_FUSE_IN(k);
			E->one.in_dt[k] = n->in[k]->dtype;
		}
	}
	E->onef.n = 1;
	E->onef.ops = &E->one;
	E->onef.shape = n->shape;
	E->f = &E->onef;
}

/* A copy: operand 1 (launch argument k, dtype it) to operand 0. */
static void
ew_copy(Ew *E, const IrNode *n, int k, TfgDtype it)
{
	memset(E, 0, sizeof *E);
	E->nop = 2;
	E->dt[0] = n->dtype;
	E->dt[1] = it;
	E->arg[0] = CU_ARG_OUT;
	E->arg[1] = k;
	E->one.op = OP_cast;
	E->one.dtype = n->dtype;
	E->one.nin = 1;
	E->one.arg[0] = IR_FUSE_IN(0);
	E->one.in_dt[0] = it;
	E->onef.n = 1;
	E->onef.ops = &E->one;
	E->f = &E->onef;
}

static int
shape_ok(const IrNode *n)
{
	for (int k = 0; k < n->shape.rank; k++)
		if (n->shape.dims[k] < 0)
			return 0;
	return n->shape.rank <= TFG_MAX_RANK;
}

int
cu_gen_elem(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	Ew E;
	TfgDtype it[3];

	(void)max;
	if (n->nin != op_info[n->op].nin || n->nin > 3)
		return cu_fail(n, "wrong number of inputs");
	for (int k = 0; k < n->nin; k++) {
		if (n->in[k]->shape.rank > n->shape.rank)
			return cu_fail(n, "input rank above output rank");
		it[k] = n->in[k]->dtype;
	}
	if (!elem_ok(n->op, n->dtype, n->nin, it))
		return cu_fail(n, "no GPU kernel for this op and dtype");
	if (tfg_shape_numel(&n->shape) == 0)
		return 0;
	ew_single(&E, n, n->op);
	return ew_emit(g, &E, 1, l);
}

int
cu_gen_fused(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	Ew E;

	(void)max;
	if (!cu_fuse_ok(n->fuse, n->nin) ||
	    n->fuse->ops[n->fuse->n - 1].dtype != n->dtype)
		return cu_fail(n, "fused node without a program the GPU runs");
	if (n->nin + 1 > CU_MAX_ARGS)
		return cu_fail(n, "fused node with too many inputs");
	for (int k = 0; k < n->nin; k++)
		if (n->in[k]->shape.rank > n->shape.rank)
			return cu_fail(n, "input rank above output rank");
	if (tfg_shape_numel(&n->shape) == 0)
		return 0;
	ew_single(&E, n, OP_add);
	E.f = n->fuse;
	return ew_emit(g, &E, 1, l);
}

/* ------------------------------------------------------ data movement */

int
cu_gen_transpose(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	int64_t ist[TFG_MAX_RANK];
	Ew E;

	(void)max;
	if (n->nin != 1 || n->in[0]->shape.rank != n->shape.rank)
		return cu_fail(n, "transpose needs one input of its rank");
	ew_copy(&E, n, 0, n->in[0]->dtype);
	cu_row_major(&n->in[0]->shape, ist);
	E.rank = n->shape.rank;
	memcpy(E.dim, n->shape.dims, sizeof E.dim);
	cu_row_major(&n->shape, E.st[0]);
	for (int k = 0; k < E.rank; k++) {
		int pk = n->ax->perm[k];

		if (pk < 0 || pk >= E.rank ||
		    n->in[0]->shape.dims[pk] != n->shape.dims[k])
			return cu_fail(n, "transpose perm does not match");
		E.st[1][k] = ist[pk];
	}
	if (tfg_shape_numel(&n->shape) == 0)
		return 0;
	return ew_emit(g, &E, 1, l);
}

int
cu_gen_reshape(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	Ew E;
	int64_t N = tfg_shape_numel(&n->shape);

	(void)max;
	if (n->nin != 1 || tfg_shape_numel(&n->in[0]->shape) != N)
		return cu_fail(n, "reshape changes the element count");
	if (N == 0)
		return 0;
	ew_copy(&E, n, 0, n->in[0]->dtype);
	E.rank = 1;
	E.dim[0] = N;
	E.st[0][0] = E.st[1][0] = 1;
	return ew_emit(g, &E, 1, l);
}

/* The input's index space over size[] (squeezed axes have size 1). */
int
cu_gen_slice(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	int64_t ist[TFG_MAX_RANK], m = 1;
	Ew E;

	(void)max;
	if (n->nin != 1)
		return cu_fail(n, "slice needs one input");
	const IrNode *in = n->in[0];
	ew_copy(&E, n, 0, in->dtype);
	cu_row_major(&in->shape, ist);
	E.rank = in->shape.rank;
	for (int k = in->shape.rank - 1; k >= 0; k--) {
		int64_t b = n->ax->begin[k], z = n->ax->size[k];
		if (b < 0 || z < 0 || b + z > in->shape.dims[k] ||
		    (((n->ax->squeeze >> k) & 1) && z != 1))
			return cu_fail(n, "slice out of the input's bounds");
		E.dim[k] = z;
		E.st[0][k] = m;
		E.st[1][k] = ist[k];
		E.base[1] += b * ist[k];
		m *= z;
	}
	if (m != tfg_shape_numel(&n->shape))
		return cu_fail(n, "slice output shape does not match sizes");
	if (m == 0)
		return 0;
	return ew_emit(g, &E, 1, l);
}

/* concat (stack = 0) or stack: input i copied to its place on the axis;
 * up to CU_MAX_ARGS - 1 inputs a kernel, one loop each. */
static int
gen_join(CuGen *g, const IrNode *n, int stack, CuLaunch *l, int max)
{
	int64_t ost[TFG_MAX_RANK], pos = 0;
	int ax = n->axis, nl = 0, ne = 0;
	Ew *E;

	if (n->nin < 1 || ax < 0 || ax >= n->shape.rank)
		return cu_fail(n, "join needs inputs and an axis");
	E = calloc((size_t)n->nin, sizeof *E);
	if (!E)
		return cu_fail(n, "out of memory");
	cu_row_major(&n->shape, ost);
	for (int i = 0; i < n->nin; i++) {
		const IrNode *in = n->in[i];
		if (in->dtype != n->dtype ||
		    in->shape.rank != n->shape.rank - stack) {
			free(E);
			return cu_fail(n, "join input does not match");
		}
		if (tfg_shape_numel(&in->shape) > 0) {
			Ew *e = &E[ne++];
			ew_copy(e, n, i, in->dtype);
			e->rank = in->shape.rank;
			memcpy(e->dim, in->shape.dims, sizeof e->dim);
			cu_row_major(&in->shape, e->st[1]);
			for (int k = 0; k < e->rank; k++)
				e->st[0][k] = ost[stack && k >= ax ? k + 1 : k];
			e->base[0] = pos * ost[ax];
		}
		pos += stack ? 1 : in->shape.dims[ax];
	}
	if (pos != n->shape.dims[ax]) {
		free(E);
		return cu_fail(n, "join inputs do not fill the axis");
	}
	for (int e = 0; e < ne; e += CU_MAX_ARGS - 1) {
		int k = ne - e < CU_MAX_ARGS - 1 ? ne - e : CU_MAX_ARGS - 1;
		if (nl == max) {
			free(E);
			return cu_fail(n, "join of too many inputs");
		}
		/* the Ew's are copied: the text keeps only their values */
		if (ew_emit(g, &E[e], k, &l[nl++]) < 0) {
			free(E);
			return cu_fail(n, "join kernel too large");
		}
	}
	free(E);
	return nl;
}

/* ------------------------------------------------------------- makers */

/* A kernel of a grid-stride loop over n's elements: `pre` before it (the
 * input, if any, is `a`), `body` per element i (an I), storing o[i]. */
static int
gen_flat(CuGen *g, const IrNode *n, const char *pre, const char *body,
	 CuLaunch *l)
{
	int64_t N = tfg_shape_numel(&n->shape);
	const char *t = cu_ctype(n->dtype);
	CuStr s = {0};

	if (N == 0)
		return 0;
	cu_printf(&s, "extern \"C\" __global__ void __launch_bounds__(256)\n"
		  "@K(void *p0%s)\n{\n", n->nin ? ", void *p1" : "");
	cu_printf(&s, "\ttypedef %s I;\n", N < INT32_MAX - CU_BLOCK *
		  (int64_t)CU_MAX_GRID ? "unsigned" : "long long");
	cu_printf(&s, "\t%s *__restrict__ o = (%s *)p0;\n", t, t);
	if (n->nin)
		cu_printf(&s, "\tconst %s *__restrict__ a = (const %s *)p1;\n",
			  cu_ctype(n->in[0]->dtype), cu_ctype(n->in[0]->dtype));
	cu_puts(&s, pre);
	cu_printf(&s, "\tfor (I i = (I)blockIdx.x * 256 + threadIdx.x; "
		  "i < (I)%" PRId64 "; i += (I)gridDim.x * 256) {\n", N);
	cu_puts(&s, body);
	cu_puts(&s, "\t}\n}\n");
	cu_set_launch(l, cu_kernel(g, s.p), cu_grid_for(N, CU_BLOCK), CU_BLOCK, 1);
	l->nargs = 1 + (n->nin > 0);
	l->arg[0] = CU_ARG_OUT;
	l->arg[1] = 0;
	cu_str_free(&s);
	return 1;
}

/* m's number k as a literal of n's dtype (zeros, ones: no numbers). */
static void
put_make(CuStr *s, const IrNode *n, int k)
{
	const IrMake *m = n->make;
	int one = n->op == OP_ones || n->op == OP_ones_like;
	if (m)
		cu_put_lit(s, n->dtype, m->f[k], m->i[k]);
	else
		cu_put_lit(s, n->dtype, one, one);
}

int
cu_gen_fill(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	CuStr b = {0};
	int rc;

	(void)max;
	if (!n->make && n->op != OP_zeros && n->op != OP_ones)
		return cu_fail(n, "maker without its arguments");
	if (n->nin == 1) { /* fill(shape, scalar tensor) */
		Ew E;
		if (n->in[0]->dtype != n->dtype)
			return cu_fail(n, "fill value of another dtype");
		if (tfg_shape_numel(&n->shape) == 0)
			return 0;
		ew_copy(&E, n, 0, n->in[0]->dtype);
		E.rank = n->shape.rank;
		memcpy(E.dim, n->shape.dims, sizeof E.dim);
		cu_row_major(&n->shape, E.st[0]);
		return ew_emit(g, &E, 1, l);
	}
	if (n->nin != 0)
		return cu_fail(n, "fill takes one value");
	cu_puts(&b, "\t\to[i] = ");
	put_make(&b, n, 0);
	cu_puts(&b, ";\n");
	rc = gen_flat(g, n, "", b.p, l);
	cu_str_free(&b);
	return rc;
}

/* start + i * delta: in f64 then rounded for floats, wrapping in i64
 * for integers (body_range). */
int
cu_gen_range(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	CuStr b = {0}, x = {0};
	const IrMake *m = n->make;
	int rc;

	(void)max;
	if (!m || n->nin != 0)
		return cu_fail(n, "maker without its arguments");
	if (cu_is_float(n->dtype)) {
		cu_puts(&x, "__dadd_rn(");
		cu_put_lit(&x, TFG_F64, m->f[0], 0);
		cu_puts(&x, ", __dmul_rn((double)(unsigned long long)i, ");
		cu_put_lit(&x, TFG_F64, m->f[1], 0);
		cu_puts(&x, "))");
		cu_puts(&b, "\t\to[i] = ");
		cu_put_cvt(&b, x.p, TFG_F64, n->dtype);
	} else {
		cu_printf(&x, "(long long)((unsigned long long)%" PRId64
			  "LL + (unsigned long long)i * (unsigned long long)%"
			  PRId64 "LL)", m->i[0], m->i[1]);
		cu_puts(&b, "\t\to[i] = ");
		cu_put_cvt(&b, x.p, TFG_I64, n->dtype);
	}
	cu_puts(&b, ";\n");
	rc = gen_flat(g, n, "", b.p, l);
	cu_str_free(&b);
	cu_str_free(&x);
	return rc;
}

/* on where the index (as i64) equals the position on the depth axis. */
int
cu_gen_one_hot(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	CuStr b = {0};
	int64_t inner = 1, depth;
	int rc, ax;
	char x[160];

	(void)max;
	if (n->nin != 1 || !n->make ||
	    n->shape.rank != n->in[0]->shape.rank + 1 || n->make->axis < 0 ||
	    n->make->axis >= n->shape.rank ||
	    (n->in[0]->dtype != TFG_I32 && n->in[0]->dtype != TFG_I64 &&
	     n->in[0]->dtype != TFG_U8))
		return cu_fail(n, "one_hot: malformed node");
	ax = n->make->axis;
	depth = n->shape.dims[ax];
	for (int k = ax + 1; k < n->shape.rank; k++)
		inner *= n->shape.dims[k];
	snprintf(x, sizeof x, "a[i / %" PRId64 " * %" PRId64 " + i %% %"
		 PRId64 "]", inner * depth, inner, inner);
	cu_puts(&b, "\t\tconst long long x = ");
	cu_put_cvt(&b, x, n->in[0]->dtype, TFG_I64);
	cu_printf(&b, ";\n\t\to[i] = x == (long long)(i / %" PRId64 " %% %"
		  PRId64 ") ? ", inner, depth);
	cu_put_lit(&b, n->dtype, n->make->f[0], n->make->i[0]);
	cu_puts(&b, " : ");
	cu_put_lit(&b, n->dtype, n->make->f[1], n->make->i[1]);
	cu_puts(&b, ";\n");
	rc = gen_flat(g, n, "", b.p, l);
	cu_str_free(&b);
	return rc;
}

/* Philox of counter (i, stream, draw) under the seed (body_random). */
int
cu_gen_random(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	CuStr b = {0}, pre = {0};
	const IrMake *m = n->make;
	TfgDtype t = n->dtype;
	int rc;

	(void)max;
	if (!m || n->nin > 1 || (n->nin == 1 && n->in[0]->dtype != TFG_I64) ||
	    t == TFG_BOOL || (n->op == OP_random_normal && !cu_is_float(t)))
		return cu_fail(n, "random maker: malformed node");
	cu_printf(&pre, "\tconst unsigned draw = %s;\n",
		  n->nin ? "(unsigned)a[0]" : "0u");
	if (m->first) /* a shard's rows of the whole maker's numbers */
		cu_printf(&b, "\t\tconst unsigned long long c = (unsigned "
			  "long long)i + %" PRId64 "ull;\n\t\tunsigned w[4] = "
			  "{(unsigned)c, (unsigned)(c >> 32), %" PRIu32
			  "u, draw};\n", m->first, m->stream);
	else
		cu_printf(&b, "\t\tunsigned w[4] = {(unsigned)(unsigned long "
			  "long)i, (unsigned)((unsigned long long)i >> 32), %"
			  PRIu32 "u, draw};\n", m->stream);
	cu_printf(&b, "\t\ttfg_philox(w, %" PRIu32 "u, %" PRIu32 "u);\n",
		  (uint32_t)m->seed, (uint32_t)(m->seed >> 32));
	if (n->op == OP_random_normal) {
		/* Box-Muller in f64: u1 in (0, 1] */
		cu_printf(&b, "\t\tconst double u1 = tfg_unit_%s(w[0], w[1], 1)"
			  ";\n\t\tconst double u2 = tfg_unit_%s(w[2], w[3], 0)"
			  ";\n", cu_sfx(t), cu_sfx(t));
		cu_puts(&b, "\t\tconst double r = sqrt(__dmul_rn(log(u1), "
			"-2.0));\n\t\tconst double z = __dmul_rn(__dmul_rn(r, "
			"cos(__dmul_rn(u2, 0x1.921fb54442d18p+2))), ");
		cu_put_lit(&b, TFG_F64, m->f[1], 0);
		cu_puts(&b, ");\n\t\to[i] = ");
		CuStr v = {0};
		cu_puts(&v, "__dadd_rn(");
		cu_put_lit(&v, TFG_F64, m->f[0], 0);
		cu_puts(&v, ", z)");
		cu_put_cvt(&b, v.p, TFG_F64, t);
		cu_str_free(&v);
		cu_puts(&b, ";\n");
	} else if (cu_is_float(t)) {
		/* min + (max - min) * u, in t */
		cu_printf(&b, "\t\to[i] = tfg_add_%s(", cu_sfx(t));
		cu_put_lit(&b, t, m->f[0], 0);
		cu_printf(&b, ", tfg_mul_%s(tfg_sub_%s(", cu_sfx(t), cu_sfx(t));
		cu_put_lit(&b, t, m->f[1], 0);
		cu_puts(&b, ", ");
		cu_put_lit(&b, t, m->f[0], 0);
		cu_printf(&b, "), tfg_unit_%s(w[0], w[1], 0)));\n", cu_sfx(t));
	} else if (t == TFG_I32) {
		/* min + bits mod (max - min), unsigned, wrapping */
		uint32_t span = (uint32_t)m->i[1] - (uint32_t)m->i[0];
		cu_printf(&b, "\t\to[i] = (int)((unsigned)%" PRIu32 "u + w[0] "
			  "%% %" PRIu32 "u);\n", (uint32_t)m->i[0],
			  span ? span : 1u);
	} else {
		uint64_t span = (uint64_t)m->i[1] - (uint64_t)m->i[0];
		cu_printf(&b, "\t\to[i] = (long long)(%" PRIu64 "ull + "
			  "((unsigned long long)w[0] << 32 | w[1]) %% %" PRIu64
			  "ull);\n", (uint64_t)m->i[0], span ? span : 1u);
	}
	rc = gen_flat(g, n, pre.p, b.p, l);
	cu_str_free(&b);
	cu_str_free(&pre);
	return rc;
}

/* ------------------------------------------------------------ dispatch */

size_t
cu_scratch_bytes(const IrNode *n)
{
	if (n->op == OP_matmul)
		return cu_matmul_scratch(n);
	return cu_reduce_scratch(n);
}

/* An op that runs in the task's host memory (stdlib/ops.def's gpu
 * column: cu_host); placement never puts one on a GPU. */
int
cu_host(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	(void)g;
	(void)l;
	(void)max;
	return cu_fail(n, "op runs in host memory, not on a GPU");
}

/* An op without a kernel of its own (cu_none): codegen/cuda.c makes a
 * constant a global and a copy a transfer; grad is expanded before. */
int
cu_none(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	(void)g;
	(void)l;
	(void)max;
	return cu_fail(n, "op has no GPU kernel");
}

int
cu_gen_concat(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	return gen_join(g, n, 0, l, max);
}

int
cu_gen_stack(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	return gen_join(g, n, 1, l, max);
}

/* The generator of every op: stdlib/ops.def's gpu column. */
static CuGenFn *const cu_gen[OP__COUNT] = {
#define OP(name, nin, nout, flags, attrs, types, cost, fold, grad, cpu, gpu) \
	[OP_##name] = gpu,
#include "stdlib/ops.def"
};

int
cu_has_kernel(OpKind op)
{
	return (unsigned)op < OP__COUNT && cu_gen[op] != cu_host;
}

int
cu_gen_node(CuGen *g, const IrNode *n, CuLaunch *l, int max)
{
	if (max < 1)
		return cu_fail(n, "no room for a launch");
	if (!shape_ok(n) || !cu_dt_ok(n->dtype))
		return cu_fail(n, "no GPU kernel for this dtype or shape");
	for (int k = 0; k < n->nin; k++)
		if (!cu_dt_ok(n->in[k]->dtype))
			return cu_fail(n, "no GPU kernel for an input's dtype");
	return cu_gen[n->op](g, n, l, max);
}
