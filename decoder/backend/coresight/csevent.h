/* SPDX-License-Identifier: MIT */
/*
 * csevent - OpenCSD elements to events, in the CoreSight backend
 * (backend/coresight/): the backend's next operation (coresight.h says
 * which event each element becomes).  Instruction ranges are expanded
 * one instruction at a time, its bytes read through the image store; the
 * PE context (context ID and VMID) and the timestamp are carried from
 * element to element within a queue.
 */
#ifndef PTD_CSEVENT_H
#define PTD_CSEVENT_H

#include <stddef.h>
#include <stdint.h>

struct backend;
struct ptd_event;

/* The backend's next (struct backend): the next event of a CoreSight
 * backend.  Returns 0, PTD_ERR_END, or a negative PTD_ERR_*. */
int csevent_next(struct backend *b, struct ptd_event *ev);

/* The backend's next_blocks, block_info and block_insn (struct backend)
 * on the fast path: A64 ranges as blocks, other instructions as blocks of
 * one event; the same instructions and events as csevent_next. */
struct ptd_block;
struct ptd_block_info;
int csevent_next_blocks(struct backend *b, const struct ptd_block **blocks,
			size_t *n, uint64_t *ninsn, uint64_t limit,
			struct ptd_event *ev, int *have_ev);
int csevent_block_info(const struct backend *b, const struct ptd_block *blk,
		       struct ptd_block_info *info);
int csevent_block_insn(const struct backend *b, const struct ptd_block *blk,
		       uint32_t i, struct ptd_event *ev);

/* The enum ptd_exec_mode of an OpenCSD ISA (ocsd_isa). */
uint8_t csevent_mode(uint8_t isa);

#endif
