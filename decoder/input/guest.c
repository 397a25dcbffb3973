/* SPDX-License-Identifier: MIT */
#include "guest.h"
#include "id_index.h"
#include "imgstore.h"
#include "input.h"
#include "machines.h"
#include "perf_abi.h"

#include <inttypes.h>

int guest_is_misc(uint16_t misc)
{
	int mode = misc & PD_MISC_CPUMODE_MASK;

	return mode == PD_MISC_GUEST_KERNEL || mode == PD_MISC_GUEST_USER;
}

int guest_is_record(const struct perfdata_record *rec)
{
	return rec->type < PD_RECORD_HEADER_ATTR && guest_is_misc(rec->misc);
}

int guest_add_unnamed(struct input *in, const struct perfdata_mmap *m,
		      int32_t space, uint64_t t)
{
	int rc = imgstore_add_missing(in->st, space, m->addr, m->len, t,
				      IMGSTORE_FOREVER, m->filename,
				      "a guest's kernel, vDSO and anonymous "
				      "code are not read from the host's files: "
				      "ptdecode decodes guest user-space files "
				      "found by path and build id");

	return rc < 0 ? rc : 0;
}

int guest_on_id_index(struct input *in, const struct perfdata_record *rec,
		      char *err, size_t errlen)
{
	struct id_index_entry e;
	size_t nr;
	int ext, rc;

	if (id_index_count(rec, &nr, &ext)) {
		util_errf(err, errlen, "ID_INDEX record at offset %#" PRIx64
			  " claims more entries than it holds", rec->file_offset);
		return PTD_ERR_CORRUPT;
	}
	if (!ext) {
		in->guest.id_index_plain = 1;
		return 0;
	}
	for (size_t i = 0; i < nr; i++) {
		id_index_get(rec, i, &e);
		if (e.machine_pid <= 0 || e.machine_pid > INT32_MAX)
			continue;
		rc = machines_add_id(in->machines, e.id, (int32_t)e.machine_pid,
				     (int32_t)e.vcpu, (int32_t)e.tid);
		if (rc == PTD_ERR_INVAL) {
			util_errf(err, errlen, "ID_INDEX names more than %d guest "
				  "machines", IMGSTORE_GUEST_MACHINES);
			return rc;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* The machine (host pid) and vcpu of a guest record; 0, or -1 (counted)
 * when it names none.  pid: the MMAP's pid, or -1. */
static int machine_of(struct input *in, const struct perfdata_record *rec,
		      int64_t pid, int32_t *mpid, int32_t *vcpu)
{
	*vcpu = -1;
	if (rec->sid.has_id &&
	    machines_of_id(in->machines, rec->sid.id, mpid, vcpu) == 0)
		return 0;
	if (pid < 0 && rec->sid.has_tid)
		pid = rec->sid.pid;
	if (pid > 0 && pid <= INT32_MAX &&
	    machines_space(in->machines, (int32_t)pid, -1) != IMGSTORE_NO_SPACE) {
		*mpid = (int32_t)pid;
		return 0;
	}
	in->guest.no_machine++;
	return -1;
}

int32_t guest_mmap_space(struct input *in, const struct perfdata_record *rec,
			 const struct perfdata_mmap *m)
{
	int32_t mpid, vcpu, pid = (int32_t)m->pid;

	if (machine_of(in, rec, m->pid, &mpid, &vcpu))
		return IMGSTORE_NO_SPACE;
	if ((rec->misc & PD_MISC_CPUMODE_MASK) == PD_MISC_GUEST_KERNEL ||
	    input_is_kernel_addr(m->addr))
		pid = -1;
	return machines_space(in->machines, mpid, pid);
}

static int on_comm(struct input *in, const struct perfdata_record *rec,
		   int32_t mpid, uint64_t t)
{
	struct perfdata_comm c;

	if (perfdata_parse_comm(rec, &c))
		return 0;
	if (c.exec && c.pid == c.tid)
		imgstore_end(in->st, machines_space(in->machines, mpid, (int32_t)c.pid),
			     0, 0, t);
	return 0;
}

static int on_fork(struct input *in, const struct perfdata_record *rec,
		   int32_t mpid)
{
	struct perfdata_task tk;

	if (perfdata_parse_task(rec, &tk) || tk.pid == tk.ppid)
		return 0;
	return imgstore_fork(in->st, machines_space(in->machines, mpid, (int32_t)tk.ppid),
			     machines_space(in->machines, mpid, (int32_t)tk.pid),
			     tk.time);
}

/* A switch-in says which guest thread its vcpu runs from now on (perf's
 * intel_pt_guest_context_switch: switch-outs say nothing more). */
static int on_switch(struct input *in, const struct perfdata_record *rec,
		     int32_t mpid, int32_t vcpu, uint64_t t)
{
	if (rec->misc & PD_MISC_SWITCH_OUT)
		return 0;
	if (vcpu < 0 || !rec->sid.has_tid) {
		in->guest.no_machine++;
		return 0;
	}
	return machines_switch_in(in->machines, mpid, vcpu, t,
				  (int32_t)rec->sid.pid, (int32_t)rec->sid.tid);
}

int guest_on_record(struct input *in, const struct perfdata_record *rec,
		    uint64_t t)
{
	int32_t mpid, vcpu;

	if (machine_of(in, rec, -1, &mpid, &vcpu))
		return 0;
	switch (rec->type) {
	case PD_RECORD_COMM:
		return on_comm(in, rec, mpid, t);
	case PD_RECORD_FORK:
		return on_fork(in, rec, mpid);
	case PD_RECORD_EXIT:
		return 0;
	case PD_RECORD_SWITCH:
	case PD_RECORD_SWITCH_CPU_WIDE:
		return on_switch(in, rec, mpid, vcpu, t);
	default:
		in->guest.not_applied++;
		return 0;
	}
}

int guest_finish(struct input *in)
{
	int rc = 0;

	machines_finish(in->machines);
	if (in->guest.no_machine)
		rc = input_warn(in, "%" PRIu64 " guest sideband records (guest "
				"cpumode) name no guest machine%s: guest code of "
				"their machine cannot be decoded; `perf inject "
				"--guest-data` writes the ID_INDEX that names it",
				in->guest.no_machine, in->guest.id_index_plain ?
				" (the ID_INDEX has no machine_pid/vcpu fields: "
				"written by a perf older than 6.0)" :
				" (their sample ids are in no ID_INDEX with a "
				"machine_pid)");
	if (!rc && in->guest.not_applied)
		rc = input_warn(in, "%" PRIu64 " guest sideband records of kinds "
				"ptdecode does not apply to guests (KSYMBOL, "
				"TEXT_POKE, ...) were skipped",
				in->guest.not_applied);
	return rc;
}
