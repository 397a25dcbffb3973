/* SPDX-License-Identifier: MIT */
/*
 * fastpt_walk - the fast Intel PT decoder's walk (backend stage,
 * backend/fastpt/): decodes one segment into its output.
 *
 * The walk reads the segment with libipt's packet decoder (its buffer ends
 * at the segment's end) and follows the flow through the worker's block
 * cache, consuming TNT bits from a register; loops through indirect
 * branches are replayed from the run memo.  It gives up on anything it
 * cannot decode with certainty (any error, overflow, TSX, PTWRITE, power
 * events, packets libipt binds to an instruction (PIP, VMCS, a MODE.Exec
 * not followed by a TIP or TIP.PGE), unexpected packet orders, code it
 * cannot read, code whose
 * validity the exact time would decide): the segment then goes to the
 * reference decoder.  This is the hot path: everything it calls per
 * packet or per block is in fastpt_walk.c or static inline.
 */
#ifndef PTD_FASTPT_WALK_H
#define PTD_FASTPT_WALK_H

#include <stdint.h>

struct pt_packet_ip;
struct worker;
struct fqueue;
struct segment;

/* Decodes segment seg of queue fq on worker w into seg's output.
 * Returns 0, or -1 when the walk cannot decode it with certainty (the
 * output is then partial). */
int walk_decode_segment(struct worker *w, const struct fqueue *fq,
			struct segment *seg);

/* The IP of an IP packet, decompressed against *last_ip, which it updates
 * (libipt's rules).  *ok: 1 with an IP, 0 when it is suppressed, -1 for
 * an unknown compression. */
uint64_t decompress_ip(uint64_t *last_ip, const struct pt_packet_ip *pip,
		       int *ok);

#endif
