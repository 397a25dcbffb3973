/* SPDX-License-Identifier: MIT */
/*
 * kcore (stage: format/) - ELF core files laid out as /proc/kcore and the
 * copy `perf record --kcore` keeps (kcore_dir/kcore): an ELF64 ET_CORE
 * whose PT_LOAD program headers each map a range of kernel virtual
 * addresses (p_vaddr, p_filesz) to bytes at p_offset in the file.
 *
 * The reader parses the headers itself with pread (no mmap of the whole
 * file: /proc/kcore's size is the size of the address space) and checks
 * that every segment lies inside a regular file.  The writer makes such a
 * file (one PT_LOAD per range) for ptsynth, ptcapture's tests and the
 * decoder's tests.  Format: docs/FORMATS.md, "kcore".
 */
#ifndef PTD_KCORE_H
#define PTD_KCORE_H

#include <stddef.h>
#include <stdint.h>

/* One PT_LOAD segment. */
struct kcore_seg {
	uint64_t vaddr;         /* first virtual address */
	uint64_t offset;        /* file offset of its bytes */
	uint64_t size;          /* bytes in the file (p_filesz) */
};

struct kcore;

/* Opens path and reads its program headers.  Returns 0 or a negative enum
 * ptd_error with a message in err naming the file and the problem (not
 * ELF64 little-endian, not ET_CORE, truncated headers or segments). */
int kcore_open(const char *path, struct kcore **out, char *err, size_t errlen);
void kcore_close(struct kcore *k);

size_t kcore_nsegs(const struct kcore *k);
const struct kcore_seg *kcore_get_seg(const struct kcore *k, size_t i);
const char *kcore_path(const struct kcore *k);

/* The segment holding addr, or NULL. */
const struct kcore_seg *kcore_find(const struct kcore *k, uint64_t addr);

/* Reads len bytes at virtual address addr, which must all lie in one
 * segment (the first that holds them all).  Returns 0, PTD_ERR_NO_IMAGE (with a message) when no segment
 * holds the whole range, or PTD_ERR_IO. */
int kcore_read(struct kcore *k, uint64_t addr, void *buf, size_t len,
	       char *err, size_t errlen);

/* A range to write. */
struct kcore_range {
	uint64_t vaddr;
	const void *bytes;
	uint64_t size;
};

/* Writes an ELF64 ET_CORE file for x86-64 with one PT_LOAD (R|W|X, as
 * perf's copy marks code) per range, in the order given.  Returns 0 or a
 * negative enum ptd_error with a message in err. */
int kcore_write(const char *path, const struct kcore_range *r, size_t n,
		char *err, size_t errlen);

#endif
