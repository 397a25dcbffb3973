/* SPDX-License-Identifier: MIT */
#include "ptcapdir.h"
#include "ptdecode.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CFG_PT (1ull << 0)
#define CFG_CYC (1ull << 1)
#define CFG_MTC (1ull << 9)
#define CFG_MTC_PERIOD_SHIFT 14
#define CFG_TSC (1ull << 10)
#define CFG_NORETCOMP (1ull << 11)
#define CFG_BRANCH (1ull << 13)

uint64_t ptcap_perf_time(uint64_t tsc)
{
	return PTCAP_TIME_ZERO + ((tsc * PTCAP_TIME_MULT) >> PTCAP_TIME_SHIFT);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

int ptcap_begin(struct perfwrite *pw, const struct ptcap_opts *o)
{
	uint64_t st = PW_SAMPLE_IP | PW_SAMPLE_TID | PW_SAMPLE_TIME |
		      PW_SAMPLE_CPU | PW_SAMPLE_IDENTIFIER;
	/* flags: disabled(0) exclude_user(4)/exclude_kernel(5) exclude_hv(6)
	 * enable_on_exec(12) sample_id_all(18) */
	uint64_t excl = o->kernel ? 1ull << 4 : 1ull << 5;
	uint64_t priv[17] = { 0 };
	uint8_t attr[128];
	uint64_t id;
	int rc;

	if (!o->clock_set)
		return PTD_ERR_INVAL;
	memset(attr, 0, sizeof(attr));
	put32(attr, PTCAP_PMU_TYPE);
	put32(attr + 4, 128);  /* perf 6.1 rejects larger attrs */
	put64(attr + 8, CFG_PT | CFG_BRANCH | (o->tsc ? CFG_TSC : 0) |
			(o->retcomp ? 0 : CFG_NORETCOMP) | (o->cyc ? CFG_CYC : 0) |
			(o->mtc ? CFG_MTC | (uint64_t)o->mtc_period << CFG_MTC_PERIOD_SHIFT : 0));
	put64(attr + 16, 1);   /* sample_period */
	put64(attr + 24, st);
	put64(attr + 40, 1ull << 0 | excl | 1ull << 6 | 1ull << 12 | 1ull << 18);
	id = PTCAP_PT_ID;
	rc = perfwrite_add_attr(pw, attr, &id, 1, o->kernel ? "intel_pt//k" : "intel_pt//u");
	if (rc)
		return rc;
	memset(attr, 0, sizeof(attr));
	put32(attr, 1);        /* PERF_TYPE_SOFTWARE */
	put32(attr + 4, 128);
	put64(attr + 8, 9);    /* PERF_COUNT_SW_DUMMY */
	put64(attr + 16, 1);
	put64(attr + 24, st);  /* perf wants one sample_type for all attrs */
	/* + mmap(8) comm(9) task(13) mmap2(23) comm_exec(24)
	 * context_switch(26) */
	put64(attr + 40, 1ull << 0 | excl | 1ull << 6 | 1ull << 8 | 1ull << 9 |
			 1ull << 12 | 1ull << 13 | 1ull << 18 | 1ull << 23 |
			 1ull << 24 | 1ull << 26 | o->sideband_flags);
	id = PTCAP_DUMMY_ID;
	rc = perfwrite_add_attr(pw, attr, &id, 1, o->kernel ? "dummy:k" : "dummy:u");
	if (rc)
		return rc;
	/* AUXTRACE_INFO, the layout of tools/perf/util/intel-pt.h */
	priv[0] = PTCAP_PMU_TYPE;
	priv[1] = o->time_shift;
	priv[2] = o->time_mult;
	priv[3] = o->time_zero;
	priv[4] = 1;                   /* cap_user_time_zero */
	priv[5] = CFG_TSC;             /* tsc_bit */
	priv[6] = CFG_NORETCOMP;       /* noretcomp_bit */
	priv[7] = (uint64_t)o->have_sched_switch; /* 3: context_switch */
	priv[8] = 0;                   /* snapshot_mode */
	priv[9] = 1;                   /* per_cpu_mmaps */
	priv[10] = 1ull << 9;          /* mtc_bit */
	priv[11] = 0xfull << 14;       /* mtc_freq_bits */
	priv[12] = 2;                  /* tsc_ctc_ratio_n */
	priv[13] = 1;                  /* tsc_ctc_ratio_d */
	priv[14] = 1ull << 1;          /* cyc_bit */
	priv[15] = 32;                 /* max_non_turbo_ratio */
	priv[16] = 0;                  /* filter_str_len */
	rc = perfwrite_auxtrace_info(pw, 1, priv, 17, NULL, 0);
	if (rc)
		return rc;
	return perfwrite_time_conv(pw, o->time_shift, o->time_mult, o->time_zero,
				   0, 0, 1, 0);
}

int ptcap_piece(struct perfwrite *pw, const void *data, size_t len,
		uint64_t tsc_first, uint64_t tsc_last, uint32_t pid,
		uint64_t *aux_offset)
{
	struct perfwrite_sid sid = { .pid = pid, .tid = pid, .id = PTCAP_PT_ID };
	size_t padded = (len + 7) & ~(size_t)7;
	int rc;

	rc = perfwrite_auxtrace(pw, data, len, *aux_offset, tsc_first, 0,
				(uint32_t)-1, 0);
	if (rc)
		return rc;
	sid.time = ptcap_perf_time(tsc_last);
	rc = perfwrite_aux(pw, &sid, *aux_offset, padded, 0);
	*aux_offset += padded;
	return rc;
}

int ptcap_features(struct perfwrite *pw, const char *osrelease, int argc,
		   char **argv)
{
	char host[256] = "ptsynth";
	const char **args = calloc((size_t)argc + 1, sizeof(char *));
	int rc = 0;

	gethostname(host, sizeof(host) - 1);
	perfwrite_feat_string(pw, PW_FEAT_HOSTNAME, host);
	perfwrite_feat_string(pw, PW_FEAT_OSRELEASE, osrelease);
	perfwrite_feat_string(pw, PW_FEAT_VERSION, "6.1.ptsynth");
	perfwrite_feat_string(pw, PW_FEAT_ARCH, "x86_64");
	perfwrite_feat_nrcpus(pw, 1, 1);
	perfwrite_feat_string(pw, PW_FEAT_CPUDESC,
			      "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz (ptsynth)");
	perfwrite_feat_string(pw, PW_FEAT_CPUID, PTCAP_CPUID);
	perfwrite_feat_u64(pw, PW_FEAT_TOTAL_MEM, 16ull << 20);
	perfwrite_feat_u64(pw, PW_FEAT_CLOCKID, 1);
	if (!args)
		return PTD_ERR_NOMEM;
	for (int i = 0; i < argc; i++)
		args[i] = argv[i];
	rc = perfwrite_feat_cmdline(pw, argc, args);
	free(args);
	return rc;
}
