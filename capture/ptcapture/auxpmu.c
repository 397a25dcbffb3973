/* SPDX-License-Identifier: MIT */
#include "auxpmu.h"
#include "intel_pt_info.h"
#include "pmuformat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SYSFS "/sys/bus/event_source/devices/"

struct aux_cpu {
	int fd, cpu;
	uint64_t id;
	void *base;
	size_t base_len;
	void *aux;
	size_t aux_len;
	struct auxring ar;
	uint8_t *hold;            /* intel_pt bytes after the last PSB */
	size_t nhold, cap;
	uint64_t written;         /* AUXTRACE offset: bytes written so far */
};

struct auxpmu {
	char dir[256], desc[256];
	int is_pt, snapshot;
	struct perf_event_attr attr;
	struct aux_cpu *c;
	int n;
	uint64_t *ids;
	/* the callbacks' context while draining */
	struct perfwrite *w;
	struct aux_cpu *cur;
	int err;
};

const char *auxpmu_present(void)
{
	if (!access(SYSFS "intel_pt", F_OK))
		return "intel_pt";
	if (!access(SYSFS "cs_etm", F_OK))
		return "cs_etm";
	return NULL;
}

static uint64_t reference(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();   /* perf 6.1 wants a real TSC here */
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

int auxpmu_open(const struct auxpmu_opts *o, struct auxpmu **out, char *err, size_t errlen)
{
	long psz = sysconf(_SC_PAGESIZE);
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF), rc;
	struct pmuformat_config cfg = { { 0 } };
	const char *terms = o->terms;
	struct auxpmu *ap = calloc(1, sizeof(*ap));
	uint32_t type;
	char e2[512];

	*out = NULL;
	if (!ap || !(ap->c = calloc((size_t)ncpu, sizeof(*ap->c))) ||
	    !(ap->ids = calloc((size_t)ncpu, sizeof(uint64_t)))) {
		auxpmu_close(ap);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(ap->dir, sizeof(ap->dir), SYSFS "%s", o->pmu);
	ap->is_pt = !strcmp(o->pmu, "intel_pt");
	ap->snapshot = o->snapshot;
	/* perf's defaults: intel_pt "tsc,mtc,mtc_period=3,psb_period=3,pt,branch"
	 * (terms this PMU lacks are skipped); cs_etm: timestamps. */
	if (!terms) {
		static const char *const pt_def[] = { "tsc", "mtc", "mtc_period=3", "psb_period=3",
						      "pt", "branch", NULL };
		static const char *const etm_def[] = { "timestamp", NULL };

		for (const char *const *t = ap->is_pt ? pt_def : etm_def; *t; t++)
			pmuformat_parse(ap->dir, *t, &cfg, e2, sizeof(e2)); /* absent: skip */
	} else if ((rc = pmuformat_parse(ap->dir, terms, &cfg, e2, sizeof(e2)))) {
		snprintf(err, errlen, "--pmu-config: %s", e2);
		auxpmu_close(ap);
		return rc;
	}
	if ((rc = pmuformat_type(ap->dir, &type, err, errlen))) {
		auxpmu_close(ap);
		return rc;
	}
	memset(&ap->attr, 0, sizeof(ap->attr));
	ap->attr.type = type;
	ap->attr.size = sizeof(ap->attr);
	ap->attr.config = cfg.config[0];
	ap->attr.config1 = cfg.config[1];
	ap->attr.config2 = cfg.config[2];
	ap->attr.sample_type = o->like->sample_type;
	ap->attr.sample_id_all = 1;
	ap->attr.use_clockid = o->like->use_clockid;
	ap->attr.clockid = o->like->clockid;
	ap->attr.exclude_hv = 1;
	ap->attr.disabled = 0;
	snprintf(ap->desc, sizeof(ap->desc), "%s/config=%#llx,config1=%#llx,config2=%#llx/%s",
		 o->pmu, (unsigned long long)cfg.config[0], (unsigned long long)cfg.config[1],
		 (unsigned long long)cfg.config[2], o->snapshot ? " snapshot" : "");
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct aux_cpu *c = &ap->c[ap->n];
		size_t data = (size_t)o->data_pages * (size_t)psz, aux = (size_t)o->aux_pages * (size_t)psz;
		struct perf_event_mmap_page *pg;
		int fd = (int)syscall(SYS_perf_event_open, &ap->attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			rc = -errno;
			snprintf(err, errlen, "perf_event_open %s on CPU %d: %s", ap->desc, cpu,
				 strerror(-rc));
			auxpmu_close(ap);
			return rc;
		}
		c->fd = fd;
		c->cpu = cpu;
		ap->n++;
		c->base_len = data + (size_t)psz;
		c->base = mmap(NULL, c->base_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (c->base == MAP_FAILED) {
			c->base = NULL;
			goto map_fail;
		}
		pg = c->base;
		pg->aux_offset = c->base_len;
		pg->aux_size = aux;
		/* read-only AUX = overwrite mode (snapshots) */
		c->aux = mmap(NULL, aux, o->snapshot ? PROT_READ : PROT_READ | PROT_WRITE,
			      MAP_SHARED, fd, (off_t)pg->aux_offset);
		if (c->aux == MAP_FAILED) {
			c->aux = NULL;
			goto map_fail;
		}
		c->aux_len = aux;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &c->id) ||
		    auxring_init(&c->ar, pg, (uint8_t *)c->base + psz, data, c->aux, aux, o->snapshot))
			goto map_fail;
		ap->ids[ap->n - 1] = c->id;
	}
	if (!ap->n) {
		snprintf(err, errlen, "%s: no CPU accepted the event", o->pmu);
		auxpmu_close(ap);
		return -ENODEV;
	}
	*out = ap;
	return 0;
map_fail:
	rc = -errno;
	snprintf(err, errlen, "mapping the %s AUX area: %s (fewer --aux-pages, or raise "
		 "kernel.perf_event_mlock_kb)", o->pmu, strerror(errno));
	auxpmu_close(ap);
	return rc ? rc : -ENOMEM;
}

void auxpmu_close(struct auxpmu *ap)
{
	if (!ap)
		return;
	for (int i = 0; i < ap->n; i++) {
		struct aux_cpu *c = &ap->c[i];

		auxring_fini(&c->ar);
		if (c->aux)
			munmap(c->aux, c->aux_len);
		if (c->base)
			munmap(c->base, c->base_len);
		close(c->fd);
		free(c->hold);
	}
	free(ap->c);
	free(ap->ids);
	free(ap);
}

const struct perf_event_attr *auxpmu_attr(const struct auxpmu *ap)
{
	return &ap->attr;
}

size_t auxpmu_ids(const struct auxpmu *ap, const uint64_t **ids)
{
	*ids = ap->ids;
	return (size_t)ap->n;
}

const char *auxpmu_desc(const struct auxpmu *ap)
{
	return ap->desc;
}

static uint64_t term_mask(const struct auxpmu *ap, const char *term)
{
	char e[256];
	uint64_t mask = 0;
	int word;

	return pmuformat_term(ap->dir, term, &word, &mask, e, sizeof(e)) || word ? 0 : mask;
}

static uint64_t sysfs_u64(const char *dir, const char *name)
{
	char path[512];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* CPUID leaf 0x15: TSC / core crystal clock ratio (ebx / eax). */
static void tsc_ctc(uint64_t *n, uint64_t *d)
{
	*n = *d = 0;
#if defined(__x86_64__) || defined(__i386__)
	{
		unsigned a, b, c, dd;

		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(dd) : "a"(0));
		if (a >= 0x15) {
			__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(dd) : "a"(0x15), "c"(0));
			*n = b;
			*d = a;
		}
	}
#endif
}

/* What perf's intel_pt AUXTRACE_INFO says of this recording. */
static void pt_info(const struct auxpmu *ap, const struct perf_event_mmap_page *pg,
		    struct intel_pt_info *info)
{
	memset(info, 0, sizeof(*info));
	info->pmu_type = ap->attr.type;
	info->time_shift = pg->time_shift;
	info->time_mult = pg->time_mult;
	info->time_zero = pg->time_zero;
	info->cap_user_time_zero = pg->cap_user_time_zero;
	info->tsc_bit = term_mask(ap, "tsc");
	info->noretcomp_bit = term_mask(ap, "noretcomp");
	/* context switches: the dummy events, CPU-wide */
	info->have_sched_switch = INTELPT_SCHED_SWITCH_CPU_WIDE;
	info->snapshot_mode = (uint64_t)ap->snapshot;
	info->per_cpu_mmaps = 1;
	info->mtc_bit = term_mask(ap, "mtc");
	info->mtc_freq_bits = term_mask(ap, "mtc_period");
	tsc_ctc(&info->tsc_ctc_ratio_n, &info->tsc_ctc_ratio_d);
	info->cyc_bit = term_mask(ap, "cyc");
	info->max_non_turbo_ratio = sysfs_u64(ap->dir, "max_nonturbo_ratio");
	info->filter_str_len = 0;            /* no address filter */
}

int auxpmu_write_info(struct auxpmu *ap, struct perfwrite *w)
{
	const struct perf_event_mmap_page *pg = ap->c[0].base;
	int cap_zero = pg->cap_user_time_zero;

	if (ap->is_pt) {
		struct intel_pt_info info;
		uint64_t priv[INTELPT_INFO_MAX];

		pt_info(ap, pg, &info);
		intel_pt_info_pack(&info, priv);
		if (perfwrite_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, INTELPT_INFO_MAX,
					    NULL, 0))
			return -EIO;
	} else {
		/* cs_etm's AUXTRACE_INFO needs each CPU's ETM registers from
		 * sysfs (cs_etm_info_fill): not written yet. */
		return -ENOTSUP;
	}
	return perfwrite_time_conv(w, pg->time_shift, pg->time_mult, pg->time_zero,
				   pg->time_cycles, pg->time_mask, cap_zero,
				   pg->cap_user_time_short) ? -EIO : 0;
}

int auxpmu_add_to_epoll(struct auxpmu *ap, int epfd)
{
	for (int i = 0; i < ap->n; i++) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, ap->c[i].fd, &ev))
			return -errno;
	}
	return 0;
}

static int put(struct auxpmu *ap, struct aux_cpu *c, const uint8_t *p, size_t n)
{
	if (!n)
		return 0;
	if (perfwrite_auxtrace(ap->w, p, n, c->written, reference(), (uint32_t)(c - ap->c),
			       (uint32_t)-1, (uint32_t)c->cpu))
		return ap->err = -EIO;
	c->written += (n + 7) & ~(size_t)7;
	return 0;
}

/* Last PSB (02 82 repeated 8 times) in p[0..n), or n if none. */
static size_t last_psb(const uint8_t *p, size_t n)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };

	for (size_t i = n >= 16 ? n - 16 + 1 : 0; i-- > 0;)
		if (p[i] == 2 && !memcmp(p + i, psb, 16))
			return i;
	return n;
}

static int on_aux(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		  uint64_t offset)
{
	struct auxpmu *ap = ctx;
	struct aux_cpu *c = ap->cur;
	size_t need = c->nhold + alen + blen, cut;

	(void)offset;
	if (!ap->is_pt || ap->snapshot) {
		/* one record per read (a wrapped read is joined) */
		if (!blen)
			return put(ap, c, a, alen);
	}
	if (need > c->cap) {
		uint8_t *nb = realloc(c->hold, need);

		if (!nb)
			return ap->err = -ENOMEM;
		c->hold = nb;
		c->cap = need;
	}
	memcpy(c->hold + c->nhold, a, alen);
	memcpy(c->hold + c->nhold + alen, b, blen);
	c->nhold = need;
	if (!ap->is_pt || ap->snapshot)
		cut = need;
	else if ((cut = last_psb(c->hold, need)) == need && need > c->ar.aux_size)
		cut = need;   /* no PSB for a whole area: write anyway */
	if (cut && put(ap, c, c->hold, cut))
		return ap->err;
	memmove(c->hold, c->hold + cut, need - cut);
	c->nhold = need - cut;
	return 0;
}

struct rec_ctx {
	auxpmu_rec_fn fn;
	void *ctx;
	int cpu;
};

static int on_rec(void *ctx, const struct perf_event_header *rec)
{
	struct rec_ctx *r = ctx;

	return r->fn ? r->fn(r->ctx, rec, r->cpu) : 0;
}

int auxpmu_drain(struct auxpmu *ap, struct perfwrite *w, auxpmu_rec_fn fn, void *ctx,
		 int final)
{
	ap->w = w;
	for (int i = 0; i < ap->n && !ap->err; i++) {
		struct aux_cpu *c = &ap->c[i];
		struct rec_ctx rc = { fn, ctx, c->cpu };

		ap->cur = c;
		/* AUX records first refer to bytes we then read */
		auxring_read(&c->ar, on_rec, &rc);
		if (!ap->snapshot)
			auxring_read_aux(&c->ar, on_aux, ap);
		if (final && c->nhold) {
			put(ap, c, c->hold, c->nhold);
			c->nhold = 0;
		}
	}
	return ap->err;
}

int auxpmu_snapshot(struct auxpmu *ap, struct perfwrite *w)
{
	ap->w = w;
	for (int i = 0; i < ap->n; i++)
		ioctl(ap->c[i].fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1);
	for (int i = 0; i < ap->n && !ap->err; i++) {
		struct aux_cpu *c = &ap->c[i];

		ap->cur = c;
		c->written = 0;  /* each snapshot is its own file */
		auxring_snapshot_aux(&c->ar, on_aux, ap);
	}
	for (int i = 0; i < ap->n; i++)
		ioctl(ap->c[i].fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0);
	return ap->err;
}

void auxpmu_stats(const struct auxpmu *ap, struct auxring_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; ap && i < ap->n; i++) {
		const struct auxring_stats *s = &ap->c[i].ar.st;

		st->records += s->records;
		st->joined += s->joined;
		st->corrupt += s->corrupt;
		st->lost_records += s->lost_records;
		st->lost_events += s->lost_events;
		st->aux_records += s->aux_records;
		st->aux_truncated += s->aux_truncated;
		st->aux_overwrite += s->aux_overwrite;
		st->aux_partial += s->aux_partial;
		st->aux_collision += s->aux_collision;
		st->aux_bytes += s->aux_bytes;
		st->aux_reads += s->aux_reads;
		st->aux_overrun += s->aux_overrun;
	}
}
