/* ptloop - the fixed code image of the Intel PT fuzz target (fuzz_rawpt)
 * and the program its seeds were traced from.  No libc: a static non-PIE
 * ELF of a few KiB whose code has loops (TNT), calls and returns (RET
 * compression), indirect calls (TIP) and a syscall (far branch).
 * Rebuild (only if you also regenerate the seeds, see tests/fuzz/README):
 *   gcc -O1 -static -nostdlib -fno-pie -no-pie -fno-stack-protector \
 *       -fcf-protection=none -Wl,--build-id=none -o ptloop.elf ptloop.c
 */
typedef unsigned long u64;

static __attribute__((noinline)) u64 leaf(u64 x) { return x * 3 + 1; }
static __attribute__((noinline)) u64 half(u64 x) { return x / 2; }
static u64 (*volatile ops[2])(u64) = { half, leaf };

static __attribute__((noinline)) u64 collatz(u64 n)
{
	u64 steps = 0;
	while (n != 1) {
		n = ops[n & 1](n);   /* indirect call */
		steps++;
	}
	return steps;
}

static __attribute__((noinline)) u64 fib(u64 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

void _start(void)
{
	u64 acc = 0;
	for (u64 i = 1; i < 40; i++)
		acc += collatz(i);
	acc += fib(12);
	__asm__ volatile("mov $60, %%eax; syscall" : : "D"(acc & 0x7f) : "rax", "rcx", "r11", "memory");
	for (;;) ;
}
