/* SPDX-License-Identifier: MIT */
/*
 * cs_etm_info - the private area of perf's AUXTRACE_INFO record for
 * CoreSight ETM (auxtrace type PERF_AUXTRACE_CS_ETM = 3), as written by
 * Linux perf (tools/perf/arch/arm/util/cs-etm.c, read by util/cs-etm.c)
 * and by simpleperf.
 *
 * Layout (all u64, little endian), after the record's u32 type and u32
 * reserved fields:
 *   [0] header version (0, 1 or 2)
 *   [1] PMU type << 32 | number of CPU blocks
 *   [2] snapshot mode
 * then one block per CPU:
 *   magic (ETMv3/PTM 0x3030..., ETMv4 0x4040..., ETE 0x5050...), cpu,
 *   version >= 1 only: number of parameters N,
 *   then the parameters (version 0: a fixed count, 4 for ETMv3, 6 for
 *   ETMv4; ETE needs version >= 1):
 *     ETMv3/PTM: ETMCR, ETMTRACEIDR, ETMCCER, ETMIDR
 *     ETMv4:     TRCCONFIGR, TRCTRACEIDR, TRCIDR0, TRCIDR1, TRCIDR2,
 *                TRCIDR8, TRCAUTHSTATUS, TS_SOURCE
 *     ETE:       as ETMv4 with TRCDEVARCH before TS_SOURCE
 * Version 2: a TRACEIDR with bit 31 set carries no trace ID; the ID comes
 * from PERF_RECORD_AUX_OUTPUT_HW_ID records instead.
 */
#ifndef PTD_CS_ETM_INFO_H
#define PTD_CS_ETM_INFO_H

#include <stddef.h>
#include <stdint.h>

#define CS_ETM_AUXTRACE_TYPE 3
#define CS_ETMV3_MAGIC 0x3030303030303030ULL
#define CS_ETMV4_MAGIC 0x4040404040404040ULL
#define CS_ETE_MAGIC 0x5050505050505050ULL

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
