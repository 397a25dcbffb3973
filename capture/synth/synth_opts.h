/* SPDX-License-Identifier: MIT */
/*
 * synth_opts (stage: capture/synth/) - the command line of ptsynth record and ptsynth walk
 * (capture/synth): their messages and usage, the getopt_long loop over a
 * subcommand's options, the option checks both make, and OUT/cmd.
 */
#ifndef PTSYNTH_SYNTH_OPTS_H
#define PTSYNTH_SYNTH_OPTS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

/* The prefix of messages: "ptsynth" unless set (to "ptsynth walk"). */
void synth_set_prog(const char *prog);

/* "PREFIX: message" on stderr; exits 1. */
void synth_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The usage text on stderr; exits 2. */
void synth_usage(const char *text) __attribute__((noreturn));

/* One option: getopt_long's value for it and its argument (NULL: none). */
typedef void synth_opt_fn(void *ctx, int opt, const char *arg);

/* getopt_long over the options after argv[1] (the subcommand), each given
 * to set(ctx, ...); an unknown one prints usage.  Returns the index of
 * the first operand. */
int synth_parse_opts(int argc, char **argv, const char *shortopts,
		     const struct option *longopts, synth_opt_fn *set, void *ctx,
		     const char *usage);

/* --psb-period: 64..65536 bytes, else a message and exit 1. */
void synth_check_psb_period(uint32_t psb_period);

/* The xorshift state for a --seed (never 0). */
uint64_t synth_rng_init(uint64_t seed);

/* argv as one shell-quoted line into f (OUT/cmd), then closes f. */
void synth_write_cmd(FILE *f, int argc, char **argv);

#endif
