/* SPDX-License-Identifier: MIT */
/*
 * walk (stage: capture/synth/) - `ptsynth walk`: an Intel PT trace through the real code of a
 * capture (BPF JIT images and other text-store rows, each valid in its own
 * time window), generated from a walk with known ground truth.
 *
 *   ptsynth walk -o OUT.ptd --from CAPTURE.ptd [options] [WALKSPEC]
 *
 * See walk.c for the walk rules and docs in fixtures/bpf/README.md.
 */
#ifndef PTSYNTH_WALK_H
#define PTSYNTH_WALK_H

/* Entry point of the walk subcommand; argv[1] is "walk".  Exits non-zero
 * with a message on errors, like the record subcommand. */
int walk_main(int argc, char **argv);

#endif
