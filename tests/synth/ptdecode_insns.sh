#!/bin/sh
# ptdecode_insns.sh PTDECODE DECODER CAPTURE: the addresses ptdecode decodes,
# one per line (for check_fixture.sh's cmd: decoders).
"$1" -q --decoder="$2" --insn --no-sym --no-disasm "$3" | grep '^0x'
