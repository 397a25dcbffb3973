/* SPDX-License-Identifier: MIT */
#include "cssnapshot.h"
#include "cs_etm_info.h"
#include "ptdecode.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* .ini files of a snapshot are small; anything larger is not one. */
#define INI_MAX_SIZE (16u << 20)

/* ---- a small .ini reader ---------------------------------------------- */

struct ini_kv {
	char *key, *val;
	int line;
};

struct ini_sec {
	char *name;
	struct ini_kv *kv;
	size_t n, cap;
};

struct ini {
	const char *path;
	struct ini_sec *sec;
	size_t n, cap;
};

static void ini_free(struct ini *ini)
{
	for (size_t i = 0; i < ini->n; i++) {
		for (size_t j = 0; j < ini->sec[i].n; j++) {
			free(ini->sec[i].kv[j].key);
			free(ini->sec[i].kv[j].val);
		}
		free(ini->sec[i].kv);
		free(ini->sec[i].name);
	}
	free(ini->sec);
	memset(ini, 0, sizeof(*ini));
}

static char *dup_trim(const char *s, size_t len)
{
	char *r;

	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	/* values may be quoted */
	if (len >= 2 && (s[0] == '"' || s[0] == '\'') && s[len - 1] == s[0])
		s++, len -= 2;
	r = malloc(len + 1);
	if (r) {
		memcpy(r, s, len);
		r[len] = 0;
	}
	return r;
}

static int ini_parse(const char *path, struct ini *ini, char *err, size_t errlen)
{
	struct util_map m;
	size_t pos = 0;
	int line = 0, rc;

	memset(ini, 0, sizeof(*ini));
	ini->path = path;
	rc = util_map_file(path, &m, err, errlen);
	if (rc)
		return rc;
	if (m.size > INI_MAX_SIZE) {
		util_errf(err, errlen, "%s: %zu bytes is too large for a snapshot "
			  ".ini file", path, m.size);
		util_unmap(&m);
		return PTD_ERR_FORMAT;
	}
	rc = 0;
	while (pos < m.size && !rc) {
		const char *l = (const char *)m.data + pos, *e, *eq;
		size_t len = 0;

		while (pos + len < m.size && l[len] != '\n')
			len++;
		pos += len + 1;
		line++;
		/* comments and CR end the line */
		for (size_t i = 0; i < len; i++)
			if (l[i] == ';' || l[i] == '#' || l[i] == '\r' || !l[i]) {
				len = i;
				break;
			}
		while (len && isspace((unsigned char)*l))
			l++, len--;
		while (len && isspace((unsigned char)l[len - 1]))
			len--;
		if (!len)
			continue;
		e = l + len;
		if (*l == '[') {
			const char *c = memchr(l, ']', len);
			struct ini_sec *s;

			if (!c) {
				util_errf(err, errlen, "%s:%d: section header without "
					  "closing ']'", path, line);
				rc = PTD_ERR_FORMAT;
				break;
			}
			if (util_grow((void **)&ini->sec, &ini->cap, ini->n + 1,
				      sizeof(*ini->sec))) {
				rc = PTD_ERR_NOMEM;
				break;
			}
			s = &ini->sec[ini->n];
			memset(s, 0, sizeof(*s));
			s->name = dup_trim(l + 1, (size_t)(c - l - 1));
			if (!s->name) {
				rc = PTD_ERR_NOMEM;
				break;
			}
			ini->n++;
			continue;
		}
		eq = memchr(l, '=', len);
		if (!eq) {
			util_errf(err, errlen, "%s:%d: expected 'key=value' or "
				  "'[section]', found '%.*s'", path, line,
				  (int)(len > 60 ? 60 : len), l);
			rc = PTD_ERR_FORMAT;
			break;
		}
		if (!ini->n) {
			util_errf(err, errlen, "%s:%d: 'key=value' before any "
				  "[section] header", path, line);
			rc = PTD_ERR_FORMAT;
			break;
		}
		{
			struct ini_sec *s = &ini->sec[ini->n - 1];
			struct ini_kv *kv;

			if (util_grow((void **)&s->kv, &s->cap, s->n + 1,
				      sizeof(*s->kv))) {
				rc = PTD_ERR_NOMEM;
				break;
			}
			kv = &s->kv[s->n];
			kv->key = dup_trim(l, (size_t)(eq - l));
			kv->val = dup_trim(eq + 1, (size_t)(e - eq - 1));
			kv->line = line;
			if (!kv->key || !kv->val) {
				free(kv->key);
				free(kv->val);
				rc = PTD_ERR_NOMEM;
				break;
			}
			s->n++;
		}
	}
	util_unmap(&m);
	if (rc == PTD_ERR_NOMEM)
		util_errf(err, errlen, "%s: out of memory", path);
	if (rc)
		ini_free(ini);
	return rc;
}

static struct ini_sec *ini_section(struct ini *ini, const char *name)
{
	for (size_t i = 0; i < ini->n; i++)
		if (!strcasecmp(ini->sec[i].name, name))
			return &ini->sec[i];
	return NULL;
}

static const char *sec_get(const struct ini_sec *s, const char *key)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		if (!strcasecmp(s->kv[i].key, key))
			return s->kv[i].val;
	return NULL;
}

/* Parses an unsigned number (decimal or 0x hex); whole string must match. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	while (isspace((unsigned char)*end))
		end++;
	return errno || *end ? -1 : 0;
}

static char *path_join(const char *dir, const char *file)
{
	size_t a = strlen(dir), b = strlen(file);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	if (file[0] == '/') {
		memcpy(p, file, b + 1);
		return p;
	}
	memcpy(p, dir, a);
	if (a && dir[a - 1] != '/')
		p[a++] = '/';
	memcpy(p + a, file, b + 1);
	return p;
}

/* ---- snapshot ---------------------------------------------------------- */

void cssnap_free(struct cssnap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ndev; i++) {
		struct cssnap_device *d = &s->dev[i];

		for (size_t j = 0; j < d->nregs; j++)
			free(d->regs[j].name);
		for (size_t j = 0; j < d->ndumps; j++) {
			free(d->dumps[j].path);
			free(d->dumps[j].file);
			free(d->dumps[j].space);
		}
		free(d->regs);
		free(d->dumps);
		free(d->ini);
		free(d->name);
		free(d->dclass);
		free(d->type);
	}
	for (size_t i = 0; i < s->nbuf; i++) {
		free(s->buf[i].id);
		free(s->buf[i].name);
		free(s->buf[i].file);
		free(s->buf[i].path);
		free(s->buf[i].format);
	}
	for (size_t i = 0; i < s->nsrc_buf; i++) {
		free(s->src_buf[i].a);
		free(s->src_buf[i].b);
	}
	for (size_t i = 0; i < s->ncore_src; i++) {
		free(s->core_src[i].a);
		free(s->core_src[i].b);
	}
	free(s->dev);
	free(s->buf);
	free(s->src_buf);
	free(s->core_src);
	free(s->dir);
	free(s);
}

static int nomem(char *err, size_t errlen)
{
	util_errf(err, errlen, "out of memory reading the snapshot");
	return PTD_ERR_NOMEM;
}

static int load_dump(const struct cssnap *s, const char *ini_path,
		     const struct ini_sec *sec, struct cssnap_dump *dp,
		     char *err, size_t errlen)
{
	const char *file = sec_get(sec, "file"), *addr = sec_get(sec, "address");
	const char *len = sec_get(sec, "length"), *off = sec_get(sec, "offset");
	const char *space = sec_get(sec, "space");
	struct stat st;

	memset(dp, 0, sizeof(*dp));
	if (!file || !*file || !addr) {
		util_errf(err, errlen, "%s: section [%s] needs both 'file' and "
			  "'address'", ini_path, sec->name);
		return PTD_ERR_FORMAT;
	}
	if (parse_u64(addr, &dp->address) ||
	    (len && parse_u64(len, &dp->length)) ||
	    (off && parse_u64(off, &dp->offset))) {
		util_errf(err, errlen, "%s: section [%s]: address, length and "
			  "offset must be numbers", ini_path, sec->name);
		return PTD_ERR_FORMAT;
	}
	dp->file = strdup(file);
	dp->path = path_join(s->dir, file);
	dp->space = strdup(space ? space : "");
	if (!dp->file || !dp->path || !dp->space)
		return nomem(err, errlen);
	if (stat(dp->path, &st) < 0) {
		dp->missing = 1;
		snprintf(dp->errmsg, sizeof(dp->errmsg), "%s", strerror(errno));
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		dp->missing = 1;
		snprintf(dp->errmsg, sizeof(dp->errmsg), "not a regular file");
		return 0;
	}
	/* No length: the rest of the file.  A length beyond the file's end is
	 * cut to it (the bytes do not exist). */
	if ((uint64_t)st.st_size <= dp->offset)
		dp->length = 0;
	else if (!len || dp->length > (uint64_t)st.st_size - dp->offset)
		dp->length = (uint64_t)st.st_size - dp->offset;
	if (dp->length && dp->address + dp->length - 1 < dp->address) {
		util_errf(err, errlen, "%s: section [%s]: address + length "
			  "wraps around", ini_path, sec->name);
		return PTD_ERR_FORMAT;
	}
	return 0;
}

static int load_device(struct cssnap *s, const char *file, char *err,
		       size_t errlen)
{
	struct cssnap_device *d;
	struct ini ini;
	struct ini_sec *sec;
	char *path = path_join(s->dir, file);
	size_t dcap = 0;
	int rc;

	if (!path)
		return nomem(err, errlen);
	rc = ini_parse(path, &ini, err, errlen);
	if (rc) {
		free(path);
		return rc;
	}
	d = &s->dev[s->ndev++];
	memset(d, 0, sizeof(*d));
	d->ini = strdup(file);
	sec = ini_section(&ini, "device");
	if (!sec || !sec_get(sec, "name")) {
		util_errf(err, errlen, "%s: no [device] section with a name", path);
		rc = PTD_ERR_FORMAT;
		goto out;
	}
	d->name = strdup(sec_get(sec, "name"));
	d->dclass = strdup(sec_get(sec, "class") ? sec_get(sec, "class") : "");
	d->type = strdup(sec_get(sec, "type") ? sec_get(sec, "type") : "");
	if (!d->ini || !d->name || !d->dclass || !d->type) {
		rc = nomem(err, errlen);
		goto out;
	}
	sec = ini_section(&ini, "regs");
	if (sec && sec->n) {
		d->regs = calloc(sec->n, sizeof(*d->regs));
		if (!d->regs) {
			rc = nomem(err, errlen);
			goto out;
		}
		for (size_t i = 0; i < sec->n; i++) {
			struct cssnap_reg *r = &d->regs[d->nregs];
			size_t nl = strcspn(sec->kv[i].key, "(");

			r->name = dup_trim(sec->kv[i].key, nl);
			if (!r->name) {
				rc = nomem(err, errlen);
				goto out;
			}
			d->nregs++;
			if (parse_u64(sec->kv[i].val, &r->value)) {
				util_errf(err, errlen, "%s:%d: register %s: '%s' is "
					  "not a number", path, sec->kv[i].line,
					  r->name, sec->kv[i].val);
				rc = PTD_ERR_FORMAT;
				goto out;
			}
		}
	}
	/* [dump], [dump1], [dump2]...: code and data images of a core. */
	for (size_t i = 0; i < ini.n; i++) {
		if (strncasecmp(ini.sec[i].name, "dump", 4))
			continue;
		if (util_grow((void **)&d->dumps, &dcap, d->ndumps + 1,
			      sizeof(*d->dumps))) {
			rc = nomem(err, errlen);
			goto out;
		}
		rc = load_dump(s, path, &ini.sec[i], &d->dumps[d->ndumps], err,
			       errlen);
		d->ndumps++;
		if (rc)
			goto out;
	}
out:
	ini_free(&ini);
	free(path);
	return rc;
}

static int add_pairs(struct ini_sec *sec, struct cssnap_pair **arr, size_t *n,
		     char *err, size_t errlen)
{
	if (!sec || !sec->n)
		return 0;
	*arr = calloc(sec->n, sizeof(**arr));
	if (!*arr)
		return nomem(err, errlen);
	for (size_t i = 0; i < sec->n; i++) {
		(*arr)[i].a = strdup(sec->kv[i].key);
		(*arr)[i].b = strdup(sec->kv[i].val);
		(*n)++;
		if (!(*arr)[i].a || !(*arr)[i].b)
			return nomem(err, errlen);
	}
	return 0;
}

static int load_trace(struct cssnap *s, const char *file, char *err,
		      size_t errlen)
{
	struct ini ini;
	struct ini_sec *sec;
	const char *list;
	char *path = path_join(s->dir, file);
	int rc;

	if (!path)
		return nomem(err, errlen);
	rc = ini_parse(path, &ini, err, errlen);
	if (rc) {
		free(path);
		return rc;
	}
	list = sec_get(ini_section(&ini, "trace_buffers"), "buffers");
	if (!list) {
		util_errf(err, errlen, "%s: no [trace_buffers] section with a "
			  "'buffers' list", path);
		rc = PTD_ERR_FORMAT;
		goto out;
	}
	s->buf = calloc(strlen(list) / 2 + 1, sizeof(*s->buf));
	if (!s->buf) {
		rc = nomem(err, errlen);
		goto out;
	}
	/* "buffers=buffer0,buffer1" (a trailing comma occurs in practice) */
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		char *id = dup_trim(p, len);
		struct cssnap_buffer *b;
		const char *v;

		p += len + (p[len] == ',');
		if (!id) {
			rc = nomem(err, errlen);
			goto out;
		}
		if (!*id) {
			free(id);
			continue;
		}
		b = &s->buf[s->nbuf++];
		b->id = id;
		sec = ini_section(&ini, id);
		if (!sec || !sec_get(sec, "file") || !sec_get(sec, "name")) {
			util_errf(err, errlen, "%s: buffer '%s' has no section "
				  "[%s] with 'name' and 'file'", path, id, id);
			rc = PTD_ERR_FORMAT;
			goto out;
		}
		v = sec_get(sec, "format");
		b->name = strdup(sec_get(sec, "name"));
		b->file = strdup(sec_get(sec, "file"));
		b->format = strdup(v ? v : "coresight");
		b->path = path_join(s->dir, b->file);
		if (!b->name || !b->file || !b->format || !b->path) {
			rc = nomem(err, errlen);
			goto out;
		}
	}
	rc = add_pairs(ini_section(&ini, "source_buffers"), &s->src_buf,
		       &s->nsrc_buf, err, errlen);
	if (!rc)
		rc = add_pairs(ini_section(&ini, "core_trace_sources"),
			       &s->core_src, &s->ncore_src, err, errlen);
out:
	ini_free(&ini);
	free(path);
	return rc;
}

int cssnap_load(const char *dir, struct cssnap **out, char *err, size_t errlen)
{
	struct cssnap *s;
	struct ini ini;
	struct ini_sec *sec;
	const char *v, *meta;
	char *path;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(dir))) {
		free(s);
		return nomem(err, errlen);
	}
	path = path_join(dir, "snapshot.ini");
	if (!path) {
		cssnap_free(s);
		return nomem(err, errlen);
	}
	rc = ini_parse(path, &ini, err, errlen);
	if (rc) {
		if (rc == PTD_ERR_IO && err && errlen) {
			char tmp[256];

			snprintf(tmp, sizeof(tmp), "%s", err);
			util_errf(err, errlen, "%s (a CoreSight snapshot directory "
				  "holds snapshot.ini)", tmp);
		}
		free(path);
		cssnap_free(s);
		return rc;
	}
	v = sec_get(ini_section(&ini, "snapshot"), "version");
	if (v && strcmp(v, "1.0") && strcmp(v, "1")) {
		util_errf(err, errlen, "%s: snapshot version '%s' is not 1.0, the "
			  "only version this reader knows", path, v);
		rc = PTD_ERR_UNSUPPORTED;
		goto out;
	}
	sec = ini_section(&ini, "device_list");
	if (!sec || !sec->n) {
		util_errf(err, errlen, "%s: no devices in [device_list]", path);
		rc = PTD_ERR_FORMAT;
		goto out;
	}
	s->dev = calloc(sec->n, sizeof(*s->dev));
	if (!s->dev) {
		rc = nomem(err, errlen);
		goto out;
	}
	for (size_t i = 0; i < sec->n && !rc; i++)
		rc = load_device(s, sec->kv[i].val, err, errlen);
	if (rc)
		goto out;
	meta = sec_get(ini_section(&ini, "trace"), "metadata");
	if (!meta) {
		util_errf(err, errlen, "%s: no [trace] metadata=FILE: the snapshot "
			  "holds no trace", path);
		rc = PTD_ERR_NO_TRACE;
		goto out;
	}
	rc = load_trace(s, meta, err, errlen);
out:
	ini_free(&ini);
	free(path);
	if (rc)
		cssnap_free(s);
	else
		*out = s;
	return rc;
}

const struct cssnap_device *cssnap_device(const struct cssnap *s,
					  const char *name)
{
	for (size_t i = 0; i < s->ndev; i++)
		if (!strcmp(s->dev[i].name, name))
			return &s->dev[i];
	return NULL;
}

int cssnap_reg(const struct cssnap_device *d, const char *name, uint64_t *val)
{
	for (size_t i = 0; i < d->nregs; i++)
		if (!strcasecmp(d->regs[i].name, name)) {
			*val = d->regs[i].value;
			return 0;
		}
	return -1;
}

const char *cssnap_core_of(const struct cssnap *s, const char *source)
{
	for (size_t i = 0; i < s->ncore_src; i++)
		if (!strcmp(s->core_src[i].b, source))
			return s->core_src[i].a;
	return NULL;
}

int cssnap_proto(const char *type)
{
	size_t n = strcspn(type, ".");

	if (n == 4 && !strncasecmp(type, "ETM4", 4))
		return CS_PROTO_ETMV4;
	if (n == 4 && !strncasecmp(type, "ETM3", 4))
		return CS_PROTO_ETMV3;
	if (n >= 3 && (!strncasecmp(type, "PTM", 3) || !strncasecmp(type, "PFT", 3)))
		return CS_PROTO_PTM;
	if (n == 3 && !strncasecmp(type, "ETE", 3))
		return CS_PROTO_ETE;
	if (n == 3 && !strncasecmp(type, "STM", 3))
		return CS_PROTO_STM;
	if (n == 3 && !strncasecmp(type, "ITM", 3))
		return CS_PROTO_ITM;
	return CS_PROTO_NONE;
}
