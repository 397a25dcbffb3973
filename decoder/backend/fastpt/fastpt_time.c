/* SPDX-License-Identifier: MIT */
#include "fastpt_time.h"

#include <string.h>

/* Payload widths (Intel SDM, Intel PT packets) and libipt's fixed-point
 * shift of the calibration ratio. */
#define MTC_BITS 8
#define TMA_CTC_BITS 16
#define TSC_BITS 56

/* A setting missing (CPUID 0x15 ratio 0): libipt ignores the packet's
 * effect on time without an error. */
#define BADCFG 1

/* CTC ticks from last to ctc, allowing one wrap of the MTC's bits. */
static int ctc_delta(const struct ftime_cfg *c, uint32_t ctc, uint32_t last,
		     uint32_t *delta)
{
	if (ctc < last) {
		ctc += 1u << (c->mtc_freq + MTC_BITS);
		if (ctc < last)
			return FTIME_ERR;
	}
	*delta = ctc - last;
	return 0;
}

/* CTC ticks in TSC (fast counter) ticks. */
static int ctc_to_fc(const struct ftime_cfg *c, uint64_t ctc, uint64_t *fc)
{
	if (!c->ctc_eax || !c->ctc_ebx)
		return BADCFG;
	/* the ratio is often n/1: no division then */
	*fc = c->ctc_eax == 1 ? ctc * c->ctc_ebx : ctc * c->ctc_ebx / c->ctc_eax;
	return 0;
}

static void set_fcr(struct ftime *t, uint64_t fcr)
{
	t->fcr = fcr;
	if (fcr < t->min_fcr)
		t->min_fcr = fcr;
	if (fcr > t->max_fcr)
		t->max_fcr = fcr;
}

static void cal_reset(struct ftime *t)
{
	t->fcr = t->max_fcr = 0;
	t->min_fcr = UINT64_MAX;
	t->cal_tsc = t->cyc_tsc = t->cyc_mtc = 0;
	t->cal_ctc = 0;
	t->cal_have_mtc = t->check_skl168 = 0;
}

void ftime_init(struct ftime *t)
{
	memset(t, 0, sizeof(*t));
	cal_reset(t);
}

int ftime_psb(struct ftime *t, const struct ftime_cfg *c)
{
	if (c->skl168)
		t->check_skl168 = 1;
	return 0;
}

/* Calibration from the cycles between two TSCs of PSB+, when no MTC
 * calibrates. */
static int cal_header_tsc(struct ftime *t, uint64_t tsc)
{
	uint64_t last = t->cal_tsc, cyc = t->cyc_tsc, delta;

	t->cal_tsc = tsc;
	t->cyc_tsc = 0;
	if (!last || !cyc || t->cal_have_mtc)
		return 0;
	if (tsc < last) {
		tsc += 1ull << TSC_BITS;
		if (tsc < last)
			return FTIME_ERR;
	}
	delta = tsc - last;
	if (delta & ~(~0ull >> FCR_SHIFT))
		return FTIME_ERR;
	set_fcr(t, (delta << FCR_SHIFT) / cyc);
	return 0;
}

int ftime_tsc(struct ftime *t, const struct ftime_cfg *c, uint64_t tsc, int header)
{
	(void)c;
	if (header) {
		if (cal_header_tsc(t, tsc) < 0)
			return FTIME_ERR;
	} else {
		/* a TSC outside PSB+ does not calibrate */
		t->cal_tsc = tsc;
		t->cyc_tsc = 0;
	}
	t->have_tsc = 1;
	t->have_tma = t->have_mtc = 0;
	t->tsc = t->base = tsc;
	t->ctc = 0;
	t->fc = 0;
	t->lost_cyc = 0;
	return 0;
}

int ftime_cbr(struct ftime *t, const struct ftime_cfg *c, uint8_t ratio, int header)
{
	/* outside PSB+ the frequency changed: calibration starts over */
	if (!header)
		cal_reset(t);
	if (!ratio)
		return FTIME_ERR;
	if (c->nom_freq)
		set_fcr(t, ((uint64_t)c->nom_freq << FCR_SHIFT) / ratio);
	return 0;
}

int ftime_tma(struct ftime *t, const struct ftime_cfg *c, uint16_t ctc, uint16_t fc)
{
	uint32_t hi = c->mtc_freq + MTC_BITS;

	/* one TMA right after each TSC, before any MTC */
	if (!t->have_tsc || t->have_tma || t->have_mtc)
		return FTIME_ERR;
	t->have_tma = 1;
	t->base -= fc;
	t->fc += fc;
	/* the TMA carries all the CTC bits an MTC would: it counts as one */
	if (hi <= TMA_CTC_BITS)
		t->have_mtc = 1;
	t->ctc = t->ctc_cyc = ctc & ((1u << hi) - 1u);
	return 0;
}

/* Calibration: the cycles counted since the last MTC over its CTC ticks. */
static int cal_mtc(struct ftime *t, const struct ftime_cfg *c, uint32_t ctc)
{
	uint32_t last = t->cal_ctc, delta;
	uint64_t cyc = t->cyc_mtc, fc, fcr;
	int skl168 = t->check_skl168, rc;

	t->check_skl168 = 0;  /* the first MTC after PSB only */
	if (!t->cal_have_mtc) {
		t->cyc_mtc = 0;
		t->cal_ctc = ctc;
		t->cal_have_mtc = 1;
		return 0;
	}
	/* no cycles yet: the next MTC calibrates over both periods */
	if (!cyc)
		return 0;
	t->cyc_mtc = 0;
	t->cal_ctc = ctc;
	if (ctc_delta(c, ctc, last, &delta) < 0)
		return FTIME_ERR;
	rc = ctc_to_fc(c, delta, &fc);
	if (rc)
		return rc;
	if (fc & ~(~0ull >> FCR_SHIFT))
		return FTIME_ERR;
	fcr = (fc << FCR_SHIFT) / cyc;
	if (skl168) {
		/* SKL168: a CYC may be lost right before PSB; this MTC does
		 * not calibrate when an MTC was lost or the cycles look
		 * short by a wrap of the cycle counter */
		if ((1u << c->mtc_freq) < delta)
			return 0;
		if (c->mtc_freq < 10 && ftime_have_fcr(t) &&
		    ((t->fcr * (cyc + 0xf00)) >> FCR_SHIFT) < fc)
			return 0;
	}
	set_fcr(t, fcr);
	return 0;
}

int ftime_mtc(struct ftime *t, const struct ftime_cfg *c, uint8_t payload)
{
	uint32_t ctc = (uint32_t)payload << c->mtc_freq, last, delta;
	uint64_t fc;
	int had_mtc, rc;

	rc = cal_mtc(t, c, ctc);
	if (rc < 0)
		return FTIME_ERR;
	/* MTCs between a TSC and its TMA would look like CTC overflows */
	if (t->have_tsc && !t->have_tma)
		return 0;
	last = t->ctc;
	had_mtc = t->have_mtc;
	if (t->fc || t->lost_cyc || !had_mtc)
		t->ctc_cyc = ctc;
	t->have_mtc = 1;
	t->fc = 0;
	t->ctc = ctc;
	t->lost_cyc = 0;
	if (!had_mtc) {
		uint32_t lo = ctc & 0xffffu, hi = ctc & ~0xffffu;

		/* no TMA: where in the period tracing started is unknown */
		if (!t->have_tma)
			return 0;
		if (last & ~0xffffu)
			return FTIME_ERR;
		/* the TMA's CTC lacks the bits above 16: this MTC's, one
		 * period back if its low bits wrapped since */
		if (lo < last) {
			hi -= 1u << TMA_CTC_BITS;
			hi &= 0xffu << c->mtc_freq;
		}
		last |= hi;
	}
	if (ctc_delta(c, ctc, last, &delta) < 0)
		return FTIME_ERR;
	if (ctc_to_fc(c, delta, &fc))
		return 0;
	t->base += fc;
	t->tsc = t->base;
	return 0;
}

/* A CYC count reaching back over MTCs since the last CYC: the part
 * before the last MTC (estimated with the calibration) is not counted
 * again. */
static int cyc_this_period(const struct ftime *t, const struct ftime_cfg *c,
			   uint64_t fcr, uint64_t *cyc)
{
	uint32_t delta;
	uint64_t fc, before;
	int rc;

	if (t->ctc == t->ctc_cyc)
		return 0;
	if (ctc_delta(c, t->ctc, t->ctc_cyc, &delta) < 0)
		return FTIME_ERR;
	rc = ctc_to_fc(c, delta, &fc);
	if (rc)
		return rc;
	before = (fc << FCR_SHIFT) / fcr;
	*cyc = *cyc < before ? 0 : *cyc - before;
	return 0;
}

int ftime_cyc_rest(struct ftime *t, const struct ftime_cfg *c, uint64_t cyc)
{
	uint64_t fcr = ftime_have_fcr(t) ? t->fcr : 0;

	if (!fcr) {
		t->lost_cyc = 1;
		return 0;
	}
	if (!t->fc) {
		int rc = cyc_this_period(t, c, fcr, &cyc);

		if (rc)
			return rc < 0 ? FTIME_ERR : 0;
	}
	t->fc += (cyc * fcr) >> FCR_SHIFT;
	t->tsc = t->base + t->fc;
	return 0;
}
