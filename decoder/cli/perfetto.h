/* SPDX-License-Identifier: MIT */
/*
 * perfetto (stage: cli/) - the --perfetto sink: the call tree as a Perfetto trace (the
 * protobuf TracePacket stream that ui.perfetto.dev and trace_processor
 * read), a track per thread under its process, a slice per call.
 *
 * The caller (views.c) classifies the flow and calls in here; this module
 * keeps the tracks, the open slices and the clock, and encodes packets.
 * Slices of a thread are closed when it stops running on its queue and at
 * decode errors, so every track is properly nested whatever order the
 * queues are written in.
 */
#ifndef PTD_CLI_PERFETTO_H
#define PTD_CLI_PERFETTO_H

#include <stdio.h>
#include "ptdecode.h"

struct perfetto;

struct perfetto *perfetto_new(FILE *out, struct ptd_session *s);
/* Whether ev starts a new run: another queue, or another thread (events
 * that name none, losses and raw traces, stay on the current run).  The
 * current run's slices end then: the caller settles what it has pending
 * for that thread first. */
int perfetto_starts_run(const struct perfetto *p, const struct ptd_event *ev);
/* Every event, before any call below for it.  Returns 1 when ev starts a
 * new run (another thread or queue). */
int perfetto_event(struct perfetto *p, const struct ptd_event *ev);
/* A call entered name (the slice begins now). */
void perfetto_call(struct perfetto *p, const char *name);
/* The innermost open call returned. */
void perfetto_return(struct perfetto *p);
/* A point event on the current track (errors, gaps, losses). */
void perfetto_instant(struct perfetto *p, const char *name);
/* The call stack is unknown from here on (decode error, overflow). */
void perfetto_break(struct perfetto *p);
/* Ends the open slices and writes what is buffered; 0, or -1 on a write
 * error (errno tells). */
int perfetto_finish(struct perfetto *p);
void perfetto_free(struct perfetto *p);

#endif
