/*
 * tests/unit/gpu_test.c: NVRTC and its kernel cache (codegen/nvrtc.c),
 * and the runtime's GPU layer (runtime/gpu.c; runtime/tfg.h "GPUs").
 *
 * NVRTC tests compile into a fresh cache directory ($TFG_CUDA_CACHE)
 * and are skipped where NVRTC cannot be loaded (TEST_SKIP_GPU: failed
 * under TFG_REQUIRE_GPU=1).  tfg_gpu_probe
 * answers once per process, so each test that needs its own answer
 * runs in a child process (CHECK there, not ASSERT): no GPU (TFG_NO_GPU),
 * and a pretend driver, build/tests/libcuda_mock.so (tests/unit/
 * cuda_mock.c, through $TFG_LIBCUDA), that checks contexts and records
 * how copies are ordered between streams.  t_real runs a kernel on a
 * real GPU where there is one, and is skipped elsewhere.
 */
#include "tests/unit/test.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/cuda.h"
#include "runtime/proto.h"

static char cache[64];
static char mock[PATH_MAX];

static const char add_src[] =
	"extern \"C\" __global__ void tfg_add1(float *out, const float *in)\n"
	"{\n"
	"\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"\tout[i] = in[i] + 1.0f;\n"
	"}\n"
	"extern \"C\" __global__ void tfg_shm(float *out, const float *in)\n"
	"{\n"
	"\textern __shared__ float s[];\n"
	"\tint i = threadIdx.x;\n"
	"\ts[i] = in[i];\n"
	"\ts[16384 + i] = 1.0f;\n"
	"\t__syncthreads();\n"
	"\tout[i] = s[i] + s[16384 + i];\n"
	"}\n"
	"__device__ float tfg_g0[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n";

static void
setup(void)
{
	char self[PATH_MAX], *slash;
	ssize_t n;

	snprintf(cache, sizeof cache, "/tmp/tfg-gpu-test-XXXXXX");
	ASSERT(mkdtemp(cache) != NULL);
	setenv("TFG_CUDA_CACHE", cache, 1);
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	ASSERT(n > 0);
	self[n] = '\0';
	slash = strrchr(self, '/');
	ASSERT(slash != NULL);
	*slash = '\0';
	ASSERT(snprintf(mock, sizeof mock, "%s/libcuda_mock.so", self) <
	       (int)sizeof mock);
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
	ASSERT_EQ(system(cmd), 0);
}

/* The test goes on where NVRTC loads, and is skipped where not (a
 * failure under TFG_REQUIRE_GPU=1). */
static void
need_nvrtc(void)
{
	char err[600];

	if (cu_nvrtc_version(err, sizeof err) <= 0)
		TEST_SKIP_GPU("%s", err);
}

/* The number of files in the cache directory. */
static int
cache_files(void)
{
	char cmd[160];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", cache);
	if ((p = popen(cmd, "r")) == NULL)
		return -1;
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

/* ------------------------------------------------------------- NVRTC */

static void
t_nvrtc_compile(void)
{
	char err[2048], *p1 = NULL, *p2 = NULL;
	int cached = -1;
	double ms = -1;

	need_nvrtc();
	ASSERT_EQ(cu_compile(add_src, 90, &p1, &cached, &ms, err, sizeof err),
		  0);
	ASSERT_EQ(cached, 0);
	ASSERT(ms >= 0);
	ASSERT(strstr(p1, ".entry tfg_add1") != NULL);
	ASSERT(strstr(p1, ".target sm_90") != NULL);
	ASSERT_EQ(cache_files(), 1); /* no temporary file left */
	ASSERT_EQ(cu_compile(add_src, 90, &p2, &cached, &ms, err, sizeof err),
		  0);
	ASSERT_EQ(cached, 1);
	ASSERT_STREQ(p1, p2);
	free(p2);
	/* another architecture is another entry */
	ASSERT_EQ(cu_compile(add_src, 80, &p2, &cached, &ms, err, sizeof err),
		  0);
	ASSERT_EQ(cached, 0);
	ASSERT(strstr(p2, ".target sm_80") != NULL);
	ASSERT_EQ(cache_files(), 2);
	free(p1);
	free(p2);
}

/* Damages the one cache file of src (cc 90) with cmd ("%s": its path). */
static void
damage(const char *fmt)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, fmt, cache);
	ASSERT_EQ(system(cmd), 0);
}

static void
t_nvrtc_damaged(void)
{
	static const char src[] = "extern \"C\" __global__ void "
				  "tfg_dmg(float *o) { o[0] = 2; }\n";
	static const char *const how[] = {
		/* a byte of the PTX changed */
		"f=$(ls %s/*.ptx | head -1) && printf X | "
		"dd of=$f bs=1 seek=300 conv=notrunc status=none",
		/* cut short */
		"f=$(ls %s/*.ptx | head -1) && truncate -s 200 $f",
		/* no header */
		"f=$(ls %s/*.ptx | head -1) && echo junk > $f",
	};
	char err[2048], *p1 = NULL, *p2 = NULL;
	int cached = -1;
	double ms;

	need_nvrtc();
	damage("rm -f %s/*.ptx");
	ASSERT_EQ(cu_compile(src, 90, &p1, &cached, &ms, err, sizeof err), 0);
	ASSERT_EQ(cached, 0);
	for (int i = 0; i < 3; i++) {
		damage(how[i]);
		ASSERT_EQ(cu_compile(src, 90, &p2, &cached, &ms, err,
				     sizeof err), 0);
		ASSERT_EQ(cached, 0); /* compiled again */
		ASSERT_STREQ(p1, p2);
		free(p2);
		ASSERT_EQ(cu_compile(src, 90, &p2, &cached, &ms, err,
				     sizeof err), 0);
		ASSERT_EQ(cached, 1); /* and rewritten */
		ASSERT_STREQ(p1, p2);
		free(p2);
	}
	free(p1);
}

static void
t_nvrtc_error(void)
{
	static const char src[] =
		"extern \"C\" __global__ void tfg_e(float *o)\n"
		"{\n"
		"\to[0] = undeclared_thing;\n"
		"}\n";
	char err[2048], small[40], *p = NULL;
	int cached = -1;
	double ms;

	need_nvrtc();
	ASSERT_EQ(cu_compile(src, 90, &p, &cached, &ms, err, sizeof err), -1);
	ASSERT(p == NULL);
	ASSERT(strstr(err, "NVRTC_ERROR_COMPILATION") != NULL);
	ASSERT(strstr(err, "tfg.cu(3): error: identifier \"undeclared_thing\" "
		      "is undefined") != NULL);
	/* truncated to errlen */
	ASSERT_EQ(cu_compile(src, 90, &p, &cached, &ms, small, sizeof small),
		  -1);
	ASSERT_EQ(strlen(small), sizeof small - 1);
	ASSERT_EQ(cu_compile(src, 0, &p, &cached, &ms, err, sizeof err), -1);
	ASSERT(strstr(err, "compute capability 0") != NULL);
}

/* <mma.h> (TF32 wmma) compiles: the toolkit's include directory is
 * passed. */
static void
t_nvrtc_wmma(void)
{
	static const char src[] =
		"#include <mma.h>\n"
		"using namespace nvcuda;\n"
		"extern \"C\" __global__ void tfg_mma(float *a, float *b, "
		"float *c)\n"
		"{\n"
		"\twmma::fragment<wmma::matrix_a, 16, 16, 8, "
		"wmma::precision::tf32, wmma::row_major> fa;\n"
		"\twmma::fragment<wmma::matrix_b, 16, 16, 8, "
		"wmma::precision::tf32, wmma::row_major> fb;\n"
		"\twmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;\n"
		"\twmma::fill_fragment(fc, 0.0f);\n"
		"\twmma::load_matrix_sync(fa, a, 8);\n"
		"\twmma::load_matrix_sync(fb, b, 16);\n"
		"\tfor (int i = 0; i < fa.num_elements; i++)\n"
		"\t\tfa.x[i] = wmma::__float_to_tf32(fa.x[i]);\n"
		"\twmma::mma_sync(fc, fa, fb, fc);\n"
		"\twmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);\n"
		"}\n";
	char err[4096], *p = NULL;
	int cached = -1;
	double ms;

	need_nvrtc();
	if (cu_compile(src, 90, &p, &cached, &ms, err, sizeof err) != 0)
		TEST_FAIL_("wmma: %s", err);
	ASSERT(strstr(p, "mma.sync") != NULL || strstr(p, "wmma") != NULL);
	free(p);
}

static void
t_nvrtc_off(void)
{
	char err[2048], *p = NULL;
	int cached = -1, before;
	double ms;

	need_nvrtc();
	before = cache_files();
	setenv("TFG_CUDA_CACHE", "off", 1);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(cu_compile("extern \"C\" __global__ void k(int *p) "
				     "{ *p = 7; }", 90, &p, &cached, &ms, err,
				     sizeof err), 0);
		ASSERT_EQ(cached, 0);
		free(p);
	}
	setenv("TFG_CUDA_CACHE", cache, 1);
	ASSERT_EQ(cache_files(), before);
	/* a cache that cannot be made is no error */
	setenv("TFG_CUDA_CACHE", "/proc/self/no/such/dir", 1);
	ASSERT_EQ(cu_compile("extern \"C\" __global__ void k(int *p) "
			     "{ *p = 8; }", 90, &p, &cached, &ms, err,
			     sizeof err), 0);
	ASSERT_EQ(cached, 0);
	free(p);
	setenv("TFG_CUDA_CACHE", cache, 1);
}

/* ------------------------------------------------------ runtime, children */

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "%s:%d: child: %s\n", __FILE__,       \
				__LINE__, #c);                                \
			_exit(1);                                             \
		}                                                             \
	} while (0)
#define CHECK_IN(msg, s)                                                      \
	do {                                                                  \
		if (strstr((msg), (s)) == NULL) {                             \
			fprintf(stderr, "%s:%d: child: \"%s\" not in \"%s\"\n",\
				__FILE__, __LINE__, (s), (msg));              \
			_exit(1);                                             \
		}                                                             \
	} while (0)

/* Runs fn in a child process; asserts that it passed. */
/* A child's exit status for "cannot run here", and its reason (in a
 * page the parent shares). */
#define CHILD_SKIP 77
static char *child_why;

/* fn in a child process, which must exit 0; the child's exit status,
 * 0 or CHILD_SKIP. */
static int
in_child(void (*fn)(void))
{
	pid_t pid;
	int st = 0;

	if (child_why == NULL) {
		child_why = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT(child_why != MAP_FAILED);
	}
	child_why[0] = '\0';
	fflush(NULL);
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		alarm(60);
		fn();
		fflush(NULL);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	if (WEXITSTATUS(st) != CHILD_SKIP)
		ASSERT_EQ(WEXITSTATUS(st), 0);
	return WEXITSTATUS(st);
}

/* A part's context with room for its error after it (free it whole). */
static RtCtx *
ctx_new(void)
{
	struct {
		RtCtx c;
		TfgError err;
	} *r = calloc(1, sizeof *r);

	CHECK(r != NULL);
	r->c.err = &r->err;
	return &r->c;
}

static void
reset(RtCtx *c)
{
	c->err->code = TFG_OK;
	c->err->msg[0] = '\0';
}

/* What every entry does without a GPU: an error with a message. */
static void
entries_fail(void)
{
	static const char *const kern[] = {"k"};
	TfgGpuModule m = {1, "ptx", 1, kern, 0, NULL};
	uint32_t dims[7] = {1, 1, 1, 1, 1, 1, 0};
	RtCtx *c = ctx_new();
	void *p = (void *)1;
	char h1[8] = "abcdefg", h2[8] = "";

	CHECK(tfg_rt_gpu_arena(c, 0, 1024, &p) == TFG_EGPU);
	CHECK(p == NULL);
	CHECK_IN(c->err->msg, "gpu:0: no usable GPU: ");
	reset(c);
	CHECK(tfg_rt_gpu_launch(c, &m, 0, 0, dims, NULL) == TFG_EGPU);
	CHECK(c->err->msg[0] != '\0');
	reset(c);
	CHECK(tfg_rt_gpu_global(c, &m, 0, 0, &p) == TFG_EINVAL);
	reset(c);
	CHECK(tfg_rt_gpu_copy(c, 1, h2, 0, h1, 8) == TFG_EGPU);
	CHECK(tfg_rt_gpu_copy(c, 0, h2, 0, h1, 8) == TFG_OK);
	CHECK(strcmp(h2, "abcdefg") == 0);
	CHECK(tfg_rt_gpu_arena(NULL, 0, 16, &p) == TFG_EINVAL);
	CHECK(rt_gpu_step_end(c) == TFG_OK);
	CHECK(c->gpu == NULL);
	free(c);
}

static void
child_disabled(void)
{
	TfgGpuInfo gi;

	setenv("TFG_NO_GPU", "1", 1);
	setenv("TFG_LIBCUDA", mock, 1); /* not even opened */
	CHECK(tfg_gpu_probe(&gi) == 0);
	CHECK(gi.count == 0);
	CHECK(strcmp(gi.why, "TFG_NO_GPU is set") == 0);
	entries_fail();
	CHECK_IN(gi.why, "TFG_NO_GPU");
}

static void
t_probe_disabled(void)
{
	in_child(child_disabled);
}

static void
child_missing(void)
{
	TfgGpuInfo gi;

	setenv("TFG_LIBCUDA", "libcuda-no-such.so.1", 1);
	CHECK(tfg_gpu_probe(&gi) == 0);
	CHECK_IN(gi.why, "cannot load libcuda-no-such.so.1");
	entries_fail();
}

static void
t_probe_missing(void)
{
	in_child(child_missing);
}

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

static void
child_stub(void)
{
	TfgGpuInfo gi;

	setenv("TFG_LIBCUDA", STUB, 1);
	CHECK(tfg_gpu_probe(&gi) == 0);
	CHECK_IN(gi.why, "is the CUDA toolkit's stub (no driver installed)");
	entries_fail();
}

/* The toolkit's stub driver, where there is one. */
static void
t_probe_stub(void)
{
	if (access(STUB, R_OK) != 0)
		TEST_SKIP("no %s", STUB);
	in_child(child_stub);
}

/* This machine, as it is: a GPU or a reason why none.  (In a child, as
 * every test that probes: a process that has initialised CUDA cannot
 * use it in the children it forks.) */
static void
child_here(void)
{
	TfgGpuInfo gi, again;
	int n = tfg_gpu_probe(&gi);

	CHECK(n == gi.count);
	CHECK(tfg_gpu_probe(&again) == n);
	CHECK(memcmp(&gi, &again, sizeof gi) == 0);
	if (n == 0) {
		CHECK(gi.why[0] != '\0');
		printf("no GPU here: %s\n", gi.why);
		entries_fail();
		return;
	}
	for (int i = 0; i < n; i++) {
		CHECK(gi.cc[i] >= 30);
		CHECK(gi.mem[i] > 0);
		printf("gpu %d: %s, cc %d, %llu MiB, driver %d\n", i,
		       gi.name[i], gi.cc[i],
		       (unsigned long long)(gi.mem[i] >> 20), gi.driver);
	}
}

static void
t_probe_here(void)
{
	in_child(child_here);
}

/* ------------------------------------------------ the pretend driver */

static const char *const mock_kern[] = {"tfg_add1", "tfg_bad", "tfg_late"};
static const char *const mock_glob[] = {"tfg_g0", "tfg_gx"};
static const TfgGpuModule mock_mod = {
	7, ".entry tfg_add1 .entry tfg_bad .entry tfg_late", 3, mock_kern, 2,
	mock_glob};

static char *
mock_log(void)
{
	void *h = dlopen(mock, RTLD_NOW | RTLD_NOLOAD);
	char *log;

	CHECK(h != NULL);
	log = dlsym(h, "mock_log");
	CHECK(log != NULL);
	dlclose(h);
	return log;
}

static int *
mock_int(const char *name)
{
	void *h = dlopen(mock, RTLD_NOW | RTLD_NOLOAD);
	int *p;

	CHECK(h != NULL);
	p = dlsym(h, name);
	CHECK(p != NULL);
	dlclose(h);
	return p;
}

/* x + 1 on gpu:N, from src to dst (device addresses). */
static int
add1(RtCtx *c, uint32_t gpu, char *dst, char *src, uint32_t n)
{
	uint32_t dims[7] = {1, 1, 1, n, 1, 1, 0};
	void *args[2] = {&dst, &src};

	return tfg_rt_gpu_launch(c, &mock_mod, gpu, 0, dims, args);
}

static void *
thread_launch(void *arg)
{
	char *a1 = arg;

	return (void *)(intptr_t)add1(ctx_new(), 1, a1 + 512, a1 + 256, 64);
}

static void
child_mock(void)
{
	TfgGpuInfo gi;
	RtCtx *c = ctx_new();
	char *a0, *a0b, *a1, *a2, *log;
	float x[64], y[64];
	void *g, *ret;
	pthread_t th;
	int allocs;

	setenv("TFG_LIBCUDA", mock, 1);
	CHECK(tfg_gpu_probe(&gi) == 2);
	CHECK(strcmp(gi.name[1], "Mock GPU 1") == 0);
	CHECK(gi.cc[0] == 90 && gi.driver == 13000);
	CHECK(gi.mem[1] == ((uint64_t)80 << 30) + 1);
	log = mock_log();

	/* one arena a step and index; streams s0 s1 s2 for gpu:0 1 2 */
	CHECK(tfg_rt_gpu_arena(c, 0, 4000, (void **)&a0) == TFG_OK);
	CHECK(((uintptr_t)a0 & 255) == 0);
	CHECK(tfg_rt_gpu_arena(c, 0, 1000, (void **)&a0b) == TFG_OK);
	CHECK(a0b == a0);
	CHECK(tfg_rt_gpu_arena(c, 1, 4096, (void **)&a1) == TFG_OK);
	CHECK(tfg_rt_gpu_arena(c, 2, 4096, (void **)&a2) == TFG_OK);
	CHECK(a1 != a0 && a2 != a0 && a2 != a1);

	for (int i = 0; i < 64; i++)
		x[i] = (float)i;
	CHECK(tfg_rt_gpu_copy(c, 1, a0, TFG_DEV_HOST, x, sizeof x) == 0);
	CHECK(add1(c, 0, a0 + 256, a0, 64) == TFG_OK);
	/* gpu:0 -> gpu:1: two devices */
	log[0] = '\0';
	CHECK(tfg_rt_gpu_copy(c, 2, a1 + 256, 1, a0 + 256, sizeof x) == 0);
	CHECK(strcmp(log, "rec(e0,s1) wait(s0,e0) peer(s0) rec(e1,s0) "
		     "wait(s1,e1) ") == 0);
	CHECK(*mock_int("mock_peer_enabled") == 2);
	/* gpu:1 in another thread (its context is made current there) */
	CHECK(pthread_create(&th, NULL, thread_launch, a1) == 0);
	CHECK(pthread_join(th, &ret) == 0 && ret == NULL);
	/* gpu:0 -> gpu:2: one device, two streams; then within gpu:2 */
	log[0] = '\0';
	CHECK(tfg_rt_gpu_copy(c, 3, a2, 2, a1 + 512, sizeof x) == 0);
	CHECK(strcmp(log, "rec(e2,s2) wait(s1,e2) peer(s1) rec(e3,s1) "
		     "wait(s2,e3) ") == 0);
	log[0] = '\0';
	CHECK(tfg_rt_gpu_copy(c, 3, a2 + 256, 3, a2, sizeof x) == 0);
	CHECK(strcmp(log, "copy(s2) ") == 0);
	log[0] = '\0';
	CHECK(tfg_rt_gpu_copy(c, 1, a0 + 1024, 3, a2 + 256, sizeof x) == 0);
	CHECK(strcmp(log, "rec(e4,s0) wait(s2,e4) copy(s2) rec(e5,s2) "
		     "wait(s0,e5) ") == 0);
	CHECK(tfg_rt_gpu_copy(c, TFG_DEV_HOST, y, 1, a0 + 1024, sizeof y) ==
	      0);
	for (int i = 0; i < 64; i++)
		CHECK(y[i] == (float)i + 2);

	/* globals; dynamic shared memory past 48 KiB opts in once */
	CHECK(tfg_rt_gpu_global(c, &mock_mod, 1, 0, &g) == TFG_OK && g);
	CHECK(tfg_rt_gpu_global(c, &mock_mod, 1, 1, &g) == TFG_EGPU);
	CHECK_IN(c->err->msg, "gpu:1 (Mock GPU 1): cuModuleGetGlobal(tfg_gx): "
		 "CUDA_ERROR_NOT_FOUND");
	CHECK(tfg_rt_gpu_global(c, &mock_mod, 1, 2, &g) == TFG_EINVAL);
	{
		uint32_t dims[7] = {1, 1, 1, 64, 1, 1, 65536};
		void *args[2] = {&a0, &a0};

		CHECK(tfg_rt_gpu_launch(c, &mock_mod, 0, 0, dims, args) == 0);
		CHECK(*mock_int("mock_shmem_attr") == 65536);
	}

	/* the step ends: arenas kept for the next one */
	allocs = *mock_int("mock_allocs");
	CHECK(allocs == 3);
	reset(c);
	CHECK(rt_gpu_step_end(c) == TFG_OK && c->gpu == NULL);
	CHECK(*mock_int("mock_frees") == 0);
	CHECK(tfg_rt_gpu_arena(c, 0, 2048, (void **)&a0b) == TFG_OK);
	CHECK(a0b == a0 && *mock_int("mock_allocs") == allocs);
	CHECK(tfg_rt_gpu_arena(c, 0, 8192, (void **)&a0b) == TFG_OK);
	CHECK(a0b != a0 && *mock_int("mock_allocs") == allocs + 1);

	/* errors */
	{
		uint32_t dims[7] = {1, 1, 1, 64, 1, 1, 0};
		void *args[2] = {&a0, &a0};
		static const char *const k1[] = {"tfg_add1"};
		static const char *const k2[] = {"tfg_nope"};
		TfgGpuModule bad = {8, "BAD", 1, k1, 0, NULL};
		TfgGpuModule nope = {9, ".entry tfg_add1", 1, k2, 0, NULL};

		CHECK(tfg_rt_gpu_launch(c, &mock_mod, 0, 1, dims, args) ==
		      TFG_EGPU);
		CHECK_IN(c->err->msg, "gpu:0 (Mock GPU 0): cuLaunchKernel("
			 "tfg_bad): CUDA_ERROR_ILLEGAL_ADDRESS: an illegal "
			 "memory access was encountered");
		CHECK(tfg_rt_gpu_launch(c, &bad, 1, 0, dims, args) == TFG_EGPU);
		CHECK_IN(c->err->msg, "gpu:1 (Mock GPU 1): cuModuleLoadDataEx: "
			 "CUDA_ERROR_INVALID_PTX: mock error: ptxas fatal: "
			 "mock says BAD");
		CHECK(tfg_rt_gpu_launch(c, &nope, 1, 0, dims, args) ==
		      TFG_EGPU);
		CHECK_IN(c->err->msg, "cuModuleGetFunction(tfg_nope)");
		CHECK(tfg_rt_gpu_launch(c, &mock_mod, 0, 3, dims, args) ==
		      TFG_EINVAL);
		CHECK(tfg_rt_gpu_arena(c, 64, 16, &g) == TFG_EINVAL);
		CHECK(tfg_rt_gpu_arena(c, 5, (uint64_t)1 << 40, &g) ==
		      TFG_ENOMEM);
		CHECK_IN(c->err->msg, "gpu:5 (Mock GPU 1): cuMemAlloc("
			 "1099511627776 bytes): CUDA_ERROR_OUT_OF_MEMORY");
		/* trying again, it freed what gpu:1 (same device) kept */
		CHECK(*mock_int("mock_frees") == 1);
		/* a fault found when the step ends reaches the step */
		CHECK(tfg_rt_gpu_launch(c, &mock_mod, 0, 2, dims, args) == 0);
		reset(c);
		CHECK(rt_gpu_step_end(c) == TFG_EGPU);
		CHECK_IN(c->err->msg, "gpu:0 (Mock GPU 0): cuStreamSynchronize("
			 "end of step): CUDA_ERROR_ILLEGAL_ADDRESS");
		/* gpu:0's two arenas: freed, not kept */
		CHECK(*mock_int("mock_frees") == 3);
		CHECK(c->gpu == NULL);
	}
	/* NULL contexts are refused, and nothing crashes */
	{
		uint32_t dims[7] = {1, 1, 1, 64, 1, 1, 0};
		void *args[2] = {&a0, &a0};

		CHECK(tfg_rt_gpu_launch(NULL, &mock_mod, 0, 0, dims, args) ==
		      TFG_EINVAL);
	}
	free(c);
}

static void
t_mock(void)
{
	struct stat st;

	if (stat(mock, &st) != 0) {
		TEST_FAIL_("%s is missing (make builds it with this test)",
			   mock);
	}
	in_child(child_mock);
}

/* ------------------------------------------------------ a real GPU */

static void
child_real(void)
{
	static const char *const kern[] = {"tfg_add1", "tfg_shm"};
	static const char *const glob[] = {"tfg_g0"};
	TfgGpuInfo gi;
	TfgGpuModule m = {1, NULL, 2, kern, 1, glob};
	RtCtx *c = ctx_new();
	char err[4096], *ptx = NULL, *a0, *a1;
	float x[1024], y[1024], g4[4];
	uint32_t dims[7] = {4, 1, 1, 256, 1, 1, 0};
	void *args[2], *g;
	int cached;
	double ms;

	if (tfg_gpu_probe(&gi) == 0) {
		snprintf(child_why, 4096, "no GPU (%s)", gi.why);
		_exit(CHILD_SKIP);
	}
	if (cu_compile(add_src, gi.cc[0], &ptx, &cached, &ms, err,
		       sizeof err) != 0) {
		fprintf(stderr, "child: %s\n", err);
		_exit(1);
	}
	m.ptx = ptx;
	for (int i = 0; i < 1024; i++)
		x[i] = (float)i * 0.5f;
	CHECK(tfg_rt_gpu_arena(c, 0, 3 << 12, (void **)&a0) == 0);
	CHECK(tfg_rt_gpu_arena(c, 1, 3 << 12, (void **)&a1) == 0);
	CHECK(tfg_rt_gpu_copy(c, 1, a0, TFG_DEV_HOST, x, sizeof x) == 0);
	args[0] = &(char *){a0 + 4096};
	args[1] = &a0;
	if (tfg_rt_gpu_launch(c, &m, 0, 0, dims, args) != 0) {
		fprintf(stderr, "child: %s\n", c->err->msg);
		_exit(1);
	}
	CHECK(tfg_rt_gpu_copy(c, 2, a1, 1, a0 + 4096, sizeof x) == 0);
	args[0] = &(char *){a1 + 4096};
	args[1] = &a1;
	CHECK(tfg_rt_gpu_launch(c, &m, 1, 0, dims, args) == 0);
	/* 65 KiB of dynamic shared memory on the first 256 */
	dims[0] = 1;
	dims[6] = (16384 + 256) * 4;
	args[0] = &(char *){a1 + 8192};
	args[1] = &(char *){a1 + 4096};
	if (tfg_rt_gpu_launch(c, &m, 1, 1, dims, args) != 0) {
		fprintf(stderr, "child: %s\n", c->err->msg);
		_exit(1);
	}
	CHECK(tfg_rt_gpu_copy(c, TFG_DEV_HOST, y, 2, a1 + 4096, sizeof y) ==
	      0);
	for (int i = 0; i < 1024; i++)
		CHECK(y[i] == (float)i * 0.5f + 2);
	CHECK(tfg_rt_gpu_copy(c, TFG_DEV_HOST, y, 2, a1 + 8192, 1024) == 0);
	for (int i = 0; i < 256; i++)
		CHECK(y[i] == (float)i * 0.5f + 3);
	CHECK(tfg_rt_gpu_global(c, &m, 0, 0, &g) == 0);
	CHECK(tfg_rt_gpu_copy(c, TFG_DEV_HOST, g4, 1, g, sizeof g4) == 0);
	CHECK(g4[0] == 1 && g4[3] == 4);
	CHECK(rt_gpu_step_end(c) == 0);
	printf("real GPU: %s, kernels ran (PTX %s, %.1f ms)\n", gi.name[0],
	       cached ? "cached" : "compiled", ms);
	free(ptx);
	free(c);
}

static void
t_real(void)
{
	need_nvrtc();
	if (in_child(child_real) == CHILD_SKIP)
		TEST_SKIP_GPU("%s", child_why);
}

TEST_MAIN_FIXTURE(setup, teardown,
		  {"nvrtc_compile", t_nvrtc_compile},
		  {"nvrtc_damaged", t_nvrtc_damaged},
		  {"nvrtc_error", t_nvrtc_error},
		  {"nvrtc_wmma", t_nvrtc_wmma},
		  {"nvrtc_off", t_nvrtc_off},
		  {"probe_disabled", t_probe_disabled},
		  {"probe_missing", t_probe_missing},
		  {"probe_stub", t_probe_stub},
		  {"probe_here", t_probe_here},
		  {"mock", t_mock},
		  {"real", t_real})
