/* SPDX-License-Identifier: MIT */
#include "machines.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

struct guest_id {
	uint64_t id;
	int32_t machine_pid, vcpu, host_tid;
};

struct guest_switch {
	int32_t machine_pid, vcpu;
	uint64_t t;
	int32_t pid, tid;
	size_t seq;             /* file order among equal times */
};

struct machines {
	int32_t *pids;          /* host pid of each machine; index = m */
	size_t n, cap;
	struct guest_id *ids;
	size_t nids, idcap;
	struct guest_switch *sw;
	size_t nsw, swcap;
};

struct machines *machines_new(void)
{
	return calloc(1, sizeof(struct machines));
}

void machines_free(struct machines *ms)
{
	if (!ms)
		return;
	free(ms->pids);
	free(ms->ids);
	free(ms->sw);
	free(ms);
}

static int machine_index(const struct machines *ms, int32_t machine_pid)
{
	for (size_t i = 0; i < ms->n; i++)
		if (ms->pids[i] == machine_pid)
			return (int)i;
	return -1;
}

int machines_add_id(struct machines *ms, uint64_t id, int32_t machine_pid,
		    int32_t vcpu, int32_t host_tid)
{
	struct guest_id *g;

	if (machine_pid <= 0)
		return 0;
	if (machine_index(ms, machine_pid) < 0) {
		if (ms->n >= IMGSTORE_GUEST_MACHINES)
			return PTD_ERR_INVAL;
		if (util_grow((void **)&ms->pids, &ms->cap, ms->n + 1, sizeof(*ms->pids)))
			return PTD_ERR_NOMEM;
		ms->pids[ms->n++] = machine_pid;
	}
	if (util_grow((void **)&ms->ids, &ms->idcap, ms->nids + 1, sizeof(*ms->ids)))
		return PTD_ERR_NOMEM;
	g = &ms->ids[ms->nids++];
	g->id = id;
	g->machine_pid = machine_pid;
	g->vcpu = vcpu;
	g->host_tid = host_tid;
	return 0;
}

int machines_of_id(const struct machines *ms, uint64_t id, int32_t *machine_pid,
		   int32_t *vcpu)
{
	for (size_t i = 0; ms && i < ms->nids; i++)
		if (ms->ids[i].id == id) {
			*machine_pid = ms->ids[i].machine_pid;
			*vcpu = ms->ids[i].vcpu;
			return 0;
		}
	return -1;
}

size_t machines_count(const struct machines *ms)
{
	return ms ? ms->n : 0;
}

int32_t machines_space(const struct machines *ms, int32_t machine_pid,
		       int32_t pid)
{
	int m = ms ? machine_index(ms, machine_pid) : -1;

	if (m < 0 || pid < -1 || pid >= (1 << 23) - 1)
		return IMGSTORE_NO_SPACE;
	return IMGSTORE_GUEST_SPACE(m, pid);
}

int machines_switch_in(struct machines *ms, int32_t machine_pid, int32_t vcpu,
		       uint64_t t, int32_t pid, int32_t tid)
{
	struct guest_switch *s;

	if (util_grow((void **)&ms->sw, &ms->swcap, ms->nsw + 1, sizeof(*ms->sw)))
		return PTD_ERR_NOMEM;
	s = &ms->sw[ms->nsw];
	s->machine_pid = machine_pid;
	s->vcpu = vcpu;
	s->t = t;
	s->pid = pid;
	s->tid = tid;
	s->seq = ms->nsw++;
	return 0;
}

static int sw_cmp(const void *a, const void *b)
{
	const struct guest_switch *x = a, *y = b;

	if (x->machine_pid != y->machine_pid)
		return x->machine_pid < y->machine_pid ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void machines_finish(struct machines *ms)
{
	if (ms && ms->nsw)
		util_sort(ms->sw, ms->nsw, sizeof(*ms->sw), sw_cmp);
}

/* The vcpu host thread host_tid of machine host_pid runs, or -1. */
static int32_t vcpu_of(const struct machines *ms, int32_t host_pid,
		       int32_t host_tid)
{
	for (size_t i = 0; i < ms->nids; i++)
		if (ms->ids[i].machine_pid == host_pid &&
		    ms->ids[i].host_tid == host_tid)
			return ms->ids[i].vcpu;
	return -1;
}

/* Index of the first switch of (machine_pid, vcpu) later than t, and in
 * *first the first of (machine_pid, vcpu) at all. */
static size_t after(const struct machines *ms, int32_t machine_pid,
		    int32_t vcpu, uint64_t t, size_t *first)
{
	struct guest_switch key = { machine_pid, vcpu, t, 0, 0, SIZE_MAX };
	size_t lo = 0, hi = ms->nsw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sw_cmp(&ms->sw[mid], &key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (*first > 0 && ms->sw[*first - 1].machine_pid == machine_pid &&
	       ms->sw[*first - 1].vcpu == vcpu)
		--*first;
	return lo;
}

int32_t machines_guest_space(const struct machines *ms, int guest_code,
			     int32_t host_pid, int32_t host_tid, uint64_t t)
{
	int m = ms ? machine_index(ms, host_pid) : -1;
	int32_t vcpu;
	size_t i, first;

	if (m < 0)
		return guest_code && host_pid >= 0 ? host_pid : IMGSTORE_NO_SPACE;
	vcpu = vcpu_of(ms, host_pid, host_tid);
	if (vcpu < 0)
		return IMGSTORE_NO_SPACE;
	i = after(ms, host_pid, vcpu, t, &first);
	if (i == first)   /* no guest thread switched in yet: its kernel */
		return IMGSTORE_GUEST_SPACE(m, -1);
	return machines_space(ms, host_pid, ms->sw[i - 1].pid);
}

int machines_guest_thread(const struct machines *ms, int32_t host_pid,
			  int32_t host_tid, uint64_t t, int32_t *pid,
			  int32_t *tid)
{
	int32_t vcpu;
	size_t i, first;

	if (!ms || machine_index(ms, host_pid) < 0 ||
	    (vcpu = vcpu_of(ms, host_pid, host_tid)) < 0)
		return -1;
	i = after(ms, host_pid, vcpu, t, &first);
	if (i == first)
		return -1;
	*pid = ms->sw[i - 1].pid;
	*tid = ms->sw[i - 1].tid;
	return 0;
}

uint64_t machines_next_switch(const struct machines *ms, int32_t host_pid,
			      int32_t host_tid, uint64_t t)
{
	int32_t vcpu;
	size_t i, first;

	if (!ms || machine_index(ms, host_pid) < 0 ||
	    (vcpu = vcpu_of(ms, host_pid, host_tid)) < 0)
		return UINT64_MAX;
	i = after(ms, host_pid, vcpu, t, &first);
	if (i < ms->nsw && ms->sw[i].machine_pid == host_pid && ms->sw[i].vcpu == vcpu)
		return ms->sw[i].t;
	return UINT64_MAX;
}

void machines_explain(const struct machines *ms, int guest_code,
		      int32_t host_pid, int32_t host_tid, uint64_t t,
		      char *buf, size_t len)
{
	int32_t vcpu;
	size_t i, first;

	if (!ms || machine_index(ms, host_pid) < 0)
		snprintf(buf, len, "guest code (VMX non-root, PIP.NR=1) of host "
			 "process %d, and no guest sideband names it as a "
			 "machine: add the guest's sideband with perf inject "
			 "--guest-data%s", host_pid, guest_code ? "" :
			 ", or decode with --guest-code when the guest's code "
			 "is the hypervisor process's memory");
	else if ((vcpu = vcpu_of(ms, host_pid, host_tid)) < 0)
		snprintf(buf, len, "guest code (PIP.NR=1) run by host thread %d, "
			 "which the ID_INDEX names as no vcpu of machine %d",
			 host_tid, host_pid);
	else if ((i = after(ms, host_pid, vcpu, t, &first)) == first)
		snprintf(buf, len, "guest code (PIP.NR=1) of machine %d vcpu %d, "
			 "before any guest context switch says which guest thread "
			 "it runs: only the guest kernel's images apply",
			 host_pid, vcpu);
	else
		snprintf(buf, len, "guest code (PIP.NR=1) of machine %d vcpu %d, "
			 "guest thread %d/%d", host_pid, vcpu, ms->sw[i - 1].pid,
			 ms->sw[i - 1].tid);
}
