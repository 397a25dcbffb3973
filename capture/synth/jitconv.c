/* SPDX-License-Identifier: MIT */
/* jitconv - jitdump timestamps on ptsynth's simulated clock (jitconv.h). */
#include "jitconv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_abi.h"
#include "ptdecode.h"
#include "util.h"

struct pair {
	uint64_t mono, perf;
};

/* One distinct instruction executed in dynamic code, and when. */
struct exec {
	int32_t pid;
	uint8_t len;
	uint8_t code[16];
	uint64_t ip;
	uint64_t lo, hi;     /* earliest and latest lookup time */
	uint64_t count;
};

struct load {
	int32_t pid;
	uint64_t addr, size, from, to, seq;
	uint8_t *code;
	char name[64];
};

struct jitconv {
	struct pair *p;
	size_t np, pcap;
	struct exec *ex;
	size_t nex, excap;
	size_t *hash;            /* index + 1 into ex, open addressing */
	size_t hcap;
	struct load *ld;
	size_t nld, ldcap;
	size_t moves, truncated, outside;
};

struct jitconv *jitconv_new(void)
{
	return calloc(1, sizeof(struct jitconv));
}

void jitconv_free(struct jitconv *jc)
{
	if (!jc)
		return;
	for (size_t i = 0; i < jc->nld; i++)
		free(jc->ld[i].code);
	free(jc->ld);
	free(jc->p);
	free(jc->ex);
	free(jc->hash);
	free(jc);
}

int jitconv_pair(struct jitconv *jc, uint64_t mono, uint64_t perf)
{
	if (jc->np && (mono <= jc->p[jc->np - 1].mono || perf <= jc->p[jc->np - 1].perf))
		return 0;
	if (util_grow((void **)&jc->p, &jc->pcap, jc->np + 1, sizeof(*jc->p)))
		return PTD_ERR_NOMEM;
	jc->p[jc->np].mono = mono;
	jc->p[jc->np].perf = perf;
	jc->np++;
	return 0;
}

uint64_t jitconv_mono_to_perf(struct jitconv *jc, uint64_t mono)
{
	size_t lo = 0, hi;
	const struct pair *a, *b;

	if (!jc->np)
		return 0;
	if (mono < jc->p[0].mono || mono > jc->p[jc->np - 1].mono) {
		jc->outside++;
		return mono < jc->p[0].mono ? jc->p[0].perf : jc->p[jc->np - 1].perf;
	}
	/* the last pair at or before mono */
	hi = jc->np;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (jc->p[mid].mono <= mono)
			lo = mid;
		else
			hi = mid;
	}
	a = &jc->p[lo];
	if (lo + 1 == jc->np)
		return a->perf;
	b = &jc->p[lo + 1];
	return a->perf + (uint64_t)((unsigned __int128)(mono - a->mono) *
				    (b->perf - a->perf) / (b->mono - a->mono));
}

static size_t exec_hash(int32_t pid, uint64_t ip, const uint8_t *code, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ (uint32_t)pid;

	h = (h ^ ip) * 1099511628211ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ code[i]) * 1099511628211ull;
	return (size_t)(h ^ h >> 29);
}

static int exec_same(const struct exec *e, int32_t pid, uint64_t ip,
		     const uint8_t *code, size_t len)
{
	return e->pid == pid && e->ip == ip && e->len == len && !memcmp(e->code, code, len);
}

int jitconv_exec(struct jitconv *jc, int32_t pid, uint64_t ip,
		 const uint8_t *code, size_t len, uint64_t t_lo, uint64_t t_hi)
{
	size_t i, mask;
	struct exec *e;

	if (len > 16)
		len = 16;
	if ((jc->nex + 1) * 2 > jc->hcap) {
		size_t ncap = jc->hcap ? jc->hcap * 2 : 1024;
		size_t *nh = calloc(ncap, sizeof(*nh));

		if (!nh)
			return PTD_ERR_NOMEM;
		for (size_t k = 0; k < jc->nex; k++) {
			const struct exec *x = &jc->ex[k];
			for (i = exec_hash(x->pid, x->ip, x->code, x->len) & (ncap - 1); nh[i];
			     i = (i + 1) & (ncap - 1))
				;
			nh[i] = k + 1;
		}
		free(jc->hash);
		jc->hash = nh;
		jc->hcap = ncap;
	}
	mask = jc->hcap - 1;
	for (i = exec_hash(pid, ip, code, len) & mask; jc->hash[i]; i = (i + 1) & mask) {
		e = &jc->ex[jc->hash[i] - 1];
		if (exec_same(e, pid, ip, code, len)) {
			if (t_lo < e->lo)
				e->lo = t_lo;
			if (t_hi > e->hi)
				e->hi = t_hi;
			e->count++;
			return 0;
		}
	}
	if (util_grow((void **)&jc->ex, &jc->excap, jc->nex + 1, sizeof(*jc->ex)))
		return PTD_ERR_NOMEM;
	e = &jc->ex[jc->nex];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->ip = ip;
	e->len = (uint8_t)len;
	memcpy(e->code, code, len);
	e->lo = t_lo;
	e->hi = t_hi;
	e->count = 1;
	jc->hash[i] = ++jc->nex;
	return 0;
}

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static int read_all(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	struct util_map m;
	int rc = util_map_file(path, &m, err, errlen);

	if (rc)
		return rc;
	*out = malloc(m.size ? m.size : 1);
	if (!*out) {
		util_unmap(&m);
		return PTD_ERR_NOMEM;
	}
	memcpy(*out, m.data, m.size);
	*len = m.size;
	util_unmap(&m);
	return 0;
}

static int add_load(struct jitconv *jc, const uint8_t *r, uint32_t size, uint64_t t,
		    char *err, size_t errlen, const char *path, size_t off)
{
	const uint8_t *body = r + 16, *nul;
	uint64_t csize;
	struct load *l;

	if (size < 16 + 40 + 1 ||
	    !(nul = memchr(body + 40, 0, size - 16 - 40))) {
		util_errf(err, errlen, "%s: code load at offset %#zx: bad name", path, off);
		return PTD_ERR_CORRUPT;
	}
	csize = rd64(body + 24);
	if (csize > (uint64_t)(r + size - (nul + 1))) {
		util_errf(err, errlen, "%s: code load at offset %#zx: %llu code bytes "
			  "do not fit in the record", path, off, (unsigned long long)csize);
		return PTD_ERR_CORRUPT;
	}
	if (util_grow((void **)&jc->ld, &jc->ldcap, jc->nld + 1, sizeof(*jc->ld)))
		return PTD_ERR_NOMEM;
	l = &jc->ld[jc->nld];
	memset(l, 0, sizeof(*l));
	l->pid = (int32_t)rd32(body);
	l->addr = rd64(body + 16);
	l->size = csize;
	l->from = t;
	l->to = UINT64_MAX;
	l->seq = jc->nld;
	snprintf(l->name, sizeof(l->name), "%s", (const char *)(body + 40));
	l->code = malloc(csize ? csize : 1);
	if (!l->code)
		return PTD_ERR_NOMEM;
	memcpy(l->code, nul + 1, csize);
	jc->nld++;
	return 0;
}

int jitconv_copy_dump(struct jitconv *jc, const char *in, const char *out,
		      char *err, size_t errlen)
{
	uint8_t *d = NULL;
	size_t len = 0, off, end;
	uint32_t hsize;
	int rc, fd, nloads = 0;

	if ((rc = read_all(in, &d, &len, err, errlen)))
		return rc;
	rc = PTD_ERR_FORMAT;
	if (len < PD_JITHEADER_SIZE || rd32(d) != PD_JITHEADER_MAGIC) {
		util_errf(err, errlen, "%s: not a jitdump file of this byte order", in);
		goto out;
	}
	hsize = rd32(d + 8);
	if (hsize < PD_JITHEADER_SIZE || hsize > len) {
		util_errf(err, errlen, "%s: header size %u is bad", in, hsize);
		goto out;
	}
	if (rd64(d + 32) & PD_JITDUMP_FLAGS_ARCH_TIMESTAMP) {
		util_errf(err, errlen, "%s: timestamps are TSC values (ARCH_TIMESTAMP); "
			  "only CLOCK_MONOTONIC dumps can be put on the simulated clock", in);
		rc = PTD_ERR_UNSUPPORTED;
		goto out;
	}
	wr64(d + 24, jitconv_mono_to_perf(jc, rd64(d + 24)));
	for (off = hsize; off < len; off += rd32(d + off + 4)) {
		uint32_t id, size;
		uint64_t t;

		if (len - off < PD_JIT_RECORD_PREFIX ||
		    (size = rd32(d + off + 4)) < PD_JIT_RECORD_PREFIX || size > len - off) {
			jc->truncated++;
			break;            /* cut off: copy the whole records */
		}
		id = rd32(d + off);
		t = jitconv_mono_to_perf(jc, rd64(d + off + 8));
		wr64(d + off + 8, t);
		if (id == PD_JIT_CODE_LOAD) {
			if ((rc = add_load(jc, d + off, size, t, err, errlen, in, off)))
				goto out;
			nloads++;
		} else if (id == PD_JIT_CODE_MOVE) {
			jc->moves++;
		} else if (id == PD_JIT_CODE_CLOSE) {
			off += size;
			break;
		}
	}
	end = off < len ? off : len;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, d, end) != (ssize_t)end) {
		util_errf(err, errlen, "cannot write %s: %s", out, strerror(errno));
		if (fd >= 0)
			close(fd);
		rc = PTD_ERR_IO;
		goto out;
	}
	if (close(fd)) {
		util_errf(err, errlen, "cannot write %s: %s", out, strerror(errno));
		rc = PTD_ERR_IO;
		goto out;
	}
	rc = nloads;
out:
	free(d);
	return rc;
}

static int overlaps(const struct load *l, int32_t pid, uint64_t start, uint64_t len)
{
	return l->pid == pid && l->size && start < l->addr + l->size && l->addr < start + len;
}

int jitconv_covers(const struct jitconv *jc, int32_t pid, uint64_t start, uint64_t len)
{
	for (size_t i = 0; i < jc->nld; i++)
		if (overlaps(&jc->ld[i], pid, start, len))
			return 1;
	return 0;
}

/* As the decoder does: a load is valid from its time until the first later
 * load overlapping it; at a time, the valid one with the latest start. */
static const struct load *chosen(const struct jitconv *jc, int32_t pid, uint64_t ip,
				 uint64_t t)
{
	const struct load *best = NULL;

	for (size_t i = 0; i < jc->nld; i++) {
		const struct load *l = &jc->ld[i];

		if (!overlaps(l, pid, ip, 1) || t < l->from || t >= l->to)
			continue;
		if (!best || l->from > best->from ||
		    (l->from == best->from && l->seq > best->seq))
			best = l;
	}
	return best;
}

static int holds(const struct load *l, const struct exec *e)
{
	return l && e->ip + e->len <= l->addr + l->size &&
	       !memcmp(l->code + (e->ip - l->addr), e->code, e->len);
}

void jitconv_check(struct jitconv *jc, struct jitconv_report *r)
{
	memset(r, 0, sizeof(*r));
	r->min_margin = UINT64_MAX;
	for (size_t i = 0; i < jc->nld; i++) {
		struct load *x = &jc->ld[i];

		for (size_t j = 0; j < jc->nld; j++) {
			const struct load *y = &jc->ld[j];

			if (j == i || !overlaps(y, x->pid, x->addr, x->size) ||
			    y->from < x->from || (y->from == x->from && y->seq < x->seq))
				continue;
			if (y->from < x->to)
				x->to = y->from;
		}
	}
	for (size_t k = 0; k < jc->nex; k++) {
		const struct exec *e = &jc->ex[k];
		const struct load *a = chosen(jc, e->pid, e->ip, e->lo);
		const struct load *b = chosen(jc, e->pid, e->ip, e->hi);
		int ok = holds(a, e) && holds(b, e), any = 0;

		r->insns += e->count;
		/* every load taking over in between must hold these bytes too */
		for (size_t i = 0; i < jc->nld; i++) {
			const struct load *l = &jc->ld[i];
			if (!overlaps(l, e->pid, e->ip, 1))
				continue;
			any = 1;
			if (l->from > e->lo && l->from <= e->hi && !holds(l, e))
				ok = 0;
		}
		if (!any) {
			r->insns_unreported += e->count;
			continue;
		}
		if (ok) {
			r->insns_ok += e->count;
			if (e->lo - a->from < r->min_margin)
				r->min_margin = e->lo - a->from;
			continue;
		}
		r->insns_wrong += e->count;
		if (!r->problem[0])
			snprintf(r->problem, sizeof(r->problem),
				 "instruction at %#llx ran (%llu times) with lookup times "
				 "%llu..%llu, where the decoder would take %s%s%s",
				 (unsigned long long)e->ip, (unsigned long long)e->count,
				 (unsigned long long)e->lo, (unsigned long long)e->hi,
				 a ? "load " : "no load", a ? a->name : "",
				 a && holds(a, e) ? " (right at the start, not at the end)" :
				 a ? " (other bytes)" : "");
	}
	if (r->min_margin == UINT64_MAX)
		r->min_margin = 0;
	r->pairs = jc->np;
	r->loads = jc->nld;
	r->moves = jc->moves;
	r->truncated = jc->truncated;
	r->outside = jc->outside;
}
