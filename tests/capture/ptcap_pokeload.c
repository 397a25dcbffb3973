/* SPDX-License-Identifier: MIT */
/*
 * ptcap_pokeload - a BPF program whose JIT image the kernel rewrites in
 * place, for the test of ptcapture's re-copies (poke_test.sh).
 *
 * Loads a prog array (one slot), two targets and a caller that tail-calls
 * slot 0 with a constant key (a direct tail call: the JIT emits a patchable
 * jump), all socket filters written as raw instructions.  Then it changes
 * the slot: set to target 1, set to target 2, delete; each change
 * re-patches the caller's image, and this kernel emits no TEXT_POKE.  Every
 * version stays LIVE_MS in place; in its middle the loader reads the
 * caller's image through prog info (the oracle).
 *
 * OUTDIR/oracle.tsv (times: CLOCK_MONOTONIC ns = perf clock):
 *   caller <prog_id> <0xaddr> <len> <tag>
 *   seen <time> <hash>              the loader read these bytes at time
 *   update <t_before> <t_after> <what>   the update syscall's window
 * OUTDIR/text/: a text store for `ptsynth walk` with each version from the
 * end of the update that made it to the end of the next update: the loader
 * knows those bytes were there between its updates; during an update it
 * does not, and a walk there runs through the old bytes (whichever bytes
 * ran then, a decoder cannot know them: where ptcapture's store says
 * `uncertain`, it must give a gap).
 *
 * Usage: ptcap_pokeload OUTDIR   (exit 77: BPF not permitted)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

#include "textstore.h"

#define LIVE_MS 50
#define NVER 4

static void die(const char *what)
{
	fprintf(stderr, "ptcap_pokeload: %s: %s\n", what, strerror(errno));
	exit(errno == EPERM || errno == EACCES ? 77 : 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&d, &d) < 0 && errno == EINTR)
		;
}

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i = { .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };

	return i;
}

static int load(const char *name, const struct bpf_insn *in, size_t n)
{
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, name, "GPL", in, n, NULL);

	if (fd < 0)
		die(name);
	return fd;
}

/* r0 = k; exit */
static int load_target(const char *name, int k)
{
	struct bpf_insn p[] = {
		insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, k),
		insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return load(name, p, 2);
}

/* if (skb->len > 64) r7 = 1; tail_call(ctx, map, 0); return r7 */
static int load_caller(int map)
{
	struct bpf_insn p[] = {
		insn(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0),
		insn(BPF_ALU64 | BPF_MOV | BPF_K, 7, 0, 0, 0),
		insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0),   /* skb->len */
		insn(BPF_JMP | BPF_JLE | BPF_K, 2, 0, 1, 64),
		insn(BPF_ALU64 | BPF_MOV | BPF_K, 7, 0, 0, 1),
		insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
		insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, map),
		insn(0, 0, 0, 0, 0),
		insn(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 0),
		insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_tail_call),
		insn(BPF_ALU64 | BPF_MOV | BPF_X, 0, 7, 0, 0),
		insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return load("poke_caller", p, sizeof(p) / sizeof(p[0]));
}

struct image {
	uint32_t id, len;
	uint64_t addr;
	char tag[17], hash[17];
	uint8_t bytes[4096];
};

/* The caller's main image, as prog info gives it now. */
static void read_image(int fd, struct image *im)
{
	struct bpf_prog_info info;
	uint32_t ilen = sizeof(info), flen = 0;
	uint64_t ksym = 0;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		die("prog info");
	if (info.jited_prog_len > sizeof(im->bytes) || info.nr_jited_ksyms != 1) {
		errno = EPROTO;
		die("unexpected caller image");
	}
	im->id = info.id;
	for (int i = 0; i < 8; i++)
		snprintf(im->tag + 2 * i, 3, "%02x", info.tag[i]);
	memset(&info, 0, sizeof(info));
	info.jited_prog_len = sizeof(im->bytes);
	info.jited_prog_insns = (uintptr_t)im->bytes;
	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uintptr_t)&ksym;
	info.nr_jited_func_lens = 1;
	info.jited_func_lens = (uintptr_t)&flen;
	ilen = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		die("prog info");
	im->addr = ksym;
	im->len = flen;
	textstore_hash(im->bytes, im->len, im->hash);
}

int main(int argc, char **argv)
{
	static struct image ver[NVER];
	uint64_t from[NVER], to[NVER];
	struct textstore_writer *tw;
	char path[4096];
	FILE *orc;
	int map, t1, t2, caller, key = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: ptcap_pokeload OUTDIR\n");
		return 2;
	}
	if (mkdir(argv[1], 0700) && errno != EEXIST)
		die(argv[1]);
	snprintf(path, sizeof(path), "%s/oracle.tsv", argv[1]);
	if (!(orc = fopen(path, "w")))
		die(path);
	map = bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "poke_jt", 4, 4, 1, NULL);
	if (map < 0)
		die("prog array");
	t1 = load_target("poke_t1", 1);
	t2 = load_target("poke_t2", 2);
	caller = load_caller(map);
	from[0] = now_ns();
	for (int v = 0; v < NVER; v++) {
		uint64_t u0, u1;
		int rc;

		sleep_ms(LIVE_MS / 2);
		read_image(caller, &ver[v]);
		if (v == 0)
			fprintf(orc, "caller\t%u\t0x%llx\t%u\t%s\n", ver[0].id,
				(unsigned long long)ver[0].addr, ver[0].len, ver[0].tag);
		fprintf(orc, "seen\t%llu\t%s\n", (unsigned long long)now_ns(), ver[v].hash);
		sleep_ms(LIVE_MS / 2);
		if (v + 1 == NVER) {
			to[v] = now_ns();
			break;
		}
		u0 = now_ns();
		if (v == 0)
			rc = bpf_map_update_elem(map, &key, &t1, BPF_ANY);
		else if (v == 1)
			rc = bpf_map_update_elem(map, &key, &t2, BPF_ANY);
		else
			rc = bpf_map_delete_elem(map, &key);
		u1 = from[v + 1] = to[v] = now_ns();
		if (rc)
			die("prog array update");
		fprintf(orc, "update\t%llu\t%llu\t%s\n", (unsigned long long)u0,
			(unsigned long long)u1, v == 0 ? "set-t1" : v == 1 ? "set-t2" : "delete");
	}
	snprintf(path, sizeof(path), "%s/text", argv[1]);
	if (textstore_writer_open(path, &tw))
		die(path);
	for (int v = 0; v < NVER; v++) {
		struct textstore_entry e;

		memset(&e, 0, sizeof(e));
		snprintf(e.kind, sizeof(e.kind), "bpf");
		e.start = ver[v].addr;
		e.len = ver[v].len;
		e.valid_from = from[v];
		e.valid_to = to[v];
		e.pid = -1;
		snprintf(e.source, sizeof(e.source), "prog-info");
		snprintf(e.tag, sizeof(e.tag), "%s", ver[v].tag);
		e.prog_id = ver[v].id;
		snprintf(e.build_id, sizeof(e.build_id), "-");
		snprintf(e.name, sizeof(e.name), "bpf_prog_%s_poke_caller", ver[v].tag);
		if (textstore_writer_add(tw, &e, ver[v].bytes))
			die("text store row");
	}
	if (textstore_writer_close(tw) || fclose(orc))
		die("writing");
	close(caller);
	close(t1);
	close(t2);
	close(map);
	return 0;
}
