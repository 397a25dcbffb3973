/* SPDX-License-Identifier: MIT */
#include "perf.h"
#include "perf_abi.h"
#include "auxsnap.h"
#include "buildid.h"
#include "guest.h"
#include "imgstore.h"
#include "input.h"
#include "jitdumps.h"
#include "kcoredir.h"
#include "perfdata.h"
#include "perfdata_dir.h"
#include "perfdir.h"
#include "sideband.h"
#include "symtab.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ------------------------------------------------------------------ */
/* mappings                                                            */

/* Recorded build id for a file: from the MMAP2 record or the BUILD_ID
 * feature (a guest's entries for a guest's mapping, space < -1: the same
 * path may be another file there). */
static void recorded_build_id(struct input *in, const struct perfdata_mmap *m,
			      int32_t space, char *out)
{
	const struct perfdata_info *info = perfdata_get_info(in->pd);

	out[0] = '\0';
	if (m->has_build_id && m->build_id_size && m->build_id_size <= 20) {
		buildid_hex(m->build_id, m->build_id_size, out);
		return;
	}
	for (size_t i = 0; info && i < info->nbuild_ids; i++)
		if (info->build_ids[i].filename &&
		    guest_is_misc(info->build_ids[i].misc) == (space < IMGSTORE_KERNEL) &&
		    !strcmp(info->build_ids[i].filename, m->filename) &&
		    info->build_ids[i].size && info->build_ids[i].size <= 20) {
			buildid_hex(info->build_ids[i].id, info->build_ids[i].size, out);
			return;
		}
}

/* [vdso], //anon, [kernel.kallsyms]: bytes from the text store,
 * --vmlinux, or (vdso) perf's build-id cache; else a gap. */
static int add_unnamed_mapping(struct input *in, const struct perfdata_mmap *m,
			       int32_t pid, uint64_t t)
{
	char found[4096], bid[41], why[1024];
	int rc;

	if (!strncmp(m->filename, "[kernel.kallsyms]", 17) && in->opts->vmlinux)
		return 0; /* added from the ELF at open */
	recorded_build_id(in, m, pid, bid);
	if (bid[0] && symtab_find_by_build_id(buildid_dirs(in), bid, 0, found,
					      sizeof(found)) == 0) {
		rc = imgstore_add_file(in->st, pid, m->addr, m->len, found, m->pgoff,
				       t, IMGSTORE_FOREVER, m->filename);
		return rc < 0 ? rc : 0;
	}
	snprintf(why, sizeof(why), "%s%s%s has no file to read it from%s",
		 m->filename, bid[0] ? " with build id " : "", bid,
		 bid[0] ? " (perf's build-id cache, e.g. ~/.debug, or "
		 "--search-path, would hold it)" : "");
	rc = imgstore_add_missing(in->st, pid, m->addr, m->len, t,
				  IMGSTORE_FOREVER, m->filename, why);
	return rc < 0 ? rc : 0;
}

/* A mapped file: its bytes from the file found on this machine, else a
 * gap that says why. */
static int add_file_mapping(struct input *in, const struct perfdata_mmap *m,
			    int32_t pid, uint64_t t)
{
	char *file, bid[41], why[1024];
	int rc;

	recorded_build_id(in, m, pid, bid);
	file = buildid_resolve_file(in, m->filename, bid, why, sizeof(why));
	if (!file) {
		rc = imgstore_add_missing(in->st, pid, m->addr, m->len, t,
					  IMGSTORE_FOREVER, m->filename, why);
		return rc < 0 ? rc : 0;
	}
	rc = imgstore_add_file(in->st, pid, m->addr, m->len, file, m->pgoff, t,
			       IMGSTORE_FOREVER, m->filename);
	free(file);
	return rc < 0 ? rc : 0;
}

/* Places the intel_pt IP filters naming m's file: the part of the range
 * (file offsets) that m maps, as the kernel programs it for that mapping. */
static void place_filters(struct input *in, const struct perfdata_mmap *m)
{
	for (size_t i = 0; i < in->npt_filters; i++) {
		struct input_pt_filter *pf = &in->pt_filters[i];
		uint64_t lo = pf->f.addr, hi = pf->f.addr + pf->f.size;
		uint64_t a, b;

		if (!pf->f.file[0] || strcmp(pf->f.file, m->filename) ||
		    hi <= m->pgoff || lo >= m->pgoff + m->len)
			continue;
		if (lo < m->pgoff)
			lo = m->pgoff;
		if (hi > m->pgoff + m->len)
			hi = m->pgoff + m->len;
		a = m->addr + (lo - m->pgoff);
		b = m->addr + (hi - m->pgoff) - 1;
		if (!pf->placed) {
			pf->placed = 1;
			pf->a = a;
			pf->b = b;
		} else if (pf->a != a || pf->b != b) {
			pf->elsewhere++;
		}
	}
}

static int add_mmap(struct input *in, const struct perfdata_record *r, uint64_t t)
{
	struct perfdata_mmap m;
	int32_t pid;

	if (perfdata_parse_mmap(r, &m))
		return input_warn(in, "malformed MMAP record at offset %#" PRIx64
				  ": skipped", r->file_offset);
	if (r->type == PD_RECORD_MMAP2 && !(m.prot & PROT_EXEC))
		return 0;
	pid = (int32_t)m.pid;
	if (guest_is_record(r)) {
		pid = guest_mmap_space(in, r, &m);
		if (pid == IMGSTORE_NO_SPACE)
			return 0;
	} else {
		if (input_is_kernel_addr(m.addr) || pid == -1 ||
		    (r->misc & PD_MISC_CPUMODE_MASK) == PD_MISC_KERNEL)
			pid = IMGSTORE_KERNEL;
		sideband_thread(in->sb, (int32_t)m.pid, (int32_t)m.tid);
	}
	/* the kernel's own map: its code is --vmlinux's, added at open, and
	 * the kcore copy's, added after the sideband */
	if (pid == IMGSTORE_KERNEL && (in->opts->vmlinux || in->kcore) &&
	    !strncmp(m.filename, "[kernel.kallsyms]", 17))
		return 0;
	/* A new mapping replaces whatever was mapped there before. */
	imgstore_end(in->st, pid, m.addr, m.len, t);
	if (m.filename[0] != '/')
		return pid < IMGSTORE_KERNEL ? guest_add_unnamed(in, &m, pid, t)
					     : add_unnamed_mapping(in, &m, pid, t);
	if (perf_abi_is_jitdump_name(m.filename))
		return jitdumps_note(in, m.filename);
	if (!guest_is_record(r))
		place_filters(in, &m);
	return add_file_mapping(in, &m, pid, t);
}

/* ------------------------------------------------------------------ */
/* one handler per record type                                         */

/* perf record --filter's IP filters; those without a file are addresses. */
static int read_pt_filters(struct input *in, char *err, size_t errlen)
{
	struct intel_pt_filter f[INTELPT_MAX_FILTERS];
	char why[512];
	int n = intel_pt_info_filters(in->aux_priv, in->aux_npriv, f, why, sizeof(why));

	if (n == PTD_ERR_NOMEM) {
		util_errf(err, errlen, "out of memory");
		return n;
	}
	if (n < 0)  /* the trace decodes without them */
		return input_warn(in, "%s: decoding without IP filters (libipt's "
				  "errata work-arounds may need them)", why);
	in->npt_filters = (size_t)n;
	for (int i = 0; i < n; i++) {
		struct input_pt_filter *pf = &in->pt_filters[i];

		memset(pf, 0, sizeof(*pf));
		pf->f = f[i];
		if (!f[i].file[0]) {
			pf->placed = 1;
			pf->a = f[i].addr;
			pf->b = f[i].addr + f[i].size - 1;
		}
	}
	return 0;
}

static int on_auxtrace_info(struct input *in, const struct perfdata_record *r,
			    char *err, size_t errlen)
{
	struct perfdata_auxtrace_info ai;

	if (perfdata_parse_auxtrace_info(r, &ai)) {
		util_errf(err, errlen, "malformed AUXTRACE_INFO record at "
			  "offset %#" PRIx64, r->file_offset);
		return PTD_ERR_CORRUPT;
	}
	in->aux_type = ai.type;
	free(in->aux_priv);
	in->aux_priv = calloc(ai.npriv ? ai.npriv : 1, sizeof(uint64_t));
	if (!in->aux_priv)
		return PTD_ERR_NOMEM;
	memcpy(in->aux_priv, ai.priv, ai.npriv * sizeof(uint64_t));
	in->aux_npriv = ai.npriv;
	in->have_aux_info = 1;
	return ai.type == PD_AUXTRACE_INTEL_PT ? read_pt_filters(in, err, errlen) : 0;
}

static int add_chunk(struct input *in, const struct perfdata_record *r)
{
	struct input_chunk *c;

	if (util_grow((void **)&in->chunks, &in->ccap, in->nchunks + 1, sizeof(*c)))
		return PTD_ERR_NOMEM;
	c = &in->chunks[in->nchunks];
	c->idx = r->aux_idx;
	c->cpu = (int32_t)r->aux_cpu;
	c->tid = (int32_t)r->aux_tid;
	c->offset = r->aux_offset;
	c->file_offset = r->aux_file_offset;
	c->size = r->aux_size;
	c->file = in->cur_file;
	c->seq = in->nchunks++;
	in->sink.stats->trace_bytes += r->aux_size;
	return 0;
}

static void on_comm(struct input *in, const struct perfdata_record *r, uint64_t t)
{
	struct perfdata_comm c;

	if (perfdata_parse_comm(r, &c))
		return;
	sideband_thread_comm(in->sb, (int32_t)c.pid, (int32_t)c.tid, c.comm);
	if (c.exec && c.pid == c.tid)
		imgstore_end(in->st, (int32_t)c.pid, 0, 0, t);
}

static int on_fork(struct input *in, const struct perfdata_record *r)
{
	struct perfdata_task tk;

	if (perfdata_parse_task(r, &tk))
		return 0;
	sideband_fork(in->sb, (int32_t)tk.pid, (int32_t)tk.tid, (int32_t)tk.ptid);
	if (tk.pid != tk.ppid)
		return imgstore_fork(in->st, (int32_t)tk.ppid, (int32_t)tk.pid,
				     tk.time);
	return 0;
}

static void on_itrace_start(struct input *in, const struct perfdata_record *r,
			    uint64_t t)
{
	struct perfdata_itrace_start is;

	if (perfdata_parse_itrace_start(r, &is))
		return;
	sideband_thread(in->sb, (int32_t)is.pid, (int32_t)is.tid);
	if (r->sid.has_cpu)
		sideband_run(in->sb, (int32_t)r->sid.cpu, t, (int32_t)is.pid,
			     (int32_t)is.tid);
}

static void on_switch(struct input *in, const struct perfdata_record *r,
		      uint64_t t)
{
	struct perfdata_switch sw;

	if (perfdata_parse_switch(r, &sw) || !r->sid.has_cpu)
		return;
	if (!sw.out && r->sid.has_tid)
		sideband_run(in->sb, (int32_t)r->sid.cpu, t, (int32_t)r->sid.pid,
			     (int32_t)r->sid.tid);
	else if (sw.out && r->type == PD_RECORD_SWITCH_CPU_WIDE)
		sideband_run(in->sb, (int32_t)r->sid.cpu, t,
			     (int32_t)sw.next_prev_pid, (int32_t)sw.next_prev_tid);
}

static void on_lost(struct input *in, const struct perfdata_record *r)
{
	struct perfdata_lost l;

	if (perfdata_parse_lost(r, &l))
		return;
	in->sink.stats->lost_records += l.lost;
	in->sink.stats->lost += l.lost;
}

static void on_aux(struct input *in, const struct perfdata_record *r)
{
	struct perfdata_aux a;

	if (perfdata_parse_aux(r, &a))
		return;
	if (a.flags & PD_AUX_FLAG_TRUNCATED) {
		in->sink.stats->aux_truncated++;
		in->sink.stats->lost++;
	}
	if (a.flags & PD_AUX_FLAG_PARTIAL)
		in->sink.stats->aux_partial++;
	if (a.flags & PD_AUX_FLAG_CORESIGHT_FORMAT_RAW)
		in->cs_raw_format = 1;
}

static int on_ksymbol(struct input *in, const struct perfdata_record *r,
		      uint64_t t)
{
	struct perfdata_ksymbol k;

	if (perfdata_parse_ksymbol(r, &k) || !k.len)
		return 0;
	if (kcoredir_note_ksymbol(in->kcore, k.addr, k.len, t, k.name,
				  k.flags & PD_RECORD_KSYMBOL_FLAGS_UNREGISTER))
		return PTD_ERR_NOMEM;
	if (k.flags & PD_RECORD_KSYMBOL_FLAGS_UNREGISTER) {
		/* the range is free from now on */
		imgstore_end(in->st, IMGSTORE_KERNEL, k.addr, k.len, t);
		return 0;
	}
	symtab_add(in->sbsyms, k.name, k.addr, k.len);
	/* Known to exist from here; its bytes come from the text store (which
	 * outranks this) or nowhere: then a gap. */
	return imgstore_add_missing(in->st, IMGSTORE_KERNEL, k.addr, k.len, t,
				    IMGSTORE_FOREVER, k.name, 
				    in->kcore ? "loaded after perf record --kcore "
				    "copied the kernel's text, and no copy holds it" :
				    k.ksym_type == PD_RECORD_KSYMBOL_TYPE_BPF ?
				    "this BPF JIT image was not captured: record "
				    "with ptcapture, which copies programs before "
				    "the kernel frees them" :
				    "out-of-line kernel text (kprobe, ftrace "
				    "trampoline) was not captured: it needs "
				    "/proc/kcore at recording time");
}

static int on_hw_id(struct input *in, const struct perfdata_record *r)
{
	struct perfdata_aux_hw_id h;

	if (perfdata_parse_aux_hw_id(r, &h) || !r->sid.has_cpu)
		return 0;
	if (util_grow((void **)&in->hw_ids, &in->hwcap, in->nhw_ids + 1,
		      sizeof(*in->hw_ids)))
		return PTD_ERR_NOMEM;
	in->hw_ids[in->nhw_ids].cpu = (int32_t)r->sid.cpu;
	in->hw_ids[in->nhw_ids++].trace_id = (uint8_t)(h.hw_id & CS_TRACE_ID_MASK);
	return 0;
}

static int on_text_poke(struct input *in, const struct perfdata_record *r,
			uint64_t t)
{
	struct perfdata_text_poke tp;

	if (perfdata_parse_text_poke(r, &tp) || !tp.new_len)
		return 0;
	return imgstore_add_copy(in->st, IMGSTORE_KERNEL, tp.addr, tp.new_len,
				 tp.new_bytes, t, IMGSTORE_FOREVER, "text_poke");
}

/* A record of the timeline or the images that could not be added: rc < 0
 * with its reason in err; else 0 (the store's ids are no errors). */
static int not_added(int rc, char *err, size_t errlen)
{
	if (rc >= 0)
		return 0;
	util_errf(err, errlen, "reading sideband: %s", ptd_strerror(rc));
	return rc;
}

/* The time of a kernel record, for the timeline merge (input.h), unless
 * the queues will not be merged. */
static int note_time(struct input *in, const struct perfdata_record *r)
{
	if (r->type >= PD_RECORD_HEADER_ATTR || !r->sid.has_time || !r->sid.time ||
	    r->sid.time == UINT64_MAX ||
	    (in->opts->flags & (PTD_OPEN_PER_QUEUE | PTD_OPEN_COUNT_ONLY)))
		return 0;
	if (util_grow((void **)&in->record_times, &in->rtcap, in->nrecord_times + 1,
		      sizeof(*in->record_times)))
		return PTD_ERR_NOMEM;
	in->record_times[in->nrecord_times++] = r->sid.time;
	return 0;
}

int perf_on_record(struct input *in, const struct perfdata_record *r,
		   char *err, size_t errlen)
{
	uint64_t t = r->sid.has_time ? r->sid.time : 0;

	if (note_time(in, r)) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	if (guest_is_record(r) && r->type != PD_RECORD_MMAP &&
	    r->type != PD_RECORD_MMAP2 && r->type != PD_RECORD_LOST &&
	    r->type != PD_RECORD_LOST_SAMPLES)
		return not_added(guest_on_record(in, r, t), err, errlen);
	switch (r->type) {
	case PD_RECORD_ID_INDEX:
		return guest_on_id_index(in, r, err, errlen);
	case PD_RECORD_AUXTRACE_INFO:
		return on_auxtrace_info(in, r, err, errlen);
	case PD_RECORD_AUXTRACE:
		return not_added(add_chunk(in, r), err, errlen);
	case PD_RECORD_MMAP:
	case PD_RECORD_MMAP2:
		return not_added(add_mmap(in, r, t), err, errlen);
	case PD_RECORD_COMM:
		on_comm(in, r, t);
		return 0;
	case PD_RECORD_FORK:
		return not_added(on_fork(in, r), err, errlen);
	case PD_RECORD_ITRACE_START:
		on_itrace_start(in, r, t);
		return 0;
	case PD_RECORD_SWITCH:
	case PD_RECORD_SWITCH_CPU_WIDE:
		on_switch(in, r, t);
		return 0;
	case PD_RECORD_LOST:
	case PD_RECORD_LOST_SAMPLES:
		on_lost(in, r);
		return 0;
	case PD_RECORD_AUX:
		on_aux(in, r);
		return 0;
	case PD_RECORD_KSYMBOL:
		return not_added(on_ksymbol(in, r, t), err, errlen);
	case PD_RECORD_AUX_OUTPUT_HW_ID:
		return on_hw_id(in, r);
	case PD_RECORD_TEXT_POKE:
		return not_added(on_text_poke(in, r, t), err, errlen);
	default:
		return 0;
	}
}

/* perf's intel_pt_have_tsc: every intel_pt event has config's TSC bit. */
int perf_pt_have_tsc(const struct input *in)
{
	const struct perfdata_info *info = perfdata_get_info(in->pd);
	uint64_t type = in->aux_priv[INTELPT_INFO_PMU_TYPE];
	uint64_t bit = in->aux_priv[INTELPT_INFO_TSC_BIT];
	int n = 0;

	for (size_t i = 0; i < info->nattrs; i++) {
		if (info->attrs[i].type != type)
			continue;
		if (!(info->attrs[i].config & bit))
			return 0;
		n++;
	}
	return n > 0 && bit;
}

int perf_read_sideband(struct input *in, char *err, size_t errlen)
{
	struct perfdata_record r;
	struct perfdata_dir *d;
	size_t file;
	char msg[512];
	int rc;

	if (perfdata_dir_is(in->perf_path))
		return perfdir_read_sideband(in, err, errlen);
	/* in time order, as perf uses them: a FORK must see the parent's
	 * mappings even when another CPU's ring wrote them later */
	rc = perfdata_dir_open_file(in->perf_path, &d, msg, sizeof(msg));
	if (rc) {
		util_errf(err, errlen, "%s", msg);
		return rc;
	}
	in->pd = perfdata_dir_header(d, 1);
	while ((rc = perfdata_dir_next(d, &r, &file)) == 0) {
		in->sink.stats->sideband_records++;
		rc = perf_on_record(in, &r, err, errlen);
		if (rc < 0) {
			perfdata_dir_close(d);
			return rc;
		}
	}
	if (rc != PTD_ERR_END) {
		/* hostile-input fix: name the problem (the reader's message). */
		util_errf(err, errlen, "perf.data: cannot read records: %s",
			  perfdata_dir_errmsg(d));
		perfdata_dir_close(d);
		return rc;
	}
	perfdata_dir_close(d);
	for (const char *const *w = perfdata_warnings(in->pd); w && *w; w++)
		input_warn(in, "%s", *w);
	in->sink.stats->truncated = perfdata_truncated(in->pd);
	sideband_finish(in->sb);
	return guest_finish(in);
}

/* ------------------------------------------------------------------ */
/* AUX queues                                                          */

static int chunk_cmp(const void *a, const void *b)
{
	const struct input_chunk *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Makes queue i's pieces contiguous (libipt and OpenCSD decode one
 * buffer): done only when a decoder asks, so the fast decoder, which
 * works piece by piece, keeps memory independent of the trace size. */
int perf_assemble_queue(void *ctx, size_t i, const uint8_t **data)
{
	struct input *in = ctx;
	struct input_queue *q = &in->queues[i];
	size_t pos = 0;

	if (!q->data) {
		q->owned = malloc(q->size ? q->size : 1);
		if (!q->owned)
			return PTD_ERR_NOMEM;
		for (size_t k = 0; k < q->npieces; k++) {
			memcpy(q->owned + pos, q->pieces[k].data, q->pieces[k].size);
			pos += q->pieces[k].size;
		}
		q->data = q->owned;
	}
	*data = q->data;
	return 0;
}

/* Fills q with the chunks [i, j) (one queue index), in place in the file
 * mapping. */
static int fill_queue(struct input *in, struct input_queue *q, size_t i,
		      size_t j, char *err, size_t errlen)
{
	size_t total = 0;
	const struct util_map *map;

	q->idx = in->chunks[i].idx;
	q->cpu = in->chunks[i].cpu;
	q->tid = in->chunks[i].tid;
	q->pieces = calloc(j - i, sizeof(*q->pieces));
	if (!q->pieces)
		return PTD_ERR_NOMEM;
	for (size_t k = i; k < j; k++) {
		const struct input_chunk *c = &in->chunks[k];

		map = in->nfile_maps ? &in->file_maps[c->file] : &in->file_map;
		if (c->file_offset > map->size ||
		    c->size > map->size - c->file_offset) {
			util_errf(err, errlen, "AUX data at offset %#" PRIx64
				  " runs past the end of the file", c->file_offset);
			free(q->pieces);
			q->pieces = NULL;
			return PTD_ERR_CORRUPT;
		}
		q->pieces[q->npieces].data = map->data + c->file_offset;
		q->pieces[q->npieces].size = (size_t)c->size;
		q->pieces[q->npieces].offset = total;
		total += (size_t)c->size;
		q->npieces++;
	}
	q->size = total;
	if (q->npieces == 1)
		q->data = q->pieces[0].data;
	return 0;
}

/* Groups AUXTRACE chunks by queue index, in stream order, as pieces that
 * point into one read-only mapping of the file. */
static int group_chunks(struct input *in, char *err, size_t errlen)
{
	char msg[512];
	size_t i = 0;
	int rc;

	rc = in->nfile_maps ? 0 :   /* a directory's files are mapped */
	     util_map_file(in->perf_path, &in->file_map, msg, sizeof(msg));
	if (rc) {
		util_errf(err, errlen, "%s", msg);
		return rc;
	}
	util_sort(in->chunks, in->nchunks, sizeof(*in->chunks), chunk_cmp);
	in->queues = calloc(in->nchunks ? in->nchunks : 1, sizeof(*in->queues));
	if (!in->queues)
		return PTD_ERR_NOMEM;
	while (i < in->nchunks) {
		size_t j = i;

		while (j < in->nchunks && in->chunks[j].idx == in->chunks[i].idx)
			j++;
		rc = fill_queue(in, &in->queues[in->nqueues], i, j, err, errlen);
		if (rc)
			return rc;
		in->nqueues++;
		i = j;
	}
	in->sink.stats->queues = in->nqueues;
	return 0;
}

int perf_build_queues(struct input *in, char *err, size_t errlen)
{
	int rc;

	if (!in->nchunks && (in->opts->flags & PTD_OPEN_SIDEBAND_ONLY))
		return 0;   /* samples only: no queues, no backend */
	if (!in->nchunks) {
		util_errf(err, errlen, "%s holds no AUX trace data (no AUXTRACE "
			  "records): record with -e intel_pt// or -e cs_etm//",
			  in->perf_path);
		return PTD_ERR_NO_TRACE;
	}
	if (!in->have_aux_info) {
		util_errf(err, errlen, "%s has AUX trace data but no AUXTRACE_INFO "
			  "record, so the trace type and its configuration are "
			  "unknown", in->perf_path);
		return PTD_ERR_NO_AUXINFO;
	}
	rc = group_chunks(in, err, errlen);
	return rc ? rc : auxsnap_fix_queues(in, err, errlen);
}

int perf_load(struct input *in, char *err, size_t errlen)
{
	int rc = kcoredir_open(in, err, errlen);

	if (!rc)
		rc = perf_read_sideband(in, err, errlen);
	if (!rc)
		rc = kcoredir_add(in, err, errlen);   /* windows end at KSYMBOLs */
	if (rc)
		return rc;
	jitdumps_load(in);
	return perf_build_queues(in, err, errlen);
}
