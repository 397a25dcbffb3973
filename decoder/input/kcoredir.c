/* SPDX-License-Identifier: MIT */
#include "kcoredir.h"
#include "imgstore.h"
#include "input.h"
#include "kcore.h"
#include "perfdata_dir.h"
#include "symtab.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The name of the copy's versions in the image store. */
#define KCOREDIR_NAME "[kernel.kcore]"

struct kc_change {
	uint64_t addr, len, t;
};

struct kc_module {
	char name[64];
	uint64_t addr, size;
};

struct kcoredir {
	char *dir;
	struct kcore *kc;
	struct symtab *syms;    /* the copy's kallsyms, or NULL */
	int syms_lent;          /* in->ksyms is syms */
	struct kc_change *ch;
	size_t nch, chcap;
	struct kc_module *mods;
	size_t nmods, modcap;
};

int kcoredir_find(const char *perf_path, char **kcdir)
{
	const char *slash = strrchr(perf_path, '/');
	size_t dlen = slash ? (size_t)(slash - perf_path) : 1;
	const char *dir = slash ? perf_path : ".";
	char *p;
	struct stat st;

	*kcdir = NULL;
	if (perfdata_dir_is(perf_path)) {
		/* the directory itself (as detect names perf's layout) */
		dir = perf_path;
		dlen = strlen(perf_path);
	} else if (strcmp(slash ? slash + 1 : perf_path, "data")) {
		return 0;   /* perf keeps kcore_dir only in its directory layout */
	}
	p = malloc(dlen + sizeof("/kcore_dir"));
	if (!p)
		return PTD_ERR_NOMEM;
	memcpy(p, dir, dlen);
	strcpy(p + dlen, "/kcore_dir");
	if (stat(p, &st) || !S_ISDIR(st.st_mode)) {
		free(p);
		return 0;
	}
	*kcdir = p;
	return 0;
}

/* kcore_dir/modules: "NAME SIZE REFS DEPS STATE ADDR ..." per line. */
static int read_modules(struct input *in, struct kcoredir *kd)
{
	char path[4096], line[1024];
	FILE *f;
	size_t lineno = 0, hidden = 0;

	snprintf(path, sizeof(path), "%s/modules", kd->dir);
	f = fopen(path, "re");
	if (!f)
		return input_warn(in, "%s: cannot open it: module ranges the kcore "
				  "copy lacks decode as plain gaps", path);
	while (fgets(line, sizeof(line), f)) {
		struct kc_module m = { 0 };
		char state[32];
		unsigned long long size, addr;

		lineno++;
		if (sscanf(line, "%63s %llu %*s %*s %31s %llx", m.name, &size,
			   state, &addr) == 4 && !addr) {
			hidden++;   /* kptr_restrict when perf copied it */
			continue;
		}
		if (sscanf(line, "%63s %llu %*s %*s %31s %llx", m.name, &size,
			   state, &addr) != 4 || !size) {
			fclose(f);
			return input_warn(in, "%s:%zu: not in /proc/modules format: "
					  "the rest of the file is ignored", path,
					  lineno);
		}
		m.addr = addr;
		m.size = size;
		if (util_grow((void **)&kd->mods, &kd->modcap, kd->nmods + 1,
			      sizeof(m))) {
			fclose(f);
			return PTD_ERR_NOMEM;
		}
		kd->mods[kd->nmods++] = m;
	}
	fclose(f);
	return hidden ? input_warn(in, "%s: %zu modules without addresses "
				   "(kptr_restrict): their ranges are unknown",
				   path, hidden) : 0;
}

/* kcore_dir/kallsyms: the kernel's symbols unless --kallsyms named others. */
static int read_kallsyms(struct input *in, struct kcoredir *kd)
{
	char path[4096], msg[512];
	int rc;

	snprintf(path, sizeof(path), "%s/kallsyms", kd->dir);
	rc = symtab_from_kallsyms(&kd->syms, path, msg, sizeof(msg));
	if (rc == PTD_ERR_NOMEM)
		return rc;
	if (rc)
		return input_warn(in, "kcore copy: %s: kernel symbols and the "
				  "programs it held at the copy are unknown", msg);
	if (!in->ksyms) {
		in->ksyms = kd->syms;
		kd->syms_lent = 1;
	}
	return 0;
}

int kcoredir_open(struct input *in, char *err, size_t errlen)
{
	struct kcoredir *kd;
	char path[4096], msg[512];
	char *dir;
	int rc = kcoredir_find(in->perf_path, &dir);

	if (rc || !dir)
		return rc;
	kd = calloc(1, sizeof(*kd));
	if (!kd) {
		free(dir);
		return PTD_ERR_NOMEM;
	}
	kd->dir = dir;
	in->kcore = kd;
	snprintf(path, sizeof(path), "%s/kcore", dir);
	rc = kcore_open(path, &kd->kc, msg, sizeof(msg));
	if (rc == PTD_ERR_IO) {
		/* perf could not copy it: decode what the rest describes */
		rc = input_warn(in, "perf record --kcore copy: %s: kernel code comes "
				"only from --vmlinux and TEXT_POKE records", msg);
		if (rc)
			return rc;
	} else if (rc) {
		util_errf(err, errlen, "perf record --kcore copy: %s", msg);
		return rc;
	}
	rc = read_kallsyms(in, kd);
	if (!rc)
		rc = read_modules(in, kd);
	return rc;
}

int kcoredir_note_ksymbol(struct kcoredir *kd, uint64_t addr, uint64_t len,
			  uint64_t t, const char *name, int unregister)
{
	const char *have;
	uint64_t off;

	if (!kd || !len || !kd->kc || !kcore_nsegs(kd->kc))
		return 0;
	/* the program the copy holds there (perf's synthesized record) */
	if (!unregister && kd->syms && name &&
	    symtab_lookup(kd->syms, addr, &have, &off) == 0 && !off &&
	    !strcmp(have, name))
		return 0;
	if (util_grow((void **)&kd->ch, &kd->chcap, kd->nch + 1, sizeof(*kd->ch)))
		return PTD_ERR_NOMEM;
	kd->ch[kd->nch].addr = addr;
	kd->ch[kd->nch].len = len;
	kd->ch[kd->nch++].t = t;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* When [a, b) stops being what the copy holds: the first of the changes
 * ch[0..n) there. */
static uint64_t valid_to(const struct kc_change *ch, size_t n, uint64_t a,
			 uint64_t b)
{
	uint64_t to = IMGSTORE_FOREVER;

	for (size_t i = 0; i < n; i++)
		if (ch[i].addr < b && a < ch[i].addr + ch[i].len && ch[i].t < to)
			to = ch[i].t;
	return to;
}

/* One segment, cut where later changes begin and end, each piece valid
 * until its first change. */
static int add_segment(struct input *in, struct kcoredir *kd,
		       const struct kcore_seg *s)
{
	uint64_t end = s->vaddr + s->size, *cut;
	struct kc_change *ch;
	size_t n = 0, nch = 0;
	int rc = 0;

	cut = malloc((2 * kd->nch + 2) * sizeof(*cut));
	ch = malloc((kd->nch + 1) * sizeof(*ch));
	if (!cut || !ch) {
		free(cut);
		free(ch);
		return PTD_ERR_NOMEM;
	}
	cut[n++] = s->vaddr;
	cut[n++] = end;
	for (size_t i = 0; i < kd->nch; i++) {
		uint64_t a = kd->ch[i].addr, b = a + kd->ch[i].len;

		if (b <= s->vaddr || a >= end)
			continue;   /* elsewhere: only this segment's matter */
		ch[nch++] = kd->ch[i];
		if (a > s->vaddr)
			cut[n++] = a;
		if (b < end)
			cut[n++] = b;
	}
	util_sort(cut, n, sizeof(*cut), u64_cmp);
	for (size_t i = 0; i + 1 < n && rc >= 0;) {
		uint64_t to = valid_to(ch, nch, cut[i], cut[i + 1]);
		size_t j = i + 1;

		/* neighbours with the same window stay one version */
		while (j + 1 < n && valid_to(ch, nch, cut[j], cut[j + 1]) == to)
			j++;
		if (cut[j] > cut[i])
			rc = imgstore_add_file(in->st, IMGSTORE_KERNEL, cut[i],
					       cut[j] - cut[i], kcore_path(kd->kc),
					       s->offset + (cut[i] - s->vaddr), 0, to,
					       KCOREDIR_NAME);
		i = j;
	}
	free(cut);
	free(ch);
	return rc < 0 ? rc : 0;
}

/* The parts of module m that no segment holds: gaps naming the module. */
static int add_module_gaps(struct input *in, struct kcoredir *kd,
			   const struct kc_module *m)
{
	uint64_t a = m->addr, end = m->addr + m->size;
	char why[256];

	snprintf(why, sizeof(why), "module %s is not in the perf record --kcore "
		 "copy (its text was not copied)", m->name);
	while (a < end) {
		const struct kcore_seg *s = kd->kc ? kcore_find(kd->kc, a) : NULL;
		uint64_t next = end;
		int rc;

		if (s) {
			a = s->vaddr + s->size;
			continue;
		}
		for (size_t i = 0; kd->kc && i < kcore_nsegs(kd->kc); i++) {
			const struct kcore_seg *o = kcore_get_seg(kd->kc, i);

			if (o->vaddr > a && o->vaddr < next)
				next = o->vaddr;
		}
		rc = imgstore_add_missing(in->st, IMGSTORE_KERNEL, a, next - a, 0,
					  IMGSTORE_FOREVER, m->name, why);
		if (rc < 0)
			return rc;
		a = next;
	}
	return 0;
}

int kcoredir_add(struct input *in, char *err, size_t errlen)
{
	struct kcoredir *kd = in->kcore;
	int rc = 0;

	if (!kd)
		return 0;
	for (size_t i = 0; kd->kc && i < kcore_nsegs(kd->kc) && !rc; i++)
		rc = add_segment(in, kd, kcore_get_seg(kd->kc, i));
	for (size_t i = 0; i < kd->nmods && !rc; i++)
		rc = add_module_gaps(in, kd, &kd->mods[i]);
	if (rc)
		util_errf(err, errlen, "perf record --kcore copy: %s",
			  ptd_strerror(rc));
	return rc;
}

int kcoredir_symbol(struct input *in, uint64_t addr, uint64_t t,
		    const char **name, uint64_t *off)
{
	struct imgstore_hit hit;

	if (!in->kcore || !in->kcore->syms ||
	    imgstore_lookup(in->st, IMGSTORE_KERNEL, addr, t, &hit) ||
	    !hit.name || strcmp(hit.name, KCOREDIR_NAME))
		return -1;
	return symtab_lookup(in->kcore->syms, addr, name, off) ? -1 : 0;
}

void kcoredir_free(struct kcoredir *kd)
{
	if (!kd)
		return;
	kcore_close(kd->kc);
	if (!kd->syms_lent)
		symtab_free(kd->syms);
	free(kd->ch);
	free(kd->mods);
	free(kd->dir);
	free(kd);
}
