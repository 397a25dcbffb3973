/* SPDX-License-Identifier: MIT */
/* The fast decoder's PSB search (scan_find_psb) against memmem on random
 * buffers dense in the PSB's bytes (02, 82) with PSBs put in at random
 * places, searched from every start near the buffer's beginning. */
#define _GNU_SOURCE /* memmem */
#include "fastpt_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82 };
	uint8_t buf[300];
	long checks = 0, bad = 0;

	srand(1);
	for (int it = 0; it < 100000; it++) {
		int len = rand() % (int)sizeof(buf);

		for (int i = 0; i < len; i++) {
			int r = rand() % 8;

			buf[i] = r < 3 ? 0x02 : r < 6 ? 0x82 : (uint8_t)rand();
		}
		for (int n = rand() % 3; n > 0 && len >= 16; n--)
			memcpy(buf + rand() % (len - 15), psb, sizeof(psb));
		for (int from = 0; from <= len && from <= 20; from++) {
			const uint8_t *want = memmem(buf + from, (size_t)(len - from), psb,
						     sizeof(psb));
			const uint8_t *got = scan_find_psb(buf + from, buf + len);

			checks++;
			if (got != want && bad++ < 5)
				printf("FAIL: %d bytes from %d: PSB at %ld, memmem: %ld\n", len,
				       from, got ? (long)(got - buf) : -1L,
				       want ? (long)(want - buf) : -1L);
		}
	}
	if (bad) {
		printf("FAIL: %ld of %ld searches differ from memmem\n", bad, checks);
		return 1;
	}
	printf("OK: %ld searches as memmem's\n", checks);
	return 0;
}
