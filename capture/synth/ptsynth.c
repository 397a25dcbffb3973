/* SPDX-License-Identifier: MIT */
/*
 * ptsynth - ground truth for Intel PT decoding without Intel PT hardware.
 *
 *   ptsynth record -o OUT.ptd [options] -- CMD [ARGS]
 *
 * Runs CMD under ptrace single-step, records every executed user-space
 * instruction (OUT.ptd/expected.insn), and writes the Intel PT packets that
 * user-only tracing hardware would have emitted for that execution into a
 * real perf.data (OUT.ptd/perf.data) together with the sideband (COMM,
 * MMAP2 with build ids, ITRACE_START, AUX, SWITCH_CPU_WIDE) and the code
 * bytes that ran (OUT.ptd/text/).  All threads run on one simulated CPU.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfwrite.h"
#include "ptdecode.h"
#include "ptgen.h"
#include "textstore.h"
#include "util.h"

#define PAGE 4096ull
#define PT_PMU_TYPE 8            /* the intel_pt PMU type number we claim */
#define PT_ID 1000               /* sample id of the intel_pt attr */
#define DUMMY_ID 1001            /* sample id of the sideband attr */
#define CPUID_STR "GenuineIntel,6,158,10"  /* Kaby/Coffee Lake */
#define TIME_SHIFT 10
#define TIME_MULT 1000           /* ns = tsc * 1000 / 1024 */
#define TIME_ZERO 1000000000ull
#define KERNEL_CYCLES 200        /* simulated time spent in the kernel */
#define MAX_THREADS 64

/* perf intel_pt config bits (tools/perf format for the intel_pt PMU). */
#define CFG_PT (1ull << 0)
#define CFG_TSC (1ull << 10)
#define CFG_NORETCOMP (1ull << 11)
#define CFG_BRANCH (1ull << 13)

static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ptsynth: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---------------- options ---------------- */

struct opts {
	const char *out;
	uint32_t psb_period;
	int retcomp, long_tnt, aslr, tsc;
	uint32_t cpi;
	uint64_t max_insns;
	unsigned seed;
	double interrupts;   /* probability per instruction */
	char **cmd;
};

/* ---------------- mappings ---------------- */

struct mapping {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min, prot;
	char path[512];
	uint8_t bid[20];
	size_t bid_len;
	int emitted;
};

struct page {
	uint64_t addr;
	uint8_t *bytes;       /* NULL when unreadable */
	int executed;
	int map;              /* index into maps at capture time */
};

/* decoded-instruction cache: ip -> class */
struct icache_ent {
	uint64_t ip;
	struct ptgen_insn in;
	int used;
};

struct thread {
	pid_t tid;
	uint64_t ip;          /* next instruction to execute */
	int live;
};

struct synth {
	struct opts o;
	pid_t pid;
	int memfd;
	csh cs;
	struct perfwrite *pw;
	struct ptgen *gen;
	FILE *expected;
	uint64_t ninsns;
	uint64_t aux_offset;
	struct mapping *maps;
	size_t nmaps, maps_cap;
	struct page *pages;   /* open addressing by page address */
	size_t pages_cap, npages;
	struct icache_ent *ic;
	size_t ic_cap, ic_n;
	uint64_t nsignals, ninterrupts, nswitches;
	char err[512];
};

static uint64_t perf_time(uint64_t tsc)
{
	uint64_t quot = tsc >> TIME_SHIFT, rem = tsc & ((1ull << TIME_SHIFT) - 1);
	return TIME_ZERO + quot * TIME_MULT + ((rem * TIME_MULT) >> TIME_SHIFT);
}

static struct perfwrite_sid sid_for(struct synth *s, uint32_t tid, uint64_t id)
{
	struct perfwrite_sid sid = { 0 };
	sid.pid = (uint32_t)s->pid;
	sid.tid = tid;
	sid.time = perf_time(ptgen_tsc(s->gen));
	sid.id = id;
	sid.cpu = 0;
	return sid;
}

static void check(struct synth *s, int r, const char *what)
{
	if (r < 0)
		die("%s failed: %s", what, ptd_strerror(r));
}

/* ---------------- build ids ---------------- */

static size_t elf_build_id(Elf *e, uint8_t out[20])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t phnum, i;

	/* Sections first (files), then program headers (vdso in memory). */
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, no, dof;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &no, &dof)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + no, "GNU", 4) &&
			    nh.n_descsz && nh.n_descsz <= 20) {
				memcpy(out, (char *)d->d_buf + dof, nh.n_descsz);
				return nh.n_descsz;
			}
		}
	}
	if (elf_getphdrnum(e, &phnum) == 0) {
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			Elf_Data *d;
			GElf_Nhdr nh;
			size_t off = 0, no, dof;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(e, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
			while (d && (off = gelf_getnote(d, off, &nh, &no, &dof)) > 0) {
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
				    nh.n_descsz && nh.n_descsz <= 20) {
					memcpy(out, (char *)d->d_buf + dof, nh.n_descsz);
					return nh.n_descsz;
				}
			}
		}
	}
	return 0;
}

static size_t file_build_id(const char *path, uint8_t out[20])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	Elf *e;

	if (fd < 0)
		return 0;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e) {
		n = elf_build_id(e, out);
		elf_end(e);
	}
	close(fd);
	return n;
}

static size_t mem_build_id(struct synth *s, const struct mapping *m, uint8_t out[20])
{
	size_t len = m->end - m->start, n = 0;
	uint8_t *buf = malloc(len);
	Elf *e;

	if (!buf)
		return 0;
	if (pread(s->memfd, buf, len, (off_t)m->start) == (ssize_t)len &&
	    (e = elf_memory((char *)buf, len))) {
		n = elf_build_id(e, out);
		elf_end(e);
	}
	free(buf);
	return n;
}

/* ---------------- /proc/PID/maps ---------------- */

static struct mapping *find_map(struct synth *s, uint64_t a)
{
	size_t i;
	for (i = s->nmaps; i-- > 0;)
		if (a >= s->maps[i].start && a < s->maps[i].end)
			return &s->maps[i];
	return NULL;
}

/* Reads the executable mappings; new ones get an MMAP2 record now. */
static void scan_maps(struct synth *s)
{
	char path[64], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", s->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long st, en, off, ino;
		unsigned maj, min;
		char perms[8], name[512] = "";
		struct mapping *m = NULL;
		size_t i;
		int n;

		n = sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %511[^\n]",
			   &st, &en, perms, &off, &maj, &min, &ino, name);
		if (n < 7 || perms[2] != 'x')
			continue;
		{	/* strip leading blanks of the name */
			char *p = name;
			while (*p == ' ')
				p++;
			memmove(name, p, strlen(p) + 1);
		}
		for (i = 0; i < s->nmaps; i++)
			if (s->maps[i].start == st && s->maps[i].end == en &&
			    s->maps[i].pgoff == off && !strcmp(s->maps[i].path, name))
				m = &s->maps[i];
		if (m)
			continue;
		if (util_grow((void **)&s->maps, &s->maps_cap, s->nmaps + 1,
			      sizeof(*s->maps)) < 0)
			die("out of memory");
		m = &s->maps[s->nmaps++];
		memset(m, 0, sizeof(*m));
		m->start = st; m->end = en; m->pgoff = off; m->ino = ino;
		m->maj = maj; m->min = min; m->prot = 5;
		snprintf(m->path, sizeof(m->path), "%s", name[0] ? name : "//anon");
		if (name[0] == '/')
			m->bid_len = file_build_id(name, m->bid);
		else if (!strcmp(name, "[vdso]"))
			m->bid_len = mem_build_id(s, m, m->bid);
	}
	fclose(f);
	for (size_t i = 0; i < s->nmaps; i++) {
		struct mapping *m = &s->maps[i];
		struct perfwrite_sid sid;
		if (m->emitted)
			continue;
		m->emitted = 1;
		sid = sid_for(s, (uint32_t)s->pid, DUMMY_ID);
		check(s, perfwrite_mmap2(s->pw, &sid, PW_MISC_USER, (uint32_t)s->pid,
					 (uint32_t)s->pid, m->start, m->end - m->start,
					 m->pgoff, m->bid_len ? m->bid : NULL, m->bid_len,
					 m->maj, m->min, m->ino, 0, m->prot, 2 /* MAP_PRIVATE */,
					 m->path), "MMAP2");
	}
}

/* ---------------- code pages ---------------- */

static struct page *page_get(struct synth *s, uint64_t addr)
{
	size_t i, mask;

	if ((s->npages + 1) * 2 > s->pages_cap) {
		size_t ncap = s->pages_cap ? s->pages_cap * 2 : 1024, j;
		struct page *np = calloc(ncap, sizeof(*np));
		if (!np)
			die("out of memory");
		for (j = 0; j < s->pages_cap; j++) {
			struct page *p = &s->pages[j];
			if (!p->addr)
				continue;
			for (i = (p->addr / PAGE) & (ncap - 1); np[i].addr; i = (i + 1) & (ncap - 1))
				;
			np[i] = *p;
		}
		free(s->pages);
		s->pages = np;
		s->pages_cap = ncap;
	}
	mask = s->pages_cap - 1;
	for (i = (addr / PAGE) & mask; s->pages[i].addr; i = (i + 1) & mask)
		if (s->pages[i].addr == addr)
			return &s->pages[i];
	/* First use: copy the page out of the tracee now, while it exists. */
	s->pages[i].addr = addr;
	s->pages[i].bytes = malloc(PAGE);
	s->pages[i].map = -1;
	if (s->pages[i].bytes &&
	    pread(s->memfd, s->pages[i].bytes, PAGE, (off_t)addr) != (ssize_t)PAGE) {
		free(s->pages[i].bytes);
		s->pages[i].bytes = NULL;
	}
	{
		struct mapping *m = find_map(s, addr);
		if (m)
			s->pages[i].map = (int)(m - s->maps);
	}
	s->npages++;
	return &s->pages[i];
}

static int is_cond(unsigned id)
{
	switch (id) {
	case X86_INS_JA: case X86_INS_JAE: case X86_INS_JB: case X86_INS_JBE:
	case X86_INS_JE: case X86_INS_JG: case X86_INS_JGE: case X86_INS_JL:
	case X86_INS_JLE: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return 1;
	}
	return 0;
}

static int classify(struct synth *s, uint64_t ip, const uint8_t *code,
		    size_t avail, struct ptgen_insn *out)
{
	const uint8_t *p = code;
	size_t sz = avail;
	uint64_t a = ip;
	cs_insn *ci = cs_malloc(s->cs);
	const cs_x86 *x;
	int ok;

	memset(out, 0, sizeof(*out));
	ok = cs_disasm_iter(s->cs, &p, &sz, &a, ci);
	if (!ok) {
		cs_free(ci, 1);
		return -1;
	}
	x = &ci->detail->x86;
	out->len = (uint8_t)ci->size;
	switch (ci->id) {
	case X86_INS_JMP:
	case X86_INS_CALL:
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
			out->cls = ci->id == X86_INS_JMP ? PTG_JMP_DIRECT : PTG_CALL_DIRECT;
			out->target = (uint64_t)x->operands[0].imm;
		} else {
			out->cls = ci->id == X86_INS_JMP ? PTG_JMP_INDIRECT : PTG_CALL_INDIRECT;
		}
		break;
	case X86_INS_RET:
		out->cls = PTG_RET;
		break;
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT:
	case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_RETF:
	case X86_INS_RETFQ: case X86_INS_IRET: case X86_INS_IRETD:
	case X86_INS_IRETQ: case X86_INS_UD2: case X86_INS_SYSEXIT:
	case X86_INS_SYSRET:
		out->cls = PTG_FAR;
		break;
	default:
		if (is_cond(ci->id)) {
			out->cls = PTG_COND;
			out->target = (uint64_t)x->operands[0].imm;
		}
		break;
	}
	if (x->prefix[0] == 0xf3 || x->prefix[0] == 0xf2) {
		switch (x->opcode[0]) {
		case 0x6c: case 0x6d: case 0x6e: case 0x6f: case 0xa4: case 0xa5:
		case 0xa6: case 0xa7: case 0xaa: case 0xab: case 0xac: case 0xad:
		case 0xae: case 0xaf:
			out->rep_string = 1;
		}
	}
	cs_free(ci, 1);
	return 0;
}

/* The instruction at ip, decoded from the captured pages (cached). */
static const struct ptgen_insn *insn_at(struct synth *s, uint64_t ip)
{
	size_t i, mask;
	uint8_t code[16];
	struct page *pg;
	size_t off, n, avail = 0;

	if ((s->ic_n + 1) * 2 > s->ic_cap) {
		size_t ncap = s->ic_cap ? s->ic_cap * 2 : 65536, j;
		struct icache_ent *nic = calloc(ncap, sizeof(*nic));
		if (!nic)
			die("out of memory");
		for (j = 0; j < s->ic_cap; j++) {
			if (!s->ic[j].used)
				continue;
			for (i = (s->ic[j].ip * 0x9e3779b97f4a7c15ull >> 20) & (ncap - 1);
			     nic[i].used; i = (i + 1) & (ncap - 1))
				;
			nic[i] = s->ic[j];
		}
		free(s->ic);
		s->ic = nic;
		s->ic_cap = ncap;
	}
	mask = s->ic_cap - 1;
	for (i = (ip * 0x9e3779b97f4a7c15ull >> 20) & mask; s->ic[i].used; i = (i + 1) & mask)
		if (s->ic[i].ip == ip)
			goto found;
	pg = page_get(s, ip & ~(PAGE - 1));
	off = ip & (PAGE - 1);
	if (pg->bytes) {
		n = PAGE - off < 16 ? PAGE - off : 16;
		memcpy(code, pg->bytes + off, n);
		avail = n;
		if (n < 16) {
			struct page *nx = page_get(s, (ip & ~(PAGE - 1)) + PAGE);
			if (nx->bytes) {
				memcpy(code + n, nx->bytes, 16 - n);
				avail = 16;
			}
		}
	}
	if (!avail || classify(s, ip, code, avail, &s->ic[i].in) < 0)
		die("cannot decode the instruction at %#llx", (unsigned long long)ip);
	s->ic[i].ip = ip;
	s->ic[i].used = 1;
	s->ic_n++;
found:
	pg = page_get(s, ip & ~(PAGE - 1));
	pg->executed = 1;
	if (off = ip & (PAGE - 1), off + s->ic[i].in.len > PAGE)
		page_get(s, (ip & ~(PAGE - 1)) + PAGE)->executed = 1;
	return &s->ic[i].in;
}

/* ---------------- output ---------------- */

static int flush_piece(void *ctx, const uint8_t *data, size_t len,
		       uint64_t tsc_first, uint64_t tsc_last)
{
	struct synth *s = ctx;
	struct perfwrite_sid sid = sid_for(s, (uint32_t)s->pid, PT_ID);
	size_t padded = (len + 7) & ~(size_t)7;
	int r;

	r = perfwrite_auxtrace(s->pw, data, len, s->aux_offset, tsc_first, 0,
			       (uint32_t)-1, 0);
	if (r)
		return r;
	sid.time = perf_time(tsc_last);
	r = perfwrite_aux(s->pw, &sid, s->aux_offset, padded, 0);
	s->aux_offset += padded;
	return r;
}

static void write_text_store(struct synth *s, const char *dir)
{
	struct textstore_writer *tw;
	char path[4096];
	size_t i, n = 0;
	uint64_t *addrs;

	snprintf(path, sizeof(path), "%s/text", dir);
	check(s, textstore_writer_open(path, &tw), "text store");
	/* Sorted executed pages; adjacent ones of one mapping form one row. */
	addrs = malloc((s->npages + 1) * sizeof(*addrs));
	if (!addrs)
		die("out of memory");
	for (i = 0; i < s->pages_cap; i++)
		if (s->pages[i].addr && s->pages[i].executed && s->pages[i].bytes &&
		    s->pages[i].map >= 0)
			addrs[n++] = s->pages[i].addr;
	for (i = 1; i < n; i++) {   /* insertion sort: a few hundred pages */
		uint64_t v = addrs[i];
		size_t j = i;
		while (j && addrs[j - 1] > v) {
			addrs[j] = addrs[j - 1];
			j--;
		}
		addrs[j] = v;
	}
	for (i = 0; i < n;) {
		struct page *first = page_get(s, addrs[i]);
		const struct mapping *m = &s->maps[first->map];
		size_t j = i + 1, k;
		struct textstore_entry e;
		uint8_t *bytes;

		while (j < n && addrs[j] == addrs[j - 1] + PAGE &&
		       page_get(s, addrs[j])->map == first->map)
			j++;
		bytes = malloc((j - i) * PAGE);
		if (!bytes)
			die("out of memory");
		for (k = i; k < j; k++)
			memcpy(bytes + (k - i) * PAGE, page_get(s, addrs[k])->bytes, PAGE);
		memset(&e, 0, sizeof(e));
		snprintf(e.kind, sizeof(e.kind), "%s",
			 !strcmp(m->path, "[vdso]") ? "vdso" :
			 m->path[0] == '/' ? "file" : "jit");
		e.start = addrs[i];
		e.len = (j - i) * PAGE;
		e.valid_from = 0;
		e.valid_to = TEXTSTORE_OPEN_END;
		e.pid = s->pid;
		snprintf(e.source, sizeof(e.source), "ptrace");
		snprintf(e.tag, sizeof(e.tag), "-");
		e.pgoff = m->pgoff + (addrs[i] - m->start);
		if (m->bid_len) {
			for (k = 0; k < m->bid_len; k++)
				sprintf(e.build_id + 2 * k, "%02x", m->bid[k]);
		} else {
			snprintf(e.build_id, sizeof(e.build_id), "-");
		}
		snprintf(e.name, sizeof(e.name), "%s", m->path);
		check(s, textstore_writer_add(tw, &e, bytes), "text store add");
		free(bytes);
		i = j;
	}
	free(addrs);
	check(s, textstore_writer_close(tw), "text store close");
}
