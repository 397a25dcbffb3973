/* SPDX-License-Identifier: MIT */
/*
 * test_auxring - drives capture/ptcapture/auxring.c with a SIMULATED
 * PRODUCER that writes into memory shaped like a perf event mmap (struct
 * perf_event_mmap_page, data ring, AUX area) the way the kernel does:
 * records and AUX bytes first, then the head with release order; it
 * respects data_tail / aux_tail in normal mode and ignores them in
 * overwrite mode.  The oracle is the producer's own log of what it wrote.
 *
 * Scenarios: forward records wrapping the ring end; AUX bytes wrapping the
 * area with PERF_RECORD_AUX records (some TRUNCATED / PARTIAL /
 * COLLISION) and LOST records; AUX overwrite snapshots (head as a
 * position, as intel_pt reports it, and as a running count) before and
 * after the area wrapped; backward (write_backward) data rings before and
 * after wrapping.  Every byte handed over is compared.
 */
#include "auxring.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(c, ...) do { if (!(c)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Byte i of the AUX stream: never zero (the snapshot wrap heuristic
 * relies on the kernel's zeroed area, real trace is rarely all zero). */
static uint8_t sbyte(uint64_t i)
{
	return (uint8_t)(1 + (i * 2654435761u >> 7) % 255);
}

/* ---- the simulated kernel side ---- */

struct sim {
	struct perf_event_mmap_page *pg;
	uint8_t *mem, *data, *aux;
	size_t data_size, aux_size;
	uint64_t whead;        /* producer's data head (backward: decreasing) */
	uint64_t ahead;        /* producer's AUX running count */
	int aux_pos_head;      /* overwrite: publish aux_head as a position */
};

static void sim_init(struct sim *s, size_t data_size, size_t aux_size)
{
	memset(s, 0, sizeof(*s));
	s->data_size = data_size;
	s->aux_size = aux_size;
	s->mem = calloc(1, 4096 + data_size + aux_size);
	s->pg = (void *)s->mem;
	s->data = s->mem + 4096;
	s->aux = aux_size ? s->data + data_size : NULL;
	s->pg->data_offset = 4096;
	s->pg->data_size = data_size;
	s->pg->aux_offset = 4096 + data_size;
	s->pg->aux_size = aux_size;
}

/* Record k of a sequence: deterministic type, size and content. */
static uint16_t rec_size(uint64_t k)
{
	return (uint16_t)(8 + 8 * (k * 37 % 23));
}

static void make_rec(uint64_t k, uint8_t *out)
{
	struct perf_event_header h = { .type = 100 + (uint32_t)(k % 7), .misc = (uint16_t)k,
				       .size = rec_size(k) };

	memcpy(out, &h, 8);
	for (uint16_t i = 8; i < h.size; i++)
		out[i] = (uint8_t)(k * 31 + i);
}

static void put_bytes(uint8_t *ring, size_t size, uint64_t pos, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ring[(pos + i) & (size - 1)] = b[i];
}

/* Forward: returns 0 when there is no room (normal mode respects tail). */
static int sim_write_rec(struct sim *s, const uint8_t *rec, uint16_t size)
{
	uint64_t tail = __atomic_load_n(&s->pg->data_tail, __ATOMIC_ACQUIRE);

	if (s->data_size - (s->whead - tail) < size)
		return 0;
	put_bytes(s->data, s->data_size, s->whead, rec, size);
	s->whead += size;
	__atomic_store_n(&s->pg->data_head, s->whead, __ATOMIC_RELEASE);
	return 1;
}

/* Backward (write_backward): the head moves down, the record is written
 * at the new head, old records are overwritten. */
static void sim_write_rec_backward(struct sim *s, const uint8_t *rec, uint16_t size)
{
	s->whead -= size;
	put_bytes(s->data, s->data_size, s->whead, rec, size);
	__atomic_store_n(&s->pg->data_head, s->whead, __ATOMIC_RELEASE);
}

static int sim_aux_record(struct sim *s, uint64_t off, uint64_t size, uint64_t flags)
{
	uint8_t r[32];
	struct perf_event_header h = { .type = PERF_RECORD_AUX, .size = 32 };

	memcpy(r, &h, 8);
	memcpy(r + 8, &off, 8);
	memcpy(r + 16, &size, 8);
	memcpy(r + 24, &flags, 8);
	return sim_write_rec(s, r, 32);
}

/* ---- scenario 1: forward records + normal AUX ---- */

struct fwd_ctx {
	uint64_t next_k;         /* next expected sequence record */
	uint64_t bad;
	uint8_t *got;            /* AUX bytes received */
	uint64_t ngot, bad_off;
};

static int on_fwd_rec(void *ctx, const struct perf_event_header *h)
{
	struct fwd_ctx *c = ctx;
	uint8_t want[256];

	if (h->type == PERF_RECORD_AUX || h->type == PERF_RECORD_LOST)
		return 0;
	make_rec(c->next_k, want);
	if (h->size != rec_size(c->next_k) || memcmp(h, want, h->size))
		c->bad++;
	c->next_k++;
	return 0;
}

static int on_aux(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		  uint64_t offset)
{
	struct fwd_ctx *c = ctx;

	if (offset != c->ngot)
		c->bad_off++;
	memcpy(c->got + c->ngot, a, alen);
	memcpy(c->got + c->ngot + alen, b, blen);
	c->ngot += alen + blen;
	return 0;
}

static void scenario_forward(void)
{
	struct sim s;
	struct auxring r;
	struct fwd_ctx c = { 0 };
	const uint64_t total_aux = 1u << 20;
	uint8_t *written = malloc(total_aux);
	uint64_t nwritten = 0, k = 0, stream = 0, naux = 0, ntrunc = 0, npartial = 0, ncoll = 0;
	uint64_t lost_total = 0, nlost = 0;
	uint8_t rec[256];

	c.got = malloc(total_aux);
	sim_init(&s, 4096, 8192);
	CHECK(auxring_init(&r, s.pg, s.data, s.data_size, s.aux, s.aux_size, 0) == 0, "init");
	while (stream < total_aux) {
		/* producer: a few records, an AUX burst, maybe a LOST */
		for (int i = rnd(4); i-- > 0;) {
			make_rec(k, rec);
			if (!sim_write_rec(&s, rec, rec_size(k)))
				break;
			k++;
		}
		{
			uint64_t tail = __atomic_load_n(&s.pg->aux_tail, __ATOMIC_ACQUIRE);
			uint64_t room = s.aux_size - (s.ahead - tail);
			uint64_t want = 1 + rnd(3000), n = want < room ? want : room, flags = 0;

			if (stream + n > total_aux)
				n = total_aux - stream;
			for (uint64_t i = 0; i < n; i++) {
				uint8_t b = sbyte(stream + i);

				put_bytes(s.aux, s.aux_size, s.ahead + i, &b, 1);
				written[nwritten + i] = b;
			}
			/* the rest of the burst is dropped, as the kernel does
			 * when the area is full */
			if (n < want)
				flags |= PERF_AUX_FLAG_TRUNCATED;
			if (rnd(17) == 0)
				flags |= PERF_AUX_FLAG_PARTIAL;
			if (rnd(29) == 0)
				flags |= PERF_AUX_FLAG_COLLISION;
			__atomic_store_n(&s.pg->aux_head, s.ahead + n, __ATOMIC_RELEASE);
			naux++;
			ntrunc += !!(flags & PERF_AUX_FLAG_TRUNCATED);
			npartial += !!(flags & PERF_AUX_FLAG_PARTIAL);
			ncoll += !!(flags & PERF_AUX_FLAG_COLLISION);
			nwritten += n;
			stream = stream + want > total_aux ? total_aux : stream + want;
			s.ahead += n;
			/* no room for the AUX record: the consumer makes some */
			while (!sim_aux_record(&s, s.ahead - n, n, flags))
				CHECK(auxring_read(&r, on_fwd_rec, &c) >= 0, "read");
		}
		if (rnd(5) == 0) {
			uint8_t l[24];
			struct perf_event_header h = { .type = PERF_RECORD_LOST, .size = 24 };
			uint64_t id = 1, lost = 1 + rnd(9);

			memcpy(l, &h, 8);
			memcpy(l + 8, &id, 8);
			memcpy(l + 16, &lost, 8);
			if (sim_write_rec(&s, l, 24)) {
				nlost++;
				lost_total += lost;
			}
		}
		/* consumer, at random moments */
		if (rnd(3) == 0) {
			CHECK(auxring_read(&r, on_fwd_rec, &c) >= 0, "read");
			auxring_read_aux(&r, on_aux, &c);
		}
	}
	auxring_read(&r, on_fwd_rec, &c);
	auxring_read_aux(&r, on_aux, &c);
	CHECK(c.bad == 0, "%" PRIu64 " records differ", c.bad);
	CHECK(c.next_k == k, "records: got %" PRIu64 ", wrote %" PRIu64, c.next_k, k);
	CHECK(c.ngot == nwritten && !memcmp(c.got, written, nwritten),
	      "AUX stream differs: got %" PRIu64 " bytes, wrote %" PRIu64, c.ngot, nwritten);
	CHECK(c.bad_off == 0, "%" PRIu64 " AUX offsets wrong", c.bad_off);
	CHECK(r.st.joined > 0, "no record was split at the ring end: wrap not exercised");
	CHECK(r.st.aux_reads > 0 && s.ahead > 4 * s.aux_size, "AUX area did not wrap");
	CHECK(r.st.aux_records == naux && r.st.aux_truncated == ntrunc &&
	      r.st.aux_partial == npartial && r.st.aux_collision == ncoll && ntrunc > 0,
	      "AUX flags: records %" PRIu64 "/%" PRIu64 " truncated %" PRIu64 "/%" PRIu64
	      " partial %" PRIu64 "/%" PRIu64 " collision %" PRIu64 "/%" PRIu64,
	      r.st.aux_records, naux, r.st.aux_truncated, ntrunc, r.st.aux_partial, npartial,
	      r.st.aux_collision, ncoll);
	CHECK(r.st.lost_records == nlost && r.st.lost_events == lost_total,
	      "LOST: %" PRIu64 "/%" PRIu64 " events %" PRIu64 "/%" PRIu64,
	      r.st.lost_records, nlost, r.st.lost_events, lost_total);
	CHECK(r.st.aux_overrun == 0 && r.st.corrupt == 0, "overrun/corrupt");
	printf("forward: %" PRIu64 " records (%" PRIu64 " split), %" PRIu64 " AUX bytes in %"
	       PRIu64 " reads, %" PRIu64 " AUX records (%" PRIu64 " truncated)\n",
	       c.next_k, r.st.joined, c.ngot, r.st.aux_reads, r.st.aux_records, ntrunc);
	auxring_fini(&r);
	free(s.mem);
	free(written);
	free(c.got);
}

/* ---- scenario 2: AUX overwrite snapshots ---- */

struct snap_ctx {
	uint8_t *got;
	size_t n;
};

static int on_snap(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		   uint64_t offset)
{
	struct snap_ctx *c = ctx;

	(void)offset;
	memcpy(c->got, a, alen);
	memcpy(c->got + alen, b, blen);
	c->n = alen + blen;
	return 0;
}

static void scenario_snapshot(int pos_head)
{
	static const uint64_t totals[] = { 100, 4000, 8191, 8192, 8193, 20000, 100000 };
	const size_t asz = 8192;

	for (size_t t = 0; t < sizeof(totals) / sizeof(totals[0]); t++) {
		struct sim s;
		struct auxring r;
		struct snap_ctx c;
		uint64_t total = totals[t], keep = total < asz ? total : asz;
		int ok;

		sim_init(&s, 4096, asz);
		c.got = malloc(asz);
		auxring_init(&r, s.pg, s.data, s.data_size, s.aux, s.aux_size, 1);
		/* overwrite: the producer ignores aux_tail */
		for (uint64_t i = 0; i < total;) {
			uint64_t n = 1 + rnd(700);

			if (n > total - i)
				n = total - i;
			for (uint64_t j = 0; j < n; j++) {
				uint8_t b = sbyte(i + j);

				put_bytes(s.aux, asz, i + j, &b, 1);
			}
			i += n;
			__atomic_store_n(&s.pg->aux_head, pos_head ? i % asz : i, __ATOMIC_RELEASE);
		}
		auxring_snapshot_aux(&r, on_snap, &c);
		ok = c.n == keep;
		for (uint64_t i = 0; ok && i < keep; i++)
			ok = c.got[i] == sbyte(total - keep + i);
		CHECK(ok, "snapshot (%s head) after %" PRIu64 " bytes: got %zu bytes, want the last %"
		      PRIu64, pos_head ? "position" : "count", total, c.n, keep);
		auxring_fini(&r);
		free(c.got);
		free(s.mem);
	}
	printf("snapshot (%s head): %zu cases\n", pos_head ? "position" : "running-count",
	       sizeof(totals) / sizeof(totals[0]));
}

/* ---- scenario 3: backward data ring ---- */

struct bwd_ctx {
	uint64_t first_k, next_k;
	int started;
	uint64_t bad, bytes;
};

static int on_bwd(void *ctx, const struct perf_event_header *h)
{
	struct bwd_ctx *c = ctx;
	uint8_t want[256];

	if (!c->started) {
		c->started = 1;
		c->first_k = c->next_k = h->misc; /* misc holds k (mod 65536) */
	}
	make_rec(c->next_k, want);
	if (h->size != rec_size(c->next_k) || memcmp(h, want, h->size))
		c->bad++;
	c->bytes += h->size;
	c->next_k++;
	return 0;
}

static void scenario_backward(void)
{
	static const uint64_t counts[] = { 0, 1, 20, 500, 5000 };

	for (size_t t = 0; t < sizeof(counts) / sizeof(counts[0]); t++) {
		struct sim s;
		struct auxring r;
		struct bwd_ctx c = { 0 };
		uint64_t n = counts[t], expect_first, bytes = 0;
		uint8_t rec[256];

		sim_init(&s, 4096, 0);
		auxring_init(&r, s.pg, s.data, s.data_size, NULL, 0, 0);
		for (uint64_t k = 0; k < n; k++) {
			make_rec(k, rec);
			sim_write_rec_backward(&s, rec, rec_size(k));
		}
		/* oracle: the newest records whose total fits the ring */
		expect_first = n;
		while (expect_first > 0 && bytes + rec_size(expect_first - 1) <= s.data_size)
			bytes += rec_size(--expect_first);
		CHECK(auxring_read_backward(&r, on_bwd, &c) == (long)(n - expect_first),
		      "backward count");
		CHECK(c.bad == 0 && (n == expect_first || (c.first_k == expect_first && c.next_k == n)),
		      "backward after %" PRIu64 " records: got [%" PRIu64 ", %" PRIu64 "), want [%"
		      PRIu64 ", %" PRIu64 "), %" PRIu64 " differ", n, c.first_k, c.next_k,
		      expect_first, n, c.bad);
		if (n == 5000)
			CHECK(r.st.joined > 0 || c.bytes < s.data_size, "backward wrap not exercised");
		auxring_fini(&r);
		free(s.mem);
	}
	printf("backward: %zu cases\n", sizeof(counts) / sizeof(counts[0]));
}

int main(void)
{
	scenario_forward();
	scenario_snapshot(1);
	scenario_snapshot(0);
	scenario_backward();
	printf("%s (%d failures)\n", failures ? "FAILED" : "ok", failures);
	return failures ? 1 : 0;
}
