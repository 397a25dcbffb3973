/* SPDX-License-Identifier: MIT */
/*
 * session - the public API facade: opens an input (input/), creates its
 * backend (backend_choice), and hands out events and blocks with the
 * statistics, limits and filters the options ask for.  Symbolization is
 * in symbols.c.
 */
#include "session.h"
#include "backend_choice.h"
#include "coresight.h"
#include "disasm.h"
#include "intelpt.h"
#include "input.h"
#include "sideband.h"
#include "symbols.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ptd_event_kind_name(int kind)
{
	static const char *const names[] = {
		[PTD_EV_INSN] = "insn", [PTD_EV_ENABLED] = "enabled",
		[PTD_EV_DISABLED] = "disabled", [PTD_EV_ASYNC] = "async",
		[PTD_EV_OVERFLOW] = "overflow", [PTD_EV_PAGING] = "paging",
		[PTD_EV_EXEC_MODE] = "exec-mode", [PTD_EV_SWITCH] = "switch",
		[PTD_EV_TIME] = "time", [PTD_EV_ERROR] = "error",
		[PTD_EV_GAP] = "gap", [PTD_EV_LOST] = "lost", [PTD_EV_TSX] = "tsx",
		[PTD_EV_PTWRITE] = "ptwrite", [PTD_EV_POWER] = "power",
	};

	if (kind > 0 && kind < (int)(sizeof(names) / sizeof(names[0])) && names[kind])
		return names[kind];
	return "unknown";
}

const char *ptd_iclass_name(int iclass)
{
	static const char *const names[] = {
		[PTD_IC_UNKNOWN] = "unknown", [PTD_IC_OTHER] = "other",
		[PTD_IC_CALL] = "call", [PTD_IC_RETURN] = "return",
		[PTD_IC_JUMP] = "jump", [PTD_IC_COND_JUMP] = "cond",
		[PTD_IC_FAR_CALL] = "far-call", [PTD_IC_FAR_RETURN] = "far-return",
		[PTD_IC_FAR_JUMP] = "far-jump", [PTD_IC_PTWRITE] = "ptwrite",
		[PTD_IC_IND_CALL] = "indirect-call", [PTD_IC_IND_JUMP] = "indirect",
	};

	if (iclass >= 0 && iclass < (int)(sizeof(names) / sizeof(names[0])) && names[iclass])
		return names[iclass];
	return "unknown";
}

int ptd_library_versions(char *buf, size_t len)
{
	char ipt[64], ocsd[64], cs[64];
	int n;

	if (!buf || !len)
		return PTD_ERR_INVAL;
	intelpt_libipt_version(ipt, sizeof(ipt));
	coresight_opencsd_version(ocsd, sizeof(ocsd));
	disasm_capstone_version(cs, sizeof(cs));
	n = snprintf(buf, len, "libipt %s, OpenCSD %s, capstone %s", ipt, ocsd, cs);
	return n < 0 ? PTD_ERR_INVAL : n;
}

/* ------------------------------------------------------------------ */

static int fail(struct ptd_session *s, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct ptd_session *s, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

/* The input's warning sink: the session keeps them for ptd_warning(). */
static int add_warning(void *ctx, const char *msg)
{
	struct ptd_session *s = ctx;

	if (util_grow((void **)&s->warnings, &s->wcap, s->nwarnings + 1, sizeof(char *)))
		return PTD_ERR_NOMEM;
	s->warnings[s->nwarnings] = strdup(msg);
	if (!s->warnings[s->nwarnings])
		return PTD_ERR_NOMEM;
	s->nwarnings++;
	return 0;
}

const char *ptd_errmsg(const struct ptd_session *s)
{
	if (!s)
		return "out of memory";
	if (s->errmsg[0])
		return s->errmsg;
	if (s->be)
		return s->be->errmsg(s->be);
	return "";
}

size_t ptd_warning_count(const struct ptd_session *s)
{
	return s ? s->nwarnings : 0;
}

const char *ptd_warning(const struct ptd_session *s, size_t i)
{
	return s && i < s->nwarnings ? s->warnings[i] : NULL;
}

/* ------------------------------------------------------------------ */
/* opening                                                             */

/* A session with a copy of opts (as much of it as the caller's version
 * has), an empty input and symbol cache.  NULL when out of memory. */
static struct ptd_session *session_new(const struct ptd_open_opts *opts)
{
	struct ptd_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->stats.sz = sizeof(s->stats);
	if (opts) {
		size_t n = opts->sz < sizeof(s->opts) ? opts->sz : sizeof(s->opts);

		memcpy(&s->opts, opts, n);
	}
	s->opts.sz = sizeof(s->opts);
	return s;
}

int ptd_open_kind(struct ptd_session **out, const char *path,
		  enum ptd_input_kind kind, const struct ptd_open_opts *opts)
{
	struct input_sink sink;
	struct ptd_session *s;
	int rc;

	if (!out)
		return PTD_ERR_INVAL;
	*out = s = session_new(opts);
	if (!s)
		return PTD_ERR_NOMEM;
	sink.warn = add_warning;
	sink.ctx = s;
	sink.stats = &s->stats;
	if (input_new(&s->in, &s->opts, &sink) || !(s->sym = symbols_new()))
		return fail(s, PTD_ERR_NOMEM, "out of memory");
	rc = input_load(s->in, path, kind, s->errmsg, sizeof(s->errmsg));
	if (rc)
		return rc;
	if ((s->opts.flags & PTD_OPEN_SIDEBAND_ONLY) && !s->in->nchunks &&
	    (s->in->kind == PTD_INPUT_PERF_DATA || s->in->kind == PTD_INPUT_CAPTURE_DIR))
		return 0;   /* no trace: ptd_next ends at once */
	return backend_choice_open(&s->opts, s->in, &s->be, s->errmsg,
				   sizeof(s->errmsg));
}

int ptd_open(struct ptd_session **out, const char *path,
	     const struct ptd_open_opts *opts)
{
	return ptd_open_kind(out, path, PTD_INPUT_AUTO, opts);
}

void ptd_close(struct ptd_session *s)
{
	if (!s)
		return;
	if (s->be)
		s->be->destroy(s->be);
	input_free(s->in);
	for (size_t i = 0; i < s->nwarnings; i++)
		free(s->warnings[i]);
	free(s->warnings);
	free(s->blk_insn);
	free(s->blk);
	symbols_free(s->sym);
	free(s);
}

/* ------------------------------------------------------------------ */
/* events and blocks                                                   */

/* Per-event bookkeeping shared by ptd_next and ptd_next_blocks: counters,
 * current time, pid from tid.  Returns 0 to hand the event out, 1 to skip
 * it, PTD_ERR_END when a limit is reached. */
static int account(struct ptd_session *s, struct ptd_event *ev)
{
	if ((ev->flags & PTD_EVF_TIME_VALID) && s->opts.time_end &&
	    ev->time > s->opts.time_end)
		return PTD_ERR_END;
	if (ev->flags & PTD_EVF_TIME_VALID)
		s->cur_time = ev->time;
	/* Backends that know only the thread (CoreSight context IDs) get
	 * the process from the sideband. */
	if (ev->pid < 0 && ev->tid > 0) {
		if (ev->tid != s->last_tid) {
			s->last_tid = ev->tid;
			s->last_pid = sideband_pid_of(s->in->sb, ev->tid);
		}
		ev->pid = s->last_pid;
	}
	if (s->opts.time_start && (ev->flags & PTD_EVF_TIME_VALID) &&
	    ev->time < s->opts.time_start)
		return 1;
	if (ev->flags & PTD_EVF_RESYNCED)
		s->stats.resyncs++;
	switch (ev->kind) {
	case PTD_EV_INSN: s->stats.instructions++; break;
	case PTD_EV_ERROR:
		s->stats.errors++;
		if (ev->error == PTD_ERR_UNSUPPORTED)
			s->stats.unsupported_packets++;
		break;
	case PTD_EV_LOST:
		if (ev->error == PTD_ERR_UNSUPPORTED)
			s->stats.unsupported_packets += ev->addr;
		break;
	case PTD_EV_GAP: s->stats.gaps++; break;
	case PTD_EV_OVERFLOW: s->stats.overflows++; break;
	default: break;
	}
	return 0;
}

static int next_event(struct ptd_session *s, struct ptd_event *ev);

int ptd_next(struct ptd_session *s, struct ptd_event *ev)
{
	if (!s || !ev)
		return PTD_ERR_INVAL;
	if (s->opts.flags & PTD_OPEN_COUNT_ONLY)
		return fail(s, PTD_ERR_INVAL, "ptd_next: the session was opened with "
			    "PTD_OPEN_COUNT_ONLY (no instructions): use ptd_next_blocks");
	return next_event(s, ev);
}

int ptd_insn_text(struct ptd_session *s, const struct ptd_event *ev,
		  char *buf, size_t len)
{
	if (!s || !ev || !buf || !len)
		return PTD_ERR_INVAL;
	if (!s->be || !s->be->insn_text)
		return PTD_ERR_UNSUPPORTED;
	return s->be->insn_text(s->be, ev, buf, len);
}

/* ptd_next, also under ptd_next_blocks for backends without blocks. */
static int next_event(struct ptd_session *s, struct ptd_event *ev)
{
	int rc;

	if (!s->be || s->ended)
		return PTD_ERR_END;
	for (;;) {
		if (s->opts.max_insns && s->stats.instructions >= s->opts.max_insns) {
			s->ended = 1;
			return PTD_ERR_END;
		}
		rc = s->be->next(s->be, ev);
		if (rc < 0) {
			if (rc == PTD_ERR_END)
				s->ended = 1;
			return rc;
		}
		rc = account(s, ev);
		if (rc == PTD_ERR_END) {
			s->ended = 1;
			return rc;
		}
		if (rc == 0)
			return 0;
	}
}

/* Blocks of backends that have none: each instruction event is a block of
 * one, pointing at a saved copy of the event. */
#define BLK_INSN_MAX 256
#define CTX_EVENT BACKEND_CTX_EVENT

static int blocks_from_events(struct ptd_session *s, const struct ptd_block **out,
			      size_t *n, struct ptd_event *ev, int *have_ev)
{
	int rc;

	if (!s->blk_insn && (!(s->blk_insn = calloc(BLK_INSN_MAX, sizeof(*s->blk_insn))) ||
			     !(s->blk = calloc(BLK_INSN_MAX, sizeof(*s->blk)))))
		return PTD_ERR_NOMEM;
	*out = s->blk;
	while (*n < BLK_INSN_MAX) {
		struct ptd_event *slot = &s->blk_insn[*n];

		rc = next_event(s, slot);
		if (rc < 0)
			return *n ? 0 : rc;
		if (slot->kind != PTD_EV_INSN) {
			*ev = *slot;
			*have_ev = 1;
			return 0;
		}
		s->blk[*n].priv = slot;
		s->blk[*n].ninsn = 1;
		s->blk[*n].ctx = CTX_EVENT;
		(*n)++;
	}
	return 0;
}

int ptd_next_blocks(struct ptd_session *s, const struct ptd_block **blocks,
		    size_t *n, struct ptd_event *ev, int *have_ev)
{
	int rc;

	if (!s || !blocks || !n || !ev || !have_ev)
		return PTD_ERR_INVAL;
	*n = 0;
	*have_ev = 0;
	if (!s->be || s->ended)
		return PTD_ERR_END;
	/* a block has one time: a --time window is decided per instruction */
	if (!s->be->next_blocks || s->opts.time_start || s->opts.time_end)
		return blocks_from_events(s, blocks, n, ev, have_ev);
	for (;;) {
		uint64_t sum = 0;
		uint64_t limit = s->opts.max_insns ?
				 s->opts.max_insns - s->stats.instructions : 0;

		rc = s->be->next_blocks(s->be, blocks, n, &sum, limit, ev, have_ev);
		if (rc < 0) {
			if (rc == PTD_ERR_END)
				s->ended = 1;
			return rc;
		}
		s->stats.instructions += sum;
		if (*have_ev) {
			int a = account(s, ev);

			if (a == PTD_ERR_END) {
				s->ended = 1;
				return PTD_ERR_END;
			}
			if (a == 1) {
				*have_ev = 0;
				continue;
			}
		}
		if (s->opts.max_insns && s->stats.instructions >= s->opts.max_insns)
			s->ended = 1;
		return 0;
	}
}

int ptd_block_info(const struct ptd_session *s, const struct ptd_block *b,
		   struct ptd_block_info *info)
{
	if (!s || !b || !info)
		return PTD_ERR_INVAL;
	if (b->ctx == CTX_EVENT) {
		const struct ptd_event *e = b->priv;

		memset(info, 0, sizeof(*info));
		info->ip = e->ip;
		info->time = e->flags & PTD_EVF_TIME_VALID ? e->time : 0;
		info->pid = e->pid;
		info->tid = e->tid;
		info->cpu = e->cpu;
		info->queue = e->queue;
		info->mode = e->mode;
		info->last_iclass = e->iclass;
		info->image = e->image;
		return 0;
	}
	if (!s->be || !s->be->block_info)
		return PTD_ERR_INVAL;
	return s->be->block_info(s->be, b, info);
}

int ptd_block_insn(const struct ptd_session *s, const struct ptd_block *b,
		   uint32_t i, struct ptd_event *ev)
{
	if (!s || !b || !ev)
		return PTD_ERR_INVAL;
	if (b->ctx == CTX_EVENT) {
		if (i)
			return PTD_ERR_INVAL;
		*ev = *(const struct ptd_event *)b->priv;
		return 0;
	}
	if (!s->be || !s->be->block_insn)
		return PTD_ERR_INVAL;
	return s->be->block_insn(s->be, b, i, ev);
}

int ptd_get_progress(const struct ptd_session *s, uint64_t *done,
		     uint64_t *total)
{
	if (!s || !done || !total)
		return PTD_ERR_INVAL;
	*total = s->stats.trace_bytes;
	*done = 0;
	if (!s->be || !s->be->progress)
		return PTD_ERR_UNSUPPORTED;
	*done = s->be->progress(s->be);
	if (*done > *total)
		*done = *total;
	return 0;
}

int ptd_get_stats(const struct ptd_session *s, struct ptd_stats *st)
{
	struct ptd_stats tmp;
	size_t n;

	if (!s || !st || st->sz < sizeof(size_t))
		return PTD_ERR_INVAL;
	n = st->sz < sizeof(s->stats) ? st->sz : sizeof(s->stats);
	tmp = s->stats;
	if (s->be && s->be->get_stats) {
		struct backend_stats bs;

		s->be->get_stats(s->be, &bs);
		tmp.segments = bs.segments;
		tmp.segments_libipt = bs.segments_fallback;
		tmp.clock_fallback_queues = bs.clock_fallback_queues;
		tmp.clock_fallback_events = bs.clock_fallback_events;
		tmp.pieces_ahead = bs.pieces_ahead;
		tmp.pieces_redone = bs.pieces_redone;
	}
	memcpy(st, &tmp, n);
	st->sz = n;
	return 0;
}
