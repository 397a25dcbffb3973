/* SPDX-License-Identifier: MIT */
/*
 * ptloop [OPTION...] TRACE IMAGE...: an independent oracle for raw Intel PT decoding:
 * libipt's instruction decoder called directly, in the loop libipt's
 * documentation gives (and ptxed runs): sync, drain the pending events,
 * next instruction; an instruction returned together with an error or
 * the end of the trace executed and is listed; at an error, resync at
 * the next PSB; the end of the trace ends quietly.
 *
 *   IMAGE  raw:FILE:ADDR          FILE's bytes at ADDR
 *          pages:ADDRS:DUMP       a page cache: u64 page addresses in
 *                                 ADDRS, their 4 KiB pages in DUMP
 *
 *   OPTION --cpu F/M/S             the recording CPU (libipt's errata)
 *          --filter:addrN_cfg|_a|_b V   IP filter N (0-3), as ptxed
 *
 * Prints one line per instruction (0xIP), per paging event that is no
 * status update ([paging cr3=0x...]), per execution mode event that is no
 * status update and changes the mode ([exec-mode ip=0x... mode=16|32|64])
 * (docs/FORMATS.md's event rules) and per
 * error ([error offset=0x... ip=0x...: libipt's message]), then
 * "instructions: N errors: M".
 */
#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n + 1)) ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "ptloop: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void add_image(struct pt_image *img, char *spec)
{
	char *kind = strtok(spec, ":"), *a = strtok(NULL, ":"), *b = strtok(NULL, ":");
	size_t na, nb;
	uint8_t *addrs, *pages;
	int rc = 0;

	if (!kind || !a || !b) {
		fprintf(stderr, "ptloop: bad image %s\n", spec);
		exit(2);
	}
	if (!strcmp(kind, "raw")) {
		free(slurp(a, &na));
		rc = pt_image_add_file(img, a, 0, na, NULL, strtoull(b, NULL, 0));
	} else if (!strcmp(kind, "pages")) {
		addrs = slurp(a, &na);
		pages = slurp(b, &nb);
		if (na % 8 || nb != na / 8 * 4096) {
			fprintf(stderr, "ptloop: %s and %s do not match\n", a, b);
			exit(2);
		}
		for (size_t i = 0; i < na / 8 && rc >= 0; i++) {
			uint64_t va;

			memcpy(&va, addrs + i * 8, 8);
			rc = pt_image_add_file(img, b, i * 4096, 4096, NULL, va);
		}
		free(addrs);
		free(pages);
	} else {
		rc = -pte_invalid;
	}
	if (rc < 0) {
		fprintf(stderr, "ptloop: image %s: %s\n", a, pt_errstr(pt_errcode(rc)));
		exit(2);
	}
}

static uint64_t ninsn, nerr;

static void error(struct pt_insn_decoder *dec, int rc, uint64_t ip)
{
	uint64_t off = 0;

	pt_insn_get_offset(dec, &off);
	printf("[error offset=%#" PRIx64 " ip=%#" PRIx64 ": %s]\n", off, ip,
	       pt_errstr(pt_errcode(rc)));
	nerr++;
}

static void print_mode(const struct pt_event *ev)
{
	enum pt_exec_mode m = ev->variant.exec_mode.mode;

	printf("[exec-mode");
	if (!ev->ip_suppressed)
		printf(" ip=%#" PRIx64, ev->variant.exec_mode.ip);
	printf(" mode=%s]\n", m == ptem_16bit ? "16" : m == ptem_32bit ? "32" :
	       m == ptem_64bit ? "64" : "unknown");
}

/* Decodes from the current sync point to the next error or the end.
 * Exec-mode lines where the mode changes (libipt 2.1 reports only those,
 * 2.0.5 every MODE.Exec). */
static void decode(struct pt_insn_decoder *dec, int status)
{
	struct pt_insn insn;
	int mode = -1;

	memset(&insn, 0, sizeof(insn));
	for (;;) {
		while (status >= 0 && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_insn_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
			if (ev.type == ptev_paging && !ev.status_update)
				printf("[paging cr3=%#" PRIx64 "]\n", ev.variant.paging.cr3);
			else if (ev.type == ptev_async_paging && !ev.status_update)
				printf("[paging cr3=%#" PRIx64 "]\n",
				       ev.variant.async_paging.cr3);
			else if (ev.type == ptev_exec_mode) {
				if (!ev.status_update &&
				    (int)ev.variant.exec_mode.mode != mode)
					print_mode(&ev);
				mode = (int)ev.variant.exec_mode.mode;
			}
		}
		if (status >= 0 && (status & pts_eos))
			return;
		if (status >= 0) {
			insn.iclass = ptic_error;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			/* filled in together with an error: it executed */
			if (insn.iclass != ptic_error) {
				printf("%#" PRIx64 "\n", insn.ip);
				ninsn++;
			}
		}
		if (status == -pte_eos)
			return;
		if (status < 0) {
			error(dec, status, insn.ip);
			return;
		}
	}
}

/* --cpu and --filter:addrN_* into cfg; returns how many arguments. */
static int option(struct pt_config *cfg, char **argv)
{
	unsigned f, m, s = 0, n;
	char field[4];
	uint64_t v;

	if (!strcmp(argv[0], "--cpu") && argv[1] &&
	    sscanf(argv[1], "%u/%u/%u", &f, &m, &s) >= 2) {
		cfg->cpu.vendor = pcv_intel;
		cfg->cpu.family = (uint16_t)f;
		cfg->cpu.model = (uint8_t)m;
		cfg->cpu.stepping = (uint8_t)s;
		if (pt_cpu_errata(&cfg->errata, &cfg->cpu) < 0)
			return -1;
		return 2;
	}
	if (sscanf(argv[0], "--filter:addr%u_%3s", &n, field) != 2 || n > 3 || !argv[1])
		return -1;
	struct pt_conf_addr_filter *af = &cfg->addr_filter;
	uint64_t *a[4] = { &af->addr0_a, &af->addr1_a, &af->addr2_a, &af->addr3_a };
	uint64_t *b[4] = { &af->addr0_b, &af->addr1_b, &af->addr2_b, &af->addr3_b };

	v = strtoull(argv[1], NULL, 0);
	if (!strcmp(field, "cfg"))
		af->config.addr_cfg |= (v & 0xf) << (4 * n);
	else if (!strcmp(field, "a"))
		*a[n] = v;
	else if (!strcmp(field, "b"))
		*b[n] = v;
	else
		return -1;
	return 2;
}

int main(int argc, char **argv)
{
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	struct pt_image *img;
	size_t size;
	uint8_t *trace;
	int i = 1;

	pt_config_init(&cfg);
	while (i < argc && argv[i][0] == '-') {
		int n = option(&cfg, argv + i);

		if (n < 0) {
			fprintf(stderr, "ptloop: bad option %s\n", argv[i]);
			return 2;
		}
		i += n;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: ptloop [OPTION...] TRACE IMAGE...\n");
		return 2;
	}
	trace = slurp(argv[i], &size);
	img = pt_image_alloc("ptloop");
	while (++i < argc)
		add_image(img, argv[i]);
	cfg.begin = trace;
	cfg.end = trace + size;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec || pt_insn_set_image(dec, img) < 0)
		return 2;
	for (uint64_t last = UINT64_MAX;;) {
		uint64_t sync = 0;
		int status = pt_insn_sync_forward(dec);

		if (status == -pte_eos)
			break;
		if (status < 0) {
			error(dec, status, 0);
			pt_insn_get_sync_offset(dec, &sync);
			if (sync == last)
				break;
			last = sync;
			continue;
		}
		decode(dec, status);
	}
	printf("instructions: %" PRIu64 " errors: %" PRIu64 "\n", ninsn, nerr);
	pt_insn_free_decoder(dec);
	pt_image_free(img);
	free(trace);
	return 0;
}
