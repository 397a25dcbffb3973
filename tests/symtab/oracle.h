/* SPDX-License-Identifier: MIT */
/* Helpers for the symtab/disasm/srcline tests: run an oracle tool (nm,
 * readelf, objdump, addr2line) and read its output line by line. */
#ifndef PTD_TEST_ORACLE_H
#define PTD_TEST_ORACLE_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

static int g_fail;
#define CHECK(cond, ...) do { if (!(cond)) { g_fail++; if (g_fail <= 30) { \
	printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
	printf("\n"); } } } while (0)

/* Reads all output lines of cmd.  Returns the count, lines in *out. */
static size_t run_lines(const char *cmd, char ***out)
{
	FILE *p = popen(cmd, "r");
	char *line = NULL, **v = NULL;
	size_t cap = 0, n = 0, vcap = 0;
	ssize_t len;

	if (!p) {
		printf("cannot run: %s\n", cmd);
		exit(1);
	}
	while ((len = getline(&line, &cap, p)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (n == vcap) {
			vcap = vcap ? 2 * vcap : 1024;
			v = realloc(v, vcap * sizeof(*v));
		}
		v[n++] = strdup(line);
	}
	free(line);
	if (pclose(p) != 0) {
		printf("command failed: %s\n", cmd);
		exit(1);
	}
	*out = v;
	return n;
}

static void free_lines(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Executable sections of an ELF, from readelf -SW. */
struct xsec { uint64_t addr, size; char name[64]; };

static inline size_t exec_sections(const char *elf, struct xsec *out, size_t max)
{
	char cmd[4096], **l;
	size_t n, i, k = 0;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", elf);
	n = run_lines(cmd, &l);
	for (i = 0; i < n; i++) {
		char name[64], type[32], flags[16];
		uint64_t addr, off, size, es;
		char *p = strchr(l[i], ']');
		if (!p || !strstr(l[i], "[") || strstr(l[i], "Nr]"))
			continue;
		/* name type addr off size es flags */
		if (sscanf(p + 1, "%63s %31s %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %15s",
			   name, type, &addr, &off, &size, &es, flags) == 7 &&
		    strchr(flags, 'X') && k < max) {
			out[k].addr = addr;
			out[k].size = size;
			snprintf(out[k].name, sizeof(out[k].name), "%s", name);
			k++;
		}
	}
	free_lines(l, n);
	return k;
}

#endif
