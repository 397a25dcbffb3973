/* SPDX-License-Identifier: MIT */
#include "perfclock.h"
#include "sideband.h"

#include <stdlib.h>
#include <string.h>

enum pk {
	PK_NONE, PK_PAD, PK_TNT, PK_TIP, PK_PGE, PK_PGD, PK_FUP, PK_TSC, PK_MTC,
	PK_TMA, PK_CYC, PK_CBR, PK_PSB, PK_PSBEND, PK_MODE, PK_PIP, PK_VMCS,
	PK_MNT, PK_OVF,
	PK_OTHER,               /* a packet that stops the clock */
};

struct pkt {
	enum pk type;
	uint64_t payload;
	uint32_t count;         /* TNT bits; TMA's FC; IP compression */
};

/* Where the next packet is: piece pi, byte po in it. */
struct cur {
	size_t pi, po;
};

struct perfclock {
	struct intelpt_piece one;      /* a contiguous queue as one piece */
	const struct intelpt_piece *pieces;
	size_t npieces;
	struct cur at;
	int failed, started;
	const char *why;               /* why the clock parted, or NULL */
	uint64_t why_at;               /* the trace byte where it did */
	uint64_t first;                /* the time of the first PSB+ */
	int first_ok;
	/* the recording's parameters, as perf derives them */
	uint32_t ratio_n, ratio_d, mult, rem_mask;
	int mtc_shift;
	unsigned max_nt;
	/* perf's running timestamp and what it is made of */
	uint64_t timestamp, tsc_timestamp, ctc_timestamp, ctc_delta;
	uint64_t cyc_ref_timestamp, cycle_cnt;
	double calc_cyc_to_tsc, cbr_cyc_to_tsc;
	uint32_t last_mtc;
	int have_tma, fixup_last_mtc, have_calc_cyc_to_tsc;
	unsigned cbr, cbr_seen;
	enum pk last_type;             /* the packet before (PADs skipped) */
	uint64_t insn_cnt;             /* instructions since the last timing
					* packet (perf: timestamp_insn_cnt) */
	uint64_t sample, sample_insn_cnt;   /* perf's sample_timestamp */
	uint64_t qkey;                 /* the queue's key (queuemerge's) */
	uint64_t ev_tmax;              /* the decoder's latest event time */
	/* the flow packet read and not yet consumed, and its TNT bits */
	enum pk pend;
	uint32_t tnt;
	int in_psb;
	int pgd_done;                  /* a FUP + TIP.PGD was an ASYNC's: the
					* DISABLED after it is that one */
	int bad_seen;                  /* stepped over a packet perf's decoder
					* rejects, at trace byte bad_at: the
					* decode error there follows */
	uint64_t bad_at;
	struct cur pkt_at;             /* where the packet step() read last
					* begins */
	uint64_t last_ip;
	uint32_t last_ipc;             /* its packet's IP compression */
	/* perf's decoder resumed after an overflow at a PSB+'s FUP without
	 * setting its PGE flag: until a PSB+ with FUP or a TIP.PGE sets it,
	 * it takes a FUP's IP as a jump (not walked to) */
	int no_pge;
	/* a PSB+ with a FUP: perf walks to the FUP's IP before it reads the
	 * PSB+, then returns in sync (a PSB event) */
	int psb_wait;
	uint64_t psb_ip;
	struct intelpt_params params;
	const struct sideband *sb;
	int32_t cpu;
	/* the same queue of perf's before a snapshot gap: the timing its
	 * decoder keeps past the gap (perfclock_continue) */
	const struct perfclock *prev;
};

/* What perf's decoder keeps of its timing where it repositions to the
 * next AUXTRACE buffer (intel_pt_reposition resets only the timestamp
 * and TMA): CBR, the CYC reference and count, the MTC state. */
static void carry_timing(struct perfclock *c)
{
	const struct perfclock *p = c->prev;

	if (!p)
		return;
	c->tsc_timestamp = p->tsc_timestamp;
	c->ctc_timestamp = p->ctc_timestamp;
	c->ctc_delta = p->ctc_delta;
	c->cyc_ref_timestamp = p->cyc_ref_timestamp;
	c->cycle_cnt = p->cycle_cnt;
	c->calc_cyc_to_tsc = p->calc_cyc_to_tsc;
	c->cbr_cyc_to_tsc = p->cbr_cyc_to_tsc;
	c->have_calc_cyc_to_tsc = p->have_calc_cyc_to_tsc;
	c->last_mtc = p->last_mtc;
	c->fixup_last_mtc = p->fixup_last_mtc;
	c->cbr = p->cbr;
	c->cbr_seen = p->cbr_seen;
}

/* The queue's trace byte at cu. */
static uint64_t byte_at(const struct perfclock *c, struct cur cu)
{
	if (cu.pi >= c->npieces)
		return c->npieces ? c->pieces[c->npieces - 1].offset +
				    c->pieces[c->npieces - 1].size : 0;
	return c->pieces[cu.pi].offset + cu.po;
}

/* Notes the first reason the packets cannot be followed (at, c->at's
 * byte before the packet read). */
static void note_why(struct perfclock *c, const char *why, struct cur at)
{
	if (!c->why) {
		c->why = why;
		c->why_at = byte_at(c, at);
	}
}

/* An IP packet's address, from the last one and its compression. */
static uint64_t ip_of(uint64_t last, const struct pkt *k)
{
	switch (k->count) {
	case 1: return (last & ~0xffffull) | k->payload;
	case 2: return (last & ~0xffffffffull) | k->payload;
	case 3: return k->payload & 0x800000000000ull ?
		       k->payload | 0xffff000000000000ull : k->payload;
	case 4: return (last & 0xffff000000000000ull) | k->payload;
	case 6: return k->payload;
	default: return last;
	}
}

static uint64_t multdiv(uint64_t t, uint32_t n, uint32_t d)
{
	return d ? (t / d) * n + ((t % d) * n) / d : 0;
}

/* Copies up to n bytes from cu on (across pieces that follow each other
 * in the stream unless one_piece); returns how many. */
static size_t peek(const struct perfclock *c, struct cur cu, uint8_t *buf,
		   size_t n, int one_piece)
{
	size_t got = 0;

	while (got < n && cu.pi < c->npieces) {
		const struct intelpt_piece *p = &c->pieces[cu.pi];
		size_t k = p->size - cu.po;

		if (k > n - got)
			k = n - got;
		memcpy(buf + got, p->data + cu.po, k);
		got += k;
		if (got == n || one_piece || cu.pi + 1 >= c->npieces ||
		    c->pieces[cu.pi + 1].offset != p->offset + p->size)
			break;
		cu.pi++;
		cu.po = 0;
	}
	return got;
}

static void skip(const struct perfclock *c, struct cur *cu, size_t n)
{
	while (n && cu->pi < c->npieces) {
		size_t k = c->pieces[cu->pi].size - cu->po;

		if (n < k) {
			cu->po += n;
			return;
		}
		n -= k;
		cu->pi++;
		cu->po = 0;
	}
}

static unsigned ip_bytes(uint8_t b)
{
	static const int8_t n[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };

	return n[b >> 5] < 0 ? 99 : (unsigned)n[b >> 5];
}

/* What parse() returns for bytes perf's packet decoder rejects (an IP
 * packet with reserved IP compression, an unknown one-byte opcode): perf
 * reports a bad packet and decodes on from the next byte, in sync. */
#define BAD_PACKET (-2)

/* The packet at b[0..len): its length, 0 when it does not fit (the
 * buffer ends), BAD_PACKET, or -1 for one the clock does not follow. */
static int parse(const uint8_t *b, size_t len, struct pkt *k)
{
	unsigned n;

	memset(k, 0, sizeof(*k));
	if (!len)
		return 0;
	if (b[0] == 0x00) {
		k->type = PK_PAD;
		return 1;
	}
	if (b[0] == 0x02) {
		if (len < 2)
			return 0;
		switch (b[1]) {
		case 0x03: k->type = PK_CBR; n = 4; break;
		case 0x23: k->type = PK_PSBEND; n = 2; break;
		case 0x43: k->type = PK_PIP; n = 8; break;
		case 0x73: k->type = PK_TMA; n = 7; break;
		case 0x82: k->type = PK_PSB; n = 16; break;
		case 0xa3: k->type = PK_TNT; n = 8; break;
		case 0xc3: k->type = PK_MNT; n = 11; break;
		case 0xc8: k->type = PK_VMCS; n = 7; break;
		case 0xf3: k->type = PK_OVF; n = 2; break;
		default: k->type = PK_OTHER; return -1;
		}
		if (len < n)
			return 0;
		if (k->type == PK_CBR)
			k->payload = b[2];
		if (k->type == PK_TMA) {
			k->payload = b[2] | (uint32_t)b[3] << 8;
			k->count = b[5] | (uint32_t)(b[6] & 1) << 8;
		}
		if (k->type == PK_PSB)
			for (unsigned i = 2; i < 16; i += 2)
				if (b[i] != 0x02 || b[i + 1] != 0x82)
					return -1;
		if (k->type == PK_TNT) {
			uint64_t v = 0;

			for (unsigned i = 0; i < 6; i++)
				v |= (uint64_t)b[2 + i] << (8 * i);
			if (!v)
				return -1;
			k->count = 63 - (uint32_t)__builtin_clzll(v);
		}
		return (int)n;
	}
	if (!(b[0] & 1)) {              /* short TNT: a stop bit, then bits */
		k->type = PK_TNT;
		k->count = 31 - (uint32_t)__builtin_clz(b[0]) - 1;
		return 1;
	}
	if (b[0] == 0x19) {
		if (len < 8)
			return 0;
		k->type = PK_TSC;
		for (unsigned i = 0; i < 7; i++)
			k->payload |= (uint64_t)b[1 + i] << (8 * i);
		return 8;
	}
	if (b[0] == 0x59 || b[0] == 0x99) {
		if (len < 2)
			return 0;
		k->type = b[0] == 0x59 ? PK_MTC : PK_MODE;
		k->payload = b[1];
		return 2;
	}
	if ((b[0] & 0x1f) == 0x19)
		return BAD_PACKET;
	if ((b[0] & 3) == 3) {          /* CYC: 5 bits, then 7 per byte */
		unsigned off = 1, shift = 5;
		uint8_t more = b[0] & 4;

		k->type = PK_CYC;
		k->payload = b[0] >> 3;
		while (more) {
			if (off > 9)
				return -1;
			if (len <= off)
				return 0;
			k->payload |= (uint64_t)(b[off] >> 1) << shift;
			more = b[off++] & 1;
			shift += 7;
		}
		return (int)off;
	}
	switch (b[0] & 0x1f) {
	case 0x0d: k->type = PK_TIP; break;
	case 0x11: k->type = PK_PGE; break;
	case 0x01: k->type = PK_PGD; break;
	case 0x1d: k->type = PK_FUP; break;
	default: return BAD_PACKET;
	}
	n = ip_bytes(b[0]);
	if (n > 8)
		return BAD_PACKET;
	if (len < 1 + n)
		return 0;
	k->count = b[0] >> 5;
	for (unsigned i = 0; i < n; i++)
		k->payload |= (uint64_t)b[1 + i] << (8 * i);
	return (int)(1 + n);
}

/* Reads the packet at cu and moves past it: its length, 0 at the end of
 * the stream (or of the piece), -1 for one the clock does not follow. */
static int next_pkt(const struct perfclock *c, struct cur *cu, struct pkt *k,
		    int one_piece)
{
	uint8_t b[16];
	size_t got = peek(c, *cu, b, sizeof(b), one_piece);
	int n = parse(b, got, k);

	if (n > 0)
		skip(c, cu, (size_t)n);
	return n;
}

/* The TSC an MTC stands for: CTC ticks since the TMA (its low 8 bits
 * after the MTC period's shift; a TMA holds 16 bits of CTC, so with a
 * period above 8 the first MTC supplies the bits the TMA lacks). */
static uint64_t mtc_time(const struct perfclock *c, uint32_t mtc,
			 uint32_t *last_mtc, int *fixup, uint64_t *ctc_delta,
			 uint64_t ctc_ts)
{
	uint32_t delta;

	if (c->mtc_shift > 8 && *fixup) {
		uint32_t first = 1u << (16 - c->mtc_shift);

		*fixup = 0;
		*last_mtc |= mtc & ~(first - 1);
		if (*last_mtc >= mtc)
			*last_mtc = (*last_mtc - first) & 0xff;
	}
	delta = mtc > *last_mtc ? mtc - *last_mtc : mtc + 256 - *last_mtc;
	*ctc_delta += (uint64_t)delta << c->mtc_shift;
	*last_mtc = mtc;
	return ctc_ts + (c->mult ? *ctc_delta * c->mult :
			 multdiv(*ctc_delta, c->ratio_n, c->ratio_d));
}

/* perf's estimate of the cycles-to-TSC ratio after an MTC that followed
 * a CYC: the cycles counted up to the next MTC (or TSC) in the rest of
 * the buffer (intel_pt_calc_cyc_to_tsc with from_mtc). */
static void calc_cyc_to_tsc(struct perfclock *c)
{
	struct cur cu = c->at;
	struct pkt k;
	uint64_t cycles = 0, ctc_ts = c->ctc_timestamp, ctc_delta = c->ctc_delta;
	uint64_t ts = c->timestamp, t = 0;
	uint32_t last_mtc = c->last_mtc;
	int have_tma = c->have_tma, fixup = c->fixup_last_mtc;
	unsigned cbr = 0;
	double cbr_ratio = 0, ratio;
	enum pk last = PK_MTC;

	for (;;) {
		do {
			if (next_pkt(c, &cu, &k, 1) <= 0)
				return;
		} while (k.type == PK_PAD);
		switch (k.type) {
		case PK_TNT: case PK_PGE: case PK_TIP: case PK_FUP: case PK_PSB:
		case PK_PIP: case PK_MODE: case PK_PSBEND: case PK_VMCS:
		case PK_MNT:
			break;
		case PK_MTC:
			if (!have_tma)
				break;
			t = mtc_time(c, (uint32_t)k.payload, &last_mtc, &fixup,
				     &ctc_delta, ctc_ts);
			if (t < ts)
				return;
			if (last != PK_CYC) {
				ts = t;
				break;
			}
			goto found;
		case PK_TSC:
		case PK_TMA:
			return;         /* perf does not use TSC here yet */
		case PK_CYC:
			cycles += k.payload;
			break;
		case PK_CBR:
			if (cbr && cbr != k.payload)
				return;
			cbr = (unsigned)k.payload;
			cbr_ratio = cbr ? (double)c->max_nt / cbr : 0;
			break;
		default:
			return;
		}
		last = k.type;
	}
found:
	if (!cbr && c->cbr) {
		cbr = c->cbr;
		cbr_ratio = c->cbr_cyc_to_tsc;
	}
	if (!cycles)
		return;
	ratio = (double)(t - c->timestamp) / (double)cycles;
	if (cbr && ratio > cbr_ratio && ratio / cbr_ratio > 1.25)
		return;
	c->calc_cyc_to_tsc = ratio;
	c->have_calc_cyc_to_tsc = 1;
}

/* A CYC or MTC after a CYC starts the cycle count again from here. */
static void cyc_restart(struct perfclock *c, int from_mtc)
{
	if (c->last_type != PK_CYC)
		return;
	c->cyc_ref_timestamp = c->timestamp;
	c->cycle_cnt = 0;
	c->have_calc_cyc_to_tsc = 0;
	if (from_mtc)
		calc_cyc_to_tsc(c);
}

static void on_tsc(struct perfclock *c, uint64_t v)
{
	c->have_tma = 0;
	if (!c->timestamp) {
		c->tsc_timestamp = c->timestamp = v;
		c->insn_cnt = 0;
	} else {
		uint64_t t = v | (c->timestamp & (0xffull << 56));

		c->tsc_timestamp = t;
		if (t < c->timestamp && c->timestamp - t < 0x10000)
			t = c->timestamp;          /* slipped past an MTC */
		if (t < c->timestamp) {
			t += 1ull << 56;
			c->tsc_timestamp = t;
		}
		c->timestamp = t;
		c->insn_cnt = 0;
	}
	cyc_restart(c, 0);
}

static void on_tma(struct perfclock *c, const struct pkt *k)
{
	uint32_t ctc = (uint32_t)k->payload, rem = ctc & c->rem_mask;

	if (!c->ratio_d)
		return;
	c->last_mtc = (ctc >> c->mtc_shift) & 0xff;
	c->ctc_timestamp = c->tsc_timestamp - k->count -
			   (c->mult ? (uint64_t)rem * c->mult :
			    multdiv(rem, c->ratio_n, c->ratio_d));
	c->ctc_delta = 0;
	c->have_tma = 1;
	c->fixup_last_mtc = 1;
}

static void on_mtc(struct perfclock *c, uint32_t mtc)
{
	uint64_t t;

	if (!c->have_tma)
		return;
	t = mtc_time(c, mtc, &c->last_mtc, &c->fixup_last_mtc, &c->ctc_delta,
		     c->ctc_timestamp);
	if (t >= c->timestamp)
		c->timestamp = t;
	c->insn_cnt = 0;
	cyc_restart(c, 1);
}

static void on_cyc(struct perfclock *c, uint64_t cycles)
{
	uint64_t t = c->cyc_ref_timestamp;

	c->cycle_cnt += cycles;
	if (!c->cyc_ref_timestamp)
		return;
	if (c->have_calc_cyc_to_tsc)
		t = (uint64_t)((double)t + (double)c->cycle_cnt * c->calc_cyc_to_tsc);
	else if (c->cbr)
		t = (uint64_t)((double)t + (double)c->cycle_cnt * c->cbr_cyc_to_tsc);
	else
		return;
	if (t >= c->timestamp)
		c->timestamp = t;
	c->insn_cnt = 0;
}

/* perf's decoder returned in sync: its sample time is the timestamp. */
static void update(struct perfclock *c)
{
	c->sample = c->timestamp;
	c->sample_insn_cnt = c->insn_cnt;
}

/* The same for a state that is no event of the decoders': the caller
 * returns STATE, and is called again for the same event. */
#define STATE 2

static void state(struct perfclock *c)
{
	update(c);
}

/* An event timed by perf's state before it that perf's queue does not
 * stop at (an error state: intel-pt.c goes on decoding): the queue's key
 * stays. */
#define NO_KEY 3

/* Reads one packet and applies its timing.  Returns its type, PK_NONE at
 * the end of the trace, PK_OTHER for one the clock does not follow. */
static enum pk step(struct perfclock *c)
{
	struct pkt k;
	struct cur at;
	int n;

	do {
		at = c->at;
		n = next_pkt(c, &c->at, &k, 0);
		if (n == BAD_PACKET && !c->bad_seen) {
			/* intel_pt_bad_packet(): one byte on, no TMA; the
			 * error returned updates the sample time */
			c->bad_seen = 1;
			c->bad_at = byte_at(c, at);
			skip(c, &c->at, 1);
			c->have_tma = 0;
			c->last_type = PK_OTHER;
			update(c);
			k.type = PK_PAD;
			continue;
		}
		if (n < 0)
			note_why(c, "a packet the clock does not follow", at);
		else if (!n && at.pi < c->npieces)
			note_why(c, "a packet cut off, or the next AUXTRACE buffer "
				 "does not continue this one", at);
		if (n <= 0)
			return n ? PK_OTHER : PK_NONE;
	} while (k.type == PK_PAD);
	c->pkt_at = at;
	switch (k.type) {
	case PK_TSC: on_tsc(c, k.payload); break;
	case PK_TMA: on_tma(c, &k); break;
	case PK_MTC: on_mtc(c, (uint32_t)k.payload); break;
	case PK_CYC: on_cyc(c, k.payload); break;
	case PK_CBR:
		if (c->cbr != (unsigned)k.payload) {
			c->cbr = (unsigned)k.payload;
			c->cbr_cyc_to_tsc = c->cbr ? (double)c->max_nt / c->cbr : 0;
			/* CYCs count on from here (Debian's 6.1 has
			 * "perf intel-pt: Fix CYC timestamps after
			 * standalone CBR", 430635a0ef1c) */
			c->cyc_ref_timestamp = c->timestamp;
			c->cycle_cnt = 0;
		}
		break;
	case PK_PSB: c->in_psb = 1; c->last_ip = 0; break;
	case PK_TIP: case PK_PGE: case PK_PGD: case PK_FUP:
		c->last_ip = ip_of(c->last_ip, &k);
		c->last_ipc = k.count;
		break;
	case PK_PSBEND: c->in_psb = 0; break;
	case PK_TNT: c->tnt = k.count; break;
	default: break;
	}
	c->last_type = k.type;
	return k.type;
}

/* A CBR change is a state of perf's, returned in sync. */
static int cbr_state(struct perfclock *c)
{
	if (c->cbr == c->cbr_seen || c->in_psb)
		return 0;
	c->cbr_seen = c->cbr;
	state(c);
	return 1;
}

/* Whether the PSB+ just read has a FUP (perf's PSB look-ahead), and its
 * IP. */
static int psb_fup(const struct perfclock *c, uint64_t *ip)
{
	struct cur cu = c->at;
	struct pkt k;

	for (;;) {
		if (next_pkt(c, &cu, &k, 0) <= 0 || k.type == PK_PSBEND)
			return 0;
		if (k.type == PK_FUP) {
			*ip = ip_of(0, &k);
			return k.count != 0;
		}
	}
}

/* Reads the rest of a PSB+: perf returns in sync after it (a PSB
 * event), CBR change or not. */
static int psb_end(struct perfclock *c)
{
	for (;;) {
		switch (step(c)) {
		case PK_PSBEND:
			c->cbr_seen = c->cbr;
			state(c);
			return 0;
		case PK_TNT: case PK_TIP: case PK_PGE: case PK_PGD: case PK_NONE:
		case PK_OTHER: case PK_PSB:
			return -1;
		default:
			break;
		}
	}
}

/* perf's decoder in sync reads on to the next packet that decides the
 * flow.  Returns 0, 1 at the end of the trace, STATE (perf returned a
 * state on the way: call again) or -1 (a packet the clock does not
 * follow). */
static int fetch(struct perfclock *c)
{
	for (;;) {
		enum pk t = step(c);

		switch (t) {
		case PK_TNT:
			if (!c->tnt)
				break;
			c->pend = t;
			return 0;
		case PK_PGE:
			c->no_pge = 0;
			/* fall through */
		case PK_TIP: case PK_PGD:
			c->pend = t;
			return 0;
		case PK_FUP:
			if (c->in_psb)
				break;
			if (c->no_pge) {
				/* perf takes the FUP's IP without walking
				 * to it: its flow parts from the trace */
				note_why(c, "a FUP after an overflow resolved "
					 "at a PSB (perf's decoder walks no "
					 "instructions to it)", c->at);
				return -1;
			}
			c->pend = t;
			return 0;
		case PK_OVF:
			/* perf's overflow: an error state, its instruction
			 * count reset */
			c->insn_cnt = 0;
			c->tnt = 0;
			update(c);
			c->pend = t;
			return 0;
		case PK_PSB:
			if (psb_fup(c, &c->psb_ip)) {
				c->no_pge = 0;
				c->psb_wait = 1;
				return 0;
			}
			return psb_end(c) ? -1 : STATE;
		case PK_CBR:
			if (cbr_state(c))
				return STATE;
			break;
		case PK_NONE:
			return 1;
		case PK_OTHER:
			return -1;
		default:
			break;
		}
	}
}

/* perf's decoder starts at the queue's first PSB (bytes before it, a
 * snapshot's start inside a packet, are skipped, as the decoders skip
 * them): moves there.  Returns 0, or -1 when the trace holds no PSB. */
static int to_first_psb(struct perfclock *c)
{
	static const uint8_t psb[16] = {
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	};
	uint8_t b[16];

	while (c->at.pi < c->npieces) {
		if (peek(c, c->at, b, sizeof(b), 0) < sizeof(b)) {
			if (c->at.pi + 1 >= c->npieces)
				return -1;
			c->at.pi++;     /* the next buffer, not continuing this */
			c->at.po = 0;
			continue;
		}
		if (!memcmp(b, psb, sizeof(b)))
			return 0;
		skip(c, &c->at, 1);
	}
	return -1;
}

int perfclock_first(struct perfclock *c, uint64_t *t)
{
	if (!c->started) {
		enum pk k;

		c->started = 1;
		/* perf's decoder finds its first PSB by its bytes and reads no
		 * packet before it (intel_pt_sync, intel_pt_scan_for_psb): a
		 * snapshot's packets before its first PSB set no timing */
		if (to_first_psb(c) || step(c) != PK_PSB) {
			note_why(c, "the trace holds no PSB", c->at);
			c->failed = 1;
			return -1;
		}
		while ((k = step(c)) != PK_PSBEND) {
			if (k == PK_NONE || k == PK_OTHER || k == PK_TNT ||
			    k == PK_TIP || k == PK_PGE || k == PK_PGD) {
				note_why(c, "the first PSB+ has no PSBEND", c->at);
				c->failed = 1;
				return -1;
			}
		}
		/* perf's decoder is in sync here: its first state */
		c->cbr_seen = c->cbr;
		update(c);
		c->first = c->sample;
		c->first_ok = 1;
	}
	if (!c->first_ok)
		return -1;
	*t = c->first;
	return 0;
}

/* How an instruction takes its place in the packets. */
enum use { USE_NONE, USE_TNT, USE_TIP, USE_RET };

/* Near calls and jumps: direct (E8, E9, EB) or through FF /2../5. */
static int indirect(const struct ptd_event *ev)
{
	size_t i = 0;

	while (i < ev->size && i < sizeof(ev->raw)) {
		uint8_t b = ev->raw[i];

		if (b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 ||
		    b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36 ||
		    b == 0x64 || b == 0x65 || b == 0xf0 ||
		    (ev->mode == PTD_MODE_64 && (b & 0xf0) == 0x40)) {
			i++;
			continue;
		}
		return b == 0xff;
	}
	return 0;
}

static enum use use_of(const struct ptd_event *ev)
{
	switch (ev->iclass) {
	case PTD_IC_COND_JUMP:
		return USE_TNT;
	case PTD_IC_RETURN:
		return USE_RET;
	case PTD_IC_IND_CALL: case PTD_IC_IND_JUMP: case PTD_IC_FAR_CALL:
	case PTD_IC_FAR_RETURN: case PTD_IC_FAR_JUMP:
		return USE_TIP;
	case PTD_IC_CALL: case PTD_IC_JUMP:
		return indirect(ev) ? USE_TIP : USE_NONE;
	default:
		return USE_NONE;
	}
}

static int on_insn(struct perfclock *c, const struct ptd_event *ev)
{
	enum use u = use_of(ev);
	int rc;

	for (;;) {
		if (c->psb_wait) {
			if (ev->ip != c->psb_ip) {
				c->insn_cnt++;
				return u == USE_NONE ? 0 : -1;
			}
			c->psb_wait = 0;
			return psb_end(c) ? -1 : STATE;
		}
		if (c->pend)
			break;
		rc = fetch(c);
		if (rc == STATE)
			return STATE;
		if (rc < 0 || (rc && u != USE_NONE))
			return -1;
		if (rc || !c->psb_wait)
			break;
	}
	c->insn_cnt++;
	if (u == USE_RET)
		u = c->pend == PK_TNT ? USE_TNT : USE_TIP;
	if (u == USE_TNT) {
		if (c->pend != PK_TNT)
			return -1;
		if (!--c->tnt)
			c->pend = PK_NONE;
		update(c);
	} else if (u == USE_TIP) {
		if (c->pend != PK_TIP && c->pend != PK_PGD)
			return -1;
		c->pgd_done = c->pend == PK_PGD;
		c->pend = PK_NONE;
		update(c);
	}
	return 0;
}

/* After a FUP perf reads on to the TIP or TIP.PGD that goes with it. */
static int fup_tip(struct perfclock *c)
{
	for (;;) {
		enum pk t = step(c);

		switch (t) {
		case PK_MTC: case PK_CYC: case PK_CBR: case PK_PIP: case PK_MODE:
		case PK_VMCS: case PK_MNT:
			break;
		case PK_TIP: case PK_PGD:
			c->pgd_done = t == PK_PGD;
			c->pend = PK_NONE;
			update(c);
			return 0;
		default:
			return -1;
		}
	}
}

/* After an OVF perf reads on to the FUP that says where the trace
 * resumes (timing packets on the way), and returns in sync there: a
 * trace begin (its overflow flag set) at that time.  An overflow that
 * resolves at a PSB: perf's decoder, its IP lost, fails to walk to the
 * PSB+'s FUP (an error state), then scans the PSB+ for an IP it can
 * take without a last IP (6 or 8 bytes) and returns in sync at that
 * FUP, a trace begin too, with a CBR change of the PSB+ (its timing
 * packets read, PSBEND not yet). */
static int ovf_fup(struct perfclock *c, const struct ptd_event *ev)
{
	uint64_t ip;

	for (;;) {
		enum pk t = step(c);

		switch (t) {
		case PK_TSC: case PK_TMA: case PK_MTC: case PK_CYC: case PK_PIP:
		case PK_MODE: case PK_VMCS: case PK_MNT:
			break;
		case PK_CBR:            /* a CBR state of its own first */
			if (c->cbr != c->cbr_seen && !c->in_psb)
				return -1;
			break;
		case PK_PSB:
			if (!psb_fup(c, &ip) || ip != ev->ip)
				return -1;
			break;
		case PK_FUP:
			if (c->last_ip != ev->ip)
				return -1;
			if (c->in_psb) {
				/* no last IP: only a 6 or 8 byte IP */
				if (c->last_ipc != 3 && c->last_ipc != 6)
					return -1;
				c->cbr_seen = c->cbr;
				c->no_pge = 1;
			}
			c->pend = PK_NONE;
			update(c);
			return 0;
		default:                /* TIP.PGE: not followed */
			return -1;
		}
	}
}

/* The flow packet an event needs: 0 when there is one, STATE, or -1. */
static int need(struct perfclock *c)
{
	int rc = c->pend ? 0 : fetch(c);

	return rc == STATE ? STATE : rc ? -1 : 0;
}

/* Whether the rest of the trace holds no packet that decides the flow,
 * PSB+s aside (perf's states after the last event: the caller's
 * ev->kind 0), so that what the decoder does after a gap event there
 * cannot part from the packets. */
static int no_flow_left(const struct perfclock *c)
{
	struct cur cu = c->at;
	struct pkt k;
	int in_psb = c->in_psb;

	if (c->pend || c->psb_wait)
		return 0;
	for (;;) {
		int n = next_pkt(c, &cu, &k, 0);

		if (n < 0)
			return 0;
		if (!n)
			return cu.pi >= c->npieces;
		switch (k.type) {
		case PK_TNT: case PK_TIP: case PK_PGE: case PK_PGD: case PK_OVF:
			return 0;
		case PK_FUP:            /* a PSB+'s FUP is the decoder's place */
			if (!in_psb)
				return 0;
			break;
		case PK_PSB: in_psb = 1; break;
		case PK_PSBEND: in_psb = 0; break;
		default:
			break;
		}
	}
}

/* Tracing stops where the FUP of the PSB+ just read points (a FUP,
 * TIP.PGD right after PSBEND): perf reaches that IP with no instruction
 * and returns the PSB event there. */
static int stop_at_psb(struct perfclock *c, const struct ptd_event *ev)
{
	if (ev->ip != c->psb_ip)
		return -1;
	c->psb_wait = 0;
	return psb_end(c) ? -1 : STATE;
}

/* intel-pt.c keys a return to user space (a trace begin) by perf's
 * estimated TSC. */
static uint64_t estimate(const struct perfclock *c)
{
	return c->sample + (c->cbr && c->max_nt ?
			    (c->sample_insn_cnt << 1) * c->max_nt / c->cbr :
			    c->sample_insn_cnt << 1);
}

/* A decode error: followed only for a bad packet the decoder stepped
 * over where the flow was, as perf's decoder does.  libipt 2.0 reports
 * it when the flow needs the packet; 2.1 right after the instruction
 * that used the last flow packet before it, with the IP the flow went on
 * to: perf reads on to the bad packet first (through a PSB+ whose FUP is
 * that IP, a state of its own).  NO_KEY (an error state), STATE or
 * -1. */
static int on_bad_packet(struct perfclock *c, const struct ptd_event *ev)
{
	if (!(ev->flags & PTD_EVF_RESYNCED))
		return -1;
	while (!c->bad_seen) {
		int rc;

		if (c->psb_wait)
			return stop_at_psb(c, ev);
		if (c->pend)
			return -1;
		rc = fetch(c);
		if (rc == STATE)
			return STATE;
		if (rc)
			return -1;
	}
	/* while tracing was off the decoder may resume at the TIP.PGE after
	 * the bad packet: perf's decoder reads on to the same, in sync */
	if (ev->addr != c->bad_at &&
	    (c->pend != PK_PGE || ev->addr != byte_at(c, c->pkt_at)))
		return -1;
	c->bad_seen = 0;
	return NO_KEY;          /* an error state: intel-pt.c decodes on */
}

/* 0: ev is timed (c->sample); 1: also keyed by *key; STATE; NO_KEY;
 * -1. */
static int on_event(struct perfclock *c, const struct ptd_event *ev,
		    uint64_t *key)
{
	int rc;

	if (ev->kind == PTD_EV_ERROR)
		return on_bad_packet(c, ev);
	if (c->psb_wait && (ev->kind == PTD_EV_DISABLED || ev->kind == PTD_EV_ASYNC))
		return stop_at_psb(c, ev);
	if (c->psb_wait && ev->kind != PTD_EV_INSN && ev->kind != PTD_EV_PAGING &&
	    ev->kind != PTD_EV_EXEC_MODE && ev->kind != PTD_EV_SWITCH &&
	    ev->kind != PTD_EV_TIME)
		return -1;
	switch (ev->kind) {
	case 0:                 /* after the last event: STATE, or 1 */
		return fetch(c) == STATE ? STATE : 1;
	case PTD_EV_INSN:
		return on_insn(c, ev);
	case PTD_EV_ENABLED:
		if ((rc = need(c)))
			return rc;
		if (c->pend != PK_PGE)
			return -1;
		c->pend = PK_NONE;
		update(c);
		*key = estimate(c);
		return 1;
	case PTD_EV_DISABLED:
		if (c->pgd_done) {
			c->pgd_done = 0;
			return 0;
		}
		if ((rc = need(c)))
			return rc;
		if (c->psb_wait)
			return stop_at_psb(c, ev);
		if (c->pend == PK_PGD) {
			c->pend = PK_NONE;
			update(c);
			return 0;
		}
		if (c->pend != PK_FUP || fup_tip(c) || !c->pgd_done)
			return -1;
		c->pgd_done = 0;
		return 0;
	case PTD_EV_ASYNC:
		if ((rc = need(c)))
			return rc;
		if (c->psb_wait)
			return stop_at_psb(c, ev);
		if (c->pend != PK_FUP)
			return -1;
		return fup_tip(c);
	case PTD_EV_OVERFLOW:
		if ((rc = need(c)))
			return rc;
		if (c->pend != PK_OVF)
			return -1;
		if ((ev->flags & PTD_EVF_IP_SUPPRESSED) || !ev->ip) {
			/* while tracing was off: perf's error state times
			 * it, the TIP.PGE after it is the enable's */
			c->pend = PK_NONE;
			return NO_KEY;
		}
		if (ovf_fup(c, ev))
			return -1;
		*key = estimate(c);   /* a trace begin, as above */
		return 1;
	case PTD_EV_PAGING: case PTD_EV_EXEC_MODE: case PTD_EV_SWITCH:
	case PTD_EV_TIME:
		return 0;
	case PTD_EV_GAP:
		/* the end of a queue cut by a snapshot gap (the flow went on
		 * where no trace is): no packet left to part from */
		return no_flow_left(c) ? 0 : -1;
	default:
		return -1;
	}
}

/* Whether the decoder took ev's thread from the sideband (a host
 * thread, not a guest's): it names the thread at its own time, or, when
 * its clock went back (CYC without MTC, then a PSB+'s TSC), keeps the
 * one at the latest time it reached.  Either may lie on the other side
 * of a switch from perf's time for ev. */
static int sideband_named(const struct perfclock *c, const struct ptd_event *ev)
{
	int32_t pid, tid;

	if (!c->sb || c->cpu < 0 || !c->params.have_time ||
	    !(ev->flags & PTD_EVF_TIME_VALID))
		return 0;
	if (!sideband_task_at(c->sb, c->cpu, ev->time, &pid, &tid) &&
	    pid == ev->pid && tid == ev->tid)
		return 1;
	return !sideband_task_at(c->sb, c->cpu, c->ev_tmax, &pid, &tid) &&
	       pid == ev->pid && tid == ev->tid;
}

int perfclock_time(struct perfclock *c, const struct ptd_event *ev,
		   struct perfclock_at *at)
{
	uint64_t first;
	int rc;

	if (!c->started)
		perfclock_first(c, &first);
	if (c->failed)
		return -1;
	rc = on_event(c, ev, &at->key);
	if (rc == 1 && !ev->kind) {
		c->failed = 1;          /* no more states: not lost */
		return 1;
	}
	if (rc < 0) {
		int fresh = !c->why;

		note_why(c, ev->kind == PTD_EV_ERROR ? "a decode error" :
			 ev->kind == PTD_EV_OVERFLOW ? "an overflow" :
			 ev->kind == PTD_EV_GAP ? "a gap in the trace" :
			 "the packets do not match the decoded flow", c->at);
		if (fresh && (ev->kind == PTD_EV_ERROR ||
			      ev->kind == PTD_EV_OVERFLOW || ev->kind == PTD_EV_GAP))
			c->why_at = ev->offset;   /* the decoder's place */
		c->failed = 1;
		return -1;
	}
	at->state = rc == STATE;
	at->t = c->sample;
	at->assign = rc == 1;
	if (rc == NO_KEY)
		at->key = 0;            /* below the queue's key: kept */
	else if (rc != 1)
		at->key = c->sample;
	if (rc == 1 || (rc != NO_KEY && at->key > c->qkey))
		c->qkey = at->key;
	/* perf switches a queue's thread when it handles a switch record,
	 * before the queue's key reaches the record's time: perf's states
	 * (instructions, trace starts and stops, interrupts, overflows,
	 * errors) have the thread of the queue's key */
	at->have_task = 0;
	if (ev->flags & PTD_EVF_TIME_VALID && ev->time > c->ev_tmax)
		c->ev_tmax = ev->time;
	if (ev->kind != PTD_EV_PAGING && ev->kind != PTD_EV_EXEC_MODE &&
	    ev->kind != PTD_EV_SWITCH && ev->kind != PTD_EV_TIME &&
	    sideband_named(c, ev))
		at->have_task = !sideband_task_at(c->sb, c->cpu,
						  perfclock_ns(c, c->qkey),
						  &at->pid, &at->tid);
	return 0;
}

int perfclock_new(const struct intelpt_params *p, const struct intelpt_queue *q,
		  const struct sideband *sb, struct perfclock **out)
{
	struct perfclock *c = calloc(1, sizeof(*c));

	if (!c)
		return PTD_ERR_NOMEM;
	if (q->pieces && q->npieces) {
		c->pieces = q->pieces;
		c->npieces = q->npieces;
	} else {
		c->one.data = q->data;
		c->one.size = q->data ? q->size : 0;
		c->pieces = &c->one;
		c->npieces = 1;
	}
	c->mtc_shift = p->mtc_freq;
	c->rem_mask = (1u << c->mtc_shift) - 1;
	c->ratio_n = p->cpuid_0x15_ebx;
	c->ratio_d = c->ratio_n ? p->cpuid_0x15_eax : 0;
	if (c->ratio_d && !(c->ratio_n % c->ratio_d))
		c->mult = c->ratio_n / c->ratio_d;
	c->max_nt = p->nom_freq;
	c->params = *p;
	c->sb = sb;
	c->cpu = q->cpu;
	*out = c;
	return 0;
}

const char *perfclock_lost(const struct perfclock *c, uint64_t *byte,
			   int32_t *cpu)
{
	*byte = c->why_at;
	*cpu = c->cpu;
	return c->why ? c->why : "";
}

uint64_t perfclock_ns(const struct perfclock *c, uint64_t tsc)
{
	return intelpt_tsc_to_perf(&c->params, tsc);
}

void perfclock_continue(struct perfclock *c, const struct perfclock *prev)
{
	if (c->started || !prev || prev->why)
		return;
	c->prev = prev;
	carry_timing(c);
}

void perfclock_free(struct perfclock *c)
{
	free(c);
}
