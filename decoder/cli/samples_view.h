/* SPDX-License-Identifier: MIT */
/*
 * samples_view (stage: cli/) - `--samples` (each sample with its stitched
 * callchain and, with a trace, the call stack the decoded flow had at the
 * sample) and `--check-callchains` (the samples whose recorded user frames
 * disagree with the trace's).
 */
#ifndef PTD_CLI_SAMPLES_VIEW_H
#define PTD_CLI_SAMPLES_VIEW_H

#include "options.h"

/* Runs the samples views for o; returns the exit status. */
int samples_view_run(const struct cli_opts *o);

#endif
