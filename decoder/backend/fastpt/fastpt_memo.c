/* SPDX-License-Identifier: MIT */
#include "fastpt_memo.h"

#include <string.h>
#include <sys/mman.h>

void memo_put(struct memo *m, const struct memo_run *run)
{
	struct memo *e = memo_set(m, memo_hash(run->start, run->last_ip_in, run->bytes));

	/* the entry stored last stays, in the second way */
	if (e->start != run->start || e->last_ip_in != run->last_ip_in ||
	    e->len != run->len || memcmp(e->bytes, run->bytes, run->len))
		e[1] = e[0];
	e->start = run->start;
	e->next = run->next;
	e->last_ip_in = run->last_ip_in;
	e->last_ip_out = run->last_ip_out;
	e->epoch = run->epoch;
	e->len = (uint8_t)run->len;
	e->nrec = (uint8_t)run->nrec;
	e->ninsn = 0;
	memcpy(e->bytes, run->bytes, run->len);
	for (size_t i = 0; i < run->nrec; i++) {
		const struct ptd_block *r = &run->recs[i];

		e->rec[i].b = (struct fblock *)r->priv;
		e->rec[i].ninsn = r->ninsn;
		e->ninsn += r->ninsn;
	}
}

struct memo *memo_table_new(void)
{
	/* Page-aligned (an entry's key and bytes share a cache line) and
	 * zero-filled on first touch: clearing the 1.5 MiB up front would
	 * cost every thread hundreds of page faults before its first block,
	 * a noticeable part of a short trace's decode. */
	void *m = mmap(NULL, sizeof(struct memo) << MEMO_BITS, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

void memo_table_clear(struct memo *m)
{
	memset(m, 0, sizeof(*m) << MEMO_BITS);
}

void memo_table_free(struct memo *m)
{
	if (m)
		munmap(m, sizeof(*m) << MEMO_BITS);
}
