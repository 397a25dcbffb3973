/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "cskey.h"
#include "csbackend.h"
#include "csdec.h"
#include "cspool.h"
#include "ptdecode.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>

/* perf's packet queue holds CS_ETM_PACKET_MAX_BUFFER (1024) - 1 packets. */
#define CSKEY_PACKETS 1023
/* Elements waiting for a key beyond which all are let go unkeyed (a trace
 * of nothing but contexts or errors). */
#define CSKEY_MAX_WAIT 65536

enum { PIDFMT_NONE, PIDFMT_CTXTID, PIDFMT_VMID };

struct cskey_ent {
	struct cs_elem e;
	char *text;
	uint64_t key;
	int keyed;
};

/* perf's cs_etm_packet_queue timing fields of one trace ID. */
struct cskey_id {
	uint64_t ts, next;
	uint32_t cnt, npk;
};

struct cskey {
	struct cskey_ent *q;
	size_t head, n, cap;
	size_t unkeyed;          /* first entry without a key */
	int end_rc;              /* the elements' end (0: not yet) */
	int out;                 /* q[head - 1] was handed out */
	struct cskey_id id[256];
	uint8_t pidfmt[256];
};

/* Which PE context field perf takes a thread from (cs_etm__get_pid_fmt). */
static uint8_t pid_fmt(const struct cs_source *s)
{
	if (s->proto == CS_PROTO_ETMV3 || s->proto == CS_PROTO_PTM)
		return s->etmcr & (1u << 14) ? PIDFMT_CTXTID : PIDFMT_NONE;
	if (s->trcconfigr & (1u << 7 | 1u << 15))
		return PIDFMT_VMID;
	return s->trcconfigr & (1u << 6) ? PIDFMT_CTXTID : PIDFMT_NONE;
}

struct cskey *cskey_new(const struct cs_backend *cb)
{
	struct cskey *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	for (size_t i = 0; i < cb->nq; i++)
		for (size_t s = 0; s < cb->q[i].nsrcs; s++)
			k->pidfmt[cb->q[i].srcs[s].trace_id] =
				pid_fmt(&cb->q[i].srcs[s]);
	return k;
}

void cskey_free(struct cskey *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		free(k->q[i].text);
	free(k->q);
	free(k);
}

/* The waiting elements of trace ID id (all with all) get key. */
static void release(struct cskey *k, int id, int all, uint64_t key)
{
	for (size_t i = k->unkeyed; i < k->n; i++)
		if (!k->q[i].keyed && (all || k->q[i].e.trace_id == id)) {
			k->q[i].keyed = 1;
			k->q[i].key = key;
		}
	while (k->unkeyed < k->n && k->q[k->unkeyed].keyed)
		k->unkeyed++;
}

static void reset(struct cskey_id *t)
{
	t->ts = t->next = 0;
	t->cnt = 0;
}

/* A packet of perf's queue: one more waiting; a full queue goes at once. */
static int packet(struct cskey *k, struct cskey_id *t, int id)
{
	if (++t->npk < CSKEY_PACKETS)
		return 0;
	t->npk = 0;
	release(k, id, 0, 0);
	return 1;
}

/* A block ends with key: what waited goes with it. */
static void block(struct cskey *k, struct cskey_id *t, int id, uint64_t key)
{
	t->npk = 0;
	release(k, id, 0, key);
}

/* The element just queued (perf's cs_etm_decoder__gen_trace_elem_printer). */
static void account(struct cskey *k, const struct cs_elem *e)
{
	struct cskey_id *t = &k->id[e->trace_id];
	int id = e->trace_id;

	switch (e->type) {
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
		if (packet(k, t, id))
			return;   /* perf counts no instructions then */
		t->cnt += e->num_i;
		if (t->ts) {
			t->ts = t->next;
			t->next += t->cnt;
			t->cnt = 0;
			block(k, t, id, t->ts);
		}
		break;
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
	case OCSD_GEN_TRC_ELEM_EXCEPTION_RET:
		packet(k, t, id);
		break;
	case OCSD_GEN_TRC_ELEM_NO_SYNC:
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		reset(t);
		packet(k, t, id);
		break;
	case OCSD_GEN_TRC_ELEM_EO_TRACE:
		/* the buffer's end: perf processes what waits at once */
		for (size_t i = 0; i < 256; i++) {
			reset(&k->id[i]);
			k->id[i].npk = 0;
		}
		release(k, 0, 1, 0);
		break;
	case OCSD_GEN_TRC_ELEM_TIMESTAMP:
		if (t->ts) {
			t->next = e->ts;
			break;
		}
		t->ts = !e->ts || t->cnt > e->ts ? 0 : e->ts - t->cnt;
		t->next = e->ts;
		t->cnt = 0;
		block(k, t, id, t->ts);
		break;
	case OCSD_GEN_TRC_ELEM_PE_CONTEXT:
		if ((k->pidfmt[id] == PIDFMT_CTXTID && e->ctx_valid) ||
		    (k->pidfmt[id] == PIDFMT_VMID && e->vmid_valid))
			reset(t);
		break;
	default:
		break;
	}
}

/* Queues cb's next element.  0, or the end / an error. */
static int pull(struct cs_backend *cb, struct cskey *k)
{
	const struct cs_elem *e;
	struct cskey_ent *x;
	int rc;

	if (cb->el_head == cb->el_n && (rc = cspool_pump(cb)))
		return rc;
	e = &cb->el[cb->el_head++];
	if (k->head == k->n) {
		k->head = k->n = k->unkeyed = 0;
	} else if (k->head > k->cap / 2) {
		memmove(k->q, k->q + k->head, (k->n - k->head) * sizeof(*k->q));
		k->n -= k->head;
		k->unkeyed -= k->head;
		k->head = 0;
	}
	if (util_grow((void **)&k->q, &k->cap, k->n + 1, sizeof(*k->q)))
		return PTD_ERR_NOMEM;
	x = &k->q[k->n];
	memset(x, 0, sizeof(*x));
	x->e = *e;
	if (e->type == CS_EL_ERROR && e->msg && cb->el_str &&
	    !(x->text = strdup(cb->el_str + e->msg - 1)))
		return PTD_ERR_NOMEM;
	k->n++;
	account(k, &x->e);
	if (k->n - k->unkeyed > CSKEY_MAX_WAIT)
		release(k, 0, 1, 0);
	return 0;
}

int cskey_next(struct cs_backend *cb, struct cskey *k, const struct cs_elem **e,
	       const char **text, uint64_t *key)
{
	if (k->out) {
		/* the entry handed out last is done with */
		free(k->q[k->head - 1].text);
		k->q[k->head - 1].text = NULL;
		k->out = 0;
	}
	while (k->head == k->unkeyed) {
		int rc = k->end_rc ? k->end_rc : pull(cb, k);

		if (rc) {
			k->end_rc = rc;
			release(k, 0, 1, 0);
			if (k->head == k->unkeyed)
				return rc;
		}
	}
	*e = &k->q[k->head].e;
	*text = k->q[k->head].text;
	*key = k->q[k->head].key;
	k->head++;
	k->out = 1;
	return 0;
}

#endif /* PTD_HAVE_OPENCSD */
