/* SPDX-License-Identifier: MIT */
#include "pmuformat.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -errno;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -EINVAL;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int pmuformat_type(const char *dir, uint32_t *type, char *err, size_t errlen)
{
	char path[4096], line[64];
	int rc;

	snprintf(path, sizeof(path), "%s/type", dir);
	if ((rc = read_line(path, line, sizeof(line))) ||
	    sscanf(line, "%" SCNu32, type) != 1) {
		snprintf(err, errlen, "%s: %s", path, rc ? strerror(-rc) : "not a number");
		return rc ? rc : -EINVAL;
	}
	return 0;
}

/* "config1:0-3,44" -> word 1, the bit ranges in order (at most 64). */
static int parse_format(const char *s, int *word, int *bits, int *nbits)
{
	const char *p;

	if (!strncmp(s, "config2:", 8))
		*word = 2, p = s + 8;
	else if (!strncmp(s, "config1:", 8))
		*word = 1, p = s + 8;
	else if (!strncmp(s, "config:", 7))
		*word = 0, p = s + 7;
	else
		return -EINVAL;
	*nbits = 0;
	while (*p) {
		char *e;
		long lo = strtol(p, &e, 10), hi = lo;

		if (e == p || lo < 0 || lo > 63)
			return -EINVAL;
		p = e;
		if (*p == '-') {
			hi = strtol(p + 1, &e, 10);
			if (e == p + 1 || hi < lo || hi > 63)
				return -EINVAL;
			p = e;
		}
		for (long b = lo; b <= hi; b++) {
			if (*nbits == 64)
				return -EINVAL;
			bits[(*nbits)++] = (int)b;
		}
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return *nbits ? 0 : -EINVAL;
}

static int load_term(const char *dir, const char *term, int *word, int *bits, int *nbits,
		     char *err, size_t errlen)
{
	char path[4096], line[256];
	int rc;

	if (!*term || strchr(term, '/') || strstr(term, "..")) {
		snprintf(err, errlen, "bad term name '%s'", term);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/format/%s", dir, term);
	if ((rc = read_line(path, line, sizeof(line)))) {
		snprintf(err, errlen, "%s", rc == -ENOENT ? "" : strerror(-rc));
		return rc;
	}
	if (parse_format(line, word, bits, nbits)) {
		snprintf(err, errlen, "%s: cannot parse '%s'", path, line);
		return -EINVAL;
	}
	return 0;
}

int pmuformat_term(const char *dir, const char *term, int *word, uint64_t *mask,
		   char *err, size_t errlen)
{
	int bits[64], nbits, rc = load_term(dir, term, word, bits, &nbits, err, errlen);

	if (rc)
		return rc;
	*mask = 0;
	for (int i = 0; i < nbits; i++)
		*mask |= 1ull << bits[i];
	return 0;
}

static void known_terms(const char *dir, char *out, size_t len)
{
	char path[4096];
	DIR *d;
	struct dirent *e;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/format", dir);
	out[0] = 0;
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d)) && n + 2 < len)
		if (e->d_name[0] != '.')
			n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", e->d_name);
	closedir(d);
}

int pmuformat_parse(const char *dir, const char *terms, struct pmuformat_config *cfg,
		    char *err, size_t errlen)
{
	char *copy = strdup(terms ? terms : ""), *save = NULL, *t;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '='), *end, e2[300] = "", known[1024];
		uint64_t v = 1, field = 0;
		int bits[64], nbits, word;

		t += strspn(t, " ");
		if (!*t)
			continue;
		if (eq) {
			*eq = 0;
			errno = 0;
			v = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end) {
				snprintf(err, errlen, "term %s: bad value '%s'", t, eq + 1);
				rc = -EINVAL;
				break;
			}
		}
		rc = load_term(dir, t, &word, bits, &nbits, e2, sizeof(e2));
		if (rc == -ENOENT) {
			known_terms(dir, known, sizeof(known));
			snprintf(err, errlen, "unknown term '%s' (this PMU has: %s)", t, known);
			break;
		}
		if (rc) {
			snprintf(err, errlen, "term %s: %s", t, e2);
			break;
		}
		if (nbits < 64 && v >> nbits) {
			snprintf(err, errlen, "term %s: value %" PRIu64 " does not fit its %d bits",
				 t, v, nbits);
			rc = -ERANGE;
			break;
		}
		for (int i = 0; i < nbits; i++) {
			field |= 1ull << bits[i];
			if (v >> i & 1)
				cfg->config[word] |= 1ull << bits[i];
			else
				cfg->config[word] &= ~(1ull << bits[i]);
		}
		(void)field;
	}
	free(copy);
	return rc;
}
