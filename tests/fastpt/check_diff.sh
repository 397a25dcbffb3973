#!/bin/sh
# check_diff.sh PTDECODE ARGS...: the fast decoder and libipt's decoder give
# the same instructions and the same errors (offset and text), and the fast
# decoder's whole output is the same with 1 and 2 threads.
set -u
ptdecode=$1; shift
case "$*" in *shared/traces*)
    for a in "$@"; do case "$a" in *shared/traces*)
        f=${a#*:}; f=${f%%:*}
        [ -e "$f" ] || [ -e "${a%%:*}" ] || { echo "SKIP: $a not found (shared real traces absent)"; exit 77; }
    esac; done ;;
esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$ptdecode" -q --decoder=libipt --insn --no-sym --no-disasm "$@" >"$tmp/ref" 2>&1
"$ptdecode" -q --decoder=fast -j1 --insn --no-sym --no-disasm "$@" >"$tmp/fast1" 2>&1
"$ptdecode" -q --decoder=fast -j2 --insn --no-sym --no-disasm "$@" >"$tmp/fast2" 2>&1
"$ptdecode" -q --decoder=fast --stats "$@" | grep -E '^(instructions|errors|segments):'
flow() { grep -E '^(0x|\[error)' "$1" | sed 's/ time=[0-9.]*//'; }
rc=0
if ! cmp -s "$tmp/fast1" "$tmp/fast2"; then
    echo "FAIL: -j1 and -j2 outputs differ"; diff "$tmp/fast1" "$tmp/fast2" | head -5; rc=1
fi
flow "$tmp/ref" >"$tmp/ref.flow"; flow "$tmp/fast1" >"$tmp/fast.flow"
# --stats alone runs count-only (PTD_OPEN_COUNT_ONLY: no block records):
# its counts must be those of the flow printed in full
for j in 1 2; do
    "$ptdecode" -q --decoder=fast -j$j --stats "$@" >"$tmp/stats$j"
    ni=$(sed -n 's/^instructions: //p' "$tmp/stats$j")
    ne=$(sed -n 's/^errors: //p' "$tmp/stats$j")
    if [ "$ni" != "$(grep -c '^0x' "$tmp/fast.flow")" ] ||
       [ "$ne" != "$(grep -c '^\[error' "$tmp/fast.flow")" ]; then
        echo "FAIL: count-only -j$j: $ni instructions, $ne errors; the flow has" \
             "$(grep -c '^0x' "$tmp/fast.flow") and $(grep -c '^\[error' "$tmp/fast.flow")"
        rc=1
    fi
done
# the disassembly the fast decoder keeps for the text view
# (PTD_OPEN_INSN_TEXT) is the view's own capstone text on the libipt path
"$ptdecode" -q --decoder=libipt --insn "$@" 2>&1 | flow - >"$tmp/ref.text"
"$ptdecode" -q --decoder=fast -j1 --insn "$@" 2>&1 | flow - >"$tmp/fast.text"
if ! cmp -s "$tmp/ref.text" "$tmp/fast.text"; then
    echo "FAIL: --insn text differs from the libipt path's:"
    diff "$tmp/ref.text" "$tmp/fast.text" | head -6; rc=1
fi
if cmp -s "$tmp/ref.flow" "$tmp/fast.flow"; then
    echo "OK: $(grep -c '^0x' "$tmp/ref.flow") instructions and $(grep -c '^\[error' "$tmp/ref.flow") errors identical"
else
    echo "FAIL: fast and libipt flows differ:"; diff "$tmp/ref.flow" "$tmp/fast.flow" | head -8; rc=1
fi
exit $rc
