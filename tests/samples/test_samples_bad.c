/* SPDX-License-Identifier: MIT */
/*
 * Deferred callchains and bad input, built record by record: stitching in
 * time order (not file order), a cookie reused, a deferred record of
 * another thread or with an unknown cookie, a deferred part that never
 * comes, a callchain longer than its record, a deferred marker without a
 * cookie, a deferred record too short for its nr; guest and hypervisor
 * contexts.  The expectations are
 * written out here by hand; ptd_samples_* and `ptdecode --samples` must
 * count and flag each, and never fail.
 *
 * test_samples_bad OUTDIR PTDECODE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_abi.h"
#include "perfwrite.h"
#include "ptdecode.h"

static int fails;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, \
					  __LINE__, #c); fails++; } } while (0)

#define ID 7
#define PID 10
#define K1 0xffffffff81000010ull
#define ST (PD_SAMPLE_IDENTIFIER | PD_SAMPLE_IP | PD_SAMPLE_TID | PD_SAMPLE_TIME | \
	    PD_SAMPLE_CPU | PD_SAMPLE_CALLCHAIN | PD_SAMPLE_BRANCH_STACK)

static struct perfwrite *w;

static void add_attr(void)
{
	uint8_t a[128] = { 0 };
	uint32_t size = 128;
	uint64_t st = ST, id = ID, flags = PD_ATTR_FLAG_SAMPLE_ID_ALL |
		PD_ATTR_FLAG_DEFER_CALLCHAIN | PD_ATTR_FLAG_DEFER_OUTPUT, period = 1000;

	memcpy(a + PD_ATTR_OFF_SIZE, &size, 4);
	memcpy(a + PD_ATTR_OFF_SAMPLE_PERIOD, &period, 8);
	memcpy(a + PD_ATTR_OFF_SAMPLE_TYPE, &st, 8);
	memcpy(a + PD_ATTR_OFF_FLAGS, &flags, 8);
	CHECK(perfwrite_add_attr(w, a, &id, 1, "instructions") == 0);
}

/* A SAMPLE of thread tid: nr is written as given (it may claim more than
 * the n entries that follow), then nbr branch entries. */
static void sample(uint32_t tid, uint64_t time, uint64_t nr, const uint64_t *cc,
		   size_t n, size_t nbr)
{
	uint64_t r[64];
	size_t k = 0;

	r[k++] = 0;
	r[k++] = ID;
	r[k++] = K1;
	r[k++] = (uint64_t)tid << 32 | PID;
	r[k++] = time;
	r[k++] = 0;
	r[k++] = nr;
	for (size_t i = 0; i < n; i++)
		r[k++] = cc[i];
	r[k++] = nbr;
	for (size_t i = 0; i < nbr; i++) {
		r[k++] = 0x1000 + i;
		r[k++] = 0x2000 + i;
		r[k++] = 0;
	}
	r[0] = PD_RECORD_SAMPLE | (uint64_t)PD_MISC_KERNEL << 32 | (uint64_t)(k * 8) << 48;
	CHECK(perfwrite_record(w, r, k * 8) >= 0);
}

static void deferred(uint32_t tid, uint64_t time, uint64_t cookie, const uint64_t *ips,
		     size_t n)
{
	struct perfwrite_sid sid = { PID, tid, time, ID, 0, 0 };

	CHECK(perfwrite_callchain_deferred(w, &sid, cookie, ips, n) == 0);
}

/* A deferred record whose nr claims 50 entries and holds one. */
static void deferred_short(uint32_t tid, uint64_t time)
{
	uint64_t r[16];
	size_t k = 0;

	r[k++] = 0;
	r[k++] = 77;           /* cookie */
	r[k++] = 50;           /* nr */
	r[k++] = 0x400000;
	r[k++] = (uint64_t)tid << 32 | PID;   /* trailer: tid, time, cpu, id */
	r[k++] = time;
	r[k++] = 0;
	r[k++] = ID;
	r[0] = PD_RECORD_CALLCHAIN_DEFERRED | (uint64_t)PD_MISC_USER << 32 |
	       (uint64_t)(k * 8) << 48;
	CHECK(perfwrite_record(w, r, k * 8) >= 0);
}

static void write_file(const char *path)
{
	char err[256];
	const uint64_t def5[] = { PD_CONTEXT_KERNEL, K1, PD_CONTEXT_USER_DEFERRED, 5 };
	const uint64_t def6[] = { PD_CONTEXT_KERNEL, K1, PD_CONTEXT_USER_DEFERRED, 6 };
	const uint64_t nocookie[] = { PD_CONTEXT_KERNEL, K1, PD_CONTEXT_USER_DEFERRED };
	const uint64_t user[] = { PD_CONTEXT_USER, 0x401000, 0x402000 };
	const uint64_t u123[] = { 0x401111, 0x402222, 0x403333 }, u4[] = { 0x404444 };
	const uint64_t guest[] = { PD_CONTEXT_GUEST_KERNEL, 0xffffffff81000020ull,
				   PD_CONTEXT_GUEST_USER, 0x405555, PD_CONTEXT_HV, 0x1234 };

	CHECK(perfwrite_open(&w, path, err, sizeof(err)) == 0);
	add_attr();
	sample(PID, 100, 4, def5, 4, 0);              /* S1 */
	sample(PID, 105, 3, user, 3, 2);              /* S7: no deferral */
	deferred(PID, 120, 5, u123, 3);               /* D1: S1 and S2 */
	sample(PID, 110, 4, def5, 4, 0);              /* S2: before D1 in time */
	sample(PID, 130, 4, def5, 4, 0);              /* S3: cookie 5 again */
	deferred(PID, 140, 5, u4, 1);                 /* D2: reuses cookie 5 */
	sample(PID, 150, 4, def6, 4, 0);              /* S4: 6 never comes */
	deferred(PID, 160, 99, u4, 1);                /* D3: no sample has 99 */
	deferred(PID + 1, 170, 5, u4, 1);             /* D4: another thread's 5 */
	sample(PID, 180, 1000, def5, 4, 0);           /* S5: nr past the record */
	sample(PID, 190, 3, nocookie, 3, 0);          /* S6: marker, no cookie */
	deferred_short(PID, 200);                     /* D5: nr past the record */
	sample(PID, 210, 6, guest, 6, 0);             /* S8: guest and hv frames */
	CHECK(perfwrite_close(w, err, sizeof(err)) == 0);
}

static void check_sample(const struct ptd_sample *s, uint64_t time, uint32_t flags,
			 const uint64_t *cc, size_t n)
{
	CHECK(s->time == time);
	CHECK(s->flags == flags);
	CHECK(s->callchain_nr == n);
	CHECK(s->pid == PID && s->tid == PID && s->period == 1000);
	for (size_t i = 0; i < n && i < s->callchain_nr; i++)
		CHECK(s->callchain[i] == cc[i]);
	if (s->time != time || s->flags != flags || s->callchain_nr != n)
		fprintf(stderr, "  sample at %llu: flags %#x, %zu frames\n",
			(unsigned long long)s->time, s->flags, s->callchain_nr);
}

static void check_api(const char *path)
{
	const uint64_t s1[] = { K1, 0x401111, 0x402222, 0x403333 }, s3[] = { K1, 0x404444 };
	const uint64_t s4[] = { K1 }, s7[] = { 0x401000, 0x402000 };
	const uint64_t s8[] = { 0xffffffff81000020ull, 0x405555, 0x1234 };
	struct ptd_samples_stats st = { .sz = sizeof(st) };
	struct ptd_sample s = { .sz = sizeof(s) };
	struct ptd_samples *sp;
	int rc = ptd_samples_open(&sp, path, NULL);

	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "  %s\n", ptd_samples_errmsg(sp));
		ptd_samples_close(sp);
		return;
	}
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 100, PTD_SAMPLE_STITCHED, s1, 4);
	CHECK(s.cookie == 5 && s.deferred_time == 120);
	CHECK(!strcmp(s.event, "instructions"));
	CHECK(s.callchain_ctx[0] == PTD_FRAME_KERNEL && s.callchain_ctx[1] == PTD_FRAME_USER);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 105, 0, s7, 2);
	CHECK(s.nbranches == 2 && s.branches[1].from == 0x1001 && s.branches[1].to == 0x2001);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 110, PTD_SAMPLE_STITCHED, s1, 4);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 130, PTD_SAMPLE_STITCHED, s3, 2);
	CHECK(s.deferred_time == 140);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 150, PTD_SAMPLE_DEFERRED_MISSING, s4, 1);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 180, PTD_SAMPLE_CALLCHAIN_BAD, NULL, 0);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 190, PTD_SAMPLE_CALLCHAIN_BAD, NULL, 0);
	CHECK(ptd_samples_next(sp, &s) == 0);
	check_sample(&s, 210, 0, s8, 3);
	CHECK(s.callchain_ctx[0] == PTD_FRAME_GUEST_KERNEL &&
	      s.callchain_ctx[1] == PTD_FRAME_GUEST_USER && s.callchain_ctx[2] == PTD_FRAME_HV);
	CHECK(ptd_samples_next(sp, &s) == PTD_ERR_END);

	CHECK(ptd_samples_get_stats(sp, &st) == 0);
	CHECK(st.samples == 8 && st.callchains == 8);
	CHECK(st.deferred_samples == 4 && st.stitched == 3 && st.deferred_missing == 1);
	CHECK(st.deferred_records == 5 && st.deferred_unmatched == 2);
	CHECK(st.cookies_reused == 1 && st.callchains_bad == 2 && st.records_bad == 1);
	CHECK(st.branch_stacks == 7);
	CHECK(ptd_samples_warning_count(sp) == 5);
	ptd_samples_close(sp);

	/* a file that is no perf.data: an error with a message, no crash */
	CHECK(ptd_samples_open(&sp, "/dev/null", NULL) < 0 && ptd_samples_errmsg(sp)[0]);
	ptd_samples_close(sp);
}

/* A perf.data without a trace opens with PTD_OPEN_SIDEBAND_ONLY only:
 * no events, no queues. */
static void check_sideband_only(const char *path)
{
	struct ptd_open_opts o = { .sz = sizeof(o) };
	struct ptd_stats st = { .sz = sizeof(st) };
	struct ptd_session *s;
	struct ptd_event ev;

	CHECK(ptd_open(&s, path, &o) == PTD_ERR_NO_TRACE);
	ptd_close(s);
	o.flags = PTD_OPEN_SIDEBAND_ONLY;
	CHECK(ptd_open(&s, path, &o) == 0);
	CHECK(ptd_next(s, &ev) == PTD_ERR_END);
	CHECK(ptd_get_stats(s, &st) == 0 && st.queues == 0 && st.instructions == 0);
	ptd_close(s);
}

/* The CLI lists every sample and counts the losses; exit status 0. */
static void check_cli(const char *ptdecode, const char *path, const char *dir)
{
	char cmd[16384], line[512], out[4096];
	int found = 0;
	FILE *f;

	snprintf(out, sizeof(out), "%s/samples-bad.txt", dir);
	snprintf(cmd, sizeof(cmd), "%s --samples --stats -q %s > %s", ptdecode, path, out);
	CHECK(system(cmd) == 0);
	f = fopen(out, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f))
		found += !strcmp(line, "cookies reused: 1\n") ||
			 !strcmp(line, "deferred never came: 1\n") ||
			 !strcmp(line, "deferred records unmatched: 2\n") ||
			 !strcmp(line, "callchains bad: 2\n") ||
			 !strcmp(line, "records bad: 1\n");
	if (f)
		fclose(f);
	CHECK(found == 5);
}

int main(int argc, char **argv)
{
	char path[4096];

	if (argc < 3) {
		fprintf(stderr, "usage: %s OUTDIR PTDECODE\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/samples-bad.data", argv[1]);
	write_file(path);
	check_api(path);
	check_sideband_only(path);
	check_cli(argv[2], path, argv[1]);
	if (!fails)
		printf("ok: stitching, reused cookie, unmatched and missing deferred parts, "
		       "bad callchains counted and flagged\n");
	return fails ? 1 : 0;
}
