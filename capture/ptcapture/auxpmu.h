/* SPDX-License-Identifier: MIT */
/*
 * auxpmu (stage: capture/ptcapture/) - records an AUX-area tracer (intel_pt, cs_etm): one event per
 * CPU with config from named terms (pmuformat), its data ring (AUX,
 * ITRACE_START, LOST records) and AUX area mapped and read with auxring,
 * AUX bytes written to perf.data as AUXTRACE records, and the
 * AUXTRACE_INFO perf needs to decode them.
 *
 * intel_pt AUX data is cut in front of the last PSB of what was read (the
 * rest waits for the next read), because perf does not join a packet split
 * across two AUXTRACE records.
 */
#ifndef PTCAP_AUXPMU_H
#define PTCAP_AUXPMU_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include "auxring.h"
#include "perfwrite.h"

struct auxpmu_opts {
	const char *pmu;          /* "intel_pt" or "cs_etm" */
	const char *terms;        /* NULL: the PMU's default */
	unsigned data_pages;      /* data ring pages per CPU (power of two) */
	unsigned aux_pages;       /* AUX pages per CPU (power of two) */
	int snapshot;             /* overwrite mode, read on snapshots only */
	const struct perf_event_attr *like; /* sample_type, clock to copy */
};

struct auxpmu;

/* The PMU's sysfs directory, or NULL when neither PMU exists. */
const char *auxpmu_present(void);

int auxpmu_open(const struct auxpmu_opts *o, struct auxpmu **out, char *err, size_t errlen);
void auxpmu_close(struct auxpmu *ap);

const struct perf_event_attr *auxpmu_attr(const struct auxpmu *ap);
size_t auxpmu_ids(const struct auxpmu *ap, const uint64_t **ids);
/* "intel_pt/.../" with the config words, for the info file. */
const char *auxpmu_desc(const struct auxpmu *ap);

/* Writes AUXTRACE_INFO (and TIME_CONV) for the PMU into w. */
int auxpmu_write_info(struct auxpmu *ap, struct perfwrite *w);

int auxpmu_add_to_epoll(struct auxpmu *ap, int epfd);

typedef int (*auxpmu_rec_fn)(void *ctx, const struct perf_event_header *rec, int cpu);

/* Normal mode: data ring records to fn, AUX bytes to w.  final != 0 also
 * writes the bytes held back for a PSB.  Returns 0 or negative. */
int auxpmu_drain(struct auxpmu *ap, struct perfwrite *w, auxpmu_rec_fn fn, void *ctx,
		 int final);
/* Snapshot mode: pauses, writes every CPU's AUX area to w, resumes. */
int auxpmu_snapshot(struct auxpmu *ap, struct perfwrite *w);

/* Sum over CPUs. */
void auxpmu_stats(const struct auxpmu *ap, struct auxring_stats *st);

#endif
