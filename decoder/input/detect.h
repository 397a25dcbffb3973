/* SPDX-License-Identifier: MIT */
/*
 * detect - format detection (input stage): which kind of input a path is,
 * a capture directory (with perf.data), an OpenCSD snapshot directory
 * (with snapshot.ini), a perf.data file (PERFILE2 magic), or else a raw
 * trace.
 */
#ifndef PTD_DETECT_H
#define PTD_DETECT_H

#include "ptdecode.h"

/* Returns the kind of path, PTD_INPUT_AUTO when it is none (or cannot be
 * read).  *perf_path gets the perf.data to read (capture directory,
 * perf.data file) and *dir the capture directory, malloc'd, else NULL. */
enum ptd_input_kind detect_input_kind(const char *path, char **perf_path,
				      char **dir);

#endif
