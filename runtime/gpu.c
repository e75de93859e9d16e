/*
 * runtime/gpu.c: the runtime's GPU layer (runtime/tfg.h "GPUs"): the
 * CUDA driver through dlopen, devices and their primary contexts, one
 * stream per program GPU index, modules loaded per device, the steps'
 * device arenas, kernel launches and copies.
 *
 * Nothing links libcuda: libcuda.so.1 ($TFG_LIBCUDA names another file,
 * for tests and drivers in odd places) is opened by the first
 * tfg_gpu_probe, and its functions are looked up by their versioned
 * names (the `_v2` ones where the driver has them), so tfgc and AOT
 * programs start on machines with no driver, and the static tfgc uses
 * the machine's own.  The few types and constants used are declared
 * here: the build needs no CUDA headers.
 *
 * A program's gpu:N (N < GPU_MAX_INDEX) is physical device N % count,
 * with its own non-blocking stream in that device's primary context,
 * made at first use.  Each step runs in a thread of its own, so every
 * entry makes the device's context current first (a thread-local
 * remembers which one is, to skip the call).
 *
 * The process's state, under one mutex: the devices, the streams, the
 * loaded modules (GpuMod, one per TfgGpuModule address and physical
 * device) and each index's free device arenas.  Under it only short
 * driver calls run, and a module's loading (once); nothing that waits
 * for the device.  A step's state (RtGpuStep, RtCtx.gpu) is the arenas
 * it took and the streams it used: rt_gpu_step_end waits for those
 * streams, then gives the arenas back for later steps to reuse.
 *
 * Device-to-device copies between two indices order themselves against
 * both streams with two events: the source stream waits for what the
 * destination stream did before (earlier readers of the destination),
 * the copy runs on the source stream (after the source's producer),
 * and the destination stream waits for the copy.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/part.h"
#include "runtime/rt_int.h"
#include "runtime/trace.h"

#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define GPU_MAX_INDEX 64      /* gpu:N with N below this (a bit each in
				 RtGpuStep.used) */
#define GPU_FREE_MAX 4        /* free arenas kept per index */
#define GPU_ARENA_ALIGN 256
#define GPU_SHMEM_PLAIN 49152 /* dynamic shared memory without opting in */
#define GPU_JIT_LOG 4096      /* bytes of the JIT's error log kept */

/* ---------------------------------------------------- the driver's API */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUmodule;
typedef void *CUfunction;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_NO_DEVICE = 100,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
	CU_STREAM_NON_BLOCKING = 1,
	CU_EVENT_DISABLE_TIMING = 2,
	CU_JIT_INFO_LOG_BUFFER = 3,
	CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_MEMORYTYPE_HOST = 1,
};

/* The functions used, filled by dlsym (all of them, or no driver). */
static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
				    CUstream);
	CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
				    CUstream);
	CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr,
				    CUcontext, size_t, CUstream);
	CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
	CUresult (*MemHostRegister)(void *, size_t, unsigned);
	CUresult (*MemHostUnregister)(void *);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned,
				     int *, void **);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule,
				    const char *);
	CUresult (*FuncSetAttribute)(CUfunction, int, int);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
				 unsigned, unsigned, unsigned, unsigned,
				 CUstream, void **, void **);
} cu;

#define SYM(f, name) {name, (void *)&cu.f}
static const struct {
	const char *name;
	void *slot; /* &cu.X */
} syms[] = {
	SYM(Init, "cuInit"),
	SYM(DriverGetVersion, "cuDriverGetVersion"),
	SYM(GetErrorName, "cuGetErrorName"),
	SYM(GetErrorString, "cuGetErrorString"),
	SYM(DeviceGetCount, "cuDeviceGetCount"),
	SYM(DeviceGet, "cuDeviceGet"),
	SYM(DeviceGetName, "cuDeviceGetName"),
	SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
	SYM(DeviceTotalMem, "cuDeviceTotalMem_v2"),
	SYM(DeviceCanAccessPeer, "cuDeviceCanAccessPeer"),
	SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
	SYM(CtxSetCurrent, "cuCtxSetCurrent"),
	SYM(CtxEnablePeerAccess, "cuCtxEnablePeerAccess"),
	SYM(StreamCreate, "cuStreamCreate"),
	SYM(StreamSynchronize, "cuStreamSynchronize"),
	SYM(StreamWaitEvent, "cuStreamWaitEvent"),
	SYM(EventCreate, "cuEventCreate"),
	SYM(EventRecord, "cuEventRecord"),
	SYM(EventDestroy, "cuEventDestroy_v2"),
	SYM(MemAlloc, "cuMemAlloc_v2"),
	SYM(MemFree, "cuMemFree_v2"),
	SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
	SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
	SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
	SYM(MemcpyPeerAsync, "cuMemcpyPeerAsync"),
	SYM(PointerGetAttribute, "cuPointerGetAttribute"),
	SYM(MemHostRegister, "cuMemHostRegister_v2"),
	SYM(MemHostUnregister, "cuMemHostUnregister"),
	SYM(ModuleLoadDataEx, "cuModuleLoadDataEx"),
	SYM(ModuleGetFunction, "cuModuleGetFunction"),
	SYM(ModuleGetGlobal, "cuModuleGetGlobal_v2"),
	SYM(FuncSetAttribute, "cuFuncSetAttribute"),
	SYM(LaunchKernel, "cuLaunchKernel"),
};
#undef SYM

/* ------------------------------------------------------- process state */

typedef struct GpuArena {
	CUdeviceptr p;
	uint64_t size;
	uint32_t gpu;              /* the index it belongs to */
} GpuArena;

/* A module loaded on one physical device.  The key is its PTX (hash and
 * text), not the TfgGpuModule's address: the code that holds one may be
 * freed (an evicted specialisation) and another module may then come at
 * the same address. */
typedef struct GpuMod {
	uint64_t hash;             /* the key, with ptx and dev */
	char *ptx;                 /* a copy */
	const TfgGpuModule *m;     /* the last module found to be this one, */
	const char *src;           /* and its PTX: a launch's quick check */
	int dev;
	CUmodule mod;
	CUfunction *fn;            /* [m->nkernel] */
	uint32_t *shmem;           /* [m->nkernel] dynamic shared bytes each
				      may use (set above GPU_SHMEM_PLAIN) */
	struct GpuMod *next;
} GpuMod;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static TfgGpuInfo info;                 /* tfg_gpu_probe's answer */
static void *lib;                       /* libcuda, while count > 0 */
static CUdevice dev[TFG_MAX_GPUS];
static CUcontext dctx[TFG_MAX_GPUS];    /* primary; under mu until set */
static unsigned peer_tried[TFG_MAX_GPUS]; /* bit d: peer access to d */
static CUstream stream[GPU_MAX_INDEX];  /* under mu until set */
static GpuArena freelist[GPU_MAX_INDEX][GPU_FREE_MAX]; /* under mu */
static int nfree[GPU_MAX_INDEX];
static GpuMod *mods;                    /* under mu */
static _Thread_local CUcontext cur;     /* this thread's current one */

/* The step's part (RtCtx.gpu): allocated at its first GPU call. */
struct RtGpuStep {
	uint64_t used;             /* bit N: gpu:N's stream has its work */
	GpuArena *arena;           /* taken: the last one of an index is
				      the one tfg_rt_gpu_arena returns */
	int narena, caparena;
};

/* "CUDA_ERROR_X: text" for r. */
static const char *
cu_errstr(char *buf, size_t n, CUresult r)
{
	const char *name = NULL, *text = NULL;

	if (cu.GetErrorName == NULL || cu.GetErrorName(r, &name) != 0)
		name = NULL;
	if (cu.GetErrorString == NULL || cu.GetErrorString(r, &text) != 0)
		text = NULL;
	if (name && text)
		snprintf(buf, n, "%s: %s", name, text);
	else
		snprintf(buf, n, "CUDA error %d", r);
	return buf;
}

/* ------------------------------------------------------------- probing */

static void
probe(void)
{
	const char *name = getenv("TFG_LIBCUDA"), *ev = getenv("TFG_NO_GPU");
	char eb[160];
	int n = 0, v = 0;
	CUresult r;

	if (ev && *ev && strcmp(ev, "0") != 0) {
		snprintf(info.why, sizeof info.why, "TFG_NO_GPU is set");
		return;
	}
	if (name == NULL || *name == '\0')
		name = "libcuda.so.1";
	if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		const char *de = dlerror();

		snprintf(info.why, sizeof info.why, "no CUDA driver: cannot "
			 "load %s (%s)", name, de ? de : "dlopen failed");
		return;
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(lib, syms[i].name);

		if (f == NULL) {
			snprintf(info.why, sizeof info.why, "the CUDA driver "
				 "%s has no %s (too old?)", name,
				 syms[i].name);
			goto fail;
		}
		memcpy(syms[i].slot, &f, sizeof f);
	}
	if ((r = cu.Init(0)) != CUDA_SUCCESS) {
		if (r == CUDA_ERROR_STUB_LIBRARY)
			snprintf(info.why, sizeof info.why, "cuInit: the "
				 "driver library found (%s) is the CUDA "
				 "toolkit's stub (no driver installed)", name);
		else if (r == CUDA_ERROR_NO_DEVICE)
			snprintf(info.why, sizeof info.why, "cuInit: no CUDA "
				 "device (%s)", cu_errstr(eb, sizeof eb, r));
		else
			snprintf(info.why, sizeof info.why, "cuInit: %s",
				 cu_errstr(eb, sizeof eb, r));
		goto fail;
	}
	if ((r = cu.DriverGetVersion(&v)) != CUDA_SUCCESS ||
	    (r = cu.DeviceGetCount(&n)) != CUDA_SUCCESS) {
		snprintf(info.why, sizeof info.why, "cuDeviceGetCount: %s",
			 cu_errstr(eb, sizeof eb, r));
		goto fail;
	}
	if (n <= 0) {
		snprintf(info.why, sizeof info.why, "no CUDA device (driver "
			 "%d.%d)", v / 1000, v % 1000 / 10);
		goto fail;
	}
	if (n > TFG_MAX_GPUS)
		n = TFG_MAX_GPUS;
	for (int i = 0; i < n; i++) {
		int ma = 0, mi = 0;
		size_t mem = 0;

		if ((r = cu.DeviceGet(&dev[i], i)) != CUDA_SUCCESS ||
		    (r = cu.DeviceGetName(info.name[i], sizeof info.name[i],
					  dev[i])) != CUDA_SUCCESS ||
		    (r = cu.DeviceGetAttribute(&ma,
				CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
				dev[i])) != CUDA_SUCCESS ||
		    (r = cu.DeviceGetAttribute(&mi,
				CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
				dev[i])) != CUDA_SUCCESS ||
		    (r = cu.DeviceTotalMem(&mem, dev[i])) != CUDA_SUCCESS) {
			snprintf(info.why, sizeof info.why, "CUDA device %d: "
				 "%s", i, cu_errstr(eb, sizeof eb, r));
			goto fail;
		}
		info.name[i][sizeof info.name[i] - 1] = '\0';
		info.cc[i] = ma * 10 + mi;
		info.mem[i] = mem;
	}
	info.driver = v;
	info.count = n;
	return;
fail:
	memset(&cu, 0, sizeof cu);
	memset(info.name, 0, sizeof info.name);
	dlclose(lib);
	lib = NULL;
}

TFG_API int
tfg_gpu_probe(TfgGpuInfo *out)
{
	pthread_once(&probe_once, probe);
	if (out)
		*out = info;
	return info.count;
}

/* ----------------------------------------------------------- failures */

static TfgError *
err_of(RtCtx *c)
{
	return c ? c->err : NULL;
}

/* The step's error: "gpu:N (NAME): call(what): CUDA_ERROR_X: text". */
static int
gpu_fail(RtCtx *c, uint32_t gpu, const char *call, const char *what,
	 CUresult r)
{
	char eb[160];

	return tfg_error(err_of(c), TFG_EGPU, "gpu:%u (%s): %s%s%s%s: %s", gpu,
			 info.count ? info.name[gpu % info.count] : "?", call,
			 what ? "(" : "", what ? what : "", what ? ")" : "",
			 cu_errstr(eb, sizeof eb, r));
}

/* ------------------------------------------------ devices and streams */

/* Makes physical device d's context current in this thread. */
static CUresult
bind_dev(int d)
{
	CUresult r;

	if (cur == dctx[d])
		return CUDA_SUCCESS;
	if ((r = cu.CtxSetCurrent(dctx[d])) == CUDA_SUCCESS)
		cur = dctx[d];
	return r;
}

/* Readies gpu:N for a call: its device's primary context (current in
 * this thread) and its stream; *d its device, *s its stream (may be
 * NULL).  Marks the stream used by the step when c has one. */
static int
gpu_use(RtCtx *c, uint32_t gpu, int *d, CUstream *s)
{
	CUresult r = CUDA_SUCCESS;
	const char *call = NULL;

	if (tfg_gpu_probe(NULL) == 0)
		return tfg_error(err_of(c), TFG_EGPU, "gpu:%u: no usable GPU: "
				 "%s", gpu, info.why);
	if (gpu >= GPU_MAX_INDEX)
		return tfg_error(err_of(c), TFG_EINVAL, "gpu:%u: indices of "
				 "GPUs go up to %d", gpu, GPU_MAX_INDEX - 1);
	*d = (int)(gpu % (uint32_t)info.count);
	pthread_mutex_lock(&mu);
	if (dctx[*d] == NULL &&
	    (r = cu.DevicePrimaryCtxRetain(&dctx[*d], dev[*d])) != 0)
		call = "cuDevicePrimaryCtxRetain";
	else if ((r = bind_dev(*d)) != CUDA_SUCCESS)
		call = "cuCtxSetCurrent";
	else if (stream[gpu] == NULL &&
		 (r = cu.StreamCreate(&stream[gpu], CU_STREAM_NON_BLOCKING)))
		call = "cuStreamCreate";
	if (s)
		*s = stream[gpu];
	pthread_mutex_unlock(&mu);
	if (call)
		return gpu_fail(c, gpu, call, NULL, r);
	if (c && c->gpu)
		c->gpu->used |= (uint64_t)1 << gpu;
	return TFG_OK;
}

/* The step's GPU state, made at its first call. */
static int
step_state(RtCtx *c)
{
	if (c == NULL)
		return TFG_EINVAL;
	if (c->gpu == NULL && (c->gpu = calloc(1, sizeof *c->gpu)) == NULL)
		return tfg_error(c->err, TFG_ENOMEM, "out of memory for the "
				 "step's GPU state");
	return TFG_OK;
}

/* ------------------------------------------------------------- arenas */

/* Frees the free arenas of the indices on device d (under mu, d's
 * context current), to make room. */
static void
arena_drop_free(int d)
{
	for (int g = 0; g < GPU_MAX_INDEX; g++) {
		if (g % info.count != d)
			continue;
		for (int i = 0; i < nfree[g]; i++)
			(void)cu.MemFree(freelist[g][i].p);
		nfree[g] = 0;
	}
}

/* The smallest free arena of gpu that holds size bytes, or one newly
 * allocated. */
static int
arena_get(RtCtx *c, uint32_t gpu, int d, uint64_t size, GpuArena *out)
{
	uint64_t want = (size + GPU_ARENA_ALIGN - 1) / GPU_ARENA_ALIGN *
			GPU_ARENA_ALIGN;
	int best = -1;
	CUresult r;

	if (want == 0)
		want = GPU_ARENA_ALIGN;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nfree[gpu]; i++)
		if (freelist[gpu][i].size >= want &&
		    (best < 0 || freelist[gpu][i].size <
				 freelist[gpu][best].size))
			best = i;
	if (best >= 0) {
		*out = freelist[gpu][best];
		freelist[gpu][best] = freelist[gpu][--nfree[gpu]];
		pthread_mutex_unlock(&mu);
		return TFG_OK;
	}
	out->gpu = gpu;
	out->size = want;
	if ((r = cu.MemAlloc(&out->p, want)) != CUDA_SUCCESS) {
		arena_drop_free(d); /* what other indices keep, then again */
		r = cu.MemAlloc(&out->p, want);
	}
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS) {
		char what[48];

		snprintf(what, sizeof what, "%llu bytes",
			 (unsigned long long)want);
		gpu_fail(c, gpu, "cuMemAlloc", what, r);
		c->err->code = TFG_ENOMEM;
		return TFG_ENOMEM;
	}
	return TFG_OK;
}

/* Gives a (d's context current) to its index's free list, freeing the
 * smallest arena there when the list is full. */
static void
arena_give(GpuArena a)
{
	int g = (int)a.gpu, small = 0;

	pthread_mutex_lock(&mu);
	if (nfree[g] < GPU_FREE_MAX) {
		freelist[g][nfree[g]++] = a;
	} else {
		for (int i = 1; i < nfree[g]; i++)
			if (freelist[g][i].size < freelist[g][small].size)
				small = i;
		if (freelist[g][small].size < a.size) {
			GpuArena t = freelist[g][small];

			freelist[g][small] = a;
			a = t;
		}
		(void)cu.MemFree(a.p);
	}
	pthread_mutex_unlock(&mu);
}

TFG_API int
tfg_rt_gpu_arena(struct RtCtx *ctx, uint32_t gpu, uint64_t size, void **base)
{
	RtGpuStep *st;
	GpuArena a;
	int d, rv;

	if (base == NULL || ctx == NULL)
		return tfg_error(err_of(ctx), TFG_EINVAL, "tfg_rt_gpu_arena: "
				 "no context or base");
	*base = NULL;
	if ((rv = step_state(ctx)) != TFG_OK ||
	    (rv = gpu_use(ctx, gpu, &d, NULL)) != TFG_OK)
		return rv;
	st = ctx->gpu;
	for (int i = st->narena - 1; i >= 0; i--)
		if (st->arena[i].gpu == gpu) {
			/* the step's arena of gpu; a later call asking for
			   more gets another (this one stays valid) */
			if (st->arena[i].size >= size) {
				*base = (void *)(uintptr_t)st->arena[i].p;
				return TFG_OK;
			}
			break;
		}
	if (st->narena == st->caparena) {
		int cap = st->caparena ? 2 * st->caparena : 4;
		GpuArena *p = realloc(st->arena, (size_t)cap * sizeof *p);

		if (p == NULL)
			return tfg_error(ctx->err, TFG_ENOMEM, "out of memory "
					 "for the step's GPU arenas");
		st->arena = p;
		st->caparena = cap;
	}
	if ((rv = arena_get(ctx, gpu, d, size, &a)) != TFG_OK)
		return rv;
	st->arena[st->narena++] = a;
	*base = (void *)(uintptr_t)a.p;
	return TFG_OK;
}

/* ------------------------------------------------------------ modules */

static void
mod_free(GpuMod *g)
{
	free(g->ptx);
	free(g->fn);
	free(g->shmem);
	free(g);
}

/* Loads m on device d (under mu, d's context current). */
static int
mod_load(RtCtx *c, uint32_t gpu, const TfgGpuModule *m, int d,
	 GpuMod **out)
{
	char elog[GPU_JIT_LOG], ilog[256];
	int opt[4] = {CU_JIT_ERROR_LOG_BUFFER,
		      CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
		      CU_JIT_INFO_LOG_BUFFER,
		      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
	void *val[4] = {elog, (void *)(uintptr_t)sizeof elog, ilog,
			(void *)(uintptr_t)sizeof ilog};
	GpuMod *g;
	CUresult r;

	if (m->ptx == NULL)
		return tfg_error(err_of(c), TFG_EINVAL, "gpu:%u: a module "
				 "without PTX", gpu);
	if ((g = calloc(1, sizeof *g)) == NULL ||
	    (g->fn = calloc(m->nkernel + 1, sizeof *g->fn)) == NULL ||
	    (g->shmem = calloc(m->nkernel + 1, sizeof *g->shmem)) == NULL ||
	    (g->ptx = strdup(m->ptx)) == NULL) {
		if (g)
			mod_free(g);
		return tfg_error(err_of(c), TFG_ENOMEM, "out of memory for a "
				 "GPU module");
	}
	elog[0] = ilog[0] = '\0';
	if ((r = cu.ModuleLoadDataEx(&g->mod, m->ptx, 4, opt, val)) != 0) {
		char eb[160];

		elog[sizeof elog - 1] = '\0';
		mod_free(g);
		return tfg_error(err_of(c), TFG_EGPU, "gpu:%u (%s): "
				 "cuModuleLoadDataEx: %s%s%s", gpu,
				 info.name[d], cu_errstr(eb, sizeof eb, r),
				 elog[0] ? ": " : "", elog);
	}
	for (uint32_t k = 0; k < m->nkernel; k++)
		if ((r = cu.ModuleGetFunction(&g->fn[k], g->mod,
					      m->kernel[k])) != 0) {
			/* the module stays loaded: unloading it is not
			   worth a driver function for this */
			mod_free(g);
			return gpu_fail(c, gpu, "cuModuleGetFunction",
					m->kernel[k], r);
		}
	g->hash = m->hash;
	g->m = m;
	g->src = m->ptx;
	g->dev = d;
	g->next = mods;
	mods = g;
	*out = g;
	return TFG_OK;
}

/* m loaded on device d (under mu, d's context current). */
static int
mod_get(RtCtx *c, uint32_t gpu, const TfgGpuModule *m, int d, GpuMod **out)
{
	/* the same module as last time (its address, its PTX's and its
	   hash), or, comparing the PTX itself, one with the same code */
	for (GpuMod *g = mods; g; g = g->next)
		if (g->dev == d && g->hash == m->hash &&
		    ((g->m == m && g->src == m->ptx) ||
		     strcmp(g->ptx, m->ptx) == 0)) {
			g->m = m;
			g->src = m->ptx;
			*out = g;
			return TFG_OK;
		}
	return mod_load(c, gpu, m, d, out);
}

/* -------------------------------------------------- pinned host arenas */

/* A task's host arenas that its GPU parts copy to and from are
 * page-locked after their first step (rt_run_part), so that copies are
 * DMA straight from and to them rather than staged by the driver; the
 * server unpins an arena before it frees it.  Under mu. */
static void **pinned;
static int npinned, cappinned;

void
rt_gpu_host_pin(void *p, size_t n)
{
	int d;

	if (p == NULL || n < ((size_t)1 << 20) || tfg_gpu_probe(NULL) == 0 ||
	    gpu_use(NULL, 0, &d, NULL) != TFG_OK)
		return;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < npinned; i++)
		if (pinned[i] == p) {
			pthread_mutex_unlock(&mu);
			return;
		}
	if (npinned == cappinned) {
		int nc = cappinned ? 2 * cappinned : 8;
		void **v = realloc(pinned, sizeof *v * (size_t)nc);
		if (v == NULL) {
			pthread_mutex_unlock(&mu);
			return;
		}
		pinned = v, cappinned = nc;
	}
	/* portable: page-locked for every device's context; a failure
	   (too much locked memory) leaves it pageable, which still works */
	if (bind_dev(d) == CUDA_SUCCESS &&
	    cu.MemHostRegister(p, n, CU_MEMHOSTREGISTER_PORTABLE) ==
		CUDA_SUCCESS)
		pinned[npinned++] = p;
	pthread_mutex_unlock(&mu);
}

void
rt_gpu_host_unpin(void *p)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < npinned; i++)
		if (pinned[i] == p) {
			if (bind_dev(0) == CUDA_SUCCESS)
				cu.MemHostUnregister(p);
			pinned[i] = pinned[--npinned];
			break;
		}
	pthread_mutex_unlock(&mu);
}

/* -------------------------------------------------------------- cuBLAS */

/* cuBLAS by dlopen, for the products it computes faster than our own
 * kernels (codegen/cuda.c decides which may go to it).  One handle per
 * gpu:N, bound to its stream; calls under mu (they only enqueue). */
enum { BLAS_OP_N = 0, BLAS_DEFAULT_MATH = 0, BLAS_TF32_MATH = 3 };
static struct {
	int (*Create)(void **);
	int (*SetStream)(void *, CUstream);
	int (*SetMathMode)(void *, int);
	int (*SgemmStridedBatched)(void *, int, int, int, int, int,
				   const float *, const void *, int, long long,
				   const void *, int, long long, const float *,
				   void *, int, long long, int);
	int (*DgemmStridedBatched)(void *, int, int, int, int, int,
				   const double *, const void *, int,
				   long long, const void *, int, long long,
				   const double *, void *, int, long long, int);
	const char *(*GetStatusString)(int);
} blas;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static int blas_ok;
static void *blas_h[GPU_MAX_INDEX]; /* under mu */

static void *
blas_sym(void *lib, const char *name)
{
	return lib ? dlsym(lib, name) : NULL;
}

static void
blas_load(void)
{
	static const char *const names[] = {
		"libcublas.so.13", "libcublas.so.12", "libcublas.so",
		"/usr/local/cuda/lib64/libcublas.so", NULL};
	const char *env = getenv("TFG_CUBLAS");
	void *lib = NULL;

	if (env && strcmp(env, "0") == 0)
		return;
	if (env && *env)
		lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (int i = 0; !lib && names[i]; i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	*(void **)&blas.Create = blas_sym(lib, "cublasCreate_v2");
	*(void **)&blas.SetStream = blas_sym(lib, "cublasSetStream_v2");
	*(void **)&blas.SetMathMode = blas_sym(lib, "cublasSetMathMode");
	*(void **)&blas.SgemmStridedBatched =
	    blas_sym(lib, "cublasSgemmStridedBatched");
	*(void **)&blas.DgemmStridedBatched =
	    blas_sym(lib, "cublasDgemmStridedBatched");
	*(void **)&blas.GetStatusString =
	    blas_sym(lib, "cublasGetStatusString");
	blas_ok = blas.Create && blas.SetStream && blas.SetMathMode &&
		  blas.SgemmStridedBatched && blas.DgemmStridedBatched;
}

static int
blas_fail(RtCtx *c, uint32_t gpu, const char *call, int st)
{
	return tfg_error(err_of(c), TFG_EGPU, "gpu:%u (%s): %s: cuBLAS "
			 "status %d%s%s", gpu,
			 info.count ? info.name[gpu % info.count] : "?", call,
			 st, blas.GetStatusString ? ": " : "",
			 blas.GetStatusString ? blas.GetStatusString(st) : "");
}

TFG_API int
tfg_rt_gpu_gemm(struct RtCtx *ctx, uint32_t gpu, const TfgGpuGemm *g,
		void *c, const void *a, const void *b)
{
	double t0 = rt_tracing ? rt_trace_clock() : 0;
	const char *call = NULL;
	CUstream s;
	int d, rv, st = 0;

	pthread_once(&blas_once, blas_load);
	if (!blas_ok)
		return -1;
	if (g == NULL || g->m <= 0 || g->n <= 0 || g->k <= 0 ||
	    g->batch <= 0 || g->m > INT_MAX || g->n > INT_MAX ||
	    g->k > INT_MAX || g->batch > INT_MAX ||
	    (g->dtype != TFG_F32 && g->dtype != TFG_F64))
		return -1; /* not a product cuBLAS takes: our own kernel */
	if ((rv = step_state(ctx)) != TFG_OK ||
	    (rv = gpu_use(ctx, gpu, &d, &s)) != TFG_OK)
		return rv;
	pthread_mutex_lock(&mu);
	if ((rv = bind_dev(d)) != CUDA_SUCCESS) {
		pthread_mutex_unlock(&mu);
		return gpu_fail(ctx, gpu, "cuCtxSetCurrent", NULL, rv);
	}
	if (blas_h[gpu] == NULL) {
		if ((st = blas.Create(&blas_h[gpu])) != 0)
			call = "cublasCreate", blas_h[gpu] = NULL;
		else if ((st = blas.SetStream(blas_h[gpu], s)) != 0)
			call = "cublasSetStream";
	}
	if (!call && (st = blas.SetMathMode(blas_h[gpu], g->tf32
					    ? BLAS_TF32_MATH
					    : BLAS_DEFAULT_MATH)) != 0)
		call = "cublasSetMathMode";
	/* row-major C = A B is column-major C^T = B^T A^T */
	if (!call && g->dtype == TFG_F32) {
		const float one = 1, zero = 0;
		if ((st = blas.SgemmStridedBatched(blas_h[gpu], BLAS_OP_N,
			BLAS_OP_N, (int)g->n, (int)g->m, (int)g->k, &one, b,
			(int)g->n, g->stride_b, a, (int)g->k, g->stride_a,
			&zero, c, (int)g->n, g->stride_c, (int)g->batch)) != 0)
			call = "cublasSgemmStridedBatched";
	} else if (!call) {
		const double one = 1, zero = 0;
		if ((st = blas.DgemmStridedBatched(blas_h[gpu], BLAS_OP_N,
			BLAS_OP_N, (int)g->n, (int)g->m, (int)g->k, &one, b,
			(int)g->n, g->stride_b, a, (int)g->k, g->stride_a,
			&zero, c, (int)g->n, g->stride_c, (int)g->batch)) != 0)
			call = "cublasDgemmStridedBatched";
	}
	pthread_mutex_unlock(&mu);
	if (call)
		return blas_fail(ctx, gpu, call, st);
	if (rt_tracing) {
		char name[64];
		CUresult r;

		if ((r = cu.StreamSynchronize(s)) != CUDA_SUCCESS)
			return gpu_fail(ctx, gpu, "cuStreamSynchronize",
					"cuBLAS", r);
		snprintf(name, sizeof name, "gpu:%u cublas", gpu);
		rt_trace_event("kernel", name, ctx->no, 0, t0,
			       rt_trace_clock());
	}
	return TFG_OK;
}

/* ------------------------------------------------------------ entries */

TFG_API int
tfg_rt_gpu_launch(struct RtCtx *ctx, const TfgGpuModule *m, uint32_t gpu,
		  uint32_t kernel, const uint32_t *dims, void **args)
{
	double t0 = rt_tracing ? rt_trace_clock() : 0;
	CUfunction fn = NULL;
	CUstream s;
	CUresult r = CUDA_SUCCESS;
	GpuMod *g;
	int d, rv;

	if (m == NULL || dims == NULL || kernel >= m->nkernel)
		return tfg_error(err_of(ctx), TFG_EINVAL, "gpu:%u: launch of "
				 "kernel %u of a module with %u", gpu, kernel,
				 m ? m->nkernel : 0);
	if ((rv = step_state(ctx)) != TFG_OK ||
	    (rv = gpu_use(ctx, gpu, &d, &s)) != TFG_OK)
		return rv;
	pthread_mutex_lock(&mu);
	if ((rv = mod_get(ctx, gpu, m, d, &g)) == TFG_OK) {
		fn = g->fn[kernel];
		if (dims[6] > GPU_SHMEM_PLAIN && dims[6] > g->shmem[kernel]) {
			r = cu.FuncSetAttribute(fn,
				CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				(int)dims[6]);
			if (r == CUDA_SUCCESS)
				g->shmem[kernel] = dims[6];
		}
	}
	pthread_mutex_unlock(&mu);
	if (rv != TFG_OK)
		return rv;
	if (r != CUDA_SUCCESS) {
		char what[160];

		snprintf(what, sizeof what, "%s, %u bytes of shared memory",
			 m->kernel[kernel], dims[6]);
		return gpu_fail(ctx, gpu, "cuFuncSetAttribute", what, r);
	}
	r = cu.LaunchKernel(fn, dims[0], dims[1], dims[2], dims[3], dims[4],
			    dims[5], dims[6], s, args, NULL);
	if (r != CUDA_SUCCESS)
		return gpu_fail(ctx, gpu, "cuLaunchKernel", m->kernel[kernel],
				r);
	if (rt_tracing) {
		/* traced: each kernel waits, so that its event is its run */
		char name[128];

		if ((r = cu.StreamSynchronize(s)) != CUDA_SUCCESS)
			return gpu_fail(ctx, gpu, "cuStreamSynchronize",
					m->kernel[kernel], r);
		snprintf(name, sizeof name, "gpu:%u %s", gpu,
			 m->kernel[kernel]);
		rt_trace_event("kernel", name, ctx->no, 0, t0,
			       rt_trace_clock());
	}
	return TFG_OK;
}

TFG_API int
tfg_rt_gpu_global(struct RtCtx *ctx, const TfgGpuModule *m, uint32_t gpu,
		  uint32_t global, void **dptr)
{
	CUdeviceptr p = 0;
	size_t bytes = 0;
	CUresult r = CUDA_SUCCESS;
	GpuMod *g;
	int d, rv;

	if (m == NULL || dptr == NULL || global >= m->nglobal)
		return tfg_error(err_of(ctx), TFG_EINVAL, "gpu:%u: global %u "
				 "of a module with %u", gpu, global,
				 m ? m->nglobal : 0);
	*dptr = NULL;
	if ((rv = gpu_use(ctx, gpu, &d, NULL)) != TFG_OK)
		return rv;
	pthread_mutex_lock(&mu);
	if ((rv = mod_get(ctx, gpu, m, d, &g)) == TFG_OK)
		r = cu.ModuleGetGlobal(&p, &bytes, g->mod, m->global[global]);
	pthread_mutex_unlock(&mu);
	if (rv != TFG_OK)
		return rv;
	if (r != CUDA_SUCCESS)
		return gpu_fail(ctx, gpu, "cuModuleGetGlobal",
				m->global[global], r);
	*dptr = (void *)(uintptr_t)p;
	return TFG_OK;
}

/* Enables peer access between devices a and b once, where they allow it
 * (cuMemcpyPeerAsync works without, through the host). */
static void
peer_enable(int a, int b)
{
	int can = 0;

	pthread_mutex_lock(&mu);
	if (!(peer_tried[a] & 1u << b)) {
		peer_tried[a] |= 1u << b;
		if (cu.DeviceCanAccessPeer(&can, dev[a], dev[b]) == 0 && can &&
		    bind_dev(a) == CUDA_SUCCESS)
			(void)cu.CtxEnablePeerAccess(dctx[b], 0);
	}
	pthread_mutex_unlock(&mu);
}

/* A copy between two indices' buffers, ordered against both streams. */
static int
copy_dtod(RtCtx *c, uint32_t dg, CUdeviceptr dst, uint32_t sg,
	  CUdeviceptr src, uint64_t n)
{
	CUstream ds, ss;
	CUevent e1 = NULL, e2 = NULL;
	CUresult r;
	const char *call;
	uint32_t at = dg;
	int dd, sd, rv;

	if ((rv = gpu_use(c, sg, &sd, &ss)) != TFG_OK ||
	    (rv = gpu_use(c, dg, &dd, &ds)) != TFG_OK)
		return rv;
	if (dg == sg) {
		if ((r = cu.MemcpyDtoDAsync(dst, src, n, ss)) != CUDA_SUCCESS)
			return gpu_fail(c, sg, "cuMemcpyDtoDAsync", NULL, r);
		return TFG_OK;
	}
	if (dd != sd) {
		peer_enable(dd, sd);
		peer_enable(sd, dd);
	}
	/* dst's stream (dd current): what it did before, then src's */
	if ((r = bind_dev(dd)) != 0) {
		call = "cuCtxSetCurrent";
		goto fail;
	}
	call = "cuEventCreate";
	if ((r = cu.EventCreate(&e1, CU_EVENT_DISABLE_TIMING)) != 0)
		goto fail;
	call = "cuEventRecord";
	if ((r = cu.EventRecord(e1, ds)) != 0)
		goto fail;
	at = sg;
	call = "cuCtxSetCurrent";
	if ((r = bind_dev(sd)) != 0)
		goto fail;
	call = "cuStreamWaitEvent";
	if ((r = cu.StreamWaitEvent(ss, e1, 0)) != 0)
		goto fail;
	if (dd == sd) {
		call = "cuMemcpyDtoDAsync";
		r = cu.MemcpyDtoDAsync(dst, src, n, ss);
	} else {
		call = "cuMemcpyPeerAsync";
		r = cu.MemcpyPeerAsync(dst, dctx[dd], src, dctx[sd], n, ss);
	}
	if (r != 0)
		goto fail;
	call = "cuEventCreate";
	if ((r = cu.EventCreate(&e2, CU_EVENT_DISABLE_TIMING)) != 0)
		goto fail;
	call = "cuEventRecord";
	if ((r = cu.EventRecord(e2, ss)) != 0)
		goto fail;
	at = dg;
	call = "cuCtxSetCurrent";
	if ((r = bind_dev(dd)) != 0)
		goto fail;
	call = "cuStreamWaitEvent";
	if ((r = cu.StreamWaitEvent(ds, e2, 0)) != 0)
		goto fail;
	/* destroying an event still pending is allowed: it goes when done */
	(void)cu.EventDestroy(e1);
	if (bind_dev(sd) == CUDA_SUCCESS)
		(void)cu.EventDestroy(e2);
	return TFG_OK;
fail:
	rv = gpu_fail(c, at, call, "device-to-device copy", r);
	if (e1 && bind_dev(dd) == CUDA_SUCCESS)
		(void)cu.EventDestroy(e1);
	if (e2 && bind_dev(sd) == CUDA_SUCCESS)
		(void)cu.EventDestroy(e2);
	return rv;
}

static int
copy_any(struct RtCtx *ctx, uint32_t dst_dev, void *dst, uint32_t src_dev,
	 const void *src, uint64_t n)
{
	CUdeviceptr dp = (CUdeviceptr)(uintptr_t)dst;
	CUdeviceptr sp = (CUdeviceptr)(uintptr_t)src;
	CUstream s;
	CUresult r;
	int d, rv, mt = 0;

	if (n == 0)
		return TFG_OK;
	if (dst == NULL || src == NULL)
		return tfg_error(err_of(ctx), TFG_EINVAL, "tfg_rt_gpu_copy: a "
				 "NULL buffer");
	if (ctx && (rv = step_state(ctx)) != TFG_OK)
		return rv;
	if (dst_dev == TFG_DEV_HOST && src_dev == TFG_DEV_HOST) {
		memcpy(dst, src, n);
		return TFG_OK;
	}
	if (dst_dev != TFG_DEV_HOST && src_dev != TFG_DEV_HOST)
		return copy_dtod(ctx, dst_dev - 1, dp, src_dev - 1, sp, n);
	if (src_dev == TFG_DEV_HOST) {
		if ((rv = gpu_use(ctx, dst_dev - 1, &d, &s)) != TFG_OK)
			return rv;
		r = cu.MemcpyHtoDAsync(dp, src, n, s);
		if (r != CUDA_SUCCESS)
			return gpu_fail(ctx, dst_dev - 1, "cuMemcpyHtoDAsync",
					NULL, r);
		/* From pageable memory the call returns once src is staged;
		   from page-locked memory (the driver knows it) the copy
		   may still read it, and src may change when we return. */
		if (cu.PointerGetAttribute(&mt,
					   CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					   sp) == CUDA_SUCCESS &&
		    mt == CU_MEMORYTYPE_HOST &&
		    (r = cu.StreamSynchronize(s)) != CUDA_SUCCESS)
			return gpu_fail(ctx, dst_dev - 1, "cuStreamSynchronize",
					"a copy to the device", r);
		return TFG_OK;
	}
	if ((rv = gpu_use(ctx, src_dev - 1, &d, &s)) != TFG_OK)
		return rv;
	if ((r = cu.MemcpyDtoHAsync(dst, sp, n, s)) != CUDA_SUCCESS)
		return gpu_fail(ctx, src_dev - 1, "cuMemcpyDtoHAsync", NULL, r);
	if ((r = cu.StreamSynchronize(s)) != CUDA_SUCCESS)
		return gpu_fail(ctx, src_dev - 1, "cuStreamSynchronize",
				"a copy to the host", r);
	return TFG_OK;
}

/* ---------------------------------------------------------- step end */

int
rt_gpu_step_end(RtCtx *c)
{
	RtGpuStep *st = c->gpu;
	uint64_t failed = 0;
	int rv = TFG_OK;

	if (st == NULL)
		return TFG_OK;
	c->gpu = NULL;
	for (uint32_t g = 0; g < GPU_MAX_INDEX; g++) {
		int d = (int)(g % (uint32_t)(info.count ? info.count : 1));
		CUresult r;

		if (!(st->used & (uint64_t)1 << g))
			continue;
		if ((r = bind_dev(d)) == CUDA_SUCCESS)
			r = cu.StreamSynchronize(stream[g]);
		if (r == CUDA_SUCCESS)
			continue;
		failed |= (uint64_t)1 << g;
		if (rv == TFG_OK) {
			/* the part's own error, if any, says more */
			if (c->err->code == TFG_OK)
				gpu_fail(c, g, "cuStreamSynchronize",
					 "end of step", r);
			rv = TFG_EGPU;
		}
	}
	for (int i = 0; i < st->narena; i++) {
		GpuArena a = st->arena[i];

		if (bind_dev((int)(a.gpu % (uint32_t)info.count)) != 0)
			continue;
		if (failed & (uint64_t)1 << a.gpu)
			(void)cu.MemFree(a.p); /* its stream may still use
						  it: not for another step */
		else
			arena_give(a);
	}
	free(st->arena);
	free(st);
	return rv;
}

TFG_API int
tfg_rt_gpu_copy(struct RtCtx *ctx, uint32_t dst_dev, void *dst,
		uint32_t src_dev, const void *src, uint64_t n)
{
	double t0 = rt_tracing ? rt_trace_clock() : 0;
	char name[64];
	CUresult r;
	int rv;

	if (ctx && ctx->flush) /* a copy may wait for the device */
		ctx->flush(ctx);
	rv = copy_any(ctx, dst_dev, dst, src_dev, src, n);
	if (!rt_tracing || rv != TFG_OK || n == 0 ||
	    (dst_dev == TFG_DEV_HOST && src_dev == TFG_DEV_HOST))
		return rv;
	/* traced: the copy waits, so that its event is its run */
	if (dst_dev != TFG_DEV_HOST) {
		uint32_t g = dst_dev - 1;
		int d = (int)(g % (uint32_t)info.count);
		if ((r = bind_dev(d)) == CUDA_SUCCESS)
			r = cu.StreamSynchronize(stream[g]);
		if (r != CUDA_SUCCESS)
			return gpu_fail(ctx, g, "cuStreamSynchronize", "copy",
					r);
	}
	if (!src_dev)
		snprintf(name, sizeof name, "copy host to gpu:%u", dst_dev - 1);
	else if (!dst_dev)
		snprintf(name, sizeof name, "copy gpu:%u to host", src_dev - 1);
	else
		snprintf(name, sizeof name, "copy gpu:%u to gpu:%u",
			 src_dev - 1, dst_dev - 1);
	rt_trace_event("copy", name, ctx ? ctx->no : 0, n, t0,
		       rt_trace_clock());
	return rv;
}
