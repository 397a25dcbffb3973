/* SPDX-License-Identifier: MIT */
/* A small program with known functions for the symtab/disasm/srcline tests.
 * Run with "maps" it prints the runtime addresses of its functions and its
 * own /proc/self/maps, the ground truth for load-bias tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int ptd_fn_alpha(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += i * x;
	return s;
}

__attribute__((noinline)) static int ptd_fn_static(int x)
{
	switch (x & 7) {  /* a jump table */
	case 0: return x + 11;
	case 1: return x * 3;
	case 2: return x - 7;
	case 3: return x ^ 0x55;
	case 4: return x << 2;
	case 5: return x / 3;
	case 6: return ptd_fn_alpha(x);
	default: return -x;
	}
}

__attribute__((noinline, weak)) int ptd_fn_weak(int x)
{
	return x + 1;
}

static int impl_a(int x) { return x + 100; }
static int (*resolve_ifunc(void))(int) { return impl_a; }
int ptd_fn_ifunc(int x) __attribute__((ifunc("resolve_ifunc")));

__attribute__((noinline)) long ptd_fn_syscall(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory");
	return r;   /* getpid */
}

__attribute__((noinline)) int ptd_fn_recurse(int n)
{
	return n <= 1 ? 1 : n * ptd_fn_recurse(n - 1) % 1000003;
}

int (*ptd_fn_ptr)(int) = ptd_fn_weak;

__attribute__((noinline)) int ptd_fn_indirect(int x)
{
	return ptd_fn_ptr(x) + ptd_fn_static(x);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "maps") == 0) {
		char line[4096];
		FILE *f = fopen("/proc/self/maps", "r");
		printf("FN ptd_fn_alpha %p\n", (void *)ptd_fn_alpha);
		printf("FN ptd_fn_static %p\n", (void *)ptd_fn_static);
		printf("FN ptd_fn_indirect %p\n", (void *)ptd_fn_indirect);
		printf("FN ptd_fn_recurse %p\n", (void *)ptd_fn_recurse);
		printf("FN main %p\n", (void *)main);
		printf("FN puts %p\n", (void *)puts);
		printf("FN malloc %p\n", (void *)malloc);
		while (f && fgets(line, sizeof(line), f))
			printf("MAP %s", line);
		if (f)
			fclose(f);
		return 0;
	}
	printf("%d %d %ld %d\n", ptd_fn_indirect(argc), ptd_fn_ifunc(argc),
	       ptd_fn_syscall() > 0 ? 1L : 0L, ptd_fn_recurse(argc + 5));
	puts("done");
	return 0;
}
