/* SPDX-License-Identifier: MIT */
/* perfwrite - writes perf.data files (file mode).  See perfwrite.h. */
#include "perfwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptdecode.h"
#include "util.h"

#define PW_ATTR_MAX 128     /* perf 6.1 rejects larger attrs */

struct pw_buf {
	uint8_t *p;
	size_t len, cap;
};

struct pw_attr {
	uint8_t bytes[PW_ATTR_MAX];
	uint32_t size;
	uint64_t *ids;
	size_t nids;
	char name[128];
};

struct perfwrite {
	int fd;
	FILE *f;
	int err;                 /* first error (sticky) */
	char msg[4400];
	char path[4096];
	struct pw_attr *attrs;
	size_t nattrs, attrs_cap;
	uint64_t sample_type;
	int started;             /* data section begun */
	int flushed;             /* provisional header written */
	uint64_t data_offset, pos;
	struct pw_buf feat[PD_FEAT_MAX];
	int has_feat[PD_FEAT_MAX];
	uint64_t *aux_index;     /* pairs: file offset, record header size */
	size_t naux, aux_cap;
	int split_aux;           /* AUXTRACE records went to data.N files */
	struct pw_buf rec;       /* scratch for building records */
	uint64_t guest_id;       /* records of sample ids [guest_id,
				  * guest_id + guest_n) are guest sideband
				  * (perfwrite_set_guest_ids) */
	uint64_t guest_n;
	/* perfwrite_split_by_cpu: the data.CPU files */
	char *split_dir;
	FILE **cpu_f;
	size_t ncpu;
};

void perfwrite_set_guest_ids(struct perfwrite *w, uint64_t first, uint64_t n)
{
	w->guest_id = first;
	w->guest_n = n;
}

void perfwrite_set_guest_id(struct perfwrite *w, uint64_t id)
{
	perfwrite_set_guest_ids(w, id, id ? 1 : 0);
}

static int pw_fail(struct perfwrite *w, int code, const char *what)
{
	if (!w->err) {
		w->err = code;
		snprintf(w->msg, sizeof(w->msg), "%s: %s%s%s", w->path, what,
			 code == PTD_ERR_IO ? ": " : "",
			 code == PTD_ERR_IO ? strerror(errno) : "");
	}
	return code;
}

static int buf_put(struct pw_buf *b, const void *d, size_t n)
{
	size_t cap = b->cap;
	if (util_grow((void **)&b->p, &cap, b->len + n, 1) < 0)
		return PTD_ERR_NOMEM;
	b->cap = cap;
	if (d)
		memcpy(b->p + b->len, d, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
	return 0;
}
static int buf_u16(struct pw_buf *b, uint16_t v) { return buf_put(b, &v, 2); }
static int buf_u32(struct pw_buf *b, uint32_t v) { return buf_put(b, &v, 4); }
static int buf_u64(struct pw_buf *b, uint64_t v) { return buf_put(b, &v, 8); }
static int buf_pad8(struct pw_buf *b)
{
	return (b->len & 7) ? buf_put(b, NULL, 8 - (b->len & 7)) : 0;
}
/* perf's string encoding in features: u32 padded length, NUL, zero pad. */
static int buf_perf_string(struct pw_buf *b, const char *s)
{
	size_t len = strlen(s) + 1;
	size_t olen = (len + PD_NAME_ALIGN - 1) / PD_NAME_ALIGN * PD_NAME_ALIGN;
	int r = buf_u32(b, (uint32_t)olen);
	if (!r) r = buf_put(b, s, len);
	if (!r) r = buf_put(b, NULL, olen - len);
	return r;
}

static int pw_write(struct perfwrite *w, const void *d, size_t n)
{
	if (w->err)
		return w->err;
	if (n && fwrite(d, 1, n, w->f) != n)
		return pw_fail(w, PTD_ERR_IO, "write failed");
	w->pos += n;
	return 0;
}

int perfwrite_open(struct perfwrite **out, const char *path,
		   char *err, size_t errlen)
{
	struct perfwrite *w;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		util_errf(err, errlen, "out of memory");
		return PTD_ERR_NOMEM;
	}
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		util_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		free(w);
		return PTD_ERR_IO;
	}
	w->f = fdopen(w->fd, "wb");
	if (!w->f) {
		util_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		close(w->fd);
		free(w);
		return PTD_ERR_IO;
	}
	*out = w;
	return 0;
}

int perfwrite_add_attr(struct perfwrite *w, const void *attr,
		       const uint64_t *ids, size_t nids, const char *name)
{
	const uint8_t *a = attr;
	uint32_t size = util_le32(a + PD_ATTR_OFF_SIZE);
	uint64_t st = util_le64(a + PD_ATTR_OFF_SAMPLE_TYPE);
	struct pw_attr *pa;

	if (w->err)
		return w->err;
	if (w->started)
		return pw_fail(w, PTD_ERR_INVAL, "attr added after the first record");
	if (size < PD_ATTR_SIZE_VER0 || size > PW_ATTR_MAX || (size & 7))
		return pw_fail(w, PTD_ERR_INVAL,
			       "attr size must be 64..128 and a multiple of 8 (perf 6.1 rejects larger)");
	if (w->nattrs && (size != w->attrs[0].size || st != w->sample_type))
		return pw_fail(w, PTD_ERR_INVAL,
			       "all attrs must have the same size and sample_type");
	if (util_grow((void **)&w->attrs, &w->attrs_cap, w->nattrs + 1,
		      sizeof(*w->attrs)) < 0)
		return pw_fail(w, PTD_ERR_NOMEM, "out of memory");
	pa = &w->attrs[w->nattrs];
	memset(pa, 0, sizeof(*pa));
	memcpy(pa->bytes, a, size);
	pa->size = size;
	if (nids) {
		pa->ids = malloc(nids * sizeof(uint64_t));
		if (!pa->ids)
			return pw_fail(w, PTD_ERR_NOMEM, "out of memory");
		memcpy(pa->ids, ids, nids * sizeof(uint64_t));
	}
	pa->nids = nids;
	snprintf(pa->name, sizeof(pa->name), "%s", name ? name : "");
	w->sample_type = st;
	w->nattrs++;
	return 0;
}

int perfwrite_split_by_cpu(struct perfwrite *w, const char *dir)
{
	if (w->err)
		return w->err;
	if (w->started)
		return pw_fail(w, PTD_ERR_INVAL, "split by CPU after the first record");
	free(w->split_dir);
	w->split_dir = strdup(dir);
	return w->split_dir ? 0 : pw_fail(w, PTD_ERR_NOMEM, "out of memory");
}

/* DIR/data.CPU, and every lower one, created. */
static FILE *pw_cpu_file(struct perfwrite *w, uint32_t cpu)
{
	char path[sizeof(w->path)];

	if (cpu >= 4096) {
		pw_fail(w, PTD_ERR_INVAL, "CPU number above 4095");
		return NULL;
	}
	if (cpu >= w->ncpu) {
		size_t cap = w->ncpu;

		if (util_grow((void **)&w->cpu_f, &cap, cpu + 1, sizeof(*w->cpu_f)) < 0) {
			pw_fail(w, PTD_ERR_NOMEM, "out of memory");
			return NULL;
		}
		for (size_t i = w->ncpu; i <= cpu; i++) {
			int fd;

			if (snprintf(path, sizeof(path), "%s/data.%zu", w->split_dir,
				     i) >= (int)sizeof(path)) {
				pw_fail(w, PTD_ERR_INVAL, "directory name too long");
				return NULL;
			}
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			w->cpu_f[i] = fd < 0 ? NULL : fdopen(fd, "wb");
			if (!w->cpu_f[i]) {
				if (fd >= 0)
					close(fd);
				w->ncpu = i;
				memcpy(w->path, path, sizeof(path));
				pw_fail(w, PTD_ERR_IO, "cannot create");
				return NULL;
			}
		}
		w->ncpu = cpu + 1;
	}
	return w->cpu_f[cpu];
}

/* Appends a record (and payload) to DIR/data.CPU. */
static int pw_write_cpu(struct perfwrite *w, uint32_t cpu, const void *d,
			size_t n)
{
	FILE *f;

	if (w->err)
		return w->err;
	f = pw_cpu_file(w, cpu);
	if (!f)
		return w->err;
	if (n && fwrite(d, 1, n, f) != n)
		return pw_fail(w, PTD_ERR_IO, "write failed");
	return 0;
}

/* Header placeholder, attrs, ids; the data section follows. */
static int pw_start(struct perfwrite *w)
{
	uint8_t hdr[PD_FILE_HEADER_SIZE] = { 0 };
	uint64_t ids_off;
	size_t i;

	if (w->started)
		return w->err;
	w->started = 1;
	if (!w->nattrs)
		return pw_fail(w, PTD_ERR_INVAL, "no attr added before the first record");
	pw_write(w, hdr, sizeof(hdr));
	ids_off = PD_FILE_HEADER_SIZE +
		  w->nattrs * (w->attrs[0].size + PD_FILE_SECTION_SIZE);
	for (i = 0; i < w->nattrs; i++) {
		uint64_t sec[2] = { ids_off, w->attrs[i].nids * 8 };
		pw_write(w, w->attrs[i].bytes, w->attrs[i].size);
		pw_write(w, sec, sizeof(sec));
		ids_off += sec[1];
	}
	for (i = 0; i < w->nattrs; i++)
		pw_write(w, w->attrs[i].ids, w->attrs[i].nids * 8);
	w->data_offset = w->pos;
	return w->err;
}

int64_t perfwrite_record(struct perfwrite *w, const void *rec, size_t len)
{
	uint64_t at;

	if (pw_start(w))
		return w->err;
	if (len < 8 || (len & 7) || len > 0xffff || util_le16((const uint8_t *)rec + 6) != len)
		return pw_fail(w, PTD_ERR_INVAL,
			       "record size must match its header, be a multiple of 8 and < 64 KiB");
	at = w->pos;
	if (pw_write(w, rec, len))
		return w->err;
	return (int64_t)at;
}

/* Scratch record: header now, size patched by pw_end. */
static void pw_begin(struct perfwrite *w, uint32_t type, uint16_t misc)
{
	w->rec.len = 0;
	buf_u32(&w->rec, type);
	buf_u16(&w->rec, misc);
	buf_u16(&w->rec, 0);
}

static int pw_trailer(struct perfwrite *w, const struct perfwrite_sid *s)
{
	struct pw_buf *b = &w->rec;
	uint64_t st = w->sample_type;
	int r = 0;

	if (st & PD_SAMPLE_TID) { r |= buf_u32(b, s->pid); r |= buf_u32(b, s->tid); }
	if (st & PD_SAMPLE_TIME) r |= buf_u64(b, s->time);
	if (st & PD_SAMPLE_ID) r |= buf_u64(b, s->id);
	if (st & PD_SAMPLE_STREAM_ID) r |= buf_u64(b, s->stream_id);
	if (st & PD_SAMPLE_CPU) { r |= buf_u32(b, s->cpu); r |= buf_u32(b, 0); }
	if (st & PD_SAMPLE_IDENTIFIER) r |= buf_u64(b, s->id);
	return r;
}

static int pw_end(struct perfwrite *w, const struct perfwrite_sid *sid)
{
	uint16_t size;
	int r = 0;

	if (sid && sid->id >= w->guest_id && sid->id - w->guest_id < w->guest_n) {
		/* perf inject --guest-data's rule: user -> guest user, all
		 * else -> guest kernel */
		uint16_t misc = util_le16(w->rec.p + 4);
		uint16_t mode = (misc & PD_MISC_USER) ? PD_MISC_GUEST_USER
						       : PD_MISC_GUEST_KERNEL;

		misc = (uint16_t)((misc & ~PD_MISC_CPUMODE_MASK) | mode);
		memcpy(w->rec.p + 4, &misc, 2);
	}
	if (sid)
		r = pw_trailer(w, sid);
	if (!r)
		r = buf_pad8(&w->rec);
	if (r)
		return pw_fail(w, PTD_ERR_NOMEM, "out of memory");
	if (w->rec.len > 0xffff)
		return pw_fail(w, PTD_ERR_INVAL, "record larger than 64 KiB");
	size = (uint16_t)w->rec.len;
	memcpy(w->rec.p + 6, &size, 2);
	if (w->split_dir && sid && (w->sample_type & PD_SAMPLE_CPU))
		return pw_start(w) ? w->err :
		       pw_write_cpu(w, sid->cpu, w->rec.p, w->rec.len);
	return perfwrite_record(w, w->rec.p, w->rec.len) < 0 ? w->err : 0;
}

/* A NUL-terminated string padded to 8 bytes (as the kernel writes names). */
static void pw_name(struct perfwrite *w, const char *s)
{
	buf_put(&w->rec, s, strlen(s) + 1);
	buf_pad8(&w->rec);
}

int perfwrite_mmap2(struct perfwrite *w, const struct perfwrite_sid *sid,
		    uint16_t cpumode, uint32_t pid, uint32_t tid,
		    uint64_t addr, uint64_t len, uint64_t pgoff,
		    const uint8_t *build_id, size_t build_id_len,
		    uint32_t maj, uint32_t min, uint64_t ino, uint64_t ino_gen,
		    uint32_t prot, uint32_t flags, const char *filename)
{
	struct pw_buf *b = &w->rec;

	if (build_id && build_id_len > 20)
		return pw_fail(w, PTD_ERR_INVAL, "build id longer than 20 bytes");
	pw_begin(w, PD_RECORD_MMAP2, cpumode | (build_id ? PD_MISC_MMAP_BUILD_ID : 0));
	buf_u32(b, pid); buf_u32(b, tid);
	buf_u64(b, addr); buf_u64(b, len); buf_u64(b, pgoff);
	if (build_id) {
		uint8_t u[24] = { 0 };
		u[0] = (uint8_t)build_id_len;
		memcpy(u + 4, build_id, build_id_len);
		buf_put(b, u, sizeof(u));
	} else {
		buf_u32(b, maj); buf_u32(b, min); buf_u64(b, ino); buf_u64(b, ino_gen);
	}
	buf_u32(b, prot); buf_u32(b, flags);
	pw_name(w, filename);
	return pw_end(w, sid);
}

int perfwrite_callchain_deferred(struct perfwrite *w, const struct perfwrite_sid *sid,
				 uint64_t cookie, const uint64_t *ips, size_t n)
{
	pw_begin(w, PD_RECORD_CALLCHAIN_DEFERRED, PD_MISC_USER);
	buf_u64(&w->rec, cookie);
	buf_u64(&w->rec, n);
	for (size_t i = 0; i < n; i++)
		buf_u64(&w->rec, ips[i]);
	return pw_end(w, sid);
}

int perfwrite_comm(struct perfwrite *w, const struct perfwrite_sid *sid,
		   uint32_t pid, uint32_t tid, const char *comm, int exec)
{
	pw_begin(w, PD_RECORD_COMM, PD_MISC_USER | (exec ? PD_MISC_COMM_EXEC : 0));
	buf_u32(&w->rec, pid); buf_u32(&w->rec, tid);
	pw_name(w, comm);
	return pw_end(w, sid);
}

int perfwrite_task(struct perfwrite *w, const struct perfwrite_sid *sid,
		   int is_exit, uint32_t pid, uint32_t ppid, uint32_t tid,
		   uint32_t ptid, uint64_t time)
{
	pw_begin(w, is_exit ? PD_RECORD_EXIT : PD_RECORD_FORK, 0);
	buf_u32(&w->rec, pid); buf_u32(&w->rec, ppid);
	buf_u32(&w->rec, tid); buf_u32(&w->rec, ptid);
	buf_u64(&w->rec, time);
	return pw_end(w, sid);
}

int perfwrite_itrace_start(struct perfwrite *w, const struct perfwrite_sid *sid,
			   uint32_t pid, uint32_t tid)
{
	pw_begin(w, PD_RECORD_ITRACE_START, 0);
	buf_u32(&w->rec, pid); buf_u32(&w->rec, tid);
	return pw_end(w, sid);
}

int perfwrite_aux(struct perfwrite *w, const struct perfwrite_sid *sid,
		  uint64_t aux_offset, uint64_t aux_size, uint64_t flags)
{
	pw_begin(w, PD_RECORD_AUX, 0);
	buf_u64(&w->rec, aux_offset); buf_u64(&w->rec, aux_size);
	buf_u64(&w->rec, flags);
	return pw_end(w, sid);
}

int perfwrite_switch(struct perfwrite *w, const struct perfwrite_sid *sid,
		     int out, int preempt)
{
	pw_begin(w, PD_RECORD_SWITCH,
		 (out ? PD_MISC_SWITCH_OUT : 0) |
		 (out && preempt ? PD_MISC_SWITCH_OUT_PREEMPT : 0));
	return pw_end(w, sid);
}

int perfwrite_switch_cpu_wide(struct perfwrite *w,
			      const struct perfwrite_sid *sid, int out,
			      int preempt, uint32_t next_prev_pid,
			      uint32_t next_prev_tid)
{
	pw_begin(w, PD_RECORD_SWITCH_CPU_WIDE,
		 (out ? PD_MISC_SWITCH_OUT : 0) |
		 (out && preempt ? PD_MISC_SWITCH_OUT_PREEMPT : 0));
	buf_u32(&w->rec, next_prev_pid); buf_u32(&w->rec, next_prev_tid);
	return pw_end(w, sid);
}

int perfwrite_ksymbol(struct perfwrite *w, const struct perfwrite_sid *sid,
		      uint64_t addr, uint32_t len, uint16_t ksym_type,
		      uint16_t flags, const char *name)
{
	pw_begin(w, PD_RECORD_KSYMBOL, PD_MISC_KERNEL);
	buf_u64(&w->rec, addr); buf_u32(&w->rec, len);
	buf_u16(&w->rec, ksym_type); buf_u16(&w->rec, flags);
	pw_name(w, name);
	return pw_end(w, sid);
}

int perfwrite_bpf_event(struct perfwrite *w, const struct perfwrite_sid *sid,
			uint16_t type, uint16_t flags, uint32_t id,
			const uint8_t tag[8])
{
	pw_begin(w, PD_RECORD_BPF_EVENT, PD_MISC_KERNEL);
	buf_u16(&w->rec, type); buf_u16(&w->rec, flags); buf_u32(&w->rec, id);
	buf_put(&w->rec, tag, 8);
	return pw_end(w, sid);
}

int perfwrite_text_poke(struct perfwrite *w, const struct perfwrite_sid *sid,
			uint64_t addr, const void *old_bytes, uint16_t old_len,
			const void *new_bytes, uint16_t new_len)
{
	pw_begin(w, PD_RECORD_TEXT_POKE, PD_MISC_KERNEL);
	buf_u64(&w->rec, addr); buf_u16(&w->rec, old_len); buf_u16(&w->rec, new_len);
	buf_put(&w->rec, old_bytes, old_len);
	buf_put(&w->rec, new_bytes, new_len);
	buf_pad8(&w->rec);
	return pw_end(w, sid);
}

int perfwrite_lost(struct perfwrite *w, const struct perfwrite_sid *sid,
		   uint64_t id, uint64_t lost)
{
	pw_begin(w, PD_RECORD_LOST, 0);
	buf_u64(&w->rec, id); buf_u64(&w->rec, lost);
	return pw_end(w, sid);
}

int perfwrite_auxtrace_info(struct perfwrite *w, uint32_t type,
			    const uint64_t *priv, size_t npriv,
			    const void *tail, size_t tail_len)
{
	pw_begin(w, PD_RECORD_AUXTRACE_INFO, 0);
	buf_u32(&w->rec, type); buf_u32(&w->rec, 0);
	buf_put(&w->rec, priv, npriv * 8);
	if (tail_len)
		buf_put(&w->rec, tail, tail_len);
	return pw_end(w, NULL);
}

int perfwrite_auxtrace(struct perfwrite *w, const void *data, size_t size,
		       uint64_t offset, uint64_t reference, uint32_t idx,
		       uint32_t tid, uint32_t cpu)
{
	static const uint8_t zero[8];
	size_t pad = (8 - (size & 7)) & 7;
	int64_t at;

	pw_begin(w, PD_RECORD_AUXTRACE, 0);
	buf_u64(&w->rec, size + pad); buf_u64(&w->rec, offset);
	buf_u64(&w->rec, reference);
	buf_u32(&w->rec, idx); buf_u32(&w->rec, tid);
	buf_u32(&w->rec, cpu); buf_u32(&w->rec, 0);
	if (w->split_dir) {
		/* the AUX bytes follow their record in that CPU's file */
		uint16_t rsize = (uint16_t)w->rec.len;

		memcpy(w->rec.p + 6, &rsize, 2);
		w->split_aux = 1;
		if (pw_start(w) || pw_write_cpu(w, cpu, w->rec.p, w->rec.len) ||
		    pw_write_cpu(w, cpu, data, size))
			return w->err;
		return pw_write_cpu(w, cpu, zero, pad);
	}
	if (pw_end(w, NULL))
		return w->err;
	at = (int64_t)(w->pos - w->rec.len);
	pw_write(w, data, size);
	pw_write(w, zero, pad);
	if (w->err)
		return w->err;
	if (util_grow((void **)&w->aux_index, &w->aux_cap, 2 * (w->naux + 1),
		      sizeof(uint64_t)) < 0)
		return pw_fail(w, PTD_ERR_NOMEM, "out of memory");
	w->aux_index[2 * w->naux] = (uint64_t)at;
	w->aux_index[2 * w->naux + 1] = PD_AUXTRACE_RECORD_SIZE;  /* as perf does */
	w->naux++;
	return 0;
}

int perfwrite_time_conv(struct perfwrite *w, uint64_t time_shift,
			uint64_t time_mult, uint64_t time_zero,
			uint64_t time_cycles, uint64_t time_mask,
			int cap_user_time_zero, int cap_user_time_short)
{
	uint8_t caps[8] = { (uint8_t)!!cap_user_time_zero,
			    (uint8_t)!!cap_user_time_short };
	pw_begin(w, PD_RECORD_TIME_CONV, 0);
	buf_u64(&w->rec, time_shift); buf_u64(&w->rec, time_mult);
	buf_u64(&w->rec, time_zero); buf_u64(&w->rec, time_cycles);
	buf_u64(&w->rec, time_mask);
	buf_put(&w->rec, caps, sizeof(caps));
	return pw_end(w, NULL);
}

int perfwrite_finished_round(struct perfwrite *w)
{
	pw_begin(w, PD_RECORD_FINISHED_ROUND, 0);
	return pw_end(w, NULL);
}

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The header fields that do not depend on the end of the data. */
static void pw_header(const struct perfwrite *w, uint8_t hdr[PD_FILE_HEADER_SIZE])
{
	uint64_t entry = w->nattrs ? w->attrs[0].size + PD_FILE_SECTION_SIZE : 0;

	memset(hdr, 0, PD_FILE_HEADER_SIZE);
	put_u64(hdr + PD_HEADER_OFF_MAGIC, PD_MAGIC2);
	put_u64(hdr + PD_HEADER_OFF_SIZE, PD_FILE_HEADER_SIZE);
	put_u64(hdr + PD_HEADER_OFF_ATTR_SIZE, entry);
	put_u64(hdr + PD_HEADER_OFF_ATTRS, PD_FILE_HEADER_SIZE);
	put_u64(hdr + PD_HEADER_OFF_ATTRS + 8, w->nattrs * entry);
	put_u64(hdr + PD_HEADER_OFF_DATA, w->data_offset);
}

int perfwrite_flush(struct perfwrite *w)
{
	uint8_t hdr[PD_FILE_HEADER_SIZE];

	if (pw_start(w))
		return w->err;
	if (fflush(w->f) != 0)
		return pw_fail(w, PTD_ERR_IO, "write failed");
	for (size_t i = 0; i < w->ncpu; i++)
		if (fflush(w->cpu_f[i]) != 0)
			return pw_fail(w, PTD_ERR_IO, "write failed");
	if (!w->flushed) {
		pw_header(w, hdr);  /* data size 0: read to the end */
		if (pwrite(w->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
			return pw_fail(w, PTD_ERR_IO, "cannot write the header");
		w->flushed = 1;
	}
	return 0;
}

/* ---- features ---- */

static struct pw_buf *pw_feat(struct perfwrite *w, int feat, int reset)
{
	if (feat <= 0 || feat >= PD_FEAT_MAX)
		return NULL;
	if (reset)
		w->feat[feat].len = 0;
	w->has_feat[feat] = 1;
	return &w->feat[feat];
}

int perfwrite_feat_string(struct perfwrite *w, int feat, const char *s)
{
	struct pw_buf *b = pw_feat(w, feat, 1);
	if (!b)
		return pw_fail(w, PTD_ERR_INVAL, "bad feature number");
	return buf_perf_string(b, s) ? pw_fail(w, PTD_ERR_NOMEM, "out of memory") : 0;
}

int perfwrite_feat_nrcpus(struct perfwrite *w, uint32_t avail, uint32_t online)
{
	struct pw_buf *b = pw_feat(w, PD_FEAT_NRCPUS, 1);
	if (buf_u32(b, avail) || buf_u32(b, online))
		return pw_fail(w, PTD_ERR_NOMEM, "out of memory");
	return 0;
}

int perfwrite_feat_u64(struct perfwrite *w, int feat, uint64_t v)
{
	struct pw_buf *b = pw_feat(w, feat, 1);
	if (!b)
		return pw_fail(w, PTD_ERR_INVAL, "bad feature number");
	return buf_u64(b, v) ? pw_fail(w, PTD_ERR_NOMEM, "out of memory") : 0;
}

int perfwrite_feat_cmdline(struct perfwrite *w, int argc,
			   const char *const *argv)
{
	struct pw_buf *b = pw_feat(w, PD_FEAT_CMDLINE, 1);
	int i, r = buf_u32(b, (uint32_t)argc);
	for (i = 0; i < argc && !r; i++)
		r = buf_perf_string(b, argv[i]);
	return r ? pw_fail(w, PTD_ERR_NOMEM, "out of memory") : 0;
}

int perfwrite_feat_build_id(struct perfwrite *w, int32_t pid, uint16_t cpumode,
			    const uint8_t *build_id, size_t len,
			    const char *filename)
{
	struct pw_buf *b = pw_feat(w, PD_FEAT_BUILD_ID, 0);
	size_t nlen = strlen(filename) + 1;
	size_t olen = (nlen + PD_NAME_ALIGN - 1) / PD_NAME_ALIGN * PD_NAME_ALIGN;
	uint8_t bid[24] = { 0 };
	int r;

	if (len > 20)
		return pw_fail(w, PTD_ERR_INVAL, "build id longer than 20 bytes");
	memcpy(bid, build_id, len);
	bid[20] = (uint8_t)len;
	/* header (misc: cpumode | PERF_RECORD_MISC_BUILD_ID_SIZE), pid, id */
	r = buf_u32(b, 0);
	r |= buf_u16(b, cpumode | PD_MISC_BUILD_ID_SIZE);
	r |= buf_u16(b, (uint16_t)(8 + 4 + 24 + olen));
	r |= buf_u32(b, (uint32_t)pid);
	r |= buf_put(b, bid, sizeof(bid));
	r |= buf_put(b, filename, nlen);
	r |= buf_put(b, NULL, olen - nlen);
	return r ? pw_fail(w, PTD_ERR_NOMEM, "out of memory") : 0;
}

static void pw_auto_features(struct perfwrite *w)
{
	struct pw_buf *b;
	size_t i;

	if (w->nattrs) {
		b = pw_feat(w, PD_FEAT_EVENT_DESC, 1);
		buf_u32(b, (uint32_t)w->nattrs);
		buf_u32(b, w->attrs[0].size);
		for (i = 0; i < w->nattrs; i++) {
			buf_put(b, w->attrs[i].bytes, w->attrs[i].size);
			buf_u32(b, (uint32_t)w->attrs[i].nids);
			buf_perf_string(b, w->attrs[i].name[0] ? w->attrs[i].name : "unknown");
			buf_put(b, w->attrs[i].ids, w->attrs[i].nids * 8);
		}
	}
	/* perf record --threads keeps HEADER_AUXTRACE with no entries: perf
	 * script allows the synthesized samples' fields (-F addr) by it */
	if (w->naux || w->split_aux) {
		b = pw_feat(w, PD_FEAT_AUXTRACE, 1);
		buf_u64(b, w->naux);
		buf_put(b, w->aux_index, w->naux * 16);
	}
}

int perfwrite_close(struct perfwrite *w, char *err, size_t errlen)
{
	uint8_t hdr[PD_FILE_HEADER_SIZE] = { 0 };
	uint64_t data_size, feat_off;
	uint64_t bits[PD_FEAT_MAX / 64] = { 0 };
	size_t nfeat = 0, i;
	int r;

	if (!w)
		return PTD_ERR_INVAL;
	pw_start(w);
	data_size = w->pos - w->data_offset;
	if (w->split_dir) {
		pw_cpu_file(w, 0);   /* perf reads no directory without a data.N */
		perfwrite_feat_u64(w, PD_FEAT_DIR_FORMAT, 1);
	}
	pw_auto_features(w);
	for (i = 0; i < PD_FEAT_MAX; i++)
		if (w->has_feat[i]) {
			bits[i / 64] |= 1ull << (i % 64);
			nfeat++;
		}
	/* Feature table right after the data, then the feature bodies. */
	feat_off = w->pos + nfeat * PD_FILE_SECTION_SIZE;
	for (i = 0; i < PD_FEAT_MAX; i++) {
		uint64_t sec[2];
		if (!w->has_feat[i])
			continue;
		sec[0] = feat_off;
		sec[1] = w->feat[i].len;
		feat_off += sec[1];
		pw_write(w, sec, sizeof(sec));
	}
	for (i = 0; i < PD_FEAT_MAX; i++)
		if (w->has_feat[i])
			pw_write(w, w->feat[i].p, w->feat[i].len);

	pw_header(w, hdr);
	put_u64(hdr + PD_HEADER_OFF_DATA + 8, data_size);
	/* the event_types section stays empty */
	memcpy(hdr + PD_HEADER_OFF_FEATURES, bits, sizeof(bits));
	if (!w->err && fflush(w->f) != 0)
		pw_fail(w, PTD_ERR_IO, "write failed");
	if (!w->err && pwrite(w->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		pw_fail(w, PTD_ERR_IO, "cannot write the header");
	if (fclose(w->f) != 0)
		pw_fail(w, PTD_ERR_IO, "close failed");
	for (i = 0; i < w->ncpu; i++)
		if (fclose(w->cpu_f[i]) != 0)
			pw_fail(w, PTD_ERR_IO, "close failed");
	free(w->cpu_f);
	free(w->split_dir);
	r = w->err;
	if (r)
		util_errf(err, errlen, "%s", w->msg);
	for (i = 0; i < w->nattrs; i++)
		free(w->attrs[i].ids);
	free(w->attrs);
	for (i = 0; i < PD_FEAT_MAX; i++)
		free(w->feat[i].p);
	free(w->aux_index);
	free(w->rec.p);
	free(w);
	return r;
}
