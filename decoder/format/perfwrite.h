/* SPDX-License-Identifier: MIT */
/*
 * perfwrite - writes perf.data files (file mode, PERFILE2); format stage
 * (decoder/format/), linked by capture/ only (not in libptdecode).  The
 * values it writes are perf_abi.h's.
 *
 * Layout written: header | attrs (perf_file_attr each) | ids | data records |
 * feature section table | feature data.  The feature table follows the data
 * section directly (perf has no offset for it).  Facts perf 6.1 insists on
 * (DESIGN.md): attr.size <= 128, all attrs share one sample_type, AUXTRACE
 * index entries carry the record header size (48), not the payload size.
 *
 * Use: perfwrite_open, perfwrite_add_attr (all attrs before any record),
 * records (raw or through the helpers, which append the sample_id_all
 * trailer for the attrs' sample_type), feature setters, perfwrite_close.
 * Every function returns 0 (or a value documented with it) or a negative
 * enum ptd_error; the first error sticks and is reported again by close.
 */
#ifndef PTD_PERFWRITE_H
#define PTD_PERFWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "perf_abi.h"

/* The sample_id_all trailer values; which ones are written depends on the
 * sample_type of the attrs. */
struct perfwrite_sid {
	uint32_t pid, tid;
	uint64_t time;      /* perf clock ns */
	uint64_t id;        /* the id of the attr this record belongs to */
	uint64_t stream_id;
	uint32_t cpu;
};

struct perfwrite;

/* Creates (truncates) path with mode 0600. */
int perfwrite_open(struct perfwrite **out, const char *path,
		   char *err, size_t errlen);

/* Writes a perf.data directory as `perf record --threads` does, w having
 * been opened on DIR/data: that file keeps the header, attrs, features and
 * the records without a CPU (AUXTRACE_INFO, TIME_CONV, raw records); every
 * record the helpers write with a CPU (its sample_id_all trailer's, an
 * AUXTRACE record's cpu) goes to DIR/data.CPU, records only, no header.
 * data.0 up to the highest CPU exist (empty where a CPU wrote nothing);
 * close writes HEADER_DIR_FORMAT (version 1) and, as perf record --threads
 * does, HEADER_AUXTRACE with no index entries (perf indexes no directory).  Call before the first record; needs
 * PERF_SAMPLE_CPU in the attrs' sample_type. */
int perfwrite_split_by_cpu(struct perfwrite *w, const char *dir);

/* Adds an attr: attr points to perf_event_attr bytes whose own size field
 * (offset 4) gives its length, at most 128.  ids: the sample ids that name
 * it; name: for the EVENT_DESC feature (e.g. "intel_pt//u"), may be NULL.
 * All attrs must be added before the first record and have the same
 * sample_type. */
int perfwrite_add_attr(struct perfwrite *w, const void *attr,
		       const uint64_t *ids, size_t nids, const char *name);

/* Records written through the helpers with sample id `id` are guest
 * sideband: their cpumode becomes PERF_RECORD_MISC_GUEST_USER (user) or
 * _GUEST_KERNEL (anything else), as `perf inject --guest-data` rewrites
 * a guest's records.  0: none (the default). */
void perfwrite_set_guest_id(struct perfwrite *w, uint64_t id);
/* The same for the n sample ids first, first + 1, ... (a guest's vcpus). */
void perfwrite_set_guest_ids(struct perfwrite *w, uint64_t first, uint64_t n);

/* Appends a complete record (header.size must equal len, a multiple of 8).
 * Returns the file offset of the record (>= 0) or a negative error. */
int64_t perfwrite_record(struct perfwrite *w, const void *rec, size_t len);

/* Helpers: build the record + trailer and append it. */
int perfwrite_mmap2(struct perfwrite *w, const struct perfwrite_sid *sid,
		    uint16_t cpumode, uint32_t pid, uint32_t tid,
		    uint64_t addr, uint64_t len, uint64_t pgoff,
		    const uint8_t *build_id, size_t build_id_len, /* or NULL */
		    uint32_t maj, uint32_t min, uint64_t ino, uint64_t ino_gen,
		    uint32_t prot, uint32_t flags, const char *filename);
int perfwrite_comm(struct perfwrite *w, const struct perfwrite_sid *sid,
		   uint32_t pid, uint32_t tid, const char *comm, int exec);
/* CALLCHAIN_DEFERRED: the user frames ips[n] of the samples naming cookie. */
int perfwrite_callchain_deferred(struct perfwrite *w, const struct perfwrite_sid *sid,
				 uint64_t cookie, const uint64_t *ips, size_t n);
int perfwrite_task(struct perfwrite *w, const struct perfwrite_sid *sid,
		   int is_exit, uint32_t pid, uint32_t ppid, uint32_t tid,
		   uint32_t ptid, uint64_t time);
int perfwrite_itrace_start(struct perfwrite *w,
			   const struct perfwrite_sid *sid,
			   uint32_t pid, uint32_t tid);
int perfwrite_aux(struct perfwrite *w, const struct perfwrite_sid *sid,
		  uint64_t aux_offset, uint64_t aux_size, uint64_t flags);
int perfwrite_switch(struct perfwrite *w, const struct perfwrite_sid *sid,
		     int out, int preempt);
int perfwrite_switch_cpu_wide(struct perfwrite *w,
			      const struct perfwrite_sid *sid, int out,
			      int preempt, uint32_t next_prev_pid,
			      uint32_t next_prev_tid);
int perfwrite_ksymbol(struct perfwrite *w, const struct perfwrite_sid *sid,
		      uint64_t addr, uint32_t len, uint16_t ksym_type,
		      uint16_t flags, const char *name);
int perfwrite_bpf_event(struct perfwrite *w, const struct perfwrite_sid *sid,
			uint16_t type, uint16_t flags, uint32_t id,
			const uint8_t tag[8]);
int perfwrite_text_poke(struct perfwrite *w, const struct perfwrite_sid *sid,
			uint64_t addr, const void *old_bytes, uint16_t old_len,
			const void *new_bytes, uint16_t new_len);
int perfwrite_lost(struct perfwrite *w, const struct perfwrite_sid *sid,
		   uint64_t id, uint64_t lost);
/* AUXTRACE_INFO: type PD_AUXTRACE_*; priv as u64 words (intel_pt's from
 * intel_pt_info_pack), tail bytes (e.g. intel_pt's filter string)
 * appended and padded to 8. */
int perfwrite_auxtrace_info(struct perfwrite *w, uint32_t type,
			    const uint64_t *priv, size_t npriv,
			    const void *tail, size_t tail_len);
/* AUXTRACE record + payload (padded with zeros to 8 bytes, which decode as
 * PT PAD packets); recorded in the HEADER_AUXTRACE index. */
int perfwrite_auxtrace(struct perfwrite *w, const void *data, size_t size,
		       uint64_t offset, uint64_t reference, uint32_t idx,
		       uint32_t tid, uint32_t cpu);
int perfwrite_time_conv(struct perfwrite *w, uint64_t time_shift,
			uint64_t time_mult, uint64_t time_zero,
			uint64_t time_cycles, uint64_t time_mask,
			int cap_user_time_zero, int cap_user_time_short);
int perfwrite_finished_round(struct perfwrite *w);

/* Pushes the records written so far to the file and (once) writes a
 * provisional header whose data size is 0, which readers take as "records
 * up to the end of the file": a writer killed before perfwrite_close
 * leaves a readable file (without features).  close rewrites the header. */
int perfwrite_flush(struct perfwrite *w);

/* Features.  String features: HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC
 * (one string), CPUID (e.g. "GenuineIntel,6,158,10"). */
int perfwrite_feat_string(struct perfwrite *w, int feat, const char *s);  /* PD_FEAT_* */
int perfwrite_feat_nrcpus(struct perfwrite *w, uint32_t avail,
			  uint32_t online);
int perfwrite_feat_u64(struct perfwrite *w, int feat, uint64_t v); /* TOTAL_MEM, CLOCKID */
/* argv[0] is conventionally the tool's path. */
int perfwrite_feat_cmdline(struct perfwrite *w, int argc,
			   const char *const *argv);
int perfwrite_feat_build_id(struct perfwrite *w, int32_t pid, uint16_t cpumode,
			    const uint8_t *build_id, size_t len,
			    const char *filename);

/* Writes features (EVENT_DESC and AUXTRACE automatically when there are
 * attrs / AUXTRACE records), fixes the header, closes the file and frees w.
 * Returns the first error that happened during writing, if any. */
int perfwrite_close(struct perfwrite *w, char *err, size_t errlen);

#endif
