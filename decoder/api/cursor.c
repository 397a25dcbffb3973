/* SPDX-License-Identifier: MIT */
/* cursor (stage: api/): ptd_cursor_* over the trace index. */
#include "cursor.h"
#include "inlines.h"

#include "fastpt_seek.h"
#include "imgstore.h"
#include "input.h"
#include "linebreak.h"
#include "session.h"
#include "symbols.h"
#include "trace_index.h"
#include "util.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LC_SIZE 4096
#define NVIEW 4               /* pieces decoded and kept: steps back and
			       * forth across a border stay cheap */

struct lc_ent {
	uint64_t ip;
	uint32_t image;
	int32_t file;         /* index into files, -1: no line */
	uint32_t line;
	uint16_t valid;
	uint16_t stmt;        /* a statement of the line starts here */
};

struct cview {
	struct tix_thread v;
	size_t piece;
	int valid;
	uint64_t used;
};

struct ptd_cursor {
	struct ptd_index *ix;
	const struct tix_tinfo *ti;
	size_t piece;                   /* of the position */
	const struct tix_piece_sum *ps;
	const struct tix_thread *t;     /* its view */
	size_t run;
	uint32_t i;
	uint64_t ip;          /* of the instruction at the cursor */
	struct fastpt_reader *rd;
	struct cview views[NVIEW];
	uint64_t tick;
	size_t *stk;
	size_t stkcap;
	struct tix_frame *fst;
	size_t fcap;
	char **files;
	size_t nfiles, filecap;
	/* the address ranges of the last PTD_FIND_LINE's line (lspans < 0:
	 * not known, every address may be on it), and those with the
	 * find's own address ranges */
	char *lfile;
	unsigned int lline;
	int lspans;
	struct ptd_addr_range *ls;
	size_t nls;
	struct ptd_addr_range *sel;
	size_t selcap;
	struct lc_ent lc[LC_SIZE];
	unsigned int flags;             /* enum ptd_cursor_flags */
	struct ptd_frame *xfr;          /* inline frames being expanded */
	size_t xcap;
};

/* Makes piece k the cursor's (its view loaded); the position is the
 * caller's to set.  Returns 0 or an error (the cursor unchanged). */
static int goto_piece(struct ptd_cursor *c, size_t k)
{
	const struct tix_piece_sum *ps = &c->ti->ps[k];
	struct cview *w = NULL;
	size_t j;
	int rc;

	if (ps->seg == TIX_SEG_NONE) {
		c->t = c->ti->whole;
		c->piece = k;
		c->ps = ps;
		return 0;
	}
	for (j = 0; j < NVIEW; j++)
		if (c->views[j].valid && c->views[j].piece == k) {
			w = &c->views[j];
			break;
		}
	if (!w) {
		/* the least recently used, never the cursor's own */
		for (j = 0; j < NVIEW; j++) {
			struct cview *x = &c->views[j];

			if (c->t == &x->v)
				continue;
			if (!w || !x->valid || (w->valid && x->used < w->used))
				w = x;
		}
		if (!c->rd && (rc = fastpt_reader_new(c->ix->s->be, &c->rd)))
			return rc;
		w->valid = 0;
		rc = tix_view_load(c->ix, c->rd, c->ti, k, &w->v);
		if (rc) {
			if (rc == PTD_ERR_DECODE)
				snprintf(c->ix->s->errmsg, sizeof(c->ix->s->errmsg),
					 "the trace index does not match the trace "
					 "(piece %zu of thread %d decodes differently): "
					 "the trace changed; index it again", k,
					 c->ti->tid);
			return rc;
		}
		w->valid = 1;
		w->piece = k;
	}
	w->used = ++c->tick;
	c->t = &w->v;
	c->piece = k;
	c->ps = ps;
	return 0;
}

int ptd_cursor_open(struct ptd_cursor **out, struct ptd_index *ix,
		    int32_t tid, const struct ptd_cursor_opts *opts)
{
	struct ptd_cursor *c;
	size_t k;
	int rc;

	if (!out)
		return PTD_ERR_INVAL;
	*out = NULL;
	if (!ix || (opts && opts->sz < sizeof(size_t)))
		return PTD_ERR_INVAL;
	for (k = 0; k < ix->nti; k++)
		if (ix->ti[k].tid == tid && ix->ti[k].npos)
			break;
	if (k == ix->nti)
		return PTD_ERR_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return PTD_ERR_NOMEM;
	c->ix = ix;
	c->ti = &ix->ti[k];
	if (opts && opts->sz >= offsetof(struct ptd_cursor_opts, flags) +
				sizeof(opts->flags))
		c->flags = opts->flags;
	rc = goto_piece(c, 0);
	if (rc) {
		ptd_cursor_close(c);
		return rc;
	}
	c->ip = c->t->runs[0].ip;
	*out = c;
	return 0;
}

void ptd_cursor_close(struct ptd_cursor *c)
{
	size_t k;

	if (!c)
		return;
	for (k = 0; k < c->nfiles; k++)
		free(c->files[k]);
	for (k = 0; k < NVIEW; k++)
		tix_view_free(&c->views[k].v);
	fastpt_reader_free(c->rd);
	free(c->lfile);
	free(c->ls);
	free(c->sel);
	free(c->files);
	free(c->stk);
	free(c->fst);
	free(c->xfr);
	free(c);
}

static void set_at(struct ptd_cursor *c, size_t run, uint32_t i)
{
	c->run = run;
	c->i = i;
	c->ip = c->t->runs[run].ninsn ? tix_insn_ip(c->t, run, i)
				       : c->t->runs[run].ip;
}

static void set_last(struct ptd_cursor *c)
{
	uint32_t n = c->t->runs[c->t->nruns - 1].ninsn;

	set_at(c, c->t->nruns - 1, n ? n - 1 : 0);
}

static uint64_t cur_pos(const struct ptd_cursor *c)
{
	return c->ps->pos0 + c->t->runs[c->run].pos0 + c->i;
}

static int32_t cur_depth(const struct ptd_cursor *c)
{
	return c->ps->depth0 + c->t->runs[c->run].depth;
}

static int at_piece_end(const struct ptd_cursor *c)
{
	const struct tix_run *r = &c->t->runs[c->run];

	return c->run + 1 == c->t->nruns && (!r->ninsn || c->i + 1 == r->ninsn);
}

static int fwd1(struct ptd_cursor *c)
{
	const struct tix_run *r = &c->t->runs[c->run];
	int rc;

	if (r->ninsn && c->i + 1 < r->ninsn) {
		c->ip += TIX_LEN(c->t->insn[r->insn0 + c->i]);
		c->i++;
		return 0;
	}
	if (c->run + 1 < c->t->nruns) {
		set_at(c, c->run + 1, 0);
		return 0;
	}
	if (c->piece + 1 >= c->ti->nps)
		return PTD_ERR_END;
	rc = goto_piece(c, c->piece + 1);
	if (rc)
		return rc;
	set_at(c, 0, 0);
	return 0;
}

static int back1(struct ptd_cursor *c)
{
	uint32_t n;
	int rc;

	if (c->i) {
		set_at(c, c->run, c->i - 1);
		return 0;
	}
	if (c->run) {
		n = c->t->runs[c->run - 1].ninsn;
		set_at(c, c->run - 1, n ? n - 1 : 0);
		return 0;
	}
	if (!c->piece)
		return PTD_ERR_END;
	rc = goto_piece(c, c->piece - 1);
	if (rc)
		return rc;
	set_last(c);
	return 0;
}

/* The last run whose first position (by_insn: instruction number) is
 * <= v (view numbers). */
static size_t last_run_le(const struct tix_thread *t, uint64_t v, int by_insn)
{
	size_t lo = 0, hi = t->nruns;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if ((by_insn ? t->runs[mid].insn0 : t->runs[mid].pos0) <= v)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The last piece whose first position (by_insn: instruction) is <= v. */
static size_t last_piece_le(const struct tix_tinfo *ti, uint64_t v, int by_insn)
{
	size_t lo = 0, hi = ti->nps;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if ((by_insn ? ti->ps[mid].insn0 : ti->ps[mid].pos0) <= v)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int ptd_cursor_seek_pos(struct ptd_cursor *c, uint64_t p)
{
	size_t lo;
	int rc;

	if (!c)
		return PTD_ERR_INVAL;
	if (p >= c->ti->npos)
		return PTD_ERR_END;
	rc = goto_piece(c, last_piece_le(c->ti, p, 0));
	if (rc)
		return rc;
	p -= c->ps->pos0;
	lo = last_run_le(c->t, p, 0);
	set_at(c, lo, (uint32_t)(p - c->t->runs[lo].pos0));
	return 0;
}

int ptd_cursor_seek_insn(struct ptd_cursor *c, uint64_t n)
{
	const struct tix_thread *t;
	size_t lo, k;
	int rc;

	if (!c)
		return PTD_ERR_INVAL;
	if (n >= c->ti->ninsn)
		return PTD_ERR_END;
	k = last_piece_le(c->ti, n, 1);
	if (c->ti->ps[k].seg != TIX_SEG_NONE &&
	    n - c->ti->ps[k].insn0 >= c->ti->ps[k].ninsn)
		return PTD_ERR_END;
	rc = goto_piece(c, k);
	if (rc)
		return rc;
	t = c->t;
	n -= c->ps->insn0;
	lo = last_run_le(t, n, 1);
	/* Stops after the run holding n start after n: lo holds n. */
	if (!t->runs[lo].ninsn || n >= t->runs[lo].insn0 + t->runs[lo].ninsn)
		return PTD_ERR_END;
	set_at(c, lo, (uint32_t)(n - t->runs[lo].insn0));
	return 0;
}

/* The first run of the cursor's view with time >= time, or nruns. */
static size_t first_run_ge(const struct tix_thread *t, uint64_t time)
{
	size_t lo = 0, hi = t->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->runs[mid].time < time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ptd_cursor_seek_time(struct ptd_cursor *c, uint64_t time)
{
	const struct tix_tinfo *ti;
	size_t lo = 0, hi, r;
	int rc;

	if (!c)
		return PTD_ERR_INVAL;
	ti = c->ti;
	hi = ti->nps;
	while (lo < hi) {         /* the first piece starting at >= time */
		size_t mid = lo + (hi - lo) / 2;

		if (ti->ps[mid].time < time)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the piece before may hold it */
	if (lo) {
		size_t cur = c->piece;

		rc = goto_piece(c, lo - 1);
		if (rc)
			return rc;
		r = first_run_ge(c->t, time);
		if (r < c->t->nruns) {
			set_at(c, r, 0);
			return 0;
		}
		if (lo == ti->nps) {
			rc = goto_piece(c, cur);
			return rc ? rc : PTD_ERR_END;
		}
	}
	if (lo == ti->nps)
		return PTD_ERR_END;
	rc = goto_piece(c, lo);
	if (rc)
		return rc;
	set_at(c, 0, 0);  /* it starts at or after time */
	return 0;
}

int ptd_cursor_step(struct ptd_cursor *c, int64_t delta)
{
	uint64_t p, npos;

	if (!c)
		return PTD_ERR_INVAL;
	p = cur_pos(c);
	npos = c->ti->npos;
	if (delta >= 0) {
		if ((uint64_t)delta >= npos - p) {
			int rc = ptd_cursor_seek_pos(c, npos - 1);

			return rc ? rc : PTD_ERR_END;
		}
		if (delta == 1)
			return fwd1(c);
		return ptd_cursor_seek_pos(c, p + (uint64_t)delta);
	}
	if ((uint64_t)-(delta + 1) >= p) {
		int rc = ptd_cursor_seek_pos(c, 0);

		return rc ? rc : PTD_ERR_END;
	}
	if (delta == -1)
		return back1(c);
	return ptd_cursor_seek_pos(c, p - (uint64_t)-(delta + 1) - 1);
}

/* Symbols and lines are looked up at the run's time (image versions). */
static void at_time(struct ptd_cursor *c, uint64_t time)
{
	c->ix->s->cur_time = time;
}

static int file_id(struct ptd_cursor *c, const char *f)
{
	size_t k;

	for (k = 0; k < c->nfiles; k++)
		if (!strcmp(c->files[k], f))
			return (int)k;
	if (util_grow((void **)&c->files, &c->filecap, c->nfiles + 1,
		      sizeof(char *)))
		return -1;
	c->files[c->nfiles] = strdup(f);
	if (!c->files[c->nfiles])
		return -1;
	return (int)c->nfiles++;
}

/* The line of the instruction at the cursor (*file -1: none); returns 1
 * when a statement of that line starts there. */
static int line_here(struct ptd_cursor *c, int *file, unsigned int *line)
{
	const struct tix_run *r = &c->t->runs[c->run];
	struct lc_ent *e;
	char buf[512];
	unsigned int l;
	int stmt = 0;

	*file = -1;
	*line = 0;
	if (!r->ninsn)
		return 0;
	e = &c->lc[((c->ip >> 1) ^ (c->ip >> 13) ^ r->image) & (LC_SIZE - 1)];
	if (!e->valid || e->ip != c->ip || e->image != r->image) {
		e->valid = 1;
		e->ip = c->ip;
		e->image = r->image;
		e->file = -1;
		e->line = 0;
		e->stmt = 0;
		at_time(c, r->time);
		if (symbols_source_stmt(c->ix->s, c->t->pid, c->ip, buf,
					sizeof(buf), &l, &stmt) == 0 && l) {
			e->file = file_id(c, buf);
			e->line = l;
			e->stmt = (uint16_t)stmt;
		}
	}
	*file = e->file;
	*line = e->line;
	return e->stmt;
}

/* Does path name the file the user wrote (the same, or its last
 * components)? */
static int file_matches(const char *path, const char *want)
{
	size_t lp = strlen(path), lw = strlen(want);

	if (lp == lw)
		return !strcmp(path, want);
	return lp > lw && path[lp - lw - 1] == '/' &&
	       !strcmp(path + lp - lw, want);
}

static int on_line(struct ptd_cursor *c, const struct ptd_find_opts *f)
{
	unsigned int l;
	int fi;

	line_here(c, &fi, &l);
	return fi >= 0 && l == f->line && file_matches(c->files[fi], f->file);
}

static int in_ranges(uint64_t ip, const struct ptd_find_opts *f)
{
	size_t k;

	for (k = 0; k < f->nranges; k++)
		if (ip >= f->ranges[k].start && ip < f->ranges[k].end)
			return 1;
	return 0;
}

/* What a search can match, for passing runs and pieces: f, and the
 * addresses where it can (its own, and those of its line). */
struct fsel {
	const struct ptd_find_opts *f;
	const struct ptd_addr_range *r;
	size_t nr;
};

/* Can any instruction of run r match (only addresses and depths)?
 * base: the view's depth at its start. */
static int run_may_match(const struct tix_run *r, const struct fsel *fs,
			 int32_t d0, int32_t base)
{
	const struct ptd_find_opts *f = fs->f;
	int32_t d = base + r->depth;
	size_t k;

	if ((f->what & PTD_FIND_MAX_DEPTH) && d > d0 + f->max_depth)
		return 0;
	if ((f->what & PTD_FIND_DEPTH_BELOW) && d < d0)
		return 1;
	for (k = 0; k < fs->nr; k++)
		if (fs->r[k].start <= r->ip + r->last_off && fs->r[k].end > r->ip)
			return 1;
	return 0;
}

/* Can piece k match f: from its summary (no stop in it, the depths it
 * reaches, the code it runs)? */
static int piece_may_match(const struct ptd_cursor *c, size_t k,
			   const struct fsel *fs, int32_t d0)
{
	const struct ptd_find_opts *f = fs->f;
	const struct tix_piece_sum *p = &c->ti->ps[k];
	int64_t low = (int64_t)p->depth0 + p->min_delta;

	if (p->seg == TIX_SEG_NONE || p->npos != p->ninsn)
		return 1;
	if ((f->what & PTD_FIND_MAX_DEPTH) && low > (int64_t)d0 + f->max_depth)
		return 0;
	if ((f->what & PTD_FIND_DEPTH_BELOW) && low < d0)
		return 1;
	return fs->nr && tix_code_may_hit(c->ix, p, fs->r, fs->nr);
}

/* One move of a search: past the pieces that cannot match when at a
 * piece's border (by_piece), else one position. */
static int find_move(struct ptd_cursor *c, const struct fsel *fs,
		     int32_t d0, int by_piece)
{
	const struct ptd_find_opts *f = fs->f;
	size_t q;
	int rc;

	if (!by_piece)
		return f->backward ? back1(c) : fwd1(c);
	if (!f->backward) {
		if (!at_piece_end(c))
			return fwd1(c);
		for (q = c->piece + 1; q < c->ti->nps && !piece_may_match(c, q, fs, d0); q++)
			;
		if (q == c->piece + 1)
			return fwd1(c);
		if (q == c->ti->nps) {  /* nothing further can match */
			rc = goto_piece(c, q - 1);
			if (rc)
				return rc;
			set_last(c);
			return PTD_ERR_END;
		}
		rc = goto_piece(c, q);
		if (rc)
			return rc;
		set_at(c, 0, 0);
		return 0;
	}
	if (c->run || c->i)
		return back1(c);
	for (q = c->piece; q > 0 && !piece_may_match(c, q - 1, fs, d0); q--)
		;
	if (q == c->piece)
		return back1(c);
	if (q == 0) {
		rc = goto_piece(c, 0);
		if (rc)
			return rc;
		set_at(c, 0, 0);
		return PTD_ERR_END;
	}
	rc = goto_piece(c, q - 1);
	if (rc)
		return rc;
	set_last(c);
	return 0;
}

/* The addresses of f's line (c->ls; known: c->lspans > 0), from the
 * line tables of the session's images, kept for the next find on it. */
static int line_spans(struct ptd_cursor *c, const struct ptd_find_opts *f)
{
	int rc;

	if (c->lspans && c->lline == f->line && !strcmp(c->lfile, f->file))
		return 0;
	free(c->lfile);
	free(c->ls);
	c->ls = NULL;
	c->nls = 0;
	c->lspans = 0;
	if (!(c->lfile = strdup(f->file)))
		return PTD_ERR_NOMEM;
	c->lline = f->line;
	rc = linebreak_line_spans(c->ix->s, f->file, f->line, &c->ls, &c->nls);
	if (rc == PTD_ERR_NOMEM)
		return rc;
	c->lspans = rc ? -1 : 1;
	return 0;
}

/* fs for f: its address ranges, and its line's when it looks for one
 * (then 0: runs and pieces can be passed; 1: not). */
static int find_sel(struct ptd_cursor *c, const struct ptd_find_opts *f,
		    struct fsel *fs, int *lines)
{
	size_t na = (f->what & PTD_FIND_ADDR) ? f->nranges : 0;
	int rc;

	fs->f = f;
	fs->r = na ? f->ranges : NULL;
	fs->nr = na;
	/* a change of line can be anywhere */
	*lines = !!(f->what & (PTD_FIND_LINE_CHANGE | PTD_FIND_STMT_CHANGE));
	if (*lines || !(f->what & PTD_FIND_LINE))
		return 0;
	if ((rc = line_spans(c, f)))
		return rc;
	if (c->lspans < 0) {
		*lines = 1;
		return 0;
	}
	if (util_grow((void **)&c->sel, &c->selcap, na + c->nls + 1, sizeof(*c->sel)))
		return PTD_ERR_NOMEM;
	if (na)
		memcpy(c->sel, f->ranges, na * sizeof(*c->sel));
	if (c->nls)
		memcpy(c->sel + na, c->ls, c->nls * sizeof(*c->sel));
	fs->r = c->sel;
	fs->nr = na + c->nls;
	return 0;
}

int ptd_cursor_find(struct ptd_cursor *c, const struct ptd_find_opts *f,
		    unsigned int *found)
{
	/* Runs (pieces) that cannot match are passed whole: without line
	 * conditions, or when the line's addresses are known. */
	unsigned int dummy, line0 = 0;
	struct fsel fs;
	int32_t d0;
	int file0 = -1, by_run, lines, rc;

	if (!found)
		found = &dummy;
	*found = 0;
	if (!c || !f || f->sz < sizeof(size_t) ||
	    ((f->what & PTD_FIND_ADDR) && f->nranges && !f->ranges) ||
	    ((f->what & PTD_FIND_LINE) && !f->file))
		return PTD_ERR_INVAL;
	if ((rc = find_sel(c, f, &fs, &lines)))
		return rc;
	by_run = !lines;
	d0 = cur_depth(c);
	if (f->what & (PTD_FIND_LINE_CHANGE | PTD_FIND_STMT_CHANGE))
		line_here(c, &file0, &line0);
	for (;;) {
		const struct tix_run *r;
		unsigned int m = 0;

		rc = find_move(c, &fs, d0, by_run);
		if (rc)
			return rc;
		r = &c->t->runs[c->run];
		if (!r->ninsn) {
			*found = PTD_FIND_STOP;
			return 0;
		}
		if (by_run && !run_may_match(r, &fs, d0, c->ps->depth0)) {
			/* past every following run that cannot match either,
			 * to the last (first) position of the last one: the
			 * next move leaves it */
			const struct tix_run *runs = c->t->runs;
			int32_t base = c->ps->depth0;
			size_t k = c->run;

			if (f->backward) {
				while (k > 0 && runs[k - 1].ninsn &&
				       !run_may_match(&runs[k - 1], &fs, d0, base))
					k--;
				set_at(c, k, 0);
			} else {
				while (k + 1 < c->t->nruns && runs[k + 1].ninsn &&
				       !run_may_match(&runs[k + 1], &fs, d0, base))
					k++;
				set_at(c, k, runs[k].ninsn - 1);
			}
			continue;
		}
		if ((f->what & PTD_FIND_MAX_DEPTH) && cur_depth(c) > d0 + f->max_depth)
			continue;
		if ((f->what & PTD_FIND_ADDR) && in_ranges(c->ip, f))
			m |= PTD_FIND_ADDR;
		if ((f->what & PTD_FIND_DEPTH_BELOW) && cur_depth(c) < d0)
			m |= PTD_FIND_DEPTH_BELOW;
		if (f->what & (PTD_FIND_LINE_CHANGE | PTD_FIND_STMT_CHANGE)) {
			unsigned int l;
			int fi, stmt = line_here(c, &fi, &l);

			if (fi >= 0 && (fi != file0 || l != line0))
				m |= f->what & (stmt ? PTD_FIND_LINE_CHANGE |
						       PTD_FIND_STMT_CHANGE :
						       PTD_FIND_LINE_CHANGE);
		}
		if ((f->what & PTD_FIND_LINE) && on_line(c, f)) {
			/* entered: the instruction before is elsewhere */
			size_t piece = c->piece, run = c->run;
			uint32_t i = c->i;
			int entered = back1(c) != 0 || !on_line(c, f);

			if (c->piece != piece && goto_piece(c, piece))
				return PTD_ERR_NOMEM;
			set_at(c, run, i);
			if (entered)
				m |= PTD_FIND_LINE;
		}
		if (m) {
			*found = m;
			return 0;
		}
	}
}

/* A stop's message, kept while the index lives (views come and go). */
static const char *keep_msg(struct ptd_index *ix, const char *m)
{
	const char *r = NULL;
	size_t k;

	if (!m)
		return NULL;
	pthread_mutex_lock(ix->msg_lock);
	for (k = ix->nmsgs; k-- > 0 && !r;)
		if (!strcmp(ix->msgs[k], m))
			r = ix->msgs[k];
	if (!r && !util_grow((void **)&ix->msgs, &ix->msgcap, ix->nmsgs + 1,
			     sizeof(char *)) &&
	    (ix->msgs[ix->nmsgs] = strdup(m)))
		r = ix->msgs[ix->nmsgs++];
	pthread_mutex_unlock(ix->msg_lock);
	return r;
}

int ptd_cursor_get(struct ptd_cursor *c, struct ptd_cursor_pos *p)
{
	const struct tix_run *r;
	struct ptd_event *ev;

	if (!c || !p)
		return PTD_ERR_INVAL;
	r = &c->t->runs[c->run];
	memset(p, 0, sizeof(*p));
	p->pos = cur_pos(c);
	p->insn = c->ps->insn0 + r->insn0 + c->i;
	p->depth = cur_depth(c);
	ev = &p->ev;
	if (!r->ninsn) {
		p->stop = 1;
		*ev = c->t->stops[r->stop];
		if (c->ps->seg != TIX_SEG_NONE)
			ev->msg = keep_msg(c->ix, ev->msg);
		return 0;
	}
	ev->kind = PTD_EV_INSN;
	ev->ip = c->ip;
	ev->size = (uint8_t)TIX_LEN(c->t->insn[r->insn0 + c->i]);
	ev->iclass = (uint8_t)tix_public_iclass(
		TIX_ICLASS(c->t->insn[r->insn0 + c->i]));
	ev->mode = r->mode;
	ev->image = r->image;
	ev->time = r->time;
	ev->flags = r->time ? PTD_EVF_TIME_VALID : 0;
	ev->cpu = r->cpu;
	ev->pid = c->t->pid;
	ev->tid = c->t->tid;
	ev->queue = r->queue;
	/* The bytes as they were then; none when the image store has
	 * none (raw stays zero). */
	if (c->ix->s->in)
		imgstore_read(c->ix->s->in->st, c->t->pid, c->ip,
			      r->time ? r->time : IMGSTORE_TIME_UNKNOWN,
			      ev->raw, ev->size, NULL);
	return 0;
}

int ptd_cursor_read_code(struct ptd_cursor *c, uint64_t addr, void *buf,
			 size_t len)
{
	const struct tix_run *r;
	size_t got = 0;

	if (!c || !buf || !len || !c->ix->s->in)
		return PTD_ERR_INVAL;
	r = &c->t->runs[c->run];
	/* A read ends where a version ends: go on into the next one. */
	while (got < len) {
		int n = imgstore_read(c->ix->s->in->st, c->t->pid, addr + got,
				      r->time ? r->time : IMGSTORE_TIME_UNKNOWN,
				      (uint8_t *)buf + got, len - got, NULL);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (len > INT32_MAX)
		len = INT32_MAX;
	return got ? (int)(got < len ? got : len) : PTD_ERR_NO_IMAGE;
}

static void describe(struct ptd_cursor *c, struct ptd_frame *fr,
		     uint64_t time)
{
	unsigned int l;

	at_time(c, time);
	if (ptd_symbolize(c->ix->s, c->t->pid, fr->pc, fr->function,
			  sizeof(fr->function), &fr->function_off) == 0)
		fr->flags |= PTD_FRAME_HAS_SYMBOL;
	else
		fr->function[0] = 0;
	if (ptd_source_line(c->ix->s, c->t->pid, fr->pc, fr->file,
			    sizeof(fr->file), &l) == 0 && l) {
		fr->line = l;
		fr->flags |= PTD_FRAME_HAS_LINE;
	} else {
		fr->file[0] = 0;
	}
}

/* Physical frame k of ns + 2 (the calls alive in c->fst), described. */
static void phys_frame(struct ptd_cursor *c, size_t k, size_t ns,
		       struct ptd_frame *fr)
{
	uint64_t time;

	memset(fr, 0, sizeof(*fr));
	fr->pid = c->ti->pid;
	if (k == ns + 1) {
		fr->flags = PTD_FRAME_BEFORE_TRACE;
		return;
	}
	if (k == 0) {
		fr->pc = c->ip;
		time = c->t->runs[c->run].time;
		/* in the trampoline once the handler returned */
		if (ns && c->fst[ns - 1].kind == TIX_FRAME_SIG_INTERRUPTED)
			fr->flags |= PTD_FRAME_SIGNAL;
	} else {
		const struct tix_frame *x = &c->fst[ns - k];

		fr->pc = x->call_ip;
		time = x->time;
		if (x->kind == TIX_FRAME_SIG_TRAMP) {
			/* where the handler returns to is not known yet */
			fr->flags |= PTD_FRAME_SIGNAL;
			fr->pc = 0;
		} else if (x->kind == TIX_FRAME_SIG_INTERRUPTED) {
			fr->pc = x->call_ip + x->size;
		}
	}
	if (k < ns) {
		const struct tix_frame *x = &c->fst[ns - 1 - k];

		fr->flags |= PTD_FRAME_HAS_CALL;
		fr->call_site = x->call_ip;
		fr->return_addr = x->call_ip + x->size;
		fr->call_pos = x->pos;
	}
	describe(c, fr, time);
}

int ptd_cursor_stack(struct ptd_cursor *c, struct ptd_frame *frames,
		     size_t max, size_t *n)
{
	const struct tix_thread *t;
	size_t k, under, ns, got = 0;
	long nl, ni = 0;

	if (!c || !n || (max && !frames))
		return PTD_ERR_INVAL;
	t = c->t;
	/* the calls alive: those of pieces before (their summaries folded),
	 * then the view's up to the cursor */
	nl = tix_stack_at(t, c->run, &c->stk, &c->stkcap, &under);
	if (nl >= 0 && c->ps->seg != TIX_SEG_NONE)
		ni = tix_fold_frames(c->ti, c->piece, under, &c->fst, &c->fcap);
	if (nl < 0 || ni < 0 ||
	    util_grow((void **)&c->fst, &c->fcap, (size_t)(ni + nl) + 1,
		      sizeof(*c->fst)))
		return PTD_ERR_NOMEM;
	for (k = 0; k < (size_t)nl; k++) {
		const struct tix_run *r = &t->runs[c->stk[k]];
		struct tix_frame *x = &c->fst[(size_t)ni + k];

		x->call_ip = r->ip + r->last_off;
		x->size = TIX_LEN(t->insn[r->insn0 + r->ninsn - 1]);
		x->pos = c->ps->pos0 + r->pos0 + r->ninsn - 1;
		x->time = r->time;
		/* a signal delivery's pair: the interrupted frame, then the
		 * trampoline's */
		x->kind = !tix_is_sigenter(TIX_ICLASS(t->insn[r->insn0 + r->ninsn - 1])) ?
			  TIX_FRAME_CALL : k && c->stk[k - 1] == c->stk[k] ?
			  TIX_FRAME_SIG_TRAMP : TIX_FRAME_SIG_INTERRUPTED;
	}
	ns = (size_t)(ni + nl);
	if (!(c->flags & PTD_CURSOR_INLINE_FRAMES)) {
		*n = ns + 2;
		for (k = 0; k < *n && k < max; k++)
			phys_frame(c, k, ns, &frames[k]);
		return 0;
	}
	/* each physical frame and the inlined functions around its pc */
	for (k = 0; k < ns + 2; k++) {
		struct ptd_frame fr;
		size_t m;

		phys_frame(c, k, ns, &fr);
		if (util_grow((void **)&c->xfr, &c->xcap, got + INLINES_MAX,
			      sizeof(*c->xfr)))
			return PTD_ERR_NOMEM;
		inlines_expand(c->ix->s, &fr, &c->xfr[got], INLINES_MAX, &m);
		got += m;
	}
	*n = got;
	if (max)
		memcpy(frames, c->xfr, (got < max ? got : max) * sizeof(*frames));
	return 0;
}
