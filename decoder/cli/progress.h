/* SPDX-License-Identifier: MIT */
/*
 * progress (stage: cli/) - a progress line on standard error while a long
 * decode runs: trace bytes done of all, instructions, rate, time left.
 */
#ifndef PTD_PROGRESS_H
#define PTD_PROGRESS_H

#include <stddef.h>
#include "ptdecode.h"

struct progress;

/* A progress line for session s, shown once the decode has run longer
 * than a second (PTDECODE_PROGRESS_DELAY_MS in the environment sets
 * another delay) and redrawn a few times a second; NULL (nothing shown,
 * the other calls do nothing) when not enabled or out of memory. */
struct progress *progress_new(const struct ptd_session *s, int enabled);

/* Called as the decode goes; work: how much was handed out since the
 * last call, in events (a run of blocks: PROGRESS_RUN).  Looks at the
 * clock once per PROGRESS_RUN of work. */
#define PROGRESS_RUN 16384u
void progress_tick(struct progress *p, size_t work);

/* Erases the line and frees p. */
void progress_end(struct progress *p);

#endif
