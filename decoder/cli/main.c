/* SPDX-License-Identifier: MIT */
/*
 * ptdecode - the command line: options in, events through a view, out.
 */
#include "coverage.h"
#include "outfile.h"
#include "views.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIST 64

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
"  --decoder=fast|libipt  Intel PT flow decoder: the block-cache decoder\n"
"                       (default) or libipt's instruction decoder\n"
"  -j, --jobs N         decoder threads (default: one per core)\n"
"  --block-cache SIZE   decoded blocks kept per thread (default 256M);\n"
"                       a full cache is emptied and rebuilt\n"
"  --write-thread       text output written by a thread of its own (off:\n"
"                       slower on 2 cores, see docs/ARCHITECTURE.md)\n"
"  --no-versioning      debug: decode with the last version of each\n"
"                       address, ignoring time\n"
"  -q, --quiet          no warnings on standard error\n"
"  -h, --help, --version\n", f);
}

static int parse_list(const char *s, long *out, int *n)
{
	char *end;

	*n = 0;
	while (*s) {
		if (*n >= MAX_LIST)
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

int main(int argc, char **argv)
{
	enum {
		O_INSN = 256, O_BRANCHES, O_CALLS, O_STATS, O_FORMAT, O_PT, O_RAW,
		O_ELF, O_PAGES, O_CPU, O_SYSROOT, O_SEARCH, O_VMLINUX, O_KALLSYMS,
		O_CPUF, O_PID, O_TID, O_TIME, O_MAXI, O_NOVER, O_NOSYM, O_NODIS,
		O_ATT, O_VERSION, O_DECODER, O_SRC, O_COVERAGE, O_BCACHE, O_WTHREAD,
		O_PERFETTO,
	};
	static const struct option lopts[] = {
		{ "insn", no_argument, 0, O_INSN },
		{ "branches", no_argument, 0, O_BRANCHES },
		{ "calls", no_argument, 0, O_CALLS },
		{ "perfetto", no_argument, 0, O_PERFETTO },
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
		{ 0, 0, 0, 0 },
	};
	struct ptd_open_opts oo = { .sz = sizeof(oo) };
	struct view_opts vo = { .kind = VIEW_INSN, .show_sym = 1, .show_disasm = 1 };
	int write_thread = 0;
	struct ptd_raw_image raws[256];
	const char *search[65] = { 0 };
	size_t nraw = 0, nsearch = 0;
	long cpus[MAX_LIST], pids[MAX_LIST], tids[MAX_LIST];
	int ncpus = 0, npids = 0, ntids = 0, stats = 0, quiet = 0, view_set = 0;
	int coverage = 0;
	const char *pt = NULL, *input = NULL, *outpath = NULL;
	struct ptd_session *s = NULL;
	struct ptd_event ev;
	struct ptd_stats st = { .sz = sizeof(st) };
	unsigned long long events = 0;
	struct view *v;
	int c, rc, status = 0;

	while ((c = getopt_long(argc, argv, "o:tqhj:", lopts, NULL)) != -1) {
		char *arg = optarg;

		switch (c) {
		case O_INSN: vo.kind = VIEW_INSN; view_set = 1; break;
		case O_BRANCHES: vo.kind = VIEW_BRANCHES; view_set = 1; break;
		case O_CALLS: vo.kind = VIEW_CALLS; view_set = 1; break;
		case O_PERFETTO: vo.kind = VIEW_PERFETTO; view_set = 1; break;
		case O_STATS: stats = 1; break;
		case O_COVERAGE: coverage = 1; break;
		case O_FORMAT:
			if (!strcmp(arg, "json"))
				vo.json = 1;
			else if (strcmp(arg, "text")) {
				fprintf(stderr, "ptdecode: --format must be text or json\n");
				return 2;
			}
			break;
		case O_PT: pt = arg; break;
		case O_RAW:
		case O_ELF:
		case O_PAGES:
			if (nraw >= sizeof(raws) / sizeof(raws[0])) {
				fprintf(stderr, "ptdecode: too many images\n");
				return 2;
			}
			memset(&raws[nraw], 0, sizeof(raws[nraw]));
			if (c == O_PAGES) {
				char *colon = strchr(arg, ':');

				if (!colon) {
					fprintf(stderr, "ptdecode: --pages needs "
						"ADDRFILE:DUMPFILE\n");
					return 2;
				}
				*colon = '\0';
				raws[nraw].kind = PTD_RAW_PAGES;
				raws[nraw].path2 = colon + 1;
			} else if (c == O_RAW) {
				raws[nraw].kind = PTD_RAW_BYTES;
				if (split_addr(arg, &raws[nraw].addr, 1) < 0) {
					fprintf(stderr, "ptdecode: --raw needs FILE:ADDR "
						"(e.g. code.bin:0x400000)\n");
					return 2;
				}
				raws[nraw].has_addr = 1;
			} else {
				raws[nraw].kind = PTD_RAW_ELF;
				raws[nraw].has_addr = split_addr(arg, &raws[nraw].addr, 0) > 0;
			}
			raws[nraw++].path = arg;
			break;
		case O_CPU: oo.cpu = arg; break;
		case O_SYSROOT: oo.sysroot = arg; break;
		case O_SEARCH:
			if (nsearch < 64)
				search[nsearch++] = arg;
			break;
		case O_VMLINUX: oo.vmlinux = arg; break;
		case O_KALLSYMS: oo.kallsyms = arg; break;
		case O_CPUF:
		case O_PID:
		case O_TID: {
			long *l = c == O_CPUF ? cpus : c == O_PID ? pids : tids;
			int *n = c == O_CPUF ? &ncpus : c == O_PID ? &npids : &ntids;

			if (parse_list(arg, l, n)) {
				fprintf(stderr, "ptdecode: bad list \"%s\": expected "
					"comma-separated numbers\n", arg);
				return 2;
			}
			break;
		}
		case O_TIME: {
			char *comma = strchr(arg, ',');

			if (comma)
				*comma = '\0';
			if ((*arg && parse_secs(arg, &oo.time_start)) ||
			    (comma && comma[1] && parse_secs(comma + 1, &oo.time_end))) {
				fprintf(stderr, "ptdecode: --time needs START,END in "
					"seconds\n");
				return 2;
			}
			break;
		}
		case O_MAXI:
			oo.max_insns = strtoull(arg, NULL, 0);
			break;
		case O_NOVER: oo.flags |= PTD_OPEN_NO_VERSIONING; break;
		case O_DECODER:
			if (!strcmp(arg, "libipt"))
				oo.decoder = PTD_DECODER_LIBIPT;
			else if (!strcmp(arg, "fast"))
				oo.decoder = PTD_DECODER_FAST;
			else {
				fprintf(stderr, "ptdecode: --decoder must be fast or libipt\n");
				return 2;
			}
			break;
		case 'j':
			oo.threads = (unsigned)strtoul(arg, NULL, 0);
			if (!oo.threads) {
				fprintf(stderr, "ptdecode: -j needs a number of threads >= 1\n");
				return 2;
			}
			break;
		case O_BCACHE: {
			char *end;
			unsigned long long v = strtoull(arg, &end, 0);

			if (*end == 'K' || *end == 'k')
				v <<= 10, end++;
			else if (*end == 'M' || *end == 'm')
				v <<= 20, end++;
			else if (*end == 'G' || *end == 'g')
				v <<= 30, end++;
			if (*end || !v) {
				fprintf(stderr, "ptdecode: --block-cache needs a size (bytes, or "
					"with K, M or G)\n");
				return 2;
			}
			oo.block_cache_max = (size_t)v;
			break;
		}
		case O_NOSYM: vo.show_sym = 0; break;
		case O_NODIS: vo.show_disasm = 0; break;
		case O_ATT: vo.att = 1; break;
		case O_WTHREAD: write_thread = 1; break;
		case O_SRC: vo.show_src = 1; break;
		case 't': vo.show_time = 1; break;
		case 'q': quiet = 1; break;
		case 'o': outpath = arg; break;
		case 'h': usage(stdout); return 0;
		case O_VERSION: printf("ptdecode %s\n", ptd_version()); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		input = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "ptdecode: one input only (got \"%s\" too)\n", argv[optind]);
		return 2;
	}
	if (pt && input) {
		fprintf(stderr, "ptdecode: give either INPUT or --pt, not both\n");
		return 2;
	}
	if (pt)
		input = pt;
	if (!input) {
		usage(stderr);
		return 2;
	}
	if (stats && !view_set)
		vo.kind = VIEW_NONE;
	if (vo.kind == VIEW_PERFETTO && (vo.json || coverage)) {
		fprintf(stderr, "ptdecode: --perfetto writes a trace of its own: "
			"not with --format=json or --coverage\n");
		return 2;
	}
	if (vo.kind == VIEW_PERFETTO && !outpath && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "ptdecode: --perfetto writes a binary trace: give "
			"-o FILE (e.g. trace.pftrace) or redirect standard output\n");
		return 2;
	}
	/* counting only (below): no blocks needed, the decoder keeps none */
	if (!coverage && vo.kind == VIEW_NONE && !ncpus && !npids && !ntids)
		oo.flags |= PTD_OPEN_COUNT_ONLY;
	/* the insn text view takes each new instruction's text from the
	 * decoder, which classified it with capstone already */
	if (vo.kind == VIEW_INSN && vo.show_disasm && !vo.att && !vo.json)
		oo.flags |= PTD_OPEN_INSN_TEXT;
	oo.raw_images = raws;
	oo.n_raw_images = nraw;
	oo.search_path = nsearch ? search : NULL;

	rc = pt ? ptd_open_kind(&s, input, PTD_INPUT_RAW_PT, &oo) : ptd_open(&s, input, &oo);
	if (!quiet)
		for (size_t i = 0; i < ptd_warning_count(s); i++)
			fprintf(stderr, "ptdecode: warning: %s\n", ptd_warning(s, i));
	if (rc < 0) {
		fprintf(stderr, "ptdecode: %s\n", s ? ptd_errmsg(s) : ptd_strerror(rc));
		ptd_close(s);
		return 1;
	}
	vo.out = stdout;
	if (outpath && !(vo.out = outfile_open(outpath))) {
		fprintf(stderr, "ptdecode: cannot write %s: %s\n", outpath, strerror(errno));
		ptd_close(s);
		return 1;
	}
	setvbuf(vo.out, NULL, _IOFBF, 1 << 16);
	vo.writer_thread = write_thread;
	v = view_new(&vo, s);
	if (!v) {
		fprintf(stderr, "ptdecode: out of memory\n");
		return 1;
	}
	if (coverage) {
		const struct ptd_block *blocks;
		struct coverage *cov = coverage_new();
		size_t n;
		int have;

		if (!cov) {
			fprintf(stderr, "ptdecode: out of memory\n");
			return 1;
		}
		while ((rc = ptd_next_blocks(s, &blocks, &n, &ev, &have)) == 0) {
			events += (unsigned long long)have;
			if (coverage_add(cov, s, blocks, n)) {
				fprintf(stderr, "ptdecode: out of memory for coverage\n");
				rc = PTD_ERR_NOMEM;
				break;
			}
		}
		coverage_print(cov, s, vo.out, vo.json);
		coverage_free(cov);
		goto done;
	}
	if (vo.kind == VIEW_NONE && !ncpus && !npids && !ntids) {
		/* counting only: the block interface, no per-instruction work */
		const struct ptd_block *blocks;
		size_t n;
		int have;

		while ((rc = ptd_next_blocks(s, &blocks, &n, &ev, &have)) == 0)
			events += (unsigned long long)have;
		goto done;
	}
	while ((rc = ptd_next(s, &ev)) == 0) {
		events++;
		if (!in_list(cpus, ncpus, ev.cpu) || !in_list(pids, npids, ev.pid) ||
		    !in_list(tids, ntids, ev.tid))
			continue;
		view_event(v, &ev);
	}
done:
	view_finish(v);
	if (rc != PTD_ERR_END) {
		fprintf(stderr, "ptdecode: %s\n", ptd_errmsg(s)[0] ? ptd_errmsg(s) :
			ptd_strerror(rc));
		status = 1;
	}
	ptd_get_stats(s, &st);
	if (stats)  /* not into a binary trace */
		view_print_stats(vo.kind == VIEW_PERFETTO ? stderr : vo.out, vo.json,
				 &st, events);
	if (st.truncated) {
		/* a damaged input is not a clean result, even when decoded */
		fprintf(stderr, "ptdecode: %s is truncated (recording killed?): "
			"decoded everything up to its last whole record\n", input);
		status = 1;
	}
	if (!quiet && st.errors)
		fprintf(stderr, "ptdecode: %" PRIu64 " decode error(s), see the "
			"[error ...] lines\n", st.errors);
	view_free(v);
	if (vo.out != stdout) {
		if (ferror(vo.out) | fclose(vo.out)) {
			fprintf(stderr, "ptdecode: error writing %s (disk full?)\n", outpath);
			status = 1;
		}
	} else if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "ptdecode: error writing standard output\n");
		status = 1;
	}
	ptd_close(s);
	outfile_wait();
	return status;
}
