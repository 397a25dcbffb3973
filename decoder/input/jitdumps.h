/* SPDX-License-Identifier: MIT */
/*
 * jitdumps - the jitdump files of an input (input stage): those the
 * trace's MMAPs name and those a capture keeps in its jit/ folder, loaded
 * into the dynamic text (code, names, lines of user-space JITs).
 */
#ifndef PTD_JITDUMPS_H
#define PTD_JITDUMPS_H

struct input;

/* Adds path to the input's jitdumps (once).  Returns 0 or PTD_ERR_NOMEM. */
int jitdumps_note(struct input *in, const char *path);

/* Loads every jitdump noted.  A capture's own copy (jit/<name>) replaces
 * the file a MMAP names.  Problems are warnings: JIT code then decodes as
 * gaps. */
void jitdumps_load(struct input *in);

#endif
