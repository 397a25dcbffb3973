/* SPDX-License-Identifier: MIT */
/*
 * pmuformat (stage: capture/ptcapture/) - turns named event terms ("cyc,mtc_period=3,noretcomp") into
 * perf_event_attr config words, using the PMU's sysfs description:
 * DIR/type (the attr.type number) and DIR/format/<term> files such as
 * "config:14-17" or "config:0-3,44" (the value's low bits fill the listed
 * bit ranges in order).  DIR is /sys/bus/event_source/devices/<pmu>.
 */
#ifndef PTCAP_PMUFORMAT_H
#define PTCAP_PMUFORMAT_H

#include <stddef.h>
#include <stdint.h>

/* config, config1, config2 */
struct pmuformat_config {
	uint64_t config[3];
};

/* Reads DIR/type.  Returns 0 or -errno with a message. */
int pmuformat_type(const char *dir, uint32_t *type, char *err, size_t errlen);

/* Where a term's value goes: word (0..2) and the mask of its bits in it.
 * Returns 0, -ENOENT (no such term) or -EINVAL (unreadable format). */
int pmuformat_term(const char *dir, const char *term, int *word, uint64_t *mask,
		   char *err, size_t errlen);

/* Applies comma-separated terms to cfg ("name" = 1, "name=value" with a
 * decimal or 0x value; "name=0" clears).  Unknown terms and values wider
 * than the field are errors naming the term and the known ones. */
int pmuformat_parse(const char *dir, const char *terms, struct pmuformat_config *cfg,
		    char *err, size_t errlen);

#endif
