/*
 * tests/unit/cuda_mock.c: a pretend CUDA driver for gpu_test, built as
 * build/tests/libcuda_mock.so and loaded by runtime/gpu.c through
 * $TFG_LIBCUDA.  Two devices "Mock GPU 0" and "Mock GPU 1" (cc 9.0);
 * device memory is host memory; every operation runs at once, in the
 * calling thread.  What it checks that a real driver would: a stream's,
 * an event's and a function's context is the current one where the
 * driver requires that (CUDA_ERROR_INVALID_CONTEXT otherwise).
 *
 * Kernels, found by name in the PTX text ("BAD" in it fails to load,
 * with a JIT log): tfg_add1(out, in) sets out[i] = in[i] + 1 for the
 * grid's threads (floats); tfg_bad fails its launch with
 * CUDA_ERROR_ILLEGAL_ADDRESS; tfg_late launches but makes its stream
 * fail at the next synchronisation (an asynchronous fault).  Global
 * tfg_g0 is 16 bytes.  mock_log records stream orderings: "rec(E,S)"
 * "wait(S,E)" "copy(S)" "peer(S)" with stream/event numbers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define NDEV 2

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	INVALID_CONTEXT = 201,
	INVALID_PTX = 218,
	NOT_FOUND = 500,
	ILLEGAL_ADDRESS = 700,
};

typedef struct Ctx {
	int dev;
} Ctx;
typedef struct Stream {
	Ctx *ctx;
	int id;
	CUresult late; /* reported at the next synchronisation */
} Stream;
typedef struct Event {
	Ctx *ctx;
	int id;
} Event;
typedef struct Func {
	Ctx *ctx;
	const char *name;
	int attr;
} Func;
typedef struct Module {
	Ctx *ctx;
	const char *ptx;
	Func fn[4];
} Module;

static Ctx ctxs[NDEV] = {{0}, {1}};
static _Thread_local Ctx *cur;
static int nstream, nevent;
static float g0[4];

API char mock_log[4096];
API int mock_allocs, mock_frees, mock_shmem_attr, mock_peer_enabled;

static void
logf_(const char *fmt, int a, int b)
{
	size_t n = strlen(mock_log);

	snprintf(mock_log + n, sizeof mock_log - n, fmt, a, b);
}

API CUresult cuInit(unsigned f) { (void)f; return OK; }
API CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
API CUresult cuDeviceGetCount(int *n) { *n = NDEV; return OK; }
API CUresult cuDeviceGet(int *d, int i) { *d = i; return OK; }

API CUresult
cuGetErrorName(CUresult r, const char **s)
{
	*s = r == ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
	   : r == INVALID_PTX ? "CUDA_ERROR_INVALID_PTX"
	   : r == INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
	   : r == NOT_FOUND ? "CUDA_ERROR_NOT_FOUND"
	   : r == OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
	   : "CUDA_ERROR_INVALID_VALUE";
	return OK;
}

API CUresult
cuGetErrorString(CUresult r, const char **s)
{
	*s = r == ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
				  : "mock error";
	return OK;
}

API CUresult
cuDeviceGetName(char *name, int n, int d)
{
	snprintf(name, (size_t)n, "Mock GPU %d", d);
	return OK;
}

API CUresult
cuDeviceGetAttribute(int *v, int attr, int d)
{
	(void)d;
	*v = attr == 75 ? 9 : attr == 76 ? 0 : 0;
	return OK;
}

API CUresult
cuDeviceTotalMem_v2(size_t *b, int d)
{
	*b = ((size_t)80 << 30) + (size_t)d;
	return OK;
}

API CUresult
cuDeviceCanAccessPeer(int *can, int a, int b)
{
	*can = a != b;
	return OK;
}

API CUresult
cuDevicePrimaryCtxRetain(void **c, int d)
{
	*c = &ctxs[d];
	return OK;
}

API CUresult
cuCtxSetCurrent(void *c)
{
	cur = c;
	return OK;
}

API CUresult
cuCtxEnablePeerAccess(void *peer, unsigned f)
{
	(void)f;
	if (cur == NULL || peer == cur)
		return INVALID_CONTEXT;
	mock_peer_enabled++;
	return OK;
}

API CUresult
cuStreamCreate(void **s, unsigned f)
{
	Stream *st;

	if (cur == NULL || f != 1)
		return cur ? INVALID_VALUE : INVALID_CONTEXT;
	st = calloc(1, sizeof *st);
	st->ctx = cur;
	st->id = nstream++;
	*s = st;
	return OK;
}

API CUresult
cuStreamSynchronize(void *s)
{
	Stream *st = s;
	CUresult r;

	if (st->ctx != cur)
		return INVALID_CONTEXT;
	r = st->late;
	st->late = OK;
	return r;
}

API CUresult
cuEventCreate(void **e, unsigned f)
{
	Event *ev;

	(void)f;
	if (cur == NULL)
		return INVALID_CONTEXT;
	ev = calloc(1, sizeof *ev);
	ev->ctx = cur;
	ev->id = nevent++;
	*e = ev;
	return OK;
}

API CUresult
cuEventRecord(void *e, void *s)
{
	Event *ev = e;
	Stream *st = s;

	if (ev->ctx != cur || st->ctx != cur)
		return INVALID_CONTEXT;
	logf_("rec(e%d,s%d) ", ev->id, st->id);
	return OK;
}

API CUresult
cuStreamWaitEvent(void *s, void *e, unsigned f)
{
	Stream *st = s;
	Event *ev = e;

	(void)f;
	if (st->ctx != cur)
		return INVALID_CONTEXT;
	logf_("wait(s%d,e%d) ", st->id, ev->id);
	return OK;
}

API CUresult
cuEventDestroy_v2(void *e)
{
	free(e);
	return OK;
}

API CUresult
cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *m;

	if (cur == NULL)
		return INVALID_CONTEXT;
	if (n > ((size_t)1 << 32) || (m = aligned_alloc(256, n)) == NULL)
		return OUT_OF_MEMORY;
	mock_allocs++;
	*p = (CUdeviceptr)(uintptr_t)m;
	return OK;
}

API CUresult
cuMemFree_v2(CUdeviceptr p)
{
	mock_frees++;
	free((void *)(uintptr_t)p);
	return OK;
}

static CUresult
on(void *s)
{
	return ((Stream *)s)->ctx == cur ? OK : INVALID_CONTEXT;
}

API CUresult
cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st)
{
	if (on(st))
		return INVALID_CONTEXT;
	memcpy((void *)(uintptr_t)d, s, n);
	return OK;
}

API CUresult
cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st)
{
	if (on(st))
		return INVALID_CONTEXT;
	memcpy(d, (const void *)(uintptr_t)s, n);
	return OK;
}

API CUresult
cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st)
{
	if (on(st))
		return INVALID_CONTEXT;
	logf_("copy(s%d) ", ((Stream *)st)->id, 0);
	memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
	return OK;
}

API CUresult
cuMemcpyPeerAsync(CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t n,
		  void *st)
{
	if (on(st) || dc == sc)
		return INVALID_CONTEXT;
	logf_("peer(s%d) ", ((Stream *)st)->id, 0);
	memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
	return OK;
}

API CUresult
cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	(void)data, (void)attr, (void)p;
	return INVALID_VALUE; /* pageable */
}

API CUresult
cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	(void)p, (void)n, (void)flags;
	return cur ? OK : INVALID_CONTEXT;
}

API CUresult
cuMemHostUnregister(void *p)
{
	(void)p;
	return OK;
}

API CUresult
cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opt,
		   void **val)
{
	Module *mod;

	if (cur == NULL)
		return INVALID_CONTEXT;
	if (strstr(image, "BAD")) {
		for (unsigned i = 0; i + 1 < n; i++)
			if (opt[i] == 5 && opt[i + 1] == 6)
				snprintf(val[i], (size_t)(uintptr_t)val[i + 1],
					 "ptxas fatal: mock says BAD");
		return INVALID_PTX;
	}
	mod = calloc(1, sizeof *mod);
	mod->ctx = cur;
	mod->ptx = image;
	*m = mod;
	return OK;
}

API CUresult
cuModuleGetFunction(void **f, void *m, const char *name)
{
	Module *mod = m;

	if (mod->ctx != cur)
		return INVALID_CONTEXT;
	if (strstr(mod->ptx, name) == NULL)
		return NOT_FOUND;
	for (int i = 0; i < 4; i++)
		if (mod->fn[i].name == NULL || !strcmp(mod->fn[i].name, name)) {
			mod->fn[i].ctx = cur;
			mod->fn[i].name = name;
			*f = &mod->fn[i];
			return OK;
		}
	return NOT_FOUND;
}

API CUresult
cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, void *m, const char *name)
{
	if (((Module *)m)->ctx != cur)
		return INVALID_CONTEXT;
	if (strcmp(name, "tfg_g0") != 0)
		return NOT_FOUND;
	*p = (CUdeviceptr)(uintptr_t)g0;
	*n = sizeof g0;
	return OK;
}

API CUresult
cuFuncSetAttribute(void *f, int attr, int v)
{
	Func *fn = f;

	if (fn->ctx != cur || attr != 8)
		return INVALID_CONTEXT;
	fn->attr = v;
	mock_shmem_attr = v;
	return OK;
}

API CUresult
cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	       unsigned by, unsigned bz, unsigned shmem, void *s, void **args,
	       void **extra)
{
	Func *fn = f;
	Stream *st = s;

	(void)gy, (void)gz, (void)by, (void)bz, (void)extra;
	if (fn->ctx != cur || st->ctx != cur)
		return INVALID_CONTEXT;
	if (shmem > 49152 && (unsigned)fn->attr < shmem)
		return INVALID_VALUE;
	if (!strcmp(fn->name, "tfg_bad"))
		return ILLEGAL_ADDRESS;
	if (!strcmp(fn->name, "tfg_late")) {
		st->late = ILLEGAL_ADDRESS;
		return OK;
	}
	if (!strcmp(fn->name, "tfg_add1")) {
		float *out = *(float **)args[0];
		const float *in = *(float **)args[1];

		for (unsigned i = 0; i < gx * bx; i++)
			out[i] = in[i] + 1;
	}
	return OK;
}
