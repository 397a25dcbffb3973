/* SPDX-License-Identifier: MIT */
/*
 * pdump - prints what the perfdata reader sees in a perf.data file: header,
 * attrs, features, then one line per record.  Used by the tests, which
 * compare it with `perf script -D` and `perf report --header-only`.
 *
 * usage: pdump [-w WINDOW_BYTES] [-x] FILE|DIR
 *   -x  also map every AUXTRACE payload and print its FNV-1a 64 hash
 * A perf.data directory (perf record --threads) prints the header file's
 * header, then the records of all files in the reader's merged order,
 * each with file=NAME (data, data.N).
 */
#include "perfdata.h"
#include "perfdata_dir.h"
#include "ptdecode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_str(const char *name, const char *v)
{
	if (v)
		printf("%s: %s\n", name, v);
}

static void print_header(const struct perfdata_info *in)
{
	size_t i, j;
	unsigned f;

	printf("file size=%llu pipe=%d data_offset=%llu data_size=%llu nattrs=%zu\n",
	       (unsigned long long)in->file_size, in->pipe_mode,
	       (unsigned long long)in->data_offset,
	       (unsigned long long)in->data_size, in->nattrs);
	for (i = 0; i < in->nattrs; i++) {
		const struct perfdata_attr *a = &in->attrs[i];

		printf("attr %zu type=%u size=%u config=%#llx sample_type=%#llx read_format=%#llx sample_id_all=%d ids=",
		       i, a->type, a->size, (unsigned long long)a->config,
		       (unsigned long long)a->sample_type,
		       (unsigned long long)a->read_format, a->sample_id_all);
		for (j = 0; j < a->nids; j++)
			printf("%s%llu", j ? "," : "", (unsigned long long)a->ids[j]);
		printf("\n");
	}
	for (f = 0; f < 256; f++)
		if ((in->features[f / 64] >> (f % 64)) & 1) {
			const char *n = perfdata_feature_name(f);

			if (n)
				printf("feature %s\n", n);
			else
				printf("feature %u\n", f);
		}
	print_str("hostname", in->hostname);
	print_str("os release", in->osrelease);
	print_str("perf version", in->perf_version);
	print_str("arch", in->arch);
	print_str("cpudesc", in->cpudesc);
	print_str("cpuid", in->cpuid);
	if (in->nr_cpus_avail || in->nr_cpus_online)
		printf("nrcpus online=%u avail=%u\n", in->nr_cpus_online,
		       in->nr_cpus_avail);
	if (in->cmdline) {
		printf("cmdline:");
		for (i = 0; i < in->ncmdline; i++)
			printf(" %s", in->cmdline[i]);
		printf("\n");
	}
	if (in->clockid_res_ns)
		printf("clockid_res_ns: %llu\n", (unsigned long long)in->clockid_res_ns);
	if (in->clock_data_valid)
		printf("clock_data: clockid=%u wall_ns=%llu clockid_ns=%llu\n",
		       in->clock_data_clockid,
		       (unsigned long long)in->clock_data_wall_ns,
		       (unsigned long long)in->clock_data_clockid_ns);
	for (i = 0; i < in->naux_index; i++)
		printf("aux_index %#llx %#llx\n",
		       (unsigned long long)in->aux_index[i].file_offset,
		       (unsigned long long)in->aux_index[i].size);
	for (i = 0; i < in->nbuild_ids; i++) {
		const struct perfdata_build_id *b = &in->build_ids[i];

		printf("build_id ");
		for (j = 0; j < b->size; j++)
			printf("%02x", b->id[j]);
		printf(" %s pid=%d\n", b->filename, b->pid);
	}
}

static uint64_t fnv1a(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static void print_record(struct perfdata *pd, const struct perfdata_record *r,
			 int hash, const char *file)
{
	const char *name = perfdata_record_name(r->type);
	const struct perfdata_sample_id *s = &r->sid;
	struct perfdata_mmap m;
	struct perfdata_comm c;
	struct perfdata_task t;
	struct perfdata_switch sw;
	struct perfdata_sample smp;
	struct perfdata_aux aux;
	struct perfdata_itrace_start is;
	struct perfdata_auxtrace_info ai;
	struct perfdata_time_conv tc;

	printf("rec %#llx ", (unsigned long long)r->file_offset);
	if (name)
		printf("%s", name);
	else
		printf("UNKNOWN_%u", r->type);
	printf(" size=%#x misc=%#x", r->size, r->misc);
	if (file)
		printf(" file=%s", file);
	if (r->attr)
		printf(" attr=%td", r->attr - perfdata_get_info(pd)->attrs);
	if (s->has_time)
		printf(" time=%llu", (unsigned long long)s->time);
	if (s->has_tid)
		printf(" pid=%d tid=%d", (int)s->pid, (int)s->tid);
	if (s->has_cpu)
		printf(" cpu=%u", s->cpu);
	if (s->has_id)
		printf(" id=%llu", (unsigned long long)s->id);
	switch (r->type) {
	case PD_RECORD_MMAP:
	case PD_RECORD_MMAP2:
		if (perfdata_parse_mmap(r, &m) == 0)
			printf(" | %d/%d addr=%#llx len=%#llx pgoff=%#llx file=%s",
			       (int)m.pid, (int)m.tid, (unsigned long long)m.addr,
			       (unsigned long long)m.len,
			       (unsigned long long)m.pgoff, m.filename);
		break;
	case PD_RECORD_COMM:
		if (perfdata_parse_comm(r, &c) == 0)
			printf(" | %d/%d comm=%s exec=%d", (int)c.pid, (int)c.tid,
			       c.comm, c.exec);
		break;
	case PD_RECORD_FORK:
	case PD_RECORD_EXIT:
		if (perfdata_parse_task(r, &t) == 0)
			printf(" | pid=%d ppid=%d tid=%d ptid=%d", (int)t.pid,
			       (int)t.ppid, (int)t.tid, (int)t.ptid);
		break;
	case PD_RECORD_SWITCH:
	case PD_RECORD_SWITCH_CPU_WIDE:
		if (perfdata_parse_switch(r, &sw) == 0)
			printf(" | out=%d preempt=%d next_prev=%d/%d", sw.out,
			       sw.preempt, (int)sw.next_prev_pid,
			       (int)sw.next_prev_tid);
		break;
	case PD_RECORD_SAMPLE:
		if (perfdata_parse_sample(r, &smp) == 0)
			printf(" | ip=%#llx period=%llu", (unsigned long long)smp.ip,
			       (unsigned long long)smp.period);
		else
			printf(" | bad sample");
		break;
	case PD_RECORD_AUX:
		if (perfdata_parse_aux(r, &aux) == 0)
			printf(" | offset=%#llx size=%#llx flags=%#llx",
			       (unsigned long long)aux.aux_offset,
			       (unsigned long long)aux.aux_size,
			       (unsigned long long)aux.flags);
		break;
	case PD_RECORD_ITRACE_START:
		if (perfdata_parse_itrace_start(r, &is) == 0)
			printf(" | %d/%d", (int)is.pid, (int)is.tid);
		break;
	case PD_RECORD_AUXTRACE_INFO:
		if (perfdata_parse_auxtrace_info(r, &ai) == 0)
			printf(" | type=%u npriv=%zu", ai.type, ai.npriv);
		break;
	case PD_RECORD_TIME_CONV:
		if (perfdata_parse_time_conv(r, &tc) == 0)
			printf(" | shift=%llu mult=%llu zero=%llu",
			       (unsigned long long)tc.time_shift,
			       (unsigned long long)tc.time_mult,
			       (unsigned long long)tc.time_zero);
		break;
	case PD_RECORD_AUXTRACE:
		printf(" | size=%#llx offset=%#llx ref=%#llx idx=%u tid=%d cpu=%d payload_at=%#llx",
		       (unsigned long long)r->aux_size,
		       (unsigned long long)r->aux_offset,
		       (unsigned long long)r->aux_reference, r->aux_idx,
		       (int)r->aux_tid, (int)r->aux_cpu,
		       (unsigned long long)r->aux_file_offset);
		if (hash) {
			const uint8_t *d;
			void *cookie;

			if (perfdata_aux_map(pd, r->aux_file_offset, r->aux_size,
					     &d, &cookie) == 0) {
				printf(" fnv=%016llx",
				       (unsigned long long)fnv1a(d, r->aux_size));
				perfdata_aux_unmap(pd, cookie);
			} else {
				printf(" map-error=%s", perfdata_errmsg(pd));
			}
		}
		break;
	}
	printf(" end=%#llx\n", (unsigned long long)(r->file_offset + r->size +
						   r->aux_size));
}

/* A perf.data directory: the header file's header, then every record in
 * merged order. */
static int dump_dir(const char *path, size_t window, int hash)
{
	struct perfdata_dir *d;
	struct perfdata_record rec;
	char err[640];
	size_t file;
	int r = perfdata_dir_open(path, &d, err, sizeof(err));

	if (r < 0) {
		printf("open error %d %s: %s\n", r, ptd_strerror(r), err);
		return 1;
	}
	for (size_t i = 0; window && i < perfdata_dir_nfiles(d); i++)
		perfdata_set_window(perfdata_dir_reader(d, i), window);
	print_header(perfdata_get_info(perfdata_dir_header(d, 0)));
	printf("dir_format %llu files %zu\n", (unsigned long long)
	       perfdata_get_info(perfdata_dir_header(d, 0))->dir_format,
	       perfdata_dir_nfiles(d));
	while ((r = perfdata_dir_next(d, &rec, &file)) == 0) {
		const char *name = strrchr(perfdata_dir_path(d, file), '/');

		print_record(perfdata_dir_reader(d, file), &rec, hash, name + 1);
	}
	if (perfdata_dir_note(d))
		printf("warning: %s\n", perfdata_dir_note(d));
	for (size_t i = 0; i < perfdata_dir_nfiles(d); i++)
		for (const char *const *w = perfdata_dir_warnings(d, i); *w; w++)
			printf("warning: %s\n", *w);
	if (r == PTD_ERR_END)
		printf("end\n");
	else
		printf("error %d %s: %s\n", r, ptd_strerror(r), perfdata_dir_errmsg(d));
	perfdata_dir_close(d);
	return r == PTD_ERR_END ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct perfdata *pd;
	struct perfdata_record rec;
	const char *const *w;
	size_t window = 0;
	char err[512];
	int c, r, hash = 0;

	while ((c = getopt(argc, argv, "w:x")) != -1) {
		switch (c) {
		case 'w':
			window = strtoul(optarg, NULL, 0);
			break;
		case 'x':
			hash = 1;
			break;
		default:
			fprintf(stderr, "usage: pdump [-w WINDOW] [-x] FILE\n");
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: pdump [-w WINDOW] [-x] FILE\n");
		return 2;
	}
	if (perfdata_dir_is(argv[optind]))
		return dump_dir(argv[optind], window, hash);
	r = perfdata_open(argv[optind], &pd, err, sizeof(err));
	if (r < 0) {
		printf("open error %d %s: %s\n", r, ptd_strerror(r), err);
		return 1;
	}
	if (window)
		perfdata_set_window(pd, window);
	print_header(perfdata_get_info(pd));
	for (;;) {
		r = perfdata_next(pd, &rec);
		if (r == PTD_ERR_UNSUPPORTED) {
			printf("unsupported: %s\n", perfdata_errmsg(pd));
			continue;
		}
		if (r < 0)
			break;
		print_record(pd, &rec, hash, NULL);
	}
	for (w = perfdata_warnings(pd); *w; w++)
		printf("warning: %s\n", *w);
	if (r == PTD_ERR_END)
		printf("end\n");
	else
		printf("error %d %s: %s\n", r, ptd_strerror(r), perfdata_errmsg(pd));
	perfdata_close(pd);
	return r == PTD_ERR_END ? 0 : 1;
}
