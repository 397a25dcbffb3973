/* SPDX-License-Identifier: MIT */
/*
 * perf_abi - the on-disk ABI of Linux perf as this project reads and
 * writes it; format stage (decoder/format/), the one place each of these
 * values is defined for the perf.data reader (perfdata), the writer
 * (perfwrite), the AUXTRACE_INFO layouts (intel_pt_info, cs_etm_info),
 * the decoder and capture/ (ptcapture, ptsynth).
 *
 * What is here: the file header and perf_event_attr layout, record types,
 * record misc bits, sample_type and read_format bits, attr flag bits,
 * header feature ids, AUX record flags, KSYMBOL and BPF_EVENT values,
 * callchain context markers, branch stack entries,
 * AUXTRACE types, the u64 indices of the intel_pt and cs_etm
 * AUXTRACE_INFO private areas, and the jitdump file header and record ids.  Values are those of the kernel's
 * include/uapi/linux/perf_event.h and of tools/perf (util/header.h,
 * util/event.h, util/auxtrace.h, util/intel-pt.h, util/cs-etm.h).
 *
 * Names are perf's with PD_ where perf has PERF_ (capture/ includes the
 * kernel's header, which defines PERF_* itself); perf has no names for the
 * attr flag bits, so PD_ATTR_FLAG_* take the bit-field's name.
 * perf_abi_is_jitdump_name() is the one function.
 */
#ifndef PTD_PERF_ABI_H
#define PTD_PERF_ABI_H

#include <stdint.h>

/* ---- perf.data file header (file mode) and pipe header ---------------- */

#define PD_MAGIC2 0x32454c4946524550ull     /* "PERFILE2" little-endian */
#define PD_MAGIC2_SWAPPED 0x50455246494c4532ull
#define PD_FILE_HEADER_SIZE 104
#define PD_FILE_HEADER_V1_SIZE 72           /* without the feature bitmap */
#define PD_PIPE_HEADER_SIZE 16
#define PD_FILE_SECTION_SIZE 16             /* {u64 offset, u64 size} */

/* Byte offsets of the file header's fields. */
#define PD_HEADER_OFF_MAGIC 0
#define PD_HEADER_OFF_SIZE 8
#define PD_HEADER_OFF_ATTR_SIZE 16   /* an attr entry: attr + ids section */
#define PD_HEADER_OFF_ATTRS 24       /* section */
#define PD_HEADER_OFF_DATA 40        /* section */
#define PD_HEADER_OFF_EVENT_TYPES 56 /* section */
#define PD_HEADER_OFF_FEATURES 72    /* 256-bit bitmap of PD_FEAT_* */

/* ---- perf_event_attr ---------------------------------------------------- */

#define PD_ATTR_SIZE_VER0 64

/* Byte offsets of the attr fields the reader and the writers use. */
#define PD_ATTR_OFF_TYPE 0
#define PD_ATTR_OFF_SIZE 4
#define PD_ATTR_OFF_CONFIG 8
#define PD_ATTR_OFF_SAMPLE_PERIOD 16
#define PD_ATTR_OFF_SAMPLE_TYPE 24
#define PD_ATTR_OFF_READ_FORMAT 32
#define PD_ATTR_OFF_FLAGS 40
#define PD_ATTR_OFF_CONFIG1 56
#define PD_ATTR_OFF_CONFIG2 64
#define PD_ATTR_OFF_BRANCH_SAMPLE_TYPE 72
#define PD_ATTR_OFF_CLOCKID 92

/* attr.type values, and the software event config used for sideband. */
#define PD_TYPE_HARDWARE 0
#define PD_TYPE_SOFTWARE 1
#define PD_COUNT_HW_INSTRUCTIONS 1
#define PD_COUNT_SW_CPU_CLOCK 0
#define PD_COUNT_SW_DUMMY 9

/* Bits of the attr's flags word (its bit-fields, in order). */
#define PD_ATTR_FLAG_DISABLED (1ull << 0)
#define PD_ATTR_FLAG_INHERIT (1ull << 1)
#define PD_ATTR_FLAG_PINNED (1ull << 2)
#define PD_ATTR_FLAG_EXCLUSIVE (1ull << 3)
#define PD_ATTR_FLAG_EXCLUDE_USER (1ull << 4)
#define PD_ATTR_FLAG_EXCLUDE_KERNEL (1ull << 5)
#define PD_ATTR_FLAG_EXCLUDE_HV (1ull << 6)
#define PD_ATTR_FLAG_EXCLUDE_IDLE (1ull << 7)
#define PD_ATTR_FLAG_MMAP (1ull << 8)
#define PD_ATTR_FLAG_COMM (1ull << 9)
#define PD_ATTR_FLAG_FREQ (1ull << 10)
#define PD_ATTR_FLAG_INHERIT_STAT (1ull << 11)
#define PD_ATTR_FLAG_ENABLE_ON_EXEC (1ull << 12)
#define PD_ATTR_FLAG_TASK (1ull << 13)
#define PD_ATTR_FLAG_WATERMARK (1ull << 14)
#define PD_ATTR_FLAG_PRECISE_IP_SHIFT 15    /* 2 bits */
#define PD_ATTR_FLAG_MMAP_DATA (1ull << 17)
#define PD_ATTR_FLAG_SAMPLE_ID_ALL (1ull << 18)
#define PD_ATTR_FLAG_EXCLUDE_HOST (1ull << 19)
#define PD_ATTR_FLAG_EXCLUDE_GUEST (1ull << 20)
#define PD_ATTR_FLAG_EXCLUDE_CALLCHAIN_KERNEL (1ull << 21)
#define PD_ATTR_FLAG_EXCLUDE_CALLCHAIN_USER (1ull << 22)
#define PD_ATTR_FLAG_MMAP2 (1ull << 23)
#define PD_ATTR_FLAG_COMM_EXEC (1ull << 24)
#define PD_ATTR_FLAG_USE_CLOCKID (1ull << 25)
#define PD_ATTR_FLAG_CONTEXT_SWITCH (1ull << 26)
#define PD_ATTR_FLAG_WRITE_BACKWARD (1ull << 27)
#define PD_ATTR_FLAG_NAMESPACES (1ull << 28)
#define PD_ATTR_FLAG_KSYMBOL (1ull << 29)
#define PD_ATTR_FLAG_BPF_EVENT (1ull << 30)
#define PD_ATTR_FLAG_AUX_OUTPUT (1ull << 31)
#define PD_ATTR_FLAG_CGROUP (1ull << 32)
#define PD_ATTR_FLAG_TEXT_POKE (1ull << 33)
#define PD_ATTR_FLAG_BUILD_ID (1ull << 34)
#define PD_ATTR_FLAG_INHERIT_THREAD (1ull << 35)
#define PD_ATTR_FLAG_REMOVE_ON_EXEC (1ull << 36)
#define PD_ATTR_FLAG_SIGTRAP (1ull << 37)
#define PD_ATTR_FLAG_DEFER_CALLCHAIN (1ull << 38)  /* user part deferred */
#define PD_ATTR_FLAG_DEFER_OUTPUT (1ull << 39)     /* writes CALLCHAIN_DEFERRED */

/* sample_type bits */
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

/* branch_sample_type bit that adds a u64 hw_idx in front of the branch
 * stack's entries (PERF_SAMPLE_BRANCH_HW_INDEX) */
#define PD_SAMPLE_BRANCH_HW_INDEX (1ull << 17)
/* A branch stack entry: from, to, and a u64 of flags (mispred, predicted,
 * in_tx, abort, cycles, type, ...). */
#define PD_BRANCH_ENTRY_SIZE 24

/* Callchain context markers (enum perf_callchain_context): an entry of a
 * SAMPLE's callchain at or above PD_CONTEXT_MAX is no address but says
 * whose frames follow.  PD_CONTEXT_USER_DEFERRED is followed by one entry,
 * the cookie of the CALLCHAIN_DEFERRED record holding the user frames. */
#define PD_CONTEXT_HV ((uint64_t)-32)
#define PD_CONTEXT_KERNEL ((uint64_t)-128)
#define PD_CONTEXT_USER ((uint64_t)-512)
#define PD_CONTEXT_USER_DEFERRED ((uint64_t)-640)
#define PD_CONTEXT_GUEST ((uint64_t)-2048)
#define PD_CONTEXT_GUEST_KERNEL ((uint64_t)-2176)
#define PD_CONTEXT_GUEST_USER ((uint64_t)-2560)
#define PD_CONTEXT_MAX ((uint64_t)-4095)
/* Entries of a callchain by default (kernel.perf_event_max_stack). */
#define PD_MAX_STACK_DEPTH 127

/* read_format bits */
#define PD_FORMAT_TOTAL_TIME_ENABLED (1u << 0)
#define PD_FORMAT_TOTAL_TIME_RUNNING (1u << 1)
#define PD_FORMAT_ID (1u << 2)
#define PD_FORMAT_GROUP (1u << 3)
#define PD_FORMAT_LOST (1u << 4)

/* ---- records ------------------------------------------------------------ */

/* Record types: the kernel's (< 64) and perf's user records. */
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
	/* u64 cookie, u64 nr, u64 ips[nr], sample_id: the user part of the
	 * callchains of the samples whose callchain ends in
	 * PD_CONTEXT_USER_DEFERRED followed by this cookie */
	PD_RECORD_CALLCHAIN_DEFERRED = 22,

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

/* The AUXTRACE record without its payload (also what perf's AUXTRACE
 * index entries give as the size). */
#define PD_AUXTRACE_RECORD_SIZE 48

/* misc bits of the record header; some bits mean different things in
 * different record types. */
#define PD_MISC_CPUMODE_MASK 7
#define PD_MISC_KERNEL 1
#define PD_MISC_USER 2
#define PD_MISC_HYPERVISOR 3
#define PD_MISC_GUEST_KERNEL 4               /* guest sideband (perf inject */
#define PD_MISC_GUEST_USER 5                 /* --guest-data) */
#define PD_MISC_COMM_EXEC (1 << 13)          /* COMM */
#define PD_MISC_SWITCH_OUT (1 << 13)         /* SWITCH, SWITCH_CPU_WIDE */
#define PD_MISC_SWITCH_OUT_PREEMPT (1 << 14) /* SWITCH, SWITCH_CPU_WIDE */
#define PD_MISC_MMAP_BUILD_ID (1 << 14)      /* MMAP2 */
#define PD_MISC_BUILD_ID_SIZE (1 << 15)      /* HEADER_BUILD_ID entries */

/* AUX record flags */
#define PD_AUX_FLAG_TRUNCATED 0x01
#define PD_AUX_FLAG_OVERWRITE 0x02
#define PD_AUX_FLAG_PARTIAL 0x04
#define PD_AUX_FLAG_COLLISION 0x08
#define PD_AUX_FLAG_PMU_FORMAT_TYPE_MASK 0xff00
#define PD_AUX_FLAG_CORESIGHT_FORMAT_RAW 0x0100  /* TRBE: no formatter frames */

/* KSYMBOL record: ksym_type and flags */
enum {
	PD_RECORD_KSYMBOL_TYPE_UNKNOWN = 0,
	PD_RECORD_KSYMBOL_TYPE_BPF = 1,
	PD_RECORD_KSYMBOL_TYPE_OOL = 2,      /* out-of-line code: kprobes, ... */
};
#define PD_RECORD_KSYMBOL_FLAGS_UNREGISTER (1 << 0)

/* BPF_EVENT record: type */
enum {
	PD_BPF_EVENT_UNKNOWN = 0,
	PD_BPF_EVENT_PROG_LOAD = 1,
	PD_BPF_EVENT_PROG_UNLOAD = 2,
};

/* ---- header features (HEADER_* feature bits) --------------------------- */

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
	PD_FEAT_MAX = 256,              /* bits in the header's bitmap */
};

/* Strings in feature sections: u32 length, then the string padded with
 * NULs to a multiple of this. */
#define PD_NAME_ALIGN 64

/* ---- AUXTRACE_INFO ------------------------------------------------------ */

/* The record's type field: which tracer wrote the private area. */
enum {
	PD_AUXTRACE_UNKNOWN = 0,
	PD_AUXTRACE_INTEL_PT = 1,
	PD_AUXTRACE_INTEL_BTS = 2,
	PD_AUXTRACE_CS_ETM = 3,
	PD_AUXTRACE_ARM_SPE = 4,
	PD_AUXTRACE_S390_CPUMSF = 5,
	PD_AUXTRACE_HISI_PTT = 6,
};

/* intel_pt's private area: u64 indices (struct intel_pt_info packs and
 * unpacks it). */
enum {
	INTELPT_INFO_PMU_TYPE,
	INTELPT_INFO_TIME_SHIFT,
	INTELPT_INFO_TIME_MULT,
	INTELPT_INFO_TIME_ZERO,
	INTELPT_INFO_CAP_USER_TIME_ZERO,
	INTELPT_INFO_TSC_BIT,
	INTELPT_INFO_NORETCOMP_BIT,
	INTELPT_INFO_HAVE_SCHED_SWITCH,
	INTELPT_INFO_SNAPSHOT_MODE,
	INTELPT_INFO_PER_CPU_MMAPS,
	INTELPT_INFO_MTC_BIT,
	INTELPT_INFO_MTC_FREQ_BITS,
	INTELPT_INFO_TSC_CTC_N,
	INTELPT_INFO_TSC_CTC_D,
	INTELPT_INFO_CYC_BIT,
	INTELPT_INFO_MAX_NONTURBO_RATIO,
	INTELPT_INFO_FILTER_STR_LEN,
	INTELPT_INFO_MAX,               /* fields perf writes */
};

/* INTELPT_INFO_HAVE_SCHED_SWITCH: how context switches were recorded. */
enum {
	INTELPT_SCHED_SWITCH_NONE = 0,
	INTELPT_SCHED_SWITCH_TRACEPOINT = 1,  /* sched:sched_switch */
	INTELPT_SCHED_SWITCH_EVENTS = 2,      /* SWITCH records, per thread */
	INTELPT_SCHED_SWITCH_CPU_WIDE = 3,    /* SWITCH_CPU_WIDE records */
};

/* cs_etm's private area (read by cs_etm_info): a header of u64s ... */
enum {
	CS_HEADER_VERSION,              /* 0, 1 or 2 */
	CS_PMU_TYPE_CPUS,               /* PMU type << 32 | CPU blocks */
	CS_ETM_SNAPSHOT,
	CS_HEADER_SIZE,                 /* the first CPU block starts here */
};
/* ... then a block per CPU: magic, cpu and, from header version 1, the
 * number of parameters that follow (version 0: a count fixed per magic). */
enum {
	CS_ETM_MAGIC,
	CS_ETM_CPU,
	CS_ETM_NR_TRC_PARAMS,
};
#define CS_ETMV3_MAGIC 0x3030303030303030ULL   /* ETMv3 and PTM */
#define CS_ETMV4_MAGIC 0x4040404040404040ULL
#define CS_ETE_MAGIC 0x5050505050505050ULL
/* The parameters, indices from the first one.  ETMv3/PTM: */
enum {
	CS_ETM_ETMCR,
	CS_ETM_ETMTRACEIDR,
	CS_ETM_ETMCCER,
	CS_ETM_ETMIDR,
	CS_ETMV3_NR_PARAMS,             /* version 0's count */
};
/* ETMv4; ETE has the same with TRCDEVARCH where ETMv4 has TS_SOURCE. */
enum {
	CS_ETMV4_TRCCONFIGR,
	CS_ETMV4_TRCTRACEIDR,
	CS_ETMV4_TRCIDR0,
	CS_ETMV4_TRCIDR1,
	CS_ETMV4_TRCIDR2,
	CS_ETMV4_TRCIDR8,
	CS_ETMV4_TRCAUTHSTATUS,
	CS_ETMV4_TS_SOURCE,
};
#define CS_ETMV4_NR_PARAMS_V0 (CS_ETMV4_TRCIDR8 + 1)   /* version 0's count */
enum {
	CS_ETE_TRCDEVARCH = CS_ETMV4_TS_SOURCE,
	CS_ETE_TS_SOURCE,
};
#define CS_ETE_NR_PARAMS_MIN (CS_ETE_TRCDEVARCH + 1)
/* A TRACEIDR parameter with this bit set (header version 2) holds no trace
 * ID: AUX_OUTPUT_HW_ID records carry it. */
#define CS_TRACEIDR_NO_ID (1ull << 31)
/* A trace ID is 7 bits, in TRACEIDR parameters and in the low bits of an
 * AUX_OUTPUT_HW_ID record's hw_id. */
#define CS_TRACE_ID_MASK 0x7f

/* ---- jitdump files (perf's jitdump specification, version 1) ------------ */

#define PD_JITHEADER_MAGIC 0x4A695444u      /* "JiTD" in the writer's order */
#define PD_JITHEADER_MAGIC_SW 0x4454694Au   /* the other byte order */
#define PD_JITHEADER_SIZE 40
#define PD_JITDUMP_FLAGS_ARCH_TIMESTAMP 1ull  /* timestamps are TSC values */
#define PD_JIT_RECORD_PREFIX 16             /* u32 id, u32 size, u64 time */

/* Record ids */
enum {
	PD_JIT_CODE_LOAD = 0,
	PD_JIT_CODE_MOVE = 1,
	PD_JIT_CODE_DEBUG_INFO = 2,
	PD_JIT_CODE_CLOSE = 3,
	PD_JIT_CODE_UNWINDING_INFO = 4,
};

/* ---- naming conventions ------------------------------------------------- */

/* 1 when path's file name is a jitdump's, jit-PID.dump: the file a JIT
 * agent (perf's jitdump interface) maps PROT_EXEC so the trace names it. */
int perf_abi_is_jitdump_name(const char *path);

#endif
