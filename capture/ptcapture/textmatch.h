/* SPDX-License-Identifier: MIT */
/*
 * textmatch (stage: capture/ptcapture/) - ties copies of dynamic text (prog-info, fence) to the
 * KSYMBOL sideband that says where and when that text was live, and writes
 * the result to the text store.
 *
 * Everything is collected during recording and matched at the end, in time
 * order, because rings of different CPUs and the fence ring are read in no
 * particular order.  A KSYMBOL REGISTER/UNREGISTER pair at one address is
 * an "instance"; a prog-info copy belongs to the instance live at the time
 * of its PROG_LOAD record; a fence copy (made when the program is freed,
 * after UNREGISTER, when aux->id is already 0) belongs to the latest
 * instance at its address with the same length and tag that was
 * unregistered before the copy and has no fence copy yet.
 */
#ifndef PTCAP_TEXTMATCH_H
#define PTCAP_TEXTMATCH_H

#include <stddef.h>
#include <stdint.h>

struct textmatch;

/* TM_RECOPY: a later copy by prog id of a program whose image can change
 * in place (jitpoll), with bytes that differ from its previous copy. */
enum tm_source { TM_PROG_INFO, TM_FENCE, TM_RECOPY };

struct textmatch_counts {
	uint64_t instances;          /* bpf_prog_* KSYMBOL instances */
	uint64_t other_ksyms;        /* trampolines, dispatchers: range only */
	uint64_t with_prog_info, with_fence, with_both;
	uint64_t both_identical, both_differ;
	uint64_t missed;             /* bpf_prog_* instances without bytes */
	uint64_t fence_unmatched;    /* fence copies without a KSYMBOL */
	uint64_t info_unmatched;     /* prog-info images without a KSYMBOL */
	uint64_t fence_incomplete;   /* fence copies with holes (not stored) */
	uint64_t rows;
	/* Images tracked for in-place rewrites (jitpoll): */
	uint64_t tracked;            /* instances with re-copies */
	uint64_t versions;           /* rows with bytes of such instances */
	uint64_t uncertain_rows;     /* windows whose bytes are unknown */
	uint64_t uncertain_ns;       /* their total width */
	uint64_t recopy_unmatched;   /* re-copies without a KSYMBOL */
	uint64_t rows_versioned_dropped; /* added rows (kcore copies) of
				      * images written as versions instead */
};

struct textmatch *textmatch_new(void);
void textmatch_free(struct textmatch *tm);

/* A KSYMBOL record (ksym_type as in perf_event.h). */
int textmatch_ksymbol(struct textmatch *tm, uint64_t time, uint64_t addr,
		      uint32_t len, uint16_t ksym_type, int unregister,
		      const char *name);
/* A BPF_EVENT PROG_LOAD record. */
int textmatch_prog_load(struct textmatch *tm, uint64_t time, uint32_t id,
			const uint8_t tag[8]);
/* A copy of one image.  tag: the image's own tag, or NULL when unknown
 * (prog-info gives only the main program's); prog_tag/group: images with
 * the same group come from one program (fence: its free time).  img: 0 for
 * the main image.  bytes are copied. */
int textmatch_copy(struct textmatch *tm, enum tm_source src, uint64_t time,
		   uint64_t addr, uint32_t len, const uint8_t *tag,
		   uint32_t prog_id, uint64_t group, unsigned img,
		   int complete, const uint8_t *bytes);

/* Number of copies so far: the next copy gets this index. */
size_t textmatch_ncopies(const struct textmatch *tm);
/* The bytes of copy idx (a prog-info or re-copy of a tracked program) were
 * seen in place again, by a copy that started at time t.  Marks the copy's
 * instance as tracked: its rows then end where their bytes were last seen,
 * and the windows between versions become `uncertain` rows. */
void textmatch_seen(struct textmatch *tm, size_t idx, uint64_t t);

/* Streaming: from now on every copy's bytes go straight to dir/<hash>.bin
 * and a provisional row (kind "uncertain", the copy's own time window) to
 * dir/index.tsv, so memory stays bounded and a killed capture leaves a
 * readable text store; textmatch_write(dir) later rewrites the index with
 * the matched rows.  Returns 0 or -errno. */
int textmatch_spool(struct textmatch *tm, const char *dir);
/* Pushes provisional rows to the file. */
void textmatch_flush(struct textmatch *tm);

/* A row written as given after the matched ones (kcore copies: kcopy.c);
 * bytes (e->len of them, NULL: range only) are copied, e's hash is filled
 * in when written.  A row over an image re-copied while it lived (written
 * as versions and uncertain windows) is dropped and counted instead: one
 * copy would outrank the windows.  Returns 0 or -ENOMEM. */
struct textstore_entry;
int textmatch_add_row(struct textmatch *tm, const struct textstore_entry *e,
		      const uint8_t *bytes);

/* Matches and writes every row into the text store at dir. */
int textmatch_write(struct textmatch *tm, const char *dir,
		    struct textmatch_counts *counts, char *err, size_t errlen);

#endif
