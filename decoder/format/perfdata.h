/* SPDX-License-Identifier: MIT */
/*
 * perfdata - reads perf.data files (file mode and pipe mode); format stage
 * (decoder/format/).  The values it reads are perf_abi.h's.
 *
 * The layout follows Linux tools/perf (util/header.c, util/session.c):
 * a PERFILE2 header, an attr section with ids, a data section of records,
 * and feature sections after the data.  Pipe mode has a 16-byte header and
 * carries attrs and features as HEADER_ATTR / HEADER_FEATURE records.
 *
 * The file is read through mmap windows of bounded size, so files larger
 * than memory work.  Records are returned one at a time; pointers into a
 * record stay valid until the next perfdata_next() call (AUXTRACE payloads:
 * see perfdata_aux_map()).
 */
#ifndef PTD_PERFDATA_H
#define PTD_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#include "perf_abi.h"

/* The parts of perf_event_attr the decoder needs, plus the attr's ids. */
struct perfdata_attr {
	uint32_t type;
	uint32_t size;
	uint64_t config;
	uint64_t sample_period;  /* or frequency, with PD_ATTR_FLAG_FREQ */
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags;          /* PD_ATTR_FLAG_* */
	int sample_id_all;
	int use_clockid;
	int32_t clockid;
	uint64_t config1, config2;
	uint64_t branch_sample_type;
	char *name;              /* HEADER_EVENT_DESC's ("cpu-clock"), or NULL */
	uint64_t *ids;
	size_t nids;
};

struct perfdata_build_id {
	int32_t pid;
	uint16_t misc;
	uint8_t size;            /* bytes of id used (20 for SHA-1) */
	uint8_t id[20];
	char *filename;
};

/* One AUXTRACE index entry (HEADER_AUXTRACE feature). */
struct perfdata_aux_index {
	uint64_t file_offset;    /* offset of the AUXTRACE record */
	uint64_t size;
};

/* Time conversion (TIME_CONV record or clock data). */
struct perfdata_time_conv {
	int valid;
	uint64_t time_shift, time_mult, time_zero;
	uint64_t time_cycles, time_mask;
	int cap_user_time_zero, cap_user_time_short;
};

struct perfdata_info {
	int pipe_mode;
	uint64_t file_size;
	uint64_t data_offset, data_size;
	struct perfdata_attr *attrs;
	size_t nattrs;
	uint64_t features[PD_FEAT_MAX / 64];  /* bitmap of PD_FEAT_* */

	struct perfdata_build_id *build_ids;
	size_t nbuild_ids;
	char *hostname, *osrelease, *perf_version, *arch, *cpudesc, *cpuid;
	char **cmdline;
	size_t ncmdline;
	uint32_t nr_cpus_avail, nr_cpus_online;
	uint64_t clockid_res_ns; /* HEADER_CLOCKID */
	uint64_t dir_format;     /* HEADER_DIR_FORMAT version (perf record
				  * --threads: 1), 0 when absent */
	struct perfdata_aux_index *aux_index;
	size_t naux_index;
	struct perfdata_time_conv time_conv;
	/* HEADER_CLOCK_DATA */
	int clock_data_valid;
	uint32_t clock_data_clockid;
	uint64_t clock_data_wall_ns, clock_data_clockid_ns;
};

/* Sample id trailer (sample_id_all) or the same fields of a SAMPLE. */
struct perfdata_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id, stream_id;
	uint32_t cpu;
	unsigned has_tid : 1, has_time : 1, has_id : 1, has_stream_id : 1,
		has_cpu : 1;
};

/* A record as read.  raw points at the record (header included). */
struct perfdata_record {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
	uint64_t file_offset;
	const uint8_t *raw;
	const struct perfdata_attr *attr;   /* attr that produced it, if known */
	/* attr whose sample_type laid out sid and the SAMPLE body: attr, or
	 * the first attr when the id is unknown (NULL: no attrs, or a perf
	 * user record, type >= 64). */
	const struct perfdata_attr *layout_attr;
	struct perfdata_sample_id sid;

	/* AUXTRACE only: payload that follows the record. */
	uint64_t aux_size, aux_offset, aux_reference;
	uint32_t aux_idx, aux_tid, aux_cpu;
	uint64_t aux_file_offset;          /* where the payload starts */
};

struct perfdata;

/* Opens path (file or pipe mode; "-" is not supported here: callers that
 * read stdin save it first).  Returns 0, or a negative enum ptd_error with
 * a message in err naming the problem. */
int perfdata_open(const char *path, struct perfdata **out, char *err,
		  size_t errlen);
void perfdata_close(struct perfdata *pd);

/* Opens one data.N file of a perf.data directory (perf record --threads):
 * records only, no header, laid out by the attrs of hdr (the reader of
 * the directory's `data` file; its attrs are copied, so hdr may be closed
 * first).  A record cut short at the end of the file ends iteration with
 * a warning, as for a killed recording.  Returns 0 or a negative enum
 * ptd_error with a message in err. */
int perfdata_open_stream(const struct perfdata *hdr, const char *path,
			 struct perfdata **out, char *err, size_t errlen);

const struct perfdata_info *perfdata_get_info(const struct perfdata *pd);

/* Next record of the data section, in file order.  Returns 0, PTD_ERR_END at
 * the end, or a negative error.  A file that ends inside a record (killed
 * recording) ends with PTD_ERR_END and a warning (perfdata_warning()). */
int perfdata_next(struct perfdata *pd, struct perfdata_record *rec);

/* Restarts record iteration at the beginning of the data section. */
int perfdata_rewind(struct perfdata *pd);

/* Continues iteration at file_offset, where an earlier perfdata_next()
 * returned a record (perfdata_dir reads records in time order).  Returns 0,
 * or PTD_ERR_INVAL for an offset outside the data section. */
int perfdata_seek(struct perfdata *pd, uint64_t file_offset);

/* Maps [file_offset, file_offset+size) of the file for reading (AUXTRACE
 * payloads).  The mapping is independent of the record window and stays
 * valid until perfdata_aux_unmap() or perfdata_close(). */
int perfdata_aux_map(struct perfdata *pd, uint64_t file_offset, uint64_t size,
		     const uint8_t **data, void **cookie);
void perfdata_aux_unmap(struct perfdata *pd, void *cookie);

/* 1 when the file ended inside a record (a killed recording). */
int perfdata_truncated(const struct perfdata *pd);

/* Warnings so far (truncation, unknown records skipped), NULL-terminated. */
const char *const *perfdata_warnings(const struct perfdata *pd);

/* Message for the last error perfdata_next()/perfdata_aux_map() returned
 * ("" when none).  After PTD_ERR_UNSUPPORTED (a COMPRESSED record) the next
 * perfdata_next() goes on after that record; other errors are final. */
const char *perfdata_errmsg(const struct perfdata *pd);

/* Unmaps the record window and its resident pages (when no more records
 * are read for a while; a later read maps it again).  Pointers into
 * records become invalid. */
void perfdata_release_window(struct perfdata *pd);

/* Sets the size of the record window (default 32 MiB, at least a page);
 * tests use tiny windows to exercise remapping. */
void perfdata_set_window(struct perfdata *pd, size_t bytes);

/* "MMAP2", "AUXTRACE", ... or NULL for an unknown type. */
const char *perfdata_record_name(uint32_t type);
/* "build_id", "hostname", ... or NULL for an unknown feature bit. */
const char *perfdata_feature_name(unsigned feat);

/* Field accessors for record bodies (offsets after the 8-byte header).
 * Each returns 0 or PTD_ERR_CORRUPT when the record is too short. */
struct perfdata_mmap {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	/* MMAP2 */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	uint8_t build_id_size;
	uint8_t build_id[20];
	int has_build_id;
	const char *filename;
};
int perfdata_parse_mmap(const struct perfdata_record *rec,
			struct perfdata_mmap *m);

struct perfdata_comm {
	uint32_t pid, tid;
	const char *comm;
	int exec;               /* PERF_RECORD_MISC_COMM_EXEC */
};
int perfdata_parse_comm(const struct perfdata_record *rec,
			struct perfdata_comm *c);

struct perfdata_task {          /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};
int perfdata_parse_task(const struct perfdata_record *rec,
			struct perfdata_task *t);

struct perfdata_switch {        /* SWITCH and SWITCH_CPU_WIDE */
	int out, preempt;
	uint32_t next_prev_pid, next_prev_tid; /* CPU_WIDE only */
};
int perfdata_parse_switch(const struct perfdata_record *rec,
			  struct perfdata_switch *s);

struct perfdata_aux {
	uint64_t aux_offset, aux_size, flags;  /* PD_AUX_FLAG_* */
};
int perfdata_parse_aux(const struct perfdata_record *rec,
		       struct perfdata_aux *a);

struct perfdata_itrace_start {
	uint32_t pid, tid;
};
int perfdata_parse_itrace_start(const struct perfdata_record *rec,
				struct perfdata_itrace_start *s);

struct perfdata_lost {          /* LOST and LOST_SAMPLES */
	uint64_t id, lost;
};
int perfdata_parse_lost(const struct perfdata_record *rec,
			struct perfdata_lost *l);

struct perfdata_ksymbol {
	uint64_t addr;
	uint32_t len;
	uint16_t ksym_type;     /* PD_RECORD_KSYMBOL_TYPE_* */
	uint16_t flags;         /* PD_RECORD_KSYMBOL_FLAGS_* */
	const char *name;
};
int perfdata_parse_ksymbol(const struct perfdata_record *rec,
			   struct perfdata_ksymbol *k);

struct perfdata_bpf_event {
	uint16_t type;          /* PD_BPF_EVENT_* */
	uint16_t flags;
	uint32_t id;
	uint8_t tag[8];
};
int perfdata_parse_bpf_event(const struct perfdata_record *rec,
			     struct perfdata_bpf_event *b);

struct perfdata_text_poke {
	uint64_t addr;
	uint16_t old_len, new_len;
	const uint8_t *old_bytes, *new_bytes;
};
int perfdata_parse_text_poke(const struct perfdata_record *rec,
			     struct perfdata_text_poke *t);

struct perfdata_aux_hw_id {
	uint64_t hw_id;
};
int perfdata_parse_aux_hw_id(const struct perfdata_record *rec,
			     struct perfdata_aux_hw_id *h);

/* AUXTRACE_INFO: type and the private u64 array that follows. */
struct perfdata_auxtrace_info {
	uint32_t type;          /* PD_AUXTRACE_* */
	const uint64_t *priv;   /* little-endian u64s (unaligned access safe
				 * on x86; use util_le64 elsewhere) */
	size_t npriv;
};
int perfdata_parse_auxtrace_info(const struct perfdata_record *rec,
				 struct perfdata_auxtrace_info *ai);

struct perfdata_sample {
	uint64_t ip, addr, period, id, stream_id;
	uint32_t pid, tid, cpu;
	uint64_t time;
	const uint8_t *raw;
	uint32_t raw_size;
	/* PD_SAMPLE_CALLCHAIN: callchain_nr little-endian u64s, context
	 * markers (PD_CONTEXT_*) included */
	const uint8_t *callchain;
	uint64_t callchain_nr;
	/* PD_SAMPLE_BRANCH_STACK: branch_nr entries of PD_BRANCH_ENTRY_SIZE */
	const uint8_t *branches;
	uint64_t branch_nr, branch_hw_idx;
};
/* Returns 0, PTD_ERR_TRUNCATED when the callchain's nr runs past the
 * record, or PTD_ERR_CORRUPT for other short records. */
int perfdata_parse_sample(const struct perfdata_record *rec,
			  struct perfdata_sample *s);

/* TIME_CONV user record.  perfdata_next() also copies the last TIME_CONV
 * it returned into info.time_conv (pipe mode: already at open). */
int perfdata_parse_time_conv(const struct perfdata_record *rec,
			     struct perfdata_time_conv *tc);

#endif
