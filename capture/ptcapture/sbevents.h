/* SPDX-License-Identifier: MIT */
/*
 * sbevents (stage: capture/ptcapture/) - per-CPU software dummy events that carry the sideband (MMAP2,
 * COMM, FORK/EXIT, KSYMBOL, BPF_EVENT, TEXT_POKE, SWITCH), and reading their
 * ring buffers.
 *
 * Two events per CPU, each with its own ring: "main" (everything but context
 * switches) wakes the reader on every record so BPF programs can be opened
 * by id quickly; "switch" (context_switch only) has a watermark of half its
 * ring, because the reader's own wakeups are context switches and would
 * otherwise wake it again at once.
 *
 * All records carry sample_id_all with SB_SAMPLE_TYPE, timestamps on
 * CLOCK_MONOTONIC (use_clockid), the clock bpf_ktime_get_ns() uses too.
 */
#ifndef PTCAP_SIDEBAND_H
#define PTCAP_SIDEBAND_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#define SB_SAMPLE_TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | \
			PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define SB_ID_TRAILER 40   /* bytes of the sample_id trailer for SB_SAMPLE_TYPE */
#define SB_CLOCKID 1       /* CLOCK_MONOTONIC */

enum { SB_MAIN, SB_SWITCH, SB_NKIND };

/* Called for each record; rec is contiguous (split records are joined)
 * and valid only during the call.  A nonzero return stops the drain. */
typedef int (*sbevents_fn)(void *ctx, const struct perf_event_header *rec, int cpu);

struct sbevents;

/* Opens the events on every online CPU.  pages: data pages per ring (power
 * of two).  backward != 0: flight recorder rings (write_backward, mapped
 * read-only, the kernel overwrites the oldest records; read them with
 * sbevents_read_backward while paused, never with sbevents_drain).
 * Returns 0 or -errno with a message in err that names what is
 * missing (CAP_PERFMON, perf_event_paranoid). */
int sbevents_open(unsigned pages_main, unsigned pages_switch, int backward,
		  struct sbevents **out, char *err, size_t errlen);
void sbevents_close(struct sbevents *sb);

/* The attr of one kind and the ids of its events (one per CPU). */
const struct perf_event_attr *sbevents_attr(const struct sbevents *sb, int kind);
size_t sbevents_ids(const struct sbevents *sb, int kind, const uint64_t **ids);
int sbevents_ncpus(const struct sbevents *sb);

/* Adds every ring's fd to the epoll set epfd (EPOLLIN). */
int sbevents_add_to_epoll(struct sbevents *sb, int epfd);

/* Reads every ring up to its current head.  Returns records read, or
 * negative when fn stopped or a ring was corrupt (the rest of that ring
 * was skipped and counted in corrupt_bytes). */
long sbevents_drain(struct sbevents *sb, sbevents_fn fn, void *ctx);

/* Enables (1) or disables (0) every event: disabled, nothing more is
 * written into the rings. */
int sbevents_enable(struct sbevents *sb, int enable);

/* At the end of a capture: disable, drain, then call this.  Hands fn one
 * synthesized PERF_RECORD_LOST (with time) per ring for the records the
 * kernel dropped but never reported in a LOST record of the ring (it
 * writes that only in front of a later record that fits).  Not while
 * enabled: the kernel could still report the same losses itself.
 * Returns LOST records made, -1 (read failed) or -2 (fn stopped). */
long sbevents_flush_lost(struct sbevents *sb, sbevents_fn fn, void *ctx, uint64_t time);

/* Pauses (1) or resumes (0) the output of every ring. */
int sbevents_pause(struct sbevents *sb, int pause);

/* Backward rings: hands over every record still in them, oldest first per
 * ring (rings one after the other: callers sort by time).  Pause first.
 * Returns records or -1 (a ring held a corrupt record; the rest of that
 * ring was skipped). */
long sbevents_read_backward(struct sbevents *sb, sbevents_fn fn, void *ctx);

/* Counts over all rings, forward reading. */
struct sbevents_stats {
	uint64_t records;        /* records read from the rings */
	uint64_t joined;         /* of them split at the ring end and joined */
	uint64_t corrupt, corrupt_bytes;   /* bad headers; bytes skipped */
	uint64_t lost_records, lost_events;/* LOST records (kernel + flush_lost) */
	uint64_t lost_pending;   /* of lost_events: reported by flush_lost */
	uint64_t trimmed;        /* oversized (sbevents_real_size), passed on trimmed */
};
void sbevents_stats(const struct sbevents *sb, struct sbevents_stats *st);

/* The size rec really has: less than rec->size for a KSYMBOL, BPF_EVENT
 * or TEXT_POKE record the kernel wrote oversized (another session records
 * sideband too).  Records reach sbevents_fn callbacks trimmed to it. */
size_t sbevents_real_size(const struct perf_event_header *rec);

/* Fields of the sample_id trailer of a record (0 if the record is short). */
uint64_t sbevents_time(const struct perf_event_header *rec);

/* Fills the sample_id trailer (the last SB_ID_TRAILER bytes of rec) of a
 * synthesized record. */
void sbevents_fill_trailer(struct perf_event_header *rec, uint32_t pid,
			   uint32_t tid, uint64_t time, uint64_t id, uint32_t cpu);

#endif
