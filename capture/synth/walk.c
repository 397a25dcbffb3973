/* SPDX-License-Identifier: MIT */
/*
 * walk - `ptsynth walk`: generates the Intel PT trace that kernel tracing
 * hardware with IP filtering would emit for a walk through a capture's real
 * code, and the walk itself as ground truth (OUT.ptd/expected.insn).
 *
 * The code: the capture's text store rows (BPF JIT images with their
 * valid_from/valid_to windows), plus rows of extra text stores (--text DIR,
 * e.g. the patched versions of a tail-call site the loader read through
 * prog info) and raw code files (--code FILE:ADDR[:FROM:TO]).  Extra rows
 * override capture rows they overlap in address and time: the capture row
 * keeps only the time before the first and after the last extra row.
 *
 * The walk, one segment per `segment TIME ADDR MAX` line (or --segment
 * TIME:ADDR:MAX), starts at ADDR at perf time TIME and reads every
 * instruction from the row valid at the current time:
 *   - conditional branch: taken or not by a seeded random choice (--seed);
 *   - direct jump/call: to its target; a call pushes its return address;
 *   - return: to the top of the walk's own call stack;
 *   - indirect jump/call (in the code or through a __x86_indirect_thunk_*):
 *     to the target `target FROM TO` (--target FROM:TO) names for that
 *     branch, else the segment stops in front of it;
 *   - the traced range is every address some row holds at that time (the
 *     IP filter): a branch out of it gives TIP.PGD(target), re-entering it
 *     TIP.PGE.  A call out of it (a kernel helper) comes back to its return
 *     address; a jump to a return thunk (how BPF JIT code returns here)
 *     returns to the top of the walk stack, or ends the segment when the
 *     stack is empty (the program returned to its kernel caller);
 *   - after MAX instructions, the segment stops (FUP + TIP.PGD).
 * Time: TSC = perf-clock ns (time_mult 1, time_shift 0), one ns per
 * instruction; each segment's TSC packet puts it at TIME.  A walk that runs
 * past the end of the window of the code it is in is refused.
 *
 * OUT.ptd gets perf.data (intel_pt attr for kernel tracing, the capture's
 * KSYMBOL, BPF_EVENT, MMAP2, COMM and TEXT_POKE records with their original
 * timestamps, AUXTRACE_INFO, ITRACE_START, AUXTRACE + AUX), text/ (the rows
 * above), bpf/ (copied), expected.insn, cmd and info.
 *
 * With --kcore, OUT is perf record --kcore's layout instead: OUT/data (the
 * perf.data, without the sideband records from before the copy) and
 * OUT/kcore_dir/ (walk_kcore.c: the rows valid at the copy time, --kcore-time,
 * default the first segment's), and no text/ or bpf/: code the copy does
 * not hold is what a decoder must report as a gap.  A row that follows
 * one the copy holds at the same range (kernel text patched in place:
 * --code FILE:ADDR:FROM:TO versions) becomes a TEXT_POKE record.
 */
#define _GNU_SOURCE
#include "walk.h"

#include <capstone/capstone.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata.h"
#include "perfwrite.h"
#include "ptdecode.h"
#include "ptcapdir.h"
#include "ptgen.h"
#include "synth_opts.h"
#include "textstore.h"
#include "util.h"
#include "walk_kcore.h"

#define PT_PMU_TYPE PTCAP_PMU_TYPE
#define PT_ID PTCAP_PT_ID
#define DUMMY_ID PTCAP_DUMMY_ID
#define CPUID_STR PTCAP_CPUID
/* Where a program "returns to" when it leaves for its kernel caller: any
 * address outside the traced range will do; its value is not checked. */
#define OUTSIDE_IP 0xffffffff81000000ull
#define MAX_STACK 256
/* x86-64's kernel text start without KASLR: the kernel map perf expects */
#define KERNEL_TEXT 0xffffffff81000000ull

static void *xgrow(void *p, size_t *cap, size_t need, size_t size)
{
	if (util_grow(&p, cap, need, size) < 0)
		synth_die("out of memory");
	return p;
}

/* ---------------- code rows ---------------- */

struct row {
	struct textstore_entry e;
	const uint8_t *bytes;   /* NULL: range known, bytes not */
	int extra;              /* from --text / --code */
	int used;
};

struct segment {
	uint64_t time, addr, max;
	size_t order;
};

struct target {
	uint64_t from, to;
};

struct sbrec {                  /* a copied sideband record */
	uint32_t type;
	uint16_t misc;
	struct perfwrite_sid sid;
	size_t seq;
	union {
		struct perfdata_ksymbol k;
		struct perfdata_bpf_event b;
		struct perfdata_mmap m;
		struct perfdata_comm c;
		struct perfdata_text_poke t;
	} u;
	char *str;              /* owned copy of the name / file / comm */
	uint8_t *poke;          /* owned old + new bytes of a TEXT_POKE */
};

struct piece {                  /* one AUXTRACE piece */
	uint8_t *data;
	size_t len;
	uint64_t tsc_first, tsc_last;
};

struct walk {
	const char *out, *from;
	uint64_t seed, rng;
	uint32_t psb_period, helper_cycles;
	int32_t pid;
	const char *comm;       /* --comm: COMM/MMAP2 of these processes only */
	int bpf_used;           /* --bpf-used: bpf/ files of walked programs */
	int kcore;              /* --kcore: perf record --kcore's layout */
	int kcore_time_set;
	uint64_t kcore_time;    /* --kcore-time: when the copy was taken */
	const char **texts, **codes; /* --text DIRs and --code specs */
	size_t ntexts, ncodes;
	struct row *rows;
	size_t nrows, rcap;
	struct segment *segs;
	size_t nsegs, scap;
	struct target *targets;
	size_t ntargets, tcap;
	uint64_t *ret_thunks, *ind_thunks;
	size_t nret, retcap, nind, indcap;
	struct textstore **stores;
	size_t nstores, stcap;
	uint8_t **owned;
	size_t nowned, ocap;
	struct sbrec *sb;
	size_t nsb, sbcap;
	struct piece *pieces;
	size_t npieces, pcap;
	csh cs;
	struct ptgen *gen;
	FILE *expected, *log;
	uint64_t ninsns, nleaves, nenters, nrandom;
	char err[512];
};

static uint64_t rnd(struct walk *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		synth_die("bad %s '%s'", what, s);
	return v;
}

static void add_row(struct walk *w, const struct textstore_entry *e,
		    const uint8_t *bytes, int extra)
{
	struct row *r;

	w->rows = xgrow(w->rows, &w->rcap, w->nrows + 1, sizeof(*w->rows));
	r = &w->rows[w->nrows++];
	memset(r, 0, sizeof(*r));
	r->e = *e;
	r->bytes = bytes;
	r->extra = extra;
}

static void load_store(struct walk *w, const char *dir, int extra)
{
	struct textstore *ts;
	char err[512];

	if (textstore_open(dir, &ts, err, sizeof(err)))
		synth_die("%s", err);
	w->stores = xgrow(w->stores, &w->stcap, w->nstores + 1, sizeof(*w->stores));
	w->stores[w->nstores++] = ts;
	for (size_t i = 0; i < textstore_count(ts); i++) {
		const struct textstore_entry *e = textstore_get(ts, i);
		const uint8_t *b = NULL;

		if (strcmp(e->hash, "-") && textstore_bytes(ts, i, &b, err, sizeof(err))) {
			fprintf(stderr, "ptsynth walk: %s: the range has no bytes\n", err);
			b = NULL;
		}
		add_row(w, e, b, extra);
	}
}

/* --code FILE:ADDR[:FROM:TO] */
static void load_code(struct walk *w, const char *spec)
{
	char *s = strdup(spec), *f[5] = { 0 }, *save = NULL;
	struct textstore_entry e;
	struct util_map m;
	uint8_t *copy;
	int n = 0;

	if (!s)
		synth_die("out of memory");
	/* the file name may not contain ':' */
	for (char *t = strtok_r(s, ":", &save); t && n < 5; t = strtok_r(NULL, ":", &save))
		f[n++] = t;
	if (n != 2 && n != 4)
		synth_die("--code wants FILE:ADDR or FILE:ADDR:FROM:TO, not '%s'", spec);
	if (util_map_file(f[0], &m, w->err, sizeof(w->err)) < 0)
		synth_die("%s", w->err);
	if (!m.size)
		synth_die("--code %s: the file is empty", f[0]);
	copy = malloc(m.size);
	if (!copy)
		synth_die("out of memory");
	memcpy(copy, m.data, m.size);
	memset(&e, 0, sizeof(e));
	snprintf(e.kind, sizeof(e.kind), "jit");
	e.start = parse_u64(f[1], "--code address");
	e.len = m.size;
	e.valid_from = n == 4 ? parse_u64(f[2], "--code valid-from") : 0;
	e.valid_to = n == 4 && strcmp(f[3], "-") ? parse_u64(f[3], "--code valid-to")
						  : TEXTSTORE_OPEN_END;
	if (e.valid_to <= e.valid_from)
		synth_die("--code %s: empty time window", spec);
	e.pid = -1;
	snprintf(e.source, sizeof(e.source), "file");
	snprintf(e.tag, sizeof(e.tag), "-");
	snprintf(e.build_id, sizeof(e.build_id), "-");
	snprintf(e.name, sizeof(e.name), "%.255s", f[0]);
	util_unmap(&m);
	w->owned = xgrow(w->owned, &w->ocap, w->nowned + 1, sizeof(*w->owned));
	w->owned[w->nowned++] = copy;
	add_row(w, &e, copy, 1);
	free(s);
}

static int overlap(const struct textstore_entry *a, const struct textstore_entry *b)
{
	return a->pid == b->pid && a->start < b->start + b->len &&
	       b->start < a->start + a->len && a->valid_from < b->valid_to &&
	       b->valid_from < a->valid_to;
}

/* Extra rows override the capture rows they overlap (see the top). */
static void apply_overrides(struct walk *w)
{
	size_t n = w->nrows;

	for (size_t i = 0; i < n; i++) {
		struct row *r = &w->rows[i];
		uint64_t lo = UINT64_MAX, hi = 0;
		struct textstore_entry after;

		if (r->extra)
			continue;
		for (size_t j = 0; j < n; j++) {
			const struct row *x = &w->rows[j];
			if (!x->extra || !overlap(&r->e, &x->e))
				continue;
			if (x->e.valid_from < lo)
				lo = x->e.valid_from;
			if (x->e.valid_to > hi)
				hi = x->e.valid_to;
		}
		if (lo == UINT64_MAX)
			continue;
		after = r->e;
		if (hi < r->e.valid_to) {   /* keeps the time after the last */
			after.valid_from = hi;
			add_row(w, &after, w->rows[i].bytes, 0);
			r = &w->rows[i];
		}
		if (lo > r->e.valid_from) { /* and the time before the first */
			r->e.valid_to = lo;
		} else {                    /* nothing left before: drop it */
			r->e.valid_from = r->e.valid_to = 0;
			r->e.len = 0;
		}
	}
}

/* The row holding addr at time t, or NULL.  Rows that agree (a prog-info
 * and a fence copy of the same image) are one; rows that disagree make the
 * walk refuse the address. */
static struct row *row_at(struct walk *w, uint64_t addr, uint64_t t)
{
	struct row *best = NULL;

	for (size_t i = 0; i < w->nrows; i++) {
		struct row *r = &w->rows[i];
		if (!r->e.len || addr < r->e.start || addr - r->e.start >= r->e.len ||
		    t < r->e.valid_from || t >= r->e.valid_to)
			continue;
		if (!best) {
			best = r;
			continue;
		}
		if (!best->bytes || (r->bytes && (r->e.start != best->e.start ||
						  strcmp(r->e.hash, best->e.hash)))) {
			if (best->bytes && r->bytes)
				synth_die("%#" PRIx64 " at time %" PRIu64 ": two versions of the "
					  "code (%s, %s) are valid at once", addr, t,
					  best->e.name, r->e.name);
			if (r->bytes)
				best = r;
		}
	}
	return best;
}

static int held_ever(struct walk *w, uint64_t addr)
{
	for (size_t i = 0; i < w->nrows; i++)
		if (w->rows[i].e.len && addr >= w->rows[i].e.start &&
		    addr - w->rows[i].e.start < w->rows[i].e.len)
			return 1;
	return 0;
}

static int in_list(const uint64_t *v, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == a)
			return 1;
	return 0;
}

/* Return and indirect-branch thunks from the capture's kallsyms. */
static void load_thunks(struct walk *w)
{
	char path[4096], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", w->from);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || !a)
			continue;
		if (strstr(name, "return_thunk")) {
			w->ret_thunks = xgrow(w->ret_thunks, &w->retcap, w->nret + 1, 8);
			w->ret_thunks[w->nret++] = a;
		} else if (strstr(name, "indirect") && strstr(name, "thunk")) {
			w->ind_thunks = xgrow(w->ind_thunks, &w->indcap, w->nind + 1, 8);
			w->ind_thunks[w->nind++] = a;
		}
	}
	fclose(f);
}

/* ---------------- instructions ---------------- */

static void classify(struct walk *w, const struct row *r, uint64_t ip,
		     struct ptgen_insn *out)
{
	uint64_t off = ip - r->e.start;
	size_t avail = r->e.len - off < 16 ? (size_t)(r->e.len - off) : 16;

	if (ptgen_classify(w->cs, ip, r->bytes + off, avail, out))
		synth_die("cannot decode the instruction at %#" PRIx64 " in %s", ip, r->e.name);
}

static int lookup_target(const struct walk *w, uint64_t from, uint64_t *to)
{
	for (size_t i = 0; i < w->ntargets; i++)
		if (w->targets[i].from == from) {
			*to = w->targets[i].to;
			return 1;
		}
	return 0;
}

static void check(int r, const char *what)
{
	if (r < 0)
		synth_die("%s failed: %s", what, ptd_strerror(r));
}

/* Is addr traced at time t?  Refuses addresses whose code exists only at
 * other times: that walk would run through bytes that were not there. */
static struct row *traced(struct walk *w, uint64_t addr, uint64_t t)
{
	struct row *r = row_at(w, addr, t);

	if (r && !r->bytes)
		synth_die("%#" PRIx64 " at time %" PRIu64 ": the bytes of %s were not "
			  "captured; the walk cannot go there", addr, t, r->e.name);
	if (!r && held_ever(w, addr))
		synth_die("%#" PRIx64 ": no code there at time %" PRIu64 " (the walk ran "
			  "outside the time window of the code; pick another segment time "
			  "or fewer instructions)", addr, t);
	return r;
}

static void emit_insn(struct walk *w, uint64_t ip)
{
	fprintf(w->expected, "0x%" PRIx64 "\n", ip);
	w->ninsns++;
}

/* One segment of the walk. */
static void walk_segment(struct walk *w, const struct segment *sg, FILE *log)
{
	uint64_t stack[MAX_STACK], ip = sg->addr, n = 0;
	int sp = 0;
	const char *why = "max instructions";

	if (sg->time < ptgen_tsc(w->gen))
		synth_die("segment at %" PRIu64 " overlaps the previous one (it ends at "
			  "%" PRIu64 ")", sg->time, ptgen_tsc(w->gen));
	ptgen_advance(w->gen, sg->time - ptgen_tsc(w->gen));
	if (!traced(w, ip, sg->time))
		synth_die("segment %" PRIu64 ":%#" PRIx64 ": no code at that address and "
			  "time", sg->time, ip);
	/* Segments are far apart in time: a PSB+ between them is what
	 * hardware would have emitted, and it lets a decoder that lost sync
	 * in one segment decode the next. */
	check(ptgen_sync(w->gen, ip), "packet generation");
	check(ptgen_enable(w->gen, ip), "packet generation");
	w->nenters++;
	for (;;) {
		uint64_t t = ptgen_tsc(w->gen), fall, next, to;
		struct row *r = traced(w, ip, t);
		struct ptgen_insn in;
		int resume = 0;   /* re-enter the range at next2 */
		uint64_t next2 = 0;

		if (!r)
			synth_die("internal: walk at %#" PRIx64 " outside the traced range", ip);
		if (n >= sg->max) {
			check(ptgen_async_disable(w->gen, ip), "packet generation");
			break;
		}
		r->used = 1;
		classify(w, r, ip, &in);
		fall = ip + in.len;
		next = fall;
		switch (in.cls) {
		case PTG_OTHER:
			break;
		case PTG_COND:
			w->nrandom++;
			if (rnd(w) >> 63)
				next = in.target;
			break;
		case PTG_JMP_DIRECT:
		case PTG_CALL_DIRECT:
			next = in.target;
			break;
		case PTG_JMP_INDIRECT:
		case PTG_CALL_INDIRECT:
			if (!lookup_target(w, ip, &next)) {
				why = "indirect branch without a target";
				check(ptgen_async_disable(w->gen, ip), "packet generation");
				goto done;
			}
			break;
		case PTG_RET:
			next = sp ? stack[--sp] : OUTSIDE_IP;
			break;
		case PTG_FAR:
			why = "far branch / trap";
			check(ptgen_async_disable(w->gen, ip), "packet generation");
			goto done;
		}
		if ((in.cls == PTG_CALL_DIRECT || in.cls == PTG_CALL_INDIRECT) &&
		    next != fall) {
			if (sp == MAX_STACK)
				synth_die("walk call stack deeper than %d at %#" PRIx64, MAX_STACK, ip);
			stack[sp++] = fall;
		}
		emit_insn(w, ip);
		n++;
		if (traced(w, next, t + 1)) {
			check(ptgen_insn(w->gen, ip, &in, next), "packet generation");
			ip = next;
			continue;
		}
		/* The branch leaves the traced range. */
		if (in.cls == PTG_JMP_DIRECT && in_list(w->ret_thunks, w->nret, next)) {
			/* BPF JIT return: through the return thunk */
			if (sp) {
				resume = 1;
				next2 = stack[--sp];
			}
		} else if ((in.cls == PTG_JMP_DIRECT || in.cls == PTG_CALL_DIRECT) &&
			   in_list(w->ind_thunks, w->nind, next)) {
			/* indirect branch through a retpoline thunk */
			if (lookup_target(w, ip, &to)) {
				resume = 1;
				next2 = to;
				if (in.cls == PTG_CALL_DIRECT && !traced(w, to, t + 1)) {
					sp--;   /* an untraced callee returns to fall */
					next2 = fall;
				}
			} else if (in.cls == PTG_CALL_DIRECT) {
				why = "indirect call through a thunk without a target";
			}
		} else if (in.cls == PTG_CALL_DIRECT || in.cls == PTG_CALL_INDIRECT) {
			/* a kernel function outside the range returns here */
			resume = 1;
			next2 = stack[--sp];
		}
		check(ptgen_leave(w->gen, ip, &in, next), "packet generation");
		w->nleaves++;
		if (!resume) {
			why = in.cls == PTG_RET || in.cls == PTG_JMP_DIRECT ? "left the range"
									     : why;
			break;
		}
		ptgen_advance(w->gen, w->helper_cycles);
		if (!traced(w, next2, ptgen_tsc(w->gen)))
			synth_die("the walk returns to %#" PRIx64 ", which is not traced", next2);
		check(ptgen_enable(w->gen, next2), "packet generation");
		w->nenters++;
		ip = next2;
	}
done:
	fprintf(log, "segment time=%" PRIu64 " start=%#" PRIx64 " insns=%" PRIu64
		" first_line=%" PRIu64 " end=%s\n", sg->time, sg->addr, n,
		w->ninsns - n + 1, why);
	ptgen_advance(w->gen, 1000);
}

/* ---------------- spec ---------------- */

static void add_segment(struct walk *w, uint64_t t, uint64_t a, uint64_t max)
{
	struct segment *s;

	if (!max)
		synth_die("a segment needs MAX_INSNS > 0");
	w->segs = xgrow(w->segs, &w->scap, w->nsegs + 1, sizeof(*w->segs));
	s = &w->segs[w->nsegs];
	s->time = t;
	s->addr = a;
	s->max = max;
	s->order = w->nsegs++;
}

static void add_target(struct walk *w, uint64_t from, uint64_t to)
{
	w->targets = xgrow(w->targets, &w->tcap, w->ntargets + 1, sizeof(*w->targets));
	w->targets[w->ntargets].from = from;
	w->targets[w->ntargets++].to = to;
}

/* "T:A:N" or "F:T" */
static int split(char *s, char **f, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *t = strtok_r(s, ":", &save); t && n < max; t = strtok_r(NULL, ":", &save))
		f[n++] = t;
	return n;
}

static void read_spec(struct walk *w, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int lineno = 0;

	if (!f)
		synth_die("cannot open the walk spec %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char kw[32], a[64], b[64], c[64];
		int n;

		lineno++;
		n = sscanf(line, "%31s %63s %63s %63s", kw, a, b, c);
		if (n <= 0 || kw[0] == '#')
			continue;
		if (!strcmp(kw, "segment") && n == 4)
			add_segment(w, parse_u64(a, "segment time"), parse_u64(b, "segment address"),
				    parse_u64(c, "segment max"));
		else if (!strcmp(kw, "target") && n == 3)
			add_target(w, parse_u64(a, "target from"), parse_u64(b, "target to"));
		else
			synth_die("%s:%d: expected `segment TIME ADDR MAX` or `target FROM TO`",
				  path, lineno);
	}
	fclose(f);
}

static int seg_cmp(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* ---------------- sideband and perf.data ---------------- */

static int sb_cmp(const void *a, const void *b)
{
	const struct sbrec *x = a, *y = b;
	if (x->sid.time != y->sid.time)
		return x->sid.time < y->sid.time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		synth_die("out of memory");
	return d;
}

/* Keeps COMM and MMAP2 records only of the pids that had w->comm. */
static void filter_comm(struct walk *w)
{
	uint32_t *pids = NULL;
	size_t npids = 0, pcap = 0, k = 0;

	for (size_t i = 0; i < w->nsb; i++)
		if (w->sb[i].type == PD_RECORD_COMM && !strcmp(w->sb[i].str, w->comm)) {
			pids = xgrow(pids, &pcap, npids + 1, sizeof(*pids));
			pids[npids++] = w->sb[i].u.c.pid;
		}
	for (size_t i = 0; i < w->nsb; i++) {
		struct sbrec *s = &w->sb[i];
		uint32_t pid = s->type == PD_RECORD_COMM ? s->u.c.pid :
			       s->type == PD_RECORD_MMAP2 ? s->u.m.pid : 0;
		int keep = 1;

		if (s->type == PD_RECORD_COMM || s->type == PD_RECORD_MMAP2) {
			keep = 0;
			for (size_t j = 0; j < npids; j++)
				keep |= pids[j] == pid;
		}
		if (keep) {
			w->sb[k++] = *s;
		} else {
			free(s->str);
			free(s->poke);
		}
	}
	w->nsb = k;
	free(pids);
}

static void read_sideband(struct walk *w)
{
	char path[4096], err[512];
	struct perfdata *pd;
	struct perfdata_record rec;
	int rc;

	snprintf(path, sizeof(path), "%s/perf.data", w->from);
	if (perfdata_open(path, &pd, err, sizeof(err)))
		synth_die("%s", err);
	while ((rc = perfdata_next(pd, &rec)) == 0) {
		struct sbrec s;

		memset(&s, 0, sizeof(s));
		s.type = rec.type;
		s.misc = rec.misc;
		s.sid.pid = rec.sid.pid;
		s.sid.tid = rec.sid.tid;
		s.sid.time = rec.sid.time;
		s.sid.cpu = rec.sid.cpu;
		s.sid.id = DUMMY_ID;
		if (!rec.sid.has_time)
			continue;
		switch (rec.type) {
		case PD_RECORD_KSYMBOL:
			if (perfdata_parse_ksymbol(&rec, &s.u.k))
				continue;
			s.str = xstrdup(s.u.k.name);
			break;
		case PD_RECORD_BPF_EVENT:
			if (perfdata_parse_bpf_event(&rec, &s.u.b))
				continue;
			break;
		case PD_RECORD_MMAP2:
			if (perfdata_parse_mmap(&rec, &s.u.m))
				continue;
			s.str = xstrdup(s.u.m.filename);
			break;
		case PD_RECORD_COMM:
			if (perfdata_parse_comm(&rec, &s.u.c))
				continue;
			s.str = xstrdup(s.u.c.comm);
			break;
		case PD_RECORD_TEXT_POKE:
			if (perfdata_parse_text_poke(&rec, &s.u.t))
				continue;
			s.poke = malloc((size_t)s.u.t.old_len + s.u.t.new_len + 1);
			if (!s.poke)
				synth_die("out of memory");
			memcpy(s.poke, s.u.t.old_bytes, s.u.t.old_len);
			memcpy(s.poke + s.u.t.old_len, s.u.t.new_bytes, s.u.t.new_len);
			break;
		default:
			continue;
		}
		s.seq = w->nsb;
		w->sb = xgrow(w->sb, &w->sbcap, w->nsb + 1, sizeof(*w->sb));
		w->sb[w->nsb++] = s;
	}
	if (rc != PTD_ERR_END)
		synth_die("%s: cannot read records", path);
	perfdata_close(pd);
	util_sort(w->sb, w->nsb, sizeof(*w->sb), sb_cmp);
	if (w->comm)
		filter_comm(w);
}

static void write_sb(struct walk *w, struct perfwrite *pw, const struct sbrec *s)
{
	int r = 0;

	switch (s->type) {
	case PD_RECORD_KSYMBOL:
		r = perfwrite_ksymbol(pw, &s->sid, s->u.k.addr, s->u.k.len,
				      s->u.k.ksym_type, s->u.k.flags, s->str);
		break;
	case PD_RECORD_BPF_EVENT:
		r = perfwrite_bpf_event(pw, &s->sid, s->u.b.type, s->u.b.flags,
					s->u.b.id, s->u.b.tag);
		break;
	case PD_RECORD_MMAP2: {
		const struct perfdata_mmap *m = &s->u.m;
		r = perfwrite_mmap2(pw, &s->sid, s->misc & PD_MISC_CPUMODE_MASK, m->pid,
				    m->tid, m->addr, m->len, m->pgoff,
				    m->has_build_id ? m->build_id : NULL,
				    m->has_build_id ? m->build_id_size : 0, m->maj, m->min,
				    m->ino, m->ino_generation, m->prot, m->flags, s->str);
		break;
	}
	case PD_RECORD_COMM:
		r = perfwrite_comm(pw, &s->sid, s->u.c.pid, s->u.c.tid, s->str, s->u.c.exec);
		break;
	case PD_RECORD_TEXT_POKE:
		r = perfwrite_text_poke(pw, &s->sid, s->u.t.addr, s->poke, s->u.t.old_len,
					s->poke + s->u.t.old_len, s->u.t.new_len);
		break;
	}
	check(r, "writing a sideband record");
}

static int keep_piece(void *ctx, const uint8_t *data, size_t len,
		      uint64_t tsc_first, uint64_t tsc_last)
{
	struct walk *w = ctx;
	struct piece *p;

	w->pieces = xgrow(w->pieces, &w->pcap, w->npieces + 1, sizeof(*w->pieces));
	p = &w->pieces[w->npieces++];
	p->data = malloc(len);
	if (!p->data)
		return PTD_ERR_NOMEM;
	memcpy(p->data, data, len);
	p->len = len;
	p->tsc_first = tsc_first;
	p->tsc_last = tsc_last;
	return 0;
}

/* The kernel's MMAP, as perf record synthesizes it first (time 0): perf's
 * decoder finds kernel code (and loads kcore_dir/kcore) through this map. */
static void write_kernel_mmap(struct perfwrite *pw)
{
	struct perfwrite_sid sid = { .pid = (uint32_t)-1, .tid = 0, .id = DUMMY_ID,
				     .time = 0 };

	check(perfwrite_mmap2(pw, &sid, PD_MISC_KERNEL, (uint32_t)-1, 0,
			      KERNEL_TEXT, ~0ull - KERNEL_TEXT, KERNEL_TEXT, NULL, 0,
			      0, 0, 0, 0, PROT_READ | PROT_EXEC, 0,
			      "[kernel.kallsyms]_text"), "the kernel MMAP");
}

static void write_perf_data(struct walk *w, int argc, char **argv)
{
	char path[4096];
	struct perfwrite *pw;
	uint64_t aux_offset = 0;
	size_t i = 0, j = 0;
	int itrace = 0;

	snprintf(path, sizeof(path), "%s/%s", w->out, w->kcore ? "data" : "perf.data");
	if (perfwrite_open(&pw, path, w->err, sizeof(w->err)))
		synth_die("%s", w->err);
	{
		/* kernel tracing, TSC = perf ns; the sideband attr also asks
		 * for KSYMBOL, BPF_EVENT and TEXT_POKE records */
		struct ptcap_opts po = { .kernel = 1, .tsc = 1, .retcomp = 1,
					 .clock_set = 1, .time_shift = 0,
					 .time_mult = 1, .time_zero = 0,
					 .sideband_flags = PD_ATTR_FLAG_KSYMBOL |
							   PD_ATTR_FLAG_BPF_EVENT |
							   PD_ATTR_FLAG_TEXT_POKE };

		check(ptcap_begin(pw, &po), "attrs and AUXTRACE_INFO");
	}
	if (w->kcore)
		write_kernel_mmap(pw);
	/* Sideband and trace pieces in time order. */
	while (i < w->nsb || j < w->npieces) {
		int take_sb = j >= w->npieces ||
			      (i < w->nsb && w->sb[i].sid.time <= w->pieces[j].tsc_first);
		struct perfwrite_sid sid = { 0 };

		if (take_sb && w->kcore && w->sb[i].sid.time < w->kcore_time) {
			i++;    /* before the recording (and the copy) began */
			continue;
		}
		if (take_sb) {
			write_sb(w, pw, &w->sb[i++]);
			continue;
		}
		sid.pid = (uint32_t)w->pid;
		sid.tid = (uint32_t)w->pid;
		sid.id = PT_ID;
		sid.cpu = 0;
		sid.time = w->pieces[j].tsc_first;
		if (!itrace) {
			check(perfwrite_itrace_start(pw, &sid, (uint32_t)w->pid,
						     (uint32_t)w->pid), "ITRACE_START");
			itrace = 1;
		}
		check(perfwrite_auxtrace(pw, w->pieces[j].data, w->pieces[j].len, aux_offset,
					 w->pieces[j].tsc_first, 0, (uint32_t)-1, 0),
		      "AUXTRACE");
		sid.time = w->pieces[j].tsc_last;
		check(perfwrite_aux(pw, &sid, aux_offset, (w->pieces[j].len + 7) & ~(size_t)7, 0),
		      "AUX");
		aux_offset += (w->pieces[j].len + 7) & ~(size_t)7;
		j++;
	}
	check(ptcap_features(pw, "6.18.0-ptsynth-walk", argc, argv), "features");
	if (perfwrite_close(pw, w->err, sizeof(w->err)))
		synth_die("%s", w->err);
}

/* ---------------- output files ---------------- */

static FILE *create_file(const char *dir, const char *name)
{
	char path[4096];
	int fd;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		synth_die("path too long: %s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		synth_die("cannot create %s: %s", path, strerror(errno));
	return f;
}

static void write_text(struct walk *w)
{
	struct textstore_writer *tw;
	char path[4096];

	snprintf(path, sizeof(path), "%s/text", w->out);
	check(textstore_writer_open(path, &tw), "text store");
	for (size_t i = 0; i < w->nrows; i++) {
		struct textstore_entry e = w->rows[i].e;
		if (!e.len)
			continue;   /* fully overridden */
		check(textstore_writer_add(tw, &e, w->rows[i].bytes), "text store row");
	}
	check(textstore_writer_close(tw), "text store");
}

static int prog_used(const struct walk *w, unsigned long id)
{
	for (size_t i = 0; i < w->nrows; i++)
		if (w->rows[i].used && w->rows[i].e.prog_id == id && id)
			return 1;
	return 0;
}

/* Copies CAPTURE/bpf/ (regular files) into OUT/bpf/. */
static void copy_bpf_dir(struct walk *w)
{
	char src[4096], dst[4096];
	struct dirent *de;
	DIR *d;

	snprintf(src, sizeof(src), "%s/bpf", w->from);
	if (!(d = opendir(src)))
		return;
	snprintf(dst, sizeof(dst), "%s/bpf", w->out);
	if (mkdir(dst, 0700) && errno != EEXIST)
		synth_die("cannot create %s: %s", dst, strerror(errno));
	while ((de = readdir(d))) {
		struct util_map m;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		if (w->bpf_used && !prog_used(w, strtoul(de->d_name, NULL, 10)))
			continue;
		snprintf(src, sizeof(src), "%s/bpf/%s", w->from, de->d_name);
		if (util_map_file(src, &m, w->err, sizeof(w->err)) < 0)
			synth_die("%s", w->err);
		f = create_file(dst, de->d_name);
		if (m.size && fwrite(m.data, 1, m.size, f) != m.size)
			synth_die("cannot write %s/%s", dst, de->d_name);
		if (fclose(f))
			synth_die("cannot write %s/%s", dst, de->d_name);
		util_unmap(&m);
	}
	closedir(d);
}

/* OUT/kcore_dir/ from the rows valid at the copy time. */
static void write_kcore(struct walk *w)
{
	struct walk_kcore_row *kr = calloc(w->nrows ? w->nrows : 1, sizeof(*kr));
	size_t n;

	if (!kr)
		synth_die("out of memory");
	for (size_t i = 0; i < w->nrows; i++) {
		kr[i].e = &w->rows[i].e;
		kr[i].bytes = w->rows[i].bytes;
	}
	n = walk_kcore_write(w->out, w->from, kr, w->nrows, w->kcore_time,
			     KERNEL_TEXT);
	fprintf(w->log, "kcore time=%" PRIu64 " ranges=%zu\n", w->kcore_time, n);
	free(kr);
}

static const char usage_text[] =
	"usage: ptsynth walk -o OUT.ptd --from CAPTURE.ptd [options] [WALKSPEC]\n"
	"  WALKSPEC lines:  segment PERF_TIME_NS START_ADDR MAX_INSNS\n"
	"                   target BRANCH_ADDR TARGET_ADDR   (indirect branches)\n"
	"  --segment T:A:N  a segment (repeatable)\n"
	"  --target F:T     the indirect branch at F goes to T (repeatable)\n"
	"  --text DIR       extra text store rows; they override capture rows\n"
	"  --code FILE:ADDR[:FROM:TO]  raw code bytes at ADDR, valid [FROM, TO)\n"
	"  --seed N         seed of the conditional-branch choices (default 1)\n"
	"  --psb-period N   bytes between PSB packets (default 4096)\n"
	"  --helper-cycles N  ns spent in untraced kernel code per call (default 100)\n"
	"  --pid N          pid for ITRACE_START (default 0)\n"
	"  --comm NAME      copy COMM and MMAP2 records only of processes named NAME\n"
	"                   (default: all; KSYMBOL/BPF_EVENT/TEXT_POKE always)\n"
	"  --bpf-used       copy CAPTURE/bpf/ID.* only for programs the walk ran\n"
	"  --kcore          write perf record --kcore's layout: OUT/data and\n"
	"                   OUT/kcore_dir/{kcore,kallsyms,modules}, no text/\n"
	"  --kcore-time T   the kcore copy's time (default: the first segment's);\n"
	"                   --code versions of a copied range become TEXT_POKEs\n";

/* One option of ptsynth walk. */
static void set_opt(void *ctx, int c, const char *arg)
{
	struct walk *w = ctx;
	char buf[256], *fl[4];

	switch (c) {
	case 'o': w->out = arg; break;
	case 'f': w->from = arg; break;
	case 'S':
		snprintf(buf, sizeof(buf), "%s", arg);
		if (split(buf, fl, 4) != 3)
			synth_die("--segment wants TIME:ADDR:MAX_INSNS");
		add_segment(w, parse_u64(fl[0], "segment time"),
			    parse_u64(fl[1], "segment address"),
			    parse_u64(fl[2], "segment max"));
		break;
	case 't':
		snprintf(buf, sizeof(buf), "%s", arg);
		if (split(buf, fl, 4) != 2)
			synth_die("--target wants FROM:TO");
		add_target(w, parse_u64(fl[0], "target"), parse_u64(fl[1], "target"));
		break;
	case 'x': w->texts[w->ntexts++] = arg; break;
	case 'c': w->codes[w->ncodes++] = arg; break;
	case 's': w->seed = parse_u64(arg, "--seed"); break;
	case 'p': w->psb_period = (uint32_t)parse_u64(arg, "--psb-period"); break;
	case 'h': w->helper_cycles = (uint32_t)parse_u64(arg, "--helper-cycles"); break;
	case 'P': w->pid = (int32_t)parse_u64(arg, "--pid"); break;
	case 'C': w->comm = arg; break;
	case 'B': w->bpf_used = 1; break;
	case 'K': w->kcore = 1; break;
	case 'T':
		w->kcore_time = parse_u64(arg, "--kcore-time");
		w->kcore_time_set = 1;
		break;
	}
}

/* The options, then the WALKSPEC files; segments in time order. */
static void parse_opts(struct walk *w, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, 'f' },
		{ "segment", required_argument, NULL, 'S' },
		{ "target", required_argument, NULL, 't' },
		{ "text", required_argument, NULL, 'x' },
		{ "code", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "psb-period", required_argument, NULL, 'p' },
		{ "helper-cycles", required_argument, NULL, 'h' },
		{ "pid", required_argument, NULL, 'P' },
		{ "comm", required_argument, NULL, 'C' },
		{ "bpf-used", no_argument, NULL, 'B' },
		{ "kcore", no_argument, NULL, 'K' },
		{ "kcore-time", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 }
	};
	int first;

	w->seed = 1;
	w->psb_period = 4096;
	w->helper_cycles = 100;
	w->texts = calloc((size_t)argc, sizeof(char *));
	w->codes = calloc((size_t)argc, sizeof(char *));
	if (!w->texts || !w->codes)
		synth_die("out of memory");
	/* "o:", not "+o:": WALKSPEC files may stand between the options */
	first = synth_parse_opts(argc, argv, "o:", lopts, set_opt, w, usage_text);
	if (!w->out || !w->from)
		synth_usage(usage_text);
	for (int i = first; i < argc; i++)
		read_spec(w, argv[i]);
	if (!w->nsegs)
		synth_die("no segments: give a WALKSPEC file or --segment");
	synth_check_psb_period(w->psb_period);
	util_sort(w->segs, w->nsegs, sizeof(*w->segs), seg_cmp);
	if (!w->kcore_time_set)
		w->kcore_time = w->segs[0].time;
	if (w->kcore && w->kcore_time > w->segs[0].time)
		synth_die("--kcore-time %" PRIu64 " is after the first segment (%" PRIu64
			  "): the recording, and its copy, start before the trace",
			  w->kcore_time, w->segs[0].time);
	w->rng = synth_rng_init(w->seed);
}

/* The version of r's range that the kcore copy holds and that r follows
 * without a gap, or NULL. */
static const struct row *copied_before(const struct walk *w, const struct row *r)
{
	for (size_t i = 0; i < w->nrows; i++) {
		const struct row *q = &w->rows[i];

		if (q != r && q->bytes && q->e.pid == -1 && q->e.start == r->e.start &&
		    q->e.len == r->e.len && q->e.valid_from <= w->kcore_time &&
		    w->kcore_time < q->e.valid_to && q->e.valid_to == r->e.valid_from)
			return q;
	}
	return NULL;
}

/* --kcore: kernel code that changes in place after the copy (a row that
 * follows, at the same range, one the copy holds) is what the kernel
 * reports with TEXT_POKE: one record of the bytes that differ, at the
 * time the new version begins. */
static void add_text_pokes(struct walk *w)
{
	size_t n = w->nrows;

	for (size_t i = 0; i < n; i++) {
		const struct row *r = &w->rows[i], *q;
		struct sbrec s;
		size_t a = 0, b;

		if (!r->bytes || r->e.pid != -1 || r->e.valid_from <= w->kcore_time ||
		    !(q = copied_before(w, r)))
			continue;
		b = (size_t)r->e.len;
		while (a < b && q->bytes[a] == r->bytes[a])
			a++;
		while (b > a && q->bytes[b - 1] == r->bytes[b - 1])
			b--;
		if (a == b)
			continue;
		if (b - a > 0xffff)
			synth_die("%s: a TEXT_POKE of %zu bytes is too large", r->e.name, b - a);
		memset(&s, 0, sizeof(s));
		s.type = PD_RECORD_TEXT_POKE;
		s.misc = PD_MISC_KERNEL;
		s.sid.pid = s.sid.tid = 0;
		s.sid.id = DUMMY_ID;
		s.sid.time = r->e.valid_from;
		s.u.t.addr = r->e.start + a;
		s.u.t.old_len = s.u.t.new_len = (uint16_t)(b - a);
		s.poke = malloc(2 * (b - a));
		if (!s.poke)
			synth_die("out of memory");
		memcpy(s.poke, q->bytes + a, b - a);
		memcpy(s.poke + (b - a), r->bytes + a, b - a);
		s.seq = w->nsb;
		w->sb = xgrow(w->sb, &w->sbcap, w->nsb + 1, sizeof(*w->sb));
		w->sb[w->nsb++] = s;
	}
	util_sort(w->sb, w->nsb, sizeof(*w->sb), sb_cmp);
}

/* The code rows (capture, --text, --code) and the capture's sideband. */
static void load_inputs(struct walk *w)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/text", w->from);
	load_store(w, path, 0);
	for (size_t i = 0; i < w->ntexts; i++)
		load_store(w, w->texts[i], 1);
	for (size_t i = 0; i < w->ncodes; i++)
		load_code(w, w->codes[i]);
	apply_overrides(w);
	load_thunks(w);
	read_sideband(w);
	if (w->kcore)
		add_text_pokes(w);
}

/* OUT, the disassembler, the packet generator, expected.insn and walk.log. */
static void open_output(struct walk *w)
{
	struct ptgen_opts go = { 0 };

	if (mkdir(w->out, 0700) < 0 && errno != EEXIST)
		synth_die("cannot create %s: %s", w->out, strerror(errno));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &w->cs) != CS_ERR_OK)
		synth_die("capstone cs_open failed");
	cs_option(w->cs, CS_OPT_DETAIL, CS_OPT_ON);
	go.psb_period = w->psb_period;
	go.retcomp = 1;
	go.long_tnt = 1;
	go.tsc = 1;
	go.cycles_per_insn = 1;
	go.tsc0 = w->segs[0].time > 10000 ? w->segs[0].time - 10000 : 1;
	go.cbr = 32;
	if (ptgen_new(&w->gen, &go, keep_piece, w) < 0)
		synth_die("cannot set up the packet generator");
	w->expected = create_file(w->out, "expected.insn");
	w->log = create_file(w->out, "walk.log");
}

/* walk.log: the rows the walk ran through; returns how many. */
static size_t log_used_rows(struct walk *w)
{
	size_t used = 0;

	for (size_t i = 0; i < w->nrows; i++)
		if (w->rows[i].used) {
			used++;
			fprintf(w->log, "used %s %#" PRIx64 " len %" PRIu64 " [%" PRIu64 ", %"
				PRIu64 ") %s\n", w->rows[i].e.kind, w->rows[i].e.start,
				w->rows[i].e.len, w->rows[i].e.valid_from, w->rows[i].e.valid_to,
				w->rows[i].e.name);
		}
	return used;
}

static void write_info(struct walk *w, const struct ptgen_stats *gs, size_t used)
{
	FILE *f = create_file(w->out, "info");

	fprintf(f, "tool=ptsynth-walk\nversion=%s\ncpu=%s\npmu_type=%d\n", ptd_version(),
		CPUID_STR, PT_PMU_TYPE);
	fprintf(f, "seed=%" PRIu64 "\npsb_period=%u\nsegments=%zu\ninstructions=%" PRIu64
		"\nrandom_choices=%" PRIu64 "\nleaves=%" PRIu64 "\nenters=%" PRIu64
		"\ntext_rows=%zu\ntext_rows_used=%zu\nsideband_records=%zu\n",
		w->seed, w->psb_period, w->nsegs, w->ninsns, w->nrandom, w->nleaves,
		w->nenters, w->nrows, used, w->nsb);
	fprintf(f, "time_shift=0\ntime_mult=1\ntime_zero=0\ntrace_bytes=%" PRIu64
		"\npsbs=%" PRIu64 "\ntnt_bits=%" PRIu64 "\ntips=%" PRIu64 "\npges=%" PRIu64
		"\npgds=%" PRIu64 "\n", gs->bytes, gs->psbs, gs->tnt_bits, gs->tips, gs->pges,
		gs->pgds);
	fclose(f);
}

static void free_walk(struct walk *w)
{
	ptgen_free(w->gen);
	cs_close(&w->cs);
	for (size_t i = 0; i < w->nstores; i++)
		textstore_close(w->stores[i]);
	for (size_t i = 0; i < w->nowned; i++)
		free(w->owned[i]);
	for (size_t i = 0; i < w->nsb; i++) {
		free(w->sb[i].str);
		free(w->sb[i].poke);
	}
	for (size_t i = 0; i < w->npieces; i++)
		free(w->pieces[i].data);
	free(w->sb);
	free(w->pieces);
	free(w->owned);
	free(w->stores);
	free(w->rows);
	free(w->segs);
	free(w->targets);
	free(w->ret_thunks);
	free(w->ind_thunks);
	free(w->texts);
	free(w->codes);
}

int walk_main(int argc, char **argv)
{
	static struct walk W;
	struct walk *w = &W;
	struct ptgen_stats gs;
	size_t used;

	synth_set_prog("ptsynth walk");
	parse_opts(w, argc, argv);
	load_inputs(w);
	open_output(w);
	for (size_t i = 0; i < w->nsegs; i++)
		walk_segment(w, &w->segs[i], w->log);
	check(ptgen_finish(w->gen), "packet generation");
	if (fclose(w->expected))
		synth_die("cannot write expected.insn");
	write_perf_data(w, argc, argv);
	if (w->kcore) {
		write_kcore(w);
	} else {
		write_text(w);
		copy_bpf_dir(w);
	}
	used = log_used_rows(w);
	fclose(w->log);
	synth_write_cmd(create_file(w->out, "cmd"), argc, argv);
	ptgen_get_stats(w->gen, &gs);
	write_info(w, &gs, used);
	fprintf(stderr, "ptsynth walk: %zu segments, %" PRIu64 " instructions, %" PRIu64
		" trace bytes -> %s\n", w->nsegs, w->ninsns, gs.bytes, w->out);
	free_walk(w);
	return 0;
}
