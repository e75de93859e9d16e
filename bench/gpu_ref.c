/*
 * bench/gpu_ref.c: the GPU's own limits, the references of the GPU
 * benchmarks (make bench-gpu-ref; run it on the GPU machine):
 *
 *   copy_dtod_1GiB   cuMemcpyDtoDAsync of 1 GiB; GB/s counts the bytes
 *                    read plus the bytes written (2 GiB a copy), the
 *                    convention of bandwidthTest-style "copy" figures
 *                    that compare with a read-only figure
 *   read_sum_1GiB    an NVRTC-compiled kernel summing 256M floats (float4
 *                    loads, one partial sum a block); GB/s of bytes read
 *   sgemm_{fp32,tf32}_N   cuBLAS SGEMM, n = 4096 and 8192, default math
 *                    and TF32 tensor ops; TFLOP/s counting 2n^3
 *
 * Each figure is the best of REPS runs after a warm-up, timed with CUDA
 * events on one stream, and printed as one line "name value unit";
 * lines starting with '#' describe the device and the conventions.
 * 1 GB = 1e9 bytes.
 *
 * Like runtime/gpu.c it links no CUDA library: libcuda, libnvrtc and
 * libcublas are opened with dlopen, so it builds without the toolkit's
 * headers.  Without a driver or a device it says why and exits 1; without
 * NVRTC or cuBLAS it says so on that figure's line and goes on.
 */
#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 5
#define COPY_BYTES ((size_t)1 << 30)
#define SUM_FLOATS ((size_t)256 << 20)

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUstream;

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*DeviceGet)(int *, int);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGetName)(char *, int, int);
	CUresult (*DeviceGetAttribute)(int *, int, int);
	CUresult (*DeviceTotalMem)(size_t *, int);
	CUresult (*PrimaryCtxRetain)(void **, int);
	CUresult (*CtxSetCurrent)(void *);
	CUresult (*CtxSynchronize)(void);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*EventCreate)(void **, unsigned);
	CUresult (*EventRecord)(void *, CUstream);
	CUresult (*EventSynchronize)(void *);
	CUresult (*EventElapsedTime)(float *, void *, void *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
				    CUstream);
	CUresult (*ModuleLoadData)(void **, const void *);
	CUresult (*ModuleGetFunction)(void **, void *, const char *);
	CUresult (*LaunchKernel)(void *, unsigned, unsigned, unsigned,
				 unsigned, unsigned, unsigned, unsigned,
				 CUstream, void **, void **);
} cu;

#define SYM(f, name) {name, (void *)&cu.f}
static const struct {
	const char *name;
	void *slot;
} cusyms[] = {
	SYM(Init, "cuInit"),
	SYM(DriverGetVersion, "cuDriverGetVersion"),
	SYM(GetErrorName, "cuGetErrorName"),
	SYM(DeviceGet, "cuDeviceGet"),
	SYM(DeviceGetCount, "cuDeviceGetCount"),
	SYM(DeviceGetName, "cuDeviceGetName"),
	SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
	SYM(DeviceTotalMem, "cuDeviceTotalMem_v2"),
	SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
	SYM(CtxSetCurrent, "cuCtxSetCurrent"),
	SYM(CtxSynchronize, "cuCtxSynchronize"),
	SYM(StreamCreate, "cuStreamCreate"),
	SYM(EventCreate, "cuEventCreate"),
	SYM(EventRecord, "cuEventRecord"),
	SYM(EventSynchronize, "cuEventSynchronize"),
	SYM(EventElapsedTime, "cuEventElapsedTime_v2"),
	SYM(MemAlloc, "cuMemAlloc_v2"),
	SYM(MemFree, "cuMemFree_v2"),
	SYM(MemsetD32, "cuMemsetD32_v2"),
	SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
	SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
	SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
	SYM(ModuleLoadData, "cuModuleLoadData"),
	SYM(ModuleGetFunction, "cuModuleGetFunction"),
	SYM(LaunchKernel, "cuLaunchKernel"),
};
#undef SYM

static CUstream stream;
static void *ev0, *ev1;

static const char *
cuerr(CUresult r)
{
	const char *s = NULL;

	if (cu.GetErrorName == NULL || cu.GetErrorName(r, &s) != 0 || !s)
		return "unknown CUDA error";
	return s;
}

static void
die(const char *what, CUresult r)
{
	fprintf(stderr, "gpu_ref: %s: %s (%d)\n", what, cuerr(r), r);
	exit(1);
}

#define CK(call)                                                              \
	do {                                                                  \
		CUresult r_ = (call);                                         \
		if (r_ != 0)                                                  \
			die(#call, r_);                                       \
	} while (0)

/* dlsym into a function pointer (slot: its address). */
static int
resolve(void *lib, const char *name, void *slot)
{
	void *f = dlsym(lib, name);

	if (f == NULL)
		return -1;
	memcpy(slot, &f, sizeof f);
	return 0;
}

/* The first of names that loads, then the first match of globs. */
static void *
open_any(const char *const *names, const char *const *globs, char *why,
	 size_t n)
{
	void *h = NULL;

	for (; *names && h == NULL; names++)
		if ((h = dlopen(*names, RTLD_NOW | RTLD_LOCAL)) == NULL)
			snprintf(why, n, "%s", dlerror());
	for (; globs && *globs && h == NULL; globs++) {
		glob_t g;

		if (glob(*globs, 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc && h == NULL; i++)
			h = dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_LOCAL);
		globfree(&g);
	}
	return h;
}

/* Milliseconds of the work fn(arg) queues on the stream: the best of
 * REPS after one warm-up. */
static double
best_ms(void (*fn)(void *), void *arg)
{
	double best = INFINITY;

	fn(arg);
	CK(cu.CtxSynchronize());
	for (int i = 0; i < REPS; i++) {
		float ms = 0;

		CK(cu.EventRecord(ev0, stream));
		fn(arg);
		CK(cu.EventRecord(ev1, stream));
		CK(cu.EventSynchronize(ev1));
		CK(cu.EventElapsedTime(&ms, ev0, ev1));
		if (ms < best)
			best = ms;
	}
	return best;
}

/* ------------------------------------------------------------- copy */

static CUdeviceptr copy_src, copy_dst;

static void
do_copy(void *arg)
{
	(void)arg;
	CK(cu.MemcpyDtoDAsync(copy_dst, copy_src, COPY_BYTES, stream));
}

static void
bench_copy(void)
{
	double ms;

	CK(cu.MemAlloc(&copy_src, COPY_BYTES));
	CK(cu.MemAlloc(&copy_dst, COPY_BYTES));
	CK(cu.MemsetD32(copy_src, 0x3f800000u, COPY_BYTES / 4));
	ms = best_ms(do_copy, NULL);
	printf("copy_dtod_1GiB %.1f GB/s\n", 2.0 * COPY_BYTES / ms / 1e6);
	CK(cu.MemFree(copy_src));
	CK(cu.MemFree(copy_dst));
}

/* ------------------------------------------------------- read (sum) */

static const char sum_src[] =
	"extern \"C\" __global__ void rsum(const float4 *__restrict__ x,\n"
	"\tunsigned long long n4, float *part)\n"
	"{\n"
	"\tsize_t stride = (size_t)gridDim.x * blockDim.x;\n"
	"\tsize_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
	"\tfloat s0 = 0, s1 = 0, s2 = 0, s3 = 0;\n"
	"\tfor (; i + 3 * stride < n4; i += 4 * stride) {\n"
	"\t\tfloat4 a = x[i], b = x[i + stride], c = x[i + 2 * stride],\n"
	"\t\t       d = x[i + 3 * stride];\n"
	"\t\ts0 += (a.x + a.y) + (a.z + a.w);\n"
	"\t\ts1 += (b.x + b.y) + (b.z + b.w);\n"
	"\t\ts2 += (c.x + c.y) + (c.z + c.w);\n"
	"\t\ts3 += (d.x + d.y) + (d.z + d.w);\n"
	"\t}\n"
	"\tfor (; i < n4; i += stride) {\n"
	"\t\tfloat4 a = x[i];\n"
	"\t\ts0 += (a.x + a.y) + (a.z + a.w);\n"
	"\t}\n"
	"\tfloat s = (s0 + s1) + (s2 + s3);\n"
	"\tfor (int o = 16; o > 0; o /= 2)\n"
	"\t\ts += __shfl_down_sync(0xffffffffu, s, o);\n"
	"\t__shared__ float w[32];\n"
	"\tif (threadIdx.x % 32 == 0)\n"
	"\t\tw[threadIdx.x / 32] = s;\n"
	"\t__syncthreads();\n"
	"\tif (threadIdx.x == 0) {\n"
	"\t\tfloat t = 0;\n"
	"\t\tfor (int k = 0; k < (int)(blockDim.x / 32); k++)\n"
	"\t\t\tt += w[k];\n"
	"\t\tpart[blockIdx.x] = t;\n"
	"\t}\n"
	"}\n";

typedef struct Sum {
	void *fn;
	CUdeviceptr x, part;
	unsigned long long n4;
	unsigned grid;
} Sum;

static void
do_sum(void *arg)
{
	Sum *s = arg;
	void *args[3] = {&s->x, &s->n4, &s->part};

	CK(cu.LaunchKernel(s->fn, s->grid, 1, 1, 256, 1, 1, 0, stream, args,
			   NULL));
}

/* PTX of sum_src for cc (malloc'd), or NULL with why. */
static char *
nvrtc_ptx(int cc, char *why, size_t n)
{
	static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12",
					    "libnvrtc.so", NULL};
	static const char *const globs[] = {
		"/usr/local/cuda/lib64/libnvrtc.so*",
		"/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so*", NULL};
	int (*create)(void **, const char *, const char *, int,
		      const char *const *, const char *const *);
	int (*compile)(void *, int, const char *const *);
	int (*logsize)(void *, size_t *), (*getlog)(void *, char *);
	int (*ptxsize)(void *, size_t *), (*getptx)(void *, char *);
	void *lib = open_any(names, globs, why, n), *prog = NULL;
	char arch[40], *ptx = NULL;
	const char *opt[1] = {arch};
	size_t len = 0;

	if (lib == NULL)
		return NULL;
	if (resolve(lib, "nvrtcCreateProgram", &create) ||
	    resolve(lib, "nvrtcCompileProgram", &compile) ||
	    resolve(lib, "nvrtcGetProgramLogSize", &logsize) ||
	    resolve(lib, "nvrtcGetProgramLog", &getlog) ||
	    resolve(lib, "nvrtcGetPTXSize", &ptxsize) ||
	    resolve(lib, "nvrtcGetPTX", &getptx)) {
		snprintf(why, n, "an NVRTC without its functions");
		return NULL;
	}
	snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", cc);
	if (create(&prog, sum_src, "rsum.cu", 0, NULL, NULL) != 0) {
		snprintf(why, n, "nvrtcCreateProgram failed");
		return NULL;
	}
	if (compile(prog, 1, opt) != 0) {
		char log[2048] = "";

		if (logsize(prog, &len) == 0 && len < sizeof log)
			getlog(prog, log);
		snprintf(why, n, "NVRTC: %s", log);
		return NULL;
	}
	if (ptxsize(prog, &len) != 0 || (ptx = malloc(len + 1)) == NULL ||
	    getptx(prog, ptx) != 0) {
		snprintf(why, n, "nvrtcGetPTX failed");
		free(ptx);
		return NULL;
	}
	ptx[len] = '\0';
	return ptx;
}

static void
bench_sum(int cc, int sms)
{
	char why[512] = "not found", *ptx = nvrtc_ptx(cc, why, sizeof why);
	void *mod;
	float *part;
	double ms, total = 0;
	Sum s;

	if (ptx == NULL) {
		printf("read_sum_1GiB: nvrtc: %s\n", why);
		return;
	}
	CK(cu.ModuleLoadData(&mod, ptx));
	free(ptx);
	CK(cu.ModuleGetFunction(&s.fn, mod, "rsum"));
	s.n4 = SUM_FLOATS / 4;
	s.grid = (unsigned)sms * 8; /* 8 blocks of 256 threads an SM */
	CK(cu.MemAlloc(&s.x, SUM_FLOATS * 4));
	CK(cu.MemAlloc(&s.part, (size_t)s.grid * 4));
	CK(cu.MemsetD32(s.x, 0x3f800000u, SUM_FLOATS)); /* 1.0f */
	ms = best_ms(do_sum, &s);
	if ((part = malloc((size_t)s.grid * 4)) == NULL)
		exit(1);
	CK(cu.MemcpyDtoH(part, s.part, (size_t)s.grid * 4));
	for (unsigned i = 0; i < s.grid; i++)
		total += part[i];
	free(part);
	if (total != (double)SUM_FLOATS)
		printf("# read_sum: wrong sum %.0f (expected %zu)\n", total,
		       SUM_FLOATS);
	printf("read_sum_1GiB %.1f GB/s\n", SUM_FLOATS * 4.0 / ms / 1e6);
	CK(cu.MemFree(s.x));
	CK(cu.MemFree(s.part));
}

/* ---------------------------------------------------------- cuBLAS */

typedef struct Gemm {
	int (*sgemm)(void *, int, int, int, int, int, const float *,
		     const float *, int, const float *, int, const float *,
		     float *, int);
	void *h;
	int n;
	CUdeviceptr a, b, c;
} Gemm;

static void
do_gemm(void *arg)
{
	Gemm *g = arg;
	float one = 1, zero = 0;
	int r = g->sgemm(g->h, 0, 0, g->n, g->n, g->n, &one,
			 (const float *)(uintptr_t)g->a, g->n,
			 (const float *)(uintptr_t)g->b, g->n, &zero,
			 (float *)(uintptr_t)g->c, g->n);

	if (r != 0) {
		fprintf(stderr, "gpu_ref: cublasSgemm_v2: status %d\n", r);
		exit(1);
	}
}

static void
bench_gemm(void)
{
	static const char *const names[] = {"libcublas.so.13",
					    "libcublas.so.12", NULL};
	static const char *const globs[] = {
		"/usr/local/cuda/lib64/libcublas.so*", NULL};
	static const int sizes[] = {4096, 8192};
	char why[512] = "not found";
	void *lib = open_any(names, globs, why, sizeof why);
	int (*create)(void **), (*setstream)(void *, CUstream);
	int (*setmath)(void *, int), (*destroy)(void *);
	size_t max = (size_t)8192 * 8192;
	float *host;
	Gemm g;

	if (lib == NULL) {
		printf("cublas: not found (%s)\n", why);
		return;
	}
	if (resolve(lib, "cublasCreate_v2", &create) ||
	    resolve(lib, "cublasDestroy_v2", &destroy) ||
	    resolve(lib, "cublasSetStream_v2", &setstream) ||
	    resolve(lib, "cublasSetMathMode", &setmath) ||
	    resolve(lib, "cublasSgemm_v2", &g.sgemm)) {
		printf("cublas: not found (a library without cublasSgemm_v2 "
		       "and the rest)\n");
		return;
	}
	if (create(&g.h) != 0 || setstream(g.h, stream) != 0) {
		printf("cublas: not found (cublasCreate_v2 failed)\n");
		return;
	}
	if ((host = malloc(max * 4)) == NULL)
		exit(1);
	for (size_t i = 0; i < max; i++) /* in [-1, 1) */
		host[i] = (float)((i * 2654435761u) % 2048) / 1024.0f - 1.0f;
	CK(cu.MemAlloc(&g.a, max * 4));
	CK(cu.MemAlloc(&g.b, max * 4));
	CK(cu.MemAlloc(&g.c, max * 4));
	CK(cu.MemcpyHtoD(g.a, host, max * 4));
	CK(cu.MemcpyHtoD(g.b, host, max * 4));
	free(host);
	for (int k = 0; k < 2; k++) {
		g.n = sizes[k];
		for (int tf32 = 0; tf32 < 2; tf32++) {
			double ms, n = g.n;

			/* CUBLAS_DEFAULT_MATH 0,
			   CUBLAS_TF32_TENSOR_OP_MATH 3 */
			if (setmath(g.h, tf32 ? 3 : 0) != 0) {
				printf("sgemm_%s_%d: cublasSetMathMode "
				       "failed\n", tf32 ? "tf32" : "fp32", g.n);
				continue;
			}
			ms = best_ms(do_gemm, &g);
			printf("sgemm_%s_%d %.2f TFLOP/s\n",
			       tf32 ? "tf32" : "fp32", g.n,
			       2 * n * n * n / ms / 1e9);
		}
	}
	destroy(g.h);
	CK(cu.MemFree(g.a));
	CK(cu.MemFree(g.b));
	CK(cu.MemFree(g.c));
}

int
main(void)
{
	static const char *const names[] = {"libcuda.so.1", NULL};
	char why[512] = "", name[96] = "";
	void *lib = open_any(names, NULL, why, sizeof why), *ctx;
	int dev, n = 0, v = 0, ma = 0, mi = 0, sms = 0;
	size_t mem = 0;
	CUresult r;

	if (lib == NULL) {
		fprintf(stderr, "gpu_ref: no GPU: cannot load libcuda.so.1 "
			"(%s)\n", why);
		return 1;
	}
	for (size_t i = 0; i < sizeof cusyms / sizeof cusyms[0]; i++)
		if (resolve(lib, cusyms[i].name, cusyms[i].slot) != 0 &&
		    /* drivers before 12.8 have only the first version */
		    (cusyms[i].slot != (void *)&cu.EventElapsedTime ||
		     resolve(lib, "cuEventElapsedTime", cusyms[i].slot))) {
			fprintf(stderr, "gpu_ref: no GPU: the driver has no "
				"%s\n", cusyms[i].name);
			return 1;
		}
	if ((r = cu.Init(0)) != 0) {
		fprintf(stderr, "gpu_ref: no GPU: cuInit: %s%s\n", cuerr(r),
			r == 34 ? " (the toolkit's stub: no driver installed)"
				: "");
		return 1;
	}
	if ((r = cu.DeviceGetCount(&n)) != 0 || n == 0) {
		fprintf(stderr, "gpu_ref: no GPU: %s\n",
			r ? cuerr(r) : "no CUDA device");
		return 1;
	}
	CK(cu.DeviceGet(&dev, 0));
	CK(cu.DriverGetVersion(&v));
	CK(cu.DeviceGetName(name, sizeof name, dev));
	CK(cu.DeviceGetAttribute(&ma, 75, dev));
	CK(cu.DeviceGetAttribute(&mi, 76, dev));
	CK(cu.DeviceGetAttribute(&sms, 16, dev)); /* MULTIPROCESSOR_COUNT */
	CK(cu.DeviceTotalMem(&mem, dev));
	CK(cu.PrimaryCtxRetain(&ctx, dev));
	CK(cu.CtxSetCurrent(ctx));
	CK(cu.StreamCreate(&stream, 1));
	CK(cu.EventCreate(&ev0, 0));
	CK(cu.EventCreate(&ev1, 0));
	printf("# device: %s (cc %d.%d, %d SMs, %.1f GiB)\n", name, ma, mi, sms,
	       (double)mem / (1 << 30));
	printf("# driver: %d.%d\n", v / 1000, v % 1000 / 10);
	printf("# best of %d after a warm-up; 1 GB = 1e9 B; copy counts bytes "
	       "read + written\n", REPS);
	fflush(stdout);
	bench_copy();
	fflush(stdout);
	bench_sum(ma * 10 + mi, sms);
	fflush(stdout);
	bench_gemm();
	return 0;
}
