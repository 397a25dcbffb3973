/* SPDX-License-Identifier: MIT */
/*
 * coverage (stage: cli/) - the --coverage view: how many times each instruction ran,
 * counted from blocks (one hash lookup per block, not per instruction).
 */
#ifndef PTD_CLI_COVERAGE_H
#define PTD_CLI_COVERAGE_H

#include <stdio.h>
#include "ptdecode.h"

struct coverage;

struct coverage *coverage_new(void);
void coverage_free(struct coverage *c);
/* Counts a run of blocks from ptd_next_blocks.  Returns 0 or -1 (memory). */
int coverage_add(struct coverage *c, const struct ptd_session *s,
		 const struct ptd_block *blocks, size_t n);
/* One line per instruction address, ascending: "0xADDR COUNT sym+off", or
 * JSON Lines {"type":"coverage","ip":...,"count":...,"sym":...}. */
void coverage_print(struct coverage *c, struct ptd_session *s, FILE *out,
		    int json);

#endif
