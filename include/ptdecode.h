/* SPDX-License-Identifier: MIT */
/*
 * ptdecode.h - the public interface of libptdecode.
 *
 * libptdecode reconstructs the exact control flow of a program from an
 * Intel PT (and, later, Arm CoreSight) hardware trace.  It reads
 *
 *   - capture directories written by ptcapture or ptsynth (NAME.ptd/),
 *   - perf.data files written by `perf record -e intel_pt//`,
 *   - raw Intel PT byte streams plus memory images (like libipt's ptxed),
 *
 * and produces a stream of flow events: executed instructions, and events
 * that say where tracing started or stopped, where time advanced, where the
 * process changed, and where and why the flow could not be decoded.
 *
 * Rules every function follows:
 *   - Nothing here prints, exits or aborts.  Failures are returned as a
 *     negative enum ptd_error value; ptd_strerror() names it and, for a
 *     session, ptd_errmsg() says what exactly went wrong and what to do.
 *   - There is no global state.  Distinct sessions may be used from distinct
 *     threads at the same time; one session is not thread-safe.
 *   - Options structs begin with their own size (set .sz = sizeof(struct)),
 *     so the library can grow them without breaking existing callers.
 *
 * Minimal use:
 *
 *   struct ptd_session *s;
 *   struct ptd_event ev;
 *   if (ptd_open(&s, "trace.ptd", NULL) < 0) { puts(ptd_errmsg(s)); ... }
 *   while (ptd_next(s, &ev) == 0)
 *       if (ev.kind == PTD_EV_INSN) printf("%#llx\n", (unsigned long long)ev.ip);
 *   ptd_close(s);
 */
#ifndef PTDECODE_H
#define PTDECODE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PTD_API __attribute__((visibility("default")))
#else
#define PTD_API
#endif

#define PTD_VERSION_MAJOR 0
#define PTD_VERSION_MINOR 1
#define PTD_VERSION_PATCH 0

/* Library version as "MAJOR.MINOR.PATCH". */
PTD_API const char *ptd_version(void);

/* The versions of the libraries this libptdecode runs with, as
 * "libipt 2.0.5, OpenCSD 1.3.3, capstone 4.0" (libipt's
 * pt_library_version, OpenCSD's ocsd_get_version or "none" in a build
 * without it, capstone's cs_version).  Writes it into buf (truncated to
 * len - 1); returns its full length, or PTD_ERR_INVAL. */
PTD_API int ptd_library_versions(char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

enum ptd_error {
	PTD_OK = 0,
	PTD_ERR_NOMEM = -1,       /* out of memory */
	PTD_ERR_INVAL = -2,       /* invalid argument */
	PTD_ERR_IO = -3,          /* cannot open, read or map a file */
	PTD_ERR_FORMAT = -4,      /* input is not in a format ptdecode reads */
	PTD_ERR_TRUNCATED = -5,   /* input ends in the middle of a structure */
	PTD_ERR_CORRUPT = -6,     /* input is internally inconsistent */
	PTD_ERR_UNSUPPORTED = -7, /* valid input that this build cannot decode */
	PTD_ERR_NO_TRACE = -8,    /* input holds no trace data to decode */
	PTD_ERR_NO_AUXINFO = -9,  /* AUX trace data without AUXTRACE_INFO */
	PTD_ERR_NO_IMAGE = -10,   /* code bytes for an address are missing */
	PTD_ERR_DECODE = -11,     /* the trace decoder reported an error */
	PTD_ERR_END = -12,        /* end of the event stream (not a failure) */
	PTD_ERR_LIMIT = -13,      /* a configured resource limit was reached */
};

/* Short, static description of an error code (never NULL). */
PTD_API const char *ptd_strerror(int err);

/* ------------------------------------------------------------------ */
/* Opening a trace                                                     */
/* ------------------------------------------------------------------ */

/* An image given on the command line for raw traces (like ptxed's --raw
 * and --elf).  Exactly one of the forms is used, chosen by .kind. */
enum ptd_raw_image_kind {
	PTD_RAW_BYTES = 0,   /* file contents loaded at .addr */
	PTD_RAW_ELF = 1,     /* ELF file; PT_LOAD segments at their vaddr,
			      * shifted so the first one lands at .addr when
			      * .has_addr is set */
	PTD_RAW_PAGES = 2,   /* a page cache: .path is an array of LE u64 page
			      * addresses, .path2 holds one 4096-byte page per
			      * address in the same order */
};

struct ptd_raw_image {
	enum ptd_raw_image_kind kind;
	const char *path;
	const char *path2;
	uint64_t addr;
	int has_addr;
};

enum ptd_open_flags {
	/* Decode every address with the last version of its bytes, ignoring
	 * time (debug: shows why versioning matters). */
	PTD_OPEN_NO_VERSIONING = 1u << 0,
	/* The caller wants counts (ptd_get_stats) and events only: the flow
	 * is decoded exactly as without it, but ptd_next_blocks may hand out
	 * runs without their blocks (n == 0; their instructions are counted
	 * all the same), and ptd_next fails with PTD_ERR_INVAL.  The fast
	 * decoder then writes no block records: -j N scales better. */
	PTD_OPEN_COUNT_ONLY = 1u << 1,
	/* The caller will ask ptd_insn_text() for every new instruction: the
	 * decoder keeps each instruction's text from the start. */
	PTD_OPEN_INSN_TEXT = 1u << 2,
	/* Intel PT: after a decode error, decode on from the next packet
	 * that gives the flow an IP (TIP, TIP.PGE, OVF), or past a packet
	 * that does not decode where the flow was, instead of at the next
	 * PSB (ptxed's --resync-on-error; perf's decoder does the same).
	 * The error event then has PTD_EVF_RESYNCED and that packet's trace
	 * offset in addr.  Without errors the flow is the same.  Inputs
	 * with sideband (perf.data, perf.data directories, capture
	 * directories) then resume where perf's decoder does. */
	PTD_OPEN_RESYNC_ON_ERROR = 1u << 3,
	/* Intel PT with several queues (perf record -a: one per CPU): hand
	 * out each queue's events in turn, queue after queue, instead of
	 * one timeline merged in time order (docs/ARCHITECTURE.md, "One
	 * timeline").  Sessions opened with PTD_OPEN_COUNT_ONLY are never
	 * merged: counts do not depend on the order. */
	PTD_OPEN_PER_QUEUE = 1u << 4,
	/* The merged timeline for a caller that pairs each branch with what
	 * follows it: the events after a branch instruction (up to the next
	 * instruction, or the event that ends or interrupts the flow) come
	 * right after it, so a branch takes its place by its own time, as
	 * perf script orders branch samples; the target may then come
	 * before other CPUs' events of earlier times. */
	PTD_OPEN_BRANCH_ORDER = 1u << 5,
	/* Intel PT: guest code (VMX non-root, PIP.NR=1) of a virtual machine
	 * the perf.data has no guest sideband for is read from the host
	 * process that ran it (perf script's --guest-code: the guest's code
	 * is the hypervisor process's memory, as in KVM's selftests). */
	PTD_OPEN_GUEST_CODE = 1u << 7,
	/* A perf.data or capture directory without trace data (samples
	 * only) opens too: ptd_next() then ends at once (stats.queues 0),
	 * and ptd_symbolize(), ptd_image_name() and ptd_thread_name() answer
	 * from its sideband (MMAP2, COMM, KSYMBOL).  Inputs with a trace
	 * decode as without it. */
	PTD_OPEN_SIDEBAND_ONLY = 1u << 8,
	/* Intel PT: after a decode error, decode on from the next PSB, as
	 * libipt's decoders do (the default); wins over the two flags
	 * before and after. */
	PTD_OPEN_RESYNC_AT_PSB = 1u << 9,
	/* Intel PT: PTD_OPEN_RESYNC_ON_ERROR for inputs with sideband
	 * (perf.data, perf.data directories, capture directories), so that
	 * they decode to what perf script prints; raw traces resume at the
	 * next PSB (the ptdecode command's default). */
	PTD_OPEN_RESYNC_PERF_DATA = 1u << 10,
};

/* Which Intel PT flow decoder to use. */
enum ptd_decoder {
	/* Block-cache decoder over libipt's packet decoder; segments it
	 * cannot decode with certainty are decoded by libipt (default). */
	PTD_DECODER_FAST = 0,
	/* libipt's instruction flow decoder (the reference path). */
	PTD_DECODER_LIBIPT = 1,
	/* CoreSight: OpenCSD's full decoder for every unit (the reference
	 * path); PTD_DECODER_FAST decodes ETMv4 units with the packet
	 * processor and a block cache where that is exact.  Intel PT
	 * treats it as PTD_DECODER_FAST. */
	PTD_DECODER_OPENCSD = 2,
};

struct ptd_open_opts {
	size_t sz;                 /* sizeof(struct ptd_open_opts) */
	unsigned int flags;        /* enum ptd_open_flags */

	/* Where images named by the trace's sideband are looked up. */
	const char *sysroot;       /* prefix for absolute paths in MMAP records */
	const char *const *search_path; /* NULL-terminated list of directories
					 * searched by file name and by
					 * build id (DIR/.build-id/xx/yyyy.debug
					 * and DIR/xx/yyyy/elf); a capture
					 * directory's .build-id/ (files the
					 * recorder archived) comes after them */
	const char *vmlinux;       /* kernel ELF image */
	const char *kallsyms;      /* kernel symbols (e.g. /proc/kallsyms copy) */

	/* Raw mode: trace bytes without perf.data (path given to ptd_open is
	 * the trace file). */
	const struct ptd_raw_image *raw_images;
	size_t n_raw_images;
	const char *cpu;           /* "F/M[/S]" or "none"; raw mode only */

	/* Decoding. */
	enum ptd_decoder decoder;
	unsigned int threads;      /* worker threads, 0 = one per core */
	size_t block_cache_max;    /* bytes of decoded blocks kept per thread
				    * by the fast decoder (0: 256 MiB); a full
				    * cache is emptied and rebuilt */

	/* Limits (0 = no limit). */
	uint64_t max_insns;        /* stop after this many instructions */
	uint64_t time_start;       /* perf-clock ns; events before are skipped */
	uint64_t time_end;         /* perf-clock ns; stop after */

	/* Intel PT: the IP filters the trace was recorded with (ptxed's
	 * --filter:addrN_cfg, --filter:addrN_a, --filter:addrN_b):
	 * IA32_RTIT_CTL.ADDRn_CFG (0 unused, 1 filter, 2 stop) and the range
	 * [IA32_RTIT_ADDRn_A, IA32_RTIT_ADDRn_B], n = 0..3; a filter given
	 * here (any field non-zero) replaces the input's.  libipt's errata
	 * work-arounds (SKL014) depend on them. */
	uint8_t addr_cfg[4];
	uint64_t addr_a[4], addr_b[4];
};

/* Input kinds ptd_open recognises. */
enum ptd_input_kind {
	PTD_INPUT_AUTO = 0,        /* guess from the path */
	PTD_INPUT_CAPTURE_DIR,     /* NAME.ptd directory */
	PTD_INPUT_PERF_DATA,       /* perf.data (file or pipe mode) */
	PTD_INPUT_RAW_PT,          /* raw Intel PT bytes */
	PTD_INPUT_CS_SNAPSHOT,     /* OpenCSD snapshot directory */
};

struct ptd_session;

/* Opens a trace.  *out is set even on failure (unless memory ran out, then
 * it is NULL) so that ptd_errmsg(*out) can tell what went wrong; always
 * release it with ptd_close().  opts may be NULL for defaults. */
PTD_API int ptd_open(struct ptd_session **out, const char *path,
		     const struct ptd_open_opts *opts);

/* Like ptd_open, with the input kind forced. */
PTD_API int ptd_open_kind(struct ptd_session **out, const char *path,
			  enum ptd_input_kind kind,
			  const struct ptd_open_opts *opts);

PTD_API void ptd_close(struct ptd_session *s);

/* The message for the most recent failure or warning of the session, naming
 * the problem and what to do ("" when there was none).  Never NULL, valid
 * until the next call on the session. */
PTD_API const char *ptd_errmsg(const struct ptd_session *s);

/* Warnings collected while opening (e.g. "perf.data truncated at offset N:
 * read up to the last whole record") and while decoding (a merged
 * timeline's clock fallback, ptd_stats).  Returns the number of warnings;
 * ptd_warning(s, i) returns the i-th, or NULL. */
PTD_API size_t ptd_warning_count(const struct ptd_session *s);
PTD_API const char *ptd_warning(const struct ptd_session *s, size_t i);

/* ------------------------------------------------------------------ */
/* Flow events                                                         */
/* ------------------------------------------------------------------ */

enum ptd_event_kind {
	PTD_EV_INSN = 1,      /* an instruction executed: ip, size, raw,
			       * iclass, mode */
	PTD_EV_ENABLED,       /* tracing (re)started at ip */
	PTD_EV_DISABLED,      /* tracing stopped; ip = next IP if known; tid:
			       * the thread whose flow it ends (a switch
			       * to another comes after it) */
	PTD_EV_ASYNC,         /* asynchronous transfer (interrupt, fault,
			       * signal delivery) from ip to addr */
	PTD_EV_OVERFLOW,      /* the trace hardware lost packets; resumes at
			       * ip if known */
	PTD_EV_PAGING,        /* CR3 / address space change: addr = CR3 */
	PTD_EV_EXEC_MODE,     /* the execution mode changed at ip (a far
			       * branch's target, a trace start): mode;
			       * none for PSB+'s status (FORMATS.md) */
	PTD_EV_SWITCH,        /* the decoded thread changed: pid, tid */
	PTD_EV_TIME,          /* time advanced (only when asked for) */
	PTD_EV_ERROR,         /* decode error: error, offset, ip, msg; the
			       * decoder resynchronises after it */
	PTD_EV_GAP,           /* a stretch that could not be decoded:
			       * [ip, addr) when known, reason in msg */
	PTD_EV_LOST,          /* trace or sideband data lost (LOST record,
			       * AUX truncation): count in addr */
	PTD_EV_TSX,           /* transactional state change */
	PTD_EV_PTWRITE,       /* PTWRITE payload in addr */
	PTD_EV_POWER,         /* power events (mwait, pwre, pwrx, exstop) */
};

/* Instruction classes (same meaning as libipt's enum pt_insn_class). */
enum ptd_insn_class {
	PTD_IC_UNKNOWN = 0,
	PTD_IC_OTHER,
	PTD_IC_CALL,
	PTD_IC_RETURN,
	PTD_IC_JUMP,
	PTD_IC_COND_JUMP,
	PTD_IC_FAR_CALL,      /* syscall, sysenter, int, far call */
	PTD_IC_FAR_RETURN,    /* sysret, iret, far ret */
	PTD_IC_FAR_JUMP,
	PTD_IC_PTWRITE,
	PTD_IC_IND_CALL,      /* refinements where known */
	PTD_IC_IND_JUMP,
};

enum ptd_exec_mode {
	PTD_MODE_UNKNOWN = 0,
	PTD_MODE_16,
	PTD_MODE_32,
	PTD_MODE_64,
	PTD_MODE_ARM32,
	PTD_MODE_THUMB,
	PTD_MODE_A64,
};

enum ptd_event_flags {
	PTD_EVF_TIME_VALID = 1u << 0,   /* .time is meaningful */
	PTD_EVF_IP_SUPPRESSED = 1u << 1,/* the event's IP is not known */
	PTD_EVF_SPECULATIVE = 1u << 2,
	PTD_EVF_TRUNCATED = 1u << 3,    /* instruction spans two images */
	PTD_EVF_STATUS = 1u << 4,       /* status update (e.g. after PSB) */
	PTD_EVF_RESYNCED = 1u << 5,     /* PTD_EV_ERROR/GAP: decoding goes on
					 * at the next IP packet (or past a bad
					 * one in place), not at the next PSB
					 * (PTD_OPEN_RESYNC_ON_ERROR); an
					 * error's addr is that packet's trace
					 * offset */
};

struct ptd_event {
	uint16_t kind;        /* enum ptd_event_kind */
	uint8_t iclass;       /* enum ptd_insn_class (PTD_EV_INSN) */
	uint8_t mode;         /* enum ptd_exec_mode */
	uint8_t size;         /* instruction size in bytes */
	uint8_t raw[15];      /* instruction bytes */
	uint32_t flags;       /* enum ptd_event_flags */
	int32_t error;        /* PTD_EV_ERROR: enum ptd_error */
	int32_t cpu;          /* -1 when unknown */
	int32_t pid, tid;     /* -1 when unknown */
	uint32_t queue;       /* index of the trace queue (0..n-1) */
	uint64_t ip;          /* instruction or event address */
	uint64_t addr;        /* second address or value (see kinds) */
	uint64_t time;        /* perf clock ns (PTD_EVF_TIME_VALID) */
	uint64_t tsc;         /* raw timestamp counter, 0 if none */
	uint64_t offset;      /* trace offset of the packet in the queue's
			       * byte stream (errors, gaps, events) */
	const char *msg;      /* PTD_EV_ERROR/GAP/LOST: what and why; valid
			       * until the next ptd_next() */
	uint32_t image;       /* PTD_EV_INSN: id of the image version the
			       * bytes came from (0 unknown): the same
			       * (ip, image) always means the same code */
};

/* Returns 0 and fills *ev with the next event, PTD_ERR_END at the end, or
 * another negative error when decoding cannot go on at all.  Decode errors
 * that the decoder recovers from are events (PTD_EV_ERROR), not return
 * values. */
PTD_API int ptd_next(struct ptd_session *s, struct ptd_event *ev);

/* The disassembly (Intel syntax, as capstone writes it) of the PTD_EV_INSN
 * event ptd_next() just returned (ev), kept by the decoder from when it
 * classified the instruction, so a text view need not disassemble each new
 * instruction a second time.  Returns the text's length (>= 0) with the
 * text in buf (truncated to len - 1), or PTD_ERR_UNSUPPORTED when the
 * decoder has none (--decoder=libipt, CoreSight, events that are not
 * instructions, blocks decoded before the first call unless the session
 * was opened with PTD_OPEN_INSN_TEXT): disassemble ev->raw then.  The
 * first call makes the decoder keep text from then on. */
PTD_API int ptd_insn_text(struct ptd_session *s, const struct ptd_event *ev,
			  char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Disassembly of instruction events                                   */
/* ------------------------------------------------------------------ */

/* A disassembler for the instructions of any execution mode an event can
 * carry (x86 16/32/64-bit, A32, T32, A64).  Not thread-safe: one per
 * thread; distinct objects are independent. */
struct ptd_disasm;

enum ptd_disasm_flags {
	PTD_DISASM_ATT = 1u << 0,   /* x86 AT&T syntax (default: Intel) */
};

struct ptd_disasm_opts {
	size_t sz;            /* sizeof(struct ptd_disasm_opts) */
	unsigned int flags;   /* enum ptd_disasm_flags */
};

/* Returns 0 with a new object in *out, or PTD_ERR_NOMEM / PTD_ERR_INVAL.
 * opts may be NULL. */
PTD_API int ptd_disasm_new(struct ptd_disasm **out, const struct ptd_disasm_opts *opts);
PTD_API void ptd_disasm_free(struct ptd_disasm *d);

/* Text of an instruction event (ev->raw, ev->size, ev->ip, ev->mode) as
 * "mnemonic operands".  Returns its length (>= 0) with the text in buf,
 * or PTD_ERR_DECODE when the bytes are no valid instruction (buf then
 * holds "(bad)"), PTD_ERR_INVAL for bad arguments. */
PTD_API int ptd_disasm_text(struct ptd_disasm *d, const struct ptd_event *ev,
			    char *buf, size_t len);

/* The length in bytes of the first instruction in ev->raw (ev->size bytes
 * available), or PTD_ERR_DECODE when they are no valid instruction,
 * PTD_ERR_INVAL for bad arguments. */
PTD_API int ptd_disasm_length(struct ptd_disasm *d, const struct ptd_event *ev);

/* What an instruction event's branch is, beyond ev->iclass. */
struct ptd_branch_info {
	int indirect;         /* the target comes from a register or memory */
	int has_target;       /* target is known from the bytes (direct) */
	uint64_t target;
};

/* Returns 0 with *bi filled (all zero for an instruction that is not a
 * branch), or PTD_ERR_DECODE / PTD_ERR_INVAL. */
PTD_API int ptd_disasm_branch(struct ptd_disasm *d, const struct ptd_event *ev,
			      struct ptd_branch_info *bi);

/* A run of instructions executed one after the other, the unit of the fast
 * interface below.  Kept small (16 bytes) because traces hold billions of
 * them: the count is here, everything else comes from ptd_block_info(). */
struct ptd_block {
	const void *priv;     /* library-internal */
	uint32_t ninsn;       /* number of instructions */
	uint32_t ctx;         /* library-internal */
};

struct ptd_block_info {
	uint64_t ip;          /* first instruction; the others follow in
			       * memory without gaps */
	uint64_t time;        /* perf clock ns, 0 if unknown */
	int32_t pid, tid, cpu;
	uint32_t queue;
	uint8_t mode;         /* enum ptd_exec_mode */
	uint8_t last_iclass;  /* enum ptd_insn_class of the last instruction */
	uint32_t image;       /* image version id (see struct ptd_event) */
};

/* Fast interface: hands out the next run of blocks (*blocks points into
 * the library and stays valid until the next call), stopping early when a
 * non-instruction event comes next.  Returns 0 with *n >= 0 blocks and,
 * when such an event followed them, *have_ev = 1 and *ev filled;
 * PTD_ERR_END at the end; or another negative error.  Do not mix with
 * ptd_next() on one session.  With a time window (time_start/time_end)
 * every block is one instruction, since the window is decided per
 * instruction. */
PTD_API int ptd_next_blocks(struct ptd_session *s,
			    const struct ptd_block **blocks, size_t *n,
			    struct ptd_event *ev, int *have_ev);

/* Where and when a block ran.  Valid for blocks of the last call. */
PTD_API int ptd_block_info(const struct ptd_session *s,
			   const struct ptd_block *b, struct ptd_block_info *info);

/* The i-th instruction (0 <= i < b->ninsn) of a block as a PTD_EV_INSN
 * event.  Returns 0 or PTD_ERR_INVAL. */
PTD_API int ptd_block_insn(const struct ptd_session *s,
			   const struct ptd_block *b, uint32_t i,
			   struct ptd_event *ev);

/* ------------------------------------------------------------------ */
/* Samples and their callchains                                        */
/* ------------------------------------------------------------------ */

/* The SAMPLE records of a perf.data (or of a capture directory's), with
 * their callchains: context markers taken out, and the user part of a
 * deferred callchain (a PERF_CONTEXT_USER_DEFERRED marker and cookie in
 * the sample, the frames in a later PERF_RECORD_CALLCHAIN_DEFERRED of the
 * same thread) stitched on as perf does: every sample of that thread
 * naming the cookie, taken before the deferred record, gets its frames.
 * Independent of ptd_open: a file with samples and no trace reads too. */
struct ptd_samples;

struct ptd_samples_opts {
	size_t sz;            /* sizeof(struct ptd_samples_opts) */
	unsigned int flags;   /* none yet */
};

/* Whose frame a callchain entry is (the context marker in front of it). */
enum ptd_frame_ctx {
	PTD_FRAME_UNKNOWN = 0, /* no marker before it */
	PTD_FRAME_KERNEL,
	PTD_FRAME_USER,
	PTD_FRAME_HV,
	PTD_FRAME_GUEST,
	PTD_FRAME_GUEST_KERNEL,
	PTD_FRAME_GUEST_USER,
};

enum ptd_sample_flags {
	/* the callchain's user part came from a CALLCHAIN_DEFERRED record
	 * (deferred_time, cookie) */
	PTD_SAMPLE_STITCHED = 1u << 0,
	/* the user part was deferred and never came (task exited, record
	 * lost): the callchain holds the kernel part only */
	PTD_SAMPLE_DEFERRED_MISSING = 1u << 1,
	/* the callchain did not fit in its record, or a deferred marker had
	 * no cookie: left out (callchain_nr 0) */
	PTD_SAMPLE_CALLCHAIN_BAD = 1u << 2,
	/* the callchain (or its deferred user part) holds an entry at or
	 * above PERF_CONTEXT_MAX that names no context: perf takes it as
	 * corrupt and shows none of it, so it is left out (callchain_nr 0) */
	PTD_SAMPLE_CALLCHAIN_CORRUPT = 1u << 3,
};

struct ptd_branch_entry {
	uint64_t from, to;
	uint64_t flags;       /* perf_branch_entry's bits: mispred, predicted,
			       * in_tx, abort, cycles, type */
};

struct ptd_sample {
	size_t sz;            /* sizeof(struct ptd_sample) */
	uint64_t time;        /* perf clock ns, 0 if not recorded */
	int32_t cpu, pid, tid;/* -1 when not recorded */
	uint64_t ip;
	uint64_t period;
	uint64_t id;          /* event id (which attr) */
	uint32_t cpumode;     /* record misc & 7: 1 kernel, 2 user, ... */
	uint32_t flags;       /* enum ptd_sample_flags */
	const char *comm;     /* thread name when the sample was read, or "" */
	const char *event;    /* the event's name ("cpu-clock"), or "" */
	/* addresses innermost first, context markers left out (as perf
	 * script lists them), with each one's context */
	const uint64_t *callchain;
	const uint8_t *callchain_ctx;   /* enum ptd_frame_ctx per entry */
	size_t callchain_nr;
	uint64_t cookie;      /* deferred user part: its cookie */
	uint64_t deferred_time; /* PTD_SAMPLE_STITCHED: the record's time */
	const struct ptd_branch_entry *branches;
	size_t nbranches;
	/* pointers stay valid until ptd_samples_close */
};

struct ptd_samples_stats {
	size_t sz;                   /* sizeof(struct ptd_samples_stats) */
	uint64_t samples;            /* SAMPLE records read */
	uint64_t callchains;         /* of them with a callchain */
	uint64_t deferred_samples;   /* callchains with a deferred user part */
	uint64_t stitched;           /* ... that got it */
	uint64_t deferred_missing;   /* ... whose deferred record never came */
	uint64_t deferred_records;   /* CALLCHAIN_DEFERRED records read */
	uint64_t deferred_unmatched; /* ... no sample pointed at */
	uint64_t cookies_reused;     /* ... whose thread and cookie an
				      * earlier one had already */
	uint64_t callchains_bad;     /* callchains longer than their record */
	uint64_t records_bad;        /* SAMPLE/CALLCHAIN_DEFERRED records too
				      * short to read at all: skipped */
	uint64_t branch_stacks;      /* samples with a branch stack */
	uint64_t lost_samples;       /* LOST_SAMPLES counts, and LOST (records
				      * of any kind lost) */
	uint64_t callchains_corrupt; /* callchains with an entry at or above
				      * PERF_CONTEXT_MAX naming no context */
};

/* Reads every sample of path (perf.data, or a capture directory holding
 * one).  *out is set even on failure (unless memory ran out) so that
 * ptd_samples_errmsg() tells why; release it with ptd_samples_close().
 * opts may be NULL. */
PTD_API int ptd_samples_open(struct ptd_samples **out, const char *path,
			     const struct ptd_samples_opts *opts);
PTD_API void ptd_samples_close(struct ptd_samples *sp);
PTD_API const char *ptd_samples_errmsg(const struct ptd_samples *sp);
/* Warnings (deferred records without samples, reused cookies, bad
 * callchains: each kind once, with its count). */
PTD_API size_t ptd_samples_warning_count(const struct ptd_samples *sp);
PTD_API const char *ptd_samples_warning(const struct ptd_samples *sp, size_t i);

/* The next sample in time order: 0, or PTD_ERR_END after the last one.
 * smp->sz must be set. */
PTD_API int ptd_samples_next(struct ptd_samples *sp, struct ptd_sample *smp);
/* Starts the iteration over. */
PTD_API void ptd_samples_rewind(struct ptd_samples *sp);
PTD_API int ptd_samples_get_stats(const struct ptd_samples *sp,
				  struct ptd_samples_stats *st);

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

/* Counters, valid at any time; final after PTD_ERR_END. */
struct ptd_stats {
	size_t sz;                  /* sizeof(struct ptd_stats) */
	uint64_t instructions;
	uint64_t errors;            /* PTD_EV_ERROR events */
	uint64_t gaps;              /* PTD_EV_GAP events */
	uint64_t lost;              /* records/bytes lost, from LOST and
				     * AUX truncation records */
	uint64_t lost_records;      /* PERF_RECORD_LOST + LOST_SAMPLES */
	uint64_t aux_truncated;     /* AUX records with the truncated flag */
	uint64_t aux_partial;
	uint64_t overflows;         /* PTD_EV_OVERFLOW */
	uint64_t trace_bytes;       /* AUX bytes in all queues */
	uint64_t queues;
	uint64_t sideband_records;
	uint64_t truncated;         /* 1: the input file ends inside a record
				     * (killed recording); what it holds was
				     * decoded */
	/* fast decoder: PSB segments, and those decoded by libipt instead */
	uint64_t segments;
	uint64_t segments_libipt;
	uint64_t cpu_unknown;       /* 1: the linked libipt does not know the
				     * Intel PT trace's CPU model (--cpu or
				     * perf.data's CPUID): decoded without
				     * that CPU's errata work-arounds (a
				     * warning says which) */
	uint64_t unsupported_packets; /* Intel PT packets of newer CPUs the
				     * linked libipt does not decode: dropped
				     * (a PTD_EV_LOST with error
				     * PTD_ERR_UNSUPPORTED, addr = how many)
				     * or an error (PTD_EV_ERROR with it) */
	/* the Intel PT IP filters decoded with (as in ptd_open_opts) */
	uint8_t addr_cfg[4];
	uint64_t addr_a[4], addr_b[4];
	uint64_t resyncs;           /* errors after which decoding went on at
				     * the next IP packet, not the next PSB
				     * (PTD_OPEN_RESYNC_ON_ERROR) */
	/* snapshot-mode AUX (perf record -S): AUXTRACE snapshots, bytes of
	 * them skipped as the snapshot before holds them (not in
	 * trace_bytes), and snapshots that do not continue the one before
	 * (trace lost between them: a warning each, with the bytes skipped
	 * up to the PSB decoding starts over at) */
	uint64_t snapshots;
	uint64_t snapshot_overlap_bytes;
	uint64_t snapshot_gaps;
	/* queues whose events ptd_next hands out merged in one timeline
	 * (time order, docs/ARCHITECTURE.md "One timeline"); 0: one queue,
	 * or queue after queue (PTD_OPEN_PER_QUEUE, PTD_OPEN_COUNT_ONLY, no
	 * timestamps, CoreSight), where a thread that ran on several CPUs
	 * has its flow cut into pieces, one per queue */
	uint64_t merged_queues;
	/* the merged timeline's clock fallback: queues whose Intel PT
	 * packets perf's timing rules could not be followed through to
	 * their last event (no PSB in the trace, a packet
	 * the clock does not follow, a decode error, overflow or gap, ...),
	 * and the events of theirs handed out from there, timed and ordered
	 * by the decoder's own timestamps (their times and order across CPUs
	 * may differ from perf script's; a warning per queue, added to the
	 * session's warnings while decoding) */
	uint64_t clock_fallback_queues;
	uint64_t clock_fallback_events;
	/* CoreSight -j N: pieces of a trace buffer (runs of packets from an
	 * A-sync) decoded ahead on another thread, and of those redone in
	 * order as the decoder's state at the join was not the one the
	 * piece reached (docs/ARCHITECTURE.md, "The fast ETMv4 path") */
	uint64_t pieces_ahead;
	uint64_t pieces_redone;
};

PTD_API int ptd_get_stats(const struct ptd_session *s, struct ptd_stats *st);

/* How far the decode has come: *done of the *total trace bytes (the
 * queues' bytes, as stats.trace_bytes) lie behind what was handed out.
 * Cheap enough to call often.  Returns 0, or PTD_ERR_UNSUPPORTED when
 * the decoder does not know (*done is then 0). */
PTD_API int ptd_get_progress(const struct ptd_session *s, uint64_t *done,
			     uint64_t *total);

/* Symbol for an address in the context of a pid (-1: kernel/any).  ELF
 * files give their .symtab and .dynsym symbols and those of their separate
 * debug file (by build id in search_path, /usr/lib/debug and ~/.debug, else
 * by .gnu_debuglink with its CRC checked).
 * Writes "name" into buf and the offset from its start into *off.
 * Returns 0, or PTD_ERR_NO_IMAGE when no symbol is known. */
PTD_API int ptd_symbolize(struct ptd_session *s, int pid, uint64_t addr,
			  char *buf, size_t len, uint64_t *off);

/* Name of the image (file, [vdso], bpf_prog_..., ...) that holds addr at
 * the session's current decode time. */
PTD_API const char *ptd_image_name(struct ptd_session *s, int pid,
				   uint64_t addr);

/* Source file:line for an address, when debug information is available:
 * BPF and JIT line info, else the DWARF of the ELF file's separate debug
 * file (the one ptd_symbolize takes its symbols from), or the file's own
 * DWARF when it has no debug file with DWARF.  Returns 0 and fills
 * file/line, or PTD_ERR_NO_IMAGE. */
PTD_API int ptd_source_line(struct ptd_session *s, int pid, uint64_t addr,
			    char *file, size_t len, unsigned int *line);

/* Command name of thread tid (its COMM record, the last one when exec
 * renamed it: at most 15 characters), or NULL when the trace names none. */
PTD_API const char *ptd_thread_name(const struct ptd_session *s, int tid);

/* Textual name of an event kind ("insn", "enabled", ...). */
PTD_API const char *ptd_event_kind_name(int kind);
/* Textual name of an instruction class ("call", "cond", ...). */
PTD_API const char *ptd_iclass_name(int iclass);


/* ------------------------------------------------------------------ */
/* Trace index and cursor (time-travel over a recorded trace)          */
/* ------------------------------------------------------------------ */

/* An index of a session's trace: per thread, in time order, pieces
 * (where each starts: queue, trace offset, instruction number, time; how
 * many instructions it holds; the calls it returns from below its start
 * and those it leaves pushed; a summary of the code it runs), so seeks,
 * steps and stacks never decode from the start and searches for
 * addresses skip the pieces that cannot hit them.  With the fast Intel PT
 * decoder a piece is a thread's part of a PSB segment: the index is built
 * on the session's -j threads, holds about 150 bytes a piece (and the
 * session keeps its copies of segments that straddle two AUXTRACE
 * records, which a linear decode frees as it goes), and the cursor
 * decodes a piece again when it goes there.  Otherwise (libipt,
 * CoreSight, several CPU queues merged into one timeline, a trace the
 * fast decoder leaves to libipt) a thread is one piece, decoded once and
 * kept (about 48 bytes a run and one byte an instruction).  Built from
 * the session: it must be freshly opened and not opened with
 * PTD_OPEN_COUNT_ONLY; it must outlive the index (symbols, source lines,
 * code bytes and the pieces' trace come from it). */
struct ptd_index;

enum ptd_index_flags {
	/* Read the index saved beside the trace when it was saved for this
	 * trace unchanged (size, modification time and a hash of its
	 * start; docs/FORMATS.md "Trace index files"), else build it and
	 * save it there (pieces of PSB segments only).  Needs .trace. */
	PTD_INDEX_FILE = 1u << 0,
};

struct ptd_index_opts {
	size_t sz;                 /* sizeof(struct ptd_index_opts) */
	unsigned int flags;        /* enum ptd_index_flags */
	const char *trace;         /* the path the session was opened on */
	const char *file;          /* the index file (NULL: TRACE.ptdidx) */
};

/* Returns 0 with the index in *out, or a negative error with the message
 * in ptd_errmsg(s).  opts may be NULL. */
PTD_API int ptd_index_build(struct ptd_index **out, struct ptd_session *s,
			    const struct ptd_index_opts *opts);
PTD_API void ptd_index_free(struct ptd_index *ix);

struct ptd_index_thread {
	int32_t tid, pid;
	uint64_t instructions;     /* instructions of the thread */
	uint64_t positions;        /* instructions + stops (errors, gaps) */
	uint64_t stops;            /* decode errors, gaps and overflows */
	uint64_t first_time, last_time; /* perf clock ns, 0 unknown */
};

struct ptd_index_stats {
	size_t sz;                 /* sizeof(struct ptd_index_stats) */
	uint64_t pieces;
	uint64_t bytes;            /* memory of the index (its file's payload) */
	uint64_t instructions;
	int redecoded;             /* pieces are decoded again on demand */
	int loaded, saved;         /* read from / written to the index file */
	const char *file_error;    /* why the file was not read or written
				    * (NULL: no problem), valid while the
				    * index lives */
};

/* Fills *st (set st->sz first).  Returns 0 or PTD_ERR_INVAL. */
PTD_API int ptd_index_get_stats(const struct ptd_index *ix,
				struct ptd_index_stats *st);

/* Number of threads with trace, and the i-th (in order of first
 * appearance).  ptd_index_thread returns 0 or PTD_ERR_INVAL. */
PTD_API size_t ptd_index_thread_count(const struct ptd_index *ix);
PTD_API int ptd_index_thread(const struct ptd_index *ix, size_t i,
			     struct ptd_index_thread *t);

/* Events the index could not give a thread (a stop with no tid on a queue
 * that had not run a thread yet): counted, not placed. */
PTD_API uint64_t ptd_index_unplaced(const struct ptd_index *ix);

/* A position in one thread's execution: an instruction about to execute,
 * or a stop (a decode error, gap or overflow between two instructions).
 * Positions are numbered 0..positions-1 in time order; instruction
 * numbers count the thread's instructions only. */
struct ptd_cursor;

enum ptd_cursor_flags {
	/* ptd_cursor_stack gives each inlined function around a frame's pc
	 * (DWARF DW_TAG_inlined_subroutine) a frame of its own, as gdb
	 * shows them: functions named and lined from the DWARF */
	PTD_CURSOR_INLINE_FRAMES = 1u << 0,
};

struct ptd_cursor_opts {
	size_t sz;                 /* sizeof(struct ptd_cursor_opts) */
	unsigned int flags;        /* enum ptd_cursor_flags */
};

/* Opens a cursor on thread tid at its first position.  Returns 0,
 * PTD_ERR_INVAL (no such thread in the index) or PTD_ERR_NOMEM.  Any
 * number of cursors may share an index; a cursor is not thread-safe. */
PTD_API int ptd_cursor_open(struct ptd_cursor **out, struct ptd_index *ix,
			    int32_t tid, const struct ptd_cursor_opts *opts);
PTD_API void ptd_cursor_close(struct ptd_cursor *c);

/* Moves to instruction number n (PTD_ERR_END: past the last one, the
 * cursor does not move), to the first position at or after time t
 * (PTD_ERR_END: none), or to position p. */
PTD_API int ptd_cursor_seek_insn(struct ptd_cursor *c, uint64_t n);
PTD_API int ptd_cursor_seek_time(struct ptd_cursor *c, uint64_t t);
PTD_API int ptd_cursor_seek_pos(struct ptd_cursor *c, uint64_t p);

/* Moves delta positions forwards (> 0) or backwards (< 0).  Returns 0, or
 * PTD_ERR_END when the first or last position was reached before
 * (the cursor then stands there). */
PTD_API int ptd_cursor_step(struct ptd_cursor *c, int64_t delta);

/* What ptd_cursor_find looks for (any of them). */
enum ptd_find_what {
	/* an instruction in one of the address ranges executes */
	PTD_FIND_ADDR = 1u << 0,
	/* source line file:line is entered (the instruction before was
	 * not on it); file may be a path's last components ("a.c") */
	PTD_FIND_LINE = 1u << 1,
	/* the source line differs from the one at the start (an
	 * instruction with line information) */
	PTD_FIND_LINE_CHANGE = 1u << 2,
	/* the call depth is below the depth at the start: forwards, the
	 * instruction the current function returns to; backwards, the call
	 * that entered it */
	PTD_FIND_DEPTH_BELOW = 1u << 3,
	/* reported only: a stop (decode error, gap, overflow); the search
	 * always stops at one */
	PTD_FIND_STOP = 1u << 4,
	/* a statement of another source line than the one at the start
	 * begins: a row of the DWARF line table at the address has
	 * is_stmt (where line steps stop) */
	PTD_FIND_STMT_CHANGE = 1u << 5,
};

struct ptd_addr_range {
	uint64_t start, end;       /* [start, end) */
};

struct ptd_find_opts {
	size_t sz;                 /* sizeof(struct ptd_find_opts) */
	unsigned int what;         /* enum ptd_find_what */
	int backward;              /* search towards the start */
	const struct ptd_addr_range *ranges; /* PTD_FIND_ADDR */
	size_t nranges;
	const char *file;          /* PTD_FIND_LINE */
	unsigned int line;
	/* Matches count only at call depths <= start depth + max_depth
	 * (step over: 0); ignored unless PTD_FIND_MAX_DEPTH is in what. */
	int max_depth;
};
#define PTD_FIND_MAX_DEPTH (1u << 8)

/* Moves at least one position in the search's direction, to the first
 * position that matches, and sets *found to what matched there (enum
 * ptd_find_what).  Returns 0, or PTD_ERR_END when the last (first)
 * position was reached without a match: the cursor stands there and
 * *found is 0. */
PTD_API int ptd_cursor_find(struct ptd_cursor *c, const struct ptd_find_opts *f,
			    unsigned int *found);

/* Where the cursor stands. */
struct ptd_cursor_pos {
	uint64_t pos;              /* position number */
	uint64_t insn;             /* instruction number (of a stop: the next
				    * instruction's) */
	int stop;                  /* 1: a stop; ev is the error/gap event */
	int32_t depth;             /* call depth relative to the thread's
				    * first instruction */
	struct ptd_event ev;       /* PTD_EV_INSN (ip, size, raw, iclass,
				    * mode, image, time, cpu, pid, tid,
				    * queue) or the stop's event; ev.msg is
				    * valid while the index lives */
};

PTD_API int ptd_cursor_get(struct ptd_cursor *c, struct ptd_cursor_pos *p);

enum ptd_frame_flags {
	/* frames older than the trace: nothing else of it is known */
	PTD_FRAME_BEFORE_TRACE = 1u << 0,
	/* function, file and line are known */
	PTD_FRAME_HAS_SYMBOL = 1u << 1,
	PTD_FRAME_HAS_LINE = 1u << 2,
	/* the call that entered the frame is in the trace */
	PTD_FRAME_HAS_CALL = 1u << 3,
	/* (PTD_CURSOR_INLINE_FRAMES) an inlined function's frame: the next
	 * frame holds it at the same pc, and has the call site as its line
	 * (PTD_FRAME_CALLS_INLINED); the physical frame's call fields are
	 * the outermost one's */
	PTD_FRAME_INLINED = 1u << 4,
	PTD_FRAME_CALLS_INLINED = 1u << 5,
	/* an inlined frame whose pc is where its code is entered (gdb shows
	 * the caller at the call site there after a step) */
	PTD_FRAME_INLINE_ENTRY = 1u << 6,
	/* a signal trampoline's frame (gdb's "<signal handler called>"):
	 * the frame before it is a signal handler entered asynchronously
	 * (pc 0: where the handler returns is not known yet), or, frame 0,
	 * the trampoline itself once the handler returned (x86 Linux) */
	PTD_FRAME_SIGNAL = 1u << 7,
};

struct ptd_frame {
	uint32_t flags;            /* enum ptd_frame_flags */
	int32_t pid;
	uint64_t pc;               /* frame 0: the cursor's instruction; a
				    * caller: its call instruction; a frame
				    * a signal interrupted (the one after a
				    * PTD_FRAME_SIGNAL): where it resumes */
	uint64_t call_site;        /* the call that entered this frame */
	uint64_t return_addr;      /* where that call returns to */
	uint64_t call_pos;         /* position number of that call */
	char function[128];        /* symbol of pc */
	uint64_t function_off;     /* pc's offset from it */
	char file[256];            /* source of pc */
	unsigned int line;
};

/* The code bytes at addr in the thread's address space as they were at
 * the cursor's time (the image store's version then).  Returns how many
 * bytes were read into buf (0 < n <= len; fewer where known code ends),
 * or PTD_ERR_NO_IMAGE when no code is known at addr then. */
PTD_API int ptd_cursor_read_code(struct ptd_cursor *c, uint64_t addr,
				 void *buf, size_t len);

/* The call stack at the cursor, innermost first, ending with one frame
 * PTD_FRAME_BEFORE_TRACE (what called the oldest traced frame is not in the
 * trace).  Fills up to max frames; *n is how many there are in all.
 * Returns 0 or a negative error. */
PTD_API int ptd_cursor_stack(struct ptd_cursor *c, struct ptd_frame *frames,
			     size_t max, size_t *n);

/* Source lines as a debugger steps them (DWARF line tables, libdw): the
 * line-table entry around an address, and the addresses of a source line
 * for a breakpoint. */
struct ptd_line_range {
	uint64_t start, end;       /* the entry: [start, end); end 0 unknown */
	unsigned int line;
	int is_stmt;               /* the entry begins a statement */
	/* the function around addr (0: unknown): [func_start, func_end),
	 * and where stepping into it stops (past a frame-pointer prologue) */
	uint64_t func_start, func_end, func_body;
	char file[256];
	char function[128];        /* its name in the DWARF ("": none) */
};

/* The entry holding addr in pid's address space at the time of the last
 * lookup (cursor moves set it).  Consecutive rows of one line collapse as
 * gdb collapses them; a row that is not a statement yields to a statement
 * row at its address.  Returns 0, or PTD_ERR_NO_IMAGE (no line there). */
PTD_API int ptd_line_range(struct ptd_session *s, int pid, uint64_t addr,
			   struct ptd_line_range *r);

/* The addresses where a breakpoint on file:line stops in pid's images
 * (file: a path or its last components): the statement entries of that
 * line, the lowest one per lexical block, a function's opening line past
 * its frame-pointer prologue; up to max in addrs, *n how many in all.
 * Without code on that line, the next line that has some; *found_line is
 * the line of the lowest address (the line after a skipped prologue; 0:
 * none).  Returns 0 or a negative error. */
PTD_API int ptd_line_addrs(struct ptd_session *s, int pid, const char *file,
			   unsigned int line, uint64_t *addrs, size_t max,
			   size_t *n, unsigned int *found_line);

/* The addresses where a breakpoint on function name stops in pid's
 * images: each function of that name in the DWARF, at its entry or past
 * its frame-pointer prologue, and each place it is inlined (as gdb's
 * break); up to max in addrs, *n how many in all (0:
 * none has DWARF).  Returns 0 or a negative error. */
PTD_API int ptd_func_addrs(struct ptd_session *s, int pid, const char *name,
			   uint64_t *addrs, size_t max, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* PTDECODE_H */
