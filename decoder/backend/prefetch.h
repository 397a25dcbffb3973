/* SPDX-License-Identifier: MIT */
/*
 * prefetch (stage: backend/) - a backend decoded ahead on a thread of its
 * own: its events wait in a bounded ring (memory independent of the
 * trace's length) until the consumer takes them, in the same order, with
 * the same contents (an event's message and the decoder's text of an
 * instruction are copied with it).  queuemerge runs one per queue with
 * -j2 and up, so the queues of a system-wide trace decode in parallel
 * while the merge hands them out in time order.
 */
#ifndef PTD_PREFETCH_H
#define PTD_PREFETCH_H

#include "backend.h"

/* Wraps inner (owned from here on, also on failure); text: also copy the
 * decoder's text of each instruction (insn_text).  Returns 0 or
 * PTD_ERR_NOMEM. */
int prefetch_new(struct backend *inner, int text, struct backend **out);

#endif
