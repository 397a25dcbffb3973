/* SPDX-License-Identifier: MIT */
/* trace_index (stage: api/): building the index, ptd_index_*. */
#include "trace_index.h"

#include "session.h"
#include "util.h"

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
	last = t->insn[r->insn0 + r->ninsn - 1];
	ic = TIX_ICLASS(last);
	if (is_call(ic) && !(have_next && zero_call(r, last, next_ip))) {
		if (grow(&t->stack, &t->stackcap, t->nstack + 1, sizeof(size_t)))
			return -1;
		t->stack[t->nstack++] = t->nruns - 1;
		t->depth++;
	} else if (ic == PTD_IC_RETURN) {
		if (t->nstack)
			t->nstack--;
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

static void index_free(struct ptd_index *ix)
{
	size_t i, j;

	if (!ix)
		return;
	for (i = 0; i < ix->nth; i++) {
		struct tix_thread *t = &ix->th[i];

		for (j = 0; j < t->nstops; j++)
			free((char *)t->stops[j].msg);
		free(t->stops);
		free(t->runs);
		free(t->insn);
		free(t->pieces);
		free(t->pool);
		free(t->stack);
	}
	free(ix->th);
	free(ix);
}

void ptd_index_free(struct ptd_index *ix)
{
	index_free(ix);
}

int ptd_index_build(struct ptd_index **out, struct ptd_session *s,
		    const struct ptd_index_opts *opts)
{
	struct ptd_index *ix;
	struct ptd_event ev;
	struct tix_thread *last = NULL;
	int32_t *lastq;
	size_t i, last_n = 0;
	int rc;

	if (!out)
		return PTD_ERR_INVAL;
	*out = NULL;
	if (!s || (opts && opts->sz < sizeof(size_t)))
		return PTD_ERR_INVAL;
	ix = calloc(1, sizeof(*ix));
	lastq = malloc(TIX_MAXQ * sizeof(*lastq));
	if (!ix || !lastq) {
		free(ix);
		free(lastq);
		return PTD_ERR_NOMEM;
	}
	for (i = 0; i < TIX_MAXQ; i++)
		lastq[i] = -1;
	ix->s = s;
	while ((rc = ptd_next(s, &ev)) == 0) {
		struct tix_thread *t;
		int32_t tid = ev.tid;

		if (last_n != ix->nth) { /* thread_of moved the array */
			last = NULL;
			last_n = ix->nth;
		}

		if (ev.kind != PTD_EV_INSN && ev.kind != PTD_EV_ERROR &&
		    ev.kind != PTD_EV_GAP && ev.kind != PTD_EV_OVERFLOW)
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
	if (rc != PTD_ERR_END) {
		index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
nomem:
	free(lastq);
	index_free(ix);
	snprintf(s->errmsg, sizeof(s->errmsg),
		 "out of memory while indexing the trace: index a shorter "
		 "time range (ptd_open_opts time_start/time_end)");
	return PTD_ERR_NOMEM;
}

size_t ptd_index_thread_count(const struct ptd_index *ix)
{
	return ix ? ix->nth : 0;
}

uint64_t ptd_index_unplaced(const struct ptd_index *ix)
{
	return ix ? ix->unplaced : 0;
}

int ptd_index_thread(const struct ptd_index *ix, size_t i,
		     struct ptd_index_thread *out)
{
	const struct tix_thread *t;

	if (!ix || !out || i >= ix->nth)
		return PTD_ERR_INVAL;
	t = &ix->th[i];
	memset(out, 0, sizeof(*out));
	out->tid = t->tid;
	out->pid = t->pid;
	out->instructions = t->ninsn;
	out->positions = t->npos;
	out->stops = t->nstops;
	if (t->nruns) {
		out->first_time = t->runs[0].time;
		out->last_time = t->runs[t->nruns - 1].time;
	}
	return 0;
}

long tix_stack_at(const struct tix_thread *t, size_t r, size_t **out,
		  size_t *cap)
{
	const struct tix_piece *p = &t->pieces[r / TIX_PIECE_RUNS];
	size_t n = p->nframes, k;

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
		if (is_call(ic) && !(t->runs[k + 1].ninsn &&
				     zero_call(x, t->insn[x->insn0 + x->ninsn - 1],
					       t->runs[k + 1].ip))) {
			if (util_grow((void **)out, cap, n + 1, sizeof(size_t)))
				return -1;
			(*out)[n++] = k;
		} else if (ic == PTD_IC_RETURN && n) {
			n--;
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
