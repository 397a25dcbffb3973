/* SPDX-License-Identifier: MIT */
/*
 * auxsnap - snapshot-mode AUX (input stage): an Intel PT perf.data
 * recorded with perf record -S (AUXTRACE_INFO's snapshot mode; the
 * kernel's AUX records carry PERF_AUX_FLAG_OVERWRITE) holds one AUXTRACE
 * record per snapshot, each the last bytes of the ring, so each repeats
 * part of the snapshot before it, or, when the ring wrapped between two
 * snapshots, misses trace.  As perf's decoder does, each record's pieces
 * are trimmed to where its new trace begins (backend/intelpt_overlap.c),
 * so every byte is decoded once; where a snapshot does not continue the
 * one before, its queue is split there and decoding starts over at its
 * PSB.  Skipped bytes, snapshots and gaps are counted in the statistics;
 * each gap is a warning naming the CPU and the snapshots, and an event in
 * the flow: the queue before it says so (input_queue.gap_after), and the
 * Intel PT decoders end its flow with a PTD_EV_GAP there.
 */
#ifndef PTD_AUXSNAP_H
#define PTD_AUXSNAP_H

#include <stddef.h>

struct input;

/* Applies the above to in's queues when in is an Intel PT recording in
 * snapshot mode (else does nothing).  Returns 0 or a negative PTD_ERR_*
 * with a message in err. */
int auxsnap_fix_queues(struct input *in, char *err, size_t errlen);

#endif
