/* SPDX-License-Identifier: MIT */
/*
 * csbackend - the state of the CoreSight backend (backend/coresight/) that
 * its modules share: queues, units, the consumer's decoder and position,
 * and the event being built.  coresight.c owns it (open, destroy); cspool
 * moves the consumer through the units; csevent turns their elements into
 * events.  Types only.
 */
#ifndef PTD_CSBACKEND_H
#define PTD_CSBACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "coresight.h"
#include "csdec.h"
#include "ptdecode.h"
#include "util.h"

/* Instruction events (not A64 ranges) per run of blocks. */
#define CS_EV_SLOTS 256
#define CS_NACC_SLOTS 4096

/* A queue: one decode tree over its chunks. */
struct csq {
	struct cs_source *srcs;  /* decoders of this queue's tree */
	size_t nsrcs;
	int cpu;
	int formatted;
	uint32_t dfmt_flags;
	struct coresight_chunk *chunks;
	size_t nchunks;
};

/* A unit of decoding: chunks [c0, c1) of queue q.  The decoder starts each
 * chunk from reset (perf's AUXTRACE records need not continue each other;
 * other queues are one chunk), so units decode independently, on any
 * thread, to the same elements. */
struct cs_unit {
	size_t q, c0, c1;
	uint64_t bytes;
};

struct cs_pool;

struct cs_backend {
	struct backend b;
	struct imgstore *st;
	struct util_map *maps;   /* files holding the chunks, unmapped at the
				  * end */
	size_t nmaps;
	struct csq *q;
	size_t nq, cur;

	struct cs_unit *units;
	size_t nunits, unitcap;
	size_t ucur;             /* the unit being consumed */
	int ustarted;            /* units[ucur] is under way */
	size_t dead_q;           /* 1 + a queue a fatal error ended */
	unsigned threads;
	int fast;                /* ETMv4 units on the fast path (csfast) */
	uint64_t units_fast, units_fallback;  /* atomic */
	/* pieces of units walked ahead by another thread (csfast): results
	 * kept, and redone by the owner as the states did not match */
	uint64_t pieces_ahead, pieces_redone;  /* atomic */

	/* the consumer's decoder, and the elements being consumed (its own
	 * or a pool result's) */
	struct cs_dec main;
	int own;                 /* units[ucur] decoded by main step by step */
	int excl;                /* ... holding the pool's exclusive mode */
	const struct cs_elem *el;
	const char *el_str;
	size_t el_head, el_n;

	/* the pool: units ahead of ucur decoded on other threads */
	struct cs_pool *pool;

	/* an instruction range being expanded */
	int in_range;
	struct cs_elem r;
	uint64_t ip;
	uint32_t ni;

	int have_pending;
	struct ptd_event pending;
	/* what every event starts from (copied: cheaper than zeroing a
	 * struct in place) */
	struct ptd_event ev0;

	/* next_blocks: the run handed out, instruction events in it, and
	 * the instructions of the current range handed out already */
	struct ptd_block *blk;
	size_t blk_n, blk_cap;
	struct ptd_event evs[CS_EV_SLOTS];
	size_t ev_n;
	uint32_t blk_skip;

	/* PE context */
	int have_ctx;
	uint32_t ctxid, vmid;
	uint64_t tsc;

	/* perf's order keys (cskey.h), when merged with other queues: ev.tsc
	 * is then the key of the element being turned into events */
	struct cskey *keys;
	uint64_t key;

	/* the CPU of the last (queue, trace ID) an event was made for */
	size_t cpu_q;
	int cpu_id;              /* -1: none yet */
	int32_t cpu;

	/* "no code bytes" texts by address: traces of code not in the
	 * images have millions of these gaps at a few addresses */
	uint64_t nacc_addr[CS_NACC_SLOTS];
	/* which slots hold a text: the hit test reads these and nacc_addr,
	 * not the texts (too big a table to stay in the cache) */
	uint64_t nacc_used[CS_NACC_SLOTS / 64];
	char nacc_msg[CS_NACC_SLOTS][128];

	char **warn;
	size_t nwarn;
	char msg[512];
	char errmsg[512];
};

#endif
