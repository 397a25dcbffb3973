/* SPDX-License-Identifier: MIT */
#include "rawimage.h"
#include "imgstore.h"
#include "util.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int add_bytes_file(struct imgstore *st, const struct ptd_raw_image *ri,
			  char *err, size_t errlen)
{
	struct stat sb;

	if (stat(ri->path, &sb) || !S_ISREG(sb.st_mode)) {
		util_errf(err, errlen, "raw image %s: not a readable file", ri->path);
		return PTD_ERR_IO;
	}
	if (!sb.st_size) {
		util_errf(err, errlen, "raw image %s is empty", ri->path);
		return PTD_ERR_INVAL;
	}
	return imgstore_add_file(st, IMGSTORE_KERNEL, ri->addr, (uint64_t)sb.st_size,
				 ri->path, 0, 0, IMGSTORE_FOREVER, ri->path) < 0 ?
	       PTD_ERR_INVAL : 0;
}

/* PT_LOAD executable segments at their vaddr; with an address given, the
 * first PT_LOAD segment is moved there (like ptxed's --elf FILE:BASE). */
static int add_elf(struct imgstore *st, const struct ptd_raw_image *ri,
		   char *err, size_t errlen)
{
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int fd, rc = 0, first = 1, added = 0;
	uint64_t bias = 0;

	elf_version(EV_CURRENT);
	fd = open(ri->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		util_errf(err, errlen, "cannot open ELF image %s", ri->path);
		return PTD_ERR_IO;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &nph)) {
		util_errf(err, errlen, "%s is not an ELF file: %s", ri->path,
			  elf_errmsg(-1));
		rc = PTD_ERR_FORMAT;
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (first && ri->has_addr)
			bias = ri->addr - ph.p_vaddr;
		first = 0;
		if (!(ph.p_flags & PF_X) || !ph.p_filesz)
			continue;
		if (imgstore_add_file(st, IMGSTORE_KERNEL, ph.p_vaddr + bias,
				      ph.p_filesz, ri->path, ph.p_offset, 0,
				      IMGSTORE_FOREVER, ri->path) < 0) {
			rc = PTD_ERR_INVAL;
			goto out;
		}
		added++;
	}
	if (!added) {
		util_errf(err, errlen, "ELF image %s has no executable PT_LOAD "
			  "segment", ri->path);
		rc = PTD_ERR_FORMAT;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* A page cache: u64 page addresses in path, 4 KiB pages in path2. */
static int add_pages(struct imgstore *st, const struct ptd_raw_image *ri,
		     char *err, size_t errlen)
{
	struct util_map addrs, dump;
	size_t n;
	int rc;

	if (!ri->path2) {
		util_errf(err, errlen, "page cache %s: no dump file given "
			  "(use --pages ADDRFILE:DUMPFILE)", ri->path);
		return PTD_ERR_INVAL;
	}
	rc = util_map_file(ri->path, &addrs, err, errlen);
	if (rc)
		return rc;
	rc = util_map_file(ri->path2, &dump, err, errlen);
	if (rc) {
		util_unmap(&addrs);
		return rc;
	}
	n = addrs.size / 8;
	if (addrs.size % 8 || dump.size != n * 4096) {
		util_errf(err, errlen, "page cache %s: %zu addresses but %s holds "
			  "%zu bytes (%zu pages of 4096 expected)", ri->path,
			  addrs.size / 8, ri->path2, dump.size, n);
		rc = PTD_ERR_CORRUPT;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		uint64_t a = util_le64(addrs.data + i * 8);

		if (imgstore_add_file(st, IMGSTORE_KERNEL, a, 4096, ri->path2,
				      i * 4096, 0, IMGSTORE_FOREVER, ri->path2) < 0)
			rc = PTD_ERR_INVAL;
	}
	util_unmap(&addrs);
	util_unmap(&dump);
	return rc;
}

int rawimage_add(struct imgstore *st, const struct ptd_raw_image *ri,
		 char *err, size_t errlen)
{
	switch (ri->kind) {
	case PTD_RAW_BYTES: return add_bytes_file(st, ri, err, errlen);
	case PTD_RAW_ELF: return add_elf(st, ri, err, errlen);
	case PTD_RAW_PAGES: return add_pages(st, ri, err, errlen);
	default:
		util_errf(err, errlen, "unknown raw image kind %d", (int)ri->kind);
		return PTD_ERR_INVAL;
	}
}
