/* SPDX-License-Identifier: MIT */
#include "fastpt_pool.h"
#include "fastpt_internal.h"
#include "fastpt_walk.h"

#include <stdio.h>
#include <stdlib.h>

/* Workers take batches of consecutive segments (about 16 KiB of trace):
 * one lock round trip per batch, not per segment.  Small batches and a
 * small window keep the record arrays in flight few (a TNT-dense segment
 * of 4 KiB fills ~200 KB of records; big batches multiply -j2's page
 * faults). */
#define BATCH_BYTES (16u << 10)
#define BATCH_SEGS 4
#define WINDOW_BATCHES 4           /* per thread */

/* Counting, a segment decoded ahead holds only its counts and events, so
 * the window can span this much trace: a thread preempted for a while
 * (by other processes) then does not stop the other one, which with a
 * window of a few batches waits after a few milliseconds. */
#define COUNT_WINDOW_BYTES ((uint64_t)4 << 20)
/* ... unless the segments ahead hold this many events (some 4 MB of
 * them): beyond, the window is the usual few batches */
#define COUNT_WINDOW_EVENTS 32768

/* A recycled record array for seg, if there is one. */
static void take_spare(struct fast_backend *fb, struct segment *seg)
{
	if (fb->nthreads)
		pthread_mutex_lock(&fb->lock);
	if (fb->nspare) {
		fb->nspare--;
		seg->recs = fb->spare[fb->nspare];
		seg->rcap = fb->spare_cap[fb->nspare];
	}
	if (fb->nthreads)
		pthread_mutex_unlock(&fb->lock);
}

/* Dense traces give about 3 blocks per trace byte: the record array is
 * sized once rather than grown by doubling, in powers of two so that
 * recycled arrays fit the next segment (a realloc is an mremap: a TLB
 * flush on every CPU of the process). */
static void size_records(const struct fast_backend *fb, struct segment *seg)
{
	size_t want = 1024;
	struct ptd_block *r;

	while (!fb->count_only && want < (size_t)(seg->end - seg->start) * 3 + 64)
		want *= 2;
	if (seg->rcap >= want)
		return;
	r = realloc(seg->recs, want * sizeof(*r));
	if (r) {
		seg->recs = r;
		seg->rcap = want;
		util_populate(r, want * sizeof(*r));
	}
}

/* Keeps w's block cache bounded: empties it when it grows large, freeing
 * its blocks once the consumer is past every segment pointing at them
 * (seg included). */
static void bound_cache(struct worker *w, const struct segment *seg)
{
	if (w->fb->count_only) {
		/* counting, nothing points at blocks once a walk is done:
		 * freed at once however far ahead the worker is */
		if (w->cache.bytes > w->fb->cache_max)
			bcache_free_chunks(bcache_reset(&w->cache));
		return;
	}
	if (w->retired && __atomic_load_n(&w->fb->out_seg, __ATOMIC_ACQUIRE) > w->retired_upto) {
		bcache_free_chunks(w->retired);
		w->retired = NULL;
	}
	if (w->cache.bytes > w->fb->cache_max && !w->retired) {
		w->retired = bcache_reset(&w->cache);
		w->retired_upto = seg->ord;
	}
}

static void run_segment(struct worker *w, struct segment *seg)
{
	const struct fqueue *fq = &w->fb->queues[seg->queue];

	seg_reset_output(seg);
	seg->fallback = 0;
	if (w->fb->count_only) {
		/* nobody reads the records of a count: the worker's scratch
		 * array, given back below */
		seg->recs = w->scratch;
		seg->rcap = w->scratch_cap;
	} else if (!seg->recs) {
		take_spare(w->fb, seg);
	}
	size_records(w->fb, seg);
	/* a queue ending in a snapshot gap: libipt decodes its last segment
	 * (the gap event says where the flow went on, intelpt.h) */
	if (fq->failed ||
	    (fq->q.end_gap && (size_t)(seg - fq->segs) + 1 == fq->nsegs) ||
	    seg_load(fq, seg) || walk_decode_segment(w, fq, seg)) {
		/* the consumer switches this queue to libipt */
		seg_reset_output(seg);
		seg->fallback = 1;
		w->fallbacks++;
	}
	if (w->fb->count_only) {
		w->scratch = seg->recs;
		w->scratch_cap = seg->rcap;
		seg->recs = NULL;
		seg->rcap = 0;
		seg->nrecs = 0;
	}
	w->segments++;
#ifdef FASTPT_DEBUG
	fprintf(stderr, "seg q%u [%#lx,%#lx) fup=%d %#lx fb=%d insns=%lu\n", seg->queue,
		(unsigned long)seg->start, (unsigned long)seg->end, seg->has_fup,
		(unsigned long)seg->fup_ip, seg->fallback, (unsigned long)seg->ninsn);
#endif
	bound_cache(w, seg);
}

/* Claims the next batch if the window allows (lock held): its first
 * segment in *first, the count returned (0: nothing to take). */
static size_t claim_batch(struct fast_backend *fb, size_t *first)
{
	size_t n = 0;
	uint64_t bytes = 0;

	size_t out = __atomic_load_n(&fb->out_seg, __ATOMIC_ACQUIRE);

	if (fb->next_to_run >= fb->nsegs || fb->next_to_run >= out + fb->window ||
	    (fb->next_to_run >= out + fb->window_min &&
	     __atomic_load_n(&fb->ev_ahead, __ATOMIC_RELAXED) > COUNT_WINDOW_EVENTS))
		return 0;
	*first = fb->next_to_run;
	while (*first + n < fb->nsegs && n < BATCH_SEGS && bytes < BATCH_BYTES) {
		struct segment *seg = fb->order[*first + n];

		bytes += seg->end - seg->start;
		seg->state = 1;
		n++;
	}
	fb->order[*first + n - 1]->batch_end = 1;
	fb->next_to_run = *first + n;
	return n;
}

/* Decodes a claimed batch (called without the lock; returns with it). */
static void run_batch(struct worker *w, size_t first, size_t n)
{
	struct fast_backend *fb = w->fb;
	size_t nev = 0;

	for (size_t i = 0; i < n; i++) {
		run_segment(w, fb->order[first + i]);
		nev += fb->order[first + i]->nevents;
	}
	__atomic_fetch_add(&fb->ev_ahead, nev, __ATOMIC_RELAXED);
	pthread_mutex_lock(&fb->lock);
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&fb->order[first + i]->state, 2, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&fb->cond_done);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct fast_backend *fb = w->fb;

	/* its block tables, here rather than on the caller's thread before
	 * any decoding starts */
	util_populate(w, sizeof(*w));
	pthread_mutex_lock(&fb->lock);
	for (;;) {
		size_t first = 0, n = 0;

		while (!fb->stop && !(n = claim_batch(fb, &first)))
			pthread_cond_wait(&fb->cond_work, &fb->lock);
		if (fb->stop)
			break;
		pthread_mutex_unlock(&fb->lock);
		run_batch(w, first, n);
	}
	pthread_mutex_unlock(&fb->lock);
	return NULL;
}

/* The consumer is one of the decoding threads (-jN: N-1 pool threads and
 * the caller): rather than sleep while a pool thread finishes segment i,
 * it decodes the next batch itself, so N threads decode on N cores with
 * no thread left to preempt them. */
void pool_wait_segment(struct fast_backend *fb, size_t i)
{
	struct segment *seg = fb->order[i];
	struct worker *self = &fb->workers[fb->nthreads];

	if (!fb->nthreads) {
		if (seg->state != 2) {
			run_segment(self, seg);
			seg->state = 2;
		}
		return;
	}
	if (__atomic_load_n(&seg->state, __ATOMIC_ACQUIRE) == 2)
		return;  /* decoded already: no lock */
	pthread_mutex_lock(&fb->lock);
	while (seg->state != 2) {
		size_t first = 0, n = claim_batch(fb, &first);

		if (n) {
			pthread_mutex_unlock(&fb->lock);
			run_batch(self, first, n);
			continue;
		}
		pthread_cond_wait(&fb->cond_done, &fb->lock);
	}
	pthread_mutex_unlock(&fb->lock);
}

/* Decoded and handed out: seg's trace bytes leave our resident set
 * (pieces lie in file order, so this is a moving watermark). */
static void drop_segment_bytes(struct fast_backend *fb, struct segment *seg)
{
	struct fqueue *fq = &fb->queues[seg->queue];
	uintptr_t to;

	if (seg->straddles) {
		seg_unload(seg);
		return;
	}
	to = ((uintptr_t)seg->data + (seg->end - seg->start)) & ~(uintptr_t)4095;
	if (fq->dropped && to > fq->dropped + (1u << 20)) {
		fqueue_drop_pages(fq, (const uint8_t *)fq->dropped, to - fq->dropped);
		fq->dropped = to;
	} else if (!fq->dropped) {
		fq->dropped = (uintptr_t)seg->data & ~(uintptr_t)4095;
	}
}

/* Keeps seg's record array for a later segment. */
static void recycle_records(struct fast_backend *fb, struct segment *seg)
{
	if (!seg->recs)
		return;  /* counting: no lock round trip per segment */
	if (fb->nthreads)
		pthread_mutex_lock(&fb->lock);
	if (fb->nspare < SPARE_MAX) {
		fb->spare[fb->nspare] = seg->recs;
		fb->spare_cap[fb->nspare++] = seg->rcap;
		seg->recs = NULL;
		seg->rcap = 0;
	}
	if (fb->nthreads)
		pthread_mutex_unlock(&fb->lock);
}

void pool_advance(struct fast_backend *fb)
{
	struct segment *seg = fb->order[fb->out_seg];
	int wake = fb->nthreads && seg->batch_end;

	fb->queues[seg->queue].emitted += seg->ninsn;
	if (fb->nthreads)
		__atomic_fetch_sub(&fb->ev_ahead, seg->nevents, __ATOMIC_RELAXED);
	drop_segment_bytes(fb, seg);
	recycle_records(fb, seg);
	seg_free_output(seg);
	__atomic_store_n(&fb->out_seg, fb->out_seg + 1, __ATOMIC_RELEASE);
	fb->out_pos = 0;
	fb->out_ev = 0;
	fb->out_cum = 0;
	fb->out_started = 0;
	if (wake) {
		/* a batch is consumed: room in the window for workers */
		pthread_mutex_lock(&fb->lock);
		pthread_cond_broadcast(&fb->cond_work);
		pthread_mutex_unlock(&fb->lock);
	}
}

void pool_start(struct fast_backend *fb)
{
	unsigned i;

	for (i = 0; i < fb->nthreads; i++)
		if (pthread_create(&fb->threads[i], NULL, worker_main, &fb->workers[i]))
			break;
	fb->nthreads = i;
	fb->pool_started = 1;
}

void pool_init(struct fast_backend *fb)
{
	pthread_mutex_init(&fb->lock, NULL);
	pthread_cond_init(&fb->cond_done, NULL);
	pthread_cond_init(&fb->cond_work, NULL);
}

int pool_create_workers(struct fast_backend *fb, unsigned int nthreads)
{
	size_t nw;

	/* the caller decodes too: N threads are N-1 pool threads and it */
	fb->nthreads = nthreads - 1;
	/* segments decoded ahead of the consumer: a few batches a thread */
	fb->window = WINDOW_BATCHES * BATCH_SEGS * nthreads;
	fb->window_min = fb->window;
	if (fb->count_only && fb->nsegs) {
		uint64_t bytes = 0;

		for (size_t i = 0; i < fb->nsegs; i++)
			bytes += fb->order[i]->end - fb->order[i]->start;
		/* COUNT_WINDOW_BYTES of trace, at the average segment size */
		if (bytes / fb->nsegs &&
		    COUNT_WINDOW_BYTES / (bytes / fb->nsegs) > fb->window)
			fb->window = (size_t)(COUNT_WINDOW_BYTES / (bytes / fb->nsegs));
	}
	nw = fb->nthreads + 1;  /* the last worker is the caller's */
	fb->workers = calloc(nw, sizeof(*fb->workers));
	if (!fb->workers)
		return PTD_ERR_NOMEM;
	/* the caller's block tables; each pool thread populates its own */
	util_populate(&fb->workers[fb->nthreads], sizeof(*fb->workers));
	for (size_t i = 0; i < nw; i++) {
		fb->workers[i].fb = fb;
		fbuilder_init(&fb->workers[i].build, fb->st, &fb->keep_text);
	}
	if (fb->nthreads) {
		fb->threads = calloc(fb->nthreads, sizeof(*fb->threads));
		if (!fb->threads)
			return PTD_ERR_NOMEM;
	}
	return 0;
}

/* Tells the pool threads to stop and waits for them. */
static void pool_stop(struct fast_backend *fb)
{
	pthread_mutex_lock(&fb->lock);
	fb->stop = 1;
	pthread_cond_broadcast(&fb->cond_work);
	pthread_mutex_unlock(&fb->lock);
	for (unsigned i = 0; i < fb->nthreads; i++)
		pthread_join(fb->threads[i], NULL);
}

void pool_destroy(struct fast_backend *fb)
{
	if (fb->threads && fb->pool_started)
		pool_stop(fb);
	free(fb->threads);
	if (fb->workers) {
		size_t nw = fb->nthreads + 1;

		for (size_t i = 0; i < nw; i++) {
			bcache_free(&fb->workers[i].cache);
			free(fb->workers[i].scratch);
			bcache_free_chunks(fb->workers[i].retired);
			fbuilder_free(&fb->workers[i].build);
		}
		free(fb->workers);
	}
	pthread_mutex_destroy(&fb->lock);
	pthread_cond_destroy(&fb->cond_done);
	pthread_cond_destroy(&fb->cond_work);
	for (int i = 0; i < fb->nspare; i++)
		free(fb->spare[i]);
}
