/* SPDX-License-Identifier: MIT */
#include "views.h"
#include "perfetto.h"
#include "writer.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 4096
#define NAME_LEN_EVENT 256
#define FCACHE_BITS 18
#define FCACHE_ARENA (64u << 20)

/* Formatted text of an instruction ("sym+off  disasm  # src") by address
 * and image version: the same pair is the same code, so the text is made
 * once (capstone and symbol lookups are the slow part of text output). */
struct fcache_ent {
	uint64_t ip;
	uint32_t image;
	uint32_t len;
	const char *text;
};

struct view {
	struct view_opts o;
	struct ptd_session *s;
	struct ptd_disasm *dis;
	struct ptd_event pend;      /* last instruction, for branches/calls */
	struct ptd_event bctx;      /* a branch line's context (branch_ctx) */
	int have_pend;
	int have_resume;
	struct ptd_event resume;    /* --branches: an overflow that says
				     * where the trace resumes, listed as a
				     * trace begin at its first instruction */
	int depth;
	int32_t depth_tid;
	struct fcache_ent *fc;      /* direct-mapped, 2^FCACHE_BITS */
	char *arena;
	size_t arena_used;
	struct writer w;            /* instruction lines, written in big pieces */
	struct perfetto *pf;        /* VIEW_PERFETTO */
	struct ptd_event *parked;   /* VIEW_PERFETTO: per thread, the branch
				     * pending when it was interrupted */
	size_t nparked, pcap;
	struct qdepth {             /* call depth of each queue's thread */
		int depth;
		int32_t tid;
		int have_pend;      /* its pending instruction, while */
		struct ptd_event pend;  /* another queue's events come */
		int have_resume;    /* resume, while another queue's */
		struct ptd_event resume;
	} *qd;
	size_t nqd, qdcap;
	long qd_cur;                /* queue whose depth is in depth, -1 */
};

struct view *view_new(const struct view_opts *o, struct ptd_session *s)
{
	struct view *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->o = *o;
	v->s = s;
	v->depth_tid = -2;
	v->qd_cur = -1;
	if (ptd_disasm_new(&v->dis, &(struct ptd_disasm_opts){
			.sz = sizeof(struct ptd_disasm_opts),
			.flags = o->att ? PTD_DISASM_ATT : 0 }) < 0) {
		free(v);
		return NULL;
	}
	if (writer_init(&v->w, o->out, o->writer_thread)) {
		ptd_disasm_free(v->dis);
		free(v);
		return NULL;
	}
	if (o->kind == VIEW_PERFETTO && !(v->pf = perfetto_new(o->out, s))) {
		view_free(v);
		return NULL;
	}
	return v;
}

/* Before writing to the FILE directly. */
static void out_flush(struct view *v)
{
	writer_flush(&v->w);
}

void view_free(struct view *v)
{
	if (!v)
		return;
	writer_fini(&v->w);
	perfetto_free(v->pf);
	free(v->parked);
	free(v->qd);
	free(v->fc);
	free(v->arena);
	ptd_disasm_free(v->dis);
	free(v);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Appends "0x" and v in hex at out; returns the length written. */
static size_t put_hex(char *out, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	int k = 60;
	size_t n = 0;

	out[n++] = '0';
	out[n++] = 'x';
	while (k > 0 && !((v >> k) & 0xf))
		k -= 4;
	for (; k >= 0; k -= 4)
		out[n++] = hex[(v >> k) & 0xf];
	return n;
}

static void sym_of(struct view *v, int pid, uint64_t addr, char *buf, size_t len)
{
	uint64_t off = 0;

	buf[0] = '\0';
	if (ptd_symbolize(v->s, pid, addr, buf, len, &off) == 0 && off) {
		size_t n = strlen(buf);

		if (n + 20 < len) {
			buf[n++] = '+';
			buf[n + put_hex(buf + n, off)] = '\0';
		}
	}
}

static void print_ctx(struct view *v, const struct ptd_event *ev)
{
	FILE *f = v->o.out;

	if (v->o.json) {
		fprintf(f, ",\"cpu\":%d,\"pid\":%d,\"tid\":%d", ev->cpu, ev->pid, ev->tid);
		if (ev->flags & PTD_EVF_TIME_VALID)
			fprintf(f, ",\"time\":%" PRIu64, ev->time);
		return;
	}
	fprintf(f, " [%03d] %d/%d", ev->cpu, ev->pid, ev->tid);
	if (ev->flags & PTD_EVF_TIME_VALID)
		fprintf(f, " %" PRIu64 ".%09" PRIu64, ev->time / 1000000000,
			ev->time % 1000000000);
}

/* Appends prefix and text to out (length n, capacity cap: always
 * terminated), text padded with spaces to width; returns the new length. */
static size_t put_field(char *out, size_t n, size_t cap, const char *prefix,
			const char *text, size_t width)
{
	size_t p = strlen(prefix), t = strlen(text);

	if (n + p + t + width + 1 > cap)
		return n;  /* cannot happen with the buffers used here */
	memcpy(out + n, prefix, p);
	memcpy(out + n + p, text, t);
	n += p + t;
	for (; t < width; t++)
		out[n++] = ' ';
	out[n] = '\0';
	return n;
}

/* "sym+off  disasm  # src" for an instruction (the text after its
 * address in --insn lines). */
static size_t insn_tail(struct view *v, const struct ptd_event *ev, char *out,
			size_t cap)
{
	char sym[256] = "", text[160] = "", src[512] = "";
	size_t n = 0;

	out[0] = '\0';   /* --no-sym --no-disasm: an empty tail */
	if (v->o.show_sym)
		sym_of(v, ev->pid, ev->ip, sym, sizeof(sym));
	if (v->o.show_disasm) {
		/* the decoder's own text when it has it (Intel syntax): one
		 * capstone pass per new instruction instead of two */
		if ((v->o.att || ptd_insn_text(v->s, ev, text, sizeof(text)) < 0) &&
		    ptd_disasm_text(v->dis, ev, text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "(bad)");
	}
	if (v->o.show_sym || v->o.show_src) {
		/* BPF and JIT lines are cheap (capture metadata): always;
		 * DWARF only when asked for */
		unsigned int line = 0;

		if ((v->o.show_src || ev->ip >= 0xffff800000000000ull) &&
		    ptd_source_line(v->s, ev->pid, ev->ip, src, sizeof(src) - 16, &line) == 0) {
			size_t l = strlen(src);

			snprintf(src + l, sizeof(src) - l, ":%u", line);
		} else {
			src[0] = '\0';
		}
	}
	/* "  sym (padded to 32)  disasm  # src", without printf: this runs
	 * once per distinct instruction, thousands of times in a real
	 * program's dump */
	if (v->o.show_sym)
		n = put_field(out, n, cap, "  ", sym[0] ? sym : "??", 32);
	if (v->o.show_disasm)
		n = put_field(out, n, cap, "  ", text, 0);
	if (src[0])
		n = put_field(out, n, cap, "  # ", src, 0);
	return n;
}

static const char *cached_tail(struct view *v, const struct ptd_event *ev,
			       uint32_t *len)
{
	struct fcache_ent *e;
	char buf[1024];
	size_t n;

	if (!v->fc) {
		if (!(v->fc = calloc(1u << FCACHE_BITS, sizeof(*v->fc))))
			return NULL;
		/* looked up (read) before written: see util_populate */
		util_populate(v->fc, (sizeof(*v->fc)) << FCACHE_BITS);
	}
	if (!v->arena && !(v->arena = malloc(FCACHE_ARENA)))
		return NULL;
	/* indexed by the address itself (the image only moves the slot):
	 * the instructions of a block, formatted one after the other, sit
	 * in neighbouring slots and share cache lines; a multiplicative hash
	 * scattered them, a cache miss per line */
	e = &v->fc[(ev->ip ^ ((uint64_t)ev->image << 12)) & ((1u << FCACHE_BITS) - 1)];
	if (e->text && e->ip == ev->ip && e->image == ev->image) {
		*len = e->len;
		return e->text;
	}
	n = insn_tail(v, ev, buf, sizeof(buf));
	if (v->arena_used + n > FCACHE_ARENA) {
		memset(v->fc, 0, (1u << FCACHE_BITS) * sizeof(*v->fc));
		v->arena_used = 0;
	}
	memcpy(v->arena + v->arena_used, buf, n);
	e->ip = ev->ip;
	e->image = ev->image;
	e->len = (uint32_t)n;
	e->text = v->arena + v->arena_used;
	v->arena_used += n;
	*len = e->len;
	return e->text;
}

static void print_insn(struct view *v, const struct ptd_event *ev)
{
	FILE *f = v->o.out;
	char tail[1024];
	const char *t = NULL;
	uint32_t tlen = 0;

	if (!v->o.json && !v->o.show_time) {
		/* the common case, without printf: 0xADDR + cached tail */
		char *o;

		if (ev->image)
			t = cached_tail(v, ev, &tlen);
		if (!t) {
			tlen = (uint32_t)insn_tail(v, ev, tail, sizeof(tail));
			t = tail;
		}
		writer_reserve(&v->w, tlen + 24);
		o = v->w.buf + v->w.len;
		o += put_hex(o, ev->ip);
		memcpy(o, t, tlen);
		o += tlen;
		*o++ = '\n';
		v->w.len = (size_t)(o - v->w.buf);
		return;
	}
	out_flush(v);
	insn_tail(v, ev, tail, sizeof(tail));
	if (v->o.json) {
		char sym[256] = "", text[160] = "";

		if (v->o.show_sym)
			sym_of(v, ev->pid, ev->ip, sym, sizeof(sym));
		if (v->o.show_disasm &&
		    ptd_disasm_text(v->dis, ev, text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "(bad)");
		fprintf(f, "{\"type\":\"insn\",\"ip\":\"%#" PRIx64 "\",\"size\":%u",
			ev->ip, ev->size);
		if (v->o.show_sym && sym[0]) {
			fputs(",\"sym\":", f);
			json_str(f, sym);
		}
		if (v->o.show_disasm) {
			fputs(",\"asm\":", f);
			json_str(f, text);
		}
		{
			const char *hashp = strstr(tail, "  # ");

			if (hashp) {
				fputs(",\"src\":", f);
				json_str(f, hashp + 4);
			}
		}
		print_ctx(v, ev);   /* every JSON line says where and when */
		fputs("}\n", f);
		return;
	}
	fprintf(f, "%#" PRIx64, ev->ip);
	print_ctx(v, ev);
	fputs(tail, f);
	fputc('\n', f);
}

/* The execution mode an exec-mode event names. */
static const char *mode_name(uint8_t mode)
{
	static const char *const names[] = {
		[PTD_MODE_16] = "16", [PTD_MODE_32] = "32", [PTD_MODE_64] = "64",
		[PTD_MODE_ARM32] = "arm32", [PTD_MODE_THUMB] = "thumb",
		[PTD_MODE_A64] = "a64",
	};

	return mode < sizeof(names) / sizeof(names[0]) && names[mode] ?
	       names[mode] : "unknown";
}

/* Non-instruction events: a line that never starts with "0x". */
static void print_event(struct view *v, const struct ptd_event *ev)
{
	FILE *f = v->o.out;

	out_flush(v);
	const char *name = ptd_event_kind_name(ev->kind);

	if (v->o.json) {
		fprintf(f, "{\"type\":\"%s\"", name);
		if (!(ev->flags & PTD_EVF_IP_SUPPRESSED) && ev->ip)
			fprintf(f, ",\"ip\":\"%#" PRIx64 "\"", ev->ip);
		if (ev->addr)
			fprintf(f, ",\"addr\":\"%#" PRIx64 "\"", ev->addr);
		if (ev->kind == PTD_EV_EXEC_MODE)
			fprintf(f, ",\"mode\":\"%s\"", mode_name(ev->mode));
		if (ev->kind == PTD_EV_ERROR || ev->kind == PTD_EV_GAP)
			fprintf(f, ",\"offset\":%" PRIu64, ev->offset);
		if (ev->flags & PTD_EVF_RESYNCED)
			fputs(",\"resynced\":true", f);
		if (ev->kind == PTD_EV_ERROR)
			fprintf(f, ",\"error\":%d", ev->error);
		if (ev->msg) {
			fputs(",\"msg\":", f);
			json_str(f, ev->msg);
		}
		print_ctx(v, ev);
		fputs("}\n", f);
		return;
	}
	fprintf(f, "[%s", name);
	switch (ev->kind) {
	case PTD_EV_ERROR:
	case PTD_EV_GAP:
		fprintf(f, " offset=%#" PRIx64 " ip=%#" PRIx64, ev->offset, ev->ip);
		if (ev->kind == PTD_EV_ERROR && (ev->flags & PTD_EVF_RESYNCED))
			fprintf(f, " resync=%#" PRIx64, ev->addr);
		break;
	case PTD_EV_SWITCH:
		fprintf(f, " pid=%d tid=%d", ev->pid, ev->tid);
		break;
	case PTD_EV_PAGING:
		fprintf(f, " cr3=%#" PRIx64, ev->addr);
		break;
	case PTD_EV_ASYNC:
		fprintf(f, " from=%#" PRIx64 " to=%#" PRIx64, ev->ip, ev->addr);
		break;
	case PTD_EV_EXEC_MODE:
		if (!(ev->flags & PTD_EVF_IP_SUPPRESSED) && ev->ip)
			fprintf(f, " ip=%#" PRIx64, ev->ip);
		fprintf(f, " mode=%s", mode_name(ev->mode));
		break;
	default:
		if (!(ev->flags & PTD_EVF_IP_SUPPRESSED) && ev->ip)
			fprintf(f, " ip=%#" PRIx64, ev->ip);
		break;
	}
	if (ev->flags & PTD_EVF_TIME_VALID)
		fprintf(f, " time=%" PRIu64 ".%09" PRIu64, ev->time / 1000000000,
			ev->time % 1000000000);
	if (ev->msg)
		fprintf(f, ": %s", ev->msg);
	fputs("]\n", f);
}

/* Kind of branch the pending instruction made towards `to` (0 = none). */
static const char *branch_kind(struct view *v, const struct ptd_event *p,
			       uint64_t to)
{
	struct ptd_branch_info bi;

	switch (p->iclass) {
	case PTD_IC_COND_JUMP:
		return to != p->ip + p->size ? "cond" : NULL;
	case PTD_IC_RETURN:
		return "return";
	case PTD_IC_FAR_CALL:
		return "syscall";
	case PTD_IC_FAR_RETURN:
		return "sysret";
	case PTD_IC_FAR_JUMP:
		return "far-jump";
	case PTD_IC_CALL:
	case PTD_IC_JUMP:
		if (ptd_disasm_branch(v->dis, p, &bi) == 0 && bi.indirect)
			return p->iclass == PTD_IC_CALL ? "indirect-call" : "indirect";
		return p->iclass == PTD_IC_CALL ? "call" : "jump";
	default:
		return NULL;
	}
}

/* An overflow event that says where the trace resumes. */
static int overflow_resumes(const struct ptd_event *ev)
{
	return ev->kind == PTD_EV_OVERFLOW && ev->ip && !(ev->flags & PTD_EVF_IP_SUPPRESSED);
}

/* Whether the pending instruction can have gone to `to`, where the
 * trace resumes after an overflow: a direct branch only to its target
 * or the next instruction; otherwise packets were lost in between and
 * where it went is unknown. */
static int overflow_target(struct view *v, const struct ptd_event *p, uint64_t to)
{
	struct ptd_branch_info bi;

	if (to == p->ip + p->size)
		return 1;
	if (ptd_disasm_branch(v->dis, p, &bi) < 0)
		return 0;
	return !bi.has_target || bi.target == to;
}

/* Where a branch line is said to be: the thread and CPU of what came
 * after it, the time of the branch (perf's branch samples), which a
 * timing packet before its target may not have. */
static const struct ptd_event *branch_ctx(struct view *v, const struct ptd_event *p,
					  const struct ptd_event *ev)
{
	if (!(p->flags & PTD_EVF_TIME_VALID) || !(ev->flags & PTD_EVF_TIME_VALID) ||
	    p->time == ev->time)
		return ev;
	v->bctx = *ev;
	v->bctx.time = p->time;
	return &v->bctx;
}

static void print_branch(struct view *v, const char *kind, uint64_t from,
			 uint64_t to, const struct ptd_event *ev)
{
	FILE *f = v->o.out;
	char fs[256] = "", ts[256] = "";

	if (v->o.show_sym) {
		if (from)
			sym_of(v, ev->pid, from, fs, sizeof(fs));
		if (to)
			sym_of(v, ev->pid, to, ts, sizeof(ts));
	}
	if (v->o.json) {
		fprintf(f, "{\"type\":\"branch\",\"kind\":\"%s\",\"from\":\"%#" PRIx64
			"\",\"to\":\"%#" PRIx64 "\"", kind, from, to);
		if (fs[0]) {
			fputs(",\"from_sym\":", f);
			json_str(f, fs);
		}
		if (ts[0]) {
			fputs(",\"to_sym\":", f);
			json_str(f, ts);
		}
		print_ctx(v, ev);
		fputs("}\n", f);
		return;
	}
	fprintf(f, "%#" PRIx64 " -> %#" PRIx64 " %-13s", from, to, kind);
	if (v->o.show_time)
		print_ctx(v, ev);
	if (v->o.show_sym)
		fprintf(f, "  %s -> %s", fs[0] ? fs : "??", ts[0] ? ts : "??");
	fputc('\n', f);
}

static void print_call(struct view *v, const char *what, uint64_t to,
		       const struct ptd_event *ev)
{
	FILE *f = v->o.out;
	char ts[256] = "";

	sym_of(v, ev->pid, to, ts, sizeof(ts));
	if (v->o.json) {
		fprintf(f, "{\"type\":\"%s\",\"depth\":%d,\"to\":\"%#" PRIx64 "\"",
			what, v->depth, to);
		if (ts[0]) {
			fputs(",\"sym\":", f);
			json_str(f, ts);
		}
		print_ctx(v, ev);
		fputs("}\n", f);
		return;
	}
	if (ev->flags & PTD_EVF_TIME_VALID)
		fprintf(f, "%" PRIu64 ".%09" PRIu64 " ", ev->time / 1000000000,
			ev->time % 1000000000);
	fprintf(f, "[%03d] %d/%d %*s%s %s (%#" PRIx64 ")\n", ev->cpu, ev->pid,
		ev->tid, 2 * (v->depth < 64 ? v->depth : 64), "",
		what[0] == 'c' ? "->" : what[0] == 'r' ? "<-" : "=>",
		ts[0] ? ts : "??", to);
}

/* Perfetto view: calls begin slices named after their target, returns
 * end them. */
static void perfetto_flow(struct view *v, const char *kind, uint64_t to,
			  const struct ptd_event *ev)
{
	char name[256];

	if (!strcmp(kind, "call") || !strcmp(kind, "indirect-call")) {
		sym_of(v, ev->pid, to, name, sizeof(name));
		if (!name[0])
			name[put_hex(name, to)] = '\0';
		perfetto_call(v->pf, name);
	} else if (!strcmp(kind, "return")) {
		perfetto_return(v->pf);
	}
}

/* Perfetto view: an instant named after the event; after an error, a
 * gap or an overflow the call stack is unknown, so the open slices end. */
static void perfetto_loss(struct view *v, const struct ptd_event *ev)
{
	char name[NAME_LEN_EVENT];

	snprintf(name, sizeof(name), "%s%s%s", ptd_event_kind_name(ev->kind),
		 ev->msg ? ": " : "", ev->msg ? ev->msg : "");
	if (ev->kind != PTD_EV_LOST)
		perfetto_break(v->pf);
	perfetto_instant(v->pf, name);
}

/* Keeps the pending instruction of an interrupted thread until that
 * thread runs again (other threads may run before). */
static void park(struct view *v)
{
	size_t i;

	for (i = 0; i < v->nparked && v->parked[i].tid != v->pend.tid; i++)
		;
	if (i == v->nparked) {
		if (util_grow((void **)&v->parked, &v->pcap, v->nparked + 1,
			      sizeof(*v->parked)))
			return;  /* out of memory: this branch is not drawn */
		v->nparked++;
	}
	v->parked[i] = v->pend;
}

static void unpark(struct view *v, int32_t tid)
{
	for (size_t i = 0; i < v->nparked; i++)
		if (v->parked[i].tid == tid) {
			v->pend = v->parked[i];
			v->have_pend = 1;
			v->parked[i] = v->parked[--v->nparked];
			return;
		}
}

/* Target of a direct call, or 0. */
static uint64_t direct_call_target(struct view *v, const struct ptd_event *p)
{
	struct ptd_branch_info bi;

	if (p->iclass != PTD_IC_CALL || ptd_disasm_branch(v->dis, p, &bi) < 0 ||
	    !bi.has_target)
		return 0;
	return bi.target;
}

/* Perfetto view: thread tid stops running (its slices end next).  A
 * direct call it made last, pending or interrupted, begins its slice
 * now, as perf reports it: its target is in the instruction.  Other
 * branches wait for the IP execution continues at: an indirect one
 * pending here goes with the thread that runs next (the decoder puts a
 * switch between a branch and its target when the timing packets cannot
 * tell which came first, and perf then reports it there too). */
static void settle_run(struct view *v, int32_t tid)
{
	uint64_t to;

	if (v->have_pend && (to = direct_call_target(v, &v->pend))) {
		perfetto_flow(v, "call", to, &v->pend);
		v->have_pend = 0;
	}
	for (size_t i = 0; i < v->nparked; i++)
		if (v->parked[i].tid == tid) {
			if ((to = direct_call_target(v, &v->parked[i]))) {
				perfetto_flow(v, "call", to, &v->parked[i]);
				v->parked[i] = v->parked[--v->nparked];
			}
			break;
		}
}

/* Call depth follows each queue (CPU) on its own, so that a timeline
 * merged from several shows each queue's calls as it alone would; so
 * does the pending instruction: the merge hands out a branch whose
 * target came with a later time at that time (queuemerge.h), after
 * other queues' events. */
static void queue_depth(struct view *v, uint32_t q)
{
	if (v->qd_cur == (long)q)
		return;
	if (q >= v->nqd) {
		if (util_grow((void **)&v->qd, &v->qdcap, (size_t)q + 1, sizeof(*v->qd))) {
			v->have_pend = 0;   /* out of memory: depth carries over, */
			return;             /* the branch is not listed */
		}
		for (; v->nqd <= q; v->nqd++) {
			v->qd[v->nqd].depth = 0;
			v->qd[v->nqd].tid = -2;
			v->qd[v->nqd].have_pend = 0;
			v->qd[v->nqd].have_resume = 0;
		}
	}
	if (v->qd_cur >= 0) {
		v->qd[v->qd_cur].depth = v->depth;
		v->qd[v->qd_cur].tid = v->depth_tid;
		v->qd[v->qd_cur].have_pend = v->have_pend;
		v->qd[v->qd_cur].have_resume = v->have_resume;
		if (v->have_resume)
			v->qd[v->qd_cur].resume = v->resume;
		if (v->have_pend)
			v->qd[v->qd_cur].pend = v->pend;
	}
	v->depth = v->qd[q].depth;
	v->depth_tid = v->qd[q].tid;
	v->have_pend = v->qd[q].have_pend;
	v->have_resume = v->qd[q].have_resume;
	if (v->have_resume)
		v->resume = v->qd[q].resume;
	if (v->have_pend)
		v->pend = v->qd[q].pend;
	v->qd_cur = (long)q;
}

/* Events that leave the flow where it was (flow_step returns early for
 * them): a trace begin after an overflow waits past them. */
static int resume_waits(const struct ptd_event *ev)
{
	switch (ev->kind) {
	case PTD_EV_SWITCH:
	case PTD_EV_EXEC_MODE:
	case PTD_EV_TIME:
		return 1;
	case PTD_EV_PAGING:
	case PTD_EV_TSX:
		return !!(ev->flags & PTD_EVF_STATUS);
	default:
		return 0;
	}
}

/* Branch and call views: look at the pending instruction once we know
 * what came after it. */
static void flow_step(struct view *v, const struct ptd_event *ev)
{
	const struct ptd_event *p = &v->pend;
	const char *kind = NULL;
	uint64_t to = 0;

	if (v->pf) {
		if (perfetto_starts_run(v->pf, ev))
			settle_run(v, v->depth_tid);
		perfetto_event(v->pf, ev);
	}
	queue_depth(v, ev->queue);
	if (v->nparked && !v->have_pend &&
	    (ev->kind == PTD_EV_ENABLED || ev->kind == PTD_EV_INSN))
		unpark(v, ev->tid);
	if (ev->tid != v->depth_tid) {
		/* call depth is per thread; a switch starts a fresh tree */
		v->depth = 0;
		v->depth_tid = ev->tid;
	}
	if (v->have_resume && !resume_waits(ev)) {
		if (ev->kind == PTD_EV_INSN)
			print_branch(v, "trace-begin", 0, v->resume.ip, &v->resume);
		v->have_resume = 0;
	}
	if (v->have_pend) {
		if (ev->kind == PTD_EV_INSN) {
			to = ev->ip;
			kind = branch_kind(v, p, to);
		} else if (ev->kind == PTD_EV_ENABLED && ev->ip && !v->pf) {
			/* kept over a disable that did not say where (below) */
			to = ev->ip;
			kind = branch_kind(v, p, to);
		} else if (ev->kind == PTD_EV_DISABLED && p->iclass == PTD_IC_FAR_CALL) {
			kind = "syscall";
		} else if ((ev->kind == PTD_EV_ASYNC || ev->kind == PTD_EV_DISABLED ||
			    ev->kind == PTD_EV_GAP) &&
			   !(ev->flags & PTD_EVF_IP_SUPPRESSED) && ev->ip) {
			/* the branch retired, then tracing stopped, an
			 * interrupt came or trace was lost (a gap): ev->ip is
			 * where execution went on */
			to = ev->ip;
			kind = branch_kind(v, p, to);
		} else if (overflow_resumes(ev) && overflow_target(v, p, ev->ip)) {
			/* the packets before the OVF gave the branch's
			 * outcome; the trace resumes where it went */
			to = ev->ip;
			kind = branch_kind(v, p, to);
		}
		if (kind) {
			if (v->o.kind == VIEW_BRANCHES)
				print_branch(v, kind, p->ip, to, branch_ctx(v, p, ev));
			else if (v->pf)
				perfetto_flow(v, kind, to, ev);
			else if (!strcmp(kind, "call") || !strcmp(kind, "indirect-call")) {
				print_call(v, "call", to, branch_ctx(v, p, ev));
				if (v->depth < MAX_DEPTH)
					v->depth++;
			} else if (!strcmp(kind, "return")) {
				if (v->depth > 0)
					v->depth--;
			}
		}
	}
	switch (ev->kind) {
	case PTD_EV_INSN:
		v->pend = *ev;
		v->have_pend = 1;
		return;
	case PTD_EV_ASYNC:
		if (v->o.kind == VIEW_BRANCHES)
			print_branch(v, "interrupt", ev->ip, ev->addr, ev);
		break;
	case PTD_EV_DISABLED:
		if (v->o.kind == VIEW_BRANCHES && !(v->have_pend &&
						    p->iclass == PTD_IC_FAR_CALL))
			print_branch(v, "trace-end", ev->ip, 0, ev);
		if (v->have_pend && !kind &&
		    ((ev->flags & PTD_EVF_IP_SUPPRESSED) || !ev->ip))
			park(v);  /* an interrupt: where the last instruction
				   * went shows when its thread runs again (a
				   * branch view lists it after trace-begin) */
		break;
	case PTD_EV_ENABLED:
		/* Perfetto view: a branch kept over a disable that did not
		 * say where goes to the instruction tracing resumes at: its
		 * slice begins or ends at that instruction's time (the
		 * decoder may time it after the enable) */
		if (v->pf && v->have_pend && ev->ip)
			return;
		if (v->o.kind == VIEW_BRANCHES)
			print_branch(v, "trace-begin", 0, ev->ip, ev);
		else if (!v->pf && !(ev->flags & PTD_EVF_STATUS))
			print_call(v, "enter", ev->ip, ev);
		break;
	case PTD_EV_SWITCH:
		/* the decoder puts a switch between a branch and its target
		 * when the timing packets cannot order them: the pending
		 * branch goes to the IP the next thread runs at, where perf
		 * reports it too */
		return;
	case PTD_EV_PAGING:
	case PTD_EV_TSX:
		/* libipt reports the PIP and the transaction state of each
		 * PSB+ as status updates (in a guest every PSB+ has a PIP),
		 * which may fall between a branch and its target: the flow
		 * goes on */
		if (ev->flags & PTD_EVF_STATUS)
			return;
		break;
	case PTD_EV_EXEC_MODE:
	case PTD_EV_TIME:
		/* a MODE.Exec takes effect at a branch's target, after the
		 * branch: the flow goes on */
		return;
	case PTD_EV_ERROR:
	case PTD_EV_GAP:
	case PTD_EV_LOST:
	case PTD_EV_OVERFLOW:
		if (v->pf)
			perfetto_loss(v, ev);
		else
			print_event(v, ev);
		/* an overflow that says where the trace resumes: perf
		 * begins the trace there again, at its time, in the
		 * timeline's place of the first instruction (queuemerge.h) */
		if (v->o.kind == VIEW_BRANCHES && overflow_resumes(ev)) {
			v->resume = *ev;
			v->have_resume = 1;
		}
		break;
	default:
		break;
	}
	v->have_pend = 0;
}

void view_event(struct view *v, const struct ptd_event *ev)
{
	switch (v->o.kind) {
	case VIEW_INSN:
		if (ev->kind == PTD_EV_INSN)
			print_insn(v, ev);
		else if (ev->kind != PTD_EV_TIME)
			print_event(v, ev);
		break;
	case VIEW_BRANCHES:
	case VIEW_CALLS:
	case VIEW_PERFETTO:
		flow_step(v, ev);
		break;
	default:
		break;
	}
}

void view_finish(struct view *v)
{
	if (v->pf)
		perfetto_finish(v->pf);  /* a failed write leaves ferror() set */
	out_flush(v);
	fflush(v->o.out);
}

/* IA32_RTIT_CTL.ADDRn_CFG's meaning. */
static const char *addr_cfg_name(uint8_t cfg)
{
	return cfg == 1 ? "filter" : cfg == 2 ? "stop" : "reserved";
}

void view_print_stats(FILE *out, int json, const struct ptd_stats *st,
		      unsigned long long events)
{
	if (json) {
		fprintf(out, "{\"type\":\"stats\",\"instructions\":%" PRIu64
			",\"errors\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"lost\":%" PRIu64
			",\"overflows\":%" PRIu64 ",\"events\":%llu,\"trace_bytes\":%"
			PRIu64 ",\"queues\":%" PRIu64 ",\"aux_truncated\":%" PRIu64
			",\"lost_records\":%" PRIu64 ",\"sideband_records\":%" PRIu64
			",\"cpu_unknown\":%" PRIu64 ",\"unsupported_packets\":%" PRIu64
			",\"resyncs\":%" PRIu64,
			st->instructions, st->errors, st->gaps, st->lost, st->overflows,
			events, st->trace_bytes, st->queues, st->aux_truncated,
			st->lost_records, st->sideband_records, st->cpu_unknown,
			st->unsupported_packets, st->resyncs);
		if (st->snapshots)
			fprintf(out, ",\"snapshots\":%" PRIu64 ",\"snapshot_overlap_bytes\":%"
				PRIu64 ",\"snapshot_gaps\":%" PRIu64, st->snapshots,
				st->snapshot_overlap_bytes, st->snapshot_gaps);
		if (st->merged_queues || st->clock_fallback_queues)
			fprintf(out, ",\"clock_fallback_queues\":%" PRIu64
				",\"clock_fallback_events\":%" PRIu64,
				st->clock_fallback_queues, st->clock_fallback_events);
		if (st->pieces_ahead)
			fprintf(out, ",\"pieces_ahead\":%" PRIu64 ",\"pieces_redone\":%"
				PRIu64, st->pieces_ahead, st->pieces_redone);
		fputs(",\"address_filters\":[", out);
		for (int n = 0, first = 1; n < 4; n++) {
			if (!st->addr_cfg[n])
				continue;
			fprintf(out, "%s{\"n\":%d,\"cfg\":\"%s\",\"a\":\"%#" PRIx64
				"\",\"b\":\"%#" PRIx64 "\"}", first ? "" : ",", n,
				addr_cfg_name(st->addr_cfg[n]), st->addr_a[n], st->addr_b[n]);
			first = 0;
		}
		fputs("]}\n", out);
		return;
	}
	fprintf(out, "instructions: %" PRIu64 "\n", st->instructions);
	fprintf(out, "errors: %" PRIu64 "\n", st->errors);
	fprintf(out, "gaps: %" PRIu64 "\n", st->gaps);
	fprintf(out, "lost: %" PRIu64 "\n", st->lost);
	fprintf(out, "overflows: %" PRIu64 "\n", st->overflows);
	fprintf(out, "events: %llu\n", events);
	fprintf(out, "trace bytes: %" PRIu64 "\n", st->trace_bytes);
	fprintf(out, "queues: %" PRIu64 "\n", st->queues);
	fprintf(out, "aux truncated: %" PRIu64 "\n", st->aux_truncated);
	fprintf(out, "lost records: %" PRIu64 "\n", st->lost_records);
	fprintf(out, "sideband records: %" PRIu64 "\n", st->sideband_records);
	if (st->segments)
		fprintf(out, "segments: %" PRIu64 " (%" PRIu64 " decoded by libipt)\n",
			st->segments, st->segments_libipt);
	if (st->pieces_ahead)
		fprintf(out, "pieces decoded ahead: %" PRIu64 " (%" PRIu64 " redone)\n",
			st->pieces_ahead, st->pieces_redone);
	if (st->cpu_unknown)
		fprintf(out, "cpu unknown to libipt: %" PRIu64 "\n", st->cpu_unknown);
	if (st->unsupported_packets)
		fprintf(out, "packets unsupported by libipt: %" PRIu64 "\n",
			st->unsupported_packets);
	if (st->resyncs)
		fprintf(out, "resyncs after errors: %" PRIu64 "\n", st->resyncs);
	if (st->snapshots)
		fprintf(out, "snapshots: %" PRIu64 "\nsnapshot overlap bytes: %" PRIu64
			"\nsnapshot gaps: %" PRIu64 "\n", st->snapshots,
			st->snapshot_overlap_bytes, st->snapshot_gaps);
	if (st->merged_queues || st->clock_fallback_queues)
		fprintf(out, "clock fallback queues: %" PRIu64
			"\nclock fallback events: %" PRIu64 "\n",
			st->clock_fallback_queues, st->clock_fallback_events);
	for (int n = 0; n < 4; n++)
		if (st->addr_cfg[n])
			fprintf(out, "address filter %d: %s [%#" PRIx64 ", %#" PRIx64 "]\n",
				n, addr_cfg_name(st->addr_cfg[n]), st->addr_a[n],
				st->addr_b[n]);
}
