/* SPDX-License-Identifier: MIT */
#include "samples_view.h"
#include "callstacks.h"
#include "outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sv {
	const struct cli_opts *o;
	FILE *out;
	struct ptd_samples *sp;
	struct ptd_session *s;          /* symbols; NULL when it cannot open */
	int trace;                      /* s has a trace beside the samples */
	struct cs_probe *probes;        /* 2 per sample: at its time, and when
					 * its user part was unwound */
	size_t n;
	uint64_t checked, disagree, unchecked;
};

/* ---- opening -------------------------------------------------------- */

static int open_samples(struct sv *v)
{
	int rc = ptd_samples_open(&v->sp, v->o->input, NULL);

	if (!v->o->quiet)
		for (size_t i = 0; i < ptd_samples_warning_count(v->sp); i++)
			fprintf(stderr, "ptdecode: warning: %s\n", ptd_samples_warning(v->sp, i));
	if (rc < 0) {
		fprintf(stderr, "ptdecode: %s\n", v->sp ? ptd_samples_errmsg(v->sp)
							: ptd_strerror(rc));
		return -1;
	}
	return 0;
}

/* The trace beside the samples, if the input has one; without one, the
 * sideband still names the images and symbols. */
static int open_trace(struct sv *v)
{
	struct ptd_open_opts oo = v->o->open;
	struct ptd_stats st = { .sz = sizeof(st) };
	int rc;

	/* one timeline, so a thread's stack goes on from CPU to CPU */
	oo.flags &= ~(unsigned)(PTD_OPEN_COUNT_ONLY | PTD_OPEN_PER_QUEUE);
	oo.flags |= PTD_OPEN_SIDEBAND_ONLY;
	/* the stacks need the whole flow; --time selects samples */
	oo.time_start = oo.time_end = oo.max_insns = 0;
	rc = ptd_open(&v->s, v->o->input, &oo);
	if (rc == 0 && ptd_get_stats(v->s, &st) == 0 && !st.queues) {
		v->trace = 0;
		if (!v->o->check_callchains)
			return 0;
		fprintf(stderr, "ptdecode: --check-callchains needs a trace beside the "
			"samples: %s holds none (record with -e intel_pt// or "
			"-e cs_etm// as well)\n", v->o->input);
		return -1;
	}
	v->trace = rc == 0;
	if (!v->o->quiet)
		for (size_t i = 0; i < ptd_warning_count(v->s); i++)
			fprintf(stderr, "ptdecode: warning: %s\n", ptd_warning(v->s, i));
	if (rc < 0) {
		/* the samples list without it, unless the check needs it */
		if (v->o->check_callchains || !v->o->quiet)
			fprintf(stderr, "ptdecode: %s%s\n", v->o->check_callchains ?
				"--check-callchains needs the trace beside the samples: " :
				"warning: no symbols or trace stacks: ",
				v->s ? ptd_errmsg(v->s) : ptd_strerror(rc));
		ptd_close(v->s);
		v->s = NULL;
		return v->o->check_callchains ? -1 : 0;
	}
	return 0;
}

/* Decodes the flow once for every sample's two instants. */
static int trace_stacks(struct sv *v)
{
	struct ptd_sample smp = { .sz = sizeof(smp) };
	size_t i = 0;
	int rc;

	for (v->n = 0; ptd_samples_next(v->sp, &smp) == 0;)
		v->n++;
	ptd_samples_rewind(v->sp);
	v->probes = calloc(2 * v->n + 1, sizeof(*v->probes));
	if (!v->probes)
		return PTD_ERR_NOMEM;
	while (ptd_samples_next(v->sp, &smp) == 0) {
		v->probes[i].tid = v->probes[i + 1].tid = smp.tid;
		v->probes[i].time = smp.time;
		v->probes[i + 1].time = smp.flags & PTD_SAMPLE_STITCHED ?
					smp.deferred_time : smp.time;
		i += 2;
	}
	ptd_samples_rewind(v->sp);
	rc = callstacks_resolve(v->s, v->probes, 2 * v->n);
	if (rc != PTD_ERR_END) {
		fprintf(stderr, "ptdecode: decoding the trace for the call stacks: %s\n",
			rc == PTD_ERR_NOMEM ? ptd_strerror(rc) : ptd_errmsg(v->s));
		return rc;
	}
	return 0;
}

/* ---- the --samples view --------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	fputc('"', f);
}

static void json_addrs(FILE *f, const char *name, const uint64_t *a, size_t n)
{
	fprintf(f, ",\"%s\":[", name);
	for (size_t k = 0; k < n; k++)
		fprintf(f, "%s\"%#" PRIx64 "\"", k ? "," : "", a[k]);
	fputc(']', f);
}

static void sample_json(struct sv *v, const struct ptd_sample *smp, size_t idx)
{
	FILE *f = v->out;

	fprintf(f, "{\"type\":\"sample\",\"time\":%" PRIu64 ",\"cpu\":%d,\"pid\":%d,"
		"\"tid\":%d,\"ip\":\"%#" PRIx64 "\",\"period\":%" PRIu64 ",\"comm\":",
		smp->time, smp->cpu, smp->pid, smp->tid, smp->ip, smp->period);
	json_string(f, smp->comm);
	if (smp->event[0]) {
		fputs(",\"event\":", f);
		json_string(f, smp->event);
	}
	json_addrs(f, "callchain", smp->callchain, smp->callchain_nr);
	if (smp->flags & PTD_SAMPLE_STITCHED)
		fprintf(f, ",\"deferred\":{\"cookie\":%" PRIu64 ",\"time\":%" PRIu64 "}",
			smp->cookie, smp->deferred_time);
	if (smp->flags & PTD_SAMPLE_DEFERRED_MISSING)
		fprintf(f, ",\"deferred_missing\":true");
	if (smp->flags & PTD_SAMPLE_CALLCHAIN_BAD)
		fprintf(f, ",\"callchain_bad\":true");
	if (smp->flags & PTD_SAMPLE_CALLCHAIN_CORRUPT)
		fprintf(f, ",\"callchain_corrupt\":true");
	if (smp->nbranches) {
		fputs(",\"branches\":[", f);
		for (size_t k = 0; k < smp->nbranches; k++)
			fprintf(f, "%s{\"from\":\"%#" PRIx64 "\",\"to\":\"%#" PRIx64 "\"}",
				k ? "," : "", smp->branches[k].from, smp->branches[k].to);
		fputc(']', f);
	}
	if (v->probes && (v->probes[2 * idx].flags & CS_RESOLVED)) {
		json_addrs(f, "trace_stack", v->probes[2 * idx].frames, v->probes[2 * idx].n);
		if (v->probes[2 * idx].flags & CS_PARTIAL)
			fputs(",\"trace_stack_partial\":true", f);
	}
	fputs("}\n", f);
}

/* "\t    ADDR sym+off (image)" as perf script prints a callchain entry. */
static void frame_line(struct sv *v, int pid, uint64_t a)
{
	char sym[256] = "[unknown]";
	const char *img = NULL;
	uint64_t off = 0;

	if (v->s && ptd_symbolize(v->s, pid, a, sym, sizeof(sym), &off) == 0)
		snprintf(sym + strlen(sym), sizeof(sym) - strlen(sym), "+0x%" PRIx64, off);
	if (v->s)
		img = ptd_image_name(v->s, pid, a);
	if (img && !strncmp(img, "[kernel.kallsyms]", 17))
		img = "[kernel.kallsyms]";   /* perf's name for the map of "_text" */
	fprintf(v->out, "\t%16" PRIx64 " %s (%s)\n", a, sym, img && *img ? img : "[unknown]");
}

static void sample_text(struct sv *v, const struct ptd_sample *smp, size_t idx)
{
	FILE *f = v->out;

	fprintf(f, "%16s %6d/%-6d ", smp->comm[0] ? smp->comm : ":-1", smp->pid, smp->tid);
	if (smp->cpu >= 0)
		fprintf(f, "[%03d] ", smp->cpu);
	fprintf(f, "%5" PRIu64 ".%06" PRIu64 ": %10" PRIu64 " %s:\n",
		smp->time / 1000000000u, smp->time % 1000000000u / 1000u, smp->period,
		smp->event[0] ? smp->event : "sample");
	for (size_t k = 0; k < smp->callchain_nr; k++)
		frame_line(v, smp->callchain_ctx[k] == PTD_FRAME_KERNEL ? -1 : smp->pid,
			   smp->callchain[k]);
	if (smp->flags & PTD_SAMPLE_STITCHED)
		fprintf(f, "\t(user frames from the deferred callchain %" PRIu64
			" at %" PRIu64 ".%06" PRIu64 ")\n", smp->cookie,
			smp->deferred_time / 1000000000u, smp->deferred_time % 1000000000u / 1000u);
	if (smp->flags & PTD_SAMPLE_DEFERRED_MISSING)
		fprintf(f, "\t(deferred user callchain %" PRIu64 " never came)\n", smp->cookie);
	if (smp->flags & PTD_SAMPLE_CALLCHAIN_BAD)
		fprintf(f, "\t(callchain runs past its record: left out)\n");
	if (smp->flags & PTD_SAMPLE_CALLCHAIN_CORRUPT)
		fprintf(f, "\t(callchain holds an entry naming no context: left out)\n");
	if (v->probes && (v->probes[2 * idx].flags & CS_RESOLVED)) {
		const struct cs_probe *p = &v->probes[2 * idx];

		fprintf(f, "\ttrace stack%s:\n", p->flags & CS_PARTIAL ?
			" (after a decode error, or cut over CPUs' queues: may lack frames)" : "");
		for (size_t k = 0; k < p->n; k++)
			frame_line(v, smp->pid, p->frames[k]);
	}
	fputc('\n', f);
}

/* ---- --check-callchains ------------------------------------------------ */

static size_t user_frames(const struct ptd_sample *smp, uint64_t *out)
{
	size_t n = 0;

	for (size_t k = 0; k < smp->callchain_nr; k++)
		if (smp->callchain_ctx[k] == PTD_FRAME_USER)
			out[n++] = smp->callchain[k];
	return n;
}

/* Which way rec (nr) differs from the trace's tr (nt); NULL: equal. */
static const char *differ(const uint64_t *rec, size_t nr, const uint64_t *tr,
			  size_t nt, size_t *at)
{
	size_t i = 0, j = 0;

	while (i < nr && i < nt && rec[i] == tr[i])
		i++;
	*at = i;
	if (i == nr && i == nt)
		return NULL;
	if (i == nr)
		return "truncated";
	/* the recorded frames in the trace's order with some left out */
	for (j = i; i < nr && j < nt; j++)
		if (rec[i] == tr[j])
			i++;
	return i == nr ? "missing frames" : "wrong frames";
}

static void addr_list(FILE *f, const char *what, const uint64_t *a, size_t n)
{
	fprintf(f, "  %s:", what);
	for (size_t k = 0; k < n; k++)
		fprintf(f, " %#" PRIx64, a[k]);
	fputc('\n', f);
}

static int check_one(struct sv *v, const struct ptd_sample *smp, size_t idx)
{
	const struct cs_probe *p = &v->probes[2 * idx + 1];
	uint64_t *rec = malloc((smp->callchain_nr + 1) * sizeof(*rec));
	const char *why;
	size_t nr, at;

	if (!rec)
		return PTD_ERR_NOMEM;
	nr = user_frames(smp, rec);
	if (!nr || !(p->flags & CS_RESOLVED)) {
		v->unchecked++;
		free(rec);
		return 0;
	}
	v->checked++;
	if ((why = differ(rec, nr, p->frames, p->n, &at))) {
		v->disagree++;
		fprintf(v->out, "%" PRIu64 ".%09" PRIu64 " %d/%d ip %#" PRIx64 ": %s "
			"(frame %zu of %zu recorded, %zu in the trace%s)\n",
			smp->time / 1000000000u, smp->time % 1000000000u,
			smp->pid, smp->tid, smp->ip, why, at, nr, p->n,
			p->flags & CS_PARTIAL ? "; trace stack may lack frames" : "");
		addr_list(v->out, "recorded", rec, nr);
		addr_list(v->out, "trace   ", p->frames, p->n);
	}
	free(rec);
	return 0;
}

/* ---- running ------------------------------------------------------------ */

/* --cpu-filter, --pid, --tid and --time, as for the flow views. */
static int selected(const struct cli_opts *o, const struct ptd_sample *smp)
{
	struct ptd_event ev = { .cpu = smp->cpu, .pid = smp->pid, .tid = smp->tid };

	if (o->open.time_start && smp->time < o->open.time_start)
		return 0;
	if (o->open.time_end && smp->time > o->open.time_end)
		return 0;
	return cli_selected(o, &ev);
}

static int each_sample(struct sv *v)
{
	struct ptd_sample smp = { .sz = sizeof(smp) };
	size_t idx = 0;

	for (; ptd_samples_next(v->sp, &smp) == 0; idx++) {
		if (!selected(v->o, &smp))
			continue;
		if (v->o->check_callchains) {
			if (check_one(v, &smp, idx))
				return PTD_ERR_NOMEM;
		} else if (v->o->view.json) {
			sample_json(v, &smp, idx);
		} else {
			sample_text(v, &smp, idx);
		}
	}
	if (v->o->check_callchains) {
		if (v->unchecked)
			fprintf(v->out, "callchains not checked: %" PRIu64 " (no user "
				"frames, or the thread did not run in the trace after "
				"them)\n", v->unchecked);
		fprintf(v->out, "callchains checked: %" PRIu64 ", disagree: %" PRIu64 "\n",
			v->checked, v->disagree);
	}
	return 0;
}

static void print_stats(const struct sv *v)
{
	struct ptd_samples_stats st = { .sz = sizeof(st) };

	if (ptd_samples_get_stats(v->sp, &st))
		return;
	fprintf(v->out, "samples: %" PRIu64 "\ncallchains: %" PRIu64 "\n"
		"deferred callchains: %" PRIu64 "\nstitched: %" PRIu64 "\n"
		"deferred never came: %" PRIu64 "\ndeferred records: %" PRIu64 "\n"
		"deferred records unmatched: %" PRIu64 "\ncookies reused: %" PRIu64 "\n"
		"callchains bad: %" PRIu64 "\nrecords bad: %" PRIu64 "\n"
		"branch stacks: %" PRIu64 "\nlost samples: %" PRIu64 "\n"
		"callchains corrupt: %" PRIu64 "\n",
		st.samples, st.callchains, st.deferred_samples, st.stitched,
		st.deferred_missing, st.deferred_records, st.deferred_unmatched,
		st.cookies_reused, st.callchains_bad, st.records_bad, st.branch_stacks,
		st.lost_samples, st.callchains_corrupt);
}

int samples_view_run(const struct cli_opts *o)
{
	struct sv v = { .o = o, .out = stdout };
	int status = 1;

	if (o->pt) {
		fprintf(stderr, "ptdecode: --samples and --check-callchains read a "
			"perf.data or capture directory, not --pt\n");
		return 2;
	}
	if (open_samples(&v) || open_trace(&v))
		goto out;
	if (o->outpath && !(v.out = outfile_open(o->outpath))) {
		fprintf(stderr, "ptdecode: cannot write %s: %s\n", o->outpath, strerror(errno));
		goto out;
	}
	if ((v.trace && trace_stacks(&v)) || each_sample(&v))
		goto out;
	if (o->stats && !o->view.json)
		print_stats(&v);
	status = 0;
out:
	if (v.out && (fflush(v.out) || ferror(v.out))) {
		fprintf(stderr, "ptdecode: error writing the output\n");
		status = 1;
	}
	if (v.out && v.out != stdout)
		fclose(v.out);
	callstacks_free(v.probes, 2 * v.n);
	ptd_close(v.s);
	ptd_samples_close(v.sp);
	outfile_wait();
	return status;
}
