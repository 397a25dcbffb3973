/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "csevent.h"
#include "csbackend.h"
#include "csdec.h"
#include "csguard.h"
#include "cskey.h"
#include "cspool.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>

uint8_t csevent_mode(uint8_t isa)
{
	switch (isa) {
	case ocsd_isa_arm: return PTD_MODE_ARM32;
	case ocsd_isa_thumb2: return PTD_MODE_THUMB;
	case ocsd_isa_aarch64: return PTD_MODE_A64;
	}
	return PTD_MODE_UNKNOWN;
}

static uint8_t last_class(const struct cs_elem *e)
{
	switch (e->last_type) {
	case OCSD_INSTR_BR:
		if (e->last_sub == OCSD_S_INSTR_BR_LINK)
			return PTD_IC_CALL;
		return e->cond ? PTD_IC_COND_JUMP : PTD_IC_JUMP;
	case OCSD_INSTR_BR_INDIRECT:
		switch (e->last_sub) {
		case OCSD_S_INSTR_BR_LINK: return PTD_IC_IND_CALL;
		case OCSD_S_INSTR_V8_RET:
		case OCSD_S_INSTR_V7_IMPLIED_RET: return PTD_IC_RETURN;
		case OCSD_S_INSTR_V8_ERET: return PTD_IC_FAR_RETURN;
		}
		return PTD_IC_IND_JUMP;
	}
	return PTD_IC_OTHER;
}

/* The cpu of trace ID id of queue qi (one lookup per change of source). */
static __attribute__((noinline)) void ev_cpu(struct cs_backend *cb, size_t qi,
					     uint8_t id)
{
	const struct csq *q = &cb->q[qi];

	cb->cpu = q->cpu;
	for (size_t i = 0; i < q->nsrcs; i++)
		if (q->srcs[i].trace_id == id && q->srcs[i].cpu >= 0)
			cb->cpu = q->srcs[i].cpu;
	cb->cpu_q = qi;
	cb->cpu_id = id;
}

/* (inlined: one per event) */
static inline __attribute__((always_inline)) void
ev_init(struct cs_backend *cb, struct ptd_event *ev, const struct cs_elem *e,
	int kind)
{
	size_t qi = cb->cur < cb->nq ? cb->cur : cb->nq - 1;

	if (__builtin_expect(qi != cb->cpu_q || e->trace_id != cb->cpu_id, 0))
		ev_cpu(cb, qi, e->trace_id);
	*ev = cb->ev0;
	ev->kind = (uint16_t)kind;
	ev->cpu = cb->cpu;
	ev->tid = cb->have_ctx ? (int32_t)cb->ctxid : -1;
	ev->queue = (uint32_t)qi;
	ev->offset = e->index;
	ev->tsc = cb->keys ? cb->key : cb->tsc;
}

/* The error after the last instruction of a range whose lengths do not
 * add up to OpenCSD's range, held until that instruction is returned. */
static void range_mismatch(struct cs_backend *cb)
{
	const struct cs_elem *r = &cb->r;

	cb->have_pending = 1;
	ev_init(cb, &cb->pending, r, PTD_EV_ERROR);
	cb->pending.error = PTD_ERR_DECODE;
	cb->pending.ip = r->st;
	snprintf(cb->msg, sizeof(cb->msg), "range [%#llx, %#llx): OpenCSD "
		 "counts %u instructions, their lengths give %u ending at "
		 "%#llx", (unsigned long long)r->st, (unsigned long long)r->en,
		 r->num_i, cb->ni, (unsigned long long)cb->ip);
	cb->pending.msg = cb->msg;
}

/* Next instruction of the range being expanded. */
static int next_insn(struct cs_backend *cb, struct ptd_event *ev)
{
	struct cs_elem *r = &cb->r;
	uint8_t raw[4] = { 0 };
	unsigned size = 4;
	int n;

	ev_init(cb, ev, r, PTD_EV_INSN);
	n = imgstore_read(cb->st, r->pid, cb->ip, r->time, raw, 4, NULL);
	if (n < 2 || (r->isa != ocsd_isa_thumb2 && n < 4)) {
		/* OpenCSD read these bytes a moment ago, through the same
		 * store: a short read here means the store changed. */
		cb->in_range = 0;
		ev->kind = PTD_EV_ERROR;
		ev->error = PTD_ERR_NO_IMAGE;
		ev->ip = cb->ip;
		snprintf(cb->msg, sizeof(cb->msg), "cannot read the instruction "
			 "at %#llx inside a decoded range: %s",
			 (unsigned long long)cb->ip, imgstore_last_error(cb->st));
		ev->msg = cb->msg;
		return 0;
	}
	if (r->isa == ocsd_isa_thumb2)
		size = util_le16(raw) >= 0xe800 ? 4 : 2;
	if (size > (unsigned)n)
		ev->flags |= PTD_EVF_TRUNCATED;
	ev->ip = cb->ip;
	ev->size = (uint8_t)size;
	memcpy(ev->raw, raw, size);
	ev->mode = csevent_mode(r->isa);
	cb->ip += size;
	cb->ni++;
	if (cb->ip >= r->en) {
		cb->in_range = 0;
		ev->iclass = last_class(r);
		if (cb->ip != r->en || cb->ni != r->num_i)
			range_mismatch(cb);
	} else {
		ev->iclass = PTD_IC_OTHER;
	}
	return 0;
}

/* A PE context element: PTD_EV_SWITCH when the context ID or VMID
 * changes.  Returns 1 if ev was filled. */
static int context_event(struct cs_backend *cb, const struct cs_elem *e,
			 struct ptd_event *ev)
{
	if (cb->have_ctx && (!e->ctx_valid || e->ctxid == cb->ctxid) &&
	    (!e->vmid_valid || e->vmid == cb->vmid))
		return 0;
	if (!e->ctx_valid && !e->vmid_valid)
		return 0;
	if (e->ctx_valid)
		cb->ctxid = e->ctxid;
	if (e->vmid_valid)
		cb->vmid = e->vmid;
	cb->have_ctx = 1;
	ev_init(cb, ev, e, PTD_EV_SWITCH);
	ev->addr = cb->vmid;
	ev->flags |= PTD_EVF_IP_SUPPRESSED;
	return 1;
}

/* A decoder error element: the guard's, or OpenCSD's text read when the
 * error was reported (text, NULL if none). */
static void error_event(struct cs_backend *cb, const struct cs_elem *e,
			const char *text, struct ptd_event *ev)
{
	ev_init(cb, ev, e, PTD_EV_ERROR);
	ev->error = PTD_ERR_DECODE;
	ev->flags |= PTD_EVF_IP_SUPPRESSED;
	if (e->guard)
		csguard_message(cb->msg, sizeof(cb->msg), e->trace_id, e->guard);
	else
		snprintf(cb->msg, sizeof(cb->msg), "%s",
			 text ? text : "OpenCSD: decode error");
	ev->msg = cb->msg;
}

/* "no code bytes at %#llx ...": traces of code that is not in the images
 * hold these by the million, so without printf, and kept by address. */
static const char *nacc_message(struct cs_backend *cb, uint64_t addr)
{
	size_t slot = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 52) % CS_NACC_SLOTS;
	char *buf = cb->nacc_msg[slot];
	static const char pre[] = "no code bytes at ";
	static const char post[] = " (not in any memory image): decoding "
				   "resumes at the next address in the trace";
	char hex[19];
	size_t n = 0, k = sizeof(hex);

	if (cb->nacc_addr[slot] == addr &&
	    (cb->nacc_used[slot / 64] >> (slot % 64) & 1))
		return buf;
	cb->nacc_addr[slot] = addr;
	cb->nacc_used[slot / 64] |= 1ull << (slot % 64);
	memcpy(buf, pre, sizeof(pre) - 1);
	n = sizeof(pre) - 1;
	do {
		hex[--k] = "0123456789abcdef"[addr & 0xf];
		addr >>= 4;
	} while (addr);
	if (k != sizeof(hex) - 1 || hex[k] != '0') {
		buf[n++] = '0';
		buf[n++] = 'x';
	}
	memcpy(buf + n, hex + k, sizeof(hex) - k);
	n += sizeof(hex) - k;
	memcpy(buf + n, post, sizeof(post));
	return buf;
}

/* An ADDR_NACC element as a PTD_EV_GAP (inlined: traces of code outside
 * the images are mostly these). */
static inline __attribute__((always_inline)) void
nacc_event(struct cs_backend *cb, const struct cs_elem *e, struct ptd_event *ev)
{
	ev_init(cb, ev, e, PTD_EV_GAP);
	ev->ip = e->st;
	ev->msg = nacc_message(cb, e->st);
}

/* An element with no code address (ADDR_NACC, I_RANGE_NOPATH,
 * ADDR_UNKNOWN) as a PTD_EV_GAP. */
static void gap_event(struct cs_backend *cb, const struct cs_elem *e,
		      struct ptd_event *ev)
{
	if (e->type == OCSD_GEN_TRC_ELEM_ADDR_NACC) {
		nacc_event(cb, e, ev);
		return;
	}
	ev_init(cb, ev, e, PTD_EV_GAP);
	switch (e->type) {
	case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
		ev->ip = e->st;
		ev->addr = e->en;
		snprintf(cb->msg, sizeof(cb->msg), "%u instructions ran in "
			 "[%#llx, %#llx) on a path the trace does not give",
			 e->num_i, (unsigned long long)e->st,
			 (unsigned long long)e->en);
		ev->msg = cb->msg;
		break;
	default:
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
		ev->msg = "address unknown until the next address packet";
		break;
	}
}

/* The text of an error element, NULL if none. */
static const char *cs_elem_text(const struct cs_backend *cb,
				const struct cs_elem *e)
{
	return e->type == CS_EL_ERROR && e->msg && cb->el_str ?
	       cb->el_str + e->msg - 1 : NULL;
}

/* Turns one element into an event; returns 1 if ev was filled. */
static inline __attribute__((always_inline)) int
elem_event(struct cs_backend *cb, const struct cs_elem *e, const char *text,
	   struct ptd_event *ev)
{
	switch (e->type) {
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
		if (e->en <= e->st)
			return 0;
		cb->r = *e;
		cb->ip = e->st;
		cb->ni = 0;
		cb->in_range = 1;
		next_insn(cb, ev);
		return 1;
	case OCSD_GEN_TRC_ELEM_ADDR_NACC:
	case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
	case OCSD_GEN_TRC_ELEM_ADDR_UNKNOWN:
		gap_event(cb, e, ev);
		return 1;
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		ev_init(cb, ev, e, e->on_reason == TRACE_ON_OVERFLOW ?
			PTD_EV_OVERFLOW : PTD_EV_ENABLED);
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
		return 1;
	case OCSD_GEN_TRC_ELEM_PE_CONTEXT:
		return context_event(cb, e, ev);
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
		ev_init(cb, ev, e, PTD_EV_ASYNC);
		ev->addr = e->ex_num;
		if (e->ret_addr)
			ev->ip = e->en;
		else
			ev->flags |= PTD_EVF_IP_SUPPRESSED;
		return 1;
	case OCSD_GEN_TRC_ELEM_TIMESTAMP:
		cb->tsc = e->ts;
		ev_init(cb, ev, e, PTD_EV_TIME);
		return 1;
	case CS_EL_ERROR:
		error_event(cb, e, text, ev);
		return 1;
	}
	return 0;
}

int csevent_next(struct backend *b, struct ptd_event *ev)
{
	struct cs_backend *cb = (struct cs_backend *)b;

	for (;;) {
		const struct cs_elem *e;
		const char *text;
		int rc;

		if (cb->have_pending) {
			*ev = cb->pending;
			cb->have_pending = 0;
			return 0;
		}
		if (cb->in_range)
			return next_insn(cb, ev);
		if (cb->keys) {
			rc = cskey_next(cb, cb->keys, &e, &text, &cb->key);
			if (rc)
				return rc;
		} else {
			if (cb->el_head == cb->el_n && (rc = cspool_pump(cb)))
				return rc;
			e = &cb->el[cb->el_head++];
			text = cs_elem_text(cb, e);
		}
		if (elem_event(cb, e, text, ev))
			return 0;
	}
}

/* ---- blocks --------------------------------------------------------------- */

/* An A64 range whose instructions its bounds give: handed out as a block
 * (ptd_block.priv the element, ctx the instructions of it handed out
 * before the block). */
static int a64_block(const struct cs_elem *e)
{
	return e->type == OCSD_GEN_TRC_ELEM_INSTR_RANGE &&
	       e->isa == ocsd_isa_aarch64 && e->en > e->st &&
	       e->en - e->st == (uint64_t)e->num_i * 4;
}

static int add_block(struct cs_backend *cb, const void *priv, uint32_t n,
		     uint32_t ctx)
{
	struct ptd_block *b;

	if (cb->blk_n == cb->blk_cap &&
	    util_grow((void **)&cb->blk, &cb->blk_cap, cb->blk_n + 1,
		      sizeof(*cb->blk)))
		return PTD_ERR_NOMEM;
	b = &cb->blk[cb->blk_n++];
	b->priv = priv;
	b->ninsn = n;
	b->ctx = ctx;
	return 0;
}

/* An instruction event as a block of one (the session answers for it). */
static int event_block(struct cs_backend *cb, const struct ptd_event *ev)
{
	if (cb->ev_n == CS_EV_SLOTS)
		return 1;
	cb->evs[cb->ev_n] = *ev;
	return add_block(cb, &cb->evs[cb->ev_n++], 1, BACKEND_CTX_EVENT);
}

int csevent_next_blocks(struct backend *b, const struct ptd_block **blocks,
			size_t *n, uint64_t *ninsn, uint64_t limit,
			struct ptd_event *ev, int *have_ev)
{
	struct cs_backend *cb = (struct cs_backend *)b;
	uint64_t sum = 0;
	int rc = 0;

	cb->blk_n = cb->ev_n = 0;
	/* the second and later gaps of a run (code outside the images
	 * gives runs of them): one event and no blocks, without the loop */
	if (__builtin_expect(!cb->have_pending && !cb->in_range &&
			     cb->el_head < cb->el_n, 1) &&
	    cb->el[cb->el_head].type == OCSD_GEN_TRC_ELEM_ADDR_NACC) {
		nacc_event(cb, &cb->el[cb->el_head++], ev);
		*blocks = cb->blk;
		*n = 0;
		*ninsn = 0;
		*have_ev = 1;
		return 0;
	}
	*have_ev = 0;
	for (;;) {
		const struct cs_elem *e;

		if (limit && sum >= limit)
			break;
		if (cb->have_pending) {
			*ev = cb->pending;
			cb->have_pending = 0;
			*have_ev = 1;
			break;
		}
		if (cb->in_range) {
			struct ptd_event iev;

			if (cb->ev_n == CS_EV_SLOTS)
				break;
			next_insn(cb, &iev);
			if (iev.kind != PTD_EV_INSN) {
				*ev = iev;
				*have_ev = 1;
				break;
			}
			if ((rc = event_block(cb, &iev)) != 0)
				break;
			sum++;
			continue;
		}
		if (cb->el_head == cb->el_n) {
			/* the blocks point into the elements: hand them out
			 * before the next ones replace them */
			if (cb->blk_n)
				break;
			rc = cspool_pump(cb);
			if (rc)
				break;
		}
		e = &cb->el[cb->el_head];
		if (a64_block(e)) {
			uint32_t left = e->num_i - cb->blk_skip;
			uint32_t take = left;

			if (limit && sum + take > limit)
				take = (uint32_t)(limit - sum);
			if ((rc = add_block(cb, e, take, cb->blk_skip)) != 0)
				break;
			sum += take;
			if (take == left) {
				cb->blk_skip = 0;
				cb->el_head++;
			} else {
				cb->blk_skip += take;
			}
			continue;
		}
		/* an element may become an instruction event: room for it */
		if (cb->ev_n == CS_EV_SLOTS)
			break;
		cb->el_head++;
		if (elem_event(cb, e, cs_elem_text(cb, e), ev)) {
			if (ev->kind != PTD_EV_INSN) {
				*have_ev = 1;
				break;
			}
			if ((rc = event_block(cb, ev)) != 0)
				break;
			sum++;
		}
	}
	*blocks = cb->blk;
	*n = cb->blk_n;
	*ninsn = sum;
	if (rc == 1 || (rc == PTD_ERR_END && (cb->blk_n || *have_ev)))
		rc = 0;
	return rc;
}

int csevent_block_info(const struct backend *b, const struct ptd_block *blk,
		       struct ptd_block_info *info)
{
	struct cs_backend *cb = (struct cs_backend *)b;
	const struct cs_elem *e = blk->priv;
	struct ptd_event ev;

	ev_init(cb, &ev, e, PTD_EV_INSN);
	memset(info, 0, sizeof(*info));
	info->ip = e->st + (uint64_t)blk->ctx * 4;
	info->pid = ev.pid;
	info->tid = ev.tid;
	info->cpu = ev.cpu;
	info->queue = ev.queue;
	info->mode = PTD_MODE_A64;
	info->last_iclass = blk->ctx + blk->ninsn == e->num_i ? last_class(e)
							       : PTD_IC_OTHER;
	return 0;
}

int csevent_block_insn(const struct backend *b, const struct ptd_block *blk,
		       uint32_t i, struct ptd_event *ev)
{
	struct cs_backend *cb = (struct cs_backend *)b;
	const struct cs_elem *e = blk->priv;
	uint32_t k = blk->ctx + i;
	int n;

	if (i >= blk->ninsn)
		return PTD_ERR_INVAL;
	ev_init(cb, ev, e, PTD_EV_INSN);
	ev->ip = e->st + (uint64_t)k * 4;
	n = imgstore_read_r(cb->st, e->pid, ev->ip, e->time, ev->raw, 4, NULL,
			    NULL, 0);
	if (n < 4)
		ev->flags |= PTD_EVF_TRUNCATED;
	ev->size = 4;
	ev->mode = PTD_MODE_A64;
	ev->iclass = k + 1 == e->num_i ? last_class(e) : PTD_IC_OTHER;
	return 0;
}

#endif /* PTD_HAVE_OPENCSD */
