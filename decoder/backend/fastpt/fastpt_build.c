/* SPDX-License-Identifier: MIT */
#include "fastpt_build.h"
#include "disasm.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A block being decoded, before it is stored. */
struct draft {
	uint64_t vend;             /* end of the image version read last */
	uint64_t from, to;         /* time window of its bytes */
	int32_t pid;               /* address space of its bytes */
	uint32_t image;            /* image version of its first byte */
	uint32_t n, len, tlen;     /* instructions, code and text bytes */
	uint8_t kind, last_iclass;
	uint64_t target;
	int keep_text;
	uint16_t off[FB_MAX_INSN];
	uint32_t toff[FB_MAX_INSN];
	uint8_t code[FB_MAX_INSN * 2 + 16];
};

void fbuilder_init(struct fbuilder *bd, struct imgstore *st, const int *keep_text)
{
	bd->st = st;
	bd->keep_text = keep_text;
}

void fbuilder_free(struct fbuilder *bd)
{
	for (int i = 0; i < 3; i++)
		disasm_free(bd->dis[i]);
	oracle_free(&bd->orc);
	free(bd->tbuf);
	memset(bd, 0, sizeof(*bd));
}

static struct disasm *dis_for(struct fbuilder *bd, uint8_t mode)
{
	int i = mode == PTD_MODE_16 ? 0 : mode == PTD_MODE_32 ? 1 : 2;
	static const enum disasm_arch arch[3] = { DISASM_X86_16, DISASM_X86_32,
						  DISASM_X86_64 };

	if (!bd->dis[i])
		bd->dis[i] = disasm_new(arch[i], 0, NULL, 0);
	return bd->dis[i];
}

/* Appends the text of the instruction d just classified to the builder's
 * scratch (at *tlen, its offset to *at); "(bad)" when capstone could not
 * decode it (libipt judged it: d holds no instruction then).  Returns 0
 * or -1 (memory). */
static int keep_insn_text(struct fbuilder *bd, struct disasm *d, uint32_t *tlen,
			  uint32_t *at)
{
	char t[160];
	int n = disasm_last_text(d, t, sizeof(t));

	if (n < 0)
		n = snprintf(t, sizeof(t), "(bad)");
	if (util_grow((void **)&bd->tbuf, &bd->tcap, *tlen + (size_t)n + 1, 1))
		return -1;
	memcpy(bd->tbuf + *tlen, t, (size_t)n + 1);
	*at = *tlen;
	*tlen += (uint32_t)n + 1;
	return 0;
}

/* The block kind and class an instruction of info->kind ends a block
 * with (next: the address after it).  Returns 0 for a non-branch (the
 * block goes on), 1 for a branch, -1 for a kind the walk does not know. */
static int classify(const struct disasm_insn_info *info, uint64_t next,
		    uint8_t *kind, uint8_t *iclass)
{
	switch (info->kind) {
	case DISASM_OTHER:
		return 0;
	case DISASM_COND_JUMP: *kind = FB_COND; *iclass = PTD_IC_COND_JUMP; break;
	case DISASM_JUMP: *kind = FB_JUMP; *iclass = PTD_IC_JUMP; break;
	case DISASM_CALL:
		*kind = info->target == next ? FB_CALL_NEXT : FB_CALL;
		*iclass = PTD_IC_CALL;
		break;
	case DISASM_IND_JUMP: *kind = FB_IND_JUMP; *iclass = PTD_IC_JUMP; break;
	case DISASM_IND_CALL: *kind = FB_IND_CALL; *iclass = PTD_IC_CALL; break;
	case DISASM_RETURN: *kind = FB_RET; *iclass = PTD_IC_RETURN; break;
	case DISASM_FAR_CALL: *kind = FB_FAR; *iclass = PTD_IC_FAR_CALL; break;
	case DISASM_FAR_RETURN: *kind = FB_FAR; *iclass = PTD_IC_FAR_RETURN; break;
	case DISASM_FAR_JUMP: *kind = FB_FAR; *iclass = PTD_IC_FAR_JUMP; break;
	default:
		return -1;
	}
	return 1;
}

/* Starts a draft at at->ip: the image version there gives the block's
 * window, address space and image.  Returns 0, or -1 (no code). */
static int draft_open(struct fbuilder *bd, const struct fwhere *at,
		      struct draft *dr)
{
	struct imgstore_hit hit;
	uint8_t ibuf[16];

	memset(&hit, 0, sizeof(hit));
	if (imgstore_read_r(bd->st, at->pid, at->ip, at->time, ibuf, sizeof(ibuf),
			    &hit, NULL, 0) <= 0)
		return -1;
	dr->vend = hit.start + hit.len;
	dr->from = hit.valid_from;
	dr->to = hit.valid_to;
	dr->pid = hit.pid;
	dr->image = (uint32_t)hit.version_id;
	dr->n = dr->len = dr->tlen = 0;
	dr->kind = FB_FALL;
	dr->last_iclass = PTD_IC_OTHER;
	dr->target = 0;
	dr->keep_text = __atomic_load_n(bd->keep_text, __ATOMIC_RELAXED);
	return 0;
}

/* Reads and classifies the instruction at ip into ibuf and *info.
 * Returns its length (> 0), or -1 when it cannot be read or decoded. */
static int read_insn(struct fbuilder *bd, struct disasm *d, const struct fwhere *at,
		     uint64_t ip, uint8_t ibuf[16], struct disasm_insn_info *info)
{
	uint8_t ic = PTD_IC_UNKNOWN;
	int got = imgstore_read_r(bd->st, at->pid, ip, at->time, ibuf, 16, NULL, NULL, 0);
	int rc;

	if (got <= 0)
		return -1;
	rc = disasm_insn_info(d, ibuf, (size_t)got, ip, info);
	if (rc > 0)
		return rc;
	/* capstone cannot decode it (e.g. AVX-512 in capstone 4): libipt
	 * judges; only non-branches are kept */
	rc = oracle_insn(&bd->orc, bd->st, at->pid, at->time, at->mode, ip, &ic);
	if (rc <= 0 || rc > got || ic != PTD_IC_OTHER)
		return -1;
	info->kind = DISASM_OTHER;
	return rc;
}

/* Code up to end straddles into the next version (adjacent pages): the
 * block is valid only while both are.  Returns 0, or -1 (no code). */
static int draft_span(struct fbuilder *bd, const struct fwhere *at, uint64_t end,
		      struct draft *dr)
{
	while (end > dr->vend) {
		struct imgstore_hit h2;

		if (imgstore_lookup(bd->st, at->pid, dr->vend, at->time, &h2) ||
		    h2.start + h2.len <= dr->vend)
			return -1;
		if (h2.valid_from > dr->from)
			dr->from = h2.valid_from;
		if (h2.valid_to < dr->to)
			dr->to = h2.valid_to;
		dr->vend = h2.start + h2.len;
	}
	return 0;
}

/* Adds the next instruction to the draft.  Returns 0 (the block goes on),
 * 1 (it ends with this branch) or -1 (the block cannot be built). */
static int draft_add(struct fbuilder *bd, struct disasm *d, const struct fwhere *at,
		     struct draft *dr)
{
	struct disasm_insn_info info;
	uint8_t ibuf[16];
	uint64_t ip = at->ip + dr->len;
	int size = read_insn(bd, d, at, ip, ibuf, &info), rc;

	if (size <= 0 || draft_span(bd, at, ip + (uint64_t)size, dr))
		return -1;
	if (dr->keep_text && keep_insn_text(bd, d, &dr->tlen, &dr->toff[dr->n]))
		return -1;
	dr->off[dr->n++] = (uint16_t)dr->len;
	memcpy(dr->code + dr->len, ibuf, (size_t)size);
	dr->len += (uint32_t)size;
	rc = classify(&info, ip + (uint64_t)size, &dr->kind, &dr->last_iclass);
	if (rc <= 0)
		return rc;
	if ((dr->kind == FB_COND || dr->kind == FB_JUMP || dr->kind == FB_CALL ||
	     dr->kind == FB_CALL_NEXT) && !info.has_target)
		return -1;
	dr->target = info.target;
	return 1;
}

/* The draft as a block in the cache's arena: the block, then its text
 * offsets and text (when kept), instruction offsets and code. */
static struct fblock *draft_store(struct bcache *c, const struct draft *dr,
				  const struct fwhere *at, const char *tbuf)
{
	uint32_t n = dr->n;
	struct fblock *b = bcache_alloc(c, sizeof(*b) +
					(dr->keep_text ? n * sizeof(uint32_t) + dr->tlen + 1 : 0) +
					n * sizeof(uint16_t) + dr->len);

	if (!b)
		return NULL;
	memset(b, 0, sizeof(*b));
	if (dr->keep_text) {
		uint32_t *t = (uint32_t *)(b + 1);

		memcpy(t, dr->toff, n * sizeof(uint32_t));
		b->toff = t;
		b->text = (const char *)(t + n);
		memcpy((char *)b->text, tbuf, dr->tlen);
		/* the offsets after the text: 2-byte aligned */
		b->off = (uint16_t *)(b->text + ((dr->tlen + 1) & ~1u));
	} else {
		b->off = (uint16_t *)(b + 1);
	}
	b->bytes = (uint8_t *)(b->off + n);
	memcpy(b->off, dr->off, n * sizeof(uint16_t));
	memcpy(b->bytes, dr->code, dr->len);
	b->ip = at->ip;
	b->ninsn = n;
	b->len = dr->len;
	b->end_ip = at->ip + dr->off[n - 1];
	b->next_ip = at->ip + dr->len;
	b->target = dr->kind == FB_FALL ? b->next_ip : dr->target;
	b->kind = dr->kind;
	b->mode = at->mode;
	b->last_iclass = dr->last_iclass;
	b->valid_from = dr->from;
	b->valid_to = dr->to;
	b->image = dr->image;
	b->pid = dr->pid;
	bcache_insert(c, b);
	return b;
}

struct fblock *fbuilder_block(struct fbuilder *bd, struct bcache *c,
			      const struct fwhere *at)
{
	struct disasm *d = dis_for(bd, at->mode);
	struct draft dr;
	int rc = 0;

	if (!d || at->mode == PTD_MODE_UNKNOWN || draft_open(bd, at, &dr))
		return NULL;
	while (!rc && dr.n < FB_MAX_INSN && dr.len + 16 <= sizeof(dr.code))
		rc = draft_add(bd, d, at, &dr);
	if (rc < 0 || (dr.kind == FB_FALL && dr.n == 0))
		return NULL;
	return draft_store(c, &dr, at, bd->tbuf);
}
