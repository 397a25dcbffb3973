/* SPDX-License-Identifier: MIT */
/*
 * fastpt_pool - the fast Intel PT decoder's workers (backend stage,
 * backend/fastpt/): decode segments on N threads, hand them out in order.
 *
 * -j N decodes on N threads: N-1 pool threads and the caller's (the
 * consumer).  They claim batches of consecutive segments in order, at most
 * a few batches per thread ahead of the consumer (counting: a few MiB of
 * trace, a decoded segment being small then), so the output is the same
 * for any thread count.  The consumer never sleeps while there is a
 * batch to claim: waiting for a segment a pool thread is still on, it
 * decodes the next batch itself.  Each worker keeps its block cache
 * bounded: a full cache is emptied, its blocks freed once the consumer is
 * past every segment whose records point at them.
 */
#ifndef PTD_FASTPT_POOL_H
#define PTD_FASTPT_POOL_H

#include <stddef.h>

struct fast_backend;

/* The lock and condition variables (first thing: pool_destroy needs
 * them). */
void pool_init(struct fast_backend *fb);

/* The workers for nthreads decoding threads (the caller's included), not
 * started yet.  Returns 0 or PTD_ERR_NOMEM. */
int pool_create_workers(struct fast_backend *fb, unsigned int nthreads);

/* Starts the pool threads (on the first call for blocks).  Threads that
 * cannot be started leave fewer: the caller decodes the rest. */
void pool_start(struct fast_backend *fb);

/* Makes sure segment i (output order) is decoded, decoding on the
 * caller's thread while it waits. */
void pool_wait_segment(struct fast_backend *fb, size_t i);

/* The consumer is done with segment out_seg: frees its output (recycling
 * its record array), drops its trace pages, moves on to the next and
 * lets the workers decode further. */
void pool_advance(struct fast_backend *fb);

/* Stops the threads and frees the workers and recycled arrays. */
void pool_destroy(struct fast_backend *fb);

#endif
