/* SPDX-License-Identifier: MIT */
/* cs_code.h - the fixed A64 code image of the CoreSight fuzz targets: a
 * page at CS_CODE_ADDR with a loop (conditional branch), a call, a return
 * and an unconditional branch; the rest is NOPs.  Seeds trace through it. */
#ifndef PTD_FUZZ_CS_CODE_H
#define PTD_FUZZ_CS_CODE_H

#include <stdint.h>

#define CS_CODE_ADDR 0x1000u
#define CS_CODE_SIZE 4096u

static inline void cs_code_fill(uint8_t *buf)
{
	static const uint32_t prog[] = {
		0xd503201f,   /* 0x1000: nop */
		0xd503201f,   /* 0x1004: nop */
		0x54ffffc1,   /* 0x1008: b.ne 0x1000 */
		0x94000005,   /* 0x100c: bl 0x1020 */
		0x17fffffc,   /* 0x1010: b 0x1000 */
		0xd503201f, 0xd503201f, 0xd503201f,
		0xd65f03c0,   /* 0x1020: ret */
	};
	for (uint32_t i = 0; i < CS_CODE_SIZE / 4; i++) {
		uint32_t w = i < sizeof(prog) / 4 ? prog[i] : 0xd503201f;

		buf[4 * i] = (uint8_t)w;
		buf[4 * i + 1] = (uint8_t)(w >> 8);
		buf[4 * i + 2] = (uint8_t)(w >> 16);
		buf[4 * i + 3] = (uint8_t)(w >> 24);
	}
}

#endif
