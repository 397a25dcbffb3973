/* SPDX-License-Identifier: MIT */
/*
 * perfdir - the loader of perf.data directories (input stage): `perf
 * record --threads` (data + data.N) and `--kcore` (data) layouts, read
 * through format/perfdata_dir.c as one record stream merged by time, each
 * record handed to the perf.data loader (perf.c); the AUX queues point
 * into one read-only mapping per file.
 */
#ifndef PTD_PERFDIR_H
#define PTD_PERFDIR_H

#include <stddef.h>

struct input;

/* Reads the directory in->perf_path into in: in->pd becomes its header
 * file's reader, in->file_maps its files (chunks name theirs).  Returns 0
 * or a negative PTD_ERR_* with a message in err. */
int perfdir_read_sideband(struct input *in, char *err, size_t errlen);

#endif
