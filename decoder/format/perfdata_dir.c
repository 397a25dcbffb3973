/* SPDX-License-Identifier: MIT */
/* perfdata_dir - perf.data directories.  See perfdata_dir.h. */
#include "perfdata_dir.h"
#include "ptdecode.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* perf's PERF_DIR_VERSION: the only layout of data.N files there is. */
#define PD_DIR_VERSION 1

/* One file and its reader. */
struct dir_file {
	struct perfdata *pd;
	char *path;
};

/* A record's place in the merged order: its time (or, without one, the
 * time of the record before it in its file) and where it is. */
struct dir_ent {
	uint64_t key;
	uint64_t loc;             /* file << 48 | offset */
};

#define LOC_BITS 48
struct perfdata_dir {
	struct dir_file *f;
	size_t nf;
	struct dir_ent *ent;      /* every record, in merged order */
	size_t nent, cap, next;
	int header_taken;
	int started;
	char note[512];
	char errmsg[640];
};

int perfdata_dir_is(const char *path)
{
	char buf[4096];
	struct stat st;

	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return 0;
	snprintf(buf, sizeof(buf), "%s/data", path);
	return !stat(buf, &st) && S_ISREG(st.st_mode);
}

/* "data.N": N, else -1. */
static long data_index(const char *name)
{
	char *end;
	long n;

	if (strncmp(name, "data.", 5) || name[5] < '0' || name[5] > '9')
		return -1;
	errno = 0;
	n = strtol(name + 5, &end, 10);
	return *end || errno || n < 0 ? -1 : n;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* The N of every data.N file in dir, sorted. */
static int list_data_files(const char *dir, long **out, size_t *n, char *err,
			   size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!d) {
		util_errf(err, errlen, "cannot open directory %s: %s", dir,
			  strerror(errno));
		return PTD_ERR_IO;
	}
	while ((de = readdir(d))) {
		long k = data_index(de->d_name);

		if (k < 0)
			continue;
		if (util_grow((void **)out, &cap, *n + 1, sizeof(**out))) {
			closedir(d);
			util_errf(err, errlen, "out of memory");
			return PTD_ERR_NOMEM;
		}
		(*out)[(*n)++] = k;
	}
	closedir(d);
	util_sort(*out, *n, sizeof(**out), cmp_long);
	return 0;
}

/* ---- merging ---- */

static int cmp_ent(const void *a, const void *b)
{
	const struct dir_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->loc > y->loc) - (x->loc < y->loc);
}

/* Indexes file k's records.  perf sorts records by time; the others
 * (AUXTRACE and its other user records) it handles as read, so they keep
 * their place behind the record before them.  A file is not in time order
 * by itself (a reader thread drains several rings in turn).  Returns 0 or
 * a negative error with the message in d->errmsg. */
static int index_file(struct perfdata_dir *d, size_t k)
{
	struct perfdata_record r;
	uint64_t key = 0;
	int rc;

	while ((rc = perfdata_next(d->f[k].pd, &r)) == 0) {
		if (r.file_offset >> LOC_BITS)
			break;      /* beyond any real file; perfdata_dir_open
				     * limits the file count likewise */
		if (r.sid.has_time && r.type < PD_RECORD_HEADER_ATTR)
			key = r.sid.time;
		if (util_grow((void **)&d->ent, &d->cap, d->nent + 1, sizeof(*d->ent))) {
			snprintf(d->errmsg, sizeof(d->errmsg), "out of memory");
			return PTD_ERR_NOMEM;
		}
		d->ent[d->nent].key = key;
		d->ent[d->nent++].loc = (uint64_t)k << LOC_BITS | r.file_offset;
	}
	if (rc == PTD_ERR_END)
		return 0;
	snprintf(d->errmsg, sizeof(d->errmsg), "%s", perfdata_errmsg(d->f[k].pd));
	return rc;
}

/* The merged order: every file indexed, then sorted. */
static int start(struct perfdata_dir *d)
{
	d->started = 1;
	for (size_t k = 0; k < d->nf; k++) {
		int rc = index_file(d, k);

		if (rc)
			return rc;
	}
	util_sort(d->ent, d->nent, sizeof(*d->ent), cmp_ent);
	return 0;
}

/* ---- opening ---- */

/* File k on path (the header when hdr is NULL). */
static int open_file(struct perfdata_dir *d, size_t k, const char *path,
		     const struct perfdata *hdr, char *err, size_t errlen)
{
	struct dir_file *f = &d->f[k];
	int rc;

	f->path = strdup(path);
	if (!f->path) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	d->nf = k + 1;
	rc = hdr ? perfdata_open_stream(hdr, path, &f->pd, err, errlen) :
	     perfdata_open(path, &f->pd, err, errlen);
	return rc;
}

/* The data.N files to read, given the header's HEADER_DIR_FORMAT. */
static int check_version(struct perfdata_dir *d, const char *path, size_t *n,
			 char *err, size_t errlen)
{
	uint64_t v = perfdata_get_info(d->f[0].pd)->dir_format;

	if (v > PD_DIR_VERSION) {
		util_errf(err, errlen, "%s: perf.data directory version %" PRIu64
			  " (HEADER_DIR_FORMAT) is newer than version 1, the one "
			  "this reader knows", path, v);
		return PTD_ERR_UNSUPPORTED;
	}
	if (!v && *n) {
		snprintf(d->note, sizeof(d->note), "%s: %zu data.N files ignored: "
			 "the header has no HEADER_DIR_FORMAT feature, so perf "
			 "does not read them either", path, *n);
		*n = 0;
	}
	return 0;
}

int perfdata_dir_open(const char *path, struct perfdata_dir **out, char *err,
		      size_t errlen)
{
	struct perfdata_dir *d = calloc(1, sizeof(*d));
	char file[4096];
	long *idx = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	if (!d) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	rc = list_data_files(path, &idx, &n, err, errlen);
	if (!rc && n >= (1u << (64 - LOC_BITS)) - 1) {
		util_errf(err, errlen, "%s: %zu data.N files, more than this "
			  "reader handles (65534)", path, n);
		rc = PTD_ERR_UNSUPPORTED;
	}
	if (!rc && !(d->f = calloc(n + 1, sizeof(*d->f)))) {
		util_errf(err, errlen, "out of memory");
		rc = PTD_ERR_NOMEM;
	}
	snprintf(file, sizeof(file), "%s/data", path);
	if (!rc)
		rc = open_file(d, 0, file, NULL, err, errlen);
	if (!rc)
		rc = check_version(d, path, &n, err, errlen);
	for (size_t i = 0; !rc && i < n; i++) {
		snprintf(file, sizeof(file), "%s/data.%ld", path, idx[i]);
		rc = open_file(d, i + 1, file, d->f[0].pd, err, errlen);
	}
	free(idx);
	if (rc) {
		perfdata_dir_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

int perfdata_dir_open_file(const char *path, struct perfdata_dir **out,
			   char *err, size_t errlen)
{
	struct perfdata_dir *d = calloc(1, sizeof(*d));
	int rc;

	*out = NULL;
	if (!d || !(d->f = calloc(1, sizeof(*d->f)))) {
		free(d);
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	rc = open_file(d, 0, path, NULL, err, errlen);
	if (rc) {
		perfdata_dir_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

void perfdata_dir_close(struct perfdata_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nf; i++) {
		if (i || !d->header_taken)
			perfdata_close(d->f[i].pd);
		free(d->f[i].path);
	}
	free(d->f);
	free(d->ent);
	free(d);
}

struct perfdata *perfdata_dir_header(struct perfdata_dir *d, int take)
{
	if (take)
		d->header_taken = 1;
	return d->f[0].pd;
}

size_t perfdata_dir_nfiles(const struct perfdata_dir *d)
{
	return d->nf;
}

const char *perfdata_dir_path(const struct perfdata_dir *d, size_t file)
{
	return file < d->nf ? d->f[file].path : NULL;
}

struct perfdata *perfdata_dir_reader(struct perfdata_dir *d, size_t file)
{
	return file < d->nf ? d->f[file].pd : NULL;
}

const char *perfdata_dir_note(const struct perfdata_dir *d)
{
	return d->note[0] ? d->note : NULL;
}

int perfdata_dir_next(struct perfdata_dir *d, struct perfdata_record *rec,
		      size_t *file)
{
	const struct dir_ent *e;
	struct perfdata *pd;
	int rc;

	if (!d->started && (rc = start(d)))
		return rc;
	if (d->next >= d->nent)
		return PTD_ERR_END;
	e = &d->ent[d->next++];
	*file = (size_t)(e->loc >> LOC_BITS);
	pd = d->f[*file].pd;
	rc = perfdata_seek(pd, e->loc & ((1ull << LOC_BITS) - 1));
	if (!rc)
		rc = perfdata_next(pd, rec);
	if (rc) {
		snprintf(d->errmsg, sizeof(d->errmsg), "%s: record at offset %llu "
			 "cannot be read again: %s", d->f[*file].path,
			 (unsigned long long)(e->loc & ((1ull << LOC_BITS) - 1)),
			 perfdata_errmsg(pd));
		return rc < 0 ? rc : PTD_ERR_IO;
	}
	return 0;
}

const char *perfdata_dir_errmsg(const struct perfdata_dir *d)
{
	return d->errmsg;
}

const char *const *perfdata_dir_warnings(const struct perfdata_dir *d,
					 size_t file)
{
	return file < d->nf ? perfdata_warnings(d->f[file].pd) : NULL;
}

int perfdata_dir_truncated(const struct perfdata_dir *d)
{
	for (size_t i = 0; i < d->nf; i++)
		if (perfdata_truncated(d->f[i].pd))
			return 1;
	return 0;
}
