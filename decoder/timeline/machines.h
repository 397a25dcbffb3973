/* SPDX-License-Identifier: MIT */
/*
 * machines (stage: timeline/) - the guest machines of a trace recorded on
 * a virtualization host: which host thread runs which virtual CPU of which
 * machine, which guest thread runs on each virtual CPU when, and so which
 * address space code traced in VMX non-root operation (PIP.NR=1) comes
 * from.
 *
 * Filled from guest sideband as `perf inject --guest-data` writes it: the
 * ID_INDEX entries of the guest sample ids (machine_pid = the host process
 * of the virtual machine, vcpu, tid = the host thread running that vcpu)
 * and the guest's context switches.  A machine is named by its host pid;
 * its address spaces in the image store are IMGSTORE_GUEST_SPACE(index,
 * guest pid).
 */
#ifndef PTD_MACHINES_H
#define PTD_MACHINES_H

#include <stddef.h>
#include <stdint.h>

struct machines;

struct machines *machines_new(void);
void machines_free(struct machines *ms);

/* One ID_INDEX entry: sample id `id` belongs to vcpu of the machine whose
 * host process is machine_pid, run by host thread host_tid.  machine_pid
 * 0 is a host id (ignored).  Returns 0, PTD_ERR_NOMEM, or PTD_ERR_INVAL
 * when more machines than the image store can tell apart. */
int machines_add_id(struct machines *ms, uint64_t id, int32_t machine_pid,
		    int32_t vcpu, int32_t host_tid);

/* The machine and vcpu of a guest sample id: 0, or -1 when the id names
 * no machine. */
int machines_of_id(const struct machines *ms, uint64_t id, int32_t *machine_pid,
		   int32_t *vcpu);

/* Number of machines (0: no guest sideband). */
size_t machines_count(const struct machines *ms);

/* Image store address space of guest process pid (-1: the guest kernel)
 * of machine machine_pid, IMGSTORE_NO_SPACE when there is no such
 * machine. */
int32_t machines_space(const struct machines *ms, int32_t machine_pid,
		       int32_t pid);

/* Guest thread pid/tid switched in on vcpu of machine_pid at time t
 * (entries in any order; machines_finish sorts them). */
int machines_switch_in(struct machines *ms, int32_t machine_pid, int32_t vcpu,
		       uint64_t t, int32_t pid, int32_t tid);
void machines_finish(struct machines *ms);

/* Where guest code runs when host thread host_pid/host_tid executes in
 * VMX non-root operation at time t: the address space of the guest thread
 * on its vcpu then (the guest kernel when no switch says), or, with
 * guest_code and no guest sideband for host_pid, host_pid's own space
 * (perf's --guest-code: the guest's code is the hypervisor process's
 * memory).  IMGSTORE_NO_SPACE when neither applies. */
int32_t machines_guest_space(const struct machines *ms, int guest_code,
			     int32_t host_pid, int32_t host_tid, uint64_t t);

/* The guest thread host_pid/host_tid runs in VMX non-root operation at
 * time t (what perf names guest samples by): 0 and pid/tid, or -1 when
 * no guest switch says (pid/tid unchanged). */
int machines_guest_thread(const struct machines *ms, int32_t host_pid,
			  int32_t host_tid, uint64_t t, int32_t *pid,
			  int32_t *tid);

/* Time of the first guest switch after t on the vcpu host_tid runs,
 * UINT64_MAX if none: the answer above holds until then. */
uint64_t machines_next_switch(const struct machines *ms, int32_t host_pid,
			      int32_t host_tid, uint64_t t);

/* Whose guest code host_pid/host_tid runs at time t, or why none is
 * known, for error messages. */
void machines_explain(const struct machines *ms, int guest_code,
		      int32_t host_pid, int32_t host_tid, uint64_t t,
		      char *buf, size_t len);

#endif
