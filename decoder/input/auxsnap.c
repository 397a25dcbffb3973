/* SPDX-License-Identifier: MIT */
#include "auxsnap.h"
#include "input.h"
#include "intelpt_overlap.h"
#include "perf.h"
#include "perf_abi.h"
#include "perfdata.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int snapshot_mode(const struct input *in)
{
	return in->pd && in->have_aux_info &&
	       in->aux_type == PD_AUXTRACE_INTEL_PT &&
	       in->aux_npriv > INTELPT_INFO_TSC_BIT &&
	       in->aux_npriv > INTELPT_INFO_SNAPSHOT_MODE &&
	       in->aux_priv[INTELPT_INFO_SNAPSHOT_MODE];
}

/* Appends piece (data, size) to q. */
static void put_piece(struct input_queue *q, const uint8_t *data, size_t size)
{
	struct intelpt_piece *p = &q->pieces[q->npieces++];

	p->data = data;
	p->size = size;
	p->offset = q->size;
	q->size += size;
}

/* A new queue like model, its pieces room for up to n. */
static int new_queue(struct input_queue *out, size_t *nout,
		     const struct input_queue *model, size_t n)
{
	struct input_queue *q = &out[(*nout)++];

	memset(q, 0, sizeof(*q));
	q->idx = model->idx;
	q->cpu = model->cpu;
	q->tid = model->tid;
	q->pieces = calloc(n ? n : 1, sizeof(*q->pieces));
	return q->pieces ? 0 : PTD_ERR_NOMEM;
}

/* Queue q's snapshots into out: trimmed, split where one does not
 * continue the one before. */
static int fix_queue(struct input *in, const struct input_queue *q, int tsc,
		     struct input_queue *out, size_t *nout)
{
	struct ptd_stats *st = in->sink.stats;
	struct input_queue *cur;
	int rc = new_queue(out, nout, q, q->npieces);

	if (rc)
		return rc;
	cur = &out[*nout - 1];
	st->snapshots += q->npieces;
	if (q->npieces)
		put_piece(cur, q->pieces[0].data, q->pieces[0].size);
	for (size_t k = 1; k < q->npieces; k++) {
		const struct intelpt_piece *a = &q->pieces[k - 1], *b = &q->pieces[k];
		struct intelpt_overlap ov;

		intelpt_find_overlap(a->data, a->size, b->data, b->size, tsc, &ov);
		if (ov.consecutive)
			st->snapshot_overlap_bytes += ov.start;
		if (!ov.consecutive && ov.start < b->size) {
			st->snapshot_gaps++;
			rc = input_warn(in, "snapshot gap: cpu %d: AUX snapshot %zu does "
					"not continue snapshot %zu (the ring wrapped "
					"between them: trace lost); decoding starts "
					"over at the PSB %zu bytes into it (those "
					"bytes skipped)", (int)q->cpu, k, k - 1,
					ov.start);
			if (rc)
				return rc;
			if (cur->npieces) {
				snprintf(cur->gap_after, sizeof(cur->gap_after),
					 "snapshot gap: AUX snapshot %zu does not "
					 "continue snapshot %zu (the ring wrapped "
					 "between them): trace lost", k, k - 1);
				rc = new_queue(out, nout, q, q->npieces - k);
				if (rc)
					return rc;
				cur = &out[*nout - 1];
				cur->cont = 1;
			}
		}
		if (ov.start < b->size)
			put_piece(cur, b->data + ov.start, b->size - ov.start);
	}
	return 0;
}

int auxsnap_fix_queues(struct input *in, char *err, size_t errlen)
{
	struct input_queue *out;
	size_t nout = 0, cap = 0;
	int tsc, rc = 0;

	if (!snapshot_mode(in))
		return 0;
	tsc = perf_pt_have_tsc(in);
	for (size_t i = 0; i < in->nqueues; i++)
		cap += in->queues[i].npieces ? in->queues[i].npieces : 1;
	out = calloc(cap ? cap : 1, sizeof(*out));
	if (!out)
		rc = PTD_ERR_NOMEM;
	for (size_t i = 0; !rc && i < in->nqueues; i++)
		rc = fix_queue(in, &in->queues[i], tsc, out, &nout);
	if (rc) {
		for (size_t i = 0; out && i < nout; i++)
			free(out[i].pieces);
		free(out);
		util_errf(err, errlen, "out of memory");
		return rc;
	}
	for (size_t i = 0; i < nout; i++)
		if (out[i].npieces == 1)
			out[i].data = out[i].pieces[0].data;
	for (size_t i = 0; i < in->nqueues; i++)
		free(in->queues[i].pieces);
	free(in->queues);
	in->queues = out;
	in->nqueues = nout;
	in->sink.stats->queues = nout;
	in->sink.stats->trace_bytes = 0;   /* what is decoded: each byte once */
	for (size_t i = 0; i < nout; i++)
		in->sink.stats->trace_bytes += out[i].size;
	return 0;
}
