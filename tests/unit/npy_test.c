/*
 * tests/unit/npy_test.c: .npy reading and writing (runtime/npy.c).
 *
 * Round trips every dtype at ranks 0..3, checks that what we write is
 * byte for byte what numpy 1.24 writes (fixtures in tests/data, made with
 * np.save and np.lib.format.write_array), reads numpy's versions 1.0, 2.0
 * and 3.0, and checks the message of every malformed-file case.  Corrupt
 * files are written into a fresh directory under /tmp.  Run from the
 * repository root (the fixtures' paths are relative to it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/tfg.h"
#include "tests/unit/test.h"

static char tmpdir[64];

static const char *
tmp_path(const char *name)
{
	static char buf[256];

	if (tmpdir[0] == '\0') {
		strcpy(tmpdir, "/tmp/tfg-npy-XXXXXX");
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

/* Reads a whole file into a malloc'd buffer; *n is its size. */
static unsigned char *
read_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long len;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)len + 1);
	*n = fread(p, 1, (size_t)len, f);
	fclose(f);
	return p;
}

/* Writes a .npy file: magic, version, the header exactly as given (no
 * padding), then ndata bytes of data (zeros). */
static const char *
write_npy(const char *name, int major, const char *header, size_t ndata)
{
	const char *path = tmp_path(name);
	size_t hl = strlen(header), n = 0;
	unsigned char *buf = calloc(1, 12 + hl + ndata);

	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	n = 8;
	buf[n++] = hl & 0xff;
	buf[n++] = (hl >> 8) & 0xff;
	if (major != 1) {
		buf[n++] = (hl >> 16) & 0xff;
		buf[n++] = (hl >> 24) & 0xff;
	}
	memcpy(buf + n, header, hl);
	n += hl + ndata;
	write_bytes(path, buf, n);
	free(buf);
	return path;
}

/* Loading `path` fails with `code` and a message that contains `what`
 * and starts with the path. */
static void
expect_fail(const char *path, tfg_status code, const char *what)
{
	RtTensor *t = (RtTensor *)&t;
	TfgError e = {0};

	ASSERT_EQ(rt_npy_load(&t, path, &e), code);
	ASSERT(t == NULL);
	ASSERT_EQ(e.code, code);
	if (strncmp(e.msg, path, strlen(path)) != 0 ||
	    strstr(e.msg, what) == NULL)
		TEST_FAIL_("message \"%s\" lacks \"%s\"", e.msg, what);
}

static const char *const H = "{'descr': '<f4', 'fortran_order': False, "
			     "'shape': (3,), }\n";

static void
fill(RtTensor *t)
{
	int64_t n = tfg_shape_numel(&t->shape);

	for (int64_t i = 0; i < n; i++) {
		switch (t->dtype) {
		case TFG_BOOL:
			((uint8_t *)t->data)[i] = i % 3 == 1;
			break;
		case TFG_U8:
			((uint8_t *)t->data)[i] = (uint8_t)(i * 37 + 200);
			break;
		case TFG_I32:
			((int32_t *)t->data)[i] = (int32_t)(i * 7 - 20);
			break;
		case TFG_I64:
			((int64_t *)t->data)[i] = (i - 3) * ((int64_t)1 << 40);
			break;
		case TFG_F32:
			((float *)t->data)[i] = (float)i / 3.0f - 1;
			break;
		default:
			((double *)t->data)[i] = (double)i * 1.1e-3 - 0.25;
			break;
		}
	}
}

static void
t_roundtrip(void)
{
	static const TfgShape shapes[] = {
		{0, {0}}, {1, {5}}, {2, {2, 3}}, {3, {2, 3, 4}}, {1, {0}},
		{2, {4, 0}}, {3, {1, 1, 1}}, {1, {100}},
	};
	const char *path = tmp_path("rt.npy");

	for (int d = 0; d < TFG__NDTYPE; d++) {
		if (d == TFG_STRING) /* no .npy form: t_save_errors */
			continue;
		for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
			RtTensor *t, *u;
			TfgError e;
			size_t n;
			unsigned char *bytes;

			ASSERT_EQ(rt_tensor_new(&t, (TfgDtype)d, &shapes[k]),
				  TFG_OK);
			fill(t);
			ASSERT_EQ(rt_npy_save(path, t, &e), TFG_OK);
			/* the data starts at a multiple of 64 */
			bytes = read_bytes(path, &n);
			ASSERT(bytes != NULL);
			ASSERT_EQ((n - t->nbytes) % 64, 0);
			ASSERT_EQ(bytes[n - t->nbytes - 1], '\n');
			free(bytes);
			ASSERT_EQ(rt_npy_load(&u, path, &e), TFG_OK);
			ASSERT_EQ(u->dtype, t->dtype);
			ASSERT(tfg_shape_eq(&u->shape, &t->shape));
			ASSERT_EQ(u->nbytes, t->nbytes);
			ASSERT(memcmp(u->data, t->data, t->nbytes) == 0);
			rt_tensor_free(t);
			rt_tensor_free(u);
		}
	}
}

/* Loads a numpy-written fixture, saves it again, and compares bytes. */
static RtTensor *
fixture(const char *name, TfgDtype dt, int rank, int same_bytes)
{
	char path[256];
	RtTensor *t;
	TfgError e = {0};
	unsigned char *a, *b;
	size_t na, nb;

	snprintf(path, sizeof path, "tests/data/%s", name);
	if (rt_npy_load(&t, path, &e) != TFG_OK)
		TEST_FAIL_("%s", e.msg);
	ASSERT_EQ(t->dtype, dt);
	ASSERT_EQ(t->shape.rank, rank);
	if (same_bytes) {
		ASSERT_EQ(rt_npy_save(tmp_path("again.npy"), t, &e), TFG_OK);
		a = read_bytes(path, &na);
		b = read_bytes(tmp_path("again.npy"), &nb);
		ASSERT(a != NULL && b != NULL);
		ASSERT_EQ(na, nb);
		ASSERT(memcmp(a, b, na) == 0);
		free(a);
		free(b);
	}
	return t;
}

static void
t_numpy_files(void)
{
	RtTensor *t;

	t = fixture("npy_f32_2x3.npy", TFG_F32, 2, 1);
	ASSERT_EQ(t->shape.dims[0], 2);
	ASSERT_EQ(t->shape.dims[1], 3);
	ASSERT_NEAR(((float *)t->data)[0], -2.5, 0);
	ASSERT_NEAR(((float *)t->data)[5], 2.5, 0);
	rt_tensor_free(t);
	t = fixture("npy_i64_5.npy", TFG_I64, 1, 1);
	ASSERT_EQ(((int64_t *)t->data)[3], (int64_t)1 << 40);
	ASSERT_EQ(((int64_t *)t->data)[4], -((int64_t)1 << 62));
	rt_tensor_free(t);
	t = fixture("npy_bool_scalar.npy", TFG_BOOL, 0, 1);
	ASSERT_EQ(((uint8_t *)t->data)[0], 1);
	rt_tensor_free(t);
	t = fixture("npy_f64_2x2x2.npy", TFG_F64, 3, 1);
	ASSERT_NEAR(((double *)t->data)[7], 1.75, 0);
	rt_tensor_free(t);
	t = fixture("npy_i32_empty.npy", TFG_I32, 2, 1);
	ASSERT_EQ(t->nbytes, 0);
	ASSERT_EQ(t->shape.dims[1], 3);
	rt_tensor_free(t);
	t = fixture("npy_f64_v2.npy", TFG_F64, 1, 0);
	ASSERT_NEAR(((double *)t->data)[1], -2.0, 0);
	rt_tensor_free(t);
	t = fixture("npy_i32_v3.npy", TFG_I32, 2, 0);
	ASSERT_EQ(((int32_t *)t->data)[3], 4);
	rt_tensor_free(t);
}

/* Headers that are unusual but valid. */
static void
t_header_variants(void)
{
	static const struct {
		const char *header;
		TfgDtype dt;
		int rank;
		int64_t d0;
		size_t ndata;
	} cases[] = {
		{"{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}",
		 TFG_F64, 1, 3, 24},
		{"{\"descr\":\"|b1\",\"fortran_order\":False,\"shape\":(2,2)}",
		 TFG_BOOL, 2, 2, 4},
		{"  {  'descr' : '=i4' ,\n'fortran_order':False,'shape':( 100 "
		 ", ) , }  \n",
		 TFG_I32, 1, 100, 400},
		{"{'descr': '<i8', 'fortran_order': False, 'shape': ()}\n",
		 TFG_I64, 0, 0, 8},
		{"{'descr': '|i8', 'fortran_order': False, 'shape': (1, 2, 3, "
		 "1, 1, 1, 1, 1), }",
		 TFG_I64, 8, 1, 48},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (5L,), }",
		 TFG_F32, 1, 5, 20},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 7), }",
		 TFG_F32, 2, 0, 0},
		{"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }",
		 TFG_U8, 2, 2, 6},
		{"{'descr': '>u1', 'fortran_order': False, 'shape': (5,), }",
		 TFG_U8, 1, 5, 5},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		for (int major = 1; major <= 3; major++) {
			RtTensor *t;
			TfgError e = {0};
			const char *p = write_npy("v.npy", major,
						  cases[i].header,
						  cases[i].ndata);

			if (rt_npy_load(&t, p, &e) != TFG_OK)
				TEST_FAIL_("case %zu: %s", i, e.msg);
			ASSERT_EQ(t->dtype, cases[i].dt);
			ASSERT_EQ(t->shape.rank, cases[i].rank);
			if (cases[i].rank > 0)
				ASSERT_EQ(t->shape.dims[0], cases[i].d0);
			ASSERT_EQ(t->nbytes, cases[i].ndata);
			rt_tensor_free(t);
		}
	}
}

static void
t_bool_normalised(void)
{
	const char *p = tmp_path("b.npy");
	unsigned char buf[128 + 3];
	RtTensor *t;
	FILE *f;
	TfgError e;
	TfgShape s = {1, {3}};

	ASSERT_EQ(rt_tensor_new(&t, TFG_BOOL, &s), TFG_OK);
	memset(t->data, 0, 3);
	ASSERT_EQ(rt_npy_save(p, t, &e), TFG_OK);
	rt_tensor_free(t);
	f = fopen(p, "rb");
	ASSERT_EQ(fread(buf, 1, sizeof buf, f), sizeof buf);
	fclose(f);
	buf[128] = 2;
	buf[130] = 255;
	write_bytes(p, buf, sizeof buf);
	ASSERT_EQ(rt_npy_load(&t, p, &e), TFG_OK);
	ASSERT_EQ(((uint8_t *)t->data)[0], 1);
	ASSERT_EQ(((uint8_t *)t->data)[1], 0);
	ASSERT_EQ(((uint8_t *)t->data)[2], 1);
	rt_tensor_free(t);
}

static void
t_missing(void)
{
	RtTensor *t;
	TfgError e;
	char want[300];
	const char *p = tmp_path("nope.npy");

	ASSERT_EQ(rt_npy_load(&t, p, &e), TFG_ENOENT);
	snprintf(want, sizeof want, "%s: no such file", p);
	ASSERT_STREQ(e.msg, want);
	ASSERT_EQ(rt_npy_load(&t, p, NULL), TFG_ENOENT);
	expect_fail(tmpdir, TFG_EIO, "not a regular file");
}

static void
t_bad_preamble(void)
{
	const char *p = tmp_path("bad.npy");

	write_bytes(p, "", 0);
	expect_fail(p, TFG_EFORMAT, "expected magic \\x93NUMPY");
	write_bytes(p, "\x93NUMPY", 6);
	expect_fail(p, TFG_EFORMAT, "expected magic");
	write_bytes(p, "\x93NUMPZ\x01\x00\x10\x00", 10);
	expect_fail(p, TFG_EFORMAT, "expected magic");
	write_bytes(p, "PK\x03\x04 this is a zip", 18);
	expect_fail(p, TFG_EFORMAT, "not a .npy file");
	write_bytes(p, "\x93NUMPY\x04\x00\x10\x00", 10);
	expect_fail(p, TFG_EFORMAT, "unsupported .npy version 4.0");
	write_bytes(p, "\x93NUMPY\x01\x01\x10\x00", 10);
	expect_fail(p, TFG_EFORMAT, "unsupported .npy version 1.1");
	write_bytes(p, "\x93NUMPY\x01\x00\x05", 9);
	expect_fail(p, TFG_EFORMAT, "header length is truncated");
	write_bytes(p, "\x93NUMPY\x02\x00\x05\x00\x00", 11);
	expect_fail(p, TFG_EFORMAT, "header length is truncated");
	write_bytes(p, "\x93NUMPY\x01\x00\x80\x00{'descr'", 17);
	expect_fail(p, TFG_EFORMAT,
		    "header length 128 runs past the end of the file "
		    "(17 bytes)");
	write_bytes(p, "\x93NUMPY\x03\x00\xff\xff\xff\xff{}", 14);
	expect_fail(p, TFG_EFORMAT, "runs past the end of the file");
}

static void
t_bad_header(void)
{
	static const struct {
		const char *header;
		tfg_status code;
		const char *what;
	} cases[] = {
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ",
		 TFG_EFORMAT, "unexpected end of the header (expected a quoted"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)",
		 TFG_EFORMAT, "unexpected end of the header (expected ','"},
		{"", TFG_EFORMAT, "expected '{'"},
		{"['descr', '<f4']", TFG_EFORMAT, "expected '{'"},
		{"{'descr' '<f4'}", TFG_EFORMAT, "expected ':' after a key"},
		{"{'descr': '<f4", TFG_EFORMAT, "unterminated string"},
		{"{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }",
		 TFG_EDTYPE, "unsupported dtype '<f2'"},
		{"{'descr': '|u2', 'fortran_order': False, 'shape': (3,), }",
		 TFG_EDTYPE, "unsupported dtype '|u2'"},
		{"{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }",
		 TFG_EDTYPE, "unsupported dtype '<i2' (expected '|b1', '|u1', "
		 "'<i4', '<i8', '<f4' or '<f8')"},
		{"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
		 TFG_EDTYPE, "unsupported dtype '<c8'"},
		{"{'descr': '<U5', 'fortran_order': False, 'shape': (3,), }",
		 TFG_EDTYPE, "unsupported dtype '<U5'"},
		{"{'descr': 'float32', 'fortran_order': False, 'shape': (3,)}",
		 TFG_EDTYPE, "unsupported dtype 'float32'"},
		{"{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
		 TFG_EFORMAT, "big-endian data ('>f4') is not supported"},
		{"{'descr': [('a', '<f4')], 'fortran_order': False, "
		 "'shape': (3,), }",
		 TFG_EFORMAT, "structured arrays are not supported"},
		{"{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }",
		 TFG_EFORMAT, "Fortran-order arrays are not supported"},
		{"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }",
		 TFG_EFORMAT, "expected True or False"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }",
		 TFG_EFORMAT, "dimension 0 of 'shape' is negative (-3)"},
		{"{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (2, 99999999999999999999), }",
		 TFG_EFORMAT, "dimension 1 of 'shape' is too large"},
		{"{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (4611686018427387904, 4), }",
		 TFG_EFORMAT, "shape [4611686018427387904, 4] is too large"},
		{"{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (4611686018427387904, 4, 0), }",
		 TFG_EFORMAT, "shape [4611686018427387904, 4, 0] is too large "
		 "(a tensor has at most 2^40 bytes, each 0 dimension counted "
		 "as 1)"},
		{"{'descr': '<f4', 'fortran_order': False, "
		 "'shape': (1,1,1,1,1,1,1,1,1), }",
		 TFG_EFORMAT, "arrays of rank above 8 are not supported"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }",
		 TFG_EFORMAT, "'shape' is not a tuple"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': [3], }",
		 TFG_EFORMAT, "expected a tuple for 'shape'"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }",
		 TFG_EFORMAT, "expected ',' or ')' in 'shape'"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,), }",
		 TFG_EFORMAT, "expected ',' or ')' in 'shape'"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (,), }",
		 TFG_EFORMAT, "expected an integer in 'shape'"},
		{"{'descr': '<f4', 'fortran_order': False}", TFG_EFORMAT,
		 "no 'shape' key"},
		{"{'fortran_order': False, 'shape': (3,)}", TFG_EFORMAT,
		 "no 'descr' key"},
		{"{'descr': '<f4', 'shape': (3,)}", TFG_EFORMAT,
		 "no 'fortran_order' key"},
		{"{'descr': '<f4', 'descr': '<f4'}", TFG_EFORMAT,
		 "key 'descr' appears twice"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "
		 "'extra': 1}",
		 TFG_EFORMAT, "unexpected key 'extra'"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x",
		 TFG_EFORMAT, "expected the end of the header after '}'"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *p = write_npy("h.npy", 1, cases[i].header, 12);

		expect_fail(p, cases[i].code, cases[i].what);
	}
}

static void
t_bad_data(void)
{
	const char *p;
	char want[300];
	RtTensor *t;
	TfgError e;
	static const char h100[] = "{'descr': '<f4', 'fortran_order': False, "
				   "'shape': (100,), }\n";

	p = write_npy("x.npy", 1, h100, 396);
	ASSERT_EQ(rt_npy_load(&t, p, &e), TFG_EFORMAT);
	snprintf(want, sizeof want,
		 "%s: data is truncated: expected 400 bytes, found 396", p);
	ASSERT_STREQ(e.msg, want);
	p = write_npy("x.npy", 1, h100, 0);
	expect_fail(p, TFG_EFORMAT, "expected 400 bytes, found 0");
	p = write_npy("x.npy", 2, h100, 403);
	expect_fail(p, TFG_EFORMAT, "3 bytes of trailing data");
	p = write_npy("x.npy", 1, H, 12);
	ASSERT_EQ(rt_npy_load(&t, p, &e), TFG_OK);
	rt_tensor_free(t);
}

static void
t_save_errors(void)
{
	RtTensor *t;
	TfgError e;
	TfgShape s = {1, {4}};
	char path[300];

	ASSERT_EQ(rt_tensor_new(&t, TFG_F32, &s), TFG_OK);
	memset(t->data, 0, t->nbytes);
	snprintf(path, sizeof path, "%s/no/such/dir.npy", tmpdir);
	ASSERT_EQ(rt_npy_save(path, t, &e), TFG_ENOENT);
	ASSERT(strncmp(e.msg, path, strlen(path)) == 0);
	t->nbytes = 3; /* inconsistent with the shape */
	ASSERT_EQ(rt_npy_save(tmp_path("s.npy"), t, &e), TFG_EINVAL);
	t->nbytes = 16;
	rt_tensor_free(t);
	/* strings have no .npy form here (spec §5.7 "Strings") */
	ASSERT_EQ(rt_tensor_new(&t, TFG_STRING, &s), TFG_OK);
	memset(t->data, 0, t->nbytes);
	ASSERT_EQ(rt_npy_save(tmp_path("s.npy"), t, &e), TFG_EINVAL);
	ASSERT(strstr(e.msg, "string tensors cannot be saved") != NULL);
	rt_tensor_free(t);
}

/* Removes the files the tests made, then the directory, which must then
 * be empty: no test left a file behind. */
static void
cleanup(void)
{
	static const char *const names[] = {
		"rt.npy", "again.npy", "v.npy", "b.npy", "bad.npy",
		"h.npy",  "x.npy",     "s.npy",
	};

	if (tmpdir[0] == '\0')
		return; /* the tests run made none */
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		unlink(tmp_path(names[i]));
	ASSERT_EQ(rmdir(tmpdir), 0);
}

TEST_MAIN_FIXTURE(NULL, cleanup,
		  {"roundtrip", t_roundtrip}, {"numpy_files", t_numpy_files},
		  {"header_variants", t_header_variants},
		  {"bool_normalised", t_bool_normalised},
		  {"missing", t_missing}, {"bad_preamble", t_bad_preamble},
		  {"bad_header", t_bad_header}, {"bad_data", t_bad_data},
		  {"save_errors", t_save_errors})
