/* SPDX-License-Identifier: MIT */
/*
 * trigger_event (stage: capture/ptcapture/) - what the flight recorder's trigger program (trigger.bpf.c)
 * sends to user space when it decides that a snapshot is due; shared by
 * the BPF program and trigger.c.
 */
#ifndef PTCAP_TRIGGER_EVENT_H
#define PTCAP_TRIGGER_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct trigger_event {
	__u64 time;      /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) of the hit */
	__u64 hits;      /* hits so far, this one included */
	__u64 ip;        /* user instruction pointer at the hit */
	__u32 pid, tid;
};

#endif
