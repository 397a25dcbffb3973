/* SPDX-License-Identifier: MIT */
/*
 * kcore_unit: format/kcore.c's writer against binutils' readelf (the
 * program headers it lists), its reader against the bytes written, and
 * its errors on files that are no kcore or are cut short.
 *
 *   kcore_unit DIR   (scratch files go to DIR)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcore.h"
#include "ptdecode.h"

static int failures;

#define CHECK(c, ...) do { if (!(c)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); failures++; } } while (0)

static uint8_t a[300], b[5000], c[17];
static const struct kcore_range ranges[] = {
	{ 0xffffffffc0022150ull, a, sizeof(a) },
	{ 0xffffffff81000000ull, b, sizeof(b) },
	{ 0xffffffffc0026058ull, c, sizeof(c) },
};

/* readelf -lW's LOAD lines: offset, vaddr, filesz. */
static size_t readelf_loads(const char *path, struct kcore_seg *out, size_t max)
{
	char cmd[4200], line[512];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p) && n < max) {
		unsigned long long off, va, pa, fs;

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa,
			   &fs) == 4) {
			out[n].offset = off;
			out[n].vaddr = va;
			out[n++].size = fs;
		}
	}
	pclose(p);
	return n;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		printf("FAIL: cannot write %s\n", path);
		exit(1);
	}
}

static void expect_error(const char *path, int want, const char *words)
{
	struct kcore *k;
	char err[512] = "";
	int rc = kcore_open(path, &k, err, sizeof(err));

	CHECK(rc == want, "%s: got %d (%s), want %d", path, rc, err, want);
	CHECK(strstr(err, words) != NULL, "%s: message '%s' lacks '%s'", path, err, words);
	CHECK(!k, "%s: no kcore on failure", path);
	if (!rc)
		kcore_close(k);
}

int main(int argc, char **argv)
{
	char path[4096], bad[4200], err[512];
	struct kcore_seg re[8];
	struct kcore *k;
	uint8_t buf[5000];
	size_t n;
	FILE *f;
	long size;
	char *whole;

	if (argc != 2) {
		fprintf(stderr, "usage: kcore_unit DIR\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 13 + 5);
	memset(c, 0xcc, sizeof(c));
	snprintf(path, sizeof(path), "%s/kcore", argv[1]);
	CHECK(kcore_write(path, ranges, 3, err, sizeof(err)) == 0, "write: %s", err);

	/* the writer, as readelf reads it */
	n = readelf_loads(path, re, 8);
	if (!n) {
		printf("SKIP: readelf (binutils) is needed as the oracle\n");
		return 77;
	}
	CHECK(kcore_open(path, &k, err, sizeof(err)) == 0, "open: %s", err);
	if (failures)
		return 1;
	CHECK(n == 3 && kcore_nsegs(k) == 3, "readelf %zu, we %zu segments", n,
	      kcore_nsegs(k));
	for (size_t i = 0; i < n && i < kcore_nsegs(k); i++) {
		const struct kcore_seg *s = kcore_get_seg(k, i);

		CHECK(s->vaddr == re[i].vaddr && s->offset == re[i].offset &&
		      s->size == re[i].size, "segment %zu: %#" PRIx64 "/%#" PRIx64 "/%"
		      PRIu64 ", readelf %#" PRIx64 "/%#" PRIx64 "/%" PRIu64, i, s->vaddr,
		      s->offset, s->size, re[i].vaddr, re[i].offset, re[i].size);
		CHECK(s->vaddr == ranges[i].vaddr && s->size == ranges[i].size,
		      "segment %zu is not range %zu", i, i);
	}
	/* the reader: bytes back, inside a segment only */
	for (size_t i = 0; i < 3; i++) {
		CHECK(kcore_read(k, ranges[i].vaddr, buf, ranges[i].size, err,
				 sizeof(err)) == 0, "read %zu: %s", i, err);
		CHECK(!memcmp(buf, ranges[i].bytes, ranges[i].size), "bytes of %zu", i);
	}
	CHECK(kcore_read(k, ranges[1].vaddr + 100, buf, 10, err, sizeof(err)) == 0 &&
	      !memcmp(buf, b + 100, 10), "read inside: %s", err);
	CHECK(kcore_read(k, ranges[0].vaddr + 290, buf, 11, err, sizeof(err)) ==
	      PTD_ERR_NO_IMAGE && strstr(err, "holds no bytes"), "read past: %s", err);
	CHECK(kcore_read(k, 0xffffffff80000000ull, buf, 1, err, sizeof(err)) ==
	      PTD_ERR_NO_IMAGE, "read outside");
	CHECK(kcore_find(k, ranges[2].vaddr + 16) && !kcore_find(k, ranges[2].vaddr + 17),
	      "find at the end");
	kcore_close(k);

	/* no kcore: not ELF, not a core file, cut short */
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	whole = malloc((size_t)size);
	if (!whole || fread(whole, 1, (size_t)size, f) != (size_t)size)
		return 1;
	fclose(f);
	snprintf(bad, sizeof(bad), "%s/kcore.text", argv[1]);
	write_file(bad, "ffffffff81000000 T _text\n", 25);
	expect_error(bad, PTD_ERR_FORMAT, "not an ELF file");
	snprintf(bad, sizeof(bad), "%s/kcore.short", argv[1]);
	write_file(bad, whole, 30);
	expect_error(bad, PTD_ERR_FORMAT, "shorter than an ELF64 header");
	snprintf(bad, sizeof(bad), "%s/kcore.exec", argv[1]);
	whole[16] = 2;   /* e_type ET_EXEC */
	write_file(bad, whole, (size_t)size);
	expect_error(bad, PTD_ERR_FORMAT, "not a core file");
	whole[16] = 4;
	snprintf(bad, sizeof(bad), "%s/kcore.nophdr", argv[1]);
	write_file(bad, whole, 100);
	expect_error(bad, PTD_ERR_TRUNCATED, "the file ends before them");
	snprintf(bad, sizeof(bad), "%s/kcore.cut", argv[1]);
	write_file(bad, whole, (size_t)size - 1);
	expect_error(bad, PTD_ERR_TRUNCATED, "truncated");
	snprintf(bad, sizeof(bad), "%s/kcore.missing", argv[1]);
	unlink(bad);
	expect_error(bad, PTD_ERR_IO, "cannot open");
	free(whole);
	if (failures)
		return 1;
	printf("ok: 3 segments equal readelf's, bytes and errors as expected\n");
	return 0;
}
