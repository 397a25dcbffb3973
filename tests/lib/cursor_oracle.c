/* cursor_oracle TRACE [SAMPLES [OPTION...]]: the trace index and cursor against a
 * linear decode of a second session on the same trace (the oracle).  The
 * linear decode records, per thread in order, every instruction (ip,
 * size, class, time, CPU, image version, bytes) and stop (error, gap,
 * overflow), and keeps its own call stack from the call/return sequence
 * (a call to the next instruction, call next; pop, makes no frame; on
 * x86 a system call or other instruction followed by another place is a
 * signal delivery, two frames: the interrupted one and the trampoline's;
 * a syscall after mov $15,%rax, rt_sigreturn, is a return).
 * The index's threads have the linear decode's first and last times.
 * At SAMPLES random positions the cursor (seek by position, instruction
 * number and time) must give the same instruction, time and stack
 * (call sites and return addresses, then one unknown frame); walks
 * forwards then backwards must return to the same positions; finds
 * (depth below, an address, a line change, a source line entered: a
 * line of the thread's own, from anywhere, found across the trace with
 * the pieces its addresses cannot be in passed) must stop where a linear
 * scan does (lines from ptd_source_line on a third session).
 * Options: need-stops (the trace must have stops), no-line-finds,
 * need-pieces (the index must be of pieces decoded again on demand),
 * index-file (the index is built and saved beside the trace, then read
 * back by a second session, whose index is the one checked), far-finds
 * (also searches for addresses anywhere in the thread and for one never
 * run: the pieces' code summaries skip most of the trace),
 * need-line-entries (line entry finds must have been checked: the
 * program has DWARF lines). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ptdecode.h>

struct rec {
	uint64_t ip, time;
	uint32_t image;
	int32_t cpu, depth;
	uint8_t size, iclass, stop;
};

struct thr {
	int32_t tid;
	struct rec *r;
	size_t n, cap;
	uint64_t *stk;        /* call ip, return address pairs */
	size_t ns, scap;
	int32_t depth;
	int pend_call;        /* the last instruction was a call */
	int pend_async;       /* ... one a signal may interrupt */
	uint64_t pend_ret;
	uint8_t pend_size;
	uint8_t prev_raw[15]; /* the last instruction's bytes and ip */
	uint64_t prev_ip;
	/* sampled stacks: position, offset into sv, length (pairs) */
	uint64_t *want;       /* sorted sample positions */
	size_t nwant, wi;
	uint64_t n2;          /* positions seen by the second pass */
	size_t *soff, *slen;
	uint64_t *sv;
	uint8_t (*raw)[15];   /* bytes at the samples */
	size_t nsv, svcap;
};

/* Return addresses of a signal delivery's frames carry these (user
 * addresses are below them). */
#define SIG_INTERRUPTED (1ull << 63)
#define SIG_TRAMP (1ull << 62)
#define SIG_BITS (SIG_INTERRUPTED | SIG_TRAMP)

/* rt_sigreturn: syscall (0f 05) right after mov $15,%rax, by the
 * decoder's instruction bytes. */
static int is_sigreturn(const struct thr *t, const struct ptd_event *ev)
{
	static const uint8_t mov[7] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0 };

	return ev->raw[0] == 0x0f && ev->raw[1] == 0x05 &&
	       t->prev_ip + 7 == ev->ip && !memcmp(t->prev_raw, mov, 7);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *xgrow(void *p, size_t *cap, size_t n, size_t esz)
{
	if (n <= *cap)
		return p;
	*cap = *cap ? *cap * 2 : 1024;
	if (*cap < n)
		*cap = n;
	p = realloc(p, *cap * esz);
	if (!p) {
		fprintf(stderr, "cursor_oracle: out of memory\n");
		exit(1);
	}
	return p;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int fails;
#define CHECK(cond, ...) do { if (!(cond)) { if (fails++ < 20) { \
	fprintf(stderr, "cursor_oracle: "); fprintf(stderr, __VA_ARGS__); \
	fputc('\n', stderr); } } } while (0)

static struct thr *th;
static size_t nth;

static struct thr *find_thr(int32_t tid)
{
	size_t k;

	for (k = 0; k < nth; k++)
		if (th[k].tid == tid)
			return &th[k];
	return NULL;
}

/* The oracle: every position of every thread, stacks at the samples. */
static int linear(const char *path, int with_samples)
{
	static int32_t lastq[4096];
	struct ptd_session *s;
	struct ptd_event ev;
	size_t k;
	int rc;

	for (k = 0; k < 4096; k++)
		lastq[k] = -1;
	if (ptd_open(&s, path, NULL) < 0) {
		fprintf(stderr, "cursor_oracle: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return -1;
	}
	while ((rc = ptd_next(s, &ev)) == 0) {
		int32_t tid = ev.tid;
		struct thr *t;
		struct rec *r;

		if (ev.kind != PTD_EV_INSN && ev.kind != PTD_EV_ERROR &&
		    ev.kind != PTD_EV_GAP && ev.kind != PTD_EV_OVERFLOW)
			continue;
		if (tid < 0 && ev.queue < 4096)
			tid = lastq[ev.queue];
		if (tid < 0)
			continue;
		if (ev.queue < 4096)
			lastq[ev.queue] = tid;
		t = find_thr(tid);
		if (!t) {
			if (with_samples)
				continue;
			th = xgrow(th, &(size_t){nth}, nth + 1, sizeof(*th));
			t = &th[nth++];
			memset(t, 0, sizeof(*t));
			t->tid = tid;
		}
		/* A call counts once the next instruction shows it was not a
		 * call to the next instruction (call next; pop), which makes
		 * no frame; a call followed by a stop counts. */
		if (t->pend_call && (ev.kind != PTD_EV_INSN || ev.ip != t->pend_ret)) {
			t->stk = xgrow(t->stk, &t->scap, t->ns + 2, sizeof(uint64_t));
			t->stk[t->ns++] = t->pend_ret - t->pend_size;
			t->stk[t->ns++] = t->pend_ret;
			t->depth++;
		}
		if (t->pend_async && ev.kind == PTD_EV_INSN && ev.ip != t->pend_ret) {
			/* the interrupted frame, then the trampoline's */
			t->stk = xgrow(t->stk, &t->scap, t->ns + 4, sizeof(uint64_t));
			t->stk[t->ns++] = t->pend_ret - t->pend_size;
			t->stk[t->ns++] = t->pend_ret | SIG_INTERRUPTED;
			t->stk[t->ns++] = t->pend_ret - t->pend_size;
			t->stk[t->ns++] = t->pend_ret | SIG_TRAMP;
			t->depth += 2;
		}
		t->pend_call = t->pend_async = 0;
		if (with_samples) {
			uint64_t pos = t->n2++;

			while (t->wi < t->nwant && t->want[t->wi] == pos) {
				memcpy(t->raw[t->wi], ev.raw, 15);
				t->soff[t->wi] = t->nsv;
				t->slen[t->wi] = t->ns / 2;
				t->sv = xgrow(t->sv, &t->svcap, t->nsv + t->ns,
					      sizeof(uint64_t));
				if (t->ns)   /* t->stk may still be NULL */
					memcpy(t->sv + t->nsv, t->stk, t->ns * sizeof(uint64_t));
				t->nsv += t->ns;
				t->wi++;
			}
		} else {
			t->r = xgrow(t->r, &t->cap, t->n + 1, sizeof(*t->r));
			r = &t->r[t->n++];
			memset(r, 0, sizeof(*r));
			r->ip = ev.ip;
			r->time = ev.flags & PTD_EVF_TIME_VALID ? ev.time : 0;
			r->depth = t->depth;
			r->stop = ev.kind != PTD_EV_INSN;
			if (!r->stop) {
				r->image = ev.image;
				r->cpu = ev.cpu;
				r->size = ev.size;
				r->iclass = ev.iclass;
			}
		}
		if (ev.kind != PTD_EV_INSN)
			continue;
		if (ev.iclass == PTD_IC_CALL || ev.iclass == PTD_IC_IND_CALL) {
			t->pend_call = 1;
			t->pend_ret = ev.ip + ev.size;
			t->pend_size = ev.size;
		} else if (ev.iclass == PTD_IC_RETURN ||
			   (ev.iclass == PTD_IC_FAR_CALL && is_sigreturn(t, &ev))) {
			if (t->ns)
				t->ns -= 2;
			t->depth--;
		} else if ((ev.iclass == PTD_IC_FAR_CALL || ev.iclass == PTD_IC_OTHER) &&
			   (ev.mode == PTD_MODE_16 || ev.mode == PTD_MODE_32 ||
			    ev.mode == PTD_MODE_64)) {
			t->pend_async = 1;
			t->pend_ret = ev.ip + ev.size;
			t->pend_size = ev.size;
		}
		memcpy(t->prev_raw, ev.raw, sizeof(t->prev_raw));
		t->prev_ip = ev.ip;
	}
	ptd_close(s);
	for (k = 0; k < nth; k++) {
		th[k].ns = 0;
		th[k].depth = 0;
		th[k].pend_call = th[k].pend_async = 0;
		th[k].prev_ip = 0;
	}
	if (rc != PTD_ERR_END) {
		fprintf(stderr, "cursor_oracle: linear decode failed: %d\n", rc);
		return -1;
	}
	return 0;
}

/* Source lines for the line finds' oracle: ptd_source_line on a session
 * of its own, cached by address (the fixtures' code has one version). */
static struct ptd_session *lines_s;
static struct lcache { uint64_t ip; int have; unsigned int line; char file[256]; } lcache[4096];

static int line_at(const struct rec *r, int32_t pid, const char **file,
		   unsigned int *line)
{
	struct lcache *e = &lcache[(r->ip ^ (r->ip >> 12)) & 4095];

	if (r->stop)
		return 0;
	if (e->ip != r->ip || !e->have) {
		e->ip = r->ip;
		e->have = 1;
		if (ptd_source_line(lines_s, pid, r->ip, e->file, sizeof(e->file),
				    &e->line) || !e->line)
			e->line = 0;
	}
	*file = e->file;
	*line = e->line;
	return e->line != 0;
}

/* Does path name the file the user wrote (ptd_find_opts.file: the same,
 * or its last components)? */
static int names_file(const char *path, const char *want)
{
	size_t lp = strlen(path), lw = strlen(want);

	if (lp == lw)
		return !strcmp(path, want);
	return lp > lw && path[lp - lw - 1] == '/' && !strcmp(path + lp - lw, want);
}

/* Is r on file:line? */
static int rec_on(const struct rec *r, int32_t pid, const char *file,
		  unsigned int line)
{
	const char *f;
	unsigned int l;

	return line_at(r, pid, &f, &l) && l == line && names_file(f, file);
}

static int same_insn(const struct ptd_cursor_pos *p, const struct rec *r)
{
	if (r->stop)
		return p->stop && p->ev.ip == r->ip;
	return !p->stop && p->ev.ip == r->ip && p->ev.size == r->size &&
	       p->ev.iclass == r->iclass && p->ev.time == r->time &&
	       p->ev.cpu == r->cpu && p->ev.image == r->image &&
	       p->depth == r->depth;
}

int main(int argc, char **argv)
{
	struct ptd_session *s;
	struct ptd_index *ix;
	struct ptd_frame *fr = NULL;
	size_t nsamp = argc > 2 ? strtoul(argv[2], NULL, 0) : 2000, k, frcap = 0;
	uint64_t checked = 0, stacks = 0, walks = 0, finds = 0, total = 0;
	double t0, tbuild, tseek = 0, tstack = 0, tstep = 0;
	uint64_t nseek = 0, nstack = 0, nstep = 0, nfind = 0;
	double tfind = 0;
	uint64_t nstopchk = 0, linefinds = 0, farfinds = 0, lineentries = 0;
	uint64_t lpos[256];
	size_t nlpos;
	struct ptd_index_opts iopts = { .sz = sizeof(iopts) };
	struct ptd_index_stats ist = { .sz = sizeof(ist) };
	int opt_file = 0, opt_pieces = 0, opt_far = 0, opt_lines = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: cursor_oracle TRACE [SAMPLES]\n");
		return 2;
	}
	if (linear(argv[1], 0))
		return 1;
	for (k = 3; k < (size_t)argc; k++) {
		if (!strcmp(argv[k], "index-file"))
			opt_file = 1;
		else if (!strcmp(argv[k], "need-pieces"))
			opt_pieces = 1;
		else if (!strcmp(argv[k], "far-finds"))
			opt_far = 1;
		else if (!strcmp(argv[k], "need-line-entries"))
			opt_lines = 1;
	}
	iopts.trace = argv[1];
	iopts.flags = opt_file ? PTD_INDEX_FILE : 0;
	if (opt_file) {
		/* a stale file from an earlier run must not be reused */
		char f[4096];

		snprintf(f, sizeof(f), "%s.ptdidx", argv[1]);
		remove(f);
	}
	for (k = 0; k < (opt_file ? 2u : 1u); k++) {
		if (k) {
			ptd_index_free(ix);
			ptd_close(s);
		}
		if (ptd_open(&s, argv[1], NULL) < 0) {
			fprintf(stderr, "cursor_oracle: %s\n", ptd_errmsg(s));
			return 1;
		}
		t0 = now();
		if (ptd_index_build(&ix, s, &iopts) < 0) {
			fprintf(stderr, "cursor_oracle: index: %s\n", ptd_errmsg(s));
			return 1;
		}
		tbuild = now() - t0;
		ist.sz = sizeof(ist);
		ptd_index_get_stats(ix, &ist);
		printf("cursor_oracle: index %s: %" PRIu64 " pieces, %" PRIu64
		       " bytes for %" PRIu64 " instructions, %s%s%s%s\n",
		       k ? "read back" : "built", ist.pieces, ist.bytes,
		       ist.instructions, ist.redecoded ? "pieces decoded on demand" :
		       "threads kept whole", ist.saved ? ", saved" : "",
		       ist.loaded ? ", read from its file" : "",
		       ist.file_error ? ist.file_error : "");
		if (opt_file)
			CHECK(k ? ist.loaded : ist.saved, "index file not %s: %s",
			      k ? "read" : "saved",
			      ist.file_error ? ist.file_error : "?");
	}
	if (opt_pieces)
		CHECK(ist.redecoded, "the index keeps threads whole");
	CHECK(ptd_index_thread_count(ix) == nth, "threads: index %zu, linear %zu",
	      ptd_index_thread_count(ix), nth);
	for (k = 0; k < nth; k++) {
		struct ptd_index_thread it;
		struct thr *t = &th[k];
		uint64_t j;

		ptd_index_thread(ix, k, &it);
		CHECK(it.tid == t->tid && it.positions == t->n,
		      "thread %d: index %" PRIu64 " positions, linear %zu",
		      t->tid, it.positions, t->n);
		CHECK(!t->n || (it.first_time == t->r[0].time &&
				it.last_time == t->r[t->n - 1].time),
		      "thread %d: index times %" PRIu64 "..%" PRIu64
		      ", linear %" PRIu64 "..%" PRIu64, t->tid, it.first_time,
		      it.last_time, t->n ? t->r[0].time : 0,
		      t->n ? t->r[t->n - 1].time : 0);
		total += t->n;
		for (j = 1; j < t->n; j++)
			if (t->r[j].time && t->r[j].time < t->r[j - 1].time)
				CHECK(0, "thread %d: time goes back at %" PRIu64,
				      t->tid, j);
	}
	/* Sample positions per thread, then the oracle's stacks there. */
	for (k = 0; k < nth; k++) {
		struct thr *t = &th[k];
		size_t m = (size_t)((double)nsamp * t->n / (total ? total : 1)) + 1;

		t->want = calloc(m, sizeof(uint64_t));
		t->soff = calloc(m, sizeof(size_t));
		t->slen = calloc(m, sizeof(size_t));
		t->raw = calloc(m, 15);
		for (t->nwant = 0; t->nwant < m && t->n; t->nwant++)
			t->want[t->nwant] = rnd() % t->n;
		qsort(t->want, t->nwant, sizeof(uint64_t), cmp64);
	}
	if (linear(argv[1], 1))
		return 1;
	/* no-line-finds: see tests/lib/CMakeLists.txt */
	if (argc > 3 && !strcmp(argv[3], "no-line-finds"))
		lines_s = NULL;
	else if (ptd_open(&lines_s, argv[1], NULL) < 0) {
		ptd_close(lines_s);
		lines_s = NULL;
	}
	for (k = 0; k < nth; k++) {
		struct thr *t = &th[k];
		struct ptd_cursor *c;
		struct ptd_cursor_pos p;
		uint64_t insn = 0, j, *insn_of = calloc(t->n + 1, sizeof(uint64_t));
		size_t w;

		if (!t->n)
			continue;
		for (j = 0; j < t->n; j++) {
			insn_of[j] = insn;
			insn += !t->r[j].stop;
		}
		struct ptd_index_thread ti;
		int32_t pid;

		ptd_index_thread(ix, k, &ti);
		pid = ti.pid;
		if (ptd_cursor_open(&c, ix, t->tid, NULL)) {
			CHECK(0, "cannot open a cursor on thread %d", t->tid);
			continue;
		}
		/* Every stop: a position of its own, where searches stop. */
		for (j = 0; j < t->n; j++) {
			struct ptd_find_opts fo = { .sz = sizeof(fo), .what = PTD_FIND_ADDR };
			struct ptd_addr_range none = { 1, 2 };
			unsigned int found;
			uint64_t from;

			if (!t->r[j].stop)
				continue;
			ptd_cursor_seek_pos(c, j);
			ptd_cursor_get(c, &p);
			CHECK(p.stop && p.pos == j && p.ev.msg && p.ev.msg[0] &&
			      p.insn == insn_of[j],
			      "thread %d: stop at pos %" PRIu64 " not reported", t->tid, j);
			from = j > 100 ? j - 100 : 0;
			fo.ranges = &none;
			fo.nranges = 1;
			ptd_cursor_seek_pos(c, from);
			if (from < j) {
				ptd_cursor_find(c, &fo, &found);
				ptd_cursor_get(c, &p);
				CHECK(found == PTD_FIND_STOP && p.pos == j,
				      "find from %" PRIu64 " passed the stop at %" PRIu64,
				      from, j);
			}
			nstopchk++;
		}
		for (w = 0; w < t->nwant; w++) {
			uint64_t pos = t->want[w];
			const struct rec *r = &t->r[pos];
			size_t nf, f;
			double a;

			a = now();
			if (ptd_cursor_seek_pos(c, pos)) {
				CHECK(0, "seek_pos %" PRIu64 " failed", pos);
				continue;
			}
			tseek += now() - a;
			nseek++;
			ptd_cursor_get(c, &p);
			CHECK(p.pos == pos && same_insn(&p, r),
			      "thread %d pos %" PRIu64 ": cursor ip %#" PRIx64
			      " time %" PRIu64 ", linear ip %#" PRIx64 " time %" PRIu64,
			      t->tid, pos, p.ev.ip, p.ev.time, r->ip, r->time);
			CHECK(r->stop || !memcmp(p.ev.raw, t->raw[w], r->size),
			      "thread %d pos %" PRIu64 ": code bytes differ", t->tid, pos);
			checked++;
			if (!r->stop) {
				ptd_cursor_seek_insn(c, insn_of[pos]);
				ptd_cursor_get(c, &p);
				CHECK(p.pos == pos && p.insn == insn_of[pos],
				      "seek_insn %" PRIu64 " gave pos %" PRIu64
				      ", want %" PRIu64, insn_of[pos], p.pos, pos);
			}
			if (r->time) {
				uint64_t lo = 0, hi = t->n;

				while (lo < hi) { /* first position at/after r->time */
					uint64_t mid = lo + (hi - lo) / 2;

					if (t->r[mid].time < r->time)
						lo = mid + 1;
					else
						hi = mid;
				}
				ptd_cursor_seek_time(c, r->time);
				ptd_cursor_get(c, &p);
				CHECK(p.pos == lo, "seek_time %" PRIu64 " gave pos %"
				      PRIu64 ", want %" PRIu64, r->time, p.pos, lo);
			}
			/* The stack at pos. */
			ptd_cursor_seek_pos(c, pos);
			a = now();
			ptd_cursor_stack(c, NULL, 0, &nf);
			fr = xgrow(fr, &frcap, nf, sizeof(*fr));
			ptd_cursor_stack(c, fr, nf, &nf);
			tstack += now() - a;
			nstack++;
			CHECK(nf == t->slen[w] + 2 &&
			      (fr[nf - 1].flags & PTD_FRAME_BEFORE_TRACE),
			      "thread %d pos %" PRIu64 ": %zu frames, linear stack %zu + 2",
			      t->tid, pos, nf, t->slen[w]);
			if (t->slen[w]) {
				const uint64_t *e = &t->sv[t->soff[w] + 2 * (t->slen[w] - 1)];

				/* in the trampoline once the handler returned */
				CHECK(!(fr[0].flags & PTD_FRAME_SIGNAL) ==
				      !(e[1] & SIG_INTERRUPTED),
				      "thread %d pos %" PRIu64 ": frame 0 flags %#x",
				      t->tid, pos, fr[0].flags);
			}
			for (f = 0; f + 2 <= nf && f < t->slen[w]; f++) {
				const uint64_t *e = &t->sv[t->soff[w] + 2 * (t->slen[w] - 1 - f)];
				uint64_t ret = e[1] & ~SIG_BITS;
				/* the caller's pc: its call; the trampoline's
				 * unknown; an interrupted frame's where it
				 * resumes */
				uint64_t pc = e[1] & SIG_TRAMP ? 0 :
					      e[1] & SIG_INTERRUPTED ? ret : e[0];

				CHECK(fr[f].call_site == e[0] && fr[f].return_addr == ret &&
				      (fr[f].flags & PTD_FRAME_HAS_CALL) &&
				      fr[f + 1].pc == pc &&
				      !(fr[f + 1].flags & PTD_FRAME_SIGNAL) == !(e[1] & SIG_TRAMP),
				      "thread %d pos %" PRIu64 " frame %zu: call %#" PRIx64
				      " ret %#" PRIx64 ", linear %#" PRIx64 " %#" PRIx64,
				      t->tid, pos, f, fr[f].call_site, fr[f].return_addr,
				      e[0], e[1]);
			}
			stacks++;
			/* Forwards then backwards. */
			if (w % 8 == 0) {
				uint64_t seen[64];
				int n = 0, i;

				a = now();
				for (i = 0; i < 64; i++) {
					ptd_cursor_get(c, &p);
					seen[n++] = p.pos;
					CHECK(same_insn(&p, &t->r[p.pos]), "walk: pos %"
					      PRIu64 " differs", p.pos);
					if (ptd_cursor_step(c, 1))
						break;
				}
				ptd_cursor_get(c, &p);
				if (p.pos != seen[n - 1]) /* stepped past it */
					ptd_cursor_step(c, -1);
				for (i = n - 1; i >= 0; i--) {
					if (i < n - 1)
						ptd_cursor_step(c, -1);
					ptd_cursor_get(c, &p);
					CHECK(p.pos == seen[i] && same_insn(&p, &t->r[p.pos]),
					      "walk back: pos %" PRIu64 ", want %" PRIu64,
					      p.pos, seen[i]);
				}
				tstep += now() - a;
				nstep += 2 * (uint64_t)n;
				walks++;
			}
			/* Line finds against a linear scan of ptd_source_line. */
			if (w % 16 == 2 && lines_s) {
				struct ptd_find_opts fo = { .sz = sizeof(fo) };
				const char *f0 = NULL, *fq;
				char f0c[256];
				unsigned int l0 = 0, lq, found;
				uint64_t q, want = UINT64_MAX, lim = 200000;
				int back = (int)(rnd() & 1), rc, has0;

				has0 = line_at(r, pid, &f0, &l0);
				snprintf(f0c, sizeof(f0c), "%s", has0 ? f0 : "");
				fo.what = PTD_FIND_LINE_CHANGE;
				fo.backward = back;
				for (q = pos; lim-- && (back ? q-- > 0 : ++q < t->n);) {
					if (t->r[q].stop || (line_at(&t->r[q], pid, &fq, &lq) &&
							     (!has0 || lq != l0 || strcmp(fq, f0c)))) {
						want = q;
						break;
					}
				}
				if (lim != (uint64_t)-1) {
					ptd_cursor_seek_pos(c, pos);
					rc = ptd_cursor_find(c, &fo, &found);
					ptd_cursor_get(c, &p);
					if (want == UINT64_MAX)
						CHECK(rc == PTD_ERR_END && p.pos == (back ? 0 : t->n - 1),
						      "line change from %" PRIu64 ": pos %" PRIu64
						      ", want the end", pos, p.pos);
					else {
						const char *fa = "";
						unsigned int la = 0;

						line_at(&t->r[p.pos], pid, &fa, &la);
						CHECK(rc == 0 && p.pos == want,
						      "line change %s from %" PRIu64 " (line %u): pos %"
						      PRIu64 " %#" PRIx64 " (%s:%u), want %" PRIu64,
						      back ? "back" : "fwd", pos, l0, p.pos,
						      t->r[p.pos].ip, fa, la, want);
					}
					linefinds++;
				}
			}
			/* Finds against a linear scan. */
			if (w % 4 == 0) {
				struct ptd_find_opts fo = { .sz = sizeof(fo) };
				struct ptd_addr_range ar;
				/* a target near pos: linear scans stay short */
				uint64_t near = pos + rnd() % 4096;
				const struct rec *o = &t->r[near >= 2048 && near - 2048 < t->n ?
							   near - 2048 : rnd() % t->n];
				unsigned int found;
				uint64_t q, want = UINT64_MAX;
				int back = (int)(rnd() & 1), rc;

				ptd_cursor_seek_pos(c, pos);
				fo.backward = back;
				if (w % 32 == 0) {
					fo.what = PTD_FIND_DEPTH_BELOW;
				} else {
					fo.what = PTD_FIND_ADDR;
					ar.start = o->ip;
					ar.end = o->ip + 1;
					fo.ranges = &ar;
					fo.nranges = 1;
				}
				for (q = pos; back ? q-- > 0 : ++q < t->n;) {
					const struct rec *x = &t->r[q];

					if (x->stop || (fo.what == PTD_FIND_ADDR ?
							x->ip == o->ip : x->depth < r->depth)) {
						want = q;
						break;
					}
				}
				a = now();
				rc = ptd_cursor_find(c, &fo, &found);
				tfind += now() - a;
				ptd_cursor_get(c, &p);
				nfind += p.pos > pos ? p.pos - pos : pos - p.pos;
				if (want == UINT64_MAX)
					CHECK(rc == PTD_ERR_END && !found &&
					      p.pos == (back ? 0 : t->n - 1),
					      "find from %" PRIu64 ": rc %d pos %" PRIu64
					      ", want the end", pos, rc, p.pos);
				else
					CHECK(rc == 0 && found && p.pos == want,
					      "find %u %s from %" PRIu64 ": rc %d pos %"
					      PRIu64 ", want %" PRIu64, fo.what,
					      back ? "back" : "fwd", pos, rc, p.pos, want);
				finds++;
			}
		}
		/* Far finds: an address set from anywhere in the thread (two
		 * instructions' addresses, one of them a rare one: what the
		 * thread ran only once or twice at the start of a range), and
		 * one never run, from random positions, both ways. */
		for (w = 0; opt_far && w < 40 && t->n; w++) {
			struct ptd_find_opts fo = { .sz = sizeof(fo), .what = PTD_FIND_ADDR };
			struct ptd_addr_range ar[2];
			uint64_t pos = rnd() % t->n, q, want = UINT64_MAX;
			const struct rec *o1 = &t->r[rnd() % t->n];
			const struct rec *o2 = &t->r[rnd() % t->n];
			int back = (int)(w & 1), rc;
			unsigned int found;

			ar[0].start = o1->ip;
			ar[0].end = o1->ip + 1;
			ar[1].start = o2->ip;
			ar[1].end = o2->ip + 1;
			if (w % 4 >= 2 || o1->stop || o2->stop) {
				ar[0].start = ar[1].start = 1;  /* never run */
				ar[0].end = ar[1].end = 2;
			}
			for (q = pos; back ? q-- > 0 : ++q < t->n;) {
				const struct rec *x = &t->r[q];

				if (x->stop || (x->ip >= ar[0].start && x->ip < ar[0].end) ||
				    (x->ip >= ar[1].start && x->ip < ar[1].end)) {
					want = q;
					break;
				}
			}
			fo.backward = back;
			fo.ranges = ar;
			fo.nranges = 2;
			ptd_cursor_seek_pos(c, pos);
			rc = ptd_cursor_find(c, &fo, &found);
			ptd_cursor_get(c, &p);
			if (want == UINT64_MAX)
				CHECK(rc == PTD_ERR_END && !found &&
				      p.pos == (back ? 0 : t->n - 1),
				      "far find from %" PRIu64 ": rc %d pos %" PRIu64
				      ", want the end", pos, rc, p.pos);
			else
				CHECK(rc == 0 && found && p.pos == want,
				      "far find %s from %" PRIu64 ": rc %d pos %" PRIu64
				      ", want %" PRIu64, back ? "back" : "fwd", pos, rc,
				      p.pos, want);
			/* the stack where it stopped: from the pieces' summaries */
			if (!p.stop && t->nwant) {
				size_t nf;

				ptd_cursor_stack(c, NULL, 0, &nf);
				CHECK(p.depth == t->r[p.pos].depth,
				      "far find: depth %d at %" PRIu64 ", want %d",
				      p.depth, p.pos, t->r[p.pos].depth);
			}
			farfinds++;
		}
		/* Line entries: a line the thread runs somewhere (by its
		 * path, or its last component), searched from anywhere both
		 * ways, against a scan of every position. */
		nlpos = 0;
		for (j = 0; lines_s && j < t->n && nlpos < 256; j += 1 + t->n / 4096) {
			const char *lf;
			unsigned int line;
			uint64_t q = (j + rnd() % (1 + t->n / 4096)) % t->n;

			if (line_at(&t->r[q], pid, &lf, &line))
				lpos[nlpos++] = q;
		}
		for (w = 0; nlpos && w < 24; w++) {
			struct ptd_find_opts fo = { .sz = sizeof(fo), .what = PTD_FIND_LINE };
			uint64_t pos = rnd() % t->n, q, want = UINT64_MAX;
			const char *lf = NULL, *slash;
			char file[256];
			unsigned int line = 0, found;
			int back = (int)(w & 1), rc;

			line_at(&t->r[lpos[rnd() % nlpos]], pid, &lf, &line);
			slash = strrchr(lf, '/');
			snprintf(file, sizeof(file), "%s", w % 4 >= 2 && slash ? slash + 1 : lf);
			for (q = pos; back ? q-- > 0 : ++q < t->n;)
				if (t->r[q].stop ||
				    (rec_on(&t->r[q], pid, file, line) &&
				     (!q || !rec_on(&t->r[q - 1], pid, file, line)))) {
					want = q;
					break;
				}
			fo.backward = back;
			fo.file = file;
			fo.line = line;
			ptd_cursor_seek_pos(c, pos);
			rc = ptd_cursor_find(c, &fo, &found);
			ptd_cursor_get(c, &p);
			if (want == UINT64_MAX)
				CHECK(rc == PTD_ERR_END && !found &&
				      p.pos == (back ? 0 : t->n - 1),
				      "line find %s:%u from %" PRIu64 ": rc %d pos %"
				      PRIu64 ", want the end", file, line, pos, rc, p.pos);
			else
				CHECK(rc == 0 && p.pos == want &&
				      found == (t->r[want].stop ? PTD_FIND_STOP : PTD_FIND_LINE),
				      "line find %s:%u %s from %" PRIu64 ": rc %d pos %"
				      PRIu64 " found %u, want %" PRIu64, file, line,
				      back ? "back" : "fwd", pos, rc, p.pos, found, want);
			lineentries++;
		}
		ptd_cursor_close(c);
		free(insn_of);
	}
	printf("cursor_oracle: %zu threads, %" PRIu64 " positions; checked %"
	       PRIu64 " positions, %" PRIu64 " stacks, %" PRIu64 " walks, %"
	       PRIu64 " finds, %" PRIu64 " line finds, %" PRIu64 " line entry finds, %"
	       PRIu64 " far finds; index built in %.3f s; mean seek %.1f us, "
	       "stack %.1f us, step %.2f us, find %.1f ns a position; "
	       "%d failures\n",
	       nth, total, checked, stacks, walks, finds, linefinds, lineentries,
	       farfinds, tbuild,
	       nseek ? tseek / nseek * 1e6 : 0.0,
	       nstack ? tstack / nstack * 1e6 : 0.0,
	       nstep ? tstep / nstep * 1e6 : 0.0,
	       nfind ? tfind / nfind * 1e9 : 0.0, fails);
	if (opt_lines)
		CHECK(lineentries >= 20, "only %" PRIu64 " line entry finds checked "
		      "(no DWARF lines?)", lineentries);
	if (argc > 3 && !strcmp(argv[3], "need-stops")) {
		uint64_t nstops = 0;

		for (k = 0; k < ptd_index_thread_count(ix); k++) {
			struct ptd_index_thread it;

			ptd_index_thread(ix, k, &it);
			nstops += it.stops;
		}
		printf("cursor_oracle: %" PRIu64 " stops, %" PRIu64 " checked\n",
		       nstops, nstopchk);
		CHECK(nstops > 0, "the damaged trace decoded without errors");
	}
	ptd_index_free(ix);
	ptd_close(s);
	ptd_close(lines_s);
	free(fr);
	return fails ? 1 : 0;
}
