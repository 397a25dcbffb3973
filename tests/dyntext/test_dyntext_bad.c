/* SPDX-License-Identifier: MIT */
/*
 * test_dyntext_bad WORKDIR: dyntext on hand-made inputs whose meaning is
 * known by construction: a jitdump with every record type (and the same
 * file cut at every byte, and with broken fields), perf maps, bpf/<id>.tsv
 * files and a capture directory where two BPF programs share an address at
 * different times.  Bad input must give a clear error, never a crash; good
 * input must give exactly the constructed names, bytes, lines and times.
 */
#include "dyntext.h"
#include "imgstore.h"
#include "symtab.h"
#include "textstore.h"
#include "ptdecode.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fails, checks;
static const char *work;

#define CHECK(cond, ...) do { checks++; if (!(cond)) { fails++; \
	printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
	printf("\n"); } } while (0)

/* ---- a jitdump builder ---------------------------------------------- */

struct jb {
	uint8_t d[8192];
	size_t n;
	size_t bounds[32];   /* offsets where records end */
	size_t nb;
	int loads_before[32];  /* ranges (loads and moves) before each end */
	int nloads;
};

static void b32(struct jb *b, uint32_t v) { memcpy(b->d + b->n, &v, 4); b->n += 4; }
static void b64(struct jb *b, uint64_t v) { memcpy(b->d + b->n, &v, 8); b->n += 8; }
static void bbytes(struct jb *b, const void *p, size_t n) { memcpy(b->d + b->n, p, n); b->n += n; }

static void header(struct jb *b, uint64_t flags)
{
	b->n = b->nb = 0;
	b->nloads = 0;
	b32(b, 0x4A695444); b32(b, 1); b32(b, 40); b32(b, 62);
	b32(b, 0); b32(b, 77); b64(b, 1000); b64(b, flags);
	b->bounds[b->nb] = b->n;
	b->loads_before[b->nb++] = 0;
}

static size_t start_rec(struct jb *b, uint32_t id, uint64_t ts)
{
	size_t at = b->n;

	b32(b, id); b32(b, 0); b64(b, ts);
	return at;
}

static void end_rec(struct jb *b, size_t at)
{
	uint32_t size = (uint32_t)(b->n - at);

	memcpy(b->d + at + 4, &size, 4);
	b->bounds[b->nb] = b->n;
	b->loads_before[b->nb++] = b->nloads;
}

static void load(struct jb *b, uint64_t ts, uint64_t addr, const char *name,
		 const uint8_t *code, size_t n, uint64_t index)
{
	size_t at = start_rec(b, 0, ts);

	b32(b, 77); b32(b, 78); b64(b, addr); b64(b, addr); b64(b, n); b64(b, index);
	bbytes(b, name, strlen(name) + 1);
	bbytes(b, code, n);
	b->nloads++;
	end_rec(b, at);
}

static const char *write_file(const char *name, const void *d, size_t n)
{
	static char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", work, name);
	f = fopen(path, "wb");
	if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
		printf("cannot write %s\n", path);
		exit(1);
	}
	return path;
}

static const uint8_t code_a[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };  /* 6 */
static const uint8_t code_b[] = { 0x31, 0xc0, 0xc3, 0x90 };              /* 4 */
static const uint8_t code_c[] = { 0xb8, 1, 0, 0, 0, 0xc3 };              /* 6 */

/* The good dump: A at 0x1000 (t=2000) with debug info, B at 0x2000
 * (t=3000), unwinding info, an unknown record type, C at 0x1002 over A
 * (t=5000), B moved to 0x3000 (t=6000), close. */
static void build_good(struct jb *b, uint64_t flags)
{
	size_t at;

	header(b, flags);
	at = start_rec(b, 2, 1500);                 /* debug info for 0x1000 */
	b64(b, 0x1000); b64(b, 2);
	b64(b, 0x1000); b32(b, 7); b32(b, 0); bbytes(b, "a.js", 5);
	b64(b, 0x1004); b32(b, 9); b32(b, 0); bbytes(b, "a.js", 5);
	end_rec(b, at);
	load(b, 2000, 0x1000, "fn_a", code_a, sizeof(code_a), 0);
	load(b, 3000, 0x2000, "fn_b", code_b, sizeof(code_b), 1);
	at = start_rec(b, 4, 3500);                 /* unwinding info, 8 bytes */
	b64(b, 8); b64(b, 0); b64(b, 8); b64(b, 0x1122334455667788ull);
	end_rec(b, at);
	at = start_rec(b, 99, 3600);                /* unknown: skipped */
	b64(b, 42);
	end_rec(b, at);
	load(b, 5000, 0x1002, "fn_c", code_c, sizeof(code_c), 2);
	at = start_rec(b, 1, 6000);                 /* move B to 0x3000 */
	b32(b, 77); b32(b, 78); b64(b, 0x2000); b64(b, 0x2000); b64(b, 0x3000);
	b64(b, sizeof(code_b)); b64(b, 1);
	b->nloads++;                                /* a move adds a range too */
	end_rec(b, at);
	at = start_rec(b, 3, 7000);                 /* close */
	end_rec(b, at);
}

static int read_at(struct imgstore *st, uint64_t addr, uint64_t t, uint8_t *buf,
		   size_t n, struct imgstore_hit *hit)
{
	memset(hit, 0, sizeof(*hit));
	return imgstore_read(st, 77, addr, t, buf, n, hit);
}

static uint64_t double_it(void *ctx, uint64_t ts, int is_tsc)
{
	return 2 * ts + (uint64_t)is_tsc;
}

static void test_jitdump_good(void)
{
	struct jb b;
	char err[512];
	uint8_t buf[16];
	struct imgstore_hit hit;
	struct dyntext_sym sym;
	struct dyntext_line ln;
	const char *path;
	int rc;

	build_good(&b, 0);
	path = write_file("good.dump", b.d, b.n);
	struct imgstore *st = imgstore_new();
	struct symtab *syms = symtab_new();
	struct dyntext *dt = dyntext_new();

	rc = dyntext_load_jitdump(dt, path, st, syms, NULL, err, sizeof(err));
	CHECK(rc == 3, "good dump: %d (%s)", rc, err);
	rc = read_at(st, 0x1000, 2000, buf, 6, &hit);
	CHECK(rc == 6 && !memcmp(buf, code_a, 6) && hit.valid_to == 5000,
	      "A at 2000: rc %d, valid_to %" PRIu64, rc, hit.valid_to);
	rc = read_at(st, 0x1000, 1999, buf, 1, &hit);
	CHECK(rc == IMGSTORE_NOT_MAPPED, "A before its load: %d", rc);
	rc = read_at(st, 0x1002, 5000, buf, 6, &hit);
	CHECK(rc == 6 && !memcmp(buf, code_c, 6), "C at 5000: %d", rc);
	rc = read_at(st, 0x1000, 5000, buf, 1, &hit);
	CHECK(rc == IMGSTORE_NOT_MAPPED, "A's first bytes after C replaced it: %d", rc);
	rc = read_at(st, 0x2000, 5999, buf, 4, &hit);
	CHECK(rc == 4 && !memcmp(buf, code_b, 4) && hit.valid_to == 6000,
	      "B before its move: %d to %" PRIu64, rc, hit.valid_to);
	rc = read_at(st, 0x2000, 6000, buf, 1, &hit);
	CHECK(rc == IMGSTORE_NOT_MAPPED, "B at its old address after the move: %d", rc);
	rc = read_at(st, 0x3000, 6000, buf, 4, &hit);
	CHECK(rc == 4 && !memcmp(buf, code_b, 4) && hit.valid_from == 6000,
	      "B moved: %d", rc);
	rc = dyntext_symbol(dt, 77, 0x3001, 6500, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "fn_b") && sym.code_index == 1,
	      "moved B symbol: %d", rc);
	rc = dyntext_symbol(dt, 77, 0x1003, 4000, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "fn_a"), "fn_a at 4000: %d", rc);
	rc = dyntext_symbol(dt, 77, 0x1003, 5000, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "fn_c"), "fn_c at 5000: %d", rc);
	rc = dyntext_line(dt, 77, 0x1005, 2500, &ln);
	CHECK(rc == 0 && ln.line == 9 && !strcmp(ln.file, "a.js") && ln.addr == 0x1004,
	      "line of A+5: %d %u", rc, rc ? 0 : ln.line);
	rc = dyntext_line(dt, 77, 0x1003, 2500, &ln);
	CHECK(rc == 0 && ln.line == 7, "line of A+3: %d", rc);
	rc = dyntext_line(dt, 77, 0x2000, 3000, &ln);
	CHECK(rc == PTD_ERR_NO_IMAGE, "B has no lines: %d", rc);
	rc = dyntext_symbol(dt, 78, 0x1000, 2500, &sym);
	CHECK(rc == PTD_ERR_NO_IMAGE, "other pid: %d", rc);
	imgstore_free(st);
	symtab_free(syms);
	dyntext_free(dt);

	/* TSC timestamps: refused without a conversion, converted with one */
	build_good(&b, 1);
	path = write_file("tsc.dump", b.d, b.n);
	dt = dyntext_new();
	st = imgstore_new();
	rc = dyntext_load_jitdump(dt, path, st, NULL, NULL, err, sizeof(err));
	CHECK(rc == PTD_ERR_UNSUPPORTED && strstr(err, "TSC"), "TSC without conversion: %d %s",
	      rc, err);
	struct dyntext_jit_opts o = { .sz = sizeof(o), .have_tsc = 1, .time_shift = 1,
				      .time_mult = 3, .time_zero = 100 };
	rc = dyntext_load_jitdump(dt, path, st, NULL, &o, err, sizeof(err));
	CHECK(rc == 3, "TSC with conversion: %d %s", rc, err);
	/* 2000 tsc -> 100 + 1000 * 3 = 3100 ns */
	rc = read_at(st, 0x1000, 3100, buf, 1, &hit);
	CHECK(rc == 1 && hit.valid_from == 3100, "TSC converted time %" PRIu64, hit.valid_from);
	imgstore_free(st);
	dyntext_free(dt);

	/* a caller's conversion */
	dt = dyntext_new();
	st = imgstore_new();
	struct dyntext_jit_opts o3 = { .sz = sizeof(o3), .convert = double_it };
	rc = dyntext_load_jitdump(dt, path, st, NULL, &o3, err, sizeof(err));
	CHECK(rc == 3, "TSC with a callback: %d %s", rc, err);
	rc = read_at(st, 0x1000, 4001, buf, 1, &hit);
	CHECK(rc == 1 && hit.valid_from == 4000 + 1, "callback time %" PRIu64, hit.valid_from);
	imgstore_free(st);
	dyntext_free(dt);

	/* CLOCK_MONOTONIC with an offset */
	build_good(&b, 0);
	path = write_file("good.dump", b.d, b.n);
	dt = dyntext_new();
	st = imgstore_new();
	struct dyntext_jit_opts o2 = { .sz = sizeof(o2), .mono_offset = -500 };
	rc = dyntext_load_jitdump(dt, path, st, NULL, &o2, err, sizeof(err));
	rc = read_at(st, 0x1000, 1500, buf, 1, &hit);
	CHECK(rc == 1 && hit.valid_from == 1500, "mono offset: from %" PRIu64, hit.valid_from);
	imgstore_free(st);
	dyntext_free(dt);
}

/* The good dump cut at every byte: a cut at a record boundary is a valid
 * shorter dump, any other cut is PTD_ERR_TRUNCATED; the loads before the
 * cut are kept either way. */
static void test_jitdump_cuts(void)
{
	struct jb b;
	char err[512];
	int bad = 0, nb_ok = 0;

	build_good(&b, 0);
	for (size_t cut = 0; cut < b.n; cut++) {
		const char *path = write_file("cut.dump", b.d, cut);
		struct dyntext *dt = dyntext_new();
		struct imgstore *st = imgstore_new();
		int rc, want_loads = 0, boundary = 0;

		for (size_t k = 0; k < b.nb; k++)
			if (b.bounds[k] <= cut)
				want_loads = b.loads_before[k];
		for (size_t k = 0; k < b.nb; k++)
			boundary |= b.bounds[k] == cut;
		err[0] = 0;
		rc = dyntext_load_jitdump(dt, path, st, NULL, NULL, err, sizeof(err));
		if (boundary) {
			nb_ok++;
			if (rc < 0 || dyntext_range_count(dt) != (size_t)want_loads) {
				bad++;
				printf("cut %zu (boundary): %d, %zu ranges, want %d (%s)\n", cut,
				       rc, dyntext_range_count(dt), want_loads, err);
			}
		} else {
			int want = cut < 4 ? PTD_ERR_FORMAT : PTD_ERR_TRUNCATED;

			if (rc != want || !strstr(err, "cut.dump") ||
			    dyntext_range_count(dt) != (size_t)want_loads) {
				bad++;
				printf("cut %zu: %d (%s), %zu ranges, want %d and %d\n", cut, rc,
				       err, dyntext_range_count(dt), want, want_loads);
			}
		}
		imgstore_free(st);
		dyntext_free(dt);
	}
	CHECK(bad == 0, "%d of %zu cuts wrong", bad, b.n);
	printf("jitdump: %zu cut positions (%d at record boundaries) checked\n", b.n, nb_ok);
}

/* One broken field at a time. */
static void test_jitdump_broken(void)
{
	static const struct {
		const char *what;
		size_t off;       /* into the good dump */
		int width;        /* 4 or 8 */
		uint64_t val;
		int want;
		const char *msg;  /* expected in the message */
	} cases[] = {
		{ "bad magic", 0, 4, 0x12345678, PTD_ERR_FORMAT, "not a jitdump" },
		{ "swapped magic", 0, 4, 0x4454694A, PTD_ERR_UNSUPPORTED, "byte order" },
		{ "version 2", 4, 4, 2, PTD_ERR_UNSUPPORTED, "version" },
		{ "header size 8", 8, 4, 8, PTD_ERR_CORRUPT, "total_size" },
		{ "header size huge", 8, 4, 0x7fffffff, PTD_ERR_TRUNCATED, "total_size" },
		{ "unknown flags", 32, 8, 4, PTD_ERR_UNSUPPORTED, "flags" },
		{ "record size 0", 44, 4, 0, PTD_ERR_CORRUPT, "smaller than" },
		{ "record size 8", 44, 4, 8, PTD_ERR_CORRUPT, "smaller than" },
		{ "record size huge", 44, 4, 0xffffffff, PTD_ERR_TRUNCATED, "beyond the end" },
		{ "debug nr_entry huge", 40 + 24, 8, 1ull << 60, PTD_ERR_CORRUPT, "nr_entry" },
	};
	struct jb b;
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dyntext *dt = dyntext_new();
		struct imgstore *st = imgstore_new();
		const char *path;
		int rc;

		build_good(&b, 0);
		memcpy(b.d + cases[i].off, &cases[i].val, (size_t)cases[i].width);
		path = write_file("broken.dump", b.d, b.n);
		err[0] = 0;
		rc = dyntext_load_jitdump(dt, path, st, NULL, NULL, err, sizeof(err));
		CHECK(rc == cases[i].want && strstr(err, cases[i].msg) && strstr(err, "broken.dump"),
		      "%s: %d (%s), want %d", cases[i].what, rc, err, cases[i].want);
		imgstore_free(st);
		dyntext_free(dt);
	}
	/* fields of the first load record (after the header and the 72-byte
	 * debug record): code_size, a name without NUL, a wrapping range */
	size_t ld;
	struct {
		const char *what;
		int kind;
		const char *msg;
	} lc[] = {
		{ "code_size 2^63", 0, "code_size" },
		{ "code_size one too many", 1, "code_size" },
		{ "no NUL in name", 2, "NUL" },
		{ "range wraps", 3, "wraps" },
		{ "move of unknown code", 4, "JIT_CODE_MOVE" },
		{ "unwinding size too big", 5, "UNWINDING" },
		{ "load too short", 6, "shorter" },
	};
	for (size_t i = 0; i < sizeof(lc) / sizeof(lc[0]); i++) {
		struct dyntext *dt = dyntext_new();
		struct imgstore *st = imgstore_new();
		uint64_t v;
		int rc;

		build_good(&b, 0);
		ld = b.bounds[1];       /* the first load follows the debug record */
		switch (lc[i].kind) {
		case 0: v = 1ull << 63; memcpy(b.d + ld + 40, &v, 8); break;
		case 1: v = sizeof(code_a) + 1; memcpy(b.d + ld + 40, &v, 8); break;
		case 2: memset(b.d + ld + 56, 'x', 5 + sizeof(code_a)); break;
		case 3: v = UINT64_MAX - 2; memcpy(b.d + ld + 32, &v, 8); break;
		case 4: v = 9; memcpy(b.d + b.bounds[6] + 56, &v, 8); break; /* move index */
		case 5: v = 1000; memcpy(b.d + b.bounds[3] + 16, &v, 8); break;
		case 6: { uint32_t s = 40; memcpy(b.d + ld + 4, &s, 4); break; }
		}
		const char *path = write_file("broken.dump", b.d, b.n);
		err[0] = 0;
		rc = dyntext_load_jitdump(dt, path, st, NULL, NULL, err, sizeof(err));
		CHECK(rc == PTD_ERR_CORRUPT && strstr(err, lc[i].msg),
		      "%s: %d (%s)", lc[i].what, rc, err);
		imgstore_free(st);
		dyntext_free(dt);
	}
	/* missing file, empty file */
	{
		struct dyntext *dt = dyntext_new();
		int rc = dyntext_load_jitdump(dt, "/nonexistent/jit-1.dump", NULL, NULL, NULL,
					      err, sizeof(err));

		CHECK(rc == PTD_ERR_IO && strstr(err, "/nonexistent"), "missing: %d %s", rc, err);
		rc = dyntext_load_jitdump(dt, write_file("empty.dump", "", 0), NULL, NULL, NULL,
					  err, sizeof(err));
		CHECK(rc == PTD_ERR_FORMAT, "empty: %d %s", rc, err);
		dyntext_free(dt);
	}
}

/* ---- perf maps -------------------------------------------------------- */

static void test_perfmap(void)
{
	static const struct {
		const char *text;
		int want;
		const char *msg;
	} cases[] = {
		{ "1000 10 good\n0x2000 0x20 also good\r\n\n3000 0 sizeless\n", 3, NULL },
		{ "zz 10 name\n", PTD_ERR_FORMAT, ":1:" },
		{ "1000 10 ok\n1000 -5 x\n", PTD_ERR_FORMAT, ":2:" },
		{ "1000 10\n", PTD_ERR_FORMAT, "START SIZE NAME" },
		{ "1000 10 \n", PTD_ERR_FORMAT, "START SIZE NAME" },
		{ "ffffffffffffffff 10 wrap\n", PTD_ERR_FORMAT, "wraps" },
		{ "1000 10 a\0b\n", PTD_ERR_FORMAT, "NUL" },
		{ "10000000000000000000000 10 big\n", PTD_ERR_FORMAT, ":1:" },
	};
	char err[512], big[3000];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dyntext *dt = dyntext_new();
		struct imgstore *st = imgstore_new();
		struct symtab *syms = symtab_new();
		size_t n = strlen(cases[i].text);
		int rc;

		if (i == 6)
			n = 13;
		err[0] = 0;
		rc = dyntext_load_perfmap(dt, write_file("perf-4242.map", cases[i].text, n),
					  -1, st, syms, err, sizeof(err));
		CHECK(rc == cases[i].want && (!cases[i].msg || strstr(err, cases[i].msg)),
		      "perfmap case %zu: %d (%s)", i, rc, err);
		if (i == 0) {
			struct dyntext_sym sym;
			uint8_t c;

			rc = dyntext_symbol(dt, 4242, 0x201f, 5, &sym);
			CHECK(rc == 0 && !strcmp(sym.name, "also good"), "perfmap name with space");
			rc = imgstore_read(st, 4242, 0x1005, 5, &c, 1, NULL);
			CHECK(rc == IMGSTORE_NOT_CAPTURED, "perfmap gap: %d", rc);
		}
		imgstore_free(st);
		symtab_free(syms);
		dyntext_free(dt);
	}
	memset(big, 'a', sizeof(big));
	memcpy(big, "1000 10 ", 8);
	big[sizeof(big) - 1] = '\n';
	struct dyntext *dt = dyntext_new();
	int rc = dyntext_load_perfmap(dt, write_file("perf-1.map", big, sizeof(big)), -1,
				      NULL, NULL, err, sizeof(err));
	CHECK(rc == PTD_ERR_FORMAT && strstr(err, "longer"), "long line: %d %s", rc, err);
	rc = dyntext_load_perfmap(dt, write_file("map.txt", "1 1 x\n", 6), -1, NULL, NULL,
				  err, sizeof(err));
	CHECK(rc == PTD_ERR_INVAL && strstr(err, "perf-PID.map"), "no pid: %d %s", rc, err);
	dyntext_free(dt);
}

/* ---- BPF -------------------------------------------------------------- */

/* Program 11: main image at 0xa000 (0x40 bytes) and subprogram "helper"
 * at 0xa100 (0x20); program 12 reuses 0xa000 later. */
static const char tsv11[] =
	"# ptcapture-bpf 1\n"
	"prog\t11\t00112233445566ff\tmain_one\t5\t2\t1\n"
	"image\t0\t0xa000\t64\n"
	"image\t1\t0xa100\t32\n"
	"func\t0\t0\t3\t0xa000\tmain_one\n"
	"func\t1\t20\t4\t0xa100\thelper\n"
	"line\t0xa000\t0\t10\t5\t/src/one.c\tint main_one(void *ctx)\n"
	"line\t0xa010\t3\t0\t0\t/src/one.c\t-\n"
	"line\t0xa018\t5\t12\t2\t/src/one.c\t return helper(1);\n"
	"line\t0xa100\t20\t30\t0\t/src/one.c\tstatic int helper(int x)\n"
	"line\t0xa108\t22\t31\t9\t/src/one.c\t return x + 1;\n";
static const char tsv12[] =
	"# ptcapture-bpf 1\n"
	"prog\t12\taabbccddeeff0011\tmain_two\t6\t1\t1\n"
	"image\t0\t0xa000\t48\n"
	"func\t0\t0\t3\t0xa000\tmain_two\n"
	"line\t0xa000\t0\t50\t1\t/src/two.c\tint main_two(void *ctx)\n"
	"line\t0xa020\t4\t52\t3\t/src/two.c\t return 2;\n";

static void test_bpf_capture(void)
{
	char dir[2048], path[4096], err[512], file[256];
	struct textstore_writer *w;
	struct textstore_entry e;
	struct dyntext_sym sym;
	struct dyntext_line ln;
	unsigned line;
	int rc;

	snprintf(dir, sizeof(dir), "%s/cap.ptd", work);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/bpf", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "cap.ptd/bpf/11.tsv");
	write_file(path, tsv11, strlen(tsv11));
	write_file("cap.ptd/bpf/12.tsv", tsv12, strlen(tsv12));
	snprintf(path, sizeof(path), "%s/text", dir);
	if (textstore_writer_open(path, &w)) {
		printf("cannot create %s\n", path);
		exit(1);
	}
	static const uint8_t bytes[64];
	struct { const char *kind; uint64_t start, len, from, to; uint32_t id; const char *name; }
	rows[] = {
		{ "bpf", 0xa000, 64, 1000, 2000, 11, "bpf_prog_00112233445566ff_main_one" },
		{ "bpf-subprog", 0xa100, 32, 1000, 2000, 11, "bpf_prog_0123456789abcdef_helper" },
		{ "bpf", 0xa000, 64, 1000, 2000, 11, "bpf_prog_00112233445566ff_main_one" },
		{ "bpf", 0xa000, 48, 3000, TEXTSTORE_OPEN_END, 12, "bpf_prog_aabbccddeeff0011_main_two" },
	};
	for (size_t i = 0; i < 4; i++) {
		memset(&e, 0, sizeof(e));
		snprintf(e.kind, sizeof(e.kind), "%s", rows[i].kind);
		e.start = rows[i].start;
		e.len = rows[i].len;
		e.valid_from = rows[i].from;
		e.valid_to = rows[i].to;
		e.pid = -1;
		snprintf(e.source, sizeof(e.source), "%s", i == 2 ? "fence" : "prog-info");
		snprintf(e.tag, sizeof(e.tag), "-");
		snprintf(e.build_id, sizeof(e.build_id), "-");
		e.prog_id = rows[i].id;
		snprintf(e.name, sizeof(e.name), "%s", rows[i].name);
		if (textstore_writer_add(w, &e, bytes) || (i == 3 && textstore_writer_close(w))) {
			printf("cannot write the text index\n");
			exit(1);
		}
	}

	struct dyntext *dt = dyntext_new();
	rc = dyntext_load_bpf(dt, dir, NULL, err, sizeof(err));
	CHECK(rc == 0 && dyntext_bpf_prog_count(dt) == 2, "load_bpf: %d (%s)", rc, err);
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa005, 1500, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "bpf_prog_00112233445566ff_main_one") &&
	      !strcmp(sym.func, "main_one") && sym.prog_id == 11 && sym.valid_to == 2000,
	      "0xa005 at 1500: %d", rc);
	rc = dyntext_symbol(dt, 1234, 0xa005, 3500, &sym);   /* any pid sees BPF */
	CHECK(rc == 0 && !strcmp(sym.func, "main_two") && sym.prog_id == 12,
	      "0xa005 at 3500: %d", rc);
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa005, 2500, &sym);
	CHECK(rc == PTD_ERR_NO_IMAGE, "0xa005 between the programs: %d", rc);
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa005, IMGSTORE_TIME_UNKNOWN, &sym);
	CHECK(rc == IMGSTORE_AMBIGUOUS, "0xa005 without time: %d", rc);
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa110, IMGSTORE_TIME_UNKNOWN, &sym);
	CHECK(rc == 0 && !strcmp(sym.func, "helper") &&
	      !strcmp(sym.name, "bpf_prog_0123456789abcdef_helper"), "helper: %d", rc);
	rc = dyntext_bpf_srcline(dt, 0xa01f, 1500, file, sizeof(file), &line);
	CHECK(rc == 0 && line == 12 && !strcmp(file, "/src/one.c"), "one.c:12: %d", rc);
	rc = dyntext_bpf_srcline(dt, 0xa01f, 3500, file, sizeof(file), &line);
	CHECK(rc == 0 && line == 50 && !strcmp(file, "/src/two.c"), "two.c:50: %d %u", rc, line);
	rc = dyntext_bpf_srcline(dt, 0xa012, 1500, file, sizeof(file), &line);
	CHECK(rc == PTD_ERR_NO_IMAGE, "line 0 record: %d", rc);
	rc = dyntext_line(dt, IMGSTORE_KERNEL, 0xa012, 1500, &ln);
	CHECK(rc == 0 && ln.line == 0 && ln.addr == 0xa010, "line 0 record raw: %d", rc);
	/* the subprogram does not inherit the main image's last line */
	rc = dyntext_line(dt, IMGSTORE_KERNEL, 0xa10f, 1500, &ln);
	CHECK(rc == 0 && ln.line == 31 && ln.col == 9 && !strcmp(ln.text, " return x + 1;"),
	      "helper line: %d", rc);
	rc = dyntext_line(dt, IMGSTORE_KERNEL, 0xa02f, 3500, &ln);
	CHECK(rc == 0 && ln.line == 52, "two.c:52: %d", rc);
	dyntext_free(dt);

	/* without a text store: both programs all the time -> ambiguous at
	 * 0xa000, names from the .tsv */
	dt = dyntext_new();
	snprintf(path, sizeof(path), "%s/bpf/11.tsv", dir);
	rc = dyntext_load_bpf(dt, dir, NULL, err, sizeof(err));
	rc = dyntext_load_bpf_tsv(dt, path, err, sizeof(err));
	CHECK(rc == PTD_ERR_FORMAT, "tsv loaded twice: %d %s", rc, err);
	dyntext_free(dt);
	dt = dyntext_new();
	snprintf(path, sizeof(path), "%s/bpf/11.tsv", dir);
	rc = dyntext_load_bpf_tsv(dt, path, err, sizeof(err));
	snprintf(path, sizeof(path), "%s/bpf/12.tsv", dir);
	rc |= dyntext_load_bpf_tsv(dt, path, err, sizeof(err));
	CHECK(rc == 0 && dyntext_bpf_prog_count(dt) == 2, "tsv alone: %d %s", rc, err);
	/* no windows without the index: dyntext_load_bpf adds the ranges */
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa000, 5, &sym);
	CHECK(rc == PTD_ERR_NO_IMAGE, "tsv alone has no ranges: %d", rc);
	dyntext_free(dt);
}

static void test_bpf_bad(void)
{
	static const struct {
		const char *what, *from, *to;
	} cases[] = {
		{ "magic", "# ptcapture-bpf 1", "# ptcapture-bpf 9" },
		{ "prog fields", "\tmain_one\t5\t2\t1", "\tmain_one\t5\t2" },
		{ "tag", "00112233445566ff", "0011223344556zff" },
		{ "nr images", "\t5\t2\t1\n", "\t5\t3\t1\n" },
		{ "nr images huge", "\t5\t2\t1\n", "\t5\t99999999999\t1\n" },
		{ "image order", "image\t1\t0xa100", "image\t2\t0xa100" },
		{ "image addr", "image\t0\t0xa000", "image\t0\t0xzz" },
		{ "image wraps", "image\t1\t0xa100\t32", "image\t1\t0xffffffffffffffff\t32" },
		{ "image len 0", "0xa100\t32\n", "0xa100\t0\n" },
		{ "func addr", "func\t1\t20\t4\t0xa100", "func\t1\t20\t4\t0xa200" },
		{ "func index", "func\t1\t20", "func\t7\t20" },
		{ "line outside", "line\t0xa108", "line\t0xb108" },
		{ "line fields", "\t0\t10\t5\t/src/one.c", "\t0\t10\t/src/one.c" },
		{ "line number", "\t22\t31\t9", "\t22\t-31\t9" },
		{ "row kind", "func\t0\t0", "fnc\t0\t0" },
		{ "row before prog", "prog\t11", "line\t0xa000\t0\t1\t1\tx\ty\nprog\t11" },
		{ "second prog", "image\t0\t0xa000", "prog\t11\t00112233445566ff\tx\t5\t2\t1\nimage\t0\t0xa000" },
		{ "prog id 0", "prog\t11", "prog\t0" },
		{ "extra field", "\tint main_one(void *ctx)", "\tint main_one(void *ctx)\textra" },
	};
	char text[4096], err[512];
	struct dyntext *dt = dyntext_new();
	int rc;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *at = strstr(tsv11, cases[i].from);
		size_t pre;

		if (!at) {
			printf("test bug: %s\n", cases[i].what);
			fails++;
			continue;
		}
		pre = (size_t)(at - tsv11);
		snprintf(text, sizeof(text), "%.*s%s%s", (int)pre, tsv11, cases[i].to,
			 at + strlen(cases[i].from));
		err[0] = 0;
		rc = dyntext_load_bpf_tsv(dt, write_file("bad.tsv", text, strlen(text)),
					  err, sizeof(err));
		CHECK(rc == PTD_ERR_FORMAT && strstr(err, "bad.tsv:") &&
		      dyntext_bpf_prog_count(dt) == 0,
		      "tsv %s: %d (%s)", cases[i].what, rc, err);
	}
	rc = dyntext_load_bpf_tsv(dt, write_file("bad.tsv", "", 0), err, sizeof(err));
	CHECK(rc == PTD_ERR_FORMAT, "empty tsv: %d %s", rc, err);
	rc = dyntext_load_bpf_tsv(dt, write_file("bad.tsv", "# ptcapture-bpf 1\n\0x", 20),
				  err, sizeof(err));
	CHECK(rc == PTD_ERR_FORMAT && strstr(err, "NUL"), "NUL in tsv: %d %s", rc, err);
	/* a good file after the bad ones still loads; a second copy is refused */
	rc = dyntext_load_bpf_tsv(dt, write_file("ok.tsv", tsv11, strlen(tsv11)), err, sizeof(err));
	CHECK(rc == 0 && dyntext_bpf_prog_count(dt) == 1, "good after bad: %d %s", rc, err);
	rc = dyntext_load_bpf_tsv(dt, write_file("ok.tsv", tsv11, strlen(tsv11)), err, sizeof(err));
	CHECK(rc == PTD_ERR_FORMAT && dyntext_bpf_prog_count(dt) == 1, "twice: %d %s", rc, err);
	dyntext_free(dt);

	/* a capture directory with one bad file among good ones: the first
	 * error is returned, the good program is loaded all the same */
	char dir[2048];
	snprintf(dir, sizeof(dir), "%s/cap2.ptd", work);
	mkdir(dir, 0700);
	snprintf(text, sizeof(text), "%s/bpf", dir);
	mkdir(text, 0700);
	write_file("cap2.ptd/bpf/11.tsv", tsv11, strlen(tsv11));
	write_file("cap2.ptd/bpf/10.tsv", "garbage\n", 8);
	dt = dyntext_new();
	rc = dyntext_load_bpf(dt, dir, NULL, err, sizeof(err));
	CHECK(rc == PTD_ERR_FORMAT && strstr(err, "10.tsv") && dyntext_bpf_prog_count(dt) == 1,
	      "capture with a bad file: %d (%s)", rc, err);
	struct dyntext_sym sym;
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa100, 5, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "helper") && sym.valid_from == 0,
	      "subprogram without index row: %d", rc);
	rc = dyntext_symbol(dt, IMGSTORE_KERNEL, 0xa000, 5, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "bpf_prog_00112233445566ff_main_one"),
	      "main image without index row: %d", rc);
	dyntext_free(dt);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_dyntext_bad WORKDIR\n");
		return 2;
	}
	work = argv[1];
	mkdir(work, 0700);
	test_jitdump_good();
	test_jitdump_cuts();
	test_jitdump_broken();
	test_perfmap();
	test_bpf_capture();
	test_bpf_bad();
	printf("%d checks, %d failed\n", checks, fails);
	return fails ? 1 : 0;
}
