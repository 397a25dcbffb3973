/* SPDX-License-Identifier: MIT */
/*
 * fence_chunk (stage: capture/ptcapture/) - the record the text-free fence (fence.bpf.c) puts into its
 * BPF ring buffer, shared by the BPF program and user space (fence.c).
 *
 * One JIT image is sent as ceil(len / FENCE_CHUNK) chunks of constant size;
 * all chunks of one freed program carry the same time, so (time, addr)
 * names one image copy.
 */
#ifndef PTCAP_FENCE_CHUNK_H
#define PTCAP_FENCE_CHUNK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FENCE_CHUNK 512        /* data bytes per ring record */
#define FENCE_MAX_IMAGES 64    /* subprograms copied per program */
#define FENCE_RING_BYTES (8u << 20)

#define FENCE_F_READ_FAILED 1  /* bpf_probe_read_kernel failed: data invalid */

struct fence_chunk {
	__u64 addr;      /* bpf_func of this image */
	__u64 time;      /* bpf_ktime_get_ns() when the program was freed */
	__u32 len;       /* jited_len of this image */
	__u32 off;       /* offset of data[] in the image */
	__u32 n;         /* valid bytes in data[] */
	__u16 img;       /* image index (0 = main / func[0]) */
	__u16 nimg;      /* images of this program */
	__u32 flags;     /* FENCE_F_* */
	__u8 tag[8];     /* tag of this image (prog->tag) */
	__u8 prog_tag[8];/* tag of the main program */
	__u8 data[FENCE_CHUNK];
};

#endif
