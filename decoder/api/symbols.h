/* SPDX-License-Identifier: MIT */
/*
 * symbols - symbolization (api stage): the public ptd_symbolize,
 * ptd_image_name, ptd_source_line and ptd_thread_name over a session's
 * input, and the cache they keep: one symbol table per ELF file (merged
 * with its separate debug file's) and the DWARF line tables (srcline).
 */
#ifndef PTD_SYMBOLS_H
#define PTD_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct symbols;

/* NULL when out of memory. */
struct symbols *symbols_new(void);
void symbols_free(struct symbols *sy);

struct ptd_session;
/* ptd_source_line, and with stmt whether a statement starts at addr
 * (srcline_lookup_stmt; always 1 for BPF and JIT lines). */
int symbols_source_stmt(struct ptd_session *s, int pid, uint64_t addr,
			char *file, size_t len, unsigned int *line, int *stmt);

struct imgstore_hit;
struct linetab;

/* The session's line tables (linetab.h). */
struct linetab *symbols_linetab(struct ptd_session *s);

/* The ELF file of an image version (hit): its separate debug file (NULL:
 * none) and load bias (runtime address - ELF address).  Returns 0, or
 * PTD_ERR_NO_IMAGE when the version has no ELF file. */
int symbols_elf_of(struct ptd_session *s, const struct imgstore_hit *hit,
		   const char **debug, uint64_t *bias);

/* The same for the version at (pid, addr) at the lookup time, filling
 * hit. */
int symbols_elf_at(struct ptd_session *s, int pid, uint64_t addr,
		   struct imgstore_hit *hit, const char **debug, uint64_t *bias);

#endif
