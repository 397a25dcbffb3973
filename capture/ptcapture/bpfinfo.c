/* SPDX-License-Identifier: MIT */
#include "bpfinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

/* Arrays the kernel fills on the second info call. */
struct arrays {
	uint8_t *jited;
	uint64_t *ksyms, *jlines;
	uint32_t *lens, *maps;
	struct bpf_func_info *funcs;
	struct bpf_line_info *lines;
};

static void free_arrays(struct arrays *a)
{
	free(a->jited);
	free(a->ksyms);
	free(a->jlines);
	free(a->lens);
	free(a->maps);
	free(a->funcs);
	free(a->lines);
}

static void clean(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n' || *s == '\r')
			*s = ' ';
}

static FILE *create(const char *dir, uint32_t id, const char *ext)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%u.%s", dir, id, ext);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return fd < 0 ? NULL : fdopen(fd, "w");
}

static const char *str_at(const struct btf *btf, uint32_t off)
{
	const char *s = btf ? btf__str_by_offset(btf, off) : NULL;

	return s && *s ? s : "-";
}

/* A program's BTF, read into a zeroed buffer of ours and parsed by libbpf.
 * (btf__load_from_kernel_by_id does the same in a buffer the kernel fills
 * through a pointer inside the bpf() attributes, which valgrind cannot
 * see: every use of the types then looks uninitialised to memcheck.) */
static struct btf *load_btf(uint32_t id)
{
	struct bpf_btf_info bi;
	uint32_t len = sizeof(bi), size;
	struct btf *btf = NULL;
	void *buf;
	int fd = bpf_btf_get_fd_by_id(id);

	if (fd < 0)
		return NULL;
	memset(&bi, 0, sizeof(bi));
	if (!bpf_obj_get_info_by_fd(fd, &bi, &len) && bi.btf_size &&
	    (buf = calloc(1, bi.btf_size))) {
		size = bi.btf_size;
		memset(&bi, 0, sizeof(bi));
		bi.btf = (uintptr_t)buf;
		bi.btf_size = size;
		len = sizeof(bi);
		if (!bpf_obj_get_info_by_fd(fd, &bi, &len) && bi.btf_size <= size)
			btf = btf__new(buf, bi.btf_size);
		free(buf);
	}
	close(fd);
	return btf && !libbpf_get_error(btf) ? btf : NULL;
}

static int write_files(const char *dir, const struct bpf_prog_info *in,
		       const struct arrays *a, char *err, size_t errlen)
{
	struct btf *btf = NULL;
	FILE *f;
	int rc = 0;

	if (in->btf_id) {
		btf = load_btf(in->btf_id);
		if (btf) {
			uint32_t size;
			const void *raw = btf__raw_data(btf, &size);
			FILE *b = create(dir, in->id, "btf");

			if (!b || !raw || fwrite(raw, 1, size, b) != size)
				rc = -EIO;
			if (b && fclose(b))
				rc = -EIO;
		}
	}
	f = create(dir, in->id, "tsv");
	if (!f) {
		btf__free(btf);
		snprintf(err, errlen, "cannot create %s/%u.tsv: %s", dir, in->id, strerror(errno));
		return -errno;
	}
	fprintf(f, "# ptcapture-bpf 1\nprog\t%u\t", in->id);
	for (int i = 0; i < 8; i++)
		fprintf(f, "%02x", in->tag[i]);
	fprintf(f, "\t%s\t%u\t%u\t%u\n", in->name[0] ? in->name : "-", in->btf_id,
		in->nr_jited_ksyms, in->type);
	for (uint32_t i = 0; i < in->nr_jited_ksyms; i++)
		fprintf(f, "image\t%u\t%#" PRIx64 "\t%u\n", i, a->ksyms[i], a->lens[i]);
	for (uint32_t i = 0; i < in->nr_func_info; i++) {
		const struct btf_type *t = btf ? btf__type_by_id(btf, a->funcs[i].type_id) : NULL;
		char name[256];

		snprintf(name, sizeof(name), "%s", t ? str_at(btf, t->name_off) : "-");
		clean(name);
		fprintf(f, "func\t%u\t%u\t%u\t%#" PRIx64 "\t%s\n", i, a->funcs[i].insn_off,
			a->funcs[i].type_id, i < in->nr_jited_ksyms ? a->ksyms[i] : 0, name);
	}
	for (uint32_t i = 0; i < in->nr_line_info; i++) {
		const struct bpf_line_info *l = &a->lines[i];
		char file[512], src[1024];

		snprintf(file, sizeof(file), "%s", str_at(btf, l->file_name_off));
		snprintf(src, sizeof(src), "%s", str_at(btf, l->line_off));
		clean(file);
		clean(src);
		fprintf(f, "line\t%#" PRIx64 "\t%u\t%u\t%u\t%s\t%s\n",
			i < in->nr_jited_line_info ? a->jlines[i] : 0, l->insn_off,
			BPF_LINE_INFO_LINE_NUM(l->line_col), BPF_LINE_INFO_LINE_COL(l->line_col),
			file, src);
	}
	if (fclose(f))
		rc = -EIO;
	btf__free(btf);
	if (rc)
		snprintf(err, errlen, "writing %s/%u.*: I/O error", dir, in->id);
	return rc;
}

/* Does one of the maps have type BPF_MAP_TYPE_PROG_ARRAY?  Maps gone
 * meanwhile do not count. */
static int has_prog_array(const uint32_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct bpf_map_info mi;
		uint32_t len = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]), yes;

		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		yes = !bpf_obj_get_info_by_fd(fd, &mi, &len) && mi.type == BPF_MAP_TYPE_PROG_ARRAY;
		close(fd);
		if (yes)
			return 1;
	}
	return 0;
}

int bpfinfo_copy(const char *dir, uint32_t id, struct bpfinfo_prog *out,
		 char *err, size_t errlen)
{
	return bpfinfo_copy2(dir, id, 0, out, err, errlen);
}

int bpfinfo_copy2(const char *dir, uint32_t id, int want_maps,
		  struct bpfinfo_prog *out, char *err, size_t errlen)
{
	struct bpf_prog_info cnt, info;
	uint32_t ilen = sizeof(cnt);
	struct arrays a = { 0 };
	uint64_t off = 0;
	int fd, rc = 0;

	memset(out, 0, sizeof(*out));
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			snprintf(err, errlen, "BPF_PROG_GET_FD_BY_ID %u: %s", id, strerror(-rc));
		return rc;
	}
	/* First call: the counts; second: the arrays. */
	memset(&cnt, 0, sizeof(cnt));
	if (bpf_obj_get_info_by_fd(fd, &cnt, &ilen)) {
		rc = -errno;
		goto fail;
	}
	memset(&info, 0, sizeof(info));
	a.jited = calloc(1, cnt.jited_prog_len + 1);
	a.ksyms = calloc(cnt.nr_jited_ksyms + 1, sizeof(uint64_t));
	a.lens = calloc(cnt.nr_jited_func_lens + 1, sizeof(uint32_t));
	a.funcs = calloc(cnt.nr_func_info + 1, sizeof(*a.funcs));
	a.lines = calloc(cnt.nr_line_info + 1, sizeof(*a.lines));
	a.jlines = calloc(cnt.nr_jited_line_info + 1, sizeof(uint64_t));
	a.maps = calloc(cnt.nr_map_ids + 1, sizeof(uint32_t));
	if (!a.jited || !a.ksyms || !a.lens || !a.funcs || !a.lines || !a.jlines || !a.maps) {
		rc = -ENOMEM;
		goto fail;
	}
	info.jited_prog_len = cnt.jited_prog_len;
	info.jited_prog_insns = (uintptr_t)a.jited;
	info.nr_jited_ksyms = cnt.nr_jited_ksyms;
	info.jited_ksyms = (uintptr_t)a.ksyms;
	info.nr_jited_func_lens = cnt.nr_jited_func_lens;
	info.jited_func_lens = (uintptr_t)a.lens;
	info.nr_func_info = cnt.nr_func_info;
	info.func_info_rec_size = sizeof(*a.funcs);
	info.func_info = (uintptr_t)a.funcs;
	info.nr_line_info = cnt.nr_line_info;
	info.line_info_rec_size = sizeof(*a.lines);
	info.line_info = (uintptr_t)a.lines;
	info.nr_jited_line_info = cnt.nr_jited_line_info;
	info.jited_line_info_rec_size = sizeof(uint64_t);
	info.jited_line_info = (uintptr_t)a.jlines;
	if (want_maps) {
		info.nr_map_ids = cnt.nr_map_ids;
		info.map_ids = (uintptr_t)a.maps;
	}
	ilen = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
		rc = -errno;
		goto fail;
	}
	if (info.nr_jited_ksyms != info.nr_jited_func_lens || info.jited_prog_len > cnt.jited_prog_len ||
	    info.nr_jited_ksyms > cnt.nr_jited_ksyms) {
		snprintf(err, errlen, "program %u: inconsistent JIT info", id);
		rc = -EPROTO;
		goto out_close;
	}
	out->id = info.id;
	memcpy(out->tag, info.tag, 8);
	snprintf(out->name, sizeof(out->name), "%s", info.name);
	out->img = calloc(info.nr_jited_ksyms + 1, sizeof(*out->img));
	if (!out->img) {
		rc = -ENOMEM;
		goto fail;
	}
	/* jited_prog_insns is the images concatenated, main first. */
	for (uint32_t i = 0; i < info.nr_jited_ksyms; i++) {
		if (off + a.lens[i] > info.jited_prog_len)
			break;
		out->img[out->nimg].addr = a.ksyms[i];
		out->img[out->nimg].len = a.lens[i];
		out->img[out->nimg].bytes = a.jited + off;
		out->nimg++;
		off += a.lens[i];
	}
	if (want_maps)
		out->prog_array = has_prog_array(a.maps, info.nr_map_ids < cnt.nr_map_ids ?
						 info.nr_map_ids : cnt.nr_map_ids);
	if (dir)
		rc = write_files(dir, &info, &a, err, errlen);
	out->jited = a.jited;
	a.jited = NULL;
	free_arrays(&a);
	close(fd);
	return rc;
fail:
	snprintf(err, errlen, "program %u: %s", id, strerror(-rc));
out_close:
	free_arrays(&a);
	bpfinfo_free(out);
	close(fd);
	return rc;
}

void bpfinfo_free(struct bpfinfo_prog *p)
{
	free(p->img);
	free(p->jited);
	memset(p, 0, sizeof(*p));
}
