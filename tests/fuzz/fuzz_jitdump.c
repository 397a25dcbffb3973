/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jitdump - the jitdump and perf map readers (decoder/timeline/dyntext.c).
 * The input is a jit-PID.dump; the same bytes are then read as a
 * perf-PID.map.  Loads go into an image store and a symbol table, and
 * every range they produce is looked up.
 */
#include "fuzz_common.h"
#include "dyntext.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dump[300], map[300];
	struct dyntext *dt = dyntext_new();
	struct imgstore *st = imgstore_new();
	struct symtab *syms = symtab_new();
	struct dyntext_sym sym;
	char err[512], file[256];
	unsigned int line;
	uint8_t buf[16];
	int rc;

	if (!dump[0]) {
		snprintf(dump, sizeof(dump), "%s/jit-1234.dump", fz_scratch());
		snprintf(map, sizeof(map), "%s/perf-1234.map", fz_scratch());
	}
	if (!dt || !st || !syms)
		abort();
	fz_write_file(dump, data, size);
	fz_write_file(map, data, size);
	err[0] = 0;
	rc = dyntext_load_jitdump(dt, dump, st, syms, NULL, err, sizeof(err));
	if (rc < 0 && !err[0]) {
		fprintf(stderr, "jitdump load failed without a message\n");
		abort();
	}
	err[0] = 0;
	rc = dyntext_load_perfmap(dt, map, -1, st, syms, err, sizeof(err));
	if (rc < 0 && !err[0]) {
		fprintf(stderr, "perf map load failed without a message\n");
		abort();
	}
	/* look around the first addresses the input might name */
	for (size_t off = 0; off + 8 <= size && off < 256; off += 8) {
		uint64_t a;

		memcpy(&a, data + off, 8);
		if (dyntext_symbol(dt, 1234, a, 1000, &sym) == 0)
			fz_touch_str(sym.name);
		dyntext_srcline(dt, 1234, a, IMGSTORE_TIME_UNKNOWN, file, sizeof(file), &line);
		if (imgstore_read(st, 1234, a, 1000, buf, sizeof(buf), NULL) > 0)
			fz_touch(buf, sizeof(buf));
	}
	symtab_free(syms);
	imgstore_free(st);
	dyntext_free(dt);
	return 0;
}
