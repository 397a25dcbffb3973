/* SPDX-License-Identifier: MIT */
/*
 * ptgen (stage: capture/synth/) - turns an executed instruction sequence into the Intel PT packets
 * that user-only tracing hardware would emit (libipt's encoder does the
 * byte encoding).  Output is cut into pieces in front of each PSB, because
 * perf does not join packets split across AUXTRACE records.
 */
#ifndef PTSYNTH_PTGEN_H
#define PTSYNTH_PTGEN_H

#include <stddef.h>
#include <stdint.h>

/* What an instruction does to control flow, from its bytes. */
enum ptgen_class {
	PTG_OTHER = 0,     /* falls through */
	PTG_COND,          /* jcc, jcxz/jecxz/jrcxz, loop/loopcc: one TNT bit */
	PTG_JMP_DIRECT,    /* no packet */
	PTG_CALL_DIRECT,   /* no packet; pushes the return address (unless
			    * it is `call next`, displacement 0) */
	PTG_JMP_INDIRECT,  /* TIP */
	PTG_CALL_INDIRECT, /* TIP; pushes the return address */
	PTG_RET,           /* TNT when compressed, else TIP */
	PTG_FAR,           /* syscall/sysenter/int/far branches: leave user
			    * space -> TIP.PGD with IP suppressed */
};

struct ptgen_insn {
	enum ptgen_class cls;
	uint8_t len;
	uint8_t rep_string;   /* rep-prefixed string op (traps per iteration) */
	uint8_t trap_late;    /* a hypervisor may deliver its single-step trap
			       * one instruction late (cpuid exits to it) */
	uint8_t len_unknown;  /* capstone could not decode it: len is a bound */
	uint64_t target;      /* direct branches */
};

/* Classifies the instruction at ip from its bytes (code, avail bytes) with
 * a capstone handle opened for x86-64 with detail on.  Returns 0, or -1
 * when capstone cannot decode it. */
#include <capstone/capstone.h>
int ptgen_classify(csh cs, uint64_t ip, const uint8_t *code, size_t avail,
		   struct ptgen_insn *out);

struct ptgen_opts {
	uint32_t psb_period;   /* bytes between PSBs */
	int retcomp;           /* return compression on */
	int long_tnt;          /* use long TNT packets (<= 47 bits) */
	int tsc;               /* emit TSC packets */
	uint32_t cycles_per_insn;
	uint64_t tsc0;         /* initial TSC */
	uint8_t cbr;           /* core:bus ratio for CBR packets */
	/* MTC: the crystal clock runs at CTC = TSC * ctc_d / ctc_n (CPUID
	 * 0x15, AUXTRACE_INFO tsc_ctc_ratio_n/d); an MTC carries CTC bits
	 * [mtc_freq+7 : mtc_freq] each time CTC bit mtc_freq toggles, and a
	 * TMA follows every TSC to join the two clocks.  Needs tsc. */
	int mtc;
	uint8_t mtc_freq;      /* 0..15, perf's mtc_period */
	uint32_t ctc_n, ctc_d; /* 0: 2 and 1 */
	/* CYC (cycle-accurate mode, threshold 0): a CYC with the core cycles
	 * since the previous CYC goes in front of each CYC-eligible packet
	 * outside PSB+.  One core cycle is one TSC tick (CBR = nominal). */
	int cyc;
	/* The traced code runs in a virtual machine (VMX non-root): every
	 * PSB+ carries PIP with NR=1 and the VMCS packet, as hardware emits
	 * them in non-root operation. */
	int guest;
};

/* The guest's CR3 and VMCS pointer that PIP and VMCS packets name. */
#define PTGEN_GUEST_CR3 0x1f4e000ull
#define PTGEN_GUEST_VMCS 0x7d3a1000ull

/* Receives each finished piece: starts with a PSB (except possibly the
 * very first), tsc_first = TSC at the start of the piece. */
typedef int (*ptgen_flush_fn)(void *ctx, const uint8_t *data, size_t len,
			      uint64_t tsc_first, uint64_t tsc_last);

struct ptgen;

int ptgen_new(struct ptgen **out, const struct ptgen_opts *o,
	      ptgen_flush_fn fn, void *ctx);
void ptgen_free(struct ptgen *g);

/* Current simulated TSC. */
uint64_t ptgen_tsc(const struct ptgen *g);
/* TSC of the last TSC packet emitted (0: none yet): the time a decoder
 * knows at this point of the trace. */
uint64_t ptgen_last_tsc(const struct ptgen *g);
/* Advances the clock (e.g. time spent in the kernel). */
void ptgen_advance(struct ptgen *g, uint64_t cycles);
int ptgen_enabled(const struct ptgen *g);

/* Tracing starts (or resumes after a disable) at ip. */
int ptgen_enable(struct ptgen *g, uint64_t ip);
/* One executed instruction at ip whose architectural successor is next. */
int ptgen_insn(struct ptgen *g, uint64_t ip, const struct ptgen_insn *in,
	       uint64_t next);
/* An internal buffer overflow right after an instruction whose target
 * the packets gave (a TNT bit, TIP or TIP.PGE), so that no instruction
 * goes unseen: lost cycles pass with their packets dropped, then OVF, TSC
 * (and TMA) and FUP(next), next being that target; at_psb: OVF, then a
 * PSB+ whose FUP is next (the overflow resolved when a PSB was due).
 * The return stack starts over.  While tracing is off: the OVF alone (the
 * TIP.PGE of ptgen_enable follows).  PTD_ERR_INVAL after any other
 * instruction (ptgen_can_overflow says). */
int ptgen_overflow(struct ptgen *g, uint64_t next, uint64_t lost, int at_psb);
int ptgen_can_overflow(const struct ptgen *g);
/* Emits a PSB+ now (e.g. in front of a new stretch of trace, so that a
 * decoder that lost sync before it finds it again right there). */
int ptgen_sync(struct ptgen *g, uint64_t ip);
/* The branch at ip leaves the traced address range (IP filtering): it
 * executes and goes to target, outside the range -> TIP.PGD(target).
 * Tracing resumes with ptgen_enable where the flow re-enters the range. */
int ptgen_leave(struct ptgen *g, uint64_t ip, const struct ptgen_insn *in,
		uint64_t target);
/* Asynchronous disable (interrupt, preemption, signal): next = the ip of
 * the instruction that would have run next. */
int ptgen_async_disable(struct ptgen *g, uint64_t next);
/* A VM entry into guest code that is traced (after a VM exit that
 * stopped tracing, ptgen_async_disable): PIP (NR=1) and VMCS, then tracing
 * resumes at ip as with ptgen_enable. */
int ptgen_vm_entry(struct ptgen *g, uint64_t ip);
/* Hands the bytes written so far to the flush callback now, in the middle
 * of a piece (a snapshot of the AUX ring): the next piece goes on where
 * this one ends, not at a PSB.  TNT bits not yet in a packet stay. */
int ptgen_flush(struct ptgen *g);
/* Flushes everything (final piece). */
int ptgen_finish(struct ptgen *g);

/* Counters for the info file. */
struct ptgen_stats {
	uint64_t bytes, psbs, tnt_bits, tips, fups, pges, pgds, rets_compressed;
	uint64_t tscs, mtcs, cycs, ovfs;
	uint64_t ovf_psbs;     /* overflows that resolved at a PSB+ */
};
void ptgen_get_stats(const struct ptgen *g, struct ptgen_stats *s);

#endif
