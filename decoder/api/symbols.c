/* SPDX-License-Identifier: MIT */
#include "symbols.h"
#include "buildid.h"
#include "dyntext.h"
#include "imgstore.h"
#include "input.h"
#include "kcoredir.h"
#include "linetab.h"
#include "session.h"
#include "sideband.h"
#include "srcline.h"
#include "symtab.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An ELF file's symbols (NULL: no ELF file) and its debug file, or NULL. */
struct symfile {
	char *path;
	struct symtab *tab;
	char *debug;
};

struct symbols {
	struct symfile *files;
	size_t nfiles, cap;
	struct srcline *src;         /* DWARF lines of ELF files */
	struct linetab *lt;          /* line tables as a debugger steps */
};

struct symbols *symbols_new(void)
{
	struct symbols *sy = calloc(1, sizeof(*sy));

	if (sy && (!(sy->src = srcline_new()) || !(sy->lt = linetab_new()))) {
		srcline_free(sy->src);
		free(sy);
		sy = NULL;
	}
	return sy;
}

void symbols_free(struct symbols *sy)
{
	if (!sy)
		return;
	for (size_t i = 0; i < sy->nfiles; i++) {
		free(sy->files[i].path);
		free(sy->files[i].debug);
		symtab_free(sy->files[i].tab);
	}
	free(sy->files);
	srcline_free(sy->src);
	linetab_free(sy->lt);
	free(sy);
}

/* The symbol table of an ELF file merged with its debug file's (NULL when
 * it is no ELF file; a stripped file whose debug file is missing gives an
 * empty table) and that debug file's path, read once per path (NULL when
 * out of memory).  Symbols and source lines take the same debug file. */
static struct symfile *symfile_entry(struct ptd_session *s, const char *path)
{
	struct symbols *sy = s->sym;
	char err[256], dbg[4096];
	struct symtab *tab = NULL;
	struct symfile *sf;

	for (size_t i = 0; i < sy->nfiles; i++)
		if (!strcmp(sy->files[i].path, path))
			return &sy->files[i];
	if (util_grow((void **)&sy->files, &sy->cap, sy->nfiles + 1,
		      sizeof(*sy->files)))
		return NULL;
	sf = &sy->files[sy->nfiles];
	memset(sf, 0, sizeof(*sf));
	if (symtab_from_elf_file(&tab, path, err, sizeof(err)))
		tab = NULL;
	if (tab && buildid_find_debug_file(s->in, path, dbg, sizeof(dbg)) == 0) {
		/* A debug file that cannot be read adds nothing. */
		symtab_merge_elf_file(tab, dbg, err, sizeof(err));
		sf->debug = strdup(dbg);
	}
	sf->path = strdup(path);
	if (!sf->path) {
		symtab_free(tab);
		free(sf->debug);
		sf->debug = NULL;
		return NULL;
	}
	sf->tab = tab;
	sy->nfiles++;
	return sf;
}

static struct symtab *symfile(struct ptd_session *s, const char *path)
{
	struct symfile *sf = symfile_entry(s, path);

	return sf ? sf->tab : NULL;
}

/* The lookup time: that of the last event, if any. */
static uint64_t lookup_time(const struct ptd_session *s)
{
	return s->cur_time ? s->cur_time : IMGSTORE_TIME_UNKNOWN;
}

/* The address space addr is in, for dynamic text. */
static int32_t dyntext_pid(int pid, uint64_t addr)
{
	return input_is_kernel_addr(addr) ? IMGSTORE_KERNEL : pid;
}

const char *ptd_thread_name(const struct ptd_session *s, int tid)
{
	return s && s->in && s->in->sb ? sideband_comm_of(s->in->sb, tid) : NULL;
}

/* A name the input gives: BPF programs and JIT code (the name valid at
 * this time), perf record --kcore's copy for its code, the sideband's,
 * --kallsyms.  Returns 0 or -1. */
static int input_symbol(struct ptd_session *s, int pid, uint64_t addr,
			const char **name, uint64_t *o)
{
	struct input *in = s->in;
	struct dyntext_sym ds;

	if (dyntext_symbol(in->dt, dyntext_pid(pid, addr), addr, lookup_time(s),
			   &ds) == 0 && ds.name) {
		*name = ds.name;
		*o = addr - ds.start;
		return 0;
	}
	if (input_is_kernel_addr(addr) &&
	    kcoredir_symbol(in, addr, lookup_time(s), name, o) == 0)
		return 0;
	if (symtab_lookup(in->sbsyms, addr, name, o) == 0 ||
	    (in->ksyms && input_is_kernel_addr(addr) &&
	     symtab_lookup(in->ksyms, addr, name, o) == 0))
		return 0;
	return -1;
}

/* A name from the symbols of the ELF file mapped at addr. */
static int file_symbol(struct ptd_session *s, int pid, uint64_t addr,
		       const char **name, uint64_t *o)
{
	struct imgstore_hit hit;
	struct symtab *tab;
	uint64_t bias;

	memset(&hit, 0, sizeof(hit));
	imgstore_lookup(s->in->st, pid, addr, lookup_time(s), &hit);
	if (!hit.elf_path || !(tab = symfile(s, hit.elf_path)))
		return PTD_ERR_NO_IMAGE;
	if (symtab_load_bias(tab, hit.start, hit.pgoff, &bias))
		bias = 0;
	if (symtab_lookup(tab, addr - bias, name, o))
		return PTD_ERR_NO_IMAGE;
	return 0;
}

int ptd_symbolize(struct ptd_session *s, int pid, uint64_t addr, char *buf,
		  size_t len, uint64_t *off)
{
	const char *name;
	uint64_t o;

	if (!s || !buf || !len)
		return PTD_ERR_INVAL;
	if (input_symbol(s, pid, addr, &name, &o) &&
	    file_symbol(s, pid, addr, &name, &o))
		return PTD_ERR_NO_IMAGE;
	snprintf(buf, len, "%s", name);
	if (off)
		*off = o;
	return 0;
}

const char *ptd_image_name(struct ptd_session *s, int pid, uint64_t addr)
{
	struct imgstore_hit hit;

	memset(&hit, 0, sizeof(hit));
	if (!s)
		return NULL;
	imgstore_lookup(s->in->st, pid, addr, IMGSTORE_TIME_UNKNOWN, &hit);
	return hit.name;
}

int ptd_source_line(struct ptd_session *s, int pid, uint64_t addr, char *file,
		    size_t len, unsigned int *line)
{
	return symbols_source_stmt(s, pid, addr, file, len, line, NULL);
}

int symbols_source_stmt(struct ptd_session *s, int pid, uint64_t addr,
			char *file, size_t len, unsigned int *line, int *stmt)
{
	struct imgstore_hit hit;
	struct symfile *sf;
	uint64_t t, bias = 0;
	char err[256];
	int l = 0;

	if (!s || !file || !len || !line)
		return PTD_ERR_INVAL;
	t = lookup_time(s);
	if (stmt)
		*stmt = 0;
	/* BPF and JIT line info: each address with a line is taken as a
	 * statement start. */
	if (dyntext_srcline(s->in->dt, dyntext_pid(pid, addr), addr, t, file, len,
			    line) == 0) {
		if (stmt)
			*stmt = 1;
		return 0;
	}
	memset(&hit, 0, sizeof(hit));
	imgstore_lookup(s->in->st, pid, addr, t, &hit);
	if (!hit.elf_path)
		return PTD_ERR_NO_IMAGE;
	/* The bias from the main file's program headers (the table's own
	 * segments), the lines from its debug file, else from itself. */
	sf = symfile_entry(s, hit.elf_path);
	if (sf && sf->tab && symtab_load_bias(sf->tab, hit.start, hit.pgoff,
					      &bias))
		bias = 0;
	if (srcline_lookup_stmt(s->sym->src, hit.elf_path,
				sf ? sf->debug : NULL, addr - bias, file, len,
				&l, stmt, err, sizeof(err)))
		return PTD_ERR_NO_IMAGE;
	*line = (unsigned int)l;
	return 0;
}

struct linetab *symbols_linetab(struct ptd_session *s)
{
	return s->sym->lt;
}

int symbols_elf_of(struct ptd_session *s, const struct imgstore_hit *hit,
		   const char **debug, uint64_t *bias)
{
	struct symfile *sf;

	*debug = NULL;
	*bias = 0;
	if (!hit->elf_path)
		return PTD_ERR_NO_IMAGE;
	sf = symfile_entry(s, hit->elf_path);
	if (sf && sf->tab && symtab_load_bias(sf->tab, hit->start, hit->pgoff,
					      bias))
		*bias = 0;
	*debug = sf ? sf->debug : NULL;
	return 0;
}

int symbols_elf_at(struct ptd_session *s, int pid, uint64_t addr,
		   struct imgstore_hit *hit, const char **debug, uint64_t *bias)
{
	memset(hit, 0, sizeof(*hit));
	imgstore_lookup(s->in->st, pid, addr, lookup_time(s), hit);
	return symbols_elf_of(s, hit, debug, bias);
}
