/* SPDX-License-Identifier: MIT */
/*
 * perf - the perf.data loader (input stage): reads the records into the
 * sideband timeline (threads, switches, losses) and the image store
 * (mappings, kernel symbols, text pokes), and groups the AUX trace into
 * queues of pieces that point into one mapping of the file.
 */
#ifndef PTD_PERF_H
#define PTD_PERF_H

#include <stddef.h>
#include <stdint.h>

struct input;

/* Loads the perf.data file in->perf_path (PTD_INPUT_PERF_DATA): its
 * sideband, the jitdumps it names, its AUX queues.  Returns 0 or a
 * negative PTD_ERR_* with a message in err. */
int perf_load(struct input *in, char *err, size_t errlen);

/* The steps of loading, for loaders of inputs that hold a perf.data:
 * opens in->perf_path and reads all its records; then, after what the
 * loader adds, builds the AUX queues.  Each returns 0 or a negative
 * PTD_ERR_* with a message in err. */
int perf_read_sideband(struct input *in, char *err, size_t errlen);
int perf_build_queues(struct input *in, char *err, size_t errlen);

/* Adds one record to in (sideband, images, AUX chunks of file
 * in->cur_file); for readers of several files (perfdir).  Returns 0 or a
 * negative PTD_ERR_* with a message in err. */
struct perfdata_record;
int perf_on_record(struct input *in, const struct perfdata_record *r,
		   char *err, size_t errlen);

/* 1 when every intel_pt event of the perf.data records TSC packets
 * (perf's intel_pt_have_tsc); else its Intel PT decode is timeless. */
int perf_pt_have_tsc(const struct input *in);

/* Makes the pieces of queue i of the input ctx contiguous, for decoders
 * that read one buffer (intelpt_queue.assemble).  Returns 0 or
 * PTD_ERR_NOMEM. */
int perf_assemble_queue(void *ctx, size_t i, const uint8_t **data);

#endif
