/* SPDX-License-Identifier: MIT */
/*
 * fastpt_pkt - the fast Intel PT decoder's reader for the packets that
 * make up most of a trace (backend stage, backend/fastpt/): PAD, TNT
 * (short and long), TIP, TIP.PGE, TIP.PGD, FUP, MTC and CYC, decoded
 * from their bytes (Intel SDM vol. 3, "Intel Processor Trace", packet
 * formats) into libipt's struct pt_packet as pt_pkt_next fills it.
 *
 * Everything else, and anything malformed or cut off by the end of the
 * buffer, is left to libipt's packet decoder (fastpt_pkt_read returns
 * 0): errors are reported as libipt reports them.  Static inline: the
 * walk reads a packet every few instructions.
 */
#ifndef PTD_FASTPT_PKT_H
#define PTD_FASTPT_PKT_H

#include <intel-pt.h>
#include <stdint.h>
#include <string.h>

/* IP payload bytes by IPBytes (the IP packets' top three bits); -1:
 * reserved. */
static const int8_t fastpt_ip_bytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };

/* Index of the highest set bit of a TNT payload (its stop bit): the
 * number of branch bits below it. */
static inline int fastpt_tnt_bits(uint64_t v)
{
	return 63 - __builtin_clzll(v);
}

/* The payload of the long TNT packet at p (its 8 bytes available): one
 * 8-byte load; a 6-byte copy into a word is stored in pieces and read
 * back whole, a stall on every long TNT. */
static inline uint64_t fastpt_long_tnt_payload(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? __builtin_bswap64(w) : w) >> 16;
}

/* Reads the packet at p (avail bytes left) into *pk.  Returns its size,
 * or 0 to let libipt decode it. */
static inline __attribute__((always_inline)) int
fastpt_pkt_read(const uint8_t *p, uint64_t avail, struct pt_packet *pk)
{
	uint8_t b;

	if (!avail)
		return 0;
	b = p[0];
	if ((b & 3) == 3) {                    /* CYC */
		uint64_t v = b >> 3;
		unsigned shift = 5;
		int n = 1;

		if (b & 4) {
			for (;;) {
				if ((uint64_t)n >= avail || n > 8)
					return 0;
				v |= (uint64_t)(p[n] >> 1) << shift;
				shift += 7;
				if (!(p[n++] & 1))
					break;
			}
		}
		pk->type = ppt_cyc;
		pk->size = (uint8_t)n;
		pk->payload.cyc.value = v;
		return n;
	}
	if (b == 0x59) {                       /* MTC */
		if (avail < 2)
			return 0;
		pk->type = ppt_mtc;
		pk->size = 2;
		pk->payload.mtc.ctc = p[1];
		return 2;
	}
	if (!(b & 1)) {
		uint64_t v = 0;

		if (!b) {                      /* PAD */
			pk->type = ppt_pad;
			pk->size = 1;
			return 1;
		}
		if (b != 2) {                  /* short TNT */
			v = b >> 1;
			pk->type = ppt_tnt_8;
			pk->size = 1;
			pk->payload.tnt.bit_size = (uint8_t)fastpt_tnt_bits(v);
			pk->payload.tnt.payload = v & ~(1ull << pk->payload.tnt.bit_size);
			return 1;
		}
		if (avail < 8 || p[1] != 0xa3)  /* long TNT only */
			return 0;
		v = fastpt_long_tnt_payload(p);
		if (!v)
			return 0;
		pk->type = ppt_tnt_64;
		pk->size = 8;
		pk->payload.tnt.bit_size = (uint8_t)fastpt_tnt_bits(v);
		pk->payload.tnt.payload = v & ~(1ull << pk->payload.tnt.bit_size);
		return 8;
	}
	switch (b & 0x1f) {
	case 0x0d: pk->type = ppt_tip; break;
	case 0x11: pk->type = ppt_tip_pge; break;
	case 0x01: pk->type = ppt_tip_pgd; break;
	case 0x1d: pk->type = ppt_fup; break;
	default: return 0;
	}
	{
		int ipc = b >> 5, n = fastpt_ip_bytes[ipc];
		uint64_t ip = 0;

		if (n < 0 || avail < (uint64_t)n + 1)
			return 0;
		memcpy(&ip, p + 1, (size_t)n);
		pk->size = (uint8_t)(n + 1);
		pk->payload.ip.ipc = (enum pt_ip_compression)ipc;
		pk->payload.ip.ip = ip;
		return n + 1;
	}
}

#endif
