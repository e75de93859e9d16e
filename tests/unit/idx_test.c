/*
 * tests/unit/idx_test.c: IDX files, plain and gzip-compressed, through
 * rt_load (runtime/idx.c), which load() and --feed use; and CIFAR-10's
 * binary batches through rt_cifar10_load (load(path, format="cifar10")).
 *
 * Every type code in both forms (big-endian data, i8 and i16 widened to
 * i32), gzip of several members, the message of every malformed case,
 * and the real MNIST files when they are at $TFG_MNIST or
 * ../shared/data/mnist (relative to the repository root, where the tests
 * run): shapes [60000, 28, 28] and [60000] u8, the first labels 5 0 4 1 9
 * and the first image's pixel sum 27525 (else the test is skipped).
 * Files are written into a fresh directory under /tmp.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/tfg.h"
#include "tests/unit/test.h"

static char tmpdir[64];

static const char *
tmp_path(const char *name)
{
	static char buf[256];

	if (tmpdir[0] == '\0') {
		strcpy(tmpdir, "/tmp/tfg-idx-XXXXXX");
		if (mkdtemp(tmpdir) == NULL) {
			perror("mkdtemp");
			exit(1);
		}
	}
	snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
	return buf;
}

static void
write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ASSERT(f != NULL);
	ASSERT_EQ(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* p as one gzip member at the end of path (a new file when !append). */
static void
write_gz(const char *path, const void *p, size_t n, int append)
{
	gzFile g = gzopen(path, append ? "ab" : "wb");

	ASSERT(g != NULL);
	ASSERT_EQ(gzwrite(g, p, (unsigned)n), (int)n);
	ASSERT_EQ(gzclose(g), Z_OK);
}

/* An IDX header of type code and dims into b; returns its length. */
static size_t
idx_head(unsigned char *b, int code, int rank, const uint32_t *dims)
{
	b[0] = b[1] = 0;
	b[2] = (unsigned char)code;
	b[3] = (unsigned char)rank;
	for (int k = 0; k < rank; k++)
		for (int j = 0; j < 4; j++)
			b[4 + 4 * k + j] = (unsigned char)(dims[k] >> (24 - 8 * j));
	return 4 + 4 * (size_t)rank;
}

/* Loads path, which must succeed, as dtype t of rank 1 and n elements. */
static RtTensor *
load_ok(const char *path, TfgDtype t, int64_t n)
{
	RtTensor *x = NULL;
	TfgError e = {0};

	if (rt_load(&x, path, &e) != TFG_OK)
		TEST_FAIL_("%s", e.msg);
	ASSERT_EQ(x->dtype, t);
	ASSERT_EQ(x->shape.rank, 1);
	ASSERT_EQ(x->shape.dims[0], n);
	return x;
}

/* Each type code, plain and gzip: values converted from big-endian. */
static void
t_types(void)
{
	static const struct {
		int code;
		TfgDtype t;
		unsigned char data[24];
		size_t n;
		double want[3];
	} cases[] = {
		{0x08, TFG_U8, {0, 128, 255}, 3, {0, 128, 255}},
		{0x09, TFG_I32, {0x80, 0, 0x7f}, 3, {-128, 0, 127}},
		{0x0B, TFG_I32, {0xff, 0xfe, 0x01, 0x2c, 0x80, 0}, 3,
		 {-2, 300, -32768}},
		{0x0C, TFG_I32, {0x80, 0, 0, 0, 0, 1, 0xe2, 0x40, 0xff, 0xff,
				 0xff, 0xff}, 3, {-2147483648.0, 123456, -1}},
		{0x0D, TFG_F32, {0x3f, 0xc0, 0, 0, 0xbe, 0x80, 0, 0, 0, 0, 0,
				 0}, 3, {1.5, -0.25, 0}},
		{0x0E, TFG_F64, {0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0,
				 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0}, 3,
		 {1.5, -2, -0.0}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		static const size_t fs[] = {[0x08] = 1, [0x09] = 1, [0x0B] = 2,
					    [0x0C] = 4, [0x0D] = 4, [0x0E] = 8};
		unsigned char b[64];
		uint32_t d = (uint32_t)cases[i].n;
		size_t h = idx_head(b, cases[i].code, 1, &d);
		size_t len = h + cases[i].n * fs[cases[i].code];

		memcpy(b + h, cases[i].data, len - h);
		write_bytes(tmp_path("t.idx"), b, len);
		write_gz(tmp_path("t.idx.gz"), b, len, 0);
		for (int gz = 0; gz < 2; gz++) {
			RtTensor *x = load_ok(tmp_path(gz ? "t.idx.gz"
							  : "t.idx"),
					      cases[i].t, 3);
			for (int k = 0; k < 3; k++) {
				double v = x->dtype == TFG_U8
				    ? ((uint8_t *)x->data)[k]
				    : x->dtype == TFG_I32
				    ? ((int32_t *)x->data)[k]
				    : x->dtype == TFG_F32
				    ? ((float *)x->data)[k]
				    : ((double *)x->data)[k];
				if (v != cases[i].want[k])
					TEST_FAIL_("code 0x%02x gz %d element "
						   "%d: %g, want %g",
						   cases[i].code, gz, k, v,
						   cases[i].want[k]);
			}
			rt_tensor_free(x);
		}
	}
}

/* A scalar (rank 0), an empty tensor, and gzip of three members. */
static void
t_shapes(void)
{
	unsigned char b[64];
	uint32_t d[2] = {0, 5};
	size_t h = idx_head(b, 0x08, 0, d);
	RtTensor *x = NULL;
	TfgError e = {0};

	b[h] = 42;
	write_bytes(tmp_path("t.idx"), b, h + 1);
	ASSERT_EQ(rt_load(&x, tmp_path("t.idx"), &e), TFG_OK);
	ASSERT_EQ(x->shape.rank, 0);
	ASSERT_EQ(((uint8_t *)x->data)[0], 42);
	rt_tensor_free(x);
	h = idx_head(b, 0x0D, 2, d);
	write_bytes(tmp_path("t.idx"), b, h);
	ASSERT_EQ(rt_load(&x, tmp_path("t.idx"), &e), TFG_OK);
	ASSERT_EQ(x->shape.rank, 2);
	ASSERT_EQ(x->nbytes, 0);
	rt_tensor_free(x);
	/* members split inside the header and inside the data */
	d[0] = 6;
	h = idx_head(b, 0x08, 1, d);
	memcpy(b + h, "abcdef", 6);
	write_gz(tmp_path("t.idx.gz"), b, 3, 0);
	write_gz(tmp_path("t.idx.gz"), b + 3, h - 3 + 2, 1);
	write_gz(tmp_path("t.idx.gz"), b + h + 2, 4, 1);
	x = load_ok(tmp_path("t.idx.gz"), TFG_U8, 6);
	ASSERT(memcmp(x->data, "abcdef", 6) == 0);
	rt_tensor_free(x);
}

/* Malformed files: refused with a message that names the file. */
static void
t_errors(void)
{
	static const struct {
		const char *bytes;
		size_t n;
		int gz;
		const char *what;
	} cases[] = {
		{"", 0, 0, "empty file"},
		{"\x00", 1, 0, "truncated IDX file: 1 of the 4 bytes"},
		{"\x00\x01\x08\x01", 4, 0, "bad magic 00 01 08 01"},
		{"ABCD", 4, 0, "not a .npy or IDX file"},
		{"\x00\x00\x0a\x01\x00\x00\x00\x01x", 9, 0,
		 "unknown IDX type code 0x0a"},
		{"\x00\x00\x08\x09", 4, 0, "rank 9: at most 8"},
		{"\x00\x00\x08\x02\x00\x00\x00\x02\x00\x00", 10, 0,
		 "2 dimensions announced, 6 bytes of the 8"},
		{"\x00\x00\x08\x01\x00\x00\x00\x03xy", 10, 0,
		 "the dims [3] need 3 bytes of data, but the file has 2 "
		 "(truncated)"},
		{"\x00\x00\x08\x01\x00\x00\x00\x01xy", 10, 0,
		 "need 1 bytes of data, but the file has 2 (trailing data)"},
		{"\x00\x00\x0c\x01\x00\x00\x00\x02xxxxxxx", 15, 0,
		 "need 8 bytes of data, but the file has 7"},
		{"\x00\x00\x0e\x03\x80\x00\x00\x00\x80\x00\x00\x00\x00\x00"
		 "\x00\x02", 16, 0, "shape [2147483648, 2147483648, 2] is too "
		 "large"},
		{"\x00\x00\x08\x01\x00\x00\x00\x03xy", 10, 1,
		 "need 3 bytes of data, but the file has 2 (truncated)"},
		{"\x00\x00\x08\x01\x00\x00\x00\x01xy", 10, 1,
		 "need 1 bytes of data, but the file has more"},
		{"\x00\x00\x08\x02\x00\x01\x00\x00\x00\x01\x00\x00", 12, 1,
		 "more than"},
		{"\x93NUMPY\x09", 7, 0, "not a .npy file: expected magic"},
		{"PK\x03\x04", 4, 1, "bad magic 50 4b 03 04"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *p = tmp_path(cases[i].gz ? "e.idx.gz" : "e.idx");
		RtTensor *x = NULL;
		TfgError e = {0};

		if (cases[i].gz)
			write_gz(p, cases[i].bytes, cases[i].n, 0);
		else
			write_bytes(p, cases[i].bytes, cases[i].n);
		if (rt_load(&x, p, &e) == TFG_OK)
			TEST_FAIL_("case %zu: loaded", i);
		ASSERT(x == NULL);
		if (strncmp(e.msg, p, strlen(p)) != 0 ||
		    strstr(e.msg, cases[i].what) == NULL)
			TEST_FAIL_("case %zu: message \"%s\", want \"%s\"", i,
				   e.msg, cases[i].what);
	}
}

/* gzip damaged: cut short, a flipped byte, garbage after it. */
static void
t_gz_damage(void)
{
	unsigned char b[64], *g;
	uint32_t d = 20;
	size_t h = idx_head(b, 0x08, 1, &d), n;
	const char *p = tmp_path("g.idx.gz");
	static const char *const what[] = {"the gzip stream is truncated",
					   "corrupt gzip data",
					   "corrupt gzip data"};
	FILE *f;

	for (size_t k = 0; k < 20; k++)
		b[h + k] = (unsigned char)(k * 13);
	write_gz(p, b, h + 20, 0);
	f = fopen(p, "rb");
	ASSERT(f != NULL);
	g = malloc(256);
	n = fread(g, 1, 256, f);
	fclose(f);
	ASSERT(n > 20 && n < 200);
	for (int c = 0; c < 3; c++) {
		RtTensor *x = NULL;
		TfgError e = {0};
		unsigned char *m = malloc(n + 8);

		memcpy(m, g, n);
		if (c == 1)
			m[n - 5] ^= 0x55; /* the trailer's size: a bad check */
		if (c == 2)
			memcpy(m + n, "garbage!", 8);
		write_bytes(p, m, c == 0 ? n - 3 : c == 2 ? n + 8 : n);
		free(m);
		if (rt_load(&x, p, &e) == TFG_OK)
			TEST_FAIL_("damage %d: loaded", c);
		if (strstr(e.msg, what[c]) == NULL)
			TEST_FAIL_("damage %d: \"%s\"", c, e.msg);
	}
	free(g);
}

/* The MNIST file dir/name, or with .gz; NULL when neither is there. */
static const char *
mnist_file(const char *dir, const char *name)
{
	static char buf[512];
	struct stat st;

	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	if (stat(buf, &st) == 0)
		return buf;
	snprintf(buf, sizeof buf, "%s/%s.gz", dir, name);
	return stat(buf, &st) == 0 ? buf : NULL;
}

static void
t_mnist(void)
{
	static const uint8_t first[] = {5, 0, 4, 1, 9, 2, 1, 3, 1, 4};
	static const uint8_t tfirst[] = {7, 2, 1, 0, 4, 1, 4, 9, 5, 9};
	const char *dir = getenv("TFG_MNIST") ? getenv("TFG_MNIST")
					      : "../shared/data/mnist";
	const char *p;
	RtTensor *x = NULL;
	TfgError e = {0};
	uint64_t sum = 0;

	if (!mnist_file(dir, "train-labels-idx1-ubyte") ||
	    !mnist_file(dir, "train-images-idx3-ubyte") ||
	    !mnist_file(dir, "t10k-labels-idx1-ubyte")) {
		TEST_SKIP("no MNIST at %s", dir);
	}
	x = load_ok(mnist_file(dir, "train-labels-idx1-ubyte"), TFG_U8, 60000);
	ASSERT(memcmp(x->data, first, sizeof first) == 0);
	rt_tensor_free(x);
	x = load_ok(mnist_file(dir, "t10k-labels-idx1-ubyte"), TFG_U8, 10000);
	ASSERT(memcmp(x->data, tfirst, sizeof tfirst) == 0);
	rt_tensor_free(x);
	p = mnist_file(dir, "train-images-idx3-ubyte");
	if (rt_load(&x, p, &e) != TFG_OK)
		TEST_FAIL_("%s", e.msg);
	ASSERT_EQ(x->dtype, TFG_U8);
	ASSERT_EQ(x->shape.rank, 3);
	ASSERT_EQ(x->shape.dims[0], 60000);
	ASSERT_EQ(x->shape.dims[1], 28);
	ASSERT_EQ(x->shape.dims[2], 28);
	for (int k = 0; k < 28 * 28; k++)
		sum += ((uint8_t *)x->data)[k];
	ASSERT_EQ(sum, 27525);
	rt_tensor_free(x);
}

/* msg contains s */
#define ASSERT_HAS(msg, s)                                                    \
	do {                                                                  \
		if (strstr((msg), (s)) == NULL)                               \
			TEST_FAIL_("'%s' does not say '%s'", (msg), (s));     \
	} while (0)

/* CIFAR-10's binary batches (rt_cifar10_load): whole records as
 * u8[n, 3073], each byte as it is; a partial record, an empty file and a
 * label above 9 are errors naming the file and the record. */
static void
t_cifar10(void)
{
	static unsigned char rec[3 * 3073];
	const char *path = tmp_path("c.bin");
	RtTensor *x = NULL;
	TfgError e = {0};

	for (int i = 0; i < 3 * 3073; i++)
		rec[i] = (unsigned char)(i * 7 + 3);
	rec[0] = 9, rec[3073] = 0, rec[2 * 3073] = 4;
	write_bytes(path, rec, sizeof rec);
	if (rt_cifar10_load(&x, path, &e) != TFG_OK)
		TEST_FAIL_("%s", e.msg);
	ASSERT_EQ(x->dtype, TFG_U8);
	ASSERT_EQ(x->shape.rank, 2);
	ASSERT_EQ(x->shape.dims[0], 3);
	ASSERT_EQ(x->shape.dims[1], 3073);
	ASSERT(memcmp(x->data, rec, sizeof rec) == 0);
	rt_tensor_free(x);
	x = NULL;
	write_bytes(path, rec, 2 * 3073 + 100);
	ASSERT_EQ(rt_cifar10_load(&x, path, &e), TFG_EFORMAT);
	ASSERT(x == NULL);
	ASSERT_HAS(e.msg, "c.bin: not whole CIFAR-10 records: record 2 has "
		  "100 of its 3073 bytes (truncated)");
	write_bytes(path, rec, 0);
	ASSERT_EQ(rt_cifar10_load(&x, path, &e), TFG_EFORMAT);
	ASSERT_HAS(e.msg, "c.bin: empty file");
	rec[3073] = 10;
	write_bytes(path, rec, sizeof rec);
	ASSERT_EQ(rt_cifar10_load(&x, path, &e), TFG_EFORMAT);
	ASSERT(x == NULL);
	ASSERT_HAS(e.msg, "c.bin: record 1 has label 10, not a CIFAR-10 class "
		  "(0 to 9)");
	ASSERT_EQ(rt_cifar10_load(&x, tmp_path("none.bin"), &e), TFG_ENOENT);
	ASSERT_HAS(e.msg, "none.bin: no such file");
}

static void
cleanup(void)
{
	static const char *const names[] = {"t.idx", "t.idx.gz", "e.idx",
					    "e.idx.gz", "g.idx.gz", "c.bin"};

	if (tmpdir[0] == '\0')
		return;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		unlink(tmp_path(names[i]));
	ASSERT_EQ(rmdir(tmpdir), 0);
}

TEST_MAIN_FIXTURE(NULL, cleanup, {"types", t_types}, {"shapes", t_shapes},
		  {"errors", t_errors}, {"gz_damage", t_gz_damage},
		  {"mnist", t_mnist}, {"cifar10", t_cifar10})
