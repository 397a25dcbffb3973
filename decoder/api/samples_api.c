/* SPDX-License-Identifier: MIT */
/*
 * samples_api - api stage (decoder/api/): the public ptd_samples_* calls
 * over input/samples' stitched sample set.
 */
#include "ptdecode.h"
#include "samples.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct ptd_samples {
	struct sample_set *ss;
	size_t next;
	char err[1024];
};

PTD_API int ptd_samples_open(struct ptd_samples **out, const char *path,
			     const struct ptd_samples_opts *opts)
{
	struct ptd_samples *sp;
	int rc;

	if (!out)
		return PTD_ERR_INVAL;
	*out = sp = calloc(1, sizeof(*sp));
	if (!sp)
		return PTD_ERR_NOMEM;
	if (!path || (opts && opts->sz < sizeof(size_t) + sizeof(unsigned int))) {
		util_errf(sp->err, sizeof(sp->err), "ptd_samples_open: %s",
			  path ? "opts.sz must be sizeof(struct ptd_samples_opts)"
			       : "no path");
		return PTD_ERR_INVAL;
	}
	rc = samples_load(path, &sp->ss, sp->err, sizeof(sp->err));
	return rc;
}

PTD_API void ptd_samples_close(struct ptd_samples *sp)
{
	if (!sp)
		return;
	samples_free(sp->ss);
	free(sp);
}

PTD_API const char *ptd_samples_errmsg(const struct ptd_samples *sp)
{
	return sp ? sp->err : "";
}

PTD_API size_t ptd_samples_warning_count(const struct ptd_samples *sp)
{
	return sp && sp->ss ? sp->ss->nwarnings : 0;
}

PTD_API const char *ptd_samples_warning(const struct ptd_samples *sp, size_t i)
{
	return sp && sp->ss && i < sp->ss->nwarnings ? sp->ss->warnings[i] : NULL;
}

PTD_API int ptd_samples_next(struct ptd_samples *sp, struct ptd_sample *smp)
{
	struct ptd_sample o = { 0 };
	const struct sample_entry *e;
	const struct sample_set *ss;

	if (!sp || !sp->ss || !smp || smp->sz < sizeof(size_t))
		return PTD_ERR_INVAL;
	ss = sp->ss;
	if (sp->next >= ss->n)
		return PTD_ERR_END;
	e = &ss->v[sp->next++];
	o.sz = smp->sz < sizeof(o) ? smp->sz : sizeof(o);
	o.time = e->time;
	o.cpu = e->cpu;
	o.pid = e->pid;
	o.tid = e->tid;
	o.ip = e->ip;
	o.period = e->period;
	o.id = e->id;
	o.cpumode = e->cpumode;
	o.flags = e->flags;
	o.comm = e->comm;
	o.event = ss->events[e->event];
	o.callchain = e->cc_n ? ss->frames + e->cc_off : NULL;
	o.callchain_ctx = e->cc_n ? ss->ctx + e->cc_off : NULL;
	o.callchain_nr = e->cc_n;
	o.cookie = e->cookie;
	o.deferred_time = e->deferred_time;
	o.branches = e->br_n ? ss->br + e->br_off : NULL;
	o.nbranches = e->br_n;
	memcpy(smp, &o, o.sz);
	return 0;
}

PTD_API void ptd_samples_rewind(struct ptd_samples *sp)
{
	if (sp)
		sp->next = 0;
}

PTD_API int ptd_samples_get_stats(const struct ptd_samples *sp,
				  struct ptd_samples_stats *st)
{
	size_t n;

	if (!sp || !sp->ss || !st || st->sz < sizeof(size_t))
		return PTD_ERR_INVAL;
	n = st->sz < sizeof(*st) ? st->sz : sizeof(*st);
	memcpy((char *)st + sizeof(size_t), (const char *)&sp->ss->st + sizeof(size_t),
	       n - sizeof(size_t));
	return 0;
}
