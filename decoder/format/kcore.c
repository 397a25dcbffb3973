/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "kcore.h"
#include "ptdecode.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* e_phnum is 16 bits; PN_XNUM (an extended count) is no kcore's. */
#define KCORE_MAX_PHDRS (PN_XNUM - 1)

struct kcore {
	int fd;
	char *path;
	struct kcore_seg *segs;
	size_t nsegs;
};

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? PTD_ERR_IO : PTD_ERR_TRUNCATED;
		done += (size_t)n;
	}
	return 0;
}

static int check_ehdr(const Elf64_Ehdr *eh, const char *path, char *err,
		      size_t errlen)
{
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		util_errf(err, errlen, "%s is not an ELF file (a kcore copy is "
			  "an ELF core file)", path);
		return PTD_ERR_FORMAT;
	}
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		util_errf(err, errlen, "%s: not a 64-bit little-endian ELF file; "
			  "only x86-64 and arm64 kcore files are read", path);
		return PTD_ERR_UNSUPPORTED;
	}
	if (eh->e_type != ET_CORE) {
		util_errf(err, errlen, "%s: ELF type %u is not a core file "
			  "(ET_CORE), so not a kcore copy", path, eh->e_type);
		return PTD_ERR_FORMAT;
	}
	if (eh->e_phnum == PN_XNUM ||
	    (eh->e_phnum && eh->e_phentsize != sizeof(Elf64_Phdr))) {
		util_errf(err, errlen, "%s: bad program header table (%u "
			  "entries of %u bytes)", path, eh->e_phnum,
			  eh->e_phentsize);
		return PTD_ERR_CORRUPT;
	}
	return 0;
}

/* The PT_LOAD segments with bytes in the file; size is that of the file
 * when regular (0 for /proc/kcore, whose size says nothing). */
static int read_phdrs(struct kcore *k, const Elf64_Ehdr *eh, uint64_t size,
		      char *err, size_t errlen)
{
	size_t n = eh->e_phnum;
	Elf64_Phdr *ph = calloc(n ? n : 1, sizeof(*ph));
	int rc;

	k->segs = calloc(n ? n : 1, sizeof(*k->segs));
	if (!ph || !k->segs) {
		free(ph);
		return PTD_ERR_NOMEM;
	}
	rc = read_at(k->fd, ph, n * sizeof(*ph), eh->e_phoff);
	if (rc) {
		util_errf(err, errlen, "%s: cannot read its %zu program headers "
			  "at offset %#" PRIx64 ": %s", k->path, n,
			  (uint64_t)eh->e_phoff, rc == PTD_ERR_TRUNCATED ?
			  "the file ends before them" : strerror(errno));
		free(ph);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD || !ph[i].p_filesz)
			continue;
		if (ph[i].p_offset + ph[i].p_filesz < ph[i].p_offset ||
		    ph[i].p_vaddr + ph[i].p_filesz - 1 < ph[i].p_vaddr ||
		    (size && ph[i].p_offset + ph[i].p_filesz > size)) {
			util_errf(err, errlen, "%s: segment %zu ([%#" PRIx64 ", +%#"
				  PRIx64 ") at file offset %#" PRIx64 ") runs past "
				  "the end of the file (%" PRIu64 " bytes): the "
				  "copy is truncated", k->path, i,
				  (uint64_t)ph[i].p_vaddr, (uint64_t)ph[i].p_filesz,
				  (uint64_t)ph[i].p_offset, size);
			free(ph);
			return PTD_ERR_TRUNCATED;
		}
		k->segs[k->nsegs].vaddr = ph[i].p_vaddr;
		k->segs[k->nsegs].offset = ph[i].p_offset;
		k->segs[k->nsegs++].size = ph[i].p_filesz;
	}
	free(ph);
	return 0;
}

int kcore_open(const char *path, struct kcore **out, char *err, size_t errlen)
{
	struct kcore *k = calloc(1, sizeof(*k));
	Elf64_Ehdr eh;
	struct stat st;
	int rc;

	*out = NULL;
	if (!k || !(k->path = strdup(path))) {
		free(k);
		return PTD_ERR_NOMEM;
	}
	k->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (k->fd < 0 || fstat(k->fd, &st)) {
		util_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		kcore_close(k);
		return PTD_ERR_IO;
	}
	memset(&eh, 0, sizeof(eh));
	rc = read_at(k->fd, &eh, sizeof(eh), 0);
	if (rc == PTD_ERR_TRUNCATED && memcmp(eh.e_ident, ELFMAG, SELFMAG))
		rc = 0;   /* check_ehdr names it: no ELF file at all */
	if (rc) {
		util_errf(err, errlen, "%s: %s", path, rc == PTD_ERR_TRUNCATED ?
			  "shorter than an ELF64 header: not a kcore copy" :
			  strerror(errno));
		kcore_close(k);
		return rc == PTD_ERR_TRUNCATED ? PTD_ERR_FORMAT : rc;
	}
	rc = check_ehdr(&eh, path, err, errlen);
	if (!rc)
		rc = read_phdrs(k, &eh, S_ISREG(st.st_mode) && st.st_size ?
				(uint64_t)st.st_size : 0, err, errlen);
	if (rc) {
		kcore_close(k);
		return rc;
	}
	*out = k;
	return 0;
}

void kcore_close(struct kcore *k)
{
	if (!k)
		return;
	if (k->fd >= 0)
		close(k->fd);
	free(k->segs);
	free(k->path);
	free(k);
}

size_t kcore_nsegs(const struct kcore *k)
{
	return k->nsegs;
}

const struct kcore_seg *kcore_get_seg(const struct kcore *k, size_t i)
{
	return i < k->nsegs ? &k->segs[i] : NULL;
}

const char *kcore_path(const struct kcore *k)
{
	return k->path;
}

const struct kcore_seg *kcore_find(const struct kcore *k, uint64_t addr)
{
	for (size_t i = 0; i < k->nsegs; i++)
		if (addr >= k->segs[i].vaddr && addr - k->segs[i].vaddr < k->segs[i].size)
			return &k->segs[i];
	return NULL;
}

int kcore_read(struct kcore *k, uint64_t addr, void *buf, size_t len,
	       char *err, size_t errlen)
{
	const struct kcore_seg *s = NULL;
	int rc;

	if (!len)
		return 0;
	/* segments may overlap: any one holding the whole range */
	for (size_t i = 0; i < k->nsegs && !s; i++)
		if (addr >= k->segs[i].vaddr && addr - k->segs[i].vaddr < k->segs[i].size &&
		    len - 1 <= k->segs[i].size - 1 - (addr - k->segs[i].vaddr))
			s = &k->segs[i];
	if (!s) {
		util_errf(err, errlen, "%s holds no bytes for [%#" PRIx64 ", %#"
			  PRIx64 ")", k->path, addr, addr + len);
		return PTD_ERR_NO_IMAGE;
	}
	rc = read_at(k->fd, buf, len, s->offset + (addr - s->vaddr));
	if (rc) {
		util_errf(err, errlen, "%s: cannot read [%#" PRIx64 ", %#" PRIx64
			  "): %s", k->path, addr, addr + len,
			  rc == PTD_ERR_TRUNCATED ? "the file ends early" :
			  strerror(errno));
		return PTD_ERR_IO;
	}
	return 0;
}

/* ---------------------------------------------------------------- */
/* writing                                                          */

static int write_all(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return PTD_ERR_IO;
		done += (size_t)n;
	}
	return 0;
}

#define KCORE_ALIGN 4096ull

int kcore_write(const char *path, const struct kcore_range *r, size_t n,
		char *err, size_t errlen)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr *ph;
	uint64_t off;
	int fd, rc = 0;

	if (n > KCORE_MAX_PHDRS) {
		util_errf(err, errlen, "%s: too many ranges (%zu)", path, n);
		return PTD_ERR_INVAL;
	}
	ph = calloc(n ? n : 1, sizeof(*ph));
	if (!ph)
		return PTD_ERR_NOMEM;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)n;
	off = (sizeof(eh) + n * sizeof(*ph) + KCORE_ALIGN - 1) & ~(KCORE_ALIGN - 1);
	for (size_t i = 0; i < n; i++) {
		ph[i].p_type = PT_LOAD;
		ph[i].p_flags = PF_R | PF_W | PF_X;
		ph[i].p_offset = off;
		ph[i].p_vaddr = r[i].vaddr;
		ph[i].p_paddr = 0;
		ph[i].p_filesz = ph[i].p_memsz = r[i].size;
		ph[i].p_align = KCORE_ALIGN;
		off = (off + r[i].size + KCORE_ALIGN - 1) & ~(KCORE_ALIGN - 1);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		util_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		free(ph);
		return PTD_ERR_IO;
	}
	if (write_all(fd, &eh, sizeof(eh)) || write_all(fd, ph, n * sizeof(*ph)))
		rc = PTD_ERR_IO;
	for (size_t i = 0; !rc && i < n; i++)
		if (pwrite(fd, r[i].bytes, r[i].size, (off_t)ph[i].p_offset) !=
		    (ssize_t)r[i].size)
			rc = PTD_ERR_IO;
	if (close(fd) || rc) {
		util_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = PTD_ERR_IO;
	}
	free(ph);
	return rc;
}
