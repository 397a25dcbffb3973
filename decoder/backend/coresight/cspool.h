/* SPDX-License-Identifier: MIT */
/*
 * cspool - parallel decoding in the CoreSight backend (backend/coresight/):
 * queues cut into units that decode independently, units ahead of the
 * consumer decoded on a pool of threads (each with its own csdec), and
 * the consumer's walk through the units in order, so that the elements
 * it sees are the same for any thread count.
 *
 * Pool threads claim units in order, at most CS_AHEAD per thread ahead of
 * the consumer, and decode each whole.  OpenCSD's error log is one
 * unlocked object: it is off while a pool runs, and a unit that meets an
 * OpenCSD error is decoded again in exclusive mode (no other unit being
 * decoded, the log on), so that its messages are exactly those of a
 * single-threaded run.  The consumer decodes a unit itself when it reaches
 * one no thread has claimed (it never sleeps while there is work), and
 * units too big to hold decoded (CS_UNIT_BIG) step by step, in exclusive
 * mode.
 *
 * Pieces: a thread decoding a unit on the fast path (csfast) may offer
 * pieces of it (runs of its packet records starting at an A-sync) to
 * threads with no unit to claim; such a thread walks a piece from reset
 * and the unit's owner keeps the result only where the state it reaches
 * itself matches the piece's (csfast.c says how).
 */
#ifndef PTD_CSPOOL_H
#define PTD_CSPOOL_H

#include <stddef.h>
#include <stdint.h>

struct cs_backend;
struct cs_elem;
struct csfast;

/* A piece of a unit: records [r0, r1) of its owner's, walked from reset
 * on another thread (or by the owner, for tests).  The result: every
 * element of the walk, the walk's state at up to CS_PIECE_SNAPS records
 * (snap_rec[i]: after records [r0, snap_rec[i]), snap_el[i] elements out
 * by then, snap_off[i]: where its state starts in st) and at r1 (at
 * st_end), states of the sources in mask only. */
#define CS_PIECE_SNAPS 4
struct cs_piece {
	int state;               /* CS_PIECE_* */
	size_t r0, r1, chunk;    /* chunk: the one record r0 is in */
	uint64_t mask[2];        /* the trace IDs it has records of */
	int nomem;
	struct cs_elem *el;
	size_t n;
	size_t nsnap;
	size_t snap_rec[CS_PIECE_SNAPS], snap_el[CS_PIECE_SNAPS];
	size_t snap_off[CS_PIECE_SNAPS + 1];
	uint64_t *st;
	size_t st_n, st_cap, st_end;
};
enum { CS_PIECE_FREE, CS_PIECE_RUNNING, CS_PIECE_DONE, CS_PIECE_MINE };

/* The pieces of one unit, pieces[0] the owner's from the start. */
struct cs_piece_set {
	struct csfast *owner;
	struct cs_piece *p;
	size_t n;
	struct cs_piece_set *next;
};

/* Cuts queue q of cb into units (appended to cb->units).  Returns 0 or
 * PTD_ERR_NOMEM with a message in err. */
int cspool_add_units(struct cs_backend *cb, size_t q, char *err,
		     size_t errlen);

/* Starts threads - 1 pool threads (threads 0: one per core) if there is
 * more than one unit a pool could decode.  Without a pool everything runs
 * on the caller's thread; a pool that cannot start is no error. */
void cspool_start(struct cs_backend *cb, unsigned threads);

/* Stops and frees cb's pool, if any. */
void cspool_stop(struct cs_backend *cb);

/* Makes the next elements available (cb->el[el_head..el_n)), moving on to
 * the next unit when those of the current one are consumed.  Returns 0,
 * PTD_ERR_END when all units are done, or a negative PTD_ERR_* with a
 * message in cb->errmsg. */
int cspool_pump(struct cs_backend *cb);

/* Offers set's pieces 1.. to the pool's threads.  Returns 1, or 0 when
 * cb has no pool (the owner then walks every piece itself). */
int cspool_pieces_offer(struct cs_backend *cb, struct cs_piece_set *set);

/* The owner's turn at piece k: returns 1 when no thread took it (it is
 * the owner's now), 0 when a thread's result is there (waiting while it
 * is being walked). */
int cspool_piece_take(struct cs_backend *cb, struct cs_piece_set *set,
		      size_t k);

/* Withdraws set's offer, waiting for pieces being walked. */
void cspool_pieces_retract(struct cs_backend *cb, struct cs_piece_set *set);

#endif
