#!/bin/sh
# record_frames.sh PTSYNTH PROGRAM OUT: records a fixture program built
# here (fx_frames, fx_inline) with ptsynth for the gdb comparisons; skips
# (77) when ptsynth cannot trace here.
set -u
rm -rf "$3"
if ! "$1" record -o "$3" -- "$2" >/dev/null; then
    echo "SKIP: ptsynth could not record $2 (ptrace not allowed?)"
    rm -rf "$3"
    exit 77
fi
echo "recorded $2 -> $3"
