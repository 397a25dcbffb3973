/* SPDX-License-Identifier: MIT */
/*
 * trace_index (stage: api/) - the index of a session's trace behind
 * ptd_index_* and the cursor (cursor.c): per thread, in time order, runs
 * of instructions and stops (decode errors, gaps, overflows), one byte per
 * instruction (its length and class, so a run's instructions can be
 * walked without decoding), and pieces of TIX_PIECE_RUNS runs that keep
 * the call stack at their start.
 */
#ifndef PTD_TRACE_INDEX_H
#define PTD_TRACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ptdecode.h"

/* A run: instructions one after the other in memory with the same time,
 * CPU, image and mode, of which only the last may be a call or return;
 * or one stop (ninsn == 0).  A call to the next instruction (call next;
 * pop) makes no frame and does not change the depth. */
struct tix_run {
	uint64_t ip;          /* first instruction; a stop: its event's ip */
	uint64_t time;        /* perf clock ns, 0 unknown */
	uint64_t insn0;       /* instruction number of the first */
	uint64_t pos0;        /* position number of the first */
	uint32_t ninsn;       /* 0: a stop */
	uint32_t last_off;    /* last instruction's offset from ip */
	uint32_t image;
	uint32_t stop;        /* a stop: index into the thread's stops */
	int32_t cpu;
	int32_t depth;        /* call depth at the run's start */
	uint16_t queue;
	uint8_t mode;
	uint8_t pad;
};

/* One byte per instruction: its length and class. */
#define TIX_LEN(b) ((unsigned int)((b) & 0xf))
#define TIX_ICLASS(b) ((unsigned int)((b) >> 4))

#define TIX_PIECE_RUNS 1024

struct tix_piece {
	size_t frames;        /* index into the thread's frame pool */
	size_t nframes;       /* calls alive at the piece's start (run
			       * indices, oldest first) */
};

struct tix_thread {
	int32_t tid, pid;
	struct tix_run *runs;
	size_t nruns, runcap;
	uint8_t *insn;        /* per instruction: length | class << 4 */
	size_t ninsn, insncap;
	struct ptd_event *stops;  /* msg points into stopmsg strings */
	size_t nstops, stopcap;
	struct tix_piece *pieces;
	size_t npieces, piececap;
	size_t *pool;         /* piece stacks */
	size_t npool, poolcap;
	/* while building: the calls alive now */
	size_t *stack;
	size_t nstack, stackcap;
	int32_t depth;
	uint64_t npos;
};

struct ptd_index {
	struct ptd_session *s;
	struct tix_thread *th;
	size_t nth, thcap;
	uint64_t unplaced;
};

/* The call stack (run indices of calls alive, oldest first) at the start
 * of run r: the piece's stack, then its runs up to r.  *out is grown with
 * util_grow.  Returns the number of entries, or -1 out of memory. */
long tix_stack_at(const struct tix_thread *t, size_t r, size_t **out,
		  size_t *cap);

/* The ip of instruction i (0 <= i < ninsn) of run r. */
uint64_t tix_insn_ip(const struct tix_thread *t, size_t r, uint32_t i);

#endif
