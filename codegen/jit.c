/*
 * codegen/jit.c: from a task's module (codegen/cpu.c) to callable code.
 *
 *   target machine  the host CPU and its features, or CgOptions.cpu with
 *                   that CPU's own features (so --cpu pins the output)
 *   passes          LLVMRunPasses("default<On>") with that TargetMachine:
 *                   without it the cost model knows no vector width and
 *                   loops stay scalar (shared/TOOLCHAIN.md)
 *   JIT             ORC LLJIT built on the same TargetMachine; the module
 *                   goes in through a ThreadSafeContext.  tfg_rt_recv and
 *                   tfg_rt_send are absolute symbols (or the test fakes in
 *                   CgOptions), and so are tfg_rt_parallel (large loop
 *                   nests, codegen/cpu_nest.c), tfg_rt_gemm (large
 *                   matmuls, codegen/cpu_shape.c), tfg_rt_conv2d and
 *                   tfg_rt_pool2d (codegen/cpu_conv.c); libc's fmod,
 *                   fmodf, memcpy, memset and memmove (which LLVM may
 *                   call for frem or copy loops)
 *                   and the libm functions of process_filter's list
 *                   come from the process, and nothing else does.
 *
 * A CgJit owns the LLJIT, which owns the code: parts[].fn stay valid until
 * cg_jit_free.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/cg_int.h"
#include "codegen/cuda.h"

struct CgJit {
	LLVMOrcLLJITRef jit;
	char prefix; /* global symbol prefix, for the process filter */
};

/* cg_emit_llvm's triple: fixed, so golden files do not follow the host. */
#define CG_EMIT_TRIPLE "x86_64-unknown-linux-gnu"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void
init_llvm(void)
{
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
}

void
cg_llvm_init(void)
{
	pthread_once(&init_once, init_llvm);
}

/* Prints and consumes err; returns -1. */
static int
llvm_fail(const char *what, LLVMErrorRef err)
{
	char *msg = LLVMGetErrorMessage(err);
	fprintf(stderr, "tfgc: error: codegen: %s: %s\n", what, msg);
	LLVMDisposeErrorMessage(msg);
	return -1;
}

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
opt_level(const CgOptions *o)
{
	int l = o ? o->opt_level : 2;
	return l < 0 ? 0 : l > 3 ? 3 : l;
}

/* A target machine for triple and the options' CPU; *cpu and *features
 * (LLVM strings, LLVMDisposeMessage) get what it was made with.  pic:
 * position-independent code for an object file (tfgc compile). */
static LLVMTargetMachineRef
make_tm(const char *triple, const CgOptions *o, int pic, char **cpu,
	char **features)
{
	static const LLVMCodeGenOptLevel lv[4] = {
		LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
		LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive};
	LLVMTargetRef t;
	char *err = NULL;
	if (LLVMGetTargetFromTriple(triple, &t, &err)) {
		fprintf(stderr, "tfgc: error: codegen: target '%s': %s\n",
			triple, err);
		LLVMDisposeMessage(err);
		return NULL;
	}
	int host = !o || !o->cpu;
	*cpu = host ? LLVMGetHostCPUName() : LLVMCreateMessage(o->cpu);
	*features = host ? LLVMGetHostCPUFeatures() : LLVMCreateMessage("");
	return LLVMCreateTargetMachine(t, triple, *cpu, *features,
				       lv[opt_level(o)],
				       pic ? LLVMRelocPIC : LLVMRelocDefault,
				       pic ? LLVMCodeModelDefault
					   : LLVMCodeModelJITDefault);
}

static int
run_passes(LLVMModuleRef m, LLVMTargetMachineRef tm, int level)
{
	char pipeline[32];
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	snprintf(pipeline, sizeof pipeline, "default<O%d>", level);
	LLVMPassBuilderOptionsSetLoopVectorization(po, level >= 2);
	LLVMPassBuilderOptionsSetSLPVectorization(po, level >= 2);
	LLVMPassBuilderOptionsSetLoopInterleaving(po, level >= 2);
	LLVMPassBuilderOptionsSetLoopUnrolling(po, level >= 1);
	LLVMErrorRef err = LLVMRunPasses(m, pipeline, tm, po);
	LLVMDisposePassBuilderOptions(po);
	return err ? llvm_fail("optimising", err) : 0;
}

const char *
cg_llvm_version(void)
{
	static char v[32];
	unsigned major, minor, patch;

	LLVMGetVersion(&major, &minor, &patch);
	snprintf(v, sizeof v, "%u.%u.%u", major, minor, patch);
	return v;
}

/* ------------------------------------------------------------ cache */

/* The JIT's object cache (spec/design.md "JIT cache"): a task's code,
 * optimised and generated, kept on disk under the SHA-256 of its module
 * before the passes (cache_key), so that the next run of the same part
 * (another run of the program, the same specialisation) loads it instead
 * of compiling again.  A file is CACHE_MAGIC, the object's length (8
 * bytes, little-endian), its SHA-256 and the object; one that does not
 * check out is compiled again and written over.  Writes go to a
 * temporary file renamed into place, so processes may share the
 * directory.  The directory: $TFG_JIT_CACHE ("off": none), else
 * $XDG_CACHE_HOME/tfg/jit or ~/.cache/tfg/jit, made 0700; one not owned
 * by this user or writable by others is not used (it holds code this
 * process runs).  A hit touches its file; a write that takes the
 * directory past $TFG_JIT_CACHE_MAX bytes (CACHE_LIMIT by default)
 * removes the files used least recently, down to three quarters of it
 * (cache_trim). */
#define CACHE_MAGIC "TFGJIT1\n"
#define CACHE_HDR (8 + 8 + 32)
#define CACHE_MAX ((size_t)1 << 30)          /* one file, at most */
#define CACHE_LIMIT ((uint64_t)256 << 20)    /* the directory, by default */
#define CACHE_TMP_STALE 3600                 /* seconds: a dead writer's */

static char cache_path_buf[4096];
static const char *cache_where; /* the directory, or NULL */
static uint64_t cache_limit;    /* bytes the directory may hold */
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

int
cg_mkdirs(char *path, unsigned mode)
{
	for (char *q = path + 1; *q; q++)
		if (*q == '/') {
			*q = '\0';
			int r = mkdir(path, (mode_t)mode);
			*q = '/';
			if (r != 0 && errno != EEXIST)
				return -1;
		}
	return mkdir(path, (mode_t)mode) != 0 && errno != EEXIST ? -1 : 0;
}

/* TFG_JIT_CACHE_MAX: bytes, or a whole number with K, M or G (binary).
 * 0 keeps nothing. */
static int
cache_size_arg(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	default: break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static void
cache_init(void)
{
	const char *env = getenv("TFG_JIT_CACHE"), *base;
	struct stat st;
	int n;

	if (env && strcmp(env, "off") == 0)
		return;
	cache_limit = CACHE_LIMIT;
	if ((env = getenv("TFG_JIT_CACHE_MAX")) && *env &&
	    cache_size_arg(env, &cache_limit) != 0) {
		fprintf(stderr, "tfgc: warning: TFG_JIT_CACHE_MAX=%s is not a "
			"size (bytes, or a number with K, M or G): %llu MiB "
			"used\n", env, (unsigned long long)(CACHE_LIMIT >> 20));
		cache_limit = CACHE_LIMIT;
	}
	env = getenv("TFG_JIT_CACHE");
	if (env && *env)
		n = snprintf(cache_path_buf, sizeof cache_path_buf, "%s", env);
	else if ((base = getenv("XDG_CACHE_HOME")) && *base)
		n = snprintf(cache_path_buf, sizeof cache_path_buf,
			     "%s/tfg/jit", base);
	else if ((base = getenv("HOME")) && *base)
		n = snprintf(cache_path_buf, sizeof cache_path_buf,
			     "%s/.cache/tfg/jit", base);
	else
		return;
	if (n <= 0 || (size_t)n >= sizeof cache_path_buf - 80 ||
	    cg_mkdirs(cache_path_buf, 0700) != 0 || lstat(cache_path_buf, &st) != 0 ||
	    !S_ISDIR(st.st_mode))
		return;
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		fprintf(stderr, "tfgc: warning: JIT cache %s is %s: not "
			"used\n", cache_path_buf, st.st_uid != geteuid()
			? "another user's" : "writable by others");
		return;
	}
	cache_where = cache_path_buf;
}

/* The cache's directory, or NULL when there is none. */
static const char *
cache_dir(void)
{
	pthread_once(&cache_once, cache_init);
	return cache_where;
}

static void
cache_file(char *buf, size_t n, const char *dir, const unsigned char *key)
{
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	snprintf(buf, n, "%s/%s.o", dir, hex);
}

static int
sha256(const void *data, size_t n, unsigned char out[32])
{
	unsigned len = 32;
	return EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) ? 0 : -1;
}

/* The object cached under key, or NULL (none, or not whole). */
static LLVMMemoryBufferRef
cache_read(const char *dir, const unsigned char *key)
{
	char path[4200];
	unsigned char *buf = NULL, sum[32];
	LLVMMemoryBufferRef mb = NULL;
	struct stat st;
	uint64_t len = 0;
	size_t got = 0;
	int fd;

	cache_file(path, sizeof path, dir, key);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < CACHE_HDR || (size_t)st.st_size > CACHE_MAX ||
	    (buf = malloc((size_t)st.st_size)) == NULL)
		goto out;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	for (int i = 0; i < 8; i++)
		len |= (uint64_t)buf[8 + i] << (8 * i);
	if (memcmp(buf, CACHE_MAGIC, 8) != 0 || len != got - CACHE_HDR ||
	    sha256(buf + CACHE_HDR, len, sum) != 0 ||
	    memcmp(sum, buf + 16, 32) != 0)
		goto out;
	mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(
	    (const char *)buf + CACHE_HDR, len, "tfg-jit-cache");
	/* used now: the last that cache_trim removes */
	if (mb)
		futimens(fd, NULL);
out:
	free(buf);
	close(fd);
	return mb;
}

/* A cache file's name: 64 hex digits and ".o". */
static int
cache_name(const char *name)
{
	size_t n = strlen(name);

	if (n != 66 || strcmp(name + 64, ".o") != 0)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return 1;
}

typedef struct CacheEnt {
	struct timespec used; /* the file's mtime: written or last hit */
	uint64_t size;
	char name[67];
} CacheEnt;

static int
ent_older(const void *x, const void *y)
{
	const CacheEnt *a = x, *b = y;

	if (a->used.tv_sec != b->used.tv_sec)
		return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
	if (a->used.tv_nsec != b->used.tv_nsec)
		return a->used.tv_nsec < b->used.tv_nsec ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Holds the directory to cache_limit bytes: when its objects are over
 * it, removes those used least recently (oldest mtime) until they are
 * within three quarters of it, so that a cache at its limit is not
 * trimmed again at every write.  Also removes the temporary files of
 * writers that died (older than CACHE_TMP_STALE).  Other processes may
 * trim, read and write at once: a file gone already is not an error, a
 * reader that opened one still reads it whole, and a removed object is
 * compiled again when next needed.  keep, the file just written, stays
 * (cache_write takes none larger than the limit). */
static void
cache_trim(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	CacheEnt *e = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0, kept = 0;
	struct dirent *de;
	struct stat ks;
	time_t now = time(NULL);

	if (d == NULL)
		return;
	if (fstatat(dirfd(d), keep, &ks, AT_SYMLINK_NOFOLLOW) == 0)
		kept = (uint64_t)ks.st_size;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		int tmp = strncmp(de->d_name, ".tmp-", 5) == 0;

		if ((!tmp && !cache_name(de->d_name)) ||
		    strcmp(de->d_name, keep) == 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) !=
			0 || !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			if (now - st.st_mtime > CACHE_TMP_STALE)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (n == cap) {
			size_t c2 = cap ? 2 * cap : 64;
			CacheEnt *e2 = realloc(e, c2 * sizeof *e);
			if (e2 == NULL)
				goto out;
			e = e2;
			cap = c2;
		}
		e[n].used = st.st_mtim;
		e[n].size = (uint64_t)st.st_size;
		memcpy(e[n].name, de->d_name, sizeof e[n].name);
		total += e[n].size;
		n++;
	}
	if (n > 0 && total + kept > cache_limit) {
		uint64_t goal = cache_limit / 4 * 3;

		goal = goal > kept ? goal - kept : 0;
		qsort(e, n, sizeof *e, ent_older);
		for (size_t i = 0; i < n && total > goal; i++)
			if (unlinkat(dirfd(d), e[i].name, 0) == 0 ||
			    errno == ENOENT)
				total -= e[i].size;
	}
out:
	free(e);
	closedir(d);
}

/* Keeps obj under key, if it can (the cache is an optimisation: a
 * failure leaves it as it was). */
static void
cache_write(const char *dir, const unsigned char *key, const char *obj,
	    size_t len)
{
	char path[4200], tmp[4200];
	unsigned char hdr[CACHE_HDR];
	int fd, ok;

	if (len > CACHE_MAX - CACHE_HDR || len + CACHE_HDR > cache_limit)
		return;
	memcpy(hdr, CACHE_MAGIC, 8);
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (unsigned char)((uint64_t)len >> (8 * i));
	if (sha256(obj, len, hdr + 16) != 0)
		return;
	cache_file(path, sizeof path, dir, key);
	snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	ok = write(fd, hdr, sizeof hdr) == (ssize_t)sizeof hdr &&
	     write(fd, obj, len) == (ssize_t)len;
	if (close(fd) != 0 || !ok || rename(tmp, path) != 0)
		unlink(tmp);
	else
		cache_trim(dir, strrchr(path, '/') + 1);
}

/* The cache key of a module before its passes: SHA-256 of its text, the
 * CPU, features and level it is compiled for, LLVM's version and this
 * build of tfgc (so a rebuilt tfgc never reads another's code). */
static int
cache_key(LLVMModuleRef m, const char *cpu, const char *features, int level,
	  unsigned char key[32])
{
	char *text = LLVMPrintModuleToString(m), tail[512];
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	unsigned n = 32;
	int ok;

	snprintf(tail, sizeof tail, "\n%s\n%s\nO%d\nLLVM %s\ntfgc %s %s %s",
		 cpu, features, level, cg_llvm_version(), TFG_VERSION,
		 __DATE__, __TIME__);
	ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(h, text, strlen(text)) &&
	     EVP_DigestUpdate(h, tail, strlen(tail)) &&
	     EVP_DigestFinal_ex(h, key, &n);
	EVP_MD_CTX_free(h);
	LLVMDisposeMessage(text);
	return ok ? 0 : -1;
}

static int
compile_module(LLVMContextRef c, const Program *p, int task,
	       const CgOptions *o, const char *triple, int pic,
	       LLVMModuleRef *mp, LLVMTargetMachineRef *tmp, size_t *sizes,
	       int *has, const char *cache, unsigned char *key, int *keyed,
	       LLVMMemoryBufferRef *obj)
{
	char *cpu = NULL, *features = NULL, *msg = NULL, name[32];
	LLVMTargetMachineRef tm = make_tm(triple, o, pic, &cpu, &features);
	LLVMModuleRef m;
	int rc = -1;
	if (!tm)
		return -1;
	snprintf(name, sizeof name, "task%d", task);
	m = LLVMModuleCreateWithNameInContext(name, c);
	LLVMSetTarget(m, triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(m, td);
	LLVMDisposeTargetData(td);
	if (cg_build_module(c, m, p, task, cpu, features, o, sizes, has))
		goto out;
	if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
		fprintf(stderr, "tfgc: error: codegen: invalid module: %s\n",
			msg);
		goto out;
	}
	/* the passes' and code generator's work, done before; with no key
	   (out of memory) the module is compiled and not kept */
	if (cache && cache_key(m, cpu, features, opt_level(o), key) == 0) {
		*keyed = 1;
		if ((*obj = cache_read(cache, key)) != NULL)
			goto done;
	}
	if (run_passes(m, tm, opt_level(o)))
		goto out;
done:
	rc = 0;
out:
	LLVMDisposeMessage(msg);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	if (rc) {
		LLVMDisposeModule(m);
		LLVMDisposeTargetMachine(tm);
		return rc;
	}
	*mp = m;
	*tmp = tm;
	return 0;
}

int
cg_compile_module(LLVMContextRef c, const Program *p, int task,
		  const CgOptions *o, const char *triple, int pic,
		  LLVMModuleRef *mp, LLVMTargetMachineRef *tmp, size_t *sizes,
		  int *has)
{
	return compile_module(c, p, task, o, triple, pic, mp, tmp, sizes, has,
			      NULL, NULL, NULL, NULL);
}

int
cg_emit_llvm(FILE *out, const Program *p, int task, const CgOptions *o)
{
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	size_t *sizes = calloc((size_t)p->nsig + 1, sizeof *sizes);
	int *has = calloc((size_t)p->nsig + 1, sizeof *has);
	pthread_once(&init_once, init_llvm);
	c = LLVMContextCreate();
	int rc = cg_compile_module(c, p, task, o, CG_EMIT_TRIPLE, 0, &m, &tm,
				   sizes, has);
	if (rc == 0) {
		char *s = LLVMPrintModuleToString(m);
		fputs(s, out);
		LLVMDisposeMessage(s);
		LLVMDisposeModule(m);
		LLVMDisposeTargetMachine(tm);
	}
	LLVMContextDispose(c);
	free(sizes);
	free(has);
	return rc;
}

/* The process symbols generated code may need: libc's helpers. */
static int
process_filter(void *ctx, LLVMOrcSymbolStringPoolEntryRef sym)
{
	static const char *const ok[] = {
		"fmod", "fmodf", "memcpy", "memset", "memmove",
		/* libm, for the elementwise functions (codegen/cpu.c), and
		   what LLVM's library-call simplifier may turn them into */
		"exp", "expf", "log", "logf", "tanh", "tanhf", "pow", "powf",
		"sqrt", "sqrtf", "exp2", "exp2f", "exp10", "exp10f", "ldexp",
		"ldexpf", "fabs", "fabsf",
		/* random_normal (codegen/cpu_make.c): Box-Muller */
		"cos", "cosf", "sin", "sinf"};
	const char *s = LLVMOrcSymbolStringPoolEntryStr(sym);
	char prefix = *(const char *)ctx;
	if (prefix && *s == prefix)
		s++;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(s, ok[i]) == 0)
			return 1;
	return 0;
}

static int
define_symbols(CgJit *j, const CgOptions *o)
{
	LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
	LLVMJITSymbolFlags fl = {LLVMJITSymbolGenericFlagsExported |
				 LLVMJITSymbolGenericFlagsCallable, 0};
	uintptr_t recv = (uintptr_t)(o && o->rt_recv ? o->rt_recv
							 : tfg_rt_recv);
	uintptr_t send = (uintptr_t)(o && o->rt_send ? o->rt_send
							 : tfg_rt_send);
	LLVMOrcCSymbolMapPair syms[] = {
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_recv"),
		 {recv, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_send"),
		 {send, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_send_rows"),
		 {(uintptr_t)tfg_rt_send_rows, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_recv_ref"),
		 {(uintptr_t)(o && o->rt_recv_ref ? o->rt_recv_ref
						 : tfg_rt_recv_ref), fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gemm"),
		 {(uintptr_t)tfg_rt_gemm, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_conv2d"),
		 {(uintptr_t)tfg_rt_conv2d, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_pool2d"),
		 {(uintptr_t)tfg_rt_pool2d, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gather"),
		 {(uintptr_t)tfg_rt_gather, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_segment"),
		 {(uintptr_t)tfg_rt_segment, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_parallel"),
		 {(uintptr_t)tfg_rt_parallel, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_var"),
		 {(uintptr_t)(o && o->rt_var ? o->rt_var : tfg_rt_var), fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_check"),
		 {(uintptr_t)tfg_rt_check, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_apply"),
		 {(uintptr_t)tfg_rt_apply, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_apply_rows"),
		 {(uintptr_t)tfg_rt_apply_rows, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_check_range"),
		 {(uintptr_t)tfg_rt_check_range, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_check_index"),
		 {(uintptr_t)tfg_rt_check_index, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_check_sorted"),
		 {(uintptr_t)tfg_rt_check_sorted, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_shard_ids"),
		 {(uintptr_t)tfg_rt_shard_ids, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_scatter"),
		 {(uintptr_t)tfg_rt_scatter, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_mark"),
		 {(uintptr_t)tfg_rt_mark, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_flush"),
		 {(uintptr_t)(o && o->rt_flush ? o->rt_flush : tfg_rt_flush),
		  fl}},
		/* GPU parts (runtime/gpu.c) */
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_arena"),
		 {(uintptr_t)tfg_rt_gpu_arena, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_launch"),
		 {(uintptr_t)tfg_rt_gpu_launch, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_global"),
		 {(uintptr_t)tfg_rt_gpu_global, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_copy"),
		 {(uintptr_t)tfg_rt_gpu_copy, fl}},
		{LLVMOrcLLJITMangleAndIntern(j->jit, "tfg_rt_gpu_gemm"),
		 {(uintptr_t)tfg_rt_gpu_gemm, fl}},
	};
	LLVMErrorRef err = LLVMOrcJITDylibDefine(
		jd, LLVMOrcAbsoluteSymbols(syms, sizeof syms / sizeof syms[0]));
	if (err)
		return llvm_fail("defining the runtime symbols", err);
	LLVMOrcDefinitionGeneratorRef gen;
	j->prefix = LLVMOrcLLJITGetGlobalPrefix(j->jit);
	err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
	    &gen, j->prefix, process_filter, &j->prefix);
	if (err)
		return llvm_fail("process symbols", err);
	LLVMOrcJITDylibAddGenerator(jd, gen);
	return 0;
}

/* A LLJIT that generates code with tm (consumed). */
static int
make_jit(CgJit *j, LLVMTargetMachineRef tm)
{
	LLVMOrcJITTargetMachineBuilderRef jtmb =
	    LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm);
	LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, jtmb);
	LLVMErrorRef err = LLVMOrcCreateLLJIT(&j->jit, jb);
	if (err) {
		j->jit = NULL;
		return llvm_fail("creating the JIT", err);
	}
	return 0;
}

static int
lookup_parts(CgJit *j, const Program *p, const size_t *sizes,
	     const int *has, RtPart *parts)
{
	for (int s = 0; s < p->nsig; s++) {
		char name[32];
		LLVMOrcExecutorAddress a;
		if (!has[s])
			continue;
		snprintf(name, sizeof name, "tfg_part_%d", s);
		LLVMErrorRef err = LLVMOrcLLJITLookup(j->jit, &a, name);
		if (err)
			return llvm_fail(name, err);
		parts[s].fn = (RtPartFn)(uintptr_t)a;
		parts[s].arena_size = sizes[s];
	}
	return 0;
}

int
cg_jit(CgJit **out, const Program *p, int task, const CgOptions *o,
       RtPart *parts, double *ms)
{
	double t0 = now_ms();
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	LLVMMemoryBufferRef obj = NULL;
	size_t *sizes = calloc((size_t)p->nsig + 1, sizeof *sizes);
	int *has = calloc((size_t)p->nsig + 1, sizeof *has);
	CgJit *j = calloc(1, sizeof *j);
	const char *cache = cache_dir();
	unsigned char key[32];
	char *msg = NULL;
	int rc = -1, hit, keyed = 0;
	*out = NULL;
	memset(parts, 0, (size_t)p->nsig * sizeof *parts);
	pthread_once(&init_once, init_llvm);
	char *triple = LLVMGetDefaultTargetTriple();
	LLVMContextRef c = LLVMContextCreate();
	if (!sizes || !has || !j ||
	    compile_module(c, p, task, o, triple, 0, &m, &tm, sizes, has,
			   cache, key, &keyed, &obj))
		goto out;
	/* the code: from the cache, or generated here (and kept there) */
	hit = obj != NULL;
	if (!hit && LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile,
							&msg, &obj)) {
		fprintf(stderr, "tfgc: error: codegen: %s\n", msg);
		LLVMDisposeMessage(msg);
		LLVMDisposeModule(m);
		LLVMDisposeTargetMachine(tm);
		goto out;
	}
	LLVMDisposeModule(m);
	if (!hit && keyed)
		cache_write(cache, key, LLVMGetBufferStart(obj),
			    LLVMGetBufferSize(obj));
	if (o && o->cache_hit)
		*o->cache_hit = hit;
	if (make_jit(j, tm) || define_symbols(j, o)) {
		LLVMDisposeMemoryBuffer(obj);
		goto out;
	}
	LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(
	    j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), obj);
	if (err) {
		llvm_fail("adding the code", err);
		goto out;
	}
	rc = lookup_parts(j, p, sizes, has, parts);
out:
	LLVMContextDispose(c);
	LLVMDisposeMessage(triple);
	free(sizes);
	free(has);
	if (rc) {
		memset(parts, 0, (size_t)p->nsig * sizeof *parts);
		cg_jit_free(j);
		return rc;
	}
	*out = j;
	if (ms)
		*ms = now_ms() - t0;
	return 0;
}

void
cg_jit_free(CgJit *j)
{
	if (!j)
		return;
	if (j->jit) {
		LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->jit);
		if (err)
			llvm_fail("disposing the JIT", err);
	}
	free(j);
}
