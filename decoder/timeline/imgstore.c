/* SPDX-License-Identifier: MIT */
#include "imgstore.h"
#include "util.h"
#include "ptdecode.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A file opened for a file-backed version; shared by all its versions. */
struct img_file {
	char *path;
	struct util_map map;
	int tried;      /* open attempted (map valid iff data != NULL) */
	char err[256];
};

struct img_version {
	int32_t pid;
	uint64_t start, len;
	uint64_t from, to;
	int captured;          /* rank when several versions are valid at
				* once: 2 captured bytes (text store,
				* records), 1 a file, 0 no bytes at all */
	const uint8_t *bytes;  /* memory-backed (NULL: see file / missing) */
	uint8_t *owned;        /* copy owned by the store */
	int file;              /* index into files, -1 if none */
	int elf;               /* file index of the ELF it came from, -1 */
	uint64_t pgoff;
	char *name;
	char *reason;          /* why the bytes are missing, or NULL */
	int id;                /* 1-based, order of addition */
};

struct imgstore {
	struct img_version *v;
	size_t n, cap;
	struct img_file *files;
	size_t nfiles, fcap;
	int no_versioning;
	pthread_mutex_t map_lock;  /* lazy file mapping; reads are otherwise
				    * lock-free and may run in parallel */
	char err[512];
};

struct imgstore *imgstore_new(void)
{
	struct imgstore *st = calloc(1, sizeof(struct imgstore));

	if (st)
		pthread_mutex_init(&st->map_lock, NULL);
	return st;
}

void imgstore_free(struct imgstore *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++) {
		free(st->v[i].owned);
		free(st->v[i].name);
		free(st->v[i].reason);
	}
	for (size_t i = 0; i < st->nfiles; i++) {
		util_unmap(&st->files[i].map);
		free(st->files[i].path);
	}
	free(st->files);
	free(st->v);
	pthread_mutex_destroy(&st->map_lock);
	free(st);
}

void imgstore_set_no_versioning(struct imgstore *st, int on)
{
	st->no_versioning = on;
}

const char *imgstore_last_error(const struct imgstore *st)
{
	return st ? st->err : "";
}

static int file_index(struct imgstore *st, const char *path)
{
	for (size_t i = 0; i < st->nfiles; i++)
		if (!strcmp(st->files[i].path, path))
			return (int)i;
	if (util_grow((void **)&st->files, &st->fcap, st->nfiles + 1, sizeof(*st->files)))
		return PTD_ERR_NOMEM;
	memset(&st->files[st->nfiles], 0, sizeof(*st->files));
	st->files[st->nfiles].path = strdup(path);
	if (!st->files[st->nfiles].path)
		return PTD_ERR_NOMEM;
	return (int)st->nfiles++;
}

static struct img_version *new_version(struct imgstore *st, int32_t pid,
				       uint64_t start, uint64_t len,
				       uint64_t from, uint64_t to,
				       const char *name)
{
	struct img_version *v;

	if (!len || start + len < start || from > to)
		return NULL;
	if (util_grow((void **)&st->v, &st->cap, st->n + 1, sizeof(*st->v)))
		return NULL;
	v = &st->v[st->n];
	memset(v, 0, sizeof(*v));
	v->pid = pid;
	v->start = start;
	v->len = len;
	v->from = from;
	v->to = to;
	v->file = -1;
	v->elf = -1;
	v->name = strdup(name ? name : "");
	if (!v->name)
		return NULL;
	v->id = (int)++st->n;
	return v;
}

int imgstore_add_file(struct imgstore *st, int32_t pid, uint64_t start,
		      uint64_t len, const char *path, uint64_t pgoff,
		      uint64_t valid_from, uint64_t valid_to, const char *name)
{
	struct img_version *v;
	int fi = file_index(st, path);

	if (fi < 0)
		return fi;
	v = new_version(st, pid, start, len, valid_from, valid_to, name ? name : path);
	if (!v)
		return PTD_ERR_INVAL;
	v->file = fi;
	v->elf = fi;
	v->pgoff = pgoff;
	v->captured = 1;
	return v->id;
}

int imgstore_add_bytes(struct imgstore *st, int32_t pid, uint64_t start,
		       uint64_t len, const uint8_t *bytes, uint64_t valid_from,
		       uint64_t valid_to, const char *name)
{
	struct img_version *v = new_version(st, pid, start, len, valid_from,
					    valid_to, name);

	if (!v)
		return PTD_ERR_INVAL;
	v->bytes = bytes;
	v->captured = bytes ? 2 : 0;
	return v->id;
}

int imgstore_add_missing(struct imgstore *st, int32_t pid, uint64_t start,
			 uint64_t len, uint64_t valid_from, uint64_t valid_to,
			 const char *name, const char *reason)
{
	struct img_version *v = new_version(st, pid, start, len, valid_from,
					    valid_to, name);

	if (!v)
		return PTD_ERR_INVAL;
	v->reason = strdup(reason ? reason : "unknown reason");
	return v->reason ? v->id : PTD_ERR_NOMEM;
}

int imgstore_add_copy(struct imgstore *st, int32_t pid, uint64_t start,
		      uint64_t len, const uint8_t *bytes, uint64_t valid_from,
		      uint64_t valid_to, const char *name)
{
	uint8_t *copy = malloc(len ? len : 1);
	int id;

	if (!copy)
		return PTD_ERR_NOMEM;
	memcpy(copy, bytes, len);
	id = imgstore_add_bytes(st, pid, start, len, copy, valid_from, valid_to, name);
	if (id < 0) {
		free(copy);
		return id;
	}
	st->v[id - 1].owned = copy;
	return id;
}

int imgstore_set_origin(struct imgstore *st, int version_id,
			const char *elf_path, uint64_t pgoff)
{
	int fi;

	if (version_id <= 0 || (size_t)version_id > st->n)
		return PTD_ERR_INVAL;
	fi = file_index(st, elf_path);
	if (fi < 0)
		return fi;
	st->v[version_id - 1].elf = fi;
	st->v[version_id - 1].pgoff = pgoff;
	return 0;
}

static int overlaps(const struct img_version *v, uint64_t start, uint64_t len)
{
	return start < v->start + v->len && v->start < start + len;
}

void imgstore_end(struct imgstore *st, int32_t pid, uint64_t start,
		  uint64_t len, uint64_t t)
{
	for (size_t i = 0; i < st->n; i++) {
		struct img_version *v = &st->v[i];

		if (v->pid != pid || v->to != IMGSTORE_FOREVER || v->from > t)
			continue;
		if (len && !overlaps(v, start, len))
			continue;
		v->to = t;
	}
}

int imgstore_fork(struct imgstore *st, int32_t parent, int32_t child, uint64_t t)
{
	size_t n = st->n;

	for (size_t i = 0; i < n; i++) {
		struct img_version *v = &st->v[i], *c;

		if (v->pid != parent || v->from > t || v->to <= t)
			continue;
		c = new_version(st, child, v->start, v->len, t, v->to, v->name);
		if (!c)
			return PTD_ERR_NOMEM;
		v = &st->v[i]; /* the array may have moved */
		c->bytes = v->bytes;
		c->captured = v->captured;
		c->file = v->file;
		c->elf = v->elf;
		c->pgoff = v->pgoff;
		if (v->reason && !(c->reason = strdup(v->reason)))
			return PTD_ERR_NOMEM;
	}
	return 0;
}

static int contains(const struct img_version *v, int32_t pid, uint64_t addr)
{
	return v->pid == pid && addr >= v->start && addr - v->start < v->len;
}

/* Picks the version for (pid, addr, t).  Preference: valid at t; captured
 * bytes over files; the later start of validity (a newer mapping overlays an
 * older one).  With the time unknown, only an address with a single version
 * (or identical choices) can be decoded. */
static int find(struct imgstore *st, int32_t pid, uint64_t addr, uint64_t t,
		struct img_version **out)
{
	struct img_version *best = NULL;
	int nversions = 0;

	for (int pass = 0; pass < 2; pass++) {
		int32_t p = pass ? imgstore_kernel_of(pid) : pid;

		if (pass && pid == p)
			break;
		for (size_t i = 0; i < st->n; i++) {
			struct img_version *v = &st->v[i];

			if (!contains(v, p, addr))
				continue;
			nversions++;
			if (st->no_versioning) {
				if (!best || v->id > best->id)
					best = v;
				continue;
			}
			if (t != IMGSTORE_TIME_UNKNOWN && (t < v->from || t >= v->to))
				continue;
			if (!best || v->captured > best->captured ||
			    (v->captured == best->captured && v->from >= best->from))
				best = v;
		}
		if (best)
			break;
	}
	if (!best)
		return IMGSTORE_NOT_MAPPED;
	if (t == IMGSTORE_TIME_UNKNOWN && !st->no_versioning && nversions > 1) {
		/* Several versions and no time: only safe if they are the
		 * same file region (e.g. a text-store copy of a mapped file). */
		for (size_t i = 0; i < st->n; i++) {
			struct img_version *v = &st->v[i];

			if (v == best || !(contains(v, pid, addr) ||
					   contains(v, imgstore_kernel_of(pid), addr)))
				continue;
			if (v->file != best->file || v->bytes != best->bytes ||
			    v->start - v->pgoff != best->start - best->pgoff) {
				*out = best;
				return IMGSTORE_AMBIGUOUS;
			}
		}
	}
	*out = best;
	return 0;
}

static void fill_hit(const struct imgstore *st, const struct img_version *v,
		     struct imgstore_hit *hit)
{
	if (!hit)
		return;
	hit->start = v->start;
	hit->len = v->len;
	hit->valid_from = v->from;
	hit->valid_to = v->to;
	hit->name = v->name;
	hit->origin = v->file >= 0 ? st->files[v->file].path : "captured bytes";
	hit->version_id = v->id;
	hit->pid = v->pid;
	hit->elf_path = v->elf >= 0 ? st->files[v->elf].path : NULL;
	hit->pgoff = v->pgoff;
}

int imgstore_lookup(struct imgstore *st, int32_t pid, uint64_t addr,
		    uint64_t t, struct imgstore_hit *hit)
{
	struct img_version *v = NULL;
	int rc = find(st, pid, addr, t, &v);

	if (v)
		fill_hit(st, v, hit);
	return rc;
}

static const uint8_t *version_bytes(struct imgstore *st, struct img_version *v,
				    uint64_t *avail)
{
	struct img_file *f;

	if (v->bytes) {
		*avail = v->len;
		return v->bytes;
	}
	if (v->file < 0)
		return NULL;
	f = &st->files[v->file];
	if (!__atomic_load_n(&f->tried, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&st->map_lock);
		if (!f->tried) {
			util_map_file(f->path, &f->map, f->err, sizeof(f->err));
			__atomic_store_n(&f->tried, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&st->map_lock);
	}
	if (!f->map.data)
		return NULL;
	if (v->pgoff >= f->map.size) {
		*avail = 0;
		return f->map.data;
	}
	*avail = f->map.size - v->pgoff;
	if (*avail > v->len)
		*avail = v->len;
	return f->map.data + v->pgoff;
}

/* With no time to choose: fine if every version holding addr has the
 * same bytes there (a text-store copy of a mapped file, say). */
static int same_bytes_everywhere(struct imgstore *st, int32_t pid, uint64_t addr,
				 size_t len, struct img_version *best)
{
	uint64_t avail_b = 0;
	const uint8_t *pb = version_bytes(st, best, &avail_b);
	uint64_t off_b = addr - best->start;

	if (!pb || off_b >= avail_b)
		return 0;
	if (len > avail_b - off_b)
		len = (size_t)(avail_b - off_b);
	for (size_t i = 0; i < st->n; i++) {
		struct img_version *v = &st->v[i];
		uint64_t avail = 0;
		const uint8_t *p;

		if (v == best || !(contains(v, pid, addr) ||
				   contains(v, imgstore_kernel_of(pid), addr)))
			continue;
		p = version_bytes(st, v, &avail);
		if (!p || addr - v->start + len > avail ||
		    memcmp(p + (addr - v->start), pb + off_b, len))
			return 0;
	}
	return 1;
}

/* Reads from the single version that holds addr.  Messages go to err
 * (NULL: none), so that parallel readers do not share a buffer. */
static int read_one(struct imgstore *st, int32_t pid, uint64_t addr, uint64_t t,
		    uint8_t *buf, size_t len, struct imgstore_hit *hit,
		    char *err, size_t errlen)
{
	struct img_version *v = NULL;
	const uint8_t *p;
	uint64_t avail = 0, off;
	int rc = find(st, pid, addr, t, &v);

	if (v)
		fill_hit(st, v, hit);
	if (rc == IMGSTORE_AMBIGUOUS) {
		if (!same_bytes_everywhere(st, pid, addr, len, v)) {
			util_errf(err, errlen, "%#" PRIx64 ": several versions "
				  "of the code (%s) and no time to choose between "
				  "them", addr, v->name);
			return rc;
		}
		rc = 0; /* they agree: any of them will do */
	}
	if (rc) {
		util_errf(err, errlen, "%#" PRIx64 ": no code mapped "
			 "there (pid %d)", addr, pid);
		return rc;
	}
	if (!v->bytes && v->file < 0) {
		if (v->reason)
			util_errf(err, errlen, "%#" PRIx64 ": no code "
				 "for %s [%#" PRIx64 ", %#" PRIx64 "): %s", addr,
				 v->name, v->start, v->start + v->len, v->reason);
		else
			util_errf(err, errlen, "%#" PRIx64 ": the bytes "
				 "of %s [%#" PRIx64 ", %#" PRIx64 ") were not captured",
				 addr, v->name, v->start, v->start + v->len);
		return IMGSTORE_NOT_CAPTURED;
	}
	p = version_bytes(st, v, &avail);
	if (!p) {
		util_errf(err, errlen, "%#" PRIx64 ": %s",
			 addr, st->files[v->file].err);
		return IMGSTORE_IO;
	}
	off = addr - v->start;
	if (off >= avail) {
		util_errf(err, errlen, "%#" PRIx64 ": beyond the end of "
			 "%s", addr, v->name);
		return IMGSTORE_NOT_MAPPED;
	}
	if (len > avail - off)
		len = (size_t)(avail - off);
	memcpy(buf, p + off, len);
	return (int)len;
}

int imgstore_read_r(struct imgstore *st, int32_t pid, uint64_t addr, uint64_t t,
		    uint8_t *buf, size_t len, struct imgstore_hit *hit,
		    char *err, size_t errlen)
{
	size_t done = 0;
	int rc = read_one(st, pid, addr, t, buf, len, hit, err, errlen);

	if (rc <= 0)
		return rc;
	/* An instruction may straddle two versions (a poked range inside a
	 * larger one, adjacent pages): continue into the next. */
	for (done = (size_t)rc; done < len; done += (size_t)rc) {
		rc = read_one(st, pid, addr + done, t, buf + done, len - done,
			      NULL, NULL, 0);
		if (rc <= 0)
			break;
	}
	return (int)done;
}

int imgstore_read(struct imgstore *st, int32_t pid, uint64_t addr, uint64_t t,
		  uint8_t *buf, size_t len, struct imgstore_hit *hit)
{
	return imgstore_read_r(st, pid, addr, t, buf, len, hit, st->err,
			       sizeof(st->err));
}

int imgstore_version_at(const struct imgstore *st, size_t i,
			struct imgstore_hit *hit)
{
	if (!st || i >= st->n)
		return -1;
	fill_hit(st, &st->v[i], hit);
	return 0;
}
