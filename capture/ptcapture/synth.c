/* SPDX-License-Identifier: MIT */
#include "synth.h"
#include "sbevents.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

struct ksym {
	uint64_t addr;
	char *name;
};

struct synth_kallsyms {
	struct ksym *bpf;
	size_t n, cap;
};

uint64_t synth_kallsyms_lookup(const char *symbol)
{
	FILE *in = fopen("/proc/kallsyms", "r");
	char line[1024], name[512], type;
	uint64_t addr, found = 0;

	while (in && !found && fgets(line, sizeof(line), in))
		if (sscanf(line, "%" SCNx64 " %c %511s", &addr, &type, name) == 3 &&
		    !strcmp(name, symbol))
			found = addr;
	if (in)
		fclose(in);
	return found;
}

int synth_kallsyms_copy(const char *path, struct synth_kallsyms **out,
			char *err, size_t errlen)
{
	struct synth_kallsyms *ks = calloc(1, sizeof(*ks));
	char line[1024];
	FILE *in, *o = NULL;
	int fd, rc = 0;

	*out = NULL;
	if (!ks)
		return -ENOMEM;
	in = fopen("/proc/kallsyms", "r");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0)
		o = fdopen(fd, "w");
	if (!in || !o) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", in ? path : "/proc/kallsyms", strerror(errno));
		goto out;
	}
	while (fgets(line, sizeof(line), in)) {
		char name[512], type;
		uint64_t addr;

		fputs(line, o);
		if (sscanf(line, "%" SCNx64 " %c %511s", &addr, &type, name) != 3)
			continue;
		if (strstr(line, "\t[bpf]") && !strncmp(name, "bpf_prog_", 9)) {
			if (ks->n == ks->cap) {
				size_t nc = ks->cap ? 2 * ks->cap : 64;
				struct ksym *nb = realloc(ks->bpf, nc * sizeof(*nb));

				if (!nb) {
					rc = -ENOMEM;
					goto out;
				}
				ks->bpf = nb;
				ks->cap = nc;
			}
			ks->bpf[ks->n].addr = addr;
			if (!(ks->bpf[ks->n].name = strdup(name))) {
				rc = -ENOMEM;
				goto out;
			}
			ks->n++;
		}
	}
	if (ferror(in) || ferror(o))
		rc = -EIO;
out:
	if (in)
		fclose(in);
	if (o && fclose(o) && !rc)
		rc = -EIO;
	else if (!o && fd >= 0)
		close(fd);
	if (rc) {
		if (!*err)
			snprintf(err, errlen, "copying /proc/kallsyms: %s", strerror(-rc));
		synth_kallsyms_free(ks);
		return rc;
	}
	*out = ks;
	return 0;
}

void synth_kallsyms_free(struct synth_kallsyms *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->n; i++)
		free(ks->bpf[i].name);
	free(ks->bpf);
	free(ks);
}

static const char *bpf_name(const struct synth_kallsyms *ks, uint64_t addr)
{
	for (size_t i = 0; ks && i < ks->n; i++)
		if (ks->bpf[i].addr == addr)
			return ks->bpf[i].name;
	return NULL;
}

/* Record buffer: header + body + trailer, 8-byte aligned. */
union rec {
	struct perf_event_header h;
	uint8_t b[4096 + 256];
};

static void finish(union rec *r, size_t body, uint64_t id)
{
	r->h.size = (uint16_t)((body + 7) / 8 * 8 + SB_ID_TRAILER);
	memset(r->b + body, 0, r->h.size - body);
	sbevents_fill_trailer(&r->h, (uint32_t)-1, (uint32_t)-1, 0, id, 0);
}

int synth_bpf_progs(const struct synth_kallsyms *ks, uint64_t id,
		    synth_fn fn, void *ctx)
{
	uint32_t pid = 0;
	int count = 0;

	while (!bpf_prog_get_next_id(pid, &pid)) {
		uint64_t addrs[256];
		uint32_t lens[256];
		uint8_t tags[256][8];
		struct bpf_prog_info info;
		uint32_t ilen = sizeof(info);
		union rec r;
		int fd = bpf_prog_get_fd_by_id(pid), rc;

		if (fd < 0)
			continue; /* unloaded meanwhile */
		/* the kernel fills these through pointers valgrind cannot
		 * follow; zeroed, they are defined either way */
		memset(addrs, 0, sizeof(addrs));
		memset(lens, 0, sizeof(lens));
		memset(tags, 0, sizeof(tags));
		memset(&info, 0, sizeof(info));
		info.nr_jited_ksyms = 256;
		info.jited_ksyms = (uintptr_t)addrs;
		info.nr_jited_func_lens = 256;
		info.jited_func_lens = (uintptr_t)lens;
		info.nr_prog_tags = 256;
		info.prog_tags = (uintptr_t)tags;
		rc = bpf_obj_get_info_by_fd(fd, &info, &ilen);
		close(fd);
		if (rc || info.nr_jited_ksyms > 256 || info.nr_jited_func_lens != info.nr_jited_ksyms)
			continue;
		for (uint32_t i = 0; i < info.nr_jited_ksyms; i++) {
			const char *known = bpf_name(ks, addrs[i]);
			/* The main image's symbol uses the program's tag; prog_tags[0]
			 * is the tag of the main subprogram alone. */
			const uint8_t *t = i > 0 && i < info.nr_prog_tags ? tags[i] : info.tag;
			char name[256];
			size_t nl;

			if (known) {
				snprintf(name, sizeof(name), "%s", known);
			} else {
				int n = snprintf(name, sizeof(name), "bpf_prog_");

				for (int k = 0; k < 8; k++)
					n += snprintf(name + n, sizeof(name) - n, "%02x", t[k]);
				snprintf(name + n, sizeof(name) - n, "_%s",
					 i == 0 && info.name[0] ? info.name : "F");
			}
			memset(&r, 0, sizeof(r));
			r.h.type = PERF_RECORD_KSYMBOL;
			r.h.misc = PERF_RECORD_MISC_KERNEL;
			memcpy(r.b + 8, &addrs[i], 8);
			memcpy(r.b + 16, &lens[i], 4);
			r.b[20] = PERF_RECORD_KSYMBOL_TYPE_BPF;
			nl = strlen(name) + 1;
			memcpy(r.b + 24, name, nl);
			finish(&r, 24 + nl, id);
			if ((rc = fn(ctx, &r.h)))
				return rc;
		}
		memset(&r, 0, sizeof(r));
		r.h.type = PERF_RECORD_BPF_EVENT;
		r.h.misc = PERF_RECORD_MISC_KERNEL;
		r.b[8] = PERF_BPF_EVENT_PROG_LOAD;
		memcpy(r.b + 12, &info.id, 4);
		memcpy(r.b + 16, info.tag, 8);
		finish(&r, 24, id);
		if ((rc = fn(ctx, &r.h)))
			return rc;
		count++;
	}
	return count;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int synth_one(uint32_t pid, uint64_t id, synth_fn fn, void *ctx)
{
	char path[64], comm[64], line[4096 + 256];
	union rec r;
	DIR *td;
	FILE *maps;
	struct dirent *de;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (read_line(path, comm, 16))
		return 0; /* exited */
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	td = opendir(path);
	while (td && (de = readdir(td)) && !rc) {
		uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);
		size_t cl = strlen(comm) + 1;

		if (!tid)
			continue;
		memset(&r, 0, sizeof(r));
		r.h.type = PERF_RECORD_COMM;
		memcpy(r.b + 8, &pid, 4);
		memcpy(r.b + 12, &tid, 4);
		memcpy(r.b + 16, comm, cl);
		finish(&r, 16 + cl, id);
		sbevents_fill_trailer(&r.h, pid, tid, 0, id, 0);
		rc = fn(ctx, &r.h);
	}
	if (td)
		closedir(td);
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	maps = fopen(path, "r");
	while (maps && !rc && fgets(line, sizeof(line), maps)) {
		uint64_t start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8], file[4096];
		uint32_t prot, flags;
		uint64_t z64 = 0;
		int n = 0;
		size_t fl;

		file[0] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, &n) < 7)
			continue;
		if (perms[2] != 'x')
			continue; /* like perf: executable mappings only */
		snprintf(file, sizeof(file), "%s", n ? line + n : "");
		file[strcspn(file, "\n")] = 0;
		if (!file[0])
			strcpy(file, "//anon");
		prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) | 4;
		flags = perms[3] == 's' ? 1 : 2; /* MAP_SHARED / MAP_PRIVATE */
		memset(&r, 0, sizeof(r));
		r.h.type = PERF_RECORD_MMAP2;
		r.h.misc = PERF_RECORD_MISC_USER;
		{
			uint64_t len = end - start;
			uint32_t w[2] = { pid, pid };

			memcpy(r.b + 8, w, 8);
			memcpy(r.b + 16, &start, 8);
			memcpy(r.b + 24, &len, 8);
			memcpy(r.b + 32, &pgoff, 8);
			memcpy(r.b + 40, &maj, 4);
			memcpy(r.b + 44, &min, 4);
			memcpy(r.b + 48, &ino, 8);
			memcpy(r.b + 56, &z64, 8);   /* ino_generation */
			memcpy(r.b + 64, &prot, 4);
			memcpy(r.b + 68, &flags, 4);
		}
		fl = strlen(file) + 1;
		memcpy(r.b + 72, file, fl);
		finish(&r, 72 + fl, id);
		sbevents_fill_trailer(&r.h, pid, pid, 0, id, 0);
		rc = fn(ctx, &r.h);
	}
	if (maps)
		fclose(maps);
	return rc;
}

int synth_procs(uint64_t id, synth_fn fn, void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int rc = 0, n = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		uint32_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (uint32_t)strtoul(de->d_name, NULL, 10);
		rc = synth_one(pid, id, fn, ctx);
		n++;
	}
	closedir(d);
	return rc ? rc : n;
}
