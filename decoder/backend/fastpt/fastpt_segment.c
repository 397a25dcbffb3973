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
