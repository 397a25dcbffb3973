/* SPDX-License-Identifier: MIT */
/*
 * session - the public API: opens an input, builds the image store and the
 * sideband timeline from it, creates the backend, and hands out events.
 */
#include "session.h"
#include "coresight.h"
#include "fastpt.h"
#include "imgstore.h"
#include "intelpt.h"
#include "perfdata.h"
#include "rawimage.h"
#include "sideband.h"
#include "snapshot.h"
#include "symtab.h"
#include "dyntext.h"
#include "srcline.h"
#include <dirent.h>
#include "textstore.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUX_TYPE_INTEL_PT 1
#define AUX_TYPE_CS_ETM 3

/* One AUXTRACE record's payload. */
struct aux_chunk {
	uint32_t idx;
	int32_t cpu, tid;
	uint64_t offset;        /* position in the queue's stream */
	uint64_t file_offset, size;
	size_t seq;
};

struct session_queue {
	uint32_t idx;
	int32_t cpu, tid;
	struct intelpt_piece *pieces;  /* the AUXTRACE payloads, in order,
					* pointing into the file mapping */
	size_t npieces;
	uint8_t *owned;         /* the pieces made contiguous, on demand */
	const uint8_t *data;    /* contiguous bytes when known */
	size_t size;
};

struct ptd_session {
	struct ptd_open_opts opts;
	char errmsg[1024];
	char **warnings;
	size_t nwarnings, wcap;

	struct perfdata *pd;
	struct textstore *ts;
	struct imgstore *st;
	struct sideband *sb;
	struct backend *be;

	struct aux_chunk *chunks;
	size_t nchunks, ccap;
	struct session_queue *queues;
	size_t nqueues;

	uint32_t aux_type;
	uint64_t *aux_priv;
	size_t aux_npriv;
	int have_aux_info;

	struct util_map raw_trace;
	struct util_map file_map;    /* the whole perf.data, for AUX bytes */
	struct coresight_chunk *cs_chunks;
	struct hw_id { int32_t cpu; uint8_t trace_id; } *hw_ids;
	size_t nhw_ids, hwcap;
	int cs_raw_format;       /* AUX records said TRBE (unformatted) */

	/* symbols: one table per ELF file, kallsyms, sideband-learnt names */
	struct symfile {
		char *path;
		struct symtab *tab;      /* NULL: no ELF file */
		char *debug;             /* its separate debug file, or NULL */
	} *symfiles;
	size_t nsymfiles, symcap;
	struct symtab *ksyms;
	struct symtab *sbsyms;
	uint64_t cur_time;
	struct dyntext *dt;          /* BPF / JIT names, lines, jitdump code */
	struct srcline *src;         /* DWARF lines of ELF files */
	char **jitdumps;             /* jit-PID.dump files named by MMAPs */
	size_t njitdumps, jcap;
	int fast;                    /* the backend is fastpt */
	int32_t last_tid, last_pid;  /* tid -> pid cache for ptd_next */
	struct ptd_event *blk_insn;  /* ptd_next_blocks over event backends */
	struct ptd_block *blk;
	struct bidcache { char *path; char hex[41]; } *bidcache;
	size_t nbidcache, bidcap;
	struct ptd_stats stats;
	int ended;
	char *dir;              /* capture directory, if any */
};

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

int session_warn(struct ptd_session *s, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (util_grow((void **)&s->warnings, &s->wcap, s->nwarnings + 1, sizeof(char *)))
		return PTD_ERR_NOMEM;
	s->warnings[s->nwarnings] = strdup(buf);
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

struct imgstore *session_imgstore(struct ptd_session *s)
{
	return s->st;
}

/* ------------------------------------------------------------------ */
/* perf.data                                                           */

static int is_kernel_addr(uint64_t a)
{
	return a >= 0xffff800000000000ull;
}

static void hex(const uint8_t *id, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = '\0';
}

/* Build ids as perf records them may be zero-padded to 20 bytes (a 16-byte
 * id shows as 32 hex digits + 8 zeros): equal when one is the other plus
 * trailing zeros. */
static int bid_equal(const char *a, const char *b)
{
	while (*a && *b && *a == *b)
		a++, b++;
	if (*a && *b)
		return 0;
	for (const char *r = *a ? a : b; *r; r++)
		if (*r != '0')
			return 0;
	return 1;
}

/* Build id of a file on this machine, cached ("" when it has none). */
static const char *file_build_id(struct ptd_session *s, const char *path)
{
	uint8_t id[64];
	size_t n = 0;

	for (size_t i = 0; i < s->nbidcache; i++)
		if (!strcmp(s->bidcache[i].path, path))
			return s->bidcache[i].hex;
	if (util_grow((void **)&s->bidcache, &s->bidcap, s->nbidcache + 1,
		      sizeof(*s->bidcache)))
		return "";
	s->bidcache[s->nbidcache].path = strdup(path);
	if (!s->bidcache[s->nbidcache].path)
		return "";
	s->bidcache[s->nbidcache].hex[0] = '\0';
	if (symtab_build_id(path, NULL, 0, id, sizeof(id), &n, NULL, 0) == 0 &&
	    n && n <= 20)
		hex(id, n, s->bidcache[s->nbidcache].hex);
	return s->bidcache[s->nbidcache++].hex;
}

/* Finds the file a MMAP record names: the sysroot, the search path (by
 * name, then by build id), the build-id caches, then the path itself.  A
 * candidate whose build id differs from the recorded one is not used: its
 * code is not what ran.  Returns a malloc'd path, or NULL with the reason
 * in why. */
static char *resolve_file(struct ptd_session *s, const char *path,
			  const char *want_bid, char *why, size_t whylen)
{
	char buf[4096], mism[4096] = "";
	const char *cand[80];
	char cbuf[20][4096];
	size_t n = 0;
	struct stat sb;
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (s->opts.sysroot && path[0] == '/') {
		snprintf(cbuf[n], sizeof(cbuf[n]), "%s%s", s->opts.sysroot, path);
		cand[n] = cbuf[n];
		n++;
	}
	for (const char *const *d = s->opts.search_path; d && *d && n < 16; d++) {
		snprintf(cbuf[n], sizeof(cbuf[n]), "%s/%s", *d, base);
		cand[n] = cbuf[n];
		n++;
	}
	if (want_bid && *want_bid &&
	    symtab_find_by_build_id(s->opts.search_path, want_bid, 0, cbuf[n],
				    sizeof(cbuf[n])) == 0) {
		cand[n] = cbuf[n];
		n++;
	}
	if (!s->opts.sysroot)
		cand[n++] = path;
	for (size_t i = 0; i < n; i++) {
		const char *bid;

		if (stat(cand[i], &sb) || !S_ISREG(sb.st_mode))
			continue;
		bid = want_bid && *want_bid ? file_build_id(s, cand[i]) : "";
		if (want_bid && *want_bid && !bid[0])
			session_warn(s, "%s has no build id, so it cannot be checked "
				     "against the recorded %s: using it anyway",
				     cand[i], want_bid);
		if (bid[0] && !bid_equal(bid, want_bid)) {
			if (!mism[0])
				snprintf(mism, sizeof(mism), "%s has build id %s, "
					 "the trace recorded %s", cand[i], bid, want_bid);
			continue;
		}
		return strdup(cand[i]);
	}
	if (mism[0])
		snprintf(why, whylen, "build id mismatch: %s; give the right "
			 "file with --search-path or --sysroot", mism);
	else
		snprintf(buf, sizeof(buf), "file %s not found%s%s", n ? cand[0] : path,
			 s->opts.sysroot || s->opts.search_path ? " (also searched "
			 "--sysroot/--search-path)" : "",
			 "; give it with --sysroot or --search-path");
	if (!mism[0])
		snprintf(why, whylen, "%.1000s", buf);
	return NULL;
}

/* Recorded build id for a file: from the MMAP2 record or the BUILD_ID
 * feature. */
static void recorded_build_id(struct ptd_session *s, const struct perfdata_mmap *m,
			      char *out)
{
	const struct perfdata_info *info = perfdata_get_info(s->pd);

	out[0] = '\0';
	if (m->has_build_id && m->build_id_size && m->build_id_size <= 20) {
		hex(m->build_id, m->build_id_size, out);
		return;
	}
	for (size_t i = 0; info && i < info->nbuild_ids; i++)
		if (info->build_ids[i].filename &&
		    !strcmp(info->build_ids[i].filename, m->filename) &&
		    info->build_ids[i].size && info->build_ids[i].size <= 20) {
			hex(info->build_ids[i].id, info->build_ids[i].size, out);
			return;
		}
}

/* JIT agents (perf's jitdump interface) mmap their jit-PID.dump with
 * PROT_EXEC so that the trace names it. */
static int is_jitdump_name(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	return !strncmp(b, "jit-", 4) && n > 9 && !strcmp(b + n - 5, ".dump");
}

static int note_jitdump(struct ptd_session *s, const char *path)
{
	for (size_t i = 0; i < s->njitdumps; i++)
		if (!strcmp(s->jitdumps[i], path))
			return 0;
	if (util_grow((void **)&s->jitdumps, &s->jcap, s->njitdumps + 1, sizeof(char *)) ||
	    !(s->jitdumps[s->njitdumps] = strdup(path)))
		return PTD_ERR_NOMEM;
	s->njitdumps++;
	return 0;
}

static int add_mmap(struct ptd_session *s, const struct perfdata_record *r)
{
	struct perfdata_mmap m;
	uint64_t t = r->sid.has_time ? r->sid.time : 0;
	int32_t pid;
	char *file, bid[41], why[1024];
	int rc;

	if (perfdata_parse_mmap(r, &m))
		return session_warn(s, "malformed MMAP record at offset %#" PRIx64
				    ": skipped", r->file_offset);
	if (r->type == PD_RECORD_MMAP2 && !(m.prot & PROT_EXEC))
		return 0;
	pid = (int32_t)m.pid;
	if (is_kernel_addr(m.addr) || pid == -1 ||
	    (r->misc & PD_MISC_CPUMODE_MASK) == PD_MISC_KERNEL)
		pid = IMGSTORE_KERNEL;
	sideband_thread(s->sb, (int32_t)m.pid, (int32_t)m.tid);
	/* A new mapping replaces whatever was mapped there before. */
	imgstore_end(s->st, pid, m.addr, m.len, t);
	if (m.filename[0] != '/') {
		/* [vdso], //anon, [kernel.kallsyms]: bytes from the text store,
		 * --vmlinux, or (vdso) perf's build-id cache; else a gap. */
		char found[4096];

		if (!strncmp(m.filename, "[kernel.kallsyms]", 17) && s->opts.vmlinux)
			return 0; /* added from the ELF at open */
		recorded_build_id(s, &m, bid);
		if (bid[0] && symtab_find_by_build_id(s->opts.search_path, bid, 0, found,
						      sizeof(found)) == 0) {
			rc = imgstore_add_file(s->st, pid, m.addr, m.len, found, m.pgoff,
					       t, IMGSTORE_FOREVER, m.filename);
			return rc < 0 ? rc : 0;
		}
		snprintf(why, sizeof(why), "%s%s%s has no file to read it from%s",
			 m.filename, bid[0] ? " with build id " : "", bid,
			 bid[0] ? " (perf's build-id cache, e.g. ~/.debug, or "
			 "--search-path, would hold it)" : "");
		rc = imgstore_add_missing(s->st, pid, m.addr, m.len, t,
					  IMGSTORE_FOREVER, m.filename, why);
		return rc < 0 ? rc : 0;
	}
	if (is_jitdump_name(m.filename))
		return note_jitdump(s, m.filename);
	recorded_build_id(s, &m, bid);
	file = resolve_file(s, m.filename, bid, why, sizeof(why));
	if (!file) {
		rc = imgstore_add_missing(s->st, pid, m.addr, m.len, t,
					  IMGSTORE_FOREVER, m.filename, why);
		return rc < 0 ? rc : 0;
	}
	rc = imgstore_add_file(s->st, pid, m.addr, m.len, file, m.pgoff, t,
			       IMGSTORE_FOREVER, m.filename);
	free(file);
	return rc < 0 ? rc : 0;
}

static int add_chunk(struct ptd_session *s, const struct perfdata_record *r)
{
	struct aux_chunk *c;

	if (util_grow((void **)&s->chunks, &s->ccap, s->nchunks + 1, sizeof(*c)))
		return PTD_ERR_NOMEM;
	c = &s->chunks[s->nchunks];
	c->idx = r->aux_idx;
	c->cpu = (int32_t)r->aux_cpu;
	c->tid = (int32_t)r->aux_tid;
	c->offset = r->aux_offset;
	c->file_offset = r->aux_file_offset;
	c->size = r->aux_size;
	c->seq = s->nchunks++;
	s->stats.trace_bytes += r->aux_size;
	return 0;
}

static int read_sideband(struct ptd_session *s)
{
	struct perfdata_record r;
	int rc;

	while ((rc = perfdata_next(s->pd, &r)) == 0) {
		uint64_t t = r.sid.has_time ? r.sid.time : 0;

		s->stats.sideband_records++;
		switch (r.type) {
		case PD_RECORD_AUXTRACE_INFO: {
			struct perfdata_auxtrace_info ai;

			if (perfdata_parse_auxtrace_info(&r, &ai))
				return fail(s, PTD_ERR_CORRUPT, "malformed "
					    "AUXTRACE_INFO record at offset %#" PRIx64,
					    r.file_offset);
			s->aux_type = ai.type;
			free(s->aux_priv);
			s->aux_priv = calloc(ai.npriv ? ai.npriv : 1, sizeof(uint64_t));
			if (!s->aux_priv)
				return PTD_ERR_NOMEM;
			memcpy(s->aux_priv, ai.priv, ai.npriv * sizeof(uint64_t));
			s->aux_npriv = ai.npriv;
			s->have_aux_info = 1;
			break;
		}
		case PD_RECORD_AUXTRACE:
			rc = add_chunk(s, &r);
			break;
		case PD_RECORD_MMAP:
		case PD_RECORD_MMAP2:
			rc = add_mmap(s, &r);
			break;
		case PD_RECORD_COMM: {
			struct perfdata_comm c;

			if (perfdata_parse_comm(&r, &c) == 0) {
				sideband_thread_comm(s->sb, (int32_t)c.pid,
						     (int32_t)c.tid, c.comm);
				if (c.exec && c.pid == c.tid)
					imgstore_end(s->st, (int32_t)c.pid, 0, 0, t);
			}
			break;
		}
		case PD_RECORD_FORK: {
			struct perfdata_task tk;

			if (perfdata_parse_task(&r, &tk) == 0) {
				sideband_fork(s->sb, (int32_t)tk.pid, (int32_t)tk.tid,
					      (int32_t)tk.ptid);
				if (tk.pid != tk.ppid)
					rc = imgstore_fork(s->st, (int32_t)tk.ppid,
							   (int32_t)tk.pid, tk.time);
			}
			break;
		}
		case PD_RECORD_ITRACE_START: {
			struct perfdata_itrace_start is;

			if (perfdata_parse_itrace_start(&r, &is) == 0) {
				sideband_thread(s->sb, (int32_t)is.pid, (int32_t)is.tid);
				if (r.sid.has_cpu)
					sideband_run(s->sb, (int32_t)r.sid.cpu, t,
						     (int32_t)is.pid, (int32_t)is.tid);
			}
			break;
		}
		case PD_RECORD_SWITCH:
		case PD_RECORD_SWITCH_CPU_WIDE: {
			struct perfdata_switch sw;

			if (perfdata_parse_switch(&r, &sw) || !r.sid.has_cpu)
				break;
			if (!sw.out && r.sid.has_tid)
				sideband_run(s->sb, (int32_t)r.sid.cpu, t,
					     (int32_t)r.sid.pid, (int32_t)r.sid.tid);
			else if (sw.out && r.type == PD_RECORD_SWITCH_CPU_WIDE)
				sideband_run(s->sb, (int32_t)r.sid.cpu, t,
					     (int32_t)sw.next_prev_pid,
					     (int32_t)sw.next_prev_tid);
			break;
		}
		case PD_RECORD_LOST:
		case PD_RECORD_LOST_SAMPLES: {
			struct perfdata_lost l;

			if (perfdata_parse_lost(&r, &l) == 0) {
				s->stats.lost_records += l.lost;
				s->stats.lost += l.lost;
			}
			break;
		}
		case PD_RECORD_AUX: {
			struct perfdata_aux a;

			if (perfdata_parse_aux(&r, &a) == 0) {
				if (a.flags & PD_AUX_FLAG_TRUNCATED) {
					s->stats.aux_truncated++;
					s->stats.lost++;
				}
				if (a.flags & PD_AUX_FLAG_PARTIAL)
					s->stats.aux_partial++;
				if (a.flags & 0x100) /* CoreSight raw (TRBE) format */
					s->cs_raw_format = 1;
			}
			break;
		}
		case PD_RECORD_KSYMBOL: {
			struct perfdata_ksymbol k;

			if (perfdata_parse_ksymbol(&r, &k) || !k.len)
				break;
			if (k.flags & 1) {
				/* UNREGISTER: the range is free from now on */
				imgstore_end(s->st, IMGSTORE_KERNEL, k.addr, k.len, t);
				break;
			}
			symtab_add(s->sbsyms, k.name, k.addr, k.len);
			/* Known to exist from here; its bytes come from the text
			 * store (which outranks this) or nowhere: then a gap. */
			rc = imgstore_add_missing(s->st, IMGSTORE_KERNEL, k.addr, k.len,
						  t, IMGSTORE_FOREVER, k.name,
						  k.ksym_type == 1 ?
						  "this BPF JIT image was not captured: record "
						  "with ptcapture, which copies programs before "
						  "the kernel frees them" :
						  "out-of-line kernel text (kprobe, ftrace "
						  "trampoline) was not captured: it needs "
						  "/proc/kcore at recording time");
			rc = rc < 0 ? rc : 0;
			break;
		}
		case PD_RECORD_AUX_OUTPUT_HW_ID: {
			struct perfdata_aux_hw_id h;

			if (perfdata_parse_aux_hw_id(&r, &h) == 0 && r.sid.has_cpu) {
				if (util_grow((void **)&s->hw_ids, &s->hwcap, s->nhw_ids + 1,
					      sizeof(*s->hw_ids)))
					return PTD_ERR_NOMEM;
				s->hw_ids[s->nhw_ids].cpu = (int32_t)r.sid.cpu;
				s->hw_ids[s->nhw_ids++].trace_id = (uint8_t)(h.hw_id & 0x7f);
			}
			break;
		}
		case PD_RECORD_TEXT_POKE: {
			struct perfdata_text_poke tp;

			if (perfdata_parse_text_poke(&r, &tp) == 0 && tp.new_len)
				rc = imgstore_add_copy(s->st, IMGSTORE_KERNEL, tp.addr,
						       tp.new_len, tp.new_bytes, t,
						       IMGSTORE_FOREVER, "text_poke");
			break;
		}
		default:
			break;
		}
		if (rc < 0)
			return fail(s, rc, "reading sideband: %s", ptd_strerror(rc));
	}
	if (rc != PTD_ERR_END)
		/* hostile-input fix: name the problem (the reader's message). */
		return fail(s, rc, "perf.data: cannot read records: %s",
			    perfdata_errmsg(s->pd));
	for (const char *const *w = perfdata_warnings(s->pd); w && *w; w++)
		session_warn(s, "%s", *w);
	s->stats.truncated = perfdata_truncated(s->pd);
	sideband_finish(s->sb);
	return 0;
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct aux_chunk *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Makes queue i's pieces contiguous (libipt and OpenCSD decode one
 * buffer): done only when a decoder asks, so the fast decoder, which
 * works piece by piece, keeps memory independent of the trace size. */
static int assemble_queue(void *ctx, size_t i, const uint8_t **data)
{
	struct ptd_session *s = ctx;
	struct session_queue *q = &s->queues[i];
	size_t pos = 0;

	if (!q->data) {
		q->owned = malloc(q->size ? q->size : 1);
		if (!q->owned)
			return PTD_ERR_NOMEM;
		for (size_t k = 0; k < q->npieces; k++) {
			memcpy(q->owned + pos, q->pieces[k].data, q->pieces[k].size);
			pos += q->pieces[k].size;
		}
		q->data = q->owned;
	}
	*data = q->data;
	return 0;
}

/* Groups AUXTRACE chunks by queue index, in stream order, as pieces that
 * point into one read-only mapping of the file. */
static int build_queues(struct ptd_session *s, const char *path)
{
	char err[512];
	size_t i = 0;
	int rc;

	rc = util_map_file(path, &s->file_map, err, sizeof(err));
	if (rc)
		return fail(s, rc, "%s", err);
	qsort(s->chunks, s->nchunks, sizeof(*s->chunks), chunk_cmp);
	s->queues = calloc(s->nchunks ? s->nchunks : 1, sizeof(*s->queues));
	if (!s->queues)
		return PTD_ERR_NOMEM;
	while (i < s->nchunks) {
		size_t j = i, total = 0;
		struct session_queue *q = &s->queues[s->nqueues];

		while (j < s->nchunks && s->chunks[j].idx == s->chunks[i].idx)
			j++;
		q->idx = s->chunks[i].idx;
		q->cpu = s->chunks[i].cpu;
		q->tid = s->chunks[i].tid;
		q->pieces = calloc(j - i, sizeof(*q->pieces));
		if (!q->pieces)
			return PTD_ERR_NOMEM;
		for (size_t k = i; k < j; k++) {
			const struct aux_chunk *c = &s->chunks[k];

			if (c->file_offset > s->file_map.size ||
			    c->size > s->file_map.size - c->file_offset)
				return fail(s, PTD_ERR_CORRUPT, "AUX data at offset %#"
					    PRIx64 " runs past the end of the file",
					    c->file_offset);
			q->pieces[q->npieces].data = s->file_map.data + c->file_offset;
			q->pieces[q->npieces].size = (size_t)c->size;
			q->pieces[q->npieces].offset = total;
			total += (size_t)c->size;
			q->npieces++;
		}
		q->size = total;
		if (q->npieces == 1)
			q->data = q->pieces[0].data;
		s->nqueues++;
		i = j;
	}
	s->stats.queues = s->nqueues;
	return 0;
}

/* Fills the backend's view of queue i. */
static void ipt_queue_of(struct ptd_session *s, size_t i, struct intelpt_queue *iq)
{
	const struct session_queue *q = &s->queues[i];

	iq->data = q->data;
	iq->size = q->size;
	iq->pieces = q->pieces;
	iq->npieces = q->npieces;
	iq->file_backed = 1;
	iq->assemble = assemble_queue;
	iq->assemble_ctx = s;
	iq->assemble_index = i;
}

static const struct perfdata_attr *find_attr(const struct perfdata_info *info,
					     uint32_t type)
{
	for (size_t i = 0; i < info->nattrs; i++)
		if (info->attrs[i].type == type)
			return &info->attrs[i];
	return NULL;
}

static int add_text_store(struct ptd_session *s)
{
	char path[4096], err[512];
	int rc;

	snprintf(path, sizeof(path), "%s/text", s->dir);
	rc = textstore_open(path, &s->ts, err, sizeof(err));
	if (rc)
		return fail(s, rc, "%s", err);
	for (size_t i = 0; i < textstore_count(s->ts); i++) {
		const struct textstore_entry *e = textstore_get(s->ts, i);
		const uint8_t *bytes = NULL;

		if (strcmp(e->hash, "-") &&
		    textstore_bytes(s->ts, i, &bytes, err, sizeof(err))) {
			session_warn(s, "%s: the range decodes as a gap", err);
			bytes = NULL;
		}
		rc = imgstore_add_bytes(s->st, e->pid, e->start, e->len, bytes,
					e->valid_from, e->valid_to, e->name);
		if (rc < 0)
			return fail(s, rc, "text store row %zu: bad range", i);
		if (!strcmp(e->kind, "file") && e->name[0] == '/') {
			char why[256];
			char *f = resolve_file(s, e->name, strcmp(e->build_id, "-") ?
					       e->build_id : NULL, why, sizeof(why));

			/* symbols come from the file only if it is the same */
			if (f)
				imgstore_set_origin(s->st, rc, f, e->pgoff);
			free(f);
		} else if (!strncmp(e->kind, "bpf", 3) || !strcmp(e->kind, "jit") ||
			   !strcmp(e->kind, "trampoline")) {
			symtab_add(s->sbsyms, e->name, e->start, e->len);
		}
	}
	return 0;
}

/* BPF metadata of a capture, jitdump files (from the capture's jit/ dir and
 * those the trace's MMAPs name) and perf maps.  Problems are warnings: the
 * flow still decodes, with gaps where code is missing. */
static void load_dyntext(struct ptd_session *s)
{
	char err[512], path[4096];
	int rc;

	if (s->dir) {
		rc = dyntext_load_bpf(s->dt, s->dir, s->ts, err, sizeof(err));
		if (rc < 0)
			session_warn(s, "BPF metadata: %s", err);
		snprintf(path, sizeof(path), "%s/jit", s->dir);
		{
			DIR *d = opendir(path);
			struct dirent *e;

			while (d && (e = readdir(d))) {
				char p2[4096];

				snprintf(p2, sizeof(p2), "%.3800s/%.255s", path, e->d_name);
				if (is_jitdump_name(e->d_name))
					note_jitdump(s, p2);
			}
			if (d)
				closedir(d);
		}
	}
	for (size_t i = 0; i < s->njitdumps; i++) {
		char why[256];
		char *f;
		const char *base = strrchr(s->jitdumps[i], '/');
		struct stat sb;

		/* a capture's own copy (jit/<name>, on the capture's clock)
		 * replaces the file the MMAP names, which was loaded above */
		base = base ? base + 1 : s->jitdumps[i];
		if (s->dir && strncmp(s->jitdumps[i], s->dir, strlen(s->dir))) {
			snprintf(path, sizeof(path), "%.3800s/jit/%.200s", s->dir, base);
			if (!stat(path, &sb))
				continue;
		}
		f = resolve_file(s, s->jitdumps[i], NULL, why, sizeof(why));

		if (!f) {
			session_warn(s, "jitdump %s: %s: JIT code decodes as gaps",
				     s->jitdumps[i], why);
			continue;
		}
		rc = dyntext_load_jitdump(s->dt, f, s->st, s->sbsyms, NULL, err, sizeof(err));
		if (rc < 0)
			session_warn(s, "jitdump %s: %s", f, err);
		free(f);
	}
	/* perf maps in the capture: names only (gaps unless code is known) */
	if (s->dir) {
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof(path), "%s/jit", s->dir);
		d = opendir(path);
		while (d && (e = readdir(d))) {
			char p2[4096];

			if (strncmp(e->d_name, "perf-", 5) || !strstr(e->d_name, ".map"))
				continue;
			snprintf(p2, sizeof(p2), "%.3800s/%.255s", path, e->d_name);
			if (dyntext_load_perfmap(s->dt, p2, -1, s->st, s->sbsyms, err,
						 sizeof(err)) < 0)
				session_warn(s, "perf map %s: %s", p2, err);
		}
		if (d)
			closedir(d);
	}
}

/* The Intel PT backend the options ask for. */
static int new_ipt_backend(struct ptd_session *s, const struct intelpt_params *p,
			   const struct intelpt_queue *q, size_t n,
			   const struct sideband *sb, char *err, size_t errlen)
{
	/* nothing lost silently: trace that cannot be decoded is said */
	for (size_t i = 0; i < n; i++) {
		struct intelpt_queue_check qc;

		if (q[i].data) {
			if (intelpt_check_queue(p, q[i].data, q[i].size, &qc))
				continue;
		} else {
			/* in pieces: the first PSB from the front, the tail
			 * from the last piece */
			struct intelpt_queue_check pc;
			size_t k;

			memset(&qc, 0, sizeof(qc));
			qc.first_psb = q[i].size;
			for (k = 0; k < q[i].npieces; k++) {
				const struct intelpt_piece *pp = &q[i].pieces[k];

				if (intelpt_check_queue(p, pp->data, pp->size, &pc) == 0 &&
				    pc.first_psb < pp->size) {
					qc.first_psb = pp->offset + pc.first_psb;
					break;
				}
			}
			k = q[i].npieces - 1;
			if (q[i].npieces &&
			    intelpt_check_queue(p, q[i].pieces[k].data, q[i].pieces[k].size,
						&pc) == 0 && pc.tail_cut) {
				qc.tail_cut = 1;
				qc.tail_offset = q[i].pieces[k].offset + pc.tail_offset;
			}
		}
		if (qc.first_psb == q[i].size && q[i].size) {
			session_warn(s, "trace queue %zu (cpu %d): no PSB in its %zu "
				     "bytes, so none of it can be decoded", i, q[i].cpu,
				     q[i].size);
			s->stats.lost++;
		} else if (qc.first_psb) {
			session_warn(s, "trace queue %zu (cpu %d): %" PRIu64 " bytes "
				     "before the first PSB cannot be decoded", i,
				     q[i].cpu, qc.first_psb);
		}
		if (qc.tail_cut) {
			session_warn(s, "trace queue %zu (cpu %d) ends inside a packet "
				     "at offset %#" PRIx64 " (AUX data cut short): the "
				     "flow stops before it", i, q[i].cpu, qc.tail_offset);
			s->stats.lost++;
		}
	}
	if (s->opts.decoder == PTD_DECODER_LIBIPT)
		return intelpt_new(p, q, n, s->st, sb, &s->be, err, errlen);
	s->fast = 1;
	return fastpt_new(p, q, n, s->st, sb, s->opts.threads,
			  s->opts.block_cache_max,
			  ((s->opts.flags & PTD_OPEN_COUNT_ONLY) ? FASTPT_COUNT_ONLY : 0) |
			  ((s->opts.flags & PTD_OPEN_INSN_TEXT) ? FASTPT_KEEP_TEXT : 0),
			  &s->be, err, errlen);
}

/* cs_etm: one CoreSight queue per AUX queue, each AUXTRACE record a chunk
 * (perf does not promise continuity between them). */
static int open_cs_etm(struct ptd_session *s)
{
	struct coresight_queue_desc *cq;
	struct cs_etm_info info;
	char err[512];
	size_t k = 0;
	int rc;

	rc = cs_etm_info_parse((const uint8_t *)s->aux_priv,
			       s->aux_npriv * sizeof(uint64_t), &info, err, sizeof(err));
	if (rc)
		return fail(s, rc, "cs_etm AUXTRACE_INFO: %s", err);
	for (size_t h = 0; h < s->nhw_ids; h++)
		for (uint32_t c = 0; c < info.nr_cpu; c++)
			if (info.cpus[c].cpu == s->hw_ids[h].cpu) {
				info.cpus[c].trace_id = s->hw_ids[h].trace_id;
				info.cpus[c].trace_id_valid = 1;
			}
	s->cs_chunks = calloc(s->nchunks ? s->nchunks : 1, sizeof(*s->cs_chunks));
	cq = calloc(s->nqueues ? s->nqueues : 1, sizeof(*cq));
	if (!s->cs_chunks || !cq) {
		free(cq);
		cs_etm_info_free(&info);
		return PTD_ERR_NOMEM;
	}
	for (size_t i = 0; i < s->nqueues; i++) {
		struct session_queue *q = &s->queues[i];
		int32_t pid = sideband_pid_of(s->sb, q->tid), tid;

		if (q->cpu >= 0 && (pid < 0 || q->tid <= 0))
			sideband_task_at(s->sb, q->cpu, UINT64_MAX - 1, &pid, &tid);
		cq[i].chunks = &s->cs_chunks[k];
		cq[i].cpu = q->cpu;
		cq[i].formatted = !s->cs_raw_format;
		/* each AUXTRACE payload a chunk, in place in the file mapping:
		 * the decoder resets between them, as perf's does (one
		 * record need not continue the one before), and they are
		 * the units decoded in parallel; ev.offset counts bytes
		 * within the queue */
		for (size_t p = 0; p < q->npieces; p++, k++) {
			s->cs_chunks[k].data = q->pieces[p].data;
			s->cs_chunks[k].size = q->pieces[p].size;
			s->cs_chunks[k].offset = q->pieces[p].offset;
			s->cs_chunks[k].time = IMGSTORE_TIME_UNKNOWN;
			s->cs_chunks[k].pid = pid < 0 ? IMGSTORE_KERNEL : pid;
		}
		cq[i].nchunks = q->npieces;
	}
	rc = coresight_open_perf(&info, cq, s->nqueues, s->st, s->opts.threads,
				 &s->be, err, sizeof(err));
	free(cq);
	cs_etm_info_free(&info);
	if (rc)
		return fail(s, rc, "%s", err);
	for (size_t i = 0; i < coresight_warning_count(s->be); i++)
		session_warn(s, "%s", coresight_warning(s->be, i));
	return 0;
}

static int open_snapshot(struct ptd_session *s, const char *dir)
{
	char err[512];
	int rc = snapshot_open(dir, s->st, s->opts.threads, &s->be,
			       err, sizeof(err));

	if (rc)
		return fail(s, rc, "%s", err);
	for (size_t i = 0; i < coresight_warning_count(s->be); i++)
		session_warn(s, "%s", coresight_warning(s->be, i));
	return 0;
}

static int open_perf(struct ptd_session *s, const char *path)
{
	const struct perfdata_info *info;
	struct intelpt_queue *iq;
	struct intelpt_params params;
	char err[512];
	int rc;

	rc = perfdata_open(path, &s->pd, err, sizeof(err));
	if (rc)
		return fail(s, rc, "%s", err);
	info = perfdata_get_info(s->pd);
	rc = read_sideband(s);
	if (rc)
		return rc;
	/* after the sideband: text-store rows carry their own validity, which
	 * mappings, execs and unregisters seen in the sideband must not end */
	if (s->dir && (rc = add_text_store(s)))
		return rc;
	load_dyntext(s);
	if (!s->nchunks)
		return fail(s, PTD_ERR_NO_TRACE, "%s holds no AUX trace data "
			    "(no AUXTRACE records): record with -e intel_pt// "
			    "or -e cs_etm//", path);
	if (!s->have_aux_info)
		return fail(s, PTD_ERR_NO_AUXINFO, "%s has AUX trace data but "
			    "no AUXTRACE_INFO record, so the trace type and its "
			    "configuration are unknown", path);
	rc = build_queues(s, path);
	if (rc)
		return rc;
	if (s->aux_type == AUX_TYPE_CS_ETM)
		return open_cs_etm(s);
	if (s->aux_type != AUX_TYPE_INTEL_PT) {
		return fail(s, PTD_ERR_UNSUPPORTED, "%s: AUX trace type %u (%s) "
			    "is not supported by this build", path, s->aux_type,
			    s->aux_type == AUX_TYPE_CS_ETM ? "cs_etm" :
			    s->aux_type == 2 ? "intel_bts" : "unknown PMU");
	}
	{
		const struct perfdata_attr *a = NULL;

		if (s->aux_npriv > INTELPT_INFO_PMU_TYPE)
			a = find_attr(info, (uint32_t)s->aux_priv[INTELPT_INFO_PMU_TYPE]);
		rc = intelpt_params_from_perf(&params, s->aux_priv, s->aux_npriv,
					      a ? a->config : 0, info->cpuid,
					      err, sizeof(err));
		if (rc)
			return fail(s, rc, "%s", err);
	}
	iq = calloc(s->nqueues ? s->nqueues : 1, sizeof(*iq));
	if (!iq)
		return PTD_ERR_NOMEM;
	for (size_t i = 0; i < s->nqueues; i++) {
		const struct session_queue *q = &s->queues[i];
		int per_cpu = s->aux_npriv > INTELPT_INFO_PER_CPU_MMAPS &&
			      s->aux_priv[INTELPT_INFO_PER_CPU_MMAPS];

		ipt_queue_of(s, i, &iq[i]);
		iq[i].cpu = per_cpu ? q->cpu : -1;
		iq[i].tid = q->tid;
		iq[i].pid = sideband_pid_of(s->sb, q->tid);
		if (per_cpu) {
			uint64_t t0 = sideband_next_switch(s->sb, q->cpu, 0);

			if (sideband_task_at(s->sb, q->cpu, t0 == UINT64_MAX ? 0 : t0,
					     &iq[i].pid, &iq[i].tid))
				iq[i].pid = iq[i].tid = -1;
		}
	}
	rc = new_ipt_backend(s, &params, iq, s->nqueues, s->sb, err, sizeof(err));
	free(iq);
	if (rc)
		return fail(s, rc, "%s", err);
	return 0;
}

/* ------------------------------------------------------------------ */
/* raw mode                                                            */

static int open_raw(struct ptd_session *s, const char *path)
{
	struct intelpt_params params;
	struct intelpt_queue q;
	char err[512];
	int rc;

	rc = util_map_file(path, &s->raw_trace, err, sizeof(err));
	if (rc)
		return fail(s, rc, "%s", err);
	if (!s->raw_trace.size)
		return fail(s, PTD_ERR_NO_TRACE, "%s is empty", path);
	for (size_t i = 0; i < s->opts.n_raw_images; i++) {
		rc = rawimage_add(s->st, &s->opts.raw_images[i], err, sizeof(err));
		if (rc)
			return fail(s, rc, "%s", err);
	}
	memset(&params, 0, sizeof(params));
	if (s->opts.cpu && intelpt_params_cpu(&params, s->opts.cpu))
		return fail(s, PTD_ERR_INVAL, "bad --cpu value \"%s\": expected "
			    "FAMILY/MODEL[/STEPPING] or none", s->opts.cpu);
	memset(&q, 0, sizeof(q));
	q.data = s->raw_trace.data;
	q.size = s->raw_trace.size;
	q.file_backed = 1;
	q.cpu = -1;
	q.pid = q.tid = IMGSTORE_KERNEL;
	s->stats.trace_bytes = q.size;
	s->stats.queues = 1;
	rc = new_ipt_backend(s, &params, &q, 1, NULL, err, sizeof(err));
	if (rc)
		return fail(s, rc, "%s", err);
	return 0;
}

/* ------------------------------------------------------------------ */

static enum ptd_input_kind detect(const char *path, char **perf_path, char **dir)
{
	struct stat st;
	char buf[4096];
	uint8_t magic[8];
	int fd;
	ssize_t n;

	*perf_path = NULL;
	*dir = NULL;
	if (stat(path, &st))
		return PTD_INPUT_AUTO;
	if (S_ISDIR(st.st_mode)) {
		snprintf(buf, sizeof(buf), "%s/perf.data", path);
		if (!stat(buf, &st)) {
			*perf_path = strdup(buf);
			*dir = strdup(path);
			return PTD_INPUT_CAPTURE_DIR;
		}
		snprintf(buf, sizeof(buf), "%s/snapshot.ini", path);
		if (!stat(buf, &st))
			return PTD_INPUT_CS_SNAPSHOT;
		return PTD_INPUT_AUTO;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PTD_INPUT_AUTO;
	n = read(fd, magic, sizeof(magic));
	close(fd);
	if (n == 8 && !memcmp(magic, "PERFILE2", 8)) {
		*perf_path = strdup(path);
		return PTD_INPUT_PERF_DATA;
	}
	return PTD_INPUT_RAW_PT;
}

int ptd_open_kind(struct ptd_session **out, const char *path,
		  enum ptd_input_kind kind, const struct ptd_open_opts *opts)
{
	struct ptd_session *s;
	char *perf_path = NULL, *dir = NULL;
	enum ptd_input_kind found;
	int rc, explicit_kind;

	if (!out)
		return PTD_ERR_INVAL;
	*out = s = calloc(1, sizeof(*s));
	if (!s)
		return PTD_ERR_NOMEM;
	s->stats.sz = sizeof(s->stats);
	if (opts) {
		size_t n = opts->sz < sizeof(s->opts) ? opts->sz : sizeof(s->opts);

		memcpy(&s->opts, opts, n);
	}
	s->opts.sz = sizeof(s->opts);
	s->st = imgstore_new();
	s->sb = sideband_new();
	s->sbsyms = symtab_new();
	s->dt = dyntext_new();
	s->src = srcline_new();
	if (!s->st || !s->sb || !s->sbsyms || !s->dt || !s->src)
		return fail(s, PTD_ERR_NOMEM, "out of memory");
	if (s->opts.flags & PTD_OPEN_NO_VERSIONING)
		imgstore_set_no_versioning(s->st, 1);
	if (!path)
		return fail(s, PTD_ERR_INVAL, "no input given");
	if (s->opts.vmlinux) {
		struct ptd_raw_image ri = { .kind = PTD_RAW_ELF, .path = s->opts.vmlinux };
		char err[512];

		rc = rawimage_add(s->st, &ri, err, sizeof(err));
		if (rc)
			return fail(s, rc, "--vmlinux: %s", err);
	}
	if (s->opts.kallsyms) {
		char err[512];

		rc = symtab_from_kallsyms(&s->ksyms, s->opts.kallsyms, err, sizeof(err));
		if (rc)
			return fail(s, rc, "--kallsyms: %s", err);
	}
	if (access(path, R_OK))
		return fail(s, PTD_ERR_IO, "cannot open %s: %s", path, strerror(errno));

	found = detect(path, &perf_path, &dir);
	explicit_kind = kind != PTD_INPUT_AUTO;
	if (kind == PTD_INPUT_AUTO)
		kind = found;
	if (kind == PTD_INPUT_RAW_PT && !s->opts.n_raw_images) {
		/* raw bytes mean nothing without the code they ran through */
		rc = !explicit_kind ?
		     fail(s, PTD_ERR_FORMAT, "%s is not a perf.data file (no "
			  "PERFILE2 magic); for a raw Intel PT trace give it with "
			  "--pt and its code with --raw/--elf/--pages", path) :
		     fail(s, PTD_ERR_INVAL, "raw trace %s: no images given (use "
			  "--raw FILE:ADDR, --elf FILE[:BASE] or --pages)", path);
	} else if (kind == PTD_INPUT_RAW_PT) {
		rc = open_raw(s, path);
	} else if (kind == PTD_INPUT_CS_SNAPSHOT) {
		rc = open_snapshot(s, path);
	} else if (kind == PTD_INPUT_CAPTURE_DIR || kind == PTD_INPUT_PERF_DATA) {
		s->dir = dir;
		dir = NULL;
		rc = open_perf(s, perf_path ? perf_path : path);
	} else {
		rc = fail(s, PTD_ERR_FORMAT, "%s is neither a capture directory "
			  "(with perf.data), an OpenCSD snapshot directory (with "
			  "snapshot.ini), a perf.data file, nor a raw trace", path);
	}
	free(perf_path);
	free(dir);
	return rc;
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
	for (size_t i = 0; i < s->nqueues; i++) {
		free(s->queues[i].owned);
		free(s->queues[i].pieces);
	}
	util_unmap(&s->file_map);
	free(s->queues);
	free(s->chunks);
	free(s->aux_priv);
	free(s->cs_chunks);
	free(s->hw_ids);
	perfdata_close(s->pd);
	textstore_close(s->ts);
	imgstore_free(s->st);
	sideband_free(s->sb);
	util_unmap(&s->raw_trace);
	for (size_t i = 0; i < s->nwarnings; i++)
		free(s->warnings[i]);
	free(s->warnings);
	free(s->dir);
	free(s->blk_insn);
	free(s->blk);
	for (size_t i = 0; i < s->nsymfiles; i++) {
		free(s->symfiles[i].path);
		free(s->symfiles[i].debug);
		symtab_free(s->symfiles[i].tab);
	}
	free(s->symfiles);
	symtab_free(s->ksyms);
	dyntext_free(s->dt);
	srcline_free(s->src);
	for (size_t i = 0; i < s->njitdumps; i++)
		free(s->jitdumps[i]);
	free(s->jitdumps);
	for (size_t i = 0; i < s->nbidcache; i++)
		free(s->bidcache[i].path);
	free(s->bidcache);
	symtab_free(s->sbsyms);
	free(s);
}

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
			s->last_pid = sideband_pid_of(s->sb, ev->tid);
		}
		ev->pid = s->last_pid;
	}
	if (s->opts.time_start && (ev->flags & PTD_EVF_TIME_VALID) &&
	    ev->time < s->opts.time_start)
		return 1;
	switch (ev->kind) {
	case PTD_EV_INSN: s->stats.instructions++; break;
	case PTD_EV_ERROR: s->stats.errors++; break;
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
#define CTX_EVENT UINT32_MAX

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
	if (!s->be->next_blocks)
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

int ptd_get_stats(const struct ptd_session *s, struct ptd_stats *st)
{
	struct ptd_stats tmp;
	size_t n;

	if (!s || !st || st->sz < sizeof(size_t))
		return PTD_ERR_INVAL;
	n = st->sz < sizeof(s->stats) ? st->sz : sizeof(s->stats);
	tmp = s->stats;
	if (s->be && s->fast) {
		struct fastpt_stats fs;

		fastpt_get_stats(s->be, &fs);
		tmp.segments = fs.segments;
		tmp.segments_libipt = fs.fallback_segments;
	}
	memcpy(st, &tmp, n);
	st->sz = n;
	return 0;
}

/* The separate debug file of the ELF file path, as perf and gdb find it:
 * by build id (the search path, /usr/lib/debug, ~/.debug), else by
 * .gnu_debuglink (CRC checked).  Debian's ld.so and libc keep only
 * .dynsym: their static functions (do_lookup_x) and the DWARF lines of
 * packaged binaries are in /usr/lib/debug.  Writes its path to out and
 * returns 0, or PTD_ERR_NO_IMAGE when there is none (no error: the file's
 * own symbols and DWARF are used).  Symbols and source lines take the same
 * file: symfile_entry() looks once per path. */
static int find_debug_file(struct ptd_session *s, const char *path,
			   char *out, size_t outlen)
{
	const char *bid = file_build_id(s, path);

	/* want_debug also accepts code files: .build-id/xx/rest may be path
	 * itself (skipped) or a cached copy of it (stripped like path, it
	 * holds no debug information, so the debuglink is tried). */
	if (bid[0] && symtab_find_by_build_id(s->opts.search_path, bid, 1, out,
					      outlen) == 0 &&
	    !util_same_file(out, path) && symtab_has_debug_info(out))
		return 0;
	if (symtab_find_debuglink(path, out, outlen) == 0)
		return 0;
	out[0] = 0;
	return PTD_ERR_NO_IMAGE;
}

/* The symbol table of an ELF file merged with its debug file's (NULL when
 * it is no ELF file; a stripped file whose debug file is missing gives an
 * empty table) and that debug file's path, read once per path (NULL when
 * out of memory). */
static struct symfile *symfile_entry(struct ptd_session *s, const char *path)
{
	char err[256], dbg[4096];
	struct symtab *tab = NULL;
	struct symfile *sf;

	for (size_t i = 0; i < s->nsymfiles; i++)
		if (!strcmp(s->symfiles[i].path, path))
			return &s->symfiles[i];
	if (util_grow((void **)&s->symfiles, &s->symcap, s->nsymfiles + 1,
		      sizeof(*s->symfiles)))
		return NULL;
	sf = &s->symfiles[s->nsymfiles];
	memset(sf, 0, sizeof(*sf));
	if (symtab_from_elf_file(&tab, path, err, sizeof(err)))
		tab = NULL;
	if (tab && find_debug_file(s, path, dbg, sizeof(dbg)) == 0) {
		/* A debug file that cannot be read adds nothing. */
		symtab_merge_elf_file(tab, dbg, err, sizeof(err));
		sf->debug = strdup(dbg);
	}
	sf->path = strdup(path);
	if (!sf->path) {
		symtab_free(tab);
		free(sf->debug);
		sf->debug = NULL;
		return NULL;
	}
	sf->tab = tab;
	s->nsymfiles++;
	return sf;
}

static struct symtab *symfile(struct ptd_session *s, const char *path)
{
	struct symfile *sf = symfile_entry(s, path);

	return sf ? sf->tab : NULL;
}

const char *ptd_thread_name(const struct ptd_session *s, int tid)
{
	return s && s->sb ? sideband_comm_of(s->sb, tid) : NULL;
}

int ptd_symbolize(struct ptd_session *s, int pid, uint64_t addr, char *buf,
		  size_t len, uint64_t *off)
{
	struct imgstore_hit hit;
	const char *name;
	uint64_t o, bias;
	struct symtab *tab;

	if (!s || !buf || !len)
		return PTD_ERR_INVAL;
	{
		/* BPF programs and JIT code: the name valid at this time */
		struct dyntext_sym ds;
		uint64_t t = s->cur_time ? s->cur_time : IMGSTORE_TIME_UNKNOWN;

		if (dyntext_symbol(s->dt, is_kernel_addr(addr) ? IMGSTORE_KERNEL : pid,
				   addr, t, &ds) == 0 && ds.name) {
			name = ds.name;
			o = addr - ds.start;
			goto found;
		}
	}
	if (symtab_lookup(s->sbsyms, addr, &name, &o) == 0 ||
	    (s->ksyms && is_kernel_addr(addr) &&
	     symtab_lookup(s->ksyms, addr, &name, &o) == 0))
		goto found;
	memset(&hit, 0, sizeof(hit));
	imgstore_lookup(s->st, pid, addr, s->cur_time ? s->cur_time :
			IMGSTORE_TIME_UNKNOWN, &hit);
	if (!hit.elf_path || !(tab = symfile(s, hit.elf_path)))
		return PTD_ERR_NO_IMAGE;
	if (symtab_load_bias(tab, hit.start, hit.pgoff, &bias))
		bias = 0;
	if (symtab_lookup(tab, addr - bias, &name, &o))
		return PTD_ERR_NO_IMAGE;
found:
	snprintf(buf, len, "%s", name);
	if (off)
		*off = o;
	return 0;
}

const char *ptd_image_name(struct ptd_session *s, int pid, uint64_t addr)
{
	struct imgstore_hit hit;

	memset(&hit, 0, sizeof(hit));
	if (!s)
		return NULL;
	imgstore_lookup(s->st, pid, addr, IMGSTORE_TIME_UNKNOWN, &hit);
	return hit.name;
}

int ptd_source_line(struct ptd_session *s, int pid, uint64_t addr, char *file,
		    size_t len, unsigned int *line)
{
	struct imgstore_hit hit;
	struct symfile *sf;
	uint64_t t, bias = 0;
	char err[256];
	int l = 0;

	if (!s || !file || !len || !line)
		return PTD_ERR_INVAL;
	t = s->cur_time ? s->cur_time : IMGSTORE_TIME_UNKNOWN;
	if (dyntext_srcline(s->dt, is_kernel_addr(addr) ? IMGSTORE_KERNEL : pid,
			    addr, t, file, len, line) == 0)
		return 0;
	memset(&hit, 0, sizeof(hit));
	imgstore_lookup(s->st, pid, addr, t, &hit);
	if (!hit.elf_path)
		return PTD_ERR_NO_IMAGE;
	/* The bias from the main file's program headers (the table's own
	 * segments), the lines from its debug file, else from itself. */
	sf = symfile_entry(s, hit.elf_path);
	if (sf && sf->tab && symtab_load_bias(sf->tab, hit.start, hit.pgoff,
					      &bias))
		bias = 0;
	if (srcline_lookup(s->src, hit.elf_path, sf ? sf->debug : NULL,
			   addr - bias, file, len, &l, err, sizeof(err)))
		return PTD_ERR_NO_IMAGE;
	*line = (unsigned int)l;
	return 0;
}
