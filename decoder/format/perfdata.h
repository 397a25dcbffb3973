/* SPDX-License-Identifier: MIT */
/*
 * perfdata - reads perf.data files (file mode and pipe mode).
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

/* Record types (kernel and perf user records). */
enum {
	PD_RECORD_MMAP = 1,
	PD_RECORD_LOST = 2,
	PD_RECORD_COMM = 3,
	PD_RECORD_EXIT = 4,
	PD_RECORD_THROTTLE = 5,
	PD_RECORD_UNTHROTTLE = 6,
	PD_RECORD_FORK = 7,
	PD_RECORD_READ = 8,
	PD_RECORD_SAMPLE = 9,
	PD_RECORD_MMAP2 = 10,
	PD_RECORD_AUX = 11,
	PD_RECORD_ITRACE_START = 12,
	PD_RECORD_LOST_SAMPLES = 13,
	PD_RECORD_SWITCH = 14,
	PD_RECORD_SWITCH_CPU_WIDE = 15,
	PD_RECORD_NAMESPACES = 16,
	PD_RECORD_KSYMBOL = 17,
	PD_RECORD_BPF_EVENT = 18,
	PD_RECORD_CGROUP = 19,
	PD_RECORD_TEXT_POKE = 20,
	PD_RECORD_AUX_OUTPUT_HW_ID = 21,

	PD_RECORD_HEADER_ATTR = 64,
	PD_RECORD_HEADER_EVENT_TYPE = 65,
	PD_RECORD_HEADER_TRACING_DATA = 66,
	PD_RECORD_HEADER_BUILD_ID = 67,
	PD_RECORD_FINISHED_ROUND = 68,
	PD_RECORD_ID_INDEX = 69,
	PD_RECORD_AUXTRACE_INFO = 70,
	PD_RECORD_AUXTRACE = 71,
	PD_RECORD_AUXTRACE_ERROR = 72,
	PD_RECORD_THREAD_MAP = 73,
	PD_RECORD_CPU_MAP = 74,
	PD_RECORD_STAT_CONFIG = 75,
	PD_RECORD_STAT = 76,
	PD_RECORD_STAT_ROUND = 77,
	PD_RECORD_EVENT_UPDATE = 78,
	PD_RECORD_TIME_CONV = 79,
	PD_RECORD_HEADER_FEATURE = 80,
	PD_RECORD_COMPRESSED = 81,
	PD_RECORD_FINISHED_INIT = 82,
};

/* misc bits */
#define PD_MISC_CPUMODE_MASK 7
#define PD_MISC_KERNEL 1
#define PD_MISC_USER 2
#define PD_MISC_MMAP_BUILD_ID (1 << 14)
#define PD_MISC_SWITCH_OUT (1 << 13)
#define PD_MISC_SWITCH_OUT_PREEMPT (1 << 14)

/* AUX record flags */
#define PD_AUX_FLAG_TRUNCATED 0x01
#define PD_AUX_FLAG_OVERWRITE 0x02
#define PD_AUX_FLAG_PARTIAL 0x04
#define PD_AUX_FLAG_COLLISION 0x08

/* sample_type bits that matter for parsing */
#define PD_SAMPLE_IP (1ull << 0)
#define PD_SAMPLE_TID (1ull << 1)
#define PD_SAMPLE_TIME (1ull << 2)
#define PD_SAMPLE_ADDR (1ull << 3)
#define PD_SAMPLE_READ (1ull << 4)
#define PD_SAMPLE_CALLCHAIN (1ull << 5)
#define PD_SAMPLE_ID (1ull << 6)
#define PD_SAMPLE_CPU (1ull << 7)
#define PD_SAMPLE_PERIOD (1ull << 8)
#define PD_SAMPLE_STREAM_ID (1ull << 9)
#define PD_SAMPLE_RAW (1ull << 10)
#define PD_SAMPLE_BRANCH_STACK (1ull << 11)
#define PD_SAMPLE_REGS_USER (1ull << 12)
#define PD_SAMPLE_STACK_USER (1ull << 13)
#define PD_SAMPLE_WEIGHT (1ull << 14)
#define PD_SAMPLE_DATA_SRC (1ull << 15)
#define PD_SAMPLE_IDENTIFIER (1ull << 16)
#define PD_SAMPLE_TRANSACTION (1ull << 17)
#define PD_SAMPLE_REGS_INTR (1ull << 18)
#define PD_SAMPLE_PHYS_ADDR (1ull << 19)
#define PD_SAMPLE_AUX (1ull << 20)
#define PD_SAMPLE_CGROUP (1ull << 21)
#define PD_SAMPLE_DATA_PAGE_SIZE (1ull << 22)
#define PD_SAMPLE_CODE_PAGE_SIZE (1ull << 23)
#define PD_SAMPLE_WEIGHT_STRUCT (1ull << 24)

/* Feature bits (HEADER_*) */
enum {
	PD_FEAT_TRACING_DATA = 1,
	PD_FEAT_BUILD_ID = 2,
	PD_FEAT_HOSTNAME = 3,
	PD_FEAT_OSRELEASE = 4,
	PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6,
	PD_FEAT_NRCPUS = 7,
	PD_FEAT_CPUDESC = 8,
	PD_FEAT_CPUID = 9,
	PD_FEAT_TOTAL_MEM = 10,
	PD_FEAT_CMDLINE = 11,
	PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_CPU_TOPOLOGY = 13,
	PD_FEAT_NUMA_TOPOLOGY = 14,
	PD_FEAT_BRANCH_STACK = 15,
	PD_FEAT_PMU_MAPPINGS = 16,
	PD_FEAT_GROUP_DESC = 17,
	PD_FEAT_AUXTRACE = 18,
	PD_FEAT_STAT = 19,
	PD_FEAT_CACHE = 20,
	PD_FEAT_SAMPLE_TIME = 21,
	PD_FEAT_MEM_TOPOLOGY = 22,
	PD_FEAT_CLOCKID = 23,
	PD_FEAT_DIR_FORMAT = 24,
	PD_FEAT_BPF_PROG_INFO = 25,
	PD_FEAT_BPF_BTF = 26,
	PD_FEAT_COMPRESSED = 27,
	PD_FEAT_CPU_PMU_CAPS = 28,
	PD_FEAT_CLOCK_DATA = 29,
	PD_FEAT_HYBRID_TOPOLOGY = 30,
	PD_FEAT_PMU_CAPS = 31,
};

/* The parts of perf_event_attr the decoder needs, plus the attr's ids. */
struct perfdata_attr {
	uint32_t type;
	uint32_t size;
	uint64_t config;
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags;          /* the bitfield word (disabled, inherit, ...) */
	int sample_id_all;
	int use_clockid;
	int32_t clockid;
	uint64_t config1, config2;
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
	uint64_t features[4];    /* feature bitmap (256 bits) */

	struct perfdata_build_id *build_ids;
	size_t nbuild_ids;
	char *hostname, *osrelease, *perf_version, *arch, *cpudesc, *cpuid;
	char **cmdline;
	size_t ncmdline;
	uint32_t nr_cpus_avail, nr_cpus_online;
	uint64_t clockid_res_ns; /* HEADER_CLOCKID */
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

const struct perfdata_info *perfdata_get_info(const struct perfdata *pd);

/* Next record of the data section, in file order.  Returns 0, PTD_ERR_END at
 * the end, or a negative error.  A file that ends inside a record (killed
 * recording) ends with PTD_ERR_END and a warning (perfdata_warning()). */
int perfdata_next(struct perfdata *pd, struct perfdata_record *rec);

/* Restarts record iteration at the beginning of the data section. */
int perfdata_rewind(struct perfdata *pd);

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
	uint64_t aux_offset, aux_size, flags;
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
	uint16_t ksym_type;     /* 1 = BPF, 2 = OOL */
	uint16_t flags;         /* 1 = unregister */
	const char *name;
};
int perfdata_parse_ksymbol(const struct perfdata_record *rec,
			   struct perfdata_ksymbol *k);

struct perfdata_bpf_event {
	uint16_t type;          /* 1 = PROG_LOAD, 2 = PROG_UNLOAD */
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
	uint32_t type;          /* 1 = intel_pt, 2 = intel_bts, 3 = cs_etm, ... */
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
};
int perfdata_parse_sample(const struct perfdata_record *rec,
			  struct perfdata_sample *s);

/* TIME_CONV user record.  perfdata_next() also copies the last TIME_CONV
 * it returned into info.time_conv (pipe mode: already at open). */
int perfdata_parse_time_conv(const struct perfdata_record *rec,
			     struct perfdata_time_conv *tc);

#endif
