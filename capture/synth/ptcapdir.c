/* SPDX-License-Identifier: MIT */
#include "ptcapdir.h"
#include "intel_pt_info.h"
#include "ptdecode.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* The intel_pt PMU's config bits (its sysfs format) that the attr sets. */
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

/* The attr fields both attrs share; flags: the sideband attr's extra. */
static void attr_common(uint8_t attr[128], const struct ptcap_opts *o,
			uint32_t type, uint64_t config, uint64_t flags)
{
	uint64_t st = PD_SAMPLE_IP | PD_SAMPLE_TID | PD_SAMPLE_TIME |
		      PD_SAMPLE_CPU | PD_SAMPLE_IDENTIFIER |
		      (o->sample_period ? PD_SAMPLE_CALLCHAIN : 0);

	memset(attr, 0, 128);
	put32(attr + PD_ATTR_OFF_TYPE, type);
	put32(attr + PD_ATTR_OFF_SIZE, 128);  /* perf 6.1 rejects larger attrs */
	put64(attr + PD_ATTR_OFF_CONFIG, config);
	put64(attr + PD_ATTR_OFF_SAMPLE_PERIOD, 1);
	put64(attr + PD_ATTR_OFF_SAMPLE_TYPE, st);  /* one for all attrs */
	put64(attr + PD_ATTR_OFF_FLAGS, PD_ATTR_FLAG_DISABLED |
	      (o->kernel ? PD_ATTR_FLAG_EXCLUDE_USER : PD_ATTR_FLAG_EXCLUDE_KERNEL) |
	      PD_ATTR_FLAG_EXCLUDE_HV | PD_ATTR_FLAG_ENABLE_ON_EXEC |
	      PD_ATTR_FLAG_SAMPLE_ID_ALL | flags);
}

static int add_attrs(struct perfwrite *pw, const struct ptcap_opts *o)
{
	uint64_t config = CFG_PT | CFG_BRANCH | (o->tsc ? CFG_TSC : 0) |
			  (o->retcomp ? 0 : CFG_NORETCOMP) | (o->cyc ? CFG_CYC : 0) |
			  (o->mtc ? CFG_MTC | (uint64_t)o->mtc_period << CFG_MTC_PERIOD_SHIFT : 0);
	uint8_t attr[128];
	uint64_t id = PTCAP_PT_ID;
	int rc;

	attr_common(attr, o, PTCAP_PMU_TYPE, config, 0);
	rc = perfwrite_add_attr(pw, attr, &id, 1, o->kernel ? "intel_pt//k" : "intel_pt//u");
	if (rc)
		return rc;
	attr_common(attr, o, PD_TYPE_SOFTWARE, PD_COUNT_SW_DUMMY,
		    PD_ATTR_FLAG_MMAP | PD_ATTR_FLAG_COMM | PD_ATTR_FLAG_TASK |
		    PD_ATTR_FLAG_MMAP2 | PD_ATTR_FLAG_COMM_EXEC |
		    PD_ATTR_FLAG_CONTEXT_SWITCH | o->sideband_flags);
	if (o->sample_period)
		put64(attr + PD_ATTR_OFF_FLAGS, util_le64(attr + PD_ATTR_OFF_FLAGS) |
		      PD_ATTR_FLAG_DEFER_OUTPUT);
	id = PTCAP_DUMMY_ID;
	rc = perfwrite_add_attr(pw, attr, &id, 1, o->kernel ? "dummy:k" : "dummy:u");
	if (!rc && o->guest) {
		attr_common(attr, o, PD_TYPE_SOFTWARE, PD_COUNT_SW_DUMMY,
			    PD_ATTR_FLAG_MMAP | PD_ATTR_FLAG_COMM | PD_ATTR_FLAG_TASK |
			    PD_ATTR_FLAG_MMAP2 | PD_ATTR_FLAG_COMM_EXEC |
			    PD_ATTR_FLAG_CONTEXT_SWITCH | PD_ATTR_FLAG_EXCLUDE_HOST);
		uint64_t ids[64];
		size_t n = o->guest > 64 ? 64 : (size_t)o->guest;

		for (size_t c = 0; c < n; c++)
			ids[c] = PTCAP_GUEST_ID + c;
		rc = perfwrite_add_attr(pw, attr, ids, n, "dummy:u");
	}
	if (rc || !o->sample_period)
		return rc;
	attr_common(attr, o, PD_TYPE_HARDWARE, PD_COUNT_HW_INSTRUCTIONS, 0);
	put64(attr + PD_ATTR_OFF_SAMPLE_PERIOD, o->sample_period);
	put64(attr + PD_ATTR_OFF_FLAGS, PD_ATTR_FLAG_DISABLED | PD_ATTR_FLAG_EXCLUDE_HV |
	      PD_ATTR_FLAG_ENABLE_ON_EXEC | PD_ATTR_FLAG_SAMPLE_ID_ALL |
	      PD_ATTR_FLAG_DEFER_CALLCHAIN);
	id = PTCAP_SAMPLE_ID;
	return perfwrite_add_attr(pw, attr, &id, 1, "instructions");
}

static int add_auxtrace_info(struct perfwrite *pw, const struct ptcap_opts *o)
{
	struct intel_pt_info info = {
		.pmu_type = PTCAP_PMU_TYPE,
		.time_shift = o->time_shift,
		.time_mult = o->time_mult,
		.time_zero = o->time_zero,
		.cap_user_time_zero = 1,
		.tsc_bit = CFG_TSC,
		.noretcomp_bit = CFG_NORETCOMP,
		.have_sched_switch = (uint64_t)o->have_sched_switch,
		.per_cpu_mmaps = 1,
		.snapshot_mode = (uint64_t)!!o->snapshot,
		.mtc_bit = CFG_MTC,
		.mtc_freq_bits = 0xfull << CFG_MTC_PERIOD_SHIFT,
		.tsc_ctc_ratio_n = 2,
		.tsc_ctc_ratio_d = 1,
		.cyc_bit = CFG_CYC,
		.max_non_turbo_ratio = 32,
	};
	uint64_t priv[INTELPT_INFO_MAX];
	char tail[512] = "";
	size_t len = o->filter ? strlen(o->filter) : 0;

	if (len >= sizeof(tail))
		return PTD_ERR_INVAL;
	/* as perf writes it: the string, NUL-padded to whole u64s */
	if (len)
		memcpy(tail, o->filter, len);
	info.filter_str_len = len;
	intel_pt_info_pack(&info, priv);
	return perfwrite_auxtrace_info(pw, PD_AUXTRACE_INTEL_PT, priv, INTELPT_INFO_MAX,
				       tail, len ? (len + 8) / 8 * 8 : 0);
}

int ptcap_begin(struct perfwrite *pw, const struct ptcap_opts *o)
{
	int rc;

	if (!o->clock_set)
		return PTD_ERR_INVAL;
	rc = add_attrs(pw, o);
	if (!rc)
		rc = add_auxtrace_info(pw, o);
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
	perfwrite_feat_string(pw, PD_FEAT_HOSTNAME, host);
	perfwrite_feat_string(pw, PD_FEAT_OSRELEASE, osrelease);
	perfwrite_feat_string(pw, PD_FEAT_VERSION, "6.1.ptsynth");
	perfwrite_feat_string(pw, PD_FEAT_ARCH, "x86_64");
	perfwrite_feat_nrcpus(pw, 1, 1);
	perfwrite_feat_string(pw, PD_FEAT_CPUDESC,
			      "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz (ptsynth)");
	perfwrite_feat_string(pw, PD_FEAT_CPUID, PTCAP_CPUID);
	perfwrite_feat_u64(pw, PD_FEAT_TOTAL_MEM, 16ull << 20);
	perfwrite_feat_u64(pw, PD_FEAT_CLOCKID, 1);
	if (!args)
		return PTD_ERR_NOMEM;
	for (int i = 0; i < argc; i++)
		args[i] = argv[i];
	rc = perfwrite_feat_cmdline(pw, argc, args);
	free(args);
	return rc;
}

/* An earlier run's perf.data (file) or its data files (directory). */
static void remove_old(const char *path)
{
	char f[4096];
	struct dirent *de;
	DIR *d;

	if (!unlink(path) || errno == ENOENT || !(d = opendir(path)))
		return;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "data", 4) &&
		    (!de->d_name[4] || de->d_name[4] == '.') &&
		    snprintf(f, sizeof(f), "%s/%s", path, de->d_name) < (int)sizeof(f))
			unlink(f);
	closedir(d);
}

int ptcap_open_threads_layout(struct perfwrite **pw, const char *path,
			      char *err, size_t errlen)
{
	char file[4096];
	int rc;

	remove_old(path);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		util_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return PTD_ERR_IO;
	}
	if (snprintf(file, sizeof(file), "%s/data", path) >= (int)sizeof(file)) {
		util_errf(err, errlen, "%s: path too long", path);
		return PTD_ERR_INVAL;
	}
	rc = perfwrite_open(pw, file, err, errlen);
	if (!rc && (rc = perfwrite_split_by_cpu(*pw, path)) < 0)
		perfwrite_close(*pw, err, errlen);
	return rc;
}
