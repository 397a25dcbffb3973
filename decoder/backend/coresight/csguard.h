/* SPDX-License-Identifier: MIT */
/*
 * csguard - the packet guard of the CoreSight backend (backend/coresight/):
 * a packet monitor on each ETMv4 decoder that sees every packet before the
 * decoder does and turns those OpenCSD 1.3.3 crashes on into a Discard, so
 * that the decoder drops its speculative state and resynchronises, with an
 * error element saying why.
 *
 * OpenCSD 1.3.3 (Debian 12) crashes on some ETMv4 streams (found by
 * fuzzing; inputs in tests/fuzz/regress/coresight/opencsd-*):
 *  - a mispredict that finds an address element newer than the atom it
 *    applies to: TrcPktDecodeEtmV4I::mispredictAtom erases the element
 *    from its P0 stack and goes on with an invalidated iterator;
 *  - an exception (or a Q element without an address) committed before
 *    the address packet that must follow it: processException and
 *    processQElement read the element behind it on an empty stack (a
 *    trace info packet claiming a speculation depth beyond TRCIDR8's
 *    maximum makes the next exception commit at once);
 *  - an address in the last page of the address space: the memory access
 *    cache (TrcMemAccCache) overflows address + length and copies from
 *    outside its page.
 * A trace unit that does not trace speculatively (TRCIDR8.MAXSPEC = 0, most
 * cores) emits no commit, cancel or mispredict packets at all, so there
 * every such packet is discarded; otherwise the tests are conservative
 * (any address packet since the newest atom; after a cancel, any older one
 * that may be uncommitted).  Valid traces never commit an exception before
 * its address.  OpenCSD 1.3.3's C API attaches packet monitors to ETMv4
 * decoders only, so ETE goes unguarded.
 */
#ifndef PTD_CSGUARD_H
#define PTD_CSGUARD_H

#include <stddef.h>
#include <stdint.h>

#include <opencsd/c_api/opencsd_c_api.h>

struct cs_dec;

/* What made the guard discard a packet (cs_elem.guard). */
enum { GUARD_NONE, GUARD_MISPREDICT, GUARD_NO_ADDR, GUARD_SPEC_DEPTH,
       GUARD_NOSPEC, GUARD_TOP };

/* The guard of one trace ID. */
struct cs_guard {
	struct cs_dec *d;
	uint8_t trace_id, nospec;
	uint32_t max_spec;   /* TRCIDR8.MAXSPEC */
	uint8_t addr_front;  /* an address element may be newer than
			      * the newest atom */
	uint8_t addr_behind; /* one may be older (and uncommitted) */
	uint8_t addr_wait;   /* an exception or Q element waits for
			      * its address packet */
};

/* Sets g up for the source decoded under trace_id on d, whose TRCIDR8 is
 * trcidr8. */
void csguard_init(struct cs_guard *g, struct cs_dec *d, uint8_t trace_id,
		  uint32_t trcidr8);

/* Forgets the speculation state (each chunk starts from reset); the
 * configuration stays. */
void csguard_reset(struct cs_guard *g);

/* The packet monitor (OpenCSD's PKT_MON callback, ctx a struct cs_guard):
 * may turn the packet into a Discard and push an error element on the
 * guard's decoder. */
void csguard_packet(const void *ctx, const ocsd_datapath_op_t op,
		    const ocsd_trc_index_t index_sop, const void *pkt_in,
		    const uint32_t size, const uint8_t *data);

/* Writes the error text for a packet the guard discarded (hazard: a
 * GUARD_* other than GUARD_NONE) on trace_id into buf. */
void csguard_message(char *buf, size_t len, uint8_t trace_id, int hazard);

#endif
