/* SPDX-License-Identifier: MIT */
/*
 * dapstep (stage: cli/) - source-line stepping for `ptdecode dap` by
 * gdb's rules, on a cursor: a step ends where a line-table entry of
 * another line that begins a statement is reached; calls are stepped over
 * (next, and functions without line information) or into (stopping past
 * a frame-pointer prologue); a return to the middle of the caller's line
 * goes on to its next line; backwards, a line ends at the start of its
 * entry, and a call is passed back to its call instruction.  Inlined
 * functions are calls too: a step stops at their first line (or at the
 * call site where that is on another line), next passes over them, and
 * a step out of one runs to the end of the inlined code.
 */
#ifndef PTD_DAPSTEP_H
#define PTD_DAPSTEP_H

#include <ptdecode.h>

enum dapstep_kind { DAPSTEP_OVER, DAPSTEP_INTO };

/* One line step of kind forwards or (backward) backwards.  *hide: in, how
 * many inlined frames at the cursor are not shown (the frame stepped in is
 * the next one); out, how many to hide at the stop, or SIZE_MAX: those
 * entered at that pc, as gdb shows a stop.  Returns 0 when it stopped (the
 * cursor may stand at a decode error or gap: ptd_cursor_get says), or
 * PTD_ERR_END at the end (start) of the thread's trace. */
int dapstep_line(struct ptd_session *s, struct ptd_cursor *c, int kind,
		 int backward, size_t *hide);

/* Step out of the frame shown (*hide as for dapstep_line): forwards
 * (finish) to the return of a function, past the end of an inlined one;
 * backwards (reverse-finish) to the call instruction of a function, back
 * out of an inlined one as gdb's reverse-finish steps (to its entry, shown
 * at the call site, or the start of the caller's line before it). */
int dapstep_out(struct ptd_session *s, struct ptd_cursor *c, int backward,
		size_t *hide);

#endif
