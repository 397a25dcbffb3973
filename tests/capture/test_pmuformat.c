/* SPDX-License-Identifier: MIT */
/*
 * test_pmuformat - named PMU terms -> config words, on a fake sysfs PMU
 * directory holding the format files Linux's intel_pt driver exports.
 * Oracle: perf's documented default for `-e intel_pt//` on such a PMU,
 * "tsc,mtc,mtc_period=3,psb_period=3,pt,branch", is config 0x300e601 (as
 * `perf evlist -v` prints it), plus hand-computed bit placements.
 *
 * Usage: test_pmuformat WORKDIR
 */
#include "pmuformat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

#define CHECK(c, ...) do { if (!(c)) { failures++; printf("FAIL line %d: ", __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)

static void put(const char *dir, const char *name, const char *content)
{
	char path[4096];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		fprintf(stderr, "%s/%s: path too long\n", dir, name);
		exit(1);
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(content, f);
	fclose(f);
}

static uint64_t cfg_of(const char *dir, const char *terms, int word, int *rc)
{
	struct pmuformat_config c = { { 0 } };
	char err[512] = "";

	*rc = pmuformat_parse(dir, terms, &c, err, sizeof(err));
	if (*rc)
		printf("  (%s: %s)\n", terms, err);
	return c.config[word];
}

int main(int argc, char **argv)
{
	static const char *const fmt[][2] = {
		{ "pt", "config:0\n" }, { "cyc", "config:1\n" }, { "pwr_evt", "config:4\n" },
		{ "fup_on_ptw", "config:5\n" }, { "mtc", "config:9\n" }, { "tsc", "config:10\n" },
		{ "noretcomp", "config:11\n" }, { "ptw", "config:12\n" }, { "branch", "config:13\n" },
		{ "mtc_period", "config:14-17\n" }, { "cyc_thresh", "config:19-22\n" },
		{ "psb_period", "config:24-27\n" },
		/* not intel_pt's: a split field and the other words */
		{ "split", "config:0-3,44\n" }, { "sinkid", "config2:0-31\n" },
		{ "c1", "config1:8-15\n" }, { "broken", "config:x\n" },
	};
	char dir[4096], fdir[4200], err[512];
	uint32_t type = 0;
	uint64_t mask = 0;
	int rc, word = -1;

	if (argc != 2) {
		fprintf(stderr, "usage: test_pmuformat WORKDIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	snprintf(fdir, sizeof(fdir), "%s/format", dir);
	mkdir(dir, 0700);
	mkdir(fdir, 0700);
	put(dir, "type", "8\n");
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++)
		put(fdir, fmt[i][0], fmt[i][1]);

	CHECK(pmuformat_type(dir, &type, err, sizeof(err)) == 0 && type == 8, "type %u", type);
	CHECK(cfg_of(dir, "tsc,mtc,mtc_period=3,psb_period=3,pt,branch", 0, &rc) == 0x300e601 && !rc,
	      "perf's default intel_pt config");
	CHECK(cfg_of(dir, "cyc,cyc_thresh=2,noretcomp", 0, &rc) == 0x100802 && !rc, "cyc terms");
	CHECK(cfg_of(dir, "pt,branch,branch=0", 0, &rc) == 0x1 && !rc, "term=0 clears");
	CHECK(cfg_of(dir, "split=0x1f", 0, &rc) == (0xfull | 1ull << 44) && !rc, "split field");
	CHECK(cfg_of(dir, "sinkid=0xdeadbeef", 2, &rc) == 0xdeadbeef && !rc, "config2");
	CHECK(cfg_of(dir, "c1=255", 1, &rc) == 0xff00 && !rc, "config1");
	cfg_of(dir, "mtc_period=16", 0, &rc);
	CHECK(rc == -ERANGE, "value wider than its field accepted");
	cfg_of(dir, "cyc,nosuch", 0, &rc);
	CHECK(rc == -ENOENT, "unknown term accepted (%d)", rc);
	cfg_of(dir, "broken", 0, &rc);
	CHECK(rc == -EINVAL, "unparsable format accepted");
	cfg_of(dir, "mtc_period=x3", 0, &rc);
	CHECK(rc == -EINVAL, "bad value accepted");
	cfg_of(dir, "../type", 0, &rc);
	CHECK(rc == -EINVAL, "path in a term accepted");
	CHECK(pmuformat_term(dir, "mtc_period", &word, &mask, err, sizeof(err)) == 0 &&
	      word == 0 && mask == 0x3c000, "mtc_period mask %#" PRIx64, mask);
	printf("%s (%d failures)\n", failures ? "FAILED" : "ok", failures);
	return failures ? 1 : 0;
}
