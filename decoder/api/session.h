/* SPDX-License-Identifier: MIT */
/* session - internal helpers of the public session object (ptdecode.h). */
#ifndef PTD_SESSION_H
#define PTD_SESSION_H

#include "ptdecode.h"

struct imgstore;

/* Records a warning (shown by ptd_warning()). */
int session_warn(struct ptd_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct imgstore *session_imgstore(struct ptd_session *s);

#endif
