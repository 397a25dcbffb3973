/* SPDX-License-Identifier: MIT */
/*
 * bpf_loader OBJ ORACLE: loads the socket filters of OBJ (dyn.bpf.o) one
 * at a time, alternating, with pauses so freed JIT memory can be reused by
 * the next load, and writes what the kernel and bpftool say about each
 * program while it is loaded:
 *
 *   # dyntext-bpf-oracle 1
 *   prog ITER ID TAG T_LOADED                 (CLOCK_MONOTONIC ns)
 *   img ITER I 0xADDR LEN KALLSYMS_NAME BTF_FUNC HEXBYTES
 *   line ITER 0xADDR FILE LINE COL            (bpftool's annotation of the
 *                                              insn a line record names)
 *   closing ITER T_CLOSING                    (just before unloading)
 *
 * Image names come from /proc/kallsyms, function names and source lines
 * from `bpftool prog dump xlated id N linum`; the insn -> JIT address map
 * from bpf_obj_get_info_by_fd (jited_line_info).  Exit 77: BPF refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define ITERS 6
#define MAXI 4096

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int kallsyms_name(uint64_t addr, char *out, size_t len)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	unsigned long long a;
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && a == addr) {
			snprintf(out, len, "%s", name);
			found = 1;
			break;
		}
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

/* bpftool's view: annotation in effect for each xlated insn, and the
 * function names in order. */
struct ann {
	char file[256];
	unsigned line, col;
	int set;
};

static int bpftool_xlated(uint32_t id, struct ann *ann, int max, char funcs[][64], int *nfuncs)
{
	char cmd[256], line[2048];
	struct ann pend = { .set = 0 };
	FILE *p;

	snprintf(cmd, sizeof(cmd), "bpftool prog dump xlated id %u linum", id);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	*nfuncs = 0;
	while (fgets(line, sizeof(line), p)) {
		char *f = strstr(line, " [file:");
		unsigned insn;

		if (line[0] == ';' && f) {
			if (sscanf(f, " [file:%255s line_num:%u line_col:%u]", pend.file,
				   &pend.line, &pend.col) == 3)
				pend.set = 1;
		} else if (sscanf(line, " %u: (", &insn) == 1) {
			if (pend.set && insn < (unsigned)max)
				ann[insn] = pend;
			pend.set = 0;
		} else if (line[0] != ' ' && strchr(line, '(') && *nfuncs < 8) {
			/* "int mix(int a, int b):" -> mix */
			char *open = strchr(line, '('), *s = open;

			while (s > line && (s[-1] == '_' || (s[-1] >= 'a' && s[-1] <= 'z') ||
					    (s[-1] >= 'A' && s[-1] <= 'Z') || (s[-1] >= '0' && s[-1] <= '9')))
				s--;
			snprintf(funcs[(*nfuncs)++], 64, "%.*s", (int)(open - s), s);
		}
	}
	return pclose(p) == 0 ? 0 : -1;
}

static int one(const char *obj_path, int iter, FILE *out)
{
	const char *want = iter % 2 ? "dyn_filter_b" : "dyn_filter_a";
	static struct ann ann[MAXI];
	static uint8_t jited[1 << 16];
	uint64_t ksyms[8], jlines[MAXI];
	uint32_t lens[8];
	struct bpf_line_info lines[MAXI];
	struct bpf_prog_info info;
	uint32_t ilen = sizeof(info);
	char funcs[8][64], name[256];
	struct bpf_object *obj;
	struct bpf_program *prog;
	uint64_t t_loaded, t_closing, off = 0;
	int fd, nfuncs = 0;

	obj = bpf_object__open_file(obj_path, NULL);
	if (!obj)
		return 1;
	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), want));
	if (bpf_object__load(obj)) {
		bpf_object__close(obj);
		return errno == EPERM || errno == EACCES ? 77 : 1;
	}
	t_loaded = now_ns();
	fd = bpf_program__fd(bpf_object__find_program_by_name(obj, want));
	memset(&info, 0, sizeof(info));
	memset(ann, 0, sizeof(ann));
	info.jited_prog_len = sizeof(jited);
	info.jited_prog_insns = (uintptr_t)jited;
	info.nr_jited_ksyms = 8;
	info.jited_ksyms = (uintptr_t)ksyms;
	info.nr_jited_func_lens = 8;
	info.jited_func_lens = (uintptr_t)lens;
	info.nr_line_info = MAXI;
	info.line_info_rec_size = sizeof(lines[0]);
	info.line_info = (uintptr_t)lines;
	info.nr_jited_line_info = MAXI;
	info.jited_line_info_rec_size = sizeof(uint64_t);
	info.jited_line_info = (uintptr_t)jlines;
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &ilen) || info.nr_jited_ksyms > 8 ||
	    info.nr_line_info > MAXI || info.nr_jited_line_info != info.nr_line_info ||
	    bpftool_xlated(info.id, ann, MAXI, funcs, &nfuncs)) {
		fprintf(stderr, "bpf_loader: cannot describe %s\n", want);
		bpf_object__close(obj);
		return 1;
	}
	fprintf(out, "prog %d %u ", iter, info.id);
	for (int i = 0; i < 8; i++)
		fprintf(out, "%02x", info.tag[i]);
	fprintf(out, " %" PRIu64 "\n", t_loaded);
	for (uint32_t i = 0; i < info.nr_jited_ksyms; i++) {
		if (kallsyms_name(ksyms[i], name, sizeof(name)))
			snprintf(name, sizeof(name), "-");
		fprintf(out, "img %d %u %#" PRIx64 " %u %s %s ", iter, i, ksyms[i], lens[i], name,
			(int)i < nfuncs ? funcs[i] : "-");
		for (uint32_t k = 0; k < lens[i] && off + k < info.jited_prog_len; k++)
			fprintf(out, "%02x", jited[off + k]);
		fputc('\n', out);
		off += lens[i];
	}
	for (uint32_t i = 0; i < info.nr_line_info; i++) {
		const struct ann *a = lines[i].insn_off < MAXI ? &ann[lines[i].insn_off] : NULL;

		if (a && a->set)
			fprintf(out, "line %d %#" PRIx64 " %s %u %u\n", iter, jlines[i], a->file,
				a->line, a->col);
	}
	usleep(20000);
	t_closing = now_ns();
	fprintf(out, "closing %d %" PRIu64 "\n", iter, t_closing);
	fflush(out);
	bpf_object__close(obj);
	return 0;
}

int main(int argc, char **argv)
{
	FILE *out;

	if (argc != 3) {
		fprintf(stderr, "usage: bpf_loader OBJ ORACLE\n");
		return 2;
	}
	out = fopen(argv[2], "w");
	if (!out)
		return 1;
	libbpf_set_print(NULL);
	fprintf(out, "# dyntext-bpf-oracle 1\n");
	for (int i = 0; i < ITERS; i++) {
		int rc = one(argv[1], i, out);

		if (rc)
			return rc;
		usleep(60000); /* past the deferred free, so the address can be reused */
	}
	return fclose(out) ? 1 : 0;
}
