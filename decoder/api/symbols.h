/* SPDX-License-Identifier: MIT */
/*
 * symbols - symbolization (api stage): the public ptd_symbolize,
 * ptd_image_name, ptd_source_line and ptd_thread_name over a session's
 * input, and the cache they keep: one symbol table per ELF file (merged
 * with its separate debug file's) and the DWARF line tables (srcline).
 */
#ifndef PTD_SYMBOLS_H
#define PTD_SYMBOLS_H

struct symbols;

/* NULL when out of memory. */
struct symbols *symbols_new(void);
void symbols_free(struct symbols *sy);

#endif
