/* SPDX-License-Identifier: MIT */
/*
 * perfwrite_split_by_cpu and perfdata_dir together: records written on
 * CPUs 0 and 2, out of time order inside a file as perf's reader threads
 * write them, come back from the directory in time order, each from the
 * file of its CPU, AUXTRACE payloads from theirs; the layout is perf's
 * (data, data.0..data.2 with data.1 empty, HEADER_DIR_FORMAT 1,
 * HEADER_AUXTRACE with no index entries).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perfdata.h"
#include "perfdata_dir.h"
#include "perfwrite.h"
#include "ptdecode.h"

static int fails;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); fails++; } } while (0)

static void make_attr(uint8_t *a, uint64_t sample_type)
{
	uint32_t size = 128;

	memset(a, 0, 128);
	a[0] = 1;                       /* software */
	memcpy(a + 4, &size, 4);
	a[8] = 9;                       /* dummy */
	memcpy(a + 24, &sample_type, 8);
	a[42] = 1 << 2;                 /* sample_id_all (bit 18) */
}

static long file_size(const char *dir, const char *name)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) ? -1 : (long)st.st_size;
}

/* Writes: on CPU 0 COMMs at times 30, 10 (one ring after another), on
 * CPU 2 COMMs at 20 and 40 with an AUXTRACE between them, and a
 * TIME_CONV (no CPU, so in data). */
static void write_dir(const char *dir)
{
	char path[4200], err[256];
	uint8_t attr[128], pay[13] = { 0x02, 0x82, 0x02, 0x82 };
	uint64_t id = 7;
	struct perfwrite *w;
	struct perfwrite_sid sid = { 11, 12, 0, 7, 0, 0 };

	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/data", dir);
	CHECK(perfwrite_open(&w, path, err, sizeof(err)) == 0);
	CHECK(perfwrite_split_by_cpu(w, dir) == 0);
	make_attr(attr, PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_CPU |
		  PD_SAMPLE_IDENTIFIER);
	CHECK(perfwrite_add_attr(w, attr, &id, 1, "dummy:u") == 0);
	CHECK(perfwrite_time_conv(w, 0, 1, 0, 0, 0, 1, 0) == 0);
	sid.cpu = 0; sid.time = 30;
	CHECK(perfwrite_comm(w, &sid, 11, 12, "c0-30", 0) == 0);
	sid.time = 10;
	CHECK(perfwrite_comm(w, &sid, 11, 12, "c0-10", 0) == 0);
	sid.cpu = 2; sid.time = 20;
	CHECK(perfwrite_comm(w, &sid, 11, 12, "c2-20", 0) == 0);
	CHECK(perfwrite_auxtrace(w, pay, sizeof(pay), 0, 1, 2, (uint32_t)-1, 2) == 0);
	sid.time = 40;
	CHECK(perfwrite_comm(w, &sid, 11, 12, "c2-40", 0) == 0);
	CHECK(perfwrite_close(w, err, sizeof(err)) == 0);
}

int main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : ".";
	static const char *const want[] = { "TIME_CONV", "c0-10", "c2-20", "AUXTRACE",
					    "c0-30", "c2-40" };
	static const char *const want_file[] = { "data", "data.0", "data.2", "data.2",
						 "data.0", "data.2" };
	char dir[4096], err[640];
	struct perfdata_dir *d;
	struct perfdata_record r;
	size_t file, n = 0;
	int rc;

	snprintf(dir, sizeof(dir), "%s/split.data", base);
	write_dir(dir);
	CHECK(file_size(dir, "data.0") > 0 && file_size(dir, "data.1") == 0 &&
	      file_size(dir, "data.2") > 0 && file_size(dir, "data.3") < 0);
	CHECK(perfdata_dir_is(dir));
	CHECK(perfdata_dir_open(dir, &d, err, sizeof(err)) == 0);
	if (!d)
		return 1;
	CHECK(perfdata_dir_nfiles(d) == 4);
	CHECK(perfdata_get_info(perfdata_dir_header(d, 0))->dir_format == 1);
	CHECK(perfdata_get_info(perfdata_dir_header(d, 0))->naux_index == 0);
	CHECK(perfdata_get_info(perfdata_dir_header(d, 0))->features[PD_FEAT_AUXTRACE / 64]
	      >> (PD_FEAT_AUXTRACE % 64) & 1);
	while ((rc = perfdata_dir_next(d, &r, &file)) == 0) {
		const char *name = strrchr(perfdata_dir_path(d, file), '/') + 1;
		struct perfdata_comm c;
		const char *what = perfdata_record_name(r.type);

		if (r.type == PD_RECORD_COMM && perfdata_parse_comm(&r, &c) == 0)
			what = c.comm;
		CHECK(n < 6 && !strcmp(what, want[n]) && !strcmp(name, want_file[n]));
		if (n < 6 && (strcmp(what, want[n]) || strcmp(name, want_file[n])))
			fprintf(stderr, "record %zu: %s in %s, want %s in %s\n", n, what,
				name, want[n], want_file[n]);
		if (r.type == PD_RECORD_AUXTRACE) {
			const uint8_t *p;
			void *cookie;

			CHECK(r.aux_cpu == 2 && r.aux_size == 16);
			CHECK(perfdata_aux_map(perfdata_dir_reader(d, file), r.aux_file_offset,
					       r.aux_size, &p, &cookie) == 0 &&
			      p[0] == 0x02 && p[3] == 0x82 && p[13] == 0);
			perfdata_aux_unmap(perfdata_dir_reader(d, file), cookie);
		}
		n++;
	}
	CHECK(rc == PTD_ERR_END && n == 6);
	perfdata_dir_close(d);
	/* not a directory of perf's: no data file */
	CHECK(!perfdata_dir_is(base));
	if (fails)
		fprintf(stderr, "%d failure(s)\n", fails);
	else
		printf("PASS: 6 records from 3 files in time order\n");
	return fails != 0;
}
