/* SPDX-License-Identifier: MIT */
/*
 * callstacks (stage: cli/) - the call stack of a thread at given instants,
 * from the decoded flow: a shadow stack per thread (a call pushes its
 * return address, a return pops down to where it went), read at the
 * thread's first instruction after each instant.  When the session hands
 * out its CPUs' queues merged in one timeline (stats.merged_queues), a
 * thread's flow continues from CPU to CPU in time order and its one
 * stack is exact wherever it ran.  Where the flow comes queue by queue
 * (PTD_OPEN_PER_QUEUE, no timestamps, CoreSight), the stack is per thread
 * and queue, read at the earliest of any queue's instructions after the
 * instant, and a thread seen in several queues is CS_PARTIAL.
 */
#ifndef PTD_CLI_CALLSTACKS_H
#define PTD_CLI_CALLSTACKS_H

#include <stddef.h>
#include <stdint.h>

#include "ptdecode.h"

enum {
	CS_RESOLVED = 1 << 0,   /* the thread ran after the instant */
	CS_PARTIAL = 1 << 1,    /* an error, gap or overflow came before it
				 * in that thread, or the thread ran in
				 * several queues (CPUs) that came queue by
				 * queue: frames may be missing */
};

/* "Thread tid at time": the stack as the next instruction ip followed by
 * the return addresses, innermost first (a callchain's user part). */
struct cs_probe {
	int32_t tid;
	uint64_t time;
	unsigned flags;         /* CS_* */
	uint64_t *frames;       /* malloc'd */
	size_t n;
};

/* Decodes s's whole flow (ptd_next) and fills the probes.  Returns
 * PTD_ERR_END when the flow ended normally, else the error that stopped
 * it (ptd_errmsg(s) says why; probes after it stay unresolved). */
int callstacks_resolve(struct ptd_session *s, struct cs_probe *p, size_t n);
void callstacks_free(struct cs_probe *p, size_t n);

#endif
