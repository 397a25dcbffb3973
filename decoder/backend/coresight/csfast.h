/* SPDX-License-Identifier: MIT */
/*
 * csfast - the fast ETMv4 path of the CoreSight backend
 * (backend/coresight/): OpenCSD's packet processor for the packets, this
 * module's own block cache and A64 walk for the instruction flow,
 * producing the elements (struct cs_elem) that OpenCSD's full ETMv4
 * decoder would produce for the same unit, so that csevent turns them into
 * the same events.
 *
 * A unit is first scanned at packet level (every chunk of it, through the
 * same deformatter): it takes the fast path only when every source of its
 * queue is ETMv4 (OpenCSD's C API attaches no packet callback to ETE
 * decoders, up to 1.5.5 at least) with a configuration the walk follows
 * (no return stack, data or conditional trace, Q elements) and every
 * packet of every source is one the walk follows with certainty: no
 * speculation resolution (commit, cancel, mispredict, discard, overflow),
 * no bad or unknown packets, no Thumb or A32 state, an exception only
 * after a context and followed at once by its address, no address the
 * packet guard (csguard) would act on.  Otherwise the whole unit goes to
 * OpenCSD's full decoder (csdec), from the unit's start.  For units up to
 * 1 MiB the packets are read once: without a pool the walk runs along
 * with the scan (its elements dropped if the scan fails), with one the
 * scan keeps what the walk needs of each packet so that pieces of the
 * unit can be walked on other threads; bigger units are read again by
 * the walk.
 *
 * The walk keeps OpenCSD's element stack discipline (elements resolved
 * oldest first when the speculation depth exceeds TRCIDR8.MAXSPEC, those
 * left at the end of a chunk dropped as OpenCSD drops them), and reads
 * code through the image store at the chunk's pid and time.
 */
#ifndef PTD_CSFAST_H
#define PTD_CSFAST_H

#include <stdint.h>

struct cs_dec;
struct cs_unit;
struct csfast;

/* Tries the fast path for unit u on d: returns 1 when d decodes u with
 * it (csfast_step then produces its elements), 0 when u must go to
 * OpenCSD's full decoder (also when out of memory). */
int csfast_start(struct cs_dec *d, const struct cs_unit *u);

/* One step of the fast path: the next block of the unit's trace, its
 * elements appended to d->el; sets d->done at the unit's end. */
void csfast_step(struct cs_dec *d);

/* Walks piece pc of owner's unit from reset (on a pool thread's decoder
 * d, whose own unit is not touched), its elements and states into pc. */
struct cs_piece;
void csfast_walk_piece(struct cs_dec *d, struct csfast *owner,
		       struct cs_piece *pc);

/* Frees d's fast-path state. */
void csfast_free(struct cs_dec *d);

#endif
