/* SPDX-License-Identifier: MIT */
/*
 * fastpt_memo - the fast Intel PT decoder's run memo (backend stage,
 * backend/fastpt/): a table of runs the walk decoded, to replay.
 *
 * A run: from block `start` with last_ip, the trace bytes `bytes` (whole
 * packets, ending with the TIP of an indirect jump) were walked to the
 * records rec[] and left the walk at block `next` with last_ip_out.  The
 * same bytes from the same state walk the same way, so a match is
 * replayed without decoding its packets again: loops through indirect
 * branches are otherwise bound by one libipt packet call per TNT and TIP.
 * The walk (fastpt_walk.c) decides what to record and replays; runs with
 * calls or returns (return-stack state), events, TSC or mode packets are
 * never stored, nor MTC or CYC packets where the time of blocks is
 * needed.  Where only events read the time, runs are keyed without their
 * PAD, MTC and CYC packets (the walk's memo_key), so a loop repeats in
 * the memo whatever the timing packets in it; those are fed to the
 * clock when the run is replayed.
 *
 * The table is direct-mapped, one per worker, part of its block cache
 * (emptied with it: entries point at blocks).  Lookups are static inline:
 * the walk makes one per indirect branch.
 */
#ifndef PTD_FASTPT_MEMO_H
#define PTD_FASTPT_MEMO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ptdecode.h"

struct fblock;

#define MEMO_BITS 13
#define MEMO_BYTES 16
#define MEMO_RECS 8
#define MEMO_MIN 4           /* the hash key is the first 4 bytes */

struct memo {
	const struct fblock *start, *next;
	uint64_t last_ip_in, last_ip_out;
	uint64_t epoch;           /* every block checked valid in this epoch */
	uint32_t ninsn;
	uint8_t len, nrec;
	uint8_t bytes[MEMO_BYTES];
	struct { struct fblock *b; uint32_t ninsn; } rec[MEMO_RECS];
};

/* A run the walk recorded, for memo_put. */
struct memo_run {
	const struct fblock *start, *next;
	uint64_t last_ip_in, last_ip_out;
	uint64_t epoch;
	const uint8_t *bytes;     /* len bytes: MEMO_MIN..MEMO_BYTES */
	size_t len;
	const struct ptd_block *recs;  /* nrec records: 1..MEMO_RECS */
	size_t nrec;
};

/* The table slot of a run from block b with last_ip whose bytes start
 * with the 4 bytes w (as memcpy reads them). */
static inline size_t memo_hash_word(const struct fblock *b, uint64_t last_ip,
				    uint32_t w)
{
	return (size_t)((((uintptr_t)b >> 6) ^ (last_ip * 0x9e3779b97f4a7c15ull) ^
			 ((uint64_t)w * 0xc2b2ae3d27d4eb4full)) >> (64 - MEMO_BITS));
}

static inline size_t memo_hash(const struct fblock *b, uint64_t last_ip,
			       const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return memo_hash_word(b, last_ip, w);
}

/* Byte i (< 4) of a hash word as memcpy would place it. */
static inline uint32_t memo_word_byte(uint8_t v, unsigned i)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (uint32_t)v << (8 * (3 - i));
#else
	return (uint32_t)v << (8 * i);
#endif
}

/* The stored run from block start with last_ip over the coming trace bytes
 * p[0..avail) (avail >= MEMO_MIN), or NULL. */
static inline struct memo *memo_find(struct memo *m, const struct fblock *start,
				     uint64_t last_ip, const uint8_t *p,
				     uint64_t avail)
{
	struct memo *e = &m[memo_hash(start, last_ip, p)];

	if (e->start != start || e->last_ip_in != last_ip || e->len > avail)
		return NULL;
	for (unsigned i = MEMO_MIN; i < e->len; i++)  /* the first 4: below */
		if (e->bytes[i] != p[i])
			return NULL;
	if (memcmp(e->bytes, p, MEMO_MIN))
		return NULL;
	return e;
}

/* Starts loading the entry the lookup after replaying e will read (it
 * depends on e, so it would otherwise wait for memory); p[0, avail) are
 * the bytes after e's run. */
static inline void memo_prefetch_next(const struct memo *m, const struct memo *e,
				      const uint8_t *p, uint64_t avail)
{
	if (avail >= MEMO_MIN)
		__builtin_prefetch(&m[memo_hash(e->next, e->last_ip_out, p)]);
}

/* Stores run (replacing the entry its key maps to). */
void memo_put(struct memo *m, const struct memo_run *run);

/* A zeroed table of 1 << MEMO_BITS entries, or NULL. */
struct memo *memo_table_new(void);

void memo_table_clear(struct memo *m);

void memo_table_free(struct memo *m);

#endif
