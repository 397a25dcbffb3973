/* SPDX-License-Identifier: MIT */
#include "fastpt_seek.h"
#include "fastpt_internal.h"
#include "fastpt_walk.h"

#include <stdlib.h>
#include <string.h>

/* A reader's block cache is emptied beyond this: one per build thread
 * and per cursor, kept small (blocks are rebuilt from the image store). */
#define READER_CACHE_MAX ((size_t)16 << 20)

struct fastpt_reader {
	struct fast_backend *fb;
	struct worker w;
	/* the window the walk sees: the segment and its neighbours */
	struct fqueue fq;
	struct segment win[3];
	struct segment *seg;      /* in win */
	/* the output arrays, kept from decode to decode */
	struct segment out;
	/* the segment that holds them: the window's during a decode */
	const struct segment *cur;
	/* the bytes of a segment that straddles pieces, copied when it is
	 * decoded (the backend keeps no copies) */
	uint8_t *buf;
	size_t bufcap;
};

int fastpt_backend_is(const struct backend *b)
{
	return fastpt_is(b);
}

size_t fastpt_nsegments(const struct backend *b)
{
	return ((const struct fast_backend *)b)->nsegs;
}

unsigned int fastpt_nthreads(const struct backend *b)
{
	return ((const struct fast_backend *)b)->nthreads + 1;
}

void fastpt_segment_where(const struct backend *b, size_t ord, uint32_t *queue,
			  uint64_t *start, uint64_t *end)
{
	const struct segment *s = ((const struct fast_backend *)b)->order[ord];

	*queue = s->queue;
	*start = s->start;
	*end = s->end;
}

int fastpt_reader_new(struct backend *b, struct fastpt_reader **out)
{
	struct fastpt_reader *r;

	*out = NULL;
	if (!fastpt_is(b))
		return PTD_ERR_INVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return PTD_ERR_NOMEM;
	r->fb = (struct fast_backend *)b;
	r->w.fb = r->fb;
	fbuilder_init(&r->w.build, r->fb->st, &r->fb->keep_text);
	*out = r;
	return 0;
}

void fastpt_reader_free(struct fastpt_reader *r)
{
	if (!r)
		return;
	r->out.owned = NULL;
	seg_free_output(&r->out);
	bcache_free(&r->w.cache);
	fbuilder_free(&r->w.build);
	free(r->buf);
	free(r);
}

/* The input half of a segment: no output arrays. */
static void copy_input(struct segment *d, const struct segment *s)
{
	memset(d, 0, sizeof(*d));
	d->queue = s->queue;
	d->start = s->start;
	d->end = s->end;
	d->straddles = s->straddles;
	d->data = s->straddles ? NULL : s->data;
	d->has_fup = s->has_fup;
	d->fup_ip = s->fup_ip;
	d->has_tsc = s->has_tsc;
	d->tsc = s->tsc;
	d->ord = s->ord;
}

/* The output arrays move between r->out and the window's segment. */
static void take_arrays(struct segment *d, struct segment *s)
{
	d->recs = s->recs;
	d->rcap = s->rcap;
	d->ctxs = s->ctxs;
	d->ccap = s->ccap;
	d->events = s->events;
	d->ecap = s->ecap;
	d->evpos = s->evpos;
	d->pcap = s->pcap;
	s->recs = NULL;
	s->ctxs = NULL;
	s->events = NULL;
	s->evpos = NULL;
	s->rcap = s->ccap = s->ecap = s->pcap = 0;
}

static int decode(struct fastpt_reader *r, size_t ord);

int fastpt_reader_decode(struct fastpt_reader *r, size_t ord)
{
	return decode(r, ord);
}

int fastpt_reader_decode_sink(struct fastpt_reader *r, size_t ord,
			      fastpt_sink_fn sink, void *arg, unsigned int flags)
{
	int rc;

	r->w.sink = sink;
	r->w.sink_arg = arg;
	r->w.sink_err = 0;
	r->w.sink_ctx_time = !!(flags & FASTPT_SINK_CTX_TIME);
	rc = decode(r, ord);
	r->w.sink = NULL;
	r->w.sink_ctx_time = 0;
	if (!rc && !r->w.sink_err)
		r->w.sink_err = sink(arg, r->out.recs, r->out.nrecs);
	r->out.nrecs = 0;
	return rc ? rc : r->w.sink_err ? PTD_ERR_NOMEM : 0;
}

static int decode(struct fastpt_reader *r, size_t ord)
{
	const struct segment *s;
	const struct fqueue *q;
	size_t si, lo, n = 0;
	int rc;

	if (ord >= r->fb->nsegs)
		return PTD_ERR_INVAL;
	s = r->fb->order[ord];
	q = &r->fb->queues[s->queue];
	si = (size_t)(s - q->segs);
	lo = si ? si - 1 : si;
	r->fq = *q;
	for (size_t k = lo; k <= si + 1 && k < q->nsegs; k++)
		copy_input(&r->win[n++], &q->segs[k]);
	r->fq.segs = r->win;
	r->fq.nsegs = n;
	r->fq.failed = 0;
	r->seg = &r->win[si - lo];
	if (r->seg->straddles) {
		size_t len = (size_t)(s->end - s->start);

		if (r->bufcap < len + 1) {
			uint8_t *p = realloc(r->buf, len + 1);

			if (!p)
				return PTD_ERR_NOMEM;
			r->buf = p;
			r->bufcap = len + 1;
		}
		if (fqueue_copy(q, s->start, s->end, r->buf))
			return 1;  /* a hole: the scan checked there is none */
		r->seg->data = r->buf;
	}
	take_arrays(r->seg, &r->out);
	seg_reset_output(r->seg);
	r->cur = r->seg;
	/* room for the segment's records up front, as the pool gives its
	 * workers: a memo replay asks for all of a run's at once */
	{
		size_t want = 1024;

		while (want < (size_t)(s->end - s->start) * 3 + 64)
			want *= 2;
		if (r->seg->rcap < want) {
			struct ptd_block *p = realloc(r->seg->recs, want * sizeof(*p));

			if (!p) {
				take_arrays(&r->out, r->seg);
				r->cur = &r->out;
				return PTD_ERR_NOMEM;
			}
			r->seg->recs = p;
			r->seg->rcap = want;
		}
	}
	/* the last decode's records point into the cache: emptied only
	 * now, between decodes */
	if (r->w.cache.bytes > (r->fb->cache_max / 4 < READER_CACHE_MAX ?
				r->fb->cache_max / 4 : READER_CACHE_MAX))
		bcache_free_chunks(bcache_reset(&r->w.cache));
	rc = walk_decode_segment(&r->w, &r->fq, r->seg);
	r->out.nrecs = r->seg->nrecs;
	r->out.nevents = r->seg->nevents;
	r->out.nctx = r->seg->nctx;
	r->out.ninsn = r->seg->ninsn;
	r->out.queue = r->seg->queue;
	r->out.data = r->seg->data;
	r->out.start = r->seg->start;
	r->out.end = r->seg->end;
	r->out.straddles = r->seg->straddles;
	r->out.owned = NULL;
	take_arrays(&r->out, r->seg);
	r->cur = &r->out;
	if (rc) {
		seg_reset_output(&r->out);
		return 1;
	}
	return 0;
}

size_t fastpt_reader_nrecs(const struct fastpt_reader *r)
{
	return r->out.nrecs;
}

void fastpt_reader_rec(const struct fastpt_reader *r, size_t i,
		       struct fastpt_rec *o)
{
	const struct ptd_block *blk = &r->out.recs[i];
	const struct fblock *b = blk->priv;
	const struct fctx *c;

	o->queue = r->out.queue;
	o->cpu = r->fb->queues[r->out.queue].q.cpu;
	if (!b) {
		memset(o, 0, sizeof(*o));
		o->queue = r->out.queue;
		o->cpu = r->fb->queues[r->out.queue].q.cpu;
		o->ev = &r->out.events[blk->ctx];
		return;
	}
	o->ev = NULL;
	c = &r->out.ctxs[blk->ctx];
	o->ip = b->ip;
	o->ninsn = blk->ninsn;
	o->bninsn = b->ninsn;
	o->blen = b->len;
	o->off = b->off;
	o->last_iclass = blk->ninsn == b->ninsn ? b->last_iclass : PTD_IC_OTHER;
	o->mode = b->mode;
	o->image = b->image;
	o->time = c->time;
	o->pid = c->pid;
	o->tid = c->tid;
}

void fastpt_reader_brief(const struct fastpt_reader *r,
			 const struct ptd_block *blk, struct fastpt_brief *o)
{
	const struct fblock *b = blk->priv;
	const struct fctx *c;
	uint32_t li;

	if (!b) {
		o->ev = &r->cur->events[blk->ctx];
		o->ninsn = 0;
		return;
	}
	o->ev = NULL;
	c = &r->cur->ctxs[blk->ctx];
	o->ninsn = blk->ninsn;
	o->ip = b->ip;
	if (!blk->ninsn)
		return;
	if (blk->ninsn == b->ninsn) {  /* most: no need of the offsets */
		o->last_ip = b->end_ip;
		o->end = b->ip + b->len;
		o->last_iclass = b->last_iclass;
	} else {
		li = blk->ninsn - 1;
		o->last_ip = b->ip + b->off[li];
		o->end = b->ip + b->off[li + 1];
		o->last_iclass = PTD_IC_OTHER;
	}
	o->time = c->time;
	o->pid = c->pid;
	o->tid = c->tid;
}

void fastpt_reader_ctx(const struct fastpt_reader *r, uint32_t ctx,
		       uint64_t *time, int32_t *pid, int32_t *tid)
{
	const struct fctx *c = &r->cur->ctxs[ctx];

	*time = c->time;
	*pid = c->pid;
	*tid = c->tid;
}

/* Reading a file page maps the cached pages around it too (the kernel's
 * fault-around, 64 KiB): a drop reaches this far past the window, so
 * that no page a decode mapped stays behind. */
#define DROP_MARGIN ((uint64_t)128 << 10)

void fastpt_reader_drop(const struct fastpt_reader *r)
{
	uint64_t a, e;

	/* the window's file pages (a copy was read from them too, and the
	 * clock may have run over the segment before) */
	if (!r->fq.nsegs)
		return;
	a = r->fq.segs[0].start;
	a = a > DROP_MARGIN ? a - DROP_MARGIN : 0;
	e = r->out.end + DROP_MARGIN < r->fq.q.size ? r->out.end + DROP_MARGIN :
						      r->fq.q.size;
	fqueue_drop_range(&r->fq, a, e);
}

size_t fastpt_nqueues(const struct backend *b)
{
	return ((const struct fast_backend *)b)->nqueues;
}

void fastpt_drop_done(const struct backend *b, size_t ord, uint64_t *marks)
{
	const struct fast_backend *fb = (const struct fast_backend *)b;
	const struct segment *s = fb->order[ord];
	const struct fqueue *q = &fb->queues[s->queue];
	uint64_t to;

	/* the segments after ord read ord's bytes (their window) and the
	 * kernel maps pages around those they read */
	if (s->start <= DROP_MARGIN)
		return;
	to = s->start - DROP_MARGIN;
	if (to < marks[s->queue] + ((uint64_t)1 << 20))
		return;
	fqueue_drop_range(q, marks[s->queue], to);
	marks[s->queue] = to;
}
