/* SPDX-License-Identifier: MIT */
/*
 * cskey (stage: backend/coresight/) - the keys perf orders CoreSight
 * elements of several CPUs by, for a merged timeline (backend/queuemerge.c).
 *
 * An ETM timestamp comes after the instructions it times, so perf's cs_etm
 * decoder (Linux 6.1, tools/perf/util/cs-etm-decoder/cs-etm-decoder.c)
 * estimates a key per instruction range, per trace ID, in timestamp
 * units:
 *   - after a discontinuity (NO_SYNC, TRACE_ON, the end of a buffer) or a
 *     PE context that gives a thread, the ranges wait for the next
 *     timestamp T; they (and what came with them) get T minus their
 *     instruction count;
 *   - from then on each range is a block of its own, keyed with the last
 *     key plus the instructions counted since (a later timestamp T' just
 *     sets the next key to T', which may be smaller: keys can go back);
 *   - what perf cannot key (its packet queue of 1023 full before a
 *     timestamp, a buffer ending first) is processed at once: key 0 here,
 *     "the queue's current block".
 * Elements wait here (copied, error texts with them) until their key is
 * known; at most one such wait per trace ID, bounded as perf's queue is.
 */
#ifndef PTD_CSKEY_H
#define PTD_CSKEY_H

#include <stddef.h>
#include <stdint.h>

struct cs_backend;
struct cs_elem;
struct cskey;

/* Keys for cb's elements; the sources' registers say which PE contexts
 * name a thread.  NULL when out of memory. */
struct cskey *cskey_new(const struct cs_backend *cb);
void cskey_free(struct cskey *k);

/* The next element of cb in order, with its error text (or NULL) and its
 * key (0: the current block).  Returns 0, PTD_ERR_END, or the error that
 * ended the elements (after those before it). */
int cskey_next(struct cs_backend *cb, struct cskey *k, const struct cs_elem **e,
	       const char **text, uint64_t *key);

#endif
