/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* qsort_r */
#include "textmatch.h"
#include "util.h"
#include "textstore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

struct ev {
	uint64_t time, seq, addr;
	uint32_t len;
	uint16_t type;
	int unreg;
	char *name;
};

struct pload {
	uint64_t time;
	uint32_t id;
	uint8_t tag[8];
};

struct copy {
	int src;
	uint64_t time, addr, group;
	uint32_t len, prog_id;
	uint8_t tag[8];
	int has_tag, complete;
	unsigned img;
	uint8_t *bytes;   /* NULL when spooled: read dir/<hash>.bin */
	char hash[17];
	long inst;        /* matched instance, -1 = none */
	uint64_t seen;    /* tracked: start of the last copy that saw these
			   * bytes in place */
	int tracked;      /* its program is re-copied (textmatch_seen) */
};

struct inst {
	uint64_t addr, reg, unreg;   /* unreg == TEXTSTORE_OPEN_END: still live */
	uint32_t len, prog_id;
	uint16_t type;
	const char *name;
	uint8_t tag[8];
	int has_tag, is_sub, is_prog;
	int at_start;                /* synthesized: registered before the start */
	int versioned;               /* written by write_versions */
	long info, fence;            /* copy indexes, -1 = none */
};

struct textmatch {
	struct ev *ev;
	size_t nev, cev;
	struct pload *pl;
	size_t npl, cpl;
	struct copy *cp;
	size_t ncp, ccp;
	struct inst *in;
	size_t nin, cin;
	struct xrow {     /* rows written as given (textmatch_add_row) */
		struct textstore_entry e;
		uint8_t *bytes;
	} *xr;
	size_t nxr, cxr;
	char *spool;      /* text store dir when streaming */
	FILE *journal;    /* its provisional index.tsv */
};

/* Room for element n of *p: 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t n, size_t esz)
{
	return util_grow(p, cap, n + 1, esz) ? -ENOMEM : 0;
}

struct textmatch *textmatch_new(void)
{
	return calloc(1, sizeof(struct textmatch));
}

void textmatch_free(struct textmatch *tm)
{
	if (!tm)
		return;
	for (size_t i = 0; i < tm->nev; i++)
		free(tm->ev[i].name);
	for (size_t i = 0; i < tm->ncp; i++)
		free(tm->cp[i].bytes);
	for (size_t i = 0; i < tm->nxr; i++)
		free(tm->xr[i].bytes);
	free(tm->xr);
	free(tm->ev);
	free(tm->pl);
	free(tm->cp);
	free(tm->in);
	if (tm->journal)
		fclose(tm->journal);
	free(tm->spool);
	free(tm);
}

int textmatch_spool(struct textmatch *tm, const char *dir)
{
	char path[4096];
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(tm->journal = fdopen(fd, "w")) || !(tm->spool = strdup(dir))) {
		int e = errno ? errno : ENOMEM;

		if (fd >= 0 && !tm->journal)
			close(fd);
		return -e;
	}
	fprintf(tm->journal, "# ptdecode-text-index 1\n"
		"# provisional (capture still running or killed): unmatched copies\n");
	return 0;
}

void textmatch_flush(struct textmatch *tm)
{
	if (tm->journal)
		fflush(tm->journal);
}

/* Blob first (via a temporary name, so a blob is never half there), then
 * its provisional row. */
static int spool_copy(struct textmatch *tm, struct copy *c, const uint8_t *bytes)
{
	char path[4096], tmp[4200], tag[17] = "-";
	const uint8_t *p = bytes;
	size_t left = c->len;
	struct stat st;
	int fd;

	textstore_hash(bytes, c->len, c->hash);
	snprintf(path, sizeof(path), "%s/%s.bin", tm->spool, c->hash);
	if (stat(path, &st) || (size_t)st.st_size != c->len) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		while (left) {
			ssize_t n = write(fd, p, left);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(fd);
				return -EIO;
			}
			p += n;
			left -= (size_t)n;
		}
		if (close(fd) || rename(tmp, path))
			return -EIO;
	}
	if (c->has_tag)
		for (int i = 0; i < 8; i++)
			snprintf(tag + 2 * i, 3, "%02x", c->tag[i]);
	fprintf(tm->journal, "uncertain\t%#" PRIx64 "\t%u\t%" PRIu64 "\t", c->addr, c->len,
		c->src == TM_FENCE ? (uint64_t)0 : c->time);
	if (c->src == TM_FENCE)
		fprintf(tm->journal, "%" PRIu64, c->time);
	else
		fputc('-', tm->journal);
	fprintf(tm->journal, "\t-1\t%s\t%s\t%s\t%u\t0x0\t-\tbpf_prog_%s\n",
		c->src == TM_FENCE ? "fence" : "prog-info", c->hash, tag, c->prog_id, tag);
	return ferror(tm->journal) ? -EIO : 0;
}

int textmatch_add_row(struct textmatch *tm, const struct textstore_entry *e,
		      const uint8_t *bytes)
{
	struct xrow *x;

	if (grow((void **)&tm->xr, &tm->cxr, tm->nxr, sizeof(*tm->xr)))
		return -ENOMEM;
	x = &tm->xr[tm->nxr];
	x->e = *e;
	x->bytes = NULL;
	if (bytes) {
		if (!(x->bytes = malloc(e->len ? e->len : 1)))
			return -ENOMEM;
		memcpy(x->bytes, bytes, e->len);
	}
	tm->nxr++;
	return 0;
}

size_t textmatch_ncopies(const struct textmatch *tm)
{
	return tm->ncp;
}

void textmatch_seen(struct textmatch *tm, size_t idx, uint64_t t)
{
	if (idx >= tm->ncp)
		return;
	tm->cp[idx].tracked = 1;
	if (t > tm->cp[idx].seen)
		tm->cp[idx].seen = t;
}

int textmatch_ksymbol(struct textmatch *tm, uint64_t time, uint64_t addr,
		      uint32_t len, uint16_t ksym_type, int unregister,
		      const char *name)
{
	struct ev *e;

	if (grow((void **)&tm->ev, &tm->cev, tm->nev, sizeof(*e)))
		return -ENOMEM;
	e = &tm->ev[tm->nev];
	e->name = strdup(name ? name : "");
	if (!e->name)
		return -ENOMEM;
	e->time = time;
	e->seq = tm->nev++;
	e->addr = addr;
	e->len = len;
	e->type = ksym_type;
	e->unreg = unregister;
	return 0;
}

int textmatch_prog_load(struct textmatch *tm, uint64_t time, uint32_t id,
			const uint8_t tag[8])
{
	if (grow((void **)&tm->pl, &tm->cpl, tm->npl, sizeof(*tm->pl)))
		return -ENOMEM;
	tm->pl[tm->npl].time = time;
	tm->pl[tm->npl].id = id;
	memcpy(tm->pl[tm->npl].tag, tag, 8);
	tm->npl++;
	return 0;
}

int textmatch_copy(struct textmatch *tm, enum tm_source src, uint64_t time,
		   uint64_t addr, uint32_t len, const uint8_t *tag,
		   uint32_t prog_id, uint64_t group, unsigned img,
		   int complete, const uint8_t *bytes)
{
	struct copy *c;

	if (!len || grow((void **)&tm->cp, &tm->ccp, tm->ncp, sizeof(*c)))
		return len ? -ENOMEM : -EINVAL;
	c = &tm->cp[tm->ncp];
	memset(c, 0, sizeof(*c));
	if (!tm->spool) {
		if (!(c->bytes = malloc(len)))
			return -ENOMEM;
		memcpy(c->bytes, bytes, len);
	}
	tm->ncp++;
	c->src = src;
	c->time = time;
	c->addr = addr;
	c->len = len;
	c->group = group;
	c->prog_id = prog_id;
	c->img = img;
	c->complete = complete;
	c->inst = -1;
	if (tag) {
		memcpy(c->tag, tag, 8);
		c->has_tag = 1;
	}
	if (tm->spool && (!(src == TM_FENCE) || complete))
		return spool_copy(tm, c, bytes);
	return 0;
}

/* The bytes of a copy: in memory, or read back from the spool. */
static const uint8_t *copy_bytes(const struct textmatch *tm, const struct copy *c, uint8_t **tofree)
{
	char path[4096];
	uint8_t *b;
	FILE *f;

	*tofree = NULL;
	if (c->bytes || !tm->spool || !c->hash[0])
		return c->bytes;
	snprintf(path, sizeof(path), "%s/%s.bin", tm->spool, c->hash);
	if (!(f = fopen(path, "rb")))
		return NULL;
	b = malloc(c->len);
	if (b && fread(b, 1, c->len, f) != c->len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*tofree = b;
	return b;
}

/* "bpf_prog_<16 hex>[_name]" -> tag. */
static int name_tag(const char *name, uint8_t tag[8])
{
	if (strncmp(name, "bpf_prog_", 9))
		return 0;
	for (int i = 0; i < 8; i++) {
		unsigned v;

		if (sscanf(name + 9 + 2 * i, "%2x", &v) != 1)
			return 0;
		tag[i] = (uint8_t)v;
	}
	return name[25] == 0 || name[25] == '_';
}

/* Open instances by address: open addressing, linear probing. */
struct amap {
	uint64_t *key;
	long *val;          /* instance index; -1 empty, -2 deleted */
	size_t cap, used;
};

static long amap_get(const struct amap *m, uint64_t k)
{
	for (size_t i = (k * 0x9E3779B97F4A7C15ull) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->val[i] == -1)
			return -1;
		if (m->val[i] >= 0 && m->key[i] == k)
			return m->val[i];
	}
}

static void amap_del(struct amap *m, uint64_t k)
{
	for (size_t i = (k * 0x9E3779B97F4A7C15ull) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->val[i] == -1)
			return;
		if (m->val[i] >= 0 && m->key[i] == k) {
			m->val[i] = -2;
			return;
		}
	}
}

static int amap_put(struct amap *m, uint64_t k, long v)
{
	if ((m->used + 1) * 2 > m->cap) {
		struct amap n = { .cap = m->cap ? m->cap * 2 : 1024 };

		n.key = malloc(n.cap * sizeof(*n.key));
		n.val = malloc(n.cap * sizeof(*n.val));
		if (!n.key || !n.val) {
			free(n.key);
			free(n.val);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n.cap; i++)
			n.val[i] = -1;
		for (size_t i = 0; i < m->cap; i++)
			if (m->val[i] >= 0)
				amap_put(&n, m->key[i], m->val[i]);
		free(m->key);
		free(m->val);
		*m = n;
	}
	for (size_t i = (k * 0x9E3779B97F4A7C15ull) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
		if (m->val[i] < 0) {
			if (m->val[i] == -1)
				m->used++;
			m->key[i] = k;
			m->val[i] = v;
			return 0;
		}
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_copy(const void *a, const void *b)
{
	const struct copy *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->src != y->src)
		return x->src - y->src;
	return (int)x->img - (int)y->img;
}

static int cmp_inst_idx(const void *a, const void *b, void *ctx)
{
	const struct textmatch *tm = ctx;
	const struct inst *x = &tm->in[*(const long *)a], *y = &tm->in[*(const long *)b];

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->reg != y->reg)
		return x->reg < y->reg ? -1 : 1;
	return *(const long *)a < *(const long *)b ? -1 : 1;
}

/* Builds instances from the KSYMBOL events in time order. */
static int build_instances(struct textmatch *tm)
{
	struct amap open = { 0 };
	int rc = 0;

	util_sort(tm->ev, tm->nev, sizeof(*tm->ev), cmp_ev);
	for (size_t i = 0; i < tm->nev && !rc; i++) {
		const struct ev *e = &tm->ev[i];
		long cur = open.cap ? amap_get(&open, e->addr) : -1;
		struct inst *in;

		if (e->unreg) {
			if (cur >= 0) {
				tm->in[cur].unreg = e->time;
				amap_del(&open, e->addr);
			}
			continue;
		}
		if (cur >= 0) {
			in = &tm->in[cur];
			/* Synthesized at start and also seen live: one instance. */
			if (in->reg == 0 && in->len == e->len) {
				in->reg = e->time;
				in->name = e->name;
				in->has_tag = name_tag(e->name, in->tag);
				continue;
			}
			in->unreg = e->time; /* its UNREGISTER was lost */
		}
		if ((rc = grow((void **)&tm->in, &tm->cin, tm->nin, sizeof(*in))))
			break;
		in = &tm->in[tm->nin];
		memset(in, 0, sizeof(*in));
		in->addr = e->addr;
		in->reg = e->time;
		in->unreg = TEXTSTORE_OPEN_END;
		in->len = e->len;
		in->type = e->type;
		in->name = e->name;
		in->has_tag = name_tag(e->name, in->tag);
		in->is_prog = e->type == PERF_RECORD_KSYMBOL_TYPE_BPF && !strncmp(e->name, "bpf_prog_", 9);
		in->at_start = !e->time;
		in->info = in->fence = -1;
		rc = amap_put(&open, e->addr, (long)tm->nin++);
	}
	free(open.key);
	free(open.val);
	return rc;
}

/* First index in the sorted list with instance address >= addr. */
static size_t lower(const struct textmatch *tm, const long *idx, uint64_t addr)
{
	size_t lo = 0, hi = tm->nin;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tm->in[idx[mid]].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static long match(const struct textmatch *tm, const long *idx, const struct copy *c)
{
	long best = -1;

	for (size_t k = lower(tm, idx, c->addr); k < tm->nin && tm->in[idx[k]].addr == c->addr; k++) {
		const struct inst *in = &tm->in[idx[k]];

		if (!in->is_prog || in->len != c->len)
			continue;
		if (c->has_tag && in->has_tag && memcmp(c->tag, in->tag, 8))
			continue;
		if (c->src == TM_PROG_INFO && !c->time) {
			/* made at the start: of a program there then, whose
			 * live REGISTER may still have come after the events
			 * opened (a live copy of it then replaces this one) */
			if (!in->at_start || in->info >= 0)
				continue;
			if (best < 0 || in->reg >= tm->in[best].reg)
				best = idx[k];
		} else if (c->src != TM_FENCE) {
			/* live at the PROG_LOAD (re-copy: at the copy); the
			 * latest such */
			if ((c->src == TM_PROG_INFO && in->info >= 0 && tm->cp[in->info].time) ||
			    in->reg > c->time ||
			    (in->unreg != TEXTSTORE_OPEN_END && in->unreg < c->time))
				continue;
			if (best < 0 || in->reg >= tm->in[best].reg)
				best = idx[k];
		} else {
			/* unregistered before the free; the latest such */
			if (in->fence >= 0 || in->unreg == TEXTSTORE_OPEN_END || in->unreg > c->time)
				continue;
			if (best < 0 || in->unreg >= tm->in[best].unreg)
				best = idx[k];
		}
	}
	return best;
}

static void assign_prog_ids(struct textmatch *tm)
{
	/* Main images: the PROG_LOAD with the same tag inside the instance's
	 * lifetime (loads come right after their KSYMBOLs). */
	for (size_t i = 0; i < tm->nin; i++) {
		struct inst *in = &tm->in[i];

		if (in->prog_id || !in->has_tag)
			continue;
		for (size_t p = 0; p < tm->npl; p++)
			if (!memcmp(tm->pl[p].tag, in->tag, 8) && tm->pl[p].time >= in->reg &&
			    (in->unreg == TEXTSTORE_OPEN_END || tm->pl[p].time <= in->unreg)) {
				in->prog_id = tm->pl[p].id;
				break;
			}
	}
}

static void hex8(const uint8_t t[8], char out[17])
{
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", t[i]);
}

static int add_row(const struct textmatch *tm, struct textstore_writer *w,
		   const struct inst *in, const struct copy *c,
		   const char *kind, struct textmatch_counts *n)
{
	struct textstore_entry e;
	uint8_t *tofree = NULL;
	const uint8_t *bytes = c ? copy_bytes(tm, c, &tofree) : NULL;
	int rc;

	memset(&e, 0, sizeof(e));
	snprintf(e.kind, sizeof(e.kind), "%s", kind);
	e.pid = -1;
	strcpy(e.build_id, "-");
	strcpy(e.tag, "-");
	if (in) {
		e.start = in->addr;
		e.len = in->len;
		e.valid_from = in->reg;
		e.valid_to = in->unreg;
		e.prog_id = in->prog_id;
		if (in->has_tag)
			hex8(in->tag, e.tag);
		snprintf(e.name, sizeof(e.name), "%s", in->name);
	} else {
		/* No KSYMBOL for this copy: keep the bytes, flagged uncertain. */
		e.start = c->addr;
		e.len = c->len;
		e.valid_from = c->src == TM_FENCE ? 0 : c->time;
		e.valid_to = c->src == TM_FENCE ? c->time : TEXTSTORE_OPEN_END;
		e.prog_id = c->prog_id;
		if (c->has_tag)
			hex8(c->tag, e.tag);
		snprintf(e.name, sizeof(e.name), "bpf_prog_%s", e.tag);
	}
	snprintf(e.source, sizeof(e.source), "%s",
		 !c ? "-" : c->src == TM_FENCE ? "fence" : "prog-info");
	n->rows++;
	if (c && !bytes)
		return -EIO;   /* a spooled blob vanished */
	rc = textstore_writer_add(w, &e, bytes);
	free(tofree);
	return rc;
}

/* Do two copies hold the same bytes? */
static int same_bytes(const struct copy *a, const struct copy *b)
{
	if (a->len != b->len)
		return 0;
	return a->bytes && b->bytes ? !memcmp(a->bytes, b->bytes, a->len) :
	       a->hash[0] && !strcmp(a->hash, b->hash);
}

/* A row of a tracked instance with an explicit window: bytes of c, or
 * c == NULL for an `uncertain` row (hash "-": which bytes were there is
 * not known). */
static int add_window(const struct textmatch *tm, struct textstore_writer *w,
		      const struct inst *in, const struct copy *c, const char *kind,
		      uint64_t from, uint64_t to, struct textmatch_counts *n)
{
	struct textstore_entry e;
	uint8_t *tofree = NULL;
	const uint8_t *bytes = c ? copy_bytes(tm, c, &tofree) : NULL;
	int rc;

	if (c && !bytes)
		return -EIO;
	memset(&e, 0, sizeof(e));
	snprintf(e.kind, sizeof(e.kind), "%s", c ? kind : "uncertain");
	e.start = in->addr;
	e.len = in->len;
	e.valid_from = from;
	e.valid_to = to;
	e.pid = -1;
	e.prog_id = in->prog_id;
	strcpy(e.build_id, "-");
	strcpy(e.tag, "-");
	if (in->has_tag)
		hex8(in->tag, e.tag);
	snprintf(e.name, sizeof(e.name), "%s", in->name);
	snprintf(e.source, sizeof(e.source), "prog-info");
	n->rows++;
	if (c) {
		n->versions++;
	} else {
		n->uncertain_rows++;
		if (to != TEXTSTORE_OPEN_END)
			n->uncertain_ns += to - from;
	}
	rc = textstore_writer_add(w, &e, bytes);
	free(tofree);
	return rc;
}

/* The rows of an instance whose program was re-copied while it lived: one
 * per version of its bytes, valid from when the version was first seen
 * (the first from the KSYMBOL) to when it was last seen, and `uncertain`
 * rows in between, where a re-patch happened at a moment nobody saw.  The
 * last version lasts to the UNREGISTER if the fence's copy, taken after it,
 * holds the same bytes (else up to its last sighting too), and stays open
 * for a program still loaded at the end.  A version seen by a single copy
 * has no window it certainly held: its time goes to the uncertain rows.
 * vers: the prog-info copy (if any) and the re-copies, in time order. */
static int write_versions(const struct textmatch *tm, struct textstore_writer *w,
			  const struct inst *in, const char *kind,
			  const long *vers, size_t nv, struct textmatch_counts *n)
{
	uint64_t prev_end = in->reg;
	int rc = 0;

	n->tracked++;
	for (size_t k = 0; k < nv && !rc; k++) {
		const struct copy *c = &tm->cp[vers[k]];
		uint64_t from = c->src == TM_PROG_INFO ? in->reg : c->time, to = c->seen;

		if (k + 1 == nv && in->unreg == TEXTSTORE_OPEN_END)
			to = TEXTSTORE_OPEN_END;
		else if (k + 1 == nv && in->fence >= 0 && same_bytes(c, &tm->cp[in->fence]))
			to = in->unreg;
		if (to != TEXTSTORE_OPEN_END && in->unreg != TEXTSTORE_OPEN_END && to > in->unreg)
			to = in->unreg;
		if (from >= to)
			continue;
		if (from > prev_end)
			rc = add_window(tm, w, in, NULL, kind, prev_end, from, n);
		if (!rc)
			rc = add_window(tm, w, in, c, kind, from, to, n);
		prev_end = to;
	}
	if (!rc && prev_end != TEXTSTORE_OPEN_END && prev_end < in->unreg)
		rc = add_window(tm, w, in, NULL, kind, prev_end, in->unreg, n);
	return rc;
}

/* Does row e overlap, in range and time, an instance whose versions (and
 * uncertain windows) were written?  One copy for all its life would
 * outrank those windows: the versions say it. */
static int in_versioned(const struct textmatch *tm, const struct textstore_entry *e)
{
	for (size_t i = 0; i < tm->nin; i++) {
		const struct inst *in = &tm->in[i];

		if (in->versioned && in->addr < e->start + e->len &&
		    e->start < in->addr + in->len && in->reg < e->valid_to &&
		    e->valid_from < in->unreg)
			return 1;
	}
	return 0;
}

static int cmp_recopy(const void *a, const void *b, void *ctx)
{
	const struct textmatch *tm = ctx;
	const struct copy *x = &tm->cp[*(const long *)a], *y = &tm->cp[*(const long *)b];

	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return *(const long *)a < *(const long *)b ? -1 : 1;
}

int textmatch_write(struct textmatch *tm, const char *dir,
		    struct textmatch_counts *n, char *err, size_t errlen)
{
	struct textstore_writer *w = NULL;
	long *idx = NULL, *rv = NULL, *vers = NULL;
	size_t nrv = 0, irv = 0;
	int rc;

	memset(n, 0, sizeof(*n));
	if (tm->journal) {
		fclose(tm->journal);  /* the final index replaces it */
		tm->journal = NULL;
	}
	tm->nin = 0;
	if ((rc = build_instances(tm)))
		goto fail;
	idx = malloc((tm->nin + 1) * sizeof(*idx));
	if (!idx) {
		rc = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < tm->nin; i++)
		idx[i] = (long)i;
	qsort_r(idx, tm->nin, sizeof(*idx), cmp_inst_idx, tm);
	util_sort(tm->cp, tm->ncp, sizeof(*tm->cp), cmp_copy);

	for (size_t i = 0; i < tm->ncp; i++) {
		struct copy *c = &tm->cp[i];
		long m;

		if (c->src == TM_FENCE && !c->complete) {
			n->fence_incomplete++;
			continue;
		}
		m = match(tm, idx, c);
		c->inst = m;
		if (m < 0) {
			if (c->src == TM_FENCE)
				n->fence_unmatched++;
			else if (c->src == TM_RECOPY)
				n->recopy_unmatched++;
			else
				n->info_unmatched++;
			continue;
		}
		if (c->src == TM_RECOPY)
			nrv++;
		else if (c->src == TM_FENCE)
			tm->in[m].fence = (long)i;
		else
			tm->in[m].info = (long)i;
		if (c->img)
			tm->in[m].is_sub = 1;
		if (c->prog_id)
			tm->in[m].prog_id = c->prog_id;
	}
	assign_prog_ids(tm);
	/* Fence subprogram images take the prog id of their main image (same
	 * group; copies are sorted by time, then image). */
	for (size_t i = 0; i < tm->ncp; i++) {
		struct copy *c = &tm->cp[i];

		if (c->src != TM_FENCE || c->inst < 0 || !c->img || tm->in[c->inst].prog_id)
			continue;
		for (size_t j = i; j-- > 0 && tm->cp[j].time == c->time;)
			if (tm->cp[j].src == TM_FENCE && tm->cp[j].img == 0 && tm->cp[j].inst >= 0 &&
			    tm->cp[j].group == c->group) {
				tm->in[c->inst].prog_id = tm->in[tm->cp[j].inst].prog_id;
				break;
			}
	}

	/* Re-copies by instance, in time order. */
	rv = malloc((nrv + 1) * sizeof(*rv));
	vers = malloc((nrv + 2) * sizeof(*vers));
	if (!rv || !vers) {
		rc = -ENOMEM;
		goto fail;
	}
	nrv = 0;
	for (size_t i = 0; i < tm->ncp; i++)
		if (tm->cp[i].src == TM_RECOPY && tm->cp[i].inst >= 0)
			rv[nrv++] = (long)i;
	qsort_r(rv, nrv, sizeof(*rv), cmp_recopy, tm);

	if ((rc = textstore_writer_open(dir, &w)))
		goto fail;
	for (size_t i = 0; i < tm->nin && !rc; i++) {
		const struct inst *in = &tm->in[i];
		const char *kind = !in->is_prog ? "trampoline" : in->is_sub ? "bpf-subprog" : "bpf";
		size_t nv = 0;

		if (in->info >= 0 && tm->cp[in->info].tracked)
			vers[nv++] = in->info;
		while (irv < nrv && tm->cp[rv[irv]].inst < (long)i)
			irv++;
		while (irv < nrv && tm->cp[rv[irv]].inst == (long)i)
			vers[nv++] = rv[irv++];
		if (!in->is_prog) {
			n->other_ksyms++;
			rc = add_row(tm, w, in, NULL, kind, n);
			continue;
		}
		n->instances++;
		if (nv) {
			tm->in[i].versioned = 1;
			/* Image re-copied while it lived (jitpoll). */
			if (in->info >= 0)
				n->with_prog_info++;
			if (in->fence >= 0)
				n->with_fence++;
			rc = write_versions(tm, w, in, kind, vers, nv, n);
			continue;
		}
		if (in->info >= 0 && in->fence >= 0) {
			const struct copy *a = &tm->cp[in->info], *b = &tm->cp[in->fence];

			n->with_both++;
			if (a->bytes && b->bytes ? !memcmp(a->bytes, b->bytes, in->len) :
			    !strcmp(a->hash, b->hash))
				n->both_identical++;
			else
				n->both_differ++;
		}
		if (in->info >= 0) {
			n->with_prog_info++;
			rc = add_row(tm, w, in, &tm->cp[in->info], kind, n);
		}
		if (in->fence >= 0 && !rc) {
			n->with_fence++;
			rc = add_row(tm, w, in, &tm->cp[in->fence], kind, n);
		}
		if (in->info < 0 && in->fence < 0) {
			n->missed++;
			rc = add_row(tm, w, in, NULL, kind, n);
		}
	}
	for (size_t i = 0; i < tm->ncp && !rc; i++)
		if (tm->cp[i].inst < 0 && (tm->cp[i].src != TM_FENCE || tm->cp[i].complete))
			rc = add_row(tm, w, NULL, &tm->cp[i], "uncertain", n);
	for (size_t i = 0; i < tm->nxr && !rc; i++) {
		if (in_versioned(tm, &tm->xr[i].e)) {
			n->rows_versioned_dropped++;
			continue;
		}
		n->rows++;
		rc = textstore_writer_add(w, &tm->xr[i].e, tm->xr[i].bytes);
	}
	if (rc)
		goto fail;
	rc = textstore_writer_close(w);
	w = NULL;
	if (rc)
		goto fail;
	free(idx);
	free(rv);
	free(vers);
	return 0;
fail:
	if (w)
		textstore_writer_close(w);
	free(idx);
	free(rv);
	free(vers);
	snprintf(err, errlen, "writing the text store %s: error %d", dir, rc);
	return rc;
}
