/* SPDX-License-Identifier: MIT */
/* dapstep (stage: cli/): gdb's line stepping over the trace cursor. */
#include "dapstep.h"

#include <stdio.h>
#include <string.h>

/* Inline levels of one physical frame at most (as the cursor expands). */
#define LEVELS_MAX 32

/* A frame as gdb identifies it: the physical frame (call depth) and the
 * inlined functions shown in it (each level's function and call site,
 * outermost first, hashed: prefix[k] is the outermost k levels). */
struct frame {
	int32_t depth;
	size_t levels;             /* shown levels, the physical one included */
	uint64_t prefix[LEVELS_MAX + 1];
	size_t hidden;             /* inlined levels entered here, not shown */
	unsigned int call_line;    /* hidden: the call site of the outermost */
	char call_file[256];
};

struct state {
	uint64_t start, end;       /* the stepping range */
	int empty;                 /* no range (finish out of inlined code) */
	unsigned int line;         /* the line stepped from */
	char file[256];
	int32_t depth;             /* the frame stepped in: its depth, */
	size_t fr_levels;          /* levels shown */
	uint64_t fr_hash;          /* and their hash */
};

static uint64_t hash_str(uint64_t h, const char *str)
{
	for (; *str; str++)
		h = (h ^ (unsigned char)*str) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

/* The frame at the cursor with hide of its inlined levels not shown
 * (SIZE_MAX: those entered at this pc, as gdb hides them at a stop). */
static void frame_here(struct ptd_cursor *c, const struct ptd_cursor_pos *p,
		       size_t hide, struct frame *f)
{
	struct ptd_frame fr[LEVELS_MAX + 1];
	size_t n = 0, m, k;
	uint64_t h = 0xcbf29ce484222325ull;
	char num[16];

	memset(f, 0, sizeof(*f));
	f->depth = p->depth;
	if (ptd_cursor_stack(c, fr, LEVELS_MAX + 1, &n) || !n) {
		f->levels = 1;
		return;
	}
	if (n > LEVELS_MAX + 1)
		n = LEVELS_MAX + 1;
	for (m = 0; m + 1 < n && (fr[m].flags & PTD_FRAME_INLINED); m++)
		;
	m++;                        /* the physical frame's levels */
	if (hide == SIZE_MAX)
		for (hide = 0; hide + 1 < m &&
		     (fr[hide].flags & PTD_FRAME_INLINE_ENTRY); hide++)
			;
	if (hide + 1 > m)
		hide = m - 1;
	f->hidden = hide;
	f->levels = m - hide;
	for (k = m; k-- > hide;) {
		h = hash_str(h, fr[k].function);
		if (k + 1 < m) {
			snprintf(num, sizeof(num), ":%u", fr[k + 1].line);
			h = hash_str(hash_str(h, fr[k + 1].file), num);
		}
		f->prefix[m - k] = h;
	}
	if (hide) {
		f->call_line = fr[hide].line;
		snprintf(f->call_file, sizeof(f->call_file), "%s", fr[hide].file);
	}
}

/* Is f the frame stepped in (0), one inlined into it (1), or else (-1)? */
static int frame_rel(const struct state *st, const struct frame *f)
{
	if (f->depth != st->depth || f->levels < st->fr_levels ||
	    f->prefix[st->fr_levels] != st->fr_hash)
		return -1;
	return f->levels > st->fr_levels;
}

static void set_frame(struct state *st, const struct frame *f, size_t levels)
{
	st->depth = f->depth;
	st->fr_levels = levels;
	st->fr_hash = f->prefix[levels];
}

static int here(struct ptd_cursor *c, struct ptd_cursor_pos *p)
{
	ptd_cursor_get(c, p);
	return p->stop;
}

static int in_range(const struct state *st, uint64_t pc)
{
	if (st->empty)
		return 0;
	return pc >= st->start && (st->end ? pc < st->end : pc == st->start);
}

/* From inside a callee: to the instruction after it returns (forwards) or
 * to its call instruction (backwards). 1: a stop or an end came first. */
static int leave_callee(struct ptd_cursor *c, int backward, int *rc)
{
	struct ptd_find_opts f = { .sz = sizeof(f), .backward = backward,
				   .what = PTD_FIND_DEPTH_BELOW };
	unsigned int found = 0;

	*rc = ptd_cursor_find(c, &f, &found);
	return *rc || (found & PTD_FIND_STOP);
}

/* Forwards to address a at the current depth. */
static int run_to(struct ptd_cursor *c, uint64_t a, int *rc)
{
	struct ptd_addr_range r = { a, a + 1 };
	struct ptd_find_opts f = { .sz = sizeof(f), .what = PTD_FIND_ADDR |
				   PTD_FIND_MAX_DEPTH, .ranges = &r,
				   .nranges = 1, .max_depth = 0 };
	unsigned int found = 0;

	*rc = ptd_cursor_find(c, &f, &found);
	return *rc || (found & PTD_FIND_STOP);
}

/* Is the cursor at a PLT slot ("name@plt")? */
static int is_plt(struct ptd_session *s, const struct ptd_cursor_pos *p)
{
	char name[256];
	uint64_t off;
	size_t n;

	if (ptd_symbolize(s, p->ev.pid, p->ev.ip, name, sizeof(name), &off))
		return 0;
	n = strlen(name);
	return n > 4 && !strcmp(name + n - 4, "@plt");
}

/* Is the cursor in the dynamic loader (its lazy binding resolver), which
 * a step passes as gdb does? */
static int in_loader(struct ptd_session *s, const struct ptd_cursor_pos *p)
{
	const char *img = ptd_image_name(s, p->ev.pid, p->ev.ip), *b;

	if (!img)
		return 0;
	b = strrchr(img, '/');
	b = b ? b + 1 : img;
	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld.so", 5) ||
	       !strncmp(b, "ld64.so", 7);
}

/* Backwards, a step range holds only in the frame stepped in. */
static int in_frame(struct ptd_cursor *c, const struct ptd_cursor_pos *p,
		    const struct state *st)
{
	struct frame f;

	if (p->depth != st->depth)
		return 0;
	frame_here(c, p, SIZE_MAX, &f);
	return frame_rel(st, &f) == 0;
}

/* One source file: the same path, or the same name where a path (a
 * DW_AT_call_file, a line table's) is not absolute. */
static int same_file(const char *a, const char *b)
{
	const char *x = strrchr(a, '/'), *y = strrchr(b, '/');

	if (!strcmp(a, b))
		return 1;
	if (a[0] == '/' && b[0] == '/')
		return 0;
	return !strcmp(x ? x + 1 : a, y ? y + 1 : b);
}

/* Steps by lines from the stepping state st on (evaluate: the cursor's
 * position first, as if just stepped to); *hide as for dapstep_line. */
static int step_lines(struct ptd_session *s, struct ptd_cursor *c, int kind,
		      int backward, struct state *st, int evaluate,
		      size_t *hide)
{
	struct ptd_cursor_pos p;
	struct ptd_line_range r;
	struct frame cur;
	int rc = 0, rel;

	ptd_cursor_get(c, &p);
	if (evaluate)
		goto evaluate;
	for (;;) {
		rc = ptd_cursor_step(c, backward ? -1 : 1);
		if (rc || here(c, &p))
			return rc;
evaluate:
		if (in_range(st, p.ev.ip) &&
		    (!backward || in_frame(c, &p, st))) {
			if (!backward || p.ev.ip != st->start)
				continue;
			/* backwards at the start of the line: stop, unless at
			 * a function's entry (then on to its call) */
			if (ptd_line_range(s, p.ev.pid, p.ev.ip, &r) ||
			    r.func_start != p.ev.ip)
				return 0;
			continue;
		}
		if (p.depth > st->depth) {
			/* entered a subroutine */
			int has_line = ptd_line_range(s, p.ev.pid, p.ev.ip, &r) == 0;

			if (kind == DAPSTEP_INTO && !backward && !has_line &&
			    is_plt(s, &p)) {
				/* through the PLT slot (and the lazy binding
				 * resolver) to the function it jumps to */
				int32_t d0 = p.depth;

				for (;;) {
					rc = ptd_cursor_step(c, 1);
					if (rc || here(c, &p))
						return rc;
					if (p.depth < d0)
						goto evaluate;
					if (p.depth == d0 && !in_loader(s, &p) &&
					    ptd_line_range(s, p.ev.pid, p.ev.ip, &r) == 0 &&
					    r.func_start == p.ev.ip) {
						has_line = 1;
						break;
					}
				}
			}
			if (kind == DAPSTEP_INTO && !backward && has_line) {
				uint64_t body = r.func_start == p.ev.ip &&
						r.func_body ? r.func_body : p.ev.ip;

				if (body == p.ev.ip)
					return 0;
				run_to(c, body, &rc);
				return rc;
			}
			if (kind == DAPSTEP_INTO && backward && has_line) {
				/* back into the callee: to the start of the
				 * line it returned from */
				if (p.ev.ip == r.start)
					return 0;
				continue;
			}
			if (leave_callee(c, backward, &rc))
				return rc;
			if (here(c, &p))
				return 0;
			/* left to code without lines (a signal handler
			 * returning to its trampoline, an interrupted
			 * function): on out of it as gdb's frame-bound
			 * step-resume does */
			while (!backward && ptd_line_range(s, p.ev.pid, p.ev.ip,
							   &r) != 0) {
				if (leave_callee(c, 0, &rc))
					return rc;
				if (here(c, &p))
					return 0;
			}
			goto evaluate;
		}
		/* backwards through a PLT slot or the loader's resolver:
		 * on to the call before them */
		if (backward && (is_plt(s, &p) || in_loader(s, &p)))
			continue;
		if (ptd_line_range(s, p.ev.pid, p.ev.ip, &r) || !r.line)
			return 0;           /* no line information: stop */
		frame_here(c, &p, SIZE_MAX, &cur);
		rel = frame_rel(st, &cur);
		if (rel == 0 && cur.hidden) {
			/* inlined code entered at its call site: a call on
			 * the line stepped is stepped into or over, one on
			 * another line stops there */
			int same = cur.call_line == st->line &&
				   same_file(cur.call_file, st->file);

			if (kind == DAPSTEP_INTO) {
				if (same)
					*hide = cur.hidden - 1;
				return 0;
			}
			if (!same)
				return 0;
			continue;
		}
		if (rel > 0) {
			/* inside inlined code the frame stepped in called */
			if (kind == DAPSTEP_INTO)
				return 0;
			continue;
		}
		{
			int refresh = 1;

			if (p.ev.ip == r.start &&
			    (r.line != st->line || !same_file(r.file, st->file))) {
				if (r.is_stmt)
					return 0;
				if (rel == 0)
					refresh = 0;
				else
					r.line = 0;
			}
			st->start = r.start;
			st->end = r.end;
			st->empty = 0;
			if (refresh) {
				st->line = r.line;
				snprintf(st->file, sizeof(st->file), "%s", r.file);
				set_frame(st, &cur, cur.levels);
			}
		}
	}
}

int dapstep_line(struct ptd_session *s, struct ptd_cursor *c, int kind,
		 int backward, size_t *hide)
{
	struct ptd_cursor_pos p;
	struct ptd_line_range r;
	struct frame f;
	struct state st;
	size_t shown = *hide;
	int rc = 0;

	*hide = SIZE_MAX;
	if (here(c, &p))
		return ptd_cursor_step(c, backward ? -1 : 1);
	memset(&st, 0, sizeof(st));
	frame_here(c, &p, shown, &f);
	set_frame(&st, &f, f.levels);
	if (ptd_line_range(s, p.ev.pid, p.ev.ip, &r) == 0) {
		st.start = r.start;
		st.end = r.end;
		/* the line of the frame shown: a call site where inlined
		 * frames are not shown */
		st.line = f.hidden ? f.call_line : r.line;
		snprintf(st.file, sizeof(st.file), "%s",
			 f.hidden ? f.call_file : r.file);
		return step_lines(s, c, kind, backward, &st, 0, hide);
	}
	if (backward)
		return step_lines(s, c, kind, backward, &st, 0, hide);
	/* no line here: out of the function, then on by lines */
	if (leave_callee(c, 0, &rc))
		return rc;
	if (here(c, &p))
		return 0;
	frame_here(c, &p, SIZE_MAX, &f);
	set_frame(&st, &f, f.levels);
	st.empty = 1;
	return step_lines(s, c, kind, 0, &st, 1, hide);
}

int dapstep_out(struct ptd_session *s, struct ptd_cursor *c, int backward,
		size_t *hide)
{
	struct ptd_find_opts fo = { .sz = sizeof(fo), .backward = backward,
				    .what = PTD_FIND_DEPTH_BELOW };
	struct ptd_cursor_pos p;
	struct frame f;
	struct state st;
	unsigned int found = 0;
	int rc;

	ptd_cursor_get(c, &p);
	frame_here(c, &p, *hide, &f);
	*hide = SIZE_MAX;
	if (p.stop || f.levels < 2) {
		rc = ptd_cursor_find(c, &fo, &found);
		/* backwards, gdb's last single step back to the call shows
		 * every inlined frame there */
		if (backward && !rc && !(found & PTD_FIND_STOP))
			*hide = 0;
		return rc;
	}
	/* out of inlined code: stepping over everything in its caller's
	 * frame from no line until outside it, as gdb's finish does (back
	 * to its entry at the call site, or the start of the caller's line
	 * before it) */
	memset(&st, 0, sizeof(st));
	set_frame(&st, &f, f.levels - 1);
	st.empty = 1;
	return step_lines(s, c, DAPSTEP_OVER, backward, &st, 0, hide);
}
