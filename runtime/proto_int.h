/*
 * runtime/proto_int.h: what the protocol layer's own files (proto.c,
 * rendezvous.c) share; the roles see only runtime/proto.h.  Functions
 * named *_locked expect RtProc.mu held.
 */
#ifndef TFG_RUNTIME_PROTO_INT_H
#define TFG_RUNTIME_PROTO_INT_H

#include "runtime/proto.h"

/* proto.c */
int rt_box_push(RtBox *b, const RtMsg *m);   /* 0, -1: no memory */
int rt_queue_push_locked(RtProc *p, const RtMsg *m); /* wakes a waiter */
int rt_epoch_check_locked(RtProc *p, const RtHdr *h);

/* rendezvous.c */
void rt_box_free(RtBox *b); /* its messages and itself */
void rt_dispatch_locked(RtProc *p, RtMsg *m);
int rt_step_accept_locked(RtProc *p, RtStep *c, const RtMsg *m, int sig);
/* Drops what came for steps of client t, but those with tag `keep`
 * (-1: all): the early box's entries and the inboxes of its steps
 * running here. */
void rt_tab_forget_locked(RtProc *p, int t, long keep);
/* Cancels the steps of client t running here (t restarted). */
void rt_steps_orphan_locked(RtProc *p, int t);

#endif /* TFG_RUNTIME_PROTO_INT_H */
