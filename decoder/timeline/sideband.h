/* SPDX-License-Identifier: MIT */
/*
 * sideband (stage: timeline/) - the timeline of who ran where: threads (tid -> pid), context
 * switches per CPU, trace starts, losses.  Built from perf.data records
 * before decoding; queried by the backends as their decode time advances.
 */
#ifndef PTD_SIDEBAND_H
#define PTD_SIDEBAND_H

#include <stddef.h>
#include <stdint.h>

struct sideband;

struct sideband *sideband_new(void);
void sideband_free(struct sideband *sb);

/* Thread tid belongs to process pid (COMM, FORK, MMAP, samples). */
int sideband_thread(struct sideband *sb, int32_t pid, int32_t tid);
/* The same, with the thread's command name from a COMM record (the last
 * one wins: exec renames). */
int sideband_thread_comm(struct sideband *sb, int32_t pid, int32_t tid,
			 const char *comm);
/* Thread tid of process pid forked from thread ptid: it has ptid's
 * command name until a COMM renames it (as the kernel copies it). */
int sideband_fork(struct sideband *sb, int32_t pid, int32_t tid, int32_t ptid);
/* Command name of tid, or NULL when no COMM named it. */
const char *sideband_comm_of(const struct sideband *sb, int32_t tid);
/* Process id of tid, or -1 when unknown. */
int32_t sideband_pid_of(const struct sideband *sb, int32_t tid);

/* Thread pid/tid starts running on cpu at time t (switch-in, ITRACE_START).
 * Entries may come in any order; sideband_finish() sorts them. */
int sideband_run(struct sideband *sb, int32_t cpu, uint64_t t, int32_t pid,
		 int32_t tid);
/* A loss on cpu (or -1) at time t: LOST records, AUX truncation. */
int sideband_loss(struct sideband *sb, int32_t cpu, uint64_t t, uint64_t count,
		  const char *what);
void sideband_finish(struct sideband *sb);

/* Who ran on cpu at time t (latest switch-in at or before t).  Returns 0 and
 * sets pid/tid, or -1 when no record says (pid/tid then -1). */
int sideband_task_at(const struct sideband *sb, int32_t cpu, uint64_t t,
		     int32_t *pid, int32_t *tid);

/* Time of the first switch on cpu strictly after t, UINT64_MAX if none: a
 * decoder need not ask again before it reaches that time. */
uint64_t sideband_next_switch(const struct sideband *sb, int32_t cpu,
			      uint64_t t);

#endif
