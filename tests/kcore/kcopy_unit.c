/* SPDX-License-Identifier: MIT */
/*
 * kcopy_unit: ptcapture's --kcore copier (capture/ptcapture/kcopy.c) on a
 * kcore directory made here, for the records a live test cannot produce on
 * this machine (out-of-line KSYMBOLs, TEXT_POKE): which ranges become text
 * store rows, with which windows and bytes, and which are counted as not
 * copied.  The expected rows are written out below from the rules in
 * kcopy.h; the text store is read back with format/textstore.c.
 *
 *   kcopy_unit DIR
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kcopy.h"
#include "kcore.h"
#include "textmatch.h"
#include "textstore.h"

#define KTEXT 0xffffffff81000000ull
#define MOD   0xffffffffc0100000ull
#define PROG  0xffffffffc0000000ull
#define TRAMP 0xffffffffc0002000ull
#define POKE  (KTEXT + 0x10)

static int failures;
static uint64_t base;   /* record times: after "now", when the copies are made */
#define T(x) (base + (x))

/* An hour from now, before main's tables are built from it. */
__attribute__((constructor)) static void set_base(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	base = ((uint64_t)ts.tv_sec + 3600) * 1000000000ull;
}

#define CHECK(c, ...) do { if (!(c)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); failures++; } } while (0)

static uint8_t ktext[64], mod[32], prog[16], tramp[24];

static void put(const char *dir, const char *name, const char *text)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		printf("FAIL: cannot write %s\n", path);
		exit(1);
	}
}

struct want {
	const char *kind, *name;
	uint64_t start, len, from, to;
	const uint8_t *bytes;
};

int main(int argc, char **argv)
{
	const struct kcore_range r[] = {
		{ KTEXT, ktext, sizeof(ktext) }, { MOD, mod, sizeof(mod) },
		{ PROG, prog, sizeof(prog) }, { TRAMP, tramp, sizeof(tramp) },
	};
	const uint8_t poke_same[2] = { 0x10 * 5 + 1, 0x11 * 5 + 1 };
	const uint8_t poke_other[2] = { 0xcc, 0xcc };
	const struct want want[] = {
		{ "kcore", "[kernel.kallsyms]", KTEXT, 48, 0, TEXTSTORE_OPEN_END, ktext },
		{ "kcore", "[mod_in]", MOD, 32, 0, TEXTSTORE_OPEN_END, mod },
		{ "kcore", "bpf_prog_aa_start", PROG, 16, 0, T(500), prog },
		{ "trampoline", "bpf_trampoline_1", TRAMP, 24, T(100), T(300), tramp },
		{ "poke", "text_poke", POKE, 2, T(150), TEXTSTORE_OPEN_END, poke_same },
	};
	char dir[4096], path[4200], err[512];
	struct textmatch_counts tc;
	struct kcopy_counts n;
	struct textstore *ts;
	struct textmatch *tm;
	struct kcopy *kc;

	if (argc != 2)
		return 2;
	snprintf(dir, sizeof(dir), "%s/kcopy", argv[1]);
	mkdir(dir, 0700);
	for (size_t i = 0; i < sizeof(ktext); i++)
		ktext[i] = (uint8_t)(i * 5 + 1);
	memset(mod, 0x22, sizeof(mod));
	memset(prog, 0x33, sizeof(prog));
	memset(tramp, 0x44, sizeof(tramp));
	snprintf(path, sizeof(path), "%s/kcore", dir);
	if (kcore_write(path, r, 4, err, sizeof(err)))
		return printf("FAIL: %s\n", err), 1;
	/* the text ends before the copy's segment does */
	put(dir, "kallsyms", "ffffffff81000000 T _stext\nffffffff81000030 T _etext\n");
	put(dir, "modules", "mod_in 32 0 - Live 0xffffffffc0100000\n"
	    "mod_out 64 0 - Live 0xffffffffc0200000\n");

	kc = kcopy_open(dir, err, sizeof(err));
	CHECK(kc && kcopy_readable(kc), "open: %s", err);
	if (failures)
		return 1;
	CHECK(kcopy_start(kc) == 0, "start");
	/* the state at start (time 0), then records as they come */
	kcopy_ksymbol(kc, 0, PROG, 16, 1, 0, "bpf_prog_aa_start");
	kcopy_ksymbol(kc, 0, 0xffffffffc0003000ull, 8, 1, 0, "bpf_prog_bb_notinfile");
	kcopy_ksymbol(kc, T(100), TRAMP, 24, 1, 0, "bpf_trampoline_1");
	kcopy_ksymbol(kc, T(120), PROG + 0x100, 8, 1, 0, "bpf_prog_cc_late");
	kcopy_text_poke(kc, T(150), POKE, poke_same, 2);
	kcopy_text_poke(kc, T(160), POKE + 4, poke_other, 2);
	/* read late: unregistered (a second ago) before it was copied (now) */
	kcopy_ksymbol(kc, 2, TRAMP + 8, 8, 1, 0, "bpf_trampoline_gone");
	kcopy_ksymbol(kc, 3, TRAMP + 8, 8, 1, 1, "bpf_trampoline_gone");
	kcopy_ksymbol(kc, T(300), TRAMP, 24, 1, 1, "bpf_trampoline_1");
	kcopy_ksymbol(kc, T(500), PROG, 16, 1, 1, "bpf_prog_aa_start");
	tm = textmatch_new();
	CHECK(kcopy_finish(kc, tm) == 0, "finish");
	kcopy_get_counts(kc, &n);
	/* mod_out and bpf_prog_bb_notinfile are not in the file, and
	 * bpf_trampoline_gone was freed before the copy; a later bpf_prog_ is
	 * prog info's and the fence's, not counted */
	CHECK(n.ranges == 5 && n.missed == 3 && n.poke_changed == 1 &&
	      n.bytes == 48 + 32 + 16 + 24 + 2, "counts: %" PRIu64 " copied (%" PRIu64
	      " bytes), %" PRIu64 " missed, %" PRIu64 " pokes changed", n.ranges, n.bytes,
	      n.missed, n.poke_changed);
	snprintf(path, sizeof(path), "%s/text", dir);
	CHECK(textmatch_write(tm, path, &tc, err, sizeof(err)) == 0, "write: %s", err);
	CHECK(textstore_open(path, &ts, err, sizeof(err)) == 0, "read: %s", err);
	if (failures)
		return 1;
	CHECK(textstore_count(ts) == 5, "%zu rows", textstore_count(ts));
	for (size_t i = 0; i < 5 && i < textstore_count(ts); i++) {
		const struct textstore_entry *e = textstore_get(ts, i);
		const uint8_t *b = NULL;

		CHECK(!strcmp(e->kind, want[i].kind) && !strcmp(e->name, want[i].name) &&
		      e->start == want[i].start && e->len == want[i].len &&
		      e->valid_from == want[i].from && e->valid_to == want[i].to &&
		      !strcmp(e->source, "kcore"), "row %zu: %s %s %#" PRIx64 " %" PRIu64
		      " [%" PRIu64 ", %" PRIu64 ") %s", i, e->kind, e->name, e->start, e->len,
		      e->valid_from, e->valid_to, e->source);
		CHECK(textstore_bytes(ts, i, &b, err, sizeof(err)) == 0 &&
		      !memcmp(b, want[i].bytes, want[i].len), "row %zu bytes", i);
	}
	textstore_close(ts);
	textmatch_free(tm);
	kcopy_free(kc);

	/* an image re-copied while it lived (jitpoll): its versions and
	 * uncertain windows stay, the copy of its whole life is dropped */
	{
		static const uint8_t tag[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
		const char *name = "bpf_prog_0102030405060708_tail";
		uint8_t prog2[16];
		size_t idx, nk = 0;

		memset(prog2, 0x55, sizeof(prog2));
		tm = textmatch_new();
		kc = kcopy_open(dir, err, sizeof(err));
		textmatch_ksymbol(tm, 0, PROG, 16, 1, 0, name);
		textmatch_prog_load(tm, 0, 7, tag);
		idx = textmatch_ncopies(tm);
		textmatch_copy(tm, TM_PROG_INFO, 0, PROG, 16, tag, 7, 7, 0, 1, prog);
		textmatch_seen(tm, idx, 50);
		idx = textmatch_ncopies(tm);
		textmatch_copy(tm, TM_RECOPY, 100, PROG, 16, tag, 7, 7, 0, 1, prog2);
		textmatch_seen(tm, idx, 200);
		CHECK(kc && kcopy_start(kc) == 0 &&
		      kcopy_ksymbol(kc, 0, PROG, 16, 1, 0, name) == 0 &&
		      kcopy_finish(kc, tm) == 0, "versioned: copy");
		snprintf(path, sizeof(path), "%s/text2", dir);
		CHECK(textmatch_write(tm, path, &tc, err, sizeof(err)) == 0, "write: %s", err);
		CHECK(tc.rows_versioned_dropped == 1 && tc.tracked == 1,
		      "versioned: %" PRIu64 " kcore rows dropped, %" PRIu64 " tracked",
		      tc.rows_versioned_dropped, tc.tracked);
		CHECK(textstore_open(path, &ts, err, sizeof(err)) == 0, "read: %s", err);
		for (size_t i = 0; !failures && i < textstore_count(ts); i++) {
			const struct textstore_entry *e = textstore_get(ts, i);

			if (!strcmp(e->source, "kcore")) {
				nk++;
				CHECK(e->start != PROG, "a kcore row over the versioned image");
			}
		}
		CHECK(nk == 2, "versioned: %zu kcore rows (kernel text, mod_in)", nk);
		if (!failures)
			textstore_close(ts);
		textmatch_free(tm);
		kcopy_free(kc);
	}

	/* unreadable: everything it would copy is counted */
	snprintf(path, sizeof(path), "%s/nothere", argv[1]);
	kc = kcopy_open(path, err, sizeof(err));
	CHECK(kc && !kcopy_readable(kc) && strstr(err, "cannot open"), "unreadable: %s", err);
	if (kc) {
		kcopy_start(kc);   /* no kallsyms either: the kernel text is missed */
		kcopy_ksymbol(kc, T(100), TRAMP, 24, 1, 0, "bpf_trampoline_1");
		kcopy_text_poke(kc, T(150), POKE, poke_same, 2);
		kcopy_get_counts(kc, &n);
		CHECK(n.ranges == 0 && n.missed == 3, "unreadable: %" PRIu64 " copied, %"
		      PRIu64 " missed", n.ranges, n.missed);
		kcopy_free(kc);
	}
	if (failures)
		return 1;
	printf("ok: 5 rows with their windows and bytes, 3 ranges missed (one "
	       "freed before the copy), 1 poke "
	       "changed; a versioned image keeps its versions; unreadable kcore: "
	       "3 missed\n");
	return 0;
}
