/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* memmem */
#include "fastpt.h"
#include "disasm.h"
#include "imgstore.h"
#include "sideband.h"
#include "util.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Blocks                                                              */

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

/* Memory for blocks comes from an arena freed as a whole. */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	uint8_t pad[40];
	uint8_t data[];          /* 64-byte aligned within the chunk */
};

#define HASH_BITS 16
#define CACHE_MAX ((size_t)256 << 20)  /* default bytes of blocks per worker */

#define TCACHE_BITS 10

/* A run memo: from block `start` with last_ip, the trace bytes `bytes`
 * (whole packets, ending with the TIP of an indirect jump) were walked to
 * the records rec[] and left the walk at block `next` with last_ip_out.
 * The same bytes from the same state walk the same way, so a match is
 * replayed without decoding its packets again: loops through indirect
 * branches are otherwise bound by one libipt packet call per TNT and TIP.
 * Runs with calls or returns (return-stack state), events, time or mode
 * packets are never stored. */
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

struct bcache {
	struct memo *memo;       /* 1 << MEMO_BITS entries, direct-mapped */
	struct fblock *table[1u << HASH_BITS];
	/* targets of indirect branches and returns, direct-mapped: small
	 * enough to stay in L1, unlike the table */
	struct fblock *tcache[1u << TCACHE_BITS];
	struct arena_chunk *chunks;
	size_t bytes;
	struct disasm *dis[3];
};

static void *arena_alloc(struct bcache *c, size_t n)
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

static void free_chunks(struct arena_chunk *a)
{
	while (a) {
		struct arena_chunk *n = a->next;

		free(a);
		a = n;
	}
}

/* Empties the cache; its blocks stay allocated, returned to the caller
 * (records of segments not yet consumed still point at them). */
static struct arena_chunk *bcache_reset(struct bcache *c)
{
	struct arena_chunk *old = c->chunks;

	c->chunks = NULL;
	memset(c->table, 0, sizeof(c->table));
	memset(c->tcache, 0, sizeof(c->tcache));
	if (c->memo)
		memset(c->memo, 0, sizeof(*c->memo) << MEMO_BITS);
	c->bytes = 0;
	return old;
}

static void bcache_free(struct bcache *c)
{
	free_chunks(c->chunks);
	c->chunks = NULL;
	if (c->memo)
		munmap(c->memo, sizeof(*c->memo) << MEMO_BITS);
	c->memo = NULL;
	for (int i = 0; i < 3; i++)
		disasm_free(c->dis[i]);
}

static inline size_t hash_ip(uint64_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> (64 - HASH_BITS));
}

/* ------------------------------------------------------------------ */
/* Segments and their outputs                                          */

/* Context of blocks: changes rarely (time packets, thread switches). */
struct fctx {
	int32_t pid, tid;
	uint64_t time;            /* perf ns, 0 unknown */
};

struct segment {
	uint32_t queue;
	uint64_t start, end;      /* [start, end) in the queue's stream */
	const uint8_t *data;      /* its bytes: in a piece, or in owned */
	uint8_t *owned;           /* a copy when it straddles two pieces */
	int has_fup;              /* its PSB+ holds a FUP: tracing on */
	uint64_t fup_ip;
	int has_tsc;              /* its PSB+ holds a TSC */
	uint64_t tsc;

	/* output, filled by a worker: a run of records, each a block
	 * (priv = struct fblock, ctx = index into ctxs) or an event
	 * (priv = NULL, ctx = index into events) */
	struct ptd_block *recs;
	size_t nrecs, rcap;
	struct fctx *ctxs;
	size_t nctx, ccap;
	struct ptd_event *events;
	size_t nevents, ecap;
	struct evpos { size_t rec; uint64_t cum; } *evpos; /* per event: its
				    * record and the instructions before it */
	size_t pcap;
	uint64_t ninsn;            /* instructions in recs */
	int fallback;
	int state;                 /* 0 queued, 1 running, 2 done (under the
				    * backend's lock) */
	int batch_end;             /* last segment of a worker's batch */
	size_t ord;                /* its index in the output order */
};

struct fqueue {
	struct intelpt_queue q;
	struct segment *segs;
	size_t nsegs;
	volatile int failed;      /* a segment fell back: libipt decodes the
				   * rest, workers may skip its segments */
	uintptr_t dropped;        /* pages below this are out of our RSS */
	uint64_t emitted;         /* instructions handed out so far */
};

struct worker;

#define SPARE_MAX 128

struct fast_backend {
	struct backend base;
	struct intelpt_params p;
	struct imgstore *st;
	const struct sideband *sb;
	struct fqueue *queues;
	size_t nqueues;

	/* all segments of all queues, in output order */
	struct segment **order;
	size_t nsegs;
	size_t next_to_run;        /* next segment a worker takes */
	size_t out_seg, out_pos;   /* consumer position */
	size_t out_ev;             /* next event of out_seg */
	uint64_t out_cum;          /* instructions of out_seg handed out */
	int out_started;           /* out_seg has been waited for */
	/* record arrays of consumed segments, reused (no page faults) */
	struct ptd_block *spare[SPARE_MAX];
	size_t spare_cap[SPARE_MAX];
	int nspare;

	unsigned nthreads;          /* pool threads; the caller decodes too */
	pthread_t *threads;
	struct worker *workers;
	pthread_mutex_t lock;
	pthread_cond_t cond_done, cond_work;
	int stop;
	size_t window;             /* segments in flight ahead of consumer */
	size_t cache_max;          /* block cache bound per worker, bytes */
	int count_only;            /* hand out counts and events, no blocks */
	int keep_text;             /* set by the first fast_insn_text call:
				    * blocks built after it keep their text */
	int pool_started;          /* pool threads are started on the first
				    * call for blocks, never for ptd_next */

	struct fastpt_stats stats;
	char errmsg[512];
	/* reference mode: libipt decodes the rest of one queue */
	struct backend *ref;
	size_t ref_queue;
	uint64_t ref_skip;        /* instructions of it already handed out */
	/* next(): the run being expanded into instructions */
	const struct ptd_block *run;
	size_t run_n, run_i;
	uint32_t insn_i;
	struct ptd_block_info run_info;  /* of run[run_i], once insn_i > 0 */
};

/* libipt as the judge of instructions capstone cannot decode: a tiny trace
 * (PSB, FUP at the address, MODE.Exec, PSBEND) makes libipt's own
 * instruction decoder report that instruction's length and class. */
struct oracle {
	uint8_t buf[64];
	struct pt_insn_decoder *dec;
	struct pt_encoder *enc;
	struct pt_image *image;
	struct imgstore *st;
	int32_t pid;
	uint64_t time;
};

/* Per-worker state. */
struct worker {
	uint64_t epoch;
	struct fast_backend *fb;
	struct bcache cache;
	struct imgstore *st;
	struct oracle orc;
	uint64_t segments, fallbacks, built, hits, memo_hits;
	/* blocks of a cache emptied while records of segments up to
	 * retired_upto (output order) still pointed at them */
	struct arena_chunk *retired;
	size_t retired_upto;
	char *tbuf;                      /* build_block's text scratch */
	size_t tcap;
	/* workers sit side by side in an array: keep one's counters off the
	 * cache line of the next one's epoch (false sharing cost -j2 a
	 * third of its speed) */
	uint8_t pad[128];
};

/* ------------------------------------------------------------------ */
/* Output helpers                                                      */

static int grow_recs(struct segment *s)
{
	return util_grow((void **)&s->recs, &s->rcap, s->nrecs + 1, sizeof(*s->recs));
}

static struct ptd_event *seg_push_event(struct segment *s)
{
	if (util_grow((void **)&s->events, &s->ecap, s->nevents + 1, sizeof(*s->events)) ||
	    util_grow((void **)&s->evpos, &s->pcap, s->nevents + 1, sizeof(*s->evpos)) ||
	    (s->nrecs == s->rcap && grow_recs(s)))
		return NULL;
	s->evpos[s->nevents].rec = s->nrecs;
	s->evpos[s->nevents].cum = s->ninsn;
	s->recs[s->nrecs].priv = NULL;
	s->recs[s->nrecs].ninsn = 0;
	s->recs[s->nrecs].ctx = (uint32_t)s->nevents;
	s->nrecs++;
	memset(&s->events[s->nevents], 0, sizeof(s->events[0]));
	return &s->events[s->nevents++];
}

static void seg_reset_output(struct segment *s)
{
	s->nrecs = 0;
	s->nevents = 0;
	s->nctx = 0;
	s->ninsn = 0;
}

static void seg_free_output(struct segment *s)
{
	seg_reset_output(s);
	free(s->recs);
	free(s->events);
	free(s->ctxs);
	free(s->evpos);
	s->recs = NULL;
	s->events = NULL;
	s->ctxs = NULL;
	s->evpos = NULL;
	s->rcap = s->ecap = s->ccap = s->pcap = 0;
}

/* ------------------------------------------------------------------ */
/* The fast walk                                                       */

/* Return-compression stack with libipt's semantics: 64 entries, the
 * oldest dropped when full. */
#define RS_SIZE 64

struct walk {
	struct worker *w;
	struct fast_backend *fb;
	const struct fqueue *fq;
	struct segment *seg;
	struct pt_packet_decoder *pkt;
	uint64_t ip, last_ip;
	int have_last_ip;
	int enabled;
	uint8_t mode;             /* enum ptd_exec_mode */
	uint64_t tnt;             /* pending TNT bits, oldest at bit 63 */
	int ntnt;
	uint64_t rs[RS_SIZE + 1];
	unsigned rs_top, rs_bottom;

	uint64_t tsc, time;       /* time: perf ns or IMGSTORE_TIME_UNKNOWN */
	uint64_t time_hi;         /* no later than this in the segment: the
				   * next PSB's TSC (the walk times from TSC
				   * packets only; libipt also uses MTC/CYC,
				   * so a block is trusted only if its code
				   * was valid over [time, time_hi]) */
	int32_t pid, tid;
	uint64_t next_switch;
	uint32_t ctx;             /* index of the current fctx */
	int ctx_dirty;            /* time or thread changed since */
	uint64_t *epoch;          /* the worker's: bumped whenever time, thread
				   * or mode change, so a block's validity is
				   * checked once per epoch */

	struct pt_packet peek;    /* lookahead packet */
	int have_peek;            /* 1 packet, 0 none read, -1 end/error */
	uint32_t free_insns;      /* instructions since trace was last needed */

	/* the packet decoder's position: cached, and after memo replays
	 * moved here first and given to libipt only when it next decodes */
	uint64_t off;
	int off_valid, pkt_stale;

	/* the run being recorded for the memo (see struct memo) */
	int rec;                  /* recording; cleared by anything impure */
	int rec_tip;              /* the run ended with an indirect jump */
	struct fblock *rec_start;
	uint64_t rec_off, rec_last_ip, rec_epoch;
	size_t rec_nrecs, rec_nevents;
};

#ifdef FASTPT_DEBUG
#define WALK_FAIL (fprintf(stderr,"fail@%d\n",__LINE__),-1)
#else
#define WALK_FAIL (-1)
#endif
#define WALK_DONE 1           /* segment finished */

static void rs_push(struct walk *k, uint64_t ip)
{
	k->rs[k->rs_top] = ip;
	k->rs_top = k->rs_top == RS_SIZE ? 0 : k->rs_top + 1;
	if (k->rs_bottom == k->rs_top)
		k->rs_bottom = k->rs_bottom == RS_SIZE ? 0 : k->rs_bottom + 1;
}

static int rs_pop(struct walk *k, uint64_t *ip)
{
	if (k->rs_top == k->rs_bottom)
		return -1;
	k->rs_top = k->rs_top ? k->rs_top - 1 : RS_SIZE;
	*ip = k->rs[k->rs_top];
	return 0;
}

static struct ptd_event *event(struct walk *k, int kind, uint64_t ip);

static void set_time(struct walk *k, uint64_t tsc)
{
	k->tsc = tsc;
	k->time = intelpt_tsc_to_perf(&k->fb->p, tsc);
	k->ctx_dirty = 1;
	++*k->epoch;
}

/* Follows the sideband like the reference path: who runs now. */
static void update_context(struct walk *k)
{
	int32_t pid, tid;

	if (!k->fb->sb || k->fq->q.cpu < 0 || k->time == IMGSTORE_TIME_UNKNOWN)
		return;
	if (k->next_switch && k->time < k->next_switch)
		return;
	if (sideband_task_at(k->fb->sb, k->fq->q.cpu, k->time, &pid, &tid) == 0 &&
	    (pid != k->pid || tid != k->tid)) {
		struct ptd_event *ev;

		k->pid = pid;
		k->tid = tid;
		k->ctx_dirty = 1;
		++*k->epoch;
		ev = event(k, PTD_EV_SWITCH, 0);
		(void)ev;
	}
	k->next_switch = sideband_next_switch(k->fb->sb, k->fq->q.cpu, k->time);
}

static uint64_t decompress(struct walk *k, const struct pt_packet_ip *pip,
			   int *ok)
{
	uint64_t ip = pip->ip, last = k->last_ip;

	*ok = 1;
	switch (pip->ipc) {
	case pt_ipc_suppressed:
		*ok = 0;
		return 0;
	case pt_ipc_update_16:
		ip = (last & ~0xffffull) | (ip & 0xffffull);
		break;
	case pt_ipc_update_32:
		ip = (last & ~0xffffffffull) | (ip & 0xffffffffull);
		break;
	case pt_ipc_update_48:
		ip = (last & ~0xffffffffffffull) | (ip & 0xffffffffffffull);
		break;
	case pt_ipc_sext_48:
		ip &= 0xffffffffffffull;
		if (ip & 0x800000000000ull)
			ip |= 0xffff000000000000ull;
		break;
	case pt_ipc_full:
		break;
	default:
		*ok = -1;
		return 0;
	}
	k->last_ip = ip;
	return ip;
}

/* Reads the next packet that matters for the flow into k->peek, handling
 * timing and paging packets on the way.  Returns 1 with a packet, 0 at the
 * end of the segment, WALK_FAIL on anything unusual. */
/* The offset of the next packet in the segment. */
static inline uint64_t pkt_offset(struct walk *k)
{
	if (!k->off_valid) {
		k->off = 0;
		pt_pkt_get_offset(k->pkt, &k->off);
		k->off_valid = 1;
	}
	return k->off;
}

static __attribute__((noinline)) int fetch_packet(struct walk *k)
{
	if (k->pkt_stale) {
		if (pt_pkt_sync_set(k->pkt, k->off) < 0)
			return WALK_FAIL;
		k->pkt_stale = 0;
	}
	for (;;) {
		int rc;

		k->off_valid = 0;
		/* the decoder's buffer ends where the segment does */
		rc = pt_pkt_next(k->pkt, &k->peek, sizeof(k->peek));
		if (rc == -pte_eos) {
			k->have_peek = -1;
			return 0;
		}
		if (rc < 0)
			return WALK_FAIL;
		switch (k->peek.type) {
		case ppt_pad:
		case ppt_tma:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_cbr:
		case ppt_pip:
		case ppt_vmcs:
		case ppt_mnt:
			continue;
		case ppt_tsc:
			set_time(k, k->peek.payload.tsc.tsc);
			update_context(k);
			continue;
		case ppt_mode:
			if (k->peek.payload.mode.leaf == pt_mol_exec) {
				int m = pt_get_exec_mode(&k->peek.payload.mode.bits.exec);

				k->mode = intelpt_map_mode(m);
				++*k->epoch;
				continue;
			}
			/* MODE.TSX: transactions need libipt's handling */
			return WALK_FAIL;
		case ppt_tnt_8:
		case ppt_tnt_64:
		case ppt_tip:
		case ppt_tip_pge:
		case ppt_tip_pgd:
		case ppt_fup:
			k->have_peek = 1;
			return 1;
		default:
			/* psb inside a segment, ovf, ptw, power, stop, ... */
			return WALK_FAIL;
		}
	}
}

/* The lookahead packet is usually there already: that check stays inline
 * on the hot path, the library call does not. */
static inline int peek_packet(struct walk *k)
{
	if (k->have_peek)
		return k->have_peek > 0 ? 1 : 0;
	return fetch_packet(k);
}

static void consume(struct walk *k)
{
	k->have_peek = 0;
}

/* Next TNT bit when none is pending: reads the next TNT packet. */
static int tnt_refill(struct walk *k)
{
	int rc, bit;

	rc = peek_packet(k);
	if (rc <= 0 || (k->peek.type != ppt_tnt_8 && k->peek.type != ppt_tnt_64))
		return WALK_FAIL;
	k->ntnt = k->peek.payload.tnt.bit_size;
	if (!k->ntnt || k->ntnt > 47)
		return WALK_FAIL;
	/* oldest branch in the most significant payload bit */
	k->tnt = k->peek.payload.tnt.payload << (64 - k->ntnt);
	consume(k);
	bit = (int)(k->tnt >> 63);
	k->tnt <<= 1;
	k->ntnt--;
	return bit;
}

/* Next TNT bit: 1 taken, 0 not taken, or WALK_FAIL. */
static inline int tnt_bit(struct walk *k)
{
	int bit;

	if (__builtin_expect(!k->ntnt, 0))
		return tnt_refill(k);
	bit = (int)(k->tnt >> 63);
	k->tnt <<= 1;
	k->ntnt--;
	return bit;
}

static struct ptd_event *event(struct walk *k, int kind, uint64_t ip);
static int wait_enable(struct walk *k);

/* Tracing stops at a branch (TIP.PGD): the branch left the traced range
 * (IP filters, or a change to a CPL that is not traced). */
static int branch_disable(struct walk *k)
{
	struct ptd_event *ev;
	uint64_t to;
	int ok;

	to = decompress(k, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok < 0 || k->ntnt)
		return WALK_FAIL;
	ev = event(k, PTD_EV_DISABLED, ok ? to : 0);
	if (ev && !ok)
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
	return wait_enable(k);
}

/* Target of an indirect branch from the next TIP; a TIP.PGD instead
 * disables tracing (then *ip is where it resumed). */
static int tip_target(struct walk *k, uint64_t *ip)
{
	int ok, rc = peek_packet(k);

	if (rc <= 0)
		return WALK_FAIL;
	if (k->peek.type == ppt_tip_pgd) {
		if (k->peek.payload.ip.ipc == pt_ipc_suppressed)
			return WALK_FAIL; /* libipt binds those to far branches */
		rc = branch_disable(k);
		*ip = k->ip;
		return rc;
	}
	if (k->peek.type != ppt_tip)
		return WALK_FAIL;
	*ip = decompress(k, &k->peek.payload.ip, &ok);
	consume(k);
	return ok == 1 ? 0 : WALK_FAIL;
}

#define WALK_REENABLED 2      /* tracing went off and on again */

/* After a direct jump or call to target: a TIP.PGD with that IP says the
 * branch left the traced range.  Returns 0 (nothing), WALK_REENABLED
 * (k->ip is where tracing resumed), WALK_DONE or WALK_FAIL. */
static int direct_disable(struct walk *k, uint64_t target)
{
	struct pt_packet_ip pip;
	uint64_t saved = k->last_ip;
	int ok, rc;

	if (k->ntnt)
		return 0;
	rc = peek_packet(k);
	if (rc <= 0 || k->peek.type != ppt_tip_pgd)
		return rc < 0 ? WALK_FAIL : 0;
	pip = k->peek.payload.ip;
	if (decompress(k, &pip, &ok) != target || ok != 1) {
		k->last_ip = saved;
		return 0;
	}
	k->last_ip = saved;
	rc = branch_disable(k);
	return rc ? rc : WALK_REENABLED;
}

static struct ptd_event *event(struct walk *k, int kind, uint64_t ip)
{
	struct ptd_event *ev = seg_push_event(k->seg);
	uint64_t off = 0;

	if (!ev)
		return NULL;
	ev->kind = (uint16_t)kind;
	ev->ip = ip;
	ev->cpu = k->fq->q.cpu;
	ev->pid = k->pid;
	ev->tid = k->tid;
	if (k->time != IMGSTORE_TIME_UNKNOWN) {
		ev->time = k->time;
		ev->tsc = k->tsc;
		ev->flags |= PTD_EVF_TIME_VALID;
	}
	off = pkt_offset(k);
	ev->offset = k->seg->start + off;
	return ev;
}

/* Tracing is off: wait for TIP.PGE.  Returns 0 when enabled again,
 * WALK_DONE at the end of the segment, WALK_FAIL otherwise. */
static int wait_enable(struct walk *k)
{
	int ok, rc;

	k->enabled = 0;
	k->ntnt = 0;
	rc = peek_packet(k);
	if (rc == 0)
		return WALK_DONE;
	if (rc < 0 || k->peek.type != ppt_tip_pge)
		return WALK_FAIL;
	k->ip = decompress(k, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok != 1)
		return WALK_FAIL;
	k->enabled = 1;
	/* a new trace from here: nothing compressed refers to before */
	update_context(k);
	event(k, PTD_EV_ENABLED, k->ip);
	return 0;
}

static int oracle_read(uint8_t *buf, size_t size, const struct pt_asid *asid,
		       uint64_t ip, void *ctx)
{
	struct oracle *o = ctx;
	int n = imgstore_read_r(o->st, o->pid, ip, o->time, buf, size, NULL, NULL, 0);

	(void)asid;
	return n > 0 ? n : -pte_nomap;
}

static void oracle_free(struct oracle *o)
{
	pt_insn_free_decoder(o->dec);
	pt_free_encoder(o->enc);
	pt_image_free(o->image);
	memset(o, 0, sizeof(*o));
}

/* Length and libipt class of the instruction at ip.  Returns the length
 * (> 0), or -1 when libipt cannot decode it either. */
static int oracle_insn(struct walk *k, uint64_t ip, uint8_t *iclass)
{
	struct oracle *o = &k->w->orc;
	struct pt_packet pk;
	struct pt_insn insn;
	int status;

	if (!o->dec) {
		struct pt_config cfg;

		pt_config_init(&cfg);
		cfg.begin = o->buf;
		cfg.end = o->buf + sizeof(o->buf);
		o->enc = pt_alloc_encoder(&cfg);
		o->dec = pt_insn_alloc_decoder(&cfg);
		o->image = pt_image_alloc("oracle");
		o->st = k->w->st;
		if (!o->enc || !o->dec || !o->image ||
		    pt_image_set_callback(o->image, oracle_read, o) < 0 ||
		    pt_insn_set_image(o->dec, o->image) < 0) {
			oracle_free(o);
			return -1;
		}
	}
	o->pid = k->pid;
	o->time = k->time;
	memset(o->buf, 0, sizeof(o->buf)); /* zeros are PADs */
	pt_enc_sync_set(o->enc, 0);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_psb;
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	pk.type = ppt_fup;
	pk.payload.ip.ipc = pt_ipc_full;
	pk.payload.ip.ip = ip;
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(
		k->mode == PTD_MODE_32 ? ptem_32bit :
		k->mode == PTD_MODE_16 ? ptem_16bit : ptem_64bit);
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	pk.type = ppt_psbend;
	if (pt_enc_next(o->enc, &pk) < 0)
		return -1;
	status = pt_insn_sync_set(o->dec, 0);
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_insn_event(o->dec, &ev, sizeof(ev));
	}
	if (status < 0)
		return -1;
	memset(&insn, 0, sizeof(insn));
	status = pt_insn_next(o->dec, &insn, sizeof(insn));
	/* branches need packets to proceed and fail here: they are not
	 * for the oracle to judge (their targets matter) */
	if (status < 0 || insn.ip != ip || !insn.size)
		return -1;
	*iclass = intelpt_map_class(insn.iclass);
	return insn.size;
}

static struct disasm *dis_for(struct bcache *c, uint8_t mode)
{
	int i = mode == PTD_MODE_16 ? 0 : mode == PTD_MODE_32 ? 1 : 2;
	static const enum disasm_arch arch[3] = { DISASM_X86_16, DISASM_X86_32,
						  DISASM_X86_64 };

	if (!c->dis[i])
		c->dis[i] = disasm_new(arch[i], 0, NULL, 0);
	return c->dis[i];
}

/* Appends the text of the instruction d just classified to the worker's
 * scratch (at *tlen, its offset to *at); "(bad)" when capstone could not
 * decode it (libipt judged it: d holds no instruction then).  Returns 0 or -1 (memory). */
static int keep_insn_text(struct worker *w, struct disasm *d, uint32_t *tlen,
			  uint32_t *at)
{
	char t[160];
	int n = disasm_last_text(d, t, sizeof(t));

	if (n < 0)
		n = snprintf(t, sizeof(t), "(bad)");
	if (util_grow((void **)&w->tbuf, &w->tcap, *tlen + (size_t)n + 1, 1))
		return -1;
	memcpy(w->tbuf + *tlen, t, (size_t)n + 1);
	*at = *tlen;
	*tlen += (uint32_t)n + 1;
	return 0;
}

/* Decodes the block at k->ip from the image valid now. */
static struct fblock *build_block(struct walk *k)
{
	struct bcache *c = &k->w->cache;
	struct imgstore_hit hit;
	uint16_t off[FB_MAX_INSN];
	uint8_t code[FB_MAX_INSN * 2 + 16], ibuf[16];
	struct disasm *d = dis_for(c, k->mode);
	struct disasm_insn_info info;
	struct fblock *b;
	uint64_t ip = k->ip, vend, from, to;
	uint32_t n = 0, len = 0, toff[FB_MAX_INSN], tlen = 0;
	uint8_t kind = FB_FALL, last_iclass = PTD_IC_OTHER;
	int rc, keep_text = __atomic_load_n(&k->w->fb->keep_text, __ATOMIC_RELAXED);

	if (!d || k->mode == PTD_MODE_UNKNOWN)
		return NULL;
	memset(&hit, 0, sizeof(hit));
	rc = imgstore_read_r(k->w->st, k->pid, ip, k->time, ibuf, sizeof(ibuf), &hit,
			     NULL, 0);
	if (rc <= 0)
		return NULL;
	vend = hit.start + hit.len;
	from = hit.valid_from;
	to = hit.valid_to;
	while (n < FB_MAX_INSN && len + 16 <= sizeof(code)) {
		uint64_t at = ip + len;
		int got = imgstore_read_r(k->w->st, k->pid, at, k->time, ibuf,
					  sizeof(ibuf), NULL, NULL, 0);

		if (got <= 0)
			return NULL;
		rc = disasm_insn_info(d, ibuf, (size_t)got, at, &info);
		if (rc <= 0) {
			/* capstone cannot decode it (e.g. AVX-512 in capstone
			 * 4): libipt judges; only non-branches are kept */
			uint8_t ic = PTD_IC_UNKNOWN;

			rc = oracle_insn(k, at, &ic);
			if (rc <= 0 || rc > got || ic != PTD_IC_OTHER)
				return NULL;
			info.kind = DISASM_OTHER;
		}
		while (at + (uint64_t)rc > vend) {
			/* it straddles into the next version (adjacent pages):
			 * the block is valid only while both are */
			struct imgstore_hit h2;

			if (imgstore_lookup(k->w->st, k->pid, vend, k->time, &h2) ||
			    h2.start + h2.len <= vend)
				return NULL;
			if (h2.valid_from > from)
				from = h2.valid_from;
			if (h2.valid_to < to)
				to = h2.valid_to;
			vend = h2.start + h2.len;
		}
		if (keep_text && keep_insn_text(k->w, d, &tlen, &toff[n]))
			return NULL;
		off[n++] = (uint16_t)len;
		memcpy(code + len, ibuf, (size_t)rc);
		len += (uint32_t)rc;
		switch (info.kind) {
		case DISASM_OTHER:
			continue;
		case DISASM_COND_JUMP: kind = FB_COND; last_iclass = PTD_IC_COND_JUMP; break;
		case DISASM_JUMP: kind = FB_JUMP; last_iclass = PTD_IC_JUMP; break;
		case DISASM_CALL:
			kind = info.target == at + (uint64_t)rc ? FB_CALL_NEXT : FB_CALL;
			last_iclass = PTD_IC_CALL;
			break;
		case DISASM_IND_JUMP: kind = FB_IND_JUMP; last_iclass = PTD_IC_JUMP; break;
		case DISASM_IND_CALL: kind = FB_IND_CALL; last_iclass = PTD_IC_CALL; break;
		case DISASM_RETURN: kind = FB_RET; last_iclass = PTD_IC_RETURN; break;
		case DISASM_FAR_CALL: kind = FB_FAR; last_iclass = PTD_IC_FAR_CALL; break;
		case DISASM_FAR_RETURN: kind = FB_FAR; last_iclass = PTD_IC_FAR_RETURN; break;
		case DISASM_FAR_JUMP: kind = FB_FAR; last_iclass = PTD_IC_FAR_JUMP; break;
		default:
			return NULL;
		}
		if ((kind == FB_COND || kind == FB_JUMP || kind == FB_CALL ||
		     kind == FB_CALL_NEXT) && !info.has_target)
			return NULL;
		break;
	}
	if (kind == FB_FALL && n == 0)
		return NULL;
	b = arena_alloc(c, sizeof(*b) + (keep_text ? n * sizeof(uint32_t) + tlen + 1 : 0) +
			n * sizeof(uint16_t) + len);
	if (!b)
		return NULL;
	memset(b, 0, sizeof(*b));
	if (keep_text) {
		uint32_t *t = (uint32_t *)(b + 1);

		memcpy(t, toff, n * sizeof(uint32_t));
		b->toff = t;
		b->text = (const char *)(t + n);
		memcpy((char *)b->text, k->w->tbuf, tlen);
		/* the offsets after the text: 2-byte aligned */
		b->off = (uint16_t *)(b->text + ((tlen + 1) & ~1u));
	} else {
		b->off = (uint16_t *)(b + 1);
	}
	b->bytes = (uint8_t *)(b->off + n);
	memcpy(b->off, off, n * sizeof(uint16_t));
	memcpy(b->bytes, code, len);
	b->ip = ip;
	b->ninsn = n;
	b->len = len;
	b->end_ip = ip + off[n - 1];
	b->next_ip = ip + len;
	b->target = kind == FB_FALL ? b->next_ip : info.target;
	b->kind = kind;
	b->mode = k->mode;
	b->last_iclass = last_iclass;
	b->valid_from = from;
	b->valid_to = to;
	b->image = (uint32_t)hit.version_id;
	b->pid = hit.pid;
	{
		size_t h = hash_ip(ip);

		b->hnext = c->table[h];
		c->table[h] = b;
	}
	k->w->built++;
	return b;
}

static inline int block_valid(struct fblock *b, const struct walk *k)
{
	if (b->epoch == *k->epoch)
		return 1;
	if (b->mode == k->mode &&
	    (b->pid == k->pid || b->pid == IMGSTORE_KERNEL) &&
	    (k->time == IMGSTORE_TIME_UNKNOWN ||
	     (k->time >= b->valid_from && k->time_hi < b->valid_to))) {
		b->epoch = *k->epoch;
		return 1;
	}
	return 0;
}

static struct fblock *get_block(struct walk *k)
{
	struct fblock *b;

	for (b = k->w->cache.table[hash_ip(k->ip)]; b; b = b->hnext)
		if (b->ip == k->ip && block_valid(b, k)) {
			k->w->hits++;
			return b;
		}
	b = build_block(k);
	/* valid now, but maybe not over the whole span the walk cannot
	 * tell apart: then the exact time decides, which is libipt's */
	return b && block_valid(b, k) ? b : NULL;
}

/* The block at k->ip through a successor slot of the previous block: a
 * pointer chase instead of a hash lookup on the hot path. */
static inline struct fblock *follow(struct walk *k, struct fblock **slot)
{
	struct fblock *nb = *slot;

	if (__builtin_expect(nb && nb->ip == k->ip && block_valid(nb, k), 1))
		return nb;
	nb = get_block(k);
	*slot = nb;
	return nb;
}

/* The block at k->ip after an indirect branch or return. */
static inline struct fblock *follow_indirect(struct walk *k, struct fblock **slot)
{
	struct fblock **tc, *nb = *slot;

	if (nb && nb->ip == k->ip && block_valid(nb, k))
		return nb;
	tc = &k->w->cache.tcache[(k->ip * 0x9e3779b97f4a7c15ull) >> (64 - TCACHE_BITS)];
	nb = *tc;
	if (!nb || nb->ip != k->ip || !block_valid(nb, k)) {
		nb = get_block(k);
		*tc = nb;
	}
	*slot = nb;
	return nb;
}

static int new_ctx(struct walk *k)
{
	struct segment *s = k->seg;

	if (util_grow((void **)&s->ctxs, &s->ccap, s->nctx + 1, sizeof(*s->ctxs)))
		return WALK_FAIL;
	s->ctxs[s->nctx].pid = k->pid;
	s->ctxs[s->nctx].tid = k->tid;
	s->ctxs[s->nctx].time = k->time == IMGSTORE_TIME_UNKNOWN ? 0 : k->time;
	k->ctx = (uint32_t)s->nctx++;
	k->ctx_dirty = 0;
	return 0;
}

/* Appends the first n instructions of b to the output: the hot path. */
static inline int emit(struct walk *k, const struct fblock *b, uint32_t n)
{
	struct segment *s = k->seg;
	struct ptd_block *r;

	if (!n)
		return 0;
	if (k->ctx_dirty && new_ctx(k))
		return WALK_FAIL;
	if (s->nrecs == s->rcap && grow_recs(s))
		return WALK_FAIL;
	r = &s->recs[s->nrecs++];
	r->priv = b;
	r->ninsn = n;
	r->ctx = k->ctx;
	s->ninsn += n;
	return 0;
}

/* Index of the instruction at ip in b, or -1. */
static int insn_index(const struct fblock *b, uint64_t ip)
{
	uint64_t o = ip - b->ip;

	if (ip < b->ip || ip > b->end_ip)
		return -1;
	for (uint32_t i = 0; i < b->ninsn; i++)
		if (b->off[i] == o)
			return (int)i;
	return -1;
}

/* Handles a FUP: the asynchronous event happens at its IP, which lies on
 * the straight path ahead.  Walks there, then applies what follows the
 * FUP (TIP: async branch; TIP.PGD: tracing off). */
static int async_event(struct walk *k)
{
	uint64_t at, to;
	int ok, rc;

	at = decompress(k, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok != 1)
		return WALK_FAIL;
	for (int guard = 0; k->ip != at; guard++) {
		struct fblock *b = get_block(k);
		int idx;

		if (!b || guard > 4096)
			return WALK_FAIL;
		idx = insn_index(b, at);
		if (idx >= 0) {
			if (emit(k, b, (uint32_t)idx))
				return WALK_FAIL;
			k->ip = at;
			break;
		}
		/* only flow that needs no packet may lie before the event */
		if (emit(k, b, b->ninsn))
			return WALK_FAIL;
		if (b->kind == FB_JUMP || b->kind == FB_CALL_NEXT || b->kind == FB_FALL)
			k->ip = b->target;
		else if (b->kind == FB_CALL) {
			rs_push(k, b->next_ip);
			k->ip = b->target;
		} else
			return WALK_FAIL;
	}
	rc = peek_packet(k);
	if (rc <= 0)
		return WALK_FAIL;
	if (k->peek.type == ppt_tip) {
		to = decompress(k, &k->peek.payload.ip, &ok);
		consume(k);
		if (ok != 1)
			return WALK_FAIL;
		{
			struct ptd_event *ev = event(k, PTD_EV_ASYNC, at);

			if (ev)
				ev->addr = to;
		}
		k->ip = to;
		return 0;
	}
	if (k->peek.type == ppt_tip_pgd) {
		struct ptd_event *ev;

		to = decompress(k, &k->peek.payload.ip, &ok);
		consume(k);
		if (ok < 0)
			return WALK_FAIL;
		ev = event(k, PTD_EV_DISABLED, at);
		if (ev) {
			ev->addr = ok ? to : 0;
			if (!ok)
				ev->flags |= PTD_EVF_IP_SUPPRESSED;
		}
		return wait_enable(k);
	}
	return WALK_FAIL;
}

/* The next segment's first IP: where this segment's flow must stop. */
static int seg_stop_ip(const struct walk *k, uint64_t *ip)
{
	const struct segment *s = k->seg;
	const struct fqueue *fq = k->fq;
	size_t i = (size_t)(s - fq->segs);

	if (i + 1 >= fq->nsegs || !fq->segs[i + 1].has_fup)
		return 0;
	*ip = fq->segs[i + 1].fup_ip;
	return 1;
}

/* Runs of conditional-branch blocks while TNT bits are pending, the bulk
 * of most traces: state in locals, one compare to trust a cached
 * successor.  Stops before the block that needs anything else (returned,
 * not yet emitted), keeping at least one bit for the general loop. */
static struct fblock *cond_run(struct walk *k, struct fblock *b)
{
	struct segment *s = k->seg;
	struct ptd_block *out = s->recs + s->nrecs;
	struct ptd_block *end = s->recs + s->rcap;
	uint64_t tnt = k->tnt, ninsn = s->ninsn, epoch = *k->epoch;
	uint32_t ctx = k->ctx;
	int ntnt = k->ntnt;

	if (k->ctx_dirty)
		return b;
	while (b->kind == FB_COND && ntnt > 1 && out < end) {
		struct fblock *nb;
		int bit = (int)(tnt >> 63);

		nb = b->succ[bit];
		if (!nb || nb->epoch != epoch)
			break;  /* the general loop looks it up */
		out->priv = b;
		out->ninsn = b->ninsn;
		out->ctx = ctx;
		out++;
		ninsn += b->ninsn;
		tnt <<= 1;
		ntnt--;
		b = nb;
	}
	s->nrecs = (size_t)(out - s->recs);
	s->ninsn = ninsn;
	k->tnt = tnt;
	k->ntnt = ntnt;
	k->ip = b->ip;
	return b;
}

/* ---- run memo (struct memo) ---- */

static inline size_t memo_hash(const struct fblock *b, uint64_t last_ip,
			       const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return (size_t)((((uintptr_t)b >> 6) ^ (last_ip * 0x9e3779b97f4a7c15ull) ^
			 ((uint64_t)w * 0xc2b2ae3d27d4eb4full)) >> (64 - MEMO_BITS));
}

static void memo_begin(struct walk *k, struct fblock *start)
{
	struct bcache *c = &k->w->cache;

	if (!c->memo) {
		/* Page-aligned (an entry's key and bytes share a cache line) and
		 * zero-filled on first touch: clearing the 1.5 MiB up front
		 * cost every thread ~400 page faults before its first block,
		 * a tenth of a short trace's decode on this VM. */
		void *m = mmap(NULL, sizeof(*c->memo) << MEMO_BITS, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return;
		c->memo = m;
	}
	k->rec = 1;
	k->rec_tip = 0;
	k->rec_start = start;
	k->rec_off = pkt_offset(k);
	k->rec_last_ip = k->last_ip;
	k->rec_epoch = *k->epoch;
	k->rec_nrecs = k->seg->nrecs;
	k->rec_nevents = k->seg->nevents;
}

/* The run recorded since memo_begin ends here, at block next. */
static void memo_store(struct walk *k, struct fblock *next)
{
	const struct segment *s = k->seg;
	size_t nrec = s->nrecs - k->rec_nrecs;
	uint64_t len = pkt_offset(k) - k->rec_off;
	struct memo *e;

	k->rec = 0;
	if (!k->rec_tip || *k->epoch != k->rec_epoch || s->nevents != k->rec_nevents ||
	    !nrec || nrec > MEMO_RECS || len < MEMO_MIN || len > MEMO_BYTES ||
	    k->free_insns)
		return;
	e = &k->w->cache.memo[memo_hash(k->rec_start, k->rec_last_ip,
					s->data + k->rec_off)];
	e->start = k->rec_start;
	e->next = next;
	e->last_ip_in = k->rec_last_ip;
	e->last_ip_out = k->last_ip;
	e->epoch = *k->epoch;
	e->len = (uint8_t)len;
	e->nrec = (uint8_t)nrec;
	e->ninsn = 0;
	memcpy(e->bytes, s->data + k->rec_off, len);
	for (size_t i = 0; i < nrec; i++) {
		const struct ptd_block *r = &s->recs[k->rec_nrecs + i];

		e->rec[i].b = (struct fblock *)r->priv;
		e->rec[i].ninsn = r->ninsn;
		e->ninsn += r->ninsn;
	}
}

/* Replays a stored run that starts at *nb with the coming trace bytes.
 * Returns 1 with the walk moved past it (*nb is its last block's
 * successor), 0 to walk normally. */
static int memo_replay(struct walk *k, struct fblock **nb)
{
	struct segment *s = k->seg;
	const struct memo *e;
	struct memo *m = k->w->cache.memo;
	uint64_t off, avail;
	const uint8_t *p;

	if (!m)
		return 0;
	off = pkt_offset(k);
	avail = s->end - s->start - off;
	if (off > s->end - s->start || avail < MEMO_MIN)
		return 0;
	p = s->data + off;
	e = &m[memo_hash(*nb, k->last_ip, p)];
	if (e->start != *nb || e->last_ip_in != k->last_ip || e->len > avail)
		return 0;
	for (unsigned i = MEMO_MIN; i < e->len; i++)  /* the first 4: below */
		if (e->bytes[i] != p[i])
			return 0;
	if (memcmp(e->bytes, p, MEMO_MIN))
		return 0;
	if (e->epoch != *k->epoch) {
		/* valid blocks then; check them again for now */
		for (unsigned i = 0; i < e->nrec; i++)
			if (!block_valid(e->rec[i].b, k))
				return 0;
		if (!block_valid((struct fblock *)e->next, k))
			return 0;
		((struct memo *)e)->epoch = *k->epoch;
	}
	if (k->free_insns + e->ninsn >= INTELPT_NELOOP_INSNS)
		return 0;
	/* the next lookup follows at once and depends on this entry: start
	 * loading its line while this one's records are copied */
	if (avail - e->len >= MEMO_MIN)
		__builtin_prefetch(&m[memo_hash(e->next, e->last_ip_out, p + e->len)]);
	while (s->nrecs + e->nrec > s->rcap)
		if (grow_recs(s))
			return 0;
	k->off = off + e->len;
	k->pkt_stale = 1;
	for (unsigned i = 0; i < e->nrec; i++) {
		struct ptd_block *r = &s->recs[s->nrecs++];

		r->priv = e->rec[i].b;
		r->ninsn = e->rec[i].ninsn;
		r->ctx = k->ctx;
	}
	s->ninsn += e->ninsn;
	k->free_insns = 0;
	k->last_ip = e->last_ip_out;
	*nb = (struct fblock *)e->next;
	k->ip = (*nb)->ip;
	k->w->memo_hits++;
	return 1;
}

/* Walks the segment.  Returns WALK_DONE or WALK_FAIL. */
/* Count-only: nobody reads the block records, so the array is reused
 * from its start once it holds COUNT_TRIM of them (records stay in L1/L2
 * instead of streaming through memory: -j2 spent a fifth of its time on
 * them on TNT-dense traces).  A run being recorded for the memo keeps its
 * records, moved to the front. */
#define COUNT_TRIM 512

static void count_trim(struct walk *k)
{
	struct segment *s = k->seg;
	size_t keep = 0;

	if (k->rec) {
		keep = s->nrecs - k->rec_nrecs;
		if (keep > MEMO_RECS) {
			k->rec = 0;  /* too long for the memo anyway */
			keep = 0;
		} else {
			memmove(s->recs, s->recs + k->rec_nrecs, keep * sizeof(*s->recs));
			k->rec_nrecs = 0;
		}
	}
	s->nrecs = keep;
}

static int walk_segment(struct walk *k)
{
	uint64_t stop_ip = 0;
	int have_stop = seg_stop_ip(k, &stop_ip);
	size_t si = (size_t)(k->seg - k->fq->segs);
	int is_last = si + 1 >= k->fq->nsegs;
	int rc;

	if (!k->enabled) {
		rc = wait_enable(k);
		if (rc)
			return rc;
	}
	for (struct fblock *nb = NULL;;) {
		struct fblock *b;

		if (k->seg->nrecs >= COUNT_TRIM && k->w->fb->count_only)
			count_trim(k);
		/* between packets with the next block known, after an
		 * indirect jump or anything that stopped the recording: a run
		 * boundary */
		if (nb && !k->ntnt && !k->have_peek && (!k->rec || k->rec_tip)) {
			if (k->rec)
				memo_store(k, nb);
			if (!k->ctx_dirty && memo_replay(k, &nb))
				continue;
			memo_begin(k, nb);
		}
		if (!k->ntnt) {
			rc = peek_packet(k);
			if (rc < 0)
				return WALK_FAIL;
			if (rc == 1 && k->peek.type == ppt_fup) {
				rc = async_event(k);
				if (rc)
					return rc;
				nb = NULL;
				continue;
			}
			/* an enable while enabled: state we cannot know
			 * from this segment alone */
			if (rc == 1 && k->peek.type == ppt_tip_pge)
				return WALK_FAIL;
			if (rc == 0) {
				/* out of packets: run to the next PSB's IP */
				if (is_last) {
					/* end of the trace: the reference path
					 * stops once the last packet is used */
					return WALK_DONE;
				} else if (have_stop) {
					int idx;

					if (k->ip == stop_ip)
						return WALK_DONE;
					b = get_block(k);
					if (!b)
						return WALK_FAIL;
					idx = insn_index(b, stop_ip);
					if (idx >= 0)
						return emit(k, b, (uint32_t)idx) ?
						       WALK_FAIL : WALK_DONE;
					if (b->kind != FB_JUMP && b->kind != FB_CALL &&
					    b->kind != FB_CALL_NEXT && b->kind != FB_FALL)
						return WALK_FAIL;
				} else {
					/* tracing is off at the next PSB, yet on
					 * here with no packet saying it stopped */
					return WALK_FAIL;
				}
				goto have_block;
			}
		}
		b = nb ? nb : get_block(k);
		if (!b)
			return WALK_FAIL;
have_block:
		nb = NULL;
		if (b->kind == FB_COND && k->ntnt > 1) {
			b = cond_run(k, b);
			if (!b)
				return WALK_FAIL;
		}
		if (emit(k, b, b->ninsn))
			return WALK_FAIL;
		/* a never-ending loop (libipt's path reports it) */
		if (b->kind == FB_FALL || b->kind == FB_JUMP ||
		    b->kind == FB_CALL || b->kind == FB_CALL_NEXT) {
			k->free_insns += b->ninsn;
			if (k->free_insns >= INTELPT_NELOOP_INSNS)
				return WALK_FAIL;
		} else {
			k->free_insns = 0;
		}
		switch (b->kind) {
		case FB_FALL:
			k->ip = b->target;
			nb = follow(k, &b->succ[1]);
			break;
		case FB_JUMP:
		case FB_CALL_NEXT:
		case FB_CALL:
			if (b->kind == FB_CALL) {
				rs_push(k, b->next_ip);
				k->rec = 0;
			}
			k->ip = b->target;
			rc = direct_disable(k, b->target);
			if (rc < 0 || rc == WALK_DONE)
				return rc;
			if (!rc)
				nb = follow(k, &b->succ[1]);
			break;
		case FB_COND:
			rc = tnt_bit(k);
			if (rc < 0)
				return WALK_FAIL;
			k->ip = rc ? b->target : b->next_ip;
			nb = follow(k, &b->succ[rc]);
			break;
		case FB_RET:
			k->rec = 0;
			if (!k->ntnt) {
				rc = peek_packet(k);
				if (rc <= 0)
					return WALK_FAIL;
			}
			if (k->ntnt || k->peek.type == ppt_tnt_8 ||
			    k->peek.type == ppt_tnt_64) {
				rc = tnt_bit(k);
				if (rc != 1 || rs_pop(k, &k->ip))
					return WALK_FAIL;
			} else if ((rc = tip_target(k, &k->ip))) {
				return rc;
			}
			/* succ[0]: the last target, like a branch predictor */
			if (k->enabled)
				nb = follow_indirect(k, &b->succ[0]);
			break;
		case FB_IND_CALL:
			rs_push(k, b->next_ip);
			k->rec = 0;
			/* fall through */
		case FB_IND_JUMP:
			if ((rc = tip_target(k, &k->ip)))
				return rc;
			k->rec_tip = 1;
			if (k->enabled)
				nb = follow_indirect(k, &b->succ[0]);
			break;
		case FB_FAR:
			k->rec = 0;
			rc = peek_packet(k);
			if (rc <= 0)
				return WALK_FAIL;
			if (k->peek.type == ppt_tip_pgd) {
				rc = branch_disable(k);
				if (rc)
					return rc;
			} else if (k->peek.type == ppt_tip) {
				if ((rc = tip_target(k, &k->ip)))
					return rc;
			} else {
				return WALK_FAIL;
			}
			break;
		default:
			return WALK_FAIL;
		}
	}
}

/* Reads PSB+ at the segment start: initial IP, mode, time. */
static int walk_start(struct walk *k)
{
	struct pt_packet p;
	int ok;

	if (pt_pkt_sync_set(k->pkt, 0) < 0)
		return WALK_FAIL;
	if (pt_pkt_next(k->pkt, &p, sizeof(p)) < 0 || p.type != ppt_psb)
		return WALK_FAIL;
	k->last_ip = 0;
	for (;;) {
		if (pt_pkt_next(k->pkt, &p, sizeof(p)) < 0)
			return WALK_FAIL;
		switch (p.type) {
		case ppt_psbend:
			return 0;
		case ppt_fup:
			k->ip = decompress(k, &p.payload.ip, &ok);
			if (ok != 1)
				return WALK_FAIL;
			k->enabled = 1;
			break;
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_exec) {
				k->mode = intelpt_map_mode(
					pt_get_exec_mode(&p.payload.mode.bits.exec));
				++*k->epoch;
			}
			else if (p.payload.mode.bits.tsx.intx ||
				 p.payload.mode.bits.tsx.abrt)
				return WALK_FAIL;
			break;
		case ppt_tsc:
			set_time(k, p.payload.tsc.tsc);
			break;
		case ppt_pad: case ppt_tma: case ppt_mtc: case ppt_cyc:
		case ppt_cbr: case ppt_pip: case ppt_vmcs: case ppt_mnt:
			break;
		default:
			return WALK_FAIL;
		}
	}
}

static int fast_segment(struct worker *w, const struct fqueue *fq,
			struct segment *seg)
{
	struct walk k;
	struct pt_config cfg;
	int rc;

	memset(&k, 0, sizeof(k));
	k.w = w;
	k.fb = w->fb;
	k.fq = fq;
	k.seg = seg;

	k.mode = PTD_MODE_64;
	k.time = IMGSTORE_TIME_UNKNOWN;
	k.pid = fq->q.pid;
	k.tid = fq->q.tid;
	k.ctx_dirty = 1;
	k.epoch = &w->epoch;
	++w->epoch;
	{
		size_t si = (size_t)(seg - fq->segs);

		/* the end of the segment's time: the next PSB's TSC; the last
		 * segment has no bound */
		k.time_hi = si + 1 < fq->nsegs && fq->segs[si + 1].has_tsc ?
			    intelpt_tsc_to_perf(&w->fb->p, fq->segs[si + 1].tsc) :
			    IMGSTORE_FOREVER - 1;
	}
	intelpt_config(&w->fb->p, &cfg, seg->data, seg->data + (seg->end - seg->start));
	k.pkt = pt_pkt_alloc_decoder(&cfg);
	if (!k.pkt)
		return WALK_FAIL;
	rc = walk_start(&k);
	if (!rc) {
		update_context(&k);
		rc = walk_segment(&k);
	}
	pt_pkt_free_decoder(k.pkt);
	return rc == WALK_DONE ? 0 : WALK_FAIL;
}

/* ------------------------------------------------------------------ */
/* Segmentation                                                        */

/* Drops the pages of [p, p+len) from our resident set: the trace is a
 * read-only file mapping, so they come back from the page cache if needed.
 * Keeps memory independent of the trace's size. */
static void drop_pages(const struct fqueue *fq, const uint8_t *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)4095;

	if (fq->q.file_backed && e > a)
		madvise((void *)a, e - a, MADV_DONTNEED);
}

static void queue_pieces(const struct fqueue *fq, const struct intelpt_piece **pc,
			 size_t *n, struct intelpt_piece *whole)
{
	if (fq->q.npieces) {
		*pc = fq->q.pieces;
		*n = fq->q.npieces;
		return;
	}
	whole->data = fq->q.data;
	whole->size = fq->q.size;
	whole->offset = 0;
	*pc = whole;
	*n = 1;
}

/* The bytes of [start, end): a pointer into one piece, or a copy when the
 * range straddles pieces.  Pieces are in offset order and segments are
 * asked for in order, so *first (the first piece that can still hold a
 * segment) only moves forward: linear in pieces + segments. */
static int seg_bytes(const struct intelpt_piece *pc, size_t n, size_t *first,
		     struct segment *s)
{
	uint64_t len = s->end - s->start, done = 0;

	while (*first < n && pc[*first].offset + pc[*first].size <= s->start)
		++*first;
	for (size_t i = *first; i < n && pc[i].offset <= s->start; i++)
		if (s->end <= pc[i].offset + pc[i].size) {
			s->data = pc[i].data + (s->start - pc[i].offset);
			return 0;
		}
	s->owned = malloc(len ? len : 1);
	if (!s->owned)
		return PTD_ERR_NOMEM;
	for (size_t i = *first; i < n && done < len; i++) {
		uint64_t a = pc[i].offset, e = pc[i].offset + pc[i].size;
		uint64_t from = s->start + done;

		if (from < a || from >= e)
			continue;
		uint64_t take = e - from < len - done ? e - from : len - done;

		memcpy(s->owned + done, pc[i].data + (from - a), take);
		done += take;
	}
	s->data = s->owned;
	return done == len ? 0 : PTD_ERR_CORRUPT;
}

/* Reads the PSB+ at offset off of the decoder's buffer (one decoder per
 * piece, moved from PSB to PSB): the FUP says where the flow is. */
static void read_psb_plus(struct pt_packet_decoder *pkt, uint64_t off,
			  struct segment *sg)
{
	struct pt_packet p;
	int ok;

	if (!pkt)
		return;
	if (pt_pkt_sync_set(pkt, off) >= 0 && pt_pkt_next(pkt, &p, sizeof(p)) >= 0) {
		while (pt_pkt_next(pkt, &p, sizeof(p)) >= 0 && p.type != ppt_psbend &&
		       p.type != ppt_psb) {
			if (p.type == ppt_fup) {
				struct walk tmp;

				memset(&tmp, 0, sizeof(tmp));
				sg->fup_ip = decompress(&tmp, &p.payload.ip, &ok);
				sg->has_fup = ok == 1;
			} else if (p.type == ppt_tsc) {
				sg->tsc = p.payload.tsc.tsc;
				sg->has_tsc = 1;
			}
		}
	}
}

/* One pass over the queue: PSB positions and their PSB+, dropping scanned
 * pages every few MiB so the scan's footprint stays small. */
/* The PSBs of pieces [from, to) of a queue: segment starts, in order. */
struct scan {
	struct fast_backend *fb;
	struct fqueue *fq;
	const struct intelpt_piece *pc;
	size_t from, to;
	struct segment *segs;
	size_t nsegs, cap;
	int rc;
	int threaded;
	pthread_t thr;
};

static void *scan_pieces(void *arg)
{
	static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82 };
	struct scan *sc = arg;
	const struct intelpt_piece *pc = sc->pc;
	const uint8_t *lo = pc[sc->from].data;

	for (size_t i = sc->from; i < sc->to; i++) {
		struct pt_packet_decoder *pkt;
		struct pt_config cfg;

		intelpt_config(&sc->fb->p, &cfg, pc[i].data, pc[i].data + pc[i].size);
		pkt = pc[i].size ? pt_pkt_alloc_decoder(&cfg) : NULL;
		for (uint64_t from = 0; from < pc[i].size;) {
			/* the PSB pattern, as libipt's sync finds it */
			const uint8_t *at = memmem(pc[i].data + from, pc[i].size - from,
						   psb, sizeof(psb));
			struct segment *sg;

			if (!at)
				break;
			from = (uint64_t)(at - pc[i].data) + sizeof(psb);
			if (util_grow((void **)&sc->segs, &sc->cap, sc->nsegs + 1, sizeof(*sg))) {
				sc->rc = PTD_ERR_NOMEM;
				break;
			}
			sg = &sc->segs[sc->nsegs++];
			memset(sg, 0, sizeof(*sg));
			sg->queue = (uint32_t)(sc->fq - sc->fb->queues);
			sg->start = pc[i].offset + (uint64_t)(at - pc[i].data);
			read_psb_plus(pkt, (uint64_t)(at - pc[i].data), sg);
			if (at - lo > (8 << 20)) {
				drop_pages(sc->fq, lo, (size_t)(at - lo));
				lo = at;
			}
		}
		if (pkt)
			pt_pkt_free_decoder(pkt);
		if (sc->rc)
			break;
		if (pc[i].data + pc[i].size - lo > (8 << 20) || i + 1 == sc->to) {
			drop_pages(sc->fq, lo, (size_t)(pc[i].data + pc[i].size - lo));
			lo = pc[i].data + pc[i].size;
		}
	}
	return NULL;
}

/* A queue of many pieces (perf.data: one per AUXTRACE record) is scanned
 * in parts on up to `threads` threads: the scan reads every byte of the
 * trace (0.2 s for 450 MB), serial time that -j N cannot otherwise win
 * back.  Parts are whole pieces (a PSB is only found inside one), at least
 * SCAN_PART bytes each; results are concatenated in order, so the segments
 * are those of a scan on one thread. */
#define SCAN_PART ((uint64_t)32 << 20)
#define SCAN_MAX 16

static int find_segments(struct fast_backend *fb, struct fqueue *fq,
			 unsigned int threads)
{
	struct intelpt_piece whole;
	const struct intelpt_piece *pc;
	struct scan parts[SCAN_MAX];
	size_t npc, nparts, i, j, n = 0;
	uint64_t total = 0, acc = 0;
	int rc = 0;

	queue_pieces(fq, &pc, &npc, &whole);
	for (i = 0; i < npc; i++)
		total += pc[i].size;
	nparts = threads < SCAN_MAX ? threads : SCAN_MAX;
	if (nparts > total / SCAN_PART)
		nparts = (size_t)(total / SCAN_PART);
	if (nparts > npc)
		nparts = npc;
	if (nparts < 1)
		nparts = 1;
	memset(parts, 0, sizeof(parts));
	/* part j ends at the first piece boundary past j+1 n-ths of the bytes */
	for (i = 0, j = 0; j < nparts; j++) {
		parts[j].fb = fb;
		parts[j].fq = fq;
		parts[j].pc = pc;
		parts[j].from = i;
		while (i < npc && (j + 1 == nparts || acc < total / nparts * (j + 1)))
			acc += pc[i++].size;
		parts[j].to = i;
	}
	for (j = 1; j < nparts; j++)
		parts[j].threaded = !pthread_create(&parts[j].thr, NULL, scan_pieces,
						    &parts[j]);
	scan_pieces(&parts[0]);
	for (j = 1; j < nparts; j++) {
		if (parts[j].threaded)
			pthread_join(parts[j].thr, NULL);
		else
			scan_pieces(&parts[j]);   /* no thread: here */
	}
	for (j = 0; j < nparts; j++) {
		n += parts[j].nsegs;
		if (parts[j].rc)
			rc = parts[j].rc;
	}
	if (!rc && nparts == 1) {
		fq->segs = parts[0].segs;   /* the common case: no copy */
		parts[0].segs = NULL;
	} else if (!rc && !(fq->segs = malloc((n ? n : 1) * sizeof(*fq->segs)))) {
		rc = PTD_ERR_NOMEM;
	} else if (!rc) {
		for (j = 0, n = 0; j < nparts; j++) {
			memcpy(fq->segs + n, parts[j].segs, parts[j].nsegs * sizeof(*fq->segs));
			n += parts[j].nsegs;
		}
	}
	for (j = 0; j < nparts; j++)
		free(parts[j].segs);
	if (rc)
		return rc;
	fq->nsegs = n;
	for (size_t k = 0, first = 0; k < fq->nsegs; k++) {
		struct segment *sg = &fq->segs[k];

		sg->end = k + 1 < fq->nsegs ? fq->segs[k + 1].start : fq->q.size;
		rc = seg_bytes(pc, npc, &first, sg);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Workers                                                             */

static void run_segment(struct worker *w, struct segment *seg)
{
	const struct fqueue *fq = &w->fb->queues[seg->queue];

	seg_reset_output(seg);
	seg->fallback = 0;
	if (!seg->recs) {
		struct fast_backend *fb = w->fb;

		if (fb->nthreads)
			pthread_mutex_lock(&fb->lock);
		if (fb->nspare) {
			fb->nspare--;
			seg->recs = fb->spare[fb->nspare];
			seg->rcap = fb->spare_cap[fb->nspare];
		}
		if (fb->nthreads)
			pthread_mutex_unlock(&fb->lock);
	}
	{
		/* dense traces give about 3 blocks per trace byte: size the
		 * array once rather than growing it by doubling, in powers of
		 * two so that recycled arrays fit the next segment (a realloc
		 * is an mremap: a TLB flush on every CPU of the process) */
		size_t want = 1024;

		while (!w->fb->count_only && want < (size_t)(seg->end - seg->start) * 3 + 64)
			want *= 2;
		if (seg->rcap < want) {
			struct ptd_block *r = realloc(seg->recs, want * sizeof(*r));

			if (r) {
				seg->recs = r;
				seg->rcap = want;
				util_populate(r, want * sizeof(*r));
			}
		}
	}
	if (fq->failed || fast_segment(w, fq, seg)) {
		/* the consumer switches this queue to libipt */
		seg_reset_output(seg);
		seg->fallback = 1;
		w->fallbacks++;
	}
	w->segments++;
#ifdef FASTPT_DEBUG
	{
		uint64_t ni = seg->ninsn;
		fprintf(stderr, "seg q%u [%#lx,%#lx) fup=%d %#lx fb=%d insns=%lu\n", seg->queue,
			(unsigned long)seg->start, (unsigned long)seg->end, seg->has_fup, (unsigned long)seg->fup_ip,
			seg->fallback, (unsigned long)ni);
	}
#endif
	/* keep the cache bounded: empty it when it grows large, freeing its
	 * blocks once the consumer is past every segment pointing at them
	 * (this one included) */
	if (w->retired && __atomic_load_n(&w->fb->out_seg, __ATOMIC_ACQUIRE) > w->retired_upto) {
		free_chunks(w->retired);
		w->retired = NULL;
	}
	if (w->cache.bytes > w->fb->cache_max && !w->retired) {
		w->retired = bcache_reset(&w->cache);
		w->retired_upto = seg->ord;
	}
}

/* Workers take batches of consecutive segments (about 16 KiB of trace):
 * one lock round trip per batch, not per segment.  Small batches and a
 * small window keep the record arrays in flight few (a TNT-dense segment
 * of 4 KiB fills ~200 KB of records: 64 KiB batches cost -j2 five times
 * the page faults of -j1 on a 50 M-instruction trace). */
#define BATCH_BYTES (16u << 10)
#define BATCH_SEGS 4
#define WINDOW_BATCHES 4           /* per thread */

/* Claims the next batch if the window allows (lock held): its first
 * segment in *first, the count returned (0: nothing to take). */
static size_t claim_batch(struct fast_backend *fb, size_t *first)
{
	size_t n = 0;
	uint64_t bytes = 0;

	if (fb->next_to_run >= fb->nsegs ||
	    fb->next_to_run >= __atomic_load_n(&fb->out_seg, __ATOMIC_ACQUIRE) + fb->window)
		return 0;
	*first = fb->next_to_run;
	while (*first + n < fb->nsegs && n < BATCH_SEGS && bytes < BATCH_BYTES) {
		struct segment *seg = fb->order[*first + n];

		bytes += seg->end - seg->start;
		seg->state = 1;
		n++;
	}
	fb->order[*first + n - 1]->batch_end = 1;
	fb->next_to_run = *first + n;
	return n;
}

/* Decodes a claimed batch (called without the lock; returns with it). */
static void run_batch(struct worker *w, size_t first, size_t n)
{
	struct fast_backend *fb = w->fb;

	for (size_t i = 0; i < n; i++)
		run_segment(w, fb->order[first + i]);
	pthread_mutex_lock(&fb->lock);
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&fb->order[first + i]->state, 2, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&fb->cond_done);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct fast_backend *fb = w->fb;

	pthread_mutex_lock(&fb->lock);
	for (;;) {
		size_t first = 0, n = 0;

		while (!fb->stop && !(n = claim_batch(fb, &first)))
			pthread_cond_wait(&fb->cond_work, &fb->lock);
		if (fb->stop)
			break;
		pthread_mutex_unlock(&fb->lock);
		run_batch(w, first, n);
	}
	pthread_mutex_unlock(&fb->lock);
	return NULL;
}

/* Makes sure segment i is decoded.  The consumer is one of the decoding
 * threads (-jN: N-1 pool threads and the caller): rather than sleep while
 * a pool thread finishes segment i, it decodes the next batch itself, so
 * N threads decode on N cores with no thread left to preempt them. */
static void wait_segment(struct fast_backend *fb, size_t i)
{
	struct segment *seg = fb->order[i];
	struct worker *self = &fb->workers[fb->nthreads];

	if (!fb->nthreads) {
		if (seg->state != 2) {
			run_segment(self, seg);
			seg->state = 2;
		}
		return;
	}
	if (__atomic_load_n(&seg->state, __ATOMIC_ACQUIRE) == 2)
		return;  /* decoded already: no lock */
	pthread_mutex_lock(&fb->lock);
	while (seg->state != 2) {
		size_t first = 0, n = claim_batch(fb, &first);

		if (n) {
			pthread_mutex_unlock(&fb->lock);
			run_batch(self, first, n);
			continue;
		}
		pthread_cond_wait(&fb->cond_done, &fb->lock);
	}
	pthread_mutex_unlock(&fb->lock);
}

static void advance_segment(struct fast_backend *fb)
{
	struct segment *seg = fb->order[fb->out_seg];
	int wake = fb->nthreads && seg->batch_end;

	fb->queues[seg->queue].emitted += seg->ninsn;
	/* decoded and handed out: trace bytes before it leave our resident
	 * set (pieces lie in file order, so this is a moving watermark) */
	if (seg->owned) {
		free(seg->owned);
		seg->owned = NULL;
	} else {
		struct fqueue *fq = &fb->queues[seg->queue];
		uintptr_t to = ((uintptr_t)seg->data + (seg->end - seg->start)) &
			       ~(uintptr_t)4095;

		if (fq->dropped && to > fq->dropped + (1u << 20)) {
			drop_pages(fq, (const uint8_t *)fq->dropped, to - fq->dropped);
			fq->dropped = to;
		} else if (!fq->dropped) {
			fq->dropped = (uintptr_t)seg->data & ~(uintptr_t)4095;
		}
	}
	if (fb->nthreads)
		pthread_mutex_lock(&fb->lock);
	if (seg->recs && fb->nspare < SPARE_MAX) {
		fb->spare[fb->nspare] = seg->recs;
		fb->spare_cap[fb->nspare++] = seg->rcap;
		seg->recs = NULL;
		seg->rcap = 0;
	}
	if (fb->nthreads)
		pthread_mutex_unlock(&fb->lock);
	seg_free_output(seg);
	__atomic_store_n(&fb->out_seg, fb->out_seg + 1, __ATOMIC_RELEASE);
	fb->out_pos = 0;
	fb->out_ev = 0;
	fb->out_cum = 0;
	fb->out_started = 0;
	if (wake) {
		/* a batch is consumed: room in the window for workers */
		pthread_mutex_lock(&fb->lock);
		pthread_cond_broadcast(&fb->cond_work);
		pthread_mutex_unlock(&fb->lock);
	}
}

/* Switches queue qi to libipt's decoder, run from the queue's start so
 * that its state is exactly the reference path's, skipping the
 * instructions (and the events before them) already handed out. */
static int ref_start(struct fast_backend *fb, size_t qi)
{
	struct fqueue *fq = &fb->queues[qi];
	int rc;

	fq->failed = 1;
	rc = intelpt_new(&fb->p, &fq->q, 1, fb->st, fb->sb, &fb->ref,
			 fb->errmsg, sizeof(fb->errmsg));
	if (rc)
		return rc;
	fb->ref_queue = qi;
	fb->ref_skip = fq->emitted;
	return 0;
}

/* Next event of the reference decoder; at its end, the queue's remaining
 * segments are dropped. */
static int ref_next(struct fast_backend *fb, struct ptd_event *ev)
{
	for (;;) {
		int rc = fb->ref->next(fb->ref, ev);

		if (rc == PTD_ERR_END) {
			fb->ref->destroy(fb->ref);
			fb->ref = NULL;
			while (fb->out_seg < fb->nsegs &&
			       fb->order[fb->out_seg]->queue == fb->ref_queue) {
				wait_segment(fb, fb->out_seg);
				advance_segment(fb);
			}
			return PTD_ERR_END;
		}
		if (rc < 0)
			return rc;
		ev->queue = (uint32_t)fb->ref_queue;
		if (fb->ref_skip) {
			if (ev->kind == PTD_EV_INSN)
				fb->ref_skip--;
			continue;
		}
		return 0;
	}
}

/* Starts the pool on the first call for blocks (before any decoding: the
 * caller's worker is the one after the pool's).  Threads that cannot be
 * started leave fewer: the caller decodes the rest. */
static void start_pool(struct fast_backend *fb)
{
	unsigned i;

	for (i = 0; i < fb->nthreads; i++)
		if (pthread_create(&fb->threads[i], NULL, worker_main, &fb->workers[i]))
			break;
	fb->nthreads = i;
	fb->pool_started = 1;
}

static int fast_next_blocks(struct backend *base, const struct ptd_block **blocks,
			    size_t *n, uint64_t *ninsn, uint64_t limit,
			    struct ptd_event *ev, int *have_ev)
{
	struct fast_backend *fb = (struct fast_backend *)base;

	if (!fb->pool_started)
		start_pool(fb);
	*n = 0;
	*ninsn = 0;
	*have_ev = 0;
	for (;;) {
		struct segment *seg;
		size_t end;

		if (fb->ref) {
			int rc = ref_next(fb, ev);

			if (rc == 0) {
				*have_ev = 1;
				return 0;
			}
			if (rc != PTD_ERR_END)
				return rc;
			continue;
		}
		if (fb->out_seg >= fb->nsegs)
			return PTD_ERR_END;
		seg = fb->order[fb->out_seg];
		if (!fb->out_started) {
			wait_segment(fb, fb->out_seg);
			fb->out_started = 1;
			if (seg->fallback) {
				int rc = ref_start(fb, seg->queue);

				if (rc)
					return rc;
				continue;
			}
		}
		if (fb->count_only) {
			/* counts between the events; the records are scratch */
			uint64_t cum = fb->out_ev < seg->nevents ?
				       seg->evpos[fb->out_ev].cum : seg->ninsn;

			if (cum > fb->out_cum) {
				*ninsn = cum - fb->out_cum;
				if (limit && *ninsn > limit)
					*ninsn = limit;  /* the caller stops here */
				fb->out_cum += *ninsn;
				return 0;
			}
			if (fb->out_ev < seg->nevents) {
				*ev = seg->events[fb->out_ev++];
				ev->queue = seg->queue;
				*have_ev = 1;
				return 0;
			}
			advance_segment(fb);
			continue;
		}
		if (fb->out_pos >= seg->nrecs) {
			/* the caller is done with this segment's records */
			advance_segment(fb);
			continue;
		}
		if (fb->out_ev < seg->nevents && seg->evpos[fb->out_ev].rec == fb->out_pos) {
			*ev = seg->events[fb->out_ev++];
			ev->queue = seg->queue;
			fb->out_pos++;
			*have_ev = 1;
			return 0;
		}
		/* the run up to the next event (or the end) */
		if (fb->out_ev < seg->nevents) {
			end = seg->evpos[fb->out_ev].rec;
			*ninsn = seg->evpos[fb->out_ev].cum - fb->out_cum;
		} else {
			end = seg->nrecs;
			*ninsn = seg->ninsn - fb->out_cum;
		}
		if (limit && *ninsn > limit) {
			/* the caller stops after limit instructions: the run
			 * ends inside it, the last block cut short (the
			 * records are ours, and this segment is not read
			 * again) */
			uint64_t got = 0;
			size_t k = fb->out_pos;

			while (got + seg->recs[k].ninsn < limit)
				got += seg->recs[k++].ninsn;
			seg->recs[k].ninsn = (uint32_t)(limit - got);
			end = k + 1;
			*ninsn = limit;
		}
		fb->out_cum += *ninsn;
		*blocks = &seg->recs[fb->out_pos];
		*n = end - fb->out_pos;
		fb->out_pos = end;
		return 0;
	}
}

/* Context of a block handed out by the last fast_next_blocks call: it
 * belongs to the consumer's current segment. */
static const struct fctx *block_ctx(const struct fast_backend *fb,
				    const struct ptd_block *blk,
				    const struct segment **segp)
{
	const struct segment *seg;

	if (fb->out_seg >= fb->nsegs)
		return NULL;
	seg = fb->order[fb->out_seg];
	if (blk < seg->recs || blk >= seg->recs + seg->nrecs || blk->ctx >= seg->nctx)
		return NULL;
	*segp = seg;
	return &seg->ctxs[blk->ctx];
}

static int fast_block_info(const struct backend *base, const struct ptd_block *blk,
			   struct ptd_block_info *info)
{
	const struct fast_backend *fb = (const struct fast_backend *)base;
	const struct fblock *b = blk->priv;
	const struct segment *seg;
	const struct fctx *c = block_ctx(fb, blk, &seg);

	if (!b || !c)
		return PTD_ERR_INVAL;
	memset(info, 0, sizeof(*info));
	info->ip = b->ip;
	info->time = c->time;
	info->pid = c->pid;
	info->tid = c->tid;
	info->cpu = fb->queues[seg->queue].q.cpu;
	info->queue = seg->queue;
	info->mode = b->mode;
	info->last_iclass = blk->ninsn == b->ninsn ? b->last_iclass : PTD_IC_OTHER;
	info->image = b->image;
	return 0;
}

/* Instruction i of block b with its block's info: one event. */
static void insn_event(const struct fblock *b, const struct ptd_block_info *info,
		       uint32_t i, struct ptd_event *ev)
{
	uint32_t end;

	memset(ev, 0, sizeof(*ev));
	end = i + 1 < b->ninsn ? b->off[i + 1] : b->len;
	ev->kind = PTD_EV_INSN;
	ev->ip = b->ip + b->off[i];
	ev->size = (uint8_t)(end - b->off[i]);
	memcpy(ev->raw, b->bytes + b->off[i], ev->size);
	ev->iclass = i + 1 == b->ninsn ? b->last_iclass : PTD_IC_OTHER;
	ev->mode = b->mode;
	ev->image = b->image;
	ev->cpu = info->cpu;
	ev->pid = info->pid;
	ev->tid = info->tid;
	ev->queue = info->queue;
	if (info->time) {
		ev->time = info->time;
		ev->flags |= PTD_EVF_TIME_VALID;
	}
}

static int fast_block_insn(const struct backend *base, const struct ptd_block *blk,
			   uint32_t i, struct ptd_event *ev)
{
	const struct fblock *b = blk->priv;
	struct ptd_block_info info;

	if (!b || i >= blk->ninsn || i >= b->ninsn ||
	    fast_block_info(base, blk, &info))
		return PTD_ERR_INVAL;
	insn_event(b, &info, i, ev);
	return 0;
}

/* The one-event interface on top of blocks.  A consumer taking every
 * instruction (text, JSON) is many times slower than the walk, so pool
 * threads would only run ahead, and their records would reach it from
 * another core's cache (a text dump at -j2 took up to 1.7x as long as at
 * -j1): it decodes alone, segment by segment, as at -j1. */
static int fast_next(struct backend *base, struct ptd_event *ev)
{
	struct fast_backend *fb = (struct fast_backend *)base;

	if (!fb->pool_started) {
		fb->nthreads = 0;
		fb->pool_started = 1;
	}

	for (;;) {
		int have_ev, rc;

		while (fb->run_i < fb->run_n) {
			const struct ptd_block *blk = &fb->run[fb->run_i];

			if (fb->insn_i < blk->ninsn) {
				const struct fblock *b = blk->priv;

				/* the block's info once, not per instruction */
				if (!fb->insn_i && (!b || blk->ninsn > b->ninsn ||
						    fast_block_info(base, blk, &fb->run_info)))
					return PTD_ERR_INVAL;
				insn_event(b, &fb->run_info, fb->insn_i++, ev);
				return 0;
			}
			fb->run_i++;
			fb->insn_i = 0;
		}
		uint64_t cnt;

		rc = fast_next_blocks(base, &fb->run, &fb->run_n, &cnt, 0, ev, &have_ev);
		fb->run_i = 0;
		fb->insn_i = 0;
		if (rc < 0)
			return rc;
		if (have_ev)
			return 0;
	}
}

/* The text of the instruction fast_next returned last, when its block
 * kept it.  The first call asks the builders to keep text from now on. */
static int fast_insn_text(struct backend *base, const struct ptd_event *ev,
			  char *buf, size_t len)
{
	struct fast_backend *fb = (struct fast_backend *)base;
	const struct fblock *b;
	const char *t;
	size_t n;

	__atomic_store_n(&fb->keep_text, 1, __ATOMIC_RELAXED);
	if (ev->kind != PTD_EV_INSN || !len || fb->run_i >= fb->run_n || !fb->insn_i)
		return PTD_ERR_UNSUPPORTED;
	b = fb->run[fb->run_i].priv;
	if (!b || !b->text || fb->insn_i > b->ninsn ||
	    b->ip + b->off[fb->insn_i - 1] != ev->ip || b->image != ev->image)
		return PTD_ERR_UNSUPPORTED;
	t = b->text + b->toff[fb->insn_i - 1];
	n = strlen(t);
	if (n >= len)
		n = len - 1;
	memcpy(buf, t, n);
	buf[n] = '\0';
	return (int)n;
}

static const char *fast_errmsg(struct backend *base)
{
	return ((struct fast_backend *)base)->errmsg;
}

static void fast_destroy(struct backend *base)
{
	struct fast_backend *fb = (struct fast_backend *)base;

	if (!fb)
		return;
	if (fb->ref)
		fb->ref->destroy(fb->ref);
	if (fb->threads && fb->pool_started) {
		pthread_mutex_lock(&fb->lock);
		fb->stop = 1;
		pthread_cond_broadcast(&fb->cond_work);
		pthread_mutex_unlock(&fb->lock);
		for (unsigned i = 0; i < fb->nthreads; i++)
			pthread_join(fb->threads[i], NULL);
	}
	free(fb->threads);
	for (size_t i = 0; i < fb->nqueues; i++) {
		for (size_t j = 0; j < fb->queues[i].nsegs; j++) {
			seg_free_output(&fb->queues[i].segs[j]);
			free(fb->queues[i].segs[j].owned);
		}
		free(fb->queues[i].segs);
	}
	if (fb->workers) {
		size_t nw = fb->nthreads + 1;

		for (size_t i = 0; i < nw; i++) {
			bcache_free(&fb->workers[i].cache);
			free_chunks(fb->workers[i].retired);
			free(fb->workers[i].tbuf);
			oracle_free(&fb->workers[i].orc);
		}
		free(fb->workers);
	}
	pthread_mutex_destroy(&fb->lock);
	pthread_cond_destroy(&fb->cond_done);
	pthread_cond_destroy(&fb->cond_work);
	for (int i = 0; i < fb->nspare; i++)
		free(fb->spare[i]);
	free(fb->order);
	free(fb->queues);
	free(fb);
}

void fastpt_get_stats(struct backend *base, struct fastpt_stats *st)
{
	struct fast_backend *fb = (struct fast_backend *)base;
	size_t nw = fb->nthreads + 1;

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < nw; i++) {
		st->segments += fb->workers[i].segments;
		st->fallback_segments += fb->workers[i].fallbacks;
		st->blocks_built += fb->workers[i].built;
		st->block_hits += fb->workers[i].hits;
		st->memo_hits += fb->workers[i].memo_hits;
	}
}

int fastpt_new(const struct intelpt_params *p,
	       const struct intelpt_queue *queues, size_t nqueues,
	       struct imgstore *st, const struct sideband *sb,
	       unsigned int nthreads, size_t cache_max, unsigned int flags,
	       struct backend **out, char *err, size_t errlen)
{
	struct fast_backend *fb;
	size_t total = 0, k = 0, nw;
	int rc;

	*out = NULL;
	fb = calloc(1, sizeof(*fb));
	if (!fb)
		return PTD_ERR_NOMEM;
	pthread_mutex_init(&fb->lock, NULL);
	pthread_cond_init(&fb->cond_done, NULL);
	pthread_cond_init(&fb->cond_work, NULL);
	fb->base.next = fast_next;
	fb->base.next_blocks = fast_next_blocks;
	fb->base.insn_text = fast_insn_text;
	fb->base.block_info = fast_block_info;
	fb->base.block_insn = fast_block_insn;
	fb->base.errmsg = fast_errmsg;
	fb->base.destroy = fast_destroy;
	fb->p = *p;
	fb->cache_max = cache_max ? cache_max : CACHE_MAX;
	fb->count_only = !!(flags & FASTPT_COUNT_ONLY);
	fb->keep_text = !!(flags & FASTPT_KEEP_TEXT);
	fb->st = st;
	fb->sb = sb;
	fb->queues = calloc(nqueues ? nqueues : 1, sizeof(*fb->queues));
	if (!fb->queues) {
		fast_destroy(&fb->base);
		return PTD_ERR_NOMEM;
	}
	fb->nqueues = nqueues;
	if (nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (unsigned)n : 1;
	}
	for (size_t i = 0; i < nqueues; i++) {
		fb->queues[i].q = queues[i];
		rc = find_segments(fb, &fb->queues[i], nthreads);
		if (rc) {
			fast_destroy(&fb->base);
			return rc;
		}
		total += fb->queues[i].nsegs;
	}
	fb->order = calloc(total ? total : 1, sizeof(*fb->order));
	if (!fb->order) {
		fast_destroy(&fb->base);
		return PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < nqueues; i++)
		for (size_t j = 0; j < fb->queues[i].nsegs; j++) {
			fb->queues[i].segs[j].ord = k;
			fb->order[k++] = &fb->queues[i].segs[j];
		}
	fb->nsegs = total;

	/* the caller decodes too: N threads are N-1 pool threads and it */
	fb->nthreads = nthreads - 1;
	/* segments decoded ahead of the consumer: a few batches a thread */
	fb->window = WINDOW_BATCHES * BATCH_SEGS * nthreads;
	nw = fb->nthreads + 1;  /* the last worker is the caller's */
	fb->workers = calloc(nw, sizeof(*fb->workers));
	if (!fb->workers) {
		fast_destroy(&fb->base);
		return PTD_ERR_NOMEM;
	}
	util_populate(fb->workers, nw * sizeof(*fb->workers));  /* block tables */
	for (size_t i = 0; i < nw; i++) {
		fb->workers[i].fb = fb;
		fb->workers[i].st = st;
	}
	if (fb->nthreads) {
		fb->threads = calloc(fb->nthreads, sizeof(*fb->threads));
		if (!fb->threads) {
			fast_destroy(&fb->base);
			return PTD_ERR_NOMEM;
		}
	}
	*out = &fb->base;
	return 0;
}
