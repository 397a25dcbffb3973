/* SPDX-License-Identifier: MIT */
#include "intelpt_resync.h"
#include "intelpt.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on the work per error in traces with few PSBs (real ones have
 * one every few KiB; damaged or crafted ones need not): the packets
 * scanned from the last PSB to the error, and the bytes a splice copies
 * (a longer one ends there without a FUP to hand over at, and decoding
 * resumes at the next PSB as without the option). */
#define SCAN_MAX (16u << 20)
#define SPLICE_MAX (1u << 20)

/* The kind of resume point of a packet that does not decode: the flow
 * goes on where it was, from the byte after it (not a packet type). */
#define RESUME_IN_PLACE (-2)

/* What the packets since the last PSB said, as far as a PSB+ carries it. */
struct scan_state {
	uint64_t last_ip;             /* 0 after a PSB, as for libipt */
	struct pt_packet_mode_exec exec;
	int have_exec;
	struct pt_packet_pip pip;
	int have_pip;
	uint64_t tsc;
	uint8_t cbr;
};

/* The IP an IP packet gives, from the last IP (Intel SDM vol. 3, "IP
 * Compression"); returns 0 when it gives none. */
static int packet_ip(struct scan_state *st, const struct pt_packet_ip *pk,
		     uint64_t *ip)
{
	uint64_t v = pk->ip;

	switch (pk->ipc) {
	case pt_ipc_update_16: v = (st->last_ip & ~0xffffull) | (v & 0xffffull); break;
	case pt_ipc_update_32: v = (st->last_ip & ~0xffffffffull) | (v & 0xffffffffull); break;
	case pt_ipc_update_48: v = (st->last_ip & ~0xffffffffffffull) | (v & 0xffffffffffffull); break;
	case pt_ipc_sext_48: v = (uint64_t)((int64_t)(v << 16) >> 16); break;
	case pt_ipc_full: break;
	default: return 0;
	}
	st->last_ip = v;
	*ip = v;
	return 1;
}

/* Encodes one packet; returns -1 when it failed. */
static int put(struct pt_encoder *enc, struct pt_packet pk)
{
	return pt_enc_next(enc, &pk) < 0 ? -1 : 0;
}

/* Writes the splice's PSB+ (and a TIP.PGE after it) into hdr; returns its
 * size, or 0 when it does not fit. */
static size_t write_header(const struct scan_state *st, int kind, uint64_t ip,
			   uint8_t *hdr, size_t len)
{
	const struct pt_packet_ip full = { .ipc = pt_ipc_full, .ip = ip };
	struct pt_packet_mode mode = { .leaf = pt_mol_exec };
	struct pt_config cfg;
	struct pt_encoder *enc;
	uint64_t off = 0;
	int bad = 0;

	pt_config_init(&cfg);
	cfg.begin = hdr;
	cfg.end = hdr + len;
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		return 0;
	mode.bits.exec = st->have_exec ? st->exec : pt_set_exec_mode(ptem_64bit);
	bad |= put(enc, (struct pt_packet){ .type = ppt_psb });
	if (st->tsc)
		bad |= put(enc, (struct pt_packet){ .type = ppt_tsc,
					      .payload.tsc.tsc = st->tsc });
	if (st->cbr)
		bad |= put(enc, (struct pt_packet){ .type = ppt_cbr,
					      .payload.cbr.ratio = st->cbr });
	if (st->have_pip)
		bad |= put(enc, (struct pt_packet){ .type = ppt_pip,
					      .payload.pip = st->pip });
	bad |= put(enc, (struct pt_packet){ .type = ppt_mode, .payload.mode = mode });
	if (kind == ppt_tip || kind == RESUME_IN_PLACE)
		bad |= put(enc, (struct pt_packet){ .type = ppt_fup, .payload.ip = full });
	bad |= put(enc, (struct pt_packet){ .type = ppt_psbend });
	if (kind == ppt_tip_pge)
		bad |= put(enc, (struct pt_packet){ .type = ppt_tip_pge, .payload.ip = full });
	pt_enc_get_offset(enc, &off);
	pt_free_encoder(enc);
	return bad ? 0 : (size_t)off;
}

/* The FUP IP of the PSB+ at trace offset psb, if it has one. */
static int psb_fup(const struct intelpt_params *p, const uint8_t *data,
		   size_t size, uint64_t psb, uint64_t *ip)
{
	struct scan_state st = { 0 };
	struct pt_packet_decoder *dec;
	struct pt_packet pk;
	struct pt_config cfg;
	int rc, found = 0;

	intelpt_config(p, &cfg, data, data + size);
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return 0;
	rc = pt_pkt_sync_set(dec, psb);
	while (rc >= 0 && (rc = pt_pkt_next(dec, &pk, sizeof(pk))) >= 0 &&
	       pk.type != ppt_psbend)
		if (pk.type == ppt_fup)
			found = packet_ip(&st, &pk.payload.ip, ip);
	pt_pkt_free_decoder(dec);
	return found && rc >= 0;
}

/* libipt's packet decoder over data, at the packet at trace offset at;
 * NULL when that fails. */
static struct pt_packet_decoder *packets_at(const struct intelpt_params *p,
					    const uint8_t *data, size_t size,
					    uint64_t at)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;

	intelpt_config(p, &cfg, data, data + size);
	dec = pt_pkt_alloc_decoder(&cfg);
	if (dec && pt_pkt_sync_set(dec, at) < 0) {
		pt_pkt_free_decoder(dec);
		dec = NULL;
	}
	return dec;
}

int intelpt_psb_fup_before(const struct intelpt_params *p, const uint8_t *data,
			   size_t size, uint64_t at, uint64_t *ip)
{
	uint64_t psb = intelpt_psb_before(data, size, at), off = 0;
	struct scan_state st = { 0 };
	struct pt_packet_decoder *dec;
	struct pt_packet pk;
	int rc = 0, found = 0, in_psb = 1;

	if (psb >= size || !(dec = packets_at(p, data, size, psb)))
		return 0;
	while (rc >= 0 && pt_pkt_get_offset(dec, &off) >= 0 && off < at &&
	       (rc = pt_pkt_next(dec, &pk, sizeof(pk))) >= 0) {
		if (in_psb) {
			if (pk.type == ppt_fup)
				found = packet_ip(&st, &pk.payload.ip, ip);
			in_psb = pk.type != ppt_psbend;
			continue;
		}
		switch (pk.type) {
		case ppt_pad: case ppt_tsc: case ppt_tma: case ppt_mtc: case ppt_cyc:
		case ppt_cbr: case ppt_mnt:
			break;
		default:
			rc = -1;   /* the flow went on after the PSB+ */
			break;
		}
	}
	pt_pkt_free_decoder(dec);
	return found && !in_psb && rc >= 0 && off == at;
}

int intelpt_resync_splice(const struct intelpt_params *p, const uint8_t *data,
			  size_t size, uint64_t from, uint64_t ovf_from,
			  uint64_t tsc, uint64_t err_ip, int how,
			  struct intelpt_splice *s)
{
	uint64_t psb, off = 0, ip = 0;
	struct scan_state st;
	struct pt_packet_decoder *dec;
	struct pt_packet pk;
	struct pt_config cfg;
	uint8_t hdr[96];
	size_t nhdr;
	int kind = 0, rc;

	memset(s, 0, sizeof(*s));
	memset(&st, 0, sizeof(st));
	if (ovf_from > from)
		ovf_from = from;
	psb = intelpt_psb_before(data, size, ovf_from);
	if (psb >= size || from >= size || from - psb > SCAN_MAX)
		return 0;
	intelpt_config(p, &cfg, data, data + size);
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return PTD_ERR_NOMEM;
	rc = pt_pkt_sync_set(dec, psb);
	while (rc >= 0 && !kind) {
		pt_pkt_get_offset(dec, &off);
		rc = pt_pkt_next(dec, &pk, sizeof(pk));
		if (rc < 0) {
			if (rc == -pte_eos)
				break;
			/* the packet the decoder failed at does not decode:
			 * perf's decoder steps over its first byte and goes on
			 * where the flow was (libipt 2.0 is at that packet;
			 * 2.1 at the last one it read, before it) */
			if (!(how & RESYNC_BAD_PACKETS))
				break;
			if (err_ip && (off == from ||
				       ((how & RESYNC_FAILED_AT_BAD) && off > from))) {
				kind = RESUME_IN_PLACE;
				ip = err_ip;
				break;
			}
			/* elsewhere perf's decoder steps over it too (one
			 * resumed at before, one while it looks for an IP) */
			rc = pt_pkt_sync_set(dec, off + 1);
			continue;
		}
		switch (pk.type) {
		case ppt_psb:
			if (off >= from)
				rc = -1;  /* the usual sync point comes first */
			memset(&st, 0, sizeof(st));
			break;
		case ppt_mode:
			if (pk.payload.mode.leaf == pt_mol_exec) {
				st.exec = pk.payload.mode.bits.exec;
				st.have_exec = 1;
			}
			break;
		case ppt_pip: st.pip = pk.payload.pip; st.have_pip = 1; break;
		case ppt_tsc: st.tsc = pk.payload.tsc.tsc; break;
		case ppt_cbr: st.cbr = pk.payload.cbr.ratio; break;
		case ppt_ovf:
			if (off >= ovf_from)
				kind = ppt_ovf;
			break;
		case ppt_tip:
		case ppt_tip_pge:
			if (off >= from && (how & RESYNC_NO_LAST_IP) &&
			    pk.payload.ip.ipc != pt_ipc_sext_48 &&
			    pk.payload.ip.ipc != pt_ipc_full)
				break;  /* no last IP to complete it from */
			if (packet_ip(&st, &pk.payload.ip, &ip) &&
			    off >= from + ((how & RESYNC_READ) ? 1 : 0))
				kind = pk.type;
			break;
		case ppt_tip_pgd:
		case ppt_fup:
			packet_ip(&st, &pk.payload.ip, &ip);
			break;
		default:
			break;
		}
	}
	pt_pkt_free_decoder(dec);
	if (!kind)
		return 0;
	if (tsc)
		st.tsc = tsc;
	nhdr = write_header(&st, kind, ip, hdr, sizeof(hdr));
	if (!nhdr)
		return 0;
	s->at = off;
	s->copy_from = kind == ppt_ovf ? off :
		       kind == RESUME_IN_PLACE ? off + 1 : off + (uint64_t)rc;
	s->in_place = kind == RESUME_IN_PLACE;
	s->end = intelpt_psb_after(data, size, s->copy_from);
	if (s->end - s->copy_from > SPLICE_MAX) {
		s->end = s->copy_from + SPLICE_MAX;
		s->capped = 1;
	} else {
		s->have_end_ip = s->end < size &&
				 psb_fup(p, data, size, s->end, &s->end_ip);
	}
	s->hdr = nhdr;
	s->size = nhdr + (size_t)(s->end - s->copy_from);
	s->ip = kind == ppt_ovf ? 0 : ip;
	s->buf = malloc(s->size);
	if (!s->buf)
		return PTD_ERR_NOMEM;
	memcpy(s->buf, hdr, nhdr);
	memcpy(s->buf + nhdr, data + s->copy_from, (size_t)(s->end - s->copy_from));
	return 1;
}
