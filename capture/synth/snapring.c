/* SPDX-License-Identifier: MIT */
#include "snapring.h"

#include <stdlib.h>
#include <string.h>

struct snapring {
	size_t size;
	uint8_t *buf;           /* the last bytes of the trace, up to 2 * size */
	size_t len;
	uint64_t total;         /* bytes of trace so far */
	uint64_t last_snap;     /* total at the last snapshot */
	uint64_t covered;       /* end of what snapshots hold */
	unsigned k;             /* snapshots taken */
	uint64_t lost;
};

struct snapring *snapring_new(size_t size)
{
	struct snapring *r = calloc(1, sizeof(*r));

	if (!r || !size || !(r->buf = malloc(2 * size))) {
		free(r);
		return NULL;
	}
	r->size = size;
	return r;
}

void snapring_free(struct snapring *r)
{
	if (r)
		free(r->buf);
	free(r);
}

/* New trace between snapshot k and k+1: half the ring twice, then twice
 * the ring (the ring wraps and trace is lost). */
static uint64_t interval(const struct snapring *r)
{
	return r->k % 3 == 2 ? 2 * (uint64_t)r->size : r->size / 2;
}

int snapring_add(struct snapring *r, const uint8_t *data, size_t n)
{
	if (n >= r->size) {
		memcpy(r->buf, data + n - r->size, r->size);
		r->len = r->size;
	} else {
		if (r->len + n > 2 * r->size) {
			size_t keep = r->size - n;   /* room for n after it */

			memmove(r->buf, r->buf + r->len - keep, keep);
			r->len = keep;
		}
		memcpy(r->buf + r->len, data, n);
		r->len += n;
	}
	r->total += n;
	if (!r->k)   /* the first once the ring is full: all are size bytes */
		return r->total >= r->size;
	return r->total - r->last_snap >= interval(r);
}

int snapring_pending(const struct snapring *r)
{
	return r->total > r->last_snap;
}

const uint8_t *snapring_take(struct snapring *r, size_t *len,
			     uint64_t *offset)
{
	size_t n = r->len < r->size ? r->len : r->size;

	*len = n;
	*offset = r->total - n;
	if (*offset > r->covered)
		r->lost += *offset - r->covered;
	r->covered = r->total;
	r->last_snap = r->total;
	r->k++;
	return r->buf + r->len - n;
}

void snapring_counts(const struct snapring *r, uint64_t *snapshots,
		     uint64_t *lost_bytes)
{
	*snapshots = r->k;
	*lost_bytes = r->lost;
}
