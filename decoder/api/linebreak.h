/* SPDX-License-Identifier: MIT */
/*
 * linebreak (stage: api/) - ptd_line_range and ptd_line_addrs: the
 * debugger line tables of linetab over a session's images (the ELF file
 * and load bias of each image version).  The public interface is in
 * ptdecode.h; nothing else is exported.
 */
#ifndef PTD_LINEBREAK_H
#define PTD_LINEBREAK_H

#include "ptdecode.h"

#endif
