/* SPDX-License-Identifier: MIT */
/*
 * guest (stage: input/) - a perf.data's guest sideband, as `perf inject
 * --guest-data` writes it into a host recording: the ID_INDEX that names
 * the machine (its host process, machine_pid) and vcpu of each guest
 * sample id, and the guest's MMAP/COMM/FORK/SWITCH records, whose cpumode
 * is PERF_RECORD_MISC_GUEST_KERNEL or _GUEST_USER.  They go to the guest
 * machine's address spaces in the image store and to its vcpu timeline
 * (timeline/machines.h), never to the host's.
 *
 * A guest record's machine is its sample id's machine_pid (perf's
 * machines__find_for_cpumode); without one, an MMAP's pid or the record's
 * sample pid when that is a machine's.  Records naming no machine, and
 * guest records of kinds not applied, are counted and reported once at
 * the end (guest_finish).
 */
#ifndef PTD_GUEST_H
#define PTD_GUEST_H

#include <stdint.h>

#include "perfdata.h"

struct input;

/* 1 when rec is guest sideband (a guest cpumode); the same for a
 * record's or a HEADER_BUILD_ID entry's misc. */
int guest_is_record(const struct perfdata_record *rec);
int guest_is_misc(uint16_t misc);

/* A guest's [kernel.kallsyms], [vdso] or anonymous mapping at space: known
 * to exist, its bytes not read from this host's files (a gap that says
 * so).  Returns 0 or a negative enum ptd_error. */
int guest_add_unnamed(struct input *in, const struct perfdata_mmap *m,
		      int32_t space, uint64_t t);

/* Reads an ID_INDEX record's machine fields.  Returns 0 or a negative
 * enum ptd_error with the reason in err. */
int guest_on_id_index(struct input *in, const struct perfdata_record *rec,
		      char *err, size_t errlen);

/* The address space a guest MMAP/MMAP2 maps into (the guest kernel's for
 * kernel addresses), IMGSTORE_NO_SPACE (counted) when it names no
 * machine. */
int32_t guest_mmap_space(struct input *in, const struct perfdata_record *rec,
			 const struct perfdata_mmap *m);

/* A guest record other than MMAP: COMM, FORK, SWITCH go to the machine's
 * address spaces and vcpu timeline.  Returns 0 or a negative enum
 * ptd_error (out of memory). */
int guest_on_record(struct input *in, const struct perfdata_record *rec,
		    uint64_t t);

/* After the last record: sorts the vcpu timelines and reports what was
 * not used.  Returns 0 or PTD_ERR_NOMEM. */
int guest_finish(struct input *in);

#endif
