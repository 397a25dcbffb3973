/* SPDX-License-Identifier: MIT */
/* Built at test time by check_debugfile.sh, then split into a stripped
 * binary and a separate debug file: its static functions (dbg_fn_*) are
 * named only in .symtab, so only the debug file can name them.  -DOTHER
 * gives different code, hence another build id. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int dbg_fn_alpha(int x)
{
	int s = 0;

	for (int i = 0; i < x; i++)
		s += i * x;
	return s;
}

__attribute__((noinline)) static int dbg_fn_beta(int x)
{
#ifdef OTHER
	return x * 7 + dbg_fn_alpha(x + 1);
#else
	return x ^ dbg_fn_alpha(x);
#endif
}

__attribute__((noinline)) static int dbg_fn_gamma(const char *s)
{
	return (int)strtol(s, NULL, 0) + dbg_fn_beta(3);
}

int main(int argc, char **argv)
{
	printf("%d\n", dbg_fn_gamma(argc > 1 ? argv[1] : "5"));
	return 0;
}
