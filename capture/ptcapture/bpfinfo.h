/* SPDX-License-Identifier: MIT */
/*
 * bpfinfo (stage: capture/ptcapture/) - copies a loaded BPF program's JIT images, symbols and source
 * line tables out of the kernel by program id (BPF_PROG_GET_FD_BY_ID +
 * bpf_obj_get_info_by_fd), and writes DIR/<prog_id>.btf and
 * DIR/<prog_id>.tsv for the decoder.
 *
 * DIR/<prog_id>.btf: the program's raw BTF blob (types and strings), as
 * btf__raw_data() returns it; absent when the program has no BTF.
 *
 * DIR/<prog_id>.tsv: text, tab-separated, first line
 * "# ptcapture-bpf 1"; then rows whose first column says what they are:
 *   prog   <prog_id> <tag> <name> <btf_id> <nr_images> <prog_type>
 *   image  <index> <0xaddr> <len>          (index 0 = main program)
 *   func   <index> <insn_off> <type_id> <0xaddr> <name>
 *                                          (func_info[index]; addr = image)
 *   line   <0xaddr> <insn_off> <line> <col> <file> <source line>
 *                                          (line_info + jited_line_info;
 *                                           tabs in text become spaces)
 */
#ifndef PTCAP_BPFINFO_H
#define PTCAP_BPFINFO_H

#include <stddef.h>
#include <stdint.h>

struct bpfinfo_image {
	uint64_t addr;
	uint32_t len;
	const uint8_t *bytes;   /* points into bpfinfo_prog.jited */
};

struct bpfinfo_prog {
	uint32_t id;
	uint8_t tag[8];
	char name[17];
	uint32_t nimg;
	struct bpfinfo_image *img;
	uint8_t *jited;
	int prog_array;         /* uses a BPF_MAP_TYPE_PROG_ARRAY: its tail
				 * call sites are re-patched in place when the
				 * array changes (only with want_maps) */
};

/* Returns 0, -ENOENT when the program is already gone, or another -errno
 * with a message in err.  dir may be NULL (no files written). */
int bpfinfo_copy(const char *dir, uint32_t id, struct bpfinfo_prog *out,
		 char *err, size_t errlen);
/* The same, also looking up the types of the program's maps (sets
 * out->prog_array) when want_maps != 0. */
int bpfinfo_copy2(const char *dir, uint32_t id, int want_maps,
		  struct bpfinfo_prog *out, char *err, size_t errlen);
void bpfinfo_free(struct bpfinfo_prog *p);

#endif
