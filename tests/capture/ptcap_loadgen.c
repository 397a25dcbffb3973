/* SPDX-License-Identifier: MIT */
/*
 * ptcap_loadgen - loads and immediately closes N tiny BPF programs (socket
 * filters written as raw instructions), so that each lives only microseconds.
 * Every program has a distinct constant, hence a distinct tag; every third
 * one calls a bpf-to-bpf subprogram (two JIT images); every tenth one is
 * long enough to need several fence chunks.
 *
 * For the test's oracle it writes, while it still holds each fd, what the
 * kernel says it loaded (bpf_obj_get_info_by_fd: id, tag, image addresses,
 * lengths and JIT bytes) and CLOCK_MONOTONIC times around load and close:
 *
 *   # ptcap-loadgen-oracle 1
 *   cpu <n>           (with --pin only)
 *   prog <idx> <prog_id> <tag> <t_before_load> <t_after_load> <t_after_close> <nimg>
 *   img <idx> <i> <0xaddr> <len> <hex bytes>
 *
 * Usage: ptcap_loadgen [--pin] [--stall-parent A:B] N ORACLE_FILE [RATE]
 * (exit 77: BPF not permitted)
 * RATE: programs per second (default: as fast as possible).
 * --stall-parent A:B: the parent (the recorder reading the sideband) is
 * stopped (SIGSTOP) from program A until program B, so that its rings
 * surely overflow: a test of loss reporting that does not depend on
 * timing.  B >= N resumes it when the loader is done.
 * --pin: stay on the CPU we start on, so that every KSYMBOL REGISTER and
 * PROG_LOAD goes into that CPU's sideband ring (a check can then tell
 * which ring's losses cover a missing one).
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i = { .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
	return i;
}

static pid_t stalled; /* parent stopped by us: resume it on any exit */

static void resume_parent(void)
{
	if (stalled > 1)
		kill(stalled, SIGCONT);
	stalled = 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Builds program idx into prog[]; returns the instruction count. */
static int build(int idx, struct bpf_insn *p)
{
	int n = 0, extra = idx % 10 == 0 ? 300 : idx % 7; /* 300: several fence chunks */

	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 0x10000 + idx);
	for (int i = 0; i < extra; i++)  /* r1 += i: makes the image longer */
		p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, i + 1);
	if (idx % 3 == 0) {
		/* call subprog (pc + 1 + imm), return its r0 */
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1);
		p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
		p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_0, BPF_REG_1, 0, 0);
		p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_0, 0, 0, idx);
		p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	} else {
		p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_0, BPF_REG_1, 0, 0);
		p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	}
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t jited[1 << 16];
	struct bpf_insn prog[512];
	uint64_t ksyms[8];
	uint32_t lens[8];
	char log[4096];
	FILE *out;
	int n, stall_from = -1, stall_to = -1, pin = -1;
	double rate;
	uint64_t start;

	for (;;) {
		if (argc > 1 && !strcmp(argv[1], "--pin")) {
			cpu_set_t set;

			pin = sched_getcpu();
			CPU_ZERO(&set);
			CPU_SET(pin, &set);
			if (pin < 0 || sched_setaffinity(0, sizeof(set), &set)) {
				perror("ptcap_loadgen: --pin");
				return 1;
			}
			argc--;
			argv++;
		} else if (argc > 2 && !strcmp(argv[1], "--stall-parent")) {
			if (sscanf(argv[2], "%d:%d", &stall_from, &stall_to) != 2 ||
			    stall_from < 0 || stall_to <= stall_from) {
				fprintf(stderr, "ptcap_loadgen: --stall-parent A:B with 0 <= A < B\n");
				return 2;
			}
			argc -= 2;
			argv += 2;
		} else {
			break;
		}
	}
	if ((argc != 3 && argc != 4) || (n = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: ptcap_loadgen [--pin] [--stall-parent A:B] N ORACLE_FILE "
			"[RATE]\n");
		return 2;
	}
	rate = argc > 3 ? atof(argv[3]) : 0;
	atexit(resume_parent);
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	fprintf(out, "# ptcap-loadgen-oracle 1\n");
	if (pin >= 0)
		fprintf(out, "cpu %d\n", pin);
	start = now_ns();
	for (int idx = 0; idx < n; idx++) {
		LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = log, .log_size = sizeof(log));
		struct bpf_prog_info info;
		uint32_t ilen = sizeof(info);
		int cnt = build(idx, prog), fd;
		uint64_t t0, t1, t2;
		char name[16];

		if (rate > 0) {
			/* paced: program idx is due at start + idx / rate */
			uint64_t due = start + (uint64_t)(idx / rate * 1e9), t = now_ns();

			if (due > t) {
				struct timespec d = { (time_t)((due - t) / 1000000000u),
						      (long)((due - t) % 1000000000u) };

				nanosleep(&d, NULL);
			}
		}
		if (idx == stall_from && getppid() > 1) {
			stalled = getppid();
			kill(stalled, SIGSTOP);
		} else if (idx == stall_to) {
			resume_parent();
		}
		snprintf(name, sizeof(name), "ldg%d", idx);
		log[0] = 0;
		t0 = now_ns();
		fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, name, "GPL", prog, cnt, &opts);
		t1 = now_ns();
		if (fd < 0) {
			int e = errno;

			fprintf(stderr, "ptcap_loadgen: program %d: bpf_prog_load: %s\n%s\n",
				idx, strerror(e), log);
			return e == EPERM || e == ENOSYS ? 77 : 1; /* 77: no BPF here */
		}
		memset(&info, 0, sizeof(info));
		info.jited_prog_insns = (uintptr_t)jited;
		info.jited_prog_len = sizeof(jited);
		info.jited_ksyms = (uintptr_t)ksyms;
		info.nr_jited_ksyms = 8;
		info.jited_func_lens = (uintptr_t)lens;
		info.nr_jited_func_lens = 8;
		if (bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
			fprintf(stderr, "ptcap_loadgen: get info: %s\n", strerror(errno));
			return 1;
		}
		close(fd);
		t2 = now_ns();
		if (info.nr_jited_ksyms > 8 || info.jited_prog_len > sizeof(jited)) {
			fprintf(stderr, "ptcap_loadgen: program %d too large\n", idx);
			return 1;
		}
		fprintf(out, "prog %d %u ", idx, info.id);
		for (int i = 0; i < 8; i++)
			fprintf(out, "%02x", info.tag[i]);
		fprintf(out, " %" PRIu64 " %" PRIu64 " %" PRIu64 " %u\n", t0, t1, t2, info.nr_jited_ksyms);
		for (uint32_t i = 0, off = 0; i < info.nr_jited_ksyms; off += lens[i], i++) {
			fprintf(out, "img %d %u %#" PRIx64 " %u ", idx, i, ksyms[i], lens[i]);
			for (uint32_t b = 0; b < lens[i] && off + b < info.jited_prog_len; b++)
				fprintf(out, "%02x", jited[off + b]);
			fputc('\n', out);
		}
	}
	return fclose(out) ? 1 : 0;
}
