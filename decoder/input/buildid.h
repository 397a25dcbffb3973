/* SPDX-License-Identifier: MIT */
/*
 * buildid - build-id resolution (input stage): finds on this machine the
 * file a trace names, checked against the build id it recorded, and the
 * separate debug file of an ELF file.  Build ids of local files are read
 * once per path (the input's cache).
 */
#ifndef PTD_BUILDID_H
#define PTD_BUILDID_H

#include <stddef.h>
#include <stdint.h>

struct input;

/* Build ids of local files, by path ("" when a file has none). */
struct buildid_cache {
	struct buildid_entry { char *path; char hex[41]; } *e;
	size_t n, cap;
};

void buildid_cache_free(struct buildid_cache *c);

/* Writes the n bytes of id as lowercase hex to out (2n + 1 bytes). */
void buildid_hex(const uint8_t *id, size_t n, char *out);

/* The build id of the local file path, as hex: "" when it has none (or
 * when out of memory).  Valid while the input lives. */
const char *buildid_of_file(struct input *in, const char *path);

/* Where files are looked up by build id, before /usr/lib/debug and
 * ~/.debug: the search path, then the capture directory once
 * buildid_use_capture_dir was called. */
const char *const *buildid_dirs(const struct input *in);

/* Adds the capture directory in->dir to buildid_dirs: its .build-id/ holds
 * the program's own files when the recorder archived them.  Returns 0 or
 * PTD_ERR_NOMEM. */
int buildid_use_capture_dir(struct input *in);

/* Finds the file a MMAP record names (path, recorded build id want_bid or
 * NULL/"").  Returns a malloc'd path, or NULL with the reason in why. */
char *buildid_resolve_file(struct input *in, const char *path,
			   const char *want_bid, char *why, size_t whylen);

/* The separate debug file of the ELF file path.  Returns 0 with its path
 * in out, or PTD_ERR_NO_IMAGE when there is none. */
int buildid_find_debug_file(struct input *in, const char *path,
			    char *out, size_t outlen);

#endif
