/* SPDX-License-Identifier: MIT */
/*
 * options - the ptdecode command line (cli/): parses argv into the
 * library's open options, the view's options and the CLI's own filters.
 */
#ifndef PTD_CLI_OPTIONS_H
#define PTD_CLI_OPTIONS_H

#include "ptdecode.h"
#include "views.h"

#define CLI_MAX_LIST 64
#define CLI_MAX_IMAGES 256
#define CLI_MAX_SEARCH 64

struct cli_opts {
	struct ptd_open_opts open;
	struct view_opts view;
	struct ptd_raw_image raws[CLI_MAX_IMAGES];
	size_t nraw;
	const char *search[CLI_MAX_SEARCH + 1];
	size_t nsearch;
	long cpus[CLI_MAX_LIST], pids[CLI_MAX_LIST], tids[CLI_MAX_LIST];
	int ncpus, npids, ntids;
	int stats, coverage, quiet, view_set, write_thread;
	int samples, check_callchains;   /* samples_view.h */
	const char *pt;          /* --pt: a raw Intel PT file */
	const char *input;       /* what to open (INPUT or the --pt file) */
	const char *outpath;     /* -o */
};

/* Parses argv into o (its pointers stay valid while argv does).
 * Returns -1 to go on, or the exit status to end with: 0 after --help or
 * --version, 2 for bad usage (the reason printed on standard error). */
int cli_parse(int argc, char **argv, struct cli_opts *o);

/* Whether --cpu-filter, --pid or --tid were given. */
int cli_filtering(const struct cli_opts *o);

/* Whether ev passes --cpu-filter, --pid and --tid. */
int cli_selected(const struct cli_opts *o, const struct ptd_event *ev);

#endif
