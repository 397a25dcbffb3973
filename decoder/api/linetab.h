/* SPDX-License-Identifier: MIT */
/*
 * linetab (stage: api/) - a debugger's view of the DWARF line tables
 * (libdw): the line-table entries a source-level debugger keeps (rows of
 * the same line that carry a discriminator fold into the first, as gdb
 * folds them), the line range around an address (from its entry to the
 * next entry, the unit of line stepping), and the addresses of a source
 * line for breakpoints (is_stmt entries; per lexical block the lowest;
 * a function's opening line moved past a frame-pointer prologue); the
 * inlined subroutines around an address, and the name gdb gives an
 * address without DWARF (its minimal symbol).
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
 * prologue, and of each place it is inlined (the inlined block's entry,
 * or the next line-table entry when that is in the middle of one); up to max in addrs, *n how many in all. */
int linetab_func_addrs(struct linetab *lt, const char *path,
		       const char *debug, const char *name, uint64_t *addrs,
		       size_t max, size_t *n);

/* The name gdb gives vaddr without DWARF (its minimal symbol) from the
 * ELF file's symbol table: the function symbol at the highest address at
 * or below vaddr that holds it; of several there, the last by name, a
 * local one yielding to a global or weak one of the same size sorted
 * just before it.  Fills name and the symbol's address.  Returns 0 or
 * PTD_ERR_NO_IMAGE. */
int linetab_minsym(struct linetab *lt, const char *path, const char *debug,
		   uint64_t vaddr, char *name, size_t len, uint64_t *start);

/* One function level around an address: an inlined subroutine
 * (DW_TAG_inlined_subroutine) or, last, the subprogram holding them. */
struct linetab_inl {
	const char *name;          /* its DWARF name, NULL: none */
	int inlined;               /* 1: inlined into the next level */
	const char *call_file;     /* inlined: the call site in the next */
	unsigned int call_line;    /* level (DW_AT_call_file/line) */
	int at_entry;              /* inlined: vaddr is where its code is
				    * entered (gdb's entry pc of the block,
				    * or the address before is outside it) */
};

/* The function levels around vaddr, innermost first (the physical DIE
 * nesting: inlined subroutines, then their subprogram); up to max in
 * out, *n how many in all (0: no DWARF function there).  Strings are
 * valid until the next call.  Returns 0 or a negative error. */
int linetab_inlines(struct linetab *lt, const char *path, const char *debug,
		    uint64_t vaddr, struct linetab_inl *out, size_t max,
		    size_t *n);

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
