/* SPDX-License-Identifier: MIT */
/*
 * trigger (stage: capture/ptcapture/) - the flight recorder's in-kernel trigger: a program
 * (trigger.bpf.c) run on every hit of a user function decides which hits
 * call for a snapshot and tells user space through a ring.  The hits come
 * from a hardware breakpoint (PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) or,
 * on machines where breakpoints do not fire (some VMs offer the PMU but
 * never deliver the debug exception), from a uprobe.
 *
 * Spec: "bp:BINARY:SYMBOL" - a breakpoint if a test breakpoint on our own
 * code fires, else a uprobe; "uprobe:BINARY:SYMBOL" - a uprobe.  For the
 * breakpoint the symbol's ELF address is relocated by the load bias of
 * BINARY in the traced process (/proc/PID/maps); without a process
 * (system-wide) the ELF address is used as is, which is right for non-PIE
 * executables only.  The uprobe goes at the symbol's file offset and so
 * is right for any binary; with a process it sees that process's threads,
 * not its forked children.
 */
#ifndef PTCAP_TRIGGER_H
#define PTCAP_TRIGGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "trigger_event.h"

enum trigger_mech { TRIGGER_AUTO, TRIGGER_UPROBE };

struct trigger_spec {
	enum trigger_mech mech;
	char binary[4096];
	char symbol[256];
	uint64_t every;       /* snapshot on every Nth hit (>= 1) */
	uint64_t max_fires;   /* 0 = no limit */
};

/* Parses "bp:BINARY:SYMBOL" or "uprobe:BINARY:SYMBOL" (every/max_fires
 * are left alone). */
int trigger_parse(const char *s, struct trigger_spec *t, char *err, size_t errlen);

typedef void (*trigger_fn)(void *ctx, const struct trigger_event *e);

struct trigger;

/* Breakpoint on the symbol in pid (following its children) or in every
 * process when pid <= 0, or a uprobe (above), with the deciding program
 * attached. */
int trigger_open(const struct trigger_spec *t, pid_t pid, trigger_fn fn, void *ctx,
		 struct trigger **out, char *err, size_t errlen);
/* "breakpoint" or "uprobe". */
const char *trigger_mechanism(const struct trigger *tr);
/* Where it is ("breakpoint at 0x... (SYM) in process N") and why this
 * mechanism ("hardware breakpoints do not fire here: ..."). */
const char *trigger_desc(const struct trigger *tr);
const char *trigger_why(const struct trigger *tr);
int trigger_epoll_fd(const struct trigger *tr);
/* Delivers waiting trigger events; returns how many or negative. */
int trigger_poll(struct trigger *tr);
/* Hits seen by the program, snapshots it asked for, ring drops. */
void trigger_counts(const struct trigger *tr, uint64_t *hits, uint64_t *fires,
		    uint64_t *drops);
void trigger_close(struct trigger *tr);

#endif
