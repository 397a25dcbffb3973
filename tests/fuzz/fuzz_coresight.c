/* SPDX-License-Identifier: MIT */
/*
 * fuzz_coresight - CoreSight decoding of arbitrary trace bytes through
 * coresight_open_perf with a fixed ETMv4 configuration (two CPUs, trace IDs
 * 0x10 and 0x12; register values as simpleperf recorded them on an ETMv4
 * core) and the fixed A64 code page of cs_code.h.
 *
 * Input byte 0 selects the mode: bit 0 set = formatted 16-byte CoreSight
 * frames (ETR/ETB sink), clear = one source's raw stream (TRBE, CPU 0);
 * bit 1 set = the rest is split into two AUX chunks at its middle (the
 * decoder is reset between chunks).  Decoding is bounded by an event count.
 * PTD_FUZZ_EXPECT_ERROR: see fuzz_common.h.
 */
#include "coresight.h"
#include "cs_code.h"
#include "cs_etm_info.h"
#include "fuzz_common.h"
#include "imgstore.h"
#include "ptdecode.h"

#define MAX_EVENTS 100000

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* perf's cs_etm AUXTRACE_INFO priv area, header version 1. */
static int make_info(struct cs_etm_info *info)
{
	uint8_t priv[8 * (3 + 2 * 10)];
	size_t n = 0;
	char err[256];

	put64(priv + 8 * n++, 1);                     /* version */
	put64(priv + 8 * n++, (8ull << 32) | 2);      /* PMU type, CPUs */
	put64(priv + 8 * n++, 0);                     /* snapshot */
	for (int cpu = 0; cpu < 2; cpu++) {
		static const uint64_t regs[7] = {
			0x40, 0, 0x28000ea1, 0x4100f422, 0x20001088, 0, 0x8c,
		};
		put64(priv + 8 * n++, CS_ETMV4_MAGIC);
		put64(priv + 8 * n++, cpu);
		put64(priv + 8 * n++, 7);
		for (int r = 0; r < 7; r++)
			put64(priv + 8 * n++, r == 1 ? 0x10 + 2 * cpu : regs[r]);
	}
	if (cs_etm_info_parse(priv, 8 * n, info, err, sizeof(err))) {
		fprintf(stderr, "fixed cs_etm info rejected: %s\n", err);
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t code[CS_CODE_SIZE];
	static struct cs_etm_info info;
	static int init;
	struct coresight_chunk ch[2];
	struct coresight_queue_desc q = { .chunks = ch, .cpu = 0 };
	struct imgstore *st;
	struct backend *be;
	char err[512];
	int seen = 0;

	if (!init) {
		cs_code_fill(code);
		make_info(&info);
		init = 1;
	}
	if (size < 1)
		return 0;
	q.formatted = data[0] & 1;
	data++, size--;
	if (data[-1] & 2) {
		ch[0] = (struct coresight_chunk){ data, size / 2, 0,
						  IMGSTORE_TIME_UNKNOWN, 100 };
		ch[1] = (struct coresight_chunk){ data + size / 2, size - size / 2,
						  size / 2, IMGSTORE_TIME_UNKNOWN, 100 };
		q.nchunks = 2;
	} else {
		ch[0] = (struct coresight_chunk){ data, size, 0,
						  IMGSTORE_TIME_UNKNOWN, 100 };
		q.nchunks = 1;
	}
	st = imgstore_new();
	if (!st || imgstore_add_bytes(st, 100, CS_CODE_ADDR, CS_CODE_SIZE, code,
				      0, IMGSTORE_FOREVER, "code") < 0)
		abort();
	if (coresight_open_perf(&info, &q, 1, st, 1, &be, err, sizeof(err)) == 0) {
		struct ptd_event ev;

		for (size_t n = 0; n < MAX_EVENTS; n++) {
			if (be->next(be, &ev) < 0)
				break;
			fz_touch_str(ev.msg);
			fz_expect_event(ev.kind == PTD_EV_ERROR, ev.msg, &seen);
		}
		fz_touch_str(be->errmsg(be));
		be->destroy(be);
	}
	fz_expect_done(seen);
	imgstore_free(st);
	return 0;
}
