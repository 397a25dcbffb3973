/* SPDX-License-Identifier: MIT */
#include "guestsb.h"
#include "ptcapdir.h"
#include "ptdecode.h"

#include <stdio.h>
#include <string.h>

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* ID_INDEX with the extended entries: { id, idx, cpu, tid } per vcpu,
 * then { machine_pid, vcpu } per vcpu (perf's id_index_entry_2 array
 * after the entries).  A guest id is per-thread from the
 * host's point of view (cpu -1, the vcpu's thread), as perf inject writes
 * it. */
static int write_id_index(struct perfwrite *pw, int nvcpus)
{
	uint8_t rec[16 + 64 * 48] = { 0 };
	uint16_t size = (uint16_t)(16 + nvcpus * 48);
	uint32_t type = PD_RECORD_ID_INDEX;
	int64_t r;

	memcpy(rec, &type, 4);
	memcpy(rec + 6, &size, 2);
	put64(rec + 8, (uint64_t)nvcpus);
	for (int c = 0; c < nvcpus; c++) {
		uint8_t *e = rec + 16 + c * 32, *x = rec + 16 + nvcpus * 32 + c * 16;

		put64(e, PTCAP_GUEST_ID + (uint64_t)c);
		put64(e + 8, (uint64_t)c);
		put64(e + 16, (uint64_t)-1);
		put64(e + 24, GUESTSB_HV_TID + (uint64_t)c);
		put64(x, GUESTSB_HV_PID);
		put64(x + 8, (uint64_t)c);
	}
	r = perfwrite_record(pw, rec, size);
	return r < 0 ? (int)r : 0;
}

int guestsb_begin(struct perfwrite *pw, uint64_t t, int nvcpus)
{
	struct perfwrite_sid sid = { .pid = GUESTSB_HV_PID, .tid = GUESTSB_HV_PID,
				     .time = t, .id = PTCAP_DUMMY_ID, .cpu = 0 };
	int rc;

	if (nvcpus < 1 || nvcpus > 64)
		return PTD_ERR_INVAL;
	rc = write_id_index(pw, nvcpus);
	if (!rc)
		rc = perfwrite_comm(pw, &sid, GUESTSB_HV_PID, GUESTSB_HV_PID,
				    "qemu-system-x86", 1);
	for (int c = 0; c < nvcpus && !rc; c++) {
		char name[32];

		/* vcpu c's thread, switched in on CPU c all along */
		snprintf(name, sizeof(name), "CPU %d/KVM", c);
		sid.tid = GUESTSB_HV_TID + (uint32_t)c;
		sid.cpu = (uint32_t)c;
		rc = perfwrite_comm(pw, &sid, GUESTSB_HV_PID, sid.tid, name, 0);
		if (!rc)
			rc = perfwrite_switch_cpu_wide(pw, &sid, 0, 0, 0, 0);
	}
	if (rc)
		return rc;
	perfwrite_set_guest_ids(pw, PTCAP_GUEST_ID, (uint64_t)nvcpus);
	return 0;
}
