/* SPDX-License-Identifier: MIT */
/*
 * intel_pt_info - the private area of perf's AUXTRACE_INFO record for
 * Intel PT (type PD_AUXTRACE_INTEL_PT); format stage (decoder/format/).
 * One struct and the pack/unpack pair that map it to the u64 array at the
 * indices INTELPT_INFO_* of perf_abi.h: ptcapture and ptsynth write it
 * with these, the decoder reads it with these.
 */
#ifndef PTD_INTEL_PT_INFO_H
#define PTD_INTEL_PT_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "perf_abi.h"

/* The *_bit fields are masks of the intel_pt PMU's attr config bits. */
struct intel_pt_info {
	uint64_t pmu_type;
	uint64_t time_shift, time_mult, time_zero; /* TSC -> perf time */
	uint64_t cap_user_time_zero;               /* the above are valid */
	uint64_t tsc_bit, noretcomp_bit;
	uint64_t have_sched_switch;                /* INTELPT_SCHED_SWITCH_* */
	uint64_t snapshot_mode, per_cpu_mmaps;
	uint64_t mtc_bit, mtc_freq_bits;
	uint64_t tsc_ctc_ratio_n, tsc_ctc_ratio_d; /* CPUID 0x15 ebx, eax */
	uint64_t cyc_bit;
	uint64_t max_non_turbo_ratio;
	uint64_t filter_str_len;                   /* address filter string
						    * bytes after the array */
};

/* Fills priv[0..INTELPT_INFO_MAX) from info. */
void intel_pt_info_pack(const struct intel_pt_info *info,
			uint64_t priv[INTELPT_INFO_MAX]);

/* Fills info from the npriv little-endian u64s at priv (no alignment
 * needed); fields past npriv are 0.  Returns how many fields priv held,
 * at most INTELPT_INFO_MAX: older perfs wrote fewer. */
size_t intel_pt_info_unpack(const void *priv, size_t npriv,
			    struct intel_pt_info *info);

/* One IP filter of perf's intel_pt filter string (perf record --filter,
 * which perf writes after the array in the kernel's syntax: "ACTION
 * ADDR[/SIZE][@FILE]", several separated by ',' or blanks). */
#define INTELPT_MAX_FILTERS 4
struct intel_pt_filter {
	uint8_t cfg;                /* IA32_RTIT_CTL.ADDRn_CFG: 1 filter,
				     * 2 stop (stop, tracestop) */
	uint64_t addr, size;        /* in FILE: a file offset; without: an
				     * address */
	char file[256];             /* "" for an address */
};

/* The filters of the string after the array (npriv u64s at priv, as
 * intel_pt_info_unpack takes them) into f (at most INTELPT_MAX_FILTERS).
 * Returns how many (0: no string), or PTD_ERR_CORRUPT with a message in
 * err when the string does not fit the record or does not parse, or
 * PTD_ERR_UNSUPPORTED for an action Intel PT has no filter for ("start"). */
int intel_pt_info_filters(const void *priv, size_t npriv,
			  struct intel_pt_filter *f, char *err, size_t errlen);

#endif
