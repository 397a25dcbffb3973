/* SPDX-License-Identifier: MIT */
/*
 * snapshot (stage: capture/ptcapture/) - the flight recorder's memory between snapshots:
 *  - recbuf: sideband records copied out of the backward rings, put in
 *    time order (rings are read one after another);
 *  - copystore: the most recent fence copies (programs freed recently),
 *    bounded in bytes, oldest dropped first (and counted).
 */
#ifndef PTCAP_SNAPSHOT_H
#define PTCAP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include "fence.h"

struct recbuf;

struct recbuf *recbuf_new(void);
void recbuf_free(struct recbuf *rb);
void recbuf_clear(struct recbuf *rb);
/* Copies rec; time: its timestamp (sort key). */
int recbuf_add(struct recbuf *rb, const struct perf_event_header *rec, uint64_t time, int cpu);
/* Stable sort by time. */
void recbuf_sort(struct recbuf *rb);
size_t recbuf_count(const struct recbuf *rb);
const struct perf_event_header *recbuf_get(const struct recbuf *rb, size_t i, int *cpu);

struct copystore;

struct copystore *copystore_new(size_t max_bytes);
void copystore_free(struct copystore *cs);
/* Copies a complete fence image (incomplete ones are only counted). */
int copystore_add(struct copystore *cs, const struct fence_image *im);
size_t copystore_count(const struct copystore *cs);
/* Image i; its bytes stay valid until the next copystore_add. */
const struct fence_image *copystore_get(const struct copystore *cs, size_t i);
uint64_t copystore_dropped(const struct copystore *cs);

#endif
