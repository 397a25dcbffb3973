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
	const char *mech;
	char desc[4400], why[512];
};

int trigger_parse(const char *s, struct trigger_spec *t, char *err, size_t errlen)
{
	const char *bin = NULL, *sym;

	t->mech = strncmp(s, "uprobe:", 7) ? TRIGGER_AUTO : TRIGGER_UPROBE;
	if (t->mech == TRIGGER_UPROBE)
		bin = s + 7;
	else if (!strncmp(s, "bp:", 3))
		bin = s + 3;
	if (!bin || !(sym = strrchr(bin, ':')) || sym == bin || !sym[1]) {
		snprintf(err, errlen, "trigger '%s': expected bp:BINARY:SYMBOL or uprobe:BINARY:SYMBOL", s);
		return -EINVAL;
	}
	if ((size_t)(sym - bin) >= sizeof(t->binary) || strlen(sym + 1) >= sizeof(t->symbol)) {
		snprintf(err, errlen, "trigger '%s': name too long", s);
		return -EINVAL;
	}
	memcpy(t->binary, bin, (size_t)(sym - bin));
	t->binary[sym - bin] = 0;
	snprintf(t->symbol, sizeof(t->symbol), "%s", sym + 1);
	return 0;
}

/* File offset of vaddr, from the PT_LOAD segment holding it. */
static int file_offset(Elf *e, uint64_t vaddr, uint64_t *off)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	return -ENOEXEC;
}

/* ELF st_value of a function symbol (.symtab first, then .dynsym) and its
 * file offset. */
static int elf_symbol(const char *path, const char *name, uint64_t *value, uint64_t *off,
		      char *err, size_t errlen)
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
	else if ((rc = file_offset(e, *value, off)))
		snprintf(err, errlen, "%s: '%s' at %#" PRIx64 " is in no loadable segment", path,
			 name, *value);
out:
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

/* The runtime address of ELF address value of real (a resolved path) in
 * process pid, or value itself when pid <= 0. */
static int runtime_addr(const char *real, pid_t pid, uint64_t value, uint64_t *addr,
			char *err, size_t errlen)
{
	char maps[64], line[PATH_MAX + 256];
	uint64_t bias = 0;
	struct symtab *st = NULL;
	FILE *f;
	int rc = 0, found = 0;

	if (pid <= 0) {
		*addr = value;
		return 0;
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

static struct perf_event_attr bp_attr(uint64_t addr)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = addr;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return a;
}

/* The probe's target: a function of ours with an address of its own. */
__attribute__((noinline)) static void bp_probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Whether hardware breakpoints fire here: some VMs offer the breakpoint
 * PMU but never deliver the debug exception, and the breakpoint then
 * silently counts nothing.  A counting breakpoint on our own function in
 * this thread, called once, must count exactly 1.  Otherwise why says so. */
static int breakpoints_fire(char *why, size_t len)
{
	struct perf_event_attr a = bp_attr((uintptr_t)bp_probe_target);
	void (*volatile call)(void) = bp_probe_target;
	uint64_t n = 0;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0) {
		snprintf(why, len, "no hardware breakpoints here: a test breakpoint failed: %s",
			 strerror(errno));
		return 0;
	}
	call();
	if (read(fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		n = 0;
	close(fd);
	snprintf(why, len, n == 1 ? "hardware breakpoints fire here" :
		 "hardware breakpoints do not fire here: a test breakpoint on ptcapture's own "
		 "code counted %" PRIu64 " of 1 hit", n);
	return n == 1;
}

static void detach(struct trigger *tr)
{
	for (int i = 0; i < tr->nfds; i++) {
		if (tr->links[i])
			bpf_link__destroy(tr->links[i]); /* closes the event too */
		else if (tr->fds[i] >= 0)
			close(tr->fds[i]);
	}
	tr->nfds = 0;
}

/* Breakpoint at value (relocated) in pid, or on every CPU. */
static int attach_breakpoint(struct trigger *tr, const struct trigger_spec *t, const char *real,
			     pid_t pid, uint64_t value, char *err, size_t errlen)
{
	int ncpu = pid > 0 ? 1 : (int)sysconf(_SC_NPROCESSORS_CONF), rc;
	uint64_t addr = 0;
	struct perf_event_attr a;

	if ((rc = runtime_addr(real, pid, value, &addr, err, errlen)))
		return rc;
	a = bp_attr(addr);
	a.sample_period = 1;
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
			detach(tr);
			return rc;
		}
		tr->fds[tr->nfds] = fd;
		tr->links[tr->nfds++] = bpf_program__attach_perf_event(tr->skel->progs.trigger_hit, fd);
		if (!tr->links[tr->nfds - 1]) {
			rc = -errno;
			snprintf(err, errlen, "attaching the trigger program to the breakpoint: %s",
				 strerror(-rc));
			detach(tr);
			return rc;
		}
	}
	tr->mech = "breakpoint";
	if (pid > 0)
		snprintf(tr->desc, sizeof(tr->desc), "breakpoint at %#" PRIx64 " (%s) in process %d",
			 addr, t->symbol, (int)pid);
	else
		snprintf(tr->desc, sizeof(tr->desc), "breakpoint at %#" PRIx64 " (%s) in every "
			 "process (right for non-PIE binaries only)", addr, t->symbol);
	return 0;
}

/* The kernel's ENOTSUPP (524, no userspace name): an instruction that
 * uprobes cannot single-step or emulate. */
static const char *uprobe_strerror(int e)
{
	return e == 524 ? "the kernel cannot probe the instruction there" : strerror(e);
}

/* Uprobe at file offset off of real, in pid or in every process. */
static int attach_uprobe(struct trigger *tr, const struct trigger_spec *t, const char *real,
			 pid_t pid, uint64_t off, char *err, size_t errlen)
{
	struct bpf_link *l = bpf_program__attach_uprobe(tr->skel->progs.trigger_uprobe, false,
							 pid > 0 ? pid : -1, real, off);

	if (!l) {
		int rc = -errno;

		snprintf(err, errlen, "uprobe at %s+%#" PRIx64 " (%s): %s%s", real, off, t->symbol,
			 uprobe_strerror(-rc), access("/sys/bus/event_source/devices/uprobe", F_OK) ?
			 " (this kernel has no uprobe PMU: needs CONFIG_UPROBE_EVENTS)" : "");
		return rc;
	}
	tr->fds[0] = -1;
	tr->links[0] = l;
	tr->nfds = 1;
	tr->mech = "uprobe";
	if (pid > 0)
		snprintf(tr->desc, sizeof(tr->desc), "uprobe at %s+%#" PRIx64 " (%s) in process %d",
			 real, off, t->symbol, (int)pid);
	else
		snprintf(tr->desc, sizeof(tr->desc), "uprobe at %s+%#" PRIx64 " (%s) in every process",
			 real, off, t->symbol);
	return 0;
}

/* bp: the breakpoint where breakpoints fire, else (or if it fails) the
 * uprobe; uprobe: the uprobe. */
static int attach(struct trigger *tr, const struct trigger_spec *t, pid_t pid,
		  char *err, size_t errlen)
{
	char real[PATH_MAX], bperr[PATH_MAX + 1024];
	uint64_t value = 0, off = 0;
	int rc = elf_symbol(t->binary, t->symbol, &value, &off, err, errlen);

	if (rc)
		return rc;
	if (!realpath(t->binary, real)) {
		snprintf(err, errlen, "%s: %s", t->binary, strerror(errno));
		return -errno;
	}
	if (t->mech == TRIGGER_UPROBE) {
		snprintf(tr->why, sizeof(tr->why), "requested with uprobe:");
		return attach_uprobe(tr, t, real, pid, off, err, errlen);
	}
	if (breakpoints_fire(tr->why, sizeof(tr->why))) {
		if (!attach_breakpoint(tr, t, real, pid, value, bperr, sizeof(bperr)))
			return 0;
		snprintf(tr->why, sizeof(tr->why), "the breakpoint failed: %.400s", bperr);
	}
	if ((rc = attach_uprobe(tr, t, real, pid, off, err, errlen))) {
		snprintf(bperr, sizeof(bperr), "%s", err);
		snprintf(err, errlen, "no trigger possible: %s, and the %s; take snapshots with "
			 "--control or SIGUSR2 instead", tr->why, bperr);
	}
	return rc;
}

int trigger_open(const struct trigger_spec *t, pid_t pid, trigger_fn fn, void *ctx,
		 struct trigger **out, char *err, size_t errlen)
{
	struct trigger *tr = calloc(1, sizeof(*tr));
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
	if ((rc = attach(tr, t, pid, err, errlen)))
		goto fail;
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

const char *trigger_mechanism(const struct trigger *tr)
{
	return tr->mech;
}

const char *trigger_desc(const struct trigger *tr)
{
	return tr->desc;
}

const char *trigger_why(const struct trigger *tr)
{
	return tr->why;
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
	if (tr->links)
		detach(tr);
	ring_buffer__free(tr->rb);
	trigger_bpf__destroy(tr->skel);
	free(tr->links);
	free(tr->fds);
	free(tr);
}
