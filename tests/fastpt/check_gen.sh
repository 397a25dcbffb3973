#!/bin/sh
# check_gen.sh PTDECODE BENCHGEN KIND [BENCHGEN OPTIONS]: a generated trace
# (TNT-dense, call-heavy or indirect-heavy walk through generated code;
# options: --mtc, --cyc timing packets) decodes to the same instructions
# with the fast decoder (1 and 2 threads), libipt's decoder and perf's own
# decoder; also -j2 with a 1 KiB block cache, which is emptied after every
# segment while the records of segments not yet consumed still point into
# it.  The fast decoder's times (each instruction's, each event's) equal
# libipt's.
set -eu
ptdecode=$1 gen=$2 kind=$3
shift 3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# perf's own HOME: nothing from this machine
sh "$(dirname "$0")/../perf_home.sh" "$tmp/home"
export HOME="$tmp/home"
"$gen" "$@" "$kind" 1000000 "$tmp/t.ptd" 11 >/dev/null
# instructions and events (exec-mode included) with their times
for d in "fast -j1" "fast -j2" "fast -j2 --block-cache 1K" "libipt"; do
    # shellcheck disable=SC2086
    "$ptdecode" -q --decoder=$d --insn -t --no-sym --no-disasm "$tmp/t.ptd" \
        >"$tmp/$(echo $d | tr -d ' -')"
done
grep '^0x' "$tmp/libipt" | cut -d' ' -f1 >"$tmp/libipt.ip"
n=$(wc -l <"$tmp/libipt.ip")
rc=0
for f in fastj1 fastj2 fastj2blockcache1K; do
    cmp -s "$tmp/$f" "$tmp/libipt" || {
        echo "FAIL: $f differs from libipt:"; diff "$tmp/$f" "$tmp/libipt" | head -5; rc=1; }
done
if command -v perf >/dev/null; then
    perf script -i "$tmp/t.ptd/perf.data" --itrace=i0ns -F ip 2>/dev/null |
        awk 'NF { print "0x" $1 }' >"$tmp/perf"
    cmp -s "$tmp/perf" "$tmp/libipt.ip" || { echo "FAIL: perf differs ($(wc -l <"$tmp/perf") lines)"; rc=1; }
else
    echo "perf not installed: compared the two ptdecode decoders only"
fi
# --stats alone is count-only (no block records kept): the same count;
# and the fast decoder walks every segment itself (nothing in these
# traces needs libipt: also not the calibration of a segment whose
# previous one another thread walked, with CYC and without MTC)
for j in 1 2; do
    "$ptdecode" -q -j$j --stats "$tmp/t.ptd" >"$tmp/stats"
    c=$(sed -n 's/^instructions: //p' "$tmp/stats")
    [ "$c" = "$n" ] || { echo "FAIL: count-only -j$j counts $c instructions, the flow has $n"; rc=1; }
    grep -q '^segments: .*(0 decoded by libipt)' "$tmp/stats" ||
        { echo "FAIL: -j$j: $(grep '^segments' "$tmp/stats")"; rc=1; }
done
# --max-insns N stops after exactly N instructions whichever interface
# the view uses: single instructions, blocks (coverage), counts only
for m in 1 777 123457; do
    a=$("$ptdecode" -q -j2 --max-insns $m --insn --no-sym --no-disasm "$tmp/t.ptd" | grep -c '^0x')
    b=$("$ptdecode" -q -j2 --max-insns $m --coverage "$tmp/t.ptd" | awk '{ s += $2 } END { print s }')
    c=$("$ptdecode" -q -j2 --max-insns $m --stats "$tmp/t.ptd" | sed -n 's/^instructions: //p')
    [ "$a $b $c" = "$m $m $m" ] || { echo "FAIL: --max-insns $m: --insn $a, --coverage $b, --stats $c"; rc=1; }
done
[ "$n" -gt 900000 ] || { echo "FAIL: only $n instructions"; rc=1; }
[ $rc = 0 ] && echo "OK: $kind $*: $n instructions identical (fast -j1, fast -j2, fast -j2 with a 1 KiB block cache, libipt, perf), times equal to libipt's"
exit $rc
