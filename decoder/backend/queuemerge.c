/* SPDX-License-Identifier: MIT */
#include "queuemerge.h"
#include "perfclock.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qm_queue {
	struct backend *be;
	struct perfclock *clock;  /* perf's times for the events, or NULL */
	struct ptd_event ev;    /* the next event, when have */
	uint64_t key;           /* perf's queue timestamp: never goes back */
	int have, done;
	int pre;                /* key is a state of perf's before ev
				 * (perfclock.h); ev's own comes next */
	int ended;              /* the backend has no more events: ev is
				 * none, pre the states perf has after them */
	int clock_lost;         /* the clock parted from the events */
	uint64_t *defer;        /* branch order: perf's states after ev */
	size_t fdefer, ndefer, cdefer;
	/* branch order: the last instruction handed out was a branch */
	int after_branch, bcond;
	int after_overflow;     /* after an overflow: the next instruction
				 * is perf's trace begin */
	uint64_t bkey, bnext;
	int newblock;           /* blocks: ev starts a block with a new key */
	int cont;               /* continues the queue before it in perf's
				 * one queue (a snapshot gap split them) */
};

struct qm_slot {
	uint64_t key;
	size_t q;
};

struct qmerge {
	struct backend base;
	struct qm_queue *q;
	size_t n;
	struct qm_slot *heap;
	size_t hn;
	long run;               /* the queue being decoded, -1 none */
	long last;              /* the queue of the last event handed out */
	long failed;            /* the queue that failed, -1 none */
	int started;
	int branch_order;
	int stick;              /* run's events follow its branch at once */
	int yield;              /* run goes back into the heap first */
	int blocks;             /* queuemerge_set_blocks: perf's cs_etm rule */
	uint64_t *stops;        /* sideband records' TSCs, sorted */
	size_t nstops, stop;    /* stop: the next record perf would handle */
	/* the clock fallback: queues keyed by the decoder's times from some
	 * event on, events handed out so; where it is reported */
	uint64_t fallback_queues, fallback_events;
	int (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* Puts (q, key) at hole pos and moves it up past larger parents. */
static void heap_place(struct qmerge *m, size_t pos, size_t q, uint64_t key)
{
	while (pos) {
		size_t parent = (pos - 1) / 2;

		if (m->heap[parent].key <= key)
			break;
		m->heap[pos] = m->heap[parent];
		pos = parent;
	}
	m->heap[pos].q = q;
	m->heap[pos].key = key;
}

static void heap_add(struct qmerge *m, size_t q, uint64_t key)
{
	heap_place(m, m->hn++, q, key);
}

/* Removes the top: the hole sinks along the smaller child (the right one
 * on equal keys), then the last entry fills it. */
static void heap_pop(struct qmerge *m)
{
	size_t pos = 0, cnt = m->hn--;

	for (;;) {
		size_t l = 2 * pos + 1, r = l + 1;

		if (l >= cnt)
			break;
		if (r >= cnt) {
			m->heap[pos] = m->heap[l];
			return;
		}
		pos = m->heap[l].key < m->heap[r].key ? l : r;
		m->heap[(pos - 1) / 2] = m->heap[pos];
	}
	heap_place(m, pos, m->heap[cnt - 1].q, m->heap[cnt - 1].key);
}

/* perf's queue timestamp after a state: raised to its time, or set to it
 * (a trace start's estimate). */
static void set_key(struct qm_queue *q, uint64_t key, int assign)
{
	if (assign || key > q->key)
		q->key = key;
}

/* q's clock parted from its events at ev, which is keyed by its own
 * time, as are q's events from here on: counted and reported. */
static void fallback(struct qmerge *m, struct qm_queue *q)
{
	char msg[512];
	uint64_t byte;
	int32_t cpu;
	const char *why = perfclock_lost(q->clock, &byte, &cpu);

	m->fallback_queues++;
	if (!m->warn)
		return;
	snprintf(msg, sizeof(msg), "merged timeline: queue %zu (cpu %" PRId32
		 "): perf's timing cannot be followed from trace byte %#" PRIx64
		 " on (%s); its events from there are timed and ordered by the "
		 "decoder's own timestamps, so their times and order across CPUs "
		 "may differ from perf script's (--stats: clock fallback)",
		 (size_t)(q - m->q), cpu, byte, why[0] ? why : "unknown");
	m->warn(m->warn_ctx, msg);   /* out of memory: the count stays */
}

/* Keys q by perf's next state: one before ev (q->pre), or ev's own.
 * Returns -1 when the clock has lost track (use ev's time) or, after
 * the last event, has no more states. */
static int clock_step(struct qmerge *m, struct qm_queue *q)
{
	struct perfclock_at at;
	int rc = perfclock_time(q->clock, &q->ev, &at);

	if (rc) {
		if (rc < 0 && !q->clock_lost && q->ev.kind)
			fallback(m, q);
		q->clock_lost = 1;
		return -1;
	}
	q->pre = at.state;
	set_key(q, at.key, at.assign);
	if (!at.state) {
		/* the time perf script prints the event at */
		q->ev.tsc = at.t;
		if (q->ev.flags & PTD_EVF_TIME_VALID)
			q->ev.time = perfclock_ns(q->clock, at.t);
		if (at.have_task) {
			q->ev.pid = at.pid;
			q->ev.tid = at.tid;
		}
	}
	return 0;
}

/* Reads queue i's next event unless it has one.  0, or a fatal error. */
static int fill(struct qmerge *m, size_t i)
{
	struct qm_queue *q = &m->q[i];
	int rc;

	if (q->have || q->done)
		return 0;
	rc = q->be->next(q->be, &q->ev);
	if (rc == PTD_ERR_END) {
		/* perf's decoder returns states after the last event too */
		if (q->clock && !q->ended) {
			q->ended = 1;
			memset(&q->ev, 0, sizeof(q->ev));
			if (!clock_step(m, q) && q->pre) {
				q->have = 1;
				return 0;
			}
		}
		q->done = 1;
		return 0;
	}
	if (rc < 0) {
		m->failed = (long)i;
		return rc;
	}
	q->have = 1;
	q->ev.queue = (uint32_t)i;
	if (m->blocks && q->ev.tsc && q->ev.tsc != q->key) {
		q->key = q->ev.tsc;   /* may go back */
		q->newblock = 1;
	} else if (!q->clock || clock_step(m, q)) {
		set_key(q, q->ev.tsc, 0);
	}
	return 0;
}

/* perf's first keys: every queue's first timestamp, in queue order
 * (with a clock, the time of the queue's first PSB+, where perf's
 * decoder first returns in sync). */
static int start(struct qmerge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct qm_queue *q = &m->q[i];
		uint64_t first, key;
		int rc;

		if (q->cont)    /* perf's queue decodes it after the one before */
			continue;
		rc = fill(m, i);
		if (rc)
			return rc;
		q->newblock = 0;
		key = q->key;
		if (q->clock && !perfclock_first(q->clock, &first))
			q->key = first;     /* perf pops it once even if empty */
		else if (q->done)
			continue;
		heap_add(m, i, q->key);
		q->key = key;
	}
	m->started = 1;
	return 0;
}

static uint64_t next_stop(const struct qmerge *m)
{
	return m->stop < m->nstops ? m->stops[m->stop] : UINT64_MAX;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Branch order: after ev, do the run's events still follow at once?
 * From a branch instruction up to the event that says where it went.
 * That event may come before its turn (turn: 0), when a timing packet
 * gave it a later time: if it is a branch itself, it waits for its turn
 * to be resolved, as perf lists a branch at its own time. */
static int sticks(const struct ptd_event *ev, int stick, int turn)
{
	switch (ev->kind) {
	case PTD_EV_INSN:
		return ev->iclass != PTD_IC_OTHER && turn;
	case PTD_EV_ENABLED: case PTD_EV_DISABLED: case PTD_EV_ASYNC:
	case PTD_EV_ERROR: case PTD_EV_GAP: case PTD_EV_OVERFLOW:
		return 0;
	default:
		return stick;
	}
}

/* Branch order with perf's clock: perf's states in its branch mode are
 * the taken branches (a state where the branch went, keyed by the
 * branch's time: the view lists a branch when it sees its target), trace
 * starts and stops (the first instruction after an overflow that says
 * where the trace resumes is perf's trace begin), interrupts, and the
 * states before events
 * (perfclock.h); the instructions between them flow on.  Whether ev is
 * such a state, and its key. */
static int branch_state(const struct qm_queue *q, uint64_t *key)
{
	const struct ptd_event *ev = &q->ev;

	switch (ev->kind) {
	case PTD_EV_PAGING: case PTD_EV_EXEC_MODE: case PTD_EV_SWITCH:
	case PTD_EV_TIME:
		return 0;
	default:
		break;
	}
	if (q->after_branch) {
		*key = q->bkey;
		return !q->bcond || ev->kind != PTD_EV_INSN || ev->ip != q->bnext;
	}
	*key = q->key;
	return ev->kind != PTD_EV_INSN || q->after_overflow;
}

/* Branch order: a trace stop or an interrupt that says where the
 * branch before it went is perf's next state after the branch's, keyed
 * by its own time (the queue may stop between the two). */
static int own_state(const struct ptd_event *ev)
{
	return ev->kind == PTD_EV_DISABLED || ev->kind == PTD_EV_ASYNC;
}

/* After handing out ev: is the queue after a branch instruction? */
static void note_branch(struct qm_queue *q, const struct ptd_event *ev)
{
	switch (ev->kind) {
	case PTD_EV_PAGING: case PTD_EV_EXEC_MODE: case PTD_EV_SWITCH:
	case PTD_EV_TIME:
		return;
	default:
		break;
	}
	q->after_overflow = ev->kind == PTD_EV_OVERFLOW && ev->ip &&
			    !(ev->flags & PTD_EVF_IP_SUPPRESSED);
	q->after_branch = ev->kind == PTD_EV_INSN && ev->iclass != PTD_IC_OTHER &&
			  ev->iclass != PTD_IC_UNKNOWN && ev->iclass != PTD_IC_PTWRITE;
	q->bkey = q->key;
	q->bcond = ev->iclass == PTD_IC_COND_JUMP;
	q->bnext = ev->ip + ev->size;
}

static int is_turn(const struct qmerge *m, uint64_t key)
{
	return (!m->hn || key <= m->heap[0].key) && key < next_stop(m);
}

/* The run's queue ended: perf's queue goes on into the next buffer, past
 * the gap, in the same run (intel-pt.c reads the next AUXTRACE buffer,
 * its decoder resynchronizes at the first PSB+ and returns a state
 * there, raising the queue's timestamp).  Returns whether it goes on. */
static int run_continues(struct qmerge *m)
{
	struct qm_queue *q = &m->q[m->run], *nq;
	uint64_t first;

	if ((size_t)m->run + 1 >= m->n || !m->q[m->run + 1].cont)
		return 0;
	nq = q + 1;
	nq->key = q->key;
	if (nq->clock && q->clock)
		perfclock_continue(nq->clock, q->clock);
	if (nq->clock && !perfclock_first(nq->clock, &first))
		set_key(nq, first, 0);
	m->run++;
	if (!is_turn(m, nq->key)) {
		heap_add(m, (size_t)m->run, nq->key);
		m->run = -1;
	}
	return 1;
}

/* Times ev past perf's states before it, keeping their keys to check
 * after ev.  0 or PTD_ERR_NOMEM. */
static int defer_pre(struct qmerge *m, struct qm_queue *q)
{
	while (q->pre) {
		if (q->ndefer + q->fdefer == q->cdefer) {
			size_t c = q->cdefer ? 2 * q->cdefer : 4;
			uint64_t *d = realloc(q->defer, c * sizeof(*d));

			if (!d)
				return PTD_ERR_NOMEM;
			q->defer = d;
			q->cdefer = c;
		}
		q->defer[q->fdefer + q->ndefer++] = q->key;
		if (clock_step(m, q))
			q->pre = 0;
	}
	return 0;
}

static int qm_next(struct backend *b, struct ptd_event *ev)
{
	struct qmerge *m = (struct qmerge *)b;
	uint64_t key;
	int rc, turn, go;

	if (!m->started && (rc = start(m)))
		return rc;
	for (;;) {
		if (m->yield && m->run >= 0) {
			heap_add(m, (size_t)m->run, m->q[m->run].key);
			m->run = -1;
		}
		m->yield = 0;
		if (m->run >= 0) {
			struct qm_queue *q = &m->q[m->run];
			int clocked = q->clock && !q->clock_lost;

			if ((rc = fill(m, (size_t)m->run)))
				return rc;
			if (q->done) {
				if (!run_continues(m))
					m->run = -1;
				m->stick = 0;
				continue;
			}
			if (q->ndefer) {
				/* perf's states after the last event */
				key = q->defer[q->fdefer];
				if (!is_turn(m, key))
					goto stop;
				q->fdefer++;
				if (--q->ndefer == 0)
					q->fdefer = 0;
				continue;
			}
			key = q->key;
			if (m->branch_order && clocked) {
				int st = branch_state(q, &key);

				turn = !st || is_turn(m, key);
				if (!turn)
					goto stop;
				if (st && q->after_branch && q->pre) {
					/* the branch's state comes before
					 * perf's states on the way to where
					 * it went: those are checked after */
					if ((rc = defer_pre(m, q)))
						return rc;
				}
				go = 1;
				if (q->pre && !(st && q->after_branch)) {
					turn = go = is_turn(m, key = q->key);
				} else if (st && q->after_branch && own_state(&q->ev) &&
					   !is_turn(m, q->key)) {
					/* the branch's state had its turn;
					 * ev's own comes after it */
					key = q->key;
					goto stop;
				}
			} else {
				if (m->blocks)  /* each block goes through the heap */
					turn = !q->newblock;
				else
					turn = is_turn(m, key);
				go = turn || (!clocked && m->stick);
			}
			if (q->pre && go) {
				/* perf goes on past its state before ev */
				if (clock_step(m, q)) {
					q->pre = 0;
					set_key(q, q->ev.tsc, 0);
				}
				if (q->ended && !q->pre)
					q->done = 1;
				continue;
			}
			if (go) {
				*ev = q->ev;
				q->have = 0;
				m->last = m->run;
				if (q->clock && q->clock_lost)
					m->fallback_events++;
				if (m->branch_order && clocked) {
					note_branch(q, ev);
				} else if (m->branch_order) {
					m->stick = sticks(ev, m->stick, turn);
					/* handed out before its turn: perf
					 * stopped the queue at it */
					m->yield = !turn && !m->stick;
				}
				return 0;
			}
stop:
			q->newblock = 0;
			heap_add(m, (size_t)m->run, key);
			m->run = -1;
		}
		if (!m->hn)
			return PTD_ERR_END;
		/* perf handles the records before the smallest key */
		while (m->stop < m->nstops && m->heap[0].key >= m->stops[m->stop])
			m->stop++;
		m->run = (long)m->heap[0].q;
		heap_pop(m);
	}
}

static int qm_insn_text(struct backend *b, const struct ptd_event *ev,
			char *buf, size_t len)
{
	struct qmerge *m = (struct qmerge *)b;
	struct backend *c;

	if (m->last < 0 || ev->queue != (uint32_t)m->last)
		return PTD_ERR_UNSUPPORTED;
	c = m->q[m->last].be;
	return c->insn_text ? c->insn_text(c, ev, buf, len) : PTD_ERR_UNSUPPORTED;
}

static uint64_t qm_progress(const struct backend *b)
{
	const struct qmerge *m = (const struct qmerge *)b;
	uint64_t sum = 0;

	for (size_t i = 0; i < m->n; i++)
		if (m->q[i].be->progress)
			sum += m->q[i].be->progress(m->q[i].be);
	return sum;
}

static void qm_get_stats(const struct backend *b, struct backend_stats *st)
{
	const struct qmerge *m = (const struct qmerge *)b;

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < m->n; i++) {
		struct backend_stats s;

		if (!m->q[i].be->get_stats)
			continue;
		m->q[i].be->get_stats(m->q[i].be, &s);
		st->segments += s.segments;
		st->segments_fallback += s.segments_fallback;
		st->blocks_built += s.blocks_built;
		st->block_hits += s.block_hits;
		st->memo_hits += s.memo_hits;
	}
	st->clock_fallback_queues = m->fallback_queues;
	st->clock_fallback_events = m->fallback_events;
}

static const char *qm_errmsg(struct backend *b)
{
	struct qmerge *m = (struct qmerge *)b;
	long i = m->failed >= 0 ? m->failed : m->last;

	return i >= 0 ? m->q[i].be->errmsg(m->q[i].be) : "";
}

static void qm_destroy(struct backend *b)
{
	struct qmerge *m = (struct qmerge *)b;

	for (size_t i = 0; i < m->n; i++) {
		if (m->q[i].be)
			m->q[i].be->destroy(m->q[i].be);
		if (m->q[i].clock)
			perfclock_free(m->q[i].clock);
		free(m->q[i].defer);
	}
	free(m->q);
	free(m->heap);
	free(m->stops);
	free(m);
}

int queuemerge_new(struct backend **be, struct perfclock **clocks, size_t n,
		   int branch_order, const uint64_t *stops, size_t nstops,
		   struct backend **out)
{
	struct qmerge *m = calloc(1, sizeof(*m));

	if (m) {
		m->q = calloc(n ? n : 1, sizeof(*m->q));
		m->heap = calloc(n ? n : 1, sizeof(*m->heap));
		m->stops = malloc((nstops ? nstops : 1) * sizeof(*m->stops));
	}
	if (!m || !m->q || !m->heap || !m->stops) {
		for (size_t i = 0; i < n; i++) {
			be[i]->destroy(be[i]);
			if (clocks && clocks[i])
				perfclock_free(clocks[i]);
		}
		if (m) {
			free(m->q);
			free(m->heap);
			free(m->stops);
		}
		free(m);
		return PTD_ERR_NOMEM;
	}
	if (nstops)
		memcpy(m->stops, stops, nstops * sizeof(*stops));
	util_sort(m->stops, nstops, sizeof(*m->stops), u64_cmp);
	m->nstops = nstops;
	for (size_t i = 0; i < n; i++) {
		m->q[i].be = be[i];
		m->q[i].clock = clocks ? clocks[i] : NULL;
	}
	m->n = n;
	m->branch_order = branch_order;
	m->run = m->last = m->failed = -1;
	m->base.next = qm_next;
	m->base.insn_text = qm_insn_text;
	m->base.progress = qm_progress;
	m->base.get_stats = qm_get_stats;
	m->base.errmsg = qm_errmsg;
	m->base.destroy = qm_destroy;
	*out = &m->base;
	return 0;
}

void queuemerge_set_blocks(struct backend *b)
{
	((struct qmerge *)b)->blocks = 1;
}

void queuemerge_set_continues(struct backend *b, size_t i)
{
	struct qmerge *m = (struct qmerge *)b;

	if (i > 0 && i < m->n)
		m->q[i].cont = 1;
}

void queuemerge_set_warn(struct backend *b, int (*warn)(void *ctx, const char *msg),
			 void *ctx)
{
	struct qmerge *m = (struct qmerge *)b;

	m->warn = warn;
	m->warn_ctx = ctx;
}
