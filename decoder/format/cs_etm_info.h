/* SPDX-License-Identifier: MIT */
/*
 * cs_etm_info - reads the private area of perf's AUXTRACE_INFO record for
 * CoreSight ETM (type PD_AUXTRACE_CS_ETM), as written by Linux perf
 * (tools/perf/arch/arm/util/cs-etm.c, read by util/cs-etm.c) and by
 * simpleperf; format stage (decoder/format/).  The indices and magic
 * numbers are perf_abi.h's CS_*.
 *
 * Layout: a header of u64s, then a block per CPU (magic, cpu, from header
 * version 1 the number of parameters, then the parameters): the CS_*
 * indices of perf_abi.h.  Version 0 has a fixed parameter count per magic
 * (4 for ETMv3, 6 for ETMv4); ETE needs version >= 1.  From version 2 a
 * TRACEIDR with CS_TRACEIDR_NO_ID set carries no trace ID: it comes from
 * AUX_OUTPUT_HW_ID records instead.
 */
#ifndef PTD_CS_ETM_INFO_H
#define PTD_CS_ETM_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "perf_abi.h"

enum cs_proto {
	CS_PROTO_NONE = 0,
	CS_PROTO_ETMV3,
	CS_PROTO_PTM,       /* ETMv3 magic with ETMIDR[11:8] == 3 */
	CS_PROTO_ETMV4,
	CS_PROTO_ETE,
	CS_PROTO_STM,       /* software trace (snapshots only) */
	CS_PROTO_ITM,
};

/* Configuration of one trace source: what a decoder needs. */
struct cs_source {
	int proto;                  /* enum cs_proto */
	int cpu;                    /* -1 if unknown */
	uint32_t nparams;           /* parameters in the perf block */
	uint8_t trace_id;
	uint8_t trace_id_valid;     /* 0: ID comes from AUX_OUTPUT_HW_ID */
	/* ETMv3 / PTM */
	uint32_t etmcr, etmtraceidr, etmccer, etmidr;
	/* ETMv4 / ETE */
	uint32_t trcconfigr, trctraceidr, trcidr0, trcidr1, trcidr2, trcidr8;
	uint32_t trcidr9, trcidr10, trcidr11, trcidr12, trcidr13;
	uint32_t trcauthstatus, trcdevarch;
	uint64_t ts_source;
	int has_ts_source;
	/* STM */
	uint32_t stmtcsr;
	/* Architecture of the core (values of OpenCSD's ocsd_arch_version_t
	 * and ocsd_core_profile_t); 0 = the protocol's default. */
	int arch, profile;
};

struct cs_etm_info {
	uint64_t version;
	uint32_t pmu_type;
	uint32_t nr_cpu;
	uint64_t snapshot;
	struct cs_source *cpus;     /* nr_cpu entries, in file order */
};

/* Parses priv[0..len) (the u64 array after type and reserved).  Returns 0
 * or a negative enum ptd_error with a message in err. */
int cs_etm_info_parse(const uint8_t *priv, size_t len, struct cs_etm_info *out,
		      char *err, size_t errlen);
void cs_etm_info_free(struct cs_etm_info *info);

/* "ETMv3", "PTM", "ETMv4", "ETE", "STM", "ITM". */
const char *cs_proto_name(int proto);

#endif
