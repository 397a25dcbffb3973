/* SPDX-License-Identifier: MIT */
#include "trigger.h"
#include "trigger.skel.h"
#include "symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <bpf/libbpf.h>

struct trigger {
	struct trigger_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *fds, nfds;
	trigger_fn fn;
	void *ctx;
	uint64_t fires;
};

int trigger_parse(const char *s, struct trigger_spec *t, char *err, size_t errlen)
{
	const char *bin, *sym;

	if (strncmp(s, "bp:", 3) || !(sym = strrchr(s + 3, ':')) || sym == s + 3 || !sym[1]) {
		snprintf(err, errlen, "trigger '%s': expected bp:BINARY:SYMBOL", s);
		return -EINVAL;
	}
	bin = s + 3;
	if ((size_t)(sym - bin) >= sizeof(t->binary) || strlen(sym + 1) >= sizeof(t->symbol)) {
		snprintf(err, errlen, "trigger '%s': name too long", s);
		return -EINVAL;
	}
	memcpy(t->binary, bin, (size_t)(sym - bin));
	t->binary[sym - bin] = 0;
	snprintf(t->symbol, sizeof(t->symbol), "%s", sym + 1);
	return 0;
}

/* ELF st_value of a function symbol (.symtab first, then .dynsym). */
static int elf_symbol(const char *path, const char *name, uint64_t *value, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -ENOENT;
	Elf *e;
	Elf_Scn *scn = NULL;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		rc = -EINVAL;
		goto out;
	}
	for (int pass = 0; pass < 2 && rc; pass++)
		while ((scn = elf_nextscn(e, scn)) && rc) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
			    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
				continue;
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				const char *n;

				if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
				    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    !(n = elf_strptr(e, sh.sh_link, s.st_name)) || strcmp(n, name))
					continue;
				*value = s.st_value;
				rc = 0;
				break;
			}
		}
	if (rc)
		snprintf(err, errlen, "%s: no function symbol '%s'", path, name);
out:
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

int trigger_resolve(const struct trigger_spec *t, pid_t pid, uint64_t *addr,
		    char *err, size_t errlen)
{
	char real[PATH_MAX], maps[64], line[PATH_MAX + 256];
	uint64_t value = 0, bias = 0;
	struct symtab *st = NULL;
	FILE *f;
	int rc = elf_symbol(t->binary, t->symbol, &value, err, errlen), found = 0;

	if (rc)
		return rc;
	if (pid <= 0) {
		*addr = value;
		return 0;
	}
	if (!realpath(t->binary, real)) {
		snprintf(err, errlen, "%s: %s", t->binary, strerror(errno));
		return -errno;
	}
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "r"))) {
		snprintf(err, errlen, "%s: %s", maps, strerror(errno));
		return -errno;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff;
		char perms[8], path[PATH_MAX];

		path[0] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s",
			   &start, &end, perms, &pgoff, path) == 5 && !strcmp(path, real) &&
		    perms[2] == 'x') {
			if (symtab_from_elf_file(&st, real, err, errlen) ||
			    symtab_load_bias(st, start, pgoff, &bias)) {
				snprintf(err, errlen, "%s: cannot compute its load bias", real);
				rc = -EINVAL;
			}
			found = 1;
		}
	}
	fclose(f);
	symtab_free(st);
	if (!found) {
		snprintf(err, errlen, "%s is not mapped executable in process %d (a shared library "
			 "not loaded yet?)", real, (int)pid);
		return -ENOENT;
	}
	*addr = value + bias;
	return rc;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct trigger *tr = ctx;

	if (size >= sizeof(struct trigger_event)) {
		tr->fires++;
		tr->fn(tr->ctx, data);
	}
	return 0;
}

int trigger_open(const struct trigger_spec *t, pid_t pid, uint64_t addr,
		 trigger_fn fn, void *ctx, struct trigger **out,
		 char *err, size_t errlen)
{
	struct trigger *tr = calloc(1, sizeof(*tr));
	struct perf_event_attr a;
	int ncpu = pid > 0 ? 1 : (int)sysconf(_SC_NPROCESSORS_CONF), rc;

	*out = NULL;
	if (!tr || !(tr->fds = calloc((size_t)ncpu, sizeof(int))) ||
	    !(tr->links = calloc((size_t)ncpu, sizeof(*tr->links)))) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	tr->fn = fn;
	tr->ctx = ctx;
	if (!(tr->skel = trigger_bpf__open())) {
		rc = -errno;
		snprintf(err, errlen, "trigger program: %s", strerror(-rc));
		goto fail;
	}
	tr->skel->rodata->every = t->every ? t->every : 1;
	tr->skel->rodata->max_fires = t->max_fires;
	if ((rc = trigger_bpf__load(tr->skel))) {
		snprintf(err, errlen, "loading the trigger program: %s", strerror(-rc));
		goto fail;
	}
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = addr;
	a.bp_len = sizeof(long);
	a.sample_period = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.inherit = pid > 0;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, pid > 0 ? pid : -1,
				      pid > 0 ? -1 : cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (pid <= 0 && (errno == ENODEV || errno == EINVAL))
				continue; /* offline CPU */
			rc = -errno;
			snprintf(err, errlen, "breakpoint at %#" PRIx64 " (%s in %s): %s", addr,
				 t->symbol, t->binary, strerror(-rc));
			goto fail;
		}
		tr->fds[tr->nfds] = fd;
		tr->links[tr->nfds++] = bpf_program__attach_perf_event(tr->skel->progs.trigger_hit, fd);
		if (!tr->links[tr->nfds - 1]) {
			rc = -errno;
			snprintf(err, errlen, "attaching the trigger program to the breakpoint: %s",
				 strerror(-rc));
			goto fail;
		}
	}
	tr->rb = ring_buffer__new(bpf_map__fd(tr->skel->maps.trigger_ring), on_event, tr, NULL);
	if (!tr->rb) {
		rc = -errno;
		snprintf(err, errlen, "trigger ring: %s", strerror(-rc));
		goto fail;
	}
	*out = tr;
	return 0;
fail:
	trigger_close(tr);
	return rc ? rc : -EINVAL;
}

int trigger_epoll_fd(const struct trigger *tr)
{
	return ring_buffer__epoll_fd(tr->rb);
}

int trigger_poll(struct trigger *tr)
{
	return ring_buffer__consume(tr->rb);
}

void trigger_counts(const struct trigger *tr, uint64_t *hits, uint64_t *fires, uint64_t *drops)
{
	*hits = tr->skel->bss->trigger_hits;
	*fires = tr->fires;
	*drops = tr->skel->bss->trigger_drops;
}

void trigger_close(struct trigger *tr)
{
	if (!tr)
		return;
	for (int i = 0; i < tr->nfds; i++) {
		if (tr->links[i])
			bpf_link__destroy(tr->links[i]); /* closes the event too */
		else
			close(tr->fds[i]);
	}
	ring_buffer__free(tr->rb);
	trigger_bpf__destroy(tr->skel);
	free(tr->links);
	free(tr->fds);
	free(tr);
}
