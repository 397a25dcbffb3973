/* SPDX-License-Identifier: MIT */
/*
 * fuzz_capdir - opening and decoding a capture directory (ptd_open on
 * NAME.ptd/ with perf.data and text/index.tsv).  The input is the index
 * followed by the perf.data: it is split at the first "PERFILE2" magic
 * (file and pipe mode both start with it); without the magic the whole
 * input is the index and there is no perf.data.  text/ also holds ptloop's
 * code blob, so ptsynth-made seeds decode for real.  Decoding stops after
 * a bounded number of instructions and events.
 */
#include "fuzz_common.h"
#include "ptdecode.h"

#define BLOB "0180b3d2de84e7c8.bin"
#define MAX_EVENTS 200000

static const uint8_t *find_magic(const uint8_t *d, size_t n)
{
	for (size_t i = 0; i + 8 <= n; i++)
		if (!memcmp(d + i, "PERFILE2", 8))
			return d + i;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[300];
	char path[400];
	const uint8_t *pd = find_magic(data, size);
	size_t idx_len = pd ? (size_t)(pd - data) : size;
	struct ptd_open_opts o = { .sz = sizeof(o), .max_insns = 100000 };
	struct ptd_session *s;
	struct ptd_event ev;
	struct ptd_stats st = { .sz = sizeof(st) };
	int rc;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/in.ptd", fz_scratch());
		mkdir(dir, 0700);
		snprintf(path, sizeof(path), "%s/text", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/text/%s", dir, BLOB);
		fz_copy_file(PTD_FUZZ_DATA "/" BLOB, path);
	}
	snprintf(path, sizeof(path), "%s/text/index.tsv", dir);
	fz_write_file(path, data, idx_len);
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	if (pd)
		fz_write_file(path, pd, size - idx_len);
	else
		unlink(path);

	/* Image paths named by the sideband are looked up under this sysroot
	 * (an empty directory) so fuzzed MMAP names stay off the host. */
	o.sysroot = dir;
	rc = ptd_open(&s, dir, &o);
	if (!s)
		return 0;
	if (rc == 0) {
		for (size_t n = 0; n < MAX_EVENTS; n++) {
			rc = ptd_next(s, &ev);
			if (rc < 0)
				break;
			fz_touch_str(ev.msg);
			if (ev.kind == PTD_EV_INSN) {
				char sym[128];
				uint64_t off;

				if (ptd_symbolize(s, ev.pid, ev.ip, sym, sizeof(sym), &off) == 0)
					fz_touch_str(sym);
				fz_touch_str(ptd_image_name(s, ev.pid, ev.ip));
			}
		}
		ptd_get_stats(s, &st);
		fz_sink += st.instructions + st.lost;
	}
	fz_touch_str(ptd_errmsg(s));
	for (size_t i = 0; i < ptd_warning_count(s); i++)
		fz_touch_str(ptd_warning(s, i));
	ptd_close(s);
	return 0;
}
