/* SPDX-License-Identifier: MIT */
/*
 * poketrig (stage: capture/ptcapture/) - loads poketrig.bpf.c (tp_btf/sys_enter + sys_exit): for every
 * bpf() map update or delete, the hashes of up to POKETRIG_MAX_IMGS
 * watched JIT images just before and just after the call, so that jitpoll
 * can date a rewrite to the syscall instead of its polling interval.
 */
#ifndef PTCAP_POKETRIG_H
#define PTCAP_POKETRIG_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "poketrig_event.h"

struct poketrig;
typedef void (*poketrig_fn)(void *ctx, const struct poketrig_event *e);

/* Returns 0 or -errno with a message in err. */
int poketrig_open(poketrig_fn fn, void *ctx, struct poketrig **out,
		  char *err, size_t errlen);
void poketrig_close(struct poketrig *pt);
int poketrig_epoll_fd(struct poketrig *pt);
/* Watches [addr, addr + len) in slot (< POKETRIG_MAX_IMGS); len 0 frees
 * the slot. */
int poketrig_watch(struct poketrig *pt, unsigned slot, uint64_t addr, uint32_t len);
/* Hands every event in the ring to fn.  Returns events or -errno. */
int poketrig_drain(struct poketrig *pt);
/* The hash the BPF side computes, over bytes in memory. */
uint64_t poketrig_hash(const uint8_t *b, uint32_t len);

#endif
