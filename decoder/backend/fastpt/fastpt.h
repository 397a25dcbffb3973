/* SPDX-License-Identifier: MIT */
/*
 * fastpt - the fast Intel PT flow decoder (backend stage, backend/fastpt/):
 * the backend the session creates, and its glue (backend ops, hand-out of
 * the segments' outputs in trace order, fallback to the reference
 * decoder).
 *
 * Each queue is cut at its PSBs into segments (fastpt_scan.c).  A segment
 * starts from nothing the one before left behind (the SDM: only RETs
 * whose CALL was seen since the last PSB are compressed), so segments are
 * decoded independently, in parallel by a pool of workers
 * (fastpt_pool.c), and their outputs are handed out in trace order.
 *
 * A worker walks a segment (fastpt_walk.c) with libipt's packet decoder
 * and a cache of decoded basic blocks (fastpt_blocks.c, built by
 * fastpt_build.c; per worker; a block remembers the time window and
 * address space of the code it was decoded from), consuming TNT bits many
 * at a time, and replays loops through indirect branches from a run memo
 * (fastpt_memo.c).  Anything the walk cannot decode with certainty (any
 * error, overflow, TSX, PTWRITE, power events, paging and VMCS packets,
 * unexpected packet orders)
 * makes the worker throw the segment's output away; the queue is then
 * decoded by libipt's instruction flow decoder from its start, so the
 * instructions and errors equal those of the reference path (intelpt.c).
 */
#ifndef PTD_FASTPT_H
#define PTD_FASTPT_H

#include <stddef.h>
#include "backend.h"
#include "intelpt.h"

struct imgstore;
struct sideband;

enum fastpt_flags {
	FASTPT_COUNT_ONLY = 1u << 0,
	FASTPT_KEEP_TEXT = 1u << 1,
};

/* Creates the backend.  nthreads decoding threads: nthreads - 1 in a pool
 * and the caller's (0: one per online CPU).  cache_max bounds each
 * thread's block cache in bytes (0: 256 MiB).  flags: FASTPT_COUNT_ONLY:
 * next_blocks hands out counts and events, no blocks (the walk keeps no
 * records); FASTPT_KEEP_TEXT: blocks keep their instructions' text from
 * the start (insn_text).  Other arguments as for intelpt_new().  Its
 * get_stats op counts segments, those decoded by libipt, and the block
 * caches' work.  Returns 0 or a negative PTD_ERR_*. */
int fastpt_new(const struct intelpt_params *p,
	       const struct intelpt_queue *queues, size_t nqueues,
	       struct imgstore *st, const struct sideband *sb,
	       unsigned int nthreads, size_t cache_max, unsigned int flags,
	       struct backend **out, char *err, size_t errlen);

/* Is b this backend (for fastpt_seek.h)? */
int fastpt_is(const struct backend *b);

#endif
