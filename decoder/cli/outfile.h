/* SPDX-License-Identifier: MIT */
/*
 * outfile (stage: cli/) - opens the -o FILE output.
 *
 * Replacing a big earlier output with fopen(path, "w") truncates it in the
 * open call: the kernel frees its page cache there and then (40 ms for a
 * 37 MB dump on the benchmark machine, a third of a whole run).  When FILE
 * is a regular file of ours with one link and at least 1 MiB, it is
 * instead unlinked while still open and a new file of the same mode is
 * created under the name; a helper thread closes the old one, so its pages
 * are freed beside the decode.  Readers of the old file keep it (as after
 * `mv new FILE`); anything else (links, devices, FIFOs, other owners, small
 * files) is opened with plain fopen "w".
 */
#ifndef PTD_CLI_OUTFILE_H
#define PTD_CLI_OUTFILE_H

#include <stdio.h>

/* Opens path for writing, as described above.  NULL with errno set on
 * failure. */
FILE *outfile_open(const char *path);

/* Waits until the old file's release has finished (call before exiting). */
void outfile_wait(void);

#endif
