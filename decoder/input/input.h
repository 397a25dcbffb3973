/* SPDX-License-Identifier: MIT */
/*
 * input - a loaded input (input stage): what one loader per input kind
 * (detect, perf, capdir, raw; buildid and jitdumps help them) turns a
 * file or directory into.  That is the trace's AUX queues, the sideband
 * timeline, the image store, the names and code of dynamic text, and the
 * parameters of the PMU that recorded the trace.
 *
 * The backend is created from a loaded input (api/backend_choice.c) and
 * symbolization reads it (api/symbols.c).  Loaders return 0 or a negative
 * PTD_ERR_* with the message in the caller's buffer; they report warnings
 * and counts through the input's sink, so they know nothing of the
 * session.
 */
#ifndef PTD_INPUT_H
#define PTD_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "buildid.h"
#include "intel_pt_info.h"
#include "intelpt.h"
#include "ptdecode.h"
#include "util.h"

struct dyntext;
struct imgstore;
struct kcoredir;
struct machines;
struct perfdata;
struct sideband;
struct symtab;
struct textstore;

/* Kernel addresses are the upper half of the address space. */
static inline int input_is_kernel_addr(uint64_t a)
{
	return a >= 0xffff800000000000ull;
}

/* Where loading reports.  warn gets each warning's text and returns 0 or
 * PTD_ERR_NOMEM; stats gets the counts loading finds (trace bytes,
 * queues, sideband records, losses). */
struct input_sink {
	int (*warn)(void *ctx, const char *msg);
	void *ctx;
	struct ptd_stats *stats;
};

/* One AUXTRACE record's payload. */
struct input_chunk {
	uint32_t idx;
	int32_t cpu, tid;
	uint64_t offset;        /* position in the queue's stream */
	uint64_t file_offset, size;
	size_t seq;
	uint32_t file;          /* the file_maps entry holding it (perf.data
				 * directories; else 0, unused) */
};

/* One AUX queue: a CPU's (per-CPU mode) or a thread's trace. */
struct input_queue {
	uint32_t idx;
	int32_t cpu, tid;
	struct intelpt_piece *pieces;  /* the AUXTRACE payloads, in order,
					* pointing into the file mapping */
	size_t npieces;
	uint8_t *owned;         /* the pieces made contiguous, on demand */
	const uint8_t *data;    /* contiguous bytes when known */
	size_t size;
	/* snapshot mode (auxsnap): the trace lost after this queue, before
	 * the next one of its CPU, as the text of the gap event that ends
	 * its flow; "" when none */
	char gap_after[200];
	int cont;               /* snapshot mode: the queue before this one
				 * with the trace after its gap_after (one
				 * AUX queue of perf's) */
};

/* A CoreSight trace ID announced for a CPU (AUX_OUTPUT_HW_ID). */
struct input_hw_id {
	int32_t cpu;
	uint8_t trace_id;
};

struct input {
	enum ptd_input_kind kind;       /* what was loaded */
	const struct ptd_open_opts *opts;  /* the caller's; outlive the input */
	struct input_sink sink;
	char *path;                     /* the file or directory given */
	char *perf_path;                /* the perf.data read, or NULL */
	char *dir;                      /* the capture directory, or NULL */

	/* the trace */
	struct perfdata *pd;
	struct util_map file_map;       /* the file the queues point into */
	/* a perf.data directory's files (input/perfdir.c): the queues point
	 * into these instead; cur_file is the one being read */
	struct util_map *file_maps;
	size_t nfile_maps, fmcap;
	uint32_t cur_file;
	struct input_chunk *chunks;     /* AUXTRACE records, file order */
	size_t nchunks, ccap;
	struct input_queue *queues;
	size_t nqueues;
	uint32_t aux_type;              /* AUXTRACE_INFO: PD_AUXTRACE_* */
	uint64_t *aux_priv;             /* its PMU-specific words */
	size_t aux_npriv;
	int have_aux_info;
	struct input_hw_id *hw_ids;
	size_t nhw_ids, hwcap;
	/* perf-clock times of the kernel's records (types below 64) in
	 * file order: perf's decoder decodes its queues up to each before
	 * handling it, which the timeline merge follows at equal times */
	uint64_t *record_times;
	size_t nrecord_times, rtcap;
	int cs_raw_format;              /* AUX records said TRBE (unformatted) */
	/* intel_pt IP filters (perf record --filter), each placed at the
	 * first executable mapping of its file that the sideband shows */
	struct input_pt_filter {
		struct intel_pt_filter f;
		int placed;             /* a, b valid */
		uint64_t a, b;          /* IA32_RTIT_ADDRn_A/B */
		uint64_t elsewhere;     /* other mappings at other addresses */
	} pt_filters[INTELPT_MAX_FILTERS];
	size_t npt_filters;

	/* code, who ran where, and names */
	struct imgstore *st;
	struct sideband *sb;
	struct machines *machines;      /* guest machines (input/guest.c) */
	struct input_guest {            /* guest sideband that could not be used */
		uint64_t no_machine;    /* records naming no known machine */
		uint64_t not_applied;   /* guest KSYMBOL, TEXT_POKE, ... */
		int id_index_plain;     /* an ID_INDEX without machine fields */
	} guest;
	struct textstore *ts;           /* a capture's text store, or NULL */
	struct dyntext *dt;             /* BPF / JIT names, lines, jitdump code */
	struct symtab *sbsyms;          /* names the sideband and captures give */
	struct symtab *ksyms;           /* --kallsyms, or NULL */
	struct kcoredir *kcore;         /* perf record --kcore's copy, or NULL */
	char **jitdumps;                /* jit-PID.dump files to load */
	size_t njitdumps, jcap;
	struct buildid_cache bids;
	const char **bid_dirs;          /* the search path, then the capture
					 * directory (buildid_use_capture_dir) */
};

/* Creates an empty input that reads opts (kept by pointer) and reports to
 * sink.  Returns 0 or PTD_ERR_NOMEM (*out may then be partly built: free
 * it with input_free). */
int input_new(struct input **out, const struct ptd_open_opts *opts,
	      const struct input_sink *sink);
void input_free(struct input *in);

/* Loads path as kind (PTD_INPUT_AUTO: detected), with the kernel image and
 * symbols the options name.  Returns 0 or a negative PTD_ERR_* with a
 * message in err.  An OpenCSD snapshot is only recognised here: the
 * CoreSight backend reads it (api/backend_choice.c). */
int input_load(struct input *in, const char *path, enum ptd_input_kind kind,
	       char *err, size_t errlen);

/* Reports a warning through the sink.  Returns 0 or PTD_ERR_NOMEM. */
int input_warn(struct input *in, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
