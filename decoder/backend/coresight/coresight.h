/* SPDX-License-Identifier: MIT */
/*
 * coresight - the Arm CoreSight backend (ETMv3, PTM, ETMv4, ETE) on
 * OpenCSD's C API, in backend/coresight/: what the rest of the decoder
 * sees of it.  Its modules: cstree (decode trees and protocol
 * configurations), csguard (the packet guard), csdec (one decoder stepped
 * through a unit), cspool (units and parallel decoding), csevent (elements
 * to events), cskey (perf's order keys for a merged timeline); coresight.c
 * opens and closes the backend.
 *
 * The backend is opened from a description (struct coresight_desc) that
 * input loaders build: queues, each one decode tree over a list of chunks
 * with decoders for the trace sources (trace ID, protocol, configuration
 * registers, CPU) that may occur in it.  Queues are decoded one after the
 * other in the order given; elements of different trace IDs within a
 * queue come in buffer order.  ev.queue is the queue index, ev.cpu the core (-1 if unknown).
 *
 * Parallel decoding.  The decoder starts every chunk from reset, so a
 * queue is decoded in units (one chunk or several small consecutive ones)
 * that decode independently.  With threads > 1 units ahead of the
 * consumer are decoded on a pool of threads - 1 threads (the caller
 * decodes too), each with its own decode tree, and their elements turned
 * into events in unit order, so the events are the same for any thread
 * count.  OpenCSD's error log is a global object: it is off while a pool
 * runs, and a unit with an OpenCSD error is decoded again alone to read
 * its texts.  See docs/ARCHITECTURE.md.
 *
 * Code bytes are read only through imgstore_read_r(), at each chunk's pid
 * and time, so that time-versioned images work.
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
struct util_map;

/* One piece of a queue's trace (for perf, an AUXTRACE record's payload).
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

/* A queue as the backend decodes it: a decode tree over chunks. */
struct coresight_queue {
	const struct coresight_chunk *chunks;
	size_t nchunks;
	const struct cs_source *sources; /* the decoders of its tree */
	size_t nsources;
	int cpu;           /* the queue's CPU, -1 if unknown */
	int formatted;     /* 1: 16-byte CoreSight frames (ETR/ETB sinks);
			    * 0: one source's raw stream (TRBE) */
	int frame_syncs;   /* formatted: 1: frame syncs between the frames
			    * (DSTREAM captures); 0: frames aligned in
			    * memory */
};

/* What the backend decodes.  Arrays are copied; chunk bytes are not. */
struct coresight_desc {
	const struct coresight_queue *queues;
	size_t nqueues;
	/* files holding the chunks' bytes: once the backend is open it owns
	 * them and unmaps them when destroyed (on failure the caller still
	 * does) */
	const struct util_map *maps;
	size_t nmaps;
	/* the loader's warnings, kept for coresight_warning() */
	const char *const *warnings;
	size_t nwarnings;
};

/* A perf AUX queue, for coresight_open_perf. */
struct coresight_queue_desc {
	const struct coresight_chunk *chunks;
	size_t nchunks;
	int cpu;           /* the queue's CPU, -1 for per-thread queues */
	int formatted;     /* as in struct coresight_queue */
};

/* Returns 0 when this build decodes CoreSight trace, else
 * PTD_ERR_UNSUPPORTED with the reason in err. */
int coresight_available(char *err, size_t errlen);

/* The linked OpenCSD's version (ocsd_get_version), e.g. "1.3.3", or
 * "none" in a build without OpenCSD. */
void coresight_opencsd_version(char *buf, size_t len);

/* The architecture and profile (struct cs_source's arch and profile) of a
 * core from its type name: Arm's names ("Cortex-A53") and the patterns
 * "ARMvM[.m]-P" and "ARM-AA64[-P]".  Returns 0, or -1 for a name whose
 * architecture is not known. */
int coresight_core_arch(const char *type, int *arch, int *profile);

/* A flag in coresight_open's threads: decode every unit with OpenCSD's
 * full decoder (--decoder=opencsd) rather than ETMv4 units on the fast
 * path (csfast.h) where it can follow them. */
#define CORESIGHT_OPENCSD (1u << 31)

/* Builds a backend over the queues of desc, every queue's configuration
 * checked now rather than mid-stream.  Code is read from st, which must
 * not change while the backend lives.  threads: decoding threads, the
 * caller's included (0: one per core; 1: all on the caller's thread),
 * maybe with CORESIGHT_OPENCSD.
 * Returns 0 or a negative enum ptd_error (PTD_ERR_UNSUPPORTED for builds
 * without OpenCSD) with a message in err. */
int coresight_open(const struct coresight_desc *desc, struct imgstore *st,
		   unsigned threads, struct backend **out, char *err,
		   size_t errlen);

/* coresight_open over perf AUX queues: each queue gets decoders for the
 * sources in info (formatted: all with a valid trace ID; raw: the one of
 * the queue's CPU).  Returns as coresight_open. */
int coresight_open_perf(const struct cs_etm_info *info,
			const struct coresight_queue_desc *queues,
			size_t nqueues, struct imgstore *st, unsigned threads,
			struct backend **out, char *err, size_t errlen);

/* For a merged timeline (backend/queuemerge.c, queuemerge_set_blocks):
 * from here on ev.tsc is the key perf orders the event by (cskey.h:
 * timestamp units, estimated per instruction range; 0: the block of the
 * event before) instead of the last timestamp.  Call before the first
 * event.  Returns 0 or PTD_ERR_NOMEM. */
int coresight_set_perf_keys(struct backend *b);

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

/* Number of queues, and what queue i decodes (its first source).  Returns
 * 0 or PTD_ERR_INVAL. */
size_t coresight_queue_count(const struct backend *b);
int coresight_queue_info(const struct backend *b, size_t i, int *cpu,
			 uint8_t *trace_id, int *proto);

/* Debug/test interface: units decoded so far on the fast path and by
 * OpenCSD's full decoder in their place (both 0 with CORESIGHT_OPENCSD). */
void coresight_fast_units(const struct backend *b, uint64_t *fast,
			  uint64_t *fallback);

/* The warnings of the description: count and the i-th message (NULL past
 * the end). */
size_t coresight_warning_count(const struct backend *b);
const char *coresight_warning(const struct backend *b, size_t i);

#endif
