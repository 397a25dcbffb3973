/* SPDX-License-Identifier: MIT */
/*
 * kcoredir (stage: input/) - the kernel text `perf record --kcore` keeps
 * beside its perf.data: DIR/data is the perf.data, DIR/kcore_dir/ holds
 * kcore (an ELF core file: the copied kernel text, module and BPF/trampoline
 * ranges, format/kcore.h), kallsyms and modules (copies of /proc's files,
 * taken when the copy was).
 *
 * The copy is one time-stamped kernel image: each of its ranges is valid
 * from the start of the recording until the first KSYMBOL record (register
 * or unregister) that changes that part of the address space, so code
 * loaded later is decoded only from what describes it (text store,
 * TEXT_POKE records) and otherwise is a gap.  KSYMBOL records of programs
 * the copy's kallsyms already names at the same address (perf synthesizes
 * them at the start) are no change.  kallsyms becomes the kernel's symbol
 * table unless --kallsyms names another; module ranges that the copy does
 * not hold are gaps that name the module.
 */
#ifndef PTD_KCOREDIR_H
#define PTD_KCOREDIR_H

#include <stddef.h>
#include <stdint.h>

struct input;
struct kcoredir;

/* The kcore_dir of perf's directory layout at perf_path (DIR or DIR/data
 * -> DIR/kcore_dir),
 * or NULL in *kcdir when there is none. Returns 0 or PTD_ERR_NOMEM. */
int kcoredir_find(const char *perf_path, char **kcdir);

/* Opens in->perf_path's kcore_dir if there is one (in->kcore stays NULL
 * otherwise): the kcore file's segments, kallsyms, modules.  Call before
 * the sideband is read.  Returns 0 or a negative PTD_ERR_* with a message
 * in err. */
int kcoredir_open(struct input *in, char *err, size_t errlen);

/* A KSYMBOL record (register or unregister) of [addr, addr+len) at t. */
int kcoredir_note_ksymbol(struct kcoredir *kd, uint64_t addr, uint64_t len,
			  uint64_t t, const char *name, int unregister);

/* After the sideband: adds the copy's ranges to the image store with their
 * windows, and gaps for modules it does not hold.  Returns 0 or a negative
 * PTD_ERR_* with a message in err. */
int kcoredir_add(struct input *in, char *err, size_t errlen);

/* The copy's kallsyms name for addr when the code at (addr, t) is the
 * copy's (its names are those of the copy's time, which a later KSYMBOL at
 * the same address would not be).  0 with *name and *off, else -1. */
int kcoredir_symbol(struct input *in, uint64_t addr, uint64_t t,
		    const char **name, uint64_t *off);

void kcoredir_free(struct kcoredir *kd);

#endif
