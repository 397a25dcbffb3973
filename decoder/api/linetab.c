/* SPDX-License-Identifier: MIT */
/* linetab - a debugger's line table entries, ranges and breakpoint
 * addresses from DWARF (libdw). */
#include "linetab.h"
#include "ptdecode.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PTD_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#define LT_FILES 8

struct lt_ent {
	uint64_t addr;
	uint32_t line;             /* 0: end of a sequence */
	uint32_t file;             /* index into the unit's names */
	uint32_t is_stmt;
	uint32_t seq;              /* order of reading, for a stable sort */
};

struct lt_cu {
	Dwarf_Off off;
	struct lt_ent *e;
	size_t n;
	char **names;              /* absolute source paths */
	size_t nnames;
};

struct lt_file {
	char *path;                /* NULL: slot unused */
	char *debug;
	int fd, cfd;               /* DWARF file, code file */
	Dwarf *dw;
	Elf *code;
	struct lt_cu *cus;
	size_t ncus, cucap;
	int all_built;             /* every unit's table is in cus */
	char *match;               /* the file the units in matching have */
	size_t *matching, nmatching;
	uint64_t used;
};

struct linetab {
	struct lt_file f[LT_FILES];
	uint64_t clock;
};

struct linetab *linetab_new(void)
{
	return calloc(1, sizeof(struct linetab));
}

static void drop(struct lt_file *f)
{
	size_t k, j;

	for (k = 0; k < f->ncus; k++) {
		free(f->cus[k].e);
		for (j = 0; j < f->cus[k].nnames; j++)
			free(f->cus[k].names[j]);
		free(f->cus[k].names);
	}
	free(f->cus);
	free(f->match);
	free(f->matching);
	if (f->dw)
		dwarf_end(f->dw);
	if (f->code)
		elf_end(f->code);
	if (f->fd >= 0)
		close(f->fd);
	if (f->cfd >= 0)
		close(f->cfd);
	free(f->path);
	free(f->debug);
	memset(f, 0, sizeof(*f));
}

void linetab_free(struct linetab *lt)
{
	int i;

	if (!lt)
		return;
	for (i = 0; i < LT_FILES; i++)
		if (lt->f[i].path)
			drop(&lt->f[i]);
	free(lt);
}

static struct lt_file *get_file(struct linetab *lt, const char *path,
				const char *debug)
{
	struct lt_file *f = NULL;
	int i;

	for (i = 0; i < LT_FILES; i++) {
		struct lt_file *c = &lt->f[i];

		if (c->path && !strcmp(c->path, path) &&
		    !strcmp(c->debug ? c->debug : "", debug ? debug : "")) {
			c->used = ++lt->clock;
			return c;
		}
		if (!f || !c->path || (f->path && c->used < f->used))
			f = c;
	}
	if (f->path)
		drop(f);
	f->fd = f->cfd = -1;
	f->path = strdup(path);
	f->debug = debug ? strdup(debug) : NULL;
	if (!f->path || (debug && !f->debug)) {
		drop(f);
		return NULL;
	}
	/* The DWARF of the debug file, else of the file itself. */
	if (debug && (f->fd = open(debug, O_RDONLY | O_CLOEXEC)) >= 0 &&
	    !(f->dw = dwarf_begin(f->fd, DWARF_C_READ))) {
		close(f->fd);
		f->fd = -1;
	}
	f->cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->cfd < 0) {
		drop(f);
		return NULL;
	}
	if (!f->dw) {
		f->fd = dup(f->cfd);
		if (f->fd >= 0)
			f->dw = dwarf_begin(f->fd, DWARF_C_READ);
	}
	elf_version(EV_CURRENT);
	f->code = elf_begin(f->cfd, ELF_C_READ, NULL);
	f->used = ++lt->clock;
	return f;
}

/* Code bytes of the file at vaddr (from its sections); how many read. */
static size_t code_at(struct lt_file *f, uint64_t vaddr, uint8_t *buf,
		      size_t len)
{
	Elf_Scn *scn = NULL;

	while (f->code && (scn = elf_nextscn(f->code, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    vaddr < sh.sh_addr || vaddr >= sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || vaddr - sh.sh_addr >= d->d_size)
			return 0;
		n = d->d_size - (vaddr - sh.sh_addr);
		n = n < len ? n : len;
		memcpy(buf, (uint8_t *)d->d_buf + (vaddr - sh.sh_addr), n);
		return n;
	}
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct lt_ent *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* an end of sequence first at one address */
	if ((x->line == 0) != (y->line == 0))
		return x->line == 0 ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int push(struct lt_cu *u, size_t *cap, uint64_t addr, uint32_t line,
		uint32_t file, int stmt)
{
	struct lt_ent *e;

	if (line == 0) {
		/* an end marker replaces entries at its address; none after
		 * an end marker */
		uint32_t last = 0;
		int any = 0;

		while (u->n && u->e[u->n - 1].addr == addr) {
			last = u->e[u->n - 1].line;
			any = 1;
			u->n--;
		}
		if (!any && u->n)
			last = u->e[u->n - 1].line, any = 1;
		if (!any || last == 0)
			return 0;
	}
	if (util_grow((void **)&u->e, cap, u->n + 1, sizeof(*u->e)))
		return PTD_ERR_NOMEM;
	e = &u->e[u->n];
	e->addr = addr;
	e->line = line;
	e->file = file;
	e->is_stmt = (uint32_t)stmt;
	e->seq = (uint32_t)u->n++;
	return 0;
}

/* The entries of a unit as a debugger keeps them: rows in program order;
 * a row of the line of the row before (same file) is kept only while the
 * line has had no discriminator (loop-unrolled and duplicated code of one
 * line stays one entry); a change of file or the end of a sequence ends
 * the entry before. */
static int build_cu(Dwarf_Die *cu, struct lt_cu *u)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	Dwarf_Attribute attr;
	const char *comp, *last_file = NULL;
	size_t nl, nf, k, cap = 0;
	unsigned int last_line = 0;
	int prev_line = 0, disc_flag = 0;

	if (dwarf_getsrclines(cu, &lines, &nl) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &nf) != 0)
		return PTD_ERR_NO_IMAGE;
	comp = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	u->names = calloc(nf ? nf : 1, sizeof(char *));
	if (!u->names)
		return PTD_ERR_NOMEM;
	for (k = 0; k < nf; k++) {
		const char *s = dwarf_filesrc(files, k, NULL, NULL);
		size_t len;

		if (!s)
			s = "";
		len = strlen(s) + (comp ? strlen(comp) : 0) + 2;
		u->names[k] = malloc(len);
		if (!u->names[k])
			return PTD_ERR_NOMEM;
		if (s[0] != '/' && comp)
			snprintf(u->names[k], len, "%s/%s", comp, s);
		else
			snprintf(u->names[k], len, "%s", s);
		u->nnames = k + 1;
	}
	for (k = 0; k < nl; k++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, k);
		Dwarf_Addr a = 0;
		bool stmt = false, end = false;
		unsigned int disc = 0;
		int lineno = 0;
		const char *src;
		size_t fi;
		int changed, rc = 0;

		dwarf_lineaddr(l, &a);
		dwarf_lineendsequence(l, &end);
		if (end) {
			rc = push(u, &cap, a, 0, 0, 0);
			last_file = NULL;
			last_line = 0;
			prev_line = 0;
			disc_flag = 0;
			if (rc)
				return rc;
			continue;
		}
		dwarf_linebeginstatement(l, &stmt);
		dwarf_lineno(l, &lineno);
		dwarf_linediscriminator(l, &disc);
		src = dwarf_linesrc(l, NULL, NULL);
		if (lineno != prev_line)
			disc_flag = disc != 0;
		else
			disc_flag |= disc != 0;
		prev_line = lineno;
		if (lineno <= 0 || !src)
			continue;
		for (fi = 0; fi < nf; fi++)
			if (dwarf_filesrc(files, fi, NULL, NULL) == src)
				break;
		if (fi == nf)
			fi = 0;
		changed = !last_file || strcmp(src, last_file);
		if (changed && last_file)
			rc = push(u, &cap, a, 0, 0, 0);
		if (!rc && (changed || (unsigned int)lineno != last_line ||
			    !disc_flag))
			rc = push(u, &cap, a, (uint32_t)lineno, (uint32_t)fi, stmt);
		if (rc)
			return rc;
		last_file = src;
		last_line = (unsigned int)lineno;
	}
	util_sort(u->e, u->n, sizeof(*u->e), ent_cmp);
	return 0;
}

static struct lt_cu *get_cu(struct lt_file *f, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct lt_cu *u;
	size_t k;

	for (k = 0; k < f->ncus; k++)
		if (f->cus[k].off == off)
			return &f->cus[k];
	if (util_grow((void **)&f->cus, &f->cucap, f->ncus + 1, sizeof(*f->cus)))
		return NULL;
	u = &f->cus[f->ncus++];
	memset(u, 0, sizeof(*u));
	u->off = off;
	build_cu(cu, u);            /* a unit without lines stays empty */
	return u;
}

/* The last entry at or before vaddr as a debugger picks it: -1 none. */
static long entry_at(const struct lt_cu *u, uint64_t vaddr, size_t *next)
{
	size_t lo = 0, hi = u->n;
	long p, t;

	while (lo < hi) {          /* first entry above vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (u->e[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*next = lo;
	if (lo == 0 || u->e[lo - 1].line == 0)
		return -1;
	p = (long)lo - 1;
	/* not a statement: an entry at the same address that is one */
	if (!u->e[p].is_stmt) {
		t = p;
		while (t > 0 && u->e[t - 1].addr == u->e[t].addr &&
		       u->e[t - 1].line != 0 && !u->e[t].is_stmt)
			t--;
		if (u->e[t].is_stmt)
			p = t;
	}
	return p;
}

static void func_range(Dwarf_Die *cu, uint64_t vaddr, uint64_t *lo,
		       uint64_t *hi, const char **name)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, vaddr, &scopes), k;

	*lo = *hi = 0;
	if (name)
		*name = NULL;
	for (k = 0; k < n; k++) {
		Dwarf_Addr l, h;

		if (dwarf_tag(&scopes[k]) != DW_TAG_subprogram)
			continue;
		if (name)
			*name = dwarf_diename(&scopes[k]);
		if (dwarf_lowpc(&scopes[k], &l) == 0 &&
		    dwarf_highpc(&scopes[k], &h) == 0) {
			*lo = l;
			*hi = h;
		} else {
			/* ranges: the one holding vaddr */
			ptrdiff_t o = 0;
			Dwarf_Addr base, s, e;

			while ((o = dwarf_ranges(&scopes[k], o, &base, &s, &e)) > 0)
				if (vaddr >= s && vaddr < e) {
					*lo = s;
					*hi = e;
					break;
				}
		}
		break;
	}
	free(scopes);
}

static int find_in(struct lt_file *f, uint64_t vaddr, struct linetab_sal *sal,
		   Dwarf_Die *cu_out, struct lt_cu **u_out);

/* Past a frame-pointer prologue ([endbr64] push %rbp; mov %rsp,%rbp):
 * the next entry when that is inside the function, else right after it;
 * a function without one starts at its first instruction. */
static uint64_t body_of(struct lt_file *f, uint64_t start, uint64_t end)
{
	static const uint8_t endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t b[8];
	size_t n = code_at(f, start, b, sizeof(b)), o = 0;
	struct linetab_sal s;
	uint64_t pc;

	if (n >= 4 && !memcmp(b, endbr, 4))
		o = 4;
	if (n < o + 4 || b[o] != 0x55 || b[o + 1] != 0x48 ||
	    !((b[o + 2] == 0x89 && b[o + 3] == 0xe5) ||
	      (b[o + 2] == 0x8b && b[o + 3] == 0xec)))
		return start;
	pc = start + o + 4;
	if (find_in(f, pc, &s, NULL, NULL) == 0 && s.start != pc && s.end &&
	    s.end < end)
		pc = s.end;
	return pc;
}

static int find_in(struct lt_file *f, uint64_t vaddr, struct linetab_sal *sal,
		   Dwarf_Die *cu_out, struct lt_cu **u_out)
{
	Dwarf_Die cu;
	struct lt_cu *u;
	size_t next;
	long p;

	memset(sal, 0, sizeof(*sal));
	if (!f->dw || !dwarf_addrdie(f->dw, vaddr, &cu) || !(u = get_cu(f, &cu)))
		return PTD_ERR_NO_IMAGE;
	if (cu_out)
		*cu_out = cu;
	if (u_out)
		*u_out = u;
	p = entry_at(u, vaddr, &next);
	if (p < 0)
		return PTD_ERR_NO_IMAGE;
	sal->start = u->e[p].addr;
	sal->end = next < u->n ? u->e[next].addr : 0;
	sal->line = u->e[p].line;
	sal->is_stmt = (int)u->e[p].is_stmt;
	sal->file = u->e[p].file < u->nnames ? u->names[u->e[p].file] : "";
	return 0;
}

int linetab_find(struct linetab *lt, const char *path, const char *debug,
		 uint64_t vaddr, struct linetab_sal *sal)
{
	struct lt_file *f;
	Dwarf_Die cu;
	int rc;

	if (!lt || !path || !sal)
		return PTD_ERR_INVAL;
	memset(sal, 0, sizeof(*sal));
	if (!(f = get_file(lt, path, debug)))
		return PTD_ERR_IO;
	rc = find_in(f, vaddr, sal, &cu, NULL);
	if (rc)
		return rc;
	func_range(&cu, vaddr, &sal->func_start, &sal->func_end,
		   &sal->func_name);
	if (sal->func_start) {
		struct linetab_sal keep = *sal;

		keep.func_body = body_of(f, sal->func_start, sal->func_end);
		*sal = keep;
	}
	return 0;
}

/* Is vaddr inside die's code (low/high pc or its ranges)? */
static int die_has(Dwarf_Die *die, uint64_t vaddr)
{
	Dwarf_Addr base, s, e;
	ptrdiff_t o = 0;

	while ((o = dwarf_ranges(die, o, &base, &s, &e)) > 0)
		if (vaddr >= s && vaddr < e)
			return 1;
	return 0;
}

/* gdb's entry of an inlined block: its low pc, else the start of its
 * first range as listed. */
static int inl_entry(Dwarf_Die *die, uint64_t vaddr)
{
	Dwarf_Addr base, s, e, lo;

	if (dwarf_lowpc(die, &lo) == 0)
		return lo == vaddr || !die_has(die, vaddr - 1);
	if (dwarf_ranges(die, 0, &base, &s, &e) > 0 && s == vaddr)
		return 1;
	return !die_has(die, vaddr - 1);
}

int linetab_inlines(struct linetab *lt, const char *path, const char *debug,
		    uint64_t vaddr, struct linetab_inl *out, size_t max,
		    size_t *n)
{
	Dwarf_Die cu, *scopes = NULL, *chain = NULL;
	struct lt_file *f;
	struct lt_cu *u;
	int ns, nc, k;

	if (!lt || !path || !n || (max && !out))
		return PTD_ERR_INVAL;
	*n = 0;
	if (!(f = get_file(lt, path, debug)))
		return PTD_ERR_IO;
	if (!f->dw || !dwarf_addrdie(f->dw, vaddr, &cu) || !(u = get_cu(f, &cu)))
		return PTD_ERR_NO_IMAGE;
	/* the innermost scope, then what physically holds it (getscopes
	 * follows an inlined subroutine to its abstract origin instead) */
	ns = dwarf_getscopes(&cu, vaddr, &scopes);
	nc = ns > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
	for (k = 0; k < nc; k++) {
		Dwarf_Die *d = &chain[k];
		int tag = dwarf_tag(d);
		struct linetab_inl x = { 0 };
		Dwarf_Attribute a;
		Dwarf_Word w;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		x.name = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_name, &a));
		if (tag == DW_TAG_inlined_subroutine) {
			x.inlined = 1;
			if (dwarf_formudata(dwarf_attr(d, DW_AT_call_file, &a), &w) == 0 &&
			    w < u->nnames)
				x.call_file = u->names[w];
			if (dwarf_formudata(dwarf_attr(d, DW_AT_call_line, &a), &w) == 0)
				x.call_line = (unsigned int)w;
			x.at_entry = inl_entry(d, vaddr);
		}
		if (*n < max)
			out[*n] = x;
		(*n)++;
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	free(chain);
	return ns < 0 ? PTD_ERR_NO_IMAGE : 0;
}

/* gdb's order of names at one address: the last by name wins, a local
 * symbol yielding to a global one of the same size sorted just before. */
struct ms_pick {
	const char *name;
	uint64_t size;
	int local;
};

static int ms_after(const struct ms_pick *a, const struct ms_pick *b)
{
	return strcmp(a->name, b->name) > 0;
}

int linetab_minsym(struct linetab *lt, const char *path, const char *debug,
		   uint64_t vaddr, char *name, size_t len, uint64_t *start)
{
	struct ms_pick last = { 0 }, prev = { 0 }, zero = { 0 }, cover = { 0 };
	uint64_t at = 0, cover_at = 0;
	Elf_Scn *scn = NULL;
	struct lt_file *f;

	if (!lt || !path || !name || !len || !start)
		return PTD_ERR_INVAL;
	if (!(f = get_file(lt, path, debug)) || !f->code)
		return PTD_ERR_NO_IMAGE;
	while ((scn = elf_nextscn(f->code, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t k, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (k = 1; k < n; k++) {
			GElf_Sym s;
			struct ms_pick x;
			const char *nm;

			if (!gelf_getsym(d, (int)k, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || s.st_value > vaddr ||
			    !(nm = elf_strptr(f->code, sh.sh_link, s.st_name)) || !*nm)
				continue;
			x.name = nm;
			x.size = s.st_size;
			x.local = GELF_ST_BIND(s.st_info) == STB_LOCAL;
			if (x.size && vaddr < s.st_value + x.size &&
			    (!cover.name || s.st_value > cover_at ||
			     (s.st_value == cover_at && ms_after(&x, &cover)))) {
				cover = x;
				cover_at = s.st_value;
			}
			if (s.st_value < at)
				continue;
			if (s.st_value > at) {
				at = s.st_value;
				last = prev = zero = (struct ms_pick){ 0 };
			}
			if (!x.size) {
				if (!zero.name || ms_after(&x, &zero))
					zero = x;
			} else if (!last.name || ms_after(&x, &last)) {
				prev = last;
				last = x;
			} else if (!prev.name || ms_after(&x, &prev)) {
				prev = x;
			}
		}
	}
	if (last.name && vaddr < at + last.size) {
		if (last.local && prev.name && !prev.local && prev.size == last.size)
			last = prev;
	} else if (zero.name) {
		last = zero;
	} else if (cover.name) {
		last = cover;
		at = cover_at;
	} else {
		return PTD_ERR_NO_IMAGE;
	}
	snprintf(name, len, "%s", last.name);
	*start = at;
	return 0;
}

/* Does path name the file the user wrote (the same, or its last
 * components)? */
static int file_matches(const char *path, const char *want)
{
	size_t lp = strlen(path), lw = strlen(want);

	if (lp == lw)
		return !strcmp(path, want);
	if (lp > lw)
		return path[lp - lw - 1] == '/' && !strcmp(path + lp - lw, want);
	return want[lw - lp - 1] == '/' && !strcmp(want + lw - lp, path);
}

/* The block a breakpoint address counts in: the innermost lexical block
 * with variables of its own, inlined call or function. */
static Dwarf_Off block_of(Dwarf_Die *cu, uint64_t vaddr)
{
	Dwarf_Die *scopes = NULL, child;
	Dwarf_Off off = 0;
	int n = dwarf_getscopes(cu, vaddr, &scopes), k;

	for (k = 0; k < n && !off; k++) {
		int tag = dwarf_tag(&scopes[k]), vars = 0;

		if (tag == DW_TAG_lexical_block) {
			if (dwarf_child(&scopes[k], &child) == 0)
				do
					vars |= dwarf_tag(&child) == DW_TAG_variable;
				while (!vars && dwarf_siblingof(&child, &child) == 0);
			if (!vars)
				continue;
		}
		off = dwarf_dieoffset(&scopes[k]);
	}
	free(scopes);
	return off;
}

/* The units whose line tables name file (all tables built once). */
static int units_of(struct lt_file *f, const char *file)
{
	size_t k, j;

	if (!f->all_built) {
		Dwarf_Off off = 0, next;
		size_t hsize;

		while (dwarf_nextcu(f->dw, off, &next, &hsize, NULL, NULL,
				    NULL) == 0) {
			Dwarf_Die cudie;

			if (dwarf_offdie(f->dw, off + hsize, &cudie) &&
			    !get_cu(f, &cudie))
				return PTD_ERR_NOMEM;
			off = next;
		}
		f->all_built = 1;
	}
	if (f->match && !strcmp(f->match, file))
		return 0;
	free(f->match);
	free(f->matching);
	f->nmatching = 0;
	f->match = strdup(file);
	f->matching = calloc(f->ncus ? f->ncus : 1, sizeof(size_t));
	if (!f->match || !f->matching) {
		free(f->match);
		f->match = NULL;
		return PTD_ERR_NOMEM;
	}
	for (k = 0; k < f->ncus; k++)
		for (j = 0; j < f->cus[k].nnames; j++)
			if (file_matches(f->cus[k].names[j], file)) {
				f->matching[f->nmatching++] = k;
				break;
			}
	return 0;
}

/* Collects is_stmt entries of file:line (exact), and the nearest
 * following line with an is_stmt entry in *best. */
static int collect(struct lt_file *f, const char *file, unsigned int line,
		   uint64_t *addrs, size_t max, size_t *n, unsigned int *best,
		   uint64_t *lo_addr, unsigned int *lo_line)
{
	size_t m;
	int rc = units_of(f, file);

	if (rc)
		return rc;
	for (m = 0; m < f->nmatching; m++) {
		struct lt_cu *u = &f->cus[f->matching[m]];
		Dwarf_Die cudie;
		Dwarf_Off blk[64];
		size_t k, first = *n, nb = 0;

		if (!dwarf_offdie(f->dw, u->off, &cudie))
			continue;
		for (k = 0; k < u->n; k++) {
			const struct lt_ent *e = &u->e[k];
			uint64_t fs, fe, a;
			Dwarf_Off b;
			size_t j;

			if (!e->line || !e->is_stmt || e->file >= u->nnames ||
			    (e->line != line && e->line < line) ||
			    !file_matches(u->names[e->file], file))
				continue;
			if (e->line > line && (!*best || e->line < *best))
				*best = e->line;
			if (e->line != line)
				continue;
			/* one per block: the lowest address */
			b = block_of(&cudie, e->addr);
			for (j = 0; j < nb && blk[j] != b; j++)
				;
			if (b && j < nb)
				continue;
			if (b && nb < 64)
				blk[nb++] = b;
			a = e->addr;
			func_range(&cudie, a, &fs, &fe, NULL);
			if (fs && a == fs)
				a = body_of(f, fs, fe);
			/* the line of the lowest address: where a prologue
			 * skip moved it, that of the place it moved to */
			if (!*lo_line || a < *lo_addr) {
				struct linetab_sal sal;

				*lo_addr = a;
				*lo_line = line;
				if (a != e->addr && find_in(f, a, &sal, NULL, NULL) == 0)
					*lo_line = sal.line;
			}
			for (j = first; j < *n && j < max && addrs[j] != a; j++)
				;
			if (j < *n && j < max)
				continue;
			if (*n < max)
				addrs[*n] = a;
			(*n)++;
		}
	}
	return 0;
}

int linetab_addrs(struct linetab *lt, const char *path, const char *debug,
		  const char *file, unsigned int line, uint64_t *addrs,
		  size_t max, size_t *n, unsigned int *found_line,
		  unsigned int *shown_line)
{
	struct lt_file *f;
	unsigned int best = 0;

	if (!lt || !path || !file || !n || !found_line || !shown_line ||
	    (max && !addrs))
		return PTD_ERR_INVAL;
	*n = 0;
	*found_line = *shown_line = 0;
	if (!(f = get_file(lt, path, debug)))
		return PTD_ERR_IO;
	if (!f->dw)
		return PTD_ERR_NO_IMAGE;
	uint64_t lo = 0;
	unsigned int lo_line = 0;

	*found_line = line;
	collect(f, file, line, addrs, max, n, &best, &lo, &lo_line);
	if (!*n && best) {
		*found_line = best;
		collect(f, file, best, addrs, max, n, &best, &lo, &lo_line);
	}
	if (!*n)
		*found_line = 0;
	*shown_line = *n ? lo_line : 0;
	return 0;
}

/* The last path component. */
static const char *base_of(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

static int addr_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The spans of one unit: see linetab_line_spans. */
static int unit_spans(Dwarf_Die *cu, const char *want, unsigned int line,
		      int (*add)(void *, uint64_t, uint64_t), void *ctx,
		      uint64_t **addrs, size_t *cap)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t nl, nf, k, na = 0;
	int any = 0, rc;

	if (dwarf_getsrclines(cu, &lines, &nl) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &nf) != 0)
		return 0;
	for (k = 0; k < nf && !any; k++) {
		const char *f = dwarf_filesrc(files, k, NULL, NULL);

		any = f && !strcmp(base_of(f), want);
	}
	if (!any)
		return 0;
	if (util_grow((void **)addrs, cap, nl ? nl : 1, sizeof(**addrs)))
		return PTD_ERR_NOMEM;
	for (k = 0; k < nl; k++) {
		Dwarf_Addr a = 0;

		dwarf_lineaddr(dwarf_onesrcline(lines, k), &a);
		(*addrs)[na++] = a;
	}
	util_sort(*addrs, na, sizeof(**addrs), addr_cmp);
	for (k = 0; k < nl; k++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, k);
		Dwarf_Addr a = 0;
		int lineno = 0;
		const char *src;
		size_t lo = 0, hi = na;

		/* an end of sequence too: a lookup at its address may give
		 * its row */
		src = dwarf_linesrc(l, NULL, NULL);
		if (dwarf_lineno(l, &lineno) != 0 ||
		    (unsigned int)lineno != line || !src ||
		    strcmp(base_of(src), want))
			continue;
		dwarf_lineaddr(l, &a);
		while (lo < hi) {   /* the first row address above a */
			size_t mid = lo + (hi - lo) / 2;

			if ((*addrs)[mid] <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		rc = add(ctx, a, lo < na ? (*addrs)[lo] : UINT64_MAX);
		if (rc)
			return rc;
	}
	return 0;
}

int linetab_line_spans(struct linetab *lt, const char *path, const char *debug,
		       const char *file, unsigned int line,
		       int (*add)(void *ctx, uint64_t start, uint64_t end),
		       void *ctx)
{
	Dwarf_Off off = 0, next;
	struct lt_file *f;
	uint64_t *addrs = NULL;
	size_t hsize, cap = 0;
	int rc = 0;

	if (!lt || !path || !file || !add)
		return PTD_ERR_INVAL;
	if (!(f = get_file(lt, path, debug)))
		return PTD_ERR_IO;
	if (!f->dw)
		return 0;
	while (!rc && dwarf_nextcu(f->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;

		if (dwarf_offdie(f->dw, off + hsize, &cudie))
			rc = unit_spans(&cudie, base_of(file), line, add, ctx,
					&addrs, &cap);
		off = next;
	}
	free(addrs);
	return rc;
}

struct func_find {
	struct lt_file *f;
	const char *name;
	uint64_t *addrs;
	size_t max, n;
};

static int func_cb(Dwarf_Die *die, void *arg)
{
	struct func_find *ff = arg;
	const char *nm = dwarf_diename(die);
	Dwarf_Addr lo, hi;
	uint64_t a;
	size_t k;

	if (!nm || strcmp(nm, ff->name) || dwarf_lowpc(die, &lo) != 0 ||
	    dwarf_highpc(die, &hi) != 0)
		return DWARF_CB_OK;
	a = body_of(ff->f, lo, hi);
	for (k = 0; k < ff->n && k < ff->max && ff->addrs[k] != a; k++)
		;
	if (k < ff->n && k < ff->max)
		return DWARF_CB_OK;
	if (ff->n < ff->max)
		ff->addrs[ff->n] = a;
	ff->n++;
	return DWARF_CB_OK;
}

/* Where gdb puts a breakpoint on an inlined instance: the block's entry,
 * or the next line-table entry when the entry is in the middle of one
 * that ends inside the block. */
static void inl_instance(struct func_find *ff, Dwarf_Die *die)
{
	Dwarf_Addr base, s, e, entry = 0, end = 0;
	struct linetab_sal sal;
	ptrdiff_t o = 0;
	int have = dwarf_lowpc(die, &entry) == 0;
	size_t k;

	while ((o = dwarf_ranges(die, o, &base, &s, &e)) > 0) {
		if (!have)
			entry = s;
		have = 1;
		if (e > end)
			end = e;
	}
	if (!have || !end)
		return;                 /* no code */
	if (find_in(ff->f, entry, &sal, NULL, NULL) == 0 && sal.start != entry &&
	    sal.end && sal.end < end)
		entry = sal.end;
	for (k = 0; k < ff->n && k < ff->max && ff->addrs[k] != entry; k++)
		;
	if (k < ff->n && k < ff->max)
		return;
	if (ff->n < ff->max)
		ff->addrs[ff->n] = entry;
	ff->n++;
}

/* The inlined instances of ff->name among die's descendants. */
static void inl_walk(struct func_find *ff, Dwarf_Die *die, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_inlined_subroutine) {
			Dwarf_Attribute a;
			const char *nm = dwarf_formstring(
				dwarf_attr_integrate(&child, DW_AT_name, &a));

			if (nm && !strcmp(nm, ff->name))
				inl_instance(ff, &child);
		}
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_lexical_block)
			inl_walk(ff, &child, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

int linetab_func_addrs(struct linetab *lt, const char *path,
		       const char *debug, const char *name, uint64_t *addrs,
		       size_t max, size_t *n)
{
	struct func_find ff = { .name = name, .addrs = addrs, .max = max };
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (!lt || !path || !name || !n || (max && !addrs))
		return PTD_ERR_INVAL;
	*n = 0;
	if (!(ff.f = get_file(lt, path, debug)))
		return PTD_ERR_IO;
	if (!ff.f->dw)
		return PTD_ERR_NO_IMAGE;
	while (dwarf_nextcu(ff.f->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;

		if (dwarf_offdie(ff.f->dw, off + hsize, &cudie)) {
			dwarf_getfuncs(&cudie, func_cb, &ff, 0);
			/* and each place it is inlined, as gdb's break */
			inl_walk(&ff, &cudie, 0);
		}
		off = next;
	}
	*n = ff.n;
	return 0;
}

#else /* !PTD_HAVE_LIBDW */

int linetab_func_addrs(struct linetab *lt, const char *path,
		       const char *debug, const char *name, uint64_t *addrs,
		       size_t max, size_t *n)
{
	(void)lt, (void)path, (void)debug, (void)name, (void)addrs, (void)max;
	*n = 0;
	return PTD_ERR_UNSUPPORTED;
}


struct linetab {
	int unused;
};

int linetab_inlines(struct linetab *lt, const char *path, const char *debug,
		    uint64_t vaddr, struct linetab_inl *out, size_t max,
		    size_t *n)
{
	(void)lt, (void)path, (void)debug, (void)vaddr, (void)out, (void)max;
	*n = 0;
	return PTD_ERR_UNSUPPORTED;
}

int linetab_minsym(struct linetab *lt, const char *path, const char *debug,
		   uint64_t vaddr, char *name, size_t len, uint64_t *start)
{
	(void)lt, (void)path, (void)debug, (void)vaddr, (void)name, (void)len;
	(void)start;
	return PTD_ERR_UNSUPPORTED;
}

struct linetab *linetab_new(void)
{
	return calloc(1, sizeof(struct linetab));
}

void linetab_free(struct linetab *lt)
{
	free(lt);
}

int linetab_find(struct linetab *lt, const char *path, const char *debug,
		 uint64_t vaddr, struct linetab_sal *sal)
{
	(void)lt, (void)path, (void)debug, (void)vaddr;
	memset(sal, 0, sizeof(*sal));
	return PTD_ERR_UNSUPPORTED;
}

int linetab_addrs(struct linetab *lt, const char *path, const char *debug,
		  const char *file, unsigned int line, uint64_t *addrs,
		  size_t max, size_t *n, unsigned int *found_line,
		  unsigned int *shown_line)
{
	(void)lt, (void)path, (void)debug, (void)file, (void)line;
	(void)addrs, (void)max;
	*n = 0;
	*found_line = *shown_line = 0;
	return PTD_ERR_UNSUPPORTED;
}

int linetab_line_spans(struct linetab *lt, const char *path, const char *debug,
		       const char *file, unsigned int line,
		       int (*add)(void *ctx, uint64_t start, uint64_t end),
		       void *ctx)
{
	(void)lt, (void)path, (void)debug, (void)file, (void)line, (void)add;
	(void)ctx;
	return PTD_ERR_UNSUPPORTED;
}

#endif
