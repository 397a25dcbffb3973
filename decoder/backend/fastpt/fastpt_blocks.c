/* SPDX-License-Identifier: MIT */
#include "fastpt_blocks.h"
#include "fastpt_memo.h"

#include <stdlib.h>
#include <string.h>

void *bcache_alloc(struct bcache *c, size_t n)
{
	struct arena_chunk *a = c->chunks;

	n = (n + 63) & ~(size_t)63;  /* blocks start on a cache line */
	if (!a || a->used + n > a->size) {
		size_t size = n > (1u << 20) ? n : (1u << 20);

		a = aligned_alloc(64, sizeof(*a) + size);
		if (!a)
			return NULL;
		a->next = c->chunks;
		a->used = 0;
		a->size = size;
		c->chunks = a;
		c->bytes += size;
	}
	a->used += n;
	return a->data + a->used - n;
}

void bcache_insert(struct bcache *c, struct fblock *b)
{
	size_t h = hash_ip(b->ip);

	b->hnext = c->table[h];
	c->table[h] = b;
}

void bcache_free_chunks(struct arena_chunk *a)
{
	while (a) {
		struct arena_chunk *n = a->next;

		free(a);
		a = n;
	}
}

struct arena_chunk *bcache_reset(struct bcache *c)
{
	struct arena_chunk *old = c->chunks;

	c->chunks = NULL;
	memset(c->table, 0, sizeof(c->table));
	memset(c->tcache, 0, sizeof(c->tcache));
	if (c->memo)
		memo_table_clear(c->memo);
	c->bytes = 0;
	return old;
}

void bcache_free(struct bcache *c)
{
	bcache_free_chunks(c->chunks);
	c->chunks = NULL;
	memo_table_free(c->memo);
	c->memo = NULL;
}
