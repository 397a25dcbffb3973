/* SPDX-License-Identifier: MIT */
/*
 * test_jitconv DIR - ptsynth's jitdump clock conversion and its check.
 *
 * A hand-made jitdump (two loads of different code at one address) is put
 * on a made-up simulated clock; the copy's times must be the interpolated
 * ones, and the check must accept executions that a decoder would take
 * from the right load and flag those it would not (a load time after the
 * code already ran), so a too-coarse mapping cannot pass unnoticed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitconv.h"

static int fails;

#define CHECK(c, ...) do { if (!(c)) { fails++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); putchar('\n'); } } while (0)

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put64(FILE *f, uint64_t v) { put(f, &v, 8); }

static void load(FILE *f, uint64_t ts, uint64_t addr, const char *name,
		 const uint8_t *code, size_t n, uint64_t idx)
{
	put32(f, 0);
	put32(f, (uint32_t)(16 + 40 + strlen(name) + 1 + n));
	put64(f, ts);
	put32(f, 42);
	put32(f, 42);
	put64(f, addr);
	put64(f, addr);
	put64(f, n);
	put64(f, idx);
	put(f, name, strlen(name) + 1);
	put(f, code, n);
}

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int main(int argc, char **argv)
{
	static const uint8_t v1[] = { 0x89, 0xf8, 0xc3 };         /* mov eax, edi; ret */
	static const uint8_t v2[] = { 0x8d, 0x47, 0x05, 0xc3 };   /* lea eax, [rdi+5]; ret */
	char in[4096], out[4096], err[512];
	struct jitconv_report r;
	struct jitconv *jc;
	uint8_t buf[512];
	size_t n;
	FILE *f;
	int rc;

	if (argc != 2)
		return 2;
	snprintf(in, sizeof(in), "mkdir -p %s", argv[1]);
	if (system(in))
		return 1;
	snprintf(in, sizeof(in), "%s/jit-42.dump", argv[1]);
	snprintf(out, sizeof(out), "%s/jit-42.copy", argv[1]);
	f = fopen(in, "wb");
	if (!f)
		return 1;
	put32(f, 0x4A695444); put32(f, 1); put32(f, 40); put32(f, 62);
	put32(f, 0); put32(f, 42); put64(f, 1500); put64(f, 0);
	load(f, 2500, 0x1000, "f[v1]", v1, sizeof(v1), 0);   /* mono 2500 */
	load(f, 5000, 0x1000, "f[v2]", v2, sizeof(v2), 1);   /* mono 5000 */
	put32(f, 3); put32(f, 16); put64(f, 5500);
	fclose(f);

	/* Made-up clocks: mono 1000..3000 -> perf 10000..10200,
	 * 3000..6000 -> 10200..10500 (different rates in between). */
	jc = jitconv_new();
	CHECK(jc && !jitconv_pair(jc, 1000, 10000) && !jitconv_pair(jc, 3000, 10200) &&
	      !jitconv_pair(jc, 2999, 10300) /* not later: dropped */ &&
	      !jitconv_pair(jc, 6000, 10500), "pairs");
	rc = jitconv_copy_dump(jc, in, out, err, sizeof(err));
	CHECK(rc == 2, "copy: %d %s", rc, err);
	f = fopen(out, "rb");
	n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	CHECK(n == 40 + 65 + 66 + 16, "copy size %zu", n);
	CHECK(rd64(buf + 24) == 10050, "header time %llu", (unsigned long long)rd64(buf + 24));
	CHECK(rd64(buf + 40 + 8) == 10150, "load 1 time %llu",
	      (unsigned long long)rd64(buf + 48));
	CHECK(rd64(buf + 40 + 65 + 8) == 10400, "load 2 time %llu",
	      (unsigned long long)rd64(buf + 40 + 65 + 8));
	CHECK(jitconv_covers(jc, 42, 0x1000, 1) && !jitconv_covers(jc, 42, 0x1004, 16) &&
	      !jitconv_covers(jc, 43, 0x1000, 16), "covers");

	/* Right: v1 looked up in [10160, 10390], v2 from 10401 on. */
	CHECK(!jitconv_exec(jc, 42, 0x1000, v1, 2, 10160, 10170) &&
	      !jitconv_exec(jc, 42, 0x1002, v1 + 2, 1, 10171, 10172) &&
	      !jitconv_exec(jc, 42, 0x1000, v1, 2, 10380, 10390) &&
	      !jitconv_exec(jc, 42, 0x1000, v2, 3, 10401, 10402) &&
	      !jitconv_exec(jc, 42, 0x2000, v2, 3, 10401, 10402), "exec");
	jitconv_check(jc, &r);
	CHECK(r.loads == 2 && r.insns == 5 && r.insns_ok == 4 && r.insns_wrong == 0 &&
	      r.insns_unreported == 1 && r.min_margin == 1 && r.outside == 0,
	      "check right: loads %zu insns %llu ok %llu wrong %llu unrep %llu margin %llu",
	      r.loads, (unsigned long long)r.insns, (unsigned long long)r.insns_ok,
	      (unsigned long long)r.insns_wrong, (unsigned long long)r.insns_unreported,
	      (unsigned long long)r.min_margin);

	/* Wrong: v2's code looked up from the last TSC at 10395, before its
	 * load time 10400 (a decoder there would use v1's bytes). */
	CHECK(!jitconv_exec(jc, 42, 0x1003, v2 + 3, 1, 10395, 10405), "exec 2");
	jitconv_check(jc, &r);
	CHECK(r.insns_wrong == 1 && strstr(r.problem, "0x1003"),
	      "check wrong: %llu \"%s\"", (unsigned long long)r.insns_wrong, r.problem);
	/* v1's bytes run after v2 was loaded (the check merges the runs of
	 * one instruction: all three count as wrong) */
	CHECK(!jitconv_exec(jc, 42, 0x1000, v1, 2, 10450, 10460), "exec 3");
	jitconv_check(jc, &r);
	CHECK(r.insns_wrong == 4, "check wrong 2: %llu", (unsigned long long)r.insns_wrong);
	CHECK(jitconv_mono_to_perf(jc, 7000) == 10500, "clamp");
	jitconv_check(jc, &r);
	CHECK(r.outside == 1, "outside %zu", r.outside);
	jitconv_free(jc);

	/* Bad input: not a jitdump, a dump with TSC times. */
	jc = jitconv_new();
	jitconv_pair(jc, 1, 1);
	f = fopen(in, "wb");
	put32(f, 0x4A695444); put32(f, 1); put32(f, 40); put32(f, 62);
	put32(f, 0); put32(f, 42); put64(f, 1500); put64(f, 1);
	fclose(f);
	rc = jitconv_copy_dump(jc, in, out, err, sizeof(err));
	CHECK(rc < 0 && strstr(err, "TSC"), "TSC dump: %d %s", rc, err);
	f = fopen(in, "wb");
	put32(f, 0x12345678);
	fclose(f);
	rc = jitconv_copy_dump(jc, in, out, err, sizeof(err));
	CHECK(rc < 0 && strstr(err, "not a jitdump"), "bad magic: %d %s", rc, err);
	jitconv_free(jc);

	printf("%s: %d failure(s)\n", fails ? "FAIL" : "OK", fails);
	return fails ? 1 : 0;
}
