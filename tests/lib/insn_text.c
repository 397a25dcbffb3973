/* insn_text TRACE: ptd_insn_text() gives, for every instruction of a
 * session opened with PTD_OPEN_INSN_TEXT, the text capstone itself makes of
 * the event's bytes (the oracle: capstone called here directly, Intel
 * syntax); without the flag, text may be missing only until the first
 * call; the libipt decoder has none. */
#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <ptdecode.h>

static csh cs[3];

static int oracle(const struct ptd_event *ev, char *out, size_t len)
{
	int m = ev->mode == PTD_MODE_16 ? 0 : ev->mode == PTD_MODE_32 ? 1 : 2;
	cs_insn *in = NULL;
	size_t n = cs_disasm(cs[m], ev->raw, ev->size, ev->ip, 1, &in);

	if (n != 1) {
		snprintf(out, len, "(bad)");
		return 0;
	}
	snprintf(out, len, in->op_str[0] ? "%s %s" : "%s", in->mnemonic, in->op_str);
	cs_free(in, n);
	return 0;
}

/* Returns the number of instructions with text, -1 on a mismatch. */
static long run(const char *path, unsigned int flags, enum ptd_decoder dec,
		unsigned long *missing)
{
	struct ptd_open_opts oo = { .sz = sizeof(oo), .flags = flags, .threads = 1,
				    .decoder = dec };
	struct ptd_session *s;
	struct ptd_event ev;
	char got[160], want[160];
	long with = 0;
	int rc;

	*missing = 0;
	if (ptd_open(&s, path, &oo) < 0) {
		fprintf(stderr, "insn_text: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return -1;
	}
	while ((rc = ptd_next(s, &ev)) == 0) {
		int n = ptd_insn_text(s, &ev, got, sizeof(got));

		if (ev.kind != PTD_EV_INSN) {
			if (n != PTD_ERR_UNSUPPORTED) {
				printf("FAIL: text for a %s event\n", ptd_event_kind_name(ev.kind));
				with = -1;
				break;
			}
			continue;
		}
		if (n < 0) {
			(*missing)++;
			continue;
		}
		oracle(&ev, want, sizeof(want));
		if (strcmp(got, want) || (size_t)n != strlen(got)) {
			printf("FAIL: %#" PRIx64 ": decoder \"%s\" (%d), capstone \"%s\"\n",
			       ev.ip, got, n, want);
			with = -1;
			break;
		}
		with++;
	}
	ptd_close(s);
	return rc == PTD_ERR_END || with < 0 ? with : -1;
}

int main(int argc, char **argv)
{
	static const cs_mode modes[3] = { CS_MODE_16, CS_MODE_32, CS_MODE_64 };
	unsigned long miss, miss_lazy, miss_ref;
	long with, lazy, ref;

	if (argc != 2)
		return 2;
	for (int i = 0; i < 3; i++)
		if (cs_open(CS_ARCH_X86, modes[i], &cs[i]) != CS_ERR_OK)
			return 2;
	with = run(argv[1], PTD_OPEN_INSN_TEXT, PTD_DECODER_FAST, &miss);
	lazy = run(argv[1], 0, PTD_DECODER_FAST, &miss_lazy);
	ref = run(argv[1], PTD_OPEN_INSN_TEXT, PTD_DECODER_LIBIPT, &miss_ref);
	if (with < 0 || lazy < 0 || ref < 0)
		return 1;
	/* every instruction, unless a segment went to libipt (fallback) */
	if (with == 0 || (miss && miss * 20 > (unsigned long)with)) {
		printf("FAIL: PTD_OPEN_INSN_TEXT: %ld instructions with text, %lu without\n",
		       with, miss);
		return 1;
	}
	if (ref != 0) {
		printf("FAIL: the libipt decoder claimed text for %ld instructions\n", ref);
		return 1;
	}
	printf("OK: %ld instructions' text identical to capstone's (%lu without: "
	       "libipt fallback); lazily %ld (%lu before the first call)\n",
	       with, miss, lazy, miss_lazy);
	return 0;
}
