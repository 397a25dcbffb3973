/* SPDX-License-Identifier: MIT */
/*
 * test_jitdump MINIJIT WORKDIR: runs minijit, then reads its jit-PID.dump
 * and perf-PID.map with dyntext and checks the result against what minijit
 * recorded itself (minijit-PID.oracle): code bytes, addresses, names,
 * times, source lines, and the choice between the two versions of the
 * re-JITted function by time.
 */
#include "dyntext.h"
#include "imgstore.h"
#include "symtab.h"
#include "ptdecode.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct oload {
	uint64_t index, addr, size, ts;
	char name[64];
	uint8_t bytes[256];
};
struct odebug {
	uint64_t index, addr;
	unsigned line;
	char file[64];
};
struct orun {
	uint64_t t0, t1;
};

static struct oload loads[16];
static struct odebug dbg[16];
static struct orun runs[4];
static int nloads, ndbg, nruns, fails, checks;

#define CHECK(cond, ...) do { checks++; if (!(cond)) { fails++; \
	printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
	printf("\n"); } } while (0)

static int read_oracle(const char *path, int *pid)
{
	char line[4096], hex[1024];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "pid %d", pid) == 1)
			continue;
		if (!strncmp(line, "load ", 5) && nloads < 16) {
			struct oload *l = &loads[nloads++];

			if (sscanf(line, "load %" SCNu64 " %" SCNx64 " %" SCNu64 " %" SCNu64
				   " %63s %1023s", &l->index, &l->addr, &l->size, &l->ts,
				   l->name, hex) != 6 || strlen(hex) != 2 * l->size ||
			    l->size > sizeof(l->bytes))
				return -1;
			for (uint64_t i = 0; i < l->size; i++) {
				unsigned v;

				sscanf(hex + 2 * i, "%2x", &v);
				l->bytes[i] = (uint8_t)v;
			}
		} else if (!strncmp(line, "debug ", 6) && ndbg < 16) {
			struct odebug *d = &dbg[ndbg++];

			if (sscanf(line, "debug %" SCNu64 " %" SCNx64 " %u %63s", &d->index,
				   &d->addr, &d->line, d->file) != 4)
				return -1;
		} else if (!strncmp(line, "run ", 4) && nruns < 4) {
			char name[64];
			int a, r;

			if (sscanf(line, "run %63s %d %d %" SCNu64 " %" SCNu64, name, &a, &r,
				   &runs[nruns].t0, &runs[nruns].t1) != 5)
				return -1;
			nruns++;
		}
	}
	fclose(f);
	return 0;
}

/* The load valid at time t at addr according to the oracle: the latest one
 * covering addr with ts <= t. */
static const struct oload *oracle_at(uint64_t addr, uint64_t t)
{
	const struct oload *best = NULL;

	for (int i = 0; i < nloads; i++)
		if (addr - loads[i].addr < loads[i].size && loads[i].ts <= t &&
		    (!best || loads[i].ts >= best->ts))
			best = &loads[i];
	return best;
}

int main(int argc, char **argv)
{
	char dump[4096], map[4096], orc[4096], err[512], file[256];
	struct imgstore *st;
	struct symtab *syms;
	struct dyntext *dt;
	struct dyntext_sym sym;
	struct imgstore_hit hit;
	uint8_t buf[256];
	unsigned line;
	int pid = -1, status, rc;
	pid_t child;

	if (argc != 3) {
		fprintf(stderr, "usage: test_jitdump MINIJIT WORKDIR\n");
		return 2;
	}
	mkdir(argv[2], 0700);
	child = fork();
	if (child == 0) {
		execl(argv[1], argv[1], "-n", "10", argv[2], (char *)NULL);
		_exit(127);
	}
	if (child < 0 || waitpid(child, &status, 0) != child ||
	    !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("FAIL: minijit did not run cleanly (status %#x)\n", status);
		return 1;
	}
	snprintf(dump, sizeof(dump), "%s/jit-%d.dump", argv[2], (int)child);
	snprintf(map, sizeof(map), "%s/perf-%d.map", argv[2], (int)child);
	snprintf(orc, sizeof(orc), "%s/minijit-%d.oracle", argv[2], (int)child);
	if (read_oracle(orc, &pid) || pid != child || nloads != 3 || ndbg != 4 ||
	    nruns != 2) {
		printf("FAIL: oracle %s unreadable or unexpected (%d loads)\n", orc, nloads);
		return 1;
	}
	const struct oload *step1 = &loads[0], *loop = &loads[1], *step2 = &loads[2];

	st = imgstore_new();
	syms = symtab_new();
	dt = dyntext_new();
	rc = dyntext_load_jitdump(dt, dump, st, syms, NULL, err, sizeof(err));
	CHECK(rc == 3, "load_jitdump = %d (%s), want 3 loads", rc, err);

	/* every load: bytes, range and window at its own time */
	for (int i = 0; i < nloads; i++) {
		const struct oload *l = &loads[i];

		memset(&hit, 0, sizeof(hit));
		rc = imgstore_read(st, pid, l->addr, l->ts, buf, l->size, &hit);
		CHECK(rc == (int)l->size && !memcmp(buf, l->bytes, l->size),
		      "load %d (%s): read at its time gave %d, bytes %s", i, l->name, rc,
		      rc == (int)l->size && !memcmp(buf, l->bytes, l->size) ? "equal" : "differ");
		CHECK(hit.start == l->addr && hit.len == l->size && hit.valid_from == l->ts &&
		      !strcmp(hit.name ? hit.name : "", l->name),
		      "load %d: version [%#" PRIx64 ", +%" PRIu64 ") from %" PRIu64 " %s",
		      i, hit.start, hit.len, hit.valid_from, hit.name);
		rc = dyntext_symbol(dt, pid, l->addr + l->size - 1, l->ts, &sym);
		CHECK(rc == 0 && !strcmp(sym.name, l->name) && sym.code_index == l->index &&
		      sym.kind == DYNTEXT_JIT, "load %d: symbol %d %s", i, rc,
		      rc ? "-" : sym.name);
	}
	/* the first version of jf_step ends when the second is loaded */
	imgstore_lookup(st, pid, step1->addr, step1->ts, &hit);
	CHECK(hit.valid_to == step2->ts, "jf_step v1 valid to %" PRIu64 ", want %" PRIu64,
	      hit.valid_to, step2->ts);
	imgstore_lookup(st, pid, step2->addr, step2->ts, &hit);
	CHECK(hit.valid_to == IMGSTORE_FOREVER, "jf_step v2 should be valid to the end");
	/* before the first load: nothing */
	rc = imgstore_read(st, pid, step1->addr, step1->ts - 1, buf, 1, NULL);
	CHECK(rc == IMGSTORE_NOT_MAPPED, "read before the first load gave %d", rc);

	/* each run executed the version valid then, with the instructions at
	 * every byte offset of jf_step coming from that version */
	for (int r = 0; r < nruns; r++) {
		uint64_t t = runs[r].t0 + (runs[r].t1 - runs[r].t0) / 2;
		const struct oload *want = r == 0 ? step1 : step2;

		CHECK(oracle_at(step1->addr, t) == want, "oracle inconsistent");
		for (uint64_t off = 0; off < want->size; off++) {
			rc = imgstore_read(st, pid, want->addr + off, t, buf, 1, NULL);
			CHECK(rc == 1 && buf[0] == want->bytes[off],
			      "run %d: byte %" PRIu64 " of jf_step: rc %d", r, off, rc);
		}
		rc = dyntext_symbol(dt, pid, step1->addr, t, &sym);
		CHECK(rc == 0 && !strcmp(sym.name, want->name),
		      "run %d: symbol at jf_step is %s, want %s", r, rc ? "-" : sym.name,
		      want->name);
		rc = imgstore_read(st, pid, loop->addr, t, buf, loop->size, NULL);
		CHECK(rc == (int)loop->size && !memcmp(buf, loop->bytes, loop->size),
		      "run %d: jf_loop bytes", r);
	}
	/* source lines: every byte of jf_step v1 during run 1; none in v2 */
	for (uint64_t a = step1->addr; a < step1->addr + step1->size; a++) {
		const struct odebug *want = NULL;

		for (int i = 0; i < ndbg; i++)
			if (dbg[i].addr <= a && (!want || dbg[i].addr >= want->addr))
				want = &dbg[i];
		rc = dyntext_srcline(dt, pid, a, runs[0].t1, file, sizeof(file), &line);
		CHECK(want && rc == 0 && line == want->line && !strcmp(file, want->file),
		      "srcline %#" PRIx64 ": rc %d %s:%u, want %s:%u", a, rc,
		      rc ? "-" : file, rc ? 0 : line, want ? want->file : "-",
		      want ? want->line : 0);
	}
	rc = dyntext_srcline(dt, pid, step2->addr, runs[1].t1, file, sizeof(file), &line);
	CHECK(rc == PTD_ERR_NO_IMAGE, "jf_step v2 has no debug info, srcline gave %d", rc);
	/* no time: jf_step has two versions, jf_loop one */
	rc = dyntext_symbol(dt, pid, step1->addr, IMGSTORE_TIME_UNKNOWN, &sym);
	CHECK(rc == IMGSTORE_AMBIGUOUS, "jf_step without time: %d, want ambiguous", rc);
	rc = dyntext_symbol(dt, pid, loop->addr, IMGSTORE_TIME_UNKNOWN, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "jf_loop"), "jf_loop without time: %d", rc);
	/* the time-less symbol table has the names too */
	{
		const char *name;
		uint64_t off;

		rc = symtab_lookup(syms, loop->addr + 5, &name, &off);
		CHECK(rc == 0 && !strcmp(name, "jf_loop") && off == 5, "symtab jf_loop");
	}
	/* perf map after the jitdump: names, but no "missing" over the code */
	rc = dyntext_load_perfmap(dt, map, -1, st, syms, err, sizeof(err));
	CHECK(rc == 3, "perfmap after jitdump: %d (%s)", rc, err);
	rc = imgstore_read(st, pid, loop->addr, runs[0].t1, buf, loop->size, NULL);
	CHECK(rc == (int)loop->size, "jf_loop still decodes after the perf map: %d", rc);
	imgstore_free(st);
	symtab_free(syms);
	dyntext_free(dt);

	/* perf map alone: names and a gap saying why */
	st = imgstore_new();
	dt = dyntext_new();
	rc = dyntext_load_perfmap(dt, map, -1, st, NULL, err, sizeof(err));
	CHECK(rc == 3, "perfmap alone: %d (%s)", rc, err);
	rc = imgstore_read(st, pid, loop->addr, runs[0].t1, buf, 1, NULL);
	CHECK(rc == IMGSTORE_NOT_CAPTURED &&
	      strstr(imgstore_last_error(st), "perf-PID.map gives names but no code"),
	      "perfmap alone: read gave %d (%s)", rc, imgstore_last_error(st));
	rc = dyntext_symbol(dt, pid, loop->addr + 3, runs[0].t1, &sym);
	CHECK(rc == 0 && !strcmp(sym.name, "jf_loop") && sym.kind == DYNTEXT_PERFMAP,
	      "perfmap symbol %d", rc);
	imgstore_free(st);
	dyntext_free(dt);

	printf("%d checks, %d failed (jf_step %#" PRIx64 " v1 %" PRIu64 " bytes at %" PRIu64
	       ", v2 %" PRIu64 " bytes at %" PRIu64 "; jf_loop %#" PRIx64 " %" PRIu64 " bytes)\n",
	       checks, fails, step1->addr, step1->size, step1->ts, step2->size, step2->ts,
	       loop->addr, loop->size);
	return fails ? 1 : 0;
}
