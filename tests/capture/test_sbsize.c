/* SPDX-License-Identifier: MIT */
/*
 * test_sbsize - KSYMBOL and BPF_EVENT records while other sessions record
 * sideband too.  The kernel writes these records to every matching event
 * from one shared header and adds each event's sample_id size to it, so
 * all but the first event get them oversized, with stale ring bytes after
 * the trailer: read from the end, their time is garbage.
 *
 * Two foreign dummy events per CPU (opened before and after ours), then a
 * tiny BPF program loaded and closed: each of its KSYMBOL and BPF_EVENT
 * records must reach us with the time of the load or the unload, our pid
 * on the REGISTER and PROG_LOAD, and the size sbevents_real_size gives.
 * Also sbevents_real_size on records made here.  Exit 77 without
 * permission.
 */
#define _GNU_SOURCE
#include "sbevents.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NAME "sbsize_probe"
#define MAXR 64

/* Our program's records as they reached us. */
struct got {
	uint16_t type, what;    /* KSYMBOL: flags; BPF_EVENT: its type */
	uint32_t pid, cpu;
	int ring_cpu, oversized;
	uint64_t time;
};

struct seen {
	uint32_t id;
	struct got r[MAXR];
	int n, unreg, unload, bad;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void failf(struct seen *s, const char *msg, uint64_t v)
{
	if (s->bad++ < 10)
		fprintf(stderr, "test_sbsize: %s (%" PRIu64 ")\n", msg, v);
}

static int on_rec(void *ctx, const struct perf_event_header *h, int cpu)
{
	struct seen *s = ctx;
	const uint8_t *b = (const uint8_t *)h;
	struct got g = { .type = h->type, .ring_cpu = cpu };
	uint32_t id;

	if (h->size < 24 + SB_ID_TRAILER)
		return 0;
	if (h->type == PERF_RECORD_KSYMBOL) {
		if (!memchr(b + 24, 0, h->size - 24) || !strstr((const char *)b + 24, "_" NAME))
			return 0;
		memcpy(&g.what, b + 22, 2);
		s->unreg += !!(g.what & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER);
	} else if (h->type == PERF_RECORD_BPF_EVENT) {
		memcpy(&id, b + 12, 4);
		if (!s->id || id != s->id)
			return 0;
		memcpy(&g.what, b + 8, 2);
		s->unload += g.what == PERF_BPF_EVENT_PROG_UNLOAD;
	} else {
		return 0;
	}
	g.oversized = sbevents_real_size(h) != h->size;
	memcpy(&g.pid, b + h->size - SB_ID_TRAILER, 4);
	memcpy(&g.cpu, b + h->size - SB_ID_TRAILER + 24, 4);
	g.time = sbevents_time(h);
	if (s->n < MAXR)
		s->r[s->n++] = g;
	return 0;
}

static int foreign(int cpu)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	a.ksymbol = 1;
	a.bpf_event = 1;
	return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, 0);
}

static int load_prog(void)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uint64_t)(uintptr_t)"GPL";
	snprintf(a.prog_name, sizeof(a.prog_name), "%s", NAME);
	return (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
}

static uint32_t prog_id(int fd)
{
	struct bpf_prog_info info;
	union bpf_attr a;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uint64_t)(uintptr_t)&info;
	return syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a)) ? 0 : info.id;
}

/* sbevents_real_size on records made here: name padding, TEXT_POKE
 * padding, and sizes that are already right. */
static void unit(struct seen *s)
{
	union {
		struct perf_event_header h;
		uint8_t b[512];
	} r;
	uint16_t ol = 3, nl = 5;

	memset(&r, 0xab, sizeof(r));
	r.h.type = PERF_RECORD_KSYMBOL;
	memcpy(r.b + 24, "bpf_prog_0123456789abcdef_x", 28);   /* 27 + NUL -> 32 */
	r.h.size = 24 + 32 + SB_ID_TRAILER + 2 * SB_ID_TRAILER;
	if (sbevents_real_size(&r.h) != 24 + 32 + SB_ID_TRAILER)
		failf(s, "KSYMBOL real size", sbevents_real_size(&r.h));
	r.h.size = 24 + 32 + SB_ID_TRAILER;
	if (sbevents_real_size(&r.h) != r.h.size)
		failf(s, "KSYMBOL of the right size changed", sbevents_real_size(&r.h));
	memset(r.b + 24, 'x', 200);                               /* no NUL */
	r.h.size = 24 + 64 + SB_ID_TRAILER;
	if (sbevents_real_size(&r.h) != r.h.size)
		failf(s, "KSYMBOL without a NUL changed", sbevents_real_size(&r.h));
	r.h.type = PERF_RECORD_BPF_EVENT;
	r.h.size = 24 + 3 * SB_ID_TRAILER;
	if (sbevents_real_size(&r.h) != 24 + SB_ID_TRAILER)
		failf(s, "BPF_EVENT real size", sbevents_real_size(&r.h));
	r.h.type = PERF_RECORD_TEXT_POKE;
	memcpy(r.b + 16, &ol, 2);
	memcpy(r.b + 18, &nl, 2);
	r.h.size = 16 + 16 + 2 * SB_ID_TRAILER;                   /* 4 + 8 -> 16 */
	if (sbevents_real_size(&r.h) != 16 + 16 + SB_ID_TRAILER)
		failf(s, "TEXT_POKE real size", sbevents_real_size(&r.h));
	r.h.type = PERF_RECORD_COMM;
	r.h.size = 200;
	if (sbevents_real_size(&r.h) != 200)
		failf(s, "COMM size changed", sbevents_real_size(&r.h));
}

int main(void)
{
	struct seen s = { 0 };
	struct sbevents *sb;
	struct sbevents_stats st;
	char err[256];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t pid = (uint32_t)getpid();
	uint64_t t0, t1;
	int rc, fd, reg = 0, load = 0;

	unit(&s);
	for (long i = 0; i < ncpu; i++)
		if (foreign((int)i) < 0 && (errno == EACCES || errno == EPERM)) {
			printf("SKIP: system-wide perf events not permitted\n");
			return 77;
		}
	rc = sbevents_open(16, 16, 0, &sb, err, sizeof(err));
	if (rc == -EACCES || rc == -EPERM) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	if (rc) {
		fprintf(stderr, "test_sbsize: %s\n", err);
		return 1;
	}
	for (long i = 0; i < ncpu; i++)
		foreign((int)i);
	t0 = now_ns();
	fd = load_prog();
	if (fd < 0) {
		printf("SKIP: BPF_PROG_LOAD: %s\n", strerror(errno));
		return errno == EPERM || errno == EACCES ? 77 : 1;
	}
	s.id = prog_id(fd);
	close(fd);
	/* the UNREGISTER and PROG_UNLOAD may come later, from a kworker */
	for (int i = 0; i < 300 && !(s.unreg && s.unload); i++) {
		usleep(10000);
		sbevents_drain(sb, on_rec, &s);
	}
	t1 = now_ns();
	sbevents_stats(sb, &st);
	sbevents_close(sb);

	for (int i = 0; i < s.n; i++) {
		const struct got *g = &s.r[i];
		int user = g->type == PERF_RECORD_KSYMBOL ?
			   !(g->what & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) :
			   g->what == PERF_BPF_EVENT_PROG_LOAD;

		reg += user && g->type == PERF_RECORD_KSYMBOL;
		load += user && g->type == PERF_RECORD_BPF_EVENT;
		if (g->oversized)
			failf(&s, "record passed on oversized", g->type);
		if (g->time < t0 || g->time > t1)
			failf(&s, "time outside the load..unload window", g->time);
		if (user && g->pid != pid)
			failf(&s, "REGISTER / PROG_LOAD not from our pid", g->pid);
		if ((int)g->cpu != g->ring_cpu)
			failf(&s, "trailer CPU is not the ring's", g->cpu);
	}
	if (reg != 1 || s.unreg != 1 || load != 1 || s.unload != 1)
		failf(&s, "not one KSYMBOL REGISTER, UNREGISTER, PROG_LOAD, PROG_UNLOAD each",
		      (uint64_t)s.n);
	printf("test_sbsize: %d records of our program, %" PRIu64 " of %" PRIu64
	       " sideband records trimmed\n", s.n, st.trimmed, st.records);
	return s.bad ? 1 : 0;
}
