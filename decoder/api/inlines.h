/* SPDX-License-Identifier: MIT */
/*
 * inlines (stage: api/) - the frames of inlined functions: a physical
 * frame of a call stack expanded into the inlined subroutines around its
 * pc (linetab_inlines over the session's image version there), innermost
 * first, each named and lined as gdb shows it (the innermost at the line
 * table's line, each outer one at its call site).
 */
#ifndef PTD_INLINES_H
#define PTD_INLINES_H

#include "ptdecode.h"

#include <stddef.h>

/* At most this many frames per physical frame (deeper inline nesting
 * keeps its innermost levels). */
#define INLINES_MAX 32

/* Writes fr's frames to out (up to max; *n how many, at least 1: fr
 * itself where no DWARF function holds its pc, at most INLINES_MAX).
 * The session's lookup time must be fr's. */
void inlines_expand(struct ptd_session *s, const struct ptd_frame *fr,
		   struct ptd_frame *out, size_t max, size_t *n);

#endif
