/* SPDX-License-Identifier: MIT */
/*
 * ptcapture - records the sideband and the dynamic text a decoder needs
 * into a capture directory (docs/FORMATS.md).
 *
 *   ptcapture record [-o NAME.ptd] [-a] [--duration S] [-- CMD ARGS]
 *
 * Pieces: sbevents (per-CPU dummy events and their rings), synth (state at
 * start), bpfinfo (JIT images by prog id while a program is alive), fence
 * (JIT images copied by a BPF program when a program is freed), textmatch
 * (ties copies to KSYMBOL lifetimes, writes text/), perfwrite (perf.data).
 */
#include "bpfinfo.h"
#include <bpf/bpf.h>
#include "fence.h"
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTD_VERSION
#define PTD_VERSION "0"
#endif

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct rec {
	struct perfwrite *pw;
	struct textmatch *tm;
	char bpfdir[4096];
	uint64_t by_type[32];
	uint64_t records, lost_records, lost_events, lost_samples;
	uint64_t prog_loads, info_copies, info_gone, info_errors;
	uint64_t joined;      /* records split at a ring's end (sbevents) */
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

static void on_prog_load(struct rec *r, uint64_t time, uint32_t id, const uint8_t *tag)
{
	struct bpfinfo_prog p;
	char err[256] = "";
	int rc;

	r->prog_loads++;
	if (textmatch_prog_load(r->tm, time, id, tag))
		fail(r, "out of memory");
	rc = bpfinfo_copy(r->bpfdir, id, &p, err, sizeof(err));
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
	bpfinfo_free(&p);
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
	case PERF_RECORD_KSYMBOL:
		if (body > 24) {
			char name[256];
			size_t nl = body - 24 < sizeof(name) ? body - 24 : sizeof(name) - 1;
			uint16_t type, flags;

			memcpy(name, b + 24, nl);
			name[nl] = 0;
			memcpy(&type, b + 20, 2);
			memcpy(&flags, b + 22, 2);
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

static int has_pmu(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s", name);
	return access(path, F_OK) == 0;
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
		"The sideband is always system-wide; BPF text is kernel-global.\n");
}

struct opts {
	const char *out;
	int all, force;
	double duration;
	unsigned linger_ms, pages;
	char **cmd;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "output", required_argument, 0, 'o' },
		{ "duration", required_argument, 0, 'd' },
		{ "linger", required_argument, 0, 'l' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	o->out = "ptcapture.ptd";
	o->linger_ms = 300;
	o->pages = 256;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:afm:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; break;
		case 'a': o->all = 1; break;
		case 'f': o->force = 1; break;
		case 'd': o->duration = atof(optarg); break;
		case 'l': o->linger_ms = (unsigned)atoi(optarg); break;
		case 'm': o->pages = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (o->pages == 0 || (o->pages & (o->pages - 1))) {
		fprintf(stderr, "ptcapture: -m must be a power of two\n");
		return -1;
	}
	o->cmd = optind < argc ? argv + optind : NULL;
	return 0;
}

static int write_info(const char *dir, const struct rec *r, const struct opts *o,
		      const char *hook, const struct fence_counters *fc,
		      const struct textmatch_counts *tc, const char *pmu,
		      uint64_t t_start, uint64_t t_end, int ncpus)
{
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
	fprintf(f, "tool=ptcapture\nversion=%s\nkernel=%s %s\nmachine=%s\ncpu=%s\nnr_cpus=%d\n",
		PTD_VERSION, u.release, u.version, u.machine, cpu, ncpus);
	fprintf(f, "pmu=%s\n", pmu);
	fprintf(f, "clock=CLOCK_MONOTONIC\nclockid=%d\n", SB_CLOCKID);
	fprintf(f, "time_start=%" PRIu64 "\ntime_end=%" PRIu64 "\n", t_start, t_end);
	fprintf(f, "sideband_ring_pages=%u\nswitch_ring_pages=%u\n", o->pages, o->pages * 4);
	fprintf(f, "fence_hook=%s\n", hook);
	fprintf(f, "sideband_records=%" PRIu64 "\nsideband_records_split=%" PRIu64 "\n",
		r->records, r->joined);
	fprintf(f, "ksymbol_records=%" PRIu64 "\nbpf_event_records=%" PRIu64 "\n"
		"text_poke_records=%" PRIu64 "\nmmap2_records=%" PRIu64 "\n"
		"switch_records=%" PRIu64 "\n",
		r->by_type[PERF_RECORD_KSYMBOL], r->by_type[PERF_RECORD_BPF_EVENT],
		r->by_type[PERF_RECORD_TEXT_POKE], r->by_type[PERF_RECORD_MMAP2],
		r->by_type[PERF_RECORD_SWITCH_CPU_WIDE]);
	fprintf(f, "lost_records=%" PRIu64 "\nlost_events=%" PRIu64 "\nlost_samples=%" PRIu64 "\n",
		r->lost_records, r->lost_events, r->lost_samples);
	fprintf(f, "aux_truncated=0\n");
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
	return fclose(f);
}

static int record(int argc, char **argv)
{
	struct opts o = { 0 };
	struct rec r = { 0 };
	struct sbevents *sb = NULL;
	struct synth_kallsyms *ks = NULL;
	struct fence *fence = NULL;
	struct fence_counters fc = { 0 };
	struct textmatch_counts tc = { 0 };
	struct sigaction sa = { 0 };
	char err[1024] = "", path[4096], hook[64] = "none";
	const char *pmu = "none";
	uint64_t free_deferred = 0, t_start, t_end, deadline = 0;
	int epfd = -1, rc = 1, child_status = 0;
	pid_t child = -1;

	if (parse(argc, argv, &o))
		return 2;
	if (check_privileges())
		return 1;
	if (has_pmu("intel_pt") || has_pmu("cs_etm")) {
		pmu = has_pmu("intel_pt") ? "intel_pt" : "cs_etm";
		fprintf(stderr, "ptcapture: %s PMU present, but AUX recording is not implemented "
			"yet: recording sideband and dynamic text only\n", pmu);
	} else {
		fprintf(stderr, "ptcapture: no intel_pt or cs_etm PMU: recording sideband and "
			"dynamic text only\n");
	}
	if (mkdir(o.out, 0700) && !(errno == EEXIST && o.force)) {
		fprintf(stderr, "ptcapture: cannot create %s: %s%s\n", o.out, strerror(errno),
			errno == EEXIST ? " (remove it, or use -f)" : "");
		return 1;
	}
	umask(077);
	snprintf(r.bpfdir, sizeof(r.bpfdir), "%s/bpf", o.out);
	if (mkdir(r.bpfdir, 0700) && errno != EEXIST) {
		fprintf(stderr, "ptcapture: %s: %s\n", r.bpfdir, strerror(errno));
		return 1;
	}
	free_deferred = synth_kallsyms_lookup("bpf_prog_free_deferred");
	if (!free_deferred)
		fprintf(stderr, "ptcapture: warning: bpf_prog_free_deferred not in /proc/kallsyms "
			"(kernel.kptr_restrict?)\n");

	/* The fence first (its loader's probe programs come and go before
	 * anything can copy them), then the sideband, then the state at start:
	 * a program loaded meanwhile is in both, which textmatch merges. */
	if (!(r.tm = textmatch_new()))
		goto out;
	if (fence_open(free_deferred, on_fence_image, &r, &fence, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: cannot load the BPF text fence (%s)%s\n", err,
			strstr(err, "Operation not permitted") ?
			": needs CAP_BPF and CAP_PERFMON (or root)" : "");
		goto out;
	}
	snprintf(hook, sizeof(hook), "%s", fence_hook(fence));
	fprintf(stderr, "ptcapture: text fence on %s\n", hook);
	/* Context switches are the bulk of the sideband on a busy machine. */
	if (sbevents_open(o.pages, o.pages * 4, &sb, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/kallsyms", o.out);
	if (synth_kallsyms_copy(path, &ks, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		goto out;
	}

	snprintf(path, sizeof(path), "%s/perf.data", o.out);
	if (perfwrite_open(&r.pw, path, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		goto out;
	}
	for (int k = 0; k < SB_NKIND; k++) {
		uint8_t attr[128];
		const uint64_t *ids;
		size_t nids = sbevents_ids(sb, k, &ids);
		uint32_t sz = sizeof(attr);

		/* perf 6.1 reads attrs of at most 128 bytes; ours fit. */
		memset(attr, 0, sizeof(attr));
		memcpy(attr, sbevents_attr(sb, k),
		       sizeof(struct perf_event_attr) < sizeof(attr) ? sizeof(struct perf_event_attr) : sizeof(attr));
		memcpy(attr + 4, &sz, 4);
		if (perfwrite_add_attr(r.pw, attr, ids, nids, k == SB_MAIN ? "dummy:u" : "dummy:u-switch")) {
			fprintf(stderr, "ptcapture: perf.data attrs rejected\n");
			goto out;
		}
	}
	{
		const uint64_t *ids;

		sbevents_ids(sb, SB_MAIN, &ids);
		t_start = now_ns();
		if (synth_bpf_progs(ks, ids[0], on_synth, &r) < 0 ||
		    (o.all && synth_procs(ids[0], on_synth, &r) < 0) || r.failed) {
			fprintf(stderr, "ptcapture: synthesizing the initial state failed%s%s\n",
				r.failed ? ": " : "", r.errmsg);
			goto out;
		}
		perfwrite_finished_round(r.pw);
	}

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.cmd) {
		child = fork();
		if (child < 0) {
			perror("ptcapture: fork");
			goto out;
		}
		if (child == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			execvp(o.cmd[0], o.cmd);
			fprintf(stderr, "ptcapture: %s: %s\n", o.cmd[0], strerror(errno));
			_exit(127);
		}
	}
	if (o.duration > 0)
		deadline = now_ns() + (uint64_t)(o.duration * 1e9);

	epfd = epoll_create1(EPOLL_CLOEXEC);
	{
		struct epoll_event ev = { .events = EPOLLIN };

		if (epfd < 0 || sbevents_add_to_epoll(sb, epfd) ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, fence_epoll_fd(fence), &ev)) {
			perror("ptcapture: epoll");
			goto out;
		}
	}
	/* Main loop; then linger so deferred frees (tens of ms after the
	 * program's last reference goes) reach the fence. */
	for (uint64_t linger_end = 0;;) {
		struct epoll_event evs[16];
		uint64_t now;

		epoll_wait(epfd, evs, 16, 50);
		if (fence_drain(fence) < 0)
			fail(&r, "reading the fence ring failed");
		if (sbevents_drain(sb, on_record, &r) < 0 && !r.failed)
			fprintf(stderr, "ptcapture: warning: a corrupt sideband ring was skipped\n");
		perfwrite_finished_round(r.pw);
		if (r.failed)
			break;
		now = now_ns();
		if (linger_end) {
			if (now >= linger_end || stop_signal)
				break; /* a second signal ends the linger */
			continue;
		}
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child)
			child = -1, linger_end = 1;
		if (stop_signal || (deadline && now >= deadline))
			linger_end = 1;
		if (linger_end) {
			stop_signal = 0;
			if (child > 0) {
				kill(child, SIGTERM);
				waitpid(child, &child_status, 0);
				child = -1;
			}
			linger_end = now_ns() + (uint64_t)o.linger_ms * 1000000ull;
		}
	}
	t_end = now_ns();
	fence_close(fence, &fc);
	fence = NULL;
	sbevents_drain(sb, on_record, &r);
	perfwrite_finished_round(r.pw);
	if (r.failed) {
		fprintf(stderr, "ptcapture: %s\n", r.errmsg);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/text", o.out);
	if (textmatch_write(r.tm, path, &tc, err, sizeof(err))) {
		fprintf(stderr, "ptcapture: %s\n", err);
		goto out;
	}
	{
		struct utsname u;
		const char *argv0[] = { "ptcapture", "record" };

		uname(&u);
		perfwrite_feat_string(r.pw, PW_FEAT_OSRELEASE, u.release);
		perfwrite_feat_string(r.pw, PW_FEAT_ARCH, u.machine);
		perfwrite_feat_string(r.pw, PW_FEAT_HOSTNAME, u.nodename);
		perfwrite_feat_nrcpus(r.pw, (uint32_t)sysconf(_SC_NPROCESSORS_CONF),
				      (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
		perfwrite_feat_cmdline(r.pw, 2, argv0);
		perfwrite_feat_u64(r.pw, PW_FEAT_CLOCKID, 1); /* clock resolution, ns */
	}
	rc = perfwrite_close(r.pw, err, sizeof(err));
	r.pw = NULL;
	if (rc) {
		fprintf(stderr, "ptcapture: perf.data: %s\n", err);
		rc = 1;
		goto out;
	}
	r.joined = sbevents_joined(sb);
	if (write_info(o.out, &r, &o, hook, &fc, &tc, pmu, t_start, t_end, sbevents_ncpus(sb))) {
		fprintf(stderr, "ptcapture: writing %s/info failed\n", o.out);
		rc = 1;
		goto out;
	}
	fprintf(stderr, "ptcapture: %s: %" PRIu64 " sideband records (%" PRIu64 " lost), "
		"%" PRIu64 " BPF images: %" PRIu64 " by prog-info, %" PRIu64 " by fence "
		"(%" PRIu64 " both, %" PRIu64 " differ), %" PRIu64 " missed; fence drops %" PRIu64 "\n",
		o.out, r.records, r.lost_events, tc.instances, tc.with_prog_info, tc.with_fence,
		tc.with_both, tc.both_differ, tc.missed, fc.drops);
	rc = 0;
	if (WIFEXITED(child_status) && WEXITSTATUS(child_status))
		rc = WEXITSTATUS(child_status);
out:
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
	if (epfd >= 0)
		close(epfd);
	if (fence)
		fence_close(fence, NULL);
	if (r.pw)
		perfwrite_close(r.pw, err, sizeof(err));
	textmatch_free(r.tm);
	sbevents_close(sb);
	synth_kallsyms_free(ks);
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
