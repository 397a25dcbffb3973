/* pdmutate IN OUT OP ARG: writes a damaged copy of a perf.data file, for
 * the bad-input tests.  OPs: "retype T" turns every record of type T into
 * an unknown type (so readers skip it); "auxinfo-type N" sets the PMU type
 * of AUXTRACE_INFO records to N.  A test tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "perfdata.h"

int main(int argc, char **argv)
{
	struct perfdata *pd;
	struct perfdata_record r;
	char err[512];
	unsigned long arg;
	uint8_t *file;
	long size;
	int n = 0;
	FILE *f;

	if (argc != 5)
		return 2;
	arg = strtoul(argv[4], NULL, 0);
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) <= 0)
		return 1;
	rewind(f);
	file = malloc((size_t)size);
	if (!file || fread(file, 1, (size_t)size, f) != (size_t)size)
		return 1;
	fclose(f);
	if (perfdata_open(argv[1], &pd, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	while (perfdata_next(pd, &r) == 0) {
		uint32_t v;

		if (!strcmp(argv[3], "retype") && r.type == arg) {
			v = 127; /* no such record type */
			memcpy(file + r.file_offset, &v, 4);
			n++;
		} else if (!strcmp(argv[3], "auxinfo-type") &&
			   r.type == PD_RECORD_AUXTRACE_INFO) {
			v = (uint32_t)arg;
			memcpy(file + r.file_offset + 8, &v, 4);
			n++;
		}
	}
	perfdata_close(pd);
	f = fopen(argv[2], "wb");
	if (!f || fwrite(file, 1, (size_t)size, f) != (size_t)size || fclose(f))
		return 1;
	printf("%d record(s) changed\n", n);
	return n ? 0 : 1;
}
