/* SPDX-License-Identifier: MIT */
/*
 * backend (stage: backend/) - the interface between a trace decoder (Intel PT on libipt,
 * CoreSight on OpenCSD) and the session that drives it.
 *
 * A backend turns the trace bytes of its queues into ptd_events, reading
 * code through the image store at the time it has reached.  It knows
 * nothing of sinks or of the input format the trace came from.
 */
#ifndef PTD_BACKEND_H
#define PTD_BACKEND_H

#include "ptdecode.h"

/* What a backend counts for ptd_get_stats; zero where it counts nothing. */
struct backend_stats {
	uint64_t segments;          /* parts of the trace decoded on their own */
	uint64_t segments_fallback; /* of those, decoded by the reference
				     * decoder instead */
	/* a block-caching decoder's caches: blocks decoded from code, blocks
	 * found in the cache, runs replayed from the run memo (for
	 * benchmarks and debugging) */
	uint64_t blocks_built, block_hits, memo_hits;
	/* a merged timeline's queues keyed by the decoder's own times once
	 * perf's timing could not be followed (queuemerge.h), and the
	 * events handed out so */
	uint64_t clock_fallback_queues, clock_fallback_events;
	/* CoreSight: pieces of units decoded ahead on another thread, and
	 * of those redone in order as the states at the join differed */
	uint64_t pieces_ahead, pieces_redone;
};

/* ptd_block.ctx of a block of one instruction event (see next_blocks) */
#define BACKEND_CTX_EVENT UINT32_MAX

struct backend {
	/* Fills *ev with the next event: 0, PTD_ERR_END, or a negative
	 * error when nothing more can be decoded.  ev->msg may point into
	 * the backend and stays valid until the next call. */
	int (*next)(struct backend *b, struct ptd_event *ev);
	/* Optional fast interface (see ptd_next_blocks); NULL when the
	 * backend only produces single events.  A run holds at most limit
	 * instructions (0: no limit; its last block may be cut short). */
	int (*next_blocks)(struct backend *b, const struct ptd_block **blocks,
			   size_t *n, uint64_t *ninsn, uint64_t limit,
			   struct ptd_event *ev, int *have_ev);
	/* For blocks from next_blocks: their context and instructions.
	 * A block whose ctx is BACKEND_CTX_EVENT is one instruction whose
	 * priv is its struct ptd_event: the session answers for it. */
	int (*block_info)(const struct backend *b, const struct ptd_block *blk,
			  struct ptd_block_info *info);
	int (*block_insn)(const struct backend *b, const struct ptd_block *blk,
			  uint32_t i, struct ptd_event *ev);
	/* Optional: the disassembly (Intel syntax) of the instruction event
	 * next() returned last, when the decoder kept it; its length, or
	 * PTD_ERR_UNSUPPORTED. */
	int (*insn_text)(struct backend *b, const struct ptd_event *ev,
			 char *buf, size_t len);
	/* Optional: trace bytes behind the consumer, of all queues in the
	 * order they are decoded (for progress; NULL: not known). */
	uint64_t (*progress)(const struct backend *b);
	/* Optional: fills *st (NULL: the backend counts nothing). */
	void (*get_stats)(const struct backend *b, struct backend_stats *st);
	/* Message for the last failure, "" if none. */
	const char *(*errmsg)(struct backend *b);
	void (*destroy)(struct backend *b);
};

#endif
