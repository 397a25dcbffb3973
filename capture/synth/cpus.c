/* SPDX-License-Identifier: MIT */
#include "cpus.h"

#include <string.h>

int synth_cpus_open(struct synth_cpus *cs, int n, const struct ptgen_opts *go,
		    ptgen_flush_fn fn, void *owner)
{
	memset(cs, 0, sizeof(*cs));
	if (n < 1 || n > SYNTH_MAX_CPUS)
		return -1;
	for (int i = 0; i < n; i++) {
		struct synth_cpu *c = &cs->c[i];

		c->idx = i;
		c->cur = -1;
		c->owner = owner;
		if (ptgen_new(&c->gen, go, fn, c) < 0)
			return -1;
		cs->n = i + 1;
	}
	return 0;
}

int synth_cpus_finish(struct synth_cpus *cs)
{
	int rc = 0;

	for (int i = 0; i < cs->n; i++) {
		int r = ptgen_finish(cs->c[i].gen);

		if (r < 0 && !rc)
			rc = r;
	}
	return rc;
}

void synth_cpus_stats(const struct synth_cpus *cs, struct ptgen_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; i < cs->n; i++) {
		struct ptgen_stats g;

		ptgen_get_stats(cs->c[i].gen, &g);
		st->bytes += g.bytes;
		st->psbs += g.psbs;
		st->tnt_bits += g.tnt_bits;
		st->tips += g.tips;
		st->fups += g.fups;
		st->pges += g.pges;
		st->pgds += g.pgds;
		st->rets_compressed += g.rets_compressed;
		st->tscs += g.tscs;
		st->mtcs += g.mtcs;
		st->cycs += g.cycs;
		st->ovfs += g.ovfs;
		st->ovf_psbs += g.ovf_psbs;
	}
}

void synth_cpus_free(struct synth_cpus *cs)
{
	for (int i = 0; i < cs->n; i++)
		ptgen_free(cs->c[i].gen);
	cs->n = 0;
}

int synth_cpus_next(const struct synth_cpus *cs, int (*can_run)(void *ctx, int cpu),
		    void *ctx)
{
	int best = -1;
	uint64_t bt = 0;

	for (int i = 0; i < cs->n; i++) {
		uint64_t t = ptgen_tsc(cs->c[i].gen);

		if ((best < 0 || t < bt) && can_run(ctx, i)) {
			best = i;
			bt = t;
		}
	}
	return best;
}

void synth_cpus_catch_up(struct synth_cpu *c, uint64_t tsc)
{
	uint64_t now = ptgen_tsc(c->gen);

	if (tsc > now)
		ptgen_advance(c->gen, tsc - now);
}
