/* SPDX-License-Identifier: MIT */
#include "sbevents.h"
#include "auxring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sb_ring {
	int fd, cpu;
	uint64_t id;
	struct perf_event_mmap_page *pg;
	uint8_t *data;
	size_t size;        /* data area bytes (power of two) */
	size_t map_len;
	struct auxring ar;  /* the reader (forward or backward) */
};

struct sbevents {
	struct perf_event_attr attr[SB_NKIND];
	struct sb_ring *rings;   /* ncpus * SB_NKIND, kind-major */
	uint64_t *ids[SB_NKIND];
	int nrings[SB_NKIND];
	int ncpus;
	uint64_t lost_pending;   /* losses no LOST record reported (flush_lost) */
	uint64_t trimmed;        /* oversized records passed on trimmed */
	int backward;
};

static void make_attr(struct perf_event_attr *a, int kind, size_t ring_bytes, int backward)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->size = sizeof(*a);
	a->sample_type = SB_SAMPLE_TYPE;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = SB_CLOCKID;
	a->watermark = 1;
	/* read() then gives the records the kernel could not write into the
	 * ring, including those its LOST record would only report at the
	 * next successful write (sbevents_flush_lost). */
	a->read_format = PERF_FORMAT_LOST;
	if (kind == SB_MAIN) {
		a->mmap = 1;
		a->mmap2 = 1;      /* only effective together with mmap */
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->ksymbol = 1;
		a->bpf_event = 1;
		a->text_poke = 1;
		a->wakeup_watermark = 1;
	} else {
		a->context_switch = 1;
		a->wakeup_watermark = (uint32_t)(ring_bytes / 2);
	}
	if (backward) {
		/* Flight recorder: the kernel overwrites the oldest records;
		 * nobody reads until a snapshot, so nobody needs waking. */
		a->write_backward = 1;
		a->watermark = 1;
		a->wakeup_watermark = (uint32_t)ring_bytes;
	}
}

static int perf_open(struct perf_event_attr *a, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void explain(int e, char *err, size_t errlen)
{
	char par[32] = "?";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");

	if (f) {
		if (!fgets(par, sizeof(par), f))
			strcpy(par, "?");
		par[strcspn(par, "\n")] = 0;
		fclose(f);
	}
	if (e == EACCES || e == EPERM)
		snprintf(err, errlen, "system-wide perf events refused (%s): ptcapture needs "
			 "CAP_PERFMON (or root), or kernel.perf_event_paranoid <= -1 "
			 "(now %s); BPF text capture also needs CAP_BPF", strerror(e), par);
	else
		snprintf(err, errlen, "perf_event_open of the sideband dummy event: %s", strerror(e));
}

int sbevents_open(unsigned pages_main, unsigned pages_switch, int backward,
		  struct sbevents **out, char *err, size_t errlen)
{
	long psz = sysconf(_SC_PAGESIZE);
	int nconf = (int)sysconf(_SC_NPROCESSORS_CONF);
	struct sbevents *sb;
	unsigned pages[SB_NKIND] = { pages_main, pages_switch };

	*out = NULL;
	for (int k = 0; k < SB_NKIND; k++)
		if (!pages[k] || (pages[k] & (pages[k] - 1))) {
			snprintf(err, errlen, "ring size must be a power of two pages");
			return -EINVAL;
		}
	sb = calloc(1, sizeof(*sb));
	if (!sb || !(sb->rings = calloc((size_t)nconf * SB_NKIND, sizeof(*sb->rings))))
		goto nomem;
	sb->ncpus = nconf;
	sb->backward = backward;
	for (int k = 0; k < SB_NKIND; k++) {
		size_t bytes = (size_t)pages[k] * (size_t)psz;

		if (!(sb->ids[k] = calloc((size_t)nconf, sizeof(uint64_t))))
			goto nomem;
		make_attr(&sb->attr[k], k, bytes, backward);
		for (int cpu = 0; cpu < nconf; cpu++) {
			struct sb_ring *r = &sb->rings[k * nconf + sb->nrings[k]];
			int fd = perf_open(&sb->attr[k], cpu);

			if (fd < 0) {
				if (errno == ENODEV || errno == EINVAL)
					continue; /* offline CPU */
				explain(errno, err, errlen);
				sbevents_close(sb);
				return -errno;
			}
			r->fd = fd;
			r->cpu = cpu;
			r->size = bytes;
			r->map_len = bytes + (size_t)psz;
			/* read-only = overwrite mode (the kernel ignores data_tail) */
			r->pg = mmap(NULL, r->map_len, backward ? PROT_READ : PROT_READ | PROT_WRITE,
				     MAP_SHARED, fd, 0);
			if (r->pg == MAP_FAILED || ioctl(fd, PERF_EVENT_IOC_ID, &r->id) ||
			    auxring_init(&r->ar, r->pg, (uint8_t *)r->pg + psz, bytes, NULL, 0, 0)) {
				int e = errno;

				if (r->pg == MAP_FAILED)
					r->pg = NULL;
				sb->nrings[k]++;
				snprintf(err, errlen, "mapping the sideband ring of CPU %d: %s "
					 "(lower the ring size or raise perf_event_mlock_kb)",
					 cpu, strerror(e));
				sbevents_close(sb);
				return -e;
			}
			r->data = (uint8_t *)r->pg + psz;
			sb->ids[k][sb->nrings[k]++] = r->id;
		}
		if (!sb->nrings[k]) {
			snprintf(err, errlen, "no online CPU accepted the sideband event");
			sbevents_close(sb);
			return -ENODEV;
		}
	}
	*out = sb;
	return 0;
nomem:
	sbevents_close(sb);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

void sbevents_close(struct sbevents *sb)
{
	if (!sb)
		return;
	for (int k = 0; k < SB_NKIND; k++) {
		for (int i = 0; i < sb->nrings[k]; i++) {
			struct sb_ring *r = &sb->rings[k * sb->ncpus + i];

			if (r->pg)
				munmap(r->pg, r->map_len);
			auxring_fini(&r->ar);
			close(r->fd);
		}
		free(sb->ids[k]);
	}
	free(sb->rings);
	free(sb);
}

const struct perf_event_attr *sbevents_attr(const struct sbevents *sb, int kind)
{
	return &sb->attr[kind];
}

size_t sbevents_ids(const struct sbevents *sb, int kind, const uint64_t **ids)
{
	*ids = sb->ids[kind];
	return (size_t)sb->nrings[kind];
}

int sbevents_ncpus(const struct sbevents *sb)
{
	return sb->nrings[SB_MAIN];
}

int sbevents_add_to_epoll(struct sbevents *sb, int epfd)
{
	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++) {
			struct epoll_event ev = { .events = EPOLLIN };

			ev.data.u64 = 0;
			if (epoll_ctl(epfd, EPOLL_CTL_ADD, sb->rings[k * sb->ncpus + i].fd, &ev))
				return -errno;
		}
	return 0;
}

/* The size a KSYMBOL, BPF_EVENT or TEXT_POKE record really has.  The
 * kernel builds each of these once and, per event it writes it to, adds
 * that event's sample_id size to the shared header without restoring it:
 * when several sessions record sideband on a CPU, all but the first get a
 * size too large by a trailer or more, their trailer right after the body
 * and stale ring bytes after that.  Read from the end, the time would be
 * garbage.  Other records: their size. */
size_t sbevents_real_size(const struct perf_event_header *h)
{
	const uint8_t *b = (const uint8_t *)h;
	size_t body;
	uint16_t ol, nl;

	switch (h->type) {
	case PERF_RECORD_KSYMBOL:   /* addr, len, type, flags, name (u64-padded) */
		if (h->size < 24 + SB_ID_TRAILER)
			return h->size;
		body = 24 + (strnlen((const char *)b + 24, h->size - 24 - SB_ID_TRAILER) + 8) / 8 * 8;
		break;
	case PERF_RECORD_BPF_EVENT: /* type, flags, id, tag */
		body = 24;
		break;
	case PERF_RECORD_TEXT_POKE: /* addr, old_len, new_len, bytes (u64-padded) */
		if (h->size < 20)
			return h->size;
		memcpy(&ol, b + 16, 2);
		memcpy(&nl, b + 18, 2);
		body = 16 + (4 + (size_t)ol + nl + 7) / 8 * 8;
		break;
	default:
		return h->size;
	}
	return body + SB_ID_TRAILER < h->size ? body + SB_ID_TRAILER : h->size;
}

/* Passes rec on with its real size. */
static int pass(struct sbevents *sb, sbevents_fn fn, void *ctx,
		const struct perf_event_header *rec, int cpu)
{
	union {
		struct perf_event_header h;
		uint8_t b[4096];
	} fixed;
	size_t n = sbevents_real_size(rec);

	if (n == rec->size || n > sizeof(fixed))
		return fn(ctx, rec, cpu);
	memcpy(fixed.b, rec, n);
	fixed.h.size = (uint16_t)n;
	sb->trimmed++;
	return fn(ctx, &fixed.h, cpu);
}

struct rd_ctx {
	struct sbevents *sb;
	sbevents_fn fn;
	void *ctx;
	int cpu;
};

static int rd_rec(void *ctx, const struct perf_event_header *rec)
{
	struct rd_ctx *c = ctx;

	return pass(c->sb, c->fn, c->ctx, rec, c->cpu);
}

/* auxring_read does the ring protocol (acquire data_head, release
 * data_tail after the records are used, join records split at the end)
 * and counts the LOST records that pass. */
long sbevents_drain(struct sbevents *sb, sbevents_fn fn, void *ctx)
{
	long total = 0;
	int bad = 0;

	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++) {
			struct sb_ring *r = &sb->rings[k * sb->ncpus + i];
			struct rd_ctx c = { sb, fn, ctx, r->cpu };
			long n = auxring_read(&r->ar, rd_rec, &c);

			if (n < 0)
				bad = 1;
			else
				total += n;
		}
	return bad ? -1 : total;
}

int sbevents_enable(struct sbevents *sb, int enable)
{
	int rc = 0;

	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++)
			if (ioctl(sb->rings[k * sb->ncpus + i].fd,
				  enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
				rc = -errno;
	return rc;
}

/* The kernel counts a record it cannot write in rb->lost and reports it
 * in a LOST record in front of the next record that fits.  A ring whose
 * CPU writes nothing more after its reader caught up (the end of a
 * capture) never gets that LOST record: only read() (PERF_FORMAT_LOST)
 * tells.  Whatever it counts beyond the LOST records read becomes a
 * LOST record of our own, so no loss goes unreported. */
long sbevents_flush_lost(struct sbevents *sb, sbevents_fn fn, void *ctx, uint64_t time)
{
	long n = 0;

	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++) {
			struct sb_ring *r = &sb->rings[k * sb->ncpus + i];
			uint64_t v[2];
			struct {
				struct perf_event_header h;
				uint64_t id, lost;
				uint8_t trailer[SB_ID_TRAILER];
			} rec;

			if (read(r->fd, v, sizeof(v)) != (ssize_t)sizeof(v))
				return -1;
			if (v[1] <= r->ar.st.lost_events)
				continue;
			memset(&rec, 0, sizeof(rec));
			rec.h.type = PERF_RECORD_LOST;
			rec.h.size = sizeof(rec);
			rec.id = r->id;
			rec.lost = v[1] - r->ar.st.lost_events;
			sbevents_fill_trailer(&rec.h, 0, 0, time, r->id, (uint32_t)r->cpu);
			r->ar.st.lost_records++;
			r->ar.st.lost_events += rec.lost;
			sb->lost_pending += rec.lost;
			n++;
			if (fn(ctx, &rec.h, r->cpu))
				return -2;
		}
	return n;
}

void sbevents_stats(const struct sbevents *sb, struct sbevents_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++) {
			const struct auxring_stats *a = &sb->rings[k * sb->ncpus + i].ar.st;

			st->records += a->records;
			st->joined += a->joined;
			st->corrupt += a->corrupt;
			st->corrupt_bytes += a->corrupt_bytes;
			st->lost_records += a->lost_records;
			st->lost_events += a->lost_events;
		}
	st->lost_pending = sb->lost_pending;
	st->trimmed = sb->trimmed;
}

uint64_t sbevents_time(const struct perf_event_header *rec)
{
	uint64_t t;

	if (rec->size < sizeof(*rec) + SB_ID_TRAILER)
		return 0;
	memcpy(&t, (const uint8_t *)rec + rec->size - SB_ID_TRAILER + 8, 8);
	return t;
}

void sbevents_fill_trailer(struct perf_event_header *rec, uint32_t pid,
			   uint32_t tid, uint64_t time, uint64_t id, uint32_t cpu)
{
	uint8_t *p = (uint8_t *)rec + rec->size - SB_ID_TRAILER;
	uint32_t zero = 0;

	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	memcpy(p + 8, &time, 8);
	memcpy(p + 16, &id, 8);      /* PERF_SAMPLE_ID */
	memcpy(p + 24, &cpu, 4);
	memcpy(p + 28, &zero, 4);
	memcpy(p + 32, &id, 8);      /* PERF_SAMPLE_IDENTIFIER (last in the trailer) */
}

int sbevents_pause(struct sbevents *sb, int pause)
{
	int rc = 0;

	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++)
			if (ioctl(sb->rings[k * sb->ncpus + i].fd, PERF_EVENT_IOC_PAUSE_OUTPUT, pause))
				rc = -errno;
	return rc;
}

long sbevents_read_backward(struct sbevents *sb, sbevents_fn fn, void *ctx)
{
	long total = 0;
	int bad = 0;

	if (!sb->backward)
		return -1;
	for (int k = 0; k < SB_NKIND; k++)
		for (int i = 0; i < sb->nrings[k]; i++) {
			struct sb_ring *r = &sb->rings[k * sb->ncpus + i];
			struct rd_ctx c = { sb, fn, ctx, r->cpu };
			long n = auxring_read_backward(&r->ar, rd_rec, &c);

			if (n < 0)
				bad = 1;
			else
				total += n;
		}
	return bad ? -1 : total;
}
