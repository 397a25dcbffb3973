/* SPDX-License-Identifier: MIT */
/*
 * session - the public session object (api stage, ptdecode.h): the
 * options, errors and warnings, the backend, the statistics and the
 * iteration state, over a loaded input (input/input.h).  Shared by the
 * api's files (session.c, symbols.c).
 */
#ifndef PTD_SESSION_H
#define PTD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "ptdecode.h"

struct input;
struct symbols;

struct ptd_session {
	struct ptd_open_opts opts;
	char errmsg[1024];
	char **warnings;
	size_t nwarnings, wcap;
	struct backend *be;
	struct ptd_stats stats;

	/* iteration */
	uint64_t cur_time;           /* of the last event: for symbols */
	int32_t last_tid, last_pid;  /* tid -> pid cache for ptd_next */
	struct ptd_event *blk_insn;  /* ptd_next_blocks over event backends */
	struct ptd_block *blk;
	int ended;

	struct input *in;            /* what was loaded */
	struct symbols *sym;         /* symbol files read for symbolization */
};

#endif
