/* SPDX-License-Identifier: MIT */
#include "coverage.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One distinct block shape: where it starts, which code version, how many
 * instructions ran; its instruction addresses are kept once. */
struct cov_ent {
	uint64_t ip;
	uint32_t image, ninsn;
	int32_t pid;
	uint64_t count;
	size_t first;          /* index of its addresses in c->addrs */
	struct cov_ent *next;
};

#define COV_BITS 16

struct coverage {
	struct cov_ent *table[1u << COV_BITS];
	struct cov_ent **all;
	size_t nall, acap;
	uint64_t *addrs;
	size_t naddrs, xcap;
};

struct coverage *coverage_new(void)
{
	return calloc(1, sizeof(struct coverage));
}

void coverage_free(struct coverage *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nall; i++)
		free(c->all[i]);
	free(c->all);
	free(c->addrs);
	free(c);
}

int coverage_add(struct coverage *c, const struct ptd_session *s,
		 const struct ptd_block *blocks, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ptd_block *b = &blocks[i];
		struct ptd_block_info info;
		struct cov_ent *e;
		size_t h;

		if (ptd_block_info(s, b, &info))
			continue;
		h = (size_t)(((info.ip ^ ((uint64_t)info.image << 32) ^ b->ninsn) *
			      0x9e3779b97f4a7c15ull) >> (64 - COV_BITS));
		for (e = c->table[h]; e; e = e->next)
			if (e->ip == info.ip && e->image == info.image &&
			    e->ninsn == b->ninsn && e->pid == info.pid)
				break;
		if (!e) {
			if (!(e = calloc(1, sizeof(*e))) ||
			    util_grow((void **)&c->all, &c->acap, c->nall + 1, sizeof(*c->all)) ||
			    util_grow((void **)&c->addrs, &c->xcap, c->naddrs + b->ninsn,
				 sizeof(*c->addrs))) {
				free(e);
				return -1;
			}
			e->ip = info.ip;
			e->image = info.image;
			e->ninsn = b->ninsn;
			e->pid = info.pid;
			e->first = c->naddrs;
			for (uint32_t k = 0; k < b->ninsn; k++) {
				struct ptd_event ev;

				c->addrs[c->naddrs++] =
					ptd_block_insn(s, b, k, &ev) ? info.ip : ev.ip;
			}
			e->next = c->table[h];
			c->table[h] = e;
			c->all[c->nall++] = e;
		}
		e->count++;
	}
	return 0;
}

struct cov_line {
	uint64_t ip;
	int32_t pid;
	uint64_t count;
};

static int line_cmp(const void *a, const void *b)
{
	const struct cov_line *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

void coverage_print(struct coverage *c, struct ptd_session *s, FILE *out, int json)
{
	struct cov_line *l = malloc((c->naddrs ? c->naddrs : 1) * sizeof(*l));
	size_t n = 0;

	if (!l) {
		fputs("ptdecode: out of memory for the coverage table\n", stderr);
		return;
	}
	for (size_t i = 0; i < c->nall; i++)
		for (uint32_t k = 0; k < c->all[i]->ninsn; k++) {
			l[n].ip = c->addrs[c->all[i]->first + k];
			l[n].pid = c->all[i]->pid;
			l[n++].count = c->all[i]->count;
		}
	util_sort(l, n, sizeof(*l), line_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		uint64_t cnt = l[i].count, off = 0;
		char sym[256] = "";

		while (j < n && l[j].ip == l[i].ip && l[j].pid == l[i].pid)
			cnt += l[j++].count;
		if (ptd_symbolize(s, l[i].pid, l[i].ip, sym, sizeof(sym), &off) == 0 && off) {
			size_t m = strlen(sym);

			snprintf(sym + m, sizeof(sym) - m, "+%#" PRIx64, off);
		}
		if (json)
			fprintf(out, "{\"type\":\"coverage\",\"ip\":\"%#" PRIx64 "\",\"count\":%"
				PRIu64 ",\"pid\":%d,\"sym\":\"%s\"}\n", l[i].ip, cnt,
				l[i].pid, sym);
		else
			fprintf(out, "%#" PRIx64 " %" PRIu64 " %s\n", l[i].ip, cnt,
				sym[0] ? sym : "??");
		i = j;
	}
	free(l);
}
