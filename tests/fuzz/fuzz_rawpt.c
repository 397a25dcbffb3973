/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rawpt - Intel PT decoding of arbitrary AUX bytes: raw mode
 * (ptd_open_kind PTD_INPUT_RAW_PT) with a fixed image, the static program
 * data/ptloop.elf at its link address.  Seeds are ptsynth traces of that
 * program, so mutations start from deep, valid decodes.  Decoding is
 * bounded by max_insns and an event count.
 */
#include "fuzz_common.h"
#include "ptdecode.h"

#define MAX_EVENTS 200000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ptd_raw_image img = {
		.kind = PTD_RAW_ELF, .path = PTD_FUZZ_DATA "/ptloop.elf",
	};
	struct ptd_open_opts o = {
		.sz = sizeof(o), .raw_images = &img, .n_raw_images = 1,
		.cpu = "6/158/10", .max_insns = 100000,
	};
	struct ptd_session *s;
	struct ptd_event ev;
	char path[64];
	int fd = fz_memfd(data, size, path), rc;

	rc = ptd_open_kind(&s, path, PTD_INPUT_RAW_PT, &o);
	if (rc == 0) {
		for (size_t n = 0; n < MAX_EVENTS; n++) {
			if (ptd_next(s, &ev) < 0)
				break;
			fz_touch_str(ev.msg);
			fz_touch(ev.raw, ev.size <= sizeof(ev.raw) ? ev.size : 0);
			if (ev.size > sizeof(ev.raw)) {
				fprintf(stderr, "instruction size %u\n", ev.size);
				abort();
			}
		}
	}
	if (s) {
		fz_touch_str(ptd_errmsg(s));
		ptd_close(s);
	}
	close(fd);
	return 0;
}
