/* SPDX-License-Identifier: MIT */
/*
 * snapshot - the loader of a CoreSight snapshot directory (Arm's snapshot
 * format, read by format/cssnapshot), in input/: the trace buffers mapped,
 * one queue per (trace buffer, PE trace source), the memory dumps of the
 * cores traced added to the image store, and the CoreSight backend opened
 * on them.
 *
 * Queues come in the order of trace.ini's buffer list and, within a
 * buffer, by ascending trace ID.  A formatted buffer is deformatted once
 * per queue, keeping only that ID, so each queue is one core's flow,
 * decoded to its end before the next queue starts (deterministic; memory
 * bounded per queue).  Sources that cannot be decoded (STM/ITM, unknown
 * types or cores, missing registers, duplicate trace IDs), dumps that
 * cannot be read and overlapping dumps are warnings of the backend
 * (coresight_warning()).
 */
#ifndef PTD_SNAPSHOT_H
#define PTD_SNAPSHOT_H

#include <stddef.h>

struct backend;
struct imgstore;

/* Opens the snapshot directory dir.  Dumps ([dumpN] sections) of the cores
 * traced are added to st under IMGSTORE_KERNEL for all time.  threads:
 * decoding threads, the caller's included (0: one per core; 1: all on the
 * caller's thread).  The store must not change while the backend lives.
 * Returns 0 or a negative enum ptd_error (PTD_ERR_UNSUPPORTED for
 * snapshots with only STM/ITM trace, or for builds without OpenCSD) with a
 * message in err. */
int snapshot_open(const char *dir, struct imgstore *st, unsigned threads,
		  struct backend **out, char *err, size_t errlen);

#endif
