/* SPDX-License-Identifier: MIT */
/*
 * cspool - parallel decoding in the CoreSight backend (backend/coresight/):
 * queues cut into units that decode independently, units ahead of the
 * consumer decoded on a pool of threads (each with its own csdec), and
 * the consumer's walk through the units in order, so that the elements
 * it sees are the same for any thread count.
 *
 * Pool threads claim units in order, at most CS_AHEAD per thread ahead of
 * the consumer, and decode each whole.  OpenCSD's error log is one
 * unlocked object: it is off while a pool runs, and a unit that meets an
 * OpenCSD error is decoded again in exclusive mode (no other unit being
 * decoded, the log on), so that its messages are exactly those of a
 * single-threaded run.  The consumer decodes a unit itself when it reaches
 * one no thread has claimed (it never sleeps while there is work), and
 * units too big to hold decoded (CS_UNIT_BIG) step by step, in exclusive
 * mode.
 */
#ifndef PTD_CSPOOL_H
#define PTD_CSPOOL_H

#include <stddef.h>

struct cs_backend;

/* Cuts queue q of cb into units (appended to cb->units).  Returns 0 or
 * PTD_ERR_NOMEM with a message in err. */
int cspool_add_units(struct cs_backend *cb, size_t q, char *err,
		     size_t errlen);

/* Starts threads - 1 pool threads (threads 0: one per core) if there is
 * more than one unit a pool could decode.  Without a pool everything runs
 * on the caller's thread; a pool that cannot start is no error. */
void cspool_start(struct cs_backend *cb, unsigned threads);

/* Stops and frees cb's pool, if any. */
void cspool_stop(struct cs_backend *cb);

/* Makes the next elements available (cb->el[el_head..el_n)), moving on to
 * the next unit when those of the current one are consumed.  Returns 0,
 * PTD_ERR_END when all units are done, or a negative PTD_ERR_* with a
 * message in cb->errmsg. */
int cspool_pump(struct cs_backend *cb);

#endif
