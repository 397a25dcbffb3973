/* SPDX-License-Identifier: MIT */
/*
 * ptdecode - the command line: options in (options.c), events through a
 * view (views.c), out.
 */
#include "coverage.h"
#include "dap.h"
#include "options.h"
#include "outfile.h"
#include "progress.h"
#include "samples_view.h"
#include "views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The session's warnings printed so far. */
static size_t warned;

/* Prints the session's warnings not yet printed, unless -q. */
static void print_warnings(const struct cli_opts *o, struct ptd_session *s)
{
	for (; warned < ptd_warning_count(s); warned++)
		if (!o->quiet)
			fprintf(stderr, "ptdecode: warning: %s\n", ptd_warning(s, warned));
}

/* Opens the input; warnings go to standard error unless -q. */
static struct ptd_session *open_session(const struct cli_opts *o)
{
	struct ptd_session *s = NULL;
	int rc = o->pt ? ptd_open_kind(&s, o->input, PTD_INPUT_RAW_PT, &o->open)
		       : ptd_open(&s, o->input, &o->open);

	print_warnings(o, s);
	if (rc < 0) {
		fprintf(stderr, "ptdecode: %s\n", s ? ptd_errmsg(s) : ptd_strerror(rc));
		ptd_close(s);
		return NULL;
	}
	return s;
}

/* Standard output or -o FILE, fully buffered. */
static FILE *open_output(const struct cli_opts *o)
{
	FILE *f = stdout;

	if (o->outpath && !(f = outfile_open(o->outpath))) {
		fprintf(stderr, "ptdecode: cannot write %s: %s\n", o->outpath, strerror(errno));
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	return f;
}

/* --coverage: runs of blocks into per-instruction counts. */
static int run_coverage(struct ptd_session *s, FILE *out, int json,
			struct progress *pg, unsigned long long *events)
{
	const struct ptd_block *blocks;
	struct coverage *cov = coverage_new();
	struct ptd_event ev;
	size_t n;
	int have, rc;

	if (!cov)
		return PTD_ERR_NOMEM;
	while ((rc = ptd_next_blocks(s, &blocks, &n, &ev, &have)) == 0) {
		*events += (unsigned long long)have;
		progress_tick(pg, PROGRESS_RUN);
		if (coverage_add(cov, s, blocks, n)) {
			rc = PTD_ERR_NOMEM;
			break;
		}
	}
	coverage_print(cov, s, out, json);
	coverage_free(cov);
	return rc;
}

/* Counting only: the block interface, no per-instruction work. */
static int run_count(struct ptd_session *s, struct progress *pg,
		     unsigned long long *events)
{
	const struct ptd_block *blocks;
	struct ptd_event ev;
	size_t n;
	int have, rc;

	while ((rc = ptd_next_blocks(s, &blocks, &n, &ev, &have)) == 0) {
		*events += (unsigned long long)have;
		progress_tick(pg, PROGRESS_RUN);
	}
	return rc;
}

/* Every event through the view. */
static int run_view(struct ptd_session *s, const struct cli_opts *o,
		    struct view *v, struct progress *pg, unsigned long long *events)
{
	struct ptd_event ev;
	int rc;

	while ((rc = ptd_next(s, &ev)) == 0) {
		(*events)++;
		progress_tick(pg, 1);
		if (cli_selected(o, &ev))
			view_event(v, &ev);
	}
	return rc;
}

/* Progress on standard error when it is a terminal and not -q, unless
 * the view writes its lines to that terminal as it goes. */
static int want_progress(const struct cli_opts *o)
{
	int streaming = o->view.kind != VIEW_NONE && !o->coverage &&
			o->view.out == stdout && isatty(STDOUT_FILENO);

	return !o->quiet && isatty(STDERR_FILENO) && !streaming;
}

static int run(struct ptd_session *s, const struct cli_opts *o, struct view *v,
	       unsigned long long *events)
{
	struct progress *pg = progress_new(s, want_progress(o));
	int rc;

	if (o->coverage)
		rc = run_coverage(s, o->view.out, o->view.json, pg, events);
	else if (o->view.kind == VIEW_NONE && !cli_filtering(o))
		rc = run_count(s, pg, events);
	else
		rc = run_view(s, o, v, pg, events);
	progress_end(pg);
	return rc;
}

/* How the decode ended, the statistics, and whether the output was
 * written: returns the exit status. */
static int report(struct ptd_session *s, const struct cli_opts *o, int rc,
		  unsigned long long events)
{
	struct ptd_stats st = { .sz = sizeof(st) };
	int status = 0;

	if (rc != PTD_ERR_END) {
		fprintf(stderr, "ptdecode: %s\n", rc == PTD_ERR_NOMEM ? ptd_strerror(rc) :
			ptd_errmsg(s)[0] ? ptd_errmsg(s) : ptd_strerror(rc));
		status = 1;
	}
	print_warnings(o, s);   /* those of the decode */
	ptd_get_stats(s, &st);
	if (o->stats)  /* not into a binary trace */
		view_print_stats(o->view.kind == VIEW_PERFETTO ? stderr : o->view.out,
				 o->view.json, &st, events);
	if (st.truncated) {
		/* a damaged input is not a clean result, even when decoded */
		fprintf(stderr, "ptdecode: %s is truncated (recording killed?): "
			"decoded everything up to its last whole record\n", o->input);
		status = 1;
	}
	if (!o->quiet && st.errors)
		fprintf(stderr, "ptdecode: %" PRIu64 " decode error(s), see the "
			"[error ...] lines\n", st.errors);
	return status;
}

/* Closes the output; a failed write makes the run fail. */
static int close_output(const struct cli_opts *o)
{
	FILE *f = o->view.out;

	if (f != stdout) {
		if (ferror(f) | fclose(f)) {
			fprintf(stderr, "ptdecode: error writing %s (disk full?)\n", o->outpath);
			return 1;
		}
	} else if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "ptdecode: error writing standard output\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct cli_opts o;
	unsigned long long events = 0;
	struct ptd_session *s;
	struct view *v;
	int rc, status;

	if (argc > 1 && !strcmp(argv[1], "dap"))
		return dap_main(argc - 1, argv + 1);
	if ((rc = cli_parse(argc, argv, &o)) >= 0)
		return rc;
	if (o.samples || o.check_callchains)
		return samples_view_run(&o);
	if (!(s = open_session(&o)))
		return 1;
	o.view.writer_thread = o.write_thread;
	if (!(o.view.out = open_output(&o)) || !(v = view_new(&o.view, s))) {
		if (o.view.out)
			fprintf(stderr, "ptdecode: out of memory\n");
		ptd_close(s);
		return 1;
	}
	rc = run(s, &o, v, &events);
	view_finish(v);
	status = report(s, &o, rc, events);
	view_free(v);
	status |= close_output(&o);
	ptd_close(s);
	outfile_wait();
	return status;
}
