/* SPDX-License-Identifier: MIT */
/*
 * disasm (stage: backend/) - one-instruction disassembly and branch classification on
 * capstone, for the text views (x86) and for walking Arm code ranges
 * (instruction lengths and branch kinds for A64, T32, A32).
 *
 * One object per thread: an object holds capstone handles and scratch
 * space and is not thread-safe; distinct objects are independent.
 * disasm_insn_info decodes without capstone's (slow) detail mode and only
 * re-decodes with detail when the instruction is a branch whose target or
 * kind depends on its operands.
 *
 * Known limits: Thumb instructions inside an IT block are classified as if
 * unconditional (capstone tracks IT state only within one call).
 */
#ifndef PTD_DISASM_H
#define PTD_DISASM_H

#include <stddef.h>
#include <stdint.h>

enum disasm_arch {
	DISASM_X86_16,
	DISASM_X86_32,
	DISASM_X86_64,
	DISASM_ARM,      /* A32 */
	DISASM_THUMB,    /* T32 (Thumb-2) */
	DISASM_A64,      /* AArch64 */
};

enum disasm_flags {
	DISASM_ATT = 1u << 0,   /* x86 AT&T syntax (default: Intel, like
				 * ptxed and objdump -M intel) */
};

enum disasm_branch {
	DISASM_OTHER = 0,      /* not a change of flow */
	DISASM_COND_JUMP,      /* jcc, loop, jrcxz; b.cond, cbz, tbz */
	DISASM_JUMP,           /* direct jump: jmp rel; b */
	DISASM_CALL,           /* direct call: call rel; bl, blx imm */
	DISASM_IND_JUMP,       /* jmp reg/mem; br, bx reg, ldr pc, tbb */
	DISASM_IND_CALL,       /* call reg/mem; blr, blx reg */
	DISASM_RETURN,         /* ret; ret, bx lr, pop {pc} */
	DISASM_FAR_CALL,       /* syscall, sysenter, int*, lcall; svc, hvc, smc */
	DISASM_FAR_RETURN,     /* sysret, sysexit, iret, retf; eret */
	DISASM_FAR_JUMP,       /* ljmp */
};

struct disasm_insn_info {
	unsigned int len;           /* bytes */
	enum disasm_branch kind;
	int cond;                   /* executes only if a condition holds:
				     * every COND_JUMP, and Arm branches with
				     * a condition code (bxeq lr, popne {pc}) */
	int has_target;             /* target is known (direct branches) */
	uint64_t target;
};

struct disasm;

/* Returns a new object, or NULL with a message in err. */
struct disasm *disasm_new(enum disasm_arch arch, unsigned int flags,
			  char *err, size_t errlen);
void disasm_free(struct disasm *d);

/* Disassembles the instruction at bytes[0..size) located at ip into out as
 * "mnemonic operands".  Returns its length in bytes (> 0), or
 * PTD_ERR_DECODE when the bytes are not a valid instruction (out then holds
 * "(bad)"), PTD_ERR_INVAL for bad arguments. */
int disasm_one(struct disasm *d, const uint8_t *bytes, size_t size,
	       uint64_t ip, char *out, size_t outlen);

/* The text of the instruction the last successful disasm_one or
 * disasm_insn_info call decoded, as disasm_one writes it: returns its
 * length (>= 0), or PTD_ERR_INVAL when nothing was decoded yet.  Lets a
 * caller that classified an instruction keep its text without decoding
 * it a second time (capstone formats the text either way). */
int disasm_last_text(const struct disasm *d, char *out, size_t outlen);

/* Length and branch class of the instruction at bytes (at address ip).
 * Returns its length (> 0) or PTD_ERR_DECODE / PTD_ERR_INVAL. */
int disasm_insn_info(struct disasm *d, const uint8_t *bytes, size_t size,
		     uint64_t ip, struct disasm_insn_info *info);

/* The linked capstone's version (cs_version), e.g. "4.0". */
void disasm_capstone_version(char *buf, size_t len);

/* Name of a branch class ("cond-jump", ...), never NULL. */
const char *disasm_branch_name(enum disasm_branch kind);

#endif
