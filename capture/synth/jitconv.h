/* SPDX-License-Identifier: MIT */
/*
 * jitconv (stage: capture/synth/) - puts a JIT's jitdump on ptsynth's simulated clock.
 *
 * A JIT stamps its jitdump records with the real CLOCK_MONOTONIC, but the
 * trace ptsynth writes runs on a simulated perf clock (1 instruction = N
 * cycles).  While tracing, ptsynth notes (real now, simulated now) pairs at
 * every syscall stop; a record's timestamp was read by the JIT between two
 * of its syscalls, so interpolating between the pairs around it gives a
 * simulated time between those syscalls.  At the end every jitdump the
 * process mapped is copied with converted times (OUT.ptd/jit/).
 *
 * Then the copy is checked against what ran: every instruction executed in
 * dynamic (anonymous) code was noted with its bytes and the perf-time
 * window in which a decoder looks its code up (from the last TSC packet to
 * the instruction's own time).  The load the decoder would pick there must
 * hold exactly those bytes; if not, the mapping is too coarse (or the JIT
 * ran code it did not report) and jitconv_check says where.
 */
#ifndef PTSYNTH_JITCONV_H
#define PTSYNTH_JITCONV_H

#include <stddef.h>
#include <stdint.h>

struct jitconv;

/* NULL when out of memory. */
struct jitconv *jitconv_new(void);
void jitconv_free(struct jitconv *jc);

/* A (CLOCK_MONOTONIC ns, simulated perf ns) pair seen at one moment.
 * Pairs must come in time order; one that does not advance both clocks is
 * dropped.  Returns 0 or PTD_ERR_NOMEM. */
int jitconv_pair(struct jitconv *jc, uint64_t mono, uint64_t perf);

/* CLOCK_MONOTONIC ns -> simulated perf ns (linear between the pairs
 * around it; clamped, and counted as outside, beyond the first or last). */
uint64_t jitconv_mono_to_perf(struct jitconv *jc, uint64_t mono);

/* One executed instruction in dynamic code: its bytes (len <= 16) and the
 * window [t_lo, t_hi] of perf times at which a decoder may look it up.
 * Returns 0 or PTD_ERR_NOMEM. */
int jitconv_exec(struct jitconv *jc, int32_t pid, uint64_t ip,
		 const uint8_t *code, size_t len, uint64_t t_lo, uint64_t t_hi);

/* Writes a copy of the jitdump file `in` to `out` (mode 0600) with every
 * timestamp converted, and remembers its code loads.  A dump cut off
 * inside a record is copied up to the last whole record (the count of
 * such dumps is in the report).  Returns the number of code loads or a
 * negative enum ptd_error with a message in err. */
int jitconv_copy_dump(struct jitconv *jc, const char *in, const char *out,
		      char *err, size_t errlen);

/* Whether a load of a copied dump overlaps [start, start + len) of pid. */
int jitconv_covers(const struct jitconv *jc, int32_t pid, uint64_t start,
		   uint64_t len);

struct jitconv_report {
	size_t pairs;            /* clock pairs noted */
	size_t loads, moves;     /* JIT_CODE_LOAD / _MOVE records copied */
	size_t truncated;        /* dumps cut off inside a record */
	size_t outside;          /* timestamps beyond the first/last pair */
	uint64_t insns;          /* dynamic-code instructions executed */
	uint64_t insns_ok;       /* ... decoded from the right load */
	uint64_t insns_wrong;    /* ... a decoder would take from another
				  * load (or none): mapping too coarse */
	uint64_t insns_unreported; /* ... in no load at all (not checked
				  * further: such code is not in a jitdump) */
	uint64_t min_margin;     /* smallest gap (perf ns) between a load's
				  * time and the first lookup of its code */
	char problem[512];       /* the first wrong instruction, or "" */
};

/* Checks every noted instruction against the copied loads. */
void jitconv_check(struct jitconv *jc, struct jitconv_report *r);

#endif
