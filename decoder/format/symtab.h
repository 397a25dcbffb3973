/* SPDX-License-Identifier: MIT */
/*
 * symtab - function symbols of one image (an ELF file, the kernel's
 * kallsyms, or code learnt from sideband), for "symbol+0xoff" views, and
 * ELF build ids; format stage (decoder/format/).
 *
 * Addresses are the image's own addresses: for an ELF file, its virtual
 * addresses as linked (runtime address - load bias; symtab_load_bias
 * computes the bias from an MMAP record); for kallsyms, kernel addresses.
 *
 * Which symbols are kept: STT_FUNC, STT_GNU_IFUNC, and STT_NOTYPE symbols
 * defined in an executable section (hand-written assembly), from .symtab
 * and .dynsym, of the file and of its separate debug file when merged
 * (symtab_merge_elf_file; found with symtab_find_by_build_id or
 * symtab_find_debuglink); "name@plt" for x86-64 PLT slots; text symbols
 * of kallsyms.
 * Arm mapping symbols ($a, $t, $d, $x) are skipped, the Thumb bit of Arm
 * function addresses is cleared.
 *
 * Lookup rule (like perf): a symbol with a size covers [start, start+size)
 * and nothing beyond, so padding between functions resolves to no symbol;
 * a symbol without size covers up to the next symbol (4096 bytes when it
 * is the last one).  Of several symbols at one address, one name is shown:
 * sideband (symtab_add) over file symbols, sized over unsized, global over
 * weak over local, fewer leading underscores, then the shorter name.  An
 * address past the end of the nearest preceding symbol is still found in an
 * enclosing symbol that starts at most 4 symbols earlier (nested labels).
 *
 * A symtab is not thread-safe (lookups sort lazily after symtab_add).
 */
#ifndef PTD_SYMTAB_H
#define PTD_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

struct symtab;

/* An empty table (for sideband symbols).  NULL when out of memory. */
struct symtab *symtab_new(void);
void symtab_free(struct symtab *st);

/* Reads the symbols of an ELF file (executable, shared object, vmlinux,
 * separate debug file).  Returns 0 and *out, or a negative enum ptd_error
 * with a message in err (PTD_ERR_FORMAT: not ELF; PTD_ERR_UNSUPPORTED:
 * relocatable object).  A file without any symbols gives an empty table. */
int symtab_from_elf_file(struct symtab **out, const char *path,
			 char *err, size_t errlen);
/* The same for an ELF image in memory; bytes are only read, and need not
 * outlive the call. */
int symtab_from_elf_mem(struct symtab **out, const uint8_t *bytes, size_t len,
			char *err, size_t errlen);

/* Adds the function symbols of another ELF file of the same image, its
 * separate debug file (Debian's ld.so and libc keep only .dynsym; the
 * .symtab with their static functions is in /usr/lib/debug), read by the
 * rules above.  The table keeps its own segments (the load bias) and PLT
 * entries (a debug file's .plt is NOBITS); duplicates at one address are
 * resolved by the usual name rules.  The caller checks that the file
 * matches (build id, debuglink CRC).  Returns 0, or a negative enum
 * ptd_error with err set and the table unchanged. */
int symtab_merge_elf_file(struct symtab *st, const char *path,
			  char *err, size_t errlen);

/* Reads /proc/kallsyms format: "ADDR TYPE NAME [MODULE]" per line.  Keeps
 * text symbols (t, T, w, W), which include BPF programs
 * ("bpf_prog_TAG_NAME [bpf]"); each symbol's size is the distance to the
 * next one.  An all-zero file (kptr_restrict) gives PTD_ERR_FORMAT. */
int symtab_from_kallsyms(struct symtab **out, const char *path,
			 char *err, size_t errlen);

/* Adds a symbol learnt from sideband (KSYMBOL, jitdump).  size 0 = unknown.
 * Returns 0 or PTD_ERR_NOMEM / PTD_ERR_INVAL. */
int symtab_add(struct symtab *st, const char *name, uint64_t start,
	       uint64_t size);

/* Finds the symbol covering addr: 0 with *name (valid until the table is
 * changed or freed) and *off = addr - symbol start, or PTD_ERR_NO_IMAGE. */
int symtab_lookup(struct symtab *st, uint64_t addr, const char **name,
		  uint64_t *off);

/* Number of distinct symbol addresses in the table. */
size_t symtab_count(struct symtab *st);

/* Load bias of the ELF a table was read from, mapped at runtime address
 * start from file offset pgoff (an MMAP/MMAP2 record): runtime address =
 * ELF vaddr + bias.  The PT_LOAD segment holding file offset pgoff gives
 * bias = start - (p_vaddr - p_offset + pgoff); where two segments share the
 * page, the executable one is used.  Non-PIE executables get 0.  Returns 0
 * or PTD_ERR_NO_IMAGE (no segment maps pgoff, or not from an ELF). */
int symtab_load_bias(const struct symtab *st, uint64_t start, uint64_t pgoff,
		     uint64_t *bias);

/* Build id (NT_GNU_BUILD_ID note) of an ELF file (path) or ELF image in
 * memory (path NULL, bytes/len: e.g. a copy of the vDSO), from its note
 * sections, else its PT_NOTE program headers (images without section
 * headers).  Copies up to outcap bytes to out and sets *outlen to the id's
 * length (which may exceed outcap).  Returns 0, PTD_ERR_NO_IMAGE when the file
 * has no build id, or another negative enum ptd_error with err set. */
int symtab_build_id(const char *path, const uint8_t *bytes, size_t len,
		    uint8_t *out, size_t outcap, size_t *outlen,
		    char *err, size_t errlen);

/* Finds a file for a build id (lowercase hex) and writes its path to out.
 * Searched, for each DIR of dirs (NULL-terminated; may be NULL), then
 * /usr/lib/debug and $HOME/.debug:
 *   DIR/.build-id/xx/rest.debug         (separate debug info)
 *   DIR/.build-id/xx/rest               (a file, or perf's cache link to a
 *   DIR/.build-id/xx/rest/{elf,debug}    directory holding elf / debug)
 *   DIR/xx/rest/elf                     (ptdecode search-path layout)
 * want_debug != 0 tries the files with DWARF (.debug, debug) first, else
 * only files with code.  A candidate counts only if its own build id
 * matches.  Returns 0 or PTD_ERR_NO_IMAGE. */
int symtab_find_by_build_id(const char *const *dirs, const char *build_id_hex,
			    int want_debug, char *out, size_t outlen);

/* Whether the ELF file path holds debug information: a non-empty .symtab
 * or a .debug_info (.zdebug_info) section with contents.  Tells a separate
 * debug file (or an unstripped copy) from a stripped copy of the binary,
 * such as perf's build-id cache holds under the same build id.  0 also
 * when path is unreadable or no ELF file. */
int symtab_has_debug_info(const char *path);

/* Finds the separate debug file that the .gnu_debuglink section of the ELF
 * file path names, where gdb looks: DIR/NAME, DIR/.debug/NAME and
 * /usr/lib/debug/DIR/NAME, DIR being path's directory as given and with
 * links resolved.  A candidate counts only if it is not path itself and
 * the CRC-32 of its contents is the section's.  Writes its path to out;
 * returns 0 or PTD_ERR_NO_IMAGE (no debuglink, or no matching file). */
int symtab_find_debuglink(const char *path, char *out, size_t outlen);

#endif
