/* SPDX-License-Identifier: MIT */
/*
 * synth (stage: capture/ptcapture/) - the state that existed before recording started, as perf
 * synthesizes it: KSYMBOL + BPF_EVENT for loaded BPF programs, COMM + MMAP2
 * for running processes, and a copy of /proc/kallsyms.
 *
 * Records are built complete (header, body, sample_id trailer with time 0
 * = "since before the start") and handed to a callback, so that they take
 * the same path as records read from the rings.
 */
#ifndef PTCAP_SYNTH_H
#define PTCAP_SYNTH_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

typedef int (*synth_fn)(void *ctx, const struct perf_event_header *rec);

/* Address of a kernel symbol (0 if absent or hidden by kptr_restrict). */
uint64_t synth_kallsyms_lookup(const char *symbol);

/* Copies /proc/kallsyms to path (mode 0600) and keeps the [bpf] symbols
 * for synth_bpf_progs' names. */
struct synth_kallsyms;
int synth_kallsyms_copy(const char *path, struct synth_kallsyms **out,
			char *err, size_t errlen);
void synth_kallsyms_free(struct synth_kallsyms *ks);

/* One KSYMBOL REGISTER per JIT image and a BPF_EVENT PROG_LOAD per loaded
 * program.  id: the sample id written in the trailers.  Returns programs
 * synthesized or -errno. */
int synth_bpf_progs(const struct synth_kallsyms *ks, uint64_t id,
		    synth_fn fn, void *ctx);

/* COMM per thread and MMAP2 per executable mapping of every process. */
int synth_procs(uint64_t id, synth_fn fn, void *ctx);

#endif
