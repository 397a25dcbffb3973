/* SPDX-License-Identifier: MIT */
/* linebreak (stage: api/): debugger line ranges and line breakpoints. */
#include "linebreak.h"

#include "imgstore.h"
#include "input.h"
#include "linetab.h"
#include "session.h"
#include "symbols.h"
#include "util.h"
#include "dyntext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ptd_line_range(struct ptd_session *s, int pid, uint64_t addr,
		   struct ptd_line_range *r)
{
	struct imgstore_hit hit;
	struct linetab_sal sal;
	const char *debug;
	uint64_t bias;
	int rc;

	if (!s || !r)
		return PTD_ERR_INVAL;
	memset(r, 0, sizeof(*r));
	if (!s->in || symbols_elf_at(s, pid, addr, &hit, &debug, &bias))
		return PTD_ERR_NO_IMAGE;
	rc = linetab_find(symbols_linetab(s), hit.elf_path, debug, addr - bias,
			  &sal);
	if (rc)
		return rc;
	r->start = sal.start + bias;
	r->end = sal.end ? sal.end + bias : 0;
	r->line = sal.line;
	r->is_stmt = sal.is_stmt;
	if (sal.func_start) {
		r->func_start = sal.func_start + bias;
		r->func_end = sal.func_end + bias;
		r->func_body = sal.func_body + bias;
	}
	snprintf(r->file, sizeof(r->file), "%s", sal.file ? sal.file : "");
	snprintf(r->function, sizeof(r->function), "%s",
		 sal.func_name ? sal.func_name : "");
	return 0;
}

/* Adds buf[0..m) + bias to addrs (up to max; *total counts all) unless
 * there already. */
static void add_addrs(uint64_t *addrs, size_t max, size_t *total,
		      const uint64_t *buf, size_t m, uint64_t bias)
{
	size_t k, j;

	for (k = 0; k < m; k++) {
		uint64_t a = buf[k] + bias;

		for (j = 0; j < *total && j < max && addrs[j] != a; j++)
			;
		if (j < *total && j < max)
			continue;
		if (*total < max)
			addrs[*total] = a;
		(*total)++;
	}
}

/* 1 when an earlier version than the i-th maps the same ELF file with
 * the same bias (its addresses are all found there). */
static int seen_before(struct ptd_session *s, size_t i,
		       const struct imgstore_hit *hit, uint64_t bias)
{
	struct imgstore_hit h;
	size_t k;

	for (k = 0; k < i && imgstore_version_at(s->in->st, k, &h) == 0; k++) {
		const char *debug;
		uint64_t b;

		if (h.pid == hit->pid && h.elf_path &&
		    !strcmp(h.elf_path, hit->elf_path) &&
		    symbols_elf_of(s, &h, &debug, &b) == 0 && b == bias)
			return 1;
	}
	return 0;
}

int ptd_line_addrs(struct ptd_session *s, int pid, const char *file,
		   unsigned int line, uint64_t *addrs, size_t max, size_t *n,
		   unsigned int *found_line)
{
	struct imgstore_hit hit;
	unsigned int best = 0;
	uint64_t buf[64];
	size_t i, total = 0;

	if (!s || !file || !n || !found_line || (max && !addrs))
		return PTD_ERR_INVAL;
	*n = 0;
	*found_line = 0;
	if (!s->in)
		return 0;
	/* The lowest line found in any file: exact before the next one. */
	for (int pass = 0; pass < 2; pass++) {
		unsigned int want = pass ? best : line;

		if (pass && (total || !best))
			break;
		for (i = 0; imgstore_version_at(s->in->st, i, &hit) == 0; i++) {
			const char *debug;
			uint64_t bias;
			unsigned int got, shown;
			size_t m;

			if (hit.pid != pid || !hit.elf_path ||
			    symbols_elf_of(s, &hit, &debug, &bias) ||
			    seen_before(s, i, &hit, bias) ||
			    linetab_addrs(symbols_linetab(s), hit.elf_path, debug,
					  file, want, buf, 64, &m, &got, &shown))
				continue;
			if (got != want) {
				if (got && (!best || got < best))
					best = got;
				continue;
			}
			if (m && !*found_line)
				*found_line = shown;
			add_addrs(addrs, max, &total, buf, m < 64 ? m : 64, bias);
		}
	}
	*n = total;
	return 0;
}

int ptd_func_addrs(struct ptd_session *s, int pid, const char *name,
		   uint64_t *addrs, size_t max, size_t *n)
{
	struct imgstore_hit hit;
	uint64_t buf[16];
	size_t i, total = 0;

	if (!s || !name || !n || (max && !addrs))
		return PTD_ERR_INVAL;
	*n = 0;
	if (!s->in)
		return 0;
	for (i = 0; imgstore_version_at(s->in->st, i, &hit) == 0; i++) {
		const char *debug;
		uint64_t bias;
		size_t m;

		if (hit.pid != pid || !hit.elf_path ||
		    symbols_elf_of(s, &hit, &debug, &bias) ||
		    seen_before(s, i, &hit, bias) ||
		    linetab_func_addrs(symbols_linetab(s), hit.elf_path, debug,
				       name, buf, 16, &m))
			continue;
		add_addrs(addrs, max, &total, buf, m < 16 ? m : 16, bias);
	}
	*n = total;
	return 0;
}

struct spans {
	struct ptd_addr_range *r;
	size_t n, cap;
	uint64_t bias;
};

static int add_span(void *ctx, uint64_t start, uint64_t end)
{
	struct spans *sp = ctx;

	if (util_grow((void **)&sp->r, &sp->cap, sp->n + 1, sizeof(*sp->r)))
		return PTD_ERR_NOMEM;
	sp->r[sp->n].start = start + sp->bias;
	/* an open end (a unit's last row) or one past the address space */
	sp->r[sp->n].end = end == UINT64_MAX || end + sp->bias < start + sp->bias ?
			   UINT64_MAX : end + sp->bias;
	sp->n++;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct ptd_addr_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int linebreak_line_spans(struct ptd_session *s, const char *file,
			 unsigned int line, struct ptd_addr_range **out,
			 size_t *n)
{
	struct spans sp = { 0 };
	struct imgstore_hit hit;
	size_t i, k, m = 0;

	*out = NULL;
	*n = 0;
	if (!s || !file)
		return PTD_ERR_INVAL;
	if (!s->in)
		return 0;
	if (s->in->dt && dyntext_range_count(s->in->dt))
		return PTD_ERR_UNSUPPORTED;
	for (i = 0; imgstore_version_at(s->in->st, i, &hit) == 0; i++) {
		const char *debug;
		int rc, dup = 0;

		if (!hit.elf_path || symbols_elf_of(s, &hit, &debug, &sp.bias))
			continue;
		/* versions of one file at one bias (processes, times): once */
		for (k = 0; k < i && !dup; k++) {
			struct imgstore_hit h;
			const char *d;
			uint64_t b;

			dup = imgstore_version_at(s->in->st, k, &h) == 0 &&
			      h.elf_path && !strcmp(h.elf_path, hit.elf_path) &&
			      symbols_elf_of(s, &h, &d, &b) == 0 && b == sp.bias;
		}
		if (dup)
			continue;
		rc = linetab_line_spans(symbols_linetab(s), hit.elf_path, debug,
					file, line, add_span, &sp);
		/* a file that does not open has no lines for srcline either,
		 * unless its debug file has them */
		if (rc == PTD_ERR_NOMEM || rc == PTD_ERR_UNSUPPORTED ||
		    (rc == PTD_ERR_IO && debug)) {
			if (rc == PTD_ERR_IO)
				rc = PTD_ERR_UNSUPPORTED;
			free(sp.r);
			return rc;
		}
	}
	/* sorted, overlapping and touching ones merged */
	util_sort(sp.r, sp.n, sizeof(*sp.r), range_cmp);
	for (k = 0; k < sp.n; k++) {
		if (m && sp.r[k].start <= sp.r[m - 1].end) {
			if (sp.r[k].end > sp.r[m - 1].end)
				sp.r[m - 1].end = sp.r[k].end;
			continue;
		}
		sp.r[m++] = sp.r[k];
	}
	*out = sp.r;
	*n = m;
	return 0;
}
