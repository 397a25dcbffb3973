/* SPDX-License-Identifier: MIT */
#include "fastpt_scan.h"
#include "fastpt_walk.h"

#include <intel-pt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Parts of a queue to scan on their own: at least SCAN_PART bytes each,
 * at most SCAN_MAX of them.  Nothing else runs during the scan, so at
 * -j N every part scanned beside the first is serial time won back; a
 * part of a few MiB takes milliseconds, a thread's start microseconds. */
#define SCAN_PART ((uint64_t)4 << 20)
#define SCAN_MAX 16

/* Scanned bytes are dropped from the resident set every DROP_EVERY. */
#define DROP_EVERY (8 << 20)

/* The PSBs of pieces [from, to) of a queue: segment starts, in order. */
struct scan {
	const struct intelpt_params *p;
	const struct fqueue *fq;
	uint32_t queue;
	const struct intelpt_piece *pc;
	size_t from, to;
	struct segment *segs;
	size_t nsegs, cap;
	int rc;
	int threaded;
	pthread_t thr;
};

static void queue_pieces(const struct fqueue *fq, const struct intelpt_piece **pc,
			 size_t *n, struct intelpt_piece *whole)
{
	if (fq->q.npieces) {
		*pc = fq->q.pieces;
		*n = fq->q.npieces;
		return;
	}
	whole->data = fq->q.data;
	whole->size = fq->q.size;
	whole->offset = 0;
	*pc = whole;
	*n = 1;
}

/* The bytes of [start, end): a pointer into one piece, or, when the range
 * straddles pieces, marked so (seg_load copies it when it is decoded)
 * once the pieces are known to cover it.  Pieces are in offset order and
 * segments are asked for in order, so *first (the first piece that can
 * still hold a segment) only moves forward: linear in pieces + segments. */
static int seg_bytes(const struct intelpt_piece *pc, size_t n, size_t *first,
		     struct segment *s)
{
	uint64_t at = s->start;

	while (*first < n && pc[*first].offset + pc[*first].size <= s->start)
		++*first;
	for (size_t i = *first; i < n && pc[i].offset <= s->start; i++)
		if (s->end <= pc[i].offset + pc[i].size) {
			s->data = pc[i].data + (s->start - pc[i].offset);
			return 0;
		}
	s->straddles = 1;
	for (size_t i = *first; i < n && at < s->end; i++) {
		if (at < pc[i].offset || at >= pc[i].offset + pc[i].size)
			break;
		at = pc[i].offset + pc[i].size;
	}
	return at >= s->end ? 0 : PTD_ERR_CORRUPT;
}

/* Reads the PSB+ at offset off of the decoder's buffer (one decoder per
 * piece, moved from PSB to PSB): the FUP says where the flow is. */
static void read_psb_plus(struct pt_packet_decoder *pkt, uint64_t off,
			  struct segment *sg)
{
	struct pt_packet p;
	int ok;

	if (!pkt)
		return;
	if (pt_pkt_sync_set(pkt, off) >= 0 && pt_pkt_next(pkt, &p, sizeof(p)) >= 0) {
		while (pt_pkt_next(pkt, &p, sizeof(p)) >= 0 && p.type != ppt_psbend &&
		       p.type != ppt_psb) {
			if (p.type == ppt_fup) {
				uint64_t last_ip = 0;

				sg->fup_ip = decompress_ip(&last_ip, &p.payload.ip, &ok);
				sg->has_fup = ok == 1;
			} else if (p.type == ppt_tsc) {
				sg->tsc = p.payload.tsc.tsc;
				sg->has_tsc = 1;
			} else if (p.type == ppt_tma) {
				sg->has_tma = 1;
			}
		}
	}
}

/* Adds the segment that starts at the PSB at `at` in piece pc.  Returns 0
 * or PTD_ERR_NOMEM. */
static int add_segment(struct scan *sc, const struct intelpt_piece *pc,
		       const uint8_t *at, struct pt_packet_decoder *pkt)
{
	struct segment *sg;

	if (util_grow((void **)&sc->segs, &sc->cap, sc->nsegs + 1, sizeof(*sg)))
		return PTD_ERR_NOMEM;
	sg = &sc->segs[sc->nsegs++];
	memset(sg, 0, sizeof(*sg));
	sg->queue = sc->queue;
	sg->start = pc->offset + (uint64_t)(at - pc->data);
	read_psb_plus(pkt, (uint64_t)(at - pc->data), sg);
	return 0;
}

/* scan_find_psb: any PSB starting in [p, p + 15] covers the byte at
 * p + 15: where that is neither 02 nor 82, 16 starts are ruled out by
 * one load (a search that reads every byte costs more than half of a
 * short run's scan). */
const uint8_t *scan_find_psb(const uint8_t *p, const uint8_t *e)
{
	static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82 };

	while (e - p >= 16) {
		if ((p[15] & 0x7f) != 0x02)
			p += 16;
		else if (!memcmp(p, psb, sizeof(psb)))
			return p;
		else
			p++;
	}
	return NULL;
}

/* The PSBs of one piece; *lo is where the pages not yet dropped start. */
static void scan_piece(struct scan *sc, const struct intelpt_piece *pc,
		       const uint8_t **lo)
{
	struct pt_packet_decoder *pkt;
	struct pt_config cfg;

	intelpt_config(sc->p, &cfg, pc->data, pc->data + pc->size);
	pkt = pc->size ? pt_pkt_alloc_decoder(&cfg) : NULL;
	for (uint64_t from = 0; from < pc->size;) {
		const uint8_t *at = scan_find_psb(pc->data + from, pc->data + pc->size);

		if (!at)
			break;
		from = (uint64_t)(at - pc->data) + 16;
		sc->rc = add_segment(sc, pc, at, pkt);
		if (sc->rc)
			break;
		if (at - *lo > DROP_EVERY) {
			fqueue_drop_pages(sc->fq, *lo, (size_t)(at - *lo));
			*lo = at;
		}
	}
	if (pkt)
		pt_pkt_free_decoder(pkt);
}

/* One pass over a part's pieces, dropping scanned pages as it goes so the
 * scan's footprint stays small. */
static void *scan_pieces(void *arg)
{
	struct scan *sc = arg;
	const struct intelpt_piece *pc = sc->pc;
	const uint8_t *lo = pc[sc->from].data;

	for (size_t i = sc->from; i < sc->to; i++) {
		scan_piece(sc, &pc[i], &lo);
		if (sc->rc)
			break;
		if (pc[i].data + pc[i].size - lo > DROP_EVERY || i + 1 == sc->to) {
			fqueue_drop_pages(sc->fq, lo, (size_t)(pc[i].data + pc[i].size - lo));
			lo = pc[i].data + pc[i].size;
		}
	}
	return NULL;
}

/* Cuts pieces pc[0..npc) into parts of whole pieces (a PSB is only found
 * inside one) for up to `threads` threads.  Returns their number. */
static size_t plan_parts(struct scan *parts, const struct intelpt_piece *pc,
			 size_t npc, unsigned int threads)
{
	uint64_t total = 0, acc = 0;
	size_t nparts, i, j;

	for (i = 0; i < npc; i++)
		total += pc[i].size;
	nparts = threads < SCAN_MAX ? threads : SCAN_MAX;
	if (nparts > total / SCAN_PART)
		nparts = (size_t)(total / SCAN_PART);
	if (nparts > npc)
		nparts = npc;
	if (nparts < 1)
		nparts = 1;
	/* part j ends at the first piece boundary past j+1 n-ths of the bytes */
	for (i = 0, j = 0; j < nparts; j++) {
		parts[j].pc = pc;
		parts[j].from = i;
		while (i < npc && (j + 1 == nparts || acc < total / nparts * (j + 1)))
			acc += pc[i++].size;
		parts[j].to = i;
	}
	return nparts;
}

/* Scans the parts: the first here, the others on threads of their own
 * (here too when a thread cannot be started). */
static void run_parts(struct scan *parts, size_t nparts)
{
	size_t j;

	for (j = 1; j < nparts; j++)
		parts[j].threaded = !pthread_create(&parts[j].thr, NULL, scan_pieces,
						    &parts[j]);
	scan_pieces(&parts[0]);
	for (j = 1; j < nparts; j++) {
		if (parts[j].threaded)
			pthread_join(parts[j].thr, NULL);
		else
			scan_pieces(&parts[j]);
	}
}

/* The parts' segments, concatenated in order, into fq->segs.  Returns 0
 * or a negative PTD_ERR_*. */
static int join_parts(struct fqueue *fq, struct scan *parts, size_t nparts)
{
	size_t j, n = 0;
	int rc = 0;

	for (j = 0; j < nparts; j++) {
		n += parts[j].nsegs;
		if (parts[j].rc)
			rc = parts[j].rc;
	}
	if (!rc && nparts == 1) {
		fq->segs = parts[0].segs;   /* the common case: no copy */
		parts[0].segs = NULL;
	} else if (!rc && !(fq->segs = malloc((n ? n : 1) * sizeof(*fq->segs)))) {
		rc = PTD_ERR_NOMEM;
	} else if (!rc) {
		for (j = 0, n = 0; j < nparts; j++) {
			memcpy(fq->segs + n, parts[j].segs, parts[j].nsegs * sizeof(*fq->segs));
			n += parts[j].nsegs;
		}
	}
	for (j = 0; j < nparts; j++)
		free(parts[j].segs);
	if (!rc)
		fq->nsegs = n;
	return rc;
}

int scan_queue(const struct intelpt_params *p, struct fqueue *fq, uint32_t qi,
	       unsigned int threads)
{
	struct intelpt_piece whole;
	const struct intelpt_piece *pc;
	struct scan parts[SCAN_MAX];
	size_t npc, nparts;
	int rc;

	queue_pieces(fq, &pc, &npc, &whole);
	memset(parts, 0, sizeof(parts));
	nparts = plan_parts(parts, pc, npc, threads);
	for (size_t j = 0; j < nparts; j++) {
		parts[j].p = p;
		parts[j].fq = fq;
		parts[j].queue = qi;
	}
	run_parts(parts, nparts);
	rc = join_parts(fq, parts, nparts);
	fq->no_mtc = 1;
	for (size_t k = 0, first = 0; !rc && k < fq->nsegs; k++) {
		struct segment *sg = &fq->segs[k];

		sg->end = k + 1 < fq->nsegs ? fq->segs[k + 1].start : fq->q.size;
		if (!sg->has_tsc || sg->has_tma)
			fq->no_mtc = 0;
		rc = seg_bytes(pc, npc, &first, sg);
	}
	return rc;
}
