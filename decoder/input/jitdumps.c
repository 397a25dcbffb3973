/* SPDX-License-Identifier: MIT */
#include "jitdumps.h"
#include "buildid.h"
#include "dyntext.h"
#include "input.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int jitdumps_note(struct input *in, const char *path)
{
	for (size_t i = 0; i < in->njitdumps; i++)
		if (!strcmp(in->jitdumps[i], path))
			return 0;
	if (util_grow((void **)&in->jitdumps, &in->jcap, in->njitdumps + 1,
		      sizeof(char *)) ||
	    !(in->jitdumps[in->njitdumps] = strdup(path)))
		return PTD_ERR_NOMEM;
	in->njitdumps++;
	return 0;
}

/* 1 when the capture holds its own copy of the jitdump a MMAP named (its
 * jit/<name>, on the capture's clock), else 0. */
static int capture_has_copy(const struct input *in, const char *jitdump)
{
	const char *base = strrchr(jitdump, '/');
	char path[4096];
	struct stat sb;

	base = base ? base + 1 : jitdump;
	if (!in->dir || !strncmp(jitdump, in->dir, strlen(in->dir)))
		return 0;
	snprintf(path, sizeof(path), "%.3800s/jit/%.200s", in->dir, base);
	return !stat(path, &sb);
}

void jitdumps_load(struct input *in)
{
	char err[512], why[256];
	int rc;

	for (size_t i = 0; i < in->njitdumps; i++) {
		char *f;

		if (capture_has_copy(in, in->jitdumps[i]))
			continue;
		f = buildid_resolve_file(in, in->jitdumps[i], NULL, why, sizeof(why));
		if (!f) {
			input_warn(in, "jitdump %s: %s: JIT code decodes as gaps",
				   in->jitdumps[i], why);
			continue;
		}
		rc = dyntext_load_jitdump(in->dt, f, in->st, in->sbsyms, NULL, err,
					  sizeof(err));
		if (rc < 0)
			input_warn(in, "jitdump %s: %s", f, err);
		free(f);
	}
}
