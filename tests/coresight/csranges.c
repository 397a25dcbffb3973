/* SPDX-License-Identifier: MIT */
/*
 * csranges - test driver for the CoreSight backend.
 *
 *   csranges DIR          prints the instruction ranges and inaccessible
 *                         addresses of snapshot DIR, one per line, in the
 *                         form cmp_ranges.sh compares with trc_pkt_lister:
 *                           ID:10 R 0xSTART 0xEND NINSNS
 *                           ID:10 NACC 0xADDR
 *   csranges -u DIR       decodes DIR (events, one thread) and prints
 *                         "units: FAST fast, FALLBACK fallback": how many
 *                         units the fast ETMv4 path decoded and how many
 *                         it left to OpenCSD's full decoder.
 *   csranges -x DIR       decodes DIR twice, as ranges and as PTD_EV_INSN
 *                         events, and checks that the instructions expand
 *                         the ranges exactly (first at start, last ending at
 *                         end, OpenCSD's count); prints a summary.
 *
 * Exit: 0 ok, 1 mismatch or failure, 3 snapshot holds only STM/ITM trace.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coresight.h"
#include "imgstore.h"
#include "ptdecode.h"
#include "snapshot.h"

static struct backend *open_or_die(const char *dir, struct imgstore **st)
{
	struct backend *b;
	char err[512];
	int rc;

	*st = imgstore_new();
	if (!*st) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	rc = snapshot_open(dir, *st, 1, &b, err, sizeof(err));
	if (rc == PTD_ERR_UNSUPPORTED) {
		printf("UNSUPPORTED: %s\n", err);
		imgstore_free(*st);
		exit(3);
	}
	if (rc) {
		fprintf(stderr, "csranges: %s (%s)\n", err, ptd_strerror(rc));
		imgstore_free(*st);
		exit(1);
	}
	for (size_t i = 0; i < coresight_warning_count(b); i++)
		fprintf(stderr, "warning: %s\n", coresight_warning(b, i));
	return b;
}

static int list_ranges(const char *dir)
{
	struct imgstore *st;
	struct backend *b = open_or_die(dir, &st);
	struct coresight_range r;
	int rc;

	while ((rc = coresight_next_range(b, &r)) == 0) {
		if (r.nacc)
			printf("ID:%x NACC 0x%" PRIx64 "\n", r.trace_id, r.start);
		else
			printf("ID:%x R 0x%" PRIx64 " 0x%" PRIx64 " %u\n",
			       r.trace_id, r.start, r.end, r.ninsns);
	}
	if (rc != PTD_ERR_END)
		fprintf(stderr, "csranges: %s: %s\n", ptd_strerror(rc),
			b->errmsg(b));
	b->destroy(b);
	imgstore_free(st);
	return rc == PTD_ERR_END ? 0 : 1;
}

static int check_expansion(const char *dir)
{
	struct imgstore *st1, *st2;
	struct backend *rb = open_or_die(dir, &st1), *eb = open_or_die(dir, &st2);
	struct coresight_range r;
	struct ptd_event ev;
	uint64_t nranges = 0, ninsns = 0, ngaps = 0, nerr = 0, bad = 0;
	int rc, erc = 0;

	while ((rc = coresight_next_range(rb, &r)) == 0) {
		uint32_t n = 0;
		uint64_t last_end = 0;

		nranges++;
		if (r.nacc) {
			/* the event stream must report the same address */
			while ((erc = eb->next(eb, &ev)) == 0 && ev.kind != PTD_EV_GAP)
				if (ev.kind == PTD_EV_INSN || ev.kind == PTD_EV_ERROR)
					break;
			if (erc || ev.kind != PTD_EV_GAP || ev.ip != r.start) {
				fprintf(stderr, "NACC at 0x%" PRIx64 " not reported as "
					"a gap\n", r.start);
				bad++;
			}
			ngaps++;
			continue;
		}
		while (n < r.ninsns && (erc = eb->next(eb, &ev)) == 0) {
			if (ev.kind == PTD_EV_ERROR) {
				fprintf(stderr, "error event: %s\n", ev.msg);
				nerr++;
				break;
			}
			if (ev.kind != PTD_EV_INSN)
				continue;
			if (n == 0 && ev.ip != r.start) {
				fprintf(stderr, "range 0x%" PRIx64 ": first insn at "
					"0x%" PRIx64 "\n", r.start, ev.ip);
				bad++;
			}
			if (ev.queue != r.queue || ev.size == 0) {
				fprintf(stderr, "insn 0x%" PRIx64 ": queue %u size %u\n",
					ev.ip, ev.queue, ev.size);
				bad++;
			}
			last_end = ev.ip + ev.size;
			n++;
			ninsns++;
		}
		if (n != r.ninsns || last_end != r.end) {
			fprintf(stderr, "range [0x%" PRIx64 ", 0x%" PRIx64 ") of %u: "
				"expanded to %u insns ending at 0x%" PRIx64 "\n",
				r.start, r.end, r.ninsns, n, last_end);
			if (++bad > 20)
				break;
		}
	}
	/* nothing but non-instruction events may remain */
	while (!bad && (erc = eb->next(eb, &ev)) == 0)
		if (ev.kind == PTD_EV_INSN || ev.kind == PTD_EV_GAP) {
			fprintf(stderr, "extra event at 0x%" PRIx64 "\n", ev.ip);
			bad++;
		}
	printf("%s: %" PRIu64 " ranges+naccs, %" PRIu64 " insns, %" PRIu64
	       " gaps, %" PRIu64 " errors, %" PRIu64 " mismatches\n", dir,
	       nranges, ninsns, ngaps, nerr, bad);
	rb->destroy(rb);
	eb->destroy(eb);
	imgstore_free(st1);
	imgstore_free(st2);
	return bad || nerr || (rc != PTD_ERR_END) ? 1 : 0;
}

static int count_units(const char *dir)
{
	struct imgstore *st;
	struct backend *b = open_or_die(dir, &st);
	struct ptd_event ev;
	uint64_t fast, fallback, n = 0;
	int rc;

	while ((rc = b->next(b, &ev)) == 0)
		n += ev.kind == PTD_EV_INSN;
	coresight_fast_units(b, &fast, &fallback);
	printf("units: %" PRIu64 " fast, %" PRIu64 " fallback; %" PRIu64
	       " instructions\n", fast, fallback, n);
	b->destroy(b);
	imgstore_free(st);
	return rc == PTD_ERR_END ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-u"))
		return count_units(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "-x"))
		return check_expansion(argv[2]);
	if (argc == 2)
		return list_ranges(argv[1]);
	fprintf(stderr, "usage: csranges [-x] SNAPSHOT_DIR\n");
	return 2;
}
