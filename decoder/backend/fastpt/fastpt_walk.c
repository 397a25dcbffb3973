/* SPDX-License-Identifier: MIT */
#include "fastpt_walk.h"
#include "fastpt_internal.h"
#include "fastpt_memo.h"
#include "fastpt_pkt.h"
#include "fastpt_time.h"
#include "imgstore.h"
#include "machines.h"
#include "sideband.h"

#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Return-compression stack with libipt's semantics: 64 entries, the
 * oldest dropped when full. */
#define RS_SIZE 64

struct walk {
	struct worker *w;
	struct fast_backend *fb;
	const struct fqueue *fq;
	struct segment *seg;
	struct pt_packet_decoder *pkt;
	struct fwhere at;         /* ip, time, address space, mode, epoch */
	uint64_t last_ip;
	int enabled;
	uint64_t tnt;             /* pending TNT bits, oldest at bit 63 */
	int ntnt;
	uint64_t rs[RS_SIZE + 1];
	unsigned rs_top, rs_bottom;

	/* time as libipt's query decoder keeps it: the clock at the packet
	 * read last (tm), and the flow's time (last_*: tm where the last
	 * TNT, TIP or event packet was taken), which blocks, thread switches
	 * and sideband lookups use; at.time stays the last TSC packet's, a
	 * lower bound for block validity */
	struct ftime tm;
	struct ftime_cfg tcfg;
	uint64_t last_tsc;
	int last_valid;
	uint64_t now;             /* last_tsc in perf time, or unknown */
	int now_stale;            /* now is computed when asked for */
	int clock_carried;        /* tm holds the calibration from before
				   * this segment (needed once CYC count) */
	int clock_known;          /* ... and it was known */
	int cyc_seen, clock_own;  /* a CYC; an MTC after one (clock_run) */
	int timing_seen;          /* an MTC or CYC outside PSB+ */
	/* the lazy clock: where only events read the time (clock_free),
	 * MTC and CYC packets are passed over and fed to tm only when a
	 * time is asked for (clock_sync, flow_sync) */
	int lazy;                 /* tm is the clock at segment offset
				   * tm_off; the MTC and CYC packets from
				   * there on are not fed yet */
	uint64_t tm_off;
	int last_lazy;            /* the flow's time was taken at segment
				   * offset last_off while lazy: last_tsc
				   * and last_valid are not set yet */
	uint64_t last_off;
	int clock_failed;         /* feeding the clock later failed: the
				   * segment is libipt's */
	int32_t host_pid;         /* the host thread's process: at.pid is
				   * the address space code is read in, the
				   * guest's with nr (PIP.NR=1) */
	int32_t tid;
	int32_t ev_pid, ev_tid;   /* the thread events name: the host's, or
				   * with nr the guest thread it runs */
	int nr;
	uint64_t next_switch;
	int clock_free;           /* clock_free(): kept where next_switch
				   * changes (it is asked at every packet) */
	uint32_t ctx;             /* index of the current fctx */
	int ctx_dirty;            /* time or thread changed since */

	struct pt_packet peek;    /* lookahead packet */
	int have_peek;            /* 1 packet, 0 none read, -1 end/error */
	int peek_event;           /* the packet is one libipt reports as an
				   * event as soon as no TNT bit is pending
				   * (taking the time there) */
	/* a MODE.Exec read before the lookahead TIP or TIP.PGE: the mode
	 * from that TIP's IP on, and the clock at the MODE.Exec (libipt's
	 * time for its event) */
	int mode_pending, mode_valid;
	int mode_known;           /* at.mode is from a MODE.Exec (PSB+'s) */
	uint8_t mode_next;
	uint64_t mode_tsc;
	uint32_t free_insns;      /* instructions since trace was last needed */

	/* the packet decoder's position: cached, and after memo replays
	 * moved here first and given to libipt only when it next decodes */
	uint64_t off;
	int off_valid, pkt_stale;

	/* the run being recorded for the memo (fastpt_memo.h) */
	int rec;                  /* recording; cleared by anything impure */
	int rec_tip;              /* the run ended with an indirect jump */
	int count_only;           /* nothing reads the blocks' times (a
				   * FASTPT_SINK_CTX_TIME sink reads the
				   * contexts') */
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
#define WALK_REENABLED 2      /* tracing went off and on again */

/* ------------------------------------------------------------------ */
/* Flow state: return stack, time, thread, events                     */

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

static void flow_sync(struct walk *k);

/* The flow's time in perf time, converted when first asked for. */
static uint64_t flow_now(struct walk *k)
{
	flow_sync(k);
	if (k->now_stale) {
		k->now = k->last_valid ? intelpt_tsc_to_perf(&k->fb->p, k->last_tsc) :
			 IMGSTORE_TIME_UNKNOWN;
		k->now_stale = 0;
	}
	return k->now;
}

/* Appends an event of kind at ip with the walk's context: the event for
 * the caller to complete, or NULL when out of memory. */
static struct ptd_event *event(struct walk *k, int kind, uint64_t ip)
{
	struct ptd_event *ev = seg_push_event(k->seg);

	if (!ev)
		return NULL;
	ev->kind = (uint16_t)kind;
	ev->ip = ip;
	ev->cpu = k->fq->q.cpu;
	ev->pid = k->ev_pid;
	ev->tid = k->ev_tid;
	flow_sync(k);
	if (k->last_valid) {
		ev->tsc = k->last_tsc;
		if (flow_now(k) != IMGSTORE_TIME_UNKNOWN) {
			ev->time = k->now;
			ev->flags |= PTD_EVF_TIME_VALID;
		}
	}
	ev->offset = k->seg->start + pkt_offset(k);
	return ev;
}

/* An event at a packet whose time libipt takes there (a FUP's). */
static void event_time(struct walk *k, struct ptd_event *ev, int valid, uint64_t tsc)
{
	uint64_t t = valid ? intelpt_tsc_to_perf(&k->fb->p, tsc) : IMGSTORE_TIME_UNKNOWN;

	if (!ev || !valid)
		return;
	ev->tsc = tsc;
	ev->time = t == IMGSTORE_TIME_UNKNOWN ? 0 : t;
	if (t != IMGSTORE_TIME_UNKNOWN)
		ev->flags |= PTD_EVF_TIME_VALID;
	else
		ev->flags &= (uint16_t)~PTD_EVF_TIME_VALID;
}

/* The TIP or TIP.PGE just taken goes to ip: a MODE.Exec before it takes
 * effect there, an exec-mode event where it changes the mode
 * (docs/FORMATS.md), none for PSB+'s. */
static void mode_taken(struct walk *k, uint64_t ip)
{
	struct ptd_event *ev;

	if (!k->mode_pending)
		return;
	k->mode_pending = 0;
	if (k->mode_known && k->mode_next == k->at.mode)
		return;
	k->mode_known = 1;
	k->at.mode = k->mode_next;
	++*k->at.epoch;
	k->rec = 0;
	ev = event(k, PTD_EV_EXEC_MODE, ip);
	event_time(k, ev, k->mode_valid, k->mode_tsc);
	if (ev)
		ev->mode = k->mode_next;
}

/* A TSC packet: the bound blocks are checked against. */
static void set_time(struct walk *k, uint64_t tsc)
{
	k->at.time = intelpt_tsc_to_perf(&k->fb->p, tsc);
	k->ctx_dirty = 1;
	++*k->at.epoch;
}

/* The address space code is read in: the host thread's, or with PIP.NR
 * the guest's (which may change with the time); and the thread events
 * name: the host's, or the guest thread (as perf names guest samples). */
static void update_space(struct walk *k)
{
	int32_t space = intelpt_space(&k->fb->p, k->host_pid, k->tid,
				      flow_now(k), k->nr);
	int32_t pid = k->host_pid, tid = k->tid;

	if (space != k->at.pid) {
		k->at.pid = space;
		k->ctx_dirty = 1;
		++*k->at.epoch;
	}
	if (k->nr)
		machines_guest_thread(k->fb->p.machines, k->host_pid, k->tid,
				      flow_now(k), &pid, &tid);
	if (pid != k->ev_pid || tid != k->ev_tid) {
		k->ev_pid = pid;
		k->ev_tid = tid;
		k->ctx_dirty = 1;
		++*k->at.epoch;
		event(k, PTD_EV_SWITCH, 0);
	}
}

static void clock_free_update(struct walk *k)
{
	k->clock_free = k->count_only &&
			(!k->fb->sb || k->fq->q.cpu < 0 || k->next_switch == UINT64_MAX);
}

/* Follows the sideband like the reference path: who runs now. */
static void update_context(struct walk *k)
{
	int32_t pid, tid;
	uint64_t guest_next;

	/* no switch ahead: nothing to convert the time for */
	if (!k->fb->sb || k->fq->q.cpu < 0 || k->next_switch == UINT64_MAX ||
	    flow_now(k) == IMGSTORE_TIME_UNKNOWN)
		return;
	if (k->next_switch && k->now < k->next_switch)
		return;
	if (sideband_task_at(k->fb->sb, k->fq->q.cpu, k->now, &pid, &tid) == 0 &&
	    (pid != k->host_pid || tid != k->tid)) {
		k->host_pid = pid;
		k->tid = tid;
	}
	update_space(k);
	k->next_switch = sideband_next_switch(k->fb->sb, k->fq->q.cpu, k->now);
	guest_next = k->nr ? machines_next_switch(k->fb->p.machines, k->host_pid,
						  k->tid, k->now) : UINT64_MAX;
	if (guest_next < k->next_switch)
		k->next_switch = guest_next;
	clock_free_update(k);
}

/* ------------------------------------------------------------------ */
/* The clock                                                           */

/* libipt takes the clock's time as the flow's at each TNT, TIP and event
 * packet: blocks from here on have that time.  Count-only output has no
 * block times, only thread switches follow it. */
static __attribute__((noinline)) void time_taken(struct walk *k, int valid, uint64_t tsc)
{
	k->last_tsc = tsc;
	k->last_valid = valid;
	k->now_stale = 1;
	if (!k->count_only)
		k->ctx_dirty = 1;
	update_context(k);
}

/* Whether only events need the flow's time (count-only, no thread switch
 * ahead on this CPU): then timed runs may be stored and replayed. */
static inline int clock_free(const struct walk *k)
{
	return k->clock_free;
}

static inline void take_time(struct walk *k)
{
	if (clock_free(k)) {
		/* nothing to follow: events convert it when they need it,
		 * and read the clock there when it is lazy */
		if (k->lazy) {
			k->last_lazy = 1;
			k->last_off = pkt_offset(k);
			return;
		}
		k->last_tsc = k->tm.tsc;
		k->last_valid = k->tm.have_tsc;
		k->now_stale = 1;
		return;
	}
	if (k->tm.tsc == k->last_tsc && k->tm.have_tsc == k->last_valid)
		return;
	time_taken(k, k->tm.have_tsc, k->tm.tsc);
}

/* What a clock run (clock_run) saw, over one or more segments. */
struct clock_seen {
	int cyc;                  /* a CYC */
	int own;                  /* an MTC after a CYC: the calibration is
				   * the run's own from there */
	int mtc;                  /* an MTC or a TMA */
	int hdr_tsc;              /* a TSC in PSB+ */
	int cal;                  /* a TSC in PSB+ calibrated from the
				   * cycles since an earlier one of the run */
};

/* Runs a clock over the timing packets of a segment's first len bytes
 * (from its PSB), noting in *seen what it met.  Returns 0, or -1 on a
 * packet the walk leaves to libipt. */
static int clock_run(const struct walk *k, struct ftime *t, const uint8_t *data,
		     uint64_t len, struct clock_seen *seen)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t off = 0;
	int header = 0, rc = 0, stale = 0;

	intelpt_config(&k->fb->p, &cfg, data, data + len);
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d || pt_pkt_sync_set(d, 0) < 0) {
		pt_pkt_free_decoder(d);
		return -1;
	}
	while (rc >= 0 && off < len) {
		/* the common packets from their bytes, as the walk reads
		 * them; libipt's decoder for the others */
		int n = fastpt_pkt_read(data + off, len - off, &p);

		if (n) {
			off += (uint64_t)n;
			stale = 1;
		} else {
			if (stale && pt_pkt_sync_set(d, off) < 0)
				break;
			stale = 0;
			if (pt_pkt_next(d, &p, sizeof(p)) < 0)
				break;
			off += p.size;
		}
		switch (p.type) {
		case ppt_psb:
			header = 1;
			rc = ftime_psb(t, &k->tcfg);
			break;
		case ppt_psbend:
			header = 0;
			break;
		case ppt_tsc:
			if (header && seen->hdr_tsc && t->cal_tsc && t->cyc_tsc &&
			    !t->cal_have_mtc)
				seen->cal = 1;
			seen->hdr_tsc |= header;
			rc = ftime_tsc(t, &k->tcfg, p.payload.tsc.tsc, header);
			break;
		case ppt_cbr:
			rc = ftime_cbr(t, &k->tcfg, p.payload.cbr.ratio, header);
			break;
		case ppt_tma:
			seen->mtc = 1;
			rc = ftime_tma(t, &k->tcfg, p.payload.tma.ctc, p.payload.tma.fc);
			break;
		case ppt_mtc:
			seen->mtc = 1;
			seen->own |= seen->cyc;
			rc = ftime_mtc(t, &k->tcfg, p.payload.mtc.ctc);
			break;
		case ppt_cyc:
			seen->cyc = 1;
			rc = ftime_cyc(t, &k->tcfg, p.payload.cyc.value);
			break;
		case ppt_ovf:
			rc = -1;
			break;
		default:
			break;
		}
	}
	pt_pkt_free_decoder(d);
	return rc < 0 ? -1 : 0;
}

/* The clock at the end of the segment this thread walked last, when it
 * did not depend on what came before that segment: the next segment's
 * start, without running the clock over its bytes again. */
static __thread struct {
	const struct segment *seg;
	const uint8_t *data;
	uint32_t queue;
	uint64_t start, end;
	struct ftime tm;
} clock_end;

/* The clock run over all of segment prev's bytes, read from a copy of
 * its own when it straddles pieces (its loaded copy belongs to whoever
 * decodes it, and may be gone). */
static int clock_run_prev(struct walk *k, struct ftime *t, const struct segment *prev,
			  struct clock_seen *seen)
{
	uint64_t len = prev->end - prev->start;
	uint8_t *buf;
	int rc;

	if (!prev->straddles)
		return clock_run(k, t, prev->data, len, seen);
	buf = malloc(len ? len : 1);
	if (!buf)
		return -1;
	rc = fqueue_copy(k->fq, prev->start, prev->end, buf) ? -1 :
	     clock_run(k, t, buf, len, seen);
	free(buf);
	return rc;
}

static int clock_end_is(const struct segment *s)
{
	/* a straddling segment's copy may be freed and its data reset by
	 * another thread: its bounds and queue identify it */
	return clock_end.seg == s && clock_end.queue == s->queue &&
	       (s->straddles || clock_end.data == s->data) &&
	       clock_end.start == s->start && clock_end.end == s->end;
}

/* The first CYC of a segment: from here the calibration matters, and
 * libipt's comes from before the segment (the cycles counted since the
 * last MTC of the previous one).  Runs the clock over the previous
 * segment, then this one's packets up to the CYC at offset off.
 * Returns 0, or WALK_FAIL when the calibration cannot be known from the
 * previous segment alone (libipt decodes on). */
static int clock_carry(struct walk *k, uint64_t off)
{
	size_t si = (size_t)(k->seg - k->fq->segs);
	struct clock_seen seen = { 0 };
	const struct segment *prev;
	struct ftime t;

	k->clock_carried = 1;
	if (!si) {
		k->clock_known = 1;
		return 0;  /* libipt's clock starts at this PSB too */
	}
	prev = &k->fq->segs[si - 1];
	if (clock_end_is(prev)) {
		t = clock_end.tm;
		seen.own = 1;
	} else {
		ftime_init(&t);
		if (clock_run_prev(k, &t, prev, &seen) < 0)
			return -1;
		/* without MTC the TSC of this segment's PSB+ calibrates from
		 * the cycles since the previous PSB+ (the walk leaves any MTC
		 * of such a queue to libipt) */
		if (!seen.own && !k->fq->no_mtc)
			return -1;
	}
	if (clock_run(k, &t, k->seg->data, off, &seen) < 0)
		return -1;
	if (!seen.own && (seen.mtc || !seen.cal))
		return -1;
	k->tm = t;
	k->clock_known = 1;
	return 0;
}

/* An SKD007 lookalike: a CYC that may overlap an OVF (timing_packet). */
static inline int cyc_skd007(const struct pt_packet *p)
{
	return p->size == 2 && (p->payload.cyc.value & ~0x1full) == 0x20;
}

/* ------------------------------------------------------------------ */
/* The lazy clock                                                      */

/* The flow's time is the clock's now (the walk's time taken at
 * last_off, the clock fed up to there). */
static void last_resolved(struct walk *k)
{
	k->last_tsc = k->tm.tsc;
	k->last_valid = k->tm.have_tsc;
	k->now_stale = 1;
	k->last_lazy = 0;
}

/* Feeds the MTC and CYC packets from tm_off up to segment offset to (a
 * packet boundary the walk has read to) to the clock as the walk would
 * have fed them as it read them, taking the flow's time at last_off on
 * the way.  What libipt must decide, found here, leaves the segment to
 * libipt at its end (clock_failed). */
static void clock_catch_up(struct walk *k, uint64_t to)
{
	const uint8_t *d = k->seg->data;
	uint64_t len = k->seg->end - k->seg->start, o = k->tm_off;

	if (to < o)
		return;
	/* the walk's position in k->off: libipt's decoder is moved below */
	pkt_offset(k);
	while (o < to) {
		struct pt_packet p;
		int n, rc = 0;

		if (k->last_lazy && o >= k->last_off)
			last_resolved(k);
		n = fastpt_pkt_read(d + o, len - o, &p);
		if (!n) {
			k->pkt_stale = 1;
			if (pt_pkt_sync_set(k->pkt, o) < 0 ||
			    pt_pkt_next(k->pkt, &p, sizeof(p)) < 0 || !p.size) {
				k->clock_failed = 1;
				break;
			}
			n = p.size;
		}
		if (p.type == ppt_mtc) {
			rc = ftime_mtc_fast(&k->tm, &k->tcfg, p.payload.mtc.ctc);
		} else if (p.type == ppt_cyc) {
			/* the segment's first CYC: its calibration from
			 * before, as timing_packet takes it */
			rc = !k->clock_carried && clock_carry(k, o) < 0 ? -1 :
			     ftime_cyc(&k->tm, &k->tcfg, p.payload.cyc.value);
		}
		if (rc < 0)
			k->clock_failed = 1;
		o += (uint64_t)n;
	}
	if (k->last_lazy && o >= k->last_off)
		last_resolved(k);
	k->tm_off = to;
}

/* The flow's time (last_tsc, last_valid) as the walk took it. */
static void flow_sync(struct walk *k)
{
	if (k->last_lazy)
		clock_catch_up(k, k->last_off);
}

/* The clock at segment offset at, the walk's position or the start of
 * the packet it read last (which the caller feeds): no longer lazy. */
static void clock_sync_at(struct walk *k, uint64_t at)
{
	if (k->lazy) {
		clock_catch_up(k, at);
		k->lazy = 0;
	}
}

static void clock_sync(struct walk *k)
{
	if (k->lazy)
		clock_sync_at(k, pkt_offset(k));
}

/* An MTC or CYC packet at segment offset at (or a packet boundary
 * before it with no timing packet between) passed over. */
static inline void clock_skip(struct walk *k, uint64_t at)
{
	if (!k->lazy) {
		k->lazy = 1;
		k->tm_off = at;
	}
}

/* A timing packet p (header: in PSB+): fed to the clock.  Returns 0,
 * 1 when p is none, WALK_FAIL when libipt must decide. */
static int timing_packet(struct walk *k, const struct pt_packet *p, int header)
{
	int rc;

	/* the packets before p first (the walk is lazy outside PSB+ only,
	 * k->off is p's end) */
	if (k->lazy)
		clock_sync_at(k, pkt_offset(k) - p->size);
	switch (p->type) {
	case ppt_tsc:
		rc = ftime_tsc(&k->tm, &k->tcfg, p->payload.tsc.tsc, header);
		set_time(k, p->payload.tsc.tsc);
		break;
	case ppt_tma:
		if (k->fq->no_mtc)
			return WALK_FAIL;  /* not what clock_carry assumed */
		rc = ftime_tma(&k->tm, &k->tcfg, p->payload.tma.ctc, p->payload.tma.fc);
		break;
	case ppt_mtc:
		if (k->fq->no_mtc)
			return WALK_FAIL;
		k->clock_own |= k->cyc_seen;
		k->timing_seen = 1;
		rc = ftime_mtc(&k->tm, &k->tcfg, p->payload.mtc.ctc);
		break;
	case ppt_cyc:
		k->cyc_seen = k->timing_seen = 1;
		/* SKD007: a CYC overlapping an OVF, which libipt decodes as
		 * the OVF */
		if (cyc_skd007(p) && k->off_valid && k->off < k->seg->end - k->seg->start &&
		    k->seg->data[k->off] == 0xf3)
			return WALK_FAIL;
		if (!k->clock_carried) {
			/* the packet's end: the walk's offset, or libipt's
			 * in PSB+ (walk_start reads it) */
			uint64_t end = k->off;

			if (!k->off_valid && pt_pkt_get_offset(k->pkt, &end) < 0)
				return WALK_FAIL;
			if (clock_carry(k, end - (uint64_t)p->size) < 0)
				return WALK_FAIL;
		}
		rc = ftime_cyc(&k->tm, &k->tcfg, p->payload.cyc.value);
		break;
	case ppt_cbr:
		/* outside PSB+ a frequency change, and in libipt an event
		 * that takes the time there */
		if (!header)
			return WALK_FAIL;
		rc = ftime_cbr(&k->tm, &k->tcfg, p->payload.cbr.ratio, header);
		break;
	default:
		return 1;
	}
	/* the memo replays a run's bytes without walking them: timing
	 * packets inside only where only the clock needs them (it feeds
	 * those), and no TSC (it bumps the epoch) */
	if (!clock_free(k) || p->type == ppt_tsc || p->type == ppt_tma)
		k->rec = 0;
	return rc < 0 ? WALK_FAIL : 0;
}

/* An MTC packet outside PSB+ at segment offset at: timing_packet's
 * case of it, inline (in traces with MTC one comes between most TNT
 * packets); passed over where the clock is lazy.  Returns 0 or
 * WALK_FAIL. */
static inline int mtc_packet(struct walk *k, uint8_t ctc, uint64_t at)
{
	if (k->fq->no_mtc)
		return WALK_FAIL;  /* not what clock_carry assumed */
	k->clock_own |= k->cyc_seen;
	k->timing_seen = 1;
	if (clock_free(k)) {
		clock_skip(k, at);
		return 0;
	}
	if (ftime_mtc_fast(&k->tm, &k->tcfg, ctc) < 0)
		return WALK_FAIL;
	k->rec = 0;
	return 0;
}

/* A CYC packet at segment offset at, most of a cycle-accurate trace's
 * packets: passed over where the clock is lazy, fed inline where the
 * clock runs on (its calibration carried into the segment), unless it
 * is an SKD007 lookalike.  Returns 1 when done, 0 to leave it to
 * timing_packet, WALK_FAIL. */
static inline int cyc_packet(struct walk *k, const struct pt_packet *p, uint64_t at)
{
	if (__builtin_expect(cyc_skd007(p), 0))
		return 0;
	if (clock_free(k)) {
		k->cyc_seen = k->timing_seen = 1;
		clock_skip(k, at);
		return 1;
	}
	if (__builtin_expect(!k->clock_carried, 0))
		return 0;
	k->cyc_seen = k->timing_seen = 1;
	return ftime_cyc(&k->tm, &k->tcfg, p->payload.cyc.value) < 0 ? WALK_FAIL : 1;
}

/* ------------------------------------------------------------------ */
/* Packets and TNT bits                                                */

uint64_t decompress_ip(uint64_t *last_ip, const struct pt_packet_ip *pip, int *ok)
{
	uint64_t ip = pip->ip, last = *last_ip;

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
	*last_ip = ip;
	return ip;
}

/* Reads the next packet that matters for the flow into k->peek, handling
 * timing and mode packets on the way.  Returns 1 with a packet, 0 at the
 * end of the segment, WALK_FAIL on anything unusual.
 *
 * Packets that bind an event to an instruction are libipt's to place:
 * a PIP (paging) binds to the MOV CR3, VMLAUNCH/VMRESUME or far branch
 * that wrote CR3, a VMCS packet to its VMPTRLD, and libipt decodes on to
 * that instruction even where no packet follows (at the next PSB, at the
 * end of the trace).  Skipping them lost the paging event, the
 * instructions up to its binding instruction, and what libipt found
 * there (an error, code that is not mapped).  A MODE.Exec takes effect at
 * the IP of the TIP or TIP.PGE after it; anything else after it is
 * libipt's too. */
static __attribute__((noinline)) int fetch_packet(struct walk *k)
{
	uint64_t len = k->seg->end - k->seg->start;
	int mode_change = 0;

	for (;;) {
		uint64_t off = pkt_offset(k);
		int n;

		/* the decoder's buffer ends where the segment does */
		if (off >= len) {
			k->have_peek = -1;
			return mode_change ? WALK_FAIL : 0;
		}
		/* the common packets from their bytes; libipt's decoder
		 * catches up (pkt_stale) when it reads the next other one */
		n = fastpt_pkt_read(k->seg->data + off, len - off, &k->peek);
		if (n) {
			k->off = off + (uint64_t)n;
			k->pkt_stale = 1;
		} else {
			int rc;

			if (k->pkt_stale) {
				if (pt_pkt_sync_set(k->pkt, off) < 0)
					return WALK_FAIL;
				k->pkt_stale = 0;
			}
			rc = pt_pkt_next(k->pkt, &k->peek, sizeof(k->peek));
			if (rc == -pte_eos) {
				k->have_peek = -1;
				k->off_valid = 0;
				return mode_change ? WALK_FAIL : 0;
			}
			if (rc < 0)
				return WALK_FAIL;
			k->off = off + k->peek.size;
		}
		k->off_valid = 1;
		switch (k->peek.type) {
		case ppt_pad:
		case ppt_mnt:
			continue;
		case ppt_mtc:
			if (mtc_packet(k, k->peek.payload.mtc.ctc, k->off - 2))
				return WALK_FAIL;
			continue;
		case ppt_cyc:
			/* timing_packet for the first CYC of the segment
			 * and SKD007 */
			n = cyc_packet(k, &k->peek, k->off - k->peek.size);
			if (n < 0)
				return WALK_FAIL;
			if (n) {
				if (!clock_free(k))
					k->rec = 0;
				continue;
			}
			/* fall through */
		case ppt_tsc:
		case ppt_tma:
		case ppt_cbr:
			if (timing_packet(k, &k->peek, 0))
				return WALK_FAIL;
			continue;
		case ppt_mode:
			if (k->peek.payload.mode.leaf == pt_mol_exec) {
				int m = pt_get_exec_mode(&k->peek.payload.mode.bits.exec);

				/* two before one TIP: libipt's to report; a
				 * mode the segment's PSB+ did not give is the
				 * one libipt knows from before */
				if (k->mode_pending ||
				    (!k->mode_known && k->seg != k->fq->segs))
					return WALK_FAIL;
				clock_sync(k);
				k->mode_pending = 1;
				k->mode_next = intelpt_map_mode(m);
				k->mode_valid = k->tm.have_tsc;
				k->mode_tsc = k->tm.tsc;
				mode_change = 1;
				continue;
			}
			/* MODE.TSX: transactions need libipt's handling */
			return WALK_FAIL;
		case ppt_tnt_8:
		case ppt_tnt_64:
		case ppt_tip_pgd:
		case ppt_fup:
			if (mode_change)
				return WALK_FAIL;
			/* fall through */
		case ppt_tip:
		case ppt_tip_pge:
			k->have_peek = 1;
			k->peek_event = mode_change || (k->peek.type != ppt_tnt_8 &&
							k->peek.type != ppt_tnt_64 &&
							k->peek.type != ppt_tip);
			return 1;
		default:
			/* pip, vmcs (see above), psb inside a segment, ovf,
			 * ptw, power, stop, ... */
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

/* Takes the lookahead packet (TNT, TIP, an event's): the flow's time is
 * the clock's there. */
static inline void consume(struct walk *k)
{
	k->have_peek = 0;
	take_time(k);
}

/* The bytes tnt_merge_lazy reads: TNT bits appended to *tnt (*ntnt of
 * them), *taken: after the last TNT, *cyc: a CYC seen, *own: an MTC
 * after one, and with track *first: the first MTC or CYC.  Returns where
 * it stopped. */
static inline __attribute__((always_inline)) const uint8_t *
merge_bytes(const uint8_t *p, const uint8_t *e, int no_mtc, int track,
	    const uint8_t **first, const uint8_t **taken, uint64_t *tnt,
	    int *ntnt, int *cyc, int *own)
{
	while (p < e) {
		uint8_t b = *p;

		if ((b & 3) == 3) {                    /* CYC */
			const uint8_t *q = p + 1;

			if (b & 4) {
				do {
					if (q >= e || q - p > 8)
						return p;  /* cut short */
				} while (*q++ & 1);
				/* a 2-byte CYC of value 0x20-0x3f */
				if (q - p == 2 && p[1] == 2)
					return p;
			}
			if (track && !*first)
				*first = p;
			*cyc = 1;
			p = q;
		} else if (b == 0x59) {                /* MTC */
			if (e - p < 2 || no_mtc)
				return p;
			if (track && !*first)
				*first = p;
			*own |= *cyc;
			p += 2;
		} else if (!(b & 1) && b) {            /* TNT */
			uint64_t v = b >> 1;
			int bits, size = 1;

			if (b == 2) {                  /* long TNT */
				if (e - p < 8 || p[1] != 0xa3)
					return p;
				v = fastpt_long_tnt_payload(p);
				if (!v)
					return p;
				size = 8;
			}
			bits = fastpt_tnt_bits(v);
			if (!bits || *ntnt + bits > 64)
				return p;
			*tnt |= (v & ~(1ull << bits)) << (64 - *ntnt - bits);
			*ntnt += bits;
			p += size;
			*taken = p;
		} else if (!b) {                       /* PAD */
			p++;
		} else {
			return p;
		}
	}
	return p;
}

/* tnt_merge's loop: reads PAD, MTC, CYC and TNT packets from their
 * bytes (as fastpt_pkt_read), passing the MTC and CYC packets over for
 * the lazy clock, the flow's time taken (where) at each TNT.  Stops
 * before any other packet, an SKD007 lookalike, an MTC of a queue
 * without MTC, a TNT whose bits do not fit, or the end (len). */
static void tnt_merge_lazy(struct walk *k, uint64_t len)
{
	const uint8_t *d = k->seg->data, *p = d + k->off, *e = d + len;
	const uint8_t *first = NULL, *taken = NULL;
	uint64_t tnt = k->tnt;
	int ntnt = k->ntnt, cyc = k->cyc_seen, own = 0, was_lazy = k->lazy;

	/* lazy already (the common case): where it began is known */
	if (was_lazy)
		p = merge_bytes(p, e, k->fq->no_mtc, 0, &first, &taken, &tnt,
				&ntnt, &cyc, &own);
	else
		p = merge_bytes(p, e, k->fq->no_mtc, 1, &first, &taken, &tnt,
				&ntnt, &cyc, &own);
	k->cyc_seen = cyc;
	k->clock_own |= own;
	if (first)
		clock_skip(k, (uint64_t)(first - d));
	if (taken) {
		if (was_lazy || (first && first < taken)) {
			k->last_lazy = 1;
			k->last_off = (uint64_t)(taken - d);
		} else {
			/* no timing packet before it passed over */
			k->last_tsc = k->tm.tsc;
			k->last_valid = k->tm.have_tsc;
			k->now_stale = 1;
		}
	}
	if (p != d + k->off) {
		k->off = (uint64_t)(p - d);
		k->pkt_stale = 1;
	}
	k->tnt = tnt;
	k->ntnt = ntnt;
}

/* Where only events read the flow's time (clock_free) and timing packets
 * come between TNTs, TNT packets with only PAD, MTC and CYC between them
 * are one run of bits: libipt takes the time at each, but events wait
 * for no bit pending, so only the last one's is read.  Reads on after a
 * TNT packet, passing the timing packets over for the lazy clock as
 * fetch_packet does, and appends the next TNT packets' bits while they
 * fit; stops before anything else.  Returns 0 or WALK_FAIL. */
static int tnt_merge(struct walk *k)
{
	const uint8_t *d = k->seg->data;
	uint64_t len = k->seg->end - k->seg->start;

	for (;;) {
		struct pt_packet pk;
		int n, rc;

		tnt_merge_lazy(k, len);
		if (k->off >= len)
			return 0;
		/* what the loop stopped at: an SKD007 lookalike is
		 * timing_packet's; the MTC of a queue without MTC fails */
		n = fastpt_pkt_read(d + k->off, len - k->off, &pk);
		if (!n || (pk.type != ppt_cyc && pk.type != ppt_mtc))
			return 0;
		if (pk.type == ppt_mtc)
			return mtc_packet(k, pk.payload.mtc.ctc, k->off) ? WALK_FAIL : 0;
		rc = cyc_packet(k, &pk, k->off);
		if (rc < 0)
			return WALK_FAIL;
		k->off += (uint64_t)n;
		k->pkt_stale = 1;
		if (!rc && timing_packet(k, &pk, 0))
			return WALK_FAIL;
	}
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
	if (k->timing_seen && clock_free(k) && k->off_valid && tnt_merge(k))
		return WALK_FAIL;
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

/* ------------------------------------------------------------------ */
/* Tracing on and off                                                  */

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
	k->at.ip = decompress_ip(&k->last_ip, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok != 1)
		return WALK_FAIL;
	k->enabled = 1;
	/* a new trace from here: nothing compressed refers to before */
	update_context(k);
	event(k, PTD_EV_ENABLED, k->at.ip);
	mode_taken(k, k->at.ip);
	return 0;
}

/* The next segment's PSB+ (its status events): libipt takes its time
 * once the flow has no packet left before it. */
static void next_psb_time(struct walk *k)
{
	size_t si = (size_t)(k->seg - k->fq->segs);

	if (si + 1 >= k->fq->nsegs || !k->fq->segs[si + 1].has_tsc)
		return;
	if (clock_free(k)) {
		/* nothing follows the time: no need to know the last */
		k->last_tsc = k->fq->segs[si + 1].tsc;
		k->last_valid = 1;
		k->last_lazy = 0;
		k->now_stale = 1;
		return;
	}
	if (!k->last_valid || k->last_tsc != k->fq->segs[si + 1].tsc)
		time_taken(k, 1, k->fq->segs[si + 1].tsc);
}

/* After a TIP.PGD libipt has the next event (TIP.PGE, or the next PSB's)
 * and its time: the flow's from there on.  Called after the disable is
 * reported: it ends the flow of the thread that ran it, so a thread
 * switch by that time comes after it (as perf has it).  Returns 0 or
 * WALK_FAIL. */
static int disable_lookahead(struct walk *k)
{
	int rc = peek_packet(k);

	if (rc < 0)
		return WALK_FAIL;
	if (rc == 0)
		next_psb_time(k);
	else if (k->peek_event)
		take_time(k);
	return 0;
}

/* Tracing stops at a branch (TIP.PGD): the branch left the traced range
 * (IP filters, or a change to a CPL that is not traced). */
static int branch_disable(struct walk *k)
{
	struct ptd_event *ev;
	uint64_t to, pgd_tsc;
	int ok, pgd_valid;

	to = decompress_ip(&k->last_ip, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok < 0 || k->ntnt)
		return WALK_FAIL;
	clock_sync(k);
	pgd_valid = k->tm.have_tsc;
	pgd_tsc = k->tm.tsc;
	ev = event(k, PTD_EV_DISABLED, ok ? to : 0);
	event_time(k, ev, pgd_valid, pgd_tsc);
	if (ev && !ok)
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
	if (disable_lookahead(k))
		return WALK_FAIL;
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
		*ip = k->at.ip;
		return rc;
	}
	if (k->peek.type != ppt_tip)
		return WALK_FAIL;
	*ip = decompress_ip(&k->last_ip, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok != 1)
		return WALK_FAIL;
	mode_taken(k, *ip);
	return 0;
}

/* After a direct jump or call to target: a TIP.PGD with that IP says the
 * branch left the traced range.  Returns 0 (nothing), WALK_REENABLED
 * (k->at.ip is where tracing resumed), WALK_DONE or WALK_FAIL. */
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
	/* with IP filters, libipt may bind one without IP to this branch
	 * (SKL014): its to decide */
	if (k->fb->skl014 && k->peek.payload.ip.ipc == pt_ipc_suppressed)
		return WALK_FAIL;
	pip = k->peek.payload.ip;
	if (decompress_ip(&k->last_ip, &pip, &ok) != target || ok != 1) {
		k->last_ip = saved;
		return 0;
	}
	k->last_ip = saved;
	rc = branch_disable(k);
	return rc ? rc : WALK_REENABLED;
}

/* ------------------------------------------------------------------ */
/* Blocks and records                                                  */

static struct fblock *get_block(struct walk *k)
{
	struct fblock *b = bcache_find(&k->w->cache, &k->at);

	if (b) {
		k->w->hits++;
		return b;
	}
	b = fbuilder_block(&k->w->build, &k->w->cache, &k->at);
	if (b)
		k->w->built++;
	/* valid now, but maybe not over the whole span the walk cannot
	 * tell apart: then the exact time decides, which is libipt's */
	return b && fblock_valid(b, &k->at) ? b : NULL;
}

/* The block at k->at.ip through a successor slot of the previous block: a
 * pointer chase instead of a hash lookup on the hot path. */
static inline struct fblock *follow(struct walk *k, struct fblock **slot)
{
	struct fblock *nb = *slot;

	if (__builtin_expect(nb && nb->ip == k->at.ip && fblock_valid(nb, &k->at), 1))
		return nb;
	nb = get_block(k);
	*slot = nb;
	return nb;
}

/* The block at k->at.ip after an indirect branch or return. */
static inline struct fblock *follow_indirect(struct walk *k, struct fblock **slot)
{
	struct fblock **tc, *nb = *slot;

	if (nb && nb->ip == k->at.ip && fblock_valid(nb, &k->at))
		return nb;
	tc = bcache_tslot(&k->w->cache, k->at.ip);
	nb = *tc;
	if (!nb || nb->ip != k->at.ip || !fblock_valid(nb, &k->at)) {
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
	s->ctxs[s->nctx].pid = k->ev_pid;
	s->ctxs[s->nctx].tid = k->ev_tid;
	s->ctxs[s->nctx].time = flow_now(k) == IMGSTORE_TIME_UNKNOWN ? 0 : k->now;
	s->ctxs[s->nctx].tsc = k->last_valid ? k->last_tsc : 0;
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
	if (s->nrecs == s->rcap && seg_grow_recs(s))
		return WALK_FAIL;
	r = &s->recs[s->nrecs++];
	r->priv = b;
	r->ninsn = n;
	r->ctx = k->ctx;
	s->ninsn += n;
	return 0;
}

/* Runs of blocks that need no packet while TNT bits are pending, the
 * bulk of most traces: conditional branches, direct jumps and calls,
 * and returns compressed to a taken bit; state in locals, one compare to
 * trust a cached successor.  With a bit pending no TIP.PGD can follow a
 * direct branch (direct_disable).  Stops before the block that needs
 * anything else (returned, not yet emitted), keeping at least one bit
 * for the general loop; a block that would end a never-ending loop is
 * the general loop's too. */
static inline __attribute__((always_inline)) struct fblock *
flow_run_body(struct walk *k, struct fblock *b, int recs)
{
	struct segment *s = k->seg;
	struct ptd_block *out = s->recs + s->nrecs;
	struct ptd_block *end = s->recs + s->rcap;
	uint64_t tnt = k->tnt, ninsn = s->ninsn, epoch = *k->at.epoch;
	uint32_t ctx = k->ctx, free_insns = k->free_insns;
	int ntnt = k->ntnt, impure = 0;

	while (ntnt > 1 && (!recs || out < end)) {
		struct fblock *nb;

		if (b->kind == FB_COND) {
			nb = b->succ[tnt >> 63];
			if (!nb || nb->epoch != epoch)
				break;  /* the general loop looks it up */
			tnt <<= 1;
			ntnt--;
			free_insns = 0;
		} else if (b->kind == FB_RET) {
			unsigned top = k->rs_top ? k->rs_top - 1 : RS_SIZE;

			/* succ[0]: the last target, like a branch predictor */
			nb = b->succ[0];
			if (!(tnt >> 63) || k->rs_top == k->rs_bottom || !nb ||
			    nb->ip != k->rs[top] || nb->epoch != epoch)
				break;
			k->rs_top = top;
			tnt <<= 1;
			ntnt--;
			free_insns = 0;
			impure = 1;
		} else if (b->kind == FB_CALL || b->kind == FB_JUMP ||
			   b->kind == FB_CALL_NEXT || b->kind == FB_FALL) {
			nb = b->succ[1];
			if (!nb || nb->epoch != epoch ||
			    free_insns + b->ninsn >= INTELPT_NELOOP_INSNS)
				break;
			free_insns += b->ninsn;
			if (b->kind == FB_CALL) {
				rs_push(k, b->next_ip);
				impure = 1;
			}
		} else {
			break;
		}
		if (recs) {
			out->priv = b;
			out->ninsn = b->ninsn;
			out->ctx = ctx;
			out++;
		}
		ninsn += b->ninsn;
		b = nb;
	}
	/* calls and returns: not a run the memo replays */
	if (impure)
		k->rec = 0;
	s->nrecs = (size_t)(out - s->recs);
	s->ninsn = ninsn;
	k->free_insns = free_insns;
	k->tnt = tnt;
	k->ntnt = ntnt;
	k->at.ip = b->ip;
	return b;
}

/* Count-only with no sink, and no run being recorded for the memo,
 * nobody reads the block records (count_trim drops them unread, the
 * counts are s->ninsn): the run writes none, a third of its stores. */
static struct fblock *flow_run(struct walk *k, struct fblock *b)
{
	if (k->ctx_dirty)
		return b;
	if (!k->rec && k->fb->count_only && !k->w->sink)
		return flow_run_body(k, b, 0);
	return flow_run_body(k, b, 1);
}

/* Count-only: nobody reads the block records, so the array is reused
 * from its start once it holds COUNT_TRIM of them (records stay in L1/L2
 * instead of streaming through memory: on TNT-dense traces they cost -j2
 * much of its time); with a sink (a reader's, the trace index), it reads
 * them first.  A run being recorded for the memo keeps its records,
 * moved to the front. */
#define COUNT_TRIM 512

static void count_trim(struct walk *k)
{
	struct segment *s = k->seg;
	struct worker *w = k->w;
	size_t keep = 0;

	if (k->rec) {
		keep = s->nrecs - k->rec_nrecs;
		if (keep > MEMO_RECS) {
			k->rec = 0;  /* too long for the memo anyway */
			keep = 0;
		}
	}
	/* a sink reads them first (the memo's run, kept, later) */
	if (w->sink && !w->sink_err)
		w->sink_err = w->sink(w->sink_arg, s->recs, s->nrecs - keep);
	if (keep) {
		memmove(s->recs, s->recs + k->rec_nrecs, keep * sizeof(*s->recs));
		k->rec_nrecs = 0;
	}
	s->nrecs = keep;
}

/* ------------------------------------------------------------------ */
/* Asynchronous events and the segment's end                           */

/* Walks from k->at.ip to `at` on the straight path ahead (flow that needs
 * no packet).  Returns 0 or WALK_FAIL. */
static int walk_to(struct walk *k, uint64_t at)
{
	for (int guard = 0; k->at.ip != at; guard++) {
		struct fblock *b = get_block(k);
		int idx;

		if (!b || guard > 4096)
			return WALK_FAIL;
		idx = fblock_insn_index(b, at);
		if (idx >= 0) {
			if (emit(k, b, (uint32_t)idx))
				return WALK_FAIL;
			k->at.ip = at;
			break;
		}
		/* only flow that needs no packet may lie before the event */
		if (emit(k, b, b->ninsn))
			return WALK_FAIL;
		if (b->kind == FB_JUMP || b->kind == FB_CALL_NEXT || b->kind == FB_FALL)
			k->at.ip = b->target;
		else if (b->kind == FB_CALL) {
			rs_push(k, b->next_ip);
			k->at.ip = b->target;
		} else
			return WALK_FAIL;
	}
	return 0;
}

/* Handles a FUP: the asynchronous event happens at its IP, which lies on
 * the straight path ahead.  Walks there, then applies what follows the
 * FUP (TIP: async branch; TIP.PGD: tracing off). */
static int async_event(struct walk *k)
{
	struct ptd_event *ev;
	uint64_t at, to, fup_tsc;
	int ok, rc, fup_valid;

	clock_sync(k);
	fup_tsc = k->tm.tsc;
	fup_valid = k->tm.have_tsc;

	/* libipt times the event at its FUP */
	at = decompress_ip(&k->last_ip, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok != 1)
		return WALK_FAIL;
	/* libipt has the event once its TIP is read: from there on its
	 * time is the flow's, also on the way to the FUP's IP */
	rc = peek_packet(k);
	/* a mode for the TIP after the FUP: the way to the FUP's IP is in
	 * the old one, libipt's events bound to both are its to order */
	if (rc <= 0 || k->mode_pending)
		return WALK_FAIL;
	take_time(k);
	if (walk_to(k, at))
		return WALK_FAIL;
	if (k->peek.type == ppt_tip) {
		to = decompress_ip(&k->last_ip, &k->peek.payload.ip, &ok);
		consume(k);
		if (ok != 1)
			return WALK_FAIL;
		ev = event(k, PTD_EV_ASYNC, at);
		event_time(k, ev, fup_valid, fup_tsc);
		if (ev)
			ev->addr = to;
		k->at.ip = to;
		return 0;
	}
	if (k->peek.type != ppt_tip_pgd)
		return WALK_FAIL;
	to = decompress_ip(&k->last_ip, &k->peek.payload.ip, &ok);
	consume(k);
	if (ok < 0)
		return WALK_FAIL;
	ev = event(k, PTD_EV_DISABLED, at);
	event_time(k, ev, fup_valid, fup_tsc);
	if (ev) {
		ev->addr = ok ? to : 0;
		if (!ok)
			ev->flags |= PTD_EVF_IP_SUPPRESSED;
	}
	if (disable_lookahead(k))
		return WALK_FAIL;
	return wait_enable(k);
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

/* Out of packets: the flow runs on to the next PSB's IP.  Returns
 * WALK_DONE, WALK_FAIL, or 0 with *bp the next block, which ends in a
 * branch that needs no packet. */
static int run_to_stop(struct walk *k, struct fblock **bp)
{
	size_t si = (size_t)(k->seg - k->fq->segs);
	uint64_t stop_ip = 0;
	struct fblock *b;
	int idx;

	/* end of the trace: the reference path stops once the last packet
	 * is used */
	if (si + 1 >= k->fq->nsegs)
		return WALK_DONE;
	/* libipt reads on through the next PSB+ and takes the time there
	 * before the flow reaches the PSB's IP */
	next_psb_time(k);
	/* tracing is off at the next PSB, yet on here with no packet saying
	 * it stopped */
	if (!seg_stop_ip(k, &stop_ip))
		return WALK_FAIL;
	if (k->at.ip == stop_ip)
		return WALK_DONE;
	b = get_block(k);
	if (!b)
		return WALK_FAIL;
	idx = fblock_insn_index(b, stop_ip);
	if (idx >= 0)
		return emit(k, b, (uint32_t)idx) ? WALK_FAIL : WALK_DONE;
	if (b->kind != FB_JUMP && b->kind != FB_CALL &&
	    b->kind != FB_CALL_NEXT && b->kind != FB_FALL)
		return WALK_FAIL;
	*bp = b;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The run memo: recording and replaying runs (fastpt_memo.h)          */

static void memo_begin(struct walk *k, struct fblock *start)
{
	struct bcache *c = &k->w->cache;

	if (!c->memo && !(c->memo = memo_table_new()))
		return;
	k->rec = 1;
	k->rec_tip = 0;
	k->rec_start = start;
	k->rec_off = pkt_offset(k);
	k->rec_last_ip = k->last_ip;
	k->rec_epoch = *k->at.epoch;
	k->rec_nrecs = k->seg->nrecs;
	k->rec_nevents = k->seg->nevents;
}

/* The run recorded since memo_begin ends here, at block next. */
/* Trace bytes p[0, avail) as the memo keys runs: their packets without
 * PAD, MTC and CYC (these only where only the clock reads them: they do
 * not change the flow), at most MEMO_BYTES of them; raw[n] is where the
 * packet that ends at key byte n ends in p.  The same key from the same
 * state walks the same way; the clock is fed the packets passed over.
 * Returns the key's length; *timed: MTC or CYC were passed over. */
#define MEMO_RAW_MAX 1024
static unsigned memo_key(const struct walk *k, const uint8_t *p, uint64_t avail,
			 uint8_t *key, uint16_t *raw, int *timed)
{
	int free = clock_free(k);
	uint64_t o = 0;
	unsigned n = 0;

	*timed = 0;
	raw[0] = 0;
	while (o < avail && o < MEMO_RAW_MAX) {
		struct pt_packet pk;
		int len = fastpt_pkt_read(p + o, avail - o, &pk);

		if (!len)
			break;
		if (pk.type == ppt_mtc || pk.type == ppt_cyc) {
			if (!free)
				break;
			*timed = 1;
		} else if (pk.type != ppt_pad) {
			if (n + (unsigned)len > MEMO_BYTES)
				break;
			memcpy(key + n, p + o, (size_t)len);
			n += (unsigned)len;
			raw[n] = (uint16_t)(o + (uint64_t)len);
		}
		o += (uint64_t)len;
	}
	return n;
}

/* What the MTC and CYC packets a run's key passed over do to the clock,
 * gathered as the key is read: where the first starts in the run's
 * bytes, and which kinds there were (flags).  Keyed runs are replayed
 * only where the clock is lazy, so the packets need not be read again:
 * the clock is fed them from that offset when a time is asked for. */
#define TIMED_MTC 1u          /* an MTC */
#define TIMED_CYC 2u          /* a CYC */
#define TIMED_OWN 4u          /* an MTC after a CYC of the run */
#define TIMED_ODD 8u          /* a CYC timing_packet must look at (SKD007) */
struct memo_timed {
	unsigned flags;           /* 0: no timing packet passed over */
	uint64_t first;
};

/* The MTC or CYC packet of len bytes at p, at offset o of its run,
 * added to what the run's timing packets do (tp). */
static inline __attribute__((always_inline)) void
memo_timed_add(struct memo_timed *tp, const uint8_t *p, unsigned len, uint64_t o)
{
	if (!tp->flags)
		tp->first = o;
	if (p[0] == 0x59)
		tp->flags |= tp->flags & TIMED_CYC ? TIMED_MTC | TIMED_OWN : TIMED_MTC;
	else
		/* cyc_skd007's packet: 2 bytes, value 0x20-0x3f */
		tp->flags |= len == 2 && p[1] == 0x02 ? TIMED_CYC | TIMED_ODD : TIMED_CYC;
}

/* The size of the packet at p (avail bytes left) as memo_find_key reads
 * it, and *cls: 0 a key packet, 1 MTC or CYC, 2 PAD; 0 for a packet the
 * memo does not read (fastpt_pkt_read's packets, sized alike). */
static inline __attribute__((always_inline)) unsigned
memo_pkt_size(const uint8_t *p, uint64_t avail, int *cls)
{
	uint8_t b = p[0];

	if ((b & 3) == 3) {                    /* CYC */
		unsigned n = 1;

		*cls = 1;
		if (b & 4)
			do {
				if (n >= avail || n > 8)
					return 0;
			} while (p[n++] & 1);
		return n;
	}
	if (b == 0x59) {                       /* MTC */
		*cls = 1;
		return avail < 2 ? 0 : 2;
	}
	*cls = 0;
	if (!(b & 1)) {
		if (!b) {                      /* PAD */
			*cls = 2;
			return 1;
		}
		if (b != 2)                    /* short TNT */
			return 1;
		return 0;                      /* long TNT: below */
	}
	switch (b & 0x1f) {
	case 0x0d: case 0x11: case 0x01: case 0x1d: {  /* TIP, PGE, PGD, FUP */
		int n = fastpt_ip_bytes[b >> 5];

		return n < 0 || avail < (uint64_t)n + 1 ? 0 : (unsigned)n + 1;
	}
	default:
		return 0;
	}
}

/* Appends the len key bytes at src (avail bytes readable there) at key
 * byte n of the words k0 (bytes 0-7) and k1 (8-15); n + len <=
 * MEMO_BYTES. */
static inline __attribute__((always_inline)) void
memo_key_add(uint64_t *k0, uint64_t *k1, unsigned n, const uint8_t *src,
	     unsigned len, uint64_t avail)
{
	uint64_t v;

	if (len > 8 || avail < 8) {
		for (unsigned i = 0; i < len; i++, n++)
			if (n < 8)
				*k0 |= (uint64_t)src[i] << (8 * n);
			else
				*k1 |= (uint64_t)src[i] << (8 * (n - 8));
		return;
	}
	v = memo_le(src, 8) & memo_len_mask(len);
	if (n >= 8) {
		*k1 |= v << (8 * (n - 8));
		return;
	}
	*k0 |= v << (8 * n);
	if (n && n + len > 8)
		*k1 |= v >> (8 * (8 - n));
}

/* The stored run from block start with last_ip over the coming bytes
 * p[0, avail) read as memo_key reads them, or NULL; *rawlen: the bytes it covers, *tp: the
 * MTC and CYC packets among them.  Reads only as far as the entry's
 * key. */
static struct memo *memo_find_key(struct memo *m, const struct fblock *start,
				  uint64_t last_ip, const uint8_t *p, uint64_t avail,
				  uint64_t *rawlen, struct memo_timed *tp)
{
	struct memo *e = NULL, *set = NULL;
	uint64_t o = 0, k0 = 0, k1 = 0;
	unsigned n = 0, want = MEMO_MIN;

	tp->flags = 0;
	tp->first = 0;
	while (o < avail && o < MEMO_RAW_MAX) {
		int cls;
		unsigned len = memo_pkt_size(p + o, avail - o, &cls);

		if (!len) {
			struct pt_packet pk;

			/* a long TNT, or nothing the memo reads */
			len = (unsigned)fastpt_pkt_read(p + o, avail - o, &pk);
			if (!len)
				return NULL;
		}
		if (cls == 1) {
			memo_timed_add(tp, p + o, len, o);
			o += len;
			continue;
		}
		if (cls == 2) {
			o += len;
			continue;
		}
		if (n + len > MEMO_BYTES)
			return NULL;
		memo_key_add(&k0, &k1, n, p + o, len, avail - o);
		o += len;
		n += len;
		if (n < want)
			continue;
		if (!e) {
			set = memo_set(m, memo_hash_word(last_ip, (uint32_t)k0));
			for (e = set; e < set + MEMO_WAYS; e++)
				if (e->start == start && e->last_ip_in == last_ip && e->len >= n)
					break;
			if (e == set + MEMO_WAYS)
				return NULL;
			want = e->len;
			if (n < want)
				continue;
		}
		/* the entry's key ends at a packet's end; else a later way's
		 * run as long as the bytes read */
		for (; e < set + MEMO_WAYS; e++)
			if (e->start == start && e->last_ip_in == last_ip && e->len == n &&
			    memo_key_equal(e, k0, k1)) {
				*rawlen = o;
				return e;
			}
		return NULL;
	}
	return NULL;
}

/* memo_prefetch_next for keyed lookups: starts loading the entry the
 * key of the bytes p[0, avail) after e's run maps to (its first
 * MEMO_MIN key bytes past MTC, CYC and PAD; a few packets at most). */
static inline void memo_prefetch_key(struct memo *m, const struct memo *e,
				     const uint8_t *p, uint64_t avail)
{
	uint64_t o = 0, k0 = 0, k1 = 0;
	unsigned n = 0;

	for (int guard = 0; guard < 8 && o < avail; guard++) {
		int cls;
		unsigned len = memo_pkt_size(p + o, avail - o, &cls);

		if (!len)
			return;
		if (!cls) {
			if (n + len > MEMO_BYTES)
				return;
			memo_key_add(&k0, &k1, n, p + o, len, avail - o);
			n += len;
			if (n >= MEMO_MIN) {
				memo_prefetch_set(memo_set(m, memo_hash_word(e->last_ip_out,
									      (uint32_t)k0)));
				return;
			}
		}
		o += len;
	}
}

/* A keyed run as memo_scan_keyed reads it from the bytes. */
struct keyed_run {
	uint64_t k0, k1;          /* the key's words (memo_find_key's) */
	uint64_t raw;             /* the bytes it covers */
	uint64_t last_ip_out;     /* its TIP's IP */
	unsigned n;               /* the key's length */
	struct memo_timed tp;
};

/* memo_scan_run for keyed lookups: the run at p[0, avail) with last_ip
 * read as memo_find_key reads it, up to its first TIP, in one pass over
 * its bytes: its key, the bytes it covers, its timing packets and the
 * TIP's IP, into *r.  0 when the bytes are not such a run (a packet
 * other than PAD, MTC, CYC, short TNT and TIP with an IP, a CYC that
 * SKD007 may have made, too long a key): memo_find_key decides then. */
static inline __attribute__((always_inline)) int
memo_scan_keyed(const uint8_t *p, uint64_t avail, uint64_t last_ip, struct keyed_run *r)
{
	uint64_t o = 0, k0 = 0, k1 = 0, first = 0, ip;
	uint64_t lim = avail < MEMO_RAW_MAX ? avail : MEMO_RAW_MAX;
	unsigned n = 0, flags = 0, ipn;

	/* all in locals: r aliases the bytes for the compiler */
	for (;; o++) {
		uint8_t b;

		if (o >= lim)
			return 0;
		b = p[o];
		if (!(b & 1)) {
			if (b == 2)
				return 0;                /* long TNT and others */
			if (!b)
				continue;                /* PAD: not in the key */
			if (n < 8)                       /* short TNT */
				k0 |= (uint64_t)b << (8 * n);
			else if (n < MEMO_BYTES)
				k1 |= (uint64_t)b << (8 * (n - 8));
			else
				return 0;
			n++;
			continue;
		}
		if ((b & 3) == 3) {                      /* CYC */
			if (!flags)
				first = o;
			flags |= TIMED_CYC;
			if (b & 4) {
				uint64_t c = o;

				do {
					if (++c >= avail || c - o > 8)
						return 0;
				} while (p[c] & 1);
				/* cyc_skd007's packet: memo_find_key's */
				if (c - o == 1 && p[c] == 0x02)
					return 0;
				o = c;
			}
			continue;
		}
		if (b == 0x59) {                         /* MTC */
			if (avail - o < 2)
				return 0;
			if (!flags)
				first = o;
			flags |= flags & TIMED_CYC ? TIMED_MTC | TIMED_OWN : TIMED_MTC;
			o++;
			continue;
		}
		break;
	}
	ipn = (unsigned)fastpt_ip_bytes[p[o] >> 5];
	if ((p[o] & 0x1f) != 0x0d || (int)ipn <= 0 || avail - o < ipn + 1 ||
	    n + ipn + 1 > MEMO_BYTES || n + ipn + 1 < MEMO_MIN)
		return 0;                                /* not a TIP with an IP */
	memo_key_add(&k0, &k1, n, p + o, ipn + 1, avail - o);
	if (avail - o >= 9) {
		static const uint64_t ip_mask[9] = {
			[2] = 0xffff, [4] = 0xffffffff, [6] = 0xffffffffffff, [8] = ~0ull,
		};

		ip = memo_le(p + o + 1, 8) & ip_mask[ipn];
		switch (p[o] >> 5) {
		case 1: ip |= last_ip & ~0xffffull; break;
		case 2: ip |= last_ip & ~0xffffffffull; break;
		case 3: ip = (uint64_t)((int64_t)(ip << 16) >> 16); break;
		case 4: ip |= last_ip & ~0xffffffffffffull; break;
		}
	} else {
		ip = memo_tip_ip(p[o], p + o + 1, ipn, last_ip);
	}
	r->last_ip_out = ip;
	r->k0 = k0;
	r->k1 = k1;
	r->n = n + ipn + 1;
	r->raw = o + ipn + 1;
	r->tp.flags = flags;
	r->tp.first = first;
	return 1;
}

static void memo_store(struct walk *k, struct fblock *next)
{
	const struct segment *s = k->seg;
	size_t nrec = s->nrecs - k->rec_nrecs;
	uint64_t len = pkt_offset(k) - k->rec_off;
	uint8_t key[MEMO_BYTES];
	uint16_t raw[MEMO_BYTES + 1];
	unsigned n;
	int timed;

	k->rec = 0;
	if (!k->rec_tip || *k->at.epoch != k->rec_epoch || s->nevents != k->rec_nevents ||
	    !nrec || nrec > MEMO_RECS || len < MEMO_MIN || len > MEMO_RAW_MAX ||
	    k->free_insns)
		return;
	/* the key covers the run's bytes: a run too long for it, or with a
	 * packet it cannot pass, is not stored; without timing packets the
	 * bytes are the key */
	if (!k->timing_seen) {
		if (len > MEMO_BYTES)
			return;
		memcpy(key, s->data + k->rec_off, (size_t)len);
		n = (unsigned)len;
	} else {
		n = memo_key(k, s->data + k->rec_off, len, key, raw, &timed);
		if (n < MEMO_MIN || raw[n] != len)
			return;
	}
	memo_put(k->w->cache.memo, &(struct memo_run){
		.start = k->rec_start, .next = next,
		.last_ip_in = k->rec_last_ip, .last_ip_out = k->last_ip,
		.bytes = key, .len = n,
		.recs = s->recs + k->rec_nrecs, .nrec = nrec,
	});
}

/* Whether the blocks of a stored run (its records and next) are valid
 * now, as fblock_valid would find each: from where memo_put found them
 * all valid, in the entry's first line. */
static inline int memo_valid(const struct walk *k, const struct memo *e)
{
	const struct fwhere *at = &k->at;

	if (e->mode != at->mode || (e->pid != at->pid && e->pid != IMGSTORE_KERNEL))
		return 0;
	return at->time == IMGSTORE_TIME_UNKNOWN ||
	       (at->time >= e->valid_from && at->time_hi < e->valid_to);
}

/* A replayed run's MTC and CYC packets (tp; its bytes at segment offset
 * off) passed over as mtc_packet and cyc_packet pass them where the
 * clock is lazy (keyed runs are replayed only there).  The caller takes
 * the time at the end of the last such run.  Returns 0, or -1 (nothing
 * changed) for packets the walk must read: an MTC where the queue has
 * none, an SKD007 lookalike. */
static inline int memo_clock(struct walk *k, const struct memo_timed *tp, uint64_t off)
{
	if ((tp->flags & TIMED_ODD) || ((tp->flags & TIMED_MTC) && k->fq->no_mtc))
		return -1;
	if (tp->flags & TIMED_MTC)
		k->clock_own |= k->cyc_seen | !!(tp->flags & TIMED_OWN);
	if (tp->flags & TIMED_CYC)
		k->cyc_seen = 1;
	k->timing_seen = 1;
	clock_skip(k, off + tp->first);
	return 0;
}

/* memo_replay's loop where no record is written and the bytes are the
 * key (count-only, no timing packet seen or the clock needed): few live
 * values, so they stay in registers.  Replays from block *bp with
 * *last_ip at segment offset *off (bytes up to end) while runs are
 * found; returns how many, with *bp, *last_ip, *off, *ninsn (added to)
 * moved past them.  Each run's end and last_ip are read from the bytes
 * (memo_scan_run) as well as from its entry: when they agree, as they
 * do but for runs the scan does not know, the next lookup's address
 * does not wait for this entry to load, so lookups that miss the cache
 * overlap. */
static unsigned memo_replay_plain(struct walk *k, struct memo *m,
				  const struct fblock **bp, uint64_t *last_ipp,
				  uint64_t *offp, uint64_t end, uint64_t *ninsnp)
{
	const uint8_t *data = k->seg->data;
	const struct fblock *b = *bp;
	uint64_t last_ip = *last_ipp, off = *offp, ninsn = 0;
	uint64_t free_insns = k->free_insns;
	unsigned hits = 0;

	while (end - off >= MEMO_MIN) {
		const uint8_t *p = data + off;
		uint64_t avail = end - off, slip = 0;
		struct memo *set = memo_set(m, memo_hash(last_ip, p)), *e;
		unsigned slen = memo_scan_run(p, avail, last_ip, &slip), nlen = slen;
		uint64_t nlip = slip;

		/* copies the compiler cannot see equal the entry's values
		 * once compared: it would take those, waiting for the load */
		__asm__("" : "+r"(nlip), "+r"(nlen));

		e = memo_set_find(set, b, last_ip, p, avail);
		if (!e || !memo_valid(k, e) || free_insns + e->ninsn >= INTELPT_NELOOP_INSNS)
			break;
		free_insns = 0;
		ninsn += e->ninsn;
		b = e->next;
		hits++;
		if (__builtin_expect(e->len != slen || e->last_ip_out != slip, 0)) {
			off += e->len;
			last_ip = e->last_ip_out;
			continue;
		}
		off += nlen;
		last_ip = nlip;
	}
	*bp = b;
	*last_ipp = last_ip;
	*offp = off;
	*ninsnp += ninsn;
	return hits;
}

/* memo_replay's loop for count-only keyed runs (timing packets about,
 * no record written) of the shape memo_scan_keyed reads: each run's
 * bytes are read once, and the next run's set is addressed from them
 * (the TIP's IP read from the bytes, not the entry) and starts loading
 * before this run's entry is compared.  Arguments as memo_replay_plain,
 * and *timed_end where the last run with timing packets ends, *free_insns
 * the walk's (0 after a hit).  Returns the runs replayed; stops at the
 * first run it cannot read or find, for memo_find_key. */
static unsigned memo_replay_keyed(struct walk *k, struct memo *m,
				  const struct fblock **bp, uint64_t *last_ipp,
				  uint64_t *offp, uint64_t end, uint64_t *ninsnp,
				  uint64_t *timed_end, uint64_t *free_insns)
{
	const uint8_t *data = k->seg->data;
	const struct fblock *b = *bp;
	uint64_t last_ip = *last_ipp, off = *offp, ninsn = 0, tend = *timed_end;
	unsigned hits = 0;

	if (*free_insns)
		return 0;
	while (end - off >= MEMO_MIN) {
		const uint8_t *p = data + off;
		struct keyed_run r;
		struct memo *set, *e;
		unsigned slen = 0;

		/* a run without timing packets: its bytes are its key */
		if ((p[0] & 3) != 3 && p[0] != 0x59)
			slen = memo_scan_run(p, end - off, last_ip, &r.last_ip_out);
		if (slen && (e = memo_set_find(memo_set(m, memo_hash(last_ip, p)), b, last_ip,
					       p, end - off)) && e->len == slen) {
			r.raw = slen;
			r.tp.flags = 0;
			r.tp.first = 0;
		} else {
			if (!memo_scan_keyed(p, end - off, last_ip, &r))
				break;
			set = memo_set(m, memo_hash_word(last_ip, (uint32_t)r.k0));
			for (e = set; e < set + MEMO_WAYS; e++)
				if (e->start == b && e->last_ip_in == last_ip && e->len == r.n &&
				    memo_key_equal(e, r.k0, r.k1))
					break;
			if (e == set + MEMO_WAYS)
				break;
		}
		if (!memo_valid(k, e) || e->ninsn >= INTELPT_NELOOP_INSNS)
			break;
		if (r.tp.flags) {
			if (memo_clock(k, &r.tp, off))
				break;
			tend = off + r.raw;
		}
		ninsn += e->ninsn;
		b = e->next;
		hits++;
		/* the same bytes from the same last_ip: the entry's last_ip_out */
		last_ip = r.last_ip_out;
		off += r.raw;
	}
	if (hits)
		*free_insns = 0;
	*timed_end = tend;
	*bp = b;
	*last_ipp = last_ip;
	*offp = off;
	*ninsnp += ninsn;
	return hits;
}

/* Replays the stored runs that follow each other from *nb over the
 * coming trace bytes: after a hit the walk would be back at a run
 * boundary with nothing else to do, so the next lookup follows at once,
 * with the walk's state in locals (and the set the last hit's prefetch
 * hashed).  Count-only with no sink reads no block records (count_trim
 * drops them unread), so none are written then.  Returns the number of
 * runs replayed (the walk moved past them, *nb the last one's
 * successor), 0 to walk normally. */
static int memo_replay(struct walk *k, struct fblock **nb)
{
	struct segment *s = k->seg;
	struct memo *e, *m = k->w->cache.memo, *slot = NULL;
	const struct fblock *b = *nb;
	const uint8_t *data = s->data;
	uint64_t off, end, rawlen, ninsn = 0, last_ip = k->last_ip;
	uint64_t free_insns = k->free_insns;
	int recs = !k->fb->count_only || k->w->sink;
	/* the bytes as they come are the key when no timing packet is
	 * among them (then they are whole packets, the stored run's); with
	 * timing packets about, the key read past them (neither changes
	 * while runs are replayed: only the clock reads what they pass) */
	int keyed = k->timing_seen && clock_free(k);
	struct memo_timed tp = { 0, 0 };
	uint64_t timed_end = 0;   /* where the last run with timing packets ends */
	unsigned hits = 0;

	if (!m || k->ctx_dirty)
		return 0;
	off = pkt_offset(k);
	end = s->end - s->start;
	if (off > end)
		return 0;
	if (!keyed && !recs) {
		hits = memo_replay_plain(k, m, &b, &last_ip, &off, end, &ninsn);
		goto out;
	}
	while (end - off >= MEMO_MIN) {
		const uint8_t *p;
		uint64_t avail;

		if (keyed && !recs) {
			hits += memo_replay_keyed(k, m, &b, &last_ip, &off, end, &ninsn,
						  &timed_end, &free_insns);
			if (end - off < MEMO_MIN)
				break;
		}
		p = data + off;
		avail = end - off;
		if (!keyed) {
			e = memo_set_find(slot ? slot : memo_set(m, memo_hash(last_ip, p)),
					  b, last_ip, p, avail);
			if (!e)
				break;
			rawlen = e->len;
			tp.flags = 0;
		} else {
			/* a run that starts with a timing packet is looked up
			 * by key only (each lookup is a likely cache miss) */
			e = NULL;
			tp.flags = 0;
			if ((p[0] & 3) != 3 && p[0] != 0x59) {
				e = memo_find(m, b, last_ip, p, avail);
				rawlen = e ? e->len : 0;
			}
			if (!e)
				e = memo_find_key(m, b, last_ip, p, avail, &rawlen, &tp);
			if (!e)
				break;
		}
		if (!memo_valid(k, e) || free_insns + e->ninsn >= INTELPT_NELOOP_INSNS)
			break;
		if (!keyed)
			slot = memo_prefetch_next(m, e, p + rawlen, avail - rawlen);
		else
			memo_prefetch_key(m, e, p + rawlen, avail - rawlen);
		if (recs) {
			if (s->nrecs >= COUNT_TRIM && (k->fb->count_only || k->w->sink))
				count_trim(k);
			while (s->nrecs + e->nrec > s->rcap)
				if (seg_grow_recs(s))
					goto out;
		}
		if (tp.flags) {
			if (memo_clock(k, &tp, off))
				break;
			timed_end = off + rawlen;
		}
		if (recs)
			for (unsigned i = 0; i < e->nrec; i++) {
				struct ptd_block *r = &s->recs[s->nrecs++];

				r->priv = e->rec_b[i];
				r->ninsn = e->rec_ninsn[i];
				r->ctx = k->ctx;
			}
		off += rawlen;
		ninsn += e->ninsn;
		last_ip = e->last_ip_out;
		b = e->next;
		free_insns = 0;
		hits++;
	}
out:
	if (!hits)
		return 0;
	if (timed_end) {
		/* the time its TIP takes, as the walk would take it */
		k->off = timed_end;
		k->off_valid = 1;
		take_time(k);
	}
	k->off = off;
	k->off_valid = 1;
	k->pkt_stale = 1;
	s->ninsn += ninsn;
	k->free_insns = 0;
	k->last_ip = last_ip;
	*nb = (struct fblock *)b;
	k->at.ip = b->ip;
	k->w->memo_hits += hits;
	return (int)hits;
}

/* The memo's hit rate is judged over MEMO_WINDOW run boundaries; below
 * 1/16 it is left off for the next MEMO_REST. */
#define MEMO_WINDOW 4096
#define MEMO_REST (16 * MEMO_WINDOW)

/* Between packets with the next block *nb known, after an indirect jump
 * or anything that stopped the recording: a run boundary.  Ends the run
 * being recorded; returns 1 when a stored run was replayed from here,
 * else 0 with a new recording started. */
static inline int run_boundary(struct walk *k, struct fblock **nb)
{
	struct worker *w = k->w;
	unsigned hits;

	if (__builtin_expect(w->memo_off > 0, 0)) {
		w->memo_off--;
		k->rec = 0;
		return 0;
	}
	if (k->rec)
		memo_store(k, *nb);
	if (!k->ctx_dirty && (hits = (unsigned)memo_replay(k, nb))) {
		w->memo_found += hits;
		w->memo_tries += hits;
		return 1;
	}
	/* runs that rarely repeat (cycle counts in the bytes, returns to
	 * many places): lookups and stores only cost, for a while */
	if (++w->memo_tries == MEMO_WINDOW) {
		if (w->memo_found < MEMO_WINDOW / 16)
			w->memo_off = MEMO_REST;
		w->memo_tries = w->memo_found = 0;
	}
	memo_begin(k, *nb);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The walk                                                            */

/* After a far branch (syscall, interrupt return, ...): its TIP, or a
 * TIP.PGD when it left the traced range. */
static int step_far(struct walk *k)
{
	int rc;

	k->rec = 0;
	rc = peek_packet(k);
	if (rc <= 0)
		return WALK_FAIL;
	if (k->peek.type == ppt_tip_pgd)
		return branch_disable(k);
	if (k->peek.type == ppt_tip)
		return tip_target(k, &k->at.ip);
	return WALK_FAIL;
}

/* Walks the segment.  Returns WALK_DONE or WALK_FAIL. */
static int walk_segment(struct walk *k)
{
	int rc;

	if (!k->enabled) {
		rc = wait_enable(k);
		if (rc)
			return rc;
	}
	for (struct fblock *nb = NULL;;) {
		struct fblock *b;

		if (k->seg->nrecs >= COUNT_TRIM && (k->fb->count_only || k->w->sink))
			count_trim(k);
		if (nb && !k->ntnt && !k->have_peek && (!k->rec || k->rec_tip) &&
		    run_boundary(k, &nb))
			continue;
		if (!k->ntnt) {
			rc = peek_packet(k);
			if (rc < 0)
				return WALK_FAIL;
			/* no TNT bit pending and an event next: libipt takes
			 * it now, and its time with it */
			if (rc == 1 && k->peek_event)
				take_time(k);
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
				rc = run_to_stop(k, &nb);
				if (rc)
					return rc;
			}
		}
		b = nb ? nb : get_block(k);
		if (!b)
			return WALK_FAIL;
		nb = NULL;
		if (k->ntnt > 1)
			b = flow_run(k, b);
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
			k->at.ip = b->target;
			nb = follow(k, &b->succ[1]);
			break;
		case FB_JUMP:
		case FB_CALL_NEXT:
		case FB_CALL:
			if (b->kind == FB_CALL) {
				rs_push(k, b->next_ip);
				k->rec = 0;
			}
			k->at.ip = b->target;
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
			k->at.ip = rc ? b->target : b->next_ip;
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
				if (rc != 1 || rs_pop(k, &k->at.ip))
					return WALK_FAIL;
			} else if ((rc = tip_target(k, &k->at.ip))) {
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
			if ((rc = tip_target(k, &k->at.ip)))
				return rc;
			k->rec_tip = 1;
			if (k->enabled)
				nb = follow_indirect(k, &b->succ[0]);
			break;
		case FB_FAR:
			rc = step_far(k);
			if (rc)
				return rc;
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
	ftime_psb(&k->tm, &k->tcfg);
	for (;;) {
		if (pt_pkt_next(k->pkt, &p, sizeof(p)) < 0)
			return WALK_FAIL;
		switch (p.type) {
		case ppt_psbend:
			/* the previous segment's clock goes on without a TSC
			 * here: libipt's time, which this one cannot know */
			if (!k->tm.have_tsc && k->seg != k->fq->segs &&
			    k->seg[-1].has_tsc)
				return WALK_FAIL;
			take_time(k);
			return 0;
		case ppt_fup:
			k->at.ip = decompress_ip(&k->last_ip, &p.payload.ip, &ok);
			if (ok != 1)
				return WALK_FAIL;
			k->enabled = 1;
			break;
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_exec) {
				k->at.mode = intelpt_map_mode(
					pt_get_exec_mode(&p.payload.mode.bits.exec));
				k->mode_known = 1;
				++*k->at.epoch;
			}
			else if (p.payload.mode.bits.tsx.intx ||
				 p.payload.mode.bits.tsx.abrt)
				return WALK_FAIL;
			break;
		case ppt_tsc: case ppt_tma: case ppt_mtc: case ppt_cyc:
		case ppt_cbr:
			if (timing_packet(k, &p, 1))
				return WALK_FAIL;
			break;
		case ppt_pip:
			k->nr = p.payload.pip.nr;
			break;
		case ppt_pad: case ppt_vmcs: case ppt_mnt:
			break;
		default:
			return WALK_FAIL;
		}
	}
}

/* The walk's state at the start of segment seg. */
static void walk_init(struct walk *k, struct worker *w, const struct fqueue *fq,
		      struct segment *seg)
{
	size_t si = (size_t)(seg - fq->segs);

	memset(k, 0, sizeof(*k));
	k->w = w;
	k->fb = w->fb;
	k->fq = fq;
	k->seg = seg;
	k->at.mode = PTD_MODE_64;
	k->at.time = IMGSTORE_TIME_UNKNOWN;
	k->now = IMGSTORE_TIME_UNKNOWN;
	ftime_init(&k->tm);
	/* a sink that reads contexts' times only (FASTPT_SINK_CTX_TIME)
	 * times like count-only decoding */
	k->count_only = w->fb->count_only || (w->sink && w->sink_ctx_time);
	clock_free_update(k);
	k->tcfg.mtc_freq = w->fb->p.mtc_freq;
	k->tcfg.nom_freq = w->fb->p.nom_freq;
	k->tcfg.ctc_eax = w->fb->p.cpuid_0x15_eax;
	k->tcfg.ctc_ebx = w->fb->p.cpuid_0x15_ebx;
	k->at.pid = fq->q.pid;
	k->host_pid = k->ev_pid = fq->q.pid;
	k->tid = k->ev_tid = fq->q.tid;
	k->ctx_dirty = 1;
	k->at.epoch = &w->epoch;
	++w->epoch;
	/* the end of the segment's time: the next PSB's TSC; the last
	 * segment has no bound */
	k->at.time_hi = si + 1 < fq->nsegs && fq->segs[si + 1].has_tsc ?
			intelpt_tsc_to_perf(&w->fb->p, fq->segs[si + 1].tsc) :
			IMGSTORE_FOREVER - 1;
}

int walk_decode_segment(struct worker *w, const struct fqueue *fq,
			struct segment *seg)
{
	struct walk k;
	struct pt_config cfg;
	int rc;

	walk_init(&k, w, fq, seg);
	intelpt_config(&w->fb->p, &cfg, seg->data, seg->data + (seg->end - seg->start));
	k.tcfg.skl168 = cfg.errata.skl168;
	k.pkt = pt_pkt_alloc_decoder(&cfg);
	if (!k.pkt)
		return WALK_FAIL;
	rc = walk_start(&k);
	if (!rc) {
		update_space(&k);
		update_context(&k);
		rc = walk_segment(&k);
	}
	if (k.clock_failed)
		rc = WALK_FAIL;
	/* all its packets read: the clock the next segment starts from
	 * (not fed to the end when lazy: the next segment's runs the clock
	 * over this one if it needs it) */
	clock_end.seg = NULL;
	if (rc == WALK_DONE && !k.lazy && (k.clock_own || k.clock_known)) {
		clock_end.seg = seg;
		clock_end.data = seg->data;
		clock_end.queue = seg->queue;
		clock_end.start = seg->start;
		clock_end.end = seg->end;
		clock_end.tm = k.tm;
	}
	pt_pkt_free_decoder(k.pkt);
	return rc == WALK_DONE ? 0 : WALK_FAIL;
}
