/* SPDX-License-Identifier: MIT */
/* poketrig_event (stage: capture/ptcapture/) - the record poketrig.bpf.c
 * sends to poketrig.c; shared by both. */
#ifndef PTCAP_POKETRIG_EVENT_H
#define PTCAP_POKETRIG_EVENT_H

#define POKETRIG_MAX_IMGS 16

/* One watched JIT image (len 0: free slot). */
struct poketrig_img {
	__u64 addr;
	__u32 len, pad;
};

/* The hash of a watched image's bytes (FNV-1a over 64-bit little-endian
 * words, the last one zero-padded), read between t0 and t1: before the
 * work of a bpf() map update/delete (phase 0) or after it (phase 1). */
struct poketrig_event {
	__u64 t0, t1, addr, hash;
	__u32 phase, cmd;
};

#endif
