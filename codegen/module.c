/*
 * codegen/module.c: the LLVM module of a task, for every backend: one
 * function per run signature,
 *
 *     i32 @tfg_part_<s>(ptr %ctx, ptr align 64 %arena)
 *
 * its arena's slots laid out (codegen/memplan.c), and each node handed
 * to the backend of its device through the backend table: the CPU's
 * (codegen/cpu*.c, ops.def's cpu column) and the GPU's (codegen/cuda.c,
 * which also makes every copy between host and GPU memory).  No backend
 * file calls another: both call the helpers here (cg_buf, cg_fail,
 * cg_cvt, ...), and this file calls them only through CgBackend.
 * --trace marks and --check-numerics checks go around every node here.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_int.h"

/* The backend of each device kind; a copy is the GPU backend's, which
 * moves values between host and device memory (and host to host, for a
 * GPU node placed on the CPU). */
static const CgBackend *const backends[] = {
	[DEV_UNSET] = &cg_cpu_backend,
	[DEV_CPU] = &cg_cpu_backend,
	[DEV_GPU] = &cg_cuda_backend,
};
static const CgBackend *const all_backends[] = {&cg_cpu_backend,
						&cg_cuda_backend};
enum { NBACKEND = sizeof all_backends / sizeof all_backends[0] };

static const CgBackend *
backend_of(const IrNode *n)
{
	if (n->op == OP_copy)
		return backends[DEV_GPU];
	return backends[n->dev.kind == DEV_GPU ? DEV_GPU : DEV_CPU];
}

/* ------------------------------------------------ shared helpers */

int
cg_is_float(TfgDtype t)
{
	return t == TFG_F32 || t == TFG_F64;
}

/* bool and u8: i8 in LLVM, zero-extended, compared and divided as
 * unsigned. */
int
cg_is_unsigned(TfgDtype t)
{
	return t == TFG_BOOL || t == TFG_U8;
}

LLVMTypeRef
cg_elty(CgCtx *C, TfgDtype t)
{
	switch (t) {
	case TFG_BOOL: return C->i8;
	case TFG_U8: return C->i8;
	case TFG_I32: return C->i32;
	case TFG_I64: return C->i64;
	case TFG_F32: return C->f32;
	default: return C->f64;
	}
}

LLVMValueRef
cg_i64c(CgCtx *C, int64_t v)
{
	return LLVMConstInt(C->i64, (unsigned long long)v, 1);
}

int
cg_fail(CgCtx *C, const IrNode *n, const char *msg)
{
	fprintf(stderr, "tfgc: error: codegen: node '%s': %s\n",
		n->name ? n->name : "?", msg);
	C->err = 1;
	return -1;
}

/* The buffer (a pointer) holding node n's value in the current part: n is
 * the node being emitted or one before it (inputs are usually recent, so
 * search backwards). */
LLVMValueRef
cg_buf(CgCtx *C, const IrNode *n)
{
	for (int i = C->cur; i >= 0; i--)
		if (C->part->nodes[i] == n && C->val[i])
			return C->val[i];
	cg_fail(C, n, "input not computed before its use in the part");
	return LLVMConstNull(C->ptr);
}

LLVMValueRef
cg_load_at(CgCtx *C, TfgDtype t, LLVMValueRef base, LLVMValueRef off)
{
	LLVMTypeRef ty = cg_elty(C, t);
	LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, ty, base, &off, 1, "");
	return LLVMBuildLoad2(C->b, ty, p, "");
}

void
cg_store_at(CgCtx *C, TfgDtype t, LLVMValueRef base, LLVMValueRef off,
	 LLVMValueRef v)
{
	LLVMTypeRef ty = cg_elty(C, t);
	LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, ty, base, &off, 1, "");
	LLVMBuildStore(C->b, v, p);
}

/* v of dtype `from` as dtype `to` (NumPy's astype). */
LLVMValueRef
cg_cvt(CgCtx *C, LLVMValueRef v, TfgDtype from, TfgDtype to)
{
	LLVMTypeRef ty = cg_elty(C, to);
	if (from == to)
		return v;
	if (to == TFG_BOOL) {
		LLVMValueRef z = LLVMConstNull(cg_elty(C, from));
		LLVMValueRef nz = cg_is_float(from)
		    ? LLVMBuildFCmp(C->b, LLVMRealUNE, v, z, "")
		    : LLVMBuildICmp(C->b, LLVMIntNE, v, z, "");
		return LLVMBuildZExt(C->b, nz, ty, "");
	}
	if (cg_is_float(from) && cg_is_float(to))
		return LLVMBuildFPCast(C->b, v, ty, "");
	if (cg_is_float(from)) {
		/* saturating: NaN -> 0, out of range -> MIN/MAX; no poison */
		LLVMTypeRef tys[2] = {ty, cg_elty(C, from)};
		unsigned id = LLVMLookupIntrinsicID(to == TFG_U8
						    ? "llvm.fptoui.sat"
						    : "llvm.fptosi.sat", 15);
		LLVMValueRef f = LLVMGetIntrinsicDeclaration(C->m, id, tys, 2);
		return LLVMBuildCall2(C->b, LLVMIntrinsicGetType(C->c, id, tys, 2),
				      f, &v, 1, "");
	}
	if (cg_is_float(to))
		return cg_is_unsigned(from) ? LLVMBuildUIToFP(C->b, v, ty, "")
					    : LLVMBuildSIToFP(C->b, v, ty, "");
	return LLVMBuildIntCast2(C->b, v, ty, !cg_is_unsigned(from), "");
}

/* Returns rc from the part function if it is not 0. */
void
cg_check_rc(CgCtx *C, LLVMValueRef rc)
{
	LLVMValueRef bad = LLVMBuildICmp(C->b, LLVMIntNE, rc,
					 LLVMConstNull(C->i32), "");
	LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(C->c, C->fn,
							       "fail");
	LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(C->c, C->fn, "ok");
	LLVMBuildCondBr(C->b, bad, fail, ok);
	LLVMPositionBuilderAtEnd(C->b, fail);
	LLVMBuildRet(C->b, rc);
	LLVMPositionBuilderAtEnd(C->b, ok);
}

LLVMValueRef
cg_entry_alloca(CgCtx *C, LLVMTypeRef ty, unsigned align, const char *name)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(C->c);
	LLVMBasicBlockRef e = LLVMGetEntryBasicBlock(C->fn);
	LLVMValueRef first = LLVMGetFirstInstruction(e), a;
	if (first)
		LLVMPositionBuilderBefore(b, first);
	else
		LLVMPositionBuilderAtEnd(b, e);
	a = LLVMBuildAlloca(b, ty, name);
	LLVMSetAlignment(a, align);
	LLVMDisposeBuilder(b);
	return a;
}


/* ------------------------------------------------------------ parts */

static void
str_attr(CgCtx *C, LLVMValueRef f, const char *k, const char *v)
{
	LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
				LLVMCreateStringAttribute(C->c, k, strlen(k),
							  v, strlen(v)));
}

void
cg_enum_attr(CgCtx *C, LLVMValueRef f, unsigned idx, const char *k, uint64_t v)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(k, strlen(k));
	LLVMAddAttributeAtIndex(f, idx, LLVMCreateEnumAttribute(C->c, kind, v));
}

/* Arena slots: every node but sends and constants, at the offsets of
 * the buffer plan (codegen/memplan.c); the arena is its peak. */
static void
layout(CgCtx *C)
{
	CgSlot *s;
	LLVMValueRef base[1 + TFG_MAX_GPUS] = {0};
	int ns = cg_plan_part(C->part, &s, &C->arena_size, NULL);
	base[0] = C->arena_arg;
	C->nslot = 0;
	C->slot = ns > 0 ? malloc((size_t)ns * sizeof *C->slot) : NULL;
	for (int k = 0; k < ns; k++) {
		const IrNode *n = C->part->nodes[s[k].node];
		int sp = s[k].space;
		LLVMValueRef o = cg_i64c(C, (int64_t)s[k].off);
		if (!base[sp]) /* a GPU's device arena, at the entry */
			base[sp] = backends[DEV_GPU]->arena(C, sp,
					cg_space_peak(s, ns, sp));
		C->val[s[k].node] = LLVMBuildInBoundsGEP2(C->b, C->i8,
			base[sp], &o, 1, n->name ? n->name : "");
		if (C->slot)
			C->slot[C->nslot++] = C->val[s[k].node];
	}
	free(s);
}

/* Whether node n is a kernel for --trace: one that computes (sends,
 * receives and waits the runtime records itself). */
static int
traced(const IrNode *n)
{
	return n->op != OP_const && n->op != OP_input && n->op != OP_send &&
	       n->op != OP_recv;
}

/* --check-numerics: tfg_rt_check(ctx, n's buffer, elements, dtype,
 * "op 'name' at file:line:col") after n's code, for a float value of a
 * CPU node; the first non-finite value in the order the part computes
 * fails the step there, naming the node (spec §6.26 "minimize and optimizers"). */
static void
check(CgCtx *C, const IrNode *n)
{
	const char *where, *op;
	LLVMValueRef args[5];
	char label[256];
	int64_t numel = tfg_shape_numel(&n->shape);

	if ((n->dtype != TFG_F32 && n->dtype != TFG_F64) || numel <= 0 ||
	    n->op == OP_send || n->op == OP_const)
		return;
	where = n->loc.file ? n->loc.file->path : "?";
	/* a fused group is named by its value's op, as written */
	op = n->op == OP_fused && n->fuse && n->fuse->n > 0
	    ? op_info[n->fuse->ops[n->fuse->n - 1].op].name : op_info[n->op].name;
	if (n->name)
		snprintf(label, sizeof label, "%s '%s' at %s:%u:%u", op,
			 n->name, where, n->loc.line, n->loc.col);
	else
		snprintf(label, sizeof label, "%s at %s:%u:%u", op, where,
			 n->loc.line, n->loc.col);
	args[0] = C->ctx_arg;
	args[1] = cg_buf(C, n);
	args[2] = cg_i64c(C, numel);
	args[3] = LLVMConstInt(C->i32, (unsigned)n->dtype, 0);
	args[4] = LLVMBuildGlobalStringPtr(C->b, label, "");
	cg_check_rc(C, LLVMBuildCall2(C->b, C->rt_check_ty, C->rt_check, args,
				      5, "rc"));
}

void
cg_flush(CgCtx *C)
{
	LLVMTypeRef ty = LLVMFunctionType(C->void_, &C->ptr, 1, 0);

	if (LLVMGetBasicBlockParent(LLVMGetInsertBlock(C->b)) != C->fn)
		return;
	if (!C->rt_flush) {
		C->rt_flush = LLVMAddFunction(C->m, "tfg_rt_flush", ty);
		cg_enum_attr(C, C->rt_flush, LLVMAttributeFunctionIndex,
			     "nounwind", 0);
	}
	LLVMBuildCall2(C->b, ty, C->rt_flush, &C->ctx_arg, 1, "");
}

/* tfg_rt_mark(ctx, m, "op name") before (m even) or after n's code. */
static void
mark(CgCtx *C, const IrNode *n, int m)
{
	char name[96];
	LLVMValueRef args[3];

	snprintf(name, sizeof name, "%s%s%s", op_info[n->op].name,
		 n->name ? " " : "", n->name ? n->name : "");
	args[0] = C->ctx_arg;
	args[1] = LLVMConstInt(C->i32, (unsigned long long)m, 0);
	args[2] = LLVMBuildGlobalStringPtr(C->b, name, "");
	LLVMBuildCall2(C->b, C->rt_ty, C->rt_mark, args, 3, "");
}

/* The part function is glue: a call per node (kernels, the runtime),
 * with the check of each return code, so its code is as long as the
 * graph while the kernels' is not (cpu_nest.c shares them).  It is
 * optnone: the passes leave it alone and the code generator takes its
 * fast path on it (FastISel, no machine-level optimisation), as it
 * would at -O0; a call is a call either way.  The passes still see its
 * call sites, so the kernels get its constant arguments (IPSCCP).
 * layout() made every slot's pointer in the entry block (C->slot),
 * where the emitters look them up by identity (cg_buf, cpu_nest.c's
 * base_root); once the part is built, each use gets its own copy right
 * before it instead (sink_slots), so that no pointer is live across
 * the part's calls: with hundreds of such live ranges the register
 * allocator took most of the part's code generation time
 * (spec/design.md "Kernels"). */
static void
sink_slots(CgCtx *C)
{
	LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(C->fn);
	LLVMValueRef *users = NULL;
	size_t cap = 0;

	for (int i = 0; i < C->nslot; i++) {
		LLVMValueRef g = C->slot[i], base, idx;
		const char *name;
		size_t nu = 0, len;
		int keep = 0;

		if (!LLVMIsAGetElementPtrInst(g) ||
		    LLVMGetInstructionParent(g) != entry ||
		    LLVMGetNumOperands(g) != 2 ||
		    !LLVMIsAConstantInt(idx = LLVMGetOperand(g, 1)))
			continue;
		base = LLVMGetOperand(g, 0);
		name = LLVMGetValueName2(g, &len);
		for (LLVMUseRef u = LLVMGetFirstUse(g); u; u = LLVMGetNextUse(u)) {
			LLVMValueRef v = LLVMGetUser(u);
			if (nu == cap) {
				cap = cap ? 2 * cap : 64;
				LLVMValueRef *t = realloc(users, cap * sizeof *t);
				if (!t) {
					keep = 1;
					break;
				}
				users = t;
			}
			users[nu++] = v;
		}
		for (size_t k = 0; k < nu && !keep; k++) {
			LLVMValueRef v = users[k];
			if (LLVMIsAPHINode(v)) {
				keep = 1;
				continue;
			}
			int done = 0;
			LLVMPositionBuilderBefore(C->b, v);
			LLVMValueRef h = LLVMBuildInBoundsGEP2(C->b,
				LLVMGetGEPSourceElementType(g), base, &idx, 1,
				name);
			for (int j = 0; j < LLVMGetNumOperands(v); j++)
				if (LLVMGetOperand(v, j) == g) {
					LLVMSetOperand(v, j, h);
					done = 1;
				}
			if (!done) /* v was met before */
				LLVMInstructionEraseFromParent(h);
		}
		if (!keep && !LLVMGetFirstUse(g))
			LLVMInstructionEraseFromParent(g);
	}
	free(users);
}

static void
build_part(CgCtx *C, int s, const IrPart *part, const char *cpu,
	   const char *features)
{
	char name[32];
	LLVMTypeRef params[2] = {C->ptr, C->ptr};
	snprintf(name, sizeof name, "tfg_part_%d", s);
	C->fn = LLVMAddFunction(C->m, name,
				LLVMFunctionType(C->i32, params, 2, 0));
	cg_enum_attr(C, C->fn, LLVMAttributeFunctionIndex, "nounwind", 0);
	cg_enum_attr(C, C->fn, LLVMAttributeFunctionIndex, "optnone", 0);
	cg_enum_attr(C, C->fn, LLVMAttributeFunctionIndex, "noinline", 0);
	cg_enum_attr(C, C->fn, 2, "align", CG_SLOT_ALIGN);
	if (cpu && *cpu)
		str_attr(C, C->fn, "target-cpu", cpu);
	if (features && *features)
		str_attr(C, C->fn, "target-features", features);
	C->ctx_arg = LLVMGetParam(C->fn, 0);
	C->arena_arg = LLVMGetParam(C->fn, 1);
	LLVMSetValueName2(C->ctx_arg, "ctx", 3);
	LLVMSetValueName2(C->arena_arg, "arena", 5);
	LLVMPositionBuilderAtEnd(C->b, LLVMAppendBasicBlockInContext(
					       C->c, C->fn, "entry"));
	C->part = part;
	C->par_bases = NULL;
	C->ref_slot = NULL;
	C->val = calloc((size_t)part->n, sizeof *C->val);
	C->held_slot = NULL;
	layout(C);
	/* [i]: node i takes a value in its variable's storage (CG_*_VAR) */
	char *taken = calloc((size_t)part->n + 1, 1);
	if (!taken) {
		fprintf(stderr, "tfgc: error: out of memory\n");
		C->err = 1;
	}
	for (int i = 0; i < part->n && !C->err; i++) {
		IrNode *n = part->nodes[i];
		int place = 0, t = -1;
		if ((unsigned)n->op >= OP__COUNT) {
			cg_fail(C, n, "unknown op");
			break;
		}
		C->cur = i;
		if (taken[i] == CG_FROM_VAR)
			continue; /* sent where the variable was read */
		if (!taken[i] && (place = cg_var_place(part, i, &t))) {
			taken[t] = (char)place;
			cpu_var_hold(C, n, part->nodes[t], place);
		}
		if (C->rt_mark && traced(n))
			mark(C, n, 2 * i);
		if (taken[i])
			cpu_emit_assigned(C, n);
		else if (place != CG_FROM_VAR)
			backend_of(n)->emit(C, n);
		/* the values computed in host memory: a GPU's are not
		   the host's to read (nor is an assign's that nothing
		   reads, of a value checked in its variable) */
		if (C->rt_check && !C->err && n->dev.kind != DEV_GPU &&
		    !(taken[i] && !cg_read_after(part, i)))
			check(C, n);
		if (place == CG_FROM_VAR)
			cpu_emit_send(C, part->nodes[t]);
		if (place)
			cpu_var_put(C, n, part->nodes[t], place);
		if (C->rt_mark && traced(n))
			mark(C, n, 2 * i + 1);
	}
	free(taken);
	LLVMBuildRet(C->b, LLVMConstNull(C->i32));
	if (!C->err)
		sink_slots(C);
	free(C->val);
	free(C->slot);
	C->slot = NULL;
	C->val = NULL;
}

static LLVMValueRef
declare_rt(CgCtx *C, const char *name)
{
	LLVMValueRef f = LLVMAddFunction(C->m, name, C->rt_ty);
	cg_enum_attr(C, f, LLVMAttributeFunctionIndex, "nounwind", 0);
	return f;
}

int
cg_build_module(LLVMContextRef c, LLVMModuleRef m, const Program *p,
		int task, const char *cpu, const char *features,
		const CgOptions *o, size_t *sizes, int *has)
{
	const char *dd = getenv("TFG_KERNEL_DEDUP");
	const char *pm = getenv("TFG_PAR_MIN");
	const char *nm = getenv("TFG_NT_MIN");
	const char *eb = getenv("TFG_EPI_BLOCK");
	CgCtx C = {0};
	if (task < 0 || task >= p->ntask) {
		fprintf(stderr, "tfgc: error: codegen: task %d out of range "
			"(the cluster has %d)\n", task, p->ntask);
		return -1;
	}
	C.c = c;
	C.m = m;
	C.p = p;
	C.task = task;
	C.no_dedup = dd && strcmp(dd, "0") == 0;
	C.par_min = pm && *pm ? strtoll(pm, NULL, 10) : 0;
	C.nt_min = nm && *nm ? strtoll(nm, NULL, 10) : 0;
	C.epi_block = eb && *eb ? strtoll(eb, NULL, 10) : 0;
	C.cpu = cpu;
	C.features = features;
	C.void_ = LLVMVoidTypeInContext(c);
	C.i1 = LLVMInt1TypeInContext(c);
	C.i8 = LLVMInt8TypeInContext(c);
	C.i32 = LLVMInt32TypeInContext(c);
	C.i64 = LLVMInt64TypeInContext(c);
	C.f32 = LLVMFloatTypeInContext(c);
	C.f64 = LLVMDoubleTypeInContext(c);
	C.ptr = LLVMPointerTypeInContext(c, 0);
	LLVMTypeRef rt_params[3] = {C.ptr, C.i32, C.ptr};
	C.rt_ty = LLVMFunctionType(C.i32, rt_params, 3, 0);
	C.rt_recv = declare_rt(&C, "tfg_rt_recv");
	C.rt_send = declare_rt(&C, "tfg_rt_send");
	LLVMTypeRef ref_params[4] = {C.ptr, C.i32, C.ptr, C.ptr};
	C.rt_ref_ty = LLVMFunctionType(C.i32, ref_params, 4, 0);
	C.rt_recv_ref = LLVMAddFunction(m, "tfg_rt_recv_ref", C.rt_ref_ty);
	cg_enum_attr(&C, C.rt_recv_ref, LLVMAttributeFunctionIndex, "nounwind",
		  0);
	if (o && o->trace)
		C.rt_mark = declare_rt(&C, "tfg_rt_mark");
	if (o && o->check_numerics) {
		LLVMTypeRef cp[5] = {C.ptr, C.ptr, C.i64, C.i32, C.ptr};

		C.rt_check_ty = LLVMFunctionType(C.i32, cp, 5, 0);
		C.rt_check = LLVMAddFunction(m, "tfg_rt_check", C.rt_check_ty);
	}
	C.b = LLVMCreateBuilderInContext(c);
	for (int k = 0; k < NBACKEND; k++)
		if (all_backends[k]->prepare &&
		    all_backends[k]->prepare(&C, o) != 0)
			C.err = 1;
	for (int s = 0; s < p->nsig && !C.err; s++) {
		const IrPart *part = p->sigs[s].parts ? &p->sigs[s].parts[task]
						      : NULL;
		sizes[s] = 0;
		has[s] = 0;
		if (!part || part->n <= 0)
			continue;
		C.sig = s;
		build_part(&C, s, part, cpu, features);
		sizes[s] = C.arena_size;
		has[s] = 1;
	}
	LLVMDisposeBuilder(C.b);
	for (int k = 0; k < NBACKEND; k++)
		if (all_backends[k]->done)
			all_backends[k]->done(&C);
	return C.err ? -1 : 0;
}
