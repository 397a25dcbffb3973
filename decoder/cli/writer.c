/* SPDX-License-Identifier: MIT */
/* writer - buffered output with a writer thread (see writer.h). */
#include "writer.h"

#include <pthread.h>
#include <stdlib.h>

#define WBUF ((size_t)1 << 20)

struct writer_thread {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	FILE *out;
	char *buf;          /* being written while full */
	size_t len;
	int full, stop;
};

int writer_init(struct writer *w, FILE *out, int threaded)
{
	w->buf = malloc(WBUF);
	w->len = 0;
	w->cap = WBUF;
	w->out = out;
	w->threaded = threaded;
	w->t = NULL;
	w->spare = NULL;
	return w->buf ? 0 : -1;
}

static void *writer_main(void *arg)
{
	struct writer_thread *t = arg;

	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->full && !t->stop)
			pthread_cond_wait(&t->cv, &t->mu);
		if (!t->full)
			break;
		pthread_mutex_unlock(&t->mu);
		fwrite(t->buf, 1, t->len, t->out);  /* errors: ferror(out) */
		pthread_mutex_lock(&t->mu);
		t->full = 0;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static void start_thread(struct writer *w)
{
	struct writer_thread *t = calloc(1, sizeof(*t));

	w->threaded = 0;   /* one try */
	if (!t || !(w->spare = malloc(WBUF)))
		goto fail;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->out = w->out;
	if (pthread_create(&t->thr, NULL, writer_main, t)) {
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
		goto fail;
	}
	w->t = t;
	return;
fail:
	free(t);
	free(w->spare);
	w->spare = NULL;
}

/* Hands buf to the thread (after the previous one is written) and takes
 * the other buffer; writes in place without a thread. */
static void handoff(struct writer *w)
{
	struct writer_thread *t;
	char *b;

	if (!w->len)
		return;
	if (w->threaded)
		start_thread(w);
	if (!(t = w->t)) {
		fwrite(w->buf, 1, w->len, w->out);
		w->len = 0;
		return;
	}
	pthread_mutex_lock(&t->mu);
	while (t->full)
		pthread_cond_wait(&t->cv, &t->mu);
	b = w->spare;
	w->spare = w->buf;
	t->buf = w->buf;
	t->len = w->len;
	t->full = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	w->buf = b;
	w->len = 0;
}

void writer_reserve(struct writer *w, size_t need)
{
	if (w->len + need > w->cap)
		handoff(w);
}

void writer_flush(struct writer *w)
{
	struct writer_thread *t = w->t;

	if (t) {
		handoff(w);
		pthread_mutex_lock(&t->mu);
		while (t->full)
			pthread_cond_wait(&t->cv, &t->mu);
		pthread_mutex_unlock(&t->mu);
	} else if (w->len) {
		fwrite(w->buf, 1, w->len, w->out);
		w->len = 0;
	}
}

void writer_fini(struct writer *w)
{
	struct writer_thread *t = w->t;

	writer_flush(w);
	if (t) {
		pthread_mutex_lock(&t->mu);
		t->stop = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thr, NULL);
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
		free(t);
		w->t = NULL;
	}
	free(w->buf);
	free(w->spare);
	w->buf = w->spare = NULL;
}
