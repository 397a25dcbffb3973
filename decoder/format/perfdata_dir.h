/* SPDX-License-Identifier: MIT */
/*
 * perfdata_dir - perf.data directories as one record stream; format stage
 * (decoder/format/).  `perf record --threads` writes a directory with
 * `data` (the header: attrs, features with HEADER_DIR_FORMAT, and the
 * records perf synthesized) and `data.N` (the records of one reader
 * thread's ring buffers, AUXTRACE records with their AUX bytes included,
 * without a header of their own).  `perf record --kcore` writes `data`
 * alone (and kcore_dir/).
 *
 * Read as perf reads them (tools/perf/util/data.c, session.c): `data`,
 * and the data.N files only when HEADER_DIR_FORMAT is version 1; records
 * sorted by time (stable: equal times in file order, `data` first), a
 * record without a time (AUXTRACE and perf's other user records) keeping
 * its place behind the record before it in its file.  One file is not in
 * time order by itself (a reader thread drains several rings in turn), so
 * the first perfdata_dir_next() indexes every record (16 bytes each: its
 * time and place) and sorts the index; records are then read again
 * through perfdata's bounded mmap windows, never held in memory.
 */
#ifndef PTD_PERFDATA_DIR_H
#define PTD_PERFDATA_DIR_H

#include <stddef.h>

#include "perfdata.h"

struct perfdata_dir;

/* 1 when path is a directory holding a regular file `data`. */
int perfdata_dir_is(const char *path);

/* Opens the directory path.  Returns 0 or a negative enum ptd_error with
 * a message in err. */
int perfdata_dir_open(const char *path, struct perfdata_dir **out, char *err,
		      size_t errlen);
/* Opens one perf.data file (no directory) to read its records in the same
 * merged order: a file is not in time order by itself either (perf record
 * drains each CPU's ring in turn, so a round holds one CPU's records after
 * another's, and perf sorts them by time before using them). */
int perfdata_dir_open_file(const char *path, struct perfdata_dir **out,
			   char *err, size_t errlen);
/* Closes every file; the header reader too unless it was taken. */
void perfdata_dir_close(struct perfdata_dir *d);

/* The header file's reader (attrs, features, build ids).  take: the
 * caller closes it (perfdata_close), after perfdata_dir_close. */
struct perfdata *perfdata_dir_header(struct perfdata_dir *d, int take);

/* Files read: 0 is `data`, then the data.N files by N. */
size_t perfdata_dir_nfiles(const struct perfdata_dir *d);
const char *perfdata_dir_path(const struct perfdata_dir *d, size_t file);
/* The reader of one file (for perfdata_aux_map of its AUXTRACE payloads;
 * do not iterate it). */
struct perfdata *perfdata_dir_reader(struct perfdata_dir *d, size_t file);
/* Warnings of data.N files ignored (no HEADER_DIR_FORMAT), or NULL. */
const char *perfdata_dir_note(const struct perfdata_dir *d);

/* The next record in merged order and the file it is in.  Pointers into
 * rec stay valid until the next call.  Returns 0, PTD_ERR_END, or a
 * negative error (message: perfdata_dir_errmsg). */
int perfdata_dir_next(struct perfdata_dir *d, struct perfdata_record *rec,
		      size_t *file);
const char *perfdata_dir_errmsg(const struct perfdata_dir *d);

/* Every file's warnings, in file order, then NULL; truncation of any. */
const char *const *perfdata_dir_warnings(const struct perfdata_dir *d,
					 size_t file);
int perfdata_dir_truncated(const struct perfdata_dir *d);

#endif
