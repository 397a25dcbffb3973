/* SPDX-License-Identifier: MIT */
#include "sideband.h"
#include "util.h"
#include "ptdecode.h"

#include <stdlib.h>
#include <string.h>

struct sb_run {
	int32_t cpu;
	uint64_t t;
	int32_t pid, tid;
	size_t seq;    /* keeps file order among equal times */
};

struct sb_thread {
	int32_t tid, pid;
	char comm[16];   /* the kernel's TASK_COMM_LEN; "" until a COMM */
};

struct sideband {
	struct sb_run *runs;
	size_t nruns, rcap;
	struct sb_thread *threads;
	size_t nthreads, tcap;
	int sorted;
};

struct sideband *sideband_new(void)
{
	return calloc(1, sizeof(struct sideband));
}

void sideband_free(struct sideband *sb)
{
	if (!sb)
		return;
	free(sb->runs);
	free(sb->threads);
	free(sb);
}

int sideband_thread(struct sideband *sb, int32_t pid, int32_t tid)
{
	if (tid < 0 || pid < 0)
		return 0;
	/* Recent threads are looked up most: scan from the end. */
	for (size_t i = sb->nthreads; i-- > 0;)
		if (sb->threads[i].tid == tid) {
			sb->threads[i].pid = pid;
			return 0;
		}
	if (util_grow((void **)&sb->threads, &sb->tcap, sb->nthreads + 1,
		      sizeof(*sb->threads)))
		return PTD_ERR_NOMEM;
	memset(&sb->threads[sb->nthreads], 0, sizeof(sb->threads[0]));
	sb->threads[sb->nthreads].tid = tid;
	sb->threads[sb->nthreads].pid = pid;
	sb->nthreads++;
	return 0;
}

int sideband_thread_comm(struct sideband *sb, int32_t pid, int32_t tid,
			 const char *comm)
{
	int rc = sideband_thread(sb, pid, tid);

	if (rc || tid < 0 || pid < 0 || !comm)
		return rc;
	for (size_t i = sb->nthreads; i-- > 0;)
		if (sb->threads[i].tid == tid) {
			size_t n = strnlen(comm, sizeof(sb->threads[i].comm) - 1);

			memcpy(sb->threads[i].comm, comm, n);
			sb->threads[i].comm[n] = 0;
			break;
		}
	return 0;
}

int sideband_fork(struct sideband *sb, int32_t pid, int32_t tid, int32_t ptid)
{
	const char *parent = sideband_comm_of(sb, ptid);
	char comm[16];

	if (!parent || sideband_comm_of(sb, tid))
		return sideband_thread(sb, pid, tid);
	/* copied first: growing the table may move the parent's entry */
	memcpy(comm, parent, sizeof(comm));
	return sideband_thread_comm(sb, pid, tid, comm);
}

const char *sideband_comm_of(const struct sideband *sb, int32_t tid)
{
	for (size_t i = sb->nthreads; i-- > 0;)
		if (sb->threads[i].tid == tid)
			return sb->threads[i].comm[0] ? sb->threads[i].comm : NULL;
	return NULL;
}

int32_t sideband_pid_of(const struct sideband *sb, int32_t tid)
{
	for (size_t i = sb->nthreads; i-- > 0;)
		if (sb->threads[i].tid == tid)
			return sb->threads[i].pid;
	return -1;
}

int sideband_run(struct sideband *sb, int32_t cpu, uint64_t t, int32_t pid,
		 int32_t tid)
{
	struct sb_run *r;

	if (util_grow((void **)&sb->runs, &sb->rcap, sb->nruns + 1, sizeof(*sb->runs)))
		return PTD_ERR_NOMEM;
	r = &sb->runs[sb->nruns];
	r->cpu = cpu;
	r->t = t;
	r->pid = pid;
	r->tid = tid;
	r->seq = sb->nruns++;
	sb->sorted = 0;
	return 0;
}

int sideband_loss(struct sideband *sb, int32_t cpu, uint64_t t, uint64_t count,
		  const char *what)
{
	(void)sb; (void)cpu; (void)t; (void)count; (void)what;
	return 0;
}

static int run_cmp(const void *a, const void *b)
{
	const struct sb_run *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void sideband_finish(struct sideband *sb)
{
	if (sb->nruns)
		util_sort(sb->runs, sb->nruns, sizeof(*sb->runs), run_cmp);
	sb->sorted = 1;
}

/* Index of the last run on cpu with time <= t, or -1. */
static long last_at(const struct sideband *sb, int32_t cpu, uint64_t t)
{
	size_t lo = 0, hi = sb->nruns;

	/* first index with (cpu, time) > (cpu, t) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sb_run *r = &sb->runs[mid];

		if (r->cpu < cpu || (r->cpu == cpu && r->t <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || sb->runs[lo - 1].cpu != cpu)
		return -1;
	return (long)lo - 1;
}

int sideband_task_at(const struct sideband *sb, int32_t cpu, uint64_t t,
		     int32_t *pid, int32_t *tid)
{
	long i = last_at(sb, cpu, t);

	*pid = *tid = -1;
	if (i < 0)
		return -1;
	*pid = sb->runs[i].pid;
	*tid = sb->runs[i].tid;
	if (*pid < 0)
		*pid = sideband_pid_of(sb, *tid);
	return 0;
}

uint64_t sideband_next_switch(const struct sideband *sb, int32_t cpu, uint64_t t)
{
	long i = last_at(sb, cpu, t);
	size_t j = i < 0 ? 0 : (size_t)i + 1;

	if (i < 0) {
		/* first run of this cpu, if any */
		for (j = 0; j < sb->nruns && sb->runs[j].cpu < cpu; j++)
			;
	}
	if (j < sb->nruns && sb->runs[j].cpu == cpu)
		return sb->runs[j].t;
	return UINT64_MAX;
}
