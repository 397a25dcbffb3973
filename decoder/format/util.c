/* SPDX-License-Identifier: MIT */
#include "util.h"
#include "ptdecode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void util_errf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void util_sort(void *base, size_t n, size_t esz,
	       int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, esz, cmp);
}

int util_grow(void **arr, size_t *cap, size_t n, size_t esz)
{
	size_t ncap;
	void *p;

	if (n <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < n) {
		if (ncap > SIZE_MAX / 2 / esz)
			return -1;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * esz);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

int util_map_file(const char *path, struct util_map *m, char *err, size_t errlen)
{
	struct stat st;
	int fd;
	void *p;

	m->data = NULL;
	m->size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		util_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return PTD_ERR_IO;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		util_errf(err, errlen, "%s is not a regular file", path);
		close(fd);
		return PTD_ERR_IO;
	}
	if (st.st_size == 0) {
		close(fd);
		m->data = (const uint8_t *)"";
		return 0;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		util_errf(err, errlen, "cannot map %s: %s", path, strerror(errno));
		return PTD_ERR_IO;
	}
	m->data = p;
	m->size = (size_t)st.st_size;
	return 0;
}

void util_unmap(struct util_map *m)
{
	if (m->size)
		munmap((void *)m->data, m->size);
	m->data = NULL;
	m->size = 0;
}

int util_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void util_populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)4095;

	if (e > a)
		madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)len;
#endif
}
