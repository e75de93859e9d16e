/*
 * tests/fuzz/npy_fuzz.c: libFuzzer target for the file readers of load():
 * .npy (runtime/npy.c) and IDX, plain or gzip (runtime/idx.c), spec/design.md
 * "Fuzzing".
 *
 * The input is a whole file.  It is loaded the way `load(...)` and
 * `--feed` load one, by path, through rt_load: the bytes go into a
 * memfd and its /proc/self/fd name is the path, so the reader's own
 * fopen, fstat and reads are what is fuzzed, and no file is written.
 *
 * Beyond "no crash, no leak": a file refused is refused with an error
 * that names it, and a file accepted is a tensor the rest of the runtime
 * may trust (its byte count agrees with its dtype and shape, bools are 0
 * or 1), which converts to every other dtype as a feed does (or names
 * the first element that does not fit), which prints, and which saved
 * and loaded again is the same tensor.  A broken promise aborts, which libFuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/rt_int.h"

/* A memfd, truncated, and its name. */
typedef struct MemFile {
	int fd;
	char path[64];
} MemFile;

static void
memfile_open(MemFile *m, const char *what)
{
	if ((m->fd = memfd_create(what, MFD_CLOEXEC)) < 0) {
		perror("npy_fuzz: memfd_create");
		abort();
	}
	snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
}

static void
memfile_set(MemFile *m, const void *data, size_t size)
{
	if (ftruncate(m->fd, 0) != 0 ||
	    (size && pwrite(m->fd, data, size, 0) != (ssize_t)size)) {
		perror("npy_fuzz: memfd");
		abort();
	}
}

/* What rt_load promises of a tensor it returns. */
static void
check_tensor(const RtTensor *t)
{
	size_t n;

	TFG_ASSERT(t->dtype >= TFG_BOOL && t->dtype < TFG__NDTYPE &&
		   t->dtype != TFG_STRING);
	TFG_ASSERT(rt_shape_nbytes(&n, t->dtype, &t->shape) == TFG_OK);
	TFG_ASSERT(n == t->nbytes && (n == 0 || t->data != NULL));
	if (t->dtype == TFG_BOOL)
		for (size_t i = 0; i < n; i++)
			TFG_ASSERT(((const unsigned char *)t->data)[i] <= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static MemFile in, out;
	RtTensor *t = NULL, *u = NULL;
	TfgError e;
	char *s;

	if (in.path[0] == '\0') {
		memfile_open(&in, "fuzz.npy");
		memfile_open(&out, "fuzz-saved.npy");
	}
	memfile_set(&in, data, size);
	if (rt_load(&t, in.path, &e) != TFG_OK) {
		TFG_ASSERT(t == NULL && e.code != TFG_OK);
		TFG_ASSERT(strncmp(e.msg, in.path, strlen(in.path)) == 0);
		return 0;
	}
	check_tensor(t);
	/* a feed of another dtype is converted, element by element, as
	   the client converts it (runtime/client_run.c's convert_feed) */
	for (int d = TFG_BOOL; d < TFG__NDTYPE; d++) {
		int64_t bad = -2, n = tfg_shape_numel(&t->shape);
		tfg_status st;
		if (d == TFG_STRING)
			continue;
		st = rt_tensor_convert(&u, t, (TfgDtype)d, &bad);
		if (st == TFG_OK) {
			check_tensor(u);
			TFG_ASSERT(u->dtype == (TfgDtype)d &&
				   tfg_shape_eq(&u->shape, &t->shape));
			rt_tensor_free(u);
		} else {
			size_t nb;

			TFG_ASSERT(u == NULL || st == TFG_ENOMEM);
			TFG_ASSERT(st != TFG_EINVAL || (bad >= 0 && bad < n));
			/* a shape whose empty tensor has too many elements
			   of d's size */
			TFG_ASSERT(st != TFG_ETOOBIG ||
				   rt_shape_nbytes(&nb, (TfgDtype)d,
						   &t->shape) != TFG_OK);
		}
		u = NULL;
	}
	s = rt_format_str(t);
	TFG_ASSERT(s != NULL);
	free(s);
	/* saved as numpy writes it, it loads again as itself */
	TFG_ASSERT(rt_npy_save(out.path, t, &e) == TFG_OK);
	TFG_ASSERT(rt_npy_load(&u, out.path, &e) == TFG_OK);
	TFG_ASSERT(u->dtype == t->dtype && tfg_shape_eq(&u->shape, &t->shape));
	TFG_ASSERT(u->nbytes == t->nbytes);
	TFG_ASSERT(t->nbytes == 0 || memcmp(u->data, t->data, t->nbytes) == 0);
	rt_tensor_free(u);
	rt_tensor_free(t);
	return 0;
}
