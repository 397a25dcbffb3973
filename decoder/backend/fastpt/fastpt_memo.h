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
 * The table is MEMO_WAYS-way set-associative (runs whose keys collide
 * would otherwise evict each other on every lookup), one per worker, part of
 * its block cache (emptied with it: entries point at blocks).  Lookups
 * are static inline: the walk makes one per indirect branch, and replays
 * runs that follow each other in one loop.
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
#define MEMO_WAYS 4          /* entries a set (a key's slots) holds */

struct memo {
	/* The first cache line holds all that a lookup and a count-only
	 * replay read (the key's first 8 bytes included), among them where
	 * all its blocks (records and next) are valid, so a replay checks
	 * that without loading them: the address space they need
	 * (IMGSTORE_KERNEL: any), their mode and their time window. */
	const struct fblock *start, *next;
	uint64_t last_ip_in, last_ip_out;
	uint64_t valid_from, valid_to;
	uint32_t ninsn : 24, len : 8;     /* runs of MEMO_NINSN_MAX and more are not stored */
	int32_t pid : 28, mode : 4;       /* pids outside MEMO_PID_MIN..MAX are not stored */
	uint8_t bytes[MEMO_BYTES];
	uint8_t nrec;
	struct fblock *rec_b[MEMO_RECS];
	uint32_t rec_ninsn[MEMO_RECS];
} __attribute__((aligned(64)));

#define MEMO_NINSN_MAX (1u << 24)
#define MEMO_PID_MIN (-(1 << 27))
#define MEMO_PID_MAX ((1 << 27) - 1)

/* A run the walk recorded, for memo_put. */
struct memo_run {
	const struct fblock *start, *next;
	uint64_t last_ip_in, last_ip_out;
	const uint8_t *bytes;     /* len bytes: MEMO_MIN..MEMO_BYTES */
	size_t len;
	const struct ptd_block *recs;  /* nrec records: 1..MEMO_RECS */
	size_t nrec;
};

/* The n bytes at p (n <= 8; 4 and 8 as one load) as a little-endian number: the key's bytes
 * are compared and hashed as words, the same on any byte order. */
static inline uint64_t memo_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	if (n == 8) {
		memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		v = __builtin_bswap64(v);
#endif
		return v;
	}
	if (n == 4) {
		uint32_t w;

		memcpy(&w, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap32(w);
#endif
		return w;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The mask of a word's first n key bytes (n <= 8 used, more: all). */
static inline uint64_t memo_len_mask(unsigned n)
{
	return n >= 8 ? ~0ull : (1ull << (8 * n)) - 1;
}

/* The table slot of a run with last_ip whose bytes start with the 4
 * bytes w (memo_le of them).  Not its start block: the walk's next
 * lookup can then be addressed from the trace bytes alone
 * (memo_scan_run), before the entry of this one has loaded. */
static inline size_t memo_hash_word(uint64_t last_ip, uint32_t w)
{
	return (size_t)(((last_ip * 0x9e3779b97f4a7c15ull) ^
			 ((uint64_t)w * 0xc2b2ae3d27d4eb4full)) >> (64 - MEMO_BITS));
}

static inline size_t memo_hash(uint64_t last_ip, const uint8_t *p)
{
	return memo_hash_word(last_ip, (uint32_t)memo_le(p, MEMO_MIN));
}

/* The IP of the TIP packet whose header byte is b and whose n IP bytes
 * (fastpt_ip_bytes of its IPC: 2, 4, 6 or 8) are at q, decompressed
 * against last_ip. */
static inline uint64_t memo_tip_ip(uint8_t b, const uint8_t *q, unsigned n,
				   uint64_t last_ip)
{
	uint64_t ip = memo_le(q, n == 6 ? 4 : n);

	if (n == 6)
		ip |= memo_le(q + 4, 2) << 32;
	switch (b >> 5) {
	case 1: ip |= last_ip & ~0xffffull; break;
	case 2: ip |= last_ip & ~0xffffffffull; break;
	case 3: ip = (uint64_t)((int64_t)(ip << 16) >> 16); break;
	case 4: ip |= last_ip & ~0xffffffffffffull; break;
	}
	return ip;
}

/* Where the run at p[0, avail) with last_ip ends if it is one that the
 * memo stores without timing packets (short TNTs and PADs, then a TIP
 * with an IP): the bytes it covers, and *last_ip_out the TIP's IP.  0
 * when the bytes are not such a run.  A prediction only: the entry
 * found decides. */
static inline __attribute__((always_inline)) unsigned
memo_scan_run(const uint8_t *p, uint64_t avail, uint64_t last_ip, uint64_t *last_ip_out)
{
	uint64_t lim = avail < MEMO_BYTES ? avail : MEMO_BYTES;

	for (unsigned o = 0; o < lim; o++) {
		uint8_t b = p[o];
		unsigned n;

		if (!(b & 1) && b != 2)          /* short TNT or PAD */
			continue;
		if ((b & 0x1f) != 0x0d)          /* not a TIP */
			return 0;
		switch (b >> 5) {
		case 1: n = 2; break;
		case 2: n = 4; break;
		case 3: case 4: n = 6; break;
		case 6: n = 8; break;
		default: return 0;
		}
		if (o + 1 + n > lim)
			return 0;
		*last_ip_out = memo_tip_ip(b, p + o + 1, n, last_ip);
		return o + 1 + n;
	}
	return 0;
}

/* The set (MEMO_WAYS entries, the first the most recently stored) of
 * table slot h: runs whose keys collide are all kept. */
static inline struct memo *memo_set(struct memo *m, size_t h)
{
	return &m[h & ~(size_t)(MEMO_WAYS - 1)];
}

/* Starts loading both entries' keys of set e. */
static inline void memo_prefetch_set(const struct memo *e)
{
	for (int i = 0; i < MEMO_WAYS; i++)
		__builtin_prefetch(e + i);
}

/* Whether a key of n bytes, words k0 (bytes 0-7) and k1 (8-15) with
 * zeros past n, is entry e's (n == e->len). */
static inline int memo_key_equal(const struct memo *e, uint64_t k0, uint64_t k1)
{
	unsigned n = e->len;

	return k0 == (memo_le(e->bytes, 8) & memo_len_mask(n)) &&
	       k1 == (n > 8 ? memo_le(e->bytes + 8, 8) & memo_len_mask(n - 8) : 0);
}

/* Whether entry e holds the run from block start with last_ip over the
 * coming trace bytes p[0..avail) (avail >= MEMO_MIN). */
static inline int memo_match(const struct memo *e, const struct fblock *start,
			     uint64_t last_ip, const uint8_t *p, uint64_t avail)
{
	unsigned n = e->len;

	if (e->start != start || e->last_ip_in != last_ip || n > avail ||
	    memo_le(p, 4) != memo_le(e->bytes, 4))
		return 0;
	if (n == MEMO_MIN)  /* one TNT and a TIP, the most common run */
		return 1;
	if (avail >= MEMO_BYTES)  /* whole words */
		return ((memo_le(p, 8) ^ memo_le(e->bytes, 8)) & memo_len_mask(n)) == 0 &&
		       (n <= 8 || ((memo_le(p + 8, 8) ^ memo_le(e->bytes + 8, 8)) &
				   memo_len_mask(n - 8)) == 0);
	return !memcmp(e->bytes, p, n);
}

/* The entry of set e holding the run from block start with last_ip over
 * the coming trace bytes p[0..avail) (avail >= MEMO_MIN), or NULL. */
static inline struct memo *memo_set_find(struct memo *e, const struct fblock *start,
					 uint64_t last_ip, const uint8_t *p,
					 uint64_t avail)
{
	for (int i = 0; i < MEMO_WAYS; i++)
		if (memo_match(e + i, start, last_ip, p, avail))
			return e + i;
	return NULL;
}

/* The stored run from block start with last_ip over the coming trace bytes
 * p[0..avail) (avail >= MEMO_MIN), or NULL. */
static inline struct memo *memo_find(struct memo *m, const struct fblock *start,
				     uint64_t last_ip, const uint8_t *p,
				     uint64_t avail)
{
	return memo_set_find(memo_set(m, memo_hash(last_ip, p)), start,
			     last_ip, p, avail);
}

/* The set the lookup after replaying e will read, loading (it depends
 * on e, so it would otherwise wait for memory); p[0, avail) are the
 * bytes after e's run.  NULL when too few bytes are left. */
static inline struct memo *memo_prefetch_next(struct memo *m, const struct memo *e,
					      const uint8_t *p, uint64_t avail)
{
	struct memo *n;

	if (avail < MEMO_MIN)
		return NULL;
	n = memo_set(m, memo_hash(e->last_ip_out, p));
	memo_prefetch_set(n);
	return n;
}

/* Stores run as the first entry of the set its key maps to (the first
 * moves to the second, unless it is the same run's); not a run whose
 * blocks are never valid together (modes or address spaces differ). */
void memo_put(struct memo *m, const struct memo_run *run);

/* A zeroed table of 1 << MEMO_BITS entries, or NULL. */
struct memo *memo_table_new(void);

void memo_table_clear(struct memo *m);

void memo_table_free(struct memo *m);

#endif
