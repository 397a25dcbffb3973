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
 *   OVF:     tracing off, then the OVF and what follows it;
 *   a packet that does not decode, where the decoder failed: from the
 *   byte after its first one, at the instruction the decoder failed at
 *   (listed already: the splice's first instruction repeats it) or at
 *   the IP the flow went on to after it (libipt 2.1), as perf's decoder
 *   steps over a bad packet and decodes on in sync.
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
	int in_place;         /* resumes at ip after a packet that does not
			       * decode at at: the first instruction
			       * decoded is ip, listed before the error */
};

/* Looks for a resume point in data (size bytes, one queue): a TIP or
 * TIP.PGE at or after trace offset from (the decoder's position at the
 * error), or an OVF at or after ovf_from (its position after the last
 * instruction or event it gave: libipt 2.1 reads packets ahead, an OVF
 * it read but did not report is still to come).  A PSB at or after from
 * comes first: none.  tsc: the decoder's time at the error (0: the last
 * TSC packet's).  err_ip: the instruction the decoder failed at, listed,
 * or the IP the flow went on to (0: none); with RESYNC_BAD_PACKETS a
 * packet at from that does not decode resumes there.
 * how: RESYNC_* flags for the kind of error, as perf's decoder recovers
 * from it.  Returns 1 with *s filled (free s->buf), 0 when there is
 * none, PTD_ERR_NOMEM. */
int intelpt_resync_splice(const struct intelpt_params *p, const uint8_t *data,
			  size_t size, uint64_t from, uint64_t ovf_from,
			  uint64_t tsc, uint64_t err_ip, int how,
			  struct intelpt_splice *s);

/* The FUP IP of the PSB+ that the packet at trace offset at follows (with
 * only timing packets and PADs between its PSBEND and at): 1 with *ip,
 * else 0. */
int intelpt_psb_fup_before(const struct intelpt_params *p, const uint8_t *data,
			   size_t size, uint64_t at, uint64_t *ip);

enum {
	/* the packet at from did not match the flow (libipt's
	 * pte_bad_query): perf's decoder read it when it found so, and
	 * resumes at an IP packet after it */
	RESYNC_READ = 1,
	/* the code could not be read (pte_nomap, pte_bad_insn): perf's
	 * decoder forgets the last IP, so only an IP packet with a full or
	 * sign-extended IP resumes (or the next PSB) */
	RESYNC_NO_LAST_IP = 2,
	/* a packet that does not decode is stepped over by one byte (at
	 * from with err_ip: the resume point), as perf's decoder does;
	 * without it the scan stops there (the next PSB) */
	RESYNC_BAD_PACKETS = 4,
	/* the decoder failed at a packet that does not decode
	 * (pte_bad_packet): with RESYNC_BAD_PACKETS the first one at or
	 * after from is that packet (libipt 2.1's offset is that of the
	 * last packet it read, 2.0's that of the one it failed at) */
	RESYNC_FAILED_AT_BAD = 8,
};

#endif
