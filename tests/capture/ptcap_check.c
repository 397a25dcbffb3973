/* SPDX-License-Identifier: MIT */
/*
 * ptcap_check - checks a ptcapture directory against the oracle that
 * ptcap_loadgen wrote (what the kernel said it loaded, from the loader's own
 * bpf_obj_get_info_by_fd while it held each program).
 *
 * For every JIT image the loader saw (main programs and subprograms):
 *  - perf.data holds its KSYMBOL REGISTER (same address and length, inside
 *    the loader's bpf_prog_load() time window);
 *  - the text store holds a fence copy at that address whose bytes equal the
 *    oracle's, whose valid_from lies inside the load window and whose
 *    valid_to is set and later; main images carry the oracle's tag and id;
 *  - any prog-info copy of it is byte-identical too.
 * --lossy (tiny rings): LOST records are allowed, so presence is not
 * required, but every KSYMBOL and every copy that is there must be right,
 * and every KSYMBOL REGISTER that is missing must be covered by a reported
 * loss: a LOST record of a KSYMBOL-carrying ring whose loss window (from
 * the ring's previous record to the LOST record) overlaps the program's
 * load window, each LOST record covering at most its count.  When the
 * loader was pinned (oracle line "cpu N"), only the rings of that CPU count.  A copy whose
 * validity has no end (its UNREGISTER missing) needs a LOST record after
 * its load.  Exit 3 when every loss was reported but no copy is left to
 * check (a machine so busy that the tiny rings lost every KSYMBOL).
 *
 * --killed (ptcapture was SIGKILLed): perf.data must read (its header
 * has data size 0) with KSYMBOLs in it, and every text-store row present
 * (provisional rows) must hold the oracle's bytes for its address.
 *
 * Usage: ptcap_check [--lossy|--killed] CAPDIR ORACLE
 */
#include "ptdecode.h"
#include "perfdata.h"
#include "textstore.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct oprog {
	uint32_t id;
	char tag[17];
	uint64_t t0, t1, t2;
};

struct oimg {
	int prog;
	unsigned idx;
	uint64_t addr;
	uint32_t len;
	uint8_t *bytes;
	int ksym_seen, fence_ok, info_ok;
};

/* A loss window of one ring: records lost in (from, to], at most cap. */
struct lwin {
	uint64_t from, to, cap;
	uint32_t cpu;
};

static int oracle_cpu = -1;  /* the loader's CPU, if it was pinned */

static struct lwin *wins;
static size_t nwins;

/* Per ring (sample id): time of its last record so far. */
struct ring {
	uint64_t id, last;
	uint32_t cpu;
};

static struct oprog *progs;
static struct oimg *imgs;
static size_t nprogs, nimgs;

static int load_oracle(const char *path)
{
	FILE *f = fopen(path, "r");
	static char line[1 << 18];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int idx;
		unsigned i, len, n;
		uint64_t addr;

		if (!strncmp(line, "cpu ", 4)) {
			if (sscanf(line, "cpu %d", &oracle_cpu) != 1 || oracle_cpu < 0)
				return -1;
		} else if (!strncmp(line, "prog ", 5)) {
			struct oprog p;

			if (sscanf(line, "prog %d %u %16s %" SCNu64 " %" SCNu64 " %" SCNu64 " %u",
				   &idx, &p.id, p.tag, &p.t0, &p.t1, &p.t2, &n) != 7 || idx != (int)nprogs)
				return -1;
			progs = realloc(progs, (nprogs + 1) * sizeof(*progs));
			progs[nprogs++] = p;
		} else if (!strncmp(line, "img ", 4)) {
			int off = 0;
			struct oimg m = { 0 };

			if (sscanf(line, "img %d %u %" SCNx64 " %u %n", &idx, &i, &addr, &len, &off) != 4 ||
			    idx != (int)nprogs - 1 || strlen(line + off) < 2 * (size_t)len)
				return -1;
			m.prog = idx;
			m.idx = i;
			m.addr = addr;
			m.len = len;
			m.bytes = malloc(len);
			for (unsigned b = 0; b < len; b++) {
				unsigned v;

				sscanf(line + off + 2 * b, "%2x", &v);
				m.bytes[b] = (uint8_t)v;
			}
			imgs = realloc(imgs, (nimgs + 1) * sizeof(*imgs));
			imgs[nimgs++] = m;
		}
	}
	fclose(f);
	return nprogs ? 0 : -1;
}

/* The oracle image live at addr at time t, or NULL. */
/* The window ring id's last record opened and rec closes. */
static void add_window(struct ring **rings, size_t *nrings, uint64_t id, uint32_t cpu,
		       uint64_t t, uint64_t n)
{
	size_t i;

	for (i = 0; i < *nrings && (*rings)[i].id != id; i++)
		;
	if (i == *nrings) {
		*rings = realloc(*rings, (*nrings + 1) * sizeof(**rings));
		(*rings)[(*nrings)++] = (struct ring){ id, 0, cpu };
	}
	if (n) {
		wins = realloc(wins, (nwins + 1) * sizeof(*wins));
		wins[nwins++] = (struct lwin){ (*rings)[i].last, t, n, (*rings)[i].cpu };
	}
	(*rings)[i].last = t;
}

/* Charges one lost record in [t0, t1] to the earliest window that can
 * hold it; 0 when one did. */
static int cover(uint64_t t0, uint64_t t1)
{
	struct lwin *best = NULL;

	for (size_t i = 0; i < nwins; i++)
		if (wins[i].cap && wins[i].from <= t1 && wins[i].to >= t0 &&
		    (oracle_cpu < 0 || wins[i].cpu == (uint32_t)oracle_cpu) &&
		    (!best || wins[i].to < best->to))
			best = &wins[i];
	if (!best)
		return -1;
	best->cap--;
	return 0;
}

static struct oimg *find_img(uint64_t addr, uint64_t t_reg)
{
	for (size_t i = 0; i < nimgs; i++) {
		const struct oprog *p = &progs[imgs[i].prog];

		if (imgs[i].addr == addr && t_reg >= p->t0 && t_reg <= p->t1)
			return &imgs[i];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int killed = argc > 1 && !strcmp(argv[1], "--killed");
	int lossy = argc > 1 && (!strcmp(argv[1], "--lossy") || killed);
	uint64_t killed_ok = 0;
	const char *cap, *oracle;
	char path[4096], err[512];
	struct perfdata *pd;
	struct perfdata_record rec;
	struct textstore *ts;
	uint64_t lost = 0, bad_ksym = 0, wrong = 0, bad_window = 0, bad_tag = 0;
	uint64_t fence_ok = 0, info_ok = 0, both = 0, missing = 0, ksyms = 0, subs = 0;
	uint64_t lost_ksym = 0, uncovered = 0, open_end = 0, no_fence_with_ksym = 0;
	struct ring *rings = NULL;
	size_t nrings = 0;
	int rc;

	if (argc != 3 + lossy) {
		fprintf(stderr, "usage: ptcap_check [--lossy|--killed] CAPDIR ORACLE\n");
		return 2;
	}
	cap = argv[1 + lossy];
	oracle = argv[2 + lossy];
	if (load_oracle(oracle)) {
		fprintf(stderr, "ptcap_check: cannot read oracle %s\n", oracle);
		return 1;
	}

	/* perf.data: every KSYMBOL REGISTER at an oracle address in its load
	 * window must have the oracle's length. */
	snprintf(path, sizeof(path), "%s/perf.data", cap);
	if (perfdata_open(path, &pd, err, sizeof(err))) {
		fprintf(stderr, "ptcap_check: %s\n", err);
		return 1;
	}
	while ((rc = perfdata_next(pd, &rec)) == 0) {
		struct perfdata_ksymbol k;
		struct oimg *m;

		/* Rings of the attr with ksymbol=1 (bit 29 of the flags word). */
		if (rec.attr && (rec.attr->flags >> 29 & 1) && rec.sid.has_id && rec.sid.has_time &&
		    rec.sid.has_cpu) {
			struct perfdata_lost l;
			uint64_t n = 0;

			if (rec.type == PD_RECORD_LOST && !perfdata_parse_lost(&rec, &l))
				n = l.lost;
			add_window(&rings, &nrings, rec.sid.id, rec.sid.cpu, rec.sid.time, n);
		}
		if (rec.type == PD_RECORD_LOST) {
			struct perfdata_lost l;

			if (!perfdata_parse_lost(&rec, &l))
				lost += l.lost;
		}
		if (rec.type != PD_RECORD_KSYMBOL)
			continue;
		if (perfdata_parse_ksymbol(&rec, &k) || !rec.sid.has_time) {
			bad_ksym++;
			continue;
		}
		if (k.flags & PD_RECORD_KSYMBOL_FLAGS_UNREGISTER ||
		    !(m = find_img(k.addr, rec.sid.time)))
			continue;
		if (k.len != m->len || strncmp(k.name, "bpf_prog_", 9)) {
			bad_ksym++;
			continue;
		}
		if (!m->ksym_seen++)
			ksyms++;
	}
	if (rc != PTD_ERR_END) {
		fprintf(stderr, "ptcap_check: perf.data: %s\n", perfdata_errmsg(pd));
		return 1;
	}
	perfdata_close(pd);

	snprintf(path, sizeof(path), "%s/text", cap);
	if (textstore_open(path, &ts, err, sizeof(err))) {
		fprintf(stderr, "ptcap_check: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < textstore_count(ts); i++) {
		const struct textstore_entry *e = textstore_get(ts, i);
		const uint8_t *data;
		struct oimg *m;
		const struct oprog *p;
		int is_fence = !strcmp(e->source, "fence");

		if (!strcmp(e->hash, "-") || (!is_fence && strcmp(e->source, "prog-info")))
			continue;
		if (killed) {
			/* provisional rows: no KSYMBOL window; match by address */
			/* Judge only rows that name a generator program: by id
			 * (prog-info) or by tag (fence main images); the machine
			 * may run other BPF loaders at the same addresses. */
			const struct oimg *m = NULL;
			int ok;

			for (size_t k = 0; k < nimgs && !m; k++) {
				const struct oprog *q = &progs[imgs[k].prog];

				if (imgs[k].addr == e->start && imgs[k].len == e->len &&
				    (is_fence ? imgs[k].idx == 0 && !strcmp(e->tag, q->tag)
					      : e->prog_id == q->id))
					m = &imgs[k];
			}
			if (!m)
				continue;
			ok = !textstore_bytes(ts, i, &data, err, sizeof(err)) &&
			     !memcmp(m->bytes, data, e->len);
			if (ok)
				killed_ok++;
			else
				wrong++;
			continue;
		}
		if (!(m = find_img(e->start, e->valid_from)))
			continue;
		p = &progs[m->prog];
		if (textstore_bytes(ts, i, &data, err, sizeof(err)) || e->len != m->len ||
		    memcmp(data, m->bytes, m->len)) {
			fprintf(stderr, "ptcap_check: wrong bytes: row %zu at %#" PRIx64 " (%s)\n",
				i, e->start, e->source);
			wrong++;
			continue;
		}
		if (e->valid_to == TEXTSTORE_OPEN_END && lossy) {
			/* its UNREGISTER is missing: needs a loss after the load */
			int found = 0;

			for (size_t w = 0; w < nwins && !found; w++)
				found = wins[w].to >= p->t1;
			if (!found) {
				fprintf(stderr, "ptcap_check: row %zu at %#" PRIx64 " (%s): valid "
					"without end, and no LOST record after its load\n",
					i, e->start, e->source);
				bad_window++;
				continue;
			}
			open_end++;
		} else if (e->valid_to == TEXTSTORE_OPEN_END || e->valid_to < p->t1) {
			bad_window++;
			continue;
		}
		if (e->prog_id != p->id || (m->idx == 0 && strcmp(e->tag, p->tag)) ||
		    strcmp(e->kind, m->idx ? "bpf-subprog" : "bpf")) {
			fprintf(stderr, "ptcap_check: row %zu: kind %s tag %s id %u, expected %s %u\n",
				i, e->kind, e->tag, e->prog_id, p->tag, p->id);
			bad_tag++;
			continue;
		}
		if (is_fence)
			m->fence_ok++;
		else
			m->info_ok++;
	}
	textstore_close(ts);
	for (size_t i = 0; i < nimgs; i++) {
		subs += imgs[i].idx > 0;
		fence_ok += imgs[i].fence_ok > 0;
		info_ok += imgs[i].info_ok > 0;
		both += imgs[i].fence_ok && imgs[i].info_ok;
		if (!imgs[i].fence_ok)
			missing++;
		if (!imgs[i].fence_ok && imgs[i].ksym_seen)
			no_fence_with_ksym++;
		if (!imgs[i].ksym_seen && lossy && !killed) {
			const struct oprog *p = &progs[imgs[i].prog];

			lost_ksym++;
			if (cover(p->t0, p->t1)) {
				if (!uncovered++)
					fprintf(stderr, "ptcap_check: KSYMBOL REGISTER of program %d "
						"image %u (%#" PRIx64 ", loaded %" PRIu64 "..%" PRIu64
						") missing, and no LOST record covers it\n",
						imgs[i].prog, imgs[i].idx, imgs[i].addr, p->t0, p->t1);
			}
		}
	}
	printf("ptcap_check: %zu programs, %zu images (%" PRIu64 " subprograms): "
	       "KSYMBOL REGISTER found %" PRIu64 ", fence copies correct %" PRIu64
	       ", prog-info copies correct %" PRIu64 " (identical to fence: %" PRIu64 "), "
	       "no fence copy %" PRIu64 ", wrong bytes %" PRIu64 ", bad window %" PRIu64
	       ", bad tag/id/kind %" PRIu64 ", bad KSYMBOL %" PRIu64 ", LOST events %" PRIu64 "\n",
	       nprogs, nimgs, subs, ksyms, fence_ok, info_ok, both, missing, wrong, bad_window,
	       bad_tag, bad_ksym, lost);
	if (lossy && !killed)
		printf("ptcap_check: lossy: %" PRIu64 " KSYMBOL REGISTER missing, %" PRIu64
		       " of them not covered by a LOST record (%zu loss windows); %" PRIu64
		       " copies valid without end (UNREGISTER lost); %" PRIu64 " images with a "
		       "KSYMBOL but no fence copy; loader CPU %d\n", lost_ksym, uncovered, nwins,
		       open_end, no_fence_with_ksym, oracle_cpu);
	if (killed)
		printf("ptcap_check: killed capture: %" PRIu64 " provisional text rows with the "
		       "oracle's bytes\n", killed_ok);
	if (wrong || bad_window || bad_tag || bad_ksym)
		return 1;
	free(rings);
	free(wins);
	if (killed)
		return killed_ok > 0 && ksyms > 0 ? 0 : 1;
	if (lossy && uncovered)
		return 1;
	if (lossy)  /* 3: every loss reported, but nothing left to check */
		return fence_ok + info_ok > 0 ? 0 : 3;
	/* LOST in the switch ring is harmless here; lost KSYMBOLs show above. */
	return missing || ksyms != nimgs ? 1 : 0;
}
