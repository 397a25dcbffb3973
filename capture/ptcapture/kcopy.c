/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "kcopy.h"
#include "kcore.h"
#include "textmatch.h"
#include "textstore.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Ranges named on stderr before the rest are only counted. */
#define KCOPY_NAMED 5

struct krow {
	struct textstore_entry e;
	uint8_t *bytes;
	uint64_t copied;        /* when (perf clock: CLOCK_MONOTONIC) */
};

struct kunreg {
	uint64_t time, addr, len;
};

struct kcopy {
	char dir[4096], path[4200];
	struct kcore *kc;       /* NULL: unreadable, every range is missed */
	struct krow *rows;
	size_t nrows, crows;
	struct kunreg *un;
	size_t nun, cun;
	struct kcopy_counts n;
};

struct kcopy *kcopy_open(const char *dir, char *err, size_t errlen)
{
	struct kcopy *kc = calloc(1, sizeof(*kc));

	if (!kc)
		return NULL;
	snprintf(kc->dir, sizeof(kc->dir), "%s", dir);
	snprintf(kc->path, sizeof(kc->path), "%s/kcore", dir);
	if (kcore_open(kc->path, &kc->kc, err, errlen))
		kc->kc = NULL;
	return kc;
}

void kcopy_free(struct kcopy *kc)
{
	if (!kc)
		return;
	for (size_t i = 0; i < kc->nrows; i++)
		free(kc->rows[i].bytes);
	free(kc->rows);
	free(kc->un);
	kcore_close(kc->kc);
	free(kc);
}

const char *kcopy_path(const struct kcopy *kc)
{
	return kc->path;
}

int kcopy_readable(const struct kcopy *kc)
{
	return kc->kc != NULL;
}

static void missed(struct kcopy *kc, const char *name, uint64_t addr,
		   uint64_t len, const char *why)
{
	if (kc->n.missed++ < KCOPY_NAMED)
		fprintf(stderr, "ptcapture: --kcore: %s [%#" PRIx64 ", %#" PRIx64
			") not copied: %s\n", name, addr, addr + len, why);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Copies [addr, addr+len) now as a row valid from time. */
static int copy_range(struct kcopy *kc, const char *kind, const char *name,
		      uint64_t time, uint64_t addr, uint64_t len,
		      const uint8_t *want)
{
	struct krow *r;
	char err[512];
	uint8_t *b;

	if (!len)
		return 0;
	if (!kc->kc) {
		kc->n.missed++;   /* said once, at the start */
		return 0;
	}
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	if (kcore_read(kc->kc, addr, b, len, err, sizeof(err))) {
		missed(kc, name, addr, len, err);
		free(b);
		return 0;
	}
	if (want && memcmp(b, want, len)) {
		kc->n.poke_changed++;   /* the record's bytes decode it */
		free(b);
		return 0;
	}
	if (util_grow((void **)&kc->rows, &kc->crows, kc->nrows + 1, sizeof(*r))) {
		free(b);
		return -ENOMEM;
	}
	r = &kc->rows[kc->nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->e.kind, sizeof(r->e.kind), "%s", kind);
	r->e.start = addr;
	r->e.len = len;
	r->e.valid_from = time;
	r->e.valid_to = TEXTSTORE_OPEN_END;
	r->e.pid = -1;
	snprintf(r->e.source, sizeof(r->e.source), "kcore");
	snprintf(r->e.tag, sizeof(r->e.tag), "-");
	snprintf(r->e.build_id, sizeof(r->e.build_id), "-");
	snprintf(r->e.name, sizeof(r->e.name), "%s", name);
	r->bytes = b;
	r->copied = now_ns();
	kc->n.ranges++;
	kc->n.bytes += len;
	return 0;
}

/* _stext and _etext of DIR/kallsyms. */
static int kernel_text(const struct kcopy *kc, uint64_t *start, uint64_t *end)
{
	char path[4200], line[512];
	FILE *f;

	*start = *end = 0;
	snprintf(path, sizeof(path), "%s/kallsyms", kc->dir);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f) && !(*start && *end)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "_stext"))
			*start = a;
		else if (!strcmp(name, "_etext"))
			*end = a;
	}
	fclose(f);
	return *start && *end > *start ? 0 : -1;
}

/* DIR/modules: "NAME SIZE REFS DEPS STATE 0xADDR ..." per module. */
static int copy_modules(struct kcopy *kc)
{
	char path[4200], line[1024];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/modules", kc->dir);
	if (!(f = fopen(path, "re")))
		return 0;   /* no modules: nothing to copy */
	while (!rc && fgets(line, sizeof(line), f)) {
		char name[64], mod[80];
		unsigned long long size, addr;

		if (sscanf(line, "%63s %llu %*s %*s %*s %llx", name, &size, &addr) != 3)
			continue;
		snprintf(mod, sizeof(mod), "[%s]", name);
		if (!addr)
			missed(kc, mod, 0, size, "its address is hidden (kptr_restrict)");
		else
			rc = copy_range(kc, "kcore", mod, 0, addr, size, NULL);
	}
	fclose(f);
	return rc;
}

int kcopy_start(struct kcopy *kc)
{
	uint64_t s, e;

	if (kernel_text(kc, &s, &e))
		missed(kc, "[kernel.kallsyms]", 0, 0, "no _stext/_etext in kallsyms");
	else if (copy_range(kc, "kcore", "[kernel.kallsyms]", 0, s, e - s, NULL))
		return -ENOMEM;
	return copy_modules(kc);
}

int kcopy_ksymbol(struct kcopy *kc, uint64_t time, uint64_t addr, uint32_t len,
		  uint16_t type, int unregister, const char *name)
{
	(void)type;
	if (unregister) {
		if (util_grow((void **)&kc->un, &kc->cun, kc->nun + 1, sizeof(*kc->un)))
			return -ENOMEM;
		kc->un[kc->nun].time = time;
		kc->un[kc->nun].addr = addr;
		kc->un[kc->nun++].len = len;
		return 0;
	}
	/* later BPF programs: prog info and the fence copy them */
	if (time && !strncmp(name, "bpf_prog_", 9))
		return 0;
	return copy_range(kc, time ? "trampoline" : "kcore", name, time, addr, len,
			  NULL);
}

int kcopy_text_poke(struct kcopy *kc, uint64_t time, uint64_t addr,
		    const uint8_t *bytes, uint16_t len)
{
	return copy_range(kc, "poke", "text_poke", time, addr, len, bytes);
}

int kcopy_finish(struct kcopy *kc, struct textmatch *tm)
{
	for (size_t i = 0; i < kc->nrows; i++) {
		struct krow *r = &kc->rows[i];

		for (size_t j = 0; j < kc->nun; j++)
			if (kc->un[j].time > r->e.valid_from &&
			    kc->un[j].time < r->e.valid_to &&
			    kc->un[j].addr < r->e.start + r->e.len &&
			    r->e.start < kc->un[j].addr + kc->un[j].len)
				r->e.valid_to = kc->un[j].time;
		if (r->e.valid_to != TEXTSTORE_OPEN_END && r->copied > r->e.valid_to) {
			/* freed before its record was read: the bytes copied are
			 * whatever came after */
			kc->n.ranges--;
			kc->n.bytes -= r->e.len;
			missed(kc, r->e.name, r->e.start, r->e.len,
			       "unregistered before it could be copied");
			continue;
		}
		if (textmatch_add_row(tm, &r->e, r->bytes))
			return -ENOMEM;
		free(r->bytes);   /* tm has its own copy: the kernel text is big */
		r->bytes = NULL;
	}
	if (kc->n.missed > KCOPY_NAMED)
		fprintf(stderr, "ptcapture: --kcore: %" PRIu64 " ranges not copied in "
			"all (info: kcore_ranges_not_copied)\n", kc->n.missed);
	return 0;
}

void kcopy_get_counts(const struct kcopy *kc, struct kcopy_counts *c)
{
	*c = kc->n;
}
