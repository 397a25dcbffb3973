/* SPDX-License-Identifier: MIT */
/*
 * driver_main.c - runs a fuzz target without libFuzzer: every file named
 * on the command line (directories: every regular file in them, sorted) is
 * passed once to LLVMFuzzerTestOneInput.  With no arguments, standard input
 * is the one input, so the binary also works under AFL++ (`afl-fuzz -i IN
 * -o OUT -- ./fuzz_x` or with `@@`) when built with afl-clang-fast.
 *
 * This is how ctest replays the committed corpora and regression inputs:
 * a crash, a sanitizer report or an abort() of a target's invariant check
 * fails the test.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t nrun;

static uint8_t *slurp(FILE *f, size_t *n)
{
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);

	while (buf) {
		size_t r = fread(buf + len, 1, cap - len, f);

		len += r;
		if (len < cap)
			break;
		uint8_t *nb = realloc(buf, cap *= 2);
		if (!nb) {
			free(buf);
			buf = NULL;
		} else
			buf = nb;
	}
	*n = len;
	return buf;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	buf = slurp(f, &n);
	fclose(f);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		return 1;
	}
	fprintf(stderr, "running %s (%zu bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	nrun++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	int bad = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return 1;
	}
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || stat(path, &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(path);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		bad |= run_file(names[i]);
		free(names[i]);
	}
	free(names);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0;

	if (argc < 2) {
		size_t n;
		uint8_t *buf = slurp(stdin, &n);

		if (!buf)
			return 1;
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			bad |= run_dir(argv[i]);
		else
			bad |= run_file(argv[i]);
	}
	fprintf(stderr, "%s: %zu inputs ran\n", argv[0], nrun);
	return bad;
}
