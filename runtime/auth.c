/*
 * runtime/auth.c: the keys and MACs of the transport (runtime/auth.h,
 * spec/design.md "Cluster keys"), over OpenSSL's libcrypto; no
 * cryptography of our own.
 *
 * Why Poly1305 through libcrypto: a tensor's every byte is MACed on both
 * ends, so the MAC must run far faster than the wire: libcrypto's
 * Poly1305 ran several times faster than HMAC-SHA-256, BLAKE2b or
 * mbedTLS's portable Poly1305, and somewhat faster than its GMAC
 * (bench/README.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <limits.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
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
	       const unsigned char dialer[RT_HELLO_BYTES],
	       const unsigned char acceptor[RT_HELLO_BYTES])
{
	static const char label[8] = "tfg-con2";
	unsigned char in[sizeof label + 2 * RT_HELLO_BYTES];
	size_t n = 0;

	memcpy(in, label, sizeof label);
	memcpy(in + sizeof label, dialer, RT_HELLO_BYTES);
	memcpy(in + sizeof label + RT_HELLO_BYTES, acceptor, RT_HELLO_BYTES);
	if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, master,
		      RT_KEY_BYTES, in, sizeof in, out, RT_KEY_BYTES, &n) ==
	    NULL || n != RT_KEY_BYTES)
		return -1;
	return 0;
}

int
rt_auth_view(unsigned char out[RT_VIEW_BYTES], const void *p, size_t n)
{
	unsigned char d[32];
	unsigned int len = 0;

	if (!EVP_Digest(p, n, d, &len, EVP_sha256(), NULL) || len != 32)
		return -1;
	memcpy(out, d, RT_VIEW_BYTES);
	return 0;
}

int
rt_auth_init(RtAuth *a, const unsigned char key[RT_KEY_BYTES], int dir)
{
	rt_auth_free(a);
	/* the cipher and key once per connection; each frame sets only its
	   nonce (rt_auth_begin), half the cost of a full set-up */
	if ((a->ctx = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_EncryptInit_ex(a->ctx, EVP_chacha20_poly1305(), NULL, key,
			       NULL) != 1) {
		rt_auth_free(a);
		return -1;
	}
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
	return EVP_EncryptInit_ex(a->ctx, NULL, NULL, NULL, nonce) == 1 ? 0
									 : -1;
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

/* ---------------------------------------------------------------- TLS */

struct RtTls {
	SSL_CTX *client, *server;
};

/* The last of libcrypto's errors, as text, into why[n]. */
static void
ssl_why(char *why, size_t n, const char *what)
{
	unsigned long err = ERR_get_error();
	char buf[256];

	if (err == 0) {
		snprintf(why, n, "%s", what);
		return;
	}
	ERR_error_string_n(err, buf, sizeof buf);
	snprintf(why, n, "%s: %s", what, buf);
	ERR_clear_error();
}

static SSL_CTX *
tls_ctx(int server, const char *cert, const char *key, const char *ca,
	TfgError *e)
{
	SSL_CTX *c = SSL_CTX_new(server ? TLS_server_method()
					: TLS_client_method());
	char why[400];

	if (c == NULL) {
		ssl_why(why, sizeof why, "cannot make a TLS context");
		tfg_error(e, TFG_ESYS, "%s", why);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
	/* both ends show a certificate of the cluster's CA */
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER |
			   SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (server)
		SSL_CTX_set_num_tickets(c, 0); /* nothing unasked comes back */
	if (SSL_CTX_use_certificate_chain_file(c, cert) != 1) {
		ssl_why(why, sizeof why, "cannot read the certificate");
		tfg_error(e, TFG_EINVAL, "--tls-cert %s: %s", cert, why);
	} else if (SSL_CTX_use_PrivateKey_file(c, key, SSL_FILETYPE_PEM) != 1) {
		ssl_why(why, sizeof why, "cannot read the key");
		tfg_error(e, TFG_EINVAL, "--tls-key %s: %s", key, why);
	} else if (SSL_CTX_check_private_key(c) != 1) {
		tfg_error(e, TFG_EINVAL, "--tls-key %s is not the key of "
			  "--tls-cert %s", key, cert);
	} else if (SSL_CTX_load_verify_locations(c, ca, NULL) != 1) {
		ssl_why(why, sizeof why, "cannot read the CA");
		tfg_error(e, TFG_EINVAL, "--tls-ca %s: %s", ca, why);
	} else {
		return c;
	}
	SSL_CTX_free(c);
	return NULL;
}

RtTls *
rt_tls_load(const char *cert, const char *key, const char *ca, TfgError *e)
{
	RtTls *t;

	if (!cert || !key || !ca) {
		tfg_error(e, TFG_EINVAL, "TLS needs --tls-cert, --tls-key and "
			  "--tls-ca together");
		return NULL;
	}
	if ((t = calloc(1, sizeof *t)) == NULL) {
		tfg_error(e, TFG_ENOMEM, "out of memory");
		return NULL;
	}
	if ((t->client = tls_ctx(0, cert, key, ca, e)) == NULL ||
	    (t->server = tls_ctx(1, cert, key, ca, e)) == NULL) {
		rt_tls_free(t);
		return NULL;
	}
	return t;
}

void
rt_tls_free(RtTls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->client);
	SSL_CTX_free(t->server);
	free(t);
}

void *
rt_tls_new(RtTls *t, int fd, int server)
{
	SSL *s = SSL_new(server ? t->server : t->client);

	if (s == NULL || SSL_set_fd(s, fd) != 1) {
		SSL_free(s);
		return NULL;
	}
	if (server)
		SSL_set_accept_state(s);
	else
		SSL_set_connect_state(s);
	return s;
}

void
rt_tls_close(void *s)
{
	SSL_free(s);
}

/* SSL_get_error reads the thread's error queue, not the call's: a
 * failure left on it (a peer refused in its handshake) made the next
 * call on this thread that found nothing to read or no room, on any
 * connection, look failed, and that connection closed.  So the queue is
 * emptied before every call, as OpenSSL asks, and after every failure. */
int
rt_tls_handshake(void *s, int *want, char *why, size_t n)
{
	int rv, err;

	ERR_clear_error();
	rv = SSL_do_handshake(s);

	if (rv == 1)
		return 1;
	err = SSL_get_error(s, rv);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
		*want = err == SSL_ERROR_WANT_READ ? 1 : 2;
		return 0;
	}
	if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL &&
					     ERR_peek_error() == 0) ||
	    ERR_GET_REASON(ERR_peek_error()) ==
	    SSL_R_UNEXPECTED_EOF_WHILE_READING) {
		snprintf(why, n, "the connection closed in the TLS handshake");
		ERR_clear_error();
		return -2;
	}
	if (SSL_get_verify_result(s) != X509_V_OK) {
		snprintf(why, n, "its certificate: %s",
			 X509_verify_cert_error_string(
				 SSL_get_verify_result(s)));
		ERR_clear_error();
	} else
		ssl_why(why, n, err == SSL_ERROR_SYSCALL ? "the connection "
			"closed in the TLS handshake" : "the TLS handshake "
			"failed");
	return -1;
}

static _Thread_local char tls_err[200];

const char *
rt_tls_error(void)
{
	return tls_err;
}

/* errno for a failed SSL_read or SSL_write; why in tls_err. */
static long
tls_fail(void *s, int rv)
{
	int err = SSL_get_error(s, rv);

	if (err == SSL_ERROR_SSL)
		ssl_why(tls_err, sizeof tls_err, "TLS");
	else if (SSL_get_verify_result(s) != X509_V_OK)
		snprintf(tls_err, sizeof tls_err, "its certificate: %s",
			 X509_verify_cert_error_string(
				 SSL_get_verify_result(s)));
	else
		snprintf(tls_err, sizeof tls_err, "the TLS connection closed");
	ERR_clear_error();
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
		errno = EAGAIN;
		return -1;
	}
	if (err == SSL_ERROR_ZERO_RETURN)
		return 0;
	errno = EPIPE;
	return -1;
}

long
rt_tls_read(void *s, void *buf, size_t n)
{
	int rv;

	ERR_clear_error(); /* see rt_tls_handshake */
	rv = SSL_read(s, buf, n > INT_MAX ? INT_MAX : (int)n);

	return rv > 0 ? rv : tls_fail(s, rv);
}

long
rt_tls_write(void *s, const void *buf, size_t n)
{
	int rv;

	if (n == 0)
		return 0;
	ERR_clear_error();
	rv = SSL_write(s, buf, n > INT_MAX ? INT_MAX : (int)n);
	return rv > 0 ? rv : tls_fail(s, rv) == 0 ? (errno = EPIPE, -1) : -1;
}
