/* SPDX-License-Identifier: MIT */
#include "guestsb.h"
#include "ptcapdir.h"

#include <string.h>

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* ID_INDEX with the extended entry: { id, idx, cpu, tid } then
 * { machine_pid, vcpu }.  The guest id is per-thread from the host's
 * point of view (cpu -1, the vcpu thread), as perf inject writes it. */
static int write_id_index(struct perfwrite *pw)
{
	uint8_t rec[64] = { 0 };
	uint16_t size = sizeof(rec);
	uint32_t type = PD_RECORD_ID_INDEX;

	memcpy(rec, &type, 4);
	memcpy(rec + 6, &size, 2);
	put64(rec + 8, 1);
	put64(rec + 16, PTCAP_GUEST_ID);
	put64(rec + 24, 0);
	put64(rec + 32, (uint64_t)-1);
	put64(rec + 40, GUESTSB_HV_TID);
	put64(rec + 48, GUESTSB_HV_PID);
	put64(rec + 56, 0);
	int64_t r = perfwrite_record(pw, rec, sizeof(rec));

	return r < 0 ? (int)r : 0;
}

int guestsb_begin(struct perfwrite *pw, uint64_t t)
{
	struct perfwrite_sid sid = { .pid = GUESTSB_HV_PID, .tid = GUESTSB_HV_PID,
				     .time = t, .id = PTCAP_DUMMY_ID, .cpu = 0 };
	int rc;

	rc = write_id_index(pw);
	if (!rc)
		rc = perfwrite_comm(pw, &sid, GUESTSB_HV_PID, GUESTSB_HV_PID,
				    "qemu-system-x86", 1);
	sid.tid = GUESTSB_HV_TID;
	if (!rc)
		rc = perfwrite_comm(pw, &sid, GUESTSB_HV_PID, GUESTSB_HV_TID,
				    "CPU 0/KVM", 0);
	if (!rc)
		rc = perfwrite_switch_cpu_wide(pw, &sid, 0, 0, 0, 0);
	if (rc)
		return rc;
	perfwrite_set_guest_id(pw, PTCAP_GUEST_ID);
	return 0;
}
