/*
 * runtime/auth.c: the keys and MACs of the transport (runtime/auth.h,
 * spec/design.md "Cluster keys"), over OpenSSL's libcrypto; no
 * cryptography of our own.
 *
 * Why Poly1305 through libcrypto: a tensor's every byte is MACed on both
 * ends, so the MAC must run far faster than the wire.  Measured here
 * (Zen 4, 64 MiB): libcrypto's Poly1305 12.6 GB/s, its GMAC 8.6, HMAC-
 * SHA-256 1.8, BLAKE2b 1.0, mbedTLS's Poly1305 1.4 (portable C).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "runtime/auth.h"

#define KEY_FILE_MAX 4096 /* longer files are not keys */

int
rt_auth_key_load(const char *file, unsigned char out[RT_KEY_BYTES],
		 TfgError *e)
{
	unsigned char buf[KEY_FILE_MAX + 1];
	unsigned int n = 0;
	const char *how = "--cluster-key";
	size_t len;
	FILE *f;

	if (file == NULL) {
		file = getenv("TFG_CLUSTER_KEY");
		how = "TFG_CLUSTER_KEY";
		if (file == NULL || *file == '\0')
			return 0;
	}
	if ((f = fopen(file, "rb")) == NULL) {
		tfg_error(e, TFG_ENOENT, "cannot read the cluster key %s (%s): "
			  "%s", file, how, strerror(errno));
		return -1;
	}
	len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	if (len > KEY_FILE_MAX || len < RT_KEY_MIN) {
		tfg_error(e, TFG_EINVAL, "the cluster key %s (%s) has %s bytes: "
			  "a key is %d to %d bytes (make one with 'head -c 32 "
			  "/dev/urandom > %s')", file, how, len > KEY_FILE_MAX
			  ? "too many" : len == 0 ? "no" : "too few", RT_KEY_MIN,
			  KEY_FILE_MAX, file);
		return -1;
	}
	if (!EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL) ||
	    n != RT_KEY_BYTES) {
		tfg_error(e, TFG_ESYS, "cannot hash the cluster key %s", file);
		return -1;
	}
	OPENSSL_cleanse(buf, sizeof buf);
	return 1;
}

int
rt_auth_random(unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0)
			p += r, n -= (size_t)r;
	}
	return 0;
}

int
rt_auth_derive(unsigned char out[RT_KEY_BYTES],
	       const unsigned char master[RT_KEY_BYTES],
	       const unsigned char dialer[RT_NONCE_BYTES],
	       const unsigned char acceptor[RT_NONCE_BYTES])
{
	static const char label[8] = "tfg-con1";
	unsigned char in[sizeof label + 2 * RT_NONCE_BYTES];
	size_t n = 0;

	memcpy(in, label, sizeof label);
	memcpy(in + sizeof label, dialer, RT_NONCE_BYTES);
	memcpy(in + sizeof label + RT_NONCE_BYTES, acceptor, RT_NONCE_BYTES);
	if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, master,
		      RT_KEY_BYTES, in, sizeof in, out, RT_KEY_BYTES, &n) ==
	    NULL || n != RT_KEY_BYTES)
		return -1;
	return 0;
}

int
rt_auth_init(RtAuth *a, const unsigned char key[RT_KEY_BYTES], int dir)
{
	rt_auth_free(a);
	if ((a->ctx = EVP_CIPHER_CTX_new()) == NULL)
		return -1;
	memcpy(a->key, key, RT_KEY_BYTES);
	a->seq = 0;
	a->dir = dir;
	return 0;
}

void
rt_auth_free(RtAuth *a)
{
	if (a->ctx)
		EVP_CIPHER_CTX_free(a->ctx);
	OPENSSL_cleanse(a, sizeof *a);
	a->ctx = NULL;
}

/* The nonce of a frame: its direction, then its number (RFC 8439's
 * 96 bits); a connection's key is its own, so numbers never repeat
 * under one key. */
int
rt_auth_begin(RtAuth *a)
{
	unsigned char nonce[12];

	nonce[0] = (unsigned char)a->dir;
	nonce[1] = nonce[2] = nonce[3] = 0;
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (unsigned char)(a->seq >> 8 * i);
	a->seq++;
	return EVP_EncryptInit_ex(a->ctx, EVP_chacha20_poly1305(), NULL, a->key,
				  nonce) == 1 ? 0 : -1;
}

int
rt_auth_add(RtAuth *a, const void *p, size_t n)
{
	int out;

	/* associated data only: nothing is encrypted */
	while (n > 0) {
		int m = n > (1u << 30) ? 1 << 30 : (int)n;

		if (EVP_EncryptUpdate(a->ctx, NULL, &out, p, m) != 1)
			return -1;
		p = (const char *)p + m;
		n -= (size_t)m;
	}
	return 0;
}

int
rt_auth_end(RtAuth *a, unsigned char tag[RT_TAG_BYTES])
{
	unsigned char none[1];
	int out;

	if (EVP_EncryptFinal_ex(a->ctx, none, &out) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_GET_TAG, RT_TAG_BYTES,
				tag) != 1)
		return -1;
	return 0;
}

int
rt_auth_same(const unsigned char *x, const unsigned char *y)
{
	return CRYPTO_memcmp(x, y, RT_TAG_BYTES) == 0;
}
