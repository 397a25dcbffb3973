/* SPDX-License-Identifier: MIT */
/*
 * ptenc OUT PACKET...: writes the Intel PT packets named on the command
 * line to OUT, encoded by libipt's encoder (pt_enc_next).  A test tool:
 * small raw traces whose every packet the test chooses.
 *
 *   psb psbend ovf pad stop          the packet of that name
 *   mode64 mode32                    MODE.Exec
 *   tnt:BITS                         TNT (8-bit form up to 6 bits, else
 *                                    64-bit), BITS oldest first: tnt:101
 *   tip:IP pge:IP pgd:IP fup:IP      IP packets, full 64-bit IP
 *   tip:IP:16|32|48|s48              ... compressed: the low 16, 32 or 48
 *                                    bits update the last IP; s48: sign-
 *                                    extended 48 bits
 *   tip pgd fup                      IP suppressed
 *   pip:CR3                          PIP (nr = 0)
 *   vmcs:BASE                        VMCS (BASE 4 KiB aligned)
 *   tsc:VALUE                        TSC
 *   raw:HEX                          bytes as they are (damage)
 *
 * ptenc --libipt-version: the linked libipt's version (pt_library_version).
 * ptenc --cpu-known F/M[/S]: exits 0 when the linked libipt has errata for
 * that CPU (pt_cpu_errata accepts it), 1 when it does not know it.
 */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ip_packet(struct pt_packet *p, enum pt_packet_type type,
		     const char *arg)
{
	char *rest;

	p->type = type;
	if (!arg) {
		p->payload.ip.ipc = pt_ipc_suppressed;
		return 0;
	}
	p->payload.ip.ipc = pt_ipc_full;
	p->payload.ip.ip = strtoull(arg, &rest, 0);
	if (!*rest)
		return 0;
	if (!strcmp(rest, ":16"))
		p->payload.ip.ipc = pt_ipc_update_16;
	else if (!strcmp(rest, ":32"))
		p->payload.ip.ipc = pt_ipc_update_32;
	else if (!strcmp(rest, ":48"))
		p->payload.ip.ipc = pt_ipc_update_48;
	else if (!strcmp(rest, ":s48"))
		p->payload.ip.ipc = pt_ipc_sext_48;
	else
		return -1;
	return 0;
}

static int tnt_packet(struct pt_packet *p, const char *bits)
{
	size_t n = strlen(bits);

	if (!n || n > 47)
		return -1;
	p->type = n <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	p->payload.tnt.bit_size = (uint8_t)n;
	p->payload.tnt.payload = 0;
	for (size_t i = 0; i < n; i++) {
		if (bits[i] != '0' && bits[i] != '1')
			return -1;
		/* the oldest branch in the most significant bit */
		p->payload.tnt.payload = p->payload.tnt.payload << 1 |
					 (uint64_t)(bits[i] - '0');
	}
	return 0;
}

/* One packet from its spec; raw bytes are written directly (-2). */
static int parse(const char *spec, struct pt_packet *p, FILE *raw_out)
{
	char name[16];
	const char *arg = strchr(spec, ':');
	size_t n = arg ? (size_t)(arg - spec) : strlen(spec);

	if (n >= sizeof(name))
		return -1;
	memcpy(name, spec, n);
	name[n] = '\0';
	if (arg)
		arg++;
	memset(p, 0, sizeof(*p));
	if (!strcmp(name, "psb")) p->type = ppt_psb;
	else if (!strcmp(name, "psbend")) p->type = ppt_psbend;
	else if (!strcmp(name, "ovf")) p->type = ppt_ovf;
	else if (!strcmp(name, "pad")) p->type = ppt_pad;
	else if (!strcmp(name, "stop")) p->type = ppt_stop;
	else if (!strcmp(name, "mode64") || !strcmp(name, "mode32")) {
		p->type = ppt_mode;
		p->payload.mode.leaf = pt_mol_exec;
		if (name[4] == '6')
			p->payload.mode.bits.exec.csl = 1;
		else
			p->payload.mode.bits.exec.csd = 1;
	} else if (!strcmp(name, "tnt"))
		return arg ? tnt_packet(p, arg) : -1;
	else if (!strcmp(name, "tip")) return ip_packet(p, ppt_tip, arg);
	else if (!strcmp(name, "pge")) return ip_packet(p, ppt_tip_pge, arg);
	else if (!strcmp(name, "pgd")) return ip_packet(p, ppt_tip_pgd, arg);
	else if (!strcmp(name, "fup")) return ip_packet(p, ppt_fup, arg);
	else if (!strcmp(name, "pip") && arg) {
		p->type = ppt_pip;
		p->payload.pip.cr3 = strtoull(arg, NULL, 0);
	} else if (!strcmp(name, "vmcs") && arg) {
		p->type = ppt_vmcs;
		p->payload.vmcs.base = strtoull(arg, NULL, 0);
	} else if (!strcmp(name, "tsc") && arg) {
		p->type = ppt_tsc;
		p->payload.tsc.tsc = strtoull(arg, NULL, 0);
	} else if (!strcmp(name, "raw") && arg) {
		for (; arg[0] && arg[1]; arg += 2) {
			unsigned v;

			if (sscanf(arg, "%2x", &v) != 1)
				return -1;
			fputc((int)v, raw_out);
		}
		return -2;
	} else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	struct pt_encoder *enc;
	struct pt_config cfg;
	FILE *out;

	if (argc == 2 && !strcmp(argv[1], "--libipt-version")) {
		struct pt_version v = pt_library_version();

		printf("%u.%u.%u%s%s\n", v.major, v.minor, v.patch,
		       v.ext && *v.ext ? "-" : "", v.ext ? v.ext : "");
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--cpu-known")) {
		struct pt_cpu cpu;
		struct pt_errata errata;
		unsigned f, m, st = 0;

		if (sscanf(argv[2], "%u/%u/%u", &f, &m, &st) < 2)
			return 2;
		memset(&cpu, 0, sizeof(cpu));
		cpu.vendor = pcv_intel;
		cpu.family = (uint16_t)f;
		cpu.model = (uint8_t)m;
		cpu.stepping = (uint8_t)st;
		return pt_cpu_errata(&errata, &cpu) < 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: ptenc OUT PACKET...\n");
		return 2;
	}
	out = fopen(argv[1], "wb");
	if (!out)
		return 1;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + sizeof(buf);
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		return 1;
	for (int i = 2; i < argc; i++) {
		struct pt_packet p;
		int rc;

		/* raw bytes go between the encoded packets, in order */
		{
			uint64_t off = 0;

			pt_enc_get_offset(enc, &off);
			fwrite(buf, 1, (size_t)off, out);
			pt_enc_sync_set(enc, 0);
		}
		rc = parse(argv[i], &p, out);
		if (rc == -2)
			continue;
		if (rc < 0) {
			fprintf(stderr, "ptenc: bad packet \"%s\"\n", argv[i]);
			return 2;
		}
		rc = pt_enc_next(enc, &p);
		if (rc < 0) {
			fprintf(stderr, "ptenc: %s: %s\n", argv[i], pt_errstr(pt_errcode(rc)));
			return 1;
		}
	}
	{
		uint64_t off = 0;

		pt_enc_get_offset(enc, &off);
		fwrite(buf, 1, (size_t)off, out);
	}
	pt_free_encoder(enc);
	return fclose(out) ? 1 : 0;
}
