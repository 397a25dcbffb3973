/* SPDX-License-Identifier: MIT */
/* symtab - function symbols of one image; see symtab.h for the rules. */
#include "symtab.h"
#include "ptdecode.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNSIZED_SPAN 4096u   /* reach of the last symbol without size */
#define NESTED_BACKWALK 4    /* earlier symbols tried for enclosing ones */

enum { BIND_LOCAL = 0, BIND_WEAK = 1, BIND_GLOBAL = 2 };

struct sym {
	uint64_t start, size;
	uint32_t name;      /* offset into pool */
	uint32_t seq;       /* insertion order: later wins ties */
	uint8_t sideband;   /* from symtab_add */
	uint8_t bind;
};

struct seg {                /* a PT_LOAD program header */
	uint64_t vaddr, off, filesz, align;
	int exec;
};

struct symtab {
	struct sym *syms;
	size_t n, cap;
	size_t n_sorted;    /* syms[0..n_sorted) sorted and compacted */
	char *pool;
	size_t pool_len, pool_cap;
	struct seg *segs;
	size_t nsegs;
	uint32_t seq;
};

struct symtab *symtab_new(void)
{
	return calloc(1, sizeof(struct symtab));
}

void symtab_free(struct symtab *st)
{
	if (!st)
		return;
	free(st->syms);
	free(st->pool);
	free(st->segs);
	free(st);
}

static int add_sym(struct symtab *st, const char *name, size_t namelen,
		   uint64_t start, uint64_t size, int sideband, int bind)
{
	struct sym *s;

	if (st->pool_len + namelen + 1 > UINT32_MAX)
		return PTD_ERR_LIMIT;
	if (util_grow((void **)&st->pool, &st->pool_cap,
		      st->pool_len + namelen + 1, 1) < 0 ||
	    util_grow((void **)&st->syms, &st->cap, st->n + 1, sizeof(*s)) < 0)
		return PTD_ERR_NOMEM;
	s = &st->syms[st->n++];
	s->start = start;
	s->size = size;
	s->name = (uint32_t)st->pool_len;
	s->seq = st->seq++;
	s->sideband = (uint8_t)sideband;
	s->bind = (uint8_t)bind;
	memcpy(st->pool + st->pool_len, name, namelen);
	st->pool[st->pool_len + namelen] = 0;
	st->pool_len += namelen + 1;
	return 0;
}

int symtab_add(struct symtab *st, const char *name, uint64_t start,
	       uint64_t size)
{
	if (!st || !name)
		return PTD_ERR_INVAL;
	return add_sym(st, name, strlen(name), start, size, 1, BIND_GLOBAL);
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* > 0 when a is the better name for an address (see symtab.h). */
static int better(const struct symtab *st, const struct sym *a,
		  const struct sym *b)
{
	const char *na = st->pool + a->name, *nb = st->pool + b->name;
	size_t ua, ub, la, lb;

	if (a->sideband != b->sideband)
		return a->sideband - b->sideband;
	if (!!a->size != !!b->size)
		return !!a->size - !!b->size;
	if (a->bind != b->bind)
		return a->bind - b->bind;
	ua = leading_underscores(na);
	ub = leading_underscores(nb);
	if (ua != ub)
		return ua < ub ? 1 : -1;
	la = strlen(na);
	lb = strlen(nb);
	if (la != lb)
		return la < lb ? 1 : -1;
	return a->seq > b->seq ? 1 : -1;
}

/* qsort has no context argument: sort by start only, then pick the best
 * of each group in a linear pass. */
static int cmp_start(const void *pa, const void *pb)
{
	const struct sym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return 0;
}

/* Sorts and keeps one symbol per address: the best name, the largest
 * size of the group. */
static void finalize(struct symtab *st)
{
	size_t i, j, out = 0;

	if (st->n_sorted == st->n)
		return;
	util_sort(st->syms, st->n, sizeof(*st->syms), cmp_start);
	for (i = 0; i < st->n; i = j) {
		struct sym best = st->syms[i];

		for (j = i + 1; j < st->n && st->syms[j].start == best.start; j++) {
			uint64_t size = best.size > st->syms[j].size ?
					best.size : st->syms[j].size;
			if (better(st, &st->syms[j], &best) > 0)
				best = st->syms[j];
			best.size = size;
		}
		st->syms[out++] = best;
	}
	st->n = st->n_sorted = out;
}

size_t symtab_count(struct symtab *st)
{
	finalize(st);
	return st->n;
}

static uint64_t sym_end(const struct symtab *st, size_t i)
{
	const struct sym *s = &st->syms[i];
	uint64_t end;

	if (s->size)
		end = s->start + s->size;
	else if (i + 1 < st->n)
		end = st->syms[i + 1].start;
	else
		end = s->start + UNSIZED_SPAN;
	return end < s->start ? UINT64_MAX : end;   /* wrapped */
}

int symtab_lookup(struct symtab *st, uint64_t addr, const char **name,
		  uint64_t *off)
{
	size_t lo = 0, hi, i, k;

	if (!st)
		return PTD_ERR_INVAL;
	finalize(st);
	hi = st->n;
	/* First symbol starting after addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0, i = lo; i > 0 && k <= NESTED_BACKWALK; i--, k++) {
		if (addr < sym_end(st, i - 1)) {
			if (name)
				*name = st->pool + st->syms[i - 1].name;
			if (off)
				*off = addr - st->syms[i - 1].start;
			return 0;
		}
	}
	return PTD_ERR_NO_IMAGE;
}

int symtab_load_bias(const struct symtab *st, uint64_t start, uint64_t pgoff,
		     uint64_t *bias)
{
	const struct seg *pick = NULL;
	size_t i;

	if (!st || !bias)
		return PTD_ERR_INVAL;
	for (i = 0; i < st->nsegs; i++) {
		const struct seg *s = &st->segs[i];
		/* A mapping starts at the page boundary at or before p_offset;
		 * pages are 4 KiB to 64 KiB (arm64), at most p_align. */
		uint64_t page = s->align >= 65536 ? 65536 :
				s->align >= 4096 ? s->align : 4096;
		uint64_t lo = s->off & ~(page - 1);

		if (pgoff < lo || pgoff >= s->off + (s->filesz ? s->filesz : 1))
			continue;
		if (!pick || (s->exec && !pick->exec) ||
		    (s->exec == pick->exec && s->off <= pgoff && pick->off > pgoff))
			pick = s;
	}
	if (!pick)
		return PTD_ERR_NO_IMAGE;
	*bias = start - (pick->vaddr - pick->off + pgoff);
	return 0;
}

/* ---------------------------------------------------------------- ELF */

static int elf_err(char *err, size_t errlen, const char *what, const char *path)
{
	util_errf(err, errlen, "%s: %s: %s", path ? path : "ELF image", what,
		  elf_errmsg(-1));
	return PTD_ERR_FORMAT;
}

/* Opens path (or the memory image when path is NULL). *fd is -1 or the
 * descriptor to close after elf_end. */
static int open_elf(const char *path, const uint8_t *bytes, size_t len,
		    Elf **out, int *fd, char *err, size_t errlen)
{
	Elf *e;

	*out = NULL;
	*fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		util_errf(err, errlen, "libelf is too old: %s", elf_errmsg(-1));
		return PTD_ERR_UNSUPPORTED;
	}
	if (path) {
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0) {
			util_errf(err, errlen, "cannot open %s: %s", path,
				  strerror(errno));
			return PTD_ERR_IO;
		}
		e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	} else {
		if (!bytes) {
			util_errf(err, errlen, "no ELF image given");
			return PTD_ERR_INVAL;
		}
		/* libelf only reads the image (conversions go to copies). */
		e = elf_memory((char *)bytes, len);
	}
	if (!e || elf_kind(e) != ELF_K_ELF) {
		int r = elf_err(err, errlen, "not an ELF file", path);
		if (e)
			elf_end(e);
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return r;
	}
	*out = e;
	return 0;
}

static void close_elf(Elf *e, int fd)
{
	elf_end(e);
	if (fd >= 0)
		close(fd);
}

static int is_mapping_symbol(const char *name)
{
	/* Arm ELF: $a, $t, $d, $x, optionally followed by ".anything". */
	return name[0] == '$' && strchr("atdx", name[1]) && name[1] &&
	       (name[2] == 0 || name[2] == '.');
}

static int read_segments(struct symtab *st, Elf *e)
{
	size_t n, i;

	if (elf_getphdrnum(e, &n) < 0)
		return 0;   /* no program headers: no bias computation */
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		struct seg *s;
		size_t cap = st->nsegs;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (util_grow((void **)&st->segs, &cap, st->nsegs + 1, sizeof(*s)) < 0)
			return PTD_ERR_NOMEM;
		s = &st->segs[st->nsegs++];
		s->vaddr = ph.p_vaddr;
		s->off = ph.p_offset;
		s->filesz = ph.p_filesz;
		s->align = ph.p_align;
		s->exec = !!(ph.p_flags & PF_X);
	}
	return 0;
}

static int read_symbols(struct symtab *st, Elf *e, Elf_Scn *scn,
			const GElf_Shdr *sh, const uint8_t *exec_sec,
			size_t shnum, int is_arm)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t esz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT), n, i;

	if (!d || !esz)
		return 0;
	n = d->d_size / esz;
	for (i = 1; i < n; i++) {
		GElf_Sym s;
		const char *name;
		int type, bind, r;
		uint64_t start;

		if (!gelf_getsym(d, (int)i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_shndx >= shnum)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    !(type == STT_NOTYPE && exec_sec[s.st_shndx]))
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name || !*name || is_mapping_symbol(name))
			continue;
		start = s.st_value;
		if (is_arm && type == STT_FUNC)
			start &= ~(uint64_t)1;   /* Thumb bit */
		bind = GELF_ST_BIND(s.st_info);
		bind = bind == STB_GLOBAL ? BIND_GLOBAL :
		       bind == STB_WEAK ? BIND_WEAK : BIND_LOCAL;
		r = add_sym(st, name, strlen(name), start, s.st_size, 0, bind);
		if (r < 0)
			return r;
	}
	return 0;
}

/* GOT slot address -> dynamic symbol name, from JUMP_SLOT and GLOB_DAT
 * relocations (x86-64). */
struct got_name {
	uint64_t got;
	const char *name;
};

static int cmp_got(const void *pa, const void *pb)
{
	const struct got_name *a = pa, *b = pb;

	return a->got < b->got ? -1 : a->got > b->got;
}

static int collect_got(Elf *e, struct got_name **out, size_t *n)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh, lsh;
		Elf_Data *d, *symd;
		Elf_Scn *lscn;
		size_t esz, cnt, i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
			continue;
		lscn = elf_getscn(e, sh.sh_link);
		if (!lscn || !gelf_getshdr(lscn, &lsh) || lsh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		symd = elf_getdata(lscn, NULL);
		esz = gelf_fsize(e, ELF_T_RELA, 1, EV_CURRENT);
		if (!d || !symd || !esz)
			continue;
		cnt = d->d_size / esz;
		for (i = 0; i < cnt; i++) {
			GElf_Rela r;
			GElf_Sym s;
			const char *name;
			uint64_t type;

			if (!gelf_getrela(d, (int)i, &r))
				continue;
			type = GELF_R_TYPE(r.r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			if (!gelf_getsym(symd, (int)GELF_R_SYM(r.r_info), &s))
				continue;
			name = elf_strptr(e, lsh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			if (util_grow((void **)out, &cap, *n + 1, sizeof(**out)) < 0)
				return PTD_ERR_NOMEM;
			(*out)[*n].got = r.r_offset;
			(*out)[(*n)++].name = name;
		}
	}
	if (*n)
		util_sort(*out, *n, sizeof(**out), cmp_got);
	return 0;
}

/* name@plt for each x86-64 PLT entry: the entry's first "jmp *disp(%rip)"
 * (ff 25, after any endbr64/bnd prefix) names the GOT slot it goes
 * through, and the slot's relocation names the function. */
static int synth_plt(struct symtab *st, Elf *e, size_t shstrndx)
{
	struct got_name *gots;
	size_t ngots;
	Elf_Scn *scn = NULL;
	char buf[512];
	int r = collect_got(e, &gots, &ngots);

	if (r < 0 || !ngots) {
		free(gots);
		return r;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *d;
		uint64_t esz, k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		sname = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sname || strncmp(sname, ".plt", 4) != 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		esz = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize : 16;
		for (k = 0; k + esz <= d->d_size; k += esz) {
			const uint8_t *b = (const uint8_t *)d->d_buf + k;
			uint64_t p, got;
			struct got_name key, *hit;
			int n, rc;

			for (p = 0; p + 6 <= esz; p++)
				if (b[p] == 0xff && b[p + 1] == 0x25)
					break;
			if (p + 6 > esz)
				continue;
			got = sh.sh_addr + k + p + 6 + (int64_t)(int32_t)util_le32(b + p + 2);
			key.got = got;
			hit = bsearch(&key, gots, ngots, sizeof(*gots), cmp_got);
			if (!hit)
				continue;
			n = snprintf(buf, sizeof(buf), "%s@plt", hit->name);
			if (n < 0 || (size_t)n >= sizeof(buf))
				continue;
			rc = add_sym(st, buf, (size_t)n, sh.sh_addr + k, esz, 0,
				     BIND_LOCAL);
			if (rc < 0) {
				free(gots);
				return rc;
			}
		}
	}
	free(gots);
	return 0;
}

/* own_file: e is the table's own file, whose program headers give the
 * load bias and whose .plt is code; a separate debug file only adds
 * symbols (its segments are the same, its .plt is NOBITS). */
static int load_elf(struct symtab *st, Elf *e, const char *path, int own_file,
		    char *err, size_t errlen)
{
	GElf_Ehdr eh;
	size_t shnum, shstrndx, i;
	uint8_t *exec_sec;
	Elf_Scn *scn = NULL;
	int r = 0, is_arm;

	if (!gelf_getehdr(e, &eh) || elf_getshdrnum(e, &shnum) < 0 ||
	    elf_getshdrstrndx(e, &shstrndx) < 0)
		return elf_err(err, errlen, "bad ELF header", path);
	if (eh.e_type == ET_REL) {
		util_errf(err, errlen, "%s: relocatable object (.o/.ko): symbol "
			  "addresses are not final; give the linked file",
			  path ? path : "ELF image");
		return PTD_ERR_UNSUPPORTED;
	}
	is_arm = eh.e_machine == EM_ARM;
	r = own_file ? read_segments(st, e) : 0;
	if (r < 0)
		return r;
	exec_sec = calloc(shnum ? shnum : 1, 1);
	if (!exec_sec)
		return PTD_ERR_NOMEM;
	for (i = 0; i < shnum; i++) {
		GElf_Shdr sh;
		Elf_Scn *s = elf_getscn(e, i);
		if (s && gelf_getshdr(s, &sh))
			exec_sec[i] = !!(sh.sh_flags & SHF_EXECINSTR);
	}
	while (r == 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			r = read_symbols(st, e, scn, &sh, exec_sec, shnum, is_arm);
	}
	free(exec_sec);
	if (r == 0 && own_file && eh.e_machine == EM_X86_64)
		r = synth_plt(st, e, shstrndx);
	if (r < 0)
		util_errf(err, errlen, "%s: out of memory reading symbols",
			  path ? path : "ELF image");
	return r;
}

static int from_elf(struct symtab **out, const char *path,
		    const uint8_t *bytes, size_t len, char *err, size_t errlen)
{
	struct symtab *st;
	Elf *e;
	int fd, r;

	if (!out)
		return PTD_ERR_INVAL;
	*out = NULL;
	r = open_elf(path, bytes, len, &e, &fd, err, errlen);
	if (r < 0)
		return r;
	st = symtab_new();
	if (!st) {
		close_elf(e, fd);
		return PTD_ERR_NOMEM;
	}
	r = load_elf(st, e, path, 1, err, errlen);
	close_elf(e, fd);
	if (r < 0) {
		symtab_free(st);
		return r;
	}
	finalize(st);
	*out = st;
	return 0;
}

int symtab_from_elf_file(struct symtab **out, const char *path,
			 char *err, size_t errlen)
{
	if (!path)
		return PTD_ERR_INVAL;
	return from_elf(out, path, NULL, 0, err, errlen);
}

int symtab_from_elf_mem(struct symtab **out, const uint8_t *bytes, size_t len,
			char *err, size_t errlen)
{
	return from_elf(out, NULL, bytes, len, err, errlen);
}

int symtab_merge_elf_file(struct symtab *st, const char *path,
			  char *err, size_t errlen)
{
	size_t n, pool_len;
	Elf *e;
	int fd, r;

	if (!st || !path)
		return PTD_ERR_INVAL;
	r = open_elf(path, NULL, 0, &e, &fd, err, errlen);
	if (r < 0)
		return r;
	n = st->n;
	pool_len = st->pool_len;
	r = load_elf(st, e, path, 0, err, errlen);
	close_elf(e, fd);
	if (r < 0) {
		/* A half-read file must not leave half its symbols. */
		st->n = n;
		st->pool_len = pool_len;
		return r;
	}
	finalize(st);
	return 0;
}

/* ----------------------------------------------------------- kallsyms */

int symtab_from_kallsyms(struct symtab **out, const char *path,
			 char *err, size_t errlen)
{
	struct symtab *st;
	FILE *f;
	char *line = NULL;
	size_t cap = 0, lineno = 0, nonzero = 0;
	ssize_t len;
	int r = 0;

	if (!out || !path)
		return PTD_ERR_INVAL;
	*out = NULL;
	f = fopen(path, "re");
	if (!f) {
		util_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return PTD_ERR_IO;
	}
	st = symtab_new();
	if (!st) {
		fclose(f);
		return PTD_ERR_NOMEM;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *p = line, *end, *name;
		uint64_t addr;
		char type;

		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len)
			continue;
		errno = 0;
		addr = strtoull(p, &end, 16);
		if (end == p || errno || *end != ' ' || !end[1] || end[2] != ' ') {
			util_errf(err, errlen, "%s:%zu: not in kallsyms format "
				  "(\"ADDR TYPE NAME [MODULE]\")", path, lineno);
			r = PTD_ERR_FORMAT;
			break;
		}
		type = end[1];
		name = end + 3;
		name[strcspn(name, " \t")] = 0;   /* drop "[module]" */
		if (addr)
			nonzero++;
		if (!strchr("tTwW", type) || !*name)
			continue;
		r = add_sym(st, name, strlen(name), addr, 0, 0,
			    type == 'T' ? BIND_GLOBAL :
			    type == 'W' || type == 'w' ? BIND_WEAK : BIND_LOCAL);
		if (r < 0) {
			util_errf(err, errlen, "%s: out of memory", path);
			break;
		}
	}
	if (r == 0 && ferror(f)) {
		util_errf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		r = PTD_ERR_IO;
	}
	if (r == 0 && lineno && !nonzero) {
		util_errf(err, errlen, "%s: all addresses are zero (kptr_restrict): "
			  "read it as root or set kernel.kptr_restrict=0", path);
		r = PTD_ERR_FORMAT;
	}
	free(line);
	fclose(f);
	if (r < 0) {
		symtab_free(st);
		return r;
	}
	finalize(st);
	*out = st;
	return 0;
}

/* ----------------------------------------------------------- build id */

static int find_note(Elf_Data *d, uint8_t *out, size_t outcap, size_t *outlen)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (d && off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0) {
			*outlen = nh.n_descsz;
			memcpy(out, (const uint8_t *)d->d_buf + desc_off,
			       nh.n_descsz < outcap ? nh.n_descsz : outcap);
			return 1;
		}
		off = next;
	}
	return 0;
}

int symtab_build_id(const char *path, const uint8_t *bytes, size_t len,
		    uint8_t *out, size_t outcap, size_t *outlen,
		    char *err, size_t errlen)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t nph = 0, i;
	int fd, r, found = 0;

	if (!out || !outlen)
		return PTD_ERR_INVAL;
	r = open_elf(path, bytes, len, &e, &fd, err, errlen);
	if (r < 0)
		return r;
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE)
			found = find_note(elf_getdata(scn, NULL), out, outcap, outlen);
	}
	/* Without section headers (stripped to the bone, core-like images):
	 * the PT_NOTE segments. */
	if (!found && elf_getphdrnum(e, &nph) == 0) {
		for (i = 0; i < nph && !found; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_NOTE)
				found = find_note(elf_getdata_rawchunk(e,
					(int64_t)ph.p_offset, ph.p_filesz,
					ELF_T_NHDR), out, outcap, outlen);
		}
	}
	close_elf(e, fd);
	if (!found) {
		util_errf(err, errlen, "%s has no GNU build id note",
			  path ? path : "ELF image");
		return PTD_ERR_NO_IMAGE;
	}
	return 0;
}

static int is_regular(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int id_matches(const char *path, const char *hex)
{
	uint8_t id[64];
	size_t n, i;
	char h[129];

	if (!is_regular(path) ||
	    symtab_build_id(path, NULL, 0, id, sizeof(id), &n, NULL, 0) < 0 ||
	    n > sizeof(id) || 2 * n != strlen(hex))
		return 0;
	for (i = 0; i < n; i++)
		snprintf(h + 2 * i, 3, "%02x", id[i]);
	return memcmp(h, hex, 2 * n) == 0;
}

int symtab_find_by_build_id(const char *const *dirs, const char *hex,
			    int want_debug, char *out, size_t outlen)
{
	static const char *const debug_forms[] = {
		"%s/.build-id/%.2s/%s.debug", "%s/.build-id/%.2s/%s/debug",
	};
	static const char *const code_forms[] = {
		"%s/.build-id/%.2s/%s", "%s/.build-id/%.2s/%s/elf", "%s/%.2s/%s/elf",
	};
	const char *home = getenv("HOME");
	char homedbg[4096];
	const char *defaults[2];
	size_t nd = 0, i, pass, k, hl;

	if (!hex || !out || !outlen)
		return PTD_ERR_INVAL;
	hl = strlen(hex);
	if (hl < 4 || hl > 128 || hl % 2 || strspn(hex, "0123456789abcdef") != hl)
		return PTD_ERR_INVAL;
	defaults[nd++] = "/usr/lib/debug";
	if (home && *home &&
	    (size_t)snprintf(homedbg, sizeof(homedbg), "%s/.debug", home) < sizeof(homedbg))
		defaults[nd++] = homedbg;
	/* pass 0: caller's dirs, pass 1: defaults. */
	for (pass = 0; pass < 2; pass++) {
		const char *const *ds = pass ? defaults : dirs;
		size_t n = pass ? nd : SIZE_MAX;

		for (i = 0; ds && i < n && ds[i]; i++) {
			for (k = 0; k < 5; k++) {
				const char *fmt;
				int m;

				if (want_debug)
					fmt = k < 2 ? debug_forms[k] : code_forms[k - 2];
				else if (k < 3)
					fmt = code_forms[k];
				else
					break;
				m = snprintf(out, outlen, fmt, ds[i], hex, hex + 2);
				if (m > 0 && (size_t)m < outlen && id_matches(out, hex))
					return 0;
			}
		}
	}
	out[0] = 0;
	return PTD_ERR_NO_IMAGE;
}

int symtab_has_debug_info(const char *path)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;
	int fd, found = 0;

	if (!path || open_elf(path, NULL, 0, &e, &fd, NULL, 0) < 0)
		return 0;
	if (elf_getshdrstrndx(e, &shstrndx) < 0) {
		close_elf(e, fd);
		return 0;
	}
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		/* A symbol table holds its null entry and at least one more. */
		found = (sh.sh_type == SHT_SYMTAB &&
			 sh.sh_size > (sh.sh_entsize ? sh.sh_entsize : 1)) ||
			(name && (!strcmp(name, ".debug_info") ||
				  !strcmp(name, ".zdebug_info")));
	}
	close_elf(e, fd);
	return found;
}

/* --------------------------------------------------------- debuglink */

/* CRC-32 of a whole file as gdb checks .gnu_debuglink (zlib's crc32:
 * reflected polynomial 0xedb88320).  The table is built per call: cheap
 * next to reading the file, and no global state. */
static int file_crc32(const char *path, uint32_t *out)
{
	uint32_t table[256], crc = 0xffffffffu;
	struct util_map m;

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	if (util_map_file(path, &m, NULL, 0) < 0)
		return -1;
	for (size_t i = 0; i < m.size; i++)
		crc = table[(crc ^ m.data[i]) & 0xff] ^ (crc >> 8);
	util_unmap(&m);
	*out = ~crc;
	return 0;
}

/* The .gnu_debuglink section of path: the debug file's name, NUL, padding
 * to 4 bytes, the CRC in the file's byte order.  Returns 1 when found. */
static int read_debuglink(const char *path, char *name, size_t namecap,
			  uint32_t *crc)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;
	int fd, found = 0;

	if (open_elf(path, NULL, 0, &e, &fd, NULL, 0) < 0)
		return 0;
	if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx) < 0) {
		close_elf(e, fd);
		return 0;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *sname;
		const uint8_t *p;
		Elf_Data *d;
		size_t len, crc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		sname = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".gnu_debuglink") != 0)
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			break;
		p = d->d_buf;
		len = strnlen((const char *)p, d->d_size);
		crc_off = (len + 4) & ~(size_t)3;
		/* A bare file name: one with '/' could point anywhere. */
		if (!len || len >= namecap || crc_off + 4 > d->d_size ||
		    memchr(p, '/', len))
			break;
		memcpy(name, p, len);
		name[len] = 0;
		p += crc_off;
		*crc = eh.e_ident[EI_DATA] == ELFDATA2MSB ?
		       (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		       (uint32_t)p[2] << 8 | p[3] : util_le32(p);
		found = 1;
		break;
	}
	close_elf(e, fd);
	return found;
}

int symtab_find_debuglink(const char *path, char *out, size_t outlen)
{
	char name[256], dirs[2][4096], *real;
	const char *names[2];
	size_t nd = 0, i, k;
	uint32_t want, crc;

	if (!path || !out || !outlen)
		return PTD_ERR_INVAL;
	out[0] = 0;
	if (!read_debuglink(path, name, sizeof(name), &want))
		return PTD_ERR_NO_IMAGE;
	/* The directory as named and as resolved: /lib64/ld-linux-x86-64.so.2
	 * is a link into /usr/lib/x86_64-linux-gnu, where the debug file
	 * lies. */
	real = realpath(path, NULL);
	names[0] = path;
	names[1] = real;
	for (i = 0; i < 2 && names[i]; i++) {
		const char *slash = strrchr(names[i], '/');
		int m = slash ? snprintf(dirs[nd], sizeof(dirs[nd]), "%.*s",
					 (int)(slash - names[i]), names[i]) :
				snprintf(dirs[nd], sizeof(dirs[nd]), ".");

		if (m >= 0 && (size_t)m < sizeof(dirs[nd]) &&
		    (!nd || strcmp(dirs[0], dirs[nd]) != 0))
			nd++;
	}
	free(real);
	for (i = 0; i < nd; i++) {
		for (k = 0; k < 3; k++) {
			int m;

			if (k == 2 && dirs[i][0] != '/' && dirs[i][0])
				continue;   /* relative: no /usr/lib/debug twin */
			m = snprintf(out, outlen, k == 0 ? "%s/%s" : k == 1 ?
				     "%s/.debug/%s" : "/usr/lib/debug%s/%s",
				     dirs[i], name);
			if (m > 0 && (size_t)m < outlen && is_regular(out) &&
			    !util_same_file(out, path) &&
			    file_crc32(out, &crc) == 0 && crc == want)
				return 0;
		}
	}
	out[0] = 0;
	return PTD_ERR_NO_IMAGE;
}
