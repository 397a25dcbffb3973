/* SPDX-License-Identifier: MIT */
/*
 * raw - the raw trace loader (input stage): a file of Intel PT bytes as
 * one queue, with the code it ran through from the images the options
 * give (--raw, --elf, --pages; see rawimage).  There is no sideband.
 */
#ifndef PTD_RAW_H
#define PTD_RAW_H

#include <stddef.h>

struct input;

/* Loads the raw trace path (PTD_INPUT_RAW_PT) and the options' images.
 * Returns 0 or a negative PTD_ERR_* with a message in err. */
int raw_load(struct input *in, const char *path, char *err, size_t errlen);

#endif
