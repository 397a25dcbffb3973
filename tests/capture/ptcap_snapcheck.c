/* SPDX-License-Identifier: MIT */
/*
 * ptcap_snapcheck - checks one flight-recorder snapshot directory with the
 * project's perf.data reader: the snapshot was made by the trigger for
 * process PID, and its perf.data holds that process's COMM and the MMAP2
 * of MARKER (mapped by the process right before the triggering call),
 * timestamped no later than the trigger; the text store opens.
 *
 * Usage: ptcap_snapcheck SNAPDIR PID MARKER
 */
#include "ptdecode.h"
#include "perfdata.h"
#include "textstore.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int info_u64(const char *dir, const char *key, uint64_t *v, char *s, size_t slen)
{
	char path[4096], line[512];
	size_t kl = strlen(key);
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "%s/info", dir);
	if (!(f = fopen(path, "r")))
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == '=') {
			line[strcspn(line, "\n")] = 0;
			if (v)
				*v = strtoull(line + kl + 1, NULL, 0);
			if (s)
				snprintf(s, slen, "%s", line + kl + 1);
			found = 1;
		}
	fclose(f);
	return found ? 0 : -1;
}

int main(int argc, char **argv)
{
	char path[4096], err[512], reason[64] = "";
	struct perfdata *pd;
	struct perfdata_record rec;
	struct textstore *ts;
	uint64_t tpid = 0, ttime = 0, pid, comm = 0, marker = 0, marker_time = 0, n = 0;
	int rc, bad = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: ptcap_snapcheck SNAPDIR PID MARKER\n");
		return 2;
	}
	pid = strtoull(argv[2], NULL, 10);
	if (info_u64(argv[1], "trigger_pid", &tpid, NULL, 0) ||
	    info_u64(argv[1], "trigger_time", &ttime, NULL, 0) ||
	    info_u64(argv[1], "snapshot_reason", NULL, reason, sizeof(reason))) {
		fprintf(stderr, "ptcap_snapcheck: %s/info lacks the trigger keys\n", argv[1]);
		return 1;
	}
	if (tpid != pid || strcmp(reason, "trigger") || !ttime) {
		fprintf(stderr, "ptcap_snapcheck: snapshot by %s for pid %" PRIu64 " at %" PRIu64
			", expected a trigger in pid %" PRIu64 "\n", reason, tpid, ttime, pid);
		bad = 1;
	}
	snprintf(path, sizeof(path), "%s/perf.data", argv[1]);
	if (perfdata_open(path, &pd, err, sizeof(err))) {
		fprintf(stderr, "ptcap_snapcheck: %s\n", err);
		return 1;
	}
	while ((rc = perfdata_next(pd, &rec)) == 0) {
		n++;
		if (rec.type == PD_RECORD_COMM) {
			struct perfdata_comm c;

			if (!perfdata_parse_comm(&rec, &c) && c.pid == pid)
				comm++;
		} else if (rec.type == PD_RECORD_MMAP2) {
			struct perfdata_mmap m;

			if (!perfdata_parse_mmap(&rec, &m) && m.pid == pid &&
			    !strcmp(m.filename, argv[3])) {
				marker++;
				marker_time = rec.sid.time;
			}
		}
	}
	if (rc != PTD_ERR_END) {
		fprintf(stderr, "ptcap_snapcheck: %s\n", perfdata_errmsg(pd));
		bad = 1;
	}
	perfdata_close(pd);
	snprintf(path, sizeof(path), "%s/text", argv[1]);
	if (textstore_open(path, &ts, err, sizeof(err))) {
		fprintf(stderr, "ptcap_snapcheck: %s\n", err);
		bad = 1;
	} else {
		textstore_close(ts);
	}
	printf("ptcap_snapcheck: %s: %" PRIu64 " records, COMM of %" PRIu64 ": %" PRIu64
	       ", MMAP2 of the marker: %" PRIu64 " at %" PRIu64 " (trigger at %" PRIu64 ")\n",
	       argv[1], n, pid, comm, marker, marker_time, ttime);
	if (!comm || marker != 1 || marker_time > ttime)
		bad = 1;
	return bad;
}
