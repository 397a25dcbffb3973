/* count_insns - the smallest libptdecode program: count the instructions of
 * a trace and list its decode errors.  Build: cc count_insns.c
 * $(pkg-config --cflags --libs libptdecode) */
#include <inttypes.h>
#include <stdio.h>
#include <ptdecode.h>

int main(int argc, char **argv)
{
	struct ptd_session *s;
	struct ptd_event ev;
	uint64_t n = 0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s TRACE.ptd|perf.data\n", argv[0]);
		return 2;
	}
	if (ptd_open(&s, argv[1], NULL) < 0) {
		fprintf(stderr, "%s\n", ptd_errmsg(s));
		ptd_close(s);
		return 1;
	}
	while ((rc = ptd_next(s, &ev)) == 0) {
		if (ev.kind == PTD_EV_INSN)
			n++;
		else if (ev.kind == PTD_EV_ERROR)
			printf("error at trace offset %#" PRIx64 ": %s\n", ev.offset, ev.msg);
	}
	printf("%" PRIu64 " instructions\n", n);
	ptd_close(s);
	return rc == PTD_ERR_END ? 0 : 1;
}
