/* SPDX-License-Identifier: MIT */
#include "cs_etm_info.h"
#include "perf_abi.h"
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
 * CS_TRACEIDR_NO_ID says "no ID here". IDs 0 and >= 0x70 are reserved. */
static void set_trace_id(struct cs_source *c, uint64_t version, uint64_t reg)
{
	uint8_t id = (uint8_t)(reg & CS_TRACE_ID_MASK);

	c->trace_id = id;
	c->trace_id_valid = id > 0 && id < 0x70 &&
			    !(version >= 2 && (reg & CS_TRACEIDR_NO_ID));
}

/* The header fields, checked, and out->cpus allocated.  Returns 0 or a
 * negative enum ptd_error with a message in err. */
static int parse_header(const uint8_t *priv, size_t len, struct cs_etm_info *out,
			char *err, size_t errlen)
{
	size_t n = len / 8;
	uint64_t cpus;

	memset(out, 0, sizeof(*out));
	if (n < CS_HEADER_SIZE) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO: %zu bytes is too "
			  "short for its %d-byte header", len, 8 * CS_HEADER_SIZE);
		return PTD_ERR_TRUNCATED;
	}
	out->version = util_le64(priv + 8 * CS_HEADER_VERSION);
	cpus = util_le64(priv + 8 * CS_PMU_TYPE_CPUS);
	out->pmu_type = (uint32_t)(cpus >> 32);
	out->nr_cpu = (uint32_t)cpus;
	out->snapshot = util_le64(priv + 8 * CS_ETM_SNAPSHOT);
	if (out->version > 2) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO header version %llu "
			  "is unknown (0, 1 and 2 are known): a newer perf wrote "
			  "this file", (unsigned long long)out->version);
		return PTD_ERR_UNSUPPORTED;
	}
	/* Each CPU block has at least magic and cpu. */
	if (out->nr_cpu == 0 || out->nr_cpu > (n - CS_HEADER_SIZE) / 2) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO claims %u CPUs, but "
			  "its %zu bytes hold at most %zu", out->nr_cpu, len,
			  (n - CS_HEADER_SIZE) / 2);
		return PTD_ERR_CORRUPT;
	}
	out->cpus = calloc(out->nr_cpu, sizeof(*out->cpus));
	if (!out->cpus) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	return 0;
}

/* The protocol a CPU block's magic names (into *proto) and the number of
 * parameters it needs; 0 for a magic unknown in this header version. */
static size_t block_proto(uint64_t magic, uint64_t version, int *proto)
{
	if (magic == CS_ETMV3_MAGIC) {
		*proto = CS_PROTO_ETMV3;
		return CS_ETMV3_NR_PARAMS;
	}
	if (magic == CS_ETMV4_MAGIC) {
		*proto = CS_PROTO_ETMV4;
		return CS_ETMV4_NR_PARAMS_V0;
	}
	if (magic == CS_ETE_MAGIC && version >= 1) {
		*proto = CS_PROTO_ETE;
		return CS_ETE_NR_PARAMS_MIN;
	}
	return 0;
}

static void set_etmv3(struct cs_source *c, uint64_t version, const uint64_t *p)
{
	c->etmcr = (uint32_t)p[CS_ETM_ETMCR];
	c->etmtraceidr = (uint32_t)p[CS_ETM_ETMTRACEIDR];
	c->etmccer = (uint32_t)p[CS_ETM_ETMCCER];
	c->etmidr = (uint32_t)p[CS_ETM_ETMIDR];
	/* perf tells PTM from ETMv3 by the ID register */
	if ((c->etmidr & 0xf00) == 0x300)
		c->proto = CS_PROTO_PTM;
	set_trace_id(c, version, p[CS_ETM_ETMTRACEIDR]);
}

/* ETMv4 and ETE; nparams says which optional parameters are there. */
static void set_etmv4(struct cs_source *c, uint64_t version, const uint64_t *p,
		      uint64_t nparams)
{
	size_t ts = c->proto == CS_PROTO_ETE ? CS_ETE_TS_SOURCE : CS_ETMV4_TS_SOURCE;

	c->trcconfigr = (uint32_t)p[CS_ETMV4_TRCCONFIGR];
	c->trctraceidr = (uint32_t)p[CS_ETMV4_TRCTRACEIDR];
	c->trcidr0 = (uint32_t)p[CS_ETMV4_TRCIDR0];
	c->trcidr1 = (uint32_t)p[CS_ETMV4_TRCIDR1];
	c->trcidr2 = (uint32_t)p[CS_ETMV4_TRCIDR2];
	c->trcidr8 = (uint32_t)p[CS_ETMV4_TRCIDR8];
	if (nparams > CS_ETMV4_TRCAUTHSTATUS)
		c->trcauthstatus = (uint32_t)p[CS_ETMV4_TRCAUTHSTATUS];
	if (c->proto == CS_PROTO_ETE)
		c->trcdevarch = (uint32_t)p[CS_ETE_TRCDEVARCH];
	if (nparams > ts)
		c->ts_source = p[ts], c->has_ts_source = 1;
	set_trace_id(c, version, p[CS_ETMV4_TRCTRACEIDR]);
}

/* CPU block i, which starts at u64 index *at of the n in priv; *at moves
 * past it.  Returns 0, PTD_ERR_TRUNCATED (no message: the caller names the
 * block) or PTD_ERR_CORRUPT with a message in err. */
static int parse_block(const uint8_t *priv, size_t n, size_t *at,
		       struct cs_etm_info *out, uint32_t i, char *err, size_t errlen)
{
	struct cs_source *c = &out->cpus[i];
	uint64_t magic, nparams, p[16] = { 0 };
	size_t need;

	if (*at + CS_ETM_NR_TRC_PARAMS > n)
		return PTD_ERR_TRUNCATED;
	magic = util_le64(priv + 8 * (*at + CS_ETM_MAGIC));
	c->cpu = (int)util_le64(priv + 8 * (*at + CS_ETM_CPU));
	*at += CS_ETM_NR_TRC_PARAMS;
	need = block_proto(magic, out->version, &c->proto);
	if (!need) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO: CPU block %u "
			  "has unknown magic %#llx (header version %llu)",
			  i, (unsigned long long)magic,
			  (unsigned long long)out->version);
		return PTD_ERR_CORRUPT;
	}
	if (out->version == 0) {
		nparams = need;
	} else {
		if (*at + 1 > n)
			return PTD_ERR_TRUNCATED;
		nparams = util_le64(priv + 8 * (*at)++);
	}
	if (nparams > n - *at)
		return PTD_ERR_TRUNCATED;
	if (nparams < need) {
		util_errf(err, errlen, "cs_etm AUXTRACE_INFO: CPU %d has "
			  "%llu %s parameters, fewer than the %zu needed",
			  c->cpu, (unsigned long long)nparams,
			  cs_proto_name(c->proto), need);
		return PTD_ERR_CORRUPT;
	}
	c->nparams = (uint32_t)nparams;
	for (size_t k = 0; k < nparams && k < 16; k++)
		p[k] = util_le64(priv + 8 * (*at + k));
	*at += nparams;
	if (c->proto == CS_PROTO_ETMV3)
		set_etmv3(c, out->version, p);
	else
		set_etmv4(c, out->version, p, nparams);
	return 0;
}

int cs_etm_info_parse(const uint8_t *priv, size_t len, struct cs_etm_info *out,
		      char *err, size_t errlen)
{
	size_t at = CS_HEADER_SIZE;
	int r = parse_header(priv, len, out, err, errlen);

	for (uint32_t i = 0; !r && i < out->nr_cpu; i++) {
		r = parse_block(priv, len / 8, &at, out, i, err, errlen);
		if (r == PTD_ERR_TRUNCATED)
			util_errf(err, errlen, "cs_etm AUXTRACE_INFO: truncated in "
				  "the block of CPU %u of %u (%zu bytes)", i,
				  out->nr_cpu, len);
	}
	if (r)
		cs_etm_info_free(out);
	return r;
}
