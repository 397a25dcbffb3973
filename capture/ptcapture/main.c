/* SPDX-License-Identifier: MIT */
/*
 * ptcapture - records the sideband and the dynamic text a decoder needs
 * into a capture directory (docs/FORMATS.md).
 *
 *   ptcapture record [-o NAME.ptd] [-a] [--duration S] [-- CMD ARGS]
 *   ptcapture record --snapshot [--trigger bp|uprobe:BIN:SYM] [--control fifo:PATH] ...
 *
 * Pieces: sbevents (per-CPU dummy events and their rings), synth (state at
 * start), bpfinfo (JIT images by prog id while a program is alive), fence
 * (JIT images copied by a BPF program when a program is freed), textmatch
 * (ties copies to KSYMBOL lifetimes, writes text/), perfwrite (perf.data),
 * auxpmu (intel_pt / cs_etm AUX recording), jitpoll (re-copies programs
 * whose tail-call sites are re-patched in place), kcopy (--kcore: kernel
 * text out of /proc/kcore into the text store), and for the flight recorder
 * (--snapshot): backward sideband rings, snapshot (records and fence copies
 * kept between snapshots), trigger (breakpoint or uprobe + deciding BPF
 * program).
 */
#include "auxpmu.h"
#include "bpfinfo.h"
#include <bpf/bpf.h>
#include "fence.h"
#include "jitpoll.h"
#include "kcopy.h"
#include "snapshot.h"
#include "trigger.h"
#include "perfwrite.h"
#include "sbevents.h"
#include "synth.h"
#include "textmatch.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTD_VERSION
#define PTD_VERSION "0"
#endif

static volatile sig_atomic_t stop_signal, snap_signal;

static void on_signal(int sig)
{
	if (sig == SIGUSR2)
		snap_signal = 1;
	else
		stop_signal = sig;
}

struct rec {
	struct perfwrite *pw;
	struct textmatch *tm;
	char bpfdir[4096];
	uint64_t by_type[32];
	uint64_t records, lost_records, lost_events, lost_samples;
	uint64_t prog_loads, info_copies, info_gone, info_errors;
	struct sbevents_stats sbst; /* ring counts (sbevents), at the end */
	uint64_t kcore_missed;/* non-BPF KSYMBOL and TEXT_POKE ranges not copied */
	struct kcopy *kc;     /* --kcore, else NULL */
	struct copystore *cs; /* flight recorder: fence copies kept */
	struct jitpoll *jp;   /* programs with prog arrays, re-copied (or NULL) */
	struct jitpoll_counts jpc; /* its counts, at the end */
	unsigned poke_ms;     /* re-copy interval */
	char poke_trigger[128]; /* the trigger jitpoll runs on, or why none */
	int failed;           /* a write failed: stop */
	char errmsg[512];
};

static void fail(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = 1;
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t now_ns(void);

static void on_prog_load(struct rec *r, uint64_t time, uint32_t id, const uint8_t *tag)
{
	struct bpfinfo_prog p;
	char err[256] = "";
	uint64_t t0 = now_ns();
	size_t first = textmatch_ncopies(r->tm);
	int rc;

	r->prog_loads++;
	if (textmatch_prog_load(r->tm, time, id, tag))
		fail(r, "out of memory");
	rc = bpfinfo_copy2(r->bpfdir, id, r->jp != NULL, &p, err, sizeof(err));
	if (rc == -ENOENT) {
		r->info_gone++; /* already unloaded: the fence has it */
		return;
	}
	if (rc && !p.nimg) {
		if (!r->info_errors++)
			fprintf(stderr, "ptcapture: prog info: %s\n", err);
		return;
	}
	r->info_copies++;
	for (uint32_t i = 0; i < p.nimg; i++)
		if (textmatch_copy(r->tm, TM_PROG_INFO, time, p.img[i].addr, p.img[i].len,
				   i == 0 ? p.tag : NULL, p.id, id, i, 1, p.img[i].bytes))
			fail(r, "out of memory");
	/* Tail-call sites: re-copied until the program goes. */
	if (r->jp && !r->failed && jitpoll_track(r->jp, &p, first, t0))
		fail(r, "out of memory");
	bpfinfo_free(&p);
}

/* TEXT_POKE: addr, old_len, new_len, old bytes, new bytes. */
static void on_text_poke(struct rec *r, uint64_t time, const uint8_t *b, size_t body)
{
	uint16_t old_len, new_len;

	if (!r->kc) {
		r->kcore_missed++;   /* no kcore to copy the new text from */
		return;
	}
	if (body < 20)
		return;
	memcpy(&old_len, b + 16, 2);
	memcpy(&new_len, b + 18, 2);
	if (20 + (size_t)old_len + new_len <= body &&
	    kcopy_text_poke(r->kc, time, rd64(b + 8), b + 20 + old_len, new_len))
		fail(r, "out of memory");
}

/* Every sideband record, read from a ring or synthesized, comes here. */
static int on_record(void *ctx, const struct perf_event_header *h, int cpu)
{
	struct rec *r = ctx;
	const uint8_t *b = (const uint8_t *)h;
	uint64_t time = sbevents_time(h);
	size_t body = h->size >= 8 + SB_ID_TRAILER ? h->size - SB_ID_TRAILER : 8;

	r->records++;
	r->by_type[h->type < 32 ? h->type : 0]++;
	if (perfwrite_record(r->pw, h, h->size) < 0)
		fail(r, "writing perf.data failed");
	switch (h->type) {
	case PERF_RECORD_LOST:
		if (body >= 24) {
			r->lost_records++;
			r->lost_events += rd64(b + 16);
		}
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (body >= 16)
			r->lost_samples += rd64(b + 8);
		break;
	case PERF_RECORD_TEXT_POKE:
		on_text_poke(r, time, b, body);
		break;
	case PERF_RECORD_KSYMBOL:
		if (body > 24) {
			char name[256];
			size_t nl = body - 24 < sizeof(name) ? body - 24 : sizeof(name) - 1;
			uint16_t type, flags;

			memcpy(name, b + 24, nl);
			name[nl] = 0;
			memcpy(&type, b + 20, 2);
			memcpy(&flags, b + 22, 2);
			if (r->kc) {
				if (kcopy_ksymbol(r->kc, time, rd64(b + 8), rd32(b + 16), type,
						  flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
						  name))
					fail(r, "out of memory");
			} else if (type != PERF_RECORD_KSYMBOL_TYPE_BPF &&
				   !(flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER)) {
				r->kcore_missed++;  /* out-of-line kernel text */
			}
			if (textmatch_ksymbol(r->tm, time, rd64(b + 8), rd32(b + 16), type,
					      flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER, name))
				fail(r, "out of memory");
		}
		break;
	case PERF_RECORD_BPF_EVENT:
		if (body >= 24) {
			uint16_t type;

			memcpy(&type, b + 8, 2);
			if (type == PERF_BPF_EVENT_PROG_LOAD)
				on_prog_load(r, time, rd32(b + 12), b + 16);
			else if (type == PERF_BPF_EVENT_PROG_UNLOAD && r->jp)
				jitpoll_forget(r->jp, rd32(b + 12));
		}
		break;
	}
	return r->failed;
}

static int on_synth(void *ctx, const struct perf_event_header *h)
{
	return on_record(ctx, h, 0);
}

static void on_fence_image(void *ctx, const struct fence_image *im)
{
	struct rec *r = ctx;
	uint64_t group;

	if (r->cs) {
		/* flight recorder: kept for the next snapshots */
		if (copystore_add(r->cs, im))
			fail(r, "out of memory");
		return;
	}
	memcpy(&group, im->prog_tag, 8);
	group ^= im->time;
	/* The main image's symbol carries the program's tag; func[0]->tag is
	 * that of the main subprogram alone. */
	if (textmatch_copy(r->tm, TM_FENCE, im->time, im->addr, im->len,
			   im->img == 0 ? im->prog_tag : im->tag, 0,
			   group, im->img, im->complete, im->bytes))
		fail(r, "out of memory");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cpu_desc(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			char *v = strchr(line, ':') + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(buf, len, "%s", v);
			break;
		}
	if (f)
		fclose(f);
}

/* One message naming everything that is missing, before anything is
 * created. */
static int check_privileges(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
				     .size = sizeof(a) };
	char missing[1024] = "", par[32] = "?";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	uint32_t id;
	int fd;

	if (f) {
		if (fgets(par, sizeof(par), f))
			par[strcspn(par, "\n")] = 0;
		fclose(f);
	}
	fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	else if (errno == EACCES || errno == EPERM)
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
			 "\n  - CAP_PERFMON for system-wide perf events "
			 "(or kernel.perf_event_paranoid <= -1; it is %s)", par);
	if (bpf_prog_get_next_id(0, &id) && (errno == EPERM || errno == EACCES))
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
			 "\n  - CAP_BPF (load the fence program) and CAP_SYS_ADMIN "
			 "(open BPF programs by id)");
	if (!synth_kallsyms_lookup("bpf_prog_free_deferred") && geteuid() != 0)
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
			 "\n  - CAP_SYSLOG to read kernel addresses in /proc/kallsyms "
			 "(kernel.kptr_restrict)");
	if (!*missing)
		return 0;
	fprintf(stderr, "ptcapture: not permitted to record; missing:%s\n"
		"Run as root, or grant these capabilities to ptcapture.\n", missing);
	return -1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ptcapture record [-o NAME.ptd] [-a] [--duration S] [-- CMD ARGS]\n"
		"  -o DIR         capture directory to create (default ptcapture.ptd)\n"
		"  -a             also synthesize COMM/MMAP2 of all running processes\n"
		"  --duration S   stop after S seconds (also: CMD exits, SIGINT, SIGTERM)\n"
		"  --linger MS    keep reading after the stop, for deferred frees (default 300)\n"
		"  -m PAGES       sideband ring pages per CPU (power of two, default 256;\n"
		"                 the context-switch ring gets 4 times as many)\n"
		"  -f             write into DIR even if it exists\n"
		"  --pmu-config TERMS  intel_pt/cs_etm terms, e.g. cyc,mtc_period=3,noretcomp\n"
		"  --aux-pages N  AUX area pages per CPU (power of two, default 1024)\n"
		"  --poke-interval MS  re-copy BPF programs that use a prog array (their\n"
		"                 tail-call sites are re-patched in place) every MS ms\n"
		"                 (default 10; 0: never)\n"
		"  --no-poke-trigger  re-copy on the interval only, not also on bpf() map\n"
		"                 updates (tp_btf/sys_enter+sys_exit)\n"
		"  --kcore[=DIR]  copy kernel text, modules, BPF/trampoline ranges and\n"
		"                 TEXT_POKE ranges out of DIR/kcore into the text store,\n"
		"                 with DIR/kallsyms and DIR/modules (default DIR: /proc)\n"
		"flight recorder:\n"
		"  --snapshot     keep the newest sideband (and AUX) in overwritten rings; write\n"
		"                 DIR/snap-N/ (a complete capture) on SIGUSR2, on a control\n"
		"                 command or on a trigger\n"
		"  --trigger bp:BINARY:SYMBOL  breakpoint on SYMBOL (a uprobe where hardware\n"
		"                 breakpoints do not fire); a BPF program decides\n"
		"  --trigger uprobe:BINARY:SYMBOL  uprobe on SYMBOL\n"
		"  --trigger-every N   snapshot on every Nth hit (default 1)\n"
		"  --max-snapshots N   stop triggering after N snapshots (default 0: no limit)\n"
		"  --control fifo:PATH commands \"snapshot\" and \"stop\", one per line\n"
		"The sideband is always system-wide; BPF text is kernel-global.\n");
}

struct opts {
	const char *out, *pmu_config, *trigger, *control, *kcore;
	int all, force, snapshot, no_poke_trigger;
	double duration;
	unsigned linger_ms, pages, aux_pages, poke_ms;
	uint64_t every, max_snaps;
	char **cmd;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "output", required_argument, 0, 'o' },
		{ "duration", required_argument, 0, 'd' },
		{ "linger", required_argument, 0, 'l' },
		{ "pmu-config", required_argument, 0, 'P' },
		{ "aux-pages", required_argument, 0, 'A' },
		{ "snapshot", no_argument, 0, 'S' },
		{ "trigger", required_argument, 0, 'T' },
		{ "trigger-every", required_argument, 0, 'E' },
		{ "max-snapshots", required_argument, 0, 'M' },
		{ "control", required_argument, 0, 'C' },
		{ "poke-interval", required_argument, 0, 'K' },
		{ "no-poke-trigger", no_argument, 0, 'N' },
		{ "kcore", optional_argument, 0, 'k' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	o->out = "ptcapture.ptd";
	o->linger_ms = 300;
	o->pages = 256;
	o->aux_pages = 1024;
	o->every = 1;
	o->poke_ms = 10;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:afm:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; break;
		case 'a': o->all = 1; break;
		case 'f': o->force = 1; break;
		case 'd': o->duration = atof(optarg); break;
		case 'l': o->linger_ms = (unsigned)atoi(optarg); break;
		case 'm': o->pages = (unsigned)atoi(optarg); break;
		case 'P': o->pmu_config = optarg; break;
		case 'A': o->aux_pages = (unsigned)atoi(optarg); break;
		case 'S': o->snapshot = 1; break;
		case 'T': o->trigger = optarg; break;
		case 'E': o->every = strtoull(optarg, NULL, 0); break;
		case 'M': o->max_snaps = strtoull(optarg, NULL, 0); break;
		case 'C': o->control = optarg; break;
		case 'K': o->poke_ms = (unsigned)atoi(optarg); break;
		case 'N': o->no_poke_trigger = 1; break;
		case 'k': o->kcore = optarg ? optarg : "/proc"; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (o->pages == 0 || (o->pages & (o->pages - 1)) ||
	    o->aux_pages == 0 || (o->aux_pages & (o->aux_pages - 1))) {
		fprintf(stderr, "ptcapture: -m and --aux-pages must be powers of two\n");
		return -1;
	}
	if ((o->trigger || o->control) && !o->snapshot) {
		fprintf(stderr, "ptcapture: --trigger and --control need --snapshot\n");
		return -1;
	}
	if (o->control && strncmp(o->control, "fifo:", 5)) {
		fprintf(stderr, "ptcapture: --control takes fifo:PATH\n");
		return -1;
	}
	if (!o->every) {
		fprintf(stderr, "ptcapture: --trigger-every must be at least 1\n");
		return -1;
	}
	o->cmd = optind < argc ? argv + optind : NULL;
	return 0;
}

/* Everything the record loop and the snapshots share. */
struct app {
	struct opts o;
	struct sbevents *sb;
	struct auxpmu *ap;
	struct fence *fence;
	struct trigger *trig;
	struct recbuf *rb;
	char pmu[32], hook[64];
	uint64_t t_start;
	unsigned nsnap;
	uint64_t snap_requests, snap_failed;
};

/* kcore: copied (--kcore, readable), unreadable (--kcore), else absent or
 * not-used; what was copied and what was not. */
static void write_kcore_info(FILE *f, const struct opts *o, const struct rec *r,
			     const struct textmatch_counts *tc)
{
	struct kcopy_counts kn = { 0 };

	if (r->kc)
		kcopy_get_counts(r->kc, &kn);
	fprintf(f, "kcore=%s\n", r->kc && kcopy_readable(r->kc) ? "copied" :
		o->kcore ? "unreadable" :
		access("/proc/kcore", R_OK) ? "absent" : "not-used");
	if (o->kcore)
		fprintf(f, "kcore_path=%s/kcore\nkcore_ranges_copied=%" PRIu64 "\n"
			"kcore_bytes_copied=%" PRIu64 "\nkcore_pokes_changed=%" PRIu64 "\n"
			"kcore_ranges_versioned=%" PRIu64 "\n",
			o->kcore, kn.ranges, kn.bytes, kn.poke_changed,
			tc->rows_versioned_dropped);
	fprintf(f, "kcore_ranges_not_copied=%" PRIu64 "\n", r->kcore_missed + kn.missed);
}

static int write_info(const char *dir, const struct app *A, const struct rec *r,
		      const struct fence_counters *fc, const struct textmatch_counts *tc,
		      uint64_t t_start, uint64_t t_end, const char *extra)
{
	const struct opts *o = &A->o;
	struct auxring_stats as;
	char path[4096], cpu[256];
	struct utsname u;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/info", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -1;
	uname(&u);
	cpu_desc(cpu, sizeof(cpu));
	auxpmu_stats(A->ap, &as);
	fprintf(f, "tool=ptcapture\nversion=%s\nkernel=%s %s\nmachine=%s\ncpu=%s\nnr_cpus=%d\n",
		PTD_VERSION, u.release, u.version, u.machine, cpu, sbevents_ncpus(A->sb));
	fprintf(f, "pmu=%s\n", A->pmu);
	fprintf(f, "pmu_event=%s\n", A->ap ? auxpmu_desc(A->ap) : "-");
	fprintf(f, "clock=CLOCK_MONOTONIC\nclockid=%d\n", SB_CLOCKID);
	fprintf(f, "time_start=%" PRIu64 "\ntime_end=%" PRIu64 "\n", t_start, t_end);
	fprintf(f, "mode=%s\n", o->snapshot ? "snapshot" : "full");
	fprintf(f, "sideband_ring_pages=%u\nswitch_ring_pages=%u\n", o->pages, o->pages * 4);
	fprintf(f, "fence_hook=%s\n", A->hook);
	fprintf(f, "sideband_records=%" PRIu64 "\nsideband_records_split=%" PRIu64 "\n"
		"sideband_corrupt_bytes=%" PRIu64 "\nsideband_lost_unreported=%" PRIu64 "\n"
		"sideband_records_trimmed=%" PRIu64 "\n",
		r->records, r->sbst.joined, r->sbst.corrupt_bytes, r->sbst.lost_pending,
		r->sbst.trimmed);
	fprintf(f, "ksymbol_records=%" PRIu64 "\nbpf_event_records=%" PRIu64 "\n"
		"text_poke_records=%" PRIu64 "\nmmap2_records=%" PRIu64 "\n"
		"switch_records=%" PRIu64 "\n",
		r->by_type[PERF_RECORD_KSYMBOL], r->by_type[PERF_RECORD_BPF_EVENT],
		r->by_type[PERF_RECORD_TEXT_POKE], r->by_type[PERF_RECORD_MMAP2],
		r->by_type[PERF_RECORD_SWITCH_CPU_WIDE]);
	fprintf(f, "lost_records=%" PRIu64 "\nlost_events=%" PRIu64 "\nlost_samples=%" PRIu64 "\n",
		r->lost_records, r->lost_events, r->lost_samples);
	fprintf(f, "aux_bytes=%" PRIu64 "\naux_records=%" PRIu64 "\naux_truncated=%" PRIu64
		"\naux_overwrite=%" PRIu64 "\naux_partial=%" PRIu64 "\naux_collision=%" PRIu64
		"\naux_overrun_bytes=%" PRIu64 "\naux_lost_records=%" PRIu64 "\naux_lost_events=%"
		PRIu64 "\n", as.aux_bytes, as.aux_records, as.aux_truncated, as.aux_overwrite,
		as.aux_partial, as.aux_collision, as.aux_overrun, as.lost_records, as.lost_events);
	write_kcore_info(f, o, r, tc);
	fprintf(f, "prog_loads=%" PRIu64 "\nprog_info_copies=%" PRIu64 "\n"
		"prog_info_gone=%" PRIu64 "\nprog_info_errors=%" PRIu64 "\n",
		r->prog_loads, r->info_copies, r->info_gone, r->info_errors);
	fprintf(f, "fence_progs=%" PRIu64 "\nfence_images=%" PRIu64 "\nfence_chunks=%" PRIu64 "\n"
		"fence_drops=%" PRIu64 "\nfence_images_too_many=%" PRIu64 "\n"
		"fence_images_complete=%" PRIu64 "\nfence_images_incomplete=%" PRIu64 "\n",
		fc->progs, fc->images, fc->chunks, fc->drops, fc->too_many,
		fc->delivered, fc->incomplete);
	fprintf(f, "bpf_images=%" PRIu64 "\nbpf_images_prog_info=%" PRIu64 "\n"
		"bpf_images_fence=%" PRIu64 "\nbpf_images_both=%" PRIu64 "\n"
		"bpf_images_both_identical=%" PRIu64 "\nbpf_images_both_differ=%" PRIu64 "\n"
		"texts_missed=%" PRIu64 "\nfence_unmatched=%" PRIu64 "\n"
		"prog_info_unmatched=%" PRIu64 "\nother_ksyms_range_only=%" PRIu64 "\n"
		"text_rows=%" PRIu64 "\n",
		tc->instances, tc->with_prog_info, tc->with_fence, tc->with_both,
		tc->both_identical, tc->both_differ, tc->missed, tc->fence_unmatched,
		tc->info_unmatched, tc->other_ksyms, tc->rows);
	if (!o->snapshot)
		fprintf(f, "jit_poll_interval_ms=%u\njit_trigger=%s\njit_trigger_events=%" PRIu64
			"\njit_rewrites_transient=%" PRIu64 "\njit_tracked_progs=%" PRIu64 "\n"
			"jit_recopy_polls=%" PRIu64 "\njit_recopy_errors=%" PRIu64 "\n"
			"jit_rewrites_detected=%" PRIu64 "\njit_tracked_images=%" PRIu64 "\n"
			"jit_version_rows=%" PRIu64 "\njit_uncertain_rows=%" PRIu64 "\n"
			"jit_uncertain_ns=%" PRIu64 "\njit_late_polls=%" PRIu64 "\n",
			r->poke_ms, r->poke_trigger, r->jpc.trigger_events, r->jpc.transient,
			r->jpc.tracked, r->jpc.polls, r->jpc.errors, r->jpc.rewrites,
			tc->tracked, tc->versions, tc->uncertain_rows, tc->uncertain_ns,
			r->jpc.late);
	if (extra)
		fputs(extra, f);
	return fclose(f);
}

/* A capture directory being written: DIR/perf.data with the attrs of the
 * sideband (and AUX) events, DIR/bpf, DIR/kallsyms. */
static int out_open(struct app *A, struct rec *r, const char *dir, int force,
		    struct synth_kallsyms **ks)
{
	char path[4096], err[1024] = "";

	if (mkdir(dir, 0700) && !(errno == EEXIST && force)) {
		fprintf(stderr, "ptcapture: cannot create %s: %s%s\n", dir, strerror(errno),
			errno == EEXIST ? " (remove it, or use -f)" : "");
		return -1;
	}
	snprintf(r->bpfdir, sizeof(r->bpfdir), "%s/bpf", dir);
	if (mkdir(r->bpfdir, 0700) && errno != EEXIST) {
		fprintf(stderr, "ptcapture: %s: %s\n", r->bpfdir, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	if (synth_kallsyms_copy(path, ks, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	if (perfwrite_open(&r->pw, path, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		return -1;
	}
	for (int k = 0; k < SB_NKIND + 1; k++) {
		const struct perf_event_attr *pa;
		uint8_t attr[128];
		const uint64_t *ids;
		size_t nids;
		uint32_t sz = sizeof(attr);

		if (k == SB_NKIND && !A->ap)
			break;
		pa = k < SB_NKIND ? sbevents_attr(A->sb, k) : auxpmu_attr(A->ap);
		nids = k < SB_NKIND ? sbevents_ids(A->sb, k, &ids) : auxpmu_ids(A->ap, &ids);
		/* perf 6.1 reads attrs of at most 128 bytes; ours fit. */
		memset(attr, 0, sizeof(attr));
		memcpy(attr, pa, sizeof(*pa) < sizeof(attr) ? sizeof(*pa) : sizeof(attr));
		memcpy(attr + 4, &sz, 4);
		if (perfwrite_add_attr(r->pw, attr, ids, nids,
				       k == SB_MAIN ? "dummy:u" : k == SB_SWITCH ? "dummy:u-switch" : A->pmu)) {
			fprintf(stderr, "ptcapture: perf.data attrs rejected\n");
			return -1;
		}
	}
	if (A->ap && auxpmu_write_info(A->ap, r->pw) == -ENOTSUP)
		fprintf(stderr, "ptcapture: warning: no AUXTRACE_INFO for %s yet: perf cannot "
			"decode this AUX data\n", A->pmu);
	if (perfwrite_flush(r->pw)) /* readable from now on, even if killed */
		fprintf(stderr, "ptcapture: warning: perf.data header not written\n");
	return 0;
}

/* The state at start: KSYMBOL/BPF_EVENT of loaded programs (+ processes). */
static int out_synth(struct app *A, struct rec *r, const struct synth_kallsyms *ks)
{
	const uint64_t *ids;

	sbevents_ids(A->sb, SB_MAIN, &ids);
	if (synth_bpf_progs(ks, ids[0], on_synth, r) < 0 ||
	    (A->o.all && synth_procs(ids[0], on_synth, r) < 0) || r->failed) {
		fprintf(stderr, "ptcapture: synthesizing the initial state failed%s%s\n",
			r->failed ? ": " : "", r->errmsg);
		return -1;
	}
	return perfwrite_finished_round(r->pw);
}

/* Text store, features, header, info. */
static int out_close(struct app *A, struct rec *r, const char *dir,
		     const struct fence_counters *fc, struct textmatch_counts *tc,
		     uint64_t t_start, uint64_t t_end, const char *extra)
{
	char path[4096], err[1024] = "";
	struct utsname u;
	const char *argv0[] = { "ptcapture", "record" };
	int rc;

	snprintf(path, sizeof(path), "%s/text", dir);
	if (textmatch_write(r->tm, path, tc, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		return -1;
	}
	uname(&u);
	perfwrite_feat_string(r->pw, PD_FEAT_OSRELEASE, u.release);
	perfwrite_feat_string(r->pw, PD_FEAT_ARCH, u.machine);
	perfwrite_feat_string(r->pw, PD_FEAT_HOSTNAME, u.nodename);
	perfwrite_feat_nrcpus(r->pw, (uint32_t)sysconf(_SC_NPROCESSORS_CONF),
			      (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
	perfwrite_feat_cmdline(r->pw, 2, argv0);
	perfwrite_feat_u64(r->pw, PD_FEAT_CLOCKID, 1); /* clock resolution, ns */
	rc = perfwrite_close(r->pw, err, sizeof(err));
	r->pw = NULL;
	if (rc) {
		fprintf(stderr, "ptcapture: perf.data: %s\n", err);
		return -1;
	}
	if (write_info(dir, A, r, fc, tc, t_start, t_end, extra)) {
		fprintf(stderr, "ptcapture: writing %s/info failed\n", dir);
		return -1;
	}
	return 0;
}

static int collect(void *ctx, const struct perf_event_header *rec, int cpu)
{
	return recbuf_add(ctx, rec, sbevents_time(rec), cpu);
}

/* --kcore in a snapshot: the copy is taken now, so it holds what is there
 * now; ranges the snapshot's records unregistered before are counted, not
 * copied (kcopy_finish). */
static int snapshot_kcore(const struct app *A, struct rec *r)
{
	char err[512];

	if (!A->o.kcore)
		return 0;
	if (!(r->kc = kcopy_open(A->o.kcore, err, sizeof(err))) || kcopy_start(r->kc)) {
		fprintf(stderr, "ptcapture: snapshot: --kcore: out of memory\n");
		return -1;
	}
	if (!kcopy_readable(r->kc))
		fprintf(stderr, "ptcapture: snapshot: --kcore: %s (counted in info)\n", err);
	return 0;
}

/* Flight recorder: writes DIR/snap-N from the backward rings, the AUX
 * areas and the fence copies kept. */
static int take_snapshot(struct app *A, struct rec *live, const char *why,
			 const struct trigger_event *te)
{
	struct rec r = { 0 };
	struct synth_kallsyms *ks = NULL;
	struct fence_counters fc = { 0 };
	struct textmatch_counts tc = { 0 };
	char dir[4200], extra[1024];
	uint64_t t0 = now_ns(), hits = 0, fires = 0, drops = 0, first = 0, last = 0;
	size_t n;
	int rc = -1;

	snprintf(dir, sizeof(dir), "%s/snap-%u", A->o.out, A->nsnap + 1);
	recbuf_clear(A->rb);
	sbevents_pause(A->sb, 1);
	if (sbevents_read_backward(A->sb, collect, A->rb) < 0)
		fprintf(stderr, "ptcapture: warning: a corrupt sideband ring was cut short\n");
	sbevents_pause(A->sb, 0);
	recbuf_sort(A->rb);
	if (!(r.tm = textmatch_new()) || out_open(A, &r, dir, 0, &ks) ||
	    snapshot_kcore(A, &r) || out_synth(A, &r, ks))
		goto out;
	n = recbuf_count(A->rb);
	for (size_t i = 0; i < n && !r.failed; i++) {
		int cpu;
		const struct perf_event_header *h = recbuf_get(A->rb, i, &cpu);

		if (!first)
			first = sbevents_time(h);
		last = sbevents_time(h);
		on_record(&r, h, cpu);
	}
	if (A->ap && auxpmu_snapshot(A->ap, r.pw))
		fail(&r, "writing the AUX snapshot failed");
	for (size_t i = 0; i < copystore_count(live->cs) && !r.failed; i++)
		on_fence_image(&r, copystore_get(live->cs, i));
	if (r.failed) {
		fprintf(stderr, "ptcapture: snapshot: %s\n", r.errmsg);
		goto out;
	}
	if (r.kc && kcopy_finish(r.kc, r.tm)) {
		fprintf(stderr, "ptcapture: snapshot: --kcore: out of memory\n");
		goto out;
	}
	fence_get_counters(A->fence, &fc);
	if (A->trig)
		trigger_counts(A->trig, &hits, &fires, &drops);
	snprintf(extra, sizeof(extra),
		 "snapshot=%u\nsnapshot_reason=%s\nsnapshot_time=%" PRIu64 "\n"
		 "snapshot_window_first=%" PRIu64 "\nsnapshot_window_last=%" PRIu64 "\n"
		 "trigger_mechanism=%s\n"
		 "trigger_time=%" PRIu64 "\ntrigger_pid=%u\ntrigger_tid=%u\ntrigger_ip=%#" PRIx64 "\n"
		 "trigger_hits=%" PRIu64 "\ntrigger_fires=%" PRIu64 "\ntrigger_drops=%" PRIu64 "\n"
		 "fence_copies_kept=%zu\nfence_copies_dropped=%" PRIu64 "\n",
		 A->nsnap + 1, why, t0, first, last, A->trig ? trigger_mechanism(A->trig) : "none",
		 te ? (uint64_t)te->time : 0, te ? te->pid : 0,
		 te ? te->tid : 0, te ? (uint64_t)te->ip : 0, hits, fires, drops,
		 copystore_count(live->cs), copystore_dropped(live->cs));
	if (out_close(A, &r, dir, &fc, &tc, first, last, extra))
		goto out;
	A->nsnap++;
	fprintf(stderr, "ptcapture: snapshot %s (%s): %zu sideband records, %" PRIu64
		" BPF images, %.1f ms\n", dir, why, n, tc.instances, (now_ns() - t0) / 1e6);
	rc = 0;
out:
	if (rc)
		A->snap_failed++;
	if (r.pw) {
		char err[256];

		perfwrite_close(r.pw, err, sizeof(err));
	}
	textmatch_free(r.tm);
	kcopy_free(r.kc);
	synth_kallsyms_free(ks);
	return rc;
}

struct pending_trig {
	int n;
	struct trigger_event last;
};

static void on_trigger(void *ctx, const struct trigger_event *e)
{
	struct pending_trig *p = ctx;

	p->n++;
	p->last = *e;
}

/* Reads control commands; returns 1 for "snapshot", 2 for "stop". */
static int read_control(int fd, char *buf, size_t *len, size_t cap)
{
	ssize_t n = read(fd, buf + *len, cap - *len - 1);
	int what = 0;
	char *nl;

	if (n <= 0)
		return 0;
	*len += (size_t)n;
	buf[*len] = 0;
	while ((nl = strchr(buf, '\n'))) {
		*nl = 0;
		if (!strcmp(buf, "snapshot"))
			what |= 1;
		else if (!strcmp(buf, "stop"))
			what |= 2;
		else if (*buf)
			fprintf(stderr, "ptcapture: control: unknown command '%s' (snapshot, stop)\n", buf);
		*len -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *len + 1);
	}
	if (*len >= cap - 1)
		*len = 0;
	return what;
}

/* The trigger in pid (every process when 0), and which mechanism it got. */
static int open_trigger(struct app *A, pid_t pid, struct pending_trig *pt, char *err,
			size_t errlen)
{
	struct trigger_spec ts = { .every = A->o.every };

	if (trigger_parse(A->o.trigger, &ts, err, errlen) ||
	    trigger_open(&ts, pid, on_trigger, pt, &A->trig, err, errlen))
		return -1;
	fprintf(stderr, "ptcapture: trigger: %s, snapshot every %" PRIu64 " hit(s) (%s)\n",
		trigger_desc(A->trig), ts.every, trigger_why(A->trig));
	return 0;
}

/* Starts CMD.  With a trigger, the child stops at its exec so that the
 * breakpoint goes in before it runs a single instruction. */
static pid_t start_child(struct app *A, struct pending_trig *pt, char *err, size_t errlen)
{
	pid_t child = fork();
	int st;

	if (child < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGUSR2, SIG_DFL);
		if (A->o.trigger)
			ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(A->o.cmd[0], A->o.cmd);
		fprintf(stderr, "ptcapture: %s: %s\n", A->o.cmd[0], strerror(errno));
		_exit(127);
	}
	if (A->o.trigger) {
		if (waitpid(child, &st, 0) != child || !WIFSTOPPED(st)) {
			snprintf(err, errlen, "%s did not start", A->o.cmd[0]);
			return -1;
		}
		if (open_trigger(A, child, pt, err, errlen)) {
			kill(child, SIGKILL);
			ptrace(PTRACE_DETACH, child, NULL, NULL);
			waitpid(child, NULL, 0);
			return -1;
		}
		ptrace(PTRACE_DETACH, child, NULL, NULL);
	}
	return child;
}

/* What the steps of record() share. */
struct session {
	struct app A;
	struct rec r;               /* the live recording */
	struct synth_kallsyms *ks;
	struct pending_trig pt;
	char err[1024];             /* a failed step's message */
	char ctl[512];              /* control commands read, not yet whole */
	size_t ctllen;
	int epfd, ctlfd, child_status;
	pid_t child;
	uint64_t deadline;          /* --duration, or 0 */
};

/* Names the PMU and warns of what is missing for a complete capture;
 * returns the fence's bpf_prog_free_deferred address (0: unknown). */
static uint64_t check_environment(struct app *A, const char *pmu)
{
	uint64_t free_deferred;

	snprintf(A->pmu, sizeof(A->pmu), "%s", pmu ? pmu : "none");
	snprintf(A->hook, sizeof(A->hook), "none");
	if (!pmu)
		fprintf(stderr, "ptcapture: no intel_pt or cs_etm PMU: recording sideband and "
			"dynamic text only\n");
	free_deferred = synth_kallsyms_lookup("bpf_prog_free_deferred");
	if (!free_deferred)
		fprintf(stderr, "ptcapture: warning: bpf_prog_free_deferred not in /proc/kallsyms "
			"(kernel.kptr_restrict?)\n");
	if (access("/proc/kcore", R_OK) && !A->o.kcore)
		fprintf(stderr, "ptcapture: no /proc/kcore: out-of-line kernel text and TEXT_POKE "
			"ranges are recorded as ranges only (counted in info)\n");
	return free_deferred;
}

/* --snapshot: DIR, and the store of records and fence copies kept. */
static int open_flight_recorder(struct session *S)
{
	const struct opts *o = &S->A.o;

	if (!o->snapshot)
		return 0;
	if (mkdir(o->out, 0700) && !(errno == EEXIST && o->force)) {
		fprintf(stderr, "ptcapture: cannot create %s: %s\n", o->out, strerror(errno));
		return -1;
	}
	if (!(S->r.cs = copystore_new(64u << 20)) || !(S->A.rb = recbuf_new()))
		return -1;
	return 0;
}

/* The text matcher, and the re-copying of programs whose tail-call sites
 * are re-patched (not in --snapshot). */
static int open_text(struct session *S)
{
	struct rec *r = &S->r;

	if (!(r->tm = textmatch_new()))
		return -1;
	r->poke_ms = S->A.o.snapshot ? 0 : S->A.o.poke_ms;
	snprintf(r->poke_trigger, sizeof(r->poke_trigger), "none");
	if (!r->poke_ms)
		return 0;
	if (!(r->jp = jitpoll_new(r->tm, (uint64_t)r->poke_ms * 1000000ull)))
		return -1;
	if (S->A.o.no_poke_trigger)
		snprintf(r->poke_trigger, sizeof(r->poke_trigger), "none (--no-poke-trigger)");
	else if (jitpoll_trigger_open(r->jp, S->err, sizeof(S->err))) {
		fprintf(stderr, "ptcapture: no trigger for tail-call rewrites (%s): "
			"re-copying every %u ms only\n", S->err, r->poke_ms);
		snprintf(r->poke_trigger, sizeof(r->poke_trigger), "none (%.100s)", S->err);
	} else {
		snprintf(r->poke_trigger, sizeof(r->poke_trigger), "tp_btf/sys_enter+sys_exit");
	}
	return 0;
}

/* The fence, the sideband events and the AUX PMU, in that order. */
static int open_sessions(struct session *S, const char *pmu, uint64_t free_deferred)
{
	struct app *A = &S->A;
	const struct opts *o = &A->o;

	if (fence_open(free_deferred, on_fence_image, &S->r, &A->fence, S->err, sizeof(S->err))) {
		fprintf(stderr, "ptcapture: cannot load the BPF text fence (%s)%s\n", S->err,
			strstr(S->err, "Operation not permitted") ?
			": needs CAP_BPF and CAP_PERFMON (or root)" : "");
		return -1;
	}
	snprintf(A->hook, sizeof(A->hook), "%s", fence_hook(A->fence));
	fprintf(stderr, "ptcapture: text fence on %s\n", A->hook);
	/* Context switches are the bulk of the sideband on a busy machine. */
	if (sbevents_open(o->pages, o->pages * 4, o->snapshot, &A->sb, S->err, sizeof(S->err))) {
		fprintf(stderr, "ptcapture: %s\n", S->err);
		return -1;
	}
	if (pmu) {
		struct auxpmu_opts ao = { .pmu = pmu, .terms = o->pmu_config, .data_pages = 16,
					  .aux_pages = o->aux_pages, .snapshot = o->snapshot,
					  .like = sbevents_attr(A->sb, SB_MAIN) };

		if (auxpmu_open(&ao, &A->ap, S->err, sizeof(S->err))) {
			fprintf(stderr, "ptcapture: %s\n", S->err);
			return -1;
		}
		fprintf(stderr, "ptcapture: recording %s\n", auxpmu_desc(A->ap));
	}
	return 0;
}

/* --kcore: the copy of the kernel text and modules now, the ranges the
 * state at start and later records name as they come (kcopy.c). */
static int open_kcore(struct session *S)
{
	const char *dir = S->A.o.kcore;

	if (!dir)
		return 0;
	S->r.kc = kcopy_open(dir, S->err, sizeof(S->err));
	if (!S->r.kc || kcopy_start(S->r.kc)) {
		fprintf(stderr, "ptcapture: --kcore: out of memory\n");
		return -1;
	}
	if (kcopy_readable(S->r.kc))
		fprintf(stderr, "ptcapture: --kcore: copying kernel text from %s\n",
			kcopy_path(S->r.kc));
	else
		fprintf(stderr, "ptcapture: --kcore: %s: kernel text, modules, "
			"out-of-line kernel text and TEXT_POKE ranges are not copied "
			"(counted in info: kcore_ranges_not_copied)\n", S->err);
	return 0;
}

/* Without --snapshot, DIR is written from the start: perf.data with the
 * state at start, and the text store spooled as it comes. */
static int start_output(struct session *S)
{
	struct app *A = &S->A;
	char path[4096];

	A->t_start = now_ns();
	if (A->o.snapshot)
		return 0;
	if (out_open(A, &S->r, A->o.out, A->o.force, &S->ks) || open_kcore(S) ||
	    out_synth(A, &S->r, S->ks))
		return -1;
	snprintf(path, sizeof(path), "%s/text", A->o.out);
	if (textmatch_spool(S->r.tm, path)) {
		fprintf(stderr, "ptcapture: cannot create %s\n", path);
		return -1;
	}
	return 0;
}

/* Signals, CMD (or the system-wide trigger) and the --duration deadline. */
static int start_workload(struct session *S)
{
	struct app *A = &S->A;
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (A->o.cmd) {
		S->child = start_child(A, &S->pt, S->err, sizeof(S->err));
		if (S->child < 0) {
			fprintf(stderr, "ptcapture: %s\n", S->err);
			return -1;
		}
	} else if (A->o.trigger) {
		if (open_trigger(A, 0, &S->pt, S->err, sizeof(S->err))) {
			fprintf(stderr, "ptcapture: %s\n", S->err);
			return -1;
		}
	}
	if (A->o.duration > 0)
		S->deadline = now_ns() + (uint64_t)(A->o.duration * 1e9);
	return 0;
}

/* One epoll set for the rings, the fence, the triggers and --control. */
static int open_epoll(struct session *S)
{
	struct app *A = &S->A;
	struct jitpoll *jp = S->r.jp;
	struct epoll_event ev = { .events = EPOLLIN };
	const char *fp;

	S->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (S->epfd < 0 || (!A->o.snapshot && sbevents_add_to_epoll(A->sb, S->epfd)) ||
	    (A->ap && auxpmu_add_to_epoll(A->ap, S->epfd)) ||
	    epoll_ctl(S->epfd, EPOLL_CTL_ADD, fence_epoll_fd(A->fence), &ev) ||
	    (jp && jitpoll_trigger_fd(jp) >= 0 &&
	     epoll_ctl(S->epfd, EPOLL_CTL_ADD, jitpoll_trigger_fd(jp), &ev)) ||
	    (A->trig && epoll_ctl(S->epfd, EPOLL_CTL_ADD, trigger_epoll_fd(A->trig), &ev))) {
		perror("ptcapture: epoll");
		return -1;
	}
	if (!A->o.control)
		return 0;
	fp = A->o.control + 5;
	if (mkfifo(fp, 0600) && errno != EEXIST) {
		fprintf(stderr, "ptcapture: %s: %s\n", fp, strerror(errno));
		return -1;
	}
	/* O_RDWR: our own writer end keeps EOF from spinning */
	S->ctlfd = open(fp, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (S->ctlfd < 0 || epoll_ctl(S->epfd, EPOLL_CTL_ADD, S->ctlfd, &ev)) {
		fprintf(stderr, "ptcapture: control %s: %s\n", fp, strerror(errno));
		return -1;
	}
	return 0;
}

/* How long to wait for events: at most 50 ms, less when a tracked
 * program is due for its re-copy. */
static int wait_ms(const struct rec *r, uint64_t next_poll)
{
	uint64_t now;
	int ms;

	if (!r->jp || !jitpoll_active(r->jp))
		return 50;
	now = now_ns();
	ms = next_poll <= now ? 0 : (int)((next_poll - now + 999999) / 1000000);
	return ms > 50 ? 50 : ms;
}

/* A full capture: rings and AUX into perf.data, re-copies of tracked
 * programs when due. */
static void drain_full(struct session *S, uint64_t *next_poll)
{
	struct app *A = &S->A;
	struct rec *r = &S->r;

	if (sbevents_drain(A->sb, on_record, r) < 0 && !r->failed)
		fprintf(stderr, "ptcapture: warning: a corrupt sideband ring was skipped\n");
	if (A->ap && auxpmu_drain(A->ap, r->pw, on_record, r, 0))
		fail(r, "writing AUX data failed");
	perfwrite_finished_round(r->pw);
	/* bounded memory and a readable file if killed */
	if (perfwrite_flush(r->pw))
		fail(r, "writing perf.data failed");
	if (r->jp) {
		int tr = jitpoll_trigger_drain(r->jp);

		if (tr < 0)
			fail(r, "reading the poke trigger ring failed");
		if (tr > 0)
			*next_poll = 0;  /* a tracked image changed */
	}
	if (r->jp && jitpoll_active(r->jp) && now_ns() >= *next_poll) {
		if (jitpoll_poll(r->jp) < 0)
			fail(r, "out of memory");
		*next_poll = now_ns() + (uint64_t)r->poke_ms * 1000000ull;
	}
	textmatch_flush(r->tm);
}

/* The flight recorder: a snapshot on a trigger, SIGUSR2 or a control
 * command. */
static void drain_snapshot(struct session *S)
{
	struct app *A = &S->A;
	int want_snap = 0;

	if (A->ap)
		auxpmu_drain(A->ap, NULL, NULL, NULL, 0); /* counts AUX flags */
	if (A->trig && trigger_poll(A->trig) < 0)
		fail(&S->r, "reading the trigger ring failed");
	if (S->pt.n) {
		A->snap_requests += (uint64_t)S->pt.n;
		S->pt.n = 0;
		want_snap = 1;
	}
	if (snap_signal) {
		snap_signal = 0;
		A->snap_requests++;
		want_snap = 2;
	}
	if (S->ctlfd >= 0) {
		int what = read_control(S->ctlfd, S->ctl, &S->ctllen, sizeof(S->ctl));

		if (what & 1) {
			A->snap_requests++;
			want_snap = 3;
		}
		if (what & 2)
			stop_signal = SIGTERM;
	}
	if (want_snap && (!A->o.max_snaps || A->nsnap < A->o.max_snaps))
		take_snapshot(A, &S->r, want_snap == 1 ? "trigger" :
			      want_snap == 2 ? "SIGUSR2" : "control",
			      want_snap == 1 ? &S->pt.last : NULL);
}

/* 1 when the loop is over.  CMD exiting, a signal or the deadline starts
 * the linger (and ends CMD); its end or a second signal ends the loop. */
static int loop_over(struct session *S, uint64_t *linger_end)
{
	uint64_t now = now_ns();

	if (*linger_end)
		return now >= *linger_end || stop_signal;
	if (S->child > 0 && waitpid(S->child, &S->child_status, WNOHANG) == S->child)
		S->child = -1, *linger_end = 1;
	if (stop_signal || (S->deadline && now >= S->deadline))
		*linger_end = 1;
	if (*linger_end) {
		stop_signal = 0;
		if (S->child > 0) {
			kill(S->child, SIGTERM);
			waitpid(S->child, &S->child_status, 0);
			S->child = -1;
		}
		*linger_end = now_ns() + (uint64_t)S->A.o.linger_ms * 1000000ull;
	}
	return 0;
}

/* Main loop; then linger so deferred frees (tens of ms after the
 * program's last reference goes) reach the fence. */
static void run_loop(struct session *S)
{
	uint64_t linger_end = 0, next_poll = 0;

	for (;;) {
		struct epoll_event evs[16];

		epoll_wait(S->epfd, evs, 16, wait_ms(&S->r, next_poll));
		if (fence_drain(S->A.fence) < 0)
			fail(&S->r, "reading the fence ring failed");
		if (!S->A.o.snapshot)
			drain_full(S, &next_poll);
		else
			drain_snapshot(S);
		if (S->r.failed || loop_over(S, &linger_end))
			break;
	}
}

/* --snapshot at the end: how many were written; 1 if any failed. */
static int report_snapshots(struct session *S)
{
	struct app *A = &S->A;
	struct fence_counters fc = { 0 };
	uint64_t hits = 0, fires = 0, drops = 0;

	fence_close(A->fence, &fc);
	A->fence = NULL;
	if (A->trig)
		trigger_counts(A->trig, &hits, &fires, &drops);
	fprintf(stderr, "ptcapture: %s: %u snapshot(s) written (%" PRIu64 " requested, %"
		PRIu64 " failed); trigger hits %" PRIu64 "\n", A->o.out, A->nsnap,
		A->snap_requests, A->snap_failed, hits);
	if (A->trig && !hits)
		fprintf(stderr, "ptcapture: warning: the %s was never hit: the function "
			"did not run there\n", trigger_desc(A->trig));
	return A->snap_failed ? 1 : 0;
}

/* Stop the rings, read what is in them, then report as LOST whatever
 * the kernel dropped without a LOST record in a ring. */
static void drain_at_end(struct session *S)
{
	struct app *A = &S->A;
	struct rec *r = &S->r;

	if (sbevents_enable(A->sb, 0))
		fprintf(stderr, "ptcapture: warning: disabling the sideband events: %s\n",
			strerror(errno));
	if (sbevents_drain(A->sb, on_record, r) < 0 && !r->failed)
		fprintf(stderr, "ptcapture: warning: a corrupt sideband ring was skipped\n");
	/* Last re-copy: how the tracked images look at the end. */
	if (r->jp && jitpoll_trigger_drain(r->jp) < 0)
		fail(r, "reading the poke trigger ring failed");
	if (r->jp && !r->failed && jitpoll_poll(r->jp) < 0)
		fail(r, "out of memory");
	if (r->jp)
		jitpoll_counts(r->jp, &r->jpc);
	if (!r->failed && sbevents_flush_lost(A->sb, on_record, r, now_ns()) == -1)
		fail(r, "reading the sideband events' lost counts failed: %s", strerror(errno));
	if (A->ap && auxpmu_drain(A->ap, r->pw, on_record, r, 1))
		fail(r, "writing AUX data failed");
	perfwrite_finished_round(r->pw);
}

static void report_capture(const struct session *S, const struct fence_counters *fc,
			   const struct textmatch_counts *tc)
{
	const struct rec *r = &S->r;

	fprintf(stderr, "ptcapture: %s: %" PRIu64 " sideband records (%" PRIu64 " lost), "
		"%" PRIu64 " BPF images: %" PRIu64 " by prog-info, %" PRIu64 " by fence "
		"(%" PRIu64 " both, %" PRIu64 " differ), %" PRIu64 " missed; fence drops %" PRIu64 "\n",
		S->A.o.out, r->records, r->lost_events, tc->instances, tc->with_prog_info,
		tc->with_fence, tc->with_both, tc->both_differ, tc->missed, fc->drops);
	if (r->jpc.tracked)
		fprintf(stderr, "ptcapture: %" PRIu64 " program(s) with tail-call sites re-copied "
			"%" PRIu64 " times: %" PRIu64 " in-place rewrite(s), %" PRIu64 " uncertain "
			"window(s), %.3f ms in all\n", r->jpc.tracked, r->jpc.polls, r->jpc.rewrites,
			tc->uncertain_rows, tc->uncertain_ns / 1e6);
}

/* A full capture at the end: the last of the rings, then the text store,
 * perf.data's header and info. */
static int finish_capture(struct session *S)
{
	struct app *A = &S->A;
	struct fence_counters fc = { 0 };
	struct textmatch_counts tc = { 0 };
	uint64_t t_end = now_ns();

	fence_close(A->fence, &fc);
	A->fence = NULL;
	drain_at_end(S);
	if (S->r.failed) {
		fprintf(stderr, "ptcapture: %s\n", S->r.errmsg);
		return -1;
	}
	sbevents_stats(A->sb, &S->r.sbst);
	if (S->r.kc && kcopy_finish(S->r.kc, S->r.tm)) {
		fprintf(stderr, "ptcapture: --kcore: out of memory\n");
		return -1;
	}
	if (out_close(A, &S->r, A->o.out, &fc, &tc, A->t_start, t_end, NULL))
		return -1;
	report_capture(S, &fc, &tc);
	return 0;
}

static void close_session(struct session *S)
{
	struct app *A = &S->A;

	if (S->child > 0) {
		kill(S->child, SIGTERM);
		waitpid(S->child, NULL, 0);
	}
	if (S->epfd >= 0)
		close(S->epfd);
	if (S->ctlfd >= 0)
		close(S->ctlfd);
	trigger_close(A->trig);
	if (A->fence)
		fence_close(A->fence, NULL);
	if (S->r.pw)
		perfwrite_close(S->r.pw, S->err, sizeof(S->err));
	jitpoll_free(S->r.jp);
	textmatch_free(S->r.tm);
	kcopy_free(S->r.kc);
	copystore_free(S->r.cs);
	recbuf_free(A->rb);
	auxpmu_close(A->ap);
	sbevents_close(A->sb);
	synth_kallsyms_free(S->ks);
}

static int record(int argc, char **argv)
{
	struct session S = { .epfd = -1, .ctlfd = -1, .child = -1 };
	const struct opts *o = &S.A.o;
	const char *pmu = auxpmu_present();
	uint64_t free_deferred;
	int rc = 1;

	if (parse(argc, argv, &S.A.o))
		return 2;
	if (check_privileges())
		return 1;
	free_deferred = check_environment(&S.A, pmu);
	umask(077);
	/* The fence first (its loader's probe programs come and go before
	 * anything can copy them), then the sideband, then the state at start:
	 * a program loaded meanwhile is in both, which textmatch merges. */
	if (open_flight_recorder(&S) || open_text(&S) ||
	    open_sessions(&S, pmu, free_deferred) || start_output(&S) ||
	    start_workload(&S) || open_epoll(&S))
		goto out;
	run_loop(&S);
	if (!o->snapshot && finish_capture(&S))
		goto out;
	rc = o->snapshot ? report_snapshots(&S) : 0;
	if (WIFEXITED(S.child_status) && WEXITSTATUS(S.child_status))
		rc = WEXITSTATUS(S.child_status);
out:
	close_session(&S);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "record")) {
		usage(argc < 2 ? stderr : (strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) ? stderr : stdout);
		return argc < 2 || (strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) ? 2 : 0;
	}
	return record(argc - 1, argv + 1);
}
