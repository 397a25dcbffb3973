/* SPDX-License-Identifier: MIT */
/*
 * intelpt (stage: backend/) - the Intel PT backend on libipt (the reference decode path).
 *
 * Decodes each queue with libipt's instruction flow decoder.  Code bytes are
 * read through the image store at the decoder's current time and in the
 * address space of the thread the sideband says was running, so code that
 * changed during the trace decodes as it was.
 */
#ifndef PTD_INTELPT_H
#define PTD_INTELPT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct imgstore;
struct machines;
struct sideband;

/* Instructions decoded without consuming any trace (only unconditional
 * direct branches) after which the flow is taken to be a never-ending loop:
 * the image does not match the trace.  Real code reaches a conditional or
 * indirect branch long before; the limit keeps corrupt input from looping
 * or buffering without bound. */
#define INTELPT_NELOOP_INSNS (1u << 20)

/* Everything libipt's pt_config and the time conversion need. */
struct intelpt_params {
	int have_cpu;               /* cpu fields valid */
	uint16_t family;
	uint8_t model, stepping;
	uint8_t mtc_freq;           /* log2 of the MTC period */
	uint8_t nom_freq;           /* max non-turbo ratio */
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx; /* TSC:CTC = ebx/eax */
	int have_time;              /* TSC -> perf time known */
	uint64_t time_shift, time_mult, time_zero;
	/* IP filters: IA32_RTIT_CTL.ADDRn_CFG and IA32_RTIT_ADDRn_A/B */
	uint8_t addr_cfg[4];
	uint64_t addr_a[4], addr_b[4];
	/* after an error, decode on from the next IP packet rather than the
	 * next PSB (intelpt_resync.h) */
	int resync_on_error;
	/* ... where perf's decoder does (perf.data inputs, whose oracle is
	 * perf script): past a packet that does not decode in place, after
	 * one that did not match, after code it could not read only at a
	 * full IP (intelpt_resync.h's RESYNC_*) */
	int resync_as_perf;
	/* code in VMX non-root operation (PIP.NR=1) is the guest's: its
	 * machines (NULL: none), and perf's --guest-code (the guest's code
	 * is the hypervisor process's memory) where no machine is known */
	const struct machines *machines;
	int guest_code;
};

/* The image store address space code runs in: host_pid's, or with nr
 * (VMX non-root) the guest's (timeline/machines.h). */
int32_t intelpt_space(const struct intelpt_params *p, int32_t host_pid,
		      int32_t host_tid, uint64_t t, int nr);

/* A piece of a queue's byte stream (one AUXTRACE payload) at `offset`. */
struct intelpt_piece {
	const uint8_t *data;
	size_t size;
	uint64_t offset;
};

/* One trace queue: the AUX bytes of one CPU (per-CPU mode) or one thread
 * (per-thread mode), size bytes in all.  Either contiguous (data), or in
 * pieces (file-backed, so pages can be dropped once decoded) with a way to
 * make them contiguous when a decoder needs that (libipt's). */
struct intelpt_queue {
	const uint8_t *data;        /* NULL: use pieces / assemble */
	size_t size;
	const struct intelpt_piece *pieces;
	size_t npieces;
	int file_backed;            /* data/pieces map a file: pages may be
				     * dropped (madvise) after use */
	/* Builds the contiguous stream (owned by the caller) on demand. */
	int (*assemble)(void *ctx, size_t queue, const uint8_t **data);
	void *assemble_ctx;
	size_t assemble_index;
	int32_t cpu;                /* -1 in per-thread mode */
	int32_t pid, tid;           /* per-thread mode: the thread */
	/* trace was lost after the queue (a snapshot gap): the text of the
	 * PTD_EV_GAP that ends its flow, whose ip is where the flow went on
	 * after the last instruction when the trace says so; NULL: none */
	const char *end_gap;
};

/* The queue's bytes, contiguous (assembling them if they come in pieces).
 * Returns 0 or a negative enum ptd_error. */
int intelpt_queue_data(const struct intelpt_queue *q, const uint8_t **data);

/* Parses perf's intel_pt AUXTRACE_INFO priv array and the intel_pt attr's
 * config into params.  cpuid is the HEADER_CPUID string
 * ("GenuineIntel,6,158,10") or NULL.  Returns 0 or PTD_ERR_CORRUPT. */
int intelpt_params_from_perf(struct intelpt_params *p, const uint64_t *priv,
			     size_t npriv, uint64_t attr_config,
			     const char *cpuid, char *err, size_t errlen);

/* Parses "F/M[/S]" (raw mode --cpu). */
int intelpt_params_cpu(struct intelpt_params *p, const char *spec);

/* Whether the linked libipt knows p's CPU (pt_cpu_errata: it has that
 * model's errata list); 1 also when no CPU is set.  A CPU it does not
 * know is decoded without errata work-arounds. */
int intelpt_cpu_known(const struct intelpt_params *p);

/* Whether a processor of p's family and model can have Intel PT at all:
 * family 6 from model 61 (Broadwell, the first with Intel PT) on, and the
 * families above 15.  "0/0" cannot. */
int intelpt_cpu_plausible(const struct intelpt_params *p);

/* The linked libipt's version (pt_library_version), e.g. "2.0.5". */
void intelpt_libipt_version(char *buf, size_t len);

/* Checks a queue's bytes before decoding: where its first PSB is (nothing
 * before it can be decoded), and whether it ends inside a packet (a cut
 * AUX buffer).  Returns 0 and fills the fields; first_psb == size when
 * there is no PSB at all. */
struct intelpt_queue_check {
	uint64_t first_psb;
	int tail_cut;             /* the last packet is incomplete */
	uint64_t tail_offset;     /* where that packet starts */
};
int intelpt_check_queue(const struct intelpt_params *p, const uint8_t *data,
			size_t size, struct intelpt_queue_check *qc);

/* Trace offset of the first PSB at or after at, of the last PSB at or
 * before at; size when there is none. */
uint64_t intelpt_psb_after(const uint8_t *data, size_t size, uint64_t at);
uint64_t intelpt_psb_before(const uint8_t *data, size_t size, uint64_t at);

/* Creates the backend.  queues is copied; their bytes, the store and the
 * sideband must outlive the backend.  sb may be NULL (raw mode). */
int intelpt_new(const struct intelpt_params *p,
		const struct intelpt_queue *queues, size_t nqueues,
		struct imgstore *st, const struct sideband *sb,
		struct backend **out, char *err, size_t errlen);

/* Shared with the fast decoder (fastpt/), so both paths describe events,
 * classes and times the same way. */
struct pt_event;
uint64_t intelpt_tsc_to_perf(const struct intelpt_params *p, uint64_t tsc);
/* The TSC of a perf-clock time as perf computes it (perf_time_to_tsc:
 * what its decoder compares with its queues' timestamps); 0 without a
 * clock. */
uint64_t intelpt_perf_to_tsc(const struct intelpt_params *p, uint64_t ns);
/* Fills ev from a libipt event; returns 0, or -1 for events that have no
 * flow event (timing, cbr, ...).  ev's context fields are left alone. */
int intelpt_convert_event(const struct intelpt_params *p,
			  const struct pt_event *pe, struct ptd_event *ev);
uint8_t intelpt_map_class(int pt_iclass);
uint8_t intelpt_map_mode(int pt_mode);
/* Whether libipt's SKL014 work-around applies: the CPU has that erratum
 * and IP filters are configured (a TIP.PGD with its IP suppressed may
 * then belong to a direct branch out of the filtered range). */
int intelpt_skl014(const struct intelpt_params *p);

/* Sets up a libipt config for a buffer (cpu, errata, timing ratios, IP
 * filters). */
struct pt_config;
void intelpt_config(const struct intelpt_params *p, struct pt_config *cfg,
		    const uint8_t *begin, const uint8_t *end);

#endif
