/* SPDX-License-Identifier: MIT */
#include "callstacks.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct tstack {
	int32_t tid;
	uint64_t *ret;          /* return addresses, outermost first */
	size_t n, cap;
	int pending_ret, partial;
	size_t cur, end;        /* its probes in the sorted order */
};

struct cs_run {
	struct cs_probe *p;
	size_t *order;          /* probes by (tid, time) */
	struct tstack *t;
	size_t nt, tcap, last;
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
	if (!r->order || !k) {
		free(k);
		return PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct key){ r->p[i].tid, r->p[i].time, i };
	qsort(k, n, sizeof(*k), key_cmp);
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
		r->t[r->nt].cur = i;
		r->t[r->nt++].end = i + 1;
	}
	return 0;
}

static struct tstack *find(struct cs_run *r, int32_t tid)
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

/* A return went to ip: pop down to the frame that returns there; a
 * return into a frame entered before the trace began pops nothing. */
static void returned_to(struct tstack *t, uint64_t ip)
{
	for (size_t k = t->n; k-- > 0;)
		if (t->ret[k] == ip) {
			t->n = k;
			return;
		}
}

static int resolve(struct cs_run *r, struct tstack *t, const struct ptd_event *ev)
{
	while (t->cur < t->end && r->p[r->order[t->cur]].time < ev->time) {
		struct cs_probe *p = &r->p[r->order[t->cur++]];

		p->frames = malloc((t->n + 1) * sizeof(*p->frames));
		if (!p->frames)
			return PTD_ERR_NOMEM;
		p->frames[0] = ev->ip;
		for (size_t k = 0; k < t->n; k++)
			p->frames[k + 1] = t->ret[t->n - 1 - k];
		p->n = t->n + 1;
		p->flags = CS_RESOLVED | (t->partial ? CS_PARTIAL : 0);
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

static int on_insn(struct cs_run *r, struct tstack *t, const struct ptd_event *ev)
{
	if (t->pending_ret) {
		returned_to(t, ev->ip);
		t->pending_ret = 0;
	}
	if ((ev->flags & PTD_EVF_TIME_VALID) && resolve(r, t, ev))
		return PTD_ERR_NOMEM;
	if (is_call(ev)) {
		if (util_grow((void **)&t->ret, &t->cap, t->n + 1, sizeof(*t->ret)))
			return PTD_ERR_NOMEM;
		t->ret[t->n++] = ev->ip + ev->size;
	} else if (ev->iclass == PTD_IC_RETURN) {
		t->pending_ret = 1;
	}
	return 0;
}

int callstacks_resolve(struct ptd_session *s, struct cs_probe *p, size_t n)
{
	struct cs_run r = { .p = p };
	struct ptd_event ev;
	int rc = set_up(&r, n);

	while (!rc && (rc = ptd_next(s, &ev)) == 0) {
		struct tstack *t = ev.tid >= 0 ? find(&r, ev.tid) : NULL;

		if (!t)
			continue;
		if (ev.kind == PTD_EV_INSN)
			rc = on_insn(&r, t, &ev);
		else if (ev.kind == PTD_EV_ERROR || ev.kind == PTD_EV_GAP ||
			 ev.kind == PTD_EV_OVERFLOW)
			t->partial = 1;
	}
	for (size_t i = 0; i < r.nt; i++)
		free(r.t[i].ret);
	free(r.t);
	free(r.order);
	return rc;
}

void callstacks_free(struct cs_probe *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++)
		free(p[i].frames);
	free(p);
}
