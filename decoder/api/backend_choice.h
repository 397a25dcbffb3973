/* SPDX-License-Identifier: MIT */
/*
 * backend_choice - creates the backend for a loaded input (api stage):
 * Intel PT on the fast decoder or on libipt (as the options ask), or
 * CoreSight (perf's cs_etm, OpenCSD snapshots).  It is where the input's
 * format meets the decoders, so that loaders know no decoder and backends
 * no input format; checks of the trace that only a decoder's view can
 * make (no PSB, a cut packet) are warned of here.
 */
#ifndef PTD_BACKEND_CHOICE_H
#define PTD_BACKEND_CHOICE_H

#include <stddef.h>

#include "backend.h"
#include "ptdecode.h"

struct input;

/* Creates the backend of in (loaded) as opts ask.  Warnings and losses
 * go to the input's sink.  Returns 0 or a negative PTD_ERR_* with a message in err. */
int backend_choice_open(const struct ptd_open_opts *opts, struct input *in,
			struct backend **out, char *err, size_t errlen);

#endif
