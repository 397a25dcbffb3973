/* SPDX-License-Identifier: MIT */
/*
 * intelpt_resync (stage: backend/) - where an Intel PT decode resumes after
 * an error when asked to resynchronise at once (--resync-on-error) rather
 * than at the next PSB.
 *
 * libipt's instruction decoder can only start at a PSB+ (libipt 2.0 and
 * 2.1 have no pt_insn_resync).  So the resume point is found here, at the
 * packet level, and handed to a fresh libipt decoder as a splice: a PSB+
 * written with libipt's encoder that carries what the trace had said
 * since its last PSB (execution mode, CR3, time) and the resume IP,
 * followed by the trace's own bytes up to its next PSB.
 *
 * Decoding resumes at the first packet from the error on that gives the
 * flow a known IP (what perf's decoder also does after an error):
 *   TIP      (IP not suppressed): at its target, as the PSB+'s FUP;
 *   TIP.PGE  (IP not suppressed): tracing off, then that TIP.PGE;
 *   OVF:     tracing off, then the OVF and what follows it.
 * Compressed IPs are completed from the last IP since the PSB.  FUPs are
 * passed over (their TIP follows).  A PSB or the end of the trace first:
 * no splice, the decoder syncs there as usual.
 *
 * The splice ends where the trace's next PSB starts.  The instructions
 * after its last packet that need no trace ran before that PSB up to its
 * FUP's IP, where the decoder that syncs at the PSB takes over.
 */
#ifndef PTD_INTELPT_RESYNC_H
#define PTD_INTELPT_RESYNC_H

#include <stddef.h>
#include <stdint.h>

struct intelpt_params;

struct intelpt_splice {
	uint8_t *buf;         /* PSB+ header, then trace bytes (malloc'd) */
	size_t size;
	size_t hdr;           /* header bytes */
	uint64_t at;          /* trace offset of the packet resumed at */
	uint64_t copy_from;   /* trace offset of buf[hdr] */
	uint64_t end;         /* trace offset where the copy ends (the next
			       * PSB, the end of the trace, or 1 MiB on) */
	uint64_t ip;          /* the IP resumed at (0 for OVF) */
	uint64_t end_ip;      /* the FUP IP of the PSB+ at end: the flow
			       * before it reaches there without trace */
	int have_end_ip;
	int capped;           /* end is 1 MiB on, not a PSB or the end */
};

/* Looks for a resume point in data (size bytes, one queue): a TIP or
 * TIP.PGE at or after trace offset from (the decoder's position at the
 * error), or an OVF at or after ovf_from (its position after the last
 * instruction or event it gave: libipt 2.1 reads packets ahead, an OVF
 * it read but did not report is still to come).  A PSB at or after from
 * comes first: none.  tsc: the decoder's time at the error (0: the last
 * TSC packet's).  Returns 1 with *s filled (free s->buf), 0 when there is
 * none, PTD_ERR_NOMEM. */
int intelpt_resync_splice(const struct intelpt_params *p, const uint8_t *data,
			  size_t size, uint64_t from, uint64_t ovf_from,
			  uint64_t tsc, struct intelpt_splice *s);

#endif
