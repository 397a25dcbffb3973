/* SPDX-License-Identifier: MIT */
/* Code for the Arm disassembly tests (compiled by clang for A64, A32, T32;
 * checked against llvm-objdump).  Freestanding: no headers. */
int ext(int);
int (*fp)(int);

int loop(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += ext(i) * x;
	return s;
}

int table(int x)
{
	switch (x) {   /* a jump table */
	case 0: return ext(1);
	case 1: return ext(7) + 3;
	case 2: return x * 9;
	case 3: return fp(x);
	case 4: return ext(x) - 1;
	case 5: return loop(x);
	case 6: return 17;
	default: return -1;
	}
}

int indirect(int y)
{
	return fp(y) * 2 + (y > 10 ? fp(y - 1) : 0);
}

long sys(long n)
{
	register long r0 __asm__(
#if defined(__aarch64__)
		"x0"
#else
		"r0"
#endif
	) = n;
#if defined(__aarch64__)
	__asm__ volatile("svc #0" : "+r"(r0) :: "memory");
#else
	__asm__ volatile("svc #0" : "+r"(r0) :: "memory");
#endif
	return r0;
}

int tail(int x)
{
	if (x & 1)
		return ext(x + 1);  /* tail call */
	return x;
}

long long wide(long long a, long long b, int c)
{
	long long r = 0;
	while (c-- > 0) {
		r = r * 31 + (a ^ b);
		if (r < 0)
			r = -r;
		a += ext((int)r);
	}
	return r;
}
