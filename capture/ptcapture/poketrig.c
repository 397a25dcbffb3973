/* SPDX-License-Identifier: MIT */
#include "poketrig.h"
#include "poketrig.skel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct poketrig {
	struct poketrig_bpf *skel;
	struct ring_buffer *rb;
	poketrig_fn fn;
	void *ctx;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct poketrig *pt = ctx;

	if (size >= sizeof(struct poketrig_event))
		pt->fn(pt->ctx, data);
	return 0;
}

int poketrig_open(poketrig_fn fn, void *ctx, struct poketrig **out,
		  char *err, size_t errlen)
{
	struct poketrig *pt = calloc(1, sizeof(*pt));
	int rc;

	*out = NULL;
	if (!pt)
		return -ENOMEM;
	pt->fn = fn;
	pt->ctx = ctx;
	if (!(pt->skel = poketrig_bpf__open())) {
		rc = -errno;
		snprintf(err, errlen, "opening the poke trigger: %s", strerror(-rc));
		goto fail;
	}
	pt->skel->rodata->bpf_nr = SYS_bpf;
	if ((rc = poketrig_bpf__load(pt->skel))) {
		snprintf(err, errlen, "loading the poke trigger: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = poketrig_bpf__attach(pt->skel))) {
		snprintf(err, errlen, "attaching tp_btf/sys_enter, sys_exit: %s", strerror(-rc));
		goto fail;
	}
	pt->rb = ring_buffer__new(bpf_map__fd(pt->skel->maps.events), on_event, pt, NULL);
	if (!pt->rb) {
		rc = -errno;
		snprintf(err, errlen, "poke trigger ring: %s", strerror(-rc));
		goto fail;
	}
	*out = pt;
	return 0;
fail:
	poketrig_close(pt);
	return rc < 0 ? rc : -EINVAL;
}

void poketrig_close(struct poketrig *pt)
{
	if (!pt)
		return;
	ring_buffer__free(pt->rb);
	poketrig_bpf__destroy(pt->skel);
	free(pt);
}

int poketrig_epoll_fd(struct poketrig *pt)
{
	return ring_buffer__epoll_fd(pt->rb);
}

int poketrig_watch(struct poketrig *pt, unsigned slot, uint64_t addr, uint32_t len)
{
	struct poketrig_img im = { .addr = addr, .len = len };
	__u32 k = slot;

	if (slot >= POKETRIG_MAX_IMGS)
		return -EINVAL;
	return bpf_map_update_elem(bpf_map__fd(pt->skel->maps.imgs), &k, &im, BPF_ANY) ? -errno : 0;
}

int poketrig_drain(struct poketrig *pt)
{
	return ring_buffer__consume(pt->rb);
}

uint64_t poketrig_hash(const uint8_t *b, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t off = 0; off < len; off += 8) {
		uint64_t w = 0;

		/* little-endian words, the last one zero-padded */
		for (uint32_t i = 0; i < 8 && off + i < len; i++)
			w |= (uint64_t)b[off + i] << (8 * i);
		h = (h ^ w) * 0x100000001b3ull;
	}
	return h;
}
