/* SPDX-License-Identifier: MIT */
#include "input.h"
#include "capdir.h"
#include "detect.h"
#include "dyntext.h"
#include "imgstore.h"
#include "kcoredir.h"
#include "machines.h"
#include "perf.h"
#include "perfdata.h"
#include "raw.h"
#include "rawimage.h"
#include "sideband.h"
#include "symtab.h"
#include "textstore.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int input_new(struct input **out, const struct ptd_open_opts *opts,
	      const struct input_sink *sink)
{
	struct input *in = calloc(1, sizeof(*in));

	*out = in;
	if (!in)
		return PTD_ERR_NOMEM;
	in->opts = opts;
	in->sink = *sink;
	in->st = imgstore_new();
	in->sb = sideband_new();
	in->sbsyms = symtab_new();
	in->dt = dyntext_new();
	in->machines = machines_new();
	if (!in->st || !in->sb || !in->sbsyms || !in->dt || !in->machines)
		return PTD_ERR_NOMEM;
	if (opts->flags & PTD_OPEN_NO_VERSIONING)
		imgstore_set_no_versioning(in->st, 1);
	return 0;
}

void input_free(struct input *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < in->nqueues; i++) {
		free(in->queues[i].owned);
		free(in->queues[i].pieces);
	}
	util_unmap(&in->file_map);
	for (size_t i = 0; i < in->nfile_maps; i++)
		util_unmap(&in->file_maps[i]);
	free(in->file_maps);
	free(in->queues);
	free(in->chunks);
	free(in->record_times);
	free(in->aux_priv);
	free(in->hw_ids);
	perfdata_close(in->pd);
	textstore_close(in->ts);
	imgstore_free(in->st);
	sideband_free(in->sb);
	machines_free(in->machines);
	free(in->path);
	free(in->perf_path);
	free(in->dir);
	symtab_free(in->ksyms);
	kcoredir_free(in->kcore);
	dyntext_free(in->dt);
	for (size_t i = 0; i < in->njitdumps; i++)
		free(in->jitdumps[i]);
	free(in->jitdumps);
	buildid_cache_free(&in->bids);
	free(in->bid_dirs);
	symtab_free(in->sbsyms);
	free(in);
}

int input_warn(struct input *in, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return in->sink.warn(in->sink.ctx, buf);
}

/* The kernel's code (--vmlinux) and symbols (--kallsyms). */
static int load_kernel_files(struct input *in, char *err, size_t errlen)
{
	char msg[512];
	int rc;

	if (in->opts->vmlinux) {
		struct ptd_raw_image ri = { .kind = PTD_RAW_ELF,
					    .path = in->opts->vmlinux };

		rc = rawimage_add(in->st, &ri, msg, sizeof(msg));
		if (rc) {
			util_errf(err, errlen, "--vmlinux: %s", msg);
			return rc;
		}
	}
	if (in->opts->kallsyms) {
		rc = symtab_from_kallsyms(&in->ksyms, in->opts->kallsyms, msg,
					  sizeof(msg));
		if (rc) {
			util_errf(err, errlen, "--kallsyms: %s", msg);
			return rc;
		}
	}
	return 0;
}

/* A raw trace without images: raw bytes mean nothing without the code
 * they ran through. */
static int no_raw_images(const char *path, int explicit_kind, char *err,
			 size_t errlen)
{
	if (!explicit_kind) {
		util_errf(err, errlen, "%s is not a perf.data file (no PERFILE2 "
			  "magic); for a raw Intel PT trace give it with --pt and "
			  "its code with --raw/--elf/--pages", path);
		return PTD_ERR_FORMAT;
	}
	util_errf(err, errlen, "raw trace %s: no images given (use --raw "
		  "FILE:ADDR, --elf FILE[:BASE] or --pages)", path);
	return PTD_ERR_INVAL;
}

/* Runs the loader of in->kind. */
static int load_kind(struct input *in, const char *path, int explicit_kind,
		     char *err, size_t errlen)
{
	switch (in->kind) {
	case PTD_INPUT_RAW_PT:
		if (!in->opts->n_raw_images)
			return no_raw_images(path, explicit_kind, err, errlen);
		return raw_load(in, path, err, errlen);
	case PTD_INPUT_CS_SNAPSHOT:
		return 0;       /* read by the CoreSight backend (backend_choice) */
	case PTD_INPUT_CAPTURE_DIR:
	case PTD_INPUT_PERF_DATA:
		if (!in->perf_path && !(in->perf_path = strdup(path)))
			return PTD_ERR_NOMEM;
		return in->dir ? capdir_load(in, err, errlen) :
		       perf_load(in, err, errlen);
	default:
		util_errf(err, errlen, "%s is neither a capture directory (with "
			  "perf.data), a perf.data directory (with data), an OpenCSD snapshot directory (with "
			  "snapshot.ini), a perf.data file, nor a raw trace", path);
		return PTD_ERR_FORMAT;
	}
}

int input_load(struct input *in, const char *path, enum ptd_input_kind kind,
	       char *err, size_t errlen)
{
	enum ptd_input_kind found;
	int rc;

	if (!path) {
		util_errf(err, errlen, "no input given");
		return PTD_ERR_INVAL;
	}
	rc = load_kernel_files(in, err, errlen);
	if (rc)
		return rc;
	if (access(path, R_OK)) {
		util_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return PTD_ERR_IO;
	}
	in->path = strdup(path);
	if (!in->path)
		return PTD_ERR_NOMEM;
	found = detect_input_kind(path, &in->perf_path, &in->dir);
	in->kind = kind == PTD_INPUT_AUTO ? found : kind;
	if (in->kind != PTD_INPUT_CAPTURE_DIR && in->kind != PTD_INPUT_PERF_DATA) {
		/* only a capture or a perf.data reads what detection found */
		free(in->perf_path);
		free(in->dir);
		in->perf_path = in->dir = NULL;
	}
	return load_kind(in, path, kind != PTD_INPUT_AUTO, err, errlen);
}
