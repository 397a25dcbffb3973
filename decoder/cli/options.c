/* SPDX-License-Identifier: MIT */
/*
 * options - ptdecode's command line: argv to open options, view options
 * and filters; each option family has its own parser.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	O_INSN = 256, O_BRANCHES, O_CALLS, O_STATS, O_FORMAT, O_PT, O_RAW,
	O_ELF, O_PAGES, O_CPU, O_SYSROOT, O_SEARCH, O_VMLINUX, O_KALLSYMS,
	O_CPUF, O_PID, O_TID, O_TIME, O_MAXI, O_NOVER, O_RESYNC, O_RESYNC_PSB, O_GUESTCODE, O_PERQ, O_NOSYM, O_NODIS,
	O_ATT, O_VERSION, O_DECODER, O_SRC, O_COVERAGE, O_BCACHE, O_WTHREAD,
	O_PERFETTO, O_SAMPLES, O_CHECKCC,
	O_FILTER,   /* + 3 * n + (0 cfg, 1 a, 2 b): --filter:addrN_* */
};

/* ptxed's --filter:addrN_cfg, --filter:addrN_a, --filter:addrN_b */
#define FILTER_OPTS(n) \
	{ "filter:addr" #n "_cfg", required_argument, 0, O_FILTER + 3 * (n) }, \
	{ "filter:addr" #n "_a", required_argument, 0, O_FILTER + 3 * (n) + 1 }, \
	{ "filter:addr" #n "_b", required_argument, 0, O_FILTER + 3 * (n) + 2 }

static const struct option long_opts[] = {
	{ "insn", no_argument, 0, O_INSN },
	{ "branches", no_argument, 0, O_BRANCHES },
	{ "calls", no_argument, 0, O_CALLS },
	{ "perfetto", no_argument, 0, O_PERFETTO },
	{ "samples", no_argument, 0, O_SAMPLES },
	{ "check-callchains", no_argument, 0, O_CHECKCC },
	{ "stats", no_argument, 0, O_STATS },
	{ "coverage", no_argument, 0, O_COVERAGE },
	{ "format", required_argument, 0, O_FORMAT },
	{ "pt", required_argument, 0, O_PT },
	{ "raw", required_argument, 0, O_RAW },
	{ "elf", required_argument, 0, O_ELF },
	{ "pages", required_argument, 0, O_PAGES },
	{ "cpu", required_argument, 0, O_CPU },
	{ "sysroot", required_argument, 0, O_SYSROOT },
	{ "search-path", required_argument, 0, O_SEARCH },
	{ "vmlinux", required_argument, 0, O_VMLINUX },
	{ "kallsyms", required_argument, 0, O_KALLSYMS },
	{ "cpu-filter", required_argument, 0, O_CPUF },
	{ "pid", required_argument, 0, O_PID },
	{ "tid", required_argument, 0, O_TID },
	{ "time", required_argument, 0, O_TIME },
	{ "max-insns", required_argument, 0, O_MAXI },
	{ "no-versioning", no_argument, 0, O_NOVER },
	{ "resync-on-error", no_argument, 0, O_RESYNC },
	{ "resync-at-psb", no_argument, 0, O_RESYNC_PSB },
	{ "guest-code", no_argument, 0, O_GUESTCODE },
	{ "per-queue", no_argument, 0, O_PERQ },
	{ "no-sym", no_argument, 0, O_NOSYM },
	{ "no-disasm", no_argument, 0, O_NODIS },
	{ "att", no_argument, 0, O_ATT },
	{ "src", no_argument, 0, O_SRC },
	{ "show-time", no_argument, 0, 't' },
	{ "quiet", no_argument, 0, 'q' },
	{ "help", no_argument, 0, 'h' },
	{ "version", no_argument, 0, O_VERSION },
	{ "decoder", required_argument, 0, O_DECODER },
	{ "jobs", required_argument, 0, 'j' },
	{ "block-cache", required_argument, 0, O_BCACHE },
	{ "write-thread", no_argument, 0, O_WTHREAD },
	FILTER_OPTS(0), FILTER_OPTS(1), FILTER_OPTS(2), FILTER_OPTS(3),
	{ 0, 0, 0, 0 },
};

static int bad(const char *msg)
{
	fprintf(stderr, "ptdecode: %s\n", msg);
	return 2;
}

static void usage(FILE *f)
{
	fputs(
"usage: ptdecode [OPTIONS] INPUT\n"
"       ptdecode [OPTIONS] --pt TRACE --raw FILE:ADDR | --elf FILE[:BASE] ...\n"
"\n"
"Reconstructs the executed instructions from an Intel PT or Arm CoreSight\n"
"trace.  INPUT is a capture directory (NAME.ptd, from ptcapture or\n"
"ptsynth), a perf.data file from `perf record -e intel_pt//` or\n"
"`-e cs_etm//`, or an OpenCSD snapshot directory.\n"
"\n"
"Views (one of):\n"
"  --insn               one line per instruction: address, symbol+offset,\n"
"                       disassembly (default)\n"
"  --branches           taken branches: from -> to, kind\n"
"  --calls              call tree, indented by depth\n"
"  --perfetto           the call tree as a Perfetto trace (binary; use -o\n"
"                       FILE): a track per thread, a slice per call, for\n"
"                       ui.perfetto.dev and trace_processor\n"
"  --samples            the samples (perf.data SAMPLE records) with their\n"
"                       callchains, deferred user parts stitched on, and\n"
"                       with a trace the call stack it had at each\n"
"  --check-callchains   samples whose recorded user frames disagree with\n"
"                       the trace's call stack\n"
"  --stats              counts only (also printed after another view)\n"
"  --coverage           how many times each instruction ran:\n"
"                       \"0xADDR COUNT symbol+off\", ascending\n"
"  --format=text|json   text (default) or JSON Lines\n"
"  --no-sym, --no-disasm, --att, -t/--show-time   adjust the columns\n"
"  --src                source file:line from DWARF, also in separate debug\n"
"                       files (BPF and JIT code always show theirs)\n"
"\n"
"Raw traces (like libipt's ptxed):\n"
"  --pt FILE            raw Intel PT bytes\n"
"  --raw FILE:ADDR      load FILE's bytes at ADDR (repeatable)\n"
"  --elf FILE[:BASE]    load FILE's executable segments (repeatable)\n"
"  --pages ADDRS:DUMP   page cache: u64 page addresses + 4 KiB pages\n"
"  --cpu F/M[/S]|none   CPU the trace was recorded on (errata)\n"
"  --filter:addrN_cfg CFG, --filter:addrN_a BASE, --filter:addrN_b LIMIT\n"
"                       IP filter N (0-3) it was recorded with:\n"
"                       IA32_RTIT_CTL.ADDRn_CFG (1 filter, 2 stop) and\n"
"                       IA32_RTIT_ADDRn_A/B (errata work-arounds)\n"
"\n"
"Images:\n"
"  --sysroot DIR        prefix for paths named in the trace's sideband\n"
"  --search-path DIR    also look for images here (repeatable)\n"
"  --vmlinux FILE, --kallsyms FILE   kernel image and symbols\n"
"\n"
"Filters and limits:\n"
"  --cpu-filter LIST, --pid LIST, --tid LIST   comma-separated numbers\n"
"  --time START,END     perf-clock range in seconds (e.g. 12.5,13)\n"
"  --max-insns N        stop after N instructions\n"
"  -o FILE              write to FILE instead of standard output\n"
"  --decoder=fast|libipt|opencsd  flow decoder: the block-cache decoder\n"
"                       (default), libipt's instruction decoder (Intel PT)\n"
"                       or OpenCSD's full decoder (CoreSight)\n"
"  -j, --jobs N         decoder threads (default: one per core)\n"
"  --block-cache SIZE   decoded blocks kept per thread (default 256M);\n"
"                       a full cache is emptied and rebuilt\n"
"  --resync-on-error    Intel PT: after a decode error, decode on from\n"
"                       the next TIP, TIP.PGE or OVF (or past a bad\n"
"                       packet), not the next PSB, as perf does (the\n"
"                       default for perf.data and capture directories)\n"
"  --resync-at-psb      Intel PT: after a decode error, decode on from\n"
"                       the next PSB, as libipt does (raw traces' default)\n"
"  --guest-code         Intel PT: guest code (PIP.NR=1) without guest\n"
"                       sideband is the hypervisor process's memory\n"
"  --per-queue          several CPUs' queues: one queue after another\n"
"                       (default: one timeline merged in time order)\n"
"  --write-thread       text output written by a thread of its own (off:\n"
"                       slower on 2 cores, see docs/ARCHITECTURE.md)\n"
"  --no-versioning      debug: decode with the last version of each\n"
"                       address, ignoring time\n"
"  -q, --quiet          no warnings or progress on standard error\n"
"  -h, --help, --version\n", f);
}

static int parse_list(const char *s, long *out, int *n)
{
	char *end;

	*n = 0;
	while (*s) {
		if (*n >= CLI_MAX_LIST)
			return -1;
		errno = 0;
		out[(*n)++] = strtol(s, &end, 0);
		if (errno || end == s || (*end && *end != ','))
			return -1;
		s = *end ? end + 1 : end;
	}
	return 0;
}

static int in_list(const long *l, int n, long v)
{
	if (!n)
		return 1;
	for (int i = 0; i < n; i++)
		if (l[i] == v)
			return 1;
	return 0;
}

static int parse_secs(const char *s, uint64_t *ns)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || d < 0)
		return -1;
	*ns = (uint64_t)(d * 1e9 + 0.5);
	return *end ? -1 : 0;
}

/* "FILE:ADDR" or "FILE[:BASE]": the address is after the last colon. */
static int split_addr(char *arg, uint64_t *addr, int required)
{
	char *c = strrchr(arg, ':'), *end;

	if (!c)
		return required ? -1 : 0;
	errno = 0;
	*addr = strtoull(c + 1, &end, 0);
	if (errno || end == c + 1 || *end)
		return required ? -1 : 0;
	*c = '\0';
	return 1;
}


/* --raw FILE:ADDR, --elf FILE[:BASE], --pages ADDRS:DUMP */
static int parse_image(struct cli_opts *o, int c, char *arg)
{
	struct ptd_raw_image *r = &o->raws[o->nraw];

	if (o->nraw >= CLI_MAX_IMAGES)
		return bad("too many images");
	memset(r, 0, sizeof(*r));
	if (c == O_PAGES) {
		char *colon = strchr(arg, ':');

		if (!colon)
			return bad("--pages needs ADDRFILE:DUMPFILE");
		*colon = '\0';
		r->kind = PTD_RAW_PAGES;
		r->path2 = colon + 1;
	} else if (c == O_RAW) {
		r->kind = PTD_RAW_BYTES;
		if (split_addr(arg, &r->addr, 1) < 0)
			return bad("--raw needs FILE:ADDR (e.g. code.bin:0x400000)");
		r->has_addr = 1;
	} else {
		r->kind = PTD_RAW_ELF;
		r->has_addr = split_addr(arg, &r->addr, 0) > 0;
	}
	r->path = arg;
	o->nraw++;
	return 0;
}

/* --cpu-filter, --pid, --tid */
static int parse_filter(struct cli_opts *o, int c, const char *arg)
{
	long *l = c == O_CPUF ? o->cpus : c == O_PID ? o->pids : o->tids;
	int *n = c == O_CPUF ? &o->ncpus : c == O_PID ? &o->npids : &o->ntids;

	if (parse_list(arg, l, n)) {
		fprintf(stderr, "ptdecode: bad list \"%s\": expected "
			"comma-separated numbers\n", arg);
		return 2;
	}
	return 0;
}

/* --time START,END (either may be empty) */
static int parse_time(struct cli_opts *o, char *arg)
{
	char *comma = strchr(arg, ',');

	if (comma)
		*comma = '\0';
	if ((*arg && parse_secs(arg, &o->open.time_start)) ||
	    (comma && comma[1] && parse_secs(comma + 1, &o->open.time_end)))
		return bad("--time needs START,END in seconds");
	return 0;
}

/* --block-cache SIZE[K|M|G] */
static int parse_block_cache(struct cli_opts *o, const char *arg)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end || !v)
		return bad("--block-cache needs a size (bytes, or with K, M or G)");
	o->open.block_cache_max = (size_t)v;
	return 0;
}

static int parse_decoding(struct cli_opts *o, int c, const char *arg)
{
	switch (c) {
	case O_DECODER:
		if (!strcmp(arg, "libipt"))
			o->open.decoder = PTD_DECODER_LIBIPT;
		else if (!strcmp(arg, "fast"))
			o->open.decoder = PTD_DECODER_FAST;
		else if (!strcmp(arg, "opencsd"))
			o->open.decoder = PTD_DECODER_OPENCSD;
		else
			return bad("--decoder must be fast, libipt or opencsd");
		return 0;
	case 'j':
		o->open.threads = (unsigned)strtoul(arg, NULL, 0);
		return o->open.threads ? 0 : bad("-j needs a number of threads >= 1");
	case O_BCACHE:
		return parse_block_cache(o, arg);
	case O_MAXI:
		o->open.max_insns = strtoull(arg, NULL, 0);
		return 0;
	case O_RESYNC:
		o->open.flags |= PTD_OPEN_RESYNC_ON_ERROR;
		o->open.flags &= ~PTD_OPEN_RESYNC_AT_PSB;
		return 0;
	case O_RESYNC_PSB:
		o->open.flags |= PTD_OPEN_RESYNC_AT_PSB;
		o->open.flags &= ~PTD_OPEN_RESYNC_ON_ERROR;
		return 0;
	case O_GUESTCODE:
		o->open.flags |= PTD_OPEN_GUEST_CODE;
		return 0;
	case O_PERQ:
		o->open.flags |= PTD_OPEN_PER_QUEUE;
		return 0;
	default:   /* O_NOVER */
		o->open.flags |= PTD_OPEN_NO_VERSIONING;
		return 0;
	}
}

static int set_view(struct cli_opts *o, enum view_kind k)
{
	o->view.kind = k;
	o->view_set = 1;
	return 0;
}

/* Options that choose what is printed and how. */
static int parse_output(struct cli_opts *o, int c, const char *arg)
{
	switch (c) {
	case O_INSN: return set_view(o, VIEW_INSN);
	case O_BRANCHES: return set_view(o, VIEW_BRANCHES);
	case O_CALLS: return set_view(o, VIEW_CALLS);
	case O_PERFETTO: return set_view(o, VIEW_PERFETTO);
	case O_SAMPLES: o->samples = 1; return 0;
	case O_CHECKCC: o->check_callchains = 1; return 0;
	case O_STATS: o->stats = 1; return 0;
	case O_COVERAGE: o->coverage = 1; return 0;
	case O_FORMAT:
		if (!strcmp(arg, "json"))
			o->view.json = 1;
		else if (strcmp(arg, "text"))
			return bad("--format must be text or json");
		return 0;
	case O_NOSYM: o->view.show_sym = 0; return 0;
	case O_NODIS: o->view.show_disasm = 0; return 0;
	case O_ATT: o->view.att = 1; return 0;
	case O_SRC: o->view.show_src = 1; return 0;
	case O_WTHREAD: o->write_thread = 1; return 0;
	case 't': o->view.show_time = 1; return 0;
	case 'q': o->quiet = 1; return 0;
	case 'o': o->outpath = arg; return 0;
	default:
		usage(stderr);
		return 2;
	}
}

/* --filter:addrN_cfg, --filter:addrN_a, --filter:addrN_b (ptxed's) */
static int parse_addr_filter(struct cli_opts *o, int c, const char *arg)
{
	int n = (c - O_FILTER) / 3, field = (c - O_FILTER) % 3;
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || (field == 0 && v > 15)) {
		fprintf(stderr, "ptdecode: bad --filter:addr%d_%s value \"%s\": "
			"%s\n", n, field == 0 ? "cfg" : field == 1 ? "a" : "b", arg,
			field == 0 ? "a number 0-15 (0 unused, 1 filter, 2 stop)" :
			"an address");
		return 2;
	}
	if (field == 0)
		o->open.addr_cfg[n] = (uint8_t)v;
	else if (field == 1)
		o->open.addr_a[n] = v;
	else
		o->open.addr_b[n] = v;
	return 0;
}

/* Options that say where the trace and its code are. */
static int parse_input(struct cli_opts *o, int c, char *arg)
{
	switch (c) {
	case O_PT: o->pt = arg; return 0;
	case O_RAW: case O_ELF: case O_PAGES: return parse_image(o, c, arg);
	case O_CPU: o->open.cpu = arg; return 0;
	case O_SYSROOT: o->open.sysroot = arg; return 0;
	case O_SEARCH:
		if (o->nsearch < CLI_MAX_SEARCH)
			o->search[o->nsearch++] = arg;
		return 0;
	case O_VMLINUX: o->open.vmlinux = arg; return 0;
	case O_KALLSYMS: o->open.kallsyms = arg; return 0;
	case O_CPUF: case O_PID: case O_TID: return parse_filter(o, c, arg);
	default: return parse_time(o, arg);   /* O_TIME */
	}
}

static int parse_one(struct cli_opts *o, int c, char *arg)
{
	switch (c) {
	case 'h':
		usage(stdout);
		return 0;
	case O_VERSION: {
		char libs[256];

		printf("ptdecode %s\n", ptd_version());
		if (ptd_library_versions(libs, sizeof(libs)) >= 0)
			printf("with %s\n", libs);
		return 0;
	}
	case O_PT: case O_RAW: case O_ELF: case O_PAGES: case O_CPU:
	case O_SYSROOT: case O_SEARCH: case O_VMLINUX: case O_KALLSYMS:
	case O_CPUF: case O_PID: case O_TID: case O_TIME:
		return parse_input(o, c, arg) ? 2 : -1;
	case O_DECODER: case 'j': case O_BCACHE: case O_MAXI: case O_NOVER:
	case O_RESYNC: case O_RESYNC_PSB: case O_GUESTCODE: case O_PERQ:
		return parse_decoding(o, c, arg) ? 2 : -1;
	default:
		if (c >= O_FILTER && c < O_FILTER + 12)
			return parse_addr_filter(o, c, arg) ? 2 : -1;
		return parse_output(o, c, arg) ? 2 : -1;
	}
}

/* The input operand and the combinations that cannot work. */
static int check(struct cli_opts *o, int argc, char **argv)
{
	if (optind < argc)
		o->input = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "ptdecode: one input only (got \"%s\" too)\n", argv[optind]);
		return 2;
	}
	if (o->pt && o->input)
		return bad("give either INPUT or --pt, not both");
	if (o->pt)
		o->input = o->pt;
	if (!o->input) {
		usage(stderr);
		return 2;
	}
	if (o->stats && !o->view_set)
		o->view.kind = VIEW_NONE;
	if (o->view.kind == VIEW_PERFETTO && (o->view.json || o->coverage))
		return bad("--perfetto writes a trace of its own: not with "
			   "--format=json or --coverage");
	if (o->view.kind == VIEW_PERFETTO && !o->outpath && isatty(STDOUT_FILENO))
		return bad("--perfetto writes a binary trace: give -o FILE (e.g. "
			   "trace.pftrace) or redirect standard output");
	return -1;
}

/* What the library is asked for follows from the view. */
static void derive_open_flags(struct cli_opts *o)
{
	/* counting only: no blocks needed, the decoder keeps none */
	if (!o->coverage && o->view.kind == VIEW_NONE && !cli_filtering(o))
		o->open.flags |= PTD_OPEN_COUNT_ONLY;
	/* the insn text view takes each new instruction's text from the
	 * decoder, which classified it with capstone already */
	if (o->view.kind == VIEW_INSN && o->view.show_disasm && !o->view.att &&
	    !o->view.json)
		o->open.flags |= PTD_OPEN_INSN_TEXT;
	/* the flow views pair each branch with what follows it */
	if (o->view.kind != VIEW_INSN && o->view.kind != VIEW_NONE)
		o->open.flags |= PTD_OPEN_BRANCH_ORDER;
	o->open.raw_images = o->raws;
	o->open.n_raw_images = o->nraw;
	o->open.search_path = o->nsearch ? o->search : NULL;
}

int cli_parse(int argc, char **argv, struct cli_opts *o)
{
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->open.sz = sizeof(o->open);
	/* perf.data decodes to what perf script prints, errors included */
	o->open.flags |= PTD_OPEN_RESYNC_PERF_DATA;
	o->view.kind = VIEW_INSN;
	o->view.show_sym = o->view.show_disasm = 1;
	while ((c = getopt_long(argc, argv, "o:tqhj:", long_opts, NULL)) != -1)
		if ((rc = parse_one(o, c, optarg)) >= 0)
			return rc;
	if ((rc = check(o, argc, argv)) >= 0)
		return rc;
	derive_open_flags(o);
	return -1;
}

int cli_filtering(const struct cli_opts *o)
{
	return o->ncpus || o->npids || o->ntids;
}

int cli_selected(const struct cli_opts *o, const struct ptd_event *ev)
{
	return in_list(o->cpus, o->ncpus, ev->cpu) && in_list(o->pids, o->npids, ev->pid) &&
	       in_list(o->tids, o->ntids, ev->tid);
}
