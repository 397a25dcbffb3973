/* SPDX-License-Identifier: MIT */
/*
 * dyntext (stage: timeline/) - names and source lines of dynamic text: BPF JIT images (from a
 * capture directory's bpf/ and text/), user-space JIT code (jitdump files
 * and perf-PID.map files written by JIT runtimes).
 *
 * Every piece of dynamic text is a range with a time window, like the image
 * store: a BPF program's address is reused by later programs, and a JIT
 * rewrites functions in place.  Lookups name (pid, address, time) and get
 * the range valid then.  time = IMGSTORE_TIME_UNKNOWN answers only when a
 * single range ever covered the address (else IMGSTORE_AMBIGUOUS);
 * with a time, the valid range with the latest start of validity wins (a
 * jitdump or BPF range over a perf-map name).
 *
 * Typical use by a session:
 *
 *   struct dyntext *dt = dyntext_new();
 *   dyntext_load_bpf(dt, "cap.ptd", ts, err, sizeof(err));   // warn on < 0
 *   dyntext_load_jitdump(dt, "jit-123.dump", st, syms, NULL, err, ...);
 *   dyntext_load_perfmap(dt, "perf-123.map", -1, st, syms, err, ...);
 *   ...
 *   dyntext_srcline(dt, pid, ip, time, file, sizeof(file), &line);
 *
 * Loaders are "partial": on bad input they stop at the first error and
 * return it (with a message naming file, line or offset) but keep
 * everything they read before it (a JIT killed while writing leaves a cut-off jitdump; one bad
 * bpf/<id>.tsv must not hide the others).  A caller may warn and go on.
 *
 * Not thread-safe (lookups sort lazily after loads).
 */
#ifndef PTD_DYNTEXT_H
#define PTD_DYNTEXT_H

#include <stddef.h>
#include <stdint.h>

struct dyntext;
struct imgstore;
struct symtab;
struct textstore;

/* NULL when out of memory. */
struct dyntext *dyntext_new(void);
void dyntext_free(struct dyntext *dt);

/* ---- BPF ------------------------------------------------------------ */

/* Reads every DIR/bpf/<prog_id>.tsv (written by ptcapture, see
 * capture/ptcapture/bpfinfo.h): JIT images, BTF func_info names and line
 * records (jited_line_info address + file, line, column, source text; the
 * BTF strings were resolved at capture time, so DIR/bpf/<id>.btf is not
 * needed here).  Time windows come from the text store index rows of kind
 * bpf / bpf-subprog (prog_id, valid_from, valid_to, KSYMBOL name): ts when
 * the caller has the store open, else DIR/text is read (a capture without
 * one is fine).  An image in a .tsv that no index row covers is taken as
 * valid all the time, named by its BTF function name.
 * Returns 0 (also when DIR/bpf does not exist) or the first failure. */
int dyntext_load_bpf(struct dyntext *dt, const char *capture_dir,
		     struct textstore *ts, char *err, size_t errlen);

/* Reads one program's .tsv (the above, for one file; also for tests). */
int dyntext_load_bpf_tsv(struct dyntext *dt, const char *path,
			 char *err, size_t errlen);

/* ---- user-space JIT ------------------------------------------------- */

/* How jitdump timestamps become perf-clock ns.  A dump's header flag
 * JITDUMP_FLAGS_ARCH_TIMESTAMP says its times are TSC values: they are
 * converted with the perf_event_mmap_page parameters (time_zero +
 * (tsc >> shift) * mult + ((tsc & mask) * mult >> shift)), which the
 * caller must give (have_tsc), else the load fails with
 * PTD_ERR_UNSUPPORTED.  Otherwise times are CLOCK_MONOTONIC ns (what
 * perf's agents write), and perf time = mono + mono_offset: 0 when the
 * trace was recorded with clockid CLOCK_MONOTONIC (ptcapture; `perf record
 * -k mono`), which is what jitdump users must do anyway.
 * NULL opts = all zero; an older, shorter struct (smaller sz) is fine. */
struct dyntext_jit_opts {
	size_t sz;              /* sizeof(struct dyntext_jit_opts) */
	int64_t mono_offset;
	int have_tsc;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	/* When set, replaces all of the above: maps a dump timestamp (as
	 * written, TSC or CLOCK_MONOTONIC) to perf time, e.g. for a trace
	 * whose clock is simulated (ptsynth). */
	uint64_t (*convert)(void *ctx, uint64_t ts, int is_tsc);
	void *ctx;
};

/* Parses a jitdump file (jit-PID.dump, format of Linux
 * tools/perf/Documentation/jitdump-specification.txt, version 1, same
 * byte order as this machine).  Each JIT_CODE_LOAD becomes an image store
 * version (st: imgstore_add_copy) in the address space of the record's
 * pid, valid from the record's time until a later load (or move) in that
 * pid overlapping its range, else forever (jitdump has no unload record);
 * and a symbol (syms: symtab_add, time-less; may be NULL) and a dyntext
 * range (time-aware names).  JIT_CODE_MOVE copies the moved code's bytes
 * (found by code_index) to the new address and ends the old range.
 * JIT_CODE_DEBUG_INFO entries give source lines of the next load with the
 * same code address.  UNWINDING_INFO and unknown record types are checked
 * for size and skipped; JIT_CODE_CLOSE ends the file.  Returns the number
 * of code loads read (>= 0) or the failure (PTD_ERR_TRUNCATED: the file
 * ends inside a record; PTD_ERR_FORMAT / _CORRUPT / _UNSUPPORTED); the
 * loads before a failure are in st, syms and dt all the same. */
int dyntext_load_jitdump(struct dyntext *dt, const char *path,
			 struct imgstore *st, struct symtab *syms,
			 const struct dyntext_jit_opts *opts,
			 char *err, size_t errlen);

/* Reads a perf map file: lines "START SIZE NAME" (hex, 0x optional).  It
 * gives names but no code: each range becomes a symbol (syms, may be NULL),
 * a dyntext range valid all the time, and, unless a jitdump range already
 * loaded into dt covers it, an image store "missing" range (st may be
 * NULL) so decoding reports a gap naming the reason.  pid < 0: taken from
 * the file name (perf-PID.map).  Returns the number of entries or the
 * first failure.  Load jitdumps first. */
int dyntext_load_perfmap(struct dyntext *dt, const char *path, int32_t pid,
			 struct imgstore *st, struct symtab *syms,
			 char *err, size_t errlen);

/* ---- lookups (BPF: pid = IMGSTORE_KERNEL) ---------------------------- */

enum dyntext_kind {
	DYNTEXT_BPF = 1,        /* BPF program or subprogram JIT image */
	DYNTEXT_JIT = 2,        /* jitdump code load */
	DYNTEXT_PERFMAP = 3,    /* perf map entry (names only) */
};

struct dyntext_sym {
	enum dyntext_kind kind;
	const char *name;       /* KSYMBOL name (bpf_prog_<tag>_<name>), or
				 * the JIT's name */
	const char *func;       /* BPF: BTF function name (func_info), else
				 * NULL; also NULL when unknown */
	uint64_t start, len;
	uint64_t valid_from, valid_to;  /* perf clock; IMGSTORE_FOREVER */
	uint32_t prog_id;       /* BPF program id, 0 when unknown */
	uint64_t code_index;    /* jitdump code_index */
};

struct dyntext_line {
	const char *file;       /* source file name */
	unsigned int line;      /* 0 = compiler-generated, no source line */
	unsigned int col;       /* BPF only, 0 when unknown */
	const char *text;       /* BPF: the source line's text, else NULL */
	uint64_t addr;          /* first code address the record covers */
};

/* The range covering addr at time.  0 with *out (strings valid until
 * the next load or dyntext_free), PTD_ERR_NO_IMAGE (nothing there),
 * IMGSTORE_AMBIGUOUS (several ranges and no time to choose). */
int dyntext_symbol(struct dyntext *dt, int32_t pid, uint64_t addr,
		   uint64_t time, struct dyntext_sym *out);

/* The line record covering addr at time: the one with the greatest code
 * address <= addr inside the same function image.  0 with *out, or
 * PTD_ERR_NO_IMAGE (no range, or a range without line records), or
 * IMGSTORE_AMBIGUOUS (as above).  out->line may be 0. */
int dyntext_line(struct dyntext *dt, int32_t pid, uint64_t addr,
		 uint64_t time, struct dyntext_line *out);

/* Like dyntext_line, copying the file name; a record with line 0 gives
 * PTD_ERR_NO_IMAGE (no source line there, like DWARF's line 0). */
int dyntext_srcline(struct dyntext *dt, int32_t pid, uint64_t addr,
		    uint64_t time, char *file, size_t len, unsigned int *line);

/* dyntext_srcline for kernel BPF addresses. */
int dyntext_bpf_srcline(struct dyntext *dt, uint64_t addr, uint64_t time,
			char *file, size_t len, unsigned int *line);

/* Number of BPF programs read from .tsv files, and of ranges of all
 * kinds (for statistics and tests). */
size_t dyntext_bpf_prog_count(const struct dyntext *dt);
size_t dyntext_range_count(const struct dyntext *dt);

#endif
