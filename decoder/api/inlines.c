/* SPDX-License-Identifier: MIT */
/* inlines (stage: api/): the frames of inlined functions around a pc. */
#include "inlines.h"

#include "imgstore.h"
#include "linetab.h"
#include "symbols.h"

#include <stdio.h>
#include <string.h>

void inlines_expand(struct ptd_session *s, const struct ptd_frame *fr,
		   struct ptd_frame *out, size_t max, size_t *n)
{
	struct linetab_inl lv[INLINES_MAX];
	struct imgstore_hit hit;
	struct ptd_line_range lr;
	const char *debug;
	uint64_t bias;
	size_t m = 0, k;

	*n = 1;
	if (max)
		out[0] = *fr;
	if ((fr->flags & (PTD_FRAME_BEFORE_TRACE | PTD_FRAME_SIGNAL)) ||
	    symbols_elf_at(s, fr->pid, fr->pc, &hit, &debug, &bias))
		return;
	if (linetab_inlines(symbols_linetab(s), hit.elf_path, debug,
			    fr->pc - bias, lv, INLINES_MAX, &m) || !m) {
		/* no DWARF: of aliases, the symbol gdb names */
		uint64_t at;

		if (max && linetab_minsym(symbols_linetab(s), hit.elf_path, debug,
					  fr->pc - bias, out[0].function,
					  sizeof(out[0].function), &at) == 0) {
			out[0].function_off = fr->pc - bias - at;
			out[0].flags |= PTD_FRAME_HAS_SYMBOL;
		}
		return;
	}
	if (m > INLINES_MAX)
		m = INLINES_MAX;
	*n = m;
	/* the innermost level at the line table's entry, as a debugger
	 * shows a pc */
	if (ptd_line_range(s, fr->pid, fr->pc, &lr) || !lr.line)
		lr.line = 0;
	for (k = 0; k < m && k < max; k++) {
		struct ptd_frame *o = &out[k];

		*o = *fr;
		if (lv[k].name) {
			snprintf(o->function, sizeof(o->function), "%s", lv[k].name);
			o->flags |= PTD_FRAME_HAS_SYMBOL;
		}
		if (k == 0 && lr.line) {
			snprintf(o->file, sizeof(o->file), "%s", lr.file);
			o->line = lr.line;
			o->flags |= PTD_FRAME_HAS_LINE;
		} else if (k > 0) {
			snprintf(o->file, sizeof(o->file), "%s",
				 lv[k - 1].call_file ? lv[k - 1].call_file : "");
			o->line = lv[k - 1].call_line;
			o->flags &= ~(uint32_t)PTD_FRAME_HAS_LINE;
			if (o->line && o->file[0])
				o->flags |= PTD_FRAME_HAS_LINE;
			o->flags |= PTD_FRAME_CALLS_INLINED;
		}
		if (k + 1 < m) {
			/* the call that entered the physical frame is the
			 * outermost level's */
			o->flags |= PTD_FRAME_INLINED;
			o->flags &= ~(uint32_t)PTD_FRAME_HAS_CALL;
			o->call_site = o->return_addr = o->call_pos = 0;
			if (lv[k].at_entry)
				o->flags |= PTD_FRAME_INLINE_ENTRY;
		}
	}
}
