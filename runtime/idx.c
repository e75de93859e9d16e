/*
 * runtime/idx.c: reads IDX files (the format of the MNIST data set), plain
 * or gzip-compressed, and rt_load, the reader of `load("path")` and
 * `--feed`, which picks the .npy reader (runtime/npy.c) or this one by
 * the file's first bytes, never by its name (spec §8.4 "load"); and
 * rt_cifar10_load, the reader of load(path, format="cifar10").
 *
 * The format (LeCun's MNIST page): two zero bytes, a type code, the number
 * of dimensions n, then n big-endian u32 dims, then the elements in C
 * order, big-endian.  Type codes and the dtype each becomes:
 *
 *     0x08 unsigned byte  u8      0x0C int32   i32
 *     0x09 signed byte    i32     0x0D float32 f32
 *     0x0B int16          i32     0x0E float64 f64
 *
 * (tfg has no i8 or i16: they widen exactly to i32.)  gzip (magic 1f 8b)
 * is inflated by zlib as it is read, straight into the tensor, so a file
 * is never held twice; concatenated gzip members are one stream, as
 * gunzip has them.  Nothing is trusted: the dims must account for exactly
 * the data there is, the shape must pass the 2^40-byte rule of spec
 * §5.1 "Dtypes" before anything is allocated, and a gzip stream cannot
 * promise more than deflate can expand its bytes to (1032 to 1), so that
 * a small file cannot make the reader allocate a huge tensor.  Every
 * error starts with the path.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "runtime/rt_int.h"
#include "runtime/tfg.h"

#define IDX_GZ_RATIO 1032 /* deflate's largest expansion, and then some */
#define IDX_GZ_SLACK 4096
#define IDX_CHUNK 65536   /* compressed bytes read at a time */

/* One file being read: plain, or through zlib. */
typedef struct IdxSrc {
	FILE *f;
	const char *path;
	TfgError *e;
	int gz;             /* inflating */
	int zend;           /* the last gzip member ended (so far) */
	z_stream z;
	unsigned char *in;  /* gz: IDX_CHUNK bytes of compressed input */
} IdxSrc;

static tfg_status
idx_gz_error(IdxSrc *s, int rc)
{
	if (rc == Z_MEM_ERROR)
		return tfg_error(s->e, TFG_ENOMEM, "%s: out of memory", s->path);
	return tfg_error(s->e, TFG_EFORMAT, "%s: corrupt gzip data (%s)",
			 s->path, s->z.msg ? s->z.msg : "bad stream");
}

/* Reads up to n bytes into buf; *got is how many came (fewer only at the
 * end of the data).  Errors: a read error, corrupt or truncated gzip. */
static tfg_status
idx_read(IdxSrc *s, void *buf, size_t n, size_t *got)
{
	unsigned char *p = buf;

	*got = 0;
	if (!s->gz) {
		*got = fread(buf, 1, n, s->f);
		if (*got < n && ferror(s->f))
			return tfg_error(s->e, TFG_EIO, "%s: read error",
					 s->path);
		return TFG_OK;
	}
	while (*got < n) {
		size_t want = n - *got;
		int rc;

		if (s->z.avail_in == 0) {
			s->z.next_in = s->in;
			s->z.avail_in = (uInt)fread(s->in, 1, IDX_CHUNK, s->f);
			if (s->z.avail_in == 0 && ferror(s->f))
				return tfg_error(s->e, TFG_EIO,
						 "%s: read error", s->path);
			if (s->z.avail_in == 0) {
				if (s->zend) /* the data ends here */
					return TFG_OK;
				return tfg_error(s->e, TFG_EFORMAT,
						 "%s: the gzip stream is "
						 "truncated", s->path);
			}
		}
		if (s->zend) { /* another member follows */
			if (inflateReset(&s->z) != Z_OK)
				return idx_gz_error(s, Z_STREAM_ERROR);
			s->zend = 0;
		}
		s->z.next_out = p + *got;
		s->z.avail_out = want > (1u << 30) ? 1u << 30 : (uInt)want;
		rc = inflate(&s->z, Z_NO_FLUSH);
		*got = (size_t)(s->z.next_out - p);
		if (rc == Z_STREAM_END)
			s->zend = 1;
		else if (rc != Z_OK && !(rc == Z_BUF_ERROR &&
					 s->z.avail_in == 0))
			return idx_gz_error(s, rc);
	}
	return TFG_OK;
}

/* Type code -> dtype and the size of one element in the file. */
static int
idx_type(unsigned code, TfgDtype *t, size_t *fsize)
{
	switch (code) {
	case 0x08: *t = TFG_U8, *fsize = 1; return 0;
	case 0x09: *t = TFG_I32, *fsize = 1; return 0;
	case 0x0B: *t = TFG_I32, *fsize = 2; return 0;
	case 0x0C: *t = TFG_I32, *fsize = 4; return 0;
	case 0x0D: *t = TFG_F32, *fsize = 4; return 0;
	case 0x0E: *t = TFG_F64, *fsize = 8; return 0;
	default: return -1;
	}
}

static uint32_t
idx_be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

/* The n elements read raw into t->data (fsize bytes each, big-endian) in
 * place as t's dtype: byte order swapped, i8 and i16 widened (from the
 * last element back, so nothing is overwritten before it is read). */
static void
idx_convert(RtTensor *t, size_t fsize, unsigned code, int64_t n)
{
	unsigned char *d = t->data;

	if (code == 0x09 || code == 0x0B) /* u8 (0x08) stays as it is */
		for (int64_t i = n - 1; i >= 0; i--) {
			const unsigned char *b = d + (size_t)i * fsize;
			int32_t v = code == 0x09
				    ? (int8_t)b[0]
				    : (int16_t)(uint16_t)(b[0] << 8 | b[1]);

			memcpy(d + (size_t)i * 4, &v, 4);
		}
	if (code == 0x0C || code == 0x0D)
		for (int64_t i = 0; i < n; i++) {
			uint32_t v = idx_be32(d + (size_t)i * 4);
			memcpy(d + (size_t)i * 4, &v, 4);
		}
	if (code == 0x0E)
		for (int64_t i = 0; i < n; i++) {
			unsigned char *b = d + (size_t)i * 8;
			uint64_t v = (uint64_t)idx_be32(b) << 32 |
				     idx_be32(b + 4);
			memcpy(b, &v, 8);
		}
}

/* Parses an IDX file from s (at its first byte); size is the file's size
 * (compressed, for gzip). */
static tfg_status
idx_parse(IdxSrc *s, long long size, RtTensor **out)
{
	unsigned char head[4 + 4 * TFG_MAX_RANK], one;
	TfgShape sh = {0, {0}};
	TfgDtype t;
	size_t fsize, nbytes, got;
	uint64_t want, have;
	int64_t numel;
	RtTensor *x = NULL;
	char sb[256];
	tfg_status rv;

	if ((rv = idx_read(s, head, 4, &got)) != TFG_OK)
		return rv;
	if (got < 4)
		return tfg_error(s->e, TFG_EFORMAT, "%s: truncated IDX file: "
				 "%zu of the 4 bytes of its magic", s->path,
				 got);
	if (head[0] != 0 || head[1] != 0)
		return tfg_error(s->e, TFG_EFORMAT, "%s: not an IDX file: "
				 "bad magic %02x %02x %02x %02x (expected 00 "
				 "00, the type code and the rank)", s->path,
				 head[0], head[1], head[2], head[3]);
	if (idx_type(head[2], &t, &fsize) < 0)
		return tfg_error(s->e, TFG_EDTYPE, "%s: unknown IDX type code "
				 "0x%02x (expected 0x08 u8, 0x09 i8, 0x0B i16, "
				 "0x0C i32, 0x0D f32 or 0x0E f64)", s->path,
				 head[2]);
	if (head[3] > TFG_MAX_RANK)
		return tfg_error(s->e, TFG_EFORMAT, "%s: IDX file of rank %d: "
				 "at most %d dimensions are supported",
				 s->path, head[3], TFG_MAX_RANK);
	sh.rank = head[3];
	if ((rv = idx_read(s, head + 4, 4 * (size_t)sh.rank, &got)) != TFG_OK)
		return rv;
	if (got < 4 * (size_t)sh.rank)
		return tfg_error(s->e, TFG_EFORMAT, "%s: truncated IDX header: "
				 "%d dimensions announced, %zu bytes of the "
				 "%d they need", s->path, sh.rank, got,
				 4 * sh.rank);
	for (int k = 0; k < sh.rank; k++)
		sh.dims[k] = idx_be32(head + 4 + 4 * k);
	tfg_shape_str(sb, sizeof sb, &sh);
	if (rt_shape_nbytes(&nbytes, t, &sh) != TFG_OK)
		return tfg_error(s->e, TFG_EFORMAT, "%s: shape %s is too large "
				 "(a tensor has at most 2^40 bytes, each 0 "
				 "dimension counted as 1)", s->path, sb);
	numel = tfg_shape_numel(&sh);
	want = (uint64_t)numel * fsize; /* <= 2^40 * 8: no overflow */
	if (!s->gz) {
		have = (uint64_t)(size - 4 - 4 * sh.rank);
		if (have != want)
			return tfg_error(s->e, TFG_EFORMAT, "%s: the dims %s "
					 "need %llu bytes of data, but the "
					 "file has %llu%s", s->path, sb,
					 (unsigned long long)want,
					 (unsigned long long)have,
					 have < want ? " (truncated)"
						     : " (trailing data)");
	} else if (want > (uint64_t)size * IDX_GZ_RATIO + IDX_GZ_SLACK) {
		return tfg_error(s->e, TFG_EFORMAT, "%s: the dims %s need %llu "
				 "bytes of data, more than %lld compressed "
				 "bytes can hold (truncated)", s->path, sb,
				 (unsigned long long)want, size);
	}
	if ((rv = rt_tensor_new(&x, t, &sh)) != TFG_OK)
		return tfg_error(s->e, rv, "%s: %s", s->path, tfg_strerror(rv));
	rv = idx_read(s, x->data, (size_t)want, &got);
	if (rv == TFG_OK && got < want)
		rv = tfg_error(s->e, TFG_EFORMAT, "%s: the dims %s need %llu "
			       "bytes of data, but the file has %zu "
			       "(truncated)", s->path, sb,
			       (unsigned long long)want, got);
	if (rv == TFG_OK && s->gz &&
	    (rv = idx_read(s, &one, 1, &got)) == TFG_OK && got > 0)
		rv = tfg_error(s->e, TFG_EFORMAT, "%s: the dims %s need %llu "
			       "bytes of data, but the file has more "
			       "(trailing data)", s->path, sb,
			       (unsigned long long)want);
	if (rv != TFG_OK) {
		rt_tensor_free(x);
		return rv;
	}
	idx_convert(x, fsize, head[2], numel);
	*out = x;
	return TFG_OK;
}

/* Reads the IDX file f (plain or gzip, at its start). */
static tfg_status
idx_load(RtTensor **out, FILE *f, long long size, int gz, const char *path,
	 TfgError *e)
{
	IdxSrc s;
	tfg_status rv;
	int rc;

	memset(&s, 0, sizeof s);
	s.f = f, s.path = path, s.e = e, s.gz = gz;
	if (gz) {
		if ((s.in = malloc(IDX_CHUNK)) == NULL)
			return tfg_error(e, TFG_ENOMEM, "%s: out of memory",
					 path);
		/* 16 + MAX_WBITS: a gzip header and trailer (CRC, size) */
		if ((rc = inflateInit2(&s.z, 16 + MAX_WBITS)) != Z_OK) {
			free(s.in);
			return idx_gz_error(&s, rc);
		}
	}
	rv = idx_parse(&s, size, out);
	if (gz) {
		inflateEnd(&s.z);
		free(s.in);
	}
	return rv;
}

/* path opened for reading into *f, its stat in *st: a regular file, or
 * the error saying why not (a missing one as rt_no_such_file has it). */
static tfg_status
open_regular(FILE **f, struct stat *st, const char *path, TfgError *e)
{
	if ((*f = fopen(path, "rb")) == NULL) {
		if (errno == ENOENT)
			return rt_no_such_file(e, path);
		return tfg_error(e, TFG_EIO, "%s: cannot open: %s", path,
				 strerror(errno));
	}
	if (fstat(fileno(*f), st) != 0 || !S_ISREG(st->st_mode)) {
		fclose(*f);
		return tfg_error(e, TFG_EIO, "%s: not a regular file", path);
	}
	return TFG_OK;
}

TFG_API tfg_status
rt_load(RtTensor **out, const char *path, TfgError *e)
{
	unsigned char m[4];
	struct stat st;
	size_t n;
	FILE *f;
	int gz;
	tfg_status rv;

	*out = NULL;
	if ((rv = open_regular(&f, &st, path, e)) != TFG_OK)
		return rv;
	n = fread(m, 1, sizeof m, f);
	if (n > 0 && m[0] == 0x93) { /* "\x93NUMPY": the .npy reader's */
		fclose(f);
		return rt_npy_load(out, path, e);
	}
	gz = n >= 2 && m[0] == 0x1f && m[1] == 0x8b;
	if (n == 0)
		rv = tfg_error(e, TFG_EFORMAT, "%s: empty file (expected a "
			       ".npy or an IDX file)", path);
	else if ((gz || m[0] == 0) && fseek(f, 0, SEEK_SET) == 0)
		rv = idx_load(out, f, (long long)st.st_size, gz, path, e);
	else
		rv = tfg_error(e, TFG_EFORMAT, "%s: not a .npy or IDX file: "
			       "expected magic \\x93NUMPY, 00 00 (IDX) or 1f "
			       "8b (gzip)", path);
	fclose(f);
	return rv;
}

/* ------------------------------------------------------------ CIFAR-10 */

/* CIFAR-10's binary batches (data_batch_1.bin ... test_batch.bin): records
 * of 1 label byte (0 to 9) and 3072 pixel bytes (the red, green and blue
 * 32x32 planes, rows in order), no header.  Read whole as u8[n, 3073]:
 * the program splits the label from the pixels (spec §8.4 "load").  A
 * file that is not whole records, or a label that is not a class, is an
 * error naming the file and the record. */
#define CIFAR_RECORD 3073

tfg_status
rt_cifar10_load(RtTensor **out, const char *path, TfgError *e)
{
	struct stat st;
	RtTensor *t = NULL;
	TfgShape s = {2, {0, CIFAR_RECORD}};
	unsigned char *d;
	tfg_status rv;
	int64_t n;
	FILE *f;

	*out = NULL;
	if ((rv = open_regular(&f, &st, path, e)) != TFG_OK)
		return rv;
	n = (int64_t)st.st_size / CIFAR_RECORD;
	if (st.st_size == 0 || st.st_size % CIFAR_RECORD) {
		fclose(f);
		if (st.st_size == 0)
			return tfg_error(e, TFG_EFORMAT, "%s: empty file "
					 "(expected CIFAR-10 records of %d "
					 "bytes)", path, CIFAR_RECORD);
		return tfg_error(e, TFG_EFORMAT, "%s: not whole CIFAR-10 "
				 "records: record %lld has %lld of its %d bytes "
				 "(truncated)", path, (long long)n,
				 (long long)(st.st_size % CIFAR_RECORD),
				 CIFAR_RECORD);
	}
	s.dims[0] = n;
	if ((rv = rt_tensor_new(&t, TFG_U8, &s)) != TFG_OK) {
		fclose(f);
		return tfg_error(e, rv, "%s: %lld CIFAR-10 records: out of "
				 "memory", path, (long long)n);
	}
	d = t->data;
	if (fread(d, 1, t->nbytes, f) != t->nbytes) {
		rv = tfg_error(e, TFG_EIO, "%s: read error: %s", path,
			       ferror(f) ? strerror(errno) : "file shrank");
		fclose(f);
		rt_tensor_free(t);
		return rv;
	}
	fclose(f);
	for (int64_t i = 0; i < n; i++)
		if (d[i * CIFAR_RECORD] > 9) {
			rv = tfg_error(e, TFG_EFORMAT, "%s: record %lld has "
				       "label %d, not a CIFAR-10 class (0 to 9)",
				       path, (long long)i,
				       d[i * CIFAR_RECORD]);
			rt_tensor_free(t);
			return rv;
		}
	*out = t;
	return TFG_OK;
}
