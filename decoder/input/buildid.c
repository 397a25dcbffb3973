/* SPDX-License-Identifier: MIT */
#include "buildid.h"
#include "input.h"
#include "symtab.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void buildid_cache_free(struct buildid_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->e[i].path);
	free(c->e);
	c->e = NULL;
	c->n = c->cap = 0;
}

void buildid_hex(const uint8_t *id, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = '\0';
}

/* Build ids as perf records them may be zero-padded to 20 bytes (a 16-byte
 * id shows as 32 hex digits + 8 zeros): equal when one is the other plus
 * trailing zeros. */
static int bid_equal(const char *a, const char *b)
{
	while (*a && *b && *a == *b)
		a++, b++;
	if (*a && *b)
		return 0;
	for (const char *r = *a ? a : b; *r; r++)
		if (*r != '0')
			return 0;
	return 1;
}

const char *buildid_of_file(struct input *in, const char *path)
{
	struct buildid_cache *c = &in->bids;
	uint8_t id[64];
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->e[i].path, path))
			return c->e[i].hex;
	if (util_grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)))
		return "";
	c->e[c->n].path = strdup(path);
	if (!c->e[c->n].path)
		return "";
	c->e[c->n].hex[0] = '\0';
	if (symtab_build_id(path, NULL, 0, id, sizeof(id), &n, NULL, 0) == 0 &&
	    n && n <= 20)
		buildid_hex(id, n, c->e[c->n].hex);
	return c->e[c->n++].hex;
}

const char *const *buildid_dirs(const struct input *in)
{
	return in->bid_dirs ? in->bid_dirs : in->opts->search_path;
}

int buildid_use_capture_dir(struct input *in)
{
	const char *const *sp = in->opts->search_path;
	size_t n = 0;

	while (sp && sp[n])
		n++;
	free(in->bid_dirs);
	in->bid_dirs = calloc(n + 2, sizeof(char *));
	if (!in->bid_dirs)
		return PTD_ERR_NOMEM;
	if (n)
		memcpy(in->bid_dirs, sp, n * sizeof(char *));
	in->bid_dirs[n] = in->dir;
	return 0;
}

/* Finds the file a MMAP record names: the sysroot, the search path (by
 * name), the build-id directories (buildid_dirs, then the distribution's
 * and perf's), then the path itself: a capture's own copy is used
 * wherever it is decoded, the same file by build id.  A
 * candidate whose build id differs from the recorded one is not used: its
 * code is not what ran.  Returns a malloc'd path, or NULL with the reason
 * in why. */
char *buildid_resolve_file(struct input *in, const char *path,
			   const char *want_bid, char *why, size_t whylen)
{
	const struct ptd_open_opts *o = in->opts;
	char buf[4096], mism[4096] = "";
	const char *cand[80];
	char cbuf[20][4096];
	size_t n = 0;
	struct stat sb;
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (o->sysroot && path[0] == '/') {
		snprintf(cbuf[n], sizeof(cbuf[n]), "%s%s", o->sysroot, path);
		cand[n] = cbuf[n];
		n++;
	}
	for (const char *const *d = o->search_path; d && *d && n < 16; d++) {
		snprintf(cbuf[n], sizeof(cbuf[n]), "%s/%s", *d, base);
		cand[n] = cbuf[n];
		n++;
	}
	if (want_bid && *want_bid &&
	    symtab_find_by_build_id(buildid_dirs(in), want_bid, 0, cbuf[n],
				    sizeof(cbuf[n])) == 0) {
		cand[n] = cbuf[n];
		n++;
	}
	if (!o->sysroot)
		cand[n++] = path;
	for (size_t i = 0; i < n; i++) {
		const char *bid;

		if (stat(cand[i], &sb) || !S_ISREG(sb.st_mode))
			continue;
		bid = want_bid && *want_bid ? buildid_of_file(in, cand[i]) : "";
		if (want_bid && *want_bid && !bid[0])
			input_warn(in, "%s has no build id, so it cannot be checked "
				   "against the recorded %s: using it anyway",
				   cand[i], want_bid);
		if (bid[0] && !bid_equal(bid, want_bid)) {
			if (!mism[0])
				snprintf(mism, sizeof(mism), "%s has build id %s, "
					 "the trace recorded %s", cand[i], bid, want_bid);
			continue;
		}
		return strdup(cand[i]);
	}
	if (mism[0])
		snprintf(why, whylen, "build id mismatch: %s; give the right "
			 "file with --search-path or --sysroot", mism);
	else
		snprintf(buf, sizeof(buf), "file %s not found%s%s", n ? cand[0] : path,
			 o->sysroot || o->search_path ? " (also searched "
			 "--sysroot/--search-path)" : "",
			 "; give it with --sysroot or --search-path");
	if (!mism[0])
		snprintf(why, whylen, "%.1000s", buf);
	return NULL;
}

/* The separate debug file, as perf and gdb find it: by build id (the
 * search path, /usr/lib/debug, ~/.debug), else by .gnu_debuglink (CRC
 * checked).  Debian's ld.so and libc keep only .dynsym: their static
 * functions (do_lookup_x) and the DWARF lines of packaged binaries are in
 * /usr/lib/debug.  No debug file is no error: the file's own symbols and
 * DWARF are used. */
int buildid_find_debug_file(struct input *in, const char *path,
			    char *out, size_t outlen)
{
	const char *bid = buildid_of_file(in, path);

	/* Not the capture's .build-id/: its code files (mostly path itself)
	 * would end the search before /usr/lib/debug.  want_debug also
	 * accepts code files: .build-id/xx/rest may be path
	 * itself (skipped) or a cached copy of it (stripped like path, it
	 * holds no debug information, so the debuglink is tried). */
	if (bid[0] && symtab_find_by_build_id(in->opts->search_path, bid, 1, out,
					      outlen) == 0 &&
	    !util_same_file(out, path) && symtab_has_debug_info(out))
		return 0;
	if (symtab_find_debuglink(path, out, outlen) == 0)
		return 0;
	out[0] = 0;
	return PTD_ERR_NO_IMAGE;
}
