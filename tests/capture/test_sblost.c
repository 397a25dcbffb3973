/* SPDX-License-Identifier: MIT */
/*
 * test_sblost - the sideband rings (sbevents) against the real kernel, with
 * records we make ourselves as the oracle: a thread pinned to one CPU
 * renames itself (prctl PR_SET_NAME) to "sbl<sequence>", and the kernel
 * writes one COMM record per rename into that CPU's 1-page main ring.
 *
 *  A. 200 renames, nobody reading: the ring fills, the rest is dropped and
 *     counted in the kernel (which may write a LOST record even now: when
 *     another task's larger record, e.g. an MMAP2, did not fit, a LOST and
 *     our smaller COMM may still fit; the count of those is printed);
 *  B. 600 renames, the ring read after each: ~10 trips around the ring, so
 *     records split at its end must be joined; the kernel writes its LOST
 *     record for A in front of the first record that fits;
 *  C. 200 renames, nobody reading, then disable, read, sbevents_flush_lost:
 *     the kernel never writes a LOST record for those after the last
 *     record that fitted; flush_lost must.
 *
 * Checked: our records come in order, intact (name, pid, tid, cpu), every
 * gap in the sequence is covered by the LOST counts reported between the
 * records around it, A's gap by a kernel LOST record, C's by a synthesized
 * one, and at least one record was joined.  Exit 77 without permission.
 */
#define _GNU_SOURCE
#include "sbevents.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NA 200
#define NB 600
#define NC 200

struct oracle {
	int cpu;
	uint32_t pid, tid;
	const uint64_t *main_ids;
	size_t nmain;
	uint64_t ring_id;       /* main ring of cpu, once seen */
	int next;               /* next sequence number expected */
	uint64_t lost_since;    /* LOST counts since our previous record */
	int phase;              /* 0 A/B, 2 C's drain, 1 flush_lost */
	uint64_t kernel_lost_recs, synth_lost_recs, synth_lost;
	uint64_t c_kernel_lost;  /* records lost by kernel LOST records read
				  * in C's drain */
	uint64_t lost_before_a;  /* kernel LOST records before one of A's */
	uint64_t gaps, gap_records, last_time;
	int bad;
};

static void failf(struct oracle *o, const char *msg, long v)
{
	if (o->bad++ < 10)
		fprintf(stderr, "test_sblost: %s (%ld)\n", msg, v);
}

static int is_main(const struct oracle *o, uint64_t id)
{
	for (size_t i = 0; i < o->nmain; i++)
		if (o->main_ids[i] == id)
			return 1;
	return 0;
}

static int on_rec(void *ctx, const struct perf_event_header *h, int cpu)
{
	struct oracle *o = ctx;
	const uint8_t *b = (const uint8_t *)h;
	const uint8_t *tr = b + h->size - SB_ID_TRAILER;
	uint64_t id, t;
	uint32_t pid, tid, rcpu;
	int seq;

	if (h->size < 8 + SB_ID_TRAILER) {
		failf(o, "record shorter than its sample_id trailer", h->size);
		return 0;
	}
	memcpy(&id, tr + 32, 8);
	memcpy(&rcpu, tr + 24, 4);
	if (cpu != o->cpu || !is_main(o, id))
		return 0;
	if (rcpu != (uint32_t)cpu)
		failf(o, "record of another CPU in this ring", (long)rcpu);
	if (o->ring_id && o->ring_id != id)
		failf(o, "two main rings on one CPU", (long)id);
	o->ring_id = id;
	t = sbevents_time(h);
	if (t < o->last_time && h->type != PERF_RECORD_LOST)
		failf(o, "time went backwards in the ring", (long)(o->last_time - t));
	if (h->type != PERF_RECORD_LOST)
		o->last_time = t;
	if (h->type == PERF_RECORD_LOST) {
		uint64_t n;

		memcpy(&n, b + 16, 8);
		o->lost_since += n;
		if (o->phase == 1)
			o->synth_lost_recs++, o->synth_lost += n;
		else
			o->kernel_lost_recs++;
		if (o->phase == 2)
			o->c_kernel_lost += n;
		return 0;
	}
	if (h->type != PERF_RECORD_COMM)
		return 0;
	memcpy(&pid, b + 8, 4);
	memcpy(&tid, b + 12, 4);
	if (pid != o->pid || tid != o->tid)
		return 0;
	if (h->size != 72 || strncmp((const char *)b + 16, "sbl", 3) ||
	    sscanf((const char *)b + 16 + 3, "%d", &seq) != 1) {
		failf(o, "our COMM record is not intact", h->size);
		return 0;
	}
	if (seq < o->next) {
		failf(o, "COMM record out of order or repeated", seq);
		return 0;
	}
	if (seq > o->next) {
		o->gaps++;
		o->gap_records += (uint64_t)(seq - o->next);
		if ((uint64_t)(seq - o->next) > o->lost_since)
			failf(o, "records missing without a LOST record covering them", seq);
	}
	o->next = seq + 1;
	o->lost_since = 0;
	if (seq < NA)
		o->lost_before_a = o->kernel_lost_recs;
	return 0;
}

static void rename_to(int seq)
{
	char name[16];

	snprintf(name, sizeof(name), "sbl%05d", seq);
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

int main(void)
{
	struct oracle o = { 0 };
	struct sbevents *sb;
	struct sbevents_stats st;
	char err[512];
	cpu_set_t set;
	int rc, seq = 0;
	uint64_t a_lost;

	o.cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(o.cpu, &set);
	if (o.cpu < 0 || sched_setaffinity(0, sizeof(set), &set)) {
		perror("test_sblost: pinning to a CPU");
		return 1;
	}
	rc = sbevents_open(1, 1, 0, &sb, err, sizeof(err));
	if (rc == -EACCES || rc == -EPERM) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	if (rc) {
		fprintf(stderr, "test_sblost: %s\n", err);
		return 1;
	}
	o.pid = (uint32_t)getpid();
	o.tid = (uint32_t)syscall(SYS_gettid);
	o.nmain = sbevents_ids(sb, SB_MAIN, &o.main_ids);

	for (int i = 0; i < NA; i++)            /* A: overflow, unread */
		rename_to(seq++);
	sbevents_drain(sb, on_rec, &o);
	a_lost = o.lost_before_a;
	for (int i = 0; i < NB; i++) {          /* B: wrap, read as we go */
		rename_to(seq++);
		if (sbevents_drain(sb, on_rec, &o) < 0)
			failf(&o, "corrupt ring", i);
	}
	for (int i = 0; i < NC; i++)            /* C: overflow at the end */
		rename_to(seq++);
	if (sbevents_enable(sb, 0))
		failf(&o, "disabling failed", errno);
	o.phase = 2;
	if (sbevents_drain(sb, on_rec, &o) < 0)
		failf(&o, "corrupt ring", 0);
	o.phase = 1;
	if (sbevents_flush_lost(sb, on_rec, &o, o.last_time + 1) < 0)
		failf(&o, "flush_lost failed", errno);
	if (seq > o.next) {                     /* the tail C dropped */
		o.gaps++;
		o.gap_records += (uint64_t)(seq - o.next);
		if ((uint64_t)(seq - o.next) > o.lost_since)
			failf(&o, "records missing at the end without a LOST record", seq - o.next);
	}
	sbevents_stats(sb, &st);
	sbevents_close(sb);

	printf("test_sblost: CPU %d: %d renames, %" PRIu64 " gaps (%" PRIu64 " records), "
	       "kernel LOST records %" PRIu64 " (before A's records: %" PRIu64 "), synthesized %"
	       PRIu64 " (%" PRIu64 " lost), all rings: %" PRIu64 " records, %" PRIu64
	       " joined, %" PRIu64 " lost, %" PRIu64 " corrupt bytes\n",
	       o.cpu, seq, o.gaps, o.gap_records, o.kernel_lost_recs, a_lost,
	       o.synth_lost_recs, o.synth_lost, st.records, st.joined, st.lost_events,
	       st.corrupt_bytes);
	if (!o.kernel_lost_recs)
		failf(&o, "no kernel LOST record for phase A", 0);
	/* C's losses after the last record that fitted are never written by
	 * the kernel; it may have written a LOST for some before (a LOST
	 * fits where a COMM does not) */
	if (!o.synth_lost_recs || o.synth_lost + o.c_kernel_lost < NC - 4096 / 72)
		failf(&o, "phase C losses not reported by flush_lost", (long)o.synth_lost);
	if (!st.joined)
		failf(&o, "no record split at the ring end: wrap path not exercised", 0);
	if (st.corrupt_bytes)
		failf(&o, "corrupt bytes in a ring", (long)st.corrupt_bytes);
	if (st.lost_pending < o.synth_lost)
		failf(&o, "flush_lost not counted in the stats", (long)st.lost_pending);
	return o.bad ? 1 : 0;
}
