/*
 * runtime/auth.h: message authentication for the transport
 * (spec/design.md "Cluster keys"): the keys of a connection and the MAC
 * of each frame, over OpenSSL's libcrypto.  Part of the transport layer:
 * runtime/net.c is its one user.
 *
 * A cluster key (a file of at least 16 bytes, hashed to 32) never MACs
 * a frame itself.  Each connection gets a key of its own, derived from
 * the cluster key and a random number from each end (HMAC-SHA-256), so
 * that nothing recorded from one connection is valid on another; each
 * direction of it numbers its frames, and the number is the nonce of the
 * frame's MAC (Poly1305 under a one-time key, as ChaCha20-Poly1305 makes
 * it with the frame as associated data), so that nothing replayed, left
 * out or reordered within a connection is valid either.  A direct
 * loopback connection (both ends' views of it equal, net.c's net_view)
 * MACs its first exchange only.
 */
#ifndef TFG_RUNTIME_AUTH_H
#define TFG_RUNTIME_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tfg.h"

#define RT_KEY_BYTES 32    /* a cluster key, hashed, and a connection's */
#define RT_NONCE_BYTES 16  /* each end's random part of a connection key */
#define RT_VIEW_BYTES 16   /* a connection as one end sees it (rt_auth_view) */
#define RT_HELLO_BYTES (RT_NONCE_BYTES + RT_VIEW_BYTES) /* after a HELLO */
#define RT_TAG_BYTES 16    /* the MAC of a frame */
#define RT_KEY_MIN 16      /* the shortest cluster key file, in bytes */

/* One direction of a keyed connection. */
typedef struct RtAuth {
	void *ctx;             /* EVP_CIPHER_CTX, keyed; NULL: none */
	uint64_t seq;          /* frames of this direction so far */
	int dir;               /* 0 dialer to acceptor, 1 back */
} RtAuth;

/* The cluster key from file (NULL: from the file that the environment's
 * TFG_CLUSTER_KEY names, if it is set): 1 with out[] filled, 0 when no
 * key is given, -1 with *e set when the file cannot be read or is too
 * short. */
int rt_auth_key_load(const char *file, unsigned char out[RT_KEY_BYTES],
		     TfgError *e);
/* n random bytes from the kernel; -1 if it has none to give. */
int rt_auth_random(unsigned char *p, size_t n);
/* A connection's key from the cluster key and what each end said in its
 * HELLO (its random part, then its view). */
int rt_auth_derive(unsigned char out[RT_KEY_BYTES],
		   const unsigned char master[RT_KEY_BYTES],
		   const unsigned char dialer[RT_HELLO_BYTES],
		   const unsigned char acceptor[RT_HELLO_BYTES]);
/* The view of a connection (spec/design.md "Cluster keys", *Direct
 * connections*): a digest of the n bytes that name it (the kernel, the
 * network namespace, both ends' addresses), which both ends compute
 * alike only when they are the two ends of one loopback connection. */
int rt_auth_view(unsigned char out[RT_VIEW_BYTES], const void *p, size_t n);
/* Starts direction dir of a connection under key; 0, or -1 out of
 * memory.  rt_auth_free accepts one never started. */
int rt_auth_init(RtAuth *a, const unsigned char key[RT_KEY_BYTES], int dir);
void rt_auth_free(RtAuth *a);
/* The MAC of the next frame of a's direction: begin, add its bytes in
 * any number of pieces, end with its tag.  0, or -1 if libcrypto fails. */
int rt_auth_begin(RtAuth *a);
int rt_auth_add(RtAuth *a, const void *p, size_t n);
int rt_auth_end(RtAuth *a, unsigned char tag[RT_TAG_BYTES]);
/* Whether two tags agree, in constant time. */
int rt_auth_same(const unsigned char *x, const unsigned char *y);

/* TLS (spec/design.md "TLS"): every connection encrypted, both ends
 * showing a certificate signed by the cluster's CA.  A context holds the
 * process's certificate and key and the CA; each connection has its own
 * session, driven without blocking. */
typedef struct RtTls RtTls;

/* The context from PEM files; NULL with *e set. */
RtTls *rt_tls_load(const char *cert, const char *key, const char *ca,
		   TfgError *e);
void rt_tls_free(RtTls *t); /* accepts NULL */
/* A session on connected socket fd, as its client (the dialer) or its
 * server (the acceptor); NULL out of memory. */
void *rt_tls_new(RtTls *t, int fd, int server);
void rt_tls_close(void *s); /* accepts NULL */
/* Drives the handshake: 1 done, 0 not yet (*want: 1 to read, 2 to
 * write), -1 failed (why[n] says why), -2 the peer closed the
 * connection. */
int rt_tls_handshake(void *s, int *want, char *why, size_t n);
/* As read(2) and send(2) on the session: bytes moved, 0 at the end (a
 * read), or -1 with errno EAGAIN (nothing now) or EPIPE (broken). */
long rt_tls_read(void *s, void *buf, size_t n);
long rt_tls_write(void *s, const void *buf, size_t n);
/* Why this thread's last rt_tls_read or rt_tls_write failed. */
const char *rt_tls_error(void);

#endif /* TFG_RUNTIME_AUTH_H */
