/* SPDX-License-Identifier: MIT */
/*
 * trace_index (stage: api/) - the index of a session's trace behind
 * ptd_index_* and the cursor (cursor.c).
 *
 * Per thread, in time order, pieces (struct tix_piece_sum): with the fast
 * Intel PT decoder a piece is one thread's part of one PSB segment
 * (backend/fastpt/fastpt_seek.h), summarized (instructions, time, what
 * it does to the call stack, the code it runs) by the -j workers in
 * parallel and decoded again on demand into a view; otherwise (libipt,
 * CoreSight, a queue merge, a segment the fast walk leaves to libipt)
 * the whole thread is one piece whose view is built by one linear decode
 * and kept.  A view (struct tix_thread) holds runs of instructions and
 * stops (decode errors, gaps, overflows), one byte per instruction (its
 * length and class), and every TIX_PIECE_RUNS runs the call stack.
 * The index can be saved beside the trace and read back (docs/FORMATS.md,
 * "Trace index files").
 */
#ifndef PTD_TRACE_INDEX_H
#define PTD_TRACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ptdecode.h"

struct imgstore;

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

/* Classes of signal delivery and return (x86; ptd_cursor_get hands them
 * out as PTD_IC_FAR_CALL / PTD_IC_OTHER): a system call or other
 * instruction after which the flow went on elsewhere (the kernel entered
 * a signal handler: an asynchronous transfer) makes two frames, the
 * interrupted function's (returning to the instruction after it) and the
 * signal trampoline's, which the handler returns into; the trampoline's
 * rt_sigreturn (mov $15,%rax; syscall) returns from the interrupted
 * function's frame.  gdb shows the same frames. */
#define TIX_IC_SIGENTER_FAR 13  /* a system call interrupted */
#define TIX_IC_SIGENTER 14      /* another instruction interrupted */
#define TIX_IC_SIGRETURN 15

static inline int tix_is_sigenter(unsigned int ic)
{
	return ic == TIX_IC_SIGENTER || ic == TIX_IC_SIGENTER_FAR;
}

/* The class ptd_cursor_get hands out for a stored one. */
static inline unsigned int tix_public_iclass(unsigned int ic)
{
	return ic == TIX_IC_SIGENTER ? PTD_IC_OTHER :
	       ic == TIX_IC_SIGENTER_FAR || ic == TIX_IC_SIGRETURN ?
	       PTD_IC_FAR_CALL : ic;
}

#define TIX_PIECE_RUNS 1024

struct tix_piece {
	size_t frames;        /* index into the thread's frame pool */
	size_t nframes;       /* calls alive at the piece's start (run
			       * indices, oldest first) */
	size_t under;         /* returns before it that found no call of
			       * the view to return from */
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
	size_t under;
	int32_t depth;
	uint64_t npos;
	struct imgstore *code;  /* code bytes (telling rt_sigreturn); NULL */
};

/* A call a piece leaves pushed. */
struct tix_frame {
	uint64_t call_ip;
	uint64_t pos;          /* the call's position number (thread's) */
	uint64_t time;         /* its time (symbols then) */
	uint32_t size;         /* the call's length: returns to ip + size */
	uint32_t kind;         /* enum tix_frame_kind */
};

/* What made a frame: a call, or a signal delivery after the instruction
 * at call_ip (the interrupted function's frame, which resumes at
 * call_ip + size, then the trampoline's, which the handler returns
 * into). */
enum tix_frame_kind {
	TIX_FRAME_CALL = 0,
	TIX_FRAME_SIG_INTERRUPTED,
	TIX_FRAME_SIG_TRAMP,
};

/* Code summary: a bit per hash of each 64-byte line of code run. */
#define TIX_CODE_BITS 512
struct tix_code {
	uint64_t w[TIX_CODE_BITS / 64];
};
#define TIX_CODE_ANY UINT32_MAX   /* no summary: may run anything */

#define TIX_SEG_NONE UINT32_MAX   /* the thread's one piece, kept whole */

struct tix_piece_sum {
	uint64_t insn0, pos0;  /* the thread's numbers of its first */
	uint64_t time;         /* of its first position, 0 unknown */
	uint64_t first_ip;     /* of its first instruction */
	uint64_t minip, maxend; /* code it runs lies in [minip, maxend) */
	uint32_t seg;          /* segment (output order), TIX_SEG_NONE */
	uint32_t code;         /* index into the index's codes */
	uint32_t ninsn, npos;  /* npos - ninsn stops */
	int32_t depth0;        /* call depth at its start */
	int32_t min_delta;     /* lowest depth in it, from depth0 (<= 0) */
	uint32_t ret_below;    /* returns from frames older than it */
	uint32_t frame0, nframes; /* calls it leaves pushed, oldest first,
				  * in the thread's frames */
	uint8_t first_stop;    /* it starts with a stop */
	uint8_t pad[3];
};

struct tix_tinfo {
	int32_t tid, pid;
	struct tix_piece_sum *ps;
	size_t nps, pscap;
	struct tix_frame *fr;
	size_t nfr, frcap;
	uint64_t ninsn, npos, nstops;
	uint64_t first_time, last_time;
	const struct tix_thread *whole;  /* TIX_SEG_NONE: its one view */
};

struct fastpt_reader;

struct ptd_index {
	struct ptd_session *s;
	struct tix_thread *th;     /* threads kept whole */
	size_t nth, thcap;
	struct tix_tinfo *ti;      /* every thread, in order of appearance */
	size_t nti, ticap;
	struct tix_code *codes;
	size_t ncodes, codecap;
	uint64_t unplaced;
	int loaded, saved;         /* read from / written to a file */
	char file_err[512];        /* why it was not */
	char **msgs;               /* stop messages of views, kept */
	size_t nmsgs, msgcap;
	void *msg_lock;            /* pthread_mutex_t */
};

/* A view of piece k of thread ti into v (emptied first; the cursor keeps
 * a few).  Returns 0, PTD_ERR_NOMEM, or PTD_ERR_DECODE (the segment
 * decodes differently than when indexed: the trace changed). */
int tix_view_load(struct ptd_index *ix, struct fastpt_reader *rd,
		  const struct tix_tinfo *ti, size_t k, struct tix_thread *v);
void tix_view_free(struct tix_thread *v);
/* Frees the per-thread pieces and code sets, leaving an empty index. */
void tix_drop_pieces(struct ptd_index *ix);

/* May piece p run code in one of the ranges? */
int tix_code_may_hit(const struct ptd_index *ix, const struct tix_piece_sum *p,
		     const struct ptd_addr_range *r, size_t nr);

/* The calls alive at the start of piece k older than it, oldest first,
 * with the newest `skip` dropped (returns in piece k before the cursor
 * that found no call of its own).  *out grown with util_grow.  Returns
 * how many, or -1 out of memory. */
long tix_fold_frames(const struct tix_tinfo *ti, size_t k, size_t skip,
		     struct tix_frame **out, size_t *cap);

/* Saving and reading (trace_index_file.c).  tix_file_save returns 0 or a
 * negative error with a message in err; tix_file_load returns 0 with
 * *ix's threads and codes filled, 1 when the file is missing, stale or
 * not one of ours (build anew), or a negative error. */
int tix_file_save(const struct ptd_index *ix, const char *file,
		  const char *trace, char *err, size_t errlen);
int tix_file_load(struct ptd_index *ix, const char *file, const char *trace,
		  char *err, size_t errlen);

/* The call stack (run indices of calls alive, oldest first) at the start
 * of run r: the piece's stack, then its runs up to r; *under: returns up
 * to r that found none of the view's calls.  *out is grown with
 * util_grow.  Returns the number of entries, or -1 out of memory. */
long tix_stack_at(const struct tix_thread *t, size_t r, size_t **out,
		  size_t *cap, size_t *under);

/* Is the system call at ip (x86 mode) a signal trampoline's
 * rt_sigreturn (the bytes before are mov $15,%rax)? */
int tix_is_sigreturn(struct imgstore *st, int32_t pid, uint64_t ip,
		     uint64_t time);

/* The ip of instruction i (0 <= i < ninsn) of run r. */
uint64_t tix_insn_ip(const struct tix_thread *t, size_t r, uint32_t i);

#endif
