/* SPDX-License-Identifier: MIT */
/* intel_pt_info - intel_pt's AUXTRACE_INFO array.  See intel_pt_info.h. */
#include "intel_pt_info.h"
#include "ptdecode.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* "ADDR[/SIZE][@FILE]" into f. */
static int filter_source(char *tok, struct intel_pt_filter *f)
{
	char *at = strchr(tok, '@'), *end;

	if (at) {
		*at = 0;
		if (!at[1] || strlen(at + 1) >= sizeof(f->file))
			return -1;
		snprintf(f->file, sizeof(f->file), "%s", at + 1);
	}
	errno = 0;
	f->addr = strtoull(tok, &end, 0);
	f->size = 1;
	if (*end == '/')
		f->size = strtoull(end + 1, &end, 0);
	return errno || end == tok || *end || !f->size ? -1 : 0;
}

int intel_pt_info_filters(const void *priv, size_t npriv,
			  struct intel_pt_filter *f, char *err, size_t errlen)
{
	struct intel_pt_info info;
	const char *str;
	char *s, *p, *tok;
	int n = 0, rc = 0, shown;

	intel_pt_info_unpack(priv, npriv, &info);
	if (!info.filter_str_len)
		return 0;
	if (npriv <= INTELPT_INFO_MAX ||
	    info.filter_str_len >= (npriv - INTELPT_INFO_MAX) * 8) {
		util_errf(err, errlen, "intel_pt AUXTRACE_INFO: a filter string "
			  "of %llu bytes does not fit the record's %zu",
			  (unsigned long long)info.filter_str_len,
			  npriv > INTELPT_INFO_MAX ? (npriv - INTELPT_INFO_MAX) * 8 : 0);
		return PTD_ERR_CORRUPT;
	}
	str = (const char *)priv + INTELPT_INFO_MAX * 8;
	shown = (int)(info.filter_str_len < 200 ? info.filter_str_len : 200);
	s = strndup(str, info.filter_str_len);
	if (!s)
		return PTD_ERR_NOMEM;
	/* the kernel's syntax: an action, then its source; again */
	for (p = s; rc == 0 && (tok = strsep(&p, " ,\n")) != NULL;) {
		uint8_t cfg;

		if (!*tok)
			continue;
		cfg = !strcmp(tok, "filter") ? 1 : !strcmp(tok, "stop") ||
		      !strcmp(tok, "tracestop") ? 2 : 0;
		if (!strcmp(tok, "start")) {
			util_errf(err, errlen, "intel_pt filter string \"%.*s\": Intel "
				  "PT has no start filter", shown, str);
			rc = PTD_ERR_UNSUPPORTED;
		} else if (!cfg || n == INTELPT_MAX_FILTERS) {
			rc = PTD_ERR_CORRUPT;
		} else {
			memset(&f[n], 0, sizeof(f[n]));
			f[n].cfg = cfg;
			while ((tok = strsep(&p, " ,\n")) != NULL && !*tok)
				;
			if (!tok || filter_source(tok, &f[n]))
				rc = PTD_ERR_CORRUPT;
			n++;
		}
	}
	if (rc == PTD_ERR_CORRUPT)
		util_errf(err, errlen, "intel_pt AUXTRACE_INFO: filter string "
			  "\"%.*s\" is not \"filter|stop ADDR[/SIZE][@FILE],...\" "
			  "with at most %d filters", shown, str, INTELPT_MAX_FILTERS);
	free(s);
	return rc ? rc : n;
}
