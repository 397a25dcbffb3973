/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cssnap - the OpenCSD snapshot reader (decoder/format/cssnapshot.c) and the
 * CoreSight backend opened on it by snapshot_open (decoder/input/), decoding a
 * bounded number of events.
 *
 * The input is a bundle of files: a line "@@ NAME" starts file NAME
 * (letters, digits, '.', '_', '-'; at most 32 characters); the bytes up to
 * the next such line are its contents.  The directory also holds code.bin,
 * the A64 page of cs_code.h, for [dumpN] sections to name.
 */
#include "cs_code.h"
#include "cssnapshot.h"
#include "coresight.h"
#include "fuzz_common.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "snapshot.h"

#define MAX_FILES 16
#define MAX_EVENTS 100000

static char names[MAX_FILES][40];
static size_t nnames;

static int good_name(const uint8_t *p, size_t n)
{
	if (n == 0 || n > 32 || (n == 8 && !memcmp(p, "code.bin", 8)))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(p[i] == '.' || p[i] == '_' || p[i] == '-' ||
		      (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'z') ||
		      (p[i] >= 'A' && p[i] <= 'Z')))
			return 0;
	return !(p[0] == '.' && (n == 1 || (n == 2 && p[1] == '.')));
}

/* Writes the bundle's files into dir (removing the previous ones). */
static void unbundle(const char *dir, const uint8_t *d, size_t n)
{
	size_t i = 0;
	char path[1024];

	for (size_t k = 0; k < nnames; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		unlink(path);
	}
	nnames = 0;
	while (i < n && nnames < MAX_FILES) {
		/* here d[i] starts a line */
		const uint8_t *nl = memchr(d + i, '\n', n - i);
		size_t le = nl ? (size_t)(nl - d) : n, start, end;

		if (le - i < 3 || memcmp(d + i, "@@ ", 3) ||
		    !good_name(d + i + 3, le - i - 3)) {
			/* not a header: skip the line */
			i = nl ? le + 1 : n;
			continue;
		}
		memcpy(names[nnames], d + i + 3, le - i - 3);
		names[nnames][le - i - 3] = 0;
		start = end = nl ? le + 1 : n;
		/* contents run to the next "\n@@ " */
		while (end < n && !(end + 3 <= n && !memcmp(d + end, "@@ ", 3) &&
				    d[end - 1] == '\n'))
			end++;
		snprintf(path, sizeof(path), "%s/%s", dir, names[nnames]);
		fz_write_file(path, d + start, end - start);
		nnames++;
		i = end;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[300];
	char err[512] = "";
	struct cssnap *snap;
	struct imgstore *st;
	struct backend *be;
	int seen = 0;

	if (!dir[0]) {
		static uint8_t code[CS_CODE_SIZE];
		char path[400];

		snprintf(dir, sizeof(dir), "%s/snap", fz_scratch());
		mkdir(dir, 0700);
		cs_code_fill(code);
		snprintf(path, sizeof(path), "%s/code.bin", dir);
		fz_write_file(path, code, sizeof(code));
	}
	unbundle(dir, data, size);

	if (cssnap_load(dir, &snap, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < snap->ndev; i++) {
			const struct cssnap_device *d = &snap->dev[i];
			uint64_t v;

			fz_touch_str(d->name);
			fz_touch_str(d->type);
			if (d->name && cssnap_device(snap, d->name) == NULL) {
				fprintf(stderr, "device %s not found by name\n", d->name);
				abort();
			}
			for (size_t r = 0; r < d->nregs; r++)
				if (cssnap_reg(d, d->regs[r].name, &v) == 0)
					fz_sink += v;
			for (size_t k = 0; k < d->ndumps; k++)
				fz_touch_str(d->dumps[k].path);
		}
		for (size_t i = 0; i < snap->nbuf; i++)
			fz_touch_str(snap->buf[i].path);
		for (size_t i = 0; i < snap->ncore_src; i++)
			fz_touch_str(cssnap_core_of(snap, snap->core_src[i].b));
		cssnap_free(snap);
	} else if (!err[0]) {
		fprintf(stderr, "cssnap_load failed without a message\n");
		abort();
	}

	st = imgstore_new();
	if (!st)
		return 0;
	if (snapshot_open(dir, st, 1, &be, err, sizeof(err)) == 0) {
		struct ptd_event ev;

		for (size_t n = 0; n < MAX_EVENTS; n++) {
			if (be->next(be, &ev) < 0)
				break;
			fz_touch_str(ev.msg);
			fz_expect_event(ev.kind == PTD_EV_ERROR, ev.msg, &seen);
		}
		fz_touch_str(be->errmsg(be));
		for (size_t i = 0; i < coresight_warning_count(be); i++)
			fz_touch_str(coresight_warning(be, i));
		be->destroy(be);
	}
	imgstore_free(st);
	fz_expect_done(seen);
	return 0;
}
