/* SPDX-License-Identifier: MIT */
/*
 * fastpt_blocks - the fast Intel PT decoder's block cache (backend stage,
 * backend/fastpt/).
 *
 * A worker's cache of decoded basic blocks.  A block remembers the time
 * window and address space its bytes were valid in, and its successors
 * (taken / not taken, last indirect target), so the walk's hot path is a
 * pointer chase per branch.  Blocks live in an arena emptied as a whole
 * (bcache_reset), never freed one by one.  fastpt_build.c decodes them.
 *
 * The lookups here are static inline: the walk calls them per block.
 */
#ifndef PTD_FASTPT_BLOCKS_H
#define PTD_FASTPT_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "imgstore.h"

enum fb_kind {
	FB_FALL,       /* ends without a branch (length limit, image end) */
	FB_COND,
	FB_JUMP,       /* direct */
	FB_CALL,       /* direct, pushes the return address */
	FB_CALL_NEXT,  /* call to the next instruction: not pushed (libipt) */
	FB_RET,
	FB_IND_JUMP,
	FB_IND_CALL,
	FB_FAR,        /* syscall, sysenter, int, far call/jmp/ret, iret... */
};

#define FB_MAX_INSN 512

/* A basic block as decoded from one image version.  What the walk reads
 * for every block fits the first 64-byte cache line. */
struct fblock {
	uint64_t ip;
	struct fblock *succ[2];          /* [0] fall-through, [1] target; for
					  * returns and indirect branches [0]
					  * is the last target seen */
	uint64_t target, next_ip;
	uint64_t valid_from, valid_to;   /* time window of its bytes */
	int32_t pid;                     /* address space of its bytes */
	uint32_t ninsn;
	/* second line */
	uint64_t epoch;                  /* walk epoch it was last valid in */
	uint8_t kind, mode, last_iclass;
	uint32_t len;
	uint32_t image;                  /* image version of its first byte */
	uint32_t mark;                   /* a reader's caller's (the trace
					  * index's summaries): 0 when made */
	uint64_t end_ip;
	struct fblock *hnext;            /* hash chain */
	uint16_t *off;                   /* instruction offsets, ninsn */
	uint8_t *bytes;                  /* the code, len bytes */
	/* disassembly of each instruction (capstone formats it while
	 * classifying anyway), kept once a text consumer asked for it:
	 * instruction i at text + toff[i]; NULL otherwise */
	const uint32_t *toff;
	const char *text;
};

/* Where the walk is: a block is used only where its bytes are the code
 * executed there. */
struct fwhere {
	uint64_t ip;
	uint64_t time;            /* perf ns or IMGSTORE_TIME_UNKNOWN */
	uint64_t time_hi;         /* no later than this in the segment: the
				   * next PSB's TSC (the walk times from TSC
				   * packets only; libipt also uses MTC/CYC,
				   * so a block is trusted only if its code
				   * was valid over [time, time_hi]) */
	int32_t pid;
	uint8_t mode;             /* enum ptd_exec_mode */
	uint64_t *epoch;          /* the worker's: bumped whenever time, thread
				   * or mode change, so a block's validity is
				   * checked once per epoch */
};

/* Memory for blocks comes from an arena freed as a whole. */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	uint8_t pad[40];
	uint8_t data[];          /* 64-byte aligned within the chunk */
};

#define HASH_BITS 16
#define BCACHE_MAX_DEFAULT ((size_t)256 << 20)  /* bytes of blocks per worker */

#define TCACHE_BITS 10

struct memo;

struct bcache {
	struct memo *memo;       /* run memo (fastpt_memo.h), NULL until used */
	struct fblock *table[1u << HASH_BITS];
	/* targets of indirect branches and returns, direct-mapped: small
	 * enough to stay in L1, unlike the table */
	struct fblock *tcache[1u << TCACHE_BITS];
	struct arena_chunk *chunks;
	size_t bytes;
};

static inline size_t hash_ip(uint64_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> (64 - HASH_BITS));
}

/* The slot of ip in the indirect-target cache. */
static inline struct fblock **bcache_tslot(struct bcache *c, uint64_t ip)
{
	return &c->tcache[(ip * 0x9e3779b97f4a7c15ull) >> (64 - TCACHE_BITS)];
}

/* Whether b's code is what runs at `at` (checked once per epoch). */
static inline int fblock_valid(struct fblock *b, const struct fwhere *at)
{
	if (b->epoch == *at->epoch)
		return 1;
	if (b->mode == at->mode &&
	    (b->pid == at->pid || b->pid == IMGSTORE_KERNEL) &&
	    (at->time == IMGSTORE_TIME_UNKNOWN ||
	     (at->time >= b->valid_from && at->time_hi < b->valid_to))) {
		b->epoch = *at->epoch;
		return 1;
	}
	return 0;
}

/* The cached block at at->ip valid there, or NULL. */
static inline struct fblock *bcache_find(struct bcache *c, const struct fwhere *at)
{
	for (struct fblock *b = c->table[hash_ip(at->ip)]; b; b = b->hnext)
		if (b->ip == at->ip && fblock_valid(b, at))
			return b;
	return NULL;
}

/* Index of the instruction at ip in b, or -1. */
static inline int fblock_insn_index(const struct fblock *b, uint64_t ip)
{
	uint64_t o = ip - b->ip;

	if (ip < b->ip || ip > b->end_ip)
		return -1;
	for (uint32_t i = 0; i < b->ninsn; i++)
		if (b->off[i] == o)
			return (int)i;
	return -1;
}

/* n bytes for a block, 64-byte aligned; NULL when out of memory. */
void *bcache_alloc(struct bcache *c, size_t n);

/* Adds a block just built to the hash table. */
void bcache_insert(struct bcache *c, struct fblock *b);

/* Empties the cache; its blocks stay allocated and are returned to the
 * caller (records of segments not yet consumed still point at them), to
 * free with bcache_free_chunks. */
struct arena_chunk *bcache_reset(struct bcache *c);

void bcache_free_chunks(struct arena_chunk *a);

/* Frees the blocks and the run memo. */
void bcache_free(struct bcache *c);

#endif
