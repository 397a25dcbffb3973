/* SPDX-License-Identifier: MIT */
/*
 * kcopy (stage: capture/ptcapture/) - `ptcapture record --kcore[=DIR]`:
 * copies kernel code out of DIR/kcore (default /proc/kcore; format/kcore.h)
 * into the text store, as perf record --kcore copies it into kcore_dir/:
 *   - at the start: the kernel text [_stext, _etext) of DIR/kallsyms, the
 *     module ranges of DIR/modules, and every range the KSYMBOL records
 *     synthesized at the start name (BPF JIT images, trampolines);
 *   - as they come: ranges of later KSYMBOL records that prog info and the
 *     fence do not copy (trampolines, dispatchers, ftrace ops, kprobe
 *     slots: every KSYMBOL but bpf_prog_*), and of TEXT_POKE records (kept
 *     only when kcore holds the record's new bytes: else they changed again
 *     before the copy, and the record's own bytes are what decodes).
 * Each copy is a row (source `kcore`) valid from its record's time (0 for
 * the start) to the first KSYMBOL UNREGISTER of its range; a copy made after
 * that UNREGISTER (its record read late, or a flight-recorder snapshot
 * replaying records) holds whatever came after, and is counted as not
 * copied instead.  A range kcore
 * does not hold, or a kcore that cannot be read, is counted as not copied
 * and named on stderr.  DIR may be a test's directory holding kcore,
 * kallsyms and modules.
 */
#ifndef PTCAP_KCOPY_H
#define PTCAP_KCOPY_H

#include <stddef.h>
#include <stdint.h>

struct kcopy;
struct textmatch;

struct kcopy_counts {
	uint64_t ranges, bytes;  /* copied */
	uint64_t missed;         /* ranges kcore did not hold */
	uint64_t poke_changed;   /* TEXT_POKE ranges changed again before the copy */
};

/* Opens DIR/kcore; when it cannot be read (why in err), every range is
 * counted as not copied.  NULL: out of memory. */
struct kcopy *kcopy_open(const char *dir, char *err, size_t errlen);
int kcopy_readable(const struct kcopy *kc);
void kcopy_free(struct kcopy *kc);
const char *kcopy_path(const struct kcopy *kc);

/* The kernel text and modules, at the start.  Returns 0 or -ENOMEM. */
int kcopy_start(struct kcopy *kc);

/* A KSYMBOL record (time 0: synthesized at the start). */
int kcopy_ksymbol(struct kcopy *kc, uint64_t time, uint64_t addr, uint32_t len,
		  uint16_t type, int unregister, const char *name);

/* A TEXT_POKE record with its new bytes. */
int kcopy_text_poke(struct kcopy *kc, uint64_t time, uint64_t addr,
		    const uint8_t *bytes, uint16_t len);

/* Ends the rows' windows at their unregisters and hands them to tm.
 * Returns 0 or -ENOMEM. */
int kcopy_finish(struct kcopy *kc, struct textmatch *tm);

void kcopy_get_counts(const struct kcopy *kc, struct kcopy_counts *c);

#endif
