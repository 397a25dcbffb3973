#!/bin/sh
# check_raw.sh PTDECODE DIR TRACE PAGES INSNS ERRORS
# Decodes a raw Intel PT trace with its page cache and checks the counts;
# for traces with errors, also that each error names its trace offset and
# that decoding went on after it.
set -eu
ptdecode=$1 dir=$2 trace=$3 pages=$4 want_insns=$5 want_errors=$6
if [ ! -d "$dir" ]; then
    echo "SKIP: $dir not found (the shared real traces are not beside this checkout)"
    exit 77
fi
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$ptdecode" -q --pt "$dir/$trace" --pages "$dir/$pages.addr:$dir/$pages.dump" \
    --insn --no-sym --no-disasm --stats >"$out" || true
insns=$(sed -n 's/^instructions: //p' "$out")
errors=$(sed -n 's/^errors: //p' "$out")
lines=$(grep -c '^0x' "$out" || true)
echo "instructions: $insns (want $want_insns), errors: $errors (want $want_errors), insn lines: $lines"
[ "$insns" = "$want_insns" ] && [ "$errors" = "$want_errors" ] && [ "$lines" = "$want_insns" ] || exit 1
if [ "$want_errors" -gt 0 ]; then
    grep -E '^\[error offset=0x[0-9a-f]+ ' "$out" | head -3
    [ "$(grep -cE '^\[error offset=0x[0-9a-f]+ ' "$out")" = "$want_errors" ] || exit 1
    # decoding continues: instructions follow the last error
    last_err=$(grep -nE '^\[error ' "$out" | tail -1 | cut -d: -f1)
    tail -n +"$last_err" "$out" | grep -q '^0x' || { echo "no instructions after the error"; exit 1; }
fi
echo PASS
