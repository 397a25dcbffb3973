/* SPDX-License-Identifier: MIT */
/* dapstep (stage: cli/): gdb's line stepping over the trace cursor. */
#include "dapstep.h"

#include <stdio.h>
#include <string.h>

struct state {
	uint64_t start, end;       /* the stepping range */
	unsigned int line;         /* the line stepped from */
	char file[256];
	int32_t depth;             /* the frame stepped in */
};

static int here(struct ptd_cursor *c, struct ptd_cursor_pos *p)
{
	ptd_cursor_get(c, p);
	return p->stop;
}

static int in_range(const struct state *st, uint64_t pc)
{
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

int dapstep_line(struct ptd_session *s, struct ptd_cursor *c, int kind,
		 int backward)
{
	struct ptd_cursor_pos p;
	struct ptd_line_range r;
	struct state st;
	int rc = 0;

	if (here(c, &p))
		return ptd_cursor_step(c, backward ? -1 : 1);
	memset(&st, 0, sizeof(st));
	st.depth = p.depth;
	if (ptd_line_range(s, p.ev.pid, p.ev.ip, &r) == 0) {
		st.start = r.start;
		st.end = r.end;
		st.line = r.line;
		snprintf(st.file, sizeof(st.file), "%s", r.file);
	} else if (!backward) {
		/* no line here: out of the function, then on by lines */
		if (leave_callee(c, 0, &rc))
			return rc;
		if (here(c, &p))
			return 0;
		st.depth = p.depth;
		st.start = st.end = 0;
		goto evaluate;
	}
	for (;;) {
		rc = ptd_cursor_step(c, backward ? -1 : 1);
		if (rc || here(c, &p))
			return rc;
evaluate:
		if (in_range(&st, p.ev.ip) &&
		    (!backward || p.depth == st.depth)) {
			if (!backward || p.ev.ip != st.start)
				continue;
			/* backwards at the start of the line: stop, unless at
			 * a function's entry (then on to its call) */
			if (ptd_line_range(s, p.ev.pid, p.ev.ip, &r) ||
			    r.func_start != p.ev.ip)
				return 0;
			continue;
		}
		if (p.depth > st.depth) {
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
		{
			int refresh = 1;

			if (p.ev.ip == r.start &&
			    (r.line != st.line || strcmp(r.file, st.file))) {
				if (r.is_stmt)
					return 0;
				if (p.depth == st.depth)
					refresh = 0;
				else
					r.line = 0;
			}
			st.start = r.start;
			st.end = r.end;
			if (refresh) {
				st.line = r.line;
				snprintf(st.file, sizeof(st.file), "%s", r.file);
				st.depth = p.depth;
			}
		}
	}
}
