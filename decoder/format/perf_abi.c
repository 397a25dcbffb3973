/* SPDX-License-Identifier: MIT */
/* perf_abi - perf's naming conventions.  See perf_abi.h. */
#include "perf_abi.h"

#include <string.h>

int perf_abi_is_jitdump_name(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	return !strncmp(b, "jit-", 4) && n > 9 && !strcmp(b + n - 5, ".dump");
}
