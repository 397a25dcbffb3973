/* SPDX-License-Identifier: MIT */
/*
 * cursorbench TRACE [N] - the trace index and cursor's costs on one trace:
 * a linear decode (ptd_next, and count-only blocks as --stats decodes),
 * the index build and the process's peak RSS after it, then medians of N
 * random seeks, steps back, call stacks (with symbols and lines) and
 * whole-thread searches for an address never executed, the search's
 * speed against the linear ptd_next decode.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <ptdecode.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
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

int main(int argc, char **argv)
{
	struct ptd_open_opts co = { .sz = sizeof(co), .flags = PTD_OPEN_COUNT_ONLY };
	int n = argc > 2 ? atoi(argv[2]) : 200, i;
	struct ptd_session *s;
	struct ptd_index *ix;
	struct ptd_cursor *c;
	struct ptd_index_thread it = { 0 };
	struct ptd_event ev;
	struct ptd_frame fr[256];
	double t, tlin, tcount, tbuild, *v;
	uint64_t insns = 0;
	const struct ptd_block *b;
	size_t nb, k, nf;
	int have;
	long rss0;

	if (argc < 2 || n < 1) {
		fprintf(stderr, "usage: cursorbench TRACE [N]\n");
		return 2;
	}
	v = calloc((size_t)n, sizeof(*v));
	/* count-only blocks (what --stats decodes) */
	if (ptd_open(&s, argv[1], &co) < 0) {
		fprintf(stderr, "cursorbench: %s\n", ptd_errmsg(s));
		return 1;
	}
	t = now();
	while (ptd_next_blocks(s, &b, &nb, &ev, &have) == 0)
		;
	tcount = now() - t;
	ptd_close(s);
	/* ptd_next, every instruction */
	ptd_open(&s, argv[1], NULL);
	t = now();
	while (ptd_next(s, &ev) == 0)
		insns += ev.kind == PTD_EV_INSN;
	tlin = now() - t;
	ptd_close(s);
	rss0 = peak_rss_mb();
	ptd_open(&s, argv[1], NULL);
	t = now();
	if (ptd_index_build(&ix, s, NULL) < 0) {
		fprintf(stderr, "cursorbench: %s\n", ptd_errmsg(s));
		return 1;
	}
	tbuild = now() - t;
	for (k = 0; k < ptd_index_thread_count(ix); k++) {
		struct ptd_index_thread x;

		ptd_index_thread(ix, k, &x);
		if (x.positions > it.positions)
			it = x;
	}
	printf("trace %s: %" PRIu64 " instructions; count-only decode %.3f s, "
	       "ptd_next decode %.3f s; index build %.3f s (%.2fx the count-only "
	       "decode), peak RSS %ld MB (%ld MB before)\n", argv[1], insns,
	       tcount, tlin, tbuild, tcount / tbuild, peak_rss_mb(), rss0);
	ptd_cursor_open(&c, ix, it.tid, NULL);
	for (i = 0; i < n; i++) {
		uint64_t p = rnd() % it.positions;

		t = now();
		ptd_cursor_seek_pos(c, p);
		v[i] = now() - t;
	}
	printf("thread %d, %" PRIu64 " positions: seek median %.1f us", it.tid,
	       it.positions, median(v, n) * 1e6);
	for (i = 0; i < n; i++) {
		ptd_cursor_seek_pos(c, rnd() % it.positions);
		t = now();
		ptd_cursor_step(c, -1);
		v[i] = now() - t;
	}
	printf(", step back %.2f us", median(v, n) * 1e6);
	for (i = 0; i < n; i++) {
		ptd_cursor_seek_pos(c, rnd() % it.positions);
		t = now();
		ptd_cursor_stack(c, fr, 256, &nf);
		v[i] = now() - t;
	}
	printf(", stack %.1f us", median(v, n) * 1e6);
	{
		struct ptd_addr_range none = { 1, 2 };
		struct ptd_find_opts f = { .sz = sizeof(f), .what = PTD_FIND_ADDR,
					   .ranges = &none, .nranges = 1 };
		unsigned int found;
		int m = n < 5 ? n : 5;

		for (i = 0; i < m; i++) {
			ptd_cursor_seek_pos(c, 0);
			t = now();
			while (ptd_cursor_find(c, &f, &found) == 0)
				;
			v[i] = now() - t;
		}
		t = median(v, m);
		printf(", whole-thread address search %.3f s (%.2fx the ptd_next "
		       "decode)\n", t, tlin / t);
	}
	ptd_cursor_close(c);
	ptd_index_free(ix);
	ptd_close(s);
	free(v);
	return 0;
}
