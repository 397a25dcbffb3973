/* SPDX-License-Identifier: MIT */
#include "callstacks.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* A thread's shadow stack: its whole flow's when the session hands out
 * one timeline, else its flow in one queue (queue after queue). */
struct qstack {
	uint32_t queue;
	uint64_t *ret;          /* return addresses, outermost first */
	size_t n, cap;
	int pending_ret, partial;
	size_t cur;             /* next of the thread's probes to resolve */
};

/* A thread that has probes: order[lo, end) are its probes by time. */
struct tgroup {
	int32_t tid;
	size_t lo, end;
	struct qstack *q;
	size_t nq, qcap, last;
};

struct cs_run {
	struct cs_probe *p;
	uint64_t *at;           /* time of the event each probe was read at */
	size_t *order;          /* probes by (tid, time) */
	struct tgroup *t;
	size_t nt, tcap, last;
	int timeline;           /* events in time order across queues */
};

struct key {
	int32_t tid;
	uint64_t time;
	size_t i;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The threads that have probes, each with its range of the order. */
static int set_up(struct cs_run *r, size_t n)
{
	struct key *k = malloc((n + 1) * sizeof(*k));

	r->order = malloc((n + 1) * sizeof(*r->order));
	r->at = malloc((n + 1) * sizeof(*r->at));
	if (!r->order || !r->at || !k) {
		free(k);
		return PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct key){ r->p[i].tid, r->p[i].time, i };
	util_sort(k, n, sizeof(*k), key_cmp);
	for (size_t i = 0; i < n; i++)
		r->order[i] = k[i].i;
	free(k);
	for (size_t i = 0; i < n; i++) {
		int32_t tid = r->p[r->order[i]].tid;

		if (r->nt && r->t[r->nt - 1].tid == tid) {
			r->t[r->nt - 1].end = i + 1;
			continue;
		}
		if (util_grow((void **)&r->t, &r->tcap, r->nt + 1, sizeof(*r->t)))
			return PTD_ERR_NOMEM;
		memset(&r->t[r->nt], 0, sizeof(r->t[0]));
		r->t[r->nt].tid = tid;
		r->t[r->nt].lo = i;
		r->t[r->nt++].end = i + 1;
	}
	return 0;
}

static struct tgroup *find(struct cs_run *r, int32_t tid)
{
	size_t lo = 0, hi = r->nt;

	if (r->last < r->nt && r->t[r->last].tid == tid)
		return &r->t[r->last];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->t[mid].tid == tid) {
			r->last = mid;
			return &r->t[mid];
		}
		if (r->t[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static struct qstack *queue_of(struct tgroup *g, uint32_t queue)
{
	if (g->last < g->nq && g->q[g->last].queue == queue)
		return &g->q[g->last];
	for (size_t i = 0; i < g->nq; i++)
		if (g->q[i].queue == queue)
			return &g->q[g->last = i];
	if (util_grow((void **)&g->q, &g->qcap, g->nq + 1, sizeof(*g->q)))
		return NULL;
	memset(&g->q[g->nq], 0, sizeof(g->q[0]));
	g->q[g->nq].queue = queue;
	g->q[g->nq].cur = g->lo;
	return &g->q[g->last = g->nq++];
}

/* A return went to ip: pop down to the frame that returns there; a
 * return into a frame entered before the trace began pops nothing. */
static void returned_to(struct qstack *q, uint64_t ip)
{
	for (size_t k = q->n; k-- > 0;)
		if (q->ret[k] == ip) {
			q->n = k;
			return;
		}
}

/* The probes before ev read this stack, unless another queue's flow of
 * the thread went on earlier after them. */
static int resolve(struct cs_run *r, struct tgroup *g, struct qstack *q,
		   const struct ptd_event *ev)
{
	while (q->cur < g->end && r->p[r->order[q->cur]].time < ev->time) {
		size_t i = r->order[q->cur++];
		struct cs_probe *p = &r->p[i];
		uint64_t *f;

		if ((p->flags & CS_RESOLVED) && r->at[i] <= ev->time)
			continue;
		if (!(f = malloc((q->n + 1) * sizeof(*f))))
			return PTD_ERR_NOMEM;
		f[0] = ev->ip;
		for (size_t k = 0; k < q->n; k++)
			f[k + 1] = q->ret[q->n - 1 - k];
		free(p->frames);
		p->frames = f;
		p->n = q->n + 1;
		p->flags = CS_RESOLVED | (q->partial ? CS_PARTIAL : 0);
		r->at[i] = ev->time;
	}
	return 0;
}

/* `call next` (e8 00000000) reads the IP; it makes no frame. */
static int is_call(const struct ptd_event *ev)
{
	static const uint8_t call_next[5] = { 0xe8, 0, 0, 0, 0 };

	if (ev->iclass == PTD_IC_CALL)
		return !(ev->size == 5 && !memcmp(ev->raw, call_next, 5));
	return ev->iclass == PTD_IC_IND_CALL;
}

static int on_insn(struct cs_run *r, struct tgroup *g, struct qstack *q,
		   const struct ptd_event *ev)
{
	if (q->pending_ret) {
		returned_to(q, ev->ip);
		q->pending_ret = 0;
	}
	if ((ev->flags & PTD_EVF_TIME_VALID) && resolve(r, g, q, ev))
		return PTD_ERR_NOMEM;
	if (is_call(ev)) {
		if (util_grow((void **)&q->ret, &q->cap, q->n + 1, sizeof(*q->ret)))
			return PTD_ERR_NOMEM;
		q->ret[q->n++] = ev->ip + ev->size;
	} else if (ev->iclass == PTD_IC_RETURN) {
		q->pending_ret = 1;
	}
	return 0;
}

/* Queue after queue, a thread that ran in several queues (CPUs) had
 * each part of its flow in a stack of its own: frames opened elsewhere
 * are missing.  (In one timeline it has a single stack.) */
static void finish(struct cs_run *r)
{
	for (size_t i = 0; i < r->nt; i++) {
		struct tgroup *g = &r->t[i];

		for (size_t k = g->lo; g->nq > 1 && k < g->end; k++)
			if (r->p[r->order[k]].flags & CS_RESOLVED)
				r->p[r->order[k]].flags |= CS_PARTIAL;
		for (size_t k = 0; k < g->nq; k++)
			free(g->q[k].ret);
		free(g->q);
	}
}

int callstacks_resolve(struct ptd_session *s, struct cs_probe *p, size_t n)
{
	struct cs_run r = { .p = p };
	struct ptd_stats st = { .sz = sizeof(st) };
	struct ptd_event ev;
	int rc = set_up(&r, n);

	/* merged queues: a thread's flow goes on from CPU to CPU in order */
	r.timeline = ptd_get_stats(s, &st) == 0 && st.sz >= sizeof(st) &&
		     st.merged_queues > 0;

	while (!rc && (rc = ptd_next(s, &ev)) == 0) {
		struct tgroup *g = ev.tid >= 0 ? find(&r, ev.tid) : NULL;
		struct qstack *q = g ? queue_of(g, r.timeline ? 0 : ev.queue) : NULL;

		if (g && !q)
			rc = PTD_ERR_NOMEM;
		else if (!q)
			continue;
		else if (ev.kind == PTD_EV_INSN)
			rc = on_insn(&r, g, q, &ev);
		else if (ev.kind == PTD_EV_ERROR || ev.kind == PTD_EV_GAP ||
			 ev.kind == PTD_EV_OVERFLOW)
			q->partial = 1;
	}
	finish(&r);
	free(r.t);
	free(r.order);
	free(r.at);
	return rc;
}

void callstacks_free(struct cs_probe *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++)
		free(p[i].frames);
	free(p);
}
