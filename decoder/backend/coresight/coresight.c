/* SPDX-License-Identifier: MIT */
#include "coresight.h"
#include "ptdecode.h"
#include "util.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PTD_HAVE_OPENCSD

int coresight_available(char *err, size_t errlen)
{
	util_errf(err, errlen, "this ptdecode was built without OpenCSD "
		  "(install libopencsd-dev and rebuild) and cannot decode "
		  "CoreSight trace");
	return PTD_ERR_UNSUPPORTED;
}

int coresight_core_arch(const char *type, int *arch, int *profile)
{ return -1; }

void coresight_opencsd_version(char *buf, size_t len)
{
	snprintf(buf, len, "none");
}

int coresight_open(const struct coresight_desc *desc, struct imgstore *st,
		   unsigned threads, struct backend **out, char *err,
		   size_t errlen)
{
	*out = NULL;
	return coresight_available(err, errlen);
}

int coresight_open_perf(const struct cs_etm_info *info,
			const struct coresight_queue_desc *queues,
			size_t nqueues, struct imgstore *st, unsigned threads,
			struct backend **out, char *err, size_t errlen)
{
	*out = NULL;
	return coresight_available(err, errlen);
}

int coresight_next_range(struct backend *b, struct coresight_range *r)
{ return PTD_ERR_UNSUPPORTED; }
size_t coresight_queue_count(const struct backend *b) { return 0; }
int coresight_queue_info(const struct backend *b, size_t i, int *cpu,
			 uint8_t *trace_id, int *proto)
{ return PTD_ERR_INVAL; }
size_t coresight_warning_count(const struct backend *b) { return 0; }
int coresight_set_perf_keys(struct backend *b) { return PTD_ERR_UNSUPPORTED; }
const char *coresight_warning(const struct backend *b, size_t i) { return NULL; }
void coresight_fast_units(const struct backend *b, uint64_t *fast,
			  uint64_t *fallback)
{ *fast = *fallback = 0; }

#else

#include "csbackend.h"
#include "csdec.h"
#include "csevent.h"
#include "cskey.h"
#include "cspool.h"
#include "cstree.h"

#include <opencsd/c_api/opencsd_c_api.h>

int coresight_available(char *err, size_t errlen)
{
	return 0;
}

void coresight_opencsd_version(char *buf, size_t len)
{
	uint32_t v = ocsd_get_version();   /* MMMMnnpp */

	snprintf(buf, len, "%u.%u.%u", (unsigned)(v >> 16), (unsigned)(v >> 8 & 0xff),
		 (unsigned)(v & 0xff));
}

/* ---- architecture of a core, from its type name ------------------------ */

/* Core names OpenCSD's snapshot reader knows (trc_core_arch_map). */
static const struct {
	const char *name;
	ocsd_arch_version_t arch;
	ocsd_core_profile_t prof;
} core_map[] = {
	{ "Cortex-A78", ARCH_V8, profile_CortexA },
	{ "Cortex-A77", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A76", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A75", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A73", ARCH_V8, profile_CortexA },
	{ "Cortex-A72", ARCH_V8, profile_CortexA },
	{ "Cortex-A65", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A57", ARCH_V8, profile_CortexA },
	{ "Cortex-A55", ARCH_V8r3, profile_CortexA },
	{ "Cortex-A53", ARCH_V8, profile_CortexA },
	{ "Cortex-A35", ARCH_V8, profile_CortexA },
	{ "Cortex-A32", ARCH_V8, profile_CortexA },
	{ "Cortex-A17", ARCH_V7, profile_CortexA },
	{ "Cortex-A15", ARCH_V7, profile_CortexA },
	{ "Cortex-A12", ARCH_V7, profile_CortexA },
	{ "Cortex-A9", ARCH_V7, profile_CortexA },
	{ "Cortex-A8", ARCH_V7, profile_CortexA },
	{ "Cortex-A7", ARCH_V7, profile_CortexA },
	{ "Cortex-A5", ARCH_V7, profile_CortexA },
	{ "Cortex-R52", ARCH_V8, profile_CortexR },
	{ "Cortex-R8", ARCH_V7, profile_CortexR },
	{ "Cortex-R7", ARCH_V7, profile_CortexR },
	{ "Cortex-R5", ARCH_V7, profile_CortexR },
	{ "Cortex-R4", ARCH_V7, profile_CortexR },
	{ "Cortex-M33", ARCH_V8, profile_CortexM },
	{ "Cortex-M23", ARCH_V8, profile_CortexM },
	{ "Cortex-M0", ARCH_V7, profile_CortexM },
	{ "Cortex-M0+", ARCH_V7, profile_CortexM },
	{ "Cortex-M3", ARCH_V7, profile_CortexM },
	{ "Cortex-M4", ARCH_V7, profile_CortexM },
};

static int profile_letter(char c, ocsd_core_profile_t *p)
{
	switch (c) {
	case 'A': *p = profile_CortexA; return 0;
	case 'R': *p = profile_CortexR; return 0;
	case 'M': *p = profile_CortexM; return 0;
	}
	return -1;
}

/* "ARMvM[.m]-P" */
static int arch_version_name(const char *name, int *arch, int *prof)
{
	ocsd_core_profile_t p = profile_CortexA;
	int maj = name[4] - '0', min = 0;
	const char *s = name + 5;

	if (*s == '.' && s[1] >= '0' && s[1] <= '9') {
		min = s[1] - '0';
		s += 2;
	}
	if (*s != '-' || profile_letter(s[1], &p) || maj < 7)
		return -1;
	*arch = maj == 7 ? ARCH_V7 : maj > 8 ? ARCH_AA64 :
		min < 3 ? ARCH_V8 : min == 3 ? ARCH_V8r3 : ARCH_AA64;
	*prof = p;
	return 0;
}

int coresight_core_arch(const char *name, int *arch, int *prof)
{
	ocsd_core_profile_t p = profile_CortexA;

	for (size_t i = 0; i < sizeof(core_map) / sizeof(core_map[0]); i++)
		if (!strcmp(core_map[i].name, name)) {
			*arch = core_map[i].arch;
			*prof = core_map[i].prof;
			return 0;
		}
	if (!strncmp(name, "ARMv", 4) && name[4] >= '0' && name[4] <= '9')
		return arch_version_name(name, arch, prof);
	/* ARM-AA64[-P] */
	if (!strncmp(name, "ARM-", 4) && (!strncmp(name + 4, "AA64", 4) ||
					  !strncmp(name + 4, "aa64", 4))) {
		if (name[8] == '-' && profile_letter(name[9], &p))
			p = profile_CortexA;
		*arch = ARCH_AA64;
		*prof = p;
		return 0;
	}
	return -1;
}

/* ---- the backend's interface -------------------------------------------- */

static struct cs_backend *to_cs(struct backend *b)
{
	return (struct cs_backend *)b;
}

int coresight_next_range(struct backend *b, struct coresight_range *r)
{
	struct cs_backend *cb = to_cs(b);

	for (;;) {
		const struct cs_elem *e;
		int rc = cspool_pump(cb);

		if (rc)
			return rc;
		e = &cb->el[cb->el_head++];
		if (e->type != OCSD_GEN_TRC_ELEM_INSTR_RANGE &&
		    e->type != OCSD_GEN_TRC_ELEM_ADDR_NACC)
			continue;
		memset(r, 0, sizeof(*r));
		r->queue = (uint32_t)cb->cur;
		r->cpu = cb->q[cb->cur].cpu;
		for (size_t i = 0; i < cb->q[cb->cur].nsrcs; i++)
			if (cb->q[cb->cur].srcs[i].trace_id == e->trace_id)
				r->cpu = cb->q[cb->cur].srcs[i].cpu;
		r->trace_id = e->trace_id;
		r->offset = e->index;
		r->start = e->st;
		r->mode = csevent_mode(e->isa);
		if (e->type == OCSD_GEN_TRC_ELEM_ADDR_NACC) {
			r->nacc = 1;
		} else {
			r->end = e->en;
			r->ninsns = e->num_i;
		}
		return 0;
	}
}

size_t coresight_queue_count(const struct backend *b)
{
	return ((const struct cs_backend *)b)->nq;
}

int coresight_queue_info(const struct backend *b, size_t i, int *cpu,
			 uint8_t *trace_id, int *proto)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;

	if (i >= cb->nq || !cb->q[i].nsrcs)
		return PTD_ERR_INVAL;
	*cpu = cb->q[i].cpu;
	*trace_id = cb->q[i].srcs[0].trace_id;
	*proto = cb->q[i].srcs[0].proto;
	return 0;
}

size_t coresight_warning_count(const struct backend *b)
{
	return ((const struct cs_backend *)b)->nwarn;
}

const char *coresight_warning(const struct backend *b, size_t i)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;

	return i < cb->nwarn ? cb->warn[i] : NULL;
}

/* ---- opening and closing ------------------------------------------------ */

static const char *cs_errmsg(struct backend *b)
{
	return to_cs(b)->errmsg;
}

static void cs_destroy(struct backend *b)
{
	struct cs_backend *cb = to_cs(b);

	if (!cb)
		return;
	cspool_stop(cb);
	cskey_free(cb->keys);
	csdec_free(&cb->main);
	for (size_t i = 0; i < cb->nq; i++) {
		free(cb->q[i].srcs);
		free(cb->q[i].chunks);
	}
	for (size_t i = 0; i < cb->nmaps; i++)
		util_unmap(&cb->maps[i]);
	for (size_t i = 0; i < cb->nwarn; i++)
		free(cb->warn[i]);
	free(cb->warn);
	free(cb->maps);
	free(cb->q);
	free(cb->units);
	free(cb->blk);
	free(cb);
}

static void cs_get_stats(const struct backend *b, struct backend_stats *st)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;

	memset(st, 0, sizeof(*st));
	st->pieces_ahead = __atomic_load_n(&cb->pieces_ahead, __ATOMIC_RELAXED);
	st->pieces_redone = __atomic_load_n(&cb->pieces_redone,
					    __ATOMIC_RELAXED);
}

void coresight_fast_units(const struct backend *b, uint64_t *fast,
			  uint64_t *fallback)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;

	*fast = __atomic_load_n(&cb->units_fast, __ATOMIC_RELAXED);
	*fallback = __atomic_load_n(&cb->units_fallback, __ATOMIC_RELAXED);
}

int coresight_set_perf_keys(struct backend *b)
{
	struct cs_backend *cb = to_cs(b);

	if (!cb->keys && !(cb->keys = cskey_new(cb)))
		return PTD_ERR_NOMEM;
	/* keyed elements go out through next only */
	cb->b.next_blocks = NULL;
	cb->b.block_info = NULL;
	cb->b.block_insn = NULL;
	return 0;
}

/* The bytes of the units before the one being consumed. */
static uint64_t cs_progress(const struct backend *b)
{
	const struct cs_backend *cb = (const struct cs_backend *)b;
	uint64_t done = 0;

	for (size_t i = 0; i < cb->ucur && i < cb->nunits; i++)
		done += cb->units[i].bytes;
	return done;
}

static struct cs_backend *cs_new(void)
{
	struct cs_backend *cb = calloc(1, sizeof(*cb));

	if (!cb)
		return NULL;
	cb->main.cb = cb;
	cb->cpu_id = -1;
	cb->ev0.pid = -1;
	cb->b.next = csevent_next;
	cb->b.errmsg = cs_errmsg;
	cb->b.progress = cs_progress;
	cb->b.get_stats = cs_get_stats;
	cb->b.destroy = cs_destroy;
	return cb;
}

/* Copies desc's arrays that outlive it: warnings, and the maps (owned
 * only once the backend is open).  Returns 0 or -1 out of memory. */
static int copy_desc(struct cs_backend *cb, const struct coresight_desc *desc)
{
	cb->q = calloc(desc->nqueues + 1, sizeof(*cb->q));
	cb->warn = calloc(desc->nwarnings + 1, sizeof(*cb->warn));
	cb->maps = calloc(desc->nmaps + 1, sizeof(*cb->maps));
	if (!cb->q || !cb->warn || !cb->maps)
		return -1;
	if (desc->nmaps)
		memcpy(cb->maps, desc->maps, desc->nmaps * sizeof(*cb->maps));
	for (size_t i = 0; i < desc->nwarnings; i++) {
		cb->warn[cb->nwarn] = strdup(desc->warnings[i]);
		if (cb->warn[cb->nwarn])
			cb->nwarn++;
	}
	return 0;
}

/* Appends queue d to cb.  Returns 0 or -1 out of memory. */
static int add_queue(struct cs_backend *cb, const struct coresight_queue *d)
{
	struct csq *q = &cb->q[cb->nq++];

	q->cpu = d->cpu;
	q->formatted = d->formatted;
	q->dfmt_flags = d->frame_syncs ? OCSD_DFRMTR_HAS_FSYNCS
				       : OCSD_DFRMTR_FRAME_MEM_ALIGN;
	q->srcs = calloc(d->nsources + 1, sizeof(*q->srcs));
	q->chunks = calloc(d->nchunks + 1, sizeof(*q->chunks));
	if (!q->srcs || !q->chunks)
		return -1;
	if (d->nsources)
		memcpy(q->srcs, d->sources, d->nsources * sizeof(*q->srcs));
	if (d->nchunks)
		memcpy(q->chunks, d->chunks, d->nchunks * sizeof(*q->chunks));
	q->nsrcs = d->nsources;
	q->nchunks = d->nchunks;
	return 0;
}

/* Checks every queue's configuration now rather than mid-stream, cuts the
 * queues into units and starts the pool. */
static int cs_ready(struct cs_backend *cb, unsigned threads, char *err,
		    size_t errlen)
{
	for (size_t i = 0; i < cb->nq; i++) {
		int rc;

		cb->main.tree = cstree_make(&cb->main, &cb->q[i], err, errlen);
		if (!cb->main.tree)
			return PTD_ERR_DECODE;
		csdec_close(&cb->main);
		rc = cspool_add_units(cb, i, err, errlen);
		if (rc)
			return rc;
	}
	cspool_start(cb, threads);
	return 0;
}

int coresight_open(const struct coresight_desc *desc, struct imgstore *st,
		   unsigned threads, struct backend **out, char *err,
		   size_t errlen)
{
	struct cs_backend *cb;
	int rc = PTD_ERR_NOMEM;

	*out = NULL;
	cb = cs_new();
	if (!cb || copy_desc(cb, desc))
		goto nomem;
	cb->st = st;
	cb->fast = !(threads & CORESIGHT_OPENCSD);
	threads &= ~CORESIGHT_OPENCSD;
	if (cb->fast) {
		cb->b.next_blocks = csevent_next_blocks;
		cb->b.block_info = csevent_block_info;
		cb->b.block_insn = csevent_block_insn;
	}
	for (size_t i = 0; i < desc->nqueues; i++)
		if (add_queue(cb, &desc->queues[i]))
			goto nomem;
	rc = cs_ready(cb, threads, err, errlen);
	if (rc)
		goto fail;
	cb->nmaps = desc->nmaps;
	*out = &cb->b;
	return 0;
nomem:
	util_errf(err, errlen, "out of memory");
fail:
	if (cb)
		cs_destroy(&cb->b);
	return rc;
}

/* ---- perf AUX queues ---------------------------------------------------- */

/* Picks the sources of info that may occur in AUX queue i (d) into q's
 * srcs.  Returns 0 or PTD_ERR_CORRUPT with a message in err. */
static int perf_sources(const struct cs_etm_info *info,
			const struct coresight_queue_desc *d, size_t i,
			struct cs_source *srcs, struct coresight_queue *q,
			char *err, size_t errlen)
{
	q->sources = srcs;
	for (uint32_t c = 0; c < info->nr_cpu; c++) {
		const struct cs_source *s = &info->cpus[c];

		if (!d->formatted && s->cpu != d->cpu)
			continue;
		if (d->formatted && !s->trace_id_valid)
			continue;
		srcs[q->nsources++] = *s;
		if (!d->formatted)
			break;
	}
	if (q->nsources)
		return 0;
	util_errf(err, errlen, "AUX queue %zu (cpu %d): no ETM configuration%s "
		  "in AUXTRACE_INFO", i, d->cpu, d->formatted ?
		  " with a valid trace ID" : " for that CPU");
	return PTD_ERR_CORRUPT;
}

int coresight_open_perf(const struct cs_etm_info *info,
			const struct coresight_queue_desc *queues,
			size_t nqueues, struct imgstore *st, unsigned threads,
			struct backend **out, char *err, size_t errlen)
{
	struct coresight_desc desc = { 0 };
	struct coresight_queue *cq;
	struct cs_source *srcs;
	int rc = 0;

	*out = NULL;
	if (!info || !info->nr_cpu || (!queues && nqueues)) {
		util_errf(err, errlen, "coresight_open_perf: no ETM configuration");
		return PTD_ERR_INVAL;
	}
	cq = calloc(nqueues + 1, sizeof(*cq));
	srcs = calloc(nqueues * info->nr_cpu + 1, sizeof(*srcs));
	if (!cq || !srcs) {
		util_errf(err, errlen, "out of memory");
		rc = PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < nqueues && !rc; i++) {
		cq[i].chunks = queues[i].chunks;
		cq[i].nchunks = queues[i].nchunks;
		cq[i].cpu = queues[i].cpu;
		cq[i].formatted = queues[i].formatted;
		rc = perf_sources(info, &queues[i], i, srcs + i * info->nr_cpu,
				  &cq[i], err, errlen);
	}
	desc.queues = cq;
	desc.nqueues = nqueues;
	if (!rc)
		rc = coresight_open(&desc, st, threads, out, err, errlen);
	free(cq);
	free(srcs);
	return rc;
}

#endif /* PTD_HAVE_OPENCSD */
