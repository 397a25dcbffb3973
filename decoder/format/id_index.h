/* SPDX-License-Identifier: MIT */
/*
 * id_index (stage: format/) - the PERF_RECORD_ID_INDEX record (perf's user
 * record 69): which mmap, CPU and thread each sample id belongs to, and in
 * its extended form (perf 6.0 and later, written by `perf inject
 * --guest-data`) the guest machine and vcpu.
 *
 * Layout (tools/lib/perf/include/perf/event.h): header, u64 nr, nr entries
 * of { u64 id, idx, cpu, tid }, then, when the record is large enough,
 * nr entries of { u64 machine_pid, vcpu }.
 */
#ifndef PTD_ID_INDEX_H
#define PTD_ID_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "perfdata.h"

struct id_index_entry {
	uint64_t id, idx;
	int64_t cpu, tid;
	int64_t machine_pid;    /* 0 = host; only with has_machine */
	uint64_t vcpu;
};

/* Number of entries of an ID_INDEX record and whether they carry machine
 * fields.  Returns 0 or PTD_ERR_CORRUPT (nr larger than the record). */
int id_index_count(const struct perfdata_record *rec, size_t *nr,
		   int *has_machine);

/* Entry i (< nr of id_index_count). */
void id_index_get(const struct perfdata_record *rec, size_t i,
		  struct id_index_entry *e);

#endif
