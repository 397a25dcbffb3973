/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* memmem */
#include "intelpt.h"
#include "intelpt_resync.h"
#include "imgstore.h"
#include "intel_pt_info.h"
#include "machines.h"
#include "sideband.h"
#include "util.h"

#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* events queued at first; the queue grows while events are held back */
#define FIFO_SIZE 16u
/* at most this many events held back before a bad packet (hold_at) */
#define HOLD_MAX 65536u
/* at most this many instructions from the error to the FUP IP (sink_fup) */
#define SINK_MAX 64u

enum qstate { Q_SYNC, Q_DECODE, Q_DONE };

struct ipt_backend {
	struct backend base;
	struct intelpt_params p;
	struct intelpt_queue *queues;
	size_t nqueues, qi;           /* current queue */
	struct imgstore *st;
	const struct sideband *sb;

	struct pt_insn_decoder *dec;
	struct pt_image *image;
	enum qstate state;
	int status;                   /* libipt status bits */
	uint64_t last_sync;           /* offset of the last sync, to see progress */

	/* decode context, read by the memory callback */
	int32_t pid, tid;             /* the host thread on the queue's CPU */
	int32_t epid, etid;           /* the thread events name: the host's, or
				       * with nr the guest thread it runs */
	int nr;                       /* PIP.NR: VMX non-root, guest code */
	int mode_known;               /* mode: the execution mode since sync */
	uint8_t mode;
	uint64_t time;                /* perf ns, IMGSTORE_TIME_UNKNOWN if none */
	uint64_t tsc;
	uint64_t next_switch;         /* re-ask the sideband at this time */
	uint64_t last_ip;             /* last instruction decoded */
	uint64_t loop_off;            /* trace offset of the last instruction */
	uint32_t loop_insns;          /* instructions since that offset moved */
	uint32_t last_image;          /* version of the last code read */

	/* memory-read failure details, for the error or gap event */
	int mem_failed;
	int mem_rc;                   /* IMGSTORE_* code */
	uint64_t mem_fail_ip;
	struct imgstore_hit mem_hit;
	char mem_err[512];

	/* packets this libipt does not know (newer CPUs): the queue is
	 * decoded again over a copy with PADs in their place */
	uint8_t *padded;              /* that copy, or NULL */
	uint64_t q_events;            /* events pushed for the current queue */
	uint64_t skip;                /* events to drop: handed out already */
	int newer_said;               /* the full explanation was given */

	/* --resync-on-error: after an error, dec decodes a splice (the
	 * trace from the next IP packet to the next PSB, after a PSB+
	 * written for it) while the queue's decoder waits in qdec */
	struct pt_insn_decoder *qdec;
	struct intelpt_splice splice;
	struct ptd_event *err_ev;     /* the error just pushed, or NULL */
	uint64_t ok_off;              /* trace offset after the last
				       * instruction or event libipt gave */
	uint64_t err_insn;            /* the instruction listed with the
				       * error just pushed, or 0 */
	int err_code;                 /* libipt's code of that error */
	uint64_t drop_ip;             /* a splice resumed in place: its first
				       * instruction, listed before the error */
	int err_went_on;              /* err_insn is where the flow went on
				       * after the instruction listed before
				       * the error, not listed itself */

	/* a packet perf's decoder rejects (a reserved IP compression) is
	 * the decoder's next: perf reports it as soon as it reads it, before
	 * the instructions that lead to the branch that needs it, which
	 * libipt 2.0 fails at.  Events from hold_from on are held back
	 * until that error comes (or not: then they go out as they are) */
	uint64_t hold_at;             /* the packet's trace offset + 1, or 0 */
	uint64_t ahead_off;           /* ok_off when last looked ahead + 1 */
	unsigned hold_from;           /* first event held back */
	unsigned hold_split;          /* after the last held event that used
				       * trace: where perf reports the error */
	uint64_t hold_fup;            /* the FUP IP of a PSB+ right before
				       * the packet (0: none): perf reaches
				       * it after the last TNT bit, then
				       * reads the packet */
	int fup_seen;                 /* hold_split is at hold_fup */
	int hold_ok;                  /* libipt fails only at the branch
				       * (2.0; 2.1 reports a bad packet read
				       * ahead itself, went_on_to) */
	/* libipt 2.1 reports such a packet after the last instruction that
	 * used a TNT bit; with a PSB+ right before the packet perf walks on
	 * to that PSB+'s FUP IP first.  The error (counter sink_at) and the
	 * events after it are held back until the flow lists sink_fup */
	uint64_t sink_fup;            /* 0: nothing held */
	uint64_t last_end;            /* the end of the last instruction listed */
	uint64_t off_ip;              /* where the flow went when tracing
				       * stopped (perf's IP while it is off),
				       * or 0 */
	unsigned sink_at, sink_left;  /* instructions to wait for at most */

	struct ptd_event *fifo;       /* ring of cap events (a power of 2) */
	char (*msg)[640];             /* messages of queued events, by slot */
	unsigned cap, head, tail;
	struct ptd_event dropped;     /* where skipped events are written */
	char dropped_msg[640];
	char errmsg[512];
};

uint64_t intelpt_tsc_to_perf(const struct intelpt_params *p, uint64_t tsc)
{
	uint64_t quot, rem;

	if (!p->have_time)
		return IMGSTORE_TIME_UNKNOWN;
	if (p->time_shift >= 64)
		return p->time_zero + tsc * p->time_mult;
	quot = tsc >> p->time_shift;
	rem = tsc & ((1ull << p->time_shift) - 1);
	return p->time_zero + quot * p->time_mult +
	       ((rem * p->time_mult) >> p->time_shift);
}

uint64_t intelpt_perf_to_tsc(const struct intelpt_params *p, uint64_t ns)
{
	uint64_t t, quot, rem;

	if (!p->have_time || p->time_shift >= 64)
		return 0;
	t = ns - p->time_zero;
	quot = t / p->time_mult;
	rem = t % p->time_mult;
	return (quot << p->time_shift) + (rem << p->time_shift) / p->time_mult;
}

int intelpt_params_cpu(struct intelpt_params *p, const char *spec)
{
	unsigned f, m, s = 0;
	int n;

	if (!strcmp(spec, "none")) {
		p->have_cpu = 0;
		return 0;
	}
	n = sscanf(spec, "%u/%u/%u", &f, &m, &s);
	if (n < 2 || f > 0xffff || m > 0xff || s > 0xff)
		return PTD_ERR_INVAL;
	p->have_cpu = 1;
	p->family = (uint16_t)f;
	p->model = (uint8_t)m;
	p->stepping = (uint8_t)s;
	return 0;
}

int intelpt_cpu_known(const struct intelpt_params *p)
{
	struct pt_cpu cpu;
	struct pt_errata errata;

	if (!p->have_cpu)
		return 1;
	memset(&cpu, 0, sizeof(cpu));
	cpu.vendor = pcv_intel;
	cpu.family = p->family;
	cpu.model = p->model;
	cpu.stepping = p->stepping;
	return pt_cpu_errata(&errata, &cpu) >= 0;
}

int intelpt_cpu_plausible(const struct intelpt_params *p)
{
	return (p->family == 6 && p->model >= 61) || p->family > 15;
}

void intelpt_libipt_version(char *buf, size_t len)
{
	struct pt_version v = pt_library_version();

	snprintf(buf, len, "%u.%u.%u%s%s", v.major, v.minor, v.patch,
		 v.ext && *v.ext ? "-" : "", v.ext ? v.ext : "");
}

int intelpt_params_from_perf(struct intelpt_params *p, const uint64_t *priv,
			     size_t npriv, uint64_t attr_config,
			     const char *cpuid, char *err, size_t errlen)
{
	struct intel_pt_info info;
	size_t n = intel_pt_info_unpack(priv, npriv, &info);

	memset(p, 0, sizeof(*p));
	if (n < INTELPT_INFO_PER_CPU_MMAPS + 1) {
		util_errf(err, errlen, "intel_pt AUXTRACE_INFO has %zu fields, "
			  "at least %d expected", npriv, INTELPT_INFO_PER_CPU_MMAPS + 1);
		return PTD_ERR_CORRUPT;
	}
	p->time_shift = info.time_shift;
	p->time_mult = info.time_mult;
	p->time_zero = info.time_zero;
	p->have_time = info.cap_user_time_zero && p->time_mult;
	if (n > INTELPT_INFO_MAX_NONTURBO_RATIO) {
		/* a mask of the attr config bits (perf: 0xf << 14) */
		uint64_t mtc_mask = info.mtc_freq_bits;
		uint64_t v = attr_config & mtc_mask;

		for (; mtc_mask && !(mtc_mask & 1); mtc_mask >>= 1)
			v >>= 1;
		p->mtc_freq = (uint8_t)(v & 0xf);
		p->cpuid_0x15_ebx = (uint32_t)info.tsc_ctc_ratio_n;
		p->cpuid_0x15_eax = (uint32_t)info.tsc_ctc_ratio_d;
		p->nom_freq = (uint8_t)info.max_non_turbo_ratio;
	}
	if (cpuid) {
		char vendor[32];
		unsigned f, m, s;

		if (sscanf(cpuid, "%31[^,],%u,%u,%u", vendor, &f, &m, &s) == 4 &&
		    !strcmp(vendor, "GenuineIntel")) {
			p->have_cpu = 1;
			p->family = (uint16_t)f;
			p->model = (uint8_t)m;
			p->stepping = (uint8_t)s;
		}
	}
	return 0;
}

/* libipt reads code through this: the image store at the current time, in
 * the current thread's address space. */
static int read_mem(uint8_t *buf, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *ctx)
{
	struct ipt_backend *b = ctx;
	struct imgstore_hit hit;
	int n;

	int32_t space = b->nr ? intelpt_space(&b->p, b->pid, b->tid, b->time, 1)
			      : b->pid;

	(void)asid;
	memset(&hit, 0, sizeof(hit));
	n = imgstore_read(b->st, space, ip, b->time, buf, size, &hit);
	if (n > 0) {
		b->last_image = (uint32_t)hit.version_id;
		return n;
	}
	b->mem_failed = 1;
	b->mem_rc = n;
	b->mem_hit = hit;
	b->mem_fail_ip = ip;
	if (b->nr && b->p.machines) {
		char why[320];

		machines_explain(b->p.machines, b->p.guest_code, b->pid, b->tid,
				 b->time, why, sizeof(why));
		if (space == IMGSTORE_NO_SPACE)
			snprintf(b->mem_err, sizeof(b->mem_err), "%s", why);
		else
			snprintf(b->mem_err, sizeof(b->mem_err), "%s (%s)",
				 imgstore_last_error(b->st), why);
	} else {
		snprintf(b->mem_err, sizeof(b->mem_err), "%s",
			 imgstore_last_error(b->st));
	}
	return -pte_nomap;
}

int32_t intelpt_space(const struct intelpt_params *p, int32_t host_pid,
		      int32_t host_tid, uint64_t t, int nr)
{
	if (!nr || !p->machines)
		return host_pid;
	return machines_guest_space(p->machines, p->guest_code, host_pid,
				    host_tid, t);
}

/* The decoder's position in the queue's bytes (inside a splice: where
 * those bytes came from). */
static uint64_t trace_offset(const struct ipt_backend *b)
{
	const struct intelpt_splice *sp = &b->splice;
	uint64_t off = 0;

	if (!b->dec)
		return 0;
	pt_insn_get_offset(b->dec, &off);
	if (b->qdec)
		off = off < sp->hdr ? sp->at : sp->copy_from + (off - sp->hdr);
	return off;
}

/* Doubles the event ring, keeping the queued events (and their
 * messages) in order.  Returns 0 or -1 (no memory). */
static int grow(struct ipt_backend *b)
{
	unsigned cap = b->cap * 2;
	struct ptd_event *fifo = calloc(cap, sizeof(*fifo));
	char (*msg)[640] = calloc(cap, sizeof(*msg));

	if (!fifo || !msg) {
		free(fifo);
		free(msg);
		return -1;
	}
	for (unsigned i = b->head; i != b->tail; i++) {
		struct ptd_event *from = &b->fifo[i & (b->cap - 1)], *to = &fifo[i & (cap - 1)];

		*to = *from;
		if (from->msg == b->msg[i & (b->cap - 1)]) {
			memcpy(msg[i & (cap - 1)], from->msg, sizeof(msg[0]));
			to->msg = msg[i & (cap - 1)];
		}
		if (b->err_ev == from)
			b->err_ev = to;
	}
	free(b->fifo);
	free(b->msg);
	b->fifo = fifo;
	b->msg = msg;
	b->cap = cap;
	return 0;
}

static struct ptd_event *push(struct ipt_backend *b, int kind)
{
	struct ptd_event *ev;

	if (b->hold_at && b->tail - b->hold_from >= HOLD_MAX)
		b->hold_at = 0;  /* too far ahead: in the decoder's order */
	if (b->sink_fup && kind != PTD_EV_INSN)
		b->sink_fup = 0;  /* not straight on to the FUP IP */
	if (b->tail - b->head >= b->cap && grow(b) < 0)
		return NULL;
	b->q_events++;
	ev = b->skip ? &b->dropped : &b->fifo[b->tail & (b->cap - 1)];
	memset(ev, 0, sizeof(*ev));
	ev->kind = (uint16_t)kind;
	ev->queue = (uint32_t)b->qi;
	ev->cpu = b->queues[b->qi].cpu;
	ev->pid = b->epid;
	ev->tid = b->etid;
	if (b->time != IMGSTORE_TIME_UNKNOWN) {
		ev->time = b->time;
		ev->flags |= PTD_EVF_TIME_VALID;
	}
	ev->tsc = b->tsc;
	ev->offset = trace_offset(b);
	if (b->skip)
		b->skip--;
	else
		b->tail++;
	if (b->hold_at && kind != PTD_EV_INSN && kind != PTD_EV_ERROR)
		b->hold_split = b->tail;
	return ev;
}

static char *msgbuf(struct ipt_backend *b, struct ptd_event *ev)
{
	char *m = ev == &b->dropped ? b->dropped_msg : b->msg[(size_t)(ev - b->fifo)];

	ev->msg = m;
	return m;
}

/* The thread events name changes: the host's, or in guest code the
 * guest thread its vcpu runs (as perf names guest samples). */
static void update_thread(struct ipt_backend *b)
{
	int32_t pid = b->pid, tid = b->tid;
	struct ptd_event *ev;

	if (b->nr)
		machines_guest_thread(b->p.machines, b->pid, b->tid, b->time,
				      &pid, &tid);
	if (pid == b->epid && tid == b->etid)
		return;
	b->epid = pid;
	b->etid = tid;
	ev = push(b, PTD_EV_SWITCH);
	if (ev) {
		ev->pid = pid;
		ev->tid = tid;
	}
}

/* Follows the sideband: which thread runs now on this queue's CPU. */
static void update_context(struct ipt_backend *b)
{
	const struct intelpt_queue *q = &b->queues[b->qi];
	int32_t pid, tid;
	uint64_t t;

	if (!b->sb || q->cpu < 0 || b->time == IMGSTORE_TIME_UNKNOWN)
		return;
	if (b->time < b->next_switch && b->next_switch != 0)
		return;
	t = b->time;
	if (sideband_task_at(b->sb, q->cpu, t, &pid, &tid) == 0) {
		b->pid = pid;
		b->tid = tid;
	}
	update_thread(b);
	b->next_switch = sideband_next_switch(b->sb, q->cpu, t);
	if (b->nr) {
		uint64_t g = machines_next_switch(b->p.machines, b->pid, b->tid, t);

		if (g < b->next_switch)
			b->next_switch = g;
	}
}

static void update_time(struct ipt_backend *b)
{
	uint64_t tsc;
	uint32_t lmtc, lcyc;

	if (pt_insn_time(b->dec, &tsc, &lmtc, &lcyc) < 0)
		return;
	b->tsc = tsc;
	b->time = intelpt_tsc_to_perf(&b->p, tsc);
	update_context(b);
}

int intelpt_skl014(const struct intelpt_params *p)
{
	struct pt_config cfg;

	intelpt_config(p, &cfg, NULL, NULL);
	return cfg.addr_filter.config.addr_cfg && cfg.errata.skl014;
}

void intelpt_config(const struct intelpt_params *p, struct pt_config *cfg,
		    const uint8_t *begin, const uint8_t *end)
{
	pt_config_init(cfg);
	cfg->begin = (uint8_t *)begin;
	cfg->end = (uint8_t *)end;
	if (p->have_cpu) {
		cfg->cpu.vendor = pcv_intel;
		cfg->cpu.family = p->family;
		cfg->cpu.model = p->model;
		cfg->cpu.stepping = p->stepping;
		if (pt_cpu_errata(&cfg->errata, &cfg->cpu) < 0)
			memset(&cfg->errata, 0, sizeof(cfg->errata));
	}
	for (int n = 0; n < 4; n++)
		cfg->addr_filter.config.addr_cfg |= (uint64_t)(p->addr_cfg[n] & 0xf) << (4 * n);
	cfg->addr_filter.addr0_a = p->addr_a[0];
	cfg->addr_filter.addr0_b = p->addr_b[0];
	cfg->addr_filter.addr1_a = p->addr_a[1];
	cfg->addr_filter.addr1_b = p->addr_b[1];
	cfg->addr_filter.addr2_a = p->addr_a[2];
	cfg->addr_filter.addr2_b = p->addr_b[2];
	cfg->addr_filter.addr3_a = p->addr_a[3];
	cfg->addr_filter.addr3_b = p->addr_b[3];
	cfg->mtc_freq = p->mtc_freq;
	cfg->nom_freq = p->nom_freq;
	cfg->cpuid_0x15_eax = p->cpuid_0x15_eax;
	cfg->cpuid_0x15_ebx = p->cpuid_0x15_ebx;
}

/* The bytes the current queue is decoded from: its own, or the copy
 * with PADs for packets this libipt does not know.  Returns 0 or a
 * negative enum ptd_error. */
static int queue_bytes(const struct ipt_backend *b, const uint8_t **data)
{
	int rc = intelpt_queue_data(&b->queues[b->qi], data);

	if (!rc && b->padded)
		*data = b->padded;
	return rc;
}

static int start_queue(struct ipt_backend *b)
{
	const struct intelpt_queue *q = &b->queues[b->qi];
	struct pt_config cfg;
	const uint8_t *data;
	int rc;

	rc = queue_bytes(b, &data);
	if (rc)
		return rc;
	intelpt_config(&b->p, &cfg, data, data + q->size);

	b->dec = pt_insn_alloc_decoder(&cfg);
	if (!b->dec)
		return PTD_ERR_NOMEM;
	rc = pt_insn_set_image(b->dec, b->image);
	if (rc < 0)
		return PTD_ERR_DECODE;
	b->state = Q_SYNC;
	b->pid = b->epid = q->pid;
	b->tid = b->etid = q->tid;
	b->nr = 0;
	b->time = IMGSTORE_TIME_UNKNOWN;
	b->tsc = 0;
	b->next_switch = 0;
	b->last_sync = UINT64_MAX;
	b->q_events = 0;
	b->hold_at = 0;
	b->ahead_off = 0;
	return 0;
}

/* Ends a splice: the queue's decoder takes over again. */
static void drop_splice(struct ipt_backend *b)
{
	if (b->qdec) {
		pt_insn_free_decoder(b->dec);
		b->dec = b->qdec;
		b->qdec = NULL;
	}
	b->drop_ip = 0;
	free(b->splice.buf);
	memset(&b->splice, 0, sizeof(b->splice));
}

static void end_queue(struct ipt_backend *b)
{
	b->hold_at = 0;
	b->sink_fup = 0;
	drop_splice(b);
	pt_insn_free_decoder(b->dec);
	b->dec = NULL;
	free(b->padded);
	b->padded = NULL;
	b->skip = 0;
	b->qi++;
}

/* Code the store has a range for but cannot give (never captured, file
 * missing or different, several versions and no time to choose) is a gap
 * in the flow, not a decode error: it names the range, its time window and
 * the reason. */
static int gap_event(struct ipt_backend *b)
{
	const struct imgstore_hit *h = &b->mem_hit;
	struct ptd_event *ev;
	char *m, from[32], to[32];

	if (b->mem_rc != IMGSTORE_NOT_CAPTURED && b->mem_rc != IMGSTORE_AMBIGUOUS &&
	    b->mem_rc != IMGSTORE_IO)
		return 0;
	ev = push(b, PTD_EV_GAP);
	b->err_ev = ev;
	if (!ev)
		return 1;
	m = msgbuf(b, ev);
	ev->error = PTD_ERR_NO_IMAGE;
	ev->ip = h->len ? h->start : b->mem_fail_ip;
	ev->addr = h->len ? h->start + h->len : b->mem_fail_ip;
	snprintf(from, sizeof(from), "%" PRIu64, h->valid_from);
	if (h->valid_to == IMGSTORE_FOREVER)
		snprintf(to, sizeof(to), "the end");
	else
		snprintf(to, sizeof(to), "%" PRIu64, h->valid_to);
	snprintf(m, 640, "no code for [%#" PRIx64 ", %#" PRIx64 ") valid from %s "
		 "to %s, needed at %#" PRIx64 ": %.400s; decoding resumes at the next "
		 "sync point", ev->ip, ev->addr, from, to, b->mem_fail_ip, b->mem_err);
	b->mem_failed = 0;
	return 1;
}

/* A packet of a newer Intel PT than the linked libipt may know (Intel SDM
 * vol. 3, "Trace Packets"): Event Trace's CFE and EVD (libipt >= 2.1
 * decodes them) and TRIG (no libipt release does).  Dropping one keeps
 * the control flow unless an IP packet belongs to it (its IP bit). */
struct newer_packet {
	const char *name;
	size_t size;
	int skippable;
	int in_21;                    /* libipt 2.1 decodes it */
};

/* Whether the bytes at p (left of them) start such a packet. */
static int newer_packet(const uint8_t *p, size_t left, struct newer_packet *np)
{
	memset(np, 0, sizeof(*np));
#ifdef PTD_LIBIPT_EVENT_TRACE
	/* this libipt decodes Event Trace: its errors there are its own */
	if (left >= 2 && p[0] == 0x02 && (p[1] == 0x13 || p[1] == 0x53))
		return 0;
#endif
	if (left >= 3 && p[0] == 0x02 && p[1] == 0x13) {
		*np = (struct newer_packet){ "CFE packet (Event Trace)", 4,
					     !(p[2] & 0x80), 1 };
	} else if (left >= 3 && p[0] == 0x02 && p[1] == 0x53) {
		*np = (struct newer_packet){ "EVD packet (Event Trace)", 11, 1, 1 };
	} else if (left >= 2 && p[0] == 0xd9) {
		*np = (struct newer_packet){ "TRIG packet", p[1] & 0x40 ? 5 : 3,
					     !(p[1] & 0x80), 0 };
	} else {
		return 0;
	}
	return np->size <= left;
}

/* Counts the packets libipt does not know in a queue's bytes that can be
 * dropped, and writes PADs in their place. */
static uint64_t pad_newer(const struct intelpt_params *p, uint8_t *data,
			  size_t size)
{
	struct pt_packet_decoder *dec;
	struct newer_packet np;
	struct pt_packet pk;
	struct pt_config cfg;
	uint64_t n = 0, off;
	int rc;

	intelpt_config(p, &cfg, data, data + size);
	dec = pt_pkt_alloc_decoder(&cfg);
	rc = dec ? pt_pkt_sync_forward(dec) : -pte_nomem;
	while (rc >= 0) {
		off = 0;
		pt_pkt_get_offset(dec, &off);
		rc = pt_pkt_next(dec, &pk, sizeof(pk));
		if (rc != -pte_bad_opc)
			continue;
		if (!newer_packet(data + off, size - off, &np)) {
			rc = pt_pkt_sync_forward(dec);
			continue;
		}
		if (np.skippable) {
			memset(data + off, 0, np.size);  /* PAD */
			n++;
		}
		rc = pt_pkt_sync_set(dec, off + np.size);
	}
	pt_pkt_free_decoder(dec);
	return n;
}

/* libipt met a packet it does not know.  If it is one of a newer Intel PT
 * that carries no IP, the queue is decoded again from its start over a
 * copy with PADs in place of all such packets, dropping the events handed
 * out already, after one event that says so.  Returns 1 when it did;
 * otherwise, if it is such a packet, names it in m (len bytes), and
 * returns 0. */
static int skip_newer(struct ipt_backend *b, char *m, size_t len)
{
	const struct intelpt_queue *q = &b->queues[b->qi];
	struct newer_packet np;
	struct ptd_event *ev;
	const uint8_t *data;
	uint8_t *padded;
	uint64_t n, done, off = 0;
	char ver[64], why[160];

	if (queue_bytes(b, &data) < 0)
		return 0;
	off = trace_offset(b);
	if (off >= q->size || !newer_packet(data + off, q->size - off, &np))
		return 0;
	intelpt_libipt_version(ver, sizeof(ver));
	snprintf(why, sizeof(why), "%s not supported by libipt %s; %s", np.name,
		 ver, np.in_21 ? "newer CPUs need libipt >= 2.1" :
		 "no libipt release decodes it yet");
	if (!np.skippable || b->padded || !(padded = malloc(q->size))) {
		snprintf(m, len, "%s (an IP packet belongs to it: decoding "
			 "resumes at the next sync point)", why);
		return 0;
	}
	memcpy(padded, data, q->size);
	n = pad_newer(&b->p, padded, q->size);
	done = b->q_events;
	ev = push(b, PTD_EV_LOST);
	if (ev) {
		ev->error = PTD_ERR_UNSUPPORTED;
		ev->addr = n;
		snprintf(msgbuf(b, ev), 640, "%s%s%" PRIu64 " packet%s libipt does "
			 "not decode skipped in this trace queue; the control "
			 "flow around them decodes on", b->newer_said ? "" : why,
			 b->newer_said ? "" : ": ", n, n == 1 ? "" : "s");
		b->newer_said = 1;
	}
	drop_splice(b);
	pt_insn_free_decoder(b->dec);
	b->dec = NULL;
	b->padded = padded;
	if (start_queue(b) < 0) {
		end_queue(b);
		return 1;
	}
	b->skip = done;
	return 1;
}

/* Moves the queued event at counter from to counter to (either way),
 * the events between moving up or down one place; its message moves
 * with it.  Returns its new place. */
static struct ptd_event *move_event(struct ipt_backend *b, unsigned from, unsigned to)
{
	unsigned mask = b->cap - 1;
	struct ptd_event ev = b->fifo[from & mask];
	int own = ev.msg == b->msg[from & mask], dir = (int)(to - from) > 0 ? 1 : -1;
	char m[640];

	if (own)
		memcpy(m, b->msg[from & mask], sizeof(m));
	for (unsigned i = from; i != to; i += (unsigned)dir) {
		struct ptd_event *dst = &b->fifo[i & mask];
		const struct ptd_event *src = &b->fifo[(i + (unsigned)dir) & mask];

		*dst = *src;
		if (src->msg == b->msg[(i + (unsigned)dir) & mask]) {
			memcpy(b->msg[i & mask], src->msg, sizeof(m));
			dst->msg = b->msg[i & mask];
		}
	}
	b->fifo[to & mask] = ev;
	if (own) {
		memcpy(b->msg[to & mask], m, sizeof(m));
		b->fifo[to & mask].msg = b->msg[to & mask];
	}
	return &b->fifo[to & mask];
}

/* Moves the event just queued (an error) back to counter at, before the
 * events queued since; perf's IP for it is the first of those.  Returns
 * its new place. */
static struct ptd_event *hoist(struct ipt_backend *b, unsigned at)
{
	unsigned last = b->tail - 1;

	if (at != last)
		b->fifo[last & (b->cap - 1)].ip = b->fifo[at & (b->cap - 1)].ip;
	return move_event(b, last, at);
}

/* Reports libipt's error pterr at ip.  Returns 1 when the queue was
 * restarted instead (skip_newer), 0 otherwise. */
static int error_event(struct ipt_backend *b, int pterr, uint64_t ip)
{
	struct ptd_event *ev;
	char newer[320] = "";
	char *m;
	/* the bad packet looked ahead at: perf's place for the error */
	int early = b->hold_at && (pterr == -pte_bad_query || pterr == -pte_bad_packet) &&
		    trace_offset(b) + 1 == b->hold_at;
	/* after a PSB+ right before the packet, perf reads it where the
	 * flow reaches the PSB+'s FUP IP: here, when no held instruction
	 * was there */
	unsigned split = b->hold_fup && !b->fup_seen ? b->tail : b->hold_split;

	b->hold_at = 0;
	b->err_ev = NULL;
	b->err_insn = 0;
	b->err_went_on = 0;
	b->err_code = pterr;
	if (pterr == -pte_nomap && b->mem_failed && gap_event(b))
		return 0;
	if (pterr == -pte_bad_opc && skip_newer(b, newer, sizeof(newer)))
		return 1;
	ev = push(b, PTD_EV_ERROR);
	b->err_ev = ev;
	if (!ev)
		return 0;
	m = msgbuf(b, ev);
	ev->error = PTD_ERR_DECODE;
	ev->ip = ip;
	if (pterr == -pte_nomap && b->mem_failed) {
		ev->error = PTD_ERR_NO_IMAGE;
		ev->ip = b->mem_fail_ip;
		snprintf(m, 640, "no code at %#" PRIx64 ": %s", b->mem_fail_ip,
			 b->mem_err);
	} else if (*newer) {
		ev->error = PTD_ERR_UNSUPPORTED;
		snprintf(m, 640, "%s", newer);
	} else {
		snprintf(m, 640, "%s", pt_errstr(pt_errcode(pterr)));
	}
	b->mem_failed = 0;
	if (early && ev != &b->dropped)
		b->err_ev = hoist(b, split);
	return 0;
}

int intelpt_convert_event(const struct intelpt_params *p,
			  const struct pt_event *pe, struct ptd_event *ev)
{
	/* libipt 2.1 reports the tracing state at each PSB+ as an enabled or
	 * disabled status update, and every libipt the MODE.Exec and PIP of
	 * each PSB+: the state, not a transition of the flow
	 * (docs/FORMATS.md has the exec-mode and paging rules) */
	if ((pe->type == ptev_enabled || pe->type == ptev_disabled ||
	     pe->type == ptev_exec_mode || pe->type == ptev_paging ||
	     pe->type == ptev_async_paging) && pe->status_update)
		return -1;
	switch (pe->type) {
	case ptev_enabled:
		ev->kind = PTD_EV_ENABLED;
		ev->ip = pe->variant.enabled.ip;
		break;
	case ptev_disabled:
		ev->kind = PTD_EV_DISABLED;
		ev->ip = pe->variant.disabled.ip;
		break;
	case ptev_async_disabled:
		ev->kind = PTD_EV_DISABLED;
		ev->ip = pe->variant.async_disabled.at;
		ev->addr = pe->variant.async_disabled.ip;
		break;
	case ptev_async_branch:
		ev->kind = PTD_EV_ASYNC;
		ev->ip = pe->variant.async_branch.from;
		ev->addr = pe->variant.async_branch.to;
		break;
	case ptev_paging:
		ev->kind = PTD_EV_PAGING;
		ev->addr = pe->variant.paging.cr3;
		break;
	case ptev_async_paging:
		ev->kind = PTD_EV_PAGING;
		ev->addr = pe->variant.async_paging.cr3;
		ev->ip = pe->variant.async_paging.ip;
		break;
	case ptev_overflow:
		ev->kind = PTD_EV_OVERFLOW;
		ev->ip = pe->variant.overflow.ip;
		break;
	case ptev_exec_mode:
		ev->kind = PTD_EV_EXEC_MODE;
		ev->ip = pe->variant.exec_mode.ip;
		ev->mode = intelpt_map_mode(pe->variant.exec_mode.mode);
		break;
	case ptev_tsx:
		ev->kind = PTD_EV_TSX;
		ev->ip = pe->variant.tsx.ip;
		ev->addr = (uint64_t)pe->variant.tsx.speculative |
			   (uint64_t)pe->variant.tsx.aborted << 1;
		break;
	case ptev_ptwrite:
		ev->kind = PTD_EV_PTWRITE;
		ev->ip = pe->variant.ptwrite.ip;
		ev->addr = pe->variant.ptwrite.payload;
		break;
	case ptev_exstop:
	case ptev_mwait:
	case ptev_pwre:
	case ptev_pwrx:
		ev->kind = PTD_EV_POWER;
		break;
	default:
		/* timing (tick, cbr), stop, vmcs, mnt: no flow event */
		return -1;
	}
	if (pe->ip_suppressed)
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
	if (pe->status_update)
		ev->flags |= PTD_EVF_STATUS;
	if (pe->has_tsc) {
		ev->tsc = pe->tsc;
		ev->time = intelpt_tsc_to_perf(p, pe->tsc);
		if (ev->time != IMGSTORE_TIME_UNKNOWN)
			ev->flags |= PTD_EVF_TIME_VALID;
		else
			ev->time = 0;
	}
	return 0;
}

static void convert_event(struct ipt_backend *b, const struct pt_event *pe)
{
	struct ptd_event tmp, *ev;
	int nr = b->nr;

	if (pe->type == ptev_paging)
		nr = pe->variant.paging.non_root;
	else if (pe->type == ptev_async_paging)
		nr = pe->variant.async_paging.non_root;
	if (nr != b->nr) {
		b->nr = nr;
		b->next_switch = 0;   /* guest switches count from now */
		update_thread(b);
	}
	if (pe->type == ptev_exec_mode) {
		uint8_t m = intelpt_map_mode(pe->variant.exec_mode.mode);

		/* libipt 2.1 reports a MODE.Exec only where the mode changes;
		 * 2.0.5 each one: the same rule for both (docs/FORMATS.md) */
		if (b->mode_known && m == b->mode && !pe->status_update)
			return;
		b->mode_known = 1;
		b->mode = m;
	}
	memset(&tmp, 0, sizeof(tmp));
	if (intelpt_convert_event(&b->p, pe, &tmp) < 0)
		return;
	ev = push(b, tmp.kind);
	if (!ev)
		return;
	ev->ip = tmp.ip;
	ev->addr = tmp.addr;
	ev->mode = tmp.mode;
	ev->flags |= tmp.flags;
	if (tmp.flags & PTD_EVF_TIME_VALID) {
		ev->time = tmp.time;
		ev->tsc = tmp.tsc;
	}
}

uint8_t intelpt_map_class(int c)
{
	switch ((enum pt_insn_class)c) {
	case ptic_other: return PTD_IC_OTHER;
	case ptic_call: return PTD_IC_CALL;
	case ptic_return: return PTD_IC_RETURN;
	case ptic_jump: return PTD_IC_JUMP;
	case ptic_cond_jump: return PTD_IC_COND_JUMP;
	case ptic_far_call: return PTD_IC_FAR_CALL;
	case ptic_far_return: return PTD_IC_FAR_RETURN;
	case ptic_far_jump: return PTD_IC_FAR_JUMP;
	case ptic_ptwrite: return PTD_IC_PTWRITE;
	default: return PTD_IC_UNKNOWN;
	}
}

uint8_t intelpt_map_mode(int m)
{
	return m == ptem_64bit ? PTD_MODE_64 : m == ptem_32bit ? PTD_MODE_32 :
	       m == ptem_16bit ? PTD_MODE_16 : PTD_MODE_UNKNOWN;
}

/* After an error (b->err_ev): decoding goes on at the next PSB, or with
 * --resync-on-error at the next IP packet (intelpt_resync.h) in a splice
 * decoded by a decoder of its own; the error event's addr then holds
 * that packet's trace offset.  perf.data inputs (resync_as_perf) resume
 * where perf's decoder does: past a bad packet in place, after a packet
 * that did not match, at a full IP after code it could not read. */
static void after_error(struct ipt_backend *b)
{
	const struct intelpt_queue *q = &b->queues[b->qi];
	struct intelpt_splice sp;
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	const uint8_t *data;
	uint64_t from, ovf_from, tsc = 0, insn = 0;
	uint32_t lmtc, lcyc;
	int how = 0;

	b->state = Q_SYNC;
	if (!b->p.resync_on_error || queue_bytes(b, &data) < 0)
		return;
	from = trace_offset(b);
	ovf_from = b->ok_off;
	if (b->qdec && from <= b->splice.at)
		from = b->splice.at + 1;  /* never the same resume point twice */
	if (b->qdec && ovf_from <= b->splice.at)
		ovf_from = b->splice.at + 1;
	if (pt_insn_time(b->dec, &tsc, &lmtc, &lcyc) < 0)
		tsc = 0;
	if (b->p.resync_as_perf) {
		insn = b->err_insn;
		how = RESYNC_BAD_PACKETS |
		      (b->err_code == -pte_bad_query ? RESYNC_READ : 0) |
		      (b->err_code == -pte_bad_packet ? RESYNC_FAILED_AT_BAD : 0) |
		      (b->err_code == -pte_nomap || b->err_code == -pte_bad_insn ?
		       RESYNC_NO_LAST_IP : 0);
	}
	if (intelpt_resync_splice(&b->p, data, q->size, from, ovf_from, tsc,
				  insn, how, &sp) <= 0)
		return;
	intelpt_config(&b->p, &cfg, sp.buf, sp.buf + sp.size);
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec || pt_insn_set_image(dec, b->image) < 0) {
		pt_insn_free_decoder(dec);
		free(sp.buf);
		return;
	}
	drop_splice(b);
	b->qdec = b->dec;
	b->dec = dec;
	b->splice = sp;
	b->drop_ip = sp.in_place && !b->err_went_on ? sp.ip : 0;
	if (b->err_ev) {
		b->err_ev->flags |= PTD_EVF_RESYNCED;
		if (b->err_ev->kind == PTD_EV_ERROR)
			b->err_ev->addr = sp.at;  /* a gap's addr is its end */
	}
}

/* Whether the decoder decodes a splice that ends at a PSB whose FUP says
 * where the flow was then: past the splice's last packet it decodes on
 * without trace (libipt's pts_eos promises that much) up to that IP,
 * where the decoder that syncs at the PSB takes over. */
static int in_cut_splice(const struct ipt_backend *b)
{
	return b->qdec && b->splice.have_end_ip;
}

/* A queue that ends where trace was lost (end_gap, a snapshot gap): a gap
 * event ends its flow.  After an instruction that left libipt without
 * trace (pts_eos) libipt decodes on without trace: the instruction it
 * gives next (not handed out) says where the flow went, so that a branch
 * view lists that last branch, as perf does. */
static void end_gap_event(struct ipt_backend *b)
{
	const struct intelpt_queue *q = &b->queues[b->qi];
	struct ptd_event *ev;
	struct pt_insn insn;
	uint64_t next = 0;

	if (!q->end_gap)
		return;
	memset(&insn, 0, sizeof(insn));
	if (b->dec && b->state == Q_DECODE && (b->status & pts_eos) &&
	    !(b->status & pts_event_pending) && b->last_ip &&
	    (pt_insn_next(b->dec, &insn, sizeof(insn)) >= 0 ||
	     insn.iclass != ptic_error))
		next = insn.ip;
	ev = push(b, PTD_EV_GAP);
	if (!ev)
		return;
	ev->ip = next;
	if (!next)
		ev->flags |= PTD_EVF_IP_SUPPRESSED;
	ev->msg = q->end_gap;
}

/* The decoder ran out of trace: at the end of a splice the queue's
 * decoder syncs at the PSB where the splice ends. */
static void data_end(struct ipt_backend *b)
{
	b->hold_at = 0;
	b->sink_fup = 0;
	if (b->qdec && b->splice.capped) {
		struct ptd_event *ev = push(b, PTD_EV_ERROR);

		if (ev) {
			ev->error = PTD_ERR_DECODE;
			ev->ip = b->last_ip;
			ev->offset = b->splice.end;
			snprintf(msgbuf(b, ev), 640, "no PSB in the %u bytes after the "
				 "resync point at %#" PRIx64 " (--resync-on-error "
				 "decodes that far): the trace up to the next PSB "
				 "is skipped", (unsigned)(b->splice.end - b->splice.copy_from),
				 b->splice.at);
		}
	}
	if (b->qdec) {
		drop_splice(b);
		b->state = Q_SYNC;
		return;
	}
	end_gap_event(b);
	end_queue(b);
}

/* Whether the decoder has run INTELPT_NELOOP_INSNS instructions without
 * reading trace (its trace offset is off); if so reports it and resyncs
 * (after_error). */
static int never_ending(struct ipt_backend *b, uint64_t ip, uint64_t off)
{
	struct ptd_event *ev;

	if (off != b->loop_off) {
		b->loop_off = off;
		b->loop_insns = 0;
		return 0;
	}
	if (++b->loop_insns < INTELPT_NELOOP_INSNS)
		return 0;
	b->loop_insns = 0;
	ev = push(b, PTD_EV_ERROR);
	b->err_ev = ev;
	b->err_insn = 0;
	b->err_went_on = 0;
	b->err_code = 0;
	if (ev) {
		ev->error = PTD_ERR_DECODE;
		ev->ip = ip;
		snprintf(msgbuf(b, ev), 640, "never-ending loop: %u instructions "
			 "at %#" PRIx64 " without trace; the image does not match "
			 "the trace", INTELPT_NELOOP_INSNS, ip);
	}
	after_error(b);
	return 1;
}

/* Queues an instruction libipt decoded. */
static void insn_event(struct ipt_backend *b, const struct pt_insn *insn)
{
	struct ptd_event *ev;

	if (b->drop_ip) {
		uint64_t ip = b->drop_ip;

		b->drop_ip = 0;
		if (insn->ip == ip) {
			b->last_ip = ip;
			return;
		}
	}
	if (b->sink_fup) {
		if (insn->ip == b->sink_fup) {
			/* the error goes after the instructions listed since */
			if (b->sink_at != b->tail - 1)
				move_event(b, b->sink_at, b->tail - 1)->ip = b->sink_fup;
			b->sink_fup = 0;
		} else if (!--b->sink_left) {
			b->sink_fup = 0;
		}
	}
	ev = push(b, PTD_EV_INSN);

	if (ev) {
		ev->ip = insn->ip;
		ev->size = insn->size;
		memcpy(ev->raw, insn->raw, sizeof(ev->raw));
		ev->iclass = intelpt_map_class(insn->iclass);
		ev->mode = intelpt_map_mode(insn->mode);
		ev->image = b->last_image;
		if (insn->speculative)
			ev->flags |= PTD_EVF_SPECULATIVE;
		if (insn->truncated)
			ev->flags |= PTD_EVF_TRUNCATED;
	}
	/* with a bad packet next, only a TNT bit read before it can have
	 * been used: perf reads the bad packet after the last such bit */
	if (b->hold_at && (insn->iclass == ptic_cond_jump || insn->iclass == ptic_return)) {
		b->hold_split = b->tail;
		b->fup_seen = 0;
	} else if (b->hold_at && insn->ip == b->hold_fup && !b->fup_seen) {
		b->hold_split = b->tail - 1;
		b->fup_seen = 1;
	}
	b->last_ip = insn->ip;
	b->last_end = insn->ip + insn->size;
}

/* Whether byte opens an IP packet (TIP, TIP.PGE, TIP.PGD, FUP) with a
 * reserved IP compression, which perf's and libipt's packet decoders
 * reject. */
static int bad_ip_packet(uint8_t byte)
{
	uint8_t opc = byte & 0x1f, ipc = byte >> 5;

	return (opc == 0x01 || opc == 0x0d || opc == 0x11 || opc == 0x1d) &&
	       (ipc == 5 || ipc == 7);
}

/* After the decoder consumed trace (ok_off moved): when resyncing as
 * perf and the packet the decoder reads next is one perf's decoder
 * rejects, holds back the events from here until the error libipt
 * reports there (error_event puts it where perf has it: after the last
 * instruction that used a TNT bit, and after a PSB+ right before the
 * packet at that PSB+'s FUP IP, where perf's decoder walked to). */
static void look_ahead(struct ipt_backend *b)
{
	const struct pt_config *cfg;
	uint64_t off = 0;

	if (b->hold_at) {
		if (b->ok_off + 1 != b->hold_at)
			b->hold_at = 0;  /* read past it after all */
		return;
	}
	if (!b->hold_ok || !b->p.resync_as_perf || b->skip || b->ok_off + 1 == b->ahead_off)
		return;
	b->ahead_off = b->ok_off + 1;
	cfg = pt_insn_get_config(b->dec);
	if (!cfg || pt_insn_get_offset(b->dec, &off) < 0 ||
	    off >= (uint64_t)(cfg->end - cfg->begin) || !bad_ip_packet(cfg->begin[off]))
		return;
	b->hold_at = b->ok_off + 1;
	b->hold_from = b->hold_split = b->tail;
	b->fup_seen = 0;
	if (!intelpt_psb_fup_before(&b->p, cfg->begin, (size_t)(cfg->end - cfg->begin),
				    off, &b->hold_fup))
		b->hold_fup = 0;
}

/* libipt 2.1 failing at a bad packet right after a PSB+ stops with its
 * offset at that PSB+'s FUP: the FUP IP (intelpt_psb_fup_before) when
 * the packets from there on are the PSB+'s, then at most timing packets
 * and PADs, then an IP packet perf rejects (bad_ip_packet); else 0. */
static uint64_t fup_before_next(struct ipt_backend *b)
{
	const struct pt_config *cfg = pt_insn_get_config(b->dec);
	struct pt_packet_decoder *pd;
	struct pt_packet pk;
	uint64_t off = 0, at = 0, fup = 0;
	int psbend = 0;

	if (!cfg || pt_insn_get_offset(b->dec, &off) < 0 ||
	    off >= (uint64_t)(cfg->end - cfg->begin) || !(pd = pt_pkt_alloc_decoder(cfg)))
		return 0;
	if (pt_pkt_sync_set(pd, off) == 0)
		for (int n = 0; n < 64; n++) {
			if (pt_pkt_get_offset(pd, &at) < 0)
				break;
			if (pt_pkt_next(pd, &pk, sizeof(pk)) < 0) {
				if (psbend && bad_ip_packet(cfg->begin[at]) &&
				    !intelpt_psb_fup_before(&b->p, cfg->begin,
							    (size_t)(cfg->end - cfg->begin), at, &fup))
					fup = 0;
				break;
			}
			if (pk.type == ppt_psbend)
				psbend = 1;
			else if (psbend && pk.type != ppt_pad && pk.type != ppt_mtc &&
				 pk.type != ppt_cyc && pk.type != ppt_tsc && pk.type != ppt_tma &&
				 pk.type != ppt_cbr && pk.type != ppt_mnt)
				break;
		}
	pt_pkt_free_decoder(pd);
	return fup;
}

/* After pt_insn_next failed with insn (listed) filled in: the IP the
 * flow went on to when the instruction completed before the error (libipt
 * 2.1 reports an error it deferred, such as a bad packet read ahead, only
 * after the instruction that used the last TNT bit before it), else 0.
 * The failed decoder is resynced or dropped next, so asking it once more
 * for the instruction at its IP changes nothing that is used later. */
static uint64_t went_on_to(struct ipt_backend *b, const struct pt_insn *insn)
{
	struct pt_insn next;

	memset(&next, 0, sizeof(next));
	(void)pt_insn_next(b->dec, &next, sizeof(next));
	return next.ip != insn->ip ? next.ip : 0;
}

/* Advances the decoder by one step, queueing zero or more events. */
static int step(struct ipt_backend *b)
{
	struct pt_insn insn;
	int rc;

	if (!b->dec) {
		if (b->qi >= b->nqueues)
			return PTD_ERR_END;
		rc = start_queue(b);
		if (rc < 0)
			return rc;
	}
	if (b->state == Q_SYNC) {
		uint64_t off = 0;

		rc = pt_insn_sync_forward(b->dec);
		if (rc == -pte_eos) {
			data_end(b);
			return 0;
		}
		pt_insn_get_sync_offset(b->dec, &off);
		if (rc < 0) {
			if (error_event(b, rc, 0))
				return 0;
			/* No progress means nothing further can be synced. */
			if (off == b->last_sync)
				end_queue(b);
			b->last_sync = off;
			return 0;
		}
		b->last_sync = off;
		b->mode_known = 0;  /* libipt forgets it at a sync too */
		b->status = rc;
		b->ok_off = trace_offset(b);
		b->state = Q_DECODE;
		b->last_ip = 0;  /* errors before an instruction have none */
		update_time(b);
		look_ahead(b);
		return 0;
	}
	if (b->status & pts_event_pending) {
		struct pt_event pe;

		rc = pt_insn_event(b->dec, &pe, sizeof(pe));
		if (rc == -pte_eos) {
			/* the trace ends inside the event's packets: the end,
			 * as for ptxed */
			data_end(b);
			return 0;
		}
		if (rc < 0) {
			if (!error_event(b, rc, b->last_ip))
				after_error(b);
			return 0;
		}
		b->status = rc;
		b->ok_off = trace_offset(b);
		/* libipt reads on to the next event's timing packets before
		 * it reports a disable: the disable is the thread's that ran
		 * before it, a switch found by then comes after it (as the
		 * fast decoder, which reads that TSC after the disable) */
		if (pe.type == ptev_disabled || pe.type == ptev_async_disabled) {
			/* no IP: the instruction after the last one listed */
			b->off_ip = pe.ip_suppressed ? b->last_end : pe.type == ptev_disabled ?
				    pe.variant.disabled.ip : pe.variant.async_disabled.ip;
			convert_event(b, &pe);
			update_time(b);
		} else {
			update_time(b);
			convert_event(b, &pe);
		}
		look_ahead(b);
		return 0;
	}
	if ((b->status & pts_eos) && !in_cut_splice(b)) {
		data_end(b);
		return 0;
	}
	memset(&insn, 0, sizeof(insn));
	rc = pt_insn_next(b->dec, &insn, sizeof(insn));
	if ((b->status & pts_eos) && in_cut_splice(b) &&
	    insn.iclass != ptic_error && insn.ip == b->splice.end_ip) {
		data_end(b);  /* the PSB's decoder decodes it */
		return 0;
	}
	if (rc < 0) {
		/* libipt fills in an instruction that executed before the
		 * decoder failed or ran out of trace (its iclass is not
		 * ptic_error then): it ran, as ptxed shows */
		int listed = insn.iclass != ptic_error &&
			     !(rc == -pte_eos && in_cut_splice(b));
		/* resyncing as perf: the branch whose packet did not match
		 * (or did not decode) is perf's after the error, if at all */
		int mismatch = rc == -pte_bad_query ||
			       rc == -pte_retstack_empty || rc == -pte_bad_retcomp;
		int defer = listed && b->p.resync_as_perf &&
			    (mismatch || rc == -pte_bad_packet);
		/* ... unless it completed: perf lists it, then the error
		 * where the flow went on */
		/* libipt 2.1, a bad packet right after a PSB+: perf's place
		 * for the error is that PSB+'s FUP IP (asked before the
		 * failed decoder moves on) */
		uint64_t fup = defer && rc == -pte_bad_packet && !b->hold_ok ?
			       fup_before_next(b) : 0;
		uint64_t on = defer && rc == -pte_bad_packet ?
			      went_on_to(b, &insn) : 0;

		if (on)
			defer = 0;
		if (listed && !defer)
			insn_event(b, &insn);
		if (rc == -pte_eos) {
			data_end(b);
			return 0;
		}
		/* tracing off: perf's IP is where the flow went then */
		uint64_t ip = on ? on : insn.ip ? insn.ip :
			      rc == -pte_no_enable && b->off_ip && b->p.resync_as_perf ?
			      b->off_ip : b->last_ip;

		if (!error_event(b, rc, ip)) {
			if (on && fup && fup != on &&
			    b->err_ev == &b->fifo[(b->tail - 1) & (b->cap - 1)]) {
				b->sink_fup = fup;
				b->sink_at = b->tail - 1;
				b->sink_left = SINK_MAX;
			}
			b->err_insn = on ? on : listed ? insn.ip : 0;
			b->err_went_on = on != 0;
			after_error(b);
			if (defer && b->qdec && b->splice.in_place)
				b->drop_ip = 0;   /* the splice lists it */
			else if (defer && !mismatch)
				insn_event(b, &insn);
			/* a mismatch (a compressed return without a call
			 * too): perf lists no branch there */
		}
		return 0;
	}
	b->status = rc;
	b->ok_off = trace_offset(b);
	if (never_ending(b, insn.ip, b->ok_off))
		return 0;
	insn_event(b, &insn);
	update_time(b);
	look_ahead(b);
	return 0;
}

static uint64_t ipt_progress(const struct backend *base)
{
	const struct ipt_backend *b = (const struct ipt_backend *)base;
	uint64_t done = 0;

	for (size_t i = 0; i < b->qi && i < b->nqueues; i++)
		done += b->queues[i].size;
	return done + trace_offset(b);
}

static int ipt_next(struct backend *base, struct ptd_event *ev)
{
	struct ipt_backend *b = (struct ipt_backend *)base;

	while (b->head == (b->hold_at ? b->hold_from : b->sink_fup ? b->sink_at : b->tail)) {
		int rc = step(b);

		if (rc < 0)
			return rc;
	}
	*ev = b->fifo[b->head & (b->cap - 1)];
	/* messages live in b->msg until this slot is reused, i.e. at least
	 * until the next call, as the interface promises */
	b->head++;
	return 0;
}

static const char *ipt_errmsg(struct backend *base)
{
	return ((struct ipt_backend *)base)->errmsg;
}

static void ipt_destroy(struct backend *base)
{
	struct ipt_backend *b = (struct ipt_backend *)base;

	if (!b)
		return;
	drop_splice(b);
	pt_insn_free_decoder(b->dec);
	pt_image_free(b->image);
	free(b->fifo);
	free(b->msg);
	free(b->padded);
	free(b->queues);
	free(b);
}

static const uint8_t psb_pattern[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

uint64_t intelpt_psb_after(const uint8_t *data, size_t size, uint64_t at)
{
	const uint8_t *psb;

	if (at >= size)
		return size;
	psb = memmem(data + at, size - at, psb_pattern, sizeof(psb_pattern));
	return psb ? (uint64_t)(psb - data) : size;
}

uint64_t intelpt_psb_before(const uint8_t *data, size_t size, uint64_t at)
{
	if (size < sizeof(psb_pattern))
		return size;
	if (at > size - sizeof(psb_pattern))
		at = size - sizeof(psb_pattern);
	for (uint64_t i = at + 1; i-- > 0;)
		if (data[i] == 0x02 && !memcmp(data + i, psb_pattern, sizeof(psb_pattern)))
			return i;
	return size;
}

int intelpt_check_queue(const struct intelpt_params *p, const uint8_t *data,
			size_t size, struct intelpt_queue_check *qc)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	uint64_t last, off = 0;

	memset(qc, 0, sizeof(*qc));
	qc->first_psb = intelpt_psb_after(data, size, 0);
	if (qc->first_psb >= size)
		return 0;
	last = intelpt_psb_before(data, size, size);
	intelpt_config(p, &cfg, data, data + size);
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return PTD_ERR_NOMEM;
	if (pt_pkt_sync_set(dec, last) >= 0) {
		struct pt_packet pk;

		int rc;

		do {
			pt_pkt_get_offset(dec, &off);
			rc = pt_pkt_next(dec, &pk, sizeof(pk));
		} while (rc >= 0);
		/* stopped before the end: a packet cut short (damage and
		 * packets libipt does not know the decoder reports itself) */
		if (rc == -pte_eos && off < size && size - off < 16) {
			qc->tail_cut = 1;
			qc->tail_offset = off;
		}
	}
	pt_pkt_free_decoder(dec);
	return 0;
}

int intelpt_queue_data(const struct intelpt_queue *q, const uint8_t **data)
{
	if (q->data) {
		*data = q->data;
		return 0;
	}
	if (q->npieces == 1 && q->pieces[0].size == q->size) {
		*data = q->pieces[0].data;
		return 0;
	}
	if (!q->assemble)
		return PTD_ERR_INVAL;
	return q->assemble(q->assemble_ctx, q->assemble_index, data);
}

int intelpt_new(const struct intelpt_params *p,
		const struct intelpt_queue *queues, size_t nqueues,
		struct imgstore *st, const struct sideband *sb,
		struct backend **out, char *err, size_t errlen)
{
	struct ipt_backend *b;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return PTD_ERR_NOMEM;
	b->base.next = ipt_next;
	b->base.errmsg = ipt_errmsg;
	b->base.progress = ipt_progress;
	b->base.destroy = ipt_destroy;
	b->p = *p;
	b->st = st;
	b->sb = sb;
	b->nqueues = nqueues;
	b->queues = calloc(nqueues ? nqueues : 1, sizeof(*queues));
	b->image = pt_image_alloc("ptdecode");
	b->hold_ok = pt_library_version().major == 2 && pt_library_version().minor == 0;
	b->cap = FIFO_SIZE;
	b->fifo = calloc(b->cap, sizeof(*b->fifo));
	b->msg = calloc(b->cap, sizeof(*b->msg));
	if (!b->queues || !b->image || !b->fifo || !b->msg) {
		ipt_destroy(&b->base);
		return PTD_ERR_NOMEM;
	}
	memcpy(b->queues, queues, nqueues * sizeof(*queues));
	if (pt_image_set_callback(b->image, read_mem, b) < 0) {
		util_errf(err, errlen, "libipt refused the memory callback");
		ipt_destroy(&b->base);
		return PTD_ERR_DECODE;
	}
	*out = &b->base;
	return 0;
}
