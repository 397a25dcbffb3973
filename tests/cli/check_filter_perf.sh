#!/bin/sh
# check_filter_perf.sh PTDECODE PTSYNTH PROG: the IP filters of perf.data
# (perf record --filter writes them into intel_pt's AUXTRACE_INFO, in the
# kernel's syntax, "filter OFFSET/SIZE@FILE": file offsets).  ptsynth
# records PROG (a static program: all its code is in that file) with such
# a string; Linux perf must read the same string back (perf report -D),
# and ptdecode must place the filter where perf's MMAP2 record of the
# file puts that file range (perf script --show-mmap-events), show it in
# --stats (text and JSON), and hand it to libipt:
#  - a filter over the whole executable segment: the flow is the recorded
#    execution (expected.insn), both decoders;
#  - a filter over its first 0x200 bytes: libipt's erratum work-arounds
#    see it (on a CPU with SKL014 tracing is taken to stop at a direct
#    branch out of the range); the fast decoder gives libipt's flow;
#  - filters that do not parse or name a file never mapped: a warning,
#    the flow decoded without them.
set -u
ptdecode=$1 ptsynth=$2 prog=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0
fail() { echo "FAIL: $*"; rc=1; }
export HOME="$tmp/home"
mkdir -p "$HOME"

# the executable segment: file offset and size
set -- $(readelf -lW "$prog" | awk '$1 == "LOAD" && ($7 ~ /E/ || $8 ~ /E/) { print $2, $5; exit }')
seg_off=$1 seg_size=$2
record() {  # record NAME FILTER
    "$ptsynth" record -o "$tmp/$1.ptd" --addr-filter "$2" "$prog" >/dev/null 2>&1 ||
        { echo "FAIL: ptsynth record $1"; exit 1; }
}
# where perf's MMAP2 record puts file offset $2 (size $3) of the trace $1
placed() {
    perf script -i "$1/perf.data" --show-mmap-events 2>/dev/null |
        python3 -c '
import re, sys
f, off, size = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0)
for l in sys.stdin:
    m = re.search(r"PERF_RECORD_MMAP2 .*\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0) .* (\S+)$", l)
    if m and m.group(4) == f:
        start, ln, pgoff = (int(m.group(i), 16) for i in (1, 2, 3))
        lo, hi = max(off, pgoff), min(off + size, pgoff + ln)
        print("[%#x, %#x]" % (start + lo - pgoff, start + hi - pgoff - 1))
        break' "$prog" "$2" "$3"
}

for case in whole:$seg_off:$seg_size narrow:$seg_off:0x200; do
    name=${case%%:*} rest=${case#*:}; off=${rest%%:*} size=${rest#*:}
    filter=$(printf 'filter %#x/%#x@%s' "$((off))" "$((size))" "$prog")
    record "$name" "$filter"
    got=$(perf report -D -i "$tmp/$name.ptd/perf.data" 2>/dev/null |
          sed -n '/Filter string len/!s/^ *Filter string  *//p' | head -1)
    [ "$got" = "$filter" ] || fail "$name: perf reads the filter string as \"$got\", not \"$filter\""
    range=$(placed "$tmp/$name.ptd" "$off" "$size")
    [ -n "$range" ] || { fail "$name: no MMAP2 of $prog in perf script"; continue; }
    for d in libipt fast; do
        "$ptdecode" --decoder=$d --stats "$tmp/$name.ptd" >"$tmp/$d.stats" 2>"$tmp/$d.err"
        line=$(grep '^address filter' "$tmp/$d.stats")
        [ "$line" = "address filter 0: filter $range" ] ||
            fail "$d $name: --stats says \"$line\", perf's mapping gives $range"
        "$ptdecode" --decoder=$d --stats --format=json "$tmp/$name.ptd" 2>/dev/null |
            python3 -c 'import json,sys; f=json.load(sys.stdin)["address_filters"]; print("[%s, %s]" % (f[0]["a"], f[0]["b"]) if len(f) == 1 and f[0]["cfg"] == "filter" and f[0]["n"] == 0 else f)' \
            >"$tmp/json" 2>&1
        [ "$(cat "$tmp/json")" = "$range" ] || fail "$d $name: JSON address_filters: $(cat "$tmp/json")"
        [ -s "$tmp/$d.err" ] && fail "$d $name: warnings: $(cat "$tmp/$d.err")"
        sed -n 's/^instructions: //p' "$tmp/$d.stats" >"$tmp/$d.n"
    done
    want=$(wc -l <"$tmp/$name.ptd/expected.insn")
    nl=$(cat "$tmp/libipt.n") nf=$(cat "$tmp/fast.n")
    [ "$nl" = "$nf" ] || fail "$name: libipt decodes $nl instructions, fast $nf"
    if [ $name = whole ]; then
        [ "$nl" = "$want" ] || fail "whole: $nl instructions, the execution ran $want"
    fi
    echo "$name: $filter at $range: $nl instructions (execution: $want)"
done

# filters that cannot be used: a warning each, the flow without them
for bad in "start 0x1000@$prog" "filter zz@$prog" "filter 0x0/0x10@/nonexistent/file"; do
    record bad "$bad"
    "$ptdecode" --stats "$tmp/bad.ptd" >"$tmp/out" 2>"$tmp/err"
    n=$(sed -n 's/^instructions: //p' "$tmp/out")
    want=$(wc -l <"$tmp/bad.ptd/expected.insn")
    if ! grep -q 'warning: .*decoding without' "$tmp/err" || [ "$n" != "$want" ] ||
       grep -q '^address filter' "$tmp/out"; then
        fail "\"$bad\": $n instructions (want $want), $(cat "$tmp/err")"
    else
        echo "OK: \"$bad\": $(cat "$tmp/err")"
    fi
    rm -rf "$tmp/bad.ptd"
done
[ $rc = 0 ] && echo PASS
exit $rc
