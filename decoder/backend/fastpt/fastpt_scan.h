/* SPDX-License-Identifier: MIT */
/*
 * fastpt_scan - the fast Intel PT decoder's PSB scan (backend stage,
 * backend/fastpt/): cuts a queue at its PSBs into segments.
 *
 * The SDM guarantees that only returns whose call was seen since the last
 * PSB are compressed, so a segment decodes without the state before it.
 * The scan touches every page of the trace, serial time -j N could not
 * win back, so a big queue in many pieces (perf.data's AUXTRACE records) is
 * scanned in parts of whole pieces on several threads; the parts'
 * segments are concatenated in order, the same as one scan's.  Scanned
 * pages are dropped from the resident set as the scan goes.
 */
#ifndef PTD_FASTPT_SCAN_H
#define PTD_FASTPT_SCAN_H

#include <stdint.h>

#include "fastpt_segment.h"

/* Fills fq->segs with the segments of fq->q (queue number qi), scanning on
 * up to threads threads: each with its bounds, its PSB+'s FUP and TSC,
 * and its bytes (pointing into a piece, or marked as straddling two:
 * seg_load copies those when they are decoded).
 * Returns 0 or a negative PTD_ERR_*. */
int scan_queue(const struct intelpt_params *p, struct fqueue *fq, uint32_t qi,
	       unsigned int threads);

/* The first PSB pattern (02 82, eight times) in [p, e), as libipt's sync
 * finds it, or NULL. */
const uint8_t *scan_find_psb(const uint8_t *p, const uint8_t *e);

#endif
