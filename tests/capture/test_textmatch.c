/* SPDX-License-Identifier: MIT */
/*
 * test_textmatch - programs present when a capture starts (KSYMBOL and
 * prog-info copy synthesized at time 0).  One of them, P, was loaded after
 * the sideband events opened but before the start enumerated the programs:
 * it also has a live REGISTER, PROG_LOAD and copy.  Its start copy must
 * not become an `uncertain` row valid from 0 forever (it would claim the
 * address against every later program there), and P's window starts at
 * its live REGISTER.  Q, there long before, keeps its open window from 0.
 */
#define _GNU_SOURCE
#include "textmatch.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define P 0xffffffffc0001000ull
#define Q 0xffffffffc0002000ull

int main(void)
{
	static const uint8_t tp[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, tq[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
	const char *np = "bpf_prog_0102030405060708_p", *nq = "bpf_prog_0909090909090909_q";
	uint8_t bytes[16];
	char dir[] = "/tmp/test_textmatch.XXXXXX", path[300], line[512], want[3][128];
	struct textmatch *tm = textmatch_new();
	struct textmatch_counts n;
	int bad = 0, rows = 0;
	FILE *f;

	memset(bytes, 0xcc, sizeof(bytes));
	if (!tm || !mkdtemp(dir))
		return 1;
	/* the start: Q and P */
	textmatch_ksymbol(tm, 0, Q, 16, PERF_RECORD_KSYMBOL_TYPE_BPF, 0, nq);
	textmatch_prog_load(tm, 0, 7, tq);
	textmatch_copy(tm, TM_PROG_INFO, 0, Q, 16, tq, 7, 7, 0, 1, bytes);
	textmatch_ksymbol(tm, 0, P, 16, PERF_RECORD_KSYMBOL_TYPE_BPF, 0, np);
	textmatch_prog_load(tm, 0, 8, tp);
	textmatch_copy(tm, TM_PROG_INFO, 0, P, 16, tp, 8, 8, 0, 1, bytes);
	/* the rings: P's load (before the enumeration) and unload */
	textmatch_ksymbol(tm, 100, P, 16, PERF_RECORD_KSYMBOL_TYPE_BPF, 0, np);
	textmatch_prog_load(tm, 100, 8, tp);
	textmatch_copy(tm, TM_PROG_INFO, 100, P, 16, tp, 8, 8, 0, 1, bytes);
	textmatch_ksymbol(tm, 200, P, 16, PERF_RECORD_KSYMBOL_TYPE_BPF, 1, np);
	if (textmatch_write(tm, dir, &n, line, sizeof(line))) {
		fprintf(stderr, "test_textmatch: %s\n", line);
		return 1;
	}
	textmatch_free(tm);

	snprintf(want[0], sizeof(want[0]), "bpf\t%#llx\t16\t100\t200\t", P);
	snprintf(want[1], sizeof(want[1]), "bpf\t%#llx\t16\t0\t-\t", Q);
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	if (!(f = fopen(path, "r")))
		return 1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		rows++;
		if (strncmp(line, want[0], strlen(want[0])) && strncmp(line, want[1], strlen(want[1]))) {
			fprintf(stderr, "test_textmatch: unexpected row: %s", line);
			bad++;
		}
	}
	fclose(f);
	if (rows != 2 || n.info_unmatched) {
		fprintf(stderr, "test_textmatch: %d rows, %llu prog-info copies unmatched "
			"(want 2, 0)\n", rows, (unsigned long long)n.info_unmatched);
		bad++;
	}
	snprintf(line, sizeof(line), "rm -rf '%s'", dir);
	if (system(line))
		bad++;
	printf("test_textmatch: %s\n", bad ? "FAIL" : "ok");
	return bad ? 1 : 0;
}
