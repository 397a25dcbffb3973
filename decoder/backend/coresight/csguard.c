/* SPDX-License-Identifier: MIT */
#ifdef PTD_HAVE_OPENCSD

#include "csguard.h"
#include "csdec.h"

#include <stdio.h>
#include <string.h>

#include <opencsd/etmv4/trc_pkt_types_etmv4.h>

/* OpenCSD's code cache tests address + length without overflow checks, so
 * a fetch within the last bytes of the address space "hits" any page and
 * copies from far outside it: addresses this high are never decoded. */
#define GUARD_TOP_ADDR (~(ocsd_vaddr_t)0 - 0xfff)

/* What a packet does, as far as the guard is concerned. */
struct pkt_effect {
	int mispredict, commits, atom, speculative;
	int hazard;          /* GUARD_* found by the packet alone */
};

void csguard_init(struct cs_guard *g, struct cs_dec *d, uint8_t trace_id,
		  uint32_t trcidr8)
{
	memset(g, 0, sizeof(*g));
	g->d = d;
	g->trace_id = trace_id;
	g->nospec = trcidr8 == 0;
	g->max_spec = trcidr8;
}

void csguard_reset(struct cs_guard *g)
{
	g->addr_front = g->addr_behind = g->addr_wait = 0;
}

/* Updates g's address tracking for pkt and says what pkt does. */
static struct pkt_effect track_packet(struct cs_guard *g,
				      const ocsd_etmv4_i_pkt *pkt)
{
	struct pkt_effect e = { 0 };

	switch ((int)pkt->type) {
	case ETM4_PKT_I_ADDR_MATCH:
	case ETM4_PKT_I_ADDR_CTXT_L_32IS0: case ETM4_PKT_I_ADDR_CTXT_L_32IS1:
	case ETM4_PKT_I_ADDR_CTXT_L_64IS0: case ETM4_PKT_I_ADDR_CTXT_L_64IS1:
	case ETM4_PKT_I_ADDR_L_32IS0: case ETM4_PKT_I_ADDR_L_32IS1:
	case ETM4_PKT_I_ADDR_L_64IS0: case ETM4_PKT_I_ADDR_L_64IS1:
	case ETM4_PKT_I_ADDR_S_IS0: case ETM4_PKT_I_ADDR_S_IS1:
		g->addr_front = 1;
		g->addr_wait = 0;
		if (pkt->v_addr.val >= GUARD_TOP_ADDR)
			e.hazard = GUARD_TOP;
		break;
	case ETM4_PKT_I_ATOM_F1: case ETM4_PKT_I_ATOM_F2:
	case ETM4_PKT_I_ATOM_F3: case ETM4_PKT_I_ATOM_F4:
	case ETM4_PKT_I_ATOM_F5: case ETM4_PKT_I_ATOM_F6:
		e.atom = e.commits = 1;
		break;
	case ETM4_PKT_I_EXCEPT:
		g->addr_wait = 1;
		break;
	case ETM4_PKT_I_Q:
		if (pkt->Q_pkt.addr_present)
			e.commits = 1;
		else
			g->addr_wait = 1;
		if (pkt->Q_pkt.addr_present && pkt->v_addr.val >= GUARD_TOP_ADDR)
			e.hazard = GUARD_TOP;
		break;
	case ETM4_PKT_I_COMMIT:
		e.commits = e.speculative = 1;
		break;
	case ETM4_PKT_I_EXCEPT_RTN:
	case ETM4_PKT_I_FUNC_RET:
		e.commits = 1;
		break;
	case ETM4_PKT_I_CANCEL_F1:
		g->addr_front |= g->addr_behind;
		e.speculative = 1;
		break;
	case ETM4_PKT_I_MISPREDICT:
		e.mispredict = e.commits = e.speculative = 1;
		break;
	case ETM4_PKT_I_CANCEL_F1_MISPRED:
	case ETM4_PKT_I_CANCEL_F2:
	case ETM4_PKT_I_CANCEL_F3:
		g->addr_front |= g->addr_behind;
		e.mispredict = e.commits = e.speculative = 1;
		break;
	case ETM4_PKT_I_DISCARD:
	case ETM4_PKT_I_OVERFLOW:
		csguard_reset(g);
		break;
	case ETM4_PKT_I_TRACE_INFO:
		/* a depth beyond the maximum makes every later packet
		 * commit, an exception before its address too */
		if (pkt->curr_spec_depth > g->max_spec)
			e.hazard = GUARD_SPEC_DEPTH;
		break;
	default:
		break;
	}
	return e;
}

/* The hazard of a packet with effect e, given what g has seen before it;
 * an atom that is none moves g's address tracking on. */
static int packet_hazard(struct cs_guard *g, struct pkt_effect e)
{
	if (e.hazard)
		return e.hazard;
	if (e.speculative && g->nospec)
		return GUARD_NOSPEC;
	if (e.commits && g->addr_wait)
		return GUARD_NO_ADDR;
	if (e.mispredict && (g->addr_front || g->addr_behind))
		return GUARD_MISPREDICT;
	if (e.atom) {
		/* without speculation the atom commits at once, and with
		 * it everything older */
		g->addr_behind = g->nospec ? 0 : (g->addr_behind | g->addr_front);
		g->addr_front = 0;
	}
	return GUARD_NONE;
}

void csguard_packet(const void *ctx, const ocsd_datapath_op_t op,
		    const ocsd_trc_index_t index_sop, const void *pkt_in,
		    const uint32_t size, const uint8_t *data)
{
	struct cs_guard *g = (struct cs_guard *)ctx;
	/* the decoder reads this same packet object next */
	ocsd_etmv4_i_pkt *pkt = (ocsd_etmv4_i_pkt *)pkt_in;
	struct cs_dec *d = g->d;
	int hazard;

	(void)size, (void)data;
	if (op != OCSD_OP_DATA || !pkt)
		return;
	hazard = packet_hazard(g, track_packet(g, pkt));
	if (!hazard)
		return;
	pkt->type = ETM4_PKT_I_DISCARD;
	csguard_reset(g);
	csdec_push_error(d, index_sop, NULL);
	if (d->el_n) {
		d->el[d->el_n - 1].trace_id = g->trace_id;
		d->el[d->el_n - 1].guard = (uint8_t)hazard;
	}
}

static const char *hazard_text(int hazard)
{
	switch (hazard) {
	case GUARD_MISPREDICT:
		return "a mispredict after an address element";
	case GUARD_SPEC_DEPTH:
		return "a trace info packet with a speculation depth beyond "
		       "the maximum";
	case GUARD_TOP:
		return "an address in the last page of the address space";
	case GUARD_NOSPEC:
		return "a commit, cancel or mispredict packet from a trace "
		       "unit without speculation (TRCIDR8 0)";
	}
	return "an exception or Q element committed before its address";
}

void csguard_message(char *buf, size_t len, uint8_t trace_id, int hazard)
{
	snprintf(buf, len, "trace ID %#x: %s that OpenCSD 1.3.3 cannot decode "
		 "safely; speculative state dropped, decoding resumes at the "
		 "next sync", trace_id, hazard_text(hazard));
}

#endif /* PTD_HAVE_OPENCSD */
