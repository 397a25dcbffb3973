/* SPDX-License-Identifier: MIT */
#include "capdir.h"
#include "perf_abi.h"
#include "buildid.h"
#include "dyntext.h"
#include "imgstore.h"
#include "input.h"
#include "jitdumps.h"
#include "perf.h"
#include "symtab.h"
#include "textstore.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text store row i into the image store.  Returns 0 or a negative
 * PTD_ERR_* with a message in err. */
static int add_text_row(struct input *in, size_t i, char *err, size_t errlen)
{
	const struct textstore_entry *e = textstore_get(in->ts, i);
	const uint8_t *bytes = NULL;
	char msg[512];
	int rc;

	if (strcmp(e->hash, "-") &&
	    textstore_bytes(in->ts, i, &bytes, msg, sizeof(msg))) {
		input_warn(in, "%s: the range decodes as a gap", msg);
		bytes = NULL;
	}
	rc = imgstore_add_bytes(in->st, e->pid, e->start, e->len, bytes,
				e->valid_from, e->valid_to, e->name);
	if (rc < 0) {
		util_errf(err, errlen, "text store row %zu: bad range", i);
		return rc;
	}
	if (!strcmp(e->kind, "file") && e->name[0] == '/') {
		char why[256];
		char *f = buildid_resolve_file(in, e->name, strcmp(e->build_id, "-") ?
					       e->build_id : NULL, why, sizeof(why));

		/* symbols come from the file only if it is the same */
		if (f)
			imgstore_set_origin(in->st, rc, f, e->pgoff);
		free(f);
	} else if (!strncmp(e->kind, "bpf", 3) || !strcmp(e->kind, "jit") ||
		   !strcmp(e->kind, "trampoline")) {
		symtab_add(in->sbsyms, e->name, e->start, e->len);
	}
	return 0;
}

static int add_text_store(struct input *in, char *err, size_t errlen)
{
	char path[4096], msg[512];
	int rc;

	snprintf(path, sizeof(path), "%s/text", in->dir);
	rc = textstore_open(path, &in->ts, msg, sizeof(msg));
	if (rc) {
		util_errf(err, errlen, "%s", msg);
		return rc;
	}
	for (size_t i = 0; i < textstore_count(in->ts); i++) {
		rc = add_text_row(in, i, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* Calls fn with the path and name of each file in the capture's jit/
 * folder. */
static void for_each_jit_file(struct input *in,
			      void (*fn)(struct input *in, const char *path,
					 const char *name))
{
	char dir[4096], path[4096];
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/jit", in->dir);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "%.3800s/%.255s", dir, e->d_name);
		fn(in, path, e->d_name);
	}
	if (d)
		closedir(d);
}

/* A jitdump the capture keeps. */
static void note_jitdump(struct input *in, const char *path, const char *name)
{
	if (perf_abi_is_jitdump_name(name))
		jitdumps_note(in, path);
}

/* A perf map in the capture: names only (gaps unless code is known). */
static void load_perf_map(struct input *in, const char *path, const char *name)
{
	char err[512];

	if (strncmp(name, "perf-", 5) || !strstr(name, ".map"))
		return;
	if (dyntext_load_perfmap(in->dt, path, -1, in->st, in->sbsyms, err,
				 sizeof(err)) < 0)
		input_warn(in, "perf map %s: %s", path, err);
}

/* BPF metadata, jitdump files (from the capture's jit/ dir and those the
 * trace's MMAPs name) and perf maps. */
static void load_dyntext(struct input *in)
{
	char err[512];

	if (dyntext_load_bpf(in->dt, in->dir, in->ts, err, sizeof(err)) < 0)
		input_warn(in, "BPF metadata: %s", err);
	for_each_jit_file(in, note_jitdump);
	jitdumps_load(in);
	for_each_jit_file(in, load_perf_map);
}

int capdir_load(struct input *in, char *err, size_t errlen)
{
	int rc = buildid_use_capture_dir(in);

	if (!rc)
		rc = perf_read_sideband(in, err, errlen);
	if (rc)
		return rc;
	/* after the sideband: text-store rows carry their own validity, which
	 * mappings, execs and unregisters seen in the sideband must not end */
	rc = add_text_store(in, err, errlen);
	if (rc)
		return rc;
	load_dyntext(in);
	return perf_build_queues(in, err, errlen);
}
