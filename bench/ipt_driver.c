/* ipt_driver - libipt's own decoders, the reference the benchmark compares
 * ptdecode against: decodes a raw Intel PT trace with code images given as
 * FILE:ADDR and prints instruction count, bytes and time.
 *
 *   ipt_driver block|insn|pkt [-m MTC_FREQ] TRACE FILE:ADDR...
 *
 * -m: the trace has MTC packets with that period; libipt gets it with
 * benchgen's clock (CPUID 0x15 ratio 2/1, nominal ratio 32) to turn
 * MTC and CYC into time, as ptdecode's configuration does.
 *
 * Images are added with pt_image_add_file (libipt's own section cache), as
 * ptxed does; "block" is ptxed's default decoder. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct pt_config cfg;
	struct pt_image *image;
	uint8_t *buf;
	uint64_t ninsn = 0, nerr = 0;
	int mtc_freq = -1;
	long size;
	double t0;
	FILE *f;

	if (argc > 3 && !strcmp(argv[2], "-m")) {
		mtc_freq = atoi(argv[3]);
		argv[3] = argv[1];
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: ipt_driver block|insn|pkt [-m MTC_FREQ] TRACE FILE:ADDR...\n");
		return 2;
	}
	f = fopen(argv[2], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) <= 0)
		return 1;
	rewind(f);
	buf = malloc((size_t)size);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
		return 1;
	fclose(f);
	image = pt_image_alloc("bench");
	for (int i = 3; i < argc; i++) {
		char *c = strrchr(argv[i], ':');

		if (!c)
			return 2;
		*c = '\0';
		if (pt_image_add_file(image, argv[i], 0, UINT64_MAX, NULL,
				      strtoull(c + 1, NULL, 0)) < 0) {
			fprintf(stderr, "cannot add %s\n", argv[i]);
			return 1;
		}
	}
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	if (mtc_freq >= 0) {
		cfg.mtc_freq = (uint8_t)mtc_freq;
		cfg.cpuid_0x15_ebx = 2;
		cfg.cpuid_0x15_eax = 1;
		cfg.nom_freq = 32;
	}
	t0 = now();
	if (!strcmp(argv[1], "pkt")) {
		struct pt_packet_decoder *d = pt_pkt_alloc_decoder(&cfg);
		struct pt_packet p;

		while (pt_pkt_sync_forward(d) >= 0)
			while (pt_pkt_next(d, &p, sizeof(p)) >= 0)
				ninsn++; /* packets */
	} else if (!strcmp(argv[1], "insn")) {
		struct pt_insn_decoder *d = pt_insn_alloc_decoder(&cfg);
		struct pt_insn insn;
		struct pt_event ev;

		pt_insn_set_image(d, image);
		for (;;) {
			int st = pt_insn_sync_forward(d);

			if (st < 0)
				break;
			for (;;) {
				while (st & pts_event_pending) {
					st = pt_insn_event(d, &ev, sizeof(ev));
					if (st < 0)
						break;
				}
				if (st < 0 || (st & pts_eos))
					break;
				st = pt_insn_next(d, &insn, sizeof(insn));
				if (st < 0)
					break;
				ninsn++;
			}
			if (st < 0 && st != -pte_eos)
				nerr++;
		}
	} else {
		struct pt_block_decoder *d = pt_blk_alloc_decoder(&cfg);
		struct pt_block blk;
		struct pt_event ev;

		pt_blk_set_image(d, image);
		for (;;) {
			int st = pt_blk_sync_forward(d);

			if (st < 0)
				break;
			for (;;) {
				while (st & pts_event_pending) {
					st = pt_blk_event(d, &ev, sizeof(ev));
					if (st < 0)
						break;
				}
				if (st < 0 || (st & pts_eos))
					break;
				st = pt_blk_next(d, &blk, sizeof(blk));
				ninsn += blk.ninsn;
				if (st < 0)
					break;
			}
			if (st < 0 && st != -pte_eos)
				nerr++;
		}
	}
	printf("%s: %llu %s, %llu errors, %ld bytes, %.3f s\n", argv[1],
	       (unsigned long long)ninsn, strcmp(argv[1], "pkt") ? "instructions" : "packets",
	       (unsigned long long)nerr, size, now() - t0);
	return 0;
}
