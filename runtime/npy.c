/*
 * runtime/npy.c: reads and writes NumPy .npy files.
 *
 * The format (numpy/lib/format.py): "\x93NUMPY", major and minor version,
 * the header length (u16 for 1.0, u32 for 2.0 and 3.0, little-endian),
 * then the header, a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final '\n', then the raw C-order data.
 *
 * The header is parsed as a (tiny) Python literal rather than matched
 * against numpy's exact spelling, so files from other writers load too:
 * keys in any order, either quote, any whitespace, trailing commas.  Every
 * check fails with a message that starts with the path and says what was
 * expected.  The file must hold exactly the data the header promises.
 * Saving writes version 1.0 byte for byte as numpy 1.24 does, including
 * its spare header space and 64-byte data alignment.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/rt_int.h"
#include "runtime/tfg.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "runtime/npy.c assumes a little-endian host"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21 /* numpy's GROWTH_AXIS_MAX_DIGITS */
#define NPY_MAX_HEADER 100000 /* numpy's _MAX_HEADER_SIZE: 10000 */

/* The parse state of one header. */
typedef struct NpyParse {
	const char *path;
	const char *begin; /* the header text */
	const char *p;   /* next character */
	const char *end; /* end of the header text */
	TfgError *e;
} NpyParse;

/* What the header says. */
typedef struct NpyHeader {
	TfgDtype dtype;
	TfgShape shape;
	int have; /* bit 0 descr, 1 fortran_order, 2 shape */
} NpyHeader;

static void
npy_skip_ws(NpyParse *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
		*ps->p == '\r'))
		ps->p++;
}

/* Consumes character c (after whitespace) if it is next. */
static int
npy_accept(NpyParse *ps, char c)
{
	npy_skip_ws(ps);
	if (ps->p < ps->end && *ps->p == c) {
		ps->p++;
		return 1;
	}
	return 0;
}

static tfg_status
npy_bad(NpyParse *ps, const char *what)
{
	if (ps->p >= ps->end)
		return tfg_error(ps->e, TFG_EFORMAT,
				 "%s: malformed header: unexpected end of the "
				 "header (expected %s)",
				 ps->path, what);
	return tfg_error(ps->e, TFG_EFORMAT,
			 "%s: malformed header: expected %s at header offset %ld, "
			 "found '%c'",
			 ps->path, what, (long)(ps->p - ps->begin),
			 isprint((unsigned char)*ps->p) ? *ps->p : '?');
}

/* A quoted string ('..' or ".."), copied into buf (truncated to n-1). */
static tfg_status
npy_string(NpyParse *ps, char *buf, size_t n)
{
	char q;
	size_t len = 0;

	npy_skip_ws(ps);
	if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
		return npy_bad(ps, "a quoted string");
	q = *ps->p++;
	while (ps->p < ps->end && *ps->p != q && *ps->p != '\n') {
		if (len + 1 < n) /* kept printable for messages */
			buf[len++] = isprint((unsigned char)*ps->p) ? *ps->p
								    : '?';
		ps->p++;
	}
	buf[len] = '\0';
	if (ps->p >= ps->end || *ps->p != q)
		return tfg_error(ps->e, TFG_EFORMAT,
				 "%s: malformed header: unterminated string",
				 ps->path);
	ps->p++;
	return TFG_OK;
}

static tfg_status
npy_descr(NpyParse *ps, NpyHeader *h)
{
	char d[64];
	tfg_status rv;

	npy_skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '[')
		return tfg_error(ps->e, TFG_EFORMAT,
				 "%s: structured arrays are not supported",
				 ps->path);
	if ((rv = npy_string(ps, d, sizeof d)) != TFG_OK)
		return rv;
	if (strlen(d) == 3 && d[0] == '>' && strcmp(d + 1, "b1") != 0 &&
	    strcmp(d + 1, "u1") != 0) /* one byte has no order */
		return tfg_error(ps->e, TFG_EFORMAT,
				 "%s: big-endian data ('%s') is not supported",
				 ps->path, d);
	if (strlen(d) == 3 && strchr("<|=>", d[0]) != NULL) {
		if (strcmp(d + 1, "f4") == 0)
			h->dtype = TFG_F32;
		else if (strcmp(d + 1, "f8") == 0)
			h->dtype = TFG_F64;
		else if (strcmp(d + 1, "i4") == 0)
			h->dtype = TFG_I32;
		else if (strcmp(d + 1, "i8") == 0)
			h->dtype = TFG_I64;
		else if (strcmp(d + 1, "b1") == 0)
			h->dtype = TFG_BOOL;
		else if (strcmp(d + 1, "u1") == 0)
			h->dtype = TFG_U8;
		else
			goto unsupported;
		return TFG_OK;
	}
unsupported:
	return tfg_error(ps->e, TFG_EDTYPE,
			 "%s: unsupported dtype '%s' (expected '|b1', '|u1', "
			 "'<i4', '<i8', '<f4' or '<f8')",
			 ps->path, d);
}

static tfg_status
npy_fortran(NpyParse *ps)
{
	npy_skip_ws(ps);
	if ((size_t)(ps->end - ps->p) >= 5 && memcmp(ps->p, "False", 5) == 0) {
		ps->p += 5;
		return TFG_OK;
	}
	if ((size_t)(ps->end - ps->p) >= 4 && memcmp(ps->p, "True", 4) == 0)
		return tfg_error(ps->e, TFG_EFORMAT,
				 "%s: Fortran-order arrays are not supported",
				 ps->path);
	return npy_bad(ps, "True or False for 'fortran_order'");
}

static tfg_status
npy_shape(NpyParse *ps, NpyHeader *h)
{
	TfgShape *s = &h->shape;
	int comma = 0;

	s->rank = 0;
	if (!npy_accept(ps, '('))
		return npy_bad(ps, "a tuple for 'shape'");
	for (;;) {
		int64_t v = 0;
		int neg = 0;

		if (npy_accept(ps, ')'))
			break;
		if (s->rank > 0 && !comma)
			return npy_bad(ps, "',' or ')' in 'shape'");
		npy_skip_ws(ps);
		if (ps->p < ps->end && *ps->p == '-') {
			neg = 1;
			ps->p++;
		}
		if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p))
			return npy_bad(ps, "an integer in 'shape'");
		while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
			int dig = *ps->p++ - '0';

			if (v > (INT64_MAX - dig) / 10)
				return tfg_error(ps->e, TFG_EFORMAT,
						 "%s: dimension %d of 'shape' "
						 "is too large",
						 ps->path, s->rank);
			v = v * 10 + dig;
		}
		if (ps->p < ps->end && (*ps->p == 'L' || *ps->p == 'l'))
			ps->p++; /* Python 2 long */
		if (neg && v != 0)
			return tfg_error(ps->e, TFG_EFORMAT,
					 "%s: dimension %d of 'shape' is "
					 "negative (-%lld)",
					 ps->path, s->rank, (long long)v);
		if (s->rank == TFG_MAX_RANK)
			return tfg_error(ps->e, TFG_EFORMAT,
					 "%s: arrays of rank above %d are not "
					 "supported",
					 ps->path, TFG_MAX_RANK);
		s->dims[s->rank++] = v;
		comma = npy_accept(ps, ',');
	}
	if (s->rank == 1 && !comma)
		return tfg_error(ps->e, TFG_EFORMAT,
				 "%s: malformed header: 'shape' is not a "
				 "tuple (a 1-tuple needs a trailing comma)",
				 ps->path);
	return TFG_OK;
}

/* Parses the whole dict: exactly the keys descr, fortran_order, shape. */
static tfg_status
npy_dict(NpyParse *ps, NpyHeader *h)
{
	static const char *const keys[3] = {"descr", "fortran_order",
					    "shape"};
	tfg_status rv;

	h->have = 0;
	if (!npy_accept(ps, '{'))
		return npy_bad(ps, "'{' to open the header dict");
	for (;;) {
		char key[64];
		int k;

		if (npy_accept(ps, '}'))
			break;
		if ((rv = npy_string(ps, key, sizeof key)) != TFG_OK)
			return rv;
		for (k = 0; k < 3 && strcmp(key, keys[k]) != 0; k++)
			;
		if (k == 3)
			return tfg_error(ps->e, TFG_EFORMAT,
					 "%s: malformed header: unexpected "
					 "key '%s'",
					 ps->path, key);
		if (h->have & (1 << k))
			return tfg_error(ps->e, TFG_EFORMAT,
					 "%s: malformed header: key '%s' "
					 "appears twice",
					 ps->path, key);
		h->have |= 1 << k;
		if (!npy_accept(ps, ':'))
			return npy_bad(ps, "':' after a key");
		rv = k == 0 ? npy_descr(ps, h)
		     : k == 1 ? npy_fortran(ps)
			      : npy_shape(ps, h);
		if (rv != TFG_OK)
			return rv;
		if (npy_accept(ps, '}'))
			break;
		if (!npy_accept(ps, ','))
			return npy_bad(ps, "',' or '}' in the header dict");
	}
	npy_skip_ws(ps);
	if (ps->p != ps->end)
		return npy_bad(ps, "the end of the header after '}'");
	for (int k = 0; k < 3; k++)
		if (!(h->have & (1 << k)))
			return tfg_error(ps->e, TFG_EFORMAT,
					 "%s: malformed header: no '%s' key",
					 ps->path, keys[k]);
	return TFG_OK;
}

static uint32_t
npy_le(const unsigned char *b, int n)
{
	uint32_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* Reads exactly n bytes; 0 when fewer arrived. */
static int
npy_read(FILE *f, void *buf, size_t n)
{
	return fread(buf, 1, n, f) == n;
}

static tfg_status
npy_open(FILE **f, long long *size, const char *path, TfgError *e)
{
	struct stat st;

	if ((*f = fopen(path, "rb")) == NULL) {
		if (errno == ENOENT)
			return rt_no_such_file(e, path);
		return tfg_error(e, TFG_EIO, "%s: cannot open: %s", path,
				 strerror(errno));
	}
	if (fstat(fileno(*f), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(*f);
		*f = NULL;
		return tfg_error(e, TFG_EIO, "%s: not a regular file", path);
	}
	*size = (long long)st.st_size;
	return TFG_OK;
}

/* Reads the preamble and the header; on success *off is the data offset. */
static tfg_status
npy_header(FILE *f, long long size, const char *path, NpyHeader *h,
	   long long *off, TfgError *e)
{
	unsigned char pre[12];
	int lenbytes;
	uint32_t hlen;
	char *text;
	NpyParse ps;
	tfg_status rv;

	if (size < NPY_MAGIC_LEN + 2 || !npy_read(f, pre, NPY_MAGIC_LEN + 2) ||
	    memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
		return tfg_error(e, TFG_EFORMAT,
				 "%s: not a .npy file: expected magic "
				 "\\x93NUMPY",
				 path);
	if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0)
		return tfg_error(e, TFG_EFORMAT,
				 "%s: unsupported .npy version %d.%d (expected "
				 "1.0, 2.0 or 3.0)",
				 path, pre[6], pre[7]);
	lenbytes = pre[6] == 1 ? 2 : 4;
	if (size < NPY_MAGIC_LEN + 2 + lenbytes ||
	    !npy_read(f, pre + 8, (size_t)lenbytes))
		return tfg_error(e, TFG_EFORMAT,
				 "%s: header length is truncated", path);
	hlen = npy_le(pre + 8, lenbytes);
	*off = NPY_MAGIC_LEN + 2 + lenbytes + (long long)hlen;
	if (*off > size)
		return tfg_error(e, TFG_EFORMAT,
				 "%s: header length %lu runs past the end of "
				 "the file (%lld bytes)",
				 path, (unsigned long)hlen, size);
	if (hlen > NPY_MAX_HEADER)
		return tfg_error(e, TFG_EFORMAT,
				 "%s: header length %lu is too large", path,
				 (unsigned long)hlen);
	if ((text = malloc(hlen + 1)) == NULL)
		return tfg_error(e, TFG_ENOMEM, "%s: out of memory", path);
	if (!npy_read(f, text, hlen)) {
		free(text);
		return tfg_error(e, TFG_EIO, "%s: read error", path);
	}
	text[hlen] = '\0';
	ps.path = path;
	ps.begin = ps.p = text;
	ps.end = text + hlen;
	ps.e = e;
	if (memchr(text, '\0', hlen) != NULL)
		rv = tfg_error(e, TFG_EFORMAT,
			       "%s: malformed header: it contains a NUL byte",
			       path);
	else
		rv = npy_dict(&ps, h);
	free(text);
	return rv;
}

TFG_API tfg_status
rt_npy_load(RtTensor **out, const char *path, TfgError *e)
{
	FILE *f;
	long long size = 0, off = 0;
	NpyHeader h;
	RtTensor *t = NULL;
	size_t nbytes;
	char sbuf[256];
	tfg_status rv;

	*out = NULL;
	if ((rv = npy_open(&f, &size, path, e)) != TFG_OK)
		return rv;
	if ((rv = npy_header(f, size, path, &h, &off, e)) != TFG_OK)
		goto done;
	if (rt_shape_nbytes(&nbytes, h.dtype, &h.shape) != TFG_OK) {
		rv = tfg_error(e, TFG_EFORMAT, "%s: shape %s is too large "
			       "(a tensor has at most 2^40 bytes, each 0 "
			       "dimension counted as 1)", path,
			       tfg_shape_str(sbuf, sizeof sbuf, &h.shape));
		goto done;
	}
	if ((unsigned long long)(size - off) < nbytes) {
		rv = tfg_error(e, TFG_EFORMAT,
			       "%s: data is truncated: expected %zu bytes, "
			       "found %lld",
			       path, nbytes, size - off);
		goto done;
	}
	if ((unsigned long long)(size - off) > nbytes) {
		rv = tfg_error(e, TFG_EFORMAT,
			       "%s: %llu bytes of trailing data after the "
			       "array",
			       path, (unsigned long long)(size - off) - nbytes);
		goto done;
	}
	if ((rv = rt_tensor_new(&t, h.dtype, &h.shape)) != TFG_OK) {
		rv = tfg_error(e, rv, "%s: %s", path, tfg_strerror(rv));
		goto done;
	}
	if (nbytes > 0 && !npy_read(f, t->data, nbytes)) {
		rv = tfg_error(e, TFG_EIO, "%s: read error", path);
		goto done;
	}
	if (h.dtype == TFG_BOOL) /* numpy treats any non-zero byte as True */
		for (size_t i = 0; i < nbytes; i++)
			((unsigned char *)t->data)[i] =
			    ((unsigned char *)t->data)[i] != 0;
	*out = t;
	t = NULL;
done:
	rt_tensor_free(t);
	fclose(f);
	return rv;
}

/* The header numpy 1.24 writes, with its padding and '\n'; returns the
 * length. buf must hold 256 bytes (rank <= 8 keeps it under 256). */
static size_t
npy_make_header(char *buf, const RtTensor *t)
{
	static const char *const descr[TFG__NDTYPE] = {
		[TFG_BOOL] = "|b1", [TFG_I32] = "<i4", [TFG_I64] = "<i8",
		[TFG_F32] = "<f4",  [TFG_F64] = "<f8", [TFG_U8] = "|u1",
	};
	char shape[220];
	size_t n = 0, hlen, pad;
	const TfgShape *s = &t->shape;

	n += (size_t)sprintf(shape, "(");
	for (int i = 0; i < s->rank; i++)
		n += (size_t)sprintf(shape + n, "%s%lld", i ? ", " : "",
				     (long long)s->dims[i]);
	sprintf(shape + n, "%s)", s->rank == 1 ? "," : "");
	memcpy(buf, NPY_MAGIC "\x01\x00", 8);
	n = 10;
	n += (size_t)sprintf(buf + n,
			     "{'descr': '%s', 'fortran_order': False, "
			     "'shape': %s, }",
			     descr[t->dtype], shape);
	if (s->rank > 0) { /* spare room to grow the first axis in place */
		int w = snprintf(NULL, 0, "%lld", (long long)s->dims[0]);

		for (int i = w; i < NPY_GROWTH_DIGITS; i++)
			buf[n++] = ' ';
	}
	hlen = n - 10 + 1;
	pad = NPY_ALIGN - (10 + hlen) % NPY_ALIGN;
	memset(buf + n, ' ', pad);
	n += pad;
	buf[n++] = '\n';
	buf[8] = (char)((n - 10) & 0xff);
	buf[9] = (char)((n - 10) >> 8);
	return n;
}

TFG_API tfg_status
rt_npy_save(const char *path, const RtTensor *t, TfgError *e)
{
	char hdr[512];
	size_t n, nbytes;
	FILE *f;
	int ok;

	if (t->dtype == TFG_STRING) /* the compiler refuses it first */
		return tfg_error(e, TFG_EINVAL, "%s: string tensors cannot be "
				 "saved as .npy files", path);
	if (rt_shape_nbytes(&nbytes, t->dtype, &t->shape) != TFG_OK ||
	    nbytes != t->nbytes || (nbytes > 0 && t->data == NULL))
		return tfg_error(e, TFG_EINVAL, "%s: invalid tensor to save",
				 path);
	n = npy_make_header(hdr, t);
	if ((f = fopen(path, "wb")) == NULL)
		return tfg_error(e, errno == ENOENT ? TFG_ENOENT : TFG_EIO,
				 "%s: cannot create: %s", path,
				 strerror(errno));
	ok = fwrite(hdr, 1, n, f) == n;
	if (ok && nbytes > 0)
		ok = fwrite(t->data, 1, nbytes, f) == nbytes;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok) {
		int err = errno;

		remove(path);
		return tfg_error(e, TFG_EIO, "%s: write failed: %s", path,
				 strerror(err));
	}
	return TFG_OK;
}
