/* SPDX-License-Identifier: MIT */
/*
 * perfclock (stage: backend/) - the time perf's Intel PT decoder gives
 * each state of one queue, so that several queues merge in perf's order
 * (queuemerge.h).  The decoders' own times are libipt's: an instruction
 * is timed by the packets before the one its predecessor consumed, and
 * libipt reads some packets ahead (a PSB+ after a TNT).  perf
 * (tools/perf/util/intel-pt-decoder/intel-pt-decoder.c) times a state
 * by `sample_timestamp`, taken from its running timestamp only when the
 * decoder returns in sync (a branch that consumed its TNT bit or TIP, a
 * trace start, a CBR change), and keys a trace start (TIP.PGE) by its
 * estimated TSC (intel-pt.c: "use estimated TSC upon return to user
 * space").  The running timestamp follows perf's rules for TSC, TMA, MTC
 * (CTC:TSC ratio), CYC (cycles to TSC from CBR, or measured between two
 * MTCs, looking ahead within the AUXTRACE buffer as perf does) and CBR.
 * An OVF is an error state of perf's; it reads on to the FUP after it
 * and returns a trace begin there, which times the overflow event (an
 * OVF while tracing is off: the error state's time, the queue's key
 * unchanged, since intel-pt.c does not stop a queue at an error).
 *
 * This module reads the queue's packets a second time, in step with the
 * events a decoder hands out (which instruction consumes a TNT bit or a
 * TIP is known from the instruction's class and bytes), with no code and
 * no decoding of its own.  Where the packets do not match the events (a
 * packet it does not know, an error, a gap between AUXTRACE
 * buffers), it says so and the caller uses the decoder's times from then
 * on.  Memory: a few words per queue.
 */
#ifndef PTD_PERFCLOCK_H
#define PTD_PERFCLOCK_H

#include <stdint.h>

#include "intelpt.h"
#include "ptdecode.h"

struct perfclock;

struct sideband;

/* A clock over queue q (its pieces, or its contiguous data), recorded
 * with p's MTC period, CTC:TSC ratio and max non-turbo ratio; sb (or
 * NULL) says which thread runs on q's CPU when.  Returns 0 or
 * PTD_ERR_NOMEM. */
int perfclock_new(const struct intelpt_params *p, const struct intelpt_queue *q,
		  const struct sideband *sb, struct perfclock **out);

/* perf's first key for the queue: the timestamp after its first PSB+.
 * Returns 0 and sets *t, or -1 (no such PSB+: use the first event's). */
int perfclock_first(struct perfclock *c, uint64_t *t);

/* An event's place in perf's order. */
struct perfclock_at {
	int state;         /* not ev yet: a state of perf's before it (a
			    * PSB+, a CBR change), keyed by key, where the
			    * queue may stop; ask again for ev */
	uint64_t t;        /* the TSC perf script prints the event at */
	uint64_t key;      /* the queue's key for it */
	int assign;        /* perf sets the queue's key to key (the estimated
			    * TSC of a trace start) rather than raising it */
	int have_task;     /* the thread perf gives the event (the sideband's
			    * at the queue's key), when known */
	int32_t pid, tid;
};

/* perf's time for ev, the queue's next event (or for a state before it;
 * ev->kind 0: the states after the last event).
 * Returns 0; 1 for ev->kind 0 when perf has no more states; or -1 once
 * the packets and events have parted (then and from then on: use
 * ev->tsc, the fallback).  Like perf's decoder the clock starts at the
 * queue's first PSB.  It parts from the events when the trace holds no
 * PSB or its first PSB+ no PSBEND, at a packet it does not follow (OVF,
 * TraceStop, and those whose flow it does not model: PTWRITE, power
 * events, block items, ...), where an AUXTRACE buffer does not
 * continue the one before or ends inside a packet, at a decode error
 * (but for a bad packet the decoder resumed past in place, or while
 * tracing was off at the TIP.PGE after it, which perf's decoder steps
 * over as this clock does) or overflow event, at a gap event with flow packets after it (not at a
 * queue's end), and where the decoder's events need a packet the trace
 * does not hold next (a decoder that resynchronized elsewhere than
 * perf). */
int perfclock_time(struct perfclock *c, const struct ptd_event *ev,
		   struct perfclock_at *at);

/* Why the clock parted from the events ("" if it did not): *byte the
 * queue's trace byte where, *cpu the queue's CPU (-1 none). */
const char *perfclock_lost(const struct perfclock *c, uint64_t *byte,
			   int32_t *cpu);

/* Clock c's queue goes on from prev's in perf's one queue (a snapshot
 * gap split them, auxsnap.h): perf's decoder keeps its CBR, CYC and MTC
 * state past the gap and resets its timestamp, and so does c.  Call
 * before c's first use, once prev's queue has ended; nothing if prev
 * parted from its events. */
void perfclock_continue(struct perfclock *c, const struct perfclock *prev);

/* A TSC value in perf-clock nanoseconds. */
uint64_t perfclock_ns(const struct perfclock *c, uint64_t tsc);

void perfclock_free(struct perfclock *c);

#endif
