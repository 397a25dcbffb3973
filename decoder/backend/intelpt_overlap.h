/* SPDX-License-Identifier: MIT */
/*
 * intelpt_overlap (stage: backend/) - where a snapshot-mode AUX buffer
 * stops repeating the one before it.  In snapshot mode (perf record -S,
 * AUX in overwrite mode) each AUXTRACE record holds the last bytes of the
 * ring at the time of the snapshot, so it usually begins with trace the
 * previous snapshot already holds.  Found as perf's Intel PT decoder
 * finds it (tools/perf/util/intel-pt-decoder/intel-pt-decoder.c,
 * intel_pt_find_overlap): b's new trace starts at a PSB; with timestamps,
 * the TSC of the last complete PSB+ of a is looked up among b's PSB+ and
 * the bytes that followed it in a are skipped in b; without, a's tail from
 * one of its PSBs must be b's beginning byte for byte.  Up to 7 trailing
 * zero bytes of a may be perf's padding: where b has other bytes there,
 * they were (intel_pt_find_overlap's adj_for_padding).
 */
#ifndef PTD_INTELPT_OVERLAP_H
#define PTD_INTELPT_OVERLAP_H

#include <stddef.h>
#include <stdint.h>

struct intelpt_overlap {
	size_t start;        /* b's new trace begins at b + start; blen: b
			      * holds nothing new (or no PSB) */
	int consecutive;     /* b + start continues a exactly (no trace lost
			      * between them); else decoding starts over at
			      * the PSB at b + start */
};

/* Compares the previous buffer a with b.  have_tsc: the trace has TSC
 * packets (perf: every intel_pt event has config's tsc bit). */
void intelpt_find_overlap(const uint8_t *a, size_t alen, const uint8_t *b,
			  size_t blen, int have_tsc, struct intelpt_overlap *ov);

#endif
