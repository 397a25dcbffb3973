/* SPDX-License-Identifier: MIT */
#include "id_index.h"
#include "ptdecode.h"
#include "util.h"

#define ENTRY1 32u   /* id, idx, cpu, tid */
#define ENTRY2 16u   /* machine_pid, vcpu */

int id_index_count(const struct perfdata_record *rec, size_t *nr,
		   int *has_machine)
{
	size_t body = rec->size >= 16 ? rec->size - 16u : 0;
	uint64_t n;

	*nr = 0;
	*has_machine = 0;
	if (rec->size < 16)
		return PTD_ERR_CORRUPT;
	n = util_le64(rec->raw + 8);
	if (n > body / ENTRY1)
		return PTD_ERR_CORRUPT;
	*nr = (size_t)n;
	*has_machine = n && body >= n * (ENTRY1 + ENTRY2);
	return 0;
}

void id_index_get(const struct perfdata_record *rec, size_t i,
		  struct id_index_entry *e)
{
	const uint8_t *p = rec->raw + 16 + i * ENTRY1;
	size_t nr = (size_t)util_le64(rec->raw + 8);

	e->id = util_le64(p);
	e->idx = util_le64(p + 8);
	e->cpu = (int64_t)util_le64(p + 16);
	e->tid = (int64_t)util_le64(p + 24);
	e->machine_pid = 0;
	e->vcpu = 0;
	if (rec->size - 16u >= nr * (ENTRY1 + ENTRY2)) {
		p = rec->raw + 16 + nr * ENTRY1 + i * ENTRY2;
		e->machine_pid = (int64_t)util_le64(p);
		e->vcpu = util_le64(p + 8);
	}
}
