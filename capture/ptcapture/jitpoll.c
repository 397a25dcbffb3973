/* SPDX-License-Identifier: MIT */
#include "jitpoll.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct jp_img {
	uint64_t addr;
	uint32_t len;
	uint8_t *bytes;    /* last bytes seen */
	size_t copy;       /* their textmatch copy */
};

struct jp_prog {
	uint32_t id, nimg;
	uint8_t tag[8];
	struct jp_img *img;
};

struct jitpoll {
	struct textmatch *tm;
	struct jp_prog *p;
	size_t n, cap;
	struct jitpoll_counts c;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct jitpoll *jitpoll_new(struct textmatch *tm)
{
	struct jitpoll *jp = calloc(1, sizeof(*jp));

	if (jp)
		jp->tm = tm;
	return jp;
}

static void drop(struct jitpoll *jp, size_t i)
{
	struct jp_prog *p = &jp->p[i];

	for (uint32_t k = 0; k < p->nimg; k++)
		free(p->img[k].bytes);
	free(p->img);
	jp->p[i] = jp->p[--jp->n];
}

void jitpoll_free(struct jitpoll *jp)
{
	if (!jp)
		return;
	while (jp->n)
		drop(jp, jp->n - 1);
	free(jp->p);
	free(jp);
}

int jitpoll_track(struct jitpoll *jp, const struct bpfinfo_prog *p,
		  size_t first_copy, uint64_t t)
{
	struct jp_prog *q;

	if (!p->prog_array || !p->nimg)
		return 0;
	if (jp->n == jp->cap) {
		size_t nc = jp->cap ? jp->cap * 2 : 16;
		struct jp_prog *np = realloc(jp->p, nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		jp->p = np;
		jp->cap = nc;
	}
	q = &jp->p[jp->n];
	memset(q, 0, sizeof(*q));
	q->id = p->id;
	memcpy(q->tag, p->tag, 8);
	if (!(q->img = calloc(p->nimg, sizeof(*q->img))))
		return -ENOMEM;
	for (uint32_t k = 0; k < p->nimg; k++) {
		struct jp_img *im = &q->img[k];

		im->addr = p->img[k].addr;
		im->len = p->img[k].len;
		im->copy = first_copy + k;
		if (!(im->bytes = malloc(im->len ? im->len : 1))) {
			q->nimg = k;
			jp->n++;
			drop(jp, jp->n - 1);
			return -ENOMEM;
		}
		memcpy(im->bytes, p->img[k].bytes, im->len);
		textmatch_seen(jp->tm, im->copy, t);
	}
	q->nimg = p->nimg;
	jp->n++;
	jp->c.tracked++;
	return 0;
}

void jitpoll_forget(struct jitpoll *jp, uint32_t id)
{
	for (size_t i = 0; i < jp->n; i++)
		if (jp->p[i].id == id) {
			drop(jp, i);
			return;
		}
}

/* Same program as when tracking started (ids are not reused soon, but a
 * mismatch must not be taken for a rewrite)? */
static int same_layout(const struct jp_prog *p, const struct bpfinfo_prog *q)
{
	if (q->nimg != p->nimg || memcmp(q->tag, p->tag, 8))
		return 0;
	for (uint32_t k = 0; k < p->nimg; k++)
		if (q->img[k].addr != p->img[k].addr || q->img[k].len != p->img[k].len)
			return 0;
	return 1;
}

int jitpoll_poll(struct jitpoll *jp)
{
	int changed = 0;

	for (size_t i = 0; i < jp->n;) {
		struct jp_prog *p = &jp->p[i];
		struct bpfinfo_prog q;
		char err[256];
		uint64_t t0 = now_ns(), t1;
		int rc = bpfinfo_copy(NULL, p->id, &q, err, sizeof(err));

		t1 = now_ns();
		if (rc == -ENOENT || (!rc && !same_layout(p, &q))) {
			jp->c.gone++;
			if (!rc)
				bpfinfo_free(&q);
			drop(jp, i);
			continue;
		}
		if (rc) {
			jp->c.errors++;
			i++;
			continue;
		}
		jp->c.polls++;
		for (uint32_t k = 0; k < p->nimg; k++) {
			struct jp_img *im = &p->img[k];

			if (!memcmp(im->bytes, q.img[k].bytes, im->len)) {
				textmatch_seen(jp->tm, im->copy, t0);
				continue;
			}
			/* A new version: in place at some moment of [t0, t1]. */
			jp->c.rewrites++;
			changed++;
			im->copy = textmatch_ncopies(jp->tm);
			if (textmatch_copy(jp->tm, TM_RECOPY, t1, im->addr, im->len,
					   k == 0 ? p->tag : NULL, p->id, p->id, k, 1,
					   q.img[k].bytes)) {
				bpfinfo_free(&q);
				return -ENOMEM;
			}
			textmatch_seen(jp->tm, im->copy, t0);
			memcpy(im->bytes, q.img[k].bytes, im->len);
		}
		bpfinfo_free(&q);
		i++;
	}
	return changed;
}

size_t jitpoll_active(const struct jitpoll *jp)
{
	return jp->n;
}

void jitpoll_counts(const struct jitpoll *jp, struct jitpoll_counts *c)
{
	*c = jp->c;
}
