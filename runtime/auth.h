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
 * out or reordered within a connection is valid either.
 */
#ifndef TFG_RUNTIME_AUTH_H
#define TFG_RUNTIME_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tfg.h"

#define RT_KEY_BYTES 32    /* a cluster key, hashed, and a connection's */
#define RT_NONCE_BYTES 16  /* each end's random part of a connection key */
#define RT_TAG_BYTES 16    /* the MAC of a frame */
#define RT_KEY_MIN 16      /* the shortest cluster key file, in bytes */

/* One direction of a keyed connection. */
typedef struct RtAuth {
	void *ctx;             /* EVP_CIPHER_CTX; NULL: not keyed */
	unsigned char key[RT_KEY_BYTES];
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
/* A connection's key from the cluster key and both ends' random parts. */
int rt_auth_derive(unsigned char out[RT_KEY_BYTES],
		   const unsigned char master[RT_KEY_BYTES],
		   const unsigned char dialer[RT_NONCE_BYTES],
		   const unsigned char acceptor[RT_NONCE_BYTES]);
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

#endif /* TFG_RUNTIME_AUTH_H */
