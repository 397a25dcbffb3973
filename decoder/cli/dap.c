/* SPDX-License-Identifier: MIT */
/* dap (stage: cli/): `ptdecode dap`, the Debug Adapter Protocol server. */
#include "dap.h"
#include "dapstep.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>

#include <ptdecode.h>

#ifndef PTD_HAVE_JSONC

int dap_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ptdecode dap: this ptdecode was built without json-c "
		"(install libjson-c-dev and rebuild)\n");
	return 1;
}

#else

#include <json-c/json.h>

/* Largest request accepted: a DAP request is small; this bounds memory. */
#define DAP_MAX_BODY (16u << 20)
#define FRAMES_PER_THREAD 100000

struct bp {
	char *path;           /* source breakpoints */
	char *name;           /* function breakpoints */
	uint64_t addr;        /* instruction breakpoints */
	unsigned int line;    /* source: the line asked for */
	unsigned int at_line; /* source: the line with code it stops at */
	uint64_t *addrs;      /* source: where it stops (-1 n: unresolved) */
	size_t naddrs;
	int resolved;
	uint64_t hits;
	uint64_t every;       /* hitCondition "%N": every N-th hit */
	uint64_t from;        /* hitCondition "N" or ">= N" */
	int id;
};

struct bpset {
	struct bp *b;
	size_t n;
};

struct dap {
	int seq;
	struct ptd_session *s;
	struct ptd_index *ix;
	struct ptd_cursor **cur;
	size_t *hide;              /* inlined frames at the top not shown */
	int32_t *tids;
	size_t nth;
	struct ptd_disasm *dis;
	struct bpset src, fn, ins;
	int next_bp_id;
	char **map_from, **map_to;
	size_t nmap;
	int stop_on_entry;
	int done;
	uint64_t goto_pos[4];      /* gotoTargets: positions by id - 1 */
	size_t ngoto;
	size_t goto_th;
};

/* ---- output ---- */

static void send(struct dap *d, json_object *msg)
{
	const char *txt;

	json_object_object_add(msg, "seq", json_object_new_int(++d->seq));
	txt = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	printf("Content-Length: %zu\r\n\r\n%s", strlen(txt), txt);
	fflush(stdout);
	json_object_put(msg);
}

static json_object *message(const char *type)
{
	json_object *m = json_object_new_object();

	json_object_object_add(m, "type", json_object_new_string(type));
	return m;
}

static void respond(struct dap *d, json_object *req, json_object *body)
{
	json_object *m = message("response"), *v;

	json_object_object_get_ex(req, "seq", &v);
	json_object_object_add(m, "request_seq", json_object_get(v));
	json_object_object_get_ex(req, "command", &v);
	json_object_object_add(m, "command", json_object_get(v));
	json_object_object_add(m, "success", json_object_new_boolean(1));
	if (body)
		json_object_object_add(m, "body", body);
	send(d, m);
}

static void respond_err(struct dap *d, json_object *req, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void respond_err(struct dap *d, json_object *req, const char *fmt, ...)
{
	json_object *m = message("response"), *v, *body, *err;
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (req && json_object_object_get_ex(req, "seq", &v))
		json_object_object_add(m, "request_seq", json_object_get(v));
	else
		json_object_object_add(m, "request_seq", json_object_new_int(0));
	if (req && json_object_object_get_ex(req, "command", &v))
		json_object_object_add(m, "command", json_object_get(v));
	else
		json_object_object_add(m, "command", json_object_new_string(""));
	json_object_object_add(m, "success", json_object_new_boolean(0));
	json_object_object_add(m, "message", json_object_new_string(buf));
	body = json_object_new_object();
	err = json_object_new_object();
	json_object_object_add(err, "id", json_object_new_int(1));
	json_object_object_add(err, "format", json_object_new_string(buf));
	json_object_object_add(err, "showUser", json_object_new_boolean(1));
	json_object_object_add(body, "error", err);
	json_object_object_add(m, "body", body);
	send(d, m);
}

static void event(struct dap *d, const char *name, json_object *body)
{
	json_object *m = message("event");

	json_object_object_add(m, "event", json_object_new_string(name));
	if (body)
		json_object_object_add(m, "body", body);
	send(d, m);
}

static void output(struct dap *d, const char *cat, const char *txt)
{
	json_object *b = json_object_new_object();

	json_object_object_add(b, "category", json_object_new_string(cat));
	json_object_object_add(b, "output", json_object_new_string(txt));
	event(d, "output", b);
}

static void stopped(struct dap *d, size_t th, const char *reason,
		    const char *desc, const char *text, int bp_id)
{
	json_object *b = json_object_new_object();

	if (d->hide)
		d->hide[th] = 0;        /* report_stop sets it after */
	json_object_object_add(b, "reason", json_object_new_string(reason));
	if (desc)
		json_object_object_add(b, "description", json_object_new_string(desc));
	if (text)
		json_object_object_add(b, "text", json_object_new_string(text));
	json_object_object_add(b, "threadId", json_object_new_int(d->tids[th]));
	json_object_object_add(b, "allThreadsStopped", json_object_new_boolean(1));
	if (bp_id) {
		json_object *ids = json_object_new_array();

		json_object_array_add(ids, json_object_new_int(bp_id));
		json_object_object_add(b, "hitBreakpointIds", ids);
	}
	event(d, "stopped", b);
}

/* ---- arguments ---- */

static json_object *arg(json_object *req, const char *key)
{
	json_object *a, *v;

	if (!json_object_object_get_ex(req, "arguments", &a) ||
	    !json_object_is_type(a, json_type_object) ||
	    !json_object_object_get_ex(a, key, &v))
		return NULL;
	return v;
}

static const char *arg_str(json_object *req, const char *key)
{
	json_object *v = arg(req, key);

	return v && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : NULL;
}

static int arg_int(json_object *req, const char *key, int64_t *out)
{
	json_object *v = arg(req, key);

	if (!v || !json_object_is_type(v, json_type_int))
		return -1;
	*out = json_object_get_int64(v);
	return 0;
}

/* The thread index of arguments.threadId (the first thread if absent). */
static int thread_arg(struct dap *d, json_object *req, size_t *th)
{
	int64_t tid;
	size_t k;

	if (!d->nth)
		return -1;
	if (arg_int(req, "threadId", &tid)) {
		*th = 0;
		return 0;
	}
	for (k = 0; k < d->nth; k++)
		if (d->tids[k] == tid) {
			*th = k;
			return 0;
		}
	return -1;
}

/* ---- source paths ---- */

/* The path a compiled-in source file has on this machine (sourceMap). */
static void map_path(const struct dap *d, const char *in, char *out, size_t len)
{
	size_t k;

	for (k = 0; k < d->nmap; k++) {
		size_t n = strlen(d->map_from[k]);

		if (n && !strncmp(in, d->map_from[k], n) &&
		    (in[n] == '/' || !in[n] || d->map_from[k][n - 1] == '/')) {
			snprintf(out, len, "%s%s", d->map_to[k], in + n);
			return;
		}
	}
	snprintf(out, len, "%s", in);
}

/* The compiled-in path of a local one (sourceMap backwards). */
static void unmap_path(const struct dap *d, const char *in, char *out,
		       size_t len)
{
	size_t k;

	for (k = 0; k < d->nmap; k++) {
		size_t n = strlen(d->map_to[k]);

		if (n && !strncmp(in, d->map_to[k], n) &&
		    (in[n] == '/' || !in[n] || d->map_to[k][n - 1] == '/')) {
			snprintf(out, len, "%s%s", d->map_from[k], in + n);
			return;
		}
	}
	snprintf(out, len, "%s", in);
}

static int same_source(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la == lb)
		return !strcmp(a, b);
	if (la < lb) {
		const char *t = a;

		a = b;
		b = t;
		la = lb;
		lb = strlen(b);
	}
	return a[la - lb - 1] == '/' && !strcmp(a + la - lb, b);
}

/* ---- breakpoints ---- */

static void bps_clear(struct bpset *s)
{
	size_t k;

	for (k = 0; k < s->n; k++) {
		free(s->b[k].path);
		free(s->b[k].name);
		free(s->b[k].addrs);
	}
	free(s->b);
	s->b = NULL;
	s->n = 0;
}

static void hit_condition(struct bp *b, const char *c)
{
	while (c && (*c == ' ' || *c == '>' || *c == '='))
		c++;
	if (!c || !*c)
		return;
	if (*c == '%')
		b->every = strtoull(c + 1, NULL, 0);
	else
		b->from = strtoull(c, NULL, 0);
}

/* Counts a hit; 1 when the breakpoint stops there. */
static int bp_hit(struct bp *b)
{
	b->hits++;
	if (b->every)
		return b->hits % b->every == 0;
	return b->hits >= b->from;
}

static json_object *bp_json(const struct bp *b, int verified, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_int(b->id));
	json_object_object_add(o, "verified", json_object_new_boolean(verified));
	if (b->line)
		json_object_object_add(o, "line", json_object_new_int(
			(int)(b->at_line ? b->at_line : b->line)));
	if (b->naddrs) {
		/* the lowest address it stops at */
		uint64_t lo = b->addrs[0];
		char ref[32];
		size_t k;

		for (k = 1; k < b->naddrs; k++)
			lo = b->addrs[k] < lo ? b->addrs[k] : lo;
		snprintf(ref, sizeof(ref), "0x%" PRIx64, lo);
		json_object_object_add(o, "instructionReference",
				       json_object_new_string(ref));
	}
	if (msg)
		json_object_object_add(o, "message", json_object_new_string(msg));
	return o;
}

/* A source or function breakpoint's addresses in the traced processes'
 * images, as gdb places them (ptd_line_addrs, ptd_func_addrs); 0 when it
 * has some (a function without DWARF has none: it is found by its
 * symbol). */
static int resolve_src(struct dap *d, struct bp *b)
{
	size_t k, j;

	char file[512];

	if (b->resolved || !d->s)
		return b->naddrs ? 0 : -1;
	b->resolved = 1;
	unmap_path(d, b->path ? b->path : "", file, sizeof(file));
	for (k = 0; k < ptd_index_thread_count(d->ix); k++) {
		struct ptd_index_thread it;
		unsigned int at = 0;
		size_t n = 0;
		uint64_t *a;

		ptd_index_thread(d->ix, k, &it);
		for (j = 0; j < k; j++) {
			struct ptd_index_thread o;

			ptd_index_thread(d->ix, j, &o);
			if (o.pid == it.pid)
				break;
		}
		if (j < k || (b->name ? ptd_func_addrs(d->s, it.pid, b->name,
							 NULL, 0, &n) :
			       ptd_line_addrs(d->s, it.pid, file, b->line, NULL,
					      0, &n, &at)) || !n)
			continue;
		a = realloc(b->addrs, (b->naddrs + n) * sizeof(*a));
		if (!a)
			break;
		b->addrs = a;
		if (b->name ? ptd_func_addrs(d->s, it.pid, b->name,
					     b->addrs + b->naddrs, n, &n) :
		    ptd_line_addrs(d->s, it.pid, file, b->line,
				   b->addrs + b->naddrs, n, &n, &at))
			continue;
		b->naddrs += n;
		b->at_line = at;
	}
	return b->naddrs ? 0 : -1;
}

/* setBreakpoints, setFunctionBreakpoints, setInstructionBreakpoints. */
static void set_bps(struct dap *d, json_object *req, struct bpset *set,
		    const char *key, int kind)
{
	json_object *list = arg(req, key), *body, *out;
	const char *path = NULL;
	size_t k, n;

	if (kind == 0) {
		json_object *src = arg(req, "source"), *p;

		if (src && json_object_object_get_ex(src, "path", &p))
			path = json_object_get_string(p);
		if (!path) {
			respond_err(d, req, "setBreakpoints needs source.path");
			return;
		}
		/* Replaces the breakpoints of that source only. */
		for (k = 0; k < set->n;)
			if (same_source(set->b[k].path, path)) {
				free(set->b[k].path);
				free(set->b[k].addrs);
				set->b[k] = set->b[--set->n];
			} else {
				k++;
			}
	} else {
		bps_clear(set);
	}
	if (list && !json_object_is_type(list, json_type_array)) {
		respond_err(d, req, "'%s' must be an array", key);
		return;
	}
	n = list ? json_object_array_length(list) : 0;
	out = json_object_new_array();
	for (k = 0; k < n; k++) {
		json_object *e = json_object_array_get_idx(list, k), *v;
		struct bp b = { 0 };
		void *p;

		b.id = ++d->next_bp_id;
		if (json_object_object_get_ex(e, "hitCondition", &v))
			hit_condition(&b, json_object_get_string(v));
		if (kind == 0) {
			if (json_object_object_get_ex(e, "line", &v))
				b.line = (unsigned int)json_object_get_int(v);
			b.path = strdup(path);
		} else if (kind == 1) {
			if (json_object_object_get_ex(e, "name", &v))
				b.name = strdup(json_object_get_string(v));
		} else {
			int64_t off = 0;

			if (json_object_object_get_ex(e, "offset", &v))
				off = json_object_get_int64(v);
			if (json_object_object_get_ex(e, "instructionReference", &v))
				b.addr = strtoull(json_object_get_string(v), NULL, 0) +
					 (uint64_t)off;
		}
		p = realloc(set->b, (set->n + 1) * sizeof(*set->b));
		if (!p || (kind == 0 && !b.path) || (kind == 1 && !b.name)) {
			free(b.path);
			free(b.name);
			if (p)
				set->b = p;
			json_object_put(out);
			respond_err(d, req, "out of memory");
			return;
		}
		set->b = p;
		set->b[set->n++] = b;
		if (kind == 1 && d->s)
			resolve_src(d, &set->b[set->n - 1]);
		if (kind == 0 && d->s) {
			struct bp *nb = &set->b[set->n - 1];
			char msg[600];
			int ok = resolve_src(d, nb) == 0;

			snprintf(msg, sizeof(msg), "no code for %s:%u in the "
				 "traced programs' debug information",
				 nb->path, nb->line);
			json_object_array_add(out, bp_json(nb, ok, ok ? NULL : msg));
			continue;
		}
		json_object_array_add(out, bp_json(&b, kind != 1 || b.name[0],
						   NULL));
	}
	body = json_object_new_object();
	json_object_object_add(body, "breakpoints", out);
	respond(d, req, body);
}

/* The breakpoint at the cursor's instruction, if one stops there. */
static const struct bp *check_bps(struct dap *d, size_t th, int line_changed)
{
	struct ptd_cursor *c = d->cur[th];
	struct ptd_cursor_pos p;
	struct ptd_frame fr;
	size_t k, n;
	const struct bp *stop = NULL;

	ptd_cursor_get(c, &p);
	if (p.stop)
		return NULL;
	for (k = 0; k < d->ins.n; k++)
		if (d->ins.b[k].addr == p.ev.ip && bp_hit(&d->ins.b[k]) && !stop)
			stop = &d->ins.b[k];
	for (k = 0; k < d->src.n + d->fn.n; k++) {
		struct bp *b = k < d->src.n ? &d->src.b[k] : &d->fn.b[k - d->src.n];
		size_t j;

		for (j = 0; j < b->naddrs; j++)
			if (b->addrs[j] == p.ev.ip)
				break;
		if (j < b->naddrs && bp_hit(b) && !stop)
			stop = b;
	}
	if (!line_changed || !d->fn.n)
		return stop;
	if (ptd_cursor_stack(c, &fr, 1, &n))
		return stop;
	if ((fr.flags & PTD_FRAME_HAS_SYMBOL) && fr.function_off == 0)
		for (k = 0; k < d->fn.n; k++)
			if (!d->fn.b[k].naddrs &&
			    !strcmp(d->fn.b[k].name, fr.function) &&
			    bp_hit(&d->fn.b[k]) && !stop)
				stop = &d->fn.b[k];
	return stop;
}

/* ---- moving ---- */

/* gdb shows a stop where inlined code is entered at the call site in the
 * caller, except a breakpoint on that inlined function (a function
 * breakpoint on another one hides the frames entered inside it); source
 * and instruction breakpoints show the innermost function. */
static size_t hidden_frames(struct dap *d, size_t th, const struct bp *bp,
			    int stepped)
{
	struct ptd_frame fr[16];
	size_t n, k;

	if ((!stepped && (!bp || !bp->name)) ||
	    ptd_cursor_stack(d->cur[th], fr, 16, &n))
		return 0;
	for (k = 0; k < n && k < 16; k++)
		if (!(fr[k].flags & PTD_FRAME_INLINE_ENTRY) ||
		    (bp && bp->name && !strcmp(fr[k].function, bp->name)))
			break;
	return k < n && k < 16 ? k : 0;
}

/* Reports where a move ended: rc and found from ptd_cursor_find/step. */
static void report_stop(struct dap *d, size_t th, int rc, int backward,
			const char *reason, const struct bp *bp)
{
	size_t hide = hidden_frames(d, th, bp, !strcmp(reason, "step"));
	struct ptd_cursor_pos p;
	char desc[1024];

	ptd_cursor_get(d->cur[th], &p);
	if (p.stop && rc != PTD_ERR_END) {
		snprintf(desc, sizeof(desc), "%s at instruction %" PRIu64 ": %s",
			 p.ev.kind == PTD_EV_GAP ? "trace gap" :
			 p.ev.kind == PTD_EV_OVERFLOW ? "trace overflow" :
			 "decode error", p.insn, p.ev.msg ? p.ev.msg : "");
		stopped(d, th, "exception", desc, desc, 0);
	} else if (rc == PTD_ERR_END) {
		snprintf(desc, sizeof(desc), backward ?
			 "start of the trace: nothing of this thread was "
			 "recorded before instruction %" PRIu64 "%s%s" :
			 "end of the trace: nothing of this thread was "
			 "recorded after instruction %" PRIu64 "%s%s", p.insn,
			 p.stop ? "; it ends at a decode error: " : "",
			 p.stop && p.ev.msg ? p.ev.msg : "");
		stopped(d, th, backward ? "entry" : "pause", desc, desc, 0);
	} else if (bp) {
		snprintf(desc, sizeof(desc), "breakpoint %d, hit %" PRIu64
			 " time%s", bp->id, bp->hits, bp->hits == 1 ? "" : "s");
		stopped(d, th, bp->name ? "function breakpoint" :
			bp->addr ? "instruction breakpoint" : "breakpoint",
			desc, NULL, bp->id);
	} else {
		stopped(d, th, reason, NULL, NULL, 0);
	}
	d->hide[th] = hide;
}

/* continue / reverseContinue: line by line (and instruction breakpoint
 * addresses) until a breakpoint, a stop or an end. */
static void run_to_bp(struct dap *d, size_t th, int backward)
{
	struct ptd_find_opts f = { .sz = sizeof(f), .backward = backward };
	struct ptd_addr_range *r = NULL;
	const struct bp *bp = NULL;
	unsigned int found;
	size_t k, j, n = d->ins.n;
	int rc;

	int by_symbol = 0;

	for (k = 0; k < d->src.n; k++) {
		resolve_src(d, &d->src.b[k]);
		n += d->src.b[k].naddrs;
	}
	for (k = 0; k < d->fn.n; k++) {
		resolve_src(d, &d->fn.b[k]);
		n += d->fn.b[k].naddrs;
		by_symbol |= !d->fn.b[k].naddrs;
	}
	if (n && (r = calloc(n, sizeof(*r)))) {
		n = 0;
		for (k = 0; k < d->ins.n; k++) {
			r[n].start = d->ins.b[k].addr;
			r[n++].end = d->ins.b[k].addr + 1;
		}
		for (k = 0; k < d->src.n + d->fn.n; k++) {
			const struct bp *b = k < d->src.n ? &d->src.b[k] :
					     &d->fn.b[k - d->src.n];

			for (j = 0; j < b->naddrs; j++) {
				r[n].start = b->addrs[j];
				r[n++].end = b->addrs[j] + 1;
			}
		}
		f.ranges = r;
		f.nranges = n;
		f.what |= PTD_FIND_ADDR;
	}
	if (by_symbol)
		f.what |= PTD_FIND_LINE_CHANGE;
	/* no breakpoints: an empty address set still stops at errors */
	f.what |= PTD_FIND_ADDR;
	for (;;) {
		rc = ptd_cursor_find(d->cur[th], &f, &found);
		if (rc || (found & PTD_FIND_STOP))
			break;
		if ((bp = check_bps(d, th, !!(found & PTD_FIND_LINE_CHANGE))))
			break;
	}
	free(r);
	report_stop(d, th, rc, backward, "breakpoint", bp);
}

/* next (kind 0), step in (1), step out (2) forwards or backwards (gdb's
 * reverse-next, reverse-step, reverse-finish) at line or instruction
 * granularity (gran). */
static void move(struct dap *d, size_t th, int kind, int backward,
		 const char *gran)
{
	struct ptd_cursor *c = d->cur[th];
	struct ptd_find_opts f = { .sz = sizeof(f), .backward = backward };
	unsigned int found = 0;
	size_t hide;
	int rc;

	if (kind == 1 && d->hide[th]) {
		/* gdb's step at an inlined call site enters it in place */
		size_t h = d->hide[th] - 1;

		stopped(d, th, "step", NULL, NULL, 0);
		d->hide[th] = h;
		return;
	}
	if (gran && !strcmp(gran, "instruction") && kind != 2) {
		/* over a call: to the instruction after it returns */
		struct ptd_cursor_pos p;

		ptd_cursor_get(c, &p);
		if (kind == 0 && !backward && !p.stop &&
		    (p.ev.iclass == PTD_IC_CALL || p.ev.iclass == PTD_IC_IND_CALL)) {
			f.what = PTD_FIND_DEPTH_BELOW | PTD_FIND_MAX_DEPTH;
			rc = ptd_cursor_step(c, 1);
			if (!rc)
				rc = ptd_cursor_find(c, &f, &found);
		} else {
			rc = ptd_cursor_step(c, backward ? -1 : 1);
		}
		report_stop(d, th, rc, backward, "step", NULL);
		return;
	}
	hide = d->hide[th];
	if (kind == 2)
		rc = dapstep_out(d->s, c, backward, &hide);
	else
		rc = dapstep_line(d->s, c, kind == 1 ? DAPSTEP_INTO : DAPSTEP_OVER,
				  backward, &hide);
	report_stop(d, th, rc, backward, "step", NULL);
	/* a step into inlined code at its call site shows it */
	if (hide != SIZE_MAX && !rc)
		d->hide[th] = hide;
}

/* next, stepIn, stepOut, stepBack. */
static void step(struct dap *d, json_object *req, size_t th, int kind,
		 int backward)
{
	respond(d, req, NULL);
	move(d, th, kind, backward, arg_str(req, "granularity"));
}

/* ---- requests ---- */

static void free_session(struct dap *d)
{
	size_t k;

	for (k = 0; k < d->nth; k++)
		ptd_cursor_close(d->cur[k]);
	free(d->cur);
	free(d->tids);
	free(d->hide);
	d->hide = NULL;
	d->cur = NULL;
	d->tids = NULL;
	d->nth = 0;
	ptd_index_free(d->ix);
	d->ix = NULL;
	ptd_close(d->s);
	d->s = NULL;
}

static char **str_list(json_object *a, size_t *n)
{
	char **v;
	size_t k, m;

	*n = 0;
	if (!a || !json_object_is_type(a, json_type_array))
		return NULL;
	m = json_object_array_length(a);
	v = calloc(m + 1, sizeof(*v));
	for (k = 0; v && k < m; k++)
		v[(*n)++] = (char *)json_object_get_string(
			json_object_array_get_idx(a, k));
	return v;
}

static void launch(struct dap *d, json_object *req)
{
	struct ptd_open_opts oo = { .sz = sizeof(oo) };
	const char *trace = arg_str(req, "trace");
	json_object *v, *sp = arg(req, "searchPath"), *sm = arg(req, "sourceMap");
	char **search = NULL, msg[256];
	size_t nsearch, k;
	int rc;

	if (d->s) {
		respond_err(d, req, "already launched: one trace per session");
		return;
	}
	if (!trace) {
		respond_err(d, req, "launch needs 'trace': the path of a trace "
			    "ptdecode reads (capture directory, perf.data, ...)");
		return;
	}
	if (sp && !json_object_is_type(sp, json_type_array)) {
		respond_err(d, req, "'searchPath' must be a list of directories");
		return;
	}
	if (sm && !json_object_is_type(sm, json_type_object)) {
		respond_err(d, req, "'sourceMap' must be an object mapping "
			    "compiled-in path prefixes to local ones");
		return;
	}
	search = str_list(sp, &nsearch);
	oo.search_path = (const char *const *)search;
	oo.sysroot = arg_str(req, "sysroot");
	v = arg(req, "stopOnEntry");
	d->stop_on_entry = v ? json_object_get_boolean(v) : 0;
	if (sm) {
		json_object_object_foreach(sm, key, val) {
			char **f = realloc(d->map_from, (d->nmap + 1) * sizeof(char *));
			char **t = f ? realloc(d->map_to, (d->nmap + 1) * sizeof(char *)) : NULL;

			if (f)
				d->map_from = f;
			if (t)
				d->map_to = t;
			if (!f || !t)
				break;
			d->map_from[d->nmap] = strdup(key);
			d->map_to[d->nmap] = strdup(json_object_get_string(val));
			d->nmap++;
		}
	}
	rc = ptd_open(&d->s, trace, &oo);
	free(search);
	if (rc < 0) {
		respond_err(d, req, "cannot open trace %s: %s", trace,
			    d->s ? ptd_errmsg(d->s) : ptd_strerror(rc));
		ptd_close(d->s);
		d->s = NULL;
		return;
	}
	for (k = 0; k < ptd_warning_count(d->s); k++) {
		snprintf(msg, sizeof(msg), "warning: %s\n", ptd_warning(d->s, k));
		output(d, "console", msg);
	}
	rc = ptd_index_build(&d->ix, d->s, NULL);
	if (rc < 0) {
		respond_err(d, req, "cannot index trace %s: %s", trace,
			    ptd_errmsg(d->s));
		free_session(d);
		return;
	}
	d->nth = ptd_index_thread_count(d->ix);
	d->cur = calloc(d->nth ? d->nth : 1, sizeof(*d->cur));
	d->tids = calloc(d->nth ? d->nth : 1, sizeof(*d->tids));
	d->hide = calloc(d->nth ? d->nth : 1, sizeof(*d->hide));
	if (!d->cur || !d->tids || !d->hide) {
		respond_err(d, req, "out of memory");
		free_session(d);
		return;
	}
	for (k = 0; k < d->nth; k++) {
		/* inlined functions are frames of their own, as in gdb */
		struct ptd_cursor_opts inl = { .sz = sizeof(inl),
					       .flags = PTD_CURSOR_INLINE_FRAMES };
		struct ptd_index_thread it;

		ptd_index_thread(d->ix, k, &it);
		d->tids[k] = it.tid;
		if (ptd_cursor_open(&d->cur[k], d->ix, it.tid, &inl)) {
			respond_err(d, req, "out of memory");
			free_session(d);
			return;
		}
		snprintf(msg, sizeof(msg), "thread %d: %" PRIu64 " instructions, %"
			 PRIu64 " decode errors or gaps\n", it.tid,
			 it.instructions, it.stops);
		output(d, "console", msg);
	}
	if (!d->nth) {
		respond_err(d, req, "trace %s holds no instructions", trace);
		free_session(d);
		return;
	}
	respond(d, req, NULL);
	/* Breakpoints are welcome once the trace is indexed. */
	event(d, "initialized", NULL);
}

static void threads(struct dap *d, json_object *req)
{
	json_object *body = json_object_new_object(), *a = json_object_new_array();
	size_t k;

	for (k = 0; k < d->nth; k++) {
		json_object *t = json_object_new_object();
		const char *comm = ptd_thread_name(d->s, d->tids[k]);
		char name[64];

		snprintf(name, sizeof(name), "%d %s", d->tids[k], comm ? comm : "");
		json_object_object_add(t, "id", json_object_new_int(d->tids[k]));
		json_object_object_add(t, "name", json_object_new_string(name));
		json_object_array_add(a, t);
	}
	json_object_object_add(body, "threads", a);
	respond(d, req, body);
}

static void hex(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "0x%" PRIx64, v);
}

static void stack_trace(struct dap *d, json_object *req, size_t th)
{
	struct ptd_frame *fr;
	json_object *body, *a;
	int64_t start = 0, levels = 0;
	size_t n, k;

	arg_int(req, "startFrame", &start);
	arg_int(req, "levels", &levels);
	if (ptd_cursor_stack(d->cur[th], NULL, 0, &n) ||
	    !(fr = calloc(n, sizeof(*fr))) ||
	    ptd_cursor_stack(d->cur[th], fr, n, &n)) {
		respond_err(d, req, "cannot compute the call stack");
		return;
	}
	a = json_object_new_array();
	if (start < 0)
		start = 0;
	start += (int64_t)d->hide[th];
	for (k = (size_t)start;
	     k < n && (levels <= 0 || k < (size_t)start + (size_t)levels); k++) {
		json_object *f = json_object_new_object();
		char name[300], ip[32];

		json_object_object_add(f, "id", json_object_new_int64(
			(int64_t)th * FRAMES_PER_THREAD + (int64_t)k));
		if (fr[k].flags & (PTD_FRAME_BEFORE_TRACE | PTD_FRAME_SIGNAL)) {
			/* as gdb shows a signal trampoline's frame */
			json_object_object_add(f, "name", json_object_new_string(
				fr[k].flags & PTD_FRAME_SIGNAL ? "<signal handler called>" :
				"<older frames: not in the trace>"));
			if (fr[k].pc) {
				char ip[32];

				hex(ip, sizeof(ip), fr[k].pc);
				json_object_object_add(f, "instructionPointerReference",
						       json_object_new_string(ip));
			}
			json_object_object_add(f, "presentationHint",
					       json_object_new_string("label"));
			json_object_object_add(f, "line", json_object_new_int(0));
			json_object_object_add(f, "column", json_object_new_int(0));
			json_object_array_add(a, f);
			continue;
		}
		if (!(fr[k].flags & (PTD_FRAME_INLINED | PTD_FRAME_CALLS_INLINED))) {
			/* the line as gdb shows it (a statement row's line
			 * where several rows share the address) */
			struct ptd_line_range lr;

			if (ptd_line_range(d->s, fr[k].pid, fr[k].pc, &lr) == 0 &&
			    lr.line && lr.file[0]) {
				fr[k].line = lr.line;
				snprintf(fr[k].file, sizeof(fr[k].file), "%s", lr.file);
				fr[k].flags |= PTD_FRAME_HAS_LINE;
				/* the function as the debug info names it
				 * (of aliases, the one gdb shows) */
				if (lr.function[0]) {
					snprintf(fr[k].function, sizeof(fr[k].function),
						 "%s", lr.function);
					fr[k].flags |= PTD_FRAME_HAS_SYMBOL;
				}
			}
		}
		if (fr[k].flags & PTD_FRAME_HAS_SYMBOL)
			snprintf(name, sizeof(name), "%s", fr[k].function);
		else
			hex(name, sizeof(name), fr[k].pc);
		hex(ip, sizeof(ip), fr[k].pc);
		json_object_object_add(f, "name", json_object_new_string(name));
		json_object_object_add(f, "instructionPointerReference",
				       json_object_new_string(ip));
		if (fr[k].flags & PTD_FRAME_HAS_LINE) {
			json_object *src = json_object_new_object();
			const char *base = strrchr(fr[k].file, '/');
			char path[512];

			map_path(d, fr[k].file, path, sizeof(path));
			json_object_object_add(src, "name", json_object_new_string(
				base ? base + 1 : fr[k].file));
			json_object_object_add(src, "path", json_object_new_string(path));
			json_object_object_add(f, "source", src);
			json_object_object_add(f, "line", json_object_new_int((int)fr[k].line));
		} else {
			json_object_object_add(f, "line", json_object_new_int(0));
		}
		json_object_object_add(f, "column", json_object_new_int(1));
		json_object_array_add(a, f);
	}
	free(fr);
	body = json_object_new_object();
	json_object_object_add(body, "stackFrames", a);
	json_object_object_add(body, "totalFrames",
			       json_object_new_int64((int64_t)(n - d->hide[th])));
	respond(d, req, body);
}

static void scopes(struct dap *d, json_object *req)
{
	json_object *body = json_object_new_object(), *a = json_object_new_array();
	json_object *s = json_object_new_object();
	int64_t fid = 0;

	arg_int(req, "frameId", &fid);
	json_object_object_add(s, "name", json_object_new_string("Trace"));
	json_object_object_add(s, "variablesReference", json_object_new_int64(
		fid / FRAMES_PER_THREAD + 1));
	json_object_object_add(s, "expensive", json_object_new_boolean(0));
	json_object_array_add(a, s);
	json_object_object_add(body, "scopes", a);
	respond(d, req, body);
}

static void var(json_object *a, const char *name, const char *value)
{
	json_object *v = json_object_new_object();

	json_object_object_add(v, "name", json_object_new_string(name));
	json_object_object_add(v, "value", json_object_new_string(value));
	json_object_object_add(v, "variablesReference", json_object_new_int(0));
	json_object_array_add(a, v);
}

static void variables(struct dap *d, json_object *req)
{
	json_object *body, *a;
	struct ptd_cursor_pos p;
	int64_t ref = 0;
	char buf[512];
	const char *img;

	if (arg_int(req, "variablesReference", &ref) || ref < 1 ||
	    (uint64_t)ref > d->nth) {
		respond_err(d, req, "no such variables reference");
		return;
	}
	ptd_cursor_get(d->cur[ref - 1], &p);
	a = json_object_new_array();
	snprintf(buf, sizeof(buf), "%" PRIu64, p.insn);
	var(a, "instruction", buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, p.pos);
	var(a, "position", buf);
	if (p.ev.flags & PTD_EVF_TIME_VALID)
		snprintf(buf, sizeof(buf), "%" PRIu64 " ns", p.ev.time);
	else
		snprintf(buf, sizeof(buf), "unknown");
	var(a, "time", buf);
	snprintf(buf, sizeof(buf), "%d", p.ev.cpu);
	var(a, "cpu", p.ev.cpu >= 0 ? buf : "unknown");
	img = p.stop ? NULL : ptd_image_name(d->s, p.ev.pid, p.ev.ip);
	snprintf(buf, sizeof(buf), "%s (version %u)", img ? img : "unknown",
		 p.ev.image);
	var(a, "image", buf);
	snprintf(buf, sizeof(buf), "%d", p.depth);
	var(a, "call depth", buf);
	if (p.stop) {
		snprintf(buf, sizeof(buf), "%s", p.ev.msg ? p.ev.msg : "");
		var(a, "decode error", buf);
	}
	var(a, "registers and memory",
	    "not recorded: a control-flow trace holds neither");
	body = json_object_new_object();
	json_object_object_add(body, "variables", a);
	respond(d, req, body);
}

/* Goes to instruction ("insn"), time or position ("pos") v: 0, 1 for an
 * unknown what, or the cursor's error. */
static int seek_to(struct ptd_cursor *c, const char *what, uint64_t v)
{
	if (!strcmp(what, "insn") || !strcmp(what, "instruction"))
		return ptd_cursor_seek_insn(c, v);
	if (!strcmp(what, "time"))
		return ptd_cursor_seek_time(c, v);
	if (!strcmp(what, "pos") || !strcmp(what, "position"))
		return ptd_cursor_seek_pos(c, v);
	return 1;
}

/* gdb's reverse steps that DAP has no request for: debug console
 * commands, as move()'s kinds backwards. */
static const struct {
	const char *name, *alias;
	int kind;
} reverse_cmds[] = {
	{ "reverse-step", "rs", 1 },
	{ "reverse-finish", "rf", 2 },
};

/* evaluate "insn N", "time T", "pos P": goto; "reverse-step",
 * "reverse-finish". */
static void evaluate(struct dap *d, json_object *req, size_t th)
{
	const char *e = arg_str(req, "expression");
	char what[16], res[128];
	unsigned long long v;
	size_t k;
	int rc;

	/* a word alone: a command */
	for (k = 0; e && sscanf(e, " %15s %c", what, res) == 1 &&
	     k < sizeof(reverse_cmds) / sizeof(reverse_cmds[0]); k++) {
		json_object *body;

		if (strcmp(what, reverse_cmds[k].name) &&
		    strcmp(what, reverse_cmds[k].alias))
			continue;
		body = json_object_new_object();
		json_object_object_add(body, "result",
				       json_object_new_string(reverse_cmds[k].name));
		json_object_object_add(body, "variablesReference",
				       json_object_new_int(0));
		respond(d, req, body);
		move(d, th, reverse_cmds[k].kind, 1, NULL);
		return;
	}
	if (!e || sscanf(e, " %15s %llu", what, &v) != 2) {
		respond_err(d, req, "evaluate: a control-flow trace has no values; "
			    "go to a point with 'insn N', 'time NS' or 'pos P', "
			    "step back into calls with 'reverse-step' or back "
			    "to the call of the function with 'reverse-finish'");
		return;
	}
	rc = seek_to(d->cur[th], what, v);
	if (rc == 1) {
		respond_err(d, req, "unknown command '%s': use insn, time or pos "
			    "(with a number), reverse-step or reverse-finish", what);
		return;
	}
	if (rc) {
		respond_err(d, req, "%s %llu is past the thread's trace", what, v);
		return;
	}
	{
		json_object *body = json_object_new_object();
		struct ptd_cursor_pos p;

		ptd_cursor_get(d->cur[th], &p);
		snprintf(res, sizeof(res), "at instruction %" PRIu64, p.insn);
		json_object_object_add(body, "result", json_object_new_string(res));
		json_object_object_add(body, "variablesReference", json_object_new_int(0));
		respond(d, req, body);
	}
	stopped(d, th, "goto", NULL, NULL, 0);
}

/* The first position from the cursor's (itself too with self) in the
 * direction where an instruction of ranges executes; 0 when found. */
static int find_exec(struct ptd_cursor *c, const struct ptd_addr_range *r,
		     size_t nr, int backward, int self, uint64_t *pos)
{
	struct ptd_find_opts f = { .sz = sizeof(f), .what = PTD_FIND_ADDR,
				   .backward = backward, .ranges = r,
				   .nranges = nr };
	struct ptd_cursor_pos p;
	unsigned int found = 0;

	ptd_cursor_get(c, &p);
	if (self && !p.stop) {
		size_t k;

		for (k = 0; k < nr; k++)
			if (p.ev.ip >= r[k].start && p.ev.ip < r[k].end) {
				*pos = p.pos;
				return 0;
			}
	}
	do {
		if (ptd_cursor_find(c, &f, &found))
			return -1;
	} while (!(found & PTD_FIND_ADDR));
	ptd_cursor_get(c, &p);
	*pos = p.pos;
	return 0;
}

/* gotoTargets: where a source line runs: its first, previous (before
 * the cursor), next and last executions in the thread's trace. */
static void goto_targets(struct dap *d, json_object *req, size_t th)
{
	static const char *const what[4] = { "first", "previous", "next", "last" };
	json_object *src = arg(req, "source"), *p, *a, *body;
	struct bp b = { 0 };
	struct ptd_addr_range *r;
	struct ptd_cursor *c = NULL;
	struct ptd_cursor_pos now;
	struct ptd_index_thread it;
	int64_t line = 0;
	size_t k;

	if (!src || !json_object_object_get_ex(src, "path", &p) ||
	    arg_int(req, "line", &line) || line <= 0) {
		respond_err(d, req, "gotoTargets needs source.path and line");
		return;
	}
	b.path = (char *)json_object_get_string(p);
	b.line = (unsigned int)line;
	if (resolve_src(d, &b) || !(r = calloc(b.naddrs, sizeof(*r)))) {
		respond_err(d, req, "no code for %s:%u in the traced programs' "
			    "debug information", b.path, b.line);
		free(b.addrs);
		return;
	}
	for (k = 0; k < b.naddrs; k++) {
		r[k].start = b.addrs[k];
		r[k].end = b.addrs[k] + 1;
	}
	ptd_cursor_get(d->cur[th], &now);
	ptd_index_thread(d->ix, th, &it);
	a = json_object_new_array();
	d->ngoto = 0;
	d->goto_th = th;
	if (ptd_cursor_open(&c, d->ix, d->tids[th], NULL) == 0) {
		for (k = 0; k < 4; k++) {
			uint64_t pos, start = k == 0 ? 0 : k == 3 ?
				it.positions - 1 : now.pos;
			struct ptd_cursor_pos at;
			json_object *t;
			char label[600];
			size_t j;

			if (ptd_cursor_seek_pos(c, start) ||
			    find_exec(c, r, b.naddrs, k == 1 || k == 3,
				      k == 0 || k == 3, &pos))
				continue;
			for (j = 0; j < d->ngoto && d->goto_pos[j] != pos; j++)
				;
			if (j < d->ngoto)
				continue;
			ptd_cursor_get(c, &at);
			d->goto_pos[d->ngoto++] = pos;
			snprintf(label, sizeof(label), "%s time %s:%u runs "
				 "(instruction %" PRIu64 ")", what[k], b.path,
				 b.at_line, at.insn);
			t = json_object_new_object();
			json_object_object_add(t, "id", json_object_new_int(
				(int)d->ngoto));
			json_object_object_add(t, "label", json_object_new_string(label));
			json_object_object_add(t, "line", json_object_new_int(
				(int)b.at_line));
			snprintf(label, sizeof(label), "0x%" PRIx64, at.ev.ip);
			json_object_object_add(t, "instructionPointerReference",
					       json_object_new_string(label));
			json_object_array_add(a, t);
		}
		ptd_cursor_close(c);
	}
	free(r);
	free(b.addrs);
	body = json_object_new_object();
	json_object_object_add(body, "targets", a);
	respond(d, req, body);
}

static void goto_target(struct dap *d, json_object *req, size_t th)
{
	int64_t id = 0;

	if (arg_int(req, "targetId", &id) || id < 1 || (size_t)id > d->ngoto ||
	    th != d->goto_th) {
		respond_err(d, req, "no such goto target: ask gotoTargets first");
		return;
	}
	if (ptd_cursor_seek_pos(d->cur[th], d->goto_pos[id - 1])) {
		respond_err(d, req, "goto target is past the thread's trace");
		return;
	}
	respond(d, req, NULL);
	stopped(d, th, "goto", NULL, NULL, 0);
}

/* setVariable on the Trace scope: instruction, time or position moves
 * the cursor there (going to an instruction number or a time). */
static void set_variable(struct dap *d, json_object *req)
{
	const char *name = arg_str(req, "name"), *val = arg_str(req, "value");
	int64_t ref = 0;
	unsigned long long v;
	struct ptd_cursor_pos p;
	json_object *body;
	char *end, buf[64];
	size_t th;
	int rc;

	if (arg_int(req, "variablesReference", &ref) || ref < 1 ||
	    (uint64_t)ref > d->nth || !name || !val) {
		respond_err(d, req, "setVariable needs a Trace scope's "
			    "variablesReference, name and value");
		return;
	}
	th = (size_t)ref - 1;
	v = strtoull(val, &end, 0);
	if (end == val) {
		respond_err(d, req, "'%s' is not a number", val);
		return;
	}
	rc = seek_to(d->cur[th], name, v);
	if (rc == 1) {
		respond_err(d, req, "only instruction, time and position can be "
			    "set: a control-flow trace holds no other values");
		return;
	}
	if (rc) {
		respond_err(d, req, "%s %llu is past the thread's trace", name, v);
		return;
	}
	ptd_cursor_get(d->cur[th], &p);
	if (!strcmp(name, "time"))
		snprintf(buf, sizeof(buf), "%" PRIu64 " ns", p.ev.time);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64,
			 !strcmp(name, "position") ? p.pos : p.insn);
	body = json_object_new_object();
	json_object_object_add(body, "value", json_object_new_string(buf));
	respond(d, req, body);
	stopped(d, th, "goto", NULL, NULL, 0);
}

static void read_memory(struct dap *d, json_object *req, size_t th)
{
	const char *ref = arg_str(req, "memoryReference");
	int64_t off = 0, count = 0;
	json_object *body;
	uint8_t *buf;
	uint64_t addr;
	int n;

	if (!ref || arg_int(req, "count", &count) || count < 0 ||
	    count > (1 << 20)) {
		respond_err(d, req, "readMemory needs memoryReference and a count "
			    "up to 1 MiB");
		return;
	}
	arg_int(req, "offset", &off);
	addr = strtoull(ref, NULL, 0) + (uint64_t)off;
	buf = malloc((size_t)count + 1);
	n = buf && count ? ptd_cursor_read_code(d->cur[th], addr, buf,
						(size_t)count) : 0;
	body = json_object_new_object();
	{
		char a[32];

		hex(a, sizeof(a), addr);
		json_object_object_add(body, "address", json_object_new_string(a));
	}
	if (n > 0) {
		static const char b64[] =
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		char *s = malloc(((size_t)n + 2) / 3 * 4 + 1);
		size_t i, o = 0;

		for (i = 0; s && i < (size_t)n; i += 3) {
			uint32_t w = (uint32_t)buf[i] << 16 |
				     (i + 1 < (size_t)n ? buf[i + 1] << 8 : 0) |
				     (i + 2 < (size_t)n ? buf[i + 2] : 0);

			s[o++] = b64[w >> 18 & 63];
			s[o++] = b64[w >> 12 & 63];
			s[o++] = i + 1 < (size_t)n ? b64[w >> 6 & 63] : '=';
			s[o++] = i + 2 < (size_t)n ? b64[w & 63] : '=';
		}
		if (s) {
			s[o] = 0;
			json_object_object_add(body, "data", json_object_new_string(s));
		}
		free(s);
	}
	json_object_object_add(body, "unreadableBytes",
			       json_object_new_int64(count - (n > 0 ? n : 0)));
	free(buf);
	respond(d, req, body);
}

static void disassemble(struct dap *d, json_object *req, size_t th)
{
	const char *ref = arg_str(req, "memoryReference");
	int64_t off = 0, ioff = 0, count = 0, k;
	struct ptd_cursor_pos p;
	json_object *body, *a;
	uint64_t addr;

	if (!ref || arg_int(req, "instructionCount", &count) || count < 0 ||
	    count > 100000) {
		respond_err(d, req, "disassemble needs memoryReference and an "
			    "instructionCount");
		return;
	}
	arg_int(req, "offset", &off);
	arg_int(req, "instructionOffset", &ioff);
	addr = strtoull(ref, NULL, 0) + (uint64_t)off;
	/* Instructions before addr cannot be found by decoding backwards:
	 * start that many maximal lengths earlier is not exact either, so
	 * a negative offset starts at addr (and pads the front). */
	ptd_cursor_get(d->cur[th], &p);
	a = json_object_new_array();
	for (k = 0; k < count; k++) {
		json_object *o = json_object_new_object();
		struct ptd_event ev = { 0 };
		char txt[160], as[32], bytes[48];
		int n = -1, i;

		if (k + ioff >= 0) {
			ev.kind = PTD_EV_INSN;
			ev.mode = p.stop ? PTD_MODE_64 : p.ev.mode;
			ev.ip = addr;
			i = ptd_cursor_read_code(d->cur[th], addr, ev.raw, sizeof(ev.raw));
			ev.size = (uint8_t)(i > 0 ? i : 0);
			n = i > 0 ? ptd_disasm_length(d->dis, &ev) : -1;
		}
		hex(as, sizeof(as), k + ioff >= 0 ? addr : 0);
		json_object_object_add(o, "address", json_object_new_string(as));
		if (n > 0) {
			ev.size = (uint8_t)n;
			ptd_disasm_text(d->dis, &ev, txt, sizeof(txt));
			for (i = 0; i < n; i++)
				snprintf(bytes + 3 * i, sizeof(bytes) - 3 * (size_t)i,
					 "%02x ", ev.raw[i]);
			bytes[3 * n - 1] = 0;
			json_object_object_add(o, "instructionBytes",
					       json_object_new_string(bytes));
			addr += (uint64_t)n;
		} else {
			snprintf(txt, sizeof(txt), "%s", k + ioff < 0 ? "" :
				 "(no code known here at this time)");
			json_object_object_add(o, "presentationHint",
					       json_object_new_string("invalid"));
			if (k + ioff >= 0)
				addr++;
		}
		json_object_object_add(o, "instruction", json_object_new_string(txt));
		json_object_array_add(a, o);
	}
	body = json_object_new_object();
	json_object_object_add(body, "instructions", a);
	respond(d, req, body);
}

static void initialize(struct dap *d, json_object *req)
{
	static const char *const caps[] = {
		"supportsConfigurationDoneRequest", "supportsStepBack",
		"supportsFunctionBreakpoints", "supportsInstructionBreakpoints",
		"supportsDisassembleRequest", "supportsReadMemoryRequest",
		"supportsSteppingGranularity", "supportsHitConditionalBreakpoints",
		"supportsTerminateRequest", "supportsEvaluateForHovers",
		"supportsGotoTargetsRequest", "supportsSetVariable",
	};
	json_object *body = json_object_new_object();
	size_t k;

	for (k = 0; k < sizeof(caps) / sizeof(caps[0]); k++)
		json_object_object_add(body, caps[k], json_object_new_boolean(
			strcmp(caps[k], "supportsEvaluateForHovers") != 0));
	respond(d, req, body);
}

static void dispatch(struct dap *d, json_object *req)
{
	json_object *v;
	const char *cmd;
	size_t th = 0;

	if (!json_object_is_type(req, json_type_object) ||
	    !json_object_object_get_ex(req, "command", &v) ||
	    !(cmd = json_object_get_string(v))) {
		respond_err(d, req, "not a DAP request (no 'command')");
		return;
	}
	if (!strcmp(cmd, "initialize"))
		return initialize(d, req);
	if (!strcmp(cmd, "launch"))
		return launch(d, req);
	if (!strcmp(cmd, "disconnect") || !strcmp(cmd, "terminate")) {
		respond(d, req, NULL);
		if (!strcmp(cmd, "terminate"))
			event(d, "terminated", NULL);
		d->done = !strcmp(cmd, "disconnect");
		return;
	}
	if (!strcmp(cmd, "setExceptionBreakpoints")) {
		json_object *b = json_object_new_object();

		json_object_object_add(b, "breakpoints", json_object_new_array());
		return respond(d, req, b);
	}
	if (!strcmp(cmd, "setBreakpoints"))
		return set_bps(d, req, &d->src, "breakpoints", 0);
	if (!strcmp(cmd, "setFunctionBreakpoints"))
		return set_bps(d, req, &d->fn, "breakpoints", 1);
	if (!strcmp(cmd, "setInstructionBreakpoints"))
		return set_bps(d, req, &d->ins, "breakpoints", 2);
	if (!d->s) {
		respond_err(d, req, "'%s' before a successful launch", cmd);
		return;
	}
	if (!strcmp(cmd, "configurationDone")) {
		respond(d, req, NULL);
		if (d->stop_on_entry)
			stopped(d, 0, "entry", "start of the trace", NULL, 0);
		else
			run_to_bp(d, 0, 0);
		return;
	}
	if (!strcmp(cmd, "threads"))
		return threads(d, req);
	if (thread_arg(d, req, &th)) {
		respond_err(d, req, "no such thread");
		return;
	}
	if (!strcmp(cmd, "stackTrace"))
		return stack_trace(d, req, th);
	if (!strcmp(cmd, "scopes"))
		return scopes(d, req);
	if (!strcmp(cmd, "variables"))
		return variables(d, req);
	if (!strcmp(cmd, "continue") || !strcmp(cmd, "reverseContinue")) {
		json_object *b = json_object_new_object();

		json_object_object_add(b, "allThreadsContinued",
				       json_object_new_boolean(0));
		respond(d, req, b);
		return run_to_bp(d, th, cmd[0] == 'r');
	}
	if (!strcmp(cmd, "next"))
		return step(d, req, th, 0, 0);
	if (!strcmp(cmd, "stepIn"))
		return step(d, req, th, 1, 0);
	if (!strcmp(cmd, "stepOut"))
		return step(d, req, th, 2, 0);
	if (!strcmp(cmd, "stepBack"))
		return step(d, req, th, 0, 1);
	if (!strcmp(cmd, "evaluate"))
		return evaluate(d, req, th);
	if (!strcmp(cmd, "gotoTargets"))
		return goto_targets(d, req, th);
	if (!strcmp(cmd, "goto"))
		return goto_target(d, req, th);
	if (!strcmp(cmd, "setVariable"))
		return set_variable(d, req);
	if (!strcmp(cmd, "readMemory"))
		return read_memory(d, req, th);
	if (!strcmp(cmd, "disassemble"))
		return disassemble(d, req, th);
	if (!strcmp(cmd, "pause")) {
		respond(d, req, NULL);
		return;
	}
	respond_err(d, req, "request '%s' is not supported by ptdecode dap", cmd);
}

/* One message: 1, or 0 at the end of input, -1 on broken framing. */
static int read_message(char **body)
{
	char line[256];
	unsigned long len = 0;
	int have = 0;

	for (;;) {
		if (!fgets(line, sizeof(line), stdin))
			return have ? -1 : 0;
		if (!strcmp(line, "\r\n") || !strcmp(line, "\n"))
			break;
		if (!strncasecmp(line, "Content-Length:", 15)) {
			len = strtoul(line + 15, NULL, 10);
			have = 1;
		}
	}
	if (!have || len > DAP_MAX_BODY)
		return -1;
	*body = malloc(len + 1);
	if (!*body || fread(*body, 1, len, stdin) != len) {
		free(*body);
		return -1;
	}
	(*body)[len] = 0;
	return 1;
}

int dap_main(int argc, char **argv)
{
	struct dap d = { 0 };
	char *body;
	int rc;

	if (argc > 1) {
		fprintf(stderr, "usage: ptdecode dap  (a Debug Adapter Protocol "
			"server on stdin/stdout; the trace comes with launch)\n");
		return 2;
	}
	(void)argv;
	/* Some clients (node's child_process) hand over non-blocking
	 * sockets: stdio reads and writes must block. */
	for (int fd = 0; fd < 2; fd++) {
		int fl = fcntl(fd, F_GETFL);

		if (fl >= 0 && (fl & O_NONBLOCK))
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	if (ptd_disasm_new(&d.dis, NULL)) {
		fprintf(stderr, "ptdecode dap: out of memory\n");
		return 1;
	}
	while (!d.done && (rc = read_message(&body)) > 0) {
		enum json_tokener_error jerr;
		json_object *req = json_tokener_parse_verbose(body, &jerr);

		if (!req)
			respond_err(&d, NULL, "request is not JSON: %s",
				    json_tokener_error_desc(jerr));
		else
			dispatch(&d, req);
		json_object_put(req);
		free(body);
	}
	if (!d.done && rc < 0)
		fprintf(stderr, "ptdecode dap: broken message framing on stdin "
			"(no Content-Length header, or a body that ends early)\n");
	if (d.s)
		event(&d, "terminated", NULL);
	free_session(&d);
	bps_clear(&d.src);
	bps_clear(&d.fn);
	bps_clear(&d.ins);
	while (d.nmap--) {
		free(d.map_from[d.nmap]);
		free(d.map_to[d.nmap]);
	}
	free(d.map_from);
	free(d.map_to);
	ptd_disasm_free(d.dis);
	return d.done || rc == 0 ? 0 : 1;
}

#endif
