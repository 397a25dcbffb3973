/* SPDX-License-Identifier: MIT */
/*
 * ptd_corrupt_tool - helpers for the corruption tests and the fuzz seeds,
 * built on the perf.data reader:
 *
 *   records FILE     one line per record: "OFFSET END TYPE" (decimal; an
 *                    AUXTRACE record ends after its payload), then
 *                    "data_end OFFSET" and one "warning: ..." per warning
 *   aux FILE OUT     writes the AUXTRACE payloads, in file order, to OUT
 *                    (the raw trace of a one-queue recording)
 *   auxspan FILE     "PAYLOAD_OFFSET SIZE" of each AUXTRACE record
 *
 * Exit status 0, or 1 with a message when the file cannot be read.
 */
#include "perfdata.h"
#include "ptdecode.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct perfdata *pd;
	struct perfdata_record r;
	char err[512];
	FILE *out = NULL;
	int rc;

	if (argc < 3 || (strcmp(argv[1], "records") && strcmp(argv[1], "aux") &&
			 strcmp(argv[1], "auxspan")) ||
	    (!strcmp(argv[1], "aux") && argc < 4)) {
		fprintf(stderr, "usage: ptd_corrupt_tool records|auxspan FILE | aux FILE OUT\n");
		return 2;
	}
	if (perfdata_open(argv[2], &pd, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (!strcmp(argv[1], "aux") && !(out = fopen(argv[3], "wb"))) {
		perror(argv[3]);
		return 1;
	}
	while ((rc = perfdata_next(pd, &r)) == 0 || rc == PTD_ERR_UNSUPPORTED) {
		if (rc)
			continue;
		if (!strcmp(argv[1], "records"))
			printf("%" PRIu64 " %" PRIu64 " %u\n", r.file_offset,
			       r.type == PD_RECORD_AUXTRACE ?
			       r.aux_file_offset + r.aux_size :
			       r.file_offset + r.size, r.type);
		if (r.type != PD_RECORD_AUXTRACE)
			continue;
		if (!strcmp(argv[1], "auxspan"))
			printf("%" PRIu64 " %" PRIu64 "\n", r.aux_file_offset,
			       r.aux_size);
		if (out) {
			const uint8_t *d;
			void *cookie;

			if (perfdata_aux_map(pd, r.aux_file_offset, r.aux_size,
					     &d, &cookie)) {
				fprintf(stderr, "%s\n", perfdata_errmsg(pd));
				return 1;
			}
			fwrite(d, 1, r.aux_size, out);
			perfdata_aux_unmap(pd, cookie);
		}
	}
	if (rc != PTD_ERR_END) {
		fprintf(stderr, "%s\n", perfdata_errmsg(pd));
		return 1;
	}
	if (!strcmp(argv[1], "records")) {
		const struct perfdata_info *in = perfdata_get_info(pd);

		printf("data_end %" PRIu64 "\n", in->data_offset + in->data_size);
		for (const char *const *w = perfdata_warnings(pd); w && *w; w++)
			printf("warning: %s\n", *w);
	}
	if (out && fclose(out)) {
		perror(argv[3]);
		return 1;
	}
	perfdata_close(pd);
	return 0;
}
