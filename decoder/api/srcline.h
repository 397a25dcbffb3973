/* SPDX-License-Identifier: MIT */
/*
 * srcline (stage: api/) - source file and line of a code address, from the DWARF line
 * tables of an ELF file (libdw).
 *
 * Addresses are ELF virtual addresses as linked (runtime address - load
 * bias, see symtab_load_bias).  Files are opened on first use and kept
 * open in a small cache (the 8 most recently used); a file without DWARF
 * is remembered as such.  A stripped binary's lines are in its separate
 * debug file (found with symtab_find_by_build_id / symtab_find_debuglink),
 * which the caller gives beside the binary.  Not thread-safe; one per
 * thread.
 */
#ifndef PTD_SRCLINE_H
#define PTD_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

struct srcline;

/* NULL when out of memory. */
struct srcline *srcline_new(void);
void srcline_free(struct srcline *s);

/* Looks up vaddr in the DWARF of debug, the separate debug file of the ELF
 * file path (NULL: none), or, when debug has no DWARF (or cannot be read),
 * in path's own DWARF; path is not opened when debug has DWARF (it holds
 * all of it).  Returns 0 with the
 * source file name (as the compiler recorded it, made absolute with the
 * compilation directory when relative) copied to file and its line in
 * *line; or PTD_ERR_NO_IMAGE (no DWARF line info for the address),
 * PTD_ERR_IO (path unreadable), PTD_ERR_UNSUPPORTED (built without libdw),
 * with a message in err.  Padding after a function's end that lies outside
 * its compilation unit's ranges has no line (addr2line would extend the
 * previous line over it). */
int srcline_lookup(struct srcline *s, const char *path, const char *debug,
		   uint64_t vaddr, char *file, size_t filelen, int *line,
		   char *err, size_t errlen);

/* The same; *stmt (when stmt is not NULL) is 1 when a row of the line
 * table of *line begins a statement exactly at vaddr (where a debugger's
 * line step stops), else 0.  *line is the same as without stmt. */
int srcline_lookup_stmt(struct srcline *s, const char *path,
			const char *debug, uint64_t vaddr, char *file,
			size_t filelen, int *line, int *stmt, char *err,
			size_t errlen);

#endif
