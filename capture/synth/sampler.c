/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "sampler.h"
#include "perf_abi.h"
#include "ptdecode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>
#ifdef PTSYNTH_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif

#define MAX_STACK PD_MAX_STACK_DEPTH
#define MAX_THREADS 64

/* The simulated interrupt's kernel frames (no real kernel code). */
static const uint64_t kernel_frames[] = {
	0xffffffff81a00100ull,  /* the interrupted kernel code */
	0xffffffff81a00200ull,  /* its caller */
};

struct sthread {
	pid_t tid;
	uint64_t *ret;          /* true return addresses, outermost first */
	size_t n, cap;
	uint64_t cookie;        /* pending deferred user callchain, 0: none */
};

struct sampler {
	struct perfwrite *pw;
	uint64_t every, count, next_cookie;
	enum sampler_unwind how;
	pid_t pid;
	int memfd;
	FILE *truth;
	struct sthread t[MAX_THREADS];
	int nt;
	uint64_t nsamples, ndeferred, nframes_unwound;
};

int sampler_have_dwarf(void)
{
#ifdef PTSYNTH_HAVE_LIBDW
	return 1;
#else
	return 0;
#endif
}

struct sampler *sampler_new(struct perfwrite *pw, uint64_t every,
			    enum sampler_unwind how, pid_t pid, int memfd, FILE *truth)
{
	struct sampler *sm = calloc(1, sizeof(*sm));

	if (!sm)
		return NULL;
	sm->how = how;
	sm->pid = pid;
	sm->pw = pw;
	sm->every = every;
	sm->memfd = memfd;
	sm->truth = truth;
	sm->next_cookie = 1;
	return sm;
}

static struct sthread *thread_of(struct sampler *sm, pid_t tid)
{
	for (int i = 0; i < sm->nt; i++)
		if (sm->t[i].tid == tid)
			return &sm->t[i];
	if (sm->nt >= MAX_THREADS)
		return NULL;
	sm->t[sm->nt].tid = tid;
	return &sm->t[sm->nt++];
}

int sampler_insn(struct sampler *sm, pid_t tid, uint64_t ip,
		 const struct ptgen_insn *in, uint64_t next)
{
	struct sthread *t = thread_of(sm, tid);
	int call = in->cls == PTG_CALL_INDIRECT ||
		   (in->cls == PTG_CALL_DIRECT && in->target != ip + in->len);

	if (!t)
		return 0;
	if (call) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 64;
			uint64_t *r = realloc(t->ret, cap * sizeof(*r));

			if (!r)
				return 0;
			t->ret = r;
			t->cap = cap;
		}
		t->ret[t->n++] = ip + in->len;
	} else if (in->cls == PTG_RET && next) {
		/* pop down to the frame returned into (none: entered before) */
		for (size_t k = t->n; k-- > 0;)
			if (t->ret[k] == next) {
				t->n = k;
				break;
			}
	}
	return ++sm->count % sm->every == 0;
}

static void put_stack(FILE *f, uint64_t ip, const struct sthread *t)
{
	fprintf(f, " %#llx", (unsigned long long)ip);
	for (size_t k = t->n; k-- > 0;)
		fprintf(f, " %#llx", (unsigned long long)t->ret[k]);
}

/* header, then the sample_type's fields (IDENTIFIER, IP, TID, TIME, CPU,
 * CALLCHAIN) */
int sampler_sample(struct sampler *sm, const struct perfwrite_sid *sid, uint64_t ip)
{
	struct sthread *t = thread_of(sm, (pid_t)sid->tid);
	uint64_t rec[16];
	size_t n = 0, k;

	if (!t)
		return PTD_ERR_LIMIT;
	if (!t->cookie)
		t->cookie = sm->next_cookie++;
	rec[n++] = 0;   /* header, below */
	rec[n++] = sid->id;
	rec[n++] = kernel_frames[0];
	rec[n++] = (uint64_t)sid->tid << 32 | sid->pid;
	rec[n++] = sid->time;
	rec[n++] = sid->cpu;
	k = n++;
	rec[n++] = PD_CONTEXT_KERNEL;
	for (size_t i = 0; i < sizeof(kernel_frames) / sizeof(kernel_frames[0]); i++)
		rec[n++] = kernel_frames[i];
	rec[n++] = PD_CONTEXT_USER_DEFERRED;
	rec[n++] = t->cookie;
	rec[k] = n - k - 1;
	rec[0] = PD_RECORD_SAMPLE | (uint64_t)PD_MISC_KERNEL << 32 |
		 (uint64_t)(n * 8) << 48;
	sm->nsamples++;
	fprintf(sm->truth, "sample %llu %u %llu %llu:", (unsigned long long)sid->time,
		sid->tid, (unsigned long long)t->cookie, (unsigned long long)sm->count);
	put_stack(sm->truth, ip, t);
	fputc('\n', sm->truth);
	return perfwrite_record(sm->pw, rec, n * 8) < 0 ? PTD_ERR_IO : 0;
}

/* The kernel's frame-pointer walk (perf_callchain_user): the IP, then
 * return address and next frame from each frame record [rbp, rbp+16)
 * until one cannot be read. */
static size_t unwind_fp(struct sampler *sm, pid_t tid, uint64_t *out)
{
	struct user_regs_struct r;
	uint64_t fp, fr[2];
	size_t n = 0;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return 0;
	out[n++] = r.rip;
	for (fp = r.rbp; n < MAX_STACK; fp = fr[0]) {
		if (pread(sm->memfd, fr, sizeof(fr), (off_t)fp) != (ssize_t)sizeof(fr))
			break;
		out[n++] = fr[1];
	}
	return n;
}

#ifdef PTSYNTH_HAVE_LIBDW
struct dw_frames {
	uint64_t *out;
	size_t n;
};

/* The IP, then each caller's return address (libdw's pc of a frame that
 * is no activation is its return address, as the kernel stores it). */
static int dw_frame(Dwfl_Frame *state, void *arg)
{
	struct dw_frames *f = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL) || f->n >= MAX_STACK)
		return DWARF_CB_ABORT;
	f->out[f->n++] = pc;
	return DWARF_CB_OK;
}

/* libdw's CFI unwinder (.eh_frame, .debug_frame) on the stopped thread,
 * the process's mappings read now. */
static size_t unwind_dwarf(struct sampler *sm, pid_t tid, uint64_t *out)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
	};
	struct dw_frames f = { out, 0 };
	Dwfl *d = dwfl_begin(&cb);

	if (!d)
		return 0;
	if (dwfl_linux_proc_report(d, sm->pid) == 0 &&
	    dwfl_report_end(d, NULL, NULL) == 0 &&
	    dwfl_linux_proc_attach(d, sm->pid, true) == 0)
		dwfl_getthread_frames(d, tid, dw_frame, &f);
	dwfl_end(d);
	return f.n;
}
#endif

static size_t unwind(struct sampler *sm, pid_t tid, uint64_t *out)
{
#ifdef PTSYNTH_HAVE_LIBDW
	if (sm->how == SAMPLER_UNWIND_DWARF)
		return unwind_dwarf(sm, tid, out);
#endif
	return unwind_fp(sm, tid, out);
}

int sampler_to_user(struct sampler *sm, const struct perfwrite_sid *sid)
{
	struct sthread *t = thread_of(sm, (pid_t)sid->tid);
	uint64_t user[MAX_STACK];
	size_t n;
	int rc;

	if (!t || !t->cookie)
		return 0;
	n = unwind(sm, (pid_t)sid->tid, user);
	fprintf(sm->truth, "deferred %llu %u %llu: unwound", (unsigned long long)sid->time,
		sid->tid, (unsigned long long)t->cookie);
	for (size_t i = 0; i < n; i++)
		fprintf(sm->truth, " %#llx", (unsigned long long)user[i]);
	fputs(" | true", sm->truth);
	put_stack(sm->truth, n ? user[0] : 0, t);
	fputc('\n', sm->truth);
	sm->ndeferred++;
	sm->nframes_unwound += n;
	rc = perfwrite_callchain_deferred(sm->pw, sid, t->cookie, user, n);
	t->cookie = 0;
	return rc;
}

void sampler_free(struct sampler *sm, FILE *info)
{
	uint64_t left = 0;

	if (!sm)
		return;
	for (int i = 0; i < sm->nt; i++) {
		left += sm->t[i].cookie != 0;
		free(sm->t[i].ret);
	}
	if (info)
		fprintf(info, "samples=%llu\ndeferred_callchains=%llu\n"
			"deferred_never_written=%llu\n", (unsigned long long)sm->nsamples,
			(unsigned long long)sm->ndeferred, (unsigned long long)left);
	if (sm->truth)
		fclose(sm->truth);
	free(sm);
}
