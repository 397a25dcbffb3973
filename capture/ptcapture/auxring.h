/* SPDX-License-Identifier: MIT */
/*
 * auxring (stage: capture/ptcapture/) - consumes the buffers of one mmapped perf event, laid out as the
 * kernel lays them out: a struct perf_event_mmap_page, the data ring right
 * after it, and (for intel_pt / cs_etm) the AUX area at aux_offset.
 *
 * Four ways to read, matching how the rings are written:
 *  - data ring, forward (normal): records from data_tail to data_head, then
 *    data_tail is published so the kernel may reuse the space;
 *  - data ring, backward (attr.write_backward, mapped read-only: the
 *    flight recorder's sideband): the newest records still in the ring,
 *    found by walking from data_head; handed over oldest first;
 *  - AUX, normal: the bytes from aux_tail to aux_head, then aux_tail is
 *    published;
 *  - AUX, overwrite (snapshot): the whole AUX area, oldest byte first.
 *
 * Nothing here makes a system call: the writer must be paused
 * (PERF_EVENT_IOC_PAUSE_OUTPUT) around the overwrite readers by the
 * caller, and a test can drive everything with a simulated producer.
 */
#ifndef PTCAP_AUXRING_H
#define PTCAP_AUXRING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct auxring_stats {
	uint64_t records;        /* records handed over */
	uint64_t joined;         /* records split at the ring end and joined */
	uint64_t corrupt;        /* times a ring held a bad record header */
	uint64_t corrupt_bytes;  /* forward reading: bytes skipped after one */
	uint64_t lost_records, lost_events;      /* PERF_RECORD_LOST */
	uint64_t aux_records;    /* PERF_RECORD_AUX seen */
	uint64_t aux_truncated, aux_overwrite, aux_partial, aux_collision;
	uint64_t aux_bytes;      /* AUX bytes handed over */
	uint64_t aux_reads;      /* AUX pieces handed over */
	uint64_t aux_overrun;    /* normal mode: bytes the producer overwrote
				  * before we read them (head - tail > size) */
};

struct auxring {
	struct perf_event_mmap_page *pg;
	uint8_t *data;           /* data ring (data_size, a power of two) */
	size_t data_size;
	uint8_t *aux;            /* AUX area (aux_size, a power of two) or NULL */
	size_t aux_size;
	int aux_overwrite;
	int aux_wrapped;         /* overwrite mode: the area has been filled */
	uint64_t snap_offset;    /* overwrite mode: bytes handed over so far */
	uint8_t *tmp;            /* data_size bytes: joined records */
	uint64_t *offs;          /* backward reading: record positions */
	struct auxring_stats st;
};

/* page: the mmap page; data follows it at page + page_size (pass the data
 * pointer explicitly: tests lay memory out themselves).  aux may be NULL.
 * Returns 0 or -ENOMEM / -EINVAL (sizes not powers of two). */
int auxring_init(struct auxring *r, struct perf_event_mmap_page *page,
		 void *data, size_t data_size, void *aux, size_t aux_size,
		 int aux_overwrite);
void auxring_fini(struct auxring *r);

/* Called per record; rec is contiguous and valid during the call only.
 * A nonzero return stops reading (the record counts as consumed). */
typedef int (*auxring_rec_fn)(void *ctx, const struct perf_event_header *rec);

/* Forward reading.  AUX and LOST records are counted in st as they pass.
 * Returns records read, or -1 (corrupt ring: the rest was skipped) or -2
 * (fn stopped). */
long auxring_read(struct auxring *r, auxring_rec_fn fn, void *ctx);

/* Backward (overwrite) reading of every record still in the ring, oldest
 * first; publishes nothing.  Same returns. */
long auxring_read_backward(struct auxring *r, auxring_rec_fn fn, void *ctx);

/* AUX data: a then b (b after the wrap, often empty), starting at the
 * monotonic position offset.  A nonzero return stops (normal mode: the
 * data is not consumed). */
typedef int (*auxring_aux_fn)(void *ctx, const uint8_t *a, size_t alen,
			      const uint8_t *b, size_t blen, uint64_t offset);

/* Normal mode: hands over [aux_tail, aux_head) and publishes aux_tail.
 * Returns bytes handed over (0: nothing new) or -2 (fn stopped). */
long auxring_read_aux(struct auxring *r, auxring_aux_fn fn, void *ctx);

/* Overwrite mode: hands over the area's content, oldest byte first: all
 * of it once it has wrapped, else [0, head).  aux_head may be a position
 * in the area (intel_pt) or a running count (both work); a wrap is seen
 * from a running count >= aux_size or, as perf does, from nonzero bytes in
 * the area's last 512 bytes (the area starts zeroed).  Returns bytes. */
long auxring_snapshot_aux(struct auxring *r, auxring_aux_fn fn, void *ctx);

#endif
