/* SPDX-License-Identifier: MIT */
/* intel_pt_info - intel_pt's AUXTRACE_INFO array.  See intel_pt_info.h. */
#include "intel_pt_info.h"
#include "util.h"

#include <string.h>

#define FIELD(i, f) [i] = offsetof(struct intel_pt_info, f)

/* Where each array index lives in the struct. */
static const size_t field_at[INTELPT_INFO_MAX] = {
	FIELD(INTELPT_INFO_PMU_TYPE, pmu_type),
	FIELD(INTELPT_INFO_TIME_SHIFT, time_shift),
	FIELD(INTELPT_INFO_TIME_MULT, time_mult),
	FIELD(INTELPT_INFO_TIME_ZERO, time_zero),
	FIELD(INTELPT_INFO_CAP_USER_TIME_ZERO, cap_user_time_zero),
	FIELD(INTELPT_INFO_TSC_BIT, tsc_bit),
	FIELD(INTELPT_INFO_NORETCOMP_BIT, noretcomp_bit),
	FIELD(INTELPT_INFO_HAVE_SCHED_SWITCH, have_sched_switch),
	FIELD(INTELPT_INFO_SNAPSHOT_MODE, snapshot_mode),
	FIELD(INTELPT_INFO_PER_CPU_MMAPS, per_cpu_mmaps),
	FIELD(INTELPT_INFO_MTC_BIT, mtc_bit),
	FIELD(INTELPT_INFO_MTC_FREQ_BITS, mtc_freq_bits),
	FIELD(INTELPT_INFO_TSC_CTC_N, tsc_ctc_ratio_n),
	FIELD(INTELPT_INFO_TSC_CTC_D, tsc_ctc_ratio_d),
	FIELD(INTELPT_INFO_CYC_BIT, cyc_bit),
	FIELD(INTELPT_INFO_MAX_NONTURBO_RATIO, max_non_turbo_ratio),
	FIELD(INTELPT_INFO_FILTER_STR_LEN, filter_str_len),
};

void intel_pt_info_pack(const struct intel_pt_info *info,
			uint64_t priv[INTELPT_INFO_MAX])
{
	for (size_t i = 0; i < INTELPT_INFO_MAX; i++)
		memcpy(&priv[i], (const char *)info + field_at[i], 8);
}

size_t intel_pt_info_unpack(const void *priv, size_t npriv,
			    struct intel_pt_info *info)
{
	size_t n = npriv < INTELPT_INFO_MAX ? npriv : INTELPT_INFO_MAX;

	memset(info, 0, sizeof(*info));
	for (size_t i = 0; i < n; i++) {
		uint64_t v = util_le64((const uint8_t *)priv + 8 * i);

		memcpy((char *)info + field_at[i], &v, 8);
	}
	return n;
}
