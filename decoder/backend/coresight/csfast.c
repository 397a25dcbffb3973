/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "csfast.h"
#include "csbackend.h"
#include "csdec.h"
#include "cspool.h"
#include "cstree.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>
#include <opencsd/etmv4/trc_pkt_types_etmv4.h>

/* Trace bytes handed to the packet processor per step. */
#define CSF_BLOCK (64u << 10)
/* the block hash table: twice as many buckets as blocks, from 2^10 to
 * 2^20 */
#define CSF_HASH_MIN 10
#define CSF_HASH_MAX 20
/* blocks kept per decoder before the cache is emptied */
#define CSF_MAX_BLOCKS (1u << 20)

/* The element stack entries (OpenCSD's P0 stack of one source). */
enum { SE_TRC_ON, SE_ADDR, SE_CTXT, SE_ATOM, SE_EXCEP, SE_EXCEP_RET,
       SE_TS };

struct csf_se {
	uint8_t type;
	uint8_t sf, updated, upd_c, upd_v, prev_same, natoms;
	uint32_t bits, ctxid, vmid, exnum;
	uint64_t val, index;
};

enum { ST_NO_SYNC, ST_WAIT_SYNC, ST_WAIT_TINFO, ST_DECODE };

/* One trace source: the packet scan's and the walk's state. */
struct csf_src {
	struct csfast *f;
	uint8_t trace_id;
	uint32_t max_spec;
	int wfi_branch, pauth, aa64, sppc, exc_fwd;
	uint32_t bcond_mask;
	/* packet scan */
	int sstate, s_ctx, s_exc;
	/* walk (OpenCSD's decoder state) */
	int state, need_ctxt, need_addr, pending_addr;
	uint32_t spec;
	uint64_t addr, last_index;
	struct csf_blk **hint;     /* where the block at addr may be */
	uint64_t hint_gen;
	/* the hot path of pkt_in may take its next packet: the walk runs
	 * with the scan, both decode, no exception is being scanned */
	int direct_ok;
	struct csf_se *se;         /* ring: se[(tail + i) & mask], oldest first */
	size_t tail, n, cap;
};

/* A run of A64 instructions from ip to its first waypoint (or to code
 * that cannot be read: nacc). */
struct csf_blk {
	uint64_t ip, end, target;
	uint64_t vfrom, vto;
	int32_t pid;
	uint32_t ninsn;
	uint8_t type, sub, cond, link, nacc;
	struct csf_blk *next;
	/* the block that followed it last, not taken / taken (checked before
	 * use: a hint saving the hash lookup) */
	struct csf_blk *succ[2];
};

/* A block is allocated on a cache line of its own: what a lookup reads
 * (ip to next) is in its first line. */
#define CSF_BLK_ALIGN 64
#define CSF_BLK_SIZE ((sizeof(struct csf_blk) + CSF_BLK_ALIGN - 1) & \
		      ~(size_t)(CSF_BLK_ALIGN - 1))
_Static_assert(offsetof(struct csf_blk, succ) <= CSF_BLK_ALIGN,
	       "a lookup's fields fit one line");

struct csf_pkt;

struct csfast {
	struct cs_dec *d;
	dcd_tree_handle_t tree;
	size_t tree_q;
	int scanning, failed;
	struct csf_src src[128];
	struct csf_blk **table;
	unsigned tbits;
	struct csf_blk **all;
	size_t nall, allcap;
	uint64_t gen;              /* bumped when the cache is emptied */
	size_t chunk, pos;
	int eot_sent;
	/* the scan's records of a small unit, replayed by the walk */
	int recording;
	/* the walk runs along with the scan (no pieces to cut): its
	 * elements, d->el[0, direct_n), are handed out when the scan ends
	 * without a failure */
	int direct;
	size_t direct_n;
	struct csf_pkt *rec;
	size_t rec_n, rec_cap, rec_pos;
	/* the sources of the tree, by trace ID */
	uint8_t ids[128];
	size_t nids;
	/* pieces of the unit walked ahead (cspool.h), and a state compared */
	int pieces_tried;
	struct cs_piece_set set;
	uint64_t *cmp;
	size_t cmp_n, cmp_cap;
};

/* The atom packets, and the address packets without a context. */
#define CASE_ATOMS case ETM4_PKT_I_ATOM_F1: case ETM4_PKT_I_ATOM_F2: \
	case ETM4_PKT_I_ATOM_F3: case ETM4_PKT_I_ATOM_F4: \
	case ETM4_PKT_I_ATOM_F5: case ETM4_PKT_I_ATOM_F6
#define CASE_ADDRS case ETM4_PKT_I_ADDR_MATCH: case ETM4_PKT_I_ADDR_L_32IS0: \
	case ETM4_PKT_I_ADDR_L_64IS0: case ETM4_PKT_I_ADDR_S_IS0


/* ---- the block cache ---------------------------------------------------- */

static void cache_clear(struct csfast *f)
{
	for (size_t i = 0; i < f->nall; i++)
		free(f->all[i]);
	f->nall = 0;
	f->gen++;
	if (f->table)
		memset(f->table, 0, sizeof(*f->table) << f->tbits);
}

static size_t hash_ip(const struct csfast *f, uint64_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> (64 - f->tbits));
}

/* A table of 2^bits buckets holding the blocks there are (a small table
 * for the few blocks of most traces stays in the cache).  Returns -1 out
 * of memory. */
static int table_resize(struct csfast *f, unsigned bits)
{
	struct csf_blk **t = calloc((size_t)1 << bits, sizeof(*t));

	if (!t)
		return -1;
	free(f->table);
	f->table = t;
	f->tbits = bits;
	for (size_t i = 0; i < f->nall; i++) {
		struct csf_blk *b = f->all[i];
		size_t h = hash_ip(f, b->ip);

		b->next = t[h];
		t[h] = b;
	}
	return 0;
}

static int64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);

	v &= (1ull << bits) - 1;
	return (int64_t)((v ^ m) - m);
}

/* OpenCSD's A64 classification of one instruction: fills the waypoint
 * fields of b and returns 1 for a waypoint. */
static int classify(const struct csf_src *s, uint32_t in, uint64_t ip,
		    struct csf_blk *b)
{
	b->sub = OCSD_S_INSTR_NONE;
	b->cond = b->link = 0;
	if ((in & 0xffdffc1f) == 0xd61f0000) {           /* BR, BLR */
		b->link = !!(in & 0x00200000);
		goto indirect;
	}
	if ((in & 0xfffffc1f) == 0xd65f0000) {           /* RET */
		b->sub = OCSD_S_INSTR_V8_RET;
		goto indirect;
	}
	if (in == 0xd69f03e0) {                          /* ERET */
		b->sub = OCSD_S_INSTR_V8_ERET;
		goto indirect;
	}
	if (s->pauth) {
		if ((in & 0xffdff800) == 0xd71f0800 ||
		    (in & 0xffdff81f) == 0xd61f081f) {   /* BRA*, BLRA* */
			b->link = !!(in & 0x00200000);
			goto indirect;
		}
		if ((in & 0xfffffbff) == 0xd69f0bff) {   /* ERETAA/AB */
			b->sub = OCSD_S_INSTR_V8_ERET;
			goto indirect;
		}
		if ((in & 0xfffffbff) == 0xd65f0bff ||   /* RETAA/AB */
		    (s->sppc && ((in & 0xffc0001f) == 0x5500001f ||
				 ((in & 0xfffffbe0) == 0xd65f0be0 &&
				  (in & 0x1f) != 0x1f)))) {   /* RETA*SPPC */
			b->sub = OCSD_S_INSTR_V8_RET;
			goto indirect;
		}
	}
	if ((in & 0x7c000000) == 0x14000000) {           /* B, BL */
		b->link = !!(in & 0x80000000);
		b->target = ip + (uint64_t)(sext(in, 26) * 4);
		goto direct;
	}
	if ((in & s->bcond_mask) == 0x54000000) {        /* B.cond */
		b->cond = 1;
		b->target = ip + (uint64_t)(sext(in >> 5, 19) * 4);
		goto direct;
	}
	if ((in & 0x7e000000) == 0x34000000) {           /* CBZ, CBNZ */
		b->cond = 1;
		b->target = ip + (uint64_t)(sext(in >> 5, 19) * 4);
		goto direct;
	}
	if ((in & 0x7e000000) == 0x36000000) {           /* TBZ, TBNZ */
		b->cond = 1;
		b->target = ip + (uint64_t)(sext(in >> 5, 14) * 4);
		goto direct;
	}
	if ((in & 0xfffff0ff) == 0xd50330df) {           /* ISB */
		b->type = OCSD_INSTR_ISB;
		return 1;
	}
	if (s->wfi_branch && ((in & 0xffffffdf) == 0xd503205f ||
			      (s->aa64 && (in & 0xffffffc0) == 0xd5031000))) {
		b->type = OCSD_INSTR_WFI_WFE;   /* WFI, WFE, WFIT, WFET */
		return 1;
	}
	if (!s->wfi_branch && s->aa64 && (in & 0xffffffe0) == 0xd5233060) {
		b->type = OCSD_INSTR_TSTART;
		return 1;
	}
	b->type = OCSD_INSTR_OTHER;
	return 0;
indirect:
	if (b->link)
		b->sub = OCSD_S_INSTR_BR_LINK;
	b->type = OCSD_INSTR_BR_INDIRECT;
	return 1;
direct:
	if (b->link)
		b->sub = OCSD_S_INSTR_BR_LINK;
	b->type = OCSD_INSTR_BR;
	return 1;
}

/* Decodes the block at ip for the current chunk; NULL out of memory. */
static __attribute__((noinline)) struct csf_blk *
build(struct csfast *f, const struct csf_src *s, uint64_t ip)
{
	struct cs_dec *d = f->d;
	struct csf_blk *b;
	uint8_t buf[256];
	uint64_t cur = ip;

	if (f->nall >= CSF_MAX_BLOCKS)
		cache_clear(f);
	if (util_grow((void **)&f->all, &f->allcap, f->nall + 1,
		      sizeof(*f->all)) ||
	    !(b = aligned_alloc(CSF_BLK_ALIGN, CSF_BLK_SIZE)))
		return NULL;
	memset(b, 0, sizeof(*b));
	b->ip = ip;
	b->pid = d->pid;
	b->vfrom = 0;
	b->vto = UINT64_MAX;
	for (;;) {
		struct imgstore_hit hit;
		int n = imgstore_read_r(d->cb->st, d->pid, cur, d->time, buf,
					sizeof(buf), &hit, NULL, 0);
		int k, wp = 0;

		if (n < 4) {
			b->nacc = 1;
			b->type = OCSD_INSTR_OTHER;
			b->sub = OCSD_S_INSTR_NONE;
			b->cond = b->link = 0;
			break;
		}
		if (hit.valid_from > b->vfrom)
			b->vfrom = hit.valid_from;
		if (hit.valid_to < b->vto)
			b->vto = hit.valid_to;
		for (k = 0; k + 4 <= n; k += 4) {
			b->ninsn++;
			wp = classify(s, util_le32(buf + k), cur, b);
			cur += 4;
			if (wp)
				break;
		}
		if (wp)
			break;
	}
	b->end = cur;
	/* code that could not be read may be there at another time: such a
	 * block is kept for this time only */
	if (b->nacc)
		b->vfrom = b->vto = d->time;
	f->all[f->nall++] = b;
	b->next = f->table[hash_ip(f, ip)];
	f->table[hash_ip(f, ip)] = b;
	/* a bigger table when it is half full (short chains: a lookup
	 * follows one pointer, which misses the cache after a gap) */
	if (f->nall >> (f->tbits - 1) && f->tbits < CSF_HASH_MAX)
		table_resize(f, f->tbits + 1);
	return b;
}

static inline __attribute__((always_inline)) struct csf_blk *
lookup(struct csfast *f, const struct csf_src *s, uint64_t ip)
{
	const struct cs_dec *d = f->d;

	if (!f->table && table_resize(f, CSF_HASH_MIN))
		return NULL;
	for (struct csf_blk *b = f->table[hash_ip(f, ip)]; b; b = b->next)
		if (b->ip == ip && b->pid == d->pid &&
		    (b->nacc ? d->time == b->vfrom :
		     d->time == IMGSTORE_TIME_UNKNOWN ||
		     (d->time >= b->vfrom && d->time < b->vto)))
			return b;
	return build(f, s, ip);
}

/* ---- elements ----------------------------------------------------------- */

/* Room for one more element; -1 out of memory. */
static __attribute__((noinline)) int elem_grow(struct cs_dec *d)
{
	if (util_grow((void **)&d->el, &d->el_cap, d->el_n + 1,
		      sizeof(*d->el))) {
		d->nomem = 1;
		return -1;
	}
	return 0;
}

/* (inlined: the walk makes an element or two per atom) */
static inline __attribute__((always_inline)) struct cs_elem *
elem(struct csf_src *s, uint16_t type, uint64_t index)
{
	struct cs_dec *d = s->f->d;
	struct cs_elem *e;

	if (__builtin_expect(d->el_n == d->el_cap, 0) && elem_grow(d))
		return NULL;
	e = &d->el[d->el_n++];
	*e = (struct cs_elem){ .type = type, .trace_id = s->trace_id,
			       .index = index, .pid = d->pid,
			       .time = d->time };
	return e;
}

static inline __attribute__((always_inline)) void
range_elem(struct csf_src *s, uint64_t index, uint64_t st, uint64_t en,
	   uint32_t n, const struct csf_blk *b)
{
	struct cs_elem *e = elem(s, OCSD_GEN_TRC_ELEM_INSTR_RANGE, index);

	if (!e)
		return;
	e->isa = ocsd_isa_aarch64;
	e->st = st;
	e->en = en;
	e->num_i = n;
	e->last_type = b->type;
	e->last_sub = b->sub;
	e->cond = b->cond;
}

static inline __attribute__((always_inline)) void
nacc_elem(struct csf_src *s, uint64_t index, uint64_t addr)
{
	struct cs_elem *e = elem(s, OCSD_GEN_TRC_ELEM_ADDR_NACC, index);

	if (e)
		e->st = addr;
}

static void ctxt_elem(struct csf_src *s, const struct csf_se *c,
		      uint64_t index)
{
	struct cs_elem *e = elem(s, OCSD_GEN_TRC_ELEM_PE_CONTEXT, index);

	if (!e)
		return;
	e->isa = ocsd_isa_aarch64;
	e->ctx_valid = c->upd_c;
	e->vmid_valid = c->upd_v;
	e->ctxid = c->ctxid;
	e->vmid = c->vmid;
	s->need_ctxt = 0;
}

/* ---- the walk ----------------------------------------------------------- */

/* The block at s->addr, through the hint the last block left. */
static inline __attribute__((always_inline)) struct csf_blk *
next_block(struct csf_src *s)
{
	struct csfast *f = s->f;
	const struct cs_dec *d = f->d;
	struct csf_blk *b = NULL;

	if (s->hint && s->hint_gen == f->gen)
		b = *s->hint;
	if (b && b->ip == s->addr && b->pid == d->pid && !b->nacc &&
	    (d->time == IMGSTORE_TIME_UNKNOWN ||
	     (d->time >= b->vfrom && d->time < b->vto)))
		return b;
	b = lookup(f, s, s->addr);
	if (b && s->hint && s->hint_gen == f->gen)
		*s->hint = b;
	return b;
}

static inline __attribute__((always_inline)) void
atom(struct csf_src *s, int taken, uint64_t index)
{
	struct csf_blk *b = next_block(s);

	s->hint = NULL;
	if (!b) {
		s->f->d->nomem = 1;
		return;
	}
	if (b->nacc) {
		s->need_addr = 1;
		if (b->ninsn)
			range_elem(s, index, b->ip, b->end, b->ninsn, b);
		nacc_elem(s, index, b->end);
		s->addr = b->end;
		return;
	}
	range_elem(s, index, b->ip, b->end, b->ninsn, b);
	s->addr = b->end;
	if (taken && b->type == OCSD_INSTR_BR)
		s->addr = b->target;
	else if (taken && b->type == OCSD_INSTR_BR_INDIRECT) {
		/* the block it went to last time: checked against the
		 * address packet to come */
		s->need_addr = 1;
		s->hint = &b->succ[1];
		s->hint_gen = s->f->gen;
	}
	if (!s->need_addr) {
		s->hint = &b->succ[taken && b->type == OCSD_INSTR_BR];
		s->hint_gen = s->f->gen;
	}
}

/* Walks instruction by instruction from s->addr to ret (an exception's
 * preferred return address), whatever the waypoints. */
static void walk_to(struct csf_src *s, uint64_t ret, uint64_t index)
{
	struct cs_dec *d = s->f->d;
	struct csf_blk last = { 0 };
	uint64_t st = s->addr;
	uint32_t n = 0;
	int nacc = 0;

	for (;;) {
		uint8_t raw[4];

		if (imgstore_read_r(d->cb->st, d->pid, s->addr, d->time, raw, 4,
				    NULL, NULL, 0) < 4) {
			nacc = 1;
			break;
		}
		classify(s, util_le32(raw), s->addr, &last);
		s->addr += 4;
		n++;
		if (s->addr == ret)
			break;
	}
	if (nacc) {
		s->need_addr = 1;
		last.type = OCSD_INSTR_OTHER;
		last.sub = OCSD_S_INSTR_NONE;
		last.cond = 0;
	}
	if (n)
		range_elem(s, index, st, s->addr, n, &last);
	if (nacc)
		nacc_elem(s, index, s->addr);
}

static struct csf_se *se_at(struct csf_src *s, size_t i)
{
	return &s->se[(s->tail + i) & (s->cap - 1)];
}

static void se_pop(struct csf_src *s)
{
	s->tail = (s->tail + 1) & (s->cap - 1);
	s->n--;
}

static void exception(struct csf_src *s)
{
	struct csf_se ex = *se_at(s, 0), ctx, ad;
	int have_ctx = 0;
	struct cs_elem *e;

	se_pop(s);
	if (s->n && se_at(s, 0)->type == SE_CTXT) {
		ctx = *se_at(s, 0);
		have_ctx = 1;
		se_pop(s);
	}
	/* the scan let through only exceptions followed by their address */
	ad = *se_at(s, 0);
	se_pop(s);
	s->hint = NULL;
	if (ex.prev_same) {
		s->addr = ad.val;
		s->need_addr = 0;
	}
	if (have_ctx)
		ctxt_elem(s, &ctx, ex.index);
	/* OpenCSD 1.4.2 on walks to the return address only forwards */
	if (s->exc_fwd ? s->addr < ad.val : s->addr != ad.val)
		walk_to(s, ad.val, ex.index);
	e = elem(s, OCSD_GEN_TRC_ELEM_EXCEPTION, ex.index);
	if (!e)
		return;
	e->en = ad.val;
	e->ret_addr = 1;
	e->ex_num = ex.exnum;
}

/* Resolves the oldest elements up to n P0 elements (OpenCSD's commit). */
static void commit(struct csf_src *s, uint32_t n)
{
	uint32_t want = n;

	while (n && s->n) {
		struct csf_se *e = se_at(s, 0);
		struct cs_elem *o;

		switch (e->type) {
		case SE_TRC_ON:
			o = elem(s, OCSD_GEN_TRC_ELEM_TRACE_ON, e->index);
			if (o)
				o->on_reason = TRACE_ON_NORMAL;
			break;
		case SE_ADDR:
			s->addr = e->val;
			s->need_addr = 0;
			break;
		case SE_CTXT:
			if (e->updated)
				ctxt_elem(s, e, e->index);
			break;
		case SE_TS:
			o = elem(s, OCSD_GEN_TRC_ELEM_TIMESTAMP, e->index);
			if (o)
				o->ts = e->val;
			break;
		case SE_EXCEP_RET:
			elem(s, OCSD_GEN_TRC_ELEM_EXCEPTION_RET, e->index);
			break;
		case SE_ATOM:
			while (e->natoms && n) {
				int taken = e->bits & 1;

				e->bits >>= 1;
				e->natoms--;
				if (!s->need_ctxt && !s->need_addr)
					atom(s, taken, e->index);
				n--;
			}
			if (e->natoms)
				goto out;
			break;
		case SE_EXCEP:
			exception(s);
			n--;
			continue;   /* exception() popped its elements */
		default:
			break;
		}
		se_pop(s);
	}
out:
	s->spec -= want - n;
}

/* The end of a chunk: timestamps before the first unresolved P0 element
 * still come out, the rest is dropped; then the end of trace element. */
static void eot(struct csf_src *s)
{
	while (s->state == ST_DECODE && s->n) {
		struct csf_se *e = se_at(s, 0);

		if (e->type == SE_ATOM || e->type == SE_TRC_ON ||
		    e->type == SE_EXCEP || e->type == SE_EXCEP_RET) {
			s->n = 0;
			break;
		}
		if (e->type == SE_TS) {
			struct cs_elem *o = elem(s, OCSD_GEN_TRC_ELEM_TIMESTAMP,
						 e->index);
			if (o)
				o->ts = e->val;
		}
		se_pop(s);
	}
	elem(s, OCSD_GEN_TRC_ELEM_EO_TRACE, s->last_index);
}

static struct csf_se *se_push(struct csf_src *s, uint8_t type, uint64_t index)
{
	struct csf_se *e;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct csf_se *ne = malloc(cap * sizeof(*ne));

		if (!ne) {
			s->f->d->nomem = 1;
			return NULL;
		}
		for (size_t i = 0; i < s->n; i++)
			ne[i] = *se_at(s, i);
		free(s->se);
		s->se = ne;
		s->cap = cap;
		s->tail = 0;
	}
	e = &s->se[(s->tail + s->n++) & (s->cap - 1)];
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->index = index;
	return e;
}

static int is_addr_pkt(int t)
{
	switch (t) {
	case ETM4_PKT_I_ADDR_MATCH:
	case ETM4_PKT_I_ADDR_CTXT_L_64IS0:
	case ETM4_PKT_I_ADDR_CTXT_L_32IS0:
	case ETM4_PKT_I_ADDR_L_32IS0:
	case ETM4_PKT_I_ADDR_L_64IS0:
	case ETM4_PKT_I_ADDR_S_IS0:
		return 1;
	}
	return 0;
}

/* What the walk needs of a packet (an address and context packet is two:
 * the context, then the address), or an operation on a source; kept from
 * the scan for units up to CSF_REC_MAX bytes, so that their packets are
 * not read twice. */
struct csf_pkt {
	uint64_t index, val;
	uint32_t aux, aux2;
	uint16_t type;
	uint8_t id, flags;
};
enum { PK_CTX_SF = 1, PK_CTX_UPD = 2, PK_CTX_UPD_C = 4, PK_CTX_UPD_V = 8,
       PK_PREV_SAME = 16 };
/* operations: types beyond the packet types */
#define PK_EOT 0xfff0
#define PK_RESET 0xfff1
#define PK_CHUNK 0xfff2
#define CSF_REC_MAX (1u << 20)

static void push_ctxt(struct csf_src *s, const struct csf_pkt *p)
{
	struct csf_se *e = se_push(s, SE_CTXT, p->index);

	if (!e)
		return;
	e->sf = !!(p->flags & PK_CTX_SF);
	e->updated = !!(p->flags & PK_CTX_UPD);
	e->upd_c = !!(p->flags & PK_CTX_UPD_C);
	e->upd_v = !!(p->flags & PK_CTX_UPD_V);
	e->ctxid = p->aux;
	e->vmid = p->aux2;
}

/* An atom packet of a synchronised source: num atoms, the oldest in bit 0
 * of bits. */
static void atoms_in(struct csf_src *s, uint32_t bits, uint32_t num,
		     uint64_t index)
{
	struct csf_se *e;

	if (!s->max_spec && !s->spec && !s->pending_addr) {
		/* no P0 element waits (none may): what commit would do with
		 * the atoms pushed, without pushing them */
		if (s->n)
			commit(s, num);
		/* only committing an address or context clears these */
		for (; num && !s->need_ctxt && !s->need_addr; num--, bits >>= 1)
			atom(s, bits & 1, index);
		return;
	}
	e = se_push(s, SE_ATOM, index);
	if (e) {
		e->bits = bits;
		e->natoms = (uint8_t)num;
		s->spec += num;
	}
	if (s->spec > s->max_spec)
		commit(s, s->spec - s->max_spec);
}

/* An address packet of a synchronised source. */
static void addr_in(struct csf_src *s, uint64_t val, uint64_t index)
{
	struct csf_se *e;

	if (!s->n && !s->pending_addr) {
		/* nothing before it on the stack, nothing after it that it
		 * could follow: what committing it would do, now */
		s->addr = val;
		s->need_addr = 0;
		return;
	}
	e = se_push(s, SE_ADDR, index);
	if (e)
		e->val = val;
	if (s->pending_addr) {
		s->spec++;
		s->pending_addr = 0;
	}
	if (s->spec > s->max_spec)
		commit(s, s->spec - s->max_spec);
}

/* One packet of a synchronised source (OpenCSD's decodePacket). */
static void decode(struct csf_src *s, const struct csf_pkt *p)
{
	struct csf_se *e;
	int t = p->type;
	uint64_t index = p->index;

	switch (t) {
	case ETM4_PKT_I_TRACE_ON:
		se_push(s, SE_TRC_ON, index);
		break;
	CASE_ATOMS:
		atoms_in(s, (uint32_t)p->val, p->aux, index);
		return;
	case ETM4_PKT_I_CTXT:
		push_ctxt(s, p);
		break;
	CASE_ADDRS:
		addr_in(s, p->val, index);
		return;
	case ETM4_PKT_I_EXCEPT:
		e = se_push(s, SE_EXCEP, index);
		if (e) {
			e->prev_same = !!(p->flags & PK_PREV_SAME);
			e->exnum = p->aux;
		}
		s->pending_addr = 1;
		break;
	case ETM4_PKT_I_EXCEPT_RTN:
		se_push(s, SE_EXCEP_RET, index);
		break;
	case ETM4_PKT_I_TIMESTAMP:
		e = se_push(s, SE_TS, index);
		if (e)
			e->val = p->val;
		break;
	default:        /* ASYNC, IGNORE, TRACE_INFO, cycle counts and
			 * events (no element of the walk's): nothing */
		break;
	}
	if (s->spec > s->max_spec)
		commit(s, s->spec - s->max_spec);
}

static void walk_packet(struct csf_src *s, const struct csf_pkt *p)
{
	s->last_index = p->index;
	switch (s->state) {
	case ST_NO_SYNC:
		elem(s, OCSD_GEN_TRC_ELEM_NO_SYNC, p->index);
		s->state = ST_WAIT_SYNC;
		/* fall through */
	case ST_WAIT_SYNC:
		if (p->type == ETM4_PKT_I_ASYNC)
			s->state = ST_WAIT_TINFO;
		return;
	case ST_WAIT_TINFO:
		s->need_ctxt = s->need_addr = 1;
		if (p->type == ETM4_PKT_I_TRACE_INFO) {
			s->spec = p->aux;
			s->state = ST_DECODE;
		}
		return;
	}
	decode(s, p);
}

/* ---- the packet scan ---------------------------------------------------- */

/* An address the walk does not follow: one in the last page of the
 * address space, or with an ISA other than the one it decodes. */
static inline int addr_unsure(const ocsd_etmv4_i_pkt *p)
{
	return p->v_addr.val >= ~(ocsd_vaddr_t)0 - 0xfff || p->v_addr_ISA;
}

/* Whether the walk follows packet p of a synchronised source with
 * certainty (see csfast.h). */
static int scan_ok(struct csf_src *s, const ocsd_etmv4_i_pkt *p)
{
	int t = p->type;
	int ctx = t == ETM4_PKT_I_CTXT || t == ETM4_PKT_I_ADDR_CTXT_L_64IS0 ||
		  t == ETM4_PKT_I_ADDR_CTXT_L_32IS0;

	if (is_addr_pkt(t) && addr_unsure(p))
		return 0;
	if (ctx && !p->context.SF)
		return 0;
	/* an exception's context and address must follow it at once */
	if (s->s_exc == 1) {
		if (t == ETM4_PKT_I_CTXT) {
			s->s_exc = 2;
			return 1;
		}
		if (!is_addr_pkt(t))
			return 0;
		s->s_exc = 0;
		return 1;
	}
	if (s->s_exc == 2) {
		if (!is_addr_pkt(t) || ctx)
			return 0;
		s->s_exc = 0;
		return 1;
	}
	if (ctx)
		s->s_ctx = 1;
	switch (t) {
	case ETM4_PKT_I_ASYNC:
	case ETM4_PKT_I_IGNORE:
	case ETM4_PKT_I_TRACE_ON:
	CASE_ATOMS:
	case ETM4_PKT_I_CTXT:
	case ETM4_PKT_I_EXCEPT_RTN:
	case ETM4_PKT_I_TIMESTAMP:
	case ETM4_PKT_I_CCNT_F1:
	case ETM4_PKT_I_CCNT_F2:
	case ETM4_PKT_I_CCNT_F3:
	case ETM4_PKT_I_EVENT:
		return 1;
	case ETM4_PKT_I_TRACE_INFO:
		return p->curr_spec_depth <= s->max_spec;
	case ETM4_PKT_I_EXCEPT:
		if (!s->s_ctx || p->exception_info.m_type)
			return 0;
		s->s_exc = 1;
		return 1;
	}
	return is_addr_pkt(t);
}

static void scan_packet(struct csf_src *s, const ocsd_etmv4_i_pkt *p)
{
	switch (s->sstate) {
	case ST_NO_SYNC:
	case ST_WAIT_SYNC:
		if (p->type == ETM4_PKT_I_ASYNC)
			s->sstate = ST_WAIT_TINFO;
		return;
	case ST_WAIT_TINFO:
		if (p->type == ETM4_PKT_I_TRACE_INFO) {
			if (p->curr_spec_depth > s->max_spec)
				s->f->failed = 1;
			s->sstate = ST_DECODE;
			s->s_ctx = s->s_exc = 0;
		}
		return;
	}
	if (!scan_ok(s, p))
		s->f->failed = 1;
}

static void src_reset(struct csf_src *s)
{
	s->sstate = s->state = ST_NO_SYNC;
	s->s_ctx = s->s_exc = 0;
	s->direct_ok = 0;
	s->need_ctxt = s->need_addr = 1;
	s->pending_addr = 0;
	s->spec = 0;
	s->addr = 0;
	s->hint = NULL;
	s->n = s->tail = 0;
}

/* Appends record r to the unit's records, or walks it at once. */
static void take(struct csfast *f, struct csf_src *s, const struct csf_pkt *r)
{
	if (!f->scanning) {
		walk_packet(s, r);
		return;
	}
	if (f->direct) {
		/* chunk_start reset the sources, feed set pid and time */
		if (f->failed)
			return;
		if (r->type < PK_EOT)
			walk_packet(s, r);
		else if (r->type == PK_EOT)
			eot(s);
		return;
	}
	if (!f->recording)
		return;
	if (f->rec_n == f->rec_cap &&
	    util_grow((void **)&f->rec, &f->rec_cap, f->rec_n + 1,
		      sizeof(*f->rec))) {
		f->recording = 0;
		return;
	}
	f->rec[f->rec_n++] = *r;
}

/* The walk's records of OpenCSD packet p. */
static void take_packet(struct csfast *f, struct csf_src *s,
			const ocsd_etmv4_i_pkt *p, uint64_t index)
{
	struct csf_pkt r;
	int t = p->type;

	memset(&r, 0, sizeof(r));
	r.index = index;
	r.id = s->trace_id;
	r.type = (uint16_t)t;
	switch (t) {
	case ETM4_PKT_I_ADDR_CTXT_L_64IS0:
	case ETM4_PKT_I_ADDR_CTXT_L_32IS0:
		/* the context, then the address */
		r.type = ETM4_PKT_I_CTXT;
		/* fall through */
	case ETM4_PKT_I_CTXT:
		r.flags = (p->context.SF ? PK_CTX_SF : 0) |
			  (p->context.updated ? PK_CTX_UPD : 0) |
			  (p->context.updated_c ? PK_CTX_UPD_C : 0) |
			  (p->context.updated_v ? PK_CTX_UPD_V : 0);
		r.aux = p->context.ctxtID;
		r.aux2 = p->context.VMID;
		if (t == ETM4_PKT_I_CTXT)
			break;
		take(f, s, &r);
		memset(&r, 0, sizeof(r));
		r.index = index;
		r.id = s->trace_id;
		r.type = ETM4_PKT_I_ADDR_L_64IS0;
		r.val = p->v_addr.val;
		break;
	CASE_ADDRS:
		r.val = p->v_addr.val;
		break;
	CASE_ATOMS:
		r.val = p->atom.En_bits;
		r.aux = p->atom.num;
		break;
	case ETM4_PKT_I_EXCEPT:
		r.flags = p->exception_info.addr_interp == 0x2 ? PK_PREV_SAME : 0;
		r.aux = p->exception_info.exceptionType;
		break;
	case ETM4_PKT_I_TIMESTAMP:
		r.val = p->ts.timestamp;
		break;
	case ETM4_PKT_I_TRACE_INFO:
		r.aux = p->curr_spec_depth;
		break;
	}
	take(f, s, &r);
}

/* A record of the walk: a packet or an operation. */
static void replay(struct csfast *f, const struct csf_pkt *r)
{
	struct csf_src *s = &f->src[r->id & 0x7f];

	switch (r->type) {
	case PK_EOT:
		eot(s);
		break;
	case PK_RESET:
		src_reset(s);
		break;
	case PK_CHUNK: {
		const struct coresight_chunk *c =
			&f->d->cb->q[f->d->u->q].chunks[r->aux];

		f->d->pid = c->pid;
		f->d->time = c->time;
		break;
	}
	default:
		walk_packet(s, r);
		break;
	}
}

/* Every packet but the hot path's (pkt_in): the scan's check, then the
 * walk's record. */
static __attribute__((noinline)) ocsd_datapath_resp_t
pkt_slow(struct csf_src *s, ocsd_datapath_op_t op, uint64_t index,
	 const ocsd_etmv4_i_pkt *p)
{
	struct csfast *f = s->f;
	struct csf_pkt r;

	switch (op) {
	case OCSD_OP_DATA:
		if (f->scanning)
			scan_packet(s, p);
		take_packet(f, s, p, index);
		break;
	case OCSD_OP_EOT:
		if (f->scanning && s->s_exc)
			f->failed = 1;
		if (!f->scanning)
			eot(s);
		else {
			memset(&r, 0, sizeof(r));
			r.type = PK_EOT;
			r.id = s->trace_id;
			take(f, s, &r);
		}
		break;
	default:
		break;
	}
	/* what lets the next packets of s take the hot path */
	s->direct_ok = f->direct && !f->failed && s->sstate == ST_DECODE &&
		       s->state == ST_DECODE && !s->s_exc;
	return f->d->nomem ? OCSD_RESP_FATAL_SYS_ERR : OCSD_RESP_CONT;
}

/* The hot path: the atoms and addresses of a synchronised source when the
 * walk runs with the scan (s->direct_ok), scanned and walked in one go
 * (what scan_packet and take_packet would do with them). */
static ocsd_datapath_resp_t pkt_in(const void *ctx, const ocsd_datapath_op_t op,
				   const ocsd_trc_index_t index,
				   const void *pkt)
{
	struct csf_src *s = (struct csf_src *)ctx;
	const ocsd_etmv4_i_pkt *p = pkt;

	if (__builtin_expect(s->direct_ok && op == OCSD_OP_DATA, 1)) {
		switch (p->type) {
		CASE_ATOMS:
			s->last_index = index;
			/* after a gap: atoms the walk drops until the next
			 * address (what atoms_in would do, without a call) */
			if (s->need_addr && !s->n && !s->spec &&
			    !s->pending_addr && !s->max_spec)
				return OCSD_RESP_CONT;
			atoms_in(s, p->atom.En_bits, p->atom.num, index);
			return s->f->d->nomem ? OCSD_RESP_FATAL_SYS_ERR
					      : OCSD_RESP_CONT;
		CASE_ADDRS:
			if (addr_unsure(p)) {
				s->f->failed = 1;
				s->direct_ok = 0;
				return OCSD_RESP_CONT;
			}
			s->last_index = index;
			addr_in(s, p->v_addr.val, index);
			return s->f->d->nomem ? OCSD_RESP_FATAL_SYS_ERR
					      : OCSD_RESP_CONT;
		default:
			break;
		}
	}
	return pkt_slow(s, op, index, p);
}

/* ---- trees and units ---------------------------------------------------- */

/* Whether the walk follows source src's configuration. */
static int config_ok(const struct cs_source *src)
{
	uint32_t c = src->trcconfigr;

	if (src->proto != CS_PROTO_ETMV4)
		return 0;
	/* return stack, conditional trace, Q elements, data trace */
	if ((c & (1u << 12)) || (c & (7u << 8)) || (c & (3u << 13)) ||
	    (c & (3u << 1)) || (c & (3u << 16)))
		return 0;
	return 1;
}

static void src_setup(struct csf_src *s, struct csfast *f,
		      const struct cs_source *src, uint8_t id)
{
	uint32_t ver = ((src->trcidr1 >> 8) & 0xf) << 4 | ((src->trcidr1 >> 4) & 0xf);
	int arch = src->arch ? src->arch : ARCH_V8;

	s->f = f;
	s->trace_id = id;
	s->max_spec = src->trcidr8;
	uint32_t lib = ocsd_get_version();

	s->wfi_branch = (src->trcidr2 & 0x20000000) && ver >= 0x43;
	s->pauth = arch >= ARCH_V8r3;
	s->aa64 = arch >= ARCH_AA64;
	s->sppc = lib >= 0x010501;
	s->exc_fwd = lib >= 0x010402;
	/* BC.cond (bit 4 set) is a branch from OpenCSD 1.5 on */
	s->bcond_mask = lib >= 0x010500 ? 0xff000000 : 0xff000010;
	src_reset(s);
	f->ids[f->nids++] = id;
}

static int make_tree(struct csfast *f, const struct csq *q)
{
	dcd_tree_handle_t t;

	f->nids = 0;
	cstree_lock();
	t = ocsd_create_dcd_tree(q->formatted ? OCSD_TRC_SRC_FRAME_FORMATTED
				 : OCSD_TRC_SRC_SINGLE, q->dfmt_flags);
	if (!t)
		goto fail;
	for (size_t i = 0; i < q->nsrcs; i++) {
		const struct cs_source *src = &q->srcs[i];
		ocsd_etmv4_cfg c;
		unsigned char csid = 0;

		memset(&c, 0, sizeof(c));
		c.reg_idr0 = src->trcidr0;
		c.reg_idr1 = src->trcidr1;
		c.reg_idr2 = src->trcidr2;
		c.reg_idr8 = src->trcidr8;
		c.reg_idr9 = src->trcidr9;
		c.reg_idr10 = src->trcidr10;
		c.reg_idr11 = src->trcidr11;
		c.reg_idr12 = src->trcidr12;
		c.reg_idr13 = src->trcidr13;
		c.reg_configr = src->trcconfigr;
		c.reg_traceidr = (src->trctraceidr & ~0x7fu & ~(1u << 31)) |
				 src->trace_id;
		c.arch_ver = src->arch ? src->arch : ARCH_V8;
		c.core_prof = src->profile ? src->profile : profile_CortexA;
		if (ocsd_dt_create_decoder(t, OCSD_BUILTIN_DCD_ETMV4I,
					   OCSD_CREATE_FLG_PACKET_PROC, &c,
					   &csid) != OCSD_OK)
			goto fail_tree;
		src_setup(&f->src[csid & 0x7f], f, src, csid & 0x7f);
		if (ocsd_dt_attach_packet_callback(t, csid & 0x7f,
						   OCSD_C_API_CB_PKT_SINK,
						   (void *)pkt_in,
						   &f->src[csid & 0x7f]) != OCSD_OK)
			goto fail_tree;
	}
	cstree_unlock();
	f->tree = t;
	return 0;
fail_tree:
	ocsd_destroy_dcd_tree(t);
fail:
	cstree_unlock();
	return -1;
}

static void destroy_tree(struct csfast *f)
{
	if (!f->tree)
		return;
	cstree_lock();
	ocsd_destroy_dcd_tree(f->tree);
	cstree_unlock();
	f->tree = NULL;
}

/* Every chunk starts from reset (csdec.c says why); the records say where
 * a chunk starts and that the sources reset there. */
static void chunk_start(struct csfast *f)
{
	uint32_t used = 0;
	struct csf_pkt r;

	ocsd_dt_process_data(f->tree, OCSD_OP_RESET, 0, 0, NULL, &used);
	f->pos = 0;
	f->eot_sent = 0;
	memset(&r, 0, sizeof(r));
	r.type = PK_CHUNK;
	r.aux = (uint32_t)f->chunk;
	if (f->scanning)
		take(f, &f->src[0], &r);
	r.type = PK_RESET;
	for (size_t i = 0; i < 128; i++) {
		if (f->src[i].f != f)
			continue;
		src_reset(&f->src[i]);
		r.id = (uint8_t)i;
		if (f->scanning)
			take(f, &f->src[i], &r);
	}
}

/* Feeds the packet processor the next block of the unit.  Returns 1 when
 * the unit is done, -1 on an OpenCSD error. */
static int feed(struct csfast *f)
{
	struct cs_dec *d = f->d;
	const struct csq *q = &d->cb->q[d->u->q];
	const struct coresight_chunk *c;
	ocsd_datapath_resp_t resp;
	uint32_t used = 0;

	if (f->chunk >= d->u->c1)
		return 1;
	c = &q->chunks[f->chunk];
	d->pid = c->pid;
	d->time = c->time;
	if (f->pos < c->size) {
		size_t left = c->size - f->pos;
		uint32_t blk = left > CSF_BLOCK ? CSF_BLOCK : (uint32_t)left;

		resp = ocsd_dt_process_data(f->tree, OCSD_OP_DATA,
					    c->offset + f->pos, blk,
					    c->data + f->pos, &used);
		if (!OCSD_DATA_RESP_IS_CONT(resp) || !used)
			return -1;
		f->pos += used > blk ? blk : used;
	} else if (!f->eot_sent) {
		resp = ocsd_dt_process_data(f->tree, OCSD_OP_EOT, 0, 0, NULL,
					    &used);
		f->eot_sent = 1;
		if (!OCSD_DATA_RESP_IS_CONT(resp))
			return -1;
	} else {
		f->chunk++;
		if (f->chunk >= d->u->c1)
			return 1;
		chunk_start(f);
	}
	return 0;
}

/* Whether the walk knows the linked OpenCSD's ETMv4 decoder: 1.3.x and
 * 1.5.4 on are compared with it by the tests; 1.4.2 to 1.5.3 reject A64
 * opcodes whose top half is zero, which the walk does not.  OpenCSD's
 * instruction range limit (an environment variable from 1.4.2 on) turns
 * long ranges into errors: the walk leaves those runs to it. */
static int library_ok(void)
{
	uint32_t v = ocsd_get_version();

	if (v >= 0x010400 && v < 0x010504)
		return 0;
	if (v >= 0x010402 && getenv("OPENCSD_INSTR_RANGE_LIMIT"))
		return 0;
	return 1;
}

/* ---- pieces walked ahead ------------------------------------------------ */

/* Records per piece of a unit (PTD_CS_PIECE_TEST: the owner walks every
 * piece ahead itself, so that tests join pieces at any thread count). */
#define CSF_PIECE_RECS 8192
#define CSF_PIECE_RECS_TEST 256

static int st_put(uint64_t **b, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap && util_grow((void **)b, cap, *n + 1, sizeof(**b)))
		return -1;
	(*b)[(*n)++] = v;
	return 0;
}

static int in_mask(const uint64_t *mask, unsigned id)
{
	return (int)(mask[id >> 6] >> (id & 63) & 1);
}

/* Appends the walk's state to b: all that decides its elements from here
 * on given the same records (the decoder state and element stack of every
 * source in mask, the chunk's pid and time).  Returns -1 out of memory. */
static int save_state(struct csfast *f, const uint64_t *mask, uint64_t **b,
		      size_t *n, size_t *cap)
{
	const struct cs_dec *d = f->d;
	int rc = st_put(b, n, cap, (uint32_t)d->pid) |
		 st_put(b, n, cap, d->time);

	for (size_t k = 0; k < f->nids && !rc; k++) {
		struct csf_src *s = &f->src[f->ids[k]];

		if (!in_mask(mask, f->ids[k]))
			continue;
		rc |= st_put(b, n, cap, (uint64_t)s->state |
			     (uint64_t)s->need_ctxt << 8 |
			     (uint64_t)s->need_addr << 16 |
			     (uint64_t)s->pending_addr << 24 |
			     (uint64_t)s->spec << 32);
		rc |= st_put(b, n, cap, s->n);
		rc |= st_put(b, n, cap, s->addr);
		rc |= st_put(b, n, cap, s->last_index);
		for (size_t i = 0; i < s->n && !rc; i++) {
			const struct csf_se *e = se_at(s, i);

			rc |= st_put(b, n, cap, (uint64_t)e->type |
				     (uint64_t)e->sf << 8 |
				     (uint64_t)e->updated << 16 |
				     (uint64_t)e->upd_c << 24 |
				     (uint64_t)e->upd_v << 32 |
				     (uint64_t)e->prev_same << 40 |
				     (uint64_t)e->natoms << 48);
			rc |= st_put(b, n, cap, e->bits | (uint64_t)e->ctxid << 32);
			rc |= st_put(b, n, cap, e->vmid | (uint64_t)e->exnum << 32);
			rc |= st_put(b, n, cap, e->val);
			rc |= st_put(b, n, cap, e->index);
		}
	}
	return rc ? -1 : 0;
}

/* The walk's state from what save_state wrote (sources outside mask keep
 * theirs).  Returns -1 out of memory. */
static int load_state(struct csfast *f, const uint64_t *mask,
		      const uint64_t *b)
{
	struct cs_dec *d = f->d;

	d->pid = (int32_t)(uint32_t)b[0];
	d->time = b[1];
	b += 2;
	for (size_t k = 0; k < f->nids; k++) {
		struct csf_src *s = &f->src[f->ids[k]];
		size_t n;

		if (!in_mask(mask, f->ids[k]))
			continue;
		n = (size_t)b[1];
		s->state = (int)(b[0] & 0xff);
		s->need_ctxt = (int)(b[0] >> 8 & 0xff);
		s->need_addr = (int)(b[0] >> 16 & 0xff);
		s->pending_addr = (int)(b[0] >> 24 & 0xff);
		s->spec = (uint32_t)(b[0] >> 32);
		s->addr = b[2];
		s->last_index = b[3];
		s->hint = NULL;
		b += 4;
		if (n > s->cap) {
			size_t cap = s->cap ? s->cap : 64;
			struct csf_se *ne;

			while (cap < n)
				cap *= 2;
			if (!(ne = malloc(cap * sizeof(*ne))))
				return -1;
			free(s->se);
			s->se = ne;
			s->cap = cap;
		}
		s->tail = 0;
		s->n = n;
		for (size_t i = 0; i < n; i++, b += 5) {
			struct csf_se *e = &s->se[i];

			memset(e, 0, sizeof(*e));
			e->type = (uint8_t)b[0];
			e->sf = (uint8_t)(b[0] >> 8);
			e->updated = (uint8_t)(b[0] >> 16);
			e->upd_c = (uint8_t)(b[0] >> 24);
			e->upd_v = (uint8_t)(b[0] >> 32);
			e->prev_same = (uint8_t)(b[0] >> 40);
			e->natoms = (uint8_t)(b[0] >> 48);
			e->bits = (uint32_t)b[1];
			e->ctxid = (uint32_t)(b[1] >> 32);
			e->vmid = (uint32_t)b[2];
			e->exnum = (uint32_t)(b[2] >> 32);
			e->val = b[3];
			e->index = b[4];
		}
	}
	return 0;
}

/* Whether a walk from reset has settled: every source it met decodes,
 * with its context and address known (a state the sequential walk may
 * share). */
static int settled(const struct csfast *f)
{
	int any = 0;

	for (size_t k = 0; k < f->nids; k++) {
		const struct csf_src *s = &f->src[f->ids[k]];

		if (s->state == ST_NO_SYNC)
			continue;
		if (s->state != ST_DECODE || s->need_ctxt || s->need_addr)
			return 0;
		any = 1;
	}
	return any;
}

void csfast_walk_piece(struct cs_dec *hd, struct csfast *o,
		       struct cs_piece *pc)
{
	struct csfast *w = hd->piece;
	const struct cs_dec *od = o->d;
	const struct coresight_chunk *c;
	struct cs_dec *wd;
	size_t gap, next;

	pc->n = pc->nsnap = pc->st_n = pc->st_end = 0;
	pc->nomem = 0;
	pc->el = NULL;
	if (!w) {
		w = calloc(1, sizeof(*w));
		wd = calloc(1, sizeof(*wd));
		if (!w || !wd) {
			free(w);
			free(wd);
			pc->nomem = 1;
			return;
		}
		w->d = wd;
		hd->piece = w;
	}
	wd = w->d;
	wd->cb = od->cb;
	wd->u = od->u;
	wd->el_n = 0;
	wd->nomem = 0;
	/* the owner's sources, from reset; their stacks stay the walker's */
	for (size_t k = 0; k < o->nids; k++) {
		struct csf_src *s = &w->src[o->ids[k]];
		struct csf_se *se = s->se;
		size_t cap = s->cap;

		*s = o->src[o->ids[k]];
		s->f = w;
		s->se = se;
		s->cap = cap;
		s->last_index = 0;
		src_reset(s);
	}
	memcpy(w->ids, o->ids, o->nids);
	w->nids = o->nids;
	/* the sources the piece has records of: the others are left to the
	 * owner's state at the join */
	pc->mask[0] = pc->mask[1] = 0;
	for (size_t r = pc->r0; r < pc->r1; r++)
		if (o->rec[r].type != PK_CHUNK)
			pc->mask[o->rec[r].id >> 6 & 1] |= 1ull << (o->rec[r].id & 63);
	c = &od->cb->q[od->u->q].chunks[pc->chunk];
	wd->pid = c->pid;
	wd->time = c->time;
	/* states to join at, spread over the piece */
	gap = (pc->r1 - pc->r0) / (CS_PIECE_SNAPS + 1) + 1;
	next = pc->r0;
	for (size_t r = pc->r0; r < pc->r1 && !wd->nomem; r++) {
		replay(w, &o->rec[r]);
		if (pc->nsnap < CS_PIECE_SNAPS && r + 1 >= next &&
		    r + 1 < pc->r1 && settled(w)) {
			pc->snap_rec[pc->nsnap] = r + 1;
			pc->snap_el[pc->nsnap] = wd->el_n;
			pc->snap_off[pc->nsnap] = pc->st_n;
			if (save_state(w, pc->mask, &pc->st, &pc->st_n,
				       &pc->st_cap))
				wd->nomem = 1;
			pc->nsnap++;
			next = r + 1 + gap;
		}
	}
	pc->st_end = pc->st_n;
	pc->snap_off[pc->nsnap] = pc->st_end;
	if (!wd->nomem &&
	    save_state(w, pc->mask, &pc->st, &pc->st_n, &pc->st_cap))
		wd->nomem = 1;
	pc->nomem = wd->nomem;
	pc->el = wd->el;
	pc->n = wd->el_n;
	wd->el = NULL;
	wd->el_n = wd->el_cap = 0;
}

static void pieces_free(struct cs_piece_set *set)
{
	for (size_t k = 0; k < set->n; k++) {
		free(set->p[k].el);
		free(set->p[k].st);
	}
	free(set->p);
	set->p = NULL;
	set->n = 0;
}

/* Cuts the unit's records into pieces of about len records, each but the
 * first starting at an A-sync.  Returns 1 when there are two or more. */
static int cut_pieces(struct csfast *f, size_t len)
{
	struct cs_piece_set *set = &f->set;
	size_t max = f->rec_n / len + 1, n = 1, chunk = f->d->u->c0;

	pieces_free(set);
	if (max < 2 || !(set->p = calloc(max, sizeof(*set->p))))
		return 0;
	set->p[0].chunk = chunk;
	for (size_t r = 0; r < f->rec_n && n < max; r++) {
		const struct csf_pkt *k = &f->rec[r];

		if (k->type == PK_CHUNK)
			chunk = k->aux;
		else if (k->type == ETM4_PKT_I_ASYNC &&
			 r >= set->p[n - 1].r0 + len) {
			set->p[n - 1].r1 = r;
			set->p[n].r0 = r;
			set->p[n].chunk = chunk;
			n++;
		}
	}
	set->p[n - 1].r1 = f->rec_n;
	set->n = n;
	set->owner = f;
	if (n < 2)
		pieces_free(set);
	return n >= 2;
}

/* The sequential walk, on to record end. */
static void walk_to_rec(struct csfast *f, size_t end)
{
	while (f->rec_pos < end && !f->d->nomem)
		replay(f, &f->rec[f->rec_pos++]);
}

/* Joins piece pc, walked from reset: the owner walks on to each of the
 * piece's states in turn; at the first equal to its own, the piece's
 * elements from there on are the owner's, and so is its state at the
 * piece's end.  Sources the piece has no records of (nor end of trace)
 * make none of its elements: they are not compared and keep the owner's
 * state.  Returns 1 when joined. */
static int join(struct csfast *f, struct cs_piece *pc)
{
	struct cs_dec *d = f->d;

	for (size_t i = 0; i < pc->nsnap && !pc->nomem; i++) {
		size_t len = pc->snap_off[i + 1] - pc->snap_off[i], add;

		walk_to_rec(f, pc->snap_rec[i]);
		f->cmp_n = 0;
		if (d->nomem ||
		    save_state(f, pc->mask, &f->cmp, &f->cmp_n, &f->cmp_cap)) {
			d->nomem = 1;
			return 0;
		}
		if (f->cmp_n != len ||
		    memcmp(f->cmp, pc->st + pc->snap_off[i], len * sizeof(*f->cmp)))
			continue;
		add = pc->n - pc->snap_el[i];
		if (util_grow((void **)&d->el, &d->el_cap, d->el_n + add,
			      sizeof(*d->el)) ||
		    load_state(f, pc->mask, pc->st + pc->st_end)) {
			d->nomem = 1;
			return 0;
		}
		memcpy(d->el + d->el_n, pc->el + pc->snap_el[i],
		       add * sizeof(*d->el));
		d->el_n += add;
		f->rec_pos = pc->r1;
		return 1;
	}
	return 0;
}

/* The whole unit, its pieces offered to the pool's threads. */
static void run_pieces(struct csfast *f, int test)
{
	struct cs_dec *d = f->d;
	struct cs_piece_set *set = &f->set;
	int offered = cspool_pieces_offer(d->cb, set);

	walk_to_rec(f, set->p[0].r1);
	for (size_t k = 1; k < set->n && !d->nomem; k++) {
		struct cs_piece *pc = &set->p[k];
		int mine = cspool_piece_take(d->cb, set, k);

		if (mine && test) {
			csfast_walk_piece(d, f, pc);
			mine = 0;
		}
		if (!mine) {
			__atomic_add_fetch(&d->cb->pieces_ahead, 1, __ATOMIC_RELAXED);
			if (!join(f, pc))
				__atomic_add_fetch(&d->cb->pieces_redone, 1,
						   __ATOMIC_RELAXED);
		}
		walk_to_rec(f, pc->r1);
		free(pc->el);
		pc->el = NULL;
	}
	if (offered)
		cspool_pieces_retract(d->cb, set);
	pieces_free(set);
}

int csfast_start(struct cs_dec *d, const struct cs_unit *u)
{
	const struct csq *q = &d->cb->q[u->q];
	struct csfast *f = d->fast;
	int rc;

	if (!library_ok())
		return 0;
	for (size_t i = 0; i < q->nsrcs; i++)
		if (!config_ok(&q->srcs[i]))
			return 0;
	if (!f) {
		f = d->fast = calloc(1, sizeof(*f));
		if (!f)
			return 0;
		f->d = d;
	}
	if (f->tree && f->tree_q != u->q)
		destroy_tree(f);
	if (!f->tree) {
		if (make_tree(f, q))
			return 0;
		f->tree_q = u->q;
	}
	/* the scan: every chunk of the unit, packets only, and the walk
	 * with it when the unit is not cut into pieces */
	f->scanning = 1;
	f->failed = 0;
	f->recording = u->bytes <= CSF_REC_MAX;
	f->direct = f->recording && !d->cb->pool &&
		    !getenv("PTD_CS_PIECE_TEST");
	if (f->direct)
		d->el_n = 0;
	f->rec_n = f->rec_pos = 0;
	f->pieces_tried = 0;
	f->chunk = u->c0;
	chunk_start(f);
	while (!f->failed && !(rc = feed(f)))
		;
	f->scanning = 0;
	if (f->failed || rc < 0) {
		if (f->direct)
			d->el_n = 0;
		return 0;
	}
	f->direct_n = d->el_n;
	if (!f->recording) {
		/* too big to keep: the walk reads the packets again */
		f->chunk = u->c0;
		chunk_start(f);
	}
	return 1;
}

void csfast_step(struct cs_dec *d)
{
	struct csfast *f = d->fast;

	d->call_start = d->el_n;
	if (f->direct) {
		/* walked with the scan */
		d->call_start = 0;
		d->el_n = f->direct_n;
		d->done = 1;
		return;
	}
	if (f->recording && !f->pieces_tried) {
		int test = getenv("PTD_CS_PIECE_TEST") != NULL;

		f->pieces_tried = 1;
		if ((d->cb->pool || test) && f->rec_pos == 0 &&
		    cut_pieces(f, test ? CSF_PIECE_RECS_TEST : CSF_PIECE_RECS)) {
			run_pieces(f, test);
			d->done = 1;
			return;
		}
	}
	if (f->recording) {
		while (f->rec_pos < f->rec_n && !d->nomem &&
		       d->el_n - d->call_start < CS_ELEM_HIGH)
			replay(f, &f->rec[f->rec_pos++]);
		if (f->rec_pos == f->rec_n)
			d->done = 1;
		return;
	}
	while (!d->done && d->el_n - d->call_start < CS_ELEM_HIGH) {
		int rc = feed(f);

		if (rc) {
			/* the scan ran the same bytes without an error */
			d->done = 1;
		}
		if (d->nomem)
			break;
	}
}

static void fast_free(struct csfast *f)
{
	destroy_tree(f);
	cache_clear(f);
	free(f->all);
	free(f->table);
	free(f->rec);
	for (size_t i = 0; i < 128; i++)
		free(f->src[i].se);
	pieces_free(&f->set);
	free(f->cmp);
	free(f);
}

void csfast_free(struct cs_dec *d)
{
	if (d->fast)
		fast_free(d->fast);
	d->fast = NULL;
	if (d->piece) {
		struct cs_dec *wd = d->piece->d;

		fast_free(d->piece);
		free(wd->el);
		free(wd);
	}
	d->piece = NULL;
}

#endif /* PTD_HAVE_OPENCSD */
