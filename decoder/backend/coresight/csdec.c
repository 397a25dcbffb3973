/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "csdec.h"
#include "csbackend.h"
#include "csfast.h"
#include "cstree.h"
#include "ptdecode.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trace bytes handed to OpenCSD per call. */
#define CS_BLOCK (1u << 20)

void csdec_close(struct cs_dec *d)
{
	if (d->tree)
		cstree_destroy(d->tree);
	d->tree = NULL;
}

void csdec_free(struct cs_dec *d)
{
	csdec_close(d);
	csfast_free(d);
	free(d->el);
	free(d->str);
	d->el = NULL;
	d->str = NULL;
	d->el_n = d->el_cap = d->str_n = d->str_cap = 0;
}

void csdec_push_error(struct cs_dec *d, uint64_t index, const char *msg)
{
	struct cs_elem *e;
	size_t len = msg ? strlen(msg) + 1 : 0;

	if (util_grow((void **)&d->el, &d->el_cap, d->el_n + 1,
		      sizeof(*d->el)) ||
	    (len && util_grow((void **)&d->str, &d->str_cap, d->str_n + len, 1))) {
		d->nomem = 1;
		return;
	}
	e = &d->el[d->el_n++];
	memset(e, 0, sizeof(*e));
	e->type = CS_EL_ERROR;
	e->index = index;
	e->trace_id = d->cb->q[d->u->q].nsrcs ? d->cb->q[d->u->q].srcs[0].trace_id
					       : 0;
	if (len) {
		memcpy(d->str + d->str_n, msg, len);
		e->msg = (uint32_t)d->str_n + 1;
		d->str_n += len;
	}
}

/* The state each chunk starts from: the decoders reset, the guard's
 * speculation tracking too (its configuration stays). */
static void chunk_reset(struct cs_dec *d)
{
	uint32_t used = 0;

	ocsd_dt_process_data(d->tree, OCSD_OP_RESET, 0, 0, NULL, &used);
	for (size_t i = 0; i < 128; i++)
		csguard_reset(&d->guard[i]);
	d->pos = 0;
	d->flush = d->eot_sent = 0;
}

int csdec_start(struct cs_dec *d, const struct cs_unit *u, char *err,
		size_t errlen)
{
	d->u = u;
	d->done = d->fatal = d->ocsd_err = 0;
	d->fast_on = 0;
	if (d->cb->fast) {
		d->fast_on = csfast_start(d, u);
		__atomic_add_fetch(d->fast_on ? &d->cb->units_fast
				   : &d->cb->units_fallback, 1, __ATOMIC_RELAXED);
		if (d->fast_on)
			return 0;
	}
	if (d->tree && d->tree_q != u->q)
		csdec_close(d);
	if (!d->tree) {
		d->tree = cstree_make(d, &d->cb->q[u->q], err, errlen);
		if (!d->tree)
			return PTD_ERR_DECODE;
		d->tree_q = u->q;
	}
	d->u = u;
	d->chunk = u->c0;
	d->done = d->fatal = d->ocsd_err = 0;
	chunk_reset(d);
	return 0;
}

/* Hands OpenCSD the next block of the current chunk, its end of trace,
 * or moves on to the next chunk; *index is the block's trace index. */
static ocsd_datapath_resp_t step_chunk(struct cs_dec *d, uint64_t *index)
{
	const struct csq *q = &d->cb->q[d->u->q];
	const struct coresight_chunk *c = &q->chunks[d->chunk];
	ocsd_datapath_resp_t resp = OCSD_RESP_CONT;
	uint32_t used = 0;

	d->pid = c->pid;
	d->time = c->time;
	*index = c->offset + d->pos;
	if (d->pos < c->size) {
		size_t left = c->size - d->pos;
		uint32_t blk = left > CS_BLOCK ? CS_BLOCK : (uint32_t)left;

		resp = ocsd_dt_process_data(d->tree, OCSD_OP_DATA, *index, blk,
					    c->data + d->pos, &used);
		d->pos += used > blk ? blk : used;
		d->flush = OCSD_DATA_RESP_IS_WAIT(resp);
		if (!used && !d->flush && !OCSD_DATA_RESP_IS_FATAL(resp))
			resp = OCSD_RESP_FATAL_INVALID_DATA;
	} else if (!d->eot_sent) {
		resp = ocsd_dt_process_data(d->tree, OCSD_OP_EOT, 0, 0, NULL,
					    &used);
		d->eot_sent = 1;
		d->flush = OCSD_DATA_RESP_IS_WAIT(resp);
	} else {
		/* next chunk: perf does not promise that it continues
		 * this one */
		d->chunk++;
		if (d->chunk < d->u->c1)
			chunk_reset(d);
	}
	return resp;
}

/* An error element for an OpenCSD error at index, with OpenCSD's text. */
static void push_ocsd_error(struct cs_dec *d, uint64_t index)
{
	char m[256] = "", text[300];
	ocsd_trc_index_t idx = 0;
	uint8_t chan = 0;

	/* OpenCSD's error log is one object for all threads: while a pool
	 * runs it is off, and a unit with an error is decoded again alone
	 * (cspool) to read it */
	if (d->quiet) {
		d->ocsd_err = 1;
	} else {
		ocsd_get_last_err(&idx, &chan, m, sizeof(m));
		m[strcspn(m, "\n")] = 0;
	}
	snprintf(text, sizeof(text), "OpenCSD: %s", m[0] ? m : "decode error");
	csdec_push_error(d, index, text);
}

void csdec_step(struct cs_dec *d)
{
	ocsd_datapath_resp_t resp = OCSD_RESP_CONT;
	uint32_t used = 0;
	uint64_t index = 0;

	if (d->fast_on) {
		csfast_step(d);
		return;
	}
	d->call_start = d->el_n;
	if (d->flush) {
		resp = ocsd_dt_process_data(d->tree, OCSD_OP_FLUSH, 0, 0, NULL,
					    &used);
		d->flush = OCSD_DATA_RESP_IS_WAIT(resp);
	} else if (d->chunk < d->u->c1) {
		resp = step_chunk(d, &index);
	} else {
		d->done = 1;
		return;
	}
	if (OCSD_DATA_RESP_IS_ERR(resp) || OCSD_DATA_RESP_IS_FATAL(resp))
		push_ocsd_error(d, index);
	if (OCSD_DATA_RESP_IS_FATAL(resp)) {
		/* this queue cannot go on; the others can */
		csdec_close(d);
		d->fatal = d->done = 1;
	}
}

#endif /* PTD_HAVE_OPENCSD */
