/* disasm_api TRACE: ptd_disasm_text and ptd_disasm_branch, for every
 * instruction of TRACE, against capstone called here directly (the
 * oracle): the same text in Intel and AT&T syntax, and for calls and
 * jumps the same direct target or the same indirectness; bad arguments
 * and undecodable bytes give errors, never a crash. */
#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>
#include <ptdecode.h>

static csh cs[2][3];   /* [att][16/32/64-bit] */

static int mode_index(const struct ptd_event *ev)
{
	return ev->mode == PTD_MODE_16 ? 0 : ev->mode == PTD_MODE_32 ? 1 : 2;
}

static int open_oracles(void)
{
	static const cs_mode m[3] = { CS_MODE_16, CS_MODE_32, CS_MODE_64 };

	for (int a = 0; a < 2; a++)
		for (int i = 0; i < 3; i++) {
			if (cs_open(CS_ARCH_X86, m[i], &cs[a][i]) != CS_ERR_OK)
				return -1;
			cs_option(cs[a][i], CS_OPT_DETAIL, CS_OPT_ON);
			if (a)
				cs_option(cs[a][i], CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
		}
	return 0;
}

/* Compares one instruction; returns 0 when both agree. */
static int check_insn(struct ptd_disasm *d, int att, const struct ptd_event *ev)
{
	cs_insn *in = NULL;
	size_t n = cs_disasm(cs[att][mode_index(ev)], ev->raw, ev->size, ev->ip, 1, &in);
	char want[160] = "(bad)", got[160];
	struct ptd_branch_info bi;
	int rc = 0;

	if (n == 1)
		snprintf(want, sizeof(want), in->op_str[0] ? "%s %s" : "%s",
			 in->mnemonic, in->op_str);
	ptd_disasm_text(d, ev, got, sizeof(got));
	if (strcmp(got, want)) {
		printf("FAIL: %#llx: text \"%s\", capstone \"%s\"\n",
		       (unsigned long long)ev->ip, got, want);
		rc = -1;
	}
	if (n == 1 && (ev->iclass == PTD_IC_CALL || ev->iclass == PTD_IC_JUMP)) {
		const cs_x86 *x = &in->detail->x86;
		int direct = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;

		if (ptd_disasm_branch(d, ev, &bi) < 0 || bi.indirect == direct ||
		    bi.has_target != direct ||
		    (direct && bi.target != (uint64_t)x->operands[0].imm)) {
			printf("FAIL: %#llx (%s): branch info differs from capstone's\n",
			       (unsigned long long)ev->ip, want);
			rc = -1;
		}
	}
	if (n)
		cs_free(in, n);
	return rc;
}

static int bad_input(struct ptd_disasm *d)
{
	struct ptd_event ev = { .kind = PTD_EV_INSN, .mode = PTD_MODE_64, .size = 1,
				.raw = { 0x06 } };   /* push es: invalid in 64-bit mode */
	struct ptd_disasm_opts tiny = { .sz = 1 };
	struct ptd_branch_info bi;
	struct ptd_disasm *x;
	char buf[32];

	if (ptd_disasm_text(d, &ev, buf, sizeof(buf)) != PTD_ERR_DECODE ||
	    strcmp(buf, "(bad)") || ptd_disasm_branch(d, &ev, &bi) != PTD_ERR_DECODE ||
	    ptd_disasm_text(d, NULL, buf, sizeof(buf)) != PTD_ERR_INVAL ||
	    ptd_disasm_text(NULL, &ev, buf, sizeof(buf)) != PTD_ERR_INVAL ||
	    ptd_disasm_branch(d, &ev, NULL) != PTD_ERR_INVAL ||
	    ptd_disasm_new(&x, &tiny) != PTD_ERR_INVAL || ptd_disasm_new(NULL, NULL) != PTD_ERR_INVAL) {
		printf("FAIL: bad input not refused as documented\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ptd_disasm_opts att = { .sz = sizeof(att), .flags = PTD_DISASM_ATT };
	struct ptd_disasm *d[2];
	struct ptd_session *s;
	struct ptd_event ev;
	long insns = 0, bad = 0;

	if (argc != 2 || open_oracles() || ptd_disasm_new(&d[0], NULL) ||
	    ptd_disasm_new(&d[1], &att)) {
		fprintf(stderr, "usage: disasm_api TRACE (and capstone must open)\n");
		return 2;
	}
	if (ptd_open(&s, argv[1], NULL) < 0) {
		fprintf(stderr, "disasm_api: %s\n", ptd_errmsg(s));
		return 1;
	}
	while (ptd_next(s, &ev) == 0 && bad < 10)
		if (ev.kind == PTD_EV_INSN) {
			insns++;
			bad += check_insn(d[0], 0, &ev) < 0;
			bad += check_insn(d[1], 1, &ev) < 0;
		}
	bad += bad_input(d[0]) < 0;
	ptd_close(s);
	ptd_disasm_free(d[0]);
	ptd_disasm_free(d[1]);
	if (!insns)
		printf("FAIL: no instructions\n");
	else if (!bad)
		printf("OK: %ld instructions: text and branch info equal capstone's\n", insns);
	return bad || !insns;
}
