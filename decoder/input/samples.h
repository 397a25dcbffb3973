/* SPDX-License-Identifier: MIT */
/*
 * samples - input stage (decoder/input/): the SAMPLE records of a
 * perf.data with their callchains and branch stacks, the user parts of
 * deferred callchains (PERF_RECORD_CALLCHAIN_DEFERRED) stitched onto the
 * samples naming their cookie, in time order.  Independent of the trace
 * loaders: a file of samples without a trace reads too.
 *
 * Stitching follows perf (tools/perf/util/session.c): a sample whose
 * callchain ends in PD_CONTEXT_USER_DEFERRED and a cookie waits for the
 * first CALLCHAIN_DEFERRED record of the same thread with that cookie at
 * or after its time; that record's frames replace the marker and cookie.
 */
#ifndef PTD_INPUT_SAMPLES_H
#define PTD_INPUT_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "ptdecode.h"

struct sample_entry {
	uint64_t time, ip, period, id, cookie, deferred_time, seq;
	int32_t cpu, pid, tid;
	uint32_t cpumode, flags;      /* PTD_SAMPLE_* */
	char comm[16];
	size_t event;                 /* index into events */
	int deferred;                 /* its user part is deferred */
	size_t raw_off, raw_n;        /* its callchain as recorded (pool raw) */
	size_t cc_off, cc_n;          /* stitched, markers out (frames, ctx) */
	size_t br_off, br_n;          /* branches */
};

struct sample_set {
	struct sample_entry *v;
	size_t n, cap;
	uint64_t *raw;                /* recorded callchains, markers in */
	size_t nraw, rawcap;
	uint64_t *frames;
	uint8_t *ctx;
	size_t nframes, fcap, ctxcap;
	struct ptd_branch_entry *br;
	size_t nbr, brcap;
	struct sample_deferred *def;  /* CALLCHAIN_DEFERRED records */
	size_t ndef, defcap;
	char **events;                /* the attrs' names, "" when unnamed */
	size_t nevents;
	struct ptd_samples_stats st;
	char **warnings;
	size_t nwarnings;
};

/* Reads perf_path's samples into a new set.  Returns 0, or a negative
 * enum ptd_error with a message in err. */
int samples_load(const char *perf_path, struct sample_set **out, char *err,
		 size_t errlen);
void samples_free(struct sample_set *ss);

#endif
