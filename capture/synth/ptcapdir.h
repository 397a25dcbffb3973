/* SPDX-License-Identifier: MIT */
/*
 * ptcapdir (stage: capture/synth/) - the perf.data side of a synthetic Intel PT capture, shared by
 * ptsynth record, ptsynth walk and the benchmark generator: the intel_pt
 * and sideband attrs, AUXTRACE_INFO and TIME_CONV as perf writes them, the
 * AUXTRACE + AUX pair of each trace piece, and the header features.
 *
 * The simulated clock: perf ns = time_zero + tsc * mult >> shift.
 */
#ifndef PTSYNTH_PTCAPDIR_H
#define PTSYNTH_PTCAPDIR_H

#include <stddef.h>
#include <stdint.h>

#include "perfwrite.h"

#define PTCAP_PMU_TYPE 8            /* the intel_pt PMU type number claimed */
#define PTCAP_PT_ID 1000            /* sample id of the intel_pt attr */
#define PTCAP_DUMMY_ID 1001         /* sample id of the sideband attr */
#define PTCAP_GUEST_ID 1002         /* sample id of a guest's sideband attr
				     * (vcpu 0; vcpu c's is PTCAP_GUEST_ID + c,
				     * as no sampling attr goes with it) */
#define PTCAP_SAMPLE_ID 1003        /* sample id of the sampling attr */
#define PTCAP_CPUID "GenuineIntel,6,158,10"   /* no errata perf applies */
#define PTCAP_TIME_SHIFT 10
#define PTCAP_TIME_MULT 1000
#define PTCAP_TIME_ZERO 1000000000ull

struct ptcap_opts {
	int kernel;       /* trace kernel code (intel_pt//k) instead of user */
	int tsc;          /* TSC packets on */
	int retcomp;      /* return compression on */
	int mtc, mtc_period, cyc;   /* MTC (with its period) and CYC on */
	/* The clock; all zero: the PTCAP_TIME_* defaults.  (ptsynth walk
	 * uses TSC = perf ns: shift 0, mult 1, zero 0; set clock_set.) */
	int clock_set;
	uint64_t time_shift, time_mult, time_zero;
	uint64_t sideband_flags;    /* extra PD_ATTR_FLAG_* bits of the
				     * sideband attr (KSYMBOL, ...) */
	int have_sched_switch;      /* AUXTRACE_INFO: INTELPT_SCHED_SWITCH_* */
	const char *filter;         /* AUXTRACE_INFO: perf's IP filter string
				     * (the kernel's syntax), or NULL */
	int guest;                  /* > 0: a third attr: a guest's sideband
				     * (exclude_host), one id per vcpu (this
				     * many) from PTCAP_GUEST_ID, as perf
				     * inject --guest-data adds it */
	uint64_t sample_period;     /* > 0: one more attr, instructions sampled
				     * every N with callchains whose user part
				     * is deferred (defer_callchain; the
				     * sideband attr has defer_output) */
	int snapshot;               /* AUXTRACE_INFO: snapshot mode (perf
				     * record -S) */
};

/* The default clock, for ptsynth record and benchgen. */
#define PTCAP_DEFAULTS .time_shift = PTCAP_TIME_SHIFT, .time_mult = PTCAP_TIME_MULT, \
	.time_zero = PTCAP_TIME_ZERO, .clock_set = 1, \
	.have_sched_switch = INTELPT_SCHED_SWITCH_CPU_WIDE

/* perf-clock ns of a simulated TSC value on the default clock. */
uint64_t ptcap_perf_time(uint64_t tsc);

/* Creates the directory path (replacing a perf.data file, or the data
 * files of a perf.data directory, there) and opens *pw on path/data,
 * split by CPU into path/data.N as perf record --threads writes it
 * (perfwrite_split_by_cpu).  Returns 0 or a negative enum ptd_error with a
 * message in err. */
int ptcap_open_threads_layout(struct perfwrite **pw, const char *path,
			      char *err, size_t errlen);

/* The attrs (intel_pt, dummy sideband), AUXTRACE_INFO and TIME_CONV. */
int ptcap_begin(struct perfwrite *pw, const struct ptcap_opts *o);

/* One trace piece: the AUXTRACE record with its bytes and the AUX record
 * that announced them (at the piece's last TSC).  *aux_offset advances. */
int ptcap_piece(struct perfwrite *pw, const void *data, size_t len,
		uint64_t tsc_first, uint64_t tsc_last, uint32_t pid,
		uint64_t *aux_offset);

/* Header features (hostname, os release, cpuid, nrcpus, cmdline, ...). */
int ptcap_features(struct perfwrite *pw, const char *osrelease,
		   int argc, char **argv);

#endif
