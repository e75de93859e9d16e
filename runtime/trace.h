/*
 * runtime/trace.h: what a process did, recorded for `--trace FILE`
 * (spec/design.md "Traces"): events with a category, a name, the step
 * they belong to, their bytes, and when they began and ended, kept in
 * memory until the controller collects them (RT_MSG_TRACE) and writes
 * one Chrome trace-event file for the whole cluster.
 *
 * Used by every layer (a utility, as status.c is): the rendezvous
 * records sends, receives and waits, the roles record steps and parts,
 * and generated parts compiled for tracing record each kernel through
 * tfg_rt_mark.
 */
#ifndef TFG_RUNTIME_TRACE_H
#define TFG_RUNTIME_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define RT_TRACE_MAX 1000000 /* events kept; later ones are counted */

/* Non-zero while this process records (rt_trace_start). */
extern int rt_tracing;

void rt_trace_start(void);
/* The clock of events: the wall clock in seconds, which other machines'
 * tasks share to within their clocks' agreement (the controller measures
 * and takes out each task's offset). */
double rt_trace_clock(void);
/* An event of category cat ("kernel", "send", "recv", "wait", "step",
 * "part") named name (copied), of step `step` (its counter; 0: none),
 * moving `bytes`, from t0 to t1 (rt_trace_clock).  No-op unless
 * rt_tracing. */
void rt_trace_event(const char *cat, const char *name, uint64_t step,
		    uint64_t bytes, double t0, double t1);
/* The events recorded so far as JSON trace events ("ph": "X"), each
 * followed by ",\n", with pid `pid` and their times shifted by -offset
 * seconds, in microseconds; malloc'd (*n bytes, NUL-terminated), or NULL
 * out of memory.  The events are forgotten. */
char *rt_trace_take(int pid, double offset, size_t *n);

#endif /* TFG_RUNTIME_TRACE_H */
