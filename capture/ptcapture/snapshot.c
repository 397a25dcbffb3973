/* SPDX-License-Identifier: MIT */
#include "snapshot.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct rent {
	uint64_t time, seq;
	size_t off;
	int cpu;
};

struct recbuf {
	uint8_t *buf;
	size_t len, cap;
	struct rent *e;
	size_t n, ecap;
};

struct recbuf *recbuf_new(void)
{
	return calloc(1, sizeof(struct recbuf));
}

void recbuf_free(struct recbuf *rb)
{
	if (!rb)
		return;
	free(rb->buf);
	free(rb->e);
	free(rb);
}

void recbuf_clear(struct recbuf *rb)
{
	rb->len = rb->n = 0;
}

int recbuf_add(struct recbuf *rb, const struct perf_event_header *rec, uint64_t time, int cpu)
{
	if (rb->len + rec->size > rb->cap) {
		size_t nc = rb->cap ? rb->cap * 2 : 1 << 20;
		uint8_t *nb;

		while (nc < rb->len + rec->size)
			nc *= 2;
		if (!(nb = realloc(rb->buf, nc)))
			return -ENOMEM;
		rb->buf = nb;
		rb->cap = nc;
	}
	if (rb->n == rb->ecap) {
		size_t nc = rb->ecap ? rb->ecap * 2 : 4096;
		struct rent *ne = realloc(rb->e, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		rb->e = ne;
		rb->ecap = nc;
	}
	memcpy(rb->buf + rb->len, rec, rec->size);
	rb->e[rb->n].time = time;
	rb->e[rb->n].seq = rb->n;
	rb->e[rb->n].off = rb->len;
	rb->e[rb->n].cpu = cpu;
	rb->n++;
	rb->len += rec->size;
	return 0;
}

static int cmp_rent(const void *a, const void *b)
{
	const struct rent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void recbuf_sort(struct recbuf *rb)
{
	util_sort(rb->e, rb->n, sizeof(*rb->e), cmp_rent);
}

size_t recbuf_count(const struct recbuf *rb)
{
	return rb->n;
}

const struct perf_event_header *recbuf_get(const struct recbuf *rb, size_t i, int *cpu)
{
	*cpu = rb->e[i].cpu;
	return (const void *)(rb->buf + rb->e[i].off);
}

struct copystore {
	struct fence_image *im;   /* ring of images, oldest at head */
	size_t n, cap, head;
	size_t bytes, max_bytes;
	uint64_t dropped;
};

struct copystore *copystore_new(size_t max_bytes)
{
	struct copystore *cs = calloc(1, sizeof(*cs));

	if (cs)
		cs->max_bytes = max_bytes;
	return cs;
}

static void drop_oldest(struct copystore *cs)
{
	struct fence_image *o = &cs->im[cs->head];

	cs->bytes -= o->len;
	free((void *)o->bytes);
	cs->head = (cs->head + 1) % cs->cap;
	cs->n--;
	cs->dropped++;
}

void copystore_free(struct copystore *cs)
{
	if (!cs)
		return;
	while (cs->n)
		drop_oldest(cs);
	free(cs->im);
	free(cs);
}

int copystore_add(struct copystore *cs, const struct fence_image *im)
{
	struct fence_image *d;
	uint8_t *b;

	if (!im->complete || !im->len)
		return 0;
	while (cs->n && cs->bytes + im->len > cs->max_bytes)
		drop_oldest(cs);
	if (cs->n == cs->cap) {
		size_t nc = cs->cap ? cs->cap * 2 : 256;
		struct fence_image *ni = malloc(nc * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		for (size_t i = 0; i < cs->n; i++)
			ni[i] = cs->im[(cs->head + i) % (cs->cap ? cs->cap : 1)];
		free(cs->im);
		cs->im = ni;
		cs->cap = nc;
		cs->head = 0;
	}
	if (!(b = malloc(im->len)))
		return -ENOMEM;
	memcpy(b, im->bytes, im->len);
	d = &cs->im[(cs->head + cs->n) % cs->cap];
	*d = *im;
	d->bytes = b;
	cs->n++;
	cs->bytes += im->len;
	return 0;
}

size_t copystore_count(const struct copystore *cs)
{
	return cs->n;
}

const struct fence_image *copystore_get(const struct copystore *cs, size_t i)
{
	return &cs->im[(cs->head + i) % cs->cap];
}

uint64_t copystore_dropped(const struct copystore *cs)
{
	return cs->dropped;
}
