/* SPDX-License-Identifier: MIT */
/*
 * walk_kcore (stage: capture/synth/) - `ptsynth walk --kcore`: the
 * kcore_dir of perf record's --kcore layout for a walk, as perf copies it
 * when recording starts: OUT/kcore_dir/kcore (format/kcore.h) with one
 * PT_LOAD per kernel code row valid at the copy time, kallsyms (the
 * capture's kernel symbols, without the BPF programs of other times, plus
 * a line per copied row) and modules (the capture's, else empty).
 */
#ifndef PTSYNTH_WALK_KCORE_H
#define PTSYNTH_WALK_KCORE_H

#include <stddef.h>
#include <stdint.h>

#include "textstore.h"

/* A code row of the walk. */
struct walk_kcore_row {
	const struct textstore_entry *e;
	const uint8_t *bytes;   /* NULL: not captured, not copied */
};

/* Writes OUT/kcore_dir/ for the copy at time t.  from is the capture
 * directory (its kallsyms and modules, when there); kernel_text is where
 * the kernel MMAP puts _text, written to kallsyms when the capture's has
 * none.  Rows that overlap with
 * other bytes at t make it exit with a message.  Returns the number of
 * ranges copied. */
size_t walk_kcore_write(const char *out, const char *from,
			const struct walk_kcore_row *rows, size_t n, uint64_t t,
			uint64_t kernel_text);

#endif
