/* SPDX-License-Identifier: MIT */
/*
 * fuzz_kcore - the kcore (ELF core file) reader (decoder/format/kcore.c)
 * that perf record --kcore's copy and ptcapture --kcore go through.  The
 * input is the file; every segment must lie inside it and read back.
 */
#include "fuzz_common.h"
#include "kcore.h"
#include "ptdecode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[1 << 16];
	char path[64], err[512];
	struct kcore *k;
	int fd = fz_memfd(data, size, path);

	if (fd < 0)
		return 0;
	err[0] = 0;
	if (kcore_open(path, &k, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < kcore_nsegs(k); i++) {
			const struct kcore_seg *s = kcore_get_seg(k, i);
			size_t n = s->size < sizeof(buf) ? (size_t)s->size : sizeof(buf);

			if (s->offset > size || s->size > size - s->offset) {
				fprintf(stderr, "segment %zu outside the file\n", i);
				abort();
			}
			if (kcore_find(k, s->vaddr) == NULL ||
			    kcore_read(k, s->vaddr, buf, n, err, sizeof(err))) {
				fprintf(stderr, "segment %zu does not read back: %s\n", i, err);
				abort();
			}
			fz_touch(buf, n);
		}
		if (kcore_get_seg(k, kcore_nsegs(k))) {
			fprintf(stderr, "kcore_get_seg past the end\n");
			abort();
		}
		kcore_close(k);
	} else if (!err[0]) {
		fprintf(stderr, "kcore_open failed without a message\n");
		abort();
	}
	close(fd);
	return 0;
}
