/* SPDX-License-Identifier: MIT */
/*
 * views (stage: cli/) - the CLI's sinks: each turns the event stream into one view
 * (instructions, branches, call tree, statistics) as text or JSON Lines,
 * or the call tree as a Perfetto trace (perfetto.h).
 */
#ifndef PTD_CLI_VIEWS_H
#define PTD_CLI_VIEWS_H

#include <stdio.h>
#include "ptdecode.h"

enum view_kind { VIEW_INSN, VIEW_BRANCHES, VIEW_CALLS, VIEW_PERFETTO, VIEW_NONE };

struct view_opts {
	enum view_kind kind;
	int json;
	int show_time;       /* time / cpu / pid columns */
	int show_sym;        /* symbol+offset */
	int show_disasm;     /* capstone text */
	int show_src;        /* source file:line */
	int att;             /* AT&T syntax */
	int writer_thread;   /* write on a thread of its own (writer.h) */
	FILE *out;
};

struct view;

struct view *view_new(const struct view_opts *o, struct ptd_session *s);
/* Consumes one event. */
void view_event(struct view *v, const struct ptd_event *ev);
/* Flushes what is pending at the end of the stream. */
void view_finish(struct view *v);
void view_free(struct view *v);

/* Prints the --stats lines. */
void view_print_stats(FILE *out, int json, const struct ptd_stats *st,
		      unsigned long long events);

#endif
