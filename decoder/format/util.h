/* SPDX-License-Identifier: MIT */
/* util - small helpers shared by the library's stages and capture/ (no
 * state); format stage (decoder/format/). */
#ifndef PTD_UTIL_H
#define PTD_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* snprintf into an error buffer; safe with buf == NULL. */
void util_errf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Grows *arr (element size esz) so that it holds at least n elements.
 * Returns 0, or -1 when out of memory (the old array stays valid). */
int util_grow(void **arr, size_t *cap, size_t n, size_t esz);

/* qsort that accepts an empty array with base NULL (qsort's base must
 * never be NULL, even for n == 0). */
void util_sort(void *base, size_t n, size_t esz,
	       int (*cmp)(const void *, const void *));

/* Maps fresh zeroed memory's pages writable in one call (a hint: errors
 * are ignored).  Left to faults, a page first read (a table lookup) maps
 * the shared zero page, and the write after it must flush the TLB of
 * every CPU running the process's threads: an IPI per page, expensive in
 * a VM, once a second thread exists. */
void util_populate(void *p, size_t len);

/* A read-only mapping of a whole file. */
struct util_map {
	const uint8_t *data;
	size_t size;
};
/* Returns 0, or a negative enum ptd_error with a message in err. */
int util_map_file(const char *path, struct util_map *m, char *err, size_t errlen);
void util_unmap(struct util_map *m);

/* 1 when both paths name the same existing file (same device and inode,
 * whatever links lead there), else 0. */
int util_same_file(const char *a, const char *b);

static inline uint16_t util_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t util_le32(const uint8_t *p)
{ return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static inline uint64_t util_le64(const uint8_t *p)
{ return (uint64_t)util_le32(p) | (uint64_t)util_le32(p + 4) << 32; }

#endif
