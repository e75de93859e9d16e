/*
 * runtime/part.h: the part ABI (spec/design.md "The part ABI"): the
 * context a generated part gets as its first argument, and that every
 * tfg_rt_* entry point it calls (aot.c, gpu.c) takes back.
 *
 * A part's context is not its step: the protocol's step (RtStep,
 * runtime/proto.h) is the step as the rendezvous and the roles see it
 * (its id, client, inbox, waits); the context is what one run of a part
 * reaches through its calls, and lives as long as that run
 * (rt_run_part, runtime/run_part.c).  Who sets what:
 *
 *   recv, send, recv_ref, flush, step   rendezvous.c (rt_part_init), or
 *                                       aot.c (tfg_aot_run: the AOT
 *                                       fields, no step)
 *   var, apply, store                   var.c, optim.c (rt_vars_attach)
 *   gpu                                 gpu.c, at the part's first GPU
 *                                       call; freed by rt_gpu_step_end
 *   err                                 whoever makes the context
 */
#ifndef TFG_RUNTIME_PART_H
#define TFG_RUNTIME_PART_H

#include <stdint.h>

#include "runtime/tfg.h"

struct RtStep;
struct RtGpuStep;

typedef struct RtCtx RtCtx;

/* What RtCtx.var gets as src for a scatter (tfg_rt_scatter). */
typedef struct RtRows {
	const int64_t *ids;
	int64_t n;
	const void *rows;
} RtRows;
struct RtCtx {
	/* what tfg_rt_recv/tfg_rt_send/tfg_rt_recv_ref call: the
	   rendezvous, or tfg_aot_run's buffers (recv_ref NULL: recv, into
	   dst) */
	int (*recv)(RtCtx *c, uint32_t key, void *dst);
	int (*send)(RtCtx *c, uint32_t key, const void *src);
	/* tfg_rt_send_rows's: rows rows of a counted edge (NULL: send
	   sends the whole value) */
	int (*send_rows)(RtCtx *c, uint32_t key, const void *src,
			 int64_t rows);
	int (*recv_ref)(RtCtx *c, uint32_t key, void *dst, void **data);
	/* tfg_rt_flush's: the sends this thread held back leave now
	   (spec/design.md "Held sends"); NULL where nothing is held */
	void (*flush)(RtCtx *c);
	/* what tfg_rt_var/tfg_rt_apply(_rows) call: the task's variables (NULL:
	   the part runs without a task server) */
	int (*var)(RtCtx *c, uint32_t var, uint32_t op, const void *src,
		   void *dst);
	int (*apply)(RtCtx *c, uint32_t var, uint32_t kind, uint32_t slot,
		     const int64_t *ids, int64_t nids, const void *grad,
		     const double *hyper, void *dst);
	void *store;           /* their state (the RtServer) */
	const TfgAotSig *aot;  /* tfg_aot_run only: the signature, */
	const void *const *aot_feeds; /* its feed buffers */
	void *const *aot_fetches;     /* and its fetch buffers */
	struct RtGpuStep *gpu; /* its arenas and streams on GPUs; NULL
				  until its first GPU call */
	struct RtStep *step;   /* the step it runs in; NULL in tfg_aot_run */
	uint64_t no;           /* the step's number (RT_STEP_NO), for
				  traces; 0 without one */
	const char *who;       /* the task's name where it reports its own
				  failures (it is the step's client), else
				  NULL: the client names the task */
	TfgError *err;         /* why a call failed: the step's error, or
				  tfg_aot_run's */
	int held;              /* 1 + the variable whose lock the part
				  holds (TFG_VAR_HOLD_*), 0: none */
	int held_write;        /* that hold is a HOLD_WRITE */
};

#endif /* TFG_RUNTIME_PART_H */
