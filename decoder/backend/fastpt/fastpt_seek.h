/* SPDX-License-Identifier: MIT */
/*
 * fastpt_seek - random access to the fast Intel PT decoder's segments
 * (backend stage, backend/fastpt/): any segment decoded on its own, on
 * any thread, without the pool and without touching the backend's
 * segments (the trace index decodes them in parallel to build itself and
 * again to show one piece of it, api/trace_index.h).
 *
 * A segment decodes without the state before it (fastpt.h): a reader
 * copies it and its neighbours (the walk reads the next PSB+'s FUP and
 * TSC and, for cycle-accurate timing, the previous segment's packets)
 * into a window of its own and walks that with its own block cache.
 */
#ifndef PTD_FASTPT_SEEK_H
#define PTD_FASTPT_SEEK_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "fastpt_blocks.h"

struct fastpt_reader;

/* Is b the fast decoder (not wrapped, e.g. in a queue merge)? */
int fastpt_backend_is(const struct backend *b);

/* Segments of all queues in output order (the order the flow comes in),
 * and how many decoding threads the backend was opened with. */
size_t fastpt_nsegments(const struct backend *b);
unsigned int fastpt_nthreads(const struct backend *b);
/* Queue and [start, end) in its stream of segment ord. */
void fastpt_segment_where(const struct backend *b, size_t ord, uint32_t *queue,
			  uint64_t *start, uint64_t *end);

int fastpt_reader_new(struct backend *b, struct fastpt_reader **out);
void fastpt_reader_free(struct fastpt_reader *r);

/* Decodes segment ord.  Returns 0; 1 when the fast walk cannot decode it
 * (the flow there is libipt's, from the queue's start); or
 * PTD_ERR_INVAL / PTD_ERR_NOMEM. */
int fastpt_reader_decode(struct fastpt_reader *r, size_t ord);

/* A record of the last decode: an event (ev != NULL), or a block of
 * ninsn instructions at ip, instruction i at ip + off[i], its size
 * fastpt_rec_size(). */
struct fastpt_rec {
	const struct ptd_event *ev;
	uint64_t ip;
	uint32_t ninsn;
	uint32_t bninsn, blen;    /* the whole block's */
	const uint16_t *off;
	uint8_t last_iclass;      /* of the record's last instruction */
	uint8_t mode;
	uint32_t image;
	uint64_t time;            /* perf ns, 0 unknown */
	int32_t pid, tid, cpu;
	uint32_t queue;
};

static inline unsigned int fastpt_rec_size(const struct fastpt_rec *r, uint32_t i)
{
	return (unsigned int)((i + 1 < r->bninsn ? r->off[i + 1] : r->blen) - r->off[i]);
}

size_t fastpt_reader_nrecs(const struct fastpt_reader *r);
void fastpt_reader_rec(const struct fastpt_reader *r, size_t i,
		       struct fastpt_rec *out);

/* What the index's summaries need of a record, cheaply: an event (ev),
 * or a block's bounds, last instruction and context. */
struct fastpt_brief {
	const struct ptd_event *ev;
	uint64_t ip, last_ip, end;   /* end: after the last instruction */
	uint64_t time;
	int32_t pid, tid;
	uint32_t ninsn;
	uint8_t last_iclass;
};

/* What the index needs of a record blk of the records a decode made
 * (fastpt_reader_decode_sink's): of a block record, all but the context
 * depends on its priv (one per block and decode) and ninsn alone, and
 * the context (time, pid, tid) on its ctx alone: fastpt_reader_ctx. */
void fastpt_reader_brief(const struct fastpt_reader *r,
			 const struct ptd_block *blk, struct fastpt_brief *out);
void fastpt_reader_ctx(const struct fastpt_reader *r, uint32_t ctx,
		       uint64_t *time, int32_t *pid, int32_t *tid);

/* A block record's block as the index's summaries read it, in place
 * (blk->priv of a block record sink is given, blk->ninsn of its
 * instructions): its instruction count, first instruction, last
 * instruction and its class, the end of its code; and a word of the
 * caller's, 0 when the block is made (blocks live in the reader's own
 * cache: one thread writes it). */
static inline uint32_t fastpt_blk_ninsn(const void *b)
{
	return ((const struct fblock *)b)->ninsn;
}

static inline uint64_t fastpt_blk_ip(const void *b)
{
	return ((const struct fblock *)b)->ip;
}

static inline uint64_t fastpt_blk_last_ip(const void *b)
{
	return ((const struct fblock *)b)->end_ip;
}

static inline uint64_t fastpt_blk_end(const void *b)
{
	return ((const struct fblock *)b)->ip + ((const struct fblock *)b)->len;
}

static inline unsigned int fastpt_blk_last_iclass(const void *b)
{
	return ((const struct fblock *)b)->last_iclass;
}

static inline uint32_t *fastpt_blk_mark(const void *b)
{
	return &((struct fblock *)b)->mark;
}

/* Decodes segment ord as fastpt_reader_decode does, handing its records
 * to sink in order as the walk makes them, a few hundred at a time, while
 * they are still in the processor's caches; none are kept (nrecs is 0
 * after).  Within sink, fastpt_reader_ctx and fastpt_reader_brief
 * read the records sink is given.  sink returns 0 or -1 (memory: the
 * decode returns PTD_ERR_NOMEM).  flags FASTPT_SINK_CTX_TIME: the walk
 * runs its clock lazily as count-only decoding does, so a context's time
 * is the flow's where the context starts (a segment's start, each TSC
 * packet and change of thread or address space starts one) and a later
 * block of it may be later; a block's code is the same over its
 * segment's span (fblock_valid), so the context's time reads the same
 * image. */
#define FASTPT_SINK_CTX_TIME 1u
typedef int (*fastpt_sink_fn)(void *arg, const struct ptd_block *recs, size_t n);
int fastpt_reader_decode_sink(struct fastpt_reader *r, size_t ord,
			      fastpt_sink_fn sink, void *arg, unsigned int flags);

/* Drops the last decoded segment's trace pages from the resident set. */
void fastpt_reader_drop(const struct fastpt_reader *r);

/* For decoding every segment in output order, on several readers:
 * segments before ord are done with, so the trace bytes of ord's queue
 * before it leave the resident set, once they add up to a MiB (each
 * page is dropped once; marks: one per queue, zeroed at first). */
size_t fastpt_nqueues(const struct backend *b);
void fastpt_drop_done(const struct backend *b, size_t ord, uint64_t *marks);

#endif
