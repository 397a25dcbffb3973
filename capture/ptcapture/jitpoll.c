/* SPDX-License-Identifier: MIT */
#include "jitpoll.h"
#include "poketrig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct jp_img {
	uint64_t addr;
	uint32_t len;
	uint8_t *bytes;    /* last bytes seen */
	size_t copy;       /* their textmatch copy */
	/* with the trigger: */
	int slot;          /* poketrig slot, -1 = none */
	uint64_t hash, from, seen;      /* current version */
	uint64_t phash, pfrom;          /* the one before it (pfrom 0: none) */
	size_t pcopy;
	int pending;       /* the trigger saw other bytes at pt1 */
	uint64_t pt1, phash_new;
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
	struct poketrig *trig;
	uint32_t slots;    /* bit mask of poketrig slots in use */
	int poll_now;      /* the trigger saw a change */
	uint64_t max_gap;  /* polls further apart are late (no trigger) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct jitpoll *jitpoll_new(struct textmatch *tm, uint64_t interval_ns)
{
	struct jitpoll *jp = calloc(1, sizeof(*jp));

	if (jp) {
		jp->tm = tm;
		jp->max_gap = 2 * interval_ns;
	}
	return jp;
}

static void drop(struct jitpoll *jp, size_t i)
{
	struct jp_prog *p = &jp->p[i];

	for (uint32_t k = 0; k < p->nimg; k++) {
		if (p->img[k].slot >= 0) {
			poketrig_watch(jp->trig, (unsigned)p->img[k].slot, 0, 0);
			jp->slots &= ~(1u << p->img[k].slot);
		}
		free(p->img[k].bytes);
	}
	free(p->img);
	jp->p[i] = jp->p[--jp->n];
}

void jitpoll_free(struct jitpoll *jp)
{
	if (!jp)
		return;
	while (jp->n)
		drop(jp, jp->n - 1);
	poketrig_close(jp->trig);
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
		im->slot = -1;
		if (!(im->bytes = malloc(im->len ? im->len : 1))) {
			q->nimg = k;
			jp->n++;
			drop(jp, jp->n - 1);
			return -ENOMEM;
		}
		memcpy(im->bytes, p->img[k].bytes, im->len);
		textmatch_seen(jp->tm, im->copy, t);
		im->hash = poketrig_hash(im->bytes, im->len);
		im->seen = t;
		for (int s = 0; jp->trig && s < POKETRIG_MAX_IMGS; s++)
			if (!(jp->slots & (1u << s))) {
				if (!poketrig_watch(jp->trig, (unsigned)s, im->addr, im->len)) {
					im->slot = s;
					jp->slots |= 1u << s;
				}
				break;
			}
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

			uint64_t from = t1, h;
			int same = !memcmp(im->bytes, q.img[k].bytes, im->len);
			/* without the trigger, only polled moments are known: a
			 * poll that came late (a starved recorder) starts the
			 * same bytes as a new version, the gap uncertain */
			int late = same && !im->pending && !jp->trig && im->seen &&
				   t0 - im->seen > jp->max_gap;

			if (late) {
				jp->c.late++;
				from = t0;
			} else if (same && !im->pending) {
				textmatch_seen(jp->tm, im->copy, t0);
				im->seen = t0;
				continue;
			}
			/* A new version: in place at some moment of [t0, t1].
			 * Same bytes after the trigger saw others: a change and
			 * its reversal, a new version all the same. */
			h = poketrig_hash(q.img[k].bytes, im->len);
			if (im->pending && h == im->phash_new && im->pt1 < from && im->pt1 > im->seen)
				from = im->pt1;  /* the trigger saw these bytes first */
			im->pending = 0;
			if (!late) {
				jp->c.transient += same;
				jp->c.rewrites++;
				changed++;
			}
			im->phash = im->hash;
			im->pfrom = im->from ? im->from : 1;
			im->pcopy = im->copy;
			im->copy = textmatch_ncopies(jp->tm);
			if (textmatch_copy(jp->tm, TM_RECOPY, from, im->addr, im->len,
					   k == 0 ? p->tag : NULL, p->id, p->id, k, 1,
					   q.img[k].bytes)) {
				bpfinfo_free(&q);
				return -ENOMEM;
			}
			textmatch_seen(jp->tm, im->copy, t0);
			im->hash = h;
			im->from = from;
			im->seen = t0;
			memcpy(im->bytes, q.img[k].bytes, im->len);
		}
		bpfinfo_free(&q);
		i++;
	}
	return changed;
}

/* A hash from the trigger: the current version (or the one before, at a
 * time before the current one began) seen again, or a change to poll for. */
static void on_trigger(void *ctx, const struct poketrig_event *e)
{
	struct jitpoll *jp = ctx;

	jp->c.trigger_events++;
	for (size_t i = 0; i < jp->n; i++)
		for (uint32_t k = 0; k < jp->p[i].nimg; k++) {
			struct jp_img *im = &jp->p[i].img[k];

			if (im->slot < 0 || im->addr != e->addr)
				continue;
			if (e->hash == im->hash && !im->pending && e->t0 >= im->from) {
				textmatch_seen(jp->tm, im->copy, e->t0);
				if (e->t0 > im->seen)
					im->seen = e->t0;
			} else if (im->pfrom && e->hash == im->phash && e->t0 < im->from) {
				textmatch_seen(jp->tm, im->pcopy, e->t0);
			} else if (e->hash != im->hash || im->pending) {
				if (!im->pending || e->t1 > im->pt1) {
					im->pending = 1;
					im->pt1 = e->t1;
					im->phash_new = e->hash;
				}
				jp->poll_now = 1;
			}
			return;
		}
}

int jitpoll_trigger_open(struct jitpoll *jp, char *err, size_t errlen)
{
	return poketrig_open(on_trigger, jp, &jp->trig, err, errlen);
}

int jitpoll_trigger_fd(struct jitpoll *jp)
{
	return jp->trig ? poketrig_epoll_fd(jp->trig) : -1;
}

int jitpoll_trigger_drain(struct jitpoll *jp)
{
	int now;

	if (jp->trig && poketrig_drain(jp->trig) < 0)
		return -EIO;
	now = jp->poll_now;
	jp->poll_now = 0;
	return now;
}

size_t jitpoll_active(const struct jitpoll *jp)
{
	return jp->n;
}

void jitpoll_counts(const struct jitpoll *jp, struct jitpoll_counts *c)
{
	*c = jp->c;
}
