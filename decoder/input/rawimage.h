/* SPDX-License-Identifier: MIT */
/*
 * rawimage - loads the images of a raw trace (ptxed-style --raw, --elf and
 * page caches) into the image store, valid for the whole trace (input
 * stage; the raw loader and --vmlinux use it).
 */
#ifndef PTD_RAWIMAGE_H
#define PTD_RAWIMAGE_H

#include <stddef.h>
#include "ptdecode.h"

struct imgstore;

/* Returns 0 or a negative enum ptd_error with a message in err. */
int rawimage_add(struct imgstore *st, const struct ptd_raw_image *ri,
		 char *err, size_t errlen);

#endif
