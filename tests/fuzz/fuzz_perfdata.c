/* SPDX-License-Identifier: MIT */
/*
 * fuzz_perfdata - the perf.data reader (decoder/format/perfdata.c), file and pipe
 * mode (the input's magic decides).  Opens the input, reads every header
 * field, walks all records with a one-page window, calls every
 * perfdata_parse_* on every record (each must check the record's size
 * itself), maps every AUXTRACE payload, then rewinds and walks again with
 * the default window: both walks must see the same records (the window
 * must not change what is read).  Then the samples reader
 * (ptd_samples_*: callchains, branch stacks, deferred callchains
 * stitched) over the same bytes, every sample's frames touched.
 */
#include "fuzz_common.h"
#include "id_index.h"
#include "perfdata.h"
#include "ptdecode.h"

struct walk {
	size_t nrec;
	uint64_t last_offset, sum;
	int end_rc;
};

/* ID_INDEX entries, with guest machine fields where present. */
static void touch_id_index(const struct perfdata_record *r)
{
	struct id_index_entry e;
	size_t n;
	int ext;

	if (id_index_count(r, &n, &ext))
		return;
	for (size_t i = 0; i < n; i++) {
		id_index_get(r, i, &e);
		fz_sink += e.id + e.machine_pid + e.vcpu + (uint64_t)ext;
	}
}

static void parse_all(const struct perfdata_record *r)
{
	struct perfdata_mmap m;
	struct perfdata_comm c;
	struct perfdata_task t;
	struct perfdata_switch sw;
	struct perfdata_aux a;
	struct perfdata_itrace_start is;
	struct perfdata_lost l;
	struct perfdata_ksymbol k;
	struct perfdata_bpf_event b;
	struct perfdata_text_poke tp;
	struct perfdata_aux_hw_id h;
	struct perfdata_auxtrace_info ai;
	struct perfdata_sample s;
	struct perfdata_time_conv tc;

	fz_touch(r->raw, r->size);
	fz_touch_str(perfdata_record_name(r->type));
	if (perfdata_parse_mmap(r, &m) == 0)
		fz_touch_str(m.filename);
	if (perfdata_parse_comm(r, &c) == 0)
		fz_touch_str(c.comm);
	if (perfdata_parse_task(r, &t) == 0)
		fz_sink += t.pid;
	if (perfdata_parse_switch(r, &sw) == 0)
		fz_sink += sw.out;
	if (perfdata_parse_aux(r, &a) == 0)
		fz_sink += a.aux_size;
	if (perfdata_parse_itrace_start(r, &is) == 0)
		fz_sink += is.pid;
	if (perfdata_parse_lost(r, &l) == 0)
		fz_sink += l.lost;
	if (perfdata_parse_ksymbol(r, &k) == 0)
		fz_touch_str(k.name);
	if (perfdata_parse_bpf_event(r, &b) == 0)
		fz_touch(b.tag, sizeof(b.tag));
	if (perfdata_parse_text_poke(r, &tp) == 0) {
		fz_touch(tp.old_bytes, tp.old_len);
		fz_touch(tp.new_bytes, tp.new_len);
	}
	if (perfdata_parse_aux_hw_id(r, &h) == 0)
		fz_sink += h.hw_id;
	if (perfdata_parse_auxtrace_info(r, &ai) == 0)
		fz_touch(ai.priv, ai.npriv * 8);
	if (perfdata_parse_sample(r, &s) == 0) {
		fz_touch(s.raw, s.raw_size);
		fz_touch(s.callchain, s.callchain_nr * 8);
		fz_touch(s.branches, s.branch_nr * PD_BRANCH_ENTRY_SIZE);
	}
	if (perfdata_parse_time_conv(r, &tc) == 0)
		fz_sink += tc.time_mult;
	if (r->type == PD_RECORD_ID_INDEX)
		touch_id_index(r);
}

static void walk(struct perfdata *pd, struct walk *w, int parse)
{
	struct perfdata_record r;
	int rc;

	memset(w, 0, sizeof(*w));
	for (;;) {
		rc = perfdata_next(pd, &r);
		if (rc == PTD_ERR_UNSUPPORTED)   /* COMPRESSED: goes on after it */
			continue;
		if (rc < 0)
			break;
		w->nrec++;
		w->last_offset = r.file_offset;
		w->sum = w->sum * 3 + r.type + r.size;
		if (!parse)
			continue;
		parse_all(&r);
		if (r.type == PD_RECORD_AUXTRACE) {
			const uint8_t *d;
			void *cookie;

			if (perfdata_aux_map(pd, r.aux_file_offset, r.aux_size,
					     &d, &cookie) == 0) {
				fz_touch(d, r.aux_size);
				perfdata_aux_unmap(pd, cookie);
			} else
				fz_touch_str(perfdata_errmsg(pd));
		}
	}
	w->end_rc = rc;
	fz_touch_str(perfdata_errmsg(pd));
}

static void touch_info(const struct perfdata_info *in)
{
	for (size_t i = 0; i < in->nattrs; i++)
		fz_touch(in->attrs[i].ids, in->attrs[i].nids * 8);
	for (size_t i = 0; i < in->nbuild_ids; i++)
		fz_touch_str(in->build_ids[i].filename);
	fz_touch_str(in->hostname);
	fz_touch_str(in->osrelease);
	fz_touch_str(in->perf_version);
	fz_touch_str(in->arch);
	fz_touch_str(in->cpudesc);
	fz_touch_str(in->cpuid);
	for (size_t i = 0; i < in->ncmdline; i++)
		fz_touch_str(in->cmdline[i]);
	fz_touch(in->aux_index, in->naux_index * sizeof(*in->aux_index));
}

static void samples(const char *path)
{
	struct ptd_sample smp = { .sz = sizeof(smp) };
	struct ptd_samples_stats st = { .sz = sizeof(st) };
	struct ptd_samples *sp;

	if (ptd_samples_open(&sp, path, NULL) == 0) {
		while (ptd_samples_next(sp, &smp) == 0) {
			fz_touch(smp.callchain, smp.callchain_nr * 8);
			fz_touch(smp.callchain_ctx, smp.callchain_nr);
			fz_touch(smp.branches, smp.nbranches * sizeof(*smp.branches));
			fz_touch_str(smp.comm);
		}
		ptd_samples_get_stats(sp, &st);
		for (size_t i = 0; i < ptd_samples_warning_count(sp); i++)
			fz_touch_str(ptd_samples_warning(sp, i));
	} else if (sp && !ptd_samples_errmsg(sp)[0]) {
		fprintf(stderr, "ptd_samples_open failed without a message\n");
		abort();
	}
	ptd_samples_close(sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512];
	struct perfdata *pd;
	struct walk w1, w2;
	int fd = fz_memfd(data, size, path);

	if (perfdata_open(path, &pd, err, sizeof(err)) == 0) {
		touch_info(perfdata_get_info(pd));
		perfdata_set_window(pd, 4096);
		walk(pd, &w1, 1);
		if (perfdata_rewind(pd) == 0) {
			perfdata_set_window(pd, 32u << 20);
			walk(pd, &w2, 0);
			/* Same records whatever the window size. */
			if (w1.end_rc != PTD_ERR_UNSUPPORTED &&
			    (w1.nrec != w2.nrec || w1.sum != w2.sum ||
			     w1.end_rc != w2.end_rc)) {
				fprintf(stderr, "window changes the records: "
					"%zu/%d vs %zu/%d\n", w1.nrec,
					w1.end_rc, w2.nrec, w2.end_rc);
				abort();
			}
		}
		for (const char *const *wn = perfdata_warnings(pd); wn && *wn; wn++)
			fz_touch_str(*wn);
		perfdata_close(pd);
	} else if (!err[0]) {
		fprintf(stderr, "perfdata_open failed without a message\n");
		abort();
	}
	samples(path);
	close(fd);
	return 0;
}
