/* SPDX-License-Identifier: MIT */
#include "prefetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PF_SLOTS 1024           /* events decoded ahead per queue */
#define PF_BATCH 64             /* events handed over at once */
#define PF_MSG 256
#define PF_TEXT 160

struct pf_slot {
	struct ptd_event ev;
	int rc;                 /* next()'s return */
	int has_msg, textlen;
	uint64_t progress;
	char msg[PF_MSG];       /* ev.msg's text, or the error message */
	char text[PF_TEXT];
};

struct prefetch {
	struct backend base;
	struct backend *inner;
	int text;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t not_full, not_empty;
	struct pf_slot *ring;
	size_t head, count;     /* head: the first slot not given back */
	size_t head_w;          /* the worker's next slot */
	size_t taken, avail;    /* the consumer's: slots since head it took,
				 * and filled ones it knows of after those */
	int stop, ended;
	const struct pf_slot *cur;   /* the slot the consumer took last: its
				      * until the next call */
	int end_rc;             /* the end, or the error, once taken */
	uint64_t last_progress;
	char end_msg[PF_MSG];
	struct backend_stats st;
};

/* Hands the consumer the slots filled since the last time. */
static void publish(struct prefetch *p, size_t *filled, int end)
{
	pthread_mutex_lock(&p->mu);
	if (end && p->inner->get_stats)
		p->inner->get_stats(p->inner, &p->st);
	p->count += *filled;
	*filled = 0;
	if (end)
		p->ended = 1;
	pthread_cond_signal(&p->not_empty);
	pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg)
{
	struct prefetch *p = arg;
	size_t free_slots = 0, filled = 0;

	for (;;) {
		struct pf_slot *s;
		int rc;

		if (!free_slots) {
			if (filled)
				publish(p, &filled, 0);
			int stop;

			pthread_mutex_lock(&p->mu);
			while (p->count == PF_SLOTS && !p->stop)
				pthread_cond_wait(&p->not_full, &p->mu);
			free_slots = PF_SLOTS - p->count;
			stop = p->stop;
			pthread_mutex_unlock(&p->mu);
			if (stop)
				return NULL;
		}
		/* the slots past count are the worker's own */
		s = &p->ring[p->head_w];
		p->head_w = (p->head_w + 1) % PF_SLOTS;
		rc = p->inner->next(p->inner, &s->ev);
		s->rc = rc;
		s->has_msg = 0;
		s->textlen = -1;
		if (rc == 0 && s->ev.msg) {
			strncpy(s->msg, s->ev.msg, PF_MSG - 1);
			s->msg[PF_MSG - 1] = 0;
			s->has_msg = 1;
		} else if (rc && rc != PTD_ERR_END) {
			strncpy(s->msg, p->inner->errmsg(p->inner), PF_MSG - 1);
			s->msg[PF_MSG - 1] = 0;
		}
		if (rc == 0 && p->text && s->ev.kind == PTD_EV_INSN &&
		    p->inner->insn_text)
			s->textlen = p->inner->insn_text(p->inner, &s->ev, s->text,
							 PF_TEXT);
		if (s->textlen >= PF_TEXT)
			s->textlen = PTD_ERR_UNSUPPORTED;   /* never cut short */
		s->progress = p->inner->progress ? p->inner->progress(p->inner) : 0;
		filled++;
		free_slots--;
		if (rc) {
			publish(p, &filled, 1);
			return NULL;
		}
		if (filled == PF_BATCH)
			publish(p, &filled, 0);
	}
}

static int pf_next(struct backend *b, struct ptd_event *ev)
{
	struct prefetch *p = (struct prefetch *)b;

	if (p->end_rc)
		return p->end_rc;       /* the end, or the error, again */
	if (p->cur)
		p->last_progress = p->cur->progress;
	if (!p->avail) {
		/* give back what was taken, see what is there */
		pthread_mutex_lock(&p->mu);
		p->head = (p->head + p->taken) % PF_SLOTS;
		p->count -= p->taken;
		p->taken = 0;
		pthread_cond_signal(&p->not_full);
		while (!p->count)
			pthread_cond_wait(&p->not_empty, &p->mu);
		p->avail = p->count;
		pthread_mutex_unlock(&p->mu);
	}
	p->cur = &p->ring[(p->head + p->taken) % PF_SLOTS];
	p->taken++;
	p->avail--;
	if (p->cur->rc) {
		p->end_rc = p->cur->rc;
		memcpy(p->end_msg, p->cur->msg, PF_MSG);
		p->cur = NULL;
		return p->end_rc;
	}
	*ev = p->cur->ev;
	ev->msg = p->cur->has_msg ? p->cur->msg : NULL;
	return 0;
}

static int pf_insn_text(struct backend *b, const struct ptd_event *ev,
			char *buf, size_t len)
{
	struct prefetch *p = (struct prefetch *)b;
	size_t n;

	(void)ev;
	if (!p->cur || p->cur->textlen < 0 || !len)
		return p->cur && p->cur->textlen < 0 ? p->cur->textlen :
		       PTD_ERR_UNSUPPORTED;
	n = strnlen(p->cur->text, PF_TEXT);
	if (n >= len)
		n = len - 1;
	memcpy(buf, p->cur->text, n);
	buf[n] = 0;
	return p->cur->textlen;
}

static uint64_t pf_progress(const struct backend *b)
{
	const struct prefetch *p = (const struct prefetch *)b;

	return p->cur ? p->cur->progress : p->last_progress;
}

static void pf_get_stats(const struct backend *b, struct backend_stats *st)
{
	struct prefetch *p = (struct prefetch *)b;

	pthread_mutex_lock(&p->mu);
	if (p->ended)
		*st = p->st;
	else if (p->inner->get_stats)
		memset(st, 0, sizeof(*st));   /* still decoding: not known */
	pthread_mutex_unlock(&p->mu);
}

static const char *pf_errmsg(struct backend *b)
{
	struct prefetch *p = (struct prefetch *)b;

	return p->end_rc && p->end_rc != PTD_ERR_END ? p->end_msg : "";
}

static void pf_destroy(struct backend *b)
{
	struct prefetch *p = (struct prefetch *)b;

	if (p->started) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_signal(&p->not_full);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->th, NULL);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->not_full);
	pthread_cond_destroy(&p->not_empty);
	p->inner->destroy(p->inner);
	free(p->ring);
	free(p);
}

int prefetch_new(struct backend *inner, int text, struct backend **out)
{
	struct prefetch *p = calloc(1, sizeof(*p));

	if (p)
		p->ring = malloc(PF_SLOTS * sizeof(*p->ring));
	if (!p || !p->ring) {
		if (p)
			free(p->ring);
		free(p);
		inner->destroy(inner);
		return PTD_ERR_NOMEM;
	}
	p->inner = inner;
	p->text = text;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->not_full, NULL);
	pthread_cond_init(&p->not_empty, NULL);
	p->base.next = pf_next;
	p->base.insn_text = pf_insn_text;
	p->base.progress = pf_progress;
	p->base.get_stats = pf_get_stats;
	p->base.errmsg = pf_errmsg;
	p->base.destroy = pf_destroy;
	if (pthread_create(&p->th, NULL, worker, p)) {
		pf_destroy(&p->base);
		return PTD_ERR_NOMEM;
	}
	p->started = 1;
	*out = &p->base;
	return 0;
}
