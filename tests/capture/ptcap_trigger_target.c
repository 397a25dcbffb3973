/* SPDX-License-Identifier: MIT */
/*
 * ptcap_trigger_target - the flight recorder test's program.  Calls
 * ptcap_trigger_here() CALLS times; right before call number MARK_AT it
 * maps MARKER (a file it creates) executable, which the kernel reports as
 * an MMAP2 record naming MARKER: the sideband "around" the trigger that a
 * snapshot must contain.  Writes its pid to MARKER.pid first.
 *
 * Usage: ptcap_trigger_target MARKER CALLS MARK_AT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline, used)) void ptcap_trigger_here(int i)
{
	sink += (unsigned long)i;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	static char page[4096];
	char pidpath[4200];
	int calls, mark_at, fd;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: ptcap_trigger_target MARKER CALLS MARK_AT\n");
		return 2;
	}
	calls = atoi(argv[2]);
	mark_at = atoi(argv[3]);
	snprintf(pidpath, sizeof(pidpath), "%s.pid", argv[1]);
	if (!(f = fopen(pidpath, "w")) || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		perror(pidpath);
		return 1;
	}
	memset(page, 0xc3, sizeof(page));  /* ret */
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
		perror(argv[1]);
		return 1;
	}
	for (int i = 1; i <= calls; i++) {
		if (i == mark_at && mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE,
					 fd, 0) == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		ptcap_trigger_here(i);
		usleep(100000); /* let a snapshot finish between hits */
	}
	close(fd);
	return 0;
}
