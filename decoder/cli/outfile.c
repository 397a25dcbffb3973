/* SPDX-License-Identifier: MIT */
/* outfile - the -o FILE output (see outfile.h). */
#define _GNU_SOURCE
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define RELEASE_MIN ((off_t)1 << 20)   /* below: truncating costs nothing */

static pthread_t releaser;
static int releasing;

static void *release_old(void *arg)
{
	close((int)(intptr_t)arg);   /* the last reference: pages freed here */
	return NULL;
}

FILE *outfile_open(const char *path)
{
	struct stat ls, os;
	int oldfd, fd;
	FILE *f;

	if (releasing || lstat(path, &ls) || !S_ISREG(ls.st_mode) ||
	    ls.st_nlink != 1 || ls.st_uid != geteuid() || ls.st_size < RELEASE_MIN)
		return fopen(path, "w");
	oldfd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (oldfd < 0)
		return fopen(path, "w");
	/* the name must still be the file looked at, and removable */
	if (fstat(oldfd, &os) || os.st_dev != ls.st_dev || os.st_ino != ls.st_ino ||
	    unlink(path)) {
		close(oldfd);
		return fopen(path, "w");
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, ls.st_mode & 07777);
	if (fd < 0) {
		/* someone created it meanwhile: what "w" would have done */
		close(oldfd);
		return fopen(path, "w");
	}
	(void)fchmod(fd, ls.st_mode & 07777);   /* as before, whatever the umask */
	if (pthread_create(&releaser, NULL, release_old, (void *)(intptr_t)oldfd) == 0)
		releasing = 1;
	else
		close(oldfd);
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

void outfile_wait(void)
{
	if (releasing)
		pthread_join(releaser, NULL);
	releasing = 0;
}
