/* SPDX-License-Identifier: MIT */
/*
 * kallsyms parsing and sideband symbols: a generated sample with known
 * answers, bad inputs, and /proc/kallsyms (read independently here; every
 * text symbol address must resolve to one of its names with offset 0).
 *
 * usage: test_kallsyms TMPDIR
 */
#include "oracle.h"
#include "ptdecode.h"
#include "symtab.h"

#include <unistd.h>

static const char sample[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000100 t secondary_startup\n"
	"ffffffff81000200 D some_data\n"
	"ffffffff81000300 T do_syscall_64\n"
	"ffffffff81000300 W __weak_alias\n"
	"ffffffff81000400 r rodata_thing\n"
	"ffffffff81000500 t local_fn\n"
	"ffffffffc0000000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n"
	"ffffffffc0000800 t bpf_trampoline_6442\t[bpf]\n"
	"ffffffffc0001000 t ext4_foo\t[ext4]\n"
	"ffffffffc0001080 T ext4_bar\t[ext4]\n";

static void expect(struct symtab *st, uint64_t addr, const char *name, uint64_t off)
{
	const char *n = NULL;
	uint64_t o = 0;
	int r = symtab_lookup(st, addr, &n, &o);

	if (!name)
		CHECK(r == PTD_ERR_NO_IMAGE, "%#" PRIx64 ": expected none, got %s+%#" PRIx64,
		      addr, r == 0 ? n : "?", o);
	else
		CHECK(r == 0 && !strcmp(n, name) && o == off,
		      "%#" PRIx64 ": expected %s+%#" PRIx64 ", got %s+%#" PRIx64 " (rc %d)",
		      addr, name, off, r == 0 ? n : "-", o, r);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

struct ks { uint64_t addr; char *name; };

static int cmp_ks(const void *a, const void *b)
{
	const struct ks *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void check_proc(const char *dir)
{
	FILE *f;
	char copy[4096], cmd[8300];
	struct ks *v = NULL;
	size_t n = 0, cap = 0, i, ok = 0, distinct = 0, bpf = 0;
	char line[1024], name[600], type;
	uint64_t addr;
	struct symtab *st;
	char err[256];
	int r;

	/* One snapshot for both readers: BPF programs come and go. */
	snprintf(copy, sizeof(copy), "%s/kallsyms.proc", dir);
	snprintf(cmd, sizeof(cmd), "cat /proc/kallsyms > '%s'", copy);
	if (system(cmd) != 0 || !(f = fopen(copy, "r"))) {
		printf("/proc/kallsyms: not readable, skipped\n");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %599s", &addr, &type, name) != 3 ||
		    !strchr("tTwW", type))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			v = realloc(v, cap * sizeof(*v));
		}
		v[n].addr = addr;
		v[n++].name = strdup(name);
		bpf += strstr(line, "[bpf]") != NULL;
	}
	fclose(f);
	qsort(v, n, sizeof(*v), cmp_ks);
	if (!n || v[n - 1].addr == 0) {
		printf("/proc/kallsyms: addresses hidden, skipped\n");
		goto out;
	}
	r = symtab_from_kallsyms(&st, copy, err, sizeof(err));
	CHECK(r == 0, "/proc/kallsyms: %s", err);
	if (r)
		goto out;
	for (i = 0; i < n; i++) {
		const char *nm;
		uint64_t off;
		size_t j;
		int good = 0;
		if (i && v[i].addr == v[i - 1].addr)
			continue;
		distinct++;
		if (symtab_lookup(st, v[i].addr, &nm, &off) == 0 && off == 0)
			for (j = i; j < n && v[j].addr == v[i].addr; j++)
				good |= !strcmp(nm, v[j].name);
		ok += good;
		CHECK(good, "/proc/kallsyms %#" PRIx64 " %s not resolved", v[i].addr, v[i].name);
	}
	printf("/proc/kallsyms: %zu text symbols (%zu bpf), %zu/%zu addresses resolved; "
	       "table has %zu\n", n, bpf, ok, distinct, symtab_count(st));
	CHECK(symtab_count(st) == distinct, "count %zu != %zu", symtab_count(st), distinct);
	symtab_free(st);
out:
	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	unlink(copy);
}

int main(int argc, char **argv)
{
	char path[4096], err[512];
	struct symtab *st = NULL;
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	int r;

	snprintf(path, sizeof(path), "%s/kallsyms.sample", dir);
	if (write_file(path, sample) != 0) {
		printf("FAIL: cannot write %s\n", path);
		return 1;
	}
	r = symtab_from_kallsyms(&st, path, err, sizeof(err));
	CHECK(r == 0, "sample: %s", err);
	if (r)
		return 1;
	CHECK(symtab_count(st) == 8, "count %zu, expected 8", symtab_count(st));
	expect(st, 0xffffffff80fff000ull, NULL, 0);
	expect(st, 0xffffffff81000000ull, "startup_64", 0);      /* alias rule */
	expect(st, 0xffffffff81000010ull, "startup_64", 0x10);
	expect(st, 0xffffffff81000250ull, "secondary_startup", 0x150); /* D skipped */
	expect(st, 0xffffffff81000350ull, "do_syscall_64", 0x50); /* T over W */
	expect(st, 0xffffffff81000450ull, "do_syscall_64", 0x150); /* r skipped */
	expect(st, 0xffffffffc0000010ull, "bpf_prog_6deef7357e7b4530_sd_fw_ingress", 0x10);
	expect(st, 0xffffffffc00007ffull, "bpf_prog_6deef7357e7b4530_sd_fw_ingress", 0x7ff);
	expect(st, 0xffffffffc0000800ull, "bpf_trampoline_6442", 0);
	expect(st, 0xffffffffc0001090ull, "ext4_bar", 0x10);
	expect(st, 0xffffffffc0002080ull, NULL, 0);               /* past the last */

	/* Sideband symbols: sized, and overriding a kallsyms name. */
	CHECK(symtab_add(st, "bpf_prog_aaaa_new", 0xffffffffc0002000ull, 0x40) == 0, "add");
	CHECK(symtab_add(st, "bpf_prog_bbbb_jit", 0xffffffffc0000800ull, 0x100) == 0, "add");
	expect(st, 0xffffffffc0001f00ull, "ext4_bar", 0xe80);     /* up to next */
	expect(st, 0xffffffffc0002020ull, "bpf_prog_aaaa_new", 0x20);
	expect(st, 0xffffffffc0002040ull, NULL, 0);               /* sized end */
	expect(st, 0xffffffffc0000810ull, "bpf_prog_bbbb_jit", 0x10);
	expect(st, 0xffffffffc0000900ull, NULL, 0);   /* sized: gap to ext4_foo */
	symtab_free(st);

	/* Bad inputs. */
	snprintf(path, sizeof(path), "%s/kallsyms.zero", dir);
	write_file(path, "0000000000000000 T _text\n0000000000000000 t foo\n");
	CHECK(symtab_from_kallsyms(&st, path, err, sizeof(err)) == PTD_ERR_FORMAT && !st,
	      "all-zero kallsyms accepted");
	printf("zero addresses: %s\n", err);
	snprintf(path, sizeof(path), "%s/kallsyms.bad", dir);
	write_file(path, "ffffffff81000000 T ok\nthis is not kallsyms\n");
	CHECK(symtab_from_kallsyms(&st, path, err, sizeof(err)) == PTD_ERR_FORMAT,
	      "garbage accepted");
	printf("garbage: %s\n", err);
	CHECK(symtab_from_kallsyms(&st, "/nonexistent/kallsyms", err, sizeof(err)) ==
	      PTD_ERR_IO, "missing file");

	check_proc(dir);
	printf("%s\n", g_fail ? "FAILED" : "PASSED");
	return g_fail ? 1 : 0;
}
