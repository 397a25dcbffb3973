/* SPDX-License-Identifier: MIT */
/*
 * perfdata - reads perf.data files through bounded mmap windows.
 *
 * Layout facts (Linux tools/perf util/header.c, session.c, evsel.c):
 * file mode starts with a 104-byte header {magic, size, attr_size,
 * attrs, data, event_types sections, 256-bit feature bitmap}; each attr
 * entry is a perf_event_attr followed by a {offset,size} section of u64 ids;
 * the feature sections' {offset,size} table follows the data section.  Pipe
 * mode has a 16-byte header and sends attrs, features and build ids as
 * records.  AUXTRACE and (pipe mode) TRACING_DATA records are followed by a
 * payload that header.size does not count.
 */
#include "perfdata.h"
#include "ptdecode.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PD_MAX_ATTR_SIZE 4096               /* far above any real attr */
#define PD_DEFAULT_WINDOW (32u << 20)
#define PD_MAX_WARNINGS 64
#define PD_NAME_MAX 4096                    /* sane bound for feature strings */

struct pd_auxmap {
	void *base;
	size_t len;
	struct pd_auxmap *prev, *next;
};

struct pd_id {
	uint64_t id;
	size_t attr;
};

struct perfdata {
	int fd;
	char *path;
	size_t page;
	struct perfdata_info info;
	size_t cap_attrs, cap_build_ids;

	/* data section as iterated: [data_start, data_end) */
	uint64_t data_start, data_end;
	uint64_t declared_end;   /* end the header claims (file mode) */
	int end_is_eof;          /* pipe mode or data.size==0: EOF ends data */

	/* record window */
	uint8_t *win;
	uint64_t win_off;
	size_t win_len, win_size;

	uint64_t pos;
	int final_err;           /* sticky error/end of iteration */
	int trunc_warned;
	char errmsg[256];

	struct pd_id *ids;
	size_t nids;

	char **warn;
	size_t nwarn, cap_warn;
	uint8_t unknown_warned[256 / 8];

	struct pd_auxmap *auxmaps;
};

/* ------------------------------------------------------------------ */
/* names                                                               */
/* ------------------------------------------------------------------ */

#define REC(name) [PD_RECORD_##name] = #name
static const char *const record_names[] = {
	REC(MMAP), REC(LOST), REC(COMM), REC(EXIT), REC(THROTTLE),
	REC(UNTHROTTLE), REC(FORK), REC(READ), REC(SAMPLE), REC(MMAP2),
	REC(AUX), REC(ITRACE_START), REC(LOST_SAMPLES), REC(SWITCH),
	REC(SWITCH_CPU_WIDE), REC(NAMESPACES), REC(KSYMBOL), REC(BPF_EVENT),
	REC(CGROUP), REC(TEXT_POKE), REC(AUX_OUTPUT_HW_ID), REC(CALLCHAIN_DEFERRED),
	REC(HEADER_ATTR),
	REC(HEADER_EVENT_TYPE), REC(HEADER_TRACING_DATA),
	REC(HEADER_BUILD_ID), REC(FINISHED_ROUND), REC(ID_INDEX),
	REC(AUXTRACE_INFO), REC(AUXTRACE), REC(AUXTRACE_ERROR),
	REC(THREAD_MAP), REC(CPU_MAP), REC(STAT_CONFIG), REC(STAT),
	REC(STAT_ROUND), REC(EVENT_UPDATE), REC(TIME_CONV),
	REC(HEADER_FEATURE), REC(COMPRESSED), REC(FINISHED_INIT),
};
#undef REC

const char *perfdata_record_name(uint32_t type)
{
	if (type < sizeof(record_names) / sizeof(record_names[0]))
		return record_names[type];
	return NULL;
}

#define FEAT(id, name) [PD_FEAT_##id] = name
static const char *const feature_names[] = {
	FEAT(TRACING_DATA, "tracing_data"), FEAT(BUILD_ID, "build_id"),
	FEAT(HOSTNAME, "hostname"), FEAT(OSRELEASE, "osrelease"),
	FEAT(VERSION, "version"), FEAT(ARCH, "arch"), FEAT(NRCPUS, "nrcpus"),
	FEAT(CPUDESC, "cpudesc"), FEAT(CPUID, "cpuid"),
	FEAT(TOTAL_MEM, "total_mem"), FEAT(CMDLINE, "cmdline"),
	FEAT(EVENT_DESC, "event_desc"), FEAT(CPU_TOPOLOGY, "cpu_topology"),
	FEAT(NUMA_TOPOLOGY, "numa_topology"),
	FEAT(BRANCH_STACK, "branch_stack"),
	FEAT(PMU_MAPPINGS, "pmu_mappings"), FEAT(GROUP_DESC, "group_desc"),
	FEAT(AUXTRACE, "auxtrace"), FEAT(STAT, "stat"), FEAT(CACHE, "cache"),
	FEAT(SAMPLE_TIME, "sample_time"), FEAT(MEM_TOPOLOGY, "mem_topology"),
	FEAT(CLOCKID, "clockid"), FEAT(DIR_FORMAT, "dir_format"),
	FEAT(BPF_PROG_INFO, "bpf_prog_info"), FEAT(BPF_BTF, "bpf_btf"),
	FEAT(COMPRESSED, "compressed"), FEAT(CPU_PMU_CAPS, "cpu_pmu_caps"),
	FEAT(CLOCK_DATA, "clock_data"),
	FEAT(HYBRID_TOPOLOGY, "hybrid_topology"), FEAT(PMU_CAPS, "pmu_caps"),
};
#undef FEAT

const char *perfdata_feature_name(unsigned feat)
{
	if (feat < sizeof(feature_names) / sizeof(feature_names[0]))
		return feature_names[feat];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* warnings and errors                                                 */
/* ------------------------------------------------------------------ */

static void pd_warn(struct perfdata *pd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void pd_warn(struct perfdata *pd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	char *s;

	if (pd->nwarn > PD_MAX_WARNINGS)
		return;
	if (pd->nwarn == PD_MAX_WARNINGS)
		snprintf(buf, sizeof(buf), "further warnings suppressed");
	else {
		va_start(ap, fmt);
		vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
	}
	/* +2: the new entry and the NULL terminator */
	if (util_grow((void **)&pd->warn, &pd->cap_warn, pd->nwarn + 2,
		      sizeof(*pd->warn)) < 0)
		return;
	s = strdup(buf);
	if (!s)
		return;
	pd->warn[pd->nwarn++] = s;
	pd->warn[pd->nwarn] = NULL;
}

int perfdata_truncated(const struct perfdata *pd)
{
	return pd ? pd->trunc_warned != 0 : 0;
}

const char *const *perfdata_warnings(const struct perfdata *pd)
{
	static const char *const none[] = { NULL };

	if (!pd || !pd->warn)
		return none;
	return (const char *const *)pd->warn;
}

const char *perfdata_errmsg(const struct perfdata *pd)
{
	return pd ? pd->errmsg : "";
}

static int pd_fail(struct perfdata *pd, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int pd_fail(struct perfdata *pd, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pd->errmsg, sizeof(pd->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

/* ------------------------------------------------------------------ */
/* mapping                                                             */
/* ------------------------------------------------------------------ */

/* Returns a pointer to [off, off+len) through the window, remapping it so
 * the range is contiguous.  The caller has checked the range against the
 * file size.  Earlier pointers become invalid. */
static const uint8_t *pd_get(struct perfdata *pd, uint64_t off, uint64_t len)
{
	uint64_t aoff, want, file_size = pd->info.file_size;
	void *p;

	if (len == 0)
		return (const uint8_t *)"";
	if (pd->win && off >= pd->win_off &&
	    off - pd->win_off + len <= pd->win_len)
		return pd->win + (off - pd->win_off);
	if (pd->win)
		munmap(pd->win, pd->win_len);
	pd->win = NULL;
	pd->win_len = 0;
	aoff = off & ~(uint64_t)(pd->page - 1);
	want = off - aoff + len;
	if (want < pd->win_size)
		want = pd->win_size;
	if (want > file_size - aoff)
		want = file_size - aoff;
	if (want == 0 || want > SIZE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, (size_t)want, PROT_READ, MAP_PRIVATE, pd->fd, (off_t)aoff);
	if (p == MAP_FAILED)
		return NULL;
	pd->win = p;
	pd->win_off = aoff;
	pd->win_len = (size_t)want;
	return pd->win + (off - aoff);
}

void perfdata_release_window(struct perfdata *pd)
{
	if (!pd || !pd->win)
		return;
	munmap(pd->win, pd->win_len);
	pd->win = NULL;
	pd->win_len = 0;
}

void perfdata_set_window(struct perfdata *pd, size_t bytes)
{
	if (!pd)
		return;
	pd->win_size = bytes < pd->page ? pd->page : bytes;
}

static int in_file(const struct perfdata *pd, uint64_t off, uint64_t size)
{
	return off <= pd->info.file_size && size <= pd->info.file_size - off;
}

int perfdata_aux_map(struct perfdata *pd, uint64_t file_offset, uint64_t size,
		     const uint8_t **data, void **cookie)
{
	struct pd_auxmap *m;
	uint64_t aoff, len;
	void *p;

	*data = NULL;
	*cookie = NULL;
	if (!in_file(pd, file_offset, size))
		return pd_fail(pd, PTD_ERR_CORRUPT,
			       "%s: range %#llx+%#llx runs past the end of the file (%llu bytes)",
			       pd->path, (unsigned long long)file_offset,
			       (unsigned long long)size,
			       (unsigned long long)pd->info.file_size);
	if (size == 0) {
		*data = (const uint8_t *)"";
		return 0;
	}
	aoff = file_offset & ~(uint64_t)(pd->page - 1);
	len = file_offset - aoff + size;
	if (len > SIZE_MAX)
		return pd_fail(pd, PTD_ERR_NOMEM, "%s: range too large to map", pd->path);
	m = calloc(1, sizeof(*m));
	if (!m)
		return pd_fail(pd, PTD_ERR_NOMEM, "out of memory");
	p = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, pd->fd, (off_t)aoff);
	if (p == MAP_FAILED) {
		free(m);
		return pd_fail(pd, PTD_ERR_IO, "cannot map %s at %#llx: %s", pd->path,
			       (unsigned long long)file_offset, strerror(errno));
	}
	m->base = p;
	m->len = (size_t)len;
	m->next = pd->auxmaps;
	if (m->next)
		m->next->prev = m;
	pd->auxmaps = m;
	*data = (const uint8_t *)p + (file_offset - aoff);
	*cookie = m;
	return 0;
}

void perfdata_aux_unmap(struct perfdata *pd, void *cookie)
{
	struct pd_auxmap *m = cookie;

	if (!pd || !m)
		return;
	if (m->prev)
		m->prev->next = m->next;
	else
		pd->auxmaps = m->next;
	if (m->next)
		m->next->prev = m->prev;
	munmap(m->base, m->len);
	free(m);
}

/* ------------------------------------------------------------------ */
/* attrs and ids                                                       */
/* ------------------------------------------------------------------ */

/* Parses a perf_event_attr of avail bytes (its own size field may say more
 * or less than we know; fields past what is present stay 0). */
static int parse_attr(const uint8_t *p, size_t avail, struct perfdata_attr *a)
{
	uint32_t sz = util_le32(p + PD_ATTR_OFF_SIZE);
	size_t n;

	memset(a, 0, sizeof(*a));
	if (sz == 0)
		sz = PD_ATTR_SIZE_VER0;
	if (sz < PD_ATTR_SIZE_VER0)
		return -1;
	n = sz < avail ? sz : avail;
	if (n < PD_ATTR_SIZE_VER0)
		return -1;
	a->type = util_le32(p + PD_ATTR_OFF_TYPE);
	a->size = sz;
	a->config = util_le64(p + PD_ATTR_OFF_CONFIG);
	a->sample_period = util_le64(p + PD_ATTR_OFF_SAMPLE_PERIOD);
	a->sample_type = util_le64(p + PD_ATTR_OFF_SAMPLE_TYPE);
	a->read_format = util_le64(p + PD_ATTR_OFF_READ_FORMAT);
	a->flags = util_le64(p + PD_ATTR_OFF_FLAGS);
	a->sample_id_all = !!(a->flags & PD_ATTR_FLAG_SAMPLE_ID_ALL);
	a->use_clockid = !!(a->flags & PD_ATTR_FLAG_USE_CLOCKID);
	if (n >= PD_ATTR_OFF_CONFIG2 + 8) {
		a->config1 = util_le64(p + PD_ATTR_OFF_CONFIG1);
		a->config2 = util_le64(p + PD_ATTR_OFF_CONFIG2);
	}
	if (n >= PD_ATTR_OFF_BRANCH_SAMPLE_TYPE + 8)
		a->branch_sample_type = util_le64(p + PD_ATTR_OFF_BRANCH_SAMPLE_TYPE);
	if (n >= PD_ATTR_OFF_CLOCKID + 4)
		a->clockid = (int32_t)util_le32(p + PD_ATTR_OFF_CLOCKID);
	return 0;
}

static int add_attr(struct perfdata *pd, const struct perfdata_attr *a,
		    const uint8_t *ids, size_t nids)
{
	struct perfdata_attr *dst;
	size_t i;

	if (util_grow((void **)&pd->info.attrs, &pd->cap_attrs,
		      pd->info.nattrs + 1, sizeof(*pd->info.attrs)) < 0)
		return PTD_ERR_NOMEM;
	dst = &pd->info.attrs[pd->info.nattrs];
	*dst = *a;
	dst->ids = NULL;
	dst->nids = 0;
	if (nids) {
		dst->ids = malloc(nids * sizeof(uint64_t));
		if (!dst->ids)
			return PTD_ERR_NOMEM;
		for (i = 0; i < nids; i++)
			dst->ids[i] = util_le64(ids + 8 * i);
		dst->nids = nids;
	}
	pd->info.nattrs++;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct pd_id *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->attr < y->attr ? -1 : x->attr > y->attr;
}

static int build_id_table(struct perfdata *pd)
{
	size_t i, j, n = 0;

	for (i = 0; i < pd->info.nattrs; i++)
		n += pd->info.attrs[i].nids;
	if (!n)
		return 0;
	pd->ids = malloc(n * sizeof(*pd->ids));
	if (!pd->ids)
		return PTD_ERR_NOMEM;
	for (i = 0; i < pd->info.nattrs; i++)
		for (j = 0; j < pd->info.attrs[i].nids; j++) {
			pd->ids[pd->nids].id = pd->info.attrs[i].ids[j];
			pd->ids[pd->nids++].attr = i;
		}
	util_sort(pd->ids, pd->nids, sizeof(*pd->ids), cmp_id);
	return 0;
}

static const struct perfdata_attr *attr_by_id(const struct perfdata *pd,
					      uint64_t id)
{
	size_t lo = 0, hi = pd->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < pd->nids && pd->ids[lo].id == id)
		return &pd->info.attrs[pd->ids[lo].attr];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* features                                                            */
/* ------------------------------------------------------------------ */

/* perf's do_write_string: u32 length (padding included), then the
 * NUL-padded string.  Returns a malloc'ed copy, or NULL. */
static char *get_string(const uint8_t **p, size_t *left)
{
	uint32_t len;
	char *s;

	if (*left < 4)
		return NULL;
	len = util_le32(*p);
	if (len > *left - 4)
		return NULL;
	s = strndup((const char *)*p + 4, len);
	*p += 4 + (size_t)len;
	*left -= 4 + (size_t)len;
	return s;
}

static int add_build_id(struct perfdata *pd, const uint8_t *p, size_t size)
{
	struct perfdata_build_id *b;
	uint16_t misc = util_le16(p + 4);
	size_t namelen = size - 36;

	if (util_grow((void **)&pd->info.build_ids, &pd->cap_build_ids,
		      pd->info.nbuild_ids + 1, sizeof(*pd->info.build_ids)) < 0)
		return PTD_ERR_NOMEM;
	b = &pd->info.build_ids[pd->info.nbuild_ids];
	memset(b, 0, sizeof(*b));
	b->misc = misc;
	b->pid = (int32_t)util_le32(p + 8);
	memcpy(b->id, p + 12, 20);
	b->size = 20;
	if (misc & PD_MISC_BUILD_ID_SIZE)
		b->size = p[32] <= 20 ? p[32] : 20;
	b->filename = strndup((const char *)p + 36, namelen);
	if (!b->filename)
		return PTD_ERR_NOMEM;
	pd->info.nbuild_ids++;
	return 0;
}

/* HEADER_EVENT_DESC: u32 nr, u32 attr size, then per event the attr, u32
 * nr_ids, the name (a perf string) and the ids.  Names the attrs, in the
 * attr section's order. */
static int parse_event_desc(struct perfdata *pd, const uint8_t *p, size_t len)
{
	uint32_t nr, asz;

	if (len < 8)
		return -1;
	nr = util_le32(p);
	asz = util_le32(p + 4);
	p += 8;
	len -= 8;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nids;
		char *name;

		if (len < (size_t)asz + 4)
			return -1;
		nids = util_le32(p + asz);
		p += asz + 4;
		len -= asz + 4;
		if (!(name = get_string(&p, &len)) || nids > len / 8) {
			free(name);
			return -1;
		}
		p += 8 * (size_t)nids;
		len -= 8 * (size_t)nids;
		if (i < pd->info.nattrs && !pd->info.attrs[i].name)
			pd->info.attrs[i].name = name;
		else
			free(name);
	}
	return 0;
}

/* Parses one feature's contents.  Returns 0, or -1 when malformed (the
 * caller warns). */
static int parse_feature(struct perfdata *pd, unsigned feat, const uint8_t *p,
			 size_t len)
{
	struct perfdata_info *in = &pd->info;
	char **str = NULL;
	size_t i;

	switch (feat) {
	case PD_FEAT_HOSTNAME: str = &in->hostname; break;
	case PD_FEAT_OSRELEASE: str = &in->osrelease; break;
	case PD_FEAT_VERSION: str = &in->perf_version; break;
	case PD_FEAT_ARCH: str = &in->arch; break;
	case PD_FEAT_CPUDESC: str = &in->cpudesc; break;
	case PD_FEAT_CPUID: str = &in->cpuid; break;
	case PD_FEAT_BUILD_ID:
		while (len) {
			uint16_t sz;

			if (len < 8)
				return -1;
			sz = util_le16(p + 6);
			if (sz < 36 || sz > len)
				return -1;
			if (add_build_id(pd, p, sz) < 0)
				return -1;
			p += sz;
			len -= sz;
		}
		return 0;
	case PD_FEAT_NRCPUS:
		if (len < 8)
			return -1;
		in->nr_cpus_avail = util_le32(p);
		in->nr_cpus_online = util_le32(p + 4);
		return 0;
	case PD_FEAT_CMDLINE: {
		uint32_t nr;

		if (len < 4)
			return -1;
		nr = util_le32(p);
		p += 4;
		len -= 4;
		if (nr > len / 4)   /* each string takes at least 4 bytes */
			return -1;
		for (i = 0; i < in->ncmdline; i++)
			free(in->cmdline[i]);
		free(in->cmdline);
		in->ncmdline = 0;
		in->cmdline = calloc(nr ? nr : 1, sizeof(char *));
		if (!in->cmdline)
			return -1;
		for (i = 0; i < nr; i++) {
			in->cmdline[i] = get_string(&p, &len);
			if (!in->cmdline[i])
				return -1;
			in->ncmdline++;
		}
		return 0;
	}
	case PD_FEAT_AUXTRACE: {
		uint64_t nr;

		/* perf: u64 nr, then nr {file_offset, size}; simpleperf writes
		 * the entries without the count (the sizes tell them apart) */
		if (len % 16 == 0) {
			nr = len / 16;
		} else {
			if (len < 8)
				return -1;
			nr = util_le64(p);
			p += 8;
			len -= 8;
			if (nr > len / 16)
				return -1;
		}
		free(in->aux_index);
		in->naux_index = 0;
		in->aux_index = calloc(nr ? nr : 1, sizeof(*in->aux_index));
		if (!in->aux_index)
			return -1;
		for (i = 0; i < nr; i++) {
			in->aux_index[i].file_offset = util_le64(p + 16 * i);
			in->aux_index[i].size = util_le64(p + 8 + 16 * i);
		}
		in->naux_index = nr;
		return 0;
	}
	case PD_FEAT_EVENT_DESC:
		return parse_event_desc(pd, p, len);
	case PD_FEAT_CLOCKID:
		if (len < 8)
			return -1;
		in->clockid_res_ns = util_le64(p);
		return 0;
	case PD_FEAT_DIR_FORMAT:
		if (len < 8)
			return -1;
		in->dir_format = util_le64(p);
		return 0;
	case PD_FEAT_CLOCK_DATA:
		if (len < 24 || util_le32(p) != 1)
			return -1;
		in->clock_data_clockid = util_le32(p + 4);
		in->clock_data_wall_ns = util_le64(p + 8);
		in->clock_data_clockid_ns = util_le64(p + 16);
		in->clock_data_valid = 1;
		return 0;
	default:
		return 0;   /* not needed by the decoder */
	}
	free(*str);
	*str = get_string(&p, &len);
	return *str ? 0 : -1;
}

static void set_feature_bit(struct perfdata_info *in, unsigned feat)
{
	if (feat < 256)
		in->features[feat / 64] |= 1ull << (feat % 64);
}

static int read_file_features(struct perfdata *pd)
{
	struct perfdata_info *in = &pd->info;
	uint64_t table, nsec = 0;
	unsigned feat;
	size_t sec = 0;

	for (feat = 0; feat < 256; feat++)
		nsec += (in->features[feat / 64] >> (feat % 64)) & 1;
	if (!nsec)
		return 0;
	table = pd->declared_end;
	if (!in_file(pd, table, nsec * 16)) {
		pd_warn(pd, "%s: feature section table at offset %llu runs past the end of the file; features ignored",
			pd->path, (unsigned long long)table);
		return 0;
	}
	for (feat = 0; feat < 256; feat++) {
		const uint8_t *p;
		uint64_t off, size;

		if (!((in->features[feat / 64] >> (feat % 64)) & 1))
			continue;
		p = pd_get(pd, table + 16 * sec++, 16);
		if (!p)
			return pd_fail(pd, PTD_ERR_IO, "cannot map %s: %s", pd->path,
				       strerror(errno));
		off = util_le64(p);
		size = util_le64(p + 8);
		if (!in_file(pd, off, size)) {
			pd_warn(pd, "%s: feature %s section at offset %llu size %llu runs past the end of the file; ignored",
				pd->path, perfdata_feature_name(feat) ?
				perfdata_feature_name(feat) : "?",
				(unsigned long long)off, (unsigned long long)size);
			continue;
		}
		p = pd_get(pd, off, size);
		if (!p)
			return pd_fail(pd, PTD_ERR_IO, "cannot map %s: %s", pd->path,
				       strerror(errno));
		if (parse_feature(pd, feat, p, (size_t)size) < 0)
			pd_warn(pd, "%s: feature %s at offset %llu is malformed; ignored",
				pd->path, perfdata_feature_name(feat) ?
				perfdata_feature_name(feat) : "?",
				(unsigned long long)off);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* record framing                                                      */
/* ------------------------------------------------------------------ */

enum { RD_OK = 0, RD_END = 1, RD_TRUNC = 2, RD_CORRUPT = 3, RD_IO = 4 };

/* Reads the record at pd->pos into rec (header, raw, AUXTRACE fields) and
 * sets *next to the offset after it (and after its payload).  Does not warn:
 * on RD_TRUNC / RD_CORRUPT it writes what happened into msg. */
static int frame_record(struct perfdata *pd, struct perfdata_record *rec,
			uint64_t *next, char *msg, size_t msglen)
{
	uint64_t off = pd->pos, end = pd->data_end, fsz = pd->info.file_size;
	uint64_t need, payload = 0;
	const uint8_t *p;
	uint32_t type;
	uint16_t size;

	if (off >= end) {
		if (!pd->end_is_eof && pd->declared_end > fsz && off >= fsz) {
			util_errf(msg, msglen,
				  "%s truncated at offset %llu (the data section should end at %llu, file ends at %llu): read up to the last whole record",
				  pd->path, (unsigned long long)off,
				  (unsigned long long)pd->declared_end,
				  (unsigned long long)fsz);
			return RD_TRUNC;
		}
		return RD_END;
	}
	if (end - off < 8) {
		if (end == fsz && (pd->end_is_eof || pd->declared_end > fsz)) {
			util_errf(msg, msglen,
				  "%s truncated at offset %llu (record header needs 8 bytes, file ends at %llu): read up to the last whole record",
				  pd->path, (unsigned long long)off, (unsigned long long)fsz);
			return RD_TRUNC;
		}
		util_errf(msg, msglen,
			  "corrupt record at offset %llu: %llu bytes left in the data section, less than a record header",
			  (unsigned long long)off, (unsigned long long)(end - off));
		return RD_CORRUPT;
	}
	p = pd_get(pd, off, 8);
	if (!p)
		return RD_IO;
	type = util_le32(p);
	size = util_le16(p + 6);
	if (size < 8) {
		util_errf(msg, msglen,
			  "corrupt record at offset %llu: type %u, size %u is less than the 8-byte header",
			  (unsigned long long)off, type, size);
		return RD_CORRUPT;
	}
	need = size;
	if ((type == PD_RECORD_AUXTRACE && size >= 16) ||
	    (type == PD_RECORD_HEADER_TRACING_DATA && size >= 12)) {
		if (size > end - off)
			goto overrun;
		p = pd_get(pd, off, size);
		if (!p)
			return RD_IO;
		payload = type == PD_RECORD_AUXTRACE ? util_le64(p + 8)
						     : util_le32(p + 8);
		if (payload > UINT64_MAX - size) {
			util_errf(msg, msglen,
				  "corrupt AUXTRACE record at offset %llu: payload size %llu",
				  (unsigned long long)off, (unsigned long long)payload);
			return RD_CORRUPT;
		}
		need = size + payload;
	}
	if (need > end - off)
		goto overrun;
	p = pd_get(pd, off, size);
	if (!p)
		return RD_IO;
	memset(rec, 0, sizeof(*rec));
	rec->type = type;
	rec->misc = util_le16(p + 4);
	rec->size = size;
	rec->file_offset = off;
	rec->raw = p;
	if (type == PD_RECORD_AUXTRACE) {
		if (size < PD_AUXTRACE_RECORD_SIZE) {
			util_errf(msg, msglen,
				  "corrupt AUXTRACE record at offset %llu: size %u is less than %d",
				  (unsigned long long)off, size, PD_AUXTRACE_RECORD_SIZE);
			return RD_CORRUPT;
		}
		rec->aux_size = payload;
		rec->aux_offset = util_le64(p + 16);
		rec->aux_reference = util_le64(p + 24);
		rec->aux_idx = util_le32(p + 32);
		rec->aux_tid = util_le32(p + 36);
		rec->aux_cpu = util_le32(p + 40);
		rec->aux_file_offset = off + size;
	}
	*next = off + need;
	return RD_OK;

overrun:
	if (end == fsz && (pd->end_is_eof || pd->declared_end > fsz)) {
		util_errf(msg, msglen,
			  "%s truncated at offset %llu (record of type %u needs %llu bytes, file ends at %llu): read up to the last whole record",
			  pd->path, (unsigned long long)off, type, (unsigned long long)need,
			  (unsigned long long)fsz);
		return RD_TRUNC;
	}
	util_errf(msg, msglen,
		  "corrupt record at offset %llu: type %u needs %llu bytes, past the end of the data section at %llu",
		  (unsigned long long)off, type, (unsigned long long)need,
		  (unsigned long long)end);
	return RD_CORRUPT;
}

/* ------------------------------------------------------------------ */
/* sample ids                                                          */
/* ------------------------------------------------------------------ */

/* perf's id_pos: index (in u64s) of the id in a SAMPLE body, or -1. */
static int sample_id_pos(uint64_t st)
{
	int i = 0;

	if (st & PD_SAMPLE_IDENTIFIER)
		return 0;
	if (!(st & PD_SAMPLE_ID))
		return -1;
	i += !!(st & PD_SAMPLE_IP);
	i += !!(st & PD_SAMPLE_TID);
	i += !!(st & PD_SAMPLE_TIME);
	i += !!(st & PD_SAMPLE_ADDR);
	return i;
}

/* perf's is_pos: position of the id counted back from the record end. */
static int trailer_id_pos(uint64_t st)
{
	int i = 1;

	if (st & PD_SAMPLE_IDENTIFIER)
		return 1;
	if (!(st & PD_SAMPLE_ID))
		return -1;
	i += !!(st & PD_SAMPLE_CPU);
	i += !!(st & PD_SAMPLE_STREAM_ID);
	return i;
}

static size_t trailer_size(uint64_t st)
{
	return 8 * (!!(st & PD_SAMPLE_TID) + !!(st & PD_SAMPLE_TIME) +
		    !!(st & PD_SAMPLE_ID) + !!(st & PD_SAMPLE_STREAM_ID) +
		    !!(st & PD_SAMPLE_CPU) + !!(st & PD_SAMPLE_IDENTIFIER));
}

static void parse_trailer(const uint8_t *p, size_t len, uint64_t st,
			  struct perfdata_sample_id *sid)
{
	size_t n = trailer_size(st);

	if (n > len)
		return;
	p += len - n;
	if (st & PD_SAMPLE_TID) {
		sid->pid = util_le32(p);
		sid->tid = util_le32(p + 4);
		sid->has_tid = 1;
		p += 8;
	}
	if (st & PD_SAMPLE_TIME) {
		sid->time = util_le64(p);
		sid->has_time = 1;
		p += 8;
	}
	if (st & PD_SAMPLE_ID) {
		sid->id = util_le64(p);
		sid->has_id = 1;
		p += 8;
	}
	if (st & PD_SAMPLE_STREAM_ID) {
		sid->stream_id = util_le64(p);
		sid->has_stream_id = 1;
		p += 8;
	}
	if (st & PD_SAMPLE_CPU) {
		sid->cpu = util_le32(p);
		sid->has_cpu = 1;
		p += 8;
	}
	if (st & PD_SAMPLE_IDENTIFIER) {
		sid->id = util_le64(p);
		sid->has_id = 1;
	}
}

/* The fixed fields at the start of a SAMPLE, up to CPU. */
static void parse_sample_head(const uint8_t *p, size_t len, uint64_t st,
			      struct perfdata_sample_id *sid)
{
	size_t o = 0;

#define NEED(n) do { if (len - o < (n)) return; } while (0)
	if (st & PD_SAMPLE_IDENTIFIER) {
		NEED(8);
		sid->id = util_le64(p + o);
		sid->has_id = 1;
		o += 8;
	}
	if (st & PD_SAMPLE_IP) {
		NEED(8);
		o += 8;
	}
	if (st & PD_SAMPLE_TID) {
		NEED(8);
		sid->pid = util_le32(p + o);
		sid->tid = util_le32(p + o + 4);
		sid->has_tid = 1;
		o += 8;
	}
	if (st & PD_SAMPLE_TIME) {
		NEED(8);
		sid->time = util_le64(p + o);
		sid->has_time = 1;
		o += 8;
	}
	if (st & PD_SAMPLE_ADDR) {
		NEED(8);
		o += 8;
	}
	if (st & PD_SAMPLE_ID) {
		NEED(8);
		sid->id = util_le64(p + o);
		sid->has_id = 1;
		o += 8;
	}
	if (st & PD_SAMPLE_STREAM_ID) {
		NEED(8);
		sid->stream_id = util_le64(p + o);
		sid->has_stream_id = 1;
		o += 8;
	}
	if (st & PD_SAMPLE_CPU) {
		NEED(8);
		sid->cpu = util_le32(p + o);
		sid->has_cpu = 1;
	}
#undef NEED
}

/* Finds the record's attr and fills rec->sid. */
static void resolve_attr(struct perfdata *pd, struct perfdata_record *rec)
{
	const struct perfdata_attr *first, *a = NULL;
	const uint8_t *body = rec->raw + 8;
	size_t len = rec->size - 8;
	uint64_t st;
	int pos;

	if (!pd->info.nattrs || rec->type >= PD_RECORD_HEADER_ATTR ||
	    rec->type == 0)
		return;
	first = &pd->info.attrs[0];
	st = first->sample_type;
	if (pd->info.nattrs == 1) {
		a = first;
	} else if (rec->type == PD_RECORD_SAMPLE) {
		pos = sample_id_pos(st);
		if (pos >= 0 && (size_t)(pos + 1) * 8 <= len)
			a = attr_by_id(pd, util_le64(body + 8 * pos));
	} else if (first->sample_id_all) {
		pos = trailer_id_pos(st);
		if (pos > 0 && (size_t)pos * 8 <= len)
			a = attr_by_id(pd, util_le64(body + len - 8 * pos));
	}
	rec->attr = a;
	rec->layout_attr = a ? a : first;
	st = rec->layout_attr->sample_type;
	if (rec->type == PD_RECORD_SAMPLE)
		parse_sample_head(body, len, st, &rec->sid);
	else if (rec->layout_attr->sample_id_all)
		parse_trailer(body, len, st, &rec->sid);
}

/* ------------------------------------------------------------------ */
/* iteration                                                           */
/* ------------------------------------------------------------------ */

static int known_type(uint32_t type)
{
	return perfdata_record_name(type) != NULL;
}

int perfdata_next(struct perfdata *pd, struct perfdata_record *rec)
{
	char msg[400];
	uint64_t next;
	int r;

	if (pd->final_err)
		return pd->final_err;
	r = frame_record(pd, rec, &next, msg, sizeof(msg));
	switch (r) {
	case RD_OK:
		break;
	case RD_END:
		pd->final_err = PTD_ERR_END;
		return PTD_ERR_END;
	case RD_TRUNC:
		if (!pd->trunc_warned)
			pd_warn(pd, "%s", msg);
		pd->trunc_warned = 1;
		pd->final_err = PTD_ERR_END;
		return PTD_ERR_END;
	case RD_CORRUPT:
		pd->final_err = pd_fail(pd, PTD_ERR_CORRUPT, "%s: %s", pd->path, msg);
		return pd->final_err;
	default:
		pd->final_err = pd_fail(pd, PTD_ERR_IO, "cannot map %s at offset %llu: %s",
					pd->path, (unsigned long long)pd->pos,
					strerror(errno));
		return pd->final_err;
	}
	pd->pos = next;
	if (rec->type == PD_RECORD_COMPRESSED)
		return pd_fail(pd, PTD_ERR_UNSUPPORTED,
			       "%s: zstd-compressed record at offset %llu: compressed perf.data (perf record -z) is not supported yet; record without -z",
			       pd->path, (unsigned long long)rec->file_offset);
	if (!known_type(rec->type) && rec->type < 256 &&
	    !(pd->unknown_warned[rec->type / 8] & (1u << (rec->type % 8)))) {
		pd->unknown_warned[rec->type / 8] |= 1u << (rec->type % 8);
		pd_warn(pd, "%s: unknown record type %u (first at offset %llu) skipped",
			pd->path, rec->type, (unsigned long long)rec->file_offset);
	}
	resolve_attr(pd, rec);
	if (rec->type == PD_RECORD_TIME_CONV)
		perfdata_parse_time_conv(rec, &pd->info.time_conv);
	return 0;
}

int perfdata_rewind(struct perfdata *pd)
{
	pd->pos = pd->data_start;
	pd->final_err = 0;
	pd->errmsg[0] = 0;
	return 0;
}

int perfdata_seek(struct perfdata *pd, uint64_t file_offset)
{
	if (file_offset < pd->data_start || file_offset >= pd->data_end)
		return PTD_ERR_INVAL;
	pd->pos = file_offset;
	pd->final_err = 0;
	return 0;
}

/* Pipe mode: attrs, features and build ids come as records anywhere in the
 * stream; one pass at open collects them so info is complete. */
static int scan_pipe(struct perfdata *pd)
{
	struct perfdata_record rec;
	struct perfdata_attr a;
	char msg[400];
	uint64_t next;
	int r;

	pd->pos = pd->data_start;
	for (;;) {
		const uint8_t *body;
		size_t len;

		r = frame_record(pd, &rec, &next, msg, sizeof(msg));
		if (r == RD_IO)
			return pd_fail(pd, PTD_ERR_IO, "cannot map %s: %s", pd->path,
				       strerror(errno));
		if (r != RD_OK)
			break;      /* iteration reports it */
		pd->pos = next;
		body = rec.raw + 8;
		len = rec.size - 8;
		switch (rec.type) {
		case PD_RECORD_HEADER_ATTR: {
			uint32_t asz;

			if (len < PD_ATTR_SIZE_VER0)
				goto bad;
			asz = util_le32(body + 4);
			if (asz == 0)
				asz = PD_ATTR_SIZE_VER0;
			if (asz > len || parse_attr(body, asz, &a) < 0)
				goto bad;
			r = add_attr(pd, &a, body + asz, (len - asz) / 8);
			if (r < 0)
				return pd_fail(pd, r, "out of memory");
			break;
		}
		case PD_RECORD_HEADER_FEATURE: {
			uint64_t feat;

			if (len < 8)
				goto bad;
			feat = util_le64(body);
			if (feat >= 256)
				goto bad;
			if (len == 8)
				break;  /* perf's end-of-features marker */
			set_feature_bit(&pd->info, (unsigned)feat);
			if (parse_feature(pd, (unsigned)feat, body + 8, len - 8) < 0)
				pd_warn(pd, "%s: feature %s record at offset %llu is malformed; ignored",
					pd->path, perfdata_feature_name((unsigned)feat) ?
					perfdata_feature_name((unsigned)feat) : "?",
					(unsigned long long)rec.file_offset);
			break;
		}
		case PD_RECORD_HEADER_BUILD_ID:
			if (rec.size < 36)
				goto bad;
			if (add_build_id(pd, rec.raw, rec.size) < 0)
				return pd_fail(pd, PTD_ERR_NOMEM, "out of memory");
			break;
		case PD_RECORD_TIME_CONV:
			perfdata_parse_time_conv(&rec, &pd->info.time_conv);
			break;
		}
		continue;
bad:
		pd_warn(pd, "%s: malformed %s record at offset %llu ignored", pd->path,
			perfdata_record_name(rec.type),
			(unsigned long long)rec.file_offset);
	}
	pd->pos = pd->data_start;
	return 0;
}

/* ------------------------------------------------------------------ */
/* open / close                                                        */
/* ------------------------------------------------------------------ */

static int read_file_header(struct perfdata *pd, char *err, size_t errlen)
{
	struct perfdata_info *in = &pd->info;
	uint64_t hsize = in->file_size, attr_size, attrs_off, attrs_size;
	uint64_t data_off, data_size, nattrs, i;
	const uint8_t *h, *p;
	int r;

	h = pd_get(pd, 0, PD_PIPE_HEADER_SIZE);
	if (!h)
		goto io;
	hsize = util_le64(h + PD_HEADER_OFF_SIZE);
	if (hsize != PD_FILE_HEADER_SIZE && hsize != PD_FILE_HEADER_V1_SIZE) {
		util_errf(err, errlen,
			  "%s: unsupported perf.data header size %llu (expected 16 for pipe mode or 104)",
			  pd->path, (unsigned long long)hsize);
		return PTD_ERR_FORMAT;
	}
	if (in->file_size < hsize) {
		util_errf(err, errlen,
			  "%s is truncated: %llu bytes, shorter than its %llu-byte perf.data header",
			  pd->path, (unsigned long long)in->file_size,
			  (unsigned long long)hsize);
		return PTD_ERR_TRUNCATED;
	}
	h = pd_get(pd, 0, hsize);
	if (!h)
		goto io;
	attr_size = util_le64(h + PD_HEADER_OFF_ATTR_SIZE);
	attrs_off = util_le64(h + PD_HEADER_OFF_ATTRS);
	attrs_size = util_le64(h + PD_HEADER_OFF_ATTRS + 8);
	data_off = util_le64(h + PD_HEADER_OFF_DATA);
	data_size = util_le64(h + PD_HEADER_OFF_DATA + 8);
	if (hsize == PD_FILE_HEADER_SIZE)
		for (i = 0; i < PD_FEAT_MAX / 64; i++)
			in->features[i] = util_le64(h + PD_HEADER_OFF_FEATURES + 8 * i);
	in->features[0] &= ~1ull;   /* HEADER_RESERVED */

	if (attr_size < PD_ATTR_SIZE_VER0 + PD_FILE_SECTION_SIZE ||
	    attr_size > PD_MAX_ATTR_SIZE) {
		util_errf(err, errlen,
			  "%s: corrupt header: attr_size %llu (a perf_event_attr plus ids section is 80..%u bytes)",
			  pd->path, (unsigned long long)attr_size, PD_MAX_ATTR_SIZE);
		return PTD_ERR_CORRUPT;
	}
	if (!in_file(pd, attrs_off, attrs_size)) {
		util_errf(err, errlen,
			  "%s: corrupt header: attrs section at offset %llu size %llu runs past the end of the file (%llu bytes)",
			  pd->path, (unsigned long long)attrs_off,
			  (unsigned long long)attrs_size,
			  (unsigned long long)in->file_size);
		return PTD_ERR_CORRUPT;
	}
	nattrs = attrs_size / attr_size;
	if (!nattrs) {
		util_errf(err, errlen, "%s: the header lists no event attributes (attrs size %llu)",
			  pd->path, (unsigned long long)attrs_size);
		return PTD_ERR_CORRUPT;
	}
	for (i = 0; i < nattrs; i++) {
		struct perfdata_attr a;
		uint64_t ids_off, ids_size, eoff = attrs_off + i * attr_size;

		p = pd_get(pd, eoff, attr_size);
		if (!p)
			goto io;
		if (parse_attr(p, attr_size - PD_FILE_SECTION_SIZE, &a) < 0) {
			util_errf(err, errlen, "%s: corrupt attr %llu at offset %llu: attr.size %u",
				  pd->path, (unsigned long long)i, (unsigned long long)eoff,
				  util_le32(p + PD_ATTR_OFF_SIZE));
			return PTD_ERR_CORRUPT;
		}
		ids_off = util_le64(p + attr_size - PD_FILE_SECTION_SIZE);
		ids_size = util_le64(p + attr_size - PD_FILE_SECTION_SIZE + 8);
		if (!in_file(pd, ids_off, ids_size)) {
			util_errf(err, errlen,
				  "%s: corrupt attr %llu: ids section at offset %llu size %llu runs past the end of the file",
				  pd->path, (unsigned long long)i,
				  (unsigned long long)ids_off, (unsigned long long)ids_size);
			return PTD_ERR_CORRUPT;
		}
		p = pd_get(pd, ids_off, ids_size);
		if (!p)
			goto io;
		r = add_attr(pd, &a, p, ids_size / 8);
		if (r < 0) {
			util_errf(err, errlen, "out of memory");
			return r;
		}
	}

	if (data_off < hsize || data_off > in->file_size) {
		util_errf(err, errlen,
			  "%s: corrupt header: data section offset %llu is outside the file (%llu bytes)",
			  pd->path, (unsigned long long)data_off,
			  (unsigned long long)in->file_size);
		return PTD_ERR_CORRUPT;
	}
	in->data_offset = pd->data_start = data_off;
	in->data_size = data_size;
	if (data_size == 0) {
		/* perf record killed before it wrote the final header */
		pd->end_is_eof = 1;
		pd->data_end = pd->declared_end = in->file_size;
		if (in->file_size > data_off)
			pd_warn(pd, "%s: the header says the data section is empty (perf record was not finalised?): reading records up to the end of the file",
				pd->path);
		return 0;
	}
	if (data_size > UINT64_MAX - data_off) {
		util_errf(err, errlen, "%s: corrupt header: data section size %llu",
			  pd->path, (unsigned long long)data_size);
		return PTD_ERR_CORRUPT;
	}
	pd->declared_end = data_off + data_size;
	if (pd->declared_end > in->file_size) {
		pd->data_end = in->file_size;
		pd_warn(pd, "%s: the data section should end at %llu but the file ends at %llu: reading the records present; features are missing",
			pd->path, (unsigned long long)pd->declared_end,
			(unsigned long long)in->file_size);
		return 0;
	}
	pd->data_end = pd->declared_end;
	r = read_file_features(pd);
	if (r < 0)
		util_errf(err, errlen, "%s", pd->errmsg);
	return r;
io:
	util_errf(err, errlen, "cannot map %s: %s", pd->path, strerror(errno));
	return PTD_ERR_IO;
}

/* A reader of the regular file path, its size known, nothing read yet.
 * Returns 0 or a negative enum ptd_error with a message in err (*out may
 * then need perfdata_close). */
static int pd_new(const char *path, struct perfdata **out, char *err,
		  size_t errlen)
{
	struct perfdata *pd;
	struct stat st;

	*out = pd = calloc(1, sizeof(*pd));
	if (pd)
		pd->fd = -1;
	if (!pd || !(pd->path = strdup(path))) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	pd->page = (size_t)sysconf(_SC_PAGESIZE);
	if (pd->page == 0 || (pd->page & (pd->page - 1)))
		pd->page = 4096;
	pd->win_size = PD_DEFAULT_WINDOW;
	pd->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pd->fd < 0) {
		util_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return PTD_ERR_IO;
	}
	if (fstat(pd->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		util_errf(err, errlen, "%s is not a regular file (save a piped perf.data to a file first)",
			  path);
		return PTD_ERR_IO;
	}
	pd->info.file_size = (uint64_t)st.st_size;
	return 0;
}

int perfdata_open_stream(const struct perfdata *hdr, const char *path,
			 struct perfdata **out, char *err, size_t errlen)
{
	struct perfdata *pd;
	int r = pd_new(path, &pd, err, errlen);

	for (size_t i = 0; !r && i < hdr->info.nattrs; i++) {
		const struct perfdata_attr *a = &hdr->info.attrs[i];
		uint8_t *ids = malloc(a->nids ? a->nids * 8 : 1);

		if (!ids) {
			r = PTD_ERR_NOMEM;
			break;
		}
		for (size_t k = 0; k < a->nids; k++)
			memcpy(ids + 8 * k, &a->ids[k], 8);  /* little-endian host */
		r = add_attr(pd, a, ids, a->nids);
		free(ids);
		if (!r)   /* the copy owns only its ids; names are the header's */
			pd->info.attrs[pd->info.nattrs - 1].name = NULL;
	}
	if (!r)
		r = build_id_table(pd);
	if (r == PTD_ERR_NOMEM)
		util_errf(err, errlen, "out of memory");
	if (r) {
		perfdata_close(pd);
		*out = NULL;
		return r;
	}
	/* records from the first byte to the end of the file */
	pd->end_is_eof = 1;
	pd->data_start = pd->pos = pd->info.data_offset = 0;
	pd->data_end = pd->declared_end = pd->info.data_size = pd->info.file_size;
	*out = pd;
	return 0;
}

int perfdata_open(const char *path, struct perfdata **out, char *err,
		  size_t errlen)
{
	struct perfdata *pd;
	uint8_t head[16];
	ssize_t n;
	uint64_t magic;
	int r;

	*out = NULL;
	r = pd_new(path, &pd, err, errlen);
	if (r)
		goto fail;
	n = pread(pd->fd, head, sizeof(head), 0);
	if (n < 0) {
		util_errf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		r = PTD_ERR_IO;
		goto fail;
	}
	if (n < 8) {
		if (n == 0 || !memcmp(head, "PERFILE2", (size_t)n)) {
			util_errf(err, errlen, "%s is truncated: %zd bytes, too short for a perf.data header",
				  path, n);
			r = PTD_ERR_TRUNCATED;
		} else {
			util_errf(err, errlen, "%s is not a perf.data file (%zd bytes, no PERFILE2 magic)",
				  path, n);
			r = PTD_ERR_FORMAT;
		}
		goto fail;
	}
	magic = util_le64(head);
	if (magic == PD_MAGIC2_SWAPPED) {
		util_errf(err, errlen, "%s is a big-endian perf.data file: reading byte-swapped perf.data is not supported (convert it on a big-endian machine with perf inject, or record on a little-endian one)",
			  path);
		r = PTD_ERR_UNSUPPORTED;
		goto fail;
	}
	if (!memcmp(head, "PERFFILE", 8)) {
		util_errf(err, errlen, "%s uses the old version 1 perf.data format (PERFFILE), which is not supported",
			  path);
		r = PTD_ERR_UNSUPPORTED;
		goto fail;
	}
	if (magic != PD_MAGIC2) {
		util_errf(err, errlen, "%s is not a perf.data file (magic %02x %02x %02x %02x %02x %02x %02x %02x, expected \"PERFILE2\")",
			  path, head[0], head[1], head[2], head[3], head[4], head[5],
			  head[6], head[7]);
		r = PTD_ERR_FORMAT;
		goto fail;
	}
	if (n < 16) {
		util_errf(err, errlen, "%s is truncated: %zd bytes, too short for a perf.data header",
			  path, n);
		r = PTD_ERR_TRUNCATED;
		goto fail;
	}
	if (util_le64(head + 8) == PD_PIPE_HEADER_SIZE) {
		pd->info.pipe_mode = 1;
		pd->end_is_eof = 1;
		pd->data_start = pd->info.data_offset = PD_PIPE_HEADER_SIZE;
		pd->data_end = pd->declared_end = pd->info.file_size;
		pd->info.data_size = pd->info.file_size - PD_PIPE_HEADER_SIZE;
		r = scan_pipe(pd);
		if (r < 0) {
			util_errf(err, errlen, "%s", pd->errmsg);
			goto fail;
		}
	} else {
		r = read_file_header(pd, err, errlen);
		if (r < 0)
			goto fail;
	}
	r = build_id_table(pd);
	if (r < 0) {
		util_errf(err, errlen, "out of memory");
		goto fail;
	}
	pd->pos = pd->data_start;
	pd->errmsg[0] = 0;
	*out = pd;
	return 0;
fail:
	perfdata_close(pd);
	return r;
}

void perfdata_close(struct perfdata *pd)
{
	struct perfdata_info *in;
	size_t i;

	if (!pd)
		return;
	in = &pd->info;
	while (pd->auxmaps)
		perfdata_aux_unmap(pd, pd->auxmaps);
	if (pd->win)
		munmap(pd->win, pd->win_len);
	if (pd->fd >= 0)
		close(pd->fd);
	for (i = 0; i < in->nattrs; i++) {
		free(in->attrs[i].ids);
		free(in->attrs[i].name);
	}
	free(in->attrs);
	for (i = 0; i < in->nbuild_ids; i++)
		free(in->build_ids[i].filename);
	free(in->build_ids);
	free(in->hostname);
	free(in->osrelease);
	free(in->perf_version);
	free(in->arch);
	free(in->cpudesc);
	free(in->cpuid);
	for (i = 0; i < in->ncmdline; i++)
		free(in->cmdline[i]);
	free(in->cmdline);
	free(in->aux_index);
	free(pd->ids);
	for (i = 0; i < pd->nwarn; i++)
		free(pd->warn[i]);
	free(pd->warn);
	free(pd->path);
	free(pd);
}

const struct perfdata_info *perfdata_get_info(const struct perfdata *pd)
{
	return &pd->info;
}

/* ------------------------------------------------------------------ */
/* record bodies                                                       */
/* ------------------------------------------------------------------ */

/* Body bytes of a record before its sample_id trailer. */
static size_t body_len(const struct perfdata_record *rec)
{
	size_t len = rec->size - 8;
	const struct perfdata_attr *a = rec->layout_attr;

	if (a && a->sample_id_all && rec->type < PD_RECORD_HEADER_ATTR &&
	    rec->type != PD_RECORD_SAMPLE) {
		size_t t = trailer_size(a->sample_type);

		if (t <= len)
			len -= t;
	}
	return len;
}

/* A NUL-terminated string at body offset off, ending before the sample_id
 * trailer (or, if a sloppy writer left no NUL there, before the record end). */
static const char *body_str(const struct perfdata_record *rec, size_t off)
{
	const char *s = (const char *)rec->raw + 8 + off;
	size_t len = body_len(rec);

	if (off >= len || !memchr(s, 0, len - off)) {
		len = rec->size - 8;
		if (off >= len || !memchr(s, 0, len - off))
			return NULL;
	}
	return s;
}

/* The fixed fields must fit in the body before the sample_id trailer. */
static int too_short(const struct perfdata_record *rec, size_t need)
{
	return rec->size < 8 || body_len(rec) < need;
}

int perfdata_parse_mmap(const struct perfdata_record *rec,
			struct perfdata_mmap *m)
{
	const uint8_t *b = rec->raw + 8;
	size_t fo;

	memset(m, 0, sizeof(*m));
	if (rec->type == PD_RECORD_MMAP) {
		fo = 32;
	} else if (rec->type == PD_RECORD_MMAP2) {
		fo = 64;
	} else {
		return PTD_ERR_INVAL;
	}
	if (too_short(rec, fo + 1))
		return PTD_ERR_CORRUPT;
	m->pid = util_le32(b);
	m->tid = util_le32(b + 4);
	m->addr = util_le64(b + 8);
	m->len = util_le64(b + 16);
	m->pgoff = util_le64(b + 24);
	if (rec->type == PD_RECORD_MMAP2) {
		if (rec->misc & PD_MISC_MMAP_BUILD_ID) {
			m->has_build_id = 1;
			m->build_id_size = b[32] <= 20 ? b[32] : 20;
			memcpy(m->build_id, b + 36, 20);
		} else {
			m->maj = util_le32(b + 32);
			m->min = util_le32(b + 36);
			m->ino = util_le64(b + 40);
			m->ino_generation = util_le64(b + 48);
		}
		m->prot = util_le32(b + 56);
		m->flags = util_le32(b + 60);
	}
	m->filename = body_str(rec, fo);
	return m->filename ? 0 : PTD_ERR_CORRUPT;
}

int perfdata_parse_comm(const struct perfdata_record *rec,
			struct perfdata_comm *c)
{
	memset(c, 0, sizeof(*c));
	if (rec->type != PD_RECORD_COMM)
		return PTD_ERR_INVAL;
	if (too_short(rec, 9))
		return PTD_ERR_CORRUPT;
	c->pid = util_le32(rec->raw + 8);
	c->tid = util_le32(rec->raw + 12);
	c->exec = !!(rec->misc & PD_MISC_COMM_EXEC);
	c->comm = body_str(rec, 8);
	return c->comm ? 0 : PTD_ERR_CORRUPT;
}

int perfdata_parse_task(const struct perfdata_record *rec,
			struct perfdata_task *t)
{
	const uint8_t *b = rec->raw + 8;

	memset(t, 0, sizeof(*t));
	if (rec->type != PD_RECORD_FORK && rec->type != PD_RECORD_EXIT)
		return PTD_ERR_INVAL;
	if (too_short(rec, 24))
		return PTD_ERR_CORRUPT;
	t->pid = util_le32(b);
	t->ppid = util_le32(b + 4);
	t->tid = util_le32(b + 8);
	t->ptid = util_le32(b + 12);
	t->time = util_le64(b + 16);
	return 0;
}

int perfdata_parse_switch(const struct perfdata_record *rec,
			  struct perfdata_switch *s)
{
	memset(s, 0, sizeof(*s));
	if (rec->type != PD_RECORD_SWITCH && rec->type != PD_RECORD_SWITCH_CPU_WIDE)
		return PTD_ERR_INVAL;
	s->out = !!(rec->misc & PD_MISC_SWITCH_OUT);
	s->preempt = s->out && (rec->misc & PD_MISC_SWITCH_OUT_PREEMPT);
	if (rec->type == PD_RECORD_SWITCH_CPU_WIDE) {
		if (too_short(rec, 8))
			return PTD_ERR_CORRUPT;
		s->next_prev_pid = util_le32(rec->raw + 8);
		s->next_prev_tid = util_le32(rec->raw + 12);
	}
	return 0;
}

int perfdata_parse_aux(const struct perfdata_record *rec,
		       struct perfdata_aux *a)
{
	const uint8_t *b = rec->raw + 8;

	memset(a, 0, sizeof(*a));
	if (rec->type != PD_RECORD_AUX)
		return PTD_ERR_INVAL;
	if (too_short(rec, 24))
		return PTD_ERR_CORRUPT;
	a->aux_offset = util_le64(b);
	a->aux_size = util_le64(b + 8);
	a->flags = util_le64(b + 16);
	return 0;
}

int perfdata_parse_itrace_start(const struct perfdata_record *rec,
				struct perfdata_itrace_start *s)
{
	memset(s, 0, sizeof(*s));
	if (rec->type != PD_RECORD_ITRACE_START)
		return PTD_ERR_INVAL;
	if (too_short(rec, 8))
		return PTD_ERR_CORRUPT;
	s->pid = util_le32(rec->raw + 8);
	s->tid = util_le32(rec->raw + 12);
	return 0;
}

int perfdata_parse_lost(const struct perfdata_record *rec,
			struct perfdata_lost *l)
{
	const uint8_t *b = rec->raw + 8;

	memset(l, 0, sizeof(*l));
	if (rec->type == PD_RECORD_LOST) {
		if (too_short(rec, 16))
			return PTD_ERR_CORRUPT;
		l->id = util_le64(b);
		l->lost = util_le64(b + 8);
		return 0;
	}
	if (rec->type == PD_RECORD_LOST_SAMPLES) {
		if (too_short(rec, 8))
			return PTD_ERR_CORRUPT;
		l->lost = util_le64(b);
		l->id = rec->sid.id;
		return 0;
	}
	return PTD_ERR_INVAL;
}

int perfdata_parse_ksymbol(const struct perfdata_record *rec,
			   struct perfdata_ksymbol *k)
{
	const uint8_t *b = rec->raw + 8;

	memset(k, 0, sizeof(*k));
	if (rec->type != PD_RECORD_KSYMBOL)
		return PTD_ERR_INVAL;
	if (too_short(rec, 17))
		return PTD_ERR_CORRUPT;
	k->addr = util_le64(b);
	k->len = util_le32(b + 8);
	k->ksym_type = util_le16(b + 12);
	k->flags = util_le16(b + 14);
	k->name = body_str(rec, 16);
	return k->name ? 0 : PTD_ERR_CORRUPT;
}

int perfdata_parse_bpf_event(const struct perfdata_record *rec,
			     struct perfdata_bpf_event *e)
{
	const uint8_t *b = rec->raw + 8;

	memset(e, 0, sizeof(*e));
	if (rec->type != PD_RECORD_BPF_EVENT)
		return PTD_ERR_INVAL;
	if (too_short(rec, 16))
		return PTD_ERR_CORRUPT;
	e->type = util_le16(b);
	e->flags = util_le16(b + 2);
	e->id = util_le32(b + 4);
	memcpy(e->tag, b + 8, 8);
	return 0;
}

int perfdata_parse_text_poke(const struct perfdata_record *rec,
			     struct perfdata_text_poke *t)
{
	const uint8_t *b = rec->raw + 8;

	memset(t, 0, sizeof(*t));
	if (rec->type != PD_RECORD_TEXT_POKE)
		return PTD_ERR_INVAL;
	if (too_short(rec, 12))
		return PTD_ERR_CORRUPT;
	t->addr = util_le64(b);
	t->old_len = util_le16(b + 8);
	t->new_len = util_le16(b + 10);
	if ((size_t)t->old_len + t->new_len > body_len(rec) - 12)
		return PTD_ERR_CORRUPT;
	t->old_bytes = b + 12;
	t->new_bytes = b + 12 + t->old_len;
	return 0;
}

int perfdata_parse_aux_hw_id(const struct perfdata_record *rec,
			     struct perfdata_aux_hw_id *h)
{
	memset(h, 0, sizeof(*h));
	if (rec->type != PD_RECORD_AUX_OUTPUT_HW_ID)
		return PTD_ERR_INVAL;
	if (too_short(rec, 8))
		return PTD_ERR_CORRUPT;
	h->hw_id = util_le64(rec->raw + 8);
	return 0;
}

int perfdata_parse_auxtrace_info(const struct perfdata_record *rec,
				 struct perfdata_auxtrace_info *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (rec->type != PD_RECORD_AUXTRACE_INFO)
		return PTD_ERR_INVAL;
	if (too_short(rec, 8))
		return PTD_ERR_CORRUPT;
	ai->type = util_le32(rec->raw + 8);
	ai->priv = (const uint64_t *)(const void *)(rec->raw + 16);
	ai->npriv = ((size_t)rec->size - 16) / 8;
	return 0;
}

/* Skips the read_format group/value of a SAMPLE_READ. */
static int skip_read(const uint8_t *b, size_t len, size_t *o, uint64_t rf)
{
	size_t per = 8 + 8 * (!!(rf & PD_FORMAT_ID) + !!(rf & PD_FORMAT_LOST));
	size_t times = 8 * (!!(rf & PD_FORMAT_TOTAL_TIME_ENABLED) +
			    !!(rf & PD_FORMAT_TOTAL_TIME_RUNNING));
	uint64_t nr = 1;

	if (rf & PD_FORMAT_GROUP) {
		if (len - *o < 8)
			return -1;
		nr = util_le64(b + *o);
		*o += 8;
		if (nr > len / per)
			return -1;
	}
	if (len - *o < times + nr * per)
		return -1;
	*o += times + nr * per;
	return 0;
}

int perfdata_parse_sample(const struct perfdata_record *rec,
			  struct perfdata_sample *s)
{
	const struct perfdata_attr *a = rec->layout_attr;
	const uint8_t *b = rec->raw + 8;
	size_t len = rec->size - 8, o = 0;
	uint64_t st, nr;

	memset(s, 0, sizeof(*s));
	if (rec->type != PD_RECORD_SAMPLE)
		return PTD_ERR_INVAL;
	if (!a)
		return PTD_ERR_CORRUPT;
	st = a->sample_type;
#define U64(dst) do { if (len - o < 8) return PTD_ERR_CORRUPT; \
		      (dst) = util_le64(b + o); o += 8; } while (0)
	if (st & PD_SAMPLE_IDENTIFIER)
		U64(s->id);
	if (st & PD_SAMPLE_IP)
		U64(s->ip);
	if (st & PD_SAMPLE_TID) {
		if (len - o < 8)
			return PTD_ERR_CORRUPT;
		s->pid = util_le32(b + o);
		s->tid = util_le32(b + o + 4);
		o += 8;
	}
	if (st & PD_SAMPLE_TIME)
		U64(s->time);
	if (st & PD_SAMPLE_ADDR)
		U64(s->addr);
	if (st & PD_SAMPLE_ID)
		U64(s->id);
	if (st & PD_SAMPLE_STREAM_ID)
		U64(s->stream_id);
	if (st & PD_SAMPLE_CPU) {
		if (len - o < 8)
			return PTD_ERR_CORRUPT;
		s->cpu = util_le32(b + o);
		o += 8;
	}
	if (st & PD_SAMPLE_PERIOD)
		U64(s->period);
	if ((st & PD_SAMPLE_READ) && skip_read(b, len, &o, a->read_format) < 0)
		return PTD_ERR_CORRUPT;
	if (st & PD_SAMPLE_CALLCHAIN) {
		U64(nr);
		if (nr > (len - o) / 8)
			return PTD_ERR_TRUNCATED;  /* nr beyond the record */
		s->callchain = b + o;
		s->callchain_nr = nr;
		o += nr * 8;
	}
	if (st & PD_SAMPLE_RAW) {
		if (len - o < 4)
			return PTD_ERR_CORRUPT;
		s->raw_size = util_le32(b + o);
		if (s->raw_size > len - o - 4)
			return PTD_ERR_CORRUPT;
		s->raw = b + o + 4;
		o += 4 + s->raw_size;
	}
	if (st & PD_SAMPLE_BRANCH_STACK) {
		U64(nr);
		if (a->branch_sample_type & PD_SAMPLE_BRANCH_HW_INDEX)
			U64(s->branch_hw_idx);
		if (nr > (len - o) / PD_BRANCH_ENTRY_SIZE)
			return PTD_ERR_CORRUPT;
		s->branches = b + o;
		s->branch_nr = nr;
	}
#undef U64
	return 0;
}

int perfdata_parse_time_conv(const struct perfdata_record *rec,
			     struct perfdata_time_conv *tc)
{
	const uint8_t *b = rec->raw + 8;

	if (rec->type != PD_RECORD_TIME_CONV)
		return PTD_ERR_INVAL;
	if (too_short(rec, 24))
		return PTD_ERR_CORRUPT;
	memset(tc, 0, sizeof(*tc));
	tc->time_shift = util_le64(b);
	tc->time_mult = util_le64(b + 8);
	tc->time_zero = util_le64(b + 16);
	if (!too_short(rec, 42)) {
		tc->time_cycles = util_le64(b + 24);
		tc->time_mask = util_le64(b + 32);
		tc->cap_user_time_zero = b[40];
		tc->cap_user_time_short = b[41];
	}
	tc->valid = 1;
	return 0;
}
