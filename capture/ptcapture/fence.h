/* SPDX-License-Identifier: MIT */
/*
 * fence (stage: capture/ptcapture/) - loads the text-free fence (fence.bpf.c), picks the hook the
 * running kernel allows, and reassembles the JIT image copies it sends.
 */
#ifndef PTCAP_FENCE_H
#define PTCAP_FENCE_H

#include <stddef.h>
#include <stdint.h>

/* One image copy.  complete == 0: some chunks were lost (ring full) or
 * unreadable; bytes then holds what arrived (holes are zero). */
struct fence_image {
	uint64_t addr, time;
	uint32_t len;
	uint16_t img, nimg;
	uint8_t tag[8], prog_tag[8];
	const uint8_t *bytes;
	int complete;
};

typedef void (*fence_image_fn)(void *ctx, const struct fence_image *im);

struct fence_counters {
	uint64_t progs, images, chunks, drops, too_many; /* from the BPF side */
	uint64_t delivered, incomplete;                    /* user side */
};

struct fence;

/* free_deferred_addr: address of bpf_prog_free_deferred (kallsyms). */
int fence_open(uint64_t free_deferred_addr, fence_image_fn fn, void *ctx,
	       struct fence **out, char *err, size_t errlen);
/* "fentry/bpf_prog_free" or "tp_btf/workqueue_execute_start". */
const char *fence_hook(const struct fence *f);
/* An fd that becomes readable when chunks are waiting (for epoll). */
int fence_epoll_fd(const struct fence *f);
/* Consumes all waiting chunks; returns chunks read or negative. */
int fence_drain(struct fence *f);
void fence_get_counters(const struct fence *f, struct fence_counters *c);
/* Detaches, drains, delivers incomplete images, fills the final counters
 * into c (when not NULL), frees. */
void fence_close(struct fence *f, struct fence_counters *c);

#endif
