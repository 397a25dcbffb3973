/* SPDX-License-Identifier: MIT */
/*
 * benchgen - writes the benchmark traces: a walk through generated x86-64
 * code with seeded random branch outcomes, turned into Intel PT packets by
 * ptsynth's generator (ptgen), as a capture directory that ptdecode and
 * perf read (perf.data; the code as a raw file perf maps at its address)
 * plus the raw trace for libipt's own decoders.
 *
 *   benchgen [--mtc] [--cyc] KIND INSNS OUT.ptd [SEED]
 *
 * KIND: tnt   conditional branches back to back (TNT-dense loop)
 *       call  calls and returns two deep (return compression)
 *       ind   indirect jumps through 16 targets (TIP-heavy)
 * Timing: TSC packets always; --mtc adds MTC (+TMA) with perf's default
 * mtc_period 3, --cyc adds CYC packets (cycle-accurate mode, perf's
 * cyc=1); together they are what perf records with cyc=1.
 * Writes OUT.ptd/{perf.data,code.bin,trace.bin,info}.
 */
#include "disasm.h"
#include "ptcapdir.h"
#include "ptgen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BASE 0x400000ull
#define PID 4242

struct out {
	struct perfwrite *pw;
	FILE *raw;
	uint64_t aux_offset;
};

static void die(const char *what)
{
	fprintf(stderr, "benchgen: %s\n", what);
	exit(1);
}

static int flush(void *ctx, const uint8_t *d, size_t n, uint64_t t0, uint64_t t1)
{
	struct out *o = ctx;

	if (fwrite(d, 1, n, o->raw) != n)
		return -1;
	return ptcap_piece(o->pw, d, n, t0, t1, PID, &o->aux_offset);
}

static void put_rel32(uint8_t *p, int64_t v)
{
	int32_t r = (int32_t)v;

	memcpy(p, &r, 4);
}

/* Emits "test al, 1; jz +1; nop": one conditional branch whose outcome the
 * walk chooses. */
static size_t cond(uint8_t *c, size_t n)
{
	static const uint8_t s[] = { 0xa8, 0x01, 0x74, 0x01, 0x90 };

	memcpy(c + n, s, sizeof(s));
	return n + sizeof(s);
}

/* Builds the code; indirect targets go to targets[]. */
static size_t make_code(const char *kind, uint8_t *c, uint64_t *targets, int *ntargets)
{
	size_t n = 0;

	*ntargets = 0;
	if (!strcmp(kind, "tnt")) {
		for (int i = 0; i < 32; i++)
			n = cond(c, n);
		c[n] = 0xe9;                                /* jmp top */
		put_rel32(c + n + 1, -(int64_t)(n + 5));
		return n + 5;
	}
	if (!strcmp(kind, "call")) {
		/* top: call f1; cond; jmp top
		 * f1:  push rbp; call f2; cond; pop rbp; ret
		 * f2:  cond; cond; ret */
		size_t c1, c2, f1, f2;

		c[n] = 0xe8; c1 = n + 1; n += 5;
		n = cond(c, n);
		c[n] = 0xe9; put_rel32(c + n + 1, -(int64_t)(n + 5)); n += 5;
		f1 = n;
		c[n++] = 0x55;
		c[n] = 0xe8; c2 = n + 1; n += 5;
		n = cond(c, n);
		c[n++] = 0x5d;
		c[n++] = 0xc3;
		f2 = n;
		n = cond(c, n);
		n = cond(c, n);
		c[n++] = 0xc3;
		put_rel32(c + c1, (int64_t)f1 - (int64_t)(c1 + 4));
		put_rel32(c + c2, (int64_t)f2 - (int64_t)(c2 + 4));
		return n;
	}
	if (!strcmp(kind, "ind")) {
		/* top: jmp rax; 16 targets: cond; jmp top */
		c[n++] = 0xff;
		c[n++] = 0xe0;
		for (int i = 0; i < 16; i++) {
			targets[(*ntargets)++] = BASE + n;
			n = cond(c, n);
			c[n] = 0xe9;
			put_rel32(c + n + 1, -(int64_t)(n + 5));
			n += 5;
		}
		return n;
	}
	die("KIND must be tnt, call or ind");
	return 0;
}

static FILE *create(const char *dir, const char *name, const char *mode)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, mode);
	if (!f)
		die(strerror(errno));
	return f;
}

int main(int argc, char **argv)
{
	struct ptcap_opts po = { .kernel = 0, .tsc = 1, .retcomp = 1, PTCAP_DEFAULTS };
	struct ptgen_opts go = { .psb_period = 4096, .retcomp = 1, .long_tnt = 1,
				 .tsc = 1, .cycles_per_insn = 1, .tsc0 = 0x10000000ull,
				 .cbr = 32 };
	struct perfwrite_sid sid = { .pid = PID, .tid = PID, .id = PTCAP_DUMMY_ID };
	struct disasm_insn_info *info;
	uint8_t code[4096] = { 0 };
	uint64_t targets[16], stack[64], ninsn, seed, ip, x;
	char path[4096], err[512], codepath[4200];
	struct ptgen *g;
	struct out o = { 0 };
	struct disasm *d;
	int ntargets, sp = 0;
	size_t n;
	FILE *f;

	for (; argc > 1 && argv[1][0] == '-'; argc--, argv++) {
		if (!strcmp(argv[1], "--mtc")) {
			po.mtc = go.mtc = 1;
			po.mtc_period = go.mtc_freq = 3;
		} else if (!strcmp(argv[1], "--cyc")) {
			po.cyc = go.cyc = 1;
		} else {
			die("unknown option (--mtc, --cyc)");
		}
	}
	/* the crystal clock ratio ptcap_begin writes to AUXTRACE_INFO */
	go.ctc_n = 2;
	go.ctc_d = 1;
	if (argc < 4)
		die("usage: benchgen [--mtc] [--cyc] tnt|call|ind INSNS OUT.ptd [SEED]");
	ninsn = strtoull(argv[2], NULL, 0);
	seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
	x = seed * 0x9e3779b97f4a7c15ull | 1;
	if (mkdir(argv[3], 0700) && errno != EEXIST)
		die("cannot create the output directory");
	n = make_code(argv[1], code, targets, &ntargets);
	f = create(argv[3], "code.bin", "wb");
	if (fwrite(code, 1, n, f) != n || fclose(f))
		die("cannot write code.bin");
	if (!realpath(argv[3], path))
		die("realpath");
	snprintf(codepath, sizeof(codepath), "%s/code.bin", path);

	/* classify each instruction once */
	d = disasm_new(DISASM_X86_64, 0, err, sizeof(err));
	info = calloc(n, sizeof(*info));
	if (!d || !info)
		die("cannot set up capstone");
	for (size_t off = 0; off < n;) {
		int len = disasm_insn_info(d, code + off, n - off, BASE + off, &info[off]);

		if (len <= 0)
			die("generated code does not disassemble");
		off += (size_t)len;
	}

	snprintf(path, sizeof(path), "%s/perf.data", argv[3]);
	if (perfwrite_open(&o.pw, path, err, sizeof(err)) || ptcap_begin(o.pw, &po))
		die("cannot write perf.data");
	o.raw = create(argv[3], "trace.bin", "wb");
	sid.time = ptcap_perf_time(go.tsc0);
	perfwrite_comm(o.pw, &sid, PID, PID, argv[1], 1);
	perfwrite_mmap2(o.pw, &sid, PD_MISC_USER, PID, PID, BASE, 4096, 0, NULL, 0,
			0, 0, 0, 0, 5 /* r-x */, 2 /* private */, codepath);
	sid.id = PTCAP_PT_ID;
	perfwrite_itrace_start(o.pw, &sid, PID, PID);
	if (ptgen_new(&g, &go, flush, &o) < 0)
		die("cannot set up the packet generator");

	ip = BASE;
	ptgen_enable(g, ip);
	for (uint64_t i = 0; i < ninsn; i++) {
		const struct disasm_insn_info *in = &info[ip - BASE];
		struct ptgen_insn pi = { .len = (uint8_t)in->len, .target = in->target };
		uint64_t next = ip + in->len;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (in->kind) {
		case DISASM_COND_JUMP:
			pi.cls = PTG_COND;
			if (x & 1)
				next = in->target;
			break;
		case DISASM_JUMP:
			pi.cls = PTG_JMP_DIRECT;
			next = in->target;
			break;
		case DISASM_CALL:
			pi.cls = PTG_CALL_DIRECT;
			stack[sp++ & 63] = ip + in->len;
			next = in->target;
			break;
		case DISASM_RETURN:
			pi.cls = PTG_RET;
			next = stack[--sp & 63];
			break;
		case DISASM_IND_JUMP:
			pi.cls = PTG_JMP_INDIRECT;
			next = targets[x % (uint64_t)ntargets];
			break;
		default:
			pi.cls = PTG_OTHER;
			break;
		}
		if (ptgen_insn(g, ip, &pi, next) < 0)
			die("packet generation failed");
		ip = next;
	}
	if (ptgen_finish(g) < 0 || ptcap_features(o.pw, "6.1.0-benchgen", argc, argv) ||
	    perfwrite_close(o.pw, err, sizeof(err)) || fclose(o.raw))
		die("cannot finish the output");
	f = create(argv[3], "info", "w");
	fprintf(f, "tool=benchgen\nkind=%s\ninstructions=%llu\nseed=%llu\nmtc=%d\ncyc=%d\n",
		argv[1], (unsigned long long)ninsn, (unsigned long long)seed, go.mtc, go.cyc);
	fclose(f);
	ptgen_free(g);
	disasm_free(d);
	free(info);
	return 0;
}
