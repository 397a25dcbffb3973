/* SPDX-License-Identifier: MIT */
/* disasm - capstone wrapper: text and branch classes (see disasm.h). */
#include "disasm.h"
#include "ptdecode.h"
#include "util.h"

#include <capstone/capstone.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct disasm {
	enum disasm_arch arch;
	csh fast;           /* no detail: text, lengths, instruction ids */
	csh full;           /* detail: operands of branches */
	cs_insn *fast_insn, *full_insn;
	const cs_insn *last;  /* the last instruction decoded, NULL if none */
};

static int is_x86(enum disasm_arch a)
{
	return a == DISASM_X86_16 || a == DISASM_X86_32 || a == DISASM_X86_64;
}

static int open_handle(enum disasm_arch arch, unsigned int flags, int detail,
		       csh *h, cs_insn **insn, char *err, size_t errlen)
{
	cs_arch ca;
	cs_mode cm;
	cs_err e;

	switch (arch) {
	case DISASM_X86_16: ca = CS_ARCH_X86; cm = CS_MODE_16; break;
	case DISASM_X86_32: ca = CS_ARCH_X86; cm = CS_MODE_32; break;
	case DISASM_X86_64: ca = CS_ARCH_X86; cm = CS_MODE_64; break;
	case DISASM_ARM: ca = CS_ARCH_ARM; cm = CS_MODE_ARM; break;
	case DISASM_THUMB: ca = CS_ARCH_ARM; cm = CS_MODE_THUMB; break;
	case DISASM_A64: ca = CS_ARCH_ARM64; cm = CS_MODE_ARM; break;
	default:
		util_errf(err, errlen, "unknown disassembler architecture %d", (int)arch);
		return PTD_ERR_INVAL;
	}
	e = cs_open(ca, cm, h);
	if (e != CS_ERR_OK) {
		util_errf(err, errlen, "capstone cannot open this architecture: %s",
			  cs_strerror(e));
		return PTD_ERR_UNSUPPORTED;
	}
	if (is_x86(arch) && (flags & DISASM_ATT) &&
	    cs_option(*h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) != CS_ERR_OK) {
		util_errf(err, errlen, "capstone was built without AT&T syntax");
		cs_close(h);
		return PTD_ERR_UNSUPPORTED;
	}
	if (detail)
		cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	*insn = cs_malloc(*h);
	if (!*insn) {
		util_errf(err, errlen, "out of memory");
		cs_close(h);
		return PTD_ERR_NOMEM;
	}
	return 0;
}

struct disasm *disasm_new(enum disasm_arch arch, unsigned int flags,
			  char *err, size_t errlen)
{
	struct disasm *d = calloc(1, sizeof(*d));

	if (!d) {
		util_errf(err, errlen, "out of memory");
		return NULL;
	}
	d->arch = arch;
	if (open_handle(arch, flags, 0, &d->fast, &d->fast_insn, err, errlen) < 0) {
		free(d);
		return NULL;
	}
	if (open_handle(arch, flags, 1, &d->full, &d->full_insn, err, errlen) < 0) {
		cs_free(d->fast_insn, 1);
		cs_close(&d->fast);
		free(d);
		return NULL;
	}
	return d;
}

void disasm_free(struct disasm *d)
{
	if (!d)
		return;
	cs_free(d->fast_insn, 1);
	cs_free(d->full_insn, 1);
	cs_close(&d->fast);
	cs_close(&d->full);
	free(d);
}

static int decode(csh h, cs_insn *insn, const uint8_t *bytes, size_t size,
		  uint64_t ip)
{
	const uint8_t *code = bytes;
	size_t left = size;
	uint64_t addr = ip;

	if (!cs_disasm_iter(h, &code, &left, &addr, insn))
		return PTD_ERR_DECODE;
	return (int)insn->size;
}

/* "mnemonic op_str" of a decoded instruction, without printf: this runs
 * once per distinct instruction of a text dump.  Returns the length. */
static size_t put_text(const cs_insn *in, char *out, size_t outlen)
{
	size_t m = strnlen(in->mnemonic, outlen - 1);
	size_t o = in->op_str[0] && m + 1 < outlen - 1 ?
		   strnlen(in->op_str, outlen - 2 - m) : 0;

	memcpy(out, in->mnemonic, m);
	if (o) {
		out[m++] = ' ';
		memcpy(out + m, in->op_str, o);
	}
	out[m + o] = '\0';
	return m + o;
}

int disasm_one(struct disasm *d, const uint8_t *bytes, size_t size,
	       uint64_t ip, char *out, size_t outlen)
{
	int n;

	if (!d || !bytes || !out || !outlen)
		return PTD_ERR_INVAL;
	d->last = NULL;
	n = decode(d->fast, d->fast_insn, bytes, size, ip);
	if (n < 0) {
		snprintf(out, outlen, "(bad)");
		return n;
	}
	d->last = d->fast_insn;
	put_text(d->fast_insn, out, outlen);
	return n;
}

int disasm_last_text(const struct disasm *d, char *out, size_t outlen)
{
	if (!d || !out || !outlen || !d->last)
		return PTD_ERR_INVAL;
	return (int)put_text(d->last, out, outlen);
}

/* ---------------------------------------------------------------- x86 */

/* Class of an x86 instruction id, or -1 when the operands decide
 * (jmp/call: immediate or not). */
static int x86_class(unsigned int id)
{
	switch (id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return DISASM_COND_JUMP;
	case X86_INS_JMP: case X86_INS_CALL:
		return -1;
	case X86_INS_RET:
		return DISASM_RETURN;
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT:
	case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_LCALL: case X86_INS_VMCALL: case X86_INS_VMMCALL:
		return DISASM_FAR_CALL;
	case X86_INS_SYSRET: case X86_INS_SYSEXIT: case X86_INS_IRET:
	case X86_INS_IRETD: case X86_INS_IRETQ: case X86_INS_RETF:
	case X86_INS_RETFQ:
		return DISASM_FAR_RETURN;
	case X86_INS_LJMP:
		return DISASM_FAR_JUMP;
	default:
		return DISASM_OTHER;
	}
}

static void x86_info(struct disasm *d, const uint8_t *bytes, size_t size,
		     uint64_t ip, struct disasm_insn_info *info)
{
	int c = x86_class(d->fast_insn->id);
	const cs_x86 *x;

	if (c != -1 && c != DISASM_COND_JUMP) {
		info->kind = (enum disasm_branch)c;
		return;
	}
	/* Branch with operands that matter: decode again with detail. */
	if (decode(d->full, d->full_insn, bytes, size, ip) < 0) {
		info->kind = c == -1 ? DISASM_IND_JUMP : (enum disasm_branch)c;
		return;
	}
	x = &d->full_insn->detail->x86;
	if (x->op_count >= 1 && x->operands[0].type == X86_OP_IMM) {
		info->has_target = 1;
		info->target = (uint64_t)x->operands[0].imm;
		if (d->arch != DISASM_X86_64)   /* wrap like the CPU does */
			info->target &= d->arch == DISASM_X86_16 ? 0xffff : 0xffffffff;
	}
	if (c == DISASM_COND_JUMP)
		info->kind = DISASM_COND_JUMP;
	else if (d->full_insn->id == X86_INS_CALL)
		info->kind = info->has_target ? DISASM_CALL : DISASM_IND_CALL;
	else
		info->kind = info->has_target ? DISASM_JUMP : DISASM_IND_JUMP;
}

/* ---------------------------------------------------------------- Arm */

/* The last immediate operand: the branch target capstone computed. */
static int last_imm(const cs_insn *in, int a64, uint64_t *target)
{
	int i;

	if (a64) {
		const cs_arm64 *x = &in->detail->arm64;
		for (i = x->op_count - 1; i >= 0; i--)
			if (x->operands[i].type == ARM64_OP_IMM) {
				*target = (uint64_t)x->operands[i].imm;
				return 1;
			}
	} else {
		const cs_arm *x = &in->detail->arm;
		for (i = x->op_count - 1; i >= 0; i--)
			if (x->operands[i].type == ARM_OP_IMM) {
				*target = (uint32_t)x->operands[i].imm;
				return 1;
			}
	}
	return 0;
}

static void a64_info(const cs_insn *in, struct disasm_insn_info *info)
{
	const cs_arm64 *x = &in->detail->arm64;

	switch (in->id) {
	case ARM64_INS_B:
		info->has_target = last_imm(in, 1, &info->target);
		info->kind = x->cc != ARM64_CC_INVALID && x->cc != ARM64_CC_AL ?
			     DISASM_COND_JUMP : DISASM_JUMP;
		break;
	case ARM64_INS_CBZ: case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ: case ARM64_INS_TBNZ:
		info->has_target = last_imm(in, 1, &info->target);
		info->kind = DISASM_COND_JUMP;
		break;
	case ARM64_INS_BL:
		info->has_target = last_imm(in, 1, &info->target);
		info->kind = DISASM_CALL;
		break;
	case ARM64_INS_BR: info->kind = DISASM_IND_JUMP; break;
	case ARM64_INS_BLR: info->kind = DISASM_IND_CALL; break;
	case ARM64_INS_RET: info->kind = DISASM_RETURN; break;
	case ARM64_INS_SVC: case ARM64_INS_HVC: case ARM64_INS_SMC:
		info->kind = DISASM_FAR_CALL;
		break;
	case ARM64_INS_ERET: info->kind = DISASM_FAR_RETURN; break;
	default: break;
	}
}

/* Does an A32/T32 instruction write the PC (pop {pc}, ldr pc, mov pc)? */
static int arm_writes_pc(const cs_insn *in, int *via_sp)
{
	const cs_arm *x = &in->detail->arm;
	int i, pc = 0;

	*via_sp = 0;
	for (i = 0; i < x->op_count; i++) {
		const cs_arm_op *op = &x->operands[i];
		if (op->type == ARM_OP_REG && op->reg == ARM_REG_PC &&
		    (op->access & CS_AC_WRITE))
			pc = 1;
		if ((op->type == ARM_OP_REG && op->reg == ARM_REG_SP) ||
		    (op->type == ARM_OP_MEM && op->mem.base == ARM_REG_SP))
			*via_sp = 1;
	}
	/* pop's register list may come without access flags. */
	if (!pc && (in->id == ARM_INS_POP || in->id == ARM_INS_LDM ||
		    in->id == ARM_INS_LDMIB || in->id == ARM_INS_LDMDA ||
		    in->id == ARM_INS_LDMDB))
		for (i = 0; i < x->op_count; i++)
			if (x->operands[i].type == ARM_OP_REG &&
			    x->operands[i].reg == ARM_REG_PC)
				pc = 1;
	if (in->id == ARM_INS_POP)
		*via_sp = 1;
	return pc;
}

static void arm_info(const cs_insn *in, struct disasm_insn_info *info)
{
	const cs_arm *x = &in->detail->arm;
	int cond = x->cc != ARM_CC_INVALID && x->cc != ARM_CC_AL;
	int via_sp;

	info->cond = cond;
	switch (in->id) {
	case ARM_INS_B:
		info->has_target = last_imm(in, 0, &info->target);
		info->kind = cond ? DISASM_COND_JUMP : DISASM_JUMP;
		return;
	case ARM_INS_CBZ: case ARM_INS_CBNZ:
		info->has_target = last_imm(in, 0, &info->target);
		info->kind = DISASM_COND_JUMP;
		info->cond = 1;
		return;
	case ARM_INS_BL: case ARM_INS_BLX:
		info->has_target = last_imm(in, 0, &info->target);
		info->kind = info->has_target ? DISASM_CALL : DISASM_IND_CALL;
		return;
	case ARM_INS_BX: case ARM_INS_BXJ:
		info->kind = x->op_count >= 1 && x->operands[0].type == ARM_OP_REG &&
			     x->operands[0].reg == ARM_REG_LR ?
			     DISASM_RETURN : DISASM_IND_JUMP;
		return;
	case ARM_INS_TBB: case ARM_INS_TBH:
		info->kind = DISASM_IND_JUMP;
		return;
	case ARM_INS_SVC: case ARM_INS_SMC: case ARM_INS_HVC:
		info->kind = DISASM_FAR_CALL;
		return;
	case ARM_INS_ERET: case ARM_INS_RFEDA: case ARM_INS_RFEDB:
	case ARM_INS_RFEIA: case ARM_INS_RFEIB:
		info->kind = DISASM_FAR_RETURN;
		return;
	default:
		break;
	}
	if (!arm_writes_pc(in, &via_sp)) {
		info->cond = 0;   /* not a branch */
	} else {
		if (in->id == ARM_INS_SUB || in->id == ARM_INS_MOV) {
			/* mov pc, lr returns; subs pc, lr, #n returns from
			 * an exception */
			int from_lr = x->op_count >= 2 &&
				      x->operands[1].type == ARM_OP_REG &&
				      x->operands[1].reg == ARM_REG_LR;
			info->kind = !from_lr ? DISASM_IND_JUMP :
				     in->id == ARM_INS_SUB ? DISASM_FAR_RETURN :
				     DISASM_RETURN;
		} else {
			info->kind = via_sp ? DISASM_RETURN : DISASM_IND_JUMP;
		}
	}
}

int disasm_insn_info(struct disasm *d, const uint8_t *bytes, size_t size,
		     uint64_t ip, struct disasm_insn_info *info)
{
	int n;

	if (!d || !bytes || !info)
		return PTD_ERR_INVAL;
	memset(info, 0, sizeof(*info));
	d->last = NULL;
	if (is_x86(d->arch)) {
		n = decode(d->fast, d->fast_insn, bytes, size, ip);
		if (n < 0)
			return n;
		d->last = d->fast_insn;   /* a re-decode with detail: same text */
		info->len = (unsigned int)n;
		x86_info(d, bytes, size, ip, info);
		info->cond = info->kind == DISASM_COND_JUMP;
		return n;
	}
	/* Arm: too many ways to write the PC to decide without operands. */
	n = decode(d->full, d->full_insn, bytes, size, ip);
	if (n < 0)
		return n;
	d->last = d->full_insn;
	info->len = (unsigned int)n;
	if (d->arch == DISASM_A64)
		a64_info(d->full_insn, info);
	else
		arm_info(d->full_insn, info);
	if (info->kind == DISASM_COND_JUMP)
		info->cond = 1;
	return n;
}

const char *disasm_branch_name(enum disasm_branch kind)
{
	static const char *const names[] = {
		"other", "cond-jump", "jump", "call", "ind-jump", "ind-call",
		"return", "far-call", "far-return", "far-jump",
	};

	if ((unsigned int)kind < sizeof(names) / sizeof(names[0]))
		return names[kind];
	return "?";
}

void disasm_capstone_version(char *buf, size_t len)
{
	int major = 0, minor = 0;

	cs_version(&major, &minor);
	snprintf(buf, len, "%d.%d", major, minor);
}
