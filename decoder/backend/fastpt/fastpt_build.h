/* SPDX-License-Identifier: MIT */
/*
 * fastpt_build - the fast Intel PT decoder's block builder (backend stage,
 * backend/fastpt/): decodes a basic block from the code valid where the
 * walk is, into the worker's block cache.
 *
 * Instructions are classified with capstone (disasm.h); one capstone
 * cannot decode is judged by libipt (fastpt_oracle.h).  A block's validity
 * window is that of the image versions its bytes come from.  When the
 * backend keeps text (a text consumer asked for it), a block also keeps
 * each instruction's disassembly, which capstone formats while
 * classifying anyway.  One builder per worker (not thread-safe).
 */
#ifndef PTD_FASTPT_BUILD_H
#define PTD_FASTPT_BUILD_H

#include <stddef.h>

#include "fastpt_blocks.h"
#include "fastpt_oracle.h"

struct disasm;
struct imgstore;

struct fbuilder {
	struct imgstore *st;
	const int *keep_text;      /* the backend's flag, read atomically */
	struct disasm *dis[3];     /* x86 16-, 32- and 64-bit, on first use */
	struct oracle orc;
	char *tbuf;                /* text scratch of the block being built */
	size_t tcap;
};

void fbuilder_init(struct fbuilder *bd, struct imgstore *st, const int *keep_text);

/* Decodes the block at at->ip from the image valid at at->time, adds it to
 * c and returns it (valid at at->time, maybe not over at->time_hi), or
 * NULL when the code cannot be read or decoded, or out of memory. */
struct fblock *fbuilder_block(struct fbuilder *bd, struct bcache *c,
			      const struct fwhere *at);

void fbuilder_free(struct fbuilder *bd);

#endif
