/* SPDX-License-Identifier: MIT */
/*
 * fuzz_common.h - helpers shared by the fuzz targets (test code only: the
 * targets keep a per-process scratch directory, which the library itself
 * must never do).
 *
 * The library reads inputs by path, so a target writes its input into a
 * memfd (and names it /proc/self/fd/N) or into files of a scratch
 * directory under /dev/shm (or $TMPDIR) that lives as long as the process.
 */
#ifndef PTD_FUZZ_COMMON_H
#define PTD_FUZZ_COMMON_H

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PTD_FUZZ_DATA
#define PTD_FUZZ_DATA "tests/fuzz/data"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Defeats dead-code elimination of what the targets read back. */
static volatile uint64_t fz_sink;

static inline void fz_touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0;

	for (size_t i = 0; b && i < n; i++)
		h = h * 31 + b[i];
	fz_sink += h;
}

static inline void fz_touch_str(const char *s)
{
	if (s)
		fz_touch(s, strlen(s));
}

static inline int fz_write_all(int fd, const uint8_t *d, size_t n)
{
	while (n) {
		ssize_t w = write(fd, d, n);

		if (w <= 0)
			return -1;
		d += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Puts data into an anonymous in-memory file; path gets its name. */
static inline int fz_memfd(const uint8_t *d, size_t n, char path[64])
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);

	if (fd < 0 || fz_write_all(fd, d, n) < 0) {
		perror("memfd");
		abort();
	}
	snprintf(path, 64, "/proc/self/fd/%d", fd);
	return fd;
}

/* Writes a file (truncating); aborts on failure: the harness is broken. */
static inline void fz_write_file(const char *path, const uint8_t *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || fz_write_all(fd, d, n) < 0) {
		perror(path);
		abort();
	}
	close(fd);
}

static inline void fz_copy_file(const char *from, const char *to)
{
	int fd = open(from, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf;

	if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc(st.st_size + 1)) ||
	    read(fd, buf, st.st_size) != st.st_size) {
		perror(from);
		abort();
	}
	close(fd);
	fz_write_file(to, buf, st.st_size);
	free(buf);
}

static char fz_scratch_dir[256];

static void fz_rm_rf(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[512];

	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		fz_rm_rf(sub);
	}
	closedir(d);
	rmdir(path);
}

static void fz_scratch_cleanup(void)
{
	if (fz_scratch_dir[0])
		fz_rm_rf(fz_scratch_dir);
}

/* The process's scratch directory (created on first use, removed at exit). */
static inline const char *fz_scratch(void)
{
	if (!fz_scratch_dir[0]) {
		const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
				   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

		snprintf(fz_scratch_dir, sizeof(fz_scratch_dir),
			 "%s/ptd-fuzz-XXXXXX", base);
		if (!mkdtemp(fz_scratch_dir)) {
			perror("mkdtemp");
			abort();
		}
		atexit(fz_scratch_cleanup);
	}
	return fz_scratch_dir;
}

/* Regression tests of workarounds: with PTD_FUZZ_EXPECT_ERROR=TEXT set,
 * every input must produce an error event whose message contains TEXT.
 * fz_expect_event for each event, fz_expect_done at the end. */
static inline void fz_expect_event(int is_error, const char *msg, int *seen)
{
	const char *want = getenv("PTD_FUZZ_EXPECT_ERROR");

	if (want && is_error && msg && strstr(msg, want))
		*seen = 1;
}

static inline void fz_expect_done(int seen)
{
	const char *want = getenv("PTD_FUZZ_EXPECT_ERROR");

	if (want && !seen) {
		fprintf(stderr, "no error event containing \"%s\"\n", want);
		abort();
	}
}

#endif
