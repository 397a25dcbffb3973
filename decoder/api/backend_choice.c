/* SPDX-License-Identifier: MIT */
#include "backend_choice.h"
#include "perfclock.h"
#include "prefetch.h"
#include "queuemerge.h"
#include "perf_abi.h"
#include "coresight.h"
#include "fastpt.h"
#include "imgstore.h"
#include "input.h"
#include "intelpt.h"
#include "perf.h"
#include "perfdata.h"
#include "sideband.h"
#include "snapshot.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Intel PT                                                            */

/* The check of a queue in pieces: the first PSB from the front, the tail
 * from the last piece. */
static void check_pieces(const struct intelpt_params *p,
			 const struct intelpt_queue *q,
			 struct intelpt_queue_check *qc)
{
	struct intelpt_queue_check pc;
	size_t k;

	memset(qc, 0, sizeof(*qc));
	qc->first_psb = q->size;
	for (k = 0; k < q->npieces; k++) {
		const struct intelpt_piece *pp = &q->pieces[k];

		if (intelpt_check_queue(p, pp->data, pp->size, &pc) == 0 &&
		    pc.first_psb < pp->size) {
			qc->first_psb = pp->offset + pc.first_psb;
			break;
		}
	}
	k = q->npieces - 1;
	if (q->npieces &&
	    intelpt_check_queue(p, q->pieces[k].data, q->pieces[k].size,
				&pc) == 0 && pc.tail_cut) {
		qc->tail_cut = 1;
		qc->tail_offset = q->pieces[k].offset + pc.tail_offset;
	}
}

/* Nothing lost silently: trace that cannot be decoded is said. */
static void warn_undecodable(struct input *in, const struct intelpt_params *p,
			     const struct intelpt_queue *q, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct intelpt_queue_check qc;

		if (q[i].data) {
			if (intelpt_check_queue(p, q[i].data, q[i].size, &qc))
				continue;
		} else {
			check_pieces(p, &q[i], &qc);
		}
		if (qc.first_psb == q[i].size && q[i].size) {
			input_warn(in, "trace queue %zu (cpu %d): no PSB in its %zu "
				   "bytes, so none of it can be decoded", i, q[i].cpu,
				   q[i].size);
			in->sink.stats->lost++;
		} else if (qc.first_psb) {
			input_warn(in, "trace queue %zu (cpu %d): %" PRIu64 " bytes "
				   "before the first PSB cannot be decoded", i,
				   q[i].cpu, qc.first_psb);
		}
		if (qc.tail_cut) {
			input_warn(in, "trace queue %zu (cpu %d) ends inside a packet "
				   "at offset %#" PRIx64 " (AUX data cut short): the "
				   "flow stops before it", i, q[i].cpu, qc.tail_offset);
			in->sink.stats->lost++;
		}
	}
}

/* The recording CPU: one the linked libipt does not know is decoded
 * without that model's errata work-arounds, which is said once (a warning
 * and stats.cpu_unknown).  source names where the CPU came from. */
static void check_cpu(struct input *in, const struct intelpt_params *p,
		      const char *source)
{
	char v[64];

	if (intelpt_cpu_known(p))
		return;
	intelpt_libipt_version(v, sizeof(v));
	input_warn(in, "%s %u/%u/%u: CPU family %u model %u is unknown to libipt "
		   "%s (the libipt this ptdecode runs with): decoded without "
		   "that CPU's errata work-arounds", source, p->family, p->model,
		   p->stepping, p->family, p->model, v);
	in->sink.stats->cpu_unknown = 1;
}

/* The Intel PT backend the options ask for. */
static int new_ipt_backend(const struct ptd_open_opts *o, struct input *in,
			   const struct intelpt_params *p,
			   const struct intelpt_queue *q, size_t n,
			   const struct sideband *sb, struct backend **out,
			   char *err, size_t errlen)
{
	struct intelpt_params pr = *p;

	/* perf.data's decoder is perf's: it decodes on from the next IP
	 * after an error; a raw trace's is ptxed's (sb NULL) */
	pr.resync_on_error = !(o->flags & PTD_OPEN_RESYNC_AT_PSB) &&
			     ((o->flags & PTD_OPEN_RESYNC_ON_ERROR) ||
			      ((o->flags & PTD_OPEN_RESYNC_PERF_DATA) && sb));
	pr.resync_as_perf = sb != NULL;
	/* a raw trace's memory is one space: PIP.NR picks none */
	pr.machines = sb ? in->machines : NULL;
	pr.guest_code = !!(o->flags & PTD_OPEN_GUEST_CODE);
	if (o->decoder == PTD_DECODER_LIBIPT)
		return intelpt_new(&pr, q, n, in->st, sb, out, err, errlen);
	return fastpt_new(&pr, q, n, in->st, sb, o->threads, o->block_cache_max,
			  ((o->flags & PTD_OPEN_COUNT_ONLY) && !o->time_start &&
			   !o->time_end ? FASTPT_COUNT_ONLY : 0) |
			  ((o->flags & PTD_OPEN_INSN_TEXT) ? FASTPT_KEEP_TEXT : 0),
			  out, err, errlen);
}

/* The IP filters given in the options (--filter:addrN_*) into p, and
 * those the decoder uses into the statistics. */
static int set_filters(const struct ptd_open_opts *o, struct input *in,
		       struct intelpt_params *p, char *err, size_t errlen)
{
	struct ptd_stats *st = in->sink.stats;

	for (int n = 0; n < 4; n++) {
		if (o->addr_cfg[n] > 15) {
			util_errf(err, errlen, "bad --filter:addr%d_cfg %u: "
				  "IA32_RTIT_CTL.ADDR%d_CFG has 4 bits (0 unused, 1 "
				  "filter, 2 stop)", n, o->addr_cfg[n], n);
			return PTD_ERR_INVAL;
		}
		if (!o->addr_cfg[n] && !o->addr_a[n] && !o->addr_b[n])
			continue;
		p->addr_cfg[n] = o->addr_cfg[n];
		p->addr_a[n] = o->addr_a[n];
		p->addr_b[n] = o->addr_b[n];
	}
	memcpy(st->addr_cfg, p->addr_cfg, sizeof(st->addr_cfg));
	memcpy(st->addr_a, p->addr_a, sizeof(st->addr_a));
	memcpy(st->addr_b, p->addr_b, sizeof(st->addr_b));
	return 0;
}

/* perf record --filter's IP filters, placed in the address space. */
static void recorded_filters(struct input *in, struct intelpt_params *p)
{
	for (size_t i = 0; i < in->npt_filters; i++) {
		const struct input_pt_filter *pf = &in->pt_filters[i];

		if (!pf->placed) {
			input_warn(in, "perf.data's IP filter %zu (%#" PRIx64 "/%#" PRIx64
				   "@%s): no executable mapping of that file range in "
				   "the recording: decoding without it", i, pf->f.addr,
				   pf->f.size, pf->f.file);
			continue;
		}
		if (pf->elsewhere)
			input_warn(in, "perf.data's IP filter %zu (%#" PRIx64 "/%#" PRIx64
				   "@%s): the file is mapped at %" PRIu64 " more "
				   "addresses; libipt gets the first, [%#" PRIx64 ", %#"
				   PRIx64 "]", i, pf->f.addr, pf->f.size, pf->f.file,
				   pf->elsewhere, pf->a, pf->b);
		p->addr_cfg[i] = pf->f.cfg;
		p->addr_a[i] = pf->a;
		p->addr_b[i] = pf->b;
	}
}

/* A raw trace: one queue in the kernel's address space, no sideband, the
 * CPU from --cpu, the IP filters from the options. */
static int open_raw_pt(const struct ptd_open_opts *o, struct input *in,
		       struct backend **out, char *err,
		       size_t errlen)
{
	const struct input_queue *iq = &in->queues[0];
	struct intelpt_params params;
	struct intelpt_queue q;

	memset(&params, 0, sizeof(params));
	if (o->cpu && intelpt_params_cpu(&params, o->cpu)) {
		util_errf(err, errlen, "bad --cpu value \"%s\": expected "
			  "FAMILY/MODEL[/STEPPING] or none", o->cpu);
		return PTD_ERR_INVAL;
	}
	if (params.have_cpu && !intelpt_cpu_plausible(&params)) {
		util_errf(err, errlen, "config error: unknown cpu \"%s\": no "
			  "processor of family %u model %u has Intel PT (family 6 "
			  "from model 61 on, or a family above 15): give "
			  "FAMILY/MODEL[/STEPPING] of the recording CPU, or none",
			  o->cpu, params.family, params.model);
		return PTD_ERR_INVAL;
	}
	check_cpu(in, &params, "--cpu");
	if (set_filters(o, in, &params, err, errlen))
		return PTD_ERR_INVAL;
	memset(&q, 0, sizeof(q));
	q.data = iq->data;
	q.size = iq->size;
	q.file_backed = 1;
	q.cpu = -1;
	q.pid = q.tid = IMGSTORE_KERNEL;
	warn_undecodable(in, &params, &q, 1);
	return new_ipt_backend(o, in, &params, &q, 1, NULL, out, err, errlen);
}

static const struct perfdata_attr *find_attr(const struct perfdata_info *info,
					     uint32_t type)
{
	for (size_t i = 0; i < info->nattrs; i++)
		if (info->attrs[i].type == type)
			return &info->attrs[i];
	return NULL;
}

/* The decoder's parameters from AUXTRACE_INFO, the intel_pt event's
 * config and the recording CPU. */
static int perf_pt_params(struct input *in, struct intelpt_params *params,
			  char *err, size_t errlen)
{
	const struct perfdata_info *info = perfdata_get_info(in->pd);
	const struct perfdata_attr *a = NULL;

	if (in->aux_npriv > INTELPT_INFO_PMU_TYPE)
		a = find_attr(info, (uint32_t)in->aux_priv[INTELPT_INFO_PMU_TYPE]);
	return intelpt_params_from_perf(params, in->aux_priv, in->aux_npriv,
					a ? a->config : 0, info->cpuid, err, errlen);
}

/* Fills the backend's view of queue i: its pieces, and the thread it
 * starts in (per-CPU mode: who ran on its CPU at the first switch). */
static void ipt_queue_of(struct input *in, size_t i, struct intelpt_queue *iq)
{
	const struct input_queue *q = &in->queues[i];
	int per_cpu = in->aux_npriv > INTELPT_INFO_PER_CPU_MMAPS &&
		      in->aux_priv[INTELPT_INFO_PER_CPU_MMAPS];

	iq->data = q->data;
	iq->size = q->size;
	iq->pieces = q->pieces;
	iq->npieces = q->npieces;
	iq->file_backed = 1;
	iq->assemble = perf_assemble_queue;
	iq->assemble_ctx = in;
	iq->assemble_index = i;
	iq->cpu = per_cpu ? q->cpu : -1;
	iq->tid = q->tid;
	iq->end_gap = q->gap_after[0] ? q->gap_after : NULL;
	iq->pid = sideband_pid_of(in->sb, q->tid);
	if (per_cpu) {
		uint64_t t0 = sideband_next_switch(in->sb, q->cpu, 0);

		if (sideband_task_at(in->sb, q->cpu, t0 == UINT64_MAX ? 0 : t0,
				     &iq->pid, &iq->tid))
			iq->pid = iq->tid = -1;
	}
}

/* One timeline (queuemerge.h): several per-CPU queues with timestamps,
 * unless the caller asks for queue order or only counts.  Without TSC
 * packets perf decodes queue after queue (timeless), and so do we. */
static int merge_queues(const struct ptd_open_opts *o, const struct input *in)
{
	int per_cpu = in->aux_npriv > INTELPT_INFO_PER_CPU_MMAPS &&
		      in->aux_priv[INTELPT_INFO_PER_CPU_MMAPS];

	return in->nqueues > 1 && per_cpu && perf_pt_have_tsc(in) &&
	       !(o->flags & (PTD_OPEN_PER_QUEUE | PTD_OPEN_COUNT_ONLY));
}

/* Threads for a merged session's queues: -j, 0 one per core. */
static long merge_threads(const struct ptd_open_opts *o)
{
	return o->threads ? (long)o->threads : sysconf(_SC_NPROCESSORS_ONLN);
}

/* A backend per queue, merged in time order. */
static int new_merged_ipt(const struct ptd_open_opts *o, struct input *in,
			  const struct intelpt_params *p,
			  const struct intelpt_queue *iq, struct backend **out,
			  char *err, size_t errlen)
{
	struct backend **be = calloc(in->nqueues, sizeof(*be));
	struct perfclock **clocks = calloc(in->nqueues, sizeof(*clocks));
	uint64_t *stops = malloc((in->nrecord_times + 1) * sizeof(*stops));
	int rc = 0;
	size_t i;

	if (!be || !clocks || !stops) {
		free(be);
		free(clocks);
		free(stops);
		return PTD_ERR_NOMEM;
	}
	for (i = 0; i < in->nrecord_times; i++)
		stops[i] = intelpt_perf_to_tsc(p, in->record_times[i]);
	for (i = 0; i < in->nqueues && !rc; i++) {
		rc = new_ipt_backend(o, in, p, &iq[i], 1, in->sb, &be[i], err, errlen);
		/* -j2 and up: the queues decode ahead in parallel */
		if (!rc && merge_threads(o) > 1 &&
		    prefetch_new(be[i], !!(o->flags & PTD_OPEN_INSN_TEXT), &be[i])) {
			rc = PTD_ERR_NOMEM;    /* prefetch_new freed be[i] */
			util_errf(err, errlen, "out of memory");
		}
		/* perf's times order the queues (perfclock.h) */
		if (!rc && perfclock_new(p, &iq[i], in->sb, &clocks[i])) {
			be[i]->destroy(be[i]);
			rc = PTD_ERR_NOMEM;
			util_errf(err, errlen, "out of memory");
		}
	}
	if (rc) {
		for (size_t k = 0; k + 1 < i; k++) {
			be[k]->destroy(be[k]);
			perfclock_free(clocks[k]);
		}
		free(be);
		free(clocks);
		free(stops);
		return rc;
	}
	rc = queuemerge_new(be, clocks, in->nqueues,
			    !!(o->flags & PTD_OPEN_BRANCH_ORDER), stops,
			    p->have_time ? in->nrecord_times : 0, out);
	free(be);
	free(clocks);
	free(stops);
	if (rc) {
		util_errf(err, errlen, "out of memory");
		return rc;
	}
	/* a clock fallback while decoding: a session warning */
	queuemerge_set_warn(*out, in->sink.warn, in->sink.ctx);
	/* snapshot gaps: perf decodes each CPU's queue as one */
	for (i = 1; i < in->nqueues; i++)
		if (in->queues[i].cont)
			queuemerge_set_continues(*out, i);
	return 0;
}

static int open_perf_pt(const struct ptd_open_opts *o, struct input *in,
			struct backend **out, char *err,
			size_t errlen)
{
	struct intelpt_queue *iq;
	struct intelpt_params params;
	int rc;

	rc = perf_pt_params(in, &params, err, errlen);
	if (rc)
		return rc;
	check_cpu(in, &params, "the recording CPU (perf.data's CPUID)");
	recorded_filters(in, &params);
	if (set_filters(o, in, &params, err, errlen))
		return PTD_ERR_INVAL;
	iq = calloc(in->nqueues ? in->nqueues : 1, sizeof(*iq));
	if (!iq)
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < in->nqueues; i++)
		ipt_queue_of(in, i, &iq[i]);
	warn_undecodable(in, &params, iq, in->nqueues);
	if (merge_queues(o, in)) {
		rc = new_merged_ipt(o, in, &params, iq, out, err, errlen);
		if (!rc)
			in->sink.stats->merged_queues = in->nqueues;
	} else
		rc = new_ipt_backend(o, in, &params, iq, in->nqueues, in->sb, out,
				     err, errlen);
	free(iq);
	return rc;
}

/* ------------------------------------------------------------------ */
/* CoreSight                                                           */

static void warn_coresight(struct input *in, const struct backend *be)
{
	for (size_t i = 0; i < coresight_warning_count(be); i++)
		input_warn(in, "%s", coresight_warning(be, i));
}

/* The trace IDs AUX_OUTPUT_HW_ID records gave, over those of the info. */
static void apply_hw_ids(const struct input *in, struct cs_etm_info *info)
{
	for (size_t h = 0; h < in->nhw_ids; h++)
		for (uint32_t c = 0; c < info->nr_cpu; c++)
			if (info->cpus[c].cpu == in->hw_ids[h].cpu) {
				info->cpus[c].trace_id = in->hw_ids[h].trace_id;
				info->cpus[c].trace_id_valid = 1;
			}
}

/* Queue i as CoreSight chunks (written from chunks): each AUXTRACE payload
 * a chunk, in place in the file mapping.  The decoder resets between
 * them, as perf's does (one record need not continue the one before), and
 * they are the units decoded in parallel; ev.offset counts bytes within
 * the queue. */
static void cs_queue_of(struct input *in, size_t i, struct coresight_chunk *chunks,
			struct coresight_queue_desc *cq)
{
	const struct input_queue *q = &in->queues[i];
	int32_t pid = sideband_pid_of(in->sb, q->tid), tid;

	if (q->cpu >= 0 && (pid < 0 || q->tid <= 0))
		sideband_task_at(in->sb, q->cpu, UINT64_MAX - 1, &pid, &tid);
	cq->chunks = chunks;
	cq->cpu = q->cpu;
	cq->formatted = !in->cs_raw_format;
	for (size_t p = 0; p < q->npieces; p++) {
		chunks[p].data = q->pieces[p].data;
		chunks[p].size = q->pieces[p].size;
		chunks[p].offset = q->pieces[p].offset;
		chunks[p].time = IMGSTORE_TIME_UNKNOWN;
		chunks[p].pid = pid < 0 ? IMGSTORE_KERNEL : pid;
	}
	cq->nchunks = q->npieces;
}

/* One timeline (queuemerge.h) of per-CPU cs_etm queues, as perf script
 * prints them, unless the caller asks for queue order or only counts.
 * perf decodes timeless (queue after queue) when no event samples the
 * time, and so do we. */
static int merge_cs_queues(const struct ptd_open_opts *o, const struct input *in)
{
	const struct perfdata_info *info = in->pd ? perfdata_get_info(in->pd) : NULL;
	int timed = 0;

	if (!info || in->nqueues < 2 ||
	    (o->flags & (PTD_OPEN_PER_QUEUE | PTD_OPEN_COUNT_ONLY)))
		return 0;
	for (size_t i = 0; i < in->nqueues; i++)
		if (in->queues[i].cpu < 0)
			return 0;
	for (size_t i = 0; i < info->nattrs; i++)
		timed |= !!(info->attrs[i].sample_type & PD_SAMPLE_TIME);
	return timed;
}

/* coresight_open's flag for the CoreSight decoder the options ask for. */
static unsigned cs_decoder(const struct ptd_open_opts *o)
{
	return o->decoder == PTD_DECODER_FAST ? 0 : CORESIGHT_OPENCSD;
}

/* A CoreSight backend per queue (decoding on the caller's thread, its
 * events keyed as perf keys them), merged by perf's cs_etm rule. */
static int new_merged_cs(struct input *in, const struct cs_etm_info *info,
			 const struct coresight_queue_desc *cq, unsigned decoder,
			 struct backend **out, char *err, size_t errlen)
{
	struct backend **be = calloc(in->nqueues, sizeof(*be));
	int rc = 0;
	size_t i;

	if (!be)
		return PTD_ERR_NOMEM;
	for (i = 0; i < in->nqueues && !rc; i++) {
		rc = coresight_open_perf(info, &cq[i], 1, in->st, 1 | decoder,
					 &be[i], err, errlen);
		if (!rc) {
			warn_coresight(in, be[i]);
			if ((rc = coresight_set_perf_keys(be[i])))
				util_errf(err, errlen, "out of memory");
		}
	}
	if (rc) {
		for (size_t k = 0; k < i; k++)
			if (be[k])
				be[k]->destroy(be[k]);
		free(be);
		return rc;
	}
	rc = queuemerge_new(be, NULL, in->nqueues, 0, NULL, 0, out);
	free(be);
	if (rc)
		util_errf(err, errlen, "out of memory");
	else
		queuemerge_set_blocks(*out);
	return rc;
}

/* cs_etm: one CoreSight queue per AUX queue, each AUXTRACE record a chunk
 * (perf does not promise continuity between them).  The backend copies
 * both arrays. */
static int open_cs_etm(const struct ptd_open_opts *o, struct input *in,
		       struct backend **out, char *err, size_t errlen)
{
	struct coresight_queue_desc *cq;
	struct coresight_chunk *chunks;
	struct cs_etm_info info;
	char msg[512];
	size_t k = 0;
	int rc;

	rc = cs_etm_info_parse((const uint8_t *)in->aux_priv,
			       in->aux_npriv * sizeof(uint64_t), &info, msg,
			       sizeof(msg));
	if (rc) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO: %s", msg);
		return rc;
	}
	apply_hw_ids(in, &info);
	chunks = calloc(in->nchunks ? in->nchunks : 1, sizeof(*chunks));
	cq = calloc(in->nqueues ? in->nqueues : 1, sizeof(*cq));
	if (!chunks || !cq) {
		free(chunks);
		free(cq);
		cs_etm_info_free(&info);
		return PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < in->nqueues; k += cq[i].nchunks, i++)
		cs_queue_of(in, i, &chunks[k], &cq[i]);
	if (merge_cs_queues(o, in)) {
		rc = new_merged_cs(in, &info, cq, cs_decoder(o), out, err, errlen);
		if (!rc)
			in->sink.stats->merged_queues = in->nqueues;
	} else {
		rc = coresight_open_perf(&info, cq, in->nqueues, in->st,
					 o->threads | cs_decoder(o), out, err,
					 errlen);
	}
	free(cq);
	free(chunks);
	cs_etm_info_free(&info);
	if (!rc && !in->sink.stats->merged_queues)
		warn_coresight(in, *out);
	return rc;
}

/* An OpenCSD snapshot directory: input/snapshot.c describes its queues
 * (its dumps go into the image store) and opens the CoreSight backend. */
static int open_snapshot(const struct ptd_open_opts *o, struct input *in,
			 struct backend **out, char *err, size_t errlen)
{
	int rc = snapshot_open(in->path, in->st, o->threads | cs_decoder(o),
			       out, err, errlen);

	if (!rc)
		warn_coresight(in, *out);
	return rc;
}

/* ------------------------------------------------------------------ */

/* A perf.data's AUX trace: its decoder by the AUXTRACE_INFO type. */
static int open_perf_aux(const struct ptd_open_opts *o, struct input *in,
			 struct backend **out, char *err,
			 size_t errlen)
{
	if (in->aux_type == PD_AUXTRACE_CS_ETM)
		return open_cs_etm(o, in, out, err, errlen);
	if (in->aux_type != PD_AUXTRACE_INTEL_PT) {
		util_errf(err, errlen, "%s: AUX trace type %u (%s) is not "
			  "supported by this build", in->perf_path, in->aux_type,
			  in->aux_type == PD_AUXTRACE_CS_ETM ? "cs_etm" :
			  in->aux_type == PD_AUXTRACE_INTEL_BTS ? "intel_bts" : "unknown PMU");
		return PTD_ERR_UNSUPPORTED;
	}
	return open_perf_pt(o, in, out, err, errlen);
}

int backend_choice_open(const struct ptd_open_opts *opts, struct input *in,
			struct backend **out, char *err,
			size_t errlen)
{
	switch (in->kind) {
	case PTD_INPUT_RAW_PT:
		return open_raw_pt(opts, in, out, err, errlen);
	case PTD_INPUT_CS_SNAPSHOT:
		return open_snapshot(opts, in, out, err, errlen);
	default:
		return open_perf_aux(opts, in, out, err, errlen);
	}
}
