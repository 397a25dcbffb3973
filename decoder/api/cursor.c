/* SPDX-License-Identifier: MIT */
/* cursor (stage: api/): ptd_cursor_* over the trace index. */
#include "cursor.h"

#include "imgstore.h"
#include "input.h"
#include "session.h"
#include "symbols.h"
#include "trace_index.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define LC_SIZE 4096

struct lc_ent {
	uint64_t ip;
	uint32_t image;
	int32_t file;         /* index into files, -1: no line */
	uint32_t line;
	uint16_t valid;
	uint16_t stmt;        /* a statement of the line starts here */
};

struct ptd_cursor {
	struct ptd_index *ix;
	const struct tix_thread *t;
	size_t run;
	uint32_t i;
	uint64_t ip;          /* of the instruction at the cursor */
	size_t *stk;
	size_t stkcap;
	char **files;
	size_t nfiles, filecap;
	struct lc_ent lc[LC_SIZE];
};

int ptd_cursor_open(struct ptd_cursor **out, struct ptd_index *ix,
		    int32_t tid, const struct ptd_cursor_opts *opts)
{
	struct ptd_cursor *c;
	size_t k;

	if (!out)
		return PTD_ERR_INVAL;
	*out = NULL;
	if (!ix || (opts && opts->sz < sizeof(size_t)))
		return PTD_ERR_INVAL;
	for (k = 0; k < ix->nth; k++)
		if (ix->th[k].tid == tid && ix->th[k].nruns)
			break;
	if (k == ix->nth)
		return PTD_ERR_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return PTD_ERR_NOMEM;
	c->ix = ix;
	c->t = &ix->th[k];
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
	free(c->files);
	free(c->stk);
	free(c);
}

static void set_at(struct ptd_cursor *c, size_t run, uint32_t i)
{
	c->run = run;
	c->i = i;
	c->ip = c->t->runs[run].ninsn ? tix_insn_ip(c->t, run, i)
				       : c->t->runs[run].ip;
}

static uint64_t cur_pos(const struct ptd_cursor *c)
{
	return c->t->runs[c->run].pos0 + c->i;
}

static int fwd1(struct ptd_cursor *c)
{
	const struct tix_run *r = &c->t->runs[c->run];

	if (r->ninsn && c->i + 1 < r->ninsn) {
		c->ip += TIX_LEN(c->t->insn[r->insn0 + c->i]);
		c->i++;
		return 0;
	}
	if (c->run + 1 >= c->t->nruns)
		return PTD_ERR_END;
	set_at(c, c->run + 1, 0);
	return 0;
}

static int back1(struct ptd_cursor *c)
{
	uint32_t n;

	if (c->i) {
		set_at(c, c->run, c->i - 1);
		return 0;
	}
	if (!c->run)
		return PTD_ERR_END;
	n = c->t->runs[c->run - 1].ninsn;
	set_at(c, c->run - 1, n ? n - 1 : 0);
	return 0;
}

/* The last run whose first position (by_insn: instruction number) is
 * <= v. */
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

int ptd_cursor_seek_pos(struct ptd_cursor *c, uint64_t p)
{
	const struct tix_thread *t;
	size_t lo;

	if (!c)
		return PTD_ERR_INVAL;
	t = c->t;
	if (p >= t->npos)
		return PTD_ERR_END;
	lo = last_run_le(t, p, 0);
	set_at(c, lo, (uint32_t)(p - t->runs[lo].pos0));
	return 0;
}

int ptd_cursor_seek_insn(struct ptd_cursor *c, uint64_t n)
{
	const struct tix_thread *t;
	size_t lo;

	if (!c)
		return PTD_ERR_INVAL;
	t = c->t;
	if (n >= t->ninsn)
		return PTD_ERR_END;
	lo = last_run_le(t, n, 1);
	/* Stops after the run holding n start after n: lo holds n. */
	if (!t->runs[lo].ninsn || n >= t->runs[lo].insn0 + t->runs[lo].ninsn)
		return PTD_ERR_END;
	set_at(c, lo, (uint32_t)(n - t->runs[lo].insn0));
	return 0;
}

int ptd_cursor_seek_time(struct ptd_cursor *c, uint64_t time)
{
	const struct tix_thread *t;
	size_t lo = 0, hi;

	if (!c)
		return PTD_ERR_INVAL;
	t = c->t;
	hi = t->nruns;
	while (lo < hi) {         /* the first run with time >= time */
		size_t mid = lo + (hi - lo) / 2;

		if (t->runs[mid].time < time)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->nruns)
		return PTD_ERR_END;
	set_at(c, lo, 0);
	return 0;
}

int ptd_cursor_step(struct ptd_cursor *c, int64_t delta)
{
	uint64_t p;

	if (!c)
		return PTD_ERR_INVAL;
	p = cur_pos(c);
	if (delta >= 0) {
		if ((uint64_t)delta >= c->t->npos - p) {
			ptd_cursor_seek_pos(c, c->t->npos - 1);
			return PTD_ERR_END;
		}
		if (delta == 1)
			return fwd1(c);
		return ptd_cursor_seek_pos(c, p + (uint64_t)delta);
	}
	if ((uint64_t)-(delta + 1) >= p) {
		ptd_cursor_seek_pos(c, 0);
		return PTD_ERR_END;
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

/* Can any instruction of run r match f (only addresses and depths)? */
static int run_may_match(const struct tix_run *r, const struct ptd_find_opts *f,
			 int32_t d0)
{
	size_t k;

	if ((f->what & PTD_FIND_MAX_DEPTH) && r->depth > d0 + f->max_depth)
		return 0;
	if ((f->what & PTD_FIND_DEPTH_BELOW) && r->depth < d0)
		return 1;
	if (f->what & PTD_FIND_ADDR)
		for (k = 0; k < f->nranges; k++)
			if (f->ranges[k].start <= r->ip + r->last_off &&
			    f->ranges[k].end > r->ip)
				return 1;
	return 0;
}

int ptd_cursor_find(struct ptd_cursor *c, const struct ptd_find_opts *f,
		    unsigned int *found)
{
	/* Without line conditions a run that cannot match is passed whole. */
	int by_run = !(f && (f->what & (PTD_FIND_LINE | PTD_FIND_LINE_CHANGE |
					PTD_FIND_STMT_CHANGE)));
	unsigned int dummy, line0 = 0;
	int32_t d0;
	int file0 = -1;

	if (!found)
		found = &dummy;
	*found = 0;
	if (!c || !f || f->sz < sizeof(size_t) ||
	    ((f->what & PTD_FIND_ADDR) && f->nranges && !f->ranges) ||
	    ((f->what & PTD_FIND_LINE) && !f->file))
		return PTD_ERR_INVAL;
	d0 = c->t->runs[c->run].depth;
	if (f->what & (PTD_FIND_LINE_CHANGE | PTD_FIND_STMT_CHANGE))
		line_here(c, &file0, &line0);
	for (;;) {
		const struct tix_run *r;
		unsigned int m = 0;
		int rc = f->backward ? back1(c) : fwd1(c);

		if (rc)
			return rc;
		r = &c->t->runs[c->run];
		if (!r->ninsn) {
			*found = PTD_FIND_STOP;
			return 0;
		}
		if (by_run && !run_may_match(r, f, d0)) {
			/* past every following run that cannot match either,
			 * to the last (first) position of the last one: the
			 * next move leaves it */
			const struct tix_run *runs = c->t->runs;
			size_t k = c->run;

			if (f->backward) {
				while (k > 0 && runs[k - 1].ninsn &&
				       !run_may_match(&runs[k - 1], f, d0))
					k--;
				set_at(c, k, 0);
			} else {
				while (k + 1 < c->t->nruns && runs[k + 1].ninsn &&
				       !run_may_match(&runs[k + 1], f, d0))
					k++;
				set_at(c, k, runs[k].ninsn - 1);
			}
			continue;
		}
		if ((f->what & PTD_FIND_MAX_DEPTH) && r->depth > d0 + f->max_depth)
			continue;
		if ((f->what & PTD_FIND_ADDR) && in_ranges(c->ip, f))
			m |= PTD_FIND_ADDR;
		if ((f->what & PTD_FIND_DEPTH_BELOW) && r->depth < d0)
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
			size_t run = c->run;
			uint32_t i = c->i;
			int entered = back1(c) != 0 || !on_line(c, f);

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

int ptd_cursor_get(struct ptd_cursor *c, struct ptd_cursor_pos *p)
{
	const struct tix_run *r;
	struct ptd_event *ev;

	if (!c || !p)
		return PTD_ERR_INVAL;
	r = &c->t->runs[c->run];
	memset(p, 0, sizeof(*p));
	p->pos = cur_pos(c);
	p->insn = r->insn0 + c->i;
	p->depth = r->depth;
	ev = &p->ev;
	if (!r->ninsn) {
		p->stop = 1;
		*ev = c->t->stops[r->stop];
		return 0;
	}
	ev->kind = PTD_EV_INSN;
	ev->ip = c->ip;
	ev->size = (uint8_t)TIX_LEN(c->t->insn[p->insn]);
	ev->iclass = (uint8_t)TIX_ICLASS(c->t->insn[p->insn]);
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

static uint64_t call_ip(const struct tix_thread *t, size_t run)
{
	return t->runs[run].ip + t->runs[run].last_off;
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

int ptd_cursor_stack(struct ptd_cursor *c, struct ptd_frame *frames,
		     size_t max, size_t *n)
{
	const struct tix_thread *t;
	long ns;
	size_t k;

	if (!c || !n || (max && !frames))
		return PTD_ERR_INVAL;
	t = c->t;
	ns = tix_stack_at(t, c->run, &c->stk, &c->stkcap);
	if (ns < 0)
		return PTD_ERR_NOMEM;
	*n = (size_t)ns + 2;
	for (k = 0; k < *n && k < max; k++) {
		struct ptd_frame *fr = &frames[k];
		uint64_t time;

		memset(fr, 0, sizeof(*fr));
		fr->pid = t->pid;
		if (k == (size_t)ns + 1) {
			fr->flags = PTD_FRAME_BEFORE_TRACE;
			continue;
		}
		if (k == 0) {
			fr->pc = c->ip;
			time = t->runs[c->run].time;
		} else {
			size_t run = c->stk[(size_t)ns - k];

			fr->pc = call_ip(t, run);
			time = t->runs[run].time;
		}
		if (k < (size_t)ns) {
			size_t run = c->stk[(size_t)ns - 1 - k];
			const struct tix_run *r = &t->runs[run];

			fr->flags |= PTD_FRAME_HAS_CALL;
			fr->call_site = call_ip(t, run);
			fr->return_addr = fr->call_site +
				TIX_LEN(t->insn[r->insn0 + r->ninsn - 1]);
			fr->call_pos = r->pos0 + r->ninsn - 1;
		}
		describe(c, fr, time);
	}
	return 0;
}
