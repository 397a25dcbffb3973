/* SPDX-License-Identifier: MIT */
/*
 * sampler (stage: capture/synth/) - ptsynth record --sample-every N: a
 * SAMPLE every N instructions, as a kernel taking an interrupt would write
 * it with deferred user callchains (defer_callchain): simulated kernel
 * frames, then PERF_CONTEXT_USER_DEFERRED and the thread's cookie.  At
 * the thread's next return to user space (after its next syscall) one
 * PERF_RECORD_CALLCHAIN_DEFERRED with that cookie carries the user stack
 * unwound from the live process's memory (by frame pointers, as the
 * kernel does, or with --unwind dwarf by libdw's CFI unwinder), so the
 * samples taken in between share it; a thread that exits first never
 * gets one.
 *
 * Ground truth beside it (OUT.ptd): samples.truth, one line per sample
 * "sample TIME TID COOKIE INSNS: ADDRS" (INSNS: the instructions executed
 * before it, the lines of expected.insn, so the thread's next line is
 * where it was interrupted; the call stack known from single-stepping:
 * the interrupted instruction, then the return addresses innermost
 * first), and per deferred record "deferred TIME TID COOKIE:
 * unwound ADDRS | true ADDRS" (what the record holds, and the true stack
 * at that moment).
 */
#ifndef PTSYNTH_SAMPLER_H
#define PTSYNTH_SAMPLER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "perfwrite.h"
#include "ptgen.h"

struct sampler;

enum sampler_unwind { SAMPLER_UNWIND_FP, SAMPLER_UNWIND_DWARF };

/* 1 when this ptsynth was built with libdw (SAMPLER_UNWIND_DWARF). */
int sampler_have_dwarf(void);

/* every: instructions between samples; pid and memfd: the tracee and its
 * /proc/PID/mem; truth: where the ground truth goes. */
struct sampler *sampler_new(struct perfwrite *pw, uint64_t every,
			    enum sampler_unwind how, pid_t pid, int memfd, FILE *truth);
/* Counts (samples, deferred records, samples left without one) into the
 * info file; frees. */
void sampler_free(struct sampler *sm, FILE *info);

/* Thread tid executed the instruction at ip of class in, going to next
 * (0: unknown).  Returns 1 when a sample is due. */
int sampler_insn(struct sampler *sm, pid_t tid, uint64_t ip,
		 const struct ptgen_insn *in, uint64_t next);

/* The sample of thread sid->tid, interrupted in front of ip. */
int sampler_sample(struct sampler *sm, const struct perfwrite_sid *sid, uint64_t ip);

/* Thread sid->tid returns to user space (its syscall is done). */
int sampler_to_user(struct sampler *sm, const struct perfwrite_sid *sid);

#endif
