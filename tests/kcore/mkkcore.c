/* SPDX-License-Identifier: MIT */
/*
 * mkkcore: a kcore directory of this machine made at test time, for
 * `ptcapture record --kcore=DIR` (this machine has no /proc/kcore).
 *
 *   mkkcore DIR      (root, BPF)
 *
 * Loads three small socket-filter programs (kc_keep1, kc_keep2, kc_omit)
 * and keeps them loaded.  Then reads their JIT images by id (prog info:
 * jited_ksyms, jited_func_lens, jited_prog_insns;
 * capture/ptcapture/bpfinfo.c) and writes DIR/kcore with one PT_LOAD per
 * image of kc_keep1 and kc_keep2 at its real address (only programs that
 * stay loaded: a real kcore is live, this copy is not, and other tests
 * load and free programs meanwhile, possibly at the same addresses;
 * every other program's range is one the file lacks), kc_omit's left out
 * (the range a test expects to be reported as not copied), a
 * copy of /proc/kallsyms as DIR/kallsyms, an empty DIR/modules, and
 * DIR/expect.tsv: "keep 0xADDR LEN NAME" per image written, "omit 0xADDR
 * LEN NAME" for kc_omit's.  Prints "ready" and waits for its standard
 * input to close (the programs stay loaded until then).  Exit 77: no BPF
 * JIT here (not root, JIT off).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpfinfo.h"
#include "kcore.h"

static int load(const char *name, int imm)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = imm },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_0, .imm = imm * 3 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, name, "GPL", insns, 3, NULL);
}

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "re"), *out = fopen(to, "we");
	char buf[65536];
	size_t n;

	if (!in || !out)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			return -1;
	fclose(in);
	return fclose(out);
}

int main(int argc, char **argv)
{
	static struct bpfinfo_prog progs[4096];
	struct kcore_range r[8192];
	char path[4200], err[512];
	size_t np = 0, nr = 0;
	uint32_t id = 0, omit_id, keep_id[2];
	int fd[3];
	FILE *ex;

	if (argc != 2) {
		fprintf(stderr, "usage: mkkcore DIR\n");
		return 2;
	}
	fd[0] = load("kc_keep1", 11);
	fd[1] = load("kc_keep2", 22);
	fd[2] = load("kc_omit", 33);
	if (fd[0] < 0 || fd[1] < 0 || fd[2] < 0) {
		printf("SKIP: cannot load BPF programs here (%s): needs root\n", strerror(errno));
		return 77;
	}
	{
		struct bpf_prog_info pi = { 0 };
		uint32_t len = sizeof(pi);

		if (bpf_obj_get_info_by_fd(fd[2], &pi, &len) || !pi.jited_prog_len) {
			printf("SKIP: no BPF JIT images (net.core.bpf_jit_enable=0?)\n");
			return 77;
		}
		omit_id = pi.id;
	}
	for (int k = 0; k < 2; k++) {
		struct bpf_prog_info pi = { 0 };
		uint32_t len = sizeof(pi);

		if (bpf_obj_get_info_by_fd(fd[k], &pi, &len))
			return 1;
		keep_id[k] = pi.id;
	}
	mkdir(argv[1], 0700);
	snprintf(path, sizeof(path), "%s/expect.tsv", argv[1]);
	if (!(ex = fopen(path, "we")))
		return 1;
	while (!bpf_prog_get_next_id(id, &id) && np < 4096) {
		struct bpfinfo_prog *p = &progs[np];

		if (id != omit_id && id != keep_id[0] && id != keep_id[1])
			continue;
		if (bpfinfo_copy(NULL, id, p, err, sizeof(err)))
			continue;   /* no JIT */
		np++;
		for (uint32_t i = 0; i < p->nimg && nr < 8192; i++) {
			if (p->id == omit_id) {
				fprintf(ex, "omit %#" PRIx64 " %u %s\n", p->img[i].addr,
					p->img[i].len, p->name);
				continue;
			}
			r[nr].vaddr = p->img[i].addr;
			r[nr].bytes = p->img[i].bytes;
			r[nr++].size = p->img[i].len;
			fprintf(ex, "keep %#" PRIx64 " %u %s\n", p->img[i].addr,
				p->img[i].len, p->name);
		}
	}
	fclose(ex);
	snprintf(path, sizeof(path), "%s/kcore", argv[1]);
	if (kcore_write(path, r, nr, err, sizeof(err))) {
		fprintf(stderr, "mkkcore: %s\n", err);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/kallsyms", argv[1]);
	if (copy_file("/proc/kallsyms", path))
		return 1;
	snprintf(path, sizeof(path), "%s/modules", argv[1]);
	fclose(fopen(path, "we"));
	for (size_t i = 0; i < np; i++)
		bpfinfo_free(&progs[i]);
	printf("ready %zu images\n", nr);
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}
