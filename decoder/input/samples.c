/* SPDX-License-Identifier: MIT */
#include "samples.h"
#include "perf_abi.h"
#include "perfdata.h"
#include "perfdata_dir.h"
#include "util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct sample_deferred {
	uint64_t time, cookie, seq;
	int32_t tid;
	size_t off, n;             /* user frames in the raw pool */
	int used;
};

struct comm_ent {
	int32_t tid;
	char comm[16];
};

struct loader {
	struct sample_set *ss;
	struct perfdata *pd;    /* events[i] names its attrs[i] */
	struct comm_ent *comms;
	size_t ncomms, ccap;
	uint64_t seq;
};

static int warnf(struct sample_set *ss, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int warnf(struct sample_set *ss, const char *fmt, ...)
{
	char buf[512], **w;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w = realloc(ss->warnings, (ss->nwarnings + 1) * sizeof(*w));
	if (!w)
		return PTD_ERR_NOMEM;
	ss->warnings = w;
	if (!(w[ss->nwarnings] = strdup(buf)))
		return PTD_ERR_NOMEM;
	ss->nwarnings++;
	return 0;
}

static const char *comm_of(struct loader *l, int32_t tid)
{
	for (size_t i = l->ncomms; i-- > 0;)
		if (l->comms[i].tid == tid)
			return l->comms[i].comm;
	return "";
}

static int set_comm(struct loader *l, int32_t tid, const char *comm)
{
	for (size_t i = 0; i < l->ncomms; i++)
		if (l->comms[i].tid == tid) {
			snprintf(l->comms[i].comm, sizeof(l->comms[i].comm), "%s", comm);
			return 0;
		}
	if (util_grow((void **)&l->comms, &l->ccap, l->ncomms + 1, sizeof(*l->comms)))
		return PTD_ERR_NOMEM;
	l->comms[l->ncomms].tid = tid;
	snprintf(l->comms[l->ncomms++].comm, sizeof(l->comms[0].comm), "%s", comm);
	return 0;
}

static int on_comm(struct loader *l, const struct perfdata_record *r)
{
	struct perfdata_comm c;

	return perfdata_parse_comm(r, &c) ? 0 : set_comm(l, (int32_t)c.tid, c.comm);
}

/* A new thread has its parent's name until it execs or renames itself. */
static int on_fork(struct loader *l, const struct perfdata_record *r)
{
	struct perfdata_task t;
	const char *pc;

	if (perfdata_parse_task(r, &t) || !*(pc = comm_of(l, (int32_t)t.ptid)))
		return 0;
	return set_comm(l, (int32_t)t.tid, pc);
}

/* n little-endian u64s at p into the raw pool; *off is where. */
static int push_raw(struct sample_set *ss, const uint8_t *p, uint64_t n, size_t *off)
{
	if (util_grow((void **)&ss->raw, &ss->rawcap, ss->nraw + n + 1, sizeof(*ss->raw)))
		return PTD_ERR_NOMEM;
	*off = ss->nraw;
	for (uint64_t i = 0; i < n; i++)
		ss->raw[ss->nraw++] = util_le64(p + 8 * i);
	return 0;
}

static int push_branches(struct sample_set *ss, const struct perfdata_sample *s,
			 struct sample_entry *e)
{
	if (!s->branches)
		return 0;
	if (util_grow((void **)&ss->br, &ss->brcap, ss->nbr + s->branch_nr + 1,
		      sizeof(*ss->br)))
		return PTD_ERR_NOMEM;
	e->br_off = ss->nbr;
	e->br_n = (size_t)s->branch_nr;
	for (uint64_t i = 0; i < s->branch_nr; i++) {
		const uint8_t *b = s->branches + i * PD_BRANCH_ENTRY_SIZE;

		ss->br[ss->nbr].from = util_le64(b);
		ss->br[ss->nbr].to = util_le64(b + 8);
		ss->br[ss->nbr++].flags = util_le64(b + 16);
	}
	ss->st.branch_stacks++;
	return 0;
}

/* A recorded callchain whose last context is USER_DEFERRED: the cookie
 * must follow the marker, as the chain's last entry. */
static int find_deferred(const uint64_t *cc, size_t n, uint64_t *cookie)
{
	for (size_t i = 0; i < n; i++)
		if (cc[i] == PD_CONTEXT_USER_DEFERRED) {
			if (i + 2 != n)
				return -1;
			*cookie = cc[i + 1];
			return 1;
		}
	return 0;
}

static uint8_t ctx_of(uint64_t marker);

/* An entry at or above PD_CONTEXT_MAX that names no context (a stray
 * value the frame-pointer unwinder read as a return address): perf takes
 * the callchain as corrupt and shows none of it. */
static int corrupt_marker(const uint64_t *cc, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cc[i] >= PD_CONTEXT_MAX && cc[i] != PD_CONTEXT_USER_DEFERRED &&
		    ctx_of(cc[i]) == PTD_FRAME_UNKNOWN)
			return 1;
	return 0;
}

/* The index of a's name; the last ("") for an unknown attr or one added
 * after the names were taken (pipe mode). */
static size_t event_of(struct loader *l, const struct perfdata_attr *a)
{
	const struct perfdata_info *in = perfdata_get_info(l->pd);
	size_t unknown = l->ss->nevents - 1;

	if (!a || a < in->attrs || a >= in->attrs + in->nattrs)
		return unknown;
	return (size_t)(a - in->attrs) < unknown ? (size_t)(a - in->attrs) : unknown;
}

static int on_sample(struct loader *l, const struct perfdata_record *r)
{
	struct sample_set *ss = l->ss;
	const struct perfdata_attr *a = r->layout_attr;
	struct perfdata_sample s;
	struct sample_entry *e;
	int rc = perfdata_parse_sample(r, &s), d;

	if (rc && rc != PTD_ERR_TRUNCATED) {
		ss->st.records_bad++;
		return 0;
	}
	if (util_grow((void **)&ss->v, &ss->cap, ss->n + 1, sizeof(*ss->v)))
		return PTD_ERR_NOMEM;
	e = &ss->v[ss->n++];
	memset(e, 0, sizeof(*e));
	ss->st.samples++;
	e->seq = l->seq++;
	e->time = a && (a->sample_type & PD_SAMPLE_TIME) ? s.time : 0;
	e->ip = s.ip;
	e->period = s.period;
	/* without PERIOD in the sample, perf script shows the attr's */
	if (a && !(a->sample_type & PD_SAMPLE_PERIOD) && !(a->flags & PD_ATTR_FLAG_FREQ))
		e->period = a->sample_period;
	e->id = s.id;
	e->cpu = a && (a->sample_type & PD_SAMPLE_CPU) ? (int32_t)s.cpu : -1;
	e->pid = a && (a->sample_type & PD_SAMPLE_TID) ? (int32_t)s.pid : -1;
	e->tid = a && (a->sample_type & PD_SAMPLE_TID) ? (int32_t)s.tid : -1;
	e->cpumode = r->misc & PD_MISC_CPUMODE_MASK;
	snprintf(e->comm, sizeof(e->comm), "%s", comm_of(l, e->tid));
	e->event = event_of(l, r->attr);
	if (rc == PTD_ERR_TRUNCATED) {  /* the callchain's nr runs past it */
		e->flags |= PTD_SAMPLE_CALLCHAIN_BAD;
		ss->st.callchains++;
		ss->st.callchains_bad++;
		return 0;
	}
	if (!s.callchain)
		return push_branches(ss, &s, e);
	ss->st.callchains++;
	if (push_raw(ss, s.callchain, s.callchain_nr, &e->raw_off))
		return PTD_ERR_NOMEM;
	e->raw_n = (size_t)s.callchain_nr;
	d = find_deferred(ss->raw + e->raw_off, e->raw_n, &e->cookie);
	if (corrupt_marker(ss->raw + e->raw_off, d > 0 ? e->raw_n - 2 : e->raw_n)) {
		e->flags |= PTD_SAMPLE_CALLCHAIN_CORRUPT;
		ss->st.callchains_corrupt++;
		e->raw_n = 0;
		d = 0;
	} else if (d < 0) {
		e->flags |= PTD_SAMPLE_CALLCHAIN_BAD;
		ss->st.callchains_bad++;
		e->raw_n = 0;
	} else if (d) {
		e->deferred = 1;
		ss->st.deferred_samples++;
	}
	return push_branches(ss, &s, e);
}

/* u64 cookie, u64 nr, u64 ips[nr], then the sample_id trailer. */
static int on_deferred(struct loader *l, const struct perfdata_record *r)
{
	struct sample_set *ss = l->ss;
	const uint8_t *b = r->raw + 8;
	size_t len = r->size - 8u;
	struct sample_deferred *d;
	uint64_t nr;

	ss->st.deferred_records++;
	if (len < 16 || (nr = util_le64(b + 8)) > (len - 16) / 8 || !r->sid.has_tid) {
		ss->st.records_bad++;
		return 0;
	}
	if (util_grow((void **)&ss->def, &ss->defcap, ss->ndef + 1, sizeof(*ss->def)))
		return PTD_ERR_NOMEM;
	d = &ss->def[ss->ndef++];
	memset(d, 0, sizeof(*d));
	d->cookie = util_le64(b);
	d->tid = (int32_t)r->sid.tid;
	d->time = r->sid.has_time ? r->sid.time : 0;
	d->seq = l->seq++;
	d->n = (size_t)nr;
	return push_raw(ss, b + 16, nr, &d->off);
}

static void on_lost(struct sample_set *ss, const struct perfdata_record *r)
{
	struct perfdata_lost lo;

	if (!perfdata_parse_lost(r, &lo))
		ss->st.lost_samples += lo.lost;
}

/* ---- stitching ------------------------------------------------------ */

static int key_cmp(int32_t ta, uint64_t ca, uint64_t tia, uint64_t sa,
		   int32_t tb, uint64_t cb, uint64_t tib, uint64_t sb)
{
	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (tia != tib)
		return tia < tib ? -1 : 1;
	return sa < sb ? -1 : sa > sb;
}

static int pend_cmp(const void *a, const void *b)
{
	const struct sample_entry *x = *(const struct sample_entry *const *)a;
	const struct sample_entry *y = *(const struct sample_entry *const *)b;

	return key_cmp(x->tid, x->cookie, x->time, x->seq, y->tid, y->cookie,
		       y->time, y->seq);
}

static int def_cmp(const void *a, const void *b)
{
	const struct sample_deferred *x = a, *y = b;

	return key_cmp(x->tid, x->cookie, x->time, x->seq, y->tid, y->cookie,
		       y->time, y->seq);
}

static uint8_t ctx_of(uint64_t marker)
{
	switch (marker) {
	case PD_CONTEXT_KERNEL: return PTD_FRAME_KERNEL;
	case PD_CONTEXT_USER: return PTD_FRAME_USER;
	case PD_CONTEXT_HV: return PTD_FRAME_HV;
	case PD_CONTEXT_GUEST: return PTD_FRAME_GUEST;
	case PD_CONTEXT_GUEST_KERNEL: return PTD_FRAME_GUEST_KERNEL;
	case PD_CONTEXT_GUEST_USER: return PTD_FRAME_GUEST_USER;
	default: return PTD_FRAME_UNKNOWN;
	}
}

/* Appends raw entries [off, off+n) to the frames, markers out;
 * ctx is the context until the first marker. */
static int append_frames(struct sample_set *ss, size_t off, size_t n, uint8_t ctx)
{
	if (util_grow((void **)&ss->frames, &ss->fcap, ss->nframes + n + 1,
		      sizeof(*ss->frames)) ||
	    util_grow((void **)&ss->ctx, &ss->ctxcap, ss->nframes + n + 1, 1))
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = ss->raw[off + i];

		if (v == PD_CONTEXT_USER_DEFERRED)
			break;   /* the cookie follows: not a frame */
		if (v >= PD_CONTEXT_MAX) {
			ctx = ctx_of(v);
			continue;
		}
		ss->ctx[ss->nframes] = ctx;
		ss->frames[ss->nframes++] = v;
	}
	return 0;
}

/* Each pending sample gets the first deferred record of its thread and
 * cookie at or after its time. */
static int match_deferred(struct sample_set *ss, struct sample_deferred **match)
{
	struct sample_entry **pend;
	size_t np = 0, j = 0;

	pend = calloc(ss->n + 1, sizeof(*pend));
	if (!pend)
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i].deferred)
			pend[np++] = &ss->v[i];
	util_sort(pend, np, sizeof(*pend), pend_cmp);
	util_sort(ss->def, ss->ndef, sizeof(*ss->def), def_cmp);
	for (size_t i = 0; i < np; i++) {
		struct sample_entry *e = pend[i];

		while (j < ss->ndef && key_cmp(ss->def[j].tid, ss->def[j].cookie,
					       ss->def[j].time, UINT64_MAX, e->tid,
					       e->cookie, e->time, 0) < 0)
			j++;
		match[e - ss->v] = NULL;
		if (j < ss->ndef && ss->def[j].tid == e->tid && ss->def[j].cookie == e->cookie) {
			match[e - ss->v] = &ss->def[j];
			ss->def[j].used = 1;
		}
	}
	free(pend);
	for (size_t k = 1; k < ss->ndef; k++)
		if (ss->def[k].tid == ss->def[k - 1].tid &&
		    ss->def[k].cookie == ss->def[k - 1].cookie)
			ss->st.cookies_reused++;
	for (size_t k = 0; k < ss->ndef; k++)
		if (!ss->def[k].used)
			ss->st.deferred_unmatched++;
	return 0;
}

static int stitch(struct sample_set *ss)
{
	struct sample_deferred **match = calloc(ss->n + 1, sizeof(*match));
	int rc;

	if (!match)
		return PTD_ERR_NOMEM;
	rc = match_deferred(ss, match);
	for (size_t i = 0; !rc && i < ss->n; i++) {
		struct sample_entry *e = &ss->v[i];
		struct sample_deferred *d = match[i];

		e->cc_off = ss->nframes;
		rc = append_frames(ss, e->raw_off, e->raw_n, PTD_FRAME_UNKNOWN);
		if (!rc && d && corrupt_marker(ss->raw + d->off, d->n)) {
			/* as a corrupt sample callchain: none of it */
			ss->nframes = e->cc_off;
			e->flags |= PTD_SAMPLE_CALLCHAIN_CORRUPT;
			ss->st.callchains_corrupt++;
		} else if (!rc && d) {
			rc = append_frames(ss, d->off, d->n, PTD_FRAME_USER);
			e->flags |= PTD_SAMPLE_STITCHED;
			e->deferred_time = d->time;
			ss->st.stitched++;
		} else if (e->deferred) {
			e->flags |= PTD_SAMPLE_DEFERRED_MISSING;
			ss->st.deferred_missing++;
		}
		e->cc_n = ss->nframes - e->cc_off;
	}
	free(match);
	/* what stitching needed is in the frames now */
	free(ss->raw);
	free(ss->def);
	ss->raw = NULL;
	ss->def = NULL;
	ss->nraw = ss->rawcap = ss->ndef = ss->defcap = 0;
	return rc;
}

static int time_cmp(const void *a, const void *b)
{
	const struct sample_entry *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One warning per kind of loss, with its count and what it means. */
static int report(struct sample_set *ss, const char *path)
{
	const struct ptd_samples_stats *st = &ss->st;
	int rc = 0;

	if (st->deferred_missing)
		rc |= warnf(ss, "%s: %" PRIu64 " sample(s) name a deferred user "
			    "callchain that never came (task exited or the record "
			    "was lost): they keep their kernel part only", path,
			    st->deferred_missing);
	if (st->deferred_unmatched)
		rc |= warnf(ss, "%s: %" PRIu64 " CALLCHAIN_DEFERRED record(s) "
			    "match no sample (thread and cookie): ignored", path,
			    st->deferred_unmatched);
	if (st->cookies_reused)
		rc |= warnf(ss, "%s: %" PRIu64 " CALLCHAIN_DEFERRED record(s) "
			    "reuse a cookie an earlier one of the same thread had: "
			    "samples take the first one at or after their time",
			    path, st->cookies_reused);
	if (st->callchains_bad)
		rc |= warnf(ss, "%s: %" PRIu64 " sample callchain(s) run past "
			    "their record or end in a deferred marker without a "
			    "cookie: left out", path, st->callchains_bad);
	if (st->callchains_corrupt)
		rc |= warnf(ss, "%s: %" PRIu64 " sample callchain(s) hold a value "
			    "at or above PERF_CONTEXT_MAX that names no context "
			    "(a stray return address): left out, as perf does",
			    path, st->callchains_corrupt);
	if (st->records_bad)
		rc |= warnf(ss, "%s: %" PRIu64 " SAMPLE/CALLCHAIN_DEFERRED "
			    "record(s) too short to read: skipped", path,
			    st->records_bad);
	return rc ? PTD_ERR_NOMEM : 0;
}

/* The attrs' names, and "" last for samples of no known attr. */
static int name_events(struct loader *l, struct perfdata *pd)
{
	const struct perfdata_info *in = perfdata_get_info(pd);
	struct sample_set *ss = l->ss;

	l->pd = pd;
	if (!(ss->events = calloc(in->nattrs + 1, sizeof(*ss->events))))
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i <= in->nattrs; i++, ss->nevents++)
		if (!(ss->events[i] = strdup(i < in->nattrs && in->attrs[i].name ?
					     in->attrs[i].name : "")))
			return PTD_ERR_NOMEM;
	return 0;
}

/* Records in time order, as perf handles them (a thread's name at a
 * sample is the one its COMM and FORK records gave it by then, whichever
 * CPU's ring they were written from). */
static int read_records(struct loader *l, struct perfdata_dir *d, char *err,
			size_t errlen)
{
	struct perfdata *pd = perfdata_dir_header(d, 0);
	struct perfdata_record r;
	size_t file;
	int rc = name_events(l, pd);

	if (rc)
		return rc;

	while ((rc = perfdata_dir_next(d, &r, &file)) == 0) {
		l->pd = perfdata_dir_reader(d, file);   /* r.attr is in its attrs */
		switch (r.type) {
		case PD_RECORD_SAMPLE: rc = on_sample(l, &r); break;
		case PD_RECORD_CALLCHAIN_DEFERRED: rc = on_deferred(l, &r); break;
		case PD_RECORD_COMM: rc = on_comm(l, &r); break;
		case PD_RECORD_FORK: rc = on_fork(l, &r); break;
		case PD_RECORD_LOST:   /* records of any kind, samples too */
		case PD_RECORD_LOST_SAMPLES: on_lost(l->ss, &r); break;
		default: break;
		}
		if (rc)
			return rc;
	}
	if (rc != PTD_ERR_END) {
		util_errf(err, errlen, "perf.data: cannot read records: %s",
			  perfdata_dir_errmsg(d));
		return rc;
	}
	for (size_t i = 0; i < perfdata_dir_nfiles(d); i++)
		for (const char *const *w = perfdata_dir_warnings(d, i); w && *w; w++)
			if (warnf(l->ss, "%s", *w))
				return PTD_ERR_NOMEM;
	return 0;
}

int samples_load(const char *path, struct sample_set **out, char *err,
		 size_t errlen)
{
	struct loader l = { 0 };
	struct perfdata_dir *d = NULL;
	char file[4096], msg[512];
	struct stat sb;
	int rc;

	*out = NULL;
	if (!(l.ss = calloc(1, sizeof(*l.ss))))
		return PTD_ERR_NOMEM;
	/* a capture directory holds its perf.data; perf record --threads
	 * writes a directory */
	snprintf(file, sizeof(file), "%s%s", path, !perfdata_dir_is(path) &&
		 !stat(path, &sb) && S_ISDIR(sb.st_mode) ? "/perf.data" : "");
	rc = perfdata_dir_is(file) ? perfdata_dir_open(file, &d, msg, sizeof(msg)) :
	     perfdata_dir_open_file(file, &d, msg, sizeof(msg));
	if (rc)
		util_errf(err, errlen, "%s", msg);
	else
		rc = read_records(&l, d, err, errlen);
	perfdata_dir_close(d);
	free(l.comms);
	if (!rc)
		rc = stitch(l.ss);
	if (!rc) {
		util_sort(l.ss->v, l.ss->n, sizeof(*l.ss->v), time_cmp);
		rc = report(l.ss, file);
	}
	if (rc == PTD_ERR_NOMEM)
		util_errf(err, errlen, "out of memory reading samples");
	if (rc) {
		samples_free(l.ss);
		return rc;
	}
	*out = l.ss;
	return 0;
}

void samples_free(struct sample_set *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->nwarnings; i++)
		free(ss->warnings[i]);
	for (size_t i = 0; i < ss->nevents; i++)
		free(ss->events[i]);
	free(ss->events);
	free(ss->warnings);
	free(ss->v);
	free(ss->raw);
	free(ss->frames);
	free(ss->ctx);
	free(ss->br);
	free(ss->def);
	free(ss);
}
