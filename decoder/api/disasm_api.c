/* SPDX-License-Identifier: MIT */
/*
 * disasm_api - the public disassembler (ptd_disasm_*, ptdecode.h): the
 * backend's capstone wrapper (backend/disasm.h), one handle per execution
 * mode, made when a mode is first met.
 */
#include "disasm.h"
#include "ptdecode.h"

#include <stdlib.h>
#include <string.h>

enum { NMODES = 6 };

struct ptd_disasm {
	unsigned int flags;
	struct disasm *mode[NMODES];
};

int ptd_disasm_new(struct ptd_disasm **out, const struct ptd_disasm_opts *opts)
{
	if (!out || (opts && opts->sz < sizeof(size_t) + sizeof(unsigned int)))
		return PTD_ERR_INVAL;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return PTD_ERR_NOMEM;
	(*out)->flags = opts ? opts->flags : 0;
	return 0;
}

void ptd_disasm_free(struct ptd_disasm *d)
{
	if (!d)
		return;
	for (int i = 0; i < NMODES; i++)
		disasm_free(d->mode[i]);
	free(d);
}

static struct disasm *for_mode(struct ptd_disasm *d, int mode)
{
	static const enum disasm_arch arch[NMODES] = {
		DISASM_X86_16, DISASM_X86_32, DISASM_X86_64,
		DISASM_ARM, DISASM_THUMB, DISASM_A64,
	};
	int i = mode == PTD_MODE_16 ? 0 : mode == PTD_MODE_32 ? 1 :
		mode == PTD_MODE_ARM32 ? 3 : mode == PTD_MODE_THUMB ? 4 :
		mode == PTD_MODE_A64 ? 5 : 2;

	if (!d->mode[i])
		d->mode[i] = disasm_new(arch[i], d->flags & PTD_DISASM_ATT ? DISASM_ATT : 0,
					NULL, 0);
	return d->mode[i];
}

int ptd_disasm_text(struct ptd_disasm *d, const struct ptd_event *ev,
		    char *buf, size_t len)
{
	struct disasm *h;
	int n;

	if (!d || !ev || !buf || !len)
		return PTD_ERR_INVAL;
	if (!(h = for_mode(d, ev->mode)))
		return PTD_ERR_NOMEM;
	n = disasm_one(h, ev->raw, ev->size, ev->ip, buf, len);
	return n < 0 ? n : (int)strlen(buf);
}

int ptd_disasm_length(struct ptd_disasm *d, const struct ptd_event *ev)
{
	struct disasm *h;
	char buf[160];

	if (!d || !ev || !ev->size || ev->size > sizeof(ev->raw))
		return PTD_ERR_INVAL;
	if (!(h = for_mode(d, ev->mode)))
		return PTD_ERR_NOMEM;
	return disasm_one(h, ev->raw, ev->size, ev->ip, buf, sizeof(buf));
}

int ptd_disasm_branch(struct ptd_disasm *d, const struct ptd_event *ev,
		      struct ptd_branch_info *bi)
{
	struct disasm_insn_info info;
	struct disasm *h;
	int n;

	if (!d || !ev || !bi)
		return PTD_ERR_INVAL;
	*bi = (struct ptd_branch_info){ 0 };
	if (!(h = for_mode(d, ev->mode)))
		return PTD_ERR_NOMEM;
	if ((n = disasm_insn_info(h, ev->raw, ev->size, ev->ip, &info)) < 0)
		return n;
	bi->indirect = info.kind == DISASM_IND_CALL || info.kind == DISASM_IND_JUMP;
	bi->has_target = info.has_target;
	bi->target = info.target;
	return 0;
}
