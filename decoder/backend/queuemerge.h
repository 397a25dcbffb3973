/* SPDX-License-Identifier: MIT */
/*
 * queuemerge (stage: backend/) - one timeline from several trace queues:
 * a backend over one backend per queue (a CPU's trace each) that hands
 * out their events merged in time order, as perf script prints a
 * system-wide trace.
 *
 * The rule is perf's (tools/perf/util/intel-pt.c with auxtrace.c's heap):
 * each queue is keyed by the timestamp (TSC) of its next event, never
 * going back; the queue being decoded goes on while its next key is at
 * most the smallest key of the others, then goes back into a binary heap
 * that breaks ties as perf's does (an entry equal to its parent stays
 * below it; a pop moves the smaller child up, the right one when they
 * are equal).  Events without a time take the queue's last key.  perf
 * also decodes its queues only up to each sideband record's time before
 * handling that record, so a queue stops (and goes back into the heap)
 * at a record's TSC too: with the records' TSCs given, equal keys come
 * out as in perf.  Look-ahead is one event per queue, so memory does not
 * grow with the trace.
 *
 * For views of branches: where a branch went is its queue's next
 * instruction (or the event that ends or interrupts the flow), which may
 * carry a later time (a timing packet between them).  perf orders a
 * branch sample by the branch's own time; with branch order on, the
 * events after a branch instruction follow it at once, up to the one
 * that says where it went, so a view pairing them finds them together;
 * when that one comes before its turn and is a branch itself, the queue
 * then waits for its turn (the view keeps a pending branch per queue).
 * The first instruction after an overflow that says where the trace
 * resumes waits for its turn too: perf's trace begin is there.
 */
#ifndef PTD_QUEUEMERGE_H
#define PTD_QUEUEMERGE_H

#include <stddef.h>

#include "backend.h"

struct perfclock;

/* A backend merging be[0..n) (queue i's events come from be[i], and get
 * queue = i), in branch order (above) when branch_order, stopping at the
 * TSCs of the sideband records stops[0..nstops) (any order; copied).
 * clocks (NULL, or n entries, each NULL or perfclock.h's clock of queue
 * i) key events by perf's times instead of the events' own.  It owns the
 * backends and clocks from here on, also on failure.  Returns 0 or
 * PTD_ERR_NOMEM. */
int queuemerge_new(struct backend **be, struct perfclock **clocks, size_t n,
		   int branch_order, const uint64_t *stops, size_t nstops,
		   struct backend **out);

/* perf's rule for CoreSight (tools/perf/util/cs-etm.c, 6.1): an event's
 * tsc is the key of its block (0: the block goes on), which may be
 * smaller than the block's before; at each new block the queue goes back
 * into the heap and the smallest key runs next (so a queue waiting with an
 * equal key goes first).  Call before the first event. */
void queuemerge_set_blocks(struct backend *qm);

/* Queues that perf decodes as one: queue i (i > 0) goes on from queue
 * i - 1 (the same CPU's queue split at a snapshot gap, auxsnap.h).  Such a queue is not in the heap at first: when the one
 * before it ends, the run goes on into it with that one's key (raised to
 * its first PSB+'s time), as perf's decoder reads on into the next
 * AUXTRACE buffer of its queue; so the heap holds one entry per perf
 * queue and breaks ties as perf's.  Call before the first event. */
void queuemerge_set_continues(struct backend *qm, size_t i);

/* Where a clock fallback is reported: warn(ctx, text) once per queue
 * whose perf clock (clocks above) parts from its events before its last
 * event; from there that queue's events are keyed by their own tsc
 * (the decoder's times), which may order them otherwise than perf.  The
 * backend's stats count those queues and events either way
 * (clock_fallback_queues, clock_fallback_events). */
void queuemerge_set_warn(struct backend *qm, int (*warn)(void *ctx, const char *msg),
			 void *ctx);

#endif
