/*
 * codegen/nvrtc.c: CUDA C to PTX with NVRTC, and the on-disk kernel
 * cache (codegen/cuda.h cu_compile).
 *
 * NVRTC is opened with dlopen at first use, like the driver
 * (runtime/gpu.c): tfgc links no CUDA library, so it starts where there
 * is none, and the static tfgc uses the GPU machine's own.  Where it is
 * looked for: libnvrtc.so.13, .so.12 and .so on the loader's path, then
 * libnvrtc.so* in $CUDA_HOME/lib64, /usr/local/cuda/lib64 and
 * /usr/local/cuda/targets/x86_64-linux/lib.  NVRTC has no system headers
 * of its own beyond the basics: the toolkit's include directory (for
 * <mma.h>, the wmma matmuls) is passed with -I when one is found:
 * $CUDA_HOME/include, the one beside the library loaded (lib/../include),
 * or /usr/local/cuda/include.
 *
 * The cache: one file per unit, <dir>/<key>.ptx, the key the SHA-256 of
 * the options (the architecture and include directory among them),
 * NVRTC's version and the source.  The file starts with a line
 * "// tfg-ptx KEY LEN SUM\n" (SUM: FNV-1a 64 of the PTX): a file whose
 * line, length or sum disagree (a torn or damaged one) is compiled again
 * and rewritten.  Files are written to a temporary name in the same
 * directory and renamed, so readers see a whole file or none, and
 * processes compiling the same unit at once do no harm.  The cache is
 * an optimisation: when it cannot be read or written, NVRTC compiles.
 */
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "codegen/cuda.h"

#define PTX_MAX ((size_t)256 << 20) /* a cache file larger is damaged */
#define CACHE_MAGIC "// tfg-ptx "

typedef int nvrtcResult;
typedef void *nvrtcProgram;

static struct {
	const char *(*GetErrorString)(nvrtcResult);
	nvrtcResult (*Version)(int *, int *);
	nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *,
				     const char *, int, const char *const *,
				     const char *const *);
	nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
	nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetPTX)(nvrtcProgram, char *);
	nvrtcResult (*DestroyProgram)(nvrtcProgram *);
} nv;

#define SYM(f, name) {name, (void *)&nv.f}
static const struct {
	const char *name;
	void *slot;
} syms[] = {
	SYM(GetErrorString, "nvrtcGetErrorString"),
	SYM(Version, "nvrtcVersion"),
	SYM(CreateProgram, "nvrtcCreateProgram"),
	SYM(CompileProgram, "nvrtcCompileProgram"),
	SYM(GetProgramLogSize, "nvrtcGetProgramLogSize"),
	SYM(GetProgramLog, "nvrtcGetProgramLog"),
	SYM(GetPTXSize, "nvrtcGetPTXSize"),
	SYM(GetPTX, "nvrtcGetPTX"),
	SYM(DestroyProgram, "nvrtcDestroyProgram"),
};
#undef SYM

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void *lib;            /* NULL: not found, why in load_err */
static char load_err[512];
static int version;          /* major*1000 + minor*10 */
static char incdir[PATH_MAX]; /* "" when none found */

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Opens the first of pattern's matches that loads. */
static void *
open_glob(const char *pattern, char *last, size_t n)
{
	glob_t g;
	void *h = NULL;

	if (glob(pattern, 0, NULL, &g) != 0)
		return NULL;
	for (size_t i = 0; i < g.gl_pathc && h == NULL; i++) {
		const char *e;

		if ((h = dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_LOCAL)) ==
		    NULL && (e = dlerror()) != NULL)
			snprintf(last, n, "%s", e);
	}
	globfree(&g);
	return h;
}

static int
has_mma(const char *dir)
{
	char p[PATH_MAX + 16];
	struct stat st;

	snprintf(p, sizeof p, "%s/mma.h", dir);
	return dir[0] && stat(p, &st) == 0;
}

/* The toolkit's include directory, for <mma.h>; f: a function of the
 * library loaded. */
static void
find_include(void *f)
{
	const char *home = getenv("CUDA_HOME");
	char p[PATH_MAX], real[PATH_MAX];
	Dl_info di;

	if (home && *home) {
		snprintf(p, sizeof p, "%s/include", home);
		if (has_mma(p))
			goto found;
	}
	if (dladdr(f, &di) && di.dli_fname &&
	    realpath(di.dli_fname, real) != NULL) {
		char *slash = strrchr(real, '/');

		if (slash) {
			*slash = '\0';
			if (snprintf(p, sizeof p, "%s/../include", real) <
				    (int)sizeof p &&
			    realpath(p, real) != NULL && has_mma(real)) {
				snprintf(p, sizeof p, "%s", real);
				goto found;
			}
		}
	}
	snprintf(p, sizeof p, "/usr/local/cuda/include");
	if (!has_mma(p))
		return;
found:
	snprintf(incdir, sizeof incdir, "%s", p);
}

static void
load(void)
{
	static const char *const names[] = {"libnvrtc.so.13",
					    "libnvrtc.so.12", "libnvrtc.so"};
	const char *home = getenv("CUDA_HOME");
	char last[256] = "", pat[PATH_MAX];
	void *f = NULL;
	int ma = 0, mi = 0;

	for (size_t i = 0; i < 3 && lib == NULL; i++) {
		const char *e;

		if ((lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) == NULL &&
		    (e = dlerror()) != NULL)
			snprintf(last, sizeof last, "%s", e);
	}
	if (lib == NULL && home && *home) {
		snprintf(pat, sizeof pat, "%s/lib64/libnvrtc.so*", home);
		lib = open_glob(pat, last, sizeof last);
	}
	if (lib == NULL)
		lib = open_glob("/usr/local/cuda/lib64/libnvrtc.so*", last,
				sizeof last);
	if (lib == NULL)
		lib = open_glob("/usr/local/cuda/targets/x86_64-linux/lib/"
				"libnvrtc.so*", last, sizeof last);
	if (lib == NULL) {
		snprintf(load_err, sizeof load_err, "NVRTC not found: looked "
			 "for libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so "
			 "on the loader's path, then libnvrtc.so* in "
			 "$CUDA_HOME/lib64%s%s%s, /usr/local/cuda/lib64 and "
			 "/usr/local/cuda/targets/x86_64-linux/lib (last "
			 "error: %s)", home ? " (" : "", home ? home : "",
			 home ? ")" : "", last[0] ? last : "none");
		return;
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		if ((f = dlsym(lib, syms[i].name)) == NULL) {
			snprintf(load_err, sizeof load_err, "NVRTC has no %s",
				 syms[i].name);
			dlclose(lib);
			lib = NULL;
			memset(&nv, 0, sizeof nv);
			return;
		}
		memcpy(syms[i].slot, &f, sizeof f);
	}
	if (nv.Version(&ma, &mi) != 0) {
		snprintf(load_err, sizeof load_err, "nvrtcVersion failed");
		dlclose(lib);
		lib = NULL;
		return;
	}
	version = ma * 1000 + mi * 10;
	find_include(f);
}

int
cu_nvrtc_version(char *err, size_t errlen)
{
	pthread_once(&load_once, load);
	if (lib == NULL) {
		if (err && errlen)
			snprintf(err, errlen, "%s", load_err);
		return -1;
	}
	return version;
}

/* ------------------------------------------------------------- cache */

static uint64_t
fnv64(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

/* The cache directory into dir (created), or 0 when there is none. */
static int
cache_dir(char *dir, size_t n)
{
	const char *env = getenv("TFG_CUDA_CACHE"), *base;

	if (env && strcmp(env, "off") == 0)
		return 0;
	if (env && *env)
		snprintf(dir, n, "%s", env);
	else if ((base = getenv("XDG_CACHE_HOME")) && *base)
		snprintf(dir, n, "%s/tfg/cuda", base);
	else if ((base = getenv("HOME")) && *base)
		snprintf(dir, n, "%s/.cache/tfg/cuda", base);
	else
		return 0;
	return cg_mkdirs(dir, 0755) == 0;
}

/* The unit's key as 64 hex digits. */
static int
cache_key(char hex[65], const char *src, const char *const *opt, int nopt)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdn = 0;
	char ver[32];
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	int ok;

	snprintf(ver, sizeof ver, "tfg-ptx 1 nvrtc %d", version);
	ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(x, ver, strlen(ver) + 1);
	for (int i = 0; ok && i < nopt; i++)
		ok = EVP_DigestUpdate(x, opt[i], strlen(opt[i]) + 1);
	ok = ok && EVP_DigestUpdate(x, src, strlen(src)) &&
	     EVP_DigestFinal_ex(x, md, &mdn) && mdn >= 32;
	EVP_MD_CTX_free(x);
	for (int i = 0; ok && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return ok;
}

/* The PTX cached in path (malloc'd), or NULL when it is missing or
 * damaged. */
static char *
cache_read(const char *path, const char *key)
{
	char line[160], k[80], *ptx;
	unsigned long long len, sum;
	FILE *f = fopen(path, "rb");

	if (f == NULL)
		return NULL;
	if (fgets(line, sizeof line, f) == NULL ||
	    strncmp(line, CACHE_MAGIC, strlen(CACHE_MAGIC)) != 0 ||
	    sscanf(line + strlen(CACHE_MAGIC), "%70s %llu %llx", k, &len,
		   &sum) != 3 ||
	    strcmp(k, key) != 0 || len == 0 || len > PTX_MAX ||
	    (ptx = malloc(len + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	if (fread(ptx, 1, len, f) != len || fgetc(f) != EOF ||
	    fnv64(ptx, len) != sum || memchr(ptx, '\0', len) != NULL) {
		fclose(f);
		free(ptx);
		return NULL;
	}
	fclose(f);
	ptx[len] = '\0';
	return ptx;
}

/* Stores ptx as path: a temporary file in dir, renamed.  Failures are
 * silent (the next run compiles again). */
static void
cache_write(const char *dir, const char *path, const char *key,
	    const char *ptx)
{
	char tmp[PATH_MAX + 32];
	size_t n = strlen(ptx);
	FILE *f;
	int fd, ok;

	snprintf(tmp, sizeof tmp, "%s/.tmp-ptx-XXXXXX", dir);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	if ((f = fdopen(fd, "wb")) == NULL) {
		close(fd);
		unlink(tmp);
		return;
	}
	ok = fprintf(f, CACHE_MAGIC "%s %zu %llx\n", key, n,
		     (unsigned long long)fnv64(ptx, n)) > 0 &&
	     fwrite(ptx, 1, n, f) == n;
	ok = fclose(f) == 0 && ok;
	if (!ok || chmod(tmp, 0644) != 0 || rename(tmp, path) != 0)
		unlink(tmp);
}

/* ----------------------------------------------------------- compile */

/* NVRTC's log into err, after what failed. */
static void
log_error(nvrtcProgram p, nvrtcResult r, char *err, size_t errlen)
{
	size_t n = 0;
	char *log = NULL;

	if (nv.GetProgramLogSize(p, &n) == 0 && n > 0 &&
	    (log = malloc(n + 1)) != NULL && nv.GetProgramLog(p, log) == 0) {
		log[n] = '\0';
		while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == '\0'))
			log[--n] = '\0';
	} else {
		free(log);
		log = NULL;
	}
	snprintf(err, errlen, "NVRTC: %s%s%s", nv.GetErrorString(r),
		 log && *log ? ":\n" : "", log ? log : "");
	free(log);
}

/* NVRTC's PTX of src with options opt (malloc'd into *ptx). */
static int
nvrtc_ptx(const char *src, const char *const *opt, int nopt, char **ptx,
	  char *err, size_t errlen)
{
	nvrtcProgram p = NULL;
	nvrtcResult r;
	size_t n = 0;

	*ptx = NULL;
	if ((r = nv.CreateProgram(&p, src, "tfg.cu", 0, NULL, NULL)) != 0) {
		snprintf(err, errlen, "nvrtcCreateProgram: %s",
			 nv.GetErrorString(r));
		return -1;
	}
	if ((r = nv.CompileProgram(p, nopt, opt)) != 0) {
		log_error(p, r, err, errlen);
		nv.DestroyProgram(&p);
		return -1;
	}
	if ((r = nv.GetPTXSize(p, &n)) != 0 || n == 0 ||
	    (*ptx = malloc(n + 1)) == NULL ||
	    (r = nv.GetPTX(p, *ptx)) != 0) {
		snprintf(err, errlen, "nvrtcGetPTX: %s",
			 r ? nv.GetErrorString(r) : "out of memory");
		if (r)
			free(*ptx);
		*ptx = NULL;
		nv.DestroyProgram(&p);
		return -1;
	}
	(*ptx)[n] = '\0';
	nv.DestroyProgram(&p);
	return 0;
}

int
cu_compile(const char *src, int cc, char **ptx, int *cached, double *ms,
	   char *err, size_t errlen)
{
	char arch[48], inc[PATH_MAX + 4], dir[PATH_MAX], key[65];
	char path[PATH_MAX + 80], scratch[8];
	const char *opt[4];
	double t0 = now_ms();
	int nopt = 0, cache, rc;

	*ptx = NULL;
	*cached = 0;
	*ms = 0;
	if (err && errlen)
		err[0] = '\0';
	else
		err = NULL;
	if (cu_nvrtc_version(err, errlen) < 0)
		return -1;
	if (cc < 30 || cc > 999) {
		if (err)
			snprintf(err, errlen, "compute capability %d: not one "
				 "NVRTC compiles for", cc);
		return -1;
	}
	snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", cc);
	opt[nopt++] = arch;
	opt[nopt++] = "-default-device";
	opt[nopt++] = "--std=c++17";
	if (incdir[0]) {
		snprintf(inc, sizeof inc, "-I%s", incdir);
		opt[nopt++] = inc;
	}
	cache = cache_dir(dir, sizeof dir) &&
		cache_key(key, src, opt, nopt) &&
		snprintf(path, sizeof path, "%s/%s.ptx", dir, key) <
			(int)sizeof path;
	if (cache && (*ptx = cache_read(path, key)) != NULL) {
		*cached = 1;
		*ms = now_ms() - t0;
		return 0;
	}
	rc = nvrtc_ptx(src, opt, nopt, ptx, err ? err : scratch,
		       err ? errlen : sizeof scratch);
	if (rc == 0 && cache)
		cache_write(dir, path, key, *ptx);
	*ms = now_ms() - t0;
	return rc;
}
