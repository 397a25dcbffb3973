/* SPDX-License-Identifier: MIT */
/* errors - the library's version and error texts, shared by every stage and
 * by the capture tools that link only the format library. */
#include "ptdecode.h"

const char *ptd_version(void)
{
	return "0.1.0";
}

const char *ptd_strerror(int err)
{
	switch (err) {
	case PTD_OK: return "success";
	case PTD_ERR_NOMEM: return "out of memory";
	case PTD_ERR_INVAL: return "invalid argument";
	case PTD_ERR_IO: return "input/output error";
	case PTD_ERR_FORMAT: return "unrecognised input format";
	case PTD_ERR_TRUNCATED: return "input is truncated";
	case PTD_ERR_CORRUPT: return "input is corrupt";
	case PTD_ERR_UNSUPPORTED: return "unsupported input";
	case PTD_ERR_NO_TRACE: return "no trace data";
	case PTD_ERR_NO_AUXINFO: return "AUX trace data without AUXTRACE_INFO";
	case PTD_ERR_NO_IMAGE: return "code image missing";
	case PTD_ERR_DECODE: return "trace decode error";
	case PTD_ERR_END: return "end of trace";
	case PTD_ERR_LIMIT: return "resource limit reached";
	default: return "unknown error";
	}
}
