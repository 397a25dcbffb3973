/* SPDX-License-Identifier: MIT */
/* trace_index (stage: api/): the index saved beside the trace and read
 * back (docs/FORMATS.md, "Trace index files"). */
#include "trace_index.h"

#include "fastpt_seek.h"
#include "session.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIX_MAGIC "PTDINDEX"
#define TIX_VERSION 2   /* 2: signal frames */
#define TIX_BYTE_ORDER 0x01020304u
#define HASH_HEAD (64u << 10)     /* bytes of each trace file hashed */

struct filehdr {
	char magic[8];
	uint32_t version, byte_order;
	uint32_t piece_size, frame_size, code_size, thread_size;
	uint64_t trace_size;
	int64_t trace_mtime_ns;
	uint64_t trace_hash;
	uint64_t seg_hash, nsegs;
	uint64_t nthreads, ncodes, unplaced;
	uint64_t payload_bytes, payload_hash;
};

struct filethread {
	int32_t tid, pid;
	uint64_t nps, nfr, ninsn, npos, nstops, first_time, last_time;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

#define FNV0 0xcbf29ce484222325ull

/* Size, newest modification and a hash of one file's start. */
static int ident_file(const char *path, uint64_t *size, int64_t *mtime,
		      uint64_t *h)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*size += (uint64_t)st.st_size;
	if ((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec > *mtime)
		*mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	buf = malloc(HASH_HEAD);
	if (!buf) {
		close(fd);
		return -1;
	}
	n = pread(fd, buf, HASH_HEAD, 0);
	close(fd);
	if (n < 0) {
		free(buf);
		return -1;
	}
	*h = fnv(*h, &st.st_size, sizeof(st.st_size));
	*h = fnv(*h, buf, (size_t)n);
	free(buf);
	return 0;
}

/* The trace's identity: a file, or a directory's files (not below). */
static int ident(const char *trace, uint64_t *size, int64_t *mtime, uint64_t *h)
{
	struct stat st;
	struct dirent **names;
	int n, i, rc = 0;

	*size = 0;
	*mtime = 0;
	*h = FNV0;
	if (stat(trace, &st))
		return -1;
	if (!S_ISDIR(st.st_mode))
		return ident_file(trace, size, mtime, h);
	n = scandir(trace, &names, NULL, alphasort);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		char *p;
		struct stat fs;

		if (!rc && names[i]->d_name[0] != '.' &&
		    (p = malloc(strlen(trace) + strlen(names[i]->d_name) + 2))) {
			sprintf(p, "%s/%s", trace, names[i]->d_name);
			if (!stat(p, &fs) && S_ISREG(fs.st_mode)) {
				*h = fnv(*h, names[i]->d_name, strlen(names[i]->d_name));
				rc = ident_file(p, size, mtime, h);
			}
			free(p);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

/* The session's segments: where each lies. */
static uint64_t seg_hash(const struct backend *be, uint64_t *nsegs)
{
	uint64_t h = FNV0;
	size_t i, n = fastpt_nsegments(be);

	for (i = 0; i < n; i++) {
		uint64_t w[3];
		uint32_t q;

		fastpt_segment_where(be, i, &q, &w[1], &w[2]);
		w[0] = q;
		h = fnv(h, w, sizeof(w));
	}
	*nsegs = n;
	return h;
}

static int fill_hdr(const struct ptd_index *ix, const char *trace,
		    struct filehdr *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, TIX_MAGIC, 8);
	h->version = TIX_VERSION;
	h->byte_order = TIX_BYTE_ORDER;
	h->piece_size = sizeof(struct tix_piece_sum);
	h->frame_size = sizeof(struct tix_frame);
	h->code_size = sizeof(struct tix_code);
	h->thread_size = sizeof(struct filethread);
	if (ident(trace, &h->trace_size, &h->trace_mtime_ns, &h->trace_hash))
		return -1;
	h->seg_hash = seg_hash(ix->s->be, &h->nsegs);
	return 0;
}

int tix_file_save(const struct ptd_index *ix, const char *file,
		  const char *trace, char *err, size_t errlen)
{
	struct filehdr h;
	size_t i, n = 0, cap = 0;
	uint8_t *buf = NULL;
	char *tmp;
	FILE *f;
	int ok;

	if (fill_hdr(ix, trace, &h)) {
		util_errf(err, errlen, "cannot read the trace %s to save its index: %s",
			  trace, strerror(errno));
		return PTD_ERR_IO;
	}
#define PUT(p, len) do { \
		if (util_grow((void **)&buf, &cap, n + (len), 1)) \
			goto nomem; \
		memcpy(buf + n, (p), (len)); \
		n += (len); \
	} while (0)
	for (i = 0; i < ix->nti; i++) {
		const struct tix_tinfo *t = &ix->ti[i];
		struct filethread ft = { t->tid, t->pid, t->nps, t->nfr, t->ninsn,
					 t->npos, t->nstops, t->first_time,
					 t->last_time };

		PUT(&ft, sizeof(ft));
		PUT(t->ps, t->nps * sizeof(*t->ps));
		if (t->nfr)
			PUT(t->fr, t->nfr * sizeof(*t->fr));
	}
	if (ix->ncodes)
		PUT(ix->codes, ix->ncodes * sizeof(*ix->codes));
#undef PUT
	h.nthreads = ix->nti;
	h.ncodes = ix->ncodes;
	h.unplaced = ix->unplaced;
	h.payload_bytes = n;
	h.payload_hash = fnv(FNV0, buf, n);
	tmp = malloc(strlen(file) + 8);
	if (!tmp)
		goto nomem;
	sprintf(tmp, "%s.tmp", file);
	f = fopen(tmp, "wb");
	ok = f && fwrite(&h, sizeof(h), 1, f) == 1 &&
	     (!n || fwrite(buf, n, 1, f) == 1);
	if (f && fclose(f))
		ok = 0;
	if (!ok || rename(tmp, file)) {
		util_errf(err, errlen, "cannot write the index file %s: %s (the "
			  "index is built anew each time)", file, strerror(errno));
		unlink(tmp);
		free(tmp);
		free(buf);
		return PTD_ERR_IO;
	}
	free(tmp);
	free(buf);
	return 0;
nomem:
	free(buf);
	util_errf(err, errlen, "out of memory saving the index");
	return PTD_ERR_NOMEM;
}

/* n bytes at *p from the payload [*p, end), or NULL. */
static const uint8_t *take(const uint8_t **p, const uint8_t *end, uint64_t n)
{
	const uint8_t *r = *p;

	if ((uint64_t)(end - r) < n)
		return NULL;
	*p += n;
	return r;
}

static int stale(char *err, size_t errlen, const char *file, const char *why)
{
	util_errf(err, errlen, "index file %s not used (%s): built anew", file, why);
	return 1;
}

int tix_file_load(struct ptd_index *ix, const char *file, const char *trace,
		  char *err, size_t errlen)
{
	struct filehdr h, want;
	uint8_t *buf = NULL;
	const uint8_t *p, *end;
	struct stat st;
	size_t i, k;
	FILE *f = fopen(file, "rb");

	if (!f)
		return 1;  /* not saved yet */
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, TIX_MAGIC, 8)) {
		fclose(f);
		return stale(err, errlen, file, "not an index file");
	}
	if (h.version != TIX_VERSION || h.byte_order != TIX_BYTE_ORDER ||
	    h.piece_size != sizeof(struct tix_piece_sum) ||
	    h.frame_size != sizeof(struct tix_frame) ||
	    h.code_size != sizeof(struct tix_code) ||
	    h.thread_size != sizeof(struct filethread)) {
		fclose(f);
		return stale(err, errlen, file, "another version or machine");
	}
	if (fill_hdr(ix, trace, &want)) {
		fclose(f);
		return stale(err, errlen, file, "the trace cannot be read");
	}
	if (h.trace_size != want.trace_size || h.trace_mtime_ns != want.trace_mtime_ns ||
	    h.trace_hash != want.trace_hash || h.seg_hash != want.seg_hash ||
	    h.nsegs != want.nsegs) {
		fclose(f);
		return stale(err, errlen, file, "the trace changed since");
	}
	if (fstat(fileno(f), &st) ||
	    (uint64_t)st.st_size != sizeof(h) + h.payload_bytes ||
	    !(buf = malloc(h.payload_bytes ? h.payload_bytes : 1)) ||
	    (h.payload_bytes && fread(buf, h.payload_bytes, 1, f) != 1) ||
	    fnv(FNV0, buf, h.payload_bytes) != h.payload_hash) {
		fclose(f);
		free(buf);
		return stale(err, errlen, file, "truncated or damaged");
	}
	fclose(f);
	p = buf;
	end = buf + h.payload_bytes;
	ix->ti = calloc(h.nthreads ? h.nthreads : 1, sizeof(*ix->ti));
	if (!ix->ti)
		goto bad;
	ix->ticap = h.nthreads ? h.nthreads : 1;
	for (i = 0; i < h.nthreads; i++) {
		const struct filethread *ft = (const void *)take(&p, end, sizeof(*ft));
		struct tix_tinfo *t = &ix->ti[ix->nti];
		const uint8_t *q;

		if (!ft || ft->nps > (uint64_t)(end - p) / sizeof(*t->ps))
			goto bad;
		ix->nti++;
		t->tid = ft->tid;
		t->pid = ft->pid;
		t->ninsn = ft->ninsn;
		t->npos = ft->npos;
		t->nstops = ft->nstops;
		t->first_time = ft->first_time;
		t->last_time = ft->last_time;
		t->nps = t->pscap = ft->nps;
		t->ps = malloc(t->nps * sizeof(*t->ps) + 1);
		q = take(&p, end, t->nps * sizeof(*t->ps));
		if (!t->ps || !q || ft->nfr > (uint64_t)(end - p) / sizeof(*t->fr))
			goto bad;
		memcpy(t->ps, q, t->nps * sizeof(*t->ps));
		t->nfr = t->frcap = ft->nfr;
		t->fr = malloc(t->nfr * sizeof(*t->fr) + 1);
		q = take(&p, end, t->nfr * sizeof(*t->fr));
		if (!t->fr || !q)
			goto bad;
		memcpy(t->fr, q, t->nfr * sizeof(*t->fr));
	}
	if (h.ncodes > (uint64_t)(end - p) / sizeof(*ix->codes) ||
	    (uint64_t)(end - p) != h.ncodes * sizeof(*ix->codes))
		goto bad;
	ix->codes = malloc(h.ncodes * sizeof(*ix->codes) + 1);
	if (!ix->codes)
		goto bad;
	memcpy(ix->codes, p, h.ncodes * sizeof(*ix->codes));
	ix->ncodes = ix->codecap = h.ncodes;
	ix->unplaced = h.unplaced;
	/* what the cursor will index with must lie inside */
	for (i = 0; i < ix->nti; i++)
		for (k = 0; k < ix->ti[i].nps; k++) {
			const struct tix_piece_sum *ps = &ix->ti[i].ps[k];

			if (ps->seg >= h.nsegs || ps->code >= h.ncodes ||
			    (uint64_t)ps->frame0 + ps->nframes > ix->ti[i].nfr)
				goto bad;
		}
	free(buf);
	return 0;
bad:
	free(buf);
	tix_drop_pieces(ix);
	return stale(err, errlen, file, "inconsistent contents");
}
