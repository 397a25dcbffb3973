/* SPDX-License-Identifier: MIT */
#include "perfdir.h"
#include "input.h"
#include "perf.h"
#include "perfdata.h"
#include "perfdata_dir.h"
#include "sideband.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* One read-only mapping per file, for the AUX queues' pieces. */
static int map_files(struct input *in, const struct perfdata_dir *d,
		     char *err, size_t errlen)
{
	size_t n = perfdata_dir_nfiles(d);
	char msg[512];

	in->file_maps = calloc(n, sizeof(*in->file_maps));
	if (!in->file_maps) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	in->fmcap = n;
	for (size_t i = 0; i < n; i++) {
		int rc = util_map_file(perfdata_dir_path(d, i), &in->file_maps[i],
				       msg, sizeof(msg));

		if (rc) {
			util_errf(err, errlen, "%s", msg);
			return rc;
		}
		in->nfile_maps++;
	}
	return 0;
}

static int read_records(struct input *in, struct perfdata_dir *d, char *err,
			size_t errlen)
{
	struct perfdata_record r;
	size_t file;
	int rc;

	while ((rc = perfdata_dir_next(d, &r, &file)) == 0) {
		in->sink.stats->sideband_records++;
		in->cur_file = (uint32_t)file;
		rc = perf_on_record(in, &r, err, errlen);
		if (rc < 0)
			return rc;
	}
	in->cur_file = 0;
	if (rc != PTD_ERR_END) {
		util_errf(err, errlen, "perf.data: cannot read records: %s",
			  perfdata_dir_errmsg(d));
		return rc;
	}
	return 0;
}

int perfdir_read_sideband(struct input *in, char *err, size_t errlen)
{
	struct perfdata_dir *d;
	int rc = perfdata_dir_open(in->perf_path, &d, err, errlen);

	if (rc)
		return rc;
	in->pd = perfdata_dir_header(d, 1);   /* attrs, features, build ids */
	rc = map_files(in, d, err, errlen);
	if (!rc && perfdata_dir_note(d))
		rc = input_warn(in, "%s", perfdata_dir_note(d));
	if (!rc)
		rc = read_records(in, d, err, errlen);
	for (size_t i = 0; !rc && i < perfdata_dir_nfiles(d); i++)
		for (const char *const *w = perfdata_dir_warnings(d, i); w && *w; w++)
			input_warn(in, "%s", *w);
	if (!rc) {
		in->sink.stats->truncated = perfdata_dir_truncated(d);
		sideband_finish(in->sb);
	}
	perfdata_dir_close(d);
	return rc;
}
