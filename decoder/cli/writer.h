/* SPDX-License-Identifier: MIT */
/*
 * writer (stage: cli/) - the text views' output: lines are assembled in a big buffer
 * that, once full, is handed to a writer thread while the next one fills,
 * so write(2) (the kernel's copy into the page cache: a sixth of a text
 * dump to a file) runs beside the formatting.  Buffers are 1 MiB: with
 * 64 KiB ones the hand-offs cost ~1,400 context switches per 36 MB dump
 * and made it slower than writing on the formatting thread.  The thread
 * starts on the first full buffer (short outputs never start it); without
 * threads, or if it cannot start, buffers are written in place.
 */
#ifndef PTD_CLI_WRITER_H
#define PTD_CLI_WRITER_H

#include <stddef.h>
#include <stdio.h>

struct writer_thread;

struct writer {
	char *buf;          /* lines being assembled: buf[0..len) */
	size_t len, cap;
	FILE *out;
	int threaded;
	struct writer_thread *t;
	char *spare;        /* the other buffer (written by the thread) */
};

/* Returns 0 or -1 (memory). */
int writer_init(struct writer *w, FILE *out, int threaded);
/* Makes room for at least need bytes: hands buf over when it has less. */
void writer_reserve(struct writer *w, size_t need);
/* Writes everything assembled so far and waits until it is written:
 * before writing to out directly.  Write errors show in ferror(out). */
void writer_flush(struct writer *w);
void writer_fini(struct writer *w);

#endif
