/* SPDX-License-Identifier: MIT */
/*
 * cursor (stage: api/) - ptd_cursor_*: a position in one thread's
 * execution over the trace index (trace_index.h): seeks by instruction
 * number, time or position (binary searches over the runs), steps, finds
 * (addresses, source lines, call depth; always stopping at decode errors
 * and gaps), and the call stack (the piece's kept stack plus its runs up
 * to the cursor).  Source lines are cached by (address, image version).
 * The public interface is in ptdecode.h; nothing else is exported.
 */
#ifndef PTD_CURSOR_H
#define PTD_CURSOR_H

#include "ptdecode.h"

#endif
