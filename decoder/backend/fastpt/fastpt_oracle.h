/* SPDX-License-Identifier: MIT */
/*
 * fastpt_oracle - libipt as the judge of instructions capstone cannot
 * decode, for the fast Intel PT decoder's block builder (backend stage,
 * backend/fastpt/).
 *
 * A tiny synthetic trace (PSB, FUP at the address, MODE.Exec, PSBEND)
 * makes libipt's own instruction decoder report that instruction's length
 * and class, reading the code through the image store.  One per worker.
 */
#ifndef PTD_FASTPT_ORACLE_H
#define PTD_FASTPT_ORACLE_H

#include <stdint.h>

struct imgstore;
struct pt_insn_decoder;
struct pt_encoder;
struct pt_image;

struct oracle {
	uint8_t buf[64];
	struct pt_insn_decoder *dec;
	struct pt_encoder *enc;
	struct pt_image *image;
	struct imgstore *st;
	int32_t pid;
	uint64_t time;
};

/* Length and libipt class (enum ptd_insn_class) of the instruction at ip
 * in address space pid at time, in execution mode mode (enum
 * ptd_exec_mode).  Returns the length (> 0), or -1 when libipt cannot
 * decode it either (or is a branch: its target is not the oracle's to
 * judge). */
int oracle_insn(struct oracle *o, struct imgstore *st, int32_t pid,
		uint64_t time, uint8_t mode, uint64_t ip, uint8_t *iclass);

void oracle_free(struct oracle *o);

#endif
