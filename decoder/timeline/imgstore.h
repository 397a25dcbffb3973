/* SPDX-License-Identifier: MIT */
/*
 * imgstore (stage: timeline/) - the time-versioned image store: (address space, address, time)
 * -> code bytes.
 *
 * Every range of code the decoder may need is a version: bytes (from a file
 * region or from memory), an address range in one address space, and a time
 * window [valid_from, valid_to) on the perf clock.  Lookups name a time and
 * get the version that was valid then; they never fall back to "latest".
 * Where two versions could have been live and the time cannot tell them
 * apart, the lookup says so (IMGSTORE_AMBIGUOUS) instead of guessing.
 *
 * Address spaces: pid >= 0 for user processes; IMGSTORE_KERNEL (-1) for
 * kernel addresses, which every process sees.  Guest machines (virtual
 * machines traced from the host, timeline/machines.h) have address spaces
 * of their own below -1: IMGSTORE_GUEST_SPACE(m, pid) for process pid of
 * guest machine m, IMGSTORE_GUEST_SPACE(m, -1) for its kernel, which its
 * processes see instead of the host's.
 */
#ifndef PTD_IMGSTORE_H
#define PTD_IMGSTORE_H

#include <stddef.h>
#include <stdint.h>

#define IMGSTORE_KERNEL (-1)
#define IMGSTORE_FOREVER UINT64_MAX
#define IMGSTORE_TIME_UNKNOWN UINT64_MAX   /* lookup time when none known */

/* Guest address spaces: 23 bits of pid + 1 (Linux pids are below 2^22)
 * under each of up to IMGSTORE_GUEST_MACHINES machines. */
#define IMGSTORE_GUEST_MACHINES 255
#define IMGSTORE_GUEST_SPACE(m, pid) \
	((int32_t)(-2 - ((int32_t)(m) << 23) - ((int32_t)(pid) + 1)))
/* No address space at all: code that has none (guest code of a machine
 * the sideband does not describe); every read fails. */
#define IMGSTORE_NO_SPACE INT32_MIN

/* The kernel address space pid's processes see: IMGSTORE_KERNEL for host
 * processes, the machine's kernel for guest ones; pid itself for kernels
 * and IMGSTORE_NO_SPACE. */
static inline int32_t imgstore_kernel_of(int32_t pid)
{
	if (pid >= IMGSTORE_KERNEL || pid == IMGSTORE_NO_SPACE)
		return pid >= 0 ? IMGSTORE_KERNEL : pid;
	return IMGSTORE_GUEST_SPACE((-2 - pid) >> 23, -1);
}

/* Result codes of imgstore_read beyond byte counts. */
#define IMGSTORE_NOT_MAPPED (-100)   /* no version covers the address */
#define IMGSTORE_AMBIGUOUS (-101)    /* several versions, time can't choose */
#define IMGSTORE_NOT_CAPTURED (-102) /* range known, bytes never captured */
#define IMGSTORE_IO (-103)           /* file named by sideband unreadable */

struct imgstore;

struct imgstore_hit {
	uint64_t start, len;        /* the version's range */
	uint64_t valid_from, valid_to;
	const char *name;           /* file path or symbol name */
	const char *origin;         /* where bytes came from: path of the file
				     * or "text/<hash>.bin" */
	int version_id;             /* stable id of the version (> 0) */
	const char *elf_path;       /* ELF file the bytes belong to (for
				     * symbols), NULL if none */
	uint64_t pgoff;             /* file offset of start in elf_path */
	int32_t pid;
};

struct imgstore *imgstore_new(void);
void imgstore_free(struct imgstore *st);

/* Debug: ignore time, use the last version added for each address. */
void imgstore_set_no_versioning(struct imgstore *st, int on);

/* Adds a version backed by a file region [pgoff, pgoff+len).  The file is
 * opened lazily on first read; a file that cannot be opened makes reads
 * fail with IMGSTORE_IO (and imgstore_last_error says which file).
 * Returns the version id (> 0) or a negative enum ptd_error. */
int imgstore_add_file(struct imgstore *st, int32_t pid, uint64_t start,
		      uint64_t len, const char *path, uint64_t pgoff,
		      uint64_t valid_from, uint64_t valid_to, const char *name);

/* Adds a version backed by memory the caller keeps alive until
 * imgstore_free (e.g. a mapped text blob).  bytes == NULL records a range
 * whose bytes were never captured (reads give IMGSTORE_NOT_CAPTURED). */
int imgstore_add_bytes(struct imgstore *st, int32_t pid, uint64_t start,
		       uint64_t len, const uint8_t *bytes, uint64_t valid_from,
		       uint64_t valid_to, const char *name);

/* Records a range whose bytes are known to be unavailable, and why (file
 * missing, build id mismatch): reads fail with IMGSTORE_NOT_CAPTURED and a
 * message naming the range, the file and the reason. */
int imgstore_add_missing(struct imgstore *st, int32_t pid, uint64_t start,
			 uint64_t len, uint64_t valid_from, uint64_t valid_to,
			 const char *name, const char *reason);

/* Like imgstore_add_bytes, but the store keeps its own copy. */
int imgstore_add_copy(struct imgstore *st, int32_t pid, uint64_t start,
		      uint64_t len, const uint8_t *bytes, uint64_t valid_from,
		      uint64_t valid_to, const char *name);

/* Names the ELF file (and the offset of the version's start in it) that a
 * memory-backed version's bytes came from, so symbols can be found. */
int imgstore_set_origin(struct imgstore *st, int version_id,
			const char *elf_path, uint64_t pgoff);

/* Ends, at time t, every open version of pid overlapping [start, start+len)
 * (munmap, KSYMBOL UNREGISTER, exec).  len == 0 ends all of pid's user
 * versions (exec). */
void imgstore_end(struct imgstore *st, int32_t pid, uint64_t start,
		  uint64_t len, uint64_t t);

/* Copies the address space of parent into child at time t (fork). */
int imgstore_fork(struct imgstore *st, int32_t parent, int32_t child,
		  uint64_t t);

/* Reads up to len bytes at addr in pid's address space (kernel addresses
 * are found in IMGSTORE_KERNEL too) at time t.  Stops at the end of the
 * version that holds addr.  Returns the number of bytes read (> 0) or one
 * of the IMGSTORE_* codes above; hit, when non-NULL, describes the
 * version used or, on failure, the range concerned. */
int imgstore_read(struct imgstore *st, int32_t pid, uint64_t addr, uint64_t t,
		  uint8_t *buf, size_t len, struct imgstore_hit *hit);

/* The same, safe to call from several threads at once (adding versions is
 * not): messages go to err (may be NULL) instead of imgstore_last_error. */
int imgstore_read_r(struct imgstore *st, int32_t pid, uint64_t addr, uint64_t t,
		    uint8_t *buf, size_t len, struct imgstore_hit *hit,
		    char *err, size_t errlen);

/* Describes the version at (pid, addr, t) without reading. */
int imgstore_lookup(struct imgstore *st, int32_t pid, uint64_t addr,
		    uint64_t t, struct imgstore_hit *hit);

/* The i-th version added (0-based; -1: no such one), to list them. */
int imgstore_version_at(const struct imgstore *st, size_t i,
			struct imgstore_hit *hit);

/* Message for the last failure (names file or range), "" if none. */
const char *imgstore_last_error(const struct imgstore *st);

#endif
