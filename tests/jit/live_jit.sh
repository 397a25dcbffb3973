#!/bin/sh
# live_jit.sh PTSYNTH MINIJIT PTDECODE WORKDIR
#
# Records minijit fresh with ptsynth (its jitdump is put on the simulated
# clock, OUT.ptd/jit/) and checks the capture like the committed fixture:
# ptsynth's own check found every JIT instruction decodable from the right
# jitdump load, and check_jit.sh passes.  minijit's directory is kept, so
# ptdecode also sees the original jitdump (real CLOCK_MONOTONIC times) that
# the trace's MMAP record names: it must not disturb the decode.
set -u
ptsynth=$1 minijit=$2 ptdecode=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work/minijit"
"$ptsynth" record -o "$work/live.ptd" -- "$minijit" -n 20 "$work/minijit" \
	>"$work/ptsynth.out" 2>"$work/ptsynth.err" ||
	{ echo "FAIL: ptsynth failed:"; cat "$work/ptsynth.err"; exit 1; }
grep '^ptsynth: jitdump' "$work/ptsynth.err"
info=$work/live.ptd/info
v() { sed -n "s/^$1=//p" "$info"; }
if [ "$(v jit_dumps)" != 1 ] || [ "$(v jit_loads)" != 3 ] || [ "$(v jit_insns_wrong)" != 0 ] ||
   [ "$(v jit_insns_unreported)" != 0 ] || [ "$(v jit_times_outside)" != 0 ] ||
   [ "$(v jit_insns_ok)" != "$(v jit_insns)" ] || [ "$(v jit_insns)" -lt 100 ]; then
	echo "FAIL: ptsynth's jitdump check:"; grep '^jit_' "$info"; cat "$work/ptsynth.err"; exit 1
fi
echo "OK: ptsynth: $(v jit_insns) JIT instructions, each decodable from its load" \
	"(smallest margin $(v jit_min_margin_ns) ns, $(v jit_clock_pairs) clock pairs)"
exec sh "$here/check_jit.sh" "$ptdecode" "$work/live.ptd" "$work/check"
