/* count_only TRACE: a PTD_OPEN_COUNT_ONLY session counts the same
 * instructions and errors as a session read instruction by instruction
 * with ptd_next, at 1 and 2 threads, and refuses ptd_next itself. */
#include <inttypes.h>
#include <stdio.h>
#include <ptdecode.h>

static int count(const char *path, unsigned int flags, unsigned int threads,
		 uint64_t *insns, uint64_t *errors)
{
	struct ptd_open_opts oo = { .sz = sizeof(oo), .flags = flags, .threads = threads };
	struct ptd_stats st = { .sz = sizeof(st) };
	struct ptd_session *s;
	struct ptd_event ev;
	int rc;

	*insns = *errors = 0;
	if (ptd_open(&s, path, &oo) < 0) {
		fprintf(stderr, "count_only: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return -1;
	}
	if (flags & PTD_OPEN_COUNT_ONLY) {
		const struct ptd_block *blocks;
		size_t n;
		int have;

		if (ptd_next(s, &ev) != PTD_ERR_INVAL) {
			fprintf(stderr, "count_only: ptd_next did not refuse a count-only session\n");
			ptd_close(s);
			return -1;
		}
		while ((rc = ptd_next_blocks(s, &blocks, &n, &ev, &have)) == 0)
			;
		ptd_get_stats(s, &st);
		*insns = st.instructions;
		*errors = st.errors;
	} else {
		while ((rc = ptd_next(s, &ev)) == 0) {
			*insns += ev.kind == PTD_EV_INSN;
			*errors += ev.kind == PTD_EV_ERROR;
		}
	}
	ptd_close(s);
	return rc == PTD_ERR_END ? 0 : -1;
}

int main(int argc, char **argv)
{
	uint64_t ni, ne, ci, ce;

	if (argc != 2 || count(argv[1], 0, 1, &ni, &ne))
		return 1;
	for (unsigned int j = 1; j <= 2; j++) {
		if (count(argv[1], PTD_OPEN_COUNT_ONLY, j, &ci, &ce))
			return 1;
		if (ci != ni || ce != ne) {
			printf("FAIL: count-only -j%u: %" PRIu64 " instructions, %" PRIu64
			       " errors; ptd_next: %" PRIu64 ", %" PRIu64 "\n", j, ci, ce, ni, ne);
			return 1;
		}
	}
	printf("OK: %" PRIu64 " instructions, %" PRIu64 " errors either way\n", ni, ne);
	return 0;
}
