/* SPDX-License-Identifier: MIT */
/* synth_opts - the command line shared by ptsynth record and walk (synth_opts.h). */
#include "synth_opts.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "ptsynth";

void synth_set_prog(const char *p)
{
	prog = p;
}

void synth_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void synth_usage(const char *text)
{
	fputs(text, stderr);
	exit(2);
}

int synth_parse_opts(int argc, char **argv, const char *shortopts,
		     const struct option *longopts, synth_opt_fn *set, void *ctx,
		     const char *usage)
{
	int c;

	optind = 2;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == '?')
			synth_usage(usage);
		set(ctx, c, optarg);
	}
	return optind;
}

void synth_check_psb_period(uint32_t psb_period)
{
	if (psb_period < 64 || psb_period > 65536)
		synth_die("--psb-period must be 64..65536");
}

uint64_t synth_rng_init(uint64_t seed)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ seed;

	return rng ? rng : 1;
}

static void shell_quote(FILE *f, const char *a)
{
	int plain = *a != 0;

	for (const char *p = a; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%", *p))
			plain = 0;
	if (plain) {
		fputs(a, f);
		return;
	}
	fputc('\'', f);
	for (const char *p = a; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

void synth_write_cmd(FILE *f, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (i)
			fputc(' ', f);
		shell_quote(f, argv[i]);
	}
	fputc('\n', f);
	fclose(f);
}
