/* SPDX-License-Identifier: MIT */
/*
 * check_bpf CAPDIR ORACLE: reads the BPF metadata of a ptcapture capture
 * with dyntext and checks it against what bpf_loader wrote while each
 * program was loaded (kallsyms names, bpftool's function names and source
 * line annotations, the kernel's JIT bytes), at a time inside each
 * program's life, including addresses that a later program reused.
 * A second, semantic check: every call from a main image into its
 * subprogram (found by disassembling the JIT bytes with capstone) must map
 * to a source line that calls that function.
 */
#include "dyntext.h"
#include "imgstore.h"
#include "ptdecode.h"

#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 16

struct img {
	uint64_t addr;
	unsigned len;
	char name[128], func[64];
	uint8_t bytes[4096];
};
struct line {
	uint64_t addr;
	char file[256];
	unsigned line, col;
};
struct prog {
	unsigned id;
	uint64_t t0, t1;
	struct img img[4];
	int nimg;
	struct line lines[256];
	int nlines;
};

static struct prog progs[MAXP];
static int nprogs, fails, checks;

#define CHECK(cond, ...) do { checks++; if (!(cond)) { fails++; \
	if (fails < 30) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } } while (0)

static int read_oracle(const char *path)
{
	static char line[32768];
	char hex[16384];
	FILE *f = fopen(path, "r");
	int it;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct prog *p;

		if (sscanf(line, "prog %d", &it) == 1) {
			if (it != nprogs || it >= MAXP)
				return -1;
			p = &progs[nprogs++];
			if (sscanf(line, "prog %d %u %*s %" SCNu64, &it, &p->id, &p->t0) != 3)
				return -1;
			continue;
		}
		if (!nprogs)
			continue;
		p = &progs[nprogs - 1];
		if (!strncmp(line, "img ", 4) && p->nimg < 4) {
			struct img *m = &p->img[p->nimg++];
			unsigned i;

			if (sscanf(line, "img %d %u %" SCNx64 " %u %127s %63s %16383s", &it, &i,
				   &m->addr, &m->len, m->name, m->func, hex) != 7 ||
			    m->len > sizeof(m->bytes) || strlen(hex) != 2 * m->len)
				return -1;
			for (unsigned k = 0; k < m->len; k++) {
				unsigned v;

				sscanf(hex + 2 * k, "%2x", &v);
				m->bytes[k] = (uint8_t)v;
			}
		} else if (!strncmp(line, "line ", 5) && p->nlines < 256) {
			struct line *l = &p->lines[p->nlines];

			if (sscanf(line, "line %d %" SCNx64 " %255s %u %u", &it, &l->addr, l->file,
				   &l->line, &l->col) != 5)
				return -1;
			/* several records at one address: the last one holds */
			if (p->nlines && p->lines[p->nlines - 1].addr == l->addr)
				p->lines[p->nlines - 1] = *l;
			else
				p->nlines++;
		} else if (!strncmp(line, "closing ", 8)) {
			if (sscanf(line, "closing %d %" SCNu64, &it, &p->t1) != 2)
				return -1;
		}
	}
	fclose(f);
	return nprogs ? 0 : -1;
}

static const struct img *img_of(const struct prog *p, uint64_t a)
{
	for (int i = 0; i < p->nimg; i++)
		if (a - p->img[i].addr < p->img[i].len)
			return &p->img[i];
	return NULL;
}

/* The oracle's line for a: the entry with the greatest address <= a in
 * the same image. */
static const struct line *oracle_line(const struct prog *p, uint64_t a)
{
	const struct img *m = img_of(p, a);
	const struct line *best = NULL;

	for (int i = 0; m && i < p->nlines; i++)
		if (p->lines[i].addr <= a && p->lines[i].addr >= m->addr &&
		    (!best || p->lines[i].addr > best->addr))
			best = &p->lines[i];
	return best;
}

int main(int argc, char **argv)
{
	char err[512];
	struct dyntext *dt;
	struct dyntext_sym sym;
	struct dyntext_line ln;
	csh cs;
	int rc, nbytes = 0, nlinechk = 0, ncalls = 0, nreuse = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: check_bpf CAPDIR ORACLE\n");
		return 2;
	}
	if (read_oracle(argv[2])) {
		printf("FAIL: cannot read oracle %s\n", argv[2]);
		return 1;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 1;
	dt = dyntext_new();
	rc = dyntext_load_bpf(dt, argv[1], NULL, err, sizeof(err));
	CHECK(rc == 0, "dyntext_load_bpf: %d (%s)", rc, err);

	for (int pi = 0; pi < nprogs; pi++) {
		const struct prog *p = &progs[pi];
		uint64_t t = p->t0 + (p->t1 - p->t0) / 2;

		CHECK(p->t1 > p->t0 && p->nimg == 2, "oracle prog %d incomplete", pi);
		for (int i = 0; i < p->nimg; i++) {
			const struct img *m = &p->img[i];

			rc = dyntext_symbol(dt, IMGSTORE_KERNEL, m->addr, t, &sym);
			CHECK(rc == 0 && sym.prog_id == p->id && sym.start == m->addr &&
			      sym.len == m->len && !strcmp(sym.name, m->name) &&
			      sym.func && !strcmp(sym.func, m->func),
			      "prog %u image %d %#" PRIx64 ": rc %d, id %u, %s / %s, want %s / %s",
			      p->id, i, m->addr, rc, rc ? 0 : sym.prog_id, rc ? "-" : sym.name,
			      rc || !sym.func ? "-" : sym.func, m->name, m->func);
			/* every byte: the program's symbol and the oracle's line */
			for (uint64_t a = m->addr; a < m->addr + m->len; a++) {
				const struct line *want = oracle_line(p, a);

				nbytes++;
				rc = dyntext_symbol(dt, IMGSTORE_KERNEL, a, t, &sym);
				CHECK(rc == 0 && sym.prog_id == p->id && sym.start == m->addr,
				      "prog %u %#" PRIx64 ": symbol rc %d", p->id, a, rc);
				rc = dyntext_line(dt, IMGSTORE_KERNEL, a, t, &ln);
				if (rc == 0 && ln.line == 0)
					continue;   /* compiler-generated: bpftool prints nothing */
				nlinechk++;
				CHECK(want && rc == 0 && ln.line == want->line && ln.col == want->col &&
				      !strcmp(ln.file, want->file),
				      "prog %u %#" PRIx64 ": line rc %d %s:%u:%u, want %s:%u:%u", p->id, a,
				      rc, rc ? "-" : ln.file, rc ? 0 : ln.line, rc ? 0 : ln.col,
				      want ? want->file : "-", want ? want->line : 0,
				      want ? want->col : 0);
			}
		}
		/* calls from the main image into the subprogram */
		{
			const struct img *m = &p->img[0], *sub = &p->img[1];
			cs_insn *insn;
			size_t n = cs_disasm(cs, m->bytes, m->len, m->addr, 0, &insn);
			char want[80];
			int here = 0;

			snprintf(want, sizeof(want), "%s(", sub->func);
			for (size_t k = 0; k < n; k++) {
				uint64_t target;

				if (strcmp(insn[k].mnemonic, "call") ||
				    sscanf(insn[k].op_str, "%" SCNx64, &target) != 1 ||
				    target != sub->addr)
					continue;
				here++;
				rc = dyntext_line(dt, IMGSTORE_KERNEL, insn[k].address, t, &ln);
				CHECK(rc == 0 && ln.text && strstr(ln.text, want),
				      "prog %u: call at %#" PRIx64 " has source \"%s\", want a call of %s",
				      p->id, insn[k].address, rc || !ln.text ? "-" : ln.text, want);
			}
			if (n)
				cs_free(insn, n);
			CHECK(here >= 2, "prog %u: %d calls into %s found", p->id, here, sub->func);
			ncalls += here;
		}
		/* addresses of this program that another one used at another time */
		for (int qi = 0; qi < nprogs; qi++) {
			if (qi == pi)
				continue;
			for (int i = 0; i < p->nimg; i++) {
				const struct img *m = &p->img[i];

				if (!img_of(&progs[qi], m->addr))
					continue;
				nreuse++;
				rc = dyntext_symbol(dt, IMGSTORE_KERNEL, m->addr,
						    IMGSTORE_TIME_UNKNOWN, &sym);
				CHECK(rc == IMGSTORE_AMBIGUOUS, "reused %#" PRIx64 " without time: %d",
				      m->addr, rc);
			}
		}
	}
	cs_close(&cs);
	dyntext_free(dt);
	printf("%d programs, %d JIT bytes, %d line checks, %d subprogram calls, "
	       "%d reused image addresses; %d checks, %d failed\n", nprogs, nbytes,
	       nlinechk, ncalls, nreuse, checks, fails);
	return fails ? 1 : 0;
}
