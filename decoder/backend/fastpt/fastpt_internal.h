/* SPDX-License-Identifier: MIT */
/*
 * fastpt_internal - the state the fast Intel PT decoder's modules share
 * (backend stage, backend/fastpt/): the backend (its queues and segments,
 * the consumer's position, the pool, the reference fallback) and the
 * workers.  Only for fastpt_*.c: the session sees backend.h and fastpt.h.
 *
 * Who writes what: fastpt.c creates the backend and hands outputs out
 * (out_*, ref_*, run*); fastpt_pool.c runs the workers and moves the
 * consumer past segments (threads, lock, next_to_run, spare); a worker's
 * walk (fastpt_walk.c) fills its segment's output and its own cache.
 */
#ifndef PTD_FASTPT_INTERNAL_H
#define PTD_FASTPT_INTERNAL_H

#include <pthread.h>

#include "fastpt.h"
#include "fastpt_blocks.h"
#include "fastpt_build.h"
#include "fastpt_segment.h"

struct worker;

#define SPARE_MAX 128
/* instruction events of the reference decoder per next_blocks call */
#define FASTPT_REF_BLOCKS 256

struct fast_backend {
	struct backend base;
	struct intelpt_params p;
	int skl014;                /* intelpt_skl014(&p) */
	struct imgstore *st;
	const struct sideband *sb;
	struct fqueue *queues;
	size_t nqueues;

	/* all segments of all queues, in output order */
	struct segment **order;
	size_t nsegs;
	size_t next_to_run;        /* next segment a worker takes */
	size_t out_seg, out_pos;   /* consumer position */
	size_t out_ev;             /* next event of out_seg */
	uint64_t out_cum;          /* instructions of out_seg handed out */
	int out_started;           /* out_seg has been waited for */
	/* record arrays of consumed segments, reused (no page faults) */
	struct ptd_block *spare[SPARE_MAX];
	size_t spare_cap[SPARE_MAX];
	int nspare;

	unsigned nthreads;          /* pool threads; the caller decodes too */
	pthread_t *threads;
	struct worker *workers;
	pthread_mutex_t lock;
	pthread_cond_t cond_done, cond_work;
	int stop;
	size_t window;             /* segments in flight ahead of consumer */
	size_t window_min;         /* ... when those hold many events */
	size_t ev_ahead;           /* events of decoded segments not handed
				    * out yet (with pool threads) */
	size_t cache_max;          /* block cache bound per worker, bytes */
	int count_only;            /* hand out counts and events, no blocks */
	int keep_text;             /* set by the first fast_insn_text call:
				    * blocks built after it keep their text */
	int pool_started;          /* pool threads are started on the first
				    * call for blocks, never for ptd_next */

	char errmsg[512];
	/* reference mode: libipt decodes the rest of one queue */
	struct backend *ref;
	size_t ref_queue;
	uint64_t ref_skip;        /* instructions of it already handed out */
	int ref_err;              /* its fatal error, after the blocks before it */
	/* next_blocks in reference mode: its instructions as blocks of one */
	struct ptd_event ref_ev[FASTPT_REF_BLOCKS];
	struct ptd_block ref_blk[FASTPT_REF_BLOCKS];
	/* next(): the run being expanded into instructions */
	const struct ptd_block *run;
	size_t run_n, run_i;
	uint32_t insn_i;
	struct ptd_block_info run_info;  /* of run[run_i], once insn_i > 0 */
	uint64_t run_tsc;                /* and the TSC of its context */
};

/* Per-worker state. */
struct worker {
	uint64_t epoch;
	struct fast_backend *fb;
	struct bcache cache;
	struct fbuilder build;
	uint64_t segments, fallbacks, built, hits, memo_hits;
	/* the run memo's recent lookups and hits, and how many run
	 * boundaries it is left off for when it rarely hits */
	uint32_t memo_tries, memo_found, memo_off;
	/* blocks of a cache emptied while records of segments up to
	 * retired_upto (output order) still pointed at them */
	struct arena_chunk *retired;
	size_t retired_upto;
	/* counting: the record array every segment's walk writes into */
	struct ptd_block *scratch;
	size_t scratch_cap;
	/* a reader's consumer of the records as the walk makes them
	 * (fastpt_seek.h): handed them before they are trimmed away */
	int (*sink)(void *arg, const struct ptd_block *recs, size_t n);
	void *sink_arg;
	int sink_err;
	int sink_ctx_time;         /* FASTPT_SINK_CTX_TIME: lazy clock */
	/* workers sit side by side in an array: keep one's counters off the
	 * cache line of the next one's epoch (false sharing slows -j2
	 * badly) */
	uint8_t pad[128];
};

#endif
