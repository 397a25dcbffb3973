/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "walk_kcore.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kcore.h"
#include "synth_opts.h"
#include "util.h"

static int valid_at(const struct textstore_entry *e, uint64_t t)
{
	return e->len && e->pid == -1 && e->valid_from <= t && t < e->valid_to;
}

static int range_cmp(const void *a, const void *b)
{
	const struct kcore_range *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* The rows with bytes valid at t, sorted, identical copies once. */
static size_t copied_ranges(const struct walk_kcore_row *rows, size_t n,
			    uint64_t t, struct kcore_range *r)
{
	size_t k = 0, m = 0;

	for (size_t i = 0; i < n; i++)
		if (rows[i].bytes && valid_at(rows[i].e, t)) {
			r[k].vaddr = rows[i].e->start;
			r[k].bytes = rows[i].bytes;
			r[k++].size = rows[i].e->len;
		}
	util_sort(r, k, sizeof(*r), range_cmp);
	for (size_t i = 0; i < k; i++) {
		if (m && r[i].vaddr < r[m - 1].vaddr + r[m - 1].size) {
			if (r[i].vaddr == r[m - 1].vaddr && r[i].size == r[m - 1].size &&
			    !memcmp(r[i].bytes, r[m - 1].bytes, r[i].size))
				continue;   /* prog info and fence copies agree */
			synth_die("--kcore: two different code rows at %#" PRIx64
				  " are valid at the copy time %" PRIu64, r[i].vaddr, t);
		}
		r[m++] = r[i];
	}
	return m;
}

static FILE *open_in(const char *dir, const char *name, const char *mode)
{
	char path[8192];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fopen(path, mode);
}

/* Row i's symbol was written for an earlier row (another copy of it). */
static int listed_before(const struct walk_kcore_row *rows, size_t i, uint64_t t)
{
	for (size_t j = 0; j < i; j++)
		if (rows[j].bytes && valid_at(rows[j].e, t) &&
		    rows[j].e->start == rows[i].e->start &&
		    !strcmp(rows[j].e->name, rows[i].e->name))
			return 1;
	return 0;
}

/* kallsyms: the capture's kernel symbols (its BPF programs belong to other
 * times), then the rows copied, BPF programs as /proc/kallsyms lists them. */
static void write_kallsyms(const char *dir, const char *from,
			   const struct walk_kcore_row *rows, size_t n, uint64_t t,
			   uint64_t kernel_text)
{
	FILE *out = open_in(dir, "kallsyms", "we"), *in = open_in(from, "kallsyms", "re");
	char line[1024];
	int have_text = 0;

	if (!out)
		synth_die("cannot create %s/kallsyms: %s", dir, strerror(errno));
	while (in && fgets(line, sizeof(line), in)) {
		char name[64];

		if (strstr(line, "[bpf]"))
			continue;
		if (sscanf(line, "%*s %*s %63s", name) == 1 && !strcmp(name, "_text"))
			have_text = 1;
		fputs(line, out);
	}
	if (in)
		fclose(in);
	/* perf relocates kallsyms by _text, the kernel MMAP's symbol */
	if (!have_text)
		fprintf(out, "%016" PRIx64 " T _text\n%016" PRIx64 " T _stext\n",
			kernel_text, kernel_text);
	for (size_t i = 0; i < n; i++) {
		const struct textstore_entry *e = rows[i].e;

		if (!rows[i].bytes || !valid_at(e, t) || listed_before(rows, i, t))
			continue;
		fprintf(out, "%016" PRIx64 " t %s%s\n", e->start,
			strchr(e->name, '/') ? strrchr(e->name, '/') + 1 : e->name,
			!strncmp(e->kind, "bpf", 3) ? "\t[bpf]" : "");
	}
	if (fclose(out))
		synth_die("cannot write %s/kallsyms", dir);
}

static void write_modules(const char *dir, const char *from)
{
	FILE *out = open_in(dir, "modules", "we"), *in = open_in(from, "modules", "re");
	char buf[4096];
	size_t k;

	if (!out)
		synth_die("cannot create %s/modules: %s", dir, strerror(errno));
	while (in && (k = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, k, out);
	if (in)
		fclose(in);
	if (fclose(out))
		synth_die("cannot write %s/modules", dir);
}

size_t walk_kcore_write(const char *out, const char *from,
			const struct walk_kcore_row *rows, size_t n, uint64_t t,
			uint64_t kernel_text)
{
	struct kcore_range *r = calloc(n ? n : 1, sizeof(*r));
	char dir[4096], path[4200], err[512];
	size_t m;

	if (!r)
		synth_die("out of memory");
	snprintf(dir, sizeof(dir), "%s/kcore_dir", out);
	if (mkdir(dir, 0700) && errno != EEXIST)
		synth_die("cannot create %s: %s", dir, strerror(errno));
	m = copied_ranges(rows, n, t, r);
	snprintf(path, sizeof(path), "%s/kcore", dir);
	if (kcore_write(path, r, m, err, sizeof(err)))
		synth_die("%s", err);
	write_kallsyms(dir, from, rows, n, t, kernel_text);
	write_modules(dir, from);
	free(r);
	return m;
}
