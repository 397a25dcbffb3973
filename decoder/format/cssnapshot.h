/* SPDX-License-Identifier: MIT */
/*
 * cssnapshot - reads a CoreSight snapshot directory (Arm's snapshot format,
 * as used by DS-5 and OpenCSD's trc_pkt_lister); format stage
 * (decoder/format/):
 *
 *   snapshot.ini  [snapshot] version=1.0, [device_list] devN=FILE.ini,
 *                 [trace] metadata=trace.ini
 *   FILE.ini      [device] name/class/type, [regs] NAME(...)=value,
 *                 [dumpN] file/address/length/offset/space (code images)
 *   trace.ini     [trace_buffers] buffers=a,b; [a] name/file/format;
 *                 [source_buffers] SOURCE=BUFFER; [core_trace_sources]
 *                 CORE=SOURCE
 *
 * Lines are "key=value" or "[section]"; ';' and '#' start comments.  Keys
 * and section names compare case-insensitively.  This module only parses:
 * it knows nothing of OpenCSD.
 */
#ifndef PTD_CSSNAPSHOT_H
#define PTD_CSSNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

struct cssnap_reg {
	char *name;        /* register name without any "(...)" suffix */
	uint64_t value;
};

struct cssnap_dump {
	char *path;        /* snapshot dir + file */
	char *file;        /* as written in the .ini */
	char *space;       /* memory space ("" if none given) */
	uint64_t address, offset, length; /* length: from the ini, or the
					    * file size - offset if absent */
	int missing;       /* the file cannot be opened (errmsg says why) */
	char errmsg[160];
};

struct cssnap_device {
	char *ini;         /* the .ini file name, for messages */
	char *name, *dclass, *type;
	struct cssnap_reg *regs;
	size_t nregs;
	struct cssnap_dump *dumps;
	size_t ndumps;
};

struct cssnap_buffer {
	char *id;          /* section name in trace.ini ("buffer0") */
	char *name;        /* buffer name ("ETB_0") */
	char *file, *path; /* trace file, and snapshot dir + file */
	char *format;      /* "coresight", "source_data", "dstream_coresight" */
};

struct cssnap_pair {
	char *a, *b;       /* source_buffers: source, buffer;
			    * core_trace_sources: core, source */
};

struct cssnap {
	char *dir;
	struct cssnap_device *dev;
	size_t ndev;
	struct cssnap_buffer *buf;
	size_t nbuf;
	struct cssnap_pair *src_buf;
	size_t nsrc_buf;
	struct cssnap_pair *core_src;
	size_t ncore_src;
};

/* Reads the snapshot in dir.  Returns 0, or a negative enum ptd_error with
 * a message naming the file (and line) in err.  Dump files that cannot be
 * opened do not fail the load: they are marked missing. */
int cssnap_load(const char *dir, struct cssnap **out, char *err, size_t errlen);
void cssnap_free(struct cssnap *s);

/* The device named name (case-sensitive, as trace.ini names it), or NULL. */
const struct cssnap_device *cssnap_device(const struct cssnap *s,
					  const char *name);
/* Register value by name (case-insensitive, suffix "(...)" ignored).
 * Returns 0, or -1 when the device has no such register. */
int cssnap_reg(const struct cssnap_device *d, const char *name, uint64_t *val);
/* The core that a trace source serves (core_trace_sources), or NULL. */
const char *cssnap_core_of(const struct cssnap *s, const char *source);
/* The protocol (enum of cs_etm_info.h: CS_PROTO_*) of a trace source's
 * type ("ETM4.1", "PTM1.1", "ETE", "STM", ...); CS_PROTO_NONE if unknown. */
int cssnap_proto(const char *type);

#endif
