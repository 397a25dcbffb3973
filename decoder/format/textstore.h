/* SPDX-License-Identifier: MIT */
/*
 * textstore - the dynamic text store of a capture directory (NAME.ptd/text/);
 * format stage (decoder/format/).
 *
 * One row per captured code range: what it is, where it was, when it was
 * valid, how it was obtained, and the content hash naming the blob file that
 * holds its bytes.  Written by ptcapture and ptsynth, read by the decoder's
 * image store.  Format: docs/FORMATS.md, "text/index.tsv".
 */
#ifndef PTD_TEXTSTORE_H
#define PTD_TEXTSTORE_H

#include <stddef.h>
#include <stdint.h>

#define TEXTSTORE_OPEN_END UINT64_MAX   /* valid_to of a still-valid range */

struct textstore_entry {
	char kind[16];        /* bpf, bpf-subprog, trampoline, kcore, poke,
			       * jit, file, vdso, uncertain */
	uint64_t start;       /* virtual address */
	uint64_t len;         /* bytes */
	uint64_t valid_from;  /* perf clock ns, 0 = since the beginning */
	uint64_t valid_to;    /* perf clock ns, TEXTSTORE_OPEN_END = open */
	int32_t pid;          /* address space, -1 = kernel / all */
	char source[16];      /* prog-info, fence, kcore, ptrace, jitdump,
			       * text-poke, file */
	char hash[17];        /* 16 hex digits of FNV-1a 64 of the bytes, or
			       * "-" when no bytes were captured */
	char tag[17];         /* BPF tag (16 hex digits) or "-" */
	uint32_t prog_id;     /* BPF program id, 0 when unknown */
	uint64_t pgoff;       /* file offset of start (kind file), else 0 */
	char build_id[41];    /* hex build id of the file, or "-" */
	char name[256];       /* symbol or file name */
};

struct textstore;

/* Reads DIR/index.tsv.  Returns 0, or a negative enum ptd_error with a
 * message in err (which names the file and the line). A missing index is
 * not an error: the store is empty. */
int textstore_open(const char *dir, struct textstore **out,
		   char *err, size_t errlen);
void textstore_close(struct textstore *ts);

size_t textstore_count(const struct textstore *ts);
const struct textstore_entry *textstore_get(const struct textstore *ts,
					    size_t i);

/* Maps the bytes of entry i (checks size and hash).  The pointer stays valid
 * until textstore_close.  Returns 0, or a negative enum ptd_error with a
 * message in err (e.g. blob missing: PTD_ERR_NO_IMAGE). */
int textstore_bytes(struct textstore *ts, size_t i, const uint8_t **data,
		    char *err, size_t errlen);

/* Content hash as used for blob names: FNV-1a 64, 16 lowercase hex digits. */
void textstore_hash(const void *data, size_t len, char out[17]);

/* Writing. */
struct textstore_writer;

/* Creates DIR (mode 0700) and DIR/index.tsv (mode 0600). */
int textstore_writer_open(const char *dir, struct textstore_writer **out);
/* Appends a row; writes the blob (once per distinct content) unless bytes
 * is NULL, in which case the row's hash is "-" (range known, bytes not). The
 * hash field of e is filled in. */
int textstore_writer_add(struct textstore_writer *w,
			 struct textstore_entry *e, const void *bytes);
int textstore_writer_close(struct textstore_writer *w);

#endif
