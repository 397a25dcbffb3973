/* SPDX-License-Identifier: MIT */
#include "dyntext.h"
#include "imgstore.h"
#include "perf_abi.h"
#include "symtab.h"
#include "textstore.h"
#include "util.h"
#include "ptdecode.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOSTR ((size_t)-1)

/* A source line record: BPF line_info or a jitdump debug entry. */
struct dt_line {
	uint64_t addr;
	uint32_t line, col;
	size_t file, text;      /* pool offsets (text may be NOSTR) */
	size_t seq;             /* order in the input: ties at one address */
};

struct dt_img {
	uint64_t addr;
	uint64_t len;
	size_t func;            /* BTF function name or NOSTR */
};

struct dt_prog {
	uint32_t id;
	char tag[17];
	size_t name;
	size_t img0, nimg;      /* in dt->imgs */
	size_t line0, nline;    /* in dt->lines, sorted by address */
};

struct dt_range {
	enum dyntext_kind kind;
	int32_t pid;
	uint64_t start, len, from, to;
	uint32_t prog_id;
	uint64_t code_index;
	size_t name, func;
	size_t line0, nline;    /* line records of this code, by address */
};

struct dyntext {
	char *pool;
	size_t npool, poolcap;
	struct dt_line *lines;
	size_t nlines, linecap;
	struct dt_img *imgs;
	size_t nimgs, imgcap;
	struct dt_prog *progs;
	size_t nprogs, progcap;
	struct dt_range *ranges;
	size_t nranges, rangecap;
	int sorted;             /* ranges sorted by (pid, start) */
	uint64_t maxlen;        /* longest range: bounds the backward scan */
};

struct dyntext *dyntext_new(void)
{
	return calloc(1, sizeof(struct dyntext));
}

void dyntext_free(struct dyntext *dt)
{
	if (!dt)
		return;
	free(dt->pool);
	free(dt->lines);
	free(dt->imgs);
	free(dt->progs);
	free(dt->ranges);
	free(dt);
}

size_t dyntext_bpf_prog_count(const struct dyntext *dt)
{
	return dt ? dt->nprogs : 0;
}

size_t dyntext_range_count(const struct dyntext *dt)
{
	return dt ? dt->nranges : 0;
}

/* ---- small helpers ---------------------------------------------------- */

static size_t pool_addn(struct dyntext *dt, const char *s, size_t n)
{
	size_t off = dt->npool;

	if (util_grow((void **)&dt->pool, &dt->poolcap, dt->npool + n + 1, 1))
		return NOSTR;
	memcpy(dt->pool + off, s, n);
	dt->pool[off + n] = 0;
	dt->npool += n + 1;
	return off;
}

static size_t pool_add(struct dyntext *dt, const char *s)
{
	return pool_addn(dt, s, strlen(s));
}

static const char *str(const struct dyntext *dt, size_t off)
{
	return off == NOSTR ? NULL : dt->pool + off;
}

static struct dt_range *new_range(struct dyntext *dt)
{
	struct dt_range *r;

	if (util_grow((void **)&dt->ranges, &dt->rangecap, dt->nranges + 1,
		      sizeof(*dt->ranges)))
		return NULL;
	r = &dt->ranges[dt->nranges++];
	memset(r, 0, sizeof(*r));
	r->name = r->func = NOSTR;
	r->to = IMGSTORE_FOREVER;
	dt->sorted = 0;
	return r;
}

static void range_done(struct dyntext *dt, const struct dt_range *r)
{
	if (r->len > dt->maxlen)
		dt->maxlen = r->len;
}

static struct dt_line *new_line(struct dyntext *dt)
{
	struct dt_line *l;

	if (util_grow((void **)&dt->lines, &dt->linecap, dt->nlines + 1,
		      sizeof(*dt->lines)))
		return NULL;
	l = &dt->lines[dt->nlines];
	memset(l, 0, sizeof(*l));
	l->file = l->text = NOSTR;
	l->seq = dt->nlines++;
	return l;
}

static int cmp_line(const void *a, const void *b)
{
	const struct dt_line *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* qsort that accepts an empty (NULL) array. */
static void sort(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		util_sort(base, n, sz, cmp);
}

/* Strict unsigned number (base 0: 0x hex or decimal) filling the field. */
static int num(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

/* Splits line (modified in place) at tabs into at most max fields. */
static int split_tabs(char *line, char **f, int max)
{
	int n = 0;

	for (;;) {
		char *t = strchr(line, '\t');

		if (n == max)
			return max + 1;
		f[n++] = line;
		if (!t)
			return n;
		*t = 0;
		line = t + 1;
	}
}

/* ---- BPF: bpf/<id>.tsv --------------------------------------------------- */

#define BPF_MAGIC "# ptcapture-bpf 1"

static int tsv_fail(char *err, size_t errlen, const char *path, size_t lno,
		    const char *what)
{
	util_errf(err, errlen, "%s:%zu: %s (a bpf/<prog_id>.tsv as written by "
		  "ptcapture was expected; recapture or remove the file)",
		  path, lno, what);
	return PTD_ERR_FORMAT;
}

/* Parses one .tsv held in buf (NUL-terminated, modified).  On failure the
 * caller drops what this call appended. */
static int parse_tsv(struct dyntext *dt, char *buf, const char *path,
		     char *err, size_t errlen)
{
	struct dt_prog p = { 0 };
	uint64_t nimg_decl = 0, v[6];
	size_t lno = 0, file_cache = NOSTR;
	int have_prog = 0;
	char *line = buf, *next, *f[8] = { 0 };

	p.name = NOSTR;
	p.img0 = dt->nimgs;
	p.line0 = dt->nlines;
	for (; line && *line; line = next) {
		int n;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lno++;
		if (lno == 1) {
			if (strcmp(line, BPF_MAGIC))
				return tsv_fail(err, errlen, path, lno,
						"first line is not \"" BPF_MAGIC "\"");
			continue;
		}
		if (line[0] == '#' || !line[0])
			continue;
		n = split_tabs(line, f, 7);
		if (!strcmp(f[0], "prog")) {
			if (have_prog)
				return tsv_fail(err, errlen, path, lno, "second prog row");
			if (n != 7 || num(f[1], &v[0]) || v[0] == 0 || v[0] > UINT32_MAX ||
			    strlen(f[2]) != 16 || strspn(f[2], "0123456789abcdef") != 16 ||
			    num(f[5], &nimg_decl) || nimg_decl == 0)
				return tsv_fail(err, errlen, path, lno,
						"bad prog row (want: prog ID TAG NAME BTF_ID NR_IMAGES TYPE)");
			p.id = (uint32_t)v[0];
			memcpy(p.tag, f[2], 17);
			if ((p.name = pool_add(dt, f[3])) == NOSTR)
				return PTD_ERR_NOMEM;
			have_prog = 1;
			continue;
		}
		if (!have_prog)
			return tsv_fail(err, errlen, path, lno, "row before the prog row");
		if (!strcmp(f[0], "image")) {
			struct dt_img *im;

			if (n != 4 || num(f[1], &v[0]) || num(f[2], &v[1]) ||
			    num(f[3], &v[2]))
				return tsv_fail(err, errlen, path, lno,
						"bad image row (want: image INDEX 0xADDR LEN)");
			if (v[0] != dt->nimgs - p.img0 || v[0] >= nimg_decl)
				return tsv_fail(err, errlen, path, lno,
						"image index out of order or beyond the prog row's count");
			if (!v[1] || !v[2] || v[1] + v[2] < v[1])
				return tsv_fail(err, errlen, path, lno,
						"image address or length is zero or wraps around");
			if (util_grow((void **)&dt->imgs, &dt->imgcap, dt->nimgs + 1,
				      sizeof(*dt->imgs)))
				return PTD_ERR_NOMEM;
			im = &dt->imgs[dt->nimgs++];
			im->addr = v[1];
			im->len = v[2];
			im->func = NOSTR;
		} else if (!strcmp(f[0], "func")) {
			struct dt_img *im;

			if (n != 6 || num(f[1], &v[0]) || num(f[2], &v[1]) ||
			    num(f[3], &v[2]) || num(f[4], &v[3]))
				return tsv_fail(err, errlen, path, lno,
						"bad func row (want: func INDEX INSN_OFF TYPE_ID 0xADDR NAME)");
			if (v[0] >= dt->nimgs - p.img0)
				return tsv_fail(err, errlen, path, lno,
						"func row for an image not listed before it");
			im = &dt->imgs[p.img0 + v[0]];
			if (v[3] != im->addr)
				return tsv_fail(err, errlen, path, lno,
						"func row address differs from its image's");
			if (strcmp(f[5], "-") && (im->func = pool_add(dt, f[5])) == NOSTR)
				return PTD_ERR_NOMEM;
		} else if (!strcmp(f[0], "line")) {
			struct dt_line *l;

			if (n != 7 || num(f[1], &v[0]) || num(f[2], &v[1]) ||
			    num(f[3], &v[2]) || num(f[4], &v[3]) ||
			    v[2] > UINT32_MAX || v[3] > UINT32_MAX)
				return tsv_fail(err, errlen, path, lno,
						"bad line row (want: line 0xADDR INSN_OFF LINE COL FILE TEXT)");
			if (!v[0])
				continue; /* no JIT address known for this record */
			if (!(l = new_line(dt)))
				return PTD_ERR_NOMEM;
			l->addr = v[0];
			l->line = (uint32_t)v[2];
			l->col = (uint32_t)v[3];
			/* consecutive records nearly always name the same file */
			if (file_cache == NOSTR || strcmp(dt->pool + file_cache, f[5]))
				file_cache = pool_add(dt, f[5]);
			if (file_cache == NOSTR)
				return PTD_ERR_NOMEM;
			l->file = file_cache;
			if (strcmp(f[6], "-") && (l->text = pool_add(dt, f[6])) == NOSTR)
				return PTD_ERR_NOMEM;
		} else {
			return tsv_fail(err, errlen, path, lno, "unknown row kind");
		}
	}
	if (!have_prog)
		return tsv_fail(err, errlen, path, lno, "no prog row");
	p.nimg = dt->nimgs - p.img0;
	if (p.nimg != nimg_decl)
		return tsv_fail(err, errlen, path, lno,
				"fewer image rows than the prog row announces");
	p.nline = dt->nlines - p.line0;
	/* every line record must lie inside one of the program's images */
	for (size_t i = p.line0; i < dt->nlines; i++) {
		size_t k;

		for (k = 0; k < p.nimg; k++) {
			const struct dt_img *im = &dt->imgs[p.img0 + k];

			if (dt->lines[i].addr - im->addr < im->len)
				break;
		}
		if (k == p.nimg)
			return tsv_fail(err, errlen, path, lno,
					"a line record's address is outside the program's images");
	}
	if (p.nline)
		sort(dt->lines + p.line0, p.nline, sizeof(*dt->lines), cmp_line);
	for (size_t i = 0; i < dt->nprogs; i++)
		if (dt->progs[i].id == p.id)
			return tsv_fail(err, errlen, path, lno, "program id loaded twice");
	if (util_grow((void **)&dt->progs, &dt->progcap, dt->nprogs + 1,
		      sizeof(*dt->progs)))
		return PTD_ERR_NOMEM;
	dt->progs[dt->nprogs++] = p;
	return 0;
}

int dyntext_load_bpf_tsv(struct dyntext *dt, const char *path,
			 char *err, size_t errlen)
{
	struct util_map m;
	size_t nimgs, nlines, npool;
	char *buf;
	int rc;

	if (!dt || !path)
		return PTD_ERR_INVAL;
	rc = util_map_file(path, &m, err, errlen);
	if (rc)
		return rc;
	if (memchr(m.data, 0, m.size)) {
		util_unmap(&m);
		util_errf(err, errlen, "%s: NUL byte in a text file", path);
		return PTD_ERR_FORMAT;
	}
	buf = malloc(m.size + 1);
	if (!buf) {
		util_unmap(&m);
		return PTD_ERR_NOMEM;
	}
	memcpy(buf, m.data, m.size);
	buf[m.size] = 0;
	util_unmap(&m);
	nimgs = dt->nimgs;
	nlines = dt->nlines;
	npool = dt->npool;
	rc = parse_tsv(dt, buf, path, err, errlen);
	free(buf);
	if (rc) {
		/* drop the half-read program */
		dt->nimgs = nimgs;
		dt->nlines = nlines;
		dt->npool = npool;
		if (rc == PTD_ERR_NOMEM)
			util_errf(err, errlen, "%s: out of memory", path);
	}
	return rc;
}

static struct dt_prog *find_prog(struct dyntext *dt, uint32_t id)
{
	for (size_t i = 0; i < dt->nprogs; i++)
		if (dt->progs[i].id == id)
			return &dt->progs[i];
	return NULL;
}

/* Makes r a BPF range of image k of program p. */
static void bpf_range_prog(struct dyntext *dt, struct dt_range *r,
			   const struct dt_prog *p)
{
	r->prog_id = p->id;
	r->line0 = p->line0;
	r->nline = p->nline;
	for (size_t k = 0; k < p->nimg; k++)
		if (dt->imgs[p->img0 + k].addr == r->start)
			r->func = dt->imgs[p->img0 + k].func;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int dyntext_load_bpf(struct dyntext *dt, const char *capture_dir,
		     struct textstore *ts, char *err, size_t errlen)
{
	char path[4096], e1[512];
	char **names = NULL;
	size_t nnames = 0, namecap = 0, first_range = dt ? dt->nranges : 0;
	size_t first_prog = dt ? dt->nprogs : 0;
	struct textstore *own = NULL;
	struct dirent *de;
	int rc = 0, first = 0;
	DIR *d;

	if (!dt || !capture_dir)
		return PTD_ERR_INVAL;
	snprintf(path, sizeof(path), "%s/bpf", capture_dir);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 5 || strcmp(de->d_name + n - 4, ".tsv"))
			continue;
		if (util_grow((void **)&names, &namecap, nnames + 1, sizeof(*names)) ||
		    !(names[nnames] = strdup(de->d_name))) {
			first = PTD_ERR_NOMEM;
			util_errf(err, errlen, "%s: out of memory", path);
			break;
		}
		nnames++;
	}
	if (d)
		closedir(d);
	/* sorted: the same capture gives the same first error */
	if (nnames)
		sort(names, nnames, sizeof(*names), cmp_name);
	for (size_t i = 0; i < nnames; i++) {
		snprintf(path, sizeof(path), "%s/bpf/%s", capture_dir, names[i]);
		rc = dyntext_load_bpf_tsv(dt, path, e1, sizeof(e1));
		if (rc && !first) {
			first = rc;
			util_errf(err, errlen, "%s", e1);
		}
	}
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);

	/* time windows and KSYMBOL names from the text store index */
	if (!ts) {
		snprintf(path, sizeof(path), "%s/text", capture_dir);
		rc = textstore_open(path, &own, e1, sizeof(e1));
		if (rc && !first) {
			first = rc;
			util_errf(err, errlen, "%s", e1);
		}
		ts = own;
	}
	for (size_t i = 0; ts && i < textstore_count(ts); i++) {
		const struct textstore_entry *e = textstore_get(ts, i);
		struct dt_prog *p;
		struct dt_range *r;

		if (strcmp(e->kind, "bpf") && strcmp(e->kind, "bpf-subprog"))
			continue;
		if (!(r = new_range(dt)) || (r->name = pool_add(dt, e->name)) == NOSTR) {
			textstore_close(own);
			return PTD_ERR_NOMEM;
		}
		r->kind = DYNTEXT_BPF;
		r->pid = e->pid;
		r->start = e->start;
		r->len = e->len;
		r->from = e->valid_from;
		r->to = e->valid_to;
		r->prog_id = e->prog_id;
		if (e->prog_id && (p = find_prog(dt, e->prog_id)))
			bpf_range_prog(dt, r, p);
		range_done(dt, r);
	}
	textstore_close(own);

	/* images the index does not know: valid all the time */
	for (size_t i = first_prog; i < dt->nprogs; i++) {
		const struct dt_prog *p = &dt->progs[i];

		for (size_t k = 0; k < p->nimg; k++) {
			const struct dt_img *im = &dt->imgs[p->img0 + k];
			struct dt_range *r;
			char name[300];
			size_t j;

			for (j = first_range; j < dt->nranges; j++)
				if (dt->ranges[j].kind == DYNTEXT_BPF &&
				    dt->ranges[j].prog_id == p->id &&
				    dt->ranges[j].start == im->addr)
					break;
			if (j < dt->nranges)
				continue;
			if (k == 0)
				snprintf(name, sizeof(name), "bpf_prog_%s_%s", p->tag,
					 dt->pool + p->name);
			else
				snprintf(name, sizeof(name), "%s", im->func != NOSTR ?
					 dt->pool + im->func : "bpf_subprog");
			if (!(r = new_range(dt)) || (r->name = pool_add(dt, name)) == NOSTR)
				return PTD_ERR_NOMEM;
			r->kind = DYNTEXT_BPF;
			r->pid = IMGSTORE_KERNEL;
			r->start = im->addr;
			r->len = im->len;
			r->from = 0;
			bpf_range_prog(dt, r, p);
			range_done(dt, r);
		}
	}
	return first;
}

/* ---- lookups ------------------------------------------------------------ */

static int cmp_range(const void *a, const void *b)
{
	const struct dt_range *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->from < y->from ? -1 : x->from > y->from;
}

static int same_range(const struct dyntext *dt, const struct dt_range *a,
		      const struct dt_range *b)
{
	return a->kind == b->kind && a->start == b->start && a->len == b->len &&
	       a->from == b->from && a->to == b->to && a->prog_id == b->prog_id &&
	       !strcmp(dt->pool + a->name, dt->pool + b->name);
}

/* Prefers code with bytes (BPF, jitdump) over perf-map names, then the
 * latest start of validity. */
static int better(const struct dt_range *a, const struct dt_range *b)
{
	int pa = a->kind != DYNTEXT_PERFMAP, pb = b->kind != DYNTEXT_PERFMAP;

	if (pa != pb)
		return pa > pb;
	return a->from > b->from;
}

static int find_in(struct dyntext *dt, int32_t pid, uint64_t addr,
		   uint64_t t, const struct dt_range **out)
{
	const struct dt_range *best = NULL, *r;
	size_t lo = 0, hi = dt->nranges;
	int ambiguous = 0;

	/* last range with (pid, start) <= (pid, addr) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		r = &dt->ranges[mid];
		if (r->pid < pid || (r->pid == pid && r->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		r = &dt->ranges[i];
		if (r->pid != pid || addr - r->start >= dt->maxlen)
			break;
		if (addr - r->start >= r->len)
			continue;
		if (t == IMGSTORE_TIME_UNKNOWN) {
			if (best && !same_range(dt, best, r))
				ambiguous = 1;
			if (!best || better(r, best))
				best = r;
			continue;
		}
		if (t < r->from || t >= r->to)
			continue;
		if (!best || better(r, best))
			best = r;
	}
	*out = best;
	if (!best)
		return PTD_ERR_NO_IMAGE;
	return ambiguous ? IMGSTORE_AMBIGUOUS : 0;
}

static int find(struct dyntext *dt, int32_t pid, uint64_t addr, uint64_t t,
		const struct dt_range **out)
{
	int rc;

	*out = NULL;
	if (!dt)
		return PTD_ERR_INVAL;
	if (!dt->sorted) {
		sort(dt->ranges, dt->nranges, sizeof(*dt->ranges), cmp_range);
		dt->sorted = 1;
	}
	rc = find_in(dt, pid, addr, t, out);
	/* kernel code (BPF) is in every address space */
	if (rc == PTD_ERR_NO_IMAGE && pid != IMGSTORE_KERNEL)
		rc = find_in(dt, IMGSTORE_KERNEL, addr, t, out);
	return rc;
}

int dyntext_symbol(struct dyntext *dt, int32_t pid, uint64_t addr,
		   uint64_t time, struct dyntext_sym *out)
{
	const struct dt_range *r;
	int rc = find(dt, pid, addr, time, &r);

	if (rc || !out)
		return rc;
	memset(out, 0, sizeof(*out));
	out->kind = r->kind;
	out->name = str(dt, r->name);
	out->func = str(dt, r->func);
	out->start = r->start;
	out->len = r->len;
	out->valid_from = r->from;
	out->valid_to = r->to;
	out->prog_id = r->prog_id;
	out->code_index = r->code_index;
	return 0;
}

int dyntext_line(struct dyntext *dt, int32_t pid, uint64_t addr,
		 uint64_t time, struct dyntext_line *out)
{
	const struct dt_range *r;
	const struct dt_line *l = NULL;
	size_t lo, hi;
	int rc = find(dt, pid, addr, time, &r);

	if (rc)
		return rc;
	/* greatest record address <= addr, and inside this range's image */
	lo = r->line0;
	hi = r->line0 + r->nline;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dt->lines[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > r->line0)
		l = &dt->lines[lo - 1];
	if (!l || l->addr < r->start)
		return PTD_ERR_NO_IMAGE;
	if (out) {
		out->file = str(dt, l->file);
		out->line = l->line;
		out->col = l->col;
		out->text = str(dt, l->text);
		out->addr = l->addr;
	}
	return 0;
}

int dyntext_srcline(struct dyntext *dt, int32_t pid, uint64_t addr,
		    uint64_t time, char *file, size_t len, unsigned int *line)
{
	struct dyntext_line l;
	int rc = dyntext_line(dt, pid, addr, time, &l);

	if (rc)
		return rc;
	if (!l.line)
		return PTD_ERR_NO_IMAGE;
	if (file && len)
		snprintf(file, len, "%s", l.file ? l.file : "");
	if (line)
		*line = l.line;
	return 0;
}

int dyntext_bpf_srcline(struct dyntext *dt, uint64_t addr, uint64_t time,
			char *file, size_t len, unsigned int *line)
{
	return dyntext_srcline(dt, IMGSTORE_KERNEL, addr, time, file, len, line);
}

/* ---- jitdump ------------------------------------------------------------ */

#define JIT_LOAD_FIXED (PD_JIT_RECORD_PREFIX + 40)     /* pid tid vma addr size index */
#define JIT_MOVE_FIXED (PD_JIT_RECORD_PREFIX + 48)
#define JIT_DEBUG_FIXED (PD_JIT_RECORD_PREFIX + 16)
#define JIT_DEBUG_ENTRY_MIN 17               /* addr, line, discrim, "" */
#define JIT_UNWIND_FIXED (PD_JIT_RECORD_PREFIX + 24)

/* One code load (or moved copy) while a dump is read. */
struct jload {
	int32_t pid;
	uint64_t addr, size, index, from, to;
	uint64_t seq;            /* file order, breaks timestamp ties */
	const uint8_t *code;     /* into the mapped file */
	size_t name;
	size_t line0, nline;
};

struct jctx {
	struct dyntext *dt;
	const struct dyntext_jit_opts *o;
	int tsc;
	struct jload *ld;
	size_t n, cap;
	/* the last debug record, waiting for its code load */
	int dbg_pending;
	uint64_t dbg_addr;
	size_t dbg_line0, dbg_nline;
};

static uint64_t jit_time(const struct jctx *c, uint64_t ts)
{
	if (c->o->convert)
		return c->o->convert(c->o->ctx, ts, c->tsc);
	if (c->tsc) {
		uint64_t sh = c->o->time_shift, q = ts >> sh;
		uint64_t rem = ts & ((1ull << sh) - 1);

		return c->o->time_zero + q * c->o->time_mult +
		       ((rem * c->o->time_mult) >> sh);
	}
	return ts + (uint64_t)c->o->mono_offset;
}

static int jit_fail(char *err, size_t errlen, const char *path, uint64_t off,
		    int rc, const char *what)
{
	util_errf(err, errlen, "%s: record at offset %" PRIu64 ": %s", path, off, what);
	return rc;
}

static struct jload *new_load(struct jctx *c)
{
	struct jload *l;

	if (util_grow((void **)&c->ld, &c->cap, c->n + 1, sizeof(*c->ld)))
		return NULL;
	l = &c->ld[c->n];
	memset(l, 0, sizeof(*l));
	l->seq = c->n++;
	l->to = IMGSTORE_FOREVER;
	l->name = NOSTR;
	return l;
}

static int rec_load(struct jctx *c, const uint8_t *r, uint32_t size,
		    const char *path, uint64_t off, char *err, size_t errlen)
{
	const uint8_t *nul;
	struct jload *l;
	uint64_t addr, csize, namelen;

	if (size < JIT_LOAD_FIXED + 1)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_LOAD shorter than its fixed fields");
	addr = util_le64(r + 32);
	csize = util_le64(r + 40);
	nul = memchr(r + JIT_LOAD_FIXED, 0, size - JIT_LOAD_FIXED);
	if (!nul)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_LOAD name is not NUL-terminated inside the record");
	namelen = (uint64_t)(nul - (r + JIT_LOAD_FIXED)) + 1;
	if (csize > size - JIT_LOAD_FIXED - namelen)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_LOAD code_size exceeds the record");
	if (addr + csize < addr)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_LOAD code range wraps around");
	if (!(l = new_load(c)))
		return PTD_ERR_NOMEM;
	l->pid = (int32_t)util_le32(r + 16);
	l->addr = addr;
	l->size = csize;
	l->index = util_le64(r + 48);
	l->from = jit_time(c, util_le64(r + 8));
	l->code = r + JIT_LOAD_FIXED + namelen;
	l->name = pool_add(c->dt, (const char *)(r + JIT_LOAD_FIXED));
	if (l->name == NOSTR)
		return PTD_ERR_NOMEM;
	l->line0 = c->dt->nlines;
	if (c->dbg_pending && c->dbg_addr == addr) {
		l->line0 = c->dbg_line0;
		l->nline = c->dbg_nline;
	}
	c->dbg_pending = 0;
	return 0;
}

static int rec_move(struct jctx *c, const uint8_t *r, uint32_t size,
		    const char *path, uint64_t off, char *err, size_t errlen)
{
	int32_t pid;
	uint64_t old, new, csize, index, t;
	size_t si = SIZE_MAX;
	struct jload *src, *l;

	if (size < JIT_MOVE_FIXED)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_MOVE shorter than its fixed fields");
	pid = (int32_t)util_le32(r + 16);
	old = util_le64(r + 32);
	new = util_le64(r + 40);
	csize = util_le64(r + 48);
	index = util_le64(r + 56);
	t = jit_time(c, util_le64(r + 8));
	for (size_t i = c->n; i-- > 0;)
		if (c->ld[i].pid == pid && c->ld[i].index == index &&
		    c->ld[i].addr == old) {
			si = i;
			break;
		}
	if (si == SIZE_MAX || csize != c->ld[si].size)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_MOVE of code that no earlier load (same pid, "
				"code_index, address and size) gave");
	if (new + csize < new)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_MOVE target range wraps around");
	src = &c->ld[si];
	if (t < src->to)
		src->to = t < src->from ? src->from : t;
	if (!(l = new_load(c)))
		return PTD_ERR_NOMEM;
	src = &c->ld[si]; /* c->ld may have moved */
	l->pid = pid;
	l->addr = new;
	l->size = csize;
	l->index = index;
	l->from = t;
	l->code = src->code;
	l->name = src->name;
	/* debug entries name old addresses: they do not move along */
	l->line0 = c->dt->nlines;
	return 0;
}

static int rec_debug(struct jctx *c, const uint8_t *r, uint32_t size,
		     const char *path, uint64_t off, char *err, size_t errlen)
{
	uint64_t nr, pos = JIT_DEBUG_FIXED;
	size_t prev_file = NOSTR, line0 = c->dt->nlines;

	if (size < JIT_DEBUG_FIXED)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_DEBUG_INFO shorter than its fixed fields");
	nr = util_le64(r + 24);
	if (nr > (size - JIT_DEBUG_FIXED) / JIT_DEBUG_ENTRY_MIN)
		return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				"JIT_CODE_DEBUG_INFO nr_entry does not fit in the record");
	for (uint64_t i = 0; i < nr; i++) {
		const uint8_t *e = r + pos, *nul;
		struct dt_line *l;
		size_t file;

		if (size - pos < JIT_DEBUG_ENTRY_MIN)
			return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
					"JIT_CODE_DEBUG_INFO entries exceed the record");
		nul = memchr(e + 16, 0, size - pos - 16);
		if (!nul)
			return jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
					"JIT_CODE_DEBUG_INFO file name is not NUL-terminated");
		/* names are taken literally (as perf 6.1 does); runs of one
		 * name share one copy */
		if (prev_file != NOSTR && !strcmp(c->dt->pool + prev_file, (const char *)(e + 16)))
			file = prev_file;
		else if ((file = pool_add(c->dt, (const char *)(e + 16))) == NOSTR)
			return PTD_ERR_NOMEM;
		if (!(l = new_line(c->dt)))
			return PTD_ERR_NOMEM;
		l->addr = util_le64(e);
		l->line = util_le32(e + 8);
		l->file = prev_file = file;
		pos = (uint64_t)(nul + 1 - r);
	}
	/* (no entries: the array may still be NULL, and NULL + 0 is UB) */
	if (c->dt->nlines > line0)
		sort(c->dt->lines + line0, c->dt->nlines - line0, sizeof(*c->dt->lines),
		     cmp_line);
	c->dbg_pending = 1;
	c->dbg_addr = util_le64(r + 16);
	c->dbg_line0 = line0;
	c->dbg_nline = c->dt->nlines - line0;
	return 0;
}

static int cmp_load(const void *a, const void *b)
{
	const struct jload *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* y replaces x's code from y's time on: y is later and overlaps x. */
static void maybe_end(struct jload *x, const struct jload *y)
{
	if (x == y || x->pid != y->pid || !x->size || !y->size)
		return;
	if (!(y->addr < x->addr + x->size && x->addr < y->addr + y->size))
		return;
	if (y->from < x->from || (y->from == x->from && y->seq < x->seq))
		return;
	if (y->from < x->to)
		x->to = y->from;
}

/* Ends every load at the first later load that overlaps it, then hands
 * the loads to the image store, the symbol table and dt. */
static int jit_commit(struct jctx *c, struct imgstore *st, struct symtab *syms)
{
	uint64_t maxsize = 0;

	if (!c->n)
		return 0;
	sort(c->ld, c->n, sizeof(*c->ld), cmp_load);
	for (size_t i = 0; i < c->n; i++)
		if (c->ld[i].size > maxsize)
			maxsize = c->ld[i].size;
	for (size_t i = 0; i < c->n; i++) {
		struct jload *x = &c->ld[i];

		for (size_t j = i + 1; j < c->n && c->ld[j].pid == x->pid &&
		     c->ld[j].addr < x->addr + x->size; j++)
			maybe_end(x, &c->ld[j]);
		for (size_t j = i; j-- > 0 && c->ld[j].pid == x->pid &&
		     x->addr - c->ld[j].addr < maxsize;)
			maybe_end(x, &c->ld[j]);
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct jload *l = &c->ld[i];
		const char *name = c->dt->pool + l->name;
		struct dt_range *r;
		int rc;

		if (!l->size)
			continue;
		if (st) {
			rc = imgstore_add_copy(st, l->pid, l->addr, l->size, l->code,
					       l->from, l->to, name);
			if (rc < 0)
				return rc;
		}
		if (syms && (rc = symtab_add(syms, name, l->addr, l->size)) < 0)
			return rc;
		if (!(r = new_range(c->dt)))
			return PTD_ERR_NOMEM;
		r->kind = DYNTEXT_JIT;
		r->pid = l->pid;
		r->start = l->addr;
		r->len = l->size;
		r->from = l->from;
		r->to = l->to;
		r->code_index = l->index;
		r->name = l->name;
		r->line0 = l->line0;
		r->nline = l->nline;
		range_done(c->dt, r);
	}
	return 0;
}

int dyntext_load_jitdump(struct dyntext *dt, const char *path,
			 struct imgstore *st, struct symtab *syms,
			 const struct dyntext_jit_opts *opts,
			 char *err, size_t errlen)
{
	struct dyntext_jit_opts o;
	struct jctx c = { 0 };
	struct util_map m;
	uint64_t off, flags;
	uint32_t magic, hsize;
	size_t nloads = 0;
	int rc, crc;

	if (!dt || !path)
		return PTD_ERR_INVAL;
	c.dt = dt;
	/* a caller's older, shorter struct leaves the newer fields zero */
	memset(&o, 0, sizeof(o));
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	o.sz = sizeof(o);
	c.o = &o;
	rc = util_map_file(path, &m, err, errlen);
	if (rc)
		return rc;
	if (m.size < PD_JITHEADER_SIZE) {
		util_errf(err, errlen, "%s: %zu bytes, shorter than a jitdump header (%d)",
			  path, m.size, PD_JITHEADER_SIZE);
		rc = m.size >= 4 && util_le32(m.data) == PD_JITHEADER_MAGIC ?
		     PTD_ERR_TRUNCATED : PTD_ERR_FORMAT;
		goto out;
	}
	magic = util_le32(m.data);
	hsize = util_le32(m.data + 8);
	flags = util_le64(m.data + 32);
	if (magic == PD_JITHEADER_MAGIC_SW) {
		util_errf(err, errlen, "%s: jitdump of the other byte order: not supported", path);
		rc = PTD_ERR_UNSUPPORTED;
		goto out;
	}
	if (magic != PD_JITHEADER_MAGIC) {
		util_errf(err, errlen, "%s: not a jitdump file (magic %#x, want %#x \"JiTD\")",
			  path, magic, PD_JITHEADER_MAGIC);
		rc = PTD_ERR_FORMAT;
		goto out;
	}
	if (util_le32(m.data + 4) != 1) {
		util_errf(err, errlen, "%s: jitdump version %u; only version 1 is known",
			  path, util_le32(m.data + 4));
		rc = PTD_ERR_UNSUPPORTED;
		goto out;
	}
	if (hsize < PD_JITHEADER_SIZE || hsize > m.size) {
		util_errf(err, errlen, "%s: header total_size %u is outside [%d, file size %zu]",
			  path, hsize, PD_JITHEADER_SIZE, m.size);
		rc = hsize < PD_JITHEADER_SIZE ? PTD_ERR_CORRUPT : PTD_ERR_TRUNCATED;
		goto out;
	}
	if (flags & ~PD_JITDUMP_FLAGS_ARCH_TIMESTAMP) {
		util_errf(err, errlen, "%s: unknown header flags %#" PRIx64, path, flags);
		rc = PTD_ERR_UNSUPPORTED;
		goto out;
	}
	c.tsc = (flags & PD_JITDUMP_FLAGS_ARCH_TIMESTAMP) != 0;
	if (c.tsc && !c.o->have_tsc && !c.o->convert) {
		util_errf(err, errlen, "%s: timestamps are TSC values "
			  "(JITDUMP_FLAGS_ARCH_TIMESTAMP) and no TSC conversion was given",
			  path);
		rc = PTD_ERR_UNSUPPORTED;
		goto out;
	}
	for (off = hsize; off < m.size;) {
		const uint8_t *r = m.data + off;
		uint32_t id, size;

		if (m.size - off < PD_JIT_RECORD_PREFIX) {
			rc = jit_fail(err, errlen, path, off, PTD_ERR_TRUNCATED,
				      "file ends inside the record prefix");
			break;
		}
		id = util_le32(r);
		size = util_le32(r + 4);
		if (size < PD_JIT_RECORD_PREFIX) {
			rc = jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
				      "total_size is smaller than the record prefix");
			break;
		}
		if (size > m.size - off) {
			rc = jit_fail(err, errlen, path, off, PTD_ERR_TRUNCATED,
				      "file ends inside the record (total_size beyond the end)");
			break;
		}
		if (id == PD_JIT_CODE_LOAD) {
			rc = rec_load(&c, r, size, path, off, err, errlen);
			nloads += rc == 0;
		} else if (id == PD_JIT_CODE_MOVE) {
			rc = rec_move(&c, r, size, path, off, err, errlen);
		} else if (id == PD_JIT_CODE_DEBUG_INFO) {
			rc = rec_debug(&c, r, size, path, off, err, errlen);
		} else if (id == PD_JIT_CODE_UNWINDING_INFO) {
			uint64_t usize = size >= JIT_UNWIND_FIXED ? util_le64(r + 16) : 0;

			if (size < JIT_UNWIND_FIXED || usize > size - JIT_UNWIND_FIXED)
				rc = jit_fail(err, errlen, path, off, PTD_ERR_CORRUPT,
					      "JIT_CODE_UNWINDING_INFO sizes exceed the record");
		} else if (id == PD_JIT_CODE_CLOSE) {
			break;
		}
		if (rc)
			break;
		off += size;
	}
	if (rc == PTD_ERR_NOMEM)
		util_errf(err, errlen, "%s: out of memory", path);
	crc = jit_commit(&c, st, syms);
	if (crc && !rc) {
		rc = crc;
		util_errf(err, errlen, "%s: %s", path, crc == PTD_ERR_NOMEM ?
			  "out of memory" : "a code load has an invalid range");
	}
out:
	free(c.ld);
	util_unmap(&m);
	return rc ? rc : (int)(nloads > INT32_MAX ? INT32_MAX : nloads);
}

/* ---- perf-PID.map ------------------------------------------------------- */

static int covered_by_jit(struct dyntext *dt, int32_t pid, uint64_t start,
			  uint64_t len)
{
	for (size_t i = 0; i < dt->nranges; i++) {
		const struct dt_range *r = &dt->ranges[i];

		if (r->kind == DYNTEXT_JIT && r->pid == pid && start >= r->start &&
		    start - r->start < r->len && len <= r->len - (start - r->start))
			return 1;
	}
	return 0;
}

static int known_perfmap(struct dyntext *dt, int32_t pid, uint64_t start,
			 uint64_t len, const char *name)
{
	for (size_t i = 0; i < dt->nranges; i++) {
		const struct dt_range *r = &dt->ranges[i];

		if (r->kind == DYNTEXT_PERFMAP && r->pid == pid && r->start == start &&
		    r->len == len && !strcmp(dt->pool + r->name, name))
			return 1;
	}
	return 0;
}

static int pid_from_name(const char *path, int32_t *pid)
{
	const char *b = strrchr(path, '/');
	int n = 0;
	long v;

	b = b ? b + 1 : path;
	if (sscanf(b, "perf-%ld.map%n", &v, &n) != 1 || b[n] || v < 0 || v > INT32_MAX)
		return -1;
	*pid = (int32_t)v;
	return 0;
}

int dyntext_load_perfmap(struct dyntext *dt, const char *path, int32_t pid,
			 struct imgstore *st, struct symtab *syms,
			 char *err, size_t errlen)
{
	static const char reason[] = "perf-PID.map gives names but no code bytes: "
				     "capture the code (jitdump) to decode it";
	struct util_map m;
	size_t lno = 0, count = 0;
	const char *p, *end;
	int rc = 0;

	if (!dt || !path)
		return PTD_ERR_INVAL;
	if (pid < 0 && pid_from_name(path, &pid)) {
		util_errf(err, errlen, "%s: no pid given and the file name is not "
			  "perf-PID.map", path);
		return PTD_ERR_INVAL;
	}
	rc = util_map_file(path, &m, err, errlen);
	if (rc)
		return rc;
	for (p = (const char *)m.data, end = p + m.size; p < end && !rc;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[1024], *q, *e2;
		uint64_t start, len;
		struct dt_range *r;

		const char *ls = p;

		lno++;
		p += n + (nl != NULL);
		if (n >= sizeof(line)) {
			util_errf(err, errlen, "%s:%zu: line longer than %zu bytes", path, lno,
				  sizeof(line) - 1);
			rc = PTD_ERR_FORMAT;
			break;
		}
		memcpy(line, ls, n);
		line[n] = 0;
		while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
			line[--n] = 0;
		if (!n)
			continue;
		if (memchr(line, 0, n)) {
			util_errf(err, errlen, "%s:%zu: NUL byte in a text file", path, lno);
			rc = PTD_ERR_FORMAT;
			break;
		}
		errno = 0;
		start = strtoull(line, &q, 16);
		if (errno || q == line || *q != ' ' || line[0] == '-' || line[0] == ' ') {
			util_errf(err, errlen, "%s:%zu: want \"START SIZE NAME\" (hex)", path, lno);
			rc = PTD_ERR_FORMAT;
			break;
		}
		while (*q == ' ')
			q++;
		len = strtoull(q, &e2, 16);
		if (errno || e2 == q || *e2 != ' ' || *q == '-') {
			util_errf(err, errlen, "%s:%zu: want \"START SIZE NAME\" (hex)", path, lno);
			rc = PTD_ERR_FORMAT;
			break;
		}
		while (*e2 == ' ')
			e2++;
		if (!*e2 || start + len < start) {
			util_errf(err, errlen, "%s:%zu: %s", path, lno, !*e2 ? "no name" :
				  "range wraps around");
			rc = PTD_ERR_FORMAT;
			break;
		}
		count++;
		if (syms && (rc = symtab_add(syms, e2, start, len)) < 0)
			break;
		if (!len || known_perfmap(dt, pid, start, len, e2))
			continue;
		if (st && !covered_by_jit(dt, pid, start, len)) {
			rc = imgstore_add_missing(st, pid, start, len, 0, IMGSTORE_FOREVER,
						  e2, reason);
			if (rc < 0)
				break;
			rc = 0;
		}
		if (!(r = new_range(dt)) || (r->name = pool_add(dt, e2)) == NOSTR) {
			rc = PTD_ERR_NOMEM;
			break;
		}
		r->kind = DYNTEXT_PERFMAP;
		r->pid = pid;
		r->start = start;
		r->len = len;
		r->line0 = dt->nlines;
		range_done(dt, r);
	}
	util_unmap(&m);
	if (rc == PTD_ERR_NOMEM)
		util_errf(err, errlen, "%s: out of memory", path);
	return rc < 0 ? rc : (int)(count > INT32_MAX ? INT32_MAX : count);
}
