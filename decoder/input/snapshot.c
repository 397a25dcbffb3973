/* SPDX-License-Identifier: MIT */
#include "snapshot.h"
#include "coresight.h"
#include "cssnapshot.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A queue: one PE trace source of one trace buffer. */
struct snap_queue {
	struct cs_source src;
	size_t buf;            /* its trace buffer */
	int formatted, frame_syncs;
};

/* A memory dump of a core traced (the same dump may be listed twice). */
struct dump_ref {
	const struct cssnap_device *core;
	const struct cssnap_dump *d;
};

/* What the loader builds. */
struct snap_load {
	struct cssnap *s;
	struct imgstore *st;
	struct util_map *maps;     /* one per trace buffer */
	struct snap_queue *q;
	size_t nq, qcap;
	struct dump_ref *refs;
	size_t nrefs, refcap;
	char **warn;
	size_t nwarn, warncap;
	int nsw;                   /* STM/ITM sources skipped */
};

static void add_warning(struct snap_load *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_warning(struct snap_load *l, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	char *s;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (util_grow((void **)&l->warn, &l->warncap, l->nwarn + 1,
		      sizeof(*l->warn)))
		return;
	s = strdup(buf);
	if (s)
		l->warn[l->nwarn++] = s;
}

/* ---- trace sources ------------------------------------------------------ */

/* Fills s from the registers of a snapshot trace source.  Returns 0, or -1
 * with the missing register's name in *missing. */
static int snap_regs(const struct cssnap_device *d, struct cs_source *s,
		     const char **missing)
{
	static const struct {
		const char *name;
		int required;
		uint32_t def;
		size_t off;
		int v4;   /* 1: ETMv4 and ETE, 2: ETMv4 only, 3: ETE only,
			   * 0: ETMv3/PTM */
	} regs[] = {
#define R(n, req, def, f, v4) { n, req, def, offsetof(struct cs_source, f), v4 }
		R("ETMIDR", 1, 0, etmidr, 0),
		R("ETMCR", 1, 0, etmcr, 0),
		R("ETMCCER", 1, 0, etmccer, 0),
		R("ETMTRACEIDR", 1, 0, etmtraceidr, 0),
		R("TRCCONFIGR", 1, 0, trcconfigr, 1),
		R("TRCTRACEIDR", 1, 0, trctraceidr, 1),
		R("TRCIDR0", 1, 0, trcidr0, 1),
		R("TRCIDR1", 0, 0x4100F403, trcidr1, 1),
		R("TRCIDR2", 1, 0, trcidr2, 1),
		R("TRCIDR8", 0, 0, trcidr8, 1),
		R("TRCIDR9", 0, 0, trcidr9, 2),
		R("TRCIDR10", 0, 0, trcidr10, 2),
		R("TRCIDR11", 0, 0, trcidr11, 2),
		R("TRCIDR12", 0, 0, trcidr12, 2),
		R("TRCIDR13", 0, 0, trcidr13, 2),
		R("TRCDEVARCH", 0, 0x47705A13, trcdevarch, 3),
#undef R
	};
	int v4 = s->proto == CS_PROTO_ETMV4 ? 2 : s->proto == CS_PROTO_ETE ? 3 : 0;

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		uint64_t v;

		if (v4 ? !(regs[i].v4 == 1 || regs[i].v4 == v4) : regs[i].v4)
			continue;
		if (cssnap_reg(d, regs[i].name, &v)) {
			if (regs[i].required) {
				*missing = regs[i].name;
				return -1;
			}
			v = regs[i].def;
		}
		*(uint32_t *)((char *)s + regs[i].off) = (uint32_t)v;
	}
	s->trace_id = (uint8_t)((v4 ? s->trctraceidr : s->etmtraceidr) & 0x7f);
	s->trace_id_valid = 1;
	return 0;
}

/* "cpu_3" -> 3; other core names have no number we can trust. */
static int core_number(const char *core)
{
	char *end;
	long n;

	if (strncmp(core, "cpu_", 4))
		return -1;
	n = strtol(core + 4, &end, 10);
	return *end || end == core + 4 || n < 0 || n > 65535 ? -1 : (int)n;
}

/* The core device that trace source d serves, or NULL (warned). */
static const struct cssnap_device *source_core(struct snap_load *l,
					       const struct cssnap_device *d,
					       int proto)
{
	const char *core_name = cssnap_core_of(l->s, d->name);
	const struct cssnap_device *core;

	core = core_name ? cssnap_device(l->s, core_name) : NULL;
	if (!core)
		add_warning(l, "trace.ini: %s source %s has no core in "
			    "[core_trace_sources]%s: skipped", cs_proto_name(proto),
			    d->name, core_name ? " that is in the device list" : "");
	return core;
}

/* The configuration of instruction trace source d into src, and its core.
 * Returns 0, or 1 when d cannot be decoded (warned). */
static int source_config(struct snap_load *l, const struct cssnap_device *d,
			 struct cs_source *src,
			 const struct cssnap_device **core)
{
	const char *missing = NULL;

	memset(src, 0, sizeof(*src));
	src->proto = cssnap_proto(d->type);
	src->cpu = -1;
	if (src->proto == CS_PROTO_STM || src->proto == CS_PROTO_ITM) {
		l->nsw++;
		add_warning(l, "%s: %s source %s carries software trace, not "
			    "instruction flow: skipped", d->ini,
			    cs_proto_name(src->proto), d->name);
		return 1;
	}
	if (src->proto == CS_PROTO_NONE) {
		add_warning(l, "%s: trace source %s has unknown type '%s': "
			    "skipped", d->ini, d->name, d->type);
		return 1;
	}
	*core = source_core(l, d, src->proto);
	if (!*core)
		return 1;
	if (coresight_core_arch((*core)->type, &src->arch, &src->profile)) {
		add_warning(l, "%s: core type '%s' of %s is not one whose "
			    "architecture is known: source %s skipped",
			    (*core)->ini, (*core)->type, (*core)->name, d->name);
		return 1;
	}
	if (snap_regs(d, src, &missing)) {
		add_warning(l, "%s: %s source %s lacks register %s: skipped",
			    d->ini, cs_proto_name(src->proto), d->name, missing);
		return 1;
	}
	src->cpu = core_number((*core)->name);
	return 0;
}

/* ---- queues ------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct cssnap_pair *)a)->a,
		      ((const struct cssnap_pair *)b)->a);
}

static int cmp_queue_id(const void *a, const void *b)
{
	const struct snap_queue *x = a, *y = b;

	return (int)x->src.trace_id - (int)y->src.trace_id;
}

/* Appends a queue for src of buffer bi and the dumps of its core.
 * Returns 0 or PTD_ERR_NOMEM. */
static int add_queue(struct snap_load *l, size_t bi,
		     const struct cs_source *src,
		     const struct cssnap_device *core)
{
	const struct cssnap_buffer *buf = &l->s->buf[bi];
	struct snap_queue *q;

	if (util_grow((void **)&l->q, &l->qcap, l->nq + 1, sizeof(*l->q)))
		return PTD_ERR_NOMEM;
	q = &l->q[l->nq++];
	q->src = *src;
	q->buf = bi;
	q->formatted = strcasecmp(buf->format, "source_data") != 0;
	q->frame_syncs = !strcasecmp(buf->format, "dstream_coresight");
	for (size_t k = 0; k < core->ndumps; k++) {
		if (util_grow((void **)&l->refs, &l->refcap, l->nrefs + 1,
			      sizeof(*l->refs)))
			return PTD_ERR_NOMEM;
		l->refs[l->nrefs].core = core;
		l->refs[l->nrefs++].d = &core->dumps[k];
	}
	return 0;
}

/* Adds the queue of source name in buffer bi, whose queues start at
 * first_q, unless it cannot be decoded from there (warned).  Returns 0 or
 * PTD_ERR_NOMEM. */
static int add_source(struct snap_load *l, size_t bi, const char *name,
		      size_t first_q)
{
	const struct cssnap_buffer *buf = &l->s->buf[bi];
	const struct cssnap_device *d = cssnap_device(l->s, name), *core;
	struct cs_source src;
	int dup = 0;

	if (!d) {
		add_warning(l, "trace.ini: source %s of buffer %s is not in the "
			    "device list: skipped", name, buf->name);
		return 0;
	}
	if (source_config(l, d, &src, &core))
		return 0;
	for (size_t j = first_q; j < l->nq; j++)
		dup |= l->q[j].src.trace_id == src.trace_id;
	if (dup) {
		add_warning(l, "%s: trace ID %#x of %s is used by another source "
			    "of buffer %s: skipped", d->ini, src.trace_id, d->name,
			    buf->name);
		return 0;
	}
	if (!strcasecmp(buf->format, "source_data") && l->nq > first_q) {
		add_warning(l, "trace.ini: buffer %s is unformatted (source_data) "
			    "and holds one source's trace: %s is not decoded "
			    "from it", buf->name, d->name);
		return 0;
	}
	return add_queue(l, bi, &src, core);
}

/* Builds the queues of trace buffer bi. */
static int snap_buffer(struct snap_load *l, size_t bi, char *err,
		       size_t errlen)
{
	const struct cssnap *s = l->s;
	const struct cssnap_buffer *buf = &s->buf[bi];
	struct cssnap_pair *srcs;
	size_t nsrcs = 0, first_q = l->nq;
	int rc = 0;

	if (strcasecmp(buf->format, "coresight") &&
	    strcasecmp(buf->format, "source_data") &&
	    strcasecmp(buf->format, "dstream_coresight")) {
		add_warning(l, "trace.ini [%s]: format '%s' is unknown (coresight, "
			    "source_data and dstream_coresight are): buffer %s "
			    "skipped", buf->id, buf->format, buf->name);
		return 0;
	}
	srcs = calloc(s->nsrc_buf + 1, sizeof(*srcs));
	if (!srcs)
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < s->nsrc_buf; i++)
		if (!strcmp(s->src_buf[i].b, buf->name))
			srcs[nsrcs++] = s->src_buf[i];
	/* OpenCSD's reader walks sources by name; so do we, so that the same
	 * dump wins where dumps overlap and the same source is used for an
	 * unformatted buffer. */
	util_sort(srcs, nsrcs, sizeof(*srcs), cmp_name);
	for (size_t i = 0; i < nsrcs && !rc; i++)
		rc = add_source(l, bi, srcs[i].a, first_q);
	free(srcs);
	if (rc == PTD_ERR_NOMEM)
		util_errf(err, errlen, "out of memory");
	if (!rc && l->nq > first_q)
		util_sort(l->q + first_q, l->nq - first_q, sizeof(*l->q),
		      cmp_queue_id);
	return rc;
}

/* ---- memory dumps ------------------------------------------------------- */

/* Whether dump i overlaps an earlier one (warned unless it is the same). */
static int dump_overlaps(struct snap_load *l, size_t i)
{
	const struct cssnap_dump *d = l->refs[i].d;

	for (size_t j = 0; j < i; j++) {
		const struct cssnap_dump *o = l->refs[j].d;

		if (o->missing || !o->length || o->address >= d->address +
		    d->length || d->address >= o->address + o->length)
			continue;
		if (o->address != d->address || o->length != d->length ||
		    o->offset != d->offset || strcmp(o->path, d->path))
			add_warning(l, "%s: memory dump %s at %#llx overlaps %s "
				    "at %#llx: ignored", l->refs[i].core->ini,
				    d->file, (unsigned long long)d->address,
				    o->file, (unsigned long long)o->address);
		return 1;
	}
	return 0;
}

/* Adds the dumps of the cores traced to the image store. */
static int add_dumps(struct snap_load *l, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->nrefs; i++) {
		const struct cssnap_dump *d = l->refs[i].d;
		int dup = 0, rc;

		for (size_t j = 0; j < i && !dup; j++)
			dup = l->refs[j].d == d;
		if (dup)
			continue;
		if (d->missing) {
			add_warning(l, "%s: memory dump %s of core %s cannot be "
				    "read (%s): code in [%#llx, %#llx) will show "
				    "as not accessible", l->refs[i].core->ini,
				    d->path, l->refs[i].core->name, d->errmsg,
				    (unsigned long long)d->address,
				    (unsigned long long)(d->address + d->length));
			continue;
		}
		/* overlapping dumps: the first one wins, as in OpenCSD */
		if (!d->length || dump_overlaps(l, i))
			continue;
		rc = imgstore_add_file(l->st, IMGSTORE_KERNEL, d->address,
				       d->length, d->path, d->offset, 0,
				       IMGSTORE_FOREVER, d->file);
		if (rc < 0) {
			util_errf(err, errlen, "%s: cannot add memory dump %s to "
				  "the image store: %s", l->refs[i].core->ini,
				  d->path, ptd_strerror(rc));
			return rc;
		}
	}
	return 0;
}

/* ---- loading ------------------------------------------------------------ */

/* Maps trace buffer i and builds its queues. */
static int load_buffer(struct snap_load *l, size_t i, char *err,
		       size_t errlen)
{
	const struct cssnap_buffer *buf = &l->s->buf[i];
	int rc = util_map_file(buf->path, &l->maps[i], err, errlen);

	if (rc) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		util_errf(err, errlen, "trace buffer %s (trace.ini [%s] file=%s): "
			  "%s", buf->name, buf->id, buf->file, tmp);
		return rc;
	}
	return snap_buffer(l, i, err, errlen);
}

/* The error for a snapshot without a queue. */
static int no_queue_error(struct snap_load *l, const char *dir, char *err,
			  size_t errlen)
{
	if (l->nsw) {
		util_errf(err, errlen, "snapshot %s holds only STM/ITM trace "
			  "(software instrumentation), which has no instruction "
			  "flow", dir);
		return PTD_ERR_UNSUPPORTED;
	}
	util_errf(err, errlen, "snapshot %s has no instruction trace source that "
		  "can be decoded%s%s", dir, l->nwarn ? ": " : "",
		  l->nwarn ? l->warn[0] : "");
	return PTD_ERR_NO_TRACE;
}

/* Opens the backend on the queues; it owns the maps from then on. */
static int open_backend(struct snap_load *l, unsigned threads,
			struct backend **out, char *err, size_t errlen)
{
	struct coresight_chunk *chunks = calloc(l->nq, sizeof(*chunks));
	struct coresight_queue *queues = calloc(l->nq, sizeof(*queues));
	struct coresight_desc desc = {
		.queues = queues, .nqueues = l->nq,
		.maps = l->maps, .nmaps = l->s->nbuf,
		.warnings = (const char *const *)l->warn, .nwarnings = l->nwarn,
	};
	int rc = PTD_ERR_NOMEM;

	if (!chunks || !queues) {
		util_errf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < l->nq; i++) {
		const struct snap_queue *q = &l->q[i];

		chunks[i].data = l->maps[q->buf].data;
		chunks[i].size = l->maps[q->buf].size;
		chunks[i].time = IMGSTORE_TIME_UNKNOWN;
		chunks[i].pid = IMGSTORE_KERNEL;
		queues[i] = (struct coresight_queue){
			.chunks = &chunks[i], .nchunks = 1,
			.sources = &q->src, .nsources = 1, .cpu = q->src.cpu,
			.formatted = q->formatted, .frame_syncs = q->frame_syncs,
		};
	}
	rc = coresight_open(&desc, l->st, threads, out, err, errlen);
	if (!rc)
		memset(l->maps, 0, l->s->nbuf * sizeof(*l->maps));
out:
	free(chunks);
	free(queues);
	return rc;
}

static void load_free(struct snap_load *l)
{
	for (size_t i = 0; l->maps && i < l->s->nbuf; i++)
		util_unmap(&l->maps[i]);
	for (size_t i = 0; i < l->nwarn; i++)
		free(l->warn[i]);
	free(l->warn);
	free(l->maps);
	free(l->q);
	free(l->refs);
	cssnap_free(l->s);
}

int snapshot_open(const char *dir, struct imgstore *st, unsigned threads,
		  struct backend **out, char *err, size_t errlen)
{
	struct snap_load l = { .st = st };
	char why[256];
	int rc;

	*out = NULL;
	if (coresight_available(why, sizeof(why))) {
		util_errf(err, errlen, "%s: %s", dir, why);
		return PTD_ERR_UNSUPPORTED;
	}
	rc = cssnap_load(dir, &l.s, err, errlen);
	if (rc)
		return rc;
	l.maps = calloc(l.s->nbuf + 1, sizeof(*l.maps));
	if (!l.maps) {
		util_errf(err, errlen, "out of memory");
		rc = PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < l.s->nbuf && !rc; i++)
		rc = load_buffer(&l, i, err, errlen);
	if (!rc && !l.nq)
		rc = no_queue_error(&l, dir, err, errlen);
	if (!rc)
		rc = add_dumps(&l, err, errlen);
	if (!rc)
		rc = open_backend(&l, threads, out, err, errlen);
	load_free(&l);
	return rc;
}
