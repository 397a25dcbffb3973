/* SPDX-License-Identifier: MIT */
/*
 * snapring (stage: capture/synth/) - snapshot-mode AUX for ptsynth record
 * --snapshot SIZE, as perf record -S writes it: the AUX ring is in
 * overwrite mode and each snapshot copies the last SIZE bytes of it.
 * The trace goes in as it is generated; snapshots are taken at points of
 * the run (piece boundaries, in front of a PSB): the first once the ring
 * is full, then SIZE/2, SIZE/2 and 2*SIZE bytes of new trace apart in
 * turn, so that consecutive snapshots overlap (by half) and, once in
 * three, trace between them is lost (the ring wrapped), plus one at the
 * end.
 */
#ifndef PTSYNTH_SNAPRING_H
#define PTSYNTH_SNAPRING_H

#include <stddef.h>
#include <stdint.h>

struct snapring;

/* A ring of size bytes (> 0).  NULL when out of memory. */
struct snapring *snapring_new(size_t size);
void snapring_free(struct snapring *r);

/* Appends n bytes of trace.  Returns 1 when a snapshot is due now, else
 * 0. */
int snapring_add(struct snapring *r, const uint8_t *data, size_t n);

/* 1 when trace was added since the last snapshot. */
int snapring_pending(const struct snapring *r);

/* Takes a snapshot: the last min(size, all) bytes, *offset the position
 * of their first byte in the whole trace.  Valid until the next add. */
const uint8_t *snapring_take(struct snapring *r, size_t *len,
			     uint64_t *offset);

/* Snapshots taken; bytes of trace in none of them (ring wrapped). */
void snapring_counts(const struct snapring *r, uint64_t *snapshots,
		     uint64_t *lost_bytes);

#endif
