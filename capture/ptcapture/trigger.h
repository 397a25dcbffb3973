/* SPDX-License-Identifier: MIT */
/*
 * trigger - the flight recorder's in-kernel trigger: a hardware breakpoint
 * (PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) on a user function, with a
 * BPF_PROG_TYPE_PERF_EVENT program (trigger.bpf.c) attached that decides
 * which hits call for a snapshot and tells user space through a ring.
 *
 * Spec: "bp:BINARY:SYMBOL".  The symbol's ELF address is relocated by the
 * load bias of BINARY in the traced process (/proc/PID/maps); without a
 * process (system-wide) the ELF address is used as is, which is right for
 * non-PIE executables only.
 */
#ifndef PTCAP_TRIGGER_H
#define PTCAP_TRIGGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "trigger_event.h"

struct trigger_spec {
	char binary[4096];
	char symbol[256];
	uint64_t every;       /* snapshot on every Nth hit (>= 1) */
	uint64_t max_fires;   /* 0 = no limit */
};

/* Parses "bp:BINARY:SYMBOL" (every/max_fires are left alone). */
int trigger_parse(const char *s, struct trigger_spec *t, char *err, size_t errlen);

/* The runtime address of the symbol in process pid (or its ELF address
 * when pid <= 0).  Returns 0 or -errno with a message. */
int trigger_resolve(const struct trigger_spec *t, pid_t pid, uint64_t *addr,
		    char *err, size_t errlen);

typedef void (*trigger_fn)(void *ctx, const struct trigger_event *e);

struct trigger;

/* Breakpoint at addr in pid (following its children), or on every CPU
 * when pid <= 0, with the deciding program attached. */
int trigger_open(const struct trigger_spec *t, pid_t pid, uint64_t addr,
		 trigger_fn fn, void *ctx, struct trigger **out,
		 char *err, size_t errlen);
int trigger_epoll_fd(const struct trigger *tr);
/* Delivers waiting trigger events; returns how many or negative. */
int trigger_poll(struct trigger *tr);
/* Hits seen by the program, snapshots it asked for, ring drops. */
void trigger_counts(const struct trigger *tr, uint64_t *hits, uint64_t *fires,
		    uint64_t *drops);
void trigger_close(struct trigger *tr);

#endif
