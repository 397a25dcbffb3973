/* SPDX-License-Identifier: MIT */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* time between redraws, ns */
#define REDRAW_NS 250000000ull

struct progress {
	const struct ptd_session *s;
	uint64_t start, delay, last_draw;  /* monotonic ns */
	size_t work;
	int shown;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct progress *progress_new(const struct ptd_session *s, int enabled)
{
	const char *d = getenv("PTDECODE_PROGRESS_DELAY_MS");
	struct progress *p;

	if (!enabled || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->s = s;
	p->start = now_ns();
	p->delay = (d && *d ? strtoull(d, NULL, 0) : 1000) * 1000000ull;
	return p;
}

static const char *const bytes_u[] = { " B", " kB", " MB", " GB", " TB" };
static const char *const count_u[] = { "", " k", " M", " G", " T" };

/* v to three significant digits and a unit from u (1, 10^3, ... 10^12). */
static void human(char *buf, size_t len, double v, const char *const u[5])
{
	int i = 0;

	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, "%.*f%s", i == 0 || v >= 100 ? 0 : v >= 10 ? 1 : 2, v, u[i]);
}

static void draw(struct progress *p, uint64_t t)
{
	struct ptd_stats st = { .sz = sizeof(st) };
	uint64_t done = 0, total = 0;
	double secs = (double)(t - p->start) / 1e9;
	char b_done[32], b_total[32], b_insn[32], b_rate[32], eta[32] = "";

	ptd_get_stats(p->s, &st);
	if (ptd_get_progress(p->s, &done, &total) == 0 && done > 0 && total > done) {
		double left = secs * (double)(total - done) / (double)done;

		snprintf(eta, sizeof(eta), ", %.0f s left", left);
	}
	human(b_done, sizeof(b_done), (double)done, bytes_u);
	human(b_total, sizeof(b_total), (double)total, bytes_u);
	human(b_insn, sizeof(b_insn), (double)st.instructions, count_u);
	human(b_rate, sizeof(b_rate), secs > 0 ? (double)st.instructions / secs : 0,
	      count_u);
	fprintf(stderr, "\rptdecode: %s of %s trace (%.0f%%), %s instructions, "
		"%s instructions/s%s\033[K", b_done, b_total,
		total ? 100.0 * (double)done / (double)total : 0.0, b_insn, b_rate, eta);
	fflush(stderr);
	p->shown = 1;
	p->last_draw = t;
}

void progress_tick(struct progress *p, size_t work)
{
	uint64_t t;

	if (!p || (p->work += work) < PROGRESS_RUN)
		return;
	p->work = 0;
	t = now_ns();
	if (t - p->start >= p->delay && (!p->shown || t - p->last_draw >= REDRAW_NS))
		draw(p, t);
}

void progress_end(struct progress *p)
{
	if (!p)
		return;
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	free(p);
}
