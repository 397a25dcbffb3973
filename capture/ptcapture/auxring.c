/* SPDX-License-Identifier: MIT */
#include "auxring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int pow2(size_t n)
{
	return n && !(n & (n - 1));
}

int auxring_init(struct auxring *r, struct perf_event_mmap_page *page,
		 void *data, size_t data_size, void *aux, size_t aux_size,
		 int aux_overwrite)
{
	memset(r, 0, sizeof(*r));
	if (!pow2(data_size) || (aux && !pow2(aux_size)))
		return -EINVAL;
	r->pg = page;
	r->data = data;
	r->data_size = data_size;
	r->aux = aux;
	r->aux_size = aux ? aux_size : 0;
	r->aux_overwrite = aux_overwrite;
	r->tmp = malloc(data_size);
	r->offs = malloc(data_size / 8 * sizeof(uint64_t));
	if (!r->tmp || !r->offs) {
		auxring_fini(r);
		return -ENOMEM;
	}
	return 0;
}

void auxring_fini(struct auxring *r)
{
	free(r->tmp);
	free(r->offs);
	r->tmp = NULL;
	r->offs = NULL;
}

/* The record at position pos, joined into tmp when it wraps. */
static const struct perf_event_header *rec_at(struct auxring *r, uint64_t pos, uint16_t size)
{
	size_t off = (size_t)(pos & (r->data_size - 1));
	size_t first = r->data_size - off;

	if (size <= first)
		return (const void *)(r->data + off);
	memcpy(r->tmp, r->data + off, first);
	memcpy(r->tmp + first, r->data, size - first);
	r->st.joined++;
	return (const void *)r->tmp;
}

static void count(struct auxring *r, const struct perf_event_header *h)
{
	const uint8_t *b = (const uint8_t *)h;
	uint64_t v;

	r->st.records++;
	if (h->type == PERF_RECORD_AUX && h->size >= 32) {
		memcpy(&v, b + 24, 8);
		r->st.aux_records++;
		r->st.aux_truncated += !!(v & PERF_AUX_FLAG_TRUNCATED);
		r->st.aux_overwrite += !!(v & PERF_AUX_FLAG_OVERWRITE);
		r->st.aux_partial += !!(v & PERF_AUX_FLAG_PARTIAL);
		r->st.aux_collision += !!(v & PERF_AUX_FLAG_COLLISION);
	} else if (h->type == PERF_RECORD_LOST && h->size >= 24) {
		memcpy(&v, b + 16, 8);
		r->st.lost_records++;
		r->st.lost_events += v;
	}
}

/* Kernel side: writes records, then data_head (release).  We load the
 * head with acquire before touching records, and store the tail with
 * release after we are done with them. */
long auxring_read(struct auxring *r, auxring_rec_fn fn, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->pg->data_tail;
	long n = 0, rc = 0;

	while (tail < head) {
		struct perf_event_header h;
		size_t off = (size_t)(tail & (r->data_size - 1));
		const struct perf_event_header *rec;

		/* Records are 8-byte aligned, so a header never wraps. */
		memcpy(&h, r->data + off, sizeof(h));
		if (h.size < sizeof(h) || (h.size & 7) || h.size > head - tail) {
			r->st.corrupt++;
			r->st.corrupt_bytes += head - tail;
			tail = head;
			rc = -1;
			break;
		}
		rec = rec_at(r, tail, h.size);
		tail += h.size;
		count(r, rec);
		n++;
		if (fn && fn(ctx, rec)) {
			rc = -2;
			break;
		}
	}
	__atomic_store_n(&r->pg->data_tail, tail, __ATOMIC_RELEASE);
	return rc ? rc : n;
}

long auxring_read_backward(struct auxring *r, auxring_rec_fn fn, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t avail = (uint64_t)0 - head;   /* written so far, if no wrap */
	uint64_t pos = head, end;
	size_t n = 0;
	long rc = 0;

	if (avail > r->data_size || head == 0)
		avail = head == 0 ? 0 : r->data_size;
	end = head + avail;
	/* Newest first: collect positions, then hand over in reverse. */
	while (pos != end) {
		struct perf_event_header h;

		memcpy(&h, r->data + (pos & (r->data_size - 1)), sizeof(h));
		if (h.size == 0)
			break;            /* never written */
		if (h.size < sizeof(h) || (h.size & 7)) {
			r->st.corrupt++;
			rc = -1;
			break;
		}
		if (h.size > end - pos)
			break;            /* oldest record, partly overwritten */
		r->offs[n++] = pos;
		pos += h.size;
	}
	for (size_t k = n; k-- > 0;) {
		struct perf_event_header h;
		const struct perf_event_header *rec;

		memcpy(&h, r->data + (r->offs[k] & (r->data_size - 1)), sizeof(h));
		rec = rec_at(r, r->offs[k], h.size);
		count(r, rec);
		if (fn && fn(ctx, rec))
			return -2;
	}
	return rc ? rc : (long)n;
}

long auxring_read_aux(struct auxring *r, auxring_aux_fn fn, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->pg->aux_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->pg->aux_tail;
	uint64_t n = head - tail;
	size_t off, first;

	if (!r->aux || head <= tail)
		return 0;
	if (n > r->aux_size) {
		/* Cannot happen unless the producer ignored aux_tail: only
		 * the newest aux_size bytes are still there. */
		r->st.aux_overrun += n - r->aux_size;
		tail = head - r->aux_size;
		n = r->aux_size;
	}
	off = (size_t)(tail & (r->aux_size - 1));
	first = r->aux_size - off < n ? r->aux_size - off : (size_t)n;
	if (fn && fn(ctx, r->aux + off, first, r->aux, (size_t)n - first, tail))
		return -2;
	r->st.aux_bytes += n;
	r->st.aux_reads++;
	__atomic_store_n(&r->pg->aux_tail, head, __ATOMIC_RELEASE);
	return (long)n;
}

long auxring_snapshot_aux(struct auxring *r, auxring_aux_fn fn, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->pg->aux_head, __ATOMIC_ACQUIRE);
	size_t pos = (size_t)(head & (r->aux_size - 1)), len;
	long rc;

	if (!r->aux)
		return 0;
	if (!r->aux_wrapped) {
		size_t tailbytes = r->aux_size < 512 ? r->aux_size : 512;

		if (head >= r->aux_size)
			r->aux_wrapped = 1;
		for (size_t i = r->aux_size - tailbytes; i < r->aux_size && !r->aux_wrapped; i++)
			if (r->aux[i] && i >= pos)
				r->aux_wrapped = 1;
	}
	if (r->aux_wrapped) {
		len = r->aux_size;
		rc = fn ? fn(ctx, r->aux + pos, r->aux_size - pos, r->aux, pos, r->snap_offset) : 0;
	} else {
		len = pos;
		rc = fn ? fn(ctx, r->aux, pos, r->aux, 0, r->snap_offset) : 0;
	}
	if (rc)
		return -2;
	r->snap_offset += len;
	r->st.aux_bytes += len;
	r->st.aux_reads++;
	return (long)len;
}
