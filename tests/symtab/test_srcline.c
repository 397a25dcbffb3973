/* SPDX-License-Identifier: MIT */
/*
 * srcline against addr2line: every instruction address of .text (from
 * objdump) must give addr2line's file and line, and "no line" where
 * addr2line prints "??".  A copy without DWARF must say PTD_ERR_NO_IMAGE,
 * and give the unstripped file's lines with its separate debug file
 * (objcopy --only-keep-debug); a file with DWARF its own lines when given a
 * "debug file" without; a missing file PTD_ERR_IO; lookups over more files than the cache holds
 * must keep working.  Padding between functions (inside no function
 * symbol of nm) may have no line where addr2line extends the previous row
 * over it: the compilation unit's ranges end with the function.
 *
 * usage: test_srcline ELF
 */
#include "oracle.h"
#include "ptdecode.h"
#include "srcline.h"

#include <unistd.h>

struct fn { uint64_t addr, size; };

/* Is addr inside a sized function symbol (nm -S)? */
static int in_function(const struct fn *v, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (addr >= v[i].addr && addr < v[i].addr + v[i].size)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *elf = argc > 1 ? argv[1] : NULL;
	char cmd[10000], **al, **ol, tmp[] = "/tmp/ptd-srcline-XXXXXX", file[4096],
	     err[512], path[4200];
	size_t na, no, i, k = 0, total = 0, ok = 0, none = 0, pad = 0, nf = 0;
	struct fn *fns;
	uint64_t *addrs;
	struct srcline *s;
	FILE *f;
	int line, r, fd;

	if (!elf) {
		printf("usage: %s ELF\n", argv[0]);
		return 2;
	}
	s = srcline_new();
	r = srcline_lookup(s, elf, NULL, 0, file, sizeof(file), &line, err, sizeof(err));
	if (r == PTD_ERR_UNSUPPORTED) {
		printf("SKIP: %s\n", err);
		return SKIP;
	}
	snprintf(cmd, sizeof(cmd), "objdump -d -w -j .text '%s' | grep -E '^ +[0-9a-f]+:'", elf);
	no = run_lines(cmd, &ol);
	addrs = calloc(no + 1, sizeof(*addrs));
	fd = mkstemp(tmp);
	f = fdopen(fd, "w");
	for (i = 0; i < no; i++) {
		addrs[k] = strtoull(ol[i], NULL, 16);
		fprintf(f, "%" PRIx64 "\n", addrs[k++]);
	}
	fclose(f);
	free_lines(ol, no);
	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s' | grep -E ' [0-9a-f]+ [tTwWi] '", elf);
	no = run_lines(cmd, &ol);
	fns = calloc(no + 1, sizeof(*fns));
	for (i = 0; i < no; i++)
		if (sscanf(ol[i], "%" SCNx64 " %" SCNx64, &fns[nf].addr, &fns[nf].size) == 2)
			nf++;
	free_lines(ol, no);
	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' < %s", elf, tmp);
	na = run_lines(cmd, &al);
	CHECK(na == k, "addr2line printed %zu lines for %zu addresses", na, k);
	for (i = 0; i < na && i < k; i++) {
		char *colon = strrchr(al[i], ':');
		char *disc = strstr(al[i], " (discriminator");
		int oline;

		if (disc)
			*disc = 0;
		colon = strrchr(al[i], ':');
		total++;
		r = srcline_lookup(s, elf, NULL, addrs[i], file, sizeof(file), &line, err, sizeof(err));
		if (!colon || al[i][0] == '?' || colon[1] == '?' || !atoi(colon + 1)) {
			none++;
			CHECK(r == PTD_ERR_NO_IMAGE || (r == 0 && line == 0),
			      "%#" PRIx64 ": addr2line has no line, we say %s:%d",
			      addrs[i], file, line);
			ok += r == PTD_ERR_NO_IMAGE || (r == 0 && line == 0);
			continue;
		}
		*colon = 0;
		oline = atoi(colon + 1);
		if (r == PTD_ERR_NO_IMAGE && !in_function(fns, nf, addrs[i])) {
			pad++;
			ok++;
			continue;
		}
		CHECK(r == 0 && line == oline && strcmp(file, al[i]) == 0,
		      "%#" PRIx64 ": %s:%d (rc %d), addr2line %s:%d", addrs[i],
		      r == 0 ? file : err, line, r, al[i], oline);
		ok += r == 0 && line == oline && strcmp(file, al[i]) == 0;
	}
	free_lines(al, na);
	unlink(tmp);
	printf("%s: %zu/%zu instruction addresses agree with addr2line "
	       "(%zu without line info; %zu padding without line where "
	       "addr2line has one)\n", elf, ok, total, none, pad);
	CHECK(pad * 20 < total, "too much padding");
	CHECK(total > 100 && total - none > 100, "too few addresses with lines");

	/* No DWARF, no file, and more files than the cache holds. */
	snprintf(path, sizeof(path), "%s.stripped", tmp);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-debug '%s' %s", elf, path);
	CHECK(system(cmd) == 0, "objcopy");
	r = srcline_lookup(s, path, NULL, addrs[k / 2], file, sizeof(file), &line, err, sizeof(err));
	CHECK(r == PTD_ERR_NO_IMAGE, "stripped file: rc %d", r);
	printf("stripped: rc %d: %s\n", r, err);
	{
		/* The stripped file with its separate debug file: the debug
		 * file's lines; a "debug file" without DWARF: the file's own. */
		char dbg[4300], first[4096];
		int fl;

		snprintf(dbg, sizeof(dbg), "%s.debug", tmp);
		snprintf(cmd, sizeof(cmd), "objcopy --only-keep-debug '%s' %s", elf, dbg);
		CHECK(system(cmd) == 0, "objcopy --only-keep-debug");
		size_t sampled = 0, lines = 0;

		for (i = 0; i < k; i += k / 32 + 1) {
			int r1 = srcline_lookup(s, elf, NULL, addrs[i], first,
						sizeof(first), &fl, err, sizeof(err));
			int r2 = srcline_lookup(s, path, dbg, addrs[i], file,
						sizeof(file), &line, err, sizeof(err));

			sampled++;
			lines += r1 == 0;
			CHECK(r1 == r2 && (r1 < 0 || (line == fl && !strcmp(file, first))),
			      "%#" PRIx64 ": with the debug file %s:%d (rc %d), "
			      "unstripped %s:%d (rc %d)", addrs[i], file, line, r2,
			      first, fl, r1);
			r2 = srcline_lookup(s, elf, path, addrs[i], file,
					    sizeof(file), &line, err, sizeof(err));
			CHECK(r1 == r2 && (r1 < 0 || (line == fl && !strcmp(file, first))),
			      "%#" PRIx64 ": own DWARF after a debug file without: "
			      "%s:%d (rc %d), want %s:%d (rc %d)", addrs[i], file, line,
			      r2, first, fl, r1);
		}
		printf("stripped with its debug file: %zu/%zu sampled addresses "
		       "have the unstripped file's line\n", lines, sampled);
		CHECK(lines * 2 > sampled, "too few sampled addresses with a line");
		r = srcline_lookup(s, path, path, addrs[k / 2], file, sizeof(file),
				   &line, err, sizeof(err));
		CHECK(r == PTD_ERR_NO_IMAGE, "no DWARF in either: rc %d", r);
		printf("stripped, debug file without DWARF: rc %d: %s\n", r, err);
		unlink(dbg);
	}
	unlink(path);
	r = srcline_lookup(s, "/nonexistent/file", NULL, 0x1000, file, sizeof(file), &line,
			   err, sizeof(err));
	CHECK(r == PTD_ERR_IO, "missing file: rc %d", r);
	{
		char first[4096];
		int fl;
		r = srcline_lookup(s, elf, NULL, addrs[k / 2], first, sizeof(first), &fl, err, sizeof(err));
		for (i = 0; i < 12; i++) {
			snprintf(path, sizeof(path), "%s.%zu", tmp, i);
			snprintf(cmd, sizeof(cmd), "cp '%s' %s", elf, path);
			CHECK(system(cmd) == 0, "cp");
			CHECK(srcline_lookup(s, path, NULL, addrs[k / 2], file, sizeof(file),
					     &line, err, sizeof(err)) == r &&
			      (r < 0 || (line == fl && !strcmp(file, first))),
			      "copy %zu differs", i);
			CHECK(srcline_lookup(s, elf, NULL, addrs[k / 2], file, sizeof(file),
					     &line, err, sizeof(err)) == r, "after eviction");
			unlink(path);
		}
	}
	srcline_free(s);
	free(addrs);
	free(fns);
	printf("%s\n", g_fail ? "FAILED" : "PASSED");
	return g_fail ? 1 : 0;
}
