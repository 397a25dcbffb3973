/* SPDX-License-Identifier: MIT */
/* trace_index (stage: api/): building the index, ptd_index_*. */
#include "trace_index.h"

#include "fastpt_seek.h"
#include "imgstore.h"
#include "input.h"
#include "perfdata.h"
#include "session.h"
#include "sideband.h"
#include "util.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Queues remembered for placing stops that name no thread. */
#define TIX_MAXQ 4096

static int grow(void *arr, size_t *cap, size_t n, size_t esz)
{
	return util_grow((void **)arr, cap, n, esz);
}

static struct tix_thread *thread_of(struct ptd_index *ix, int32_t tid,
				    int32_t pid)
{
	size_t i;

	for (i = ix->nth; i-- > 0;)
		if (ix->th[i].tid == tid)
			return &ix->th[i];
	if (grow(&ix->th, &ix->thcap, ix->nth + 1, sizeof(*ix->th)))
		return NULL;
	memset(&ix->th[ix->nth], 0, sizeof(*ix->th));
	ix->th[ix->nth].tid = tid;
	ix->th[ix->nth].pid = pid;
	ix->th[ix->nth].code = ix->s->in ? ix->s->in->st : NULL;
	return &ix->th[ix->nth++];
}

/* A new run; at every TIX_PIECE_RUNS-th the stack is kept. */
static struct tix_run *new_run(struct tix_thread *t)
{
	struct tix_run *r;

	if (t->nruns % TIX_PIECE_RUNS == 0) {
		struct tix_piece *p;

		if (grow(&t->pieces, &t->piececap, t->npieces + 1, sizeof(*p)) ||
		    grow(&t->pool, &t->poolcap, t->npool + t->nstack + 1,
			 sizeof(size_t)))
			return NULL;
		p = &t->pieces[t->npieces++];
		p->frames = t->npool;
		p->nframes = t->nstack;
		p->under = t->under;
		if (t->nstack)
			memcpy(&t->pool[t->npool], t->stack,
			       t->nstack * sizeof(size_t));
		t->npool += t->nstack;
	}
	if (grow(&t->runs, &t->runcap, t->nruns + 1, sizeof(*r)))
		return NULL;
	r = &t->runs[t->nruns++];
	memset(r, 0, sizeof(*r));
	r->insn0 = t->ninsn;
	r->pos0 = t->npos;
	r->depth = t->depth;
	return r;
}

static int is_call(unsigned int ic)
{
	return ic == PTD_IC_CALL || ic == PTD_IC_IND_CALL;
}

/* A call to the very next instruction (call next; pop: code reading its
 * own address) enters no function and makes no frame, as in perf's
 * thread stacks. */
static int zero_call(const struct tix_run *r, uint8_t last, uint64_t next_ip)
{
	return r->ip + r->last_off + TIX_LEN(last) == next_ip;
}

int tix_is_sigreturn(struct imgstore *st, int32_t pid, uint64_t ip,
		     uint64_t time)
{
	static const uint8_t tramp[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0,
					  0x0f, 0x05 };
	uint8_t b[sizeof(tramp)];

	return st && ip >= 7 &&
	       imgstore_read_r(st, pid, ip - 7, time ? time : IMGSTORE_TIME_UNKNOWN,
			       b, sizeof(b), NULL, NULL, 0) == (int)sizeof(b) &&
	       !memcmp(b, tramp, sizeof(b));
}

static int is_x86(unsigned int mode)
{
	return mode == PTD_MODE_16 || mode == PTD_MODE_32 || mode == PTD_MODE_64;
}

/* The class of a run's last instruction once the next one is known:
 * signal delivery and return as TIX_IC_SIG*. */
static unsigned int final_class(struct tix_thread *t, struct tix_run *r,
				int have_next, uint64_t next_ip)
{
	uint8_t *last = &t->insn[r->insn0 + r->ninsn - 1];
	unsigned int ic = TIX_ICLASS(*last), to = ic;
	uint64_t ip = r->ip + r->last_off;

	if ((ic != PTD_IC_FAR_CALL && ic != PTD_IC_OTHER) || !is_x86(r->mode))
		return ic;
	if (ic == PTD_IC_FAR_CALL && tix_is_sigreturn(t->code, t->pid, ip, r->time))
		to = TIX_IC_SIGRETURN;
	else if (have_next && next_ip != ip + TIX_LEN(*last))
		to = ic == PTD_IC_FAR_CALL ? TIX_IC_SIGENTER_FAR : TIX_IC_SIGENTER;
	*last = (uint8_t)((*last & 0xf) | to << 4);
	return to;
}

/* The call/return of a run's last instruction moves the depth; next_ip
 * is the next instruction's (have_next: one follows, not a stop). */
static int end_run(struct tix_thread *t, int have_next, uint64_t next_ip)
{
	struct tix_run *r;
	unsigned int ic;
	uint8_t last;

	if (!t->nruns)
		return 0;
	r = &t->runs[t->nruns - 1];
	if (!r->ninsn)
		return 0;
	ic = final_class(t, r, have_next, next_ip);
	last = t->insn[r->insn0 + r->ninsn - 1];
	if (tix_is_sigenter(ic)) {
		/* the interrupted function's frame and the trampoline's */
		if (grow(&t->stack, &t->stackcap, t->nstack + 2, sizeof(size_t)))
			return -1;
		t->stack[t->nstack++] = t->nruns - 1;
		t->stack[t->nstack++] = t->nruns - 1;
		t->depth += 2;
	} else if (is_call(ic) && !(have_next && zero_call(r, last, next_ip))) {
		if (grow(&t->stack, &t->stackcap, t->nstack + 1, sizeof(size_t)))
			return -1;
		t->stack[t->nstack++] = t->nruns - 1;
		t->depth++;
	} else if (ic == PTD_IC_RETURN || ic == TIX_IC_SIGRETURN) {
		if (t->nstack)
			t->nstack--;
		else
			t->under++;
		t->depth--;
	}
	return 0;
}

static int add_insn(struct tix_thread *t, const struct ptd_event *ev)
{
	struct tix_run *r = t->nruns ? &t->runs[t->nruns - 1] : NULL;
	uint64_t time = ev->flags & PTD_EVF_TIME_VALID ? ev->time : 0;
	int extend = 0;

	if (r && r->ninsn && r->ninsn < UINT32_MAX) {
		uint8_t last = t->insn[r->insn0 + r->ninsn - 1];
		unsigned int ic = TIX_ICLASS(last);

		extend = !is_call(ic) && ic != PTD_IC_RETURN &&
			 ev->ip == r->ip + r->last_off + TIX_LEN(last) &&
			 time == r->time && ev->cpu == r->cpu &&
			 ev->image == r->image && ev->mode == r->mode &&
			 ev->queue == r->queue;
	}
	if (t->ninsn >= t->insncap &&
	    grow(&t->insn, &t->insncap, t->ninsn + 1, 1))
		return -1;
	if (extend) {
		r->last_off = (uint32_t)(ev->ip - r->ip);
	} else {
		if (end_run(t, 1, ev->ip))
			return -1;
		r = new_run(t);
		if (!r)
			return -1;
		r->ip = ev->ip;
		r->time = time;
		r->cpu = ev->cpu;
		r->image = ev->image;
		r->mode = ev->mode;
		r->queue = (uint16_t)ev->queue;
	}
	t->insn[t->ninsn++] = (uint8_t)((ev->size & 0xf) |
					(ev->iclass & 0xf) << 4);
	r->ninsn++;
	t->npos++;
	return 0;
}

static int add_stop(struct tix_thread *t, const struct ptd_event *ev)
{
	struct ptd_event *e;
	struct tix_run *r;

	if (end_run(t, 0, 0) ||
	    grow(&t->stops, &t->stopcap, t->nstops + 1, sizeof(*e)))
		return -1;
	e = &t->stops[t->nstops];
	*e = *ev;
	e->msg = NULL;
	if (ev->msg) {
		e->msg = strdup(ev->msg);
		if (!e->msg)
			return -1;
	}
	r = new_run(t);
	if (!r) {
		free((char *)e->msg);
		return -1;
	}
	t->nstops++;
	r->ip = ev->ip;
	r->time = ev->flags & PTD_EVF_TIME_VALID ? ev->time : 0;
	r->cpu = ev->cpu;
	r->queue = (uint16_t)ev->queue;
	r->stop = (uint32_t)(t->nstops - 1);
	t->npos++;
	return 0;
}

static void thread_free(struct tix_thread *t)
{
	size_t j;

	for (j = 0; j < t->nstops; j++)
		free((char *)t->stops[j].msg);
	free(t->stops);
	free(t->runs);
	free(t->insn);
	free(t->pieces);
	free(t->pool);
	free(t->stack);
	memset(t, 0, sizeof(*t));
}

void tix_view_free(struct tix_thread *v)
{
	thread_free(v);
}

static void index_free(struct ptd_index *ix)
{
	size_t i;

	if (!ix)
		return;
	for (i = 0; i < ix->nth; i++)
		thread_free(&ix->th[i]);
	for (i = 0; i < ix->nti; i++) {
		free(ix->ti[i].ps);
		free(ix->ti[i].fr);
	}
	for (i = 0; i < ix->nmsgs; i++)
		free(ix->msgs[i]);
	free(ix->msgs);
	if (ix->msg_lock) {
		pthread_mutex_destroy(ix->msg_lock);
		free(ix->msg_lock);
	}
	free(ix->ti);
	free(ix->codes);
	free(ix->th);
	free(ix);
}

void ptd_index_free(struct ptd_index *ix)
{
	index_free(ix);
}

static int is_stop_kind(int kind)
{
	return kind == PTD_EV_ERROR || kind == PTD_EV_GAP ||
	       kind == PTD_EV_OVERFLOW;
}

/* ---- pieces of PSB segments, summarized by the workers ---- */

/* One thread's part of one segment.  The walk gives contexts' times
 * (FASTPT_SINK_CTX_TIME): time0 is exact (a part starts with a context
 * or a stop), time_last and a frame's time are its context's start (the
 * same image as the instruction's time); last_times makes each thread's
 * last time exact. */
struct part {
	int32_t tid, pid;
	uint64_t first_ip, time0, time_last;
	uint64_t minip, maxend;
	uint32_t ninsn, npos;
	int32_t depth, min_delta;
	uint32_t ret_below;
	uint8_t first_stop, pend;  /* pend: PEND_CALL or PEND_ASYNC */
	struct tix_frame pending;  /* a call ending the part: a frame unless
				    * the next instruction follows it; an
				    * instruction that may be interrupted
				    * by a signal: two frames if the next
				    * one does not follow it */
	struct tix_frame *fr;      /* calls alive, pushed in the part */
	size_t nfr, frcap;
	struct tix_code code;
};

struct segres {
	struct part *p;
	size_t n, cap;
	int fail;                  /* the fast path cannot index it */
	int done;                  /* summarized (atomic) */
};

static struct part *part_of(struct segres *r, int32_t tid, int32_t pid)
{
	size_t i;

	for (i = r->n; i-- > 0;)
		if (r->p[i].tid == tid)
			return &r->p[i];
	if (grow(&r->p, &r->cap, r->n + 1, sizeof(*r->p)))
		return NULL;
	memset(&r->p[r->n], 0, sizeof(r->p[0]));
	r->p[r->n].tid = tid;
	r->p[r->n].pid = pid;
	r->p[r->n].minip = UINT64_MAX;
	return &r->p[r->n++];
}

static void set_code(struct tix_code *c, uint64_t line)
{
	unsigned int b = (unsigned int)((line * 0x9e3779b97f4a7c15ull) >> 55);

	c->w[b >> 6] |= 1ull << (b & 63);
}

static int code_has(const struct tix_code *c, uint64_t line)
{
	unsigned int b = (unsigned int)((line * 0x9e3779b97f4a7c15ull) >> 55);

	return (int)((c->w[b >> 6] >> (b & 63)) & 1);
}

enum { PEND_CALL = 1, PEND_ASYNC = 2 };

/* The kind of the k-th last frame a pending entry makes (k of 2: a
 * signal delivery's, the interrupted function's first). */
static uint32_t sig_kind(int k)
{
	return k == 2 ? TIX_FRAME_SIG_INTERRUPTED :
	       k == 1 ? TIX_FRAME_SIG_TRAMP : TIX_FRAME_CALL;
}

/* How many frames a pending call or signal delivery makes, given the
 * next position (next_ip, have_next: an instruction, not a stop). */
static int pend_frames(int pend, const struct tix_frame *x, int have_next,
		       uint64_t next_ip)
{
	int follows = have_next && next_ip == x->call_ip + x->size;

	if (pend == PEND_ASYNC)
		return have_next && !follows ? 2 : 0;
	return pend && !follows;
}

/* The pending call of p becomes a frame unless the next instruction
 * (next_ip, have_next) is the one after it; a pending interrupted
 * instruction two when the next is elsewhere. */
static int resolve(struct part *p, int have_next, uint64_t next_ip)
{
	int k = pend_frames(p->pend, &p->pending, have_next, next_ip);
	int async = p->pend == PEND_ASYNC;

	if (!p->pend)
		return 0;
	p->pend = 0;
	if (grow(&p->fr, &p->frcap, p->nfr + 2, sizeof(*p->fr)))
		return -1;
	for (; k > 0; k--) {
		p->fr[p->nfr] = p->pending;
		p->fr[p->nfr++].kind = async ? sig_kind(k) : TIX_FRAME_CALL;
		p->depth++;
	}
	return 0;
}

static void part_time(struct part *p, uint64_t t)
{
	if (!p->npos)
		p->time0 = t;
	p->time_last = t;
}

/* The part's bounds and code get the code [ip, end). */
static __attribute__((noinline)) void add_code(struct part *p, uint64_t ip,
					      uint64_t end)
{
	uint64_t l;

	if (ip < p->minip)
		p->minip = ip;
	if (end > p->maxend)
		p->maxend = end;
	for (l = ip >> 6; l <= (end - 1) >> 6; l++)
		set_code(&p->code, l);
}

/* Summarizing one segment: what add_insn/add_stop would see of its
 * instructions and stops, thread by thread, a block at a time.  A block
 * adds its code to a part once: its mark (fastpt_blk_mark) is the part's
 * generation (a multiple of MARK_GEN; each switch of part starts a new
 * one) plus what its last instruction does to the stack (MARK_*), once
 * it has; a block not yet marked in the part has other high bits. */
struct sumstate {
	struct fastpt_reader *rd;
	struct segres *res;
	struct imgstore *st;
	struct part *p;
	int32_t last, ctid, cpid;
	uint32_t cctx, gen;
	uint64_t ctime;
};

enum {
	MARK_NONE,     /* leaves the stack as it is */
	MARK_CALL,
	MARK_RET,
	MARK_OTHER,    /* may be interrupted by a signal, or a far call */
	MARK_GEN       /* the generations' step */
};
/* Never in a mark: sum_blocks's "a call is pending" in what it compares
 * marks with. */
#define MARK_PEND (1u << 31)

/* A reader's generations stop short of wrapping (a block's old mark
 * would match again): past this, run_worker takes a new reader, whose
 * blocks are unmarked.  A segment never has the 2^26 switches of part
 * left below MARK_PEND. */
#define GEN_LIMIT 0x70000000u

static void sum_start(struct sumstate *ss, struct segres *res)
{
	ss->res = res;
	ss->p = NULL;
	ss->last = ss->ctid = ss->cpid = -1;
	ss->cctx = UINT32_MAX;
	ss->ctime = 0;
}

/* What a block's last instruction does to the stack, by its class: a
 * call (PEND_CALL), one that may be interrupted by a signal (PEND_ASYNC),
 * a return (-1), none of these (0); EFF_FAR: a far call, which is a
 * return when it is a signal trampoline's rt_sigreturn. */
#define EFF_FAR 3
static const int8_t eff_of[16] = {
	[PTD_IC_OTHER] = PEND_ASYNC,
	[PTD_IC_CALL] = PEND_CALL,
	[PTD_IC_IND_CALL] = PEND_CALL,
	[PTD_IC_RETURN] = -1,
	[PTD_IC_FAR_CALL] = EFF_FAR,
};

/* The mark's low bits of a block whose last instruction is of class ic. */
static const uint8_t mark_of[16] = {
	[PTD_IC_OTHER] = MARK_OTHER,
	[PTD_IC_CALL] = MARK_CALL,
	[PTD_IC_IND_CALL] = MARK_CALL,
	[PTD_IC_RETURN] = MARK_RET,
	[PTD_IC_FAR_CALL] = MARK_OTHER,
};

static int stack_effect(const struct sumstate *ss, const struct part *p,
			unsigned int ic, uint64_t last_ip)
{
	int eff = eff_of[ic & 15];

	if (eff == EFF_FAR)
		eff = tix_is_sigreturn(ss->st, p->pid, last_ip, ss->ctime) ?
		      -1 : PEND_ASYNC;
	return eff;
}

/* Out of sum_blocks's loop, not even its arguments' loads (GCC's clones
 * pass the fields they read, which the loop then loads every time). */
#if defined(__GNUC__) && !defined(__clang__)
#define NOT_IN_LOOP __attribute__((noinline, noclone, cold))
#else
#define NOT_IN_LOOP __attribute__((noinline, cold))
#endif

/* Block record rb is not a whole block of the context before in part
 * p's run of blocks: 1 when the run ends there (a part of a block,
 * another thread's context), 0 when its context is p's (ss has it and
 * its time). */
static NOT_IN_LOOP int ctx_enter(struct sumstate *ss, struct part *p,
				 const struct ptd_block *rb)
{
	uint32_t ctx = rb->ctx;
	uint64_t t;
	int32_t pid, tid;

	if (rb->ninsn != fastpt_blk_ninsn(rb->priv))
		return 1;
	fastpt_reader_ctx(ss->rd, ctx, &t, &pid, &tid);
	if (tid >= 0 && tid != p->tid)
		return 1;
	ss->cctx = ctx;
	ss->ctime = t;
	ss->ctid = tid;
	ss->cpid = pid;
	if (p->pid < 0)
		p->pid = pid;
	return 0;
}

/* Records recs[i..n) of part p that are whole blocks, from record i on
 * while they are (the bulk of a trace): the part's counts, depths and
 * frames in locals, a pending call written straight into the frame slot
 * above the top (room is kept for two: a signal delivery's) and pushed
 * by moving the top.  A block marked in the part that leaves the stack
 * as it is costs one look at its mark.  A change of context to another
 * thread, a stop or a part of a block ends it.  Returns the index of the
 * first record it leaves to summarize's general case, or (size_t)-1 out
 * of memory.  (Not inlined: the hot loop gets the registers to itself.) */
static __attribute__((noinline)) size_t sum_blocks(struct sumstate *ss,
	struct part *p, const struct ptd_block *recs, size_t i, size_t n)
{
	const uint32_t gen = ss->gen;
	const struct ptd_block *const r0 = recs + i, *const rend = recs + n;
	const struct ptd_block *rb = r0;
	uint64_t ckey = (uint64_t)ss->cctx << 32, ctime = ss->ctime;
	struct tix_frame *base, *top, *lim;
	const uint64_t npos0 = p->npos;
	uint64_t pos = npos0;
	uint32_t ret_below = p->ret_below, cmpgen = gen;
	int nomem = 0;

	if (grow(&p->fr, &p->frcap, p->nfr + 2, sizeof(*p->fr)))
		return (size_t)-1;
	base = p->fr;
	top = base + p->nfr;
	lim = base + p->frcap;
	/* a pending call is the frame slot above the top, its kind
	 * TIX_FRAME_SIG_INTERRUPTED while it is a PEND_ASYNC one */
	if (p->pend) {
		*top = p->pending;
		top->kind = p->pend == PEND_ASYNC ? TIX_FRAME_SIG_INTERRUPTED :
			    TIX_FRAME_CALL;
		cmpgen = gen | MARK_PEND;
	}
	if (p->pid < 0 && rb->ninsn == fastpt_blk_ninsn(rb->priv))
		p->pid = ss->cpid;  /* the first record is the part's */
	for (; rb < rend; rb++) {
		const void *b = rb->priv;
		uint32_t *mark;
		uint32_t m, bn;

		if (!b)
			break;
		/* a whole block of the context before: one comparison */
		bn = fastpt_blk_ninsn(b);
		if (__builtin_expect(((uint64_t)rb->ctx << 32 | rb->ninsn) !=
				     (ckey | bn), 0)) {
			if (ctx_enter(ss, p, rb))
				break;
			ckey = (uint64_t)ss->cctx << 32;
			ctime = ss->ctime;
		}
		pos += rb->ninsn;
		mark = fastpt_blk_mark(b);
		m = *mark ^ cmpgen;
		if (__builtin_expect(!m, 1))
			continue;
		if (m & MARK_PEND) {
			m &= ~MARK_PEND;
			cmpgen = gen;
			if (fastpt_blk_ip(b) != top->call_ip + top->size) {
				if (top->kind == TIX_FRAME_SIG_INTERRUPTED) {
					top[1] = top[0];
					top[1].kind = TIX_FRAME_SIG_TRAMP;
					top++;
				}
				top++;
				if (top + 2 > lim) {
					size_t k = (size_t)(top - base);

					if (grow(&p->fr, &p->frcap, k + 2, sizeof(*top))) {
						top = base + k;
						pos -= bn;
						nomem = 1;
						break;
					}
					base = p->fr;
					top = base + k;
					lim = base + p->frcap;
				}
			}
		}
		if (m >= MARK_GEN) {
			m = mark_of[fastpt_blk_last_iclass(b) & 15];
			*mark = gen | m;
			add_code(p, fastpt_blk_ip(b), fastpt_blk_end(b));
		}
		if (m == MARK_NONE)
			continue;
		if (m == MARK_RET ||
		    (m == MARK_OTHER && fastpt_blk_last_iclass(b) == PTD_IC_FAR_CALL &&
		     tix_is_sigreturn(ss->st, p->pid, fastpt_blk_last_ip(b), ctime))) {
			if (top > base)
				top--;
			else
				ret_below++;
		} else {
			uint64_t last = fastpt_blk_last_ip(b);

			cmpgen = gen | MARK_PEND;
			top->call_ip = last;
			top->size = (uint32_t)(fastpt_blk_end(b) - last);
			top->time = ctime;
			top->pos = pos - 1;
			top->kind = m == MARK_CALL ? TIX_FRAME_CALL :
				    TIX_FRAME_SIG_INTERRUPTED;
		}
	}
	i = (size_t)(rb - recs);
	if (nomem)
		i = (size_t)-1;
	else if (rb > r0) {
		ss->last = p->tid;
		p->time_last = ctime;
	}
	p->pend = 0;
	if ((cmpgen & MARK_PEND) && !nomem) {
		p->pend = top->kind == TIX_FRAME_CALL ? PEND_CALL : PEND_ASYNC;
		p->pending = *top;
		p->pending.kind = TIX_FRAME_CALL;
	}
	/* a part's depth is its frames less the returns below its start */
	p->depth += (int32_t)((size_t)(top - base) - p->nfr) -
		    (int32_t)(ret_below - p->ret_below);
	if (ret_below > p->ret_below)
		p->min_delta = -(int32_t)ret_below;
	p->nfr = (size_t)(top - base);
	p->npos = pos;
	p->ninsn += (uint32_t)(pos - npos0);
	p->ret_below = ret_below;
	return i;
}

/* The next n records of the segment (fastpt_reader_decode_sink's sink).
 * Returns 0 or -1 (memory). */
static int summarize(void *arg, const struct ptd_block *recs, size_t n)
{
	struct sumstate *ss = arg;
	struct fastpt_reader *rd = ss->rd;
	struct segres *res = ss->res;
	struct part *p = ss->p;
	size_t i;

	if (res->fail)
		return 0;
	for (i = 0; i < n;) {
		const struct ptd_block *rb = &recs[i];
		const struct ptd_event *ev = NULL;
		struct fastpt_brief r;
		int32_t tid, pid;
		uint32_t *mark;
		int eff;

		if (p && p->ninsn && rb->priv && rb->ctx == ss->cctx &&
		    (ss->ctid >= 0 ? ss->ctid : ss->last) == p->tid) {
			size_t k = sum_blocks(ss, p, recs, i, n);

			if (k == (size_t)-1)
				return -1;
			if (k > i) {
				i = k;
				continue;
			}
		}
		i++;
		if (!rb->priv) {
			fastpt_reader_brief(rd, rb, &r);
			ev = r.ev;
			if (!is_stop_kind(ev->kind))
				continue;
			tid = ev->tid;
			pid = ev->pid;
		} else {
			if (!rb->ninsn)
				continue;
			if (rb->ctx != ss->cctx) {
				ss->cctx = rb->ctx;
				fastpt_reader_ctx(rd, ss->cctx, &ss->ctime, &ss->cpid,
						  &ss->ctid);
			}
			tid = ss->ctid;
			pid = ss->cpid;
		}
		if (tid < 0)
			tid = ss->last;
		if (tid < 0) {
			res->fail = 1;   /* whose it is comes from before */
			return 0;
		}
		ss->last = tid;
		if (!p || p->tid != tid) {
			p = part_of(res, tid, pid);
			ss->p = p;
			if (!p)
				return -1;
			ss->gen += MARK_GEN;
		}
		if (p->pid < 0)
			p->pid = pid;
		if (ev) {
			if (resolve(p, 0, 0))
				return -1;
			if (!p->npos)
				p->first_stop = 1;
			part_time(p, ev->flags & PTD_EVF_TIME_VALID ? ev->time : 0);
			p->npos++;
			continue;
		}
		fastpt_reader_brief(rd, rb, &r);
		if (p->pend && resolve(p, 1, r.ip))
			return -1;
		if (!p->ninsn)
			p->first_ip = r.ip;
		part_time(p, ss->ctime);
		/* a part of a block (before a stop) adds its own code */
		if (rb->ninsn != fastpt_blk_ninsn(rb->priv)) {
			add_code(p, r.ip, r.end);
		} else {
			mark = fastpt_blk_mark(rb->priv);
			if ((*mark & ~(uint32_t)(MARK_GEN - 1)) != ss->gen) {
				*mark = ss->gen |
					mark_of[fastpt_blk_last_iclass(rb->priv) & 15];
				add_code(p, r.ip, r.end);
			}
		}
		eff = stack_effect(ss, p, r.last_iclass, r.last_ip);
		if (eff > 0) {
			p->pend = (uint8_t)eff;
			p->pending.call_ip = r.last_ip;
			p->pending.size = (uint32_t)(r.end - r.last_ip);
			p->pending.time = ss->ctime;
			p->pending.pos = p->npos + rb->ninsn - 1;
		} else if (eff < 0) {
			if (p->nfr)
				p->nfr--;
			else
				p->ret_below++;
			p->depth--;
			if (p->depth < p->min_delta)
				p->min_delta = p->depth;
		}
		p->ninsn += rb->ninsn;
		p->npos += rb->ninsn;
	}
	return 0;
}

static struct tix_tinfo *tinfo_of(struct ptd_index *ix, int32_t tid, int32_t pid)
{
	size_t i;

	for (i = ix->nti; i-- > 0;)
		if (ix->ti[i].tid == tid)
			return &ix->ti[i];
	if (grow(&ix->ti, &ix->ticap, ix->nti + 1, sizeof(*ix->ti)))
		return NULL;
	memset(&ix->ti[ix->nti], 0, sizeof(ix->ti[0]));
	ix->ti[ix->nti].tid = tid;
	ix->ti[ix->nti].pid = pid;
	return &ix->ti[ix->nti++];
}

/* Identical code summaries are kept once (loops repeat them). */
struct codeset {
	uint32_t *slot;            /* code index + 1, 0 empty */
	size_t nslot;
};

static uint64_t code_hash(const struct tix_code *c)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t k;

	for (k = 0; k < TIX_CODE_BITS / 64; k++)
		h = (h ^ c->w[k]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static long code_id(struct ptd_index *ix, struct codeset *cs,
		    const struct tix_code *c)
{
	size_t k;

	if (ix->ncodes * 2 >= cs->nslot) {
		size_t n = cs->nslot ? cs->nslot * 2 : 1024, i;
		uint32_t *sl = calloc(n, sizeof(*sl));

		if (!sl)
			return -1;
		for (i = 0; i < ix->ncodes; i++) {
			k = code_hash(&ix->codes[i]) & (n - 1);
			while (sl[k])
				k = (k + 1) & (n - 1);
			sl[k] = (uint32_t)i + 1;
		}
		free(cs->slot);
		cs->slot = sl;
		cs->nslot = n;
	}
	k = code_hash(c) & (cs->nslot - 1);
	while (cs->slot[k]) {
		if (!memcmp(&ix->codes[cs->slot[k] - 1], c, sizeof(*c)))
			return cs->slot[k] - 1;
		k = (k + 1) & (cs->nslot - 1);
	}
	if (grow(&ix->codes, &ix->codecap, ix->ncodes + 1, sizeof(*c)))
		return -1;
	ix->codes[ix->ncodes] = *c;
	cs->slot[k] = (uint32_t)ix->ncodes + 1;
	return (long)ix->ncodes++;
}

/* Per thread while assembling: depth at the end of its last piece and
 * that piece's pending call. */
struct tstate {
	int32_t depth;
	int pend;
	struct tix_frame pending;
};

/* Appends segment ord's parts to their threads. */
static int assemble(struct ptd_index *ix, struct codeset *cs,
		    struct tstate **st, size_t *stcap, size_t ord,
		    const struct segres *r)
{
	size_t i, k;

	for (i = 0; i < r->n; i++) {
		const struct part *p = &r->p[i];
		struct tix_tinfo *t = tinfo_of(ix, p->tid, p->pid);
		struct tix_piece_sum *ps;
		struct tstate *ts;
		long code;

		if (!t)
			return -1;
		if (grow(st, stcap, ix->nti, sizeof(**st)))
			return -1;
		ts = &(*st)[t - ix->ti];
		if (t->nps == 0)
			memset(ts, 0, sizeof(*ts));
		if (t->pid < 0 && p->pid >= 0)
			t->pid = p->pid;
		for (k = (size_t)pend_frames(ts->pend, &ts->pending, !p->first_stop,
					     p->first_ip); k > 0; k--) {
			if (grow(&t->fr, &t->frcap, t->nfr + 1, sizeof(*t->fr)))
				return -1;
			t->fr[t->nfr] = ts->pending;
			t->fr[t->nfr].kind = ts->pend == PEND_ASYNC ?
					     sig_kind((int)k) : TIX_FRAME_CALL;
			t->fr[t->nfr++].pos += t->ps[t->nps - 1].pos0;
			t->ps[t->nps - 1].nframes++;
			ts->depth++;
		}
		code = code_id(ix, cs, &p->code);
		if (code < 0 || grow(&t->ps, &t->pscap, t->nps + 1, sizeof(*ps)) ||
		    grow(&t->fr, &t->frcap, t->nfr + p->nfr + 1, sizeof(*t->fr)))
			return -1;
		ps = &t->ps[t->nps++];
		memset(ps, 0, sizeof(*ps));
		ps->insn0 = t->ninsn;
		ps->pos0 = t->npos;
		ps->time = p->time0;
		ps->first_ip = p->first_ip;
		ps->minip = p->minip;
		ps->maxend = p->maxend;
		ps->seg = (uint32_t)ord;
		ps->code = (uint32_t)code;
		ps->ninsn = p->ninsn;
		ps->npos = p->npos;
		ps->depth0 = ts->depth;
		ps->min_delta = p->min_delta;
		ps->ret_below = p->ret_below;
		ps->frame0 = (uint32_t)t->nfr;
		ps->nframes = (uint32_t)p->nfr;
		ps->first_stop = p->first_stop;
		for (k = 0; k < p->nfr; k++) {
			t->fr[t->nfr] = p->fr[k];
			t->fr[t->nfr++].pos += ps->pos0;
		}
		ts->depth += p->depth;
		ts->pend = p->pend;
		ts->pending = p->pending;
		if (!t->npos)
			t->first_time = p->time0;
		t->last_time = p->time_last;
		t->ninsn += p->ninsn;
		t->npos += p->npos;
		t->nstops += p->npos - p->ninsn;
	}
	return 0;
}

static void segres_free(struct segres *r, size_t n)
{
	size_t i, k;

	if (!r)
		return;
	for (i = 0; i < n; i++) {
		for (k = 0; k < r[i].n; k++)
			free(r[i].p[k].fr);
		free(r[i].p);
	}
	free(r);
}

struct bjob {
	struct backend *be;
	struct imgstore *img;      /* code bytes (summarize's signal returns) */
	size_t nsegs;
	size_t next;               /* atomic */
	struct segres *res;
	int err, fail;             /* atomic */
	/* the caller's thread joins the summaries to the index in order as
	 * they are done (only then are they freed: memory stays that of
	 * the segments in flight, not of the trace) */
	struct ptd_index *ix;
	struct codeset *cs;
	struct tstate **st;
	size_t *stcap;
	size_t joined;
	uint64_t *dropped;         /* per queue: trace bytes dropped below */
};

static void segres_clear(struct segres *r)
{
	for (size_t k = 0; k < r->n; k++)
		free(r->p[k].fr);
	free(r->p);
	r->p = NULL;
	r->n = r->cap = 0;
}

/* Joins the summaries done next in order.  Returns 0 or -1 (memory). */
static int join_done(struct bjob *j)
{
	while (j->joined < j->nsegs &&
	       __atomic_load_n(&j->res[j->joined].done, __ATOMIC_ACQUIRE)) {
		struct segres *r = &j->res[j->joined];

		if (assemble(j->ix, j->cs, j->st, j->stcap, j->joined, r))
			return -1;
		segres_clear(r);
		fastpt_drop_done(j->be, j->joined, j->dropped);
		j->joined++;
	}
	return 0;
}

/* A new reader in place of *rd, its blocks unmarked: the generations
 * start again.  Returns 0 or -1 (memory; *rd is then NULL). */
static int fresh_reader(struct backend *be, struct fastpt_reader **rd,
			struct sumstate *ss)
{
	fastpt_reader_free(*rd);
	*rd = NULL;
	ss->gen = 0;
	return fastpt_reader_new(be, rd) ? -1 : 0;
}

/* Decodes and summarizes segments, taken in order; the caller's thread
 * (joiner) also joins them. */
static void run_worker(struct bjob *j, int joiner)
{
	struct sumstate ss = { .st = j->img };
	struct fastpt_reader *rd;

	if (fastpt_reader_new(j->be, &rd)) {
		__atomic_store_n(&j->err, PTD_ERR_NOMEM, __ATOMIC_RELAXED);
		return;
	}
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		int rc;

		if (i >= j->nsegs || __atomic_load_n(&j->fail, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&j->err, __ATOMIC_RELAXED))
			break;
		if (ss.gen >= GEN_LIMIT && fresh_reader(j->be, &rd, &ss)) {
			__atomic_store_n(&j->err, PTD_ERR_NOMEM, __ATOMIC_RELAXED);
			break;
		}
		ss.rd = rd;
		sum_start(&ss, &j->res[i]);
		rc = fastpt_reader_decode_sink(rd, i, summarize, &ss,
					       FASTPT_SINK_CTX_TIME);
		if (rc == 1) {
			__atomic_store_n(&j->fail, 1, __ATOMIC_RELAXED);
			break;
		}
		if (rc < 0) {
			__atomic_store_n(&j->err, rc, __ATOMIC_RELAXED);
			break;
		}
		if (j->res[i].fail)
			__atomic_store_n(&j->fail, 1, __ATOMIC_RELAXED);
		else
			__atomic_store_n(&j->res[i].done, 1, __ATOMIC_RELEASE);
		if (joiner && join_done(j)) {
			__atomic_store_n(&j->err, PTD_ERR_NOMEM, __ATOMIC_RELAXED);
			break;
		}
	}
	fastpt_reader_free(rd);
}

static void *build_worker(void *arg)
{
	run_worker(arg, 0);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Each thread's last time from its last segment decoded again with the
 * blocks' own times (the summaries have the start of the last context).
 * Returns 0 or a negative error. */
static int last_times(struct ptd_index *ix, struct backend *be,
		      struct imgstore *img)
{
	struct sumstate ss = { .st = img };
	struct fastpt_reader *rd;
	struct segres r = { 0 };
	uint32_t *segs;
	size_t i, k, n = 0;
	int rc = 0;

	segs = malloc((ix->nti ? ix->nti : 1) * sizeof(*segs));
	if (!segs || fastpt_reader_new(be, &rd)) {
		free(segs);
		return PTD_ERR_NOMEM;
	}
	for (i = 0; i < ix->nti; i++)
		if (ix->ti[i].nps && ix->ti[i].ps[ix->ti[i].nps - 1].seg != TIX_SEG_NONE)
			segs[n++] = ix->ti[i].ps[ix->ti[i].nps - 1].seg;
	util_sort(segs, n, sizeof(*segs), cmp_u32);
	for (i = 0; i < n && !rc; i++) {
		if (i && segs[i] == segs[i - 1])
			continue;
		if (ss.gen >= GEN_LIMIT && fresh_reader(be, &rd, &ss)) {
			rc = PTD_ERR_NOMEM;
			break;
		}
		ss.rd = rd;
		sum_start(&ss, &r);
		rc = fastpt_reader_decode_sink(rd, segs[i], summarize, &ss, 0);
		for (k = 0; !rc && !r.fail && k < r.n; k++) {
			struct tix_tinfo *t = tinfo_of(ix, r.p[k].tid, r.p[k].pid);

			if (t && t->nps && t->ps[t->nps - 1].seg == segs[i])
				t->last_time = r.p[k].time_last;
		}
		segres_clear(&r);
		r.fail = 0;
		if (rc > 0)       /* decoded before: keep the context's time */
			rc = 0;
	}
	fastpt_reader_free(rd);
	free(segs);
	return rc;
}

/* The index from the fast decoder's segments, decoded on the session's
 * -j threads.  Returns 0, 1 when this trace needs the whole-thread
 * index (a segment the fast walk cannot decode, a stop of no known
 * thread), or a negative error. */
static int build_fast(struct ptd_index *ix)
{
	struct ptd_session *s = ix->s;
	struct bjob j = { 0 };
	struct codeset cs = { 0 };
	struct tstate *st = NULL;
	size_t stcap = 0, i;
	unsigned int nt, started = 0;
	pthread_t *th;
	int rc = 0;

	if (!s->be || !fastpt_backend_is(s->be) || s->opts.time_start ||
	    s->opts.time_end || s->opts.max_insns ||
	    (s->opts.flags & PTD_OPEN_COUNT_ONLY))
		return 1;
	j.be = s->be;
	j.img = s->in ? s->in->st : NULL;
	j.nsegs = fastpt_nsegments(s->be);
	if (j.nsegs >= TIX_SEG_NONE)
		return 1;
	j.res = calloc(j.nsegs ? j.nsegs : 1, sizeof(*j.res));
	j.dropped = calloc(fastpt_nqueues(s->be) + 1, sizeof(*j.dropped));
	nt = fastpt_nthreads(s->be);
	th = calloc(nt, sizeof(*th));
	if (!j.res || !th || !j.dropped) {
		free(j.res);
		free(j.dropped);
		free(th);
		return PTD_ERR_NOMEM;
	}
	j.ix = ix;
	j.cs = &cs;
	j.st = &st;
	j.stcap = &stcap;
	/* the caller's thread is one of the nt */
	for (i = 1; i < nt; i++)
		if (pthread_create(&th[started], NULL, build_worker, &j) == 0)
			started++;
	run_worker(&j, 1);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	if (!j.err && !j.fail && join_done(&j))
		j.err = PTD_ERR_NOMEM;
	if (j.err)
		rc = j.err;
	else if (j.fail || j.joined < j.nsegs)
		rc = 1;
	else
		rc = last_times(ix, j.be, j.img);
	segres_free(j.res, j.nsegs);
	free(j.dropped);
	free(cs.slot);
	free(st);
	for (i = 0; !rc && i < ix->nti; i++)
		if (ix->ti[i].pid < 0 && ix->ti[i].tid > 0 && s->in)
			ix->ti[i].pid = sideband_pid_of(s->in->sb, ix->ti[i].tid);
	if (rc)
		tix_drop_pieces(ix);
	return rc;
}

void tix_drop_pieces(struct ptd_index *ix)
{
	size_t i;

	for (i = 0; i < ix->nti; i++) {
		free(ix->ti[i].ps);
		free(ix->ti[i].fr);
	}
	free(ix->ti);
	free(ix->codes);
	ix->ti = NULL;
	ix->codes = NULL;
	ix->nti = ix->ticap = ix->ncodes = ix->codecap = 0;
}

/* ---- the whole-thread index, from one linear decode ---- */

static int build_whole(struct ptd_index *ix)
{
	struct ptd_session *s = ix->s;
	struct ptd_event ev;
	struct tix_thread *last = NULL;
	int32_t *lastq;
	size_t i, last_n = 0;
	int rc;

	lastq = malloc(TIX_MAXQ * sizeof(*lastq));
	if (!lastq)
		return PTD_ERR_NOMEM;
	for (i = 0; i < TIX_MAXQ; i++)
		lastq[i] = -1;
	while ((rc = ptd_next(s, &ev)) == 0) {
		struct tix_thread *t;
		int32_t tid = ev.tid;

		if (last_n != ix->nth) { /* thread_of moved the array */
			last = NULL;
			last_n = ix->nth;
		}

		if (ev.kind != PTD_EV_INSN && !is_stop_kind(ev.kind))
			continue;
		if (tid < 0 && ev.queue < TIX_MAXQ)
			tid = lastq[ev.queue];
		if (tid < 0) {
			ix->unplaced++;
			continue;
		}
		if (ev.queue < TIX_MAXQ)
			lastq[ev.queue] = tid;
		/* most events are the same thread's as the one before */
		t = last && last->tid == tid ? last : thread_of(ix, tid, ev.pid);
		if (!t)
			goto nomem;
		last = t;
		if (t->pid < 0 && ev.pid >= 0)
			t->pid = ev.pid;
		if (ev.kind == PTD_EV_INSN ? add_insn(t, &ev) : add_stop(t, &ev))
			goto nomem;
	}
	free(lastq);
	if (rc != PTD_ERR_END)
		return rc;
	/* each thread one piece, its view kept */
	for (i = 0; i < ix->nth; i++) {
		const struct tix_thread *t = &ix->th[i];
		struct tix_tinfo *ti;
		struct tix_piece_sum *ps;

		if (grow(&ix->ti, &ix->ticap, ix->nti + 1, sizeof(*ix->ti)))
			return PTD_ERR_NOMEM;
		ti = &ix->ti[ix->nti++];
		memset(ti, 0, sizeof(*ti));
		ti->ps = calloc(1, sizeof(*ti->ps));
		if (!ti->ps)
			return PTD_ERR_NOMEM;
		ti->nps = ti->pscap = 1;
		ti->tid = t->tid;
		ti->pid = t->pid;
		ti->whole = t;
		ti->ninsn = t->ninsn;
		ti->npos = t->npos;
		ti->nstops = t->nstops;
		if (t->nruns) {
			ti->first_time = t->runs[0].time;
			ti->last_time = t->runs[t->nruns - 1].time;
		}
		ps = ti->ps;
		ps->seg = TIX_SEG_NONE;
		ps->code = TIX_CODE_ANY;
		ps->ninsn = (uint32_t)(t->ninsn > UINT32_MAX ? UINT32_MAX : t->ninsn);
		ps->npos = (uint32_t)(t->npos > UINT32_MAX ? UINT32_MAX : t->npos);
		ps->time = ti->first_time;
		ps->minip = 0;
		ps->maxend = UINT64_MAX;
		ps->min_delta = INT32_MIN;
	}
	return 0;
nomem:
	free(lastq);
	return PTD_ERR_NOMEM;
}

/* The index file's name: opts->file, or the trace's path + ".ptdidx". */
static char *index_file(const struct ptd_index_opts *o)
{
	size_t n;
	char *f;

	if (o->file)
		return strdup(o->file);
	n = strlen(o->trace);
	while (n > 1 && o->trace[n - 1] == '/')
		n--;
	f = malloc(n + sizeof(".ptdidx"));
	if (f) {
		memcpy(f, o->trace, n);
		memcpy(f + n, ".ptdidx", sizeof(".ptdidx"));
	}
	return f;
}

#define OPT(o, field) ((o) && (o)->sz >= offsetof(struct ptd_index_opts, field) + \
		       sizeof((o)->field) ? (o)->field : 0)

int ptd_index_build(struct ptd_index **out, struct ptd_session *s,
		    const struct ptd_index_opts *opts)
{
	struct ptd_index *ix;
	unsigned int flags = OPT(opts, flags);
	const char *trace = OPT(opts, trace);
	char *file = NULL;
	int rc;

	if (!out)
		return PTD_ERR_INVAL;
	*out = NULL;
	if (!s || (opts && opts->sz < sizeof(size_t)))
		return PTD_ERR_INVAL;
	if ((flags & PTD_INDEX_FILE) && !trace) {
		snprintf(s->errmsg, sizeof(s->errmsg), "ptd_index_build: "
			 "PTD_INDEX_FILE needs the trace's path in opts.trace");
		return PTD_ERR_INVAL;
	}
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return PTD_ERR_NOMEM;
	ix->s = s;
	ix->msg_lock = malloc(sizeof(pthread_mutex_t));
	if (!ix->msg_lock) {
		free(ix);
		return PTD_ERR_NOMEM;
	}
	pthread_mutex_init(ix->msg_lock, NULL);
	if (flags & PTD_INDEX_FILE) {
		struct ptd_index_opts o = { .sz = sizeof(o), .trace = trace,
					    .file = OPT(opts, file) };

		file = index_file(&o);
		if (!file) {
			index_free(ix);
			return PTD_ERR_NOMEM;
		}
		if (s->be && fastpt_backend_is(s->be)) {
			rc = tix_file_load(ix, file, trace, ix->file_err,
					   sizeof(ix->file_err));
			if (rc == 0) {
				ix->loaded = 1;
				free(file);
				*out = ix;
				return 0;
			}
		}
	}
	/* the perf.data records were read at open: their window's pages
	 * need not stay resident beside the index */
	if (s->in && s->in->pd)
		perfdata_release_window(s->in->pd);
	rc = build_fast(ix);
	if (rc == 1) {
		rc = build_whole(ix);
	} else if (rc == 0 && file) {
		if (tix_file_save(ix, file, trace, ix->file_err,
				  sizeof(ix->file_err)) == 0)
			ix->saved = 1;
	}
	free(file);
	if (rc) {
		index_free(ix);
		if (rc == PTD_ERR_NOMEM)
			snprintf(s->errmsg, sizeof(s->errmsg),
				 "out of memory while indexing the trace: index a "
				 "shorter time range (ptd_open_opts "
				 "time_start/time_end)");
		return rc;
	}
	*out = ix;
	return 0;
}

size_t ptd_index_thread_count(const struct ptd_index *ix)
{
	return ix ? ix->nti : 0;
}

uint64_t ptd_index_unplaced(const struct ptd_index *ix)
{
	return ix ? ix->unplaced : 0;
}

int ptd_index_thread(const struct ptd_index *ix, size_t i,
		     struct ptd_index_thread *out)
{
	const struct tix_tinfo *t;

	if (!ix || !out || i >= ix->nti)
		return PTD_ERR_INVAL;
	t = &ix->ti[i];
	memset(out, 0, sizeof(*out));
	out->tid = t->tid;
	out->pid = t->pid;
	out->instructions = t->ninsn;
	out->positions = t->npos;
	out->stops = t->nstops;
	out->first_time = t->first_time;
	out->last_time = t->last_time;
	return 0;
}

int ptd_index_get_stats(const struct ptd_index *ix, struct ptd_index_stats *st)
{
	struct ptd_index_stats o = { 0 };
	size_t i;

	if (!ix || !st || st->sz < sizeof(size_t))
		return PTD_ERR_INVAL;
	o.sz = st->sz < sizeof(o) ? st->sz : sizeof(o);
	for (i = 0; i < ix->nti; i++) {
		const struct tix_tinfo *t = &ix->ti[i];

		o.pieces += t->nps;
		o.bytes += t->nps * sizeof(*t->ps) + t->nfr * sizeof(*t->fr);
		o.instructions += t->ninsn;
		if (t->whole)
			o.bytes += t->whole->nruns * sizeof(struct tix_run) +
				   t->whole->ninsn + t->whole->npool * sizeof(size_t) +
				   t->whole->npieces * sizeof(struct tix_piece);
		else
			o.redecoded = 1;
	}
	o.bytes += ix->ncodes * sizeof(*ix->codes);
	o.loaded = ix->loaded;
	o.saved = ix->saved;
	o.file_error = ix->file_err[0] ? ix->file_err : NULL;
	memcpy(st, &o, o.sz);
	return 0;
}

/* ---- views: a piece decoded again ---- */

/* As summarize() sees it: instructions and stops of tid. */
int tix_view_load(struct ptd_index *ix, struct fastpt_reader *rd,
		  const struct tix_tinfo *ti, size_t k, struct tix_thread *v)
{
	const struct tix_piece_sum *ps = &ti->ps[k];
	struct ptd_event ev;
	size_t i, n, j;
	int32_t last = -1;
	int rc;

	for (j = 0; j < v->nstops; j++)
		free((char *)v->stops[j].msg);
	v->nruns = v->ninsn = v->nstops = v->npieces = v->npool = 0;
	v->nstack = v->under = 0;
	v->depth = 0;
	v->npos = 0;
	v->tid = ti->tid;
	v->pid = ti->pid;
	v->code = ix->s->in ? ix->s->in->st : NULL;
	rc = fastpt_reader_decode(rd, ps->seg);
	if (rc)
		return rc < 0 ? rc : PTD_ERR_DECODE;
	/* the records are all the view needs: the trace's pages go */
	fastpt_reader_drop(rd);
	n = fastpt_reader_nrecs(rd);
	memset(&ev, 0, sizeof(ev));
	for (i = 0; i < n; i++) {
		struct fastpt_rec r;
		int32_t tid;
		uint32_t q;

		fastpt_reader_rec(rd, i, &r);
		if (r.ev && !is_stop_kind(r.ev->kind))
			continue;
		tid = r.ev ? r.ev->tid : r.tid;
		if (tid < 0)
			tid = last;
		if (tid < 0)
			return PTD_ERR_DECODE;
		last = tid;
		if (tid != ti->tid)
			continue;
		if (r.ev) {
			struct ptd_event se = *r.ev;

			se.queue = r.queue;
			if (add_stop(v, &se))
				return PTD_ERR_NOMEM;
			continue;
		}
		if (!r.ninsn)
			continue;
		ev.kind = PTD_EV_INSN;
		ev.mode = r.mode;
		ev.image = r.image;
		ev.cpu = r.cpu;
		ev.queue = r.queue;
		ev.time = r.time;
		ev.flags = r.time ? PTD_EVF_TIME_VALID : 0;
		ev.ip = r.ip;
		ev.size = (uint8_t)fastpt_rec_size(&r, 0);
		ev.iclass = r.ninsn == 1 ? r.last_iclass : PTD_IC_OTHER;
		if (add_insn(v, &ev))
			return PTD_ERR_NOMEM;
		if (r.ninsn > 1) {
			/* the rest of a block extends the run add_insn left
			 * open: contiguous, one context, no call or return
			 * before the last */
			struct tix_run *run = &v->runs[v->nruns - 1];

			if (grow(&v->insn, &v->insncap, v->ninsn + r.ninsn, 1))
				return PTD_ERR_NOMEM;
			for (q = 1; q < r.ninsn; q++)
				v->insn[v->ninsn++] = (uint8_t)(
					(fastpt_rec_size(&r, q) & 0xf) |
					((q + 1 == r.ninsn ? r.last_iclass :
					  PTD_IC_OTHER) & 0xf) << 4);
			run->ninsn += r.ninsn - 1;
			run->last_off = (uint32_t)(r.ip + r.off[r.ninsn - 1] - run->ip);
			v->npos += r.ninsn - 1;
		}
	}
	if (v->ninsn != ps->ninsn || v->npos != ps->npos)
		return PTD_ERR_DECODE;
	return 0;
}

int tix_code_may_hit(const struct ptd_index *ix, const struct tix_piece_sum *p,
		     const struct ptd_addr_range *r, size_t nr)
{
	const struct tix_code *c;
	size_t k;

	if (p->code == TIX_CODE_ANY)
		return 1;
	c = &ix->codes[p->code];
	for (k = 0; k < nr; k++) {
		uint64_t s = r[k].start > p->minip ? r[k].start : p->minip;
		uint64_t e = r[k].end < p->maxend ? r[k].end : p->maxend, l;

		if (s >= e)
			continue;
		if (((e - 1) >> 6) - (s >> 6) >= 64)
			return 1;
		for (l = s >> 6; l <= (e - 1) >> 6; l++)
			if (code_has(c, l))
				return 1;
	}
	return 0;
}

long tix_fold_frames(const struct tix_tinfo *ti, size_t k, size_t skip,
		     struct tix_frame **out, size_t *cap)
{
	size_t n = 0, q, i;

	for (q = k; q-- > 0;) {
		const struct tix_piece_sum *p = &ti->ps[q];

		if (skip < p->nframes) {
			size_t take = p->nframes - skip;

			if (util_grow((void **)out, cap, n + take, sizeof(**out)))
				return -1;
			for (i = take; i-- > 0;)
				(*out)[n++] = ti->fr[p->frame0 + i];
			skip = 0;
		} else {
			skip -= p->nframes;
		}
		skip += p->ret_below;
	}
	for (i = 0; i < n / 2; i++) {
		struct tix_frame x = (*out)[i];

		(*out)[i] = (*out)[n - 1 - i];
		(*out)[n - 1 - i] = x;
	}
	return (long)n;
}

long tix_stack_at(const struct tix_thread *t, size_t r, size_t **out,
		  size_t *cap, size_t *under)
{
	const struct tix_piece *p = &t->pieces[r / TIX_PIECE_RUNS];
	size_t n = p->nframes, k;

	*under = p->under;
	if (util_grow((void **)out, cap, n + 1, sizeof(size_t)))
		return -1;
	if (n)
		memcpy(*out, &t->pool[p->frames], n * sizeof(size_t));
	for (k = r / TIX_PIECE_RUNS * TIX_PIECE_RUNS; k < r; k++) {
		const struct tix_run *x = &t->runs[k];
		unsigned int ic;

		if (!x->ninsn)
			continue;
		ic = TIX_ICLASS(t->insn[x->insn0 + x->ninsn - 1]);
		if (tix_is_sigenter(ic)) {
			if (util_grow((void **)out, cap, n + 2, sizeof(size_t)))
				return -1;
			(*out)[n++] = k;
			(*out)[n++] = k;
		} else if (is_call(ic) && !(t->runs[k + 1].ninsn &&
				     zero_call(x, t->insn[x->insn0 + x->ninsn - 1],
					       t->runs[k + 1].ip))) {
			if (util_grow((void **)out, cap, n + 1, sizeof(size_t)))
				return -1;
			(*out)[n++] = k;
		} else if (ic == PTD_IC_RETURN || ic == TIX_IC_SIGRETURN) {
			if (n)
				n--;
			else
				(*under)++;
		}
	}
	return (long)n;
}

uint64_t tix_insn_ip(const struct tix_thread *t, size_t r, uint32_t i)
{
	const struct tix_run *x = &t->runs[r];
	uint64_t ip = x->ip;
	uint32_t k;

	if (i + 1 == x->ninsn)
		return x->ip + x->last_off;
	for (k = 0; k < i; k++)
		ip += TIX_LEN(t->insn[x->insn0 + k]);
	return ip;
}
