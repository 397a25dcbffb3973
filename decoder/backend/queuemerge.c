/* SPDX-License-Identifier: MIT */
#include "queuemerge.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct qm_queue {
	struct backend *be;
	struct ptd_event ev;    /* the next event, when have */
	uint64_t key;           /* perf's queue timestamp: never goes back */
	int have, done;
	int newblock;           /* blocks: ev starts a block with a new key */
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
	int blocks;             /* queuemerge_set_blocks: perf's cs_etm rule */
	uint64_t *stops;        /* sideband records' TSCs, sorted */
	size_t nstops, stop;    /* stop: the next record perf would handle */
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

static void heap_add(struct qmerge *m, size_t q)
{
	heap_place(m, m->hn++, q, m->q[q].key);
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

/* Reads queue i's next event unless it has one.  0, or a fatal error. */
static int fill(struct qmerge *m, size_t i)
{
	struct qm_queue *q = &m->q[i];
	int rc;

	if (q->have || q->done)
		return 0;
	rc = q->be->next(q->be, &q->ev);
	if (rc == PTD_ERR_END) {
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
	} else if (q->ev.tsc > q->key) {
		q->key = q->ev.tsc;
	}
	return 0;
}

/* perf's first keys: every queue's first timestamp, in queue order. */
static int start(struct qmerge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		int rc = fill(m, i);

		if (rc)
			return rc;
		m->q[i].newblock = 0;
		if (!m->q[i].done)
			heap_add(m, i);
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

static int qm_next(struct backend *b, struct ptd_event *ev)
{
	struct qmerge *m = (struct qmerge *)b;
	int rc, turn;

	if (!m->started && (rc = start(m)))
		return rc;
	for (;;) {
		if (m->run >= 0) {
			struct qm_queue *q = &m->q[m->run];

			if ((rc = fill(m, (size_t)m->run)))
				return rc;
			if (q->done) {
				m->run = -1;
				m->stick = 0;
				continue;
			}
			if (m->blocks)  /* each block goes through the heap */
				turn = !q->newblock;
			else
				turn = (!m->hn || q->key <= m->heap[0].key) &&
				       q->key < next_stop(m);
			if (m->stick || turn) {
				*ev = q->ev;
				q->have = 0;
				m->last = m->run;
				if (m->branch_order)
					m->stick = sticks(ev, m->stick, turn);
				return 0;
			}
			q->newblock = 0;
			heap_add(m, (size_t)m->run);
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

void queuemerge_set_blocks(struct backend *b)
{
	((struct qmerge *)b)->blocks = 1;
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

	for (size_t i = 0; i < m->n; i++)
		if (m->q[i].be)
			m->q[i].be->destroy(m->q[i].be);
	free(m->q);
	free(m->heap);
	free(m->stops);
	free(m);
}

int queuemerge_new(struct backend **be, size_t n, int branch_order,
		   const uint64_t *stops, size_t nstops, struct backend **out)
{
	struct qmerge *m = calloc(1, sizeof(*m));

	if (m) {
		m->q = calloc(n ? n : 1, sizeof(*m->q));
		m->heap = calloc(n ? n : 1, sizeof(*m->heap));
		m->stops = malloc((nstops ? nstops : 1) * sizeof(*m->stops));
	}
	if (!m || !m->q || !m->heap || !m->stops) {
		for (size_t i = 0; i < n; i++)
			be[i]->destroy(be[i]);
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
	for (size_t i = 0; i < n; i++)
		m->q[i].be = be[i];
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
