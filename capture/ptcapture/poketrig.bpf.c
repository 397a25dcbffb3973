// SPDX-License-Identifier: MIT
/*
 * poketrig - the cheaper trigger for jitpoll: on entry to and exit from
 * every bpf() map update or delete (the syscalls that re-patch tail-call
 * sites of programs using a prog array), hash the watched JIT images and
 * report the hashes.  A hash at entry equal to the current version extends
 * it to that moment; one at exit that differs dates the new version.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "poketrig_event.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile long bpf_nr = 321;   /* __NR_bpf, set by the loader */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, POKETRIG_MAX_IMGS);
	__type(key, __u32);
	__type(value, struct poketrig_img);
} imgs SEC(".maps");

/* Threads inside a watched bpf() call: pid_tgid -> cmd. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
} inside SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct hctx {
	__u64 addr, h;
	__u32 len;
};

static long hash_word(__u64 i, struct hctx *c)
{
	__u64 w = 0, off = i * 8;

	if (off >= c->len)
		return 1;
	bpf_probe_read_kernel(&w, 8, (void *)(c->addr + off));
	if (c->len - off < 8)
		w &= (1ull << ((c->len - off) * 8)) - 1;
	c->h = (c->h ^ w) * 0x100000001b3ull;
	return 0;
}

static void report(__u32 phase, __u32 cmd)
{
	for (__u32 i = 0; i < POKETRIG_MAX_IMGS; i++) {
		__u32 k = i;
		struct poketrig_img *im = bpf_map_lookup_elem(&imgs, &k);
		struct poketrig_event *e;
		struct hctx c;
		__u64 t0;

		if (!im || !im->len || im->len > 65536)
			continue;
		c.addr = im->addr;
		c.len = im->len;
		c.h = 0xcbf29ce484222325ull;
		t0 = bpf_ktime_get_ns();
		bpf_loop((im->len + 7) / 8, hash_word, &c, 0);
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e)
			continue;
		e->t1 = bpf_ktime_get_ns();
		e->t0 = t0;
		e->addr = c.addr;
		e->hash = c.h;
		e->phase = phase;
		e->cmd = cmd;
		bpf_ringbuf_submit(e, 0);
	}
}

SEC("tp_btf/sys_enter")
int BPF_PROG(poketrig_enter, struct pt_regs *regs, long id)
{
	__u64 key = bpf_get_current_pid_tgid();
	__u32 cmd;

	if (id != bpf_nr)
		return 0;
	cmd = (__u32)PT_REGS_PARM1_CORE(regs);
	if (cmd != BPF_MAP_UPDATE_ELEM && cmd != BPF_MAP_DELETE_ELEM &&
	    cmd != BPF_MAP_UPDATE_BATCH && cmd != BPF_MAP_DELETE_BATCH)
		return 0;
	bpf_map_update_elem(&inside, &key, &cmd, BPF_ANY);
	report(0, cmd);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(poketrig_exit, struct pt_regs *regs, long ret)
{
	__u64 key = bpf_get_current_pid_tgid();
	__u32 *cmd = bpf_map_lookup_elem(&inside, &key), c;

	if (!cmd)
		return 0;
	c = *cmd;
	bpf_map_delete_elem(&inside, &key);
	report(1, c);
	return 0;
}
