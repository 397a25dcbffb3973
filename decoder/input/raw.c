/* SPDX-License-Identifier: MIT */
#include "raw.h"
#include "imgstore.h"
#include "input.h"
#include "rawimage.h"
#include "util.h"

#include <stdlib.h>

/* The whole file is one queue: no CPU, the kernel's address space (the
 * images are loaded there). */
static int add_raw_queue(struct input *in)
{
	struct input_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return PTD_ERR_NOMEM;
	q->cpu = -1;
	q->tid = IMGSTORE_KERNEL;
	q->data = in->file_map.data;
	q->size = in->file_map.size;
	in->queues = q;
	in->nqueues = 1;
	in->sink.stats->trace_bytes = q->size;
	in->sink.stats->queues = 1;
	return 0;
}

int raw_load(struct input *in, const char *path, char *err, size_t errlen)
{
	char msg[512];
	int rc;

	rc = util_map_file(path, &in->file_map, msg, sizeof(msg));
	if (rc) {
		util_errf(err, errlen, "%s", msg);
		return rc;
	}
	if (!in->file_map.size) {
		util_errf(err, errlen, "%s is empty", path);
		return PTD_ERR_NO_TRACE;
	}
	for (size_t i = 0; i < in->opts->n_raw_images; i++) {
		rc = rawimage_add(in->st, &in->opts->raw_images[i], msg, sizeof(msg));
		if (rc) {
			util_errf(err, errlen, "%s", msg);
			return rc;
		}
	}
	return add_raw_queue(in);
}
