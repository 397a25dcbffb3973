/* SPDX-License-Identifier: MIT */
#include "detect.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A directory: a capture (perf.data in it), a perf.data directory (data
 * in it) or an OpenCSD snapshot. */
static enum ptd_input_kind detect_dir(const char *path, char **perf_path,
				      char **dir)
{
	struct stat st;
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s/perf.data", path);
	if (!stat(buf, &st)) {
		*perf_path = strdup(buf);
		*dir = strdup(path);
		return PTD_INPUT_CAPTURE_DIR;
	}
	snprintf(buf, sizeof(buf), "%s/data", path);
	if (!stat(buf, &st) && S_ISREG(st.st_mode)) {
		/* a perf.data directory (perf record --threads / --kcore) */
		*perf_path = strdup(path);
		return PTD_INPUT_PERF_DATA;
	}
	snprintf(buf, sizeof(buf), "%s/snapshot.ini", path);
	if (!stat(buf, &st))
		return PTD_INPUT_CS_SNAPSHOT;
	return PTD_INPUT_AUTO;
}

enum ptd_input_kind detect_input_kind(const char *path, char **perf_path,
				      char **dir)
{
	struct stat st;
	uint8_t magic[8];
	int fd;
	ssize_t n;

	*perf_path = NULL;
	*dir = NULL;
	if (stat(path, &st))
		return PTD_INPUT_AUTO;
	if (S_ISDIR(st.st_mode))
		return detect_dir(path, perf_path, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PTD_INPUT_AUTO;
	n = read(fd, magic, sizeof(magic));
	close(fd);
	if (n == 8 && !memcmp(magic, "PERFILE2", 8)) {
		*perf_path = strdup(path);
		return PTD_INPUT_PERF_DATA;
	}
	return PTD_INPUT_RAW_PT;
}
