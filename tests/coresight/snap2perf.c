/* SPDX-License-Identifier: MIT */
/*
 * snap2perf - wraps a CoreSight snapshot directory in the perf.data that
 * `perf record -e cs_etm//` would have written for the same trace, so that
 * ptdecode's perf.data path can be checked against its snapshot path (which
 * tests/coresight checks against trc_pkt_lister).
 *
 *   snap2perf [--hdr-version 1|2] [--image-root DIR] [--repeat N]
 *             SNAPSHOT_DIR OUT
 *
 * What is written (Linux perf's layout, tools/perf/util/cs-etm.h):
 *   - attrs: cs_etm (PMU type 8) and dummy, sample_type
 *     IDENTIFIER|TID|TIME|CPU with sample_id_all;
 *   - AUXTRACE_INFO type 3: one block per ETMv3/PTM/ETMv4/ETE source of
 *     the snapshot's trace buffers, its registers in perf's order; header
 *     version 2 puts the trace IDs in AUX_OUTPUT_HW_ID records instead;
 *   - COMM and ITRACE_START of an invented process, one MMAP2 per memory
 *     dump (the dump file is the mapped file, pgoff its offset; kernel
 *     cpumode and pid -1 for kernel addresses), dumps overlapping an
 *     earlier one left out as the snapshot reader does;
 *   - per trace buffer: one AUXTRACE record holding its bytes as they are
 *     (a formatted buffer keeps all its trace IDs in one queue) and its AUX
 *     record (flag CORESIGHT_FORMAT_RAW for source_data buffers);
 *     --repeat N writes each buffer N times, as N AUXTRACE records of
 *     the queue (a decoder resets between records, as perf's does, so the
 *     flow is N times the buffer's: many chunks for parallel decoding);
 *     --garble K damages every K-th copy (one byte in 61 flipped past its
 *     first 256), so that decoders report errors in some chunks;
 *     --per-cpu splits a formatted buffer by trace ID instead, one queue
 *     per source on its CPU holding that source's bytes unformatted (flag
 *     CORESIGHT_FORMAT_RAW), as `perf record -a` writes per-CPU queues.
 * The source's CPU is N for a core named cpu_N, else an unused number.
 * MMAP2 file names are the dumps' absolute paths, or DIR/<file as in the
 * .ini> with --image-root (then found with ptdecode --search-path).
 *
 * Prints one line per source ("source ID 0x10 cpu 16 ETMv4 from-name") and
 * per image dir ("image-dir DIR"), for the test script.
 * Exit: 0 written, 1 error, 3 nothing to convert (no instruction trace
 * source, or a buffer format perf cannot carry).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "cs_etm_info.h"
#include "cssnapshot.h"
#include "perfwrite.h"
#include "ptdecode.h"
#include "util.h"

#define CS_ETM_PMU_TYPE 8
#define PROC_PID 4242
#define CS_ETM_ID 1000     /* sample ids: cs_etm + cpu index, dummy + ... */
#define DUMMY_ID 2000
#define AUX_FLAG_CORESIGHT_RAW 0x100
#define PERF_RECORD_AUX_OUTPUT_HW_ID 21

struct src {
	const struct cssnap_device *dev, *core;
	int proto, cpu, cpu_from_name;
	size_t buf;
	uint64_t regs[9];
	size_t nregs;
	uint8_t trace_id;
};

struct img {
	const struct cssnap_dump *d;
	int kernel;
};

static char err[1024];

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "snap2perf: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void check(int rc, const char *what)
{
	if (rc < 0)
		die("writing %s failed (%s)", what, ptd_strerror(rc));
}

/* Register value, or def when absent (-1: required). */
static int reg(const struct cssnap_device *d, const char *name, int64_t def,
	       uint64_t *v)
{
	if (cssnap_reg(d, name, v) == 0) {
		*v &= 0xffffffffu;
		return 0;
	}
	if (def < 0) {
		fprintf(stderr, "snap2perf: %s: source %s lacks register %s: "
			"skipped\n", d->ini, d->name, name);
		return -1;
	}
	*v = (uint64_t)def;
	return 0;
}

/* perf's parameters of a source, in cs-etm.h order. */
static int source_regs(struct src *s)
{
	static const char *const v3[] = { "ETMCR", "ETMTRACEIDR", "ETMCCER",
					  "ETMIDR" };
	static const char *const v4[] = { "TRCCONFIGR", "TRCTRACEIDR", "TRCIDR0",
					  "TRCIDR1", "TRCIDR2", "TRCIDR8",
					  "TRCAUTHSTATUS", "TRCDEVARCH" };
	/* defaults as the snapshot path uses them */
	static const int64_t v4def[] = { -1, -1, -1, 0x4100F403, -1, 0, 0,
					 0x47705A13 };
	uint64_t x;

	if (s->proto == CS_PROTO_ETMV3 || s->proto == CS_PROTO_PTM) {
		for (size_t i = 0; i < 4; i++)
			if (reg(s->dev, v3[i], -1, &s->regs[i]))
				return -1;
		s->nregs = 4;
		s->trace_id = (uint8_t)(s->regs[1] & 0x7f);
		/* perf knows PTM only by ETMIDR[11:8] == 3 */
		if ((s->proto == CS_PROTO_PTM) != ((s->regs[3] & 0xf00) == 0x300))
			fprintf(stderr, "snap2perf: %s: %s is %s but its ETMIDR "
				"%#" PRIx64 " says otherwise: perf's reader will "
				"take it for %s\n", s->dev->ini, s->dev->name,
				cs_proto_name(s->proto), s->regs[3],
				s->proto == CS_PROTO_PTM ? "ETMv3" : "PTM");
		return 0;
	}
	s->nregs = s->proto == CS_PROTO_ETE ? 8 : 7;
	for (size_t i = 0; i < s->nregs; i++)
		if (reg(s->dev, v4[i], v4def[i], &s->regs[i]))
			return -1;
	s->trace_id = (uint8_t)(s->regs[1] & 0x7f);
	/* perf's block has no TRCIDR9..13: say so if they matter */
	for (int i = 9; i <= 13 && s->proto == CS_PROTO_ETMV4; i++) {
		char n[16];

		snprintf(n, sizeof(n), "TRCIDR%d", i);
		if (cssnap_reg(s->dev, n, &x) == 0 && x)
			fprintf(stderr, "snap2perf: %s: %s=%#" PRIx64 " cannot be "
				"carried by perf's ETMv4 block\n", s->dev->ini, n, x);
	}
	return 0;
}

static int cmp_pair(const void *a, const void *b)
{
	return strcmp(((const struct cssnap_pair *)a)->a,
		      ((const struct cssnap_pair *)b)->a);
}

static int is_kernel_dump(const struct cssnap_dump *d, int proto)
{
	const char *sp = d->space ? d->space : "";

	if (d->address >= 0xffff000000000000ull)
		return 1;
	if ((proto == CS_PROTO_ETMV3 || proto == CS_PROTO_PTM) &&
	    d->address >= 0xc0000000ull)
		return 1;
	return !strncasecmp(sp, "EL1", 3) || !strncasecmp(sp, "EL2", 3) ||
	       !strncasecmp(sp, "EL3", 3);
}

/* Record with our sample_id_all trailer (TID, TIME, CPU, IDENTIFIER). */
static void raw_record(struct perfwrite *w, uint32_t type, uint16_t misc,
		       const uint64_t *body, size_t nbody, uint32_t pid,
		       uint32_t tid, uint64_t time, uint32_t cpu, uint64_t id)
{
	uint64_t rec[16];
	size_t n = 1;

	for (size_t i = 0; i < nbody; i++)
		rec[n++] = body[i];
	rec[n++] = (uint64_t)tid << 32 | pid;
	rec[n++] = time;
	rec[n++] = cpu;
	rec[n++] = id;
	rec[0] = type | (uint64_t)misc << 32 | (uint64_t)(n * 8) << 48;
	if (perfwrite_record(w, rec, n * 8) < 0)
		die("writing record type %u failed", type);
}

/* The bytes of trace ID want in a formatted buffer (CoreSight
 * architecture, the trace formatter's 16-byte frames): an even byte with
 * bit 0 set names a new ID, effective at once when its auxiliary bit (bit
 * k of byte 15 for byte 2k) is 0, after the next byte when it is 1; an
 * even data byte's bit 0 is its auxiliary bit; odd bytes are data.
 * Returns the number written to out (at most n). */
static size_t deformat(const uint8_t *buf, size_t n, uint8_t want, uint8_t *out)
{
	int cur = -1;
	size_t k = 0;

	for (size_t f = 0; f + 16 <= n; f += 16) {
		const uint8_t *fr = buf + f;

		for (int j = 0; j < 8; j++) {
			uint8_t b = fr[2 * j];
			int aux = fr[15] >> j & 1, later = -1;

			if (b & 1) {
				if (aux)
					later = b >> 1;
				else
					cur = b >> 1;
			} else if (cur == want) {
				out[k++] = (uint8_t)((b & 0xfe) | aux);
			}
			if (j < 7 && cur == want)
				out[k++] = fr[2 * j + 1];
			if (later >= 0)
				cur = later;
		}
	}
	return k;
}

/* --per-cpu: queue i holds source i's bytes of its buffer, unformatted. */
static void per_cpu_queues(struct perfwrite *w, const struct cssnap *s,
			   const struct src *src, size_t nsrc,
			   struct util_map *maps, struct perfwrite_sid *sid,
			   uint64_t *t)
{
	for (size_t i = 0; i < nsrc; i++) {
		size_t b = src[i].buf, len;
		uint8_t *data;

		if (!maps[b].data &&
		    util_map_file(s->buf[b].path, &maps[b], err, sizeof(err)))
			die("trace buffer %s: %s", s->buf[b].path, err);
		data = malloc(maps[b].size + 1);
		if (!data)
			die("out of memory");
		len = deformat(maps[b].data, maps[b].size, src[i].trace_id, data);
		sid->pid = sid->tid = PROC_PID;
		sid->time = ++*t;
		sid->id = CS_ETM_ID + i;
		sid->cpu = (uint32_t)src[i].cpu;
		check(perfwrite_aux(w, sid, 0, len, AUX_FLAG_CORESIGHT_RAW), "AUX");
		check(perfwrite_auxtrace(w, data, len, 0, 0x5e1f0000ull + i,
					 (uint32_t)i, PROC_PID,
					 (uint32_t)src[i].cpu), "AUXTRACE");
		printf("queue %zu ID %#x cpu %d bytes %zu\n", i, src[i].trace_id,
		       src[i].cpu, len);
		/* where perf takes a thread from (cs_etm__get_pid_fmt) */
		printf("pidfmt %#x %s\n", src[i].trace_id,
		       src[i].nregs == 4 ? (src[i].regs[0] >> 14 & 1 ? "ctxid" : "none") :
		       src[i].regs[0] & (1u << 7 | 1u << 15) ? "vmid" :
		       src[i].regs[0] >> 6 & 1 ? "ctxid" : "none");
		free(data);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: snap2perf [--hdr-version 1|2] [--image-root DIR] "
		"[--repeat N [--garble K] | --per-cpu] SNAPSHOT_DIR OUT.perf.data\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct cssnap *s;
	struct src *src = NULL;
	struct img *img = NULL;
	size_t nsrc = 0, nimg = 0, scap = 0, icap = 0;
	const char *root = NULL, *dir = NULL, *out = NULL;
	int version = 1, raw_bufs = 0, fmt_bufs = 0, rc;
	struct util_map *maps;
	struct perfwrite *w;
	uint64_t t = 1000000;
	long repeat = 1, garble = 0;
	int per_cpu = 0;
	uint8_t *bad = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hdr-version") && i + 1 < argc)
			version = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--image-root") && i + 1 < argc)
			root = argv[++i];
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = atol(argv[++i]);
		else if (!strcmp(argv[i], "--garble") && i + 1 < argc)
			garble = atol(argv[++i]);
		else if (!strcmp(argv[i], "--per-cpu"))
			per_cpu = 1;
		else if (argv[i][0] == '-')
			usage();
		else if (!dir)
			dir = argv[i];
		else if (!out)
			out = argv[i];
		else
			usage();
	}
	if (!dir || !out || version < 1 || version > 2 || repeat < 1 ||
	    repeat > 1000000 || garble < 0 || (per_cpu && (repeat > 1 || garble)))
		usage();
	rc = cssnap_load(dir, &s, err, sizeof(err));
	if (rc)
		die("%s (%s)", err, ptd_strerror(rc));

	/* Sources, buffer by buffer, by name within a buffer (the snapshot
	 * reader's order, which decides which of overlapping dumps wins). */
	for (size_t b = 0; b < s->nbuf; b++) {
		const struct cssnap_buffer *buf = &s->buf[b];
		int raw = !strcasecmp(buf->format, "source_data"), any = 0;
		struct cssnap_pair *pairs = calloc(s->nsrc_buf + 1, sizeof(*pairs));
		size_t np = 0;

		if (!pairs)
			die("out of memory");
		if (!raw && strcasecmp(buf->format, "coresight")) {
			printf("UNSUPPORTED: buffer %s has format %s, which a perf "
			       "AUX buffer cannot carry\n", buf->name, buf->format);
			exit(3);
		}
		for (size_t i = 0; i < s->nsrc_buf; i++)
			if (!strcmp(s->src_buf[i].b, buf->name))
				pairs[np++] = s->src_buf[i];
		qsort(pairs, np, sizeof(*pairs), cmp_pair);
		for (size_t i = 0; i < np; i++) {
			struct src x = { 0 };
			const char *core;

			x.dev = cssnap_device(s, pairs[i].a);
			if (!x.dev)
				continue;
			x.proto = cssnap_proto(x.dev->type);
			if (x.proto == CS_PROTO_NONE || x.proto == CS_PROTO_STM ||
			    x.proto == CS_PROTO_ITM)
				continue; /* STM/ITM or unknown: no flow */
			core = cssnap_core_of(s, x.dev->name);
			x.core = core ? cssnap_device(s, core) : NULL;
			if (!x.core || source_regs(&x))
				continue;
			if (raw && any) {
				fprintf(stderr, "snap2perf: unformatted buffer %s "
					"holds one source: %s left out\n", buf->name,
					x.dev->name);
				continue;
			}
			x.buf = b;
			x.cpu = -1;
			if (!strncmp(x.core->name, "cpu_", 4)) {
				char *end;
				long c = strtol(x.core->name + 4, &end, 10);

				if (!*end && end != x.core->name + 4 && c >= 0 &&
				    c < 65536)
					x.cpu = (int)c, x.cpu_from_name = 1;
			}
			if (util_grow((void **)&src, &scap, nsrc + 1, sizeof(*src)))
				die("out of memory");
			src[nsrc++] = x;
			any = 1;
		}
		free(pairs);
		if (any)
			raw ? raw_bufs++ : fmt_bufs++;
	}
	if (!nsrc) {
		printf("UNSUPPORTED: %s has no ETMv3/PTM/ETMv4/ETE source with a "
		       "core\n", dir);
		exit(3);
	}
	if (raw_bufs && fmt_bufs) {
		printf("UNSUPPORTED: %s mixes formatted and unformatted buffers; "
		       "a perf session has one AUX format\n", dir);
		exit(3);
	}
	/* CPUs not given by name: the lowest unused numbers. */
	for (size_t i = 0; i < nsrc; i++) {
		for (int c = 0; src[i].cpu < 0; c++) {
			int used = 0;

			for (size_t j = 0; j < nsrc; j++)
				used |= src[j].cpu == c;
			if (!used)
				src[i].cpu = c;
		}
		for (size_t j = 0; j < i; j++)
			if (src[j].cpu == src[i].cpu)
				die("sources %s and %s are both on cpu %d",
				    src[j].dev->name, src[i].dev->name, src[i].cpu);
	}
	/* Images: every dump of the traced cores, first one wins. */
	for (size_t i = 0; i < nsrc; i++)
		for (size_t k = 0; k < src[i].core->ndumps; k++) {
			const struct cssnap_dump *d = &src[i].core->dumps[k];
			int skip = !d->length;

			for (size_t j = 0; j < nimg && !skip; j++)
				skip = img[j].d->address < d->address + d->length &&
				       d->address < img[j].d->address + img[j].d->length;
			if (skip)
				continue;
			if (util_grow((void **)&img, &icap, nimg + 1, sizeof(*img)))
				die("out of memory");
			img[nimg].d = d;
			img[nimg++].kernel = is_kernel_dump(d, src[i].proto);
		}

	maps = calloc(s->nbuf + 1, sizeof(*maps));
	if (!maps)
		die("out of memory");
	check(perfwrite_open(&w, out, err, sizeof(err)), out);
	{
		uint8_t attr[128] = { 0 };
		uint32_t v32;
		uint64_t v64, flags, *ids = calloc(nsrc, sizeof(*ids));
		uint64_t st = PD_SAMPLE_IDENTIFIER | PD_SAMPLE_TID |
			      PD_SAMPLE_TIME | PD_SAMPLE_CPU;

		if (!ids)
			die("out of memory");
		v32 = CS_ETM_PMU_TYPE; memcpy(attr, &v32, 4);
		v32 = 128; memcpy(attr + 4, &v32, 4);
		v64 = 1ull << 14; memcpy(attr + 8, &v64, 8);   /* ETM_OPT_CTXTID */
		v64 = 1; memcpy(attr + 16, &v64, 8);           /* sample_period */
		memcpy(attr + 24, &st, 8);
		flags = PD_ATTR_FLAG_DISABLED | PD_ATTR_FLAG_ENABLE_ON_EXEC |
			PD_ATTR_FLAG_SAMPLE_ID_ALL;
		memcpy(attr + 40, &flags, 8);
		for (size_t i = 0; i < nsrc; i++)
			ids[i] = CS_ETM_ID + i;
		check(perfwrite_add_attr(w, attr, ids, nsrc, "cs_etm//"), "attr");
		memset(attr, 0, sizeof(attr));
		v32 = PD_TYPE_SOFTWARE; memcpy(attr, &v32, 4);
		v32 = 128; memcpy(attr + 4, &v32, 4);
		v64 = PD_COUNT_SW_DUMMY; memcpy(attr + 8, &v64, 8);
		v64 = 1; memcpy(attr + 16, &v64, 8);
		memcpy(attr + 24, &st, 8);
		flags |= PD_ATTR_FLAG_MMAP | PD_ATTR_FLAG_COMM | PD_ATTR_FLAG_TASK |
			 PD_ATTR_FLAG_MMAP2 | PD_ATTR_FLAG_COMM_EXEC;
		memcpy(attr + 40, &flags, 8);
		for (size_t i = 0; i < nsrc; i++)
			ids[i] = DUMMY_ID + i;
		check(perfwrite_add_attr(w, attr, ids, nsrc, "dummy:u"), "attr");
		free(ids);
	}
	{
		uint64_t *priv = calloc(CS_HEADER_SIZE + nsrc * 11, sizeof(*priv));
		size_t n = CS_HEADER_SIZE;

		if (!priv)
			die("out of memory");
		priv[CS_HEADER_VERSION] = (uint64_t)version;
		priv[CS_PMU_TYPE_CPUS] = (uint64_t)CS_ETM_PMU_TYPE << 32 | nsrc;
		priv[CS_ETM_SNAPSHOT] = 0;
		for (size_t i = 0; i < nsrc; i++) {
			const struct src *x = &src[i];

			priv[n++] = x->proto == CS_PROTO_ETMV4 ? CS_ETMV4_MAGIC :
				    x->proto == CS_PROTO_ETE ? CS_ETE_MAGIC :
				    CS_ETMV3_MAGIC;
			priv[n++] = (uint64_t)x->cpu;
			priv[n++] = x->nregs;
			for (size_t k = 0; k < x->nregs; k++)
				priv[n++] = k == 1 && version >= 2 ?
					    CS_TRACEIDR_NO_ID : x->regs[k];
		}
		/* our own parser must read back what we mean */
		{
			struct cs_etm_info info;

			if (cs_etm_info_parse((const uint8_t *)priv, n * 8, &info,
					      err, sizeof(err)))
				die("AUXTRACE_INFO does not parse back: %s", err);
			for (size_t i = 0; i < nsrc; i++)
				if (info.cpus[i].cpu != src[i].cpu ||
				    (version == 1 && info.cpus[i].trace_id !=
				     src[i].trace_id) ||
				    (version == 2 && info.cpus[i].trace_id_valid))
					die("AUXTRACE_INFO block %zu reads back wrong", i);
			cs_etm_info_free(&info);
		}
		check(perfwrite_auxtrace_info(w, PD_AUXTRACE_CS_ETM, priv, n, NULL, 0),
		      "AUXTRACE_INFO");
		free(priv);
	}
	{
		struct perfwrite_sid sid = { PROC_PID, PROC_PID, t, DUMMY_ID,
					     0, (uint32_t)src[0].cpu };

		check(perfwrite_comm(w, &sid, PROC_PID, PROC_PID, "snapshot", 1),
		      "COMM");
		for (size_t i = 0; i < nimg; i++) {
			const struct cssnap_dump *d = img[i].d;
			char path[PATH_MAX + 1024], *real;
			uint32_t pid = img[i].kernel ? UINT32_MAX : PROC_PID;

			if (root) {
				snprintf(path, sizeof(path), "%s/%s", root, d->file);
			} else if ((real = realpath(d->path, NULL))) {
				snprintf(path, sizeof(path), "%s", real);
				free(real);
			} else {
				/* missing dump: the trace names it all the same */
				snprintf(path, sizeof(path), "%s", d->path);
			}
			sid.pid = pid;
			sid.tid = img[i].kernel ? 0 : PROC_PID;
			sid.time = ++t;
			check(perfwrite_mmap2(w, &sid, img[i].kernel ?
					      PD_MISC_KERNEL : PD_MISC_USER,
					      pid, sid.tid, d->address, d->length,
					      d->offset, NULL, 0, 0, 0, 0, 0,
					      PROT_READ | PROT_EXEC, MAP_PRIVATE,
					      path), "MMAP2");
			if (!d->missing) {
				const char *slash = strrchr(d->path, '/');

				printf("image-dir %.*s\n", slash ?
				       (int)(slash - d->path) : 1,
				       slash ? d->path : ".");
			}
		}
		for (size_t i = 0; i < nsrc; i++) {
			sid.pid = sid.tid = PROC_PID;
			sid.time = ++t;
			sid.id = CS_ETM_ID + i;
			sid.cpu = (uint32_t)src[i].cpu;
			check(perfwrite_itrace_start(w, &sid, PROC_PID, PROC_PID),
			      "ITRACE_START");
			if (version >= 2) {
				/* hw_id: version 0 layout, trace ID in [7:0] */
				uint64_t body = src[i].trace_id;

				raw_record(w, PERF_RECORD_AUX_OUTPUT_HW_ID, 0,
					   &body, 1, PROC_PID, PROC_PID, ++t,
					   (uint32_t)src[i].cpu, CS_ETM_ID + i);
			}
			printf("source ID %#x cpu %d %s %s\n", src[i].trace_id,
			       src[i].cpu, cs_proto_name(src[i].proto),
			       src[i].cpu_from_name ? "from-name" : "invented");
		}
		if (per_cpu) {
			if (raw_bufs) {
				printf("UNSUPPORTED: --per-cpu splits formatted "
				       "buffers; %s has unformatted ones\n", dir);
				exit(3);
			}
			per_cpu_queues(w, s, src, nsrc, maps, &sid, &t);
		}
		/* one AUX queue per buffer that has a source */
		for (size_t b = 0, q = 0; b < s->nbuf && !per_cpu; b++) {
			size_t first = nsrc;

			for (size_t i = 0; i < nsrc && first == nsrc; i++)
				if (src[i].buf == b)
					first = i;
			if (first == nsrc)
				continue;
			if (util_map_file(s->buf[b].path, &maps[b], err, sizeof(err)))
				die("trace buffer %s: %s", s->buf[b].path, err);
			if (garble) {
				free(bad);
				bad = malloc(maps[b].size + 1);
				if (!bad)
					die("out of memory");
				memcpy(bad, maps[b].data, maps[b].size);
				for (size_t k = 256; k < maps[b].size; k += 61)
					bad[k] ^= 0x5a;
			}
			for (long r = 0; r < repeat; r++) {
				uint64_t off = (uint64_t)r * maps[b].size;
				const void *data = garble && r % garble == garble - 1 ?
						   (const void *)bad : maps[b].data;

				sid.pid = sid.tid = PROC_PID;
				sid.time = ++t;
				sid.id = CS_ETM_ID + first;
				sid.cpu = (uint32_t)src[first].cpu;
				check(perfwrite_aux(w, &sid, off, maps[b].size,
						    raw_bufs ? AUX_FLAG_CORESIGHT_RAW : 0),
				      "AUX");
				check(perfwrite_auxtrace(w, data, maps[b].size,
							 off, 0x5e1f0000ull + q +
							 ((uint64_t)r << 16),
							 (uint32_t)q, PROC_PID,
							 (uint32_t)src[first].cpu),
				      "AUXTRACE");
			}
			q++;
		}
		check(perfwrite_finished_round(w), "FINISHED_ROUND");
	}
	{
		const char *cmd[] = { "perf", "record", "-e", "cs_etm//u", "--",
				      "snapshot" };
		int maxcpu = 0;
		int arch64 = 0;

		for (size_t i = 0; i < nsrc; i++) {
			if (src[i].cpu > maxcpu)
				maxcpu = src[i].cpu;
			arch64 |= src[i].proto == CS_PROTO_ETMV4 ||
				  src[i].proto == CS_PROTO_ETE;
		}
		check(perfwrite_feat_string(w, PD_FEAT_HOSTNAME, "snap2perf"), "feature");
		check(perfwrite_feat_string(w, PD_FEAT_OSRELEASE, "6.1.0"), "feature");
		check(perfwrite_feat_string(w, PD_FEAT_VERSION, "6.1"), "feature");
		check(perfwrite_feat_string(w, PD_FEAT_ARCH, arch64 ? "aarch64" :
					    "armv7l"), "feature");
		check(perfwrite_feat_nrcpus(w, (uint32_t)maxcpu + 1,
					    (uint32_t)maxcpu + 1), "feature");
		check(perfwrite_feat_cmdline(w, 6, cmd), "feature");
	}
	rc = perfwrite_close(w, err, sizeof(err));
	for (size_t b = 0; b < s->nbuf; b++)
		if (maps[b].data)
			util_unmap(&maps[b]);
	free(maps);
	free(bad);
	free(src);
	free(img);
	cssnap_free(s);
	if (rc)
		die("%s", err);
	return 0;
}
