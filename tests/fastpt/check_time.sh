#!/bin/sh
# check_time.sh PTDECODE PTSYNTH [ptsynth options] -- CMD
# [ARGS]: records CMD with ptsynth, then the fast decoder (-j1, -j2) gives
# every instruction and every event the time libipt's decoder gives it
# (text with -t, and the JSON events' time), and the same events, in the
# same order, exec-mode events included (docs/FORMATS.md: one per
# MODE.Exec outside PSB+).  Thread switches too: libipt reports one only
# where the running thread changes, also where a segment starts.  Exit
# 77: ptsynth cannot trace here.
set -u
ptdecode=$1 ptsynth=$2
shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/ptsynth_record.sh"
ptsynth_record "$ptsynth" "$tmp/t.ptd" "$@"
rc=0
for d in libipt "fast -j1" "fast -j2"; do
    f=$tmp/$(echo $d | tr -d ' -')
    # shellcheck disable=SC2086
    "$ptdecode" -q --decoder=$d --insn -t --no-sym --no-disasm "$tmp/t.ptd" >"$f.txt"
    # shellcheck disable=SC2086
    "$ptdecode" -q --decoder=$d --format=json --insn --no-sym --no-disasm "$tmp/t.ptd" |
        grep -v '"type":"insn"' >"$f.json"
done
n=$(grep -c '^0x' "$tmp/libipt.txt")
ne=$(wc -l <"$tmp/libipt.json")
nt=$(grep -c '"time"' "$tmp/libipt.json")
for f in fastj1 fastj2; do
    for x in txt json; do
        cmp -s "$tmp/$f.$x" "$tmp/libipt.$x" || {
            echo "FAIL: $f ($x) differs from libipt:"
            diff "$tmp/$f.$x" "$tmp/libipt.$x" | head -6; rc=1; }
    done
done
[ "$n" -gt 1000 ] && [ "$nt" -gt 0 ] || { echo "FAIL: only $n instructions, $nt timed events"; rc=1; }
[ $rc = 0 ] && echo "OK: $n instructions and $ne events ($nt with a time) timed as libipt times them (fast -j1, -j2)"
exit $rc
