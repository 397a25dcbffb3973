/* SPDX-License-Identifier: MIT */
/*
 * linebreak (stage: api/) - ptd_line_range and ptd_line_addrs: the
 * debugger line tables of linetab over a session's images (the ELF file
 * and load bias of each image version).  The public interface is in
 * ptdecode.h; nothing else is exported.
 */
#ifndef PTD_LINEBREAK_H
#define PTD_LINEBREAK_H

#include "ptdecode.h"

/* Address ranges (sorted, disjoint: *out, *n; the caller frees *out)
 * holding every address any image version of the session can give the
 * source line file:line at (symbols_source_stmt; file as
 * PTD_FIND_LINE takes it): more where several lines share an address.
 * Returns 0, PTD_ERR_UNSUPPORTED when the set cannot be known (lines
 * of JIT or BPF code, or no libdw: every address may be on it), or
 * PTD_ERR_NOMEM. */
int linebreak_line_spans(struct ptd_session *s, const char *file,
			 unsigned int line, struct ptd_addr_range **out,
			 size_t *n);

#endif
