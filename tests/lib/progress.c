/* progress TRACE [libipt]: ptd_get_progress while a session is read with
 * ptd_next (and with ptd_next_blocks): known, never going down, never past
 * the total, the total equal to stats.trace_bytes, and all of it at the
 * end. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <ptdecode.h>

static int check(const char *path, enum ptd_decoder dec, int blocks)
{
	struct ptd_open_opts oo = { .sz = sizeof(oo), .decoder = dec };
	struct ptd_stats st = { .sz = sizeof(st) };
	struct ptd_session *s;
	struct ptd_event ev;
	uint64_t done, total, last = 0, steps = 0, moves = 0;
	int rc, bad = 0;

	if (ptd_open(&s, path, &oo) < 0) {
		fprintf(stderr, "progress: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return 1;
	}
	for (;;) {
		if (blocks) {
			const struct ptd_block *b;
			size_t n;
			int have;

			rc = ptd_next_blocks(s, &b, &n, &ev, &have);
		} else {
			rc = ptd_next(s, &ev);
		}
		if (ptd_get_progress(s, &done, &total) != 0) {
			fprintf(stderr, "progress: not known\n");
			bad = 1;
			break;
		}
		if (done < last || done > total) {
			fprintf(stderr, "progress: %" PRIu64 " after %" PRIu64 " of %" PRIu64 "\n",
				done, last, total);
			bad = 1;
		}
		moves += done != last;
		last = done;
		steps++;
		if (rc)
			break;
	}
	ptd_get_stats(s, &st);
	ptd_close(s);
	if (rc != PTD_ERR_END || total != st.trace_bytes || done != total) {
		fprintf(stderr, "progress: end %d, %" PRIu64 " of %" PRIu64 " (trace bytes %"
			PRIu64 ")\n", rc, done, total, st.trace_bytes);
		bad = 1;
	}
	printf("%s %s: %" PRIu64 " calls, progress moved %" PRIu64 " times, %" PRIu64
	       " bytes\n", dec == PTD_DECODER_LIBIPT ? "libipt" : "default",
	       blocks ? "ptd_next_blocks" : "ptd_next", steps, moves, total);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: progress TRACE\n");
		return 2;
	}
	for (int b = 0; b < 2; b++) {
		bad |= check(argv[1], PTD_DECODER_FAST, b);
		bad |= check(argv[1], PTD_DECODER_LIBIPT, b);
	}
	return bad;
}
