/* SPDX-License-Identifier: MIT */
#include "cs_etm_info.h"
#include "ptdecode.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

const char *cs_proto_name(int proto)
{
	switch (proto) {
	case CS_PROTO_ETMV3: return "ETMv3";
	case CS_PROTO_PTM: return "PTM";
	case CS_PROTO_ETMV4: return "ETMv4";
	case CS_PROTO_ETE: return "ETE";
	case CS_PROTO_STM: return "STM";
	case CS_PROTO_ITM: return "ITM";
	}
	return "unknown";
}

void cs_etm_info_free(struct cs_etm_info *info)
{
	free(info->cpus);
	info->cpus = NULL;
}

/* The trace ID in a TRACEIDR value: bits [6:0]; from header version 2,
 * bit 31 says "no ID here". IDs 0 and >= 0x70 are reserved. */
static void set_trace_id(struct cs_source *c, uint64_t version, uint64_t reg)
{
	uint8_t id = (uint8_t)(reg & 0x7f);

	c->trace_id = id;
	c->trace_id_valid = id > 0 && id < 0x70 &&
			    !(version >= 2 && (reg & (1ull << 31)));
}

int cs_etm_info_parse(const uint8_t *priv, size_t len, struct cs_etm_info *out,
		      char *err, size_t errlen)
{
	size_t n = len / 8, at = 3;
	uint32_t i;
	uint64_t v1;

	memset(out, 0, sizeof(*out));
	if (n < 3) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO: %zu bytes is too "
			  "short for its 24-byte header", len);
		return PTD_ERR_TRUNCATED;
	}
	out->version = util_le64(priv);
	v1 = util_le64(priv + 8);
	out->pmu_type = (uint32_t)(v1 >> 32);
	out->nr_cpu = (uint32_t)v1;
	out->snapshot = util_le64(priv + 16);
	if (out->version > 2) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO header version %llu "
			  "is unknown (0, 1 and 2 are known): a newer perf wrote "
			  "this file", (unsigned long long)out->version);
		return PTD_ERR_UNSUPPORTED;
	}
	/* Each CPU block has at least magic and cpu. */
	if (out->nr_cpu == 0 || out->nr_cpu > (n - 3) / 2) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO claims %u CPUs, but "
			  "its %zu bytes hold at most %zu", out->nr_cpu, len,
			  (n - 3) / 2);
		return PTD_ERR_CORRUPT;
	}
	out->cpus = calloc(out->nr_cpu, sizeof(*out->cpus));
	if (!out->cpus) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	for (i = 0; i < out->nr_cpu; i++) {
		struct cs_source *c = &out->cpus[i];
		uint64_t magic, nparams, p[16] = { 0 };
		size_t need;

		if (at + 2 > n)
			goto trunc;
		magic = util_le64(priv + 8 * at);
		c->cpu = (int)util_le64(priv + 8 * (at + 1));
		at += 2;
		if (magic == CS_ETMV3_MAGIC) {
			c->proto = CS_PROTO_ETMV3;
			need = 4;
		} else if (magic == CS_ETMV4_MAGIC) {
			c->proto = CS_PROTO_ETMV4;
			need = 6;
		} else if (magic == CS_ETE_MAGIC && out->version >= 1) {
			c->proto = CS_PROTO_ETE;
			need = 8;
		} else {
			util_errf(err, errlen, "cs_etm AUXTRACE_INFO: CPU block %u "
				  "has unknown magic %#llx (header version %llu)",
				  i, (unsigned long long)magic,
				  (unsigned long long)out->version);
			cs_etm_info_free(out);
			return PTD_ERR_CORRUPT;
		}
		if (out->version == 0) {
			nparams = need;
		} else {
			if (at + 1 > n)
				goto trunc;
			nparams = util_le64(priv + 8 * at);
			at++;
		}
		if (nparams > n - at)
			goto trunc;
		if (nparams < need) {
			util_errf(err, errlen, "cs_etm AUXTRACE_INFO: CPU %d has "
				  "%llu %s parameters, fewer than the %zu needed",
				  c->cpu, (unsigned long long)nparams,
				  cs_proto_name(c->proto), need);
			cs_etm_info_free(out);
			return PTD_ERR_CORRUPT;
		}
		c->nparams = (uint32_t)nparams;
		for (size_t k = 0; k < nparams && k < 16; k++)
			p[k] = util_le64(priv + 8 * (at + k));
		at += nparams;
		if (c->proto == CS_PROTO_ETMV3) {
			c->etmcr = (uint32_t)p[0];
			c->etmtraceidr = (uint32_t)p[1];
			c->etmccer = (uint32_t)p[2];
			c->etmidr = (uint32_t)p[3];
			/* perf tells PTM from ETMv3 by the ID register */
			if ((c->etmidr & 0xf00) == 0x300)
				c->proto = CS_PROTO_PTM;
			set_trace_id(c, out->version, p[1]);
		} else {
			c->trcconfigr = (uint32_t)p[0];
			c->trctraceidr = (uint32_t)p[1];
			c->trcidr0 = (uint32_t)p[2];
			c->trcidr1 = (uint32_t)p[3];
			c->trcidr2 = (uint32_t)p[4];
			c->trcidr8 = (uint32_t)p[5];
			if (nparams > 6)
				c->trcauthstatus = (uint32_t)p[6];
			if (c->proto == CS_PROTO_ETE) {
				c->trcdevarch = (uint32_t)p[7];
				if (nparams > 8)
					c->ts_source = p[8], c->has_ts_source = 1;
			} else if (nparams > 7) {
				c->ts_source = p[7], c->has_ts_source = 1;
			}
			set_trace_id(c, out->version, p[1]);
		}
	}
	return 0;
trunc:
	util_errf(err, errlen, "cs_etm AUXTRACE_INFO: truncated in the block "
		  "of CPU %u of %u (%zu bytes)", i, out->nr_cpu, len);
	cs_etm_info_free(out);
	return PTD_ERR_TRUNCATED;
}
