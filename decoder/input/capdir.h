/* SPDX-License-Identifier: MIT */
/*
 * capdir - the capture directory loader (input stage): a ptcapture
 * directory's perf.data (through the perf loader), its text store (code
 * bytes with their validity), BPF metadata, jitdumps and perf maps.
 */
#ifndef PTD_CAPDIR_H
#define PTD_CAPDIR_H

#include <stddef.h>

struct input;

/* Loads the capture directory in->dir, whose perf.data is in->perf_path
 * (PTD_INPUT_CAPTURE_DIR).  Returns 0 or a negative PTD_ERR_* with a
 * message in err; problems with dynamic text are warnings (the flow still
 * decodes, with gaps where code is missing). */
int capdir_load(struct input *in, char *err, size_t errlen);

#endif
