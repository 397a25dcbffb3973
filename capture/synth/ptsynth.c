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
 * bytes that ran (OUT.ptd/text/).  The threads run on one simulated CPU,
 * or with --cpus N on N of them at the same time (cpus.h), one AUX queue
 * per CPU as perf record -a writes them.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libelf.h>
#include <signal.h>
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

#include "guestsb.h"
#include "cpus.h"
#include "jitconv.h"
#include "perfwrite.h"
#include "ptdecode.h"
#include "ptcapdir.h"
#include "ptgen.h"
#include "sampler.h"
#include "snapring.h"
#include "symtab.h"
#include "synth_opts.h"
#include "textstore.h"
#include "walk.h"
#include "util.h"

#define PAGE 4096ull
#define PT_PMU_TYPE PTCAP_PMU_TYPE
#define PT_ID PTCAP_PT_ID
#define DUMMY_ID PTCAP_DUMMY_ID
#define CPUID_STR PTCAP_CPUID
#define TIME_SHIFT 10
#define TIME_MULT 1000           /* ns = tsc * 1000 / 1024 */
#define TIME_ZERO 1000000000ull
#define KERNEL_CYCLES 200        /* simulated time spent in the kernel */
#define MAX_THREADS 64

/* ---------------- options ---------------- */

struct opts {
	const char *out;
	uint32_t psb_period;
	int retcomp, long_tnt, aslr, tsc;
	int mtc, cyc;          /* MTC (+TMA) and CYC timing packets */
	uint32_t mtc_period;   /* MTC every 2^N crystal ticks */
	uint32_t cpi;
	uint64_t max_insns;
	unsigned seed;
	double interrupts;   /* probability per instruction */
	double vm_exits;     /* --vm-exits: probability per instruction */
	double overflows;    /* --overflows: probability per instruction */
	double overflow_psb; /* --overflow-psb: the share of them that
			      * resolve at a PSB+ */
	uint64_t quantum;    /* instructions per thread time slice */
	int archive;         /* 1: the program's own ELF files, 2: all */
	const char *filter;  /* --addr-filter: AUXTRACE_INFO's filter string */
	int guest;           /* 1 --guest, 2 --guest-code (guestsb.h) */
	uint64_t sample_every; /* --sample-every N (sampler.h) */
	int unwind_dwarf;      /* --unwind dwarf */
	int layout_threads;  /* --perf-layout threads: perf.data/ as perf
			      * record --threads writes it */
	uint64_t snapshot;   /* --snapshot SIZE: snapshot-mode AUX */
	int ncpus;           /* --cpus: simulated CPUs */
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
	int changed;          /* dynamic code rewritten after the copy */
};

/* decoded-instruction cache: ip -> class */
struct icache_ent {
	uint64_t ip;
	struct ptgen_insn in;
	uint8_t code[16];     /* the bytes it was decoded from */
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
	struct ptgen *gen;    /* the generator of the CPU stepping now */
	struct synth_cpus cpus;
	int cpu;              /* the CPU stepping now */
	FILE *expected;
	FILE *expected_threads;  /* --cpus N > 1: "CPU TID" per expected line */
	uint64_t ninsns;
	struct mapping *maps;
	size_t nmaps, maps_cap;
	struct page *pages;   /* open addressing by page address */
	size_t pages_cap, npages;
	struct icache_ent *ic;
	size_t ic_cap, ic_n;
	uint64_t nsignals, ninterrupts, nswitches, nvm_exits, noverflows;
	int snapping;         /* --snapshot: every CPU's ring being filled */
	char err[512];
	/* JIT code: clock pairs, executed dynamic code, jitdump copies */
	struct jitconv *jc;
	int dyn;                   /* insn_at's instruction is dynamic code */
	uint8_t dyn_code[16];
	uint64_t jit_dumps, jit_dump_errors, jit_pages_left_out, jit_pages_changed;
	struct sampler *smp;       /* --sample-every */
	int sample_due;
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
	sid.cpu = (uint32_t)s->cpu;
	if (s->o.guest == 1 && id == DUMMY_ID) {
		/* the program's sideband is the guest's, from the vcpu of
		 * the CPU it happens on */
		sid.id = PTCAP_GUEST_ID + (uint64_t)s->cpu;
	} else if (s->o.guest == 1) {
		sid.pid = GUESTSB_HV_PID;  /* the trace is the host's vcpu thread's */
		sid.tid = GUESTSB_HV_TID + (uint32_t)s->cpu;
	}
	return sid;
}

static void check(struct synth *s, int r, const char *what)
{
	if (r < 0)
		synth_die("%s failed: %s", what, ptd_strerror(r));
}

/* ---------------- build ids ---------------- */

/* The GNU build id of an ELF file, or 0 bytes (none, or longer than an
 * MMAP2 record holds). */
static size_t file_build_id(const char *path, uint8_t out[20])
{
	size_t n = 0;

	if (symtab_build_id(path, NULL, 0, out, 20, &n, NULL, 0) < 0 || n > 20)
		return 0;
	return n;
}

/* The same for the ELF image mapped at m in the tracee (the vDSO). */
static size_t mem_build_id(struct synth *s, const struct mapping *m, uint8_t out[20])
{
	size_t len = m->end - m->start, n = 0;
	uint8_t *buf = malloc(len);

	if (!buf)
		return 0;
	if (pread(s->memfd, buf, len, (off_t)m->start) != (ssize_t)len ||
	    symtab_build_id(NULL, buf, len, out, 20, &n, NULL, 0) < 0 || n > 20)
		n = 0;
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
			synth_die("out of memory");
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
		check(s, perfwrite_mmap2(s->pw, &sid, PD_MISC_USER, (uint32_t)s->pid,
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
			synth_die("out of memory");
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

/* Code not backed by a file (JIT code: anonymous memory, memfd): it can
 * change while the program runs. */
static int is_dynamic(const struct mapping *m)
{
	if (!strcmp(m->path, "[vdso]") || !strcmp(m->path, "[vsyscall]"))
		return 0;
	return m->path[0] != '/' || !strncmp(m->path, "//", 2) ||
	       !strncmp(m->path, "/memfd:", 7);
}

/* Up to 16 bytes at ip as they are now (fewer at the end of a mapping). */
static size_t read_live(struct synth *s, uint64_t ip, uint8_t code[16])
{
	ssize_t n = pread(s->memfd, code, 16, (off_t)ip);

	if (n < 16)
		n = pread(s->memfd, code, PAGE - (ip & (PAGE - 1)) < 16 ?
			  PAGE - (ip & (PAGE - 1)) : 16, (off_t)ip);
	return n > 0 ? (size_t)n : 0;
}

static int classify(struct synth *s, uint64_t ip, const uint8_t *code,
		    size_t avail, struct ptgen_insn *out)
{
	return ptgen_classify(s->cs, ip, code, avail, out);
}

/* The instruction at ip, decoded from the captured pages (cached). */
static const struct ptgen_insn *insn_at(struct synth *s, uint64_t ip)
{
	size_t i, mask;
	uint8_t code[16];
	struct page *pg;
	size_t off, n, avail = 0;
	int fresh = 1;

	if ((s->ic_n + 1) * 2 > s->ic_cap) {
		size_t ncap = s->ic_cap ? s->ic_cap * 2 : 65536, j;
		struct icache_ent *nic = calloc(ncap, sizeof(*nic));
		if (!nic)
			synth_die("out of memory");
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
	/* Dynamic code can be rewritten at any time: its bytes are read
	 * afresh at each execution and the cached decoding checked. */
	pg = page_get(s, ip & ~(PAGE - 1));
	off = ip & (PAGE - 1);
	s->dyn = pg->map >= 0 && is_dynamic(&s->maps[pg->map]);
	if (s->dyn) {
		avail = read_live(s, ip, code);
		if (pg->bytes && memcmp(code, pg->bytes + off,
					avail < PAGE - off ? avail : PAGE - off))
			pg->changed = 1;
	}
	mask = s->ic_cap - 1;
	for (i = (ip * 0x9e3779b97f4a7c15ull >> 20) & mask; s->ic[i].used; i = (i + 1) & mask)
		if (s->ic[i].ip == ip) {
			if (!s->dyn || !memcmp(s->ic[i].code, code,
					       s->ic[i].in.len < avail ? s->ic[i].in.len : avail))
				goto found;
			fresh = 0;   /* rewritten: decode again in place */
			break;
		}
	if (s->dyn) {
		/* bytes read above */
	} else if (pg->bytes) {
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
	if (!avail)
		synth_die("cannot read the instruction at %#llx", (unsigned long long)ip);
	if (classify(s, ip, code, avail, &s->ic[i].in) < 0) {
		/* capstone 4 lacks some EVEX/VEX encodings (AVX-512 string
		 * functions in libc); none of those is a branch. */
		size_t k = 0;
		while (k < avail && (code[k] == 0x66 || code[k] == 0x67 || code[k] == 0xf2 ||
				     code[k] == 0xf3 || code[k] == 0x2e || code[k] == 0x3e ||
				     code[k] == 0x26 || code[k] == 0x36 || code[k] == 0x64 ||
				     code[k] == 0x65))
			k++;
		if (k >= avail || (code[k] != 0x62 && code[k] != 0xc4 && code[k] != 0xc5 &&
				   code[k] != 0x8f))
			synth_die("cannot decode the instruction at %#llx", (unsigned long long)ip);
		memset(&s->ic[i].in, 0, sizeof(s->ic[i].in));
		s->ic[i].in.cls = PTG_OTHER;
		s->ic[i].in.len = 15;   /* only used to mark pages */
		s->ic[i].in.len_unknown = 1;
	}
	memcpy(s->ic[i].code, code, avail);
	if (fresh) {
		s->ic[i].ip = ip;
		s->ic[i].used = 1;
		s->ic_n++;
	}
found:
	if (s->dyn)
		memcpy(s->dyn_code, s->ic[i].code, sizeof(s->dyn_code));
	pg = page_get(s, ip & ~(PAGE - 1));
	pg->executed = 1;
	if (off = ip & (PAGE - 1), off + s->ic[i].in.len > PAGE)
		page_get(s, (ip & ~(PAGE - 1)) + PAGE)->executed = 1;
	return &s->ic[i].in;
}

/* ---------------- output ---------------- */

/* A snapshot of CPU c's AUX ring (perf record -S): the AUX record the
 * kernel writes in overwrite mode, then perf's AUXTRACE record with the
 * last --snapshot bytes, on c's queue. */
static int write_snapshot(struct synth *s, struct synth_cpu *c)
{
	struct perfwrite_sid sid = sid_for(s, (uint32_t)s->pid, PT_ID);
	uint64_t offset;
	size_t len;
	const uint8_t *data = snapring_take(c->snap, &len, &offset);
	int r;

	sid.time = perf_time(c->snap_tsc);
	sid.cpu = (uint32_t)c->idx;
	r = perfwrite_aux(s->pw, &sid, offset, len, PD_AUX_FLAG_OVERWRITE);
	return r ? r : perfwrite_auxtrace(s->pw, data, len, offset, c->snap_tsc,
					  (uint32_t)c->idx, (uint32_t)-1,
					  (uint32_t)c->idx);
}

/* CPU d's snapshot at time tsc (or at its last trace's time, if later):
 * its trace so far goes into its ring, cut where it stands (ptgen_flush),
 * and the ring is written if that gave it new trace. */
static int snapshot_at(struct synth *s, struct synth_cpu *d, uint64_t tsc)
{
	int r;

	s->snapping = 1;
	r = ptgen_flush(d->gen);
	s->snapping = 0;
	if (r || !snapring_pending(d->snap))
		return r;
	if (d->snap_tsc < tsc)
		d->snap_tsc = tsc;
	return write_snapshot(s, d);
}

/* perf record -S snapshots every CPU's ring at one moment, when one ring's
 * schedule (snapring.h) says so: at time tsc, CPU due's now; a CPU whose
 * clock has passed tsc now too; one still behind it (its thread waiting
 * to run on it at an earlier time) once its clock reaches tsc
 * (snapshot_catch_up), so that the snapshot holds its trace up to then. */
static int snapshot_all(struct synth *s, struct synth_cpu *due, uint64_t tsc)
{
	int r = write_snapshot(s, due);

	for (int i = 0; i < s->cpus.n && !r; i++) {
		struct synth_cpu *d = &s->cpus.c[i];

		if (d == due)
			continue;
		if (ptgen_tsc(d->gen) >= tsc)
			r = snapshot_at(s, d, tsc);
		else if (d->snap_ndue < SYNTH_SNAP_DUE)
			d->snap_due[d->snap_ndue++] = tsc;
	}
	return r;
}

/* The snapshots CPU d's clock has reached, in time order. */
static int snapshot_catch_up(struct synth *s, struct synth_cpu *d)
{
	int r = 0;

	while (!r && d->snap_ndue && d->snap_due[0] <= ptgen_tsc(d->gen)) {
		r = snapshot_at(s, d, d->snap_due[0]);
		memmove(d->snap_due, d->snap_due + 1, --d->snap_ndue * sizeof(d->snap_due[0]));
	}
	return r;
}

/* A piece of CPU c's trace: AUXTRACE on its queue, AUX on its CPU. */
static int flush_piece(void *ctx, const uint8_t *data, size_t len,
		       uint64_t tsc_first, uint64_t tsc_last)
{
	struct synth_cpu *c = ctx;
	struct synth *s = c->owner;
	struct perfwrite_sid sid = sid_for(s, (uint32_t)s->pid, PT_ID);
	size_t padded = (len + 7) & ~(size_t)7;
	int r;

	if (c->snap) {
		/* (catch-up MTCs and PSBs after idle time carry earlier times) */
		if (c->snap_tsc < tsc_last)
			c->snap_tsc = tsc_last;
		if (!snapring_add(c->snap, data, len) || s->snapping)
			return 0;
		return snapshot_all(s, c, tsc_last);
	}
	r = perfwrite_auxtrace(s->pw, data, len, c->aux_offset, tsc_first,
			       (uint32_t)c->idx, (uint32_t)-1, (uint32_t)c->idx);
	if (r)
		return r;
	sid.time = perf_time(tsc_last);
	sid.cpu = (uint32_t)c->idx;
	r = perfwrite_aux(s->pw, &sid, c->aux_offset, padded, 0);
	c->aux_offset += padded;
	return r;
}

/* ---------------- JIT code (jitdump) ---------------- */

/* Real CLOCK_MONOTONIC now against simulated perf time now (jitconv.h). */
static void clock_pair(struct synth *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	check(s, jitconv_pair(s->jc, (uint64_t)ts.tv_sec * 1000000000ull +
			      (uint64_t)ts.tv_nsec, perf_time(ptgen_tsc(s->gen))),
	      "clock pair");
}

/* The dynamic-code instruction insn_at just read, with the times at which
 * a decoder looks up its code: from the last TSC packet to now. */
static void note_dyn_exec(struct synth *s, uint64_t ip, const struct ptgen_insn *in)
{
	uint64_t lo = s->o.tsc ? perf_time(ptgen_last_tsc(s->gen)) : 0;

	check(s, jitconv_exec(s->jc, s->pid, ip, s->dyn_code, in->len,
			      lo, perf_time(ptgen_tsc(s->gen))), "JIT check");
}

static int copy_file(const char *from, const char *to)
{
	struct util_map m;
	char err[256];
	int fd, ok;

	if (util_map_file(from, &m, err, sizeof(err)))
		return -1;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = fd >= 0 && write(fd, m.data, m.size) == (ssize_t)m.size;
	if (fd >= 0 && close(fd))
		ok = 0;
	util_unmap(&m);
	return ok ? 0 : -1;
}

/* Every jitdump the program mapped (perf's agents map it PROT_EXEC so the
 * trace names it) goes to OUT/jit/ on the simulated clock, with the
 * program's perf-PID.map (beside the dump, else in /tmp). */
static void write_jit(struct synth *s, const char *dir)
{
	for (size_t i = 0; i < s->nmaps; i++) {
		const char *path = s->maps[i].path, *base = strrchr(path, '/');
		char out[4096], src[4096], err[512];
		int pid, seen = 0, rc;

		if (!perf_abi_is_jitdump_name(path))
			continue;
		for (size_t k = 0; k < i; k++)
			seen |= !strcmp(s->maps[k].path, path);
		if (seen)
			continue;
		base = base ? base + 1 : path;
		snprintf(out, sizeof(out), "%s/jit", dir);
		if (mkdir(out, 0700) < 0 && errno != EEXIST)
			synth_die("cannot create %s: %s", out, strerror(errno));
		snprintf(out, sizeof(out), "%s/jit/%s", dir, base);
		rc = jitconv_copy_dump(s->jc, path, out, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "ptsynth: warning: jitdump not copied: %s\n", err);
			s->jit_dump_errors++;
			continue;
		}
		s->jit_dumps++;
		if (sscanf(base, "jit-%d.dump", &pid) != 1)
			continue;
		snprintf(src, sizeof(src), "%.*s/perf-%d.map",
			 base > path ? (int)(base - 1 - path) : 1, base > path ? path : ".", pid);
		snprintf(out, sizeof(out), "%s/jit/perf-%d.map", dir, pid);
		if (copy_file(src, out)) {
			snprintf(src, sizeof(src), "/tmp/perf-%d.map", pid);
			copy_file(src, out);
		}
	}
}

/* Files found by build id where the capture is decoded (distribution
 * packages, debug packages): archiving them would make captures huge. */
static int is_system_file(const char *path)
{
	static const char *const dirs[] = { "/usr/", "/lib/", "/lib64/", "/bin/",
					    "/sbin/", "/etc/" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			return 1;
	return 0;
}

/* Copies path, whose build id must be bid, to DIR/.build-id/xx/rest (the
 * layout of perf's build-id cache and gdb's debug directories); 1 when
 * copied, 0 when already there, -1 with a warning. */
static int archive_file(const char *dir, const char *path, const uint8_t *bid,
			size_t bid_len)
{
	char hex[41], out[4096], got[41];
	uint8_t id[20];
	size_t n;
	struct stat sb;

	for (size_t i = 0; i < bid_len; i++)
		sprintf(hex + 2 * i, "%02x", bid[i]);
	snprintf(out, sizeof(out), "%s/.build-id", dir);
	mkdir(out, 0700);
	snprintf(out, sizeof(out), "%s/.build-id/%.2s", dir, hex);
	mkdir(out, 0700);
	snprintf(out, sizeof(out), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	if (!stat(out, &sb))
		return 0;
	if (copy_file(path, out)) {
		fprintf(stderr, "ptsynth: warning: cannot copy %s to %s: %s\n",
			path, out, strerror(errno));
		unlink(out);
		return -1;
	}
	/* rebuilt while it ran: the copy is not the code that ran */
	n = file_build_id(out, id);
	for (size_t i = 0; i < n; i++)
		sprintf(got + 2 * i, "%02x", id[i]);
	if (n != bid_len || memcmp(id, bid, n)) {
		fprintf(stderr, "ptsynth: warning: %s changed since it ran (build "
			"id %s, not %s): not archived\n", path, n ? got : "none", hex);
		unlink(out);
		return -1;
	}
	return 1;
}

/* The executed ELF files go with the capture, so that it decodes with
 * symbols where they do not exist (--no-archive: none, --archive-all:
 * system files too). */
static size_t write_archive(struct synth *s, const char *dir)
{
	char *ran = calloc(s->nmaps + 1, 1);
	size_t n = 0;

	if (!ran)
		synth_die("out of memory");
	for (size_t i = 0; i < s->pages_cap; i++)
		if (s->pages[i].addr && s->pages[i].executed && s->pages[i].map >= 0)
			ran[s->pages[i].map] = 1;
	for (size_t i = 0; i < s->nmaps; i++) {
		const struct mapping *m = &s->maps[i];

		if (ran[i] && m->bid_len && m->path[0] == '/' &&
		    (s->o.archive > 1 || !is_system_file(m->path)) &&
		    archive_file(dir, m->path, m->bid, m->bid_len) > 0)
			n++;
	}
	free(ran);
	return n;
}

/* Checks the copied jitdumps against the executed JIT code; info keys. */
static void jit_report(struct synth *s, FILE *info)
{
	struct jitconv_report r;

	jitconv_check(s->jc, &r);
	fprintf(info, "jit_dumps=%llu\njit_dump_errors=%llu\njit_loads=%zu\n"
		"jit_moves=%zu\njit_dumps_truncated=%zu\njit_clock_pairs=%zu\n"
		"jit_times_outside=%zu\njit_insns=%llu\njit_insns_ok=%llu\n"
		"jit_insns_wrong=%llu\njit_insns_unreported=%llu\n"
		"jit_min_margin_ns=%llu\njit_pages_left_out=%llu\n"
		"jit_pages_changed=%llu\n",
		(unsigned long long)s->jit_dumps, (unsigned long long)s->jit_dump_errors,
		r.loads, r.moves, r.truncated, r.pairs, r.outside,
		(unsigned long long)r.insns, (unsigned long long)r.insns_ok,
		(unsigned long long)r.insns_wrong, (unsigned long long)r.insns_unreported,
		(unsigned long long)r.min_margin, (unsigned long long)s->jit_pages_left_out,
		(unsigned long long)s->jit_pages_changed);
	fprintf(stderr, "ptsynth: jitdump: %zu code loads on the simulated clock; "
		"%llu of %llu JIT instructions decode from the right load\n",
		r.loads, (unsigned long long)r.insns_ok, (unsigned long long)r.insns);
	if (r.insns_wrong)
		fprintf(stderr, "ptsynth: warning: the jitdump time mapping is too coarse "
			"for %llu JIT instructions (a decoder would use the wrong code): "
			"%s\n", (unsigned long long)r.insns_wrong, r.problem);
	if (r.insns_unreported)
		fprintf(stderr, "ptsynth: warning: %llu executed instructions of dynamic "
			"code are in no jitdump load\n",
			(unsigned long long)r.insns_unreported);
	if (r.outside)
		fprintf(stderr, "ptsynth: warning: %zu jitdump timestamps lie outside "
			"the traced time (clamped)\n", r.outside);
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
		synth_die("out of memory");
	for (i = 0; i < s->pages_cap; i++) {
		const struct page *pg = &s->pages[i];

		if (!pg->addr || !pg->executed || !pg->bytes || pg->map < 0)
			continue;
		/* JIT code has several versions: a jitdump holds them with
		 * their times, this copy only one.  Code a jitdump covers
		 * comes from there; a page that changed after its copy is
		 * left out (a gap, not wrong bytes). */
		if (is_dynamic(&s->maps[pg->map])) {
			if (jitconv_covers(s->jc, s->pid, pg->addr, PAGE)) {
				s->jit_pages_left_out++;
				continue;
			}
			if (pg->changed) {
				fprintf(stderr, "ptsynth: warning: dynamic code at %#llx "
					"changed while it ran and no jitdump describes "
					"it: left out of the text store\n",
					(unsigned long long)pg->addr);
				s->jit_pages_changed++;
				continue;
			}
		}
		addrs[n++] = pg->addr;
	}
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
			synth_die("out of memory");
		for (k = i; k < j; k++)
			memcpy(bytes + (k - i) * PAGE, page_get(s, addrs[k])->bytes, PAGE);
		memset(&e, 0, sizeof(e));
		snprintf(e.kind, sizeof(e.kind), "%s",
			 !strcmp(m->path, "[vdso]") ? "vdso" :
			 is_dynamic(m) ? "jit" : "file");
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
		snprintf(e.name, sizeof(e.name), "%.255s", m->path);
		check(s, textstore_writer_add(tw, &e, bytes), "text store add");
		free(bytes);
		i = j;
	}
	free(addrs);
	check(s, textstore_writer_close(tw), "text store close");
}

/* ---------------- threads and the simulated CPUs ---------------- */

enum tstate { T_NEW, T_READY, T_RUNNING, T_BLOCKED, T_DEAD };

struct tinfo {
	pid_t tid;
	enum tstate st;
	uint64_t ip;               /* next instruction */
	const struct ptgen_insn *in; /* the one being stepped */
	int pending_sig;           /* to inject at the next resume */
	int injected_caught;       /* resumed with a caught signal */
	int credited;              /* blocked syscall already recorded */
	int mid_rep;               /* a rep string insn is in progress */
	uint64_t bp_addr;          /* int3 planted behind a trap_late insn */
	long bp_word;              /* the word it replaced */
	int cpu;                   /* the CPU it is current on, -1: none */
	int last_cpu;              /* the CPU it ran on last */
	uint64_t free_tsc;         /* it may run from then on (any CPU) */
};

struct sched {
	struct tinfo t[MAX_THREADS];
	int n, cur, nlive;         /* cur: on the CPU stepping now, -1 none */
	uint64_t slice;            /* instructions since cur was switched in */
	uint64_t quantum;
	uint64_t rng;
};

static struct tinfo *tfind(struct sched *sc, pid_t tid)
{
	for (int i = 0; i < sc->n; i++)
		if (sc->t[i].tid == tid && sc->t[i].st != T_DEAD)
			return &sc->t[i];
	return NULL;
}

static struct tinfo *tadd(struct sched *sc, pid_t tid)
{
	struct tinfo *t;
	if (sc->n >= MAX_THREADS)
		synth_die("more than %d threads", MAX_THREADS);
	t = &sc->t[sc->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->st = T_NEW;
	t->cpu = -1;
	sc->nlive++;
	return t;
}

static uint64_t get_ip(pid_t tid, long *orig_rax)
{
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		synth_die("PTRACE_GETREGS %d: %s", tid, strerror(errno));
	if (orig_rax)
		*orig_rax = (long)r.orig_rax;
	return r.rip;
}

static int sig_caught(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %llx", &mask) == 1)
			break;
	fclose(f);
	return sig <= 64 && (mask >> (sig - 1)) & 1;
}

/* One executed instruction of thread t (which is on the CPU). */
static void credit(struct synth *s, struct tinfo *t, uint64_t next)
{
	fprintf(s->expected, "0x%llx\n", (unsigned long long)t->ip);
	if (s->expected_threads)
		fprintf(s->expected_threads, "%d %d\n", s->cpu, t->tid);
	s->ninsns++;
	if (s->smp && sampler_insn(s->smp, t->tid, t->ip, t->in, next))
		s->sample_due = 1;
	check(s, ptgen_insn(s->gen, t->ip, t->in, next), "packet generation");
}

static void after_syscall(struct synth *s, long nr)
{
	clock_pair(s);    /* a JIT writes its jitdump with syscalls */
	ptgen_advance(s->gen, KERNEL_CYCLES / 2);
	switch (nr) {
	case SYS_mmap: case SYS_mprotect: case SYS_mremap: case SYS_munmap:
	case SYS_execve: case SYS_execveat:
		scan_maps(s);
	}
	ptgen_advance(s->gen, KERNEL_CYCLES / 2);
}

static void emit_fork(struct synth *s, struct tinfo *parent, pid_t tid)
{
	struct perfwrite_sid sid = sid_for(s, (uint32_t)tid, DUMMY_ID);
	check(s, perfwrite_task(s->pw, &sid, 0, (uint32_t)s->pid, (uint32_t)s->pid,
				(uint32_t)tid, (uint32_t)(parent ? parent->tid : s->pid),
				sid.time), "FORK");
}

/* Steps over t->in with an int3 behind it instead of the trap flag: a
 * hypervisor that emulates the instruction (cpuid) may deliver the
 * single-step trap only after the next one, which would then go missing
 * from the ground truth.  Other threads are stopped, or blocked in a
 * syscall and single-stepped, so none of them can reach the int3. */
static void step_by_breakpoint(struct tinfo *t)
{
	uint64_t a = t->ip + t->in->len;
	long w;

	errno = 0;
	w = ptrace(PTRACE_PEEKTEXT, t->tid, (void *)a, 0);
	if (errno)
		synth_die("PTRACE_PEEKTEXT %#llx: %s", (unsigned long long)a, strerror(errno));
	if (ptrace(PTRACE_POKETEXT, t->tid, (void *)a, (void *)((w & ~0xffL) | 0xcc)) < 0)
		synth_die("PTRACE_POKETEXT %#llx: %s", (unsigned long long)a, strerror(errno));
	t->bp_addr = a;
	t->bp_word = w;
	if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
		synth_die("PTRACE_CONT %d: %s", t->tid, strerror(errno));
}

/* Removes the int3 of step_by_breakpoint; a stop on it is reported as
 * a stop in front of it. */
static void remove_breakpoint(struct tinfo *t, int status)
{
	struct user_regs_struct r;

	if (!t->bp_addr)
		return;
	if (ptrace(PTRACE_POKETEXT, t->tid, (void *)t->bp_addr, (void *)t->bp_word) < 0)
		synth_die("PTRACE_POKETEXT %#llx: %s", (unsigned long long)t->bp_addr, strerror(errno));
	if (WSTOPSIG(status) == SIGTRAP && ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 &&
	    r.rip == t->bp_addr + 1) {
		r.rip = t->bp_addr;
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0)
			synth_die("PTRACE_SETREGS %d: %s", t->tid, strerror(errno));
	}
	t->bp_addr = 0;
}

/* A single-step that ends anywhere but after a plain instruction means
 * the trap came late: some instruction ran unseen. */
static void check_step(const struct tinfo *t, uint64_t rip)
{
	if (t->in->cls == PTG_OTHER && !t->in->len_unknown && rip != t->ip + t->in->len)
		synth_die("the single-step trap after the instruction at %#llx came at %#llx, "
			  "not at the next instruction (%#llx): this machine (a hypervisor "
			  "emulating that instruction?) delays single-step traps, so the "
			  "ground truth would miss instructions",
			  (unsigned long long)t->ip, (unsigned long long)rip,
			  (unsigned long long)(t->ip + t->in->len));
}

/* Handles one wait status of thread tid. */
static void process_stop(struct synth *s, struct sched *sc, pid_t tid, int status)
{
	struct tinfo *t = tfind(sc, tid);
	int is_cur = t && sc->cur >= 0 && t == &sc->t[sc->cur];
	uint64_t rip;

	if (!t) {                 /* a new thread reporting before the event */
		t = tadd(sc, tid);
		emit_fork(s, NULL, tid);
	}
	if (!is_cur && t->free_tsc < ptgen_tsc(s->gen))
		t->free_tsc = ptgen_tsc(s->gen);   /* it can run from now on */
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (is_cur && t->st == T_RUNNING && t->in->cls == PTG_FAR && !t->credited)
			credit(s, t, 0);   /* exit/exit_group ran */
		if (t->st != T_DEAD) {
			struct perfwrite_sid sid = sid_for(s, (uint32_t)tid, DUMMY_ID);
			check(s, perfwrite_task(s->pw, &sid, 1, (uint32_t)s->pid,
						(uint32_t)s->pid, (uint32_t)tid,
						(uint32_t)tid, sid.time), "EXIT");
			t->st = T_DEAD;
			sc->nlive--;
		}
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	remove_breakpoint(t, status);
	if (status >> 16) {       /* ptrace event stop (clone) */
		unsigned long msg = 0;
		if ((status >> 16) == PTRACE_EVENT_CLONE &&
		    ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0 &&
		    !tfind(sc, (pid_t)msg)) {
			tadd(sc, (pid_t)msg);
			emit_fork(s, t, (pid_t)msg);
		}
		/* The syscall continues; its step report comes next. */
		if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0)
			synth_die("PTRACE_SINGLESTEP: %s", strerror(errno));
		return;
	}
	if (t->st == T_NEW) {
		t->ip = get_ip(tid, NULL);
		t->st = T_READY;
		if (WSTOPSIG(status) != SIGSTOP)
			t->pending_sig = WSTOPSIG(status);
		return;
	}
	if (WSTOPSIG(status) == SIGTRAP) {
		long nr;

		rip = get_ip(tid, &nr);
		if (t->injected_caught) {
			/* A handler frame was set up; nothing ran.  From the
			 * trace's view: interrupt at t->ip, resume at rip. */
			t->injected_caught = 0;
			if (is_cur)
				check(s, ptgen_async_disable(s->gen, t->ip), "packet generation");
			ptgen_advance(s->gen, KERNEL_CYCLES);
			s->nsignals++;
		} else if (t->in && t->in->rep_string && rip == t->ip) {
			t->mid_rep = 1;   /* one more iteration of the same insn */
		} else if (t->in) {
			t->mid_rep = 0;
			check_step(t, rip);
			if (!t->credited) {
				if (!is_cur)
					synth_die("internal: thread %d ran while off the CPU", tid);
				credit(s, t, rip);
			}
			t->credited = 0;
			if (t->in->cls == PTG_FAR)
				after_syscall(s, nr);
			if (t->in->cls == PTG_FAR && s->smp) {
				struct perfwrite_sid sid = sid_for(s, (uint32_t)tid, DUMMY_ID);

				/* a blocking call that ended while another CPU
				 * stepped: the thread's CPU and time, not that
				 * CPU's clock (it runs on from free_tsc) */
				if (!is_cur) {
					sid.cpu = (uint32_t)t->last_cpu;
					sid.time = perf_time(t->free_tsc);
				}
				check(s, sampler_to_user(s->smp, &sid), "CALLCHAIN_DEFERRED");
			}
		}
		if (!t->in)
			t->credited = 0;
		t->ip = rip;
		t->in = NULL;
		t->st = T_READY;
		return;
	}
	/* Signal-delivery stop: nothing executed (but the instruction a
	 * breakpoint stepped over may have); deliver it on resume. */
	if (WSTOPSIG(status) != SIGSTOP)
		t->pending_sig = WSTOPSIG(status);
	rip = get_ip(tid, NULL);
	if (t->in && t->in->trap_late && is_cur && !t->credited &&
	    rip == t->ip + t->in->len)
		credit(s, t, rip);
	t->credited = 0;          /* a blocked syscall was recorded already */
	t->st = T_READY;
	t->ip = rip;
	t->in = NULL;
}

/* Waits for one status; timeout_ms < 0 blocks.  Returns 0 on timeout. */
static pid_t wait_one(int *status, int timeout_ms)
{
	struct timespec t0, now;
	pid_t r;
	long spins = 0;

	if (timeout_ms < 0) {
		do
			r = waitpid(-1, status, __WALL);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			synth_die("waitpid: %s", strerror(errno));
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = waitpid(-1, status, __WALL | WNOHANG);
		if (r > 0)
			return r;
		if (r < 0 && errno != EINTR)
			synth_die("waitpid: %s", strerror(errno));
		if (++spins > 200) {
			struct timespec d = { 0, 50000 };
			nanosleep(&d, NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - t0.tv_sec) * 1000 +
			    (now.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
				return 0;
		}
	}
}

static void switch_to(struct synth *s, struct sched *sc, int next)
{
	struct tinfo *old = sc->cur >= 0 ? &sc->t[sc->cur] : NULL, *nt = &sc->t[next];
	struct perfwrite_sid sid;
	int preempt = old && old->st == T_READY;

	if (preempt)
		check(s, ptgen_async_disable(s->gen, old->ip), "packet generation");
	ptgen_advance(s->gen, KERNEL_CYCLES / 2);
	if (old) {
		old->cpu = -1;
		old->free_tsc = ptgen_tsc(s->gen);
	}
	if (old && old->st != T_DEAD) {
		sid = sid_for(s, (uint32_t)old->tid, DUMMY_ID);
		check(s, perfwrite_switch_cpu_wide(s->pw, &sid, 1, preempt,
						   (uint32_t)s->pid, (uint32_t)nt->tid),
		      "SWITCH");
	}
	if (!old) {   /* the CPU's first thread: its trace starts */
		synth_cpus_catch_up(&s->cpus.c[s->cpu], nt->free_tsc);
		sid = sid_for(s, (uint32_t)nt->tid, PT_ID);
		check(s, perfwrite_itrace_start(s->pw, &sid, sid.pid, sid.tid),
		      "ITRACE_START");
	}
	sid = sid_for(s, (uint32_t)nt->tid, DUMMY_ID);
	check(s, perfwrite_switch_cpu_wide(s->pw, &sid, 0, 0, old ? (uint32_t)s->pid : 0,
					   old ? (uint32_t)old->tid : 0), "SWITCH");
	ptgen_advance(s->gen, KERNEL_CYCLES / 2);
	nt->cpu = nt->last_cpu = s->cpu;
	sc->cur = next;
	sc->slice = 0;
	s->nswitches++;
}

/* A ready thread for the CPU stepping now (cpu), none current on another. */
static int pick_ready(struct sched *sc, int exclude_cur, int cpu)
{
	for (int k = 1; k <= sc->n; k++) {
		int i = (sc->cur + k) % sc->n;
		if (exclude_cur && i == sc->cur)
			continue;
		if (sc->t[i].st == T_READY && (sc->t[i].cpu < 0 || sc->t[i].cpu == cpu))
			return i;
	}
	return -1;
}

struct pick_ctx {
	struct synth *s;
	struct sched *sc;
};

/* CPU c has something to run: its thread, or a ready one no CPU has. */
static int cpu_can_run(void *ctx, int c)
{
	struct pick_ctx *pc = ctx;
	int cur = pc->s->cpus.c[c].cur;

	if (cur >= 0 && pc->sc->t[cur].st == T_READY)
		return 1;
	for (int i = 0; i < pc->sc->n; i++)
		if (pc->sc->t[i].st == T_READY && pc->sc->t[i].cpu < 0)
			return 1;
	return 0;
}

/* With several CPUs: makes the one with the earliest clock that can run
 * something the CPU stepping now.  0 when none can. */
static int select_cpu(struct synth *s, struct sched *sc)
{
	struct pick_ctx pc = { s, sc };
	struct synth_cpu *c = &s->cpus.c[s->cpu];
	int next;

	c->cur = sc->cur;
	c->slice = sc->slice;
	next = synth_cpus_next(&s->cpus, cpu_can_run, &pc);
	if (next < 0)
		return 0;
	c = &s->cpus.c[next];
	s->cpu = next;
	s->gen = c->gen;
	sc->cur = c->cur;
	sc->slice = c->slice;
	return 1;
}

/* Kills the program at --max-insns; every CPU's trace stops where its
 * thread was. */
static void stop_all(struct synth *s, struct sched *sc)
{
	struct tinfo *t;
	pid_t tid;
	int status;

	kill(s->pid, SIGKILL);
	if (s->cpus.n > 1)
		select_cpu(s, sc);   /* saves the stepping CPU's state */
	for (int c = 0; c < s->cpus.n; c++) {
		int cur = s->cpus.n > 1 ? s->cpus.c[c].cur : sc->cur;

		if (cur >= 0 && ptgen_enabled(s->cpus.c[c].gen))
			ptgen_async_disable(s->cpus.c[c].gen, sc->t[cur].ip);
	}
	while (sc->nlive) {
		tid = wait_one(&status, -1);
		t = tfind(sc, tid);
		if (t && (WIFEXITED(status) || WIFSIGNALED(status))) {
			t->st = T_DEAD;
			sc->nlive--;
		}
	}
}

static double rnd(struct sched *sc)
{
	sc->rng ^= sc->rng << 13;
	sc->rng ^= sc->rng >> 7;
	sc->rng ^= sc->rng << 17;
	return (double)(sc->rng >> 11) / (double)(1ull << 53);
}

/* --sample-every: an interrupt in front of t->ip whose handler writes
 * the sample (sampler.h). */
static void take_sample(struct synth *s, struct tinfo *t)
{
	struct perfwrite_sid sid;

	check(s, ptgen_async_disable(s->gen, t->ip), "packet generation");
	ptgen_advance(s->gen, KERNEL_CYCLES / 2);
	sid = sid_for(s, (uint32_t)t->tid, PTCAP_SAMPLE_ID);
	check(s, sampler_sample(s->smp, &sid, t->ip), "SAMPLE");
	ptgen_advance(s->gen, KERNEL_CYCLES / 2);
	check(s, ptgen_enable(s->gen, t->ip), "packet generation");
	s->sample_due = 0;
}

static void trace(struct synth *s, struct sched *sc)
{
	for (;;) {
		struct tinfo *t;
		pid_t tid;
		int status, sig;

		if (!sc->nlive)
			break;
		if (s->cpus.n > 1 && !select_cpu(s, sc)) {
			tid = wait_one(&status, -1);   /* all threads in the kernel */
			process_stop(s, sc, tid, status);
			continue;
		}
		if (sc->cur < 0)
			switch_to(s, sc, pick_ready(sc, 0, s->cpu));
		t = &sc->t[sc->cur];
		if (t->st != T_READY ||
		    (sc->slice >= sc->quantum && !t->mid_rep && pick_ready(sc, 1, s->cpu) >= 0)) {
			int nx = t->st == T_READY && !(sc->slice >= sc->quantum) ? sc->cur
				 : pick_ready(sc, t->st == T_READY, s->cpu);
			if (nx < 0 && t->st == T_READY)
				nx = sc->cur;
			if (nx < 0) {     /* everybody is in the kernel */
				tid = wait_one(&status, -1);
				process_stop(s, sc, tid, status);
				continue;
			}
			if (nx != sc->cur)
				switch_to(s, sc, nx);
			else
				sc->slice = 0;
			t = &sc->t[sc->cur];
		}
		if (s->o.max_insns && s->ninsns >= s->o.max_insns) {
			stop_all(s, sc);
			break;
		}
		if (s->cpus.n > 1)   /* it ran elsewhere or waited until then */
			synth_cpus_catch_up(&s->cpus.c[s->cpu], t->free_tsc);
		if (s->o.snapshot)
			check(s, snapshot_catch_up(s, &s->cpus.c[s->cpu]), "a snapshot");
		if (!ptgen_enabled(s->gen)) {
			ptgen_advance(s->gen, KERNEL_CYCLES / 4);
			check(s, ptgen_enable(s->gen, t->ip), "packet generation");
		} else if (s->o.interrupts > 0 && !t->mid_rep && rnd(sc) < s->o.interrupts) {
			check(s, ptgen_async_disable(s->gen, t->ip), "packet generation");
			ptgen_advance(s->gen, KERNEL_CYCLES);
			if (s->o.overflows > 0 && rnd(sc) < 0.5) {
				/* the buffer overflowed while in the kernel */
				check(s, ptgen_overflow(s->gen, t->ip, KERNEL_CYCLES / 4, 0),
				      "packet generation");
				s->noverflows++;
			}
			check(s, ptgen_enable(s->gen, t->ip), "packet generation");
			s->ninterrupts++;
		} else if (s->o.vm_exits > 0 && !t->mid_rep && rnd(sc) < s->o.vm_exits) {
			/* a VM exit (the host, not traced, runs) and the entry
			 * back: PIP and VMCS in the middle of a PSB segment */
			check(s, ptgen_async_disable(s->gen, t->ip), "packet generation");
			ptgen_advance(s->gen, KERNEL_CYCLES);
			check(s, ptgen_vm_entry(s->gen, t->ip), "packet generation");
			s->nvm_exits++;
		} else if (s->o.overflows > 0 && !t->mid_rep &&
			   ptgen_can_overflow(s->gen) && rnd(sc) < s->o.overflows) {
			check(s, ptgen_overflow(s->gen, t->ip, KERNEL_CYCLES / 4,
						s->o.overflow_psb > 0 &&
						rnd(sc) < s->o.overflow_psb),
			      "packet generation");
			s->noverflows++;
		} else if (s->sample_due && !t->mid_rep) {
			take_sample(s, t);
		}
		t->in = insn_at(s, t->ip);
		if (s->dyn)
			note_dyn_exec(s, t->ip, t->in);
		sig = 0;
		if (t->pending_sig) {
			sig = t->pending_sig;
			t->pending_sig = 0;
			t->injected_caught = sig_caught(s->pid, sig);
		}
		if (t->in->trap_late && !sig)
			step_by_breakpoint(t);
		else if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, sig) < 0)
			synth_die("PTRACE_SINGLESTEP %d: %s", t->tid, strerror(errno));
		t->st = T_RUNNING;
		sc->slice++;
		while (t->st == T_RUNNING) {
			/* A syscall may block (futex, read): then the thread
			 * leaves the CPU with its syscall recorded. */
			tid = wait_one(&status, t->in->cls == PTG_FAR && !t->injected_caught ? 20 : -1);
			if (!tid) {
				credit(s, t, 0);
				t->credited = 1;
				t->st = T_BLOCKED;
				t->free_tsc = ptgen_tsc(s->gen);
				break;
			}
			process_stop(s, sc, tid, status);
		}
	}
}

/* ---------------- main ---------------- */

static const char usage_text[] =
	"usage: ptsynth record -o OUT.ptd [options] -- CMD [ARGS]\n"
	"       ptsynth walk -o OUT.ptd --from CAPTURE.ptd [options] [WALKSPEC]\n"
	"         (a walk through a capture's BPF/JIT text; ptsynth walk --help)\n"
	"  --psb-period N   bytes between PSB packets (default 4096)\n"
	"  --noretcomp      no return compression\n"
	"  --no-long-tnt    only short (<= 6 bit) TNT packets\n"
	"  --no-tsc         no TSC packets (timeless)\n"
	"  --mtc            MTC (and TMA) timing packets\n"
	"  --mtc-period N   MTC every 2^N crystal clock ticks (default 3)\n"
	"  --cyc            CYC packets (cycle-accurate mode, threshold 0)\n"
	"  --cycles N       simulated cycles per instruction (default 1)\n"
	"  --interrupts P   random asynchronous interrupts, probability per insn\n"
	"  --seed N         seed for --interrupts (default 1)\n"
	"  --quantum N      instructions per thread time slice (default 2000)\n"
	"  --max-insns N    stop (kill CMD) after N instructions\n"
	"  --cpus N         run the threads on N simulated CPUs at the same\n"
	"                   time (default 1): one AUX queue per CPU, as perf\n"
	"                   record -a writes them; expected.threads then\n"
	"                   says \"CPU TID\" for each line of expected.insn\n"
	"  --aslr           keep address space randomisation\n"
	"  --no-archive     do not copy the program's own ELF files (those\n"
	"                   outside /usr, /lib, /bin, /sbin, /etc) into\n"
	"                   OUT.ptd/.build-id/, where ptdecode finds them\n"
	"                   by build id: without them the capture decodes\n"
	"                   with symbols only where the same files exist\n"
	"  --archive-all    copy the system's ELF files (libc, ld.so) too\n"
	"  --guest          the program ran in a virtual machine: PIP.NR=1 and\n"
	"                   VMCS in the trace, the host sideband a hypervisor\n"
	"                   process, the program's sideband the guest's (as\n"
	"                   perf inject --guest-data writes it); with --cpus N\n"
	"                   one vcpu per CPU\n"
	"  --vm-exits P     with --guest: random VM exits (tracing stops) and\n"
	"                   entries (PIP, VMCS, tracing resumes), probability\n"
	"                   per instruction (drawn with --seed, as --interrupts)\n"
	"  --overflows P    internal buffer overflows (OVF, TSC, FUP), each\n"
	"                   right after a branch whose target the packets\n"
	"                   gave (so that no instruction goes unseen),\n"
	"                   probability per instruction (drawn with --seed);\n"
	"                   and, with --interrupts, an OVF while tracing is\n"
	"                   off in half of the interrupts\n"
	"  --overflow-psb F with --overflows: the share F (0..1) of the\n"
	"                   overflows while tracing that resolve at a PSB:\n"
	"                   OVF, then PSB+ with the TSC and the FUP where\n"
	"                   the trace resumes (drawn with --seed)\n"
	"  --guest-code     PIP.NR=1 and VMCS, no guest sideband: the guest's\n"
	"                   code is the traced process's memory (perf script\n"
	"                   --guest-code, ptdecode --guest-code); with --cpus N\n"
	"                   each thread a vcpu thread on the CPU it runs on\n"
	"  --addr-filter S  write S as the IP filter string of AUXTRACE_INFO,\n"
	"                   as perf record --filter does (kernel syntax:\n"
	"                   \"filter 0xOFF/0xSIZE@FILE\"); the trace itself\n"
	"                   is not filtered\n"
	"  --sample-every N a SAMPLE every N instructions with a deferred user\n"
	"                   callchain, written (frame pointers) at the thread's\n"
	"                   next syscall return; ground truth in samples.truth\n"
	"  --unwind fp|dwarf how that user callchain is unwound: frame pointers\n"
	"                   (default, as the kernel does) or libdw's CFI unwinder\n"
	"  --snapshot SIZE  snapshot-mode AUX (perf record -S): AUXTRACE records\n"
	"                   of the last SIZE bytes of the ring, taken SIZE/2,\n"
	"                   SIZE/2 and 2*SIZE bytes of trace apart in turn\n"
	"                   (overlapping, then trace lost) and at the end;\n"
	"                   with --cpus N a ring per CPU, each on its own\n"
	"  --perf-layout threads\n"
	"                   write OUT.ptd/perf.data as perf record --threads\n"
	"                   does: a directory with the header file data and\n"
	"                   data.N holding the records of CPU N\n";

static FILE *create_file(const char *dir, const char *name)
{
	char path[4096];
	int fd;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		synth_die("cannot create %s: %s", path, strerror(errno));
	return f;
}

static void write_features(struct synth *s, int argc, char **argv)
{
	check(s, ptcap_features(s->pw, "6.1.0-ptsynth", argc, argv), "features");
	for (size_t k = 0; k < s->nmaps; k++)
		if (s->maps[k].bid_len && (s->maps[k].path[0] == '/' ||
					   !strcmp(s->maps[k].path, "[vdso]")))
			perfwrite_feat_build_id(s->pw, s->o.guest == 1 ? GUESTSB_HV_PID : -1,
						s->o.guest == 1 ? PD_MISC_GUEST_USER : PD_MISC_USER,
						s->maps[k].bid,
						s->maps[k].bid_len, s->maps[k].path);
}

/* One option of ptsynth record. */
static void set_opt(void *ctx, int c, const char *arg)
{
	struct opts *o = ctx;

	switch (c) {
	case 'o': o->out = arg; break;
	case 'p': o->psb_period = (uint32_t)strtoul(arg, NULL, 0); break;
	case 'R': o->retcomp = 0; break;
	case 'L': o->long_tnt = 0; break;
	case 'T': o->tsc = 0; break;
	case 'M': o->mtc = 1; break;
	case 'P': o->mtc_period = (uint32_t)strtoul(arg, NULL, 0); break;
	case 'C': o->cyc = 1; break;
	case 'c': o->cpi = (uint32_t)strtoul(arg, NULL, 0); break;
	case 'i': o->interrupts = strtod(arg, NULL); break;
	case 's': o->seed = (unsigned)strtoul(arg, NULL, 0); break;
	case 'q': o->quantum = strtoull(arg, NULL, 0); break;
	case 'm': o->max_insns = strtoull(arg, NULL, 0); break;
	case 'A': o->aslr = 1; break;
	case 'N': o->archive = 0; break;
	case 'Z': o->archive = 2; break;
	case 'F': o->filter = arg; break;
	case 'G': o->guest = 1; break;
	case 'V': o->guest = 2; break;
	case 'E': o->vm_exits = strtod(arg, NULL); break;
	case 'O': o->overflows = strtod(arg, NULL); break;
	case 'B': o->overflow_psb = strtod(arg, NULL); break;
	case 'S': o->sample_every = strtoull(arg, NULL, 0); break;
	case 'U':
		if (!strcmp(arg, "dwarf") && !sampler_have_dwarf())
			synth_die("--unwind dwarf needs libdw: this ptsynth was built without it");
		if (strcmp(arg, "fp") && strcmp(arg, "dwarf"))
			synth_die("--unwind must be fp or dwarf");
		o->unwind_dwarf = !strcmp(arg, "dwarf");
		break;
	case 'W': o->snapshot = strtoull(arg, NULL, 0); break;
	case 'Y':
		if (strcmp(arg, "threads") && strcmp(arg, "file"))
			synth_die("--perf-layout: 'file' or 'threads', not '%s'", arg);
		o->layout_threads = !strcmp(arg, "threads");
		break;
	case 'X': o->ncpus = atoi(arg); break;
	}
}

static void parse_opts(struct synth *s, struct sched *sc, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "psb-period", required_argument, NULL, 'p' },
		{ "noretcomp", no_argument, NULL, 'R' },
		{ "no-long-tnt", no_argument, NULL, 'L' },
		{ "no-tsc", no_argument, NULL, 'T' },
		{ "mtc", no_argument, NULL, 'M' },
		{ "mtc-period", required_argument, NULL, 'P' },
		{ "cyc", no_argument, NULL, 'C' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "interrupts", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "quantum", required_argument, NULL, 'q' },
		{ "max-insns", required_argument, NULL, 'm' },
		{ "aslr", no_argument, NULL, 'A' },
		{ "no-archive", no_argument, NULL, 'N' },
		{ "archive-all", no_argument, NULL, 'Z' },
		{ "addr-filter", required_argument, NULL, 'F' },
		{ "guest", no_argument, NULL, 'G' },
		{ "guest-code", no_argument, NULL, 'V' },
		{ "vm-exits", required_argument, NULL, 'E' },
		{ "overflows", required_argument, NULL, 'O' },
		{ "overflow-psb", required_argument, NULL, 'B' },
		{ "sample-every", required_argument, NULL, 'S' },
		{ "unwind", required_argument, NULL, 'U' },
		{ "perf-layout", required_argument, NULL, 'Y' },
		{ "snapshot", required_argument, NULL, 'W' },
		{ "cpus", required_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts *o = &s->o;
	int first;

	o->psb_period = 4096;
	o->retcomp = 1;
	o->long_tnt = 1;
	o->tsc = 1;
	o->mtc_period = 3;   /* perf's default */
	o->cpi = 1;
	o->seed = 1;
	o->quantum = 2000;
	o->archive = 1;
	o->ncpus = 1;
	first = synth_parse_opts(argc, argv, "+o:", lopts, set_opt, o, usage_text);
	if (!o->out || first >= argc)
		synth_usage(usage_text);
	synth_check_psb_period(o->psb_period);
	if (o->vm_exits > 0 && o->guest != 1)
		synth_die("--vm-exits needs --guest");
	if (o->guest && o->sample_every)
		synth_die("--sample-every does not go with --guest or --guest-code");
	if (o->snapshot && (o->snapshot < 2ull * o->psb_period || o->snapshot > (1ull << 30)))
		synth_die("--snapshot SIZE must be at least twice --psb-period "
			  "(a snapshot is placed by its PSBs) and at most 1 GiB");
	if (o->mtc_period > 15)
		synth_die("--mtc-period must be 0..15");
	if ((o->mtc || o->cyc) && !o->tsc)
		synth_die("--mtc and --cyc need TSC packets (drop --no-tsc)");
	if (o->ncpus < 1 || o->ncpus > SYNTH_MAX_CPUS)
		synth_die("--cpus must be 1..%d", SYNTH_MAX_CPUS);
	sc->quantum = o->quantum ? o->quantum : 1;
	o->cmd = argv + first;
	sc->rng = synth_rng_init(o->seed);
}

/* OUT, and the ELF and disassembler libraries. */
static void set_up(struct synth *s)
{
	if (mkdir(s->o.out, 0700) < 0 && errno != EEXIST)
		synth_die("cannot create %s: %s", s->o.out, strerror(errno));
	if (elf_version(EV_CURRENT) == EV_NONE)
		synth_die("libelf too old");
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &s->cs) != CS_ERR_OK)
		synth_die("capstone cs_open failed");
	cs_option(s->cs, CS_OPT_DETAIL, CS_OPT_ON);
}

/* CMD under ptrace, stopped at its exec, and its memory. */
static void start_cmd(struct synth *s)
{
	char path[4096];
	int status;
	pid_t pid = fork();

	if (pid < 0)
		synth_die("fork: %s", strerror(errno));
	if (!pid) {
		if (!s->o.aslr)
			personality(ADDR_NO_RANDOMIZE);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execvp(s->o.cmd[0], s->o.cmd);
		fprintf(stderr, "ptsynth: cannot run %s: %s\n", s->o.cmd[0], strerror(errno));
		_exit(127);
	}
	s->pid = pid;
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		synth_die("%s did not start (status %#x)", s->o.cmd[0], status);
	if (ptrace(PTRACE_SETOPTIONS, pid, 0,
		   PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE) < 0)
		synth_die("PTRACE_SETOPTIONS: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	s->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->memfd < 0)
		synth_die("cannot open %s: %s", path, strerror(errno));
}

/* perf.data (the intel_pt attr and the sideband (dummy) attr), the packet
 * generator and expected.insn. */
static void open_trace(struct synth *s)
{
	struct ptcap_opts po = { .tsc = s->o.tsc, .retcomp = s->o.retcomp,
				 .mtc = s->o.mtc, .mtc_period = s->o.mtc_period,
				 .cyc = s->o.cyc, .filter = s->o.filter,
				 .guest = s->o.guest == 1 ? s->o.ncpus : 0,
				 .sample_period = s->o.sample_every,
				 .snapshot = s->o.snapshot != 0,
				 PTCAP_DEFAULTS };
	struct ptgen_opts go = { 0 };
	char path[4096];

	snprintf(path, sizeof(path), "%s/perf.data", s->o.out);
	if (s->o.layout_threads ?
	    ptcap_open_threads_layout(&s->pw, path, s->err, sizeof(s->err)) :
	    perfwrite_open(&s->pw, path, s->err, sizeof(s->err)))
		synth_die("%s", s->err);
	check(s, ptcap_begin(s->pw, &po), "attrs and AUXTRACE_INFO");
	go.psb_period = s->o.psb_period;
	go.retcomp = s->o.retcomp;
	go.long_tnt = s->o.long_tnt;
	go.tsc = s->o.tsc;
	go.mtc = s->o.mtc;
	go.mtc_freq = (uint8_t)s->o.mtc_period;
	go.ctc_n = 2;          /* AUXTRACE_INFO tsc_ctc_ratio_n/d below */
	go.ctc_d = 1;
	go.cyc = s->o.cyc;
	go.guest = s->o.guest != 0;
	go.cycles_per_insn = s->o.cpi;
	go.tsc0 = 0x10000000ull;
	go.cbr = 32;
	if (synth_cpus_open(&s->cpus, s->o.ncpus, &go, flush_piece, s) < 0)
		synth_die("cannot set up the packet generator");
	for (int c = 0; s->o.snapshot && c < s->cpus.n; c++)
		if (!(s->cpus.c[c].snap = snapring_new((size_t)s->o.snapshot)))
			synth_die("out of memory for a --snapshot ring");
	s->gen = s->cpus.c[0].gen;
	s->expected = create_file(s->o.out, "expected.insn");
	if (s->o.sample_every &&
	    !(s->smp = sampler_new(s->pw, s->o.sample_every, s->o.unwind_dwarf ?
				   SAMPLER_UNWIND_DWARF : SAMPLER_UNWIND_FP, s->pid,
				   s->memfd, create_file(s->o.out, "samples.truth"))))
		synth_die("out of memory");
	if (s->o.ncpus > 1)
		s->expected_threads = create_file(s->o.out, "expected.threads");
}

/* The sideband of CMD's start, and its first thread on the CPU. */
static void start_thread(struct synth *s, struct sched *sc)
{
	struct perfwrite_sid sid;
	const char *comm = strrchr(s->o.cmd[0], '/');
	char cbuf[16];
	struct tinfo *t;

	snprintf(cbuf, sizeof(cbuf), "%s", comm ? comm + 1 : s->o.cmd[0]);
	if (s->o.guest == 1)
		check(s, guestsb_begin(s->pw, perf_time(ptgen_tsc(s->gen)),
				       s->o.ncpus), "hypervisor sideband");
	emit_fork(s, NULL, s->pid);
	sid = sid_for(s, (uint32_t)s->pid, DUMMY_ID);
	check(s, perfwrite_comm(s->pw, &sid, (uint32_t)s->pid, (uint32_t)s->pid, cbuf, 1), "COMM");
	scan_maps(s);
	sid = sid_for(s, (uint32_t)s->pid, PT_ID);
	check(s, perfwrite_itrace_start(s->pw, &sid, sid.pid, sid.tid), "ITRACE_START");
	sid = sid_for(s, (uint32_t)s->pid, DUMMY_ID);
	check(s, perfwrite_switch_cpu_wide(s->pw, &sid, 0, 0, 0, 0), "SWITCH");
	ptgen_advance(s->gen, KERNEL_CYCLES);
	t = tadd(sc, s->pid);
	t->st = T_READY;
	t->ip = get_ip(s->pid, NULL);
	t->cpu = 0;
	sc->cur = 0;
}

/* The end of the trace, perf.data's features and expected.insn closed. */
static void finish_trace(struct synth *s, int argc, char **argv)
{
	s->snapping = s->o.snapshot != 0;
	check(s, synth_cpus_finish(&s->cpus), "packet generation");
	for (int c = 0; s->o.snapshot && c < s->cpus.n; c++) {
		struct synth_cpu *d = &s->cpus.c[c];

		/* the snapshots its clock never reached, then the last one */
		for (int k = 0; k < d->snap_ndue; k++)
			check(s, snapshot_at(s, d, d->snap_due[k]), "a snapshot");
		check(s, snapshot_at(s, d, 0), "the last snapshot");
	}
	write_features(s, argc, argv);
	if (s->o.ncpus > 1)
		perfwrite_feat_nrcpus(s->pw, (uint32_t)s->o.ncpus, (uint32_t)s->o.ncpus);
	if (perfwrite_close(s->pw, s->err, sizeof(s->err)))
		synth_die("%s", s->err);
	if (fclose(s->expected) || (s->expected_threads && fclose(s->expected_threads)))
		synth_die("cannot write expected.insn");
}

static void write_info(struct synth *s, const struct sched *sc, const struct ptgen_stats *gs)
{
	FILE *f = create_file(s->o.out, "info");

	fprintf(f, "tool=ptsynth\nversion=%s\ncpu=%s\npmu_type=%d\n", ptd_version(),
		CPUID_STR, PT_PMU_TYPE);
	fprintf(f, "psb_period=%u\nretcomp=%d\nlong_tnt=%d\ntsc=%d\ncycles_per_insn=%u\n",
		s->o.psb_period, s->o.retcomp, s->o.long_tnt, s->o.tsc, s->o.cpi);
	fprintf(f, "mtc=%d\nmtc_period=%u\ncyc=%d\n", s->o.mtc, s->o.mtc_period, s->o.cyc);
	if (s->o.guest)
		fprintf(f, "guest=%s\nguest_machine_pid=%d\nguest_vcpu_tid=%d\n",
			s->o.guest == 1 ? "sideband" : "code", GUESTSB_HV_PID,
			GUESTSB_HV_TID);
	fprintf(f, "interrupts=%g\nseed=%u\nquantum=%llu\naslr=%d\n", s->o.interrupts,
		s->o.seed, (unsigned long long)sc->quantum, s->o.aslr);
	fprintf(f, "time_shift=%d\ntime_mult=%d\ntime_zero=%llu\n", TIME_SHIFT,
		TIME_MULT, (unsigned long long)TIME_ZERO);
	fprintf(f, "instructions=%llu\nthreads=%d\nswitches=%llu\nsignals=%llu\n"
		"interrupts_injected=%llu\nvm_exits=%llu\noverflows=%llu\n",
		(unsigned long long)s->ninsns,
		sc->n, (unsigned long long)s->nswitches, (unsigned long long)s->nsignals,
		(unsigned long long)s->ninterrupts, (unsigned long long)s->nvm_exits,
		(unsigned long long)s->noverflows);
	fprintf(f, "trace_bytes=%llu\npsbs=%llu\ntnt_bits=%llu\ntips=%llu\n"
		"rets_compressed=%llu\npges=%llu\npgds=%llu\n",
		(unsigned long long)gs->bytes, (unsigned long long)gs->psbs,
		(unsigned long long)gs->tnt_bits, (unsigned long long)gs->tips,
		(unsigned long long)gs->rets_compressed, (unsigned long long)gs->pges,
		(unsigned long long)gs->pgds);
	fprintf(f, "tscs=%llu\nmtcs=%llu\ncycs=%llu\n", (unsigned long long)gs->tscs,
		(unsigned long long)gs->mtcs, (unsigned long long)gs->cycs);
	if (s->o.overflow_psb > 0)
		fprintf(f, "overflows_at_psb=%llu\n", (unsigned long long)gs->ovf_psbs);
	if (s->o.ncpus > 1)
		fprintf(f, "cpus=%d\n", s->o.ncpus);
	if (s->jit_dumps || s->jit_dump_errors)
		jit_report(s, f);
	sampler_free(s->smp, f);
	if (s->o.snapshot) {
		uint64_t n = 0, lost = 0;

		for (int c = 0; c < s->cpus.n; c++) {   /* all CPUs' rings */
			uint64_t k, l;

			snapring_counts(s->cpus.c[c].snap, &k, &l);
			n += k;
			lost += l;
		}
		fprintf(f, "snapshot_size=%llu\nsnapshots=%llu\nsnapshot_lost_bytes=%llu\n",
			(unsigned long long)s->o.snapshot, (unsigned long long)n,
			(unsigned long long)lost);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	static struct synth S;
	static struct sched sc;
	struct synth *s = &S;
	struct ptgen_stats gs;
	size_t narchived;

	if (argc >= 2 && !strcmp(argv[1], "walk"))
		return walk_main(argc, argv);
	if (argc < 2 || strcmp(argv[1], "record"))
		synth_usage(usage_text);
	parse_opts(s, &sc, argc, argv);
	set_up(s);
	start_cmd(s);
	open_trace(s);
	start_thread(s, &sc);
	if (!(s->jc = jitconv_new()))
		synth_die("out of memory");
	clock_pair(s);
	trace(s, &sc);
	clock_pair(s);
	finish_trace(s, argc, argv);
	write_jit(s, s->o.out);
	write_text_store(s, s->o.out);
	narchived = s->o.archive ? write_archive(s, s->o.out) : 0;
	synth_write_cmd(create_file(s->o.out, "cmd"), argc, argv);
	synth_cpus_stats(&s->cpus, &gs);
	write_info(s, &sc, &gs);
	jitconv_free(s->jc);
	for (int c = 0; c < s->cpus.n; c++)
		snapring_free(s->cpus.c[c].snap);
	synth_cpus_free(&s->cpus);
	cs_close(&s->cs);
	fprintf(stderr, "ptsynth: %llu instructions, %llu trace bytes, %zu files "
		"archived -> %s\n", (unsigned long long)s->ninsns,
		(unsigned long long)gs.bytes, narchived, s->o.out);
	return 0;
}
