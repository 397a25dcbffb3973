/* SPDX-License-Identifier: MIT */
/*
 * linetab (stage: api/) - a debugger's view of the DWARF line tables
 * (libdw): the line-table entries a source-level debugger keeps (rows of
 * the same line that carry a discriminator fold into the first, as gdb
 * folds them), the line range around an address (from its entry to the
 * next entry, the unit of line stepping), and the addresses of a source
 * line for breakpoints (is_stmt entries; per lexical block the lowest;
 * a function's opening line moved past a frame-pointer prologue).
 *
 * Addresses are ELF virtual addresses as linked.  Files are opened on
 * first use and kept in a small cache with the tables built from them.
 * Not thread-safe.
 */
#ifndef PTD_LINETAB_H
#define PTD_LINETAB_H

#include <stddef.h>
#include <stdint.h>

struct linetab;

/* NULL when out of memory. */
struct linetab *linetab_new(void);
void linetab_free(struct linetab *lt);

struct linetab_sal {
	uint64_t start, end;       /* the entry's range; end 0: unknown */
	unsigned int line;
	int is_stmt;               /* the entry starts a statement */
	const char *file;          /* valid until the next call */
	uint64_t func_start, func_end; /* the subprogram around it, 0: none */
	uint64_t func_body;        /* where a step into it stops: past a
				    * frame-pointer prologue, else its start */
	const char *func_name;     /* its DWARF name, NULL: none */
};

/* The entry around vaddr in the DWARF of debug (NULL: none, or without
 * DWARF: path's own).  Returns 0, or PTD_ERR_NO_IMAGE when vaddr has no
 * line (sal->line 0), PTD_ERR_IO, PTD_ERR_UNSUPPORTED (no libdw). */
int linetab_find(struct linetab *lt, const char *path, const char *debug,
		 uint64_t vaddr, struct linetab_sal *sal);

/* The breakpoint addresses of file:line (file: a path or its last
 * components) in that ELF file: up to max in addrs, *n how many in all.
 * When no entry has that line, the nearest following line with code in
 * the same file is taken; *found_line is the line used (0: none),
 * *shown_line the line of the lowest address (another one where a
 * prologue skip moved it). */
int linetab_addrs(struct linetab *lt, const char *path, const char *debug,
		  const char *file, unsigned int line, uint64_t *addrs,
		  size_t max, size_t *n, unsigned int *found_line,
		  unsigned int *shown_line);

/* Where a breakpoint on function name stops in that ELF file: the entry
 * of each subprogram of that name in the DWARF, past a frame-pointer
 * prologue; up to max in addrs, *n how many in all. */
int linetab_func_addrs(struct linetab *lt, const char *path,
		       const char *debug, const char *name, uint64_t *addrs,
		       size_t max, size_t *n);

/* Calls add(ctx, start, end) for address spans of that ELF file that
 * together hold every address whose line (the row at or before it, as a
 * DWARF lookup picks it) is line of a file named like file (the same
 * last component): each row of that line up to the next greater row
 * address of its unit.  More than the exact set where rows of several
 * lines share an address: a filter in front of exact lookups.  Returns
 * 0, add's error, or PTD_ERR_IO / PTD_ERR_UNSUPPORTED (no libdw). */
int linetab_line_spans(struct linetab *lt, const char *path, const char *debug,
		       const char *file, unsigned int line,
		       int (*add)(void *ctx, uint64_t start, uint64_t end),
		       void *ctx);

#endif
