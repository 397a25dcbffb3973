/* SPDX-License-Identifier: MIT */
#include "fastpt.h"
#include "fastpt_internal.h"
#include "fastpt_pool.h"
#include "fastpt_scan.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Fallback: libipt decodes the rest of a queue                        */

/* Switches queue qi to libipt's decoder, run from the queue's start so
 * that its state is exactly the reference path's, skipping the
 * instructions (and the events before them) already handed out. */
static int ref_start(struct fast_backend *fb, size_t qi)
{
	struct fqueue *fq = &fb->queues[qi];
	int rc;

	fq->failed = 1;
	rc = intelpt_new(&fb->p, &fq->q, 1, fb->st, fb->sb, &fb->ref,
			 fb->errmsg, sizeof(fb->errmsg));
	if (rc)
		return rc;
	fb->ref_queue = qi;
	fb->ref_skip = fq->emitted;
	fq->tail_skipped = 0;
	return 0;
}

/* Whether ev, past the instructions already handed out, is one of the
 * events the walk handed out after them (the kinds in order; libipt's
 * other events in between, which the walk does not report, go out). */
static int ref_repeats(struct fqueue *fq, const struct ptd_event *ev)
{
	if (ev->kind == PTD_EV_INSN) {
		fq->tail_skipped = fq->ntail;
		return 0;
	}
	if (fq->tail_skipped < fq->ntail && ev->kind == fq->tail[fq->tail_skipped]) {
		fq->tail_skipped++;
		return 1;
	}
	return 0;
}

/* Next event of the reference decoder; at its end, the queue's remaining
 * segments are dropped. */
static int ref_next(struct fast_backend *fb, struct ptd_event *ev)
{
	for (;;) {
		int rc = fb->ref->next(fb->ref, ev);

		if (rc == PTD_ERR_END) {
			fb->ref->destroy(fb->ref);
			fb->ref = NULL;
			while (fb->out_seg < fb->nsegs &&
			       fb->order[fb->out_seg]->queue == fb->ref_queue) {
				pool_wait_segment(fb, fb->out_seg);
				pool_advance(fb);
			}
			return PTD_ERR_END;
		}
		if (rc < 0)
			return rc;
		ev->queue = (uint32_t)fb->ref_queue;
		if (fb->ref_skip) {
			if (ev->kind == PTD_EV_INSN)
				fb->ref_skip--;
			continue;
		}
		if (ref_repeats(&fb->queues[fb->ref_queue], ev))
			continue;
		return 0;
	}
}

/* ------------------------------------------------------------------ */
/* Hand-out of the segments' outputs, in trace order                   */

/* Events and instructions of seg's queue handed out: what libipt repeats
 * if the queue falls back (ref_repeats). */
static void note_out(struct fast_backend *fb, const struct segment *seg,
		     uint64_t ninsn, const struct ptd_event *ev)
{
	struct fqueue *fq = &fb->queues[seg->queue];

	if (ninsn)
		fq->ntail = 0;
	if (ev && fq->ntail < FQ_TAIL_MAX)
		fq->tail[fq->ntail++] = ev->kind;
}

/* Whether ev is a thread switch to the thread the queue's events already
 * name.  A segment's walk starts without knowing the thread the segments
 * before it ended in, and reports the one it finds as a switch; libipt,
 * decoding the queue in one piece, reports only changes. */
static int same_thread(struct fast_backend *fb, const struct segment *seg,
		       const struct ptd_event *ev)
{
	struct fqueue *fq = &fb->queues[seg->queue];

	if (ev->kind != PTD_EV_SWITCH)
		return 0;
	if (ev->pid == fq->ev_pid && ev->tid == fq->ev_tid)
		return 1;
	fq->ev_pid = ev->pid;
	fq->ev_tid = ev->tid;
	return 0;
}

/* Waits for the consumer's segment seg.  Returns 0, 1 when it fell back
 * (libipt decodes the rest of its queue now), or a negative PTD_ERR_*. */
static int start_segment(struct fast_backend *fb, const struct segment *seg)
{
	int rc;

	pool_wait_segment(fb, fb->out_seg);
	fb->out_started = 1;
	if (!seg->fallback)
		return 0;
	rc = ref_start(fb, seg->queue);
	return rc ? rc : 1;
}

/* Count-only: the instructions of seg up to its next event (at most
 * limit, 0: no limit), or that event.  Returns 1 with one handed out, 2
 * when an event was dropped (same_thread), 0 when seg is done (the
 * consumer moved past it). */
static int next_counts(struct fast_backend *fb, struct segment *seg, uint64_t *ninsn,
		       uint64_t limit, struct ptd_event *ev, int *have_ev)
{
	/* counts between the events; the records are scratch */
	uint64_t cum = fb->out_ev < seg->nevents ? seg->evpos[fb->out_ev].cum : seg->ninsn;

	if (cum > fb->out_cum) {
		*ninsn = cum - fb->out_cum;
		if (limit && *ninsn > limit)
			*ninsn = limit;  /* the caller stops here */
		fb->out_cum += *ninsn;
		note_out(fb, seg, *ninsn, NULL);
		return 1;
	}
	if (fb->out_ev < seg->nevents) {
		*ev = seg->events[fb->out_ev++];
		ev->queue = seg->queue;
		if (same_thread(fb, seg, ev))
			return 2;
		*have_ev = 1;
		note_out(fb, seg, 0, ev);
		return 1;
	}
	pool_advance(fb);
	return 0;
}

/* The caller stops after limit instructions of the run from record
 * `from`: the run ends inside it, its last block cut short (the records
 * are ours, and this segment is not read again).  Returns the run's
 * end. */
static size_t cut_run(struct segment *seg, size_t from, uint64_t limit)
{
	uint64_t got = 0;
	size_t k = from;

	while (got + seg->recs[k].ninsn < limit)
		got += seg->recs[k++].ninsn;
	seg->recs[k].ninsn = (uint32_t)(limit - got);
	return k + 1;
}

/* The next event of seg, or the run of block records up to it (or to the
 * end).  Returns 1 with one handed out, 2 when an event was dropped
 * (same_thread), 0 when seg is done. */
static int next_records(struct fast_backend *fb, struct segment *seg,
			const struct ptd_block **blocks, size_t *n, uint64_t *ninsn,
			uint64_t limit, struct ptd_event *ev, int *have_ev)
{
	size_t end;

	if (fb->out_pos >= seg->nrecs) {
		/* the caller is done with this segment's records */
		pool_advance(fb);
		return 0;
	}
	if (fb->out_ev < seg->nevents && seg->evpos[fb->out_ev].rec == fb->out_pos) {
		*ev = seg->events[fb->out_ev++];
		ev->queue = seg->queue;
		fb->out_pos++;
		if (same_thread(fb, seg, ev))
			return 2;
		*have_ev = 1;
		note_out(fb, seg, 0, ev);
		return 1;
	}
	if (fb->out_ev < seg->nevents) {
		end = seg->evpos[fb->out_ev].rec;
		*ninsn = seg->evpos[fb->out_ev].cum - fb->out_cum;
	} else {
		end = seg->nrecs;
		*ninsn = seg->ninsn - fb->out_cum;
	}
	if (limit && *ninsn > limit) {
		end = cut_run(seg, fb->out_pos, limit);
		*ninsn = limit;
	}
	fb->out_cum += *ninsn;
	note_out(fb, seg, *ninsn, NULL);
	*blocks = &seg->recs[fb->out_pos];
	*n = end - fb->out_pos;
	fb->out_pos = end;
	return 1;
}

/* Reference mode under ptd_next_blocks, which hands out instructions
 * only in blocks: the reference decoder's instruction events become
 * blocks of one (the session answers block_info and block_insn for
 * them), or only their count; at most limit of them (0: no limit).
 * Returns 1 with blocks, a count or an event handed out, 0 when the
 * reference decoder ended with nothing more, or a negative error (kept
 * for the next call when blocks come before it). */
static int ref_blocks(struct fast_backend *fb, const struct ptd_block **blocks,
		      size_t *n, uint64_t *ninsn, uint64_t limit,
		      struct ptd_event *ev, int *have_ev)
{
	uint64_t got = 0;

	*blocks = fb->ref_blk;
	while (fb->ref && got < FASTPT_REF_BLOCKS && (!limit || got < limit)) {
		struct ptd_event *slot = &fb->ref_ev[fb->count_only ? 0 : got];
		int rc = ref_next(fb, slot);

		if (rc < 0 && rc != PTD_ERR_END) {
			if (!got)
				return rc;
			fb->ref_err = rc;
			break;
		}
		if (rc < 0)
			break;  /* ended: the segments of other queues follow */
		if (slot->kind != PTD_EV_INSN) {
			*ev = *slot;
			*have_ev = 1;
			break;
		}
		if (!fb->count_only) {
			fb->ref_blk[got].priv = slot;
			fb->ref_blk[got].ninsn = 1;
			fb->ref_blk[got].ctx = BACKEND_CTX_EVENT;
			*n = (size_t)got + 1;
		}
		got++;
	}
	*ninsn = got;
	return got || *have_ev;
}

/* The next run of blocks (or count) up to an event, or that event.  With
 * insn_events (for next()), the reference decoder's instructions come as
 * single events instead. */
static int next_out(struct fast_backend *fb, const struct ptd_block **blocks,
		    size_t *n, uint64_t *ninsn, uint64_t limit,
		    struct ptd_event *ev, int *have_ev, int insn_events)
{
	*n = 0;
	*ninsn = 0;
	*have_ev = 0;
	if (fb->ref_err)
		return fb->ref_err;
	for (;;) {
		struct segment *seg;
		int rc;

		if (fb->ref && insn_events) {
			rc = ref_next(fb, ev);
			if (rc == 0) {
				*have_ev = 1;
				return 0;
			}
			if (rc != PTD_ERR_END)
				return rc;
			continue;
		}
		if (fb->ref) {
			rc = ref_blocks(fb, blocks, n, ninsn, limit, ev, have_ev);
			if (rc)
				return rc < 0 ? rc : 0;
			continue;
		}
		if (fb->out_seg >= fb->nsegs)
			return PTD_ERR_END;
		seg = fb->order[fb->out_seg];
		if (!fb->out_started) {
			rc = start_segment(fb, seg);
			if (rc < 0)
				return rc;
			if (rc)
				continue;
		}
		rc = fb->count_only ? next_counts(fb, seg, ninsn, limit, ev, have_ev) :
		     next_records(fb, seg, blocks, n, ninsn, limit, ev, have_ev);
		if (rc == 1)
			return 0;
	}
}

static int fast_next_blocks(struct backend *base, const struct ptd_block **blocks,
			    size_t *n, uint64_t *ninsn, uint64_t limit,
			    struct ptd_event *ev, int *have_ev)
{
	struct fast_backend *fb = (struct fast_backend *)base;

	if (!fb->pool_started)
		pool_start(fb);
	return next_out(fb, blocks, n, ninsn, limit, ev, have_ev, 0);
}

/* ------------------------------------------------------------------ */
/* Blocks as instructions                                              */


/* Context of a block handed out by the last fast_next_blocks call: it
 * belongs to the consumer's current segment. */
static const struct fctx *block_ctx(const struct fast_backend *fb,
				    const struct ptd_block *blk,
				    const struct segment **segp)
{
	const struct segment *seg;

	if (fb->out_seg >= fb->nsegs)
		return NULL;
	seg = fb->order[fb->out_seg];
	if (blk < seg->recs || blk >= seg->recs + seg->nrecs || blk->ctx >= seg->nctx)
		return NULL;
	*segp = seg;
	return &seg->ctxs[blk->ctx];
}

static int fast_block_info(const struct backend *base, const struct ptd_block *blk,
			   struct ptd_block_info *info)
{
	const struct fast_backend *fb = (const struct fast_backend *)base;
	const struct fblock *b = blk->priv;
	const struct segment *seg;
	const struct fctx *c = block_ctx(fb, blk, &seg);

	if (!b || !c)
		return PTD_ERR_INVAL;
	memset(info, 0, sizeof(*info));
	info->ip = b->ip;
	info->time = c->time;
	info->pid = c->pid;
	info->tid = c->tid;
	info->cpu = fb->queues[seg->queue].q.cpu;
	info->queue = seg->queue;
	info->mode = b->mode;
	info->last_iclass = blk->ninsn == b->ninsn ? b->last_iclass : PTD_IC_OTHER;
	info->image = b->image;
	return 0;
}

/* Instruction i of block b with its block's info: one event. */
static void insn_event(const struct fblock *b, const struct ptd_block_info *info,
		       uint32_t i, struct ptd_event *ev)
{
	uint32_t end;

	memset(ev, 0, sizeof(*ev));
	end = i + 1 < b->ninsn ? b->off[i + 1] : b->len;
	ev->kind = PTD_EV_INSN;
	ev->ip = b->ip + b->off[i];
	ev->size = (uint8_t)(end - b->off[i]);
	memcpy(ev->raw, b->bytes + b->off[i], ev->size);
	ev->iclass = i + 1 == b->ninsn ? b->last_iclass : PTD_IC_OTHER;
	ev->mode = b->mode;
	ev->image = b->image;
	ev->cpu = info->cpu;
	ev->pid = info->pid;
	ev->tid = info->tid;
	ev->queue = info->queue;
	if (info->time) {
		ev->time = info->time;
		ev->flags |= PTD_EVF_TIME_VALID;
	}
}

static int fast_block_insn(const struct backend *base, const struct ptd_block *blk,
			   uint32_t i, struct ptd_event *ev)
{
	const struct fblock *b = blk->priv;
	struct ptd_block_info info;

	const struct segment *seg;

	if (!b || i >= blk->ninsn || i >= b->ninsn ||
	    fast_block_info(base, blk, &info))
		return PTD_ERR_INVAL;
	insn_event(b, &info, i, ev);
	ev->tsc = block_ctx((const struct fast_backend *)base, blk, &seg)->tsc;
	return 0;
}

/* The one-event interface on top of blocks.  A consumer taking every
 * instruction (text, JSON) is many times slower than the walk, so pool
 * threads would only run ahead, and their records would reach it from
 * another core's cache: it decodes alone, segment by segment, as at
 * -j1. */
static int fast_next(struct backend *base, struct ptd_event *ev)
{
	struct fast_backend *fb = (struct fast_backend *)base;

	if (!fb->pool_started) {
		fb->nthreads = 0;
		fb->pool_started = 1;
	}

	for (;;) {
		int have_ev, rc;

		while (fb->run_i < fb->run_n) {
			const struct ptd_block *blk = &fb->run[fb->run_i];

			if (fb->insn_i < blk->ninsn) {
				const struct fblock *b = blk->priv;

				/* the block's info once, not per instruction */
				if (!fb->insn_i) {
					const struct segment *seg;

					if (!b || blk->ninsn > b->ninsn ||
					    fast_block_info(base, blk, &fb->run_info))
						return PTD_ERR_INVAL;
					fb->run_tsc = block_ctx(fb, blk, &seg)->tsc;
				}
				insn_event(b, &fb->run_info, fb->insn_i++, ev);
				ev->tsc = fb->run_tsc;
				return 0;
			}
			fb->run_i++;
			fb->insn_i = 0;
		}
		uint64_t cnt;

		rc = next_out(fb, &fb->run, &fb->run_n, &cnt, 0, ev, &have_ev, 1);
		fb->run_i = 0;
		fb->insn_i = 0;
		if (rc < 0)
			return rc;
		if (have_ev)
			return 0;
	}
}

/* The text of the instruction fast_next returned last, when its block
 * kept it.  The first call asks the builders to keep text from now on. */
static int fast_insn_text(struct backend *base, const struct ptd_event *ev,
			  char *buf, size_t len)
{
	struct fast_backend *fb = (struct fast_backend *)base;
	const struct fblock *b;
	const char *t;
	size_t n;

	__atomic_store_n(&fb->keep_text, 1, __ATOMIC_RELAXED);
	if (ev->kind != PTD_EV_INSN || !len || fb->run_i >= fb->run_n || !fb->insn_i)
		return PTD_ERR_UNSUPPORTED;
	b = fb->run[fb->run_i].priv;
	if (!b || !b->text || fb->insn_i > b->ninsn ||
	    b->ip + b->off[fb->insn_i - 1] != ev->ip || b->image != ev->image)
		return PTD_ERR_UNSUPPORTED;
	t = b->text + b->toff[fb->insn_i - 1];
	n = strlen(t);
	if (n >= len)
		n = len - 1;
	memcpy(buf, t, n);
	buf[n] = '\0';
	return (int)n;
}

static uint64_t fast_progress(const struct backend *base)
{
	const struct fast_backend *fb = (const struct fast_backend *)base;
	size_t q = fb->nqueues;
	uint64_t done = 0, in_q = 0;

	if (fb->ref) {
		q = fb->ref_queue;
		in_q = fb->ref->progress(fb->ref);
	} else if (fb->out_seg < fb->nsegs) {
		const struct segment *seg = fb->order[fb->out_seg];

		q = seg->queue;
		in_q = seg->start;
		/* a decoded segment: the share of its instructions handed out */
		if (fb->out_started && seg->ninsn)
			in_q += (uint64_t)((double)(seg->end - seg->start) *
					   (double)fb->out_cum / (double)seg->ninsn);
	}
	for (size_t i = 0; i < q && i < fb->nqueues; i++)
		done += fb->queues[i].q.size;
	return done + in_q;
}

static const char *fast_errmsg(struct backend *base)
{
	return ((struct fast_backend *)base)->errmsg;
}

static void fast_get_stats(const struct backend *base, struct backend_stats *st)
{
	const struct fast_backend *fb = (const struct fast_backend *)base;
	size_t nw = fb->nthreads + 1;

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < nw; i++) {
		st->segments += fb->workers[i].segments;
		st->segments_fallback += fb->workers[i].fallbacks;
		st->blocks_built += fb->workers[i].built;
		st->block_hits += fb->workers[i].hits;
		st->memo_hits += fb->workers[i].memo_hits;
	}
}

/* ------------------------------------------------------------------ */
/* Creation                                                            */

static void fast_destroy(struct backend *base)
{
	struct fast_backend *fb = (struct fast_backend *)base;

	if (!fb)
		return;
	if (fb->ref)
		fb->ref->destroy(fb->ref);
	pool_destroy(fb);
	for (size_t i = 0; i < fb->nqueues; i++) {
		for (size_t j = 0; j < fb->queues[i].nsegs; j++) {
			seg_free_output(&fb->queues[i].segs[j]);
			free(fb->queues[i].segs[j].owned);
		}
		free(fb->queues[i].segs);
	}
	free(fb->order);
	free(fb->queues);
	free(fb);
}

static void set_ops(struct backend *b)
{
	b->next = fast_next;
	b->next_blocks = fast_next_blocks;
	b->insn_text = fast_insn_text;
	b->block_info = fast_block_info;
	b->block_insn = fast_block_insn;
	b->get_stats = fast_get_stats;
	b->progress = fast_progress;
	b->errmsg = fast_errmsg;
	b->destroy = fast_destroy;
}

int fastpt_is(const struct backend *b)
{
	return b && b->destroy == fast_destroy;
}

/* The queues, each cut into segments.  Returns 0 or a negative
 * PTD_ERR_*. */
static int add_queues(struct fast_backend *fb, const struct intelpt_queue *queues,
		      size_t nqueues, unsigned int nthreads)
{
	fb->queues = calloc(nqueues ? nqueues : 1, sizeof(*fb->queues));
	if (!fb->queues)
		return PTD_ERR_NOMEM;
	fb->nqueues = nqueues;
	for (size_t i = 0; i < nqueues; i++) {
		int rc;

		fb->queues[i].q = queues[i];
		fb->queues[i].ev_pid = queues[i].pid;
		fb->queues[i].ev_tid = queues[i].tid;
		rc = scan_queue(&fb->p, &fb->queues[i], (uint32_t)i, nthreads);
		if (rc)
			return rc;
		fb->nsegs += fb->queues[i].nsegs;
	}
	return 0;
}

/* All segments of all queues in output order: queue by queue.  Returns 0
 * or PTD_ERR_NOMEM. */
static int order_segments(struct fast_backend *fb)
{
	size_t k = 0;

	fb->order = calloc(fb->nsegs ? fb->nsegs : 1, sizeof(*fb->order));
	if (!fb->order)
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < fb->nqueues; i++)
		for (size_t j = 0; j < fb->queues[i].nsegs; j++) {
			fb->queues[i].segs[j].ord = k;
			fb->order[k++] = &fb->queues[i].segs[j];
		}
	return 0;
}

int fastpt_new(const struct intelpt_params *p,
	       const struct intelpt_queue *queues, size_t nqueues,
	       struct imgstore *st, const struct sideband *sb,
	       unsigned int nthreads, size_t cache_max, unsigned int flags,
	       struct backend **out, char *err, size_t errlen)
{
	struct fast_backend *fb;
	int rc;

	*out = NULL;
	fb = calloc(1, sizeof(*fb));
	if (!fb)
		return PTD_ERR_NOMEM;
	pool_init(fb);
	set_ops(&fb->base);
	fb->p = *p;
	fb->skl014 = intelpt_skl014(p);
	fb->cache_max = cache_max ? cache_max : BCACHE_MAX_DEFAULT;
	fb->count_only = !!(flags & FASTPT_COUNT_ONLY);
	fb->keep_text = !!(flags & FASTPT_KEEP_TEXT);
	fb->st = st;
	fb->sb = sb;
	if (nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (unsigned)n : 1;
	}
	rc = add_queues(fb, queues, nqueues, nthreads);
	if (!rc)
		rc = order_segments(fb);
	if (!rc)
		rc = pool_create_workers(fb, nthreads);
	if (rc) {
		fast_destroy(&fb->base);
		return rc;
	}
	*out = &fb->base;
	return 0;
}
