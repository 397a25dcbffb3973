/* SPDX-License-Identifier: MIT */
#include "fastpt_memo.h"

#include "fastpt_blocks.h"

#include <string.h>
#include <sys/mman.h>

/* Where a run's blocks are all valid, as fblock_valid checks each. */
struct memo_where {
	int32_t pid;
	uint8_t mode;
	uint64_t valid_from, valid_to;
};

/* Narrows w to where block b is valid too; 0 when that is nowhere. */
static int memo_narrow(struct memo_where *w, const struct fblock *b)
{
	if (b->mode != w->mode)
		return 0;
	if (b->pid != IMGSTORE_KERNEL) {
		if (w->pid != IMGSTORE_KERNEL && w->pid != b->pid)
			return 0;
		w->pid = b->pid;
	}
	if (b->valid_from > w->valid_from)
		w->valid_from = b->valid_from;
	if (b->valid_to < w->valid_to)
		w->valid_to = b->valid_to;
	return 1;
}

void memo_put(struct memo *m, const struct memo_run *run)
{
	struct memo *e = memo_set(m, memo_hash(run->last_ip_in, run->bytes));
	struct memo_where v = {
		.pid = IMGSTORE_KERNEL,
		.mode = run->next->mode,
		.valid_from = 0,
		.valid_to = IMGSTORE_FOREVER,
	};
	uint64_t ninsn = 0;

	if (!memo_narrow(&v, run->next))
		return;
	for (size_t i = 0; i < run->nrec; i++) {
		if (!memo_narrow(&v, run->recs[i].priv))
			return;
		ninsn += run->recs[i].ninsn;
	}
	/* what the entry's fields cannot hold (no replay of a run that long
	 * could be taken anyway: INTELPT_NELOOP_INSNS) */
	if (ninsn >= MEMO_NINSN_MAX || v.pid < MEMO_PID_MIN || v.pid > MEMO_PID_MAX)
		return;
	/* the entries stored before move a way down (the last way's goes),
	 * unless the first is the same run's */
	if (e->start != run->start || e->last_ip_in != run->last_ip_in ||
	    e->len != run->len || memcmp(e->bytes, run->bytes, run->len))
		memmove(e + 1, e, (MEMO_WAYS - 1) * sizeof(*e));
	e->start = run->start;
	e->next = run->next;
	e->last_ip_in = run->last_ip_in;
	e->last_ip_out = run->last_ip_out;
	e->valid_from = v.valid_from;
	e->valid_to = v.valid_to;
	e->ninsn = (uint32_t)ninsn;
	e->len = (uint8_t)run->len;
	e->pid = v.pid;
	e->mode = v.mode;
	memcpy(e->bytes, run->bytes, run->len);
	e->nrec = (uint8_t)run->nrec;
	for (size_t i = 0; i < run->nrec; i++) {
		e->rec_b[i] = (struct fblock *)run->recs[i].priv;
		e->rec_ninsn[i] = run->recs[i].ninsn;
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
