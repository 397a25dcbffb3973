/* SPDX-License-Identifier: MIT */
#include "fence.h"
#include "fence_chunk.h"
#include "fence.skel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

/* An image being reassembled; chunks of one image arrive in order from one
 * CPU, but chunks of images freed on other CPUs may interleave. */
struct pending {
	struct fence_image im;
	uint8_t *buf;
	uint32_t got;     /* bytes received */
	int bad;          /* a chunk was unreadable */
};

struct fence {
	struct fence_bpf *skel;
	struct ring_buffer *rb;
	const char *hook;
	fence_image_fn fn;
	void *ctx;
	struct pending *pend;
	size_t npend, cap;
	uint64_t delivered, incomplete;
};

static void deliver(struct fence *f, size_t i)
{
	struct pending *p = &f->pend[i];

	p->im.bytes = p->buf;
	p->im.complete = p->got == p->im.len && !p->bad;
	if (p->im.complete)
		f->delivered++;
	else
		f->incomplete++;
	f->fn(f->ctx, &p->im);
	free(p->buf);
	f->pend[i] = f->pend[--f->npend];
}

static int on_chunk(void *ctx, void *data, size_t size)
{
	struct fence *f = ctx;
	const struct fence_chunk *c = data;
	struct pending *p = NULL;

	if (size < sizeof(*c) || c->n > FENCE_CHUNK || c->off > c->len ||
	    c->n > c->len - c->off)
		return 0; /* cannot happen with our program; ignore */
	for (size_t i = f->npend; i-- > 0;)
		if (f->pend[i].im.addr == c->addr && f->pend[i].im.time == c->time) {
			p = &f->pend[i];
			break;
		}
	if (!p) {
		if (f->npend == f->cap) {
			size_t nc = f->cap ? f->cap * 2 : 64;
			struct pending *np = realloc(f->pend, nc * sizeof(*np));

			if (!np)
				return -ENOMEM;
			f->pend = np;
			f->cap = nc;
		}
		p = &f->pend[f->npend];
		memset(p, 0, sizeof(*p));
		if (!(p->buf = calloc(1, c->len)))
			return -ENOMEM;
		f->npend++;
		p->im.addr = c->addr;
		p->im.time = c->time;
		p->im.len = c->len;
		p->im.img = c->img;
		p->im.nimg = c->nimg;
		memcpy(p->im.tag, c->tag, 8);
		memcpy(p->im.prog_tag, c->prog_tag, 8);
	}
	memcpy(p->buf + c->off, c->data, c->n);
	p->got += c->n;
	if (c->flags & FENCE_F_READ_FAILED)
		p->bad = 1;
	if (p->got >= p->im.len)
		deliver(f, (size_t)(p - f->pend));
	return 0;
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* Opens and loads the skeleton with only the program `which` enabled. */
static int try_hook(struct fence *f, uint64_t addr, int which, char *err, size_t errlen)
{
	struct fence_bpf *s = fence_bpf__open();
	int rc;

	if (!s)
		return -errno;
	s->rodata->free_deferred_addr = addr;
	bpf_program__set_autoload(s->progs.fence_fentry, which == 0);
	bpf_program__set_autoload(s->progs.fence_wq, which == 1);
	rc = fence_bpf__load(s);
	if (!rc)
		rc = which == 0 ? (s->links.fence_fentry = bpf_program__attach(s->progs.fence_fentry)) ? 0 : -errno
				: (s->links.fence_wq = bpf_program__attach(s->progs.fence_wq)) ? 0 : -errno;
	if (rc) {
		snprintf(err, errlen, "%s: %s", which == 0 ? "fentry/bpf_prog_free" :
			 "tp_btf/workqueue_execute_start", strerror(-rc));
		fence_bpf__destroy(s);
		return rc;
	}
	f->skel = s;
	f->hook = which == 0 ? "fentry/bpf_prog_free" : "tp_btf/workqueue_execute_start";
	return 0;
}

int fence_open(uint64_t free_deferred_addr, fence_image_fn fn, void *ctx,
	       struct fence **out, char *err, size_t errlen)
{
	struct fence *f = calloc(1, sizeof(*f));
	libbpf_print_fn_t old;
	char e0[256] = "", e1[256] = "";
	int rc;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->fn = fn;
	f->ctx = ctx;
	/* Refused hooks are expected: keep libbpf's load logs quiet unless
	 * PTCAPTURE_VERBOSE is set. */
	old = libbpf_set_print(getenv("PTCAPTURE_VERBOSE") ? NULL : silent);
	if (getenv("PTCAPTURE_VERBOSE"))
		libbpf_set_print(old);
	rc = try_hook(f, free_deferred_addr, 0, e0, sizeof(e0));
	if (rc && free_deferred_addr)
		rc = try_hook(f, free_deferred_addr, 1, e1, sizeof(e1));
	libbpf_set_print(old);
	if (rc) {
		snprintf(err, errlen, "no fence hook allowed: %s; %s", e0,
			 free_deferred_addr ? e1 : "bpf_prog_free_deferred not in kallsyms");
		free(f);
		return rc;
	}
	f->rb = ring_buffer__new(bpf_map__fd(f->skel->maps.fence_ring), on_chunk, f, NULL);
	if (!f->rb) {
		rc = -errno;
		snprintf(err, errlen, "fence ring buffer: %s", strerror(-rc));
		fence_bpf__destroy(f->skel);
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}

const char *fence_hook(const struct fence *f)
{
	return f->hook;
}

int fence_epoll_fd(const struct fence *f)
{
	return ring_buffer__epoll_fd(f->rb);
}

int fence_drain(struct fence *f)
{
	return ring_buffer__consume(f->rb);
}

void fence_get_counters(const struct fence *f, struct fence_counters *c)
{
	const struct fence_bpf__bss *b = f->skel->bss;

	c->progs = b->fence_progs;
	c->images = b->fence_images;
	c->chunks = b->fence_chunks;
	c->drops = b->fence_drops;
	c->too_many = b->fence_too_many;
	c->delivered = f->delivered;
	c->incomplete = f->incomplete;
}

void fence_close(struct fence *f, struct fence_counters *c)
{
	if (!f)
		return;
	fence_bpf__detach(f->skel);
	ring_buffer__consume(f->rb);
	while (f->npend)
		deliver(f, f->npend - 1);
	if (c)
		fence_get_counters(f, c);
	ring_buffer__free(f->rb);
	fence_bpf__destroy(f->skel);
	free(f->pend);
	free(f);
}
