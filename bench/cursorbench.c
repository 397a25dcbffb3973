/* SPDX-License-Identifier: MIT */
/*
 * cursorbench TRACE [N] - the trace index and cursor's costs on one trace
 * (bench/run cursor runs it; numbers in bench/RESULTS.md):
 *   - a count-only linear decode (what ptdecode --stats does) and, with
 *     CURSORBENCH_NEXT=1, a ptd_next decode of every instruction;
 *   - the index build (its threads: the session's, one per CPU) saving
 *     it beside the trace (TRACE.ptdidx), the index's size against the
 *     trace's bytes, the peak RSS after it; reading it back;
 *   - medians of N random seeks to an instruction number, steps back
 *     (right after a seek), call stacks with symbols and lines at random points, and
 *     (N / 10, at least 5) whole-thread searches for an address the
 *     trace never runs (a breakpoint that is never hit: the whole trace
 *     is searched), against the linear decode;
 *   - with CURSORBENCH_LINE=FILE:LINE, as many whole-thread searches for
 *     where that source line is entered (forwards from the first
 *     position, backwards from the last, each to the end of the thread);
 *   - with CURSORBENCH_NO_COUNT=1, no count-only decode (the peak RSS is
 *     then the index build's and the cursor's alone).
 * Prints one "name value" line per number (bench/run reads them).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <ptdecode.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* this thread's CPU time: what a seek costs when the machine is busy */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return v[n / 2];
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static long peak_rss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

static void fail(const char *what, struct ptd_session *s)
{
	fprintf(stderr, "cursorbench: %s: %s\n", what, s ? ptd_errmsg(s) : "");
	exit(1);
}

static struct ptd_index *build(const char *trace, struct ptd_session **s,
			       unsigned int flags, double *secs)
{
	struct ptd_index_opts io = { .sz = sizeof(io), .flags = flags, .trace = trace };
	struct ptd_index *ix;
	double t;

	if (ptd_open(s, trace, NULL) < 0)
		fail("open", *s);
	t = now();
	if (ptd_index_build(&ix, *s, &io) < 0)
		fail("index", *s);
	*secs = now() - t;
	return ix;
}

/* The median of n / 10 (at least 5) searches to the end of the thread,
 * forwards from its first position and backwards from its last in turn;
 * *hits (when asked): the last one's matches. */
static double whole_searches(struct ptd_cursor *c, struct ptd_find_opts *fo,
			     uint64_t positions, double *v, int n, unsigned int *hits)
{
	int m = n / 10 < 5 ? 5 : n / 10, i;
	unsigned int found, h = 0;
	double t;

	if (m > n)
		m = n;
	for (i = 0; i < m; i++) {
		fo->backward = i & 1;
		ptd_cursor_seek_pos(c, fo->backward ? positions - 1 : 0);
		h = 0;
		t = now();
		while (ptd_cursor_find(c, fo, &found) == 0)
			h += !!(found & fo->what & ~PTD_FIND_STOP);
		v[i] = now() - t;
	}
	if (hits)
		*hits = h;
	return median(v, m);
}

int main(int argc, char **argv)
{
	struct ptd_open_opts co = { .sz = sizeof(co), .flags = PTD_OPEN_COUNT_ONLY };
	int n = argc > 2 ? atoi(argv[2]) : 200, i;
	struct ptd_session *s;
	struct ptd_index *ix;
	struct ptd_cursor *c;
	struct ptd_index_thread it = { 0 };
	struct ptd_index_stats ist = { .sz = sizeof(ist) };
	struct ptd_stats st = { .sz = sizeof(st) };
	struct ptd_event ev;
	struct ptd_frame fr[256];
	double t, tcount, tbuild, tload, tsearch, *v;
	const struct ptd_block *b;
	size_t nb, k, nf;
	int have;
	long rss0;
	char f[4096];

	if (argc < 2 || n < 1) {
		fprintf(stderr, "usage: cursorbench TRACE [N]\n");
		return 2;
	}
	v = calloc((size_t)n, sizeof(*v));
	/* count-only blocks: what --stats decodes */
	if (ptd_open(&s, argv[1], &co) < 0)
		fail("open", s);
	t = now();
	while (!getenv("CURSORBENCH_NO_COUNT") &&
	       ptd_next_blocks(s, &b, &nb, &ev, &have) == 0)
		;
	tcount = now() - t;
	ptd_get_stats(s, &st);
	ptd_close(s);
	printf("instructions %" PRIu64 "\ntrace_bytes %" PRIu64 "\n"
	       "count_decode_s %.3f\n", st.instructions, st.trace_bytes, tcount);
	if (getenv("CURSORBENCH_NEXT")) {
		uint64_t insns = 0;

		if (ptd_open(&s, argv[1], NULL) < 0)
			fail("open", s);
		t = now();
		while (ptd_next(s, &ev) == 0)
			insns += ev.kind == PTD_EV_INSN;
		printf("next_decode_s %.3f\n", now() - t);
		ptd_close(s);
	}
	rss0 = peak_rss_mb();
	/* built (and saved beside the trace), then read back */
	snprintf(f, sizeof(f), "%s.ptdidx", argv[1]);
	remove(f);
	ix = build(argv[1], &s, PTD_INDEX_FILE, &tbuild);
	ptd_index_get_stats(ix, &ist);
	if (!ist.saved)
		fprintf(stderr, "cursorbench: not saved: %s\n",
			ist.file_error ? ist.file_error : "?");
	printf("build_s %.3f\nbuild_vs_count %.2f\npieces %" PRIu64 "\n"
	       "index_bytes %" PRIu64 "\nindex_bytes_per_insn %.5f\n"
	       "index_pct_of_trace %.2f\nredecoded %d\npeak_rss_mb %ld\n"
	       "peak_rss_before_mb %ld\n", tbuild, tcount / tbuild, ist.pieces,
	       ist.bytes, ist.instructions ? (double)ist.bytes / ist.instructions : 0,
	       st.trace_bytes ? 100.0 * ist.bytes / st.trace_bytes : 0,
	       ist.redecoded, peak_rss_mb(), rss0);
	ptd_index_free(ix);
	ptd_close(s);
	ix = build(argv[1], &s, PTD_INDEX_FILE, &tload);
	ptd_index_get_stats(ix, &ist);
	printf("load_s %.3f\nloaded %d\n", tload, ist.loaded);
	remove(f);
	for (k = 0; k < ptd_index_thread_count(ix); k++) {
		struct ptd_index_thread x;

		ptd_index_thread(ix, k, &x);
		if (x.instructions > it.instructions)
			it = x;
	}
	if (ptd_cursor_open(&c, ix, it.tid, NULL))
		fail("cursor", s);
	{
		double *u = calloc((size_t)n, sizeof(*u)), tc;

		for (i = 0; i < n; i++) {
			uint64_t p = rnd() % it.instructions;

			t = now();
			tc = cpu_now();
			if (ptd_cursor_seek_insn(c, p))
				fail("seek", s);
			u[i] = cpu_now() - tc;
			v[i] = now() - t;
		}
		printf("seek_ms %.3f\nseek_cpu_ms %.3f\n", median(v, n) * 1e3,
		       median(u, n) * 1e3);
		free(u);
	}
	for (i = 0; i < n; i++) {
		ptd_cursor_seek_insn(c, rnd() % it.instructions);
		t = now();
		ptd_cursor_step(c, -1);
		v[i] = now() - t;
	}
	printf("step_back_ms %.4f\n", median(v, n) * 1e3);
	for (i = 0; i < n; i++) {
		ptd_cursor_seek_insn(c, rnd() % it.instructions);
		t = now();
		ptd_cursor_stack(c, fr, 256, &nf);
		v[i] = now() - t;
	}
	printf("stack_ms %.3f\n", median(v, n) * 1e3);
	for (i = 0; i < n; i++) {
		t = now();
		ptd_cursor_seek_insn(c, rnd() % it.instructions);
		ptd_cursor_stack(c, fr, 256, &nf);
		v[i] = now() - t;
	}
	printf("seek_and_stack_ms %.3f\n", median(v, n) * 1e3);
	{
		struct ptd_addr_range none = { 0x10, 0x11 };
		struct ptd_find_opts fo = { .sz = sizeof(fo), .what = PTD_FIND_ADDR,
					    .ranges = &none, .nranges = 1 };

		tsearch = whole_searches(c, &fo, it.positions, v, n, NULL);
		printf("search_whole_ms %.3f\nsearch_vs_count %.1f\n", tsearch * 1e3,
		       tcount / tsearch);
	}
	if (getenv("CURSORBENCH_LINE") && strchr(getenv("CURSORBENCH_LINE"), ':')) {
		char file[512];
		struct ptd_find_opts fo = { .sz = sizeof(fo), .what = PTD_FIND_LINE,
					    .file = file };
		unsigned int hits;

		snprintf(file, sizeof(file), "%s", getenv("CURSORBENCH_LINE"));
		*strrchr(file, ':') = 0;
		fo.line = (unsigned int)atoi(strrchr(getenv("CURSORBENCH_LINE"), ':') + 1);
		tsearch = whole_searches(c, &fo, it.positions, v, n, &hits);
		printf("line_search_whole_ms %.3f\nline_search_hits %u\n"
		       "line_search_vs_count %.1f\n", tsearch * 1e3, hits,
		       tcount / tsearch);
	}
	printf("peak_rss_end_mb %ld\n", peak_rss_mb());
	ptd_cursor_close(c);
	ptd_index_free(ix);
	ptd_close(s);
	free(v);
	return 0;
}
