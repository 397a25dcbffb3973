/* SPDX-License-Identifier: MIT */
/*
 * dap (stage: cli/) - `ptdecode dap`: a Debug Adapter Protocol server on
 * stdin/stdout over the trace index and cursor (ptdecode.h): launch on a
 * trace, threads, stack traces with sources, a "Trace" scope, source,
 * function and instruction breakpoints with hit counts, stepping and
 * continuing both ways, going to an instruction number or time
 * (evaluate "insn N" / "time T"), disassemble and readMemory of the code
 * as it was then.  Requests are parsed with json-c.
 */
#ifndef PTD_DAP_H
#define PTD_DAP_H

/* Runs the server until disconnect or end of input; argv[0] is "dap".
 * Returns the process exit status. */
int dap_main(int argc, char **argv);

#endif
