/* SPDX-License-Identifier: MIT */
#include "fastpt_segment.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct ptd_event *seg_push_event(struct segment *s)
{
	if (util_grow((void **)&s->events, &s->ecap, s->nevents + 1, sizeof(*s->events)) ||
	    util_grow((void **)&s->evpos, &s->pcap, s->nevents + 1, sizeof(*s->evpos)) ||
	    (s->nrecs == s->rcap && seg_grow_recs(s)))
		return NULL;
	s->evpos[s->nevents].rec = s->nrecs;
	s->evpos[s->nevents].cum = s->ninsn;
	s->recs[s->nrecs].priv = NULL;
	s->recs[s->nrecs].ninsn = 0;
	s->recs[s->nrecs].ctx = (uint32_t)s->nevents;
	s->nrecs++;
	memset(&s->events[s->nevents], 0, sizeof(s->events[0]));
	return &s->events[s->nevents++];
}

void seg_reset_output(struct segment *s)
{
	s->nrecs = 0;
	s->nevents = 0;
	s->nctx = 0;
	s->ninsn = 0;
}

void seg_free_output(struct segment *s)
{
	seg_reset_output(s);
	free(s->recs);
	free(s->events);
	free(s->ctxs);
	free(s->evpos);
	s->recs = NULL;
	s->events = NULL;
	s->ctxs = NULL;
	s->evpos = NULL;
	s->rcap = s->ecap = s->ccap = s->pcap = 0;
}

void fqueue_drop_pages(const struct fqueue *fq, const uint8_t *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)4095;

	if (fq->q.file_backed && e > a)
		madvise((void *)a, e - a, MADV_DONTNEED);
}

/* The first piece of fq that ends past off (pieces are in offset order). */
static size_t piece_at(const struct fqueue *fq, uint64_t off)
{
	size_t lo = 0, hi = fq->q.npieces;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fq->q.pieces[mid].offset + fq->q.pieces[mid].size <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int fqueue_copy(const struct fqueue *fq, uint64_t start, uint64_t end, uint8_t *buf)
{
	uint64_t done = 0, len = end - start;

	if (!fq->q.npieces) {
		if (end > fq->q.size || !fq->q.data)
			return PTD_ERR_CORRUPT;
		memcpy(buf, fq->q.data + start, len);
		return 0;
	}
	for (size_t i = piece_at(fq, start); i < fq->q.npieces && done < len; i++) {
		const struct intelpt_piece *pc = &fq->q.pieces[i];
		uint64_t from = start + done, e = pc->offset + pc->size, take;

		if (from < pc->offset || from >= e)
			break;  /* a hole between pieces */
		take = e - from < len - done ? e - from : len - done;
		memcpy(buf + done, pc->data + (from - pc->offset), take);
		done += take;
	}
	return done == len ? 0 : PTD_ERR_CORRUPT;
}

int seg_load(const struct fqueue *fq, struct segment *s)
{
	int rc;

	if (s->data || !s->straddles)
		return s->data ? 0 : PTD_ERR_CORRUPT;
	s->owned = malloc(s->end > s->start ? s->end - s->start : 1);
	if (!s->owned)
		return PTD_ERR_NOMEM;
	rc = fqueue_copy(fq, s->start, s->end, s->owned);
	if (rc) {
		free(s->owned);
		s->owned = NULL;
		return rc;
	}
	s->data = s->owned;
	return 0;
}

void seg_unload(struct segment *s)
{
	if (!s->owned)
		return;
	free(s->owned);
	s->owned = NULL;
	s->data = NULL;
}

/* Drops the pages that hold any of [p, p+len) of a read-only file
 * mapping: rounded outwards, so that the pages pieces share with their
 * neighbours (and the record headers between them) go too; whoever
 * still reads them faults them in again from the page cache. */
static void drop_out(const uint8_t *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;

	if (len)
		madvise((void *)a, e - a, MADV_DONTNEED);
}

void fqueue_drop_range(const struct fqueue *fq, uint64_t start, uint64_t end)
{
	const uint8_t *a0 = NULL, *e0 = NULL;

	if (!fq->q.file_backed)
		return;
	if (!fq->q.npieces) {
		if (fq->q.data && end <= fq->q.size)
			drop_out(fq->q.data + start, (size_t)(end - start));
		return;
	}
	/* pieces that lie one after the other in the file (small AUXTRACE
	 * records) go in one call */
	for (size_t i = piece_at(fq, start); i < fq->q.npieces; i++) {
		const struct intelpt_piece *pc = &fq->q.pieces[i];
		uint64_t a = start > pc->offset ? start : pc->offset;
		uint64_t e = end < pc->offset + pc->size ? end : pc->offset + pc->size;
		const uint8_t *pa = pc->data + (a - pc->offset);

		if (pc->offset >= end)
			break;
		if (e <= a)
			continue;
		if (a0 && pa >= e0 && pa <= e0 + 4096) {
			e0 = pa + (e - a);
			continue;
		}
		if (a0)
			drop_out(a0, (size_t)(e0 - a0));
		a0 = pa;
		e0 = pa + (e - a);
	}
	if (a0)
		drop_out(a0, (size_t)(e0 - a0));
}
