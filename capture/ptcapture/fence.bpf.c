// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The text-free fence: copies the JIT images of a BPF program out of the
 * kernel just before they are freed, so that a program that lived only
 * microseconds (gone before user space can open it by id) still leaves its
 * exact bytes for the decoder.
 *
 * Two hooks, the loader picks the first the kernel allows:
 *  - fentry/bpf_prog_free (direct, but needs a BPF trampoline);
 *  - tp_btf/workqueue_execute_start, recognising the deferred free work
 *    item (work->func == bpf_prog_free_deferred, address from kallsyms):
 *    the images are still mapped when the work starts.
 * Chunks are constant-size ring reservations; the chunk loop is a
 * bpf_loop() callback to stay within the verifier's budget.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "fence_chunk.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 free_deferred_addr = 0;

/* Read by user space through the skeleton's bss mapping. */
__u64 fence_progs = 0;    /* programs seen being freed */
__u64 fence_images = 0;   /* images copied (or attempted) */
__u64 fence_chunks = 0;   /* chunks submitted */
__u64 fence_drops = 0;    /* chunks lost: ring full */
__u64 fence_too_many = 0; /* images beyond FENCE_MAX_IMAGES, not copied */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FENCE_RING_BYTES);
} fence_ring SEC(".maps");

struct copy_ctx {
	__u64 src;
	__u64 time;
	__u32 len;
	__u16 img, nimg;
	__u8 tag[8];
	__u8 prog_tag[8];
};

static long copy_chunk(__u32 i, void *data)
{
	struct copy_ctx *c = data;
	struct fence_chunk *ch;
	__u32 off = i * FENCE_CHUNK, n;
	long rc;

	if (off >= c->len)
		return 1;
	ch = bpf_ringbuf_reserve(&fence_ring, sizeof(*ch), 0);
	if (!ch) {
		__sync_fetch_and_add(&fence_drops, 1);
		return 0; /* later chunks may fit; user space sees the hole */
	}
	n = c->len - off;
	if (n > FENCE_CHUNK)
		n = FENCE_CHUNK;
	ch->addr = c->src;
	ch->time = c->time;
	ch->len = c->len;
	ch->off = off;
	ch->n = n;
	ch->img = c->img;
	ch->nimg = c->nimg;
	ch->flags = 0;
	__builtin_memcpy(ch->tag, c->tag, 8);
	__builtin_memcpy(ch->prog_tag, c->prog_tag, 8);
	/* Two reads so the verifier sees a constant or a masked size
	 * (FENCE_CHUNK is a power of two; the mask changes nothing). */
	if (n == FENCE_CHUNK)
		rc = bpf_probe_read_kernel(ch->data, FENCE_CHUNK, (void *)(c->src + off));
	else
		rc = bpf_probe_read_kernel(ch->data, n & (FENCE_CHUNK - 1), (void *)(c->src + off));
	if (rc)
		ch->flags = FENCE_F_READ_FAILED;
	bpf_ringbuf_submit(ch, 0);
	__sync_fetch_and_add(&fence_chunks, 1);
	return 0;
}

static __always_inline void copy_image(struct bpf_prog *p, struct copy_ctx *c)
{
	c->src = (__u64)BPF_CORE_READ(p, bpf_func);
	c->len = BPF_CORE_READ(p, jited_len);
	bpf_probe_read_kernel(c->tag, 8, &p->tag);
	if (!c->src || !c->len)
		return;
	__sync_fetch_and_add(&fence_images, 1);
	bpf_loop((c->len + FENCE_CHUNK - 1) / FENCE_CHUNK, copy_chunk, c, 0);
}

static __always_inline void fence_prog(struct bpf_prog *prog)
{
	struct bpf_prog_aux *aux = BPF_CORE_READ(prog, aux);
	struct bpf_prog **func;
	struct copy_ctx c = {};
	__u32 n;

	if (!aux || !BPF_CORE_READ_BITFIELD_PROBED(prog, jited))
		return;
	__sync_fetch_and_add(&fence_progs, 1);
	c.time = bpf_ktime_get_ns();
	bpf_probe_read_kernel(c.prog_tag, 8, &prog->tag);
	/* real_func_cnt counts hidden subprogs too (exception callbacks). */
	if (bpf_core_field_exists(aux->real_func_cnt))
		n = BPF_CORE_READ(aux, real_func_cnt);
	else
		n = BPF_CORE_READ(aux, func_cnt);
	func = BPF_CORE_READ(aux, func);
	if (!n || !func) {
		c.nimg = 1;
		copy_image(prog, &c);
		return;
	}
	/* With subprograms, func[0] is the main image (prog->bpf_func). */
	if (n > FENCE_MAX_IMAGES) {
		__sync_fetch_and_add(&fence_too_many, n - FENCE_MAX_IMAGES);
		n = FENCE_MAX_IMAGES;
	}
	c.nimg = n;
	for (__u32 i = 0; i < FENCE_MAX_IMAGES; i++) {
		struct bpf_prog *f = NULL;

		if (i >= n)
			break;
		bpf_probe_read_kernel(&f, sizeof(f), &func[i]);
		if (!f)
			continue;
		c.img = i;
		copy_image(f, &c);
	}
}

SEC("fentry/bpf_prog_free")
int BPF_PROG(fence_fentry, struct bpf_prog *fp)
{
	fence_prog(fp);
	return 0;
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(fence_wq, struct work_struct *work)
{
	struct bpf_prog_aux *aux;

	if (!free_deferred_addr ||
	    (__u64)BPF_CORE_READ(work, func) != free_deferred_addr)
		return 0;
	aux = (void *)work - bpf_core_field_offset(struct bpf_prog_aux, work);
	fence_prog(BPF_CORE_READ(aux, prog));
	return 0;
}
