/* SPDX-License-Identifier: MIT */
#include "textstore.h"
#include "util.h"
#include "ptdecode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INDEX_MAGIC "# ptdecode-text-index 1"
#define NCOLS 13

struct textstore {
	char *dir;
	struct textstore_entry *ents;
	size_t n, cap;
	struct util_map *maps; /* one per entry, mapped on demand */
};

void textstore_hash(const void *data, size_t len, char out[17])
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	snprintf(out, 17, "%016" PRIx64, h);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!strcmp(s, "-")) {
		*v = TEXTSTORE_OPEN_END;
		return 0;
	}
	errno = 0;
	*v = strtoull(s, &end, 0);
	return (errno || end == s || *end) ? -1 : 0;
}

static int copy_field(char *dst, size_t cap, const char *src)
{
	if (strlen(src) >= cap)
		return -1;
	strcpy(dst, src);
	return 0;
}

static int parse_row(char *line, struct textstore_entry *e)
{
	char *col[NCOLS];
	uint64_t v;
	int n = 0;

	for (char *p = line; n < NCOLS; n++) {
		col[n] = p;
		p = strchr(p, '\t');
		if (!p) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	if (n != NCOLS)
		return -1;
	memset(e, 0, sizeof(*e));
	if (copy_field(e->kind, sizeof(e->kind), col[0]) ||
	    parse_u64(col[1], &e->start) || parse_u64(col[2], &e->len) ||
	    parse_u64(col[3], &e->valid_from) || parse_u64(col[4], &e->valid_to))
		return -1;
	if (!strcmp(col[3], "-"))
		e->valid_from = 0;
	e->pid = (int32_t)strtol(col[5], NULL, 0);
	if (copy_field(e->source, sizeof(e->source), col[6]) ||
	    copy_field(e->hash, sizeof(e->hash), col[7]) ||
	    copy_field(e->tag, sizeof(e->tag), col[8]))
		return -1;
	if (parse_u64(col[9], &v))
		return -1;
	e->prog_id = v == TEXTSTORE_OPEN_END ? 0 : (uint32_t)v;
	if (parse_u64(col[10], &e->pgoff))
		return -1;
	if (e->pgoff == TEXTSTORE_OPEN_END)
		e->pgoff = 0;
	if (copy_field(e->build_id, sizeof(e->build_id), col[11]) ||
	    copy_field(e->name, sizeof(e->name), col[12]))
		return -1;
	/* An absurd length cannot name a real blob; reject before mapping. */
	if (e->len == 0 || e->len > (1ull << 40) || e->start + e->len < e->start)
		return -1;
	return 0;
}

int textstore_open(const char *dir, struct textstore **out, char *err,
		   size_t errlen)
{
	struct textstore *ts;
	char path[4096], *line = NULL;
	size_t lcap = 0;
	unsigned long lineno = 0;
	FILE *f;
	int rc = 0;

	*out = NULL;
	ts = calloc(1, sizeof(*ts));
	if (!ts || !(ts->dir = strdup(dir))) {
		free(ts);
		return PTD_ERR_NOMEM;
	}
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT) {
			*out = ts;
			return 0;
		}
		util_errf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		textstore_close(ts);
		return PTD_ERR_IO;
	}
	while (getline(&line, &lcap, f) > 0) {
		size_t l = strlen(line);

		lineno++;
		while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
			line[--l] = '\0';
		if (lineno == 1 && strcmp(line, INDEX_MAGIC)) {
			util_errf(err, errlen, "%s is not a ptdecode text index "
				  "(first line must be \"%s\")", path, INDEX_MAGIC);
			rc = PTD_ERR_FORMAT;
			break;
		}
		if (!l || line[0] == '#')
			continue;
		if (util_grow((void **)&ts->ents, &ts->cap, ts->n + 1, sizeof(*ts->ents))) {
			rc = PTD_ERR_NOMEM;
			break;
		}
		if (parse_row(line, &ts->ents[ts->n])) {
			util_errf(err, errlen, "%s:%lu: malformed row (expected %d "
				  "tab-separated columns, see docs/FORMATS.md)",
				  path, lineno, NCOLS);
			rc = PTD_ERR_CORRUPT;
			break;
		}
		ts->n++;
	}
	free(line);
	fclose(f);
	if (!rc && ts->n && !(ts->maps = calloc(ts->n, sizeof(*ts->maps))))
		rc = PTD_ERR_NOMEM;
	if (rc) {
		textstore_close(ts);
		return rc;
	}
	*out = ts;
	return 0;
}

void textstore_close(struct textstore *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; ts->maps && i < ts->n; i++)
		util_unmap(&ts->maps[i]);
	free(ts->maps);
	free(ts->ents);
	free(ts->dir);
	free(ts);
}

size_t textstore_count(const struct textstore *ts)
{
	return ts ? ts->n : 0;
}

const struct textstore_entry *textstore_get(const struct textstore *ts, size_t i)
{
	return ts && i < ts->n ? &ts->ents[i] : NULL;
}

int textstore_bytes(struct textstore *ts, size_t i, const uint8_t **data,
		    char *err, size_t errlen)
{
	const struct textstore_entry *e;
	char path[4096], h[17];
	int rc;

	*data = NULL;
	if (!ts || i >= ts->n)
		return PTD_ERR_INVAL;
	e = &ts->ents[i];
	if (!strcmp(e->hash, "-")) {
		util_errf(err, errlen, "text %s at %#" PRIx64 "+%#" PRIx64
			  " was not captured (%s)", e->name, e->start, e->len, e->source);
		return PTD_ERR_NO_IMAGE;
	}
	if (ts->maps[i].data) {
		*data = ts->maps[i].data;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s.bin", ts->dir, e->hash);
	rc = util_map_file(path, &ts->maps[i], err, errlen);
	if (rc)
		return PTD_ERR_NO_IMAGE;
	if (ts->maps[i].size != e->len) {
		util_errf(err, errlen, "text blob %s has %zu bytes, index says %" PRIu64,
			  path, ts->maps[i].size, e->len);
		util_unmap(&ts->maps[i]);
		return PTD_ERR_CORRUPT;
	}
	textstore_hash(ts->maps[i].data, ts->maps[i].size, h);
	if (strcmp(h, e->hash)) {
		util_errf(err, errlen, "text blob %s does not match its hash", path);
		util_unmap(&ts->maps[i]);
		return PTD_ERR_CORRUPT;
	}
	*data = ts->maps[i].data;
	return 0;
}

struct textstore_writer {
	char *dir;
	FILE *index;
};

int textstore_writer_open(const char *dir, struct textstore_writer **out)
{
	struct textstore_writer *w;
	char path[4096];
	int fd;

	*out = NULL;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return PTD_ERR_IO;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->dir = strdup(dir))) {
		free(w);
		return PTD_ERR_NOMEM;
	}
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(w->index = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		free(w->dir);
		free(w);
		return PTD_ERR_IO;
	}
	fprintf(w->index, "%s\n# kind\tstart\tlen\tvalid_from\tvalid_to\tpid\tsource"
		"\thash\ttag\tprog_id\tpgoff\tbuild_id\tname\n", INDEX_MAGIC);
	*out = w;
	return 0;
}

static int write_blob(const char *path, const void *bytes, size_t len)
{
	struct stat st;
	const uint8_t *p = bytes;
	int fd;

	if (!stat(path, &st) && (size_t)st.st_size == len)
		return 0; /* same content already stored */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return PTD_ERR_IO;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return PTD_ERR_IO;
		}
		p += n;
		len -= (size_t)n;
	}
	return close(fd) ? PTD_ERR_IO : 0;
}

static const char *dash(const char *s)
{
	return s && *s ? s : "-";
}

int textstore_writer_add(struct textstore_writer *w, struct textstore_entry *e,
			 const void *bytes)
{
	char path[4096], vt[24], name[sizeof(e->name)];
	int rc;

	if (!w || !e || !e->len)
		return PTD_ERR_INVAL;
	if (bytes) {
		textstore_hash(bytes, e->len, e->hash);
		snprintf(path, sizeof(path), "%s/%s.bin", w->dir, e->hash);
		rc = write_blob(path, bytes, e->len);
		if (rc)
			return rc;
	} else {
		strcpy(e->hash, "-");
	}
	if (e->valid_to == TEXTSTORE_OPEN_END)
		strcpy(vt, "-");
	else
		snprintf(vt, sizeof(vt), "%" PRIu64, e->valid_to);
	/* Names must not break the row. */
	snprintf(name, sizeof(name), "%s", dash(e->name));
	for (char *c = name; *c; c++)
		if (*c == '\t' || *c == '\n' || *c == '\r')
			*c = ' ';
	fprintf(w->index, "%s\t%#" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\t%d\t%s\t%s"
		"\t%s\t%u\t0x%" PRIx64 "\t%s\t%s\n",
		e->kind, e->start, e->len, e->valid_from, vt, e->pid,
		dash(e->source), e->hash, dash(e->tag), e->prog_id, e->pgoff,
		dash(e->build_id), name);
	return ferror(w->index) ? PTD_ERR_IO : 0;
}

int textstore_writer_close(struct textstore_writer *w)
{
	int rc = 0;

	if (!w)
		return 0;
	if (fclose(w->index))
		rc = PTD_ERR_IO;
	free(w->dir);
	free(w);
	return rc;
}
