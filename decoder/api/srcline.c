/* SPDX-License-Identifier: MIT */
/* srcline - DWARF line lookups with a small cache of open files. */
#include "srcline.h"
#include "ptdecode.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PTD_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>

#define SRCLINE_CACHE 8

struct srcfile {
	char *path;         /* NULL: slot unused */
	int fd;
	Dwarf *dw;          /* NULL: file has no DWARF */
	uint64_t used;      /* LRU clock */
};

struct srcline {
	struct srcfile files[SRCLINE_CACHE];
	uint64_t clock;
};

struct srcline *srcline_new(void)
{
	return calloc(1, sizeof(struct srcline));
}

static void drop(struct srcfile *f)
{
	if (f->dw)
		dwarf_end(f->dw);
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	memset(f, 0, sizeof(*f));
}

void srcline_free(struct srcline *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < SRCLINE_CACHE; i++)
		if (s->files[i].path)
			drop(&s->files[i]);
	free(s);
}

/* The cache slot for path, opening it (evicting the least recently used
 * file) when it is not open yet. */
static int get_file(struct srcline *s, const char *path, struct srcfile **out,
		    char *err, size_t errlen)
{
	struct srcfile *f = NULL;
	int i;

	for (i = 0; i < SRCLINE_CACHE; i++) {
		struct srcfile *c = &s->files[i];
		if (c->path && strcmp(c->path, path) == 0) {
			c->used = ++s->clock;
			*out = c;
			return 0;
		}
		if (!f || !c->path || (f->path && c->used < f->used))
			f = c;
	}
	if (f->path)
		drop(f);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		util_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		memset(f, 0, sizeof(*f));
		return PTD_ERR_IO;
	}
	f->path = strdup(path);
	if (!f->path) {
		close(f->fd);
		memset(f, 0, sizeof(*f));
		return PTD_ERR_NOMEM;
	}
	f->dw = dwarf_begin(f->fd, DWARF_C_READ);   /* NULL: no DWARF */
	f->used = ++s->clock;
	*out = f;
	return 0;
}

/* 1 when a row of the line table of line begins a statement exactly at
 * vaddr (where a debugger's line step stops).  The line stays the one a
 * lookup of vaddr gives (the last row there, as gdb and ptd_source_line
 * have it), also where rows of several lines share the address. */
static int stmt_start(Dwarf_Die *cu, uint64_t vaddr, int line)
{
	Dwarf_Lines *lines;
	size_t n, lo = 0, hi;

	if (dwarf_getsrclines(cu, &lines, &n) != 0)
		return 0;
	hi = n;
	while (lo < hi) {         /* the first row at or after vaddr */
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Addr a = 0;

		dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a);
		if (a < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Any of several rows at one address that begins a statement. */
	for (; lo < n; lo++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, lo);
		Dwarf_Addr a = 0;
		bool stmt = false, end = false;
		int lineno = 0;

		dwarf_lineaddr(l, &a);
		if (a != vaddr)
			break;
		dwarf_linebeginstatement(l, &stmt);
		dwarf_lineendsequence(l, &end);
		if (stmt && !end && dwarf_lineno(l, &lineno) == 0 && lineno == line)
			return 1;
	}
	return 0;
}

/* The line of vaddr in f's DWARF: 0, or PTD_ERR_NO_IMAGE.  With stmt,
 * *stmt says whether a statement of that line starts at vaddr. */
static int file_line(struct srcfile *f, uint64_t vaddr, char *file,
		     size_t filelen, int *line, int *stmt)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	Dwarf_Attribute attr;
	const char *src, *comp;
	int lineno = 0;

	if (!f->dw || !dwarf_addrdie(f->dw, vaddr, &cu) ||
	    !(l = dwarf_getsrc_die(&cu, vaddr)) ||
	    !(src = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, &lineno) != 0)
		return PTD_ERR_NO_IMAGE;
	comp = src[0] != '/' ? dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir,
							   &attr)) : NULL;
	if (comp)
		snprintf(file, filelen, "%s/%s", comp, src);
	else
		snprintf(file, filelen, "%s", src);
	*line = lineno;
	if (stmt)
		*stmt = stmt_start(&cu, vaddr, lineno);
	return 0;
}

int srcline_lookup_stmt(struct srcline *s, const char *path,
			const char *debug, uint64_t vaddr, char *file,
			size_t filelen, int *line, int *stmt, char *err,
			size_t errlen)
{
	struct srcfile *f;
	int r;

	if (!s || !path || !file || !filelen || !line)
		return PTD_ERR_INVAL;
	/* A debug file with DWARF has all of it: path is not opened (one
	 * cache slot per binary, as without debug files). */
	if (debug && get_file(s, debug, &f, NULL, 0) == 0 && f->dw) {
		if (file_line(f, vaddr, file, filelen, line, stmt) == 0)
			return 0;
		util_errf(err, errlen, "%s (the debug file of %s): no line "
			  "information for address %#llx", debug, path,
			  (unsigned long long)vaddr);
		return PTD_ERR_NO_IMAGE;
	}
	/* path's own DWARF: no debug file, or one without DWARF. */
	r = get_file(s, path, &f, err, errlen);
	if (r < 0)
		return r;
	if (file_line(f, vaddr, file, filelen, line, stmt) == 0)
		return 0;
	if (f->dw)
		util_errf(err, errlen, "%s: no line information for address %#llx",
			  path, (unsigned long long)vaddr);
	else if (debug)
		util_errf(err, errlen, "neither %s nor its debug file %s has "
			  "DWARF debug info", path, debug);
	else
		util_errf(err, errlen, "%s has no DWARF debug info and no separate "
			  "debug file was found for it (install its debug package, "
			  "or put its .debug file where its build id or "
			  ".gnu_debuglink leads)", path);
	return PTD_ERR_NO_IMAGE;
}

#else /* !PTD_HAVE_LIBDW */

struct srcline {
	int unused;
};

struct srcline *srcline_new(void)
{
	return calloc(1, sizeof(struct srcline));
}

void srcline_free(struct srcline *s)
{
	free(s);
}

int srcline_lookup_stmt(struct srcline *s, const char *path,
			const char *debug, uint64_t vaddr, char *file,
			size_t filelen, int *line, int *stmt, char *err,
			size_t errlen)
{
	(void)stmt;
	util_errf(err, errlen, "source lines need libdw: this build has none "
		  "(install libdw-dev and rebuild)");
	return PTD_ERR_UNSUPPORTED;
}

#endif

int srcline_lookup(struct srcline *s, const char *path, const char *debug,
		   uint64_t vaddr, char *file, size_t filelen, int *line,
		   char *err, size_t errlen)
{
	return srcline_lookup_stmt(s, path, debug, vaddr, file, filelen, line,
				   NULL, err, errlen);
}
