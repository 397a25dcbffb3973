// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The flight recorder's trigger: runs on every hit of the user function it
 * watches, as a hardware breakpoint's overflow program (perf_event) or as a
 * uprobe where breakpoints do not fire, and decides in the kernel whether
 * this hit deserves a snapshot: every `every`-th hit, at most `max_fires`
 * times (0 = no limit).  Only then does it wake user space, through a ring
 * buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "trigger_event.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 every = 1;
const volatile __u64 max_fires = 0;

__u64 trigger_hits = 0;
__u64 trigger_fires = 0;
__u64 trigger_drops = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} trigger_ring SEC(".maps");

static __always_inline int on_hit(__u64 ip)
{
	__u64 n = __sync_fetch_and_add(&trigger_hits, 1) + 1;
	__u64 id = bpf_get_current_pid_tgid();
	struct trigger_event *e;

	if (every > 1 && n % every)
		return 0;
	if (max_fires && __sync_fetch_and_add(&trigger_fires, 1) >= max_fires)
		return 0;
	e = bpf_ringbuf_reserve(&trigger_ring, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&trigger_drops, 1);
		return 0;
	}
	e->time = bpf_ktime_get_ns();
	e->hits = n;
	e->ip = ip;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("perf_event")
int trigger_hit(struct bpf_perf_event_data *ctx)
{
	return on_hit(PT_REGS_IP(&ctx->regs));
}

SEC("uprobe")
int trigger_uprobe(struct pt_regs *ctx)
{
	return on_hit(PT_REGS_IP(ctx));
}
