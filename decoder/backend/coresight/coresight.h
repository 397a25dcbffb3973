/* SPDX-License-Identifier: MIT */
/*
 * coresight - the Arm CoreSight backend (ETMv3, PTM, ETMv4, ETE) on
 * OpenCSD's C API.
 *
 * Queues and order.  A queue is one decode tree:
 *   - snapshot: one queue per (trace buffer, PE trace source), in the order
 *     of trace.ini's buffer list and, within a buffer, by ascending trace
 *     ID.  A formatted buffer is deformatted once per queue, keeping only
 *     that ID, so each queue is one core's flow, decoded to its end before
 *     the next queue starts (deterministic; memory bounded per queue).
 *   - perf: one queue per AUX queue given by the caller (usually a CPU),
 *     with decoders for every trace ID that may occur in it; elements of
 *     different trace IDs come in buffer order.
 * ev.queue is the queue index, ev.cpu the core (-1 if unknown).
 *
 * Parallel decoding.  The decoder starts every chunk from reset, so a
 * queue is decoded in units (a snapshot queue; one perf chunk or several
 * small consecutive ones) that decode independently.  With threads > 1
 * units ahead of the consumer are decoded on a pool of threads - 1 threads
 * (the caller decodes too), each with its own decode tree, and their
 * elements turned into events in unit order, so the events are the same
 * for any thread count.  OpenCSD's error log is a global object: it is
 * off while a pool runs, and a unit with an OpenCSD error is decoded again
 * alone to read its texts.  See docs/ARCHITECTURE.md.
 *
 * Code bytes are read only through imgstore_read_r(), so that
 * time-versioned images work: snapshots use pid IMGSTORE_KERNEL and no
 * time; perf queues use each chunk's pid and time.
 *
 * Events: an OpenCSD instruction range becomes one PTD_EV_INSN per
 * instruction (A64/A32: 4 bytes; T32: 4 when the first halfword is
 * >= 0xE800, else 2; the last one gets its class from OpenCSD); an
 * inaccessible address (ADDR_NACC) PTD_EV_GAP with ip = the address;
 * TRACE_ON PTD_EV_ENABLED (PTD_EV_OVERFLOW after an overflow); a PE
 * context with a new context ID or VMID PTD_EV_SWITCH (tid = context ID,
 * addr = VMID); an exception PTD_EV_ASYNC (ip = preferred return address
 * when known, addr = exception number); a timestamp PTD_EV_TIME (tsc = the
 * raw value); decoder errors PTD_EV_ERROR.
 */
#ifndef PTD_CORESIGHT_H
#define PTD_CORESIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "cs_etm_info.h"

struct imgstore;

/* Opens the snapshot directory dir.  Dumps ([dumpN] sections) of the cores
 * traced are added to st under IMGSTORE_KERNEL for all time.  threads:
 * decoding threads, the caller's included (0: one per core; 1: all on the
 * caller's thread).  The store must not change while the backend lives.
 * Returns 0 or
 * a negative enum ptd_error (PTD_ERR_UNSUPPORTED for snapshots with only
 * STM/ITM trace, or for builds without OpenCSD) with a message in err. */
int coresight_open_snapshot(const char *dir, struct imgstore *st,
			    unsigned threads, struct backend **out, char *err,
			    size_t errlen);

/* One piece of a perf AUX queue's trace (an AUXTRACE record's payload).
 * The bytes stay owned by the caller and must outlive the backend.  The
 * decoder is reset between chunks (perf does not guarantee continuity). */
struct coresight_chunk {
	const uint8_t *data;
	size_t size;
	uint64_t offset;   /* offset of data in the input, for ev.offset */
	uint64_t time;     /* perf time for image lookups (or
			    * IMGSTORE_TIME_UNKNOWN) */
	int32_t pid;       /* address space for image lookups */
};

struct coresight_queue_desc {
	const struct coresight_chunk *chunks;
	size_t nchunks;
	int cpu;           /* the queue's CPU, -1 for per-thread queues */
	int formatted;     /* 1: 16-byte CoreSight frames (ETR/ETB sinks);
			    * 0: one source's raw stream (TRBE) */
};

/* Builds a backend over perf AUX queues: each queue gets decoders for the
 * sources in info (formatted: all with a valid trace ID; raw: the one of
 * the queue's CPU).  Arrays are copied; chunk bytes are not.  threads as
 * for coresight_open_snapshot. */
int coresight_open_perf(const struct cs_etm_info *info,
			const struct coresight_queue_desc *queues,
			size_t nqueues, struct imgstore *st, unsigned threads,
			struct backend **out, char *err, size_t errlen);

/* An OpenCSD instruction range (or an inaccessible address), as decoded. */
struct coresight_range {
	uint32_t queue;
	int32_t cpu;
	uint8_t trace_id;
	uint8_t nacc;        /* 1: ADDR_NACC at start; end/ninsns are 0 */
	uint8_t mode;        /* enum ptd_exec_mode */
	uint64_t offset;     /* trace index of the packet */
	uint64_t start, end; /* [start, end) */
	uint32_t ninsns;
};

/* Debug/test interface: the next instruction range or NACC, skipping all
 * other elements.  Use either this or backend->next on one backend, not
 * both.  Returns 0, PTD_ERR_END, or a negative error. */
int coresight_next_range(struct backend *b, struct coresight_range *r);

/* Number of queues, and what queue i decodes. */
size_t coresight_queue_count(const struct backend *b);
int coresight_queue_info(const struct backend *b, size_t i, int *cpu,
			 uint8_t *trace_id, int *proto);

/* Warnings collected while opening (dump files missing, overlapping dumps,
 * sources skipped): count and the i-th message. */
size_t coresight_warning_count(const struct backend *b);
const char *coresight_warning(const struct backend *b, size_t i);

#endif
