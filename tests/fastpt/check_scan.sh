#!/bin/sh
# check_scan.sh PTDECODE BENCHGEN: a queue of more than 8 MiB of trace is
# scanned for PSBs in parts of at least 4 MiB on -j N threads
# (fastpt/fastpt_scan.c); the segments, counts and coverage must be those
# of the scan on one thread (-j1), and the instructions benchgen ran.
set -eu
ptdecode=$1 gen=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" ind 16000000 "$tmp/t.ptd" 7 >/dev/null
size=$(stat -c %s "$tmp/t.ptd/trace.bin")
# three parts at -j3
[ "$size" -gt $((12 << 20)) ] || { echo "FAIL: trace of $size bytes: too small to be split"; exit 1; }
rc=0
for j in 1 2 3; do
    "$ptdecode" -q -j$j --stats "$tmp/t.ptd" | grep -E '^(instructions|errors|segments):' >"$tmp/stats$j"
    "$ptdecode" -q -j$j --coverage "$tmp/t.ptd" >"$tmp/cov$j"
done
for j in 2 3; do
    cmp -s "$tmp/stats1" "$tmp/stats$j" || { echo "FAIL: -j$j stats differ:"; diff "$tmp/stats1" "$tmp/stats$j"; rc=1; }
    cmp -s "$tmp/cov1" "$tmp/cov$j" || { echo "FAIL: -j$j coverage differs"; rc=1; }
done
grep -q '^instructions: 16000000$' "$tmp/stats1" || { echo "FAIL: $(cat "$tmp/stats1")"; rc=1; }
[ $rc = 0 ] && echo "OK: $size bytes of trace, $(sed -n 's/^segments: //p' "$tmp/stats1") segments, the same at -j1, -j2, -j3"
exit $rc
