/* SPDX-License-Identifier: MIT */
#include "perfetto.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers of Perfetto's trace protos (protos/perfetto/trace/: Trace,
 * TracePacket, TrackEvent, TrackDescriptor, ProcessDescriptor,
 * ThreadDescriptor, InternedData, EventName). */
enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13, PKT_TRACK_DESC = 60,
	TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11, TE_NAME = 23,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4,
	PROC_PID = 1, PROC_NAME = 6,
	THR_PID = 1, THR_TID = 2, THR_NAME = 5,
	INTERNED_EVENT_NAMES = 2, EVNAME_IID = 1, EVNAME_NAME = 2,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { WIRE_VARINT = 0, WIRE_LEN = 2 };
#define SEQ_ID 1              /* the one packet sequence this writer makes */

/* Track uuids: tagged in the top bits so the kinds never collide (pids
 * are below 2^22, PID_MAX_LIMIT). */
#define UUID_THREAD (1ull << 63)
#define UUID_PROCESS (1ull << 62)
#define UUID_QUEUE (1ull << 61)

#define NAME_MAX_LEN 512      /* longer names are cut */
#define MAX_DEPTH 4096        /* deeper calls are counted, not drawn */
#define OUT_BUF (1u << 20)

enum clock_kind { CLOCK_UNSET, CLOCK_TIME, CLOCK_INSNS };

/* A message being encoded: room for one packet with its longest name. */
struct msg {
	uint8_t b[2 * NAME_MAX_LEN];
	size_t n;
};

struct name_ent {
	char *name;
	uint64_t iid;
};

struct perfetto {
	FILE *out;
	struct ptd_session *s;
	uint8_t *buf;
	size_t nbuf;
	int err;                  /* errno of the first failed write */
	int started;              /* the first packet is out */
	uint64_t *tracks;         /* uuids described so far (open addressing) */
	size_t ntracks, tcap;
	struct name_ent *names;   /* interned slice names (open addressing) */
	size_t nnames, ncap;
	uint64_t next_iid;
	enum clock_kind clock;
	uint64_t insns;           /* instructions so far (CLOCK_INSNS) */
	/* the current run: one thread (or queue) until another one runs */
	int have_run;
	uint32_t run_queue;
	int32_t run_pid, run_tid;
	uint64_t run_uuid, run_ts;
	unsigned depth;           /* open calls, MAX_DEPTH and beyond counted */
};

static void put_varint(struct msg *m, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		m->b[m->n++] = c | (v ? 0x80 : 0);
	} while (v);
}

static void put_key(struct msg *m, unsigned field, unsigned wire)
{
	put_varint(m, (uint64_t)field << 3 | wire);
}

static void put_uint(struct msg *m, unsigned field, uint64_t v)
{
	put_key(m, field, WIRE_VARINT);
	put_varint(m, v);
}

/* int32 fields: negative values are sign-extended to 64 bits */
static void put_int32(struct msg *m, unsigned field, int32_t v)
{
	put_uint(m, field, (uint64_t)(int64_t)v);
}

static void put_bytes(struct msg *m, unsigned field, const void *p, size_t n)
{
	put_key(m, field, WIRE_LEN);
	put_varint(m, n);
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put_str(struct msg *m, unsigned field, const char *s)
{
	put_bytes(m, field, s, strnlen(s, NAME_MAX_LEN));
}

static void put_msg(struct msg *m, unsigned field, const struct msg *in)
{
	put_bytes(m, field, in->b, in->n);
}

static void flush_out(struct perfetto *p)
{
	if (p->nbuf && !p->err && fwrite(p->buf, 1, p->nbuf, p->out) != p->nbuf)
		p->err = errno ? errno : EIO;
	p->nbuf = 0;
}

static void write_out(struct perfetto *p, const void *data, size_t n)
{
	if (p->nbuf + n > OUT_BUF)
		flush_out(p);
	memcpy(p->buf + p->nbuf, data, n);
	p->nbuf += n;
}

/* Finishes a packet (sequence id, flags) and writes it as Trace.packet. */
static void emit_packet(struct perfetto *p, struct msg *pkt, unsigned flags)
{
	struct msg hdr = { .n = 0 };

	put_uint(pkt, PKT_SEQ_ID, SEQ_ID);
	if (!p->started) {
		/* the sequence starts from an empty interning table */
		flags |= SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE;
		p->started = 1;
	}
	if (flags)
		put_uint(pkt, PKT_SEQ_FLAGS, flags);
	put_key(&hdr, TRACE_PACKET, WIRE_LEN);
	put_varint(&hdr, pkt->n);
	write_out(p, hdr.b, hdr.n);
	write_out(p, pkt->b, pkt->n);
}

static uint64_t hash64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	return v ^ (v >> 33);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* Adds uuid to the described set; 1 if it was new, 0 if known, -1 when
 * out of memory (the descriptor is then written again next time). */
static int track_new(struct perfetto *p, uint64_t uuid)
{
	size_t i;

	if (2 * (p->ntracks + 1) > p->tcap) {
		size_t cap = p->tcap ? 2 * p->tcap : 64;
		uint64_t *t = calloc(cap, sizeof(*t));

		if (!t)
			return -1;
		for (size_t k = 0; k < p->tcap; k++) {
			if (!p->tracks[k])
				continue;
			for (i = hash64(p->tracks[k]) & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = p->tracks[k];
		}
		free(p->tracks);
		p->tracks = t;
		p->tcap = cap;
	}
	for (i = hash64(uuid) & (p->tcap - 1); p->tracks[i]; i = (i + 1) & (p->tcap - 1))
		if (p->tracks[i] == uuid)
			return 0;
	p->tracks[i] = uuid;
	p->ntracks++;
	return 1;
}

/* Interning id of name; *fresh = 1 when it is new (its EventName goes
 * into this packet).  0 when out of memory: the name is then inline. */
static uint64_t intern(struct perfetto *p, const char *name, int *fresh)
{
	size_t i;

	*fresh = 0;
	if (2 * (p->nnames + 1) > p->ncap) {
		size_t cap = p->ncap ? 2 * p->ncap : 256;
		struct name_ent *t = calloc(cap, sizeof(*t));

		if (!t)
			return 0;
		for (size_t k = 0; k < p->ncap; k++) {
			if (!p->names[k].name)
				continue;
			for (i = hash_str(p->names[k].name) & (cap - 1); t[i].name;
			     i = (i + 1) & (cap - 1))
				;
			t[i] = p->names[k];
		}
		free(p->names);
		p->names = t;
		p->ncap = cap;
	}
	for (i = hash_str(name) & (p->ncap - 1); p->names[i].name; i = (i + 1) & (p->ncap - 1))
		if (!strcmp(p->names[i].name, name))
			return p->names[i].iid;
	if (!(p->names[i].name = strdup(name)))
		return 0;
	p->names[i].iid = ++p->next_iid;
	p->nnames++;
	*fresh = 1;
	return p->names[i].iid;
}

static void describe_process(struct perfetto *p, int32_t pid)
{
	struct msg pkt = { .n = 0 }, td = { .n = 0 }, pd = { .n = 0 };
	const char *name = ptd_thread_name(p->s, pid);

	if (track_new(p, UUID_PROCESS | (uint32_t)pid) != 1)
		return;
	put_int32(&pd, PROC_PID, pid);
	if (name)
		put_str(&pd, PROC_NAME, name);
	put_uint(&td, TD_UUID, UUID_PROCESS | (uint32_t)pid);
	put_msg(&td, TD_PROCESS, &pd);
	put_msg(&pkt, PKT_TRACK_DESC, &td);
	emit_packet(p, &pkt, 0);
}

/* Makes the current run's track known (described once per trace). */
static void describe_run(struct perfetto *p, const struct ptd_event *ev)
{
	struct msg pkt = { .n = 0 }, td = { .n = 0 }, th = { .n = 0 };
	char name[64];

	if (p->run_tid < 0) {
		p->run_uuid = UUID_QUEUE | p->run_queue;
		if (track_new(p, p->run_uuid) != 1)
			return;
		if (ev->cpu >= 0)
			snprintf(name, sizeof(name), "trace queue %u (cpu %d)",
				 (unsigned)p->run_queue, (int)ev->cpu);
		else
			snprintf(name, sizeof(name), "trace queue %u", (unsigned)p->run_queue);
		put_uint(&td, TD_UUID, p->run_uuid);
		put_bytes(&td, TD_NAME, name, strlen(name));
	} else {
		const char *tname = ptd_thread_name(p->s, p->run_tid);
		/* a thread whose process is unknown is its own process */
		int32_t pid = p->run_pid >= 0 ? p->run_pid : p->run_tid;

		p->run_uuid = UUID_THREAD | (uint64_t)(uint32_t)pid << 32 |
			      (uint32_t)p->run_tid;
		describe_process(p, pid);
		if (track_new(p, p->run_uuid) != 1)
			return;
		put_int32(&th, THR_PID, pid);
		put_int32(&th, THR_TID, p->run_tid);
		if (tname)
			put_str(&th, THR_NAME, tname);
		put_uint(&td, TD_UUID, p->run_uuid);
		put_msg(&td, TD_THREAD, &th);
	}
	put_msg(&pkt, PKT_TRACK_DESC, &td);
	emit_packet(p, &pkt, 0);
}

static void track_event(struct perfetto *p, unsigned type, const char *name)
{
	struct msg pkt = { .n = 0 }, te = { .n = 0 }, in = { .n = 0 }, en = { .n = 0 };
	int fresh = 0;

	put_uint(&pkt, PKT_TIMESTAMP, p->run_ts);
	put_uint(&te, TE_TYPE, type);
	put_uint(&te, TE_TRACK_UUID, p->run_uuid);
	if (name) {
		uint64_t iid = intern(p, name, &fresh);

		if (iid)
			put_uint(&te, TE_NAME_IID, iid);
		else
			put_str(&te, TE_NAME, name);
	}
	put_msg(&pkt, PKT_TRACK_EVENT, &te);
	if (fresh) {
		put_uint(&en, EVNAME_IID, p->next_iid);
		put_str(&en, EVNAME_NAME, name);
		put_msg(&in, INTERNED_EVENT_NAMES, &en);
		put_msg(&pkt, PKT_INTERNED, &in);
	}
	emit_packet(p, &pkt, SEQ_NEEDS_INCREMENTAL_STATE);
}

struct perfetto *perfetto_new(FILE *out, struct ptd_session *s)
{
	struct perfetto *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (!(p->buf = malloc(OUT_BUF))) {
		free(p);
		return NULL;
	}
	p->out = out;
	p->s = s;
	return p;
}

void perfetto_return(struct perfetto *p)
{
	if (!p->depth)
		return;   /* from a function entered before the trace began */
	if (--p->depth < MAX_DEPTH)
		track_event(p, TYPE_SLICE_END, NULL);
}

void perfetto_break(struct perfetto *p)
{
	while (p->depth)
		perfetto_return(p);
}

int perfetto_starts_run(const struct perfetto *p, const struct ptd_event *ev)
{
	return !p->have_run || ev->queue != p->run_queue ||
	       (ev->tid >= 0 && (ev->tid != p->run_tid || ev->pid != p->run_pid));
}

int perfetto_event(struct perfetto *p, const struct ptd_event *ev)
{
	int time_valid = !!(ev->flags & PTD_EVF_TIME_VALID);
	int new_run = 0;

	if (ev->kind == PTD_EV_INSN) {
		p->insns++;
		if (p->clock == CLOCK_UNSET)
			p->clock = time_valid ? CLOCK_TIME : CLOCK_INSNS;
	}
	if (perfetto_starts_run(p, ev)) {
		new_run = p->have_run;
		perfetto_break(p);
		p->have_run = 1;
		p->run_queue = ev->queue;
		p->run_tid = ev->tid;
		p->run_pid = ev->pid;
		describe_run(p, ev);
		if (p->clock == CLOCK_TIME && time_valid)
			p->run_ts = ev->time;  /* queues are not in time order */
	}
	if (p->clock == CLOCK_TIME && time_valid && ev->time > p->run_ts)
		p->run_ts = ev->time;
	else if (p->clock == CLOCK_INSNS)
		p->run_ts = p->insns;
	return new_run;
}

void perfetto_call(struct perfetto *p, const char *name)
{
	if (p->depth++ < MAX_DEPTH)
		track_event(p, TYPE_SLICE_BEGIN, name);
}

void perfetto_instant(struct perfetto *p, const char *name)
{
	if (p->have_run)
		track_event(p, TYPE_INSTANT, name);
}

int perfetto_finish(struct perfetto *p)
{
	perfetto_break(p);
	flush_out(p);
	if (p->err) {
		errno = p->err;
		return -1;
	}
	return 0;
}

void perfetto_free(struct perfetto *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncap; i++)
		free(p->names[i].name);
	free(p->names);
	free(p->tracks);
	free(p->buf);
	free(p);
}
