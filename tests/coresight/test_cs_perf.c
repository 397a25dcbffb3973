/* SPDX-License-Identifier: MIT */
/*
 * test_cs_perf PERF_DATA BINARY_DIR
 *
 * 1. Parses the cs_etm AUXTRACE_INFO of PERF_DATA with cs_etm_info and
 *    compares every field with what `perf script -D` prints (oracle).
 * 2. Decodes the AUX data with coresight_open_perf (code from the
 *    executable MMAP2 records, files looked up in BINARY_DIR by base name)
 *    and compares the instruction ranges with trc_pkt_lister's on a
 *    snapshot built from the same bytes and registers (oracle).
 * The perf.data is parsed minimally here (test code only).  Exit 77 when
 * the input or the oracles are absent.
 */
#define _GNU_SOURCE   /* asprintf */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coresight.h"
#include "cs_etm_info.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

static int failures;

static void fail(const char *fmt, const char *a, const char *b)
{
	printf("FAIL: ");
	printf(fmt, a, b);
	printf("\n");
	failures++;
}

/* "name=value" lines of our parse, in perf script -D's order and names. */
static void our_fields(const struct cs_etm_info *in, char ***out, size_t *n)
{
	static char *v[4096];
	size_t k = 0;
#define F(name, val) do { if (k < 4096 && asprintf(&v[k], "%s=%llx", name, \
	(unsigned long long)(val)) > 0) k++; } while (0)

	F("Header version", in->version);
	F("PMU type/num cpus", (uint64_t)in->pmu_type << 32 | in->nr_cpu);
	F("Snapshot", in->snapshot);
	for (uint32_t i = 0; i < in->nr_cpu; i++) {
		const struct cs_source *c = &in->cpus[i];

		F("Magic number", c->proto == CS_PROTO_ETMV4 ? CS_ETMV4_MAGIC :
		  c->proto == CS_PROTO_ETE ? CS_ETE_MAGIC : CS_ETMV3_MAGIC);
		F("CPU", c->cpu);
		if (in->version >= 1)
			F("NR_TRC_PARAMS", c->nparams);
		if (c->proto == CS_PROTO_ETMV3 || c->proto == CS_PROTO_PTM) {
			F("ETMCR", c->etmcr);
			F("ETMTRACEIDR", c->etmtraceidr);
			F("ETMCCER", c->etmccer);
			F("ETMIDR", c->etmidr);
			continue;
		}
		F("TRCCONFIGR", c->trcconfigr);
		F("TRCTRACEIDR", c->trctraceidr);
		F("TRCIDR0", c->trcidr0);
		F("TRCIDR1", c->trcidr1);
		F("TRCIDR2", c->trcidr2);
		F("TRCIDR8", c->trcidr8);
		if (c->nparams > 6)
			F("TRCAUTHSTATUS", c->trcauthstatus);
		if (c->proto == CS_PROTO_ETE)
			F("TRCDEVARCH", c->trcdevarch);
		if (c->has_ts_source)
			F("TS_SOURCE", c->ts_source);
	}
#undef F
	*out = v;
	*n = k;
}

static int check_info(const char *file, const struct cs_etm_info *info)
{
	char cmd[600], line[512], **ours;
	size_t n, k = 0;
	int in = 0, mism = 0;
	FILE *p;

	our_fields(info, &ours, &n);
	snprintf(cmd, sizeof(cmd), "perf script -D -i '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return 77;
	while (fgets(line, sizeof(line), p)) {
		char name[128], *s, *e;
		size_t len;

		if (strstr(line, "PERF_RECORD_AUXTRACE_INFO")) {
			in = 1;
			continue;
		}
		if (!in)
			continue;
		if (line[0] != '\t')
			break;
		/* "\tNAME\t\t   value" */
		s = line + 1;
		len = strcspn(s, "\t");
		e = s + len;
		while (*e == '\t' || *e == ' ')
			e++;
		snprintf(name, sizeof(name), "%.*s=%.*s", (int)len, s,
			 (int)strcspn(e, " \n"), e);
		if (k >= n || strcmp(name, ours[k])) {
			if (mism++ < 5)
				fail("perf script -D has '%s', cs_etm_info '%s'",
				     name, k < n ? ours[k] : "(nothing)");
		}
		k++;
	}
	pclose(p);   /* perf exits non-zero: it cannot decode ETM */
	if (!in) {
		printf("SKIP part 1: perf script -D failed or printed no "
		       "AUXTRACE_INFO\n");
		return 77;
	}
	if (k != n) {
		char a[32], b[32];

		snprintf(a, sizeof(a), "%zu", k);
		snprintf(b, sizeof(b), "%zu", n);
		fail("perf printed %s fields, cs_etm_info %s", a, b);
	}
	if (!mism && k == n)
		printf("ok   AUXTRACE_INFO: %zu fields equal to perf script -D's "
		       "(version %llu, %u CPUs)\n", n,
		       (unsigned long long)info->version, info->nr_cpu);
	return 0;
}

struct map {
	uint64_t addr, len, pgoff;
	int32_t pid;
	char path[512];
};

static int run_oracle(const char *tmpdir, uint8_t id, char ***lines, size_t *n)
{
	static char *v[100000];
	char cmd[600], line[1024];
	size_t k = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "trc_pkt_lister -ss_dir '%s' -decode_only "
		 "-logstdout -id 0x%x 2>&1", tmpdir, id);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p) && k < 100000) {
		unsigned long long st, en;
		unsigned ni;
		char *r = strstr(line, "exec range=");

		if (strstr(line, "OCSD_GEN_TRC_ELEM_INSTR_RANGE") && r &&
		    sscanf(r, "exec range=0x%llx:[0x%llx] num_i(%u)", &st, &en,
			   &ni) == 3) {
			if (asprintf(&v[k], "R %llx %llx %u", st, en, ni) > 0)
				k++;
		} else if ((r = strstr(line, "OCSD_GEN_TRC_ELEM_ADDR_NACC( ")) &&
			   sscanf(r + 29, "0x%llx", &st) == 1) {
			if (asprintf(&v[k], "NACC %llx", st) > 0)
				k++;
		}
	}
	if (pclose(p) != 0)
		return -1;
	*lines = v;
	*n = k;
	return 0;
}

static void write_file(const char *dir, const char *name, const void *d,
		       size_t len)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(d, 1, len, f) != len)
		failures++;
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	struct util_map m;
	struct cs_etm_info info;
	struct coresight_chunk chunk;
	struct coresight_queue_desc qd;
	struct map maps[64];
	size_t nmaps = 0;
	uint64_t data_off, data_size, pos;
	const uint8_t *aux = NULL;
	uint64_t aux_size = 0;
	int aux_cpu = -1, have_info = 0, rc;
	char err[512];

	if (argc != 3) {
		fprintf(stderr, "usage: test_cs_perf PERF_DATA BINARY_DIR\n");
		return 2;
	}
	if (access(argv[1], R_OK)) {
		printf("SKIP: %s absent\n", argv[1]);
		return 77;
	}
	if (util_map_file(argv[1], &m, err, sizeof(err)) || m.size < 64 ||
	    memcmp(m.data, "PERFILE2", 8)) {
		printf("FAIL: %s is not a perf.data file\n", argv[1]);
		return 1;
	}
	data_off = util_le64(m.data + 40);
	data_size = util_le64(m.data + 48);
	if (data_off > m.size || data_size > m.size - data_off) {
		printf("FAIL: bad data section\n");
		return 1;
	}
	for (pos = data_off; pos + 8 <= data_off + data_size;) {
		const uint8_t *r = m.data + pos;
		uint32_t type = util_le32(r);
		uint16_t size = util_le16(r + 6);

		if (size < 8 || pos + size > data_off + data_size)
			break;
		if (type == 70 && !have_info) {
			rc = cs_etm_info_parse(r + 16, size - 16, &info, err,
					       sizeof(err));
			if (rc) {
				printf("FAIL: cs_etm_info_parse: %s\n", err);
				return 1;
			}
			have_info = 1;
		} else if (type == 71 && size >= 48) {
			uint64_t asz = util_le64(r + 8);

			if (pos + size + asz > data_off + data_size)
				break;
			if (!aux) {
				aux = r + size;
				aux_size = asz;
				aux_cpu = (int)util_le32(r + 40);
			}
			pos += asz;
		} else if (type == 10 && size > 72 && nmaps < 64 &&
			   (util_le32(r + 64) & 4 /* PROT_EXEC */)) {
			const char *fn = (const char *)r + 72, *base = strrchr(fn, '/');
			struct map *mp = &maps[nmaps];

			mp->pid = (int32_t)util_le32(r + 8);
			mp->addr = util_le64(r + 16);
			mp->len = util_le64(r + 24);
			mp->pgoff = util_le64(r + 32);
			snprintf(mp->path, sizeof(mp->path), "%s/%s", argv[2],
				 base ? base + 1 : fn);
			if (!access(mp->path, R_OK))
				nmaps++;
		}
		pos += size;
	}
	if (!have_info || !aux) {
		printf("FAIL: no AUXTRACE_INFO or no AUXTRACE in %s\n", argv[1]);
		return 1;
	}

	/* 1. AUXTRACE_INFO against perf script -D */
	rc = check_info(argv[1], &info);
	if (rc == 77)
		printf("SKIP part 1 (perf absent)\n");

	/* 2. decode, and compare with trc_pkt_lister */
	{
		struct imgstore *st = imgstore_new();
		struct backend *b;
		struct coresight_range r;
		const struct cs_source *src = NULL;
		char tmpdir[] = "/tmp/ptd_csperf.XXXXXX", txt[2048], **orc;
		char *ours[100000];
		size_t nours = 0, norc = 0;

		for (size_t i = 0; i < nmaps; i++)
			imgstore_add_file(st, maps[i].pid, maps[i].addr, maps[i].len,
					  maps[i].path, maps[i].pgoff, 0,
					  IMGSTORE_FOREVER, maps[i].path);
		chunk.data = aux;
		chunk.size = aux_size;
		chunk.offset = 0;
		chunk.time = IMGSTORE_TIME_UNKNOWN;
		chunk.pid = nmaps ? maps[0].pid : -1;
		qd.chunks = &chunk;
		qd.nchunks = 1;
		qd.cpu = aux_cpu;
		qd.formatted = 1;
		rc = coresight_open_perf(&info, &qd, 1, st, 1, &b, err, sizeof(err));
		if (rc) {
			printf("FAIL: coresight_open_perf: %s\n", err);
			return 1;
		}
		while (coresight_next_range(b, &r) == 0 && nours < 100000) {
			int ok = r.nacc ? asprintf(&ours[nours], "NACC %" PRIx64,
						   r.start)
				: asprintf(&ours[nours], "R %" PRIx64 " %" PRIx64 " %u",
					   r.start, r.end, r.ninsns);
			if (ok > 0)
				nours++;
		}
		b->destroy(b);
		imgstore_free(st);

		for (uint32_t i = 0; i < info.nr_cpu; i++)
			if (info.cpus[i].cpu == aux_cpu)
				src = &info.cpus[i];
		if (!src || src->proto != CS_PROTO_ETMV4 || !mkdtemp(tmpdir)) {
			printf("SKIP part 2: oracle snapshot needs an ETMv4 CPU %d\n",
			       aux_cpu);
			return failures ? 1 : 0;
		}
		/* Snapshot with the same bytes, registers and code. */
		write_file(tmpdir, "trace.bin", aux, aux_size);
		snprintf(txt, sizeof(txt), "[snapshot]\nversion=1.0\n[device_list]\n"
			 "d0=cpu.ini\nd1=etm.ini\n[trace]\nmetadata=trace.ini\n");
		write_file(tmpdir, "snapshot.ini", txt, strlen(txt));
		{
			int n = snprintf(txt, sizeof(txt), "[device]\nname=cpu_0\n"
					 "class=core\ntype=Cortex-A53\n");
			for (size_t i = 0; i < nmaps && n < 1800; i++) {
				char link[600];

				/* dump paths are relative to the snapshot */
				snprintf(link, sizeof(link), "%s/img%zu", tmpdir, i);
				if (symlink(maps[i].path, link))
					failures++;
				n += snprintf(txt + n, sizeof(txt) - n,
					      "[dump%zu]\nfile=img%zu\naddress=0x%" PRIx64
					      "\noffset=0x%" PRIx64 "\nlength=0x%" PRIx64
					      "\n", i + 1, i, maps[i].addr,
					      maps[i].pgoff, maps[i].len);
			}
			write_file(tmpdir, "cpu.ini", txt, (size_t)n);
		}
		snprintf(txt, sizeof(txt), "[device]\nname=ETM_0\nclass=trace_source\n"
			 "type=ETM4\n[regs]\nTRCCONFIGR=0x%x\nTRCTRACEIDR=0x%x\n"
			 "TRCIDR0=0x%x\nTRCIDR1=0x%x\nTRCIDR2=0x%x\nTRCIDR8=0x%x\n",
			 src->trcconfigr, src->trctraceidr, src->trcidr0,
			 src->trcidr1, src->trcidr2, src->trcidr8);
		write_file(tmpdir, "etm.ini", txt, strlen(txt));
		snprintf(txt, sizeof(txt), "[trace_buffers]\nbuffers=b0\n[b0]\n"
			 "name=ETB_0\nfile=trace.bin\nformat=coresight\n"
			 "[source_buffers]\nETM_0=ETB_0\n[core_trace_sources]\n"
			 "cpu_0=ETM_0\n");
		write_file(tmpdir, "trace.ini", txt, strlen(txt));
		rc = run_oracle(tmpdir, src->trace_id, &orc, &norc);
		snprintf(txt, sizeof(txt), "rm -rf '%s'", tmpdir);
		if (system(txt))
			failures++;
		if (rc) {
			printf("SKIP part 2: trc_pkt_lister not usable\n");
			return failures ? 1 : 0;
		}
		if (norc != nours)
			printf("FAIL: trc_pkt_lister %zu ranges/naccs, ours %zu\n",
			       norc, nours), failures++;
		for (size_t i = 0; i < norc && i < nours; i++)
			if (strcmp(orc[i], ours[i])) {
				fail("trc_pkt_lister '%s', ours '%s'", orc[i], ours[i]);
				break;
			}
		if (norc == nours && !failures) {
			uint64_t ninsns = 0;
			unsigned long long a, e;
			unsigned ni;

			/* the oracle's instruction count, for the CLI test */
			for (size_t i = 0; i < norc; i++)
				if (sscanf(orc[i], "R %llx %llx %u", &a, &e, &ni) == 3)
					ninsns += ni;
			printf("ok   AUX data of cpu %d (%" PRIu64 " bytes): %zu "
			       "ranges/naccs, same as trc_pkt_lister (%" PRIu64
			       " instructions)\n", aux_cpu, aux_size, nours, ninsns);
		}
		if (!norc) {
			printf("FAIL: no ranges at all: the test proves nothing\n");
			failures++;
		}
		for (size_t i = 0; i < nours; i++)
			free(ours[i]);
	}
	cs_etm_info_free(&info);
	util_unmap(&m);
	return failures ? 1 : 0;
}
