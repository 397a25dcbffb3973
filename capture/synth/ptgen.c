/* SPDX-License-Identifier: MIT */
/* ptgen - Intel PT packet generation for ptsynth.  See ptgen.h. */
#include "ptgen.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "ptdecode.h"

#define RETSTACK 64          /* like hardware and libipt: a 64-entry ring */
#define BUF_SIZE (1u << 20)  /* one piece; psb_period is capped well below */

struct ptgen {
	struct ptgen_opts o;
	ptgen_flush_fn flush;
	void *ctx;
	struct pt_encoder *enc;
	uint8_t *buf;
	uint64_t piece_tsc;       /* TSC at the start of the current piece */
	uint64_t since_psb;       /* bytes since the last PSB */
	uint64_t tsc;
	uint64_t last_tsc;         /* value of the last TSC packet */
	uint64_t last_ip;         /* IP compression reference; 0 after PSB */
	int enabled;
	int in_psb;               /* inside PSB+: no CYC there */
	uint64_t tnt;             /* pending TNT bits, first branch highest */
	int ntnt;
	uint64_t tnt_tsc;         /* time of the first pending TNT bit */
	uint64_t mtc_k;           /* CTC >> mtc_freq of the last MTC period */
	uint64_t next_mtc;        /* TSC at which CTC bit mtc_freq next toggles */
	uint64_t last_cyc;        /* TSC of the last CYC (cycle counter reset) */
	int ovf_psb;              /* the PSB+ being written ends an overflow */
	int after_ovf_psb;        /* no PSB+ or TIP.PGE since such a PSB+ */
	int after_flow;           /* the last instruction's target is known
				   * from a packet (TNT bit, TIP, TIP.PGE) */
	uint64_t ret[RETSTACK];   /* return-compression ring */
	int ret_top, ret_n;
	struct ptgen_stats st;
};

static int emit(struct ptgen *g, const struct pt_packet *p)
{
	int r = pt_enc_next(g->enc, p);
	if (r < 0)
		return PTD_ERR_LIMIT;
	g->since_psb += (uint64_t)r;
	g->st.bytes += (uint64_t)r;
	return 0;
}

/* CYC in front of a CYC-eligible packet that happens at TSC t: the core
 * cycles since the previous CYC (one cycle per TSC tick here).  At most
 * one per cycle, and none inside PSB+. */
static int cyc_at(struct ptgen *g, uint64_t t)
{
	struct pt_packet p;

	if (!g->o.cyc || g->in_psb || t <= g->last_cyc)
		return 0;
	memset(&p, 0, sizeof(p));
	p.type = ppt_cyc;
	p.payload.cyc.value = t - g->last_cyc;
	g->last_cyc = t;
	g->st.cycs++;
	return emit(g, &p);
}

static int flush_tnt(struct ptgen *g)
{
	struct pt_packet p;
	int r;

	if (!g->ntnt)
		return 0;
	/* the CYC in front of a TNT times its first branch */
	if ((r = cyc_at(g, g->tnt_tsc)))
		return r;
	memset(&p, 0, sizeof(p));
	p.type = g->ntnt > 6 ? ppt_tnt_64 : ppt_tnt_8;
	p.payload.tnt.bit_size = (uint8_t)g->ntnt;
	p.payload.tnt.payload = g->tnt;
	r = emit(g, &p);
	g->tnt = 0;
	g->ntnt = 0;
	return r;
}

static int add_tnt(struct ptgen *g, int taken)
{
	int max = g->o.long_tnt ? 47 : 6;

	if (!g->ntnt)
		g->tnt_tsc = g->tsc;
	g->tnt = g->tnt << 1 | (taken ? 1 : 0);
	g->ntnt++;
	g->st.tnt_bits++;
	return g->ntnt >= max ? flush_tnt(g) : 0;
}

/* The shortest IP compression that the decoder can expand from last_ip. */
static enum pt_ip_compression ipc_for(uint64_t last, uint64_t ip)
{
	if ((last >> 16) == (ip >> 16))
		return pt_ipc_update_16;
	if ((last >> 32) == (ip >> 32))
		return pt_ipc_update_32;
	if ((uint64_t)((int64_t)(ip << 16) >> 16) == ip)
		return pt_ipc_sext_48;
	if ((last >> 48) == (ip >> 48))
		return pt_ipc_update_48;
	return pt_ipc_full;
}

static int emit_ip(struct ptgen *g, enum pt_packet_type type, uint64_t ip,
		   int suppressed)
{
	struct pt_packet p;
	int r;

	if ((r = flush_tnt(g)) || (r = cyc_at(g, g->tsc)))
		return r;
	memset(&p, 0, sizeof(p));
	p.type = type;
	if (suppressed) {
		p.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		/* The FUP of a PSB+ that ends an overflow: 6 bytes sign-
		 * extended, as for an address above 4 GiB (perf 6.1 takes
		 * no compressed IP there: it has no last IP after the
		 * overflow, and loses the trace up to the next PSB) */
		p.payload.ip.ipc = g->ovf_psb && type == ppt_fup &&
				   (uint64_t)((int64_t)(ip << 16) >> 16) == ip ?
				   pt_ipc_sext_48 : ipc_for(g->last_ip, ip);
		p.payload.ip.ip = ip;
		g->last_ip = ip;
	}
	return emit(g, &p);
}

static int emit_simple(struct ptgen *g, enum pt_packet_type type)
{
	struct pt_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return emit(g, &p);
}

/* CTC at TSC t, and the TSC at which CTC reaches c. */
static uint64_t ctc_of(const struct ptgen *g, uint64_t t)
{
	return t / g->o.ctc_n * g->o.ctc_d +
	       t % g->o.ctc_n * g->o.ctc_d / g->o.ctc_n;
}

static uint64_t tsc_of_ctc(const struct ptgen *g, uint64_t c)
{
	return c / g->o.ctc_d * g->o.ctc_n +
	       (c % g->o.ctc_d * g->o.ctc_n + g->o.ctc_d - 1) / g->o.ctc_d;
}

/* TSC, and with MTC on the TMA that ties it to the crystal clock: CTC[15:0]
 * and the fast counter, the TSC ticks since that CTC value began (so a
 * decoder puts the CTC tick at TSC - FC, as the SDM and libipt do). */
static int emit_tsc(struct ptgen *g)
{
	struct pt_packet p;
	uint64_t ctc;
	int r;

	if (!g->o.tsc)
		return 0;
	if ((r = cyc_at(g, g->tsc)))
		return r;
	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = g->tsc & ((1ull << 56) - 1);
	g->last_tsc = g->tsc;
	g->st.tscs++;
	if ((r = emit(g, &p)) || !g->o.mtc)
		return r;
	ctc = ctc_of(g, g->tsc);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tma;
	p.payload.tma.ctc = (uint16_t)ctc;
	p.payload.tma.fc = (uint16_t)(g->tsc - tsc_of_ctc(g, ctc));
	return emit(g, &p);
}

static int psb_emit(struct ptgen *g, uint64_t ip);

/* The MTCs of every CTC period that began up to TSC now.  Pending TNT bits
 * go out first: their branches ran before the MTC, and a decoder times
 * instructions by the timing packets in front of theirs. */
static int mtc_catch_up(struct ptgen *g, uint64_t now)
{
	struct pt_packet p;
	int r;

	if (!g->o.mtc)
		return 0;
	while (g->next_mtc <= now) {
		uint64_t edge = g->next_mtc;

		if ((r = flush_tnt(g)) || (r = cyc_at(g, edge)))
			return r;
		g->mtc_k++;
		g->next_mtc = tsc_of_ctc(g, (g->mtc_k + 1) << g->o.mtc_freq);
		memset(&p, 0, sizeof(p));
		p.type = ppt_mtc;
		p.payload.mtc.ctc = (uint8_t)g->mtc_k;
		g->st.mtcs++;
		if ((r = emit(g, &p)))
			return r;
		/* Long stretches outside traced code still get their PSB+,
		 * like hardware, so pieces stay small.  It goes after this
		 * MTC: a TMA in the MTC period the next MTC names would read
		 * as a full 8-bit wrap to perf. */
		if (!g->enabled && g->since_psb >= g->o.psb_period) {
			uint64_t save = g->tsc;

			g->tsc = edge;
			r = psb_emit(g, 0);
			g->tsc = save;
			if (r)
				return r;
		}
	}
	return 0;
}

static int emit_mode_exec(struct ptgen *g)
{
	struct pt_packet p;
	int r;

	if ((r = cyc_at(g, g->tsc)))
		return r;
	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;   /* 64-bit code */
	p.payload.mode.bits.exec.csd = 0;
	return emit(g, &p);
}

static void ret_clear(struct ptgen *g) { g->ret_n = 0; }

static void ret_push(struct ptgen *g, uint64_t a)
{
	g->ret_top = (g->ret_top + 1) % RETSTACK;
	g->ret[g->ret_top] = a;
	if (g->ret_n < RETSTACK)
		g->ret_n++;   /* else the oldest entry was overwritten */
}

/* Hands the bytes written so far to the flush callback; the next piece
 * starts at the current position. */
static int cut(struct ptgen *g)
{
	uint64_t off;
	int r;

	if (pt_enc_get_offset(g->enc, &off) < 0 || off == 0)
		return 0;
	r = g->flush(g->ctx, g->buf, (size_t)off, g->piece_tsc, g->tsc);
	if (r)
		return r;
	pt_enc_sync_set(g->enc, 0);
	g->piece_tsc = g->tsc;
	return 0;
}

/* PIP (NR=1) and VMCS: the state of a PSB+ in VMX non-root operation. */
static int emit_guest_state(struct ptgen *g)
{
	struct pt_packet p;
	int r;

	memset(&p, 0, sizeof(p));
	p.type = ppt_pip;
	p.payload.pip.cr3 = PTGEN_GUEST_CR3;
	p.payload.pip.nr = 1;
	if ((r = emit(g, &p)))
		return r;
	memset(&p, 0, sizeof(p));
	p.type = ppt_vmcs;
	p.payload.vmcs.base = PTGEN_GUEST_VMCS;
	return emit(g, &p);
}

/* PSB+: PSB, TSC, CBR, [PIP, VMCS in a guest], [MODE.Exec, FUP(ip) while
 * tracing], PSBEND.  The
 * IP compression and the return stack start over. */
static int psb_emit(struct ptgen *g, uint64_t ip)
{
	struct pt_packet p;
	int r;

	if ((r = flush_tnt(g)) || (r = cut(g)))
		return r;
	g->since_psb = 0;
	g->after_ovf_psb = 0;
	g->last_ip = 0;
	ret_clear(g);
	g->st.psbs++;
	g->in_psb = 1;
	if ((r = emit_simple(g, ppt_psb)) || (r = emit_tsc(g)))
		return r;
	memset(&p, 0, sizeof(p));
	p.type = ppt_cbr;
	p.payload.cbr.ratio = g->o.cbr;
	if ((r = emit(g, &p)))
		return r;
	if (g->o.guest && (r = emit_guest_state(g)))
		return r;
	if (g->enabled) {
		if ((r = emit_mode_exec(g)) || (r = emit_ip(g, ppt_fup, ip, 0)))
			return r;
		g->st.fups++;
	}
	r = emit_simple(g, ppt_psbend);
	g->in_psb = 0;
	return r;
}

static int psb_plus(struct ptgen *g, uint64_t ip)
{
	int r = mtc_catch_up(g, g->tsc);
	return r ? r : psb_emit(g, ip);
}

int ptgen_new(struct ptgen **out, const struct ptgen_opts *o,
	      ptgen_flush_fn fn, void *ctx)
{
	struct pt_config cfg;
	struct ptgen *g;

	*out = NULL;
	if (o->psb_period < 64 || o->psb_period > BUF_SIZE / 4)
		return PTD_ERR_INVAL;
	/* timing packets need TSC to anchor them; TMA's FC has 9 bits */
	if ((o->mtc || o->cyc) && !o->tsc)
		return PTD_ERR_INVAL;
	if (o->mtc_freq > 15 || (o->ctc_n && !o->ctc_d) ||
	    (o->ctc_n && o->ctc_n / o->ctc_d >= 512))
		return PTD_ERR_INVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return PTD_ERR_NOMEM;
	g->buf = malloc(BUF_SIZE);
	if (!g->buf) {
		free(g);
		return PTD_ERR_NOMEM;
	}
	g->o = *o;
	g->flush = fn;
	g->ctx = ctx;
	if (!g->o.ctc_n) {
		g->o.ctc_n = 2;
		g->o.ctc_d = 1;
	}
	g->tsc = o->tsc0;
	g->piece_tsc = o->tsc0;
	g->last_cyc = o->tsc0;   /* the cycle counter starts with tracing */
	g->mtc_k = ctc_of(g, o->tsc0) >> o->mtc_freq;
	g->next_mtc = tsc_of_ctc(g, (g->mtc_k + 1) << o->mtc_freq);
	pt_config_init(&cfg);
	cfg.begin = g->buf;
	cfg.end = g->buf + BUF_SIZE;
	g->enc = pt_alloc_encoder(&cfg);
	if (!g->enc) {
		free(g->buf);
		free(g);
		return PTD_ERR_NOMEM;
	}
	*out = g;
	/* The trace opens with a PSB+ while not yet in traced code. */
	return psb_plus(g, 0);
}

void ptgen_free(struct ptgen *g)
{
	if (!g)
		return;
	pt_free_encoder(g->enc);
	free(g->buf);
	free(g);
}

uint64_t ptgen_tsc(const struct ptgen *g) { return g->tsc; }
uint64_t ptgen_last_tsc(const struct ptgen *g) { return g->last_tsc; }
void ptgen_advance(struct ptgen *g, uint64_t cycles) { g->tsc += cycles; }
int ptgen_enabled(const struct ptgen *g) { return g->enabled; }
int ptgen_can_overflow(const struct ptgen *g) { return g->enabled && g->after_flow; }

int ptgen_enable(struct ptgen *g, uint64_t ip)
{
	int r;

	if (g->enabled)
		return 0;
	/* Time is known again when tracing resumes: TSC before the PGE. */
	if ((r = mtc_catch_up(g, g->tsc)) || (r = emit_tsc(g)) || (r = emit_mode_exec(g)) ||
	    (r = emit_ip(g, ppt_tip_pge, ip, 0)))
		return r;
	g->enabled = 1;
	g->after_ovf_psb = 0;
	g->st.pges++;
	g->after_flow = 1;
	ret_clear(g);
	return 0;
}

int ptgen_vm_entry(struct ptgen *g, uint64_t ip)
{
	int r;

	if (g->enabled)
		return 0;
	if ((r = mtc_catch_up(g, g->tsc)) || (r = emit_guest_state(g)))
		return r;
	return ptgen_enable(g, ip);
}

static int disable(struct ptgen *g)
{
	g->enabled = 0;
	g->st.pgds++;
	return emit_ip(g, ppt_tip_pgd, 0, 1);
}

int ptgen_async_disable(struct ptgen *g, uint64_t next)
{
	int r;

	if (!g->enabled)
		return 0;
	if ((r = mtc_catch_up(g, g->tsc)))
		return r;
	/* perf's decoder resumes at an overflow's PSB+ with its PGE flag
	 * off and takes a FUP then as a jump, not walked to: a PSB+ first
	 * (one may come anywhere) puts it in step again */
	if (g->after_ovf_psb && (r = psb_emit(g, next)))
		return r;
	if ((r = emit_ip(g, ppt_fup, next, 0)))
		return r;
	g->st.fups++;
	return disable(g);
}

int ptgen_insn(struct ptgen *g, uint64_t ip, const struct ptgen_insn *in,
	       uint64_t next)
{
	uint64_t fall = ip + in->len;
	int r = 0;

	if (!g->enabled)
		return PTD_ERR_INVAL;
	if (g->since_psb >= g->o.psb_period && (r = psb_plus(g, ip)))
		return r;
	g->tsc += g->o.cycles_per_insn;
	if ((r = mtc_catch_up(g, g->tsc)))
		return r;
	g->after_flow = in->cls == PTG_COND || in->cls == PTG_CALL_INDIRECT ||
			in->cls == PTG_JMP_INDIRECT || in->cls == PTG_RET;
	switch (in->cls) {
	case PTG_OTHER:
	case PTG_JMP_DIRECT:
		break;
	case PTG_COND:
		r = add_tnt(g, next != fall);
		break;
	case PTG_CALL_DIRECT:
		if (in->target != fall)   /* `call next` is not a real call */
			ret_push(g, fall);
		break;
	case PTG_CALL_INDIRECT:
		ret_push(g, fall);
		g->st.tips++;
		r = emit_ip(g, ppt_tip, next, 0);
		break;
	case PTG_JMP_INDIRECT:
		g->st.tips++;
		r = emit_ip(g, ppt_tip, next, 0);
		break;
	case PTG_RET:
		if (g->o.retcomp && g->ret_n && g->ret[g->ret_top] == next) {
			g->ret_top = (g->ret_top + RETSTACK - 1) % RETSTACK;
			g->ret_n--;
			g->st.rets_compressed++;
			r = add_tnt(g, 1);
		} else {
			g->st.tips++;
			r = emit_ip(g, ppt_tip, next, 0);
		}
		break;
	case PTG_FAR:
		r = disable(g);
		break;
	}
	return r;
}

int ptgen_overflow(struct ptgen *g, uint64_t next, uint64_t lost, int at_psb)
{
	int r;

	if (!g->enabled) {
		/* while tracing is off (in the kernel): the OVF alone, the
		 * TIP.PGE that resumes tracing follows */
		g->tsc += lost;
		g->st.ovfs++;
		g->last_ip = 0;    /* IP compression starts over */
		return mtc_catch_up(g, g->tsc) ? PTD_ERR_LIMIT : emit_simple(g, ppt_ovf);
	}
	if (!g->after_flow)
		return PTD_ERR_INVAL;
	if ((r = mtc_catch_up(g, g->tsc)) || (r = flush_tnt(g)))
		return r;
	/* the packets of the lost stretch (its MTCs too) are gone */
	g->tsc += lost;
	if (g->o.mtc) {
		g->mtc_k = ctc_of(g, g->tsc) >> g->o.mtc_freq;
		g->next_mtc = tsc_of_ctc(g, (g->mtc_k + 1) << g->o.mtc_freq);
	}
	/* IP compression starts over after OVF, as after PSB (libipt) */
	g->last_ip = 0;
	g->st.ovfs++;
	if (at_psb) {
		/* the overflow resolves at a PSB: its PSB+ (TSC, FUP) says
		 * when and where the trace resumes */
		if ((r = emit_simple(g, ppt_ovf)))
			return r;
		g->st.ovf_psbs++;
		g->ovf_psb = 1;
		r = psb_emit(g, next);
		g->ovf_psb = 0;
		g->after_ovf_psb = 1;
		return r;
	}
	if ((r = emit_simple(g, ppt_ovf)) || (r = emit_tsc(g)) ||
	    (r = emit_ip(g, ppt_fup, next, 0)))
		return r;
	g->st.fups++;
	ret_clear(g);
	return 0;
}

int ptgen_sync(struct ptgen *g, uint64_t ip)
{
	return psb_plus(g, ip);
}

int ptgen_leave(struct ptgen *g, uint64_t ip, const struct ptgen_insn *in,
		uint64_t target)
{
	int r;

	(void)in;   /* any branch: the PGD replaces its TNT bit or TIP */
	if (!g->enabled)
		return PTD_ERR_INVAL;
	if (g->since_psb >= g->o.psb_period && (r = psb_plus(g, ip)))
		return r;
	g->tsc += g->o.cycles_per_insn;
	if ((r = mtc_catch_up(g, g->tsc)))
		return r;
	g->enabled = 0;
	g->st.pgds++;
	return emit_ip(g, ppt_tip_pgd, target, 0);
}

int ptgen_flush(struct ptgen *g)
{
	return cut(g);
}

int ptgen_finish(struct ptgen *g)
{
	int r = mtc_catch_up(g, g->tsc);

	if (!r)
		r = flush_tnt(g);
	return r ? r : cut(g);
}

void ptgen_get_stats(const struct ptgen *g, struct ptgen_stats *s)
{
	*s = g->st;
}

static int is_cond(unsigned id)
{
	switch (id) {
	case X86_INS_JA: case X86_INS_JAE: case X86_INS_JB: case X86_INS_JBE:
	case X86_INS_JE: case X86_INS_JG: case X86_INS_JGE: case X86_INS_JL:
	case X86_INS_JLE: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return 1;
	}
	return 0;
}

int ptgen_classify(csh cs, uint64_t ip, const uint8_t *code, size_t avail,
		   struct ptgen_insn *out)
{
	const uint8_t *p = code;
	size_t sz = avail;
	uint64_t a = ip;
	cs_insn *ci = cs_malloc(cs);
	const cs_x86 *x;

	memset(out, 0, sizeof(*out));
	if (!ci || !cs_disasm_iter(cs, &p, &sz, &a, ci)) {
		if (ci)
			cs_free(ci, 1);
		return -1;
	}
	x = &ci->detail->x86;
	out->len = (uint8_t)ci->size;
	switch (ci->id) {
	case X86_INS_JMP:
	case X86_INS_CALL:
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
			out->cls = ci->id == X86_INS_JMP ? PTG_JMP_DIRECT : PTG_CALL_DIRECT;
			out->target = (uint64_t)x->operands[0].imm;
		} else {
			out->cls = ci->id == X86_INS_JMP ? PTG_JMP_INDIRECT : PTG_CALL_INDIRECT;
		}
		break;
	case X86_INS_RET:
		out->cls = PTG_RET;
		break;
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT:
	case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_RETF:
	case X86_INS_RETFQ: case X86_INS_IRET: case X86_INS_IRETD:
	case X86_INS_IRETQ: case X86_INS_UD2: case X86_INS_SYSEXIT:
	case X86_INS_SYSRET: case X86_INS_HLT:
		out->cls = PTG_FAR;
		break;
	default:
		if (is_cond(ci->id)) {
			out->cls = PTG_COND;
			out->target = (uint64_t)x->operands[0].imm;
		}
		break;
	}
	out->trap_late = ci->id == X86_INS_CPUID;
	/* rep string instructions trap once per iteration under single-step */
	if (x->prefix[0] == 0xf3 || x->prefix[0] == 0xf2) {
		switch (x->opcode[0]) {
		case 0x6c: case 0x6d: case 0x6e: case 0x6f: case 0xa4: case 0xa5:
		case 0xa6: case 0xa7: case 0xaa: case 0xab: case 0xac: case 0xad:
		case 0xae: case 0xaf:
			out->rep_string = 1;
		}
	}
	cs_free(ci, 1);
	return 0;
}
