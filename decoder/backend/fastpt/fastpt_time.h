/* SPDX-License-Identifier: MIT */
/*
 * fastpt_time - the fast Intel PT decoder's clock (backend stage,
 * backend/fastpt/): the TSC estimate libipt's query decoder keeps from
 * the timing packets (TSC, TMA, MTC, CYC, CBR) and its calibration of
 * the cycle counter, kept the same way, so that times equal the libipt
 * path's (--decoder=libipt) to the tick.
 *
 * The walk (fastpt_walk.c) feeds the timing packets in (a few integer
 * operations, no library call) and reads the TSC only where an event or
 * a block record needs a time; turning it into perf time is left to
 * that point too.  Where only events read the time (count-only), it
 * passes MTC and CYC packets over and feeds them when a time is asked
 * for.
 *
 * What libipt reports as an error (a CTC going backwards by more than
 * one wrap, a TMA where none may be, a CBR of 0) is FTIME_ERR here: the
 * walk then leaves the segment to libipt, which reports it.
 */
#ifndef PTD_FASTPT_TIME_H
#define PTD_FASTPT_TIME_H

#include <stdint.h>

#define FTIME_ERR (-1)

/* The configuration the clock needs (libipt's struct pt_config fields). */
struct ftime_cfg {
	uint8_t mtc_freq;          /* log2 of the MTC period in CTC ticks */
	uint8_t nom_freq;          /* nominal core:bus ratio, 0 unknown */
	uint8_t skl168;            /* erratum SKL168 applies */
	uint32_t ctc_eax, ctc_ebx; /* CPUID 0x15: TSC = CTC * ebx / eax */
};

struct ftime {
	/* the estimate */
	uint64_t tsc;              /* the current TSC estimate */
	uint64_t base;             /* TSC at the last TSC/MTC */
	uint64_t fc;               /* fast-counter ticks since base */
	uint32_t ctc;              /* CTC of the last TMA/MTC */
	uint32_t ctc_cyc;          /* CTC where CYC counting restarted */
	uint8_t have_tsc, have_tma, have_mtc;
	uint8_t lost_cyc;          /* a CYC came before any calibration */
	/* the calibration: fast-counter ticks per cycle, << 8 */
	uint64_t fcr, min_fcr, max_fcr;
	uint64_t cal_tsc;          /* TSC of the last TSC packet */
	uint64_t cyc_tsc, cyc_mtc; /* cycles since that TSC, last MTC */
	uint32_t cal_ctc;          /* CTC of the last calibrating MTC */
	uint8_t cal_have_mtc, check_skl168;
};

/* A clock that has seen nothing (as after a libipt sync). */
void ftime_init(struct ftime *t);

/* A packet.  header: inside PSB+.  Return 0 or FTIME_ERR. */
int ftime_psb(struct ftime *t, const struct ftime_cfg *c);
int ftime_tsc(struct ftime *t, const struct ftime_cfg *c, uint64_t tsc, int header);
int ftime_cbr(struct ftime *t, const struct ftime_cfg *c, uint8_t ratio, int header);
int ftime_tma(struct ftime *t, const struct ftime_cfg *c, uint16_t ctc, uint16_t fc);
int ftime_mtc(struct ftime *t, const struct ftime_cfg *c, uint8_t ctc);
int ftime_cyc_rest(struct ftime *t, const struct ftime_cfg *c, uint64_t cyc);

/* libipt's fixed-point shift of the calibration ratio */
#define FCR_SHIFT 8

static inline int ftime_have_fcr(const struct ftime *t)
{
	return t->min_fcr <= t->max_fcr;
}

/* An MTC packet: in traces with MTC and no CYC one between most TNT
 * packets, so the common case (an MTC after the TMA or an earlier MTC,
 * no cycles counted to calibrate with) stays inline; ftime_mtc does the
 * same for it. */
static inline int ftime_mtc_fast(struct ftime *t, const struct ftime_cfg *c, uint8_t payload)
{
	uint32_t ctc = (uint32_t)payload << c->mtc_freq, last = t->ctc;
	uint64_t fc;

	if (__builtin_expect(!t->cal_have_mtc || t->cyc_mtc || !t->have_mtc ||
			     (t->have_tsc && !t->have_tma), 0))
		return ftime_mtc(t, c, payload);
	t->check_skl168 = 0;
	if (t->fc || t->lost_cyc)
		t->ctc_cyc = ctc;
	t->fc = 0;
	t->ctc = ctc;
	t->lost_cyc = 0;
	if (ctc < last) {
		ctc += 1u << (c->mtc_freq + 8);
		if (ctc < last)
			return FTIME_ERR;
	}
	if (!c->ctc_eax || !c->ctc_ebx)
		return 0;
	fc = ctc - last;
	fc = c->ctc_eax == 1 ? fc * c->ctc_ebx : fc * c->ctc_ebx / c->ctc_eax;
	t->base += fc;
	t->tsc = t->base;
	return 0;
}

/* A CYC packet: most of a cycle-accurate trace's packets, so the common
 * case (calibrated, cycles already counted in this MTC period) stays
 * inline. */
static inline int ftime_cyc(struct ftime *t, const struct ftime_cfg *c, uint64_t cyc)
{
	t->cyc_mtc += cyc;
	t->cyc_tsc += cyc;
	if (__builtin_expect(t->fc && t->fcr && ftime_have_fcr(t), 1)) {
		t->fc += (cyc * t->fcr) >> FCR_SHIFT;
		t->tsc = t->base + t->fc;
		return 0;
	}
	return ftime_cyc_rest(t, c, cyc);
}

#endif
