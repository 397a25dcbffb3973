/* SPDX-License-Identifier: MIT */
/*
 * guestsb (stage: capture/synth/) - ptsynth record --guest: the recording
 * described as a virtual machine's, traced on its host.  The host
 * sideband shows a hypervisor process whose vcpu thread runs on the
 * simulated CPU all along; the program's own sideband becomes the guest's,
 * as `perf inject --guest-data` merges a guest's perf.data into the
 * host's: a guest attr (exclude_host) of its own sample id, an ID_INDEX
 * entry naming that id's machine (machine_pid = the hypervisor) and vcpu
 * (one per simulated CPU, each run by its vcpu thread), and the records
 * with guest cpumodes.
 */
#ifndef PTSYNTH_GUESTSB_H
#define PTSYNTH_GUESTSB_H

#include <stdint.h>

#include "perfwrite.h"

/* The hypervisor process and its vcpu 0 thread (host pids; the guest's
 * are the program's real ones); vcpu c's thread is GUESTSB_HV_TID + c. */
#define GUESTSB_HV_PID 4000000
#define GUESTSB_HV_TID 4000001

/* The hypervisor's host sideband at perf time t for nvcpus vcpus (1..64;
 * ptsynth record --cpus N --guest: vcpu c runs on CPU c): its COMMs, each
 * vcpu thread switched in on its CPU, and the ID_INDEX of the guest ids
 * (vcpu c's is PTCAP_GUEST_ID + c); guest records written after it get
 * guest cpumodes.  Returns 0 or a negative enum ptd_error. */
int guestsb_begin(struct perfwrite *pw, uint64_t t, int nvcpus);

#endif
