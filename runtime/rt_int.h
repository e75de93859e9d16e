/*
 * runtime/rt_int.h: declarations shared by the runtime's own files only.
 * Each module adds its section; keep it small.  The execution side has
 * its own headers, one per layer (see the end).
 */
#ifndef TFG_RUNTIME_RT_INT_H
#define TFG_RUNTIME_RT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tfg.h"

/* ------------------------------------------------- tensors (tensor.c) */

/* tfg_shape_size's bytes as a status: TFG_EINVAL for a shape it
 * refuses. */
tfg_status rt_shape_nbytes(size_t *nbytes, TfgDtype t, const TfgShape *s);
/* tfg_shape_str, with unknown dims (< 0, a generic plan's) as "?". */
char *rt_shape_str(char *buf, size_t n, const TfgShape *s);
/* rt_tensor_new with a buffer of nbytes: for TFG_STRING at least the
 * records (rt_shape_nbytes), the text after them; for other dtypes
 * exactly rt_shape_nbytes (else TFG_EINVAL). */
tfg_status rt_tensor_new_nbytes(RtTensor **out, TfgDtype t,
				const TfgShape *s, size_t nbytes);
/* A feed's conversion to its input's dtype
 * (spec §8.3 "run: fetches, feeds and steps"): NumPy's astype, made
 * strict.  Floats round to nearest (an f64 too large for f32 does not
 * fit; NaN and infinities stay), integers and bools convert when the
 * value fits, floats to integers truncate toward zero when the result
 * fits (never NaN or an infinity), to bool only 0 and 1.
 * rt_dtype_converts: whether the dtypes convert at all (any two but
 * string).  rt_tensor_convert: *out a new tensor (owned) of from's
 * shape; TFG_EDTYPE when the dtypes do not convert, TFG_EINVAL with *bad
 * the index (C order) of the first element that does not fit (else -1),
 * TFG_ETOOBIG when the shape is too large for t (an empty tensor whose
 * other dims make over 2^40 bytes of t), TFG_ENOMEM. */
int rt_dtype_converts(TfgDtype from, TfgDtype to);
tfg_status rt_tensor_convert(RtTensor **out, const RtTensor *from,
			     TfgDtype t, int64_t *bad);


/* status.c, for every layer: monotonic seconds; "host:port" (or a URL)
 * as a URL, "tcp://host:port". */
double rt_now(void);
void rt_url(char *buf, size_t n, const char *addr);
/* Missing files (spec §8.4 "load"): a relative path is looked for from
 * the process's working directory, which is where tfgc run (or, with
 * --attach, tfgc server) started, and not the program file's: so the
 * error says which that is.  rt_started_by: "tfgc run" (the default) or
 * "tfgc server", for this process.  rt_relative_note: for a relative
 * path, " (a relative path starts from CWD, the directory tfgc run
 * started in)" into buf, else "".  rt_no_such_file: "PATH: no such
 * file" and that note, as e. */
void rt_started_by(const char *who);
/* The program's file (TfgPlan.file), whose directory rt_relative_note
 * looks in too. */
void rt_program_file(const char *file);
const char *rt_relative_note(char *buf, size_t n, const char *path);
tfg_status rt_no_such_file(TfgError *e, const char *path);

/* aot.c: a 64-byte-aligned arena of at least size bytes (owned; free);
 * a large one on huge pages where the system gives them. */
char *rt_arena_alloc(size_t size);

/* gemm_sparse.c: c = alpha op(a) b + beta c (f32, b not transposed;
 * trans: a stored k x m) by the nonzeros of op(a) when it is sparse
 * enough, the host has the vector units and b is finite: returns 1 when
 * it did, 0 for BLAS to do it. */
int rt_gemm_sparse(int trans, int64_t m, int64_t n, int64_t k, double alpha,
		   const float *a, int64_t lda, const float *b, int64_t ldb,
		   double beta, float *c, int64_t ldc);
/* Tests: the kernels rt_gemm_sparse uses from now on ("avx512", "avx2",
 * "off"; 0 when the host has not the set), and its products so far. */
int rt_gemm_sparse_isa(const char *name);
extern uint64_t rt_gemm_sparse_runs;

/* gemm.c: tfg_rt_gemm's product on the calling thread alone, for
 * kernels that cut their work themselves (runtime/conv.c). */
void rt_gemm_here(int32_t dtype, int32_t trans, int64_t m, int64_t n,
		  int64_t k, double alpha, const void *a, int64_t lda,
		  const void *b, int64_t ldb, double beta, void *c,
		  int64_t ldc);
/* conv.c, for tests: 1 makes every convolution take the direct loops
 * (the reference of the GEMM path, and its fallback without memory);
 * rt_conv_gemm 1, the products even for thin filters; rt_conv_chunk,
 * when not 0, the bytes of patches of one GEMM. */
extern int rt_conv_direct;
extern int rt_conv_gemm;
extern size_t rt_conv_chunk;

/* pool.c: the threads a loop of n iterations would run on now (1: the
 * caller's alone); makes the pool on first use. */
int rt_pool_threads(int64_t n);
/* gpu.c: what a step's GPU calls left (RtCtx.gpu): waits for the streams
 * it used and gives its device arenas back; NULL state is a no-op.
 * Returns 0, or TFG_EGPU when a stream failed, with the step's error set
 * unless it holds one already.  Called when the step's part returns. */
typedef struct RtGpuStep RtGpuStep;
struct RtCtx;
int rt_gpu_step_end(struct RtCtx *c);
/* A host arena (n bytes at p) that GPU copies use: page-locked from now
 * on (once; nothing when there is no GPU or it is small); unpinned
 * before it is freed (a no-op for others).  runtime/gpu.c */
void rt_gpu_host_pin(void *p, size_t n);
void rt_gpu_host_unpin(void *p);

/* part.c: whether table t holds the parts of `task` in plan (the
 * program's hash, the task, tfg_plan_digest, a part exactly where the
 * task has one); what names t in messages ("part 'x.so'"). */
tfg_status rt_part_check(const TfgPartTable *t, const char *what,
			 const TfgPlan *plan, int task, TfgError *e);

/* batch.c: the mini-batches of a `for b in batches(...)`
 * (spec §8.6.1 "batches").  rt_permutation: 0..n-1 in the order seed
 * draws. */
void rt_permutation(int64_t *perm, int64_t n, uint64_t seed);
typedef struct RtBatchArgs {
	int64_t size;     /* rows per batch, >= 1 */
	int shuffle;      /* 0: the rows in order */
	uint64_t seed;
	int64_t shard, of; /* 0 <= shard < of */
	int drop_last;    /* no short last batch */
} RtBatchArgs;
typedef struct RtBatches {
	const RtTensor *a, *b; /* the arrays (b may be NULL), same rows */
	int64_t *rows;    /* the shard's rows of a and b, in order */
	int64_t nrows;
	int64_t size;
	int64_t count;    /* batches */
	int64_t n;        /* rows of the current batch */
	RtTensor *x, *y;  /* the current batch: a's rows, b's (owned) */
} RtBatches;
/* a's (and b's) rows must be checked already: rank >= 1, the same first
 * dim, no strings.  TFG_ENOMEM, or TFG_OK with bt->count batches that
 * rt_batches_get(bt, 0 .. count - 1) gathers; rt_batches_end frees. */
tfg_status rt_batches_begin(RtBatches *bt, const RtTensor *a,
			    const RtTensor *b, const RtBatchArgs *arg,
			    TfgError *e);
void rt_batches_get(RtBatches *bt, int64_t i);
void rt_batches_end(RtBatches *bt);

/* optim.c: ids[0..n) (each below 2^ib, ib + pb <= 64, n <= 2^pb; the
 * negative ones left out) as keys id << pb | position, sorted: least
 * significant digit first, 11 bits at a time, ping-ponging between key
 * and tmp (n each); the sorted keys, *nkey of them (tfg_rt_apply_rows,
 * tfg_rt_shard_ids). */
uint64_t *rt_sort_keys(const int64_t *ids, int64_t n, int ib, int pb,
		       uint64_t *key, uint64_t *tmp, int64_t *nkey);

/* The layers of the execution side (spec/design.md "Runtime layers")
 * have headers of their own: runtime/net.h (transport), runtime/proto.h
 * (protocol), runtime/role.h (roles). */

#endif /* TFG_RUNTIME_RT_INT_H */
