/* SPDX-License-Identifier: MIT */
/*
 * fastpt_segment - the fast Intel PT decoder's segments and their outputs
 * (backend stage, backend/fastpt/).
 *
 * A queue is cut at its PSBs into segments (fastpt_scan.h), each decoded
 * on its own by a worker into its output: a run of records, each a block
 * (priv = struct fblock, ctx = index into ctxs) or an event (priv = NULL,
 * ctx = index into events).  The consumer hands the outputs out in trace
 * order (fastpt.c) and frees them.
 */
#ifndef PTD_FASTPT_SEGMENT_H
#define PTD_FASTPT_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "intelpt.h"
#include "util.h"

/* Context of blocks: changes rarely (time packets, thread switches). */
struct fctx {
	int32_t pid, tid;
	uint64_t time;            /* perf ns, 0 unknown */
	uint64_t tsc;             /* the TSC it is from (0 unknown): the
				   * timeline's merge key (queuemerge.h) */
};

struct segment {
	uint32_t queue;
	uint64_t start, end;      /* [start, end) in the queue's stream */
	const uint8_t *data;      /* its bytes: in a piece, or in owned;
				   * NULL while one that straddles pieces
				   * is not loaded (seg_load) */
	uint8_t *owned;           /* the loaded copy of one that straddles */
	int straddles;            /* its bytes span two or more pieces */
	int has_fup;              /* its PSB+ holds a FUP: tracing on */
	uint64_t fup_ip;
	int has_tsc;              /* its PSB+ holds a TSC */
	uint64_t tsc;
	int has_tma;              /* ... and a TMA (MTC is on) */

	/* output, filled by a worker */
	struct ptd_block *recs;
	size_t nrecs, rcap;
	struct fctx *ctxs;
	size_t nctx, ccap;
	struct ptd_event *events;
	size_t nevents, ecap;
	struct evpos { size_t rec; uint64_t cum; } *evpos; /* per event: its
				    * record and the instructions before it */
	size_t pcap;
	uint64_t ninsn;            /* instructions in recs */
	int fallback;
	int state;                 /* 0 queued, 1 running, 2 done (under the
				    * backend's lock) */
	int batch_end;             /* last segment of a worker's batch */
	size_t ord;                /* its index in the output order */
};

#define FQ_TAIL_MAX 32

struct fqueue {
	struct intelpt_queue q;
	struct segment *segs;
	size_t nsegs;
	volatile int failed;      /* a segment fell back: libipt decodes the
				   * rest, workers may skip its segments */
	uintptr_t dropped;        /* pages below this are out of our RSS */
	uint64_t emitted;         /* instructions handed out so far */
	/* kinds of the events handed out after its last instruction (the
	 * first FQ_TAIL_MAX): libipt, run up to there, gives them again */
	uint16_t tail[FQ_TAIL_MAX];
	unsigned ntail, tail_skipped;
	/* the thread the events handed out last named (libipt's, which
	 * reports a switch only when it changes) */
	int32_t ev_pid, ev_tid;
	/* every PSB+ has a TSC and none a TMA: MTC is off (the processor
	 * sends a TMA after the TSC of each PSB+ when it is on) */
	int no_mtc;
};

/* Room for one more record.  Returns 0 or -1 (memory). */
static inline int seg_grow_recs(struct segment *s)
{
	return util_grow((void **)&s->recs, &s->rcap, s->nrecs + 1, sizeof(*s->recs));
}

/* Appends an event record: the event, zeroed, for the caller to fill; or
 * NULL when out of memory. */
struct ptd_event *seg_push_event(struct segment *s);

/* Empties the output, keeping its arrays. */
void seg_reset_output(struct segment *s);

/* Empties the output and frees its arrays. */
void seg_free_output(struct segment *s);

/* Copies the bytes [start, end) of fq's stream into buf, across its
 * pieces.  Returns 0, or PTD_ERR_CORRUPT when the pieces leave a hole. */
int fqueue_copy(const struct fqueue *fq, uint64_t start, uint64_t end, uint8_t *buf);

/* Makes s->data point at its bytes: a segment that straddles pieces is
 * copied into s->owned when it is about to be decoded (never at open:
 * copies of all of them would make memory grow with the trace).
 * Returns 0 or a negative PTD_ERR_*. */
int seg_load(const struct fqueue *fq, struct segment *s);

/* Frees the copy seg_load made, if any. */
void seg_unload(struct segment *s);

/* Drops the file pages of [start, end) of fq's stream (in whichever
 * pieces hold them, with the pages they share with the bytes around
 * them) from our resident set. */
void fqueue_drop_range(const struct fqueue *fq, uint64_t start, uint64_t end);

/* Drops the pages of [p, p+len) of fq's bytes from our resident set: the
 * trace is a read-only file mapping, so they come back from the page
 * cache if needed.  Keeps memory independent of the trace's size. */
void fqueue_drop_pages(const struct fqueue *fq, const uint8_t *p, size_t len);

#endif
