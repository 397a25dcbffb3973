/* SPDX-License-Identifier: MIT */
/*
 * cpus (stage: capture/synth/) - the simulated CPUs of ptsynth record
 * --cpus N.  Each CPU has its own packet generator (its own clock and AUX
 * queue, as perf record -a writes one per CPU) and runs one thread at a
 * time.  The next instruction is always stepped on the CPU whose clock is
 * earliest, so the CPUs' executions interleave in time as on real
 * hardware while ptrace still runs one thread at a time.
 */
#ifndef PTSYNTH_CPUS_H
#define PTSYNTH_CPUS_H

#include <stdint.h>

#include "ptgen.h"

#define SYNTH_MAX_CPUS 64
/* Snapshots a CPU lagging behind the others waits for; past that many,
 * later ones skip it (as a ring with no new trace). */
#define SYNTH_SNAP_DUE 32

struct snapring;

struct synth_cpu {
	struct ptgen *gen;
	uint64_t aux_offset;     /* AUX bytes written for this CPU */
	struct snapring *snap;   /* --snapshot: this CPU's AUX ring (its owner's) */
	uint64_t snap_tsc;       /* TSC at the end of its trace so far */
	uint64_t snap_due[SYNTH_SNAP_DUE];  /* snapshots its clock has not reached */
	int snap_ndue;
	int idx;                 /* its number (perf's cpu and AUX index) */
	int cur;                 /* thread on it (the recorder's index), -1 none yet */
	uint64_t slice;          /* instructions since cur was switched in */
	void *owner;             /* for the flush callback */
};

struct synth_cpus {
	struct synth_cpu c[SYNTH_MAX_CPUS];
	int n;
};

/* n CPUs (1..SYNTH_MAX_CPUS), each with a generator made from go that
 * flushes to fn with the CPU (struct synth_cpu *) as ctx.  Returns 0, or
 * -1 (out of memory, bad n). */
int synth_cpus_open(struct synth_cpus *cs, int n, const struct ptgen_opts *go,
		    ptgen_flush_fn fn, void *owner);
/* Finishes every generator (flushing its last piece): 0 or the first
 * error. */
int synth_cpus_finish(struct synth_cpus *cs);
/* The generators' counters added up. */
void synth_cpus_stats(const struct synth_cpus *cs, struct ptgen_stats *st);
void synth_cpus_free(struct synth_cpus *cs);

/* Which CPU steps next: the earliest clock among those can_run accepts
 * (ties: the lowest number); -1 when none can run. */
int synth_cpus_next(const struct synth_cpus *cs, int (*can_run)(void *ctx, int cpu),
		    void *ctx);
/* Advances c's clock to tsc if it is behind (idle time, or a thread that
 * ran elsewhere or waited until then: a thread's time never goes back). */
void synth_cpus_catch_up(struct synth_cpu *c, uint64_t tsc);

#endif
