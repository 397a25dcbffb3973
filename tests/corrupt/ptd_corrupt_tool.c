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
 *   packets RAW      the PSB and TIP packets of a raw Intel PT trace, by
 *                    libipt's packet decoder: "OFFSET psb" and
 *                    "OFFSET tip IPC SIZE" (IPC as in the SDM)
 *
 * Exit status 0, or 1 with a message when the file cannot be read.
 */
#include "perfdata.h"
#include "ptdecode.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int list_packets(const char *path)
{
	struct pt_packet_decoder *dec;
	struct pt_packet pk;
	struct pt_config cfg;
	uint8_t *buf;
	uint64_t off = 0;
	long n;
	FILE *f = fopen(path, "rb");
	int rc;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n)) ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", path);
		return 1;
	}
	fclose(f);
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + n;
	dec = pt_pkt_alloc_decoder(&cfg);
	rc = dec ? pt_pkt_sync_forward(dec) : -pte_nomem;
	while (rc >= 0) {
		pt_pkt_get_offset(dec, &off);
		rc = pt_pkt_next(dec, &pk, sizeof(pk));
		if (rc >= 0 && pk.type == ppt_psb)
			printf("%" PRIu64 " psb\n", off);
		if (rc >= 0 && pk.type == ppt_tip)
			printf("%" PRIu64 " tip %d %d\n", off, (int)pk.payload.ip.ipc, rc);
	}
	pt_pkt_free_decoder(dec);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct perfdata *pd;
	struct perfdata_record r;
	char err[512];
	FILE *out = NULL;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "packets"))
		return list_packets(argv[2]);
	if (argc < 3 || (strcmp(argv[1], "records") && strcmp(argv[1], "aux") &&
			 strcmp(argv[1], "auxspan")) ||
	    (!strcmp(argv[1], "aux") && argc < 4)) {
		fprintf(stderr, "usage: ptd_corrupt_tool records|auxspan FILE | aux FILE OUT | packets RAW\n");
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
