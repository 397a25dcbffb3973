/* SPDX-License-Identifier: MIT */
/*
 * Symbols and source lines from separate debug files, through the library
 * (ptd_symbolize, ptd_source_line), against nm and addr2line of the
 * unstripped file or nm of the debug file.
 *
 * test_debugfile elf TRACE ELF EXPECT names|none [SEARCHDIR]
 *   A raw session (TRACE: any bytes) with ELF's code at BASE.  EXPECT has
 *   "ADDR SIZE NAME" lines (hex, nm -S of the unstripped file).  names:
 *   BASE+ADDR and its last byte resolve to NAME at offsets 0 and SIZE-1;
 *   none: neither resolves to any symbol.
 *
 * test_debugfile lines TRACE ELF SRCEXPECT lines|none [SEARCHDIR]
 *   The same session.  SRCEXPECT has "ADDR FILE:LINE" lines (addr2line of
 *   the unstripped file).  lines: ptd_source_line gives FILE and LINE for
 *   BASE+ADDR; none: it gives PTD_ERR_NO_IMAGE for every ADDR.
 *
 * test_debugfile trace CAPTURE IMAGE NMLIST DYNLIST
 *   Decodes CAPTURE.  Of the instructions in the image whose name ends in
 *   IMAGE: at least one resolves to a name only the debug file has (in
 *   NMLIST, "ADDR NAME" lines of nm of the debug file, and not in DYNLIST,
 *   names of nm -D of the image), every name of NMLIST found gives the
 *   same page-aligned load bias (ip - offset - ADDR), and at most 1% are
 *   left without a symbol.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ptdecode.h>

#define BASE 0x555555554000ull

struct nsym { uint64_t addr, size; char name[256]; int ambiguous; };

/* Lines of 1 to 3 fields: "NAME", "ADDR NAME" or "ADDR SIZE NAME". */
static size_t read_list(const char *path, int fields, struct nsym **out)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t n = 0, cap = 0;
	struct nsym *v = NULL;

	if (!f) {
		perror(path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		struct nsym x = { 0 };
		int k = fields == 3 ? sscanf(line, "%" SCNx64 " %" SCNx64 " %255s",
					     &x.addr, &x.size, x.name) :
			fields == 2 ? sscanf(line, "%" SCNx64 " %255s", &x.addr, x.name) :
			sscanf(line, "%255s", x.name);

		if (k != fields)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				exit(1);
		}
		v[n++] = x;
	}
	fclose(f);
	*out = v;
	return n;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct nsym *)a)->name, ((const struct nsym *)b)->name);
}

static struct nsym *find(struct nsym *v, size_t n, const char *name)
{
	struct nsym key;

	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, v, n, sizeof(*v), cmp_name);
}

/* A raw session with elf's code at BASE, dir (may be NULL) the search
 * path.  NULL (the reason printed) when it cannot be opened.  The session
 * keeps pointers to its options: static, one session at a time. */
static struct ptd_session *open_elf(const char *trace, const char *elf,
				    const char *dir)
{
	static struct ptd_raw_image ri;
	static const char *sp[2];
	struct ptd_open_opts oo = { .sz = sizeof(oo), .raw_images = &ri,
				    .n_raw_images = 1, .cpu = "none",
				    .search_path = dir ? sp : NULL };
	struct ptd_session *s;

	ri = (struct ptd_raw_image){ .kind = PTD_RAW_ELF, .path = elf,
				     .addr = BASE, .has_addr = 1 };
	sp[0] = dir;
	if (ptd_open_kind(&s, trace, PTD_INPUT_RAW_PT, &oo) < 0) {
		printf("FAIL: open: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return NULL;
	}
	return s;
}

static int check_elf(const char *trace, const char *elf, const char *expect,
		     int want_names, const char *dir)
{
	struct ptd_session *s;
	struct nsym *v;
	size_t n = read_list(expect, 3, &v);
	int bad = 0;

	if (n < 3) {
		printf("FAIL: %s: %zu functions, want at least 3\n", expect, n);
		return 1;
	}
	if (!(s = open_elf(trace, elf, dir)))
		return 1;
	for (size_t i = 0; i < n; i++) {
		for (int last = 0; last < 2; last++) {
			uint64_t off = last && v[i].size ? v[i].size - 1 : 0, got = 0;
			char name[256];
			int rc = ptd_symbolize(s, -1, BASE + v[i].addr + off, name,
					       sizeof(name), &got);

			if (want_names && (rc || strcmp(name, v[i].name) || got != off)) {
				printf("FAIL: 0x%" PRIx64 ": want %s+0x%" PRIx64 ", got %s+0x%"
				       PRIx64 "\n", v[i].addr + off, v[i].name, off,
				       rc ? "(nothing)" : name, got);
				bad = 1;
			} else if (!want_names && rc != PTD_ERR_NO_IMAGE) {
				printf("FAIL: 0x%" PRIx64 ": want no symbol, got %s (rc %d)\n",
				       v[i].addr + off, rc ? "(error)" : name, rc);
				bad = 1;
			}
		}
	}
	ptd_close(s);
	free(v);
	if (!bad)
		printf("PASS: %s: %zu functions %s\n", elf, n,
		       want_names ? "named" : "without a symbol");
	return bad;
}

static int check_lines(const char *trace, const char *elf, const char *expect,
		       int want_lines, const char *dir)
{
	FILE *f = fopen(expect, "r");
	struct ptd_session *s;
	char buf[4200], want[4096], file[4096];
	size_t n = 0, good = 0;
	int bad = 0;

	if (!f) {
		perror(expect);
		return 1;
	}
	if (!(s = open_elf(trace, elf, dir))) {
		fclose(f);
		return 1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		uint64_t addr;
		unsigned int line = 0, wline;
		char *colon;
		int rc;

		if (sscanf(buf, "%" SCNx64 " %4095s", &addr, want) != 2 ||
		    !(colon = strrchr(want, ':')) || sscanf(colon + 1, "%u", &wline) != 1 ||
		    !wline) {
			printf("FAIL: %s: bad line: %s", expect, buf);
			bad = 1;
			continue;
		}
		*colon = 0;
		n++;
		file[0] = 0;
		rc = ptd_source_line(s, -1, BASE + addr, file, sizeof(file), &line);
		if (want_lines && (rc || line != wline || strcmp(file, want))) {
			printf("FAIL: 0x%" PRIx64 ": want %s:%u, got %s:%u (rc %d)\n",
			       addr, want, wline, rc ? "(nothing)" : file, line, rc);
			bad = 1;
		} else if (!want_lines && rc != PTD_ERR_NO_IMAGE) {
			printf("FAIL: 0x%" PRIx64 ": want no line, got %s:%u (rc %d)\n",
			       addr, rc ? "(error)" : file, line, rc);
			bad = 1;
		} else {
			good++;
		}
	}
	fclose(f);
	ptd_close(s);
	if (n < 3) {
		printf("FAIL: %s: %zu addresses, want at least 3\n", expect, n);
		return 1;
	}
	if (!bad)
		printf("PASS: %s: %zu/%zu addresses %s\n", elf, good, n,
		       want_lines ? "have addr2line's file:line" : "without a line");
	return bad;
}

static int check_trace(const char *cap, const char *image, const char *nmlist,
		       const char *dynlist)
{
	struct ptd_open_opts oo = { .sz = sizeof(oo) };
	struct ptd_session *s;
	struct ptd_event ev;
	struct nsym *nm, *dyn, *hit;
	size_t nnm = read_list(nmlist, 2, &nm), ndyn = read_list(dynlist, 1, &dyn);
	uint64_t insns = 0, unnamed = 0, known = 0, debug_only = 0, bad_bias = 0;
	uint64_t bias = 0;
	char name[256], sample[320] = "";
	size_t ilen = strlen(image);
	int rc, have_bias = 0;

	qsort(nm, nnm, sizeof(*nm), cmp_name);
	qsort(dyn, ndyn, sizeof(*dyn), cmp_name);
	/* A name at two addresses cannot tell the bias. */
	for (size_t i = 1; i < nnm; i++)
		if (!strcmp(nm[i].name, nm[i - 1].name) && nm[i].addr != nm[i - 1].addr)
			nm[i].ambiguous = nm[i - 1].ambiguous = 1;
	if (ptd_open(&s, cap, &oo) < 0) {
		printf("FAIL: open: %s\n", ptd_errmsg(s));
		ptd_close(s);
		return 1;
	}
	while ((rc = ptd_next(s, &ev)) == 0) {
		const char *img;
		uint64_t off, b;
		size_t l;

		if (ev.kind != PTD_EV_INSN)
			continue;
		img = ptd_image_name(s, ev.pid, ev.ip);
		l = img ? strlen(img) : 0;
		if (l < ilen || strcmp(img + l - ilen, image))
			continue;
		insns++;
		if (ptd_symbolize(s, ev.pid, ev.ip, name, sizeof(name), &off)) {
			unnamed++;
			continue;
		}
		hit = find(nm, nnm, name);
		if (!hit || hit->ambiguous)
			continue;
		known++;
		b = ev.ip - off - hit->addr;
		if (!have_bias) {
			bias = b;
			have_bias = 1;
		}
		if (b != bias || (b & 0xfff)) {
			if (bad_bias++ < 5)
				printf("0x%" PRIx64 ": %s+0x%" PRIx64 " gives load bias 0x%"
				       PRIx64 ", not 0x%" PRIx64 "\n", ev.ip, name, off, b, bias);
		}
		if (!find(dyn, ndyn, name)) {
			if (!debug_only++)
				snprintf(sample, sizeof(sample), "0x%" PRIx64 " %s+0x%" PRIx64,
					 ev.ip, name, off);
		}
	}
	if (rc != PTD_ERR_END)
		printf("FAIL: decode: %s\n", ptd_errmsg(s));
	ptd_close(s);
	free(nm);
	free(dyn);
	printf("%s: %" PRIu64 " instructions, %" PRIu64 " without a symbol, %"
	       PRIu64 " checked against nm (bias 0x%" PRIx64 "), %" PRIu64
	       " named from the debug file only (first: %s)\n", image, insns,
	       unnamed, known, bias, debug_only, sample[0] ? sample : "none");
	if (rc != PTD_ERR_END || !insns || !debug_only || bad_bias ||
	    unnamed * 100 > insns) {
		printf("FAIL\n");
		return 1;
	}
	printf("PASS\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "elf") &&
	    (!strcmp(argv[5], "names") || !strcmp(argv[5], "none")))
		return check_elf(argv[2], argv[3], argv[4], !strcmp(argv[5], "names"),
				 argc > 6 ? argv[6] : NULL);
	if (argc >= 6 && !strcmp(argv[1], "lines") &&
	    (!strcmp(argv[5], "lines") || !strcmp(argv[5], "none")))
		return check_lines(argv[2], argv[3], argv[4], !strcmp(argv[5], "lines"),
				   argc > 6 ? argv[6] : NULL);
	if (argc == 6 && !strcmp(argv[1], "trace"))
		return check_trace(argv[2], argv[3], argv[4], argv[5]);
	fprintf(stderr, "usage: test_debugfile elf TRACE ELF EXPECT names|none [SEARCHDIR]\n"
		"       test_debugfile lines TRACE ELF SRCEXPECT lines|none [SEARCHDIR]\n"
		"       test_debugfile trace CAPTURE IMAGE NMLIST DYNLIST\n");
	return 2;
}
