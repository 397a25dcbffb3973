/* SPDX-License-Identifier: MIT */
/*
 * symtab against independent oracles:
 *   nm (-D)        every function symbol address resolves to one of nm's
 *                  names there with offset 0, the last byte of a sized
 *                  symbol to it with offset size-1, padding after a sized
 *                  symbol to nothing (unless nm has a covering symbol);
 *   objdump -d     every <name@plt> entry resolves to name@plt;
 *   readelf -n     the build id;
 *   the loader     (--run) the program's own /proc/self/maps and function
 *                  pointers: runtime address - symtab_load_bias resolves to
 *                  the function's name, for the program and for libc.
 * The file and memory readers must agree on every probe.
 *
 * usage: test_symtab ELF [--dynamic] [--run]
 */
#include "oracle.h"
#include "ptdecode.h"
#include "symtab.h"
#include "util.h"

#include <sys/stat.h>
#include <unistd.h>

struct nsym { uint64_t addr, size; char name[300]; };

static int cmp_nsym(const void *a, const void *b)
{
	const struct nsym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Function symbols of nm (in executable sections), sorted by address. */
static size_t nm_funcs(const char *elf, int dynamic, struct nsym **out)
{
	struct xsec xs[64];
	size_t nx = exec_sections(elf, xs, 64), n, i, k = 0;
	char cmd[10000], **l;
	struct nsym *v;

	snprintf(cmd, sizeof(cmd), "nm --defined-only -S %s '%s'",
		 dynamic ? "-D" : "", elf);
	n = run_lines(cmd, &l);
	v = calloc(n + 1, sizeof(*v));
	for (i = 0; i < n; i++) {
		char a[4][300];
		int f = sscanf(l[i], "%299s %299s %299s %299s", a[0], a[1], a[2], a[3]);
		const char *type, *name;
		struct nsym s = {0};
		size_t j;
		int inx = 0;

		if (f == 4) {
			s.size = strtoull(a[1], NULL, 16);
			type = a[2];
			name = a[3];
		} else if (f == 3) {
			type = a[1];
			name = a[2];
		} else {
			continue;
		}
		s.addr = strtoull(a[0], NULL, 16);
		if (strlen(type) != 1 || !strchr("TtWwi", type[0]))
			continue;
		for (j = 0; j < nx; j++)
			if (s.addr >= xs[j].addr && s.addr < xs[j].addr + xs[j].size)
				inx = 1;
		if (!inx || name[0] == '$')
			continue;
		snprintf(s.name, sizeof(s.name), "%s", name);
		s.name[strcspn(s.name, "@")] = 0;   /* symbol version */
		v[k++] = s;
	}
	free_lines(l, n);
	qsort(v, k, sizeof(*v), cmp_nsym);
	*out = v;
	return k;
}

/* Is name one of nm's names at addr? */
static int nm_has(const struct nsym *v, size_t n, uint64_t addr, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && v[lo].addr == addr; lo++)
		if (strcmp(v[lo].name, name) == 0)
			return 1;
	return 0;
}

/* Does nm's table cover addr (documented rule of symtab.h)? */
static int nm_covers(const struct nsym *v, size_t n, uint64_t addr)
{
	size_t i;
	uint64_t next = UINT64_MAX;

	for (i = 0; i < n; i++)
		if (v[i].addr > addr && v[i].addr < next)
			next = v[i].addr;
	for (i = 0; i < n; i++) {
		if (v[i].addr > addr)
			continue;
		if (v[i].size ? addr < v[i].addr + v[i].size : 0)
			return 1;
	}
	/* unsized nearest preceding symbol reaches the next symbol */
	for (i = n; i > 0; i--)
		if (v[i - 1].addr <= addr) {
			uint64_t a = v[i - 1].addr;
			size_t j;
			int unsized = 1;
			for (j = i; j > 0 && v[j - 1].addr == a; j--)
				if (v[j - 1].size)
					unsized = 0;
			return unsized && addr < next;
		}
	return 0;
}

static void check_probe(struct symtab *sf, struct symtab *sm, const struct nsym *v,
			size_t n, uint64_t addr, int expect, size_t *ok)
{
	const char *name = NULL, *name2 = NULL;
	uint64_t off = 0, off2 = 0;
	int r = symtab_lookup(sf, addr, &name, &off);
	int r2 = symtab_lookup(sm, addr, &name2, &off2);

	CHECK(r == r2 && (r < 0 || (off == off2 && strcmp(name, name2) == 0)),
	      "file and memory tables differ at %#" PRIx64, addr);
	if (expect) {
		CHECK(r == 0, "%#" PRIx64 ": no symbol (rc %d)", addr, r);
		if (r == 0) {
			CHECK(nm_has(v, n, addr - off, name),
			      "%#" PRIx64 ": got %s+%#" PRIx64 ", nm has no such symbol",
			      addr, name, off);
			if (nm_has(v, n, addr - off, name))
				(*ok)++;
		}
	} else {
		CHECK(r == PTD_ERR_NO_IMAGE, "%#" PRIx64 ": padding resolved to %s+%#"
		      PRIx64, addr, r == 0 ? name : "?", off);
		if (r == PTD_ERR_NO_IMAGE)
			(*ok)++;
	}
}

static void check_plt(struct symtab *st, const char *elf)
{
	char cmd[10000], **l;
	size_t n, i, total = 0, ok = 0;

	snprintf(cmd, sizeof(cmd), "objdump -d '%s' | grep -E '^[0-9a-f]+ <.*@plt>:$' || true", elf);
	n = run_lines(cmd, &l);
	for (i = 0; i < n; i++) {
		uint64_t addr = strtoull(l[i], NULL, 16);
		char *s = strchr(l[i], '<'), *e = strstr(l[i], ">:");
		const char *name;
		uint64_t off;
		if (!s || !e)
			continue;
		*e = 0;
		if (!strncmp(s + 1, "*ABS*", 5))
			continue;   /* IRELATIVE slot: objdump has no name either */
		total++;
		if (symtab_lookup(st, addr, &name, &off) == 0 && off == 0 &&
		    strcmp(name, s + 1) == 0)
			ok++;
		else
			CHECK(0, "PLT %#" PRIx64 " <%s> not found", addr, s + 1);
	}
	printf("plt: %zu/%zu objdump <name@plt> entries resolved\n", ok, total);
	free_lines(l, n);
}

static void check_build_id(const char *elf)
{
	char cmd[10000], **l, hex[129] = "", found[4096], dir[] = "/tmp/ptd-bid-XXXXXX";
	uint8_t id[64];
	size_t n, i, len = 0;
	char mine[129];
	const char *dirs[2] = { dir, NULL };
	int r;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | grep 'Build ID:' || true", elf);
	n = run_lines(cmd, &l);
	if (n)
		sscanf(strstr(l[0], "Build ID:") + 9, "%128s", hex);
	free_lines(l, n);
	r = symtab_build_id(elf, NULL, 0, id, sizeof(id), &len, NULL, 0);
	if (!hex[0]) {
		CHECK(r == PTD_ERR_NO_IMAGE, "build id found where readelf has none");
		return;
	}
	CHECK(r == 0 && len <= sizeof(id), "no build id (rc %d)", r);
	if (r != 0)
		return;
	for (i = 0; i < len; i++)
		snprintf(mine + 2 * i, 3, "%02x", id[i]);
	CHECK(strcmp(mine, hex) == 0, "build id %s, readelf says %s", mine, hex);
	printf("build id: %s (readelf: %s)\n", mine, hex);

	/* Lookup by build id: plain .build-id link, then perf's cache layout. */
	if (!mkdtemp(dir))
		return;
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir -p .build-id/%.2s; ln -s '%s' .build-id/%.2s/%s",
		 dir, hex, elf[0] == '/' ? elf : realpath(elf, found), hex, hex + 2);
	CHECK(system(cmd) == 0, "%s", cmd);
	r = symtab_find_by_build_id(dirs, hex, 0, found, sizeof(found));
	CHECK(r == 0 && strstr(found, "/.build-id/"), "build-id link not found (%d)", r);
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; rm .build-id/%.2s/%s; mkdir -p bin/%s; cp '%s' bin/%s/elf;"
		 " ln -s ../../bin/%s .build-id/%.2s/%s",
		 dir, hex, hex + 2, hex, elf, hex, hex, hex, hex + 2);
	CHECK(system(cmd) == 0, "%s", cmd);
	r = symtab_find_by_build_id(dirs, hex, 1, found, sizeof(found));
	CHECK(r == 0 && strstr(found, "/elf"), "perf cache layout not found (%d)", r);
	printf("build id lookup: %s\n", r == 0 ? found : "not found");
	/* A wrong id must not match a file with another id. */
	/* another valid hex digit (XOR would turn 'f' into 'g') */
	hex[strlen(hex) - 1] = hex[strlen(hex) - 1] == '0' ? '1' : '0';
	CHECK(symtab_find_by_build_id(dirs, hex, 0, found, sizeof(found)) ==
	      PTD_ERR_NO_IMAGE, "wrong build id matched %s", found);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "rm");
}

/* Runs "ELF maps": the loader's placement of the program and libc. */
static void check_runtime(const char *elf)
{
	char cmd[10000], **l, real[4096];
	size_t n, i, j, ok = 0, total = 0;

	if (!realpath(elf, real))
		snprintf(real, sizeof(real), "%s", elf);
	snprintf(cmd, sizeof(cmd), "'%s' maps", real);
	n = run_lines(cmd, &l);
	for (i = 0; i < n; i++) {
		char fn[256];
		uint64_t addr, start = 0, end, pgoff = 0, bias;
		char path[4096] = "";
		struct symtab *st = NULL;
		const char *name;
		uint64_t off;

		if (sscanf(l[i], "FN %255s %" SCNx64, fn, &addr) != 2)
			continue;
		/* the executable mapping holding addr */
		for (j = 0; j < n; j++) {
			char perm[8];
			int pos = 0;
			if (sscanf(l[j], "MAP %" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
				   &start, &end, perm, &pgoff, &pos) >= 4 &&
			    pos && addr >= start && addr < end) {
				snprintf(path, sizeof(path), "%s", l[j] + pos);
				break;
			}
		}
		total++;
		CHECK(path[0], "%s %#" PRIx64 ": no mapping", fn, addr);
		if (!path[0] || symtab_from_elf_file(&st, path, NULL, 0) < 0) {
			CHECK(0, "cannot read %s", path);
			continue;
		}
		CHECK(symtab_load_bias(st, start, pgoff, &bias) == 0, "no bias");
		if (symtab_load_bias(st, start, pgoff, &bias) == 0 &&
		    symtab_lookup(st, addr - bias, &name, &off) == 0) {
			struct nsym *v;
			size_t nv = nm_funcs(path, strcmp(path, real) != 0, &v);
			char plt[300];
			int good;
			/* in a non-PIE program, &puts is its PLT entry */
			snprintf(plt, sizeof(plt), "%s@plt", fn);
			good = off == 0 && ((nm_has(v, nv, addr - bias, name) &&
					     nm_has(v, nv, addr - bias, fn)) ||
					    !strcmp(name, plt));
			CHECK(good, "%s at %#" PRIx64 " (map %#" PRIx64 " pgoff %#" PRIx64
			      " %s, bias %#" PRIx64 ") resolved to %s+%#" PRIx64,
			      fn, addr, start, pgoff, path, bias, name, off);
			printf("runtime: %-16s %#14" PRIx64 " %s bias %#" PRIx64 " -> %s+%#" PRIx64 "\n",
			       fn, addr, strrchr(path, '/') + 1, bias, name, off);
			ok += good;
			free(v);
		} else {
			CHECK(0, "%s at %#" PRIx64 " not resolved", fn, addr);
		}
		symtab_free(st);
	}
	free_lines(l, n);
	CHECK(total >= 5, "too few FN lines");
	printf("runtime: %zu/%zu loader-placed functions resolved via load bias\n", ok, total);
}

int main(int argc, char **argv)
{
	const char *elf;
	int dynamic = 0, run = 0, i;
	struct symtab *sf = NULL, *sm = NULL;
	struct util_map m;
	struct nsym *v;
	size_t n, k, starts = 0, ok_start = 0, ends = 0, ok_end = 0, pads = 0, ok_pad = 0;
	char err[512];

	if (argc < 2) {
		printf("usage: %s ELF [--dynamic] [--run]\n", argv[0]);
		return 2;
	}
	elf = argv[1];
	for (i = 2; i < argc; i++) {
		dynamic |= strcmp(argv[i], "--dynamic") == 0;
		run |= strcmp(argv[i], "--run") == 0;
	}
	if (access(elf, R_OK) != 0) {
		printf("SKIP: %s not readable\n", elf);
		return SKIP;
	}
	if (symtab_from_elf_file(&sf, elf, err, sizeof(err)) < 0) {
		printf("FAIL: %s\n", err);
		return 1;
	}
	if (util_map_file(elf, &m, err, sizeof(err)) < 0 ||
	    symtab_from_elf_mem(&sm, m.data, m.size, err, sizeof(err)) < 0) {
		printf("FAIL: %s\n", err);
		return 1;
	}
	n = nm_funcs(elf, dynamic, &v);
	CHECK(n > 0, "nm found no functions");
	printf("%s: nm function symbols %zu, symtab addresses %zu\n", elf, n,
	       symtab_count(sf));
	for (k = 0; k < n; k++) {
		if (k > 0 && v[k].addr == v[k - 1].addr)
			continue;
		starts++;
		check_probe(sf, sm, v, n, v[k].addr, 1, &ok_start);
		if (v[k].size > 1) {
			ends++;
			check_probe(sf, sm, v, n, v[k].addr + v[k].size - 1, 1, &ok_end);
		}
		/* padding right after a sized symbol */
		if (v[k].size && !nm_covers(v, n, v[k].addr + v[k].size) &&
		    (k + 1 == n || v[k + 1].addr > v[k].addr + v[k].size)) {
			pads++;
			check_probe(sf, sm, v, n, v[k].addr + v[k].size, 0, &ok_pad);
		}
	}
	printf("starts: %zu/%zu, last bytes: %zu/%zu, padding->none: %zu/%zu\n",
	       ok_start, starts, ok_end, ends, ok_pad, pads);
	if (!dynamic)
		check_plt(sf, elf);
	check_build_id(elf);

	/* Truncated and damaged images must fail cleanly, never crash. */
	for (k = 0; k < m.size; k += m.size / 97 + 1) {
		struct symtab *t = NULL;
		if (symtab_from_elf_mem(&t, m.data, k, err, sizeof(err)) == 0)
			symtab_free(t);
	}
	{
		struct symtab *t = NULL;
		CHECK(symtab_from_elf_mem(&t, (const uint8_t *)"not an elf file",
					  15, err, sizeof(err)) == PTD_ERR_FORMAT &&
		      !t, "garbage accepted");
	}
	if (run)
		check_runtime(elf);

	free(v);
	symtab_free(sf);
	symtab_free(sm);
	util_unmap(&m);
	printf("%s\n", g_fail ? "FAILED" : "PASSED");
	return g_fail ? 1 : 0;
}
