/* SPDX-License-Identifier: MIT */
#include "intelpt_overlap.h"
#include "intelpt.h"

#include <intel-pt.h>
#include <string.h>

/* The TSC of the PSB+ at psb in buf: *tsc and *rem, the bytes of buf
 * after the TSC packet.  Returns 1, or 0 when that PSB+ has no TSC or is
 * cut short by the end of buf. */
static int psb_tsc(const uint8_t *buf, size_t len, size_t psb, uint64_t *tsc,
		   size_t *rem)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	struct pt_packet pk;
	uint64_t off;
	int rc, found = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return 0;
	rc = pt_pkt_sync_set(dec, psb);
	while (rc >= 0 && (rc = pt_pkt_next(dec, &pk, sizeof(pk))) >= 0) {
		if (pk.type == ppt_psbend)
			break;
		if (pk.type == ppt_tsc && !found &&
		    pt_pkt_get_offset(dec, &off) >= 0) {
			*tsc = pk.payload.tsc.tsc;
			*rem = len - (size_t)off;
			found = 1;
		}
	}
	pt_pkt_free_decoder(dec);
	return found && rc >= 0;   /* the PSB+ ended (PSBEND) inside buf */
}

/* The last complete PSB+ with a TSC in a, at most two from its end (as
 * perf: an incomplete last one, then the one before). */
static int last_tsc(const uint8_t *a, size_t alen, uint64_t *tsc, size_t *rem)
{
	size_t end = alen;

	for (int tries = 0; tries < 2 && end; tries++) {
		size_t p = (size_t)intelpt_psb_before(a, end, end - 1);

		if (p >= end)
			return 0;
		if (psb_tsc(a, alen, p, tsc, rem))
			return 1;
		end = p;
	}
	return 0;
}

/* By timestamps: 1 with ov filled when decided. */
static int by_tsc(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		  size_t first, struct intelpt_overlap *ov)
{
	uint64_t tsc_a, tsc_b;
	size_t rem_a, rem_b;

	if (!last_tsc(a, alen, &tsc_a, &rem_a))
		return 0;   /* no TSC to place it by: try the bytes */
	for (size_t p = first; p < blen;
	     p = (size_t)intelpt_psb_after(b, blen, p + 1)) {
		if (!psb_tsc(b, blen, p, &tsc_b, &rem_b))
			continue;
		if (tsc_b == tsc_a && rem_b >= rem_a) {
			ov->start = blen - (rem_b - rem_a);
			ov->consecutive = 1;
			return 1;
		}
		if (tsc_b > tsc_a) {
			ov->start = p;   /* a's end is not in b: trace lost */
			return 1;
		}
	}
	ov->start = blen;        /* all of b is older than a's end */
	return 1;
}

/* By content: a's tail from one of its PSBs is b's beginning. */
static void by_bytes(const uint8_t *a, size_t alen, const uint8_t *b,
		     size_t blen, size_t first, struct intelpt_overlap *ov)
{
	size_t p = (size_t)intelpt_psb_after(a, alen, 0);

	b += first;
	blen -= first;
	while (p < alen) {
		size_t tail = alen - p;

		if (tail <= blen && !memcmp(a + p, b, tail)) {
			ov->start = first + tail;
			ov->consecutive = 1;
			return;
		}
		p = (size_t)intelpt_psb_after(a, alen, p + 1);
	}
}

/* perf pads an AUXTRACE payload to 8 bytes with zeros */
#define MAX_PADDING 7

void intelpt_find_overlap(const uint8_t *a, size_t alen, const uint8_t *b,
			  size_t blen, int have_tsc, struct intelpt_overlap *ov)
{
	size_t first = (size_t)intelpt_psb_after(b, blen, 0), pad = 0;

	ov->start = first;
	ov->consecutive = 0;
	/* a is placed in b without its trailing zeros, which may be padding
	 * (b has trace there) or trace (b has them too: skipped below) */
	while (pad < MAX_PADDING && pad < alen && !a[alen - 1 - pad])
		pad++;
	alen -= pad;
	if (first >= blen || intelpt_psb_after(a, alen, 0) >= alen)
		return;
	if (!(have_tsc && by_tsc(a, alen, b, blen, first, ov)))
		by_bytes(a, alen, b, blen, first, ov);
	if (ov->consecutive)
		while (pad-- && ov->start < blen && !b[ov->start])
			ov->start++;
}
