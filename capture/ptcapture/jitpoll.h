/* SPDX-License-Identifier: MIT */
/*
 * jitpoll (stage: capture/ptcapture/) - re-copies the JIT images of live BPF programs that can be
 * rewritten in place, and tells textmatch when their bytes changed.
 *
 * A program that uses a BPF_MAP_TYPE_PROG_ARRAY has tail-call sites that
 * the kernel re-patches in the program's own JIT image whenever the array
 * changes; this kernel emits no TEXT_POKE for it and offers no hook on map
 * updates that ptcapture can use.  So such programs are re-read by id
 * (BPF_PROG_GET_FD_BY_ID + prog info, the fd closed at once so that the
 * program's lifetime is not extended) every few milliseconds: identical
 * bytes extend the time the current version was last seen, different
 * bytes start a new version (textmatch_copy TM_RECOPY).  Between the last
 * sighting of one version and the first of the next, which bytes ran is
 * unknown: textmatch writes that window as an `uncertain` row.
 *
 * The trigger (poketrig, optional): the hashes of the watched images at
 * entry to and exit from every bpf() map update/delete.  A hash equal to
 * the current version extends it to that moment; a different one asks for
 * an immediate re-copy, and a new version whose bytes have that hash
 * starts when the trigger saw it: the unknown window shrinks to the
 * syscall.
 *
 * Limits: a change and its reversal between two sightings are not seen
 * (with the trigger: only if made by something other than a bpf() map
 * update, e.g. a prog array cleared when its last user reference goes).
 */
#ifndef PTCAP_JITPOLL_H
#define PTCAP_JITPOLL_H

#include <stddef.h>
#include <stdint.h>

#include "bpfinfo.h"
#include "textmatch.h"

struct jitpoll;

struct jitpoll_counts {
	uint64_t tracked;    /* programs tracked */
	uint64_t polls;      /* re-copies that read a program */
	uint64_t rewrites;   /* images whose bytes differed from the last copy */
	uint64_t gone;       /* programs found unloaded (or replaced) by a poll */
	uint64_t errors;     /* polls that failed otherwise */
	uint64_t transient;  /* of rewrites: same bytes again after the
			      * trigger saw others (a change and its reversal) */
	uint64_t trigger_events; /* image hashes from the trigger */
	uint64_t late;       /* polls (without the trigger) more than two
			      * intervals after the last one that found the
			      * bytes unchanged: what ran in between is not
			      * known (a change and its reversal fit there) */
};

/* interval_ns: the polling interval the caller keeps. */
struct jitpoll *jitpoll_new(struct textmatch *tm, uint64_t interval_ns);
void jitpoll_free(struct jitpoll *jp);

/* A program just copied by prog info (p, with prog_array set by
 * bpfinfo_copy2) whose images went to textmatch as copies first_copy,
 * first_copy + 1, ...; t: when that copy started.  Programs without a
 * prog array are ignored.  Returns 0 or -ENOMEM. */
int jitpoll_track(struct jitpoll *jp, const struct bpfinfo_prog *p,
		  size_t first_copy, uint64_t t);

/* BPF_EVENT PROG_UNLOAD: stop polling program id. */
void jitpoll_forget(struct jitpoll *jp, uint32_t id);

/* Re-copies every tracked program once.  Returns the number of images
 * whose bytes changed, or -ENOMEM. */
int jitpoll_poll(struct jitpoll *jp);

/* Loads the trigger.  Returns 0 or -errno with a message in err (then
 * polling alone goes on). */
int jitpoll_trigger_open(struct jitpoll *jp, char *err, size_t errlen);
/* Its ring's fd for epoll, or -1 without a trigger. */
int jitpoll_trigger_fd(struct jitpoll *jp);
/* Reads the trigger's events.  Returns 1 when a tracked image changed (poll
 * now), 0, or -EIO. */
int jitpoll_trigger_drain(struct jitpoll *jp);

/* Programs tracked now. */
size_t jitpoll_active(const struct jitpoll *jp);

void jitpoll_counts(const struct jitpoll *jp, struct jitpoll_counts *c);

#endif
