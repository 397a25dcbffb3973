/* SPDX-License-Identifier: MIT */
/*
 * fuzz_textstore - the text store index reader (decoder/format/textstore.c).
 * The input is text/index.tsv; the directory also holds one valid blob
 * (ptloop's code page, hash 0180b3d2de84e7c8) so rows naming it get their
 * bytes mapped and checked.
 */
#include "fuzz_common.h"
#include "ptdecode.h"
#include "textstore.h"

#define BLOB "0180b3d2de84e7c8.bin"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[300];
	char path[400], err[512];
	struct textstore *ts;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/text", fz_scratch());
		mkdir(dir, 0700);
		snprintf(path, sizeof(path), "%s/%s", dir, BLOB);
		fz_copy_file(PTD_FUZZ_DATA "/" BLOB, path);
	}
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	fz_write_file(path, data, size);
	err[0] = 0;
	if (textstore_open(dir, &ts, err, sizeof(err)) == 0) {
		size_t n = textstore_count(ts);

		for (size_t i = 0; i < n; i++) {
			const struct textstore_entry *e = textstore_get(ts, i);
			const uint8_t *b;

			fz_touch_str(e->name);
			fz_touch_str(e->kind);
			if (textstore_bytes(ts, i, &b, err, sizeof(err)) == 0)
				fz_touch(b, e->len);
		}
		if (textstore_get(ts, n)) {
			fprintf(stderr, "textstore_get past the end\n");
			abort();
		}
		textstore_close(ts);
	} else if (!err[0]) {
		fprintf(stderr, "textstore_open failed without a message\n");
		abort();
	}
	return 0;
}
